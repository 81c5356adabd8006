"""The per-clip record cache, like a linter's (ruff's ``.ruff_cache``): re-running after a small change decodes only what changed.

A cache is a directory (DEFAULT_DIR in the working directory unless told
otherwise) holding a CACHEDIR.TAG (so backup tools skip it), a .gitignore
of ``*`` (so it is never committed) and one sqlite file, DB_NAME. The two
markers are written only into a directory that is the cache's own (created
for it, empty, or tagged already), never into an existing folder that
--cache-dir points at. Nothing
outside that directory is ever written, and nothing at all until the cache
is opened: the command passes no cache under ``--no-cache``.

A record is stored under the clip's absolute path and segment (offset,
duration), with the file's size and mtime (ns) and the ANALYSIS_VERSION
that computed it, one typed column per field of the record (so a warm run
reads numbers, not text to parse: at 20,000 clips, parsing JSON records was
a third of a warm run); a lookup is a hit only when all of them match, so a
changed file, a changed segment or a new analysis is decoded again. One row
per path and segment: a re-analysis replaces the stale row. (Like every
mtime-keyed cache, a file rewritten with the same size within one mtime
tick of the filesystem is not seen as changed.)

The cache never fails a run: a database that cannot be opened, is locked by
another run for longer than TIMEOUT_S, or is full or read-only is ignored
from then on, with a note in :attr:`Cache.notes`; a file that is not a
database (corrupt) is replaced by an empty one, with a note. Concurrent runs
share it through sqlite's own locking.
"""

from __future__ import annotations

import itertools
import json
import math
import operator
import os
import sqlite3
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import NamedTuple

from trainproof.data import model
from trainproof.data.model import ClipRecord
from trainproof.safe import utf8_encodable

DEFAULT_DIR = ".trainproof_cache"
"""The cache directory, relative to the working directory, when none is given."""

DB_NAME = "clips.sqlite3"
"""The database file inside the cache directory."""

SCHEMA = 2
"""The layout of the database; a database of another layout is emptied, not read."""

TIMEOUT_S = 10.0
"""Seconds to wait for another run's lock on the database before going on without the cache."""

QUERY_BATCH = 500
"""Paths looked up per query (under sqlite's limit of host parameters)."""

CACHEDIR_TAG = """Signature: 8a477f597d28d172789f06886806bc55
# This file is a cache directory tag created by trainproof.
# For information about cache directory tags, see https://bford.info/cachedir/
"""

_FIELDS = tuple(f.name for f in fields(ClipRecord))
_INTERNED = ("error_kind", "format", "subtype")  # one copy of each of the few strings every record repeats
# The record's columns: every field but the path (the key's) and ``extra`` (JSON text, NULL when empty), typed.
_TYPES = {f.name: f.type for f in fields(ClipRecord)}
_COLUMNS = _FIELDS[1:-1]
_SQL_TYPE = {"int": "INTEGER", "float": "REAL", "str": "TEXT", "str | None": "TEXT"}
_PYTHON_TYPES = {"int": (int,), "float": (float,), "str": (str,), "str | None": (str, type(None))}
_FLOATS = tuple(i for i, name in enumerate(_COLUMNS) if _TYPES[name] == "float")
_FLOAT_VALUES = operator.itemgetter(*_FLOATS)
# Every sequence of value types a row of this version can hold: a row is checked by one lookup of its types, not one
# isinstance per value (a warm run reads 20,000 rows: 84 -> 64 ms for them all).
_SIGNATURES = frozenset(itertools.product(*(_PYTHON_TYPES[_TYPES[name]] for name in _COLUMNS)))

ROW = (*((name, _TYPES[name]) for name in _COLUMNS), ("extra", "str | None"))
"""The values of a record's row (:func:`dumps`), in order, as (field, type): every field but the path, then ``extra`` as
JSON text (None when empty). Also the wire format of the Ray engine (a column each)."""


class CacheKey(NamedTuple):
    """What a cached record is valid for: the file (absolute path, size, mtime in ns) and the segment asked for."""

    path: str
    size: int
    mtime_ns: int
    offset: float | None = None
    duration: float | None = None

    @property
    def segment(self) -> str:
        """The segment as stored: "" for the whole file, else "offset:duration" (exact float reprs)."""
        if self.offset is None and self.duration is None:
            return ""
        return f"{self.offset!r}:{self.duration!r}"

    @classmethod
    def of(cls, audio: str, stat: os.stat_result, offset: float | None = None, duration: float | None = None) -> CacheKey:
        """The key of ``audio`` (made absolute against the working directory, not resolved) as ``stat`` found it."""
        return cls(os.path.abspath(audio), stat.st_size, stat.st_mtime_ns, offset, duration)


def dumps(record: ClipRecord) -> tuple:
    """A record as the row of its columns (the path is the key's); NaN is stored as NULL, which sqlite makes of it anyway."""
    extra = json.dumps(record.extra, separators=(",", ":"), allow_nan=True) if record.extra else None
    return (*(getattr(record, name) for name in _COLUMNS), extra)


def loads(audio: str, row: Sequence[object]) -> ClipRecord:
    """The record of ``audio`` from its columns; ValueError for a row this version cannot have written (the wrong
    number or types of values, extra that is not a JSON object): the caller treats it as a miss."""
    if len(row) != len(_COLUMNS) + 1:
        raise ValueError("a cached record of another shape")
    values = row[:-1]
    if None in _FLOAT_VALUES(values):  # a NaN, stored as NULL
        values = list(values)
        for i in _FLOATS:
            if values[i] is None:
                values[i] = math.nan
    if tuple(map(type, values)) not in _SIGNATURES:
        raise ValueError("a cached record with values of the wrong type")
    extra = row[-1]
    if extra is None:
        decoded: dict = {}
    elif type(extra) is not str:
        raise ValueError("a cached record with values of the wrong type")
    else:
        decoded = json.loads(extra)
        if not isinstance(decoded, dict):
            raise ValueError("a cached record whose extra is not an object")
    record = ClipRecord.of_values(zip(_FIELDS, (audio, *values, decoded)))
    state = record.__dict__
    for name in _INTERNED:
        if state[name] is not None:
            state[name] = sys.intern(state[name])
    return record


class Cache:
    """The record cache in ``directory``; opened on first use (or by ``with``), written only by :meth:`put_many`."""

    def __init__(self, directory: str | os.PathLike[str] = DEFAULT_DIR, *, version: int | None = None) -> None:
        self.directory = Path(directory)
        self.version = model.ANALYSIS_VERSION if version is None else version
        self.notes: list[str] = []
        self._db: sqlite3.Connection | None = None
        self._broken = False

    @property
    def path(self) -> Path:
        return self.directory / DB_NAME

    @property
    def usable(self) -> bool:
        """False once the cache has been given up on for this run (see the notes)."""
        return not self._broken

    def __enter__(self) -> Cache:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> Cache:
        """Create the directory and database if needed; a failure only disables the cache (with a note)."""
        if self._db is not None or self._broken:
            return self
        try:
            own = self._prepare_directory()
            if not own and self.path.exists() and not _is_ours(self.path):
                self._broken = True
                self.notes.append(
                    f"{self.path} is not a trainproof cache, in a folder that is not the cache's own; it was left as it is and the run went on without a cache"
                )
                return self
            self._db = self._connect()
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) or not self.path.exists():
                self._give_up("cannot be opened", exc)
                return self
            # not a database (a corrupt or foreign file under our name): start afresh
            try:
                self.path.unlink()
                self._db = self._connect()
                self.notes.append(f"the cache {self.path} was not a readable database ({exc}); it was replaced by an empty one")
            except (OSError, sqlite3.Error) as again:
                self._give_up("is corrupt and cannot be replaced", again)
        except OSError as exc:
            self._give_up("cannot be created", exc)
        return self

    def close(self) -> None:
        if self._db is not None:
            try:
                self._db.close()
            except sqlite3.Error:
                pass
            self._db = None

    def _prepare_directory(self) -> bool:
        """Create the directory; tag it only when it is ours (new, empty, or tagged already): a ``.gitignore`` of ``*``
        dropped into a folder the user pointed at with --cache-dir (their project, say) would hide it from git.
        Whether it is ours."""
        fresh = not self.directory.exists()
        self.directory.mkdir(parents=True, exist_ok=True)
        if not (fresh or (self.directory / "CACHEDIR.TAG").exists() or not any(self.directory.iterdir())):
            return False
        for name, text in (("CACHEDIR.TAG", CACHEDIR_TAG), (".gitignore", "# Automatically created by trainproof.\n*\n")):
            target = self.directory / name
            if not target.exists():
                target.write_text(text, encoding="utf-8")
        return True

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=TIMEOUT_S, isolation_level=None)
        try:
            db.execute("PRAGMA synchronous=OFF")  # a cache: a torn write after an OS crash is a corrupt file, which is replaced
            db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            schema = "SELECT value FROM meta WHERE key = 'schema'"
            row = db.execute(schema).fetchone()
            if row is None or row[0] != str(SCHEMA):
                db.execute("BEGIN IMMEDIATE")
                row = db.execute(schema).fetchone()  # again, under the lock: another run may have just set it up
                if row is None or row[0] != str(SCHEMA):
                    db.execute("DROP TABLE IF EXISTS clips")
                    record = ", ".join(f"r_{name} {_SQL_TYPE[_TYPES[name]]}" for name in _COLUMNS)
                    db.execute(
                        "CREATE TABLE clips (path TEXT NOT NULL, segment TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, "
                        f"version INTEGER NOT NULL, {record}, r_extra TEXT, PRIMARY KEY (path, segment)) WITHOUT ROWID"
                    )
                    db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(SCHEMA),))
                db.execute("COMMIT")
        except BaseException:
            db.close()
            raise
        return db

    def _give_up(self, what: str, exc: BaseException) -> None:
        self.close()
        self._broken = True
        self.notes.append(f"the cache {self.path} {what} ({exc}); going on without it")

    def get_many(self, keys: Iterable[CacheKey]) -> dict[CacheKey, ClipRecord]:
        """The cached records valid for these keys (a key that is not there, or stale, is simply absent)."""
        self.open()
        if self._db is None:
            return {}
        wanted: dict[tuple[str, str], CacheKey] = {}
        for key in keys:
            if utf8_encodable(key.path):
                wanted[(key.path, key.segment)] = key
        found: dict[CacheKey, ClipRecord] = {}
        try:
            for batch in _batches(sorted({path for path, _ in wanted}), QUERY_BATCH):
                marks = ",".join("?" * len(batch))
                query = f"SELECT * FROM clips WHERE path IN ({marks})"  # noqa: S608
                for row in self._db.execute(query, batch):
                    path, segment, size, mtime_ns, version = row[:5]
                    key = wanted.get((path, segment))
                    if key is None or size != key.size or mtime_ns != key.mtime_ns or version != self.version:
                        continue
                    try:
                        found[key] = loads(path, row[5:])
                    except (ValueError, TypeError, RecursionError):
                        continue  # a row this version cannot read is a miss, and is replaced when re-analysed
        except sqlite3.Error as exc:
            self._give_up("cannot be read", exc)
            return {}
        return found

    def put_many(self, items: Iterable[tuple[CacheKey, ClipRecord]] | Mapping[CacheKey, ClipRecord]) -> None:
        """Store records under their keys, in one transaction; a failure disables the cache for the run (with a note)."""
        pairs = items.items() if isinstance(items, Mapping) else items
        rows = [(k.path, k.segment, k.size, k.mtime_ns, self.version, *dumps(r)) for k, r in pairs if utf8_encodable(k.path) and utf8_encodable(r.error or "")]
        if not rows:
            return
        self.open()
        if self._db is None:
            return
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                marks = ", ".join("?" * (5 + len(_COLUMNS) + 1))
                self._db.executemany(f"INSERT OR REPLACE INTO clips VALUES ({marks})", rows)  # noqa: S608
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._give_up("cannot be written", exc)

    def count(self) -> int:
        """Rows in the cache (for tests and the benchmark)."""
        self.open()
        if self._db is None:
            return 0
        return int(self._db.execute("SELECT COUNT(*) FROM clips").fetchone()[0])


def _is_ours(path: Path) -> bool:
    """Whether ``path`` is a database trainproof wrote (it has the meta table's schema row), read without writing to it."""
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=TIMEOUT_S)
    except (sqlite3.Error, OSError, ValueError):
        return False
    try:
        return db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() is not None
    except sqlite3.Error:
        return False
    finally:
        db.close()


def _batches(items: list, size: int) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
