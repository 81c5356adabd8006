"""Coqui Trainer text logs (``trainer_0_log.txt``), ANSI colour codes and all.

A training record is a ``--> [TIME: ... -- ]STEP: i/n -- GLOBAL_STEP: g``
header followed by ``| > key: value  (running average)`` lines; the first
value is the step's own. ``EVAL PERFORMANCE`` blocks carry ``avg_*`` values
for the evaluation after the last training step. ``BEST MODEL`` and
``CHECKPOINT`` lines name the files the trainer wrote.

Models trained with several optimizers (GANs such as VITS) log ``loss_0``,
``loss_1``, ... instead of ``loss``; the highest-numbered one (the generator
in Coqui's GAN recipes) is judged, and the choice is noted in the report.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from trainproof.errors import InputError
from trainproof.model import Checkpoint, Run
from trainproof.readers.base import RunBuilder, read_text

name = "coqui"
description = "Coqui TTS Trainer text log (trainer_0_log.txt)"

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_STEP = re.compile(r"-->\s*(?:TIME:\s*(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*--\s*)?STEP:\s*\d+/\d+\s*--\s*GLOBAL_STEP:\s*(\d+)")
_VALUE = re.compile(r"\|\s*>\s*([A-Za-z0-9_]+):\s*(\S+)")
_TRAINING = re.compile(r">\s*TRAINING\s*\((\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\)")
_BEST = re.compile(r">\s*BEST MODEL\s*:\s*(.*?best_model_(\d+)\.pth)")
_CHECKPOINT = re.compile(r">\s*CHECKPOINT\s*:\s*(.*?checkpoint_(\d+)\.pth)")
_RESTORED = re.compile(r"Model restored from step (\d+)")
_NUMBERED = re.compile(r"^loss_(\d+)$")
_EPOCH = datetime(1970, 1, 1)
_MARKERS = ("GLOBAL_STEP:", "EVAL PERFORMANCE", "> EPOCH:", "> TRAINING (")


def sniff(path: Path, head: str) -> bool:
    return sum(marker in head for marker in _MARKERS) >= 1 and ("| >" in head or "GLOBAL_STEP" in head)


def _timestamp(text: str) -> float:
    # Seconds on a naive clock: only differences are used, and they must not
    # depend on the time zone of the machine reading the log.
    return (datetime.strptime(text, "%Y-%m-%d %H:%M:%S") - _EPOCH).total_seconds()


def read(path: Path) -> Run:
    text = _ANSI.sub("", read_text(path))
    train: dict[str, dict[int, str]] = {}
    evals: dict[str, dict[int, str]] = {}
    builder = RunBuilder(path, name)
    step: int | None = None
    block: str | None = None  # "train" or "eval"
    pending_time: float | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        match = _STEP.search(line)
        if match:
            step = int(match.group(2))
            builder.mark_line(step, number)
            block = "train"
            if match.group(1):
                builder.add_time(step, _timestamp(match.group(1)))
            elif pending_time is not None:
                builder.add_time(step, pending_time)
            pending_time = None
            continue
        if "EVAL PERFORMANCE" in line:
            block = "eval"
            continue
        match = _VALUE.search(line)
        if match and block is not None:
            key, value = match.groups()
            if block == "train" and step is not None:
                train.setdefault(key, {})[step] = value
            elif block == "eval" and key.startswith("avg_"):
                evals.setdefault(key[4:], {})[step or 0] = value
            continue
        if line.lstrip().startswith(">"):
            block = None
        match = _TRAINING.search(line)
        if match:
            pending_time = _timestamp(match.group(1))
        elif match := _BEST.search(line):
            builder.checkpoints.append(Checkpoint(int(match.group(2)), match.group(1).strip(), best=True))
        elif match := _CHECKPOINT.search(line):
            builder.checkpoints.append(Checkpoint(int(match.group(2)), match.group(1).strip()))
        elif match := _RESTORED.search(line):
            builder.notes.append(f"the run was restored from a checkpoint at step {match.group(1)}")
    if not train and not evals:
        raise InputError(path, "looks like a Coqui log but has no GLOBAL_STEP or EVAL PERFORMANCE records")
    suffix = _loss_suffix(train or evals)
    loss_key = "loss" + suffix
    sources = {
        "loss": (loss_key,),
        "learning_rate": ("current_lr" + suffix, "current_lr", "current_lr_0"),
        "grad_norm": ("grad_norm" + suffix, "grad_norm"),
        "step_time": ("step_time",),
        "loader_time": ("loader_time",),
    }
    for target, keys in sources.items():
        key = next((k for k in keys if k in train), None)
        for s, value in train.get(key, {}).items() if key else ():
            builder.add(target, s, value)
    for s, value in evals.get(loss_key, {}).items():
        builder.add("eval:avg_" + loss_key, s, value)
    if suffix:
        builder.notes.append(f"several losses logged (GAN); judging '{loss_key}', the last optimizer's loss")
    return builder.build(loss_name=loss_key, eval_names={"eval:avg_" + loss_key: "avg_" + loss_key})


def _loss_suffix(keys: dict[str, dict[int, str]]) -> str:
    if "loss" in keys:
        return ""
    numbered = sorted(int(m.group(1)) for k in keys if (m := _NUMBERED.match(k)))
    return f"_{numbered[-1]}" if numbered else ""
