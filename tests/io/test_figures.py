"""trainproof.io.figures: the exact strings findings print, at and around every boundary."""

from __future__ import annotations

import math

import numpy as np
import pytest

from trainproof.io import figures


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (0, "0"),
        (0.0, "0"),
        (-0.0, "0"),
        (1, "1"),
        (-3.14159, "-3.142"),
        (0.0317, "0.0317"),
        (7.55, "7.55"),
        (123.456, "123.5"),
        (2650.4, "2650"),
        (9999, "9999"),
        (9999.4, "9999"),
        (-9999.4, "-9999"),
        # 4 significant digits from 1e-4 up to 1e4
        (1e-4, "0.0001"),
        (-1e-4, "-0.0001"),
        (0.00012345, "0.0001234"),
        # below 1e-4: 3 significant digits
        (9.9994e-5, "0.0001"),
        (1e-5, "1e-05"),
        (-1.234e-7, "-1.23e-07"),
        (5e-324, "4.94e-324"),
        # from 1e4 to 1e9: whole numbers with separators
        (1e4, "10,000"),
        (-1e4, "-10,000"),
        (12345.6, "12,346"),
        (999999999.4, "999,999,999"),
        # from 1e9: 3 significant digits
        (1e9, "1e+09"),
        (-1e9, "-1e+09"),
        (3.2e12, "3.2e+12"),
        (1.7976931348623157e308, "1.8e+308"),
        (math.nan, "NaN"),
        (math.inf, "inf"),
        (-math.inf, "-inf"),
        (None, "n/a"),
        (np.float32(0.1), "0.1"),
        (np.int64(20000), "20,000"),
    ],
)
def test_num(x, text):
    assert figures.num(x) == text


@pytest.mark.parametrize(
    ("s", "text"),
    [
        (0, "0"),
        (5, "5"),
        (999, "999"),
        (1000, "1,000"),
        (1234567, "1,234,567"),
        (-1500, "-1,500"),
        (12.9, "12"),
        (np.int64(10000), "10,000"),
    ],
)
def test_step(s, text):
    assert figures.step(s) == text


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (0, "0.00x"),
        (0.05, "0.05x"),
        (0.999, "1.00x"),
        (-2, "-2.00x"),
        (1, "1.0x"),
        (5.44, "5.4x"),
        (99.94, "99.9x"),
        (100, "100x"),
        (4513.4, "4,513x"),
        (1e6, "1,000,000x"),
        (999_999_999.0, "999,999,999x"),
        (3.2e12, "3.2e+12x"),
        (1e300, "1e+300x"),  # not 301 digits
        (float("inf"), "inf x"),
        (float("nan"), "NaN x"),
    ],
)
def test_ratio(x, text):
    assert figures.ratio(x) == text


@pytest.mark.parametrize(
    ("share", "text"),
    [
        (0, "0.0%"),
        (0.005, "0.50%"),
        (-0.005, "-0.50%"),
        (0.00004, "0.00%"),
        (0.01, "1.0%"),
        (0.05, "5.0%"),
        (-0.05, "-5.0%"),
        (0.1, "10%"),
        (0.125, "12%"),  # round half to even, as format() does
        (0.5, "50%"),
        (-0.5, "-50%"),
        (1, "100%"),
        (1.5, "150%"),
    ],
)
def test_pct(share, text):
    assert figures.pct(share) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0 s"),
        (0.4, "0 s"),
        (1.5, "2 s"),
        (59, "59 s"),
        (59.4, "59 s"),
        (60, "1 min"),
        (89, "1 min"),
        (150, "2 min"),  # 2.5 min, round half to even
        (3600, "1.0 h"),
        (5400, "1.5 h"),
        (86400, "24.0 h"),
    ],
)
def test_duration(seconds, text):
    assert figures.duration(seconds) == text


@pytest.mark.parametrize(
    ("n", "noun", "many", "text"),
    [
        (1, "clip", None, "1 clip"),
        (0, "clip", None, "0 clips"),
        (2, "clip", None, "2 clips"),
        (2650, "clip", None, "2,650 clips"),
        (np.int64(1), "speaker", None, "1 speaker"),
        (np.int64(12345), "row", None, "12,345 rows"),
        (True, "problem", None, "1 problem"),
        (1, "distinct number", None, "1 distinct number"),
        (2, "distinct number", None, "2 distinct numbers"),
        (1, "stretch", "stretches", "1 stretch"),
        (3, "stretch", "stretches", "3 stretches"),
        # a measured amount agrees with the number as printed
        (1.0, "token", None, "1 token"),
        (np.float64(1.00001), "token", None, "1 token"),
        (0.5, "token", None, "0.5 tokens"),
        (1.5, "token", None, "1.5 tokens"),
        (0.0, "token", None, "0 tokens"),
        (12345.6, "token", None, "12,346 tokens"),
        (float("nan"), "token", None, "NaN tokens"),
    ],
)
def test_plural(n, noun, many, text):
    assert figures.plural(n, noun, many) == text


@pytest.mark.parametrize(
    ("function", "x", "text"),
    [
        (figures.num, 9999.5, "10,000"),
        (figures.num, -9999.5, "-10,000"),
        (figures.ratio, 99.96, "100x"),
        (figures.pct, 0.0999, "10%"),
        (figures.duration, 59.5, "1 min"),
        (figures.duration, 3599, "1.0 h"),
    ],
    ids=["num", "num negative", "ratio", "pct", "duration s", "duration min"],
)
def test_a_value_that_rounds_into_the_next_range_prints_as_that_range_does(function, x, text):
    assert function(x) == text
