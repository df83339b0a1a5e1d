"""The fewest speakers the segmentation itself vouches for.

segmentation-3.0 separates the voices of one 10 s chunk into distinct local
speakers: two local speakers of one chunk are, by the way the model is
trained, two different people. Across a whole recording the embeddings must
tell who is who, and there a fixed threshold can fail: where the
embeddings of two people lie closer than the threshold was tuned for (one
shared channel, a distortion), the AHC merges them into one speaker (issue
25's telephone call: 2 voices, 1 found; reproduced here only on a stand-in,
tests/test_count_bound.py). The segmentation can still tell them apart,
because it only has to separate the voices inside one chunk.

So a recording in which enough chunks hold k local speakers who each speak
alone for a while has at least k speakers, and the clustering is asked for
at least k (its minimum, never its exact count: more may be found). "Enough"
guards against the model's rare split of one voice into two local speakers:
that happens in a chunk or two (a laugh, a change of tone), while two people
taking turns fill every chunk that holds the exchange.
"""

from __future__ import annotations

import numpy as np

# a local speaker counts when it speaks alone this long within the chunk
MIN_SOLO_SECONDS = 1.0
# and k such speakers must share at least this many chunks ...
MIN_CHUNKS = 3
# ... and at least this share of the chunks that hold any speech
MIN_SHARE = 0.1
# chunks looked at together: the frame-level temporaries of a whole recording
# ([C, 589, 3] booleans and an int64 sum per frame) took 24.3 MiB an hour at a
# 1 s step (48.5 for 2 hours), twice in a run; a block's take 3.5 MiB however
# long the recording (tracemalloc; docs/diarization.md)
BLOCK = 512


def solo_frames(active: np.ndarray) -> np.ndarray:
    """[C, S] int64: in how many frames of its chunk each local speaker is the
    only one active (active [C, F, S]), a block of chunks at a time."""
    out = np.zeros((active.shape[0], active.shape[2]), dtype=np.int64)
    for i in range(0, len(active), BLOCK):
        act = np.asarray(active[i : i + BLOCK]) > 0
        out[i : i + BLOCK] = (act & (act.sum(axis=2, keepdims=True) == 1)).sum(axis=1)
    return out


def chunks_with_speech(active: np.ndarray) -> int:
    """How many chunks of ``active`` [C, F, S] hold any active frame."""
    return sum(
        int((np.asarray(active[i : i + BLOCK]) > 0).any(axis=(1, 2)).sum())
        for i in range(0, len(active), BLOCK)
    )


def speakers_vouched_for(
    active: np.ndarray,
    trainable: np.ndarray,
    frame_seconds: float,
    min_solo_seconds: float = MIN_SOLO_SECONDS,
    min_chunks: int = MIN_CHUNKS,
    min_share: float = MIN_SHARE,
) -> int:
    """The largest k such that at least max(min_chunks, min_share of the
    chunks with speech) chunks each hold k local speakers with an embedding
    fit for clustering and min_solo_seconds of speech alone; 0 without speech.

    active [C, F, S] local speakers' activity per frame; trainable [C, S]."""
    active = np.asarray(active)
    if active.size == 0:
        return 0
    solo_seconds = solo_frames(active) * frame_seconds  # [C, S]
    distinct = ((solo_seconds >= min_solo_seconds) & np.asarray(trainable)).sum(axis=1)  # [C]
    with_speech = chunks_with_speech(active)
    if with_speech == 0:
        return 0
    needed = max(min_chunks, int(np.ceil(min_share * with_speech)))
    best = 1  # some chunk has speech
    for k in range(2, active.shape[2] + 1):
        if int((distinct >= k).sum()) >= needed:
            best = k
    return best
