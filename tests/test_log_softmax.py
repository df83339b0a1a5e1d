"""The core's log-softmax against a float64 reference, rounded as CT2 rounds."""

import numpy as np
import pytest

import saywho
from saywho import _core


def _reference(x):
    x64 = x.astype(np.float64)
    return (
        x64
        - x64.max(axis=-1, keepdims=True)
        - np.log(np.exp(x64 - x64.max(axis=-1, keepdims=True)).sum(axis=-1, keepdims=True))
    )


def test_rows_match_float64_and_keep_their_order():
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((7, 51864)) * rng.uniform(1, 20, (7, 1))).astype(np.float32)
    got = _core.log_softmax_rows(x)
    assert got.dtype == np.float32 and got.shape == x.shape
    ref = _reference(x)
    # one float32 rounding of the row's constant (about the size of its
    # largest logit) and one of the sum
    scale = np.abs(x).max(axis=1, keepdims=True) + np.abs(ref)
    assert (np.abs(got - ref) <= 4 * np.spacing(scale.astype(np.float32))).all()
    # one constant per row: the order of the logits is the order of the result
    for row, logits in zip(got, x):
        order = np.argsort(logits, kind="stable")
        assert (np.diff(row[order]) >= 0).all()
    # a 1-D row and a row of equal values
    assert np.allclose(_core.log_softmax_rows(np.zeros(4, np.float32)), np.log(0.25))


def test_lowest_values_stay_finite_and_bad_input_is_an_option_error():
    x = np.full((1, 10), np.finfo(np.float32).min, np.float32)
    x[0, 3] = 2.0
    got = _core.log_softmax_rows(x)
    assert got[0, 3] == 0.0 and np.isfinite(got).all()
    with pytest.raises(saywho.OptionError):
        _core.log_softmax_rows(np.zeros((2, 2, 2), np.float32))
