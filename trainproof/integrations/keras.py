"""``TrainproofCallback`` for Keras 3, on any backend: trainproof's rules as ``model.fit`` runs.

    from trainproof.integrations.keras import TrainproofCallback

    model.fit(x, y, epochs=10, callbacks=[TrainproofCallback(policy="stop_on_fail", output_dir="runs/exp1")])

A thin adapter over the shared live guard (:mod:`trainproof.integrations.guard`, whose docstring documents the
decision, the printed block, the abort file and the final reports), with the promises of every integration:
``policy="warn"`` (the default) never interrupts, ``policy="stop_on_fail"`` sets ``model.stop_training`` at the
first FAIL of a live rule (Keras leaves the epoch after that batch), and nothing the guard does can raise into
``fit``.

What Keras passes a callback after each batch is not the batch's loss but the running mean of the epoch so far
(its loss tracker, a mean weighted by batch size). The batch's own loss is recovered from two consecutive means:
after ``n`` batches of equal size, ``n * m_n - p * m_p`` over ``n - p`` is the mean of the batches since the
previous call (``p`` batches in; one batch, or ``steps_per_execution``). That is exact for batches of one size; the
last batch of an epoch, smaller when the data does not divide evenly, would be misread, so it is not recorded when
the epoch's steps are known (``self.params["steps"]``). Other batch metrics (accuracy...) are running means too and
are left to the epoch's end. A record's step counts batches across epochs, from 1; the schedule is the epochs
times the steps per epoch, when Keras knows them.

At the end of each epoch the validation metrics (``val_loss``, ``val_*``) and a logged ``learning_rate`` are
recorded at the epoch's last step. Names go through the same names table as the log readers. The reports go to
``output_dir`` (none is written without one).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import IO, Any

from trainproof.io.errors import MissingDependencyError

try:
    from keras.callbacks import Callback
except ImportError as exc:  # pragma: no cover - exercised without keras on the path
    raise MissingDependencyError("keras", "keras", "trainproof.integrations.keras (TrainproofCallback)") from exc

from trainproof.config import Settings
from trainproof.integrations.guard import ABORT_FILE, POLICIES, Guard, Guarded

__all__ = ["ABORT_FILE", "POLICIES", "TrainproofCallback"]


class TrainproofCallback(Guarded, Callback):
    """Judges ``model.fit`` as it runs; ``policy="stop_on_fail"`` stops a doomed run."""

    def __init__(
        self,
        policy: str = "warn",
        config: Settings | str | os.PathLike[str] | None = None,
        final_report: Mapping[str, str] | None = None,
        abort_file: str = ABORT_FILE,
        stream: IO[str] | None = None,
        output_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        super().__init__()
        self.guard = Guard(policy, config, final_report, abort_file, stream, framework="keras")
        self.output_dir = output_dir
        self.step = 0
        self._mean = 0.0  # the epoch's running mean loss after _batches batches
        self._batches = 0


    # --- fit events --------------------------------------------------------------

    def on_train_begin(self, logs: Mapping[str, Any] | None = None) -> None:
        self.guard.begin(self.output_dir)
        self.step = 0

    def on_epoch_begin(self, epoch: int, logs: Mapping[str, Any] | None = None) -> None:
        self._mean, self._batches = 0.0, 0

    def on_train_batch_end(self, batch: int, logs: Mapping[str, Any] | None = None) -> None:
        done = int(batch) + 1  # batches of this epoch so far
        steps = self._steps_per_epoch()
        self.step += max(done - self._batches, 1)
        mean = _number((logs or {}).get("loss"))
        entry: dict[str, float] = {}
        if mean is not None and done > self._batches:
            own = (done * mean - self._batches * self._mean) / (done - self._batches)
            partial = steps is not None and done == steps and steps > 1  # the epoch's last batch may be smaller
            if not partial:
                entry["loss"] = own
            self._mean, self._batches = mean, done
        if entry:
            self._record(entry)

    def on_epoch_end(self, epoch: int, logs: Mapping[str, Any] | None = None) -> None:
        entry = {name: value for name, raw in (logs or {}).items() if (name.startswith("val_") or name == "learning_rate")
                 and (value := _number(raw)) is not None}  # fmt: skip
        if entry:
            self._record(entry)

    def on_train_end(self, logs: Mapping[str, Any] | None = None) -> None:
        self.guard.finish(self.step, self._schedule())

    # --- inside --------------------------------------------------------------------

    def _record(self, entry: dict[str, float]) -> None:
        if self.guard.record(self.step, entry, self._schedule()):
            self.model.stop_training = True

    def _steps_per_epoch(self) -> int | None:
        steps = (self.params or {}).get("steps")
        return int(steps) if isinstance(steps, int) and steps > 0 else None

    def _schedule(self) -> int | None:
        epochs, steps = (self.params or {}).get("epochs"), self._steps_per_epoch()
        return int(epochs) * steps if isinstance(epochs, int) and epochs > 0 and steps else None


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number  # a NaN or infinite mean is a failure to judge, not a value to drop
