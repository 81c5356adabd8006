"""Bounded reading, shared by every reader of every subject: lines and blocks of a size limit, whole documents up to
one, files that are no regular file named as such."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import numpy as np

from trainproof.io.errors import InputError

Value = object

MAX_LINE_BYTES = 1024 * 1024
"""The longest line (or record) of a line-oriented log. Real log lines are a few hundred bytes; a longer one is
binary junk, the zero bytes a crash leaves at the end of a file, or a device that never ends, and is an InputError."""

MAX_DOCUMENT_BYTES = 512 * 1024 * 1024
"""The largest log read whole (``trainer_state.json``, a JSON array of records). A trainer_state.json of a million
logged steps is about 200 MB; anything larger is not one, and parsing it would take several times its size in memory."""

BLOCK_BYTES = 1024 * 1024
"""How much of a line-oriented log is read at a time."""

def size_text(n: int) -> str:
    """A byte count as people write limits: ``1 MiB``, ``512 MiB``, else ``1,000 bytes``."""
    return f"{n // 2**20} MiB" if n and n % 2**20 == 0 else f"{n:,} bytes"



class EmptyLog(InputError):
    """A log with nothing but whitespace in it ("is empty"): a reader of several files may skip one."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(path, "is empty")


def _unreadable(path: Path | str, exc: OSError) -> InputError:
    return InputError(path, f"cannot be read: {exc.strerror or exc}")


SPECIAL_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
"""How a file that is not a regular file is named in a message, by the test of its mode."""


def special_kind(mode: int) -> str:
    """What a file of ``mode`` that is neither a regular file nor a directory is ("a FIFO", "a character device"...)."""
    return next((what for test, what in SPECIAL_KINDS if test(mode)), "a special file")


@contextmanager
def open_log(path: Path, pipe: bool = False) -> Iterator[BinaryIO]:
    """A regular file opened for binary reading; failing to open it, or anything else (a FIFO, whose open blocks
    until a writer comes, maybe never; a device, which may never end), is an InputError. ``pipe``: a FIFO is read
    too, by a reader that reads its input once, as it comes (``<(...)`` always has a writer)."""
    try:
        info = path.stat()
    except OSError as exc:
        raise _unreadable(path, exc) from None
    except ValueError as exc:  # a NUL byte in the name
        raise InputError(path, f"cannot be read: {exc}") from None
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode) or (pipe and stat.S_ISFIFO(info.st_mode))):  # a directory fails to open
        why = ": a pipe is read once, as it is written, and trainproof reads a file more than once; save it to a file" if stat.S_ISFIFO(info.st_mode) else ""
        raise InputError(path, f"is not a regular file ({special_kind(info.st_mode)}){why}")
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise _unreadable(path, exc) from None
    with handle:
        yield handle


_CONTROL_BYTES = bytes(byte for byte in range(32) if byte not in (9, 10, 12, 13))


def mostly_binary(head: bytes, share: float) -> bool:
    """Whether more than ``share`` of these bytes are control bytes (other than tab, LF, FF and CR) or not UTF-8: the
    head of a file that is not text. (The control bytes are counted by deleting them, in C: a Python loop over a 64 KiB
    head cost 4 ms a manifest.)"""
    control = len(head) - len(head.translate(None, _CONTROL_BYTES))
    undecodable = head.decode("utf-8", errors="replace").count("\ufffd")
    return control > share * len(head) or undecodable > share * len(head)


def read_block(handle: BinaryIO, size: int, path: Path | str) -> bytes:
    """Up to ``size`` bytes; a read error (EIO, a file removed under a network mount) is an InputError."""
    try:
        return handle.read(size)
    except OSError as exc:
        raise _unreadable(path, exc) from None


def iter_lines(path: Path, first_block: int = BLOCK_BYTES, seen: set[str] | None = None) -> Iterator[tuple[int, str, bool]]:
    """The lines of a log as ``(number, text, ended)``, read in blocks: memory stays bounded whatever the file holds.

    Lines end at a newline (a trailing CR is dropped, so CRLF logs read the
    same) and are decoded as UTF-8, a bad byte becoming U+FFFD. ``ended`` is
    False only for a last line with no newline, which a writer may still be
    writing. A line longer than MAX_LINE_BYTES is an InputError as soon as it
    is that long, so 2 GB of zero bytes (or ``/dev/zero``) costs one line's
    worth of memory, not the file's; a file of nothing but whitespace "is
    empty". ``first_block``: the bytes read first (less for a reader that wants only the first lines; the rest are
    read BLOCK_BYTES at a time). ``seen``, when given, gets ``"cr"`` if a line held a CR (before it was dropped) and
    ``"replaced"`` if one held U+FFFD once decoded (a byte that is not UTF-8, or the character itself).
    """
    for first, texts, ended in iter_line_blocks(path, first_block, seen):
        for number, text in enumerate(texts, first):
            yield number, text, ended


def lines_flagged(data: bytes, table: bytes, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per line [start, end) of ``data``, whether any of its bytes is flagged by the translation ``table`` (256 bytes,
    1 for a flagged byte, 0 for a newline): one pass over the bytes (a ``translate``, then a reduceat from each line's
    start), not the position of every flagged byte, whatever share of them is flagged."""
    found = np.zeros(starts.size, dtype=bool)
    filled = ends > starts
    if filled.any():  # each filled line's segment runs to the next one's start: newlines and empty lines add nothing
        found[filled] = np.logical_or.reduceat(np.frombuffer(data.translate(table), dtype=np.bool_), starts[filled])
    return found


COUNT_STRIDE = 256 * 1024
"""How much of a block count_byte compares at a time: its flags stay in the CPU's cache."""


def count_byte(data: bytes | memoryview, byte: bytes) -> int:
    """How many times ``byte`` (one byte; any longer string is counted by ``bytes.count``) occurs in ``data`` (bytes,
    or a memoryview of them: a part of a large text without a copy). numpy compares a stride at a time into one reused array of flags:
    over a 64 MiB block that is 3-4x faster than ``bytes.count``, which at ten million lines counting newlines and
    colons was 0.7 s of the reading."""
    if len(data) <= COUNT_STRIDE or len(byte) != 1:
        return bytes(data).count(byte)
    content = np.frombuffer(data, dtype=np.uint8)
    flags = np.empty(COUNT_STRIDE, dtype=bool)
    total = 0
    for at in range(0, content.size, COUNT_STRIDE):
        part = content[at : at + COUNT_STRIDE]
        found = flags[: part.size]
        np.equal(part, byte[0], out=found)
        total += int(np.count_nonzero(found))
    return total


def _first_over_long(complete: bytes, block_size: int) -> int | None:
    """Which of the newline-separated lines of ``complete`` is the first longer than MAX_LINE_BYTES, or None. When the
    block just read is no longer than that, only the first line can be (every other lies within the block), so the
    lines are split only when it is: at 100,000 short lines, splitting every block was half the reading."""
    first = complete.find(b"\n")
    if block_size <= MAX_LINE_BYTES and (first if first >= 0 else len(complete)) <= MAX_LINE_BYTES:
        return None
    return next((k for k, line in enumerate(complete.split(b"\n")) if len(line) > MAX_LINE_BYTES), None)


def iter_line_blocks(path: Path, first_block: int = BLOCK_BYTES, seen: set[str] | None = None) -> Iterator[tuple[int, list[str], bool]]:
    """The lines of :func:`iter_lines`, a block at a time: ``(number of the first, texts, ended)``, for a reader that
    handles lines in bulk (100,000 transcripts) rather than one by one. ``seen``: as for :func:`iter_lines`."""
    number, pending, blank = 0, b"", True
    size = first_block
    with open_log(path) as handle:
        while block := read_block(handle, size, path):
            size = BLOCK_BYTES
            blank = blank and not block.strip()
            data = pending + block if pending else block
            cut = data.rfind(b"\n")
            complete, pending = (data[:cut], data[cut + 1 :]) if cut >= 0 else (None, data)
            over = None if complete is None else _first_over_long(complete, len(block))
            if complete is not None and over != 0:
                # a block's lines decoded at once (a newline never falls inside a UTF-8 sequence, so bad bytes are
                # replaced exactly as line by line): at 100,000 short lines, a decode per line was most of the reading
                kept = complete if over is None else b"\n".join(complete.split(b"\n")[:over])
                decoded = kept.decode("utf-8", errors="replace")
                texts = decoded.split("\n")
                if "\r" in decoded:
                    texts = [text.rstrip("\r") for text in texts]
                    if seen is not None:
                        seen.add("cr")
                if seen is not None and "\ufffd" in decoded:
                    seen.add("replaced")
                yield number + 1, texts, True
                number += len(texts)
            if over is not None:
                raise too_long(path, number + 1)
            if len(pending) > MAX_LINE_BYTES:
                raise too_long(path, number + 1)
    if blank:
        raise EmptyLog(path)
    if pending:
        last = pending.decode("utf-8", errors="replace")
        if seen is not None:
            seen.update(name for name, char in (("cr", "\r"), ("replaced", "\ufffd")) if char in last)
        yield number + 1, [last.rstrip("\r")], False


COLUMN_BLOCK_BYTES = 64 * 1024 * 1024
"""The most of a long log read as columns that is parsed at a time: large enough that the parser's threads share
the work and a call's cost is spread thin, small enough that the block and its parsed columns are a small part of a
long run's arrays."""
STEADY_BLOCK_BYTES = 16 * 1024 * 1024
"""The first block is 1-2 MiB (a file that is junk past its first lines is refused having read little of it), the next
ones this size; past it, each is an eighth of what was read before it, up to COLUMN_BLOCK_BYTES. Blocks, not the rest
of the file at once: each block's memory is reused by the next, where one read of a 120 MB log is 120 MB of fresh pages
(on a virtual machine, a tenth of a second, and twice the peak memory); and a block in proportion to the file, so a
ten-million-line log is parsed in tens of calls, not hundreds. (Blocks doubling from the first cost a call of the
parser each, tens of milliseconds, for nothing.)"""


def iter_blocks(path: Path, size: int = COLUMN_BLOCK_BYTES) -> Iterator[tuple[int, bytes, bool, int]]:
    """The complete lines of a log in blocks as ``(number of the first line, bytes ending with a newline, True, how
    many lines)``, then a last line with no newline as ``(number, bytes, False, 1)``. The first block is 1-2 MiB, the
    next ones grow up to ``size`` (see STEADY_BLOCK_BYTES).

    The limits of :func:`iter_lines` hold: a line longer than MAX_LINE_BYTES is an InputError (the lines before it
    are handed over first), and a file of nothing but whitespace "is empty".
    """
    number, pending, blank = 1, b"", True
    with open_log(path) as handle:
        sizes = _block_sizes(min(size, 2 * MAX_LINE_BYTES), size)
        while block := read_block(handle, next(sizes), path):
            blank = blank and not block.strip()
            if pending:
                data = pending + block
            elif len(block) > MAX_LINE_BYTES and (back := len(block) - block.rfind(b"\n") - 1) < len(block):
                # a partial last line is read again with the next block, not copied: each copy of a 64 MiB block
                # costs as much as polars takes to parse a tenth of it
                data = block
                if back:
                    handle.seek(-back, os.SEEK_CUR)
                    data = block[: len(block) - back]
            else:
                data = block
            cut = data.rfind(b"\n") + 1
            complete, pending = (data, b"") if cut == len(data) else (data[:cut], data[cut:])
            if complete:
                if _may_hold_a_long_line(complete):
                    ends = np.flatnonzero(np.frombuffer(complete, dtype=np.uint8) == 10)
                    over = np.flatnonzero(np.diff(ends, prepend=-1) - 1 > MAX_LINE_BYTES)
                    if over.size:
                        k = int(over[0])
                        if k:
                            yield number, complete[: int(ends[k - 1]) + 1], True, k
                        raise too_long(path, number + k)
                count = count_byte(complete, b"\n")
                yield number, complete, True, count
                number += count
            if len(pending) > MAX_LINE_BYTES:
                raise too_long(path, number)
    if blank:
        raise EmptyLog(path)
    if pending:
        yield number, pending, False, 1


def _block_sizes(first: int, most: int) -> Iterator[int]:
    """How much iter_blocks reads each time: ``first``, then STEADY_BLOCK_BYTES, growing to an eighth of what was read
    before, up to ``most`` (see STEADY_BLOCK_BYTES)."""
    yield first
    read = first
    while True:
        want = min(most, max(STEADY_BLOCK_BYTES, read // 8))
        yield want
        read += want


def _may_hold_a_long_line(data: bytes) -> bool:
    """Whether some stretch of half MAX_LINE_BYTES has no newline, which a line longer than MAX_LINE_BYTES must
    contain (a few searches that each stop at the first newline, where measuring every line reads the whole block)."""
    half = MAX_LINE_BYTES // 2
    return any(data.find(b"\n", at, at + half) < 0 for at in range(0, len(data) - half + 1, half))


def too_long(path: Path | str, number: int) -> InputError:
    return InputError(path, f"line {number} is longer than {size_text(MAX_LINE_BYTES)}: no log, manifest or transcript line is that long")


def read_document(path: Path) -> str:
    """A log read whole (a JSON document), refused beyond MAX_DOCUMENT_BYTES before it is read."""
    return read_document_bytes(path).decode("utf-8", errors="replace")


def read_document_bytes(path: Path) -> bytes:
    """The bytes of a log read whole, refused beyond MAX_DOCUMENT_BYTES before it is read."""
    limit = MAX_DOCUMENT_BYTES
    with open_log(path) as handle:
        try:
            size = os.fstat(handle.fileno()).st_size
        except OSError as exc:
            raise _unreadable(path, exc) from None
        if size <= limit:
            data = read_block(handle, limit + 1, path)  # bounded even when the size lies (a file still growing)
            size = len(data)
    if size > limit:
        raise InputError(path, f"is {size_text(size)}, over the {size_text(limit)} limit for a log read whole (a JSON document)")
    if not data or data.isspace():  # not data.strip(), which copies a document that ends in a newline
        raise EmptyLog(path)
    return data


def load_json(path: Path | str, text: str, where: str = "") -> object:
    """JSON text parsed, every way it can fail an InputError.

    ``where`` names the line of a JSON Lines log; without it ``text`` is a
    whole document, where an error at its very end means it was cut short.
    Python's decoder also fails, outside JSONDecodeError, on nesting deeper
    than its recursion limit and on integers of more than 4,300 digits.
    """
    subject = f"{where} " if where else ""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if where:
            problem = f"{where} is not valid JSON: {exc.msg}"
        elif exc.pos >= len(text.rstrip()) - 1:
            problem = "is truncated: the JSON ends before the document is complete"
        else:
            problem = f"is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    except RecursionError:
        problem = f"{subject}is nested too deeply"
    except ValueError:
        problem = f"{subject}has a number too large to read"
    raise InputError(path, problem)
