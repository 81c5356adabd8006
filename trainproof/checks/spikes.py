"""Rules about isolated jumps, judged against the points on both sides of them."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from trainproof.checks.base import Hit, NotApplicable, RunContext
from trainproof.checks.stats import median, neighbour_count, neighbour_medians
from trainproof.io import figures

_MAX_STEPS = 50


def _local_level(values: np.ndarray, k: int, at: np.ndarray | None = None) -> np.ndarray:
    """The higher of the medians before and after each point (or each of the points ``at``); NaN for the first
    and last points, which have only one side and so are never spikes."""
    before, after = neighbour_medians(values, k, at)
    return np.maximum(before, after, out=before)


def _ratio(values: np.ndarray, level: np.ndarray) -> np.ndarray:
    """Each value over its local level; 0 where the level is not positive (or NaN), and where the quotient is NaN.
    Written into one array: at ten million points each temporary is 80 MB."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.divide(values, level, out=np.zeros_like(values), where=level > 0)
    return np.nan_to_num(ratio, nan=0.0, copy=False)


_BOUND_MARGIN = 1e-9
"""How far below a spike's ratio a bound must put a point before it is cleared: more than any rounding of the
quotient the rule computes."""


def _spike_ratios(values: np.ndarray, k: int, at_least: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_ratio` of :func:`_local_level`, computed only where it can reach ``at_least``: the points that could be
    spikes, each one's level, and a ratio for every point (0 for a point cleared by the bound, whose ratio is below
    ``at_least`` anyway).

    A window's median is never below its smallest point, so the higher of the smallest points of the two windows
    bounds a point's level from below: a point under ``at_least`` times that bound is no spike, whatever the medians
    are. Those minimums take k comparisons per point; the medians, only at the few points left. At ten million
    points this was two-thirds of the spike rules.
    """
    n = values.size
    k = neighbour_count(k)
    candidates = np.ones(n, dtype=bool)
    if n > 2 * k:
        lowest = values[: n - k + 1].copy()  # lowest[j]: the smallest of values[j : j + k]
        for shift in range(1, k):
            np.minimum(lowest, values[shift : shift + n - k + 1], out=lowest)
        inner = slice(k, n - k)  # points with k values on each side: before them lowest[i - k], after lowest[i + 1]
        bound = np.maximum(lowest[: n - 2 * k], lowest[k + 1 : n - k + 1])
        cleared = (bound > 0) & (values[inner] < at_least * (1 - _BOUND_MARGIN) * bound)
        candidates[inner] = ~cleared
    at = np.flatnonzero(candidates)
    if 8 * at.size > n:  # a curve a bound cannot thin out: every level, as the rule defines it
        level = _local_level(values, k)
        return at, level[at], _ratio(values, level)
    level = _local_level(values, k, at)
    ratio = np.zeros_like(values)
    ratio[at] = _ratio(values[at], level)
    return at, level, ratio


def _listing(steps: np.ndarray, values: np.ndarray, ratios: np.ndarray, limit: int = 5) -> str:
    order = np.sort(np.argsort(-ratios, kind="stable")[:limit])
    parts = [f"{figures.num(values[i])} at step {figures.step(steps[i])} ({figures.ratio(ratios[i])} local level)" for i in order]
    more = len(steps) - len(order)
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def _spike_hit(kind: str, steps: np.ndarray, values: np.ndarray, ratio: np.ndarray, spike: np.ndarray, extra: str = "") -> Hit:
    s_steps, s_values, s_ratio = steps[spike], values[spike], ratio[spike]
    top = int(np.argmax(s_ratio))
    count = int(spike.sum())
    return Hit(
        message=(
            f"{kind} {count} time{'s' if count > 1 else ''}, up to {figures.num(s_values[top])} at step "
            f"{figures.step(s_steps[top])} ({figures.ratio(s_ratio[top])} its local level)."
        ),
        evidence=_listing(s_steps, s_values, s_ratio) + extra,
        values={
            "spikes": count,
            "max": float(s_values[top]),
            "max_step": int(s_steps[top]),
            "max_ratio": float(s_ratio[top]),
            "median": float(median(values)),
        },
        steps=tuple(s_steps[:_MAX_STEPS].tolist()),
    )


def grad_spike(ctx: RunContext) -> Iterator[Hit]:
    """Gradient norm jumps far above the norms on both sides of it.

    What it detects: logged gradient norms at least GRAD_SPIKE_RATIO times
    the higher of two medians, of the SPIKE_NEIGHBOURS points before and the
    SPIKE_NEIGHBOURS points after, when at least SPIKE_MIN_POINTS finite
    norms are logged.
    Why it matters: a gradient spike is a step that moved the weights much
    further than its neighbours; clipping hides its size from the update but
    not its cause (a bad batch, a learning rate too hot, an fp16 overflow on
    the way). Repeated spikes precede divergence.
    Fires on: norms around 0.5 with 672 and 2,650 in between.
    Does not fire on: norms that are large everywhere, norms falling steeply
    early in training (a point above what follows but not above what came
    before), or a smooth rise.
    Does not mean: the run is lost; read it beside TP-DIVERGE and TP-LOSS-SPIKE.
    """
    series = ctx.series("grad_norm", "gradient norm").finite_part()
    t = ctx.t
    if len(series) < t.SPIKE_MIN_POINTS:
        raise NotApplicable(f"only {len(series)} finite gradient-norm points (needs {t.SPIKE_MIN_POINTS})")
    values, steps = series.values, series.steps
    _, _, ratio = _spike_ratios(values, t.SPIKE_NEIGHBOURS, t.GRAD_SPIKE_RATIO)
    spike = ratio >= t.GRAD_SPIKE_RATIO
    if spike.any():
        yield _spike_hit("Gradient norm spiked", steps, values, ratio, spike)


def loss_spike(ctx: RunContext) -> Iterator[Hit]:
    """Training loss jumps far above the points on both sides of it, then recovers.

    What it detects: a loss point at least LOSS_SPIKE_RATIO times the higher
    of two medians, of the SPIKE_NEIGHBOURS points before and the
    SPIKE_NEIGHBOURS points after, and LOSS_SPIKE_SIGMAS robust noise sigmas
    (see NOISE_FALLBACK_QUANTILE) above it. Because the points after it are
    back down, the spike recovered.
    Needs SPIKE_MIN_POINTS points.
    Why it matters: a transient spike is the optimizer taking a bad step (a
    corrupt or extreme batch, a learning rate that momentum barely
    absorbed). One is survivable; several are a warning of divergence.
    Fires on: ``1.10, 1.08, 1.11, 3.90, 1.12, 1.09, 1.10``.
    Does not fire on: single-batch noise inside the curve's own spread, a
    steep early descent, or a jump that does not come back down; and it
    stays quiet when TP-DIVERGE fired, whose blow-up explains the jumps.
    Does not mean: the run is broken; it says which steps' batches to look at.
    """
    prof = ctx.curve()
    t = ctx.t
    if prof.n < t.SPIKE_MIN_POINTS:
        raise NotApplicable(f"only {prof.n} finite training-loss points (needs {t.SPIKE_MIN_POINTS})")
    values, steps = prof.values, prof.steps
    at, level, ratio = _spike_ratios(values, t.SPIKE_NEIGHBOURS, t.LOSS_SPIKE_RATIO)
    spike = np.zeros(values.size, dtype=bool)
    spike[at] = (ratio[at] >= t.LOSS_SPIKE_RATIO) & (values[at] - level >= t.LOSS_SPIKE_SIGMAS * prof.noise)
    if spike.any():
        yield _spike_hit("Training loss spiked and recovered", steps, values, ratio, spike, f"; noise sigma {figures.num(prof.noise)}")
