"""A Result as tables: pandas DataFrames, and the HTML a notebook shows.

pandas and matplotlib stay optional: ``to_pandas`` says which package is
missing, and the HTML leaves the picture out without matplotlib.
"""

from __future__ import annotations

import base64
import html

from .._internal.native import _core
from .plot import render

TABLES = ("segments", "words", "turns")


def _pandas():
    try:
        import pandas
    except ImportError:
        raise ImportError(
            "Result.to_pandas needs pandas, which saywho does not install: pip install pandas"
        ) from None
    return pandas


def rows(result, table: str) -> tuple[list[str], list[tuple]]:
    """The column names and rows of one of TABLES."""
    if table == "segments":
        columns = ["start", "end", "speaker", "text"]
        data = [(s.start, s.end, s.speaker, s.text.strip()) for s in result.segments]
    elif table == "words":
        columns = ["start", "end", "speaker", "word", "probability", "segment"]
        data = [
            (w.start, w.end, w.speaker, w.word.strip(), w.probability, i)
            for i, s in enumerate(result.segments)
            for w in s.words
        ]
    elif table == "turns":
        columns = ["start", "end", "speaker", "duration"]
        data = [(t.start, t.end, t.speaker, t.end - t.start) for t in result.turns or ()]
    else:
        raise _core.OptionError(f"no table {table!r}; choose from {', '.join(TABLES)}")
    return columns, data


def to_pandas(result, table: str = "segments"):
    columns, data = rows(result, table)  # a bad name fails before the import
    pandas = _pandas()
    frame = pandas.DataFrame.from_records(data, columns=columns)
    for name in ("start", "end", "duration", "probability"):
        if name in frame:
            frame[name] = frame[name].astype("float64")
    return frame


def speaker_turns(segments) -> list[tuple[float, float, str | None, str]]:
    """Consecutive segments of one speaker as one row (start, end, speaker,
    text), as the transcript's text joins them."""
    out: list[tuple[float, float, str | None, str]] = []
    for s in segments:
        text = s.text.strip()
        if out and s.speaker is not None and out[-1][2] == s.speaker:
            start, _, speaker, before = out[-1]
            out[-1] = (start, s.end, speaker, f"{before} {text}".strip())
        else:
            out.append((s.start, s.end, s.speaker, text))
    return out


def _clock(seconds: float) -> str:
    minutes, secs = divmod(max(seconds, 0.0), 60)
    return f"{int(minutes)}:{secs:04.1f}"


def _picture(result) -> str:
    """The timeline as an inline PNG, or "" without matplotlib or audio."""
    if result.duration <= 0 or not (result.segments or result.turns):
        return ""
    try:
        png = render(result, "png", width=10.0, dpi=80)
    except _core.SaywhoError:  # matplotlib is not installed
        return ""
    data = base64.b64encode(png).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="who spoke when" style="max-width:100%">'


def result_html(result) -> str:
    source = html.escape(str(result.source or "samples"))
    speakers = ", ".join(html.escape(s) for s in result.speakers) or "none found"
    facts = f"{result.duration:.1f} s, language {html.escape(str(result.language))}"
    if result.turns is not None:
        facts += f", speakers: {speakers}"
    body = []
    for start, end, speaker, text in speaker_turns(result.segments):
        who = html.escape(speaker) if speaker else ""
        body.append(
            f"<tr><td style='white-space:nowrap'>{_clock(start)}&ndash;{_clock(end)}</td>"
            f"<td><b>{who}</b></td><td style='text-align:left'>{html.escape(text)}</td></tr>"
        )
    table = (
        "<table><thead><tr><th>time</th><th>speaker</th><th style='text-align:left'>text</th>"
        f"</tr></thead><tbody>{''.join(body)}</tbody></table>"
        if body
        else "<p>(no speech transcribed)</p>"
    )
    return (
        f"<div class='saywho-result'><p><b>saywho</b>: {source} ({facts})</p>"
        f"{_picture(result)}{table}</div>"
    )
