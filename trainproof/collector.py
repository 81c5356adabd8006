"""The cyclic garbage collector paused while many small acyclic objects are built (a corpus's entries, records and
table)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a corpus's entries, records and table are built.

    They are hundreds of thousands of small objects in no cycle, and every
    few thousand allocations the collector walks all the objects alive
    (about a tenth of a warm run of 20,000 clips). Reference counting frees
    them as always, and the collector is back on for the decoding (where a
    cluster library may make cycles for hours) and the rules.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
