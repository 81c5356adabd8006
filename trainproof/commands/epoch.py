"""``trainproof epoch``: each training log on its own, by the single-run rules; a folder of runs, each of them.

Epoch (and compare and watch, built on it) is a :class:`trainproof.judge.Command`: how a log is read, which rules
run in which context, and what a run shows in a report (its summary pairs,
one headline, the reader's notes, the charts with each finding marked on the
chart its rule names, compare's table of ratios). Renderers draw these and
decide nothing about a run.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeGuard

import numpy as np

from trainproof.checks.base import NotApplicable, Rule, RunContext
from trainproof.checks.registry import RULES
from trainproof.checks.stats import median
from trainproof.checks.thresholds import Thresholds
from trainproof.config import Settings
from trainproof.io import figures, memo
from trainproof.io.errors import InputError
from trainproof.judge import Command, Input, Inputs, Outcome, Prepared, Stage, nothing_ran
from trainproof.report import Chart, Finding, Folder, Line, Marker, Point, Subject
from trainproof.runs.model import Run, Series
from trainproof.runs.readers import READERS, find_log, read_run, run_dir_format
from trainproof.runs.readers.discover import Search, find_runs
from trainproof.runs.readers.names import DEFAULT_NAMES

MAX_MARKERS = 50
"""Steps of one finding marked on its chart; a finding citing more marks the first ones."""


def summarize(run: Run) -> dict:
    """The run's summary pairs, as the JSON report carries them."""
    loss = run.loss
    return {
        "loss": run.loss_name if loss is not None else None,
        "points": len(loss) if loss is not None else 0,
        "first_step": run.first_step,
        "last_step": run.last_step,
        "max_steps": run.max_steps,
        "step_unit": run.step_unit,
        "eval_sets": ", ".join(run.eval_losses) or None,
        "eval_metrics": ", ".join(f"{name} ({_GOALS[goal]})" for name, goal in run.metric_goals.items()) or None,
        "notes": "; ".join(run.notes) or None,
    }


_GOALS = {"min": "lower is better", "max": "higher is better"}


def headline(run: Run) -> str:
    """One line about the log: its format, the loss over which steps, the eval sets."""
    parts = [f"{run.format} log"]
    loss = run.loss
    if loss is not None and len(loss):
        span = f"{run.step_unit}s {figures.step(run.first_step)}-{figures.step(run.last_step)}"  # type: ignore[arg-type]
        if run.max_steps:
            span += f" of {figures.step(run.max_steps)} scheduled"
        parts.append(f"'{run.loss_name}' over {len(loss)} point{'s' if len(loss) != 1 else ''}, {span}")
    if run.eval_losses:
        parts.append(f"eval: {', '.join(run.eval_losses)}")
    if run.eval_metrics:
        parts.append(f"eval metrics: {', '.join(run.eval_metrics)}")
    return "; ".join(parts)


def _marked(findings: Sequence[Finding], rules: Mapping[str, Rule], charts: Sequence[str], metric: str | None) -> Iterator[Finding]:
    """The findings whose rule draws on one of ``charts``; a finding about an eval metric (it names one in its values)
    only on that metric's chart (``metric``), the others only on the rest."""
    for finding in findings:
        rule = rules.get(finding.rule_id)
        if rule is not None and rule.chart in charts and finding.values.get("eval_metric") == metric:
            yield finding


def _markers(findings: Sequence[Finding], rules: Mapping[str, Rule], charts: Sequence[str], metric: str | None) -> tuple[Marker, ...]:
    """The steps of the findings marked on a chart (see :func:`_marked`)."""
    out = []
    for finding in _marked(findings, rules, charts, metric):
        for step in finding.steps[:MAX_MARKERS]:
            out.append(Marker(int(step), finding.rule_id, finding.level.name, finding.title))
    return tuple(out)


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _points(findings: Sequence[Finding], rules: Mapping[str, Rule], charts: Sequence[str], metric: str | None, evals: Sequence[str]) -> tuple[Point, ...]:
    """The levels the findings marked on a chart (see :func:`_marked`) cite: each value ``X`` of a finding that also
    gives its step as ``X_step`` (TP-DIVERGE's start, best and end; a spike's max; an eval set's best), one dot per
    level (a level cited under two names, as TP-DIVERGE's start when it is also the best, once with both). A finding
    about an eval set has its levels drawn only on a chart that draws that set (``evals``)."""
    out = []
    for finding in _marked(findings, rules, charts, metric):
        values = finding.values
        if "eval_set" in values and values["eval_set"] not in evals:
            continue
        levels: dict[float, list[tuple[int, str]]] = {}
        for name, value in values.items():
            step = values.get(f"{name}_step")
            if _is_number(value) and _is_number(step):
                levels.setdefault(float(value), []).append((int(step), name.replace("_", " ")))
        for value, cited in levels.items():
            out.append(Point(cited[0][0], value, ", ".join(name for _, name in cited), finding.rule_id, finding.level.name))
    return tuple(out)


Marks = tuple[tuple[Marker, ...], tuple[Point, ...]]


def marks_of(findings: Sequence[Finding], rules: Mapping[str, Rule], *charts: str, metric: str | None = None, evals: Sequence[str] = ()) -> Marks:
    """What a chart marks of the findings: their steps as markers, the levels they cite as points; ``evals`` the eval
    sets it draws."""
    return _markers(findings, rules, charts, metric), _points(findings, rules, charts, metric, evals)


def _shares_loss_axis(run: Run, series: np.ndarray, t: Thresholds) -> bool:
    """Does an eval curve sit on the training loss's scale (medians within CHART_SHARED_AXIS_MAX_RATIO of each other)?"""
    loss = run.loss
    if loss is None or not loss.finite.any():
        return False
    finite = series[np.isfinite(series)]
    if not finite.size:
        return False
    train_mid, eval_mid = float(median(loss.values[loss.finite])), float(median(finite))
    if train_mid <= 0 or eval_mid <= 0:
        return False
    return max(train_mid / eval_mid, eval_mid / train_mid) < t.CHART_SHARED_AXIS_MAX_RATIO


def charts(run: Run, findings: Sequence[Finding], rules: Sequence[Rule], t: Thresholds) -> tuple[Chart, ...]:
    """What the HTML report plots for a run: loss (with the eval curves on its scale), eval, learning rate, gradient norm, time.

    Each chart's value axis is log when its series together span more than a decade (see
    :func:`trainproof.report.wants_log`, decided as it is drawn) and named by its metric; the step axis is named by the
    log's unit. The findings are marked on the chart their rule names: their steps as markers, the levels they cite
    as labelled points (see :func:`_points`).
    """
    by_id = {rule.id: rule for rule in rules}
    span = (run.first_step, run.last_step) if run.first_step is not None and run.last_step is not None else None
    unit = run.step_unit
    loss_lines: list[Line] = []
    if run.loss is not None:
        loss_lines.append(Line(f"training loss ({run.loss_name})", run.loss.steps, run.loss.values, "train"))
    separate: list[Line] = []
    for i, (name, series) in enumerate(run.eval_losses.items()):
        line = Line(name, series.steps, series.values, f"eval eval{i % 6}")
        (loss_lines if _shares_loss_axis(run, series.values, t) else separate).append(line)
    out = []
    if loss_lines:
        marked = ("loss",) if separate else ("loss", "eval")
        label = run.loss_name if run.loss is not None and len(loss_lines) == 1 else "loss"
        out.append(one_chart("Loss", loss_lines, marks_of(findings, by_id, *marked, evals=[ln.label for ln in loss_lines[1:]]), span, unit, label))
    if separate:
        label = separate[0].label if len(separate) == 1 else "eval loss"
        out.append(one_chart("Eval loss", separate, marks_of(findings, by_id, "eval", evals=[ln.label for ln in separate]), span, unit, label))
    for name, series, title, css in metric_charts(run):
        line = Line(name, series.steps, series.values, css)
        out.append(one_chart(title, [line], marks_of(findings, by_id, "eval", metric=name), span, unit, name))
    if run.learning_rate is not None:
        lr = run.learning_rate
        out.append(one_chart("Learning rate", [Line("learning rate", lr.steps, lr.values, "lr")], marks_of(findings, by_id, "lr"), span, unit, "learning rate"))
    if run.grad_norm is not None:
        grad = run.grad_norm
        out.append(one_chart("Gradient norm", [Line("gradient norm", grad.steps, grad.values, "grad")], marks_of(findings, by_id, "grad"), span, unit, "gradient norm"))
    out.extend(timing_chart(run, findings, by_id, span, unit))
    return tuple(out)


def metric_charts(run: Run) -> Iterator[tuple[str, Series, str, str]]:
    """Each eval metric of the run with its chart's title (its goal said) and its line's CSS class (the colours after
    the eval losses')."""
    for i, (name, series) in enumerate(run.eval_metrics.items()):
        goal = _GOALS.get(run.metric_goals.get(name, ""), "")
        yield name, series, f"Eval {name}" + (f" ({goal})" if goal else ""), f"eval eval{(len(run.eval_losses) + i) % 6}"


def timing_chart(run: Run, findings: Sequence[Finding], by_id: Mapping[str, Rule], span: tuple[int, int] | None, unit: str) -> tuple[Chart, ...]:
    """The run's seconds per step as a chart on the step axis ``span``; none when the log times no steps."""
    timing = run.seconds_per_step()
    if timing is None:
        return ()
    steps, seconds, _ = timing
    return (one_chart("Seconds per step", [Line("seconds per step", steps, seconds, "time")], marks_of(findings, by_id, "time"), span, unit, "seconds per step"),)


def one_chart(title: str, lines: Sequence[Line], marks: Marks, span: tuple[int, int] | None, unit: str, y_label: str) -> Chart:
    """A chart whose value axis is one scale for all its lines: log when their values together span more than a decade
    (:func:`trainproof.report.wants_log`), which the renderer decides from them when it draws the chart (a text or JSON
    report draws none)."""
    markers, points = marks
    return Chart(title, tuple(lines), markers, span, x_label=unit, y_label=y_label, points=points)


def presented(run: Run, subject: Subject, rules: Sequence[Rule], t: Thresholds, shown: tuple[Chart, ...] | None = None, **extra: Any) -> Subject:
    """The subject as the report shows it; ``shown`` the charts to draw, when not the run's own (see :func:`charts`)."""
    return Subject(
        path=run.path,
        format=run.format,
        findings=subject.findings,
        ran=subject.ran,
        skipped=subject.skipped,
        unjudged=subject.unjudged,
        role=subject.role,
        summary=summarize(run),
        headline=headline(run),
        notes=run.notes,
        charts=charts(run, subject.findings, rules, t) if shown is None else shown,
        **extra,
    )


def curve_unjudged(ctx: RunContext) -> str | None:
    """Why a run's curve cannot be judged at all (no loss, too few points), or None when it can."""
    try:
        ctx.curve()
    except NotApplicable as reason:
        if ctx.run.loss is None or ctx.loss_profile is None:
            return str(reason)
    return None


def search_of(source: Any) -> Search | None:
    """The runs found in a folder (see :mod:`trainproof.runs.readers.discover`); None for a file, a Run, a path that is not a folder.

    Inside :func:`trainproof.io.memo.invocation` (one command invocation: what it reads to protect from the outputs, then
    judges) a folder's search is kept, by the path as given and as resolved, and found again; outside it every look
    searches afresh, as ``watch`` must.
    """
    if isinstance(source, Run):
        return None
    path = Path(source)
    try:
        if not path.is_dir():
            return None
        if not memo.active():  # resolved only where a search is kept (not each poll of watch)
            return find_runs(path)
        key = ("search", str(path), path.resolve())
    except (OSError, RuntimeError, ValueError):
        return None
    return memo.remembered(key, lambda: find_runs(path))


def folder_of(search: Search, path: str) -> Folder:
    """The folder searched, as the report lists it: ``path`` as given, the depth searched, what lay deeper, the JSON
    logs not read."""
    return Folder(path, search.depth, search.not_searched, search.unread, search.unread_formats)


def expand(source: Any) -> Inputs:
    """A folder of several runs as each of its runs; anything else as itself.

    A folder that is one run, or holds no run that the search finds, is
    read as itself, as before there was a search (so its error, if any, is
    the reader's), unless it holds JSON files that look like logs: its error
    then names them. A folder holding one run further down, and no folder
    too deep to search nor such JSON files (which its report names), is that
    run.
    """
    search = search_of(source)
    if search is not None and not search.runs and search.unread:
        raise InputError(source, f"holds no run a folder search takes; {folder_of(search, str(source)).unread_note()}")
    if search is None or not search.runs or search.runs[0].relative == ".":
        return Inputs((Input(source),))
    if len(search.runs) == 1 and not search.not_searched and not search.unread:
        return Inputs((Input(search.runs[0].path),))
    runs = tuple(Input(found.path, found.relative) for found in search.runs)
    return Inputs(runs, folder_of(search, str(source)))


def _log_files(target: Path) -> list[Path]:
    """The file itself, or the log (or event and metric files) of a run folder."""
    try:
        if not target.is_dir():
            return [target]
        found = find_log(target)
    except (InputError, OSError, ValueError):
        return [target]
    if not found.is_dir():
        return [found]
    fmt = run_dir_format(found)
    return READERS[fmt].run_files(found) if fmt is not None else [found]


class Epoch(Command):
    """``trainproof epoch``: each log on its own, by the single-run rules; a folder of several runs, each of them."""

    name = "epoch"

    def read(self, source: Any, options: Mapping[str, Any]) -> Run:
        return source if isinstance(source, Run) else read_run(source, options.get("fmt"), options.get("names", DEFAULT_NAMES))

    def inputs(self, source: Any, options: Mapping[str, Any], prepared: Prepared) -> Inputs:
        return expand(source)

    def reads(self, path: str) -> Sequence[Path]:
        """The file itself, or the log (or event and metric files) of a run folder, or of every run of a folder of runs."""
        try:
            items = expand(path).items
        except InputError:
            return [Path(path)]
        return [file for item in items for file in _log_files(Path(item.source))]

    def stages(self, run: Run, settings: Settings, prepared: Prepared) -> Sequence[Stage]:
        return (Stage(RULES["epoch"], RunContext(run, settings.thresholds)),)

    def unjudged(self, stages: Sequence[Stage], outcome: Outcome, prepared: Prepared) -> str | None:
        return curve_unjudged(stages[0].context) or nothing_ran(outcome)  # type: ignore[arg-type]

    def present(self, run: Run, subject: Subject, stages: Sequence[Stage], prepared: Prepared) -> Subject:
        return presented(run, subject, self.rules, stages[0].context.t)  # type: ignore[union-attr]


EPOCH = Epoch()
