"""The exit-code contract and the shape of what the CLI prints, through main()."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers import REPO, decaying, hf_entries, noisy, write_hf_state
from trainproof.checks.registry import all_rules
from trainproof.cli import main


@pytest.fixture
def healthy_log(tmp_path):
    loss = noisy(decaying(60, 2.0, 0.6), 0.02, 1).tolist()
    (tmp_path / "healthy").mkdir()
    return write_hf_state(tmp_path / "healthy" / "trainer_state.json", hf_entries(loss, grad=[0.5] * 60), max_steps=300)


@pytest.fixture
def diverged_log(tmp_path):
    loss = [1.4, 3.3, 24.2, 26.4, 20.1] + noisy(np.linspace(9, 7.5, 55), 0.1, 2).tolist()
    (tmp_path / "hot").mkdir()
    return write_hf_state(tmp_path / "hot" / "trainer_state.json", hf_entries(loss, lr=2e-2), max_steps=300)


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_error_line(err: str, *fragments: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def test_pass_exits_0_and_names_checks(capsys, healthy_log):
    code, out, err = run_cli(capsys, "epoch", healthy_log)
    assert code == 0, out
    assert out.startswith("trainproof epoch: PASS")
    assert "Checks ran" in out
    assert "Skipped TP-EVAL-NONFINITE, TP-OVERFIT: the log has no eval loss" in out  # one line per reason
    assert err == ""


def test_fail_exits_1_with_finding_and_evidence(capsys, diverged_log):
    code, out, _ = run_cli(capsys, "epoch", diverged_log)
    assert code == 1
    assert "[FAIL] TP-DIVERGE" in out
    assert "Evidence: start 1.4" in out


def test_warnings_alone_exit_0(capsys, tmp_path):
    loss = noisy(decaying(60, 2.0, 0.6), 0.02, 3).tolist()
    grad = [0.5] * 60
    grad[30] = 900.0
    path = write_hf_state(tmp_path / "trainer_state.json", hf_entries(loss, grad=grad))
    code, out, _ = run_cli(capsys, "epoch", path)
    assert code == 0
    assert "[WARN] TP-GRAD-SPIKE" in out
    assert out.startswith("trainproof epoch: WARN")


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (None, "does not exist"),
        ("", "is empty"),
        ('{"log_history": [{"loss": 1.0, "step": 5}, {"loss"', "truncated"),
        ("version https://git-lfs.github.com/spec/v1\noid sha256:" + "0" * 64 + "\nsize 12965\n", "Git LFS pointer"),
        ("just some words\n", "is not valid JSON"),
        ('{"log_history": [{"loss": 1.0, "step": 5}]}', "only 1 finite training-loss point"),
    ],
)
def test_could_not_judge_exits_2_with_one_line(capsys, tmp_path, content, fragment):
    path = tmp_path / "trainer_state.json"
    if content is not None:
        path.write_text(content)
    code, out, err = run_cli(capsys, "epoch", path)
    assert code == 2
    assert_one_error_line(err, str(path), fragment)
    assert "NOT-CHECKED" in out


def test_directory_without_log(capsys, tmp_path):
    code, _, err = run_cli(capsys, "epoch", tmp_path)
    assert code == 2
    assert_one_error_line(err, str(tmp_path), "no training log")


def test_a_fail_outranks_an_input_that_could_not_be_read(capsys, diverged_log, tmp_path):
    code, out, err = run_cli(capsys, "epoch", diverged_log, tmp_path / "missing.json")
    assert code == 1
    assert_one_error_line(err, "missing.json", "does not exist")


@pytest.mark.parametrize("argv", [["nosuch"], ["epoch", "--format", "bogus", "x"], ["epoch", "--nope", "x"]])
def test_bad_arguments_exit_2_with_one_line(capsys, argv):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert_one_error_line(capsys.readouterr().err, "trainproof: error:")


TOO_FEW = [
    (["epoch"], "trainproof epoch needs at least one PATH to judge", "PATH..."),
    (["data", "--no-cache"], "trainproof data needs at least one PATH to judge", "PATH..."),
    (["text"], "trainproof text needs at least one PATH to judge", "PATH..."),
    (["compare", "only-one"], "trainproof compare needs at least one run and a baseline", "RUN... BASELINE"),
    (["tokenizer"], "trainproof tokenizer needs a tokenizer and at least one text", "TOKENIZER TEXT..."),
    (["tokenizer", "--", "tok.model"], "trainproof tokenizer needs a tokenizer and at least one text", "TOKENIZER TEXT..."),
]


@pytest.mark.parametrize(("argv", "needs", "usage"), TOO_FEW)
def test_too_few_paths_say_what_the_command_needs(capsys, monkeypatch, argv, needs, usage):
    monkeypatch.delenv("PRE_COMMIT", raising=False)
    code, out, err = run_cli(capsys, *argv)
    assert (code, out) == (2, "")
    assert err == f"trainproof: error: {needs}: trainproof {argv[0]} [OPTIONS] -- {usage}\n"


@pytest.mark.parametrize(("argv", "needs", "usage"), TOO_FEW)
def test_too_few_paths_under_pre_commit_name_the_hooks_args(capsys, monkeypatch, argv, needs, usage):
    """Issue 28: `pre-commit try-repo ... trainproof-tokenizer` (a hook given no file names, whose paths must come from
    its `args`) said argparse's "the following arguments are required: PATH". Under pre-commit (PRE_COMMIT=1) the line
    names the args the hook needs."""
    monkeypatch.setenv("PRE_COMMIT", "1")
    code, out, err = run_cli(capsys, *argv)
    assert (code, out) == (2, "")
    given = len([word for word in argv[1:] if not word.startswith("-")])
    got = {0: "none", 1: "1 path"}[given]
    args = ", ".join(["--", *usage.split()])
    hook = f"name them in the hook's args in .pre-commit-config.yaml, args: [{args}]"
    assert err == f"trainproof: error: {needs}, and the hook gave it {got}: {hook}\n"


def test_the_usage_line_says_the_paths_are_required(capsys):
    with pytest.raises(SystemExit):
        main(["tokenizer", "--help"])
    assert "PATH [PATH ...]" in capsys.readouterr().out


# --- a package that is not installed ------------------------------------------------------------------------------


def _without(package: str, argv: list[str], **env: str) -> subprocess.CompletedProcess:
    """trainproof run in a fresh interpreter where importing ``package`` fails, as when its extra is not installed."""
    script = f"import sys; sys.modules[{package!r}] = None; from trainproof.cli import main; sys.exit(main(sys.argv[1:]))"
    environ = {k: v for k, v in os.environ.items() if k != "PRE_COMMIT"} | env
    return subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, cwd=REPO, env=environ, timeout=300)


FOLDER, CHATS, TRANSCRIPTS = "examples/text/tokenizer", "examples/text/chat.jsonl", "examples/tokenizer/transcripts.txt"
MISSING = [
    (["text", CHATS, "--tokenizer", FOLDER], "transformers", "to read a HuggingFace tokenizer folder", "tokenizer,hf"),
    (["text", CHATS, "--tokenizer", f"{FOLDER}/tokenizer.json"], "tokenizers", "to read a tokenizer.json", "tokenizer"),
    (["tokenizer", "examples/tokenizer/tts_unigram.model", TRANSCRIPTS], "sentencepiece", "to read a sentencepiece model", "tokenizer"),
    (["tokenizer", FOLDER, TRANSCRIPTS], "transformers", "to read a HuggingFace tokenizer folder", "tokenizer,hf"),
]


@pytest.mark.parametrize(("argv", "package", "use", "extras"), MISSING)
def test_a_missing_package_is_named_against_the_command_run(argv, package, use, extras):
    """Issue 28: `trainproof text` said "trainproof tokenizer needs ... 'transformers'". The line names the command run,
    what the package is for, and how to install it from this repository (never a bare `pip install trainproof`)."""
    done = _without(package, argv)
    assert done.returncode == 2, done.stderr
    noun = "extras" if "," in extras else "extra"
    assert done.stderr == (
        f"trainproof: error: trainproof {argv[0]} needs the optional package '{package}' {use}, which is not installed: "
        f"install trainproof's [{extras}] {noun} from its repository (pip install -e '.[{extras}]' in a clone)\n"
    )
    assert done.stdout == ""


@pytest.mark.parametrize(("argv", "package", "use", "extras"), MISSING)
def test_under_pre_commit_a_missing_package_names_the_hooks_additional_dependencies(argv, package, use, extras):
    """A hook's environment has only what its `additional_dependencies` list: the line says to list there every package
    the command needs (a user's list replaces the hook's own), each a requirement of trainproof's extras."""
    done = _without(package, argv, PRE_COMMIT="1")
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    head = f"trainproof: error: trainproof {argv[0]} needs the optional package '{package}' {use}, "
    assert line.startswith(head + "which this pre-commit hook's environment does not have: ")
    tail = r"additional_dependencies in \.pre-commit-config\.yaml \(your list replaces the hook's own\): additional_dependencies: \[(.*)\]"
    listed = re.fullmatch(".*" + tail, line)
    assert listed, line
    names = [re.match(r'"([a-z_-]+)[^"]*"$', item).group(1) for item in listed.group(1).split(", ")]
    wanted = {"tokenizer": ["sentencepiece", "tokenizers"], "tokenizer,hf": ["sentencepiece", "tokenizers", "transformers"]}[extras]
    assert names in (wanted, [package])  # [package] alone: trainproof runs from a tree never installed, so has no metadata
    assert "pip install" not in line


def test_no_command_prints_help_and_exits_2(capsys):
    assert main([]) == 2
    assert "usage:" in capsys.readouterr().err


def test_internal_errors_are_one_line_unless_debug(capsys, healthy_log, monkeypatch):
    import trainproof.commands

    def boom(*args, **kwargs):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(trainproof.commands, "judge", boom)
    code, _, err = run_cli(capsys, "epoch", healthy_log)
    assert code == 2
    assert_one_error_line(err, "internal error", "kaboom", "--debug")
    with pytest.raises(RuntimeError):
        main(["--debug", "epoch", str(healthy_log)])


def test_json_document(capsys, healthy_log, diverged_log, tmp_path):
    code, out, _ = run_cli(capsys, "epoch", healthy_log, diverged_log, tmp_path / "nope.json", "--json")
    doc = json.loads(out)
    assert code == 1
    assert doc["schema_version"] == 1
    assert doc["command"] == "epoch"
    assert doc["verdict"] == "FAIL"
    assert [s["verdict"] for s in doc["subjects"]] == ["PASS", "FAIL", "NOT-CHECKED"]
    assert doc["subjects"][2]["error"].endswith("does not exist")
    finding = doc["subjects"][1]["findings"][0]
    assert set(finding) >= {"id", "level", "message", "evidence", "values", "steps"}
    assert finding["id"] == "TP-DIVERGE"
    assert finding["values"]["start"] == pytest.approx(1.4)
    checks = doc["subjects"][0]["checks"]
    assert "TP-DIVERGE" in checks["ran"]
    assert {"id": "TP-OVERFIT", "reason": "the log has no eval loss"} in checks["skipped"]


def test_json_is_deterministic(capsys, diverged_log):
    _, first, _ = run_cli(capsys, "epoch", diverged_log, "--json")
    _, second, _ = run_cli(capsys, "epoch", diverged_log, "--json")
    assert first == second


def test_html_report_is_written_and_self_contained(capsys, diverged_log, tmp_path):
    target = tmp_path / "report.html"
    code, _, _ = run_cli(capsys, "epoch", diverged_log, "--html", target)
    assert code == 1
    page = target.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert "<svg" in page
    assert "TP-DIVERGE" in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page
    assert "<script" not in page


def test_outputs_never_overwrite_an_input(capsys, diverged_log):
    before = diverged_log.read_bytes()
    code, _, err = run_cli(capsys, "epoch", diverged_log, "--html", diverged_log)
    assert code == 2
    assert_one_error_line(err, "refusing to overwrite")
    assert diverged_log.read_bytes() == before


def test_unwritable_output_is_exit_2(capsys, diverged_log, tmp_path):
    code, _, err = run_cli(capsys, "epoch", diverged_log, "--html", tmp_path / "no" / "such" / "dir.html")
    assert code == 2
    assert_one_error_line(err, "does not exist")


def test_compare_runs_against_a_baseline(capsys, healthy_log, diverged_log):
    code, out, _ = run_cli(capsys, "compare", diverged_log, healthy_log)
    assert code == 1
    assert "baseline:" in out
    assert "TP-CMP-WORSE-THAN-START" in out
    table = out.split("\n\n")[1]
    assert table.splitlines()[0].split()[:4] == ["verdict", "run", "floor", "end"]


def test_compare_with_unreadable_baseline_is_exit_2(capsys, healthy_log, tmp_path):
    code, _, err = run_cli(capsys, "compare", healthy_log, tmp_path / "gone.json")
    assert code == 2
    assert "gone.json" in err
    assert "Traceback" not in err


def test_rules_lists_every_rule_and_documents_one(capsys):
    code, out, _ = run_cli(capsys, "rules")
    assert code == 0
    for rule in all_rules():
        assert rule.id in out
    assert "DIVERGE_START_RATIO = 1.5" in out
    code, out, _ = run_cli(capsys, "rules", "tp-diverge")
    assert code == 0
    assert "What it detects" in out
    code, _, err = run_cli(capsys, "rules", "TP-NOPE")
    assert code == 2
    assert "no such rule" in err
    code, out, _ = run_cli(capsys, "rules", "--json")
    assert {r["id"] for r in json.loads(out)["rules"]} == {r.id for r in all_rules()}


def test_version_and_module_entry_point():
    result = subprocess.run([sys.executable, "-m", "trainproof", "--version"], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0
    assert result.stdout.startswith("trainproof ")


def test_every_output_at_once_leaves_verdict_and_exit_code_alone(capsys, diverged_log, tmp_path):
    plain_code, plain_out, _ = run_cli(capsys, "epoch", diverged_log)
    files = {opt: tmp_path / f"out.{ext}" for opt, ext in (("--html", "html"), ("--sarif", "sarif"), ("--junit", "xml"), ("--markdown", "md"), ("--json-file", "json"))}
    argv = ["epoch", diverged_log]
    for option, path in files.items():
        argv += [option, path]
    code, out, _ = run_cli(capsys, *argv)
    assert code == plain_code == 1
    assert out == plain_out
    assert all(p.stat().st_size > 0 for p in files.values())
    assert json.loads(files["--json-file"].read_text())["verdict"] == "FAIL"


def test_two_outputs_on_one_file_are_refused_before_any_work(capsys, diverged_log, tmp_path):
    target = tmp_path / "same.out"
    code, _, err = run_cli(capsys, "epoch", diverged_log, "--sarif", target, "--junit", target)
    assert code == 2
    assert "named by both" in err
    assert not target.exists()


def test_no_empty_output_file_when_the_command_fails_early(capsys, tmp_path):
    target = tmp_path / "report.sarif"
    code, _, _ = run_cli(capsys, "epoch", tmp_path / "missing.json", "--sarif", target, "--config", tmp_path / "nope.toml")
    assert code == 2
    assert not target.exists()


def test_one_input_that_breaks_a_reader_costs_only_its_own_verdict(capsys, healthy_log, diverged_log, tmp_path, monkeypatch):
    import trainproof.commands.epoch

    real = trainproof.commands.epoch.read_run

    def flaky(path, fmt=None, names=None):
        if "healthy" in str(path):
            raise OverflowError("cannot convert float infinity to integer")
        return real(path, fmt, names)

    monkeypatch.setattr(trainproof.commands.epoch, "read_run", flaky)
    report = tmp_path / "r.json"
    code, out, err = run_cli(capsys, "epoch", healthy_log, diverged_log, "--json-file", report)
    assert code == 1, "the FAIL of the other input still decides"
    assert "[FAIL] TP-DIVERGE" in out
    assert_one_error_line(err, str(healthy_log), "OverflowError")
    assert [s["verdict"] for s in json.loads(report.read_text())["subjects"]] == ["NOT-CHECKED", "FAIL"]


def test_an_unreadable_log_in_a_run_folder_is_named_itself(capsys, tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "trainer_state.json").write_text('{"log_history": [{"loss": 1.0, "step": 5}, {"loss"')
    code, _, err = run_cli(capsys, "epoch", folder)
    assert code == 2
    assert_one_error_line(err, str(folder / "trainer_state.json"), "truncated")


def test_extreme_values_raise_no_numpy_warning(capsys, tmp_path):
    import warnings

    loss = [1e-10] * 30
    loss[15] = loss[16] = 1e308
    path = write_hf_state(tmp_path / "trainer_state.json", hf_entries(loss, grad=[1.0, 1.0, 1.0, 1e308] + [1.0] * 26), max_steps=300)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning would now be an internal error
        code, out, err = run_cli(capsys, "epoch", path, "--html", tmp_path / "r.html", "--sarif", tmp_path / "r.sarif")
    assert code in (0, 1), err
    assert err == "", err
