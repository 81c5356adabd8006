"""The report every renderer draws: verdicts, findings, and which checks ran.

Frozen all the way down; renderers read it and never change it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from trainproof.errors import EXIT_ERROR, EXIT_FAIL, EXIT_OK
from trainproof.model import Run

Number = int | float


class Level(enum.IntEnum):
    """How much a finding matters. Only WARN and FAIL move a verdict."""

    INFO = 0
    WARN = 1
    FAIL = 2

    @property
    def label(self) -> str:
        return self.name


class Verdict(str, enum.Enum):
    PASS = "PASS"
    WARN = "WARN"
    FAIL = "FAIL"
    NOT_CHECKED = "NOT-CHECKED"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Finding:
    """One rule firing once: what, how bad, and the numbers and steps that prove it.

    ``message`` is one or more sentences whose first reads as a title;
    ``evidence`` is one line of the numbers behind it. ``line`` points into the
    input file when the finding is about a line of it (manifests).
    """

    rule_id: str
    level: Level
    message: str
    evidence: str
    values: Mapping[str, Number | str] = field(default_factory=dict)
    steps: tuple[int, ...] = ()
    line: int | None = None

    @property
    def title(self) -> str:
        head, _, _ = self.message.partition(". ")
        return head.rstrip(".")


@dataclass(frozen=True)
class Skipped:
    rule_id: str
    reason: str


@dataclass(frozen=True)
class Subject:
    """The judgement of one input.

    ``unjudged`` says why the input could not be judged (unreadable, or too
    little in it); with no WARN or FAIL finding that makes its verdict
    NOT-CHECKED. ``role`` is ``"baseline"`` for the known-good run of a
    ``compare``; a baseline's own verdict does not count toward the job's.
    """

    path: str
    format: str | None = None
    findings: tuple[Finding, ...] = ()
    ran: tuple[str, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    unjudged: str | None = None
    error: bool = False
    role: str = "run"
    baseline: str | None = None
    summary: Mapping[str, Number | str | None] = field(default_factory=dict)
    metrics: Mapping[str, Number | None] = field(default_factory=dict)
    run: Run | None = field(default=None, compare=False, repr=False)

    @property
    def verdict(self) -> Verdict:
        worst = max((f.level for f in self.findings), default=Level.INFO)
        if worst is Level.FAIL:
            return Verdict.FAIL
        if self.error or self.unjudged:
            return Verdict.NOT_CHECKED if worst is Level.INFO else Verdict(worst.name)
        return Verdict.WARN if worst is Level.WARN else Verdict.PASS

    def count(self, level: Level) -> int:
        return sum(1 for f in self.findings if f.level is level)


_ORDER = {Verdict.PASS: 0, Verdict.WARN: 1, Verdict.FAIL: 2}


@dataclass(frozen=True)
class Report:
    """Everything one command judged. ``fail_on`` (fail | warn | never) sets what exits 1."""

    command: str
    subjects: tuple[Subject, ...]
    tool_version: str
    fail_on: str = "fail"

    @property
    def judged(self) -> tuple[Subject, ...]:
        """The subjects whose verdict is the job's: every one but a baseline."""
        return tuple(s for s in self.subjects if s.role != "baseline")

    @property
    def verdict(self) -> Verdict:
        verdicts = [s.verdict for s in self.judged if s.verdict is not Verdict.NOT_CHECKED]
        if not verdicts:
            return Verdict.NOT_CHECKED
        return max(verdicts, key=_ORDER.__getitem__)

    @property
    def exit_code(self) -> int:
        """1 if anything fails by ``fail_on``; else 2 if anything could not be judged; else 0."""
        verdicts = [s.verdict for s in self.judged]
        failing = {"fail": {Verdict.FAIL}, "warn": {Verdict.FAIL, Verdict.WARN}, "never": set()}[self.fail_on]
        if failing.intersection(verdicts):
            return EXIT_FAIL
        if not verdicts or Verdict.NOT_CHECKED in verdicts:
            return EXIT_ERROR
        return EXIT_OK

    def fails(self, finding: Finding) -> bool:
        """Does this finding, at its level, fail the job under ``fail_on``?"""
        if self.fail_on == "never":
            return False
        return finding.level is Level.FAIL or (self.fail_on == "warn" and finding.level is Level.WARN)

    @property
    def findings(self) -> tuple[tuple[Subject, Finding], ...]:
        return tuple((s, f) for s in self.subjects for f in s.findings)
