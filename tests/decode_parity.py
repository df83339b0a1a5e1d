"""saywho.load_audio against faster_whisper.decode_audio on the formats and
rates faster-whisper's users feed it (issue 40): the files, and the largest
difference of the two decodes of each.

tests/test_decode_parity.py runs it in the test process (the saywho built
against this machine's FFmpeg); tests/test_wheel.py runs it as a script in a
venv that holds the portable wheel (its own FFmpeg), where it prints one JSON
object: {file name: [max difference, saywho's length, faster-whisper's]}.

    python3 tests/decode_parity.py FOLDER
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

SOURCE = Path(__file__).resolve().parent / "data" / "shared" / "jfk.wav"
RATES = (8000, 22050, 24000, 44100, 48000)
# ffmpeg's encoder for each container. libopus takes only 8, 12, 16, 24 and
# 48 kHz: from a 22.05 or 44.1 kHz source it encodes at the next rate up
# (ffmpeg picks it), and every Opus stream decodes at 48 kHz anyway.
CODECS = {
    "wav": [],
    "flac": [],
    "mp3": ["-c:a", "libmp3lame"],
    "m4a": ["-c:a", "aac"],
    "ogg": ["-c:a", "libopus"],
}
# faster-whisper's resampler outputs 16-bit samples (PyAV's
# AudioResampler(format="s16"), divided by 32768): half a 16-bit step, 1.53e-5,
# is what rounding alone parts; 1e-4 is the bound.
TOLERANCE = 1e-4


def encode(folder: Path) -> list[Path]:
    """The clip in every container at every rate, with the ffmpeg command
    line (the rate is set on the source, so each encoder starts from it)."""
    paths = []
    for rate in RATES:
        resampled = folder / f"source_{rate}.wav"
        _ffmpeg(["-i", str(SOURCE), "-ar", str(rate), str(resampled)])
        for ext, args in CODECS.items():
            path = folder / f"{ext}_{rate}.{ext}"
            _ffmpeg(["-i", str(resampled), *args, str(path)])
            paths.append(path)
    return paths


def _ffmpeg(args: list[str]) -> None:
    proc = subprocess.run(
        ["ffmpeg", "-nostdin", "-loglevel", "error", "-y", *args], capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise RuntimeError(f"ffmpeg {' '.join(args)} failed: {proc.stderr}")


def compare(path: Path) -> tuple[float, int, int]:
    """(largest difference over the common length, saywho's length,
    faster-whisper's length)."""
    from faster_whisper import decode_audio

    import saywho

    ours = saywho.load_audio(path)
    theirs = decode_audio(str(path))
    n = min(len(ours), len(theirs))
    diff = float(np.abs(ours[:n] - theirs[:n]).max()) if n else float("inf")
    return diff, len(ours), len(theirs)


def main(folder: str) -> int:
    found = {path.name: compare(path) for path in encode(Path(folder))}
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
