"""Log readers behind one registry, and the detection that picks one for a path.

``READERS`` is the whole registry: a new log format is one module with
``name``, ``description``, ``sniff(path, head)`` and ``read(path) -> Run``,
added here. Detection looks at content first (the first 256 KiB), the file
name second.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from trainproof.errors import InputError
from trainproof.model import Run
from trainproof.readers import coqui, csv, hf, jsonl, mlflow, tensorboard
from trainproof.readers.base import Reader

READERS: Mapping[str, Reader] = {
    "hf": hf,
    "coqui": coqui,
    "jsonl": jsonl,
    "csv": csv,
    "tensorboard": tensorboard,
    "mlflow": mlflow,
}

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
_LFS = re.compile(r"^version https://git-lfs\.github\.com/spec/v1\s+oid sha256:([0-9a-f]{64})\s+size (\d+)", re.S)


def find_log(directory: Path) -> Path:
    """The training log inside a run directory, or an InputError naming what was looked for."""
    for filename, _ in KNOWN_NAMES:
        if (directory / filename).is_file():
            return directory / filename
    checkpoints = sorted(
        (p for p in directory.glob("checkpoint-*/trainer_state.json") if p.parent.name[11:].isdigit()),
        key=lambda p: int(p.parent.name[11:]),
    )
    if checkpoints:
        return checkpoints[-1]
    candidates = sorted(p for p in directory.iterdir() if p.is_file() and p.suffix in _BY_SUFFIX)
    if len(candidates) == 1:
        return candidates[0]
    if mlflow.is_run_directory(directory) or tensorboard.event_files(directory):
        return directory  # an MLflow or TensorBoard run directory is read as a whole
    looked = ", ".join(name for name, _ in KNOWN_NAMES)
    if len(candidates) > 1:
        raise InputError(directory, f"holds several candidate logs ({', '.join(p.name for p in candidates[:5])}); name one")
    raise InputError(
        directory, f"is a directory with no training log in it (looked for {looked}, checkpoint-*/trainer_state.json, *.jsonl, *.csv, TensorBoard event files, MLflow metrics/)"
    )


def detect(path: Path, head: str) -> str:
    """The reader name for a file, from its first bytes and then its name."""
    for name, reader in READERS.items():
        if reader.sniff(path, head):
            return name
    for filename, fmt in KNOWN_NAMES:
        if path.name == filename:
            return fmt
    if path.suffix in _BY_SUFFIX:
        return _BY_SUFFIX[path.suffix]
    raise InputError(path, f"is not a training log format trainproof knows ({', '.join(READERS)}); pass --format to force one")


def read_run(path: str | Path, fmt: str | None = None) -> Run:
    """Read one training log (or the log inside a run directory) into a Run."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, "does not exist")
    if fmt is not None and fmt not in READERS:
        raise InputError(path, f"unknown format '{fmt}' (known: {', '.join(READERS)})")
    if path.is_dir():
        path = find_log(path)
        if path.is_dir():
            return READERS[fmt or ("mlflow" if mlflow.is_run_directory(path) else "tensorboard")].read(path)
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
    if b"\x00" in head_bytes[:4096]:
        if fmt is None and tensorboard.sniff_binary(path, head_bytes):
            fmt = "tensorboard"
        elif fmt is None:
            raise InputError(path, "is a binary file, not a training log format trainproof knows")
    return READERS[fmt or detect(path, head)].read(path)
