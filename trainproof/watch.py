"""Following a growing training log: read what was appended, judge when due, report each tick.

A tick reads only the bytes appended since the previous one; a partial last
line waits for its end. A file that shrank (truncated) or was replaced (a new
inode) is read afresh from the start. Line-oriented logs (JSONL, CSV, Coqui)
are parsed incrementally, so a tick costs what its new bytes cost, plus the
amortised share of the live judge (see :mod:`trainproof.live`). A
HuggingFace ``trainer_state.json`` is rewritten whole at every save, so it
is re-read whole when it changes.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from trainproof.checks.registry import LIVE_RULES
from trainproof.checks.watching import WATCH_RULES
from trainproof.config import DEFAULT_SETTINGS, Settings
from trainproof.errors import InputError
from trainproof.live import LiveJudge
from trainproof.model import Run
from trainproof.readers import READERS, SNIFF_BYTES, detect, read_run
from trainproof.readers.base import MAX_LINE_BYTES, too_long
from trainproof.report import Finding, Report, Subject, Verdict
from trainproof.safe import visible

_STALL_KEY = ("TP-LOG-STALLED", "WARN")


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


READ_AT_ONCE = 64 * 1024 * 1024
"""At most this many appended bytes are read by one poll, so memory stays bounded on a huge log."""
_WITNESS_BYTES = 1024
"""Bytes at the start of the file and just before the read offset, kept to notice a rewrite in place."""


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


@dataclass(frozen=True)
class Tick:
    """The state after one tick."""

    points: int
    subject: Subject | None
    new_findings: tuple[Finding, ...]
    restarted: bool
    grew: bool
    waiting: str | None = None

    @property
    def verdict(self) -> Verdict:
        return self.subject.verdict if self.subject is not None else Verdict.NOT_CHECKED


class Watcher:
    """Follows one log and judges it as it grows."""

    def __init__(
        self,
        path: str | Path,
        fmt: str | None = None,
        settings: Settings = DEFAULT_SETTINGS,
        stall_timeout: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = Path(path)
        self.fmt = fmt
        self.settings = settings
        self.stall_timeout = stall_timeout
        self.clock = clock
        self.follower = Follower(path)
        self.last_growth = clock()
        self._start()

    def _start(self) -> None:
        self.parser = None
        self.whole_file = False
        self.live = LiveJudge(self.settings, LIVE_RULES + WATCH_RULES, command="watch")
        self.reported: set[tuple[str, str]] = set()
        self.last: Subject | None = None
        self.run: Run | None = None
        self.stalled = False
        self.points = 0

    @property
    def report(self) -> Report | None:
        """The last judgement as a Report (None before the first): the verdict and exit code watch ends with."""
        return self.live.report

    def tick(self) -> Tick:
        chunk = self.follower.poll()
        if chunk.missing:
            return Tick(0, self.last, (), False, False, waiting=f"{visible(self.path)} does not exist (yet)")
        if chunk.problem is not None:
            self.follower = Follower(self.path)  # whatever comes back is a new log
            self._start()
            return Tick(0, None, (), True, False, waiting=f"{visible(self.path)} {chunk.problem}")
        restarted = grew = False
        while True:
            restarted, grew = restarted or chunk.restarted, grew or chunk.grew
            self._take(chunk)
            if not chunk.more:
                break
            chunk = self.follower.poll()  # the rest of a large append, a bounded read at a time
            if chunk.missing or chunk.problem is not None:
                break  # the next tick says so
        now = self.clock()
        if grew or restarted:
            self.last_growth = now
        fresh = None
        if self.whole_file:
            if grew or restarted:
                fresh = self._read_whole()
        elif self.parser is not None:
            fresh = self._snapshot()
        fell = False
        if fresh is not None:
            self.run = fresh
            points = len(fresh.loss) if fresh.loss is not None else 0
            fell, self.points = points < self.points, points
        if fell:  # the log restarted the run (or resumed it from an earlier checkpoint): what was said was of the old one
            self.reported.clear()
        new: tuple[Finding, ...] = ()
        if self.run is not None and (self._due(fresh is not None, now) or fell):
            self.last = self.live.judge(self.run, self.points, self._nonfinite, idle_s=now - self.last_growth, stall_timeout_s=self.stall_timeout)
            new = self._new_findings(self.last)
        waiting = None if self.last is not None or fresh is not None else "waiting for the first records"
        return Tick(self.points, self.last, new, restarted, grew, waiting)

    def _due(self, read: bool, now: float) -> bool:
        """Judge when the live judge is due on what was read, and when a stall begins or ends (once each)."""
        stalled = self.stall_timeout is not None and now - self.last_growth >= self.stall_timeout
        if stalled != self.stalled:
            self.stalled = stalled
            if not stalled:
                self.reported.discard(_STALL_KEY)  # the next stall is said again
            return True
        return read and (self.whole_file or self.live.due(self.points, self._nonfinite))

    @property
    def _nonfinite(self) -> int:
        """Non-finite values the line parser has seen (the live judge judges at once when one is new)."""
        return self.parser.builder.nonfinite_added if self.parser is not None else 0

    def _take(self, chunk: Chunk) -> None:
        """Feed one poll's lines to the parser, starting afresh when the file was."""
        if chunk.restarted:
            self._start()
        if self.parser is None and not self.whole_file and chunk.grew:
            self._choose_format()
        if self.parser is not None:
            for number, line in enumerate(chunk.lines, start=chunk.first_line):
                self.parser.feed(line, number)

    def _choose_format(self) -> None:
        head = self.follower.head()
        if not head.strip():
            return
        fmt = self.fmt or detect(self.path, head)
        reader = READERS[fmt]
        parser_class = reader.line_parser
        if parser_class is None:
            self.whole_file = True
            self.follower = _WholeFile(self.follower)
            return
        self.parser = parser_class(self.path, names=self.settings.names)

    def _snapshot(self) -> Run | None:
        try:
            return self.parser.build(copy=False)  # type: ignore[union-attr]
        except InputError:
            return None  # no loss yet: a header, or records without the columns so far

    def _read_whole(self) -> Run | None:
        try:
            return read_run(self.path, self.fmt, self.settings.names)
        except InputError:
            return None  # caught mid-write: the next change is read again

    def _new_findings(self, subject: Subject) -> tuple[Finding, ...]:
        """The findings of each rule that is new at its level (its worst): all of them, which the tick prints as one
        block, once; a rule is said again only when it rises to a higher level."""
        fresh: list[Finding] = []
        for group in subject.groups:
            key = (group.rule_id, group.level.name)
            if key not in self.reported:
                self.reported.add(key)
                fresh.extend(group.findings)
        return tuple(fresh)


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
