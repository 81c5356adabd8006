"""One JSON document for the whole report; stable keys, non-finite numbers as strings, nothing that acts on a terminal raw."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainproof.render.shared import json_number, json_text
from trainproof.report import Finding, Report, Subject

SCHEMA_VERSION = 1


def _finding(finding: Finding) -> dict:
    out: dict = {
        "id": finding.rule_id,
        "level": finding.level.name,
        "title": finding.title,
        "message": finding.message,
        "evidence": finding.evidence,
        "values": {k: json_number(v) for k, v in sorted(finding.values.items())},
        "steps": list(finding.steps),
    }
    if finding.line is not None:
        out["line"] = finding.line
    if finding.file is not None:
        out["file"] = finding.file
    return out


def subject_dict(subject: Subject) -> dict:
    out: dict = {
        "path": subject.path,
        "role": subject.role,
        "format": subject.format,
        "verdict": subject.verdict.value,
    }
    if subject.unjudged:
        out["error" if subject.error else "not_judged"] = subject.unjudged
    if subject.baseline:
        out["baseline"] = subject.baseline
    if subject.folder is not None:
        out["folder"] = subject.folder
        out["relative"] = subject.relative
    if subject.summary:
        out["summary"] = {k: json_number(v) for k, v in subject.summary.items()}
    if subject.metrics:
        out["metrics"] = {k: json_number(v) for k, v in sorted(subject.metrics.items())}
    out["findings"] = [_finding(f) for f in subject.findings]
    out["checks"] = {
        "ran": list(subject.ran),
        "skipped": [{"id": s.rule_id, "reason": s.reason} for s in subject.skipped],
    }
    return out


def report_dict(report: Report) -> dict:
    document: dict = {
        "schema_version": SCHEMA_VERSION,
        "trainproof_version": report.tool_version,
        "command": report.command,
        "verdict": report.verdict.value,
        "exit_code": report.exit_code,
        "subjects": [subject_dict(s) for s in report.subjects],
    }
    if report.folders:
        document["folders"] = [{"path": f.path, "depth": f.depth, "not_searched": list(f.not_searched), "unread": list(f.unread)} for f in report.folders]
    return document


def render(report: Report, extra: Mapping[str, Any] | None = None) -> str:
    """The report as JSON; ``extra`` adds top-level keys (the HF callback's ``abort`` record)."""
    document = report_dict(report)
    document.update(extra or {})
    return json_text(document)
