"""``clip_timestamps`` for the sequential mode: which stretches of the
recording to transcribe, as faster-whisper's sequential loop reads them.

faster-whisper takes seconds as "start,end,start,end,..." (a string) or a
list of numbers; an odd count leaves the last clip open to the end. saywho
also takes the batched mode's form, {"start", "end"} dicts in seconds.
"""

from __future__ import annotations

from .._internal.native import _core

FRAMES_PER_SECOND = 100  # log-mel frames (the seek unit)


def clip_seconds(clip_timestamps) -> list[float]:
    """The clip bounds as a flat list of seconds ([] for the whole recording)."""
    if clip_timestamps is None:
        return []
    try:
        if isinstance(clip_timestamps, str):
            return [float(t) for t in clip_timestamps.split(",")] if clip_timestamps else []
        bounds: list[float] = []
        for clip in clip_timestamps:
            if isinstance(clip, dict):
                bounds += [float(clip["start"]), float(clip["end"])]
            else:
                bounds.append(float(clip))
    except (TypeError, ValueError, KeyError) as e:
        raise _core.OptionError(
            f"clip_timestamps must be seconds ('0,10.5,20' or [0, 10.5, 20]) or "
            f'{{"start", "end"}} dicts, not {clip_timestamps!r} ({e})'
        ) from None
    if any(t < 0 for t in bounds):
        raise _core.OptionError(f"clip_timestamps must not be negative: {clip_timestamps!r}")
    return bounds


def seek_clips(bounds: list[float], content_frames: int) -> list[tuple[int, int]]:
    """(start, end) frame pairs the seek loop walks, in order given; with no
    bounds the whole recording, with an odd count the last clip runs to the end."""
    points = [round(t * FRAMES_PER_SECOND) for t in bounds] or [0]
    if len(points) % 2:
        points.append(content_frames)
    return list(zip(points[::2], points[1::2]))


def detection_start(bounds: list[float], content_frames: int) -> int:
    """The frame language detection starts at: the first clip's start, when
    it lies inside the recording."""
    first = bounds[0] if bounds else 0.0
    return int(first * FRAMES_PER_SECOND) if first * FRAMES_PER_SECOND < content_frames else 0
