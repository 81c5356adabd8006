"""A Rust panic inside a tokenizer library, turned into one InputError naming the tokenizer, with nothing else on stderr.

pyo3 raises a panic of the ``tokenizers`` library (which transformers' fast
tokenizers run on) as ``pyo3_runtime.PanicException``, a BaseException, so
``except Exception`` misses it; and Rust's panic hook has already written
"thread ... panicked at ..." (and a backtrace, with RUST_BACKTRACE set) to
file descriptor 2, beneath Python's ``sys.stderr``. So each call into a
library is made with descriptor 2 pointed at a temporary file: what the call
wrote there (a library's warnings) is passed on to stderr afterwards, unless
it panicked.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from trainproof.io.errors import InputError

MAX_MESSAGE_CHARS = 300
"""A library's message (a panic's too) is cut to this many characters in an InputError."""


def one_line(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` on one line (the CLI prints one line per error), at most ``limit`` characters of it."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def said(exc: BaseException, limit: int = MAX_MESSAGE_CHARS) -> str:
    """A library's message on one line, at most ``limit`` characters of it, without its closing full stop; its
    class's name when it has none, or when it is a KeyError's (the bare key)."""
    text = " ".join(str(exc).split()).rstrip(".")
    if not text or isinstance(exc, KeyError):
        text = f"{type(exc).__name__} {text}".strip()
    return one_line(text, limit)


def panicked(exc: BaseException) -> bool:
    """Whether ``exc`` is a Rust panic raised through pyo3 (its class is made at run time, so it is known by name)."""
    return type(exc).__name__ == "PanicException" and not isinstance(exc, Exception)


@contextmanager
def guarded(path: str, doing: str) -> Iterator[None]:
    """A call into a tokenizer library; a panic in it is ``InputError(path, f"{doing}: the tokenizers library
    panicked (...)")``. KeyboardInterrupt and SystemExit pass through as they are."""
    with _stderr_held():
        try:
            yield
        except BaseException as exc:
            if not panicked(exc):
                raise
            with _Redirect.lock:
                _Redirect.keep = False  # what the spool caught is the panic's report: not passed on
            text = one_line(str(exc)) or "no message"
            raise InputError(path, f"{doing}: the tokenizers library panicked ({text})") from None


class _Redirect:
    """Descriptor 2 pointed at one spool while any guarded call runs, in any thread: the first call in redirects it,
    the last one out restores it (each call saving "the current descriptor 2" would let a call that ends last
    restore another's spool, and stderr would stay lost). What the spool caught is passed on unless a call in that
    window panicked."""

    lock = threading.Lock()
    depth = 0
    saved: int | None = None
    spool: IO[bytes] | None = None
    keep = True


@contextmanager
def _stderr_held() -> Iterator[None]:
    with _Redirect.lock:
        if _Redirect.depth == 0:
            _Redirect.saved, _Redirect.spool = _redirectable()
            _Redirect.keep = True
            if _Redirect.spool is not None:
                os.dup2(_Redirect.spool.fileno(), 2)
        _Redirect.depth += 1
    try:
        yield
    finally:
        with _Redirect.lock:
            _Redirect.depth -= 1
            if _Redirect.depth == 0 and _Redirect.saved is not None and _Redirect.spool is not None:
                saved, spool = _Redirect.saved, _Redirect.spool
                _Redirect.saved = _Redirect.spool = None
                _flush()
                os.dup2(saved, 2)
                os.close(saved)
                with spool:
                    if _Redirect.keep:
                        _replay(spool)


def _redirectable() -> tuple[int, IO[bytes]] | tuple[None, None]:
    """A copy of descriptor 2 to restore it from and a temporary file to point it at; (None, None) when there is no
    descriptor 2, or no temporary file can be made (the call is then made as it is)."""
    _flush()
    try:
        saved = os.dup(2)
    except OSError:
        return None, None
    try:
        return saved, tempfile.TemporaryFile()
    except OSError:
        os.close(saved)
        return None, None


def _flush() -> None:
    try:
        sys.stderr.flush()
    except (AttributeError, OSError, ValueError):  # no stderr (pythonw), or one closed
        pass


def _replay(spool: IO[bytes]) -> None:
    spool.seek(0)
    while chunk := spool.read(1 << 16):
        try:
            while chunk:
                chunk = chunk[os.write(2, chunk) :]
        except OSError:
            return
