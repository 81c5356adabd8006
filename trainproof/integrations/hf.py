"""``TrainproofCallback``: trainproof's rules inside a HuggingFace ``Trainer``, as the run goes.

    from trainproof.integrations.hf import TrainproofCallback

    trainer = Trainer(..., callbacks=[TrainproofCallback(policy="stop_on_fail")])

``policy="warn"`` (the default) only observes and reports. ``policy=
"stop_on_fail"`` sets ``control.should_training_stop`` at the first FAIL of a
live rule; nothing else it does is irreversible. The decision, the printed
block, the abort file and the final reports are the shared guard's
(:mod:`trainproof.integrations.guard`, whose docstring documents them).

Under distributed training every rank records the same logs (the Trainer
gathers the loss before logging), only the main process judges and prints,
and its decision is broadcast to every rank on each log call so that all of
them set ``should_training_stop`` at the same step.

Its reports name the run by the Trainer's ``output_dir``, not by a
trainer_state.json the Trainer may never write there, and go there: the
abort report to ``<output_dir>/trainproof_abort.json``, and at the end of
training the final report in any renderer the CLI has:
``final_report={"html": "trainproof.html", "sarif": "trainproof.sarif"}``
(paths relative to ``output_dir``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import partial
from typing import IO, Any

from trainproof.io.errors import MissingDependencyError

try:
    from transformers import TrainerCallback
except ImportError as exc:  # pragma: no cover - exercised in a test without transformers on the path
    raise MissingDependencyError("transformers", "hf", "trainproof.integrations.hf (TrainproofCallback)") from exc

from trainproof.config import Settings
from trainproof.integrations.guard import ABORT_FILE, POLICIES, Guard, Guarded, agree_torch

__all__ = ["ABORT_FILE", "POLICIES", "TrainproofCallback"]


class TrainproofCallback(Guarded, TrainerCallback):
    """Judges the Trainer's logs as they arrive; ``policy="stop_on_fail"`` stops a doomed run."""

    def __init__(
        self,
        policy: str = "warn",
        config: Settings | str | os.PathLike[str] | None = None,
        final_report: Mapping[str, str] | None = None,
        abort_file: str = ABORT_FILE,
        stream: IO[str] | None = None,
    ) -> None:
        self.guard = Guard(policy, config, final_report, abort_file, stream, framework="hf")

    @property
    def settings(self) -> Settings:
        return self.guard.settings

    @property
    def judge(self) -> Any:
        """The live judge: its last mid-run judgement and how many there were."""
        return self.guard.judge

    # --- Trainer events ----------------------------------------------------

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        # the run is its output folder, where the reports go: the Trainer writes its trainer_state.json there only
        # when the user saves the state after training, and in a checkpoint only under a save strategy
        self.guard.begin(str(args.output_dir))

    def on_log(self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        if not logs:
            return
        agree = partial(agree_torch, device=getattr(args, "device", "cpu"))
        if self.guard.record(state.global_step, logs, state.max_steps, main=state.is_world_process_zero, agree=agree):
            control.should_training_stop = True

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.guard.finish(int(state.global_step), state.max_steps, main=state.is_world_process_zero)
