"""The Keras 3 callback in real Keras training on the torch backend, on CPU: each batch's own loss recovered from
Keras's running means, a hot learning rate stopped, a healthy run left alone, warn never acting."""

from __future__ import annotations

import io
import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
pytest.importorskip("torch")
keras = pytest.importorskip("keras")
if keras.backend.backend() != "torch":  # pragma: no cover - keras imported earlier with another backend
    pytest.skip(f"keras runs on {keras.backend.backend()} here, not torch", allow_module_level=True)

from trainproof.integrations.keras import TrainproofCallback  # noqa: E402
from trainproof.report import Verdict  # noqa: E402

EPOCHS, BATCHES = 2, 100  # 3,200 rows in batches of 32
HOT, HEALTHY = 3.0, 0.05


class Recording(keras.Sequential):
    """A model that keeps each batch's own training loss, the oracle of what the callback recovers."""

    losses_seen: list
    in_train = False

    def train_step(self, data):
        self.in_train = True
        try:
            return super().train_step(data)
        finally:
            self.in_train = False

    def compute_loss(self, *args, **kwargs):
        loss = super().compute_loss(*args, **kwargs)
        if self.in_train:
            self.losses_seen.append(float(loss))
        return loss


def fit(seed: int, lr: float, policy: str = "stop_on_fail", out=None) -> tuple[TrainproofCallback, list[float]]:
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(BATCHES * 32, 16)).astype("float32")
    y = (x @ rng.normal(size=(16, 4))).argmax(1)
    model = Recording([keras.Input((16,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(4)])
    model.losses_seen = []
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=lr, momentum=0.9), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    callback = TrainproofCallback(policy=policy, stream=io.StringIO(), output_dir=out)
    model.fit(x, y, batch_size=32, epochs=EPOCHS, callbacks=[callback], verbose=0, validation_data=(x[:256], y[:256]))
    return callback, model.losses_seen


def test_each_batchs_own_loss_is_recovered_from_the_running_means():
    callback, seen = fit(0, HEALTHY)
    run = callback.guard.snapshot(copy=True, max_steps=None)
    assert len(seen) == EPOCHS * BATCHES
    kept = [s for s in range(1, EPOCHS * BATCHES + 1) if s % BATCHES]  # each epoch's last batch is not recorded
    assert list(run.loss.steps) == kept
    np.testing.assert_allclose(run.loss.values, [seen[s - 1] for s in kept], rtol=2e-3, atol=2e-4)
    assert {name: list(s.steps) for name, s in run.eval_losses.items()} == {"eval_loss": [BATCHES, 2 * BATCHES]}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_hot_learning_rate_is_stopped_early(seed, tmp_path):
    callback, seen = fit(seed, HOT, out=tmp_path)
    assert callback.stopped_at is not None and len(seen) == callback.stopped_at <= 20, f"stopped at {callback.stopped_at} of {EPOCHS * BATCHES}"
    assert callback.report is not None and callback.report.verdict is Verdict.FAIL
    assert (tmp_path / "trainproof_abort.json").is_file()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_healthy_run_is_never_stopped_and_warn_never_stops(seed):
    healthy, seen = fit(seed, HEALTHY)
    assert len(seen) == EPOCHS * BATCHES and healthy.stopped_at is None
    assert healthy.report is not None and healthy.report.verdict is Verdict.PASS
    warned, seen = fit(seed, HOT, policy="warn")
    assert len(seen) == EPOCHS * BATCHES and warned.stopped_at is None
    assert warned.report is not None and warned.report.verdict is Verdict.FAIL

