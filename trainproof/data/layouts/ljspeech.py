"""LJSpeech ``metadata.csv`` (``id|text|normalized``, no header) and pipe-separated filelists."""


from __future__ import annotations

import os
from dataclasses import dataclass

from trainproof.data import uri
from trainproof.data.layouts.shared import (
    _AUDIO,
    _HEADER_FIRST,
    _HEADER_OTHER,
    AUDIO_EXTENSIONS,
    AUDIO_KEYS,
    ID_KEYS,
    LJSPEECH_FOLDERS,
    MAX_FOLDER_SCAN,
    NOTE_EXAMPLES,
    SPEAKER_KEYS,
    TEXT_KEYS,
    _Builder,
    _check_text,
    _Context,
    _extension,
    _first_key,
    _join,
    _lines,
)
from trainproof.data.model import Entry
from trainproof.data.uri import is_uri
from trainproof.io import figures


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
