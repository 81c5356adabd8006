"""A batch call into a tokenizer that fails on some of its items: the others still answered, the failing ones named.

A library's batch encoder raises for the whole batch when one text is
unusable (sentencepiece on a lone UTF-16 surrogate, ``"\\ud800"`` from a JSON
escape: "List elements must be str or bytes"). :func:`each` then calls it on
each half, and so on down to the items that fail alone, so one bad line costs
that line: about two calls per bad item per halving, not a call per item.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from trainproof.errors import TrainproofError

T = TypeVar("T")
R = TypeVar("R")

MAX_REASON_CHARS = 200
"""A library's message is cut to this many characters in a :class:`Failed`."""

FAILED_SHOWN = 5
"""Items the tokenizer could not encode named, by line, in the note that counts them."""


@dataclass(frozen=True)
class Failed:
    """An item the call fails on, alone: why, in one line."""

    reason: str


def each(call: Callable[[list[T]], list[R]], items: Sequence[T]) -> list[R | Failed]:
    """``call(items)``, one result per item; where it raises, the halves called apart, down to the items that fail
    alone, which are a :class:`Failed`. A TrainproofError (a library that panicked: the tokenizer itself is broken)
    is raised as it is."""
    batch = list(items)
    if not batch:
        return []
    try:
        return list(call(batch))
    except TrainproofError:
        raise
    except Exception as exc:  # noqa: BLE001 -- whatever the library raises for one of the items
        if len(batch) == 1:
            return [Failed(_reason(batch[0], exc))]
    middle = len(batch) // 2
    return each(call, batch[:middle]) + each(call, batch[middle:])


def _reason(item: object, exc: Exception) -> str:
    """Why the call fails on an item (a text, or a tuple holding texts): a lone surrogate said as such (the libraries
    say "List elements must be str or bytes", or "Unable to cast Python instance"), else the library's message."""
    for text in item if isinstance(item, tuple) else (item,):
        if isinstance(text, str):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as bad:
                return f"{text[bad.start]!r} is a lone UTF-16 surrogate, not Unicode text"
    said = " ".join(f"{type(exc).__name__}: {exc}".split())
    return said if len(said) <= MAX_REASON_CHARS else said[: MAX_REASON_CHARS - 3] + "..."


def failed_note(failed: Sequence[tuple[int, str]], noun: str, outcome: str) -> str:
    """The note counting the items (``(line, why)``, in order) the tokenizer could not encode, the first FAILED_SHOWN
    named: "the tokenizer cannot encode 2 rows, so their length is not judged: line 4 (...); line 9 (...)".
    ``outcome`` says what that costs them."""
    count = len(failed)
    shown = "; ".join(f"line {line} ({why})" for line, why in failed[:FAILED_SHOWN])
    more = f"; and {count - FAILED_SHOWN:,} more" if count > FAILED_SHOWN else ""
    return f"the tokenizer cannot encode {count:,} {noun}{'' if count == 1 else 's'}, {outcome}: {shown}{more}"
