"""Clips named by URI (``s3://``, ``gs://``, ``file://``): told apart from local paths, stat'ed and opened through pyarrow.

A manifest may list its audio as object-store URIs, the way a corpus kept in
a bucket is listed for a cluster. Such a path is kept as written: the
manifest reader never joins it to a folder or normalises it (which would
turn ``s3://b/x.wav`` into ``s3:/b/x.wav``), and a relative path under a
``--root`` that is a URI is joined with ``/``. Everything else is a local
(or shared-filesystem) path, as before.

A manifest often comes from someone else (a pull request, a fork) while the
credentials in the environment are the user's, so a URI names an object and
nothing more. :func:`parse` says why a URI is not read (:class:`Refused`),
before any library sees it: a scheme other than SCHEMES (``abfs://`` would
have pyarrow run ``az`` to get a token, ``hdfs://`` start a JVM), a query or a fragment
(pyarrow's ``from_uri`` takes ``?endpoint_override=host&scheme=http`` from
one and sends the environment's keys there), a user name, port or anything
but a bucket name in the authority, a host in a ``file://`` URI, a ``.`` or
``..`` segment in an object key (the request's URL would resolve it away), a
control character or an escape that is not UTF-8. ``%``-escapes in the path
are decoded. Such a clip is ``unreadable`` with that reason; its neighbours
are read.

The filesystems are built here, never from the URI: ``file://`` is
pyarrow's LocalFileSystem; ``s3://`` its S3FileSystem with the endpoint of
``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL`` when the environment sets
one, the region of ``AWS_REGION`` or ``AWS_DEFAULT_REGION`` when it sets
one, else the bucket's own, looked up once per bucket by an anonymous HEAD
request (:func:`_region`, bounded by URI_REGION_TIMEOUT_S; buckets are
looked up in parallel, not one after another); ``gs://`` its GcsFileSystem
(the endpoint of ``CLOUD_STORAGE_EMULATOR_ENDPOINT`` when set, anonymously).
Credentials are read by those filesystems from the environment as they read
them (``AWS_*`` variables or ``~/.aws``; Google's application default
credentials) and go only to those endpoints.

Every request to a store is bounded: S3's connections and stalls by the
SDK's own timeouts and URI_ATTEMPTS attempts, GCS's retries by a time limit,
and every call (a stat, an open, a block of reading, a listing) by
URI_REQUEST_TIMEOUT_S, past which the call is abandoned on its (daemon)
thread and the store is not asked again in this process. :func:`reach` asks
every store a manifest names about one of its clips, in parallel, all within
URI_REACH_TIMEOUT_S: the data command makes one that cannot be reached (no
network, an unknown host, a region that cannot be found, credentials it
refuses) one exit-2 line instead of one finding per clip.
:func:`unreachable` names the stores that stopped answering later.

:func:`stat` gives the cache key's size and modification time;
:func:`open_input` a seekable file object that soundfile decodes as it would
a file, read URI_READ_BLOCK_BYTES at a time. pyarrow comes with the ``ray``
extra (``ray[data]``); it is imported only when a URI is met.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
import threading
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, TypeVar
from urllib.parse import unquote

SCHEMES = ("s3", "gs", "file")
"""The URI schemes whose clips are read; any other is refused without a library call."""

URI_CONNECT_TIMEOUT_S = 5.0
"""Seconds S3 may take to open one connection to the store."""

URI_REQUEST_TIMEOUT_S = 30.0
"""Seconds one call to a store (a stat, an open, a block of reading, a listing, retries included) may take; past it
the store counts as not answering and is not asked again in this process. S3 gets a third of it per attempt as its
stall limit (no byte for that long ends the attempt), GCS a third of it as its retry time limit."""

URI_ATTEMPTS = 3
"""Attempts per S3 request (the first and two retries)."""

URI_REGION_TIMEOUT_S = 10.0
"""Seconds the lookup of an S3 bucket's region may take."""

URI_REACH_TIMEOUT_S = 45.0
"""Seconds :func:`reach` waits, in all, for every store a manifest names to answer about one of its clips (region
lookups included; they run side by side); a store that has not answered by then cannot be reached."""

URI_REACH_THREADS = 32
"""Stores :func:`reach` asks at once."""

URI_READ_BLOCK_BYTES = 1024 * 1024
"""Bytes fetched per read from a store (one ranged request each); soundfile's small reads are served from it."""

URI_MESSAGE_CHARS = 300
"""A store's error message is cut to this many characters (GCS's run to a kilobyte of retry metadata)."""

REGION_LOOKUP = "https://s3.amazonaws.com/{bucket}"
"""Where a bucket's region is asked for: S3 answers a HEAD of any bucket, anonymous, with ``x-amz-bucket-region``."""

DEFAULT_REGION = "us-east-1"
"""The region of a bucket whose lookup names none (a bucket that does not exist: its clips are then missing), or of an
endpoint from the environment with no region set."""

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
_BUCKET = re.compile(r"[A-Za-z0-9][A-Za-z0-9._\-]{0,221}")
"""An S3 or GCS bucket name (S3's legacy names allow capitals and ``_``; GCS's with dots run to 222 characters)."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_LOCAL_HOSTS = ("", "localhost")

T = TypeVar("T")


def is_uri(path: str) -> bool:
    """Whether ``path`` is ``scheme://...`` (a Windows ``C:\\`` path is not: a scheme has two letters or more)."""
    if "://" not in path:  # a plain path, told apart in C before the pattern is tried (twice a clip per run)
        return False
    match = _SCHEME.match(path)
    return match is not None and match.end() > 4


def join(base: str, listed: str) -> str:
    """``listed`` under the URI ``base`` (``listed`` itself when it is a URI), ``..`` and ``.`` resolved."""
    if is_uri(listed):
        return listed
    scheme, rest = base.split("://", 1)
    return f"{scheme}://{posixpath.normpath(posixpath.join(rest, listed))}"


class Info(NamedTuple):
    """What :func:`stat` found: ``kind`` is ``file``, ``folder``, ``missing`` or ``other``; size and mtime of a file."""

    kind: str
    size: int = 0
    mtime_ns: int = 0


class Address(NamedTuple):
    """A URI that may be read: its ``store`` (``s3://bucket``, ``gs://bucket``, ``file://``) and the ``path`` its
    filesystem takes (``bucket/key``; an absolute local path)."""

    scheme: str
    bucket: str
    path: str

    @property
    def store(self) -> str:
        return f"{self.scheme}://{self.bucket}"


class Refused(OSError):
    """A URI that is not read (see :func:`parse`)."""


class NoAnswer(OSError):
    """A store that did not answer in time."""


def parse(uri: str) -> Address:
    """The address ``uri`` names; :class:`Refused` saying why it is not read (see the module doc)."""
    match = _SCHEME.match(uri)
    if match is None or match.end() <= 4:
        raise Refused("not a URI")
    scheme = uri[: match.end() - 3].lower()
    if scheme not in SCHEMES:
        shown = scheme if len(scheme) <= 16 else scheme[:16] + "..."
        raise Refused(f"its scheme {shown}:// is not read (trainproof reads s3://, gs:// and file:// URIs)")
    rest = uri[match.end() :]
    for mark, what in (("?", "a query"), ("#", "a fragment")):
        if mark in rest:
            raise Refused(f"the URI has {what} ('{mark}...'), which is not read: settings come from the environment, not the manifest")
    authority, slash, encoded = rest.partition("/")
    if scheme == "file":
        if authority.lower() not in _LOCAL_HOSTS:
            raise Refused("a file:// URI that names a host is not read (file:///path or file://localhost/path is)")
    elif "@" in authority:
        raise Refused("the URI names a user ('@'), which is not read: credentials come from the environment")
    elif not authority:
        raise Refused("the URI names no bucket")
    elif _BUCKET.fullmatch(authority) is None:
        raise Refused("the URI's authority is not a bucket name (letters, digits, '.', '-', '_'; no port)")
    try:
        path = unquote(encoded, errors="strict")
    except UnicodeDecodeError:
        raise Refused("the URI has a %-escape that is not UTF-8") from None
    if _CONTROL.search(path):  # the authority was checked above: "", "localhost" or a bucket name
        raise Refused("the URI holds a control character")
    if scheme == "file":
        path = "/" + path
        if os.name == "nt" and re.match(r"^/[A-Za-z]:", path):
            path = path[1:]
        return Address(scheme, "", path)
    if any(part in (".", "..") for part in path.split("/")):
        raise Refused("the object key has a '.' or '..' segment, which the store's URL would resolve away")
    return Address(scheme, authority, f"{authority}/{path}" if slash else authority)


# --- the stores -------------------------------------------------------------------------------------------------

_FILESYSTEMS: dict[str, Any] = {}  # store (s3://bucket; gs:// and file:// for all of theirs) -> its filesystem
_SILENT: dict[str, str] = {}  # store -> why it is not asked again (it did not answer in time)
_LOCKS: dict[str, threading.Lock] = {}  # store -> held while its filesystem is made (one region lookup per bucket)
_LOCKS_LOCK = threading.Lock()


def _filesystem(address: Address) -> Any:
    """The filesystem of ``address``'s store, made once per process (per bucket for S3, whose region it holds)."""
    key = address.store if address.scheme == "s3" else address.scheme
    known = _FILESYSTEMS.get(key)
    if known is not None:
        return known
    with _LOCKS_LOCK:
        lock = _LOCKS.setdefault(key, threading.Lock())
    with lock:  # threads asking about clips of one new bucket wait for one lookup, not one each; other buckets go on
        known = _FILESYSTEMS.get(key)
        if known is None:
            known = _FILESYSTEMS[key] = _make(address)
        return known


def _make(address: Address) -> Any:
    import datetime

    import pyarrow.fs

    if address.scheme == "file":
        return pyarrow.fs.LocalFileSystem()
    if address.scheme == "gs":
        options: dict[str, Any] = {"retry_time_limit": datetime.timedelta(seconds=URI_REQUEST_TIMEOUT_S / 3)}
        emulator = _endpoint("CLOUD_STORAGE_EMULATOR_ENDPOINT")
        if emulator is not None:
            options.update(endpoint_override=emulator[1], scheme=emulator[0], anonymous=True)
        return pyarrow.fs.GcsFileSystem(**options)
    endpoint = _endpoint("AWS_ENDPOINT_URL_S3") or _endpoint("AWS_ENDPOINT_URL")
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if not region:
        region = DEFAULT_REGION if endpoint is not None else _region(address.bucket)
    options = {
        "region": region,
        "connect_timeout": URI_CONNECT_TIMEOUT_S,
        "request_timeout": URI_REQUEST_TIMEOUT_S / URI_ATTEMPTS,
        "retry_strategy": pyarrow.fs.AwsStandardS3RetryStrategy(max_attempts=URI_ATTEMPTS),
    }
    if endpoint is not None:
        options.update(scheme=endpoint[0], endpoint_override=endpoint[1])
    return pyarrow.fs.S3FileSystem(**options)


def _endpoint(variable: str) -> tuple[str, str] | None:
    """The scheme and ``host[:port]`` of the endpoint URL in the environment variable, if it sets one."""
    from urllib.parse import urlsplit

    value = os.environ.get(variable, "").strip()
    if not value:
        return None
    parts = urlsplit(value if "://" in value else f"https://{value}")
    return (parts.scheme or "https", parts.netloc)


def _region(bucket: str) -> str:
    """The region S3 names for ``bucket`` (an anonymous HEAD: no credential is sent); OSError when S3 cannot be asked."""
    import ssl
    import urllib.error
    import urllib.request

    def ask() -> Any:
        class Unfollowed(urllib.request.HTTPRedirectHandler):  # a redirect is the answer: its headers name the region
            def redirect_request(self, *args: Any) -> None:
                return None

        context = ssl.create_default_context(cafile=os.environ.get("AWS_CA_BUNDLE") or None)
        opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=context), Unfollowed())
        request = urllib.request.Request(REGION_LOOKUP.format(bucket=bucket), method="HEAD")
        try:
            with opener.open(request, timeout=URI_REGION_TIMEOUT_S) as response:
                return response.headers
        except urllib.error.HTTPError as exc:  # 301 (another region), 403 (private): the header is there all the same
            return exc.headers

    try:
        headers = _within(URI_REGION_TIMEOUT_S, ask)
    except (OSError, ValueError) as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc  # not "<urlopen error ...>"
        raise OSError(f"cannot look up the bucket's region: {_said(reason)}") from None
    return (headers.get("x-amz-bucket-region") if headers is not None else None) or DEFAULT_REGION


def _within(seconds: float, call: Callable[[], T]) -> T:
    """``call()``'s result, run on a daemon thread; :class:`NoAnswer` when it takes longer than ``seconds`` (the
    thread is left to finish on its own: neither pyarrow's GCS calls nor a DNS lookup can be interrupted, and a daemon
    thread does not hold up the process's exit)."""
    done = threading.Event()
    box: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            box.append((True, call()))
        except BaseException as exc:  # noqa: BLE001 -- handed to the caller's thread as it is
            box.append((False, exc))
        finally:
            done.set()

    threading.Thread(target=run, name="trainproof-uri", daemon=True).start()
    if not done.wait(seconds):
        raise NoAnswer(f"no answer within {seconds:g} s")
    ok, value = box[0]
    if ok:
        return value
    raise value


def _ask(address: Address, call: Callable[[Any], T]) -> T:
    """``call(filesystem)`` for ``address``'s store, bounded by URI_REQUEST_TIMEOUT_S (and the region lookup of a
    bucket not met yet); a store that does not answer in time is remembered and not asked again."""
    if address.scheme == "file":
        return call(_filesystem(address))
    silent = _SILENT.get(address.store)
    if silent is not None:
        raise NoAnswer(silent)
    looked_up = address.scheme == "s3" and address.store not in _FILESYSTEMS  # its region may be looked up first
    seconds = URI_REQUEST_TIMEOUT_S + (URI_REGION_TIMEOUT_S if looked_up else 0)
    try:
        return _within(seconds, lambda: call(_filesystem(address)))
    except NoAnswer as exc:
        _SILENT.setdefault(address.store, str(exc))
        raise


def _file_info(fs: Any, path: str) -> object:
    return fs.get_file_info(path)


def _said(exc: BaseException | str) -> str:
    """What a store's (or pyarrow's) error says, on one line and at most URI_MESSAGE_CHARS characters: GCS's status
    without its retry metadata, and the cause under its token error."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    gcs = re.match(r"google::cloud::Status\((\w+): (.*?)(?: error_info=\{.*)?\)?$", text)
    if gcs is not None:
        detail = gcs.group(2).removeprefix("Retry policy exhausted, with a last message of ")
        cause = detail.partition("The underlying error message was: ")
        text = f"{gcs.group(1)}: " + (f"cannot get an access token: {cause[2]}" if cause[2] else detail)
    return text if len(text) <= URI_MESSAGE_CHARS else text[: URI_MESSAGE_CHARS - 3] + "..."


def _failure(exc: BaseException) -> OSError:
    """The OSError a caller is given for ``exc`` (FileNotFoundError and NoAnswer kept as they are)."""
    if isinstance(exc, (FileNotFoundError, NoAnswer)):
        return exc
    return OSError(_said(exc))


def stat(uri: str) -> Info:
    """The object's kind, size and modification time (0 when the store gives none); OSError when the store cannot be
    asked, :class:`Refused` when the URI is not read."""
    import pyarrow.fs

    address = parse(uri)
    try:
        info = _ask(address, lambda fs: fs.get_file_info(address.path))
    except Exception as exc:  # noqa: BLE001 -- pyarrow raises OSError and its own errors for a store that refuses
        raise _failure(exc) from None
    if info.type == pyarrow.fs.FileType.NotFound:
        return Info("missing")
    if info.type == pyarrow.fs.FileType.Directory:
        return Info("folder")
    if info.type != pyarrow.fs.FileType.File:
        return Info("other")
    return Info("file", int(info.size or 0), int(info.mtime_ns or 0))


def open_input(uri: str) -> Input:
    """A seekable, readable file object of the object's bytes (close it when done); OSError when it cannot be opened."""
    address = parse(uri)
    try:
        return _ask(address, lambda fs: Input(address, fs.open_input_file(address.path)))
    except Exception as exc:  # noqa: BLE001
        raise _failure(exc) from None


def list_files(uri: str, limit: int) -> list[str] | None:
    """The names of the files directly in the folder ``uri`` (None when it holds more than ``limit`` entries);
    FileNotFoundError when there is no such folder, OSError when the store cannot be asked."""
    import pyarrow.fs

    address = parse(uri)
    selector = pyarrow.fs.FileSelector(address.path, allow_not_found=False, recursive=False)
    try:
        entries = _ask(address, lambda fs: fs.get_file_info(selector))
    except Exception as exc:  # noqa: BLE001 -- pyarrow raises OSError and its own errors for a store that refuses
        raise _failure(exc) from None
    if len(entries) > limit:
        return None
    return [entry.base_name for entry in entries if entry.type == pyarrow.fs.FileType.File]


class Input:
    """An object's bytes as soundfile reads a file: ``seek`` and ``tell`` here, ``read`` URI_READ_BLOCK_BYTES at a
    time from the store, each fetch bounded (:func:`_ask`). A fetch that fails ends the bytes (a read past it gives
    none, not an exception, which soundfile's C callbacks could only print) and is kept in :attr:`error`."""

    def __init__(self, address: Address, file: Any) -> None:
        self._address = address
        self._file = file
        self._size = int(file.size())
        self._position = 0
        self._block = b""
        self._block_at = 0
        self.error: str | None = None
        """Why the bytes stopped short (a fetch that failed), or None."""

    def size(self) -> int:
        return self._size

    def tell(self) -> int:
        return self._position

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        base = (0, self._position, self._size)[whence]
        self._position = max(0, base + offset)
        return self._position

    def read(self, count: int = -1) -> bytes:
        end = self._size if count is None or count < 0 else min(self._size, self._position + count)
        parts = []
        while self._position < end and self.error is None:
            offset = self._position - self._block_at
            if not 0 <= offset < len(self._block):
                self._fetch()
                continue
            part = self._block[offset : offset + end - self._position]
            parts.append(part)
            self._position += len(part)
        return b"".join(parts)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def _fetch(self) -> None:
        at, length = self._position, min(URI_READ_BLOCK_BYTES, self._size - self._position)
        try:
            block = _ask(self._address, lambda fs: self._file.read_at(length, at))
        except Exception as exc:  # noqa: BLE001 -- any failure ends the bytes here; the clip's record says why
            self.error = _said(exc)
            return
        if not block:
            self.error = f"the store gave no bytes at offset {at:,} of {self._size:,}"
            return
        self._block, self._block_at = bytes(block), at

    def close(self) -> None:
        self._block = b""
        try:
            self._file.close()
        except Exception:  # noqa: BLE001 -- a read-only object: nothing is lost by a close that fails
            pass

    def __enter__(self) -> Input:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- can the stores be reached? -------------------------------------------------------------------------------


def reach(uris: Iterable[str]) -> list[tuple[str, str]]:
    """The stores among ``uris`` that cannot be reached, and why, in the order first met: each store (bucket) is asked
    about its first clip (a stat), URI_REACH_THREADS stores at a time, all within URI_REACH_TIMEOUT_S. A store that
    answers, whatever it says of the clip (missing included), is reached; one whose lookup or request fails, or that
    has not answered by then, is not. URIs that are refused, and ``file://`` ones, are not asked about."""
    firsts: dict[str, Address] = {}
    for text in uris:
        if "://" not in text:
            continue
        try:
            address = parse(text)
        except Refused:
            continue
        if address.scheme != "file":
            firsts.setdefault(address.store, address)
    if not firsts:
        return []
    pending = list(reversed(firsts.values()))
    answers: dict[str, str | None] = {}
    lock = threading.Lock()
    finished = threading.Event()

    def work() -> None:
        while True:
            with lock:
                if not pending:
                    return
                address = pending.pop()
            try:
                _ask(address, functools.partial(_file_info, path=address.path))
                problem = None
            except Exception as exc:  # noqa: BLE001 -- whatever keeps the store from answering is why
                problem = _said(exc)
            with lock:
                answers[address.store] = problem
                if len(answers) == len(firsts):
                    finished.set()

    for _ in range(min(URI_REACH_THREADS, len(firsts))):
        threading.Thread(target=work, name="trainproof-reach", daemon=True).start()
    finished.wait(URI_REACH_TIMEOUT_S)
    with lock:
        pending.clear()
        said = dict(answers)
    late = f"no answer within {URI_REACH_TIMEOUT_S:g} s"
    for store in firsts:
        if store not in said:
            _SILENT.setdefault(store, late)
    return [(store, problem) for store in firsts if (problem := said.get(store, late)) is not None]


def unreachable(uris: Iterable[str]) -> list[tuple[str, str]]:
    """The stores among ``uris`` that stopped answering in this process (a call that ran past URI_REQUEST_TIMEOUT_S),
    and why, in the order first met."""
    if not _SILENT:
        return []
    found: dict[str, str] = {}
    for text in uris:
        try:
            store = parse(text).store
        except Refused:
            continue
        if store in _SILENT:
            found.setdefault(store, _SILENT[store])
    return list(found.items())
