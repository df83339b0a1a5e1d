"""Mutated audio files through load_audio: each one decodes (finite float32
samples) or raises saywho.AudioError naming the file; nothing else, no crash,
and the process's resident memory stays bounded over the run."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import saywho
from saywho.audio.decode import load_audio

ITERATIONS = 1200
SEED = 20240611
WARM_UP = 150
RSS_GROWTH_LIMIT = 32 * 1024 * 1024  # bytes, after the warm-up


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


@pytest.fixture(scope="module")
def seeds(data_dir, tmp_path_factory) -> dict[str, bytes]:
    files = {
        name: (data_dir / name).read_bytes()
        for name in ("jfk.wav", "jfk.flac", "jfk.mp3", "stereo_two_speakers.wav")
    }
    if shutil.which("ffmpeg"):
        out = tmp_path_factory.mktemp("fuzz_seeds")
        for name, codec in (
            ("seed.ogg", "libvorbis"),
            ("seed.opus", "libopus"),
            ("seed.m4a", "aac"),
            ("seed.webm", "libopus"),
        ):
            path = out / name
            subprocess.run(
                [
                    "ffmpeg",
                    "-nostdin",
                    "-v",
                    "error",
                    "-y",
                    "-t",
                    "3",
                    "-i",
                    str(data_dir / "jfk.wav"),
                    "-c:a",
                    codec,
                    str(path),
                ],
                check=True,
                capture_output=True,
                timeout=60,
            )
            files[name] = path.read_bytes()
    return files


def _mutate(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    kind = rng.choice(
        ["truncate", "bitflip", "header_flip", "runs", "splice", "header_only", "random", "empty"]
    )
    b = bytearray(data)
    n = len(b)
    if kind == "truncate":
        return kind, bytes(b[: rng.randrange(n)])
    if kind in ("bitflip", "header_flip"):
        span = n if kind == "bitflip" else min(n, 128)
        for _ in range(rng.randint(1, 16)):
            b[rng.randrange(span)] ^= 1 << rng.randrange(8)
        return kind, bytes(b)
    if kind == "runs":
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(n)
            length = rng.randint(1, 256)
            b[at : at + length] = rng.randbytes(len(b[at : at + length]))
        return kind, bytes(b)
    if kind == "splice":
        at = rng.randrange(n)
        length = rng.randint(1, 8192)
        if rng.random() < 0.5:
            del b[at : at + length]
        else:
            to = rng.randrange(n)
            b[to:to] = data[at : at + length]
        return kind, bytes(b)
    if kind == "header_only":
        return kind, bytes(b[: rng.randint(1, min(n, 1024))])
    if kind == "random":
        return kind, rng.randbytes(rng.randint(1, 65536))
    return kind, b""


def test_mutated_files(seeds, tmp_path):
    rng = random.Random(SEED)
    names = sorted(seeds)
    outcomes: Counter[str] = Counter()
    rss_after_warm_up = None
    peak = 0
    for i in range(ITERATIONS):
        name = rng.choice(names)
        kind, data = _mutate(rng, seeds[name])
        path = tmp_path / f"m{i:05d}{Path(name).suffix}"
        path.write_bytes(data)
        try:
            samples = load_audio(path)
        except saywho.AudioError as exc:
            assert path.name in str(exc), str(exc)
            outcomes["AudioError"] += 1
        else:
            assert samples.dtype == np.float32 and samples.ndim == 1 and len(samples) > 0
            assert np.isfinite(samples).all(), f"{kind} of {name}"
            outcomes["ok"] += 1
        path.unlink()
        if i + 1 == WARM_UP:
            rss_after_warm_up = _rss_bytes()
        elif rss_after_warm_up is not None:
            peak = max(peak, _rss_bytes())
    growth = peak - rss_after_warm_up
    print(
        f"\n{ITERATIONS} mutated files: {dict(outcomes)}; RSS after warm-up "
        f"{rss_after_warm_up / 2**20:.1f} MiB, peak after {peak / 2**20:.1f} MiB "
        f"(+{growth / 2**20:.1f} MiB)"
    )
    assert sum(outcomes.values()) == ITERATIONS
    assert outcomes["ok"] > 0 and outcomes["AudioError"] > 0
    assert growth < RSS_GROWTH_LIMIT


def test_repeated_decodes_do_not_grow(data_dir, tmp_path):
    """The same good and bad files many times: resident memory levels off."""
    good = data_dir / "jfk.mp3"
    bad = tmp_path / "bad.mp3"
    bad.write_bytes(good.read_bytes()[:2000] + bytes(range(256)) * 40)
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")

    def round_trip() -> None:
        load_audio(good)
        for path in (bad, empty, tmp_path / "missing.wav"):
            try:
                load_audio(path)
            except saywho.AudioError:
                pass

    for _ in range(20):
        round_trip()
    before = _rss_bytes()
    for _ in range(200):
        round_trip()
    growth = _rss_bytes() - before
    print(f"\nRSS growth over 200 rounds: {growth / 2**20:.2f} MiB")
    assert growth < 8 * 1024 * 1024
