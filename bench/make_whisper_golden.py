"""Writes tests/data/golden/*.json: faster-whisper's segments on the test
weights, the reference the transcription tests compare against token for token.

    python3 bench/make_whisper_golden.py   (needs faster-whisper and the test weights)
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import faster_whisper  # noqa: E402

import saywho  # noqa: E402
from tests.long_recording import SHORT_MINUTES, assemble, with_noise_gap  # noqa: E402
from tests.weights import test_model_dir  # noqa: E402

DATA = REPO / "tests" / "data" / "shared"
CASES = [
    # name, model, audio, options
    ("jfk_tiny.en_greedy", "tiny.en", "jfk", {"beam_size": 1}),
    ("jfk_tiny.en_beam5", "tiny.en", "jfk", {"beam_size": 5}),
    ("jfk_base_greedy", "base", "jfk", {"beam_size": 1}),
    ("jfk_base_beam5", "base", "jfk", {"beam_size": 5}),
    (
        "jfk_base_translate_notimestamps",
        "base",
        "jfk",
        {"beam_size": 1, "task": "translate", "without_timestamps": True},
    ),
    ("long2min_tiny.en_greedy_t0", "tiny.en", "long2", {"beam_size": 1, "temperature": 0.0}),
    # int8: both engines quantize the same float16 weights per row at load
    ("jfk_tiny.en_greedy_int8", "tiny.en", "jfk", {"beam_size": 1, "compute_type": "int8"}),
    ("jfk_tiny.en_beam5_int8", "tiny.en", "jfk", {"beam_size": 5, "compute_type": "int8"}),
    ("jfk_base_greedy_int8", "base", "jfk", {"beam_size": 1, "compute_type": "int8"}),
    ("jfk_base_beam5_int8", "base", "jfk", {"beam_size": 5, "compute_type": "int8"}),
]
# Cases compared by word error rate, not token for token (tests/test_int8.py):
# on long audio the two engines' int8 roundings part ways after a while.
APPROX_CASES = [
    (
        "long2min_tiny.en_greedy_t0_int8",
        "tiny.en",
        "long2",
        {"beam_size": 1, "temperature": 0.0, "compute_type": "int8"},
    ),
]
# Word timestamps go to their own folder (tests/test_word_timestamps.py).
WORD_CASES = [
    ("jfk_tiny.en_beam5_words", "tiny.en", "jfk", {"beam_size": 5, "word_timestamps": True}),
    ("jfk_base_greedy_words", "base", "jfk", {"beam_size": 1, "word_timestamps": True}),
    (
        "long2min_tiny.en_greedy_t0_words",
        "tiny.en",
        "long2",
        {"beam_size": 1, "temperature": 0.0, "word_timestamps": True},
    ),
    (
        "long2gap_tiny.en_hallucination_guard",
        "tiny.en",
        "long2gap",
        {
            "beam_size": 1,
            "temperature": 0.0,
            "word_timestamps": True,
            "hallucination_silence_threshold": 1.0,
        },
    ),
]


def audio_for(kind: str):
    if kind == "jfk":
        return saywho.load_audio(DATA / "jfk.wav")
    if kind == "short":  # two_speakers, a pause, jfk: 42.4 s, two windows
        return assemble(DATA, SHORT_MINUTES)
    if kind == "long2gap":
        return with_noise_gap(assemble(DATA, 2.0))
    return assemble(DATA, 2.0)


# The rest of faster-whisper's options (tests/test_whisper_options.py), on
# "short" audio where a case needs a second window. Multilingual cases also
# record the language each window was decoded in ("languages").
OPTION_CASES = [
    ("jfk_tiny.en_prefix", "tiny.en", "jfk", {"beam_size": 5, "prefix": "And so, my dear"}),
    ("jfk_tiny.en_hotwords", "tiny.en", "jfk", {"beam_size": 5, "hotwords": "Kennedy"}),
    # the prefix goes to the first window only, the hotwords to the others
    (
        "short_tiny.en_prefix_hotwords",
        "tiny.en",
        "short",
        {"beam_size": 1, "temperature": 0.0, "prefix": "Well,", "hotwords": "Diane, Sheila"},
    ),
    (
        "short_tiny.en_clips",
        "tiny.en",
        "short",
        {"beam_size": 1, "temperature": 0.0, "clip_timestamps": [0.5, 33.0, 35.0]},
    ),
    (
        "short_tiny.en_vad_parameters",
        "tiny.en",
        "short",
        {
            "beam_size": 1,
            "temperature": 0.0,
            "vad_filter": True,
            "vad_parameters": {
                "threshold": 0.6,
                "min_silence_duration_ms": 300,
                "speech_pad_ms": 100,
            },
        },
    ),
    # told French, each window finds its own language (English)
    (
        "short_base_multilingual",
        "base",
        "short",
        {"beam_size": 1, "temperature": 0.0, "language": "fr", "multilingual": True},
    ),
    # no window is sure enough: the vote of two windows from the clip's start
    (
        "short_base_detection_vote",
        "base",
        "short",
        {
            "beam_size": 1,
            "temperature": 0.0,
            "clip_timestamps": [5.0],
            "language_detection_segments": 2,
            "language_detection_threshold": 1.0,
        },
    ),
    (
        "short_base_batched_multilingual_hotwords",
        "base",
        "short",
        {"batched": True, "language": "fr", "multilingual": True, "hotwords": "Diane"},
    ),
]

# faster-whisper's BatchedInferencePipeline (tests/test_batched.py).
BATCHED_CASES = [
    ("jfk_tiny.en_batched", "tiny.en", "jfk", {}),
    ("jfk_base_batched", "base", "jfk", {}),
    ("long2min_tiny.en_batched", "tiny.en", "long2", {}),
    ("long2min_tiny.en_batched_words", "tiny.en", "long2", {"word_timestamps": True}),
    (
        "long2min_base_batched_timestamps",
        "base",
        "long2",
        {"without_timestamps": False, "batch_size": 2},
    ),
]


def main() -> None:
    only = set(sys.argv[1:])  # case names to (re)write; none: all
    folders = (
        ("golden", CASES),
        ("golden_words", WORD_CASES),
        ("golden_approx", APPROX_CASES),
        ("golden_batched", BATCHED_CASES),
        ("golden_options", OPTION_CASES),
    )
    for folder, cases in folders:
        cases = [c for c in cases if not only or c[0] in only]
        write_cases(REPO / "tests" / "data" / folder, cases)


def write_cases(out_dir: Path, cases) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, model, kind, options in cases:
        options = dict(options)
        compute = options.pop("compute_type", "float32")
        fw = faster_whisper.WhisperModel(
            str(test_model_dir(model)), device="cpu", compute_type=compute, cpu_threads=2
        )
        batched_case = options.pop("batched", False)  # a BatchedInferencePipeline case
        batched = out_dir.name == "golden_batched" or batched_case
        # the language each sequential window was decoded in, when it may change
        windows = _window_languages(fw) if options.get("multilingual") and not batched else None
        if batched:
            fw = faster_whisper.BatchedInferencePipeline(fw)
        segments, info = fw.transcribe(audio_for(kind), **options)
        # segments come lazily: the latest window is the one that made each
        decoded = [(s, windows[-1] if windows else None) for s in segments]
        record = {
            "model": model,
            "compute_type": compute,
            "audio": kind,
            "options": {**options, **({"batched": True} if batched_case else {})},
            "peer": f"faster-whisper {faster_whisper.__version__}, compute_type {compute}"
            + (", BatchedInferencePipeline" if batched else ""),
            "language": info.language,
            "duration_after_vad": info.duration_after_vad,
            "language_probability": info.language_probability,
            **(
                {"all_language_probs": info.all_language_probs[:5]}
                if info.all_language_probs and out_dir.name == "golden_options"
                else {}
            ),
            "segments": [
                {
                    "start": s.start,
                    "end": s.end,
                    "text": s.text,
                    "tokens": list(s.tokens),
                    "avg_logprob": s.avg_logprob,
                    "no_speech_prob": s.no_speech_prob,
                    "temperature": s.temperature,
                    **(
                        {"words": [dataclasses.asdict(w) for w in s.words]}
                        if options.get("word_timestamps")
                        else {}
                    ),
                    **({"language": language} if language else {}),
                }
                for s, language in decoded
            ],
        }
        path = out_dir / f"{name}.json"
        if path.exists():
            # what faster-whisper gave on other CPUs (near ties) is kept
            previous = json.loads(path.read_text())
            if "other_cpus" in previous:
                record["other_cpus"] = previous["other_cpus"]
        path.write_text(json.dumps(record, indent=1) + "\n")
        print(name, len(record["segments"]), "segments")


def _window_languages(fw) -> list[str]:
    """A list that grows by the language of each window faster-whisper's
    sequential loop decodes: the loop sets its tokenizer's language (with
    multilingual, the window's own) before it asks for the window's prompt."""
    languages: list[str] = []
    get_prompt = fw.get_prompt

    def recording_get_prompt(tokenizer, *args, **kwargs):
        languages.append(tokenizer.language_code)
        return get_prompt(tokenizer, *args, **kwargs)

    fw.get_prompt = recording_get_prompt
    return languages


if __name__ == "__main__":
    main()
