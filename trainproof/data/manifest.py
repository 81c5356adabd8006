"""A speech dataset's manifest, whatever its layout, read into a :class:`Manifest`.

The layout is detected from the path:

- ``ljspeech``: a folder holding ``metadata.csv``, or a pipe-separated file
  itself (``id|text`` or ``id|raw text|normalized text``; the last column is
  the text). A header row (``id|text``, ``audio_file|text|speaker_name``) is
  recognised, and then names the columns. A bare id is looked for in
  ``wavs/``, ``wav/`` (Piper) and ``audio/`` beside the file, then beside it,
  or only in ``--audio-dir``; an id carrying a folder resolves against the
  file's folder. Without an extension, any audio extension libsndfile reads
  is tried: ``.wav`` first, else the first by name, with a note.
- ``nemo``: JSON Lines (``audio_filepath``, ``text``, ``duration``,
  ``offset``, ``speaker`` and common aliases). A relative path resolves
  from the working directory when the file is there, else against the
  manifest's folder (NeMo's own rule). A plain manifest (nothing for the
  line reading to report) is read at once as columns by Arrow's JSON
  reader when pyarrow is installed; any other, line by line.
- ``csv``: a comma- or tab-separated file with a header naming the columns
  (the JSONL names, DeepSpeech's ``wav_filename``/``transcript``, Common
  Voice's ``path``/``sentence``/``client_id``, SpeechBrain's ``wav``/``wrd``);
  paths resolve like NeMo's, then in ``clips/`` beside the manifest (Common
  Voice).
- ``kaldi``: a data dir (``wav.scp``, ``text``, ``utt2spk``, optional
  ``segments``), relative paths from the working directory (the recipe root).
- ``folder``: a folder of audio with sibling transcripts of the same stem
  (``.txt``, ``.lab``, ``.normalized.txt``, ``.original.txt``). One clip per
  audio file: of several transcripts beside it, the first holding text is
  read (a note names the others); a file of start/end times (pocketsphinx's
  and Audacity's ``.lab`` labels, HTK alignments) is not a transcript, nor a
  clip of its own. A clip without a transcript beside it is unlisted; when
  no clip has one, the folder is an audio-only corpus (``audio_only``: a
  vocoder's or codec's, or audio not yet transcribed), every clip an entry
  without text, judged by the rules about audio alone.
- ``librispeech``: a folder layout whose folders hold LibriSpeech's transcript
  lists (``<reader>/<chapter>/<reader>-<chapter>.trans.txt``, each line
  ``<utterance-id> <TRANSCRIPT>``): each line's id names the clip of that stem
  beside the list (any audio extension libsndfile reads; ``.flac`` first).
  A line whose clip is absent is a missing clip at that line; a clip no list
  line names (nor a sidecar transcript) is unlisted. The reader, the list's
  name up to its first ``-``, is the clip's speaker. A ``.trans.txt`` named
  itself is read as its folder.

When a NeMo, CSV or Kaldi manifest's relative paths resolve from neither the
working directory nor its folder, they are looked for from the ABOVE_LEVELS
folders above its folder, and the nearest from which most of them resolve
(a Kaldi recipe's root, two above ``data/train``; a repository's root) is
taken as one more base, with a note: see :func:`_settle_above`.

Of a CSV's columns or a JSONL record's keys, the audio path and the
transcript are read from the first name of AUDIO_KEYS and TEXT_KEYS there,
with a note when there are several; ``audio_column`` and ``text_column``
name them instead (a name no record has is an InputError listing the names
there are).

``root`` replaces every base a relative path is joined to. What is wrong
with the manifest itself (a line that is not a record, a BOM, CRLF, blank
lines, a repeated id, an empty transcript, an audio file no line lists) is a
:class:`Problem` at its line; only a path that cannot be read as a manifest
at all is an :class:`InputError`. A listed file that does not exist is left
to the per-clip analysis: resolving costs at most a stat or two per clip,
and LJSpeech ids are looked up in one listing of each audio folder.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath
from typing import Any, cast

import orjson

from trainproof.data import uri
from trainproof.data.model import Entries, Entry, Manifest, Problem
from trainproof.data.uri import is_uri
from trainproof.io import figures
from trainproof.io.access import ReadPolicy
from trainproof.io.bounded import BLOCK_BYTES, MAX_LINE_BYTES, EmptyLog, iter_lines, mostly_binary, open_log, read_block
from trainproof.io.errors import InputError

AUDIO_EXTENSIONS = (
    ".wav", ".flac", ".ogg", ".oga", ".opus", ".mp3", ".aiff", ".aif", ".aifc", ".au", ".snd", ".caf", ".w64", ".rf64",
    ".sph", ".nist", ".voc", ".htk", ".sf", ".ircam", ".paf", ".pvf", ".xi", ".sd2", ".avr", ".wve", ".mat4", ".mat5",
)  # fmt: skip
"""File extensions of the formats libsndfile reads: an extensionless LJSpeech id is looked for with each."""
_AUDIO = frozenset(AUDIO_EXTENSIONS)

TRANSCRIPT_SUFFIXES = (".txt", ".lab", ".normalized.txt", ".original.txt")
"""The transcript beside a clip of a folder dataset, in order of preference (LibriTTS has the last two)."""

CHAPTER_LIST_SUFFIX = ".trans.txt"
"""LibriSpeech's transcript list, one a chapter folder (``84-121123.trans.txt``): a line ``<utterance-id> <TEXT>`` for
each clip beside it (``84-121123-0000.flac``)."""

LJSPEECH_FOLDERS = ("wavs", "wav", "audio")
"""Where a bare LJSpeech id is looked for beside metadata.csv, in order (LJSpeech, Piper, others), before the folder itself."""

HEAD_BYTES = 64 * 1024
"""How much of a manifest is looked at to tell text from binary, and the most of a folder dataset's transcript read."""

BINARY_SHARE = 0.1
"""Share of control bytes or undecodable characters in a file's first HEAD_BYTES above which it is binary, not a manifest."""

MAX_FOLDER_SCAN = 250_000
"""Most entries of one audio folder listed (to resolve ids and find unlisted files); a larger folder is looked up file by
file and not searched for unlisted files."""

MAX_FOLDER_FILES = 1_000_000
"""Most audio files a folder dataset may hold: a larger one needs a manifest."""

ABOVE_LEVELS = 4
"""How many folders above a manifest's its relative paths are looked for from when they do not resolve where the
layout looks (NeMo, CSV, Kaldi: the working directory, and the manifest's folder): a Kaldi data dir is two below its
recipe's root (``data/train``), a repository's test manifest three (``tests/data/asr``). The filesystem's root ends
the search sooner."""

ABOVE_SAMPLE = 64
"""How many of a manifest's relative paths, spread evenly over it, are looked at to tell whether its paths resolve
where the layout looks, and if not, from which folder above it they do: a stat or two each, so a manifest whose paths
resolve costs the same at any size."""

ABOVE_SHARE = 0.5
"""A folder above the manifest's is taken as its paths' base only when more than this share of the sampled paths that
resolve nowhere else resolve from it (the nearest such folder): most of them, not a stray file of the same name."""

TAIL_PARTS = 6
"""A manifest whose paths resolve nowhere is searched for its audio by the last (up to) this many parts of each path
under the manifest's folder and the folders above it, for a note: written on another machine, its paths are absolute
there."""

MAX_LINE_PROBLEMS = 1_000
"""Most problems of one kind kept for lines that are not records (``unparsable``, ``no-audio-field``); the rest are counted in a note."""

LEADING_GARBAGE = 100
"""A manifest whose first this many records are all unparsable is not a manifest of its layout: an InputError."""

NOTE_EXAMPLES = 3
"""How many examples a note names."""

MAX_CLAIM_S = float(2**31)
"""The latest a segment may start or end, and the longest it may last, in seconds: 2**31 s (68 years) is past any
recording, and at any sample rate a header can give (under 2**31 Hz) stays a frame count the records hold (64 bits).
A larger one (an offset of 1e308) is an unparsable value at its line, not a segment sought at a figure clamped out of
recognition. A duration without an offset is a claim about the clip, compared as it is."""
_CLAIM_YEARS = MAX_CLAIM_S / (365.25 * 86400)

AUDIO_KEYS = (
    "audio_filepath", "wav_filename", "wav", "audio_path", "audio_file", "audio_filename", "audio", "wav_path", "wav_file",
    "filepath", "file_path", "path", "filename", "file_name", "file",
)  # fmt: skip
"""Column or key names of a clip's audio path, in order of preference (names are compared in lower case): first the
names a trainer reads (NeMo's ``audio_filepath``, DeepSpeech's ``wav_filename``, SpeechBrain's ``wav``), then the
generic ones. Of several in one manifest, the first is read and a note names the others (``--audio-column`` chooses)."""
TEXT_KEYS = ("normalized_text", "normalized_transcript", "text", "transcript", "transcription", "sentence", "wrd", "words")
"""Names of the transcript, in order of preference: a normalized text first (what a TTS front end is fed). NeMo's
``pred_text`` is a model's output, not a transcript, and is never read."""
SPEAKER_KEYS = ("speaker", "speaker_id", "speaker_name", "spk", "spk_id", "client_id")
ID_KEYS = ("id", "utt_id", "utterance_id", "uttid", "utt", "key")
DURATION_KEYS = ("duration",)
OFFSET_KEYS = ("offset",)
_HEADER_FIRST = frozenset(AUDIO_KEYS + ID_KEYS + ("name",))
_HEADER_OTHER = frozenset(TEXT_KEYS + SPEAKER_KEYS + ("raw_text", "normalized", "phonemes"))

_KALDI_FILES = ("wav.scp", "segments", "utt2spk", "spk2utt")


def read_manifest(
    path: str | Path,
    root: str | Path | None = None,
    audio_dir: str | Path | None = None,
    cwd: str | Path | None = None,
    follow_links: bool = False,
    audio_column: str | None = None,
    text_column: str | None = None,
) -> Manifest:
    """The dataset at ``path`` (a manifest file or a dataset folder) as its manifest describes it.

    ``root`` replaces every base relative audio paths are joined to;
    ``audio_dir`` is where bare LJSpeech ids are looked for; ``cwd`` is the
    working directory a trainer would run in (default: this process's, and
    then paths found there stay relative). ``follow_links``: read through
    every symlink (see :func:`read_policy` for what is refused without it).
    ``audio_column`` and ``text_column``: the column (CSV/TSV) or key (JSONL)
    holding the audio path and the transcript, instead of the first of
    AUDIO_KEYS and TEXT_KEYS there (compared in lower case).
    """
    given = str(path)
    if not os.path.exists(given):
        raise InputError(given, "does not exist")
    here = os.getcwd() if cwd is None else str(cwd)
    # the named manifest (or folder) may not be a link out of its folder and the working directory
    ReadPolicy.for_input(given, cwd=False, extra=(here,), follow_links=follow_links).require(given)
    layout, target = _detect(given)
    ctx = _Context(
        root=None if root is None else str(root),
        audio_dir=None if audio_dir is None else str(audio_dir),
        cwd=None if cwd is None else str(cwd),
        policy=read_policy(given, layout, root=root, audio_dir=audio_dir, cwd=here, follow_links=follow_links),
        audio_column=None if audio_column is None else audio_column.strip().lower(),
        text_column=None if text_column is None else text_column.strip().lower(),
    )
    builder = _Builder(layout)
    if layout == "ljspeech":
        _read_ljspeech(target, ctx, builder)
    elif layout == "nemo":
        _read_nemo(target, ctx, builder)
    elif layout == "csv":
        _read_csv(target, ctx, builder)
    elif layout == "kaldi":
        builder.garbage_check = False  # a data dir's entries are made once every file is read
        _read_kaldi(target, ctx, builder)
    else:
        _read_folder(target, ctx, builder)
    if ctx.audio_dir is not None and layout != "ljspeech":
        builder.notes.append(f"--audio-dir applies to LJSpeech ids only; this is a {layout} dataset, so it was not used")
    for option, value in (("--audio-column", ctx.audio_column), ("--text-column", ctx.text_column)):
        if value is not None and layout not in ("csv", "nemo"):
            builder.notes.append(f"{option} applies to CSV/TSV and JSONL manifests only; this is a {layout} dataset, so it was not used")
    return builder.build(given)


def read_policy(
    path: str,
    layout: str,
    *,
    root: str | Path | None = None,
    audio_dir: str | Path | None = None,
    cwd: str | Path | None = None,
    follow_links: bool = False,
    found_root: str | None = None,
) -> ReadPolicy:
    """What the dataset at ``path`` (of ``layout``) may read: the files within its folder (the folder named, or the
    manifest's), within the working directory ``cwd`` for the layouts whose paths resolve there (NeMo, CSV, Kaldi),
    within the folder above the manifest's that its paths were found from (``found_root``: see
    :attr:`Manifest.found_root`; the paths name it, so it is the dataset's), and within ``--root`` and
    ``--audio-dir``, but no symlink met there that leads out of them or into a ``.git`` folder, unless
    ``follow_links`` (:class:`trainproof.io.access.ReadPolicy`). The dataset's folder is taken as named when it is a link
    itself (the named path was judged on its own: see :func:`read_manifest`)."""
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    extras = (root, audio_dir, found_root)
    named = [folder, *(str(extra) for extra in extras if extra is not None and not is_uri(str(extra)))]
    if layout in CWD_LAYOUTS:
        named.append(os.getcwd() if cwd is None else str(cwd))
    return ReadPolicy(tuple(named), follow_links)


CWD_LAYOUTS = frozenset({"nemo", "csv", "kaldi"})
"""The layouts whose relative paths resolve from the working directory, which is then one of a dataset's roots."""


# --- detection ------------------------------------------------------------------


def _detect(path: str) -> tuple[str, str]:
    """The layout of the dataset at an existing path, and the file (or folder) to read it from."""
    if os.path.isdir(path):
        metadata = os.path.join(path, "metadata.csv")
        if _present(metadata):
            return "ljspeech", metadata
        if _present(os.path.join(path, "wav.scp")):
            return "kaldi", path
        return "folder", path
    name = os.path.basename(path)
    folder = os.path.dirname(path)
    if name in _KALDI_FILES or (name == "text" and _present(os.path.join(folder, "wav.scp"))):
        return "kaldi", folder
    if _extension(name) in _AUDIO:
        raise InputError(path, "is an audio file, not a manifest: give the dataset's manifest or its folder")
    if name.endswith(CHAPTER_LIST_SUFFIX):  # a LibriSpeech chapter's list: the chapter's folder, as the list describes it
        return "folder", folder
    _check_text(path)
    first = next((text for _, text in _content_lines(path)), "")
    stripped = first.lstrip("\ufeff").strip()
    ext = _extension(name)
    if ext in (".json", ".jsonl", ".ndjson") or stripped[:1] in ("{", "["):
        return "nemo", path
    if "\t" in first:
        return "csv", path
    if "|" in first or name == "metadata.csv":
        return "ljspeech", path
    if "," in first or ext in (".csv", ".tsv"):
        return "csv", path
    raise InputError(
        path,
        "is not a manifest trainproof reads: its first line is not JSON, nor pipe-, tab- or comma-separated "
        "(layouts: LJSpeech metadata.csv, NeMo JSONL, CSV/TSV with a header, a Kaldi data dir, a folder of audio)",
    )


def _present(path: str) -> bool:
    """Whether something that is not a folder is at ``path``: a file, but also a FIFO, a device or a dangling link,
    which reading it then reports (a FIFO ``text`` is an error, not a data dir without transcripts)."""
    return os.path.lexists(path) and not os.path.isdir(path)


def _extension(name: str) -> str:
    return os.path.splitext(name)[1].lower()


def _check_text(path: str) -> None:
    """A manifest must be text: UTF-16, NUL bytes or mostly control bytes are an InputError."""
    with open_log(Path(path)) as handle:
        head = read_block(handle, HEAD_BYTES, path)
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(path, "is UTF-16 text: trainproof reads manifests in UTF-8, as trainers do; save it as UTF-8")
    if b"\x00" in head:
        raise InputError(path, "holds binary data (NUL bytes), not a text manifest")
    if not head:
        return
    if mostly_binary(head, BINARY_SHARE):
        raise InputError(path, "is mostly binary data, not a text manifest")


def _content_lines(path: str) -> Iterator[tuple[int, str]]:
    """The non-blank lines of a file, unreported (for sniffing: its head is read first, not a whole block)."""
    for number, text, _ in iter_lines(Path(path), HEAD_BYTES):
        if text.lstrip("\ufeff").strip():
            yield number, text


# --- shared machinery -----------------------------------------------------------


@dataclass
class _Context:
    root: str | None
    audio_dir: str | None
    cwd: str | None
    policy: ReadPolicy = field(default_factory=ReadPolicy)
    audio_column: str | None = None  # the column (or key) of the audio path, as --audio-column names it, in lower case
    text_column: str | None = None


@dataclass
class _Builder:
    """Collects entries, problems and notes in manifest order; checks ids and transcripts as entries come."""

    layout: str
    entries: list[Entry] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ids: dict[str, int] = field(default_factory=dict)
    line_problems: dict[str, int] = field(default_factory=dict)
    garbage_check: bool = True
    unreadable_texts: list[str] = field(default_factory=list)  # a folder dataset's transcripts that cannot be read
    columns: dict[str, Sequence[object]] | None = None  # every entry at once, as columns (instead of ``entries``)
    bases: tuple[str, ...] = ()  # see Manifest.bases
    choices: dict[str, tuple[str, ...]] = field(default_factory=dict)  # "audio", "text" -> the first set of candidates seen, the one read first
    found_root: str | None = None  # see Manifest.found_root
    audio_only: bool = False  # see Manifest.audio_only

    def saw_names(self, names: Sequence[str], ctx: _Context) -> None:
        """The column (or key) names of a record, lower case: when several could be its audio path or its transcript
        and no option named one, the first such set is kept for :meth:`choice_notes`."""
        for what, keys, chosen in (("audio", AUDIO_KEYS, ctx.audio_column), ("text", TEXT_KEYS, ctx.text_column)):
            if chosen is None and what not in self.choices:
                found = _candidates(names, keys)
                if len(found) > 1:
                    self.choices[what] = found

    def choice_notes(self, kind: str) -> None:
        """A note for each of the audio path and the transcript that had several candidate ``kind``s (column, key)."""
        for what, option in (("audio", "--audio-column"), ("text", "--text-column")):
            found = self.choices.get(what)
            if found:
                name = "audio path" if what == "audio" else "transcript"
                others = ", ".join(repr(other) for other in found[1:])
                self.notes.append(f"{len(found)} {kind}s could be the {name}: {found[0]!r} was read, not {others} (choose with {option} NAME)")

    def problem(self, kind: str, message: str, manifest: str, line: int | None = None, file: str | None = None, lines: int = 1) -> None:
        if kind in ("unparsable", "no-audio-field"):
            count = self.line_problems[kind] = self.line_problems.get(kind, 0) + 1
            if self.garbage_check and not self.entries and sum(self.line_problems.values()) == LEADING_GARBAGE:
                raise InputError(
                    manifest,
                    f"is not a {self.layout} manifest: none of its first {LEADING_GARBAGE} records is a clip ({self._first_line_problem()})",
                )
            if count > MAX_LINE_PROBLEMS:
                return
        self.problems.append(Problem(kind, message, manifest, line, file, lines))

    def _first_line_problem(self) -> str:
        return next((p.message for p in self.problems if p.kind in ("unparsable", "no-audio-field")), "")

    def add(self, entry: Entry, unique: bool = True, missing: str | None = None) -> None:
        """An entry, with a ``duplicate-id`` problem when its id came before and ``empty-text`` when it has no text
        (``missing`` says why when it has none at all)."""
        if unique:
            first = self.ids.setdefault(entry.id, entry.line)
            if first != entry.line:
                self.problem(
                    "duplicate-id", f"line {entry.line} repeats the id {_quote(entry.id)} of line {first}", entry.manifest, entry.line
                )
        if entry.text is None:
            self.problem("empty-text", missing or f"{_quote(entry.id)} has no transcript", entry.manifest, entry.line)
        elif not entry.text.strip():
            self.problem("empty-text", f"line {entry.line}: {_quote(entry.id)} has an empty transcript", entry.manifest, entry.line)
        self.entries.append(entry)

    def build(self, path: str) -> Manifest:
        notes = list(self.notes)
        for kind, count in self.line_problems.items():
            if count > MAX_LINE_PROBLEMS:
                notes.append(f"{count:,} lines are {kind}; the first {MAX_LINE_PROBLEMS:,} are listed")
        problems = sorted(self.problems, key=lambda p: (p.manifest, p.line if p.line is not None else 0))
        entries = Entries(self.entries) if self.columns is None else Entries(columns=self.columns)
        return Manifest(
            path=path, layout=self.layout, entries=entries, problems=tuple(problems), notes=tuple(notes), bases=self.bases,
            found_root=self.found_root, audio_only=self.audio_only,
        )  # fmt: skip


def tried_paths(manifest: Manifest, listed: str) -> tuple[str, ...]:
    """Every file a listed path was looked for at, in order, as the layout's resolver looked (see
    :attr:`Manifest.bases`); empty when the layout looks in one place only, which is then the entry's ``audio``. An
    LJSpeech id without an extension was looked for with each audio extension: ``wavs/x.*``."""
    if not manifest.bases or is_uri(listed) or os.path.isabs(listed):
        return ()
    if manifest.layout == "ljspeech":
        if "/" in listed or os.sep in listed:  # an id with a folder resolves against the dataset's folder alone
            return ()
        listed = listed if _extension(listed) in _AUDIO else listed + ".*"
    return tuple(dict.fromkeys(_join(base, listed) for base in manifest.bases))


def _quote(text: object, limit: int = 60) -> str:
    shown = str(text)
    return repr(shown if len(shown) <= limit else shown[:limit] + "...")


def _lines(path: str, builder: _Builder) -> Generator[tuple[int, str], None, None]:
    """The non-blank lines of a manifest file, streamed; a BOM, blank lines and CRLF line ends become problems.

    A BOM is taken off the first line. CRLF, and bytes that are not UTF-8,
    are counted in a second bounded pass once the lines are read (``iter_lines``
    drops the CR, and reads a bad byte as U+FFFD), when the lines held a CR or
    a U+FFFD.
    """
    blank, first_blank = 0, None
    seen: set[str] = set()
    for number, text, _ in iter_lines(Path(path), seen=seen):
        if number == 1 and text.startswith("\ufeff"):
            builder.problem(
                "bom",
                "starts with a byte-order mark (BOM), which a reader that does not expect one takes as part of the first field",
                path,
                1,
            )
            text = text[1:]
        if not text.strip():
            blank += 1
            first_blank = first_blank or number
            continue
        yield number, text
    if blank:
        builder.problem(
            "blank-line", f"has {blank:,} blank line{'s' if blank != 1 else ''}, the first at line {first_blank}", path, first_blank
        )
    crlf, first_crlf, not_utf8, first_not_utf8 = _scan_bytes(path) if seen else (0, None, 0, None)
    if not_utf8:
        builder.problem(
            "not-utf8",
            f"line {first_not_utf8} holds bytes that are not UTF-8: a trainer reading the manifest as UTF-8 (Python's open() "
            "does) stops there with a UnicodeDecodeError; here they were read as U+FFFD",
            path,
            first_not_utf8,
            lines=not_utf8,
        )
    if crlf:
        builder.problem(
            "crlf",
            f"has Windows line ends (CRLF) on {crlf:,} line{'s' if crlf != 1 else ''}, the first at line {first_crlf}: a reader splitting on newlines keeps the CR in the last field",
            path,
            first_crlf,
        )


def _scan_bytes(path: str) -> tuple[int, int | None, int, int | None]:
    """How many lines end in CRLF and the first of them, and how many lines hold bytes that are not UTF-8 and the
    first of those, in one pass over the bytes a block at a time (a block is decoded whole; only a block that fails is
    decoded line by line)."""
    count, first, newlines, pending_cr = 0, None, 0, False
    bad, first_bad, carry = 0, None, b""
    with open_log(Path(path)) as handle:
        while block := read_block(handle, BLOCK_BYTES, path):
            joined = pending_cr and block.startswith(b"\n")
            found = block.count(b"\r\n") + joined
            if found and first is None:
                first = newlines + 1 if joined else newlines + block.count(b"\n", 0, block.find(b"\r\n")) + 1
            count += found
            text = carry + block  # ``carry`` is the start of line ``newlines + 1``
            cut = text.rfind(b"\n") + 1  # whole lines only: a character is never split between two blocks
            if cut == 0 and len(text) > MAX_LINE_BYTES:  # the readers refuse such a line anyway
                cut = len(text)
            bad, first_bad = _not_utf8(text[:cut], newlines, bad, first_bad)
            carry = text[cut:]
            newlines += block.count(b"\n")
            pending_cr = block.endswith(b"\r")
    bad, first_bad = _not_utf8(carry, newlines, bad, first_bad)
    return count, first, bad, first_bad


def _not_utf8(data: bytes, lines_before: int, bad: int, first_bad: int | None) -> tuple[int, int | None]:
    """``bad`` and ``first_bad`` counted on through ``data`` (whole lines, the first of them line ``lines_before + 1``)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        for number, line in enumerate(data.split(b"\n"), lines_before + 1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                bad += 1
                first_bad = first_bad or number
    return bad, first_bad


def _normpath(path: str) -> str:
    """``path`` with "." segments and repeated separators taken out, as os.path.normpath does, but ".." kept: the
    system resolves ``a/../b.wav`` through ``a`` (which must exist, and may be a link to elsewhere), so a trainer
    opening it may not reach the ``b.wav`` that collapsing the text would name."""
    return os.path.normpath(path) if ".." not in path else str(PurePath(path))


_POSIX = os.sep == "/"
"""Where a path starting with "/" is absolute (os.path.isabs costs a call into posixpath a clip)."""


def _is_normal(path: str) -> bool:
    """Whether os.path.normpath would give a POSIX absolute path back unchanged (the common case, checked in C-level
    string searches instead of normpath's split and join)."""
    return os.sep == "/" and "//" not in path and "/." not in path and not path.endswith("/")


def _join(base: str, listed: str) -> str:
    """``listed`` joined to ``base`` (an absolute ``listed`` stays itself), normalised but not resolved; a URI
    (``s3://``, ``gs://``, ``file://``) is kept as written, and a relative path under a URI base is joined with ``/``."""
    if is_uri(listed):
        return listed
    if is_uri(base):
        return uri.join(base, listed)
    return _normpath(os.path.join(base, listed))


def _seconds(value: object) -> tuple[float | None, bool]:
    """A duration or offset claim in seconds, and whether it was readable (an absent or empty one is None and readable)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, True
    if isinstance(value, bool):
        return None, False
    if not isinstance(value, (int, float, str)):
        return None, False
    try:
        number = float(value)
    except (ValueError, OverflowError):  # OverflowError: a whole number of 309 digits or more
        return None, False
    return (number, True) if math.isfinite(number) else (None, False)


def _too_long(seconds: float) -> str:
    """What is wrong with a claim over MAX_CLAIM_S, after the word naming it."""
    return f"{seconds:g} s is out of range: over {MAX_CLAIM_S:,.0f} s ({_CLAIM_YEARS:.0f} years), longer than any recording"


def _first_key(names: Iterable[str], keys: tuple[str, ...]) -> str | None:
    present = set(names)
    return next((key for key in keys if key in present), None)


def _candidates(names: Iterable[str], keys: tuple[str, ...]) -> tuple[str, ...]:
    """The names of ``keys`` among ``names``, in the order of preference of ``keys``."""
    present = set(names)
    return tuple(key for key in keys if key in present)


NAMES_SHOWN = 40
"""The most column or key names an error listing a manifest's names shows; the rest are counted."""


def _require_named(path: str, ctx: _Context, names: Sequence[str], kind: str) -> None:
    """An InputError when --audio-column or --text-column names no ``kind`` (column, key) of the manifest, which
    has ``names`` (as written): one line listing them."""
    present = {name.strip().lower() for name in names}
    for option, wanted in (("--audio-column", ctx.audio_column), ("--text-column", ctx.text_column)):
        if wanted is not None and wanted not in present:
            shown = ", ".join(_quote(name.strip(), 40) for name in names[:NAMES_SHOWN])
            more = f" and {len(names) - NAMES_SHOWN:,} more" if len(names) > NAMES_SHOWN else ""
            where = "its header names" if kind == "column" else "its records have the keys"
            raise InputError(path, f"has no {kind} {_quote(wanted, 40)} ({option}): {where} {shown or 'none'}{more}")


@dataclass
class _Columns:
    """Which fields of a record (JSON keys or CSV header names, lower case) hold what."""

    audio: str | None
    text: str | None
    speaker: str | None
    id: str | None
    duration: str | None
    offset: str | None

    @classmethod
    def of(cls, names: Iterable[str], ctx: _Context | None = None) -> _Columns:
        """The fields of a record with ``names``: the first alias of each there, or the one ``ctx``'s options name."""
        names = list(names)
        audio = ctx.audio_column if ctx is not None else None
        text = ctx.text_column if ctx is not None else None
        return cls(
            audio or _first_key(names, AUDIO_KEYS),
            text or _first_key(names, TEXT_KEYS),
            _first_key(names, SPEAKER_KEYS),
            _first_key(names, ID_KEYS),
            _first_key(names, DURATION_KEYS),
            _first_key(names, OFFSET_KEYS),
        )


class _PathResolver:
    """NeMo's rule for a relative path: from the working directory when the file is there, else against the manifest's
    folder (then any ``fallbacks`` folders, used only where the file is); ``root`` replaces all of them."""

    def __init__(self, manifest: str, ctx: _Context, fallbacks: tuple[str, ...] = ()) -> None:
        self.folder = os.path.dirname(manifest)
        self.ctx = ctx
        self.fallbacks = tuple(_join(self.folder, name) for name in fallbacks)
        self.from_cwd = 0
        self.from_manifest = 0

    def __call__(self, listed: str) -> str:
        if (_POSIX and listed.startswith("/")) or os.path.isabs(listed):
            return listed if _is_normal(listed) else _normpath(listed)
        if is_uri(listed):
            return listed
        if self.ctx.root is not None:
            return _join(self.ctx.root, listed)
        here = _join(self.ctx.cwd or "", listed)
        if os.path.isfile(here):
            self.from_cwd += 1
            return here
        self.from_manifest += 1
        beside = _join(self.folder, listed)
        if self.fallbacks and not os.path.isfile(beside):
            for folder in self.fallbacks:
                candidate = _join(folder, listed)
                if os.path.isfile(candidate):
                    return candidate
        return beside

    @property
    def bases(self) -> tuple[str, ...]:
        """Where a relative path is looked for, in order (see :attr:`Manifest.bases`)."""
        if self.ctx.root is not None:
            return (self.ctx.root,)
        return (self.ctx.cwd or "", self.folder, *self.fallbacks)

    def settle(self, builder: _Builder) -> None:
        """The manifest's entries read: the folder above it its paths resolve from, when they resolve from neither the
        working directory nor the manifest's folder (:func:`_settle_above`); the bases and the note of where paths
        were found."""
        builder.bases = self.bases
        self.from_manifest -= _settle_above(builder, self.folder, self.ctx, self.bases)
        self.note(builder)

    def note(self, builder: _Builder) -> None:
        if self.from_cwd and self.from_manifest:
            builder.notes.append(
                f"{figures.plural(self.from_cwd, 'relative audio path')} {'was' if self.from_cwd == 1 else 'were'} found from the "
                f"working directory and {self.from_manifest:,} {'was' if self.from_manifest == 1 else 'were'} resolved against the "
                f"manifest's folder ({self.folder or '.'})"
            )


_NUMBER_WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def _folders_up(levels: int) -> str:
    """``two folders``: how far above the manifest's folder, in words."""
    count = _NUMBER_WORDS[levels - 1] if 0 < levels <= len(_NUMBER_WORDS) else f"{levels:,}"
    return f"{count} folder{'s' if levels != 1 else ''}"


def _settle_above(builder: _Builder, folder: str, ctx: _Context, bases: tuple[str, ...]) -> int:
    """When a manifest's relative paths do not resolve where its layout looks (``bases``: the working directory, the
    manifest's folder), the folder above the manifest's ``folder`` they resolve from, taken as one more base: every
    entry not found where the layout looked is resolved from it when its file is there. How many were; 0 when no
    such folder was taken, or ``--root`` was given (it replaces every base).

    A trainer reads these paths from its working directory, which a manifest
    does not record: a Kaldi recipe's ``wav.scp`` names ``waves_yesno/x.wav``
    from the recipe's root, two folders above ``data/train``; a repository's
    NeMo manifest names ``tests/data/asr/...`` from the repository's root.
    ABOVE_SAMPLE paths spread over the manifest are looked at first (the
    manifests whose paths resolve, most of them, cost no more); of the
    ABOVE_LEVELS folders above the manifest's, the nearest from which more
    than ABOVE_SHARE of the sampled unresolved paths resolve is taken. A path
    through a ``.git`` folder is never taken.
    """
    if ctx.root is not None:
        return 0
    columns = builder.columns
    listed = columns["listed"] if columns is not None else [entry.listed for entry in builder.entries]
    audio = columns["audio"] if columns is not None else [entry.audio for entry in builder.entries]
    picks = min(len(listed), ABOVE_SAMPLE)
    spread = [k * len(listed) // picks for k in range(picks)]
    sample = [i for i in spread if _relative(listed[i])]  # type: ignore[arg-type]
    unresolved = [i for i in sample if not os.path.isfile(audio[i])]  # type: ignore[arg-type]
    above = _folders_above(folder)  # (levels up, folder), nearest first
    searched = [folder or os.curdir, *(candidate for _, candidate in above)]
    if not sample and spread and not any(os.path.isfile(audio[i]) for i in spread):  # type: ignore[arg-type]
        _note_tail(builder, [listed[i] for i in spread], searched)  # type: ignore[misc]  # every path absolute, none there
    if not unresolved:
        return 0
    best, level, most = None, 0, 0
    for up, candidate in above:
        found = sum(_resolves(candidate, listed[i]) is not None for i in unresolved)  # type: ignore[arg-type]
        if found > most:
            best, level, most = candidate, up, found
    where = "the working directory" if builder.layout == "kaldi" else "the working directory or the manifest's folder"
    if best is None or most <= ABOVE_SHARE * len(unresolved):
        if len(unresolved) == len(sample) and above:
            builder.notes.append(
                f"the listed audio paths resolve neither from {where} nor from the {figures.plural(len(above), 'folder')} above "
                f"the manifest's ({', '.join(candidate for _, candidate in above)}): --root names the folder they are relative to"
            )
            _note_tail(builder, [listed[i] for i in unresolved], searched)  # type: ignore[misc]
        return 0
    relative = [i for i, path in enumerate(listed) if _relative(path)]  # type: ignore[arg-type]
    resolved = list(audio)
    moved = 0
    for i in relative:
        if not os.path.isfile(resolved[i]):  # type: ignore[arg-type]
            found_at = _resolves(best, listed[i])  # type: ignore[arg-type]
            if found_at is not None:
                resolved[i] = found_at
                moved += 1
    if columns is not None:
        columns["audio"] = resolved
    else:
        builder.entries = [entry if entry.audio == path else replace(entry, audio=cast(str, path)) for entry, path in zip(builder.entries, resolved)]
    builder.found_root = best
    builder.bases = (*bases, best)
    why = "as Kaldi recipes run from the recipe root"
    if builder.layout != "kaldi":
        why = "as a trainer run from that folder (a repository's or dataset's root) reads them"
    builder.notes.append(
        f"paths resolved from {best}, {_folders_up(level)} above the manifest's ({folder or '.'}), {why}: {moved:,} of "
        f"{figures.plural(len(relative), 'relative audio path')} are found there and not from {where}"
    )
    return moved


def _note_tail(builder: _Builder, listed: list[str], folders: list[str]) -> None:
    """A note when most of ``listed`` (paths that resolve nowhere) are found under one of ``folders`` by their last
    parts: a manifest written on another machine ('C:\\Users\\me\\corpus\\wavs\\a.wav', '/home/me/corpus/wavs/a.wav'),
    whose trainer here fails on every path, though the audio is beside it."""
    parts = [[p for p in re.split(r"[\\/]", path) if p] for path in listed]
    for folder in folders:
        for keep in range(min(TAIL_PARTS, max(map(len, parts), default=0)), 0, -1):
            hits = [os.path.join(*p[-keep:]) for p in parts if len(p) > keep and os.path.isfile(os.path.join(folder, *p[-keep:]))]
            if len(hits) > ABOVE_SHARE * len(listed):
                builder.notes.append(
                    f"the listed paths look written on another machine ({_quote(listed[0])}): {len(hits):,} of {len(listed):,} looked at "
                    f"are found under {folder} by their last {figures.plural(keep, 'part')} (as {_quote(hits[0])}): write the "
                    f"manifest's paths relative to that folder"
                )
                return


def _relative(listed: str) -> bool:
    """Whether a listed path is relative: neither absolute nor a URI."""
    return not (is_uri(listed) or os.path.isabs(listed))


def _folders_above(folder: str) -> list[tuple[int, str]]:
    """The ABOVE_LEVELS folders above ``folder`` with how many levels up each is, nearest first, up to the filesystem's
    root and none in a ``.git`` folder; relative to the working directory when ``folder`` is relative, as the paths
    resolved from it are."""
    absolute, found = os.path.abspath(folder or os.curdir), []
    for up in range(1, ABOVE_LEVELS + 1):
        parent = os.path.dirname(absolute)
        if parent == absolute:
            break
        absolute = parent
        if ".git" not in PurePath(absolute).parts:
            found.append((up, absolute if os.path.isabs(folder) else os.path.relpath(absolute)))
    return found


def _resolves(base: str, listed: str) -> str | None:
    """``listed`` joined to ``base`` when a file is there and the path does not pass through a ``.git`` folder."""
    path = _join(base, listed)
    if ".git" in PurePath(path).parts or not os.path.isfile(path):
        return None
    return path


def _record(
    fields: dict[str, object], columns: _Columns, number: int, manifest: str, resolve: Callable[[str], str], builder: _Builder
) -> None:
    """One JSON or CSV record (lower-case names) as an Entry, or the problems that keep it from being one."""
    if columns.audio is None:
        wanted = ", ".join(AUDIO_KEYS[:6])
        builder.problem("no-audio-field", f"line {number} names no audio file (no field {wanted}, ...)", manifest, number)
        return
    if columns.audio not in fields:  # a key --audio-column names that this record lacks
        shown = ", ".join(_quote(name, 40) for name in list(fields)[:NAMES_SHOWN])
        builder.problem("no-audio-field", f"line {number} has no field {_quote(columns.audio, 40)} (its fields: {shown or 'none'})", manifest, number)
        return
    value = fields.get(columns.audio)
    if isinstance(value, dict):  # Hugging Face style {"path": ..., "array": ...}
        value = value.get("path")
    if not isinstance(value, str) or not value.strip():
        builder.problem("no-audio-field", f"line {number}: '{columns.audio}' is not a path ({_quote(value, 40)})", manifest, number)
        return
    claims: dict[str, float | None] = {"duration": None, "offset": None}
    for what, key in (("duration", columns.duration), ("offset", columns.offset)):
        if not key:
            continue
        claim, readable = _seconds(fields.get(key))
        claims[what] = claim
        if not readable:
            builder.problem(
                "unparsable", f"line {number}: {what} {_quote(fields.get(key), 40)} is not a number of seconds", manifest, number
            )
        elif claim is not None and claim < 0:  # a loader seeking to it, or reading that much, fails
            builder.problem("unparsable", f"line {number}: {what} {claim:g} s is negative", manifest, number)
            claims[what] = None
    for what in ("offset", "duration"):  # a segment's: a duration without an offset is a claim, compared as it is
        if claims["offset"] is not None and claims[what] is not None and claims[what] > MAX_CLAIM_S:  # type: ignore[operator]
            builder.problem("unparsable", f"line {number}: {what} {_too_long(claims[what])}", manifest, number)  # type: ignore[arg-type]
            claims[what] = None
    text = fields.get(columns.text) if columns.text else None
    speaker = fields.get(columns.speaker) if columns.speaker else None
    ident = fields.get(columns.id) if columns.id else None
    if ident is None or str(ident) == "":
        ident = value if claims["offset"] is None else f"{value}#{claims['offset']:g}"
    builder.add(
        Entry.of_values(
            line=number,
            id=str(ident),
            audio=resolve(value),
            listed=value,
            text=None if text is None else str(text),
            manifest=manifest,
            duration=claims["duration"],
            offset=claims["offset"],
            speaker=None if speaker is None or str(speaker) == "" else str(speaker),
        )
    )


# --- NeMo JSON Lines ------------------------------------------------------------


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
    an id listed twice; when pyarrow is not installed or the file is
    larger than COLUMNAR_MAX_BYTES; and for a file that could make Arrow
    crash, stall or take GBs (deep nesting, a field of its own on a later
    line: see :func:`_arrow_table`, which screens it before Arrow parses
    it). The entries are those the line reading
    gives (a test holds the two to that), without an object a line.
    """
    try:
        if not 0 < os.path.getsize(path) <= COLUMNAR_MAX_BYTES:
            return False
        import pyarrow as pa
        import pyarrow.json as pa_json
    except (OSError, ImportError):
        return False
    with open_log(Path(path)) as handle:
        data = read_block(handle, COLUMNAR_MAX_BYTES + 1, path)
    if data.startswith(b"\xef\xbb\xbf") or 1 in data.translate(_CONTROL_BUT_NEWLINE) or (b"\\u" in data and _SURROGATE_ESCAPE.search(data)):
        return False
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return False
    lines = data.count(b"\n") + (not data.endswith(b"\n"))
    try:
        table = _arrow_table(data, lines, pa, pa_json)
    except (pa.ArrowException, ValueError):
        return False
    finally:
        del data
    if table is None:
        return False
    try:
        return _columns_of_table(table, lines, path, ctx, resolve, builder)
    finally:
        del table
        release = getattr(pa.default_memory_pool(), "release_unused", None)  # pyarrow 9 and later
        if release is not None:
            release()  # the parsed file's buffers, a few times its size: returned, not kept by the pool


def _arrow_table(data: bytes, lines: int, pa: Any, pa_json: Any) -> Any:
    """The manifest ``data`` (``lines`` lines) parsed by Arrow, or None where it is refused before Arrow sees it all:
    line ends and brackets denser than COLUMNAR_BYTES_PER_MARK, a line with more than COLUMNAR_MAX_OPENERS ``[`` or
    ``{``, a first line over COLUMNAR_SAMPLE_BYTES, or objects too wide for the file's size (COLUMNAR_BYTES_PER_FIELD).
    The first lines are parsed first; the rest is parsed with exactly their fields (a whole number widened to float,
    as inference does when a later line has a fraction): a line with another field, or a value of another type, is an
    error, and the line reading takes the file. The screen is vectorised (numpy over the bytes): about 3 ms of the
    20,000 lines of benchmarks/bench_data.py, whose columnar reading takes about 20."""
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
    sampled = min(COLUMNAR_SAMPLE_LINES, int(np.searchsorted(ends, COLUMNAR_SAMPLE_BYTES)))  # whole lines in the bytes
    cut = int(ends[sampled - 1]) + 1 if sampled else len(data)
    if cut > COLUMNAR_SAMPLE_BYTES:
        return None  # a first line longer than the sample may be
    buffer = pa.py_buffer(data)
    options = pa_json.ReadOptions(block_size=MAX_LINE_BYTES)
    sample = pa_json.read_json(pa.BufferReader(buffer.slice(0, cut)), read_options=options)
    objects = int(np.count_nonzero(raw[openers] == 0x7B))
    if objects * _widest_object(sample.schema, pa) * COLUMNAR_BYTES_PER_FIELD > len(data):
        return None
    if cut == len(data):
        return sample
    schema = pa.schema([f.with_type(pa.float64()) if pa.types.is_integer(f.type) else f for f in sample.schema])
    parse = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error")
    return pa_json.read_json(pa.BufferReader(buffer), read_options=options, parse_options=parse)


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


def _columns_of_table(table: Any, lines: int, path: str, ctx: _Context, resolve: Callable[[str], str], builder: _Builder) -> bool:
    """The entries of a manifest Arrow parsed (``lines`` lines long) as ``builder.columns``, when it is plain: see
    :func:`_read_nemo_columns`."""
    import pyarrow as pa

    names = table.column_names
    # a blank or whitespace-only line is a row fewer (Arrow skips it); a line of two objects, one more
    if table.num_rows != lines or any(name != name.lower() for name in names):
        return False
    present = set(names)
    if any(len(present.intersection(keys)) > 1 for keys in (SPEAKER_KEYS, ID_KEYS)):
        return False  # a record without the first name would be read under the second
    _require_named(path, ctx, names, "key")  # every record's keys are columns of the table
    columns = _Columns.of(names, ctx)
    if columns.audio is None or columns.text is None or columns.offset is not None:
        return False
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
    durations: list[Any] = [None] * rows
    if columns.duration is not None:
        column = table.column(columns.duration)
        if pa.types.is_integer(column.type) or pa.types.is_floating(column.type):
            durations = [None if d is None else float(d) for d in column.to_pylist()]
        elif not pa.types.is_null(column.type):
            return False
        if any(d is not None and not 0.0 <= d < math.inf for d in durations):  # NaN fails the comparison
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


# --- CSV / TSV with a header ------------------------------------------------------


def _read_csv(path: str, ctx: _Context, builder: _Builder) -> None:
    _check_text(path)
    lines = _lines(path, builder)
    start: list[int] = []

    def feed() -> Iterator[str]:
        for number, text in lines:
            start.append(number)
            yield text + "\n"  # with its line end, as the csv module wants it: a quoted cell spanning lines keeps its newline

    first = next(_content_lines(path), (0, ""))[1]
    tab = "\t" in first
    reader = csv.reader(feed(), delimiter="\t" if tab else ",", quoting=csv.QUOTE_NONE if tab else csv.QUOTE_MINIMAL)
    header: list[str] | None = None
    columns: _Columns | None = None
    resolve = _PathResolver(path, ctx, fallbacks=("clips",))
    while True:
        start.clear()
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            number = start[0] if start else 0
            builder.problem("unparsable", f"line {number} is not a CSV record: {exc}", path, number)
            continue
        number = start[0]
        if header is None:
            _require_named(path, ctx, row, "column")
            header = [cell.strip().lower() for cell in row]
            columns = _Columns.of(header, ctx)
            builder.saw_names(header, ctx)
            if columns.audio is None:
                wanted = ", ".join(AUDIO_KEYS[:8])
                builder.problem(
                    "no-audio-field", f"line {number} is not a header naming the audio column (one of {wanted}, ...)", path, number
                )
                lines.close()
                return
            continue
        if len(row) != len(header):
            where = f"line {number}" if len(start) == 1 else f"lines {number}-{start[-1]} (a quote left open joins them)"
            builder.problem(
                "unparsable",
                f"{where} {'has' if len(start) == 1 else 'have'} {figures.plural(len(row), 'column')}; the header has {len(header)}",
                path,
                number,
            )
            continue
        assert columns is not None
        _record(dict(zip(header, row)), columns, number, path, resolve, builder)
    resolve.settle(builder)
    builder.choice_notes("column")


# --- LJSpeech metadata.csv ------------------------------------------------------


@dataclass
class _Listing:
    """The files of one folder, listed once: their names, and the audio ones by stem. ``complete`` is False for a
    folder over MAX_FOLDER_SCAN entries, which is then looked up file by file."""

    files: frozenset[str]
    by_stem: dict[str, list[str]]
    complete: bool
    exists: bool


def _list_folder(folder: str) -> _Listing:
    if is_uri(folder):
        return _list_uri_folder(folder)
    files: list[str] = []
    try:
        with os.scandir(folder or ".") as scan:
            for count, item in enumerate(scan):
                if count >= MAX_FOLDER_SCAN:
                    return _Listing(frozenset(), {}, complete=False, exists=True)
                try:
                    if item.is_file():
                        files.append(item.name)
                except OSError:
                    continue
    except (FileNotFoundError, NotADirectoryError):
        return _Listing(frozenset(), {}, complete=True, exists=False)
    except OSError:  # there but not listable (no read permission): its files are looked up one by one
        return _Listing(frozenset(), {}, complete=False, exists=os.path.isdir(folder or "."))
    return _listing(files)


def _list_uri_folder(folder: str) -> _Listing:
    """A folder named by URI, listed through its filesystem (one request): every clip of an LJSpeech dataset under a
    URI --root is found by its id, as on a local disk, not stat'ed by guessing its extension."""
    try:
        files = uri.list_files(folder, MAX_FOLDER_SCAN)
    except FileNotFoundError:
        return _Listing(frozenset(), {}, complete=True, exists=False)
    except OSError:
        return _Listing(frozenset(), {}, complete=False, exists=True)
    if files is None:
        return _Listing(frozenset(), {}, complete=False, exists=True)
    return _listing(files)


def _listing(files: list[str]) -> _Listing:
    by_stem: dict[str, list[str]] = {}
    for name in files:
        stem, ext = os.path.splitext(name)
        if ext.lower() in _AUDIO:
            by_stem.setdefault(stem, []).append(name)
    return _Listing(frozenset(files), by_stem, complete=True, exists=True)


class _IdResolver:
    """LJSpeech-style ids: bare ones in the audio folders, ones with a folder against the dataset's folder; the
    extension found when there is none. Remembers every file it chose among, for the unlisted-file check."""

    def __init__(self, base: str, audio_dir: str | None) -> None:
        self.base = base
        self.listings: dict[str, _Listing] = {}
        if audio_dir is not None:
            self.folders = [_join(audio_dir, "")]
        else:
            subfolders = [_join(base, name) for name in LJSPEECH_FOLDERS]
            self.folders = [folder for folder in subfolders if self.listing(folder).exists] + [_join(base, "")]
        # where a missing clip is reported: the first audio folder, else wavs/ (where LJSpeech has it) when there is none
        self.default = self.folders[0] if audio_dir is not None or len(self.folders) > 1 else subfolders[0]
        self.accounted: set[str] = set()
        self.kinds: set[str] = set()  # the extensions of the files chosen
        self.used: set[str] = set()
        self.ambiguous: list[tuple[str, list[str], str]] = []  # the first NOTE_EXAMPLES ids matching several files
        self.ambiguous_count = 0

    def listing(self, folder: str) -> _Listing:
        found = self.listings.get(folder)
        if found is None:
            found = self.listings[folder] = _list_folder(folder)
        return found

    def __call__(self, listed: str) -> str:
        if os.path.isabs(listed) or "/" in listed or os.sep in listed:
            folder, name = os.path.split(_join(self.base, listed))
            return self._find(folder, name, listed)[0]
        for folder in self.folders:
            path, found = self._find(folder, listed, listed)
            if found:
                self.used.add(folder)
                return path
        return self._find(self.default, listed, listed)[0]

    def _find(self, folder: str, name: str, listed: str) -> tuple[str, bool]:
        """The file ``name`` names in ``folder`` (trying audio extensions when it has none), and whether it exists."""
        listing = self.listing(folder)
        if _extension(name) in _AUDIO:
            path = _join(folder, name)
            found = name in listing.files if listing.complete else os.path.isfile(path)
            if found:
                self.accounted.add(path)
                self.kinds.add(_extension(name))
            return path, found
        if listing.complete:
            names = sorted(listing.by_stem.get(name, ()))
        else:
            names = [name + ext for ext in AUDIO_EXTENSIONS if os.path.isfile(_join(folder, name + ext))]
        if not names:
            return _join(folder, name + ".wav"), False
        chosen = next((n for n in names if _extension(n) == ".wav"), names[0])
        paths = [_join(folder, n) for n in names]
        self.accounted.update(paths)
        if len(names) > 1:
            self.ambiguous_count += 1
            if len(self.ambiguous) < NOTE_EXAMPLES:
                self.ambiguous.append((listed, names, chosen))
        self.kinds.add(_extension(chosen))
        return _join(folder, chosen), True


def _read_ljspeech(path: str, ctx: _Context, builder: _Builder) -> None:
    ctx.policy.require(path)  # never opened through a link out of the dataset
    base = ctx.root if ctx.root is not None else os.path.dirname(path)
    resolve = _IdResolver(base, ctx.audio_dir)
    _check_text(path)
    header: list[str] | None = None
    audio_col, text_col, speaker_col = 0, -1, None
    first = True
    for number, text in _lines(path, builder):
        cells = text.split("|")
        if first and _is_header(cells):
            first = False
            header = [cell.strip().lower() for cell in cells]
            audio_col = header.index(_first_key(header, AUDIO_KEYS) or _first_key(header, ID_KEYS + ("name",)) or header[0])
            named_text = _first_key(header, TEXT_KEYS)
            text_col = header.index(named_text) if named_text else len(header) - 1
            speaker = _first_key(header, SPEAKER_KEYS)
            speaker_col = header.index(speaker) if speaker else None
            builder.notes.append(f"line {number} of {path} is a header ({'|'.join(cells)}): column '{header[text_col]}' is the text")
            continue
        first = False
        if header is not None and len(cells) != len(header):
            columns = figures.plural(len(cells), "column")
            builder.problem("unparsable", f"line {number} has {columns}; the header has {len(header)}", path, number)
            continue
        if header is None and len(cells) not in (2, 3):
            builder.problem(
                "unparsable",
                f"line {number} has {len(cells)} column{'s' if len(cells) != 1 else ''}; LJSpeech metadata has 2 (id|text) or 3 (id|text|normalized text)",
                path,
                number,
            )
            continue
        listed = cells[audio_col]
        if not listed.strip():
            builder.problem("no-audio-field", f"line {number} has an empty id", path, number)
            continue
        speaker_value = cells[speaker_col].strip() if speaker_col is not None else ""
        builder.add(
            Entry(
                line=number,
                id=listed,
                audio=resolve(listed),
                listed=listed,
                text=cells[text_col],
                manifest=path,
                speaker=speaker_value or None,
            )
        )
    _ljspeech_notes(path, resolve, builder, rooted=ctx.root is not None)
    builder.bases = tuple(resolve.folders)
    _unlisted(path, resolve, builder)


def _is_header(cells: list[str]) -> bool:
    """Whether a first metadata line names columns (``id|text``, ``file|transcript``, ``audio|text|normalized_text``)."""
    names = [cell.strip().lower() for cell in cells]
    return names[0] in _HEADER_FIRST and any(name in _HEADER_OTHER for name in names[1:])


def _ljspeech_notes(path: str, resolve: _IdResolver, builder: _Builder, rooted: bool) -> None:
    count = resolve.ambiguous_count
    if count:
        shown = "; ".join(f"{listed}: {', '.join(names)} (took {chosen})" for listed, names, chosen in resolve.ambiguous)
        more = f"; and {count - len(resolve.ambiguous):,} more" if count > len(resolve.ambiguous) else ""
        builder.notes.append(
            f"{figures.plural(count, 'id')} without an extension {'matches' if count == 1 else 'match'} several audio files; "
            f"the .wav was taken, else the first by name: {shown}{more}"
        )
    if len(resolve.folders) == 1 and resolve.default != resolve.folders[0] and not rooted:  # --root names where they are
        builder.notes.append(f"there is no {'/, '.join(LJSPEECH_FOLDERS)}/ folder beside {path}: ids were looked for beside it")


def _unlisted(path: str, resolve: _IdResolver, builder: _Builder) -> None:
    """Audio files in the dataset's audio folders that no line lists.

    Only files of the formats the listed clips are in count: a manifest of
    FLAC clips beside their WAV originals (or another manifest's MP3 copies)
    does not make every WAV unlisted. A clip found with several extensions
    accounts for all of them (the note on ambiguous ids names them).
    """
    folders = [folder for folder in resolve.folders if folder != _join(resolve.base, "") or folder in resolve.used]
    kinds = resolve.kinds or _AUDIO
    for folder in folders:
        listing = resolve.listing(folder)
        if not listing.complete:
            builder.notes.append(f"{folder} holds more than {MAX_FOLDER_SCAN:,} entries: it was not searched for unlisted audio files")
            continue
        for name in sorted(n for names in listing.by_stem.values() for n in names):
            file = _join(folder, name)
            if file not in resolve.accounted and _extension(name) in kinds:
                builder.problem("unlisted", f"{file} is in the audio folder but no line of {path} lists it", path, None, file)


# --- Kaldi data dir --------------------------------------------------------------


def _kaldi_table(path: str, ctx: _Context, builder: _Builder, required: bool) -> dict[str, tuple[int, str]]:
    """A Kaldi ``key rest`` file as key -> (line, rest); a repeated key is a problem and the first one kept.

    An optional file that is absent or empty is an empty table; one that is there but a FIFO, a device or a link the
    dataset's policy refuses is an InputError, as for ``wav.scp``: judging the dir without it would be judging
    another dataset."""
    table: dict[str, tuple[int, str]] = {}
    if not required and not os.path.lexists(path):
        return table
    ctx.policy.require(path)  # a list found in the dataset's folder: never opened through a link out of it
    _check_text(path)
    try:
        for number, text in _lines(path, builder):
            parts = text.strip().split(None, 1)
            key, rest = parts[0], (parts[1].strip() if len(parts) > 1 else "")
            if key in table:
                builder.problem("duplicate-id", f"line {number} repeats the id {_quote(key)} of line {table[key][0]}", path, number)
                continue
            table[key] = (number, rest)
    except EmptyLog:
        if required:
            raise
    return table


def _read_kaldi(folder: str, ctx: _Context, builder: _Builder) -> None:
    scp_path, text_path = os.path.join(folder, "wav.scp"), os.path.join(folder, "text")
    seg_path, spk_path = os.path.join(folder, "segments"), os.path.join(folder, "utt2spk")
    base = ctx.root if ctx.root is not None else (ctx.cwd or "")
    scp = _kaldi_table(scp_path, ctx, builder, required=True)
    recordings: dict[str, str] = {}
    for rec, (number, rest) in scp.items():
        if rest.endswith("|"):
            builder.problem(
                "unparsable", f"line {number}: {_quote(rec)} is a command pipeline; trainproof reads only plain files", scp_path, number
            )
        elif ".ark:" in rest or rest.startswith(("ark:", "scp:")):
            builder.problem(
                "unparsable",
                f"line {number}: {_quote(rec)} points into a Kaldi archive; trainproof reads only plain files",
                scp_path,
                number,
            )
        elif not rest:
            builder.problem("no-audio-field", f"line {number}: {_quote(rec)} names no file", scp_path, number)
        else:
            recordings[rec] = rest
    speakers = {utt: rest for utt, (_, rest) in _kaldi_table(spk_path, ctx, builder, required=False).items()}
    has_segments = os.path.lexists(seg_path)
    # utterance -> (recording, offset, duration, line, the file of that line)
    utterances: dict[str, tuple[str, float | None, float | None, int, str]] = {}
    if has_segments:
        for utt, (number, rest) in _kaldi_table(seg_path, ctx, builder, required=False).items():
            parts = rest.split()
            start = _seconds(parts[1])[0] if len(parts) >= 3 else None
            end = _seconds(parts[2])[0] if len(parts) >= 3 else None
            if start is None or end is None or start < 0:
                builder.problem("unparsable", f"line {number} is not 'utterance recording start end'", seg_path, number)
                continue
            if max(start, end) > MAX_CLAIM_S:
                what = "start" if start > MAX_CLAIM_S else "end"
                builder.problem(
                    "unparsable", f"line {number}: segment {_quote(utt)}'s {what} {_too_long(max(start, end))}", seg_path, number
                )
                continue
            if end != -1 and end <= start:
                builder.problem(
                    "unparsable",
                    f"line {number}: segment {_quote(utt)} ends at {end:g} s, not after its start at {start:g} s",
                    seg_path,
                    number,
                )
                continue
            utterances[utt] = (parts[0], start, None if end == -1 else end - start, number, seg_path)
    else:
        utterances = {rec: (rec, None, None, number, scp_path) for rec, (number, _) in scp.items()}
    texts = _kaldi_table(text_path, ctx, builder, required=False)

    def add(utt: str, line: int, manifest: str, text: str | None) -> None:
        rec, offset, duration, rec_line, rec_file = utterances[utt]
        listed = recordings.get(rec)
        if listed is None:
            if rec not in scp:  # a pipeline or an archive is reported once, on its wav.scp line
                builder.problem(
                    "no-audio-field",
                    f"line {rec_line}: utterance {_quote(utt)} has recording {_quote(rec)}, which wav.scp does not list",
                    rec_file,
                    rec_line,
                )
            return
        entry = Entry(line, utt, _join(base, listed), listed, text, manifest, duration, offset, speakers.get(utt) or None)
        builder.add(entry, unique=False, missing=f"line {line}: utterance {_quote(utt)} has no line in {text_path}")

    for utt, (number, text) in texts.items():
        if utt in utterances:
            add(utt, number, text_path, text)
        else:
            where = "segments" if has_segments else "wav.scp"
            builder.problem("no-audio-field", f"line {number}: utterance {_quote(utt)} is not in {where}", text_path, number)
    for utt, (_, _, _, number, manifest) in utterances.items():
        if utt not in texts:
            add(utt, number, manifest, None)
    _settle_above(builder, folder, ctx, (base,))


# --- a folder of audio with transcripts ---------------------------------------------


def _transcript_stem(text_path: str) -> str:
    """The clip path a transcript stands for, without its audio extension: ``a/b.normalized.txt`` -> ``a/b``."""
    for suffix in sorted(TRANSCRIPT_SUFFIXES, key=len, reverse=True):
        if text_path.endswith(suffix):
            return text_path[: -len(suffix)]
    return os.path.splitext(text_path)[0]


@dataclass
class _Sidecars:
    """What a folder dataset's walk found about the transcript files beside its clips, for its notes."""

    times: list[str] = field(default_factory=list)  # files of start/end times: label or alignment files, not transcripts
    several: list[str] = field(default_factory=list)  # "a.txt (not a.lab)", the first few clips with more than one transcript
    several_count: int = 0


def _choose_transcript(
    dirpath: str, candidates: list[str], folder: str, ctx: _Context, builder: _Builder, sidecars: _Sidecars
) -> tuple[str, str | None] | None:
    """The transcript of one clip out of the files beside it of its stem (``candidates``, in TRANSCRIPT_SUFFIXES
    order): the first that holds text, with its text (None when it cannot be read: that clip has no transcript, and a
    note names it). None when every candidate holds times (a label or alignment file, not a transcript). One candidate
    is read as it is; of several, each is read (they are small) so that the note names a real choice between texts."""
    texts: list[tuple[str, bytes | None, str | None]] = []
    for name in candidates:
        path = os.path.join(dirpath, name)
        raw, why = _transcript_bytes(path, ctx)
        if raw is not None and _holds_times(raw):
            sidecars.times.append(os.path.relpath(path, folder))
            continue
        texts.append((name, raw, why))
    if not texts:
        return None
    chosen, raw, why = texts[0]
    if why is not None:  # only the transcript taken is said to be unreadable: the clip has none
        builder.unreadable_texts.append(why)
    if len(texts) > 1:
        sidecars.several_count += 1
        if len(sidecars.several) < NOTE_EXAMPLES:
            others = ", ".join(os.path.relpath(os.path.join(dirpath, name), folder) for name, _, _ in texts[1:])
            sidecars.several.append(f"{os.path.relpath(os.path.join(dirpath, chosen), folder)} (not {others})")
    path = os.path.join(dirpath, chosen)
    return path, None if raw is None else _transcript_text(raw, path, builder)


def _read_folder(folder: str, ctx: _Context, builder: _Builder) -> None:
    count = 0
    orphans: list[str] = []
    manifests: list[str] = []
    nested: list[str] = []  # manifest-like files in its subfolders, the first NOTE_EXAMPLES (for an audio-only folder's note)
    untranscribed: list[tuple[str, str]] = []  # (path, id) of each clip with no transcript beside it
    unlisted: list[OSError] = []
    sidecars = _Sidecars()
    chapter_lists = 0
    for dirpath, dirnames, filenames in os.walk(folder, onerror=unlisted.append):
        dirnames[:] = sorted(name for name in dirnames if not name.startswith("."))
        names = {name for name in filenames if not name.startswith(".")}  # no hidden files (macOS's ._x.wav are not audio)
        audio = sorted(name for name in names if _extension(name) in _AUDIO)
        if dirpath == folder:
            manifests = sorted(name for name in filenames if _extension(name) in _MANIFEST_EXTENSIONS)
        elif len(nested) < NOTE_EXAMPLES:
            found = sorted(name for name in names if _extension(name) in _MANIFEST_EXTENSIONS)
            nested.extend(os.path.relpath(os.path.join(dirpath, name), folder) for name in found[: NOTE_EXAMPLES - len(nested)])
        lists = sorted(name for name in names if name.endswith(CHAPTER_LIST_SUFFIX))
        chapter_lists += len(lists)
        on_lists = _read_chapter_lists(dirpath, lists, audio, folder, ctx, builder) if lists else set()
        used: set[str] = set(lists)
        for name in audio:
            count += 1
            if count > MAX_FOLDER_FILES:
                raise InputError(folder, f"holds more than {MAX_FOLDER_FILES:,} audio files: give a manifest that lists them")
            stem = os.path.splitext(name)[0]
            candidates = [stem + suffix for suffix in TRANSCRIPT_SUFFIXES if stem + suffix in names]
            used.update(candidates)  # every one of them belongs to this clip: none is a clip of its own
            if name in on_lists:
                continue
            audio_path = os.path.join(dirpath, name)
            ident = os.path.relpath(audio_path, folder).replace(os.sep, "/")
            chosen = _choose_transcript(dirpath, candidates, folder, ctx, builder, sidecars) if candidates else None
            if chosen is None:  # no transcript lists it: the folder layout's unlisted clip
                if lists:
                    why = f"is on no line of {' or '.join(lists)} beside it"
                elif candidates:
                    held = f"{', '.join(candidates)} hold{'s' if len(candidates) == 1 else ''} start/end times, not text"
                    why = f"has no transcript beside it ({held})"
                else:
                    why = f"has no transcript beside it ({' or '.join(stem + suffix for suffix in TRANSCRIPT_SUFFIXES[:2])})"
                builder.problem("unlisted", f"{audio_path} {why}", audio_path, None, audio_path)
                untranscribed.append((audio_path, ident))
                continue
            text_path, text = chosen
            builder.add(Entry(1, ident, os.path.normpath(audio_path), ident, text, text_path), unique=False)
        if audio:
            orphans.extend(
                os.path.join(dirpath, n) for n in sorted(names - used) if n.endswith(".lab") or (n.endswith(".txt") and not _is_doc(n))
            )
    for text_path in orphans:  # a transcript whose clip is gone: listed, and missing
        raw, unreadable = _transcript_bytes(text_path, ctx)
        if raw is not None and _holds_times(raw):
            sidecars.times.append(os.path.relpath(text_path, folder))
            continue
        if unreadable is not None:
            builder.unreadable_texts.append(unreadable)
        stem = _transcript_stem(text_path)
        ident = os.path.relpath(stem, folder).replace(os.sep, "/")
        text = None if raw is None else _transcript_text(raw, text_path, builder)
        builder.add(Entry(1, ident, os.path.normpath(stem), f"{ident}.*", text, text_path), unique=False)
    if chapter_lists:
        builder.layout = "librispeech"
        builder.notes.append(
            f"read as LibriSpeech-style: {figures.plural(chapter_lists, 'transcript list')} (<reader>-<chapter>{CHAPTER_LIST_SUFFIX}), "
            "each line naming a clip beside it; the reader is the clip's speaker"
        )
    elif count and not builder.entries:
        _audio_only(folder, untranscribed, manifests + nested, builder)
    if count == 0 and not builder.entries:
        looked = "no metadata.csv (LJSpeech), no wav.scp (Kaldi), no audio files (a folder of clips)"
        hint = f"; it holds {', '.join(manifests[:NOTE_EXAMPLES])}: give the manifest file itself" if manifests else ""
        raise InputError(folder, f"holds none of the dataset layouts trainproof reads: {looked}{hint}")
    if unlisted:
        shown = "; ".join(f"{_quote(exc.filename, 120)}: {exc.strerror or exc}" for exc in unlisted[:NOTE_EXAMPLES])
        whose = "its" if len(unlisted) == 1 else "their"
        builder.notes.append(f"{figures.plural(len(unlisted), 'folder')} cannot be listed, so {whose} clips were not seen: {shown}")
    if builder.unreadable_texts:
        examples, more = builder.unreadable_texts[:NOTE_EXAMPLES], len(builder.unreadable_texts) - NOTE_EXAMPLES
        rest = f"; and {more:,} more" if more > 0 else ""
        theirs = "its clip has" if len(builder.unreadable_texts) == 1 else "their clips have"
        unread = figures.plural(len(builder.unreadable_texts), "transcript")
        builder.notes.append(f"{unread} cannot be read, so {theirs} none: {'; '.join(examples)}{rest}")
    _sidecar_notes(sidecars, builder)
    if manifests and not builder.audio_only:
        builder.notes.append(
            f"read as a folder of clips; it also holds {', '.join(manifests[:NOTE_EXAMPLES])}: give a manifest file to read it instead"
        )


_MANIFEST_EXTENSIONS = (".json", ".jsonl", ".csv", ".tsv")


def _read_chapter_lists(dirpath: str, lists: list[str], audio: list[str], folder: str, ctx: _Context, builder: _Builder) -> set[str]:
    """The LibriSpeech transcript lists of one folder (``lists``, its ``*.trans.txt``), every line an entry, and the
    audio files (of ``audio``, the folder's) that their lines name.

    A line ``<utterance-id> <TEXT>`` names the clip of that stem beside the list: the ``.flac`` (LibriSpeech's own)
    when there is one, else the first by name; every audio file of that stem is named (a ``.wav`` copy beside the
    ``.flac`` is not unlisted). A line whose clip is absent is an entry whose audio does not exist: a missing clip at
    that line. The reader, the list's name up to its first ``-``, is the speaker. A list that cannot be read (a FIFO,
    binary) lists nothing, and a note says so; its clips are unlisted."""
    by_stem: dict[str, list[str]] = {}
    for name in audio:
        by_stem.setdefault(os.path.splitext(name)[0], []).append(name)
    named: set[str] = set()
    for list_name in lists:
        path = os.path.join(dirpath, list_name)
        if os.path.islink(path):  # never opened through a link out of the dataset (see _transcript_bytes)
            ctx.policy.require(path)
        chapter = list_name[: -len(CHAPTER_LIST_SUFFIX)]
        reader = chapter.split("-", 1)[0] if "-" in chapter else None
        try:
            _check_text(path)
            lines = list(_lines(path, builder))
        except EmptyLog:
            continue
        except InputError as exc:
            builder.unreadable_texts.append(f"{_quote(path, 120)} {exc.problem}")
            continue
        for number, text in lines:
            utterance, transcript = (text.split(None, 1) + [""])[:2]
            ident = os.path.relpath(os.path.join(dirpath, utterance), folder).replace(os.sep, "/")
            found = by_stem.get(utterance)
            if found:
                named.update(found)
                clip = os.path.normpath(os.path.join(dirpath, min(found, key=lambda n: (_extension(n) != ".flac", n))))
                listed = os.path.relpath(clip, folder).replace(os.sep, "/")
            else:
                clip, listed = os.path.normpath(os.path.join(dirpath, utterance)), f"{ident}.*"
            builder.add(Entry(number, ident, clip, listed, transcript.strip(), path, speaker=reader))
    return named


def _audio_only(folder: str, clips: list[tuple[str, str]], manifests: list[str], builder: _Builder) -> None:
    """A folder of audio with no transcript beside any clip, as an audio-only corpus (a vocoder's or a codec's, or
    audio not yet transcribed): every clip an entry without text and without a line, the clip its own file, none
    of them unlisted. The audio is judged as any dataset's; the rules about transcripts say they do not apply."""
    builder.audio_only = True
    builder.problems = [problem for problem in builder.problems if problem.kind != "unlisted"]
    builder.entries = [
        Entry.of_values(line=0, id=ident, audio=os.path.normpath(path), listed=ident, text=None, manifest=path, duration=None, offset=None, speaker=None)
        for path, ident in clips
    ]  # fmt: skip
    hint = f"; it holds {', '.join(manifests[:NOTE_EXAMPLES])}: give a manifest to judge transcripts too" if manifests else ""
    builder.notes.append(
        f"no clip has a transcript beside it (.txt or .lab of the same name): judged as an audio-only corpus, by the rules "
        f"about audio alone{hint}"
    )


def _sidecar_notes(sidecars: _Sidecars, builder: _Builder) -> None:
    count = sidecars.several_count
    if count:
        more = f"; and {count - len(sidecars.several):,} more" if count > len(sidecars.several) else ""
        builder.notes.append(
            f"{count:,} clip{'s have' if count != 1 else ' has'} more than one transcript beside {'them' if count != 1 else 'it'}; "
            f"the first of {', '.join(TRANSCRIPT_SUFFIXES)} holding text was read: {'; '.join(sidecars.several)}{more}"
        )
    times = len(sidecars.times)
    if times:
        shown = ", ".join(sidecars.times[:NOTE_EXAMPLES])
        more = f" and {times - NOTE_EXAMPLES:,} more" if times > NOTE_EXAMPLES else ""
        they = "they are label or alignment files, not transcripts" if times != 1 else "it is a label or alignment file, not a transcript"
        builder.notes.append(f"{times:,} file{'s' if times != 1 else ''} beside the clips hold{'' if times != 1 else 's'} start/end times, not text ({they}): {shown}{more}")


def _is_doc(name: str) -> bool:
    return os.path.splitext(name)[0].lower() in ("readme", "license", "licence", "copying", "notes", "changelog", "requirements")


def _transcript_bytes(path: str, ctx: _Context) -> tuple[bytes | None, str | None]:
    """A folder dataset's transcript file, at most HEAD_BYTES of it; or None and which file cannot be read and why (a
    dangling link, a FIFO): that clip has no transcript, the rest of the folder is judged, and a note says so. One the
    read policy refuses (a link out of the dataset) is never opened, and is an InputError: the dataset cannot be judged
    as its files stand without reading where the link leads. Only a link is asked about: :func:`_read_folder`'s walk
    follows no link to a folder, so every other transcript lies in the dataset's folder itself (asking the policy of
    each took 15% of reading a 20,000-transcript folder)."""
    if os.path.islink(path):  # never opened; the dataset is not judged without it (a trainer would read the link's target)
        ctx.policy.require(path)
    try:
        with open_log(Path(path)) as handle:
            return read_block(handle, HEAD_BYTES, path), None
    except InputError as exc:
        return None, f"{_quote(path, 120)} {exc.problem}"


_NUMBER = r"[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?"
_TIMES_LINE = re.compile(rf"\s*({_NUMBER})\s+({_NUMBER})(?:\s+(?![0-9.])\S+(?:\s+[-+]?{_NUMBER})*)?\s*")
"""A line of start/end times: ``start end [label [score...]]`` (Audacity's label tracks, HTK's .lab alignments and
pocketsphinx's speech/silence segments), the label one word that is not a number."""


def _holds_times(data: bytes) -> bool:
    """Whether a transcript-named file holds start/end times on every line (a label or alignment file), not text:
    ``0.235689\t0.235689\tspeech``, ``0 2350000 sil``. A transcript of digits and words (``1 2 buckle my shoe``,
    ``one 2 3``) is text."""
    if not data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1].isdigit():  # a transcript almost always: decided without decoding it
        return False
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
    lines = [line for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n") if line.strip()]
    if not lines:
        return False
    for line in lines:
        match = _TIMES_LINE.fullmatch(line)
        if match is None or float(match.group(1)) > float(match.group(2)):
            return False
    return True


def _transcript_text(data: bytes, path: str, builder: _Builder) -> str:
    """A folder dataset's transcript, read by :func:`_transcript_bytes`, with lines joined; a BOM is a problem.
    Lines are split at CR, LF and CRLF only (as Python's open() reads text): a vertical tab or U+2028 inside a line
    stays for the character rules to see."""
    text = data.decode("utf-8", errors="replace")
    if text.startswith("\ufeff"):
        builder.problem("bom", "starts with a byte-order mark (BOM), which becomes an invisible first character of the transcript", path, 1)
        text = text[1:]
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")  # Python's universal newlines, as a trainer's open() reads
    return " ".join(line.strip() for line in lines if line.strip())
