"""What every reader shares: the protocol, value parsing, and the run builder."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

import numpy as np

from trainproof.model import Checkpoint, Run, Series

Value = object


class Reader(Protocol):
    """One log format. ``sniff`` looks at the first bytes; ``read`` parses the whole file."""

    name: str
    description: str

    def sniff(self, path: Path, head: str) -> bool: ...

    def read(self, path: Path) -> Run: ...


def parse_number(value: Value) -> tuple[float, str | None] | None:
    """A logged value as a float, keeping what is not a finite number as evidence.

    Returns None for a missing value (None, empty cell). A value that is not a
    number at all (``"n/a"``, ``"error"``) comes back as NaN with its text, so a
    check can cite it; ``NaN`` and ``Infinity`` come back as themselves.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return math.nan, str(value)
    if isinstance(value, (int, float)):
        return float(value), None
    text = str(value).strip()
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


class GrowingSeries:
    """Append-only ``(step, value)`` columns with amortised O(1) appends.

    Steps normally arrive in order. The same step again overwrites the last
    value (a resumed run repeats steps); an earlier step marks the series for
    a sort and de-duplication, done once when it is frozen.
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
            last = {int(s): float(v) for s, v in zip(steps.tolist(), values.tolist())}  # the last value per step wins
            return Series.from_pairs(last, self.raw)
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

    def names(self) -> list[str]:
        return list(self._series)

    def series(self, name: str, copy: bool = True) -> Series | None:
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
        sources: Mapping[str, str] | None = None,
        copy: bool = True,
        **meta: object,
    ) -> Run:
        """Freeze into a Run.

        ``loss`` is the key of the series that is the training loss and
        ``loss_name`` what the log calls it; ``eval_names`` maps series keys to
        eval-set names; ``sources`` maps a Run field (``learning_rate``, ...)
        to the series key that holds it when that is not the field's own name.
        ``copy=False`` makes a live snapshot: its series are views of the
        builder's buffers, valid as long as nothing earlier than the last step
        is logged again.
        """
        keys = dict(sources or {})

        def get(name: str) -> Series | None:
            return self.series(keys.get(name, name), copy)

        wall = get("wall_time")
        if wall is not None and len(wall):
            wall = Series(wall.steps, wall.values - float(wall.values.min()))
        evals = {label: s for key, label in (eval_names or {}).items() if (s := get(key)) is not None}
        meta.setdefault("runtime_s", self.runtime_s)
        meta.setdefault("max_steps", self.max_steps)
        return Run(
            path=str(self.path),
            format=self.format,
            loss=get(loss),
            eval_losses=evals,
            learning_rate=get("learning_rate"),
            grad_norm=get("grad_norm"),
            wall_time=wall,
            step_time=get("step_time"),
            loader_time=get("loader_time"),
            epoch=get("epoch"),
            checkpoints=tuple(sorted(self.checkpoints, key=lambda c: (c.step, c.best, c.path))),
            loss_name=loss_name or loss,
            notes=tuple(self.notes),
            step_lines=dict(self.lines) if copy else self.lines,
            **meta,  # type: ignore[arg-type]
        )


def read_text(path: Path) -> str:
    from trainproof.errors import InputError

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(path, f"cannot be read: {exc.strerror or exc}") from None
    if not data.strip():
        raise InputError(path, "is empty")
    return data.decode("utf-8", errors="replace")
