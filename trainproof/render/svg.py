"""Inline SVG charts for the HTML report (a run's curves, a corpus's histograms): pure functions from numbers to markup.

Every string that reaches the markup is escaped by :func:`_text`. Long
series are reduced to the min and max of each pixel column, so a spike of
one step stays visible on a chart of a million.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import numpy as np

from trainproof import figures
from trainproof.report import Histogram, Line, Marker, wants_log
from trainproof.safe import visible

WIDTH, HEIGHT = 760, 244
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 22, 44
MAX_LOG_TICKS = 8


def _text(value: str) -> str:
    """A string for the markup: control and format characters spelled out as the text report does, then HTML-escaped."""
    return html.escape(visible(value))


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


def log_ticks(lo: float, hi: float, max_ticks: int = MAX_LOG_TICKS) -> list[float]:
    """Ticks of a log axis from ``lo`` to ``hi`` (values, not exponents), low to high: 1-2-5 values (0.1, 0.2, 0.5, 1, 2,
    5, ...); thinned to powers of ten, then to every second, third... power when more than ``max_ticks`` would fit; on a
    range too narrow for two of them, round linear ticks within it. Each value is exact as its label prints it."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo <= 0 or hi <= lo:
        return [lo] if math.isfinite(lo) and lo > 0 else []
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))

    def within(mantissas: tuple[int, ...], every: int = 1) -> list[float]:
        values = (float(f"{m}e{k}") for k in range(first, last + 1) if k % every == 0 for m in mantissas)
        return [v for v in values if lo * (1 - 1e-12) <= v <= hi * (1 + 1e-12)]

    ticks = within((1, 2, 5))
    if len(ticks) < 2:
        return [float(f"{t:.12g}") for t in _nice_ticks(lo, hi) if t > 0]
    if len(ticks) <= max_ticks:
        return ticks
    every = 1
    while len(ticks := within((1,), every)) > max_ticks:
        every += 1
    return ticks


def tick_label(value: float) -> str:
    """A log-axis tick as people write it: ``0.2``, ``5``, ``1e-05``, ``1e+06``; no float noise."""
    return f"{value:.6g}"


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


@dataclass(frozen=True)
class _Frame:
    """The plot area of one chart and the data range it maps: where a step or a value is drawn."""

    x0: float
    x1: float
    y0: float
    y1: float
    log_y: bool
    top: int = TOP  # where the plot area starts (lower when a subtitle sits under the title)

    @property
    def width(self) -> int:
        return WIDTH - LEFT - RIGHT

    @property
    def height(self) -> int:
        return HEIGHT - self.top - BOTTOM

    def px(self, x: np.ndarray | float) -> np.ndarray:
        return LEFT + (np.asarray(x, dtype=float) - self.x0) / (self.x1 - self.x0) * self.width

    def py(self, y: np.ndarray | float) -> np.ndarray:
        return self.top + (1 - (np.asarray(y, dtype=float) - self.y0) / (self.y1 - self.y0)) * self.height


def _x_span(lines: list[Line], markers: list[Marker], x_range: tuple[float, float] | None) -> tuple[float, float]:
    """The step axis: ``x_range`` when given, else every step of the lines and markers; never empty."""
    if x_range is None:
        xs_all = np.concatenate([ln.steps for ln in lines] + [np.array([m.step for m in markers], dtype=float)]).astype(float)
        x0, x1 = float(xs_all.min()), float(xs_all.max())
    else:
        x0, x1 = float(x_range[0]), float(x_range[1])
    if x1 == x0:
        x1 = x0 + 1
    return x0, x1


def _y_span(ys: np.ndarray, log_y: bool) -> tuple[float, float]:
    """The value axis (log10 units on a log axis) with a 5% margin; a constant series gets one of its own scale."""
    ty = np.log10(ys[ys > 0]) if log_y else ys
    y0, y1 = float(ty.min()), float(ty.max())
    if y1 == y0:  # a constant series: centre it with a margin of its own scale
        half = abs(y0) * 0.5 or 0.5
        y0, y1 = y0 - half, y1 + half
    pad = (y1 - y0) * 0.05
    return y0 - pad, y1 + pad


def _head(title: str, frame: _Frame) -> list[str]:
    scale = "log" if frame.log_y else "linear"
    return [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" '
        f'aria-label="{_text(title)}" data-scale="{scale}" xmlns="http://www.w3.org/2000/svg">',
        f'<text class="title" x="{LEFT}" y="14">{_text(title)}{" (log scale)" if frame.log_y else ""}</text>',
        f'<rect class="frame" x="{LEFT}" y="{frame.top}" width="{frame.width}" height="{frame.height}"/>',
    ]


def _y_axis(frame: _Frame, counts: bool = False) -> list[str]:
    """A grid line and a value label per tick; on a log axis the ticks are 1-2-5 values (see ``log_ticks``), labelled
    by value; ``counts`` keeps whole numbers only."""
    parts = []
    if frame.log_y:
        lo, hi = 10.0 ** max(frame.y0, -323.0), 10.0 ** min(frame.y1, 308.0)  # the axis's ends as floats can hold them
        ticks = [(math.log10(v), tick_label(v)) for v in log_ticks(lo, hi)]
    else:
        ticks = [(t, figures.num(t)) for t in _nice_ticks(frame.y0, frame.y1) if not counts or float(t).is_integer()]
    for tick, label in ticks:
        y = float(frame.py(tick))
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{LEFT + frame.width}" y1="{y:.1f}" y2="{y:.1f}"/>')
        parts.append(f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_text(label)}</text>')
    return parts


TICK_Y = HEIGHT - BOTTOM + 14  # the baseline of the step axis's tick labels


def _x_axis(frame: _Frame) -> list[str]:
    """A step label per tick under the plot."""
    parts = []
    for tick in _nice_ticks(frame.x0, frame.x1):
        x = float(frame.px(tick))
        parts.append(f'<text class="tick" x="{x:.1f}" y="{TICK_Y}" text-anchor="middle">{_text(figures.step(int(tick)))}</text>')
    return parts


def _axis_labels(frame: _Frame, x_label: str, y_label: str) -> list[str]:
    """The step axis's name centred under its ticks; the value axis's name upright along the left edge."""
    parts = []
    if x_label:
        parts.append(f'<text class="axis-label x" x="{LEFT + frame.width / 2:.1f}" y="{HEIGHT - 6}" text-anchor="middle">{_text(x_label)}</text>')
    if y_label:
        y = frame.top + frame.height / 2
        parts.append(
            f'<text class="axis-label y" x="12" y="{y:.1f}" text-anchor="middle" transform="rotate(-90 12 {y:.1f})">{_text(y_label)}</text>'
        )
    return parts


def _pixels(line: Line, ok: np.ndarray, frame: _Frame) -> tuple[np.ndarray, np.ndarray]:
    """Where a series' finite points are drawn (those a log axis can place, at most two per pixel column)."""
    xs, ys = line.steps[ok].astype(float), line.values[ok]
    if frame.log_y:
        keep = ys > 0
        xs, ys = xs[keep], np.log10(ys[keep])
    xs, ys = _reduce(xs, ys, frame.width)
    return frame.px(xs), frame.py(ys)


def _line(line: Line, ok: np.ndarray, pixels: tuple[np.ndarray, np.ndarray], frame: _Frame) -> list[str]:
    """One series: a polyline through its finite points (``pixels``, see :func:`_pixels`), a cross at each of its first
    200 non-finite steps."""
    parts = []
    xs, ys = pixels
    if xs.size:
        points = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(xs, ys))
        parts.append(
            f'<polyline class="line {_text(line.css)}" data-points="{xs.size}" points="{points}">'
            f"<title>{_text(line.label)}</title></polyline>"
        )
    for step in line.steps[~ok][:200]:
        x = float(frame.px(step))
        parts.append(
            f'<text class="nonfinite" x="{x:.1f}" y="{TOP + 10}" text-anchor="middle">&#215;'
            f"<title>{_text(line.label)}: not finite at step {int(step)}</title></text>"
        )
    return parts


def _marker(marker: Marker, frame: _Frame) -> str:
    """A vertical line at the marker's step, its level as CSS class, its label and note as tooltip."""
    x = float(frame.px(marker.step))
    css = _text(marker.level.lower())
    return (
        f'<line class="marker {css}" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{TOP + frame.height}">'
        f"<title>{_text(marker.label)} at step {marker.step:,}: {_text(marker.note)}</title></line>"
    )


MAX_MARKER_LABELS = 6


def _marker_labels(markers: list[Marker], frame: _Frame) -> tuple[list[str], np.ndarray]:
    """Each marked rule's id once, at its first marker, stacked up from the foot of the plot (at most six); and the
    pixels the labels cover, as (x, y) rows."""
    parts, covered = [], []
    seen: dict[str, Marker] = {}
    for m in markers:
        seen.setdefault(m.label, m)
    for i, m in enumerate(list(seen.values())[:MAX_MARKER_LABELS]):
        x = float(frame.px(m.step))
        anchor = "end" if x > LEFT + frame.width * 0.75 else "start"
        dx = -3 if anchor == "end" else 3
        y = frame.top + frame.height - 5 - 12 * i
        css = _text(m.level.lower())
        parts.append(f'<text class="marker-label {css}" x="{x + dx:.1f}" y="{y:.1f}" text-anchor="{anchor}">{_text(m.label)}</text>')
        width = 5.5 * len(m.label)
        covered += [(x + dx + (-f if anchor == "end" else f) * width, y - 4) for f in np.linspace(0, 1, 12)]
    return parts, np.array(covered).reshape(-1, 2)


def _occupied(pixels: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Pixels the curves (each drawn through ``pixels``, see :func:`_pixels`) pass through: each segment sampled eight
    times, as (x, y) rows."""
    found = []
    for xs, ys in pixels:
        if xs.size > 1:
            t = np.linspace(0, 1, 8, endpoint=False)[:, None]
            found.append(np.column_stack([(xs[:-1] + t * np.diff(xs)).ravel(), (ys[:-1] + t * np.diff(ys)).ravel()]))
        elif xs.size:
            found.append(np.column_stack([xs, ys]))
    return np.concatenate(found) if found else np.empty((0, 2))


def _legend(lines: list[Line], frame: _Frame, pixels: list[tuple[np.ndarray, np.ndarray]], covered: np.ndarray) -> list[str]:
    """A swatch (in the line's own stroke and dash) and a label per line on a pale box, in the plot's corner the curves
    cross least (of nine places: the corners, the middles of the edges, the centre; on a tie the first of top right,
    top left, top centre, bottom right...); none for a single line."""
    if len(lines) <= 1:
        return []
    occupied = np.concatenate([_occupied(pixels), covered])
    width, height = 36 + 5.6 * max(len(line.label) for line in lines), 14 * len(lines) + 6
    corners = []
    for top in (frame.top + 4, frame.top + frame.height - height - 4, frame.top + (frame.height - height) / 2):
        for left in (LEFT + frame.width - width - 12, LEFT + 10, LEFT + (frame.width - width) / 2):
            inside = (occupied[:, 0] >= left - 4) & (occupied[:, 0] <= left + width + 10) & (occupied[:, 1] >= top - 4) & (occupied[:, 1] <= top + height + 4)
            corners.append((int(inside.sum()), len(corners), left + 6, top))
    _, _, x, box_top = min(corners)
    parts = [f'<rect class="legend-box" x="{x - 6:.1f}" y="{box_top:.1f}" width="{width + 6:.1f}" height="{height}"/>']
    for i, line in enumerate(lines):
        y = round(box_top + 12 + 14 * i, 1)
        parts.append(f'<line class="line {_text(line.css)}" x1="{x:.1f}" x2="{x + 24:.1f}" y1="{y - 4:.1f}" y2="{y - 4:.1f}"/>')
        parts.append(f'<text class="legend" x="{x + 30:.1f}" y="{y}">{_text(line.label)}</text>')
    return parts


def chart(
    title: str,
    lines: list[Line],
    markers: list[Marker],
    *,
    log_y: bool | None = None,
    x_range: tuple[float, float] | None = None,
    x_label: str = "",
    y_label: str = "",
) -> str:
    """One chart as an ``<svg>`` element; empty string when there is nothing finite to draw.

    ``x_range`` gives several charts of one run the same step axis; ``log_y``
    None chooses the axis from the data (see :func:`trainproof.report.wants_log`);
    ``x_label`` and ``y_label`` name the axes.
    """
    finite = [(ln, np.isfinite(ln.values)) for ln in lines]
    ys_all = np.concatenate([ln.values[ok] for ln, ok in finite]) if finite else np.array([])
    if ys_all.size == 0:
        return ""
    if log_y is None:
        log_y = wants_log(ys_all)
    frame = _Frame(*_x_span(lines, markers, x_range), *_y_span(ys_all, log_y), log_y=bool(log_y))
    parts = _head(title, frame) + _y_axis(frame) + _x_axis(frame) + _axis_labels(frame, x_label, y_label)
    pixels = [_pixels(line, ok, frame) for line, ok in finite]
    for (line, ok), drawn in zip(finite, pixels):
        parts += _line(line, ok, drawn, frame)
    parts += [_marker(m, frame) for m in markers]
    labels, covered = _marker_labels(markers, frame)
    parts += labels
    parts += _legend(lines, frame, pixels, covered)
    parts.append("</svg>")
    return "\n".join(parts)


_LEVELS = (("passed", "pass", "not flagged"), ("warned", "warn", "flagged at WARN"), ("failed", "fail", "flagged at FAIL"))


def histogram(h: Histogram) -> str:
    """A histogram as an ``<svg>`` element: stacked bars per bin (unflagged, WARN, FAIL), the note under the title, each
    limit inside the axis as a dashed line with its label, an open end bin labelled as one; empty when it counts nothing."""
    counts = {name: np.asarray(getattr(h, name), dtype=float) for name, _, _ in _LEVELS}
    totals = sum(counts.values())
    edges = np.asarray(h.edges, dtype=float)
    if totals.size == 0 or not totals.any() or edges.size != totals.size + 1 or not np.isfinite(edges).all():
        return ""
    x0, x1 = float(edges[0]), float(edges[-1])
    if x1 <= x0:
        x1 = x0 + 1
    frame = _Frame(x0, x1, 0.0, float(totals.max()) * 1.15, log_y=False, top=TOP + (14 if h.note else 0))
    parts = _head(f"{h.title} ({h.unit})" if h.unit else h.title, frame) + _y_axis(frame, counts=True)
    if h.note:
        parts.append(f'<text class="legend" x="{LEFT}" y="{TOP + 6}">{_text(h.note)}</text>')
    for tick in _nice_ticks(frame.x0, frame.x1):
        x = float(frame.px(tick))
        parts.append(f'<text class="tick" x="{x:.1f}" y="{TICK_Y}" text-anchor="middle">{_text(figures.num(tick))}</text>')
    last = totals.size - 1
    for i in range(totals.size):
        if not totals[i]:
            continue
        left, right = float(frame.px(edges[i])), float(frame.px(edges[i + 1]))
        width = max(right - left - 1.0, 1.0)
        span = f"{figures.num(edges[i])}-{figures.num(edges[i + 1])}"
        if i == 0 and h.open_low:
            span = f"under {figures.num(edges[1])}"
        if i == last and h.open_high:
            span = f"{figures.num(edges[i])} or more"
        span = f"{span} {h.unit}".rstrip()
        base = 0.0
        for name, css, meaning in _LEVELS:
            n = counts[name][i]
            if not n:
                continue
            top, bottom = float(frame.py(base + n)), float(frame.py(base))
            parts.append(
                f'<rect class="bar {css}" x="{left + 0.5:.1f}" y="{top:.1f}" width="{width:.1f}" height="{bottom - top:.1f}">'
                f"<title>{_text(span)}: {int(n):,} clip{'s' if n != 1 else ''} {meaning}</title></rect>"
            )
            base += n
        if (i == 0 and h.open_low) or (i == last and h.open_high):
            label = f"&lt; {_text(figures.num(edges[1]))}" if i == 0 and h.open_low else f"&#8805; {_text(figures.num(edges[i]))}"
            anchor = "start" if i == 0 else "end"
            parts.append(f'<text class="legend" x="{left if i == 0 else right:.1f}" y="{float(frame.py(base)) - 4:.1f}" text-anchor="{anchor}">{label}</text>')
    for value, label in h.limits:
        if not (math.isfinite(value) and x0 <= value <= x1):
            continue
        x = float(frame.px(value))
        parts.append(f'<line class="limit" x1="{x:.1f}" x2="{x:.1f}" y1="{frame.top}" y2="{frame.top + frame.height}"><title>{_text(label)}</title></line>')
        parts.append(f'<text class="legend" x="{x + 3:.1f}" y="{frame.top + 11}">{_text(label)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)
