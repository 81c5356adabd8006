"""HuggingFace ``Trainer`` state: ``trainer_state.json`` and its ``log_history``.

``log_history`` mixes three kinds of entries, told apart by their keys:
training entries (``loss``, ``learning_rate`` or ``lr``, ``grad_norm``),
evaluation entries (``eval_loss``, or ``eval_<set>_loss`` per eval set) and the
final summary (``train_runtime``, ``train_loss``, the mean over the whole
run, which is not a point of the curve).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from trainproof.errors import InputError
from trainproof.model import Checkpoint, Run
from trainproof.readers.base import RunBuilder, read_text

name = "hf"
description = "HuggingFace Trainer trainer_state.json"

_EVAL_LOSS = re.compile(r"^eval_(?:(.+)_)?loss$")
_CHECKPOINT_STEP = re.compile(r"checkpoint-(\d+)")
_STEP_KEY = re.compile(r'"step"\s*:\s*(\d+)')
_SUMMARY_KEYS = ("train_runtime", "train_samples_per_second", "train_steps_per_second")


def sniff(path: Path, head: str) -> bool:
    return head.lstrip().startswith("{") and '"log_history"' in head


def load_json(path: Path, text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()) - 1:
            raise InputError(path, "is truncated: the JSON ends before the document is complete") from None
        raise InputError(path, f"is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None


def read(path: Path) -> Run:
    text = read_text(path)
    state = load_json(path, text)
    if not isinstance(state, dict) or "log_history" not in state:
        raise InputError(path, "is JSON but not a HuggingFace trainer_state.json (no log_history)")
    history = state["log_history"]
    if not isinstance(history, list):
        raise InputError(path, "has a log_history that is not a list")
    return parse_state(path, state, history, text)


def parse_state(path: Path, state: dict, history: list, text: str = "") -> Run:
    builder = RunBuilder(path, name)
    for number, line in enumerate(text.splitlines(), start=1):
        for match in _STEP_KEY.finditer(line):
            builder.mark_line(int(match.group(1)), number)
    eval_names: dict[str, str] = {}
    runtime = None
    for entry in history:
        if not isinstance(entry, dict):
            continue
        step = entry.get("step")
        if isinstance(step, bool) or not isinstance(step, (int, float)):
            continue
        step = int(step)
        if any(k in entry for k in _SUMMARY_KEYS) and "loss" not in entry:
            runtime = entry.get("train_runtime", runtime)
            continue
        for key, value in entry.items():
            match = _EVAL_LOSS.match(key)
            if match:
                eval_names["eval:" + key] = key
                builder.add("eval:" + key, step, value)
        if "loss" in entry:
            builder.add("loss", step, entry["loss"])
            builder.add("learning_rate", step, entry.get("learning_rate", entry.get("lr")))
            builder.add("grad_norm", step, entry.get("grad_norm"))
            builder.add("epoch", step, entry.get("epoch"))
    best = state.get("best_model_checkpoint")
    if isinstance(best, str) and best:
        match = _CHECKPOINT_STEP.search(best)
        best_step = state.get("best_global_step")
        step = int(match.group(1)) if match else best_step if isinstance(best_step, int) else None
        if step is not None:
            builder.checkpoints.append(Checkpoint(step=step, path=best, best=True))
    max_steps = state.get("max_steps")
    return builder.build(
        eval_names=dict(sorted(eval_names.items(), key=lambda kv: (kv[1] != "eval_loss", kv[1]))),
        max_steps=int(max_steps) if isinstance(max_steps, (int, float)) and max_steps > 0 else None,
        runtime_s=float(runtime) if isinstance(runtime, (int, float)) else None,
    )
