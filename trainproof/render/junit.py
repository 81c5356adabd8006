"""JUnit XML that validates against Jenkins' junit-10.xsd: a test suite per input, a test case per rule.

A FAIL finding is a ``failure`` (and a WARN one too under ``--fail-on warn``);
milder findings are written to the case's ``system-out``; a skipped check is
``skipped`` with its reason; an input that could not be judged is an
``error``. Counts and ``time`` are always present; ``time`` is 0 because the
output is deterministic and trainproof's checks are not timed.

User text that XML 1.0 cannot carry (C0 controls but tab, CR and LF) is
spelled out as the text report spells it (``\\x1b``); its tabs, line breaks,
CRs and what acts on a terminal (DEL, C1, bidi controls, other format
characters) are character references (``&#x9b;``), so a parser reads back the
user's text.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from trainproof.io.safe import replace_hidden, spelled
from trainproof.report import Finding, Report, Subject, location

# What XML 1.0 cannot carry even as a character reference.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# Stands in for a line break of the user's text until serialisation, which writes it as a reference: a noncharacter,
# so no user text carries one once _clean has spelled the user's own out.
_USER_LF = "\uffff"
ZERO_TIME = "0.000"


def _clean(text: str) -> str:
    """User text as XML 1.0 can carry it: what XML cannot (C0 controls, lone surrogates, U+FFFE, U+FFFF) spelled out
    as the text report spells it, line breaks marked to become references. Once only: a second pass would spell the
    marks."""
    return _XML_INVALID.sub(lambda match: spelled(match.group()), text).replace("\n", _USER_LF)


def _references(xml: str) -> str:
    """Serialised XML with the user's line breaks, tabs, CRs, DEL, C1, bidi and other format characters as references.

    A parser reads back the same text, but the file itself, printed to a terminal or a CI log, carries none of them
    raw, and no user text starts a line of it; a CR in a text node survives instead of being read as LF. ElementTree
    writes only ASCII markup, so any such character is in text or in an attribute value, where a reference means the
    character itself. The raw line breaks are the indentation's; the user's are the marks _clean left.
    """
    return replace_hidden(xml, lambda char: f"&#x{ord(char):x};", keep="\n").replace(_USER_LF, "&#xa;")


def _finding_text(subject: Subject, finding: Finding) -> str:
    text = f"[{finding.level.name}] {_clean(finding.message)}\nEvidence: {_clean(finding.evidence)}"
    path, line = location(subject, finding)
    if line is not None:
        text += f"\nLocation: {_clean(path)}:{line}"
    return text


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
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + _references(ET.tostring(root, encoding="unicode")) + "\n"
