"""Hostile user text through every renderer: nothing that acts on a terminal or a CI log comes out raw, no user text
starts a line, and the formats that can carry the text exactly still parse back to it."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import xmlschema

from tests.helpers import REPO
from trainproof.io.safe import hidden, visible
from trainproof.render import RENDERERS, render
from trainproof.render.github import annotations
from trainproof.render.json import report_dict
from trainproof.render.markdown import escape
from trainproof.render.shared import json_text
from trainproof.report import Chart, Finding, Level, Line, Marker, Report, Skipped, Subject, Table

# ESC/BEL colour and OSC 8 hyperlink sequences, an 8-bit CSI, NEL, DEL, bidi and other format characters, the line
# and paragraph separators, a tag character above U+FFFF, a line break into a workflow command, and text that must
# stay readable.
HOSTILE = (
    "a\x1b[31mRED\x07 b\u202eevil c\x1b]8;;http://evil.example\x07x\x1b]8;;\x07 \x9b2J\x85\x7f"
    "\u2028\u2029\u200e\u061c\u2066\ufeff\U000e0041 \r\n::error::INJECTED\tcaf\u00e9 \u65e5\u672c www.evil.example"
)
UNDECODABLE = os.fsdecode(b"r\xff")  # a file name that is not UTF-8: a lone surrogate
MESSAGE = f"message {HOSTILE}"
EVIDENCE = f"evidence {HOSTILE}"
FILE = f"logs/{HOSTILE}.jsonl"
PATH = f"runs/{HOSTILE}/{UNDECODABLE}/trainer_state.json"
SCHEMA = xmlschema.XMLSchema(str(REPO / "tests" / "schemas" / "junit-10.xsd"))


def hostile_report() -> Report:
    chart = Chart(
        title=f"loss {HOSTILE}",
        lines=(Line(HOSTILE, np.arange(5), np.array([3.0, 2.0, 1.5, 1.2, 1.0]), "train"),),
        markers=(Marker(2, HOSTILE, "FAIL", HOSTILE),),
        y_label=HOSTILE,
    )
    run = Subject(
        path=PATH,
        format="hf",
        findings=(
            Finding("TP-DIVERGE", Level.FAIL, MESSAGE, EVIDENCE, steps=(2,), line=3, file=FILE),
            Finding("TP-GRAD-SPIKE", Level.WARN, MESSAGE, EVIDENCE, steps=(3,)),
        ),
        ran=("TP-DIVERGE", "TP-GRAD-SPIKE"),
        skipped=(Skipped("TP-OVERFIT", f"reason {HOSTILE}"),),
        headline=f"headline {HOSTILE}",
        notes=(f"note {HOSTILE}", "second note"),
        charts=(chart,),
    )
    missing = Subject(path=f"missing/{HOSTILE}", unjudged=f"does not exist {HOSTILE}", error=True)
    return Report("epoch", (run, missing), "0.0.0", table=Table(("metric", "ratio"), ((HOSTILE, "2.0"),)))


def outputs() -> dict[str, str]:
    report = hostile_report()
    produced = {name: render(name, report, **({"base": str(REPO)} if name == "sarif" else {})) for name in RENDERERS}
    produced["annotations"] = annotations(report, str(REPO))
    return produced


@pytest.mark.parametrize("name", [*sorted(RENDERERS), "annotations"])
def test_nothing_raw_and_no_user_text_starts_a_line(name):
    out = outputs()[name]
    raw = sorted({f"U+{ord(c):04X}" for c in out if c != "\n" and hidden(c)})
    assert not raw, f"{name} carries raw {raw}"
    for line in out.split("\n"):
        assert not line.lstrip().startswith(("::error::INJECTED", "INJECTED")), line


def test_json_escapes_only_the_encoding():
    report = hostile_report()
    out = render("json", report)
    assert json.loads(out) == json.loads(json.dumps(report_dict(report), ensure_ascii=False))
    (finding, warning) = json.loads(out)["subjects"][0]["findings"]
    assert (finding["message"], finding["evidence"], finding["file"]) == (MESSAGE, EVIDENCE, FILE)
    assert json.loads(out)["subjects"][0]["path"] == PATH
    assert "\\u009b2J\\u0085\\u007f\\u2028\\u2029\\u200e\\u061c\\u2066\\ufeff\\udb40\\udc41" in out
    assert "caf\u00e9 \u65e5\u672c" in out, "readable text stays readable"


def test_json_text_escapes_a_character_above_the_bmp_as_a_surrogate_pair():
    assert json_text({"k": "\U000e0001\u202e\u00e9"}) == '{\n  "k": "\\udb40\\udc01\\u202e\u00e9"\n}\n'
    assert json.loads(json_text([UNDECODABLE])) == [UNDECODABLE]


def test_sarif_parses_to_the_message():
    run = json.loads(render("sarif", hostile_report(), base=str(REPO)))["runs"][0]
    assert [r["message"]["text"] for r in run["results"]] == [f"{MESSAGE}\nEvidence: {EVIDENCE}"] * 2
    (note,) = run["invocations"][0]["toolExecutionNotifications"]
    assert note["message"]["text"] == f"missing/{HOSTILE}: does not exist {HOSTILE}"


def xml_text(text: str) -> str:
    """What JUnit XML can carry of ``text``: the characters XML 1.0 cannot carry are spelled out, the rest is exact."""
    return re.sub("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]", lambda m: visible(m.group()), text)


def test_junit_parses_to_the_text_but_what_xml_cannot_carry():
    xml = render("junit", hostile_report())
    SCHEMA.validate(xml)
    assert "&#x9b;2J&#x85;&#x7f;&#x2028;&#x2029;&#x200e;&#x61c;&#x2066;&#xfeff;&#xe0041; &#xd;&#xa;::error::INJECTED&#x9;" in xml
    run, missing = ET.fromstring(xml).iter("testsuite")
    assert run.get("name") == f"trainproof epoch: {xml_text(PATH)}"
    assert run.find("testcase/failure").text == f"[FAIL] {xml_text(MESSAGE)}\nEvidence: {xml_text(EVIDENCE)}\nLocation: {xml_text(FILE)}:3"
    assert run.find("testcase/system-out").text == f"[WARN] {xml_text(MESSAGE)}\nEvidence: {xml_text(EVIDENCE)}"
    assert run.find("testcase/skipped").get("message") == xml_text(f"reason {HOSTILE}")
    assert missing.find("testcase/error").text == xml_text(f"missing/{HOSTILE}: does not exist {HOSTILE}")
    assert "\x9b2J\x85\x7f\u2028\u2029\u200e\u061c\u2066\ufeff\U000e0041 \r\n::error::INJECTED\t" in xml_text(MESSAGE)


def test_markdown_spells_control_characters_and_links_nothing():
    body = outputs()["markdown"]
    assert "a\\\\x1b\\[31mRED\\\\x07 b\\\\u202eevil" in body
    assert "\\\\x9b2J\\\\x85\\\\x7f\\\\u2028\\\\u2029\\\\u200e\\\\u061c\\\\u2066\\\\ufeff\\\\U000e0041 " in body
    assert "::error::INJECTED caf\u00e9 \u65e5\u672c" in body, "white space is one space, as before"
    assert "://" not in body.replace("<!-- trainproof:epoch -->", "")
    assert "http:&#8203;//evil.example" in body
    assert not re.search("www\\.", body, re.IGNORECASE)
    for line in body.splitlines():
        if line.startswith("| **"):
            assert len(re.split(r"(?<!\\)\|", line)) == 6, line


@pytest.mark.parametrize("text", ["https://x.example/a", "WWW.x.example", "mailto:me@x.example"])
def test_markdown_escape_keeps_urls_from_linking(text):
    out = escape(text)
    assert "://" not in out
    assert not re.search("www\\.", out, re.IGNORECASE)
    assert "@x" not in out


def test_html_spells_control_characters_once():
    page = outputs()["html"]
    assert "a\\x1b[31mRED\\x07 b\\u202eevil" in page
    assert "\\x9b2J\\x85\\x7f\\u2028\\u2029\\u200e\\u061c\\u2066\\ufeff\\U000e0041 \\r\\n::error::INJECTED\\tcaf\u00e9" in page
    assert "note a\\x1b[31mRED" in page, "the joined notes are spelled too"
    assert "<title>a\\x1b[31mRED" in page, "and the text inside a chart"
    assert "\\\\x1b" not in page, "spelled once, not twice"
    assert "&amp;#" not in page
