"""JUnit XML validates against Jenkins' junit-10.xsd and counts what it should."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
import xmlschema

from tests.helpers import REPO
from trainproof.commands import judge_compare, judge_epoch
from trainproof.config import DEFAULT_SETTINGS
from trainproof.render import render

SCHEMA = xmlschema.XMLSchema(str(REPO / "tests" / "schemas" / "junit-10.xsd"))
INPUTS = ["tests/data/hot", "tests/data/healthy", "tests/data/overfit", "tests/data/missing/trainer_state.json"]


@pytest.fixture(autouse=True)
def in_repo(monkeypatch):
    monkeypatch.chdir(REPO)


def suites(xml: str) -> dict[str, ET.Element]:
    return {s.get("name").split(": ", 1)[1]: s for s in ET.fromstring(xml).iter("testsuite")}


@pytest.mark.parametrize("fail_on", ["fail", "warn", "never"])
def test_valid_against_junit_10_xsd(fail_on):
    settings = DEFAULT_SETTINGS.with_fail_on(fail_on)
    for report in (judge_epoch(INPUTS, settings=settings), judge_compare(["tests/data/hot"], "tests/data/healthy", settings=settings)):
        SCHEMA.validate(render("junit", report))


def test_one_suite_per_input_one_case_per_rule_applied():
    xml = render("junit", judge_epoch(INPUTS))
    found = suites(xml)
    hot = found["tests/data/hot/trainer_state.json"]
    cases = {c.get("name"): c for c in hot.iter("testcase")}
    assert len(cases) == int(hot.get("tests")) == 16
    assert cases["TP-DIVERGE"].find("failure") is not None
    assert cases["TP-GRAD-SPIKE"].find("failure") is None
    assert "WARN" in cases["TP-GRAD-SPIKE"].findtext("system-out")
    assert cases["TP-OVERFIT"].find("skipped").get("message") == "TP-DIVERGE already explains this curve"
    assert cases["TP-EVAL-NONFINITE"].find("skipped").get("message") == "the log has no eval loss"
    assert (hot.get("failures"), hot.get("errors"), hot.get("skipped"), hot.get("time")) == ("1", "0", "8", "0.000")


def test_warn_fails_under_fail_on_warn():
    xml = render("junit", judge_epoch(INPUTS, settings=DEFAULT_SETTINGS.with_fail_on("warn")))
    hot = suites(xml)["tests/data/hot/trainer_state.json"]
    assert hot.get("failures") == "3"


def test_an_input_that_could_not_be_judged_is_an_error_and_a_clean_run_still_has_tests():
    found = suites(render("junit", judge_epoch(INPUTS)))
    missing = found["tests/data/missing/trainer_state.json"]
    assert missing.get("errors") == "1"
    assert missing.find("testcase/error").get("message") == "does not exist"
    healthy = found["tests/data/healthy/trainer_state.json"]
    assert int(healthy.get("tests")) > 0
    assert healthy.get("failures") == "0"


def test_control_characters_from_user_data_do_not_break_xml(tmp_path):
    odd = tmp_path / "bad\x01name.json"  # never created: the input cannot be judged
    xml = render("junit", judge_epoch([str(odd)]))
    SCHEMA.validate(xml)
    assert "\x01" not in xml
    root = ET.fromstring(xml)
    shown = str(tmp_path / "bad\\x01name.json")  # XML 1.0 cannot carry U+0001: it is spelled out as the text report does
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("1", "0", "1")
    (suite,) = root.iter("testsuite")
    assert suite.get("name") == f"trainproof epoch: {shown}"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("1", "0", "1", "0")
    assert {p.get("name"): p.get("value") for p in suite.iter("property")} == {"verdict": "NOT-CHECKED", "format": "", "role": "run"}
    (case,) = suite.iter("testcase")
    assert (case.get("name"), case.get("classname")) == ("input can be judged", shown)
    error = case.find("error")
    assert (error.get("type"), error.get("message"), error.text) == ("not-judged", "does not exist", f"{shown}: does not exist")
