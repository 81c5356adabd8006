"""Lhotse manifests (k2/icefall and other ASR recipes): ``recordings`` with ``supervisions`` beside them, or ``cuts``
(MonoCut, each holding its recording and supervisions), JSON Lines, gzipped or not.

A recipe writes them to one folder as ``<corpus>_<kind>_<split>.jsonl.gz`` (``<kind>_<split>``, or plain
``<kind>.jsonl.gz``, too): the files of one corpus and split are one dataset. Given a supervisions (or recordings)
file, the other of the pair is the file of the same name with the kind swapped; given the folder, its one dataset, or
(``trainproof data``) each of its datasets in turn (see :func:`split_inputs`). Where a split has cuts and the pair
too, the cuts are read: they are what a recipe trains from.

Each supervision is one clip: the recording's file source (a relative path is relative to the working directory, as
Lhotse opens it, or from a folder above the manifest's: see :func:`trainproof.data.layouts.shared._settle_above`),
seeked to the supervision's start (a cut's start plus its supervision's) for its duration. A supervision that covers
its whole recording (start 0, the recording's duration) is the recording's whole file with the recording's duration
as a claim, compared with the audio as a NeMo manifest's duration is. Recordings alone (no supervisions beside them)
are an audio-only dataset.

Every line is located in the file the user can open, at its line of the decompressed stream. What is wrong with a
line (not JSON, a recording with no sources or one trainproof cannot read, a supervision of a recording not listed, a
gzip stream that ends early) is a :class:`~trainproof.data.model.Problem` at that line; a file that is not a Lhotse
manifest at all is an :class:`~trainproof.io.errors.InputError`. Only the standard library reads them.
"""


from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from trainproof.data.layouts.shared import MAX_CLAIM_S, _Builder, _Context, _join, _quote, _seconds, _settle_above, _too_long
from trainproof.data.model import Entry
from trainproof.io import figures
from trainproof.io.bounded import BLOCK_BYTES, MAX_LINE_BYTES, EmptyLog, open_log, read_block, too_long
from trainproof.io.errors import InputError

KINDS = ("recordings", "supervisions", "cuts")
"""The kinds of Lhotse manifest, as their file names say them."""

SUFFIXES = (".jsonl.gz", ".jsonl")
"""The endings of a Lhotse manifest's name, gzipped first."""

GZIP_MAGIC = b"\x1f\x8b"

CUT_TYPES = ("MonoCut", "MultiCut")
"""The cuts read: one recording each, with its supervisions. A MixedCut (tracks of other cuts mixed) or a
PaddingCut (no audio) is a problem at its line."""

WHOLE_TOLERANCE_S = 0.001
"""A supervision from 0 whose duration is within this of its recording's covers the whole recording."""


@dataclass(frozen=True)
class LhotseName:
    """A Lhotse manifest's file name, taken apart: ``yesno_cuts_train.jsonl.gz`` is ("yesno", "cuts", "train")."""

    prefix: str
    kind: str
    split: str
    suffix: str

    def named(self, kind: str, suffix: str | None = None) -> str:
        """The name of the manifest of ``kind`` (and ``suffix``) of the same corpus and split."""
        parts = [part for part in (self.prefix, kind, self.split) if part]
        return "_".join(parts) + (self.suffix if suffix is None else suffix)


def lhotse_name(name: str) -> LhotseName | None:
    """The parts of a file name Lhotse's recipes write, or None when it is not one."""
    suffix = next((s for s in SUFFIXES if name.endswith(s)), None)
    if suffix is None:
        return None
    parts = name[: -len(suffix)].split("_")
    for i, part in enumerate(parts):
        if part in KINDS:
            return LhotseName("_".join(parts[:i]), part, "_".join(parts[i + 1 :]), suffix)
    return None


def _groups(folder: str) -> dict[tuple[str, str], dict[str, str]]:
    """The Lhotse manifests of a folder by (corpus, split), each kind's file (gzipped, when both are there)."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return {}
    groups: dict[tuple[str, str], dict[str, str]] = {}
    for name in names:
        parsed = lhotse_name(name)
        path = os.path.join(folder, name)
        if parsed is None or os.path.isdir(path):
            continue
        kinds = groups.setdefault((parsed.prefix, parsed.split), {})
        if parsed.kind not in kinds or parsed.suffix == ".jsonl.gz":
            kinds[parsed.kind] = path
    return groups


def _main(kinds: dict[str, str]) -> str:
    """The file a dataset of these kinds is read from: its cuts, else its supervisions, else its recordings."""
    return next(kinds[kind] for kind in ("cuts", "supervisions", "recordings") if kind in kinds)


def is_lhotse_folder(folder: str) -> bool:
    return bool(_groups(folder))


def split_inputs(path: str) -> list[str]:
    """The datasets of a folder of Lhotse manifests that holds several (a recipe's splits), each as the file it is read
    from, in name order; empty for anything else (a file, a folder of one dataset, a folder of another layout)."""
    if not os.path.isdir(path) or any(os.path.lexists(os.path.join(path, name)) for name in ("metadata.csv", "wav.scp")):
        return []
    groups = _groups(path)
    if len({corpus for corpus, _ in groups}) < 2:
        return []  # one corpus (of one split, or several: judged together, see _read_lhotse)
    return [_main(kinds) for _, kinds in sorted(groups.items())]


def lhotse_files(path: str) -> list[str]:
    """Every Lhotse manifest judging ``path`` (a folder of them, or one of them) reads."""
    if os.path.isdir(path):
        return [file for _, kinds in sorted(_groups(path).items()) for file in kinds.values()]
    parsed = lhotse_name(os.path.basename(path))
    if parsed is None:
        return [path]
    others = [_partner(path, parsed, kind) for kind in KINDS if kind != parsed.kind]
    return [path, *(other for other in others if other is not None and parsed.kind != "cuts")]


def _partner(path: str, parsed: LhotseName, kind: str) -> str | None:
    """The manifest of ``kind`` beside ``path`` of the same corpus and split (gzipped or not), when there is one."""
    folder = os.path.dirname(path)
    for suffix in dict.fromkeys((parsed.suffix, *SUFFIXES)):
        candidate = os.path.join(folder, parsed.named(kind, suffix))
        if os.path.lexists(candidate) and not os.path.isdir(candidate):
            return candidate
    return None


def sniff_kind(path: str) -> str | None:
    """The kind of Lhotse manifest the first record of ``path`` is, or None when it is not one (or not JSON). Reads at
    most the first MAX_LINE_BYTES of the (decompressed) file; never raises for what it holds."""
    try:
        with open_log(Path(path)) as handle:
            stream = gzip.GzipFile(fileobj=handle, mode="rb") if read_block(handle, 2, path) == GZIP_MAGIC else handle
            handle.seek(0)
            head = stream.read(MAX_LINE_BYTES)
    except (InputError, OSError, EOFError, zlib.error):
        return None
    for line in head.split(b"\n")[:-1] if b"\n" in head else [head]:
        if line.strip():
            try:
                record = json.loads(line.decode("utf-8", errors="replace").lstrip("\ufeff"))
            except (ValueError, RecursionError):
                return None
            return _kind_of(record)
    return None


def _kind_of(record: object) -> str | None:
    if not isinstance(record, dict):
        return None
    if "sources" in record and "sampling_rate" in record:
        return "recordings"
    if "recording_id" in record and "start" in record:
        return "supervisions"
    if record.get("type") in CUT_TYPES or ("recording" in record and "supervisions" in record):
        return "cuts"
    return None


def is_gzip(path: str) -> bool:
    try:
        with open_log(Path(path)) as handle:
            return read_block(handle, 2, path) == GZIP_MAGIC
    except InputError:
        return False


# --- lines and records -----------------------------------------------------------------------------------------------


def _records(path: str, ctx: _Context, builder: _Builder, required: bool = True) -> Iterator[tuple[int, dict]]:
    """Each JSON object of a Lhotse manifest (gzipped or not) with its line number in the decompressed text; a line that
    is not one, a BOM, blank lines, CRLF, bytes that are not UTF-8 and a gzip stream that ends early are problems. A
    file of nothing but whitespace is ``EmptyLog`` when ``required``."""
    ctx.policy.require(path)  # a file found beside the one named: never opened through a link out of the dataset
    counts: dict[str, list[int]] = {}  # kind -> [lines, the first]
    number, pending, any_line, ended = 0, b"", False, None
    with open_log(Path(path)) as handle:
        gzipped = read_block(handle, 2, path) == GZIP_MAGIC
        handle.seek(0)
        stream = gzip.GzipFile(fileobj=handle, mode="rb") if gzipped else handle
        read = stream.read1 if isinstance(stream, gzip.GzipFile) else stream.read  # read1: what was decompressed before an early end is kept
        while True:
            try:
                block = read(BLOCK_BYTES)
            except EOFError:
                ended, block = "the gzip stream ends early", b""
            except (zlib.error, gzip.BadGzipFile) as exc:
                ended, block = f"the gzip stream is corrupt ({exc})", b""
            except OSError as exc:
                raise InputError(path, f"cannot be read: {exc.strerror or exc}") from None
            if not block:
                break
            pieces = (pending + block).split(b"\n")
            pending = pieces.pop()
            longest = max(map(len, pieces), default=0)
            if longest > MAX_LINE_BYTES or len(pending) > MAX_LINE_BYTES:
                over = next((k for k, piece in enumerate(pieces) if len(piece) > MAX_LINE_BYTES), len(pieces))
                raise too_long(path, number + 1 + over)
            for piece in pieces:
                number += 1
                any_line = any_line or bool(piece.strip())
                yield from _one_line(piece, number, path, builder, counts)
        if ended is not None:
            where = f"after line {number:,}" if number else "before its first line ends"
            builder.problem("unparsable", f"{ended} {where}: what follows cannot be read (Lhotse stops there too)", path, number + 1)
        elif pending:
            number += 1
            any_line = any_line or bool(pending.strip())
            yield from _one_line(pending, number, path, builder, counts)
    for kind, (lines, first) in counts.items():
        if kind == "not-utf8":
            message = f"line {first} holds bytes that are not UTF-8: Lhotse, reading the manifest as UTF-8, stops there; here they were read as U+FFFD"
        else:
            message = f"{_COUNTED[kind]} on {figures.plural(lines, 'line')}, the first at line {first}"
        builder.problem(kind, message, path, first, lines=lines if kind == "not-utf8" else 1)
    if not any_line and ended is None and required:
        raise EmptyLog(path)


_COUNTED = {"crlf": "has Windows line ends (CRLF)", "blank-line": "has blank lines", "not-utf8": ""}


def _one_line(piece: bytes, number: int, path: str, builder: _Builder, counts: dict[str, list[int]]) -> Iterator[tuple[int, dict]]:
    text = piece.decode("utf-8", errors="replace")
    flags = []
    if text.endswith("\r"):
        text = text[:-1]
        flags.append("crlf")
    if "\ufffd" in text:
        flags.append("not-utf8")
    if number == 1 and text.startswith("\ufeff"):
        builder.problem("bom", "starts with a byte-order mark (BOM), which a JSON reader that does not expect one refuses", path, 1)
        text = text[1:]
    if not text.strip():
        flags.append("blank-line")
    for kind in flags:
        counts.setdefault(kind, [0, number])[0] += 1
    if "blank-line" in flags:
        return
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        builder.problem("unparsable", f"line {number} is not valid JSON: {exc.msg} at column {exc.colno}", path, number)
        return
    except (ValueError, RecursionError):
        builder.problem("unparsable", f"line {number} is not JSON a reader can parse (nested too deeply, or a number too long)", path, number)
        return
    if not isinstance(record, dict):
        builder.problem("unparsable", f"line {number} is a JSON {type(record).__name__}, not an object", path, number)
        return
    yield number, record


# --- recordings, supervisions, cuts ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Recording:
    id: str
    listed: str
    audio: str
    duration: float | None


def _recording(record: dict, number: int, path: str, ctx: _Context, builder: _Builder, what: str = "recording") -> _Recording | None:
    """A recording's file source, resolved, or None with a problem at its line saying why it cannot be read."""
    ident = record.get("id")
    name = _quote(ident) if isinstance(ident, str) and ident else "(no id)"
    sources = record.get("sources")
    if not isinstance(sources, list) or not sources:
        builder.problem("no-audio-field", f"line {number}: {what} {name} has no sources: no audio to read", path, number)
        return None
    source = sources[0]
    kind = source.get("type") if isinstance(source, dict) else None
    if kind != "file":
        shown = _quote(kind, 20) if isinstance(kind, str) else "no type"
        # not garbage: a manifest of url sources is a Lhotse manifest trainproof cannot read, said at each line
        check, builder.garbage_check = builder.garbage_check, False
        builder.problem(
            "unparsable",
            f"line {number}: {what} {name} is read from a source of type {shown}; trainproof reads only sources of type 'file'",
            path,
            number,
        )
        builder.garbage_check = check
        return None
    listed = source.get("source")
    if not isinstance(listed, str) or not listed.strip():
        builder.problem("no-audio-field", f"line {number}: {what} {name}'s file source names no file ({_quote(listed, 40)})", path, number)
        return None
    duration, readable = _seconds(record.get("duration"))
    if not readable or (duration is not None and duration < 0):
        duration = None
    base = ctx.root if ctx.root is not None else (ctx.cwd or "")
    return _Recording(str(ident), listed, _join(base, listed), duration)


def _recordings(path: str, ctx: _Context, builder: _Builder) -> dict[str, _Recording | None]:
    """Every recording of a recordings manifest by id (None: one that cannot be read, reported at its line)."""
    found: dict[str, _Recording | None] = {}
    lines: dict[str, int] = {}
    for number, record in _records(path, ctx, builder, required=False):
        ident = record.get("id")
        if not isinstance(ident, str) or not ident:
            builder.problem("unparsable", f"line {number}: the recording has no id ({_quote(ident, 40)})", path, number)
            continue
        if ident in lines:
            builder.problem("duplicate-id", f"line {number} repeats the recording id {_quote(ident)} of line {lines[ident]}", path, number)
            continue
        lines[ident] = number
        found[ident] = _recording(record, number, path, ctx, builder)
    return found


def _supervision(
    sup: object, rec: _Recording, number: int, path: str, builder: _Builder, start_of_cut: float = 0.0, whole_cut: bool = True
) -> None:
    """One supervision of ``rec`` as an entry at ``number`` of ``path`` (its start from ``start_of_cut``)."""
    if not isinstance(sup, dict):
        builder.problem("unparsable", f"line {number}: a supervision is a JSON {type(sup).__name__}, not an object", path, number)
        return
    ident = sup.get("id")
    if not isinstance(ident, str) or not ident:
        builder.problem("unparsable", f"line {number}: the supervision has no id ({_quote(ident, 40)})", path, number)
        return
    claims = {}
    for what in ("start", "duration"):
        value, readable = _seconds(sup.get(what))
        if not readable or value is None or value < 0 or value > MAX_CLAIM_S:
            why = _too_long(value) if value is not None and value > MAX_CLAIM_S else f"{_quote(sup.get(what), 40)} is not a number of seconds from 0"
            builder.problem("unparsable", f"line {number}: supervision {_quote(ident)}'s {what} {why}", path, number)
            return
        claims[what] = value
    offset: float | None = start_of_cut + claims["start"]
    duration: float | None = claims["duration"]
    if whole_cut and offset == 0 and rec.duration is not None and abs(claims["duration"] - rec.duration) <= WHOLE_TOLERANCE_S:
        offset = None  # the whole recording: its file, its duration a claim about it
    text, speaker = sup.get("text"), sup.get("speaker")
    builder.add(
        Entry.of_values(
            line=number, id=ident, audio=rec.audio, listed=rec.listed, text=None if text is None else str(text), manifest=path,
            duration=duration, offset=offset, speaker=None if speaker is None or str(speaker) == "" else str(speaker),
        ),  # fmt: skip
        missing=f"line {number}: supervision {_quote(ident)} has no text",
    )


def _read_pair(supervisions: str, recordings: str, ctx: _Context, builder: _Builder) -> None:
    found = _recordings(recordings, ctx, builder)
    for number, sup in _records(supervisions, ctx, builder):
        rec_id = sup.get("recording_id")
        if not isinstance(rec_id, str) or rec_id not in found:
            ident = _quote(sup.get("id"))
            builder.problem(
                "no-audio-field",
                f"line {number}: supervision {ident} has recording {_quote(rec_id, 40)}, which {os.path.basename(recordings)} does not list",
                supervisions,
                number,
            )
            continue
        rec = found[rec_id]
        if rec is not None:  # one that cannot be read is reported once, at its line of the recordings
            _supervision(sup, rec, number, supervisions, builder)


def _read_recordings_alone(recordings: str, ctx: _Context, builder: _Builder) -> None:
    """Recordings without supervisions: each recording's file, without text (an audio-only dataset)."""
    builder.audio_only = True
    for ident, rec in _recordings(recordings, ctx, builder).items():
        if rec is not None:
            builder.entries.append(Entry(0, ident, rec.audio, rec.listed, None, recordings, rec.duration, None, None))
    builder.notes.append(f"no supervisions manifest beside {os.path.basename(recordings)}: its recordings are judged as audio without transcripts")


def _read_cuts(path: str, ctx: _Context, builder: _Builder) -> None:
    for number, cut in _records(path, ctx, builder):
        ident = cut.get("id")
        name = _quote(ident) if isinstance(ident, str) and ident else "(no id)"
        kind = cut.get("type", "MonoCut")
        if kind not in CUT_TYPES:
            builder.problem("unparsable", f"line {number}: cut {name} is a {_quote(kind, 30)}; trainproof reads MonoCut and MultiCut", path, number)
            continue
        recording = cut.get("recording")
        if not isinstance(recording, dict):
            builder.problem("no-audio-field", f"line {number}: cut {name} has no recording (features alone?): no audio to read", path, number)
            continue
        rec = _recording(recording, number, path, ctx, builder, what=f"cut {name}'s recording")
        if rec is None:
            continue
        start, readable = _seconds(cut.get("start", 0))
        length, length_readable = _seconds(cut.get("duration"))
        if not readable or start is None or start < 0 or start > MAX_CLAIM_S:
            builder.problem("unparsable", f"line {number}: cut {name}'s start {_quote(cut.get('start'), 40)} is not a number of seconds from 0", path, number)
            continue
        whole = start == 0 and length_readable and length is not None and rec.duration is not None and abs(length - rec.duration) <= WHOLE_TOLERANCE_S
        supervisions = cut.get("supervisions")
        if not isinstance(supervisions, list) or not supervisions:
            if length_readable and length is not None and 0 <= length <= MAX_CLAIM_S and isinstance(ident, str) and ident:
                entry = Entry(number, ident, rec.audio, rec.listed, None, path, length, None if whole else start, None)
                builder.add(entry, missing=f"line {number}: cut {name} has no supervision")
            else:
                builder.problem("unparsable", f"line {number}: cut {name} has no supervision and no duration", path, number)
            continue
        for sup in supervisions:
            _supervision(sup, rec, number, path, builder, start, whole)


def _read_lhotse(target: str, ctx: _Context, builder: _Builder) -> None:
    """A Lhotse dataset: one manifest (and its partner), or a recipe's folder. A folder of one corpus and several splits
    is one dataset of those splits, each split's manifests read in turn (train first), so that clips shared between
    splits are found; a folder of several corpora is each judged on its own (:func:`split_inputs`)."""
    if not os.path.isdir(target):
        _read_one(target, ctx, builder)
        return
    groups = _groups(target)
    if len({corpus for corpus, _ in groups}) > 1:
        names = ", ".join(os.path.basename(_main(kinds)) for _, kinds in sorted(groups.items()))
        raise InputError(target, f"holds {len(groups)} Lhotse datasets ({names}): name one of them (trainproof data judges each of a folder)")
    from trainproof.data.layouts.hub import _split_order, split_of

    ordered = sorted(groups.items(), key=lambda item: (_split_order(("", split_of(item[0][1])))[0], item[0][1]))
    audio_only = []
    for (_, split), kinds in ordered:
        main = _main(kinds)
        part = _Builder(builder.layout)
        if "cuts" in kinds and len(kinds) > 1:
            part.notes.append(f"{os.path.basename(main)} was read; the recordings and supervisions beside it were not (a recipe trains from its cuts)")
        if len(groups) == 1:
            _read_one(main, ctx, builder)
            builder.notes[:0] = part.notes
            return
        _read_one(main, ctx, part)
        manifest = part.build(main)
        builder.entries.extend(manifest.entries)
        builder.splits.extend([split or "train"] * len(manifest.entries))
        builder.problems.extend(manifest.problems)
        builder.notes.extend(manifest.notes)
        audio_only.append(part.audio_only)
        builder.bases, builder.found_root = builder.bases or part.bases, builder.found_root or part.found_root
    builder.audio_only = all(audio_only)


def _read_one(main: str, ctx: _Context, builder: _Builder) -> None:
    parsed = lhotse_name(os.path.basename(main))
    kind = parsed.kind if parsed is not None else sniff_kind(main)
    if kind == "cuts":
        _read_cuts(main, ctx, builder)
    elif kind in ("supervisions", "recordings"):
        other = "recordings" if kind == "supervisions" else "supervisions"
        partner = None if parsed is None else _partner(main, parsed, other)
        if kind == "supervisions" and partner is None:
            wanted = parsed.named("recordings") if parsed is not None else "<corpus>_recordings_<split>.jsonl.gz"
            raise InputError(main, f"is a Lhotse supervisions manifest, and its recordings manifest ({wanted}) is not beside it")
        if kind == "supervisions" and partner is not None:
            _read_pair(main, partner, ctx, builder)
        elif partner is not None:
            _read_pair(partner, main, ctx, builder)
        else:
            _read_recordings_alone(main, ctx, builder)
    else:
        raise InputError(main, "is not a Lhotse manifest: its first record is not a recording, a supervision or a cut")
    sources = os.path.dirname(main)
    _settle_above(builder, sources, ctx, (ctx.root if ctx.root is not None else (ctx.cwd or ""),))
    if builder.audio_only and not builder.entries and not builder.problems:
        raise EmptyLog(main)
