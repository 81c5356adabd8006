"""What a dataset's report plots: how clip durations and speaking rates spread, the outliers counted apart.

Each histogram is built from the same table and thresholds as the rule it
illustrates (TP-DATA-DURATION, TP-DATA-TEXT-RATE), so a bar is red or amber
exactly where that rule named clips. Renderers only draw the result.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from trainproof.checks.base import NotApplicable
from trainproof.checks.data import DataContext
from trainproof.commands.histograms import fired, flagged_at, histogram
from trainproof.io import figures
from trainproof.report import Finding, Histogram


def duration(ctx: DataContext, findings: Sequence[Finding]) -> Histogram | None:
    values = ctx.frame("duration_s", rows=np.flatnonzero(ctx.readable))["duration_s"].to_numpy(dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return None
    t = ctx.t
    outside = (values < t.DATA_MIN_DURATION_S) | (values > t.DATA_MAX_DURATION_S)
    levels = flagged_at(findings, "TP-DATA-DURATION", outside)
    limits = ((t.DATA_MIN_DURATION_S, f"min {figures.num(t.DATA_MIN_DURATION_S)} s"), (t.DATA_MAX_DURATION_S, f"max {figures.num(t.DATA_MAX_DURATION_S)} s"))
    flagged = int(np.count_nonzero(levels))
    bounds = f"{figures.num(t.DATA_MIN_DURATION_S)}-{figures.num(t.DATA_MAX_DURATION_S)} s"
    note = f"{flagged:,} of {figures.plural(values.size, 'clip')} outside {bounds} (TP-DATA-DURATION)"
    return histogram("Clip duration", "s", values, levels, limits, note)


def speaking_rate(ctx: DataContext, findings: Sequence[Finding]) -> Histogram | None:
    try:
        rates = ctx.rates
    except NotApplicable:
        return None
    values = rates.cps
    if values.size == 0:
        return None
    t = ctx.t
    levels = rates.levels if fired(findings, "TP-DATA-TEXT-RATE") else np.zeros(values.size, dtype=int)
    limits: tuple[tuple[float, str], ...] = ()
    by_speaker = rates.by_speaker
    if not by_speaker:
        median, sigma = rates.median, rates.sigma_wide
        limits = ((median, f"median {figures.num(median)}"),)
        if sigma > 0:
            fence = t.DATA_CPS_WARN_Z * sigma  # the sigma the rule allows for: the clips past it are flagged (to 20 ms of edge error)
            limits += ((median - fence, f"-{figures.num(t.DATA_CPS_WARN_Z)} sigma"), (median + fence, f"+{figures.num(t.DATA_CPS_WARN_Z)} sigma"))
    flagged = int(np.count_nonzero(levels))
    scope = "each speaker's" if by_speaker else "the corpus's"
    sigmas = figures.plural(t.DATA_CPS_WARN_Z, "robust sigma")
    allowing = "allowing for the measurement's error"
    note = f"{flagged:,} of {values.size:,} clips beyond {sigmas} of {scope} median, {allowing} (TP-DATA-TEXT-RATE)"
    return histogram("Characters per second of speech", "chars/s", values, levels, limits, note)


def charts(ctx: DataContext, findings: Sequence[Finding]) -> tuple[Histogram, ...]:
    """The dataset's histograms, those that have something to show."""
    if ctx.manifest.entries and ctx.readable.any():
        return tuple(h for h in (duration(ctx, findings), speaking_rate(ctx, findings)) if h is not None)
    return ()
