"""``stream=true``: OpenAI's server-sent events for a finished transcript.

The run completes first (saywho's speakers need the whole recording), then
each segment goes out as ``transcript.text.delta`` (and, with speakers,
``transcript.text.segment``), and ``transcript.text.done`` ends the stream
with the full text and ``usage``.
"""

from __future__ import annotations

import json

from .formats import diarized_segment
from .transcript import Transcript


def _event(payload: dict) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"


def events(t: Transcript, request):
    first = True
    for s in t.segments:
        text = s["text"].strip()
        if not text:
            continue
        # the deltas joined are the done event's text
        delta, first = (text if first else " " + text), False
        yield _event(
            {"type": "transcript.text.delta", "delta": delta, "segment_id": f"seg_{s['id']}"}
        )
        if t.diarized:
            yield _event(diarized_segment(s))
    yield _event(
        {
            "type": "transcript.text.done",
            "text": t.text,
            "usage": {"type": "duration", "seconds": round(t.duration, 3)},
        }
    )
