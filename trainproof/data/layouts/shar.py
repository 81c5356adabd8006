"""Lhotse Shar (``CutSet.to_shar``): a folder of cut shards (``cuts.000000.jsonl.gz``) and, for each, the tar shard of
the cuts' audio (``recording.000000.tar``), as Lhotse writes a corpus for sequential reading.

A Shar folder is read shard by shard; given one cut shard (or its recording
tar), that shard alone; given a folder whose folders are Shar folders
(``shar/train``, ``shar/dev``), each of them as a split of one dataset
(:func:`trainproof.io.splits.split_of`), so that clips shared between splits
are found. A shard's recording tar is the one of the same number
(``recording.000003.tar`` for ``cuts.000003.jsonl.gz``; an unsharded
``cuts.jsonl.gz`` has ``recording.tar``).

A recording tar holds, for each cut in the order of the cut shard's lines,
its audio (``<cut id>.flac``, the cut's own span, re-encoded by the writer)
and then its recording's manifest (``<cut id>.json``); a cut without a
recording has ``.nodata`` and ``.nometa`` placeholders instead. Lhotse pairs
the two in order and stops at the first pair whose name is not the cut's id;
trainproof finds each cut's audio by its id, so that every cut is judged,
and says where the order breaks. Each supervision of a cut is a clip: the
cut's audio member (a :class:`~trainproof.data.model.Blob`, read where it is
analysed, cached by the hash of its bytes) from the supervision's start, at
the cut shard's line. Members are listed by their headers, never read whole.

What is wrong with a line, a cut or a shard (not JSON, a cut whose audio is
not in its tar, a tar cut short or holding an odd number of members, a cut
shard without its tar) is a :class:`~trainproof.data.model.Problem` there;
a folder that holds no recording field is an :class:`InputError`. Only the
standard library reads them.
"""

from __future__ import annotations

import os
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path

from trainproof.data.layouts.lhotse import CUT_TYPES, _records, _Recording, _supervision
from trainproof.data.layouts.shared import MAX_CLAIM_S, _Builder, _Context, _quote, _seconds
from trainproof.data.model import Blob, Entry
from trainproof.io import figures
from trainproof.io.bounded import open_log
from trainproof.io.errors import InputError
from trainproof.io.splits import split_of, split_rank

AUDIO_FIELD = "recording"
"""The field whose tar shards hold the cuts' audio (the other fields, features and custom arrays, are not read)."""

_NAME = re.compile(r"^(?P<field>[A-Za-z_]\w*)(?:\.(?P<index>\d+))?\.(?P<kind>jsonl\.gz|jsonl|tar\.gz|tar)$")
_PLACEHOLDERS = (".nodata", ".nometa")
_COMPRESSED = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd")


@dataclass(frozen=True)
class Shard:
    """One cut shard and the recording tar of the same number (None when it is not there)."""

    cuts: str
    recording: str | None
    split: str = "train"


def _parse(name: str) -> tuple[str, str, str] | None:
    """A Shar file name's field, shard number ("" unsharded) and kind (``jsonl``, ``tar``...), or None."""
    found = _NAME.match(name)
    if found is None:
        return None
    return found.group("field"), found.group("index") or "", found.group("kind")


def _fields(folder: str) -> dict[str, dict[str, str]]:
    """The Shar files of a folder: field -> shard number -> path (cuts only as JSON Lines, other fields as tars)."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return {}
    found: dict[str, dict[str, str]] = {}
    for name in names:
        parsed = _parse(name)
        if parsed is None:
            continue
        field, index, kind = parsed
        if (field == "cuts") != kind.startswith("jsonl"):
            continue
        path = os.path.join(folder, name)
        if not os.path.isdir(path):
            found.setdefault(field, {}).setdefault(index, path)
    return found


def is_shar_folder(folder: str) -> bool:
    """Whether ``folder`` holds Lhotse Shar shards: cut shards beside a tar field's shards, or numbered cut shards
    (``cuts.000000.jsonl.gz``, a name only Shar writes)."""
    fields = _fields(folder)
    cuts = fields.pop("cuts", {})
    if not cuts:
        return False
    return bool(fields) or any(index for index in cuts)


def _split_folders(folder: str) -> list[str]:
    try:
        names = sorted(name for name in os.listdir(folder) if not name.startswith("."))
    except OSError:
        return []
    return [os.path.join(folder, name) for name in names if os.path.isdir(os.path.join(folder, name)) and is_shar_folder(os.path.join(folder, name))]


def detect(path: str) -> tuple[str, str] | None:
    """``("shar", path)`` when ``path`` is a Shar folder, a folder of Shar split folders, or one of a Shar folder's cut
    shards or recording tars; None otherwise."""
    if os.path.isdir(path):
        return ("shar", path) if is_shar_folder(path) or _split_folders(path) else None
    parsed = _parse(os.path.basename(path))
    if parsed is None:
        return None
    field, index, kind = parsed
    folder = os.path.dirname(path) or "."
    if field == "cuts" and kind.startswith("jsonl") and (index or is_shar_folder(folder)):
        return "shar", path
    if field == AUDIO_FIELD and kind.startswith("tar") and index in _fields(folder).get("cuts", {}):
        return "shar", path
    return None


def shards(target: str) -> list[Shard]:
    """The shards judging ``target`` reads, train first (each split's shards in number order)."""
    if not os.path.isdir(target):
        field, index, _ = _parse(os.path.basename(target)) or ("", "", "")
        fields = _fields(os.path.dirname(target) or ".")
        cuts = target if field == "cuts" else fields.get("cuts", {}).get(index, target)
        return [Shard(cuts, fields.get(AUDIO_FIELD, {}).get(index))]
    if is_shar_folder(target):
        return _folder_shards(target, "train")
    found = [shard for folder in _split_folders(target) for shard in _folder_shards(folder, split_of(os.path.relpath(folder, target) + "/x"))]
    return sorted(found, key=lambda shard: (*split_rank(shard.split), shard.cuts))


def _folder_shards(folder: str, split: str) -> list[Shard]:
    fields = _fields(folder)
    cuts = fields.pop("cuts", {})
    if AUDIO_FIELD not in fields:
        held = ", ".join(sorted(fields)) or "none"
        raise InputError(folder, f"is a Lhotse Shar folder without a '{AUDIO_FIELD}' field (its fields: {held}): trainproof judges audio")
    audio = fields[AUDIO_FIELD]
    return [Shard(cuts[index], audio.get(index), split) for index in sorted(cuts)]


def read_shar(target: str, ctx: _Context, builder: _Builder) -> None:
    found = shards(target)
    for field_file in {s.recording for s in found} - {None}:
        ctx.policy.require(str(field_file))
    for shard in found:
        before = len(builder.entries)
        try:
            _read_shard(shard, ctx, builder)
        except InputError as exc:
            if len(found) == 1:
                raise
            builder.problem("unparsable", f"{os.path.basename(shard.cuts)} {exc.problem}", shard.cuts)  # the other shards are judged
        builder.splits.extend([shard.split] * (len(builder.entries) - before))
    if len({shard.split for shard in found}) > 1:
        builder.notes.append(f"{len(found):,} Shar shards were read as the splits their folders name ({', '.join(dict.fromkeys(s.split for s in found))})")


# --- one shard --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Member:
    name: str
    offset: int
    size: int


class _Tar:
    """A recording tar's members listed by their headers: each cut's (data, metadata) pair, by the cut's id."""

    def __init__(self, path: str, cuts: str, builder: _Builder) -> None:
        self.order: list[str] = []
        self.pairs: dict[str, tuple[_Member, _Member | None]] = {}
        self.size = 0
        self.whole = True  # every member listed: a cut not found in it has no audio there
        members = self._members(path, cuts, builder)
        if len(members) % 2 and self.whole:
            builder.problem(
                "unparsable",
                f"{os.path.basename(path)} holds {len(members):,} members, not pairs of audio and metadata: Lhotse stops at its last one ('Uneven number of files')",
                cuts,
            )
        for data, meta in zip(members[::2], [*members[1::2], None]):
            key = data.name.rsplit(".", 1)[0] if "." in data.name.rpartition("/")[2] else data.name
            self.order.append(key)
            self.pairs.setdefault(key, (data, meta))

    def _members(self, path: str, cuts: str, builder: _Builder) -> list[_Member]:
        shown = os.path.basename(path)
        try:
            with open_log(Path(path)) as handle:  # a FIFO or a device is refused, not opened (an open that may never return)
                self.size = os.fstat(handle.fileno()).st_size
                if any(handle.read(6).startswith(magic) for magic in _COMPRESSED):
                    builder.problem("unparsable", f"{shown} is a compressed tar: trainproof reads Shar's recording tars uncompressed, whose members it can seek to", cuts)
                    self.whole = False
                    return []
                handle.seek(0)
                members: list[_Member] = []
                try:
                    for member in tarfile.open(fileobj=handle, mode="r:"):
                        if member.isfile():
                            members.append(_Member(member.name, member.offset_data, member.size))
                except tarfile.TarError as exc:
                    if not members:
                        raise
                    builder.problem("unparsable", f"{shown} cannot be read past its {len(members):,} members ({exc})", cuts)
                    self.whole = False
                return members
        except tarfile.TarError as exc:
            builder.problem("unparsable", f"{shown} is not a tar file trainproof can read ({exc})", cuts)
        except InputError as exc:
            builder.problem("unparsable", f"{shown} {exc.problem}", cuts)
        except OSError as exc:
            builder.problem("unparsable", f"{shown} cannot be read: {exc.strerror or exc}", cuts)
        self.whole = False
        return []


def _read_shard(shard: Shard, ctx: _Context, builder: _Builder) -> None:
    cuts = shard.cuts
    if shard.recording is None:
        count = sum(1 for _ in _records(cuts, ctx, _Builder(builder.layout), required=False))
        name = os.path.basename(cuts)
        wanted = name.replace("cuts", AUDIO_FIELD, 1).split(".jsonl")[0] + ".tar"
        builder.problem("no-audio-field", f"{name}'s recording shard ({wanted}) is not beside it: its {count:,} cuts have no audio to read", cuts, 1, lines=max(count, 1))
        return
    tar = _Tar(shard.recording, cuts, builder)
    out_of_order = False
    cut_short = False
    beyond: list[int] = []
    position = 0
    for number, cut in _records(cuts, ctx, builder):
        ident = cut.get("id")
        name = _quote(ident) if isinstance(ident, str) and ident else "(no id)"
        kind = cut.get("type", "MonoCut")
        if kind not in CUT_TYPES:
            builder.problem("unparsable", f"line {number}: cut {name} is a {_quote(kind, 30)}; trainproof reads MonoCut and MultiCut", cuts, number)
            continue
        expected = tar.order[position] if position < len(tar.order) else None
        position += 1
        if not out_of_order and expected is not None and expected != ident:
            out_of_order = True
            builder.problem(
                "unparsable",
                f"line {number}: cut {name}'s audio is not the tar's pair {position:,} ({_quote(expected)} is): Lhotse, pairing them in order, stops there ('Mismatched IDs')",
                cuts,
                number,
            )
        pair = tar.pairs.get(ident) if isinstance(ident, str) else None
        if pair is None and not tar.whole:
            beyond.append(number)  # past where the tar can be read: said once, below
            continue
        if pair is None:
            builder.problem("no-audio-field", f"line {number}: cut {name} has no audio in {os.path.basename(shard.recording)}", cuts, number)
            continue
        data, _ = pair
        if data.name.endswith(_PLACEHOLDERS):
            builder.problem("no-audio-field", f"line {number}: cut {name} has no recording (a .nodata placeholder in the tar): no audio to read", cuts, number)
            continue
        if data.offset + data.size > tar.size and not cut_short:
            cut_short = True
            builder.problem("unparsable", f"line {number}: {os.path.basename(shard.recording)} ends inside {_quote(data.name)} (a tar cut short)", cuts, number)
        _cut_entries(cut, number, name, shard, data, builder)
    if beyond:
        builder.problem(
            "no-audio-field",
            f"line {beyond[0]}: {os.path.basename(shard.recording)} cannot be read this far: {figures.plural(len(beyond), 'cut')} from here on {'has' if len(beyond) == 1 else 'have'} no audio to read",
            cuts,
            beyond[0],
            lines=len(beyond),
        )
    if tar.whole and position < len(tar.order):
        builder.notes.append(f"{os.path.basename(shard.recording)} holds {len(tar.order) - position:,} more cuts' audio than {os.path.basename(cuts)} lists: Lhotse reads only the listed")


def _cut_entries(cut: dict, number: int, name: str, shard: Shard, data: _Member, builder: _Builder) -> None:
    """The cut's supervisions, each a clip of its audio member."""
    assert shard.recording is not None
    length, readable = _seconds(cut.get("duration"))
    duration = length if readable and length is not None and 0 <= length <= MAX_CLAIM_S else None
    audio = f"{shard.recording}[{data.name}]"
    rec = _Recording(str(cut.get("id")), data.name, audio, duration)
    blob = Blob("tar", shard.recording, 0, data.offset, data.name, data.size)
    supervisions = cut.get("supervisions")
    before = len(builder.entries)
    if not isinstance(supervisions, list) or not supervisions:
        ident = cut.get("id")
        if duration is not None and isinstance(ident, str) and ident:
            builder.add(Entry(number, ident, audio, data.name, None, shard.cuts, duration, None, None), missing=f"line {number}: cut {name} has no supervision")
        else:
            builder.problem("unparsable", f"line {number}: cut {name} has no supervision and no duration", shard.cuts, number)
    else:
        for sup in supervisions:
            _supervision(sup, rec, number, shard.cuts, builder)
    for index in range(before, len(builder.entries)):
        builder.blobs[index] = blob
