"""One JSON document for the whole report; stable keys, non-finite numbers as strings."""

from __future__ import annotations

import json
import math
from typing import Any

from trainproof.report import Finding, Report, Subject

SCHEMA_VERSION = 1


def _number(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def _finding(finding: Finding) -> dict:
    out: dict = {
        "id": finding.rule_id,
        "level": finding.level.label,
        "title": finding.title,
        "message": finding.message,
        "evidence": finding.evidence,
        "values": {k: _number(v) for k, v in sorted(finding.values.items())},
        "steps": list(finding.steps),
    }
    if finding.line is not None:
        out["line"] = finding.line
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
    if subject.summary:
        out["summary"] = {k: _number(v) for k, v in subject.summary.items()}
    if subject.metrics:
        out["metrics"] = {k: _number(v) for k, v in sorted(subject.metrics.items())}
    out["findings"] = [_finding(f) for f in subject.findings]
    out["checks"] = {
        "ran": list(subject.ran),
        "skipped": [{"id": s.rule_id, "reason": s.reason} for s in subject.skipped],
    }
    return out


def report_dict(report: Report) -> dict:
    return {
        "schema_version": SCHEMA_VERSION,
        "trainproof_version": report.tool_version,
        "command": report.command,
        "verdict": report.verdict.value,
        "exit_code": report.exit_code,
        "subjects": [subject_dict(s) for s in report.subjects],
    }


def render(report: Report) -> str:
    return json.dumps(report_dict(report), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
