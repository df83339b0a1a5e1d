"""Whisper decoding rules and searches against a deterministic fake network.

The search runs in the core (csrc/whisper/whisper_generate.h); here it is
driven through ``_core.whisper_generate`` against a NumPy fake whose logits
are a pure function of each sequence's token history (a fixed random table
row picked by a hash of the history, plus a position row and a bias from the
"encoder output"), so searches can be replayed and enumerated by brute
force. Single rules are checked through ``_core.whisper_logits_rules``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib
import itertools
import shutil
import subprocess

import numpy as np
import pytest

from saywho import _core

# by module path: the package's ``generate`` attribute is the function
gen = importlib.import_module("saywho.whisper.generate")

# A Whisper-shaped vocabulary: text, eot, sot, 2 languages, translate,
# transcribe, sot_lm, sot_prev, no_speech, no_timestamps, 100 timestamps.
N_TEXT = 200
EOT, SOT, EN, DE, TRANSLATE, TRANSCRIBE, SOT_LM, SOT_PREV, NO_SPEECH, NO_TS = range(200, 210)
TS0 = 210
VOCAB = TS0 + 100
SPECIAL = gen.WhisperSpecialTokens(
    eot=EOT, sot=SOT, no_timestamps=NO_TS, no_speech=NO_SPEECH, vocab_size=VOCAB
)
F32 = np.float32

# The C library's powf, which the core's length penalty calls (as
# CTranslate2's std::pow on floats does). NumPy's float32 power is its own
# SIMD code on AVX-512 CPUs and can differ from it by an ulp (14 ** 0.6:
# 4.8716583 against 4.8716588), which made a reference built on it hold
# only on CPUs without AVX-512.
_libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
_libm.powf.restype = ctypes.c_float
_libm.powf.argtypes = [ctypes.c_float, ctypes.c_float]


def powf(x: float, y: float) -> np.float32:
    return F32(_libm.powf(float(x), float(y)))


LOWEST = np.finfo(F32).min


def log_softmax(x):
    return _core.log_softmax_rows(np.asarray(x, F32))


def softmax(x):
    """float32 softmax: exp(x - max) times the reciprocal of the sum."""
    x = np.asarray(x, F32)
    e = np.exp((x - x.max(axis=-1, keepdims=True)).astype(F32))
    return e * (F32(1) / e.sum(axis=-1, keepdims=True, dtype=np.float64).astype(F32))


class FakeState:
    def __init__(self, model, encoder_output, n):
        self.model = model
        self.bias = encoder_output
        self.hist = [[] for _ in range(n)]
        self.calls = []

    def decode(self, tokens):
        tokens = np.asarray(tokens)
        assert tokens.dtype == np.int32 and tokens.shape[0] == len(self.hist)
        self.calls.append(tokens.shape[1])
        for row, new in zip(self.hist, tokens.tolist()):
            row.extend(new)
        return np.stack([self.model.logits_for(h, self.bias) for h in self.hist])

    def reorder(self, indices):
        indices = np.asarray(indices)
        assert indices.dtype == np.int32 and indices.shape == (len(self.hist),)
        self.hist = [list(self.hist[i]) for i in indices.tolist()]


class FakeModel:
    def __init__(self, vocab=VOCAB, seed=0, eot_drift=0.25, scale=2.0):
        rng = np.random.default_rng(seed)
        self.vocab = vocab
        self.table = (rng.standard_normal((509, vocab)) * scale).astype(F32)
        self.pos = (rng.standard_normal((448, vocab)) * 0.5).astype(F32)
        self.eot_drift = eot_drift
        self.states = []

    def logits_for(self, history, bias):
        acc = 7
        for t in history:
            acc = (acc * 1000003 + int(t) + 1) % 2147483647
        out = self.table[acc % self.table.shape[0]] + self.pos[len(history) % 448] + bias
        out = out.astype(F32)
        if EOT < self.vocab:
            out[EOT] += F32(self.eot_drift * len(history))
        return out

    def encode(self, mel):
        return (np.resize(np.asarray(mel, F32).mean(axis=0), self.vocab) * 0.1).astype(F32)

    def new_state(self, encoder_output, n_sequences):
        st = FakeState(self, encoder_output, n_sequences)
        self.states.append(st)
        return st


def zero_bias(vocab=VOCAB):
    return np.zeros(vocab, F32)


# --- numerics ------------------------------------------------------------------------


def test_log_softmax_is_a_constant_shift_close_to_float64():
    x = np.random.default_rng(1).standard_normal((3, 500)).astype(F32) * 5
    y = log_softmax(x)
    assert y.dtype == F32
    ref = x.astype(np.float64) - np.log(np.exp(x.astype(np.float64)).sum(-1, keepdims=True))
    assert np.max(np.abs(y - ref)) < 1e-5
    # one float32 constant added per row: the order never changes
    for r in range(3):
        assert np.all(np.diff(y[r][np.argsort(x[r], kind="stable")]) >= 0)


def test_disabled_value_is_lowest_float_not_inf():
    x = _core.whisper_logits_rules(np.zeros((1, 10), F32), 0, suppress=[3])
    assert x[0, 3] == LOWEST
    y = log_softmax(x)
    assert np.isfinite(y[0, 3]) and y[0, 3] < -1e38


def _partial_sort_binary(tmp_path):
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler to compare std::partial_sort with")
    src = tmp_path / "ps.cc"
    src.write_text(
        "#include <algorithm>\n#include <cstdio>\n#include <numeric>\n#include <vector>\n"
        'int main(){int n,k;while(std::scanf("%d %d",&n,&k)==2){std::vector<float> v(n);'
        'for(auto&x:v)std::scanf("%f",&x);std::vector<int> id(n);'
        "std::iota(id.begin(),id.end(),0);std::partial_sort(id.begin(),id.begin()+k,id.end(),"
        '[&](int a,int b){return v[a]>v[b];});for(int j=0;j<k;++j)std::printf("%d ",id[j]);'
        'std::printf("\\n");}}\n'
    )
    exe = tmp_path / "ps"
    subprocess.run([cxx, "-O2", "-o", str(exe), str(src)], check=True)
    return exe


def test_topk_matches_libstdcxx_partial_sort_with_ties(tmp_path):
    exe = _partial_sort_binary(tmp_path)
    rng = np.random.default_rng(3)
    cases = []
    for _ in range(60):
        n = int(rng.integers(2, 3000))
        k = int(rng.integers(2, min(n, 20) + 1))
        # few distinct values: ties everywhere, inside and at the edge of the top k
        vals = rng.integers(0, int(rng.integers(2, 12)), n).astype(F32) - 5
        cases.append((vals, k))
    text = "".join(f"{len(v)} {k}\n" + " ".join(f"{x:g}" for x in v) + "\n" for v, k in cases)
    out = subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True)
    for (vals, k), line in zip(cases, out.stdout.splitlines()):
        ids = _core.whisper_topk(vals, k)
        assert ids.tolist() == [int(t) for t in line.split()]


def test_topk_one_is_first_maximum():
    ids = _core.whisper_topk(np.array([1, 3, 3, 2], F32), 1)
    assert ids.tolist() == [1]


# --- processors ----------------------------------------------------------------------


def run_rules(rules, step, logits, seq=None, sample_begin=0):
    seq = None if seq is None else np.asarray(seq, np.int32)
    logits = np.array(logits, F32, copy=True)
    return _core.whisper_logits_rules(logits, step, seq, sample_begin=sample_begin, **rules)


def allowed(row):
    return set(np.nonzero(row > LOWEST)[0].tolist())


def ts_rules(max_initial_index=50):
    return {"timestamps": (EOT, NO_TS, TS0 + max_initial_index)}


def test_suppress_tokens_and_begin():
    logits = np.zeros((2, VOCAB), F32)
    rules = {"suppress": [5, 7], "suppress_begin": [220 - 20, EOT]}
    out = run_rules(rules, 0, logits)
    assert allowed(out[0]) == set(range(VOCAB)) - {5, 7, 200}
    out = run_rules(rules, 1, logits, seq=[[1], [2]])
    assert allowed(out[1]) == set(range(VOCAB)) - {5, 7}
    # with a prefix of 2 forced tokens, the begin rule fires at step 2
    out = run_rules(rules, 2, logits, seq=[[1, 2], [1, 2]], sample_begin=2)
    assert EOT not in allowed(out[0])
    out = run_rules(rules, 0, logits, sample_begin=2)
    assert EOT in allowed(out[0])


class FavouriteModel:
    """The fake, with a few tokens made overwhelmingly likely."""

    def __init__(self, favourites, seed=0):
        self.fake = FakeModel(seed=seed)
        self.favourites = list(favourites)

    def new_state(self, encoder_output, n_sequences):
        bias = np.array(encoder_output, F32, copy=True)
        bias[self.favourites] += 50
        return self.fake.new_state(bias, n_sequences)


def test_suppress_minus_one_takes_config_ids_and_blank_uses_begin_ids():
    prompt = [SOT, EN, TRANSCRIBE, NO_TS]

    def tokens(suppress_tokens, suppress_blank=True, favourites=(11, 12, 3, 13)):
        opts = gen.GenerateOptions(
            beam_size=1,
            return_scores=True,
            suppress_tokens=suppress_tokens,
            suppress_blank=suppress_blank,
            max_length=20,
        )
        res = gen.generate(
            FavouriteModel(favourites), zero_bias(), prompt, SPECIAL, opts,
            suppress_ids=[11, 12], suppress_ids_begin=[13, EOT],
        )  # fmt: skip
        return res.sequences_ids[0]

    # unsuppressed, the favourites are all the model says; -1 stands for the
    # config's suppress_ids, 3 is suppressed as given, 13 only at the first step
    assert set(tokens(())) <= {11, 12, 3, 13}
    got = tokens((-1, 3))
    assert got and got[0] not in (11, 12, 3, 13) and set(got) & {11, 12, 3} == set()
    assert 13 in got
    # without suppress_blank, 13 may come first; -2 and other negatives are ignored
    assert tokens((-1, 3, -2), suppress_blank=False)[0] == 13


def test_processor_order_matches_ct2():
    # repetition penalty before suppression: a suppressed, repeated token keeps
    # the lowest float (penalised after, it would overflow to -inf)
    logits = np.zeros((1, VOCAB), F32)
    out = run_rules({"repetition_penalty": 2.0, "suppress": [4]}, 2, logits, seq=[[4, 4]])
    assert out[0, 4] == LOWEST
    # suppression before the timestamp rule: the rule's log-softmax sees the
    # best text token gone, and the timestamps' sum wins over what is left
    logits = np.zeros((1, VOCAB), F32)
    logits[0, 3] = 6.0
    logits[0, TS0 + 10 : TS0 + 60] = 0.5
    out = run_rules({"suppress": [3], **ts_rules()}, 2, logits, seq=[[TS0, 4]])
    assert allowed(out[0]) == set(range(TS0 + 1, VOCAB))
    # no-repeat n-gram before suppression and both before the timestamps
    out = run_rules(
        {"no_repeat_ngram_size": 1, "suppress": [5], "suppress_begin": [6], **ts_rules()},
        0,
        np.zeros((1, VOCAB), F32),
    )
    assert allowed(out[0]) == set(range(TS0, TS0 + 51))


def test_timestamp_rules_first_step():
    out = run_rules(ts_rules(10), 0, np.zeros((1, VOCAB), F32))
    assert allowed(out[0]) == set(range(TS0, TS0 + 11))


def text_heavy():
    # text and specials outweigh the timestamps' summed probability
    logits = np.zeros((1, VOCAB), F32)
    logits[0, :TS0] = 5
    return logits


def test_timestamp_rules_after_two_timestamps_forbid_timestamps():
    out = run_rules(ts_rules(), 3, text_heavy(), seq=[[TS0, 5, TS0 + 4]])
    # last two are text + timestamp: "cannot be normal text" branch instead
    assert allowed(out[0]) >= {EOT} | set(range(TS0 + 4, VOCAB))
    out = run_rules(ts_rules(), 3, text_heavy(), seq=[[5, TS0 + 3, TS0 + 4]])
    got = allowed(out[0])
    assert not (got & set(range(TS0, VOCAB))) and NO_TS not in got and 5 in got


def test_timestamp_rules_first_sampled_timestamp_counts_as_a_pair():
    # step 1: the only sampled token is a timestamp, its "penultimate" is itself
    out = run_rules(ts_rules(), 1, np.zeros((1, VOCAB), F32), seq=[[TS0 + 2]])
    assert not (allowed(out[0]) & set(range(TS0, VOCAB)))


def test_timestamp_rules_lone_timestamp_forbids_text_and_earlier_timestamps():
    out = run_rules(ts_rules(), 2, text_heavy(), seq=[[7, TS0 + 5]])
    got = allowed(out[0])
    assert got == set(range(EOT, NO_TS)) | set(range(TS0 + 5, VOCAB))


def test_timestamp_rules_monotonic_after_text():
    logits = np.zeros((1, VOCAB), F32)
    logits[0, :N_TEXT] = 5  # text dominates: no forcing of timestamps
    out = run_rules(ts_rules(), 4, logits, seq=[[TS0 + 1, 3, TS0 + 6, 9]])
    got = allowed(out[0])
    assert set(range(TS0, TS0 + 7)).isdisjoint(got) and TS0 + 7 in got and 9 in got


def test_timestamp_rules_force_timestamp_when_their_sum_wins():
    logits = np.zeros((1, VOCAB), F32)
    logits[0, 3] = 3.0  # best single token is text ...
    logits[0, TS0 + 10 : TS0 + 60] = 0.5  # ... but 50 timestamps together beat it
    out = run_rules(ts_rules(), 2, logits, seq=[[TS0, 4]])
    assert allowed(out[0]) == set(range(TS0 + 1, VOCAB))
    logits[0, 3] = 6.0  # now it does not
    out = run_rules(ts_rules(), 2, logits, seq=[[TS0, 4]])
    assert 3 in allowed(out[0])


def test_timestamp_rules_with_prefix_start_nothing_special():
    # with a prefix, the first sampled step only loses <|notimestamps|>
    out = run_rules(ts_rules(), 2, np.zeros((1, VOCAB), F32), seq=[[TS0, 5]], sample_begin=2)
    assert allowed(out[0]) == set(range(VOCAB)) - {NO_TS}


def test_repetition_penalty():
    logits = np.array([[2.0, -2.0, 1.0, 0.5]], F32)
    out = run_rules({"repetition_penalty": 2.0}, 3, logits, seq=[[0, 1, 0]])
    assert out.tolist() == [[1.0, -4.0, 1.0, 0.5]]


def test_no_repeat_ngram():
    logits = np.zeros((1, 10), F32)
    seq = [[1, 2, 3, 1, 2, 4, 1, 2]]
    out = run_rules({"no_repeat_ngram_size": 3}, 8, logits, seq=seq)
    assert set(range(10)) - allowed(out[0]) == {3, 4}
    out = run_rules({"no_repeat_ngram_size": 1}, 8, logits, seq=seq)
    assert set(range(10)) - allowed(out[0]) == {1, 2, 3, 4}
    out = run_rules({"no_repeat_ngram_size": 9}, 8, logits, seq=seq)
    assert allowed(out[0]) == set(range(10))


# --- greedy --------------------------------------------------------------------------

# generate's rules for these prompts: the first sampled step bans the end token
# (suppress_blank with the config's begin list [EOT]), and the timestamp rules
GREEDY_RULES = {"suppress_begin": [EOT], **ts_rules()}


def _greedy(model, prompt, **kw):
    opts = gen.GenerateOptions(beam_size=1, return_scores=True, return_no_speech_prob=True, **kw)
    return gen.generate(model, zero_bias(), prompt, SPECIAL, opts, suppress_ids_begin=[EOT])


def test_greedy_picks_argmax_after_rules_and_scores_in_float32():
    model = FakeModel(seed=4)
    prompt = [SOT, EN, TRANSCRIBE]
    res = _greedy(model, prompt)
    tokens = res.sequences_ids[0]
    # replay: every choice is the first maximum of the processed log-probs
    hist = list(prompt)
    total = F32(0)
    for step, tok in enumerate([*tokens, EOT]):
        logits = model.logits_for(hist, zero_bias())[None].copy()
        seq = np.asarray([tokens[:step]], np.int32) if step else None
        lp = log_softmax(run_rules(GREEDY_RULES, step, logits, seq, 0))[0]
        assert int(np.argmax(lp)) == tok
        total = F32(total + lp[tok])
        hist.append(tok)
    assert tokens[0] >= TS0 and EOT not in tokens
    # length_penalty 1: CT2 returns the sum over the token count (end token excluded)
    assert res.scores[0] == float(F32(total / F32(len(tokens))))


def test_no_speech_prob_at_sot_position():
    model = FakeModel(seed=5)
    expect = float(softmax(model.logits_for([SOT], zero_bias())[None])[0, NO_SPEECH])
    # sot followed by task tokens: computed while the prompt is fed
    res = _greedy(model, [SOT, EN, TRANSCRIBE])
    assert res.no_speech_prob == pytest.approx(expect, rel=1e-6)
    assert model.states[-1].calls[:3] == [1, 1, 1]  # [sot], [en], then the start token
    # sot is the start token: taken at the first decoding step
    res = _greedy(model, [SOT])
    assert res.no_speech_prob == pytest.approx(expect, rel=1e-6)
    # previous text before sot
    prev = [SOT_PREV, 17, 18]
    expect = float(softmax(model.logits_for([*prev, SOT], zero_bias())[None])[0, NO_SPEECH])
    res = _greedy(model, [*prev, SOT, EN, TRANSCRIBE, NO_TS])
    assert res.no_speech_prob == pytest.approx(expect, rel=1e-6)
    assert model.states[-1].calls[:2] == [4, 2]


def test_prefix_is_forced_returned_and_free():
    model = FakeModel(seed=6)
    prefix = [TS0, 40, 41]
    res = _greedy(model, [SOT, EN, TRANSCRIBE, *prefix])
    tokens = res.sequences_ids[0]
    assert tokens[:3] == prefix
    # the forced steps add 0 to the score
    hist = [SOT, EN, TRANSCRIBE, *prefix]
    total = F32(0)
    for step in range(3, len(tokens) + 1):
        tok = tokens[step] if step < len(tokens) else EOT
        logits = model.logits_for(hist, zero_bias())[None].copy()
        seq = np.asarray([tokens[:step]], np.int32)
        lp = log_softmax(run_rules(GREEDY_RULES, step, logits, seq, 3))[0]
        total = F32(total + lp[tok])
        hist.append(tok)
    assert res.scores[0] == float(F32(total / F32(len(tokens))))


@pytest.mark.parametrize(
    "total, prompt, expect",
    [
        (20, [SOT, EN, TRANSCRIBE, NO_TS], 10),  # total // 2
        (12, [SOT_PREV, 1, 2, 3, 4, 5, SOT, EN, TRANSCRIBE, NO_TS], 3),  # total - prompt fed
        (20, [SOT], 10),
    ],
)
def test_max_length(total, prompt, expect):
    model = FakeModel(seed=7, eot_drift=0)
    # the end token is suppressed, so only max_length stops the search
    for beam in (1, 3):
        opts = gen.GenerateOptions(
            beam_size=beam, max_length=total, return_scores=True, suppress_tokens=[EOT]
        )
        res = gen.generate(model, zero_bias(), prompt, SPECIAL, opts)
        assert len(res.sequences_ids[0]) == expect


def test_prompt_too_long_for_max_length():
    opts = gen.GenerateOptions(beam_size=1, max_length=6)
    with pytest.raises(ValueError):
        gen.generate(FakeModel(), zero_bias(), [SOT_PREV, 1, 2, 3, 4, 5, SOT, NO_TS], SPECIAL, opts)


# --- beam search ---------------------------------------------------------------------


def _beam(model, steps, *, prompt=(SOT,), special=SPECIAL, suppress_begin=(EOT,), **kw):
    """generate's beam search from ``prompt`` for ``steps`` steps at most."""
    opts = gen.GenerateOptions(max_length=2 * steps, return_scores=True, suppress_tokens=(), **kw)
    return gen.generate(
        model, zero_bias(model.vocab), list(prompt), special, opts,
        suppress_ids_begin=list(suppress_begin),
    )  # fmt: skip


def test_beam_one_is_greedy():
    for seed in range(5):
        model = FakeModel(seed=seed)
        for lp in (0.0, 1.0):
            g = _greedy(model, [SOT], length_penalty=lp, max_length=80)
            b = _beam(model, 40, beam_size=1, length_penalty=lp)
            assert b.sequences_ids == g.sequences_ids and b.scores == g.scores


def _brute_force(model, prompt, allowed_ids, max_length, lp):
    """Best sequence under CT2's scoring by enumeration (eot ends a sequence)."""
    bias = zero_bias(model.vocab)
    disable = [t for t in range(model.vocab) if t not in allowed_ids]
    best = None
    for length in range(1, max_length + 1):
        for seq in itertools.product(allowed_ids, repeat=length):
            if EOT in seq[:-1]:
                continue
            if length < max_length and seq[-1] != EOT:
                continue
            total = F32(0)
            for t in range(length):
                logits = model.logits_for([*prompt, *seq[:t]], bias)[None].copy()
                logits[0, disable] = LOWEST
                total = F32(total + log_softmax(logits)[0, seq[t]])
            hyp = list(seq[:-1]) if seq[-1] == EOT else list(seq)
            with np.errstate(divide="ignore"):
                score = float(F32(total / powf(len(hyp), lp)))
            if best is None or score > best[0]:
                best = (score, hyp)
    return best


@pytest.mark.parametrize("lp", [0.0, 1.0])
def test_beam_search_finds_brute_force_best(lp):
    vocab = 230
    allowed_ids = [10, 11, 12, EOT]
    suppress = [t for t in range(vocab) if t not in allowed_ids]
    special = gen.WhisperSpecialTokens(
        eot=EOT, sot=SOT, no_timestamps=NO_TS, no_speech=NO_SPEECH, vocab_size=vocab
    )
    prompt = [SOT, NO_TS]  # <|notimestamps|>: no timestamp rules
    for seed in range(6):
        model = FakeModel(vocab=vocab, seed=seed, eot_drift=0.8, scale=1.0)
        # 16 beams keep every live prefix of a 3-step search over 3 text tokens;
        # max_length 7 leaves 3 steps after the fed sot
        opts = gen.GenerateOptions(
            beam_size=16, max_length=7, length_penalty=lp, return_scores=True,
            suppress_tokens=suppress, suppress_blank=False,
        )  # fmt: skip
        res = gen.generate(model, zero_bias(vocab), prompt, special, opts)
        score, hyp = _brute_force(model, prompt, allowed_ids, 3, lp)
        assert res.sequences_ids[0] == hyp
        assert res.scores[0] == score


def test_beam_scores_are_length_normalised_cumulative_logprobs():
    model = FakeModel(seed=11)
    for lp in (0.0, 1.0, 0.6):
        res = _beam(model, 60, beam_size=4, length_penalty=lp, num_hypotheses=4)
        assert res.scores == sorted(res.scores, reverse=True)
        for hyp, score in zip(res.sequences_ids, res.scores):
            total = F32(0)
            for step, tok in enumerate([*hyp, EOT]):
                logits = model.logits_for([SOT, *hyp[:step]], zero_bias())[None].copy()
                seq = np.asarray([hyp[:step]], np.int32) if step else None
                total = F32(total + log_softmax(run_rules(GREEDY_RULES, step, logits, seq))[0, tok])
            assert score == float(F32(total / powf(len(hyp), lp)))


def test_patience_collects_more_candidates():
    model = FakeModel(seed=12)

    def run(patience, n):
        return _beam(
            model, 80, beam_size=3, length_penalty=1.0, patience=patience, num_hypotheses=n
        )

    # it stops once round(beam * patience) hypotheses ended (several can end in
    # one step); the best num_hypotheses of them come back, best first
    for patience, target in ((1.0, 3), (2.0, 6), (1.5, 5)):  # round(4.5) = 5, like std::round
        res = run(patience, target)
        assert len(res.sequences_ids) == target
        assert res.scores == sorted(res.scores, reverse=True)
    # patience only adds candidates: the best can only get better
    assert run(2.0, 1).scores[0] >= run(1.0, 1).scores[0]
    with pytest.raises(ValueError):
        gen.generate(
            model, zero_bias(), [SOT], SPECIAL, gen.GenerateOptions(beam_size=2, num_hypotheses=3)
        )


def test_beam_search_early_exit_without_length_penalty():
    model = FakeModel(seed=13, eot_drift=2.0)
    res = _beam(model, 100, prompt=[SOT, NO_TS], suppress_begin=(), beam_size=5, length_penalty=0.0)
    state = model.states[-1]
    # stops as soon as the best candidate ends: far before 100 steps
    assert len(state.calls) < 100 and len(res.sequences_ids) == 1


def test_beam_search_keeps_prefix_and_state_rows():
    model = FakeModel(seed=14)
    opts = gen.GenerateOptions(beam_size=5, return_scores=True, return_no_speech_prob=True)
    prompt = [SOT, EN, TRANSCRIBE, TS0, 30, 31]
    res = gen.generate(model, zero_bias(), prompt, SPECIAL, opts, suppress_ids_begin=[EOT])
    assert res.sequences_ids[0][:3] == [TS0, 30, 31]
    for hist in model.states[-1].hist:
        assert hist[:6] == prompt


def test_windows_decoded_together_equal_each_alone():
    """The batched mode's call: several windows, one network call a step."""

    class Windows(FakeModel):
        # a window's bias is its encoder output row; rows are window-major
        def new_state(self, encoder_output, n_sequences):
            per = n_sequences // len(encoder_output)
            return MultiState(self, [b for b in encoder_output for _ in range(per)])

    class MultiState(FakeState):
        def __init__(self, model, biases):
            super().__init__(model, None, len(biases))
            self.biases = biases

        def decode(self, tokens):
            tokens = np.asarray(tokens)
            for row, new in zip(self.hist, tokens.tolist()):
                row.extend(new)
            return np.stack([self.model.logits_for(h, b) for h, b in zip(self.hist, self.biases)])

        def reorder(self, indices):
            self.biases = [self.biases[i] for i in indices.tolist()]
            super().reorder(indices)

    rng = np.random.default_rng(9)
    biases = [(rng.standard_normal(VOCAB) * 2).astype(F32) for _ in range(3)]
    prompts = [[SOT, EN, TRANSCRIBE], [SOT, DE, TRANSCRIBE], [SOT, EN, NO_TS]]
    for beam in (1, 4):
        opts = gen.GenerateOptions(beam_size=beam, return_scores=True, return_no_speech_prob=True)
        model = Windows(seed=21)
        together = gen.generate_windows(
            model, biases, prompts, SPECIAL, opts, suppress_ids_begin=[EOT]
        )
        for i, prompt in enumerate(prompts):
            alone = gen.generate_windows(
                model, biases[i : i + 1], [prompt], SPECIAL, opts, suppress_ids_begin=[EOT]
            )[0]
            assert together[i].sequences_ids == alone.sequences_ids
            assert together[i].scores == alone.scores
            assert together[i].no_speech_prob == alone.no_speech_prob


# --- sampling and the window ---------------------------------------------------------


def test_sampling_is_seeded_and_best_of_sorted():
    model = FakeModel(seed=15)
    opts = gen.GenerateOptions(
        beam_size=1, num_hypotheses=4, sampling_topk=0, sampling_temperature=0.7, return_scores=True
    )
    a = gen.generate(model, zero_bias(), [SOT], SPECIAL, opts, rng=np.random.default_rng(1))
    b = gen.generate(model, zero_bias(), [SOT], SPECIAL, opts, rng=np.random.default_rng(1))
    assert a.sequences_ids == b.sequences_ids and len(a.sequences_ids) == 4
    assert a.scores == sorted(a.scores, reverse=True)
    opts.num_hypotheses = 1
    c = gen.generate(model, zero_bias(), [SOT], SPECIAL, opts, rng=np.random.default_rng(2))
    assert c.sequences_ids[0][0] >= TS0


def _text(tokens):
    return " ".join(f"w{t}" for t in tokens if t < EOT)


def test_transcribe_window_first_temperature_when_thresholds_pass():
    model = FakeModel(seed=16)
    mel = np.random.default_rng(0).standard_normal((80, 3000)).astype(F32)
    opts = gen.WindowOptions(
        compression_ratio_threshold=None, log_prob_threshold=None, no_speech_threshold=None
    )
    res = gen.transcribe_window(model, mel, [SOT, EN, TRANSCRIBE], SPECIAL, opts, decode_text=_text)
    assert res.temperature == 0.0 and len(res.attempts) == 1
    n = len(res.tokens)
    assert res.avg_logprob == pytest.approx(res.score * n / (n + 1))
    assert res.compression_ratio == gen.compression_ratio(_text(res.tokens).strip())


def test_transcribe_window_fallback_keeps_best_and_last_temperature():
    model = FakeModel(seed=17)
    mel = np.zeros((80, 3000), F32)
    opts = gen.WindowOptions(log_prob_threshold=0.0, no_speech_threshold=None, best_of=2)
    res = gen.transcribe_window(model, mel, [SOT, EN, TRANSCRIBE], SPECIAL, opts, decode_text=_text)
    assert len(res.attempts) == 6 and res.temperature == 1.0
    pool = [a for a in res.attempts if a.compression_ratio <= 2.4] or res.attempts
    assert res.avg_logprob == max(a.avg_logprob for a in pool)
    # a silent window with a low log-prob is accepted at once
    opts = gen.WindowOptions(log_prob_threshold=0.0, no_speech_threshold=-1.0)
    res = gen.transcribe_window(model, mel, [SOT, EN, TRANSCRIBE], SPECIAL, opts, decode_text=_text)
    assert len(res.attempts) == 1 and gen.should_skip_window(res, opts)


def test_suppressed_tokens_like_faster_whisper():
    special = [TRANSCRIBE, TRANSLATE, SOT, SOT_PREV, SOT_LM, NO_SPEECH]
    assert gen.suppressed_tokens([-1, 4], [9, 2], special) == tuple(sorted({2, 4, 9, *special}))
    assert gen.suppressed_tokens([], [9], special) == ()
    assert gen.suppressed_tokens([5], [9], special) == tuple(sorted({5, *special}))
