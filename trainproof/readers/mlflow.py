"""MLflow file-store metrics: ``mlruns/<experiment>/<run>/metrics/<name>``, one file per metric.

Each line is ``<timestamp ms> <value> <step>``. A run directory (the one
holding ``metrics/``) is read as one run, each metric file by its name (the
common spellings of :mod:`trainproof.readers.columns`: ``loss``,
``val_loss``, ``lr``, ...); a single metric file is one series named by its
file name. Timestamps become the run's clock.
"""

from __future__ import annotations

import re
from pathlib import Path

from trainproof.errors import InputError
from trainproof.model import Run
from trainproof.readers.base import RunBuilder, read_text
from trainproof.readers.columns import resolve

name = "mlflow"
description = "MLflow file-store metrics (a run directory with metrics/, or one metric file)"

_LINE = re.compile(r"^\s*(\d{10,16})\s+(\S+)\s+(-?\d+)\s*$")


def sniff(path: Path, head: str) -> bool:
    lines = [line for line in head.splitlines()[:5] if line.strip()]
    return bool(lines) and all(_LINE.match(line) for line in lines[:-1] or lines)


def is_run_directory(path: Path) -> bool:
    return (path / "metrics").is_dir() and any(p.is_file() for p in (path / "metrics").iterdir())


def _metric_files(path: Path) -> dict[str, Path]:
    if path.is_dir():
        root = path / "metrics"
        return {str(p.relative_to(root)): p for p in sorted(root.rglob("*")) if p.is_file()}
    return {path.name: path}


class LineParser:
    """Lines of one metric file, fed as they are written (``trainproof watch``)."""

    def __init__(self, path: Path | str, metric: str | None = None) -> None:
        self.builder = RunBuilder(path, name)
        self.metric = metric or Path(path).name
        mapping = resolve([self.metric])
        self.series = next((canonical for canonical in ("loss", "eval_loss", "learning_rate", "grad_norm") if canonical in mapping), None)
        self.lines = 0

    def feed(self, line: str, number: int) -> None:
        if not line.strip():
            return
        match = _LINE.match(line)
        if match is None:
            raise InputError(self.builder.path, f"line {number} is not '<timestamp> <value> <step>'")
        self.lines += 1
        if self.series is None:
            return
        stamp, value, step = match.groups()
        self.builder.add(self.series, int(step), value)
        if self.series == "loss":
            self.builder.add_time(int(step), int(stamp) / 1000.0)
            self.builder.mark_line(int(step), number)

    def build(self, copy: bool = True) -> Run:
        return _build(self.builder, {self.metric: self.series}, copy)


def _build(builder: RunBuilder, series: dict[str, str | None], copy: bool = True) -> Run:
    loss = next((metric for metric, kind in series.items() if kind == "loss"), None)
    evals = [metric for metric, kind in series.items() if kind == "eval_loss"]
    if loss is None and not evals:
        raise InputError(builder.path, f"has no loss metric (metrics: {', '.join(series) or 'none'})")
    return builder.build(loss_name=loss or "loss", eval_names={"eval_loss": evals[0]} if evals else None, copy=copy)


def read(path: Path) -> Run:
    files = _metric_files(path)
    if not files:
        raise InputError(path, "has no MLflow metric files")
    kinds = {metric: LineParser(file, metric).series for metric, file in files.items()}
    loss_file = next((files[m] for m, kind in kinds.items() if kind == "loss"), path)
    builder = RunBuilder(loss_file, name)  # findings point at the loss metric's file
    for metric, file in files.items():
        parser = LineParser(file, metric)
        parser.builder = builder  # all metrics of the run into one builder
        for number, line in enumerate(read_text(file).splitlines(), start=1):
            parser.feed(line, number)
    return _build(builder, kinds)
