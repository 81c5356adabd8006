"""``TrainproofCallback``: trainproof's rules inside a HuggingFace ``Trainer``, as the run goes.

    from trainproof.integrations.hf import TrainproofCallback

    trainer = Trainer(..., callbacks=[TrainproofCallback(policy="stop_on_fail")])

``policy="warn"`` (the default) only observes and reports. ``policy=
"stop_on_fail"`` sets ``control.should_training_stop`` at the first FAIL of a
live rule; nothing else it does is irreversible.

The stop decision, documented:

* Records are judged with the same rules and thresholds as ``trainproof
  epoch`` (configuration included: ``pyproject.toml`` or ``.trainproof.toml``
  found from the working directory, or ``config=``), restricted mid-run to
  the live rules, those whose verdict holds before a run has finished
  (``trainproof.checks.registry.LIVE_RULE_IDS``). Every rule judges the final
  report at the end.
* Nothing is judged before GUARD_MIN_POINTS training-loss records, except a
  non-finite loss or eval loss, which is judged at once; rules that need a
  longer history (spikes, curve rules) wait for it. After that the run is
  judged each time its history grows by GUARD_JUDGE_GROWTH: amortised
  constant time per record.
* Under distributed training every rank records the same logs (the Trainer
  gathers the loss before logging), only the main process judges and prints,
  and its decision is broadcast to every rank on each log call so that all of
  them set ``should_training_stop`` at the same step.

On a stop it prints and logs one block (the step, the scheduled total, the
share of the schedule that never ran, the findings with their evidence) and
writes the same report as JSON to ``<output_dir>/trainproof_abort.json``.
Its reports name the run by the Trainer's ``output_dir``, not by a
trainer_state.json the Trainer may never write there.
At the end of training it can write the final report in any renderer the CLI
has: ``final_report={"html": "trainproof.html", "sarif": "trainproof.sarif"}``
(paths relative to ``output_dir``).
"""

from __future__ import annotations

import logging
import math
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from trainproof.io.errors import MissingDependencyError, UsageError

try:
    from transformers import TrainerCallback
except ImportError as exc:  # pragma: no cover - exercised in a test without transformers on the path
    raise MissingDependencyError("transformers", "hf", "trainproof.integrations.hf (TrainproofCallback)") from exc

from trainproof.commands import judge
from trainproof.commands.live import LiveJudge
from trainproof.config import Settings, load
from trainproof.io import figures, outputs
from trainproof.io.safe import visible
from trainproof.render import RENDERERS, render
from trainproof.render.grouped import block
from trainproof.render.text import block_lines
from trainproof.report import Level, Report, grouped
from trainproof.runs.readers.base import RunBuilder
from trainproof.runs.readers.hf import EvalKeys, add_entry

POLICIES = ("warn", "stop_on_fail")
ABORT_FILE = "trainproof_abort.json"
logger = logging.getLogger("trainproof")
logger.addHandler(logging.NullHandler())  # a library logs; the application decides where it goes


class TrainproofCallback(TrainerCallback):
    """Judges the Trainer's logs as they arrive; ``policy="stop_on_fail"`` stops a doomed run."""

    def __init__(
        self,
        policy: str = "warn",
        config: Settings | str | os.PathLike[str] | None = None,
        final_report: Mapping[str, str] | None = None,
        abort_file: str = ABORT_FILE,
        stream: IO[str] | None = None,
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
        unknown = set(final_report or {}) - set(RENDERERS)
        if unknown:
            raise ValueError(f"final_report names unknown renderers: {', '.join(sorted(unknown))} (known: {', '.join(RENDERERS)})")
        self.policy = policy
        self.settings = config if isinstance(config, Settings) else load(config)
        self.final_report = dict(final_report or {})
        self.abort_file = abort_file
        self.stream = stream
        self.stopped_at: int | None = None
        self.report: Report | None = None
        self._reset(".")

    def _reset(self, path: str) -> None:
        self.builder = RunBuilder(path, "hf")
        self.evals = EvalKeys()
        self.judge = LiveJudge(self.settings)
        self.points = 0

    # --- Trainer events ----------------------------------------------------

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        # the run is its output folder, where the reports go: the Trainer writes its trainer_state.json there only
        # when the user saves the state after training, and in a checkpoint only under a save strategy
        self._reset(str(args.output_dir))
        self.stopped_at = None
        self.report = None

    def on_log(self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        if not logs:
            return
        entry = dict(logs)
        entry.setdefault("step", state.global_step)
        add_entry(self.builder, entry, self.evals, names=self.settings.names)
        if "loss" in entry:
            self.points += 1
        stop = False
        if state.is_world_process_zero and self.stopped_at is None:
            nonfinite = self.builder.nonfinite_added
            if self.judge.due(self.points, nonfinite):
                self.judge.judge(self._snapshot(copy=False, max_steps=state.max_steps), self.points, nonfinite)
                stop = self.policy == "stop_on_fail" and bool(self.judge.failures())
        stop = _agree(stop, args)
        if stop and self.stopped_at is None:
            self.stopped_at = state.global_step
            control.should_training_stop = True
            if state.is_world_process_zero:
                self._announce_stop(args, state)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not state.is_world_process_zero:
            return
        self.report = judge("epoch", [self._snapshot(copy=True, max_steps=state.max_steps)], self.settings)
        subject = self.report.subjects[0]
        counts = ", ".join(f"{subject.count(level)} {level.name}" for level in (Level.FAIL, Level.WARN, Level.INFO))
        self._say(f"trainproof: {subject.verdict} after {figures.plural(int(state.global_step), 'step')} ({counts})")
        for name, target in self.final_report.items():
            path = Path(args.output_dir) / target
            options = {"base": str(Path(args.output_dir).resolve())} if name == "sarif" else {}
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                outputs.write(str(path), render(name, self.report, **options))
            except (OSError, UsageError) as exc:  # a report that cannot be written must not fail the finished training
                self._say(f"trainproof: {name} report not written: {visible(path)}: {visible(exc)}")

    # --- helpers -----------------------------------------------------------

    def _snapshot(self, copy: bool, max_steps: int | None):  # noqa: ANN202 - a Run
        self.builder.max_steps = max_steps if max_steps and max_steps > 0 else None
        return self.evals.build(self.builder, copy=copy)

    def _announce_stop(self, args: Any, state: Any) -> None:
        step, total = state.global_step, state.max_steps
        never = 1 - step / total if total and total > 0 else math.nan
        failures = self.judge.failures()
        head = f"trainproof: stopping training at step {figures.step(step)} of {figures.step(total) if total else '?'}"
        if not math.isnan(never):
            head += f": {figures.pct(never)} of the schedule never ran"
        lines = [head + f" ({', '.join(dict.fromkeys(f.rule_id for f in failures))})."]
        summaries = {rule.id: rule.summary for rule in self.judge.rules}
        last = self.judge.last
        for group in grouped(failures):
            if last is not None:
                lines.extend(block_lines(block(last, group, summaries.get(group.rule_id, ""))))
        target = Path(args.output_dir) / self.abort_file
        abort = {
            "step": step,
            "max_steps": total,
            "share_not_run": None if math.isnan(never) else round(never, 4),
            "policy": self.policy,
            "rules": list(dict.fromkeys(f.rule_id for f in failures)),
        }
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            outputs.write(str(target), render("json", self.judge.report, extra={"abort": abort}))  # type: ignore[arg-type]
            lines.append(f"  Report: {visible(target)}")
        except OSError as exc:
            lines.append(f"  Report not written: {visible(target)}: {exc.strerror or exc}")
        except UsageError as exc:
            lines.append(f"  Report not written: {visible(exc)}")
        self._say("\n".join(lines))

    def _say(self, text: str) -> None:
        print(text, file=self.stream or sys.stdout, flush=True)
        logger.warning(text)


def _agree(decision: bool, args: Any) -> bool:
    """The main process's decision, on every rank; unchanged on a single process."""
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - transformers' Trainer needs torch anyway
        return decision
    if not (dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1):
        return decision
    import torch

    device = getattr(args, "device", "cpu") if dist.get_backend() == "nccl" else "cpu"
    flag = torch.tensor([1 if decision else 0], dtype=torch.int32, device=device)
    dist.broadcast(flag, src=0)
    return bool(flag.item())
