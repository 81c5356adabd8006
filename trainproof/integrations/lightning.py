"""``TrainproofCallback`` for PyTorch Lightning (and NeMo, which trains on it): trainproof's rules as the run goes.

    from trainproof.integrations.lightning import TrainproofCallback

    trainer = L.Trainer(..., callbacks=[TrainproofCallback(policy="stop_on_fail")])

A thin adapter over the shared live guard (:mod:`trainproof.integrations.guard`, whose docstring documents the
decision, the printed block, the abort file and the final reports), with the promises of every integration:
``policy="warn"`` (the default) never interrupts, ``policy="stop_on_fail"`` sets ``trainer.should_stop`` at the first
FAIL of a live rule, and nothing the guard does can raise into the training.

What it reads is what the LightningModule logs with ``self.log``, from ``trainer.callback_metrics``:

* after each optimizer step (``trainer.global_step`` advanced), the step-level values: every metric but those
  aggregated over an epoch (``*_epoch``) and the validation ones; so the training loss at every step, whatever
  ``log_every_n_steps`` makes the loggers keep. A NeMo model's training step logs ``train_loss``, ``lr`` and
  ``grad_norm`` (when asked); a ``LearningRateMonitor``'s ``lr-AdamW`` is read too;
* at the end of each validation run (not the sanity check), the validation metrics (``val_loss``, ``val_wer``...)
  at the step they were computed.

Names are read by the same names table as the log readers (``train_loss``, ``train_loss_step``, ``val_loss``,
``lr-AdamW``...) and the configuration's ``map``.

Under distributed training every rank records the same steps, only global rank 0 judges and prints, and its
decision reaches every rank through the strategy's broadcast, so that every rank stops at the same step. The
reports go to the trainer's ``log_dir`` (its logger's version folder), else its ``default_root_dir``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import IO, Any

from trainproof.io.errors import MissingDependencyError

try:
    from lightning.pytorch.callbacks import Callback
except ImportError:  # pragma: no cover - the older package name
    try:
        from pytorch_lightning.callbacks import Callback  # type: ignore[assignment]
    except ImportError as exc:
        raise MissingDependencyError("lightning", "lightning", "trainproof.integrations.lightning (TrainproofCallback)") from exc

from trainproof.config import Settings
from trainproof.integrations.guard import ABORT_FILE, POLICIES, Guard, Guarded

__all__ = ["ABORT_FILE", "POLICIES", "TrainproofCallback"]

VALIDATION_PREFIXES = ("val", "valid", "validation", "eval", "test")
"""A metric named with one of these (``val_loss``, ``val/wer``, ``validation_loss``) is a validation metric."""


def _is_validation(name: str) -> bool:
    head = name.split("/", 1)[0].split("_", 1)[0].lower()
    return head in VALIDATION_PREFIXES or name.lower().startswith("val")


def _scalars(metrics: Mapping[str, Any]) -> dict[str, float]:
    """The logged values that are one number each, as floats."""
    out = {}
    for name, value in metrics.items():
        try:
            number = float(value.item() if hasattr(value, "item") else value)
        except (TypeError, ValueError, RuntimeError):
            continue
        out[name] = number
    return out


class TrainproofCallback(Guarded, Callback):
    """Judges what the LightningModule logs as it trains; ``policy="stop_on_fail"`` stops a doomed run."""

    def __init__(
        self,
        policy: str = "warn",
        config: Settings | str | os.PathLike[str] | None = None,
        final_report: Mapping[str, str] | None = None,
        abort_file: str = ABORT_FILE,
        stream: IO[str] | None = None,
    ) -> None:
        self.guard = Guard(policy, config, final_report, abort_file, stream, framework="lightning")
        self._recorded = -1


    # --- Trainer events ----------------------------------------------------

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self.guard.begin(trainer.log_dir or trainer.default_root_dir)
        self._recorded = -1

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        step = int(trainer.global_step)
        if step <= self._recorded:  # no optimizer step since the last record (gradient accumulation)
            return
        self._recorded = step
        metrics = _scalars({k: v for k, v in trainer.callback_metrics.items() if not k.endswith("_epoch") and not _is_validation(k)})
        self._record(trainer, step, metrics)

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        if trainer.sanity_checking:
            return
        metrics = _scalars({k: v for k, v in trainer.callback_metrics.items() if _is_validation(k)})
        if metrics:
            self._record(trainer, int(trainer.global_step), metrics)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self.guard.finish(int(trainer.global_step), _max_steps(trainer), main=trainer.is_global_zero)

    def _record(self, trainer: Any, step: int, metrics: dict[str, float]) -> None:
        def agree(decision: bool) -> bool:
            return bool(trainer.strategy.broadcast(decision, src=0)) if trainer.world_size > 1 else decision

        if self.guard.record(step, metrics, _max_steps(trainer), main=trainer.is_global_zero, agree=agree):
            trainer.should_stop = True


def _max_steps(trainer: Any) -> int | None:
    """The scheduled optimizer steps: ``max_steps`` when set, else what the epochs and batches come to."""
    if trainer.max_steps and trainer.max_steps > 0:
        return int(trainer.max_steps)
    try:
        estimated = float(trainer.estimated_stepping_batches)
    except Exception:  # noqa: BLE001 - an unsized dataloader: no schedule to compare with
        return None
    return int(estimated) if math.isfinite(estimated) and estimated > 0 else None
