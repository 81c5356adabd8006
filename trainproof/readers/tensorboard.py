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
out with a note. Records are read one at a time from the file, each at most
MAX_RECORD_BYTES; a record that does not decode as an Event is an error naming
it. The run's location is the event file that holds its training loss.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from trainproof.errors import InputError
from trainproof.model import Run
from trainproof.readers.base import RunBuilder, open_log, read_block, size_text

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
_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5

MAX_RECORD_BYTES = 64 * 1024 * 1024
"""The largest TFRecord read. A scalar event is tens of bytes; the largest real records (a model's graph, an image
summary) are a few MB, and 64 MiB was protobuf's default limit on one message for years. A longer length is a
corrupt file or not an event file, and reading it would hold that much in memory."""

_BROKEN = (ValueError, IndexError, TypeError, AttributeError, OverflowError, struct.error)
"""Every way decoding one record can fail: each is the file's fault, reported as an InputError naming the record."""


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
            return result & 0xFFFF_FFFF_FFFF_FFFF, i
        shift += 7
        if shift > 63:
            raise ValueError("a varint longer than 64 bits")


def _signed(value: int) -> int:
    """An int64 field as written: a negative number is its two's complement in 64 bits."""
    return value - (1 << 64) if value >> 63 else value


def _fields(buf: bytes) -> Iterator[tuple[int, int, object]]:
    """(field number, wire type, value) of one protocol-buffer message, top level only."""
    i, n = 0, len(buf)
    while i < n:
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == _VARINT:
            value, i = _varint(buf, i)
        elif wire == _FIXED64:
            value, i = buf[i : i + 8], i + 8
        elif wire == _BYTES:
            length, i = _varint(buf, i)
            value, i = buf[i : i + length], i + length
        elif wire == _FIXED32:
            value, i = buf[i : i + 4], i + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if i > n:
            raise ValueError("a field runs past the end of its message")
        yield number, wire, value


def _expect(wire: int, value: object, *wanted: int) -> object:
    """A field's value when it has a wire type its field can have; any other is a broken record, not a TypeError."""
    if wire not in wanted:
        raise ValueError(f"a field of wire type {wire}")
    return value


def _records(handle: BinaryIO, path: Path) -> Iterator[bytes | None]:
    """TFRecord payloads, read one at a time from the file; None once when the last record is cut short."""
    offset = 0
    while header := read_block(handle, 12, path):
        if len(header) < 12:
            yield None
            return
        (length,) = struct.unpack_from("<Q", header)
        if length > MAX_RECORD_BYTES:
            limit = size_text(MAX_RECORD_BYTES)
            raise InputError(
                path, f"has a record of {length:,} bytes at byte {offset:,}, over the {limit} limit: not a TensorBoard event file"
            )
        body = read_block(handle, length + 4, path)
        if len(body) < length + 4:
            yield None
            return
        yield body[:length]
        offset += 16 + length


def _first(value: bytes, wire: int, fixed: int, size: int, fmt: str) -> list[float]:
    """The first element of a repeated float or double field, packed or not (only the first is ever used)."""
    _expect(wire, value, _BYTES, fixed)
    if len(value) % size:
        raise ValueError("a packed field cut short")
    return [struct.unpack_from(fmt, value)[0]] if value else []


def _tensor_scalar(buf: bytes) -> float | None:
    dtype, content, floats, doubles, ints = _DT_FLOAT, b"", [], [], []
    for number, wire, value in _fields(buf):
        if number == 1:
            dtype = _expect(wire, value, _VARINT)  # type: ignore[assignment]
        elif number == 4:
            content = _expect(wire, value, _BYTES)  # type: ignore[assignment]
        elif number == 5:
            floats += _first(value, wire, _FIXED32, 4, "<f")  # type: ignore[arg-type]
        elif number == 6:
            doubles += _first(value, wire, _FIXED64, 8, "<d")  # type: ignore[arg-type]
        elif number in (7, 10) and wire == _VARINT:
            ints.append(_signed(value))  # type: ignore[arg-type]
    if floats or doubles or ints:
        return float((floats or doubles or ints)[0])
    formats = {_DT_FLOAT: "<f", _DT_DOUBLE: "<d", _DT_INT32: "<i", _DT_INT64: "<q"}
    fmt = formats.get(dtype)  # type: ignore[call-overload]
    if fmt is None or len(content) != struct.calcsize(fmt):
        return None  # not a scalar (text summaries, histograms)
    return float(struct.unpack(fmt, content)[0])


def _scalars(summary: bytes) -> Iterator[tuple[str, float]]:
    for number, wire, value in _fields(summary):
        if number != 1:
            continue
        tag, scalar = None, None
        for field, kind, item in _fields(_expect(wire, value, _BYTES)):  # type: ignore[arg-type]
            if field == 1:
                tag = _expect(kind, item, _BYTES).decode("utf-8", errors="replace")  # type: ignore[attr-defined]
            elif field == 2:
                (scalar,) = struct.unpack("<f", _expect(kind, item, _FIXED32))  # type: ignore[arg-type]
            elif field == 8:
                scalar = _tensor_scalar(_expect(kind, item, _BYTES))  # type: ignore[arg-type]
        if tag is not None and scalar is not None:
            yield tag, scalar


def _event(payload: bytes) -> tuple[float, int, list[tuple[str, float]]]:
    """Wall time, step and tagged scalars of one Event record, decoded whole before any is used."""
    wall, step, scalars = 0.0, 0, []
    for number, wire, value in _fields(payload):
        if number == 1:
            (wall,) = struct.unpack("<d", _expect(wire, value, _FIXED64))  # type: ignore[arg-type]
        elif number == 2:
            step = _signed(_expect(wire, value, _VARINT))  # type: ignore[arg-type]
        elif number == 5:
            scalars = list(_scalars(_expect(wire, value, _BYTES)))  # type: ignore[arg-type]
    return wall, step, scalars


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
    loss_file: Path | None = None
    for file in files:
        validation = any(part.lower() in ("validation", "eval", "val") for part in file.relative_to(path).parts[:-1]) if path.is_dir() else False
        with open_log(file) as handle:
            for number, payload in enumerate(_records(handle, file), start=1):
                if payload is None:
                    builder.notes.append(f"{file.name}: the last record is cut short (still being written?) and was left out")
                    break
                try:
                    wall, step, scalars = _event(payload)
                except _BROKEN:
                    raise InputError(file, f"is not a valid TensorBoard event file (record {number} does not decode)") from None
                for tag, scalar in scalars:
                    target = mapper.series(tag, validation)
                    if target == "runtime":
                        if math.isfinite(scalar):
                            builder.runtime_s = scalar
                    elif target is not None:
                        events += 1
                        epoch_axis = epoch_axis or _normal(tag).startswith("epoch_")
                        builder.add(target, step, scalar)
                        if target == "loss":
                            builder.add_time(step, wall)
                            loss_file = loss_file or file
    if not events:
        raise InputError(path, "has TensorBoard events but no loss, learning-rate or gradient-norm scalars")
    builder.path = loss_file or path  # findings point at a file, as they do for every other format
    return builder.build(
        loss_name=mapper.loss_tag or "loss",
        eval_names=dict(sorted(mapper.eval_names.items(), key=lambda kv: (kv[1] != "eval_loss", kv[1]))),
        step_unit="epoch" if epoch_axis else "step",
    )
