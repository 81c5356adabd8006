"""What one command invocation reads once: checking the outputs and then judging share a folder's search and a
dataset's manifest, instead of each doing the work again.

Inside :func:`invocation`, :func:`remembered` keeps what ``make`` built under ``key`` and hands it back when the
same key is asked for again; outside it (``watch`` re-reading a growing log, a library caller) every call builds
afresh. Nothing is kept when ``make`` raises.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")

_KEPT: ContextVar[dict[Hashable, object] | None] = ContextVar("trainproof_invocation", default=None)


@contextmanager
def invocation() -> Iterator[None]:
    """Within the block, what :func:`remembered` builds is built once per key."""
    token = _KEPT.set({})
    try:
        yield
    finally:
        _KEPT.reset(token)


def remembered(key: Hashable, make: Callable[[], T]) -> T:
    """``make()``, built once per ``key`` within an :func:`invocation` (every time outside one)."""
    kept = _KEPT.get()
    if kept is None:
        return make()
    if key not in kept:
        kept[key] = make()
    return kept[key]  # type: ignore[return-value]


def active() -> bool:
    """Whether an :func:`invocation` is under way (a key worth computing only then, such as a resolved path)."""
    return _KEPT.get() is not None
