"""Every rule case through every renderer, each output checked for each finding it must carry."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter

import pytest
from markupsafe import escape as escape_html

from tests.checks.cases import CASES, report_of
from trainproof.io.safe import visible
from trainproof.render import render
from trainproof.render.github import COMMANDS, annotations, escape_data
from trainproof.render.markdown import escape
from trainproof.render.sarif import LEVELS
from trainproof.report import Level, Report

PARAMS = [pytest.param(case, id=f"{rule_id}:{case.name}") for rule_id, cases in CASES.items() for case in cases]


@pytest.fixture(params=PARAMS)
def report(request) -> Report:
    return report_of(request.param)


def test_text_carries_each_finding_and_its_evidence(report):
    text = render("text", report)
    for _, finding in report.findings:
        assert f"[{finding.level.name}] {finding.rule_id}  {visible(finding.message)}\n" in text
        assert f"Evidence: {visible(finding.evidence)}\n" in text
    assert text.startswith(f"trainproof {report.command}: {report.verdict.value}")


def test_json_carries_each_finding_in_order(report):
    document = json.loads(render("json", report))
    produced = [(f["id"], f["level"], f["message"], f["evidence"]) for s in document["subjects"] for f in s["findings"]]
    assert produced == [(f.rule_id, f.level.name, f.message, f.evidence) for _, f in report.findings]
    assert document["verdict"] == report.verdict.value
    assert document["exit_code"] == report.exit_code


def test_sarif_has_a_result_per_finding_pointing_at_its_rule(report):
    run = json.loads(render("sarif", report, base="."))["runs"][0]
    descriptors = [d["id"] for d in run["tool"]["driver"]["rules"]]
    results = run["results"]
    assert Counter((r["ruleId"], r["level"]) for r in results) == Counter((f.rule_id, LEVELS[f.level]) for _, f in report.findings)
    for result in results:
        assert descriptors[result["ruleIndex"]] == result["ruleId"]
        assert result["message"]["text"].split("\nEvidence: ")[0] in {f.message for _, f in report.findings}


def test_junit_fails_exactly_the_failing_findings(report):
    root = ET.fromstring(render("junit", report))
    failures = Counter(el.get("type") for el in root.iter("failure"))
    expected = Counter(f.rule_id for s, f in report.findings if f.level is Level.FAIL and s.role != "baseline")
    assert failures == expected
    out = "\n".join(el.text or "" for el in root.iter("system-out"))
    for subject, finding in report.findings:
        if finding.level is not Level.FAIL or subject.role == "baseline":
            assert finding.message in out
    assert int(root.get("tests")) == sum(len(s.ran) + len(s.skipped) + bool(s.unjudged) for s in report.subjects)


def test_markdown_has_a_row_per_finding(report):
    body = render("markdown", report)
    assert body.startswith(f"<!-- trainproof:{report.command} -->\n### trainproof {report.command}: {report.verdict.value}")
    for _, finding in report.findings:
        assert f"| **{finding.level.name}** | `{finding.rule_id}` |" in body
        assert escape(finding.message) in body
    if not report.findings:
        assert "No findings." in body


def test_html_shows_each_finding_and_documents_its_rule(report):
    page = render("html", report)
    for _, finding in report.findings:
        assert f'<span class="badge {finding.level.name}">{finding.level.name}</span></td><td><code>{finding.rule_id}</code>' in page
        assert str(escape_html(finding.message)) in page  # as jinja2 escapes it
        assert f"<h3><code>{finding.rule_id}</code>" in page
    assert page.count("<svg") == sum(len(s.charts) for s in report.subjects if any(len(line.values) for c in s.charts for line in c.lines))


def test_github_annotations_carry_each_finding(report):
    lines = annotations(report, ".").splitlines()
    for level in (Level.FAIL, Level.WARN, Level.INFO):
        chosen = [f for _, f in report.findings if f.level is level][:10]
        produced = [line for line in lines if line.startswith(f"::{COMMANDS[level]} ") and ",title=TP-" in line]
        assert len(produced) == len(chosen)
        for line, finding in zip(produced, chosen):
            assert f"title={finding.rule_id}%3A" in line
            assert line.endswith(escape_data(f"{visible(finding.message)}\nEvidence: {visible(finding.evidence)}"))
