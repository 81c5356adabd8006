"""Charts as Mermaid ``xychart-beta`` blocks, which GitHub draws in a pull-request comment and a job summary.

What is charted is the subject's (its command decided, as for the HTML report); this module only writes it down in
Mermaid's terms, with what Mermaid's xychart cannot do worked around in the open:

* A line of an xychart has one value per point of a shared, evenly spaced axis: no gaps, no x of its own. Each line
  is resampled onto MAX_POINTS steps spanning what every line of the chart covers (the mean of its finite values
  around each step, a step with none interpolated from its neighbours), so a run and a baseline of different lengths
  are drawn over the steps both logged, and the title says which steps those are when they are not the run's own.
* Mermaid's default palette draws a first line almost white: each block sets its own colours (an init directive),
  the run blue and the baseline grey as in the HTML report.
* There is no log axis: a chart whose values span more than a decade (:func:`trainproof.report.wants_log`, the HTML
  report's rule) plots their log10, and its value axis says so.
* Eval losses, logged at a few steps of their own, are their own chart rather than lines on the training loss's.
* A histogram's bins are categories; its flagged clips are bars drawn over the total (total, then WARN and FAIL
  together, then FAIL), which reads as stacked bars.

Every string from the user's files (a path, a metric's or an eval set's name) is spelled so that Mermaid reads it
as text and nothing else: its double quote (which Mermaid 12 rejects even backslashed inside a title), ``#``,
``%`` (a ``%%{init}%%`` directive), ``<``, ``>``, backtick, brackets, braces, semicolons, backslashes and ``@`` as Mermaid's
``#code;`` entities, control and format characters spelled out as every report spells them, all on one line. A title
(the chart and the findings marked on it; the markdown names the input above its charts) is cut at TITLE_CHARS, a
line's name at LABEL_CHARS. A block sits in a fenced code block, which GitHub neither links nor mentions in.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from trainproof.io import figures
from trainproof.io.safe import visible
from trainproof.report import Chart, Histogram, Line, Subject, wants_log

LINE_COLOURS = ("#0969da", "#8c959f", "#1a7f37", "#bf8700", "#cf222e", "#6e7781", "#1b7c83", "#a475f9")
"""A line chart's colours in line order: the run (or training loss) blue, the baseline grey, then the eval colours
the HTML report uses; Mermaid's default palette draws the first line almost white."""
EVAL_COLOURS = LINE_COLOURS[2:]
BAR_COLOURS = ("#8c959f", "#bf8700", "#cf222e")
"""A histogram's bars: every item grey, those flagged amber over it, those at FAIL red over that."""

MAX_POINTS = 48
"""Points per line: what Mermaid draws legibly in a comment's width."""

TITLE_CHARS = 64
"""A chart's title is cut at this, spelled: Mermaid centres it on the chart and clips what is wider."""
LABEL_CHARS = 18
"""A line's name is cut at this, spelled: Mermaid 12 drops a chart's whole legend when a name is wider than its room
(20 W's were, 18 were not)."""

_ENTITIES = {"#": "#35;", '"': "#quot;", "%": "#37;", "<": "#lt;", ">": "#gt;", "`": "#96;", "{": "#123;", "}": "#125;", ";": "#59;", "\\": "#92;", "@": "#64;", "[": "#91;", "]": "#93;"}


def quoted(text: str, limit: int = TITLE_CHARS) -> str:
    """``text`` as one double-quoted Mermaid string, inert, on one line, at most ``limit`` characters as spelled (Mermaid
    lays a legend out by the spelled length, entity codes and all), cut with an ellipsis."""
    spelled = [_ENTITIES.get(ch, ch) for ch in " ".join(visible(text).split())]
    if sum(map(len, spelled)) > limit:
        size = 1  # the ellipsis
        for i, part in enumerate(spelled):
            if size + len(part) > limit:
                spelled = spelled[:i] + ["…"]
                break
            size += len(part)
    return '"' + "".join(spelled) + '"'


def _head(title: str, colours: Sequence[str]) -> list[str]:
    """A block's first lines: the fence, the colours (an init directive, which GitHub's Mermaid honours), the title."""
    theme = '%%{init: {"themeVariables": {"xyChart": {"plotColorPalette": "' + ", ".join(colours) + '"}}}}%%'
    return ["```mermaid", theme, "xychart-beta", f"    title {quoted(title)}"]


def _number(value: float) -> str:
    return f"{value:.4g}"


def _span(lines: Sequence[Line]) -> tuple[float, float] | None:
    """The steps every line covers (the overlap of their first-to-last finite steps); None when they share none."""
    lo, hi = -np.inf, np.inf
    for line in lines:
        steps = np.asarray(line.steps, dtype=float)[np.isfinite(np.asarray(line.values, dtype=float))]
        if steps.size == 0:
            return None
        lo, hi = max(lo, float(steps.min())), min(hi, float(steps.max()))
    return (lo, hi) if lo < hi else None


def resample(steps: np.ndarray, values: np.ndarray, lo: float, hi: float, points: int) -> np.ndarray:
    """``values`` at ``points`` evenly spaced steps from ``lo`` to ``hi``: each the mean of the finite values nearest to
    it (within half a spacing), a step with none interpolated from the others."""
    steps, values = np.asarray(steps, dtype=float), np.asarray(values, dtype=float)
    keep = np.isfinite(values) & (steps >= lo) & (steps <= hi)
    steps, values = steps[keep], values[keep]
    grid = np.linspace(lo, hi, points)
    spacing = (hi - lo) / (points - 1)
    nearest = np.clip(np.rint((steps - lo) / spacing).astype(np.int64), 0, points - 1)
    sums = np.bincount(nearest, weights=values, minlength=points)
    counts = np.bincount(nearest, minlength=points)
    filled = counts > 0
    means = np.divide(sums, counts, out=np.zeros(points), where=filled)
    return np.interp(grid, grid[filled], means[filled])


def line_chart(title: str, chart: Chart, lines: Sequence[Line], marked: str = "", colours: Sequence[str] = LINE_COLOURS) -> str | None:
    """One xychart of ``lines`` (a subset of ``chart``'s) over the steps they all cover, its title ``title``, then those
    steps when they are not the run's, then ``marked`` (the findings marked on it); None when nothing can be drawn."""
    span = _span(lines)
    if span is None:
        return None
    lo, hi = span
    steps = np.sort(np.concatenate([np.asarray(line.steps, dtype=float) for line in lines]))
    steps = steps[(steps >= lo) & (steps <= hi)]
    distinct = 1 + int(np.count_nonzero(np.diff(steps)))  # not np.unique, which imports numpy.ma (see test_imports)
    points = min(MAX_POINTS, max(2, distinct))
    series = [resample(line.steps, line.values, lo, hi, points) for line in lines]
    log = wants_log(*series)
    if log:
        series = [np.log10(s) for s in series]
    own = chart.x_range
    if own is not None and (lo > own[0] or hi < own[1]):
        title += f" (steps {figures.step(int(lo))}-{figures.step(int(hi))})"
    if marked:
        title += f": {marked}"
    y_label = f"log10 {chart.y_label}" if log else chart.y_label
    out = _head(title, colours)
    out.append(f"    x-axis {quoted(chart.x_label, 40)} {int(lo)} --> {int(hi)}")
    out.append(f"    y-axis {quoted(y_label, 60)}")
    for line, values in zip(lines, series):
        out.append(f"    line {quoted(_label(line), LABEL_CHARS)} [{', '.join(_number(v) for v in values)}]")
    out.append("```")
    return "\n".join(out)


def _label(line: Line) -> str:
    """A line's name in the legend, short: the training loss by the log's own name for it."""
    if line.css == "train" and line.label.startswith("training loss (") and line.label.endswith(")"):
        return line.label[len("training loss (") : -1]
    return line.label


MAX_NAMED = 1
"""Findings a chart's title names at most (the worst first), the rest counted."""


def _marked(chart: Chart) -> str:
    """The findings marked on a chart, for its title: ``FAIL TP-DIVERGE at steps 1, 300``."""
    seen: dict[tuple[str, str], list[int]] = {}
    for marker in chart.markers:
        seen.setdefault((marker.level, marker.label), []).append(marker.step)
    order = {"FAIL": 0, "WARN": 1, "INFO": 2}
    ranked = sorted(seen.items(), key=lambda item: order.get(item[0][0], 3))
    parts = [
        f"{level} {label} at step{'s' if len(steps) > 1 else ''} {', '.join(figures.step(s) for s in steps[:2])}{', ...' if len(steps) > 2 else ''}"
        for (level, label), steps in ranked[:MAX_NAMED]
    ]
    if len(ranked) > MAX_NAMED:
        parts.append(f"{len(ranked) - MAX_NAMED} more")
    return " · ".join(parts)


def bar_chart(histogram: Histogram) -> str | None:
    """A histogram as an xychart of bars over its bins; None when it counts nothing."""
    total = histogram.passed + histogram.warned + histogram.failed
    if not total.size or not total.sum():
        return None
    edges = histogram.edges
    labels = []
    for i in range(len(total)):  # each bin by its lower edge, short, so that 40 of them do not run into each other
        label = _edge(float(edges[i]))
        if i == 0 and histogram.open_low:
            label = f"<{_edge(float(edges[1]))}"
        if i == len(total) - 1 and histogram.open_high:
            label = f">={label}"
        labels.append(quoted(label, 12))
    out = _head(_histogram_title(histogram), BAR_COLOURS)
    out.append(f"    x-axis {quoted(f'{histogram.unit}, each bin from its lower edge' if histogram.unit else 'each bin from its lower edge', 60)} [{', '.join(labels)}]")
    out.append(f"    y-axis {quoted(histogram.y_label, 40)}")
    out.append(f"    bar [{', '.join(str(int(n)) for n in total)}]")
    if histogram.warned.any() or histogram.failed.any():
        out.append(f"    bar [{', '.join(str(int(n)) for n in histogram.warned + histogram.failed)}]")
    if histogram.failed.any():
        out.append(f"    bar [{', '.join(str(int(n)) for n in histogram.failed)}]")
    out.append("```")
    return "\n".join(out)


def _edge(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def _histogram_title(histogram: Histogram) -> str:
    flagged = int(histogram.warned.sum() + histogram.failed.sum())
    if not flagged:
        return histogram.title
    noun = histogram.y_label[:-1] if histogram.y_label.endswith("s") else histogram.y_label
    return f"{histogram.title} ({figures.plural(flagged, f'flagged {noun}')} in the inner bars)"


def subject_charts(subject: Subject, command: str) -> Iterator[str]:
    """The Mermaid blocks of one subject: the loss (and eval loss) of a run, the run against its baseline, the
    histograms of a dataset."""
    for chart in subject.charts:
        if isinstance(chart, Histogram):
            block = bar_chart(chart)
        elif isinstance(chart, Chart) and chart.title in ("Loss", "Eval loss", "Loss: run against baseline", "Eval loss: run against baseline"):
            block = _loss_blocks(chart.title.removesuffix(": run against baseline"), chart, command)  # the legend says whose
        else:
            continue
        if block:
            yield block


def _loss_blocks(title: str, chart: Chart, command: str) -> str | None:
    """A loss chart's training loss (and the baseline's, in compare); its eval lines, logged at steps of their own, as
    a chart apart in epoch."""
    marked = _marked(chart)
    if command == "compare":
        return line_chart(title, chart, chart.lines, marked)
    if chart.title.startswith("Eval"):
        return line_chart(title, chart, chart.lines, marked, EVAL_COLOURS)
    train = [line for line in chart.lines if line.css == "train"] or list(chart.lines[:1])
    blocks = [line_chart(title, chart, train, marked)]
    evals = [line for line in chart.lines if line not in train]
    if evals:  # the findings stay named on the training loss's chart, which they were marked on with these lines
        blocks.append(line_chart("Eval loss", chart, evals, colours=EVAL_COLOURS))
    return "\n\n".join(b for b in blocks if b) or None
