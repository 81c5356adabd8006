"""The library entry points: read inputs, run rules, return a Report.

The CLI, the HF callback and the CI wrappers all call these; none of them
runs a rule or builds a finding on its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from trainproof import __version__
from trainproof.checks.base import CompareContext, NotApplicable, Rule, RunContext
from trainproof.checks.compare import improvement
from trainproof.checks.registry import COMPARE_RULES, EPOCH_RULES
from trainproof.config import DEFAULT_SETTINGS, Settings
from trainproof.errors import InputError
from trainproof.model import Run
from trainproof.readers import read_run
from trainproof.report import Finding, Level, Report, Skipped, Subject


@dataclass(frozen=True)
class Outcome:
    findings: tuple[Finding, ...]
    ran: tuple[str, ...]
    skipped: tuple[Skipped, ...]


def apply_rules(rules: Iterable[Rule], ctx: RunContext | CompareContext, settings: Settings = DEFAULT_SETTINGS) -> Outcome:
    """Run rules in order; a rule that cannot judge, or that the configuration disables, is skipped with its reason."""
    findings: list[Finding] = []
    ran: list[str] = []
    skipped: list[Skipped] = []
    target = ctx.target
    for rule in rules:
        if not settings.enabled(rule.id):
            skipped.append(Skipped(rule.id, settings.disabled_reason(rule.id)))
            continue
        try:
            # Logged values reach float64's limits (a loss of 1e308): overflow to inf is the right answer, not a warning.
            with np.errstate(all="ignore"):
                hits = list(rule.check(ctx))
        except NotApplicable as reason:
            skipped.append(Skipped(rule.id, str(reason)))
            continue
        ran.append(rule.id)
        for hit in hits:
            finding = rule.stamp(hit, settings.levels.get(rule.id))
            if finding.line is None and finding.steps:
                finding = replace(finding, line=target.run.line_of(finding.steps[0]))
            findings.append(finding)
            target.fired[rule.id] = max(target.fired.get(rule.id, Level.INFO), finding.level)
    return Outcome(tuple(findings), tuple(ran), tuple(skipped))


def _ordered(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    return tuple(sorted(findings, key=lambda f: -f.level))


def summarize(run: Run) -> dict:
    loss = run.loss
    return {
        "loss": run.loss_name if loss is not None else None,
        "points": len(loss) if loss is not None else 0,
        "first_step": run.first_step,
        "last_step": run.last_step,
        "max_steps": run.max_steps,
        "step_unit": run.step_unit,
        "eval_sets": ", ".join(run.eval_losses) or None,
        "notes": "; ".join(run.notes) or None,
    }


def unjudged_reason(ctx: RunContext) -> str | None:
    """Why a run's curve cannot be judged, or None when it can."""
    try:
        ctx.curve()
    except NotApplicable as reason:
        if ctx.run.loss is None or ctx.loss_profile is None:
            return str(reason)
    return None


def _nothing_ran(ran: Sequence[str], skipped: Sequence[Skipped]) -> str | None:
    """A judgement no rule took part in is no PASS."""
    if ran:
        return None
    if skipped and all(s.reason.startswith("disabled by configuration") for s in skipped):
        return "no rule ran: the configuration disables every rule"
    return "no rule could run on this log"


def _judge(run: Run, settings: Settings, rules: Sequence[Rule], role: str = "run") -> tuple[Subject, RunContext]:
    ctx = RunContext(run, settings.thresholds)
    outcome = apply_rules(rules, ctx, settings)
    subject = Subject(
        path=run.path,
        format=run.format,
        findings=_ordered(outcome.findings),
        ran=outcome.ran,
        skipped=outcome.skipped,
        unjudged=unjudged_reason(ctx) or _nothing_ran(outcome.ran, outcome.skipped),
        role=role,
        summary=summarize(run),
        run=run,
    )
    return subject, ctx


def judge_run(run: Run, settings: Settings = DEFAULT_SETTINGS, rules: Sequence[Rule] = EPOCH_RULES) -> Subject:
    """Every single-run rule on one Run."""
    return _judge(run, settings, rules)[0]


def _unreadable(path: str | Path, error: InputError, role: str = "run") -> Subject:
    """An input that could not be read, located at the file that failed (inside a run folder, the log itself)."""
    return Subject(path=error.path or str(path), unjudged=error.problem, error=True, role=role)


def _read(path: str | Path, fmt: str | None) -> Run:
    """One input into a Run; anything that goes wrong is an InputError about that input alone.

    An unexpected exception is a bug in trainproof, said as such, but it must
    not cost the user the verdicts of the other inputs and the output files.
    """
    try:
        return read_run(path, fmt)
    except InputError:
        raise
    except (OSError, RecursionError, MemoryError) as exc:
        raise InputError(path, f"cannot be read: {getattr(exc, 'strerror', None) or type(exc).__name__}") from None
    except Exception as exc:  # noqa: BLE001 - see the docstring
        raise InputError(path, f"internal error while reading it: {type(exc).__name__}: {exc}") from None


def judge_epoch(paths: Sequence[str | Path], fmt: str | None = None, settings: Settings = DEFAULT_SETTINGS) -> Report:
    """``trainproof epoch``: each log judged on its own."""
    subjects = []
    for path in paths:
        try:
            run = _read(path, fmt)
        except InputError as error:
            subjects.append(_unreadable(path, error))
            continue
        subjects.append(judge_run(run, settings))
    return Report(command="epoch", subjects=tuple(subjects), tool_version=__version__, fail_on=settings.fail_on)


def compare_metrics(ctx: CompareContext) -> dict:
    """The ratios the compare table shows, where both curves can be judged."""
    try:
        run, base = ctx.run.curve(), ctx.baseline.curve()
    except NotApplicable:
        return {}
    out: dict = {
        "floor_ratio": run.best / base.best if base.best > 0 else None,
        "end_ratio": run.end / base.end if base.end > 0 else None,
        "improvement": improvement(run),
        "baseline_improvement": improvement(base),
    }
    return out


def judge_baseline(run: Run, settings: Settings = DEFAULT_SETTINGS) -> tuple[Subject, RunContext]:
    """The baseline of a compare, judged by the single-run rules, with its context for the ratios."""
    return _judge(run, settings, EPOCH_RULES, role="baseline")


def judge_against(run: Run, baseline: Subject, baseline_ctx: RunContext | None, settings: Settings = DEFAULT_SETTINGS) -> Subject:
    """One run by the single-run rules and the compare rules against a judged baseline.

    ``baseline_ctx`` is None when the baseline could not be read; the compare
    rules are then skipped and the run is not judged.
    """
    ctx = RunContext(run, settings.thresholds)
    own = apply_rules(EPOCH_RULES, ctx, settings)
    metrics: dict = {}
    if baseline_ctx is None:
        skipped = tuple(Skipped(r.id, f"the baseline could not be read: {baseline.unjudged}") for r in COMPARE_RULES)
        versus = Outcome((), (), skipped)
        unjudged: str | None = f"the baseline {baseline.path} could not be read"
    else:
        fails = tuple(f for f in baseline.findings if f.level is Level.FAIL)
        cmp_ctx = CompareContext(ctx, baseline_ctx, fails)
        versus = apply_rules(COMPARE_RULES, cmp_ctx, settings)
        metrics = compare_metrics(cmp_ctx)
        unjudged = unjudged_reason(ctx) or _nothing_ran(own.ran + versus.ran, own.skipped + versus.skipped) or (
            f"the baseline's curve cannot be judged: {baseline.unjudged}" if baseline.unjudged else None
        )
    return Subject(
        path=run.path,
        format=run.format,
        findings=_ordered(own.findings + versus.findings),
        ran=own.ran + versus.ran,
        skipped=own.skipped + versus.skipped,
        unjudged=unjudged,
        baseline=baseline.path,
        summary=summarize(run),
        metrics=metrics,
        run=run,
    )


def judge_compare(
    run_paths: Sequence[str | Path],
    baseline_path: str | Path,
    fmt: str | None = None,
    settings: Settings = DEFAULT_SETTINGS,
) -> Report:
    """``trainproof compare``: each run against one known-good baseline.

    The baseline is judged by the single-run rules too and listed with role
    ``baseline``; its FAILs make every comparison WARN
    (TP-CMP-BASELINE-UNHEALTHY) but do not count toward the job's verdict.
    """
    base_ctx: RunContext | None
    try:
        base_run = _read(baseline_path, fmt)
    except InputError as error:
        base_subject, base_ctx = _unreadable(baseline_path, error, role="baseline"), None
    else:
        base_subject, base_ctx = judge_baseline(base_run, settings)
    subjects = []
    for path in run_paths:
        try:
            run = _read(path, fmt)
        except InputError as error:
            subjects.append(_unreadable(path, error))
            continue
        subjects.append(judge_against(run, base_subject, base_ctx, settings))
    return Report(command="compare", subjects=tuple(subjects) + (base_subject,), tool_version=__version__, fail_on=settings.fail_on)
