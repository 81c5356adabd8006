"""Named-column logs read as whole columns: the Run that :class:`~trainproof.runs.readers.columns.RecordParser` builds a
record at a time, built from blocks of records without Python work per record.

A reader hands :class:`ColumnarRun` one :class:`Block` after another (the records of a stretch of the file, each
column an array, each record's line number in an int array), in file order. Every rule of the record-at-a-time path
holds over the columns: a record's series come from the first of its own columns that carries them (a Lightning row
with ``train_loss_step`` and one with only ``train_loss_epoch`` each give a point), the step axis is the first
record's, a step that is no whole int64 number is an error naming its line, a value that is no number is kept as
evidence, the same step logged again keeps its last value, and a step's line is the first where it appears.
Values that are not plain numbers (text, booleans) go through the same Python functions the line path uses,
one value at a time: they are rare, and the exact semantics matter more there than speed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TypeVar

import numpy as np

from trainproof.runs.model import DeferredStepLines, Run, Series, StepLines
from trainproof.runs.readers.base import RunBuilder, StepCuts, one_of_each, parse_number, parse_step, parse_timestamp
from trainproof.runs.readers.columns import METRICS, finish, metric_columns
from trainproof.runs.readers.names import Names

LARGE_BYTES = 4 * 2**20
"""A log at least this large is read as columns (the parser's import costs more than it saves on a smaller one)."""

SPECIAL_FLOATS = re.compile(rb"-?Infinity|NaN")
"""How Python's json writes non-finite floats, which polars and orjson refuse. Quoted, they are read as text, which
parse_number turns back into the same floats."""


def size_of(path: Path) -> int:
    """A log's size in bytes; 0 when it cannot be looked at (the line reader then says what is wrong with it)."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def is_large(path: Path) -> bool:
    return size_of(path) >= LARGE_BYTES


def as_columns(path: Path, parser: str, columnar: bool | None, read: Callable[[], Run | None]) -> Run | None:
    """``read()``, the log read as columns, when ``columnar`` asks for it or (None) when the log is large and its
    fast ``parser`` is installed; None when it is not, or when ``read`` leaves the log to the slow reader."""
    if columnar is None:
        columnar = is_large(path) and importable(parser)
    return read() if columnar else None

T = TypeVar("T")


def moved(keyed: Mapping[int, T], taken: np.ndarray) -> dict[int, T]:
    """``keyed`` (values by position in an array) re-keyed by position in ``array[taken]``; those not taken dropped.

    The inverse of ``taken`` is built with numpy, so re-keying a few values of a million-row array costs no Python
    work per row.
    """
    if not keyed or not taken.size:
        return {}
    if taken.dtype == np.bool_:  # a mask of the kept positions
        taken = np.flatnonzero(taken)
    inverse = np.full(max(int(taken.max()), max(keyed)) + 1, -1, dtype=np.int64)
    inverse[taken] = np.arange(taken.size)
    return {int(inverse[at]): value for at, value in keyed.items() if inverse[at] >= 0}


def importable(module: str) -> bool:
    """Whether an optional fast parser (polars, orjson) is installed; without it every log is read the slow way."""
    try:
        __import__(module)
    except ImportError:
        return False
    return True


@dataclass(frozen=True, eq=False)
class Column:
    """One key of a block's records. ``has`` marks the records that have the key; where every value present is a
    number, ``numbers`` holds them (float64) and ``ints`` too when they are all integers (exact, for steps);
    otherwise ``objects`` holds each record's value (None where absent)."""

    has: np.ndarray
    numbers: np.ndarray | None = None
    ints: np.ndarray | None = None
    objects: Sequence[object] | None = None
    odd: Mapping[int, object] | None = None
    """With ``numbers``: the records whose value is no plain number (text such as ``"nan"``), by row."""
    empty: np.ndarray | None = None
    """The records that have the key with nothing in it (a CSV row's empty cell): no point, no step."""

    def split(self, rows: np.ndarray) -> tuple[np.ndarray, list[int], Callable[[int], object]]:
        """Of ``rows``, those whose value is a plain number (in ``numbers``), those to parse one at a time, and how to
        get one of those values."""
        if self.empty is not None:
            rows = rows[~self.empty[rows]]
        if self.numbers is None:
            assert self.objects is not None, "a column with no numbers holds its objects"
            return rows[:0], rows.tolist(), self.objects.__getitem__
        if not self.odd:
            return rows, [], self.numbers.__getitem__
        odd = np.fromiter(self.odd, dtype=np.int64, count=len(self.odd))
        slow = np.isin(rows, odd)
        return rows[~slow], rows[slow].tolist(), self.odd.__getitem__


@dataclass(frozen=True, eq=False)
class Block:
    """Consecutive records of a log: their line numbers, and their keys in first-seen order."""

    lines: np.ndarray
    columns: Mapping[str, Column]

    @property
    def rows(self) -> int:
        return int(self.lines.size)


def block_of_records(records: Sequence[Mapping[str, object]], lines: Sequence[int]) -> Block:
    """Records parsed one at a time (the path for a stretch the fast parser refused) as a Block."""
    keys: dict[str, None] = {}
    for record in records:
        keys.update(dict.fromkeys(record))
    missing = object()
    columns = {}
    for key in keys:
        values = [record.get(key, missing) for record in records]
        has = np.fromiter((v is not missing for v in values), dtype=bool, count=len(values))
        columns[key] = Column(has=has, objects=[None if v is missing else v for v in values])
    return Block(np.asarray(lines, dtype=np.int64), columns)


class _Growing:
    """An array appended to a block at a time, its buffer grown by half when full.

    Lists of per-block arrays joined at the end would hold every point twice at the join, and the allocator keeps the
    small blocks' memory once they are freed: at ten million steps that is the difference between 1 and 2 GiB.
    """

    def __init__(self, dtype: type, capacity: int) -> None:
        self.data: np.ndarray = np.empty(max(capacity, 1024), dtype=dtype)
        self.n = 0

    def extend(self, values: np.ndarray) -> None:
        need = self.n + values.size
        if need > self.data.size:
            grown = np.empty(max(need, self.data.size + self.data.size // 2), dtype=self.data.dtype)
            grown[: self.n] = self.data[: self.n]
            self.data = grown
        self.data[self.n : need] = values
        self.n = need

    def view(self) -> np.ndarray:
        return self.data[: self.n]


class _Part:
    """The points of one series: values, and their steps, which are the records' own (``steps is None``) while the
    series has a point on every record with a step; the text of values that were no number, by position.

    Series with the same points (loss, learning rate and gradient norm on the training records, between evaluation
    records) share one steps buffer: at ten million steps each copy would be 80 MB, written and faulted in for nothing.
    """

    def __init__(self, capacity: int) -> None:
        self.values = _Growing(np.float64, capacity)
        self.steps: _Growing | None = None
        self.raw: dict[int, str] = {}

    def add(
        self, steps: np.ndarray, rows: np.ndarray, values: np.ndarray, raw: Mapping[int, str], every: bool, records: _Growing, extended: list[_Extended]
    ) -> None:
        """The block's points: their ``steps``, their ``rows`` in the block, their ``values``. ``extended`` lists the
        steps buffers extended in this block so far, which a series with the same points and the same steps before
        takes."""
        before = self.values.n
        if self.steps is not None or not every or before != records.n:  # a point missing here, or a block passed over
            self.steps = _steps_for(self.steps, before, rows, steps, records, extended)
        for at, text in raw.items():
            self.raw[before + at] = text
        self.values.extend(values)


@dataclass(frozen=True, eq=False)
class _Extended:
    """A steps buffer extended in the current block: what it held before (the records' first ``before`` steps, or
    ``source``'s), the block's ``rows`` it took steps from, and the buffer."""

    source: _Growing | None
    before: int
    rows: np.ndarray
    buffer: _Growing


def _steps_for(current: _Growing | None, before: int, rows: np.ndarray, steps: np.ndarray, records: _Growing, extended: list[_Extended]) -> _Growing:
    """The steps buffer of a series whose ``before`` steps are ``current``'s (the records' when None), once the block's
    ``steps`` (at ``rows``) are added: one another series already made this block from the same, else ``current``
    extended (if no other series extended it this block), else a new one."""
    for done in extended:
        if done.source is current and done.before == before and np.array_equal(done.rows, rows):
            return done.buffer
    if current is not None and current.n == before and not any(done.buffer is current for done in extended):
        extended.append(_Extended(current, before, rows, current))
        current.extend(steps)
        return current
    buffer = _Growing(np.int64, max(before + steps.size, records.data.size))
    buffer.extend(records.view()[:before] if current is None else current.view()[:before])
    buffer.extend(steps)
    extended.append(_Extended(current, before, rows, buffer))
    return buffer


class ColumnarRun:
    """Blocks of named-column records into a Run, with the semantics of RecordParser."""

    def __init__(self, builder: RunBuilder, names: Names) -> None:
        self.builder = builder
        self.names = names
        self.step_unit: str | None = None
        self.columns: dict[str, None] = {}
        self.labels: dict[str, str] = {}
        self.loss_named: str | None = None
        self.metrics: dict[str, str] = {}
        """Each eval-metric column seen, to its goal."""
        self._records = 0
        self._parts: dict[str, _Part] = {}
        self._capacity = 0
        self._extended: list[_Extended] = []
        """The steps buffers extended in the block being fed (see _steps_for)."""
        self._record_steps: _Growing | None = None
        self._lines: _Growing | None = None
        """Each stored record's line; None while record k is on line k + 1 (a log of nothing but records), which is
        then not stored: at ten million records, 80 MB not written."""

    def expect(self, size: int, sample: int, records: int) -> None:
        """The log's size, and the bytes and records of its first block: about how many records it holds, so the
        buffers are allocated once. A first block of less than 1 MiB of lines, in a larger file, says nothing about
        the rest (zero bytes after a few lines would ask for GiBs), and is not used."""
        if sample >= min(size, 2**20) and records:
            self._capacity = max(self._capacity, int(size / sample * records * 1.05))

    def feed(self, block: Block) -> None:
        n = block.rows
        if n == 0:
            return
        self._extended = []
        self.columns.update(dict.fromkeys(block.columns))
        candidates = self.names.candidates(block.columns)
        chosen = {series: _first_present(names, block.columns, n) for series, names in candidates.items()}
        if self.step_unit is None:
            self.step_unit = next((unit for unit in ("step", "epoch") if unit in chosen and chosen[unit][0] >= 0), "record")
            if self.step_unit == "record":
                self.builder.notes.append("no step or epoch column: records are numbered in file order")
        if self.loss_named is None and "loss" in chosen:
            rows = np.flatnonzero(chosen["loss"] >= 0)
            if rows.size:
                self.loss_named = candidates["loss"][int(chosen["loss"][rows[0]])]
        steps, valid = self._steps(block, candidates, chosen)
        self._records += n
        at_steps = steps[valid]
        if self._record_steps is None:
            self._record_steps = _Growing(np.int64, self._capacity)
        self._store_lines(block.lines[valid] if not valid.all() else block.lines)
        for series in (*METRICS, "wall_time"):
            if series in chosen:
                self._series(series, block, candidates[series], chosen[series], steps, valid, at_steps)
        metrics = metric_columns(self.names, block.columns, {series: names[0] for series, names in candidates.items()})
        self.metrics.update(metrics)
        for column, goal in metrics.items():
            if goal != "unknown":
                self._series("metric:" + column, block, [column], _first_present([column], block.columns, n), steps, valid, at_steps)
        self._record_steps.extend(at_steps)

    def _store_lines(self, lines: np.ndarray) -> None:
        """The lines of the records stored from a block (rising), kept only once they stop being one per line."""
        stored = self._record_steps.n  # type: ignore[union-attr]
        if self._lines is None:
            if not lines.size or (int(lines[0]) == stored + 1 and int(lines[-1]) == stored + lines.size):
                return
            self._lines = _Growing(np.int64, self._capacity)
            self._lines.extend(np.arange(1, stored + 1, dtype=np.int64))
        self._lines.extend(lines)

    def _steps(self, block: Block, candidates: Mapping[str, list[str]], chosen: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Each record's step, and which records have one (a record with no step is no point)."""
        n = block.rows
        if self.step_unit == "record":
            return np.arange(self._records, self._records + n, dtype=np.int64), np.ones(n, dtype=bool)
        unit = self.step_unit or "step"
        steps = np.zeros(n, dtype=np.int64)
        valid = np.zeros(n, dtype=bool)
        which = chosen.get(unit)
        if which is None:
            return steps, valid
        path = self.builder.path
        problems: list[int] = []
        for k, name in enumerate(candidates[unit]):
            rows = np.flatnonzero(which == k)
            if not rows.size:
                continue
            column = block.columns[name]
            if column.ints is not None:
                if column.empty is not None:  # an empty cell is no step, not the 0 it was filled with
                    rows = rows[~column.empty[rows]]
                steps[rows] = column.ints[rows]
                valid[rows] = True
                continue
            plain, slow, value_at = column.split(rows)
            if plain.size:
                values = column.numbers[plain]  # type: ignore[index]
                whole = np.isfinite(values) & (np.abs(values) < 2.0**63)
                whole[whole] = values[whole] == np.floor(values[whole])
                steps[plain[whole]] = values[whole].astype(np.int64)
                valid[plain[whole]] = True
                problems.extend(plain[~whole].tolist()[:1])
            for row in slow:
                try:
                    step = parse_step(value_at(row), path, f"line {block.lines[row]}", unit)
                except Exception:
                    problems.append(row)
                    break
                if step is not None:
                    steps[row], valid[row] = step, True
        if problems:
            row = min(problems)
            name = candidates[unit][int(which[row])]
            column = block.columns[name]
            _, slow, value_at = column.split(np.array([row]))
            value = value_at(row) if slow else float(column.numbers[row])  # type: ignore[index]
            parse_step(value, path, f"line {block.lines[row]}", unit)  # raises, naming the line
        return steps, valid

    def _series(
        self, series: str, block: Block, names: list[str], which: np.ndarray, steps: np.ndarray, valid: np.ndarray, at_steps: np.ndarray
    ) -> None:
        """The points of one series in a block; ``at_steps`` are the steps of every record with one, which a series
        logged on every record shares rather than copies."""
        convert: Callable[[object], tuple[float, str | None] | None] = parse_number
        if series == "wall_time":
            convert = _timestamp
        picked_rows, picked_values, raw = [], [], {}
        first: tuple[int, str] | None = None
        for k, name in enumerate(names):
            rows = np.flatnonzero((which == k) & valid)
            if not rows.size:
                continue
            column = block.columns[name]
            plain, slow, value_at = column.split(rows)
            values = column.numbers[plain] if plain.size else np.empty(0)  # type: ignore[index]
            if series == "wall_time" and plain.size:
                keep = np.isfinite(values)
                plain, values = plain[keep], _seconds(values[keep])
            texts: dict[int, str] = {}
            if slow:
                kept, numbers = [], []
                for row in slow:
                    parsed = convert(value_at(row))
                    if parsed is None:
                        continue
                    if parsed[1] is not None:
                        texts[row] = parsed[1]
                    kept.append(row)
                    numbers.append(parsed[0])
                rows = np.concatenate([plain, np.asarray(kept, dtype=np.int64)])
                values = np.concatenate([values, np.asarray(numbers, dtype=np.float64)])
                order = np.argsort(rows, kind="stable")
                rows, values = rows[order], values[order]
            else:
                rows = plain
            if rows.size:
                picked_rows.append(rows)
                picked_values.append(values)
                raw.update(texts)
                if first is None or rows[0] < first[0]:
                    first = (int(rows[0]), name)
        if first is None:
            return
        rows = np.concatenate(picked_rows) if len(picked_rows) > 1 else picked_rows[0]
        values = np.concatenate(picked_values) if len(picked_values) > 1 else picked_values[0]
        if len(picked_rows) > 1:
            order = np.argsort(rows, kind="stable")
            rows, values = rows[order], values[order]
        if series != "wall_time":
            self.labels.setdefault(series, first[1])
        records = self._record_steps
        assert records is not None
        every = rows.size == at_steps.size
        part = self._parts.get(series)
        if part is None:
            part = self._parts[series] = _Part(self._capacity)
        part.add(at_steps if every else steps[rows], rows, values, moved(raw, rows), every, records, self._extended)

    def build(self, copy: bool = True) -> Run:
        records = self._record_steps.view() if self._record_steps is not None else np.empty(0, dtype=np.int64)
        lines = self._lines.view() if self._lines is not None else None
        cuts = StepCuts(shared=[records])  # equal steps of other buffers: one array
        for series in list(self._parts):
            part = self._parts.pop(series)
            values = part.values.view()
            # series sharing a steps buffer (by buffer and length) share their steps and what keeps one value per step
            steps = (records if part.steps is None else part.steps.view())[: values.size]  # a shared buffer may run on
            keep, steps = cuts.cut((part.steps, values.size), steps)
            raw: Mapping[int, str] = part.raw
            if keep is not None:
                values, raw = values[keep], moved(part.raw, keep)
            self.builder.put(series, Series(steps, values, {int(steps[at]): text for at, text in raw.items()}))
        # each step's first line, worked out when a finding asks (at ten million steps, two arrays of 80 MB)
        self.builder.step_lines = DeferredStepLines(partial(_first_lines_of, records, lines), partial(_first_line_of, records, lines))
        if self.loss_named is None:  # a loss column whose every value is null is still named, as the line path names it
            self.loss_named = next(iter(self.names.candidates(self.columns).get("loss", ())), None)
        loss = self.labels.get("loss")
        evals = self.labels.get("eval_loss")
        return finish(self.builder, loss, evals, self.loss_named, self.columns, self.labels, self.step_unit, copy, self.metrics)


def _first_present(names: Sequence[str], columns: Mapping[str, Column], n: int) -> np.ndarray:
    """Per record, the index in ``names`` of the first name it has (-1 for none)."""
    which = np.full(n, -1, dtype=np.int16)
    for k, name in enumerate(names):
        has = columns[name].has
        if k == 0:
            which[has] = 0
        else:
            which[(which < 0) & has] = k
    return which


def _timestamp(value: object) -> tuple[float, str | None] | None:
    seconds = parse_timestamp(value)
    return None if seconds is None else (seconds, None)


def _seconds(values: np.ndarray) -> np.ndarray:
    """Finite timestamps in seconds, as :func:`parse_timestamp` scales them (milliseconds above 1e11, microseconds above 1e14)."""
    return np.where(values > 1e14, values / 1e6, np.where(values > 1e11, values / 1e3, values))


def _first_lines_of(steps: np.ndarray, lines: np.ndarray | None) -> StepLines:
    """:func:`first_lines` of records on ``lines`` (None: record k on line k + 1)."""
    return first_lines([(steps, np.arange(1, steps.size + 1, dtype=np.int64) if lines is None else lines)])


def _first_line_of(steps: np.ndarray, lines: np.ndarray | None, step: int) -> int | None:
    """The line of the first record of ``step`` in file order, as :func:`first_lines` gives it: one comparison over
    the records, not an index of them all. ``lines`` None: record k is on line k + 1."""
    if not -(2**63) <= step < 2**63:
        return None
    found = np.flatnonzero(steps == step)
    if not found.size:
        return None
    return int(found[0]) + 1 if lines is None else int(lines[found[0]])


def first_lines(parts: list[tuple[np.ndarray, np.ndarray]]) -> StepLines:
    """The first line of each step, from (steps, lines) blocks in file order."""
    steps = np.concatenate([s for s, _ in parts]) if len(parts) != 1 else parts[0][0]
    lines = np.concatenate([found for _, found in parts]) if len(parts) != 1 else parts[0][1]
    keep = one_of_each(steps, last=False)
    return StepLines(steps, lines) if keep is None else StepLines(steps[keep], lines[keep])




def number_arrays(series: object) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """A polars Float64 or Int64 Series as numpy: its values as floats (NaN where null), as int64 for an Int64 series
    (0 where null), and which are null. Converted by numpy, not by a polars call per series: polars gives the nulls
    as NaN (an Int64 series with nulls as floats), and when the NaNs are as many as the nulls they are the nulls (a
    NaN value of its own makes polars asked)."""
    import polars as pl

    s: pl.Series = series  # type: ignore[assignment]
    nulls = s.null_count()
    raw = s.to_numpy()
    ints = None
    if s.dtype == pl.Int64:
        ints = raw if not nulls else s.fill_null(0).to_numpy()
        numbers = raw.astype(np.float64) if not nulls else raw
    else:
        numbers = raw
    if not nulls:
        return numbers, ints, np.zeros(numbers.size, dtype=bool)
    missing = np.isnan(numbers)
    return numbers, ints, missing if int(np.count_nonzero(missing)) == nulls else s.is_null().to_numpy()


def column_of_frame(series: object) -> Column | None:
    """A polars Series as a Column; None for nested values (lists, objects), which the reader parses one at a time."""
    import polars as pl

    s: pl.Series = series  # type: ignore[assignment]
    dtype = s.dtype
    if dtype == pl.Float64 or dtype == pl.Int64:  # the kinds polars gives JSON numbers: converted by numpy, not polars
        numbers, ints, missing = number_arrays(s)
        return Column(has=~missing, numbers=numbers, ints=ints)
    has = s.is_not_null().to_numpy()
    if dtype.is_integer():
        numbers = s.cast(pl.Float64).fill_null(np.nan).to_numpy()
        try:
            ints = s.cast(pl.Int64).fill_null(0).to_numpy()
        except Exception:  # beyond int64 (Int128, UInt64): as Python ints, which parse_step refuses by name
            return Column(has=has, objects=s.to_list())
        return Column(has=has, numbers=numbers, ints=ints)
    if dtype.is_float():
        return Column(has=has, numbers=s.cast(pl.Float64).fill_null(np.nan).to_numpy())
    if dtype == pl.String:
        return _text_column(s, has)
    if dtype == pl.Boolean or dtype == pl.Null:
        return Column(has=has, objects=s.to_list())
    return None


def _text_column(s: object, has: np.ndarray) -> Column:
    """Text cells: those that read as finite numbers become numbers; the rest keep their text for parse_number."""
    import polars as pl

    text: pl.Series = s  # type: ignore[assignment]
    numbers = text.cast(pl.Float64, strict=False).to_numpy()
    plain = has & np.isfinite(numbers)
    if bool(np.all(plain == has)):
        return Column(has=has, numbers=np.where(has, numbers, np.nan))
    rows = np.flatnonzero(has & ~plain)
    odd = dict(zip(rows.tolist(), text.gather(rows).to_list()))
    return Column(has=has, numbers=np.where(plain, numbers, np.nan), odd=odd)


def cell_column(cells: object) -> Column:
    """A CSV column of text cells (every row has the key): an empty cell is no value, a cell that reads as a finite
    number is one, and the rest keep their text for parse_number."""
    import polars as pl

    text: pl.Series = cells  # type: ignore[assignment]
    stripped = text.str.strip_chars()
    empty = (stripped.is_null() | (stripped == "")).to_numpy()
    numbers = stripped.cast(pl.Float64, strict=False).to_numpy()
    plain = ~empty & np.isfinite(numbers)
    rows = np.flatnonzero(~empty & ~plain)
    odd = dict(zip(rows.tolist(), stripped.gather(rows).to_list())) if rows.size else {}
    return Column(has=np.ones(text.len(), dtype=bool), numbers=np.where(plain, numbers, np.nan), odd=odd, empty=empty)
