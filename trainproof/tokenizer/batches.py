"""A batch call into a tokenizer that fails on some of its items: the others still answered, the failing ones named.

A library's batch encoder raises for the whole batch when one text is
unusable (sentencepiece on a lone UTF-16 surrogate, ``"\\ud800"`` from a JSON
escape: "List elements must be str or bytes"). :func:`each` says the items
holding a lone surrogate failed without calling the library on them (which
none encodes), and where the call on the rest raises, calls it on each half,
and so on down to the items that fail alone, so one bad line costs that line:
about two calls per bad item per halving, not a call per item.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from trainproof.io.errors import TrainproofError
from trainproof.io.safe import utf8_encodable
from trainproof.tokenizer.panics import one_line

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


def each(call: Callable[[list[T]], Sequence[R | Failed]], items: Sequence[T]) -> list[R | Failed]:
    """``call(items)``, one result per item; an item holding a lone surrogate (a text, or a tuple holding texts) is a
    :class:`Failed` without a call; where the call raises, the halves called apart, down to the items that fail
    alone, which are a :class:`Failed`. A TrainproofError (a library that panicked: the tokenizer itself is broken)
    is raised as it is."""
    batch = list(items)
    if _plain_texts(batch):
        return _halving(call, batch)
    screened: list[Failed | None] = [_lone_surrogate(item) for item in batch]
    if not any(screened):
        return _halving(call, batch)
    answered = iter(_halving(call, [item for item, bad in zip(batch, screened) if bad is None]))
    return [bad if bad is not None else next(answered) for bad in screened]


def _halving(call: Callable[[list[T]], Sequence[R | Failed]], batch: list[T]) -> list[R | Failed]:
    if not batch:
        return []
    try:
        return list(call(batch))
    except TrainproofError:
        raise
    except Exception as exc:  # noqa: BLE001 -- whatever the library raises for one of the items
        if len(batch) == 1:
            return [Failed(one_line(f"{type(exc).__name__}: {exc}", MAX_REASON_CHARS))]
    middle = len(batch) // 2
    return _halving(call, batch[:middle]) + _halving(call, batch[middle:])


def _plain_texts(batch: list) -> bool:
    """Whether every item is a text and none holds a lone surrogate, told by one check of them all (a check per text
    was a tenth of the time the library took to encode 100,000 transcripts): whether each is ASCII, else whether
    all of them joined are encodable."""
    try:
        return all(map(str.isascii, batch)) or utf8_encodable("".join(batch))
    except TypeError:  # an item is a tuple of texts (a pair, a conversation's messages), screened one by one
        return False


def _lone_surrogate(item: object) -> Failed | None:
    """An item (a text, or a tuple holding texts) with a lone surrogate, which no library encodes (they say "List
    elements must be str or bytes", or "Unable to cast Python instance"), failed as that; else None."""
    for text in item if isinstance(item, tuple) else (item,):
        if isinstance(text, str) and not utf8_encodable(text):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as bad:
                return Failed(f"{text[bad.start]!r} is a lone UTF-16 surrogate, not Unicode text")
    return None


def failed_note(failed: Sequence[tuple[int, str]], noun: str, outcome: str) -> str:
    """The note counting the items (``(line, why)``, in order) the tokenizer could not encode, the first FAILED_SHOWN
    named: "the tokenizer cannot encode 2 rows, so their length is not judged: line 4 (...); line 9 (...)".
    ``outcome`` says what that costs them."""
    count = len(failed)
    return f"the tokenizer cannot encode {count:,} {noun}{'' if count == 1 else 's'}, {outcome}: {named_lines(failed)}"


def named_lines(failed: Sequence[tuple[int, str]]) -> str:
    """The first FAILED_SHOWN items (``(line, why)``, in order) named, and how many more: "line 4 (...); line 9 (...);
    and 12 more"."""
    shown = "; ".join(f"line {line} ({why})" for line, why in failed[:FAILED_SHOWN])
    return shown + (f"; and {len(failed) - FAILED_SHOWN:,} more" if len(failed) > FAILED_SHOWN else "")
