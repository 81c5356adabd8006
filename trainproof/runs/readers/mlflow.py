"""MLflow file-store metrics: ``mlruns/<experiment>/<run>/metrics/<name>``, one file per metric.

Each line is ``<timestamp ms> <value> <step>``. A run directory (the one
holding ``metrics/``) is read as one run, each metric file by its name (the
names of :mod:`trainproof.runs.readers.names`: ``loss``,
``val_loss``, ``lr``, ..., or ``--map``); a single metric file is one series named by its
file name. Timestamps become the run's clock.

An empty metric file (MLflow creates one before the first value is logged)
is skipped with a note, unless it is the only one.
"""

from __future__ import annotations

import re
from pathlib import Path

from trainproof.io.bounded import EmptyLog, iter_lines
from trainproof.io.errors import InputError
from trainproof.runs.model import Run
from trainproof.runs.readers.base import Entries, RunBuilder, parse_step
from trainproof.runs.readers.names import DEFAULT_NAMES, Names

name = "mlflow"
description = "MLflow file-store metrics (a run directory with metrics/, or one metric file)"

_LINE = re.compile(r"^\s*(\d{10,16})\s+(\S+)\s+(-?\d+)\s*$")


def sniff(path: Path, head: str) -> bool:
    lines = [line for line in head.splitlines()[:5] if line.strip()]
    return bool(lines) and all(_LINE.match(line) for line in lines[:-1] or lines)


def is_run_dir(path: Path) -> bool:
    return (path / "metrics").is_dir() and any(p.is_file() for p in (path / "metrics").iterdir())


def run_files(path: Path) -> list[Path]:
    return sorted(p for p in (path / "metrics").rglob("*") if p.is_file())


def holds_run(folder: Path, entries: Entries) -> bool:
    """An MLflow run, even one whose metrics/ is still empty (reading it says so)."""
    return any(is_dir and name == "metrics" for name, is_dir in entries) and (folder / "meta.yaml").is_file()


def _metric_files(path: Path) -> dict[str, Path]:
    if path.is_dir():
        root = path / "metrics"
        return {str(p.relative_to(root)): p for p in sorted(root.rglob("*")) if p.is_file()}
    return {path.name: path}


class LineParser:
    """Lines of one metric file, fed as they are written (``trainproof watch``)."""

    def __init__(self, path: Path | str, metric: str | None = None, names: Names = DEFAULT_NAMES) -> None:
        self.path = path
        self.builder = RunBuilder(path, name)
        self.metric = metric or Path(path).name
        mapping = names.resolve([self.metric])
        self.series = next((canonical for canonical in ("loss", "eval_loss", "learning_rate", "grad_norm") if canonical in mapping), None)
        self.lines = 0

    def feed(self, line: str, number: int) -> None:
        if not line.strip():
            return
        match = _LINE.match(line)
        if match is None:
            raise InputError(self.path, f"line {number} is not '<timestamp> <value> <step>'")
        self.lines += 1
        if self.series is None:
            return
        stamp, value, digits = match.groups()
        step: int = parse_step(digits, self.path, f"line {number}")  # type: ignore[assignment]  # digits are never empty
        self.builder.add(self.series, step, value)
        if self.series == "loss":
            self.builder.add_time(step, int(stamp) / 1000.0)
            self.builder.mark_line(step, number)

    def build(self, copy: bool = True) -> Run:
        return _build(self.builder, {self.metric: self.series}, copy=copy)


line_parser = LineParser


def _build(builder: RunBuilder, series: dict[str, str | None], empty: str = "", copy: bool = True) -> Run:
    loss = next((metric for metric, kind in series.items() if kind == "loss"), None)
    evals = [metric for metric, kind in series.items() if kind == "eval_loss"]
    if loss is None and not evals:
        skipped = f"; empty: {empty}" if empty else ""
        raise InputError(builder.path, f"has no loss metric (metrics: {', '.join(series) or 'none'}{skipped})")
    return builder.build(loss_name=loss or "loss", eval_names={"eval_loss": evals[0]} if evals else None, copy=copy)


def read(path: Path, names: Names = DEFAULT_NAMES) -> Run:
    files = _metric_files(path)
    if not files:
        raise InputError(path, "has no MLflow metric files")
    builder = RunBuilder(path, name)  # all metrics of the run into one builder
    kinds: dict[str, str | None] = {}
    empty: list[str] = []
    for metric, file in files.items():
        parser = LineParser(file, metric, names)
        parser.builder = builder
        try:
            for number, line, _ in iter_lines(file):
                parser.feed(line, number)
        except EmptyLog:
            if len(files) == 1:
                raise
            empty.append(metric)
            continue
        kinds[metric] = parser.series
        if parser.series == "loss" and builder.path == path:
            builder.path = file  # findings point at the loss metric's file
    shown = ", ".join(empty[:5]) + (", ..." if len(empty) > 5 else "")
    if not kinds:
        raise InputError(path, f"has only empty metric files ({shown})")
    if empty:
        builder.notes.append(f"{len(empty)} empty metric file{'s' if len(empty) > 1 else ''} skipped ({shown})")
    return _build(builder, kinds, shown)
