"""A subject's findings as the text, markdown and HTML reports show them: one block per rule, its places under it.

A rule that found one thing is one block as it always was: its message and
evidence. A rule that found several (the first lines of a file that hold
unknown tokens, each clip that is missing) is one block at the worst level
among them: the sentences they share once (how many there are, how many are
named), then each place with what the finding says of it. When they say the
same of every place but for the line they name, the first is shown and the
other places listed after it. Renderers escape what they print; nothing here
does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePath

from trainproof.io import figures
from trainproof.report import Finding, Group, Level, Subject


@dataclass(frozen=True)
class Entry:
    """One finding of a block of several: where ("" when it has no place, or its detail opens by naming it), what it
    says of that place, its evidence ("" when the block gives the evidence once), and its level when milder than the
    block's."""

    place: str
    detail: str
    evidence: str
    level: Level | None = None


@dataclass(frozen=True)
class Block:
    """What a report shows of one rule on one input: ``message`` once, ``evidence`` once when it is the same for every
    finding, the ``entries`` (none for a single finding), and ``same_at``, the places of findings that say what the
    last entry says."""

    rule_id: str
    level: Level
    message: str
    evidence: str
    entries: tuple[Entry, ...] = ()
    same_at: str = ""
    findings: tuple[Finding, ...] = ()


def blocks(subject: Subject, summaries: Mapping[str, str] | None = None) -> tuple[Block, ...]:
    """The subject's findings as blocks, a rule's findings in one; ``summaries`` (rule id to its one-line summary)
    head a block whose findings share no sentence."""
    return tuple(block(subject, group, (summaries or {}).get(group.rule_id, "")) for group in subject.groups)


def block(subject: Subject, group: Group, summary: str = "") -> Block:
    """One rule's findings on ``subject`` as a block; ``summary``, the rule's, heads it when they share no sentence."""
    findings = group.findings
    if len(findings) == 1:
        f = findings[0]
        return Block(f.rule_id, f.level, f.message, f.evidence, findings=findings)
    message = group.shared or summary or f"{len(findings)} findings."
    evidences = {f.evidence for f in findings}
    evidence = evidences.pop() if len(evidences) == 1 else ""

    def entry(f: Finding) -> Entry:
        place = _place(subject, f)
        return Entry(
            "" if _names_itself(place, f.detail) else place,
            f.detail,
            "" if evidence else f.evidence,
            f.level if f.level is not group.level else None,
        )

    masked = {(_masked(f, f.detail), _masked(f, f.evidence), f.level) for f in findings}
    places = [_place(subject, f) for f in findings]
    if len(masked) == 1 and all(places[1:]):
        return Block(group.rule_id, group.level, message, evidence, (entry(findings[0]),), _listed(places[1:]), findings)
    return Block(group.rule_id, group.level, message, evidence, tuple(entry(f) for f in findings), findings=findings)


def _place(subject: Subject, finding: Finding) -> str:
    """Where a finding points, short: ``line 13`` in the subject's own file, ``metadata.csv:5`` in a file under the
    subject's folder, the file's path elsewhere; a step when it has no line; "" when it has neither."""
    file = _under(finding.file, subject.path) if finding.file else ""
    if finding.line is not None:
        unit = "row" if subject.format in ("parquet", "arrow") else "line"  # a Parquet or Arrow row has a number, no line
        return f"{file}:{finding.line}" if file else f"{unit} {finding.line}"
    if file:
        return file
    return f"step {figures.step(finding.steps[0])}" if finding.steps else ""


def _under(file: str, subject: str) -> str:
    """``file`` relative to the subject's path when it lies under it; "" when it is the subject's own file."""
    if file == subject:
        return ""
    try:
        inside = PurePath(file).relative_to(PurePath(subject))
    except ValueError:
        return file
    return inside.as_posix() if inside.parts else ""


def _masked(finding: Finding, text: str) -> str:
    """``text`` with the finding's own line ("line 7", "Line 7") masked, to see whether two findings differ only there."""
    if finding.line is None:
        return text
    return re.sub(rf"\b([Ll]ine|[Rr]ow) {finding.line}\b", r"\1 #", text)


def _listed(places: list[str]) -> str:
    """``lines 7, 11 and 15`` for places in the subject's own file, else the places as they are, joined."""
    if all(p.startswith("line ") for p in places):
        numbers = [p.removeprefix("line ") for p in places]
        return ("lines " if len(numbers) > 1 else "line ") + _joined(numbers)
    return _joined(places)


def _joined(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _names_itself(place: str, detail: str) -> bool:
    """Does the detail open by naming its place ("Line 13 holds ..." at line 13), so the place need not be shown?"""
    return place.startswith("line ") and re.match(rf"[Ll]ine {re.escape(place[5:])}\b", detail) is not None
