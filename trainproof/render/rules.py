"""The rule catalogue as text, JSON or a markdown table (the README's table comes from here)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from trainproof.checks.base import Rule
from trainproof.checks.thresholds import Thresholds, describe
from trainproof.config import Settings
from trainproof.io import figures


def _value(thresholds: Thresholds, name: str) -> str:
    value = getattr(thresholds, name)
    return figures.num(value) if isinstance(value, float) else str(value)


def _unit(shown: str, unit: str) -> str:
    """A threshold's unit (named in the plural) as the value printed before it asks: '2 seconds', '1 second', '1 step
    of the printed digit', '1 token per word'."""
    if shown != "1":
        return unit
    head, sep, tail = unit.partition(" of ") if " of " in unit else unit.partition(" per ")
    return (head[:-1] if head.endswith("s") else head) + sep + tail


def deferral(rule: Rule, code: bool = False) -> str:
    """How a rule gives way to others, said where the rules are listed (ids in backticks for markdown)."""
    ids = ", ".join(f"`{other}`" if code else other for other in rule.defers_to)
    return (
        f"Defers to {ids}: skipped where one of them fired, which explains the same symptom better "
        "(ignoring that rule in the configuration lets this one fire again)."
    )


def text(rules: Sequence[Rule], settings: Settings, full: bool = False) -> str:
    """Each rule's effective level and thresholds, and where a non-default one came from."""
    info = {t.name: t for t in describe()}
    thresholds = settings.thresholds
    lines = []
    if settings.source:
        lines.append(f"configuration: {settings.source}")
        lines.append("")
    for rule in rules:
        level = settings.levels.get(rule.id, rule.level)
        note = ""
        if rule.id in settings.levels:
            note = f"  (level set by {settings.origin(f'level:{rule.id}')}; default {rule.level.name})"
        if not settings.enabled(rule.id):
            note += f"  (disabled by {settings.source})"
        lines.append(f"{rule.id}  [{level.name}]  ({rule.command})  {rule.summary}{note}")
        if rule.defers_to:
            lines.append(f"    {deferral(rule)}")
        for name in rule.thresholds:
            if name in info:
                origin = settings.origin(name)
                where = "" if origin == "default" else f"  (from {origin}; default {figures.num(info[name].default) if isinstance(info[name].default, float) else info[name].default})"
                shown = _value(thresholds, name)
                lines.append(f"    {name} = {shown} {_unit(shown, info[name].unit)}{where}")
        if full:
            lines.append("")
            lines.extend("    " + line if line else "" for line in rule.doc.split("\n")[1:])
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def as_json(rules: Sequence[Rule], settings: Settings) -> str:
    info = {t.name: t for t in describe()}
    thresholds = settings.thresholds
    doc = {
        "configuration": settings.source,
        "fail_on": settings.fail_on,
        "rules": [
            {
                "id": rule.id,
                "level": settings.levels.get(rule.id, rule.level).name,
                "default_level": rule.level.name,
                "level_source": settings.origin(f"level:{rule.id}"),
                "enabled": settings.enabled(rule.id),
                "command": rule.command,
                "defers_to": list(rule.defers_to),
                "summary": rule.summary,
                "doc": rule.doc,
                "thresholds": [
                    {"name": n, "value": getattr(thresholds, n), "default": info[n].default, "unit": info[n].unit, "source": settings.origin(n)}
                    for n in rule.thresholds
                    if n in info
                ],
            }
            for rule in rules
        ],
        "thresholds": [
            {
                "name": t.name,
                "value": getattr(thresholds, t.name),
                "default": t.default,
                "unit": t.unit,
                "range": str(t.range),
                "doc": t.doc,
                "source": settings.origin(t.name),
            }
            for t in describe()
        ],
    }
    return json.dumps(doc, indent=2) + "\n"


def markdown_table(rules: Sequence[Rule], thresholds: Thresholds) -> str:
    rows = ["| id | level | command | what it detects | thresholds |", "|---|---|---|---|---|"]
    for rule in rules:
        names = ", ".join(f"`{n}`={_value(thresholds, n)}" for n in rule.thresholds)
        rows.append(f"| `{rule.id}` | {rule.level.name} | {rule.command} | {rule.summary} | {names} |")
    return "\n".join(rows) + "\n"


def formats_table() -> str:
    """The readers as a markdown table: ``--format`` name, what it reads, how it tells."""
    from trainproof.runs.readers import READERS

    rows = ["| `--format` | reads | notes |", "|---|---|---|"]
    for name, reader in READERS.items():
        doc = (reader.__doc__ or "").strip().split("\n\n")
        notes = " ".join(doc[1].split()) if len(doc) > 1 else ""
        notes = re.sub(r":mod:`([^`]+)`", r"`\1`", notes.replace("``", "`")).replace("|", "\\|")
        rows.append(f"| `{name}` | {reader.description} | {notes} |")
    return "\n".join(rows) + "\n"


def rules_document(rules: Sequence[Rule], thresholds: Thresholds) -> str:
    """docs/rules.md: every rule's full documentation, one anchor per id (SARIF helpUri points here)."""
    info = {t.name: t for t in describe()}
    out = [
        "# trainproof rules",
        "",
        "Generated from the rule registry (`trainproof rules ID` prints the same); do not edit by hand.",
        "",
    ]
    for rule in rules:
        out += [f"## {rule.id}", "", f"**{rule.summary}**", "", f"Level: {rule.level.name}. Command: `{rule.command}`.", ""]
        if rule.defers_to:
            out += [deferral(rule, code=True), ""]
        for head, body in rule.sections().items():
            if head != "Thresholds":
                out += [f"**{head}:** {body}", ""]
        if rule.thresholds:
            out.append("| threshold | default | unit | meaning |")
            out.append("|---|---|---|---|")
            for name in rule.thresholds:
                if name in info:
                    meaning = info[name].doc.replace("|", "\\|")
                    out.append(f"| `{name}` | {_value(thresholds, name)} | {info[name].unit} | {meaning} |")
            out.append("")
    return "\n".join(out).rstrip() + "\n"
