"""A small corpus for the batch tests: short cuts of the bundled recordings.

The cuts are real speech (tests/data/shared: jfk.wav, two_speakers.wav,
stereo_two_speakers.wav), written with the standard library's wave module
into nested folders, some with the same file name in different folders (so
their outputs must not collide), plus one corrupt file. Short cuts keep a
batch of two dozen files within seconds per pass on two cores.
"""

from __future__ import annotations

import json
import subprocess
import sys
import wave
from pathlib import Path

from .conftest import shared_file

CORRUPT = "broken/corrupt.wav"


def _cut(source: Path, target: Path, start: float, seconds: float) -> None:
    with wave.open(str(source), "rb") as r:
        rate, channels, width = r.getframerate(), r.getnchannels(), r.getsampwidth()
        r.setpos(int(start * rate))
        frames = r.readframes(int(seconds * rate))
    target.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(target), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(frames)


def make_corpus(root: Path, count: int = 24) -> list[Path]:
    """``count`` files under ``root`` (count - 1 cuts and the corrupt file);
    returns them in the order a folder walk finds them."""
    jfk = shared_file("jfk.wav")
    two = shared_file("two_speakers.wav")
    stereo = shared_file("stereo_two_speakers.wav")
    plan = [(stereo, 0.0, 5.0)]
    plan += [(jfk, start, 4.0) for start in (0.0, 3.0, 6.5)]
    plan += [(two, start, 5.0) for start in range(0, 25, 2)]
    plan += [(jfk, start, 3.0) for start in (1.0, 4.0, 7.0)]
    plan += [(two, start, 4.0) for start in (1.0, 9.0, 17.0, 25.0)]
    plan = plan[: count - 1]
    for n, (source, start, seconds) in enumerate(plan):
        # the same names in different folders: outputs must not collide
        folder = ("a", "b", "a/deeper")[n % 3]
        _cut(source, root / folder / f"cut{n // 3:02d}.wav", start, seconds)
    corrupt = root / CORRUPT
    corrupt.parent.mkdir(parents=True, exist_ok=True)
    corrupt.write_bytes(b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(range(256)) * 8)
    return sorted(p for p in root.rglob("*.wav"))


def run_batch_command(*args, cwd, timeout=600, env=None) -> subprocess.CompletedProcess:
    """``python -m saywho batch ARGS`` as a user runs it (``env``: a Ray
    cluster's, tests/ray_cluster.py)."""
    return subprocess.run(
        [sys.executable, "-m", "saywho", "batch", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env=env,
    )


def words(transcript: dict) -> list:
    """What must be the same everywhere: text, word times, speakers."""
    return [
        (
            s["text"],
            s["speaker"],
            [(w["word"], w["start"], w["end"], w["speaker"]) for w in s["words"]],
        )
        for s in transcript["segments"]
    ]


def transcript(out: Path, record) -> dict:
    """The transcript.json an index record points at."""
    (json_path,) = [p for p in record.outputs if p.endswith(".json")]
    return json.loads((out / json_path).read_text())


def answers(out: Path) -> dict:
    """path -> (its words, its speakers) for every ok line of OUT's index."""
    from saywho.service.batch.index import read_index

    found = {}
    for record in read_index(out):
        if record.status == "ok":
            t = transcript(out, record)
            found[record.path] = (words(t), t["metadata"]["speakers"])
    return found
