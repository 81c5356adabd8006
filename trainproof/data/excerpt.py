"""A flagged clip as a report shows it: its waveform, and a short excerpt to listen to.

The excerpt is the clip's first EXCERPT_S seconds (or its segment's, for a clip cut from a longer file), mixed to
mono, resampled to 16 kHz (8 or 12 kHz for a clip recorded below that) and encoded as Ogg Opus at libsndfile's
compression level EXCERPT_COMPRESSION: about 2.6 kB a second of speech, its samples within a correlation of 0.98 of
the clip's, so that a report of MAX_FLAGGED clips stays one file of bounded size (see
:mod:`trainproof.commands.data_clips`).
The waveform is the whole excerpt's minimum and maximum in ENVELOPE_COLUMNS columns.

It is read the way the analysis read the clip (a file, or bytes held in a shard); a clip the analysis could not
read, or one named by a URI, has none.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

from trainproof.data.clip import _openable
from trainproof.data.model import ClipRef

EXCERPT_S = 6.0
OPUS_RATES = (8000, 12000, 16000)
"""The rates an excerpt is encoded at (Opus takes 8, 12, 16, 24 and 48 kHz; speech needs no more than 16)."""
EXCERPT_COMPRESSION = 0.95
"""libsndfile's Opus compression level, 0 (best) to 1 (smallest): 7.3 kB for 2.8 s of 16 kHz speech, correlation
0.98 with the original; 1.0 halves that at 0.86."""
MIME = "audio/ogg; codecs=opus"
ENVELOPE_COLUMNS = 200


@dataclass(frozen=True, eq=False)
class Excerpt:
    """What a report shows of one clip: ``seconds`` of it from ``start_s`` (of ``total_s``), its envelope
    (``low``/``high`` per column, in [-1, 1]), and the Ogg Opus bytes (None when audio was not asked for)."""

    start_s: float
    seconds: float
    total_s: float
    low: np.ndarray
    high: np.ndarray
    audio: bytes | None


def excerpt(ref: ClipRef, audio: bool = True) -> Excerpt | None:
    """The excerpt of ``ref``; None when it cannot be read here (a URI, a file gone since it was analysed)."""
    import soundfile as sf

    if ref.blob is None and "://" in ref.audio:
        return None
    try:
        if ref.blob is not None:
            from trainproof.data.blobs import read_bytes

            source: object = io.BytesIO(read_bytes(ref.blob))
        else:
            source = _openable(ref.audio)
        with sf.SoundFile(source) as handle:
            rate = handle.samplerate
            start = int(round((ref.offset or 0.0) * rate))
            available = max(handle.frames - start, 0) if handle.frames > 0 else 0
            total = available if ref.duration is None else min(available, int(round(ref.duration * rate)))
            if start:
                handle.seek(min(start, handle.frames))
            samples = handle.read(min(total, int(EXCERPT_S * rate)), dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, TypeError, ValueError, OSError, MemoryError):
        return None
    if samples.size == 0 or rate <= 0:
        return None
    mono = samples.mean(axis=1)
    mono = np.nan_to_num(mono, nan=0.0, posinf=1.0, neginf=-1.0).clip(-1.0, 1.0)
    low, high = envelope(mono)
    encoded = None
    if audio:
        encoded = opus(*resampled(mono, rate))
    return Excerpt(start / rate, mono.size / rate, total / rate, low, high, encoded)


def envelope(samples: np.ndarray, columns: int = ENVELOPE_COLUMNS) -> tuple[np.ndarray, np.ndarray]:
    """The minimum and maximum of ``samples`` in ``columns`` equal stretches (fewer when there are fewer samples)."""
    columns = max(1, min(columns, samples.size))
    edges = np.linspace(0, samples.size, columns + 1).astype(np.int64)
    starts = edges[:-1]
    return np.minimum.reduceat(samples, starts), np.maximum.reduceat(samples, starts)


def resampled(samples: np.ndarray, rate: int) -> tuple[np.ndarray, int]:
    """``samples`` at the highest of OPUS_RATES not above ``rate`` (the lowest, for a rate below all): each output sample
    the mean of the input around it (a crude low-pass that keeps what an ear checks, a click or a cut word), then
    linearly interpolated onto the new rate's instants."""
    target = max((r for r in OPUS_RATES if r <= rate), default=OPUS_RATES[0])
    if target == rate:
        return samples, rate
    factor = rate // target
    current = float(rate)
    if factor >= 2:
        usable = samples.size - samples.size % factor
        samples, current = samples[:usable].reshape(-1, factor).mean(axis=1), rate / factor
    count = int(samples.size * target / current)
    if count < 1:
        return samples[:0], target
    return np.interp(np.arange(count) * (current / target), np.arange(samples.size), samples).astype(np.float32), target


def opus(samples: np.ndarray, rate: int) -> bytes | None:
    """``samples`` as Ogg Opus bytes, the same bytes for the same samples; None when this libsndfile cannot write Opus."""
    import soundfile as sf

    out = io.BytesIO()
    try:
        sf.write(out, samples, rate, format="OGG", subtype="OPUS", compression_level=EXCERPT_COMPRESSION)
    except (sf.LibsndfileError, RuntimeError, TypeError, ValueError):
        return None
    return with_serial(out.getvalue(), OGG_SERIAL)


OGG_SERIAL = 0x54505246
"""The stream serial number every excerpt carries. libsndfile picks a random one, which would make two runs' reports
differ in bytes; a single-stream file may carry any."""


def with_serial(data: bytes, serial: int) -> bytes:
    """An Ogg file's pages with their stream serial number set to ``serial`` and their checksums recomputed."""
    out = bytearray(data)
    at = 0
    while at + 27 <= len(out) and out[at : at + 4] == b"OggS":
        segments = out[at + 26]
        size = 27 + segments + sum(out[at + 27 : at + 27 + segments])
        out[at + 14 : at + 18] = serial.to_bytes(4, "little")
        out[at + 22 : at + 26] = b"\0\0\0\0"
        out[at + 22 : at + 26] = _ogg_crc(bytes(out[at : at + size])).to_bytes(4, "little")
        at += size
    return bytes(out)


def _ogg_crc(page: bytes) -> int:
    """Ogg's page checksum: CRC-32, polynomial 0x04C11DB7, not reflected, from 0."""
    crc = 0
    for byte in page:
        crc = _CRC_TABLE[((crc >> 24) ^ byte) & 0xFF] ^ ((crc << 8) & 0xFFFFFFFF)
    return crc


def _crc_table() -> tuple[int, ...]:
    table = []
    for i in range(256):
        r = i << 24
        for _ in range(8):
            r = ((r << 1) ^ 0x04C11DB7) & 0xFFFFFFFF if r & 0x80000000 else (r << 1) & 0xFFFFFFFF
        table.append(r)
    return tuple(table)


_CRC_TABLE = _crc_table()
