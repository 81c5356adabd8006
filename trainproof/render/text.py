"""The plain-text verdict block: a header, then per input a line per finding with its evidence."""

from __future__ import annotations

import os

from trainproof.report import Finding, Level, Report, Subject, Table
from trainproof.safe import visible

_COLOURS = {"FAIL": "31;1", "WARN": "33;1", "PASS": "32;1", "INFO": "36", "NOT-CHECKED": "35;1"}


def _paint(text: str, key: str, colour: bool) -> str:
    return f"\x1b[{_COLOURS[key]}m{text}\x1b[0m" if colour and key in _COLOURS else text


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _subject_block(subject: Subject, colour: bool) -> list[str]:
    verdict = str(subject.verdict)
    role = " (baseline)" if subject.role == "baseline" else ""
    lines = [f"{_paint(verdict, verdict, colour)}  {visible(subject.path)}{role}"]
    if subject.headline:
        lines.append(f"      {visible(subject.headline)}")
    if subject.notes:
        lines.append(f"      note: {visible('; '.join(subject.notes))}")
    if subject.unjudged:
        label = "error" if subject.error else "not judged"
        lines.append(f"      {label}: {visible(subject.unjudged)}")
    for finding in subject.findings:
        lines.extend(finding_lines(finding, colour))
    if subject.ran or subject.skipped:
        lines.append(f"  Checks ran ({len(subject.ran)}): {', '.join(subject.ran) or 'none'}")
        for skipped in subject.skipped:
            lines.append(f"  Skipped {skipped.rule_id}: {visible(skipped.reason)}")
    return lines


def finding_lines(finding: Finding, colour: bool = False) -> list[str]:
    """One finding as the text report prints it: the level, id and message, then its evidence."""
    tag = _paint(f"[{finding.level.name}]", finding.level.name, colour)
    return [f"  {tag} {finding.rule_id}  {visible(finding.message)}", f"         Evidence: {visible(finding.evidence)}"]


def _table(table: Table) -> list[str]:
    rows = [table.header] + [tuple(visible(cell) for cell in row) for row in table.rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(table.header))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]


def render(report: Report, colour: bool = False) -> str:
    verdict = str(report.verdict)
    judged = report.judged
    header = f"trainproof {report.command}: {_paint(verdict, verdict, colour)}"
    lines = [f"{header}  ({_plural(len(judged), 'input')}: {report.tally()})" if judged else header]
    baseline = next((s for s in report.subjects if s.role == "baseline"), None)
    if baseline is not None:
        lines.append(f"baseline: {visible(baseline.path)}  [{baseline.verdict}]")
    if report.table is not None:
        lines.append("")
        lines.extend(_table(report.table))
    for subject in report.subjects:
        lines.append("")
        lines.extend(_subject_block(subject, colour))
    counts = ", ".join(f"{sum(s.count(level) for s in judged)} {level.name}" for level in (Level.FAIL, Level.WARN, Level.INFO))
    lines.append("")
    lines.append(f"Findings: {counts}. Exit code {report.exit_code}.")
    return "\n".join(lines) + "\n"


def wants_colour(stream: object) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and not os.environ.get("NO_COLOR")
