"""The per-clip analysis against hostile or odd audio files: headers that lie about their rate, channels or length,
samples no recorder makes, segments past any end. Each is that clip's record (a finding at worst), never an exception,
a crashed run, or memory that follows what a header claims rather than what the file holds."""

from __future__ import annotations

import dataclasses
import json
import math
import struct
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

sf = pytest.importorskip("soundfile")
pytest.importorskip("pandas")

from tests.datasets.test_clip import SENTENCE, record_of, stereo, voiced, write  # noqa: E402
from tests.datasets.test_odd_inputs import findings, judged  # noqa: E402
from trainproof.cli import main  # noqa: E402
from trainproof.data import clip, engine  # noqa: E402
from trainproof.data.clip import analyze  # noqa: E402
from trainproof.data.model import ClipRef  # noqa: E402

RATE = 16000


# --- builders -----------------------------------------------------------------------------------


def wav(path, data: bytes, *, rate: int = RATE, channels: int = 1, bits: int = 16, tag: int = 1, data_size: int | None = None) -> str:
    """A canonical 44-byte-header WAV written byte by byte, so its header can say anything: ``data_size`` is what the
    data chunk claims (default: the bytes it holds)."""
    align = channels * bits // 8
    fmt = struct.pack("<HHIIHH", tag, channels, rate & 0xFFFFFFFF, (rate * align) & 0xFFFFFFFF, align & 0xFFFF, bits)
    size = len(data) if data_size is None else data_size
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", size & 0xFFFFFFFF) + data
    path.write_bytes(b"RIFF" + struct.pack("<I", len(body) & 0xFFFFFFFF) + body)
    return str(path)


def speech16(seconds: float = 1.0) -> bytes:
    return (voiced(RATE, [("speech", seconds)]) * 32767).astype("<i2").tobytes()


def _crc_table() -> list[int]:
    table = []
    for i in range(256):
        r = i << 24
        for _ in range(8):
            r = ((r << 1) ^ 0x04C11DB7) if r & 0x80000000 else r << 1
        table.append(r & 0xFFFFFFFF)
    return table


_CRC = _crc_table()


def _seal(page: bytearray) -> None:
    """Recompute an Ogg page's CRC (polynomial 0x04C11DB7, unreflected, over the page with its CRC field zeroed)."""
    page[22:26] = bytes(4)
    crc = 0
    for byte in page:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ _CRC[((crc >> 24) ^ byte) & 0xFF]
    page[22:26] = struct.pack("<I", crc)


def ogg_that_claims(path, *, rate: int, last_granule: int) -> str:
    """A 2 s Ogg Vorbis clip whose identification header gives ``rate`` and whose last page claims ``last_granule``
    samples (libsndfile's frame count), both pages' CRCs made valid again."""
    write(path, np.random.default_rng(0).uniform(-0.3, 0.3, 2 * RATE), RATE, "VORBIS", "OGG")
    data = path.read_bytes()
    pages, at = [], 0
    while at < len(data):
        segments = data[at + 27 : at + 27 + data[at + 26]]
        pages.append(bytearray(data[at : at + 27 + len(segments) + sum(segments)]))
        at += len(pages[-1])
    first, last = pages[0], pages[-1]
    where = first.find(b"\x01vorbis") + 7 + 4 + 1  # after the packet type, "vorbis", the version and the channel count
    first[where : where + 4] = struct.pack("<I", rate)
    last[6:14] = struct.pack("<q", last_granule)
    _seal(first)
    _seal(last)
    path.write_bytes(b"".join(pages))
    return str(path)


def peak_bytes(ref: ClipRef) -> tuple[object, int]:
    """The record of ``ref`` and the most memory Python and numpy held while making it."""
    tracemalloc.start()
    try:
        record = analyze(ref)
        return record, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# --- samples no recorder makes --------------------------------------------------------------------


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("channels", [1, 2])
def test_float_samples_far_beyond_full_scale_are_measured_not_a_crash(tmp_path, channels):
    """Finite float32 samples of 3e38 overflowed the float32 frame energies to inf and NaN, and the silence search
    then indexed an empty array (IndexError: the engine made it 'the analysis failed', a false TP-DATA-UNREADABLE)."""
    mono = voiced(RATE, SENTENCE).astype(np.float32)
    mono[::100] = 3e38
    data = mono if channels == 1 else np.stack([mono, mono], axis=1)
    r = record_of(write(tmp_path / "huge.wav", data, RATE, "FLOAT"))
    assert r.error is None
    assert r.nonfinite_samples == 0  # finite, however large
    assert r.peak == pytest.approx(3e38, rel=1e-6)
    assert r.clipped_samples == math.ceil(len(mono) / 100) * channels
    numbers = [r.level_db, r.dc_offset, r.first_frame_db, r.last_frame_db, r.lead_silence_s, r.trail_silence_s, r.active_s]
    assert all(math.isfinite(x) for x in numbers), numbers
    assert r.level_db > 700  # 3e38 is some 770 dB over full scale
    assert r.lead_silence_s == r.trail_silence_s == 0


def test_a_pooled_run_gives_hostile_clips_their_own_records(tmp_path, monkeypatch):
    """Through worker processes (--jobs 2) the records are the inline ones, and no clip is an analysis failure."""
    monkeypatch.setattr(engine, "POOL_MIN_BYTES", 0)
    mono = voiced(RATE, SENTENCE).astype(np.float32)
    mono[::100] = 3e38
    paths = [
        write(tmp_path / "huge.wav", mono, RATE, "FLOAT"),
        wav(tmp_path / "claim.wav", speech16(0.05), data_size=0xFFFFFFF0),
        wav(tmp_path / "one-hz.wav", speech16(), rate=1),
        write(tmp_path / "good.flac", voiced(RATE, SENTENCE), RATE),
    ]
    refs = [ClipRef(p) for p in paths]
    pooled = engine.analyze_all(refs, jobs=2)
    assert pooled == engine.analyze_all(refs, jobs=1)
    assert [r.error_kind for r in pooled] == [None, "truncated", "too-long", None]  # 16,000 samples at 1 Hz: 4 h 26 min
    assert not any("analysis failed" in (r.error or "") for r in pooled)


# --- headers that claim a rate, a channel count or a length -------------------------------------------


def test_a_header_claiming_100_hz_costs_no_more_memory_than_the_same_bytes_at_8_khz(tmp_path):
    """Each 10 ms frame keeps a few numbers: at 100 Hz (or 1 Hz) a frame was one sample, and 2 MB of audio held some
    60 MB of frame energies (a 100 MB file, 3 GB). Frames are now at least MIN_FRAME_SAMPLES long. (At 1 Hz the same
    million samples last 278 hours: more than the analysis decodes, so not decoded at all.)"""
    samples = np.random.default_rng(1).integers(-8000, 8000, 1_000_000).astype("<i2").tobytes()
    slow, low = peak_bytes(ClipRef(wav(tmp_path / "100-hz.wav", samples, rate=100)))
    telephone, usual = peak_bytes(ClipRef(wav(tmp_path / "8k.wav", samples, rate=8000)))
    assert slow.error is None
    assert telephone.error is None
    assert slow.frames == telephone.frames == 1_000_000
    assert low <= usual * 1.2 + 1_000_000, (low, usual)
    # the frames are as long as 8 kHz's, so everything but the time scale agrees
    assert slow.level_db == pytest.approx(telephone.level_db, abs=1e-9)
    assert slow.lead_silence_s == pytest.approx(telephone.lead_silence_s * 80)
    one_hz, least = peak_bytes(ClipRef(wav(tmp_path / "1-hz.wav", samples, rate=1)))
    assert (one_hz.error_kind, one_hz.frames, one_hz.sample_rate) == ("too-long", 1_000_000, 1)
    assert least < usual


def test_a_header_claiming_64_channels_is_read_in_bounded_blocks(tmp_path):
    """FRAMES_PER_BLOCK frames of 10 ms at 48 kHz are 2 million frames: with 64 channels the block was the whole 25 MB
    file (and 1,024 channels, 2 GB). Blocks are now at most MAX_BLOCK_SAMPLES samples."""
    samples = np.random.default_rng(2).integers(-3000, 3000, 64 * 200_000).astype("<i2")
    r, peak = peak_bytes(ClipRef(wav(tmp_path / "64.wav", samples.tobytes(), rate=48000, channels=64)))
    assert r.error is None
    assert (r.channels, r.frames) == (64, 200_000)
    assert peak < 1.5 * clip.MAX_BLOCK_SAMPLES * 2, peak  # about one block of int16 (8 MB), not half the file's 25 MB


def test_a_header_claiming_2_gigahertz_spans_one_frame_over_blocks(tmp_path):
    """At 2,147,483,647 Hz a 10 ms frame is 21 million samples: 6 million are one partial frame over two blocks, whose
    energy is the clip's variance."""
    samples = np.random.default_rng(3).uniform(-0.5, 0.5, 6 * 2**20).astype("<f4")
    r = record_of(wav(tmp_path / "2ghz.wav", samples.tobytes(), rate=2**31 - 1, bits=32, tag=3))
    assert r.error is None
    assert r.frames == len(samples) > clip.MAX_BLOCK_SAMPLES
    assert r.level_db == pytest.approx(10 * math.log10(np.var(samples.astype(np.float64))), abs=1e-3)
    assert r.first_frame_db == pytest.approx(0, abs=1e-3)
    assert r.last_frame_db == pytest.approx(0, abs=1e-3)
    assert r.lead_silence_s == r.trail_silence_s == 0


def test_an_ogg_claiming_a_huge_length_at_2_gigahertz_is_its_record_not_out_of_memory(tmp_path):
    """The buffer was sized for min(block, the claimed frames): 2**40 claimed frames at 2 GHz asked numpy for 350 GB,
    and the clip became 'out of memory while decoding' with its header lost. (Decoded, it was truncated: it holds 2 s;
    2**40 samples are now more than the analysis decodes, so it is not decoded at all.)"""
    r = analyze(ClipRef(ogg_that_claims(tmp_path / "claim.ogg", rate=2**31 - 1, last_granule=2**40)))
    assert r.error_kind == "too-long", r
    assert (r.format, r.subtype, r.sample_rate) == ("OGG", "VORBIS", 2**31 - 1)
    assert r.frames == 2**40
    assert r.extra["frames_read"] == 0
    # the same claim at a rate of speech is 19,000 hours: more than the analysis decodes, so not decoded at all
    assert analyze(ClipRef(ogg_that_claims(tmp_path / "claim16k.ogg", rate=RATE, last_granule=2**40))).error_kind == "too-long"


@pytest.mark.parametrize("frames_per_block_samples", [37, 160, 1000])
def test_a_frame_spanning_blocks_gives_the_record_of_whole_frames(tmp_path, monkeypatch, frames_per_block_samples):
    """Blocks that end inside a 10 ms frame (160 samples here) add up to the same frames as whole-frame blocks."""
    mono = np.clip(voiced(RATE, [("pause", 0.3), *SENTENCE, ("cut", 0.2)], peak=1.0) * 1.5, -1, 1)
    path = write(tmp_path / "s.wav", stereo(mono), RATE, "PCM_24")
    whole = record_of(path)
    monkeypatch.setattr(clip, "MAX_BLOCK_SAMPLES", 2 * frames_per_block_samples)
    blocks = record_of(path)
    floats = {"dc_offset", "level_db", "first_frame_db", "last_frame_db"}
    for name in ("frames", "peak", "clipped_samples", "longest_clipped_run", "lead_silence_s", "trail_silence_s", "active_s", "audio_hash"):
        assert getattr(blocks, name) == getattr(whole, name), name
    for name in floats - {"dc_offset"}:
        assert getattr(blocks, name) == pytest.approx(getattr(whole, name), abs=1e-3), name
    assert blocks.dc_offset == pytest.approx(whole.dc_offset, abs=1e-7)


@pytest.mark.parametrize(
    "name,build,kind",
    [
        ("65535 channels", lambda p: wav(p, speech16(), channels=65535), "unreadable"),
        ("0 Hz", lambda p: wav(p, speech16(), rate=0), "unreadable"),
        ("4,294,967,295 Hz", lambda p: wav(p, speech16(), rate=0xFFFFFFFF), "unreadable"),
        ("4 GB claimed, 1 KB held", lambda p: wav(p, bytes(1024), data_size=0xFFFFFFF0), "truncated"),
        ("10 h claimed, 1 KB held", lambda p: wav(p, bytes(1024), rate=8000, data_size=10 * 3600 * 8000 * 2), "truncated"),
        ("1 KB claimed, 32 KB held", lambda p: wav(p, speech16(), data_size=1024), None),
        ("0 frames", lambda p: wav(p, b""), "empty"),
        ("1 frame", lambda p: wav(p, b"\x00\x10"), None),
    ],
)
def test_a_lying_header_is_that_clips_own_record(tmp_path, name, build, kind):
    r, peak = peak_bytes(ClipRef(build(tmp_path / "x.wav")))
    assert r.error_kind == kind, (name, r)
    assert peak < 8_000_000, (name, peak)  # what the file holds, not what its header claims
    if kind == "truncated":
        assert r.frames > r.extra["frames_read"]
    if name.startswith("1 KB claimed"):
        assert r.frames == 512  # a reader stops where the data chunk says it ends


def test_odd_but_honest_formats_are_read_as_their_own_zero_and_range(tmp_path):
    """8-bit WAV is unsigned: 128 is its zero, not a DC offset. 24/32-bit ints, a dead channel and a .wav holding FLAC
    are read as what they are."""
    assert record_of(wav(tmp_path / "u8-zero.wav", bytes([128]) * RATE, bits=8)).dc_offset == 0
    mono = voiced(RATE, SENTENCE)
    u8 = record_of(write(tmp_path / "u8.wav", mono, RATE, "PCM_U8"))
    assert abs(u8.dc_offset) < 0.005  # half a step of 8 bits at most
    assert u8.level_db == pytest.approx(record_of(write(tmp_path / "s16.wav", mono, RATE)).level_db, abs=0.1)
    for subtype in ("PCM_24", "PCM_32"):
        r = record_of(write(tmp_path / f"{subtype}.wav", mono, RATE, subtype))
        assert r.peak == pytest.approx(0.5, abs=0.01)
        assert r.clipped_samples == 0
    dead = record_of(write(tmp_path / "dead.wav", np.stack([mono, np.zeros_like(mono)], axis=1), RATE))
    assert dead.level_db == pytest.approx(u8.level_db - 20 * math.log10(2), abs=0.1)  # downmixed, 6 dB quieter
    lying = record_of(write(tmp_path / "flac.wav", mono, RATE, "PCM_16", "FLAC"))
    assert (lying.error, lying.format) == (None, "FLAC")


# --- segments ---------------------------------------------------------------------------------------


def test_an_empty_segment_at_the_end_is_empty_and_one_past_it_has_no_frames(tmp_path):
    """A zero-length segment at the very end was 'truncated: reaches past the end'; an offset past the end with no
    duration gave a record of negative frames and a segment 'from 5 s to 2 s'."""
    path = write(tmp_path / "two.wav", voiced(RATE, [("speech", 2.0)]), RATE)
    assert record_of(path, offset=2.0, duration=0.0).error_kind == "empty"
    assert record_of(path, offset=2.0).error_kind == "empty"
    past = record_of(path, offset=5.0)
    assert past.error_kind == "truncated"
    assert past.frames == 0
    assert past.duration_s == 0
    assert "from 5.000 s starts past the end" in past.error
    assert record_of(path, offset=2.0, duration=0.1).error_kind == "truncated"  # starts at the end: holds nothing


@pytest.mark.parametrize("offset,duration", [(0.1, 1e300), (1e300, 1.0), (math.inf, 1.0), (0.1, math.inf), (math.nan, 1.0)])
def test_a_segment_beyond_any_file_is_truncated_with_64_bit_numbers(tmp_path, offset, duration):
    """``round(1e300 * rate)`` frames could be neither cached nor tabled, and inf raised OverflowError."""
    r = record_of(write(tmp_path / "c.wav", voiced(RATE, SENTENCE), RATE), offset=offset, duration=duration)
    assert r.error_kind == "truncated"
    assert 0 <= r.frames < 2**63
    assert len(r.error) < 200


def test_a_manifest_segment_of_1e300_seconds_is_a_finding_not_a_run_that_could_not_judge(tmp_path, capsys):
    """With the cache on (the default), the record's 300-digit frame count made sqlite raise OverflowError, and the
    whole dataset was NOT-CHECKED (exit 2). (The manifest now refuses a time past 68 years at its line.)"""
    audio = write(tmp_path / "c.wav", voiced(RATE, SENTENCE), RATE)
    manifest = tmp_path / "m.json"
    lines = [{"audio_filepath": audio, "text": "a line", "offset": 0.1, "duration": 1e300}, {"audio_filepath": audio, "text": "the clip"}]
    manifest.write_text("".join(json.dumps(line) + "\n" for line in lines))
    for _ in range(2):  # decoded, then from the cache
        code = main(["data", str(manifest), "--cache-dir", str(tmp_path / "cache"), "--jobs", "1", "--json"])
        out, err = capsys.readouterr()
        assert code == 1, err
        assert "Traceback" not in err
        assert ("TP-DATA-MANIFEST", "FAIL") in findings(json.loads(out))


# --- files that are not what they say --------------------------------------------------------------------


@pytest.mark.parametrize("content", [b"this is text, not audio\n" * 40, b"\xff\xfb\x90\x00" + bytes(3000)])
def test_an_undecodable_mp3_is_not_said_to_be_missing(tmp_path, content):
    """libsndfile 1.2 says 'File does not exist or is not a regular file' of any .mp3 it cannot decode."""
    (tmp_path / "x.mp3").write_bytes(content)
    r = record_of(tmp_path / "x.mp3")
    assert r.error_kind == "unreadable"
    assert "does not exist or is not a regular file" not in r.error
    assert "cannot recognise or decode it" in r.error


@pytest.mark.parametrize("ext,fmt,subtype", [("flac", "FLAC", "PCM_16"), ("mp3", "MP3", "MPEG_LAYER_III")])
def test_compressed_files_cut_short_or_garbled_after_the_header_are_truncated(tmp_path, ext, fmt, subtype):
    write(tmp_path / f"good.{ext}", voiced(RATE, SENTENCE * 2), RATE, subtype, fmt)
    data = (tmp_path / f"good.{ext}").read_bytes()
    (tmp_path / f"cut.{ext}").write_bytes(data[: len(data) // 2])
    noise = np.random.default_rng(3).integers(0, 256, len(data) - len(data) // 3, dtype=np.uint8).tobytes()
    (tmp_path / f"garbled.{ext}").write_bytes(data[: len(data) // 3] + noise)
    for name in ("cut", "garbled"):
        r = record_of(tmp_path / f"{name}.{ext}")
        assert r.error_kind == "truncated", (name, r)
        assert r.frames == record_of(tmp_path / f"good.{ext}").frames


# --- a click ---------------------------------------------------------------------------------------------


def _one_clip_manifest(tmp_path, data) -> str:
    audio = write(tmp_path / "click.wav", data, RATE)
    (tmp_path / "m.json").write_text(json.dumps({"audio_filepath": audio, "text": "tick"}) + "\n")
    return str(tmp_path / "m.json")


def test_one_full_scale_click_in_a_very_short_clip_is_not_clipping(tmp_path, capsys):
    """One full-scale sample in 400 is 0.25% of the clip, over DATA_CLIP_SHARE: the rule said 'clipped' of what its own
    doc says it does not fire on, a touch of full scale for a sample or two."""
    click = np.zeros(400)
    click[200] = 1.0
    manifest = _one_clip_manifest(tmp_path, click)
    assert record_of(tmp_path / "click.wav").clipped_samples == 1
    assert "TP-DATA-CLIPPING" not in dict(findings(judged(capsys, manifest)))
    click[200:203] = 1.0  # a run of DATA_CLIP_RUN is clipping, however short the clip
    assert ("TP-DATA-CLIPPING", "WARN") in findings(judged(capsys, _one_clip_manifest(tmp_path, click)))


# --- decoded audio is bounded per clip (issue 27, item 7) ----------------------------------------------------------

BOMB_RATE = 8000
CAP_S = clip.MAX_DECODE_S


def silence_flac(path, seconds: float, rate: int = BOMB_RATE) -> str:
    """A real FLAC of digital silence, written by soundfile a block at a time: a run of zeros compresses to almost
    nothing, so a small file decodes to hours (4.5 hours at 8 kHz is about 1 MB; 13 MB made 100 hours)."""
    frames, block = int(round(seconds * rate)), np.zeros(rate * 600, dtype=np.int16)
    with sf.SoundFile(str(path), "w", rate, 1, format="FLAC", subtype="PCM_16") as out:
        written = 0
        while written < frames:
            out.write(block[: min(len(block), frames - written)])
            written += min(len(block), frames - written)
    return str(path)


def flac_stating(source, path, total: int) -> str:
    """A copy of the FLAC ``source`` whose STREAMINFO gives ``total`` samples: 0 is "unknown", as an encoder writing
    to a pipe leaves it (libsndfile then gives no length)."""
    data = bytearray(open(source, "rb").read())
    assert data[:4] == b"fLaC"
    assert data[4] & 0x7F == 0  # STREAMINFO is the first block
    field = int.from_bytes(data[18:26], "big")  # 20 bits of rate, 3 of channels, 5 of bits, 36 of total samples
    data[18:26] = ((field & ~((1 << 36) - 1)) | total).to_bytes(8, "big")
    path.write_bytes(bytes(data))
    return str(path)


@pytest.fixture(scope="module")
def bomb(tmp_path_factory) -> str:
    """Half an hour more than the cap of digital silence, as FLAC."""
    return silence_flac(tmp_path_factory.mktemp("bomb") / "bomb.flac", CAP_S + 1800)


def test_a_flac_whose_header_claims_more_than_the_cap_is_not_decoded(bomb):
    """Before, every frame was decoded (100 hours: 31 s and 1.5 GB of frame energies); now the header's claim alone
    makes the record, the header's numbers kept."""
    r, peak = peak_bytes(ClipRef(bomb))
    assert r.error_kind == "too-long", r
    assert (r.format, r.subtype, r.sample_rate, r.channels) == ("FLAC", "PCM_16", BOMB_RATE, 1)
    assert r.frames == int((CAP_S + 1800) * BOMB_RATE)
    assert r.duration_s == CAP_S + 1800
    assert r.extra == {"frames_read": 0}
    assert "the header claims 4 h 30 min (16,200 s), more than the 4 h (14,400 s)" in r.error
    assert peak < 4 * 2**20, peak  # nothing decoded: no frame energies


def test_a_flac_of_no_stated_length_stops_decoding_at_the_cap(bomb, tmp_path):
    """A header may give no length (0 total samples): such a clip is decoded until it ends or passes the cap, where it
    stops. Before, it was decoded to its end and then called truncated (libsndfile's SF_COUNT_MAX taken as a claim)."""
    r = analyze(ClipRef(flac_stating(bomb, tmp_path / "unknown.flac", 0)))
    assert r.error_kind == "too-long", r
    assert r.extra["frames_read"] == r.frames == int(CAP_S * BOMB_RATE) + 1
    assert "header gives no length and it still had audio at 4 h (14,400 s)" in r.error


def test_a_flac_claiming_few_frames_is_read_for_those_alone(bomb, tmp_path):
    r = analyze(ClipRef(flac_stating(bomb, tmp_path / "few.flac", 100)))
    assert (r.error_kind, r.frames) == (None, 100)


def test_a_short_flac_of_no_stated_length_is_read_to_its_end(tmp_path):
    """Its record is the one of the same FLAC with its length stated (it was truncated: soundfile seeks after every
    read, libsndfile cannot seek in such a stream, and the frames of the last read were lost)."""
    known = write(tmp_path / "known.flac", voiced(RATE, SENTENCE), RATE)
    unknown = flac_stating(known, tmp_path / "unknown.flac", 0)
    assert sf.info(unknown).frames == 2**63 - 1  # libsndfile's SF_COUNT_MAX: no length
    assert analyze(ClipRef(unknown)) == dataclasses.replace(analyze(ClipRef(known)), audio=unknown)


def test_a_flac_of_no_stated_length_cut_short_is_truncated_at_what_was_decoded(tmp_path):
    """The header claims no length, so the record claims none: it was truncated "of the 14400.000 s the header claims",
    with the cap's 4 hours as its frames and duration, for a clip of seconds."""
    known = write(tmp_path / "known.flac", voiced(RATE, SENTENCE * 3), RATE)
    data = Path(flac_stating(known, tmp_path / "unknown.flac", 0)).read_bytes()
    (tmp_path / "cut.flac").write_bytes(data[: len(data) // 2])
    r = analyze(ClipRef(str(tmp_path / "cut.flac")))
    assert r.error_kind == "truncated", r
    assert "of a clip whose header gives no length (libsndfile: " in r.error
    assert "the header claims" not in r.error
    assert r.frames == r.extra["frames_read"] < sf.info(known).frames
    assert r.duration_s == r.frames / RATE


def test_a_segment_to_the_end_of_a_flac_of_no_stated_length_is_read(tmp_path):
    """A segment is read for its own length, but the stream still cannot seek: one that reaches the file's end was
    truncated ("Internal psf_fseek() failed") where the same segment of the FLAC with its length stated was read."""
    known = write(tmp_path / "known.flac", voiced(RATE, SENTENCE), RATE)
    unknown = flac_stating(known, tmp_path / "unknown.flac", 0)
    seconds = sf.info(known).frames / RATE
    for offset in (0.0, 0.5):
        segment = analyze(ClipRef(unknown, offset=offset, duration=seconds - offset))
        assert segment.error is None, segment
        assert segment == dataclasses.replace(analyze(ClipRef(known, offset=offset, duration=seconds - offset)), audio=unknown)


def test_a_flac_claiming_more_samples_than_the_cap_in_fewer_hours_is_not_decoded(tmp_path):
    """Eight channels at 96 kHz for an hour are 2.8 billion samples: decoding time follows samples, so the cap is in
    samples too (MAX_DECODE_SAMPLES: four hours of 48 kHz stereo)."""
    source = write(tmp_path / "eight.flac", np.zeros((96_000, 8)), 96_000)
    r = analyze(ClipRef(flac_stating(source, tmp_path / "claim.flac", 96_000 * 3600)))
    assert r.error_kind == "too-long", r
    assert (r.sample_rate, r.channels, r.duration_s) == (96_000, 8, 3600.0)
    assert "the header claims 2,764,800,000 samples (1 h (3,600 s) of 8 channels at 96,000 Hz), more than the 1,382,400,000" in r.error


def test_a_segment_is_capped_by_its_own_length_not_its_files(bomb):
    """A Kaldi segment of one second four hours into a longer recording is read; one longer than the cap is not."""
    inside = analyze(ClipRef(bomb, offset=CAP_S, duration=1.0))
    assert (inside.error_kind, inside.frames, inside.duration_s) == (None, BOMB_RATE, 1.0)
    over = analyze(ClipRef(bomb, offset=0.0, duration=CAP_S + 60))
    assert over.error_kind == "too-long", over
    assert over.duration_s == CAP_S + 60
    assert "the segment lasts 4 h 1 min (14,460 s)" in over.error


def test_a_clip_past_the_cap_is_a_duration_warning_at_its_header_length(bomb, tmp_path, capsys):
    """The clip is one TP-DATA-DURATION finding that says it was not analysed, with the header's duration; it is not
    unreadable, and the run is judged (exit 0: a WARN)."""
    clips = [write(tmp_path / f"c{i}.wav", voiced(RATE, SENTENCE, seed=i), RATE) for i in range(2)]
    manifest = tmp_path / "m.json"
    lines = [{"audio_filepath": bomb, "text": "a long silence"}] + [{"audio_filepath": c, "text": f"clip {i}"} for i, c in enumerate(clips)]
    manifest.write_text("".join(json.dumps(line) + "\n" for line in lines))
    report = judged(capsys, manifest)
    assert report["code"] == 0
    (finding,) = [f for f in report["subjects"][0]["findings"] if f["id"] == "TP-DATA-DURATION"]
    assert finding["line"] == 1
    assert "bomb.flac is not analysed: the header claims 4 h 30 min (16,200 s)" in finding["message"]
    assert finding["evidence"].startswith("16,200 s, not analysed")
    assert ("TP-DATA-UNREADABLE", "FAIL") not in findings(report)
