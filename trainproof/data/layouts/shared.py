"""What every manifest layout's reader shares: the builder of entries and problems, line reading, path resolution
(``found_root`` and the folders above), quoting, and the choices of columns."""


from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath
from typing import cast

from trainproof.data import uri
from trainproof.data.model import Blob, Entries, Entry, Manifest, Problem
from trainproof.data.uri import is_uri
from trainproof.io import figures
from trainproof.io.access import ReadPolicy
from trainproof.io.bounded import BLOCK_BYTES, MAX_LINE_BYTES, iter_lines, mostly_binary, open_log, read_block
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
    blobs: dict[int, Blob] = field(default_factory=dict)  # entry index -> where its bytes are held (see Manifest.blobs)
    splits: list[str] = field(default_factory=list)  # each entry's split, when the layout has splits (see Manifest.splits)

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
        blobs = tuple(self.blobs.get(i) for i in range(len(entries))) if self.blobs else ()
        splits = tuple(self.splits) if len(set(self.splits)) > 1 else ()
        return Manifest(
            path=path, layout=self.layout, entries=entries, problems=tuple(problems), notes=tuple(notes), bases=self.bases,
            found_root=self.found_root, audio_only=self.audio_only, blobs=blobs, splits=splits,
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
