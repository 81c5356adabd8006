"""Records with named columns (JSONL lines, CSV rows) into a Run, one record at a time.

Column names are matched case-insensitively against the common spellings
below, first match wins, so a PyTorch Lightning ``metrics.csv`` with both
``train_loss_step`` and ``train_loss_epoch`` is judged on the per-step loss.
Rows may be sparse: a Lightning row carries either training or validation
metrics, and a missing cell is simply not a point. The step axis is
``step``, else ``epoch`` (Keras), else the record number, decided by the
first record and kept; a step that is there but is not a whole int64 number
is an error naming its line (see :func:`trainproof.readers.base.parse_step`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from trainproof.errors import InputError
from trainproof.model import Run
from trainproof.readers.base import RunBuilder, parse_step, parse_timestamp

ALIASES: Mapping[str, tuple[str, ...]] = {
    "step": ("step", "global_step", "trainer/global_step", "train/global_step", "_step", "iteration", "iter", "it", "steps"),
    "epoch": ("epoch", "epochs", "train/epoch"),
    "loss": (
        "loss", "train_loss", "training_loss", "train/loss", "loss/train", "trainer/loss", "train_loss_step",
        "train/loss_step", "train_loss_epoch", "train/loss_epoch",
    ),
    "eval_loss": (
        "eval_loss", "val_loss", "valid_loss", "validation_loss", "eval/loss", "val/loss", "valid/loss",
        "validation/loss", "loss/val", "loss/valid", "loss/validation", "val_loss_epoch", "val/loss_epoch",
    ),
    "learning_rate": ("learning_rate", "lr", "train/learning_rate", "train/lr", "current_lr", "lr-adamw", "lr-adam", "lr-sgd"),
    "grad_norm": ("grad_norm", "gradient_norm", "train/grad_norm", "grad_norm/total", "total_grad_norm", "grad_norm_2.0_norm_total"),
    "wall_time": ("time", "timestamp", "wall_time", "walltime", "_timestamp", "_runtime", "elapsed", "elapsed_time", "created_at"),
    "step_time": ("step_time", "time_per_step", "iter_time", "batch_time", "train/step_time", "sec_per_step"),
    "loader_time": ("loader_time", "data_time", "dataloader_time", "data_load_time"),
}

_METRICS = ("loss", "eval_loss", "learning_rate", "grad_norm", "step_time", "loader_time")
"""The series a record's columns feed; ``epoch`` is not one of them, only an axis (Keras logs count epochs, not steps)."""


def resolve(columns: Iterable[str]) -> dict[str, str]:
    """Map each canonical series to the column that carries it, if any."""
    by_lower: dict[str, str] = {}
    for column in columns:
        by_lower.setdefault(column.strip().lower(), column)
    found: dict[str, str] = {}
    for canonical, spellings in ALIASES.items():
        for spelling in spellings:
            if spelling in by_lower:
                found[canonical] = by_lower[spelling]
                break
    return found


class RecordParser:
    """Feeds named-column records into a RunBuilder, one at a time, in file order."""

    def __init__(self, builder: RunBuilder) -> None:
        self.builder = builder
        self.step_unit: str | None = None
        self.loss_column: str | None = None
        self.eval_column: str | None = None
        self.columns: dict[str, None] = {}
        self._mappings: dict[tuple[str, ...], dict[str, str]] = {}
        self._records = 0
        self._loss_named: str | None = None
        self.labels: dict[str, str] = {}
        """The column each series came from, so a message names what the log calls it."""

    def feed(self, record: Mapping[str, object], line: int | None = None, where: str | None = None) -> None:
        """One record; ``line`` is its line in the file, ``where`` says where it is when it has none (``record 3``)."""
        keys = tuple(record)
        mapping = self._mappings.get(keys)
        if mapping is None:
            mapping = self._mappings[keys] = resolve(keys)
            self.columns.update(dict.fromkeys(keys))
            self._loss_named = self._loss_named or mapping.get("loss")
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
        for canonical in _METRICS:
            key = mapping.get(canonical)
            if key is None:
                continue
            if self.builder.add(canonical, step, record.get(key)) is not None:
                self.labels.setdefault(canonical, key)
                if canonical == "loss" and self.loss_column is None:
                    self.loss_column = key
                elif canonical == "eval_loss" and self.eval_column is None:
                    self.eval_column = key
        time_key = mapping.get("wall_time")
        if time_key is not None:
            self.builder.add_time(step, parse_timestamp(record.get(time_key)))

    def build(self, copy: bool = True) -> Run:
        """The Run so far; an InputError when no record carried a loss."""
        if self.loss_column is None and self.eval_column is None:
            if self._loss_named is not None:
                raise InputError(self.builder.path, f"has a loss column ({self._loss_named}) with no values in it")
            columns = list(self.columns)
            shown = ", ".join(columns[:12]) + (", ..." if len(columns) > 12 else "")
            raise InputError(self.builder.path, f"has no loss column (columns: {shown})" if columns else "has no records")
        return self.builder.build(
            loss="loss",
            loss_name=self.loss_column or "loss",
            eval_names={"eval_loss": self.eval_column} if self.eval_column else None,
            labels=self.labels,
            step_unit=self.step_unit or "step",
            copy=copy,
        )
