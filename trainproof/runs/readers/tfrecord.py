"""TFRecords, the framing of TensorBoard's event files: read from a file a block at a time, and checked.

A TFRecord is its data's length (8 bytes, little-endian), the length's masked
CRC-32C, the data, and the data's masked CRC-32C. Every record's length is
checked before it is used and every record's data before it is decoded: a
record that fails is an error naming its byte offset, and a length over
MAX_RECORD_BYTES an error too, as it is a corrupt file or not an event file. A
last record cut short by a writer still running is left out, for the reader
to note. What the data says (an ``Event``) is for
:mod:`trainproof.runs.readers.tensorboard` to decode; it gets each block's records
before the first that fails its checksum, and the block's error to raise once
they are decoded, so that the first problem in the file is the one reported.

A file of a million scalars is a million records of tens of bytes, and a
Python loop over them, let alone over their bytes for the checksums, costs
many times reading them. So the walk finds the records by the pattern of their
lengths (a step logs its scalars in the same order each time) and checks the
lengths of every repeat of it at once (:func:`_walk`); the data of the records
of one length is checked at once as rows of a byte matrix, a CRC being linear
(:func:`_row_checksums`); and the few records of other lengths are checked
together (:func:`crc32c_many`). Records of a length met often reach the
decoder as those rows, the rest as bytes each.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple, TypeVar

import numpy as np

from trainproof.io.bounded import open_log, read_block, size_text
from trainproof.io.errors import InputError

MAX_RECORD_BYTES = 64 * 1024 * 1024
"""The largest TFRecord read. A scalar event is tens of bytes; the largest real records (a model's graph, an image
summary) are a few MB, and 64 MiB was protobuf's default limit on one message for years. A longer length is a
corrupt file or not an event file, and reading it would hold that much in memory."""

BATCH_BYTES = 2 * 1024 * 1024
"""How many bytes of records are read, checked and decoded at once (a longer record is read whole)."""

_HEADER = struct.Struct("<QI")
"""A record's header: its data's length and the length's masked checksum; the data and its checksum follow."""
_LENGTH = struct.Struct("<Q")
_CHECKSUM = struct.Struct("<I")

_BULK = 16
"""The fewest records of one length in a block that are checked and decoded in bulk: for fewer, numpy's cost per
call is more than the plain decoder's per record."""


class Rows(NamedTuple):
    """The records of one length in a block, checked in bulk, for decoding in bulk."""

    size: int  # the length of their data
    rows: np.ndarray  # a contiguous byte matrix, a row per record: its data, then its data checksum (4 bytes)
    ordinals: np.ndarray  # the records' ordinals, counted in the block
    varying: np.ndarray | None  # the columns in which some row differs from the first (None: not known)


class Block(NamedTuple):
    """The whole records of a block of a file, checked: those before the first to fail its checksum, ready to decode,
    and the block's first problem, to raise once they are decoded (a record before it that does not decode comes
    first in the file)."""

    few: list[tuple[int, bytes]]  # the ordinal and data of each record of a length met fewer than _BULK times
    groups: list[Rows]  # the rest, by length
    records: int  # how many whole records the block holds
    error: InputError | None


class Records:
    """The records of a file, a block at a time: iterating reads it. ``cut`` then says whether the file ends with a
    record cut short, which is left out."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.cut = False

    def __iter__(self) -> Iterator[Block]:
        checksums: dict[int, int] = {}
        data, offset = b"", 0
        with open_log(self.path) as handle:
            want, pattern, held = BATCH_BYTES, None, 0
            while block := read_block(handle, want, self.path):
                data = data + block if data else block
                walk = _walk(data, checksums, pattern, held)
                pattern, held = walk.pattern, walk.held
                yield _check(data, walk, self.path, offset)
                data, offset, want = data[walk.used :], offset + walk.used, walk.want
        self.cut = bool(data)


def _check(data: bytes, walk: _Walk, path: Path, offset: int) -> Block:
    """The records of a block, checked; the first problem among them, in file order, is the block's error.

    The records of each length are checked in bulk; those of a length met only a few times (an evaluation's, a text
    summary) one at a time, which costs them less.
    """
    block = np.frombuffer(data, dtype=np.uint8)
    groups, few, corrupt = [], [], walk.records
    for size, (runs, starts, ordinals) in _by_size(walk).items():
        if starts.size + sum(run.count for run in runs) < _BULK:
            few += [(n, at, size) for n, at in zip(ordinals.tolist(), starts.tolist())]
            few += [(run.ordinal + k * run.every, run.at + k * run.stride, size) for run in runs for k in range(run.count)]
            continue
        rows, ordinals = _rows(block, size, runs, starts, ordinals)
        varying = (rows != rows[0]).any(axis=0)
        written = np.ndarray(len(rows), "<u4", rows, size, (rows.strides[0],))
        wrong = np.flatnonzero(_masked(_row_checksums(rows, size, varying)) != written)
        if wrong.size:
            corrupt = min(corrupt, int(ordinals[wrong].min()))
        groups.append(Rows(size, rows, ordinals, varying))
    payloads = [data[at + 12 : at + 12 + size] for _, at, size in few]
    if few:
        written = np.array([_CHECKSUM.unpack_from(data, at + 12 + size)[0] for _, at, size in few], dtype=np.uint32)
        wrong = np.flatnonzero(_masked(crc32c_many(payloads)) != written)
        if wrong.size:
            corrupt = min(corrupt, min(few[i][0] for i in wrong.tolist()))
    alone = [(n, payload) for (n, _, _), payload in zip(few, payloads) if n < corrupt]
    if corrupt < walk.records:  # only the records before the first corrupt one are decoded
        for k, (size, rows, ordinals, _) in enumerate(groups):
            keep = ordinals < corrupt
            groups[k] = Rows(size, rows[keep], ordinals[keep], None)
    return Block(alone, groups, walk.records, _problem(data, walk, path, offset, corrupt))


def _problem(data: bytes, walk: _Walk, path: Path, offset: int, corrupt: int) -> InputError | None:
    """The first problem with a block: the record of ordinal ``corrupt``, whose data fails its checksum (none when it
    is past the last), or past the whole records a length that fails its checksum or is over the limit."""
    if corrupt < walk.records:
        return _corrupt(path, offset + _start(walk, corrupt))
    if walk.problem == "checksum":
        return _corrupt(path, offset + walk.used)
    if walk.problem == "limit":
        (length,) = _LENGTH.unpack_from(data, walk.used)
        where, limit = offset + walk.used, size_text(MAX_RECORD_BYTES)
        problem = f"has a record of {length:,} bytes at byte {where:,}, over the {limit} limit: not a TensorBoard event file"
        return InputError(path, problem)
    return None


def _start(walk: _Walk, ordinal: int) -> int:
    """Where in its block the record of an ordinal (counted in the block) starts."""
    starts, _, ordinals = walk.alone
    at = bisect.bisect_left(ordinals, ordinal)
    if at < len(ordinals) and ordinals[at] == ordinal:
        return starts[at]
    for run in walk.runs:
        index, rest = divmod(ordinal - run.ordinal, run.every)
        if not rest and 0 <= index < run.count:
            return run.at + index * run.stride
    raise AssertionError(f"no record {ordinal} in the block")


def _corrupt(path: Path, offset: int) -> InputError:
    return InputError(path, f"record at byte {offset:,} fails its checksum: the file is corrupt")


# --- the walk ------------------------------------------------------------------------------------------------------


class _Run(NamedTuple):
    """``count`` records of ``size`` bytes of data, every ``stride`` bytes from byte ``at`` of a block: the
    ``ordinal``-th record of the file, then every ``every``-th."""

    at: int
    size: int
    count: int  # type: ignore[assignment]  # a field named as tuple.count, which it shadows
    stride: int
    ordinal: int
    every: int


class _Walk(NamedTuple):
    """The whole records at the start of a block, as runs of a pattern and records walked one at a time."""

    runs: list[_Run]
    alone: tuple[list[int], list[int], list[int]]  # of each record walked one at a time: its start, size and ordinal
    records: int
    used: int  # where the records end
    want: int  # how many bytes to read next
    problem: str | None  # "checksum" or "limit": what is wrong with the header at ``used``
    pattern: tuple[int, ...] | None  # the last pattern that held, and for how many records: the next block's start
    held: int


_PERIOD = 256
"""The most records in a pattern of lengths the walk recognises: a step's scalars (Megatron logs a few dozen), or
the steps' between two evaluations and the evaluation's."""
_WINDOW = 16
"""How many repeats of a pattern are checked first; the next check is four times as many, and so on."""


def _walk(data: bytes, checksums: dict[int, int], pattern: tuple[int, ...] | None = None, held: int = 0) -> _Walk:
    """The whole records at the start of ``data``, each length checked against its checksum before it is used.

    One record at a time in Python costs more than decoding it in bulk, so the walk looks for a repeating pattern
    of record lengths (a step logs its scalars in the same order each time): once the last lengths repeat, every
    later repeat is checked at once with numpy (the length and its checksum where each record should start), up to
    the first record that breaks the pattern, from which the walk goes on one record at a time, and takes the
    pattern up again as soon as the next length is one of it (after an evaluation's records, say). A search that
    finds no pattern makes the next one wait twice as long, so a file without one is walked one record at a time.
    ``pattern`` and ``held`` are the last block's: a pattern goes on from one block to the next.
    """
    runs: list[_Run] = []
    alone: tuple[list[int], list[int], list[int]] = ([], [], [])
    starts, sizes, ordinals = alone
    at, size, count, recent, since, wait = 0, len(data), 0, [], 0, 1
    problem, want = None, BATCH_BYTES
    while at + 12 <= size:
        length, checksum = _HEADER.unpack_from(data, at)
        if checksum != (checksums.get(length) or _length_checksum(checksums, length)):
            problem, want = "checksum", 0
            break
        if length > MAX_RECORD_BYTES:
            problem, want = "limit", 0
            break
        end = at + 16 + length
        if end > size:
            want = max(BATCH_BYTES, end - size)
            break
        starts.append(at)
        sizes.append(length)
        ordinals.append(count)
        at, count, since = end, count + 1, since + 1
        recent.append(length)
        if (pattern is None and since < wait) or at + 8 > size:
            continue
        (upcoming,) = _LENGTH.unpack_from(data, at)
        resumable, candidate = pattern is not None and upcoming in pattern, None
        if (resumable and held < _PERIOD) or (not resumable and since >= wait):
            # a pattern in the last lengths: a step's records and an evaluation's, say, when the step's alone held
            # for fewer records than a pattern can have
            since, candidate = 0, _pattern(recent, upcoming)
            wait = 1 if candidate or resumable else min(2 * wait, 1024)
        if candidate is None and resumable:  # the last pattern, taken up again
            turn = pattern.index(upcoming)  # type: ignore[union-attr]
            candidate = pattern[turn:] + pattern[:turn]  # type: ignore[index]
        if candidate is None:
            continue
        held = _jump(data, at, candidate)
        runs += _pattern_runs(at, candidate, held, count)
        at, count = at + _span(candidate, held), count + held
        tail = min(held, 2 * _PERIOD)  # the lengths of the last records it took
        recent += (candidate[(held - tail) % len(candidate) :] + candidate * (tail // len(candidate) + 1))[:tail]
        pattern, wait = (candidate, 1) if held >= 2 * len(candidate) else (None, min(2 * wait, 1024))
    return _Walk(runs, alone, count, at, want, problem, pattern, held)


def _length_checksum(checksums: dict[int, int], length: int) -> int:
    """The masked checksum of a record length, remembered: a file's records have a few lengths."""
    found = checksums.get(length)
    if found is None:
        found = _masked(crc32c(_LENGTH.pack(length)))
        if len(checksums) < 4096:
            checksums[length] = found
    return found


def _pattern(recent: list[int], upcoming: int) -> tuple[int, ...] | None:
    """The shortest run of lengths that the last ones repeat twice, when the next length goes on with it; or None."""
    if len(recent) > 4 * _PERIOD:
        del recent[: -2 * _PERIOD]
    last = recent[-1]
    for period in range(1, min(_PERIOD, len(recent) // 2) + 1):
        if recent[-period] == upcoming and recent[-1 - period] == last and recent[-period:] == recent[-2 * period : -period]:
            return tuple(recent[-period:])
    return None


def _span(pattern: tuple[int, ...], count: int) -> int:
    """How many bytes ``count`` records following ``pattern`` take."""
    whole, part = divmod(count, len(pattern))
    starts = _layout(pattern)[0]
    return whole * starts[-1] + starts[part]


def _jump(data: bytes, at: int, pattern: tuple[int, ...]) -> int:
    """How many records from byte ``at`` on go on repeating ``pattern``, each length with its right checksum."""
    period, (starts, heads, where) = len(pattern), _layout(pattern)
    stride = starts[-1]
    available, done, window = (len(data) - at) // stride, 0, _WINDOW
    while done < available:
        rows = min(window, available - done)
        repeats = np.ndarray((rows, stride), np.uint8, data, at + done * stride)
        ok = (repeats[:, where] == heads).reshape(rows, period, 12).all(axis=2)
        if not ok.all():
            return done * period + int(np.argmin(ok.ravel()))
        done, window = done + rows, window * 4
    return done * period


@functools.lru_cache(maxsize=256)
def _layout(pattern: tuple[int, ...]) -> tuple[tuple[int, ...], np.ndarray, np.ndarray]:
    """Where each record of a pattern starts in a repeat of it (and where the next repeat starts), the records'
    headers (length and its checksum), and where the headers' bytes lie."""
    starts = tuple(itertools.accumulate((16 + length for length in pattern), initial=0))
    heads = np.frombuffer(b"".join(_HEADER.pack(length, _masked(crc32c(_LENGTH.pack(length)))) for length in pattern), np.uint8)
    return starts, heads, (np.array(starts[:-1])[:, None] + np.arange(12)).ravel()


def _pattern_runs(at: int, pattern: tuple[int, ...], count: int, ordinal: int) -> list[_Run]:
    period, starts = len(pattern), _layout(pattern)[0]
    runs = []
    for k, length in enumerate(pattern):
        members = count // period + (k < count % period)
        if members:
            runs.append(_Run(at + starts[k], length, members, starts[-1], ordinal + k, period))
    return runs


def _by_size(walk: _Walk) -> dict[int, tuple[list[_Run], np.ndarray, np.ndarray]]:
    """The records of a block by size: the runs of that size, and the start and ordinal of each record of that size
    walked one at a time."""
    starts, sizes, ordinals = (np.array(column, dtype=np.int64) for column in walk.alone)
    order = np.argsort(sizes, kind="stable")
    parts = np.split(order, np.flatnonzero(np.diff(sizes[order])) + 1) if order.size else []
    alone = {int(sizes[part[0]]): (starts[part], ordinals[part]) for part in parts}
    runs: dict[int, list[_Run]] = {}
    for run in walk.runs:
        runs.setdefault(run.size, []).append(run)
    empty = np.zeros(0, dtype=np.int64)
    return {size: (runs.get(size, []), *alone.get(size, (empty, empty))) for size in sorted({*runs, *alone})}


def _rows(block: np.ndarray, size: int, runs: list[_Run], starts: np.ndarray, ordinals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The data and data checksum of every record of one size, a row each, and the records' ordinals: those of the
    runs, and those walked one at a time (their starts and ordinals)."""
    parts, numbers = [], []
    if starts.size and size <= _CHUNK:  # one gather for all of them (a view of each would cost more)
        parts.append(block[(starts + 12)[:, None] + np.arange(size + 4)])
    elif starts.size:
        parts += [block[at + 12 : at + 16 + size][None] for at in starts.tolist()]
    numbers.append(ordinals)
    for run in runs:
        parts.append(np.ndarray((run.count, size + 4), np.uint8, block, run.at + 12, (run.stride, 1)))
        numbers.append(run.ordinal + run.every * np.arange(run.count, dtype=np.int64))
    return np.concatenate(parts) if len(parts) > 1 else np.ascontiguousarray(parts[0]), np.concatenate(numbers)


# --- CRC-32C checksums ---------------------------------------------------------------------------------------------

_CASTAGNOLI = 0x82F63B78
"""The CRC-32C polynomial, bit-reversed."""
_CHUNK = 256
"""The widest run of bytes summed in one lookup; a longer record is summed a chunk at a time and the chunks folded."""


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
    distance to the end, which a table holds, and zero bytes in front add nothing. So records are summed together, a
    row of a matrix each, padded in front with zero bytes to whole chunks of _CHUNK bytes and with their first four
    bytes XORed with 0xFF for the register's start at 0xFFFFFFFF; a longer record's chunks are summed alike and folded.
    """
    crcs = np.empty(len(records), dtype=np.uint32)
    lengths = np.fromiter(map(len, records), dtype=np.int64, count=len(records))
    for i in np.flatnonzero(lengths < 4).tolist():
        crcs[i] = crc32c(records[i])
    chunks = -(-lengths // _CHUNK)
    for count in sorted(set(chunks[lengths >= 4].tolist())):
        members = np.flatnonzero((chunks == count) & (lengths >= 4))
        batch = max(1, (1 << 20) // (count * _CHUNK))  # about a MiB of records at a time
        for at in range(0, members.size, batch):
            part = members[at : at + batch]
            crcs[part] = _padded([records[i] for i in part.tolist()], count)
    return crcs


def _padded(records: list[bytes], chunks: int) -> np.ndarray:
    """The CRC-32C of records of 4 bytes to ``chunks`` chunks, each a row padded in front with zero bytes."""
    width = chunks * _CHUNK
    rows = np.frombuffer(bytearray().join(part for record in records for part in (bytes(width - len(record)), record)), dtype=np.uint8)
    rows = rows.reshape(len(records), width)
    starts = width - np.fromiter(map(len, records), dtype=np.intp, count=len(records))
    rows[np.arange(len(records))[:, None], starts[:, None] + np.arange(4)] ^= 0xFF
    flat = rows.reshape(-1, _CHUNK)
    sums = np.concatenate([_sums(flat[at : at + 4096]) for at in range(0, len(flat), 4096)])
    return (sums if chunks == 1 else _fold(sums, chunks)) ^ np.uint32(0xFFFFFFFF)


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


def _row_checksums(rows: np.ndarray, size: int, varying: np.ndarray) -> np.ndarray:
    """The CRC-32C of the first ``size`` bytes of each row of a byte matrix; ``varying`` marks the columns in which
    some row differs from the first.

    Rows of one length differ in a few columns only (the wall time, the step, the value). As a CRC is linear, a row's
    is a constant (the first row's, less what its varying bytes add) XOR what each of its varying bytes adds from its
    distance to the end: one table lookup per row and varying column.
    """
    if size > _CHUNK:
        return crc32c_many([row.tobytes() for row in rows[:, :size]])
    first, table = rows[0, :size], _distances()
    differ = np.flatnonzero(varying[:size]).tolist()
    crc = crc32c(first.tobytes())
    for column in differ:
        crc ^= int(table[size - 1 - column, first[column]])
    sums = np.full(len(rows), crc, dtype=np.uint32)
    for column in differ:
        sums ^= table[size - 1 - column].take(rows[:, column])
    return sums
