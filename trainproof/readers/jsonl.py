"""JSON Lines logs: one JSON object per line (also a JSON array of such objects).

Common spellings of step, loss, eval loss, learning rate, gradient norm and
time are recognised (see :mod:`trainproof.readers.columns`). A last line cut
short by a writer still running is left out with a note; a broken line
anywhere else is an error naming its line number.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from trainproof.errors import InputError
from trainproof.model import Run
from trainproof.readers.base import read_text
from trainproof.readers.columns import build_run

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


def read(path: Path) -> Run:
    text = read_text(path)
    notes = []
    numbers: list[int] | None = None
    if text.lstrip().startswith("["):
        try:
            records = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(path, f"is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
        if not isinstance(records, list):
            raise InputError(path, "is not a JSON array of records")
        records = [r for r in records if isinstance(r, dict)]
    else:
        records = []
        numbers = []
        lines = text.split("\n")
        for number, line in enumerate(lines, start=1):
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                if number == len(lines) and not text.endswith("\n"):
                    notes.append(f"line {number} is incomplete (the log is still being written?) and was left out")
                    continue
                raise InputError(path, f"line {number} is not valid JSON: {exc.msg}") from None
            if isinstance(record, dict):
                records.append(record)
                numbers.append(number)
    if not records:
        raise InputError(path, "has no JSON object records")
    columns: list[str] = []
    seen = set()
    for record in records:
        for key in record:
            if key not in seen:
                seen.add(key)
                columns.append(key)
    run = build_run(path, name, records, columns, numbers)
    if notes:
        run = replace(run, notes=run.notes + tuple(notes))
    return run
