"""Robust summaries of noisy curves: medians of segments, noise from first differences.

Rules never judge a curve by one point. They judge it by a :class:`Profile`:
the median of its first few points (where it started), the median of its last
tenth (where it ended), the medians of equal-count segments (its shape), and
a robust estimate of its point-to-point noise (how big a change must be to
count as one).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from trainproof.checks.thresholds import Thresholds
from trainproof.runs.model import Series

MAD_TO_SIGMA = 1.4826
MEDIAN_SE = 1.2533
"""The median of k normal values has a standard error of about MEDIAN_SE * sigma / sqrt(k) (sqrt(pi / 2))."""
MAD_SE = 1.1664
"""A MAD-based sigma from n normal values has an asymptotic variance of about 1.36 sigma**2 / n: a standard error of
MAD_SE * sigma / sqrt(n)."""


def median(values: np.ndarray, axis: int | None = None, overwrite: bool = False) -> np.ndarray | float:
    """Median of finite values, by partition.

    ``np.median`` imports ``numpy.ma`` on first use, a cost every ``trainproof
    epoch`` in a pre-commit hook would pay; this is the same number without it.
    NaN-free input is the caller's job. ``overwrite`` (a float64 array of the
    caller's own, whose order it no longer needs) partitions ``values`` in
    place instead of a copy, as ``np.median``'s ``overwrite_input``: at ten
    million points, an 80 MB copy saved. The median is the same either way.
    """
    a = np.asarray(values, dtype=np.float64)
    own = overwrite and a is values
    if axis is None:
        a = a.ravel()  # a view of a contiguous array, which a partition in place reorders
        axis = 0
    n = a.shape[axis]
    if n == 0:
        return float("nan")
    k = n // 2
    kth = k if n % 2 else (k - 1, k)
    if own:
        a.partition(kth, axis=axis)
        part = a
    else:
        part = np.partition(a, kth, axis=axis)
    if n % 2:
        result = np.take(part, k, axis=axis)
    else:
        result = midpoint(np.take(part, k - 1, axis=axis), np.take(part, k, axis=axis))
    return float(result) if np.ndim(result) == 0 else result


def midpoint(low: np.ndarray | float, high: np.ndarray | float, out: np.ndarray | None = None) -> np.ndarray | float:
    """``(low + high) / 2`` (into ``out`` when given), to the last bit, also where the sum overflows: the median of two
    losses of 1.5e308 is 1.5e308, not infinity. There each is halved first (exact for such values), then added."""
    with np.errstate(over="ignore"):
        total = np.add(low, high, out=out)
    total = np.divide(total, 2, out=total if isinstance(total, np.ndarray) else None)
    overflowed = np.isinf(total)
    if not overflowed.any():
        return total
    halves = np.divide(low, 2) + np.divide(high, 2)  # an infinite value among them stays infinite
    if np.ndim(total) == 0:
        return halves
    total[overflowed] = halves[overflowed]
    return total


def quantile(values: np.ndarray, q: float | list[float]) -> np.ndarray | float:
    """``np.quantile`` with its default linear method, to the last bit, without the ``numpy.ma`` import that costs on
    first use (as :func:`median`). NaN-free, non-empty input is the caller's job. The order statistics come from a
    partition at just the ranks needed, not a sort of the whole (ten million points: 70 -> 35 ms)."""
    a = np.asarray(values, dtype=np.float64).ravel()
    n = a.size
    qs = np.asarray(q, dtype=np.float64)
    virtual = (n - 1) * qs  # numpy's virtual index for the linear method
    below = np.floor(virtual)
    gamma = virtual - below
    low = np.clip(below, 0, n - 1).astype(np.intp)
    high = np.clip(below + 1, 0, n - 1).astype(np.intp)
    a = np.partition(a, np.concatenate((np.ravel(low), np.ravel(high))))  # repeated ranks are allowed
    lo, hi = a[low], a[high]
    step = hi - lo
    result = np.where(gamma >= 0.5, hi - step * (1 - gamma), lo + step * gamma)
    return float(result) if np.ndim(result) == 0 else result


@lru_cache(maxsize=8)
def half_normal_quantile(q: float) -> float:
    """How many sigmas the ``q`` quantile of ``|x|`` is for normal ``x`` (1.645 at 0.9), to three decimals."""
    from statistics import NormalDist  # only a log that repeats values needs it

    return round(NormalDist().inv_cdf((1.0 + q) / 2.0), 3)


def robust_sigma(values: np.ndarray, fallback_quantile: float = Thresholds.NOISE_FALLBACK_QUANTILE) -> float:
    """Noise of a curve: scaled MAD of its first differences, divided by sqrt(2).

    Differencing removes the trend, the MAD ignores the few big jumps, so a
    falling noisy loss and a flat noisy loss with the same jitter get the same
    sigma. ``fallback_quantile`` is NOISE_FALLBACK_QUANTILE: :func:`profile`
    passes the configured one.
    """
    if values.size < 3:
        return 0.0
    d = np.diff(np.asarray(values, dtype=np.float64))  # the differences' own array: partitioned in place, as their order no longer matters
    deviation = np.abs(np.subtract(d, median(d, overwrite=True), out=d), out=d)
    mad = float(median(deviation, overwrite=True))
    if mad == 0.0:
        # A log printed with few decimals repeats values; fall back to a high
        # quantile of the deviations (the 90th percentile is 1.645 sigma for
        # normal noise).
        return float(quantile(deviation, fallback_quantile)) / half_normal_quantile(fallback_quantile) / np.sqrt(2.0)
    return MAD_TO_SIGMA * mad / np.sqrt(2.0)


def segment_bounds(n: int, max_segments: int, min_points: int) -> list[tuple[int, int]]:
    """Split ``n`` points into equal-count [start, stop) slices of at least ``min_points``."""
    count = max(1, min(max_segments, n // max(1, min_points)))
    edges = np.linspace(0, n, count + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:]) if b > a]


@dataclass(frozen=True, eq=False)
class Profile:
    """The robust shape of one finite curve.

    Every level is a median of several points, with one documented exception:
    when the points right after the first are already NOISE_SIGMAS above it
    (a blow-up in the first logged steps), the start level is the first point.
    """

    steps: np.ndarray
    values: np.ndarray
    start: float  # median of the first HEAD_POINTS points (or the first point, see above)
    start_last_step: int
    start_is_first_point: bool
    head_window_median: float  # median of the first TAIL_SHARE of the points (at least HEAD_POINTS), the mirror of ``end``
    head_window_last_step: int
    end: float  # median of the last TAIL_SHARE of the points (at least HEAD_POINTS)
    end_first_step: int
    seg_medians: np.ndarray
    seg_first: np.ndarray
    seg_last: np.ndarray
    seg_size: np.ndarray
    noise: float
    log_noise: float | None

    @property
    def n(self) -> int:
        return int(self.values.size)

    @property
    def best_segment(self) -> int:
        return int(np.argmin(self.seg_medians))

    @property
    def best(self) -> float:
        return float(self.seg_medians[self.best_segment])

    def segment_center(self, k: int) -> int:
        a = int(np.searchsorted(self.steps, self.seg_first[k]))
        size = int(self.seg_size[k])
        return int(self.steps[a + size // 2])

    def above(self, higher: float, lower: float, sigmas: float, points_a: int, points_b: int) -> bool:
        """Is level ``higher`` above level ``lower`` by more than noise?

        The levels are medians of ``points_a`` and ``points_b`` points; the
        standard error of a median is about 1.25 sigma / sqrt(points). For a
        positive loss the test is made on the log scale, where a loss's noise
        is roughly constant whether it sits at 3 or at 300.
        """
        se = self.difference_error(points_a, points_b)
        if self.log_noise is not None and higher > 0 and lower > 0:
            return bool(np.log(higher) - np.log(lower) > sigmas * se * self.log_noise)
        return bool(higher - lower > sigmas * se * self.noise)

    @staticmethod
    def difference_error(points_a: int, points_b: int) -> float:
        """The standard error of the difference of two medians of ``points_a`` and ``points_b`` points, in sigmas."""
        return float(MEDIAN_SE * np.sqrt(1.0 / max(points_a, 1) + 1.0 / max(points_b, 1)))

    def shifted(self, level: float, points: int, z: float) -> float:
        """A median of ``points`` points moved ``z`` of its standard errors up (down for a negative ``z``), on the
        scale ``above`` compares on: by a factor for a positive loss, by a difference otherwise."""
        if self.log_noise is not None and level > 0:
            return float(level * np.exp(z * MEDIAN_SE * self.log_noise / np.sqrt(max(points, 1))))
        return float(level + z * MEDIAN_SE * self.noise / np.sqrt(max(points, 1)))

    def start_points(self, head_points: int) -> int:
        """How many points the start level is the median of (one, when it is the first point alone)."""
        return 1 if self.start_is_first_point else min(self.n, head_points)

    @property
    def tail_points(self) -> int:
        return int(self.values.size - np.searchsorted(self.steps, self.end_first_step))

    @property
    def head_window_points(self) -> int:
        return int(np.searchsorted(self.steps, self.head_window_last_step, side="right"))


def _blows_up_after_first(values: np.ndarray, start: float, sigmas: float, noise: float, fallback_quantile: float) -> bool:
    """Are the points right after the first already ``sigmas`` noise sigmas above it?

    For a positive loss the comparison is made on the log scale, where the
    noise of a loss is roughly constant: a curve that jumps from 3.4 to 456
    and then wanders between 100 and 1,300 has a huge noise in loss units,
    which would hide the jump, but a small one in log units.
    """
    first = float(values[0])
    if not start > first:
        return False
    if first > 0 and bool((values > 0).all()):
        logs = np.log(values)
        return bool(np.log(start) - np.log(first) > sigmas * robust_sigma(logs, fallback_quantile))
    return bool(start - first > sigmas * noise)


def profile(series: Series, t: Thresholds) -> Profile | None:
    """Summarise the finite part of a series, or None when it is too short to judge."""
    part = series.finite_part()
    steps, values = part.steps, part.values
    n = values.size
    if n < max(t.MIN_TREND_POINTS, 1):
        return None
    k_head = min(n, t.HEAD_POINTS)
    k_tail = min(n, max(t.HEAD_POINTS, int(np.ceil(n * t.TAIL_SHARE))))
    bounds = segment_bounds(n, t.SEGMENTS, t.MIN_SEGMENT_POINTS)
    seg_medians = np.array([median(values[a:b]) for a, b in bounds])
    noise = robust_sigma(values, t.NOISE_FALLBACK_QUANTILE)
    start, start_last = float(median(values[:k_head])), int(steps[k_head - 1])
    # A blow-up in the first logged steps: the points right after the first
    # are already far above it, so their median would hide where the run
    # started. The first point is then the only honest start level.
    first_is_start = _blows_up_after_first(values, start, t.NOISE_SIGMAS, noise, t.NOISE_FALLBACK_QUANTILE)
    if first_is_start:
        start, start_last = float(values[0]), int(steps[0])
    return Profile(
        steps=steps,
        values=values,
        start=start,
        start_last_step=start_last,
        start_is_first_point=first_is_start,
        head_window_median=float(median(values[:k_tail])),
        head_window_last_step=int(steps[k_tail - 1]),
        end=float(median(values[n - k_tail :])),
        end_first_step=int(steps[n - k_tail]),
        seg_medians=seg_medians,
        seg_first=np.array([steps[a] for a, _ in bounds], dtype=np.int64),
        seg_last=np.array([steps[b - 1] for _, b in bounds], dtype=np.int64),
        seg_size=np.array([b - a for a, b in bounds], dtype=np.int64),
        noise=noise,
        log_noise=robust_sigma(np.log(values), t.NOISE_FALLBACK_QUANTILE) if bool((values > 0).all()) else None,
    )


_WINDOW_ROWS = 1_000_000
_NETWORK_MOST_K = 11
"""Windows of up to this many points are sorted by a comparison network (k*(k-1)/2 comparisons per window, numpy's
minimum and maximum over every window at once); longer ones by a partition of each window."""
_NETWORK_CHUNK = 1 << 15
"""Windows a network sorts at a time: its k columns stay in the CPU's cache."""


def window_medians(values: np.ndarray, k: int) -> np.ndarray:
    """The median of each run of ``k`` consecutive values (``values.size - k + 1`` of them), exactly :func:`median`'s.

    Short windows (the spike rules' five points) are sorted by an odd-even transposition network: a comparison moves
    values and never computes one, so each window's middle is the very element a partition picks (for even ``k``
    the same two halved; of a 0.0 and a -0.0, either may be the one), at 5-10x the speed (0.25 -> 0.05 s over ten
    million points). A longer window's median partitions a copy of it, a million windows at a time (at ten million
    steps and k = 12, 960 MB taken whole). NaN-free input is the caller's job, as for :func:`median`."""
    values = np.asarray(values, dtype=np.float64)
    if values.size < k:
        return np.empty(0)
    if k <= _NETWORK_MOST_K:
        return _network_medians(values, k)
    windows = np.lib.stride_tricks.sliding_window_view(values, k)
    parts = [median(windows[at : at + _WINDOW_ROWS], axis=1) for at in range(0, windows.shape[0], _WINDOW_ROWS)]
    return np.concatenate(parts) if len(parts) > 1 else np.asarray(parts[0])


def _network_medians(values: np.ndarray, k: int) -> np.ndarray:
    """:func:`window_medians` by a sorting network over the k columns of a chunk of windows (column i holds each
    window's i-th point): k rounds, each comparing neighbouring columns in pairs, from the first column and the second
    in turn, leave every window sorted down the columns."""
    n = values.size - k + 1
    out = np.empty(n)
    columns = [np.empty(min(_NETWORK_CHUNK, n)) for _ in range(k)]
    low = np.empty(min(_NETWORK_CHUNK, n))
    middle = k // 2
    for at in range(0, n, _NETWORK_CHUNK):
        size = min(_NETWORK_CHUNK, n - at)
        cols, lows = [column[:size] for column in columns], low[:size]
        for i, column in enumerate(cols):
            column[:] = values[at + i : at + i + size]
        for round_ in range(k):
            for j in range(round_ % 2, k - 1, 2):
                np.minimum(cols[j], cols[j + 1], out=lows)
                np.maximum(cols[j], cols[j + 1], out=cols[j + 1])
                cols[j], lows = lows, cols[j]  # the minimum's array becomes the column, the column's the next scratch
        if k % 2:
            out[at : at + size] = cols[middle]
        else:
            midpoint(cols[middle - 1], cols[middle], out=out[at : at + size])
    return out


def neighbour_count(k: float) -> int:
    """The number of neighbours each side that :func:`neighbour_medians` takes for ``k``: at least one, whole."""
    return max(1, int(k))


def neighbour_medians(values: np.ndarray, k: int, at: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """For each point (or each of the points ``at``), the median of the ``k`` points before it and of the ``k`` after it.

    NaN where there are none (the first point has no points before it). A
    spike must stand above both sides: on a steep descent a point is above
    what follows but not above what came before, so it is not a spike.
    """
    n = values.size
    k = neighbour_count(k)
    if at is not None:
        return _neighbour_medians_at(values, k, at)
    before = np.full(n, np.nan)
    after = np.full(n, np.nan)
    if n > k:
        full = window_medians(values, k)
        before[k:] = full[: n - k]
        after[: n - k] = full[1:]
    for i in range(1, min(k, n)):  # the first points have fewer than k before them
        before[i] = median(values[:i])
    for i in range(max(0, n - k), n - 1):  # the last points have fewer than k after them
        after[i] = median(values[i + 1 :])
    return before, after


def _neighbour_medians_at(values: np.ndarray, k: int, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`neighbour_medians` at the points ``at`` only: the windows of those with k points each side taken as rows
    (copied _WINDOW_ROWS at a time, as :func:`window_medians` copies them), the few at the ends one by one."""
    n = values.size
    before, after = np.full(at.size, np.nan), np.full(at.size, np.nan)
    inner = (at >= k) & (at <= n - 1 - k)
    if inner.any():
        windows = np.lib.stride_tricks.sliding_window_view(values, k)
        rows = at[inner]
        for side, first in ((before, rows - k), (after, rows + 1)):
            side[inner] = np.concatenate([median(windows[first[s : s + _WINDOW_ROWS]], axis=1) for s in range(0, first.size, _WINDOW_ROWS)])
    for j in np.flatnonzero(~inner).tolist():
        i = int(at[j])
        if i > 0:
            before[j] = median(values[max(0, i - k) : i])
        if i < n - 1:
            after[j] = median(values[i + 1 : i + 1 + k])
    return before, after


def rolling_median3(values: np.ndarray) -> np.ndarray:
    """Median of each point and its two neighbours (the ends use what they have)."""
    if values.size < 3:
        return np.full(values.size, median(values)) if values.size == 2 else values.astype(np.float64).copy()
    out = values.astype(np.float64).copy()
    out[1:-1] = window_medians(values, 3)
    out[0] = median(values[:2])
    out[-1] = median(values[-2:])
    return out


def trend_t(values: np.ndarray) -> float:
    """Student t of the Spearman rank correlation between position and value.

    Negative when the curve falls. Ranks make it blind to the size of outliers
    and to the shape of the fall; only its consistency counts. Ties get
    arbitrary but deterministic ranks, which only weakens the trend.
    """
    n = values.size
    if n < 3:
        return 0.0
    order = np.argsort(values, kind="stable")
    ranks = np.empty(n, dtype=float)
    ranks[order] = np.arange(n, dtype=float)  # the inverse permutation: what a second argsort gives, in linear time
    if np.all(values == values[0]):
        return 0.0
    # ranks and positions are both a permutation of 0..n-1, so Pearson's r of the two is Spearman's formula
    # (what np.corrcoef would compute, without centring and scaling two more arrays of n floats)
    d = ranks - np.arange(n, dtype=float)
    rho = 1.0 - 6.0 * float(np.dot(d, d)) / (float(n) * (float(n) * n - 1.0))
    rho = max(min(rho, 0.999999), -0.999999)
    return rho * float(np.sqrt((n - 2) / (1 - rho * rho)))


def share_after(steps_first: int, steps_last: int, at: int) -> float:
    span = steps_last - steps_first
    if span <= 0:
        return 0.0
    return float(np.clip((steps_last - at) / span, 0.0, 1.0))
