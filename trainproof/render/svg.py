"""Inline SVG line charts for the HTML report: pure functions from numbers to markup.

Every string that reaches the markup passes through ``html.escape``. Long
series are reduced to the min and max of each pixel column, so a spike of
one step stays visible on a chart of a million.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import numpy as np

from trainproof import fmt

WIDTH, HEIGHT = 760, 230
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 22, 30


@dataclass(frozen=True, eq=False)
class Line:
    label: str
    steps: np.ndarray
    values: np.ndarray
    css: str


@dataclass(frozen=True)
class Marker:
    step: int
    label: str
    level: str  # "FAIL", "WARN", "INFO"
    note: str


def _nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    if not math.isfinite(lo) or not math.isfinite(hi) or hi <= lo:
        return [lo]
    raw = (hi - lo) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(lo / step) * step
    ticks = []
    value = first
    while value <= hi + step * 1e-9 and len(ticks) < 12:
        ticks.append(round(value, 12))
        value += step
    return ticks


def _reduce(xs: np.ndarray, ys: np.ndarray, columns: int) -> tuple[np.ndarray, np.ndarray]:
    """At most two points per pixel column: its min and its max, in step order."""
    if xs.size <= 2 * columns:
        return xs, ys
    bucket = np.minimum(((xs - xs[0]) / max(xs[-1] - xs[0], 1e-12) * columns).astype(int), columns - 1)
    out_x, out_y = [], []
    edges = np.flatnonzero(np.diff(bucket)) + 1
    for chunk_x, chunk_y in zip(np.split(xs, edges), np.split(ys, edges)):
        lo, hi = int(np.argmin(chunk_y)), int(np.argmax(chunk_y))
        for i in sorted({lo, hi}):
            out_x.append(chunk_x[i])
            out_y.append(chunk_y[i])
    return np.array(out_x), np.array(out_y)


def chart(
    title: str, lines: list[Line], markers: list[Marker], *, log_y: bool | None = None, x_range: tuple[float, float] | None = None
) -> str:
    """One chart as an ``<svg>`` element; empty string when there is nothing finite to draw.

    ``x_range`` gives several charts of one run the same step axis.
    """
    finite = [(ln, np.isfinite(ln.values)) for ln in lines]
    ys_all = np.concatenate([ln.values[ok] for ln, ok in finite]) if finite else np.array([])
    if ys_all.size == 0:
        return ""
    xs_all = np.concatenate([ln.steps for ln in lines] + [np.array([m.step for m in markers], dtype=float)]).astype(float)
    x0, x1 = (float(xs_all.min()), float(xs_all.max())) if x_range is None else (float(x_range[0]), float(x_range[1]))
    if x1 == x0:
        x1 = x0 + 1
    positive = bool((ys_all > 0).all())
    if log_y is None:
        lo_q, hi_q = np.quantile(ys_all, [0.01, 0.99]) if ys_all.size > 1 else (ys_all[0], ys_all[0])
        log_y = positive and lo_q > 0 and hi_q / lo_q > 50
    ty = np.log10(ys_all[ys_all > 0]) if log_y else ys_all
    y0, y1 = float(ty.min()), float(ty.max())
    if y1 == y0:  # a constant series: centre it with a margin of its own scale
        half = abs(y0) * 0.5 or 0.5
        y0, y1 = y0 - half, y1 + half
    pad = (y1 - y0) * 0.05
    y0, y1 = y0 - pad, y1 + pad
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: np.ndarray | float) -> np.ndarray:
        return LEFT + (np.asarray(x, dtype=float) - x0) / (x1 - x0) * plot_w

    def py(y: np.ndarray | float) -> np.ndarray:
        return TOP + (1 - (np.asarray(y, dtype=float) - y0) / (y1 - y0)) * plot_h

    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" '
        f'aria-label="{html.escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f'<text class="title" x="{LEFT}" y="14">{html.escape(title)}{" (log scale)" if log_y else ""}</text>',
        f'<rect class="frame" x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}"/>',
    ]
    for tick in _nice_ticks(y0, y1):
        y = float(py(tick))
        label = fmt.num(10**tick) if log_y else fmt.num(tick)
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y:.1f}" y2="{y:.1f}"/>')
        parts.append(f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{html.escape(label)}</text>')
    for tick in _nice_ticks(x0, x1):
        x = float(px(tick))
        parts.append(f'<text class="tick" x="{x:.1f}" y="{HEIGHT - 10}" text-anchor="middle">{html.escape(fmt.step(int(tick)))}</text>')
    for line, ok in finite:
        xs, ys = line.steps[ok].astype(float), line.values[ok]
        if log_y:
            keep = ys > 0
            xs, ys = xs[keep], np.log10(ys[keep])
        xs, ys = _reduce(xs, ys, plot_w)
        if xs.size:
            points = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(px(xs), py(ys)))
            parts.append(f'<polyline class="line {html.escape(line.css)}" points="{points}"><title>{html.escape(line.label)}</title></polyline>')
        bad = line.steps[~ok]
        for step in bad[:200]:
            x = float(px(step))
            parts.append(f'<text class="nonfinite" x="{x:.1f}" y="{TOP + 10}" text-anchor="middle">&#215;<title>{html.escape(line.label)}: not finite at step {int(step)}</title></text>')
    for marker in markers:
        x = float(px(marker.step))
        css = html.escape(marker.level.lower())
        parts.append(
            f'<line class="marker {css}" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{TOP + plot_h}">'
            f"<title>{html.escape(marker.label)} at step {marker.step:,}: {html.escape(marker.note)}</title></line>"
        )
    if len(lines) > 1:
        for i, line in enumerate(lines):
            x = LEFT + plot_w - 150
            y = TOP + 14 + 14 * i
            parts.append(f'<line class="line {html.escape(line.css)}" x1="{x}" x2="{x + 18}" y1="{y - 4}" y2="{y - 4}"/>')
            parts.append(f'<text class="legend" x="{x + 24}" y="{y}">{html.escape(line.label)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)
