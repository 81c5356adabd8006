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
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from trainproof.io.bounded import iter_lines
from trainproof.io.errors import InputError
from trainproof.runs.model import Checkpoint, Run
from trainproof.runs.readers.base import RunBuilder, parse_step
from trainproof.runs.readers.names import DEFAULT_NAMES, Names

name = "coqui"
description = "Coqui TTS Trainer text log (trainer_0_log.txt)"

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_STEP = re.compile(r"-->\s*(?:TIME:\s*(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*--\s*)?STEP:\s*\d+/\d+\s*--\s*GLOBAL_STEP:\s*(\d+)")
_VALUE = re.compile(r"\|\s*>\s*([A-Za-z0-9_]+):\s*(\S+)")
_TRAINING = re.compile(r">\s*TRAINING\s*\((\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\)")
# A checkpoint line is found in two linear steps, the marker and then the file name after it: one pattern with a
# lazy ``.*?`` between them is quadratic on a line repeating the marker (a 560 KB line took 100 s).
_BEST = (re.compile(r">\s*BEST MODEL\s*:"), re.compile(r"best_model_(\d+)\.pth"))
_CHECKPOINT = (re.compile(r">\s*CHECKPOINT\s*:"), re.compile(r"checkpoint_(\d+)\.pth"))
_RESTORED = re.compile(r"Model restored from step (\d+)")
_NUMBERED = re.compile(r"^loss_(\d+)$")
_EPOCH = datetime(1970, 1, 1)
_MARKERS = ("GLOBAL_STEP:", "EVAL PERFORMANCE", "> EPOCH:", "> TRAINING (")


def sniff(path: Path, head: str) -> bool:
    return sum(marker in head for marker in _MARKERS) >= 1 and ("| >" in head or "GLOBAL_STEP" in head)


def _timestamp(text: str) -> float | None:
    # Seconds on a naive clock: only differences are used, and they must not
    # depend on the time zone of the machine reading the log. An impossible
    # date (month 19) is no time at all.
    try:
        return (datetime.strptime(text, "%Y-%m-%d %H:%M:%S") - _EPOCH).total_seconds()
    except ValueError:
        return None


def _checkpoint(line: str, patterns: tuple[re.Pattern[str], re.Pattern[str]]) -> tuple[str, str] | None:
    """(path, step digits) of a BEST MODEL or CHECKPOINT line: the text after the marker up to the first file name."""
    marker, filename = patterns
    found = marker.search(line)
    named = filename.search(line, found.end()) if found else None
    if found is None or named is None:
        return None
    return line[found.end() : named.end()].strip(), named.group(1)


class LineParser:
    """Lines of a Coqui log, fed in order (``trainproof watch`` feeds them as they are written).

    Every ``key: value`` of a training record is kept under ``train:<key>``
    and every ``avg_<key>`` of an evaluation under ``eval:<key>``; which of
    them is the loss (``loss``, or the last ``loss_N``) is decided when a Run
    is built, from the keys seen so far.
    """

    def __init__(self, path: Path | str, names: Names = DEFAULT_NAMES) -> None:
        self.builder = RunBuilder(path, name)
        self.overrides = names.overrides
        self.step: int | None = None
        self.block: str | None = None  # "train" or "eval"
        self.pending_time: float | None = None
        self.keys: dict[str, None] = {}

    def feed(self, line: str, number: int) -> None:
        line = _ANSI.sub("", line)
        builder = self.builder
        match = _STEP.search(line)
        if match:
            self.step = self._step(match.group(2), number)
            builder.mark_line(self.step, number)
            self.block = "train"
            if match.group(1):
                builder.add_time(self.step, _timestamp(match.group(1)))
            elif self.pending_time is not None:
                builder.add_time(self.step, self.pending_time)
            self.pending_time = None
            return
        if "EVAL PERFORMANCE" in line:
            self.block = "eval"
            return
        match = _VALUE.search(line)
        if match and self.block is not None:
            key, value = match.groups()
            if self.block == "train" and self.step is not None:
                self.keys.setdefault(key, None)
                builder.add("train:" + key, self.step, value)
            elif self.block == "eval" and key.startswith("avg_"):
                builder.add("eval:" + key[4:], self.step or 0, value)
            return
        if line.lstrip().startswith(">"):
            self.block = None
        match = _TRAINING.search(line)
        if match:
            self.pending_time = _timestamp(match.group(1))
        elif found := _checkpoint(line, _BEST):
            builder.checkpoints.append(Checkpoint(self._step(found[1], number), found[0], best=True))
        elif found := _checkpoint(line, _CHECKPOINT):
            builder.checkpoints.append(Checkpoint(self._step(found[1], number), found[0]))
        elif match := _RESTORED.search(line):
            builder.notes.append(f"the run was restored from a checkpoint at step {match.group(1)}")

    def _step(self, digits: str, number: int) -> int:
        return parse_step(digits, self.builder.path, f"line {number}")  # type: ignore[return-value]  # digits are never empty

    def build(self, copy: bool = True) -> Run:
        builder = self.builder
        evals = [n[5:] for n in builder.names() if n.startswith("eval:")]
        if not self.keys and not evals:
            raise InputError(builder.path, "looks like a Coqui log but has no GLOBAL_STEP or EVAL PERFORMANCE records")
        over = self.overrides
        suffix = "" if "loss" in over else _loss_suffix(self.keys or dict.fromkeys(evals))
        loss_key = over.get("loss", "loss" + suffix)
        if "loss" in over and loss_key not in self.keys:
            shown = ", ".join(list(self.keys)[:12]) + (", ..." if len(self.keys) > 12 else "")
            raise InputError(builder.path, f"has no training value '{loss_key}' for --map loss (keys: {shown})")
        candidates = {
            "learning_rate": ("current_lr" + suffix, "current_lr", "current_lr_0"),
            "grad_norm": ("grad_norm" + suffix, "grad_norm"),
            "step_time": ("step_time",),
            "loader_time": ("loader_time",),
        }
        candidates.update({series: (over[series],) for series in candidates if series in over})
        sources = {"train:loss": "train:" + loss_key}
        for target, keys in candidates.items():
            key = next((k for k in keys if k in self.keys), None)
            if key is not None:
                sources[target] = "train:" + key
        notes: tuple[str, ...] = ()
        if suffix:
            notes = (f"several losses logged (GAN); judging '{loss_key}', the last optimizer's loss",)
        eval_key = over["eval_loss"].removeprefix("avg_") if "eval_loss" in over else loss_key
        run = builder.build(
            loss="train:loss",
            loss_name=loss_key,
            eval_names={"eval:" + eval_key: "avg_" + eval_key},
            sources=sources,
            copy=copy,
        )
        return replace(run, notes=run.notes + notes) if notes else run


line_parser = LineParser


def read(path: Path, names: Names = DEFAULT_NAMES) -> Run:
    """The Run of a Coqui text log. Its keys are Coqui's own (``loss``, ``current_lr``, ...); ``--map`` names
    another key for a series (``--map loss=loss_mel_ce``; an eval loss by its ``avg_`` key or without the prefix)."""
    parser = LineParser(path, names)
    for number, line, _ in iter_lines(path):
        parser.feed(line, number)
    return parser.build()


def _loss_suffix(keys: dict[str, None]) -> str:
    if "loss" in keys:
        return ""
    numbered = sorted(int(m.group(1)) for k in keys if (m := _NUMBERED.match(k)))
    return f"_{numbered[-1]}" if numbered else ""
