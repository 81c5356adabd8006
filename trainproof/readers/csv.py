"""CSV logs: PyTorch Lightning ``CSVLogger`` ``metrics.csv``, Keras ``CSVLogger``, and hand-rolled ones.

The header names the columns (common spellings recognised, see
:mod:`trainproof.readers.columns`); rows may be sparse. Keras logs count
epochs, not steps, and are judged on the epoch axis. A header row repeated
further down (two logs appended to one file) is skipped.

One ``csv.reader`` reads the whole log, its lines streamed (see
:func:`trainproof.readers.base.iter_lines`), so a quoted cell may span lines;
a row's line is the one where it starts.
"""

from __future__ import annotations

import csv as _csv
from collections import deque
from collections.abc import Iterator
from pathlib import Path

from trainproof.errors import InputError
from trainproof.model import Run
from trainproof.readers.base import RunBuilder, iter_lines
from trainproof.readers.columns import RecordParser, resolve

name = "csv"
description = "CSV with a header row (Lightning metrics.csv, Keras training_log.csv, ...)"


def _delimiter(first_line: str) -> str:
    return "\t" if first_line.count("\t") > first_line.count(",") else ","


def sniff(path: Path, head: str) -> bool:
    first = head.split("\n", 1)[0]
    delimiter = _delimiter(first)
    if delimiter not in first:
        return False
    return bool(resolve(c.strip() for c in first.split(delimiter)))


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

    def __init__(self, path: Path | str) -> None:
        self.builder = RunBuilder(path, name)
        self.records = RecordParser(self.builder)
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
                raise InputError(self.builder.path, "has a one-column header; a CSV log needs a step and a metric column")
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


line_parser = LineParser


def read(path: Path) -> Run:
    parser = LineParser(path)
    for number, line, _ in iter_lines(path):
        parser.feed(line, number)
    parser.end()
    return parser.build()
