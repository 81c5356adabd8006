"""The runs in a folder of runs: ``lightning_logs/version_*/``, ``runs/*/``, ``mlruns/<experiment>/<run>/``, a sweep's tree.

A folder is one run when it holds what :func:`trainproof.runs.readers.find_log`
reads as a run folder's log: a log by its trainer's name (``trainer_state.json``,
``trainer_0_log.txt``, ``metrics.csv``, ``training_log.csv``, ``metrics.jsonl``,
``log.jsonl``), a ``checkpoint-<step>/trainer_state.json`` (an HF output
folder: its checkpoints are one run, not several), an MLflow run's
``metrics/`` (beside its ``meta.yaml``), or TensorBoard event files, in it or
in Keras's ``train/`` and ``validation/`` subfolders. Such a folder is found
once, and nothing under it is searched further: the ``runs/`` event files of
an HF output folder, the ``artifacts/`` of an MLflow run belong to it. In any
other folder, every ``*.jsonl``, ``*.ndjson``, ``*.csv`` or ``*.tsv`` file
whose first bytes read as a metric log is a run of its own: a reader takes
them (a JSON object, a CSV header naming a step, loss or another known
column) and they hold measurements (a CSV's loss column, else numbers beside
steps that never go down; a record's number under a series' name), not only
a ``global_step`` column in a dataset's metadata or a fine-tuning set's
``messages``. A ``*.json`` file is no run (an HF log is read by its name,
``trainer_state.json``), but one whose first bytes look like a log (a reader
takes them, numbers under a step's name at least twice and under a loss's)
is listed as not read, for the report to name; at most JSON_LOOKS are opened.

The search is bounded: folders at most MAX_DEPTH levels below the one named
are searched, at most MAX_FOLDERS of them, and a search finding more than
MAX_RUNS runs is refused. Hidden folders (``.git``, MLflow's ``.trash``),
``__pycache__``, ``node_modules`` and virtual environments (a folder holding
``pyvenv.cfg``) are skipped, and a symlink to a folder is not followed (no
loop, no run found twice); a symlink to a file is read.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from trainproof.io.errors import InputError
from trainproof.runs.readers import BY_SUFFIX, KNOWN_NAMES, LFS_POINTER, READERS, sniffed
from trainproof.runs.readers.base import number_keys
from trainproof.runs.readers.names import DEFAULT_NAMES

MAX_DEPTH = 6
"""Folder levels searched below the folder named: ``mlruns/<experiment>/<run>`` is 2, ``outputs/<sweep>/<trial>/lightning_logs/version_0`` is 4."""
MAX_RUNS = 1000
"""The most runs one folder may hold: judging more in one report is better done a folder at a time."""
MAX_FOLDERS = 20_000
"""The most folders one search lists, so a folder named by mistake (a home folder, ``/``) is refused quickly."""
HEAD_BYTES = 16 * 1024
"""What is read of a ``*.jsonl``, ``*.csv`` or ``*.json`` file to tell whether it is a log (its first records)."""
JSON_LOOKS = 1000
"""The most ``*.json`` files one search opens to tell whether they look like logs; the others are not looked at."""

SKIPPED = frozenset({"__pycache__", "node_modules"})
_NAMES = frozenset(name for name, _ in KNOWN_NAMES)


@dataclass(frozen=True)
class Found:
    """One run: its path relative to the folder searched (POSIX, ``.`` for the folder itself), and what to read."""

    relative: str
    path: Path


@dataclass(frozen=True)
class Search:
    """The runs under one folder, sorted by relative path, and the folders whose subfolders lay too deep to search."""

    root: Path
    runs: tuple[Found, ...]
    not_searched: tuple[str, ...] = ()
    depth: int = MAX_DEPTH
    unread: tuple[str, ...] = ()
    """The ``*.json`` files, relative to ``root`` and sorted, that look like logs but are no run of the search."""
    unread_formats: tuple[str, ...] = ()
    """The readers that take them, sorted."""


def find_runs(root: Path, max_depth: int = MAX_DEPTH, max_runs: int = MAX_RUNS, max_folders: int = MAX_FOLDERS) -> Search:
    """Every run under ``root`` (itself included); an InputError when ``root`` cannot be listed or holds too much.

    A folder below ``root`` that cannot be listed is returned as a run, so
    that judging it says why it cannot be read rather than its runs going
    missing in silence.
    """
    runs: list[Found] = []
    cut: list[str] = []
    unread: dict[str, str] = {}
    looks = JSON_LOOKS
    pending = [(root, 0)]
    listed = 0
    while pending:
        folder, depth = pending.pop()
        listed += 1
        if listed > max_folders:
            raise InputError(root, f"holds more than {max_folders:,} folders within {max_depth} levels: name a narrower folder")
        try:
            runs_here, folders, json_files = _look(folder)
        except OSError as exc:
            if folder == root:
                raise InputError(root, f"cannot be read: {exc.strerror or exc}") from None
            runs_here, folders, json_files = [folder], [], []
        runs.extend(Found(_relative(root, path), path) for path in runs_here)
        for path in json_files[:looks]:
            fmt = _json_log(path)
            if fmt is not None:
                unread[_relative(root, path)] = fmt
        looks = max(0, looks - len(json_files))
        if len(runs) > max_runs:
            raise InputError(root, f"holds more than {max_runs:,} runs (the most one folder may hold): name a narrower folder, or several")
        if depth < max_depth:
            pending.extend((sub, depth + 1) for sub in reversed(folders))
        elif folders:
            cut.append(_relative(root, folder))
    return Search(
        root,
        tuple(sorted(runs, key=lambda found: path_order(found.relative))),
        tuple(sorted(cut, key=path_order)),
        max_depth,
        tuple(sorted(unread, key=path_order)),
        tuple(sorted(set(unread.values()))),
    )


def _look(folder: Path) -> tuple[list[Path], list[Path], list[Path]]:
    """The runs one folder holds (itself, or its log files), its subfolders left to search, and its ``*.json`` files
    (none in a run folder: they belong to the run)."""
    entries = _entries(folder)
    if _is_run_folder(folder, entries):
        return [folder], [], []
    logs = [folder / name for name, is_dir in entries if not is_dir and _is_log_file(folder / name)]
    json_files = [folder / name for name, is_dir in entries if not is_dir and name.endswith(".json")]
    return logs, [folder / name for name, is_dir in entries if is_dir and not _skipped(folder / name)], json_files


def path_order(relative: str) -> list:
    """Path order, a number in a name by its value (``version_2`` before ``version_10``)."""
    return [[int(piece) if i % 2 else piece for i, piece in enumerate(re.split(r"([0-9]+)", part))] for part in relative.split("/")]


def _entries(folder: Path) -> list[tuple[str, bool]]:
    """A folder's visible entries, sorted: each name, and whether it is a folder (a symlink to one is not)."""
    out = []
    with os.scandir(folder) as scan:
        for entry in scan:
            if entry.name.startswith("."):
                continue
            try:
                out.append((entry.name, entry.is_dir(follow_symlinks=False)))
            except OSError:
                continue
    return sorted(out)


def _relative(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix() if path != root else "."


def _skipped(folder: Path) -> bool:
    return folder.name in SKIPPED or (folder / "pyvenv.cfg").is_file()


def _is_run_folder(folder: Path, entries: list[tuple[str, bool]]) -> bool:
    """Does ``folder`` hold one run's log, read with the folder as a whole? A log by its trainer's name, or what a
    reader that knows folder layouts takes for one run (checkpoints, event files, an MLflow run)."""
    if any(not is_dir and name in _NAMES and (folder / name).is_file() for name, is_dir in entries):
        return True
    return any(reader.holds_run(folder, entries) for _, reader in READERS.having("folders"))


def _head(path: Path) -> tuple[str, bool] | None:
    """A regular file's first HEAD_BYTES as text, and whether that is the whole file; None when it is no regular file.
    An OSError when it cannot be opened."""
    if not path.is_file():
        return None
    with path.open("rb") as handle:
        raw = handle.read(HEAD_BYTES)
    return raw.decode("utf-8", errors="replace"), len(raw) < HEAD_BYTES


def _is_log_file(path: Path) -> bool:
    """Is a ``*.jsonl`` or ``*.csv`` file a metric log a reader takes? One that cannot be opened is counted, so judging
    it says why."""
    if path.suffix not in BY_SUFFIX:
        return False
    try:
        read = _head(path)
    except OSError:
        return True
    if read is None:
        return False
    head, whole = read
    if head.startswith(LFS_POINTER):
        return True  # a Git LFS pointer in place of the log: reading it says how to fetch the log
    try:
        fmt = sniffed(path, head)
        return fmt is not None and READERS[fmt].holds_measurements(head, whole)
    except Exception:  # noqa: BLE001 - a sniff that trips on these bytes: judging the file reports it, the search goes on
        return True


def _json_log(path: Path) -> str | None:
    """The reader that takes a ``*.json`` file whose first bytes look like a log's (numbers under a step's or an
    epoch's name at least twice, and under a loss's); None for any other (a model's config.json, a tokenizer.json,
    a manifest of clips, a train_results.json summary), or one that cannot be read."""
    try:
        read = _head(path)
        if read is None:
            return None
        fmt = sniffed(path, read[0])
    except Exception:  # noqa: BLE001 - a file that cannot be read or trips a sniff is only not listed
        return None
    if fmt is None or not READERS.row(fmt).json:
        return None
    keys = number_keys(read[0])
    found = DEFAULT_NAMES.candidates(set(keys))
    axis = {*found.get("step", ()), *found.get("epoch", ())}
    losses = {*found.get("loss", ()), *found.get("eval_loss", ())}
    return fmt if sum(key in axis for key in keys) >= 2 and any(key in losses for key in keys) else None
