"""The ``trainproof`` process, tuned for a short command that builds and drops arrays of millions of points.

One switch, :func:`run_tuned`, sets all of it, and only for the CLI's own
process (the console script and ``python -m trainproof``), never for
``watch`` (which runs beside a training job for as long as it does), a
library caller or the HF callback: the allocator keeps what it frees
(:func:`keep_freed_memory`; ``trainproof data`` gives large arrays back
instead, :func:`return_large_arrays`), Arrow does not keep what it frees
(:func:`arrow_returns_freed_memory`), arrays take ordinary pages
(:func:`ordinary_pages`; not ``trainproof data``'s), a parsed document's million objects are kept to
the end rather than freed one by one
(:func:`trainproof.io.collector.keep_dropped_to_exit`), and the process ends
without the interpreter's teardown (:func:`end_process`). Together 15-40 ms
of a small log's ``trainproof epoch`` and seconds of a ten-million-step one
(benchmarks/bench_startup.py, benchmarks/bench_readers.py).
``TRAINPROOF_PLAIN_PROCESS=1`` turns it all off (a plain Python process, to
compare against or to rule it out).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from trainproof.io.collector import keep_dropped_to_exit

PLAIN = "TRAINPROOF_PLAIN_PROCESS"
"""Set to 1, the process runs untuned."""


def run_tuned(main: Callable[[], int], short: bool, corpus: bool = False) -> int:
    """``main()`` in the tuned process when ``short`` (every command but ``watch``) and PLAIN is not set. A short
    command's process ends here with its code, so this returns only for ``watch``, with PLAIN set, or under a
    profiler or a debugger (``python -m cProfile -m trainproof ...`` writes its profile when this returns).
    ``corpus`` (``trainproof data``): large arrays are given back when freed (:func:`return_large_arrays`) rather than
    kept (:func:`keep_freed_memory`)."""
    import os

    tuned = short and os.environ.get(PLAIN, "") in ("", "0")
    if tuned:
        if corpus:  # its arrays are mapped afresh each time: huge pages make that a 512th of the page faults
            return_large_arrays()
        else:
            keep_freed_memory()
            ordinary_pages()
        arrow_returns_freed_memory()
        keep_dropped_to_exit()
    code = main()
    if tuned and sys.getprofile() is None and sys.gettrace() is None:  # a profiler or debugger writes its results on return
        end_process(code)
    return code


def end_process(code: int) -> None:
    """End the process with ``code`` now, without the interpreter's teardown, which frees every object one at a time
    (numpy's, polars', a million-point run's): 40 ms of a half-second ``trainproof epoch``, for memory the kernel
    takes back at once. What a clean exit does that matters is done first: other threads are waited for, the exit
    handlers registered with atexit run (logging's, a temporary folder's, Ray's shutdown, a coverage tool's), and
    stdout and stderr are flushed. Should any of that fail (a closed pipe), this returns, and the process exits the
    usual way, which says so as it always has."""
    import atexit
    import os
    import threading

    try:
        threading._shutdown()  # type: ignore[attr-defined]  # what the interpreter's exit does first: joins other threads
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 -- left to the usual exit
        return
    os._exit(code)


KEPT_FREED_BYTES = 1 << 30
"""Freed heap memory glibc keeps for reuse instead of returning it to the kernel (M_TRIM_THRESHOLD)."""


_USERS_OWN = ("GLIBC_TUNABLES", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")
"""Environment variables by which a user sets glibc's allocator: when one is set, it is left as they set it."""


def keep_freed_memory() -> None:
    """Make glibc reuse the memory a large log's arrays free, rather than hand it back and fault it in again.

    Reading a million-step log and judging it allocates and frees dozens of
    arrays of 1-80 MB. glibc maps each array over 32 MiB (and, its thresholds
    adapting only to what was freed, many smaller ones) on its own and unmaps
    it when it is freed, or trims the heap top under it, so the next array
    touches fresh pages. On a virtual machine a page fault costs microseconds:
    at ten million steps, with every full-length array an 80 MB mapping, that
    was 1.3 s of a 7 s ``trainproof epoch`` (benchmarks/bench_readers.py). So
    every allocation comes from the heap (no mapping of its own; glibc still
    maps memory when the heap cannot grow), and up to KEPT_FREED_BYTES freed
    is kept for the next one.
    Only the CLI's own process is set so (a library caller, or the training
    process of the HF callback, keeps its allocator), and nothing is done
    elsewhere than glibc, or when the user set the allocator themselves. It
    is an optimisation: whatever fails, the command runs as it would have.

    Not for ``trainproof data``: :func:`return_large_arrays` instead.
    """
    _mallopt(((_M_TRIM_THRESHOLD, KEPT_FREED_BYTES), (_M_MMAP_MAX, 0)))


MAPPED_FROM_BYTES = 128 * 1024
"""Allocations this large or larger are mapped on their own for ``trainproof data`` (glibc's default threshold, fixed)."""


def return_large_arrays() -> None:
    """For ``trainproof data``: every allocation of MAPPED_FROM_BYTES or more is mapped on its own and unmapped when
    freed, whatever was freed before.

    A corpus's driver holds its columns to the end while its rules build and
    drop others, and its peak is the bound at a million clips. glibc by
    default raises its mapping threshold to the size of each mapped block
    freed (up to 32 MiB), so the next columns of that size come from the
    heap, where freed ones stay behind the columns kept; a fixed threshold
    gives every column back. At 300,000 clips cold the driver peaked at
    378 MiB by default (375 kept as :func:`keep_freed_memory` keeps it) and
    324 MiB so, in the same time; warm, 5.5 s against 4.7 s kept.

    Each array so mapped is faulted in afresh, which the huge pages numpy
    asks for by default (for arrays of 4 MiB and more) make cheaper: numpy is
    left to ask for them (no :func:`ordinary_pages`). A warm re-run of a
    million clips, 19.5 s with ordinary pages, took 18.8 s so, at the same
    peak (750 MiB).
    """
    _mallopt(((_M_MMAP_THRESHOLD, MAPPED_FROM_BYTES),))


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_MMAP_MAX = -1, -3, -4


def _mallopt(settings: tuple[tuple[int, int], ...]) -> None:
    """glibc's ``mallopt`` of each (parameter, value), on Linux and when the user set no allocator parameter; whatever
    fails (no ctypes, another libc, a refused value), the allocator stays as it was: it is an optimisation."""
    import os

    if not sys.platform.startswith("linux") or any(name in os.environ for name in _USERS_OWN):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 -- glibc, whose mallopt these parameters are
        mallopt = libc.mallopt
        mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
        for parameter, value in settings:
            mallopt(parameter, value)
    except Exception:  # noqa: BLE001 -- the allocator stays as it was
        return


ARROW_POOL = "ARROW_DEFAULT_MEMORY_POOL"


def arrow_returns_freed_memory() -> None:
    """Have Arrow (pandas' string columns, Parquet and Arrow shards) allocate through the C library's allocator, not
    its own pool, unless the user chose a pool (ARROW_DEFAULT_MEMORY_POOL).

    Arrow's mimalloc or jemalloc pool keeps what a column it freed held, for
    Arrow alone: ``trainproof data`` builds and drops columns of every clip
    (a filter, a factorisation, a join of texts), and at 300,000 clips the
    memory the pool kept but no column used was a sixth of the driver's peak
    (746 against 637 MiB, benchmarks/bench_data.py part (s)). Through the C
    library the next column, Arrow's or numpy's, reuses it. Set before Arrow
    is first imported, so only the CLI's own process (and the decoding
    processes it starts) is set so.
    """
    import os

    os.environ.setdefault(ARROW_POOL, "system")


def ordinary_pages() -> None:
    """Stop numpy asking the kernel for huge pages under its large arrays (``madvise``), unless the user set
    NUMPY_MADVISE_HUGEPAGE.

    Where the kernel gives huge pages only on request (transparent huge pages
    "madvise", common), it also compacts memory to find one at the first touch
    of such an array, and a short process that writes a GiB of fresh arrays
    waits on it: at ten million steps, 0.4 s of a 4.2 s ``trainproof epoch``
    (benchmarks/bench_readers.py), and 0.05 s at a million. As
    :func:`keep_freed_memory`, only the CLI's own process is set so, and
    whatever fails leaves numpy as it was.
    """
    import os

    if "NUMPY_MADVISE_HUGEPAGE" in os.environ:
        return
    try:
        from numpy._core.multiarray import _set_madvise_hugepage  # type: ignore[attr-defined]
    except ImportError:
        try:
            from numpy.core.multiarray import _set_madvise_hugepage  # type: ignore[no-redef]  # numpy 1
        except ImportError:
            return
    try:
        _set_madvise_hugepage(False)
    except Exception:  # noqa: BLE001 -- numpy stays as it was
        return
