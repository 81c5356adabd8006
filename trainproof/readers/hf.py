"""HuggingFace ``Trainer`` state: ``trainer_state.json`` and its ``log_history``.

``log_history`` mixes three kinds of entries, told apart by their keys:
training entries (``loss``, ``learning_rate`` or ``lr``, ``grad_norm``),
evaluation entries (``eval_loss``, or ``eval_<set>_loss`` per eval set) and the
final summary (``train_runtime``, ``train_loss``, the mean over the whole
run, which is not a point of the curve).

The file is read whole, up to MAX_DOCUMENT_BYTES.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from trainproof.errors import InputError
from trainproof.model import Checkpoint, Run
from trainproof.readers.base import RunBuilder, load_json, parse_step, read_document

name = "hf"
description = "HuggingFace Trainer trainer_state.json"
line_parser = None  # the Trainer rewrites the file whole at every save

_EVAL_LOSS = re.compile(r"^eval_(?:(.+)_)?loss$")
_CHECKPOINT_STEP = re.compile(r"checkpoint-(\d+)")
_STEP_KEY = re.compile(r'"step"\s*:\s*(\d+)')
_SUMMARY_KEYS = ("train_runtime", "train_samples_per_second", "train_steps_per_second")


def sniff(path: Path, head: str) -> bool:
    return head.lstrip().startswith("{") and '"log_history"' in head


def read(path: Path) -> Run:
    text = read_document(path)
    state = load_json(path, text)
    if not isinstance(state, dict) or "log_history" not in state:
        raise InputError(path, "is JSON but not a HuggingFace trainer_state.json (no log_history)")
    history = state["log_history"]
    if not isinstance(history, list):
        raise InputError(path, "has a log_history that is not a list")
    return parse_state(path, state, history, text)


def add_entry(builder: RunBuilder, entry: object, eval_names: dict[str, str], where: str = "") -> None:
    """One ``log_history`` entry (or one ``on_log`` record of a live Trainer) into the builder.

    Training entries carry ``loss``; evaluation entries ``eval_loss`` or
    ``eval_<set>_loss``; the summary entry ``train_runtime`` (its
    ``train_loss`` is the run's mean, not a point of the curve). An entry
    without a numeric step is not a point; a numeric step that is not a whole
    int64 number is an InputError naming ``where`` (``log_history entry 3``).
    """
    if not isinstance(entry, dict):
        return
    value = entry.get("step")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    step: int = parse_step(value, builder.path, where)  # type: ignore[assignment]  # a number is never missing
    if "loss" not in entry and any(k in entry for k in _SUMMARY_KEYS):
        runtime = entry.get("train_runtime")
        if isinstance(runtime, (int, float)) and not isinstance(runtime, bool) and math.isfinite(runtime):
            builder.runtime_s = float(runtime)
        return
    for key, value in entry.items():
        if _EVAL_LOSS.match(key):
            eval_names.setdefault("eval:" + key, key)
            builder.add("eval:" + key, step, value)
    if "loss" in entry:
        builder.add("loss", step, entry["loss"])
        builder.add("learning_rate", step, entry.get("learning_rate", entry.get("lr")))
        builder.add("grad_norm", step, entry.get("grad_norm"))


def ordered_evals(eval_names: dict[str, str]) -> dict[str, str]:
    """The default eval set first, then named ones alphabetically."""
    return dict(sorted(eval_names.items(), key=lambda kv: (kv[1] != "eval_loss", kv[1])))


def parse_state(path: Path, state: dict, history: list, text: str = "") -> Run:
    builder = RunBuilder(path, name)
    for number, line in enumerate(text.splitlines(), start=1):
        for match in _STEP_KEY.finditer(line):
            if len(match.group(1)) <= 18:  # a longer one is refused with its entry below
                builder.mark_line(int(match.group(1)), number)
    eval_names: dict[str, str] = {}
    for index, entry in enumerate(history, start=1):
        add_entry(builder, entry, eval_names, f"log_history entry {index}")
    best = state.get("best_model_checkpoint")
    if isinstance(best, str) and best:
        match = _CHECKPOINT_STEP.search(best)
        best_step = state.get("best_global_step")
        step = None
        if match:
            step = parse_step(match.group(1), path, "best_model_checkpoint")
        elif isinstance(best_step, int) and not isinstance(best_step, bool):
            step = parse_step(best_step, path, "best_global_step")
        if step is not None:
            builder.checkpoints.append(Checkpoint(step=step, path=best, best=True))
    max_steps = state.get("max_steps")
    if isinstance(max_steps, (int, float)) and not isinstance(max_steps, bool):
        count = parse_step(max_steps, path, what="max_steps")
        builder.max_steps = count if count is not None and count > 0 else None
    return builder.build(eval_names=ordered_evals(eval_names))
