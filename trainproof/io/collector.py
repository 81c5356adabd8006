"""Python's object bookkeeping around large reads: the cyclic garbage collector paused while many small acyclic
objects are built (a corpus's entries, records and table; a trainer_state.json's million entries), and what a short
process lets go of only when it ends."""

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

    What was built is kept for the run, so it goes straight to the oldest
    generation as the pause ends (``gc.freeze`` then ``gc.unfreeze``: two
    list splices, no walk), rather than to the youngest, where each of the
    next collections walked all of it on its way up (10-15 ms of that warm
    run). A cycle left over from before the pause waits for the next full
    collection. Skipped when the program has frozen objects of its own,
    which unfreezing would let go of.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if was_enabled:
            gc.enable()


_kept_to_exit: list[object] | None = None


def keep_dropped_to_exit() -> None:
    """Make :func:`drop` keep what it is given until the process ends: for the CLI's own short process only, which
    ends with ``os._exit`` (the kernel then takes its memory back at once)."""
    global _kept_to_exit
    if _kept_to_exit is None:
        _kept_to_exit = []


def drop(structure: object) -> None:
    """Let go of a large structure of small objects (a parsed trainer_state.json: a million dicts and four million
    numbers), which freeing object by object takes a tenth of a second. In the CLI's short process (see
    :func:`keep_dropped_to_exit`) it is kept until the process ends, or until :func:`release_dropped` (one at a time:
    a folder of a hundred runs would otherwise hold them all); elsewhere (a library caller, ``watch``, the HF
    callback) this does nothing, and the structure is freed as usual once its last name goes."""
    if _kept_to_exit is not None:
        _kept_to_exit.append(structure)


def release_dropped() -> None:
    """Free what :func:`drop` kept: called before the next trainer_state.json is parsed as columns (the one reader
    that drops), so that no more than one is held at a time, and never two at once."""
    if _kept_to_exit:
        _kept_to_exit.clear()
