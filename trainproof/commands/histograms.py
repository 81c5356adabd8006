"""How a subject's items spread over one measure, as a :class:`~trainproof.report.Histogram`: the bins, and the items a
rule flagged counted apart. A dataset's clip durations, a text's tokens per line or per row."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from trainproof.checks.stats import MAD_TO_SIGMA
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


def histogram(
    title: str,
    unit: str,
    values: np.ndarray,
    levels: np.ndarray,
    limits: tuple[tuple[float, str], ...],
    note: str,
    y_label: str = "clips",
    covers: Sequence[float] = (),
) -> Histogram:
    """``levels`` per value: 0 passed, 1 flagged at WARN, 2 at FAIL. The axis also reaches ``covers`` (a limit that
    must be drawn where the values stop short of it)."""
    low, high = _span(values)
    if covers:
        low, high = min(low, *covers), max(high, *covers)
    edges = np.histogram_bin_edges(values, bins=_bins(values.size), range=(low, high) if high > low else None)
    kept = np.clip(values, edges[0], edges[-1])
    passed, warned, failed = (np.histogram(kept[levels == level], bins=edges)[0] for level in (0, 1, 2))
    return Histogram(title, unit, edges, passed, warned, failed, limits=limits, note=note, open_low=bool((values < edges[0]).any()),
                     open_high=bool((values > edges[-1]).any()), y_label=y_label)  # fmt: skip


def fired(findings: Sequence[Finding], rule_id: str) -> set[Level]:
    """The levels ``rule_id`` found something at."""
    return {f.level for f in findings if f.rule_id == rule_id}


def flagged_at(findings: Sequence[Finding], rule_id: str, flagged: np.ndarray) -> np.ndarray:
    """Per item, its level by ``rule_id`` (2 FAIL, 1 WARN, 0 none): the items of ``flagged`` at the rule's worst level
    when it fired, none when it did not."""
    levels = fired(findings, rule_id)
    if not levels:
        return np.zeros(flagged.size, dtype=int)
    return np.where(flagged, 2 if Level.FAIL in levels else 1, 0)
