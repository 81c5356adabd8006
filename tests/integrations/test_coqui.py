"""The Coqui Trainer callback in real Coqui training on CPU: each step's own values recovered from the trainer's
running means, a hot learning rate condemned early and its training ended with that epoch, a healthy run left alone,
warn never acting."""

from __future__ import annotations

import io

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trainer")

from trainer import Trainer, TrainerArgs, TrainerConfig, TrainerModel  # noqa: E402

from trainproof.integrations.coqui import TrainproofCallback  # noqa: E402
from trainproof.report import Verdict  # noqa: E402

EPOCHS, BATCHES = 4, 100
HOT, HEALTHY = 3.0, 0.05


class Net(TrainerModel):
    """A small classifier on synthetic data, as a Coqui model: it keeps each step's own loss, the oracle."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(BATCHES * 32, 16, generator=g)
        self.y = (self.x @ torch.randn(16, 4, generator=g)).argmax(1)
        torch.manual_seed(seed)
        self.net = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
        self.seen: list[float] = []

    def forward(self, x):
        return self.net(x)

    def train_step(self, batch, criterion):
        loss = criterion(self(batch["x"]), batch["y"])
        self.seen.append(float(loss))
        return {}, {"loss": loss}

    def eval_step(self, batch, criterion):
        return {}, {"loss": criterion(self(batch["x"]), batch["y"])}

    def train_log(self, *args, **kwargs):
        pass

    def eval_log(self, *args, **kwargs):
        pass

    def get_criterion(self):
        return torch.nn.CrossEntropyLoss()

    def get_data_loader(self, config, is_eval, samples, verbose, **kwargs):
        rows = [{"x": a, "y": b} for a, b in zip(self.x, self.y)]
        return torch.utils.data.DataLoader(rows[:256] if is_eval else rows, batch_size=32, shuffle=not is_eval, generator=torch.Generator().manual_seed(0))


def fit(seed: int, lr: float, tmp_path, policy: str = "stop_on_fail") -> tuple[Trainer, Net, TrainproofCallback]:
    config = TrainerConfig(epochs=EPOCHS, lr=lr, optimizer="SGD", optimizer_params={"momentum": 0.9}, print_step=1000, save_step=10**6,
                           run_eval=True, output_path=str(tmp_path), dashboard_logger="tensorboard", save_checkpoints=False, batch_size=32)  # fmt: skip
    guard = TrainproofCallback(policy=policy, stream=io.StringIO())
    model = Net(seed)
    trainer = Trainer(TrainerArgs(), config, str(tmp_path), model=model, parse_command_line_args=False, callbacks=guard.callbacks, gpu=None,
                      train_samples=[0], eval_samples=[0])  # fmt: skip
    trainer.fit()
    return trainer, model, guard


def test_each_steps_own_values_are_recovered_from_the_running_means(tmp_path):
    trainer, model, guard = fit(0, HEALTHY, tmp_path)
    run = guard.guard.snapshot(copy=True, max_steps=None)
    assert list(run.loss.steps) == list(range(1, EPOCHS * BATCHES + 1))
    assert run.loss.values == pytest.approx(model.seen, rel=1e-4, abs=1e-5)
    assert run.learning_rate is not None and run.learning_rate.values == pytest.approx([HEALTHY] * EPOCHS * BATCHES)
    assert {name: list(s.steps) for name, s in run.eval_losses.items()} == {"eval_loss": [100, 200, 300, 400]}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_hot_learning_rate_is_condemned_early_and_trains_no_epoch_after(seed, tmp_path):
    trainer, model, guard = fit(seed, HOT, tmp_path)
    assert guard.stopped_at is not None and guard.stopped_at <= 20, f"condemned at step {guard.stopped_at} of {EPOCHS * BATCHES}"
    assert trainer.total_steps_done == len(model.seen) == BATCHES, "the epoch it was condemned in ran out, no later one trained"
    assert guard.report is not None and guard.report.verdict is Verdict.FAIL
    assert list(tmp_path.rglob("trainproof_abort.json")), "the abort report in the run folder"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_healthy_run_is_never_stopped_and_warn_never_stops(seed, tmp_path):
    trainer, _, healthy = fit(seed, HEALTHY, tmp_path / "healthy")
    assert trainer.total_steps_done == EPOCHS * BATCHES and healthy.stopped_at is None
    assert healthy.report is not None and healthy.report.verdict is Verdict.PASS
    trainer, _, warned = fit(seed, HOT, tmp_path / "warn", policy="warn")
    assert trainer.total_steps_done == EPOCHS * BATCHES and warned.stopped_at is None
    assert warned.report is not None and warned.report.verdict is Verdict.FAIL
