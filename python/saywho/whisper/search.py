"""Greedy search, random sampling and beam search, as CTranslate2 runs them on the CPU.

One audio window is decoded per call (CT2's batch of one). The decoder state
keeps a fixed number of rows (see :mod:`saywho.whisper.protocol`), so where
CT2 shrinks or grows its batch this code keeps the rows and ignores the
logits of the rows it no longer needs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .logits import F32, LogitsProcessor, apply_processors, log_softmax_f32, softmax_f32
from .protocol import WhisperDecoderState

# Score CT2 gives to forced prefix tokens on secondary beams, and to an end
# token drawn by a secondary beam right after the prefix.
_PREFIX_PENALTY = F32(-1e10)


@dataclass
class SearchResult:
    """Hypotheses best first; ``scores`` are CT2's final (length-normalised) scores."""

    hypotheses: list[list[int]] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)


# --- top-k with libstdc++'s tie order -------------------------------------------------


def _adjust_heap(heap: list, vals: np.ndarray, hole: int, length: int, value: int) -> None:
    # libstdc++ __adjust_heap followed by __push_heap; comp(a, b) is vals[a] > vals[b],
    # so the root holds the worst of the kept candidates.
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if vals[heap[child]] > vals[heap[child - 1]]:
            child -= 1
        heap[hole] = heap[child]
        hole = child
    if (length & 1) == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        heap[hole] = heap[child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and vals[heap[parent]] > vals[value]:
        heap[hole] = heap[parent]
        hole = parent
        parent = (hole - 1) // 2
    heap[hole] = value


def ct2_topk(values: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices and values of the ``k`` largest entries of a 1-D array, in CT2's CPU order.

    ``k == 1`` is ``std::max_element`` (first maximum). Otherwise CT2 runs
    ``std::partial_sort`` over an index range with ``a > b``; equal values
    come out in libstdc++'s heap order, which this reproduces step by step.
    Only entries that beat the current worst kept value ever move the heap,
    and that value only grows, so blocks are pre-filtered with NumPy.
    """
    vals = np.asarray(values)
    n = vals.shape[0]
    if k <= 0 or k > n:
        raise ValueError(f"top-k of {k} from {n} values")
    if k == 1:
        i = int(np.argmax(vals))
        return np.array([i], dtype=np.int32), vals[[i]]
    heap = list(range(k))
    # __make_heap
    if k >= 2:
        parent = (k - 2) // 2
        while True:
            _adjust_heap(heap, vals, parent, k, heap[parent])
            if parent == 0:
                break
            parent -= 1
    # __heap_select, in growing blocks
    i = k
    block = 64
    while i < n:
        stop = min(n, i + block)
        threshold = vals[heap[0]]
        for j in np.nonzero(vals[i:stop] > threshold)[0].tolist():
            idx = i + j
            if vals[idx] > vals[heap[0]]:
                _adjust_heap(heap, vals, 0, k, idx)
        i = stop
        block *= 2
    # __sort_heap
    last = k
    while last > 1:
        last -= 1
        value = heap[last]
        heap[last] = heap[0]
        _adjust_heap(heap, vals, 0, last, value)
    ids = np.array(heap, dtype=np.int32)
    return ids, vals[ids]


# --- samplers ------------------------------------------------------------------------


class BestSampler:
    """Takes the best candidates (``sampling_topk == 1`` or temperature 0)."""

    def sample(self, scores: np.ndarray, num_samples: int) -> tuple[np.ndarray, np.ndarray]:
        ids = np.empty((scores.shape[0], num_samples), dtype=np.int32)
        out = np.empty((scores.shape[0], num_samples), dtype=scores.dtype)
        for row in range(scores.shape[0]):
            ids[row], out[row] = ct2_topk(scores[row], num_samples)
        return ids, out


class RandomSampler:
    """Draws one token per row from ``softmax(scores / temperature)``.

    CTranslate2 draws with its own generator; this uses NumPy's, so sampled
    tokens cannot match CT2's. The returned score is the unscaled input score
    of the drawn token, as in CT2.
    """

    def __init__(
        self, rng: np.random.Generator, from_topk: int = 0, temperature: float = 1.0
    ) -> None:
        self.rng = rng
        self.from_topk = from_topk
        self.temperature = temperature

    def sample(self, scores: np.ndarray, num_samples: int = 1) -> tuple[np.ndarray, np.ndarray]:
        if num_samples != 1:
            raise ValueError("random sampling draws one token per row")
        rows, depth = scores.shape
        ids = np.empty((rows, 1), dtype=np.int32)
        for row in range(rows):
            cand = np.arange(depth)
            cand_scores = scores[row]
            if 0 < self.from_topk < depth:
                cand, cand_scores = ct2_topk(scores[row], self.from_topk)
            elif self.from_topk > depth:
                raise ValueError("sampling_topk is greater than the vocabulary size")
            if self.temperature != 1:
                with np.errstate(over="ignore"):  # lowest * 1/T may overflow to -inf, as in C
                    cand_scores = (cand_scores * (F32(1) / F32(self.temperature))).astype(F32)
            probs = softmax_f32(cand_scores[None, :])[0].astype(np.float64)
            cdf = np.cumsum(probs)
            u = self.rng.random() * cdf[-1]
            pick = min(int(np.searchsorted(cdf, u, side="right")), depth - 1)
            ids[row, 0] = int(cand[pick])
        return ids, np.take_along_axis(scores, ids.astype(np.int64), axis=1)


# --- shared pieces -------------------------------------------------------------------


def _final_score(score: np.float32, length: int, length_penalty: float) -> np.float32:
    # finalize_hypothesis_score: score / length ** length_penalty, in float32
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return F32(F32(score) / F32(np.power(F32(length), F32(length_penalty))))


def _sort_best_first(result: SearchResult, max_hypotheses: int) -> SearchResult:
    order = sorted(range(len(result.scores)), key=lambda i: -result.scores[i])
    order = order[:max_hypotheses]
    return SearchResult(
        hypotheses=[result.hypotheses[i] for i in order],
        scores=[result.scores[i] for i in order],
    )


def _step_logits(state: WhisperDecoderState, tokens: np.ndarray) -> np.ndarray:
    logits = state.decode(np.ascontiguousarray(tokens, dtype=np.int32).reshape(-1, 1))
    return np.array(logits, dtype=F32, copy=True)


# --- greedy --------------------------------------------------------------------------


def greedy_search(
    state: WhisperDecoderState,
    start_id: int,
    end_ids: Sequence[int],
    max_length: int,
    *,
    prefix: Sequence[int] = (),
    processors: Sequence[LogitsProcessor] = (),
    sampler=None,
    num_hypotheses: int = 1,
    length_penalty: float = 0.0,
    return_scores: bool = True,
    min_length: int = 0,
) -> SearchResult:
    """CT2 ``GreedySearch::search`` for one input, ``return_prefix`` on.

    ``state`` must hold ``num_hypotheses`` rows, all fed the same prompt.
    Each row is an independent search (``num_hypotheses > 1`` only makes
    sense with a random sampler); the results are merged best first.
    """
    sampler = sampler or BestSampler()
    rows = num_hypotheses
    if num_hypotheses > 1:
        return_scores = True
    prefix = [int(t) for t in prefix]
    prefix_length = len(prefix)
    end_set = set(int(e) for e in end_ids)
    hyps: list[list[int]] = [[] for _ in range(rows)]
    scores = [F32(0)] * rows
    finished_score: list[np.float32 | None] = [None] * rows
    alive = list(range(rows))
    feed = np.full(rows, start_id, dtype=np.int32)
    history = np.zeros((rows, 0), dtype=np.int32)

    for step in range(max_length):
        logits_all = _step_logits(state, feed)
        logits = logits_all[alive]
        seq = history[alive] if step > 0 and processors else None
        apply_processors(processors, step, logits, seq, prefix_length, end_ids, min_length)
        if return_scores:
            logits = log_softmax_f32(logits)
        best_ids, best_scores = sampler.sample(logits, 1)
        if step < prefix_length:
            best_ids[:, 0] = prefix[step]
            best_scores[:, 0] = 0
        chosen = np.zeros(rows, dtype=np.int32)
        chosen[alive] = best_ids[:, 0]
        history = np.concatenate([history, chosen[:, None]], axis=1)
        still_alive = []
        for pos, row in enumerate(alive):
            word = int(best_ids[pos, 0])
            is_end = word in end_set
            if not is_end:
                hyps[row].append(word)
            if return_scores:
                scores[row] = F32(scores[row] + F32(best_scores[pos, 0]))
            if (is_end and step >= prefix_length) or step + 1 == max_length:
                finished_score[row] = _final_score(scores[row], len(hyps[row]), length_penalty)
            else:
                still_alive.append(row)
                feed[row] = word
        alive = still_alive
        if not alive:
            break

    result = SearchResult(
        hypotheses=hyps,
        scores=[float(s if s is not None else F32(0)) for s in finished_score],
    )
    return _sort_best_first(result, num_hypotheses)


# --- beam search ---------------------------------------------------------------------


def beam_search(
    state: WhisperDecoderState,
    start_id: int,
    end_ids: Sequence[int],
    max_length: int,
    *,
    beam_size: int,
    prefix: Sequence[int] = (),
    processors: Sequence[LogitsProcessor] = (),
    num_hypotheses: int = 1,
    length_penalty: float = 0.0,
    patience: float = 1.0,
    min_length: int = 0,
) -> SearchResult:
    """CT2 ``BeamSearch::search`` on the CPU for one input, ``return_prefix`` on,
    end tokens left out of the hypotheses.

    ``state`` must hold ``beam_size`` rows, all fed the same prompt.
    """
    vocab_checked = False
    prefix = [int(t) for t in prefix]
    prefix_length = len(prefix)
    end_set = set(int(e) for e in end_ids)
    num_candidates = 2 * beam_size
    # std::round: halves go away from zero
    max_candidates = int(math.floor(float(F32(F32(beam_size) * F32(patience))) + 0.5))
    allow_early_exit = length_penalty == 0
    sampler = BestSampler()

    result = SearchResult()
    raw_scores: list[np.float32] = []
    top_beam_finished = False
    feed = np.full(beam_size, start_id, dtype=np.int32)
    alive_seq = np.zeros((beam_size, 0), dtype=np.int32)
    topk_scores: np.ndarray | None = None
    expand_after_first_step = True

    for step in range(max_length):
        logits_all = _step_logits(state, feed)
        vocab = logits_all.shape[1]
        if not vocab_checked:
            vocab_checked = True
            expand_after_first_step = num_candidates <= vocab
            if not expand_after_first_step:
                # CT2 starts expanded: beam 0 scores 0, the others the lowest float.
                topk_scores = np.full(beam_size, np.finfo(F32).min, dtype=F32)
                topk_scores[0] = 0
        is_expanded = (not expand_after_first_step) or step > 0
        logits = logits_all if is_expanded else logits_all[:1]
        seq = alive_seq if step > 0 and processors else None
        apply_processors(processors, step, logits, seq, prefix_length, end_ids, min_length)
        log_probs = log_softmax_f32(logits)
        if topk_scores is not None:
            with np.errstate(over="ignore", invalid="ignore"):
                log_probs = (log_probs + topk_scores[:, None]).astype(F32)
        flat = log_probs.reshape(1, -1)
        ids, cand_scores = sampler.sample(flat, num_candidates)
        ids = ids[0].astype(np.int64)
        cand_scores = cand_scores[0].astype(F32)
        origins = (ids // vocab) if is_expanded else np.zeros_like(ids)
        words = (ids % vocab).astype(np.int32)

        if step <= prefix_length and prefix_length > 0:
            for k in range(num_candidates):
                new_id = -1
                new_score = F32(0)
                if step < prefix_length:
                    new_id = prefix[step]
                    new_score = F32(0) if k == 0 else _PREFIX_PENALTY
                elif k > 0 and int(words[k]) in end_set:
                    new_id = 0
                    new_score = _PREFIX_PENALTY
                if new_id >= 0:
                    words[k] = new_id
                    cand_scores[k] = new_score
                    origins[k] = 0

        # Each candidate's sequence: its parent's tokens plus the new one.
        cand_seq = np.concatenate([alive_seq[origins], words[:, None]], axis=1)

        is_last = step + 1 == max_length
        active = []
        secondary = beam_size
        for k in range(beam_size):
            word = int(words[k])
            nxt = k
            if (word in end_set and step >= prefix_length) or is_last:
                if k == 0:
                    top_beam_finished = True
                end = step if word in end_set else step + 1
                raw_scores.append(F32(cand_scores[k]))
                result.hypotheses.append(cand_seq[k, :end].tolist())
                for j in range(secondary, num_candidates):
                    if int(words[j]) not in end_set:
                        nxt = j
                        secondary = j + 1
                        break
            active.append(nxt)

        if is_last:
            finished = True
        elif allow_early_exit:
            finished = top_beam_finished and len(result.hypotheses) >= num_hypotheses
        else:
            finished = len(result.hypotheses) >= max_candidates
        if finished:
            break

        active_idx = np.asarray(active, dtype=np.int64)
        state.reorder(origins[active_idx].astype(np.int32))
        alive_seq = cand_seq[active_idx]
        topk_scores = cand_scores[active_idx].astype(F32)
        feed = words[active_idx].astype(np.int32)

    result.scores = [
        float(_final_score(s, len(h), length_penalty))
        for s, h in zip(raw_scores, result.hypotheses)
    ]
    return _sort_best_first(result, num_hypotheses)
