"""The core's DTW against a direct transcription of its rule in Python."""

import numpy as np
import pytest

import saywho
from saywho import _core


def _reference(matrix):
    n, m = matrix.shape
    cost = np.full((n + 1, m + 1), np.inf, dtype=np.float32)
    cost[0, 0] = 0
    trace = np.zeros((n + 1, m + 1), dtype=np.int8)
    for j in range(1, m + 1):
        for i in range(1, n + 1):
            c0, c1, c2 = cost[i - 1, j - 1], cost[i - 1, j], cost[i, j - 1]
            if c0 < c1 and c0 < c2:
                c, t = c0, 0
            elif c1 < c0 and c1 < c2:
                c, t = c1, 1
            else:
                c, t = c2, 2
            cost[i, j] = np.float32(-matrix[i - 1, j - 1]) + c
            trace[i, j] = t
    trace[0, :], trace[:, 0] = 2, 1
    i, j, path = n, m, []
    while i > 0 or j > 0:
        path.append((i - 1, j - 1))
        t = trace[i, j]
        i, j = (i - 1, j - 1) if t == 0 else (i - 1, j) if t == 1 else (i, j - 1)
    path.reverse()
    return [p[0] for p in path], [p[1] for p in path]


@pytest.mark.parametrize("shape", [(1, 1), (1, 9), (9, 1), (7, 30), (30, 7), (12, 150)])
def test_paths_equal_the_rule(shape):
    rng = np.random.default_rng(shape[0] * 100 + shape[1])
    for ties in (False, True):
        x = rng.standard_normal(shape).astype(np.float32)
        if ties:  # few distinct values: many equal costs, the tie rule decides
            x = np.round(x).astype(np.float32)
        ti, tj = _core.negative_dtw(x)
        ref_i, ref_j = _reference(x)
        assert ti.tolist() == ref_i and tj.tolist() == ref_j
        assert ti[0] == 0 and tj[0] == 0 and ti[-1] == shape[0] - 1 and tj[-1] == shape[1] - 1
        assert (np.diff(ti) >= 0).all() and (np.diff(tj) >= 0).all()


def test_bad_matrices_are_option_errors():
    with pytest.raises(saywho.OptionError):
        _core.negative_dtw(np.zeros(5, np.float32))
    with pytest.raises(saywho.OptionError):
        _core.negative_dtw(np.zeros((0, 5), np.float32))
