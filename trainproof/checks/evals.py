"""Rules about evaluation loss and metrics: against training loss, and on their own."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

import numpy as np

from trainproof.checks.base import Hit, NotApplicable, RunContext
from trainproof.checks.sentences import nearest_checkpoint
from trainproof.checks.stats import Profile, median, robust_sigma, trend_t
from trainproof.checks.thresholds import Thresholds
from trainproof.io import figures
from trainproof.runs.model import Run, Series
from trainproof.runs.readers.names import is_eval_name

_R = TypeVar("_R", bound="_Rise")

_ORDINALS = ("first", "second", "third")


@dataclass(frozen=True)
class _Steady:
    """The proof that an eval series got worse steadily from its start: where its best evaluation is among its first,
    how many of the evaluations after it were worse than the one before, the rank trend of the evaluations from the
    best on, and how far the end is above the best in noise sigmas (None when the series has no noise to measure)."""

    best_index: int  # 0: the first evaluation
    evals_after: int
    worse_steps: int
    trend_t: float
    sigmas: float | None
    stayed_worse: float | None = None  # EVAL_WORSE_RISE, when every evaluation after the best was at least that much worse

    @property
    def best_at(self) -> str:
        ordinal = _ORDINALS[self.best_index] if self.best_index < len(_ORDINALS) else f"{self.best_index + 1}th"
        return f"its {ordinal} evaluation"

    @property
    def worse_count(self) -> str:
        """How many of the evaluations after the best were worse than the one before: "each", or "7 of them"."""
        return "each" if self.worse_steps == self.evals_after else f"{self.worse_steps} of them"

    @property
    def course(self) -> str:
        """How the evaluations after the best went, after "... and": a jump that stayed, or a steady climb."""
        if self.stayed_worse is not None:
            return f"every one of the {self.evals_after} evaluations after it was at least {figures.pct(self.stayed_worse)} worse"
        return f"got steadily worse over the {self.evals_after} evaluations after it ({self.worse_count} worse than the one before)"

    def evidence(self) -> str:
        if self.stayed_worse is not None:
            return f"best at {self.best_at}, then {self.evals_after} evaluations, each at least {figures.pct(self.stayed_worse)} worse"
        # every step worse: the rank correlation is then as high as it goes, and its t (capped at rho 0.999999) says no more
        trend = "" if self.worse_steps == self.evals_after else f", rank trend t {self.trend_t:.1f}"
        noise = f", {self.sigmas:.1f} noise sigmas above the best" if self.sigmas is not None else ""
        return f"best at {self.best_at}, then {self.evals_after} evaluations ({self.worse_count} worse than the one before){trend}{noise}"

    def values(self) -> dict:
        return {
            "best_eval_index": self.best_index,
            "evals_after_best": self.evals_after,
            "evals_worse_than_previous": self.worse_steps,
            "trend_t": round(self.trend_t, 2),
            **({"noise_sigmas": round(self.sigmas, 2)} if self.sigmas is not None else {}),
            **({"each_after_worse_by": self.stayed_worse} if self.stayed_worse is not None else {}),
        }


@dataclass(frozen=True)
class _Rise:
    """How one eval series ended worse than its best evaluation: for a loss (or a metric where lower is better),
    above its lowest; for a metric where higher is better (``goal`` ``max``), below its highest. ``rise`` is how much
    worse, as the rise of the series (of its reciprocal for a ``max`` metric), so the two kinds rank together."""

    rise: float
    name: str
    best: float
    best_step: int
    end: float
    evals_after: int
    last_step: int

    steady: _Steady | None = field(default=None, kw_only=True)  # set when the rise is proven by its steadiness, not its size

    goal = "min"

    @property
    def change(self) -> float:
        """The end against the best, as a signed share of the best (+0.85 is 85% higher, -0.25 25% lower)."""
        return self.end / self.best - 1

    @property
    def extreme(self) -> str:
        return "lowest" if self.goal == "min" else "highest"

    @property
    def worse(self) -> str:
        return "higher" if self.goal == "min" else "lower"

    def evidence(self) -> str:
        if self.steady is not None:
            ends = f"best {figures.num(self.best)}, ends {figures.num(self.end)} ({self._signed_change()})"
            return f"{self.name}: {self.steady.evidence()}; {ends}"
        return (
            f"{self.name}: best {figures.num(self.best)} at step {figures.step(self.best_step)}, {self.evals_after} evaluation"
            f"{'s' if self.evals_after > 1 else ''} after it, {self._detail()}ends {figures.num(self.end)} "
            f"({self._signed_change()}){self._note()}"
        )

    def _signed_change(self) -> str:
        return f"{'+' if self.change >= 0 else '-'}{figures.pct(abs(self.change))}"

    def _detail(self) -> str:
        return ""

    def _note(self) -> str:
        return ""


@dataclass(frozen=True)
class _Climb(_Rise):
    train_then: float


@dataclass(frozen=True)
class _Worse(_Rise):
    low: float  # the best of the last evaluations (the lowest of a loss, the highest of a max metric)
    sigmas: float | None
    goal: str = "min"  # a field here, a class default on _Rise

    def _detail(self) -> str:
        return f"the last at {'least' if self.goal == 'min' else 'most'} {figures.num(self.low)}, "

    def _note(self) -> str:
        return f", {self.sigmas:.1f} noise sigmas {'above' if self.goal == 'min' else 'below'} the best" if self.sigmas is not None else ""


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


def _steady_rise(values: np.ndarray, b: _AfterBest, t: Thresholds) -> _Steady | None:
    """The proof that an eval series (lower is better) got worse steadily from its start, for a rise too small to be
    judged on its size: its best is one of its first EVAL_RISING_HEAD_EVALS evaluations, and the EVAL_RISING_MIN_EVALS
    or more from the best to the end rise in a rank trend of t >= EVAL_RISING_TREND_T to an end level EVAL_RISING_RISE
    above the best and more than EVAL_RISING_SIGMAS robust noise sigmas of their log values. None when it did not."""
    if b.best_i >= t.EVAL_RISING_HEAD_EVALS or b.rise < t.EVAL_RISING_RISE:
        return None
    stretch = values[b.best_i :]  # all at or above the best, which _after_best found positive
    if stretch.size < t.EVAL_RISING_MIN_EVALS:
        return None
    trend = trend_t(stretch)
    logs = np.log(stretch)
    noise = robust_sigma(logs, t.NOISE_FALLBACK_QUANTILE)
    gap = float(np.log(b.end) - logs[0])
    # a jump that never came back: every evaluation after the best is EVAL_WORSE_RISE above it, each one a proof
    stayed_worse = bool(stretch[1:].min() >= stretch[0] * (1 + t.EVAL_WORSE_RISE))
    if not stayed_worse:
        if trend < t.EVAL_RISING_TREND_T:
            return None  # wanders rather than climbs
        if not gap > t.EVAL_RISING_SIGMAS * noise:
            return None  # within one evaluation's jitter of the best
    worse_steps = int(np.count_nonzero(np.diff(stretch) > 0))
    sigmas = float(gap / noise) if noise > 0 else None
    return _Steady(b.best_i, int(stretch.size - 1), worse_steps, trend, sigmas, t.EVAL_WORSE_RISE if stayed_worse else None)


def _need_eval_loss(ctx: RunContext) -> None:
    if not ctx.run.eval_losses:
        raise NotApplicable("the log has no eval loss")


def _flagged(series: Mapping[str, Series], needed: int, judge_one: Callable[[str, np.ndarray, np.ndarray], _R | None], what: str) -> list[_R]:
    """Judge every series with at least ``needed`` finite evaluations with ``judge_one(name, steps, values)``; the
    ones it flagged, worst first. NotApplicable when none has enough evaluations (``what`` names the series)."""
    judged = 0
    flagged = []
    for name, values in series.items():
        part = values.finite_part()
        if len(part) < needed:
            continue
        judged += 1
        found = judge_one(name, part.steps, part.values)
        if found is not None:
            flagged.append(found)
    if not judged:
        raise NotApplicable(f"fewer than {needed} finite evaluations in every {what}")
    flagged.sort(key=lambda r: (-r.rise, r.name))
    return flagged


def _rise_hit(
    ctx: RunContext,
    flagged: Sequence[_Rise],
    *,
    title: str,
    count_key: str,
    others_verb: str,
    middle: str,
    values: dict,
    evidence_tail: str = "",
    noun: str = "eval set",
) -> Hit:
    """The finding for the eval series in ``flagged`` (worst first): ``title`` opens the message, ``middle`` follows
    its "ends ... higher (...)", ``others_verb`` says what the other series (``noun``) did, ``values`` go after the
    shared ones."""
    worst = flagged[0]
    keep, keep_values = nearest_checkpoint(ctx.run, worst.best_step)
    more = len(flagged) - 1
    others = f" {more} more {noun}{'s' if more > 1 else ''} {others_verb} too." if more else ""
    metric = worst.name not in ctx.run.eval_losses
    values_out: dict = {
        **({"eval_metric": worst.name, "goal": worst.goal} if metric else {"eval_set": worst.name}),
        count_key: len(flagged),
        "best_eval": worst.best,
        "best_eval_step": worst.best_step,
        "end_eval": worst.end,
        ("rise" if worst.change >= 0 else "fall"): round(abs(worst.change), 4),
        **(worst.steady.values() if worst.steady is not None else {}),
        **values,
        **keep_values,
    }
    return Hit(
        message=f"{title}: {worst.name} {_course(worst)}{middle}.{others}{keep}",
        evidence="; ".join(r.evidence() for r in flagged[:5]) + evidence_tail,
        values=values_out,
        steps=(worst.best_step, worst.last_step),
    )


def _course(r: _Rise) -> str:
    """How the series went from its best evaluation to its end, in words: "was lowest at step 30 (1.25) and ends 200%
    higher (3.76)", or for a steady rise, from its first evaluation and how many of the later ones were worse."""
    ends = f"{figures.pct(abs(r.change))} {r.worse} ({figures.num(r.end)})"
    if r.steady is None:
        return f"was {r.extreme} at step {figures.step(r.best_step)} ({figures.num(r.best)}) and ends {ends}"
    s = r.steady
    return (
        f"was {r.extreme} at {s.best_at} (step {figures.step(r.best_step)}, {figures.num(r.best)}) and {s.course}, ending {ends}"
    )


def overfit(ctx: RunContext) -> Iterator[Hit]:
    """Eval loss climbs from its minimum while training loss keeps falling.

    What it detects: for each eval set with at least OVERFIT_MIN_EVALS finite
    evaluations, the median of its last (up to OVERFIT_END_EVALS) evaluations
    after its best is at least OVERFIT_RISE above the best, over at least
    OVERFIT_MIN_EVALS_AFTER_BEST evaluations, each of those last ones above
    the best by more than sqrt(2 ln n) robust noise sigmas of the series' n
    evaluations (how far the lowest of n noisy evaluations lands below their
    level by chance: a best that is a lucky dip is no level the run climbed
    from); or, for a smaller rise, the
    eval loss climbs steadily from its start: its best is one of its first
    EVAL_RISING_HEAD_EVALS evaluations, and the EVAL_RISING_MIN_EVALS or more
    from the best to the end rise in a consistent trend (the t of the rank
    correlation between step and eval loss at least EVAL_RISING_TREND_T) to
    an end level at least EVAL_RISING_RISE above the best and more than
    EVAL_RISING_SIGMAS robust noise sigmas of their log values, or (a jump
    that never came back) every one of them after the best is at least
    EVAL_WORSE_RISE above it, each evaluation a proof of its own. Either way,
    the training loss at the end is below where it was at the best
    evaluation by more than NOISE_SIGMAS robust noise sigmas (see
    NOISE_FALLBACK_QUANTILE).
    Why it matters: past the best evaluation the model is memorising the
    training set; every further step makes it worse on unseen data, and the
    checkpoint to keep is the one at the best evaluation (named when the
    trainer recorded it).
    Fires on: a 64-sample fine-tune whose eval loss bottoms at 1.25 on step
    30 and ends at 3.76 while the training loss falls to 0.03; a model
    already fit on its task, fine-tuned on 32 of its sequences, whose eval
    loss is lowest at its first evaluation (1.217) and worse than the one
    before at 19 of the 20 after it, ending 7.4% higher, while the training
    loss falls 16%.
    Does not fire on: eval loss that keeps improving, however low the
    training loss goes; a noisy eval loss whose best is one dip of its
    jitter (a Whisper fine-tune whose eval loss swings 0.21-0.27 while
    trending down: its lowest, 0.209, was 15% below the end but 0.5 noise
    sigmas below the last evaluations); an eval loss less than OVERFIT_RISE above its best
    that wanders without a trend, or whose lowest point comes after its
    first evaluations; and it stays quiet when TP-DIVERGE fired, since a
    blown-up model's eval loss climbs for another reason than memorising.
    Does not mean: task metrics (accuracy, WER) got worse; they can lag the
    loss, and a speech model's WER often keeps improving while its eval loss
    climbs. When the log has eval metrics, the message says how each moved
    since the best evaluation.
    """
    _need_eval_loss(ctx)
    prof = ctx.curve()
    t = ctx.t
    climbed = _flagged(ctx.run.eval_losses, t.OVERFIT_MIN_EVALS, lambda name, steps, values: _climb(name, steps, values, prof, t), "eval set")
    if climbed:
        worst = climbed[0]
        hit = _rise_hit(
            ctx,
            climbed,
            title="Overfitting",
            count_key="eval_sets_climbing",
            others_verb="climbed",
            middle=f" while the training loss fell {_fall(worst, prof.end)}from {figures.num(worst.train_then)} to {figures.num(prof.end)}",
            values={"train_at_best_eval": worst.train_then, "train_end": prof.end},
            evidence_tail=f"; training loss {figures.num(worst.train_then)} at the best evaluation, {figures.num(prof.end)} at the end",
        )
        improved, worsened = _metrics_since(ctx.run, worst.best_step, t)
        if improved:
            hit = replace(
                hit,
                message=hit.message + f" Meanwhile {'; '.join(improved)}: if you pick checkpoints by "
                f"{'that metric' if len(improved) == 1 else 'these metrics'}, the later ones are the better ones.",
                values={**hit.values, "metrics_improved": len(improved)},
            )
        if worsened:
            hit = replace(hit, message=hit.message + f" Worse since then too: {'; '.join(worsened)}.")
        yield hit


def _fall(climb: _Climb, end: float) -> str:
    """The training loss's fall as a share ("24% ") beside a steady eval climb, whose rise may be smaller; nothing
    beside a large one (its message reads as it always has), nor for a loss that is not positive."""
    return f"{figures.pct(1 - end / climb.train_then)} " if climb.steady is not None and climb.train_then > 0 and end >= 0 else ""


def _metrics_since(run: Run, step: int, t: Thresholds) -> tuple[list[str], list[str]]:
    """How each judged eval metric moved from its evaluation at (or last before) ``step`` to its level at the end (the
    median of its last, up to OVERFIT_END_EVALS, evaluations after it): the phrases for those that got better, and for
    those that got worse, by more than NOISE_SIGMAS robust noise sigmas of the metric's log values. A metric with a value
    at or below zero, or that moved within its noise, is not named."""
    improved: list[str] = []
    worsened: list[str] = []
    for name, series in run.eval_metrics.items():
        part = series.finite_part()
        if not len(part) or (part.values <= 0).any():
            continue
        before = part.values[part.steps <= step]
        after = part.values[part.steps > step]
        if not before.size or not after.size:
            continue
        then, end = float(before[-1]), float(median(after[-t.OVERFIT_END_EVALS :]))
        noise = robust_sigma(np.log(part.values), t.NOISE_FALLBACK_QUANTILE)
        if not abs(np.log(end / then)) > t.NOISE_SIGMAS * noise or figures.num(end) == figures.num(then):
            continue
        better = end < then if run.metric_goals.get(name, "min") == "min" else end > then
        phrase = f"{name} {'improved' if better else 'got worse'} from {figures.num(then)} to {figures.num(end)}"
        (improved if better else worsened).append(phrase)
    return improved, worsened


def _climb(name: str, steps: np.ndarray, values: np.ndarray, prof: Profile, t: Thresholds) -> _Climb | None:
    """How one eval set climbed after its best evaluation, or None when it did not overfit."""
    b = _after_best(steps, values, t.OVERFIT_MIN_EVALS_AFTER_BEST, t.OVERFIT_END_EVALS)
    if b is None:
        return None
    steady = None
    if b.rise < t.OVERFIT_RISE or not _past_a_lucky_dip(values, b, t):  # then only a steady climb from the start shows it
        steady = _steady_rise(values, b, t)
        if steady is None:
            return None
    then = _train_level_at(prof, b.best_step)
    if then is None:
        return None
    train_then, points_before = then
    if not prof.above(train_then, prof.end, t.NOISE_SIGMAS, min(points_before, prof.tail_points), prof.tail_points):
        return None  # the training loss did not keep falling after the best evaluation
    return _Climb(b.rise, name, b.best, b.best_step, b.end, int(b.after.size), int(steps[-1]), train_then, steady=steady)


def _past_a_lucky_dip(values: np.ndarray, b: _AfterBest, t: Thresholds) -> bool:
    """Whether each of the last evaluations after the best is above it by more than sqrt(2 ln n) robust noise sigmas of
    the series' n log values: how far below its level the lowest of n noisy evaluations lands by chance. A best that is
    one dip of a noisy series is no level the run climbed from (the falling training loss corroborates the rest)."""
    noise = robust_sigma(np.log(values), t.NOISE_FALLBACK_QUANTILE)
    return bool(np.log(b.tail.min() / b.best) > np.sqrt(2 * np.log(values.size)) * noise)


def _train_level_at(prof: Profile, step: int) -> tuple[float, int] | None:
    """The training-loss level at ``step`` (the median of as many points up to it as the end
    level has) and how many points the loss logged up to it; None before the first."""
    before = prof.values[prof.steps <= step]
    if before.size == 0:
        return None
    return float(median(before[-max(1, min(prof.tail_points, before.size)) :])), int(before.size)


def eval_worse(ctx: RunContext) -> Iterator[Hit]:
    """Eval loss, or an eval metric, ends well worse than its best and stays there, whatever the training loss does.

    What it detects: for each eval set's loss and each eval metric whose
    better direction is known (lower: wer, cer, perplexity, error, ...;
    higher: accuracy, f1, bleu, rouge, exact_match, ...; any other named
    with --metric NAME=min|max), the evaluations after its best one number
    at least EVAL_WORSE_MIN_EVALS_AFTER_BEST, and each of its last (up to)
    EVAL_WORSE_END_EVALS evaluations is at least EVAL_WORSE_RISE worse than
    the best, and the best of them is worse than it by more than
    EVAL_WORSE_SIGMAS + sqrt(2 ln n) robust noise sigmas of the series' n
    evaluations (the noise from its own first differences of log values,
    see NOISE_FALLBACK_QUANTILE; sqrt(2 ln n) sigmas is how far the best of
    n noisy evaluations lands from their level by chance). Or, for a
    smaller rise, the series climbs steadily from its start: its best is one
    of its first EVAL_RISING_HEAD_EVALS evaluations, and the
    EVAL_RISING_MIN_EVALS or more from the best to the end get worse in a
    consistent trend (the t of the rank correlation between step and value
    at least EVAL_RISING_TREND_T) to an end level (the median of the last
    EVAL_WORSE_END_EVALS) at least EVAL_RISING_RISE worse than the best and
    more than EVAL_RISING_SIGMAS robust noise sigmas of their log values, or
    every one of them after the best is at least EVAL_WORSE_RISE worse than
    it (a jump that never came back: no trend or noise test, since each
    later evaluation is a proof of its own).
    A metric where higher is better is judged by its reciprocal, so "EVAL_WORSE_RISE worse"
    is a fall of 1 - 1/(1 + EVAL_WORSE_RISE) (17% at the default), and a
    value of it below EVAL_METRIC_FLOOR of its highest (a collapse to zero or
    below) counts as that floor. A lower-is-better series whose best is zero or below is not
    judged: no rise can be measured against it. The end level named is the median of those last evaluations. It reads only the
    eval series, so it judges a log whose training loss is too short (or
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
    warmed up to a peak too high for fine-tuning); a speech-recognition
    fine-tune whose eval_wer goes from 0.177 to 0.28-0.31; a run whose
    weight decay (10, 1000x the usual) pulls harder as its learning rate
    warms up, so that its eval loss is lowest at its first evaluation
    (1.199) and worse than the one before at 17 of the 19 after it, ending
    13% higher, while its training loss climbs too; a Whisper-small
    fine-tune at a peak learning rate of 3e-3 whose eval loss is lowest at
    its first evaluation (2.553) and at least 23% above it at each of the 19
    after, up to 4.46 and back to 3.29.
    Does not fire on: eval loss or WER that keeps improving, accuracy that
    keeps rising; a noisy eval series whose end is within its own noise of
    its best point, or that wanders without a trend; a series that gets
    worse for a while and comes back;
    a metric whose better direction is unknown (named in a note instead). It
    stays quiet when TP-OVERFIT fired (the training loss fell meanwhile:
    overfitting is the sharper diagnosis), when TP-DIVERGE fired, and when
    TP-EVAL-NONFINITE did.
    Does not mean: the model is useless; it was better earlier, and may
    still be better than where it started.
    """
    run = ctx.run
    if not run.eval_losses and not run.eval_metrics:
        raise NotApplicable("the log has no eval loss, nor an eval metric whose better direction is known")
    t = ctx.t
    goals = {name: "min" for name in run.eval_losses} | {name: run.metric_goals.get(name, "min") for name in run.eval_metrics}
    series = {**run.eval_losses, **run.eval_metrics}
    judged = {name: _as_lower_is_better(values, goals[name], t) for name, values in series.items()}
    needed = t.EVAL_WORSE_MIN_EVALS_AFTER_BEST + 1

    def judge_one(name: str, steps: np.ndarray, values: np.ndarray) -> _Worse | None:
        original = series[name].finite_part()  # the same points as the judged series: its transform keeps finiteness
        return _worse(name, steps, values, t, goals[name], original.values)

    worse = _flagged(judged, needed, judge_one, "eval series")
    if worse:
        w = worse[0]
        held_out = w.name in run.eval_losses or is_eval_name(w.name)  # a metric the user named may be a training one
        what = "Eval loss" if w.name in run.eval_losses else "An eval metric" if held_out else "A metric you named"
        yield _rise_hit(
            ctx,
            worse,
            title=f"{what} got worse",
            count_key="eval_series_worse",
            others_verb="ended worse",
            middle=(
                f", still {'above' if w.goal == 'min' else 'below'} it over its last evaluations; the model at the end is worse "
                f"{'on held-out data ' if held_out else 'by it '}than the one at step {figures.step(w.best_step)}"
            ),
            values={"evals_after_best": w.evals_after, **({"noise_sigmas": round(w.sigmas, 2)} if w.sigmas is not None else {})},
            noun="eval series",
        )


def _as_lower_is_better(series: Series, goal: str, t: Thresholds) -> Series:
    """The series itself when lower is better; its reciprocal when higher is, a value below EVAL_METRIC_FLOOR of the
    series' highest (an accuracy collapsed to 0, an MCC gone negative, a value whose reciprocal would overflow)
    counted as that floor, so a collapse is a large fall rather than a point left out, and the judged series has a
    point wherever the original has a finite one. Nothing when no value is above zero."""
    if goal == "min":
        return series
    values = series.values
    finite = np.isfinite(values)
    top = float(values[finite].max()) if finite.any() else math.nan
    if not top > 0:
        return Series(series.steps[:0], values[:0])
    floor = t.EVAL_METRIC_FLOOR * top
    floored = np.where(finite, np.maximum(values, floor), np.nan)  # inf: no point
    return Series(series.steps, 1 / floored)


def _worse(name: str, steps: np.ndarray, values: np.ndarray, t: Thresholds, goal: str, original: np.ndarray) -> _Worse | None:
    """How one eval series (lower is better: a ``max`` metric comes as its reciprocal) ended worse than its best
    evaluation, or None when it did not (or noise cannot tell). The figures it names are the ``original`` values, in
    the metric's own units (a lower-is-better series is its own original)."""
    b = _after_best(steps, values, t.EVAL_WORSE_MIN_EVALS_AFTER_BEST, t.EVAL_WORSE_END_EVALS)
    if b is None:
        return None
    low = float(b.tail.min())
    logs = np.log(values)
    noise = robust_sigma(logs, t.NOISE_FALLBACK_QUANTILE)
    gap = float(np.log(low) - logs[b.best_i])
    # well above the best and staying there; and beyond the noise, where the lowest of n noisy evaluations sits about
    # sqrt(2 ln n) sigmas below their level by chance alone
    large = low >= b.best * (1 + t.EVAL_WORSE_RISE) and gap > (t.EVAL_WORSE_SIGMAS + float(np.sqrt(2 * np.log(values.size)))) * noise
    steady = None if large else _steady_rise(values, b, t)
    if not large and steady is None:
        return None
    sigmas = steady.sigmas if steady is not None else float(gap / noise) if noise > 0 else None
    if goal == "min":
        best, end = b.best, b.end
    else:
        tail = original[b.best_i + 1 :][-t.EVAL_WORSE_END_EVALS :]
        best, end, low = float(original[b.best_i]), float(median(tail)), float(tail.max())
    return _Worse(b.rise, name, best, b.best_step, end, int(b.after.size), int(steps[-1]), low, sigmas, goal, steady=steady)
