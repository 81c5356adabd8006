"""The Ray engine (``trainproof data --engine ray``): the per-clip analysis as Ray Data tasks, on a cluster's cores.

The local engine (:mod:`trainproof.data.engine`) decodes on one machine's
cores; this one decodes on every core of a Ray cluster, for corpora whose
decoding outgrows one machine. Only the decoding moves: reading the
manifest, the cache, the data rules and the report stay on the driver (the
machine running ``trainproof``), exactly as on the local engine, so both
engines give the same report, byte for byte.

How a run goes (:func:`analyze_all`):

1. The driver stats every clip and looks it up in the cache with the local
   engine's own code (:class:`trainproof.data.engine.Work`): a hit or a
   missing file is its record at once, and only the misses go to Ray.
2. The misses' references (index, path, offset, duration: 28 bytes and the
   path's, never audio) become a Ray Dataset of pyarrow blocks of at most
   TASK_CLIPS clips, and at least TASKS_PER_CPU blocks per CPU of the
   cluster when there are enough clips, so every core has work until the
   end. ``map_batches`` runs one task per block: it decodes each clip where
   the task runs (from a shared filesystem or an object store, see
   :mod:`trainproof.data.uri`) through :func:`trainproof.data.clip.analyze`
   (or the ``analyze`` hook) and returns the records as one pyarrow table
   of each clip's index and its record packed as the cache holds it
   (:func:`trainproof.data.records.pack`; about 220 bytes a clip).
3. The driver iterates the result blocks as they complete
   (``iter_batches``), puts each record back at its index (so the records
   are in manifest order whatever order the tasks finish in) and writes them
   to the cache CACHE_BATCH at a time, so an interrupted run keeps what it
   decoded.

Failures: the per-clip function's own exception is that clip's
``unreadable`` record (as on the local engine). A task whose worker dies (a
decoder crash, the OOM killer, a lost node) is retried by Ray up to
MAX_RETRIES times; a block that still fails is dropped by Ray Data
(``max_errored_blocks``) instead of failing the run, and its clips are run
again one clip per task, so the clip that kills its worker every time gets
the local engine's ``unreadable`` record ("decoding it crashed the worker
process") and the others their own records.

The cluster (:func:`connect`): no address (nor RAY_ADDRESS) starts a new
local one with ``jobs`` CPUs (every core when None) that lives until the
dataset's clips are decoded (:func:`_leave`: a cluster this process joined
for the run is left before the rules run, a connection of the caller's own
is kept), even beside one that ``ray start`` runs here, unless the
misses hold less audio than the local engine starts worker processes for
(POOL_MIN_BYTES: a re-run's few new clips), which are then decoded in
this process as the local engine would (starting a local cluster took
longer than judging a million cached clips); ``auto``
or ``host:port`` joins a running cluster from one of its nodes, and
``ray://host:port`` through the Ray Client. An address is first probed
with a plain TCP connection (CONNECT_TIMEOUT_S), because Ray itself waits
minutes on an unreachable one; a refusal is a :class:`ClusterError` (one
line, exit 2). A process that has already called ``ray.init`` is used as it
is. Ray's core prints its connection retries beneath Python (a line a
second for up to a minute): they are kept off the console, and a refused
authentication token is named in the error. Ray Data's executor cannot run
through the Ray Client, so over ``ray://`` a task on the cluster runs the
Dataset for CLIENT_CHUNK clips at a time and returns their records (progress
and cache writes then come a chunk at a time). Once connected, one probe
task checks that the workers import
trainproof and compute the same ANALYSIS_VERSION (a worker with another
trainproof would fill the cache with records of another analysis).

Console: Ray's start-up and Ray Data's execution logs stay in the session's
log files (``/tmp/ray/session_*/logs``), not on the console; Ray Data's
progress bars show only where trainproof's own progress line would (a
terminal, not CI, not ``--json``), and only when stdout is a terminal too
(Ray Data's own rule: with stdout redirected it logs progress instead, to
its log file).

This is the only module that imports ray, and it is imported only for
``--engine ray``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import json
import logging
import math
import os
import pickle
import socket
import sys
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from trainproof.data import model
from trainproof.data.engine import POOL_MIN_BYTES, Analyze, Work, _analyzed, _inline, crashed
from trainproof.data.model import Blob, ClipRef
from trainproof.io.errors import ClusterError, MissingDependencyError

if TYPE_CHECKING:
    from trainproof.data.cache import Cache
    from trainproof.data.records import ClipRecords
    from trainproof.io.access import ReadPolicy

TASK_CLIPS = 1024
"""Most clips per Ray task: enough that a task's own cost to Ray Data (milliseconds) is small next to its decoding
(0.15 s for 1,024 clips of 4 s at 22,050 Hz in WAV, 12 s for 15 s FLAC clips at 48 kHz), few enough to balance."""

TASKS_PER_CPU = 4
"""Tasks per cluster CPU when there are enough clips: a slow task at the end delays the run by a quarter of a CPU's share."""

MAX_RETRIES = 3
"""Times Ray re-runs a task whose worker died, before its block is dropped and its clips are run one by one."""

DATASET_CLIPS = 100_000
"""Clips per Dataset the driver runs, one after another: the references of a million clips put into the object store at
once were 68 MB of the driver's memory (its pages of the store), beside the table they were made from and Ray Data's
bookkeeping of every block."""

CLIENT_CHUNK = 50_000
"""Clips per round trip through the Ray Client (about 10 MB of records back): the unit of progress and cache writes there."""

CONNECT_TIMEOUT_S = 5.0
"""Seconds to wait for a TCP connection to a cluster's address before it is unreachable."""

RAY_CLIENT_PORT = 10001
RAY_GCS_PORT = 6379
"""The ports a ``ray://`` address and a bare ``host`` address mean when they name none (Ray's defaults)."""

_checked = False  # the probe task ran on this connection


def _ray() -> Any:
    """ray and ray.data, imported; a missing one is exit 2 naming the extra."""
    try:
        import ray
    except ImportError:
        raise MissingDependencyError("ray", "ray", "trainproof data --engine ray") from None
    try:
        import ray.data  # noqa: F401
    except ImportError:  # ray without its data extra (pyarrow, pandas)
        raise MissingDependencyError("ray[data]", "ray", "trainproof data --engine ray") from None
    return ray


def check(address: str | None = None) -> None:
    """Before any work: ray is installed, and an address given is reachable (MissingDependencyError, ClusterError).
    Ray is not imported here (85 MiB of the driver, for a run that may not need a cluster: see :func:`analyze_all`)."""
    import importlib.util

    try:
        found = importlib.util.find_spec("ray")
    except (ImportError, ValueError):
        found = None
    if found is None:
        raise MissingDependencyError("ray", "ray", "trainproof data --engine ray")
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address and address != "auto" and not _connected():
        _probe_address(address)


def _connected() -> bool:
    """Whether this process has called ``ray.init`` (it cannot have, without having imported ray)."""
    ray = sys.modules.get("ray")
    return ray is not None and bool(ray.is_initialized())


def connect(address: str | None = None, jobs: int | None = None) -> None:
    """Join the cluster at ``address`` (``auto``, ``host:port``, ``ray://host:port``), or start a local one of ``jobs``
    CPUs when there is none; nothing when this process is connected already. ClusterError when it cannot be reached."""
    global _checked
    ray = _ray()
    _quiet()
    if not ray.is_initialized():
        address = address or os.environ.get("RAY_ADDRESS") or None
        options: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR, "configure_logging": False}
        if address is None:  # "local": a new cluster, even where `ray start` runs one (which ray.init() would join)
            options.update(include_dashboard=False, num_cpus=jobs)
        elif address != "auto":
            _probe_address(address)
        with tempfile.TemporaryFile("w+b") as said, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the Ray Client's own timeout warning: the error below says it
            try:
                with _stderr_to(said) if address else contextlib.nullcontext():
                    ray.init(address=address or "local", **options)
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # noqa: BLE001 -- ConnectionError, RuntimeError, and SystemExit from Ray's own start-up
                where = f"the Ray cluster at {address}" if address else "a local Ray cluster"
                detail = str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
                said.seek(0)
                if b"InvalidAuthToken" in said.read():
                    detail += " (the cluster refused this process's authentication token: set RAY_AUTH_MODE=token and the cluster's token, as for any Ray driver)"
                raise ClusterError(f"cannot connect to {where}: {detail}") from None
        _checked = False
    if not _checked:
        _check_workers(ray)
        _checked = True


@contextlib.contextmanager
def _stderr_to(file: Any) -> Iterator[None]:
    """File descriptor 2 into ``file`` for a while: Ray's core writes its connection retries there (a line a second,
    for up to a minute), beneath Python's sys.stderr."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no descriptor 2 to move
        yield
        return
    os.dup2(file.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _probe_address(address: str) -> None:
    """A TCP connection to the address's host and port, or ClusterError now (Ray would retry for minutes)."""
    client = address.startswith("ray://")
    rest = address[len("ray://") :] if client else address
    host, _, port = rest.rstrip("/").rpartition(":")
    if not host or not port.isdigit():
        host, port = rest.rstrip("/"), str(RAY_CLIENT_PORT if client else RAY_GCS_PORT)
    host = host.strip("[]")  # an IPv6 address in brackets
    try:
        with socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S):
            pass
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise ClusterError(f"cannot reach the Ray cluster at {address}: {reason}") from None


def _version() -> int:
    """On a worker: the analysis version its trainproof computes."""
    from trainproof.data import model as worker_model

    return worker_model.ANALYSIS_VERSION


def _check_workers(ray: Any) -> None:
    """One task: the workers import trainproof and compute this analysis version, or ClusterError."""
    try:
        theirs = ray.get(ray.remote(max_retries=MAX_RETRIES)(_version).remote())
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # noqa: BLE001 -- a worker that cannot import trainproof, or a lost node
        detail = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise ClusterError(
            f"the Ray cluster's workers cannot run the analysis (install trainproof[data] on every node): {detail}"
        ) from None
    if theirs != model.ANALYSIS_VERSION:
        raise ClusterError(
            f"the Ray cluster's workers compute analysis version {theirs}, this trainproof {model.ANALYSIS_VERSION}: "
            "install the same trainproof on every node"
        )


def _quiet() -> None:
    """Ray's start-up warnings, Ray Data's execution logs and the raylet's worker-death notices off the console (they
    stay in the session's log files): stdout is the report's, and a dead worker is handled here (retried, then isolated)."""
    logging.getLogger("ray").setLevel(logging.ERROR)
    for handler in logging.getLogger("ray.data").handlers:
        if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler):
            handler.setLevel(logging.CRITICAL + 1)
    # The driver's error-listener thread prints the raylet's messages ("A worker died...") to sys.stdout whatever
    # log_to_driver says, through this module-level function, which it looks up at each call.
    from ray._private import worker

    printer = getattr(worker, "print_to_stdstream", None)
    if printer is not None and not getattr(printer, "_trainproof_quiet", False):

        def print_to_stdstream(data: dict, *args: Any, **kwargs: Any) -> None:
            if data.get("pid") != "raylet":
                printer(data, *args, **kwargs)

        print_to_stdstream._trainproof_quiet = True  # type: ignore[attr-defined]
        worker.print_to_stdstream = print_to_stdstream


def analyze_all(
    refs: Sequence[ClipRef],
    cache: Cache | None = None,
    *,
    progress: bool = False,
    analyze: Analyze | None = None,
    address: str | None = None,
    jobs: int | None = None,
    policy: ReadPolicy | None = None,
) -> ClipRecords:
    """One record per reference, in the same order (as columns): cached where valid, decoded on the Ray cluster otherwise.

    ``cache`` and ``analyze`` as for the local engine's ``analyze_all`` (the
    per-clip function must be importable on the workers); ``progress``: show
    Ray Data's progress bars; ``address`` and ``jobs``: the cluster to use
    when this process is not connected yet (see :func:`connect`); ``policy``: what the dataset may read, judged here
    on the driver as the local engine judges it (a clip refused is never sent to a worker).
    """
    work = Work(refs, cache, analyze, policy)
    if not work.todo:
        return work.result()
    if not _connected() and not (address or os.environ.get("RAY_ADDRESS")) and work.todo_bytes < POOL_MIN_BYTES:
        for i in work.todo:  # too little to start a local cluster for (a re-run's new clips): decoded here, as the local engine would
            work.store(i, _analyzed(refs[i], analyze))
        work.flush()
        return work.result()
    ray = _ray()
    joined_here = not _connected()
    connect(address, jobs)
    saved = _configure(ray, progress)
    try:
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        per_task = max(1, min(TASK_CLIPS, math.ceil(len(work.todo) / (cpus * TASKS_PER_CPU))))
        left = _run(ray, work, refs, work.todo, per_task, analyze)
        if left:
            left = _run(ray, work, refs, left, 1, analyze)
        for i in left:
            work.store(i, crashed(refs[i]))
    finally:
        _restore(ray, saved)
        work.flush()
        if joined_here:
            _leave(ray)
    return work.result()


def _leave(ray: Any) -> None:
    """Leave the cluster this process started or joined for the run, once its records are in: the driver's core
    worker and the object store's pages it mapped (250 MiB at a million clips) are then not held through the rules.
    A run of several datasets starts or joins again for the next one (4 s for a local cluster of 2 CPUs)."""
    global _checked
    _checked = False
    try:
        ray.shutdown()
    except Exception:  # noqa: BLE001 -- the records are in; Ray's own exit handler tries again at exit
        return


def _context(ray: Any) -> Any:
    with warnings.catch_warnings():  # its first use warns of its own deprecated fields
        warnings.simplefilter("ignore", DeprecationWarning)
        return ray.data.DataContext.get_current()


def _configure(ray: Any, progress: bool) -> dict[str, Any]:
    """Set this process's Ray Data context for a run; what it was, to :func:`_restore` after."""
    context = _context(ray)
    settings = {
        "enable_progress_bars": progress,
        # Ray Data's rich bars (on stderr); its tqdm ones did not show on a terminal with the logging set up here
        "use_ray_tqdm": False,
        "enable_rich_progress_bars": progress and importlib.util.find_spec("rich") is not None,
        "max_errored_blocks": -1,  # a block whose task died MAX_RETRIES times is dropped; its clips are run one by one
        "op_resource_reservation_enabled": False,  # one operator: it may use every CPU (reserving half for others ran it on 1 of 2)
    }
    saved = {name: getattr(context, name) for name in settings if hasattr(context, name)}
    for name in saved:  # older Ray: what it lacks, it does not do
        setattr(context, name, settings[name])
    return saved


def _restore(ray: Any, saved: dict[str, Any]) -> None:
    context = _context(ray)
    for name, value in saved.items():
        setattr(context, name, value)


def _client(ray: Any) -> bool:
    """Whether this process reaches the cluster through the Ray Client (``ray://``)."""
    try:
        return bool(ray.util.client.ray.is_connected())
    except AttributeError:
        return False


def _run(ray: Any, work: Work, refs: Sequence[ClipRef], indices: Sequence[int], per_task: int, analyze: Analyze | None) -> list[int]:
    """Decode ``indices`` on the cluster, ``per_task`` clips a task, storing each record as it arrives; the indices of
    the clips whose block was dropped (its task died every time)."""
    if _client(ray):
        batches = _through_client(ray, refs, indices, per_task, analyze)
    else:
        batches = _in_parts(ray, refs, indices, per_task, analyze)
    import numpy as np

    pending = np.zeros(len(refs), dtype=bool)  # a flag a clip, not a set of a million ints
    pending[indices] = True
    for batch in batches:
        for i, packed, texts, pickled in zip(*(batch.column(name).to_pylist() for name in ("i", "packed", "texts", "pickled"))):
            if pending[i]:  # once each, should a retried block ever deliver twice
                pending[i] = False
                work.store(i, (packed, texts) if packed is not None else pickle.loads(pickled))  # noqa: S301 -- our own task's record
    return pending.nonzero()[0].tolist()


REFERENCES_CHUNK = 65_536
"""Clips whose references are made into Arrow columns at a time (a Python string a path of a million clips at once
was 100 MB of the driver)."""


def _references(refs: Sequence[ClipRef], indices: Sequence[int]) -> Any:
    """The clips' references as one Arrow table: index, path, offset, duration, and where the bytes of a clip held
    inside a shard are (its :class:`~trainproof.data.model.Blob`'s fields as JSON; null for a file's). Made
    REFERENCES_CHUNK clips at a time, each chunk a chunk of the table's columns."""
    import pyarrow as pa

    parts = [_reference_table(refs, indices[start : start + REFERENCES_CHUNK]) for start in range(0, len(indices), REFERENCES_CHUNK)]
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0] if parts else _reference_table(refs, [])


def _reference_table(refs: Sequence[ClipRef], indices: Sequence[int]) -> Any:
    import json

    import pyarrow as pa

    blobs = [refs[i].blob for i in indices]
    return pa.table(
        {
            "i": pa.array(indices, pa.int64()),
            "audio": pa.array([refs[i].audio for i in indices], pa.string()),
            "offset": pa.array([refs[i].offset for i in indices], pa.float64()),
            "duration": pa.array([refs[i].duration for i in indices], pa.float64()),
            "blob": pa.array([None if b is None else json.dumps(dataclasses.astuple(b)) for b in blobs], pa.string()),
        }
    )


def _dataset(ray: Any, references: Any, per_task: int, analyze: Analyze | None) -> Any:
    """The Dataset of the records of ``references``: a block, and a task, per ``per_task`` clips."""
    blocks = [references.slice(start, per_task) for start in range(0, references.num_rows, per_task)]
    with warnings.catch_warnings():  # max_retries has no named parameter yet (ray 2.60 deprecates passing it this way)
        warnings.simplefilter("ignore", DeprecationWarning)
        return ray.data.from_arrow(blocks).map_batches(
            _task,
            batch_size=None,  # a block is a task's batch
            batch_format="pyarrow",
            zero_copy_batch=True,
            fn_kwargs={"analyze": analyze},
            num_cpus=1,
            max_retries=MAX_RETRIES,
        )


def _in_parts(ray: Any, refs: Sequence[ClipRef], indices: Sequence[int], per_task: int, analyze: Analyze | None) -> Iterator[Any]:
    """Record tables of ``indices``, a Dataset of DATASET_CLIPS clips at a time (each part's references let go before
    the next part's are made)."""
    for start in range(0, len(indices), DATASET_CLIPS):
        part = _dataset(ray, _references(refs, indices[start : start + DATASET_CLIPS]), per_task, analyze)
        yield from part.iter_batches(batch_size=None, batch_format="pyarrow")
        del part


def _through_client(ray: Any, refs: Sequence[ClipRef], indices: Sequence[int], per_task: int, analyze: Analyze | None) -> Any:
    """Record tables of ``indices`` through the Ray Client, which cannot run Ray Data's executor itself: a task on the
    cluster runs the Dataset for CLIENT_CHUNK clips at a time (two chunks in flight), and returns their records. Each
    chunk's table is built on its own (the client pickles a slice of a table with the whole table's buffers)."""
    drive = ray.remote(num_cpus=0, max_retries=0)(_drive)
    chunks = [indices[start : start + CLIENT_CHUNK] for start in range(0, len(indices), CLIENT_CHUNK)]
    running: list[Any] = []  # Ray object refs
    while chunks or running:
        while chunks and len(running) < 2:
            running.append(drive.remote(_references(refs, chunks.pop(0)), per_task, analyze))
        done, running = ray.wait(running, num_returns=1)
        yield ray.get(done[0])


def _drive(references: Any, per_task: int, analyze: Analyze | None) -> Any:
    """On the cluster, for a Ray Client: the records of ``references`` as one table (see :func:`_through_client`)."""
    import pyarrow as pa
    import ray

    saved = _configure(ray, progress=False)
    try:
        tables = list(_dataset(ray, references, per_task, analyze).iter_batches(batch_size=None, batch_format="pyarrow"))
    finally:
        _restore(ray, saved)
    return pa.concat_tables(tables) if tables else _schema().empty_table()


def _schema() -> Any:
    import pyarrow as pa

    return pa.schema([("i", pa.int64()), ("packed", pa.binary()), ("texts", pa.string()), ("pickled", pa.binary())])


def _task(batch: Any, analyze: Analyze | None) -> Any:
    """A Ray task: each clip of a block of references analysed here, returned as a table of each clip's index and its
    packed record (:func:`trainproof.data.records.pack`, as the cache holds it); a record that will not pack (a custom
    analysis's) goes back pickled instead, as the local engine's workers send it."""
    import pyarrow as pa

    from trainproof.data.records import try_pack

    indices, packs, texts, pickled = [], [], [], []
    names = ("i", "audio", "offset", "duration", "blob")
    for i, audio, offset, duration, blob in zip(*(batch.column(name).to_pylist() for name in names)):
        record = _inline(ClipRef(audio, offset, duration, None if blob is None else Blob(*json.loads(blob))), analyze)
        packed = try_pack(record)
        indices.append(i)
        packs.append(packed[0] if packed else None)
        texts.append(packed[1] if packed else None)
        pickled.append(None if packed else pickle.dumps(record))
    schema = _schema()
    columns = (indices, packs, texts, pickled)
    return pa.Table.from_arrays([pa.array(values, field.type) for values, field in zip(columns, schema)], schema=schema)
