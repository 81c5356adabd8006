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
tick of the filesystem is not seen as changed.) A row holding what the
analysis cannot write (bytes of another size, a string slot that is not
ASCII, a number out of its range: :func:`records.in_range`) is a miss too.

What the cache did not write is not the cache's, because a cache folder can
arrive in a checkout (a pull request that commits ``.trainproof_cache/``):

- the default folder is used only when it is a folder, not a symbolic link
  to one (a folder named by --cache-dir is the user's to point anywhere);
- a marker is created with O_EXCL and O_NOFOLLOW: whatever is already under
  its name (a dangling link to ``../.gitignore``, say) is left as it is;
- the database is opened only when DB_NAME is a regular file with one link
  (not a symbolic link, FIFO, device or folder, nor a hard link to a file
  elsewhere) marked with APPLICATION_ID, or a trainproof cache from before
  the mark; another application's database is never written. sqlite's side
  files (``-journal``, ``-wal``, ``-shm``) must likewise be absent or regular
  files with one link, and a journal must not name a super-journal: sqlite
  deletes the file a hot journal names there, wherever it is. Journals stay
  on disk (sqlite's default), so that a run killed mid-write is rolled back
  by the next, and concurrent runs keep sqlite's locking as it is;
  otherwise the run goes on without the cache, with a note, and leaves the
  files as they are.

These checks are against what a checkout or a copy can hold, made once a
run (a few syscalls), not against a process racing the run in the folder.

The cache never fails a run: a database that cannot be opened, is locked by
another run for longer than TIMEOUT_S, or is full or read-only is ignored
from then on, with a note in :attr:`Cache.notes`; a file that is not a
database (corrupt) in the cache's own folder is replaced by an empty one,
with a note. Concurrent runs share it through sqlite's own locking.
"""

from __future__ import annotations

import itertools
import os
import sqlite3
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from trainproof.data import model, records
from trainproof.io.safe import utf8_encodable

DEFAULT_DIR = ".trainproof_cache"
"""The cache directory, relative to the working directory, when none is given."""

DB_NAME = "clips.sqlite3"
"""The database file inside the cache directory."""

SCHEMA = 3
"""The layout of the database; a database of another layout is emptied, not read."""

APPLICATION_ID = 0x54505243
"""sqlite's application id ("TPRC", in the header's bytes 68-71) marking a database as a trainproof cache."""

SIDE_FILES = ("-journal", "-wal", "-shm")
"""What sqlite keeps beside a database (suffixes of its name)."""

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

MARKERS = (("CACHEDIR.TAG", CACHEDIR_TAG), (".gitignore", "# Automatically created by trainproof.\n*\n"))
"""The files a folder of the cache's own gets, with their text."""

_SELECT = "SELECT path, segment, size, mtime_ns, packed, texts FROM clips WHERE version = ?"
_META = "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
_CLIPS = (
    "CREATE TABLE clips (path TEXT NOT NULL, segment TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, "
    "version INTEGER NOT NULL, packed BLOB NOT NULL, texts TEXT, PRIMARY KEY (path, segment)) WITHOUT ROWID"
)
_SQLITE_MAGIC = b"SQLite format 3\x00"
_HEADER_BYTES = 100
_JOURNAL_MAGIC = bytes.fromhex("d9d505f920a163d7")  # a rollback journal's, which also ends its super-journal pointer
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO swapped in after the lstat does not hang the open
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


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


class _NotOurs(Exception):
    """A file under one of the cache's names that the cache did not write: why, to follow its path in a note."""


class Cache:
    """The record cache in ``directory`` (None: DEFAULT_DIR, which must be a folder, not a symbolic link to one); opened
    on first use (or by ``with``), written only by :meth:`put_packed`."""

    def __init__(self, directory: str | os.PathLike[str] | None = None, *, version: int | None = None) -> None:
        self.named = directory is not None
        self.directory = Path(DEFAULT_DIR if directory is None else directory)
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
        """Create the directory and database if needed; a failure, or a file under the cache's names that it did not
        write, only disables the cache (with a note)."""
        if self._db is not None or self._broken:
            return self
        try:
            own = self._prepare_directory()
            if own is not None:
                self._db = self._open_database(own)
        except _NotOurs as exc:
            self._leave(str(exc))
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

    def _prepare_directory(self) -> bool | None:
        """Create the directory; tag it only when it is ours (new, empty, or tagged already): a ``.gitignore`` of ``*``
        dropped into a folder the user pointed at with --cache-dir (their project, say) would hide it from git.
        Whether it is ours; _NotOurs when the default directory is there but is not a folder (a symbolic link to one
        elsewhere, say, committed to the repository)."""
        if self.named:
            fresh = not self.directory.exists()
            self.directory.mkdir(parents=True, exist_ok=True)
        else:
            try:
                os.mkdir(self.directory)
                fresh = True
            except FileExistsError:
                fresh = False
                found = os.lstat(self.directory)
                if not stat.S_ISDIR(found.st_mode):
                    raise _NotOurs(
                        f"{self.directory} is {_kind(found)}, not a folder: the default cache folder is never followed "
                        "elsewhere (--cache-dir names a folder to use)"
                    ) from None
        tag = _lstat(self.directory / "CACHEDIR.TAG")
        if not (fresh or (tag is not None and stat.S_ISREG(tag.st_mode)) or not any(self.directory.iterdir())):
            return False
        for name, text in MARKERS:
            _create(self.directory / name, text, 0o666)
        return True

    def _open_database(self, own: bool) -> sqlite3.Connection | None:
        """The database, when DB_NAME is the cache's (see the module's doc): created if absent, replaced if it is not a
        database at all in a folder of the cache's own; _NotOurs for anything else there, left as it is."""
        path = self.path
        _create(path, "", 0o644)  # a file of the cache's own where there was none: sqlite is never the one to create it
        found, header = _inspect(path)
        _check_side_files(path)
        kind = _kind_of_database(header)
        elsewhere = "" if own else ", in a folder that is not the cache's own"
        if kind == "not a database":
            if not own:
                raise _NotOurs(f"{path} is not a trainproof cache{elsewhere}")
            return self._replace(path, "was not a readable database (no sqlite header)")
        if kind == "unmarked" and not _legacy_on_disk(path):
            raise _NotOurs(f"{path} is not a trainproof cache{elsewhere}")
        try:
            return self._connect_to(found)
        except sqlite3.OperationalError as exc:
            self._give_up("cannot be opened", exc)
            return None
        except sqlite3.DatabaseError as exc:
            if not own and kind != "ours":
                self._give_up("cannot be opened", exc)
                return None
            return self._replace(path, f"was not a readable database ({exc})")

    def _replace(self, path: Path, why: str) -> sqlite3.Connection | None:
        """A new, empty database in place of the file at ``path`` (a regular file of one link in the cache's folder)."""
        try:
            path.unlink()
            _create(path, "", 0o644)
            db = self._connect_to(_inspect(path)[0])
        except (OSError, sqlite3.Error) as again:
            self._give_up("is corrupt and cannot be replaced", again)
            return None
        self.notes.append(f"the cache {path} {why}; it was replaced by an empty one")
        return db

    def _connect_to(self, found: os.stat_result) -> sqlite3.Connection:
        """:meth:`_connect`; _NotOurs (the connection closed) when DB_NAME is no longer the file ``found`` then."""
        db = self._connect()
        if _identity(os.lstat(self.path)) != _identity(found):
            db.close()
            raise _NotOurs(f"{self.path} was replaced while the cache opened it")
        return db

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=TIMEOUT_S, isolation_level=None)
        try:
            db.execute("PRAGMA synchronous=OFF")  # a cache: a torn write after an OS crash is a corrupt file, which is replaced
            if not _current(db):
                db.execute("BEGIN IMMEDIATE")
                try:
                    if not _current(db):  # again, under the lock: another run may have just set it up
                        _take_over(db, self.path)
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
        except BaseException:
            db.close()
            raise
        return db

    def _leave(self, why: str) -> None:
        self.close()
        self._broken = True
        self.notes.append(f"{why}; it was left as it is and the run went on without a cache")

    def _give_up(self, what: str, exc: BaseException) -> None:
        self.close()
        self._broken = True
        self.notes.append(f"the cache {self.path} {what} ({exc}); going on without it")

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
                listed = wanted.get((path, segment))
                if listed is None or listed[1] != size or listed[2] != mtime_ns or type(packed) is not bytes or len(packed) != record_size:
                    continue
                fields = None
                if texts is not None:
                    try:
                        fields = records.overrides(texts)
                    except (ValueError, RecursionError):
                        continue
                    if not records.analysed_overrides(fields):
                        continue
                positions.append(listed[0])
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
        # the string slots hold ASCII, as pack writes them, and the numbers are ones the analysis writes: a row that is not is a miss
        ok = records.ascii_fixed(block) & records.in_range(block)
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

    def holds_under(self, prefix: str) -> bool:
        """Whether any record is stored under a path starting with ``prefix`` (one probe of the path index)."""
        self.open()
        if self._db is None or not prefix:
            return False
        after = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        try:
            return self._db.execute("SELECT 1 FROM clips WHERE path >= ? AND path < ? LIMIT 1", (prefix, after)).fetchone() is not None
        except sqlite3.Error as exc:
            self._give_up("cannot be read", exc)
            return False

    def count(self) -> int:
        """Rows in the cache (for tests and the benchmark)."""
        self.open()
        if self._db is None:
            return 0
        return int(self._db.execute("SELECT COUNT(*) FROM clips").fetchone()[0])


def _current(db: sqlite3.Connection) -> bool:
    """Whether the database is a trainproof cache of this SCHEMA, marked as one."""
    if db.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
        return False
    row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    return row is not None and row[0] == str(SCHEMA)


def _take_over(db: sqlite3.Connection, path: Path) -> None:
    """Under the write lock: set up a database that holds nothing, mark a cache from before APPLICATION_ID, empty one
    of another SCHEMA; _NotOurs for a database with tables of its own (another application's), which is not touched."""
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if tables and db.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID and not _legacy(db):
        raise _NotOurs(f"{path} is not a trainproof cache")
    db.execute(_META.replace("TABLE", "TABLE IF NOT EXISTS", 1))
    row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    if row is None or row[0] != str(SCHEMA) or "clips" not in tables:
        db.execute("DROP TABLE IF EXISTS clips")
        db.execute(_CLIPS)
        db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(SCHEMA),))
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")


def _legacy(db: sqlite3.Connection) -> bool:
    """Whether an unmarked database is a trainproof cache from before APPLICATION_ID: its meta table as trainproof
    creates it, holding a schema row, and no table but meta and clips."""
    tables = dict(db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall())
    if tables.get("meta") != _META or not set(tables) <= {"meta", "clips"}:
        return False
    return db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() is not None


def _legacy_on_disk(path: Path) -> bool:
    """:func:`_legacy`, read without writing to it (not even to roll back a journal found beside it)."""
    try:
        db = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=TIMEOUT_S)
    except (sqlite3.Error, OSError, ValueError):
        return False
    try:
        return _legacy(db)
    except sqlite3.Error:
        return False
    finally:
        db.close()


def _kind_of_database(header: bytes) -> str:
    """What a database file's first bytes say it is: "empty" (no bytes: the cache's own, new), "not a database",
    "ours" (APPLICATION_ID) or "unmarked" (an sqlite database without it)."""
    if not header:
        return "empty"
    if len(header) < _HEADER_BYTES or not header.startswith(_SQLITE_MAGIC):
        return "not a database"
    return "ours" if int.from_bytes(header[68:72], "big", signed=True) == APPLICATION_ID else "unmarked"


def _lstat(path: Path | str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _identity(found: os.stat_result) -> tuple[int, int]:
    return found.st_dev, found.st_ino


def _kind(found: os.stat_result) -> str:
    """What an lstat found, as a note names it: a symbolic link, a folder, a file (of more than one link: also a file
    elsewhere), or a special file as every reader names one (:func:`special_kind`)."""
    mode = found.st_mode
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISREG(mode):
        return "a file" if found.st_nlink <= 1 else f"a file with {found.st_nlink:,} hard links (so also a file elsewhere)"
    from trainproof.io.bounded import special_kind  # here: trainproof.runs.readers imports numpy, which a cache lookup needs not

    return special_kind(mode)


def _own_file(path: Path, found: os.stat_result) -> None:
    """_NotOurs unless ``found`` is a regular file with one link: what sqlite opens there is written in place."""
    if not stat.S_ISREG(found.st_mode) or found.st_nlink > 1:
        raise _NotOurs(f"{path} is {_kind(found)}")


def _create(path: Path, text: str, mode: int) -> None:
    """``path`` holding ``text``, created only when nothing is under its name: O_EXCL with O_NOFOLLOW leaves whatever is
    there as it is (a dangling symbolic link to ``../.gitignore`` is not written through)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, mode)
    except FileExistsError:
        return
    with open(fd, "w", encoding="utf-8") as out:
        out.write(text)


def _inspect(path: Path) -> tuple[os.stat_result, bytes]:
    """The database file's lstat and first bytes, read without following a link; _NotOurs when it is not a regular
    file with one link."""
    found = os.lstat(path)
    _own_file(path, found)
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
    try:
        if _identity(os.fstat(fd)) != _identity(found):
            raise _NotOurs(f"{path} was replaced while the cache opened it")
        return found, os.read(fd, _HEADER_BYTES)
    finally:
        os.close(fd)


def _check_side_files(path: Path) -> None:
    """_NotOurs unless each of sqlite's side files of ``path`` is absent or a regular file with one link, and a journal
    names no super-journal (rolling a hot journal back, sqlite deletes the super-journal it names, wherever it is; the
    cache never attaches a second database, so it never writes one)."""
    for suffix in SIDE_FILES:
        side = Path(f"{path}{suffix}")
        found = _lstat(side)
        if found is None:
            continue
        _own_file(side, found)
        if suffix == "-journal" and found.st_size >= len(_JOURNAL_MAGIC):
            fd = os.open(side, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
            try:
                os.lseek(fd, found.st_size - len(_JOURNAL_MAGIC), os.SEEK_SET)
                if os.read(fd, len(_JOURNAL_MAGIC)) == _JOURNAL_MAGIC:
                    raise _NotOurs(f"{side} is a journal that names a super-journal, which sqlite would delete")
            finally:
                os.close(fd)


def _batches(items: list, size: int) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
