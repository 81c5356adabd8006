"""The live guard every integration shares: one run's records in, a verdict and a stop decision out.

Each framework adapter (the HF callback, :class:`trainproof.Guardian`, the
Lightning and Keras callbacks) is a thin translation of its trainer's events
into :meth:`Guard.record` and :meth:`Guard.finish`; the rules, thresholds,
configuration, abort file, printed block and final reports live here once.

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
* ``policy="warn"`` (the default) only observes and reports;
  ``policy="stop_on_fail"`` asks the trainer to stop at the first FAIL of a
  live rule. Nothing else the guard does acts on the training.
* Under distributed training only the main process judges and prints; its
  decision reaches every rank through the adapter's ``agree`` (a broadcast)
  on each record, so all of them stop at the same step.
* Nothing the guard does can crash the training: an error inside it is
  reported once, the guard stops judging, and the training goes on (the
  ranks still agree, on "go on").

A record's names are read by the same names table the readers use
(:mod:`trainproof.runs.readers.names`): ``loss``, ``train_loss``,
``train_loss_step``, ``val_loss``, ``lr``, ``lr-AdamW``, ``grad_norm`` and the
configuration's ``map``.

On a stop it prints and logs one block (the step, the scheduled total, the
share of the schedule that never ran, the findings with their evidence) and
writes the same report as JSON to ``<output_dir>/trainproof_abort.json``
when the adapter has an output folder.
"""

from __future__ import annotations

import logging
import math
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from trainproof.commands import judge
from trainproof.commands.live import LiveJudge
from trainproof.config import Settings, load
from trainproof.io import figures, outputs
from trainproof.io.errors import UsageError
from trainproof.io.safe import visible
from trainproof.render import RENDERERS, render
from trainproof.render.grouped import block
from trainproof.render.text import block_lines
from trainproof.report import Finding, Level, Report, grouped
from trainproof.runs.model import Run
from trainproof.runs.readers.base import RunBuilder
from trainproof.runs.readers.hf import EvalKeys, add_entry, keys_of
from trainproof.runs.readers.names import DEFAULT_NAMES

POLICIES = ("warn", "stop_on_fail")
ABORT_FILE = "trainproof_abort.json"
logger = logging.getLogger("trainproof")
logger.addHandler(logging.NullHandler())  # a library logs; the application decides where it goes

Agree = Callable[[bool], bool]
_SERIES = ("loss", "learning_rate", "grad_norm", "eval_loss")
"""The series a record's names are resolved to, spelled as an HF log spells them."""


def _alone(decision: bool) -> bool:
    return decision


class Guard:
    """One run judged as it grows; ``stop_on_fail`` turns its first live FAIL into a stop.

    ``framework`` names how records are spelled: ``"hf"`` for a Trainer's
    logs (read as ``trainproof epoch`` reads ``log_history``), anything else
    for records whose names the names table resolves.
    """

    def __init__(
        self,
        policy: str = "warn",
        config: Settings | str | os.PathLike[str] | None = None,
        final_report: Mapping[str, str] | None = None,
        abort_file: str = ABORT_FILE,
        stream: IO[str] | None = None,
        framework: str = "hf",
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
        self.framework = framework
        self.begin(None)

    # --- what an adapter calls --------------------------------------------------

    def begin(self, output_dir: str | os.PathLike[str] | None) -> None:
        """A new run, whose reports go to ``output_dir`` (None: none are written, the run is named ".")."""
        self.output_dir = None if output_dir is None else Path(output_dir)
        self.builder = RunBuilder(str(output_dir) if output_dir is not None else ".", self.framework)
        self.evals = EvalKeys()
        self.judge = LiveJudge(self.settings)
        self.points = 0
        self.stopped_at: int | None = None
        self.report: Report | None = None
        self.error: str | None = None
        self._resolved: dict[frozenset[str], dict[str, str]] = {}

    def record(self, step: int, entry: Mapping[str, Any], max_steps: int | None = None, main: bool = True, agree: Agree = _alone) -> bool:
        """Add one logged record at ``step``; True when the training should stop now (and from now on).

        Every rank calls it with the same records; ``main`` is the one that judges; ``agree`` makes its decision
        every rank's (a broadcast under distributed training).
        """
        stopped = self.stopped_at is not None
        stop = False
        if self.error is None:
            try:  # after a stop the records still go in, for the final report, but are not judged
                stop = self._record(step, entry, max_steps, main and not stopped)
            except Exception as exc:  # noqa: BLE001 - nothing the guard does may crash the training
                self.fail(exc)
        if stopped:
            return True
        if agree(stop):
            self.stopped_at = step
            if main and self.error is None:
                try:
                    self._announce_stop(step, max_steps)
                except Exception as exc:  # noqa: BLE001
                    self.fail(exc)
        return self.stopped_at is not None

    def finish(self, step: int, max_steps: int | None = None, main: bool = True) -> Report | None:
        """Judge the whole run by every rule, print its verdict and write the final reports; the report (None on a
        rank that does not judge, or when the guard has failed)."""
        if not main or self.error is not None:
            return None
        try:
            return self._finish(step, max_steps)
        except Exception as exc:  # noqa: BLE001
            self.fail(exc)
            return None

    @property
    def should_stop(self) -> bool:
        return self.stopped_at is not None

    def failures(self) -> tuple[Finding, ...]:
        return self.judge.failures()

    def snapshot(self, copy: bool, max_steps: int | None) -> Run:
        self.builder.max_steps = max_steps if max_steps and max_steps > 0 else None
        return self.evals.build(self.builder, copy=copy)

    # --- inside ------------------------------------------------------------------

    def _record(self, step: int, entry: Mapping[str, Any], max_steps: int | None, main: bool) -> bool:
        if self.framework == "hf":
            logged = dict(entry)
            logged.setdefault("step", step)
            add_entry(self.builder, logged, self.evals, names=self.settings.names)
            counted = keys_of(self.settings.names)[0] in logged
        else:
            logged = self._as_hf(step, entry)
            add_entry(self.builder, logged, self.evals, names=DEFAULT_NAMES)
            counted = "loss" in logged
        if counted:
            self.points += 1
        if not main:
            return False
        nonfinite = self.builder.nonfinite_added
        if not self.judge.due(self.points, nonfinite):
            return False
        self.judge.judge(self.snapshot(copy=False, max_steps=max_steps), self.points, nonfinite)
        return self.policy == "stop_on_fail" and bool(self.judge.failures())

    def _as_hf(self, step: int, entry: Mapping[str, Any]) -> dict[str, Any]:
        """A record in an HF log's spelling: its loss, learning rate, gradient norm and eval loss by the names table
        (and the configuration's map), its other values (eval metrics) as they are."""
        keys = frozenset(entry)
        resolved = self._resolved.get(keys)
        if resolved is None:
            found = self.settings.names.resolve(entry)
            resolved = {found[series]: series for series in _SERIES if series in found}
            self._resolved[keys] = resolved
        out: dict[str, Any] = {"step": step}
        for key, value in entry.items():
            if key in resolved:
                out[resolved[key]] = value
            elif key not in _SERIES and key != "step":
                out[key] = value
        return out

    def fail(self, exc: BaseException) -> None:
        """Report an error of the guard's own, once, and stop judging; the training goes on."""
        self.error = f"{type(exc).__name__}: {exc}"
        self._say(f"trainproof: the guard stopped judging after an error of its own; the training goes on: {visible(self.error)}")

    def _announce_stop(self, step: int, total: int | None) -> None:
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
        if self.output_dir is not None:
            lines.append(self._write_abort(step, total, never, failures))
        self._say("\n".join(lines))

    def _write_abort(self, step: int, total: int | None, never: float, failures: tuple[Finding, ...]) -> str:
        assert self.output_dir is not None
        target = self.output_dir / self.abort_file
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
        except OSError as exc:
            return f"  Report not written: {visible(target)}: {exc.strerror or exc}"
        except UsageError as exc:
            return f"  Report not written: {visible(exc)}"
        return f"  Report: {visible(target)}"

    def _finish(self, step: int, max_steps: int | None) -> Report:
        self.report = judge("epoch", [self.snapshot(copy=True, max_steps=max_steps)], self.settings)
        subject = self.report.subjects[0]
        counts = ", ".join(f"{subject.count(level)} {level.name}" for level in (Level.FAIL, Level.WARN, Level.INFO))
        self._say(f"trainproof: {subject.verdict} after {figures.plural(int(step), 'step')} ({counts})")
        for name, target in self.final_report.items():
            path = (self.output_dir or Path(".")) / target
            options = {"base": str((self.output_dir or Path(".")).resolve())} if name == "sarif" else {}
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                outputs.write(str(path), render(name, self.report, **options))
            except (OSError, UsageError) as exc:  # a report that cannot be written must not fail the finished training
                self._say(f"trainproof: {name} report not written: {visible(path)}: {visible(exc)}")
        return self.report

    def _say(self, text: str) -> None:
        print(text, file=self.stream or sys.stdout, flush=True)
        logger.warning(text)


class Guarded:
    """What every framework's callback says of its :class:`Guard`: the policy, the step a stop came at, the final
    report (each trainer's callback mixes this in and sets ``self.guard``)."""

    guard: Guard

    @property
    def policy(self) -> str:
        return self.guard.policy

    @property
    def stopped_at(self) -> int | None:
        return self.guard.stopped_at

    @property
    def report(self) -> Report | None:
        """The final report, once training has ended (on the main process, or rank 0)."""
        return self.guard.report


def agree_torch(decision: bool, device: Any = "cpu") -> bool:
    """The main process's (rank 0's) decision on every rank of an initialised torch.distributed group; unchanged on
    a single process, and without importing torch when the program has not."""
    if "torch" not in sys.modules:
        return decision
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1):
        return decision
    flag = torch.tensor([1 if decision else 0], dtype=torch.int32, device=device if dist.get_backend() == "nccl" else "cpu")
    dist.broadcast(flag, src=0)
    return bool(flag.item())
