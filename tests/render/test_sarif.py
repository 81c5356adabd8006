"""SARIF output: valid against the OASIS 2.1.0 schema, and shaped the way GitHub code scanning reads it."""

from __future__ import annotations

import json
import re

import pytest
from sarif_kit.validate import validation_errors

from tests.helpers import REPO
from trainproof.commands import judge_compare, judge_epoch
from trainproof.render import render
from trainproof.render.sarif import MAX_RESULTS, artifact_uri
from trainproof.report import Finding, Level, Report, Subject

INPUTS = ["tests/data/hot", "tests/data/healthy", "tests/data/overfit", "tests/data/missing/trainer_state.json"]


@pytest.fixture
def logs(monkeypatch):
    monkeypatch.chdir(REPO)
    return {
        "epoch": json.loads(render("sarif", judge_epoch(INPUTS), base=str(REPO))),
        "compare": json.loads(render("sarif", judge_compare(["tests/data/hot"], "tests/data/healthy"), base=str(REPO))),
    }


@pytest.mark.parametrize("command", ["epoch", "compare"])
def test_valid_against_the_sarif_schema(logs, command):
    assert validation_errors(logs[command]) == []


@pytest.mark.parametrize("command", ["epoch", "compare"])
def test_github_code_scanning_shape(logs, command):
    log = logs[command]
    assert log["version"] == "2.1.0"
    assert len(log["runs"]) == 1
    run = log["runs"][0]
    assert run["automationDetails"]["id"] == f"trainproof/{command}/"
    driver = run["tool"]["driver"]
    assert driver["name"] == "trainproof"
    assert re.match(r"^\d+\.\d+\.\d+", driver["semanticVersion"])
    assert driver["informationUri"].startswith("https://")
    ids = [r["id"] for r in driver["rules"]]
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"]
        assert rule["fullDescription"]["text"]
        assert rule["help"]["text"]
        assert rule["helpUri"].startswith("https://")
        assert rule["defaultConfiguration"]["level"] in {"error", "warning", "note"}
        assert rule["properties"]["tags"]
        assert "security-severity" not in json.dumps(rule)
    assert run["results"]
    for result in run["results"]:
        assert ids[result["ruleIndex"]] == result["ruleId"]
        assert result["level"] in {"error", "warning", "note"}
        first_sentence = re.split(r"\.\s", result["message"]["text"])[0]
        assert first_sentence
        assert len(first_sentence) < 200
        (location,) = result["locations"]
        uri = location["physicalLocation"]["artifactLocation"]["uri"]
        assert uri.startswith("tests/data/")
        assert not uri.startswith("/")
        assert location["physicalLocation"]["region"]["startLine"] >= 1


def test_levels_follow_finding_levels(logs):
    levels = {r["ruleId"]: r["level"] for r in logs["epoch"]["runs"][0]["results"]}
    assert levels["TP-DIVERGE"] == "error"
    assert levels["TP-GRAD-SPIKE"] == "warning"
    assert levels["TP-PLATEAU"] == "note"


def test_results_point_at_the_line_of_the_step(logs):
    result = next(r for r in logs["epoch"]["runs"][0]["results"] if r["ruleId"] == "TP-GRAD-NONFINITE")
    line = result["locations"][0]["physicalLocation"]["region"]["startLine"]
    text = (REPO / "tests/data/hot/trainer_state.json").read_text().splitlines()[line - 1]
    assert '"step": 155' in text


def test_inputs_that_could_not_be_judged_are_notifications(logs):
    notes = logs["epoch"]["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert any("missing" in n["message"]["text"] and n["level"] == "error" for n in notes)


def test_two_runs_give_identical_bytes(monkeypatch):
    monkeypatch.chdir(REPO)
    assert render("sarif", judge_epoch(INPUTS), base=str(REPO)) == render("sarif", judge_epoch(INPUTS), base=str(REPO))


def test_results_are_capped_at_githubs_limit_and_the_cut_reported():
    findings = tuple(
        Finding("TP-GRAD-SPIKE" if i % 2 else "TP-DIVERGE", Level.WARN if i % 2 else Level.FAIL, f"Finding {i}.", "n/a", steps=(i,))
        for i in range(MAX_RESULTS + 321)
    )
    report = Report("epoch", (Subject(path="big.json", format="hf", findings=findings, ran=("TP-DIVERGE",)),), "0.0.0")
    log = json.loads(render("sarif", report, base="."))
    run = log["runs"][0]
    assert len(run["results"]) == MAX_RESULTS
    assert run["properties"]["resultsOmitted"] == 321
    assert sum(r["level"] == "error" for r in run["results"]) == (MAX_RESULTS + 321 + 1) // 2, "the most severe are kept"
    assert any("321" in n["message"]["text"] for n in run["invocations"][0]["toolExecutionNotifications"])


def test_uris_are_relative_to_the_working_directory(tmp_path):
    assert artifact_uri(str(tmp_path / "a b" / "log.json"), str(tmp_path)) == "a%20b/log.json"
    assert artifact_uri("runs/x/trainer_state.json", str(tmp_path)) == "runs/x/trainer_state.json"
    assert artifact_uri("/elsewhere/log.json", str(tmp_path)) == "file:///elsewhere/log.json"


def test_a_file_name_that_is_not_utf8_keeps_its_bytes_in_the_uri(tmp_path):
    # os.fsdecode turns the byte 0xff of a file name into the lone surrogate U+DCFF
    assert artifact_uri(str(tmp_path / "run\udcff" / "log.jsonl"), str(tmp_path)) == "run%FF/log.jsonl"
    assert artifact_uri("/elsewhere/run\udcff.jsonl", str(tmp_path)) == "file:///elsewhere/run%FF.jsonl"
