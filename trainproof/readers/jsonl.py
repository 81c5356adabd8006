"""JSON Lines logs: one JSON object per line (also a JSON array of such objects).

Common spellings of step, loss, eval loss, learning rate, gradient norm and
time are recognised (see :mod:`trainproof.readers.columns`). A last line cut
short by a writer still running is left out with a note; a broken line
anywhere else is an error naming its line number.

Lines are streamed (see :func:`trainproof.readers.base.iter_lines`); a JSON
array is read whole, up to MAX_DOCUMENT_BYTES.
"""

from __future__ import annotations

import json
from pathlib import Path

from trainproof.errors import InputError
from trainproof.model import Run
from trainproof.readers.base import RunBuilder, iter_lines, load_json, open_log, read_block, read_document
from trainproof.readers.columns import RecordParser

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


class LineParser:
    """Complete lines of a JSONL log, fed as they are written (``trainproof watch``)."""

    def __init__(self, path: Path | str) -> None:
        self.builder = RunBuilder(path, name)
        self.records = RecordParser(self.builder)

    def feed(self, line: str, number: int) -> None:
        line = line.strip()
        if not line:
            return
        record = load_json(self.builder.path, line, f"line {number}")
        if isinstance(record, dict):
            self.records.feed(record, number)

    def build(self, copy: bool = True) -> Run:
        return self.records.build(copy)


line_parser = LineParser


def _is_array(path: Path) -> bool:
    """Whether the log is one JSON array (read whole) rather than lines (streamed)."""
    with open_log(path) as handle:
        return read_block(handle, 64 * 1024, path).lstrip().startswith(b"[")


def read(path: Path) -> Run:
    if _is_array(path):
        records = load_json(path, read_document(path))
        if not isinstance(records, list):
            raise InputError(path, "is not a JSON array of records")
        parser = LineParser(path)
        for index, record in enumerate(records, start=1):
            if isinstance(record, dict):
                parser.records.feed(record, where=f"record {index}")
        return parser.build()
    parser = LineParser(path)
    for number, line, ended in iter_lines(path):
        if not ended and line.strip() and not _parses(path, line, number):
            parser.builder.notes.append(f"line {number} is incomplete (the log is still being written?) and was left out")
            continue
        parser.feed(line, number)
    return parser.build()


def _parses(path: Path, line: str, number: int) -> bool:
    try:
        load_json(path, line, f"line {number}")
    except InputError:
        return False
    return True
