"""Names for the speakers diarization finds, from short clips of known voices.

``known_speakers`` maps a name to a clip of that person speaking: a file
path, 16 kHz mono float32 samples, or a list of either (their embeddings
are averaged). Each clip is embedded by the diarization's own embedding
model, so the clip and the found speakers' centroids live in one space.
A found speaker takes a name when the cosine similarity of its centroid to
the name's embedding reaches ``threshold``; names and speakers are paired
one to one, maximising the total similarity over the pairs that reach the
threshold (an assignment, so two speakers never share a name, and a name's
best match does not steal a speaker whose own best it is not). Speakers
left unpaired keep their SPEAKER_xx labels.

The threshold is the embedding model's own (``KNOWN_SPEAKER_THRESHOLDS``),
tuned on voices no test scores (docs/known_speakers.md says how).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Union

import numpy as np

from .._internal.native import _core
from ..audio.decode import SAMPLE_RATE, load_audio
from ..eval.metrics import hungarian
from ..formats.rttm import Turn

MIN_CLIP_SECONDS = 1.0  # less speech than this says little about a voice

# Cosine similarity of a clip's embedding to a found speaker's centroid at or
# above which they are one voice, per embedding model (its class name):
# for CAM++ the middle of the gap between the most alike other voice and the
# least alike same voice on real 9-voice assemblies that no test scores
# (bench/known_speakers_threshold.py; docs/known_speakers.md has the figures).
# pyannote 3.1's ResNet has none: no weights of it were at hand to tune on.
KNOWN_SPEAKER_THRESHOLDS = {
    "CamppEmbedding": 0.58,
    "GE2EEncoder": 0.80,  # no gap for GE2E: where misses and false names are even
}

# typing.Union: this alias is evaluated at import, and the wheel serves Python 3.9
Clip = Union[str, os.PathLike, np.ndarray]


def _clips(name: str, value) -> list[Clip]:
    if isinstance(value, (str, os.PathLike, np.ndarray)):
        return [value]
    if isinstance(value, Sequence) and value:
        return list(value)
    raise _core.OptionError(
        f"known speaker {name!r}: give a path, 16 kHz mono samples or a list of them, "
        f"not {type(value).__name__}"
    )


def load_clip(name: str | None, clip: Clip) -> np.ndarray:
    """A known speaker's clip (or, without a name, any one voice's) as 16 kHz
    mono float32, checked."""
    where = f"known speaker {name!r}" if name is not None else "speaker clip"
    if isinstance(clip, np.ndarray):
        if clip.ndim != 1 or not np.issubdtype(clip.dtype, np.floating):
            raise _core.AudioError(f"{where}: samples must be 1-D float (16 kHz mono)")
        samples = np.ascontiguousarray(clip, dtype=np.float32)
        if not np.isfinite(samples).all():
            raise _core.AudioError(f"{where}: samples hold NaN or infinity")
        what = "its samples"
    elif isinstance(clip, (str, os.PathLike)):
        samples = load_audio(clip)
        what = os.fspath(clip)
    else:
        raise _core.OptionError(f"{where}: a clip is a path or samples, not {type(clip).__name__}")
    if len(samples) < MIN_CLIP_SECONDS * SAMPLE_RATE:
        raise _core.AudioError(
            f"{where}: {what} is {len(samples) / SAMPLE_RATE:.2f} s long; "
            f"a voice needs at least {MIN_CLIP_SECONDS:g} s"
        )
    return samples


def check_known(known: Mapping | None) -> dict[str, list[Clip]]:
    """``known_speakers`` as {name: [clips]}, OptionError when malformed."""
    if known is None:
        return {}
    if not isinstance(known, Mapping):
        raise _core.OptionError(
            f"known_speakers must be a dict of name -> clip, not {type(known).__name__}"
        )
    out = {}
    for name, value in known.items():
        if not isinstance(name, str) or not name.strip():
            raise _core.OptionError(f"known speaker names must be non-empty text, not {name!r}")
        if re.fullmatch(r"SPEAKER_\d+|UNKNOWN", name.strip()):
            # it could be taken for a speaker that no clip named
            raise _core.OptionError(f"known speaker name {name!r} is one of saywho's own labels")
        out[name.strip()] = _clips(name, value)
    if len(out) != len(known):
        raise _core.OptionError("known speaker names differ only in spaces around them")
    return out


def threshold_for(embedding) -> float:
    name = type(embedding).__name__
    try:
        return KNOWN_SPEAKER_THRESHOLDS[name]
    except KeyError:
        raise _core.OptionError(
            f"known_speakers has no threshold tuned for the {name} embedding yet; "
            "use saywho's default diarization models (CAM++)"
        ) from None


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def best_assignment(score: np.ndarray) -> list[tuple[int, int]]:
    """(row, column) pairs, each row and column at most once, maximising the
    total score over pairs with a positive score (rows or columns may stay
    unpaired): the DER mapping's assignment on the negated gain, with the
    pairs that gain nothing dropped (a zero pair is the same as no pair)."""
    score = np.asarray(score, dtype=np.float64)
    rows, cols = hungarian(-np.maximum(score, 0.0))
    return sorted((int(r), int(c)) for r, c in zip(rows, cols) if score[r, c] > 0)


def match_speakers(
    centroids: np.ndarray,
    speakers: Sequence[str],
    voices: np.ndarray,
    names: Sequence[str],
    threshold: float,
) -> tuple[dict[str, str], np.ndarray]:
    """{found label: name} for the pairs at or above ``threshold``, and the
    [speakers, names] cosine similarities."""
    if len(speakers) == 0 or len(names) == 0:
        return {}, np.zeros((len(speakers), len(names)))
    similarity = _unit(centroids) @ _unit(voices).T
    # shift so that exactly the pairs reaching the threshold have a gain
    gain = np.where(similarity >= threshold, similarity - threshold + 1e-9, 0.0)
    pairs = best_assignment(gain)
    return {speakers[i]: names[j] for i, j in pairs}, similarity


def rename_speakers(diarization, renames: Mapping[str, str]) -> None:
    """Renames the labels in a Diarization's turns, exclusive turns and
    speakers, in place."""

    def relabel(turns):
        return [Turn(t.start, t.end, renames.get(t.speaker, t.speaker)) for t in turns]

    diarization.turns = relabel(diarization.turns)
    diarization.exclusive = relabel(diarization.exclusive)
    diarization.speakers = [renames.get(s, s) for s in diarization.speakers]


def known_voices(pipeline, known: Mapping[str, list[Clip]]) -> np.ndarray:
    """[names, dimension]: each known speaker's clips embedded with
    ``pipeline``'s diarization embedding, their unit vectors averaged (the
    anchors the clustering keeps apart, diarization/anchors.py)."""
    return np.stack(
        [
            _unit(np.stack([pipeline.speaker_embedding(load_clip(n, c)) for c in clips])).mean(
                axis=0
            )
            for n, clips in known.items()
        ]
    )


def name_known_speakers(
    pipeline, diarization, known: Mapping[str, list[Clip]], voices: np.ndarray | None = None
) -> dict[str, str]:
    """Pairs names with ``diarization``'s speakers by their voices (``voices``
    from known_voices, embedded here when not given), renames them in place;
    returns {old label: name}."""
    names = list(known)
    if voices is None:
        voices = known_voices(pipeline, known)
    renames, _ = match_speakers(
        diarization.embeddings,
        diarization.speakers,
        voices,
        names,
        pipeline.known_speaker_threshold,
    )
    rename_speakers(diarization, renames)
    return renames
