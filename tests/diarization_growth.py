"""How diarization's memory grows with a recording's length, without running
its networks for hours.

The networks work a batch of chunks at a time; what a recording's length
makes grow is what they leave per chunk (each chunk's binarised activity and
its local speakers' embeddings) and what the clustering and the
reconstruction build from all of it (Diarizer.from_chunks). So the networks
run once over a few minutes of the real speech in tests/data/shared (the
recording tests/long_recording.py assembles, which repeats its clips in turn
as the long ones do), and their per-chunk output is repeated to the chunks
of a longer recording, in a process of its own, where ``MEASURE`` reads the
peak of RssAnon above the level before the repeated arrays were made.
"""

from __future__ import annotations

import textwrap

import numpy as np

from .long_recording import assemble

# The measuring process's RssAnon watcher (test_long_audio.py's) comes first.
MEASURE = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from saywho import _core
    from saywho.diarization import Diarizer
    from saywho.diarization.diarize import SAMPLE_RATE
    from saywho._internal.performance import Performance
    from saywho.models.bundled import default_diarization_models

    saved, hours = np.load(sys.argv[1]), float(sys.argv[2])
    runtime = _core.Runtime(device="cpu", threads=2)
    with Diarizer(*default_diarization_models(), runtime) as diarizer:
        n = int(hours * 3600 * SAMPLE_RATE)
        starts = diarizer._chunk_starts(n)
        before, peak, done = watch_rss_anon()
        reps = -(-len(starts) // len(saved["active"]))
        active = np.tile(saved["active"], (reps, 1, 1))[: len(starts)]
        embeddings = np.tile(saved["embeddings"], (reps, 1, 1))[: len(starts)]
        trainable = np.tile(saved["trainable"], (reps, 1))[: len(starts)]
        held = active.nbytes + embeddings.nbytes + trainable.nbytes
        result = diarizer.from_chunks(
            active=active, embeddings=embeddings, trainable=trainable, starts=starts,
            duration=n / SAMPLE_RATE, num=None, lo=1, hi=float("inf"), seconds={},
            perf=Performance(n / SAMPLE_RATE),
        )
        done.set()
    print(json.dumps({"before": before, "peak": peak[0], "hours": hours, "chunks": len(starts),
                      "per_chunk_bytes": held, "speakers": len(result.speakers),
                      "turns": len(result.turns)}))
    """
)


def save_real_chunks(data_dir, path, minutes: float = 2.0) -> int:
    """The bundled models' per-chunk output over ``minutes`` of the assembled
    real speech, saved to ``path`` (.npz); returns how many chunks."""
    from saywho import _core
    from saywho.diarization import Diarizer
    from saywho.models.bundled import default_diarization_models

    samples = assemble(data_dir, minutes)
    runtime = _core.Runtime(device="cpu", threads=2)
    try:
        with Diarizer(*default_diarization_models(), runtime) as diarizer:
            starts = diarizer._chunk_starts(len(samples))
            active, embeddings, trainable, _ = diarizer._segment_and_embed(samples, starts, None)
    finally:
        runtime.close()
    # not the last chunk, which the recording's end pads with zeros
    np.savez(path, active=active[:-1], embeddings=embeddings[:-1], trainable=trainable[:-1])
    return len(active) - 1
