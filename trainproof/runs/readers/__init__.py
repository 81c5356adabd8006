"""Log readers behind one registry, and the detection that picks one for a path.

``READERS`` is the whole registry: a new log format is one module (the
:class:`~trainproof.runs.readers.base.Reader` protocol: ``name``,
``description``, ``sniff(path, head)``, ``read(path) -> Run`` and what else
its format does: the names a trainer gives it, the suffixes read by content,
a run that is a whole directory) and one row here. Detection, a run
folder's log and the folder search (:mod:`trainproof.runs.readers.discover`)
ask each reader in this order and name no format themselves. A reader's
module is imported when it is first asked for, so judging an HF log imports
no TensorBoard, MLflow or CSV reader.
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
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from trainproof.io.bounded import special_kind
from trainproof.io.errors import InputError
from trainproof.runs.model import Run
from trainproof.runs.readers.base import Reader, ReaderModule
from trainproof.runs.readers.names import DEFAULT_NAMES, Names


@dataclass(frozen=True)
class Format:
    """One row of ``READERS``: a reader module's name, and what is known of its format without importing it."""

    name: str
    file_names: tuple[str, ...] = ()
    """The names a trainer gives this log, in the order a run folder is searched for them."""
    suffixes: tuple[str, ...] = ()
    """The suffixes of a file read by its content alone; a folder search reads every such file that holds a log."""
    json: bool = False
    """The log is JSON: a ``*.json`` file this reader takes may be a log, which a folder search names as not read."""
    folders: bool = False
    """The reader knows folder layouts: a log one level down, a run that is a whole directory (the folder methods)."""
    binary: bool = False
    """The log is binary, told by ``sniff_bytes``."""
    holds: str = ""
    """What else a run folder of this format holds, as an error names what was looked for."""


class _Readers(Mapping[str, Reader]):
    """Format name -> its reader, the module ``trainproof.runs.readers.<name>``, imported on first use."""

    def __init__(self, *rows: Format) -> None:
        self.rows = rows
        self._by_name = {row.name: row for row in rows}
        self._loaded: dict[str, Reader] = {}

    def __getitem__(self, name: str) -> Reader:
        if name not in self._by_name:
            raise KeyError(name)
        if name not in self._loaded:
            self._loaded[name] = cast(Reader, ReaderModule(importlib.import_module(f"{__name__}.{name}")))
        return self._loaded[name]

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def row(self, name: str) -> Format:
        return self._by_name[name]

    def having(self, capability: str) -> Iterator[tuple[str, Reader]]:
        """The readers whose row has ``capability`` (``folders``, ``binary``, ``json``), in order, each imported now."""
        return ((row.name, self[row.name]) for row in self.rows if getattr(row, capability))


READERS = _Readers(
    Format("hf", file_names=("trainer_state.json",), json=True, folders=True, holds="checkpoint-*/trainer_state.json"),
    Format("coqui", file_names=("trainer_0_log.txt",)),
    Format("jsonl", file_names=("metrics.jsonl", "log.jsonl"), suffixes=(".jsonl", ".ndjson"), json=True),
    Format("csv", file_names=("metrics.csv", "training_log.csv"), suffixes=(".csv", ".tsv")),
    Format("mlflow", folders=True, holds="MLflow metrics/"),
    Format("tensorboard", folders=True, binary=True, holds="TensorBoard event files"),
)
"""The readers, in the order their sniffs are tried, their log names looked for and their run directories claimed (an
MLflow run whose artifacts hold event files is an MLflow run)."""

SNIFF_BYTES = 256 * 1024

LFS_POINTER = "version https://git-lfs.github.com/spec/v1"
"""How a Git LFS pointer, left in place of a log not fetched, starts."""
_LFS = re.compile("^" + re.escape(LFS_POINTER) + r"\s+oid sha256:([0-9a-f]{64})\s+size (\d{1,19})(?!\d)", re.S)


KNOWN_NAMES: tuple[tuple[str, str], ...] = tuple((filename, row.name) for row in READERS.rows for filename in row.file_names)
"""The names trainers give their logs, each with its reader, in the order a run folder is searched."""
BY_SUFFIX: Mapping[str, str] = {suffix: row.name for row in READERS.rows for suffix in row.suffixes}
"""The suffixes of a log file read by its content alone (``*.jsonl``, ``*.csv``...), each with its reader."""


def find_log(directory: Path, fmt: str | None = None) -> Path:
    """The training log inside a run directory (or the directory itself, for a format whose run is a whole
    directory), or an InputError naming what was looked for.

    With a format forced, that format's own files are looked for first, so
    ``--format tensorboard`` on an HF output folder reads its event files, not
    its trainer_state.json.
    """
    if fmt is not None and (own := _find_format(directory, fmt)) is not None:
        return own
    for filename, _ in KNOWN_NAMES:
        if (directory / filename).is_file():
            return directory / filename
    nested = next((found for _, reader in READERS.having("folders") if (found := reader.nested_log(directory)) is not None), None)
    if nested is not None:
        return nested
    candidates = _candidates(directory)
    if len(candidates) == 1:
        return candidates[0]
    if run_dir_format(directory) is not None:
        return directory  # a run directory read as a whole (MLflow, TensorBoard)
    if len(candidates) > 1:
        raise InputError(directory, f"holds several candidate logs ({', '.join(p.name for p in candidates[:5])}); name one")
    looked = [name for name, _ in KNOWN_NAMES] + [held for row in READERS.rows for held in (row.holds, *("*" + s for s in row.suffixes)) if held]
    raise InputError(directory, f"is a directory with no training log in it (looked for {', '.join(looked)})")


def run_dir_format(directory: Path) -> str | None:
    """The reader that reads ``directory`` as one run, as a whole; None when none does."""
    return next((fmt for fmt, reader in READERS.having("folders") if reader.is_run_dir(directory)), None)


def _candidates(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.suffix in BY_SUFFIX and p.is_file())


def _find_format(directory: Path, fmt: str) -> Path | None:
    """A run directory's log of one format, or None when it has none."""
    row, reader = READERS.row(fmt), READERS[fmt]
    if row.folders and reader.is_run_dir(directory):
        return directory
    for filename in row.file_names:
        if (directory / filename).is_file():
            return directory / filename
    nested = reader.nested_log(directory) if row.folders else None
    if nested is not None:
        return nested
    candidates = [p for p in _candidates(directory) if p.suffix in row.suffixes]
    return candidates[0] if len(candidates) == 1 else None


def sniffed(path: Path, head: str) -> str | None:
    """The name of the first reader whose sniff takes a file's first bytes; None when none does."""
    return next((name for name, reader in READERS.items() if reader.sniff(path, head)), None)


def sniffed_binary(path: Path, head: bytes) -> str | None:
    """The name of the first reader that takes a binary file's first bytes; None when none does."""
    return next((name for name, reader in READERS.having("binary") if reader.sniff_bytes(path, head)), None)


def detect(path: Path, head: str) -> str:
    """The reader name for a file, from its first bytes and then its name."""
    found = sniffed(path, head)
    if found is not None:
        return found
    for filename, fmt in KNOWN_NAMES:
        if path.name == filename:
            return fmt
    if path.suffix in BY_SUFFIX:
        return BY_SUFFIX[path.suffix]
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
    binary = sniffed_binary(path, head_bytes)
    if binary is not None and binary != fmt:
        raise _mismatch(path, fmt, binary)
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
            found = run_dir_format(path)
            assert found is not None, "find_log returns a directory only when a reader reads it as a whole"
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
    if b"\x00" in head_bytes[:4096] and fmt is None:
        fmt = sniffed_binary(path, head_bytes)
        if fmt is None:
            raise InputError(path, "is a binary file, not a training log format trainproof knows")
    return READERS[fmt or detect(path, head)].read(path, names=names)
