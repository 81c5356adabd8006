"""TrainproofCallback in real transformers.Trainer runs of the gallery's tiny model, on CPU."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest

from tests.helpers import REPO, load_tiny_task

pytest.importorskip("transformers")
pytest.importorskip("torch")

import torch  # noqa: E402
import transformers  # noqa: E402

from trainproof.integrations.hf import TrainproofCallback  # noqa: E402

SEEDS = (0, 1, 2)
MAX_STEPS = 300


@pytest.fixture(scope="module", autouse=True)
def quiet_torch():
    torch.set_num_threads(2)
    transformers.logging.set_verbosity_error()


def train(config, seed, output_dir, callback, **overrides):
    tiny = load_tiny_task()
    trainer = tiny.make_trainer(config, seed, str(output_dir), extra_callbacks=[callback], **overrides)
    trainer.train()
    return trainer


@pytest.mark.parametrize("seed", SEEDS)
def test_hot_learning_rate_is_stopped_early_with_an_abort_report(tmp_path, seed, capsys):
    callback = TrainproofCallback(policy="stop_on_fail")
    trainer = train("lr_hot", seed, tmp_path, callback)
    assert callback.stopped_at is not None
    assert callback.stopped_at <= 0.15 * MAX_STEPS
    assert trainer.state.global_step == callback.stopped_at
    abort = json.loads((tmp_path / "trainproof_abort.json").read_text())
    assert abort["abort"]["rules"] == ["TP-DIVERGE"]
    assert abort["abort"]["share_not_run"] >= 0.85
    assert abort["verdict"] == "FAIL"
    assert abort["subjects"][0]["findings"][0]["id"] == "TP-DIVERGE"
    out = capsys.readouterr().out
    block = out.split("trainproof: stopping training at step", 1)[1]
    assert re.match(rf" {callback.stopped_at} of 300: \d+% of the schedule never ran \(TP-DIVERGE\)\.", block)
    assert "Evidence:" in block
    assert "trainproof_abort.json" in block


@pytest.mark.parametrize("seed", SEEDS)
def test_healthy_runs_are_never_stopped_and_get_no_fail(tmp_path, seed):
    outputs = {"json": "final.json", "html": "final.html", "sarif": "final.sarif", "junit": "final.xml", "markdown": "final.md"}
    callback = TrainproofCallback(policy="stop_on_fail", final_report=outputs if seed == 0 else None)
    trainer = train("healthy", seed, tmp_path, callback)
    assert callback.stopped_at is None
    assert trainer.state.global_step == MAX_STEPS
    assert not (tmp_path / "trainproof_abort.json").exists()
    subject = callback.report.subjects[0]
    assert not [f for f in subject.findings if f.level.name == "FAIL"], [f.message for f in subject.findings]
    assert subject.summary["points"] == 61
    if seed == 0:
        for name in outputs.values():
            assert (tmp_path / name).stat().st_size > 0
        assert json.loads((tmp_path / "final.json").read_text())["verdict"] == "PASS"


def test_the_reports_name_the_output_folder_not_a_trainer_state_never_written(tmp_path):
    outputs = {"json": "final.json", "text": "final.txt", "markdown": "final.md", "html": "final.html", "sarif": "final.sarif", "junit": "final.xml"}
    callback = TrainproofCallback(policy="stop_on_fail", final_report=outputs)
    out = tmp_path / "run_hot"
    trainer = train("lr_hot", 0, out, callback, max_steps=60)
    assert trainer.args.save_strategy == "no"
    assert callback.stopped_at is not None
    assert not list(tmp_path.rglob("trainer_state.json"))
    final = json.loads((out / "final.json").read_text())["subjects"][0]["path"]
    abort = json.loads((out / "trainproof_abort.json").read_text())["subjects"][0]["path"]
    assert [final, abort, callback.report.subjects[0].path] == [str(out)] * 3
    assert out.is_dir()
    for name in outputs.values():
        assert "trainer_state.json" not in (out / name).read_text(), name
    assert f"\nFAIL  {out}\n" in (out / "final.txt").read_text()


def test_warn_policy_never_stops_anything(tmp_path):
    callback = TrainproofCallback()  # policy="warn"
    trainer = train("lr_hot", 0, tmp_path, callback, max_steps=100)
    assert callback.stopped_at is None
    assert trainer.state.global_step == 100
    assert callback.judge.failures(), "the failure was seen, only not acted on"
    assert callback.report.verdict.value == "FAIL"
    assert not (tmp_path / "trainproof_abort.json").exists()


def test_each_record_costs_amortised_constant_time():
    """Judgements grow with the log of the history, not with its length (no wall-clock assertions)."""
    callback = TrainproofCallback(policy="stop_on_fail")
    args = SimpleNamespace(output_dir="unused", device="cpu")
    state = SimpleNamespace(global_step=0, max_steps=100_000, is_world_process_zero=True)
    control = SimpleNamespace(should_training_stop=False)
    callback.on_train_begin(args, state, control)
    n = 20_000
    for i in range(1, n + 1):
        state.global_step = i
        callback.on_log(args, state, control, {"loss": 2.0 + 1.0 / i, "learning_rate": 1e-4, "grad_norm": 0.5, "epoch": i / n})
    assert control.should_training_stop is False
    assert callback.judge.judgements <= 100  # ~ log(n / 5) / log(1.1): geometric, not every record


def test_bad_policy_and_renderer_names_are_refused():
    with pytest.raises(ValueError, match="policy"):
        TrainproofCallback(policy="stop")
    with pytest.raises(ValueError, match="unknown renderers: pdf"):
        TrainproofCallback(final_report={"pdf": "x.pdf"})


def test_importing_without_transformers_names_the_extra():
    code = "import sys; sys.modules['transformers'] = None\ntry:\n    import trainproof.integrations.hf\nexcept ImportError as e:\n    print(e)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert "needs the optional package 'transformers'" in result.stdout
    assert "[hf]" in result.stdout
    core = subprocess.run([sys.executable, "-c", "import sys; sys.modules['transformers'] = None; import trainproof.cli, trainproof.judge"], capture_output=True, text=True, cwd=REPO)
    assert core.returncode == 0, core.stderr


DDP_SCRIPT = """
import os, sys
sys.path.insert(0, {repo!r})
from tests.helpers import load_tiny_task
import torch, transformers
torch.set_num_threads(1)
transformers.logging.set_verbosity_error()
from trainproof.integrations.hf import TrainproofCallback
callback = TrainproofCallback(policy="stop_on_fail")
trainer = load_tiny_task().make_trainer("lr_hot", 0, sys.argv[1], extra_callbacks=[callback], training_args={{"ddp_backend": "gloo"}})
trainer.train()
print(f"rank={{os.environ['RANK']}} world={{trainer.args.world_size}} stopped_at={{callback.stopped_at}} step={{trainer.state.global_step}}", flush=True)
if torch.distributed.is_initialized():  # an orderly end: left to the interpreter's exit, a rank now and then aborts (SIGABRT) in gloo's teardown
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()
"""


@pytest.mark.skipif(not torch.distributed.is_available(), reason="this torch build has no torch.distributed (gloo)")
def test_distributed_stop_reaches_every_rank_and_prints_once(tmp_path):
    script = tmp_path / "ddp.py"
    script.write_text(DDP_SCRIPT.format(repo=str(REPO)))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(  # --standalone: torchrun takes a free port itself, not a fixed one another process may hold
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(script), str(tmp_path / "out")],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    ranks = {rank: (stopped, step) for rank, stopped, step in re.findall(r"rank=(\d) world=2 stopped_at=(\d+) step=(\d+)", result.stdout)}
    assert set(ranks) == {"0", "1"}, result.stdout
    assert ranks["0"] == ranks["1"], "every rank stops at the same step"
    assert ranks["0"][0] == ranks["0"][1], "every rank stops at the same step"
    assert int(ranks["0"][0]) <= 0.15 * MAX_STEPS
    assert result.stdout.count("trainproof: stopping training at step") == 1
    assert (tmp_path / "out" / "trainproof_abort.json").is_file()


def test_the_guardian_example_reproduces_its_captured_output():
    script = REPO / "examples" / "guardian" / "stop_hot_run.py"
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    captured = (REPO / "examples" / "guardian" / "output.txt").read_text()
    pattern = r"trainproof: stopping training at step (\d+) of 300: (\d+)% of the schedule never ran \((TP-[A-Z-]+)\)"
    now, then = re.search(pattern, result.stdout), re.search(pattern, captured)
    assert now
    assert then
    assert now.groups() == then.groups()
    assert int(now.group(1)) <= 0.15 * MAX_STEPS
    assert "abort report written: True" in result.stdout


def test_a_final_report_that_cannot_be_written_does_not_fail_training(tmp_path, capsys):
    (tmp_path / "blocked.json").mkdir()  # the report's name is taken by a folder
    callback = TrainproofCallback(final_report={"json": "blocked.json", "markdown": "final.md"})
    trainer = train("healthy", 0, tmp_path, callback, max_steps=10)
    assert trainer.state.global_step == 10, "training finished"
    out, err = capsys.readouterr()
    assert "trainproof: json report not written:" in out
    assert "blocked.json" in out
    assert "Traceback" not in out + err
    assert (tmp_path / "blocked.json").is_dir()
    assert not list((tmp_path / "blocked.json").iterdir())
    assert (tmp_path / "final.md").stat().st_size > 0, "the other report is still written"
