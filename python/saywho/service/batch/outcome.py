"""One file's end in a batch, whichever engine ran it (batch.runner's, or saywho.ray's)."""

from __future__ import annotations

from dataclasses import dataclass

from ...api.result import Result
from .inputs import Item


@dataclass
class Outcome:
    """One file's end: its result, or the error that stopped it."""

    item: Item
    result: Result | None
    error: str | None
    seconds: float


def describe(error: BaseException) -> str:
    """An index line's message: the exception's class and what it said."""
    return f"{type(error).__name__}: {error}"
