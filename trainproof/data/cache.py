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
that computed it, as its packed bytes and texts
(:func:`trainproof.data.records.pack`: a warm run reads one run of bytes a
clip and turns the hits into columns at once, where a typed column per
field cost a Python object per value; at 20,000 clips, reading rows was
most of a warm run); a lookup is a hit only when all of them match, so a
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
import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from trainproof.data import model, records
from trainproof.data.model import ClipRecord
from trainproof.safe import utf8_encodable

DEFAULT_DIR = ".trainproof_cache"
"""The cache directory, relative to the working directory, when none is given."""

DB_NAME = "clips.sqlite3"
"""The database file inside the cache directory."""

SCHEMA = 3
"""The layout of the database; a database of another layout is emptied, not read."""

TIMEOUT_S = 10.0
"""Seconds to wait for another run's lock on the database before going on without the cache."""

QUERY_BATCH = 500
"""Paths looked up per query (under sqlite's limit of host parameters)."""

SCAN_SHARE = 0.5
"""A lookup of at least this share of the cache's rows reads the whole table in one pass rather than path by path."""

CACHEDIR_TAG = """Signature: 8a477f597d28d172789f06886806bc55
# This file is a cache directory tag created by trainproof.
# For information about cache directory tags, see https://bford.info/cachedir/
"""

_SELECT = "SELECT path, segment, size, mtime_ns, packed, texts FROM clips WHERE version = ?"


class Hits(NamedTuple):
    """The keys of a lookup that the cache holds valid records for: their positions in the keys looked up, and their
    records, checked to be what :func:`records.pack` writes: the packed ones as one block (:func:`records.unpack_many`,
    a row each) and each one's texts as :func:`records.overrides` parsed them (None for a record with none)."""

    positions: list[int]
    block: Any
    overridden: list[dict[str, Any] | None]


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


class Cache:
    """The record cache in ``directory``; opened on first use (or by ``with``), written only by :meth:`put_many` and
    :meth:`put_packed`."""

    def __init__(self, directory: str | os.PathLike[str] = DEFAULT_DIR, *, version: int | None = None) -> None:
        self.directory = Path(directory)
        self.version = model.ANALYSIS_VERSION if version is None else version
        self.notes: list[str] = []
        self._db: sqlite3.Connection | None = None
        self._broken = False
        self._rows: int | None = None  # the table's rows when first looked up in (to choose how to read it)

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
                    db.execute(
                        "CREATE TABLE clips (path TEXT NOT NULL, segment TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, "
                        "version INTEGER NOT NULL, packed BLOB NOT NULL, texts TEXT, PRIMARY KEY (path, segment)) WITHOUT ROWID"
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
        keys = list(keys)
        hits = self.look_up(keys)
        builder = records.ClipRecords.builder(len(hits.positions))
        builder.put_packed(range(len(hits.positions)), [keys[k].path for k in hits.positions], hits.block, hits.overridden)
        return dict(zip((keys[k] for k in hits.positions), builder.build()))

    def look_up(self, keys: Sequence[CacheKey]) -> Hits:
        """The valid cached records of these keys, packed (see :class:`Hits`); a key that is not there, is stale, or whose
        row this version cannot read (it is replaced when re-analysed) is simply absent."""
        positions: list[int] = []
        packs: list[bytes] = []
        overridden: list[dict[str, Any] | None] = []
        self.open()
        if self._db is None or not keys:
            return Hits(positions, records.unpack_many(packs), overridden)
        wanted: dict[tuple[str, str], tuple[int, int, int]] = {}  # (path, segment) -> (position, size, mtime)
        again: dict[tuple[str, str], list[tuple[int, int, int]]] = {}  # the same clip listed again: its other positions
        for k, key in enumerate(keys):
            path, size, mtime_ns, offset, duration = key
            segment = "" if offset is None and duration is None else key.segment
            if path.isascii() or utf8_encodable(path):
                stamp = (k, size, mtime_ns)
                if wanted.setdefault((path, segment), stamp) is not stamp:
                    again.setdefault((path, segment), []).append(stamp)
        record_size = records.SIZE
        try:
            for path, segment, size, mtime_ns, packed, texts in self._read(wanted):
                stamp = wanted.get((path, segment))
                if stamp is None or stamp[1] != size or stamp[2] != mtime_ns or type(packed) is not bytes or len(packed) != record_size:
                    continue
                fields = None
                if texts is not None:
                    try:
                        fields = records.overrides(texts)
                    except (ValueError, RecursionError):
                        continue
                positions.append(stamp[0])
                packs.append(packed)
                overridden.append(fields)
                for other in again.get((path, segment), ()) if again else ():
                    if other[1:] == stamp[1:]:  # stat'ed alike
                        positions.append(other[0])
                        packs.append(packed)
                        overridden.append(fields)
        except sqlite3.Error as exc:
            self._give_up("cannot be read", exc)
            return Hits([], records.unpack_many([]), [])
        block = records.unpack_many(packs)
        ok = records.ascii_fixed(block)  # the string slots hold ASCII, as pack writes them: a row that does not is a miss
        if not ok.all():
            kept = ok.nonzero()[0].tolist()
            return Hits([positions[j] for j in kept], block[ok], [overridden[j] for j in kept])
        return Hits(positions, block, overridden)

    def _read(self, wanted: Mapping[tuple[str, str], object]) -> Iterable[tuple]:
        """The rows of the paths wanted: the whole table in one pass when they are most of it (sqlite hands rows out
        fastest in its own order, and the cursor is iterated as it is, with no generator between), else QUERY_BATCH
        paths a query."""
        assert self._db is not None
        if self._rows is None:
            self._rows = int(self._db.execute("SELECT COUNT(*) FROM clips").fetchone()[0])
        if len(wanted) >= self._rows * SCAN_SHARE:
            return self._db.execute(_SELECT, (self.version,))
        paths = sorted({path for path, _ in wanted})
        db = self._db
        return itertools.chain.from_iterable(
            db.execute(f"{_SELECT} AND path IN ({','.join('?' * len(batch))})", (self.version, *batch))  # noqa: S608
            for batch in _batches(paths, QUERY_BATCH)
        )

    def put_many(self, items: Iterable[tuple[CacheKey, ClipRecord]] | Mapping[CacheKey, ClipRecord]) -> None:
        """Store records under their keys, in one transaction; a failure disables the cache for the run (with a note).
        A record :func:`records.pack` refuses (a value of a type its field cannot have, an ``extra`` JSON cannot hold)
        is not stored."""
        pairs = items.items() if isinstance(items, Mapping) else items
        self.put_packed([(key, *packed) for key, record in pairs if (packed := records.try_pack(record)) is not None])

    def put_packed(self, rows: Iterable[tuple[CacheKey, bytes, str | None]]) -> None:
        """Store packed records (:func:`records.pack`) under their keys, in one transaction; a failure disables the cache
        for the run (with a note). A path sqlite cannot hold (not UTF-8) is not stored."""
        values = [
            (key.path, key.segment, key.size, key.mtime_ns, self.version, packed, texts)
            for key, packed, texts in rows
            if key.path.isascii() or utf8_encodable(key.path)
        ]
        if not values:
            return
        self.open()
        if self._db is None:
            return
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany("INSERT OR REPLACE INTO clips VALUES (?, ?, ?, ?, ?, ?, ?)", values)
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
