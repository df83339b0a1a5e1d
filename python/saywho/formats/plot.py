"""A picture of who spoke when: one lane per speaker, turns as bars, words on top.

matplotlib is an optional extra (``pip install saywho[plot]``). The figure is
drawn on its own canvas (no pyplot state, no display, whatever backend the
user chose) and written under a temporary name, then renamed, like every
transcript file.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

from .._internal.native import _core
from .writers import write_atomic

FORMATS = (".png", ".svg", ".pdf")
WORDS_UP_TO = 120.0  # seconds of window below which words are drawn


def _matplotlib():
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise _core.SaywhoError(
            "plotting needs matplotlib: pip install saywho[plot] (or pip install matplotlib)"
        ) from None
    return Figure, FigureCanvasAgg


def _clock(seconds: float, _pos=None) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m}:{s:02d}"


def plot_result(
    result,
    path: str | os.PathLike,
    start: float = 0.0,
    end: float | None = None,
    width: float = 12.0,
    dpi: int = 100,
) -> Path:
    """Draws ``result`` (a saywho.Result) between ``start`` and ``end`` seconds.

    Lanes come from the result's turns (overlaps show as bars in two lanes at
    once) or, for a result without diarization, from its segments. Words are
    written at their times when the window is at most 120 s long.
    """
    target = Path(path)
    if target.suffix.lower() not in FORMATS:
        raise _core.OptionError(
            f"{target}: cannot draw a {target.suffix or 'suffix-less'} file; use one of "
            + ", ".join(FORMATS)
        )
    picture = render(result, target.suffix[1:].lower(), start, end, width, dpi)
    return write_atomic(target, lambda: picture)


def render(
    result,
    fmt: str = "png",
    start: float = 0.0,
    end: float | None = None,
    width: float = 12.0,
    dpi: int = 100,
) -> bytes:
    """The picture of :func:`plot_result` as the bytes of a ``fmt`` file
    (png, svg or pdf), for showing it without a file (a notebook)."""
    end = result.duration if end is None else end
    if not (0.0 <= start < end):
        raise _core.OptionError(f"plot window [{start}, {end}] is empty or negative")
    Figure, FigureCanvasAgg = _matplotlib()

    spans = result.turns if result.turns is not None else result.segments
    speakers = list(result.speakers) or sorted({s.speaker or "speech" for s in spans})
    lanes = {name: i for i, name in enumerate(speakers)}
    height = 1.2 + 0.6 * max(len(lanes), 1)
    fig = Figure(figsize=(width, height), dpi=dpi)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    palette = [f"C{i % 10}" for i in range(len(lanes))]
    for span in spans:
        name = span.speaker or "speech"
        if name not in lanes or span.end <= start or span.start >= end:
            continue
        lane = lanes[name]
        ax.broken_barh(
            [(span.start, span.end - span.start)],
            (lane - 0.35, 0.7),
            facecolors=palette[lane],
            alpha=0.85,
        )
    if end - start <= WORDS_UP_TO:
        for segment in result.segments:
            for k, word in enumerate(segment.words):
                if word.end <= start or word.start >= end:
                    continue
                name = word.speaker if word.speaker in lanes else segment.speaker
                lane = lanes.get(name, -0.6)
                ax.text(
                    (word.start + word.end) / 2,
                    lane + (0.22 if k % 2 else -0.22),
                    word.word.strip(),
                    ha="center",
                    va="center",
                    fontsize=6,
                    rotation=30,
                    clip_on=True,
                )
    ax.set_xlim(start, end)
    ax.set_ylim(-1.0, max(len(lanes), 1) - 0.4)
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels(list(lanes))
    ax.xaxis.set_major_formatter(_clock)
    ax.set_xlabel("time (m:ss)")
    ax.grid(axis="x", alpha=0.3)
    title = Path(result.source).name if result.source else "recording"
    ax.set_title(f"{title}: who spoke when")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt)
    return buffer.getvalue()
