"""trainproof.checks.stats against numpy: medians, robust noise, the rank trend, a curve's profile."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.helpers import series
from trainproof.checks import stats
from trainproof.checks.thresholds import DEFAULTS, Thresholds
from trainproof.runs.model import Series

RNG = np.random.default_rng(20240611)


# Calls whose signature may change (the 0.9 fallback quantile of robust_sigma
# may move into thresholds.py): one place to adapt.
def sigma_of(values) -> float:
    return stats.robust_sigma(np.asarray(values, dtype=float))


def profile_of(values, steps=None, t: Thresholds = DEFAULTS):
    return stats.profile(series(values, steps), t)


def head_window(p: stats.Profile) -> tuple[float, int, int]:
    """(median, last step, points) of the head window: the first TAIL_SHARE of the points, the mirror of ``end``."""
    return p.head_window_median, p.head_window_last_step, p.head_window_points


# --- median ------------------------------------------------------------------

ARRAYS = {
    "single": [3.5],
    "two": [1.0, 2.0],
    "odd": [5.0, 1.0, 4.0, 2.0, 3.0],
    "even": [5.0, 1.0, 4.0, 2.0, 3.0, 6.0],
    "ties": [2.0, 2.0, 1.0, 2.0, 3.0, 2.0],
    "all same": [7.0] * 8,
    "negative": [-1.0, -5.0, -3.0, -2.0],
    "inf in odd": [1.0, math.inf, 2.0],
    "-inf in even": [-math.inf, 1.0, 2.0, 3.0],
    "both infs": [-math.inf, math.inf],
    "huge and tiny": [1e300, -1e300, 1e-300, 0.0],
    **{f"random {n}": RNG.normal(0, 10, n).tolist() for n in (1, 2, 3, 10, 11, 100, 101)},
    **{f"random ties {n}": RNG.integers(0, 4, n).astype(float).tolist() for n in (9, 10, 50)},
}


@pytest.mark.parametrize("values", ARRAYS.values(), ids=ARRAYS.keys())
def test_median_is_numpys(values):
    a = np.array(values)
    with np.errstate(invalid="ignore"):
        expected = np.median(a)
        got = stats.median(a)
    assert isinstance(got, float)
    np.testing.assert_array_equal(got, expected)  # NaN == NaN here: -inf and inf average to NaN in both


def test_median_of_nothing_is_nan():
    assert math.isnan(stats.median(np.array([])))


def test_median_does_not_reorder_its_input():
    a = np.array([3.0, 1.0, 2.0, 5.0])
    stats.median(a)
    assert a.tolist() == [3.0, 1.0, 2.0, 5.0]


@pytest.mark.parametrize("values", ARRAYS.values(), ids=ARRAYS.keys())
def test_a_median_in_place_is_the_same_number(values):
    """overwrite=True partitions the caller's array instead of a copy: the same median to the bit, the same values
    in another order."""
    a = np.array(values, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        expected = stats.median(a)
        got = stats.median(a, overwrite=True)
    np.testing.assert_array_equal(got, expected)
    assert sorted(a.tolist()) == sorted(np.array(values, dtype=np.float64).tolist()) or np.isnan(a).any()
    if a.size % 2 and not np.isnan(a).any():  # partitioned in place: the middle element is the median
        assert a[a.size // 2] == got


def test_robust_sigma_of_integers_is_the_same_as_of_their_floats():
    values = np.array([1, 3, 2, 5, 4, 7, 6, 9])
    assert stats.robust_sigma(values) == stats.robust_sigma(values.astype(np.float64))


QUANTILES = (0.0, 0.01, 0.1, 0.25, 0.5, 0.7, 0.9, 0.99, 1.0, 1 / 3)


@pytest.mark.parametrize("values", ARRAYS.values(), ids=ARRAYS.keys())
def test_quantile_is_numpys_to_the_last_bit(values):
    a = np.array(values)
    with np.errstate(invalid="ignore"):
        for q in QUANTILES:
            got = stats.quantile(a, q)
            assert isinstance(got, float)
            np.testing.assert_array_equal(got, np.quantile(a, q), err_msg=f"q={q}")
        np.testing.assert_array_equal(stats.quantile(a, [0.01, 0.99]), np.quantile(a, [0.01, 0.99]))


def test_quantile_does_not_reorder_its_input():
    a = np.array([3.0, 1.0, 2.0, 5.0])
    assert stats.quantile(a, 0.9) == pytest.approx(4.4)
    assert a.tolist() == [3.0, 1.0, 2.0, 5.0]


@pytest.mark.parametrize("shape", [(7, 5), (6, 4), (1, 3), (4, 1)])
@pytest.mark.parametrize("axis", [0, 1, None])
def test_median_along_an_axis_is_numpys(shape, axis):
    a = RNG.normal(0, 1, shape)
    got = stats.median(a, axis=axis)
    expected = np.median(a, axis=axis)
    if axis is None:
        assert got == expected
    else:
        assert isinstance(got, np.ndarray)
        assert got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)


def test_median_of_the_finite_part_is_numpys_nanmedian():
    """The median's contract is finite input; what callers pass is a series' finite part."""
    values = RNG.normal(2, 1, 40)
    values[[3, 17, 18, 30]] = [np.nan, np.inf, np.nan, -np.inf]
    finite = series(values).finite_part().values
    assert finite.size == 36
    assert stats.median(finite) == np.nanmedian(np.where(np.isfinite(values), values, np.nan))


def test_the_finite_part_of_a_finite_series_is_the_series_itself_and_otherwise_a_copy():
    whole = series(RNG.normal(2, 1, 40))
    assert whole.finite_part() is whole
    holed = series(np.array([1.0, np.nan, 3.0]))
    part = holed.finite_part()
    assert part is not holed
    assert part.values.tolist() == [1.0, 3.0]
    assert part.steps.tolist() == holed.steps[[0, 2]].tolist()
    texted = Series(np.array([1, 2]), np.array([1.0, 2.0]), {2: "2.0"})  # a kept text goes with the copy, not the part
    assert texted.finite_part() is not texted
    assert texted.finite_part().raw == {}


# --- robust_sigma --------------------------------------------------------------


def reference_sigma(values: np.ndarray) -> float:
    """The documented definition: 1.4826 x MAD of the first differences / sqrt(2);
    the 90th percentile of the absolute deviations / 1.645 / sqrt(2) when the MAD is 0."""
    d = np.diff(values)
    deviation = np.abs(d - np.median(d))
    mad = np.median(deviation)
    if mad == 0:
        return float(np.quantile(deviation, 0.9) / 1.645 / np.sqrt(2))
    return float(1.4826 * mad / np.sqrt(2))


@pytest.mark.parametrize("n", [3, 4, 10, 51, 500])
@pytest.mark.parametrize("seed", [0, 1])
def test_robust_sigma_is_scaled_mad_of_differences(n, seed):
    values = np.random.default_rng(seed).normal(5, 0.3, n)
    assert sigma_of(values) == pytest.approx(reference_sigma(values), rel=1e-12)


def test_robust_sigma_leaves_its_curve_alone_and_is_the_definition_to_the_bit():
    values = np.random.default_rng(7).normal(5, 0.3, 1001)
    kept = values.copy()
    assert sigma_of(values) == reference_sigma(values)
    np.testing.assert_array_equal(values, kept)


def test_robust_sigma_estimates_gaussian_noise_and_ignores_the_trend():
    noise = np.random.default_rng(3).normal(0, 0.2, 20000)
    flat, falling = 1.0 + noise, np.linspace(10, 1, 20000) + noise
    assert sigma_of(flat) == pytest.approx(0.2, rel=0.03)
    # A linear trend shifts every difference by the same amount: the MAD of the differences does not move.
    assert sigma_of(falling) == pytest.approx(sigma_of(flat), rel=1e-6)


def test_robust_sigma_ignores_a_few_big_jumps():
    values = np.random.default_rng(4).normal(0, 1, 1000)
    spiked = values.copy()
    spiked[[100, 400, 700]] += 1e6
    assert sigma_of(spiked) == pytest.approx(sigma_of(values), rel=0.02)
    assert np.std(np.diff(spiked)) > 1e4  # what a non-robust estimate would have said


def test_robust_sigma_of_a_quantised_log_uses_the_90th_percentile():
    # Printed with one decimal: most differences are exactly 0, so the MAD is 0.
    values = np.array([1.0, 1.0, 1.0, 1.1, 1.1, 1.1, 1.0, 1.0, 1.0, 1.0, 1.2, 1.2, 1.2, 1.2])
    d = np.diff(values)
    assert np.median(np.abs(d - np.median(d))) == 0.0
    expected = np.quantile(np.abs(d), 0.9) / 1.645 / np.sqrt(2)
    assert expected > 0
    assert sigma_of(values) == pytest.approx(expected, rel=1e-12)
    assert sigma_of(values) == pytest.approx(reference_sigma(values), rel=1e-12)


@pytest.mark.parametrize(
    "values", [[], [1.0], [1.0, 5.0], [2.0] * 10, [1.0, 2.0, 3.0, 4.0, 5.0]], ids=["empty", "one", "two", "constant", "straight line"]
)
def test_robust_sigma_is_zero_without_noise(values):
    assert sigma_of(values) == 0.0


# --- trend_t -----------------------------------------------------------------


def trend(values) -> float:
    return stats.trend_t(np.asarray(values, dtype=float))


def reference_t(values: np.ndarray) -> float:
    """t of the least-squares slope of the ranks on position (the t of the Spearman rho)."""
    n = values.size
    ranks = np.argsort(np.argsort(values, kind="stable"), kind="stable").astype(float)
    x = np.arange(n, dtype=float)
    slope, intercept = np.polyfit(x, ranks, 1)
    residuals = ranks - (slope * x + intercept)
    se = np.sqrt(residuals @ residuals / (n - 2) / ((x - x.mean()) @ (x - x.mean())))
    return float(slope / se)


@pytest.mark.parametrize("n", [3, 5, 20, 200])
@pytest.mark.parametrize("drift", [-0.05, 0.0, 0.02])
def test_trend_t_is_the_slope_t_of_ranks_on_position(n, drift):
    values = np.random.default_rng(n).normal(0, 1, n) + drift * np.arange(n)
    assert trend(values) == pytest.approx(reference_t(values), rel=1e-9)


def test_trend_t_sign_and_blindness_to_the_size_of_outliers():
    falling = 1 / np.arange(1, 41) + np.random.default_rng(0).normal(0, 0.002, 40)
    assert trend(falling) < -10
    assert trend(-falling) == pytest.approx(-trend(falling))
    spiked = falling.copy()
    spiked[20] = 1e9  # a rank is a rank: a billion moves it no more than the top value would
    spiked_less = falling.copy()
    spiked_less[20] = falling.max() + 1e-6
    assert trend(spiked) == trend(spiked_less)


def test_trend_t_of_a_perfectly_monotone_curve_is_clipped_not_infinite():
    n = 10
    rho = 0.999999
    assert trend(np.arange(n, 0, -1)) == pytest.approx(-rho * math.sqrt((n - 2) / (1 - rho * rho)), rel=1e-12)
    assert trend(np.exp(np.arange(n))) == pytest.approx(rho * math.sqrt((n - 2) / (1 - rho * rho)), rel=1e-12)


@pytest.mark.parametrize("values", [[], [1.0], [2.0, 1.0], [4.0] * 30], ids=["empty", "one", "two", "constant"])
def test_trend_t_is_zero_when_there_is_no_trend_to_measure(values):
    assert trend(values) == 0.0


def test_trend_t_ties_weaken_a_fall():
    """Ties are ranked in step order (stable), which leans against a falling curve."""
    staircase = np.repeat([4.0, 3.0, 2.0, 1.0], 5)
    x = np.arange(staircase.size, dtype=float)
    average_ranks = np.repeat([17.0, 12.0, 7.0, 2.0], 5)  # the textbook ranks of tied values
    r = np.corrcoef(average_ranks, x)[0, 1]
    textbook = r * math.sqrt((staircase.size - 2) / (1 - r * r))
    assert textbook < trend(staircase) < 0
    assert trend(staircase) == pytest.approx(reference_t(staircase), rel=1e-9)


# --- segment_bounds, share_after ------------------------------------------------


@pytest.mark.parametrize(
    ("n", "max_segments", "min_points", "expected"),
    [
        (20, 20, 3, [(0, 3), (3, 7), (7, 10), (10, 13), (13, 17), (17, 20)]),
        (10, 2, 3, [(0, 5), (5, 10)]),
        (5, 20, 3, [(0, 5)]),
        (2, 20, 3, [(0, 2)]),
        (0, 20, 3, []),
        (100, 20, 3, [(5 * i, 5 * i + 5) for i in range(20)]),
    ],
)
def test_segment_bounds(n, max_segments, min_points, expected):
    assert stats.segment_bounds(n, max_segments, min_points) == expected


@pytest.mark.parametrize("n", [3, 7, 59, 60, 61, 1001])
def test_segment_bounds_tile_the_points_in_near_equal_counts(n):
    bounds = stats.segment_bounds(n, 20, 3)
    assert bounds[0][0] == 0
    assert bounds[-1][1] == n
    assert all(b == c for (_, b), (c, _) in zip(bounds, bounds[1:]))
    sizes = [b - a for a, b in bounds]
    assert min(sizes) >= 3
    assert max(sizes) - min(sizes) <= 1
    assert len(bounds) <= 20


@pytest.mark.parametrize(
    ("first", "last", "at", "expected"),
    [(0, 100, 0, 1.0), (0, 100, 100, 0.0), (0, 100, 25, 0.75), (10, 20, 5, 1.0), (10, 20, 30, 0.0), (10, 10, 10, 0.0), (20, 10, 15, 0.0)],
)
def test_share_after(first, last, at, expected):
    assert stats.share_after(first, last, at) == expected


# --- neighbour_medians, rolling_median3 ----------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 6, 7, 30])
@pytest.mark.parametrize("k", [1, 2, 5])
def test_neighbour_medians_are_medians_of_the_k_points_each_side(n, k):
    values = np.random.default_rng(n * 10 + k).normal(0, 1, n)
    before, after = stats.neighbour_medians(values, k)
    for i in range(n):
        left, right = values[max(0, i - k) : i], values[i + 1 : i + 1 + k]
        assert (before[i] == np.median(left)) if left.size else np.isnan(before[i]), (i, "before")
        assert (after[i] == np.median(right)) if right.size else np.isnan(after[i]), (i, "after")


@pytest.mark.parametrize("k", range(1, 15))
def test_window_medians_are_numpys_medians_to_the_last_bit(k):
    """Both ways (the network up to _NETWORK_MOST_K, the partition past it), across chunk boundaries, with ties."""
    rng = np.random.default_rng(k)
    n = stats._NETWORK_CHUNK + 3 * k + 7
    for values in (rng.normal(0, 1, n).cumsum(), rng.integers(0, 4, n).astype(float), np.geomspace(1e-300, 1e300, n)):
        windows = np.lib.stride_tricks.sliding_window_view(values, k)
        assert np.array_equal(stats.window_medians(values, k), np.median(windows, axis=1))
    assert stats.window_medians(np.arange(k - 1, dtype=float), k).size == 0


def reference_median3(values: np.ndarray) -> list[float]:
    return [float(np.median(values[max(0, i - 1) : i + 2])) for i in range(values.size)]


@pytest.mark.parametrize("n", [0, 1, 3, 4, 25])
def test_rolling_median3_is_the_median_of_each_point_and_its_neighbours(n):
    values = np.random.default_rng(n).normal(0, 1, n)
    assert stats.rolling_median3(values).tolist() == reference_median3(values)


def test_rolling_median3_of_two_points_uses_what_the_ends_have():
    assert stats.rolling_median3(np.array([1.0, 3.0])).tolist() == reference_median3(np.array([1.0, 3.0])) == [2.0, 2.0]


def test_rolling_median3_removes_a_one_point_spike():
    assert stats.rolling_median3(np.array([1.0, 1.0, 9.0, 1.0, 1.0])).tolist() == [1.0, 1.0, 1.0, 1.0, 1.0]


# --- profile -----------------------------------------------------------------

# 20 points at steps 10..200: falls, bottoms out, rises a little.
CURVE = [9.0, 8.0, 7.5, 6.0, 5.0, 4.0, 3.5, 3.0, 2.6, 2.4, 2.2, 2.0, 1.9, 1.8, 1.9, 2.0, 2.1, 2.3, 2.2, 2.5]


def test_profile_fields_on_a_hand_made_curve():
    # Defaults: start = median of the first HEAD_POINTS=3; tail = max(3, ceil(0.1 * 20)) = 3 points;
    # segments of at least 3 points, at most 20: 20 // 3 = 6 segments, bounds 0,3,7,10,13,17,20.
    p = profile_of(CURVE)
    assert p.n == 20
    assert (p.start, p.start_last_step, p.start_is_first_point) == (8.0, 30, False)
    assert head_window(p) == (8.0, 30, 3)
    assert (p.end, p.end_first_step, p.tail_points) == (2.3, 180, 3)
    assert p.seg_medians.tolist() == [8.0, 4.5, 2.6, 2.0, 1.95, 2.3]
    assert p.seg_first.tolist() == [10, 40, 80, 110, 140, 180]
    assert p.seg_last.tolist() == [30, 70, 100, 130, 170, 200]
    assert p.seg_size.tolist() == [3, 4, 3, 3, 4, 3]
    assert (p.best_segment, p.best) == (4, 1.95)
    assert [p.segment_center(k) for k in range(6)] == [20, 60, 90, 120, 160, 190]
    assert p.noise == pytest.approx(reference_sigma(np.array(CURVE)), rel=1e-12)
    assert p.log_noise == pytest.approx(reference_sigma(np.log(CURVE)), rel=1e-12)


def test_profile_levels_agree_with_numpy_on_a_long_noisy_curve():
    values = 0.5 + 2 * np.exp(-np.linspace(0, 5, 1000)) + np.random.default_rng(7).normal(0, 0.05, 1000)
    steps = np.arange(1000) * 4 + 100
    p = profile_of(values, steps)
    assert p.start == np.median(values[:3])
    assert p.end == np.median(values[-100:])
    assert p.end_first_step == steps[900]
    assert head_window(p) == (np.median(values[:100]), steps[99], 100)
    assert p.seg_medians.tolist() == [np.median(chunk) for chunk in np.split(values, 20)]
    assert p.seg_size.tolist() == [50] * 20


def test_profile_skips_non_finite_points():
    with_gaps = np.array(CURVE[:5] + [math.nan] + CURVE[5:10] + [math.inf, -math.inf] + CURVE[10:])
    steps = np.arange(1, with_gaps.size + 1) * 10
    p = profile_of(with_gaps, steps)
    clean = profile_of(CURVE, steps[np.isfinite(with_gaps)])
    assert p.n == clean.n == 20
    assert p.values.tolist() == CURVE
    for field in ("start", "end", "noise", "log_noise", "start_last_step", "end_first_step"):
        assert getattr(p, field) == getattr(clean, field), field
    assert head_window(p) == head_window(clean) == (8.0, 30, 3)
    assert p.seg_medians.tolist() == clean.seg_medians.tolist()
    assert p.seg_first.tolist() == clean.seg_first.tolist() == [10, 40, 90, 140, 170, 210]


def test_profile_start_is_the_first_point_when_the_run_blows_up_at_once():
    values = [2.0, 300.0, 250.0, 400.0, 320.0, 280.0, 350.0, 310.0]
    p = profile_of(values)
    assert (p.start, p.start_last_step, p.start_is_first_point) == (2.0, 10, True)
    assert head_window(p) == (250.0, 30, 3)  # the head window stays a median: of 2, 300 and 250


def test_profile_of_a_curve_that_is_not_positive_has_no_log_noise():
    p = profile_of([0.5, 0.2, 0.0, -0.1, -0.3, -0.2])
    assert p.log_noise is None
    assert p.noise > 0


def test_profile_needs_min_trend_points_finite_points():
    assert profile_of([3.0, 2.0, 1.0, 0.5]) is None
    assert profile_of([3.0, 2.0, math.nan, 1.0, 0.5]) is None
    assert profile_of([3.0, 2.0, 1.0, 0.5, 0.4]) is not None
    assert profile_of([3.0, 2.0, 1.0], t=DEFAULTS.with_overrides({"MIN_TREND_POINTS": 3})).n == 3


def test_above_compares_on_the_log_scale_for_a_positive_curve():
    p = profile_of(CURVE)
    se = 1.2533 * math.sqrt(1 / 3 + 1 / 3)
    margin = 4 * se * p.log_noise
    lower = 2.0
    assert p.above(lower * math.exp(margin * 1.001), lower, 4, 3, 3)
    assert not p.above(lower * math.exp(margin * 0.999), lower, 4, 3, 3)
    # Same ratio, a hundred times higher: the same answer on the log scale.
    assert p.above(200 * math.exp(margin * 1.001), 200, 4, 3, 3)


def test_above_compares_in_value_units_when_a_level_is_not_positive():
    p = profile_of(CURVE)
    se = 1.2533 * math.sqrt(1 / 5 + 1 / 1)
    margin = 2 * se * p.noise
    assert p.above(-1 + margin * 1.001, -1.0, 2, 5, 1)
    assert not p.above(-1 + margin * 0.999, -1.0, 2, 5, 1)
    assert not p.above(1.0, 1.0, 0, 3, 3)  # equal levels are never above each other


def test_seconds_per_step_of_a_clock_of_whole_seconds():
    """A clock a library caller built of integers: the quotient is made anew, not written into the integer differences."""
    from trainproof.runs.model import Run

    run = Run(path="x", format="jsonl", wall_time=Series(np.arange(1, 11), np.arange(10) * 2))
    steps, seconds, source = run.seconds_per_step()
    assert steps.tolist() == list(range(2, 11))
    assert seconds.tolist() == [2.0] * 9
    assert source == "timestamp differences"


def test_neighbour_medians_at_some_points_are_those_of_every_point():
    """neighbour_medians(values, k, at) at the ends, in the middle and everywhere, for k shorter and longer than the
    curve, against the medians of every point (the windows' rows copied a few at a time too)."""
    rng = np.random.default_rng(23)
    for case in range(200):
        n = int(rng.integers(1, 60))
        k = int(rng.integers(0, 9))
        values = rng.normal(1.0, 1.0, n)
        at = np.sort(rng.choice(n, int(rng.integers(1, n + 1)), replace=False))
        before, after = stats.neighbour_medians(values, k)
        got_before, got_after = stats.neighbour_medians(values, k, at)
        np.testing.assert_array_equal(got_before, before[at], err_msg=str(case))
        np.testing.assert_array_equal(got_after, after[at], err_msg=str(case))


def test_neighbour_medians_at_many_points_copy_their_windows_in_blocks(monkeypatch):
    values = np.random.default_rng(2).normal(1.0, 1.0, 500)
    at = np.arange(0, 500, 3)
    expected = stats.neighbour_medians(values, 6)
    monkeypatch.setattr(stats, "_WINDOW_ROWS", 4)
    got = stats.neighbour_medians(values, 6, at)
    np.testing.assert_array_equal(got[0], expected[0][at])
    np.testing.assert_array_equal(got[1], expected[1][at])


def test_the_median_of_two_values_near_the_float_maximum_is_between_them_not_infinite():
    # (a + b) / 2 overflowed: a loss curve near 1.5e308 had an infinite start or end level ("ends infx above where it
    # started", "nan% above the start") and numpy warned on stderr
    pair = np.array([1.5e308, 1.7e308])
    with np.errstate(all="raise"):
        assert stats.median(pair) == 1.6e308
        assert stats.median(np.array([[1.5e308, 1.7e308], [1.0, 2.0]]), axis=1).tolist() == [1.6e308, 1.5]
        assert stats.window_medians(np.array([1.5e308, 1.7e308, 1.0, 2.0]), 2).tolist() == [1.6e308, 8.5e307, 1.5]
        assert stats.median(np.array([-1.5e308, -1.7e308])) == -1.6e308
    assert stats.median(np.array([5e-324, 5e-324])) == 5e-324  # the smallest subnormal, not halved to 0
    falling = np.linspace(1.7e308, 0.6e308, 40)
    prof = profile_of(falling)
    assert all(math.isfinite(level) for level in (prof.start, prof.end, prof.head_window_median))
    assert prof.end < prof.start
