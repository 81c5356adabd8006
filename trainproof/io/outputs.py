"""Writing the files a user named as outputs, and nothing the user did not name.

* An output is refused before any work when it is one of the files the inputs
  are read from (compared by identity, so a run folder, a symlink or a hard
  link to an input is caught), the configuration file, or named twice.
* A regular file or a new path is written atomically (a temporary file in the
  same folder, then a rename): a reader never sees half a report, and a failed
  write leaves the old file as it was.
* A symlink is written through to the file it points at, and a FIFO, a
  terminal or ``/dev/stdout`` as a stream: the link, the pipe or the device
  stays what it is.
* Text is encoded as UTF-8; what UTF-8 cannot carry (the undecodable bytes
  of a file name) is written as a backslash escape instead of failing.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from trainproof.io.errors import UsageError
from trainproof.io.safe import visible

Identity = tuple[int, int]


def identity(path: str | os.PathLike[str]) -> Identity | None:
    """(device, inode) of what ``path`` names after following links, or None when there is nothing there."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info.st_dev, info.st_ino


def _problem(path: str, exc: OSError) -> UsageError:
    return UsageError(f"{visible(path)}: cannot write it: {exc.strerror or exc}")


def check_target(option: str, path: str) -> None:
    """Refuse, before any work, an output path that cannot be written as a file."""
    if not path:
        raise UsageError(f"--{option} needs a file name, got an empty one")
    target = Path(path)
    try:
        info = os.stat(target)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise _problem(path, exc) from None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{visible(path)}: is a directory; name a file to write")
    if info is None and not os.path.islink(target):
        parent = target.parent
        if not parent.is_dir():
            raise UsageError(f"{visible(path)}: cannot write it, the directory {visible(parent)} does not exist")


def write(path: str, content: str) -> None:
    """Write one output: atomically to a regular file or a new path, as a stream through anything else."""
    data = content.encode("utf-8", errors="backslashreplace")
    target = Path(path)
    try:
        if os.path.islink(target):
            _write_through(target, data)
            return
        info = _found(target)
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise UsageError(f"{visible(path)}: is a directory; name a file to write")
        if info is not None and not stat.S_ISREG(info.st_mode):
            _write_through(target, data, info)
            return
        _replace(target, data, None if info is None else stat.S_IMODE(info.st_mode))
    except OSError as exc:
        raise _problem(path, exc) from None


def append(path: str, content: str) -> None:
    """Append to ``path`` (the job summary GitHub names), creating it; a FIFO no process reads is an error, not a wait
    forever. OSError when it cannot be written."""
    data = content.encode("utf-8", errors="backslashreplace")
    target = Path(path)
    _write_through(target, data, _found(target), flags=os.O_WRONLY | os.O_CREAT | os.O_APPEND)


def _found(target: Path) -> os.stat_result | None:
    """What ``target`` names after following links; None when nothing is there (a path through a file raises)."""
    try:
        return os.stat(target)
    except FileNotFoundError:
        return None


def _write_through(
    target: Path, data: bytes, info: os.stat_result | None = None, flags: int = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
) -> None:
    """Write into what ``target`` names (a link's file, a FIFO, a device; ``info`` its stat, None for none taken)
    without replacing it."""
    if info is not None and stat.S_ISFIFO(info.st_mode):
        try:  # with no process reading, opening a FIFO would wait forever
            fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                raise UsageError(f"{visible(target)}: is a FIFO that no process is reading") from None
            raise
        os.set_blocking(fd, True)
    else:
        fd = os.open(target, flags, 0o666)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _replace(target: Path, data: bytes, mode: int | None) -> None:
    import tempfile  # imported here: only a run that writes a file pays for it (and for random, which it imports)

    parent = target.parent if str(target.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name[:64]}.", suffix=".tmp", dir=parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask  # mkstemp makes 0600; a new output is an ordinary file
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
