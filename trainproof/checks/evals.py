"""Rules about evaluation loss: against training loss, and on its own."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from trainproof import figures
from trainproof.checks.base import Hit, NotApplicable, RunContext
from trainproof.checks.sentences import nearest_checkpoint
from trainproof.stats import Profile, median, robust_sigma
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


@dataclass(frozen=True)
class _Worse:
    rise: float
    name: str
    best: float
    best_step: int
    end: float
    low: float
    sigmas: float | None
    evals_after: int
    last_step: int


def eval_worse(ctx: RunContext) -> Iterator[Hit]:
    """Eval loss ends well above its best and stays there, whatever the training loss does.

    What it detects: for each eval set, the evaluations after its best
    (lowest) one number at least EVAL_WORSE_MIN_EVALS_AFTER_BEST, and each of
    its last (up to) EVAL_WORSE_END_EVALS evaluations is at least
    EVAL_WORSE_RISE above the best, and the lowest of them is above it by
    more than EVAL_WORSE_SIGMAS + sqrt(2 ln n) robust noise sigmas of the
    series' n evaluations (the noise from its own first differences of log
    loss, see NOISE_FALLBACK_QUANTILE; sqrt(2 ln n) sigmas is how far the
    lowest of n noisy evaluations falls below their level by chance). The
    end level named is the median of those last evaluations. It reads only
    the eval series, so it judges a log whose training loss is too short (or
    absent) to judge.
    Why it matters: the model the run ends with is worse on held-out data
    than one it already had, whether the cause is memorising (see
    TP-OVERFIT), a learning rate too high for fine-tuning, or a data
    problem; the checkpoint to keep is the one at the best evaluation (named
    when the trainer recorded it), and the run's remaining steps bought
    nothing.
    Fires on: a fine-tune whose eval loss is lowest at its first evaluation
    (0.52) and ends at 0.96, 85% higher, five evaluations later, while the
    training loss rises for a while and partly recovers (the learning rate
    warmed up to a peak too high for fine-tuning).
    Does not fire on: eval loss that keeps improving; a noisy eval series
    whose end is within its own noise of its lowest point; an eval loss
    that rises for a while and comes back down. It stays quiet when
    TP-OVERFIT fired (the training loss fell meanwhile: overfitting is the
    sharper diagnosis), when TP-DIVERGE fired, and when TP-EVAL-NONFINITE did.
    Does not mean: task metrics (accuracy, WER) got worse; they can lag the
    loss, and they are not read from the log.
    """
    if not ctx.run.eval_losses:
        raise NotApplicable("the log has no eval loss")
    t = ctx.t
    needed = t.EVAL_WORSE_MIN_EVALS_AFTER_BEST + 1
    judged = 0
    worse = []
    for name, series in ctx.run.eval_losses.items():
        part = series.finite_part()
        if len(part) < needed:
            continue
        judged += 1
        found = _worse(name, part.steps, part.values, t)
        if found is not None:
            worse.append(found)
    if not judged:
        raise NotApplicable(f"fewer than {needed} finite evaluations in every eval set")
    if worse:
        worse.sort(key=lambda w: (-w.rise, w.name))
        yield _worse_hit(ctx, worse)


def _worse(name: str, steps: np.ndarray, values: np.ndarray, t: Thresholds) -> _Worse | None:
    """How one eval set ended above its best evaluation, or None when it did not (or noise cannot tell)."""
    best_i = int(np.argmin(values))
    after = values[best_i + 1 :]
    best = float(values[best_i])
    if after.size < t.EVAL_WORSE_MIN_EVALS_AFTER_BEST or best <= 0:
        return None
    tail = after[-t.EVAL_WORSE_END_EVALS :]
    low, end = float(tail.min()), float(median(tail))
    if low < best * (1 + t.EVAL_WORSE_RISE):
        return None  # not well above the best, or not staying there
    logs = np.log(values)
    noise = robust_sigma(logs, t.NOISE_FALLBACK_QUANTILE)
    gap = float(np.log(low) - np.log(best))
    # the lowest of n noisy evaluations sits about sqrt(2 ln n) sigmas below their level by chance alone
    if not gap > (t.EVAL_WORSE_SIGMAS + float(np.sqrt(2 * np.log(values.size)))) * noise:
        return None  # within the series' own noise
    sigmas = float(gap / noise) if noise > 0 else None
    return _Worse(end / best - 1, name, best, int(steps[best_i]), end, low, sigmas, int(after.size), int(steps[-1]))


def _worse_hit(ctx: RunContext, worse: list[_Worse]) -> Hit:
    """The finding for the eval sets that ended worse, worst first."""
    w = worse[0]
    keep, keep_values = nearest_checkpoint(ctx.run, w.best_step)
    others = f" {len(worse) - 1} more eval set{'s' if len(worse) > 2 else ''} ended worse too." if len(worse) > 1 else ""
    values_out: dict = {
        "eval_set": w.name,
        "eval_sets_worse": len(worse),
        "best_eval": w.best,
        "best_eval_step": w.best_step,
        "end_eval": w.end,
        "rise": round(w.rise, 4),
        "evals_after_best": w.evals_after,
        **({"noise_sigmas": round(w.sigmas, 2)} if w.sigmas is not None else {}),
        **keep_values,
    }
    evidence = "; ".join(
        f"{c.name}: best {figures.num(c.best)} at step {figures.step(c.best_step)}, {c.evals_after} evaluations after it, "
        f"the last at least {figures.num(c.low)}, ends {figures.num(c.end)} (+{figures.pct(c.rise)})"
        + (f", {c.sigmas:.1f} noise sigmas above the best" if c.sigmas is not None else "")
        for c in worse[:5]
    )
    return Hit(
        message=(
            f"Eval loss got worse: {w.name} was lowest at step {figures.step(w.best_step)} ({figures.num(w.best)}) and ends "
            f"{figures.pct(w.rise)} higher ({figures.num(w.end)}), still above it over its last evaluations; the model at the "
            f"end is worse on held-out data than the one at step {figures.step(w.best_step)}.{others}{keep}"
        ),
        evidence=evidence,
        values=values_out,
        steps=(w.best_step, w.last_step),
    )
