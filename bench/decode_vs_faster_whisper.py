"""saywho.load_audio against faster_whisper.decode_audio on the same files:
how far apart the 16 kHz samples are, and where the difference comes from.

The clip (tests/data/shared/jfk.wav) is encoded by the ffmpeg command line
as WAV, FLAC, MP3 and AAC (m4a) at 8, 22.05, 24, 44.1 and 48 kHz and as
Opus (ogg) at 8, 24 and 48 kHz; each file is decoded by both. Per file: the
largest and mean difference; the difference once saywho's samples are
rounded to 16-bit steps (faster-whisper's resampler outputs s16: PyAV's
AudioResampler(format="s16"), divided by 32768), which is all that parts
WAV, FLAC and most MP3s; and for MP3s, the two FFmpeg releases' decoders at
the file's own rate (the ffmpeg command line's libavcodec, the one saywho
was built against here, against PyAV's), no resampler involved. Needs the
ffmpeg command line, faster-whisper and PyAV. No timing.

    python3 bench/decode_vs_faster_whisper.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import cpu_model  # noqa: E402

import saywho  # noqa: E402

RATES = (8000, 22050, 24000, 44100, 48000)
CODECS = {"wav": [], "flac": [], "mp3": ["-c:a", "libmp3lame"], "m4a": ["-c:a", "aac"]}
OPUS_RATES = (8000, 24000, 48000)  # libopus takes 8, 12, 16, 24 and 48 kHz


def encode(source: Path, folder: Path) -> list[Path]:
    jobs = [(f"{ext}_{rate}.{ext}", rate, args) for ext, args in CODECS.items() for rate in RATES]
    jobs += [(f"opus_{rate}.ogg", rate, ["-c:a", "libopus"]) for rate in OPUS_RATES]
    paths = []
    for name, rate, args in jobs:
        path = folder / name
        subprocess.run(
            ["ffmpeg", "-loglevel", "error", "-y", "-i", str(source), "-ar", str(rate), *args]
            + [str(path)],
            check=True,
        )
        paths.append(path)
    return paths


def native_decoders(path: Path) -> float:
    """Largest difference of the two libavcodecs at the file's own rate."""
    import av

    raw = subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-i", str(path), "-f", "f32le", "-ac", "1", "-"],
        capture_output=True,
        check=True,
    ).stdout
    ours = np.frombuffer(raw, np.float32)
    with av.open(str(path)) as container:
        stream = container.streams.audio[0]
        theirs = np.concatenate([f.to_ndarray().reshape(-1) for f in container.decode(stream)])
    n = min(len(ours), len(theirs))
    return float(np.abs(ours[:n] - theirs[:n]).max())


def main() -> int:
    import av
    from faster_whisper import decode_audio

    version = subprocess.run(["ffmpeg", "-version"], capture_output=True, text=True).stdout
    print(f"CPU: {cpu_model()}")
    print(f"ffmpeg command line: {version.splitlines()[0]}")
    print(f"PyAV {av.__version__}, libavcodec {av.library_versions['libavcodec']}")
    source = Path(__file__).resolve().parents[1] / "tests" / "data" / "shared" / "jfk.wav"
    print(f"{'file':16} {'max':>9} {'mean':>9} {'s16 max':>9} {'decoders':>9}")
    with tempfile.TemporaryDirectory() as folder:
        for path in encode(source, Path(folder)):
            ours, theirs = saywho.load_audio(path), decode_audio(str(path))
            n = min(len(ours), len(theirs))
            diff = np.abs(ours[:n] - theirs[:n])
            steps = np.clip(np.round(ours[:n] * 32768), -32768, 32767) / 32768
            stepped = np.abs(steps - theirs[:n]).max()
            decoders = f"{native_decoders(path):9.2e}" if path.suffix == ".mp3" else ""
            print(
                f"{path.name:16} {diff.max():9.2e} {diff.mean():9.2e} {stepped:9.2e} {decoders}"
                + ("" if len(ours) == len(theirs) else f"  lengths {len(ours)} {len(theirs)}")
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
