"""Many clips' records as columns, and one record as the packed bytes the cache and the Ray engine carry.

A warm run of 20,000 clips used to build a :class:`ClipRecord` per cached
row (23 values each, type-checked) and then take the corpus table apart
again column by column: most of the run. Here a record travels as one
fixed-size run of bytes (:func:`pack`), so the records of many clips are
read back with one ``numpy.frombuffer`` (:func:`unpack_many`), and
:class:`ClipRecords` holds a corpus's records as one array per field,
which the data rules read as they are (from SPILL_FROM clips, the numbers
and hashes from a spill file: :class:`_Spill`). A :class:`ClipRecord` is
built only for whoever asks for one (indexing, iterating).

The packed layout (:data:`PACKED`, little-endian, no padding): every int
field as a signed 64-bit integer and every float field as a 64-bit float
(NaN and infinities as they are), then the few short strings every record
has as fixed-width ASCII (:data:`FIXED_TEXT`, NUL-padded; ``error_kind``'s
None is empty). Beside it, ``texts``: None, or a JSON object of what does
not fit the bytes: ``error``, a non-empty ``extra``, and any value that
will not go into its slot (a string that is not short ASCII, an int past
64 bits). Every record an engine decodes passes through :func:`pack`,
cached or not, so it comes back with Python numbers and its ``extra`` as
the JSON it becomes (keys as strings, tuples as lists); a record that will
not pack is kept as it is, and not cached.
"""

from __future__ import annotations

import json
import numbers
import operator
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import fields
from typing import Any, cast, overload

from trainproof.data.model import ERROR_KINDS, ClipRecord, CodedColumn

FIXED_TEXT = {"error_kind": 16, "format": 16, "subtype": 24, "audio_hash": 32}
"""The string fields packed in place, with their widths in bytes: longer, non-ASCII or NUL-holding values go to texts."""

_FIELDS = tuple(f.name for f in fields(ClipRecord))
_TYPES = {f.name: f.type for f in fields(ClipRecord)}
INTS = tuple(name for name in _FIELDS if _TYPES[name] == "int")
FLOATS = tuple(name for name in _FIELDS if _TYPES[name] == "float")
"""The fields in the packed bytes, in order."""

_EXTRA = _FIELDS.index("extra")
HASH = "audio_hash"
_HASH = _FIELDS.index(HASH)
_STRUCT = struct.Struct("<" + "q" * len(INTS) + "d" * len(FLOATS) + "".join(f"{width}s" for width in FIXED_TEXT.values()))
SIZE = _STRUCT.size
"""Bytes of a packed record."""

_INT_RANGE = range(-(2**63), 2**63)
_DEFAULTS = {f.name: f.default for f in fields(ClipRecord) if f.name not in ("audio", "extra")}  # the two with no default


def _dtype() -> Any:
    import numpy as np

    return np.dtype([*((name, "<i8") for name in INTS), *((name, "<f8") for name in FLOATS), *((name, f"S{w}") for name, w in FIXED_TEXT.items())])


def pack(record: ClipRecord) -> tuple[bytes, str | None]:
    """A record as its packed bytes and texts (the path is not in them: the caller keys by it).

    Numbers are taken as Python numbers (an integer type such as numpy's
    int64 as an int, a real one as a float), and ``extra`` as the JSON it
    becomes. TypeError for a value of a type its field cannot have (a
    string that is None, an int field holding 1.5, an ``extra`` that is not
    a dict), or an ``extra`` that JSON cannot hold: such a record is not
    packed at all (the engines keep it as it is, uncached), so texts only
    ever hold what :func:`overrides` accepts.
    """
    texts: dict[str, Any] = {}
    values: list[Any] = []
    for name in INTS:
        value = getattr(record, name)
        if type(value) is not int:
            value = operator.index(value)  # TypeError for a float, None, a string
        if value in _INT_RANGE:
            values.append(value)
        else:
            values.append(0)
            texts[name] = value
    for name in FLOATS:
        value = getattr(record, name)
        if type(value) is not float:
            if not isinstance(value, numbers.Real):
                raise TypeError(f"{name} is {type(value).__name__}, not a number")
            value = float(value)
        values.append(value)
    for name, width in FIXED_TEXT.items():
        value = getattr(record, name)
        if value is None and name == "error_kind":
            values.append(b"")
        elif type(value) is not str:
            raise TypeError(f"{name} is {type(value).__name__}, not text")
        elif (value or name != "error_kind") and len(value) <= width and value.isascii() and "\x00" not in value:
            values.append(value.encode("ascii"))
        else:
            values.append(b"")
            texts[name] = value
    if record.error is not None:
        if type(record.error) is not str:
            raise TypeError(f"error is {type(record.error).__name__}, not text")
        texts["error"] = record.error
    if type(record.extra) is not dict:
        raise TypeError(f"extra is {type(record.extra).__name__}, not a dict")
    if record.extra:
        texts["extra"] = record.extra
    return _STRUCT.pack(*values), json.dumps(texts, separators=(",", ":"), allow_nan=True) if texts else None


def try_pack(record: ClipRecord) -> tuple[bytes, str | None] | None:
    """:func:`pack`, or None for a record it refuses (every engine keeps such a record as it is, uncached)."""
    try:
        return pack(record)
    except (TypeError, ValueError, RecursionError):
        return None


def overrides(texts: str | None) -> dict[str, Any]:
    """What a record's texts set; ValueError when they are not what :func:`pack` writes (a damaged or foreign row): an
    object naming only an int field past 64 bits with an int, a string field with a string, ``error`` with a string,
    ``extra`` with an object."""
    if texts is None:
        return {}
    if type(texts) is not str:
        raise ValueError("texts that are not text")
    decoded = json.loads(texts)
    if type(decoded) is not dict:
        raise ValueError("texts that are not an object")
    for name, value in decoded.items():
        if name == "extra":
            if type(value) is not dict:
                raise ValueError("an extra that is not an object")
        elif name == "error" or name in FIXED_TEXT:
            if type(value) is not str:
                raise ValueError(f"a {name} that is not text")
        elif name in INTS:
            if type(value) is not int or value in _INT_RANGE:
                raise ValueError(f"a {name} that is not an int past 64 bits")
        else:
            raise ValueError(f"texts naming {name!r}, which pack never writes there")
    return decoded


def unpack(audio: str, packed: bytes, texts: str | None) -> ClipRecord:
    """The record of ``audio`` from :func:`pack`'s bytes and texts, decoded as a block of many is
    (:meth:`_Builder.put_packed`); ValueError for bytes or texts that :func:`pack` cannot have written (the caller
    treats it as a miss)."""
    if type(packed) is not bytes or len(packed) != SIZE:
        raise ValueError("a packed record of another size")
    block = unpack_many([packed])
    if not ascii_fixed(block).all():
        raise ValueError("a string slot that is not ASCII")
    builder = _Builder(1)
    builder.put_packed([0], [audio], block, [overrides(texts) if texts is not None else None])
    return builder.build()[0]


class ClipRecords(Sequence[ClipRecord]):
    """Every clip's record, in order, held as one numpy array per field of :class:`ClipRecord`.

    Int fields are int64 arrays and float fields float64, unless a record
    holds a value they cannot (then that field's array holds objects);
    string fields, ``error`` and ``extra`` are arrays of objects when read,
    held as codes when built (:class:`~trainproof.data.model.CodedColumn`), ``extra`` None for a record
    whose ``extra`` is empty (most: an empty dict a clip was 72 bytes of a
    driver's every clip). ``audio_hash`` is held as ASCII
    bytes (``S32``: a hash is 32 hex digits; a string object was 97 bytes a
    clip), or as strings when a record's will not fit there
    (:func:`ascii_strings` makes the bytes strings). ``audio`` may be the
    manifest's own column of paths (:meth:`with_paths`). Indexing
    and iterating build :class:`ClipRecord` objects; :meth:`column` gives a
    field's array (do not write to it).
    """

    __slots__ = ("_columns", "_length")

    def __init__(self, columns: Mapping[str, Any]) -> None:
        lengths = {len(columns[name]) for name in _FIELDS}
        if len(lengths) > 1:
            raise ValueError("columns of different lengths")
        self._columns = {name: columns[name] for name in _FIELDS}
        self._length = lengths.pop() if lengths else 0

    @classmethod
    def of(cls, records: Iterable[ClipRecord]) -> ClipRecords:
        """The records, as columns (a ClipRecords is returned as it is)."""
        if isinstance(records, ClipRecords):
            return records
        records = list(records)
        builder = _Builder(len(records))
        builder.put(range(len(records)), records)
        return builder.build()

    @staticmethod
    def builder(total: int) -> _Builder:
        """A builder of ``total`` rows, to fill with :meth:`_Builder.put` and :meth:`_Builder.put_packed`, then build."""
        return _Builder(total)

    def column(self, name: str) -> Any:
        """The values of one field, for every clip, as a numpy array (``audio_hash``'s may be bytes: see the class); a
        field held in a spill file (:class:`_Spill`) is mapped afresh, for as long as the array returned is kept, and a
        coded one's objects are made afresh."""
        import numpy as np

        held = self._columns[name]
        return held.read() if type(held) is _Spilled else np.asarray(held) if type(held) is CodedColumn else held

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> ClipRecord: ...

    @overload
    def __getitem__(self, index: slice) -> list[ClipRecord]: ...

    def __getitem__(self, index: int | slice) -> ClipRecord | list[ClipRecord]:
        if isinstance(index, slice):
            return list(self._records(index))
        position = range(self._length)[index]  # IndexError, negative indices
        return next(self._records(slice(position, position + 1)))

    def __iter__(self) -> Iterator[ClipRecord]:
        return self._records(slice(None))

    def with_paths(self, paths: Sequence[str]) -> ClipRecords:
        """These records with ``paths`` (the references' own column, in order) as the paths of those put without one
        (:meth:`_Builder.put_packed`): the column itself when every path that was put is the same, so no clip's path
        is made a string of its own."""
        import numpy as np

        held = self.column("audio")
        if len(paths) != self._length:
            raise ValueError("paths of another length")
        put = np.flatnonzero(np.not_equal(held, cast(Any, None)))  # elementwise: the records put with their path
        if all(held[i] == paths[i] for i in put.tolist()):
            return ClipRecords({**self._columns, "audio": paths})
        filled = held.copy()
        for i in np.flatnonzero(np.equal(held, cast(Any, None))).tolist():
            filled[i] = paths[i]
        return ClipRecords({**self._columns, "audio": filled})

    def _records(self, rows: slice) -> Iterator[ClipRecord]:
        lists = [_values(self._columns[name], rows) for name in _FIELDS]
        lists[_EXTRA] = [{} if extra is None else extra for extra in lists[_EXTRA]]
        if self._columns[HASH].dtype.kind == "S":
            lists[_HASH] = [value.decode("ascii") for value in lists[_HASH]]
        for values in zip(*lists):
            yield ClipRecord.of_values(zip(_FIELDS, values))

    def __eq__(self, other: object) -> bool:
        """Record by record, as a list compares; each record is built afresh, so one holding NaN equals no other (a
        list's shortcut of identity does not apply), but a ClipRecords equals itself."""
        if other is self:
            return True
        if not isinstance(other, (ClipRecords, list, tuple)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ClipRecords({len(self)} clips)"

    def __reduce__(self) -> tuple:
        import numpy as np

        return (ClipRecords, ({name: np.array(held.read()) if type(held) is _Spilled else held for name, held in self._columns.items()},))


def _values(column: Any, rows: slice) -> list:
    """The values of a column as held (an array, coded or spilled, or a sequence such as the manifest's paths) at
    ``rows``, as a list: a coded column's values made for those rows alone."""
    part = (column.read() if type(column) is _Spilled else column)[rows]
    return part.tolist() if hasattr(part, "tolist") else list(part)


SPILL_FROM = 50_000
"""Records of at least this many clips keep their numbers and hashes in a spill file (:class:`_Spill`), not in memory."""


class _Spill:
    """Fixed-width columns of many clips' records in one unnamed temporary file, which the system deletes when it is
    closed (with the records that read it, or the process). A column is mapped while it is read or written and
    let go after, so the driver holds the columns a rule is reading, not every number of every clip for the whole
    run (a million clips' were 160 MB; the file's pages are the system's cache, given back when memory is short)."""

    def __init__(self, total: int, dtypes: Mapping[str, Any]) -> None:
        import tempfile

        import numpy as np

        self.np = np
        self.total = total
        self.dtypes = dict(dtypes)
        self.offsets: dict[str, int] = {}
        size = 0
        for name, dtype in self.dtypes.items():
            self.offsets[name] = size
            size += total * dtype.itemsize
        self.file = tempfile.TemporaryFile(prefix="trainproof-records-")  # noqa: SIM115 (closed with the records)
        self.file.truncate(size)  # zeros, as np.zeros: 0, 0.0 and b""

    def map(self, name: str, writable: bool = False) -> Any:
        """The column ``name`` as an array over the file's bytes (written through when ``writable``)."""
        return self.np.memmap(self.file, dtype=self.dtypes[name], mode="r+" if writable else "r", offset=self.offsets[name], shape=(self.total,))


class _Spilled:
    """A column of :class:`ClipRecords` held in a :class:`_Spill`."""

    __slots__ = ("spill", "name")

    def __init__(self, spill: _Spill, name: str) -> None:
        self.spill, self.name = spill, name

    def __len__(self) -> int:
        return self.spill.total

    @property
    def dtype(self) -> Any:
        return self.spill.dtypes[self.name]

    def read(self) -> Any:
        return self.spill.map(self.name)


_CODED = ("error", *(name for name in FIXED_TEXT if name != HASH), "extra")
"""The object columns held as codes (:class:`~trainproof.data.model.CodedColumn`), filled as codes (:class:`_Codes`): a kind, format and subtype
are a few strings across a corpus, and an error or an ``extra`` is None for most clips (so is a path the engines put
without one: :meth:`ClipRecords.with_paths`)."""


class _Codes:
    """A :class:`~trainproof.data.model.CodedColumn` being filled: a string or None is coded by its value, anything else (a dict, a number
    a record that would not pack holds) as a value of its own; the codes widen from one byte as values come."""

    def __init__(self, total: int, default: Any, np: Any) -> None:
        self.np = np
        self.codes = np.zeros(total, dtype=np.uint8)
        self.values: list[Any] = [default]
        self.index: dict[str | None, int] = {default: 0}

    def _code(self, value: Any) -> int:
        if value is None or type(value) is str:
            code = self.index.get(value)
            if code is not None:
                return code
            self.index[value] = len(self.values)
        self.values.append(value)
        return len(self.values) - 1

    def assign(self, rows: Any, values: Sequence[Any]) -> None:
        """``values[k]`` at row ``rows[k]``."""
        self._put(rows, [self._code(value) for value in values])

    def assign_distinct(self, rows: Any, distinct: Sequence[Any], inverse: Any) -> None:
        """``distinct[inverse[k]]`` at row ``rows[k]``."""
        self._put(rows, self.np.asarray([self._code(value) for value in distinct], dtype=self.np.int64)[inverse])

    def _put(self, rows: Any, codes: Any) -> None:
        np = self.np
        if len(self.values) > np.iinfo(self.codes.dtype).max:
            self.codes = self.codes.astype(np.min_scalar_type(len(self.values)))
        self.codes[rows] = codes

    def built(self) -> CodedColumn:
        values = self.np.empty(len(self.values), dtype=object)
        values[:] = self.values  # a list or dict value stays one object
        return CodedColumn(self.codes.astype(self.np.min_scalar_type(len(self.values) - 1)), values)


class _Builder:
    """Fills a :class:`ClipRecords` of ``total`` rows: records put at their rows, packed blocks at theirs. From
    SPILL_FROM rows, the numbers and hashes go to a spill file as they are put."""

    def __init__(self, total: int) -> None:
        import numpy as np

        self.np = np
        self.total = total
        fixed = {**{name: np.dtype(np.int64) for name in INTS}, **{name: np.dtype(np.float64) for name in FLOATS}, HASH: np.dtype(f"S{FIXED_TEXT[HASH]}")}
        self.columns: dict[str, Any] = {}
        spill = None
        if total >= max(SPILL_FROM, 1):
            try:
                spill = _Spill(total, fixed)
            except OSError:  # no temporary folder to write to: held in memory, as a smaller corpus is
                spill = None
        for name, dtype in fixed.items():  # the hashes "" until a record is put: see ClipRecords
            self.columns[name] = _Spilled(spill, name) if spill is not None else np.zeros(total, dtype=dtype)
        for name in ("audio", *_CODED):
            self.columns[name] = _Codes(total, _DEFAULTS.get(name), np)

    def _writable(self, name: str) -> Any:
        """The column ``name`` to write to: its array, or its spill file's bytes mapped for the write."""
        held = self.columns[name]
        return held.spill.map(name, writable=True) if type(held) is _Spilled else held

    def put(self, rows: Sequence[int], records: Sequence[ClipRecord]) -> None:
        """``records[k]`` at row ``rows[k]``."""
        if not records:
            return
        index = self.np.asarray(rows, dtype=self.np.intp)
        for name in _FIELDS:
            values = [getattr(record, name) for record in records]
            if name == "extra":
                values = [None if type(extra) is dict and not extra else extra for extra in values]
            self._assign(name, index, values)

    def put_packed(self, rows: Any, audio: Sequence[str] | None, block: Any, overridden: Sequence[dict[str, Any] | None]) -> None:
        """At ``rows``: the records of ``audio`` whose packed bytes are the rows of ``block`` (:func:`unpack_many`) and
        whose texts, parsed by :func:`overrides`, are ``overridden`` (None where a record has none). ``audio`` None:
        the paths are given at the end (:meth:`ClipRecords.with_paths`)."""
        np = self.np
        rows = np.asarray(rows, dtype=np.intp)
        if rows.size == 0:
            return
        if audio is not None:
            self.columns["audio"].assign(rows, audio)
        for name in (*INTS, *FLOATS):
            self._writable(name)[rows] = block[name]
        for name in FIXED_TEXT:
            raw = block[name]
            if name == HASH:
                if self.columns[HASH].dtype != object:  # one a clip: kept as the bytes they are
                    self._writable(HASH)[rows] = raw
                else:
                    self._assign(HASH, rows, [value.decode("ascii") for value in raw.tolist()])
                continue
            distinct, inverse = np.unique(raw, return_inverse=True)
            decoded = [value.decode("ascii") if value or name != "error_kind" else None for value in distinct.tolist()]
            self.columns[name].assign_distinct(rows, decoded, inverse.reshape(-1))
        self.columns["extra"].assign_distinct(rows, [None], np.zeros(rows.size, dtype=np.intp))  # no extra: see ClipRecords
        by_field: dict[str, tuple[list[int], list[Any]]] = {}  # one assignment a field, not one a record
        for k, overrides_k in enumerate(overridden):
            if not overrides_k:
                continue
            for name, value in overrides_k.items():
                at, values = by_field.setdefault(name, ([], []))
                at.append(k)
                values.append(value)
        for name, (at, values) in by_field.items():
            self._assign(name, rows[at], values)

    def _assign(self, name: str, index: Any, values: list) -> None:
        np = self.np
        if type(self.columns[name]) is _Codes:
            self.columns[name].assign(index, values)
            return
        column = self._writable(name)
        if column.dtype.kind == "S":  # the hashes' bytes: an ASCII string that fits, else every hash as a string
            width = column.dtype.itemsize
            if all(type(value) is str and len(value) <= width and value.isascii() and "\x00" not in value for value in values):
                column[index] = [value.encode("ascii") for value in values]
                return
            column = self.columns[name] = np.array([value.decode("ascii") for value in column.tolist()] or [], dtype=object)
        numeric = column.dtype != object
        if numeric:
            kind = int if name in INTS else float
            if all(type(value) is kind for value in values):
                try:
                    column[index] = values
                    return
                except OverflowError:
                    pass
            column = np.array(column, dtype=object)  # in memory from now on: a value its bytes cannot hold
        holder = np.empty(len(values), dtype=object)  # a list or dict value stays one object
        holder[:] = values
        column[index] = holder
        if numeric:  # values its dtype cannot hold: the column as numpy infers it from them all (ints and floats: float64)
            inferred = np.array(column.tolist())
            column = inferred if inferred.dtype.kind in "iufb" and inferred.shape == column.shape else column
        self.columns[name] = column

    def build(self) -> ClipRecords:
        return ClipRecords({name: column.built() if type(column) is _Codes else column for name, column in self.columns.items()})


def ascii_strings(column: Any) -> Any:
    """A numpy array of ASCII bytes (``S`` dtype) as a pandas Series of strings: Arrow's, made without a Python string
    each, when pyarrow is there."""
    import pandas as pd

    try:
        import pyarrow as pa
    except ImportError:
        return pd.Series(column.astype(object)).str.decode("ascii")
    return pd.Series(pd.array(pa.array(column).cast(pa.large_string()), dtype="str"))


def unpack_many(packed: Sequence[bytes]) -> Any:
    """The packed records as one structured numpy array (a field per packed field); each must be SIZE bytes."""
    return unpack_block(b"".join(packed))


def unpack_block(packed: bytes | bytearray) -> Any:
    """Packed records end to end (a multiple of SIZE bytes) as one structured numpy array over the same bytes."""
    import numpy as np

    return np.frombuffer(packed, dtype=_dtype())


MAX_SECONDS = 2.0**63
"""No duration the analysis writes is longer (seconds): frames are a 64-bit count, and a rate at least 1 Hz."""

MAX_SAMPLE = 2.0**128
"""No peak or DC offset the analysis writes is larger (full scale 1.0): float32, the widest sample it reads, stops short of it."""

MAX_DB = 10_000.0
"""No level the analysis writes, nor a frame's level relative to it, is further from 0 dB (10·log10 of float64's
positive range spans -3,233 to 3,083 dB); -inf is a silent frame's or clip's level."""

_SECONDS = ("duration_s", "lead_silence_s", "trail_silence_s", "active_s")
_DECIBELS = ("level_db", "first_frame_db", "last_frame_db")


def in_range(block: Any) -> Any:
    """Which rows of an :func:`unpack_many` block hold numbers the analysis (:mod:`trainproof.data.clip`) can write:
    counts, sizes and rates at least 0; seconds finite, from 0 to MAX_SECONDS; the peak (from 0) and the DC offset
    finite within MAX_SAMPLE; levels in dB within MAX_DB, or -inf. NaN is never one of them. The cache takes a row that
    is not for a miss: a duration of NaN or inf, added up and rounded for the summary, was an internal error."""
    import numpy as np

    ok = np.ones(len(block), dtype=bool)
    for name in INTS:
        ok &= block[name] >= 0
    for name in _SECONDS:
        ok &= (block[name] >= 0.0) & (block[name] <= MAX_SECONDS)
    ok &= (block["peak"] >= 0.0) & (block["peak"] <= MAX_SAMPLE)
    ok &= np.abs(block["dc_offset"]) <= MAX_SAMPLE
    for name in _DECIBELS:
        ok &= block[name] <= MAX_DB
        ok &= (block[name] >= -MAX_DB) | (block[name] == -np.inf)
    ok &= np.isin(block["error_kind"], _KINDS)  # a kind no rule knows would take the clip out of every rule
    return ok


_KINDS = [b"", *(kind.encode("ascii") for kind in ERROR_KINDS)]


def analysed_overrides(fields: Mapping[str, Any]) -> bool:
    """Whether texts parsed by :func:`overrides` hold only what the analysis can write: never an int past 64 bits (a
    file's size, frames and counts fit in one), which :func:`pack` keeps there only for records made some other way; and
    never an ``error_kind`` it does not write (one too long for its slot is kept in the texts)."""
    return not any(name in fields for name in INTS) and fields.get("error_kind", "missing") in ERROR_KINDS


def ascii_fixed(block: Any) -> Any:
    """Which rows of an :func:`unpack_many` block have ASCII in every string slot (as :func:`pack` writes them)."""
    import numpy as np

    ok = np.ones(len(block), dtype=bool)
    for name, width in FIXED_TEXT.items():
        ok &= (np.ascontiguousarray(block[name]).view(np.uint8).reshape(len(block), width) < 128).all(axis=1)
    return ok
