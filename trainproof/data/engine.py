"""The local engine: every clip through :func:`trainproof.data.clip.analyze`, on this machine's cores, through the cache.

:func:`analyze_all` returns one record per reference, in order. The parent
stats each file once: a missing one gets its record at once (no worker round
trip); the others are looked up in the cache by (path, size, mtime, segment,
analysis version), and only the misses are decoded. That lookup, and the
cache writes as records arrive, are :class:`Work`, which the Ray engine
(:mod:`trainproof.data.ray_engine`) shares. A clip named by URI
(:mod:`trainproof.data.uri`) is stat'ed through its filesystem,
URI_STAT_THREADS at a time, and cached under the URI; one the stat decides
(missing, not a file, empty) gets its record from that stat, not from a
second round trip to the store. Misses are decoded in
worker processes, fed in chunks of CHUNK clips with at most IN_FLIGHT chunks
per worker queued at any time, so memory holds the records and a bounded
window of work, whatever the clip count; records come back packed
(:mod:`trainproof.data.records`: the bytes the cache stores), reach the
cache every CACHE_BATCH clips, so an interrupted run keeps what it decoded,
and are handed on as columns (:class:`~trainproof.data.records.ClipRecords`)
with no record object built for a cached or decoded clip.

A clip held inside a shard (:class:`~trainproof.data.model.Blob`) is cached
under the hash of its bytes, which its manifest reader leaves unread (reading
every byte twice, once to hash it here and once to decode it in a worker, was
a third of a cold run). When the cache holds no such clip yet (a first run),
nothing could hit: the worker that decodes a clip hashes the bytes it read
(:class:`Digested`) and the record is cached under that hash. Otherwise, and
always on an engine that cannot send the hash back (Ray), the bytes are hashed
here first and looked up, so a re-run decodes only the clips whose bytes changed.

Start method: ``forkserver`` on Linux, ``spawn`` elsewhere (the platform
default on macOS and Windows), never ``fork``. A forked worker inherits the
parent's whole state: the open sqlite connection of the cache (which sqlite
forbids carrying across a fork), and any threads of a host program (a
training script calling trainproof, a progress thread) whose locks it may
inherit held; CPython 3.12 warns about forking a threaded process and 3.14
made forkserver the Linux default for this reason. With forkserver one clean
server process is started (and, like spawn, imports the main module, so a
script must guard its entry point with ``if __name__ == "__main__"``);
workers are forked from it, so they start in milliseconds and import numpy
and soundfile once each. The cost is paid once per run, so the pool is
started only when the misses are worth it: more than one job and at least
POOL_MIN_BYTES of audio to decode; a smaller batch of misses (a re-run after
adding a few clips) is decoded inline.

Workers ignore SIGINT, so a Ctrl-C reaches the parent alone: it terminates
the workers, keeps the records already cached, and re-raises
KeyboardInterrupt. SIGTERM (a cancelled CI job, a timeout) does the same
while workers run: it raises :class:`Terminated`, a KeyboardInterrupt, so the
process ends through its exit handlers, which release the pool's semaphores
(killed outright, the parent left them to multiprocessing's resource
tracker, which printed a "leaked semaphore" warning to stderr, and its
workers ran on). Workers point their stderr at /dev/null as they start
(:func:`trainproof.data.clip.silence_stderr`): they report through records,
and what a decoder prints there (libmpg123's notes on a bad MP3) is noise.
A worker that dies (a decoder crash, the OOM killer) breaks the pool: the clips that were in flight are then decoded one by one,
each in a fresh single-worker pool, and the clip that kills its worker gets
an ``unreadable`` record instead of failing the run. A pool whose first
worker dies before it is given a clip says nothing about the clips
(workers cannot start here): they are decoded inline, as they are from the
start when a worker could not re-import the main module (``python - <
script``).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from array import array
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import AbstractContextManager, closing, contextmanager, nullcontext
from typing import TYPE_CHECKING, NamedTuple

from trainproof.data.blobs import digest_of, release
from trainproof.data.model import ClipRecord, ClipRef, ClipRefs
from trainproof.data.uri import is_uri
from trainproof.io.collector import collector_paused
from trainproof.io.errors import InputError

if TYPE_CHECKING:
    from trainproof.data.cache import Cache, CacheKey
    from trainproof.data.records import ClipRecords
    from trainproof.io.access import ReadPolicy

Analyze = Callable[[ClipRef], ClipRecord]
Progress = Callable[[int, int], None]
Packed = tuple[bytes, "str | None"]
"""A record as :func:`trainproof.data.records.pack` packs it: its bytes and texts."""
_ROOT = os.sep

CHUNK = 16
"""Clips per task sent to a worker (fewer when there are few clips per worker)."""

IN_FLIGHT = 4
"""Tasks queued per worker at any time: enough to keep it busy, few enough to bound memory."""

LOOKUP_BATCH = 32768
"""Clips stat'ed and looked up in the cache at a time (bounds the keys held at once; a corpus up to this size, most of
its cache, is read from the cache in one pass)."""

URI_STAT_THREADS = 32
"""Clips named by URI stat'ed at once (threads: each stat is a request to the object store, which waits, not computes)."""

CACHE_BATCH = 2048
"""Records written to the cache per transaction."""

POOL_MIN_BYTES = 64 * 1024 * 1024
"""Bytes of audio to decode below which worker processes are not worth starting (starting them costs about 0.3 s;
this is about 0.2 s of one core's work on 16-bit WAV, more on compressed formats)."""

CRASHED = "decoding it crashed the worker process"
"""The error of a clip whose worker died decoding it, alone (every engine's words, see :func:`crashed`)."""

START_METHOD = "forkserver" if sys.platform.startswith("linux") else "spawn"
"""How worker processes start (see the module doc for why never fork)."""


def default_jobs() -> int:
    """All the cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def analyze_all(
    refs: Sequence[ClipRef],
    jobs: int | None = None,
    cache: Cache | None = None,
    progress: Progress | None = None,
    *,
    analyze: Analyze | None = None,
    policy: ReadPolicy | None = None,
) -> ClipRecords:
    """One record per reference, in the same order (as columns, :class:`~trainproof.data.records.ClipRecords`): cached
    where valid, decoded otherwise.

    ``jobs``: worker processes (None: every core; 1: all inline, no pool).
    ``cache``: a :class:`~trainproof.data.cache.Cache` (opened here if it is
    not yet, and left open), or None to neither read nor write one.
    ``progress(done, total)``: called as clips complete (after each chunk).
    ``analyze``: the per-clip function, a picklable top-level function
    (default :func:`trainproof.data.clip.analyze`).
    ``policy``: what the dataset may read (:func:`trainproof.data.manifest.read_policy`): a clip it refuses (a link
    out of the dataset) is never opened, and its record says why.
    """
    jobs = default_jobs() if jobs is None else max(1, int(jobs))
    work = Work(refs, cache, analyze, policy, hash_first=False)
    todo, done, total = work.todo, work.found, len(refs)
    if progress is not None and total:
        progress(done, total)
    try:
        stopping: AbstractContextManager = nullcontext()
        if jobs == 1 or len(todo) <= 1 or work.todo_bytes < POOL_MIN_BYTES or not _workers_can_start():
            results: Generator[tuple[int, ClipRecord | Packed | Digested], None, None] = ((i, _analyzed(refs[i], analyze)) for i in todo)
            step = CHUNK
        else:
            chunk = max(1, min(CHUNK, len(todo) // (jobs * IN_FLIGHT) or 1))
            results = _pooled(refs, todo, jobs, chunk, analyze)
            step = chunk
            stopping = _terminate_as_interrupt()
        with stopping, closing(results):  # stopping early (Ctrl-C, SIGTERM) closes the generator, which stops the workers
            try:
                for n, (i, record) in enumerate(results, 1):
                    work.store(i, record)
                    if progress is not None and (n % step == 0 or n == len(todo)):
                        progress(done + n, total)
            except _NoWorkers:  # not one worker could start: the rest is decoded here
                stored = work.stored()
                rest = [i for i in todo if i not in stored]
                for n, i in enumerate(rest, len(todo) - len(rest) + 1):
                    work.store(i, _analyzed(refs[i], analyze))
                    if progress is not None and (n % CHUNK == 0 or n == len(todo)):
                        progress(done + n, total)
    finally:
        work.flush()
        release()
    return work.result()


class Work:
    """One run's records as they are filled in, shared by every engine: what the cache already holds, then the rest.

    On construction, every file is stat'ed once (LOOKUP_BATCH at a time) and
    looked up in the cache: a hit stays packed as the cache holds it (with
    the caller's path string), a file that cannot be stat'ed (missing) is
    its record at once (``analyze`` says so without decoding; for a URI, the
    stat itself), and the rest are :attr:`todo`, in order, with
    :attr:`todo_bytes` of audio. A clip held inside a shard whose digest is
    not known yet is hashed here first when ``hash_first`` or when the cache
    holds clips of shards (see the module doc), else left for the engine to
    hash (its record then comes to :meth:`store` :class:`Digested`). An engine
    decodes the todo clips however it likes and hands each record to :meth:`store`, which writes them to the
    cache CACHE_BATCH at a time; :meth:`flush` writes the remainder (call it
    in a ``finally``, so an interrupted run keeps what it decoded), and
    :meth:`result` gives every record, as columns.
    """

    def __init__(
        self,
        refs: Sequence[ClipRef],
        cache: Cache | None = None,
        analyze: Analyze | None = None,
        policy: ReadPolicy | None = None,
        *,
        hash_first: bool = True,
    ) -> None:
        import numpy as np

        from trainproof.data.records import ClipRecords

        self.refs = refs
        self.cache = cache
        self.todo: array[int] = array("q")  # 8 bytes a clip: a list of a million ints was 36 MB
        self.todo_bytes = 0
        self._records: dict[int, ClipRecord] = {}  # records known as objects: missing files, and any that will not pack
        # every clip's record, as columns: the clips found in the cache put in as each lookup batch finds them (a
        # batch's packed rows are not kept beside the columns they go into)
        self._columns = ClipRecords.builder(len(refs))
        # the clips decoded this run not yet in the columns, as their records arrived, and their packed records end to
        # end (put into the columns LOOKUP_BATCH at a time); and every clip decoded this run
        self._rows: list[int] = []
        self._packed = bytearray()
        self._texts: list[str | None] = []
        self._decoded = np.zeros(len(refs), dtype=bool)
        # the cache keys of the clips still to decode (with a cache): a file's size and mtime at its row, -1 for none
        # (its path and segment are its reference's), and any other key (a shard's clip, a relative path) as it is
        self._key_sizes = np.full(len(refs), -1, dtype=np.int64) if cache is not None else None
        self._key_mtimes = np.zeros(len(refs), dtype=np.int64) if cache is not None else None
        self._other_keys: dict[int, CacheKey] = {}
        self._unhashed: set[int] = set()  # clips of shards to decode whose key waits for their digest (with a cache)
        self._pending: list[tuple[CacheKey, bytes, str | None]] = []
        hash_now = cache is not None and (hash_first or cache.holds_under(BLOB_KEY))
        with collector_paused():
            try:
                self._look_up(refs, cache, analyze, policy, hash_now)
            finally:
                release()
        self.found = len(refs) - len(self.todo)
        """How many records were known without decoding (cached, or missing files)."""

    def _look_up(self, refs: Sequence[ClipRef], cache: Cache | None, analyze: Analyze | None, policy: ReadPolicy | None, hash_now: bool) -> None:
        from trainproof.data.cache import CacheKey

        total = len(refs)
        cwd = os.getcwd()
        refused: list[Refused] = []
        for start in range(0, total, LOOKUP_BATCH):
            indices: list[int] = []
            keys: list[CacheKey] = []
            batch = range(start, min(start + LOOKUP_BATCH, total))
            for i, key in zip(batch, _keys(refs[batch.start : batch.stop], cwd, policy, hash_now)):
                if type(key) is CacheKey:
                    indices.append(i)
                    keys.append(key)
                elif type(key) is Unhashed:  # nothing it could hit: decoded, and keyed by the digest its worker reads
                    self.todo.append(i)
                    self.todo_bytes += key.size
                    if cache is not None:
                        self._unhashed.add(i)
                elif type(key) is Refused:
                    refused.append(key)
                elif isinstance(key, ClipRecord) and analyze is None:  # a URI its stat decided
                    self._records[i] = key
                else:  # missing (or not statable): a worker would say the same, at once
                    self._records[i] = _inline(refs[i], analyze)
            hits = cache.look_up(keys) if cache is not None and keys else None
            found = bytearray(len(keys))
            if hits is not None and hits.positions:
                for k in hits.positions:
                    found[k] = 1
                rows = [indices[k] for k in hits.positions]
                self._columns.put_packed(rows, self._paths_of(rows), hits.block, hits.overridden)
            for k, i in enumerate(indices):
                if found[k]:
                    continue
                self.todo.append(i)
                blob = refs[i].blob
                self.todo_bytes += keys[k].size if blob is None else blob.size
                if cache is not None:
                    self._keep_key(i, keys[k])
        if refused:  # the dataset cannot be judged as its files stand without reading where the links lead: the user's call
            more = f"; so do {len(refused) - 1:,} more listed clips" if len(refused) > 1 else ""
            raise InputError(refused[0].audio, f"{refused[0].refusal}{more}")

    def store(self, i: int, record: ClipRecord | Packed | Digested) -> None:
        """The record of clip ``i`` (one of :attr:`todo`), a :class:`ClipRecord` or packed as a worker sends it
        (:func:`trainproof.data.records.pack`), or either :class:`Digested`, cached with the next batch."""
        from trainproof.data.records import try_pack

        key = self._take_key(i)
        if isinstance(record, Digested):
            if record.digest and i in self._unhashed:
                key = _blob_key(record.digest, self.refs[i])
            record = record.record
        self._unhashed.discard(i)
        if isinstance(record, ClipRecord):
            packed_record = try_pack(record)
            if packed_record is None:  # a record pack refuses: kept as it is, not cached
                self._records[i] = record
                return
            record = packed_record
        packed, texts = record
        self._rows.append(i)
        self._packed += packed
        self._texts.append(texts)
        self._decoded[i] = True
        if len(self._rows) >= LOOKUP_BATCH:
            self._settle()
        if key is not None and not (is_uri(key.path) and _unreadable(key.path, packed, texts)):  # a store's refusal may pass
            self._pending.append((key, packed, texts))
            if len(self._pending) >= CACHE_BATCH:
                self.flush()

    def _keep_key(self, i: int, key: CacheKey) -> None:
        ref = self.refs[i]
        plain = key.path == ref.audio and key.offset is ref.offset and key.duration is ref.duration
        if plain and type(key.size) is int and type(key.mtime_ns) is int and 0 <= key.size < 2**63 and -(2**63) <= key.mtime_ns < 2**63:
            self._key_sizes[i] = key.size  # type: ignore[index]
            self._key_mtimes[i] = key.mtime_ns  # type: ignore[index]
        else:
            self._other_keys[i] = key

    def _take_key(self, i: int) -> CacheKey | None:
        """Clip ``i``'s cache key, once (None without a cache, or for a clip that had none)."""
        from trainproof.data.cache import CacheKey

        key = self._other_keys.pop(i, None)
        if key is not None or self._key_sizes is None or self._key_sizes[i] < 0:
            return key
        ref = self.refs[i]
        size, self._key_sizes[i] = int(self._key_sizes[i]), -1
        return CacheKey(ref.audio, size, int(self._key_mtimes[i]), ref.offset, ref.duration)  # type: ignore[index]

    def stored(self) -> set[int]:
        """The clips of :attr:`todo` whose records are stored (and the missing files')."""
        return {*self._records, *self._decoded.nonzero()[0].tolist()}

    def _paths_of(self, rows: list[int]) -> list[str] | None:
        """The paths of the clips at ``rows``, for their records; None when the references give them all at the end
        (:class:`~trainproof.data.model.ClipRefs`)."""
        return None if isinstance(self.refs, ClipRefs) else [self.refs[i].audio for i in rows]

    def _settle(self) -> None:
        """The records decoded since the last call, put into the columns (their packed bytes let go)."""
        from trainproof.data.records import overrides, unpack_block

        if not self._rows:
            return
        with collector_paused():
            fresh = [None if texts is None else overrides(texts) for texts in self._texts]
            self._columns.put_packed(self._rows, self._paths_of(self._rows), unpack_block(self._packed), fresh)
        self._rows, self._packed, self._texts = [], bytearray(), []

    def flush(self) -> None:
        """Write the records stored since the last write to the cache."""
        if self.cache is not None and self._pending:
            self.cache.put_packed(self._pending)
            self._pending.clear()

    def result(self) -> ClipRecords:
        """Every clip's record, in order: the cached ones unpacked at once, a column per field."""
        self._settle()
        with collector_paused():
            self._columns.put(list(self._records), list(self._records.values()))
            records = self._columns.build()
            return records.with_paths(self.refs.paths) if isinstance(self.refs, ClipRefs) else records


class _NoWorkers(Exception):
    """A worker died before it was given a clip: workers cannot start here, and no clip is to blame."""


def _ready() -> bool:
    return True


def _check_start(executor, workers: int) -> None:
    """Raise _NoWorkers when a worker dies on a task that touches no clip (workers cannot start). One such task per
    worker: the pool starts a process per task it cannot hand to an idle one, so every worker starts (and imports
    what it needs) at once, side by side, rather than the second only after the first has answered."""
    from concurrent.futures.process import BrokenProcessPool

    try:
        with _starting():
            futures = [executor.submit(_ready) for _ in range(workers)]
        for future in futures:
            future.result()
    except BrokenProcessPool:
        executor.shutdown(wait=True)
        raise _NoWorkers from None


def _workers_can_start() -> bool:
    """False when a worker could not import the main module: it runs from a path that does not exist (``python - <
    script``, where it is ``<stdin>``), which every forkserver or spawn worker tries to run first, and dies on."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    return path is None or os.path.exists(path)


def _unreadable(audio: str, packed: bytes, texts: str | None) -> bool:
    """Whether a packed record says its clip could not be read (for a clip of an object store, which may have been
    unreachable for a moment: such a record is not cached, so the next run asks the store again)."""
    from trainproof.data.records import unpack

    return unpack(audio, packed, texts).error_kind == "unreadable"


class Refused(NamedTuple):
    """A listed clip the read policy refuses (a link out of the dataset), and why."""

    audio: str
    refusal: str


class Unhashed(NamedTuple):
    """The key of a clip held inside a shard whose bytes are not hashed yet: their length, as its manifest knows it."""

    size: int


class Digested(NamedTuple):
    """A record and the digest of the bytes it was decoded from (of a clip held inside a shard): its cache key."""

    record: ClipRecord | Packed
    digest: str


def _blob_key(digest: str, ref: ClipRef) -> CacheKey:
    """The cache key of a clip held inside a shard: its bytes' digest (and the segment), wherever the shard is."""
    from trainproof.data.cache import CacheKey

    return CacheKey(f"{BLOB_KEY}{digest}", 0, 0, ref.offset, ref.duration)


def _keys(
    refs: Sequence[ClipRef], cwd: str, policy: ReadPolicy | None = None, hash_now: bool = True
) -> list[CacheKey | ClipRecord | Refused | Unhashed | None]:
    """Each file's cache key: its path made absolute against ``cwd`` (not resolved), size and mtime from one stat, and
    the segment; None when it cannot be stat'ed (missing). For a file the ``policy`` refuses, a :class:`Refused` (the
    stat is an lstat; a link, or a clip in a folder the policy refuses, is asked about: see :func:`_folder_refusal`).
    For a clip named by URI whose stat already decides it (missing, not a file, empty), its record. URIs are stat'ed
    URI_STAT_THREADS at a time (each is a round trip to the store), under the URI itself as the key's path; a clip
    decided so is not stat'ed again, one after another, to say so. (One loop of plain calls: at 20,000 clips this was
    a fifth of a warm run.) A clip held inside a shard is keyed by its bytes' digest: read and hashed here when its
    manifest left it unread and ``hash_now`` (None when they cannot be read), else :class:`Unhashed`."""
    from trainproof.data.cache import CacheKey

    make, stat, isabs, join = CacheKey._make, os.stat, os.path.isabs, os.path.join
    judged = policy is not None and not policy.follow_links
    look, sep = (os.lstat if judged else stat), os.sep
    folders: dict[str, str] = {}  # a folder (as the paths spell it) -> the policy's refusal of it, "" for none
    keys: list[CacheKey | ClipRecord | Refused | Unhashed | None] = []
    remote: list[int] = []
    for i, ref in enumerate(refs):
        audio = ref.audio
        if ref.blob is not None:  # held inside a shard: known by its bytes (see trainproof.data.model.Blob)
            digest = ref.blob.digest or (digest_of(ref.blob) if hash_now else "")
            if digest:
                keys.append(make((f"{BLOB_KEY}{digest}", 0, 0, ref.offset, ref.duration)))
            else:
                keys.append(Unhashed(ref.blob.size) if not hash_now else None)
            continue
        if "://" in audio and is_uri(audio):
            remote.append(i)  # below
            keys.append(None)
            continue
        try:
            info = look(audio)
            if judged:  # inline, not a call: the common clip costs a split and a lookup (3-4 ms of 20,000)
                verdict = folders.get(audio.rpartition(sep)[0])
                if verdict is None:
                    verdict = _folder_refusal(audio, policy, folders)  # type: ignore[arg-type]
                if verdict or info.st_mode & _FORMAT == _LINK:  # a link, or a file in a folder refused: where it leads
                    refusal = policy.refusal(audio)  # type: ignore[union-attr]
                    if refusal is not None:
                        keys.append(Refused(audio, refusal))
                        continue
                    info = stat(audio)
        except (OSError, ValueError):
            keys.append(None)
            continue
        path = audio if audio.startswith(_ROOT) or isabs(audio) else join(cwd, audio)
        keys.append(make((path, info.st_size, info.st_mtime_ns, ref.offset, ref.duration)))
    if remote:
        from concurrent.futures import ThreadPoolExecutor

        from trainproof.data.clip import stat_uri

        with ThreadPoolExecutor(min(URI_STAT_THREADS, len(remote))) as pool:
            for i, stated in zip(remote, pool.map(stat_uri, [refs[i] for i in remote])):
                ref = refs[i]
                keys[i] = stated if isinstance(stated, ClipRecord) else CacheKey(ref.audio, stated.size, stated.mtime_ns, ref.offset, ref.duration)
    return keys


BLOB_KEY = "xxh3-128:"
"""What the cache's path of a clip held inside a shard starts with, before its bytes' digest."""

_FORMAT, _LINK = 0o170000, 0o120000
"""The file-type bits of ``st_mode`` and a symlink's (stat.S_IFMT and S_IFLNK: compared inline, a call less a clip)."""


def _folder_refusal(audio: str, policy: ReadPolicy, folders: dict[str, str]) -> str:
    """The policy's refusal of the folder of the clip at ``audio`` ("" for none), kept in ``folders`` under the folder
    as the path spells it. A file in a folder the policy lets be read, and not a link itself, may be read: only a link,
    or a file in a folder refused, is asked about itself (where it leads)."""
    head, slash, _ = audio.rpartition(os.sep)
    verdict = policy.refusal(head or slash or os.curdir) or ""  # "/a.wav" is in "/", "a.wav" in "."
    if head:
        folders[head] = verdict
    elif (policy.refusal(os.curdir) or "") == (policy.refusal(os.sep) or ""):  # "" stands for both: kept when they agree
        folders[head] = verdict
    return verdict


def crashed(ref: ClipRef) -> ClipRecord:
    """The record of a clip whose worker died decoding it, alone."""
    return ClipRecord(audio=ref.audio, error=CRASHED, error_kind="unreadable")


def _inline(ref: ClipRef, analyze: Analyze | None) -> ClipRecord:
    """The record of one clip; an exception of the per-clip function (a bug) is that clip's ``unreadable`` record, not a failed run."""
    if analyze is None:
        from trainproof.data.clip import analyze
    try:
        return analyze(ref)  # type: ignore[misc]
    except Exception as exc:  # noqa: BLE001
        return ClipRecord(audio=ref.audio, error=f"the analysis failed ({type(exc).__name__}: {exc})", error_kind="unreadable")


class Terminated(KeyboardInterrupt):
    """SIGTERM while worker processes run: the run stops as it does on Ctrl-C (see the module doc)."""


_sigterm = {"held": 0, "pending": False}  # inside _starting: how deep, and whether a SIGTERM came meanwhile


def _raise_terminated(signum: int, frame: object) -> None:
    if _sigterm["held"]:
        _sigterm["pending"] = True
        return
    raise Terminated


@contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` inside (see the module doc); its handler is put back after. Only in the main
    thread (where Python runs signal handlers) and only when SIGTERM has its default action: a host program's own
    handler is left alone."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _sigterm["pending"] = False


@contextmanager
def _starting() -> Iterator[None]:
    """A SIGTERM that comes inside waits for its end: submitting a task may start a worker, and one interrupted midway
    is started but not yet in the pool's list of processes, so nothing would terminate it; it would outlive the run and
    print a traceback when it found the pool's semaphores gone. The SIGTERM then wins over whatever the start raised
    (a SIGTERM sent to the process group killed the fork server too: EOFError)."""
    _sigterm["held"] += 1
    try:
        yield
    finally:
        _sigterm["held"] -= 1
        if not _sigterm["held"] and _sigterm["pending"]:
            _sigterm["pending"] = False
            raise Terminated  # noqa: B012 -- meant: it replaces the start's own error


def _worker_init(analyze: Analyze | None = None) -> None:
    """Workers leave Ctrl-C to the parent, which terminates them (no traceback from every worker), write nothing to
    stderr (:func:`trainproof.data.clip.silence_stderr`), and import the default analysis's libraries as they start
    (:func:`trainproof.data.clip.prepare`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from trainproof.data.clip import prepare, silence_stderr

    silence_stderr()
    if analyze is None:
        prepare()


def _analyze_chunk(refs: list[ClipRef], analyze: Analyze | None) -> list[ClipRecord | Packed | Digested]:
    """A worker's task: a chunk of clips, in order (top-level, so any start method can pickle it). Each record goes
    back packed (:func:`trainproof.data.records.pack`, without its path, which the parent has): a third of the bytes of
    a pickled dataclass, and the parent stores it as it is, with no object to build; one that will not pack goes back
    as it is."""
    out: list[ClipRecord | Packed | Digested] = []
    for ref in refs:
        out.append(_analyzed(ref, analyze, pack=True))
    return out


def _analyzed(ref: ClipRef, analyze: Analyze | None, pack: bool = False) -> ClipRecord | Packed | Digested:
    """The record of one clip (packed, when ``pack`` and it will), :class:`Digested` when it is held inside a shard whose
    bytes its manifest did not hash (hashed now, from the batch its decoding has just read)."""
    from trainproof.data.records import try_pack

    record = _inline(ref, analyze)
    out = (try_pack(record) or record) if pack else record
    if ref.blob is not None and not ref.blob.digest:
        return Digested(out, digest_of(ref.blob))
    return out


def _executor(workers: int, analyze: Analyze | None):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context(START_METHOD)
    return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_worker_init, initargs=(analyze,))


def _stop(executor) -> None:
    """Terminate the workers now (Ctrl-C, or the caller stopped early): cancel what is queued, kill what runs, and let
    the pool's manager thread end here. Left running, it closes its wake-up pipe while the interpreter's exit hook
    writes to it (a race CPython 3.11 does not lock), and the exit prints an "Exception ignored ... Bad file
    descriptor" traceback after a clean Ctrl-C."""
    processes = list((getattr(executor, "_processes", None) or {}).values())
    manager = getattr(executor, "_executor_manager_thread", None)
    executor.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=5)
    if manager is not None:
        manager.join(timeout=5)


def _pooled(refs: Sequence[ClipRef], todo: Sequence[int], jobs: int, chunk: int, analyze: Analyze | None) -> Generator[tuple[int, ClipRecord | Packed | Digested], None, None]:
    """(index, record) for every index in ``todo``, as workers finish them, with at most IN_FLIGHT chunks per worker queued."""
    from concurrent.futures import FIRST_COMPLETED, wait
    from concurrent.futures.process import BrokenProcessPool

    tasks = _tasks(refs, todo, chunk, jobs)
    workers = min(jobs, len(tasks))
    window = workers * IN_FLIGHT
    position = 0
    while position < len(tasks):
        executor = _executor(workers, analyze)
        running: dict = {}
        broken: list[int] = []
        try:
            if position == 0:
                _check_start(executor, workers)
            while True:
                while position < len(tasks) and len(running) < window and not broken:
                    indices = tasks[position]
                    position += 1
                    try:
                        with _starting():
                            running[executor.submit(_analyze_chunk, [refs[i] for i in indices], analyze)] = indices
                    except BrokenProcessPool:
                        broken.extend(indices)
                if not running:
                    break
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    indices = running.pop(future)
                    try:
                        records = future.result()
                    except BrokenProcessPool:
                        broken.extend(indices)
                        continue
                    yield from zip(indices, records)
        except BaseException:
            _stop(executor)
            raise
        executor.shutdown(wait=True)
        if broken:
            yield from _isolate(refs, sorted(broken), analyze)


GROUP_TASK_MAX = 1024
"""The most clips of one row group (or record batch) of a shard in one task; a larger group is split in one part per
job, so no worker reads past more than one group's rows to reach its own."""


def _tasks(refs: Sequence[ClipRef], todo: Sequence[int], chunk: int, jobs: int) -> list[array[int]]:
    """``todo`` cut into the workers' tasks: ``chunk`` clips of files each; the clips of one row group or batch of a
    shard together, in order (:func:`trainproof.data.blobs.group_key`), so each is read once."""
    from trainproof.data.blobs import group_key

    tasks: list[array[int]] = []  # arrays, not lists: no int object a clip
    run: array[int] = array("q")
    run_key: object = None
    for i in todo:
        key = group_key(refs[i].blob)
        if run and (key != run_key or (key is None and len(run) >= chunk)):
            tasks.extend(_split(run, run_key, jobs))
            run = array("q")
        run.append(i)
        run_key = key
    if run:
        tasks.extend(_split(run, run_key, jobs))
    return tasks


def _split(run: array[int], key: object, jobs: int) -> list[array[int]]:
    if key is None or len(run) <= GROUP_TASK_MAX:
        return [run]
    size = -(-len(run) // jobs)
    return [run[k : k + size] for k in range(0, len(run), size)]


def _isolate(refs: Sequence[ClipRef], suspects: list[int], analyze: Analyze | None) -> Iterator[tuple[int, ClipRecord | Packed | Digested]]:
    """The clips that were in flight when a worker died, one at a time in one worker: the one it dies on is unreadable."""
    from concurrent.futures.process import BrokenProcessPool

    executor = None
    try:
        for i in suspects:
            if executor is None:
                executor = _executor(1, analyze)
            try:
                with _starting():
                    future = executor.submit(_analyze_chunk, [refs[i]], analyze)
                record = future.result()[0]
            except BrokenProcessPool:
                executor.shutdown(wait=True)
                executor = None
                record = crashed(refs[i])
            yield i, record
    except BaseException:
        if executor is not None:
            _stop(executor)
            executor = None
        raise
    finally:
        if executor is not None:
            executor.shutdown(wait=True)
