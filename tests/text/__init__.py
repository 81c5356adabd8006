"""Helpers shared by the text command's tests: judge a file, pick a rule's findings."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from trainproof.report import Finding, Subject


def judged(path: str | Path, **options: object) -> Subject:
    """The one subject of ``trainproof text PATH`` through the library API (options: tokenizer, max_len)."""
    from trainproof.commands import judge

    report = judge("text", [str(path)], **options)
    (subject,) = report.subjects
    return subject


def findings_of(subject: Subject, rule_id: str) -> list[Finding]:
    return [f for f in subject.findings if f.rule_id == rule_id]


def lines_of(findings: Sequence[Finding]) -> list[int | None]:
    return [f.line for f in findings]


def cites_a_number(text: str) -> bool:
    return re.search(r"\d", text) is not None
