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
MAX_RECORD_BYTES; a record whose length or data fails its CRC-32C checksum is
an error naming its byte offset, and one that does not decode as an Event an
error naming it. The run's location is the event file that holds its training
loss.
"""

from __future__ import annotations

import functools
import math
import re
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, TypeVar

import numpy as np

from trainproof.errors import InputError
from trainproof.model import Run
from trainproof.readers.base import RunBuilder, open_log, read_block, size_text

name = "tensorboard"
description = "TensorBoard event files (events.out.tfevents.*), or a run directory of them"
line_parser = None  # event files are binary records, read whole

_MAGIC = b"brain.Event"
_PATTERN = "events.out.tfevents.*"
_EVAL_LOSS = re.compile(r"^(?:eval|validation|val)/(?:(.+)_)?loss$")
_TAGS = {
    "loss": ("train/loss", "lm_loss", "loss", "epoch_loss", "train_loss", "loss/train", "training_loss"),
    "learning_rate": ("train/learning_rate", "learning_rate", "train/lr", "lr", "epoch_learning_rate", "epoch_lr"),
    "grad_norm": ("train/grad_norm", "grad_norm", "gradient_norm"),
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


# --- TFRecords and their CRC-32C checksums -------------------------------------------------------------------------

_CASTAGNOLI = 0x82F63B78
"""The CRC-32C polynomial, bit-reversed."""
_HEADER = struct.Struct("<QI")
_CHECKSUM = struct.Struct("<I")
_CHUNK = 256
"""The widest run of bytes summed in one lookup; a longer record is summed a chunk at a time and the chunks folded."""
BATCH_BYTES = 1024 * 1024
"""How many bytes of records are read before their checksums are computed, all at once."""


def _crc_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _CASTAGNOLI if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _crc_table()


def crc32c(data: bytes) -> int:
    """The CRC-32C of a few bytes, a byte at a time (a record's 8-byte length; see crc32c_many for records)."""
    crc, table = 0xFFFFFFFF, _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


_C = TypeVar("_C", int, np.ndarray)


def _masked(crc: _C) -> _C:
    """A CRC as TFRecords store it: rotated right by 15 bits, plus a constant, modulo 2**32 (an int or a uint32 array)."""
    return ((crc >> 15) | (crc << 17) & 0xFFFFFFFF) + 0xA282EAD8 & 0xFFFFFFFF


@functools.cache
def _distances() -> np.ndarray:
    """Row d, column b: the CRC register, started at 0, after the byte b and then d zero bytes (d < _CHUNK)."""
    rows = np.empty((_CHUNK, 256), dtype=np.uint32)
    rows[0] = _TABLE
    for d in range(1, _CHUNK):
        rows[d] = rows[0][rows[d - 1] & 0xFF] ^ (rows[d - 1] >> 8)
    return rows


def crc32c_many(records: Sequence[bytes]) -> np.ndarray:
    """The CRC-32C of each record, for all of them at once (a Python loop over their bytes would take longer than
    reading and decoding them).

    A CRC is linear: with the register started at 0, it is the XOR over the bytes of what each contributes from its
    distance to the end, which a table holds, and zero bytes in front add nothing. Records of one length are summed
    together, a row of a matrix each, with their first four bytes XORed with 0xFF for the register's start at
    0xFFFFFFFF; a record longer than _CHUNK is padded in front to whole chunks, which are summed alike and folded.
    """
    lengths = np.fromiter(map(len, records), dtype=np.int64, count=len(records))
    order = np.argsort(lengths, kind="stable")
    flat = bytearray().join(records[i] for i in order.tolist())
    crcs = np.empty(len(records), dtype=np.uint32)
    sizes, firsts, counts = np.unique(lengths[order], return_index=True, return_counts=True)
    starts = np.concatenate([[0], np.cumsum(sizes * counts)])
    for size, first, count, start in zip(sizes.tolist(), firsts.tolist(), counts.tolist(), starts.tolist()):
        members = order[first : first + count]
        if size < 4:
            crcs[members] = [crc32c(records[i]) for i in members.tolist()]
        else:
            crcs[members] = _crc32c_rows(np.frombuffer(flat, dtype=np.uint8, count=size * count, offset=start).reshape(count, size))
    return crcs


def _crc32c_rows(rows: np.ndarray) -> np.ndarray:
    """The CRC-32C of each row of a writable byte matrix (rows of at least 4 bytes), which it overwrites."""
    count, size = rows.shape
    rows[:, :4] ^= 0xFF
    if size <= _CHUNK:
        step = max(1, BATCH_BYTES // size)
        return np.concatenate([_sums(rows[at : at + step]) for at in range(0, count, step)]) ^ np.uint32(0xFFFFFFFF)
    chunks = -(-size // _CHUNK)
    padded = np.zeros((count, chunks * _CHUNK), dtype=np.uint8)
    padded[:, chunks * _CHUNK - size :] = rows
    sums = np.concatenate([_sums(part) for part in np.array_split(padded.reshape(-1, _CHUNK), max(1, padded.size // BATCH_BYTES))])
    return _fold(sums, chunks) ^ np.uint32(0xFFFFFFFF)


def _sums(rows: np.ndarray) -> np.ndarray:
    """The CRC register, started at 0, after each row of bytes: the XOR of what each byte contributes from its distance to the end."""
    width = rows.shape[1]
    index = rows + np.arange((width - 1) * 256, -1, -256, dtype=np.intp)
    return np.bitwise_xor.reduce(_distances().ravel()[index], axis=1)


def _fold(sums: np.ndarray, chunks: int) -> np.ndarray:
    """One register per record from the registers of its ``chunks`` chunks of _CHUNK bytes: each is moved on by a chunk
    of zero bytes (a table lookup per byte of it) and the next chunk's added."""
    table = _distances()
    s0, s1, s2, s3 = (table[_CHUNK - 1 - k].tolist() for k in range(4))
    values = sums.tolist()
    out = []
    for at in range(0, len(values), chunks):
        crc = values[at]
        for value in values[at + 1 : at + chunks]:
            crc = s0[crc & 0xFF] ^ s1[(crc >> 8) & 0xFF] ^ s2[(crc >> 16) & 0xFF] ^ s3[crc >> 24] ^ value
        out.append(crc)
    return np.array(out, dtype=np.uint32)


def _records(handle: BinaryIO, path: Path) -> Iterator[bytes | None]:
    """TFRecord payloads in file order, each checked against its checksums; None once when the last record is cut short.

    The file is read a block of BATCH_BYTES at a time (a longer record whole), and the data of the records in a block
    checksummed together; a problem met in a block (a length that fails its checksum, or is over the limit) is raised
    once the records before it were handed over, as though each record were read and checked on its own.
    """
    data, base, want = b"", 0, BATCH_BYTES
    lengths: dict[int, int] = {}  # the masked checksum of each length met: a file's records have a few lengths
    while block := read_block(handle, want, path):
        data = data + block if data else block
        spans, used, want, problem = _split(data, base, lengths, path)
        yield from _checked(data, spans, base, path)
        if problem is not None:
            raise problem
        data, base = data[used:], base + used
    if data:
        yield None


def _split(data: bytes, base: int, lengths: dict[int, int], path: Path) -> tuple[list[tuple[int, int, int]], int, int, InputError | None]:
    """The whole records at the start of ``data`` (byte ``base`` of the file) as (start, length, data checksum), each
    length checked before it is used; where they end; how many bytes to read next to complete the one after; and the
    problem with that one, if any."""
    spans: list[tuple[int, int, int]] = []
    at, size = 0, len(data)
    while at + 12 <= size:
        length, checksum = _HEADER.unpack_from(data, at)
        wanted = lengths.get(length)
        if wanted is None:
            wanted = _masked(crc32c(data[at : at + 8]))
            if len(lengths) < 4096:
                lengths[length] = wanted
        if checksum != wanted:
            return spans, at, 0, _corrupt(path, base + at)
        if length > MAX_RECORD_BYTES:
            limit = size_text(MAX_RECORD_BYTES)
            problem = f"has a record of {length:,} bytes at byte {base + at:,}, over the {limit} limit: not a TensorBoard event file"
            return spans, at, 0, InputError(path, problem)
        end = at + 16 + length
        if end > size:
            return spans, at, max(BATCH_BYTES, end - size), None
        spans.append((at, length, _CHECKSUM.unpack_from(data, end - 4)[0]))
        at = end
    return spans, at, BATCH_BYTES, None


def _checked(data: bytes, spans: list[tuple[int, int, int]], base: int, path: Path) -> Iterator[bytes]:
    """The data of each record span, in order, up to the first one whose data fails its checksum (an InputError)."""
    if not spans:
        return
    payloads = [data[at + 12 : at + 12 + length] for at, length, _ in spans]
    written = np.fromiter((checksum for _, _, checksum in spans), dtype=np.uint32, count=len(spans))
    wrong = np.flatnonzero(_masked(crc32c_many(payloads)) != written)
    bad = int(wrong[0]) if wrong.size else len(spans)
    yield from payloads[:bad]
    if bad < len(spans):
        raise _corrupt(path, base + spans[bad][0])


def _corrupt(path: Path, offset: int) -> InputError:
    return InputError(path, f"record at byte {offset:,} fails its checksum: the file is corrupt")


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
    run = _Scalars(path)
    for file in files:
        run.read_file(file, validation=_in_validation_folder(path, file))
    return run.build()


def _in_validation_folder(path: Path, file: Path) -> bool:
    """Whether an event file of a run directory lies under a ``validation`` (``eval``, ``val``) folder, as Keras writes them."""
    if not path.is_dir():
        return False
    return any(part.lower() in ("validation", "eval", "val") for part in file.relative_to(path).parts[:-1])


class _Scalars:
    """The scalars of a run's event files, gathered into one RunBuilder, one file after the other."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.builder = RunBuilder(path, name)
        self.mapper = _Mapper()
        self.epoch_axis = False
        self.events = 0
        self.loss_file: Path | None = None

    def read_file(self, file: Path, validation: bool) -> None:
        with open_log(file) as handle:
            for number, payload in enumerate(_records(handle, file), start=1):
                if payload is None:
                    self.builder.notes.append(f"{file.name}: the last record is cut short (still being written?) and was left out")
                    return
                wall, step, scalars = _decode(payload, file, number)
                for tag, scalar in scalars:
                    self.add(file, validation, wall, step, tag, scalar)

    def add(self, file: Path, validation: bool, wall: float, step: int, tag: str, scalar: float) -> None:
        target = self.mapper.series(tag, validation)
        if target == "runtime":
            if math.isfinite(scalar):
                self.builder.runtime_s = scalar
            return
        if target is None:
            return
        self.events += 1
        self.epoch_axis = self.epoch_axis or _normal(tag).startswith("epoch_")
        self.builder.add(target, step, scalar)
        if target == "loss":
            self.builder.add_time(step, wall)
            self.loss_file = self.loss_file or file

    def build(self) -> Run:
        if not self.events:
            raise InputError(self.path, "has TensorBoard events but no loss, learning-rate or gradient-norm scalars")
        self.builder.path = self.loss_file or self.path  # findings point at a file, as they do for every other format
        return self.builder.build(
            loss_name=self.mapper.loss_tag or "loss",
            eval_names=dict(sorted(self.mapper.eval_names.items(), key=lambda kv: (kv[1] != "eval_loss", kv[1]))),
            step_unit="epoch" if self.epoch_axis else "step",
        )


def _decode(payload: bytes, file: Path, number: int) -> tuple[float, int, list[tuple[str, float]]]:
    """_event, every way it fails an InputError naming the record."""
    try:
        return _event(payload)
    except _BROKEN:
        raise InputError(file, f"is not a valid TensorBoard event file (record {number} does not decode)") from None
