"""trainproof.Guardian in real training loops on CPU: a plain PyTorch loop, an Accelerate loop, and two DDP ranks."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

torch = pytest.importorskip("torch")

from trainproof import Guardian  # noqa: E402
from trainproof.report import Verdict  # noqa: E402

STEPS = 200
HOT, HEALTHY = 3.0, 0.05


def train(seed: int, lr: float, policy: str = "stop_on_fail", out: Path | None = None) -> tuple[int, Guardian]:
    """A small classifier on synthetic data, SGD with momentum at ``lr``, logged to a Guardian each step; the steps run."""
    torch.manual_seed(seed)
    x = torch.randn(512, 16)
    y = (x @ torch.randn(16, 4)).argmax(1)
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    guardian = Guardian(policy=policy, max_steps=STEPS, output_dir=out, stream=io.StringIO())
    step = 0
    for step in range(1, STEPS + 1):
        batch = torch.randint(0, 512, (32,))
        loss = torch.nn.functional.cross_entropy(model(x[batch]), y[batch])
        optimizer.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9)
        optimizer.step()
        guardian.log(step, loss=loss, lr=lr, grad_norm=norm)  # tensors taken as their values
        if guardian.should_stop:
            break
    guardian.finish()
    return step, guardian


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_hot_learning_rate_is_stopped_early_with_its_abort_report(seed, tmp_path):
    ran, guardian = train(seed, HOT, out=tmp_path)
    assert guardian.should_stop and ran == guardian.stopped_at <= 20, f"stopped at step {guardian.stopped_at} of {STEPS}"
    abort = json.loads((tmp_path / "trainproof_abort.json").read_text())
    assert abort["abort"]["step"] == guardian.stopped_at and abort["abort"]["policy"] == "stop_on_fail"
    report = guardian.report()
    assert report is not None and report.verdict is Verdict.FAIL
    printed = guardian.guard.stream.getvalue()  # type: ignore[union-attr]
    assert f"trainproof: stopping training at step {guardian.stopped_at} of {STEPS}" in printed


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_healthy_run_is_never_stopped_and_warn_never_stops(seed):
    ran, healthy = train(seed, HEALTHY)
    assert ran == STEPS and not healthy.should_stop and healthy.verdict is Verdict.PASS
    ran, warned = train(seed, HOT, policy="warn")
    assert ran == STEPS and not warned.should_stop, "warn only observes"
    assert warned.verdict is Verdict.FAIL, "and reports the failure"


def test_the_verdict_is_none_until_the_run_is_judged():
    guardian = Guardian(stream=io.StringIO())
    assert guardian.log(1, loss=2.0) is None and guardian.report() is None
    for step in range(2, 40):
        verdict = guardian.log(step, loss=2.0 / step, lr=1e-3)
    assert verdict is Verdict.PASS and guardian.report() is not None
    assert guardian.finish() is guardian.finish(), "finished once"


def test_a_bad_call_is_reported_once_and_never_raises_into_the_loop():
    out = io.StringIO()
    guardian = Guardian(policy="stop_on_fail", stream=out)
    for step in range(1, 30):
        guardian.log(None if step == 3 else step, loss=float("nan") if step == 5 else 1.0)  # type: ignore[arg-type]
    assert out.getvalue().count("the guard stopped judging after an error of its own") == 1
    assert not guardian.should_stop, "an error of its own never stops the training"


def test_importing_the_package_does_not_load_the_guardian():
    done = subprocess.run([sys.executable, "-c", "import sys, trainproof; print('trainproof.integrations' in sys.modules, 'torch' in sys.modules);"
                           "trainproof.Guardian; print('trainproof.integrations.guardian' in sys.modules)"], capture_output=True, text=True)  # fmt: skip
    assert done.stdout.split() == ["False", "False", "True"], done.stderr


DDP_LOOP = """
import io, os, sys, torch, torch.distributed as dist
from trainproof import Guardian
dist.init_process_group("gloo")
torch.manual_seed(0)
x = torch.randn(512, 16); y = (x @ torch.randn(16, 4)).argmax(1)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)))
optimizer = torch.optim.SGD(model.parameters(), lr=float(sys.argv[1]), momentum=0.9)
guardian = Guardian(policy="stop_on_fail", max_steps=200, stream=io.StringIO())
generator = torch.Generator().manual_seed(dist.get_rank())
for step in range(1, 201):
    batch = torch.randint(0, 512, (32,), generator=generator)
    loss = torch.nn.functional.cross_entropy(model(x[batch]), y[batch])  # each rank its own loss: only rank 0's is judged
    optimizer.zero_grad(); loss.backward(); optimizer.step()
    guardian.log(step, loss=loss)
    if guardian.should_stop:
        break
print(f"RANK {dist.get_rank()} {step} {guardian.stopped_at}", flush=True)
dist.destroy_process_group()
"""


def torchrun(tmp_path: Path, *args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", *args],
                          capture_output=True, text=True, cwd=REPO, timeout=300)  # fmt: skip
    if done.returncode != 0 and "gloo" in done.stderr.lower() and "RANK" not in done.stdout:
        pytest.skip(f"two gloo ranks cannot start here: {done.stderr[-300:]}")
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def test_two_ddp_ranks_of_a_plain_loop_stop_at_the_same_step(tmp_path):
    script = tmp_path / "ddp_loop.py"
    script.write_text(DDP_LOOP)
    ranks = sorted(line.split()[1:] for line in torchrun(tmp_path, str(script), str(HOT)) if line.startswith("RANK "))
    assert len(ranks) == 2
    (_, ran0, stopped0), (_, ran1, stopped1) = ranks
    assert stopped0 == stopped1 == ran0 == ran1 != "None" and int(stopped0) < 40, ranks


def test_the_accelerate_example_stops_every_process_together(tmp_path):
    pytest.importorskip("accelerate")
    lines = torchrun(tmp_path, "examples/guardian/accelerate_loop.py", "--lr", str(HOT), "--out", str(tmp_path / "run"))
    ranks = sorted(line for line in lines if line.startswith("rank "))
    assert len(ranks) == 2 and all("stopped at step" in line for line in ranks), lines
    assert len({line.split("stopped at step ")[1].split()[0] for line in ranks}) == 1
    assert json.loads((tmp_path / "run" / "trainproof_abort.json").read_text())["abort"]["rules"]
