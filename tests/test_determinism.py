"""The same inputs give the same bytes in every output, across processes.

Each command runs twice (three times for ``epoch``) in fresh interpreters that
differ in hash seed, time zone and working directory; the inputs sit at the
same relative paths in each directory, so only what must not matter differs.
The timestamped logs cross the 2024-03-10 daylight-saving jump of
America/Los_Angeles: a reader that read a naive time in the local zone would
see an hour vanish there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import REPO

GALLERY = sorted(p.parent.parent.name for p in (REPO / "examples" / "gallery").glob("*/seed0/trainer_state.json"))
ENVIRONMENTS = [
    {"PYTHONHASHSEED": "0", "TZ": "UTC"},
    {"PYTHONHASHSEED": "12345", "TZ": "Asia/Kolkata"},
    {"PYTHONHASHSEED": "987", "TZ": "America/Los_Angeles"},
]
OUTPUTS = {
    "--json-file": "report.json",
    "--html": "report.html",
    "--sarif": "report.sarif",
    "--junit": "report.xml",
    "--markdown": "report.md",
}
START = datetime(2024, 3, 10, 1, 0, 0)  # naive local time, an hour before the Los Angeles clocks jump


def _times(n: int) -> list[datetime]:
    """A minute per record for the first half, five minutes after: a step-time cliff on the log's own clock."""
    out, now = [], START
    for i in range(n):
        out.append(now)
        now += timedelta(minutes=1 if i < n // 2 else 5)
    return out


def _loss(n: int) -> list[float]:
    """Falls for a third of the run, then a long plateau, with noise: a plateau whose length is wall-clock time."""
    rng = np.random.default_rng(5)
    x = np.arange(n)
    return [round(float(v), 4) for v in 0.8 + 2.0 * np.exp(-x / (n / 12)) + rng.normal(0, 0.01, n)]


def _coqui(n: int = 60) -> str:
    lines = [f" > TRAINING ({START:%Y-%m-%d %H:%M:%S})"]
    for i, (when, loss) in enumerate(zip(_times(n), _loss(n))):
        lines += [
            f"   --> TIME: {when:%Y-%m-%d %H:%M:%S} -- STEP: {i}/{n} -- GLOBAL_STEP: {i * 10}",
            f"     | > loss: {loss}  ({loss})",
            "     | > current_lr: 0.0001",
        ]
    return "\n".join(lines) + "\n"


def _jsonl(n: int = 60) -> str:
    records = [
        {"step": i * 10, "loss": loss, "learning_rate": 1e-4, "timestamp": when.isoformat()}
        for i, (when, loss) in enumerate(zip(_times(n), _loss(n)))
    ]
    records[25]["loss"] = float("nan")  # a non-finite value: findings, markers and crosses on the chart
    return "\n".join(json.dumps(r) for r in records) + "\n"


def _mlflow(run: Path, n: int = 60) -> None:
    metrics = run / "metrics"
    metrics.mkdir(parents=True)
    epoch_ms = [int((t - datetime(1970, 1, 1)).total_seconds() * 1000) for t in _times(n)]
    (metrics / "loss").write_text("".join(f"{ms} {loss!r} {i * 10}\n" for i, (ms, loss) in enumerate(zip(epoch_ms, _loss(n)))))
    (metrics / "val_loss").write_text(
        "".join(f"{epoch_ms[i]} {v!r} {i * 10}\n" for i, v in zip(range(9, n, 10), [1.9, 1.5, 1.3, 1.35, 1.5, 1.7]))
    )
    (run / "meta.yaml").write_text("run_id: abc123\n")


def _inputs(root: Path) -> list[str]:
    """The same input tree under ``root``; returns the epoch inputs relative to it."""
    for name in GALLERY:
        target = root / "in" / "gallery" / name / "seed0"
        target.mkdir(parents=True)
        shutil.copyfile(REPO / "examples" / "gallery" / name / "seed0" / "trainer_state.json", target / "trainer_state.json")
    (root / "in" / "coqui").mkdir()
    (root / "in" / "coqui" / "trainer_0_log.txt").write_text(_coqui())
    (root / "in" / "metrics.jsonl").write_text(_jsonl())
    _mlflow(root / "in" / "mlruns" / "0" / "abc123")
    for shipped in ("examples/speech/ljspeech_tiny", "tests/data/speech_faulty", "examples/tokenizer", "examples/text"):
        shutil.copytree(REPO / shipped, root / "in" / Path(shipped).name, ignore=shutil.ignore_patterns("*.py", "README.md"))
    (root / "out").mkdir()
    return [f"in/gallery/{name}/seed0" for name in GALLERY] + ["in/coqui", "in/metrics.jsonl", "in/mlruns/0/abc123"]


def _run(cwd: Path, env: dict[str, str], args: list[str]) -> dict[str, bytes | int]:
    """Run the CLI in ``cwd``; every byte it wrote, by name."""
    outputs = cwd / "out"
    for old in outputs.iterdir():
        old.unlink()
    command = [sys.executable, "-m", "trainproof", *args]
    for option, name in OUTPUTS.items():
        command += [option, f"out/{name}"]
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONHASHSEED", "TZ", "NO_COLOR", "FORCE_COLOR", "GITHUB_ACTIONS")}
    done = subprocess.run(command, cwd=cwd, env={**base, "PYTHONPATH": str(REPO), **env}, capture_output=True, timeout=120, check=False)
    written: dict[str, bytes | int] = {"exit code": done.returncode, "stdout": done.stdout, "stderr": done.stderr}
    for name in sorted(OUTPUTS.values()):
        path = outputs / name
        assert path.is_file(), f"{name} was not written; stderr: {done.stderr.decode(errors='replace')}"
        written[name] = path.read_bytes()
    return written


@pytest.fixture(scope="module")
def places(tmp_path_factory) -> list[tuple[Path, list[str]]]:
    """A working directory per environment, each with the same inputs at the same relative paths."""
    out = []
    for i in range(len(ENVIRONMENTS)):
        root = tmp_path_factory.mktemp(f"place{i}")
        out.append((root, _inputs(root)))
    return out


def _assert_identical(runs: list[dict[str, bytes | int]]) -> None:
    first = runs[0]
    assert set(first) == {"exit code", "stdout", "stderr", *OUTPUTS.values()}
    for other in runs[1:]:
        for name in first:
            assert other[name] == first[name], f"{name} differs between environments"


def test_epoch_outputs_are_byte_identical_across_processes(places):
    runs = [_run(root, env, ["epoch", *inputs]) for (root, inputs), env in zip(places, ENVIRONMENTS)]
    _assert_identical(runs)
    report = json.loads(runs[0]["report.json"])
    assert runs[0]["exit code"] == 1
    by_path = {s["path"]: s for s in report["subjects"]}
    assert [s["format"] for s in report["subjects"]] == ["hf"] * len(GALLERY) + ["coqui", "jsonl", "mlflow"]
    # The timestamped logs were judged on their clocks: the cliff is found, in the same words, in each.
    for path in ("in/coqui/trainer_0_log.txt", "in/metrics.jsonl", "in/mlruns/0/abc123/metrics/loss"):
        assert "TP-STEP-TIME-CLIFF" in [f["id"] for f in by_path[path]["findings"]], path
    assert "TP-LOSS-NONFINITE" in [f["id"] for f in by_path["in/metrics.jsonl"]["findings"]]
    assert runs[0]["report.html"].count(b"<svg") >= len(GALLERY) + 3


def test_compare_outputs_are_byte_identical_across_processes(places):
    args = ["compare", "in/gallery/lr_hot/seed0", "in/coqui", "in/gallery/healthy/seed0"]
    runs = [_run(root, env, args) for (root, _), env in list(zip(places, ENVIRONMENTS))[:2]]
    _assert_identical(runs)
    report = json.loads(runs[0]["report.json"])
    assert report["command"] == "compare"
    assert [s["path"] for s in report["subjects"]][-1] == "in/gallery/healthy/seed0/trainer_state.json"
    assert runs[0]["stdout"].startswith(b"trainproof compare")


@pytest.mark.parametrize(
    ("args", "needs"),
    [
        (["data", "in/ljspeech_tiny", "in/speech_faulty", "--no-cache", "--jobs", "1"], "soundfile"),
        (["tokenizer", "in/tokenizer/tts_unigram.model", "in/tokenizer/transcripts.txt"], "sentencepiece"),
        (["text", "in/text/chat.jsonl", "--tokenizer", "in/text/tokenizer", "--max-len", "96"], "tokenizers"),
    ],
    ids=["data", "tokenizer", "text"],
)
def test_dataset_tokenizer_and_text_outputs_are_byte_identical_across_processes(places, args, needs):
    """The shipped examples (each with faults on purpose) judged in two environments: every output byte the same."""
    pytest.importorskip(needs)
    runs = [_run(root, env, args) for (root, _), env in list(zip(places, ENVIRONMENTS))[:2]]
    _assert_identical(runs)
    report = json.loads(runs[0]["report.json"])
    assert report["command"] == args[0]
    assert any(subject["findings"] for subject in report["subjects"])
