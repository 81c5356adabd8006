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
- ``lhotse``: Lhotse manifests (k2/icefall): ``<corpus>_recordings_<split>.jsonl.gz`` with the supervisions beside
  it, or ``<corpus>_cuts_<split>.jsonl.gz`` (gzipped or not), or the folder a recipe writes them to; each
  supervision a clip, its recording's file relative to the working directory (see
  :mod:`trainproof.data.layouts.lhotse`). A JSONL or gzipped file of another name whose first record is a
  recording, a supervision or a cut is read as one too.
- ``shar``: Lhotse Shar (``cuts.000000.jsonl.gz`` with ``recording.000000.tar`` beside it), a folder of them, a
  folder of such folders (one a split), or one shard: each supervision a clip of its cut's audio member (see
  :mod:`trainproof.data.layouts.shar`).
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

import os
from pathlib import Path

from trainproof.data.layouts.delimited import _read_csv
from trainproof.data.layouts import hub, shar, webdataset
from trainproof.data.layouts.folder import _read_folder
from trainproof.data.layouts.kaldi import _read_kaldi
from trainproof.data.layouts.lhotse import _read_lhotse, is_gzip, is_lhotse_folder, lhotse_name, sniff_kind
from trainproof.data.layouts.ljspeech import _read_ljspeech
from trainproof.data.layouts.nemo import _read_nemo
from trainproof.data.layouts.shared import _AUDIO, CHAPTER_LIST_SUFFIX, _Builder, _check_text, _content_lines, _Context, _extension
from trainproof.data.model import Manifest
from trainproof.data.uri import is_uri
from trainproof.io.access import ReadPolicy
from trainproof.io.errors import InputError

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
    named = webdataset.expand(given) if webdataset.is_pattern(given) and not os.path.exists(given) else [given]
    if not os.path.exists(named[0]):
        raise InputError(given, "does not exist")
    here = os.getcwd() if cwd is None else str(cwd)
    # the named manifest (or folder; or each shard a pattern names) may not be a link out of its folder and the working directory
    for each in named:
        if os.path.lexists(each):
            ReadPolicy.for_input(each, cwd=False, extra=(here,), follow_links=follow_links).require(each)
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
    elif layout == "parquet":
        hub.read_parquet(target, ctx, builder)
    elif layout == "arrow":
        hub.read_arrow(target, ctx, builder)
    elif layout == "audiofolder":
        hub.read_audiofolder(target, ctx, builder)
    elif layout == "webdataset":
        webdataset.read_webdataset(target, ctx, builder)
    elif layout == "lhotse":
        _read_lhotse(target, ctx, builder)
    elif layout == "shar":
        shar.read_shar(target, ctx, builder)
    else:
        _read_folder(target, ctx, builder)
    if ctx.audio_dir is not None and layout != "ljspeech":
        builder.notes.append(f"--audio-dir applies to LJSpeech ids only; this is a {layout} dataset, so it was not used")
    for option, value in (("--audio-column", ctx.audio_column), ("--text-column", ctx.text_column)):
        if value is not None and layout not in ("csv", "nemo", "parquet", "arrow", "audiofolder"):
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


CWD_LAYOUTS = frozenset({"nemo", "csv", "kaldi", "lhotse", "parquet", "arrow"})
"""The layouts whose relative paths resolve from the working directory, which is then one of a dataset's roots."""


def _detect(path: str) -> tuple[str, str]:
    """The layout of the dataset at an existing path, and the file (or folder) to read it from."""
    if os.path.isdir(path):
        metadata = os.path.join(path, "metadata.csv")
        if hub.audiofolder_metadata(path):
            return "audiofolder", path
        if _present(metadata):
            return "ljspeech", metadata
        if _present(os.path.join(path, "wav.scp")):
            return "kaldi", path
        if shar.is_shar_folder(path):
            return "shar", path
        if is_lhotse_folder(path):
            return "lhotse", path
        return hub.detect(path) or shar.detect(path) or webdataset.detect(path) or ("folder", path)
    found = shar.detect(path) or hub.detect(path) or webdataset.detect(path)
    if found is not None:
        return found
    name = os.path.basename(path)
    folder = os.path.dirname(path)
    if name in _KALDI_FILES or (name == "text" and _present(os.path.join(folder, "wav.scp"))):
        return "kaldi", folder
    if _extension(name) in _AUDIO:
        raise InputError(path, "is an audio file, not a manifest: give the dataset's manifest or its folder")
    if name.endswith(CHAPTER_LIST_SUFFIX):  # a LibriSpeech chapter's list: the chapter's folder, as the list describes it
        return "folder", folder
    if lhotse_name(name) is not None:
        return "lhotse", path
    if is_gzip(path):
        if sniff_kind(path) is not None:
            return "lhotse", path
        raise InputError(path, "is gzip-compressed and not a Lhotse manifest: trainproof reads other manifests uncompressed")
    _check_text(path)
    first = next((text for _, text in _content_lines(path)), "")
    stripped = first.lstrip("\ufeff").strip()
    ext = _extension(name)
    if ext in (".json", ".jsonl", ".ndjson") or stripped[:1] in ("{", "["):
        return ("lhotse" if stripped[:1] == "{" and sniff_kind(path) is not None else "nemo"), path
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
