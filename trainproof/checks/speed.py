"""Rules about time: steps that got slower, and steps spent waiting for data."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from trainproof.checks.base import Hit, NotApplicable, RunContext
from trainproof.checks.stats import median, quantile, segment_bounds
from trainproof.io import figures


def _seconds_per_step(ctx: RunContext) -> tuple[np.ndarray, np.ndarray, str]:
    timing = ctx.run.seconds_per_step(ctx.t.MIN_TIMED_POINTS)
    if timing is None:
        raise NotApplicable("the log has no step time or timestamps")
    return timing


def _percentile(quantile: float) -> str:
    """``0.25`` as "25th percentile"."""
    number = f"{quantile * 100:g}"
    suffix = "th"
    if number.isdigit() and not number.endswith(("11", "12", "13")):
        suffix = {"1": "st", "2": "nd", "3": "rd"}.get(number[-1], "th")
    return f"{number}{suffix} percentile"


def step_time_cliff(ctx: RunContext) -> Iterator[Hit]:
    """Steps became much slower for a long stretch of the run, or to its end.

    What it detects: seconds per step (differences of timestamps, else the
    step-time column), when at least MIN_TIMED_POINTS are timed, summarised
    by the medians of up to SEGMENTS segments of at least MIN_SEGMENT_POINTS
    points; the run's normal speed is the STEP_TIME_NORMAL_QUANTILE quantile
    of those medians, and a stretch of consecutive segments at least
    STEP_TIME_CLIFF_RATIO times slower, covering at least
    STEP_TIME_CLIFF_MIN_SHARE of the timed points, is a cliff. The finding
    names where it starts and ends and the time it cost.
    Why it matters: a run that slows down 2x doubles its bill for as long as
    it lasts; typical causes are thermal throttling, a memory leak driving
    swap or allocator churn, a growing eval or checkpoint cost, another job
    on the same accelerator, or storage that got slower.
    Fires on: 0.08 s/step for 28,000 steps, 1.54 s/step for the next 22,000.
    Does not fire on: a slow first step (compilation, cache warm-up) or
    periodic eval pauses, which medians ignore.
    Does not mean: the model is wrong; only that time is being lost.
    """
    steps, per_step, source = _seconds_per_step(ctx)
    t = ctx.t
    if per_step.size < t.MIN_TIMED_POINTS:
        raise NotApplicable(f"only {figures.plural(per_step.size, 'timed point')} (needs {t.MIN_TIMED_POINTS})")
    bounds = segment_bounds(per_step.size, t.SEGMENTS, t.MIN_SEGMENT_POINTS)
    medians = np.array([median(per_step[a:b]) for a, b in bounds])
    normal = float(quantile(medians, t.STEP_TIME_NORMAL_QUANTILE))
    if normal <= 0:
        return
    slow = medians >= t.STEP_TIME_CLIFF_RATIO * normal
    stretches = []
    k = 0
    while k < len(bounds):
        if not slow[k]:
            k += 1
            continue
        j = k
        while j + 1 < len(bounds) and slow[j + 1]:
            j += 1
        a, b = bounds[k][0], bounds[j][1]
        if (b - a) >= t.STEP_TIME_CLIFF_MIN_SHARE * per_step.size:
            inside = float(median(per_step[a:b]))
            first_step = int(steps[a - 1]) if a > 0 else int(steps[0])
            last_step = int(steps[b - 1])
            lost = (inside - normal) * (last_step - first_step)
            stretches.append((lost, a, b, inside, first_step, last_step))
        k = j + 1
    if not stretches:
        return
    lost, a, b, inside, first_step, last_step = max(stretches)
    to_end = b == per_step.size
    where = f"from about step {figures.step(first_step)} to the end" if to_end else f"from about step {figures.step(first_step)} to step {figures.step(last_step)}"
    more = f" {len(stretches) - 1} other slow stretch{'es' if len(stretches) > 2 else ''} too." if len(stretches) > 1 else ""
    yield Hit(
        message=(
            f"Steps got {figures.ratio(inside / normal)} slower {where}: {figures.num(inside)} s/step against "
            f"{figures.num(normal)} s/step normally, about {figures.duration(lost)} lost.{more}"
        ),
        evidence=(
            f"median seconds per step from {source}: {figures.num(inside)} over {b - a} timed points in the slow stretch; "
            f"normal speed ({_percentile(t.STEP_TIME_NORMAL_QUANTILE)} of {len(bounds)} segment medians) {figures.num(normal)}"
        ),
        values={"ratio": inside / normal, "from_step": first_step, "to_step": last_step, "slow_s": inside,
                "normal_s": normal, "lost_s": round(lost, 1), "to_end": int(to_end)},
        steps=(first_step, last_step),
    )


def loader_bound(ctx: RunContext) -> Iterator[Hit]:
    """The run spends most of each step waiting for data.

    What it detects: the median loader time is at least LOADER_BOUND_SHARE of
    the median loader time plus the median step (compute) time, over at
    least MIN_TIMED_POINTS finite points of each.
    Why it matters: the accelerator idles while the input pipeline catches
    up; more workers, pinned memory, pre-tokenised or pre-decoded data, or
    faster storage buy the time back without touching the model.
    Fires on: loader_time 0.9 s against step_time 0.4 s.
    Does not fire on: a slow first batch (workers starting), which the median ignores.
    Does not mean: the GPU is too fast; it means the pipeline is too slow for it.
    """
    run = ctx.run
    if run.loader_time is None or run.step_time is None:
        raise NotApplicable("the log has no loader-time and step-time columns")
    loader, compute = run.loader_time.finite_part().values, run.step_time.finite_part().values
    t = ctx.t
    if loader.size < t.MIN_TIMED_POINTS or compute.size < t.MIN_TIMED_POINTS:
        raise NotApplicable(f"fewer than {figures.plural(t.MIN_TIMED_POINTS, 'timed point')}")
    wait, work = float(median(loader)), float(median(compute))
    if wait + work <= 0:
        return
    share = wait / (wait + work)
    if share < t.LOADER_BOUND_SHARE:
        return
    yield Hit(
        message=f"The run is loader-bound: {figures.pct(share)} of each step is spent waiting for data.",
        evidence=f"median loader time {figures.num(wait)} s, median step time {figures.num(work)} s over {loader.size} points",
        values={"loader_share": round(share, 4), "loader_s": wait, "step_s": work},
        steps=(int(run.loader_time.steps[0]), int(run.loader_time.steps[-1])),
    )
