"""What every reader of a training log shares: the protocol, value parsing, and the run builder."""

from __future__ import annotations

import math
import re
import reprlib
from collections.abc import Callable, Hashable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from trainproof.io.errors import InputError
from trainproof.runs.model import Checkpoint, DeferredStepLines, Run, Series, StepLines
from trainproof.runs.readers.names import unjudged_note

if TYPE_CHECKING:
    from trainproof.runs.readers.names import Names

Value = object

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_INTEGER = re.compile(r"[+-]?[0-9]+")


class LineParser(Protocol):
    """A line-oriented log parsed as it is written: ``trainproof watch`` feeds it each complete line, in order, and
    builds a Run whenever it judges (``copy=False``: a snapshot of views, see :meth:`RunBuilder.build`)."""

    builder: RunBuilder

    def feed(self, line: str, number: int) -> None: ...

    def build(self, copy: bool = True) -> Run: ...


Entries = list[tuple[str, bool]]
"""A folder's visible entries as the folder search lists them: each name, and whether it is a folder."""


class Reader(Protocol):
    """One log format. ``sniff`` looks at the first bytes; ``read`` parses the whole log.

    A reader module states only what its format does; :class:`ReaderModule`
    gives the rest the defaults of a single-file format found by its content
    (see :class:`SingleFile`). What is known of a format without importing
    its reader (the names a trainer gives its log, the suffixes read by
    content, whether it knows folder layouts or binary files) is its row of
    ``READERS`` (:class:`~trainproof.runs.readers.Format`): the folder
    methods are asked only of a reader whose row says ``folders``, and
    ``sniff_bytes`` only of one whose row says ``binary``.
    """

    name: str
    description: str

    @property
    def line_parser(self) -> Callable[..., LineParser] | None:
        """Makes the LineParser of a log at a path; None for a format read whole (a JSON document, binary records),
        which ``watch`` reads again whenever it changes. A module attribute: read-only here so that a class fits."""

    def sniff(self, path: Path, head: str) -> bool: ...

    def sniff_bytes(self, path: Path, head: bytes) -> bool:
        """Whether a binary file (NUL bytes in its first 4 KiB) is a log of this format."""

    def read(self, path: Path, names: Names = ...) -> Run: ...

    def nested_log(self, directory: Path) -> Path | None:
        """This format's log one level down in a run directory (an HF output folder's latest checkpoint), or None."""

    def is_run_dir(self, path: Path) -> bool:
        """Whether the directory is one run of this format, read as a whole."""

    def run_files(self, path: Path) -> list[Path]:
        """The files that make a run directory of this format (what ``epoch`` reads of it)."""

    def holds_run(self, folder: Path, entries: Entries) -> bool:
        """Whether a folder search takes ``folder`` for one run of this format, beyond a file of its row's names in it
        (an MLflow run's ``metrics/`` beside its ``meta.yaml``); it may look only at ``entries`` and what is below them."""

    def holds_measurements(self, head: str, whole: bool) -> bool:
        """Whether a file of one of its row's suffixes that ``sniff`` takes holds a log's measurements, not a data table;
        ``whole`` says ``head`` is the whole file."""


class SingleFile:
    """The protocol's defaults: a single-file format, found by its content, whose run is no directory."""

    line_parser = None

    @staticmethod
    def sniff_bytes(path: Path, head: bytes) -> bool:
        return False

    @staticmethod
    def nested_log(directory: Path) -> Path | None:
        return None

    @staticmethod
    def is_run_dir(path: Path) -> bool:
        return False

    @staticmethod
    def run_files(path: Path) -> list[Path]:
        return []

    @staticmethod
    def holds_run(folder: Path, entries: Entries) -> bool:
        return False

    @staticmethod
    def holds_measurements(head: str, whole: bool) -> bool:
        return True


class ReaderModule:
    """A reader module as a :class:`Reader`: what the module defines, else :class:`SingleFile`'s default."""

    def __init__(self, module: object) -> None:
        self.module = module
        self.__doc__ = module.__doc__  # the format's documentation (the README's formats table)

    def __getattr__(self, member: str) -> object:
        try:
            return getattr(self.module, member)
        except AttributeError:
            if member.startswith("_"):
                raise
            return getattr(SingleFile, member)

    def __repr__(self) -> str:
        return f"<reader {getattr(self.module, 'name', '?')}>"


def _shown(value: Value) -> str:
    """A logged value quoted for a message: short, and with control characters escaped by repr."""
    text = value.strip() if isinstance(value, str) else reprlib.repr(value)
    return repr(text if len(text) <= 40 else text[:40] + "...")


def parse_step(value: Value, path: Path | str, where: str = "", what: str = "step") -> int | None:
    """A logged step (or epoch, or step count) as an int; None when it is missing (the empty cell of a sparse row).

    A step indexes int64 arrays and orders the run, so anything else -- NaN,
    infinity, a fraction, a word, a number beyond int64 -- is an InputError
    naming where it is and what it says, never a silent truncation or an
    OverflowError further down. ``where`` is ``line 3``, ``record 2``, ...
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    number = _whole(value)
    problem = "is not a whole number"
    if number is not None:
        if INT64_MIN <= number <= INT64_MAX:
            return number
        problem = f"is out of range (a {what} fits in 64 bits)"
    raise InputError(path, f"{where + ': ' if where else ''}the {what} {_shown(value)} {problem}")


def _whole(value: Value) -> int | None:
    """The whole number a value spells, however large (capped beyond int64); None when it is not one."""
    if isinstance(value, str):
        text = value.strip()
        if _INTEGER.fullmatch(text):
            return int(text) if len(text) <= 20 else INT64_MAX + 1  # int() refuses thousands of digits
        try:
            value = float(text)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    return int(value)


def parse_number(value: Value) -> tuple[float, str | None] | None:
    """A logged value as a float, keeping what is not a finite number as evidence.

    Returns None for a missing value (None, empty cell). A value that is not a
    number at all (``"n/a"``, ``"error"``) comes back as NaN with its text, so a
    check can cite it; ``NaN`` and ``Infinity`` come back as themselves, and an
    integer too large for a float as an infinity.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return math.nan, str(value)
    if isinstance(value, int):
        try:
            return float(value), None
        except OverflowError:
            return (math.inf if value > 0 else -math.inf), None
    if isinstance(value, float):
        return value, None
    if not isinstance(value, str):  # a list or an object: its text, bounded however large or deep it is
        return math.nan, reprlib.repr(value)[:40]
    text = value.strip()
    if not text:
        return None
    try:
        return float(text), None
    except ValueError:
        return math.nan, text[:40]


def parse_timestamp(value: Value) -> float | None:
    """Seconds on some absolute or relative clock, from a number or an ISO-8601 string.

    Numbers above 1e11 are taken as milliseconds since the epoch (MLflow,
    JavaScript), above 1e14 as microseconds.
    """
    parsed = parse_number(value)
    if parsed is not None and parsed[1] is None:
        seconds = parsed[0]
        if not math.isfinite(seconds):
            return None
        if seconds > 1e14:
            return seconds / 1e6
        if seconds > 1e11:
            return seconds / 1e3
        return seconds
    if isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return None
        if moment.tzinfo is None:  # only differences matter; keep them zone-independent
            moment = moment.replace(tzinfo=timezone.utc)
        return moment.timestamp()
    return None


RESUMES_AT_MOST = 3
"""A series whose steps go back at most this many times (or RESUME_SHARE of its points, if more) may have been
resumed or restarted that often: see :func:`last_per_step`. Steps that go back more often are out of order."""
RESUME_SHARE = 0.05


def last_per_step(steps: np.ndarray) -> np.ndarray | None:
    """What keeps one value per step of a series whose steps are in the order they were logged, steps ascending: a
    mask or positions in step order; None when the steps already rise strictly. Each step's last value is kept, and
    when the run was resumed or restarted, only its last timeline.

    A run resumed from a checkpoint at step 400 (or restarted at step 0) logs its steps again from there: what it
    logged before at those steps, and at any step after them, is a history that was abandoned, not the run's. Keeping
    the old points past the last step logged again made one curve of two runs (a restarted, healthy run at steps
    0-200, then the diverged run it replaced at steps 200-500, judged as diverged). A step goes back for a resumption
    when the next step logged is no further than the steps logged before it (the run logs them again), and at most
    RESUMES_AT_MOST times (or RESUME_SHARE of the steps); a lone point out of order (the last point too), or steps
    that go back more often, are sorted in with the last value of each step kept.
    """
    if steps.size < 2 or not bool(np.any(steps[1:] < steps[:-1])):  # never goes back: no resumption
        return one_of_each(steps, last=True)
    stretches = np.flatnonzero(np.append(steps[1:] != steps[:-1], True))  # the last point of each stretch of one step
    return stretches[_timeline(steps[stretches])]


class StepCuts:
    """:func:`last_per_step` worked out once per steps array that several series share (the series of one kind of
    record share their steps: cut once, the cut shared). Given ``shared`` arrays, steps cut equal to one of them, or to
    steps cut before, are that array: equal steps, one array."""

    __slots__ = ("_done", "_shared")

    def __init__(self, shared: list[np.ndarray] | None = None) -> None:
        self._done: dict[Hashable, tuple[np.ndarray | None, np.ndarray, np.ndarray]] = {}
        self._shared = shared

    def cut(self, key: Hashable, steps: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
        """What keeps one value per step of ``steps`` (:func:`last_per_step`) and the steps it leaves, worked out on the
        first call with ``key`` (an array's id will do: the steps are held, so it is not reused)."""
        found = self._done.get(key)
        if found is None:
            keep = last_per_step(steps)
            kept = steps if keep is None else steps[keep]
            if self._shared is not None:
                same = next((s for s in self._shared if s.size == kept.size and np.array_equal(s, kept)), None)
                if same is None:
                    self._shared.append(kept)
                else:
                    kept = same
            found = self._done[key] = (keep, kept, steps)
        return found[0], found[1]


def _timeline(steps: np.ndarray) -> np.ndarray:
    """:func:`last_per_step` of steps that go back somewhere and never repeat the step before them: positions, in
    step order."""
    kept: np.ndarray | None = None
    rewinds = np.flatnonzero(steps[1:] < steps[:-1]) + 1
    if rewinds.size <= max(RESUMES_AT_MOST, int(RESUME_SHARE * steps.size)):
        highest = np.maximum.accumulate(steps)
        after = np.minimum(rewinds + 1, steps.size - 1)
        # a resumption logs on from where it went back, below the highest step before: a last point alone is one
        # stray value (MLflow's log_metric without a step logs at step 0), sorted in, not a new run
        resumes = rewinds[(rewinds < steps.size - 1) & (steps[after] <= highest[rewinds - 1])]
        if resumes.size:
            # a point is left out when a resumption after it logs its step or an earlier one: each point against the
            # lowest step a resumption logs after it, the minimum of every suffix, in one backwards pass
            cuts = np.full(steps.size + 1, INT64_MAX, dtype=np.int64)
            cuts[resumes] = steps[resumes]
            lowest_after = np.minimum.accumulate(cuts[::-1])[::-1][1:]
            last = int(resumes[-1])  # from the last resumption on, no point has one after it, whatever its step
            kept = np.concatenate((np.flatnonzero(steps[:last] < lowest_after[:last]), np.arange(last, steps.size)))
            steps = steps[kept]
            if bool(np.all(steps[1:] > steps[:-1])):
                return kept
    keep = one_of_each(steps, last=True)  # out of order: sorted, the last value of each step kept
    if keep is None:
        return np.arange(steps.size) if kept is None else kept
    return keep if kept is None else kept[keep]


def one_of_each(steps: np.ndarray, last: bool) -> np.ndarray | None:
    """What keeps one entry of each step (its last, or its first, in the order given), steps ascending: a mask when
    the steps never step back (an eval record beside the training one repeats a step: no sort needed), else the
    positions in step order; None when the steps already rise strictly. Comparisons only, no differences: at ten
    million steps each difference is an 80 MB array."""
    if steps.size < 2:
        return None
    later, earlier = steps[1:], steps[:-1]
    if bool(np.all(later > earlier)):
        return None
    if bool(np.all(later >= earlier)):
        changes = later != earlier
        return np.append(changes, True) if last else np.insert(changes, 0, True)
    order = np.argsort(steps, kind="stable")
    ordered = steps[order]
    changes = ordered[1:] != ordered[:-1]
    return order[np.append(changes, True) if last else np.insert(changes, 0, True)]


class GrowingSeries:
    """Append-only ``(step, value)`` columns with amortised O(1) appends.

    Steps normally arrive in order. The same step again overwrites the last
    value; an earlier step (a resumed or restarted run, or steps out of order)
    marks the series to be cut to one value per step when it is frozen (see
    :func:`last_per_step`).
    """

    __slots__ = ("_steps", "_values", "n", "_ordered", "raw")

    def __init__(self, capacity: int = 64) -> None:
        self._steps = np.empty(capacity, dtype=np.int64)
        self._values = np.empty(capacity, dtype=np.float64)
        self.n = 0
        self._ordered = True
        self.raw: dict[int, str] = {}

    def append(self, step: int, value: float, raw: str | None = None) -> None:
        n = self.n
        if n and step <= self._steps[n - 1]:
            if step == self._steps[n - 1]:
                self._values[n - 1] = value
                self._note_raw(step, raw)
                return
            self._ordered = False
        if n == self._steps.size:
            self._steps = np.concatenate([self._steps, np.empty(n, dtype=np.int64)])
            self._values = np.concatenate([self._values, np.empty(n, dtype=np.float64)])
        self._steps[n] = step
        self._values[n] = value
        self.n = n + 1
        self._note_raw(step, raw)

    def _note_raw(self, step: int, raw: str | None) -> None:
        if raw is not None:
            self.raw[step] = raw
        elif self.raw:
            self.raw.pop(step, None)

    def freeze(self, copy: bool = True) -> Series:
        """The series so far; ``copy=False`` gives views for a live snapshot."""
        steps, values = self._steps[: self.n], self._values[: self.n]
        if not self._ordered:
            keep = last_per_step(steps)
            steps, values = steps[keep], values[keep]  # each step's last value, of the last timeline
            raw = {}
            if self.raw:  # a few steps' texts: looked up in the steps kept, not a set of them all
                wanted = np.fromiter(self.raw, dtype=np.int64, count=len(self.raw))
                raw = {step: self.raw[step] for step, inside in zip(wanted.tolist(), np.isin(wanted, steps).tolist()) if inside}
            return Series(steps, values, raw)
        if copy:
            steps, values = steps.copy(), values.copy()
        return Series(steps, values, dict(self.raw) if self.raw else {})


class RunBuilder:
    """Collects ``(series, step, value)`` triples from a reader and freezes them into a Run.

    The same builder serves a whole-file read and a live one (``watch``, the
    HF callback): appends are amortised O(1), and ``build(copy=False)`` makes
    a snapshot from views without copying the history.
    """

    def __init__(self, path: Path | str, fmt: str) -> None:
        self.path = path
        self.format = fmt
        self._series: dict[str, GrowingSeries] = {}
        self.checkpoints: list[Checkpoint] = []
        self.notes: list[str] = []
        self.lines: dict[int, int] = {}
        self.step_lines: StepLines | DeferredStepLines | None = None
        """The lines of a columnar read, set whole (``lines`` is the record-at-a-time path's)."""
        self._frozen: dict[str, Series] = {}
        self.runtime_s: float | None = None
        self.max_steps: int | None = None
        self.nonfinite_added = 0
        """How many non-finite values were added so far: a live judge looks at once when it grows."""

    def mark_line(self, step: int, line: int) -> None:
        """Remember the first line (1-based) where a record of ``step`` appears."""
        self.lines.setdefault(step, line)

    def add(self, series: str, step: int, value: Value) -> float | None:
        """Record one logged value; returns it as a float (None when the cell was empty)."""
        parsed = parse_number(value)
        if parsed is None:
            return None
        number, raw = parsed
        column = self._series.get(series)
        if column is None:
            column = self._series[series] = GrowingSeries()
        column.append(step, number, raw)
        if not math.isfinite(number):
            self.nonfinite_added += 1
        return number

    def add_time(self, step: int, seconds: float | None) -> None:
        if seconds is not None:
            self.add("wall_time", step, seconds)

    def put(self, series: str, values: Series) -> None:
        """A whole series at once (a columnar read): steps ascending and unique. Its arrays become the Run's; build
        writes only into a ``wall_time`` series' values (the clock shifted to zero), so that one must be the reader's
        own, while steps may be shared between series."""
        self._frozen[series] = values

    def names(self) -> list[str]:
        return list(self._series) + list(self._frozen)

    def series(self, name: str, copy: bool = True) -> Series | None:
        if name in self._frozen:
            found = self._frozen[name]
            return found if len(found) else None
        column = self._series.get(name)
        if column is None or column.n == 0:
            return None
        return column.freeze(copy)

    def build(
        self,
        *,
        loss: str = "loss",
        loss_name: str | None = None,
        eval_names: Mapping[str, str] | None = None,
        metrics: Mapping[str, tuple[str, str]] | None = None,
        sources: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
        copy: bool = True,
        **meta: object,
    ) -> Run:
        """Freeze into a Run.

        ``loss`` is the key of the series that is the training loss and
        ``loss_name`` what the log calls it; ``eval_names`` maps series keys to
        eval-set names; ``sources`` maps a Run field (``learning_rate``, ...)
        to the series key that holds it when that is not the field's own name;
        ``labels`` maps series keys to what the log calls them, for messages.
        ``copy=False`` makes a live snapshot: its series are views of the
        builder's buffers, valid as long as nothing earlier than the last step
        is logged again.

        A series in which no value is a number (``lorem``, ``ipsum``) is not a
        metric: as the loss it is an InputError, any other is left out with a
        note. One with numbers among its words keeps the words as NaN evidence.
        """
        keys = dict(sources or {})
        metrics = dict(metrics or {})
        names = {**dict(labels or {}), **dict(eval_names or {}), **{k: label for k, (label, _) in metrics.items()}, loss: loss_name or loss}
        notes = list(self.notes)

        def get(field: str) -> Series | None:
            key = keys.get(field, field)
            found = self.series(key, copy)
            words = _words(found)
            if words is None:
                return found
            label = names.get(key, field)
            if key == loss:
                raise InputError(self.path, f"has a loss column '{label}' that holds no number ({words}): not a training loss")
            notes.append(f"'{label}' holds no number ({words}) and was left out")
            return None

        wall = get("wall_time")
        if wall is not None and len(wall):  # the clock from zero: in place in a copy of the builder's own (or a put array)
            start = float(wall.values.min())
            wall = Series(wall.steps, np.subtract(wall.values, start, out=wall.values if copy else None))
        loss_series = get(loss)
        evals = {label: s for key, label in (eval_names or {}).items() if (s := get(key)) is not None}
        eval_metrics, metric_goals, unjudged = metric_fields({label: (get(key), goal) for key, (label, goal) in metrics.items()})
        notes.extend(unjudged)
        meta.setdefault("runtime_s", self.runtime_s)
        meta.setdefault("max_steps", self.max_steps)
        return Run(
            path=str(self.path),
            format=self.format,
            loss=loss_series,
            eval_losses=evals,
            eval_metrics=eval_metrics,
            metric_goals=metric_goals,
            learning_rate=get("learning_rate"),
            grad_norm=get("grad_norm"),
            wall_time=wall,
            step_time=get("step_time"),
            loader_time=get("loader_time"),
            checkpoints=tuple(sorted(self.checkpoints, key=lambda c: (c.step, c.best, c.path))),
            loss_name=loss_name or loss,
            notes=tuple(notes),
            step_lines=(self.step_lines if self.step_lines is not None else StepLines.from_dict(self.lines)) if copy else self.lines,
            **meta,  # type: ignore[arg-type]
        )


def metric_fields(found: Mapping[str, tuple[Series | None, str]]) -> tuple[dict[str, Series], dict[str, str], list[str]]:
    """A Run's ``eval_metrics`` and ``metric_goals`` from each eval metric's name to its series (None when it has none)
    and goal, sorted by name; and the note naming those whose goal is ``unknown`` (read by no rule), if any."""
    judged = {name: pair for name, pair in sorted(found.items()) if pair[1] != "unknown" and pair[0] is not None}
    note = unjudged_note(name for name, (_, goal) in found.items() if goal == "unknown")
    return {name: series for name, (series, _) in judged.items()}, {name: goal for name, (_, goal) in judged.items()}, [note] if note else []  # type: ignore[misc]


def _words(series: Series | None) -> str | None:
    """The first words of a series with no number in it, quoted for a message; None when it has a number (or is absent)."""
    if series is None or len(series.raw) < len(series):
        return None
    raw = series.raw
    texts: dict[str, None] = {}
    for step in series.steps.tolist():
        text = raw.get(step)
        if text is None:
            return None
        texts.setdefault(text, None)
    shown = [repr(t) for t in list(texts)[:3]]
    return ", ".join(shown[:2]) + (", ..." if len(shown) > 2 else "")


_NUMBER_VALUE = re.compile(r'"([^"\\\n]{1,200})"\s*:\s*(?=-?[0-9]|NaN|-?Infinity)')
"""A key with a number for its value, wherever it is nested (a key quoted inside a string value has its quotes escaped)."""


def number_keys(head: str) -> list[str]:
    """The keys with a number for their value in a JSON text's first bytes, in order, each as often as it occurs."""
    return _NUMBER_VALUE.findall(head)
