"""Clips named by URI (``s3://``, ``gs://``, ``file://``): told apart from local paths, stat'ed and opened through pyarrow.

A manifest may list its audio as object-store URIs, the way a corpus kept in
a bucket is listed for a cluster. Such a path is kept as written: the
manifest reader never joins it to a folder or normalises it (which would
turn ``s3://b/x.wav`` into ``s3:/b/x.wav``), and a relative path under a
``--root`` that is a URI is joined with ``/``. Everything else is a local
(or shared-filesystem) path, as before.

A URI is resolved by ``pyarrow.fs.FileSystem.from_uri``: ``file://`` by
pyarrow's local filesystem, ``s3://`` and ``gs://`` by its built-in S3 and
GCS filesystems when the pyarrow build has them, with credentials from the
environment as those filesystems read them (``AWS_*`` variables or
``~/.aws``; ``GOOGLE_APPLICATION_CREDENTIALS``). :func:`stat` gives the
cache key's size and modification time from ``get_file_info``;
:func:`open_input` gives a seekable file object that soundfile decodes as it
would a file. pyarrow comes with the ``ray`` extra (``ray[data]``); it is
imported only when a URI is met.
"""

from __future__ import annotations

import posixpath
import re
import threading
from typing import Any, NamedTuple

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")


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


_PLAIN = re.compile(r"[A-Za-z0-9._~/:@\-]*")
"""A URI's rest that from_uri would take as written (no %-escape to decode, no ?query or #fragment, no space)."""
_FILESYSTEMS: dict[str, tuple[Any, int]] = {}  # scheme://authority -> its filesystem, and how much of a URI's rest is not the path
_UNRESOLVED: dict[str, str] = {}  # scheme://authority -> why its store could not be reached
_RESOLVING = threading.Lock()


def _resolve(uri: str) -> tuple[Any, str]:
    """The filesystem and path of ``uri``. The filesystem is made once per ``scheme://authority`` in a process (per
    bucket, for S3: ``from_uri`` asks S3 for the bucket's region, a request this saves on every other clip of the
    bucket); one that cannot be made (an unknown scheme, a bucket whose region cannot be found: a DNS timeout each
    time) is not tried again for the other clips of the run."""
    import pyarrow.fs

    scheme, rest = uri.split("://", 1)
    key = f"{scheme}://{rest.split('/', 1)[0]}"
    plain = _PLAIN.fullmatch(rest) is not None  # no %-escape, query or fragment: the path is the rest as written
    known = _FILESYSTEMS.get(key) if plain else None
    if known is not None:
        return known[0], rest[known[1] :]
    with _RESOLVING:  # threads stat'ing clips of one new bucket wait for one resolution, not one each
        known = _FILESYSTEMS.get(key) if plain else None
        if known is not None:
            return known[0], rest[known[1] :]
        if key in _UNRESOLVED:
            raise OSError(_UNRESOLVED[key])
        try:
            fs, path = pyarrow.fs.FileSystem.from_uri(uri)
        except OSError as exc:  # the store cannot be reached (no region, no network): the same for every clip of it
            _UNRESOLVED[key] = f"cannot resolve the URI: {exc}"
            raise OSError(_UNRESOLVED[key]) from None
        except Exception as exc:  # noqa: BLE001 -- pyarrow's ArrowInvalid: this URI does not parse (or its scheme is unknown)
            raise OSError(f"cannot resolve the URI: {exc}") from None
        if plain and rest.endswith(path):  # s3://b/k -> "b/k"; file:///a -> "/a"; hdfs://h:1/a -> "/a"
            _FILESYSTEMS[key] = (fs, len(rest) - len(path))
        return fs, path


def stat(uri: str) -> Info:
    """The object's kind, size and modification time (0 when the store gives none); OSError when the store cannot be asked."""
    import pyarrow.fs

    fs, path = _resolve(uri)
    try:
        info = fs.get_file_info(path)
    except Exception as exc:  # noqa: BLE001 -- pyarrow raises OSError and its own errors for a store that refuses
        raise OSError(str(exc)) from None
    if info.type == pyarrow.fs.FileType.NotFound:
        return Info("missing")
    if info.type == pyarrow.fs.FileType.Directory:
        return Info("folder")
    if info.type != pyarrow.fs.FileType.File:
        return Info("other")
    return Info("file", int(info.size or 0), int(info.mtime_ns or 0))


def open_input(uri: str) -> Any:
    """A seekable, readable file object of the object's bytes (close it when done); OSError when it cannot be opened."""
    fs, path = _resolve(uri)
    try:
        return fs.open_input_file(path)
    except Exception as exc:  # noqa: BLE001
        raise OSError(str(exc)) from None


def list_files(uri: str, limit: int) -> list[str] | None:
    """The names of the files directly in the folder ``uri`` (None when it holds more than ``limit`` entries);
    FileNotFoundError when there is no such folder, OSError when the store cannot be asked."""
    import pyarrow.fs

    fs, path = _resolve(uri)
    try:
        entries = fs.get_file_info(pyarrow.fs.FileSelector(path, allow_not_found=False, recursive=False))
    except FileNotFoundError:
        raise
    except Exception as exc:  # noqa: BLE001 -- pyarrow raises OSError and its own errors for a store that refuses
        raise OSError(str(exc)) from None
    if len(entries) > limit:
        return None
    return [entry.base_name for entry in entries if entry.type == pyarrow.fs.FileType.File]
