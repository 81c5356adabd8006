"""Following a growing training log: the bytes appended since the last look, a partial last line held back.

A file that shrank (truncated) or was replaced (a new inode) is read afresh
from the start. A HuggingFace ``trainer_state.json`` is rewritten whole at
every save, so it is followed whole (:class:`_WholeFile`).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from trainproof.io.bounded import MAX_LINE_BYTES, too_long
from trainproof.runs.readers import SNIFF_BYTES

READ_AT_ONCE = 64 * 1024 * 1024
"""At most this many appended bytes are read by one poll, so memory stays bounded on a huge log."""


_WITNESS_BYTES = 1024
"""Bytes at the start of the file and just before the read offset, kept to notice a rewrite in place."""


@dataclass(frozen=True)
class Chunk:
    """What one poll of the file found."""

    lines: tuple[str, ...] = ()
    first_line: int = 1
    restarted: bool = False
    grew: bool = False
    missing: bool = False
    problem: str | None = None
    """Why the path cannot be followed now (it became a directory, a FIFO, ...)."""
    more: bool = False
    """More appended bytes wait than one poll reads: poll again at once."""


def _not_a_file(info: os.stat_result) -> str | None:
    if stat.S_ISREG(info.st_mode):
        return None
    return "is a directory, not a log file" if stat.S_ISDIR(info.st_mode) else "is not a regular file"


class Follower:
    """Reads what was appended to a file since the last poll, line by line.

    A file that shrank, was replaced by another inode, or was rewritten in
    place (``cat bigger > log``: its first bytes or the bytes just before the
    offset differ from what was read) is read afresh from the start.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._reset()
        self.identity: tuple[int, int] | None = None

    def _reset(self) -> None:
        self.offset = 0
        self.partial = b""
        self.lines_read = 0
        self.head_witness = b""
        self.tail_witness = b""

    def _forget(self) -> None:
        """Start over as if the file were new: the next poll reads it from its start."""
        self.identity = None
        self._reset()

    def poll(self) -> Chunk:
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            return Chunk(missing=True)
        problem = _not_a_file(info)
        if problem is not None:
            self._forget()
            return Chunk(problem=problem)
        identity = (info.st_dev, info.st_ino)
        try:  # the file may go between the stat and the open (deleted, rotated away) or refuse to be read
            with self.path.open("rb") as handle:
                restarted = self.identity is not None and (
                    identity != self.identity or info.st_size < self.offset or self._rewritten(handle)
                )
                if restarted:
                    self._reset()
                self.identity = identity
                if info.st_size == self.offset:
                    return Chunk(restarted=restarted)
                handle.seek(self.offset)
                data = handle.read(min(info.st_size - self.offset, READ_AT_ONCE))
        except FileNotFoundError:
            return Chunk(missing=True)
        except OSError as exc:
            self._forget()
            return Chunk(problem=f"cannot be read ({exc.strerror or type(exc).__name__})")
        return self._split(data, restarted, more=self.offset + len(data) < info.st_size)

    def _rewritten(self, handle: BinaryIO) -> bool:
        if not self.offset:
            return False
        head = handle.read(len(self.head_witness))
        handle.seek(self.offset - len(self.tail_witness))
        return head != self.head_witness or handle.read(len(self.tail_witness)) != self.tail_witness

    def _split(self, data: bytes, restarted: bool, more: bool) -> Chunk:
        if len(self.head_witness) < _WITNESS_BYTES:
            self.head_witness = (self.head_witness + data)[:_WITNESS_BYTES]
        self.tail_witness = (self.tail_witness + data)[-_WITNESS_BYTES:]
        self.offset += len(data)
        pieces = (self.partial + data).split(b"\n")
        self.partial = pieces.pop()  # empty when the data ended with a newline
        first = self.lines_read + 1
        self.lines_read += len(pieces)
        if len(self.partial) > MAX_LINE_BYTES or any(len(p) > MAX_LINE_BYTES for p in pieces):
            long = next((first + i for i, p in enumerate(pieces) if len(p) > MAX_LINE_BYTES), self.lines_read + 1)
            raise too_long(self.path, long)
        lines = tuple(p.decode("utf-8", errors="replace").rstrip("\r") for p in pieces)
        return Chunk(lines=lines, first_line=first, restarted=restarted, grew=True, more=more)

    def head(self) -> str:
        """The first bytes of the file, to tell its format; nothing when it went (or cannot be read) since the poll, and
        then the next poll reads it from the start again, as a new file."""
        try:
            with self.path.open("rb") as handle:
                return handle.read(SNIFF_BYTES).decode("utf-8", errors="replace")
        except OSError:
            self._forget()
            return ""


class _WholeFile(Follower):
    """For logs rewritten whole (trainer_state.json): a change means read it all again."""

    def __init__(self, previous: Follower) -> None:
        super().__init__(previous.path)
        self.signature: tuple[int, int, int] | None = None

    def poll(self) -> Chunk:
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            return Chunk(missing=True)
        problem = _not_a_file(info)
        if problem is not None:
            return Chunk(problem=problem)
        signature = (info.st_ino, info.st_size, info.st_mtime_ns)
        grew = signature != self.signature
        self.signature = signature
        return Chunk(grew=grew)


_VERSION = re.compile(r"version_(\d{1,18})")


class RunFolder(Follower):
    """A run directory, followed as a whole: an HF output folder (its newest ``checkpoint-*/trainer_state.json`` as
    it appears), a TensorBoard or MLflow run directory (every event or metric file, new ones and appended records), a
    Lightning ``version_N`` folder, or the ``lightning_logs`` folder above them (its newest version: a new one is a new
    run). Each poll finds the run's log the way ``trainproof epoch`` does (``find_log``) and says the run changed
    when any file of it did (name, size, modification time); the run is then read again whole, which is what a
    checkpoint rewritten whole asks and what an event file costs to re-read. A folder with no run yet is waited for.
    """

    def __init__(self, path: str | Path, fmt: str | None = None) -> None:
        super().__init__(path)
        self.fmt = fmt
        self.signature: tuple[tuple[str, int, int], ...] | None = None
        self.target: Path | None = None
        self.version: Path | None = None

    def poll(self) -> Chunk:
        from trainproof.io.errors import InputError
        from trainproof.runs.readers import READERS, find_log, run_dir_format

        if not self.path.is_dir():
            return Chunk(missing=True) if not self.path.exists() else Chunk(problem="is no longer a directory")
        folder = self._newest_version() or self.path
        try:
            target = find_log(folder, self.fmt)
        except InputError:
            return Chunk()  # no run in it yet: waited for
        files = [target]
        if target.is_dir():
            fmt = self.fmt or run_dir_format(target)
            files = READERS[fmt].run_files(target) if fmt is not None else []
        signature = tuple(sorted(_stamp(p) for p in files))
        restarted = self.version is not None and folder != self.version
        grew = signature != self.signature
        self.signature, self.target, self.version = signature, target, folder
        return Chunk(grew=grew, restarted=restarted)

    def _newest_version(self) -> Path | None:
        """The highest ``version_N`` folder in a ``lightning_logs`` folder (None in any other folder)."""
        try:
            versions = [(int(m.group(1)), p) for p in self.path.iterdir() if p.is_dir() and (m := _VERSION.fullmatch(p.name))]
        except OSError:
            return None
        return max(versions)[1] if versions else None

    def head(self) -> str:
        return ""


def _stamp(path: Path) -> tuple[str, int, int]:
    try:
        info = os.stat(path)
    except OSError:
        return (str(path), -1, -1)
    return (str(path), info.st_size, info.st_mtime_ns)
