"""NeMo JSON Lines manifests: ``audio_filepath``, ``text``, ``duration`` (and ``offset``, ``speaker``) a line, read as
columns by Arrow when plain, else line by line."""


from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from trainproof.data.layouts.shared import (
    _POSIX,
    ID_KEYS,
    SPEAKER_KEYS,
    _Builder,
    _check_text,
    _Columns,
    _content_lines,
    _Context,
    _lines,
    _PathResolver,
    _record,
    _require_named,
)
from trainproof.io.bounded import MAX_LINE_BYTES, open_log, read_block


def _read_nemo(path: str, ctx: _Context, builder: _Builder) -> None:
    _check_text(path)
    document = _one_document(path)
    if document is not None:
        number, what = document
        builder.problem("unparsable", f"is {what}, not JSON Lines: NeMo reads one JSON object per line", path, number)
        return
    resolve = _PathResolver(path, ctx)
    if _read_nemo_columns(path, ctx, resolve, builder):
        resolve.settle(builder)
        builder.choice_notes("key")
        return
    known: dict[tuple[str, ...], tuple[_Columns, bool]] = {}  # the columns of each set of keys seen (records mostly share one)
    keys: dict[str, str] = {}  # every key seen, in lower case -> as first written (for an option naming none of them)
    for number, text in _lines(path, builder):
        try:
            record = _loads(text)
        except json.JSONDecodeError as exc:
            builder.problem("unparsable", f"line {number} is not valid JSON: {exc.msg} at column {exc.colno}", path, number)
            continue
        except (ValueError, RecursionError):
            builder.problem(
                "unparsable", f"line {number} is not JSON a reader can parse (nested too deeply, or a number too long)", path, number
            )
            continue
        if not isinstance(record, dict):
            builder.problem("unparsable", f"line {number} is a JSON {type(record).__name__}, not an object", path, number)
            continue
        raw = tuple(record)
        found = known.get(raw)
        if found is None:
            folded = any(key != key.lower() for key in raw)
            names = tuple(_folded(record)) if folded else raw
            found = (_Columns.of(names, ctx), folded)
            builder.saw_names(names, ctx)
            if len(keys) < MAX_KEYS_SEEN:
                keys.update((key.lower(), key) for key in raw if key.lower() not in keys)
            if len(known) < 1024:  # bounded, should every line have keys of its own
                known[raw] = found
        columns, folded = found
        record = _exactly(record, text)
        _record(_folded(record) if folded else record, columns, number, path, resolve, builder)
    if keys or builder.entries:
        _require_named(path, ctx, list(keys.values()), "key")
    resolve.settle(builder)
    builder.choice_notes("key")


MAX_KEYS_SEEN = 10_000
"""The most distinct keys of a JSONL manifest's records remembered, to say which there are when an option names none."""


COLUMNAR_MAX_BYTES = 32 * 1024 * 1024
"""The largest NeMo manifest :func:`_read_nemo_columns` reads whole (with its text and its columns, a few times this in
memory); a larger one is read line by line, in bounded memory."""


_CONTROL_BUT_NEWLINE = bytes(1 if byte < 0x20 and byte != 0x0A else 0 for byte in range(256))
"""A translation that marks every control byte but the newline: a CR, a tab or a NUL, raw, which only the line reading
judges (Arrow's parser and Python's json need not agree on one inside a string)."""


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
"""An escaped surrogate: a lone one is kept as Python's json keeps it, where Arrow refuses it."""


COLUMNAR_MAX_OPENERS = 256
"""The most ``[`` and ``{`` one line may hold (inside strings too) for Arrow to parse the manifest: its parser recurses
per level of nesting, costs time quadratic in the depth (10,000 levels: 70 s) and overflows the stack (50,000: a
segfault, nothing printed). A count bounds the depth whatever strings hold; a line over it sends the file to the line
reading, which refuses a line nested past the parsers' limits as unparsable."""


COLUMNAR_BYTES_PER_MARK = 8
"""Bytes of the manifest per line end and per ``[`` or ``{``, at least, for Arrow to parse it (a plain NeMo line has
one ``{`` in a hundred bytes or more): the screen holds an 8-byte index of each (two of each opener), so a file of
denser marks (``{}`` lines, bracket runs) would cost it several times its size; it goes to the line reading."""


COLUMNAR_SAMPLE_LINES = 64
"""Lines whose fields Arrow infers first (whole lines, at most COLUMNAR_SAMPLE_BYTES of them): the rest of the manifest
is parsed with exactly those fields, and a line with a field of its own sends the file to the line reading."""


COLUMNAR_SAMPLE_BYTES = 16 * 1024
"""Bytes of the lines whose fields Arrow infers first, at most; a first line longer than this (a plain NeMo line is a
few hundred bytes) sends the file to the line reading. Bounds what inference itself may cost: each object of the
sample gets a value for each field of the sample, and both are bounded by its bytes."""


COLUMNAR_BYTES_PER_FIELD = 4
"""Bytes of the manifest per value Arrow would fill, at least, for Arrow to parse it: every JSON object (each ``{``)
gets a value, or a null, for every field of the widest object of the sampled lines, and a field present holds at
least this much (``"k":0``). A file under it is mostly objects without those fields, whose nulls Arrow allocates one
by one (a new key a line: 20,000 lines, 1.7 MB, took 3.4 GB). Bounds Arrow's values to a quarter of the file's bytes."""


def _read_nemo_columns(path: str, ctx: _Context, resolve: Callable[[str], str], builder: _Builder) -> bool:
    """Every entry of a plain NeMo manifest at once, as columns, parsed by Arrow's JSON reader: True when it was.

    False, having changed nothing, for a manifest the line reading has
    something to say about, or that Arrow and Python's json might read
    apart: a BOM, a CR, a blank line, bytes that are not UTF-8, a raw
    control character, an escaped surrogate, a line that is not one object
    (Arrow refuses it, or counts rows and lines apart), keys not in lower
    case, two names for a speaker or an id, a path or transcript that is
    missing, empty or not a string, a duration that is not a finite
    non-negative number, an id or speaker that is not a string, an offset,
    an id listed twice; when pyarrow is not installed; and for a file that could make Arrow
    crash, stall or take GBs (deep nesting, a field of its own on a later
    line: see :func:`_arrow_table`, which screens it before Arrow parses
    it). The entries are those the line reading
    gives (a test holds the two to that), without an object a line. A file
    larger than COLUMNAR_MAX_BYTES is read a block at a time
    (:func:`_read_nemo_blocks`).
    """
    try:
        size = os.path.getsize(path)
        if size <= 0:
            return False
        import pyarrow as pa
        import pyarrow.json as pa_json
    except (OSError, ImportError):
        return False
    if size > COLUMNAR_MAX_BYTES:
        return _read_nemo_blocks(path, ctx, resolve, builder, pa, pa_json)
    with open_log(Path(path)) as handle:
        data = read_block(handle, COLUMNAR_MAX_BYTES + 1, path)
    parsed = _parsed(data, True, pa, pa_json)
    del data
    if parsed is None:
        return False
    table, lines = parsed
    try:
        return _columns_of_table(table, lines, path, ctx, resolve, builder)
    finally:
        del table
        release = getattr(pa.default_memory_pool(), "release_unused", None)  # pyarrow 9 and later
        if release is not None:
            release()  # the parsed file's buffers, a few times its size: returned, not kept by the pool


def _arrow_table(data: bytes, lines: int, pa: Any, pa_json: Any, schema: Any = None) -> Any:
    """The manifest ``data`` (``lines`` lines) parsed by Arrow, or None where it is refused before Arrow sees it all:
    line ends and brackets denser than COLUMNAR_BYTES_PER_MARK, a line with more than COLUMNAR_MAX_OPENERS ``[`` or
    ``{``, a first line over COLUMNAR_SAMPLE_BYTES, or objects too wide for the file's size (COLUMNAR_BYTES_PER_FIELD).
    The first lines are parsed first; the rest is parsed with exactly their fields (a whole number widened to float,
    as inference does when a later line has a fraction): a line with another field, or a value of another type, is an
    error, and the line reading takes the file. With ``schema`` (a later block of a large manifest: see
    :func:`_read_nemo_blocks`), every line is parsed with exactly those fields. The screen is vectorised (numpy over
    the bytes): about 3 ms of the 20,000 lines of benchmarks/bench_data.py, whose columnar reading takes about 20."""
    import numpy as np

    raw = np.frombuffer(data, dtype=np.uint8)
    is_opener = (raw | 0x20) == 0x7B  # "[" or "{": 0x5B and 0x7B are the only bytes this maps to 0x7B
    if (lines + int(np.count_nonzero(is_opener))) * COLUMNAR_BYTES_PER_MARK > len(data):
        return None
    openers = np.flatnonzero(is_opener)
    del is_opener
    ends = np.flatnonzero(raw == 0x0A)  # the index of each line's newline
    if openers.size > COLUMNAR_MAX_OPENERS:
        line = np.searchsorted(ends, openers)  # the line of each opener, in order
        if bool(np.any(line[COLUMNAR_MAX_OPENERS:] == line[:-COLUMNAR_MAX_OPENERS])):  # one more than the most on a line
            return None
    buffer = pa.py_buffer(data)
    options = pa_json.ReadOptions(block_size=MAX_LINE_BYTES)
    objects = int(np.count_nonzero(raw[openers] == 0x7B))
    if schema is None:
        sampled = min(COLUMNAR_SAMPLE_LINES, int(np.searchsorted(ends, COLUMNAR_SAMPLE_BYTES)))  # whole lines in the bytes
        cut = int(ends[sampled - 1]) + 1 if sampled else len(data)
        if cut > COLUMNAR_SAMPLE_BYTES:
            return None  # a first line longer than the sample may be
        sample = pa_json.read_json(pa.BufferReader(buffer.slice(0, cut)), read_options=options)
        if objects * _widest_object(sample.schema, pa) * COLUMNAR_BYTES_PER_FIELD > len(data):
            return None
        if cut == len(data):
            return sample
        schema = _widened(sample.schema, pa)
    elif objects * _widest_object(schema, pa) * COLUMNAR_BYTES_PER_FIELD > len(data):
        return None
    parse = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error")
    return pa_json.read_json(pa.BufferReader(buffer), read_options=options, parse_options=parse)


def _widened(schema: Any, pa: Any) -> Any:
    """The fields of ``schema`` with every whole-number field a float (as inference makes it when a later line has a
    fraction)."""
    return pa.schema([f.with_type(pa.float64()) if pa.types.is_integer(f.type) else f for f in schema])


def _widest_object(schema: Any, pa: Any) -> int:
    """The most values one JSON object makes Arrow fill under ``schema``: of every object type (a record, or the
    elements of a list), its fields and those of the objects within them, each filled (or null) with it. A list's
    elements are values of their own, each object among them counted with its ``{``."""
    widest, objects = 0, [list(schema)]
    while objects:
        fields, values = objects.pop(), 0
        while fields:
            kind = fields.pop().type
            values += 1
            if pa.types.is_struct(kind):
                fields.extend(kind.field(i) for i in range(kind.num_fields))
                continue
            while hasattr(kind, "value_type"):  # a list (of lists ...)
                kind = kind.value_type
            if pa.types.is_struct(kind):
                objects.append([kind.field(i) for i in range(kind.num_fields)])
        widest = max(widest, values)
    return widest


def _parsed(data: bytes, first: bool, pa: Any, pa_json: Any, schema: Any = None) -> tuple[Any, int] | None:
    """Lines of a manifest (the whole file, or a block of whole lines; ``first``: it starts the file) parsed by Arrow
    (see :func:`_arrow_table`), and how many lines they are; None for bytes the line reading must take: a BOM, a raw
    control character, an escaped surrogate, bytes that are not UTF-8, or what Arrow refuses."""
    if (first and data.startswith(b"\xef\xbb\xbf")) or 1 in data.translate(_CONTROL_BUT_NEWLINE) or (b"\\u" in data and _SURROGATE_ESCAPE.search(data)):
        return None
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return None
    lines = data.count(b"\n") + (not data.endswith(b"\n"))
    try:
        table = _arrow_table(data, lines, pa, pa_json, schema)
    except (pa.ArrowException, ValueError):
        return None
    return None if table is None else (table, lines)


def _plain_columns(table: Any, lines: int, path: str, ctx: _Context) -> _Columns | None:
    """Which of a parsed table's fields hold what, when its shape is plain (every line a row, keys in lower case, one
    name for a speaker and an id, a path and a transcript, no offset); None for a table the line reading must take."""
    names = table.column_names
    # a blank or whitespace-only line is a row fewer (Arrow skips it); a line of two objects, one more
    if table.num_rows != lines or any(name != name.lower() for name in names):
        return None
    present = set(names)
    if any(len(present.intersection(keys)) > 1 for keys in (SPEAKER_KEYS, ID_KEYS)):
        return None  # a record without the first name would be read under the second
    _require_named(path, ctx, names, "key")  # every record's keys are columns of the table
    columns = _Columns.of(names, ctx)
    if columns.audio is None or columns.text is None or columns.offset is not None:
        return None
    return columns


def _durations(table: Any, columns: _Columns, pa: Any) -> list[float | None] | None:
    """Each row's claimed duration (None where none is); None when one is not a finite non-negative number."""
    if columns.duration is None:
        return [None] * table.num_rows
    column = table.column(columns.duration)
    if pa.types.is_integer(column.type) or pa.types.is_floating(column.type):
        durations = [None if d is None else float(d) for d in column.to_pylist()]
    elif pa.types.is_null(column.type):
        return [None] * table.num_rows
    else:
        return None
    if any(d is not None and not 0.0 <= d < math.inf for d in durations):  # NaN fails the comparison
        return None
    return durations


def _columns_of_table(table: Any, lines: int, path: str, ctx: _Context, resolve: Callable[[str], str], builder: _Builder) -> bool:
    """The entries of a manifest Arrow parsed (``lines`` lines long) as ``builder.columns``, when it is plain: see
    :func:`_read_nemo_columns`."""
    import pyarrow as pa

    columns = _plain_columns(table, lines, path, ctx)
    if columns is None:
        return False
    names = table.column_names
    rows = table.num_rows

    def strings(name: str | None) -> list[Any] | None:
        if name is None:
            return [None] * rows
        column = table.column(name)
        return column.to_pylist() if pa.types.is_string(column.type) or pa.types.is_null(column.type) else None

    audio, texts, speakers, ids = strings(columns.audio), strings(columns.text), strings(columns.speaker), strings(columns.id)
    if audio is None or texts is None or speakers is None or ids is None:
        return False
    if None in audio or None in texts or "" in audio or "" in texts or any(map(str.isspace, audio)) or any(map(str.isspace, texts)):
        return False
    durations = _durations(table, columns, pa)
    if durations is None:
        return False
    keys = [ident or listed for ident, listed in zip(ids, audio)]
    if len(set(keys)) != rows:
        return False  # a duplicate-id problem
    # judged plain: every line is an entry
    builder.saw_names(names, ctx)
    resolved = audio if _all_absolute_normal(table.column(columns.audio)) else [resolve(listed) for listed in audio]
    builder.columns = {
        "line": range(1, rows + 1), "id": keys, "audio": resolved, "listed": audio, "text": texts, "manifest": [path] * rows,
        "duration": durations, "offset": [None] * rows, "speaker": [speaker or None for speaker in speakers],
    }  # fmt: skip
    return True


def _read_nemo_blocks(path: str, ctx: _Context, resolve: Callable[[str], str], builder: _Builder, pa: Any, pa_json: Any) -> bool:
    """A manifest over COLUMNAR_MAX_BYTES read as :func:`_read_nemo_columns` reads a smaller one, a block of whole lines
    (COLUMNAR_MAX_BYTES at most) at a time: each block screened and judged plain as a whole small file is, the later
    blocks parsed with exactly the first block's fields. Its ids, paths and transcripts stay Arrow arrays
    (:class:`~trainproof.data.model.TextColumn`), so neither the file nor a Python string an entry is held: a
    manifest of a million clips read line by line was 700 bytes a clip of the driver's memory. False, having changed
    nothing, for whatever the whole reading refuses in any block, a line longer than a block, or ids listed twice
    across blocks."""
    import pyarrow.compute as pc

    from trainproof.data.model import TextColumn

    parts: dict[str, list[Any]] = {"listed": [], "absolute": [], "text": [], "key": [], "speaker": [], "duration": []}
    names: list[str] | None = None
    schema = None
    rows = 0
    speakers: dict[str, str] = {}  # one string a speaker, not one a line
    for number, data in enumerate(_line_blocks(path, COLUMNAR_MAX_BYTES)):
        parsed = None if data is None else _parsed(data, number == 0, pa, pa_json, schema)
        del data
        if parsed is None:
            return False
        table, lines = parsed
        schema = _widened(table.schema, pa)
        block = _block_columns(table, lines, path, ctx, resolve, pa, pc)
        del table
        if block is None:
            return False
        names = names or schema.names
        for name, values in block.items():
            if name == "speaker":
                values = [None if not speaker else speakers.setdefault(speaker, speaker) for speaker in values]
            parts[name].append(values)
        rows += lines
    if names is None:
        return False
    text_of = {name: TextColumn(pa.chunked_array(parts[name], type=pa.large_string())) for name in ("listed", "text", "key")}
    if not _distinct(text_of["key"].arrow):
        return False  # a duplicate-id problem
    same_keys = all(key is listed for key, listed in zip(parts["key"], parts["listed"]))
    same_paths = all(parts["absolute"])
    resolved = [  # judged plain: only now resolved (the resolver counts where paths were found)
        listed if absolute else pa.array([resolve(path_) for path_ in listed.to_pylist()], type=pa.large_string())
        for listed, absolute in zip(parts["listed"], parts["absolute"])
    ]
    builder.saw_names(names, ctx)
    builder.columns = {
        "line": range(1, rows + 1),
        "id": text_of["listed"] if same_keys else text_of["key"],
        "audio": text_of["listed"] if same_paths else TextColumn(pa.chunked_array(resolved, type=pa.large_string())),
        "listed": text_of["listed"],
        "text": text_of["text"],
        "manifest": [path] * rows,
        "duration": [duration for block in parts["duration"] for duration in block],
        "offset": [None] * rows,
        "speaker": [speaker for block in parts["speaker"] for speaker in block],
    }
    return True


def _distinct(keys: Any) -> bool:
    """Whether no value of an Arrow string column repeats: each value's 64-bit hash, made a block at a time, and only the
    values whose hash another shares compared exactly (Arrow's table of every distinct id was 110 MB of a million
    lines)."""
    import numpy as np

    from trainproof.data.model import TextColumn

    hashes = np.empty(len(keys), dtype=np.int64)
    for start in range(0, len(keys), 65_536):
        part = keys.slice(start, 65_536).to_pylist()
        hashes[start : start + len(part)] = [hash(value) for value in part]
    ordered = np.sort(hashes)
    if not (ordered[1:] == ordered[:-1]).any():
        return True
    order = np.argsort(hashes, kind="stable")
    ordered = hashes[order]
    shared = ordered[1:] == ordered[:-1]
    rows = np.unique(np.concatenate([order[1:][shared], order[:-1][shared]]))
    values = TextColumn(keys).take(rows).to_pylist()
    return len(set(values)) == len(values)


def _line_blocks(path: str, size: int) -> Iterator[bytes | None]:
    """The file's bytes in blocks of whole lines of at most ``size`` bytes (the last may lack its newline); None for a
    line longer than ``size``, after which nothing more is read."""
    with open_log(Path(path)) as handle:
        rest = b""
        while True:
            data = read_block(handle, size - len(rest), path)
            if not data:
                if rest:
                    yield rest
                return
            data = rest + data
            end = data.rfind(b"\n") + 1
            if end == 0:
                if len(data) >= size:
                    yield None
                    return
                rest = data
                continue
            rest = data[end:]
            yield data[:end]


def _block_columns(
    table: Any, lines: int, path: str, ctx: _Context, resolve: Callable[[str], str], pa: Any, pc: Any
) -> dict[str, Any] | None:
    """One block's entries as :func:`_columns_of_table` judges a whole file's, as Arrow string arrays (``listed``,
    ``text``, ``key``: the id, or the path where there is none), lists (``speaker``, ``duration``) and whether every
    path is absolute and normal already (``absolute``: the rest are resolved once every block is judged plain); None
    for a block the line reading must take."""
    columns = _plain_columns(table, lines, path, ctx)
    if columns is None:
        return None
    rows = table.num_rows

    def strings(name: str | None) -> Any:
        if name is None:
            return pa.nulls(rows, pa.large_string())
        column = table.column(name)
        if not (pa.types.is_string(column.type) or pa.types.is_null(column.type)):
            return None
        return column.combine_chunks().cast(pa.large_string())

    listed, texts, speakers, ids = strings(columns.audio), strings(columns.text), strings(columns.speaker), strings(columns.id)
    if listed is None or texts is None or speakers is None or ids is None or listed.null_count or texts.null_count:
        return None
    for values in (listed, texts):
        for start in range(0, rows, 65_536):  # as the whole reading judges them: Python's idea of a space
            chunk = values.slice(start, 65_536).to_pylist()
            if "" in chunk or any(map(str.isspace, chunk)):
                return None
    durations = _durations(table, columns, pa)
    if durations is None:
        return None
    named = pc.fill_null(pc.not_equal(ids, ""), False)
    keys = pc.if_else(named, ids, listed) if pc.any(named).as_py() else listed
    return {"listed": listed, "text": texts, "key": keys, "speaker": speakers.to_pylist(), "duration": durations, "absolute": _all_absolute_normal(listed)}


def _all_absolute_normal(paths: Any) -> bool:
    """Whether every path of an Arrow string column is absolute and normal already (see :func:`_is_normal`): what
    resolving would give back unchanged."""
    import pyarrow.compute as pc

    if not _POSIX:
        return False
    odd = pc.or_(pc.or_(pc.match_substring(paths, "//"), pc.match_substring(paths, "/.")), pc.ends_with(paths, "/"))
    return bool(pc.all(pc.and_(pc.starts_with(paths, "/"), pc.invert(odd))).as_py())


def _folded(record: dict[str, object]) -> dict[str, object]:
    """A record's fields under lower-case names; of two names that differ only in case, the one already in lower case
    (the name NeMo reads: ``audio_filepath``, not ``Audio_Filepath``), else the first."""
    fields: dict[str, object] = {}
    for key, value in record.items():
        name = key.lower()
        if name not in fields or key == name:
            fields[name] = value
    return fields


def _loads(text: str) -> object:
    """One manifest line's JSON: parsed by orjson, several times faster; a line orjson refuses (NaN, a number past
    float range, a lone surrogate, a syntax error) by the standard parser, which accepts what JSON Lines writers emit
    and names the column of a real error. See :func:`_exactly` for what orjson may read differently."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _exactly(record: dict[str, object], text: str) -> dict[str, object]:
    """The record as the standard parser reads it when orjson may have read it differently: a whole number past 64
    bits, which orjson makes a float (seen as a field's float of that size; only a record's own fields are read, not
    nested ones). Asked only of a line the full reading takes: a plain line's fields are strings, and a duration reads
    the same either way."""
    for value in record.values():  # a plain loop: any() over a generator cost a fifth of the manifest's parse
        if type(value) is float and abs(value) >= 2.0**63:
            return json.loads(text)
    return record


def _one_document(path: str) -> tuple[int, str] | None:
    """Where a .json(l) file is one JSON document rather than JSON Lines (a JSON array, or pretty-printed), and which."""
    head = []
    for number, text in _content_lines(path):
        head.append((number, text.lstrip("\ufeff").strip()))
        if len(head) == 2:
            break
    if not head:
        return None
    number, first = head[0]
    if first.startswith("["):
        return number, "one JSON array"
    if first == "{":
        return number, "one pretty-printed JSON document"
    if first.startswith("{") and len(head) == 2 and head[1][1].startswith('"') and not _parses(first) and not _parses(head[1][1]):
        return number, "one pretty-printed JSON document"
    return None


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True
