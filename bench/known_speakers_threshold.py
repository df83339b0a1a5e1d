"""Where to put saywho.api.known_speakers' threshold: the cosine similarity of a
known voice's clip to the centroid of a found speaker, for the same voice
(genuine) and for other voices (impostors), on real assemblies of 9 voices
(bench/diarization_assembly.py's real_meeting, which needs
bench/fetch_voices.sh). No test scores these recordings.

Each reference voice gets clips cut from the assembly where it speaks alone
(as a user cuts a clip from the recording), 2 and 4 s long; each found
speaker is mapped to a reference voice by the DER's optimal mapping.

    python bench/known_speakers_threshold.py [--embedding campp|ge2e] [--voices DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import diarization_assembly  # noqa: E402
from machine import describe  # noqa: E402

import saywho  # noqa: E402
from saywho.eval.metrics import diarization_error_rate  # noqa: E402

SR = 16000


def alone(ref, speaker: str, length: float) -> list[tuple[float, float]]:
    """Stretches of ``length`` s where ``speaker`` talks and nobody else."""
    others = [t for t in ref if t.speaker != speaker]
    out = []
    for t in ref:
        if t.speaker != speaker:
            continue
        start = t.start
        while start + length <= t.end:
            end = start + length
            if not any(o.start < end and o.end > start for o in others):
                out.append((start, end))
                start = end
            else:
                start += 0.5
    return out


def unit(x):
    x = np.asarray(x, np.float64)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--embedding", default="campp")
    ap.add_argument("--voices", default=str(diarization_assembly.VOICES))
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    args = ap.parse_args()
    diarization_assembly.VOICES = Path(args.voices)
    print(describe())
    genuine, impostor = [], []
    with saywho.Pipeline(device="cpu", embedding=args.embedding, log_memory=False) as p:
        for seed in args.seeds:
            audio, ref = diarization_assembly.real_meeting(seed=seed, voices=9)
            d = p.diarize(audio)
            mapping = diarization_error_rate(ref, d.turns).mapping
            centroids = unit(d.embeddings)
            for voice in sorted({t.speaker for t in ref}):
                for length in (2.0, 4.0):
                    for start, end in alone(ref, voice, length)[:3]:
                        clip = audio[int(start * SR) : int(end * SR)]
                        sim = centroids @ unit(p.speaker_embedding(clip))
                        for label, s in zip(d.speakers, sim):
                            (genuine if mapping.get(label) == voice else impostor).append(s)
            print(f"seed {seed}: {len(d.speakers)} found, {len(genuine)} genuine so far")
    g, i = np.array(genuine), np.array(impostor)
    print(f"{args.embedding}: genuine {len(g)}, impostor {len(i)}")
    for name, x in (("genuine", g), ("impostor", i)):
        q = np.percentile(x, [0, 1, 5, 50, 95, 99, 100])
        print(f"  {name:9s} min/1/5/50/95/99/max %: " + " ".join(f"{v:.3f}" for v in q))
    for t in np.arange(0.2, 0.9, 0.05):
        print(
            f"  threshold {t:.2f}: misses {np.mean(g < t):.3f}, false names {np.mean(i >= t):.3f}"
        )


if __name__ == "__main__":
    main()
