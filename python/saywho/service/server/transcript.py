"""What a run gives, in one shape for every response format.

Transcription alone keeps each Whisper segment's own fields (seek, tokens,
temperature, avg_logprob, compression_ratio, no_speech_prob), as OpenAI's
verbose_json has them; with speakers, segments are split where the speaker
changes (saywho's alignment), so those per-decode fields belong to no single
segment and are left out, and every segment and word carries ``speaker``.
Diarization's labels become ``A``, ``B``, ... in order of first speech;
names of known speakers are kept.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field

WHISPER_FIELDS = ("seek", "tokens", "temperature", "avg_logprob", "compression_ratio")
ANONYMOUS = re.compile(r"^SPEAKER_\d+$")


def _seconds(value) -> float:
    """Times to the millisecond: Whisper's steps are 20 ms, and float noise
    (7.419999999999995) has no place in an answer."""
    return round(float(value), 3)


def _letters(n: int) -> str:
    """0 -> A, 25 -> Z, 26 -> AA: OpenAI's speaker labels."""
    out = ""
    n += 1
    while n:
        n, r = divmod(n - 1, 26)
        out = string.ascii_uppercase[r] + out
    return out


@dataclass
class Transcript:
    task: str
    language: str | None
    duration: float
    segments: list[dict] = field(default_factory=list)
    diarized: bool = False

    @property
    def text(self) -> str:
        return " ".join(s["text"].strip() for s in self.segments if s["text"].strip())

    @property
    def words(self) -> list[dict]:
        return [w for s in self.segments for w in s.get("words", ())]

    @classmethod
    def from_whisper(cls, task: str, segments, info) -> Transcript:
        out = []
        # OpenAI numbers segments from 0 (faster-whisper's ids start at 1)
        for i, s in enumerate(segments):
            seg = {
                "id": i,
                "seek": s.seek,
                "start": _seconds(s.start),
                "end": _seconds(s.end),
                "text": s.text,
                "tokens": list(s.tokens),
                "temperature": float(s.temperature),
                "avg_logprob": float(s.avg_logprob),
                "compression_ratio": float(s.compression_ratio),
                "no_speech_prob": float(s.no_speech_prob),
            }
            if s.words:
                seg["words"] = [
                    {
                        "word": w.word,
                        "start": _seconds(w.start),
                        "end": _seconds(w.end),
                        "probability": float(w.probability),
                    }
                    for w in s.words
                ]
            out.append(seg)
        return cls(task, info.language, float(info.duration), out)

    @classmethod
    def from_result(cls, task: str, result) -> Transcript:
        names: dict[str, str] = {}

        def label(speaker: str | None) -> str | None:
            if speaker is None or not ANONYMOUS.match(speaker):
                return speaker
            if speaker not in names:
                names[speaker] = _letters(len(names))
            return names[speaker]

        out = []
        for i, s in enumerate(result.segments):
            seg = {
                "id": i,
                "start": _seconds(s.start),
                "end": _seconds(s.end),
                "text": s.text,
                "speaker": label(s.speaker),
                "words": [
                    {
                        "word": w.word,
                        "start": _seconds(w.start),
                        "end": _seconds(w.end),
                        "probability": float(w.probability),
                        "speaker": label(w.speaker),
                    }
                    for w in s.words
                ],
            }
            out.append(seg)
        return cls(task, result.language, float(result.duration), out, diarized=True)

    def to_record(self) -> dict:
        return dict(self.__dict__)

    @classmethod
    def from_record(cls, record: dict) -> Transcript:
        return cls(**record)
