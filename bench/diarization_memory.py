"""Peak memory of diarizing a long recording: does anything grow with the
square of the length? (pyannote.audio reaches 12 GB on 4 hours.)

Builds --hours of multi-speaker audio from tests/data/shared (the assembled
recording of tests/long_recording.py, repeated), diarizes it with the test
weights, and prints the peak RSS of the process (the samples themselves are
4 bytes x 16,000 per second: 230 MB an hour), the peak of saywho's pools,
the time and x-realtime. Run one length per process so each peak is its own:

    python3 bench/diarization_memory.py --hours 1
    python3 bench/diarization_memory.py --hours 4 --step 2
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from saywho import _core  # noqa: E402
from saywho.diarization import Diarizer  # noqa: E402
from tests.long_recording import assemble  # noqa: E402
from tests.weights import test_diarization_models  # noqa: E402


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=1.0)
    ap.add_argument("--step", type=float, default=1.0)
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    data = REPO / "tests" / "data" / "shared"
    piece = assemble(data, 10.0)
    n = int(args.hours * 3600 * 16000)
    audio = np.resize(piece, n)  # repeats the 10-minute recording
    del piece
    base = rss_mb()
    seg, emb = (str(p) for p in test_diarization_models())
    runtime = _core.Runtime(device="cpu", threads=args.threads)
    with Diarizer(seg, emb, runtime, step=args.step) as d:
        t0 = time.perf_counter()
        result = d(audio)
        seconds = time.perf_counter() - t0
        pool_peak = runtime.memory()["peak_allocated"]
    runtime.close()
    print(
        f"{args.hours:g} h (step {args.step:g} s): peak RSS {rss_mb():.0f} MB "
        f"(audio and interpreter before diarizing: {base:.0f} MB), pool peak "
        f"{pool_peak / 2**20:.0f} MB, {seconds:.0f} s, {n / 16000 / seconds:.1f}x realtime, "
        f"{len(result.speakers)} speakers, {len(result.turns)} turns"
    )


if __name__ == "__main__":
    main()
