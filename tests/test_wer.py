"""The word error rate against hand-counted cases."""

import pytest

from saywho.eval.wer import normalize_words, word_error_rate, word_errors


def test_normalisation_drops_case_and_punctuation_but_keeps_apostrophes():
    assert normalize_words("And so, my fellow Americans: ask not!") == [
        "and", "so", "my", "fellow", "americans", "ask", "not"
    ]  # fmt: skip
    assert normalize_words("Don't 'quote' me") == ["don't", "quote", "me"]


@pytest.mark.parametrize(
    "ref, hyp, errors",
    [
        ("a b c d", "a b c d", 0),
        ("a b c d", "a x c d", 1),  # substitution
        ("a b c d", "a c d", 1),  # deletion
        ("a b c d", "a b b c d", 1),  # insertion
        ("a b c d", "", 4),
        ("", "a b", 2),
        ("the cat sat on the mat", "cat sat on a mat today", 3),
    ],
)
def test_edit_distance_in_words(ref, hyp, errors):
    assert word_errors(ref, hyp) == (errors, len(ref.split()))


def test_rate():
    assert word_error_rate("a b c d", "a x c d") == 0.25
    assert word_error_rate("", "") == 0.0
    assert word_error_rate("", "x") == float("inf")
