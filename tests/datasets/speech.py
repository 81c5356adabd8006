"""Speech corpora for tests: real audio with known truths, laid out the way trainers read it, broken one fault at a time.

Audio comes from two sources, both deterministic:

* :func:`espeak_clip`: real synthetic speech from espeak-ng (the Debian
  package ``.ci/run`` installs). espeak-ng writes 22050 Hz mono 16-bit; the
  clip is then cut to its speech and given EDGE_LEAD_S / EDGE_TRAIL_S of
  digital silence (espeak-ng starts within 15 ms and ends every utterance
  with ~0.3 s of zeros), peak-normalised to
  ``peak_db`` and, when another rate is asked for, resampled by FFT
  (band-limited, no dependency beyond numpy, the same bytes every run).
  Outputs are cached per (text, voice, speed) for the session.
* :func:`voiced_clip`: a synthesised voiced signal: harmonics of a gliding
  F0 contour shaped by three formant resonances (two vowel targets per
  word), one amplitude envelope per word with 80-200 ms pauses between
  words, short edge silences over a -72 dBFS noise floor, peak at
  ``peak_db``; the same seed gives the same samples.

A corpus is a :class:`Corpus`: its clips (:class:`Clip`), its layout (one of
the writers :func:`ljspeech`, :func:`nemo`, :func:`csv_manifest`,
:func:`kaldi`, :func:`folder`) and where each clip sits (:class:`Loc`: the
manifest line, the audio file, the manifest file the line is in). Each fault
injector breaks one clip (or the manifest), rewrites the manifest and returns
a :class:`Fault` naming the id, line and file a linter must point at.

Characters per second: the linter's text-rate rule counts letters and digits
(not spaces or punctuation) over the clip's duration minus its edge
silences. espeak-ng at ESPEAK_WPM reads English at about
:data:`LETTERS_PER_S`; voiced clips get a transcript of that many letters per
second of "speech" (with a little seeded spread), so the two sources agree.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple

import numpy as np
import soundfile as sf

ESPEAK = "espeak-ng"
ESPEAK_RATE = 22050
"""espeak-ng's native output rate (Hz)."""
ESPEAK_WPM = 140
"""The speed clean corpora use (espeak-ng's default is 175 wpm, ~18 chars/s; 140 reads ~14-16 chars/s, a calm TTS voice)."""
LETTERS_PER_S = 12.5
"""Letters and digits per second of speech that espeak-ng reads at ESPEAK_WPM (measured on the sentences below); voiced clips match it."""
PEAK_DB = -3.0
NOISE_FLOOR_DB = -72.0
EDGE_LEAD_S = 0.08
EDGE_TRAIL_S = 0.10
"""The edge silences (digital zeros) an espeak clip is given around its speech."""

# Harvard sentences (IEEE Recommended Practice for Speech Quality Measurements, 1969): plain, normalised English.
SENTENCES = (
    "The birch canoe slid on the smooth planks.",
    "Glue the sheet to the dark blue background.",
    "It is easy to tell the depth of a well.",
    "These days a chicken leg is a rare dish.",
    "Rice is often served in round bowls.",
    "The juice of lemons makes fine punch.",
    "The box was thrown beside the parked truck.",
    "The hogs were fed chopped corn and garbage.",
    "Four hours of steady work faced us.",
    "A large size in stockings is hard to sell.",
    "The boy was there when the sun rose.",
    "A rod is used to catch pink salmon.",
    "The source of the huge river is the clear spring.",
    "Kick the ball straight and follow through.",
    "Help the woman get back to her feet.",
    "A pot of tea helps to pass the evening.",
    "Smoky fires lack flame and heat.",
    "The soft cushion broke the man's fall.",
    "The salt breeze came across from the sea.",
    "The girl at the booth sold fifty bonds.",
    "The small pup gnawed a hole in the sock.",
    "The fish twisted and turned on the bent hook.",
    "Press the pants and sew a button on the vest.",
    "The swan dive was far short of perfect.",
    "The beauty of the view stunned the young boy.",
    "Two blue fish swam in the tank.",
    "Her purse was full of useless trash.",
    "The colt reared and threw the tall rider.",
    "It snowed, rained, and hailed the same morning.",
    "Read verse out loud for pleasure.",
    "Hoist the load to your left shoulder.",
    "Take the winding path to reach the lake.",
    "Note closely the size of the gas tank.",
    "Wipe the grease off his dirty face.",
    "Mend the coat before you go out.",
    "The wrist was badly strained and hung limp.",
    "The stray cat gave birth to kittens.",
    "The young girl gave no clear response.",
    "The meal was cooked before the bell rang.",
    "What joy there is in living.",
)
LONG_SENTENCES = (
    "The birch canoe slid on the smooth planks, and the boy was there when the sun rose.",
    "A pot of tea helps to pass the evening, while the salt breeze comes from the sea.",
    "The fish twisted and turned on the bent hook, and the young girl gave no response.",
    "Take the winding path to reach the lake, then hoist the load to your left shoulder.",
)
CYRILLIC = "Мы пошли домой поздно вечером."
UNNORMALIZED = "Dr. Smith paid $40 on 3/4."
SPEAKERS = (
    # (speaker, source, espeak voice or voiced F0 in Hz)
    ("ek_m", "espeak", "en-us+m3"),
    ("vo_low", "voiced", 110.0),
    ("ek_f", "espeak", "en-us+f3"),
    ("vo_high", "voiced", 200.0),
)
VOICED_DURATIONS = (1.5, 6.0, 3.0, 2.2, 4.0, 2.6, 3.4, 1.8, 5.0, 2.4, 3.8, 2.0)

_ESPEAK_CACHE: dict[tuple[str, str, int | None], bytes] = {}


# --- audio ---------------------------------------------------------------------


def has_espeak() -> bool:
    return shutil.which(ESPEAK) is not None


def needs_espeak() -> None:
    """Skip the calling test when espeak-ng is not installed (``.ci/run`` installs it from Debian)."""
    if not has_espeak():
        import pytest

        pytest.skip("espeak-ng is not installed (apt-get install espeak-ng; .ci/run does)")


def write_audio(path: Path | str, samples: np.ndarray, rate: int, subtype: str | None = None) -> Path:
    """Write float samples (frames, or frames x channels, full scale 1.0) as WAV or FLAC by the suffix; PCM_16 unless ``subtype``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fmt = {".wav": "WAV", ".flac": "FLAC"}[path.suffix.lower()]
    sf.write(str(path), np.clip(samples, -1.0, 1.0), rate, subtype=subtype or "PCM_16", format=fmt)
    return path


def resample(samples: np.ndarray, rate_in: int, rate_out: int) -> np.ndarray:
    """FFT resampling (band-limited; frames along axis 0): deterministic and numpy-only. Clips here start and end in silence, so the FFT's wrap-around is inaudible."""
    if rate_in == rate_out:
        return samples
    n = samples.shape[0]
    m = int(round(n * rate_out / rate_in))
    spectrum = np.fft.rfft(samples, axis=0)
    keep = min(spectrum.shape[0], m // 2 + 1)
    out = np.zeros((m // 2 + 1,) + spectrum.shape[1:], dtype=complex)
    out[:keep] = spectrum[:keep]
    return np.fft.irfft(out, n=m, axis=0) * (m / n)


def _frame_db(x: np.ndarray, rate: int, frame_s: float = 0.01) -> np.ndarray:
    """Energies (dBFS) of consecutive 10 ms frames of a mono signal."""
    size = max(1, int(rate * frame_s))
    count = len(x) // size
    frames = x[: count * size].reshape(count, size)
    return 10 * np.log10(np.mean(frames**2, axis=1) + 1e-20)


def _shape(x: np.ndarray, channels: int) -> np.ndarray:
    return x if channels == 1 else np.repeat(x[:, None], channels, axis=1)


def _espeak_wav(text: str, voice: str, speed: int | None) -> bytes:
    key = (text, voice, speed)
    if key not in _ESPEAK_CACHE:
        cmd = [ESPEAK, "--stdout", "-v", voice] + (["-s", str(speed)] if speed else []) + ["--stdin"]
        done = subprocess.run(cmd, input=text.encode("utf-8"), capture_output=True, check=True)
        _ESPEAK_CACHE[key] = done.stdout
    return _ESPEAK_CACHE[key]


def espeak_samples(text: str, voice: str = "en", speed: int | None = None, *, trim: bool = True, peak_db: float = PEAK_DB) -> np.ndarray:
    """espeak-ng's speech for ``text`` at 22050 Hz mono, with EDGE_LEAD_S / EDGE_TRAIL_S edge silences and peak-normalised (float64)."""
    x, _ = sf.read(io.BytesIO(_espeak_wav(text, voice, speed)), dtype="float64")
    if x.ndim > 1:
        x = x.mean(axis=1)
    if trim:
        db = _frame_db(x, ESPEAK_RATE)
        active = np.flatnonzero(db > np.percentile(db, 95) - 40.0)  # the linter's edge-silence measure
        if active.size:  # espeak-ng starts speaking within 15 ms and ends with ~0.3 s of zeros: cut to the speech, then pad
            size = ESPEAK_RATE // 100
            speech = x[active[0] * size : (active[-1] + 1) * size]
            x = np.concatenate([np.zeros(int(EDGE_LEAD_S * ESPEAK_RATE)), speech, np.zeros(int(EDGE_TRAIL_S * ESPEAK_RATE))])
    peak = np.abs(x).max()
    if peak > 0:
        x = x * (10 ** (peak_db / 20) / peak)
    return x


def espeak_clip(
    path: Path | str,
    text: str,
    rate: int = ESPEAK_RATE,
    voice: str = "en",
    speed: int | None = None,
    *,
    channels: int = 1,
    subtype: str | None = None,
    trim: bool = True,
    peak_db: float = PEAK_DB,
) -> Path:
    """Real speech: espeak-ng saying ``text`` with ``voice`` (``en``, ``en-us+f3``, ``ru``...) at ``speed`` wpm (None: espeak-ng's 175).

    Written to ``path`` (WAV or FLAC by the suffix, PCM_16 unless
    ``subtype``) at ``rate`` Hz: espeak-ng's 22050 Hz, FFT-resampled for any
    other rate. Edge silences set to EDGE_LEAD_S / EDGE_TRAIL_S unless
    ``trim`` is False (espeak-ng's own: ~15 ms and ~0.3 s); peak at ``peak_db`` dBFS. Skips the test when
    espeak-ng is missing.
    """
    needs_espeak()
    x = resample(espeak_samples(text, voice, speed, trim=trim, peak_db=peak_db), ESPEAK_RATE, rate)
    return write_audio(path, _shape(x, channels), rate, subtype)


VOWELS = (  # F1, F2, F3 (Hz) of a few vowels (Peterson & Barney averages)
    (730, 1090, 2440),
    (270, 2290, 3010),
    (300, 870, 2240),
    (530, 1840, 2480),
    (570, 840, 2410),
    (660, 1720, 2410),
    (490, 1350, 1690),
)
BANDWIDTHS = (90.0, 110.0, 170.0)
FORMANT_GAINS = (1.0, 0.5, 0.25)


def _formant_filter(segment: np.ndarray, rate: int, vowels: Sequence[tuple[int, int, int]]) -> list[np.ndarray]:
    """``segment`` through the formant envelope of each vowel (F1-F3 resonances over a small floor), from one FFT."""
    spectrum = np.fft.rfft(segment)
    f = np.fft.rfftfreq(len(segment), 1 / rate)
    out = []
    for vowel in vowels:
        envelope = np.full_like(f, 0.02)
        for center, bandwidth, gain in zip(vowel, BANDWIDTHS, FORMANT_GAINS):
            envelope += gain / (1 + ((f - center) / (bandwidth / 2)) ** 2)
        out.append(np.fft.irfft(spectrum * envelope, n=len(segment)))
    return out


def voiced_samples(
    seconds: float,
    rate: int,
    words: int | str = 6,
    f0: float = 120.0,
    seed: int = 0,
    *,
    peak_db: float = PEAK_DB,
    noise_db: float | None = NOISE_FLOOR_DB,
) -> np.ndarray:
    """The mono samples of :func:`voiced_clip`."""
    rng = np.random.default_rng(seed)
    n = int(round(seconds * rate))
    lengths = [len(w) for w in words.split()] if isinstance(words, str) else [5] * int(words)
    lengths = lengths or [3]
    lead, trail = (min(rng.uniform(0.06, 0.14), seconds * 0.15) for _ in range(2))
    available = seconds - lead - trail
    while len(lengths) > 1 and available - 0.08 * (len(lengths) - 1) < 0.18 * len(lengths):
        lengths = lengths[:-2] + [lengths[-2] + lengths[-1] + 1]  # too many words for the time: run the last two together
    pauses = rng.uniform(0.08, 0.20, size=len(lengths) - 1)
    if pauses.sum() > 0.4 * available:
        pauses *= 0.4 * available / pauses.sum()
    speech = available - pauses.sum()
    weights = np.asarray(lengths, dtype=float) + 1.0
    durations = speech * weights / weights.sum()

    t = np.arange(n) / rate
    # F0: declination over the utterance, an accent on most words, a slow wander; within about +-20% of f0.
    contour = f0 * (1.08 - 0.16 * t / max(seconds, 1e-9))
    wander = np.interp(t, np.linspace(0, seconds, 12), rng.normal(0, 0.03, 12))
    contour *= 1 + wander
    source = np.zeros(n)
    spans = []
    start = lead
    for i, duration in enumerate(durations):
        a, b = int(start * rate), min(n, int((start + duration) * rate))
        spans.append((a, b))
        mid = (a + b) / 2 / rate
        if rng.uniform() < 0.7:  # an accent: a bump of +8%, computed over the word's neighbourhood only
            lo, hi = max(0, int((mid - duration) * rate)), min(n, int((mid + duration) * rate))
            contour[lo:hi] *= 1 + 0.08 * np.exp(-(((t[lo:hi] - mid) / (duration / 3)) ** 2))
        start += duration + (pauses[i] if i < len(pauses) else 0)
    contour = np.clip(contour, 0.8 * f0, 1.2 * f0)
    phase = 2 * np.pi * np.cumsum(contour) / rate
    ceiling = min(0.45 * rate, 5000.0)
    rotor = np.exp(1j * phase)
    harmonic = rotor.copy()
    for k in range(1, int(ceiling / (1.2 * f0)) + 1):  # sin(k phase + k^2 / 10) / k, by complex rotation
        source += (harmonic * np.exp(1j * k * k * 0.1)).imag / k
        harmonic *= rotor
    out = np.zeros(n)
    for (a, b), length in zip(spans, lengths):
        length_s = (b - a) / rate
        u = np.arange(b - a) / max(b - a - 1, 1)
        first, second = (VOWELS[j] for j in rng.choice(len(VOWELS), 2, replace=False))
        one, two = _formant_filter(source[a:b], rate, (first, second))
        shaped = (1 - u) * one + u * two
        syllables = max(1, round(length / 3))
        env = 0.35 + 0.65 * np.abs(np.sin(np.pi * syllables * u)) ** 0.6
        ramp_in, ramp_out = min(0.025, length_s / 3), min(0.04, length_s / 3)
        tt = u * length_s
        env *= np.clip(tt / ramp_in, 0, 1) * np.clip((length_s - tt) / ramp_out, 0, 1)
        env *= rng.uniform(0.6, 1.0)
        out[a:b] = shaped * env
        if rng.uniform() < 0.5:  # a consonant-like burst of high-passed noise at the word's onset
            burst = min(b - a, int(0.03 * rate))
            noise = np.fft.rfft(rng.normal(0, 1, burst))
            noise[np.fft.rfftfreq(burst, 1 / rate) < 2000] = 0
            out[a : a + burst] += 0.08 * np.fft.irfft(noise, n=burst) * np.hanning(burst)
    peak = np.abs(out).max()
    if peak > 0:
        out *= 10 ** (peak_db / 20) / peak
    if noise_db is not None:
        out += rng.normal(0, 10 ** (noise_db / 20), n)
    return out


def voiced_clip(
    path: Path | str,
    seconds: float,
    rate: int = 22050,
    words: int | str = 6,
    f0: float = 120.0,
    seed: int = 0,
    *,
    channels: int = 1,
    subtype: str | None = None,
    peak_db: float = PEAK_DB,
    noise_db: float | None = NOISE_FLOOR_DB,
) -> Path:
    """A synthesised voiced clip of exactly ``seconds`` written to ``path`` (WAV or FLAC by the suffix, PCM_16 unless ``subtype``).

    ``words`` is a count or a transcript (one envelope per word, its length
    following the word's). F0 glides around ``f0`` (declination, accents,
    within +-20%); 3 formants per vowel, two vowels per word; 80-200 ms
    pauses; 60-140 ms edge silences; peak at ``peak_db`` dBFS; a
    ``noise_db`` noise floor (None: digital silence). Deterministic by seed.
    """
    x = voiced_samples(seconds, rate, words, f0, seed, peak_db=peak_db, noise_db=noise_db)
    return write_audio(path, _shape(x, channels), rate, subtype)


def letters(text: str | None) -> int:
    """What the text-rate rule counts: letters and digits."""
    return sum(ch.isalnum() for ch in text or "")


def text_for(speech_s: float, rng: np.random.Generator, per_s: float = LETTERS_PER_S, taken: set[str] | None = None) -> str:
    """A normalised English transcript of about ``per_s`` letters per second over ``speech_s`` seconds, not in ``taken``.

    The words run on from the start of one of SENTENCES (in a seeded order) into the next; of all starts, the one whose
    letter count comes closest to the target wins.
    """
    target = max(1, round(speech_s * per_s))
    pool = [w.lower() for w in " ".join(SENTENCES).replace(".", "").replace(",", "").split()]
    starts = np.cumsum([0] + [len(s.split()) for s in SENTENCES[:-1]])
    taken = taken if taken is not None else set()
    best: tuple[int, str] | None = None
    for start in rng.permutation(starts):
        words: list[str] = []
        count = 0
        while count < target:
            words.append(pool[(int(start) + len(words)) % len(pool)])
            count += letters(words[-1])
        shorter = count - letters(words[-1])
        if len(words) > 1 and target - shorter < count - target:
            words.pop()
            count = shorter
        text = " ".join(words)
        text = text[0].upper() + text[1:] + "."
        if text not in taken and (best is None or abs(count - target) < best[0]):
            best = (abs(count - target), text)
    if best is None:
        raise ValueError(f"no unused transcript of {target} letters")
    return best[1]


def duration_of(path: Path | str) -> float:
    info = sf.info(str(path))
    return info.frames / info.samplerate


# --- layouts -------------------------------------------------------------------


@dataclass
class Clip:
    """One clip of a corpus: its id, audio file, transcript and speaker.

    ``seconds`` is the audio's true duration (kept when the file is later
    broken, as a manifest made before the damage would say); ``claimed``
    overrides the duration a NeMo/CSV manifest states; ``raw`` replaces the
    clip's whole manifest line verbatim (a malformed one). ``source`` is
    ``espeak`` or ``voiced``; ``voice`` the espeak voice or the voiced F0.
    """

    id: str
    audio: Path
    text: str | None
    speaker: str | None = None
    seconds: float = 0.0
    claimed: float | None = None
    raw: str | None = None
    source: str = "voiced"
    voice: str | float | None = None
    split: str = "train"


class Loc(NamedTuple):
    """Where a clip sits: its 1-based manifest line, its audio file, and the manifest file that line is in."""

    line: int
    audio: Path
    manifest: Path


@dataclass(frozen=True)
class Structure:
    """Damage to a manifest's text as a whole: a BOM, CRLF line ends, blank lines inserted after the given (clip) lines."""

    bom: bool = False
    crlf: bool = False
    blank_after: tuple[int, ...] = ()


def _emit(path: Path, header: Sequence[str], rows: Sequence[tuple[str, Path]], structure: Structure) -> list[Loc]:
    """Write header lines then one line per row; return each row's Loc (line numbers counting header and blank lines)."""
    lines: list[str] = list(header)
    locs: list[Loc] = []
    for i, (line, audio) in enumerate(rows, start=1):
        lines.append(line)
        locs.append(Loc(len(lines), audio, path))
        if i in structure.blank_after:
            lines.append("")
    newline = "\r\n" if structure.crlf else "\n"
    text = newline.join(lines) + newline
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(("\ufeff" if structure.bom else "").encode("utf-8") + text.encode("utf-8"))
    return locs


def _index(locs: Sequence[Loc], clips: Sequence[Clip]) -> dict[str, Loc]:
    index: dict[str, Loc] = {}
    for clip, loc in zip(clips, locs):
        index.setdefault(clip.id, loc)
    return index


def _relative(audio: Path, base: Path) -> str:
    try:
        return audio.relative_to(base).as_posix()
    except ValueError:
        return str(audio)


def _ljspeech(folder: Path, clips: Sequence[Clip], columns: int = 3, header: bool = False, structure: Structure = Structure()) -> list[Loc]:
    rows = []
    for clip in clips:
        cells = [clip.id, clip.text or ""] + ([clip.text or ""] if columns == 3 else [])
        rows.append((clip.raw if clip.raw is not None else "|".join(cells), clip.audio))
    head = ["id|text|normalized_text" if columns == 3 else "id|text"] if header else []
    return _emit(folder / "metadata.csv", head, rows, structure)


def ljspeech(
    folder: Path | str, clips: Sequence[Clip], *, columns: int = 3, header: bool = False, structure: Structure = Structure()
) -> tuple[Path, dict[str, Loc]]:
    """``folder/metadata.csv``: ``id|text|normalized`` (``columns=2``: ``id|text``), optionally a header row. Audio is expected in ``folder/wavs/<id>.<ext>``."""
    folder = Path(folder)
    return folder / "metadata.csv", _index(_ljspeech(folder, clips, columns, header, structure), clips)


def _nemo(path: Path, clips: Sequence[Clip], absolute: bool = False, structure: Structure = Structure()) -> list[Loc]:
    rows = []
    for clip in clips:
        record: dict = {"audio_filepath": str(clip.audio) if absolute else _relative(clip.audio, path.parent), "text": clip.text or ""}
        record["duration"] = round(clip.claimed if clip.claimed is not None else clip.seconds, 3)
        if clip.speaker is not None:
            record["speaker"] = clip.speaker
        rows.append((clip.raw if clip.raw is not None else json.dumps(record, ensure_ascii=False), clip.audio))
    return _emit(path, [], rows, structure)


def nemo(
    manifest_path: Path | str, clips: Sequence[Clip], *, absolute: bool = False, structure: Structure = Structure()
) -> tuple[Path, dict[str, Loc]]:
    """A NeMo JSONL manifest: ``audio_filepath`` (relative to the manifest's folder unless ``absolute``), ``text``, ``duration``, ``speaker`` when known."""
    path = Path(manifest_path)
    return path, _index(_nemo(path, clips, absolute, structure), clips)


def _csv(path: Path, clips: Sequence[Clip], duration: bool = False, structure: Structure = Structure()) -> list[Loc]:
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    speakers = any(c.speaker is not None for c in clips)
    columns = ["path", "text"] + (["speaker"] if speakers else []) + (["duration"] if duration else [])

    def render(cells: Sequence[str]) -> str:
        out = io.StringIO()
        csv.writer(out, delimiter=delimiter, lineterminator="").writerow(cells)
        return out.getvalue()

    rows = []
    for clip in clips:
        cells = [_relative(clip.audio, path.parent), clip.text or ""] + ([clip.speaker or ""] if speakers else [])
        if duration:
            cells.append(f"{clip.claimed if clip.claimed is not None else clip.seconds:.3f}")
        rows.append((clip.raw if clip.raw is not None else render(cells), clip.audio))
    return _emit(path, [render(columns)], rows, structure)


def csv_manifest(
    path: Path | str, clips: Sequence[Clip], *, duration: bool = False, structure: Structure = Structure()
) -> tuple[Path, dict[str, Loc]]:
    """A CSV (TSV when the suffix is .tsv) manifest with a header ``path,text[,speaker][,duration]``; paths relative to its folder. Line 1 is the header."""
    path = Path(path)
    return path, _index(_csv(path, clips, duration, structure), clips)


def _kaldi(datadir: Path, clips: Sequence[Clip], segments: bool = False, structure: Structure = Structure()) -> list[Loc]:
    datadir.mkdir(parents=True, exist_ok=True)
    recording = {c.id: (f"{c.id}-rec" if segments else c.id) for c in clips}
    scp = {recording[c.id]: str(c.audio) for c in clips}
    (datadir / "wav.scp").write_text("".join(f"{r} {p}\n" for r, p in scp.items()), encoding="utf-8")
    (datadir / "utt2spk").write_text("".join(f"{c.id} {c.speaker or c.id}\n" for c in clips), encoding="utf-8")
    if segments:
        lines = [f"{c.id} {recording[c.id]} 0.00 {c.claimed if c.claimed is not None else c.seconds:.2f}\n" for c in clips]
        (datadir / "segments").write_text("".join(lines), encoding="utf-8")
    rows = [(c.raw if c.raw is not None else f"{c.id} {c.text or ''}".rstrip(), c.audio) for c in clips]
    return _emit(datadir / "text", [], rows, structure)


def kaldi(
    datadir: Path | str, clips: Sequence[Clip], *, segments: bool = False, structure: Structure = Structure()
) -> tuple[Path, dict[str, Loc]]:
    """A Kaldi data dir: ``wav.scp`` (absolute plain paths), ``text``, ``utt2spk`` (the speaker, else the id), and with ``segments`` one whole-file segment per clip.

    Returns the data dir (what ``trainproof data`` is given); each Loc's line is in ``text``.
    """
    datadir = Path(datadir)
    return datadir, _index(_kaldi(datadir, clips, segments, structure), clips)


def _folder(root: Path, clips: Sequence[Clip], structure: Structure = Structure()) -> list[Loc]:
    locs = []
    for clip in clips:
        txt = clip.audio.with_suffix(".txt")
        if clip.text is not None:
            locs.append(_emit(txt, [], [(clip.text if clip.raw is None else clip.raw, clip.audio)], structure)[0])
        else:
            txt.unlink(missing_ok=True)
            locs.append(Loc(1, clip.audio, txt))
    return locs


def folder(root: Path | str, clips: Sequence[Clip], *, structure: Structure = Structure()) -> tuple[Path, dict[str, Loc]]:
    """A plain folder: each clip's audio with a sibling ``.txt`` transcript (a clip whose text is None gets none). Each Loc is line 1 of the .txt."""
    root = Path(root)
    return root, _index(_folder(root, clips, structure), clips)


def _parquet(root: Path, clips: Sequence[Clip]) -> list[Loc]:
    """The Hub's layout, written by ``datasets``: one shard a split, ``data/<split>-00000-of-00001.parquet``, each row's
    audio an ``Audio`` feature holding the file's bytes and its name (as ``push_to_hub`` embeds it; a missing file
    stays a path), with ``text``, ``speaker`` and ``id`` columns."""
    from datasets import Audio, Dataset, Features, Value

    features = Features({"audio": Audio(), "text": Value("string"), "speaker": Value("string"), "id": Value("string")})
    locs: dict[int, Loc] = {}
    for split in dict.fromkeys(clip.split for clip in clips):
        shard = root / "data" / f"{split}-00000-of-00001.parquet"
        shard.parent.mkdir(parents=True, exist_ok=True)
        rows: dict[str, list] = {"audio": [], "text": [], "speaker": [], "id": []}
        for position, clip in enumerate(clips):
            if clip.split != split:
                continue
            held = clip.audio.read_bytes() if clip.audio.is_file() else None
            rows["audio"].append({"bytes": held, "path": clip.audio.name if held is not None else str(clip.audio)})
            rows["text"].append(clip.text)
            rows["speaker"].append(clip.speaker)
            rows["id"].append(clip.id)
            locs[position] = Loc(len(rows["id"]), clip.audio, shard)
        plain = Features({"audio": {"bytes": Value("binary"), "path": Value("string")}, **{k: v for k, v in features.items() if k != "audio"}})
        Dataset.from_dict(rows, features=plain).cast(features).to_parquet(str(shard), batch_size=100)  # cast: the storage kept, nothing encoded
    return [locs[i] for i in range(len(clips))]


LAYOUTS = ("ljspeech", "nemo", "csv", "kaldi", "folder", "parquet")


@dataclass
class Corpus:
    """A corpus on disk: its layout, its clips in manifest order, and where each sits.

    ``path`` is what ``trainproof data`` is given (metadata.csv's folder, the
    JSONL or CSV file, the Kaldi data dir, the folder); ``manifest`` the
    file that holds the clip lines; ``locs`` one Loc per clip, aligned with
    ``clips``. Change ``clips`` or ``structure`` and call :meth:`write`.
    """

    layout: str
    root: Path
    audio_dir: Path
    rate: int
    suffix: str
    clips: list[Clip]
    structure: Structure = Structure()
    duration_column: bool = False
    locs: list[Loc] = field(default_factory=list)

    @property
    def path(self) -> Path:
        return {
            "ljspeech": self.root,
            "nemo": self.root / "manifest.jsonl",
            "csv": self.root / "manifest.csv",
            "kaldi": self.root / "data" / "train",
            "folder": self.audio_dir,
            "parquet": self.root,
        }[self.layout]

    @property
    def manifest(self) -> Path:
        shard = self.root / "data" / "train-00000-of-00001.parquet"
        return {"ljspeech": self.root / "metadata.csv", "kaldi": self.path / "text", "parquet": shard}.get(self.layout, self.path)

    def write(self) -> Corpus:
        if self.layout == "ljspeech":
            self.locs = _ljspeech(self.root, self.clips, structure=self.structure)
        elif self.layout == "nemo":
            self.locs = _nemo(self.path, self.clips, structure=self.structure)
        elif self.layout == "csv":
            self.locs = _csv(self.path, self.clips, self.duration_column, self.structure)
        elif self.layout == "kaldi":
            self.locs = _kaldi(self.path, self.clips, structure=self.structure)
        elif self.layout == "parquet":
            if self.structure != Structure():
                raise NotApplicableFault("a Parquet shard has no lines to damage")
            for stale in self.root.glob("data/*.parquet"):
                stale.unlink()
            self.locs = _parquet(self.root, self.clips)
        else:
            if self.structure != Structure():
                raise NotApplicableFault("a folder of .txt files has no manifest to damage")
            self.locs = _folder(self.root, self.clips)
        return self

    @property
    def index(self) -> dict[str, Loc]:
        return _index(self.locs, self.clips)

    def clip(self, id: str) -> Clip:
        return next(c for c in self.clips if c.id == id)

    def loc(self, id: str) -> Loc:
        return self.index[id]

    def size(self) -> int:
        return sum(p.stat().st_size for p in self.root.rglob("*") if p.is_file())

    def copy(self, dest: Path | str) -> Corpus:
        """The corpus copied under ``dest`` (build a clean one once, break copies): files copied, paths rebased, manifest rewritten."""
        root = Path(dest) / self.root.name
        shutil.copytree(self.root, root)

        def rebase(path: Path) -> Path:
            return root / path.relative_to(self.root)

        clips = [replace(c, audio=rebase(c.audio)) for c in self.clips]
        return Corpus(
            self.layout, root, rebase(self.audio_dir), self.rate, self.suffix, clips, self.structure, self.duration_column
        ).write()


def _typical_rate(text: str, voice: str) -> bool:
    """espeak-ng reads ``text`` within 10% of LETTERS_PER_S (some sentences run fast or slow: a clean corpus leaves them out)."""
    speech_s = len(espeak_samples(text, voice, ESPEAK_WPM)) / ESPEAK_RATE - EDGE_LEAD_S - EDGE_TRAIL_S
    return abs(letters(text) / speech_s / LETTERS_PER_S - 1) <= 0.10


def clean_corpus(
    tmp: Path | str,
    n: int = 12,
    layout: str = "nemo",
    seed: int = 0,
    *,
    rate: int = 22050,
    suffix: str = ".wav",
    espeak: bool | None = None,
    duration_column: bool = False,
) -> Corpus:
    """A clean corpus of ``n`` mono PCM_16 clips at ``rate`` Hz in ``layout`` under ``tmp/<layout>``.

    Clips alternate over four speakers: two espeak-ng voices (real speech,
    at ESPEAK_WPM) and two voiced-signal voices (F0 110 Hz and 200 Hz)
    whose durations cycle over VOICED_DURATIONS (the first two: 1.5 s and
    6 s) and whose transcripts match them at ~LETTERS_PER_S. Without
    espeak-ng (or with ``espeak=False``) every clip is voiced. Every
    transcript is distinct, normalised English; durations are 1.5-6 s;
    peaks at -3 dBFS; edge silences under 150 ms. Ids are
    ``<speaker>-<nnnn>``, in manifest order.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}")
    rng = np.random.default_rng(seed)
    espeak = has_espeak() if espeak is None else espeak
    root = Path(tmp) / layout
    audio_dir = {"ljspeech": root / "wavs", "kaldi": root / "audio", "folder": root}.get(layout, root / "audio")  # parquet: embedded from audio/
    speakers = [s for s in SPEAKERS if espeak or s[1] == "voiced"]
    taken: set[str] = set()
    clips: list[Clip] = []
    sentences = list(SENTENCES)
    order = rng.permutation(len(sentences))
    voiced_count = 0
    for i in range(n):
        speaker, source, voice = speakers[i % len(speakers)]
        id = f"{speaker}-{i + 1:04d}"
        audio = audio_dir / f"{id}{suffix}"
        if source == "espeak":
            text = LONG_SENTENCES[(i // 5) % len(LONG_SENTENCES)] if i % 5 == 4 else ""
            j = i
            while not text or text in taken or not _typical_rate(text, str(voice)):
                text, j = sentences[order[j % len(order)]], j + 1
                if j > i + 2 * len(order):
                    raise ValueError("no unused sentence at a typical rate")
            espeak_clip(audio, text, rate, str(voice), ESPEAK_WPM)
        else:
            seconds = VOICED_DURATIONS[voiced_count % len(VOICED_DURATIONS)]
            voiced_count += 1
            per_s = LETTERS_PER_S * rng.uniform(0.93, 1.07)
            text = text_for(seconds - 0.2, rng, per_s, taken)
            voiced_clip(audio, seconds, rate, text, float(voice), seed=seed * 1000 + i)
        taken.add(text)
        split = "test" if layout == "parquet" and i % 4 == 3 else "train"  # the Hub's layout: a train and a test split
        clips.append(Clip(id, audio, text, speaker, duration_of(audio), source=source, voice=voice, split=split))
    return Corpus(layout, root, audio_dir, rate, suffix, clips, duration_column=duration_column).write()


# --- faults --------------------------------------------------------------------


class NotApplicableFault(ValueError):
    """The fault does not exist in this layout (a malformed JSON line in a metadata.csv)."""


@dataclass(frozen=True)
class Fault:
    """What an injector broke: the fault's name, the clip id, the manifest line and the audio file a linter must point at.

    ``line`` is None for damage with no line (an unlisted file); ``also``
    names other places the same fault shows (the other half of a swap, the
    original of a copy); ``note`` says which other rules may legitimately
    fire too.
    """

    name: str
    id: str | None
    line: int | None
    audio: Path | None
    manifest: Path
    also: tuple[Loc, ...] = ()
    note: str = ""


def _pick(corpus: Corpus, id: str | None, prefer: str | None = "espeak", exclude: Sequence[str] = ()) -> Clip:
    """The clip ``id``, else a mid-corpus clip of the preferred source, never the corpus's shortest or longest one."""
    if id is not None:
        return corpus.clip(id)
    ordered = sorted(corpus.clips, key=lambda c: c.seconds)
    extremes = {ordered[0].id, ordered[-1].id} if len(ordered) > 2 else set()
    candidates = [c for c in corpus.clips if c.id not in extremes and c.id not in exclude and c.raw is None]
    preferred = [c for c in candidates if c.source == prefer] or candidates
    return preferred[len(preferred) // 2]


def _fault(corpus: Corpus, name: str, clip: Clip, *, position: int | None = None, note: str = "", also: tuple[Loc, ...] = ()) -> Fault:
    corpus.write()
    loc = corpus.locs[position] if position is not None else corpus.loc(clip.id)
    return Fault(name, clip.id, loc.line, loc.audio, loc.manifest, also, note)


def _read(clip: Clip) -> tuple[np.ndarray, int, str]:
    x, rate = sf.read(str(clip.audio), dtype="float64", always_2d=False)
    return x, rate, sf.info(str(clip.audio)).subtype


def _rewrite(clip: Clip, transform: Callable[[np.ndarray, int], np.ndarray], subtype: str | None = None) -> None:
    x, rate, original = _read(clip)
    y = transform(x, rate)
    write_audio(clip.audio, y, rate, subtype or original)
    clip.seconds = duration_of(clip.audio)


def clipped(corpus: Corpus, id: str | None = None, gain: float = 4.0) -> Fault:
    """Hard clipping: the clip times ``gain``, clipped at full scale (long runs of +-32767)."""
    clip = _pick(corpus, id)
    _rewrite(clip, lambda x, r: np.clip(x * gain, -1.0, 1.0))
    return _fault(corpus, "clipped", clip)


def padded_silence(corpus: Corpus, id: str | None = None, seconds: float = 1.5, where: str = "both") -> Fault:
    """``seconds`` of silence (the -72 dBFS noise floor) added at the start, the end or both ends; the manifest's duration follows."""
    clip = _pick(corpus, id)

    def pad(x: np.ndarray, rate: int) -> np.ndarray:
        rng = np.random.default_rng(len(x))
        quiet = rng.normal(0, 10 ** (NOISE_FLOOR_DB / 20), int(seconds * rate))
        return np.concatenate(([quiet] if where in ("start", "both") else []) + [x] + ([quiet] if where in ("end", "both") else []))

    _rewrite(clip, pad)
    return _fault(corpus, "padded_silence", clip, note=f"{seconds} s at the {where}")


def cut_end(corpus: Corpus, id: str | None = None) -> Fault:
    """Speech cut off at the end: the clip truncated mid-word, at a 30 ms stretch within 3 dB of its loudest frame in its last 40%."""
    clip = _pick(corpus, id)

    def cut(x: np.ndarray, rate: int) -> np.ndarray:
        db = _frame_db(x, rate)
        size = rate // 100
        level = np.percentile(db, 95)
        start = int(len(db) * 0.6)
        loud = [i for i in range(start + 2, len(db)) if min(db[i - 2 : i + 1]) > level - 3.0]
        end = (loud[-1] if loud else int(np.argmax(db[start:])) + start) + 1
        return x[: end * size]

    _rewrite(clip, cut)
    return _fault(corpus, "cut_end", clip)


def dc_offset(corpus: Corpus, id: str | None = None, offset: float = 0.2) -> Fault:
    """A DC offset: ``offset`` (full scale 1.0) added to every sample."""
    clip = _pick(corpus, id, prefer="voiced")
    _rewrite(clip, lambda x, r: x + offset)
    return _fault(corpus, "dc_offset", clip)


def silent(corpus: Corpus, id: str | None = None, noise_db: float | None = -70.0) -> Fault:
    """The audio replaced by silence of the same length (noise at ``noise_db`` dBFS; None: all zeros); the transcript kept."""
    clip = _pick(corpus, id, prefer="voiced")

    def hush(x: np.ndarray, rate: int) -> np.ndarray:
        if noise_db is None:
            return np.zeros_like(x)
        return np.random.default_rng(7).normal(0, 10 ** (noise_db / 20), x.shape)

    _rewrite(clip, hush)
    return _fault(corpus, "silent", clip)


def other_rate(corpus: Corpus, id: str | None = None, rate: int = 44100) -> Fault:
    """One clip resampled to ``rate`` Hz (same duration)."""
    clip = _pick(corpus, id)
    x, old, subtype = _read(clip)
    write_audio(clip.audio, resample(x, old, rate), rate, subtype)
    clip.seconds = duration_of(clip.audio)
    return _fault(corpus, "other_rate", clip)


def stereo(corpus: Corpus, id: str | None = None) -> Fault:
    """One clip written as two identical channels."""
    clip = _pick(corpus, id)
    _rewrite(clip, lambda x, r: _shape(x, 2))
    return _fault(corpus, "stereo", clip)


def other_subtype(corpus: Corpus, id: str | None = None, subtype: str = "PCM_24") -> Fault:
    """One clip written with another sample format (``PCM_24``; ``FLOAT`` for WAV)."""
    clip = _pick(corpus, id)
    _rewrite(clip, lambda x, r: x, subtype=subtype)
    return _fault(corpus, "other_subtype", clip, note=subtype)


def nonfinite(corpus: Corpus, id: str | None = None, count: int = 5) -> Fault:
    """One clip rewritten as 32-bit float WAV with ``count`` NaN samples in the middle."""
    clip = _pick(corpus, id)
    if clip.audio.suffix.lower() != ".wav":
        raise NotApplicableFault("only a WAV clip can hold float samples here")

    def poison(x: np.ndarray, rate: int) -> np.ndarray:
        y = np.array(x, dtype=np.float64)
        middle = len(y) // 2
        y[middle : middle + count] = np.nan
        return y

    _rewrite(clip, poison, subtype="FLOAT")
    return _fault(corpus, "nonfinite", clip, note=f"{count} NaN")


def truncated(corpus: Corpus, id: str | None = None, keep: float = 0.5) -> Fault:
    """The file cut to ``keep`` of its bytes: its header still claims the whole length."""
    clip = _pick(corpus, id)
    data = clip.audio.read_bytes()
    clip.audio.write_bytes(data[: max(64, int(len(data) * keep))])
    return _fault(corpus, "truncated", clip)


def empty_file(corpus: Corpus, id: str | None = None) -> Fault:
    """A 0-byte audio file."""
    clip = _pick(corpus, id)
    clip.audio.write_bytes(b"")
    return _fault(corpus, "empty_file", clip)


def not_audio(corpus: Corpus, id: str | None = None) -> Fault:
    """An HTML error page saved under the clip's audio name."""
    clip = _pick(corpus, id)
    clip.audio.write_bytes(b"<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head><body>Not Found</body></html>\n")
    return _fault(corpus, "not_audio", clip)


def missing_file(corpus: Corpus, id: str | None = None) -> Fault:
    """The clip's audio deleted; its line stays."""
    clip = _pick(corpus, id)
    clip.audio.unlink()
    return _fault(corpus, "missing_file", clip)


def unlisted_file(corpus: Corpus, name: str = "extra-0001") -> Fault:
    """A readable audio file in the corpus's audio folder that no line lists (no .txt beside it in a folder layout).

    Only an LJSpeech ``wavs/`` or a folder dataset is searched for unlisted files by the linter; in other layouts the file is inert.
    """
    path = corpus.audio_dir / f"{name}{corpus.suffix}"
    voiced_clip(path, 2.0, corpus.rate, "an extra clip nobody listed", 150.0, seed=99)
    corpus.write()
    return Fault("unlisted_file", None, None, path, corpus.manifest)


def _append(corpus: Corpus, after: Clip, new: Clip) -> int:
    position = corpus.clips.index(after) + 1
    corpus.clips.insert(position, new)
    return position


def duplicate_audio(corpus: Corpus, id: str | None = None) -> Fault:
    """A copy of a clip's file under a new name, listed on the next line with the same transcript (one utterance ingested twice)."""
    original = _pick(corpus, id)
    copy = original.audio.with_name(f"{original.id}_copy{original.audio.suffix}")  # sorts after the original in a folder listing
    shutil.copyfile(original.audio, copy)
    new = replace(original, id=f"{original.id}_copy", audio=copy)
    position = _append(corpus, original, new)
    corpus.write()
    return _fault(
        corpus,
        "duplicate_audio",
        new,
        position=position,
        also=(corpus.loc(original.id),),
        note="the copy is the finding; the original is in also",
    )


def conflicting_text(corpus: Corpus, id: str | None = None) -> Fault:
    """The same audio file listed again on the next line with a different transcript of a plausible length.

    In layouts whose id is the file (LJSpeech, NeMo, CSV, folder) the second line also repeats an id.
    """
    original = _pick(corpus, id)
    rng = np.random.default_rng(5)
    text = text_for(max(0.3, original.seconds - 0.2), rng, LETTERS_PER_S, {c.text for c in corpus.clips if c.text})
    new = replace(original, id=original.id if corpus.layout != "kaldi" else f"{original.id}-again", text=text)
    if corpus.layout == "folder":
        raise NotApplicableFault("a folder pairs each audio file with one .txt")
    position = _append(corpus, original, new)
    corpus.write()
    return _fault(
        corpus,
        "conflicting_text",
        new,
        position=position,
        also=(corpus.loc(original.id),),
        note="TP-DATA-DUPLICATE-ID also fires where the id is the file",
    )


def swapped_transcripts(corpus: Corpus) -> Fault:
    """The transcripts of the shortest and the longest clip swapped (1.5 s and 6 s in a clean corpus). Judged only with DATA_CPS_MIN_CLIPS (20) clips."""
    ordered = sorted(corpus.clips, key=lambda c: c.seconds)
    short, long = ordered[0], ordered[-1]
    short.text, long.text = long.text, short.text
    corpus.write()
    return _fault(
        corpus,
        "swapped_transcripts",
        short,
        also=(corpus.loc(long.id),),
        note="both halves read far from the median: the short one faster, the long one slower",
    )


def _closest_letters(corpus: Corpus, count: int, exclude: Sequence[str] = ()) -> Clip:
    candidates = [c for c in corpus.clips if c.id not in exclude and c.raw is None]
    return min(candidates, key=lambda c: (abs(letters(c.text) - count), c.id))


def empty_transcript(corpus: Corpus, id: str | None = None) -> Fault:
    """An empty transcript (``id||`` in metadata.csv, ``"text": ""`` in NeMo; an empty .txt in a folder)."""
    clip = _pick(corpus, id)
    clip.text = ""
    return _fault(corpus, "empty_transcript", clip)


def unnormalized(corpus: Corpus, id: str | None = None, text: str = UNNORMALIZED) -> Fault:
    """A transcript with digits, symbols and abbreviations, put on the clip with the closest letter count (the audio kept)."""
    clip = corpus.clip(id) if id else _closest_letters(corpus, letters(text))
    clip.text = text
    return _fault(corpus, "unnormalized", clip)


def invisible_char(corpus: Corpus, id: str | None = None, char: str = "\u200b") -> Fault:
    """A control or invisible character (U+200B by default; U+0007 for a control) inserted between two words of a transcript."""
    clip = _pick(corpus, id)
    words = (clip.text or "").split(" ")
    cut = max(1, len(words) // 2)
    clip.text = " ".join(words[:cut]) + " " + char + " ".join(words[cut:])
    return _fault(corpus, "invisible_char", clip, note=f"U+{ord(char):04X}")


def other_script(corpus: Corpus, id: str | None = None, text: str = CYRILLIC, speak: bool | None = None) -> Fault:
    """A Russian sentence in Cyrillic in an English corpus: spoken by espeak-ng's ``ru`` voice when espeak-ng is installed, else a voiced clip of its length."""
    clip = corpus.clip(id) if id else _closest_letters(corpus, letters(text))
    speak = has_espeak() if speak is None else speak
    if speak:
        espeak_clip(clip.audio, text, corpus.rate, "ru", ESPEAK_WPM)
    else:
        voiced_clip(clip.audio, max(1.5, letters(text) / LETTERS_PER_S + 0.2), corpus.rate, text, 140.0, seed=3)
    clip.text, clip.seconds, clip.voice = text, duration_of(clip.audio), "ru"
    return _fault(
        corpus, "other_script", clip, note="a whole sentence: 25 Cyrillic letters, over 1% of a corpus of fewer than ~70 English sentences"
    )


HOMOGLYPHS = {"a": "а", "e": "е", "o": "о", "c": "с", "p": "р"}
"""Latin letters and the Cyrillic letters that look the same (a, e, o, c, p)."""


def homoglyph(corpus: Corpus, id: str | None = None) -> Fault:
    """Two Latin letters of one word replaced by identical-looking Cyrillic ones (text scraped or typed on a Russian layout)."""
    clip = _pick(corpus, id)
    words = (clip.text or "").split(" ")
    at = next(i for i, w in enumerate(words) if sum(ch in HOMOGLYPHS for ch in w) >= 2)
    swapped, count = [], 0
    for ch in words[at]:
        if ch in HOMOGLYPHS and count < 2:
            ch, count = HOMOGLYPHS[ch], count + 1
        swapped.append(ch)
    words[at] = "".join(swapped)
    clip.text = " ".join(words)
    return _fault(corpus, "homoglyph", clip, note=f"in {words[at]!r}")


def duplicate_transcript(corpus: Corpus, id: str | None = None) -> Fault:
    """A clip given the transcript of its speaker's clip closest to it in letter count (different audio, the same text):
    a copy-paste slip in one speaker's script (the same prompt read by two speakers is no fault).

    The fault names the later of the two lines, the one that repeats an earlier line's text, and ``also`` the earlier:
    the source may come after the clip (in an all-voiced corpus, built without espeak-ng, it does)."""
    clip = _pick(corpus, id)
    others = [c.id for c in corpus.clips if c.speaker != clip.speaker]
    source = _closest_letters(corpus, letters(clip.text), exclude=[clip.id, *others])
    clip.text = source.text
    corpus.write()
    earlier, later = sorted((clip, source), key=lambda c: (corpus.loc(c.id).line, str(corpus.loc(c.id).manifest)))  # a folder's .txt: line 1 each
    return _fault(
        corpus,
        "duplicate_transcript",
        later,
        also=(corpus.loc(earlier.id),),
        note="the later line repeats the earlier one's text",
    )


def duration_claim(corpus: Corpus, id: str | None = None, claimed: float = 9.0) -> Fault:
    """The manifest claims ``claimed`` seconds for the clip closest to 3 s (NeMo; CSV with a duration column)."""
    if corpus.layout not in ("nemo", "csv") or (corpus.layout == "csv" and not corpus.duration_column):
        raise NotApplicableFault(f"a {corpus.layout} manifest states no duration")
    clip = corpus.clip(id) if id else min(corpus.clips, key=lambda c: (abs(c.seconds - 3.0), c.id))
    clip.claimed = claimed
    return _fault(corpus, "duration_claim", clip)


def _replace_voiced(corpus: Corpus, clip: Clip, seconds: float, text: str) -> None:
    voiced_clip(clip.audio, seconds, corpus.rate, text, 130.0, seed=11)
    clip.text, clip.seconds, clip.source = text, duration_of(clip.audio), "voiced"


def too_short(corpus: Corpus, id: str | None = None, seconds: float = 0.3) -> Fault:
    """The clip replaced by a ``seconds`` voiced clip saying a word of matching length ("Yes.")."""
    clip = _pick(corpus, id, prefer="voiced")
    _replace_voiced(corpus, clip, seconds, "Yes.")
    return _fault(corpus, "too_short", clip)


def too_long(corpus: Corpus, id: str | None = None, seconds: float = 25.0) -> Fault:
    """The clip replaced by a ``seconds`` voiced clip with a transcript of matching length."""
    clip = _pick(corpus, id, prefer="voiced")
    text = text_for(seconds - 0.2, np.random.default_rng(13), LETTERS_PER_S, {c.text for c in corpus.clips if c.text})
    _replace_voiced(corpus, clip, seconds, text)
    return _fault(corpus, "too_long", clip)


def malformed_json(corpus: Corpus, id: str | None = None) -> Fault:
    """A NeMo line cut short before its closing brace (invalid JSON)."""
    if corpus.layout != "nemo":
        raise NotApplicableFault("only a JSONL manifest has JSON lines")
    clip = _pick(corpus, id)
    corpus.write()
    line = corpus.manifest.read_text(encoding="utf-8").splitlines()[corpus.loc(clip.id).line - 1]
    clip.raw = line[:-1]
    return _fault(corpus, "malformed_json", clip)


def wrong_columns(corpus: Corpus, id: str | None = None) -> Fault:
    """A transcript with the delimiter in it, unquoted: ``id|Left | right...|Left | right...`` has five columns (CSV: an extra comma).

    The line no longer lists its clip, so the clip's file may also count as unlisted.
    """
    if corpus.layout not in ("ljspeech", "csv"):
        raise NotApplicableFault("only delimited manifests have columns")
    clip = _pick(corpus, id)
    note = "the clip's file is then unlisted" if corpus.layout == "ljspeech" else ""
    if corpus.layout == "ljspeech":
        text = "Left | right, said the sergeant."
        clip.raw = f"{clip.id}|{text}|{text}"
    else:
        corpus.write()
        line = corpus.manifest.read_text(encoding="utf-8").splitlines()[corpus.loc(clip.id).line - 1]
        clip.raw = line + ",extra"
    return _fault(corpus, "wrong_columns", clip, note=note)


def bom(corpus: Corpus) -> Fault:
    """A UTF-8 byte order mark at the start of the manifest (line 1)."""
    corpus.structure = replace(corpus.structure, bom=True)
    corpus.write()
    return Fault("bom", None, 1, None, corpus.manifest)


def crlf(corpus: Corpus) -> Fault:
    """CRLF line ends throughout the manifest (reported at line 1)."""
    corpus.structure = replace(corpus.structure, crlf=True)
    corpus.write()
    return Fault("crlf", None, 1, None, corpus.manifest)


def blank_line(corpus: Corpus, after: int | None = None) -> Fault:
    """A blank line after the ``after``-th clip line (default: the middle one); the Fault's line is the blank line's."""
    after = after if after is not None else max(1, len(corpus.clips) // 2)
    corpus.structure = replace(corpus.structure, blank_after=corpus.structure.blank_after + (after,))
    corpus.write()
    return Fault("blank_line", None, corpus.locs[after - 1].line + 1, None, corpus.manifest)


def duplicate_id(corpus: Corpus, id: str | None = None) -> Fault:
    """A clip's line repeated verbatim at the end (two manifests concatenated): the same id, audio and text on two lines (Kaldi: in text and utt2spk)."""
    if corpus.layout == "folder":
        raise NotApplicableFault("a folder lists each file once")
    original = _pick(corpus, id)
    corpus.clips.append(replace(original))
    position = len(corpus.clips) - 1
    corpus.write()
    return _fault(corpus, "duplicate_id", original, position=position, also=(corpus.loc(original.id),))


def split_leak_audio(corpus: Corpus, id: str | None = None) -> Fault:
    """A train clip's audio listed again, under a new id, in the test split (one recording in both)."""
    if corpus.layout != "parquet":
        raise NotApplicableFault("only the Hub's Parquet layout has splits")
    original = _pick(corpus, id, exclude=[c.id for c in corpus.clips if c.split != "train"])
    new = replace(original, id=f"{original.id}_leaked", split="test")
    corpus.clips.append(new)
    corpus.write()
    return _fault(corpus, "split_leak_audio", new, position=len(corpus.clips) - 1, also=(corpus.loc(original.id),))


def split_leak_text(corpus: Corpus, id: str | None = None) -> Fault:
    """A test clip given the transcript of a train clip of another speaker (a sentence in both splits, other audio)."""
    if corpus.layout != "parquet":
        raise NotApplicableFault("only the Hub's Parquet layout has splits")
    clip = _pick(corpus, id, exclude=[c.id for c in corpus.clips if c.split != "test"])
    from trainproof.checks.data import _is_sentence
    from trainproof.checks.thresholds import Thresholds

    # a train clip of another speaker whose transcript is long enough to be a sentence (a short one is a vocabulary)
    others = [c.id for c in corpus.clips if c.split != "train" or c.speaker == clip.speaker or not _is_sentence(c.text or "", Thresholds())]
    source = _closest_letters(corpus, letters(clip.text), exclude=others)
    clip.text = source.text
    corpus.write()
    return _fault(corpus, "split_leak_text", clip, also=(corpus.loc(source.id),))


FAULTS: dict[str, Callable[..., Fault]] = {
    "clipped": clipped,
    "padded_silence": padded_silence,
    "cut_end": cut_end,
    "dc_offset": dc_offset,
    "silent": silent,
    "other_rate": other_rate,
    "stereo": stereo,
    "other_subtype": other_subtype,
    "nonfinite": nonfinite,
    "truncated": truncated,
    "empty_file": empty_file,
    "not_audio": not_audio,
    "missing_file": missing_file,
    "unlisted_file": unlisted_file,
    "duplicate_audio": duplicate_audio,
    "conflicting_text": conflicting_text,
    "swapped_transcripts": swapped_transcripts,
    "empty_transcript": empty_transcript,
    "unnormalized": unnormalized,
    "invisible_char": invisible_char,
    "other_script": other_script,
    "homoglyph": homoglyph,
    "duplicate_transcript": duplicate_transcript,
    "duration_claim": duration_claim,
    "too_short": too_short,
    "too_long": too_long,
    "malformed_json": malformed_json,
    "wrong_columns": wrong_columns,
    "bom": bom,
    "crlf": crlf,
    "blank_line": blank_line,
    "duplicate_id": duplicate_id,
    "split_leak_audio": split_leak_audio,
    "split_leak_text": split_leak_text,
}
"""Every injector by name: ``FAULTS[name](corpus) -> Fault``."""
