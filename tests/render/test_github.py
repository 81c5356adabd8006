"""Annotations and the job summary for GitHub Actions."""

from __future__ import annotations

from tests.helpers import REPO
from trainproof.cli import main
from trainproof.render.github import PER_LEVEL, annotations, escape_data, escape_property
from trainproof.report import Finding, Level, Report, Subject


def test_escaping_keeps_commands_from_being_injected():
    assert escape_data("50%\r\n::error::x") == "50%25%0D%0A::error::x"
    assert escape_property("a:b,c\nd") == "a%3Ab%2Cc%0Ad"


def test_at_most_ten_per_level_worst_first():
    findings = tuple(Finding("TP-GRAD-SPIKE", Level.WARN, f"w{i}.", "e", steps=(i,), line=i + 1) for i in range(15))
    findings += tuple(Finding("TP-DIVERGE", Level.FAIL, f"f{i}.", "e", steps=(i,)) for i in range(12))
    report = Report("epoch", (Subject(path="runs/a,b:c.json", format="hf", findings=findings),), "0")
    lines = annotations(report, base=".").splitlines()
    assert [line.split(" ")[0] for line in lines] == ["::error"] * PER_LEVEL + ["::warning"] * PER_LEVEL
    assert "file=runs/a%2Cb%3Ac.json" in lines[0]
    assert ",line=1," in lines[PER_LEVEL]


def test_github_flag_appends_summary_and_prints_annotations(tmp_path, monkeypatch, capsys):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.chdir(REPO)
    code = main(["epoch", "tests/data/hot", "--github"])
    out = capsys.readouterr().out
    assert code == 1
    assert summary.read_text().startswith("earlier step\n<!-- trainproof:epoch -->")
    assert "::error file=tests/data/hot/trainer_state.json,line=" in out


def test_github_flag_outside_actions_is_a_note(monkeypatch, capsys):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.chdir(REPO)
    assert main(["epoch", "tests/data/healthy", "--github"]) == 0
    assert "GITHUB_STEP_SUMMARY is not set" in capsys.readouterr().err
