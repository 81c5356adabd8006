"""The plain-text verdict block: a header, then per input a line per finding with its evidence."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from trainproof import fmt
from trainproof.report import Finding, Level, Report, Subject, Verdict
from trainproof.safe import visible

_COLOURS = {"FAIL": "31;1", "WARN": "33;1", "PASS": "32;1", "INFO": "36", "NOT-CHECKED": "35;1"}


def _paint(text: str, key: str, colour: bool) -> str:
    return f"\x1b[{_COLOURS[key]}m{text}\x1b[0m" if colour and key in _COLOURS else text


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _describe(subject: Subject) -> str:
    summary = subject.summary
    if not subject.format:
        return ""
    parts = [f"{subject.format} log"]
    if summary.get("points"):
        unit = summary.get("step_unit") or "step"
        span = f"{unit}s {fmt.step(summary['first_step'])}-{fmt.step(summary['last_step'])}"
        if summary.get("max_steps"):
            span += f" of {fmt.step(summary['max_steps'])} scheduled"
        parts.append(f"'{summary['loss']}' over {summary['points']} points, {span}")
    if summary.get("eval_sets"):
        parts.append(f"eval: {summary['eval_sets']}")
    return visible("; ".join(parts))


def _subject_block(subject: Subject, colour: bool) -> list[str]:
    verdict = str(subject.verdict)
    role = " (baseline)" if subject.role == "baseline" else ""
    lines = [f"{_paint(verdict, verdict, colour)}  {visible(subject.path)}{role}"]
    described = _describe(subject)
    if described:
        lines.append(f"      {described}")
    if subject.summary.get("notes"):
        lines.append(f"      note: {visible(subject.summary['notes'])}")
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
    tag = _paint(f"[{finding.level.label}]", finding.level.label, colour)
    return [f"  {tag} {finding.rule_id}  {visible(finding.message)}", f"         Evidence: {visible(finding.evidence)}"]


def _compare_table(report: Report) -> list[str]:
    def cell(metrics: Mapping[str, object], key: str, show: Callable[[float], str]) -> str:
        value = metrics.get(key)
        return show(value) if isinstance(value, (int, float)) else "-"

    # The verdict leads each row: a path at the start of a line could pose as a CI workflow command.
    rows = [("verdict", "run", "floor", "end", "improved", "baseline improved")]
    for subject in report.judged:
        m = subject.metrics
        rows.append(
            (
                str(subject.verdict),
                visible(subject.path),
                cell(m, "floor_ratio", fmt.ratio),
                cell(m, "end_ratio", fmt.ratio),
                cell(m, "improvement", fmt.pct),
                cell(m, "baseline_improvement", fmt.pct),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]


def render(report: Report, colour: bool = False) -> str:
    verdict = str(report.verdict)
    judged = report.judged
    tally = [f"{sum(1 for s in judged if s.verdict is v)} {v.value}" for v in Verdict if any(s.verdict is v for s in judged)]
    header = f"trainproof {report.command}: {_paint(verdict, verdict, colour)}"
    lines = [f"{header}  ({_plural(len(judged), 'input')}: {', '.join(tally)})" if judged else header]
    if report.command == "compare":
        baseline = next((s for s in report.subjects if s.role == "baseline"), None)
        if baseline is not None:
            lines.append(f"baseline: {visible(baseline.path)}  [{baseline.verdict}]")
        lines.append("")
        lines.extend(_compare_table(report))
    for subject in report.subjects:
        lines.append("")
        lines.extend(_subject_block(subject, colour))
    counts = ", ".join(f"{sum(s.count(level) for s in judged)} {level.label}" for level in (Level.FAIL, Level.WARN, Level.INFO))
    lines.append("")
    lines.append(f"Findings: {counts}. Exit code {report.exit_code}.")
    return "\n".join(lines) + "\n"


def wants_colour(stream: object) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and not os.environ.get("NO_COLOR")
