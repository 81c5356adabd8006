"""Rules about a log being watched as it grows (``trainproof watch``), judged from the watcher's clock."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from trainproof.checks.base import Hit, NotApplicable, Rule, RunContext
from trainproof.checks.findings import Finding, Level
from trainproof.checks.thresholds import Thresholds
from trainproof.io import figures


@dataclass(frozen=True)
class WatchContext:
    """A growing run and how long the watcher has seen it not grow."""

    run: RunContext
    idle_s: float
    stall_timeout_s: float | None
    topic = "this log"

    @property
    def t(self) -> Thresholds:
        return self.run.t

    def locate(self, finding: Finding) -> Finding:
        last = self.run.run.last_step
        line = self.run.run.line_of(last) if last is not None else None
        return replace(finding, line=line) if finding.line is None and line is not None else finding


def stalled(ctx: WatchContext) -> Iterator[Hit]:
    """The log has stopped growing while it is watched.

    What it detects: the watched file has not grown for at least the
    ``--stall-timeout`` given to ``trainproof watch``.
    Why it matters: a run that hangs (a dead data-loader worker, a deadlocked
    collective, a full disk) holds its GPUs and writes nothing; no rule on the
    curve can see a run that stopped writing it.
    Fires on: a log whose last record is older than the stall timeout.
    Does not fire on: a log that grows at least once per timeout, or a watch
    started without ``--stall-timeout``.
    Does not mean: the run crashed (a long evaluation or checkpoint save also
    writes nothing for a while); it says to go and look. It is said once per
    stall and cleared when the log grows again.
    """
    if ctx.stall_timeout_s is None:
        raise NotApplicable("no --stall-timeout was given")
    if ctx.idle_s < ctx.stall_timeout_s:
        return
    last = ctx.run.run.last_step
    after = f" after step {figures.step(last)}" if last is not None else ""
    yield Hit(
        message=f"The log has not grown for {figures.duration(ctx.idle_s)}{after}: the run may be stalled.",
        evidence=f"no new bytes for {ctx.idle_s:.0f} s (--stall-timeout {ctx.stall_timeout_s:g} s)",
        values={"idle_s": round(ctx.idle_s, 1), "stall_timeout_s": ctx.stall_timeout_s},
    )


WATCH_RULES: tuple[Rule, ...] = (Rule("TP-LOG-STALLED", Level.WARN, stalled, "watch"),)
"""watch's own rules; :mod:`trainproof.checks.registry` names them, imported when watch judges."""
