"""A Transcript as each of OpenAI's response formats.

json / verbose_json / diarized_json are OpenAI's objects (openai's
types/audio/*), with ``usage`` in seconds of audio as OpenAI bills Whisper;
text, srt and vtt are plain text, the subtitles labelled with the speaker
when there is one (saywho.formats.writers).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

from ...formats import writers
from .transcript import WHISPER_FIELDS, Transcript

TEXT_TYPES = {"text": "text/plain", "srt": "application/x-subrip", "vtt": "text/vtt"}


def usage(t: Transcript) -> dict:
    """OpenAI's usage for audio-billed transcription (openai's
    types/audio: ``UsageDuration``): seconds of audio, to the millisecond."""
    return {"type": "duration", "seconds": round(t.duration, 3)}


def _word(w: dict, diarized: bool) -> dict:
    out = {"word": w["word"].strip(), "start": w["start"], "end": w["end"]}
    if diarized:
        out["speaker"] = w.get("speaker")
    return out


def _segment(s: dict, diarized: bool) -> dict:
    out = {"id": s["id"]}
    for key in WHISPER_FIELDS:
        if key in s:
            out[key] = s[key]
    out.update(start=s["start"], end=s["end"], text=s["text"])
    if "no_speech_prob" in s:
        out["no_speech_prob"] = s["no_speech_prob"]
    if diarized:
        out["speaker"] = s.get("speaker")
    return out


def logprobs(t: Transcript) -> list[dict]:
    """Per word: the model's probability as a log (OpenAI gives tokens; saywho's
    unit of confidence is the word)."""
    return [
        {
            "token": w["word"],
            "logprob": math.log(max(w["probability"], 1e-12)),
            "bytes": list(w["word"].encode("utf-8")),
        }
        for w in t.words
    ]


def as_json(t: Transcript, with_logprobs: bool = False) -> dict:
    out = {"text": t.text}
    if with_logprobs:
        out["logprobs"] = logprobs(t)
    if t.task == "transcribe":
        out["usage"] = usage(t)
    return out


def verbose_json(t: Transcript, words: bool, segments: bool) -> dict:
    out = {"task": t.task, "language": t.language, "duration": t.duration, "text": t.text}
    if segments:
        out["segments"] = [_segment(s, t.diarized) for s in t.segments]
    if words and t.task == "transcribe":
        out["words"] = [_word(w, t.diarized) for w in t.words]
    if t.task == "transcribe":
        out["usage"] = usage(t)
    return out


def diarized_segment(s: dict) -> dict:
    return {
        "type": "transcript.text.segment",
        "id": f"seg_{s['id']}",
        "start": s["start"],
        "end": s["end"],
        "text": s["text"].strip(),
        "speaker": s.get("speaker") or "UNKNOWN",
    }


def diarized_json(t: Transcript) -> dict:
    return {
        "task": "transcribe",
        "duration": t.duration,
        "text": t.text,
        "segments": [diarized_segment(s) for s in t.segments],
        "usage": usage(t),
    }


def as_text(t: Transcript, response_format: str) -> str:
    cues = [
        SimpleNamespace(start=s["start"], end=s["end"], text=s["text"], speaker=s.get("speaker"))
        for s in t.segments
    ]
    if response_format == "srt":
        return writers.srt(cues)
    if response_format == "vtt":
        return writers.vtt(cues)
    return t.text + "\n"


def render(t: Transcript, request) -> tuple[dict | str, str]:
    """(body, media type) for the request's response_format."""
    fmt = request.response_format
    if fmt in TEXT_TYPES:
        return as_text(t, fmt), TEXT_TYPES[fmt]
    if fmt == "verbose_json":
        return verbose_json(t, request.words, request.segments), "application/json"
    if fmt == "diarized_json":
        return diarized_json(t), "application/json"
    return as_json(t, request.logprobs), "application/json"
