"""Judging a run while it grows, for the HF callback and ``trainproof watch``.

Re-judging the whole history on every new record would cost O(n) per record.
Instead a run is judged when it first has GUARD_MIN_POINTS training-loss
points, then each time its history has grown by GUARD_JUDGE_GROWTH; a
judgement costs O(n), so each record costs amortised constant time. A
non-finite value is judged at once. Only the live rules run mid-way (see
``LIVE_RULE_IDS``); the end of a run gets every rule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from trainproof.checks.base import Rule
from trainproof.checks.registry import LIVE_RULES
from trainproof.commands.epoch import EPOCH
from trainproof.config import DEFAULT_SETTINGS, Settings
from trainproof.judge import Command, judge
from trainproof.report import Finding, Level, Report, Subject
from trainproof.runs.model import Run


class LiveJudge:
    """Decides when a growing run is judged, and keeps the last judgement."""

    def __init__(self, settings: Settings = DEFAULT_SETTINGS, rules: Sequence[Rule] = LIVE_RULES, command: Command = EPOCH) -> None:
        self.settings = settings
        self.rules = tuple(rules)
        self.command = command
        self.next_at = settings.thresholds.GUARD_MIN_POINTS
        self.nonfinite_seen = 0
        self.report: Report | None = None
        self.last: Subject | None = None
        self.judgements = 0

    def due(self, points: int, nonfinite: int = 0) -> bool:
        """Is a judgement due with ``points`` loss points and ``nonfinite`` non-finite values seen so far?"""
        return points >= self.next_at or nonfinite > self.nonfinite_seen

    def judge(self, run: Run, points: int, nonfinite: int = 0, **options: Any) -> Subject:
        """Judge ``run`` now by the live rules (``options`` go to the command: watch's idle time) and schedule the next."""
        growth = self.settings.thresholds.GUARD_JUDGE_GROWTH
        self.next_at = max(self.settings.thresholds.GUARD_MIN_POINTS, points + max(1, math.ceil(growth * points)))
        self.nonfinite_seen = nonfinite
        self.report = judge(self.command, [run], self.settings, only=frozenset(rule.id for rule in self.rules), **options)
        self.last = self.report.subjects[0]
        self.judgements += 1
        return self.last

    def failures(self) -> tuple[Finding, ...]:
        if self.last is None:
            return ()
        return tuple(f for f in self.last.findings if f.level is Level.FAIL)
