"""Records with named columns (JSONL lines, CSV rows) into a Run, one record at a time.

Column names are matched against the spellings of
:mod:`trainproof.runs.readers.names` (and the user's ``--map``), first match wins, so a PyTorch Lightning ``metrics.csv`` with both
``train_loss_step`` and ``train_loss_epoch`` is judged on the per-step loss.
Rows may be sparse: a Lightning row carries either training or validation
metrics, and a missing cell is simply not a point. The step axis is
``step``, else ``epoch`` (Keras), else the record number, decided by the
first record and kept; a step that is there but is not a whole int64 number
is an error naming its line (see :func:`trainproof.io.bounded.parse_step`).
Eval metrics (``eval_wer``, ``val_acc``) are read from the columns whose
names say which way is better (see :meth:`Names.metric_goal`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from trainproof.io.errors import InputError
from trainproof.runs.model import Run
from trainproof.runs.readers.base import RunBuilder, parse_step, parse_timestamp
from trainproof.runs.readers.names import DEFAULT_NAMES, Names

METRICS = ("loss", "eval_loss", "learning_rate", "grad_norm", "step_time", "loader_time")
"""The series a record's columns feed; ``epoch`` is not one of them, only an axis (Keras logs count epochs, not steps)."""


def metric_columns(names: Names, columns: Iterable[str], mapping: Mapping[str, str]) -> dict[str, str]:
    """The eval-metric columns among ``columns`` (those no series of ``mapping`` takes) to their goal: ``min``,
    ``max`` or ``unknown``."""
    taken = set(mapping.values())
    return {column: goal for column in columns if column not in taken and (goal := names.metric_goal(column)) is not None}


class RecordParser:
    """Feeds named-column records into a RunBuilder, one at a time, in file order."""

    def __init__(self, builder: RunBuilder, names: Names = DEFAULT_NAMES) -> None:
        self.builder = builder
        self.names = names
        self.step_unit: str | None = None
        self.loss_column: str | None = None
        self.eval_column: str | None = None
        self.columns: dict[str, None] = {}
        self._mappings: dict[tuple[str, ...], tuple[dict[str, str], tuple[tuple[str, str], ...]]] = {}
        self.metrics: dict[str, str] = {}
        """Each eval-metric column seen, to its goal."""
        self._records = 0
        self._loss_named: str | None = None
        self.labels: dict[str, str] = {}
        """The column each series came from, so a message names what the log calls it."""

    def feed(self, record: Mapping[str, object], line: int | None = None, where: str | None = None) -> None:
        """One record; ``line`` is its line in the file, ``where`` says where it is when it has none (``record 3``)."""
        keys = tuple(record)
        known = self._mappings.get(keys)
        if known is None:
            resolved = self.names.resolve(keys)
            metrics = metric_columns(self.names, keys, resolved)
            judged = tuple(("metric:" + key, key) for key, goal in metrics.items() if goal != "unknown")
            known = self._mappings[keys] = (resolved, judged)
            self.metrics.update(metrics)
            self.columns.update(dict.fromkeys(keys))
            self._loss_named = self._loss_named or resolved.get("loss")
        mapping, judged = known
        index = self._records
        self._records += 1
        if self.step_unit is None:
            self.step_unit = "step" if "step" in mapping else "epoch" if "epoch" in mapping else "record"
            if self.step_unit == "record":
                self.builder.notes.append("no step or epoch column: records are numbered in file order")
        if self.step_unit == "record":
            step: int | None = index
        else:
            key = mapping.get(self.step_unit)
            place = where or (f"line {line}" if line is not None else f"record {index + 1}")
            step = None if key is None else parse_step(record.get(key), self.builder.path, place, self.step_unit)
        if step is None:
            return
        if line is not None:
            self.builder.mark_line(step, line)
        for canonical in METRICS:
            key = mapping.get(canonical)
            if key is None:
                continue
            if self.builder.add(canonical, step, record.get(key)) is not None:
                self.labels.setdefault(canonical, key)
                if canonical == "loss" and self.loss_column is None:
                    self.loss_column = key
                elif canonical == "eval_loss" and self.eval_column is None:
                    self.eval_column = key
        for series, key in judged:  # the eval metrics whose direction is known, named once per set of keys
            self.builder.add(series, step, record.get(key))
        time_key = mapping.get("wall_time")
        if time_key is not None:
            self.builder.add_time(step, parse_timestamp(record.get(time_key)))

    def build(self, copy: bool = True) -> Run:
        """The Run so far; an InputError when no record carried a loss."""
        return finish(self.builder, self.loss_column, self.eval_column, self._loss_named, self.columns, self.labels, self.step_unit, copy, self.metrics)


def finish(
    builder: RunBuilder,
    loss_column: str | None,
    eval_column: str | None,
    loss_named: str | None,
    columns: Mapping[str, None],
    labels: Mapping[str, str],
    step_unit: str | None,
    copy: bool = True,
    metrics: Mapping[str, str] | None = None,
) -> Run:
    """The Run of named-column records (read one at a time or as columns); an InputError when none carried a loss.
    ``metrics`` maps each eval-metric column to its goal."""
    if loss_column is None and eval_column is None:
        if loss_named is not None:
            raise InputError(builder.path, f"has a loss column ({loss_named}) with no values in it")
        names = list(columns)
        shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
        hint = "; name the loss with --map loss=COLUMN"
        raise InputError(builder.path, f"has no loss column (columns: {shown}){hint}" if names else "has no records")
    return builder.build(
        loss="loss",
        loss_name=loss_column or "loss",
        eval_names={"eval_loss": eval_column} if eval_column else None,
        metrics={"metric:" + column: (column, goal) for column, goal in (metrics or {}).items()},
        labels=labels,
        step_unit=step_unit or "step",
        copy=copy,
    )
