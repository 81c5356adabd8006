"""CSV logs: PyTorch Lightning ``CSVLogger`` ``metrics.csv``, Keras ``CSVLogger``, and hand-rolled ones.

The header names the columns (the names stacks write recognised, see
:mod:`trainproof.runs.readers.names`; ``--map`` names others); rows may be sparse. Keras logs count
epochs, not steps, and are judged on the epoch axis. A header row repeated
further down (two logs appended to one file) is skipped.

One ``csv.reader`` reads the whole log, its lines streamed (see
:func:`trainproof.io.bounded.iter_lines`), so a quoted cell may span lines;
a row's line is the one where it starts. A log of LARGE_BYTES or more with no
quote in it is read as columns, a block of lines at a time, by polars (see
:mod:`trainproof.runs.readers.table`): the same Run, without Python work per row.
"""

from __future__ import annotations

import csv as _csv
import io
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from trainproof.io.bounded import count_byte, iter_blocks, iter_lines
from trainproof.io.errors import InputError
from trainproof.runs.model import Run
from trainproof.runs.readers.base import RunBuilder
from trainproof.runs.readers.columns import RecordParser
from trainproof.runs.readers.names import DEFAULT_NAMES, Names
from trainproof.runs.readers.table import Block, Column, ColumnarRun, as_columns, cell_column, moved, number_arrays, size_of

name = "csv"
description = "CSV with a header row (Lightning metrics.csv, Keras training_log.csv, ...)"


def _delimiter(first_line: str) -> str:
    return "\t" if first_line.count("\t") > first_line.count(",") else ","


def sniff(path: Path, head: str) -> bool:
    first = head.split("\n", 1)[0]
    delimiter = _delimiter(first)
    if delimiter not in first:
        return False
    return bool(DEFAULT_NAMES.resolve(c.strip() for c in first.split(delimiter)))


def is_metric_table(head: str, whole: bool = True) -> bool:
    """Do a CSV's first bytes, which :func:`sniff` takes, read as a metric log? A folder search's stricter test; ``whole``
    says ``head`` is the whole file (else its last line may be cut short, and is not read).

    A header naming a loss or an eval loss is a log's (reading it says anything else). Any other header may be a
    log's with names of its own (``--map``) or a table that merely has a ``global_step`` or ``time`` column (a
    dataset's metadata, a table of runs), which only the rows tell apart: a log's step (else epoch) cells are
    numbers that never go down, but after the header repeated (two logs appended), and some other column holds
    measurements, numbers not all whole. A header with no row yet is a log just begun.
    """
    if not whole:
        head = head[: head.rfind("\n") + 1]
    try:
        rows = [[cell.strip() for cell in row] for row in _csv.reader(io.StringIO(head, newline=""), delimiter=_delimiter(head.lstrip().split("\n", 1)[0]))]
    except _csv.Error:
        return True  # reading it names the line
    rows = [row for row in rows if any(row)]
    if not rows:
        return True
    header, data = rows[0], rows[1:]
    found = DEFAULT_NAMES.resolve(header)
    if "loss" in found or "eval_loss" in found or not data:
        return True
    axis = found.get("step") or found.get("epoch")
    if axis is not None and not _never_down(header, data, header.index(axis)):
        return False
    data = [row for row in data if row != header]
    for j, title in enumerate(header):
        if title in (found.get("step"), found.get("epoch"), found.get("wall_time")):
            continue
        cells = [row[j] for row in data if j < len(row) and row[j]]
        numbers = [n for n in map(_float, cells) if n is not None]
        if cells and len(numbers) == len(cells) and not all(n.is_integer() for n in numbers):
            return True
    return False


holds_measurements = is_metric_table


def _never_down(header: list[str], data: list[list[str]], j: int) -> bool:
    """Are the column's cells numbers that never go down, but after a row that repeats the header?"""
    last = None
    for row in data:
        if row == header:
            last = None
            continue
        if j >= len(row) or not row[j]:
            continue
        value = _float(row[j])
        if value is None or (last is not None and value < last):
            return False
        last = value
    return True


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


class _Lines:
    """The lines fed so far, handed to the log's one ``csv.reader`` as it asks for them.

    ``row`` holds the numbered lines of the row being read, the first being
    where it starts; ``ran_out`` says the reader asked for a line past the
    last one fed, in the middle of a row (a quoted cell that goes on).
    """

    def __init__(self) -> None:
        self.waiting: deque[tuple[int, str]] = deque()
        self.row: list[tuple[int, str]] = []
        self.ran_out = False

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        if not self.waiting:
            self.ran_out = True
            raise StopIteration
        line = self.waiting.popleft()
        self.row.append(line)
        return line[1] + "\n"


class LineParser:
    """Complete lines of a CSV log, fed as they are written (``trainproof watch``).

    A row whose quoted cell goes on past the last line fed waits for the
    lines that end it.
    """

    def __init__(self, path: Path | str, names: Names = DEFAULT_NAMES) -> None:
        self.builder = RunBuilder(path, name)
        self.records = RecordParser(self.builder, names)
        self.header: list[str] | None = None
        self.delimiter = ","
        self._lines = _Lines()
        self._reader: Iterator[list[str]] | None = None  # made at the first line that is not blank, which sets the delimiter
        self._pending: int | None = None
        """Characters fed since a row that goes on past them (a quoted cell spanning lines) was last read; None when no row is open."""

    def feed(self, line: str, number: int) -> None:
        if self._reader is None:
            if not line.strip():
                return
            self.delimiter = _delimiter(line)
            self._reader = _csv.reader(self._lines, delimiter=self.delimiter)
        self._lines.waiting.append((number, line))
        if self._pending is not None and '"' not in line and self._pending + len(line) < _csv.field_size_limit():
            self._pending += len(line) + 1  # without a quote the cell can neither close nor outgrow the limit yet
            return
        self._read_rows(at_end=False)

    def end(self) -> None:
        """The log is complete: a row left open at its end (a quote never closed) is read as it stands."""
        if self._reader is not None:
            self._read_rows(at_end=True)

    def _read_rows(self, at_end: bool) -> None:
        """The rows the waiting lines complete; one left open waits for more lines, unless the log is at its end."""
        lines, reader = self._lines, self._reader
        while lines.waiting and reader is not None:
            lines.row, lines.ran_out = [], False
            try:
                cells = next(reader, None)
            except _csv.Error as exc:
                raise InputError(self.builder.path, f"is not valid CSV at line {lines.row[0][0]}: {exc}") from None
            if lines.ran_out and not at_end:  # the row goes on: read it again, whole, once more lines are fed
                lines.waiting.extendleft(reversed(lines.row))
                self._pending = 0
                return
            self._pending = None
            if cells is not None:
                self._row(cells, lines.row)

    def _row(self, cells: list[str], lines: list[tuple[int, str]]) -> None:
        number, first = lines[0]
        if len(lines) == 1 and not first.strip():
            return
        cells = [c.strip() for c in cells]
        if self.header is None:
            self.header = cells
            if len(cells) < 2:
                other = next((name for mark, name in ((";", "semicolons"), ("|", "pipes")) if mark in cells[0]), None)
                hint = f" (its header is separated by {other}: trainproof reads commas or tabs)" if other else ""
                raise InputError(self.builder.path, f"has a one-column header; a CSV log needs a step and a metric column{hint}")
            _refuse_read_twice(self.builder.path, cells, self.records.names)
            return
        if cells == self.header or not any(cells):
            return
        self.records.feed(dict(zip(self.header, cells)), number)

    def build(self, copy: bool = True) -> Run:
        if self.header is None:
            raise InputError(self.builder.path, "has no readable CSV header")
        if not self.records.columns:
            raise InputError(self.builder.path, "has a header but no rows")
        return self.records.build(copy)


def _refuse_read_twice(path: Path | str, header: list[str], names: Names) -> None:
    """An InputError when two columns of the header have the name of a column trainproof reads (``step,loss,loss``):
    which of them is the series cannot be told, and a row read as a mapping would silently keep the last. A repeated
    name no series or eval metric takes (two empty cells at the end of the header) is left alone."""
    seen: dict[str, list[int]] = {}
    for number, title in enumerate(header, start=1):
        if title:
            seen.setdefault(title, []).append(number)
    repeated = [title for title, numbers in seen.items() if len(numbers) > 1]
    if not repeated:
        return
    read = set(names.resolve(header).values())
    for title in repeated:
        if title in read or names.metric_goal(title) is not None:
            numbers = seen[title]
            at = ", ".join(map(str, numbers[:-1])) + f" and {numbers[-1]}"
            raise InputError(
                path, f"has {len(numbers)} columns named '{title}' (columns {at}): which one to read cannot be told; rename all but one"
            )


line_parser = LineParser


def read(path: Path, names: Names = DEFAULT_NAMES, columnar: bool | None = None) -> Run:
    """The Run of a CSV log; ``columnar`` forces (True) or forbids (False) reading it as columns, which is otherwise
    chosen for a log of LARGE_BYTES or more when polars is installed."""
    found = as_columns(path, "polars", columnar, lambda: read_columns(path, names))
    if found is not None:
        return found
    parser = LineParser(path, names)
    for number, line, _ in iter_lines(path):
        parser.feed(line, number)
    parser.end()
    return parser.build()


def read_columns(path: Path, names: Names = DEFAULT_NAMES) -> Run | None:
    """The Run of a CSV log read a block of lines at a time into columns; None when the log has what only the row
    reader reads exactly (a quote, which may open a cell spanning lines; no header, a repeated column name, a row
    with more cells than the header, or no rows), and that reader then reads it from the start."""
    table = ColumnarRun(RunBuilder(path, name), names)
    header: list[str] | None = None
    delimiter = ","
    for first, data, ended, lines in iter_blocks(path):
        if b'"' in data:
            return None
        if not ended:
            data += b"\n"  # the row reader reads a last line with no newline as a row too
        if header is None:
            skipped, start = 0, 0
            while (end := data.find(b"\n", start)) >= 0:  # the first line not blank, a line at a time: not the block
                line = data[start:end].decode("utf-8", errors="replace")
                if line.strip():
                    break
                skipped, start = skipped + 1, end + 1
            else:
                continue  # only blank lines so far
            line = line.rstrip("\r")
            delimiter = _delimiter(line)
            header = [cell.strip() for cell in line.split(delimiter)]
            if len(header) < 2 or len(set(header)) < len(header):
                return None
            first, data, lines = first + skipped + 1, data[end + 1 :], lines - skipped - 1
            if not data:
                continue
        block = _block(data, first, lines, header, delimiter)
        if block is None:
            return None
        if not table.columns:
            table.expect(size_of(path), len(data), block.rows)
        try:
            table.feed(block)
        except InputError:  # a bad step: the row reader names it in the log's own words (the cell, not its float)
            return None
    if header is None or not table.columns:
        return None
    return table.build()


def _block(data: bytes, first: int, lines: int, header: list[str], delimiter: str) -> Block | None:
    """Complete lines after the header (``lines`` of them, as iter_blocks counted them) as a Block of the rows the
    row reader would feed.

    Columns are typed by polars where every cell is a number or empty (nothing to strip, and no row there can be
    the header repeated); a column with any text in it is read as text, each cell stripped as the row reader does.
    """
    frame = _frame(data, header, delimiter)
    if frame is None:
        return None
    if frame.height != lines:
        return None
    full_rows = count_byte(data, delimiter.encode()) == (len(header) - 1) * lines  # polars refused longer rows: none is short
    cells: np.ndarray | None = None  # per row, its cells; None when every row has them all
    if not full_rows:
        content = np.frombuffer(data, dtype=np.uint8)
        ends = np.flatnonzero(content == 10)
        cells = np.bincount(np.searchsorted(ends, np.flatnonzero(content == ord(delimiter))), minlength=lines) + 1
    columns = [_Cells(frame.to_series(j)) for j in range(len(header))]
    empty = np.ones(frame.height, dtype=bool)
    for column in columns:
        empty &= column.empty
    keep = ~empty
    if all(column.texts is not None for column in columns):  # only text columns can hold the header again
        repeated = np.ones(lines, dtype=bool) if cells is None else cells == len(header)
        for column, title in zip(columns, header):
            repeated &= (column.texts == title).fill_null(False).to_numpy()  # type: ignore[union-attr]
        keep &= ~repeated
    if cells is None and bool(keep.all()):  # every row is one, with every cell: the columns as they are
        return Block(np.arange(first, first + lines, dtype=np.int64), {title: column.column for title, column in zip(header, columns)})
    rows = np.flatnonzero(keep)
    out = {}
    for j, (title, column) in enumerate(zip(header, columns)):
        picked = column.take(rows)
        present = None if cells is None else cells[rows] > j
        if present is not None and not present.all():
            picked = Column(has=present, numbers=picked.numbers, ints=picked.ints, odd=picked.odd, empty=picked.empty | ~present)  # type: ignore[operator]
        out[title] = picked
    return Block(rows.astype(np.int64) + first, out)


def _frame(data: bytes, header: list[str], delimiter: str) -> Any:  # a polars DataFrame (imported when first needed), or None
    """The cells as a polars frame, typed where a column is all numbers; None when polars refuses the lines (a row
    with more cells than the header) or a header name reads as a number (a repeated header row would too)."""
    import polars as pl

    if any(_number(title) for title in header):
        return None
    for typed in (True, False):
        try:
            frame = pl.read_csv(
                io.BytesIO(data), has_header=False, new_columns=header, separator=delimiter, infer_schema=typed, infer_schema_length=1000
            )
        except Exception:  # a typed column meeting text further down, or a longer row: again as text, or not at all
            continue
        if typed and not all(dtype.is_numeric() or dtype in (pl.String, pl.Null) for dtype in frame.dtypes):
            continue  # a column typed as something else (true/false as Boolean) keeps its cells' text, read as text
        return frame
    return None


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _numbers_column(s: object) -> Column:
    """A Float64 or Int64 column of cells as a Column: an empty cell (null) is no value."""
    numbers, ints, empty = number_arrays(s)
    return Column(has=np.ones(numbers.size, dtype=bool), numbers=numbers, ints=ints, odd={}, empty=empty)


class _Cells:
    """One CSV column of a block: its cells as text (stripped; None for a typed column) or typed numbers."""

    def __init__(self, series: object) -> None:
        import polars as pl

        s: pl.Series = series  # type: ignore[assignment]
        if s.dtype == pl.String:
            self.texts: pl.Series | None = s.str.strip_chars()
            self.column = cell_column(s)
        elif s.dtype == pl.Float64 or s.dtype == pl.Int64:  # what polars types a CSV's numbers as: converted by numpy
            self.texts = None
            self.column = _numbers_column(s)
        else:
            self.texts = None
            has = np.ones(s.len(), dtype=bool)
            empty = s.is_null().to_numpy()
            numbers = s.cast(pl.Float64).fill_null(np.nan).to_numpy()
            ints = None
            if s.dtype.is_integer():
                try:
                    exact = s.cast(pl.Int64)
                except pl.exceptions.InvalidOperationError:  # past int64 (Int128): read as floats, which a step refuses
                    exact = None
                ints = None if exact is None else exact.fill_null(0).to_numpy()
            self.column = Column(has=has, numbers=numbers, ints=ints, odd={}, empty=empty)
        self.empty = self.column.empty

    def take(self, rows: np.ndarray) -> Column:
        column = self.column
        return Column(
            has=column.has[rows],
            numbers=column.numbers[rows] if column.numbers is not None else None,
            ints=column.ints[rows] if column.ints is not None else None,
            odd=moved(column.odd, rows) if column.odd else {},
            empty=column.empty[rows] if column.empty is not None else None,
        )


