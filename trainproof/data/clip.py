"""One clip reduced to a :class:`ClipRecord`: the per-clip analysis every engine runs.

:func:`analyze` is a pure function of a :class:`ClipRef` and the file it
names: no global state read or written, a picklable input and output, so
the local engine runs it in worker processes and a distributed one (Ray) on
any node that sees the file. It never raises for a bad file: what is wrong
with the file becomes ``error`` and ``error_kind``. numpy and soundfile are
imported inside it, and only once the file is known to exist and hold bytes,
so importing this module (or asking about a missing clip) loads neither (nor xxhash).

How the numbers are computed (the field docs are in :class:`ClipRecord`):

- The samples are read once, front to back, in blocks of FRAMES_PER_BLOCK
  frames of FRAME_S, or of MAX_BLOCK_SAMPLES samples (frames times channels)
  when that is fewer (a header giving a rate or a channel count out of
  speech's range; a frame may then span blocks), into one reused buffer, in
  the format's own integer width when it has one (int16 for 8/16-bit and
  companded formats, int32 for 24/32-bit), else float32. Memory is bounded by
  the block, not the clip, nor by the frames a header claims: a three-hour
  chapter costs a few MB of frame energies, not its samples.
- Frames: the clip is cut into consecutive 10 ms frames (FRAME_S; the frame
  length is ``round(sample_rate * FRAME_S)`` samples, but at least
  MIN_FRAME_SAMPLES, so a rate under 8 kHz has longer frames), the last one
  partial.
  A frame's energy is the mean square of the mono mix (channels averaged)
  about the clip's mean (the DC offset does not count as sound), in dBFS
  (0 dB: a full-scale square wave). ``level_db`` is the 95th
  percentile (LEVEL_PERCENTILE, linear interpolation on the mean squares) of
  the frame energies; -inf for digital silence.
- Silence: a frame is silent when its energy is more than
  SILENCE_BELOW_LEVEL_DB under ``level_db`` (every frame is silent when the
  level is -inf). ``lead_silence_s`` and ``trail_silence_s`` are the silent
  frames at either end, in samples / rate (a wholly silent clip has both
  equal to its duration).
- ``first_frame_db`` is the energy of the first 10 ms and ``last_frame_db``
  that of the last 10 ms (the final full frame length, ending at the last
  sample), relative to ``level_db``; -inf when the level is -inf.
- Clipping: a sample is full-scale when its magnitude is at least
  FULL_SCALE of the format's range (32768 for 16-bit, 2**31 for 24/32-bit as
  read, 1.0 for float), or the largest value the format can hold when that
  is lower (8-bit PCM: 127/128; mu-law: 32124/32768; A-law: 32256/32768).
  ``clipped_samples`` counts them over all channels; ``longest_clipped_run``
  is the longest run of consecutive ones within one channel.
- ``peak`` is the largest magnitude, ``dc_offset`` the mean of the mono mix,
  both with full scale 1.0.
- ``audio_hash`` is XXH3-128 (xxhash's ``xxh3_128``, 32 hex digits) of the samples quantized
  to little-endian int16, channels interleaved: 24/32-bit integers keep
  their top 16 bits (as libsndfile reads them as int16), floats are
  ``round(x * 32768)`` clamped to int16 (so 16-bit PCM stored as float
  hashes like the PCM). The same samples in WAV, FLAC or AIFF hash alike; the
  sample rate is not part of the hash.
- Non-finite samples (NaN, +-inf in a float file) are counted and then read
  as 0 for every other number. Finite float samples far beyond full scale
  (over 2**20) are mixed and squared in float64, where float32 would overflow.

A clip named by URI (``s3://``, ``gs://``, ``file://``) is opened through its
pyarrow filesystem (:mod:`trainproof.data.uri`) and read as a file object
(stat'ed only when it cannot be opened, to say why), with the same record
and the same errors as a file.

At most MAX_DECODE_S seconds, and MAX_DECODE_SAMPLES samples (frames times
channels), of a clip (or segment) are decoded: the first bounds the memory of
its frame energies, the second the time its decoding takes, whatever rate
and channel count a header gives. A clip whose header claims more is not
decoded at all, and one whose header gives no length (libsndfile's
SF_COUNT_MAX: a FLAC streamed with 0 total samples) is decoded to its end or
until it passes the cap, where it stops: either is a ``too-long`` record
(below). A header claiming fewer frames than the file holds is read for what
it claims, no further.

libsndfile's decoders (libmpg123 for MP3) print notes on a bad stream
("Illegal Audio-MPEG-Header") to the process's stderr, file descriptor 2:
while a clip is opened and read, fd 2 points at /dev/null (a worker process
of the engine sets it so once, at its start; a clip decoded in the calling
process has it set and put back around it, so another thread's line written
to stderr in that moment is lost). What is wrong with a clip is its record's
``error``, never output.

A segment (``ref.offset`` / ``ref.duration``, seconds) is read by seeking to
``round(offset * rate)`` and reading ``round(duration * rate)`` frames (each
at most MAX_FRAMES: an offset or duration beyond it, or not finite, is past
any file's end); the record describes the segment (``frames``,
``duration_s``), ``size`` the file. A segment of no frames (a zero duration,
or an offset at the very end with none) is ``empty``.

Errors (``error_kind``; numbers other than the header's left at defaults):

- ``missing``: the path does not exist (or a folder on it is not one).
- ``empty``: the file has 0 bytes, or its header holds no frames.
- ``unreadable``: libsndfile cannot open it (its message), or it is not a
  regular file, or the OS refuses to read it.
- ``truncated``: the file holds fewer frames than its header claims (a WAV
  whose data chunk claims more bytes than the file has: libsndfile clamps
  its frame count, so its header log is read for the claim), decoding stops
  early (a FLAC cut mid-stream), or a read ends before the claimed frames
  (beyond MPEG_LENGTH_SLACK for an MP3), or a segment reaches more than
  SEGMENT_OVERSHOOT_S past the end of the file (Kaldi's ``extract-segments``
  tolerates that much and cuts at the end). The record keeps the header's
  ``format``, ``subtype``, ``sample_rate``, ``channels``, ``frames`` (what
  the header claims) and ``duration_s`` (the same, in seconds); the audio
  numbers stay at their defaults, because a clip whose end is missing is
  judged by that alone (for a clip whose header gives no length, ``frames``
  and ``duration_s`` are what was decoded: a lower bound).
  ``extra["frames_read"]`` is how many frames could be decoded.
- ``too-long``: the header claims more than MAX_DECODE_S or MAX_DECODE_SAMPLES
  for the clip (or the segment asks for more), or a clip whose header gives no
  length still has audio at the cap. The record keeps the header's numbers, with
  ``frames`` and ``duration_s`` what the header claims (for a clip of no
  stated length, what was decoded before it stopped: a lower bound), and
  ``extra["frames_read"]`` the frames decoded (0 when refused on its header).

``active_s`` is the seconds of frames that are not silent (the clip's
speech, pauses excluded); ``nonfinite_samples`` the NaN or infinite samples
in a float file. ``extra`` holds what only some clips have:

- ``estimated_frames``: only for an MP3 that decoded to fewer frames than
  the estimate of its length, within MPEG_LENGTH_SLACK (not truncated).
- ``segment_overshoot_s``: only for a segment that ends past the file's end
  by at most SEGMENT_OVERSHOOT_S: by how much (the record covers what the
  file holds).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from trainproof.data.model import ClipRecord, ClipRef
from trainproof.data.uri import Info, is_uri
from trainproof.io import figures

FRAME_S = 0.01
"""Seconds per analysis frame (10 ms)."""

LEVEL_PERCENTILE = 95.0
"""The clip's own level is this percentile of its frame energies (percent)."""

SILENCE_BELOW_LEVEL_DB = 40.0
"""dB: a frame more than this far under the clip's own level is silence."""

FULL_SCALE = 0.999
"""Fraction of the format's range at or above which a sample's magnitude is full scale (clipped)."""

SEGMENT_OVERSHOOT_S = 0.5
"""Seconds a segment may reach past the end of its file before it is truncated (Kaldi's --max-overshoot)."""

MPEG_LENGTH_SLACK = 0.02
"""Fraction of an MP3's frame count that may be missing without it being truncated (without a Xing/Info
header the count is mpg123's estimate from the file size)."""

FRAMES_PER_BLOCK = 4096
"""Analysis frames read per block (41 s at any rate): the bound on memory per clip, with MAX_BLOCK_SAMPLES."""

MAX_BLOCK_SAMPLES = 2**22
"""Samples (frames x channels) read per block at most: 16 MB as int32 or float32, whatever rate and channel count a
header gives (FRAMES_PER_BLOCK frames of 48 kHz stereo fit; 2,147,483,647 Hz or 1,024 channels do not)."""

MIN_FRAME_SAMPLES = 80
"""Samples per analysis frame at least (10 ms at 8 kHz): each frame keeps a few numbers, so a header claiming 1 Hz
(frames of one sample) would cost many times the file's size; under 8 kHz, frames are longer than FRAME_S instead."""

MAX_FRAMES = 2**62
"""A segment's offset or length in frames at most: the record's numbers are 64-bit (the table's, the cache's)."""

MAX_DECODE_S = 4 * 3600.0
"""Seconds of audio decoded from one clip or segment at most (4 hours). Long-form recordings listed whole (an audiobook
chapter, a lecture, a meeting, a podcast episode) run to two or three hours, and a training clip to seconds; past
four hours a file is not a clip a trainer loads whole. A clip claiming more is not decoded (``too-long``): a 13 MB
FLAC of digital silence decodes to 100 hours, which took 31 s and 1.5 GB of frame energies; at the cap a clip costs
about 40 MB and a few seconds of one core (5 hours of 16 kHz FLAC silence: 4.7 s, 50 MB)."""

MAX_DECODE_SAMPLES = int(MAX_DECODE_S) * 48_000 * 2
"""Samples (frames x channels) decoded from one clip or segment at most: MAX_DECODE_S of 48 kHz stereo (1,382,400,000;
an 8-channel meeting recording at 16 kHz fits three hours). Decoding time follows samples, not seconds: a FLAC header
may give 655,350 Hz and 8 channels, where four hours of silence would be 75 billion samples: 20 minutes, at the 16 ns
a sample that decoding and analysing 5 hours of 16 kHz FLAC took here (4.7 s). At this cap a clip takes some 22 s."""

TOO_LONG = "too-long"
"""The ``error_kind`` of a clip past MAX_DECODE_S or MAX_DECODE_SAMPLES (see the module doc)."""

_NO_LENGTH = 2**63 - 1  # libsndfile's SF_COUNT_MAX: the frame count of a header that gives no length

_WIDE_PEAK = 2.0**20
"""A float block peaking above this (120 dB over full scale) is mixed and squared in float64: float32 would overflow."""

# Why XXH3-128 and not a hashlib digest: the hash is a pass over every sample, and blake2b made it half of the
# analysis's CPU (sha1 a third); XXH3 runs at memory speed. It is not cryptographic: it finds accidental copies
# (128 bits: a chance collision among a billion clips is about 1e-21), not copies someone forged to collide.

# Subtypes read as int16 (lossless: 16 bits or fewer) and as int32; everything else is read as float32.
_INT16 = frozenset(
    {"PCM_S8", "PCM_U8", "PCM_16", "ULAW", "ALAW", "IMA_ADPCM", "MS_ADPCM", "GSM610", "VOX_ADPCM", "G721_32", "G723_24", "G723_40",
     "DWVW_12", "DWVW_16", "DPCM_8", "DPCM_16", "ALAC_16", "NMS_ADPCM_16", "NMS_ADPCM_24", "NMS_ADPCM_32"}
)  # fmt: skip
_INT32 = frozenset({"PCM_24", "PCM_32", "DWVW_24", "ALAC_20", "ALAC_24", "ALAC_32"})
# The largest magnitude a format can decode to, in int16 units, where it is under full scale.
_MAX_CODE = {"PCM_S8": 32512, "PCM_U8": 32512, "ULAW": 32124, "ALAW": 32256}
# Bytes per sample of the uncompressed subtypes, to turn a data chunk's size into frames.
_BYTES = {"PCM_S8": 1, "PCM_U8": 1, "ULAW": 1, "ALAW": 1, "PCM_16": 2, "PCM_24": 3, "PCM_32": 4, "FLOAT": 4, "DOUBLE": 8}
# What a header said its data chunk holds, next to what the file has: "data : 32000 (should be 15979)".
_CLAIMED = re.compile(r"^\s*(data|SSND)\s*:\s*(\d+)\s*\(should be (\d+)\)", re.MULTILINE)
# What libsndfile 1.2 says of a file named .mp3 that it cannot decode, though it exists and is a regular file.
_NOT_A_FILE = "File does not exist or is not a regular file"
# Chunk sizes that mean "unknown" (a header written before the length was known, or RF64's placeholder), not a claim.
_UNKNOWN_SIZES = frozenset({0, 0xFFFFFFFF, 0x7FFFFFFF, 0xFFFFFFFF - 8})


def prepare() -> None:
    """Import the libraries a decoded clip needs (numpy, soundfile, xxhash) now: a worker pool calls this as each
    worker starts, so the workers import them side by side rather than each at its first clip, one after another
    behind the pool's start check. A library that is missing is left for the first clip to report."""
    try:
        import numpy  # noqa: F401
        import soundfile  # noqa: F401
        import xxhash  # noqa: F401
    except ImportError:
        pass


def _failed(ref: ClipRef, kind: str, message: str, **fields: object) -> ClipRecord:
    return ClipRecord(audio=ref.audio, error=message, error_kind=kind, **fields)  # type: ignore[arg-type]


def analyze(ref: ClipRef) -> ClipRecord:
    """The record of one clip (or segment of a file); never raises for a bad file (see the module doc)."""
    if ref.blob is not None:
        return _analyze_blob(ref)
    if is_uri(ref.audio):
        return _analyze_uri(ref)
    try:
        info = os.stat(ref.audio)
    except (FileNotFoundError, NotADirectoryError):
        return _missing(ref)
    except OSError as exc:
        return _failed(ref, "unreadable", f"cannot stat the file: {exc.strerror or exc}")
    except ValueError as exc:  # an embedded NUL in the path
        return _failed(ref, "missing", f"not a valid path: {exc}")
    if not stat.S_ISREG(info.st_mode):
        return _not_a_file(ref, folder=stat.S_ISDIR(info.st_mode))
    return _decoded(ref, info.st_size)


def _analyze_blob(ref: ClipRef) -> ClipRecord:
    """A clip held inside another file (:mod:`trainproof.data.blobs`), decoded from memory."""
    import io

    from trainproof.data.blobs import read_bytes

    assert ref.blob is not None
    try:
        data = read_bytes(ref.blob)
    except OSError as exc:
        return _failed(ref, "unreadable", f"cannot read it from {ref.blob.container}: {exc.strerror or exc}")
    except MemoryError:
        return _failed(ref, "unreadable", "out of memory while reading it", size=ref.blob.size)
    return _decoded(ref, len(data), io.BytesIO(data))


def _missing(ref: ClipRef) -> ClipRecord:
    return _failed(ref, "missing", "the file does not exist")


def _not_a_file(ref: ClipRef, folder: bool) -> ClipRecord:
    return _failed(ref, "unreadable", f"the path is {'a folder' if folder else 'not a regular file'}", size=0)


def _empty(ref: ClipRef) -> ClipRecord:
    """The record of a clip whose file holds no byte, however it was found so (a stat, or the size of an open file)."""
    return _failed(ref, "empty", "the file is empty (0 bytes)")


def _decoded(ref: ClipRef, size: int, source: object = None) -> ClipRecord:
    """The record of a file of ``size`` bytes (a path's, or ``source``'s, an open file object of a URI): empty,
    decoded, or out of memory while decoding, alike whichever way it was reached."""
    if size == 0:
        return _empty(ref)
    try:
        return _decode(ref, size, source)
    except MemoryError:
        return _failed(ref, "unreadable", "out of memory while decoding", size=size)


def stat_uri(ref: ClipRef) -> Info | ClipRecord:
    """A clip named by URI, stat'ed through its pyarrow filesystem (:mod:`trainproof.data.uri`): the clip's record
    when that alone decides it (missing, not a file, empty, or the store refused), else what the store says of the
    file. The engine stats every URI before it decides what to decode; a clip decided here is not asked about again."""
    from trainproof.data import uri

    try:
        info = uri.stat(ref.audio)
    except uri.Refused as exc:  # a scheme, query or authority that is not read: no library was asked
        return _failed(ref, "unreadable", str(exc))
    except OSError as exc:
        return _failed(ref, "unreadable", f"cannot stat the file: {exc}")
    if info.kind == "missing":
        return _missing(ref)
    if info.kind != "file":
        return _not_a_file(ref, folder=info.kind == "folder")
    if info.size == 0:
        return _empty(ref)
    return info


def _analyze_uri(ref: ClipRef) -> ClipRecord:
    """A clip named by URI, read through its pyarrow filesystem (:mod:`trainproof.data.uri`). It is opened first (its
    size comes with it: one request to the store, not a stat and an open); only when it cannot be opened is it
    stat'ed, to say why. A read from the store that fails mid-way makes the clip unreadable (not truncated: the
    object may be whole)."""
    from trainproof.data import uri

    try:
        source = uri.open_input(ref.audio)
    except uri.Refused as exc:  # a scheme, query or authority that is not read: no library was asked
        return _failed(ref, "unreadable", str(exc))
    except OSError as exc:
        found = stat_uri(ref)
        return found if isinstance(found, ClipRecord) else _failed(ref, "unreadable", f"cannot open the file: {exc}", size=found.size)
    with source:
        record = _decoded(ref, source.size(), source)
    if source.error is not None:
        return _failed(ref, "unreadable", f"cannot read the file: {source.error}", size=source.size())
    return record


_quiet = {"always": False, "depth": 0, "saved": -1}  # fd 2 pointed at /dev/null: for good, or how many decodes in and what to restore
_quiet_lock = threading.Lock()


def silence_stderr() -> None:
    """Point this process's file descriptor 2 at /dev/null for good: what a worker process that only decodes clips
    calls as it starts (it reports through records; what libsndfile's decoders print is noise). Left as it was when
    /dev/null cannot be opened."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    try:
        os.dup2(null, 2)
        _quiet["always"] = True
    except OSError:
        pass
    finally:
        os.close(null)


@contextlib.contextmanager
def _stderr_quiet() -> Iterator[None]:
    """File descriptor 2 at /dev/null inside, put back after (the first decode in saves it, the last out restores it:
    decodes on several threads share one redirection). Nothing is changed when it cannot be (no /dev/null)."""
    if _quiet["always"]:
        yield
        return
    entered = False
    with _quiet_lock:
        if _quiet["depth"] == 0:
            try:
                sys.stderr.flush()
                saved = os.dup(2)
            except (OSError, ValueError, AttributeError):
                saved = -1
            if saved >= 0:
                try:
                    null = os.open(os.devnull, os.O_WRONLY)
                    try:
                        os.dup2(null, 2)
                    finally:
                        os.close(null)
                except OSError:
                    os.close(saved)
                    saved = -1
            if saved >= 0:
                _quiet["saved"], _quiet["depth"], entered = saved, 1, True
        else:
            _quiet["depth"] += 1
            entered = True
    try:
        yield
    finally:
        if entered:
            with _quiet_lock:
                _quiet["depth"] -= 1
                if _quiet["depth"] == 0:
                    saved, _quiet["saved"] = _quiet["saved"], -1
                    os.dup2(saved, 2)
                    os.close(saved)


def _decode(ref: ClipRef, size: int, source: object = None) -> ClipRecord:
    """Decode ``ref.audio`` (or ``source``, a file object of its bytes) into its record, with stderr quiet (see the
    module doc)."""
    import soundfile as sf

    with _stderr_quiet():
        try:
            handle = sf.SoundFile(_openable(ref.audio) if source is None else source)
        except (sf.LibsndfileError, RuntimeError, TypeError, ValueError) as exc:
            text = _message(exc) or "cannot open it"
            if text.startswith(_NOT_A_FILE):  # the file was found and is a regular one: libsndfile 1.2 says this of a .mp3 it cannot decode
                text = "cannot recognise or decode it (it says the file does not exist, but it does)"
            return _failed(ref, "unreadable", f"libsndfile: {text}", size=size)
        except OSError as exc:
            return _failed(ref, "unreadable", f"cannot open the file: {exc.strerror or exc}", size=size)
        with handle:
            return _read(ref, size, handle)


def _openable(path: str) -> str | bytes:
    """``path`` as soundfile can open it: its bytes when it holds lone surrogates (a file name that is not UTF-8,
    which soundfile's own encoding of a name refuses)."""
    from trainproof.io.safe import utf8_encodable

    return path if utf8_encodable(path) else os.fsencode(path)


def _message(exc: BaseException) -> str:
    """libsndfile's own words, without soundfile's "Error opening 'path': " prefix (the report names the file)."""
    text = str(getattr(exc, "error_string", "") or exc).strip()
    text = re.sub(r"^Error opening .*?: ", "", text)
    text = re.sub(r"^Error\s*:\s*", "", text)
    return text.rstrip(".")


def _claimed_frames(handle, frames: int) -> int:
    """The frames the header claims: libsndfile clamps a WAV/AIFF data chunk that runs past the file, but logs the claim."""
    try:
        log = handle.extra_info
    except Exception:  # noqa: BLE001 -- the log is a hint; without it, trust the frame count
        return frames
    for match in _CLAIMED.finditer(log):
        claimed, held = int(match.group(2)), int(match.group(3))
        if match.group(1) == "SSND":  # AIFF's sound data chunk starts with 8 bytes of offset and block size
            claimed, held = claimed - 8, held - 8
        if claimed > held and claimed not in _UNKNOWN_SIZES and held > 0:
            width = _BYTES.get(str(handle.subtype))
            if width:
                return max(frames + 1, claimed // (width * int(handle.channels)))
            return max(frames + 1, int(round(frames * claimed / held)))  # the clamped count covers `held` bytes
    return frames


def _frames(seconds: float, rate: int) -> int:
    """``round(seconds * rate)``, from 0 to MAX_FRAMES (a time that is not finite is past any end)."""
    value = seconds * rate
    if value <= 0:
        return 0
    if not value < MAX_FRAMES:  # also NaN
        return MAX_FRAMES
    return int(round(value))


def _read(ref: ClipRef, size: int, handle) -> ClipRecord:
    import numpy as np

    rate, channels, total = int(handle.samplerate), int(handle.channels), int(handle.frames)
    header = {"size": size, "format": str(handle.format), "subtype": str(handle.subtype), "sample_rate": rate, "channels": channels}
    if rate <= 0 or channels <= 0:
        return _failed(ref, "unreadable", f"the header gives {rate} Hz and {channels} channels", **header)
    claimed = _claimed_frames(handle, total)
    start = 0 if ref.offset is None else _frames(ref.offset, rate)
    want = total - start if ref.duration is None else _frames(ref.duration, rate)
    segment = ref.offset is not None or ref.duration is not None
    no_length = total >= _NO_LENGTH  # the header gives no length: libsndfile's SF_COUNT_MAX
    open_ended = no_length and ref.duration is None  # read to the end, wherever it is
    seconds_cap = _frames(MAX_DECODE_S, rate)
    limit = min(seconds_cap, MAX_DECODE_SAMPLES // channels)
    extra: dict = {}

    if not segment and claimed > total:
        return _failed(
            ref, "truncated", f"the header claims {claimed:,} frames ({claimed / rate:.3f} s) but the file holds {total:,} "
            f"({total / rate:.3f} s)", **header, frames=claimed, duration_s=claimed / rate, extra={"frames_read": total},
        )  # fmt: skip
    if segment:
        end = start + want
        if start > total or (want > 0 and end > total):
            over = (end - total) / rate
            if over > SEGMENT_OVERSHOOT_S or start >= total:
                if ref.duration is None:  # from an offset past the end, to the end: no frames
                    what, want = f"the segment from {start / rate:.3f} s starts past the end of the {total / rate:.3f} s file", 0
                else:
                    what = f"the segment {start / rate:.3f}-{end / rate:.3f} s reaches past the end of the {total / rate:.3f} s file"
                return _failed(
                    ref, "truncated", what, **header, frames=want, duration_s=want / rate, extra={"frames_read": max(0, total - start)}
                )
            extra["segment_overshoot_s"] = over
            want = total - start
    if want <= 0:
        what = "libsndfile finds no audio frames in it" if not segment else "the segment is empty"
        return _failed(ref, "empty", what, **header)
    if open_ended:
        want = limit + 1  # a frame past the cap tells a clip that ends at it from one that goes on
    elif want > limit:
        what = "the segment lasts" if segment else "the header claims"
        if want > seconds_cap:
            why = f"{what} {_hours(want / rate)}, more than the {_hours(MAX_DECODE_S)} trainproof decodes of one clip"
        else:
            why = (f"{what} {want * channels:,} samples ({_hours(want / rate)} of {figures.plural(channels, 'channel')} at {rate:,} Hz), "
                   "more than the "
                   f"{MAX_DECODE_SAMPLES:,} trainproof decodes of one clip")  # fmt: skip
        return _failed(ref, TOO_LONG, why, **header, frames=want, duration_s=want / rate, extra={"frames_read": 0})
    if start:
        try:
            handle.seek(start)
        except Exception as exc:  # noqa: BLE001 -- libsndfile's seek errors come in several types
            return _failed(ref, "unreadable", f"cannot seek to {start / rate:.3f} s: {_message(exc)}", **header)

    subtype = str(header["subtype"])
    dtype = "int16" if subtype in _INT16 else "int32" if subtype in _INT32 else "float32"
    scale = 32768.0 if dtype == "int16" else 2.0**31 if dtype == "int32" else 1.0
    threshold = FULL_SCALE * scale
    if subtype in _MAX_CODE:
        threshold = min(threshold, float(_MAX_CODE[subtype]))
    analysis = _Analysis(np, rate, channels, dtype, scale, threshold)

    block = analysis.frame_len * FRAMES_PER_BLOCK
    if block * channels > MAX_BLOCK_SAMPLES:  # a frame spans blocks when it is longer than one
        block = max(1, MAX_BLOCK_SAMPLES // channels)
        if block > analysis.frame_len:
            block -= block % analysis.frame_len
    buffer = np.empty((min(block, want), channels), dtype=dtype)
    read = _reader(handle, dtype, no_length)
    done = 0
    with np.errstate(all="ignore"):
        while done < want:
            n = min(block, want - done)
            try:
                got = buffer[: read(buffer[:n])]
            except Exception as exc:  # noqa: BLE001 -- a decoder error mid-stream (a FLAC cut short)
                claim = done if open_ended else want  # a header of no length claims nothing: what was decoded, a lower bound
                of = "a clip whose header gives no length" if open_ended else f"the {want / rate:.3f} s the header claims"
                return _failed(
                    ref, "truncated", f"decoding failed between {done / rate:.3f} and {(done + n) / rate:.3f} s of {of} "
                    f"(libsndfile: {_message(exc)})", **header, frames=claim, duration_s=claim / rate, extra={"frames_read": done},
                )  # fmt: skip
            if len(got) == 0:
                break
            analysis.add(got)
            done += len(got)
            if len(got) < n:
                break
        if open_ended:
            if done > limit:
                most = _hours(MAX_DECODE_S) if limit == seconds_cap else f"{MAX_DECODE_SAMPLES:,} samples ({_hours(limit / rate)})"
                return _failed(
                    ref, TOO_LONG, f"its header gives no length and it still had audio at {most}, the most trainproof decodes of one clip",
                    **header, frames=done, duration_s=done / rate, extra={"frames_read": done},
                )  # fmt: skip
            return analysis.record(ref, header, done, extra)
        if done < want and not (subtype.startswith("MPEG") and want - done <= MPEG_LENGTH_SLACK * want):
            return _failed(
                ref, "truncated", f"the header claims {want:,} frames ({want / rate:.3f} s) but only {done:,} ({done / rate:.3f} s) "
                f"could be decoded", **header, frames=want, duration_s=want / rate, extra={"frames_read": done},
            )  # fmt: skip
        if done < want:
            extra["estimated_frames"] = want
        return analysis.record(ref, header, done, extra)


_CTYPES = {"int16": "short", "int32": "int", "float32": "float"}


def _reader(handle, dtype: str, no_length: bool) -> Callable[[Any], int]:
    """How a block is read into a buffer (returning the frames read): soundfile's ``buffer_read_into``, or, for a file
    whose header gives no length, libsndfile's own read through soundfile's binding. After each read soundfile seeks to
    where it thinks the read ended, and libsndfile cannot seek in such a stream: at its end the seek fails ("Internal
    psf_fseek() failed") and the frames just read are lost, so every such clip, and every segment of one that reaches
    its end, would be truncated. Without that binding (another soundfile), ``buffer_read_into`` it is."""
    if no_length:
        try:
            from soundfile import _ffi, _snd

            function, file = getattr(_snd, f"sf_readf_{_CTYPES[dtype]}"), handle._file
        except (ImportError, AttributeError, KeyError):
            pass
        else:
            pointer = f"{_CTYPES[dtype]} *"

            def read(buffer) -> int:
                count = int(function(file, _ffi.cast(pointer, _ffi.from_buffer(buffer)), len(buffer)))
                code = _snd.sf_error(file)
                if code:
                    raise RuntimeError(_ffi.string(_snd.sf_error_number(code)).decode("utf-8", "replace"))
                return count

            return read
    return lambda buffer: handle.buffer_read_into(buffer, dtype)


def _hours(seconds: float) -> str:
    """A long duration as a reader takes it in: ``4 h`` or ``100 h 0 min 3 s`` with the seconds when there are any,
    and always the exact seconds after (``(14,400 s)``)."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    shown = f"{hours:,} h" + (f" {minutes} min" if minutes or secs else "") + (f" {secs} s" if secs else "")
    return f"{shown} ({seconds:,.3f} s)".replace(".000 s)", " s)")


def _percentile(np, values, percent: float) -> float:
    """np.percentile's default (linear) for one percentile, without its overhead (it dominated short clips)."""
    position = (len(values) - 1) * percent / 100.0
    low = int(position)
    high = min(low + 1, len(values) - 1)
    part = np.partition(values, (low, high)) if high != low else np.partition(values, low)
    return float(part[low] + (part[high] - part[low]) * (position - low))


class _Analysis:
    """The running sums of one clip, fed block by block (blocks are whole frames, except the last, unless a frame
    is longer than a block: then a block may end inside a frame, which the next one completes).

    Frame energies leave out the DC offset: the mono mix is centred on the
    first block's mean as it is read (the clip's own mean, for a clip of one
    block), and what is left of the clip's mean is taken out exactly at the
    end from each frame's sum and sum of squares, so a clip riding on an
    offset has silent edges where it is silent.
    """

    def __init__(self, np, rate: int, channels: int, dtype: str, scale: float, threshold: float) -> None:
        import xxhash

        self.np, self.rate, self.channels, self.dtype, self.scale = np, rate, channels, dtype, scale
        self.frame_len = max(MIN_FRAME_SAMPLES, int(round(rate * FRAME_S)))
        self.threshold = threshold
        self.int_threshold = int(np.ceil(threshold)) if dtype != "float32" else None
        self.centre: float | None = None  # the first block's mean of the mono mix, taken off every sample
        self.sums: list = []  # per frame: the sum of the centred mono mix (float64 arrays, one per block)
        self.squares: list = []  # per frame: its sum of squares
        self.head: tuple[float, float, int] | None = None  # the first frame's sum, sum of squares, length
        self.open = 0  # samples of the last frame so far, when a block ended inside it (0: it is whole)
        self.tail: list = []  # the centred mono mix's last frame_len samples so far, in pieces (blocks' ends)
        self.tail_len = 0  # samples in those pieces: frame_len or more, unless the clip is shorter
        self.peak = 0.0
        self.clipped = 0
        self.longest = 0
        self.runs = [0] * channels  # full-scale run still open at the end of the last block, per channel
        self.nonfinite = 0
        self.hash = xxhash.xxh3_128()

    def add(self, x) -> None:
        np = self.np
        if self.dtype == "float32":
            bad = ~np.isfinite(x)
            count = int(np.count_nonzero(bad))
            if count:
                self.nonfinite += count
                x[bad] = 0.0
        high, low = x.max(), x.min()
        peak = max(float(high), -float(low))
        self.peak = max(self.peak, peak)
        if peak >= self.threshold:
            self._clipping(x)
        else:
            self.runs = [0] * self.channels
        self._hash(x)
        wide = self.dtype == "float32" and peak > _WIDE_PEAK
        mono = x[:, 0].astype(np.float64 if wide else np.float32)
        if self.channels > 1:
            for c in range(1, self.channels):
                mono += x[:, c]  # column by column: numpy's sum over a short axis is ~20x slower
            mono *= np.float32(1.0 / self.channels)
        if self.centre is None:
            self.centre = float(mono.sum()) / len(mono)
        mono -= np.float32(self.centre)
        L = self.frame_len
        if self.head is None:
            first = mono[:L]
            self.head = (float(first.sum()), float(np.dot(first, first)), len(first))
        elif self.head[2] < L:  # the first frame is longer than the first block
            more = mono[: L - self.head[2]]
            self.head = (self.head[0] + float(more.sum()), self.head[1] + float(np.dot(more, more)), self.head[2] + len(more))
        if len(mono) >= L:
            self.tail, self.tail_len = [mono[-L:].copy()], L
        else:  # a block shorter than a frame joins the pieces; the oldest go once the others make a frame
            self.tail.append(mono)
            self.tail_len += len(mono)
            while self.tail_len - len(self.tail[0]) >= L:
                self.tail_len -= len(self.tail.pop(0))
        rest = mono
        if self.open:  # this block's first samples belong to the frame the last block ended inside
            piece, rest = mono[: L - self.open], mono[L - self.open :]
            self.sums[-1][-1] += float(piece.sum())
            self.squares[-1][-1] += float(np.dot(piece, piece))
            self.open = (self.open + len(piece)) % L
            if not len(rest):
                return
        full = len(rest) // L
        squares, sums = [], []
        if full:
            frames = rest[: full * L].reshape(full, L)
            squares.append(np.einsum("ij,ij->i", frames, frames))
            sums.append(frames @ np.ones(L, dtype=np.float32))
        if len(rest) % L:
            part = rest[full * L :]
            squares.append(np.array([np.dot(part, part)], dtype=part.dtype))
            sums.append(np.array([part.sum()], dtype=part.dtype))
            self.open = len(part)
        self.squares.append((np.concatenate(squares) if len(squares) > 1 else squares[0]).astype(np.float64))
        self.sums.append((np.concatenate(sums) if len(sums) > 1 else sums[0]).astype(np.float64))

    def _clipping(self, x) -> None:
        np = self.np
        if self.int_threshold is not None:
            mask = (x >= self.int_threshold) | (x <= -self.int_threshold)
        else:
            mask = np.abs(x) >= self.threshold
        self.clipped += int(np.count_nonzero(mask))
        for c in range(self.channels):
            column = mask[:, c]
            if not column.any():
                self.runs[c] = 0
                continue
            edges = np.flatnonzero(np.diff(np.concatenate(([False], column, [False])).view(np.int8)))
            lengths = edges[1::2] - edges[0::2]
            if column[0]:
                lengths[0] += self.runs[c]
            self.longest = max(self.longest, int(lengths.max()))
            self.runs[c] = int(lengths[-1]) if column[-1] else 0

    def _hash(self, x) -> None:
        np = self.np
        if self.dtype == "int16":
            q = x.astype("<i2", copy=False)
        elif self.dtype == "int32":
            q = (x >> 16).astype("<i2")
        else:
            q = np.rint(np.clip(x, -1.0, 32767.0 / 32768.0) * np.float32(32768.0)).astype("<i2")
        self.hash.update(np.ascontiguousarray(q).data)

    def _last_frame(self, rest: float) -> float:
        """The mean square about ``rest`` of the centred mono mix's last frame_len samples (all of a shorter clip)."""
        np = self.np
        keep = min(self.frame_len, self.tail_len)
        total = 0.0  # piece by piece (a frame longer than a block has several): no copy joins them
        for piece in (self.tail[0][self.tail_len - keep :], *self.tail[1:]):
            centred = piece.astype(np.float64) - rest
            total += float(np.dot(centred, centred))
        return total / keep

    def _db(self, mean_square):
        return 10.0 * self.np.log10(mean_square / (self.scale * self.scale))

    def record(self, ref: ClipRef, header: dict, frames: int, extra: dict) -> ClipRecord:
        np = self.np
        L = self.frame_len
        # a long clip has millions of frames: each array is let go as soon as it is used, and the arithmetic is in place
        sums = np.concatenate(self.sums)
        self.sums = []  # the record is made once
        squares = np.concatenate(self.squares)
        self.squares = []
        rest = float(sums.sum()) / frames  # the mean still in the centred mix
        # mean((y - rest)^2) per frame, from its sum and sum of squares; rounding can leave a hair under 0
        part = frames - (len(sums) - 1) * L  # the last frame's length
        last_energy = squares[-1] / part - 2.0 * rest * sums[-1] / part + rest * rest
        energies = squares / float(L)
        del squares
        sums *= 2.0 * rest
        sums /= float(L)
        energies -= sums
        del sums
        energies += rest * rest
        energies[-1] = last_energy
        np.maximum(energies, 0.0, out=energies)
        db = self._db(energies)
        level = float(self._db(_percentile(np, energies, LEVEL_PERCENTILE)))
        if level == float("-inf"):
            lead = trail = frames
            first = last = float("-inf")
            active = 0
        else:
            loud = np.flatnonzero(db >= level - SILENCE_BELOW_LEVEL_DB)
            active = len(loud) * L
            if int(loud[-1]) == len(db) - 1 and frames % L:
                active -= L - frames % L  # the last frame is partial
            lead = min(int(loud[0]) * L, frames)
            trail = max(0, frames - (int(loud[-1]) + 1) * L)
            head_sum, head_squares, head_len = self.head  # type: ignore[misc]
            first = float(self._db(max(0.0, head_squares / head_len - 2.0 * rest * head_sum / head_len + rest * rest))) - level
            last = float(self._db(self._last_frame(rest))) - level
        return ClipRecord(
            audio=ref.audio,
            **header,
            frames=frames,
            duration_s=frames / self.rate,
            peak=self.peak / self.scale,
            clipped_samples=self.clipped,
            longest_clipped_run=self.longest,
            dc_offset=(self.centre + rest) / self.scale,  # type: ignore[operator]
            level_db=level,
            lead_silence_s=lead / self.rate,
            trail_silence_s=trail / self.rate,
            first_frame_db=first,
            last_frame_db=last,
            audio_hash=self.hash.hexdigest(),
            active_s=active / self.rate,
            nonfinite_samples=self.nonfinite,
            extra=extra,
        )
