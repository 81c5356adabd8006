"""Speech datasets as the Hugging Face Hub and ``datasets`` keep them: Parquet shards, ``save_to_disk`` Arrow folders,
and ``audiofolder`` folders.

- ``parquet``: a ``.parquet`` file, or a folder holding Parquet shards
  anywhere below it (the Hub's ``data/train-00000-of-00004.parquet``, the
  Parquet conversion's ``<config>/<split>/0000.parquet``).
- ``arrow``: a ``save_to_disk`` folder (``state.json`` and its
  ``data-00000-of-00001.arrow`` shards; a ``DatasetDict``'s
  ``dataset_dict.json`` and one such folder per split), or one ``.arrow``
  file.
- ``audiofolder``: a folder with a ``metadata.jsonl`` or ``metadata.csv``
  naming each clip in a ``file_name`` column, at its top or in each split's
  folder; ``file_name`` is relative to the metadata file's folder, as
  ``datasets`` reads it.

A shard's audio column is the one its ``huggingface`` schema metadata calls
an ``Audio`` feature, else the first column of ``{"bytes", "path"}``
structs, else a binary column or a column of paths named as in AUDIO_KEYS
(``--audio-column`` names it instead); the transcript, speaker, id and
duration columns are found as in every layout. A row's audio is its bytes
when it holds them (decoded from memory where the clip is analysed, cached by
their hash: :class:`~trainproof.data.model.Blob`), else its path, opened as
``datasets`` opens it (from the working directory, as written). A row is at
its 1-based row number in its shard, the shard being the "manifest" a
finding names.

Each shard's split is what ``datasets`` infers from its path: the first of
its folder and file names' words that names a split (``train``,
``validation``/``valid``/``val``/``dev``, ``test``/``eval``), else the part of
its file name before ``-00000-of-00004``, else ``train``. A dataset of
several splits is judged as one, each clip's split kept
(:attr:`~trainproof.data.model.Manifest.splits`), so clips shared between
splits are found.

Shards are read a record batch at a time (BATCH_ROWS rows), never whole. A
shard that cannot be read (a truncated footer, bytes that are not Parquet)
is an InputError when it is the dataset named, else a problem at that shard,
the other shards read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import replace
from typing import Any, NamedTuple

from trainproof.data.blobs import BATCH_ROWS
from trainproof.data.layouts.shared import (
    AUDIO_KEYS,
    DURATION_KEYS,
    ID_KEYS,
    SPEAKER_KEYS,
    TEXT_KEYS,
    _Builder,
    _Context,
    _first_key,
    _PathResolver,
    _quote,
    _require_named,
)
from trainproof.data.model import Blob, Entry
from trainproof.io.errors import InputError, MissingDependencyError
from trainproof.io.splits import split_of, split_rank

PARQUET_SUFFIX, ARROW_SUFFIX = ".parquet", ".arrow"
METADATA_NAMES = ("metadata.jsonl", "metadata.csv")
MAX_SHARDS = 100_000
"""The most shards a dataset folder is searched for (a folder holding more is not a dataset trainproof reads)."""

def detect(path: str) -> tuple[str, str] | None:
    """(layout, target) when ``path`` is a dataset of one of these layouts, else None."""
    if os.path.isfile(path):
        if path.endswith(PARQUET_SUFFIX):
            return "parquet", path
        if path.endswith(ARROW_SUFFIX):
            return "arrow", path
        return None
    if not os.path.isdir(path):
        return None
    if _is_file(path, "dataset_dict.json") or _is_file(path, "state.json"):
        return "arrow", path
    if audiofolder_metadata(path):
        return "audiofolder", path
    if next(_files_below(path, (PARQUET_SUFFIX,)), None) is not None:
        return "parquet", path
    return None


# --- Parquet and Arrow ---------------------------------------------------------------------------------------------


def read_parquet(target: str, ctx: _Context, builder: _Builder) -> None:
    pa = _pyarrow()
    import pyarrow.parquet as pq

    root = os.path.dirname(target) if os.path.isfile(target) else target
    if os.path.isfile(target):
        shards = [(target, "train")]
    else:
        shards = sorted(((shard, split_of(os.path.relpath(shard, root))) for shard in _files_below(target, (PARQUET_SUFFIX,))), key=_split_order)
    for shard, split in shards:
        try:
            reader = pq.ParquetFile(shard)
            schema = reader.schema_arrow
        except (pa.ArrowException, OSError, ValueError) as exc:
            _unreadable(shard, target, builder, exc, "Parquet")
            continue

        def batches(audio: str, columns: list[str], reader: Any = reader) -> Iterator[tuple[int, Any, _Audio]]:
            for group in range(reader.num_row_groups):
                unread = _bytes_unread(reader, group, audio, bool(columns))
                audio_columns = [audio] if unread is None else unread[0]
                for batch in reader.iter_batches(batch_size=BATCH_ROWS, row_groups=[group], columns=[*audio_columns, *columns]):
                    column = batch.column(audio) if audio_columns else None
                    yield group, batch, _audio_of(column, batch.num_rows, None if unread is None else unread[1])

        _read_shard(shard, schema, batches, "parquet", split, ctx, builder, target)


def _bytes_unread(reader: Any, group: int, audio: str, others: bool) -> tuple[list[str], int] | None:
    """For a row group whose statistics say every row holds audio bytes: the audio columns to read instead of the
    bytes (its ``path``, if it has one) and the bytes' mean length. None when the bytes must be read to know which rows
    hold any (no statistics, some null, or a column of paths), or to have a column to read at all (no ``path``, and no
    ``others`` columns wanted)."""
    metadata = reader.metadata.row_group(group)
    rows = metadata.num_rows
    leaves = {metadata.column(j).path_in_schema: metadata.column(j) for j in range(metadata.num_columns)}
    held = leaves.get(f"{audio}.bytes") or leaves.get(audio)
    kind = reader.schema_arrow.field(audio).type
    if held is None or not rows or not _is_binary(kind):
        return None
    statistics = held.statistics
    if statistics is None or not statistics.has_null_count or statistics.null_count:
        return None
    paths = [f"{audio}.path"] if f"{audio}.path" in leaves else []
    if not paths and not others:
        return None
    return paths, max(1, held.total_uncompressed_size // rows)


def _is_binary(kind: Any) -> bool:
    """Whether an audio column's type holds bytes: a binary column, or a struct with a binary ``bytes`` field."""
    import pyarrow as pa

    if pa.types.is_struct(kind):
        index = kind.get_field_index("bytes")
        return index >= 0 and _is_binary(kind.field(index).type)
    return bool(pa.types.is_binary(kind) or pa.types.is_large_binary(kind))


def _split_order(shard: tuple[str, str]) -> tuple[int, str, str]:
    """Train first, then validation, then test, then any other split (by name): a clip shared by two splits is found
    in the later one, the split it leaked into."""
    path, split = shard
    return (*split_rank(split), path)


def read_arrow(target: str, ctx: _Context, builder: _Builder) -> None:
    _pyarrow()
    for shard, split in sorted(_arrow_shards(target), key=_split_order):
        _read_arrow_shard(shard, split, ctx, builder, target)


def _read_arrow_shard(shard: str, split: str, ctx: _Context, builder: _Builder, target: str) -> None:
    pa = _pyarrow()
    try:
        source = pa.memory_map(shard)
        try:
            reader = pa.ipc.open_file(source)
            schema = reader.schema
            count = reader.num_record_batches

            def batches(audio: str, columns: list[str]) -> Iterator[tuple[int, Any, _Audio]]:
                for index in range(count):
                    batch = reader.get_batch(index)
                    yield index, batch.select(columns), _audio_of(batch.column(audio), batch.num_rows)

        except pa.ArrowInvalid:
            source.seek(0)
            stream = pa.ipc.open_stream(source)
            schema = stream.schema

            def batches(audio: str, columns: list[str]) -> Iterator[tuple[int, Any, _Audio]]:
                for index, batch in enumerate(stream):
                    yield index, batch.select(columns), _audio_of(batch.column(audio), batch.num_rows)

    except (pa.ArrowException, OSError, ValueError) as exc:
        _unreadable(shard, target, builder, exc, "Arrow")
        return
    _read_shard(shard, schema, batches, "arrow", split, ctx, builder, target)


def _arrow_shards(target: str) -> list[tuple[str, str]]:
    """The Arrow files of a ``save_to_disk`` folder (or the one named), each with its split."""
    if os.path.isfile(target):
        return [(target, "train")]
    if _is_file(target, "dataset_dict.json"):
        splits = _json(os.path.join(target, "dataset_dict.json"), target).get("splits")
        if not isinstance(splits, list) or not all(isinstance(s, str) for s in splits):
            raise InputError(os.path.join(target, "dataset_dict.json"), "does not list the dataset's splits ('splits')")
        out: list[tuple[str, str]] = []
        for split in splits:
            folder = os.path.join(target, split)
            out.extend((shard, split) for shard, _ in _arrow_shards_of(folder, split))
        return out
    return _arrow_shards_of(target, None)


def _arrow_shards_of(folder: str, split: str | None) -> list[tuple[str, str]]:
    state_path = os.path.join(folder, "state.json")
    state = _json(state_path, folder)
    files = state.get("_data_files")
    if not isinstance(files, list) or not all(isinstance(f, dict) and isinstance(f.get("filename"), str) for f in files):
        raise InputError(state_path, "does not list the dataset's Arrow files ('_data_files')")
    named = split or state.get("_split") or "train"
    shards = []
    for entry in files:
        name = entry["filename"]
        if os.path.isabs(name) or ".." in name.replace("\\", "/").split("/"):
            raise InputError(state_path, f"names an Arrow file outside its folder: {_quote(name)}")
        shards.append((os.path.join(folder, name), str(named)))
    return shards


def _read_shard(shard: str, schema: Any, batches: Any, kind: str, split: str, ctx: _Context, builder: _Builder, target: str) -> None:
    """Every row of one shard as an entry (see the module doc). ``batches(audio, columns)`` yields each record batch's
    (group, batch of ``columns``, its audio column as :class:`_Audio`)."""
    pa = _pyarrow()

    names = list(schema.names)
    _require_named(shard, ctx, names, "column")
    lower = {name.strip().lower(): name for name in reversed(names)}
    audio = _audio_column(schema, ctx, lower)
    if audio is None:
        builder.problem("no-audio-field", f"has no audio column (an Audio feature, or a column named {', '.join(AUDIO_KEYS[:6])}, ...)", shard)
        return
    found = {what: ctx_named or _first_key(lower, keys) for what, ctx_named, keys in (
        ("text", ctx.text_column, TEXT_KEYS), ("speaker", None, SPEAKER_KEYS), ("id", None, ID_KEYS), ("duration", None, DURATION_KEYS),
    )}  # fmt: skip
    columns = {what: lower[name] for what, name in found.items() if name is not None and lower.get(name) != audio}
    resolve = _PathResolver(shard, ctx)
    relative = os.path.relpath(shard, target) if os.path.isdir(target) else os.path.basename(shard)
    number = 0
    current, start = -1, 0  # the row group (or record batch) being read, and the rows of the shard before it
    try:
        for group, batch, held in batches(audio, list(columns.values())):
            if group != current:
                current, start = group, number
            values = {what: batch.column(name).to_pylist() for what, name in columns.items()}
            for k in range(held.rows):
                number += 1
                fields = {what: column[k] for what, column in values.items()}
                path = held.paths[k]
                name = path if isinstance(path, str) and path else None
                blob = None
                if held.sizes[k] is not None:
                    blob = Blob(kind, shard, group, number - 1 - start, audio, held.sizes[k], estimated=held.estimated)
                elif name is None:
                    builder.problem("no-audio-field", f"row {number}: {_quote(audio, 40)} holds neither bytes nor a path", shard, number)
                    continue
                if blob is not None:
                    builder.blobs[len(builder.entries)] = blob
                builder.splits.append(split)
                builder.add(_entry(shard, relative, number, fields, name, blob is not None, resolve))
    except (pa.ArrowException, OSError, ValueError) as exc:
        builder.problem("unparsable", f"row {number + 1} onwards cannot be read: {_said(exc)}", shard, number + 1)
    builder.bases = resolve.bases


class _Audio(NamedTuple):
    """A record batch's audio column, row by row: the length of the bytes each row holds (None: none), each row's
    path (None: none), and whether the lengths are the row group's mean (the bytes were not read)."""

    rows: int
    sizes: list[int | None]
    paths: list[str | None]
    estimated: bool = False


def _audio_of(column: Any, rows: int, mean_size: int | None = None) -> _Audio:
    """The :class:`_Audio` of a batch's audio column: an ``Audio`` struct, a binary column or a column of paths. With
    ``mean_size``, the bytes were left unread (every row holds some: see :func:`_bytes_unread`) and ``column`` is the
    struct's ``path`` alone, or None."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if mean_size is not None:
        paths = column.flatten()[0].to_pylist() if column is not None else [None] * rows
        return _Audio(rows, [mean_size] * rows, paths, estimated=True)
    kind = column.type
    if pa.types.is_struct(kind):
        parts = dict(zip((kind.field(j).name for j in range(kind.num_fields)), column.flatten()))  # the struct's nulls applied
        held, named = parts.get("bytes"), parts.get("path")
        sizes = pc.binary_length(held).to_pylist() if held is not None and _is_binary(held.type) else [None] * rows
        paths = named.to_pylist() if named is not None else [None] * rows
        return _Audio(rows, sizes, paths)
    if _is_binary(kind):
        return _Audio(rows, pc.binary_length(column).to_pylist(), [None] * rows)
    return _Audio(rows, [None] * rows, column.to_pylist())


def _entry(shard: str, relative: str, number: int, fields: dict[str, Any], name: str | None, held: bool, resolve: Any) -> Entry:
    """Row ``number``'s entry: its bytes, at ``shard[number]``, when it ``held`` any, else the clip its path names."""
    text, speaker, ident, duration = (fields.get(what) for what in ("text", "speaker", "id", "duration"))
    if held:
        where, listed = f"{shard}[{number}]", name or f"row {number}"
    else:
        where, listed = resolve(name), name or ""
    return Entry.of_values(
        line=number,
        id=str(ident) if ident not in (None, "") else f"{relative}:{number}",
        audio=where,
        listed=listed,
        text=None if text is None else str(text),
        manifest=shard,
        duration=float(duration) if isinstance(duration, (int, float)) and not isinstance(duration, bool) else None,
        offset=None,
        speaker=None if speaker in (None, "") else str(speaker),
    )


def _audio_column(schema: Any, ctx: _Context, lower: dict[str, str]) -> str | None:
    import pyarrow as pa

    if ctx.audio_column is not None:
        return lower.get(ctx.audio_column)
    features = _features(schema)
    for name in schema.names:
        if isinstance(features.get(name), dict) and features[name].get("_type") == "Audio":
            return name
    for name in schema.names:
        kind = schema.field(name).type
        if pa.types.is_struct(kind) and kind.get_field_index("bytes") >= 0:
            return name
    for name in schema.names:
        kind = schema.field(name).type
        if (pa.types.is_binary(kind) or pa.types.is_large_binary(kind)) and name.lower() in AUDIO_KEYS:
            return name
    named = _first_key(lower, AUDIO_KEYS)
    return lower[named] if named is not None else None


def _features(schema: Any) -> dict[str, Any]:
    """The ``datasets`` features a shard's schema metadata names (column -> its feature), or none."""
    try:
        info = json.loads((schema.metadata or {}).get(b"huggingface", b"{}"))
        features = info.get("info", {}).get("features", {})
    except (ValueError, AttributeError):
        return {}
    return features if isinstance(features, dict) else {}


# --- audiofolder -----------------------------------------------------------------------------------------------------


def read_audiofolder(target: str, ctx: _Context, builder: _Builder) -> None:
    """Each metadata file's rows, read as a CSV or JSON Lines manifest whose paths are relative to its folder."""
    from trainproof.data.layouts.delimited import _read_csv
    from trainproof.data.layouts.nemo import _read_nemo

    found = [(metadata, split_of(os.path.relpath(metadata, target))) for metadata in audiofolder_metadata(target)]
    for metadata, _ in sorted(found, key=_split_order):
        folder = os.path.dirname(metadata)
        read = _read_nemo if metadata.endswith(".jsonl") else _read_csv
        part = _Builder(builder.layout)
        read(metadata, replace(ctx, root=folder, audio_column=ctx.audio_column or "file_name"), part)
        manifest = part.build(metadata)
        for entry in manifest.entries:
            builder.splits.append(split_of(os.path.relpath(entry.audio, target)))
            builder.entries.append(entry)  # its ids and transcripts were checked within its metadata file
        builder.problems.extend(manifest.problems)
        builder.notes.extend(manifest.notes)


def audiofolder_metadata(folder: str) -> list[str]:
    """The metadata files of an audiofolder: at its top, else one in each folder below it (its splits)."""
    top = [os.path.join(folder, name) for name in METADATA_NAMES if _is_file(folder, name) and _names_file_name(os.path.join(folder, name))]
    if top:
        return top[:1]
    found = []
    try:
        subfolders = sorted(entry.path for entry in os.scandir(folder) if entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."))
    except OSError:
        return []
    for sub in subfolders:
        for name in METADATA_NAMES:
            path = os.path.join(sub, name)
            if _is_file(sub, name) and _names_file_name(path):
                found.append(path)
                break
    return found


def _names_file_name(path: str) -> bool:
    """Whether a metadata file's first line names a ``file_name`` column (a CSV header, or a JSON record's key). A link
    is not read here: the layout it then is (an LJSpeech ``metadata.csv``) reads it under the read policy."""
    if os.path.islink(path):
        return False
    try:
        with open(path, "rb") as handle:
            first = handle.readline(64 * 1024).decode("utf-8", "replace").lstrip("\ufeff")
    except OSError:
        return False
    if path.endswith(".jsonl"):
        try:
            record = json.loads(first)
        except ValueError:
            return False
        return isinstance(record, dict) and "file_name" in record
    return "file_name" in [cell.strip().strip('"') for cell in first.split(",")]


# --- shared ----------------------------------------------------------------------------------------------------------


def _pyarrow() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise MissingDependencyError("pyarrow", "data", "reading Parquet and Arrow datasets") from None
    return pa


def _unreadable(shard: str, target: str, builder: _Builder, exc: BaseException, what: str) -> None:
    if shard == target:
        raise InputError(shard, f"is not a {what} file trainproof can read: {_said(exc)}")
    builder.problem("unparsable", f"is not a {what} file trainproof can read: {_said(exc)}", shard)


def _said(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:200] if text else type(exc).__name__


def _json(path: str, where: str) -> dict:
    try:
        with open(path, "rb") as handle:
            value = json.loads(handle.read(1024 * 1024))
    except (OSError, ValueError) as exc:
        raise InputError(path, f"cannot be read as JSON: {_said(exc)}") from None
    if not isinstance(value, dict):
        raise InputError(path, "is not a JSON object")
    return value


def _is_file(folder: str, name: str) -> bool:
    return os.path.isfile(os.path.join(folder, name))


def _files_below(folder: str, suffixes: tuple[str, ...]) -> Iterator[str]:
    """The files below ``folder`` ending in one of ``suffixes`` (not in hidden folders, no link followed), at most
    MAX_SHARDS."""
    seen = 0
    for top, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.endswith(suffixes) and not name.startswith("."):
                seen += 1
                if seen > MAX_SHARDS:
                    raise InputError(folder, f"holds more than {MAX_SHARDS:,} shards")
                yield os.path.join(top, name)
