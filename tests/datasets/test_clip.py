"""The per-clip analysis on real audio files: synthesised voiced speech written by soundfile in the formats TTS corpora use."""

from __future__ import annotations

import dataclasses
import math
import pickle
import subprocess
import sys

import numpy as np
import pytest

sf = pytest.importorskip("soundfile")

from tests.helpers import REPO  # noqa: E402
from trainproof.data import clip  # noqa: E402
from trainproof.data.clip import FRAME_S, analyze  # noqa: E402
from trainproof.data.model import ClipRecord, ClipRef  # noqa: E402

# --- builders (test_engine.py uses them too) -------------------------------------

FLOOR = 3e-4  # a recording's noise floor, about -73 dBFS


def voiced(rate: int, layout, *, peak: float = 0.5, floor: float = FLOOR, seed: int = 0, fade_s: float = 0.015) -> np.ndarray:
    """Speech-like mono audio laid out as [("speech" | "pause" | "silence" | "cut", seconds), ...].

    Speech is a voiced signal: eight harmonics of an F0 gliding between 120
    and 200 Hz, under a syllable envelope, faded in and out over ``fade_s``.
    "cut" is speech without the fade at its end (a word cut off by the file's
    edge). A pause holds the noise floor; "silence" is digital zero.
    Normalised so the speech peaks at ``peak``.
    """
    rng = np.random.default_rng(seed)
    parts = []
    for kind, seconds in layout:
        n = int(round(seconds * rate))
        if kind in ("speech", "cut"):
            t = np.arange(n) / rate
            f0 = 160 + 40 * np.sin(2 * np.pi * 0.7 * t + rng.uniform(0, 6))
            phase = 2 * np.pi * np.cumsum(f0) / rate
            wave = sum(np.sin(k * phase) / k for k in range(1, 9))
            wave *= 0.6 + 0.4 * np.sin(2 * np.pi * 4 * t) ** 2
            fade = min(n // 2, int(fade_s * rate))
            ramp = np.sin(np.linspace(0, np.pi / 2, fade)) ** 2
            wave[:fade] *= ramp
            if kind == "speech":
                wave[n - fade :] *= ramp[::-1]
            parts.append(("speech", wave))
        else:
            parts.append((kind, np.zeros(n)))
    loud = max(np.abs(w).max() for k, w in parts if k == "speech") if any(k == "speech" for k, _ in parts) else 1.0
    out = []
    for kind, wave in parts:
        wave = wave / loud * peak
        if kind != "silence" and floor:
            wave = wave + rng.normal(0, floor, len(wave))
        out.append(wave)
    return np.concatenate(out) if out else np.zeros(0)


SENTENCE = [("speech", 0.45), ("pause", 0.08), ("speech", 0.6), ("pause", 0.1), ("speech", 0.5)]


def write(path, data, rate: int, subtype: str = "PCM_16", format: str | None = None):  # noqa: A002
    """Write float samples (or int16, written as they are) with soundfile; returns the path as str."""
    sf.write(str(path), data, rate, subtype=subtype, format=format)
    return str(path)


def record_of(path, **ref) -> ClipRecord:
    return analyze(ClipRef(str(path), **ref))


def stereo(mono: np.ndarray, right_gain: float = 0.8) -> np.ndarray:
    return np.stack([mono, mono * right_gain], axis=1)


FORMATS = [
    ("wav", "WAV", "PCM_16"),
    ("wav", "WAV", "PCM_24"),
    ("wav", "WAV", "FLOAT"),
    ("flac", "FLAC", "PCM_16"),
    ("flac", "FLAC", "PCM_24"),
]


# --- a clean clip ----------------------------------------------------------------------


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("ext,fmt,subtype", FORMATS)
@pytest.mark.parametrize("rate", [16000, 22050, 44100])
@pytest.mark.parametrize("channels", [1, 2])
def test_voiced_speech_gives_sane_numbers(tmp_path, ext, fmt, subtype, rate, channels):
    mono = voiced(rate, [("pause", 0.12), *SENTENCE, ("pause", 0.12)], peak=0.5)
    data = mono if channels == 1 else stereo(mono)
    path = write(tmp_path / f"clip.{ext}", data, rate, subtype, fmt)
    r = record_of(path)
    assert r.error is None
    assert r.error_kind is None
    assert (r.format, r.subtype, r.sample_rate, r.channels, r.frames) == (fmt, subtype, rate, channels, len(mono))
    assert r.duration_s == pytest.approx(len(mono) / rate)
    assert r.size == (tmp_path / f"clip.{ext}").stat().st_size
    assert r.peak == pytest.approx(0.5, abs=0.01)
    assert r.clipped_samples == 0
    assert r.longest_clipped_run == 0
    assert abs(r.dc_offset) < 0.002
    assert -25 < r.level_db < -5
    # the 0.12 s of noise floor at each end is silence, the fades are not
    assert r.lead_silence_s == pytest.approx(0.12, abs=FRAME_S + 1e-9)
    assert r.trail_silence_s == pytest.approx(0.12, abs=FRAME_S + 1e-9)
    assert r.first_frame_db < -40
    assert r.last_frame_db < -40
    assert len(r.audio_hash) == 32
    assert int(r.audio_hash, 16) >= 0
    assert r.nonfinite_samples == 0
    speech = 0.45 + 0.6 + 0.5
    assert speech - 0.1 < r.active_s < speech + 0.1


def test_a_sine_has_the_level_its_mean_square_says(tmp_path):
    rate = 16000
    t = np.arange(rate) / rate
    r = record_of(write(tmp_path / "sine.wav", 0.5 * np.sin(2 * np.pi * 200 * t), rate, "FLOAT"))
    assert r.level_db == pytest.approx(20 * math.log10(0.5 / math.sqrt(2)), abs=0.05)
    assert r.first_frame_db == pytest.approx(0, abs=0.1)
    assert r.last_frame_db == pytest.approx(0, abs=0.1)
    assert r.lead_silence_s == 0
    assert r.trail_silence_s == 0
    assert r.active_s == pytest.approx(1.0)


def test_a_quiet_clean_recording_is_not_silence(tmp_path):
    """Silence is judged against the clip's own level: speech peaking at -46 dBFS over a -100 dBFS floor is all speech."""
    rate = 22050
    path = write(tmp_path / "quiet.wav", voiced(rate, SENTENCE, peak=0.005, floor=1e-5), rate, "PCM_24")
    r = record_of(path)
    assert r.level_db < -50
    assert r.lead_silence_s < FRAME_S
    assert r.trail_silence_s < FRAME_S
    assert r.active_s > 1.4


# --- clipping --------------------------------------------------------------------------


@pytest.mark.parametrize("ext,fmt,subtype", FORMATS)
def test_peak_normalised_to_099_is_not_clipped(tmp_path, ext, fmt, subtype):
    rate = 22050
    mono = voiced(rate, SENTENCE, peak=0.99, floor=0)
    r = record_of(write(tmp_path / f"norm.{ext}", mono, rate, subtype, fmt))
    assert r.peak == pytest.approx(0.99, abs=0.001)
    assert r.clipped_samples == 0
    assert r.longest_clipped_run == 0


@pytest.mark.parametrize("ext,fmt,subtype", [("wav", "WAV", "PCM_U8"), ("wav", "WAV", "ULAW"), ("aiff", "AIFF", "PCM_S8")])
def test_coarse_formats_are_full_scale_at_their_top_code(tmp_path, ext, fmt, subtype):
    """8-bit PCM tops out at 127/128 and mu-law at 0.98: 0.99 lands on the top code (full scale), 0.95 does not."""
    rate = 22050
    under = record_of(write(tmp_path / f"under.{ext}", voiced(rate, SENTENCE, peak=0.95, floor=0), rate, subtype, fmt))
    assert under.clipped_samples == 0
    at = record_of(write(tmp_path / f"at.{ext}", voiced(rate, SENTENCE, peak=0.99, floor=0), rate, subtype, fmt))
    assert 0 < at.clipped_samples < 1000


@pytest.mark.parametrize("ext,fmt,subtype", [*FORMATS, ("wav", "WAV", "PCM_U8"), ("wav", "WAV", "ULAW"), ("aiff", "AIFF", "PCM_S8")])
def test_hard_clipping_gives_long_runs(tmp_path, ext, fmt, subtype):
    rate = 22050
    mono = np.clip(voiced(rate, SENTENCE, peak=1.0, floor=0) * 3, -1, 1)
    r = record_of(write(tmp_path / f"clipped.{ext}", mono, rate, subtype, fmt))
    assert r.peak >= 0.98
    assert r.clipped_samples > 1000
    assert r.longest_clipped_run >= 10


def test_clipping_is_counted_per_channel(tmp_path):
    """A run is consecutive full-scale samples within one channel; all channels' samples are counted."""
    rate = 16000
    data = np.zeros((1000, 3))
    data[100:107, 1] = 1.0  # a run of 7 in channel 1
    data[200:204, 2] = -1.0  # a run of 4 in channel 2
    data[300, 0] = data[301, 1] = data[302, 2] = 1.0  # diagonal: three runs of 1, not one of 3
    r = record_of(write(tmp_path / "multi.wav", data, rate, "PCM_16"))
    assert r.channels == 3
    assert r.clipped_samples == 7 + 4 + 3
    assert r.longest_clipped_run == 7


def test_a_run_across_a_block_boundary_is_one_run(tmp_path, monkeypatch):
    rate = 16000
    data = np.zeros(4000)
    data[1500:1700] = 1.0  # a 200-sample run straddling the 1600-sample block below
    path = write(tmp_path / "run.wav", data, rate, "PCM_16")
    whole = record_of(path)
    monkeypatch.setattr(clip, "FRAMES_PER_BLOCK", 10)  # blocks of 1600 samples
    blocks = record_of(path)
    assert whole.longest_clipped_run == blocks.longest_clipped_run == 200
    assert whole.clipped_samples == blocks.clipped_samples == 200


@pytest.mark.parametrize("frames_per_block", [1, 3, 7])
def test_reading_in_blocks_gives_the_same_record(tmp_path, monkeypatch, frames_per_block):
    rate = 22050
    mono = np.clip(voiced(rate, [("pause", 0.3), *SENTENCE, ("cut", 0.2)], peak=1.0) * 1.5, -1, 1)
    path = write(tmp_path / "b.wav", stereo(mono), rate, "PCM_24")
    whole = record_of(path)
    monkeypatch.setattr(clip, "FRAMES_PER_BLOCK", frames_per_block)
    blocks = record_of(path)
    floats = {"dc_offset", "level_db", "first_frame_db", "last_frame_db"}  # float32 sums, in another order per block size
    exact = {f.name for f in dataclasses.fields(ClipRecord)} - floats
    assert {n: getattr(blocks, n) for n in exact} == {n: getattr(whole, n) for n in exact}
    for name in ("level_db", "first_frame_db", "last_frame_db"):
        assert getattr(blocks, name) == pytest.approx(getattr(whole, name), abs=1e-3)
    assert blocks.dc_offset == pytest.approx(whole.dc_offset, abs=1e-7)


# --- edges: silence, pauses, cut speech ------------------------------------------------------


@pytest.mark.parametrize("pad", ["silence", "pause"])
@pytest.mark.parametrize("rate", [16000, 22050, 44100])
def test_a_second_of_silence_at_either_end(tmp_path, pad, rate):
    mono = voiced(rate, [(pad, 1.0), *SENTENCE, (pad, 1.0)])
    r = record_of(write(tmp_path / "padded.wav", mono, rate))
    assert r.lead_silence_s == pytest.approx(1.0, abs=FRAME_S)
    assert r.trail_silence_s == pytest.approx(1.0, abs=FRAME_S)
    assert r.first_frame_db < -40
    assert r.last_frame_db < -40


def test_a_short_pause_mid_clip_is_not_edge_silence(tmp_path):
    rate = 22050
    mono = voiced(rate, [("speech", 0.8), ("pause", 0.15), ("speech", 0.8)], fade_s=0.005)
    r = record_of(write(tmp_path / "pause.wav", mono, rate))
    assert r.lead_silence_s < FRAME_S
    assert r.trail_silence_s < FRAME_S
    assert r.active_s == pytest.approx(1.6, abs=0.03)


def test_speech_cut_at_the_end_is_loud_in_the_last_frame(tmp_path):
    rate = 22050
    cut = record_of(write(tmp_path / "cut.wav", voiced(rate, [("pause", 0.2), *SENTENCE, ("cut", 0.3)]), rate))
    whole = record_of(write(tmp_path / "whole.wav", voiced(rate, [("pause", 0.2), *SENTENCE, ("pause", 0.2)]), rate))
    assert cut.last_frame_db > -6
    assert cut.trail_silence_s == 0
    assert whole.last_frame_db < -40
    assert cut.first_frame_db < -40  # it starts with a pause


def test_the_last_frame_is_the_last_10_ms_even_when_the_grid_leaves_a_sliver(tmp_path):
    """22050 Hz: 220-sample frames; 1001 samples leave a 121-sample partial frame, but the last frame read is the final 220."""
    rate = 22050
    data = np.zeros(1001 + 220 * 4)
    data[-200:] = 0.5  # loud only in the last 200 samples
    r = record_of(write(tmp_path / "sliver.wav", data, rate, "FLOAT"))
    assert r.last_frame_db > -1.5
    assert r.trail_silence_s == 0


# --- DC, silence, tiny clips, non-finite samples -------------------------------------------------


def test_dc_offset(tmp_path):
    rate = 16000
    layout = [("pause", 0.3), *SENTENCE, ("pause", 0.3)]
    clean = record_of(write(tmp_path / "clean.wav", voiced(rate, layout, peak=0.5), rate))
    r = record_of(write(tmp_path / "dc.wav", voiced(rate, layout, peak=0.5) + 0.1, rate))
    assert r.dc_offset == pytest.approx(0.1, abs=0.002)
    # the offset is not sound: the level, the silent edges and the edge frames are the clean clip's
    assert r.level_db == pytest.approx(clean.level_db, abs=0.01)
    assert r.lead_silence_s == clean.lead_silence_s
    assert r.trail_silence_s == clean.trail_silence_s
    assert r.first_frame_db < -40
    assert r.last_frame_db < -40
    assert record_of(write(tmp_path / "dcneg.flac", voiced(rate, layout) - 0.1, rate)).dc_offset == pytest.approx(-0.1, abs=0.002)


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("subtype", ["PCM_16", "FLOAT"])
def test_an_all_zero_clip(tmp_path, subtype):
    rate = 16000
    r = record_of(write(tmp_path / "zero.wav", np.zeros(rate * 2), rate, subtype))
    assert r.error is None
    assert r.level_db == -math.inf
    assert r.first_frame_db == -math.inf
    assert r.last_frame_db == -math.inf
    assert r.lead_silence_s == r.trail_silence_s == pytest.approx(2.0)
    assert r.peak == 0
    assert r.dc_offset == 0
    assert r.clipped_samples == 0
    assert r.active_s == 0


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("samples", [2, 6, 80, 220, 222])
def test_clips_shorter_than_a_frame_or_two(tmp_path, samples):
    rate = 22050
    data = 0.1 + 0.25 * (-1.0) ** np.arange(samples)  # +-0.25 around a DC of 0.1
    r = record_of(write(tmp_path / "tiny.wav", data, rate, "FLOAT"))
    assert r.error is None
    assert r.frames == samples
    assert r.level_db == pytest.approx(20 * math.log10(0.25), abs=0.01)
    assert r.dc_offset == pytest.approx(0.1, abs=1e-6)
    assert r.lead_silence_s == 0
    assert r.trail_silence_s == 0
    assert r.active_s == pytest.approx(samples / rate)


@pytest.mark.filterwarnings("error")
def test_a_single_sample_and_a_constant_are_silence(tmp_path):
    """The DC offset is not sound: one sample, or any constant, has no energy about its mean."""
    for name, data in (("one.wav", np.array([0.5])), ("constant.wav", np.full(16000, 0.3))):
        r = record_of(write(tmp_path / name, data, 16000, "PCM_16"))
        assert r.error is None
        assert r.level_db < -100
        assert r.peak == pytest.approx(data[0], abs=1e-4)
        assert r.dc_offset == pytest.approx(data[0], abs=1e-4)


@pytest.mark.filterwarnings("error")
def test_nan_and_inf_in_a_float_wav(tmp_path):
    rate = 16000
    mono = voiced(rate, SENTENCE, peak=0.5).astype(np.float32)
    mono[1000:1010] = np.nan
    mono[5000] = np.inf
    r = record_of(write(tmp_path / "nan.wav", mono, rate, "FLOAT"))
    assert r.error is None
    assert r.nonfinite_samples == 11
    numbers = [r.peak, r.dc_offset, r.level_db, r.first_frame_db, r.last_frame_db, r.lead_silence_s, r.trail_silence_s]
    assert not any(math.isnan(x) for x in numbers)
    assert r.peak == pytest.approx(0.5, abs=0.01)


# --- broken files ---------------------------------------------------------------------------------


def test_a_missing_file(tmp_path):
    r = record_of(tmp_path / "nope.wav")
    assert r.error_kind == "missing"
    assert r.error
    assert r.audio == str(tmp_path / "nope.wav")
    assert record_of(tmp_path / "not-a-dir.wav" / "x.wav").error_kind == "missing"


def test_a_zero_byte_file(tmp_path):
    (tmp_path / "empty.wav").write_bytes(b"")
    r = record_of(tmp_path / "empty.wav")
    assert r.error_kind == "empty"
    assert "0 bytes" in r.error


def test_a_header_with_no_frames_is_empty(tmp_path):
    r = record_of(write(tmp_path / "header-only.wav", np.zeros(0), 16000))
    assert r.error_kind == "empty"
    assert r.size == 44


def test_a_folder_is_unreadable(tmp_path):
    (tmp_path / "dir.wav").mkdir()
    assert record_of(tmp_path / "dir.wav").error_kind == "unreadable"


@pytest.mark.parametrize("name", ["text.wav", "text.flac", "text.ogg", "text.mp3", "noext"])
def test_a_file_that_is_not_audio_is_unreadable(tmp_path, name):
    (tmp_path / name).write_text("this is not audio, just text that happens to be called " + name + "\n" * 50)
    r = record_of(tmp_path / name)
    assert r.error_kind == "unreadable"
    assert r.error
    assert "Error opening" not in r.error  # libsndfile's words, without soundfile's prefix


@pytest.mark.parametrize("subtype,ext", [("PCM_16", "wav"), ("PCM_24", "wav"), ("FLOAT", "wav"), ("PCM_16", "aiff")])
def test_a_wav_whose_header_lies_about_its_length_is_truncated(tmp_path, subtype, ext):
    rate = 22050
    frames = rate * 2
    path = write(tmp_path / f"full.{ext}", voiced(rate, [("speech", 2.0)]), rate, subtype)
    data = (tmp_path / f"full.{ext}").read_bytes()
    (tmp_path / f"cut.{ext}").write_bytes(data[: len(data) // 2 + 1])  # the header still claims 2 s
    assert record_of(path).error is None
    r = record_of(tmp_path / f"cut.{ext}")
    assert r.error_kind == "truncated", r
    assert r.frames == frames
    assert r.duration_s == pytest.approx(2.0)
    assert 0 < r.extra["frames_read"] < frames
    assert r.sample_rate == rate
    assert r.subtype == subtype
    assert "claims" in r.error


def test_a_flac_cut_short_is_truncated(tmp_path):
    rate = 16000
    rng = np.random.default_rng(1)
    write(tmp_path / "full.flac", rng.uniform(-0.5, 0.5, rate * 3), rate)
    data = (tmp_path / "full.flac").read_bytes()
    (tmp_path / "cut.flac").write_bytes(data[: len(data) // 2])
    r = record_of(tmp_path / "cut.flac")
    assert r.error_kind == "truncated"
    assert r.frames == rate * 3


def test_garbage_never_raises(tmp_path):
    rng = np.random.default_rng(7)
    good = (tmp_path / "good.wav").read_bytes() if (tmp_path / "good.wav").exists() else None
    write(tmp_path / "good.wav", voiced(16000, SENTENCE), 16000)
    good = (tmp_path / "good.wav").read_bytes()
    for i in range(40):
        corrupt = bytearray(good)
        for at in rng.integers(0, 200, 8):
            corrupt[at] = rng.integers(0, 256)
        path = tmp_path / f"g{i}.wav"
        path.write_bytes(bytes(corrupt[: rng.integers(1, len(corrupt))]))
        r = record_of(path)
        assert r.error_kind in (None, "unreadable", "truncated", "empty"), r


# --- segments --------------------------------------------------------------------------------------


def test_offset_and_duration_read_only_the_segment(tmp_path):
    rate = 16000
    mono = voiced(rate, [("pause", 1.0), ("speech", 1.0), ("pause", 1.0)], floor=0)
    path = write(tmp_path / "long.wav", mono, rate)
    seg = record_of(path, offset=0.5, duration=1.5)
    assert seg.frames == int(1.5 * rate)
    assert seg.duration_s == pytest.approx(1.5)
    assert seg.lead_silence_s == pytest.approx(0.5, abs=FRAME_S)
    assert seg.trail_silence_s < FRAME_S
    assert seg.size == (tmp_path / "long.wav").stat().st_size
    alone = write(tmp_path / "alone.wav", mono[int(0.5 * rate) : int(2.0 * rate)], rate)
    assert seg.audio_hash == record_of(alone).audio_hash
    assert record_of(path, offset=1.0).frames == 2 * rate  # offset only: to the end
    assert record_of(path, duration=1.0).audio_hash == record_of(write(tmp_path / "head.wav", mono[:rate], rate)).audio_hash


def test_a_segment_past_the_end(tmp_path):
    rate = 16000
    path = write(tmp_path / "short.wav", voiced(rate, [("speech", 2.0)]), rate)
    over = record_of(path, offset=1.5, duration=0.8)  # 0.3 s past the end: within Kaldi's tolerance
    assert over.error is None
    assert over.frames == int(0.5 * rate)
    assert over.extra["segment_overshoot_s"] == pytest.approx(0.3)
    assert record_of(path, offset=1.0, duration=2.0).error_kind == "truncated"
    assert record_of(path, offset=5.0, duration=1.0).error_kind == "truncated"
    assert record_of(path, offset=5.0).error_kind == "truncated"
    assert record_of(path, offset=0.5, duration=0.0).error_kind == "empty"


# --- the hash --------------------------------------------------------------------------------------


def digest(data: bytes) -> str:
    """What audio_hash should be for these bytes: their XXH3-128, in hex."""
    import xxhash

    return xxhash.xxh3_128(data).hexdigest()


def test_the_same_samples_hash_alike_across_formats(tmp_path):
    rate = 22050
    samples = (voiced(rate, SENTENCE, peak=0.8) * 32767).astype(np.int16)
    hashes = {
        name: record_of(write(tmp_path / name, samples, rate, subtype, fmt)).audio_hash
        for name, fmt, subtype in [("a.wav", "WAV", "PCM_16"), ("a.flac", "FLAC", "PCM_16"), ("a.aiff", "AIFF", "PCM_16")]
    }
    as_float = record_of(write(tmp_path / "f.wav", samples / 32768.0, rate, "FLOAT")).audio_hash
    assert len(set(hashes.values())) == 1
    assert as_float == hashes["a.wav"]
    # it is the hash of the int16 samples, interleaved
    assert hashes["a.wav"] == digest(samples.astype("<i2").tobytes())
    other = samples.copy()
    other[1000] += 1
    assert record_of(write(tmp_path / "b.wav", other, rate)).audio_hash != hashes["a.wav"]


def test_24_bit_and_stereo_hash_alike_across_formats(tmp_path):
    rate = 44100
    data = stereo(voiced(rate, SENTENCE, peak=0.7))
    wav = record_of(write(tmp_path / "a.wav", data, rate, "PCM_24"))
    flac = record_of(write(tmp_path / "a.flac", sf.read(str(tmp_path / "a.wav"), dtype="int32")[0], rate, "PCM_24"))
    assert wav.audio_hash == flac.audio_hash
    # the same as libsndfile's own int16 reading of the file, channels interleaved
    as_int16 = sf.read(str(tmp_path / "a.wav"), dtype="int16")[0]
    assert wav.audio_hash == digest(as_int16.astype("<i2").tobytes())


# --- purity ------------------------------------------------------------------------------------------


def test_records_pickle_and_analysis_is_repeatable(tmp_path):
    rate = 16000
    path = write(tmp_path / "p.flac", voiced(rate, SENTENCE), rate)
    first = record_of(path)
    assert pickle.loads(pickle.dumps(first)) == first
    assert record_of(path) == first
    ref = ClipRef(path, 0.1, 0.5)
    assert pickle.loads(pickle.dumps(ref)) == ref


def test_importing_the_module_loads_neither_numpy_nor_soundfile(tmp_path):
    probe = (
        "import sys; from trainproof.data import clip, engine, cache; from trainproof.data.model import ClipRef; "
        f"r = clip.analyze(ClipRef({str(tmp_path / 'missing.wav')!r})); assert r.error_kind == 'missing'; "
        "print(sorted(m for m in ('numpy', 'soundfile') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True)
    assert result.stdout.strip() == "[]"
