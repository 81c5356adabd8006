"""What a dataset's report plots: how clip durations and speaking rates spread, the outliers counted apart.

Each histogram is built from the same table and thresholds as the rule it
illustrates (TP-DATA-DURATION, TP-DATA-TEXT-RATE), so a bar is red or amber
exactly where that rule named clips. Renderers only draw the result.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from trainproof.checks.base import NotApplicable
from trainproof.checks.data import DataContext, rate_levels
from trainproof.checks.stats import MAD_TO_SIGMA
from trainproof.io import figures
from trainproof.report import Finding, Histogram, Level

MAX_BINS = 40
"""Bins of a histogram at most (fewer for a small corpus: about the square root of its clips, at least MIN_BINS)."""

MIN_BINS = 10

SPAN_SIGMAS = 6.0
"""The axis covers the median +- this many robust sigmas (MAD x 1.4826) of the values, or all of them if that is
less; values beyond fall into the first or last bin, which is then marked open, so one 25 s clip does not squeeze
a corpus of 2-6 s clips into a single bar."""


def _bins(count: int) -> int:
    return int(min(MAX_BINS, max(MIN_BINS, round(count**0.5))))


def _span(values: np.ndarray) -> tuple[float, float]:
    low, high = float(values.min()), float(values.max())
    median = float(np.median(values))
    sigma = MAD_TO_SIGMA * float(np.median(np.abs(values - median)))
    if sigma > 0:
        low, high = max(low, median - SPAN_SIGMAS * sigma), min(high, median + SPAN_SIGMAS * sigma)
    return low, high


def _histogram(title: str, unit: str, values: np.ndarray, levels: np.ndarray, limits: tuple[tuple[float, str], ...], note: str) -> Histogram:
    """``levels`` per value: 0 passed, 1 flagged at WARN, 2 at FAIL."""
    low, high = _span(values)
    edges = np.histogram_bin_edges(values, bins=_bins(values.size), range=(low, high) if high > low else None)
    kept = np.clip(values, edges[0], edges[-1])
    passed, warned, failed = (np.histogram(kept[levels == level], bins=edges)[0] for level in (0, 1, 2))
    return Histogram(title, unit, edges, passed, warned, failed, limits=limits, note=note, open_low=bool((values < edges[0]).any()),
                     open_high=bool((values > edges[-1]).any()))  # fmt: skip


def _fired(findings: Sequence[Finding], rule_id: str) -> set[Level]:
    return {f.level for f in findings if f.rule_id == rule_id}


def duration(ctx: DataContext, findings: Sequence[Finding]) -> Histogram | None:
    decoded = ctx.decoded
    values = decoded["duration_s"].to_numpy(dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return None
    t = ctx.t
    outside = (values < t.DATA_MIN_DURATION_S) | (values > t.DATA_MAX_DURATION_S)
    fired = _fired(findings, "TP-DATA-DURATION")
    level = 2 if Level.FAIL in fired else 1
    levels = np.where(outside, level, 0) if fired else np.zeros(values.size, dtype=int)
    limits = ((t.DATA_MIN_DURATION_S, f"min {figures.num(t.DATA_MIN_DURATION_S)} s"), (t.DATA_MAX_DURATION_S, f"max {figures.num(t.DATA_MAX_DURATION_S)} s"))
    flagged = int(np.count_nonzero(levels))
    bounds = f"{figures.num(t.DATA_MIN_DURATION_S)}-{figures.num(t.DATA_MAX_DURATION_S)} s"
    note = f"{flagged:,} of {figures.plural(values.size, 'clip')} outside {bounds} (TP-DATA-DURATION)"
    return _histogram("Clip duration", "s", values, levels, limits, note)


def speaking_rate(ctx: DataContext, findings: Sequence[Finding]) -> Histogram | None:
    try:
        rates, by_speaker = ctx.rates
    except NotApplicable:
        return None
    values = rates["cps"].to_numpy(dtype=float)
    if values.size == 0:
        return None
    t = ctx.t
    levels = rate_levels(rates, t) if _fired(findings, "TP-DATA-TEXT-RATE") else np.zeros(values.size, dtype=int)
    limits: tuple[tuple[float, str], ...] = ()
    if not by_speaker:
        median, sigma = float(rates["median_cps"].iloc[0]), float(rates["sigma_wide"].iloc[0])
        limits = ((median, f"median {figures.num(median)}"),)
        if sigma > 0:
            fence = t.DATA_CPS_WARN_Z * sigma  # the sigma the rule allows for: the clips past it are flagged (to 20 ms of edge error)
            limits += ((median - fence, f"-{figures.num(t.DATA_CPS_WARN_Z)} sigma"), (median + fence, f"+{figures.num(t.DATA_CPS_WARN_Z)} sigma"))
    flagged = int(np.count_nonzero(levels))
    scope = "each speaker's" if by_speaker else "the corpus's"
    sigmas = figures.plural(t.DATA_CPS_WARN_Z, "robust sigma")
    allowing = "allowing for the measurement's error"
    note = f"{flagged:,} of {values.size:,} clips beyond {sigmas} of {scope} median, {allowing} (TP-DATA-TEXT-RATE)"
    return _histogram("Characters per second of speech", "chars/s", values, levels, limits, note)


def charts(ctx: DataContext, findings: Sequence[Finding]) -> tuple[Histogram, ...]:
    """The dataset's histograms, those that have something to show."""
    if ctx.manifest.entries and not ctx.decoded.empty:
        return tuple(h for h in (duration(ctx, findings), speaking_rate(ctx, findings)) if h is not None)
    return ()
