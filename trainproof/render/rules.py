"""The rule catalogue as text, JSON or a markdown table (the README's table comes from here)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import fields

from trainproof import fmt
from trainproof.checks.base import Rule
from trainproof.thresholds import Thresholds, describe


def _value(thresholds: Thresholds, name: str) -> str:
    value = getattr(thresholds, name)
    return fmt.num(value) if isinstance(value, float) else str(value)


def text(rules: Sequence[Rule], thresholds: Thresholds, full: bool = False) -> str:
    info = {t.name: t for t in describe()}
    lines = []
    for rule in rules:
        lines.append(f"{rule.id}  [{rule.level.label}]  ({rule.command})  {rule.summary}")
        for name in rule.thresholds:
            if name in info:
                lines.append(f"    {name} = {_value(thresholds, name)} {info[name].unit}")
        if full:
            lines.append("")
            lines.extend("    " + line if line else "" for line in rule.doc.split("\n")[1:])
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def as_json(rules: Sequence[Rule], thresholds: Thresholds) -> str:
    info = {t.name: t for t in describe()}
    doc = {
        "rules": [
            {
                "id": rule.id,
                "level": rule.level.label,
                "command": rule.command,
                "summary": rule.summary,
                "doc": rule.doc,
                "thresholds": [
                    {"name": n, "value": getattr(thresholds, n), "default": info[n].default, "unit": info[n].unit}
                    for n in rule.thresholds
                    if n in info
                ],
            }
            for rule in rules
        ],
        "thresholds": [
            {"name": f.name, "value": getattr(thresholds, f.name), "unit": f.metadata["unit"], "doc": f.metadata["doc"]}
            for f in fields(thresholds)
        ],
    }
    return json.dumps(doc, indent=2) + "\n"


def markdown_table(rules: Sequence[Rule], thresholds: Thresholds) -> str:
    rows = ["| id | level | command | what it detects | thresholds |", "|---|---|---|---|---|"]
    for rule in rules:
        names = ", ".join(f"`{n}`={_value(thresholds, n)}" for n in rule.thresholds)
        rows.append(f"| `{rule.id}` | {rule.level.label} | {rule.command} | {rule.summary} | {names} |")
    return "\n".join(rows) + "\n"


def formats_table() -> str:
    """The readers as a markdown table: ``--format`` name, what it reads, how it tells."""
    from trainproof.readers import READERS

    rows = ["| `--format` | reads | notes |", "|---|---|---|"]
    for name, reader in READERS.items():
        doc = (reader.__doc__ or "").strip().split("\n\n")
        notes = " ".join(doc[1].split()) if len(doc) > 1 else ""
        notes = re.sub(r":mod:`([^`]+)`", r"`\1`", notes.replace("``", "`")).replace("|", "\\|")
        rows.append(f"| `{name}` | {reader.description} | {notes} |")
    return "\n".join(rows) + "\n"
