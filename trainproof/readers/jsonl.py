"""JSON Lines logs: one JSON object per line (also a JSON array of such objects).

Common spellings of step, loss, eval loss, learning rate, gradient norm and
time are recognised (see :mod:`trainproof.readers.columns`). A last line cut
short by a writer still running is left out with a note; a broken line
anywhere else is an error naming its line number.
"""

from __future__ import annotations

import json
from pathlib import Path

from trainproof.errors import InputError
from trainproof.model import Run
from trainproof.readers.base import RunBuilder, read_text
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
    except json.JSONDecodeError:
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
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(self.builder.path, f"line {number} is not valid JSON: {exc.msg}") from None
        if isinstance(record, dict):
            self.records.feed(record, number)

    def build(self, copy: bool = True) -> Run:
        return self.records.build(copy)


def read(path: Path) -> Run:
    text = read_text(path)
    if text.lstrip().startswith("["):
        try:
            records = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(path, f"is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
        if not isinstance(records, list):
            raise InputError(path, "is not a JSON array of records")
        parser = LineParser(path)
        for record in records:
            if isinstance(record, dict):
                parser.records.feed(record)
        return parser.build()
    parser = LineParser(path)
    lines = text.split("\n")
    complete = text.endswith("\n")
    for number, line in enumerate(lines, start=1):
        if number == len(lines) and not complete and line.strip():
            try:
                json.loads(line)
            except json.JSONDecodeError:
                parser.builder.notes.append(f"line {number} is incomplete (the log is still being written?) and was left out")
                continue
        parser.feed(line, number)
    return parser.build()
