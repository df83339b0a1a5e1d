"""Random sampling on the device (issue 37): the temperature fallback's
draws run inside the decoder step's graph (backend.h search_step with a
temperature, cuda/search_draw.h) from the uniforms the host's generator
gives, the same numbers the CPU's sampler takes, so the emulated GPU decodes
the CPU's tokens at every temperature, and a sampled step costs what a greedy
one does: one graph launch, no launch, one wait, a few bytes down (before,
each step brought every row's 51,864 logits down to the host: 415 kB for
best_of 2).
"""

from __future__ import annotations

import numpy as np
import pytest

from saywho._internal.device import open_runtime
from saywho.whisper.generate import GenerateOptions, generate_windows, transcribe_window
from saywho.whisper.options import TranscribeOptions
from saywho.whisper.segments import N_FRAMES, pad_window
from saywho.whisper.transcribe import WhisperModel

from .weights import test_model_dir

# Few tokens a decode (16 new tokens: 8 steps, CT2's max_length halving):
# an emulated step of tiny.en is the cost (the window's encoding, ~14 CPU-s,
# is made once per device and shared). At 1.0 with seed 4 both sampled
# candidates leave the greedy transcript ("And so, my fellow Americans ..."),
# so the draw is seen to move.
MAX_NEW_TOKENS = 16
BEST_OF = 2
SEED = 4
SAMPLED_AT = 1.0
BYTES_DOWN = 4096

_RUNS: dict[str, dict] = {}


def _run(device: str, recordings) -> dict:
    """tiny.en on jfk's first window: the fallback forced (no attempt can
    reach an average log-probability of 0) through 0.0, 0.5 and 1.0, and
    one sampled generation alone with the counters of its steps."""
    if device in _RUNS:
        return _RUNS[device]
    runtime = open_runtime(device)
    try:
        with WhisperModel(str(test_model_dir("tiny.en")), runtime=runtime) as model:
            window = pad_window(model.log_mel(recordings["jfk"])[:, :N_FRAMES])
            encoded = model.encode(window)
            options = model.decoding_options(
                TranscribeOptions(
                    beam_size=1,
                    best_of=BEST_OF,
                    temperature=(0.0, 0.5, 1.0),
                    log_prob_threshold=0.0,
                    compression_ratio_threshold=None,
                    max_new_tokens=MAX_NEW_TOKENS,
                    seed=SEED,
                )
            )
            prompt = model.prompt_tokens([], "en", "transcribe", False, None)
            special = model.special
            suppress = {
                "suppress_ids": model.config.get("suppress_ids", ()),
                "suppress_ids_begin": model.config.get("suppress_ids_begin", ()),
            }
            fallback = transcribe_window(
                model,
                None,
                prompt,
                special,
                options,
                decode_text=model.tokenizer.decode,
                encoder_output=encoded,
                **suppress,
            )
            runtime.counters(reset=True)
            sampled = generate_windows(
                model,
                encoded,
                [prompt],
                special,
                GenerateOptions.from_options(
                    options,
                    beam_size=1,
                    num_hypotheses=BEST_OF,
                    sampling_topk=0,
                    sampling_temperature=SAMPLED_AT,
                    max_length=len(prompt) + MAX_NEW_TOKENS,
                ),
                rng=np.random.default_rng(SEED),
                **suppress,
            )[0]
            counted = runtime.counters()
    finally:
        runtime.close()
    _RUNS[device] = {
        "attempts": [(a.temperature, a.tokens, a.avg_logprob) for a in fallback.attempts],
        "chosen": (fallback.temperature, fallback.tokens),
        "sampled": (sampled.sequences_ids, sampled.scores),
        "steps": sampled.steps,
        "counted": counted,
    }
    return _RUNS[device]


def test_the_fallback_samples_the_cpus_tokens_on_the_emulator(recordings):
    gpu = _run("cuda-emulated", recordings)
    cpu = _run("cpu", recordings)
    assert [t for t, *_ in cpu["attempts"]] == [0.0, 0.5, 1.0]  # the fallback ran
    assert [(t, tokens) for t, tokens, _ in gpu["attempts"]] == [
        (t, tokens) for t, tokens, _ in cpu["attempts"]
    ]
    for (_, _, got), (_, _, want) in zip(gpu["attempts"], cpu["attempts"]):
        assert got == pytest.approx(want, abs=1e-4)
    assert gpu["chosen"] == cpu["chosen"]
    # both candidates of the sampled generation, and their scores
    assert gpu["sampled"][0] == cpu["sampled"][0]
    assert gpu["sampled"][1] == pytest.approx(cpu["sampled"][1], abs=1e-4)
    # the draws left the greedy pick: sampling happened
    greedy = cpu["attempts"][0][1]
    assert all(h != greedy[: len(h)] for h in cpu["sampled"][0])


def test_a_sampled_step_is_one_graph_launch_on_the_emulator(recordings):
    gpu = _run("cuda-emulated", recordings)
    steps, counted = gpu["steps"], gpu["counted"]
    assert steps > 1
    # the draw inside the step's graph: nothing launched beside it, one
    # wait for its results, and no row of logits comes down
    assert counted["launches"] == 0, counted
    assert counted["graph_launches"] == steps, counted
    assert counted["host_syncs"] == steps, counted
    assert counted["bytes_down"] / steps <= BYTES_DOWN, counted
