"""The text a tokenizer is judged against: one transcript per line of a text file, a JSONL manifest or a metadata.csv.

Every transcript keeps its line, so a finding points at it. Durations come
from a manifest's ``duration`` field, or for an LJSpeech ``metadata.csv``
from the audio files' headers (soundfile, when it is installed and the
files are there), so tokens per second of audio can be judged. What is not
a transcript (a blank line, a JSONL line without text) is skipped and
counted in a note: linting the manifest itself is ``trainproof data``'s job.

A pipe (``<(zcat transcripts.gz)``) is read once, into a temporary file that
has no name (on Linux: a killed run leaves nothing behind), and at most
MAX_STREAM_BYTES of it. A device or a socket is refused before it is opened:
``/dev/zero`` never ends.

What a symlink leads to is read under :class:`~trainproof.io.access.ReadPolicy`:
a text (or a metadata.csv in a folder) that is a link, or lies under one,
inside the input's folder or the working directory, is read only when its
target stays inside them and out of any ``.git`` folder (``--follow-links``:
anywhere), else an InputError; a link to a pipe is a link like any other,
and only a descriptor named as such (``/dev/stdin``, ``/dev/fd/63``) is the
user's own (:meth:`~trainproof.io.access.ReadPolicy.refusal`). A clip of an
LJSpeech metadata.csv whose link leads outside is not opened: it has no
duration, and a note counts it.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

from trainproof.io import figures
from trainproof.io.access import ReadPolicy
from trainproof.io.bounded import iter_line_blocks, iter_lines, size_text, special_kind
from trainproof.io.errors import InputError

TEXT_KEYS = ("text", "transcript", "sentence", "normalized_text", "transcription")
"""JSONL fields read as the transcript, the first present."""

SNIFF_BYTES = 65536
"""Bytes read to tell text from binary and from UTF-16."""

MAX_STREAM_BYTES = 4 << 30
"""Bytes: the most read from a pipe (4 GiB), which is copied to a temporary file first. A text that size is tens of
millions of transcripts, whose token ids alone outgrow the memory of the machines trainproof runs on."""

_STREAM_SUFFIXES = (".jsonl", ".json", ".ndjson", ".csv")


@dataclass(frozen=True)
class Transcripts:
    """The transcripts of one input, in file order: ``lines[i]`` is where ``texts[i]`` is, ``durations[i]`` its audio's
    seconds (None when unknown)."""

    path: str
    kind: str  # "text", "jsonl", "ljspeech"
    lines: tuple[int, ...]
    texts: tuple[str, ...]
    durations: tuple[float | None, ...]
    notes: tuple[str, ...] = ()


def read_transcripts(path: str | os.PathLike[str], follow_links: bool = False) -> Transcripts:
    """The transcripts of a text file, a JSONL manifest, or an LJSpeech metadata.csv (or its folder); InputError when the
    input is none of them, or a symlink leads it outside its folder (see the module doc; ``follow_links`` lifts that)."""
    target = Path(path)
    try:
        mode = target.stat().st_mode
    except (OSError, ValueError):
        mode = None
    if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISFIFO(mode)):
        raise InputError(path, f"is not a regular file ({special_kind(mode)}); give a text file, a JSONL manifest or a metadata.csv")
    policy = ReadPolicy.for_input(target, follow_links=follow_links)
    _allowed(policy, target)
    if mode is not None and stat.S_ISFIFO(mode):  # a pipe (<(...)): read once, kept
        return _spooled(target)
    if target.is_dir():
        if (target / "metadata.csv").is_file():
            _allowed(policy, target / "metadata.csv")
            return _ljspeech(target, policy)
        raise InputError(path, "is a folder without a metadata.csv; give a text file, a JSONL manifest or a metadata.csv")
    if not target.exists():
        raise InputError(path, "does not exist")
    return _read(target, target.name, policy)


def _allowed(policy: ReadPolicy, path: Path) -> None:
    """An InputError when a symlink leads ``path`` where the policy does not read (see :mod:`trainproof.io.access`)."""
    refusal = policy.refusal(path)
    if refusal is not None:
        raise InputError(path, refusal)


def _read(target: Path, name: str, policy: ReadPolicy | None = None) -> Transcripts:
    """The transcripts of a file, of a kind told by its content and by ``name`` (its own, or a pipe's it was copied
    from); an LJSpeech metadata.csv's clips are read under ``policy`` (a pipe's, which is in no folder, under none)."""
    _sniff(target)
    if _is_ljspeech(target, name):
        return _ljspeech(target, policy)
    if Path(name).suffix.lower() in (".jsonl", ".json", ".ndjson"):
        return _jsonl(target)
    return _plain(target)


def _is_ljspeech(target: Path, name: str) -> bool:
    """Whether the file at ``target``, named ``name``, is an LJSpeech metadata.csv: by that name, or a .csv whose first
    line holds a "|"."""
    return name.lower() == "metadata.csv" or (Path(name).suffix.lower() == ".csv" and _first_line(target).count("|") >= 1)


def listed_audio(path: str | os.PathLike[str], follow_links: bool = False) -> list[str]:
    """The clips an LJSpeech text lists (their headers give the durations), which no output may overwrite; none for a
    text of any other kind, or one that cannot be read."""
    target = Path(path)
    try:
        if target.is_dir():
            target = target / "metadata.csv"
        if not target.is_file() or not _is_ljspeech(target, target.name):
            return []
        from trainproof.data.manifest import read_manifest

        return [entry.audio for entry in read_manifest(str(target), follow_links=follow_links).entries]
    except (InputError, OSError):
        return []


def _spooled(path: Path) -> Transcripts:
    """A pipe, which can be read only once, copied to a temporary file and read from there, under its own name."""
    name = path.name if path.suffix.lower() in _STREAM_SUFFIXES else "stream.txt"
    with _unnamed_file() as (copy, where):
        try:
            with open(path, "rb") as source:
                _copy(path, source, copy)
        except OSError as exc:
            raise InputError(path, f"cannot be read: {exc.strerror or exc}") from None
        try:
            return replace(_read(where, name), path=str(path))
        except InputError as error:
            raise InputError(path, error.problem) from None


@contextmanager
def _unnamed_file() -> Iterator[tuple[BinaryIO, Path]]:
    """A temporary file to write, and a path it is read back by. Where the system lets a file without a name be opened
    again (Linux's /proc/self/fd), it has none, so a run killed while copying leaves nothing behind; elsewhere it is in
    a temporary folder, removed when done."""
    if os.path.isdir("/proc/self/fd"):
        with tempfile.TemporaryFile() as handle:
            yield handle, Path(f"/proc/self/fd/{handle.fileno()}")
        return
    with tempfile.TemporaryDirectory(prefix="trainproof-") as folder:
        path = Path(folder) / "stream"
        with open(path, "w+b") as handle:
            yield handle, path


def _copy(path: Path, source: BinaryIO, sink: BinaryIO) -> None:
    copied = 0
    while block := source.read(1 << 20):
        copied += len(block)
        if copied > MAX_STREAM_BYTES:
            raise InputError(path, f"is a stream of more than {size_text(MAX_STREAM_BYTES)}, more than trainproof reads from one")
        sink.write(block)
    sink.flush()


def _sniff(path: Path) -> None:
    try:
        with open(path, "rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError as exc:
        raise InputError(path, f"cannot be read: {exc.strerror or exc}") from None
    if not head.strip():
        raise InputError(path, "is empty")
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(path, "is UTF-16 text; save it as UTF-8")
    if b"\x00" in head:
        raise InputError(path, "is binary, not text")
    text = head.decode("utf-8", errors="replace")
    if text.count("\ufffd") > max(8, len(text) // 100):
        raise InputError(path, "is not UTF-8 text (another encoding?); save it as UTF-8")


def _first_line(path: Path) -> str:
    for _, text, _ in iter_lines(path):
        if text.strip():
            return text
    return ""


def _plain(path: Path) -> Transcripts:
    lines: list[int] = []
    texts: list[str] = []
    for first, block, _ in iter_line_blocks(path):
        if all(map(str.strip, block)):  # no blank line: the block as it is
            lines.extend(range(first, first + len(block)))
            texts.extend(block)
        else:
            kept = [(number, text) for number, text in enumerate(block, first) if text.strip()]
            lines.extend(number for number, _ in kept)
            texts.extend(text for _, text in kept)
    if lines and lines[0] == 1:
        texts[0] = texts[0].lstrip("\ufeff")
        if not texts[0].strip():
            del lines[0], texts[0]
    return _built(path, "text", lines, texts, [None] * len(texts), [])


def _jsonl(path: Path) -> Transcripts:
    lines, texts, durations = [], [], []
    skipped = 0
    for number, raw, _ in iter_lines(path):
        raw = raw.lstrip("\ufeff") if number == 1 else raw
        if not raw.strip():
            continue
        text, duration = _record(raw)
        if text is None:
            skipped += 1
            continue
        lines.append(number)
        texts.append(text)
        durations.append(duration)
    notes = []
    if skipped:
        held, was = ("holds", "was") if skipped == 1 else ("hold", "were")
        notes.append(f"{figures.plural(skipped, 'line')} {held} no transcript (no field {', '.join(TEXT_KEYS)}) and {was} skipped")
    return _built(path, "jsonl", lines, texts, durations, notes)


def _record(raw: str) -> tuple[str | None, float | None]:
    try:
        record = json.loads(raw)
    except (ValueError, RecursionError):
        return None, None
    if not isinstance(record, dict):
        return None, None
    text = next((record[k] for k in TEXT_KEYS if isinstance(record.get(k), str)), None)
    duration = record.get("duration")
    seconds = float(duration) if isinstance(duration, (int, float)) and not isinstance(duration, bool) and duration > 0 else None
    return text, seconds


def _ljspeech(path: Path, policy: ReadPolicy | None) -> Transcripts:
    from trainproof.data.manifest import read_manifest

    manifest = read_manifest(str(path), follow_links=policy is not None and policy.follow_links)
    entries = [e for e in manifest.entries if e.text and e.text.strip()]
    durations = [e.duration for e in entries]
    notes = list(manifest.notes)
    if not any(d is not None for d in durations):
        durations, found = _audio_durations([e.audio for e in entries], policy)
        notes += found
    return _built(path, "ljspeech", [e.line for e in entries], [e.text or "" for e in entries], durations, notes)


def _audio_durations(paths: list[str], policy: ReadPolicy | None = None) -> tuple[list[float | None], list[str]]:
    """Each file's duration from its header, None where it cannot be read or ``policy`` refuses its link; without
    soundfile, none. With notes counting what has no duration, and why."""
    try:
        import soundfile
    except ImportError:
        return [None] * len(paths), ["soundfile is not installed, so audio durations (and tokens per second) are unknown"]
    out: list[float | None] = []
    refused: list[tuple[str, str]] = []
    for audio in paths:
        try:
            if not os.path.isfile(audio):  # missing, or a FIFO (which soundfile would wait on forever) or a device
                out.append(None)
                continue
            refusal = policy.refusal(audio) if policy is not None else None
            if refusal is not None:
                refused.append((audio, refusal))
                out.append(None)
                continue
            info = soundfile.info(audio)
            out.append(info.frames / info.samplerate if info.samplerate > 0 and info.frames > 0 else None)
        except Exception:  # noqa: BLE001 -- a missing or broken clip only loses its duration here
            out.append(None)
    notes = []
    if refused:
        audio, why = refused[0]
        was, has = ("was", "has") if len(refused) == 1 else ("were", "have")
        notes.append(f"{len(refused):,} of {figures.plural(len(out), 'clip')} {was} not opened, so {has} no duration: {audio} {why}")
    missing = sum(d is None for d in out) - len(refused)
    if missing:
        has = "has" if missing == 1 else "have"
        notes.append(f"{missing:,} of {figures.plural(len(out), 'clip')} {has} no readable audio, so no duration")
    return out, notes


def _built(path: Path, kind: str, lines: list[int], texts: list[str], durations: list, notes: list[str]) -> Transcripts:
    if not texts:
        raise InputError(path, "holds no transcript")
    return Transcripts(str(path), kind, tuple(lines), tuple(texts), tuple(durations), tuple(notes))
