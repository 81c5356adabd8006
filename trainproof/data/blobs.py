"""The bytes of a clip held inside another file (:class:`~trainproof.data.model.Blob`), read where it is analysed.

A Parquet shard is read by row group and, within one, in record batches of
BATCH_ROWS rows; an Arrow file (``save_to_disk``'s IPC stream, or the IPC
file format) by record batch, memory-mapped; a tar member is one seek and
one read. The engine hands a worker the clips of one row group or batch
together and in order (:func:`group_key`), so a worker keeps the open shard
and the batch it is in (:class:`_Position`) and reads each batch once: never
a whole shard in memory, whatever its size.

What cannot be read (the shard is gone, cut short, or not what it was when
the manifest was read) raises OSError, which the analysis makes the clip's
``unreadable`` record.

A blob's digest is computed where its bytes are read (:func:`digest_of`): a
manifest reader lists the rows without reading their bytes, so on a first
run every byte is read once, by the worker that decodes it (see
:mod:`trainproof.data.engine`).
"""

from __future__ import annotations

import os
from typing import Any

from trainproof.data.model import Blob

BATCH_ROWS = 64
"""Rows of a Parquet row group decoded at a time: 64 clips of 10 s at 16 kHz are 20 MB."""


def group_key(blob: Blob | None) -> tuple[str, int] | None:
    """What the clips read from one batch of a shard have in common: one worker takes them together."""
    if blob is None or blob.kind == "tar":
        return None
    return (blob.container, blob.group)


def read_bytes(blob: Blob) -> bytes:
    """The clip's bytes (OSError when they cannot be read as the manifest found them: a tar member cut short, or bytes
    of another length than the manifest measured)."""
    if blob.kind == "tar":
        with open(blob.container, "rb") as handle:
            handle.seek(blob.row)
            data = handle.read(blob.size)
        if len(data) != blob.size:
            raise OSError(f"the shard ends {blob.size - len(data):,} bytes before the member does")
        return data
    data = _position(blob).value(blob)
    if blob.sized and len(data) != blob.size:
        raise OSError(f"the shard changed since it was read: {len(data):,} bytes where {blob.size:,} were")
    return data


def digest_of(blob: Blob) -> str:
    """The xxh3-128 of the clip's bytes, in hex ("" when they cannot be read). Called right after the clip is decoded,
    this reads the batch the decoding kept open: no second read of the shard."""
    import xxhash

    try:
        return xxhash.xxh3_128(read_bytes(blob)).hexdigest()
    except (OSError, MemoryError):
        return ""


def release() -> None:
    """Let go of the shard kept open in this process (the driver, once it has read the digests it needed)."""
    _open_position.clear()


class _Position:
    """One shard open in this process, and the record batch of it last read (clips come in order: see the module doc)."""

    def __init__(self, blob: Blob) -> None:
        self.container, self.kind, self.group = blob.container, blob.kind, blob.group
        self.identity = _identity(blob.container)
        self.start = 0  # the first row (within the group) of ``batch``
        self.batch: Any = None
        self._batches: Any = None
        self._file: Any = None
        self._open()

    def _open(self) -> None:
        import pyarrow as pa

        try:
            if self.kind == "parquet":
                import pyarrow.parquet as pq

                self._file = pq.ParquetFile(self.container)
                self._batches = None
            else:
                source = pa.memory_map(self.container)
                self._file = _arrow_reader(pa, source)
        except (pa.ArrowException, ValueError) as exc:
            raise OSError(f"cannot read the shard: {exc}") from None

    def matches(self, blob: Blob) -> bool:
        return (blob.container, blob.kind, blob.group) == (self.container, self.kind, self.group) and blob.row >= self.start

    def value(self, blob: Blob) -> bytes:
        import pyarrow as pa

        try:
            if self.kind == "parquet":
                return self._parquet_value(blob)
            batch = self._file.get_batch(blob.group)
            return _bytes_of(batch.column(blob.column), blob.row)
        except (pa.ArrowException, ValueError, IndexError, KeyError) as exc:
            raise OSError(f"cannot read the shard: {exc}") from None

    def _parquet_value(self, blob: Blob) -> bytes:
        if self._batches is None:
            self._batches = self._file.iter_batches(batch_size=BATCH_ROWS, row_groups=[blob.group], columns=[blob.column])
            self.start, self.batch = 0, None
        while self.batch is None or blob.row >= self.start + self.batch.num_rows:
            if self.batch is not None:
                self.start += self.batch.num_rows
            self.batch = next(self._batches, None)
            if self.batch is None:
                raise IndexError(f"row group {blob.group} has no row {blob.row + 1}")
        return _bytes_of(self.batch.column(0), blob.row - self.start)


def _arrow_reader(pa: Any, source: Any) -> Any:
    """A reader of an Arrow IPC file or stream with random access to its record batches (a stream's are read once,
    memory-mapped, which costs their headers only)."""
    try:
        return pa.ipc.open_file(source)
    except pa.ArrowInvalid:
        source.seek(0)
        return _Batches(list(pa.ipc.open_stream(source)))


class _Batches:
    def __init__(self, batches: list[Any]) -> None:
        self.batches = batches

    def get_batch(self, index: int) -> Any:
        return self.batches[index]


def _bytes_of(column: Any, row: int) -> bytes:
    """Row ``row`` of an audio column: the ``bytes`` of an ``Audio`` struct, or a binary column's value."""
    import pyarrow as pa

    if pa.types.is_struct(column.type):
        column = column.field("bytes")
    value = column[row].as_py()
    if value is None:
        raise OSError("the shard holds no bytes at this row any more")
    return bytes(value)


def _identity(path: str) -> tuple[int, int, int]:
    found = os.stat(path)
    return (found.st_size, found.st_mtime_ns, found.st_ino)


_open_position: dict[str, _Position] = {}


def _position(blob: Blob) -> _Position:
    """The shard of ``blob`` open at the batch holding it: the one kept when it holds it (the same file, unchanged, the
    same group, not past the row), else opened afresh (and kept instead)."""
    kept = _open_position.get("shard")
    if kept is None or not kept.matches(blob) or kept.identity != _identity(blob.container):
        kept = _open_position["shard"] = _Position(blob)
    return kept
