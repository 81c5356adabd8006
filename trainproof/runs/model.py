"""What a reader hands to the checks: a training run as numpy series keyed by step.

Readers build these; checks and renderers only read them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np


@dataclass(frozen=True, eq=False)
class Series:
    """One metric over steps: ``steps`` ascending and unique, ``values`` as float64.

    A value that was logged but is not a finite number (``NaN``, ``Infinity``,
    a string such as ``"nan"`` or ``"n/a"``) is kept as a non-finite float so
    that checks see it as evidence; ``raw`` remembers the text of values that
    were not numbers at all, by step.
    """

    steps: np.ndarray
    values: np.ndarray
    raw: Mapping[int, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.steps.shape != self.values.shape:
            raise ValueError("steps and values must have the same shape")

    def __len__(self) -> int:
        return int(self.values.size)

    @property
    def finite(self) -> np.ndarray:
        return np.isfinite(self.values)

    def finite_part(self) -> Series:
        """The finite points; the series itself when every point is one (rules ask for it often, and a million points
        copied twice each time add up)."""
        keep = self.finite
        if not self.raw and bool(keep.all()):
            return self
        return Series(self.steps[keep], self.values[keep])


class _LinesByStep(Mapping[int, int]):
    """A mapping of step to line whose ``get`` does the work (a KeyError is a step it has no line for)."""

    def __getitem__(self, step: int) -> int:
        found = self.get(step)
        if found is None:
            raise KeyError(step)
        return found

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, eq=False)
class StepLines(_LinesByStep):
    """The log line where each step's record starts, as two sorted arrays (a dict of ten million steps would take a GiB)."""

    steps: np.ndarray
    lines: np.ndarray

    def __iter__(self) -> Iterator[int]:
        return iter(self.steps.tolist())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and self.as_dict() == dict(other.items())

    @classmethod
    def from_dict(cls, lines: Mapping[int, int]) -> StepLines:
        steps = np.fromiter(lines, dtype=np.int64, count=len(lines))
        order = np.argsort(steps, kind="stable")
        return cls(steps[order], np.fromiter(lines.values(), dtype=np.int64, count=len(lines))[order])

    def get(self, step: int, default: int | None = None) -> int | None:  # type: ignore[override]  # Mapping.get's overloads; same behaviour
        at = int(np.searchsorted(self.steps, step))
        return int(self.lines[at]) if at < self.steps.size and self.steps[at] == step else default

    def __len__(self) -> int:
        return int(self.steps.size)

    def as_dict(self) -> dict[int, int]:
        return dict(zip(self.steps.tolist(), self.lines.tolist()))


class DeferredStepLines(_LinesByStep):
    """:class:`StepLines` worked out when asked for: a log's line of each step is evidence for findings only, and
    indexing a trainer_state.json of a million entries costs a quarter of judging it. ``find(step)`` looks up one
    step's line (a search of the text), for the first FINDS_BEFORE_INDEX steps asked about; ``index()`` makes the
    whole StepLines, once, after that or for anything else (iterating, comparing).

    The one piece of a :class:`Run` that changes after it is built: what it answers never does, only how it finds it.
    """

    FINDS_BEFORE_INDEX = 4

    def __init__(self, index: Callable[[], StepLines], find: Callable[[int], int | None] | None = None) -> None:
        self._index: Callable[[], StepLines] | None = index
        self._find = find
        self._finds = 0
        self._lines: StepLines | None = None

    @property
    def lines(self) -> StepLines:
        if self._lines is None:
            assert self._index is not None
            self._lines = self._index()
            self._index = self._find = None  # their inputs (the log's bytes) freed with them
        return self._lines

    def get(self, step: int, default: int | None = None) -> int | None:  # type: ignore[override]
        if self._lines is None and self._find is not None and self._finds < self.FINDS_BEFORE_INDEX:
            if step != int(step):  # no line is a fractional step's, as in the index
                return default
            self._finds += 1
            found = self._find(int(step))
            return default if found is None else found
        return self.lines.get(step, default)

    def __repr__(self) -> str:
        return f"DeferredStepLines({self._lines!r})" if self._lines is not None else "DeferredStepLines(not indexed yet)"

    def __iter__(self) -> Iterator[int]:
        return iter(self.lines)

    def __len__(self) -> int:
        return len(self.lines)

    def __eq__(self, other: object) -> bool:
        return self.lines == other


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint the trainer says it wrote. ``best`` marks a best-model record."""

    step: int
    path: str
    best: bool = False


@dataclass(frozen=True, eq=False)
class Run:
    """A training run as its log describes it.

    ``eval_losses`` maps each eval set's name (``eval_loss`` for the default
    one, ``eval_g0_loss`` for a named one) to its own series, logged on its own
    steps. ``eval_metrics`` maps each other eval metric the log names with a
    known better direction (``eval_wer``, ``eval_accuracy``) to its series, and
    ``metric_goals`` each of them to ``min`` (lower is better) or ``max``.
    ``wall_time`` is seconds since the first record when the log has
    timestamps; ``runtime_s`` is the whole run's duration when the log states
    it (HF ``train_runtime``). ``step_unit`` is ``"epoch"`` for logs that only
    count epochs (Keras ``CSVLogger``).
    """

    path: str
    format: str
    loss: Series | None = None
    eval_losses: Mapping[str, Series] = field(default_factory=dict)
    eval_metrics: Mapping[str, Series] = field(default_factory=dict)
    metric_goals: Mapping[str, str] = field(default_factory=dict)
    learning_rate: Series | None = None
    grad_norm: Series | None = None
    wall_time: Series | None = None
    step_time: Series | None = None
    loader_time: Series | None = None
    max_steps: int | None = None
    runtime_s: float | None = None
    checkpoints: tuple[Checkpoint, ...] = ()
    step_unit: str = "step"
    loss_name: str = "loss"
    notes: tuple[str, ...] = ()
    step_lines: StepLines | DeferredStepLines | Mapping[int, int] = field(default_factory=dict)

    def line_of(self, step: int) -> int | None:
        """The 1-based line of the log where the record of ``step`` starts, when the reader knows it."""
        return self.step_lines.get(int(step))

    @property
    def last_step(self) -> int | None:
        ends = [int(s.steps[-1]) for s in self._all_series() if len(s)]
        return max(ends) if ends else None

    @property
    def first_step(self) -> int | None:
        starts = [int(s.steps[0]) for s in self._all_series() if len(s)]
        return min(starts) if starts else None

    def _all_series(self) -> list[Series]:
        named = [self.loss, self.learning_rate, self.grad_norm]
        return [s for s in named if s is not None] + list(self.eval_losses.values())

    def seconds_per_step(self, min_points: int = 3) -> tuple[np.ndarray, np.ndarray, str] | None:
        """Seconds per step at each timed point, and where they came from; None without time.

        The log's clock comes first because it is what the run costs: a
        step-time column usually leaves out data loading, logging and evaluation.
        """
        if self.wall_time is not None and len(self.wall_time) > min_points:
            return (*self._clock_seconds_per_step, "timestamp differences")
        if self.step_time is not None:
            part = self.step_time.finite_part()
            if len(part) >= min_points:
                return part.steps, part.values, "the step-time column"
        return None

    @cached_property
    def _clock_seconds_per_step(self) -> tuple[np.ndarray, np.ndarray]:
        """Seconds per step from the log's clock, computed once: a speed rule and the timing chart both ask, and at
        ten million steps each answer is several arrays of 80 MB."""
        assert self.wall_time is not None, "asked only of a run with a clock"
        steps, clock = self.wall_time.steps, self.wall_time.values
        d_step, d_time = np.diff(steps), np.diff(clock)
        ok = (d_step > 0) & (d_time >= 0)
        if bool(ok.all()) and d_time.dtype == np.float64:  # as a clock runs: nothing picked out, the quotient in place
            return steps[1:], np.divide(d_time, d_step, out=d_time)
        return steps[1:][ok], d_time[ok] / d_step[ok]

    def checkpoint_nearest(self, step: int) -> Checkpoint | None:
        if not self.checkpoints:
            return None
        return min(self.checkpoints, key=lambda c: (abs(c.step - step), not c.best, c.step))
