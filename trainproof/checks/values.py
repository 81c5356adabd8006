"""Rules about the values themselves: non-finite numbers, exact zeros, a loss that never changes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np

from trainproof.checks.base import Hit, NotApplicable, RunContext, zero_tail
from trainproof.checks.findings import Level
from trainproof.checks.stats import median
from trainproof.checks.trend import real_fall
from trainproof.io import figures
from trainproof.runs.model import Series

_MAX_STEPS = 50


def _nonfinite(series: Series, label: str) -> Iterator[Hit]:
    bad = ~series.finite
    count = int(bad.sum())
    if not count:
        return
    steps = series.steps[bad].tolist()
    shown = []
    for s in steps[:5]:
        text = series.raw.get(s)
        value = series.values[series.steps == s][0]
        shown.append(f"{figures.step(s)} ({text!r})" if text is not None else f"{figures.step(s)} ({figures.num(value)})")
    more = f" and {count - 5} more" if count > 5 else ""
    finite_before = series.finite & (series.steps < steps[0])
    before = ""
    if finite_before.any():
        i = int(np.flatnonzero(finite_before)[-1])
        before = f"; last finite value before it {figures.num(series.values[i])} at step {figures.step(series.steps[i])}"
    yield Hit(
        message=f"The {label} is not a finite number at {count} of {len(series)} logged steps, first at step {figures.step(steps[0])}.",
        evidence=f"non-finite {label} at steps {', '.join(shown)}{more}{before}",
        values={"nonfinite": count, "logged": len(series), "first_step": steps[0]},
        steps=tuple(steps[:_MAX_STEPS]),
    )


def loss_nonfinite(ctx: RunContext) -> Iterator[Hit]:
    """Training loss is NaN, infinite or not a number at some logged step.

    What it detects: a logged training loss that is NaN, +/-Infinity, or a
    value that is not a number at all (kept from the log as text).
    Why it matters: once the loss is NaN the weights usually are too; every
    step after it is wasted GPU time, and a checkpoint saved after it is
    poison.
    Fires on: ``loss: 2.31, 2.29, NaN, NaN``.
    Does not fire on: a loss that is large but finite (see TP-DIVERGE).
    Does not mean: that the trainer stopped; many trainers keep stepping on NaN.
    Thresholds: none; a single non-finite value is a finding.
    """
    yield from _nonfinite(ctx.series("loss", "training loss"), "training loss")


def grad_nonfinite(ctx: RunContext) -> Iterator[Hit]:
    """Gradient norm is NaN or infinite at some logged step.

    What it detects: logged gradient norms that are NaN or +/-Infinity. They
    are a FAIL when the evidence shows harm: the loss is not finite throughout,
    the last logged norm is non-finite (the run ends broken), or at least
    GRAD_NONFINITE_FAIL_SHARE of the logged norms are non-finite (no scale
    works). Otherwise, with the loss finite throughout, they are a WARN.
    Why it matters: a non-finite gradient means an overflow in the backward
    pass; without a loss scaler that skips the step, it poisons the weights.
    Fires on: ``grad_norm: 0.5, 0.6, inf, 79.0, nan`` with a NaN loss; at WARN
    on two infinite norms in 230 steps with a finite, falling loss.
    Does not fire on: large but finite norms (see TP-GRAD-SPIKE).
    Does not mean: certain ruin with fp16 or bf16 dynamic loss scaling, which
    skips an overflowing step and lowers its scale: a few overflows with a
    finite loss are what it does, not a failure.
    """
    series = ctx.series("grad_norm", "gradient norm")
    loss = ctx.run.loss
    loss_finite = loss is None or bool(loss.finite.all())
    bad = ~series.finite
    harmful = not loss_finite or bool(bad[-1]) or float(bad.mean()) >= ctx.t.GRAD_NONFINITE_FAIL_SHARE
    for hit in _nonfinite(series, "gradient norm"):
        if not harmful:
            note = " The loss stayed finite and the last logged norm is finite: a loss scaler (fp16/bf16) skipping overflowing steps."
            hit = replace(hit, message=hit.message + note, level=Level.WARN)
        yield hit


def eval_nonfinite(ctx: RunContext) -> Iterator[Hit]:
    """Eval loss is NaN or infinite at some evaluation.

    What it detects: an evaluation loss that is NaN, +/-Infinity or not a number.
    Why it matters: the model being evaluated produces non-finite outputs, so
    any checkpoint selected by eval loss is meaningless.
    Fires on: ``eval_loss: 1.9, 1.7, NaN``.
    Does not fire on: a finite eval loss, however high (see TP-OVERFIT).
    Does not mean: the training loss is non-finite too; check TP-LOSS-NONFINITE.
    Thresholds: none; a single non-finite value is a finding.
    """
    if not ctx.run.eval_losses:
        raise NotApplicable("the log has no eval loss")
    for name, series in ctx.run.eval_losses.items():
        yield from _nonfinite(series, f"eval loss ({name})")


def loss_zero(ctx: RunContext) -> Iterator[Hit]:
    """Training loss is exactly 0 throughout, or from some step to the end.

    What it detects: a run of exact zeros in the training loss that lasts to
    the end of the log and holds at least ZERO_MIN_POINTS points.
    Why it matters: a real cross-entropy is never exactly 0. Exact zeros mean
    every label is masked (-100), the loss is multiplied by zero, or a NaN is
    being hidden by the trainer's logging; nothing is learned on those steps.
    Fires on: ``0.0328, 0.0, 0.0, 0.0, ...`` (the loss drops to 0 in one step).
    Does not fire on: a loss that converged gradually and is printed rounded:
    zeros after values already below ZERO_ROUNDING_FLOOR are taken as rounding.
    Does not fire on objectives that go negative (RL, contrastive): they are
    not minimised losses.
    Does not mean: that the first zero step is where the bug started; it is
    where the log first shows it.
    """
    loss = ctx.series("loss", "training loss")
    part = loss.finite_part()
    values, steps = part.values, part.steps
    if values.size and (values < 0).any():
        raise NotApplicable("the loss takes negative values: an objective, not a loss that must fall")
    tail = zero_tail(values)
    if tail < ctx.t.ZERO_MIN_POINTS:
        return
    first = values.size - tail
    before = values[max(0, first - 5) : first]
    if before.size and float(median(before)) < ctx.t.ZERO_ROUNDING_FLOOR:
        return
    zero_steps = steps[first:]
    if first == 0:
        message = f"The training loss is exactly 0 at all {tail} logged steps."
        evidence = f"loss 0 at steps {figures.step(zero_steps[0])} to {figures.step(zero_steps[-1])}"
    else:
        message = (
            f"The training loss is exactly 0 from step {figures.step(zero_steps[0])} to the end of the log "
            f"({tail} of {values.size} points)."
        )
        evidence = (
            f"loss {figures.num(before[-1])} at step {figures.step(steps[first - 1])}, then exactly 0 at steps "
            f"{figures.step(zero_steps[0])} to {figures.step(zero_steps[-1])}"
        )
    yield Hit(
        message=message + " A real loss is never exactly zero: labels fully masked, or a NaN hidden by logging.",
        evidence=evidence,
        values={"zero_points": tail, "points": int(values.size), "first_zero_step": int(zero_steps[0])},
        steps=(int(zero_steps[0]), int(zero_steps[-1])),
    )


def loss_flat(ctx: RunContext) -> Iterator[Hit]:
    """Training loss repeats the very same non-zero value on nearly every step.

    What it detects: at least FLAT_SAME_SHARE of at least MIN_TREND_POINTS
    finite loss points carry one identical non-zero value. Only a WARN when
    the log prints its losses so coarsely (every value a multiple of 0.01,
    say) that the repeated value is at most FLAT_COARSE_QUANTA of those
    steps: a converged loss rounded to the same print looks just as flat.
    Why it matters: a loss computed from changing batches always jitters; one
    exact value over and over means the logged number is stale, the model
    outputs a constant, or the loss is clamped. Nothing is being learned.
    Fires on: ``2.302585, 2.302585, 2.302585, ...``.
    Does not fire on: a slowly changing or noisy loss, or exact zeros (see TP-LOSS-ZERO).
    Does not mean: the data is broken; it says the logged loss cannot move.
    """
    loss = ctx.series("loss", "training loss")
    values = loss.finite_part().values
    if values.size < ctx.t.MIN_TREND_POINTS:
        raise NotApplicable(f"only {values.size} finite training-loss point{'s' if values.size != 1 else ''} (needs {ctx.t.MIN_TREND_POINTS})")
    share = ctx.t.FLAT_SAME_SHARE
    # A value on m of n points leaves at least 2m - n - 1 neighbours equal (each other point breaks at most two
    # pairs): a noisy loss, whose neighbours are almost never equal, is cleared by one comparison of them.
    if np.count_nonzero(values[1:] == values[:-1]) < 2 * share * values.size - values.size - 1:
        return
    if share > 0.5:  # a value on more than half the points is the middle one: counted without sorting them all
        middle = np.partition(values, values.size // 2)[values.size // 2]
        if np.count_nonzero(values == middle) < share * values.size:
            return
    uniques, counts = np.unique(values, return_counts=True)
    top = int(np.argmax(counts))
    value, count = float(uniques[top]), int(counts[top])
    if value == 0 or count < share * values.size:
        return
    # A log that prints its loss too coarsely to show a converged loss's jitter (2.05, 1.48, ..., 0.05, 0.05, ...: at
    # least MIN_TREND_POINTS distinct values, all with at most two decimals, and the repeated value at most
    # FLAT_COARSE_QUANTA steps of that last printed digit) cannot tell a flat loss from a converged one: a WARN saying so.
    quantum = _printed_quantum(uniques) if uniques.size >= ctx.t.MIN_TREND_POINTS else None  # fewer show no resolution
    coarse = quantum is not None and abs(value) <= ctx.t.FLAT_COARSE_QUANTA * quantum
    printed: dict[str, float] = {}
    message = f"The training loss is flat: {count} of {values.size} points are exactly {value!r}."
    evidence = f"{figures.plural(len(uniques), 'distinct value')} in {values.size} points; {value!r} repeated {count} times"
    if coarse and quantum is not None:
        printed["printed_to"] = quantum
        message = (
            f"The training loss repeats {value!r} on {count} of {values.size} points, but the log prints it only to "
            f"{quantum:g} ({figures.pct(quantum / abs(value))} of it): a converged loss that jitters less than that prints "
            "the same, so this cannot tell a flat loss from a converged one."
        )
        evidence += f"; every value is a multiple of {quantum:g}"
    yield Hit(
        message=message,
        evidence=evidence,
        values={"value": value, "repeated": count, "points": int(values.size), **printed},
        steps=(int(loss.steps[0]), int(loss.steps[-1])),
        level=Level.WARN if coarse else None,
    )


_MOST_DECIMALS = 12
_CHECKED_VALUES = 10_000


def _printed_quantum(uniques: np.ndarray) -> float | None:
    """The finest decimal step the log prints its values to (0.01 when every value has at most two decimals), from up
    to _CHECKED_VALUES of its distinct values; None when it prints more than _MOST_DECIMALS decimals (full floats)."""
    sample = uniques[:_CHECKED_VALUES]
    for decimals in range(_MOST_DECIMALS + 1):
        scaled = sample * 10.0**decimals
        if bool(np.all(np.abs(scaled - np.round(scaled)) <= 1e-6)):
            return 10.0**-decimals
    return None


def _lr(ctx: RunContext) -> tuple[np.ndarray, np.ndarray]:
    lr = ctx.series("learning_rate", "learning rate").finite_part()
    if len(lr) < ctx.t.MIN_LR_POINTS:
        raise NotApplicable(f"only {len(lr)} finite learning-rate points (needs {ctx.t.MIN_LR_POINTS})")
    return lr.steps, lr.values


def lr_zero(ctx: RunContext) -> Iterator[Hit]:
    """Learning rate is exactly 0 on (nearly) every logged step.

    What it detects: a logged learning rate of exactly 0 on at least
    LR_ZERO_FAIL_SHARE of the logged steps, when at least MIN_LR_POINTS
    finite rates are logged. Only a WARN when the training loss fell all the
    same (by TP-NO-LEARNING's test): the weights moved, so the logged rate is
    rounded to 0 or belongs to a param group that does not train.
    Why it matters: with a zero learning rate the optimizer never moves the
    weights; the whole run is spent computing gradients that are thrown away.
    Usual causes: a scheduler built with zero peak, warmup longer than the
    run, or a learning rate read from the wrong config key.
    Fires on: ``learning_rate: 0.0, 0.0, 0.0, ...``.
    Does not fire on: a schedule that decays to 0 at its last step.
    Does not mean: parameters with their own learning rate (in other param
    groups) were frozen too; only the logged group is judged.
    """
    steps, values = _lr(ctx)
    zero = values == 0
    share = float(zero.mean())
    if share < ctx.t.LR_ZERO_FAIL_SHARE:
        return
    message = f"The learning rate is 0 on {int(zero.sum())} of {values.size} logged steps: the optimizer never moved the weights."
    evidence = (
        f"learning rate exactly 0 on {figures.pct(share)} of logged steps ({figures.step(steps[0])} to {figures.step(steps[-1])}); "
        f"largest logged value {figures.num(values.max())}"
    )
    # A training loss that fell beyond its noise (as TP-NO-LEARNING proves a fall: DEAD_MIN_IMPROVEMENT of its head
    # level, NOISE_SIGMAS of noise) says the weights did move: the logged rate is rounded to 0 (a log writing 2e-5 as
    # 0.0000) or is another param group's. The data cannot condemn the run then: a WARN saying so.
    fell = loss_fell(ctx)
    if fell is not None:
        message = (
            f"The learning rate is logged as 0 on {int(zero.sum())} of {values.size} steps, yet the training loss fell "
            f"{fell}: the weights did move. {zero_rate_causes('The')}"
        )
        evidence += f"; training loss {fell}"
    yield Hit(
        message=message,
        evidence=evidence,
        values={"zero_share": round(share, 4), "zero_points": int(zero.sum()), "points": int(values.size), "max_lr": float(values.max())},
        steps=tuple(steps[zero][:_MAX_STEPS].tolist()),
        level=None if fell is None else Level.WARN,
    )


def loss_fell(ctx: RunContext) -> str | None:
    """How the training loss fell ("2.46 -> 0.52, 79%") when its best level is a real improvement on its head level
    (TP-NO-LEARNING's proof of learning, :func:`~trainproof.checks.trend.real_fall`), else None."""
    try:
        prof = ctx.curve()
    except NotApplicable:
        return None
    gain = real_fall(prof, ctx.t)
    if gain is None:
        return None
    return f"{figures.num(prof.head_window_median)} -> {figures.num(prof.best)} ({figures.pct(gain)})"


def zero_rate_causes(whose: str) -> str:
    """What a learning rate logged as 0 is when the loss fell all the same (:func:`loss_fell`): the sentence both
    learning-rate rules end their WARN with, ``whose`` its first word ("The", "its")."""
    return f"{whose} logged rate is rounded to 0, or is that of a param group that does not train."


def lr_zero_partial(ctx: RunContext) -> Iterator[Hit]:
    """Learning rate is 0 from some step to the end, or on a large share of steps.

    What it detects: a learning rate of exactly 0 from some step to the end
    of the log over at least LR_ZERO_TAIL_MIN_POINTS points and
    LR_ZERO_TAIL_MIN_SHARE of the logged steps, or exactly 0 on at least
    LR_ZERO_WARN_SHARE of the logged steps anywhere, when at least
    MIN_LR_POINTS finite rates are logged.
    Why it matters: those steps cost as much as any other and change nothing.
    Fires on: a schedule whose decay reaches 0 long before max_steps, or a
    warmup that starts late.
    Does not fire on: a linear or cosine decay whose last logged value is 0.
    Does not mean: the run failed; the steps before were real training.
    """
    steps, values = _lr(ctx)
    zero = values == 0
    tail = zero_tail(values)
    share = float(zero.mean())
    tail_share = tail / values.size
    if tail >= ctx.t.LR_ZERO_TAIL_MIN_POINTS and tail_share >= ctx.t.LR_ZERO_TAIL_MIN_SHARE:
        first = int(steps[values.size - tail])
        yield Hit(
            message=f"The learning rate is 0 from step {figures.step(first)} to the end: the last {figures.pct(tail_share)} of logged steps trained nothing.",
            evidence=f"learning rate {figures.num(values[values.size - tail - 1])} at step {figures.step(steps[values.size - tail - 1])}, "
            f"then exactly 0 on the last {figures.plural(tail, 'logged step')}",
            values={"zero_tail_points": tail, "points": int(values.size), "first_zero_step": first},
            steps=(first, int(steps[-1])),
        )
    elif share >= ctx.t.LR_ZERO_WARN_SHARE:
        yield Hit(
            message=f"The learning rate is 0 on {figures.pct(share)} of logged steps.",
            evidence=f"learning rate exactly 0 at {int(zero.sum())} of {values.size} logged steps, first at step {figures.step(steps[zero][0])}",
            values={"zero_share": round(share, 4), "zero_points": int(zero.sum()), "points": int(values.size)},
            steps=tuple(steps[zero][:_MAX_STEPS].tolist()),
        )
