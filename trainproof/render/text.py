"""The plain-text verdict block: a header, then per input a block per rule that found something, with its evidence.

A rule that found several things is one block, its places listed under it
(see :mod:`trainproof.render.grouped`); the closing ``Findings:`` line counts
these blocks, by their level.

When an input was a folder of several runs, the block ends with a table of
them, a line per run: its verdict, its FAIL and WARN counts, its path in the
folder, and why it could not be judged. Every row starts with the verdict,
so no file name starts a line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from trainproof.io.figures import plural
from trainproof.io.safe import visible
from trainproof.render.grouped import Block, blocks
from trainproof.report import Folder, Level, Report, Subject, Table, tally

_COLOURS = {"FAIL": "31;1", "WARN": "33;1", "PASS": "32;1", "INFO": "36", "NOT-CHECKED": "35;1"}


def _paint(text: str, key: str, colour: bool) -> str:
    return f"\x1b[{_COLOURS[key]}m{text}\x1b[0m" if colour and key in _COLOURS else text


def _subject_block(subject: Subject, colour: bool, summaries: Mapping[str, str]) -> list[str]:
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
    for block in blocks(subject, summaries):
        lines.extend(block_lines(block, colour))
    if subject.ran or subject.skipped:
        lines.append(f"  Checks ran ({len(subject.ran)}): {', '.join(subject.ran) or 'none'}")
        by_reason: dict[str, list[str]] = {}  # checks skipped for one reason share a line (a manifest listing no clip: 14)
        for skipped in subject.skipped:
            by_reason.setdefault(skipped.reason, []).append(skipped.rule_id)
        for reason, rule_ids in by_reason.items():
            lines.append(f"  Skipped {', '.join(rule_ids)}: {visible(reason)}")
    return lines


def block_lines(block: Block, colour: bool = False) -> list[str]:
    """One rule's findings on one input (see :mod:`trainproof.render.grouped`): the level, id and what they share,
    the evidence when it is one, then a line per place with what the finding says of it."""
    tag = _paint(f"[{block.level.name}]", block.level.name, colour)
    lines = [f"  {tag} {block.rule_id}  {visible(block.message)}"]
    if block.evidence:
        lines.append(f"         Evidence: {visible(block.evidence)}")
    for entry in block.entries:
        level = _paint(f"[{entry.level.name}] ", entry.level.name, colour) if entry.level is not None else ""
        place = "" if not entry.place else f"{visible(entry.place)}  "
        lines.append(f"         - {level}{place}{visible(entry.detail)}")
        if entry.evidence:
            lines.append(f"           Evidence: {visible(entry.evidence)}")
    if block.same_at:
        lines.append(f"         The same at {visible(block.same_at)}.")
    return lines


def _table(table: Table) -> list[str]:
    rows = [table.header] + [tuple(visible(cell) for cell in row) for row in table.rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(table.header))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]


def _baselines(report: Report) -> list[str]:
    """The header's line about the baseline: itself, or the folder of baseline runs each run was paired with."""
    baselines = [s for s in report.subjects if s.role == "baseline"]
    folders = {s.folder for s in baselines}
    if len(baselines) > 1 and len(folders) == 1 and None not in folders:
        return [f"baselines: {len(baselines)} runs in {visible(folders.pop())}, each compared with the run at its own path  [{tally(baselines)}]"]
    return [f"baseline: {visible(s.path)}  [{s.verdict}]" for s in baselines]


def _runs(report: Report, folder: Folder) -> list[str]:
    """A folder of runs: a line per run found in it, its verdict first."""
    runs = [s for s in report.judged if s.folder == folder.path]
    lines = [f"Runs in {visible(folder.path)}: {len(runs)} (searched {folder.depth} folder levels down)"]
    if folder.not_searched:
        shown = ", ".join(visible(path) for path in folder.not_searched[:3]) + (", ..." if len(folder.not_searched) > 3 else "")
        below = plural(len(folder.not_searched), "folder")
        lines.append(f"note: what lies below {below} at that depth was not searched ({shown}): name a deeper folder to judge any run in it")
    unread = folder.unread_note()
    if unread:
        lines.append(f"note: {visible(unread)}")
    reasons = any(s.unjudged for s in runs)
    header = ("verdict", "FAIL", "WARN", "run") + (("reason",) if reasons else ())
    rows = tuple(
        (str(s.verdict), str(s.count(Level.FAIL)), str(s.count(Level.WARN)), s.relative or s.path) + ((s.unjudged or "",) if reasons else ())
        for s in runs
    )
    return lines + _table(Table(header, rows))


def render(report: Report, colour: bool = False) -> str:
    verdict = str(report.verdict)
    judged = report.judged
    header = f"trainproof {report.command}: {_paint(verdict, verdict, colour)}"
    lines = [f"{header}  ({plural(len(judged), 'input')}: {report.tally()})" if judged else header]
    lines.extend(_baselines(report))
    if report.table is not None:
        lines.append("")
        lines.extend(_table(report.table))
    summaries = {rule.id: rule.summary for rule in report.rules}
    for subject in report.subjects:
        lines.append("")
        lines.extend(_subject_block(subject, colour, summaries))
    counts = ", ".join(f"{sum(s.count(level) for s in judged)} {level.name}" for level in (Level.FAIL, Level.WARN, Level.INFO))
    lines.append("")
    lines.append(f"Findings: {counts}. Exit code {report.exit_code}.")
    for folder in dict.fromkeys(report.folders):
        lines.append("")
        lines.extend(_runs(report, folder))
    return "\n".join(lines) + "\n"


def wants_colour(stream: object) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and not os.environ.get("NO_COLOR")
