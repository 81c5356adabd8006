"""TensorBoard event files (``events.out.tfevents.*``), read without TensorFlow.

An event file is a sequence of TFRecords (length, checksum, data, checksum),
each an ``Event`` protocol buffer carrying a wall time, a step and a
``Summary`` of tagged scalar values (``simple_value``, or a scalar ``tensor``
as Keras writes them). The few fields trainproof needs are decoded here by
hand. A run directory with several event files (HF writes eval events to a
second file, Keras writes ``train/`` and ``validation/`` subfolders) is read
as one run.

The scalars are gathered per tag first, and the tags are then given to the
shared name table (:mod:`trainproof.runs.readers.names`) all at once, so that a
run writing both ``train/loss`` and ``loss`` is judged on the one the table
prefers, never on both mixed into one series. Under a ``validation/`` folder a
training-loss tag is the eval loss. Megatron's ``... vs samples`` and
``... vs iterations`` copies of a series are none, unless ``--map`` names one.

A last record cut short by a writer still running is left out with a note.
Every record's length and data are checked against their CRC-32C checksums; a
record that fails is an error naming its byte offset, and one that does not
decode as an Event an error naming it. Cut in the middle and followed by more
records, a file fails there (the record's length reaches into the next ones),
where TensorBoard would silently stop. The run's location is the event file
that holds its training loss.

A file of a million scalars is a million records of tens of bytes: decoded
one at a time in Python, it took 180 times as long to read as its bytes. So the
records are found and checked in bulk with numpy
(:mod:`trainproof.runs.readers.tfrecord`, which reads the file) and decoded in bulk
too (:func:`_group`), and a record the bulk path cannot vouch for goes through
the plain decoder (:func:`_event`), which every record's numbers agree with
either way (tests/runs/readers/test_tensorboard_real.py).
"""

from __future__ import annotations

import functools
import itertools
import os
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np

from trainproof.io.errors import InputError
from trainproof.io.safe import visible
from trainproof.runs.model import Run, Series
from trainproof.runs.readers import tfrecord
from trainproof.runs.readers.base import Entries, last_per_step, metric_fields
from trainproof.runs.readers.columns import METRICS
from trainproof.runs.readers.names import DEFAULT_NAMES, VALIDATION_FOLDERS, Names, eval_set, in_validation_folder, normal

name = "tensorboard"
description = "TensorBoard event files (events.out.tfevents.*), or a run directory of them"
line_parser = None  # event files are binary records, read whole

_MAGIC = b"brain.Event"
EVENT_FILE_PREFIX = "events.out.tfevents."
"""How every TensorBoard event file's name starts."""
_PATTERN = EVENT_FILE_PREFIX + "*"
_RUNTIME = "train/train_runtime"
"""HF's total training time, logged once at the end: the run's runtime, not a series."""
_SHOWN_TAGS = 12
"""Tags named, at most, in the error of a run none of whose tags is a series trainproof reads."""
_DT_FLOAT, _DT_DOUBLE, _DT_INT32, _DT_INT64 = 1, 2, 3, 9
_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5

_BROKEN = (ValueError, IndexError, TypeError, AttributeError, OverflowError, struct.error)
"""Every way decoding one record can fail: each is the file's fault, reported as an InputError naming the record."""


def sniff(path: Path, head: str) -> bool:
    return _MAGIC.decode() in head[:256] or path.name.startswith("events.out.tfevents")


def sniff_bytes(path: Path, head: bytes) -> bool:
    return _MAGIC in head[:256]


def event_files(path: Path) -> list[Path]:
    """The event files of a path: the file itself, or every one under a run directory."""
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob(_PATTERN) if p.is_file())


run_files = event_files


def is_run_dir(path: Path) -> bool:
    return bool(event_files(path))


def holds_run(folder: Path, entries: Entries) -> bool:
    """Event files in the folder, or in Keras's ``train/`` and ``validation/`` subfolders."""
    for name, is_dir in entries:
        if not is_dir and name.startswith(EVENT_FILE_PREFIX) and (folder / name).is_file():
            return True
        if is_dir and name.lower() in KERAS_FOLDERS and _holds_events(folder / name):
            return True
    return False


KERAS_FOLDERS = frozenset({"train", *VALIDATION_FOLDERS})


def _holds_events(folder: Path) -> bool:
    try:
        with os.scandir(folder) as scan:
            return any(entry.name.startswith(EVENT_FILE_PREFIX) and entry.is_file() for entry in scan)
    except OSError:
        return False


# --- protocol buffers ----------------------------------------------------------------------------------------------


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


def _fields(buf: bytes) -> Iterator[tuple[int, int, object, int, int]]:
    """(field number, wire type, value, where the value starts, where it ends) of one message, top level only."""
    i, n = 0, len(buf)
    while i < n:
        key, i = _varint(buf, i)
        number, wire, start = key >> 3, key & 7, i
        value: int | bytes
        if wire == _VARINT:
            value, i = _varint(buf, i)
        elif wire == _FIXED64:
            value, i = buf[i : i + 8], i + 8
        elif wire == _BYTES:
            length, start = _varint(buf, i)
            value, i = buf[start : start + length], start + length
        elif wire == _FIXED32:
            value, i = buf[i : i + 4], i + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if i > n:
            raise ValueError("a field runs past the end of its message")
        yield number, wire, value, start, i


def _expect(wire: int, value: object, *wanted: int) -> object:
    """A field's value when it has a wire type its field can have; any other is a broken record, not a TypeError."""
    if wire not in wanted:
        raise ValueError(f"a field of wire type {wire}")
    return value


class _Slot(NamedTuple):
    """Where a fixed-width number lies in a record's data, and its struct format: what the bulk decoder reads."""

    at: int
    fmt: str


class _Scalar(NamedTuple):
    tag: str
    value: float
    slot: _Slot | None  # None for a value that is not fixed-width (an integer tensor's varint)


class _Event(NamedTuple):
    wall: float
    step: int
    scalars: list[_Scalar]
    wall_at: int | None
    step_at: tuple[int, int] | None  # start and end of the step's varint


def _first(value: bytes, wire: int, fixed: int, size: int, fmt: str, at: int) -> list[tuple[float, _Slot]]:
    """The first element of a repeated float or double field, packed or not (only the first is ever used)."""
    _expect(wire, value, _BYTES, fixed)
    if len(value) % size:
        raise ValueError("a packed field cut short")
    return [(struct.unpack_from(fmt, value)[0], _Slot(at, fmt))] if value else []


def _tensor_scalar(buf: bytes, at: int) -> tuple[float, _Slot | None] | None:
    dtype, content, content_at, floats, doubles, ints = _DT_FLOAT, b"", 0, [], [], []
    for number, wire, value, start, _ in _fields(buf):
        if number == 1:
            dtype = _expect(wire, value, _VARINT)  # type: ignore[assignment]
        elif number == 4:
            content, content_at = _expect(wire, value, _BYTES), at + start  # type: ignore[assignment]
        elif number == 5:
            floats += _first(value, wire, _FIXED32, 4, "<f", at + start)  # type: ignore[arg-type]
        elif number == 6:
            doubles += _first(value, wire, _FIXED64, 8, "<d", at + start)  # type: ignore[arg-type]
        elif number in (7, 10) and wire == _VARINT:
            ints.append((_signed(value), None))  # type: ignore[arg-type]
    if floats or doubles or ints:
        first, slot = (floats or doubles or ints)[0]
        return float(first), slot
    formats = {_DT_FLOAT: "<f", _DT_DOUBLE: "<d", _DT_INT32: "<i", _DT_INT64: "<q"}
    fmt = formats.get(dtype)
    if fmt is None or len(content) != struct.calcsize(fmt):
        return None  # not a scalar (text summaries, histograms)
    return float(struct.unpack(fmt, content)[0]), _Slot(content_at, fmt)


def _scalars(summary: bytes, at: int) -> Iterator[_Scalar]:
    for number, wire, value, start, _ in _fields(summary):
        if number != 1:
            continue
        tag: str | None = None
        scalar: tuple[float, _Slot | None] | None = None
        for field, kind, item, begin, _ in _fields(_expect(wire, value, _BYTES)):  # type: ignore[arg-type]
            if field == 1:
                tag = _expect(kind, item, _BYTES).decode("utf-8", errors="replace")  # type: ignore[attr-defined]
            elif field == 2:
                scalar = struct.unpack("<f", _expect(kind, item, _FIXED32))[0], _Slot(at + start + begin, "<f")  # type: ignore[arg-type]
            elif field == 8:
                scalar = _tensor_scalar(_expect(kind, item, _BYTES), at + start + begin)  # type: ignore[arg-type]
        if tag is not None and scalar is not None:
            yield _Scalar(tag, *scalar)


def _event(payload: bytes) -> _Event:
    """Wall time, step and tagged scalars of one Event record, and where each lies; decoded whole before any is used."""
    wall, step, scalars, wall_at, step_at = 0.0, 0, [], None, None
    for number, wire, value, start, end in _fields(payload):
        if number == 1:
            (wall,), wall_at = struct.unpack("<d", _expect(wire, value, _FIXED64)), start  # type: ignore[arg-type]
        elif number == 2:
            step, step_at = _signed(_expect(wire, value, _VARINT)), (start, end)  # type: ignore[arg-type]
        elif number == 5:
            scalars = list(_scalars(_expect(wire, value, _BYTES), start))  # type: ignore[arg-type]
    return _Event(wall, step, scalars, wall_at, step_at)


# --- decoding in bulk ----------------------------------------------------------------------------------------------

_NUMPY = {"<f": "<f4", "<d": "<f8", "<i": "<i4", "<q": "<i8"}
_TEMPLATES = 8
"""How many different layouts one length's records are decoded in bulk by; the rest one at a time."""


class _Decoded(NamedTuple):
    tag: str
    steps: np.ndarray
    values: np.ndarray
    walls: np.ndarray
    ordinals: np.ndarray


def _group(rows: np.ndarray, ordinals: np.ndarray, size: int, failed: list[int], varying: np.ndarray | None = None) -> Iterator[_Decoded]:
    """The scalars of records of one length (rows of a byte matrix), decoded in bulk; ordinals of records that do not
    decode go to ``failed``. ``varying`` marks the columns in which some row differs from the first, when known.

    A record is decoded whole by the plain decoder (:func:`_event`), which also says where its wall time, step and
    values lie. Every other row equal to it outside those places has the same tags and layout, so its numbers are
    read from those columns for all such rows at once; the rows left over take the next one as their template.
    """
    left = np.arange(len(rows))
    for _ in range(_TEMPLATES):
        if not left.size:
            return
        template = rows[left[0], :size]
        try:
            event = _event(template.tobytes())
        except _BROKEN:
            failed.append(int(ordinals[left[0]]))
            left, varying = left[1:], None
            continue
        whole = left.size == len(rows)
        part = rows if whole else rows[left]  # contiguous, checksums and all
        if varying is None:
            varying = (part != part[0]).any(axis=0)
        differ = np.flatnonzero(varying[:size] & ~_slots(event, size))
        same = ~(part[:, differ] != template[differ]).any(axis=1) if differ.size else None
        steps = np.zeros(len(part), dtype=np.int64)
        if event.step_at is not None:
            steps, width = _varints(part, *event.step_at)
            if width is not None:
                same = width if same is None else same & width
        if same is None or same.all():
            yield from _bulk(event, part, ordinals if whole else ordinals[left], steps)
            return
        yield from _bulk(event, part[same], ordinals[left[same]], steps[same])
        left, varying = left[~same], None
    yield from _plain([(int(ordinals[i]), rows[i, :size].tobytes()) for i in left.tolist()], failed)


def _plain(records: list[tuple[int, bytes]], failed: list[int]) -> Iterator[_Decoded]:
    """The scalars of records decoded one at a time by the plain decoder, gathered per tag; ordinals of records that
    do not decode go to ``failed``."""
    found: dict[str, list[tuple[int, float, float, int]]] = {}
    for ordinal, payload in records:
        try:
            event = _event(payload)
        except _BROKEN:
            failed.append(ordinal)
            continue
        for scalar in event.scalars:
            found.setdefault(scalar.tag, []).append((event.step, scalar.value, event.wall, ordinal))
    for tag, rows in found.items():
        steps, values, walls, ordinals = (np.array(column) for column in zip(*rows))
        yield _Decoded(tag, steps.astype(np.int64), values.astype(np.float64), walls.astype(np.float64), ordinals.astype(np.int64))


def _slots(event: _Event, size: int) -> np.ndarray:
    """The columns of a record that hold its wall time, step and fixed-width values: the only ones that may differ
    between records decoded in bulk."""
    slots = np.zeros(size, dtype=bool)
    if event.wall_at is not None:
        slots[event.wall_at : event.wall_at + 8] = True
    if event.step_at is not None:
        slots[event.step_at[0] : event.step_at[1]] = True
    for scalar in event.scalars:
        if scalar.slot is not None:
            slots[scalar.slot.at : scalar.slot.at + struct.calcsize(scalar.slot.fmt)] = True
    return slots


def _bulk(event: _Event, rows: np.ndarray, ordinals: np.ndarray, steps: np.ndarray) -> Iterator[_Decoded]:
    """The scalars of rows laid out as ``event`` is, read from the columns where it has them."""
    count = len(rows)
    walls = _numbers(rows, event.wall_at, "<d") if event.wall_at is not None else np.full(count, event.wall)
    for scalar in event.scalars:
        values = _numbers(rows, scalar.slot.at, scalar.slot.fmt) if scalar.slot is not None else np.full(count, scalar.value)
        yield _Decoded(scalar.tag, steps, values, walls, ordinals)


def _numbers(rows: np.ndarray, at: int, fmt: str) -> np.ndarray:
    """The numbers of format ``fmt`` at column ``at`` of each row of a contiguous byte matrix, as float64."""
    return np.ndarray(len(rows), _NUMPY[fmt], rows, at, (rows.strides[0],)).astype(np.float64)


def _varints(rows: np.ndarray, start: int, end: int) -> tuple[np.ndarray, np.ndarray | None]:
    """The varint in columns ``start`` to ``end`` of each row of a contiguous byte matrix, as int64 (a negative step is
    written as its two's complement), and which rows have one of that width (None: all of them).

    A row has one when its continuation bits are where the first row has them; the varint's bytes are then its 7-bit
    groups, low first. Up to four bytes (steps below 2**28) are read as one little-endian word; the row's data
    checksum follows its data, so the word never runs past the row.
    """
    width = end - start
    if width <= 4:
        words = np.ndarray(len(rows), "<u4", rows, start, (rows.strides[0],)) & np.uint32((1 << 8 * width) - 1)
        flags = words & np.uint32(0x80808080)
        values = np.zeros(len(rows), dtype=np.uint32)
        for k in range(width):
            values |= (words >> np.uint32(k)) & np.uint32(0x7F << 7 * k)
        values = values.astype(np.int64)
    else:
        flags = rows[:, start:end] & 0x80
        unsigned = np.zeros(len(rows), dtype=np.uint64)
        for k in range(width):
            unsigned |= (rows[:, start + k] & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        values = unsigned.view(np.int64)
    same = flags == flags[0] if flags.ndim == 1 else (flags == flags[0]).all(axis=1)
    return values, None if same.all() else same


# --- the run -------------------------------------------------------------------------------------------------------


def read(path: Path, names: Names = DEFAULT_NAMES) -> Run:
    files = event_files(path)
    if not files:
        raise InputError(path, f"has no TensorBoard event files ({_PATTERN})")
    scalars = _Scalars(path)
    for file in files:
        parts = file.relative_to(path).parts[:-1] if path.is_dir() else ()
        scalars.read_file(file, in_validation_folder(parts))
    return scalars.build(names)


class _Tag(NamedTuple):
    tag: str
    validation: bool  # under a validation/ folder (Keras)


class _Scalars:
    """The scalars of a run's event files, per tag, in the order they were written (file after file)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.parts: dict[_Tag, list[_Decoded]] = {}
        self.files: dict[_Tag, Path] = {}
        self.notes: list[str] = []
        self.records = 0  # ordinals run on from file to file, so that later files come later

    def read_file(self, file: Path, validation: bool) -> None:
        first, records = self.records, tfrecord.Records(file)
        for block in records:
            self._block(block, file, validation, first)
            self.records += block.records
        if records.cut:
            self.notes.append(f"{file.name}: the last record is cut short (still being written?) and was left out")

    def _block(self, block: tfrecord.Block, file: Path, validation: bool, first: int) -> None:
        """Decode the checked records of a block. The first problem in file order is the error: a record that does not
        decode, which comes before the block's own error (only the records before that one are decoded), or else it."""
        failed: list[int] = []
        parts = [_plain([(n + self.records, payload) for n, payload in block.few], failed)]
        for size, rows, ordinals, varying in block.groups:
            parts.append(_group(rows, ordinals + self.records, size, failed, varying))
        for part in itertools.chain.from_iterable(parts):
            key = _Tag(part.tag, validation)
            self.parts.setdefault(key, []).append(part)
            self.files.setdefault(key, file)
        if failed:
            number = min(failed) - first + 1
            raise InputError(file, f"is not a valid TensorBoard event file (record {number:,} does not decode)")
        if block.error is not None:
            raise block.error

    def tags(self) -> list[_Tag]:
        """The tags met, in the order of their first record."""
        return sorted(self.parts, key=lambda key: min(int(part.ordinals.min()) for part in self.parts[key]))

    def series(self, key: _Tag) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A tag's steps, values and wall times, by step: the last written for a step wins, as when a resumed run
        logs its steps again."""
        parts = self.parts[key]
        steps, values, walls, ordinals = (np.concatenate(column) for column in zip(*(part[1:] for part in parts)))
        if (np.diff(ordinals) < 0).any():  # records of several lengths were decoded a length at a time
            order = np.argsort(ordinals, kind="stable")
            steps, values, walls = steps[order], values[order], walls[order]
        keep = last_per_step(steps)
        if keep is not None:
            steps, values, walls = steps[keep], values[keep], walls[keep]
        return steps, values, walls

    def build(self, names: Names) -> Run:
        tags = self.tags()
        picked = self._resolve(tags, names)
        if not {"loss", "learning_rate", "grad_norm"} & set(picked):
            raise InputError(self.path, self._no_series(tags))
        columns = functools.cache(self.series)
        found = {series: Series(*columns(key)[:2]) for series, key in picked.items()}
        evals = {"eval_loss": found.pop("eval_loss")} if "eval_loss" in found else {}
        for key in tags:
            label = eval_set(key.tag)
            if label is not None and key not in picked.values() and label not in evals:
                evals[label] = Series(*columns(key)[:2])
        goals = {key: goal for key in tags if not key.validation and key not in picked.values() and (goal := names.metric_goal(key.tag)) is not None}
        metrics, metric_goals, unjudged = metric_fields(
            {key.tag: (Series(*columns(key)[:2]) if goal != "unknown" else None, goal) for key, goal in goals.items()}
        )
        loss, wall = picked.get("loss"), None
        if loss is not None:  # the run's clock is its loss events'
            steps, _, walls = columns(loss)
            wall = Series(steps, walls - float(walls.min()))
        return Run(
            path=str(self.files[loss] if loss else self.path),  # findings point at a file, as they do for every other format
            format=name,
            loss=found.get("loss"),
            eval_losses=dict(sorted(evals.items(), key=lambda kv: (kv[0] != "eval_loss", kv[0]))),
            eval_metrics=metrics,
            metric_goals=metric_goals,
            learning_rate=found.get("learning_rate"),
            grad_norm=found.get("grad_norm"),
            wall_time=wall,
            step_time=found.get("step_time"),
            loader_time=found.get("loader_time"),
            runtime_s=_runtime(tags, columns),
            step_unit="epoch" if any(normal(key.tag).startswith("epoch_") for key in picked.values()) else "step",
            loss_name=loss.tag if loss else "loss",
            notes=(*self.notes, *unjudged),
        )

    def _resolve(self, tags: list[_Tag], names: Names) -> dict[str, _Tag]:
        """The tag of each series, picked by the name table over all of the run's ``tags`` at once; under a validation
        folder only an eval loss is looked for (a training-loss tag there is one), and only when the rest has none."""
        main = [key.tag for key in tags if not key.validation]
        picked = {series: _Tag(tag, False) for series, tag in names.resolve(_candidates(main, names)).items() if series in METRICS}
        if "eval_loss" not in picked:
            folder = [key.tag for key in tags if key.validation]
            own = Names({series: tag for series, tag in names.overrides.items() if series == "eval_loss"})
            tag = own.resolve(_candidates(folder, names), validation=True).get("eval_loss")
            if tag is not None:
                picked["eval_loss"] = _Tag(tag, True)
        return picked

    def _no_series(self, met: list[_Tag]) -> str:
        tags = list(dict.fromkeys(key.tag for key in met))
        if not tags:
            return "has TensorBoard events but no scalars"
        shown = ", ".join(visible(tag if len(tag) <= 60 else tag[:60] + "...") for tag in tags[:_SHOWN_TAGS])
        more = ", ..." if len(tags) > _SHOWN_TAGS else ""
        return f"has TensorBoard scalars but none is a training loss, learning rate or gradient norm (tags: {shown}{more}); name one with --map loss=TAG"


def _runtime(tags: list[_Tag], columns: Callable[[_Tag], tuple[np.ndarray, np.ndarray, np.ndarray]]) -> float | None:
    """HF's ``train/train_runtime`` among ``tags``: the last finite one (``columns`` gives a tag's steps, values, walls)."""
    for key in tags:
        if not key.validation and normal(key.tag) == _RUNTIME:
            values = columns(key)[1]
            values = values[np.isfinite(values)]
            return float(values[-1]) if values.size else None
    return None


def _candidates(tags: list[str], names: Names) -> list[str]:
    """The tags the name table may pick: not Megatron's copies of a series against samples or iterations, unless the
    user names one."""
    wanted = {normal(tag) for tag in names.overrides.values()}
    return [tag for tag in tags if not normal(tag).endswith(("_vs_samples", "_vs_iterations")) or normal(tag) in wanted]
