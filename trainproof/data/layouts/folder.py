"""A folder of audio with transcripts beside each clip (``.txt``/``.lab``), LibriSpeech ``*.trans.txt`` chapter lists,
and audio-only folders."""


from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from trainproof.data.layouts.shared import (
    _AUDIO,
    CHAPTER_LIST_SUFFIX,
    HEAD_BYTES,
    MAX_FOLDER_FILES,
    NOTE_EXAMPLES,
    TRANSCRIPT_SUFFIXES,
    _Builder,
    _check_text,
    _Context,
    _extension,
    _lines,
    _quote,
)
from trainproof.data.model import Entry
from trainproof.io import figures
from trainproof.io.bounded import EmptyLog, open_log, read_block
from trainproof.io.errors import InputError


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
