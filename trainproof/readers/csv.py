"""CSV logs: PyTorch Lightning ``CSVLogger`` ``metrics.csv``, Keras ``CSVLogger``, and hand-rolled ones.

The header names the columns (common spellings recognised, see
:mod:`trainproof.readers.columns`); rows may be sparse. Keras logs count
epochs, not steps, and are judged on the epoch axis. A header row repeated
further down (two logs appended to one file) is skipped.
"""

from __future__ import annotations

import csv as _csv
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


class LineParser:
    """Complete lines of a CSV log, fed as they are written (``trainproof watch``)."""

    def __init__(self, path: Path | str) -> None:
        self.builder = RunBuilder(path, name)
        self.records = RecordParser(self.builder)
        self.header: list[str] | None = None
        self.delimiter = ","

    def feed(self, line: str, number: int) -> None:
        if not line.strip():
            return
        if self.header is None:
            self.delimiter = _delimiter(line)
            self.header = self._cells(line, number)
            if len(self.header) < 2:
                raise InputError(self.builder.path, "has a one-column header; a CSV log needs a step and a metric column")
            return
        cells = self._cells(line, number)
        if cells == self.header or not any(cells):
            return
        self.records.feed(dict(zip(self.header, cells)), number)

    def _cells(self, line: str, number: int) -> list[str]:
        try:
            return [c.strip() for c in next(_csv.reader([line], delimiter=self.delimiter))]
        except (StopIteration, _csv.Error) as exc:
            raise InputError(self.builder.path, f"is not valid CSV at line {number}: {exc}") from None

    def build(self, copy: bool = True) -> Run:
        if self.header is None:
            raise InputError(self.builder.path, "has no readable CSV header")
        if not self.records.columns:
            raise InputError(self.builder.path, "has a header but no rows")
        return self.records.build(copy)


def read(path: Path) -> Run:
    parser = LineParser(path)
    for number, line, _ in iter_lines(path):
        parser.feed(line, number)
    return parser.build()
