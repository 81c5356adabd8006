"""Rules about evaluation loss against training loss."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from trainproof import figures
from trainproof.checks.base import Hit, NotApplicable, RunContext
from trainproof.checks.sentences import nearest_checkpoint
from trainproof.stats import Profile, median
from trainproof.thresholds import Thresholds


@dataclass(frozen=True)
class _Climb:
    rise: float
    name: str
    best: float
    best_step: int
    end: float
    train_then: float
    evals_after: int
    last_step: int


def overfit(ctx: RunContext) -> Iterator[Hit]:
    """Eval loss climbs from its minimum while training loss keeps falling.

    What it detects: for each eval set with at least OVERFIT_MIN_EVALS finite
    evaluations, the median of its last (up to OVERFIT_END_EVALS) evaluations
    after its best is at least OVERFIT_RISE above the best, over at least
    OVERFIT_MIN_EVALS_AFTER_BEST evaluations, while the training loss at the
    end is below where it was at the best evaluation by more than
    NOISE_SIGMAS robust noise sigmas (see NOISE_FALLBACK_QUANTILE).
    Why it matters: past the best evaluation the model is memorising the
    training set; every further step makes it worse on unseen data, and the
    checkpoint to keep is the one at the best evaluation (named when the
    trainer recorded it).
    Fires on: a 64-sample fine-tune whose eval loss bottoms at 1.25 on step
    30 and ends at 3.76 while the training loss falls to 0.03.
    Does not fire on: eval loss that keeps improving, however low the
    training loss goes; and it stays quiet when TP-DIVERGE fired, since a
    blown-up model's eval loss climbs for another reason than memorising.
    Does not mean: task metrics (accuracy, WER) got worse; they can lag the loss.
    """
    if not ctx.run.eval_losses:
        raise NotApplicable("the log has no eval loss")
    prof = ctx.curve()
    t = ctx.t
    judged = 0
    climbed = []
    for name, series in ctx.run.eval_losses.items():
        part = series.finite_part()
        if len(part) < t.OVERFIT_MIN_EVALS:
            continue
        judged += 1
        climb = _climb(name, part.steps, part.values, prof, t)
        if climb is not None:
            climbed.append(climb)
    if not judged:
        raise NotApplicable(f"fewer than {t.OVERFIT_MIN_EVALS} finite evaluations in every eval set")
    if climbed:
        climbed.sort(key=lambda c: (-c.rise, c.name))
        yield _overfit_hit(ctx, prof, climbed)


def _climb(name: str, steps: np.ndarray, values: np.ndarray, prof: Profile, t: Thresholds) -> _Climb | None:
    """How one eval set climbed after its best evaluation, or None when it did not overfit."""
    best_i = int(np.argmin(values))
    after = values[best_i + 1 :]
    if after.size < t.OVERFIT_MIN_EVALS_AFTER_BEST or values[best_i] <= 0:
        return None
    best, best_step = float(values[best_i]), int(steps[best_i])
    end_eval = float(median(after[-t.OVERFIT_END_EVALS :]))
    rise = end_eval / best - 1
    if rise < t.OVERFIT_RISE:
        return None
    then = _train_level_at(prof, best_step)
    if then is None:
        return None
    train_then, points_before = then
    if not prof.above(train_then, prof.end, t.NOISE_SIGMAS, min(points_before, prof.tail_points), prof.tail_points):
        return None  # the training loss did not keep falling after the best evaluation
    return _Climb(rise, name, best, best_step, end_eval, train_then, int(after.size), int(steps[-1]))


def _train_level_at(prof: Profile, step: int) -> tuple[float, int] | None:
    """The training-loss level at ``step`` (the median of as many points up to it as the end
    level has) and how many points the loss logged up to it; None before the first."""
    before = prof.values[prof.steps <= step]
    if before.size == 0:
        return None
    return float(median(before[-max(1, min(prof.tail_points, before.size)) :])), int(before.size)


def _overfit_hit(ctx: RunContext, prof: Profile, climbed: list[_Climb]) -> Hit:
    """The finding for the eval sets that climbed, worst first."""
    worst = climbed[0]
    keep, keep_values = nearest_checkpoint(ctx.run, worst.best_step)
    others = f" {len(climbed) - 1} more eval set{'s' if len(climbed) > 2 else ''} climbed too." if len(climbed) > 1 else ""
    values_out: dict = {
        "eval_set": worst.name,
        "eval_sets_climbing": len(climbed),
        "best_eval": worst.best,
        "best_eval_step": worst.best_step,
        "end_eval": worst.end,
        "rise": round(worst.rise, 4),
        "train_at_best_eval": worst.train_then,
        "train_end": prof.end,
        **keep_values,
    }
    evidence = "; ".join(
        f"{c.name}: best {figures.num(c.best)} at step {figures.step(c.best_step)}, {c.evals_after} evaluation"
        f"{'s' if c.evals_after > 1 else ''} after it, ends {figures.num(c.end)} (+{figures.pct(c.rise)})"
        for c in climbed[:5]
    )
    return Hit(
        message=(
            f"Overfitting: {worst.name} was lowest at step {figures.step(worst.best_step)} ({figures.num(worst.best)}) and ends "
            f"{figures.pct(worst.rise)} higher ({figures.num(worst.end)}) while the training loss fell from "
            f"{figures.num(worst.train_then)} to {figures.num(prof.end)}.{others}{keep}"
        ),
        evidence=evidence + f"; training loss {figures.num(worst.train_then)} at the best evaluation, {figures.num(prof.end)} at the end",
        values=values_out,
        steps=(worst.best_step, worst.last_step),
    )
