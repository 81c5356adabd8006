"""Rules about the shape of the training-loss curve, judged on its robust profile."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from trainproof.checks.base import Hit, NotApplicable, RunContext
from trainproof.checks.findings import Level
from trainproof.checks.sentences import nearest_checkpoint
from trainproof.checks.stats import MEDIAN_SE, Profile, rolling_median3, share_after, trend_t
from trainproof.checks.thresholds import Thresholds
from trainproof.io import figures


def _span(prof: Profile, first: int, last: int) -> str:
    return f"steps {figures.step(first)}-{figures.step(last)}" if first != last else f"step {figures.step(first)}"


def _start(prof: Profile) -> str:
    if prof.start_is_first_point:
        return f"start {figures.num(prof.start)} (the first logged point: the next ones are already far above it)"
    return f"start {figures.num(prof.start)} (median of {_span(prof, int(prof.steps[0]), prof.start_last_step)})"


def _levels(prof: Profile) -> str:
    return (
        f"{_start(prof)}, "
        f"end {figures.num(prof.end)} (median of {_span(prof, prof.end_first_step, int(prof.steps[-1]))})"
    )


def _best(prof: Profile) -> str:
    k = prof.best_segment
    return f"lowest segment median {figures.num(prof.best)} ({_span(prof, int(prof.seg_first[k]), int(prof.seg_last[k]))})"


def _centres(prof: Profile, t: Thresholds) -> dict[str, int]:
    """The steps the start and end levels are drawn at: the middle point of the points each is the median of (the first
    point alone for a start that is the first point)."""
    head, tail = prof.start_points(t.HEAD_POINTS), prof.tail_points
    return {"start_step": int(prof.steps[head // 2]), "end_step": int(prof.steps[prof.n - tail + tail // 2])}


def diverge(ctx: RunContext) -> Iterator[Hit]:
    """Training loss ends far above where it started, or far above its best.

    What it detects: the end level (median of the last TAIL_SHARE of points)
    is at least DIVERGE_START_RATIO times the start level (median of the
    first HEAD_POINTS points, or the first point alone when the next ones are
    already NOISE_SIGMAS above it: a blow-up in the first logged steps must
    not hide where the run started), or at least DIVERGE_BEST_RATIO times the best
    level (lowest median of up to SEGMENTS equal segments) after giving back
    at least DIVERGE_GIVEBACK_SHARE of what the run had gained; in both cases
    by more than NOISE_SIGMAS robust noise sigmas (see NOISE_FALLBACK_QUANTILE).
    An end at DIVERGE_START_RATIO times the start that is within that noise
    is an INFO saying so, never a FAIL.
    Why it matters: a diverged run rarely recovers; every step after the best
    level is spent making the model worse. The finding names the step of the
    best level, the share of the run spent after it, and the checkpoint the
    trainer recorded nearest to it, which is the one to keep.
    Fires on: a learning rate 100x too hot (1.40 at the first log, 24 a few
    steps later, 7.5 at the end); a late fp16 blow-up.
    Does not fire on: one noisy point below the rest (the best is a segment
    median, never a single point), or a noisy curve whose segments keep falling.
    Does not mean: the data is bad; it says the optimisation went unstable.
    """
    prof = ctx.curve()
    t = ctx.t
    tail_n = prof.tail_points
    first, last = int(prof.steps[0]), int(prof.steps[-1])
    best_k = prof.best_segment
    best_level, best_step = prof.best, prof.segment_center(best_k)
    if prof.start < best_level:  # the run was never better than where it began
        best_level, best_step = prof.start, prof.start_last_step
    ratio_reached = prof.start > 0 and prof.end >= t.DIVERGE_START_RATIO * prof.start
    from_start = ratio_reached and prof.above(prof.end, prof.start, t.NOISE_SIGMAS, prof.start_points(t.HEAD_POINTS), tail_n)
    gained = max(prof.start - prof.best, 0.0)
    from_best = (
        prof.best > 0
        and best_k < len(prof.seg_medians) - 1
        and prof.end >= t.DIVERGE_BEST_RATIO * prof.best
        and prof.above(prof.end, prof.best, t.NOISE_SIGMAS, int(prof.seg_size[best_k]), tail_n)
        and prof.end - prof.best >= t.DIVERGE_GIVEBACK_SHARE * gained
    )
    if not (from_start or from_best):
        if ratio_reached:
            yield Hit(
                message=(
                    f"Training loss ends {figures.ratio(prof.end / prof.start)} above where it started ({figures.num(prof.start)} -> "
                    f"{figures.num(prof.end)}), but within its own noise (sigma {figures.num(prof.noise)}): not judged a divergence; "
                    "more logged points at the start and end would settle it."
                ),
                evidence=f"{_levels(prof)}, noise sigma {figures.num(prof.noise)} over {prof.n} points",
                values={"start": prof.start, "end": prof.end, "noise_sigma": prof.noise, **_centres(prof, t)},
                steps=(first, last),
                level=Level.INFO,
            )
        return
    after = share_after(first, last, best_step)
    if from_start:
        head = f"it ends {figures.ratio(prof.end / prof.start)} above where it started ({figures.num(prof.start)} -> {figures.num(prof.end)})"
    else:
        head = f"it ends {figures.ratio(prof.end / prof.best)} above its best level ({figures.num(prof.best)} -> {figures.num(prof.end)})"
    keep, keep_values = nearest_checkpoint(ctx.run, best_step)
    best_text = f"Its best level was {figures.num(best_level)} around step {figures.step(best_step)}; {figures.pct(after)} of the run came after it.{keep}"
    values: dict = {
        "start": prof.start,
        "end": prof.end,
        "best": best_level,
        "best_step": best_step,
        "share_after_best": round(after, 4),
        "noise_sigma": prof.noise,
        **_centres(prof, t),
        **keep_values,
    }
    yield Hit(
        message=f"Training loss diverged: {head}. {best_text}",
        evidence=f"{_levels(prof)}, {_best(prof)}, noise sigma {figures.num(prof.noise)}",
        values=values,
        steps=(best_step, last),
    )


def real_fall(prof: Profile, t: Thresholds) -> float | None:
    """How far the loss's best level is below its head level, as a share of the head, when that is a real improvement
    (at least DEAD_MIN_IMPROVEMENT, and beyond NOISE_SIGMAS of noise); None when it is not (or the head is not
    positive). TP-NO-LEARNING's proof that a run learned at some point."""
    head = prof.head_window_median
    if head <= 0:
        return None
    gain = (head - prof.best) / head
    points = int(prof.seg_size[prof.best_segment])
    if gain < t.DEAD_MIN_IMPROVEMENT or not prof.above(head, prof.best, t.NOISE_SIGMAS, prof.head_window_points, points):
        return None
    return gain


def no_learning(ctx: RunContext) -> Iterator[Hit]:
    """Training loss shows no real improvement from start to end.

    What it detects: the run did not learn by its end, nor at any point: its
    end level (median of the last TAIL_SHARE of points) is not
    DEAD_MIN_IMPROVEMENT below its head level (median of the first
    TAIL_SHARE), or the fall is not a consistent trend (the t statistic of
    the rank correlation between step and loss is above -DEAD_TREND_T); and
    its best segment level is not a real improvement either (less than
    DEAD_MIN_IMPROVEMENT below the head, or within NOISE_SIGMAS robust noise
    sigmas of it; see NOISE_FALLBACK_QUANTILE). That learning is unproven is
    not proof that none happened: it is a FAIL only when the end and best
    levels, moved PROOF_Z standard errors of their medians in the run's
    favour, are still less than DEAD_MIN_IMPROVEMENT below the head. Short of
    that the noise is too large to decide, and the finding is a WARN that
    names the noise and how many logged points would settle it.
    Why it matters: a run whose loss never moves learned nothing; the usual
    causes are a zero or tiny learning rate, frozen parameters, a detached
    loss, or labels that carry no signal.
    Fires on: a loss at 1.47 +/- 0.01 from the first log to the last; at
    WARN on a short fine-tune whose per-batch noise is a fifth of its level.
    Does not fire on: a loss that falls and then plateaus (see TP-PLATEAU), or
    one that rises far above its start (see TP-DIVERGE).
    Does not mean: every parameter is frozen; check TP-LR-ZERO and the
    trainable-parameter count.
    """
    prof = ctx.curve()
    t = ctx.t
    if real_fall(prof, t) is not None:  # learned at some point: the trend (a sort of every point) is not needed to say so
        return
    head = prof.head_window_median
    if head <= 0:  # real_fall proves no fall from such a head: nothing to judge a fall against
        raise NotApplicable("the loss's head level is not positive")
    end_gain = (head - prof.end) / head
    trend = trend_t(prof.values)
    learned_by_end = end_gain >= t.DEAD_MIN_IMPROVEMENT and trend <= -t.DEAD_TREND_T
    if learned_by_end:
        return
    change = f"{figures.pct(end_gain)} below" if end_gain >= 0 else f"{figures.pct(-end_gain)} above"
    bound, relative_noise = _improvement_bound(prof, head, t.PROOF_Z)
    needs = figures.pct(t.DEAD_MIN_IMPROVEMENT)
    levels = f"{figures.num(head)} at the start, {figures.num(prof.end)} at the end ({change} the start; needs {needs} below)"
    if bound < t.DEAD_MIN_IMPROVEMENT:
        message, level = f"Training loss shows no real improvement: {levels}.", None
    else:
        settle = _points_to_settle(relative_noise, t)
        message = (
            f"Training loss shows no clear improvement, but its noise is too large to tell: {levels}. With a per-point "
            f"noise of {figures.pct(relative_noise)} of its level, the run may have improved by up to {figures.pct(bound)}; "
            f"about {settle:,} logged points (a shorter logging interval) would settle it."
        )
        level = Level.WARN
    yield Hit(
        message=message,
        evidence=(
            f"head {figures.num(head)} (median of {_span(prof, int(prof.steps[0]), prof.head_window_last_step)}), "
            f"end {figures.num(prof.end)} (median of {_span(prof, prof.end_first_step, int(prof.steps[-1]))}), "
            f"{_best(prof)}, trend t {trend:.2f} (needs {-t.DEAD_TREND_T:.1f} or lower), noise sigma {figures.num(prof.noise)} over {prof.n} points, "
            f"improvement at most {figures.pct(bound)} allowing {t.PROOF_Z:g} standard errors"
        ),
        values={"head": head, "end": prof.end, "best": prof.best, "improvement": round(end_gain, 4),
                "trend_t": round(trend, 3), "noise_sigma": prof.noise, "improvement_bound": round(bound, 4)},
        steps=(int(prof.steps[0]), int(prof.steps[-1])),
        level=level,
    )


def _improvement_bound(prof: Profile, head: float, z: float) -> tuple[float, float]:
    """The most the run may have improved on its head level, as a fraction of it, and its per-point noise as a fraction.

    Each of the end level and the best segment level is moved ``z`` standard errors of the difference of two medians
    (about 1.25 sigma / sqrt(points) each) towards improvement; the larger of the two improvements is the bound. On the
    log scale for a positive loss, where its noise is about the same at any level.
    """
    levels = ((prof.end, prof.tail_points), (prof.best, int(prof.seg_size[prof.best_segment])))
    positive = prof.log_noise is not None and all(level > 0 for level, _ in levels)  # the head is positive: no_learning checked
    relative_noise = prof.log_noise if positive else prof.noise / head
    bound = float("-inf")
    for level, points in levels:
        se = prof.difference_error(prof.head_window_points, points) * relative_noise  # type: ignore[operator]
        if positive:
            gain = float(np.log(head) - np.log(level))
            bound = max(bound, float(1.0 - np.exp(-(gain + z * se))))
        else:
            bound = max(bound, (head - level) / head + z * se)
    return bound, float(relative_noise)  # type: ignore[arg-type]


def _points_to_settle(relative_noise: float, t: Thresholds) -> int:
    """Logged points that would make the head and end windows' medians tell a DEAD_MIN_IMPROVEMENT change from noise:
    PROOF_Z standard errors of their difference within half of it."""
    # the difference of two medians of k points each has a standard error of MEDIAN_SE * sqrt(2 / k)
    per_window = 2.0 * (t.PROOF_Z * MEDIAN_SE * relative_noise / (0.5 * t.DEAD_MIN_IMPROVEMENT)) ** 2
    return int(np.ceil(per_window / t.TAIL_SHARE))


def _elapsed(ctx: RunContext, from_step: int, to_step: int, share: float) -> tuple[float | None, str]:
    """Seconds between two steps: from the log's clock if it has one, else pro rata of its runtime."""
    wall = ctx.run.wall_time
    if wall is not None and len(wall) >= 2:
        times = np.interp([from_step, to_step], wall.steps.astype(float), wall.values)
        return float(times[1] - times[0]), "from the log's timestamps"
    runtime = ctx.run.runtime_s
    if runtime is not None and runtime > 0:
        return runtime * share, "pro rata of the logged runtime"
    return None, "the log has no time"


def plateau(ctx: RunContext) -> Iterator[Hit]:
    """Training loss stopped improving long before the end of the run.

    What it detects: the earliest point after which the loss improved by less
    than PLATEAU_GAIN of its level (the median of three neighbouring segment
    medians against the end level),
    when that stretch covers at least PLATEAU_MIN_SHARE of the run.
    Why it matters: the steps on a plateau cost as much as the steps that
    learned. The finding names the step, the share of the run and the
    wall-clock time spent there. It is a WARN when that time exceeds
    PLATEAU_WARN_S, and an INFO note when it is shorter or unknown: a
    five-minute fine-tune that converged early is fine, a run that spent five
    GPU-hours buying 2% is not.
    Fires on: a 9.8-hour TTS fine-tune whose loss fell 4% over its second half.
    Does not fire on: a curve still falling at the end, or one that never fell
    (see TP-NO-LEARNING).
    Does not mean: the model stopped getting better on the metric you care
    about; eval metrics can still move on a flat training loss.
    """
    prof = ctx.curve()
    t = ctx.t
    level = prof.end * (1 + t.PLATEAU_GAIN)
    # A segment median still carries noise; the median of three neighbouring
    # segments keeps one lucky segment from starting the plateau early.
    smoothed = rolling_median3(prof.seg_medians)
    below = np.flatnonzero(smoothed <= level)
    if below.size == 0 or prof.head_window_median <= level:
        return
    k = int(below[0])
    from_step = prof.segment_center(k)
    first, last = int(prof.steps[0]), int(prof.steps[-1])
    share = share_after(first, last, from_step)
    if share < t.PLATEAU_MIN_SHARE:
        return
    at = float(smoothed[k])
    bought = (at - prof.end) / at if at else 0.0
    seconds, clock = _elapsed(ctx, from_step, last, share)
    long_enough = seconds is not None and seconds >= t.PLATEAU_WARN_S
    spent = f" ({figures.duration(seconds)})" if seconds is not None else ""
    gain = f"bought {figures.pct(bought)}" if bought > 0 else "bought nothing"
    yield Hit(
        message=(
            f"Training loss plateaued from about step {figures.step(from_step)}: the last {figures.pct(share)} of the run{spent} "
            f"{gain} ({figures.num(at)} -> {figures.num(prof.end)})."
        ),
        evidence=(
            f"level {figures.num(at)} around steps {figures.step(int(prof.seg_first[k]))}-{figures.step(int(prof.seg_last[k]))} is within "
            f"{figures.pct(t.PLATEAU_GAIN)} of the end level {figures.num(prof.end)}; time on the plateau "
            f"{figures.duration(seconds) if seconds is not None else 'unknown'} ({clock})"
        ),
        values={
            "plateau_step": from_step,
            "share": round(share, 4),
            "seconds": round(seconds, 1) if seconds is not None else "unknown",
            "level_at_plateau": at,
            "end": prof.end,
            "improvement_after": round(bought, 4),
        },
        steps=(from_step, last),
        level=None if long_enough else Level.INFO,
    )
