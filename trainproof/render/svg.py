"""Inline SVG charts for the HTML report (a run's curves, a corpus's histograms): pure functions from numbers to markup.

Every string that reaches the markup is escaped by :func:`_text`. Long
series are reduced to the min and max of each pixel column, so a spike of
one step stays visible on a chart of a million. Labels that can land
anywhere (a limit's name, a cited level, an open bin's bound) are laid out
on estimated boxes (:func:`text_width`): each takes the first of its places
that stays in the plot and covers no other text, or is left to its
element's tooltip.
"""

from __future__ import annotations

import functools
import html
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from trainproof.io import figures
from trainproof.io.safe import visible
from trainproof.report import Bars, Histogram, Line, Marker, Point, wants_log

WIDTH, HEIGHT = 760, 244
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 22, 44
MAX_LOG_TICKS = 8


def _text(value: str) -> str:
    """A string for the markup: control and format characters spelled out as the text report does, then HTML-escaped."""
    return html.escape(visible(value))


FONT_SIZE = {"title": 12.0, "tick": 10.0, "legend": 10.0, "axis-label": 10.0, "marker-label": 9.0, "point-label": 10.0}
"""Pixel sizes of the text classes, as the report's stylesheet sets them."""


_NARROW = frozenset(" .,:;'|!il")


def text_width(text: str, size: float) -> float:
    """A generous estimate of a label's drawn width in pixels at ``size`` px: system-ui glyphs run 0.5-0.6 em, capitals
    and bold ones up to 0.72 em, stops and spaces about 0.3 em."""
    return size * sum(0.32 if ch in _NARROW else 0.72 if ch.isupper() or ch in "mw%@" else 0.62 for ch in text)


@dataclass(frozen=True)
class _Box:
    x0: float
    y0: float
    x1: float
    y1: float

    def overlaps(self, other: _Box) -> bool:
        return self.x0 < other.x1 and other.x0 < self.x1 and self.y0 < other.y1 and other.y0 < self.y1

    def within(self, bounds: _Box) -> bool:
        return bounds.x0 <= self.x0 and self.x1 <= bounds.x1 and bounds.y0 <= self.y0 and self.y1 <= bounds.y1


def _box(text: str, x: float, y: float, anchor: str, size: float) -> _Box:
    """The box a label drawn at (x, y) with ``anchor`` covers: its estimated width, from its ascent to its descent."""
    width = text_width(text, size)
    left = x if anchor == "start" else x - width if anchor == "end" else x - width / 2
    return _Box(left, y - 0.8 * size, left + width, y + 0.25 * size)


class _Layout:
    """The boxes of the text a chart has drawn so far, which a label placed next must not cover."""

    def __init__(self) -> None:
        self.boxes: list[_Box] = []

    def add(self, box: _Box) -> None:
        self.boxes.append(box)

    def place(self, text: str, size: float, places: list[tuple[float, float, str]], bounds: _Box) -> tuple[float, float, str] | None:
        """The first of ``places`` (x, y, anchor) where the label stays in ``bounds`` and covers no box drawn so far,
        taken; None when none is free."""
        for x, y, anchor in places:
            box = _box(text, x, y, anchor, size)
            if box.within(bounds) and not any(box.overlaps(other) for other in self.boxes):
                self.boxes.append(box)
                return x, y, anchor
        return None


def _nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    if not math.isfinite(lo) or not math.isfinite(hi) or hi <= lo:
        return [lo]
    raw = (hi - lo) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(lo / step) * step
    ticks: list[float] = []
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

    @property
    def plot(self) -> _Box:
        return _Box(LEFT, self.top, LEFT + self.width, self.top + self.height)

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


def _head(title: str, frame: _Frame, layout: _Layout) -> list[str]:
    scale = "log" if frame.log_y else "linear"
    layout.add(_box(title + (" (log scale)" if frame.log_y else ""), LEFT, 14, "start", FONT_SIZE["title"]))
    return [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" '
        f'aria-label="{_text(title)}" data-scale="{scale}" xmlns="http://www.w3.org/2000/svg">',
        f'<text class="title" x="{LEFT}" y="14">{_text(title)}{" (log scale)" if frame.log_y else ""}</text>',
        f'<rect class="frame" x="{LEFT}" y="{frame.top}" width="{frame.width}" height="{frame.height}"/>',
    ]


def _y_axis(frame: _Frame, layout: _Layout, counts: bool = False) -> tuple[list[str], float]:
    """A grid line and a value label per tick, and where the widest label begins; on a log axis the ticks are 1-2-5
    values (see ``log_ticks``), labelled by value; ``counts`` keeps whole numbers only."""
    parts, left = [], float(LEFT)
    if frame.log_y:
        lo, hi = 10.0 ** max(frame.y0, -323.0), 10.0 ** min(frame.y1, 308.0)  # the axis's ends as floats can hold them
        ticks = [(math.log10(v), tick_label(v)) for v in log_ticks(lo, hi)]
    else:
        ticks = [(t, figures.num(t)) for t in _nice_ticks(frame.y0, frame.y1) if not counts or float(t).is_integer()]
    for tick, label in ticks:
        y = float(frame.py(tick))
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{LEFT + frame.width}" y1="{y:.1f}" y2="{y:.1f}"/>')
        parts.append(f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_text(label)}</text>')
        box = _box(label, LEFT - 6, y + 4, "end", FONT_SIZE["tick"])
        layout.add(box)
        left = min(left, box.x0)
    return parts, left


TICK_Y = HEIGHT - BOTTOM + 14  # the baseline of the step axis's tick labels


def _x_axis(frame: _Frame, layout: _Layout, label: Callable[[float], str]) -> list[str]:
    """A label per tick under the plot, centred on it; one that would leave the chart at its edge ends there instead."""
    parts = []
    size = FONT_SIZE["tick"]
    for tick in _nice_ticks(frame.x0, frame.x1):
        text, x, anchor = label(tick), float(frame.px(tick)), "middle"
        half = text_width(text, size) / 2
        if x + half > WIDTH - 1:
            x, anchor = WIDTH - 1, "end"
        elif x - half < 1:
            x, anchor = 1, "start"
        parts.append(f'<text class="tick" x="{x:.1f}" y="{TICK_Y}" text-anchor="{anchor}">{_text(text)}</text>')
        layout.add(_box(text, x, TICK_Y, anchor, size))
    return parts


def _axis_labels(frame: _Frame, layout: _Layout, x_label: str, y_label: str, ticks_left: float) -> list[str]:
    """The step axis's name centred under its ticks; the value axis's name upright along the left edge, clear of its
    tick labels (the widest begins at ``ticks_left``), saying so when the axis is log."""
    parts = []
    size = FONT_SIZE["axis-label"]
    if x_label:
        x = LEFT + frame.width / 2
        parts.append(f'<text class="axis-label x" x="{x:.1f}" y="{HEIGHT - 6}" text-anchor="middle">{_text(x_label)}</text>')
        layout.add(_box(x_label, x, HEIGHT - 6, "middle", size))
    if frame.log_y:
        y_label = f"{y_label} (log scale)" if y_label else "log scale"
    if y_label:
        y = frame.top + frame.height / 2
        x = round(min(12.0, ticks_left - 1 - 0.25 * size), 1)  # the baseline, right of which the descent falls
        width = text_width(y_label, size)
        if x >= 0.8 * size or width > LEFT - 7:
            x = max(x, 0.8 * size)
            layout.add(_Box(x - 0.8 * size, y - width / 2, x + 0.25 * size, y + width / 2))  # turned a quarter: ascent to the left
            parts.append(
                f'<text class="axis-label y" x="{x:g}" y="{y:.1f}" text-anchor="middle" transform="rotate(-90 {x:g} {y:.1f})">{_text(y_label)}</text>'
            )
        else:  # tick labels too wide to leave it room (a million clips in a bin): level, over them
            y = frame.top - 7  # above the top tick's label, which may sit at the top of the plot
            layout.add(_box(y_label, LEFT - 6, y, "end", size))
            parts.append(f'<text class="axis-label y" x="{LEFT - 6}" y="{y}" text-anchor="end">{_text(y_label)}</text>')
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


def _marker_labels(markers: list[Marker], frame: _Frame, layout: _Layout) -> tuple[list[str], np.ndarray]:
    """Each marked rule's id once, at its first marker, stacked up from the foot of the plot (at most six); and the
    pixels the labels cover, as (x, y) rows."""
    parts, covered = [], []
    seen: dict[str, Marker] = {}
    for m in markers:
        seen.setdefault(m.label, m)
    size = FONT_SIZE["marker-label"]
    for i, m in enumerate(list(seen.values())[:MAX_MARKER_LABELS]):
        x = float(frame.px(m.step))
        anchor = "end" if x > LEFT + frame.width * 0.75 else "start"
        dx = -3 if anchor == "end" else 3
        y = frame.top + frame.height - 5 - 12 * i
        css = _text(m.level.lower())
        parts.append(f'<text class="marker-label {css}" x="{x + dx:.1f}" y="{y:.1f}" text-anchor="{anchor}">{_text(m.label)}</text>')
        layout.add(_box(m.label, x + dx, y, anchor, size))
        width = 5.5 * len(m.label)
        covered += [(x + dx + (-f if anchor == "end" else f) * width, y - 4) for f in np.linspace(0, 1, 12)]
    return parts, np.array(covered).reshape(-1, 2)


POINT_RADIUS = 3.5


def _points(points: list[Point], frame: _Frame, layout: _Layout) -> tuple[list[str], np.ndarray]:
    """Each level a finding cites as a dot where it lies, named with its value beside it (above or below, right or
    left, whichever first stays in the plot and covers no other text; else in the dot's tooltip only); and the pixels
    the dots and labels cover, as (x, y) rows."""
    placed = []
    for p in points:
        if not math.isfinite(p.value) or (frame.log_y and p.value <= 0):
            continue
        x, y = float(frame.px(p.step)), float(frame.py(math.log10(p.value) if frame.log_y else p.value))
        if LEFT <= x <= LEFT + frame.width and frame.top <= y <= frame.top + frame.height:
            placed.append((p, round(x, 1), round(y, 1)))
    r, size = POINT_RADIUS, FONT_SIZE["point-label"]
    for _, x, y in placed:  # every dot first, so no label covers another's
        layout.add(_Box(x - r, y - r, x + r, y + r))
    parts, covered = [], [(x, y) for _, x, y in placed]
    for p, x, y in placed:
        css, value = _text(p.level.lower()), figures.num(p.value)
        parts.append(
            f'<circle class="point {css}" cx="{x:.1f}" cy="{y:.1f}" r="{r}">'
            f"<title>{_text(p.rule_id)} {_text(p.name)}: {_text(value)} at step {p.step:,}</title></circle>"
        )
        label, d = f"{p.name} {value}", r + 2
        rows = [y - d - 12 * k for k in range(3)] + [y + d + 0.8 * size + 12 * k for k in range(3)]
        spot = layout.place(label, size, [(x + side * d, row, anchor) for row in rows for side, anchor in ((1, "start"), (-1, "end"))], frame.plot)
        if spot is None:
            continue
        lx, ly, anchor = spot
        parts.append(f'<text class="point-label {css}" x="{lx:.1f}" y="{ly:.1f}" text-anchor="{anchor}">{_text(label)}</text>')
        box = layout.boxes[-1]
        covered += [(box.x0 + f * (box.x1 - box.x0), (box.y0 + box.y1) / 2) for f in np.linspace(0, 1, 12)]
    return parts, np.array(covered, dtype=float).reshape(-1, 2)


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
    corners: list[tuple[int, int, float, float]] = []
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
    points: tuple[Point, ...] | list[Point] = (),
) -> str:
    """One chart as an ``<svg>`` element; empty string when there is nothing finite to draw.

    ``x_range`` gives several charts of one run the same step axis; ``log_y``
    None chooses the axis from the data (see :func:`trainproof.report.wants_log`);
    ``x_label`` and ``y_label`` name the axes; ``points`` are the levels the
    findings cite, drawn as labelled dots.
    """
    finite = [(ln, np.isfinite(ln.values)) for ln in lines]
    ys_all = np.concatenate([ln.values[ok] for ln, ok in finite]) if finite else np.array([])
    if ys_all.size == 0:
        return ""
    if log_y is None:
        log_y = wants_log(ys_all)
    frame = _Frame(*_x_span(lines, markers, x_range), *_y_span(ys_all, log_y), log_y=bool(log_y))
    layout = _Layout()
    parts = _head(title, frame, layout)
    ticks, ticks_left = _y_axis(frame, layout)
    parts += ticks + _x_axis(frame, layout, lambda tick: figures.step(int(tick))) + _axis_labels(frame, layout, x_label, y_label, ticks_left)
    pixels = [_pixels(line, ok, frame) for line, ok in finite]
    for (line, ok), drawn in zip(finite, pixels):
        parts += _line(line, ok, drawn, frame)
    parts += [_marker(m, frame) for m in markers]
    labels, covered = _marker_labels(markers, frame, layout)
    dots, dotted = _points(list(points), frame, layout)
    parts += labels + dots
    parts += _legend(lines, frame, pixels, np.concatenate([covered, dotted]))
    parts.append("</svg>")
    return "\n".join(parts)


_LEVELS = (("passed", "pass", "not flagged"), ("warned", "warn", "flagged at WARN"), ("failed", "fail", "flagged at FAIL"))


def _singular(noun: str) -> str:
    return noun[:-1] if noun.endswith("s") else noun


def _span_label(h: Histogram, edges: np.ndarray, i: int) -> str:
    """What bin ``i`` holds, as its bars' tooltips say it."""
    span = f"{figures.num(edges[i])}-{figures.num(edges[i + 1])}"
    if i == 0 and h.open_low:
        span = f"under {figures.num(edges[1])}"
    if i == edges.size - 2 and h.open_high:
        span = f"{figures.num(edges[i])} or more"
    return f"{span} {h.unit}".rstrip()


def histogram(h: Histogram) -> str:
    """A histogram as an ``<svg>`` element: stacked bars per bin (unflagged, WARN, FAIL), the note under the title, each
    limit inside the axis as a dashed line with its label, an open end bin labelled as one, the count axis named;
    empty when it counts nothing. An open bin's label sits on its bar, a limit's beside its line on the first row down
    from the top where it covers no other text and stays in the plot (else its line's tooltip names it)."""
    counts = {name: np.asarray(getattr(h, name), dtype=float) for name, _, _ in _LEVELS}
    totals = functools.reduce(np.add, counts.values())
    edges = np.asarray(h.edges, dtype=float)
    if totals.size == 0 or not totals.any() or edges.size != totals.size + 1 or not np.isfinite(edges).all():
        return ""
    x0, x1 = float(edges[0]), float(edges[-1])
    if x1 <= x0:
        x1 = x0 + 1
    frame = _Frame(x0, x1, 0.0, float(totals.max()) * 1.15, log_y=False, top=TOP + (14 if h.note else 0))
    layout = _Layout()
    parts = _head(f"{h.title} ({h.unit})" if h.unit else h.title, frame, layout)
    ticks, ticks_left = _y_axis(frame, layout, counts=True)
    parts += ticks
    if h.note:
        parts.append(f'<text class="legend" x="{LEFT}" y="{TOP + 6}">{_text(h.note)}</text>')
        layout.add(_box(h.note, LEFT, TOP + 6, "start", FONT_SIZE["legend"]))
    parts += _x_axis(frame, layout, figures.num) + _axis_labels(frame, layout, "", h.y_label, ticks_left)
    size = FONT_SIZE["legend"]
    last = totals.size - 1
    for i in range(totals.size):
        if not totals[i]:
            continue
        left, right = float(frame.px(edges[i])), float(frame.px(edges[i + 1]))
        width = max(right - left - 1.0, 1.0)
        span = _span_label(h, edges, i)
        base = 0.0
        for name, css, meaning in _LEVELS:
            n = counts[name][i]
            if not n:
                continue
            top, bottom = float(frame.py(base + n)), float(frame.py(base))
            parts.append(
                f'<rect class="bar {css}" x="{left + 0.5:.1f}" y="{top:.1f}" width="{width:.1f}" height="{bottom - top:.1f}">'
                f"<title>{_text(span)}: {figures.plural(int(n), _singular(h.y_label), h.y_label)} {meaning}</title></rect>"
            )
            base += n
        if (i == 0 and h.open_low) or (i == last and h.open_high):
            low = i == 0 and h.open_low
            label = f"< {figures.num(edges[1])}" if low else f"\u2265 {figures.num(edges[i])}"
            anchor, x = ("start", left) if low else ("end", right)
            rows = np.arange(float(frame.py(base)) - 4, frame.top + 0.8 * size, -12.0)
            spot = layout.place(label, size, [(x, float(y), anchor) for y in rows], frame.plot)
            if spot is not None:
                markup = _text(label).replace("\u2265", "&#8805;")
                parts.append(f'<text class="legend bin-label" x="{x:.1f}" y="{spot[1]:.1f}" text-anchor="{anchor}">{markup}</text>')
    limits = [(float(frame.px(value)), label) for value, label in h.limits if math.isfinite(value) and x0 <= value <= x1]
    for x, label in limits:
        parts.append(f'<line class="limit" x1="{x:.1f}" x2="{x:.1f}" y1="{frame.top}" y2="{frame.top + frame.height}"><title>{_text(label)}</title></line>')
    for x, label in limits:
        rows = np.arange(frame.top + 11, frame.top + frame.height, 12.0)
        spot = layout.place(label, size, [(x + side * 3, float(y), anchor) for y in rows for side, anchor in ((1, "start"), (-1, "end"))], frame.plot)
        if spot is not None:
            lx, ly, anchor = spot
            parts.append(f'<text class="legend limit-label" x="{lx:.1f}" y="{ly:.1f}" text-anchor="{anchor}">{_text(label)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


BAR_ROW = 18
BAR_LABEL_WIDTH = 190


def bars(b: Bars) -> str:
    """Counts by name as an ``<svg>`` element: a horizontal bar per name in its finding's colour, the name on the left,
    the count at the bar's end, the note under the title; empty when it counts nothing."""
    if not b.counts or not any(b.counts):
        return ""
    top = TOP + (14 if b.note else 0) + 4
    height = top + BAR_ROW * len(b.counts) + 22
    plot = WIDTH - RIGHT - BAR_LABEL_WIDTH - 60
    most = max(b.counts)
    css = b.level.lower()
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" '
        f'aria-label="{_text(b.title)}" xmlns="http://www.w3.org/2000/svg">',
        f'<text class="title" x="{LEFT}" y="14">{_text(b.title)}</text>',
    ]
    if b.note:
        parts.append(f'<text class="legend" x="{LEFT}" y="{TOP + 6}">{_text(b.note)}</text>')
    x0 = float(BAR_LABEL_WIDTH)
    for row, (label, count) in enumerate(zip(b.labels, b.counts)):
        y = top + row * BAR_ROW
        width = max(plot * count / most, 1.0)
        parts.append(f'<text class="tick" x="{x0 - 6:.1f}" y="{y + 12}" text-anchor="end">{_text(label)}</text>')
        parts.append(f'<rect class="bar {css}" x="{x0:.1f}" y="{y + 2}" width="{width:.1f}" height="{BAR_ROW - 5}"><title>{_text(label)}: {count:,}</title></rect>')
        parts.append(f'<text class="tick" x="{x0 + width + 4:.1f}" y="{y + 12}">{count:,}</text>')
    parts.append(f'<text class="axis-label" x="{x0:.1f}" y="{height - 6}">{_text(b.x_label)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


WAVE_WIDTH, WAVE_HEIGHT = 320, 64


def waveform(low: np.ndarray, high: np.ndarray, seconds: float) -> str:
    """An excerpt's waveform as an ``<svg>`` element: a vertical stroke per column from its minimum to its maximum, the
    full-scale lines dashed (a clipped clip's strokes touch them), its length in seconds at the end."""
    if low.size == 0 or low.size != high.size:
        return ""
    mid, half = WAVE_HEIGHT / 2, WAVE_HEIGHT / 2 - 3
    step = WAVE_WIDTH / low.size
    strokes = " ".join(
        f"M{(i + 0.5) * step:.1f} {mid - half * float(h):.1f}V{max(mid - half * float(lo), mid - half * float(h) + 0.6):.1f}"
        for i, (lo, h) in enumerate(zip(np.clip(low, -1, 1), np.clip(high, -1, 1)))
    )
    return (
        f'<svg class="wave" viewBox="0 0 {WAVE_WIDTH + 44} {WAVE_HEIGHT}" width="{WAVE_WIDTH + 44}" height="{WAVE_HEIGHT}" role="img" '
        f'aria-label="waveform of {figures.num(seconds)} s" xmlns="http://www.w3.org/2000/svg">'
        f'<line class="full" x1="0" x2="{WAVE_WIDTH}" y1="{mid - half:.1f}" y2="{mid - half:.1f}"/>'
        f'<line class="full" x1="0" x2="{WAVE_WIDTH}" y1="{mid + half:.1f}" y2="{mid + half:.1f}"/>'
        f'<path class="wave-line" d="{strokes}"/>'
        f'<text class="tick" x="{WAVE_WIDTH + 4}" y="{mid + 3:.1f}">{figures.num(seconds)} s</text></svg>'
    )
