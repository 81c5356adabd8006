"""What a rule is, what it returns, and the context it reads."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Protocol

import numpy as np

from trainproof.checks.findings import Finding, Level, Number
from trainproof.checks.stats import Profile, profile
from trainproof.checks.thresholds import Thresholds
from trainproof.runs.model import Run, Series


class NotApplicable(Exception):
    """Raised by a rule that cannot judge this input; the message is the reason shown."""


@dataclass(frozen=True)
class Hit:
    """A rule's finding before the engine stamps it with the rule's id and level.

    ``level`` is set only by a rule whose findings can be milder than its
    default (TP-PLATEAU is an INFO note when the plateau was short).
    ``shared`` is the end of ``message`` about all the rule's hits (see
    :class:`~trainproof.report.Finding`).
    """

    message: str
    evidence: str
    values: Mapping[str, Number | str | None] = field(default_factory=dict)
    steps: tuple[int, ...] = ()
    level: Level | None = None
    line: int | None = None
    file: str | None = None
    shared: str = ""


def first_named(shown: int, total: int) -> str:
    """What the first of a rule's hits says of the places it names: 'the first 5 are named here and 144 more'."""
    named = "the first is" if shown == 1 else f"the first {shown:,} are"
    return f"{named} named here" + (f" and {total - shown:,} more" if total > shown else "")


def amended(hit: Hit, more: str, level: Level | None = None) -> Hit:
    """The hit with ``more`` added to what it says of its own place, before its shared sentences, at ``level`` if given."""
    head = hit.message[: len(hit.message) - len(hit.shared)].rstrip() if hit.shared else hit.message
    message = head + more + (f" {hit.shared}" if hit.shared else "")
    return replace(hit, message=message, level=hit.level if level is None else level)


class Context(Protocol):
    """What every command's rule context offers the engine; the rest is the command's own."""

    @property
    def t(self) -> Thresholds: ...

    @property
    def topic(self) -> str:
        """What a rule that defers to another says that rule already explains: "this curve"."""
        ...

    def locate(self, finding: Finding) -> Finding:
        """The finding with the file and line it points at filled in, when the context knows them."""
        ...


class RunContext:
    """One run and the summaries several rules share, computed once."""

    topic = "this curve"

    def __init__(self, run: Run, thresholds: Thresholds) -> None:
        self.run = run
        self.t = thresholds

    @cached_property
    def loss_profile(self) -> Profile | None:
        return None if self.run.loss is None else profile(self.run.loss, self.t)

    def curve(self) -> Profile:
        """The loss profile, or NotApplicable saying why the curve cannot be judged."""
        loss = self.run.loss
        if loss is None:
            raise NotApplicable("the log has no training loss")
        prof = self.loss_profile
        if prof is None:
            finite = int(loss.finite.sum())
            raise NotApplicable(f"only {finite} finite training-loss point{'s' if finite != 1 else ''} (needs {self.t.MIN_TREND_POINTS})")
        negative = int((prof.values < 0).sum())
        if negative:
            raise NotApplicable(
                f"the loss is negative at {negative} of {prof.n} points: an objective (RL, contrastive), not a loss that must fall"
            )
        return prof

    def series(self, name: str, label: str) -> Series:
        series = getattr(self.run, name)
        if series is None or not len(series):
            raise NotApplicable(f"the log has no {label}")
        return series

    def locate(self, finding: Finding) -> Finding:
        """A finding about steps points at the log line of its first step."""
        if finding.line is None and finding.steps:
            return replace(finding, line=self.run.line_of(finding.steps[0]))
        return finding


CheckFn = Callable[..., Iterable[Hit]]
SECTIONS = ("What it detects", "Why it matters", "Fires on", "Does not fire on", "Does not mean", "Thresholds")
_THRESHOLD_NAME = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*\b")


@dataclass(frozen=True)
class Rule:
    """A registered rule: a stable id, the level of its findings, and its check.

    The check's docstring is the rule's documentation: the first line is its
    summary, and every threshold it compares against is named in it.
    ``command`` is the command whose registry holds the rule. ``defers_to``
    names earlier rules that explain the same symptom better: when one of
    them fires on a subject, this rule is skipped there (ignoring that rule
    in the configuration lets this one speak again). ``chart`` names the
    chart of its subject on which its findings' steps are marked.
    """

    id: str
    level: Level
    check: CheckFn
    command: str
    defers_to: tuple[str, ...] = ()
    chart: str | None = None

    @property
    def doc(self) -> str:
        return inspect.cleandoc(self.check.__doc__ or "")

    @property
    def summary(self) -> str:
        return self.doc.split("\n", 1)[0]

    def sections(self) -> dict[str, str]:
        """The documentation's sections (What it detects, Why it matters, ...) as one line each."""
        out: dict[str, str] = {}
        current = None
        for line in self.doc.replace("``", "`").split("\n")[1:]:
            head, sep, rest = line.partition(":")
            if sep and head in SECTIONS:
                current = head
                out[current] = f"{out[current]} {rest.strip()}".strip() if current in out else rest.strip()
            elif current is not None and line.strip():
                out[current] = f"{out[current]} {line.strip()}"
        return out

    @property
    def thresholds(self) -> tuple[str, ...]:
        """Threshold names the documentation mentions, in order of first mention."""
        from trainproof.checks.thresholds import describe

        known = {t.name for t in describe()}
        seen: dict[str, None] = {}
        for name in _THRESHOLD_NAME.findall(self.doc):
            # A name with an underscore is meant as a threshold, known or not;
            # a single capitalised word only when it is one.
            if "_" in name or name in known:
                seen.setdefault(name, None)
        return tuple(seen)

    def stamp(self, hit: Hit, level: Level | None = None) -> Finding:
        """The Finding for one hit, at the configured ``level`` if one is given.

        A hit that set its own milder level (an INFO note) stays at most that
        mild: configuration can lower a finding's level below it, not raise it.
        """
        default = level if level is not None else self.level
        return Finding(
            rule_id=self.id,
            level=default if hit.level is None else min(hit.level, default),
            message=hit.message,
            evidence=hit.evidence,
            values=dict(hit.values),
            steps=tuple(int(s) for s in hit.steps),
            line=hit.line,
            file=hit.file,
            shared=hit.shared,
        )


def rules_of(command: str, table: Iterable[tuple[str, Level, CheckFn]]) -> tuple[Rule, ...]:
    """A command's rules from its (id, level, check) rows, in the order they run."""
    return tuple(Rule(rule_id, level, check, command) for rule_id, level, check in table)


def zero_tail(values: np.ndarray) -> int:
    """How many values at the end of the array are exactly zero."""
    end, chunk = values.size, 1024
    while end > 0:  # backwards, in growing chunks: a curve whose last value is not zero costs one chunk's comparison
        start = max(0, end - chunk)
        nonzero = np.flatnonzero(values[start:end] != 0)
        if nonzero.size:
            return values.size - 1 - (start + int(nonzero[-1]))
        end, chunk = start, chunk * 4
    return int(values.size)
