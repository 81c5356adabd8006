"""``trainproof`` command line: parse, call the library, render, write, exit.

Exit codes (see :mod:`trainproof.io.errors`): 0 judged and no FAIL, 1 a FAIL,
2 could not judge (bad input, bad arguments, missing dependency, internal
error), always with one line on stderr and never a traceback unless
``--debug`` asks for it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

# Every command needs numpy; imported here, at the top of the stack, rather than eight imports deep (cli.epoch ->
# cli.common -> config -> readers -> model -> numpy), where CPython 3.11 maps and unmaps a frame-stack chunk on
# nearly every call numpy's import makes (about 900 munmap calls, 15 ms of a 110 ms `trainproof epoch`).
import numpy  # noqa: F401

from trainproof import __version__
from trainproof.io.collector import keep_dropped_to_exit
from trainproof.io.errors import EXIT_ERROR, MissingDependencyError, TrainproofError
from trainproof.io.safe import visible


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_ERROR, f"trainproof: error: {visible(message)} (see '{self.prog} --help')\n")


JUDGING_COMMANDS = ("epoch", "compare", "data", "tokenizer", "text")
"""The commands that judge inputs into a report with every output; the GitHub Action runs exactly these."""
COMMANDS = JUDGING_COMMANDS + ("watch", "rules")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; ``only`` builds just that subcommand (the rest cost time on every hook run)."""
    import importlib

    parser = _Parser(
        prog="trainproof",
        description="A deterministic linter for ML training runs: PASS / WARN / FAIL from the log a run already writes.",
        epilog="Exit codes: 0 judged, no FAIL; 1 at least one FAIL; 2 could not judge.",
    )
    parser.add_argument("--version", action="version", version=f"trainproof {__version__}")
    parser.add_argument("--debug", action="store_true", help="show a traceback on internal errors")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS if only is None else (only,):
        importlib.import_module(f"trainproof.cli.{name}").register(commands)
    return parser


def _command_in(argv: Sequence[str]) -> str | None:
    """The subcommand named on the command line, if it is the first non-option word."""
    for word in argv:
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def option_naming_a_file(argv: Sequence[str]) -> str | None:
    """The first word before ``--`` that reads as an option yet names a file or folder in the working directory.

    A hook or a workflow that expands a glob puts a committed file's name where
    options go unless ``--`` comes first: a file named ``--tokenizer=chat.jsonl``
    would choose the tokenizer, ``--json-file=x.jsonl`` where the report goes.
    Such a word is ambiguous, so it is refused rather than guessed at, whoever
    wrote the command line. ``-`` and ``--`` are the conventions, never options.
    """
    import os

    for word in argv:
        if word == "--":
            return None
        if word.startswith("-") and word != "-" and os.path.lexists(word):
            return word
    return None


def process_main() -> int:
    """The ``trainproof`` process (the console script and ``python -m trainproof``): :func:`main`, in a process set
    for a short command that builds and drops arrays of a million points: the allocator keeps what it frees (see
    :func:`keep_freed_memory`), arrays take ordinary pages (see :func:`ordinary_pages`), a parsed document's million
    objects are kept to the end rather than freed one by one (see :func:`trainproof.io.collector.keep_dropped_to_exit`),
    and the process ends without the interpreter's teardown (see :func:`end_process`), so it returns only for
    ``watch``, or under a profiler or a debugger (``python -m cProfile -m trainproof ...`` writes its profile when
    this returns). None of it for ``watch``, which runs beside a training job for as long as it does."""
    short = _command_in(sys.argv[1:]) != "watch"
    if short:
        keep_freed_memory()
        ordinary_pages()
        keep_dropped_to_exit()
    code = main()
    if short and sys.getprofile() is None and sys.gettrace() is None:  # a profiler or debugger writes its results on return
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
    """
    import os

    if not sys.platform.startswith("linux") or any(name in os.environ for name in _USERS_OWN):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 -- glibc, whose mallopt these parameters are
        mallopt = libc.mallopt
        mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
        m_trim_threshold, m_mmap_max = -1, -4
        mallopt(m_trim_threshold, KEPT_FREED_BYTES)
        mallopt(m_mmap_max, 0)
    except Exception:  # noqa: BLE001 -- no ctypes, another libc, a refused value: the allocator stays as it was
        return


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


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if (word := option_naming_a_file(argv)) is not None:
        command = _command_in(argv) or "COMMAND"
        print(
            f"trainproof: error: {visible(word)}: reads as an option but names a file or folder here; put -- before the paths "
            f"(trainproof {command} [OPTIONS] -- PATH...)",
            file=sys.stderr,
        )
        return EXIT_ERROR
    parser = build_parser(_command_in(argv))
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    try:
        return int(args.run(args))
    except MissingDependencyError as exc:
        from trainproof.cli.hints import missing_dependency

        print(f"trainproof: error: {visible(missing_dependency(exc, args.command))}", file=sys.stderr)
        return EXIT_ERROR
    except TrainproofError as exc:
        print(f"trainproof: error: {visible(exc)}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("trainproof: interrupted", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - the contract is one line, never a traceback
        if args.debug:
            raise
        print(f"trainproof: internal error: {type(exc).__name__}: {visible(exc)} (run with --debug for the traceback)", file=sys.stderr)
        return EXIT_ERROR
