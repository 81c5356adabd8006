"""What the data readers and the per-clip analysis hand on: plain frozen records, picklable."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

ANALYSIS_VERSION = 4
"""Bumped whenever :func:`trainproof.data.clip.analyze` would compute a record differently: cached records of
another version are never used."""


@dataclass(frozen=True)
class Entry:
    """One clip a manifest lists.

    ``line`` is the 1-based line of the manifest (of ``text`` for Kaldi, whose
    clips are spread over several files; ``manifest`` names the file the line
    is in). A clip of an audio-only folder has no line: ``line`` is 0 and
    ``manifest`` is the clip itself. ``audio`` is the path as resolved the way
    the trainer that reads this layout resolves it; ``listed`` is what the
    manifest says.
    ``duration`` and ``offset`` are the manifest's own claims in seconds,
    None when it makes none.
    """

    line: int
    id: str
    audio: str
    listed: str
    text: str | None
    manifest: str
    duration: float | None = None
    offset: float | None = None
    speaker: str | None = None

    @classmethod
    def of_values(cls, **values: object) -> Entry:
        """The entry of every field's value, built as unpickling builds one: the generated ``__init__`` of a frozen
        dataclass costs three times as much, and a manifest of 20,000 lines builds 20,000. ``values`` must name every
        field, with a value of its type (the caller checks)."""
        entry = object.__new__(cls)
        object.__setattr__(entry, "__dict__", values)  # the keyword arguments' own new dict, taken as it is
        return entry


ENTRY_FIELDS = tuple(f.name for f in fields(Entry))
"""The fields of :class:`Entry`, in order."""


COMPACT_FROM = 50_000
"""Entries read as columns from which their text and line numbers are held compactly (:class:`TextColumn`,
:class:`LineColumn`): a Python string an entry's id, path and transcript was most of a million-clip corpus's driver
memory; under it, the lists a reader made are kept as they are."""

_CHUNK = 65_536
_COMPACT_TEXT = ("listed", "id", "audio", "text")
_SHARED_TEXT = ("manifest", "speaker")
_NUMBERS = ("duration", "offset")


class _HeldColumn(Sequence[Any]):
    """One field of every entry held in one array, its values made Python objects when read: a value, a slice, or
    _CHUNK at a time when iterated."""

    __slots__ = ()

    def _range(self, start: int, stop: int) -> list:
        raise NotImplementedError

    def _one(self, at: int) -> Any:
        raise NotImplementedError

    def __getitem__(self, index):
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step == 1:
                return self._range(start, max(stop, start))
            return [self._one(i) for i in range(start, stop, step)]
        return self._one(range(len(self))[index])  # IndexError, negative indices

    def __iter__(self) -> Iterator[Any]:
        for start in range(0, len(self), _CHUNK):
            yield from self._range(start, min(start + _CHUNK, len(self)))


class TextColumn(_HeldColumn):
    """One text field of every entry as one Arrow array (the characters end to end, an offset each), not a Python
    string each; a value is made a string when it is read. ``arrow`` is the array (a ``large_string``), which the
    data rules' columns take without a copy."""

    __slots__ = ("arrow",)

    def __init__(self, arrow: Any) -> None:
        self.arrow = arrow

    def __len__(self) -> int:
        return len(self.arrow)

    def _range(self, start: int, stop: int) -> list:
        return self.arrow.slice(start, stop - start).to_pylist()

    def _one(self, at: int) -> Any:
        return self.arrow[at].as_py()

    def take(self, at: Any) -> Any:
        """The values at the positions ``at`` (a numpy array of ints), in that order, as one Arrow array: each chunk
        taken from on its own (a chunked array's ``take`` first joins every chunk, a copy of the whole column)."""
        import numpy as np
        import pyarrow as pa

        arrow = self.arrow
        if not isinstance(arrow, pa.ChunkedArray):
            return arrow.take(at)
        if arrow.num_chunks == 1:
            return arrow.chunk(0).take(at)
        at = np.asarray(at, dtype=np.int64)
        starts = np.cumsum([0, *(len(chunk) for chunk in arrow.chunks)])
        within = np.searchsorted(starts, at, side="right") - 1
        order = np.argsort(within, kind="stable")
        parts = [arrow.chunk(k).take(at[order][within[order] == k] - starts[k]) for k in np.unique(within).tolist()]
        joined = pa.concat_arrays(parts) if parts else pa.array([], type=arrow.type)
        return joined.take(np.argsort(order, kind="stable"))


class _ArrayColumn(_HeldColumn):
    """One field of every entry as one numpy array (``array``), which the data rules' columns take as it is."""

    __slots__ = ("array",)

    def __init__(self, array: Any) -> None:
        self.array = array

    def __len__(self) -> int:
        return len(self.array)

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        return self.array if dtype is None else self.array.astype(dtype)


class LineColumn(_ArrayColumn):
    """Every entry's line as one int64 array, not a Python int each; read as Python ints."""

    __slots__ = ()

    def _range(self, start: int, stop: int) -> list:
        return self.array[start:stop].tolist()

    def _one(self, at: int) -> Any:
        return int(self.array[at])


class CodedColumn(_HeldColumn):
    """One field of every entry whose values repeat (the manifest a line is in, its speaker, a duration no line claims)
    as a small int each and the distinct values, None among them: a list's pointer an entry was 8 MB of a million."""

    __slots__ = ("codes", "values")

    def __init__(self, codes: Any, values: Any) -> None:
        self.codes, self.values = codes, values

    @classmethod
    def of(cls, values: Sequence[object]) -> CodedColumn:
        """``values`` (hashable: strings, None) coded in the order each first appears."""
        import numpy as np

        index: dict[object, int] = {}
        codes = np.fromiter((index.setdefault(value, len(index)) for value in values), dtype=np.int64, count=len(values))
        distinct = np.empty(len(index), dtype=object)
        distinct[:] = list(index)
        return cls(codes.astype(np.min_scalar_type(max(len(index) - 1, 0))), distinct)

    def __len__(self) -> int:
        return len(self.codes)

    def _range(self, start: int, stop: int) -> list:
        return self.values[self.codes[start:stop]].tolist()

    def _one(self, at: int) -> Any:
        return self.values[self.codes[at]]

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        held = self.values[self.codes]
        return held if dtype is None else held.astype(dtype)


class FloatColumn(_ArrayColumn):
    """Every entry's number or None (a claimed duration) as one float64 array, None as NaN (made only of columns with no
    NaN of their own); read as Python floats and None."""

    __slots__ = ()

    def _range(self, start: int, stop: int) -> list:
        return [None if value != value else value for value in self.array[start:stop].tolist()]

    def _one(self, at: int) -> Any:
        value = float(self.array[at])
        return None if value != value else value


def _compacted(columns: Mapping[str, Sequence[object]]) -> dict[str, Sequence[object]]:
    """The columns of a large manifest held compactly: ids, paths and transcripts as :class:`TextColumn` (one array
    for columns of equal values, as a NeMo manifest's ids and paths are), line numbers as :class:`LineColumn`, the
    manifest's path and speakers as :class:`CodedColumn`, claimed durations and offsets as :class:`FloatColumn` (or
    coded, when no line claims one). A column with a value of another
    type than its field's, or text Arrow cannot hold (a lone surrogate), is kept as it is."""
    kept = {name: columns[name] for name in ENTRY_FIELDS}
    if len(kept["line"]) < COMPACT_FROM:
        return kept
    try:
        import numpy as np
        import pyarrow as pa
    except ImportError:
        return kept
    made: list[tuple[Sequence[object], TextColumn]] = []
    for name in _COMPACT_TEXT:
        values = kept[name]
        if isinstance(values, TextColumn):  # a reader's own
            continue
        same = next((column for source, column in made if source == values), None)  # the same strings: one array
        if same is not None:
            kept[name] = same
        elif set(map(type, values)) <= {str, type(None)}:
            try:
                kept[name] = column = TextColumn(pa.array(values, type=pa.large_string()))
            except (UnicodeEncodeError, pa.ArrowException):
                continue
            made.append((values, column))
    for name in _SHARED_TEXT:
        if set(map(type, kept[name])) <= {str, type(None)}:
            kept[name] = CodedColumn.of(kept[name])
    for name in _NUMBERS:
        values = kept[name]
        types = set(map(type, values))
        if types == {type(None)}:
            kept[name] = CodedColumn.of(values)
        elif types <= {float, type(None)} and not any(value != value for value in values if value is not None):
            kept[name] = FloatColumn(np.fromiter((math.nan if value is None else value for value in values), dtype=np.float64, count=len(values)))
    lines = kept["line"]
    if isinstance(lines, range):
        kept["line"] = LineColumn(np.arange(lines.start, lines.stop, lines.step, dtype=np.int64))
    elif set(map(type, lines)) == {int}:
        kept["line"] = LineColumn(np.fromiter(lines, dtype=np.int64, count=len(lines)))
    return kept


class Entries(Sequence[Entry]):
    """A manifest's entries, kept as a reader made them: :class:`Entry` objects one at a time, or columns (one list per
    field, held compactly from COMPACT_FROM entries) when a whole manifest was read at once. Either way a sequence of
    entries (one is built when it is asked for), and :meth:`column` gives one field of all of them, which is how a
    corpus's table and references are made: a 20,000-line manifest read as columns never builds 20,000 objects."""

    __slots__ = ("_rows", "_columns")

    def __init__(self, rows: Iterable[Entry] = (), columns: Mapping[str, Sequence[object]] | None = None) -> None:
        self._rows: tuple[Entry, ...] | None = None if columns is not None else tuple(rows)
        self._columns: dict[str, Sequence[object]] = {} if columns is None else _compacted(columns)

    def column(self, name: str) -> Sequence[object]:
        """Every entry's value of the field ``name``, in order (the sequence kept here: read it, do not change it): a
        list, or a :class:`TextColumn`, :class:`LineColumn`, :class:`CodedColumn` or :class:`FloatColumn`."""
        found = self._columns.get(name)
        if found is None:
            found = self._columns[name] = [getattr(entry, name) for entry in self._rows or ()]
        return found

    def _entries(self) -> tuple[Entry, ...]:
        if self._rows is None:
            self._rows = tuple(
                Entry.of_values(**dict(zip(ENTRY_FIELDS, values))) for values in zip(*(self._columns[name] for name in ENTRY_FIELDS))
            )
        return self._rows

    def __len__(self) -> int:
        return len(self._rows) if self._rows is not None else len(self._columns["line"])

    def __getitem__(self, index):
        if self._rows is None and not isinstance(index, slice):  # one entry of columns: built alone, not all of them
            at = range(len(self))[index]
            return Entry.of_values(**{name: self._columns[name][at] for name in ENTRY_FIELDS})
        return self._entries()[index]

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._entries())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Entries):
            return self._entries() == other._entries()
        if isinstance(other, (tuple, list)):
            return self._entries() == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._entries())

    def __repr__(self) -> str:
        return f"Entries({list(self._entries())!r})"

    def __reduce__(self):
        return (Entries, (self._entries(),))


def entry_column(entries: Sequence[Entry], name: str) -> Sequence[object]:
    """One field of every entry, in order: :meth:`Entries.column`, or read off any other sequence of entries."""
    if isinstance(entries, Entries):
        return entries.column(name)
    return [getattr(entry, name) for entry in entries]


@dataclass(frozen=True)
class Problem:
    """A structural problem of a manifest, at its line (None: the file as a whole).

    ``kind`` is one of: ``unparsable`` (a line that is not a record: bad JSON,
    a wrong column count), ``not-utf8`` (lines holding bytes that are not
    UTF-8: one problem, at the first), ``no-audio-field``, ``empty-text``,
    ``duplicate-id``, ``bom``, ``crlf``, ``blank-line``, ``unlisted`` (an
    audio file in the folder that no line lists; ``file`` names it).
    ``lines``: how many lines the problem stands for (a not-utf8 problem's
    every bad line).
    """

    kind: str
    message: str
    manifest: str
    line: int | None = None
    file: str | None = None
    lines: int = 1


@dataclass(frozen=True)
class Manifest:
    """A dataset as its manifest describes it: the layout, the clips, and what is wrong with the manifest itself."""

    path: str
    layout: str  # "ljspeech", "nemo", "csv", "kaldi", "folder" (audio_only says when a folder has no transcript), "librispeech",
    # "parquet", "arrow", "audiofolder"
    entries: Sequence[Entry]  # Entries, as the readers give them; a tuple of entries is taken too
    problems: tuple[Problem, ...] = ()
    notes: tuple[str, ...] = ()
    bases: tuple[str, ...] = ()
    """Where a relative listed path was looked for, in order, when the layout looks in several places: the working
    directory, the manifest's folder and ``clips/`` beside it (NeMo, CSV), then ``found_root`` (NeMo, CSV, Kaldi),
    or the audio folders of a bare id (LJSpeech). :func:`trainproof.data.manifest.tried_paths` gives the files a
    listed path was looked for at."""
    found_root: str | None = None
    """The folder above the manifest's from which its relative paths were read, when they resolve neither from the
    working directory nor beside the manifest (a Kaldi recipe's root, a repository's): one of the dataset's roots for
    the read policy, and the last of ``bases``. None when no such folder was needed."""
    audio_only: bool = False
    """A folder of audio with no transcript beside any clip (a vocoder's or codec's corpus, audio not yet transcribed):
    every clip is an entry without text, and the rules about transcripts do not apply."""
    blobs: tuple[Blob | None, ...] = ()
    """Each entry's bytes where they are held inside another file (a Parquet or Arrow row, a tar member), in entry
    order; () when no clip is."""
    splits: tuple[str, ...] = ()
    """Each entry's split (``train``, ``validation``, ``test``...), in entry order, for a dataset of several splits;
    () for one of a single split."""


@dataclass(frozen=True)
class Blob:
    """Where a clip's bytes are held inside another file, and what they are: a row of a Parquet shard or of an Arrow
    file (the Hugging Face ``Audio`` feature's ``{"bytes": ..., "path": ...}``), or a member of a tar shard.

    ``kind`` is ``parquet``, ``arrow`` or ``tar``. ``container`` is the
    shard's path; ``group`` the Parquet row group or the Arrow record batch
    (0 for a tar); ``row`` the row within it, or a tar member's first byte;
    ``column`` the audio column, or the tar member's name. ``size`` is the
    bytes' length; when ``estimated``, the mean of its row group's (a Parquet
    row listed without reading its bytes, whose length only the read will
    tell). ``digest`` (xxh3-128 of the bytes, in hex) is what the cache keys
    the clip's record by, so a shard rewritten around unchanged clips decodes
    only the clips that changed; "" until the bytes are read (a manifest
    reader does not read them: see :mod:`trainproof.data.blobs`).
    """

    kind: str
    container: str
    group: int
    row: int
    column: str
    size: int
    digest: str = ""
    estimated: bool = False

    @property
    def sized(self) -> bool:
        """Whether ``size`` is the bytes' own length (not an estimate)."""
        return not self.estimated


@dataclass(frozen=True, slots=True)
class ClipRef:
    """What the per-clip analysis needs to find and cut one clip; small enough to ship to a worker on another machine.
    ``blob``: where its bytes are when they are held inside another file (then ``audio`` only names the clip). Slotted:
    a run holds one a listed clip while it decodes (a dict each was 90 MB of a million clips' driver)."""

    audio: str
    offset: float | None = None
    duration: float | None = None
    blob: Blob | None = None

    def __reduce__(self) -> tuple:
        return (ClipRef, (self.audio, self.offset, self.duration, self.blob))  # pickled alike on every Python with slots


REFS_BLOCK = 4096
"""The references :class:`ClipRefs` makes at a time, and keeps (a few such blocks) for the next asked for."""


class ClipRefs(Sequence[ClipRef]):
    """Every listed clip's reference, made from the manifest's columns when it is asked for, a block at a time: the
    engines read them nearly in order, and a :class:`ClipRef` with its path as a Python string for each of a million
    clips was 160 MiB of the driver. ``paths`` is the manifest's own column of paths, which the records take as theirs
    (:meth:`trainproof.data.engine.Work.result`)."""

    __slots__ = ("paths", "_offsets", "_durations", "_blobs", "_blocks", "_length")

    def __init__(self, paths: Sequence[str], offsets: Sequence[float | None], durations: Sequence[float | None], blobs: Sequence[Blob | None] = ()) -> None:
        self.paths = paths
        self._offsets, self._durations, self._blobs = offsets, durations, blobs
        self._blocks: dict[int, list[ClipRef]] = {}
        self._length = len(paths)

    def __len__(self) -> int:
        return self._length

    def _block(self, number: int) -> list[ClipRef]:
        found = self._blocks.get(number)
        if found is None:
            if len(self._blocks) >= 4:  # the oldest made goes
                del self._blocks[next(iter(self._blocks))]
            start, stop = number * REFS_BLOCK, min(self._length, (number + 1) * REFS_BLOCK)
            offsets = self._offsets[start:stop]
            found = [
                ClipRef(audio, offset, duration if offset is not None else None)
                for audio, offset, duration in zip(self.paths[start:stop], offsets, self._durations[start:stop])
            ]
            if self._blobs:  # clips held inside shards
                found = [ref if blob is None else replace(ref, blob=blob) for ref, blob in zip(found, self._blobs[start:stop])]
            self._blocks[number] = found
        return found

    def __getitem__(self, index):
        if type(index) is int and 0 <= index < self._length:  # the engines' every call: a few times a clip
            number, within = divmod(index, REFS_BLOCK)
            found = self._blocks.get(number)
            return (found if found is not None else self._block(number))[within]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._length))]
        at = range(self._length)[index]  # IndexError, negative indices
        return self._block(at // REFS_BLOCK)[at % REFS_BLOCK]

    def __iter__(self) -> Iterator[ClipRef]:
        for number in range(-(-self._length // REFS_BLOCK)):
            yield from self._block(number)


ERROR_KINDS = ("missing", "unreadable", "empty", "truncated", "too-long")
"""Every ``error_kind`` the analysis writes; a cached row with another is not one it wrote (and is a miss)."""


@dataclass(frozen=True)
class ClipRecord:
    """The numbers one clip reduces to. Every rule about audio reads these, never the samples.

    ``error`` is set (and the numbers left at their defaults) when the file
    is missing, unreadable, empty, truncated or too long to decode; ``error_kind`` is
    ``missing``, ``unreadable``, ``empty``, ``truncated`` or ``too-long``.

    Levels are in dB relative to full scale (dBFS). ``level_db`` is the
    clip's own speech level: the 95th percentile of its 10 ms frame
    energies. ``lead_silence_s`` and ``trail_silence_s`` are the stretches
    at either end whose frames are more than SILENCE_BELOW_LEVEL_DB (in
    :mod:`trainproof.data.clip`) under that level; ``first_frame_db`` and
    ``last_frame_db`` are the first and last frames' energies relative to
    it (speech cut off at an edge is loud there). Clipping: a sample is
    full-scale when its magnitude is at least FULL_SCALE of the format's
    range; ``clipped_samples`` counts them and ``longest_clipped_run`` is
    the longest run of consecutive ones in any channel. ``dc_offset`` is
    the mean sample value (full scale 1.0). ``audio_hash`` identifies the
    decoded samples (the same audio in WAV and FLAC hashes alike).
    ``active_s`` is the seconds of its frames that are not silent (its speech
    without the pauses); ``nonfinite_samples`` counts NaN
    and infinite samples of a float file (read as 0 for every other number).
    ``extra`` holds what only some clips have (see the analysis's doc).
    """

    audio: str
    error: str | None = None
    error_kind: str | None = None
    size: int = 0
    format: str = ""
    subtype: str = ""
    sample_rate: int = 0
    channels: int = 0
    frames: int = 0
    duration_s: float = 0.0
    peak: float = 0.0
    clipped_samples: int = 0
    longest_clipped_run: int = 0
    dc_offset: float = 0.0
    level_db: float = float("-inf")
    lead_silence_s: float = 0.0
    trail_silence_s: float = 0.0
    first_frame_db: float = float("-inf")
    last_frame_db: float = float("-inf")
    audio_hash: str = ""
    active_s: float = 0.0
    nonfinite_samples: int = 0
    extra: dict = field(default_factory=dict)

    @classmethod
    def of_values(cls, values: Mapping[str, object] | Iterable[tuple[str, object]]) -> ClipRecord:
        """The record of every field's value (a mapping, or (name, value) pairs), built as unpickling builds one: the
        generated ``__init__`` of a frozen dataclass sets each of the 23 fields through ``object.__setattr__``, 2.5
        times the cost, and a corpus of 20,000 clips may build them all. ``values`` must name every field, with values of its
        type (the caller checks)."""
        record = object.__new__(cls)
        record.__dict__.update(values)
        return record
