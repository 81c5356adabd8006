"""Rules about evaluation loss against training loss."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from trainproof import fmt
from trainproof.checks.base import Hit, NotApplicable, RunContext
from trainproof.stats import median


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
    evaluations, the median of its last (up to three) evaluations after its
    best is at least OVERFIT_RISE above the best, over at least
    OVERFIT_MIN_EVALS_AFTER_BEST evaluations, while the training loss at the
    end is below where it was at the best evaluation by more than
    NOISE_SIGMAS robust noise sigmas.
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
    ctx.unless_fired("TP-DIVERGE")
    prof = ctx.curve()
    t = ctx.t
    judged = 0
    climbed = []
    for name, series in ctx.run.eval_losses.items():
        part = series.finite_part()
        if len(part) < t.OVERFIT_MIN_EVALS:
            continue
        judged += 1
        values, steps = part.values, part.steps
        best_i = int(np.argmin(values))
        after = values[best_i + 1 :]
        if after.size < t.OVERFIT_MIN_EVALS_AFTER_BEST or values[best_i] <= 0:
            continue
        best, best_step = float(values[best_i]), int(steps[best_i])
        end_eval = float(median(after[-3:]))
        rise = end_eval / best - 1
        if rise < t.OVERFIT_RISE:
            continue
        before = prof.values[prof.steps <= best_step]
        if before.size == 0:
            continue
        train_then = float(median(before[-max(1, min(prof.tail_points, before.size)) :]))
        if not prof.above(train_then, prof.end, t.NOISE_SIGMAS, min(before.size, prof.tail_points), prof.tail_points):
            continue
        climbed.append(_Climb(rise, name, best, best_step, end_eval, train_then, int(after.size), int(steps[-1])))
    if not judged:
        raise NotApplicable(f"fewer than {t.OVERFIT_MIN_EVALS} finite evaluations in every eval set")
    if not climbed:
        return
    climbed.sort(key=lambda c: (-c.rise, c.name))
    worst = climbed[0]
    checkpoint = ctx.run.checkpoint_nearest(worst.best_step)
    keep = f" Nearest checkpoint the trainer recorded: {checkpoint.path} (step {fmt.step(checkpoint.step)})." if checkpoint else ""
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
    }
    if checkpoint is not None:
        values_out["nearest_checkpoint"] = checkpoint.path
    evidence = "; ".join(
        f"{c.name}: best {fmt.num(c.best)} at step {fmt.step(c.best_step)}, {c.evals_after} evaluation"
        f"{'s' if c.evals_after > 1 else ''} after it, ends {fmt.num(c.end)} (+{fmt.pct(c.rise)})"
        for c in climbed[:5]
    )
    yield Hit(
        message=(
            f"Overfitting: {worst.name} was lowest at step {fmt.step(worst.best_step)} ({fmt.num(worst.best)}) and ends "
            f"{fmt.pct(worst.rise)} higher ({fmt.num(worst.end)}) while the training loss fell from "
            f"{fmt.num(worst.train_then)} to {fmt.num(prof.end)}.{others}{keep}"
        ),
        evidence=evidence + f"; training loss {fmt.num(worst.train_then)} at the best evaluation, {fmt.num(prof.end)} at the end",
        values=values_out,
        steps=(worst.best_step, worst.last_step),
    )
