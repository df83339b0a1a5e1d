"""Diarization's memory against a recording's length, past the networks:
each hour's per-chunk arrays, clustering and reconstruction, by the peak of
RssAnon (tests/diarization_growth.py says how: the bundled models' real
per-chunk output over 2 minutes of tests/data/shared, repeated to each
length, Diarizer.from_chunks in a process of its own per length).

    python3 bench/diarization_growth.py --hours 0.33 1 2 3
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from machine import describe  # noqa: E402

from tests.diarization_growth import MEASURE, save_real_chunks  # noqa: E402
from tests.test_long_audio import WATCH_RSS_ANON  # noqa: E402

MiB = 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, nargs="+", default=[1 / 3, 1, 2, 3])
    ap.add_argument("--chunks", help="the real chunks' .npz: made here if missing, else reused")
    args = ap.parse_args()
    print(describe())
    with tempfile.TemporaryDirectory() as work:
        saved = Path(args.chunks or Path(work) / "chunks.npz")
        if not saved.exists():
            print(f"{save_real_chunks(REPO / 'tests' / 'data' / 'shared', saved)} real chunks")
        rows = []
        for hours in args.hours:
            proc = subprocess.run(
                [sys.executable, "-c", WATCH_RSS_ANON + MEASURE, str(saved), str(hours)],
                capture_output=True,
                text=True,
                check=True,
            )
            r = json.loads(proc.stdout.splitlines()[-1])
            rows.append(r)
            print(
                f"{hours:5.2f} h: {r['chunks']} chunks, peak RssAnon +{(r['peak'] - r['before']) / MiB:.1f} MiB "
                f"(of which the per-chunk arrays {r['per_chunk_bytes'] / MiB:.1f} MiB), "
                f"{r['speakers']} speakers, {r['turns']} turns"
            )
    a, b = rows[0], rows[-1]
    grown = ((b["peak"] - b["before"]) - (a["peak"] - a["before"])) / (b["hours"] - a["hours"])
    print(f"growth: {grown / MiB:.1f} MiB per hour ({a['hours']:g} h -> {b['hours']:g} h)")


if __name__ == "__main__":
    main()
