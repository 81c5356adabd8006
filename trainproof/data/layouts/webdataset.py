"""WebDataset shards: tar files whose members are grouped into samples by key (``000123.flac``, ``000123.txt``,
``000123.json``), as large TTS and codec corpora are kept.

The dataset is a ``.tar`` file, a folder of them (below it, in name order),
or a brace pattern (``shards/train-{000000..000009}.tar``, WebDataset's own
notation, each shard it names present). A sample is the run of consecutive
members sharing a key: the member's path up to the first dot of its file
name, as ``webdataset`` splits it. Its audio is its first member with an
audio extension (AUDIO_EXTENSIONS), read from the shard where it is analysed
(one seek and one read: a :class:`~trainproof.data.model.Blob`, cached by
the hash of its bytes); its transcript the ``.txt`` (or ``.text``,
``.transcript``) member, else the first of TEXT_KEYS in its ``.json``
member; its speaker a SPEAKER_KEYS field of that JSON. A sample is at its
1-based position in its shard, the shard being the "manifest" a finding
names, and is named by its audio member. When no sample has a transcript
the dataset is audio-only (a codec's or vocoder's corpus), judged by the
audio rules alone.

Shards are read member by member, never whole. A compressed shard
(``.tar.gz``) is not read: its members have no offset to seek to. A shard
that is not a tar, or ends inside a member, is a problem at that shard (an
InputError when it is the dataset named); the samples before the damage are
judged. Each shard's split is inferred from its name as for the Hub's
layouts (:func:`trainproof.data.layouts.hub.split_of`).
"""

from __future__ import annotations

import json
import os
import re
import tarfile
from collections.abc import Iterator
from pathlib import Path

from trainproof.data.layouts.hub import _split_order, split_of
from trainproof.data.layouts.shared import _AUDIO, SPEAKER_KEYS, TEXT_KEYS, _Builder, _Context, _first_key, _quote
from trainproof.data.model import Blob, Entry
from trainproof.io.bounded import open_log
from trainproof.io.errors import InputError

TAR_SUFFIX = ".tar"
TEXT_EXTENSIONS = ("txt", "text", "transcript")
MAX_TEXT_MEMBER_BYTES = 1024 * 1024
"""The largest ``.txt`` or ``.json`` member read as a sample's transcript or fields."""

MAX_BRACE_SHARDS = 100_000
_BRACE = re.compile(r"\{(\d+)\.\.(\d+)\}")
_COMPRESSED = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd")


def is_pattern(path: str) -> bool:
    """Whether ``path`` is a brace pattern naming shards (``train-{000000..000009}.tar``)."""
    return path.endswith(TAR_SUFFIX) and _BRACE.search(path) is not None


def expand(pattern: str) -> list[str]:
    """The shards a brace pattern names, in order (each range keeps its zero padding)."""
    match = _BRACE.search(pattern)
    if match is None:
        return [pattern]
    first, last = match.group(1), match.group(2)
    if int(last) < int(first) or int(last) - int(first) >= MAX_BRACE_SHARDS:
        raise InputError(pattern, f"names {first}..{last}: not a range of at most {MAX_BRACE_SHARDS:,} shards")
    width = len(first)
    head, tail = pattern[: match.start()], pattern[match.end() :]
    return [shard for n in range(int(first), int(last) + 1) for shard in expand(f"{head}{n:0{width}d}{tail}")]


def detect(path: str) -> tuple[str, str] | None:
    if is_pattern(path):
        return "webdataset", path
    if os.path.isfile(path) and path.endswith(TAR_SUFFIX):
        return "webdataset", path
    if os.path.isdir(path) and any(name.endswith(TAR_SUFFIX) for name in _names(path)):
        return "webdataset", path
    return None


def read_webdataset(target: str, ctx: _Context, builder: _Builder) -> None:
    if is_pattern(target):
        shards = expand(target)
        missing = [shard for shard in shards if not os.path.isfile(shard)]
        if missing:
            raise InputError(target, f"names {len(shards):,} shards, of which {len(missing):,} do not exist (the first: {missing[0]})")
        root = os.path.dirname(target)
    elif os.path.isdir(target):
        shards = [os.path.join(target, name) for name in _names(target) if name.endswith(TAR_SUFFIX)]
        root = target
    else:
        shards, root = [target], os.path.dirname(target)
    named = [(shard, split_of(os.path.relpath(shard, root)) if len(shards) > 1 else "train") for shard in shards]
    texts = 0
    for shard, split in sorted(named, key=_split_order):
        texts += _read_shard(shard, split, shard == target, builder)
    if builder.entries and texts == 0:
        builder.audio_only = True


def _read_shard(shard: str, split: str, alone: bool, builder: _Builder) -> int:
    """Every sample of one shard as an entry; how many had a transcript."""
    try:
        with open_log(Path(shard)) as handle:  # a FIFO or a device is refused, not opened (an open that may never return)
            head = handle.read(6)
            size = os.fstat(handle.fileno()).st_size
            if any(head.startswith(magic) for magic in _COMPRESSED):
                return _refuse(shard, alone, builder, "is a compressed tar: trainproof reads WebDataset shards uncompressed (.tar), whose members it can seek to")
            handle.seek(0)
            archive = tarfile.open(fileobj=handle, mode="r:")
            return _samples(shard, split, archive, size, builder)
    except tarfile.TarError as exc:
        return _refuse(shard, alone, builder, f"is not a tar file trainproof can read ({exc})")
    except InputError as exc:
        return _refuse(shard, alone, builder, exc.problem)
    except OSError as exc:
        return _refuse(shard, alone, builder, f"cannot be read: {exc.strerror or exc}")


def _refuse(shard: str, alone: bool, builder: _Builder, why: str) -> int:
    if alone:
        raise InputError(shard, why)
    builder.problem("unparsable", why, shard)
    return 0


def _samples(shard: str, split: str, archive: tarfile.TarFile, size: int, builder: _Builder) -> int:
    texts = 0
    number = 0
    for key, members in _grouped(archive, shard, size, builder):
        number += 1
        audio = next((m for m in members if _extension(m.name) in _AUDIO), None)
        if audio is None:
            shown = ", ".join(sorted({_extension(m.name) or m.name for m in members}))
            builder.problem("no-audio-field", f"sample {number} ({_quote(key)}) has no audio member (its members: {shown})", shard, number)
            continue
        fields = _fields(archive, members)
        text = fields.get("text")
        if audio.offset_data + audio.size > size:
            builder.problem("unparsable", f"sample {number} ({_quote(key)}): the shard ends inside {_quote(audio.name)}", shard, number)
        entry = Entry.of_values(
            line=number, id=key, audio=f"{shard}[{audio.name}]", listed=os.path.basename(audio.name), text=text, manifest=shard,
            duration=None, offset=None, speaker=fields.get("speaker"),
        )  # fmt: skip
        builder.blobs[len(builder.entries)] = Blob("tar", shard, 0, audio.offset_data, audio.name, audio.size)
        builder.splits.append(split)
        if text is not None:
            texts += 1
            builder.add(entry)
        else:
            builder.entries.append(entry)  # an audio-only sample, or a transcript missing: see read_webdataset
    return texts


def _grouped(archive: tarfile.TarFile, shard: str, size: int, builder: _Builder) -> Iterator[tuple[str, list[tarfile.TarInfo]]]:
    """The shard's samples in order: each key with its consecutive regular members."""
    key: str | None = None
    members: list[tarfile.TarInfo] = []
    try:
        for member in archive:
            if not member.isfile():
                continue
            if member.offset_data + member.size > size:
                builder.problem("unparsable", f"the shard ends inside {_quote(member.name)} (a tar cut short)", shard)
            name = member.name
            folder, _, base = name.rpartition("/")
            this = (folder + "/" if folder else "") + base.split(".", 1)[0]
            if this != key and members:
                yield key, members  # type: ignore[misc]
                members = []
            key = this
            members.append(member)
    except tarfile.TarError as exc:
        builder.problem("unparsable", f"cannot be read past its {len(members):,} last members: {exc}", shard)
    if members:
        yield key, members  # type: ignore[misc]


def _fields(archive: tarfile.TarFile, members: list[tarfile.TarInfo]) -> dict[str, str | None]:
    """A sample's transcript and speaker, from its text member or its JSON member."""
    out: dict[str, str | None] = {}
    for member in members:
        extension = _extension(member.name).lstrip(".")
        if member.size > MAX_TEXT_MEMBER_BYTES or extension not in (*TEXT_EXTENSIONS, "json"):
            continue
        raw = _member_bytes(archive, member)
        if raw is None:
            continue
        if extension in TEXT_EXTENSIONS and "text" not in out:
            out["text"] = raw.decode("utf-8", "replace").strip()
        elif extension == "json":
            try:
                record = json.loads(raw)
            except ValueError:
                continue
            if isinstance(record, dict):
                lower = {str(k).lower(): v for k, v in record.items()}
                text_key, speaker_key = _first_key(lower, TEXT_KEYS), _first_key(lower, SPEAKER_KEYS)
                if text_key is not None and "text" not in out and isinstance(lower[text_key], str):
                    out["text"] = lower[text_key]
                if speaker_key is not None and lower[speaker_key] not in (None, ""):
                    out["speaker"] = str(lower[speaker_key])
    return out


def _member_bytes(archive: tarfile.TarFile, member: tarfile.TarInfo) -> bytes | None:
    try:
        found = archive.extractfile(member)
        return None if found is None else found.read(MAX_TEXT_MEMBER_BYTES)
    except (tarfile.TarError, OSError):
        return None




def _extension(name: str) -> str:
    """The member's extension as WebDataset splits it (all after the first dot of its file name), lower case, with
    its dot; its last part for an audio file (``x.en.flac`` is a FLAC)."""
    base = name.rpartition("/")[2]
    if "." not in base:
        return ""
    whole = "." + base.split(".", 1)[1].lower()
    last = "." + base.rsplit(".", 1)[1].lower()
    return last if last in _AUDIO else whole


def _names(folder: str) -> list[str]:
    try:
        return sorted(name for name in os.listdir(folder) if not name.startswith("."))
    except OSError:
        return []
