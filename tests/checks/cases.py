"""Rule cases as data: for every rule, curves where it must fire and curves where it must not.

Each case builds a synthetic Run (or a run and its baseline, for compare
rules) whose truth is known by construction. ``level`` pins the level of the
finding where a rule can report at more than one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from tests.helpers import decaying, make_run, noisy
from trainproof.commands import judge
from trainproof.config import DEFAULT_SETTINGS, parse
from trainproof.report import Report, Subject
from trainproof.runs.model import Checkpoint, Run


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[], Run | tuple[Run, Run]]
    fires: bool
    level: str | None = None
    overrides: dict = field(default_factory=dict)
    watch: dict | None = None  # options of a `watch` judgement (idle_s, stall_timeout_s): the case is judged as watch judges


def healthy(n: int = 60, seed: int = 0) -> Run:
    loss = noisy(decaying(n), 0.02, seed)
    return make_run(loss, lr=[1e-4] * n, grad=noisy(np.full(n, 0.5), 0.05, seed + 1))


def _with(values, index, value):
    out = np.array(values, dtype=float)
    out[index] = value
    return out


def lr_hot() -> Run:
    start = [1.40, 3.30, 24.2, 26.4, 20.1, 16.3, 36.8, 24.6, 12.4, 9.9]
    tail = noisy(np.linspace(9.0, 7.5, 50), 0.15, 3)
    return make_run(np.concatenate([start, tail]), lr=[1e-2] * 60)


def late_divergence() -> Run:
    down = decaying(40, 2.0, 0.5)
    up = np.linspace(0.6, 1.6, 20)
    ckpts = (Checkpoint(300, "out/checkpoint-300"), Checkpoint(500, "out/checkpoint-500"))
    return make_run(noisy(np.concatenate([down, up]), 0.01, 4), checkpoints=ckpts)


def single_dip() -> Run:
    loss = noisy(np.full(60, 1.0), 0.03, 5)
    loss[30] = 0.05  # one noisy low point must not make the end look far above "the best"
    return make_run(loss * np.linspace(1.3, 1.0, 60))


def flat_noisy(seed: int = 6) -> Run:
    return make_run(noisy(np.full(60, 1.47), 0.1, seed), lr=[1e-4] * 60)


def converged_early(runtime_s: float) -> Run:
    curve = np.concatenate([decaying(18, 2.0, 1.0, 5.0), np.full(42, 1.0)])
    return make_run(noisy(curve, 0.01, 7), runtime_s=runtime_s)


def still_falling() -> Run:
    return make_run(noisy(np.linspace(2.0, 0.8, 60), 0.01, 8), runtime_s=36000)


def overfitting() -> Run:
    train = noisy(decaying(60, 1.4, 0.03, 8.0), 0.005, 9)
    steps = list(range(15, 301, 15))
    eval_curve = np.concatenate([[1.37, 1.25], np.linspace(1.31, 3.76, len(steps) - 2)])
    return make_run(train, steps=list(range(5, 301, 5)), evals={"eval_loss": (steps, eval_curve)})


def generalising() -> Run:
    train = noisy(decaying(60, 1.4, 0.3, 4.0), 0.005, 10)
    steps = list(range(15, 301, 15))
    return make_run(train, steps=list(range(5, 301, 5)), evals={"eval_loss": (steps, np.linspace(1.4, 0.5, len(steps)))})


def finetune_too_hot(train_points: int = 60) -> Run:
    """A fine-tune whose learning rate warmed up to a peak too high: eval loss lowest at its first evaluation,
    85% higher five evaluations later, while the training loss rises for a while and partly recovers."""
    x = np.linspace(0, 1, 60)
    train = noisy(0.6 + 1.9 * np.exp(-30 * x) + 0.6 * np.exp(-(((x - 0.5) / 0.2) ** 2)) + 0.3 * x, 0.01, 13)[:train_points]
    steps = list(range(50, 3001, 50))[:train_points]
    evals = {"eval_loss": ([500, 1000, 1500, 2000, 2500, 3000], [0.52, 0.78, 0.93, 0.99, 0.96, 0.95])}
    ckpts = (Checkpoint(500, "out/checkpoint-500"), Checkpoint(3000, "out/checkpoint-3000"))
    return make_run(train, steps=steps, evals=evals, checkpoints=ckpts)


def eval_noisy_flat(seed: int = 14) -> Run:
    """An eval loss that only jitters about one level (its lowest point is noise), beside a flat training loss
    (so TP-OVERFIT, which needs the training loss to fall, stays out of it)."""
    steps = list(range(100, 3001, 100))
    evals = {"eval_loss": (steps, noisy(np.full(30, 1.0), 0.05, seed))}
    return make_run(flat_noisy(seed).loss.values, steps=list(range(50, 3001, 50)), evals=evals)


def grads(values) -> Run:
    n = len(values)
    return make_run(noisy(decaying(n), 0.02, 11), grad=values)


def timed(per_step: np.ndarray, every: int = 50) -> Run:
    n = per_step.size
    steps = np.arange(1, n + 1) * every
    wall = np.concatenate([[0.0], np.cumsum(per_step[1:] * every)])
    return make_run(noisy(decaying(n), 0.01, 12), steps=steps.tolist(), wall=wall)


def pair(run: Run, baseline: Run) -> tuple[Run, Run]:
    return run, baseline


CASES: dict[str, list[Case]] = {
    "TP-LOSS-NONFINITE": [
        Case("nan and inf mid-run", lambda: make_run(_with(_with(decaying(), 30, np.nan), 31, np.inf)), True),
        Case("healthy", healthy, False),
    ],
    "TP-GRAD-NONFINITE": [
        Case("overflows with a NaN loss", lambda: make_run(_with(decaying(), 31, np.nan), grad=_with(_with(np.full(60, 0.5), 10, np.inf), 30, np.nan)), True, level="FAIL"),
        Case("the run ends on an overflow", lambda: grads(_with(np.full(60, 0.5), 59, np.inf)), True, level="FAIL"),
        Case("most norms overflow", lambda: grads(np.where(np.arange(60) % 3 == 2, 0.5, np.inf)), True, level="FAIL"),
        Case("one overflow, loss finite: a scaler's skipped step", lambda: grads(_with(np.full(60, 0.5), 10, np.inf)), True, level="WARN"),
        Case("two overflows in 230 steps, loss finite and falling", lambda: grads(_with(_with(np.full(230, 0.5), 40, np.inf), 120, np.inf)), True, level="WARN"),
        Case("huge but finite norms", lambda: grads(np.full(60, 1e6)), False),
    ],
    "TP-EVAL-NONFINITE": [
        Case("nan eval loss", lambda: make_run(decaying(), evals={"eval_loss": ([100, 200, 300], [1.9, 1.7, np.nan])}), True),
        Case("finite eval loss", lambda: make_run(decaying(), evals={"eval_loss": ([100, 200, 300], [1.9, 1.7, 1.6])}), False),
    ],
    "TP-LOSS-ZERO": [
        Case("drops to exact zero", lambda: make_run(np.concatenate([[0.0328], np.zeros(59)])), True),
        Case("zero throughout", lambda: make_run(np.zeros(20)), True),
        Case("converged and printed rounded", lambda: make_run(np.concatenate([decaying(50, 1.0, 0.0002, 12), [0.0001, 0.0001, 0, 0, 0]])), False),
        Case("RL objective with zeros and negatives", lambda: make_run(np.tile([0.0, 0.0, -0.0003, 0.0, 0.0002], 12)), False),
        Case("healthy", healthy, False),
    ],
    "TP-LOSS-FLAT": [
        Case("one value repeated", lambda: make_run(np.full(40, 2.302585)), True),
        Case("noisy flat loss is not constant", flat_noisy, False),
        Case(
            "a fall, then one full-precision value: a stale number",
            lambda: make_run(np.concatenate([np.linspace(2.0, 0.06, 10), np.full(190, 0.0512347)])),
            True,
            level="FAIL",
        ),
        # printed to two decimals, a loss converged to 0.05 shows no jitter: not proof that it cannot move
        Case(
            "converged, printed to two decimals",
            lambda: make_run(np.round(0.05 + 2 * np.exp(-np.arange(200) / 3), 2)),
            True,
            level="WARN",
        ),
        # printed to two decimals too, but stuck at 2.30 (230 steps of 0.01, beyond FLAT_COARSE_QUANTA): no converged
        # loss jitters that little at that level, so the print does not excuse it
        Case(
            "a fall, then 2.30 printed to two decimals",
            lambda: make_run(np.concatenate([np.round(np.linspace(9.0, 2.31, 30), 2), np.full(300, 2.30)])),
            True,
            level="FAIL",
        ),
    ],
    "TP-LR-ZERO": [
        Case("zero learning rate", lambda: make_run(noisy(np.full(60, 1.5), 0.1), lr=[0.0] * 60), True),
        # a log writing 2e-5 as 0.0000, or the rate of a param group that does not train: the falling loss shows the
        # weights moved, so the zeros cannot prove they did not
        Case("logged as 0 while the loss falls 75%", lambda: make_run(noisy(decaying(), 0.02, 3), lr=[0.0] * 60), True, level="WARN"),
        Case("cosine decay to zero at the last step", lambda: make_run(decaying(), lr=(1e-4 * (1 + np.cos(np.linspace(0, np.pi, 60))) / 2).tolist()), False),
    ],
    "TP-LR-ZERO-PARTIAL": [
        Case("decay reaches zero at 60%", lambda: make_run(decaying(), lr=np.concatenate([np.linspace(1e-4, 0, 36), np.zeros(24)]).tolist()), True),
        Case("zero on a third of steps", lambda: make_run(decaying(), lr=np.tile([1e-4, 1e-4, 0.0], 20).tolist()), True),
        Case("linear decay ending at zero", lambda: make_run(decaying(), lr=np.linspace(1e-4, 0, 60).tolist()), False),
    ],
    "TP-DIVERGE": [
        Case("learning rate 100x too hot", lr_hot, True),
        Case("late blow-up after a good start", late_divergence, True),
        Case("one noisy low point", single_dip, False),
        Case("healthy", healthy, False),
    ],
    "TP-NO-LEARNING": [
        Case("flat loss, small noise", lambda: make_run(noisy(np.full(60, 1.47), 0.01, 6), lr=[1e-4] * 60), True, level="FAIL"),
        Case("noisy flat loss: too noisy to prove", flat_noisy, True, level="WARN"),
        Case("healthy", healthy, False),
        Case("converged early", lambda: converged_early(300.0), False),
    ],
    "TP-PLATEAU": [
        Case("ten GPU-hours on a plateau", lambda: converged_early(36000.0), True, level="WARN"),
        Case("five-minute fine-tune that converged early", lambda: converged_early(300.0), True, level="INFO"),
        Case("no clock in the log", lambda: make_run(converged_early(1.0).loss.values), True, level="INFO"),
        Case("still falling at the end", still_falling, False),
    ],
    "TP-OVERFIT": [
        Case("eval climbs while train falls", overfitting, True),
        Case("eval keeps improving", generalising, False),
    ],
    "TP-EVAL-WORSE": [
        Case("eval ends 85% above its first evaluation while training rises and partly recovers", finetune_too_hot, True),
        Case("a single training-loss point: judged on the eval series alone", lambda: finetune_too_hot(train_points=1), True),
        Case("eval keeps improving", generalising, False),
        Case("eval jitters about one level", eval_noisy_flat, False),
        Case("eval climbs while train falls: TP-OVERFIT says it", overfitting, False),
    ],
    "TP-GRAD-SPIKE": [
        Case("isolated huge norm", lambda: grads(_with(noisy(np.full(60, 0.5), 0.05), 20, 2650.0)), True),
        Case("steep early descent", lambda: grads(np.concatenate([[14, 9.9, 8.6, 7.2, 23.3, 7.45, 3.84, 2.12, 2.05, 1.65], noisy(np.full(50, 1.1), 0.1)])), False),
        Case("large everywhere", lambda: grads(noisy(np.full(60, 1e5), 1e4)), False),
    ],
    "TP-LOSS-SPIKE": [
        Case("one batch triples the loss", lambda: make_run(_with(noisy(np.full(60, 1.1), 0.02), 30, 3.9)), True),
        Case("steep early descent", lambda: make_run(np.concatenate([[18.9, 17.0, 15.3, 12.6, 9.6, 7.4, 6.7], noisy(np.full(53, 6.0), 0.1)])), False),
        Case("healthy noise", healthy, False),
    ],
    "TP-STEP-TIME-CLIFF": [
        Case("slow stretch in the middle", lambda: timed(np.concatenate([np.full(40, 0.08), np.full(30, 1.54), np.full(30, 0.08)])), True),
        Case("slow to the end", lambda: timed(np.concatenate([np.full(70, 0.4), np.full(30, 1.1)])), True),
        Case("slow first step only", lambda: timed(np.concatenate([[30.0], noisy(np.full(99, 0.08), 0.005)])), False),
    ],
    "TP-LOADER-BOUND": [
        Case("waiting for data", lambda: make_run(decaying(), step_time=[0.4] * 60, loader_time=[0.9] * 60), True),
        Case("fast pipeline", lambda: make_run(decaying(), step_time=[0.05] * 60, loader_time=[0.004] * 60), False),
    ],
    "TP-CMP-FLOOR": [
        Case("floor 5x the baseline's", lambda: pair(make_run(noisy(decaying(60, 18.0, 5.7), 0.1)), healthy()), True),
        Case("same recipe, other seed", lambda: pair(healthy(seed=1), healthy(seed=2)), False),
    ],
    "TP-CMP-END": [
        Case("ends 1.4x above", lambda: pair(make_run(noisy(decaying(60, 2.0, 0.7), 0.01)), healthy()), True),
        Case("ends level", lambda: pair(healthy(seed=3), healthy(seed=4)), False),
    ],
    "TP-CMP-IMPROVEMENT": [
        Case("improved a tenth as much", lambda: pair(make_run(noisy(np.linspace(2.0, 1.85, 60), 0.01)), healthy()), True),
        Case("improved as much", lambda: pair(healthy(seed=5), healthy(seed=6)), False),
    ],
    "TP-CMP-WORSE-THAN-START": [
        Case("rises where the baseline fell", lambda: pair(make_run(noisy(np.linspace(1.0, 1.3, 60), 0.01)), healthy()), True),
        Case("falls like the baseline", lambda: pair(healthy(seed=7), healthy(seed=8)), False),
    ],
    "TP-CMP-GRAD-SCALE": [
        Case("gradients 100x the baseline's", lambda: pair(grads(noisy(np.full(60, 50.0), 1.0)), healthy()), True),
        Case("gradients alike", lambda: pair(healthy(seed=9), healthy(seed=10)), False),
    ],
    "TP-CMP-LR-ZERO": [
        Case("zero rate against a working one", lambda: pair(make_run(noisy(np.full(60, 1.5), 0.1), lr=[0.0] * 60), healthy()), True),
        Case("logged as 0 while the run's loss falls", lambda: pair(make_run(noisy(decaying(), 0.02, 3), lr=[0.0] * 60), healthy()), True, level="WARN"),
        Case("both have a rate", lambda: pair(healthy(seed=11), healthy(seed=12)), False),
    ],
    "TP-CMP-BASELINE-UNHEALTHY": [
        Case("baseline with NaN loss", lambda: pair(healthy(), make_run(_with(decaying(), 40, np.nan))), True),
        Case("healthy baseline", lambda: pair(healthy(seed=13), healthy(seed=14)), False),
    ],
    "TP-LOG-STALLED": [
        Case("no growth for 20 minutes", healthy, True, watch={"idle_s": 1200.0, "stall_timeout_s": 900.0}),
        Case("grew a minute ago", healthy, False, watch={"idle_s": 60.0, "stall_timeout_s": 900.0}),
    ],
}


def report_of(case: Case) -> Report:
    """A case judged through the one judge path, by the command its rule belongs to."""
    settings = parse({"thresholds": case.overrides}, "case") if case.overrides else DEFAULT_SETTINGS
    built = case.build()
    if isinstance(built, tuple):
        run, baseline = built
        return judge("compare", [run], settings, baseline=baseline)
    if case.watch is not None:
        return judge("watch", [built], settings, **case.watch)
    return judge("epoch", [built], settings)


def check_case(subject: Subject, rule_id: str, fires: bool, level: str | None) -> None:
    """A rule case's verdict on its subject: where it fires, a finding of the rule (at ``level`` when given) citing
    numbers, and the rule among those that ran; where it must not, no finding of the rule."""
    hits = [f for f in subject.findings if f.rule_id == rule_id]
    if fires:
        assert hits, f"{rule_id} did not fire; findings: {[f.rule_id for f in subject.findings]}; skipped: {subject.skipped}"
        assert rule_id in subject.ran
        if level is not None:
            assert {f.level.name for f in hits} == {level}
        for finding in hits:
            assert finding.message
            assert finding.evidence
            assert any(ch.isdigit() for ch in finding.evidence), "evidence must cite numbers"
    else:
        assert not hits, f"{rule_id} fired: {hits[0].message}"
