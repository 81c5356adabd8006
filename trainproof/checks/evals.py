"""Rules about evaluation loss: against training loss, and on its own."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from trainproof import figures
from trainproof.checks.base import Hit, NotApplicable, RunContext
from trainproof.checks.sentences import nearest_checkpoint
from trainproof.stats import Profile, median, robust_sigma
from trainproof.thresholds import Thresholds

_R = TypeVar("_R", bound="_Rise")


@dataclass(frozen=True)
class _Rise:
    """How one eval set ended above its best (lowest) evaluation."""

    rise: float
    name: str
    best: float
    best_step: int
    end: float
    evals_after: int
    last_step: int

    def evidence(self) -> str:
        return (
            f"{self.name}: best {figures.num(self.best)} at step {figures.step(self.best_step)}, {self.evals_after} evaluation"
            f"{'s' if self.evals_after > 1 else ''} after it, {self._detail()}ends {figures.num(self.end)} (+{figures.pct(self.rise)})"
            f"{self._note()}"
        )

    def _detail(self) -> str:
        return ""

    def _note(self) -> str:
        return ""


@dataclass(frozen=True)
class _Climb(_Rise):
    train_then: float


@dataclass(frozen=True)
class _Worse(_Rise):
    low: float
    sigmas: float | None

    def _detail(self) -> str:
        return f"the last at least {figures.num(self.low)}, "

    def _note(self) -> str:
        return f", {self.sigmas:.1f} noise sigmas above the best" if self.sigmas is not None else ""


@dataclass(frozen=True)
class _AfterBest:
    """An eval series' best (lowest) evaluation, the evaluations after it, and the level it ends at."""

    best_i: int
    best: float
    best_step: int
    after: np.ndarray
    tail: np.ndarray  # the last (up to) end_evals evaluations after the best
    end: float  # their median

    @property
    def rise(self) -> float:
        return self.end / self.best - 1


def _after_best(steps: np.ndarray, values: np.ndarray, min_after: int, end_evals: int) -> _AfterBest | None:
    """The best evaluation and what follows it, or None with fewer than ``min_after`` evaluations after it
    (or a best that is not positive, so no rise can be measured against it)."""
    best_i = int(np.argmin(values))
    after = values[best_i + 1 :]
    best = float(values[best_i])
    if after.size < min_after or best <= 0:
        return None
    tail = after[-end_evals:]
    return _AfterBest(best_i, best, int(steps[best_i]), after, tail, float(median(tail)))


def _need_eval_loss(ctx: RunContext) -> None:
    if not ctx.run.eval_losses:
        raise NotApplicable("the log has no eval loss")


def _flagged_eval_sets(ctx: RunContext, needed: int, judge_one: Callable[[str, np.ndarray, np.ndarray], _R | None]) -> list[_R]:
    """Judge every eval set with at least ``needed`` finite evaluations with ``judge_one(name, steps, values)``;
    the ones it flagged, largest rise first. NotApplicable when no eval set has enough evaluations."""
    judged = 0
    flagged = []
    for name, series in ctx.run.eval_losses.items():
        part = series.finite_part()
        if len(part) < needed:
            continue
        judged += 1
        found = judge_one(name, part.steps, part.values)
        if found is not None:
            flagged.append(found)
    if not judged:
        raise NotApplicable(f"fewer than {needed} finite evaluations in every eval set")
    flagged.sort(key=lambda r: (-r.rise, r.name))
    return flagged


def _rise_hit(
    ctx: RunContext,
    flagged: list[_Rise],
    *,
    title: str,
    count_key: str,
    others_verb: str,
    middle: str,
    values: dict,
    evidence_tail: str = "",
) -> Hit:
    """The finding for the eval sets in ``flagged`` (worst first): ``title`` opens the message, ``middle`` follows its
    "ends ... higher (...)", ``others_verb`` says what the other eval sets did, ``values`` go after the shared ones."""
    worst = flagged[0]
    keep, keep_values = nearest_checkpoint(ctx.run, worst.best_step)
    more = len(flagged) - 1
    others = f" {more} more eval set{'s' if more > 1 else ''} {others_verb} too." if more else ""
    values_out: dict = {
        "eval_set": worst.name,
        count_key: len(flagged),
        "best_eval": worst.best,
        "best_eval_step": worst.best_step,
        "end_eval": worst.end,
        "rise": round(worst.rise, 4),
        **values,
        **keep_values,
    }
    return Hit(
        message=(
            f"{title}: {worst.name} was lowest at step {figures.step(worst.best_step)} ({figures.num(worst.best)}) and ends "
            f"{figures.pct(worst.rise)} higher ({figures.num(worst.end)}){middle}.{others}{keep}"
        ),
        evidence="; ".join(r.evidence() for r in flagged[:5]) + evidence_tail,
        values=values_out,
        steps=(worst.best_step, worst.last_step),
    )


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
    _need_eval_loss(ctx)
    prof = ctx.curve()
    t = ctx.t
    climbed = _flagged_eval_sets(ctx, t.OVERFIT_MIN_EVALS, lambda name, steps, values: _climb(name, steps, values, prof, t))
    if climbed:
        worst = climbed[0]
        yield _rise_hit(
            ctx,
            climbed,
            title="Overfitting",
            count_key="eval_sets_climbing",
            others_verb="climbed",
            middle=f" while the training loss fell from {figures.num(worst.train_then)} to {figures.num(prof.end)}",
            values={"train_at_best_eval": worst.train_then, "train_end": prof.end},
            evidence_tail=f"; training loss {figures.num(worst.train_then)} at the best evaluation, {figures.num(prof.end)} at the end",
        )


def _climb(name: str, steps: np.ndarray, values: np.ndarray, prof: Profile, t: Thresholds) -> _Climb | None:
    """How one eval set climbed after its best evaluation, or None when it did not overfit."""
    b = _after_best(steps, values, t.OVERFIT_MIN_EVALS_AFTER_BEST, t.OVERFIT_END_EVALS)
    if b is None or b.rise < t.OVERFIT_RISE:
        return None
    then = _train_level_at(prof, b.best_step)
    if then is None:
        return None
    train_then, points_before = then
    if not prof.above(train_then, prof.end, t.NOISE_SIGMAS, min(points_before, prof.tail_points), prof.tail_points):
        return None  # the training loss did not keep falling after the best evaluation
    return _Climb(b.rise, name, b.best, b.best_step, b.end, int(b.after.size), int(steps[-1]), train_then)


def _train_level_at(prof: Profile, step: int) -> tuple[float, int] | None:
    """The training-loss level at ``step`` (the median of as many points up to it as the end
    level has) and how many points the loss logged up to it; None before the first."""
    before = prof.values[prof.steps <= step]
    if before.size == 0:
        return None
    return float(median(before[-max(1, min(prof.tail_points, before.size)) :])), int(before.size)


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
    _need_eval_loss(ctx)
    t = ctx.t
    worse = _flagged_eval_sets(ctx, t.EVAL_WORSE_MIN_EVALS_AFTER_BEST + 1, lambda name, steps, values: _worse(name, steps, values, t))
    if worse:
        w = worse[0]
        yield _rise_hit(
            ctx,
            worse,
            title="Eval loss got worse",
            count_key="eval_sets_worse",
            others_verb="ended worse",
            middle=(
                ", still above it over its last evaluations; the model at the end is worse on held-out data than the one at "
                f"step {figures.step(w.best_step)}"
            ),
            values={"evals_after_best": w.evals_after, **({"noise_sigmas": round(w.sigmas, 2)} if w.sigmas is not None else {})},
        )


def _worse(name: str, steps: np.ndarray, values: np.ndarray, t: Thresholds) -> _Worse | None:
    """How one eval set ended above its best evaluation, or None when it did not (or noise cannot tell)."""
    b = _after_best(steps, values, t.EVAL_WORSE_MIN_EVALS_AFTER_BEST, t.EVAL_WORSE_END_EVALS)
    if b is None:
        return None
    low = float(b.tail.min())
    if low < b.best * (1 + t.EVAL_WORSE_RISE):
        return None  # not well above the best, or not staying there
    logs = np.log(values)
    noise = robust_sigma(logs, t.NOISE_FALLBACK_QUANTILE)
    gap = float(np.log(low) - logs[b.best_i])
    # the lowest of n noisy evaluations sits about sqrt(2 ln n) sigmas below their level by chance alone
    if not gap > (t.EVAL_WORSE_SIGMAS + float(np.sqrt(2 * np.log(values.size)))) * noise:
        return None  # within the series' own noise
    sigmas = float(gap / noise) if noise > 0 else None
    return _Worse(b.rise, name, b.best, b.best_step, b.end, int(b.after.size), int(steps[-1]), low, sigmas)
