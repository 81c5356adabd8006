"""Every number a rule compares against, in one place, with its unit.

Rules read these through a :class:`Thresholds` instance so that a
configuration can override any of them by the same name. Nothing else in the
package hard-codes a threshold.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields


def _t(default: float | int, unit: str, doc: str):  # noqa: ANN202 - dataclass field factory
    return field(default=default, metadata={"unit": unit, "doc": doc})


@dataclass(frozen=True)
class Thresholds:
    # --- how a noisy curve is summarised -------------------------------------
    MIN_TREND_POINTS: int = _t(5, "points", "Fewer finite training-loss points than this and no curve rule runs.")
    HEAD_POINTS: int = _t(3, "points", "The start level is the median of this many first finite loss points.")
    TAIL_SHARE: float = _t(0.1, "fraction of points", "The end level is the median of this last share of the points (at least HEAD_POINTS).")
    SEGMENTS: int = _t(20, "segments", "The curve is summarised by the medians of at most this many equal-count segments.")
    MIN_SEGMENT_POINTS: int = _t(3, "points", "Each segment holds at least this many points.")
    NOISE_SIGMAS: float = _t(4.0, "robust sigmas", "A change smaller than this many robust noise sigmas (of log loss, for a positive loss) is noise.")

    # --- divergence, dead runs, flat and zero loss ---------------------------
    DIVERGE_START_RATIO: float = _t(1.5, "x start level", "The loss diverged when its end level is at least this many times its start level.")
    DIVERGE_BEST_RATIO: float = _t(2.0, "x best level", "The loss diverged when its end level is at least this many times its best level...")
    DIVERGE_GIVEBACK_SHARE: float = _t(0.25, "fraction of the gain", "...and the rise since the best gave back at least this share of what the run had gained before it.")
    DEAD_MIN_IMPROVEMENT: float = _t(0.05, "fraction of head level", "A run whose end level is not this share below its head level learned nothing...")
    DEAD_TREND_T: float = _t(3.0, "t statistic", "...nor one whose fall is weaker than this t of the rank correlation between step and loss.")
    FLAT_SAME_SHARE: float = _t(0.9, "fraction of points", "The loss is flat when this share of its points carry the very same value.")
    ZERO_MIN_POINTS: int = _t(3, "points", "A run of exact zeros to the end of the log must hold at least this many points.")
    ZERO_ROUNDING_FLOOR: float = _t(1e-3, "loss units", "Zeros that follow losses already below this are taken as log rounding of a converged loss, not a masked loss.")

    # --- plateau -------------------------------------------------------------
    PLATEAU_GAIN: float = _t(0.05, "fraction of level", "After the plateau step the loss improved by less than this share of its level.")
    PLATEAU_MIN_SHARE: float = _t(0.3, "fraction of the run", "A plateau is reported when it covers at least this share of the run's steps.")
    PLATEAU_WARN_S: float = _t(3600.0, "seconds", "A plateau longer than this in wall-clock time is a WARN; shorter, or of unknown length, an INFO note.")

    # --- learning rate -------------------------------------------------------
    LR_ZERO_FAIL_SHARE: float = _t(0.95, "fraction of logged steps", "A learning rate of exactly 0 on at least this share of logged steps is a FAIL.")
    LR_ZERO_WARN_SHARE: float = _t(0.25, "fraction of logged steps", "A learning rate of exactly 0 on at least this share of logged steps is a WARN.")
    LR_ZERO_TAIL_MIN_POINTS: int = _t(3, "points", "A learning rate of 0 from some step to the end, over at least this many points...")
    LR_ZERO_TAIL_MIN_SHARE: float = _t(0.05, "fraction of logged steps", "...and at least this share of the logged steps, is a WARN.")

    # --- spikes --------------------------------------------------------------
    SPIKE_NEIGHBOURS: int = _t(5, "points", "A spike is judged against the medians of this many points before it and after it.")
    GRAD_SPIKE_RATIO: float = _t(10.0, "x local median", "A gradient norm at least this many times the higher of its two neighbour medians is a spike.")
    LOSS_SPIKE_RATIO: float = _t(2.0, "x local median", "A loss at least this many times the higher of its two neighbour medians...")
    LOSS_SPIKE_SIGMAS: float = _t(10.0, "robust sigmas", "...and this many robust noise sigmas above it is a spike that recovered.")
    SPIKE_MIN_POINTS: int = _t(8, "points", "Fewer points than this and the spike rules do not run.")

    # --- eval loss -----------------------------------------------------------
    OVERFIT_MIN_EVALS: int = _t(4, "evaluations", "An eval-loss series with fewer points than this is not judged for overfitting.")
    OVERFIT_RISE: float = _t(0.1, "fraction of best eval loss", "Eval loss that ends this share above its minimum has climbed...")
    OVERFIT_MIN_EVALS_AFTER_BEST: int = _t(2, "evaluations", "...over at least this many evaluations after the best one.")

    # --- speed ---------------------------------------------------------------
    STEP_TIME_CLIFF_RATIO: float = _t(2.0, "x earlier median", "Seconds per step at least this many times the earlier median, sustained, is a cliff.")
    STEP_TIME_CLIFF_MIN_SHARE: float = _t(0.1, "fraction of points", "The slow stretch must cover at least this share of the timed points.")
    LOADER_BOUND_SHARE: float = _t(0.5, "fraction of step time", "Data loading taking at least this share of each step makes the run loader-bound.")

    # --- compare -------------------------------------------------------------
    CMP_FLOOR_RATIO: float = _t(1.5, "x baseline floor", "A best loss level at least this many times the baseline's is a FAIL.")
    CMP_END_RATIO: float = _t(1.25, "x baseline end", "An end loss level at least this many times the baseline's is a WARN.")
    CMP_IMPROVEMENT_SHARE: float = _t(0.5, "fraction of baseline improvement", "Improving by less than this share of what the baseline improved is a WARN.")
    CMP_GRAD_SCALE_RATIO: float = _t(10.0, "x baseline median", "A median gradient norm this many times larger (or smaller) than the baseline's is a WARN.")
    CMP_LR_ZERO_SHARE: float = _t(0.5, "fraction of logged steps", "A learning rate of 0 on this share of steps where the baseline's was not is a FAIL.")

    def with_overrides(self, overrides: dict[str, float | int]) -> Thresholds:
        from dataclasses import replace

        return replace(self, **overrides)


@dataclass(frozen=True)
class ThresholdInfo:
    name: str
    default: float | int
    type: type
    unit: str
    doc: str


def describe() -> tuple[ThresholdInfo, ...]:
    """Every threshold with its default, type, unit and meaning, in declaration order."""
    out = []
    for f in fields(Thresholds):
        kind = int if f.type in (int, "int") else float
        out.append(ThresholdInfo(f.name, f.default, kind, f.metadata["unit"], f.metadata["doc"]))
    return tuple(out)


DEFAULTS = Thresholds()
