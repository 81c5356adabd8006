"""``trainproof compare``: each run by the single-run rules, then against a known-good baseline, with its table of ratios."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from trainproof.checks.base import NotApplicable, Rule, RunContext
from trainproof.checks.registry import RULES
from trainproof.commands.epoch import (
    EPOCH,
    Epoch,
    curve_unjudged,
    expand,
    folder_of,
    marks_of,
    metric_charts,
    one_chart,
    presented,
    search_of,
    timing_chart,
)
from trainproof.config import Settings
from trainproof.io import figures
from trainproof.io.errors import InputError
from trainproof.judge import Input, Inputs, Outcome, Prepared, Stage, judge_one, located, nothing_ran, read_input, unreadable
from trainproof.report import Chart, Finding, Folder, Level, Line, Subject, Table
from trainproof.runs.model import Run
from trainproof.runs.readers.discover import path_order


def _eval_pairs(run: Run, base: Run) -> list[tuple[str, str | None]]:
    """The run's eval sets, each with the baseline's set of the same name (or its only set, when the run has one and no
    name is shared), None when the baseline has no counterpart."""
    shared = [name for name in run.eval_losses if name in base.eval_losses]
    if not shared and len(run.eval_losses) == 1 and len(base.eval_losses) == 1:
        return [(next(iter(run.eval_losses)), next(iter(base.eval_losses)))]
    return [(name, name if name in base.eval_losses else None) for name in run.eval_losses]


def compare_charts(run: Run, base: Run, findings: Sequence[Finding], rules: Sequence[Rule]) -> tuple[Chart, ...]:
    """What ``compare``'s HTML report plots for a run: each metric of the run overlaid on the baseline's.

    One chart per metric the run has (loss; eval loss; each eval metric such as WER; learning rate; gradient norm), the
    baseline's curve (of the metric of the same name) beside the run's on one step axis spanning both and one value
    scale decided from the union of their values; the baseline's lines carry the ``baseline`` class (drawn dashed), every label says whose line it is,
    and the run's findings are marked where their rules point. The run's step time follows as its own chart.
    """
    by_id = {rule.id: rule for rule in rules}
    steps = [s for s in (run.first_step, run.last_step, base.first_step, base.last_step) if s is not None]
    span = (min(steps), max(steps)) if steps else None
    unit = run.step_unit if run.step_unit == base.step_unit else f"{run.step_unit} (baseline: {base.step_unit})"
    out = []
    pairs = _eval_pairs(run, base)
    if run.loss is not None:
        lines = [Line(f"run: {run.loss_name}", run.loss.steps, run.loss.values, "train")]
        if base.loss is not None:
            lines.append(Line(f"baseline: {base.loss_name}", base.loss.steps, base.loss.values, "base baseline"))
        label = run.loss_name if base.loss is None or base.loss_name == run.loss_name else f"{run.loss_name} / {base.loss_name}"
        marked = ("loss", "eval") if not pairs else ("loss",)
        out.append(one_chart("Loss: run against baseline", lines, marks_of(findings, by_id, *marked), span, unit, label))
    if pairs:
        lines = []
        for i, (name, other) in enumerate(pairs):
            series = run.eval_losses[name]
            lines.append(Line(f"run: {name}", series.steps, series.values, f"eval eval{i % 6}"))
            if other is not None:
                theirs = base.eval_losses[other]
                css = "base baseline" if len(pairs) == 1 else f"eval eval{i % 6} baseline"
                lines.append(Line(f"baseline: {other}", theirs.steps, theirs.values, css))
        label = pairs[0][0] if len(pairs) == 1 and pairs[0][1] in (None, pairs[0][0]) else "eval loss"
        out.append(one_chart("Eval loss: run against baseline", lines, marks_of(findings, by_id, "eval", evals=[name for name, _ in pairs]), span, unit, label))
    for name, series, title, css in metric_charts(run):
        lines = [Line(f"run: {name}", series.steps, series.values, css)]
        baseline_metric = base.eval_metrics.get(name)
        if baseline_metric is not None:
            lines.append(Line(f"baseline: {name}", baseline_metric.steps, baseline_metric.values, "base baseline"))
        out.append(one_chart(f"{title}: run against baseline", lines, marks_of(findings, by_id, "eval", metric=name), span, unit, name))
    for title, attr, css, label, chart_name in (
        ("Learning rate", "learning_rate", "lr", "learning rate", "lr"),
        ("Gradient norm", "grad_norm", "grad", "gradient norm", "grad"),
    ):
        mine, theirs = getattr(run, attr), getattr(base, attr)
        if mine is None:
            continue
        lines = [Line(f"run: {label}", mine.steps, mine.values, css)]
        if theirs is not None:
            lines.append(Line(f"baseline: {label}", theirs.steps, theirs.values, "base baseline"))
        out.append(one_chart(f"{title}: run against baseline", lines, marks_of(findings, by_id, chart_name), span, unit, label))
    out.extend(timing_chart(run, findings, by_id, span, unit))
    return tuple(out)


class _Baseline:
    """A compare's baseline, judged once: its subject, and its context when it could be read."""

    def __init__(self, subject: Subject, ctx: RunContext | None) -> None:
        self.subject, self.ctx = subject, ctx


class _Pairs:
    """A baseline folder of several runs: each run is compared with the baseline run at its relative path."""

    def __init__(self, folder: str, baselines: Mapping[str, tuple[Path, Prepared]]) -> None:
        self.folder, self.baselines = folder, baselines


class Compare(Epoch):
    """``trainproof compare``: each run by the single-run rules, then against one known-good baseline.

    When the baseline is a folder of several runs, each run of the folders
    given is compared with the baseline run at its own relative path; a run
    on either side with no counterpart on the other is NOT-CHECKED, saying so.
    """

    name = "compare"

    @property
    def rules(self) -> tuple[Rule, ...]:
        return RULES["epoch"] + RULES["compare"]

    def prepare(self, settings: Settings, options: Mapping[str, Any]) -> Prepared:
        """The baseline (or each run of a baseline folder), judged by the single-run rules and listed with role ``baseline``."""
        source = options["baseline"]
        try:
            found = expand(source)
        except InputError as error:
            subject = unreadable(source, error, role="baseline")
            return Prepared(subjects=(subject,), shared=_Baseline(subject, None))
        if found.folder is None:
            return _judge_baseline(found.items[0], settings, options)
        baselines = {item.relative: (Path(item.source), _judge_baseline(item, settings, options, found.folder)) for item in found.items}
        subjects = tuple(subject for _, prepared in baselines.values() for subject in prepared.subjects)
        return Prepared(subjects=subjects, shared=_Pairs(found.folder.path, baselines))  # type: ignore[arg-type]

    def inputs(self, source: Any, options: Mapping[str, Any], prepared: Prepared) -> Inputs:
        """Each run of a folder paired with the baseline run at its relative path, when the baseline is a folder of runs."""
        pairs = prepared.shared
        if not isinstance(pairs, _Pairs):
            return expand(source)
        search = search_of(source)
        if search is None:
            return Inputs((Input(source, missing=f"cannot be paired with the runs of the baseline folder {pairs.folder}: name a folder of runs"),))
        runs = {found.relative: found.path for found in search.runs}
        items = []
        for relative in sorted(runs.keys() | pairs.baselines.keys(), key=path_order):
            if relative not in runs:
                items.append(Input(search.root / relative, relative, missing=f"has no run, while the baseline folder has one at {pairs.baselines[relative][0]}"))
            elif relative not in pairs.baselines:
                items.append(Input(runs[relative], relative, missing=f"has no counterpart at the same path in the baseline folder {pairs.folder}"))
            else:
                items.append(Input(runs[relative], relative, prepared=pairs.baselines[relative][1]))
        return Inputs(tuple(items), folder_of(search, str(source)))

    def stages(self, run: Run, settings: Settings, prepared: Prepared) -> Sequence[Stage]:
        from trainproof.checks.compare import CompareContext

        ctx = RunContext(run, settings.thresholds)
        base: _Baseline = prepared.shared
        if base.ctx is None:
            return (Stage(RULES["epoch"], ctx), Stage(RULES["compare"], f"the baseline could not be read: {base.subject.unjudged}"))
        fails = tuple(f for f in base.subject.findings if f.level is Level.FAIL)
        return (Stage(RULES["epoch"], ctx), Stage(RULES["compare"], CompareContext(ctx, base.ctx, fails)))

    def unjudged(self, stages: Sequence[Stage], outcome: Outcome, prepared: Prepared) -> str | None:
        base: _Baseline = prepared.shared
        if base.ctx is None:
            return f"the baseline {base.subject.path} could not be read"
        return (
            curve_unjudged(stages[0].context)  # type: ignore[arg-type]
            or nothing_ran(outcome)
            or (f"the baseline's curve cannot be judged: {base.subject.unjudged}" if base.subject.unjudged else None)
        )

    def present(self, run: Run, subject: Subject, stages: Sequence[Stage], prepared: Prepared) -> Subject:
        from trainproof.checks.compare import CompareContext, ratios

        versus = stages[1].context
        metrics: dict = {}
        if isinstance(versus, CompareContext):
            try:
                metrics = ratios(versus)._asdict()
            except NotApplicable:
                pass
        base: _Baseline = prepared.shared
        t = stages[0].context.t  # type: ignore[union-attr]
        overlaid = None if base.ctx is None else compare_charts(run, base.ctx.run, subject.findings, self.rules)
        return presented(run, subject, self.rules, t, overlaid, baseline=base.subject.path, metrics=metrics)

    def table(self, subjects: Sequence[Subject]) -> Table:
        """Each run's ratios to the baseline; the verdict leads each row, so no path starts a line of text."""

        def cell(metrics: Mapping[str, object], key: str, show: Any) -> str:
            value = metrics.get(key)
            return show(value) if isinstance(value, (int, float)) else "-"

        rows = tuple(
            (
                str(s.verdict),
                s.path,
                cell(s.metrics, "floor_ratio", figures.ratio),
                cell(s.metrics, "end_ratio", figures.ratio),
                cell(s.metrics, "improvement", figures.pct),
                cell(s.metrics, "baseline_improvement", figures.pct),
            )
            for s in subjects
        )
        return Table(("verdict", "run", "floor", "end", "improved", "baseline improved"), rows)


def _judge_baseline(item: Input, settings: Settings, options: Mapping[str, Any], folder: Folder | None = None) -> Prepared:
    """One baseline run, judged by the single-run rules: its subject (role ``baseline``, located in ``folder`` when found
    in one), and its context when it could be read."""
    try:
        run = read_input(EPOCH, item.source, options)
    except InputError as error:
        subject, ctx = unreadable(item.source, error, role="baseline"), None
    else:
        subject = judge_one(EPOCH, run, settings, options=options, role="baseline")
        # kept for every run compared with it, which never asks the baseline's log lines (its own findings are located
        # already): without them, not the log's bytes that a trainer_state.json's deferred line index holds
        ctx = RunContext(replace(run, step_lines={}), settings.thresholds)
    subject = located(subject, folder, item)
    return Prepared(subjects=(subject,), shared=_Baseline(subject, ctx))


COMPARE = Compare()
