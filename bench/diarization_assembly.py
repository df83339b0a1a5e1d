"""Multi-speaker recordings with overlaps and exact references, for tuning
and measuring diarization (never scored by the tests).

- ``espeak_meeting``: utterances of synthetic voices (espeak-ng, `apt-get
  install espeak-ng`) and Kennedy's real speech (jfk.wav), one after
  another with short gaps or overlapping the previous one by 0.4 to 1.5 s.
  The reference is each utterance's speech (by level) where it was placed.
  Reported, not tuned on: its voices are one formant synthesiser.
- ``real_meeting``: tests/data/shared's real voices (the two-speaker
  conversation with its RTTM, Kennedy, the stereo pair's two channels mixed
  down) placed with overlaps: five real voices; with ``voices`` 6 to 9, the
  real voices bench/fetch_voices.sh takes from PyPI sdists join them (a
  LibriVox reader, two men from pocketsphinx's tests, CMU ARCTIC's awb).
"""

from __future__ import annotations

import subprocess
import tempfile
import wave
from pathlib import Path

import numpy as np

from saywho.audio.decode import load_audio
from saywho.formats.rttm import Turn, read_rttm

SR = 16000
DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "shared"
# bench/fetch_voices.sh puts them here
VOICES = Path(__file__).resolve().parents[1] / ".cache" / "bench-audio" / "voices"

# (espeak-ng voice, pitch 0-99, words per minute): clearly different voices
ESPEAK_VOICES = (
    ("en-us+m3", 35, 160),
    ("en-gb+f2", 70, 150),
    ("en-gb-scotland+m1", 25, 170),
    ("en-us+f4", 85, 145),
    ("en-029+m7", 50, 175),
)

SENTENCES = (
    "We looked at the numbers again this morning and they still do not add up.",
    "I think the second option is cheaper, but it will take much longer to build.",
    "Could you send me the report before the meeting on Thursday afternoon?",
    "The weather was terrible on the way here, the train stopped twice.",
    "Let us start with the budget and then move on to the hiring plan.",
    "Honestly, I would rather wait until we hear back from the customer.",
    "That sounds fine to me, as long as someone writes it down.",
    "My team finished the first prototype last week and it works well.",
    "We should ask the lawyers before we sign anything new.",
    "The last time we tried this, it took three months and nobody was happy.",
    "Can everyone hear me? I am calling from the car today.",
    "I agree with the plan, but the deadline worries me a little.",
)


def level_turns(x: np.ndarray, name: str, offset: float = 0.0, frame: int = 320) -> list[Turn]:
    """Where ``x`` speaks: 20 ms frames within 30 dB of its loudest, gaps
    under 0.3 s closed, islands under 0.1 s dropped (shifted by ``offset`` s)."""
    f = x[: len(x) // frame * frame].reshape(-1, frame)
    level = 10 * np.log10(np.mean(f.astype(np.float64) ** 2, axis=1) + 1e-12)
    on = np.concatenate([[0], (level >= level.max() - 30).astype(np.int8), [0]])
    edges = np.flatnonzero(np.diff(on)).reshape(-1, 2) * frame / SR
    runs: list[list[float]] = []
    for a, b in edges:
        if runs and a - runs[-1][1] < 0.3:
            runs[-1][1] = b
        else:
            runs.append([a, b])
    return [Turn(offset + a, offset + b, name) for a, b in runs if b - a >= 0.1]


def synth(voice: str, pitch: int, speed: int, text: str) -> np.ndarray:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "u.wav"
        cmd = ["espeak-ng", "-v", voice, "-p", str(pitch), "-s", str(speed), "-w", str(path), text]
        subprocess.run(cmd, check=True, capture_output=True)
        return load_audio(path)


class Mixer:
    """Places clips one after another, sometimes overlapping the last one."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.pieces: list[tuple[int, np.ndarray]] = []
        self.turns: list[Turn] = []
        self.end = 0

    def add(self, x: np.ndarray, turns_at_zero: list[Turn], overlap_p: float = 0.35) -> None:
        if self.pieces and self.rng.random() < overlap_p:
            start = max(0, self.end - int(self.rng.uniform(0.4, 1.5) * SR))
        else:
            start = self.end + int(self.rng.uniform(0.2, 1.0) * SR)
        self.pieces.append((start, x))
        off = start / SR
        self.turns += [Turn(t.start + off, t.end + off, t.speaker) for t in turns_at_zero]
        self.end = max(self.end, start + len(x))

    def mix(self) -> np.ndarray:
        out = np.zeros(self.end + SR // 2, np.float32)
        for start, x in self.pieces:
            out[start : start + len(x)] += x
        return out


def _norm(x: np.ndarray, rms: float = 0.05) -> np.ndarray:
    return (x * (rms / max(float(np.sqrt(np.mean(x**2))), 1e-6))).astype(np.float32)


def espeak_meeting(seed: int = 0, utterances: int = 40) -> tuple[np.ndarray, list[Turn]]:
    """Five synthetic voices and Kennedy, ``utterances`` turns in all."""
    rng = np.random.default_rng(seed)
    jfk = _norm(load_audio(DATA / "jfk.wav"))
    jfk_parts = [(0.0, 3.9), (3.9, 7.6), (7.6, 11.0)]
    m = Mixer(seed)
    last = -1
    for i in range(utterances):
        who = int(rng.integers(0, len(ESPEAK_VOICES) + 1))
        if who == last:
            who = (who + 1) % (len(ESPEAK_VOICES) + 1)
        last = who
        if who == len(ESPEAK_VOICES):
            a, b = jfk_parts[i % len(jfk_parts)]
            x = jfk[int(a * SR) : int(b * SR)]
            name = "kennedy"
        else:
            voice, pitch, speed = ESPEAK_VOICES[who]
            x = _norm(synth(voice, pitch, speed, SENTENCES[int(rng.integers(len(SENTENCES)))]))
            name = f"espeak{who}"
        m.add(x, level_turns(x, name))
    return m.mix(), m.turns


def _stereo_channels() -> tuple[np.ndarray, np.ndarray]:
    with wave.open(str(DATA / "stereo_two_speakers.wav")) as w:
        raw = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").reshape(-1, 2)
    x = raw.astype(np.float32) / 32768.0
    return x[:, 0], x[:, 1]


def _joined(paths: list[Path], gap: float = 0.3) -> np.ndarray:
    """One voice's recordings end to end, ``gap`` s of silence between."""
    pause = np.zeros(int(gap * SR), np.float32)
    parts = []
    for path in paths:
        if not path.is_file():
            raise SystemExit(f"{path} is missing: run bash bench/fetch_voices.sh")
        if path.suffix == ".raw":  # pocketsphinx's raw files: 16 kHz s16le mono
            x = np.frombuffer(path.read_bytes(), "<i2").astype(np.float32) / 32768.0
        else:
            x = load_audio(path)
        parts += [x, pause]
    return np.concatenate(parts[:-1])


def fetched_voices() -> list[tuple[str, list[np.ndarray]]]:
    """The voices bench/fetch_voices.sh brings, in the order real_meeting adds
    them: (name, the clips placed each round)."""
    ps = VOICES / "pocketsphinx"
    book = [
        ps / f"sense_and_sensibility_01_austen_64kb-0{k}.wav" for k in (870, 880, 890, 920, 930)
    ]
    return [
        ("librivox", [_joined(book[:2]), _joined(book[2:])]),
        ("cards", [_joined([ps / f"00{k}.wav" for k in range(1, 6)])]),
        ("commands", [_joined([ps / f"{n}.raw" for n in ("goforward", "numbers", "something")])]),
        ("awb", [_joined([VOICES / "pysptk" / "arctic_a0007.wav"])]),
    ]


def real_meeting(seed: int = 1, rounds: int = 3, voices: int = 5) -> tuple[np.ndarray, list[Turn]]:
    """Real voices: two_speakers.wav in 10 s pieces (its RTTM), Kennedy, and
    the stereo pair mixed down (each channel's level as reference); with
    ``voices`` above 5, the first voices - 5 of fetched_voices() (each
    clip's level as reference)."""
    if not 5 <= voices <= 9:
        raise SystemExit(f"real_meeting has 5 to 9 voices, not {voices}")
    two = load_audio(DATA / "two_speakers.wav")
    (ref,) = read_rttm(DATA / "two_speakers.rttm").values()
    jfk = load_audio(DATA / "jfk.wav")
    left, right = _stereo_channels()
    stereo_turns = level_turns(left, "stereo_left") + level_turns(right, "stereo_right")
    clips = []
    for a in (0.0, 10.0, 20.0):
        piece = two[int(a * SR) : int((a + 10) * SR)]
        turns = [
            Turn(max(t.start, a) - a, min(t.end, a + 10) - a, t.speaker)
            for t in ref
            if t.end > a and t.start < a + 10
        ]
        clips.append((piece, turns))
    clips.append((jfk, level_turns(jfk, "kennedy")))
    clips.append(((left + right).astype(np.float32), stereo_turns))
    if voices > 5:
        for name, pieces in fetched_voices()[: voices - 5]:
            clips += [(x, level_turns(x, name)) for x in pieces]
    rng = np.random.default_rng(seed)
    m = Mixer(seed)
    for _ in range(rounds):
        for k in rng.permutation(len(clips)):
            m.add(*clips[k], overlap_p=0.5)
    return m.mix(), m.turns
