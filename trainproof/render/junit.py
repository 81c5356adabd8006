"""JUnit XML that validates against Jenkins' junit-10.xsd: a test suite per input, a test case per rule.

A FAIL finding is a ``failure`` (and a WARN one too under ``--fail-on warn``);
milder findings are written to the case's ``system-out``; a skipped check is
``skipped`` with its reason; an input that could not be judged is an
``error``. Counts and ``time`` are always present; ``time`` is 0 because the
output is deterministic and trainproof's checks are not timed.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from trainproof.report import Finding, Report, Subject, location

_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
ZERO_TIME = "0.000"


def _clean(text: str) -> str:
    """Text XML 1.0 can carry: control characters become U+FFFD."""
    return _XML_INVALID.sub("\ufffd", text)


def _finding_text(subject: Subject, finding: Finding) -> str:
    text = f"[{finding.level.name}] {finding.message}\nEvidence: {finding.evidence}"
    path, line = location(subject, finding)
    if line is not None:
        text += f"\nLocation: {path}:{line}"
    return _clean(text)


def _suite(report: Report, subject: Subject) -> ET.Element:
    role = " (baseline)" if subject.role == "baseline" else ""
    suite = ET.Element("testsuite", name=_clean(f"trainproof {report.command}: {subject.path}{role}"))
    properties = ET.SubElement(suite, "properties")
    for name, value in (("verdict", subject.verdict.value), ("format", subject.format or ""), ("role", subject.role)):
        ET.SubElement(properties, "property", name=name, value=_clean(value))
    classname = _clean(subject.path)
    tests = failures = errors = skipped = 0
    by_rule: dict[str, list[Finding]] = {}
    for finding in subject.findings:
        by_rule.setdefault(finding.rule_id, []).append(finding)
    if subject.unjudged:
        case = ET.SubElement(suite, "testcase", name="input can be judged", classname=classname, time=ZERO_TIME)
        ET.SubElement(case, "error", type="not-judged", message=_clean(subject.unjudged)).text = _clean(f"{subject.path}: {subject.unjudged}")
        tests += 1
        errors += 1
    for rule_id in subject.ran:
        case = ET.SubElement(suite, "testcase", name=rule_id, classname=classname, time=ZERO_TIME)
        tests += 1
        notes = []
        failed = False
        for finding in by_rule.get(rule_id, []):
            if report.fails(finding) and subject.role != "baseline":
                failed = True
                ET.SubElement(case, "failure", type=rule_id, message=_clean(finding.title)).text = _finding_text(subject, finding)
            else:
                notes.append(_finding_text(subject, finding))
        failures += failed
        if notes:
            ET.SubElement(case, "system-out").text = "\n\n".join(notes)
    for skip in subject.skipped:
        case = ET.SubElement(suite, "testcase", name=skip.rule_id, classname=classname, time=ZERO_TIME)
        ET.SubElement(case, "skipped", message=_clean(skip.reason))
        tests += 1
        skipped += 1
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    suite.set("time", ZERO_TIME)
    return suite


def render(report: Report) -> str:
    root = ET.Element("testsuites", name=f"trainproof {report.command}")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for subject in report.subjects:
        suite = _suite(report, subject)
        root.append(suite)
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", ZERO_TIME)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
