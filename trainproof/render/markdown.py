"""Markdown for a pull-request comment or a job summary.

The first line is a hidden marker per command (``<!-- trainproof:epoch -->``)
so a workflow can find and update its own comment. Every string that comes
from the user's files (paths, eval-set names, checkpoint paths in messages)
is escaped for GitHub-flavoured markdown: HTML is inert, table pipes stay
in their cell, ``@mentions``, ``#123`` references and bare URLs do not ping or
link, and control and format characters are spelled out (``\\x1b``). A
rule's findings on one input are one row, their places listed in its cell
(see :mod:`trainproof.render.grouped`). The body never exceeds GitHub's
65,536 characters; rows that do not fit are counted at the end.

After the findings come the charts as Mermaid blocks, which GitHub draws
(:mod:`trainproof.render.mermaid`): a run's loss and eval loss, a run against
its baseline, a dataset's histograms, for the first MAX_CHARTED subjects
(those with a FAIL first, then a WARN) and as many as fit in what the findings
left of the size limit. ``charts=False`` (``--markdown-charts off``) leaves
them out.
"""

from __future__ import annotations

import re

from trainproof.io import figures
from trainproof.io.safe import visible
from trainproof.render.grouped import Block, blocks
from trainproof.report import Finding, Report, Subject, Table, location

MAX_CHARS = 65_536
MAX_CHARTED = 4
"""Subjects whose charts a comment carries, at most: enough for a run and its baseline, or a few datasets."""
ZERO_WIDTH_SPACE = "&#8203;"
_BACKSLASHED = re.compile(r"([\\`*_\[\]|~])")
_WWW = re.compile(r"(www)\.", re.IGNORECASE)


def marker(command: str) -> str:
    return f"<!-- trainproof:{command} -->"


def escape(text: str) -> str:
    """Inert GitHub-flavoured markdown for one table cell or line of user-derived text."""
    # First, so the backslashes it writes are escaped like any other and "\x1b" shows as in the text report; tab, CR
    # and LF are kept for the last line, which makes all white space one space.
    text = visible(text, keep="\t\n\r")
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _BACKSLASHED.sub(r"\\\1", text)
    text = re.sub(r"#(?=\d)", "#" + ZERO_WIDTH_SPACE, text)  # before the others: the entity they add has a "#8"
    text = text.replace("@", "@" + ZERO_WIDTH_SPACE)
    text = text.replace("://", ":" + ZERO_WIDTH_SPACE + "//")  # GitHub links bare http://, https:// and www. text
    text = _WWW.sub(r"\1" + ZERO_WIDTH_SPACE + ".", text)
    return " ".join(text.split())


def _where(subject: Subject, finding: Finding) -> str:
    path, line = location(subject, finding)
    return escape(f"{path}:{line}" if line else path) + (" (baseline)" if subject.role == "baseline" else "")


def _row(subject: Subject, block: Block, room: int) -> str | None:
    """A table row for one rule on one input: a single finding at its place, or several with a line each in the cell;
    within ``room`` characters, leaving out (and counting) the places that do not fit; None when not even its head does."""
    if not block.entries:
        where = _where(subject, block.findings[0])
    else:
        where = escape(subject.path) + (" (baseline)" if subject.role == "baseline" else "")
    head = f"| **{block.level.name}** | `{block.rule_id}` | {where} | {escape(block.message)}"
    head += f"<br>Evidence: {escape(block.evidence)}" if block.evidence else ""
    parts = []
    for entry in block.entries:
        level = f"**{entry.level.name}** " if entry.level is not None else ""
        place = "" if not entry.place else f"{escape(entry.place)} — "
        parts.append(f"<br>· {level}{place}{escape(entry.detail)}" + (f" Evidence: {escape(entry.evidence)}" if entry.evidence else ""))
    tail = f"<br>The same at {escape(block.same_at)}." if block.same_at else ""
    end = " |\n"
    row = head + "".join(parts) + tail + end
    if len(row) <= room:
        return row
    cut = "<br>_{} more place{} left out; see the full report._"
    size = len(head) + len(end) + len(cut) + 12
    kept = 0
    while kept < len(parts) and size + len(parts[kept]) <= room:
        size += len(parts[kept])
        kept += 1
    if size > room:
        return None
    left = len(block.findings) - kept
    return head + "".join(parts[:kept]) + cut.format(left, "s" if left != 1 else "") + end


def _tally(report: Report) -> str:
    judged = report.judged
    noun = "input" if len(judged) == 1 else "inputs"
    return f"{len(judged)} {noun}: {report.tally() or 'none'} · exit code {report.exit_code}"


def _table(table: Table, budget: int) -> str:
    """A table of figures (compare's ratios) as a markdown table, every cell escaped; rows that would pass ``budget``
    characters are left out and counted."""
    lines = ["| " + " | ".join(escape(cell) for cell in table.header) + " |", "|" + "---|" * len(table.header)]
    size = sum(len(line) + 1 for line in lines)
    kept = 0
    for row in table.rows:
        line = "| " + " | ".join(escape(cell) or "-" for cell in row) + " |"
        if size + len(line) + 1 > budget:
            break
        lines.append(line)
        size += len(line) + 1
        kept += 1
    if kept < len(table.rows):
        left = len(table.rows) - kept
        lines.append(f"\n_{left} more row{'s' if left != 1 else ''} left out; see the full report._")
    return "\n".join(lines) + "\n\n"


def _inputs(report: Report) -> str:
    lines = [
        "<details><summary>Inputs and checks</summary>\n",
        "| input | verdict | checks ran | skipped |",
        "|---|---|---|---|",
    ]
    for s in report.subjects:
        role = " (baseline)" if s.role == "baseline" else ""
        skipped = "; ".join(f"`{k.rule_id}`: {escape(k.reason)}" for k in s.skipped) or "-"
        verdict = s.verdict.value + (f": {escape(s.unjudged)}" if s.unjudged else "")
        lines.append(f"| {escape(s.path)}{role} | {verdict} | {len(s.ran)} | {skipped} |")
    lines.append("\n</details>\n")
    return "\n".join(lines)


def _charts(report: Report, budget: int) -> str:
    """The Mermaid blocks of the subjects most worth a look (FAIL first, then WARN, in report order), within ``budget``
    characters."""
    from trainproof.render.mermaid import subject_charts

    ranked = sorted(report.subjects, key=lambda s: -max((f.level for f in s.findings), default=0))
    out: list[str] = []
    size = 0
    for subject in [s for s in ranked if s.role != "baseline"][:MAX_CHARTED]:  # compare draws the baseline on its run's charts
        drawn = "\n\n".join(subject_charts(subject, report.command))
        if not drawn:
            continue
        part = f"**Charts of {escape(subject.path)}**\n\n{drawn}\n\n"
        if size + len(part) > budget:
            break
        out.append(part)
        size += len(part)
    return "".join(out)


def render(report: Report, max_chars: int = MAX_CHARS, charts: bool = True) -> str:
    head = (
        f"{marker(report.command)}\n"
        f"### trainproof {report.command}: {report.verdict.value}\n\n"
        f"{_tally(report)}\n\n"
    )
    summaries = {rule.id: rule.summary for rule in report.rules}
    findings = sorted(((s, b) for s in report.subjects for b in blocks(s, summaries)), key=lambda pair: -pair[1].level)
    table_head = "| level | rule | input | finding |\n|---|---|---|---|\n"
    details = _inputs(report)
    body = head
    if report.table is not None and report.table.rows:
        body += _table(report.table, (max_chars - len(head) - len(details)) // 2)
    if not findings:
        body += "No findings.\n\n"
    else:
        body += table_head
    reserve = len(details) + 200
    kept = 0
    for subject, block in findings:
        row = _row(subject, block, max_chars - len(body) - reserve)
        if row is None:
            break
        body += row
        kept += 1
    left_out = len(findings) - kept
    body += "\n"
    if charts and not left_out:
        body += _charts(report, max_chars - len(body) - len(details) - 200)
    if len(body) + len(details) + 120 <= max_chars:
        body += details
    if left_out:
        body += f"\n_{left_out} more finding{'s' if left_out != 1 else ''} left out to stay within {figures.step(max_chars)} characters; see the full report._\n"
    return body
