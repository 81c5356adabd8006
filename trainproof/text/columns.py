"""A fine-tuning dataset in Parquet or Arrow read into the same :class:`TextDataset` as its JSON Lines would be.

What ``trainproof text`` takes besides a ``.jsonl`` file:

- a Parquet file (``train.parquet``), or a folder of Parquet shards as the
  Hugging Face Hub lays them out (``data/train-00000-of-00002.parquet``...;
  a dataset repo folder holding ``data/``): the shards of each split, named
  by the part of their name before ``-NNNNN-of-NNNNN``, or by their folder;
- an Arrow file (``.arrow``: the IPC stream ``datasets`` writes, or the IPC
  file format);
- a ``save_to_disk`` folder: a ``Dataset`` (``state.json`` beside its
  ``data-00000-of-00001.arrow`` files) or a ``DatasetDict``
  (``dataset_dict.json``, one such folder per split).

Each split is one dataset, judged and named on its own. Its rows are read a
record batch at a time (BATCH_ROWS), each as the dict a JSON Lines reader
would get, and go through the JSON Lines reader's own row code, so every
rule applies unchanged. A column's null is a missing key (Arrow keeps one
schema for all rows: a row of a ``text`` column beside ``prompt`` and
``completion`` columns has them null). A row is named by its number in its
file (``row 12``, ``row 12 of train-00001-of-00002.parquet``).

pyarrow is imported here only, for these inputs: without it they are a
:class:`MissingDependencyError` naming the ``parquet`` extra.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from trainproof.io.access import ReadPolicy
from trainproof.io.collector import collector_paused
from trainproof.io.errors import InputError, MissingDependencyError
from trainproof.io.splits import split_of, split_rank
from trainproof.text.model import TextDataset

COLUMNAR = (".parquet", ".arrow")
"""The file endings read as columns, not as JSON Lines."""

BATCH_ROWS = 1024
"""Rows turned into Python objects at a time: a batch of long-context rows is some tens of MiB, never the file."""

MAX_FILES = 10_000
"""Most files a folder search lists (a Hub dataset of 10,000 shards is far past any fine-tuning set)."""

_SHARD = re.compile(r"^(?P<split>.+?)-\d{5}-of-\d{5}$")
_HIDDEN = (".", "_")


@dataclass(frozen=True)
class Split:
    """One split of a columnar dataset: its files in order, and its name as a report shows it (a file's path, or the
    glob the Hub's ``data_files`` would write: ``hub/data/train-*.parquet``)."""

    name: str
    files: tuple[str, ...]
    format: str  # "parquet" or "arrow"
    split: str | None = None  # in a dataset of several splits, which (as ``datasets`` infers it: trainproof.io.splits)
    earlier: tuple[Split, ...] = ()  # the splits before it (train before validation before test), for leaks

    def __str__(self) -> str:
        return self.name


def is_columnar(path: str) -> bool:
    """Whether ``path`` is read by this module: a Parquet or Arrow file, or a folder (of shards, or saved by ``datasets``)."""
    return path.lower().endswith(COLUMNAR) or os.path.isdir(path)


def splits(folder: str, follow_links: bool = False) -> tuple[Split, ...]:
    """The splits of a folder, in name order, each with the splits before it (see :func:`_ranked`); an InputError when
    it holds no dataset."""
    listed = os.path.join(folder, "dataset_dict.json")
    if os.path.isfile(listed):
        names = _split_names(listed)
        return _ranked(tuple(s for name in names for s in _saved(os.path.join(folder, name), name)), folder)
    if os.path.isfile(os.path.join(folder, "state.json")):
        return _saved(folder, None)
    return _ranked(_shards(folder), folder)


def _ranked(found: tuple[Split, ...], folder: str) -> tuple[Split, ...]:
    """A dataset's splits, each named as ``datasets`` infers its split from its first file's path and given the splits
    before it (train, then validation, then test: a row in two splits is named in the later one). One split is left
    as it is: it is the whole dataset."""
    if len(found) < 2:
        return found
    named = [replace(s, split=split_of(os.path.relpath(s.files[0], folder))) for s in found]
    return tuple(replace(s, earlier=tuple(o for o in named if split_rank(o.split or "") < split_rank(s.split or ""))) for s in named)


def _shards(folder: str) -> tuple[Split, ...]:
    """The Parquet and Arrow shards of a folder, grouped into splits by name."""
    found = _files(folder)
    if not found:
        raise InputError(
            folder,
            "is a folder with no .parquet or .arrow file, nor a dataset saved by datasets: give the dataset's .jsonl file",
        )
    groups: dict[tuple[str, str], list[str]] = {}
    for path in found:
        relative = os.path.relpath(path, folder)
        stem, ext = os.path.splitext(os.path.basename(path))
        match = _SHARD.match(stem)
        key = (os.path.dirname(relative), (match.group("split") if match else stem) + "\0" + ext.lower())
        groups.setdefault(key, []).append(path)
    out = []
    for (where, named), paths in sorted(groups.items()):
        split, ext = named.split("\0")
        name = paths[0] if len(paths) == 1 else os.path.join(folder, where, f"{split}-*{ext}")
        out.append(Split(name, tuple(sorted(paths)), ext[1:]))
    return tuple(out)


def _files(folder: str) -> list[str]:
    """The Parquet and Arrow files under a folder (``data/`` alone when it has one, as a Hub dataset repo), hidden
    folders and files (``.git``, ``.cache``) left out."""
    root = os.path.join(folder, "data") if os.path.isdir(os.path.join(folder, "data")) else folder
    found: list[str] = []
    for here, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(_HIDDEN))
        found.extend(os.path.join(here, name) for name in sorted(names) if name.lower().endswith(COLUMNAR) and not name.startswith(_HIDDEN))
        if len(found) > MAX_FILES:
            raise InputError(folder, f"holds more than {MAX_FILES:,} Parquet or Arrow files: give one split's folder")
    return found


def _split_names(path: str) -> list[str]:
    try:
        with open(path, "rb") as handle:
            listed = json.loads(handle.read(1024 * 1024))
    except (OSError, ValueError, RecursionError):
        raise InputError(path, "is not the JSON datasets writes beside a DatasetDict (its 'splits')") from None
    names = listed.get("splits") if isinstance(listed, dict) else None
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n and "/" not in n and n not in (".", "..") for n in names):
        raise InputError(path, "names no splits (datasets writes {\"splits\": [\"train\", ...]})")
    return names


def _saved(folder: str, split: str | None) -> tuple[Split, ...]:
    """A folder ``Dataset.save_to_disk`` wrote: its Arrow files as ``state.json`` lists them (else those it holds)."""
    state = os.path.join(folder, "state.json")
    files: list[str] = []
    try:
        with open(state, "rb") as handle:
            listed = json.loads(handle.read(1024 * 1024))
        entries = listed.get("_data_files", []) if isinstance(listed, dict) else []
        for entry in entries if isinstance(entries, list) else []:
            name = entry.get("filename") if isinstance(entry, dict) else None
            if isinstance(name, str) and name.endswith(".arrow") and os.path.basename(name) == name:
                files.append(os.path.join(folder, name))
    except FileNotFoundError:
        if split is not None:
            raise InputError(folder, f"is split {split!r} of the DatasetDict beside it, and has no state.json") from None
    except (OSError, ValueError, RecursionError):
        raise InputError(state, "is not the JSON datasets writes beside a saved Dataset") from None
    if not files:
        files = sorted(str(p) for p in Path(folder).glob("*.arrow"))
    if not files:
        raise InputError(folder, "is a dataset saved by datasets with no .arrow file")
    return (Split(folder if len(files) > 1 or split is not None else files[0], tuple(files), "arrow"),)


# --- reading -------------------------------------------------------------------------


def read_split(source: Split | str, follow_links: bool = False) -> TextDataset:
    """One split (or one Parquet or Arrow file) as a TextDataset; an InputError when a file cannot be read."""
    from trainproof.text.reader import _Reader  # the JSON Lines reader's row code, shared

    split = source if isinstance(source, Split) else Split(str(source), (str(source),), _format_of(str(source)))
    for path in split.files:
        if not os.path.exists(path):
            raise InputError(path, "does not exist")
        if os.path.isdir(path):
            raise InputError(path, "is a folder, not a Parquet or Arrow file")
        refusal = ReadPolicy.for_input(path, follow_links=follow_links).refusal(path)
        if refusal is not None:
            raise InputError(path, refusal)
    pa = _pyarrow()
    reader = _Reader(split.name)
    counted: list[tuple[str, int]] = []
    starts: list[int] = []

    def where(n: int) -> str:
        k = max(i for i, start in enumerate(starts) if start < n)
        row = n - starts[k]
        return f"row {row}" if len(split.files) == 1 else f"row {row} of {os.path.basename(split.files[k])}"

    reader.where = where
    total = 0
    with collector_paused():
        for path in split.files:
            starts.append(total)
            before = total
            for record in _records(pa, path, split.format):
                total += 1
                reader.lines = reader.content = total
                if isinstance(record, dict):
                    reader._record(total, record)
            counted.append((path, total - before))
    if not total:
        raise InputError(split.name, "holds no rows")
    return replace(reader.build(), format=split.format, files=tuple(counted), split=split.split)


def _format_of(path: str) -> str:
    return "arrow" if path.lower().endswith(".arrow") else "parquet"


def _pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.ipc  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise MissingDependencyError("pyarrow", "parquet", "trainproof text", use="to read a Parquet or Arrow dataset") from None
    return pyarrow


def _records(pa: Any, path: str, fmt: str) -> Iterator[object]:
    """Each row of one file as a JSON-like dict (a null is a missing key), a record batch at a time; a column of
    Arrow's JSON type (what ``datasets`` 4+ writes for objects of varying keys: tool calls, mixed messages) parsed."""
    decoders: dict[str, Any] = {}
    read = 0
    for batch in _batches(pa, path, fmt):
        try:
            if not decoders:
                decoders = {f.name: _decoder(pa, f.type) for f in batch.schema}
            batch.validate(full=True)  # damaged offsets would otherwise be read as they are: Arrow trusts its buffers
            records = batch.to_pylist()
        except (pa.ArrowException, ValueError) as exc:  # UnicodeDecodeError too: a string column that is not UTF-8
            raise InputError(path, f"cannot be read past row {read:,}: its rows {read + 1:,} to {read + batch.num_rows:,} are damaged ({_said(exc)})") from None
        read += batch.num_rows
        for record in records:
            for name, decode in decoders.items():
                if decode is not None and record.get(name) is not None:
                    record[name] = decode(record[name])
            yield _unnulled(record)


def _decoder(pa: Any, kind: Any) -> Any:
    """How to turn a value of Arrow type ``kind`` as ``to_pylist`` gives it into JSON data: None when it is already."""
    if getattr(kind, "extension_name", None) == "arrow.json":
        return _parsed
    if isinstance(kind, (pa.ListType, pa.LargeListType, pa.FixedSizeListType)):
        inner = _decoder(pa, kind.value_type)
        return None if inner is None else (lambda values: [None if v is None else inner(v) for v in values])
    if isinstance(kind, pa.StructType):
        fields = {kind.field(i).name: _decoder(pa, kind.field(i).type) for i in range(kind.num_fields)}
        fields = {name: decode for name, decode in fields.items() if decode is not None}
        if not fields:
            return None
        return lambda value: {k: (fields[k](v) if k in fields and v is not None else v) for k, v in value.items()}
    return None


def _parsed(text: object) -> object:
    """A JSON value Arrow keeps as text; text that is not JSON stays text (the row's rules then name it)."""
    if not isinstance(text, (str, bytes)):
        return text
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def _batches(pa: Any, path: str, fmt: str) -> Iterator[Any]:
    """The file's record batches; an InputError saying what the file is when pyarrow cannot read it."""
    rows = 0
    try:
        if fmt == "parquet":
            try:
                parquet = pa.parquet.ParquetFile(path)
            except (pa.ArrowException, OSError, ValueError) as exc:
                raise InputError(path, f"is not a Parquet file, or its footer is cut short ({_said(exc)})") from None
            batches: Iterator[Any] = parquet.iter_batches(batch_size=BATCH_ROWS)
        else:
            batches = _arrow_batches(pa, path)
        for batch in batches:
            rows += batch.num_rows
            yield batch
    except InputError:
        raise
    except (pa.ArrowException, OSError, ValueError, EOFError) as exc:
        kind = "Parquet" if fmt == "parquet" else "Arrow"
        raise InputError(path, f"cannot be read as {kind} past row {rows:,} (cut short, or damaged: {_said(exc)})") from None


def _arrow_batches(pa: Any, path: str) -> Iterator[Any]:
    """An Arrow IPC stream (what ``datasets`` writes), else an IPC file. Read, not memory-mapped: a mapped file cut
    short while it is read kills the process (SIGBUS)."""
    with pa.OSFile(path) as source:
        try:
            reader = pa.ipc.open_stream(source)
        except (pa.ArrowException, OSError, ValueError):
            reader = None
        if reader is not None:
            yield from reader
            return
    with pa.OSFile(path) as source:
        try:
            whole = pa.ipc.open_file(source)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise InputError(path, f"is not an Arrow file (IPC stream or file format), or is cut short ({_said(exc)})") from None
        yield from (whole.get_batch(i) for i in range(whole.num_record_batches))


def _said(exc: BaseException) -> str:
    from trainproof.io.safe import quoted

    return quoted(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__, 120)


def _unnulled(value: object) -> object:
    """A value from Arrow with every null dict entry dropped (Arrow cannot tell a missing key from a null)."""
    if isinstance(value, dict):
        return {k: _unnulled(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_unnulled(v) for v in value]
    return value


def first_files(items: Sequence[Split]) -> list[str]:
    """Every file the splits read (for the outputs a run must not overwrite)."""
    return [path for split in items for path in split.files]
