"""TensorBoard event files (``events.out.tfevents.*``), read without TensorFlow.

An event file is a sequence of TFRecords (length, checksum, data, checksum),
each an ``Event`` protocol buffer carrying a wall time, a step and a
``Summary`` of tagged scalar values (``simple_value``, or a scalar ``tensor``
as Keras writes them). The few fields trainproof needs are decoded here by
hand. A run directory with several event files (HF writes eval events to a
second file, Keras writes ``train/`` and ``validation/`` subfolders) is read
as one run.

Tags are matched after lower-casing and turning spaces and dashes into
underscores: ``train/loss`` and ``lm loss`` (Megatron) and ``epoch_loss``
(Keras) are the training loss; ``eval/loss``, ``lm loss validation`` or a
Keras loss under ``validation/`` the eval loss; likewise the learning rate and
the gradient norm. A last record cut short by a writer still running is left
out with a note.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from pathlib import Path

from trainproof.errors import InputError
from trainproof.model import Run
from trainproof.readers.base import RunBuilder

name = "tensorboard"
description = "TensorBoard event files (events.out.tfevents.*), or a run directory of them"

_MAGIC = b"brain.Event"
_PATTERN = "events.out.tfevents.*"
_EVAL_LOSS = re.compile(r"^(?:eval|validation|val)/(?:(.+)_)?loss$")
_TAGS = {
    "loss": ("train/loss", "lm_loss", "loss", "epoch_loss", "train_loss", "loss/train", "training_loss"),
    "learning_rate": ("train/learning_rate", "learning_rate", "train/lr", "lr", "epoch_learning_rate", "epoch_lr"),
    "grad_norm": ("train/grad_norm", "grad_norm", "gradient_norm"),
    "epoch": ("train/epoch",),
}
_EVAL_TAGS = ("lm_loss_validation", "val_loss", "validation_loss", "loss/val", "epoch_val_loss")
_DT_FLOAT, _DT_DOUBLE, _DT_INT32, _DT_INT64 = 1, 2, 3, 9


def sniff(path: Path, head: str) -> bool:
    return _MAGIC.decode() in head[:256] or path.name.startswith("events.out.tfevents")


def sniff_binary(path: Path, head: bytes) -> bool:
    return _MAGIC in head[:256]


def event_files(path: Path) -> list[Path]:
    """The event files of a path: the file itself, or every one under a run directory."""
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob(_PATTERN) if p.is_file())


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = buf[i]
        i += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, i
        shift += 7


def _fields(buf: bytes) -> Iterator[tuple[int, int, object]]:
    """(field number, wire type, value) of one protocol-buffer message, top level only."""
    i, n = 0, len(buf)
    while i < n:
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 1:
            value, i = buf[i : i + 8], i + 8
        elif wire == 2:
            length, i = _varint(buf, i)
            value, i = buf[i : i + length], i + length
        elif wire == 5:
            value, i = buf[i : i + 4], i + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        yield number, wire, value


def _records(data: bytes) -> Iterator[bytes | None]:
    """TFRecord payloads; None once when the last record is cut short."""
    i = 0
    while i < len(data):
        if i + 12 > len(data):
            yield None
            return
        (length,) = struct.unpack_from("<Q", data, i)
        start, end = i + 12, i + 12 + length
        if end + 4 > len(data):
            yield None
            return
        yield data[start:end]
        i = end + 4


def _tensor_scalar(buf: bytes) -> float | None:
    dtype, content, floats, doubles, ints = _DT_FLOAT, b"", [], [], []
    for number, wire, value in _fields(buf):
        if number == 1:
            dtype = value  # type: ignore[assignment]
        elif number == 4:
            content = value  # type: ignore[assignment]
        elif number == 5:
            floats += list(struct.unpack(f"<{len(value) // 4}f", value)) if wire == 2 else [struct.unpack("<f", value)[0]]  # type: ignore[arg-type]
        elif number == 6:
            doubles += list(struct.unpack(f"<{len(value) // 8}d", value)) if wire == 2 else [struct.unpack("<d", value)[0]]  # type: ignore[arg-type]
        elif number in (7, 10) and wire == 0:
            ints.append(value)
    if floats or doubles or ints:
        return float((floats or doubles or ints)[0])
    formats = {_DT_FLOAT: "<f", _DT_DOUBLE: "<d", _DT_INT32: "<i", _DT_INT64: "<q"}
    fmt = formats.get(dtype)  # type: ignore[call-overload]
    if fmt is None or len(content) != struct.calcsize(fmt):
        return None  # not a scalar (text summaries, histograms)
    return float(struct.unpack(fmt, content)[0])


def _scalars(summary: bytes) -> Iterator[tuple[str, float]]:
    for number, _, value in _fields(summary):
        if number != 1:
            continue
        tag, scalar = None, None
        for field, wire, item in _fields(value):  # type: ignore[arg-type]
            if field == 1:
                tag = item.decode("utf-8", errors="replace")  # type: ignore[union-attr]
            elif field == 2 and wire == 5:
                scalar = struct.unpack("<f", item)[0]  # type: ignore[arg-type]
            elif field == 8:
                scalar = _tensor_scalar(item)  # type: ignore[arg-type]
        if tag is not None and scalar is not None:
            yield tag, scalar


def _normal(tag: str) -> str:
    return tag.strip().lower().replace(" ", "_").replace("-", "_")


class _Mapper:
    """Tags to series, deciding once per tag."""

    def __init__(self) -> None:
        self.eval_names: dict[str, str] = {}
        self.loss_tag: str | None = None
        self._known: dict[tuple[str, bool], str | None] = {}

    def series(self, tag: str, validation: bool) -> str | None:
        key = (tag, validation)
        if key not in self._known:
            self._known[key] = self._decide(tag, validation)
        return self._known[key]

    def _decide(self, tag: str, validation: bool) -> str | None:
        normal = _normal(tag)
        if normal.endswith("_vs_samples") or normal.endswith("_vs_iterations"):
            return None
        match = _EVAL_LOSS.match(normal)
        if match or normal in _EVAL_TAGS or (validation and normal in _TAGS["loss"]):
            label = f"eval_{match.group(1)}_loss" if match and match.group(1) else "eval_loss"
            self.eval_names["eval:" + label] = label
            return "eval:" + label
        if validation:
            return None
        for canonical, spellings in _TAGS.items():
            if normal in spellings:
                if canonical == "loss" and self.loss_tag is None:
                    self.loss_tag = tag
                return canonical
        if normal == "train/train_runtime":
            return "runtime"
        return None


def read(path: Path) -> Run:
    files = event_files(path)
    if not files:
        raise InputError(path, f"has no TensorBoard event files ({_PATTERN})")
    builder = RunBuilder(path, name)
    mapper = _Mapper()
    epoch_axis = False
    events = 0
    for file in files:
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise InputError(file, f"cannot be read: {exc.strerror or exc}") from None
        validation = any(part.lower() in ("validation", "eval", "val") for part in file.relative_to(path).parts[:-1]) if path.is_dir() else False
        for payload in _records(data):
            if payload is None:
                builder.notes.append(f"{file.name}: the last record is cut short (still being written?) and was left out")
                break
            try:
                wall, step, summary = 0.0, 0, None
                for number, _, value in _fields(payload):
                    if number == 1:
                        (wall,) = struct.unpack("<d", value)  # type: ignore[arg-type]
                    elif number == 2:
                        step = int(value)  # type: ignore[arg-type]
                    elif number == 5:
                        summary = value
                if summary is None:
                    continue
                for tag, scalar in _scalars(summary):  # type: ignore[arg-type]
                    target = mapper.series(tag, validation)
                    if target == "runtime":
                        builder.runtime_s = scalar
                    elif target is not None:
                        events += 1
                        epoch_axis = epoch_axis or _normal(tag).startswith("epoch_")
                        builder.add(target, step, scalar)
                        if target == "loss":
                            builder.add_time(step, wall)
            except (ValueError, IndexError, struct.error):
                raise InputError(file, f"is not a valid TensorBoard event file (a record at event {events + 1} does not decode)") from None
    if not events:
        raise InputError(path, "has TensorBoard events but no loss, learning-rate or gradient-norm scalars")
    return builder.build(
        loss_name=mapper.loss_tag or "loss",
        eval_names=dict(sorted(mapper.eval_names.items(), key=lambda kv: (kv[1] != "eval_loss", kv[1]))),
        step_unit="epoch" if epoch_axis else "step",
    )
