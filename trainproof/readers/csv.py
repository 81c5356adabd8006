"""CSV logs: PyTorch Lightning ``CSVLogger`` ``metrics.csv``, Keras ``CSVLogger``, and hand-rolled ones.

The header names the columns (common spellings recognised, see
:mod:`trainproof.readers.columns`); rows may be sparse. Keras logs count
epochs, not steps, and are judged on the epoch axis. A header row repeated
further down (two logs appended to one file) is skipped.
"""

from __future__ import annotations

import csv as _csv
import io
from pathlib import Path

from trainproof.errors import InputError
from trainproof.model import Run
from trainproof.readers.base import read_text
from trainproof.readers.columns import build_run, resolve

name = "csv"
description = "CSV with a header row (Lightning metrics.csv, Keras training_log.csv, ...)"


def _dialect(first_line: str) -> str:
    return "\t" if first_line.count("\t") > first_line.count(",") else ","


def sniff(path: Path, head: str) -> bool:
    first = head.split("\n", 1)[0]
    delimiter = _dialect(first)
    if delimiter not in first:
        return False
    return bool(resolve(c.strip() for c in first.split(delimiter)))


def read(path: Path) -> Run:
    text = read_text(path)
    first = text.split("\n", 1)[0]
    reader = _csv.reader(io.StringIO(text), delimiter=_dialect(first))
    try:
        header = [c.strip() for c in next(reader)]
    except (StopIteration, _csv.Error) as exc:
        raise InputError(path, f"has no readable CSV header ({exc})") from None
    if len(header) < 2:
        raise InputError(path, "has a one-column header; a CSV log needs a step and a metric column")
    records = []
    numbers = []
    try:
        for row in reader:
            cells = [c.strip() for c in row]
            if not any(cells) or cells == header:
                continue
            records.append(dict(zip(header, cells)))
            numbers.append(reader.line_num)
    except _csv.Error as exc:
        raise InputError(path, f"is not valid CSV at line {reader.line_num}: {exc}") from None
    if not records:
        raise InputError(path, "has a header but no rows")
    return build_run(path, name, records, header, numbers)
