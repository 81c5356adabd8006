"""Log readers behind one registry, and the detection that picks one for a path.

``READERS`` is the whole registry: a new log format is one module with
``name``, ``description``, ``line_parser``, ``sniff(path, head)`` and
``read(path) -> Run`` (the :class:`~trainproof.io.bounded.Reader`
protocol), named here. A reader's module is imported when it is first asked
for, so judging an HF log imports no TensorBoard, MLflow or CSV reader.
Detection looks at content first (the first 256 KiB), the file name second.
Only regular files and directories are read: a FIFO, a device or a socket is
refused before it is opened (opening a FIFO with no writer blocks forever, and
``/dev/zero`` never ends).
"""

from __future__ import annotations

import importlib
import os
import re
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import cast

from trainproof.io.bounded import special_kind
from trainproof.io.errors import InputError
from trainproof.runs.model import Run
from trainproof.runs.readers.base import Reader
from trainproof.runs.readers.names import DEFAULT_NAMES, Names


class _Readers(Mapping[str, Reader]):
    """Format name -> its reader, the module ``trainproof.runs.readers.<name>``, imported on first use."""

    def __init__(self, *names: str) -> None:
        self._names = names

    def __getitem__(self, name: str) -> Reader:
        if name not in self._names:
            raise KeyError(name)
        return cast(Reader, importlib.import_module(f"{__name__}.{name}"))

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


READERS: Mapping[str, Reader] = _Readers("hf", "coqui", "jsonl", "csv", "tensorboard", "mlflow")
"""The readers in the order their sniffs are tried."""

SNIFF_BYTES = 256 * 1024

# Names a trainer gives its log, in the order a directory is searched.
KNOWN_NAMES: tuple[tuple[str, str], ...] = (
    ("trainer_state.json", "hf"),
    ("trainer_0_log.txt", "coqui"),
    ("metrics.csv", "csv"),
    ("training_log.csv", "csv"),
    ("metrics.jsonl", "jsonl"),
    ("log.jsonl", "jsonl"),
)
_BY_SUFFIX = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "csv"}
LOG_SUFFIXES = tuple(_BY_SUFFIX)
"""The suffixes of a log file read by its content alone (``*.jsonl``, ``*.csv``...)."""
EVENT_FILE_PREFIX = "events.out.tfevents."
"""How every TensorBoard event file's name starts."""
LFS_POINTER = "version https://git-lfs.github.com/spec/v1"
"""How a Git LFS pointer, left in place of a log not fetched, starts."""
_LFS = re.compile("^" + re.escape(LFS_POINTER) + r"\s+oid sha256:([0-9a-f]{64})\s+size (\d{1,19})(?!\d)", re.S)
_INT_NAME = re.compile(r"[0-9]{1,18}")


def find_log(directory: Path, fmt: str | None = None) -> Path:
    """The training log inside a run directory, or an InputError naming what was looked for.

    With a format forced, that format's own files are looked for first, so
    ``--format tensorboard`` on an HF output folder reads its event files, not
    its trainer_state.json.
    """
    if fmt is not None and (own := _find_format(directory, fmt)) is not None:
        return own
    for filename, _ in KNOWN_NAMES:
        if (directory / filename).is_file():
            return directory / filename
    checkpoint = _latest_checkpoint(directory)
    if checkpoint is not None:
        return checkpoint
    candidates = _candidates(directory)
    if len(candidates) == 1:
        return candidates[0]
    if _is_mlflow_run(directory) or _event_files(directory):
        return directory  # an MLflow or TensorBoard run directory is read as a whole
    looked = ", ".join(name for name, _ in KNOWN_NAMES)
    if len(candidates) > 1:
        raise InputError(directory, f"holds several candidate logs ({', '.join(p.name for p in candidates[:5])}); name one")
    raise InputError(
        directory, f"is a directory with no training log in it (looked for {looked}, checkpoint-*/trainer_state.json, *.jsonl, *.csv, TensorBoard event files, MLflow metrics/)"
    )


def is_checkpoint_name(name: str) -> bool:
    """Is a folder named as an HF checkpoint, ``checkpoint-<step>`` (a step of more than 18 digits is no checkpoint)?"""
    return name.startswith("checkpoint-") and _INT_NAME.fullmatch(name[11:]) is not None


def _latest_checkpoint(directory: Path) -> Path | None:
    """``checkpoint-<step>/trainer_state.json`` of the highest step (see :func:`is_checkpoint_name`)."""
    checkpoints = sorted(
        (p for p in directory.glob("checkpoint-*/trainer_state.json") if is_checkpoint_name(p.parent.name) and p.is_file()),
        key=lambda p: int(p.parent.name[11:]),
    )
    return checkpoints[-1] if checkpoints else None


def _is_mlflow_run(directory: Path) -> bool:
    from trainproof.runs.readers import mlflow

    return mlflow.is_run_directory(directory)


def _event_files(path: Path) -> list[Path]:
    from trainproof.runs.readers import tensorboard

    return tensorboard.event_files(path)


def _is_event_file(path: Path, head_bytes: bytes) -> bool:
    from trainproof.runs.readers import tensorboard

    return tensorboard.sniff_binary(path, head_bytes)


def _candidates(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.suffix in _BY_SUFFIX and p.is_file())


def _find_format(directory: Path, fmt: str) -> Path | None:
    """A run directory's log of one format, or None when it has none."""
    if fmt == "mlflow":
        return directory if _is_mlflow_run(directory) else None
    if fmt == "tensorboard":
        return directory if _event_files(directory) else None
    for filename, known in KNOWN_NAMES:
        if known == fmt and (directory / filename).is_file():
            return directory / filename
    if fmt == "hf":
        return _latest_checkpoint(directory)
    candidates = [p for p in _candidates(directory) if _BY_SUFFIX[p.suffix] == fmt]
    return candidates[0] if len(candidates) == 1 else None


def sniffed(path: Path, head: str) -> str | None:
    """The name of the first reader whose sniff takes a file's first bytes; None when none does."""
    return next((name for name, reader in READERS.items() if reader.sniff(path, head)), None)


def detect(path: Path, head: str) -> str:
    """The reader name for a file, from its first bytes and then its name."""
    found = sniffed(path, head)
    if found is not None:
        return found
    for filename, fmt in KNOWN_NAMES:
        if path.name == filename:
            return fmt
    if path.suffix in _BY_SUFFIX:
        return _BY_SUFFIX[path.suffix]
    raise InputError(path, f"is not a training log format trainproof knows ({', '.join(READERS)}); pass --format to force one")


def _mismatch(path: Path, fmt: str, looks: str) -> InputError:
    return InputError(path, f"is not a {fmt} log (it looks like {looks}: drop --format, or pass --format {looks})")


def _check_forced(path: Path, fmt: str, head: str, head_bytes: bytes) -> None:
    """A forced format that its reader's sniff rejects while another's accepts is a mistake worth naming.

    Without this, ``--format tensorboard`` on a trainer_state.json would
    report on TensorBoard records that were never there.
    """
    if READERS[fmt].sniff(path, head):
        return
    if fmt != "tensorboard" and _is_event_file(path, head_bytes):
        raise _mismatch(path, fmt, "tensorboard")
    looks = next((other for other, reader in READERS.items() if other != fmt and reader.sniff(path, head)), None)
    if looks is not None:
        raise _mismatch(path, fmt, looks)


def _stat(path: Path) -> os.stat_result:
    """What a path is (following symlinks); every way it cannot be looked at is an InputError."""
    try:
        return path.stat()
    except (FileNotFoundError, NotADirectoryError):
        raise InputError(path, "does not exist") from None
    except OSError as exc:  # a symlink loop, a name too long, no permission
        raise InputError(path, f"cannot be read: {exc.strerror or exc}") from None
    except ValueError as exc:  # a NUL byte in the name
        raise InputError(path, f"cannot be read: {exc}") from None


def read_run(path: str | Path, fmt: str | None = None, names: Names = DEFAULT_NAMES) -> Run:
    """Read one training log (or the log inside a run directory) into a Run; ``names`` adds the user's ``--map``."""
    path = Path(path)
    info = _stat(path)
    if fmt is not None and fmt not in READERS:
        raise InputError(path, f"unknown format '{fmt}' (known: {', '.join(READERS)})")
    try:
        return _read(path, fmt, info, names)
    except OSError as exc:  # a folder or file that cannot be listed or opened, met while looking inside
        raise InputError(exc.filename or path, f"cannot be read: {exc.strerror or exc}") from None


def _read(path: Path, fmt: str | None, info: os.stat_result, names: Names) -> Run:
    if stat.S_ISDIR(info.st_mode):
        path = find_log(path, fmt)
        if path.is_dir():
            found = "mlflow" if _is_mlflow_run(path) else "tensorboard"
            if fmt is not None and fmt != found and _find_format(path, fmt) is None:
                raise _mismatch(path, fmt, found)
            return READERS[fmt or found].read(path, names=names)
    elif not stat.S_ISREG(info.st_mode):
        raise InputError(path, f"is not a regular file ({special_kind(info.st_mode)}); trainproof reads log files")
    try:
        with path.open("rb") as handle:
            head_bytes = handle.read(SNIFF_BYTES)
    except OSError as exc:
        raise InputError(path, f"cannot be read: {exc.strerror or exc}") from None
    if not head_bytes.strip():
        raise InputError(path, "is empty")
    head = head_bytes.decode("utf-8", errors="replace")
    lfs = _LFS.match(head)
    if lfs:
        raise InputError(
            path,
            f"is a Git LFS pointer (oid sha256:{lfs.group(1)[:12]}..., {int(lfs.group(2)):,} bytes), not the log itself: "
            "fetch the content with 'git lfs pull'",
        )
    if fmt is not None:
        _check_forced(path, fmt, head, head_bytes)
    if b"\x00" in head_bytes[:4096]:
        if fmt is None and _is_event_file(path, head_bytes):
            fmt = "tensorboard"
        elif fmt is None:
            raise InputError(path, "is a binary file, not a training log format trainproof knows")
    return READERS[fmt or detect(path, head)].read(path, names=names)
