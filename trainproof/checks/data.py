"""Rules that judge a speech dataset: its manifest, the numbers each clip reduced to, and its transcripts.

Every rule reads the few columns it needs of the listed clips (the
manifest's claims beside the per-clip record: :meth:`DataContext.frame`),
never the samples. A rule that finds
many clips names the first DATA_EXAMPLES in manifest order, each at its
manifest line, and counts the rest, so a corpus with 40,000 broken clips
gives a short report. FAIL is kept for what breaks training or silently
corrupts it; the rest WARN. An audio-only folder (a vocoder's or codec's
corpus, audio not yet transcribed) is judged by the rules about audio; the
rules about transcripts are skipped, saying why, and its clips have no line.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from trainproof.checks.base import Hit, NotApplicable, amended, first_named, rules_of
from trainproof.checks.findings import Finding, Level
from trainproof.checks.stats import MAD_SE, MAD_TO_SIGMA
from trainproof.checks.thresholds import Thresholds
from trainproof.data.model import ClipRecord, CodedColumn, FloatColumn, LineColumn, Manifest, Problem, TextColumn, entry_column
from trainproof.data.records import ClipRecords, ascii_strings
from trainproof.io import figures
from trainproof.io.collector import collector_paused
from trainproof.io.safe import QUOTE_CHARS, hidden, quoted

if TYPE_CHECKING:
    import pandas as pd


_USER_TEXT = ("id", "audio", "listed", "text", "manifest", "speaker", "error")
"""The table's columns of text from the user's files and file names, which may hold lone surrogates (a file name's
bytes that are not UTF-8, as Python decodes them; a JSON escape such as \\ud800)."""


def _strings(values: Sequence[str | None], rows: np.ndarray | None = None) -> pd.Series:
    """A column of text (at ``rows``, or all of it): pandas' own (Arrow) strings (a :class:`TextColumn`'s array as it
    is, or the rows taken from it), or Python strings when one of them has a lone surrogate, which UTF-8, so Arrow,
    cannot hold (every rule reads either kind alike)."""
    import pandas as pd

    if isinstance(values, TextColumn):
        return pd.Series(pd.array(values.arrow if rows is None else values.take(rows), dtype="str"))
    if rows is not None:
        values = _at_rows(values, rows)
    try:
        return pd.Series(values, dtype="str")
    except UnicodeEncodeError:
        return pd.Series(values, dtype=object)


TEXT_CHUNK = 65_536
"""Transcripts taken at a time where a pass over the corpus's text builds something per character."""

_OF_ENTRIES = {"line": "line", "id": "id", "audio": "audio", "listed": "listed", "text": "text", "manifest": "manifest",
               "speaker": "speaker", "claimed_s": "duration"}  # fmt: skip
_OF_RECORDS = {"error_kind": "error_kind", "error": "error", "sample_rate": "sample_rate", "channels": "channels",
               "subtype": "subtype", "duration_s": "duration_s", "frames": "frames", "clipped": "clipped_samples",
               "clip_run": "longest_clipped_run", "dc": "dc_offset", "level_db": "level_db", "lead_s": "lead_silence_s",
               "trail_s": "trail_silence_s", "first_db": "first_frame_db", "last_db": "last_frame_db", "hash": "audio_hash",
               "nonfinite": "nonfinite_samples"}  # fmt: skip
_FLOATS = ("claimed_s", "duration_s", "dc", "level_db", "lead_s", "trail_s", "first_db", "last_db")
COLUMNS = (*_OF_ENTRIES, *_OF_RECORDS, "split", "folded")
"""The columns of a clip a rule may read (:meth:`DataContext.frame`): the entry's claims, the record's numbers, the
clip's split and its transcript folded for comparing (case and runs of whitespace)."""


def _at_rows(values: Sequence[Any], at: np.ndarray) -> list:
    """The values at the positions ``at`` (a :class:`TextColumn`'s taken at once, not made a string one by one)."""
    if isinstance(values, TextColumn):
        return values.take(at).to_pylist()
    return [values[i] for i in at.tolist()]


def _folded(texts: Iterable[str | None]) -> list[str]:
    """Transcripts with case and runs of whitespace folded, for comparing ("" for none; a list comprehension:
    Series.map costs twice as much)."""
    return [" ".join(text.casefold().split()) if text else "" for text in texts]


@dataclass(frozen=True)
class Rates:
    """A corpus's speaking rates as TP-DATA-TEXT-RATE and the report's histogram read them (:func:`speech_rates`): each
    judged clip's characters per second and level (:func:`rate_levels`), the rows of the clips flagged, and the
    corpus's median and widened sigma (those of its first clip: the corpus's own unless ``by_speaker``)."""

    cps: np.ndarray
    levels: np.ndarray
    by_speaker: bool
    flagged: pd.DataFrame
    flagged_levels: np.ndarray
    median: float
    sigma_wide: float


@dataclass(frozen=True)
class DataContext:
    """A dataset: its manifest, each listed clip's record (aligned with the entries), and the targets asked for.

    The rules read it a few columns at a time (:meth:`frame`), never as one
    table of every column of every clip: a million clips' paths, transcripts
    and hashes as one table were 160 MiB on top of the manifest and records
    they come from.
    """

    manifest: Manifest
    records: Sequence[ClipRecord]  # a ClipRecords (columns) from the engines; any sequence will do
    t: Thresholds
    sample_rate: int | None = None
    channels: int | None = None
    topic = "this clip"

    def locate(self, finding: Finding) -> Finding:
        if finding.file is None:
            return replace(finding, file=self.manifest.path)
        return finding

    @cached_property
    def listed(self) -> int:
        """How many clips the manifest lists."""
        return len(self.manifest.entries)

    @cached_property
    def _clips(self) -> ClipRecords:
        return ClipRecords.of(self.records)

    @cached_property
    def readable(self) -> np.ndarray:
        """Which clips' audio was read (no error recorded), in manifest order."""
        import pandas as pd

        if not self.listed:
            return np.zeros(0, dtype=bool)
        return np.asarray(pd.isna(self._clips.column("error_kind")), dtype=bool)

    def frame(self, *names: str, rows: Any = None) -> pd.DataFrame:
        """The clips at ``rows`` (manifest positions, in the order given; None: every clip) with the columns ``names``
        (of :data:`COLUMNS`), indexed by their positions. A column is made afresh from the manifest's and the records'
        own arrays for each call, taken at the rows asked for, so a rule holds only what it reads."""
        import pandas as pd

        at = None if rows is None else np.asarray(rows, dtype=np.int64)
        index = pd.RangeIndex(self.listed) if at is None else pd.Index(at)
        if not self.listed:  # no clip: empty columns, of objects (the float ones as floats)
            return pd.DataFrame({name: pd.Series([], dtype="float64" if name in _FLOATS else object) for name in names})
        with collector_paused():  # a column of strings is a tuple of values, no cycles among them
            columns = {name: self._column(name, at) for name in names}
        frame = pd.DataFrame(columns, copy=False)  # the arrays as they are (pandas copies on write)
        frame.index = index
        return frame

    def with_columns(self, rows: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
        """``rows`` (a :meth:`frame`, or rows of one) with those of ``names`` it does not hold yet added."""
        import pandas as pd

        wanted = [name for name in dict.fromkeys(names) if name not in rows.columns]
        if not wanted:
            return rows
        added = self.frame(*wanted, rows=rows.index.to_numpy())
        added.index = rows.index
        return pd.concat([rows, added], axis=1)

    def _column(self, name: str, at: np.ndarray | None) -> Any:
        """One column of :meth:`frame`, at ``at`` (None: every clip)."""
        import pandas as pd

        if name == "split":
            splits = self.manifest.splits
            if not splits:
                return pd.Series([""] * (self.listed if at is None else len(at)), dtype=object)
            return pd.Series(splits if at is None else _at_rows(splits, at), dtype=object)
        if name == "folded":  # only of the rows asked for: the corpus's folded text is never held whole
            if at is None:
                raise ValueError("the folded transcripts are read for some rows only")
            return _strings(_folded(_at_rows(cast("Sequence[str | None]", entry_column(self.manifest.entries, "text")), at)))
        if name in _OF_RECORDS:
            column = self._clips.column(_OF_RECORDS[name])
            column = column if at is None else column[at]
            if name == "hash" and column.dtype.kind == "S":
                return ascii_strings(column)
        else:
            held = entry_column(self.manifest.entries, _OF_ENTRIES[name])
            if isinstance(held, CodedColumn):  # the objects themselves, at the rows asked for
                held, at = held.values[held.codes if at is None else held.codes[at]], None
            if name in _USER_TEXT:
                return _strings(cast("Sequence[str | None]", held), at)
            if isinstance(held, (LineColumn, FloatColumn)):
                column = held.array if at is None else held.array[at]
            else:  # ints or floats, None as NaN: the rows asked for alone made an array
                column = np.asarray(pd.Series(held if at is None else _at_rows(held, at)))
        if name in _USER_TEXT:
            return _strings(column)
        if name == "error_kind":  # a kind or None, compared and tested for None: as the objects they are (no strings made)
            return pd.Series(column, dtype=object, copy=False)
        return pd.Series(column).astype("float64") if name in _FLOATS and column.dtype != np.float64 else column

    @cached_property
    def _folded_digests(self) -> tuple[np.ndarray, np.ndarray]:
        """Each clip's folded transcript's 64-bit hash, and whether it is not empty: the corpus's folded text a chunk
        at a time, never held (the exact texts are made again for the few clips whose hash another shares)."""
        texts = cast("Sequence[str | None]", entry_column(self.manifest.entries, "text"))
        hashes = np.empty(len(texts), dtype=np.int64)
        spoken = np.empty(len(texts), dtype=bool)
        for start in range(0, len(texts), TEXT_CHUNK):
            chunk = _folded(texts[start : start + TEXT_CHUNK])
            hashes[start : start + len(chunk)] = [hash(text) for text in chunk]
            spoken[start : start + len(chunk)] = [text != "" for text in chunk]
        return hashes, spoken

    @property
    def spoken(self) -> np.ndarray:
        """Which clips' transcripts hold more than whitespace, in manifest order."""
        return self._folded_digests[1]

    @cached_property
    def _transcript_letters(self) -> tuple[frozenset[str], np.ndarray]:
        """Every distinct character of the transcripts, and how many letters and digits each transcript holds.

        One pass over the transcripts TEXT_CHUNK at a time, each chunk as its
        code points (a lone surrogate its own): the corpus's text is never
        held as code points at once (4 bytes a character), and each distinct
        character is classified once, not once per occurrence (a
        ``translate`` a transcript cost twice as much).
        """
        texts = cast("Sequence[str | None]", entry_column(self.manifest.entries, "text"))
        seen = np.zeros(0x110000, dtype=bool)
        alnum = np.zeros(0x110000, dtype=bool)
        counts = np.zeros(len(texts), dtype=np.int64)
        for start in range(0, len(texts), TEXT_CHUNK):
            chunk = [text or "" for text in texts[start : start + TEXT_CHUNK]]
            codes = np.frombuffer("".join(chunk).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
            new = np.flatnonzero(np.bincount(codes, minlength=0) > 0) if codes.size else np.zeros(0, dtype=np.intp)
            new = new[~seen[new]]
            seen[new] = True
            alnum[[code for code in new.tolist() if chr(code).isalnum()]] = True
            running = np.zeros(codes.size + 1, dtype=np.int32 if codes.size < 2**31 else np.int64)  # int32 sums twice as fast
            np.cumsum(alnum[codes], dtype=running.dtype, out=running[1:])
            lengths = np.fromiter(map(len, chunk), dtype=np.int64, count=len(chunk))
            ends = np.cumsum(lengths)
            counts[start : start + len(chunk)] = running[ends] - running[ends - lengths]
        return frozenset(map(chr, np.flatnonzero(seen).tolist())), counts

    @cached_property
    def characters(self) -> frozenset[str]:
        """Every distinct character in the transcripts (rules classify each once, not once per occurrence)."""
        return self._transcript_letters[0]

    @cached_property
    def letters(self) -> np.ndarray:
        """How many letters and digits (``str.isalnum``) each clip's transcript holds, in manifest order."""
        return self._transcript_letters[1]

    @cached_property
    def repeated_sentences(self) -> np.ndarray:
        """Which clips' folded transcripts come more than once and are long enough to be a sentence
        (:func:`_sentences_repeated`), worked out once for TP-DATA-DUPLICATE-TEXT and TP-DATA-SPLIT-LEAK-TEXT."""
        return _sentences_repeated(self)

    @cached_property
    def rates(self) -> Rates:
        """:func:`speech_rates` of this corpus, worked out once for the rule and the report's histogram, and kept as
        they read it (:class:`Rates`)."""
        rates, by_speaker = speech_rates(self)
        levels = rate_levels(rates, self.t)
        flagged = levels > 0
        first = rates.iloc[:1]
        return Rates(
            cps=rates["cps"].to_numpy(), levels=levels, by_speaker=by_speaker, flagged=rates[flagged], flagged_levels=levels[flagged],
            median=float(first["median_cps"].iloc[0]) if len(first) else math.nan, sigma_wide=float(first["sigma_wide"].iloc[0]) if len(first) else math.nan,
        )  # fmt: skip


def _need_clips(ctx: DataContext, *names: str) -> pd.DataFrame:
    """The clips whose audio was read, with the columns ``names`` (every clip's, when each was read: no filter);
    NotApplicable when none was."""
    readable = ctx.readable
    if not readable.any():
        raise NotApplicable(_no_clip(ctx))
    return ctx.frame(*names, rows=None if readable.all() else np.flatnonzero(readable))


AUDIO_ONLY = "no transcripts: an audio-only corpus"
"""Why a rule about transcripts does not judge an audio-only folder."""


def _need_transcripts(ctx: DataContext) -> None:
    """NotApplicable for a dataset without transcripts (:attr:`Manifest.audio_only`): a rule about them has nothing to judge."""
    if ctx.manifest.audio_only:
        raise NotApplicable(AUDIO_ONLY)


def _at(row: Any) -> str:
    """Where a clip's line is, to open a finding's evidence: ``line 12: ``; nothing for a clip of an audio-only folder,
    which no line lists (its line is 0)."""
    return f"line {row.line}: " if row.line else ""


def _no_clip(ctx: DataContext) -> str:
    """Why a rule about the clips' audio has nothing to judge."""
    return "the manifest lists no clip" if not ctx.listed else "no clip could be read"


def _examples(
    ctx: DataContext, rows: pd.DataFrame, what: str, say: Any, values: Mapping[str, Any] | None = None, *, total: int | None = None
) -> Iterator[Hit]:
    """One hit per clip for the first DATA_EXAMPLES of ``rows``, each at its manifest line, the first counting all.

    ``rows`` are indexed by their manifest positions (:meth:`DataContext.frame`);
    ``say(row)`` gives (message, evidence) for one clip, from every column of
    :data:`COLUMNS` and those of ``rows``' own; ``what`` names the
    problem in the plural for the count ("clips are clipped"). ``total``: how
    many clips have it, when ``rows`` holds only the first of them.
    """
    total = len(rows) if total is None else total
    if total == 0:
        return
    listed = ctx.listed
    shown = _whole(ctx, rows.head(ctx.t.DATA_EXAMPLES))
    for i, row in enumerate(shown.itertuples(index=False)):
        message, evidence = say(row)
        shared = ""
        if i == 0 and total > 1:
            shared = f"{total:,} of {listed:,} listed {what} ({figures.pct(total / listed)}); {first_named(len(shown), total)}."
            message += f" {shared}"
        yield Hit(message=message, evidence=evidence, values={"count": total, "listed": listed, **(values or {})}, line=int(row.line) or None, file=row.manifest, shared=shared)


def _whole(ctx: DataContext, rows: pd.DataFrame) -> pd.DataFrame:
    """A few ``rows`` with every column of :data:`COLUMNS` (theirs kept), to quote."""
    return ctx.with_columns(rows, COLUMNS)


def _name(row: Any) -> str:
    return _shown(row.listed)


def _shown(text: object) -> str:
    """A name from the user's files in a message (a path as listed, an id): as it is when it is short, else a capped
    quotation (:func:`trainproof.io.safe.quoted`), so a 1 MiB manifest field is not copied into every output."""
    shown = str(text)
    return shown if len(shown) <= QUOTE_CHARS else quoted(shown)


SHOWN_ITEMS = 8
"""The most distinct items (numbers, symbols, odd characters) one finding lists out of a transcript; the rest are counted."""


def _listed(items: Sequence[str]) -> str:
    """``items`` joined with commas, the first SHOWN_ITEMS of them, and how many more there are."""
    more = f" and {len(items) - SHOWN_ITEMS:,} more" if len(items) > SHOWN_ITEMS else ""
    return ", ".join(items[:SHOWN_ITEMS]) + more


# --- the manifest ---------------------------------------------------------------


def manifest_broken(ctx: DataContext) -> Iterator[Hit]:
    """A manifest line is not a clip record: bad JSON, a wrong column count, no audio field, bytes that are not UTF-8.

    What it detects: lines of the manifest that cannot be parsed as a record of the layout (the first DATA_EXAMPLES named), and lines holding bytes that are not UTF-8 (one finding, at the first).
    Why it matters: a trainer's loader either crashes on such a line or, worse, skips it and trains on less than you think; Python reading a manifest as UTF-8 stops at the first bad byte.
    Fires on: a JSONL line with a missing brace; a metadata.csv line with four pipes; a metadata.csv saved in Latin-1 with one accented word.
    Does not fire on: a header row of metadata.csv, which is recognised as one.
    Does not mean: the other lines are fine; they are judged by the other rules.
    """
    problems = [p for p in ctx.manifest.problems if p.kind in ("unparsable", "no-audio-field", "not-utf8")]
    kinds: Counter[str] = Counter()
    for p in problems:
        kinds[p.kind] += p.lines
    shown = problems[: ctx.t.DATA_EXAMPLES]
    total = sum(kinds.values())
    for i, problem in enumerate(shown):
        same = kinds[problem.kind]
        values = {"count": same}
        if len(shown) == 1:
            count = f" ({same:,} such lines)" if same > 1 else ""
            yield Hit(message=f"{problem.message}{count}.", evidence=_where(problem), values=values, line=problem.line, file=problem.manifest)
            continue
        shared = ""
        if i == 0:  # several named: the count of them all once, by kind when they differ
            by_kind = f" ({', '.join(f'{n:,} {_BROKEN[kind]}' for kind, n in kinds.items())})" if len(kinds) > 1 else ""
            shared = f"{total:,} lines are not clip records{by_kind}; {first_named(len(shown), total)}."
        own = f" ({problem.lines:,} such lines)" if problem.lines > 1 else ""  # a not-UTF-8 problem stands for every such line
        message = f"{problem.message}{own}." + (f" {shared}" if shared else "")
        yield Hit(message=message, evidence=_where(problem), values=values, line=problem.line, file=problem.manifest, shared=shared)


def _where(problem: Problem) -> str:
    """Where a manifest problem is, as evidence: its line, or its file when it is about the whole file (a shard)."""
    return f"{'the file' if problem.line is None else f'line {problem.line}'}: {problem.kind}"


_BROKEN = {"unparsable": "unparsable", "no-audio-field": "naming no audio", "not-utf8": "not UTF-8"}


def manifest_format(ctx: DataContext) -> Iterator[Hit]:
    """The manifest has a byte-order mark, CRLF line ends, or blank lines.

    What it detects: a UTF-8 BOM at the start, CRLF line ends, blank lines.
    Why it matters: a BOM glues itself to the first clip's id or path, so the first clip goes missing; CR ends up at the end of every transcript; some loaders stop at a blank line.
    Fires on: a metadata.csv saved by a Windows editor.
    Does not fire on: a manifest with LF line ends and no blank line.
    Does not mean: the records are wrong; most readers cope with some of these.
    """
    for problem in ctx.manifest.problems:
        if problem.kind in ("bom", "crlf", "blank-line"):
            yield Hit(message=f"{problem.message}.", evidence=f"{problem.kind} at line {problem.line or 1}", line=problem.line or 1, file=problem.manifest)


def duplicate_id(ctx: DataContext) -> Iterator[Hit]:
    """Two manifest lines have the same clip id.

    What it detects: an id (or audio path, for layouts without ids) listed on more than one line (the first DATA_EXAMPLES named).
    Why it matters: a loader keyed by id keeps one of them; a sampler that is not sees that clip twice as often.
    Fires on: `LJ001-0001|...` on two lines.
    Does not fire on: distinct ids.
    Does not mean: the two lines carry the same transcript; see TP-DATA-CONFLICTING-TEXT for the audio.
    """
    problems = [p for p in ctx.manifest.problems if p.kind == "duplicate-id"]
    shown = problems[: ctx.t.DATA_EXAMPLES]
    for i, problem in enumerate(shown):
        shared = ""
        if i == 0 and len(problems) > 1:
            shared = f"{len(problems):,} lines repeat an earlier line's id; {first_named(len(shown), len(problems))}."
        message = f"{problem.message}." + (f" {shared}" if shared else "")
        yield Hit(message=message, evidence=f"line {problem.line}", values={"count": len(problems)}, line=problem.line, file=problem.manifest, shared=shared)


def unlisted(ctx: DataContext) -> Iterator[Hit]:
    """An audio file in the dataset's folder is listed by no manifest line.

    What it detects: audio files beside the listed ones (in `wavs/`, or the folder of a folder dataset: no transcript of the same name, no line of the LibriSpeech `.trans.txt` beside it) that no line names (the first DATA_EXAMPLES named, the rest counted).
    Why it matters: a clip you recorded and transcribed that the trainer will never see, or the trace of a line lost in an edit.
    Fires on: `wavs/LJ050-0001.wav` with no line for `LJ050-0001`.
    Does not fire on: a folder holding exactly the listed clips; an audio-only folder (no transcript beside any clip), whose every clip is judged; NeMo, CSV and Kaldi manifests, which often list one split (train, dev) of clips in a folder shared with the others.
    Does not mean: the file should be listed; it may be a leftover.
    """
    problems = [p for p in ctx.manifest.problems if p.kind == "unlisted"]
    if not problems:
        return
    names = ", ".join(_shown(p.file) for p in problems[: ctx.t.DATA_EXAMPLES])
    more = f" and {len(problems) - ctx.t.DATA_EXAMPLES:,} more" if len(problems) > ctx.t.DATA_EXAMPLES else ""
    yield Hit(
        message=f"{len(problems):,} audio file{'s are' if len(problems) != 1 else ' is'} in the dataset's folder but on no manifest line: {names}{more}.",
        evidence=f"{len(problems):,} unlisted beside {ctx.listed:,} listed",
        values={"count": len(problems)},
        file=problems[0].file,
    )


# --- the audio files ------------------------------------------------------------


def missing(ctx: DataContext) -> Iterator[Hit]:
    """A listed audio file does not exist.

    What it detects: manifest lines whose audio path, resolved the way the trainer reading this layout resolves it, names no file (every path looked for at is named: the working directory's and the manifest folder's, for NeMo and CSV, and the folder above the manifest's that the manifest's other paths resolve from, for NeMo, CSV and Kaldi).
    Why it matters: a loader crashes mid-epoch, or (NeMo, Coqui) substitutes or drops the clip and trains on less than you think.
    Fires on: a clip deleted after the manifest was written; a manifest written on another machine with absolute paths.
    Does not fire on: paths that resolve, relative to the working directory or the manifest as the layout's trainer does; nor relative paths of a NeMo, CSV or Kaldi manifest that resolve from a folder up to four above the manifest's, the nearest from which most of them do (a Kaldi recipe's root, two above data/train; a repository's root): a trainer run from there reads them, and a note names the folder.
    Does not mean: the file is lost; `--root` or `--audio-dir` may point at where it is.
    """
    from trainproof.data.layouts.shared import tried_paths

    table = ctx.frame("error_kind")
    rows = table[table["error_kind"] == "missing"]

    def say(r: Any) -> tuple[str, str]:
        tried = tried_paths(ctx.manifest, r.listed)
        where = f"looked for at {', then '.join(map(_shown, tried))}" if tried and tried != (r.audio,) else f"resolved to {_shown(r.audio)}"
        return f"{_name(r)} does not exist.", f"{_at(r)}{where}"

    yield from _examples(ctx, rows, "clips are missing", say)


def unreadable(ctx: DataContext) -> Iterator[Hit]:
    """A listed audio file cannot be decoded: empty, truncated, or not audio.

    What it detects: files libsndfile cannot open, 0-byte files, and files whose header promises more samples than they hold.
    Why it matters: a loader crashes on it, or a truncated clip trains its transcript's end against nothing.
    Fires on: a 0-byte `.wav`; a WAV whose copy was cut short; a text file named `.wav`.
    Does not fire on: any file libsndfile reads whole.
    Does not mean: the recording is lost; the original may be fine.
    """
    table = ctx.frame("error_kind")
    rows = table[table["error_kind"].isin(["unreadable", "empty", "truncated"])]
    yield from _examples(ctx, rows, "clips cannot be read", lambda r: (f"{_name(r)} cannot be read: {_shown(r.error)}.", f"{_at(r)}{r.error_kind}"))


def nonfinite(ctx: DataContext) -> Iterator[Hit]:
    """A clip holds NaN or infinite samples.

    What it detects: samples of a floating-point file (32- or 64-bit float WAV, AIFF, ...) that are NaN or infinite.
    Why it matters: one NaN sample makes the clip's spectrogram NaN, and the first batch that holds it turns the loss, then every weight, into NaN.
    Fires on: a float WAV written by a resampler or a gain stage that divided by zero.
    Does not fire on: integer formats (16- and 24-bit PCM cannot hold NaN), or float files whose samples are all finite.
    Does not mean: the rest of the clip is bad; trainproof reads those samples as 0 for its other numbers.
    """
    decoded = _need_clips(ctx, "nonfinite")
    rows = decoded[decoded["nonfinite"] > 0]
    yield from _examples(
        ctx, rows, "clips hold NaN or infinite samples",
        lambda r: (f"{_name(r)} holds {figures.plural(int(r.nonfinite), 'NaN or infinite sample')}.",
                   f"{int(r.nonfinite):,} non-finite of {figures.plural(int(r.frames) * max(int(r.channels), 1), 'sample')} ({r.subtype})"),
    )  # fmt: skip


def _mixed(ctx: DataContext, column: str, target: Any, noun: str, show: Any) -> Iterator[Hit]:
    decoded = _need_clips(ctx, column)
    counts = decoded[column].value_counts()
    if target is None:
        if len(counts) < 2:
            return
        main = counts.index[0]
        spread = ", ".join(f"{show(value)} ({count:,})" for value, count in counts.items())
        rows = decoded[decoded[column] != main]
        yield from _examples(
            ctx, rows, f"clips differ from the corpus's {noun}",
            lambda r: (f"{_name(r)} is {show(getattr(r, column))}, while most of the corpus is {show(main)}.", f"{noun}s in the corpus: {spread}"),
        )  # fmt: skip
        return
    rows = decoded[decoded[column] != target]
    spread = ", ".join(f"{show(value)} ({count:,})" for value, count in counts.items())
    yield from _examples(
        ctx, rows, f"clips are not at the {noun} asked for",
        lambda r: (f"{_name(r)} is {show(getattr(r, column))}, not the {show(target)} asked for.", f"{noun}s in the corpus: {spread}"),
    )  # fmt: skip


def sample_rate(ctx: DataContext) -> Iterator[Hit]:
    """Clips have different sample rates, or not the rate asked for with `--sample-rate`.

    What it detects: decoded clips whose sample rate differs from `--sample-rate`, or, without it, from the corpus's most common rate.
    Why it matters: a model trained at one rate learns the others' spectra wrong; trainers resample silently (costly, and lossy for upsampling) or not at all.
    Fires on: a corpus of 22,050 Hz clips with a few at 44,100 Hz.
    Does not fire on: one rate throughout (or the rate asked for).
    Does not mean: the odd clips are bad recordings; resample them once, offline.
    """
    yield from _mixed(ctx, "sample_rate", ctx.sample_rate, "sample rate", lambda v: f"{int(v):,} Hz")


def channels(ctx: DataContext) -> Iterator[Hit]:
    """Clips have different channel counts, or not the count asked for with `--channels`.

    What it detects: decoded clips whose channel count differs from `--channels`, or from the corpus's most common count.
    Why it matters: trainers downmix silently; a stereo clip with one dead channel downmixes 6 dB quieter.
    Fires on: a mono corpus with a stereo clip.
    Does not fire on: one channel count throughout.
    Does not mean: the clip is wrong, only that it is not like the rest.
    """
    yield from _mixed(ctx, "channels", ctx.channels, "channel count", lambda v: f"{int(v)} channel{'s' if int(v) != 1 else ''}")


def sample_format(ctx: DataContext) -> Iterator[Hit]:
    """Clips are stored in different sample formats (16-bit, 24-bit, float).

    What it detects: decoded clips whose sample format (libsndfile subtype) differs from the corpus's most common one.
    Why it matters: a pipeline that reads raw integers (not through a float conversion) scales them differently; float files can hold values beyond full scale.
    Fires on: a corpus of 16-bit clips with one 32-bit float clip.
    Does not fire on: one format throughout.
    Does not mean: anything is lost; it is a consistency warning.
    """
    yield from _mixed(ctx, "subtype", None, "sample format", str)


def duration(ctx: DataContext) -> Iterator[Hit]:
    """A clip is shorter than DATA_MIN_DURATION_S or longer than DATA_MAX_DURATION_S.

    What it detects: decoded clips (or segments) whose duration is under DATA_MIN_DURATION_S or over DATA_MAX_DURATION_S; and, whatever the bounds, clips longer than trainproof decodes (4 hours), by what their header claims, or by what was decoded before it stopped when the header gives no length.
    Why it matters: TTS and ASR recipes drop such clips silently (a max audio length, a min text length), so the corpus you train on is smaller than the one you check; kept, a very long clip dominates a batch's memory.
    Fires on: a 0.3 s clip; a 25 s clip; a 13 MB FLAC of silence that decodes to 100 hours.
    Does not fire on: clips within the bounds (set them to your recipe's in the configuration).
    Does not mean: the clip is bad audio; but a clip past what trainproof decodes is not analysed (no level, silence, clipping or duplicate check).
    """
    from trainproof.data.clip import TOO_LONG

    table, t = ctx.frame("error_kind", "duration_s"), ctx.t
    kinds = table["error_kind"]
    readable, past = kinds.isna(), kinds == TOO_LONG
    if not (readable.any() or past.any()):
        raise NotApplicable(_no_clip(ctx))
    seconds = table["duration_s"]
    rows = table[(readable & ((seconds < t.DATA_MIN_DURATION_S) | (seconds > t.DATA_MAX_DURATION_S))) | past]
    bounds = f"bounds {figures.num(t.DATA_MIN_DURATION_S)}-{figures.num(t.DATA_MAX_DURATION_S)} s"

    def say(r: Any) -> tuple[str, str]:
        if r.error_kind == TOO_LONG:
            return f"{_name(r)} is not analysed: {r.error}.", f"{figures.num(r.duration_s)} s, not analysed; {bounds}"
        return f"{_name(r)} lasts {figures.num(r.duration_s)} s.", f"{figures.num(r.duration_s)} s; {bounds}"

    yield from _examples(ctx, rows, "clips are out of the duration bounds", say)


def duration_claim(ctx: DataContext) -> Iterator[Hit]:
    """The manifest's `duration` disagrees with the audio's.

    What it detects: a manifest duration further than DATA_DURATION_TOLERANCE_S and DATA_DURATION_TOLERANCE_SHARE from the decoded clip's (or segment's) duration.
    Why it matters: NeMo and others trust the manifest's duration for bucketing and length filters without opening the file; a wrong one puts clips in the wrong batches or past the filters.
    Fires on: a manifest written before the audio was trimmed.
    Does not fire on: a manifest without durations, or durations rounded to 10 ms.
    Does not mean: the audio is wrong; regenerate the manifest's durations.
    """
    decoded = _need_clips(ctx, "claimed_s", "duration_s")
    claimed, seconds = decoded["claimed_s"].to_numpy(), decoded["duration_s"].to_numpy()
    stated = ~np.isnan(claimed)
    if not stated.any():
        raise NotApplicable("the manifest states no durations")
    t = ctx.t
    gap = np.abs(claimed - seconds)
    with np.errstate(invalid="ignore"):  # NaN (no duration stated) is no gap
        wrong = stated & (gap > t.DATA_DURATION_TOLERANCE_S) & (gap > t.DATA_DURATION_TOLERANCE_SHARE * seconds)
    rows = decoded.iloc[np.flatnonzero(wrong)]
    yield from _examples(
        ctx, rows, "clips have a wrong duration in the manifest",
        lambda r: (f"{_name(r)} lasts {figures.num(r.duration_s)} s; the manifest says {figures.num(r.claimed_s)} s.", f"manifest {figures.num(r.claimed_s)} s, audio {figures.num(r.duration_s)} s"),
    )  # fmt: skip


def clipping(ctx: DataContext) -> Iterator[Hit]:
    """A clip is clipped: runs of consecutive full-scale samples.

    What it detects: a run of at least DATA_CLIP_RUN consecutive full-scale samples in a channel, or full-scale samples making up at least DATA_CLIP_SHARE of the clip (and at least DATA_CLIP_RUN of them: one click in a very short clip is not clipping).
    Why it matters: clipping is harsh distortion a TTS model learns to reproduce, and a sign the recording level was too high.
    Fires on: speech amplified past full scale and saved as 16-bit.
    Does not fire on: speech peak-normalised to 0.99, or touching full scale for a sample or two.
    Does not mean: the clip is unusable; a few clipped peaks are mild.
    """
    decoded = _need_clips(ctx, "frames", "channels", "clipped", "clip_run")
    t = ctx.t
    frames = decoded["frames"] * decoded["channels"].clip(lower=1)
    share = decoded["clipped"] / frames.where(frames > 0, 1)
    # by share, too, fewer full-scale samples than a run are a touch of full scale, not clipping (a click in a 25 ms clip)
    many = decoded["clipped"] >= t.DATA_CLIP_RUN
    rows = decoded[(decoded["clip_run"] >= t.DATA_CLIP_RUN) | ((share >= t.DATA_CLIP_SHARE) & many)]
    yield from _examples(
        ctx, rows, "clips are clipped",
        lambda r: (f"{_name(r)} is clipped: {figures.plural(r.clip_run, 'consecutive full-scale sample')}.",
                   f"longest run {figures.plural(r.clip_run, 'sample')}, {figures.plural(r.clipped, 'full-scale sample')}"),
    )  # fmt: skip


def edge_silence(ctx: DataContext) -> Iterator[Hit]:
    """A clip starts or ends with a long silence.

    What it detects: leading or trailing silence (frames 40 dB under the clip's own speech level) longer than DATA_EDGE_SILENCE_S.
    Why it matters: a TTS model learns to pause before or after speaking, and attention-based aligners stall on long silences.
    Fires on: a recording with two seconds of room tone before the speaker starts.
    Does not fire on: a short pause inside the clip, or a few hundred milliseconds at the ends.
    Does not mean: the speech is bad; trim the ends.
    """
    decoded = _need_clips(ctx, "lead_s", "trail_s")
    limit = ctx.t.DATA_EDGE_SILENCE_S
    rows = decoded[(decoded["lead_s"] > limit) | (decoded["trail_s"] > limit)]
    yield from _examples(
        ctx, rows, "clips have long silence at an end",
        lambda r: (f"{_name(r)} has {figures.num(max(r.lead_s, r.trail_s))} s of silence at its {'start' if r.lead_s >= r.trail_s else 'end'}.", f"leading {figures.num(r.lead_s)} s, trailing {figures.num(r.trail_s)} s; limit {figures.num(limit)} s"),
    )  # fmt: skip


def cut_off(ctx: DataContext) -> Iterator[Hit]:
    """Speech is cut off at the start or end of a clip.

    What it detects: a first or last 10 ms frame within DATA_CUT_EDGE_DB of the clip's speech level (in a clip louder than DATA_SILENT_DB): the file starts or ends mid-sound.
    Why it matters: the transcript's first or last word is partly missing from the audio, so the model learns to swallow it.
    Fires on: a clip exported with its end trimmed into the last word.
    Does not fire on: clips that begin and end in (even short) silence.
    Does not mean: the word is gone entirely; listen to the edge.
    """
    decoded = _need_clips(ctx, "level_db", "first_db", "last_db")
    edge = -ctx.t.DATA_CUT_EDGE_DB
    level, first, last = (decoded[name].to_numpy() for name in ("level_db", "first_db", "last_db"))
    with np.errstate(invalid="ignore"):  # NaN is no level: not loud, no edge
        flagged = (level > ctx.t.DATA_SILENT_DB) & ((first >= edge) | (last >= edge))
    rows = decoded.iloc[np.flatnonzero(flagged)]  # the flagged rows' columns copied, not every loud clip's
    yield from _examples(
        ctx, rows, "clips are cut off at an edge",
        lambda r: (f"{_name(r)} is cut off at its {'end' if r.last_db >= edge else 'start'}: the {'last' if r.last_db >= edge else 'first'} 10 ms are at speech level.", f"first frame {figures.num(r.first_db)} dB, last frame {figures.num(r.last_db)} dB relative to the clip's level"),
    )  # fmt: skip


def dc_offset(ctx: DataContext) -> Iterator[Hit]:
    """A clip has a DC offset.

    What it detects: a mean sample value at least DATA_DC_OFFSET of full scale away from 0.
    Why it matters: the offset wastes headroom, makes the ends of the clip click, and shifts every spectral frame's lowest bin.
    Fires on: a recording through a faulty interface with a +0.2 offset.
    Does not fire on: speech centred on 0.
    Does not mean: the recording is unusable; a high-pass filter removes it.
    """
    decoded = _need_clips(ctx, "dc")
    rows = decoded[decoded["dc"].abs() >= ctx.t.DATA_DC_OFFSET]
    yield from _examples(ctx, rows, "clips have a DC offset", lambda r: (f"{_name(r)} has a DC offset of {figures.num(r.dc)}.", f"mean sample {figures.num(r.dc)} (full scale 1); limit {figures.num(ctx.t.DATA_DC_OFFSET)}"))


def silent(ctx: DataContext) -> Iterator[Hit]:
    """A clip is silent (or nearly) while its transcript has words.

    What it detects: a decoded clip whose speech level (95th percentile of its 10 ms frame energies) is under DATA_SILENT_DB, with a non-empty transcript; in an audio-only folder (no transcripts), any such clip, at WARN.
    Why it matters: the model is taught that the transcript sounds like nothing: a clip paired with the wrong (or no) audio. Without a transcript nothing is mislabelled, but a vocoder or codec trained on the clip learns nothing from it, and audio awaiting transcription holds no speech there.
    Fires on: a clip of zeros; room noise at -70 dBFS listed with a sentence.
    Does not fire on: quiet but clear speech (its level is above DATA_SILENT_DB).
    Does not mean: nothing was recorded; the right file may be elsewhere.
    """
    decoded = _need_clips(ctx, "level_db")
    if ctx.manifest.audio_only:
        quiet = decoded[decoded["level_db"] < ctx.t.DATA_SILENT_DB]
        for hit in _examples(
            ctx, quiet, "clips are silent",
            lambda r: (f"{_name(r)} is silent (level {figures.num(r.level_db)} dBFS): no transcript is mislabelled by it, but it holds no speech.",
                       f"level {figures.num(r.level_db)} dBFS; limit {figures.num(ctx.t.DATA_SILENT_DB)} dBFS"),
        ):  # fmt: skip
            yield replace(hit, level=Level.WARN)
        return
    quiet = ctx.with_columns(decoded[decoded["level_db"] < ctx.t.DATA_SILENT_DB], ["text"])  # the few quiet clips' transcripts
    rows = quiet[quiet["text"].fillna("").str.strip() != ""]
    yield from _examples(
        ctx, rows, "clips are silent",
        lambda r: (f"{_name(r)} is silent (speech level {figures.num(r.level_db)} dBFS) but its transcript has words.", f"level {figures.num(r.level_db)} dBFS; limit {figures.num(ctx.t.DATA_SILENT_DB)} dBFS"),
    )  # fmt: skip


def _repeats(
    ctx: DataContext, rows: pd.DataFrame, key: str, *, differing: Sequence[str | tuple[str, ...]] = (), unlike_first: str | None = None
) -> tuple[pd.DataFrame, int, dict[Any, str]]:
    """The rows that repeat an earlier row's ``key`` (all but the first of each group): the first DATA_EXAMPLES of them
    in line order (all :func:`_examples` shows), how many there are, and the first clip of each of their groups by key.

    Only groups whose rows also differ in every item of ``differing`` count
    (the paths and ids of duplicated audio, the transcripts of duplicated
    text; a missing value is no difference). An item that is a tuple of
    columns differs where any of them does (a missing value only where all
    are). With ``unlike_first``, only the rows whose value in that column is
    not their group's first row's count (the transcripts of conflicting
    audio: a line that agrees with the first is no conflict). An empty or
    missing key groups nothing. Worked out on the factorised codes of the
    few columns it reads, with numpy: a corpus where every clip has nine
    copies costs one sort, not a Python loop per group, nor a pandas step
    (and its copy) per question.
    """
    import pandas as pd

    maybe = _may_repeat(ctx, rows, key)
    if not maybe.all():  # the rows whose key no other row's hash shares cannot repeat: grouped exactly, the rest only
        rows = rows[maybe]
    items = [column for item in differing for column in ((item,) if isinstance(item, str) else item)]
    rows = _holding(ctx, rows, [key, *items, *([unlike_first] if unlike_first else []), "line", "listed"])
    keys = rows[key]
    groups = pd.factorize(keys)[0]  # a missing key: -1
    member = (groups >= 0) & (keys != "").to_numpy(dtype=bool, na_value=False)
    count = int(groups.max()) + 1 if groups.size else 0
    member[member] = np.bincount(groups[member], minlength=count)[groups[member]] > 1
    for column in differing:
        if not member.any():
            break
        values, within = _codes(rows, column)[member], groups[member]
        known = values >= 0
        lowest, highest = np.full(count, np.iinfo(np.int64).max), np.full(count, -1)
        np.minimum.at(lowest, within[known], values[known])
        np.maximum.at(highest, within[known], values[known])
        member[member] = (highest > lowest)[within]
    position = np.flatnonzero(member)
    first = np.full(count, len(rows))
    np.minimum.at(first, groups[position], position)
    repeat = position[first[groups[position]] != position]
    if unlike_first is not None:
        values = pd.factorize(rows[unlike_first])[0]
        repeat = repeat[values[repeat] != values[first[groups[repeat]]]]
    lines = rows["line"].to_numpy()
    repeat = repeat[np.argsort(lines[repeat], kind="stable")]
    shown = repeat[: ctx.t.DATA_EXAMPLES]
    listed = rows["listed"]
    firsts = np.unique(first[groups[shown]]).tolist()
    names = {keys.iloc[i]: _shown(listed.iloc[i]) + (f" (line {int(lines[i])})" if lines[i] else "") for i in firsts}  # line 0: none
    return rows.iloc[shown], len(repeat), names


def _holding(ctx: DataContext, rows: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    """``rows`` with the columns ``names``, those it lacks read for its rows alone."""
    return rows if all(name in rows.columns for name in names) else ctx.with_columns(rows, names)


def _codes(rows: pd.DataFrame, columns: str | tuple[str, ...]) -> np.ndarray:
    """Each row's value of one column, or of a tuple of columns taken together, as an integer code; -1 where the value
    is missing (for a tuple, where every column's is)."""
    import pandas as pd

    if isinstance(columns, str):
        return pd.factorize(rows[columns])[0]
    codes = np.zeros(len(rows), dtype=np.int64)
    missing = np.ones(len(rows), dtype=bool)
    for column in columns:
        part = pd.factorize(rows[column])[0]
        missing &= part < 0
        codes = pd.factorize(codes * (int(part.max(initial=-1)) + 2) + part + 1)[0]  # dense again: no overflow
    codes[missing] = -1
    return codes


def duplicate_audio(ctx: DataContext) -> Iterator[Hit]:
    """The same audio is listed under different names.

    What it detects: decoded clips whose samples are identical (the same audio in WAV and FLAC counts as the same) under different paths or ids: a copy of a file, or one file (or segment) listed on several lines under different ids.
    Why it matters: a duplicate doubles that clip's weight in training (a clip listed six times weighs six times) and leaks between a train and a validation split.
    Fires on: a clip copied under a new name; one clip and its transcript listed on six lines under six ids.
    Does not fire on: different recordings of the same sentence; a line repeated whole, id and all (TP-DATA-DUPLICATE-ID says so).
    Does not mean: which copy to keep; see TP-DATA-CONFLICTING-TEXT when their transcripts differ.
    """
    decoded = _need_clips(ctx)
    rows, count, firsts = _repeats(ctx, decoded, "hash", differing=(("audio", "id"),))
    if not count:
        return
    hashes = ctx.with_columns(decoded, ["hash"])["hash"]
    groups = {h: decoded.index[(hashes == h).to_numpy(dtype=bool, na_value=False)] for h in dict.fromkeys(rows["hash"])}  # the few shown
    first_audio = {h: ctx.frame("audio", rows=group[:1])["audio"].iloc[0] for h, group in groups.items()}

    def say(r: Any) -> tuple[str, str]:
        times = len(groups[r.hash])
        if r.audio == first_audio[r.hash]:
            return (
                f"{_name(r)} is listed again under the id {quoted(r.id)}: the same clip as {firsts[r.hash]}, listed {times:,} times in all, "
                f"so it weighs {times:,} times in training.", f"the same file, listed {times:,} times (hash {r.hash[:12]})",
            )  # fmt: skip
        return f"{_name(r)} has the same audio as {firsts[r.hash]}.", f"identical decoded samples (hash {r.hash[:12]})"

    yield from _examples(ctx, rows, "clips duplicate another's audio", say, total=count)


def conflicting_text(ctx: DataContext) -> Iterator[Hit]:
    """The same audio is listed with different transcripts.

    What it detects: identical decoded audio (the same file on two lines, or a copy) whose transcripts differ after case and whitespace are folded: each line whose transcript is not that of the first line with the audio and a transcript.
    Why it matters: the model is told one sound means two things; at least one pairing is wrong.
    Fires on: one clip listed on two lines with different sentences.
    Does not fire on: the same audio listed twice with the same sentence (see TP-DATA-DUPLICATE-AUDIO); a line with no transcript beside one with a transcript (TP-DATA-EMPTY-TEXT names the empty one). It does not run on an audio-only folder (no transcript beside any clip).
    Does not mean: which transcript is right.
    """
    _need_transcripts(ctx)
    decoded = _need_clips(ctx)
    spoken = ctx.spoken[decoded.index.to_numpy()]
    rows, count, firsts = _repeats(ctx, decoded if spoken.all() else decoded[spoken], "hash", unlike_first="folded")
    yield from _examples(
        ctx, rows, "clips have the audio of another line with another transcript",
        lambda r: (f"{_name(r)} (line {r.line}) has the same audio as {firsts[r.hash]} but another transcript: {quoted(r.text)}.", f"identical decoded samples (hash {r.hash[:12]}), different transcripts"),
        total=count,
    )  # fmt: skip


# --- the transcripts ------------------------------------------------------------


def empty_text(ctx: DataContext) -> Iterator[Hit]:
    """A clip has an empty transcript.

    What it detects: a listed clip whose transcript is empty or only whitespace.
    Why it matters: a TTS model learns that no text produces speech; an ASR model learns to emit nothing for it; some loaders crash on it.
    Fires on: `LJ001-0001||`.
    Does not fire on: any transcript with a character. It does not run on an audio-only folder (no transcript beside any clip).
    Does not mean: the audio is bad.
    """
    _need_transcripts(ctx)
    texts = cast("Sequence[str | None]", entry_column(ctx.manifest.entries, "text"))  # as the manifest holds them: no copy
    rows = ctx.frame(rows=np.flatnonzero(np.fromiter((text is None or not text.strip() for text in texts), dtype=bool, count=len(texts))))
    yield from _examples(ctx, rows, "clips have an empty transcript", lambda r: (f"{_name(r)} has an empty transcript.", f"line {r.line}: no text"))


def text_rate(ctx: DataContext) -> Iterator[Hit]:
    """A transcript does not fit its audio: characters per second far from the corpus's (or the speaker's).

    What it detects: characters per second of speech (transcript letters over the clip's duration minus its edge silences) more than DATA_CPS_WARN_Z robust sigmas (MAD x 1.4826) from the median of the corpus, or of the speaker when speakers are known with at least DATA_CPS_MIN_CLIPS clips each, even at the edge of what the measurement allows: its speech taken DATA_CPS_EDGE_S longer or shorter (whichever brings it nearer the median; edge silence is found to a 10 ms frame at each end), and the group's sigma widened by DATA_CPS_SIGMA_SE standard errors of a MAD estimate from its n clips (1.17 sigma / sqrt(n) each). A FAIL when the clip is beyond DATA_CPS_FAIL_Z at that edge; beyond DATA_CPS_FAIL_Z as measured but not at that edge (a very short clip, a small group) is a WARN that says why.
    Why it matters: a transcript paired with the wrong audio (a shifted manifest, swapped files) teaches the model nonsense and ruins alignment.
    Fires on: two transcripts swapped between a 1.5 s and a 6 s clip.
    Does not fire on: a corpus with fewer than DATA_CPS_MIN_CLIPS clips, or naturally fast and slow sentences within the spread, nor a clip past DATA_CPS_WARN_Z only by a sigma that its group is too small to know that well (a yes/no corpus of 29 clips read so evenly that its MAD came out at 5% of the median, where 31 clips of the same speaker give 9%); and never FAILs a clip whose speech is too short, or a group too small, to tell it from the spread. It does not run on an audio-only folder (no transcript beside any clip).
    Does not mean: which of a swapped pair is wrong; both lines are worth a look.
    """
    t = ctx.t
    rates = ctx.rates
    rows = rates.flagged
    for hit, row, level in zip(
        _examples(
            ctx, rows, "transcripts do not fit their audio",
            lambda r: (f"{_name(r)} reads at {figures.plural(r.cps, 'character')} per second "
                       f"against a median of {figures.num(r.median_cps)}: the transcript may belong to other audio.",
                       f"{figures.num(r.cps)} chars/s, robust z {figures.num(r.z)}; "
                       f"{figures.plural(len(r.text or ''), 'character')} over {figures.num(r.duration_s)} s"),
        ),
        rows.itertuples(index=False),
        rates.flagged_levels,
    ):  # fmt: skip
        if level == 2:
            yield hit  # the rule's own level, FAIL
        elif abs(row.z) > t.DATA_CPS_FAIL_Z:
            why = (
                f" Beyond the FAIL line (robust z {figures.num(t.DATA_CPS_FAIL_Z)}) as measured, but not beyond it allowing for "
                f"{figures.num(t.DATA_CPS_EDGE_S)} s of edge-silence error and a sigma from {int(row.group_clips)} clips (z at least "
                f"{figures.num(abs(row.z_bound))}): a WARN, not a FAIL."
            )
            yield amended(hit, why, level=Level.WARN)
        else:
            yield replace(hit, level=Level.WARN)


def rate_levels(rates: pd.DataFrame, t: Thresholds) -> np.ndarray:
    """Per row of :func:`speech_rates`, how TP-DATA-TEXT-RATE levels the clip: 2 FAIL (past DATA_CPS_FAIL_Z even at
    the edge of its measurement), 1 WARN (past DATA_CPS_WARN_Z there), 0 in the spread. The rule and the report's
    histogram both read this."""
    bound = np.abs(rates["z_bound"].to_numpy(dtype=float))
    with np.errstate(invalid="ignore"):
        return np.where(bound > t.DATA_CPS_FAIL_Z, 2, np.where(bound > t.DATA_CPS_WARN_Z, 1, 0))


def speech_rates(ctx: DataContext) -> tuple[pd.DataFrame, bool]:
    """The readable clips with a transcript, with their characters per second of speech and its robust z-score.

    Indexed by manifest position. Columns: ``cps``, ``median_cps`` and ``sigma_cps`` (MAD x 1.4826)
    of the clip's group, ``sigma_wide`` (that sigma widened by
    DATA_CPS_SIGMA_SE standard errors), ``z`` (NaN in a group with no spread), ``group_clips``
    (the clips of its group) and ``z_bound``: the z nearest the median that the
    measurement allows (see :func:`text_rate`). The group is
    the clip's speaker when every speaker has at least DATA_CPS_MIN_CLIPS
    clips (the bool returned says so), else the corpus. NotApplicable under
    DATA_CPS_MIN_CLIPS readable clips. TP-DATA-TEXT-RATE and the report's
    histogram both read this, so they agree.
    """
    import pandas as pd

    _need_transcripts(ctx)
    decoded = _need_clips(ctx, "duration_s", "lead_s", "trail_s")
    t = ctx.t
    if len(decoded) < t.DATA_CPS_MIN_CLIPS:
        raise NotApplicable(f"only {figures.plural(len(decoded), 'readable clip')} (needs {t.DATA_CPS_MIN_CLIPS})")
    # numpy arrays, each let go when it is used up: as a frame of Series, a million clips' rates were 15 columns at once
    positions = decoded.index.to_numpy()
    speech = decoded["duration_s"].to_numpy(dtype=float) - decoded["lead_s"].to_numpy(dtype=float)
    speech -= decoded["trail_s"].to_numpy(dtype=float)
    np.maximum(speech, 0.05, out=speech)  # NaN stays NaN, as with Series.clip
    del decoded
    letters = ctx.letters if len(positions) == ctx.listed else ctx.letters[positions]  # every clip: no copy
    spoken = letters > 0
    if not spoken.all():
        positions, letters, speech = positions[spoken], letters[spoken], speech[spoken]
    cps = letters / speech
    speakers = pd.Series([], dtype=object)
    if any(cast("Sequence[str | None]", entry_column(ctx.manifest.entries, "speaker"))):  # else one group: no speaker named
        speakers = ctx.frame("speaker", rows=positions)["speaker"].fillna("")
    by_speaker = bool(speakers.nunique() > 1 and speakers.value_counts().min() >= t.DATA_CPS_MIN_CLIPS)
    if by_speaker:
        series = pd.Series(cps)
        median = series.groupby(speakers.to_numpy(), sort=False).transform("median").to_numpy()
        sigma = MAD_TO_SIGMA * pd.Series(np.abs(cps - median)).groupby(speakers.to_numpy(), sort=False).transform("median").to_numpy()
        clips: np.ndarray = speakers.groupby(speakers, sort=False).transform("size").to_numpy()
    else:  # the corpus's: one value each, as cps * 0 + x gives them (NaN where cps is)
        middle = pd.Series(cps).median()
        deviation = cps - middle
        np.abs(deviation, out=deviation)
        mad = MAD_TO_SIGMA * pd.Series(deviation).median()
        del deviation
        median, sigma, clips = (_alike(cps, value) for value in (middle, mad, float(len(cps))))
    del speakers
    spread = ~(sigma > 0)
    with np.errstate(divide="ignore", invalid="ignore"):  # each in place, in the order of (cps - median) / sigma and the rest
        z = cps - median
        z /= sigma
        z[spread] = np.nan
        nearer = speech - t.DATA_CPS_EDGE_S
        np.maximum(nearer, 0.05, out=nearer)
        faster = cps > median
        nearer[faster] = speech[faster] + t.DATA_CPS_EDGE_S
        del speech, faster
        wide = _widened(sigma, clips, t.DATA_CPS_SIGMA_SE * MAD_SE)
        bound = letters / nearer
        del nearer, letters
        bound -= median
        bound /= wide
        bound[np.sign(bound) != np.sign(z)] = 0.0  # moved past the median: no deviation it can prove (NaN included)
        bound[spread] = np.nan
    columns = {"cps": cps, "median_cps": median, "sigma_cps": sigma, "sigma_wide": wide, "z": z, "group_clips": clips, "z_bound": bound}
    return pd.DataFrame(columns, index=pd.Index(positions), copy=False), by_speaker


def _alike(cps: np.ndarray, value: float) -> np.ndarray:
    """``cps * 0 + value``: NaN where cps is, else ``value``; one value seen at every row (no array a clip) when no cps
    is NaN, as a corpus's median, sigma and size are."""
    if np.isnan(cps).any():
        alike = cps * 0
        alike += value
        return alike
    return np.broadcast_to(np.float64(value), cps.shape)


def _widened(sigma: np.ndarray, clips: np.ndarray, standard_errors: float) -> np.ndarray:
    """``sigma * (1 + standard_errors / sqrt(clips))``: a group's sigma widened by its standard error, in that order;
    one value seen at every row when both are (a corpus's)."""
    if sigma.size and sigma.strides == clips.strides == (0,):
        one = np.sqrt(clips[:1])
        np.divide(standard_errors, one, out=one)
        one += 1
        one *= sigma[:1]
        return np.broadcast_to(one[0], sigma.shape)
    wide = np.sqrt(clips)
    np.divide(standard_errors, wide, out=wide)
    wide += 1
    wide *= sigma
    return wide


_DIGIT = re.compile(r"\d+")
_SYMBOL = re.compile(r"[$€£¥%&@#+=<>/\\^~*_|]")
# "No." and "Nr." are abbreviations only before a number: "I said no." ends a sentence, and Twi's "no" is a word
_ABBREVIATION = re.compile(r"\b(?:Dr|Mr|Mrs|Ms|St|Jr|Sr|Prof|vs|etc|approx|e\.g|i\.e)\.|\b(?:No|Nr)\.(?=\s?\d)", re.IGNORECASE)
_UNNORMALIZED = re.compile(f"{_DIGIT.pattern}|{_SYMBOL.pattern}|(?i:{_ABBREVIATION.pattern})")  # any of the three, in one search


def unnormalized(ctx: DataContext) -> Iterator[Hit]:
    """A transcript holds digits, symbols or abbreviations a TTS front end may read wrongly.

    What it detects: transcripts with digits, symbols such as `$ % & @ / +`, or common abbreviations (`Dr.`, `St.`, `etc.`; `No.` before a number).
    Why it matters: `3/4` can be read as a date, a fraction or "three slash four"; the model learns whichever its text front end picks at training, and another at inference.
    Fires on: "Dr. Smith paid $40 on 3/4".
    Does not fire on: text with numbers written out in words; "no." ending a sentence ("I said no.", or Twi's word "no"). It does not run on an audio-only folder (no transcript beside any clip).
    Does not mean: the corpus must be normalised by hand; run your TTS front end's normaliser before training.
    """
    _need_transcripts(ctx)
    search = _UNNORMALIZED.search  # over the manifest's transcripts as it holds them: no copy of the column to search
    texts = cast("Sequence[str | None]", entry_column(ctx.manifest.entries, "text"))
    # a match holds a digit, a symbol or an abbreviation's full stop: the transcripts with none of the corpus's such
    # characters are not searched (a corpus with none at all, not one)
    triggers = {ch for ch in ctx.characters if ch.isdecimal() or ch == "." or _SYMBOL.match(ch)}
    holds = _any_of(triggers)
    found = (bool(triggers) and text is not None and holds(text) and search(text) is not None for text in texts)
    rows = ctx.frame(rows=np.flatnonzero(np.fromiter(found, dtype=bool, count=len(texts))))

    def say(r: Any) -> tuple[str, str]:
        found = [m.group(0) for pattern in (_DIGIT, _SYMBOL, _ABBREVIATION) for m in pattern.finditer(r.text or "")]
        shown = _listed([quoted(x) for x in dict.fromkeys(found)])
        return f"{_name(r)} has unnormalised text: {shown}.", f"line {r.line}: {len(found)} digit, symbol or abbreviation occurrence{'s' if len(found) != 1 else ''}"

    yield from _examples(ctx, rows, "transcripts are not normalised", say)




@lru_cache(maxsize=4096)
def _script(ch: str) -> str:
    try:
        name = unicodedata.name(ch)
    except ValueError:
        return "UNKNOWN"
    return name.split(" ", 1)[0]


def odd_characters(ctx: DataContext) -> Iterator[Hit]:
    """A transcript holds control or invisible characters, or letters of a script foreign to the corpus.

    What it detects: control and format characters (U+0007, a zero-width space U+200B, a BOM), line and paragraph separators (U+2028, U+2029), half a surrogate pair (a JSON escape such as \\ud800, which no UTF-8 tokenizer can encode) and the replacement character U+FFFD (what bytes that are not UTF-8 were read as) anywhere in a transcript, and letters of a script that fewer than DATA_SCRIPT_SHARE of the transcripts use.
    Why it matters: invisible characters become tokens the model must learn to pronounce as nothing; a foreign script is out of the tokenizer's or phonemiser's alphabet, or text of another language pasted in.
    Fires on: "hello\u200bworld"; Cyrillic letters in an English corpus.
    Does not fire on: a corpus that mixes two scripts throughout (both are its own). It does not run on an audio-only folder (no transcript beside any clip).
    Does not mean: the text is wrong; a homoglyph (Cyrillic "а" for Latin "a") looks identical.
    """
    _need_transcripts(ctx)
    texts = cast("Sequence[str | None]", entry_column(ctx.manifest.entries, "text"))  # as the manifest holds them: no copy
    letters: dict[str, set[str]] = {}  # script -> the letters of it that the transcripts use
    for ch in ctx.characters:
        if ch.isalpha():
            letters.setdefault(_script(ch), set()).add(ch)
    total = len(texts)
    foreign: set[str] = set()
    if len(letters) > 1:  # one script cannot be foreign to itself
        for chars in letters.values():
            uses = _any_of(chars)
            users = sum(1 for text in texts if text and uses(text))
            if users / total < ctx.t.DATA_SCRIPT_SHARE:
                foreign |= chars
    # what the text report spells out (controls, format characters, separators, lone surrogates), private use,
    # unassigned, and U+FFFD
    oddities = frozenset(ch for ch in ctx.characters if hidden(ch) or unicodedata.category(ch) in ("Co", "Cn") or ch == "\ufffd") | foreign
    if not oddities:
        return
    holds = _any_of(set(oddities))
    rows = ctx.frame(rows=np.flatnonzero(np.fromiter((bool(text) and holds(text) for text in texts), dtype=bool, count=total)))

    def say(r: Any) -> tuple[str, str]:
        odd = [ch for ch in r.text if ch in oddities]
        shown = _listed([f"U+{ord(ch):04X} {unicodedata.name(ch, unicodedata.category(ch))}" for ch in dict.fromkeys(odd)])
        return f"{_name(r)} has characters foreign to the corpus: {shown}.", f"line {r.line}: {len(odd)} character{'s' if len(odd) != 1 else ''}"

    yield from _examples(ctx, rows, "transcripts have odd characters", say)


def _any_of(chars: set[str]) -> Any:
    """A test of whether a text holds any of ``chars`` (a set intersection in C, not a loop per character)."""
    wanted = frozenset(chars)
    return lambda text: not wanted.isdisjoint(text)


def duplicate_text(ctx: DataContext) -> Iterator[Hit]:
    """Different clips of one speaker have the same sentence as their transcript.

    What it detects: transcripts that are identical after case and whitespace are folded, on lines with different audio, long enough to be a sentence (at least DATA_DUPLICATE_MIN_WORDS different words and DATA_DUPLICATE_MIN_LETTERS letters and digits) and, when the manifest names speakers, said by the same speaker (or by clips with no speaker recorded).
    Why it matters: in a TTS corpus it is often a copy-paste slip (the line above's text); in any corpus it leaks between a train and a validation split.
    Fires on: two lines with "He was not an ill disposed young man." and different audio, both of one speaker or of none named.
    Does not fire on: distinct sentences; a transcript too short to be a sentence said by many clips, a command word ("yes" on eleven lines of AN4, every clip of Speech Commands), a yes/no sequence or a short digit string: a vocabulary, not a slip; the same prompt read by different speakers (Common Voice, VCTK, CMU Arctic), which such corpora do by design. It does not run on an audio-only folder (no transcript beside any clip).
    Does not mean: the pairing is wrong; some corpora record prompts twice on purpose.
    """
    _need_transcripts(ctx)
    rows = ctx.frame("folded", "speaker", rows=np.flatnonzero(ctx.repeated_sentences))
    rows = rows.assign(said=rows["folded"] + "\x00" + rows["speaker"].fillna("").astype(object))  # a repeat is by one speaker
    found, count, firsts = _repeats(ctx, rows, "said", differing=("audio", "hash"))
    yield from _examples(ctx, found, "transcripts repeat another line's", lambda r: (f"{_name(r)} has the same transcript as {firsts[r.said]}: {quoted(r.text)}.", f"line {r.line}: identical folded text"), total=count)


ONE_SPLIT = "the dataset has one split"
"""Why the rules about leaks between splits do not judge a dataset of one split."""


def _leaks(ctx: DataContext, rows: pd.DataFrame, key: str) -> tuple[pd.DataFrame, int, dict[Any, str]]:
    """The rows whose ``key`` an earlier row of another split has (see :func:`_repeats`), each group's first named with
    its split."""
    if not ctx.listed:
        raise NotApplicable(_no_clip(ctx))
    if not ctx.manifest.splits:
        raise NotApplicable(ONE_SPLIT)
    found, count, firsts = _repeats(ctx, rows, key, differing=("split",), unlike_first="split")
    return found, count, firsts


def split_leak_audio(ctx: DataContext) -> Iterator[Hit]:
    """The same audio is in two splits.

    What it detects: clips of a dataset of several splits (train, validation, test) whose decoded samples are identical to a clip's of another split: each clip after the first with the audio, in a split that is not the first's.
    Why it matters: a model is evaluated on audio it was trained on, so its validation or test figures are better than it is.
    Fires on: one recording in both train-00000-of-00001.parquet and test-00000-of-00001.parquet.
    Does not fire on: the same audio twice within one split (TP-DATA-DUPLICATE-AUDIO says so); different recordings of the same sentence in two splits (see TP-DATA-SPLIT-LEAK-TEXT). It does not run on a dataset of one split.
    Does not mean: which split to take the clip out of.
    """
    decoded = _need_clips(ctx)
    rows, count, firsts = _leaks(ctx, decoded, "hash")
    yield from _examples(
        ctx, rows, "clips have the audio of a clip of another split",
        lambda r: (f"{_name(r)} ({r.split}) has the same audio as {firsts[r.hash]}, of another split.", f"identical decoded samples (hash {r.hash[:12]}) in two splits"),
        total=count,
    )  # fmt: skip


def split_leak_text(ctx: DataContext) -> Iterator[Hit]:
    """The same sentence is the transcript of clips in two splits.

    What it detects: transcripts of a dataset of several splits that are identical (case and whitespace folded) to one of another split and long enough to be a sentence (at least DATA_DUPLICATE_MIN_WORDS different words and DATA_DUPLICATE_MIN_LETTERS letters and digits).
    Why it matters: a TTS or ASR model evaluated on sentences it was trained on scores better than it will on new text; for a corpus read from one prompt list, it says the split was made by clip, not by sentence.
    Fires on: "He was not an ill disposed young man." in a train shard and in a test shard, with different audio.
    Does not fire on: a command word, a yes/no sequence or a short digit string said in both splits (a vocabulary); the same sentence twice within one split. It does not run on a dataset of one split, nor on an audio-only one.
    Does not mean: the split is wrong for every purpose: corpora that read one prompt list with many speakers split by speaker on purpose.
    """
    _need_transcripts(ctx)
    if ctx.listed and not ctx.manifest.splits:
        raise NotApplicable(ONE_SPLIT)  # before the transcripts are grouped, for nothing
    rows = ctx.frame("folded", rows=np.flatnonzero(ctx.repeated_sentences))
    found, count, firsts = _leaks(ctx, rows, "folded")
    yield from _examples(
        ctx, found, "transcripts are those of a clip of another split",
        lambda r: (f"{_name(r)} ({r.split}) has the same transcript as {firsts[r.folded]}, of another split: {quoted(r.text)}.", f"line {r.line}: identical folded text in two splits"),
        total=count,
    )  # fmt: skip


HAN_LETTERS = 2
"""How many letters a Chinese character counts as towards DATA_DUPLICATE_MIN_LETTERS: one carries about a short word."""


def _sentences_repeated(ctx: DataContext) -> np.ndarray:
    """Which clips' folded transcripts come more than once and are long enough to be a sentence (see
    :func:`_is_sentence`): each distinct repeated transcript is measured once, not each row."""
    import pandas as pd

    t = ctx.t
    maybe = _shared(ctx._folded_digests[0])  # only these can repeat: the exact grouping below is of them, not of every transcript
    codes, uniques = pd.factorize(ctx.frame("folded", rows=np.flatnonzero(maybe))["folded"])
    repeated = np.flatnonzero(np.bincount(codes[codes >= 0], minlength=len(uniques)) > 1)
    judged = np.zeros(len(uniques) + 1, dtype=bool)  # the last: a missing text's code, -1
    texts = uniques[repeated].tolist()  # the repeated texts at once, not an index lookup each
    judged[[code for code, text in zip(repeated.tolist(), texts) if text and _is_sentence(text, t)]] = True
    found = np.zeros(len(maybe), dtype=bool)
    found[maybe] = judged[codes]
    return found


def _may_repeat(ctx: DataContext, rows: pd.DataFrame, key: str) -> np.ndarray:
    """Which of ``rows`` may share their ``key`` with another row (see :func:`_shared`): for the audio's hash, the
    first 16 of its digits as the records hold them (bytes, no string a clip); else the key's :func:`_hash_repeats`."""
    records = getattr(ctx, "records", None)
    held = records.column("audio_hash") if key == "hash" and isinstance(records, ClipRecords) else None
    if held is None or held.dtype.kind != "S" or held.dtype.itemsize < 16 or len(held) != ctx.listed:
        return _hash_repeats(_holding(ctx, rows, [key])[key])
    positions = rows.index.to_numpy()
    keys = np.empty(len(positions), dtype=np.int64)
    mix = np.array([1, 0x9E3779B1], dtype=np.int64)
    for start in range(0, len(positions), TEXT_CHUNK):  # a chunk's digits copied at a time, not every clip's
        part = positions[start : start + TEXT_CHUNK]
        digits = held[part].view(np.uint8).reshape(len(part), held.dtype.itemsize)
        keys[start : start + len(part)] = digits[:, :16].copy().view(np.int64).reshape(len(part), 2) @ mix
    del held
    return _shared(keys)


def _hash_repeats(values: pd.Series) -> np.ndarray:
    """Which rows' values may come more than once: those whose 64-bit hash does (every value that repeats, and the rare
    value whose hash another shares, which exact grouping then tells apart). Read TEXT_CHUNK at a time and sorted as
    integers: neither a copy of the column nor a table of its distinct values (a million distinct transcripts' was
    the largest thing a rule built)."""
    count = len(values)
    hashes = np.empty(count, dtype=np.int64)
    for start in range(0, count, TEXT_CHUNK):
        chunk = values.iloc[start : start + TEXT_CHUNK].tolist()
        hashes[start : start + len(chunk)] = [hash(value) for value in chunk]
    return _shared(hashes)


def _shared(hashes: np.ndarray) -> np.ndarray:
    """Which of ``hashes`` another one equals."""
    count = len(hashes)
    order = np.argsort(hashes, kind="stable")
    ordered = hashes[order]
    same = ordered[1:] == ordered[:-1]
    shared = np.zeros(count, dtype=bool)
    shared[1:] |= same
    shared[:-1] |= same
    maybe = np.zeros(count, dtype=bool)
    maybe[order] = shared
    return maybe


def _is_sentence(text: str, t: Thresholds) -> bool:
    """At least DATA_DUPLICATE_MIN_WORDS different words and DATA_DUPLICATE_MIN_LETTERS letters and digits: a word is
    a space-separated run's letters and digits, or one letter of a script written without spaces (Han, Kana, Thai,
    ...: :data:`trainproof.tokenizer.scripts.UNSEGMENTED`)."""
    from trainproof.tokenizer.scripts import script_of

    words: set[str] = set()
    letters = 0
    for run in text.split():
        kept = []
        for ch in run:
            if not ch.isalnum():
                continue
            script = script_of(ch)
            if script is not None:
                words.add(ch)
                letters += HAN_LETTERS if script == "Han" else 1
            else:
                kept.append(ch)
                letters += 1
        if kept:
            words.add("".join(kept))
        if len(words) >= t.DATA_DUPLICATE_MIN_WORDS and letters >= t.DATA_DUPLICATE_MIN_LETTERS:
            return True  # a long transcript is decided by its first words
    return False


def empty_manifest(ctx: DataContext) -> Iterator[Hit]:
    """The manifest lists no clip.

    What it detects: a manifest (or folder) in which no line is a clip record.
    Why it matters: a trainer given it trains on nothing, or fails only after its setup.
    Fires on: a metadata.csv with only a header row.
    Does not fire on: a manifest with at least one clip.
    Does not mean: the audio is missing; the manifest may be the wrong file.
    """
    if not ctx.manifest.entries:
        evidence = f"0 records ({figures.plural(len(ctx.manifest.problems), 'problem')})"
        yield Hit(message=f"{ctx.manifest.path} lists no clip.", evidence=evidence, values={"count": 0})


DATA_RULES = rules_of(
    "data",
    (
        ("TP-DATA-EMPTY-MANIFEST", Level.FAIL, empty_manifest),
        ("TP-DATA-MANIFEST", Level.FAIL, manifest_broken),
        ("TP-DATA-MANIFEST-FORMAT", Level.WARN, manifest_format),
        ("TP-DATA-DUPLICATE-ID", Level.WARN, duplicate_id),
        ("TP-DATA-MISSING", Level.FAIL, missing),
        ("TP-DATA-UNREADABLE", Level.FAIL, unreadable),
        ("TP-DATA-NONFINITE", Level.FAIL, nonfinite),
        ("TP-DATA-UNLISTED", Level.WARN, unlisted),
        ("TP-DATA-SAMPLE-RATE", Level.FAIL, sample_rate),
        ("TP-DATA-CHANNELS", Level.WARN, channels),
        ("TP-DATA-SAMPLE-FORMAT", Level.WARN, sample_format),
        ("TP-DATA-DURATION", Level.WARN, duration),
        ("TP-DATA-DURATION-CLAIM", Level.WARN, duration_claim),
        ("TP-DATA-SILENT", Level.FAIL, silent),
        ("TP-DATA-CLIPPING", Level.WARN, clipping),
        ("TP-DATA-EDGE-SILENCE", Level.WARN, edge_silence),
        ("TP-DATA-CUT-OFF", Level.WARN, cut_off),
        ("TP-DATA-DC-OFFSET", Level.WARN, dc_offset),
        ("TP-DATA-DUPLICATE-AUDIO", Level.WARN, duplicate_audio),
        ("TP-DATA-CONFLICTING-TEXT", Level.FAIL, conflicting_text),
        ("TP-DATA-EMPTY-TEXT", Level.FAIL, empty_text),
        ("TP-DATA-TEXT-RATE", Level.FAIL, text_rate),
        ("TP-DATA-UNNORMALIZED", Level.WARN, unnormalized),
        ("TP-DATA-CHARACTERS", Level.WARN, odd_characters),
        ("TP-DATA-DUPLICATE-TEXT", Level.WARN, duplicate_text),
        ("TP-DATA-SPLIT-LEAK-AUDIO", Level.FAIL, split_leak_audio),
        ("TP-DATA-SPLIT-LEAK-TEXT", Level.WARN, split_leak_text),
    ),
)
"""The data command's rules, in the order they run; registered by id in :mod:`trainproof.checks.registry`."""
