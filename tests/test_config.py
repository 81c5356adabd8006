"""Per-repository configuration: what it can change, and every way it can be wrong."""

from __future__ import annotations

import json

import pytest

from tests.helpers import REPO
from trainproof.cli import main
from trainproof.config import ConfigError, load

HOT = str(REPO / "tests" / "data" / "hot")
HEALTHY = str(REPO / "tests" / "data" / "healthy")


def write(folder, text, name="pyproject.toml"):
    path = folder / name
    path.write_text(text)
    return path


def judge_json(capsys, *argv):
    code = main(["epoch", *argv, "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


def rule_ids(doc, index=0):
    return {(f["id"], f["level"]) for f in doc["subjects"][index]["findings"]}


def test_no_configuration_means_defaults(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    settings = load()
    assert settings.source is None
    assert settings.enabled("TP-DIVERGE")


def test_ignore_drops_a_rule_and_says_so(tmp_path, monkeypatch, capsys):
    write(tmp_path, '[tool.trainproof]\nignore = ["TP-GRAD-SPIKE"]\n')
    monkeypatch.chdir(tmp_path)
    code, doc, _ = judge_json(capsys, HOT)
    assert ("TP-GRAD-SPIKE", "WARN") not in rule_ids(doc)
    skipped = {s["id"]: s["reason"] for s in doc["subjects"][0]["checks"]["skipped"]}
    assert skipped["TP-GRAD-SPIKE"] == "disabled by configuration (pyproject.toml [tool.trainproof]: ignore)"
    assert code == 1


def test_select_runs_only_the_named_rules(tmp_path, monkeypatch, capsys):
    write(tmp_path, '[tool.trainproof]\nselect = ["tp-grad-spike"]\n')
    monkeypatch.chdir(tmp_path)
    code, doc, _ = judge_json(capsys, HOT)
    assert doc["subjects"][0]["checks"]["ran"] == ["TP-GRAD-SPIKE"]
    assert rule_ids(doc) == {("TP-GRAD-SPIKE", "WARN")}
    assert code == 0


def test_level_change(tmp_path, monkeypatch, capsys):
    write(tmp_path, '[tool.trainproof.levels]\nTP-DIVERGE = "warn"\nTP-GRAD-NONFINITE = "INFO"\n', ".trainproof.toml")
    monkeypatch.chdir(tmp_path)
    code, doc, _ = judge_json(capsys, HOT)
    assert ("TP-DIVERGE", "WARN") in rule_ids(doc)
    assert ("TP-GRAD-NONFINITE", "INFO") in rule_ids(doc)
    assert code == 0
    assert doc["verdict"] == "WARN"


def test_threshold_override_changes_the_verdict(tmp_path, monkeypatch, capsys):
    write(tmp_path, "[tool.trainproof.thresholds]\nGRAD_SPIKE_RATIO = 10000\n")
    monkeypatch.chdir(tmp_path)
    _, doc, _ = judge_json(capsys, HOT)
    assert ("TP-GRAD-SPIKE", "WARN") not in rule_ids(doc)


def test_fail_on_from_configuration_and_command_line(tmp_path, monkeypatch, capsys):
    write(tmp_path, '[tool.trainproof]\nfail-on = "never"\n')
    monkeypatch.chdir(tmp_path)
    assert main(["epoch", HOT]) == 0
    assert main(["epoch", HOT, "--fail-on", "fail"]) == 1
    capsys.readouterr()


def test_fail_on_warn_makes_a_warning_exit_1(capsys):
    overfit = str(REPO / "tests" / "data" / "overfit")
    assert main(["epoch", overfit]) == 0
    assert main(["epoch", overfit, "--fail-on", "warn"]) == 1
    assert main(["epoch", HEALTHY, "--fail-on", "warn"]) == 0
    capsys.readouterr()


def test_explicit_config_and_nearest_file_discovery(tmp_path, monkeypatch):
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    write(tmp_path, '[tool.trainproof]\nignore = ["TP-PLATEAU"]\n')
    write(tmp_path / "a", "[project]\nname = 'x'\n")  # a pyproject.toml without our table is passed over
    monkeypatch.chdir(nested)
    assert not load().enabled("TP-PLATEAU")
    other = write(tmp_path, 'ignore = ["TP-DIVERGE"]\n', "other.toml")
    explicit = load(other)
    assert not explicit.enabled("TP-DIVERGE")
    assert explicit.enabled("TP-PLATEAU")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('[tool.trainproof]\nignroe = ["TP-DIVERGE"]\n', "'ignroe': unknown key"),
        ('[tool.trainproof]\nignore = ["TP-NOPE"]\n', "'ignore': unknown rule id 'TP-NOPE'"),
        ('[tool.trainproof]\nselect = "TP-DIVERGE"\n', "'select': must be a list of rule ids"),
        ('[tool.trainproof.levels]\nTP-NOPE = "WARN"\n', "'levels.TP-NOPE': unknown rule id"),
        ('[tool.trainproof.levels]\nTP-DIVERGE = "LOUD"\n', "'levels.TP-DIVERGE': must be one of FAIL, WARN, INFO"),
        ("[tool.trainproof.thresholds]\nNOT_A_THRESHOLD = 1\n", "'thresholds.NOT_A_THRESHOLD': unknown threshold"),
        ('[tool.trainproof.thresholds]\nPLATEAU_WARN_S = "an hour"\n', "'thresholds.PLATEAU_WARN_S': must be a number"),
        ("[tool.trainproof.thresholds]\nSEGMENTS = 2.5\n", "'thresholds.SEGMENTS': must be an integer"),
        ("[tool.trainproof.thresholds]\nSEGMENTS = true\n", "'thresholds.SEGMENTS': must be an integer"),
        ("[tool.trainproof.thresholds]\nNOISE_SIGMAS = -1\n", "'thresholds.NOISE_SIGMAS': must be a finite number >= 0, got -1"),
        ("[tool.trainproof.thresholds]\nDIVERGE_START_RATIO = nan\n", "'thresholds.DIVERGE_START_RATIO': must be a finite number >= 1, got nan"),
        ("[tool.trainproof.thresholds]\nDIVERGE_START_RATIO = inf\n", "must be a finite number >= 1, got inf"),
        ("[tool.trainproof.thresholds]\nDIVERGE_START_RATIO = 0.5\n", "must be a finite number >= 1, got 0.5"),
        ("[tool.trainproof.thresholds]\nTAIL_SHARE = 5\n", "'thresholds.TAIL_SHARE': must be a finite number > 0 and <= 1, got 5"),
        ("[tool.trainproof.thresholds]\nMIN_TREND_POINTS = 0\n", "must be a finite number >= 3, got 0"),
        ("[tool.trainproof.thresholds]\nNOISE_FALLBACK_QUANTILE = 1.0\n", "'thresholds.NOISE_FALLBACK_QUANTILE': must be a finite number > 0 and < 1, got 1.0"),
        ("[tool.trainproof.thresholds]\nMIN_TIMED_POINTS = 2.5\n", "'thresholds.MIN_TIMED_POINTS': must be an integer, got 2.5"),
        ("[tool.trainproof.thresholds]\nCHART_SHARED_AXIS_MAX_RATIO = 0.5\n", "must be a finite number >= 1, got 0.5"),
        ("[tool.trainproof]\nselect = []\n", "'select': is empty, which would turn every rule off"),
        ("[tool.trainproof]\ntool = \"x\"\n", "'tool': unknown key"),
        ('[tool]\ntrainproof = "x"\n', "'tool.trainproof' must be a table"),
        ("[tool.trainproof]\nthresholds = " + "[" * 2000 + "]" * 2000 + "\n", "nested too deeply"),
        ("[tool.trainproof.thresholds]\nSEGMENTS = " + "9" * 5000 + "\n", "is not a configuration trainproof can read"),
        ('[tool.trainproof]\nfail-on = "sometimes"\n', "'fail-on': must be one of fail, warn, never"),
        ("[tool.trainproof\n", "is not valid TOML"),
    ],
)
def test_bad_configuration_is_exit_2_naming_the_key(tmp_path, monkeypatch, capsys, text, fragment):
    write(tmp_path, text)
    monkeypatch.chdir(tmp_path)
    if "not valid TOML" in fragment or "can read" in fragment or "must be a table" in fragment:
        # a broken pyproject.toml is only read when named explicitly
        code = main(["epoch", HEALTHY, "--config", "pyproject.toml"])
    else:
        code = main(["epoch", HEALTHY])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert fragment in err
    assert "Traceback" not in err


def test_missing_config_file_is_exit_2(tmp_path, capsys):
    assert main(["epoch", HEALTHY, "--config", str(tmp_path / "nope.toml")]) == 2
    assert "nope.toml: does not exist" in capsys.readouterr().err


def test_rules_shows_effective_values_and_where_they_came_from(tmp_path, monkeypatch, capsys):
    write(tmp_path, '[tool.trainproof]\nignore = ["TP-PLATEAU"]\n[tool.trainproof.levels]\nTP-LOSS-SPIKE = "FAIL"\n[tool.trainproof.thresholds]\nPLATEAU_WARN_S = 7200\n')
    monkeypatch.chdir(tmp_path)
    assert main(["rules"]) == 0
    out = capsys.readouterr().out
    assert "configuration: pyproject.toml [tool.trainproof]" in out
    assert "PLATEAU_WARN_S = 7200 seconds  (from pyproject.toml [tool.trainproof]; default 3600)" in out
    assert "TP-LOSS-SPIKE  [FAIL]" in out
    assert "default WARN" in out
    assert "TP-PLATEAU  [WARN]" in out
    assert "disabled by" in out
    assert main(["rules", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    plateau = next(t for t in doc["thresholds"] if t["name"] == "PLATEAU_WARN_S")
    assert plateau == {**plateau, "value": 7200.0, "default": 3600.0, "source": "pyproject.toml [tool.trainproof]"}


def test_a_level_that_is_not_a_string_is_a_config_error():
    from trainproof.config import parse

    with pytest.raises(ConfigError, match="'levels.TP-DIVERGE': must be one of FAIL, WARN, INFO"):
        parse({"levels": {"TP-DIVERGE": 3}}, "x")


def test_every_default_threshold_lies_in_its_own_range():
    from trainproof.checks.thresholds import describe

    for info in describe():
        assert info.default in info.range, f"{info.name} = {info.default} is outside {info.range}"


@pytest.mark.parametrize("tool", ['tool = "x"\n', "[tool]\nother = 1\n"])
def test_a_dedicated_file_with_a_tool_that_is_not_ours(tmp_path, monkeypatch, capsys, tool):
    (tmp_path / ".trainproof.toml").write_text(tool)
    monkeypatch.chdir(tmp_path)
    code = main(["epoch", HEALTHY])
    err = capsys.readouterr().err
    if tool.startswith("tool ="):
        assert code == 2
        assert "'tool' must be a table, got str" in err
    else:
        assert code == 0, err


def test_ignoring_every_rule_is_not_a_pass(tmp_path, monkeypatch, capsys):
    from trainproof.checks.registry import EPOCH_RULES

    ids = ", ".join(f'"{r.id}"' for r in EPOCH_RULES)
    write(tmp_path, f"[tool.trainproof]\nignore = [{ids}]\n")
    monkeypatch.chdir(tmp_path)
    code = main(["epoch", HEALTHY])
    captured = capsys.readouterr()
    assert code == 2
    assert "NOT-CHECKED" in captured.out
    assert "the configuration disables every rule" in captured.err
