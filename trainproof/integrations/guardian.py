"""``Guardian``: trainproof's live rules in any training loop, plain PyTorch, Accelerate, or no framework at all.

    from trainproof import Guardian

    guardian = Guardian(policy="stop_on_fail", max_steps=total_steps, output_dir="runs/exp1")
    for step in range(1, total_steps + 1):
        loss = train_step()
        guardian.log(step, loss=loss.item(), lr=scheduler.get_last_lr()[0], grad_norm=norm)
        if guardian.should_stop:
            break
    guardian.finish()

It is one thin adapter over the shared live guard (:mod:`trainproof.integrations.guard`, whose docstring documents
the decision, the printed block, the abort file and the final reports), with the same promises as every
integration: ``policy="warn"`` (the default) never interrupts, ``policy="stop_on_fail"`` is the only mode that
acts (by ``should_stop`` turning True: the loop decides to break), and nothing the guardian does can raise into the
training (an error inside it is reported once and the guardian stops judging).

``log`` takes the step's values by keyword: ``loss``, ``lr`` (the learning rate), ``grad_norm``, and any other
metric (``eval_loss=``, ``val_loss=``, ``val_wer=``), read by the same names table as ``trainproof epoch``'s readers
(and the configuration's ``map``). It returns the verdict of the latest judgement: None until the run has been
judged once (a run is not judged before GUARD_MIN_POINTS loss records, but for a non-finite loss), then the
:class:`~trainproof.report.Verdict` of the live rules.

Under ``torch.distributed`` (and so under Accelerate, which initialises it), every process must call ``log`` at the
same steps: only rank 0 judges and prints, and its decision is broadcast on each call, so that ``should_stop``
turns True on every rank at the same step. A program that never imported torch is one process.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import IO, Any

from trainproof.config import Settings
from trainproof.integrations.guard import ABORT_FILE, POLICIES, Guard, Guarded, agree_torch
from trainproof.report import Report, Verdict

__all__ = ["ABORT_FILE", "POLICIES", "Guardian"]


def _rank() -> int:
    """This process's rank in an initialised torch.distributed group (0 without one, or without torch imported)."""
    if "torch" not in sys.modules:
        return 0
    import torch.distributed as dist

    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


class Guardian(Guarded):
    """Judges a training loop's values as they are logged; ``policy="stop_on_fail"`` turns ``should_stop`` True."""

    def __init__(
        self,
        policy: str = "warn",
        max_steps: int | None = None,
        config: Settings | str | os.PathLike[str] | None = None,
        output_dir: str | os.PathLike[str] | None = None,
        final_report: Mapping[str, str] | None = None,
        abort_file: str = ABORT_FILE,
        stream: IO[str] | None = None,
        device: Any = "cpu",
    ) -> None:
        self.guard = Guard(policy, config, final_report, abort_file, stream, framework="guardian")
        self.guard.begin(output_dir)
        self.max_steps = max_steps
        self.device = device
        self.last_step = 0
        self.finished = False

    @property
    def should_stop(self) -> bool:
        """True from the step the run was stopped at, under ``stop_on_fail``, on every rank; never under ``warn``."""
        return self.guard.should_stop

    @property
    def verdict(self) -> Verdict | None:
        """The verdict of the latest judgement (the final one after :meth:`finish`); None before any, and on a rank
        that does not judge."""
        if self.guard.report is not None:
            return self.guard.report.verdict
        last = self.guard.judge.last
        return None if last is None else last.verdict

    def log(self, step: int, loss: float | None = None, grad_norm: float | None = None, lr: float | None = None, **metrics: Any) -> Verdict | None:
        """Record one step's values; the verdict so far (see :attr:`verdict`)."""
        entry: dict[str, Any] = {}
        try:
            for name, value in (("loss", loss), ("grad_norm", grad_norm), ("learning_rate", lr), *metrics.items()):
                if value is not None:
                    entry[name] = _number(value)
            self.last_step = int(step)
            main = _rank() == 0
        except Exception as exc:  # noqa: BLE001 - nothing the guardian does may crash the training
            if self.guard.error is None:
                self.guard.fail(exc)
            return self.verdict
        self.guard.record(self.last_step, entry, self.max_steps, main=main, agree=self._agree)
        return self.verdict

    def report(self) -> Report | None:  # type: ignore[override]  # also the live judgement's, unlike a callback's
        """The last report: the final one after :meth:`finish`, else the latest live judgement's (None before any)."""
        return self.guard.report or self.guard.judge.report

    def finish(self, step: int | None = None) -> Report | None:
        """Judge the whole run by every rule, print its verdict and write the final reports (once); the final report
        (None on a rank that does not judge)."""
        if not self.finished:
            self.finished = True
            self.guard.finish(self.last_step if step is None else int(step), self.max_steps, main=_rank() == 0)
        return self.guard.report

    def __enter__(self) -> Guardian:
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()

    def _agree(self, decision: bool) -> bool:
        return agree_torch(decision, self.device)


def _number(value: Any) -> Any:
    """A tensor's or a NumPy scalar's value as a Python number (``loss=loss`` works as ``loss=loss.item()``)."""
    item = getattr(value, "item", None)
    if callable(item):
        try:
            return item()
        except (TypeError, ValueError, RuntimeError):
            return value
    return value
