"""Records with named columns (JSONL lines, CSV rows) into a Run.

Column names are matched case-insensitively against the common spellings
below, first match wins, so a PyTorch Lightning ``metrics.csv`` with both
``train_loss_step`` and ``train_loss_epoch`` is judged on the per-step loss.
Rows may be sparse: a Lightning row carries either training or validation
metrics, and a missing cell is simply not a point.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from trainproof.errors import InputError
from trainproof.model import Run
from trainproof.readers.base import RunBuilder, parse_number, parse_timestamp

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

_METRICS = ("loss", "eval_loss", "learning_rate", "grad_norm", "step_time", "loader_time", "epoch")


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


def build_run(
    path: Path, fmt: str, records: list[Mapping[str, object]], columns: list[str], lines: list[int] | None = None
) -> Run:
    """Records in file order into a Run. The step axis is ``step``, else ``epoch``, else the record number.

    ``lines`` gives the 1-based line of the log where each record starts.
    """
    mapping = resolve(columns)
    if "loss" not in mapping and "eval_loss" not in mapping:
        shown = ", ".join(columns[:12]) + (", ..." if len(columns) > 12 else "")
        raise InputError(path, f"has no loss column (columns: {shown})")
    builder = RunBuilder(path, fmt)
    step_key = mapping.get("step")
    epoch_key = mapping.get("epoch")
    if step_key is not None:
        step_unit = "step"
    elif epoch_key is not None:
        step_unit = "epoch"
    else:
        step_unit = "record"
        builder.notes.append("no step or epoch column: records are numbered in file order")
    for index, record in enumerate(records):
        step = _axis(record, step_key if step_key else epoch_key, index)
        if step is None:
            continue
        if lines is not None:
            builder.mark_line(step, lines[index])
        for canonical in _METRICS:
            key = mapping.get(canonical)
            if key is not None and not (canonical == "epoch" and step_unit == "epoch"):
                builder.add(canonical, step, record.get(key))
        time_key = mapping.get("wall_time")
        if time_key is not None:
            builder.add_time(step, parse_timestamp(record.get(time_key)))
    loss_column = mapping.get("loss")
    if loss_column is not None and not builder.has("loss"):
        raise InputError(path, f"has a loss column ({loss_column}) with no values in it")
    return builder.build(
        loss="loss",
        loss_name=loss_column,
        eval_names={"eval_loss": mapping["eval_loss"]} if "eval_loss" in mapping else None,
        step_unit=step_unit,
    )


def _axis(record: Mapping[str, object], key: str | None, index: int) -> int | None:
    if key is None:
        return index
    parsed = parse_number(record.get(key))
    if parsed is None or parsed[1] is not None or parsed[0] != parsed[0]:
        return None
    return int(parsed[0])
