"""Logits processors, float32 softmax arithmetic, and token disabling.

Everything here follows CTranslate2's CPU code path (see
docs/whisper_decoding.md for the file and function each piece mirrors):
logits are float32, a disabled token gets float32's lowest finite value (not
-inf), and on the CPU a disabled token is written into the logits at once, so
a processor sees what the processors before it disabled.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import _core

F32 = np.float32
LOWEST = np.finfo(np.float32).min


def log_softmax_f32(logits: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax as CTranslate2's CPU kernel does it.

    The kernel adds one float32 constant, ``-max - log(sum(exp(x - max)))``,
    to every entry, so a row's order is kept (ties can appear, never swaps).
    In the core (``_core.log_softmax_rows``): it runs on every row at every
    decoding step, and NumPy's version cost more than a tiny model's step.
    """
    return _core.log_softmax_rows(logits)


def softmax_f32(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax: ``exp(x - max)`` times the float32 reciprocal of the sum."""
    x = np.asarray(logits, dtype=F32)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        e = np.exp((x - x.max(axis=-1, keepdims=True)).astype(F32)).astype(F32)
        total = e.astype(np.float64).sum(axis=-1, keepdims=True).astype(F32)
        return (e * (F32(1) / total).astype(F32)).astype(F32)


def logsumexp_f32(x: np.ndarray) -> np.float32:
    """``log(sum(exp(x - max))) + max`` of a 1-D float32 array."""
    x = np.asarray(x, dtype=F32)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        x_max = x.max()
        s = F32(np.exp((x - x_max).astype(F32).astype(np.float64)).sum())
        return F32(F32(np.log(s)) + x_max)


class DisableTokens:
    """Sets chosen logits to float32's lowest value, immediately (CPU semantics)."""

    def __init__(self, logits: np.ndarray):
        self.logits = logits

    def add(self, row: int, token: int) -> None:
        self.logits[row, token] = LOWEST

    def add_all_rows(self, token: int) -> None:
        self.logits[:, token] = LOWEST

    def add_range(self, row: int, start: int, stop: int) -> None:
        """Disable tokens ``start <= id < stop`` of one row."""
        if stop > start:
            self.logits[row, start:stop] = LOWEST

    def add_many(self, row: int, tokens: Sequence[int]) -> None:
        if len(tokens):
            self.logits[row, np.asarray(tokens, dtype=np.int64)] = LOWEST


class LogitsProcessor:
    """One rule over a step's logits ``[rows, vocab]``.

    ``sequences`` is int32 ``[rows, step]``: the tokens chosen at steps
    ``0..step-1`` (prefix tokens included, the start token not), or ``None``
    at step 0. ``sample_begin`` is the prefix length: the first step that is
    sampled rather than forced.
    """

    apply_first = False

    def apply(
        self,
        step: int,
        logits: np.ndarray,
        disable: DisableTokens,
        sequences: np.ndarray | None,
        sample_begin: int,
    ) -> None:
        raise NotImplementedError


class NoSpeechProbs(LogitsProcessor):
    """Records P(no-speech token) at step 0 when sot is the first decoded input.

    Runs before every other processor, on the raw logits of row 0 of each
    batch item (one audio here, so row 0).
    """

    apply_first = True

    def __init__(self, no_speech_id: int):
        self.no_speech_id = no_speech_id
        self.no_speech_prob: float | None = None

    def apply(self, step, logits, disable, sequences, sample_begin):
        if step == 0:
            probs = softmax_f32(logits[:1])
            self.no_speech_prob = float(probs[0, self.no_speech_id])


class RepetitionPenalty(LogitsProcessor):
    """Divides positive (multiplies negative) logits of already chosen tokens."""

    def __init__(self, penalty: float):
        self.penalty = F32(penalty)

    def apply(self, step, logits, disable, sequences, sample_begin):
        if sequences is None or sequences.shape[1] == 0:
            return
        for row in range(logits.shape[0]):
            ids = sequences[row].astype(np.int64)
            # All reads happen before any write, so a repeated id is penalised once.
            prev = logits[row, ids].copy()
            new = np.where(prev < 0, prev * self.penalty, prev / self.penalty).astype(F32)
            logits[row, ids] = new


class NoRepeatNgram(LogitsProcessor):
    """Forbids the token that would complete an n-gram already in the sequence."""

    def __init__(self, ngram_size: int):
        self.n = int(ngram_size)

    def apply(self, step, logits, disable, sequences, sample_begin):
        if sequences is None or sequences.shape[1] < self.n:
            return
        n = self.n
        length = sequences.shape[1]
        for row in range(sequences.shape[0]):
            seq = sequences[row].tolist()
            tail = seq[length - n + 1 :] if n > 1 else []
            banned = set()
            # Every occurrence of the last n-1 tokens that still has room for
            # the n-th token (the occurrence at the very end has none).
            for start in range(0, length - n + 1):
                if seq[start : start + n - 1] == tail:
                    banned.add(seq[start + n - 1])
            for token in sorted(banned):
                disable.add(row, token)


class SuppressTokens(LogitsProcessor):
    """Disables a fixed list of tokens at every step."""

    def __init__(self, ids: Sequence[int]):
        self.ids = [int(i) for i in ids]

    def apply(self, step, logits, disable, sequences, sample_begin):
        for token in self.ids:
            disable.add_all_rows(token)


class SuppressTokensBegin(LogitsProcessor):
    """Disables tokens at the first sampled step only (``suppress_blank``)."""

    def __init__(self, ids: Sequence[int]):
        self.ids = [int(i) for i in ids]

    def apply(self, step, logits, disable, sequences, sample_begin):
        if step != sample_begin:
            return
        for token in self.ids:
            disable.add_all_rows(token)


class ApplyTimestampRules(LogitsProcessor):
    """Whisper's timestamp grammar, in CTranslate2's formulation.

    - ``<|notimestamps|>`` is never sampled;
    - at step 0 with no prefix: only timestamps up to ``max_initial_timestamp_id``;
    - after a timestamp that follows a timestamp (or opens the sampled part):
      no timestamp; after a lone timestamp: no text token (end of text and
      timestamps >= it stay allowed);
    - after a text token: no timestamp <= the last sampled timestamp;
    - where the text rules above allow text, if the log of the summed timestamp
      probabilities beats every single text-or-special token, only timestamps.
    """

    def __init__(
        self,
        eot_id: int,
        no_timestamps_id: int,
        timestamp_begin_id: int,
        timestamp_end_id: int,
        max_initial_timestamp_id: int,
    ):
        self.eot_id = eot_id
        self.no_timestamps_id = no_timestamps_id
        self.timestamp_begin_id = timestamp_begin_id
        self.timestamp_end_id = timestamp_end_id
        self.max_initial_timestamp_id = max_initial_timestamp_id

    def apply(self, step, logits, disable, sequences, sample_begin):
        ts_begin = self.timestamp_begin_id
        ts_end = self.timestamp_end_id
        check_rows = []
        for row in range(logits.shape[0]):
            disable.add(row, self.no_timestamps_id)
            if step == sample_begin and step == 0:
                disable.add_range(row, 0, ts_begin)
                disable.add_range(row, self.max_initial_timestamp_id + 1, ts_end + 1)
            elif step > sample_begin:
                last = int(sequences[row, step - 1])
                if last >= ts_begin:
                    penultimate = int(sequences[row, step - 2]) if step - 1 > sample_begin else last
                    if penultimate >= ts_begin:
                        disable.add_range(row, ts_begin, ts_end + 1)
                    else:
                        disable.add_range(row, 0, self.eot_id)
                        disable.add_range(row, ts_begin, last)
                        check_rows.append(row)
                else:
                    check_rows.append(row)
                    for t in range(step - 1, sample_begin - 1, -1):
                        token = int(sequences[row, t])
                        if token >= ts_begin:
                            disable.add_range(row, ts_begin, token + 1)
                            break
        if check_rows:
            log_probs = log_softmax_f32(logits)
            for row in check_rows:
                if self._timestamp_more_likely(log_probs[row]):
                    disable.add_range(row, 0, ts_begin)

    def _timestamp_more_likely(self, log_probs: np.ndarray) -> bool:
        ts_begin = self.timestamp_begin_id
        max_text = F32(log_probs[:ts_begin].max())
        ts_lse = logsumexp_f32(log_probs[ts_begin : self.timestamp_end_id + 1])
        return bool(ts_lse > max_text)


def build_processors(
    *,
    first: Sequence[LogitsProcessor] = (),
    repetition_penalty: float = 1.0,
    no_repeat_ngram_size: int = 0,
    disable_ids: Sequence[int] = (),
    disable_ids_begin: Sequence[int] = (),
    last: Sequence[LogitsProcessor] = (),
) -> list[LogitsProcessor]:
    """The processor list in CTranslate2's order (``make_logits_processors``)."""
    processors: list[LogitsProcessor] = list(first)
    if repetition_penalty != 1:
        processors.append(RepetitionPenalty(repetition_penalty))
    if no_repeat_ngram_size > 0:
        processors.append(NoRepeatNgram(no_repeat_ngram_size))
    if len(disable_ids):
        processors.append(SuppressTokens(disable_ids))
    if len(disable_ids_begin):
        processors.append(SuppressTokensBegin(disable_ids_begin))
    processors.extend(last)
    return processors


def apply_processors(
    processors: Sequence[LogitsProcessor],
    step: int,
    logits: np.ndarray,
    sequences: np.ndarray | None,
    sample_begin: int,
    end_ids: Sequence[int] = (),
    min_length: int = 0,
) -> None:
    """Run one step's rules over ``logits`` in place (min length first, as CT2 does)."""
    disable = DisableTokens(logits)
    if step < min_length:
        for end_id in end_ids:
            disable.add_all_rows(end_id)
    for processor in processors:
        processor.apply(step, logits, disable, sequences, sample_begin)
