"""What the data readers and the per-clip analysis hand on: plain frozen records, picklable."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

ANALYSIS_VERSION = 3
"""Bumped whenever :func:`trainproof.data.clip.analyze` would compute a record differently: cached records of
another version are never used."""


@dataclass(frozen=True)
class Entry:
    """One clip a manifest lists.

    ``line`` is the 1-based line of the manifest (of ``text`` for Kaldi, whose
    clips are spread over several files; ``manifest`` names the file the line
    is in). ``audio`` is the path as resolved the way the trainer that reads
    this layout resolves it; ``listed`` is what the manifest says.
    ``duration`` and ``offset`` are the manifest's own claims in seconds,
    None when it makes none.
    """

    line: int
    id: str
    audio: str
    listed: str
    text: str | None
    manifest: str
    duration: float | None = None
    offset: float | None = None
    speaker: str | None = None

    @classmethod
    def of_values(cls, **values: object) -> Entry:
        """The entry of every field's value, built as unpickling builds one: the generated ``__init__`` of a frozen
        dataclass costs three times as much, and a manifest of 20,000 lines builds 20,000. ``values`` must name every
        field, with a value of its type (the caller checks)."""
        entry = object.__new__(cls)
        entry.__dict__.update(values)
        return entry


@dataclass(frozen=True)
class Problem:
    """A structural problem of a manifest, at its line (None: the file as a whole).

    ``kind`` is one of: ``unparsable`` (a line that is not a record: bad JSON,
    a wrong column count), ``not-utf8`` (lines holding bytes that are not
    UTF-8: one problem, at the first), ``no-audio-field``, ``empty-text``,
    ``duplicate-id``, ``bom``, ``crlf``, ``blank-line``, ``unlisted`` (an
    audio file in the folder that no line lists; ``file`` names it).
    ``lines``: how many lines the problem stands for (a not-utf8 problem's
    every bad line).
    """

    kind: str
    message: str
    manifest: str
    line: int | None = None
    file: str | None = None
    lines: int = 1


@dataclass(frozen=True)
class Manifest:
    """A dataset as its manifest describes it: the layout, the clips, and what is wrong with the manifest itself."""

    path: str
    layout: str  # "ljspeech", "nemo", "csv", "kaldi", "folder"
    entries: tuple[Entry, ...]
    problems: tuple[Problem, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClipRef:
    """What the per-clip analysis needs to find and cut one clip; small enough to ship to a worker on another machine."""

    audio: str
    offset: float | None = None
    duration: float | None = None


@dataclass(frozen=True)
class ClipRecord:
    """The numbers one clip reduces to. Every rule about audio reads these, never the samples.

    ``error`` is set (and the numbers left at their defaults) when the file
    is missing, unreadable, empty or truncated; ``error_kind`` is
    ``missing``, ``unreadable``, ``empty`` or ``truncated``.

    Levels are in dB relative to full scale (dBFS). ``level_db`` is the
    clip's own speech level: the 95th percentile of its 10 ms frame
    energies. ``lead_silence_s`` and ``trail_silence_s`` are the stretches
    at either end whose frames are more than SILENCE_BELOW_LEVEL_DB (in
    :mod:`trainproof.data.clip`) under that level; ``first_frame_db`` and
    ``last_frame_db`` are the first and last frames' energies relative to
    it (speech cut off at an edge is loud there). Clipping: a sample is
    full-scale when its magnitude is at least FULL_SCALE of the format's
    range; ``clipped_samples`` counts them and ``longest_clipped_run`` is
    the longest run of consecutive ones in any channel. ``dc_offset`` is
    the mean sample value (full scale 1.0). ``audio_hash`` identifies the
    decoded samples (the same audio in WAV and FLAC hashes alike).
    ``active_s`` is the seconds of its frames that are not silent (its speech
    without the pauses); ``nonfinite_samples`` counts NaN
    and infinite samples of a float file (read as 0 for every other number).
    ``extra`` holds what only some clips have (see the analysis's doc).
    """

    audio: str
    error: str | None = None
    error_kind: str | None = None
    size: int = 0
    format: str = ""
    subtype: str = ""
    sample_rate: int = 0
    channels: int = 0
    frames: int = 0
    duration_s: float = 0.0
    peak: float = 0.0
    clipped_samples: int = 0
    longest_clipped_run: int = 0
    dc_offset: float = 0.0
    level_db: float = float("-inf")
    lead_silence_s: float = 0.0
    trail_silence_s: float = 0.0
    first_frame_db: float = float("-inf")
    last_frame_db: float = float("-inf")
    audio_hash: str = ""
    active_s: float = 0.0
    nonfinite_samples: int = 0
    extra: dict = field(default_factory=dict)

    @classmethod
    def of_values(cls, values: Mapping[str, object] | Iterable[tuple[str, object]]) -> ClipRecord:
        """The record of every field's value (a mapping, or (name, value) pairs), built as unpickling builds one: the
        generated ``__init__`` of a frozen dataclass sets each of the 23 fields through ``object.__setattr__``, 2.5
        times the cost, and a corpus of 20,000 clips may build them all. ``values`` must name every field, with values of its
        type (the caller checks)."""
        record = object.__new__(cls)
        record.__dict__.update(values)
        return record
