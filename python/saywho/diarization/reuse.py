"""Embeddings reused between overlapping chunks (``Diarizer(embedding_step=...)``).

At pyannote's 1 s step every second of speech lies in ten chunks, and each
(chunk, local speaker) gets its own embedding: ten embeddings of nearly the
same frames, which is most of a diarization's time. With an embedding step
of ``every`` chunks, only every ``every``-th chunk (the anchor) embeds all
its local speakers. A chunk between two anchors takes, for each of its local
speakers, the embedding of the previous anchor's local speaker whose
activity matches it on the frames the two chunks share (segmentation-3.0's
local speakers are the same voices wherever chunks overlap), and the next
anchor's likewise: one match gives its embedding, two the mean of both. A
speaker that matches nobody well enough (one who speaks only where neither
anchor hears, or whose match spoke too little to be clustered) is embedded as
before.

Every (chunk, speaker) still gets an embedding and goes through the same
clustering, so the clusters' sizes and weights keep their meaning.
"""

from __future__ import annotations

import numpy as np

# A local speaker takes its anchor's embedding only when at least this share
# of its active frames are frames where the anchor's speaker is active too.
MIN_SHARED = 0.5


def match_anchor(active_chunk: np.ndarray, active_anchor: np.ndarray, shift: int) -> np.ndarray:
    """For each of a chunk's local speakers, the anchor's local speaker it
    continues, or -1.

    ``active_*`` are [frames, speakers] binary activities; the chunk starts
    ``shift`` frames after its anchor (negative: the anchor comes after the
    chunk). Speaker j matches the anchor's j' with the most frames active in
    both, if those are at least MIN_SHARED of j's active frames and of j''s
    active frames in the stretch the two chunks share, and no other of the
    chunk's speakers (taken from the most active down) took j' first.
    """
    frames, speakers = active_chunk.shape
    out = np.full(speakers, -1, dtype=np.int64)
    shared = frames - abs(shift)
    if shared <= 0:
        return out
    if shift >= 0:
        mine, theirs = active_chunk[:shared], active_anchor[shift:]
    else:
        mine, theirs = active_chunk[-shift:], active_anchor[:shared]
    both = mine.astype(np.int64).T @ theirs.astype(np.int64)  # [S chunk, S anchor]
    own = active_chunk.sum(axis=0, dtype=np.int64)
    their_shared = theirs.sum(axis=0, dtype=np.int64)
    taken = set()
    for j in np.argsort(-own, kind="stable"):
        if own[j] == 0:
            continue
        best = int(np.argmax(both[j]))
        hit = both[j, best]
        if hit >= MIN_SHARED * own[j] and hit >= MIN_SHARED * their_shared[best]:
            if best not in taken:
                out[j] = best
                taken.add(best)
    return out
