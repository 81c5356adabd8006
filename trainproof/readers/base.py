"""What every reader shares: the protocol, value parsing, and the run builder."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

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


class RunBuilder:
    """Collects ``(series, step, value)`` triples from a reader and freezes them into a Run.

    A step logged twice for the same series keeps its last value (a resumed run
    rewrites the steps it repeats).
    """

    def __init__(self, path: Path, fmt: str) -> None:
        self.path = path
        self.format = fmt
        self._points: dict[str, dict[int, float]] = {}
        self._raw: dict[str, dict[int, str]] = {}
        self.checkpoints: list[Checkpoint] = []
        self.notes: list[str] = []
        self.lines: dict[int, int] = {}

    def mark_line(self, step: int, line: int) -> None:
        """Remember the first line (1-based) where a record of ``step`` appears."""
        self.lines.setdefault(step, line)

    def add(self, series: str, step: int, value: Value) -> None:
        parsed = parse_number(value)
        if parsed is None:
            return
        number, raw = parsed
        self._points.setdefault(series, {})[step] = number
        if raw is not None:
            self._raw.setdefault(series, {})[step] = raw
        elif step in self._raw.get(series, ()):
            del self._raw[series][step]

    def add_time(self, step: int, seconds: float | None) -> None:
        if seconds is not None:
            self._points.setdefault("wall_time", {})[step] = seconds

    def names(self) -> list[str]:
        return list(self._points)

    def has(self, series: str) -> bool:
        return bool(self._points.get(series))

    def series(self, name: str) -> Series | None:
        points = self._points.get(name)
        if not points:
            return None
        return Series.from_pairs(points, self._raw.get(name))

    def build(
        self,
        *,
        loss: str = "loss",
        loss_name: str | None = None,
        eval_names: Mapping[str, str] | None = None,
        **meta: object,
    ) -> Run:
        """Freeze into a Run.

        ``loss`` is the key of the series that is the training loss and
        ``loss_name`` what the log calls it; ``eval_names`` maps series keys to
        eval-set names.
        """
        wall = self.series("wall_time")
        if wall is not None and len(wall):
            wall = Series(wall.steps, wall.values - float(wall.values.min()))
        evals = {label: s for key, label in (eval_names or {}).items() if (s := self.series(key)) is not None}
        return Run(
            path=str(self.path),
            format=self.format,
            loss=self.series(loss),
            eval_losses=evals,
            learning_rate=self.series("learning_rate"),
            grad_norm=self.series("grad_norm"),
            wall_time=wall,
            step_time=self.series("step_time"),
            loader_time=self.series("loader_time"),
            epoch=self.series("epoch"),
            checkpoints=tuple(sorted(self.checkpoints, key=lambda c: (c.step, c.best, c.path))),
            loss_name=loss_name or loss,
            notes=tuple(self.notes),
            step_lines=dict(self.lines),
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
