"""``trainproof watch``: a growing log followed, judged when due by the live rules, each tick reported.

A tick reads only the bytes appended since the previous one; a partial last
line waits for its end. A file that shrank (truncated) or was replaced (a new
inode) is read afresh from the start. Line-oriented logs (JSONL, CSV, Coqui)
are parsed incrementally, so a tick costs what its new bytes cost, plus the
amortised share of the live judge (see :mod:`trainproof.commands.live`). A
HuggingFace ``trainer_state.json`` is rewritten whole at every save, so it
is re-read whole when it changes. A run directory (an HF output folder, a
TensorBoard or MLflow run, a Lightning version folder or ``lightning_logs``)
is followed as a whole (:class:`~trainproof.runs.follow.RunFolder`): read
again whole when any file of its run changes, waited for while it holds none.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainproof.checks.base import Rule, RunContext
from trainproof.checks.registry import LIVE_RULES, RULES
from trainproof.checks.watching import WATCH_RULES
from trainproof.commands.epoch import Epoch
from trainproof.commands.live import LiveJudge
from trainproof.config import DEFAULT_SETTINGS, Settings
from trainproof.io.errors import InputError
from trainproof.io.safe import visible
from trainproof.judge import Prepared, Stage
from trainproof.report import Finding, Report, Subject, Verdict
from trainproof.runs.follow import Chunk, Follower, RunFolder, _WholeFile
from trainproof.runs.model import Run
from trainproof.runs.readers import READERS, detect, read_run
from trainproof.runs.readers.base import LineParser

_STALL_KEY = ("TP-LOG-STALLED", "WARN")


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
        self.folder = self.path.is_dir()  # what it follows is fixed when it starts: a log file, or a run directory
        self.follower: Follower = RunFolder(path, fmt) if self.folder else Follower(path)
        self.last_growth = clock()
        self._start()

    def _start(self) -> None:
        self.parser: LineParser | None = None
        self.whole_file = False
        self.live = LiveJudge(self.settings, LIVE_RULES + WATCH_RULES, command=WATCH)
        self.reported: set[tuple[str, str]] = set()
        self.last: Subject | None = None
        self.run: Run | None = None
        self.stalled = False
        self.points = 0
        if isinstance(self.follower, RunFolder):
            self.whole_file = True  # a run directory is read whole when any file of its run changes

    @property
    def report(self) -> Report | None:
        """The last judgement as a Report (None before the first): the verdict and exit code watch ends with."""
        return self.live.report

    def tick(self) -> Tick:
        chunk = self.follower.poll()
        if chunk.missing:
            return Tick(0, self.last, (), False, False, waiting=f"{visible(self.path)} does not exist (yet)")
        if chunk.problem is not None:
            self.follower = RunFolder(self.path, self.fmt) if self.folder else Follower(self.path)  # whatever comes back is new
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
            assert self.parser is not None, "a snapshot is asked of a line-parsed log"
            return self.parser.build(copy=False)
        except InputError:
            return None  # no loss yet: a header, or records without the columns so far

    def _read_whole(self) -> Run | None:
        target = self.follower.target if isinstance(self.follower, RunFolder) else self.path
        if target is None:
            return None
        try:
            return read_run(target, self.fmt, self.settings.names)
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


class Watch(Epoch):
    """``trainproof watch``: a growing run by the live rules, and the watcher's own rules (a stall)."""

    name = "watch"

    @property
    def rules(self) -> tuple[Rule, ...]:
        return RULES["epoch"] + RULES["watch"]

    def prepare(self, settings: Settings, options: Mapping[str, Any]) -> Prepared:
        return Prepared(shared=(float(options.get("idle_s", 0.0)), options.get("stall_timeout_s")))

    def stages(self, run: Run, settings: Settings, prepared: Prepared) -> Sequence[Stage]:
        from trainproof.checks.watching import WatchContext

        ctx = RunContext(run, settings.thresholds)
        idle, timeout = prepared.shared
        return (Stage(RULES["epoch"], ctx), Stage(RULES["watch"], WatchContext(ctx, idle, timeout)))


WATCH = Watch()
