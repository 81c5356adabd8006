"""The report every renderer draws: verdicts, findings, and which checks ran.

Frozen all the way down; renderers read it and never change it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from trainproof.checks.findings import Finding, Level, Number
from trainproof.io.errors import EXIT_ERROR, EXIT_FAIL, EXIT_OK

if TYPE_CHECKING:
    from trainproof.checks.base import Rule


class Verdict(str, enum.Enum):
    PASS = "PASS"
    WARN = "WARN"
    FAIL = "FAIL"
    NOT_CHECKED = "NOT-CHECKED"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Group:
    """The findings of one rule on one input, which the text, markdown and HTML reports show as one block: at the
    worst level among them, their shared sentences once, then each place. SARIF, JUnit, annotations and JSON keep a
    result per finding, as code scanning and test reports want one per location."""

    findings: tuple[Finding, ...]

    @property
    def rule_id(self) -> str:
        return self.findings[0].rule_id

    @property
    def level(self) -> Level:
        return max(f.level for f in self.findings)

    @property
    def shared(self) -> str:
        return next((f.shared for f in self.findings if f.shared), "")


def grouped(findings: Sequence[Finding]) -> tuple[Group, ...]:
    """The findings by rule, each rule where its first finding is (a subject lists its worst findings first)."""
    by_rule: dict[str, list[Finding]] = {}
    for finding in findings:
        by_rule.setdefault(finding.rule_id, []).append(finding)
    return tuple(Group(tuple(found)) for found in by_rule.values())


@dataclass(frozen=True)
class Skipped:
    rule_id: str
    reason: str


@dataclass(frozen=True, eq=False)
class Line:
    """One plotted series of a chart."""

    label: str
    steps: np.ndarray
    values: np.ndarray
    css: str


@dataclass(frozen=True)
class Marker:
    """A finding's step marked on a chart."""

    step: int
    label: str
    level: str  # "FAIL", "WARN", "INFO"
    note: str


@dataclass(frozen=True)
class Point:
    """A level a finding cites, marked where it lies on its chart: ``value`` at ``step``, named as the finding's values
    name it (``start``, ``best``, ``end`` of TP-DIVERGE)."""

    step: int
    value: float
    name: str
    rule_id: str
    level: str  # "FAIL", "WARN", "INFO"


@dataclass(frozen=True, eq=False)
class Chart:
    """What one chart of a subject plots, decided by its command; renderers only draw it."""

    title: str
    lines: tuple[Line, ...]
    markers: tuple[Marker, ...] = ()
    x_range: tuple[int, int] | None = None
    log_y: bool | None = None  # None: the renderer picks a log axis when the values span decades
    x_label: str = "step"  # the step axis: "step", or "epoch" for logs that count epochs
    y_label: str = ""  # the value axis: the metric's name
    points: tuple[Point, ...] = ()  # the levels the marked findings cite, drawn as labelled dots


LOG_AXIS_SPAN = 10.0
"""A chart's value axis is log when its values span more than this factor (a decade); presentation only."""


def wants_log(*series: np.ndarray) -> bool:
    """A log value axis for these series together: every finite value positive, and the largest more than LOG_AXIS_SPAN
    times the smallest (a loss from 3.45 up to 1,300 and back to 159 is drawn log, one from 3 down to 0.5 linear). A
    zero or a negative value keeps the axis linear, since a log axis cannot place it. Deciding once for the union puts
    overlaid series on the same scale. Every chart of a report is decided here, by two passes over its values."""
    ys = np.concatenate([np.asarray(s, dtype=float).ravel() for s in series]) if series else np.empty(0)
    ys = ys[np.isfinite(ys)]
    if ys.size == 0:
        return False
    lo, hi = float(ys.min()), float(ys.max())
    return lo > 0 and hi > LOG_AXIS_SPAN * lo


@dataclass(frozen=True, eq=False)
class Histogram:
    """How a subject's items spread over one measure (a corpus's clip durations), those a rule flagged counted apart.

    ``edges`` are the bin edges (one more than the bins); ``passed``,
    ``warned`` and ``failed`` count, per bin, the items no rule flagged, those
    flagged at WARN and those flagged at FAIL. ``open_low`` and ``open_high``
    say that the first or last bin also holds every item beyond it (far
    outliers, kept from squeezing the rest into one bar). ``limits`` are
    values drawn as labelled vertical lines (a threshold, a fence, the
    median); ``note`` says what the colours mean.
    """

    title: str
    unit: str
    edges: np.ndarray
    passed: np.ndarray
    warned: np.ndarray
    failed: np.ndarray
    limits: tuple[tuple[float, str], ...] = ()
    note: str = ""
    open_low: bool = False
    open_high: bool = False
    y_label: str = "clips"  # what the bars count


@dataclass(frozen=True, eq=False)
class Bars:
    """Counts by name, the largest first (the characters a tokenizer cannot write alone), in the colour of the level
    of the finding they explain; ``note`` says what is counted and how many more there are."""

    title: str
    labels: tuple[str, ...]
    counts: tuple[int, ...]
    level: str  # "FAIL", "WARN", "INFO"
    note: str = ""
    x_label: str = "occurrences"


@dataclass(frozen=True, eq=False)
class FlaggedClip:
    """A clip the rules flagged, as a report shows it to be heard: where it is listed, its transcript, what was found
    (level, rule, message), and an excerpt: ``seconds`` of it from ``start_s`` (of ``total_s``), its waveform as
    ``low``/``high`` per column, and its audio (``mime`` bytes; None when left out or unreadable)."""

    id: str
    where: str
    transcript: str | None
    findings: tuple[tuple[str, str, str], ...]
    start_s: float = 0.0
    seconds: float = 0.0
    total_s: float = 0.0
    low: np.ndarray | None = None
    high: np.ndarray | None = None
    audio: bytes | None = None
    mime: str = ""


@dataclass(frozen=True)
class Table:
    """A table of figures across subjects (compare's ratios), its cells already formatted."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Subject:
    """The judgement of one input.

    ``unjudged`` says why the input could not be judged (unreadable, or too
    little in it); with no WARN or FAIL finding that makes its verdict
    NOT-CHECKED, and ``error`` says whether that was because it could not be
    read at all. ``role`` is ``"baseline"`` for the known-good run of a
    ``compare``; a baseline's own verdict does not count toward the job's.

    What a subject shows is decided by its command, not by the renderers:
    ``summary`` and ``metrics`` are plain label/value pairs (the JSON report
    carries them as they are), ``headline`` is one line describing the input,
    ``notes`` what its reader noticed, ``charts`` what to plot, ``clips`` the flagged clips to hear (a dataset's).

    A run found by searching a folder of runs names that folder, as given, in
    ``folder`` and its own path relative to it in ``relative`` (see
    :class:`Folder`).
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
    headline: str = ""
    notes: tuple[str, ...] = ()
    charts: tuple[Chart | Histogram | Bars, ...] = field(default=(), compare=False, repr=False)
    clips: tuple[FlaggedClip, ...] = field(default=(), compare=False, repr=False)
    folder: str | None = None
    relative: str | None = None

    @property
    def verdict(self) -> Verdict:
        worst = max((f.level for f in self.findings), default=Level.INFO)
        if worst is Level.FAIL:
            return Verdict.FAIL
        if self.error or self.unjudged:
            return Verdict.NOT_CHECKED if worst is Level.INFO else Verdict(worst.name)
        return Verdict.WARN if worst is Level.WARN else Verdict.PASS

    @property
    def groups(self) -> tuple[Group, ...]:
        return grouped(self.findings)

    def count(self, level: Level) -> int:
        """How many rules found something at this level, their worst: a rule's findings count once, as the text,
        markdown and HTML reports show them (SARIF and JUnit have an entry per finding)."""
        return sum(1 for g in self.groups if g.level is level)


@dataclass(frozen=True)
class Folder:
    """A folder given as one input and searched for runs, each judged as a subject of its own.

    ``path`` is the folder as given (the subjects found in it carry it as
    their ``folder``), ``depth`` how many levels below it were searched,
    ``not_searched`` the folders at that depth, relative to it, whose
    subfolders were left unsearched, and ``unread`` the JSON files, relative
    to it, that look like logs but that a search does not read, taken by the
    readers ``unread_formats``.
    """

    path: str
    depth: int
    not_searched: tuple[str, ...] = ()
    unread: tuple[str, ...] = ()
    unread_formats: tuple[str, ...] = ()

    def unread_note(self) -> str | None:
        """What a report says of the ``unread`` files (how many, the first three, how to judge one); None for none."""
        n = len(self.unread)
        if not n:
            return None
        shown = ", ".join(self.unread[:3]) + (", ..." if n > 3 else "")
        formats = " or ".join(f"--format {fmt}" for fmt in self.unread_formats)
        if n == 1:
            return f"1 JSON file ({shown}) looks like a training log, which a folder search does not read (it reads an HF log by its name, trainer_state.json): name it to judge it, with {formats}"
        return f"{n} JSON files ({shown}) look like training logs, which a folder search does not read (it reads an HF log by its name, trainer_state.json): name one to judge it, with {formats}"


_ORDER = {Verdict.PASS: 0, Verdict.WARN: 1, Verdict.FAIL: 2}


@dataclass(frozen=True)
class Report:
    """Everything one command judged. ``fail_on`` (fail | warn | never) sets what exits 1.

    ``rules`` are the rules the command applies, in registry order (SARIF
    describes each, the HTML report documents those that fired); ``table``
    is an optional table of figures across the subjects (compare's ratios);
    ``folders`` are the inputs that were folders of several runs.
    """

    command: str
    subjects: tuple[Subject, ...]
    tool_version: str
    fail_on: str = "fail"
    rules: tuple[Rule, ...] = field(default=(), compare=False, repr=False)
    table: Table | None = None
    folders: tuple[Folder, ...] = ()

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

    def tally(self) -> str:
        """``3 PASS, 1 FAIL``: how many judged subjects have each verdict, in verdict order."""
        return tally(self.judged)


def tally(subjects: Sequence[Subject]) -> str:
    """``3 PASS, 1 FAIL``: how many of these subjects have each verdict, in verdict order."""
    return ", ".join(f"{sum(1 for s in subjects if s.verdict is v)} {v.value}" for v in Verdict if any(s.verdict is v for s in subjects))


def location(subject: Subject, finding: Finding) -> tuple[str, int | None]:
    """The file and line a finding points at: its own file, else its subject's path."""
    return finding.file or subject.path, finding.line
