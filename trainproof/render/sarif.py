"""SARIF 2.1.0 for GitHub code scanning: one run, every referenced rule described, results located.

Deterministic: no timestamps, no absolute paths for inputs under the working
directory, results in report order, fingerprints from stable fields only.
GitHub keeps at most 5,000 results per run; past that the most severe are
kept and the cut is reported in the run's properties and notifications.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

from trainproof.io.about import HOMEPAGE
from trainproof.checks.base import Rule
from trainproof.render.shared import json_number, json_text, relative
from trainproof.report import Finding, Level, Report, Subject, location

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
MAX_RESULTS = 5000
LEVELS = {Level.FAIL: "error", Level.WARN: "warning", Level.INFO: "note"}
RULES_DOC = f"{HOMEPAGE}/blob/main/docs/rules.md"


def rules_for(report: Report) -> tuple[Rule, ...]:
    """The command's rules, in registry order, so a rule keeps its index from run to run."""
    return report.rules


def artifact_uri(path: str, base: str | None) -> str:
    """A URI for an input: relative to ``base`` (the working directory) when it lies under it."""
    under = relative(path, base)
    return _quoted(under) if under is not None else "file://" + _quoted(Path(path).as_posix())


def _quoted(posix: str) -> str:
    """Percent-encode a path's bytes; a name that is not UTF-8 keeps its original bytes."""
    try:
        raw = posix.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = posix.encode("utf-8", "surrogatepass")
    return quote(raw, safe="/")


def rule_descriptor(rule: Rule) -> dict:
    anchor = rule.id.lower()
    body = "\n".join(rule.doc.split("\n")[1:]).strip()
    return {
        "id": rule.id,
        "name": "".join(part.capitalize() for part in rule.id.split("-")[1:]),
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.sections().get("What it detects", rule.summary)},
        "help": {"text": body, "markdown": f"**{rule.summary}**\n\n{body}"},
        "helpUri": f"{RULES_DOC}#{anchor}",
        "defaultConfiguration": {"level": LEVELS[rule.level]},
        "properties": {"tags": ["ml-training", "reliability", rule.command]},
    }


def _fingerprint(subject: Subject, finding: Finding, uri: str) -> str:
    key = "|".join([finding.rule_id, uri, ",".join(str(s) for s in finding.steps[:2]), str(finding.line or "")])
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def _result(subject: Subject, finding: Finding, index: dict[str, int], base: str | None) -> dict:
    path, line = location(subject, finding)
    uri = artifact_uri(path, base)
    place: dict[str, Any] = {"physicalLocation": {"artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"}, "region": {"startLine": line or 1}}}
    if uri.startswith("file:"):
        del place["physicalLocation"]["artifactLocation"]["uriBaseId"]
    result = {
        "ruleId": finding.rule_id,
        "ruleIndex": index.get(finding.rule_id),
        "level": LEVELS[finding.level],
        "message": {"text": f"{finding.message}\nEvidence: {finding.evidence}"},
        "locations": [place],
        "partialFingerprints": {"trainproofFinding/v1": _fingerprint(subject, finding, uri)},
        "properties": {"role": subject.role, "steps": list(finding.steps), "values": {key: json_number(value) for key, value in sorted(finding.values.items())}},
    }
    if result["ruleIndex"] is None:  # a report built by hand without its command's rules: no descriptor to point at
        del result["ruleIndex"]
    return result


def render(report: Report, base: str | None = None) -> str:
    base = base if base is not None else os.getcwd()
    rules = rules_for(report)
    index = {rule.id: i for i, rule in enumerate(rules)}
    ordered = sorted(report.findings, key=lambda pair: -pair[1].level)  # stable: report order within a level
    kept = ordered[:MAX_RESULTS]
    omitted = len(ordered) - len(kept)
    kept_ids = {id(f) for _, f in kept}
    results = [_result(s, f, index, base) for s, f in report.findings if id(f) in kept_ids]
    notifications = []
    for subject in report.subjects:
        if subject.unjudged:
            notifications.append(
                {
                    "level": "error" if subject.error else "warning",
                    "message": {"text": f"{subject.path}: {subject.unjudged}"},
                    "locations": [{"physicalLocation": {"artifactLocation": {"uri": artifact_uri(subject.path, base)}}}],
                }
            )
    if omitted:
        notifications.append(
            {
                "level": "warning",
                "message": {
                    "text": f"{omitted} of {len(ordered)} results {'was' if omitted == 1 else 'were'} left out: "
                    f"GitHub keeps at most {MAX_RESULTS} per run"
                },
            }
        )
    run = {
        "tool": {
            "driver": {
                "name": "trainproof",
                "semanticVersion": report.tool_version,
                "version": report.tool_version,
                "informationUri": HOMEPAGE,
                "rules": [rule_descriptor(rule) for rule in rules],
            }
        },
        "automationDetails": {"id": f"trainproof/{report.command}/"},
        "invocations": [{"executionSuccessful": True, "toolExecutionNotifications": notifications}],
        "results": results,
        "columnKind": "utf16CodeUnits",
        "properties": {
            "verdict": report.verdict.value,
            "exitCode": report.exit_code,
            "resultsTotal": len(ordered),
            "resultsOmitted": omitted,
        },
    }
    log = {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}
    return json_text(log)
