"""``TrainproofCallback`` for the Coqui TTS ``Trainer`` (the ``coqui-tts-trainer`` package): trainproof's rules as
the run goes.

    from trainproof.integrations.coqui import TrainproofCallback

    guard = TrainproofCallback(policy="stop_on_fail")
    trainer = Trainer(args, config, output_path, model=model, train_samples=train, callbacks=guard.callbacks)

A thin adapter over the shared live guard (:mod:`trainproof.integrations.guard`, whose docstring documents the
decision, the printed block, the abort file and the final reports), with the promises of every integration:
``policy="warn"`` (the default) never interrupts, ``policy="stop_on_fail"`` is the only mode that acts, and nothing
the guard does can raise into the training.

What it reads: Coqui's trainer hands a callback only itself, and keeps each step's values as running means over the
epoch (``keep_avg_train``, a plain mean after its first value). After each step the step's own ``loss``,
``current_lr`` and ``grad_norm`` are recovered from the mean before and after it (``n * m_n - p * m_p``, exact for
that mean), the same values the trainer prints to ``trainer_0_log.txt``, read by the same names table; after each
epoch with evaluation, its ``avg_loss`` is the eval loss at the step reached.

How it stops: the Trainer has no flag a callback can set to leave an epoch, an exception or a KeyboardInterrupt makes
``fit`` exit the process, and it reads ``config.epochs`` once. So ``stop_on_fail`` sets the Trainer's own
``skip_train_epoch``: the current epoch runs to its end, and every later epoch trains no step (the Trainer still
evaluates and saves its best model at each epoch's end, and ``fit`` returns as at a scheduled end). The printed
block and the abort report say at which step the run was condemned; epochs of a size you can afford to finish keep
the cost of a doomed run to one of them.

The reports go to the trainer's ``output_path`` (its run folder).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import IO, Any

from trainproof.io.errors import MissingDependencyError

try:
    import trainer as _coqui_trainer  # noqa: F401 - the package this adapter drives
except ImportError as exc:  # pragma: no cover - exercised without the package on the path
    raise MissingDependencyError("coqui-tts-trainer", "coqui", "trainproof.integrations.coqui (TrainproofCallback)") from exc

from trainproof.config import Settings
from trainproof.integrations.guard import ABORT_FILE, POLICIES, Guard, Guarded, agree_torch

__all__ = ["ABORT_FILE", "POLICIES", "TrainproofCallback"]

TRAIN_VALUES = ("loss", "current_lr", "grad_norm")
"""The values of a training step read, as the trainer names them (its averages prefix them with ``avg_``)."""


class TrainproofCallback(Guarded):
    """Judges a Coqui Trainer's steps as they run; give the Trainer ``callbacks=guard.callbacks``."""

    def __init__(
        self,
        policy: str = "warn",
        config: Settings | str | os.PathLike[str] | None = None,
        final_report: Mapping[str, str] | None = None,
        abort_file: str = ABORT_FILE,
        stream: IO[str] | None = None,
    ) -> None:
        self.guard = Guard(policy, config, final_report, abort_file, stream, framework="coqui")
        self._seen: dict[str, tuple[float, int]] = {}  # per value: the epoch's mean and count before this step
        self._averages: Any = None
        self._began = False
        self._total: int | None = None  # the schedule as it was when training began (a stop shortens config.epochs)

    @property
    def callbacks(self) -> dict[str, Callable[[Any], None]]:
        """The Trainer's ``callbacks`` argument."""
        return {
            "on_train_step_end": self.on_train_step_end,
            "on_epoch_end": self.on_epoch_end,
        }


    # --- Trainer events ----------------------------------------------------

    def on_train_step_end(self, trainer: Any) -> None:
        if not self._began:
            self.guard.begin(trainer.output_path)
            self._began, self._total = True, _schedule(trainer)
        averages = trainer.keep_avg_train
        if averages is not self._averages:  # a new epoch's means
            self._averages, self._seen = averages, {}
        entry = {}
        for name in TRAIN_VALUES:
            value = self._own(averages, "avg_" + name)
            if value is not None:
                entry[name] = value
        if entry and self.guard.record(int(trainer.total_steps_done), entry, self._total, main=_main(trainer), agree=agree_torch):
            self._stop(trainer)

    def on_epoch_end(self, trainer: Any) -> None:
        evaluated = getattr(trainer, "keep_avg_eval", None)
        if evaluated is not None and "avg_loss" in evaluated.avg_values:
            self.guard.record(int(trainer.total_steps_done), {"eval_loss": float(evaluated.avg_values["avg_loss"])}, self._total,
                              main=_main(trainer), agree=agree_torch)  # fmt: skip
        if trainer.epochs_done + 1 >= trainer.config.epochs and not self.guard.report:  # the last epoch: no hook after it
            self.guard.finish(int(trainer.total_steps_done), self._total, main=_main(trainer))

    # --- inside --------------------------------------------------------------------

    def _own(self, averages: Any, key: str) -> float | None:
        """The step's own value of ``key``, from the running mean after it and before it (KeepAverage's: the first
        value alone, then sum / count where the count does not include the first)."""
        if averages is None or key not in averages.avg_values:
            return None
        mean, count = float(averages.avg_values[key]), int(averages.iters[key])
        before = self._seen.get(key)
        self._seen[key] = (mean, count)
        if before is None:
            return mean
        previous, earlier = before
        if count == earlier:  # not updated this step
            return None
        return mean * count - previous * earlier

    def _stop(self, trainer: Any) -> None:
        """No training after the current epoch (see the module's doc)."""
        trainer.skip_train_epoch = True


def _main(trainer: Any) -> bool:
    return getattr(trainer.args, "rank", 0) in (None, 0)


def _schedule(trainer: Any) -> int | None:
    """Steps in the schedule: the epochs times the batches an epoch, when the loader is known."""
    loader = getattr(trainer, "train_loader", None)
    try:
        return int(trainer.config.epochs) * len(loader) if loader is not None else None
    except TypeError:
        return None
