"""JSON Lines logs: one JSON object per line (also a JSON array of such objects).

The names stacks write for step, loss, eval loss, learning rate, gradient
norm and time are recognised (see :mod:`trainproof.runs.readers.names`; ``--map``
names others). A last line cut
short by a writer still running is left out with a note; a broken line
anywhere else is an error naming its line number.

Lines are streamed (see :func:`trainproof.io.bounded.iter_lines`); a JSON
array is read whole, up to MAX_DOCUMENT_BYTES. A log of LARGE_BYTES or more is
read as columns, a block of lines at a time, by polars (see
:mod:`trainproof.runs.readers.table`): the same Run, without Python work per
line. A block the fast parser refuses or might read differently (``null``
values, nested values, a broken line) is parsed a line at a time.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np

from trainproof.io.bounded import count_byte, iter_blocks, iter_lines, lines_flagged, load_json, open_log, read_block, read_document
from trainproof.io.errors import InputError
from trainproof.runs.model import Run
from trainproof.runs.readers.base import RunBuilder, number_keys
from trainproof.runs.readers.columns import RecordParser
from trainproof.runs.readers.names import DEFAULT_NAMES, Names
from trainproof.runs.readers.table import (
    SPECIAL_FLOATS,
    Block,
    ColumnarRun,
    as_columns,
    block_of_records,
    column_of_frame,
    importable,
    size_of,
)

name = "jsonl"
description = "JSON Lines (one JSON object per line), or a JSON array of records"


def sniff(path: Path, head: str) -> bool:
    stripped = head.lstrip()
    if stripped.startswith("["):
        return True
    if not stripped.startswith("{"):
        return False
    first = stripped.split("\n", 1)[0].strip()
    try:
        return isinstance(json.loads(first), dict)
    except RecursionError:
        return True  # an object nested too deeply: the reader says so
    except ValueError:  # JSONDecodeError, or an integer of thousands of digits
        return len(first) == len(stripped.strip())  # one long line still being written


def is_metric_records(head: str, whole: bool = True) -> bool:
    """Do a JSON Lines file's first bytes, which :func:`sniff` takes, read as a metric log? A folder search's stricter
    test; ``whole`` says ``head`` is the whole file.

    A log's records give a number to a key that names a series (a step, a loss, a learning rate: any but a time); a
    fine-tuning set's (``messages``, ``prompt``, ``text``) give none. A first record longer than ``head`` is left to
    the reader.
    """
    if not whole and "\n" not in head.strip():
        return True
    return any(series != "wall_time" for series in DEFAULT_NAMES.resolve(set(number_keys(head))))


class LineParser:
    """Complete lines of a JSONL log, fed as they are written (``trainproof watch``)."""

    def __init__(self, path: Path | str, names: Names = DEFAULT_NAMES) -> None:
        self.builder = RunBuilder(path, name)
        self.records = RecordParser(self.builder, names)

    def feed(self, line: str, number: int) -> None:
        line = line.strip()
        if not line:
            return
        record = load_json(self.builder.path, line, f"line {number}")
        if isinstance(record, dict):
            self.records.feed(record, number)

    def build(self, copy: bool = True) -> Run:
        return self.records.build(copy)


holds_measurements = is_metric_records


line_parser = LineParser


def _is_array(path: Path) -> bool:
    """Whether the log is one JSON array (read whole) rather than lines (streamed)."""
    with open_log(path) as handle:
        return read_block(handle, 64 * 1024, path).lstrip().startswith(b"[")


def read(path: Path, names: Names = DEFAULT_NAMES, columnar: bool | None = None) -> Run:
    """The Run of a JSONL log; ``columnar`` forces (True) or forbids (False) reading it as columns, which is
    otherwise chosen for a log of LARGE_BYTES or more when polars is installed."""
    if _is_array(path):
        records = load_json(path, read_document(path))
        if not isinstance(records, list):
            raise InputError(path, "is not a JSON array of records")
        parser = LineParser(path, names)
        for index, record in enumerate(records, start=1):
            if isinstance(record, dict):
                parser.records.feed(record, where=f"record {index}")
        return parser.build()
    found = as_columns(path, "polars", columnar, lambda: read_columns(path, names))
    if found is not None:
        return found
    parser = LineParser(path, names)
    for number, line, ended in iter_lines(path):
        if not ended and line.strip() and not _parses(path, line, number):
            parser.builder.notes.append(f"line {number} is incomplete (the log is still being written?) and was left out")
            continue
        parser.feed(line, number)
    return parser.build()


def read_columns(path: Path, names: Names = DEFAULT_NAMES) -> Run:
    """The Run of a JSONL log read a block of lines at a time into columns."""
    polars = importable("polars")
    table = ColumnarRun(RunBuilder(path, name), names)
    for first, data, ended, count in iter_blocks(path):
        if ended:
            block = _fast_block(data, first, count, names, table.step_unit is None) if polars else None
            block = block if block is not None else _slow_block(path, data, first)
            if first == 1:
                table.expect(size_of(path), len(data), block.rows)
            table.feed(block)
            continue
        line = data.decode("utf-8", errors="replace").rstrip("\r")
        if line.strip() and not _parses(path, line, first):
            table.builder.notes.append(f"line {first} is incomplete (the log is still being written?) and was left out")
        else:
            table.feed(_slow_block(path, data, first))
    return table.build()


def _fast_block(data: bytes, first: int, count: int, names: Names, opening: bool) -> Block | None:
    """Complete lines parsed by polars, or None when it refuses them or could read them differently from
    ``json.loads``.

    polars cannot tell an explicit ``null`` from a missing key, and the two differ only where a record's keys decide
    something: which of two names of one series it carries, or (in the first record) the step axis. A block with
    nulls where that can matter is parsed a line at a time; so is one with a nested value.
    """
    found = _frame(data)
    if found is None:
        return None
    frame, nulls, data = found
    if nulls and (opening or any(len(found) > 1 for found in names.candidates(frame.columns).values())):
        return None
    lines = _record_lines(data, first, count, frame.height)
    if lines is None:
        return None
    columns = {}
    for series in frame.iter_columns():
        column = column_of_frame(series)
        if column is None:
            return None
        columns[series.name] = column
    return Block(lines, columns)


def _frame(data: bytes) -> tuple[Any, int, bytes] | None:  # a polars DataFrame, imported when first needed
    """The lines as a polars frame with every key of every line as a column, how many values were an explicit
    ``null``, and the bytes parsed; None when polars refuses them.

    The schema is inferred from the first lines, several times faster than from all of them; but a key first met
    further down would be dropped without a word. So the values read are counted against the keys written: every key
    ends at a colon, and when the colons are as many as the values, nothing was dropped (nor was there a ``null``).
    Otherwise the keys are counted exactly (``":``, less the nulls), and on a mismatch the block is parsed again with
    the schema inferred from every line. polars refuses Python's ``NaN`` and ``Infinity``: quoted, they are read as
    text, which parse_number turns back into the same floats.
    """
    quoted = False
    while True:
        found = _parsed(data)
        if found is not None:
            return found[0], found[1], data
        if quoted or not (b"NaN" in data or b"Infinity" in data):
            return None
        data, quoted = SPECIAL_FLOATS.sub(rb'"\g<0>"', data), True


def _parsed(data: bytes) -> tuple[object, int] | None:
    """_frame's parse and count, without the quoting."""
    import polars

    for inferred in (1000, None):
        try:
            frame = polars.read_ndjson(io.BytesIO(data), infer_schema_length=inferred)
        except Exception:  # a broken line, mixed kinds, an array, a NaN: the line-at-a-time parse says what it is
            continue
        values = frame.height * frame.width - int(sum(frame.null_count().row(0))) if frame.width else 0
        if values == count_byte(data, b":"):
            return frame, 0
        nulls = data.count(b":null") + data.count(b": null") if b"null" in data else 0
        if values == data.count(b'":') - nulls:
            return frame, nulls
    return None


_NOT_BLANK_FLAGS = bytes(0 if byte in b"\t\n\v\f\r " else 1 for byte in range(256))
"""A translation table flagging each byte that makes a line not blank."""


def _record_lines(data: bytes, first: int, count: int, records: int) -> np.ndarray | None:
    """The line number of each record of a block of ``count`` lines: one per line that is not blank; None when the
    count disagrees (see :func:`~trainproof.io.bounded.lines_flagged`)."""
    if records == count:
        return np.arange(first, first + count, dtype=np.int64)
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    starts = np.concatenate(([0], ends + 1))[:count]
    stops = np.append(ends, len(data))[:count]
    filled = np.flatnonzero(lines_flagged(data, _NOT_BLANK_FLAGS, starts, stops))
    if filled.size != records:
        return None
    return filled.astype(np.int64) + first


def _slow_block(path: Path, data: bytes, first: int) -> Block:
    """Lines parsed one at a time with ``json.loads``, exactly as the line reader does."""
    records, lines = [], []
    text = data.decode("utf-8", errors="replace")
    for number, line in enumerate(text.split("\n")[: text.count("\n") or 1], start=first):
        line = line.rstrip("\r").strip()
        if not line:
            continue
        record = load_json(path, line, f"line {number}")
        if isinstance(record, dict):
            records.append(record)
            lines.append(number)
    return block_of_records(records, lines)


def _parses(path: Path, line: str, number: int) -> bool:
    try:
        load_json(path, line, f"line {number}")
    except InputError:
        return False
    return True
