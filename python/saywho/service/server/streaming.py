"""``stream=true``: OpenAI's server-sent events, sent while the run decodes.

The worker thread tells a :class:`LiveRun` of each segment as Whisper
decodes it (``on_segment``) and of each stage's progress; the event loop
turns them into events as they come:

- ``transcript.text.delta`` for each decoded segment's text, as soon as it
  is decoded (the deltas joined are the done event's text);
- with speakers, ``transcript.text.segment`` for each speaker-labelled
  segment once the run ends: the diarization runs before the transcription
  (so the deltas still stream), but a segment's speaker is only known after
  the alignment, which splits Whisper's segments where the speaker changes;
- ``transcript.text.done`` last, with the text and ``usage`` (seconds of
  audio, as for the other formats).

Progress goes out as SSE comments (``: progress transcribe 30.0/110.0``, at
most one a second), which clients ignore: they keep a proxy or a client's
read timeout from closing a stream that is still in a long diarization.

The response starts (status 200) at the run's first sign of life: audio
decoded and options checked. Errors before that are HTTP errors with their
status, like the other formats'; an error after it is an ``error`` event in
OpenAI's shape, which the openai client raises as an APIError. A client that
goes away stops the run at its next window or segment.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from concurrent.futures import Future

from .formats import diarized_segment, logprobs, usage
from .transcript import Transcript

COMMENT_EVERY_S = 1.0


class ClientGone(Exception):
    """Raised in the worker when the streaming client has disconnected."""


class LiveRun:
    """A run's segments and progress, from the worker thread to the event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self._loop = loop
        self.items: asyncio.Queue = asyncio.Queue()
        self.abandoned = False

    def _put(self, item: tuple) -> None:
        self._loop.call_soon_threadsafe(self.items.put_nowait, item)

    # called in the worker thread
    def segment(self, segment) -> None:
        if self.abandoned:
            raise ClientGone()
        self._put(("segment", segment))

    def progress(self, stage: str, done: float, total: float) -> None:
        if self.abandoned:
            raise ClientGone()
        self._put(("progress", stage, float(done), float(total)))

    def finished(self, future: Future) -> None:
        self._put(("end", future))


def _event(payload: dict) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"


def _logprobs(words) -> list[dict]:
    """OpenAI's logprobs for a segment's words (saywho's unit is the word)."""
    return [
        {
            "token": w.word,
            "logprob": math.log(max(float(w.probability), 1e-12)),
            "bytes": list(w.word.encode("utf-8")),
        }
        for w in words or ()
    ]


async def events(live: LiveRun, request, first: tuple, error_body):
    """The event stream, from the run's first item on. ``error_body(exc)``
    gives OpenAI's error object for a run that fails mid-stream."""
    item, started, last_comment = first, False, 0.0
    try:
        while True:
            kind = item[0]
            if kind == "progress":
                _, stage, done, total = item
                now = time.monotonic()
                if now - last_comment >= COMMENT_EVERY_S:
                    last_comment = now
                    yield f": progress {stage} {done:.1f}/{total:.1f}\n\n"
            elif kind == "segment":
                segment = item[1]
                text = segment.text.strip()
                if text:
                    event = {"type": "transcript.text.delta", "delta": text}
                    if started:
                        event["delta"] = " " + text
                    started = True
                    if not request.diarize:
                        # with speakers, the final segments are cut elsewhere
                        event["segment_id"] = f"seg_{segment.id - 1}"  # from 0, as OpenAI
                    if request.logprobs:
                        event["logprobs"] = _logprobs(getattr(segment, "words", None))
                    yield _event(event)
            else:
                future: Future = item[1]
                try:
                    transcript: Transcript = future.result()
                except BaseException as e:  # noqa: BLE001 (told to the client, in its shape)
                    yield _event({"type": "error", **error_body(e)})
                    return
                for event in _closing(transcript, request):
                    yield _event(event)
                return
            item = await live.items.get()
    finally:
        # done, or the client went away: a run still going stops at its next step
        live.abandoned = True


def _closing(t: Transcript, request) -> list[dict]:
    """The speaker-labelled segments (when diarized), then the done event."""
    out = [diarized_segment(s) for s in t.segments] if t.diarized else []
    done = {"type": "transcript.text.done", "text": t.text}
    if request.logprobs:
        done["logprobs"] = logprobs(t)
    done["usage"] = usage(t)
    out.append(done)
    return out
