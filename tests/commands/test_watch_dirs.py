"""``trainproof watch`` on run directories written as trainers write them: an HF output folder gaining checkpoints,
a TensorBoard run gaining records and event files, a Lightning ``lightning_logs`` folder gaining versions."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import REPO
from trainproof.commands.watch import Watcher
from trainproof.report import Verdict


def history(name: str) -> list[dict]:
    return json.loads((REPO / "tests/data" / name / "trainer_state.json").read_text())["log_history"]


def until(watcher: Watcher, done, tries: int = 200):
    """Ticks until ``done(tick)`` (a writer's thread may still be writing), at most ``tries`` ticks 10 ms apart."""
    for _ in range(tries):
        tick = watcher.tick()
        if done(tick):
            return tick
        time.sleep(0.01)
    return tick


def save_checkpoint(folder: Path, entries: list[dict]) -> None:
    """What the Trainer writes at a save: checkpoint-<step>/trainer_state.json, the history so far."""
    step = entries[-1]["step"]
    target = folder / f"checkpoint-{step}"
    target.mkdir(parents=True)
    (target / "trainer_state.json").write_text(json.dumps({"global_step": step, "max_steps": 300, "log_history": entries}))


def test_an_hf_output_folder_is_waited_for_then_followed_checkpoint_by_checkpoint(tmp_path):
    watcher = Watcher(tmp_path)
    first = watcher.tick()
    assert first.waiting and first.subject is None, "an empty output folder: training has not saved yet"
    hot = history("hot")
    verdicts = []
    for end in (12, 24, 36, 48, 60):
        save_checkpoint(tmp_path, hot[:end])
        tick = watcher.tick()
        verdicts.append(tick.verdict)
        assert tick.points == end, "the newest checkpoint read (checkpoint-100 after checkpoint-60, by number)"
    assert Verdict.FAIL in verdicts and watcher.report is not None and watcher.report.verdict is Verdict.FAIL
    assert watcher.tick().grew is False, "nothing new, nothing read"


def test_a_healthy_hf_folder_never_fails(tmp_path):
    watcher = Watcher(tmp_path)
    healthy = history("healthy")
    for end in range(10, len(healthy) + 1, 10):
        save_checkpoint(tmp_path, healthy[:end])
        assert watcher.tick().verdict is not Verdict.FAIL


def test_a_tensorboard_run_is_followed_as_records_and_event_files_appear(tmp_path):
    tensorboard = pytest.importorskip("torch.utils.tensorboard")
    watcher = Watcher(tmp_path)
    assert watcher.tick().waiting
    writer = tensorboard.SummaryWriter(str(tmp_path))
    points = []
    for step in range(1, 41):
        writer.add_scalar("train/loss", 2.0 * 1.15**step, step)
        if step % 10 == 0:
            writer.flush()
            points.append(watcher.tick().points)
    writer.close()
    assert points == [10, 20, 30, 40], "appended records read"
    second = tensorboard.SummaryWriter(str(tmp_path / "eval"))
    second.add_scalar("eval/loss", 9.0, 40)
    second.close()
    until(watcher, lambda tick: watcher.run is not None and bool(watcher.run.eval_losses))
    assert watcher.run is not None and watcher.run.eval_losses, "the new event file read"
    assert watcher.report is not None and watcher.report.verdict is Verdict.FAIL


def test_lightning_logs_follow_the_newest_version_and_a_new_one_is_a_new_run(tmp_path):
    loggers = pytest.importorskip("lightning.pytorch.loggers")
    logs = tmp_path / "lightning_logs"
    logs.mkdir()
    watcher = Watcher(logs)
    assert watcher.tick().waiting
    first = loggers.CSVLogger(str(tmp_path), name="lightning_logs", version=0)
    for step in range(1, 61):
        first.log_metrics({"train_loss": 2.0 * 1.1**step}, step)
    first.save()
    assert watcher.tick().verdict is Verdict.FAIL
    second = loggers.CSVLogger(str(tmp_path), name="lightning_logs", version=1)
    for step in range(1, 61):
        second.log_metrics({"train_loss": 2.0 / (1 + 0.05 * step)}, step)
    second.save()
    tick = watcher.tick()
    assert tick.restarted and tick.points == 60 and tick.verdict is not Verdict.FAIL, "version_1 is a new run, judged afresh"


def test_the_cli_follows_a_folder_and_refuses_a_missing_one(tmp_path):
    save_checkpoint(tmp_path / "out", history("hot"))
    done = subprocess.run([sys.executable, "-m", "trainproof", "watch", str(tmp_path / "out"), "--max-ticks", "1", "--until-fail"],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 1 and "TP-DIVERGE" in done.stdout, done.stdout + done.stderr
    gone = subprocess.run([sys.executable, "-m", "trainproof", "watch", str(tmp_path / "nope"), "--max-ticks", "1"], capture_output=True, text=True)
    assert gone.returncode == 2 and gone.stderr.count("\n") == 1 and "does not exist" in gone.stderr
