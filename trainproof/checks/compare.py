"""Rules that judge a run against a known-good baseline, by ratios of robust levels."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from trainproof.checks.base import Hit, NotApplicable, Rule, RunContext
from trainproof.checks.findings import Finding, Level
from trainproof.checks.stats import Profile, median, profile
from trainproof.checks.thresholds import Thresholds
from trainproof.checks.values import loss_fell, zero_rate_causes
from trainproof.io import figures
from trainproof.runs.model import Series


@dataclass(frozen=True)
class CompareContext:
    run: RunContext
    baseline: RunContext
    baseline_fails: tuple[Finding, ...]
    topic = "this comparison"

    @property
    def t(self) -> Thresholds:
        return self.run.t

    def locate(self, finding: Finding) -> Finding:
        return self.run.locate(finding)

    @cached_property
    def _baseline_cut(self) -> Profile | NotApplicable:
        """The baseline's loss profile over the steps the run covers (see :func:`_both`), or why it cannot be had."""
        try:
            return _baseline_curve(self, int(self.run.curve().steps[-1]))
        except NotApplicable as exc:
            return exc


def _both(ctx: CompareContext) -> tuple[Profile, Profile]:
    """The run's loss profile and the baseline's, the baseline's cut at the run's last step when it runs on past it
    (on the same step unit): a run of 1,000 steps is held to where the baseline was by step 1,000, not to the floor
    the baseline reached at step 10,000."""
    run = ctx.run.curve()
    base = ctx._baseline_cut
    if isinstance(base, NotApplicable):
        raise base
    return run, base


def _baseline_curve(ctx: CompareContext, last: int) -> Profile:
    """The baseline's loss profile, cut at ``last``, the run's last step (see :func:`_both`): the profile itself when
    it is not cut."""
    try:
        base = ctx.baseline.curve()
    except NotApplicable as exc:
        raise NotApplicable(f"the baseline's curve cannot be judged: {exc}") from None
    if ctx.run.run.step_unit != ctx.baseline.run.step_unit or int(base.steps[-1]) <= last:
        return base
    kept = int(base.steps.searchsorted(last, side="right"))
    shared = profile(Series(base.steps[:kept], base.values[:kept]), ctx.t)
    if shared is None:
        unit = ctx.run.run.step_unit
        raise NotApplicable(
            f"the baseline has {kept} finite loss point{'s' if kept != 1 else ''} up to {unit} {figures.step(last)}, where the run "
            f"ends (needs {ctx.t.MIN_TREND_POINTS}): the two cannot be compared over the same {unit}s"
        )
    return shared


def _cut(ctx: CompareContext, base: Profile) -> str:
    """What the evidence says when the baseline was cut at the run's last step."""
    full = ctx.baseline.loss_profile
    if full is None or base is full:  # not cut: _baseline_curve returns the baseline's profile itself
        return ""
    unit, cut, went = ctx.run.run.step_unit, figures.step(int(base.steps[-1])), figures.step(int(full.steps[-1]))
    return f" (the baseline up to {unit} {cut}, where the run ends; it went on to {went})"


def improvement(prof: Profile) -> float:
    """Share of its head level (the median of its first TAIL_SHARE) the loss shed by the end."""
    head = prof.head_window_median
    return (head - prof.end) / head if head > 0 else 0.0


class Ratios(NamedTuple):
    """The run against its baseline, as the compare rules judge it and the compare table shows it."""

    floor_ratio: float | None
    """The run's best level over the baseline's; None when the baseline's is not positive."""
    end_ratio: float | None
    """The run's end level over the baseline's; None when the baseline's is not positive."""
    improvement: float
    """Share of its head level the run shed by the end."""
    baseline_improvement: float
    """Share of its head level the baseline shed by the end."""


def ratios(ctx: CompareContext) -> Ratios:
    """The ratios of the run's robust levels to the baseline's; NotApplicable when either curve cannot be judged.

    ``ratios(ctx)._asdict()`` is the compare table's metrics.
    """
    run, base = _both(ctx)
    return Ratios(
        floor_ratio=run.best / base.best if base.best > 0 else None,
        end_ratio=run.end / base.end if base.end > 0 else None,
        improvement=improvement(run),
        baseline_improvement=improvement(base),
    )


def _ratio_beyond_noise(run: Profile, base: Profile, z: float) -> float:
    """run.best / base.best with the run's best moved ``z`` standard errors down and the baseline's ``z`` up, each on
    its own scale. Only for a positive ``base.best`` (floor() judges no other), which ``z >= 0`` (PROOF_Z is never
    negative) can only raise."""
    low = run.shifted(run.best, int(run.seg_size[run.best_segment]), -z)
    high = base.shifted(base.best, int(base.seg_size[base.best_segment]), z)
    return low / high


def floor(ctx: CompareContext) -> Iterator[Hit]:
    """The run's best loss level is far above the baseline's best.

    What it detects: the run's best level (lowest segment median) is at least
    CMP_FLOOR_RATIO times the baseline's best level, and still is with each
    level moved PROOF_Z standard errors of its median in the run's favour;
    a ratio that reaches CMP_FLOOR_RATIO only inside that noise is a WARN.
    Why it matters: a run that cannot get down to where the known-good run
    got is learning less, whatever its own curve looks like: shuffled or
    misaligned labels, a broken tokenizer, a wrong loss mask, data that lost
    its signal. A single-run view cannot see this; only a baseline can.
    Fires on: a run with shuffled labels whose loss falls 60% on its own but
    bottoms out 5x above the healthy run's.
    Does not fire on: a run that reaches the baseline's floor more slowly
    (see TP-CMP-END and TP-CMP-IMPROVEMENT).
    Does not mean: the losses are comparable when the runs use different
    tokenizers or loss definitions; compare like with like.
    """
    run, base = _both(ctx)
    ratio = ratios(ctx).floor_ratio
    if ratio is None:
        raise NotApplicable("the baseline's best loss level is not positive")
    if ratio < ctx.t.CMP_FLOOR_RATIO:
        return
    least = _ratio_beyond_noise(run, base, ctx.t.PROOF_Z)
    proven = least >= ctx.t.CMP_FLOOR_RATIO
    undecided = "" if proven else (
        f" Within the two curves' noise it could be as low as {figures.ratio(least)}: "
        "more logged points around the best levels would settle it."
    )
    yield Hit(
        message=f"The run's loss floor is {figures.ratio(ratio)} the baseline's: {figures.num(run.best)} against {figures.num(base.best)}.{undecided}",
        level=None if proven else Level.WARN,
        evidence=(
            f"run best {figures.num(run.best)} around step {figures.step(run.segment_center(run.best_segment))}; "
            f"baseline best {figures.num(base.best)} around step {figures.step(base.segment_center(base.best_segment))}{_cut(ctx, base)}"
        ),
        values={"ratio": ratio, "run_best": run.best, "baseline_best": base.best},
        steps=(run.segment_center(run.best_segment),),
    )


def end(ctx: CompareContext) -> Iterator[Hit]:
    """The run ends with a loss well above where the baseline ended.

    What it detects: the run's end level (median of its last TAIL_SHARE of
    points) is at least CMP_END_RATIO times the baseline's end level.
    Why it matters: whatever the curve did on the way, the model this run
    produces is worse on the training objective than the known-good one.
    Fires on: a run ending at 1.40 against a baseline ending at 1.06.
    Does not fire on: a run that ends within CMP_END_RATIO of the baseline.
    Does not mean: a worse eval or task metric; the training loss is a proxy.
    """
    run, base = _both(ctx)
    ratio = ratios(ctx).end_ratio
    if ratio is None:
        raise NotApplicable("the baseline's end loss level is not positive")
    if ratio < ctx.t.CMP_END_RATIO:
        return
    yield Hit(
        message=f"The run ends {figures.ratio(ratio)} above the baseline's end loss: {figures.num(run.end)} against {figures.num(base.end)}.",
        evidence=(
            f"run end level {figures.num(run.end)} from step {figures.step(run.end_first_step)}; "
            f"baseline end level {figures.num(base.end)} from step {figures.step(base.end_first_step)}{_cut(ctx, base)}"
        ),
        values={"ratio": ratio, "run_end": run.end, "baseline_end": base.end},
        steps=(int(run.steps[-1]),),
    )


def improved_less(ctx: CompareContext) -> Iterator[Hit]:
    """The run improved far less than the baseline did.

    What it detects: the run shed less than CMP_IMPROVEMENT_SHARE of the
    share of its head level that the baseline shed, when the baseline itself
    improved by at least DEAD_MIN_IMPROVEMENT.
    Why it matters: a run that learns much more slowly than the known-good
    configuration usually has a learning rate too low, frozen layers, or a
    weaker signal in its data.
    Fires on: a baseline that fell 40% and a run that fell 8%.
    Does not fire on: a run that started lower and fell less in relative
    terms but reached the same floor (see TP-CMP-FLOOR for floors).
    Does not mean: the run will not catch up given more steps.
    """
    run, base = _both(ctx)
    measured = ratios(ctx)
    base_gain, run_gain = measured.baseline_improvement, measured.improvement
    if base_gain < ctx.t.DEAD_MIN_IMPROVEMENT:
        raise NotApplicable(f"the baseline itself improved only {figures.pct(base_gain)}")
    if run_gain >= ctx.t.CMP_IMPROVEMENT_SHARE * base_gain:
        return
    yield Hit(
        message=f"The run improved {figures.pct(max(run_gain, 0.0))} where the baseline improved {figures.pct(base_gain)}.",
        evidence=f"run {figures.num(run.head_window_median)} -> {figures.num(run.end)}; baseline {figures.num(base.head_window_median)} -> {figures.num(base.end)} (head and end medians)",
        values={"run_improvement": round(run_gain, 4), "baseline_improvement": round(base_gain, 4)},
        steps=(int(run.steps[0]), int(run.steps[-1])),
    )


def worse_than_start(ctx: CompareContext) -> Iterator[Hit]:
    """The run ends above where it started, where the baseline ended below.

    What it detects: the run's end level exceeds its start level (median of
    the first HEAD_POINTS points) by more than NOISE_SIGMAS robust noise
    sigmas (see NOISE_FALLBACK_QUANTILE), while the baseline's end level is
    below its own start level by more than PROOF_Z standard errors; a baseline
    whose fall is inside its noise makes it a WARN.
    Why it matters: the known-good configuration shows the loss can fall on
    this task; this run made the model worse than no training at all.
    Fires on: a run going 1.40 -> 7.5 against a baseline going 1.52 -> 1.06.
    Does not fire on: a run that ends above its start when the baseline did too.
    Does not mean: the same as TP-DIVERGE, whose bar is a large ratio; this
    one fires on any real rise against a baseline that fell.
    """
    run, base = _both(ctx)
    head_n = run.start_points(ctx.t.HEAD_POINTS)
    if not (run.above(run.end, run.start, ctx.t.NOISE_SIGMAS, head_n, run.tail_points) and base.end < base.start):
        return
    proven = base.above(base.start, base.end, ctx.t.PROOF_Z, base.start_points(ctx.t.HEAD_POINTS), base.tail_points)
    undecided = "" if proven else " The baseline's fall is within its own noise, so it does not show the loss can fall here."
    yield Hit(
        message=f"The run ends worse than it started ({figures.num(run.start)} -> {figures.num(run.end)}) while the baseline improved ({figures.num(base.start)} -> {figures.num(base.end)}).{undecided}",
        level=None if proven else Level.WARN,
        evidence=f"run start median of the first {min(run.n, ctx.t.HEAD_POINTS)} points, end median of the last {run.tail_points}; noise sigma {figures.num(run.noise)}",
        values={"run_start": run.start, "run_end": run.end, "baseline_start": base.start, "baseline_end": base.end},
        steps=(int(run.steps[0]), int(run.steps[-1])),
    )


def grad_scale(ctx: CompareContext) -> Iterator[Hit]:
    """The run's gradient norms are on a very different scale from the baseline's.

    What it detects: the median finite gradient norm of the run is at least
    CMP_GRAD_SCALE_RATIO times the baseline's, or at most its inverse.
    Why it matters: the same model on the same task should see gradients of
    the same order; a 10x change points at a different loss scaling, a
    missing normalisation, a learning rate far off, or a numerics problem.
    Fires on: median norms of 85 against 0.4.
    Does not fire on: norms within a factor of CMP_GRAD_SCALE_RATIO.
    Does not mean: the run is wrong if the model or batch size changed on purpose.
    """
    run_g, base_g = ctx.run.series("grad_norm", "gradient norm"), None
    try:
        base_g = ctx.baseline.series("grad_norm", "gradient norm")
    except NotApplicable:
        raise NotApplicable("the baseline has no gradient norm") from None
    run_v, base_v = run_g.finite_part().values, base_g.finite_part().values
    if run_v.size == 0 or base_v.size == 0:
        raise NotApplicable("no finite gradient norms to compare")
    run_m, base_m = float(median(run_v)), float(median(base_v))
    if run_m <= 0 or base_m <= 0:
        raise NotApplicable("a median gradient norm is not positive")
    ratio = run_m / base_m
    limit = ctx.t.CMP_GRAD_SCALE_RATIO
    if 1 / limit < ratio < limit:
        return
    yield Hit(
        message=f"The run's median gradient norm is {figures.num(ratio)}x the baseline's: {figures.num(run_m)} against {figures.num(base_m)}.",
        evidence=f"median of {figures.plural(run_v.size, 'finite run norm')} {figures.num(run_m)}; "
        f"of {figures.plural(base_v.size, 'baseline norm')} {figures.num(base_m)}",
        values={"ratio": ratio, "run_median": run_m, "baseline_median": base_m},
    )


def lr_zero(ctx: CompareContext) -> Iterator[Hit]:
    """The run's learning rate is 0 on many steps where the baseline's was not.

    What it detects: a learning rate of exactly 0 on at least
    CMP_LR_ZERO_SHARE of the run's logged steps while the baseline's is 0 on
    less than CMP_BASELINE_LR_ZERO_SHARE of its own.
    Why it matters: the baseline shows a working schedule; this run's
    optimizer did not move for most of it.
    Only a WARN when the run's training loss fell all the same (by
    TP-NO-LEARNING's test): the weights moved, so its logged rate is rounded
    to 0 or belongs to a param group that does not train.
    Fires on: a run logging learning_rate 0.0 throughout against a baseline
    warming up to 2e-4.
    Does not fire on: both runs decaying to 0 at their last steps.
    Does not mean: anything about param groups whose rate is not logged.
    """
    run_lr = ctx.run.series("learning_rate", "learning rate").finite_part().values
    try:
        base_lr = ctx.baseline.series("learning_rate", "learning rate").finite_part().values
    except NotApplicable:
        raise NotApplicable("the baseline has no learning rate") from None
    if run_lr.size == 0 or base_lr.size == 0:
        raise NotApplicable("no finite learning rates to compare")
    run_share, base_share = float((run_lr == 0).mean()), float((base_lr == 0).mean())
    if run_share < ctx.t.CMP_LR_ZERO_SHARE or base_share >= ctx.t.CMP_BASELINE_LR_ZERO_SHARE:
        return
    message = f"The learning rate is 0 on {figures.pct(run_share)} of the run's steps; the baseline's is 0 on {figures.pct(base_share)}."
    zeros = int((run_lr == 0).sum())
    rates = figures.plural(run_lr.size, "logged rate")
    evidence = f"run: {zeros} of {rates} {'is' if zeros == 1 else 'are'} 0; baseline peaks at {figures.num(base_lr.max())}"
    fell = loss_fell(ctx.run)  # the weights moved: the zeros are a rounded or another param group's rate (as TP-LR-ZERO)
    if fell is not None:
        message += f" Yet the run's training loss fell {fell}: {zero_rate_causes('its')}"
        evidence += f"; run's training loss {fell}"
    yield Hit(
        message=message,
        evidence=evidence,
        values={"run_zero_share": round(run_share, 4), "baseline_zero_share": round(base_share, 4), "baseline_max_lr": float(base_lr.max())},
        level=None if fell is None else Level.WARN,
    )


def baseline_unhealthy(ctx: CompareContext) -> Iterator[Hit]:
    """The baseline itself fails single-run rules, so ratios against it prove little.

    What it detects: the baseline has at least one FAIL finding of its own
    from the single-run (epoch) rules.
    Why it matters: a comparison is only as good as its reference; a run
    that matches a diverged or dead baseline has matched a failure.
    Fires on: ``compare new_run lr_hot_run``.
    Does not fire on: a baseline with warnings only.
    Does not mean: the run under test is bad; it means this baseline cannot vouch for it.
    """
    if not ctx.baseline_fails:
        return
    ids = ", ".join(dict.fromkeys(f.rule_id for f in ctx.baseline_fails))
    yield Hit(
        message=f"The baseline itself fails {ids}: ratios against it prove little.",
        evidence="; ".join(f"baseline {f.rule_id}: {f.evidence}" for f in ctx.baseline_fails[:3]),
        values={"baseline_fails": ids},
    )


COMPARE_RULES: tuple[Rule, ...] = (
    Rule("TP-CMP-FLOOR", Level.FAIL, floor, "compare", chart="loss"),
    Rule("TP-CMP-WORSE-THAN-START", Level.FAIL, worse_than_start, "compare", chart="loss"),
    Rule("TP-CMP-LR-ZERO", Level.FAIL, lr_zero, "compare", chart="lr"),
    Rule("TP-CMP-END", Level.WARN, end, "compare", chart="loss"),
    Rule("TP-CMP-IMPROVEMENT", Level.WARN, improved_less, "compare", chart="loss"),
    Rule("TP-CMP-GRAD-SCALE", Level.WARN, grad_scale, "compare", chart="grad"),
    Rule("TP-CMP-BASELINE-UNHEALTHY", Level.WARN, baseline_unhealthy, "compare", chart="loss"),
)
"""compare's rules, in the order they run; :mod:`trainproof.checks.registry` names them, imported when compare judges."""
