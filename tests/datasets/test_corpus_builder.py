"""The speech corpus builder does what it says: read back with soundfile, line by line."""

from __future__ import annotations

import csv
import json
import struct
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from tests.datasets import speech
from tests.datasets.speech import Corpus, Loc

FULL_SCALE_16 = 32767


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One clean 12-clip corpus per layout, built once; tests break copies of it."""
    cache: dict[tuple[str, int], Corpus] = {}

    def get(layout: str, n: int = 12) -> Corpus:
        if (layout, n) not in cache:
            cache[layout, n] = speech.clean_corpus(tmp_path_factory.mktemp(f"{layout}{n}"), n=n, layout=layout)
        return cache[layout, n]

    return get


@pytest.fixture
def fresh(built, tmp_path):
    copies = iter(range(1000))

    def get(layout: str = "nemo", n: int = 12) -> Corpus:
        return built(layout, n).copy(tmp_path / f"copy{next(copies)}")

    return get


def int16(path: Path) -> np.ndarray:
    return sf.read(str(path), dtype="int16", always_2d=True)[0]


def peak_db(path: Path) -> float:
    x, _ = sf.read(str(path), dtype="float64")
    return 20 * np.log10(np.abs(x).max() + 1e-12)


def longest_full_scale_run(path: Path) -> int:
    x = int16(path)
    best = 0
    for channel in x.T:
        full = np.concatenate(([0], (np.abs(channel.astype(int)) >= FULL_SCALE_16).astype(int), [0]))
        edges = np.flatnonzero(np.diff(full))
        if edges.size:
            best = max(best, int((edges[1::2] - edges[::2]).max()))
    return best


def edges_s(path: Path) -> tuple[float, float, np.ndarray, float]:
    """Leading and trailing silence (10 ms frames 40 dB under the 95th-percentile frame), the frame energies and that level."""
    x, rate = sf.read(str(path), dtype="float64")
    if x.ndim > 1:
        x = x.mean(axis=1)
    db = speech._frame_db(x, rate)
    level = float(np.percentile(db, 95))
    active = np.flatnonzero(db > level - 40)
    return active[0] * 0.01, (len(db) - 1 - active[-1]) * 0.01, db, level


def letters_per_s(clip: speech.Clip) -> float:
    lead, trail, _, _ = edges_s(clip.audio)
    return speech.letters(clip.text) / (speech.duration_of(clip.audio) - lead - trail)


def robust_z(values: list[float]) -> np.ndarray:
    v = np.asarray(values)
    median = np.median(v)
    return (v - median) / (1.4826 * np.median(np.abs(v - median)))


def line_at(loc: Loc) -> str:
    return loc.manifest.read_bytes().decode("utf-8-sig").replace("\r\n", "\n").split("\n")[loc.line - 1]


def points_at(corpus: Corpus, loc: Loc, id: str) -> bool:
    """The manifest line ``loc`` names clip ``id`` and the audio file ``loc.audio``, the way the layout says it."""
    if corpus.layout == "parquet":  # the row of that number in the shard: its id, and the file's bytes (or its path, when gone)
        import pyarrow.parquet as pq

        row = pq.read_table(loc.manifest).slice(loc.line - 1, 1).to_pylist()[0]
        held = loc.audio.read_bytes() if loc.audio.is_file() else None
        return row["id"] == id and (row["audio"]["bytes"] == held if held is not None else row["audio"]["path"] == str(loc.audio))
    line = line_at(loc)
    if corpus.layout == "ljspeech":
        return line.split("|")[0] == id and loc.audio.parent == corpus.root / "wavs" and loc.audio.stem == id
    if corpus.layout == "nemo":
        return (loc.manifest.parent / json.loads(line)["audio_filepath"]).resolve() == loc.audio.resolve()
    if corpus.layout == "csv":
        return (loc.manifest.parent / next(csv.reader([line]))[0]).resolve() == loc.audio.resolve()
    if corpus.layout == "kaldi":
        scp = dict(row.split(" ", 1) for row in (corpus.path / "wav.scp").read_text().splitlines())
        return line.split(" ")[0] == id and Path(scp[id]) == loc.audio
    return loc.manifest == loc.audio.with_suffix(".txt") and loc.line == 1


# --- audio ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("suffix", "rate", "channels", "subtype"),
    [(".wav", 22050, 1, None), (".flac", 16000, 2, None), (".wav", 44100, 1, "PCM_24"), (".wav", 22050, 1, "FLOAT")],
)
def test_voiced_clip_is_written_as_asked(tmp_path, suffix, rate, channels, subtype):
    path = speech.voiced_clip(
        tmp_path / f"a{suffix}", 2.5, rate, "six words of a plain sentence", 120.0, seed=1, channels=channels, subtype=subtype
    )
    info = sf.info(str(path))
    assert (info.samplerate, info.channels, info.frames) == (rate, channels, round(2.5 * rate))
    assert info.subtype == (subtype or "PCM_16")
    assert info.format == ("FLAC" if suffix == ".flac" else "WAV")
    assert -3.2 < peak_db(path) < -2.8


def test_voiced_clip_is_speech_shaped_and_deterministic(tmp_path):
    a = speech.voiced_samples(3.0, 22050, "one two three four five six", 110.0, seed=4)
    b = speech.voiced_samples(3.0, 22050, "one two three four five six", 110.0, seed=4)
    c = speech.voiced_samples(3.0, 22050, "one two three four five six", 110.0, seed=5)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    path = speech.write_audio(tmp_path / "a.wav", a, 22050)
    lead, trail, db, level = edges_s(path)
    assert 0.03 <= lead < 0.15
    assert 0.03 <= trail < 0.15
    # pauses between words: runs of quiet frames inside the clip, 80-200 ms long
    quiet = np.concatenate(([0], (db < level - 30).astype(int), [0]))
    runs = np.flatnonzero(np.diff(quiet)).reshape(-1, 2)
    inner = [(b - a) * 0.01 for a, b in runs if a > 0 and b < len(db)]
    assert len(inner) >= 3
    assert all(0.03 <= r <= 0.22 for r in inner)
    # energy where formants put it: most below 4 kHz, F0 harmonics present
    spectrum = np.abs(np.fft.rfft(a)) ** 2
    f = np.fft.rfftfreq(len(a), 1 / 22050)
    assert spectrum[f < 4000].sum() / spectrum.sum() > 0.95
    assert spectrum[(f > 80) & (f < 140)].sum() > spectrum[(f > 20) & (f < 70)].sum() * 10


def test_espeak_clip_is_real_speech(tmp_path):
    speech.needs_espeak()
    short = speech.espeak_clip(tmp_path / "short.wav", "Hello there.", speed=140)
    long = speech.espeak_clip(tmp_path / "long.wav", "Hello there, the birch canoe slid on the smooth planks near the shore.", speed=140)
    for path in (short, long):
        info = sf.info(str(path))
        assert (info.samplerate, info.channels, info.subtype) == (22050, 1, "PCM_16")
        assert -3.2 < peak_db(path) < -2.8
        lead, trail, db, level = edges_s(path)
        assert level > -30  # not silent
        assert lead == pytest.approx(speech.EDGE_LEAD_S, abs=0.02)
        assert trail == pytest.approx(speech.EDGE_TRAIL_S, abs=0.02)
    assert speech.duration_of(long) > 3 * speech.duration_of(short)
    # espeak's letters per second at ESPEAK_WPM is what voiced clips are calibrated to
    clip = speech.Clip("x", long, "Hello there, the birch canoe slid on the smooth planks near the shore.")
    assert letters_per_s(clip) == pytest.approx(speech.LETTERS_PER_S, rel=0.2)


def test_espeak_clip_resamples_to_the_rate_asked(tmp_path):
    speech.needs_espeak()
    base = speech.espeak_clip(tmp_path / "a.wav", "The juice of lemons makes fine punch.", speed=140)
    for rate, suffix in ((16000, ".wav"), (44100, ".flac")):
        path = speech.espeak_clip(tmp_path / f"b{rate}{suffix}", "The juice of lemons makes fine punch.", rate, speed=140)
        assert sf.info(str(path)).samplerate == rate
        assert speech.duration_of(path) == pytest.approx(speech.duration_of(base), abs=1e-3)
        assert -3.5 < peak_db(path) < -2.5


# --- the clean corpus ----------------------------------------------------------


@pytest.mark.parametrize("layout", speech.LAYOUTS)
def test_clean_corpus_is_clean(tmp_path, layout):
    started = time.perf_counter()
    corpus = speech.clean_corpus(tmp_path, n=12, layout=layout)
    elapsed = time.perf_counter() - started
    assert elapsed < 5
    assert corpus.size() < (4_000_000 if layout == "parquet" else 2_000_000)  # parquet: the clips' files and their bytes in the shards
    assert len({c.text for c in corpus.clips}) == 12
    assert len({c.speaker for c in corpus.clips}) >= 2
    assert len({c.id for c in corpus.clips}) == 12
    for clip in corpus.clips:
        info = sf.info(str(clip.audio))
        assert (info.samplerate, info.channels, info.subtype) == (22050, 1, "PCM_16")
        assert 1.45 <= info.frames / info.samplerate <= 6.05
        assert peak_db(clip.audio) < -1.0
        assert longest_full_scale_run(clip.audio) == 0
        lead, trail, db, level = edges_s(clip.audio)
        assert lead < 0.15
        assert trail < 0.15
        assert db[0] < level - 20  # no speech cut at either edge
        assert db[-1] < level - 20
        assert abs(sf.read(str(clip.audio))[0].mean()) < 0.01
        assert all(ch.isalpha() or ch in " .,'" for ch in clip.text)
        assert 9 < letters_per_s(clip) < 17


def test_clean_corpus_mixes_espeak_and_voiced_clips(built):
    speech.needs_espeak()
    corpus = built("nemo")
    assert {c.source for c in corpus.clips} == {"espeak", "voiced"}
    seconds = sorted(c.seconds for c in corpus.clips)
    assert seconds[0] == pytest.approx(1.5)
    assert seconds[-1] > 5


def test_clean_corpus_without_espeak_is_all_voiced(tmp_path):
    corpus = speech.clean_corpus(tmp_path, n=6, espeak=False)
    assert {c.source for c in corpus.clips} == {"voiced"}


def test_clean_corpus_text_rates_agree(built):
    """No clip of a clean 24-clip corpus reads far from the median (the text-rate rule must stay quiet on it)."""
    corpus = built("nemo", 24)
    z = robust_z([letters_per_s(c) for c in corpus.clips])
    assert np.abs(z).max() < 3


def test_clean_corpus_is_deterministic(tmp_path):
    a = speech.clean_corpus(tmp_path / "a", n=6, layout="ljspeech")
    b = speech.clean_corpus(tmp_path / "b", n=6, layout="ljspeech")
    assert a.manifest.read_bytes() == b.manifest.read_bytes()
    for x, y in zip(a.clips, b.clips):
        assert x.audio.read_bytes() == y.audio.read_bytes()


# --- layouts -------------------------------------------------------------------


@pytest.mark.parametrize("layout", speech.LAYOUTS)
def test_every_line_points_at_its_clip(built, layout):
    corpus = built(layout)
    assert corpus.path.exists()
    for clip, loc in zip(corpus.clips, corpus.locs):
        assert loc.audio == clip.audio
        assert points_at(corpus, loc, clip.id)
    assert corpus.index[corpus.clips[3].id] == corpus.locs[3]


def test_layout_files_are_what_trainers_read(built):
    lj = built("ljspeech")
    first = lj.manifest.read_text(encoding="utf-8").splitlines()[0].split("|")
    assert first == [lj.clips[0].id, lj.clips[0].text, lj.clips[0].text]
    nemo = built("nemo")
    record = json.loads(nemo.manifest.read_text(encoding="utf-8").splitlines()[0])
    assert set(record) == {"audio_filepath", "text", "duration", "speaker"}
    assert record["duration"] == pytest.approx(nemo.clips[0].seconds, abs=1e-3)
    assert not Path(record["audio_filepath"]).is_absolute()
    table = built("csv").manifest.read_text(encoding="utf-8").splitlines()
    assert table[0] == "path,text,speaker"
    assert built("csv").locs[0].line == 2
    kaldi = built("kaldi")
    assert sorted(p.name for p in kaldi.path.iterdir()) == ["text", "utt2spk", "wav.scp"]
    assert kaldi.manifest == kaldi.path / "text"
    txt = built("folder").clips[0].audio.with_suffix(".txt")
    assert txt.read_text(encoding="utf-8").strip() == built("folder").clips[0].text


def test_public_writers_return_the_manifest_and_an_index(tmp_path, built):
    clips = built("nemo").clips
    for writer, target in (
        (speech.nemo, tmp_path / "m.jsonl"),
        (speech.csv_manifest, tmp_path / "m.tsv"),
        (speech.kaldi, tmp_path / "kaldi"),
    ):
        path, index = writer(target, clips)
        assert path == target
        assert set(index) == {c.id for c in clips}
        assert index[clips[2].id].line == (3 if writer is not speech.csv_manifest else 4)
    path, index = speech.ljspeech(tmp_path / "lj", clips, header=True, columns=2)
    assert path.read_text().splitlines()[0] == "id|text"
    assert index[clips[0].id].line == 2
    path, index = speech.kaldi(tmp_path / "seg", clips, segments=True)
    assert (path / "segments").read_text().splitlines()[0].startswith(f"{clips[0].id} {clips[0].id}-rec 0.00 ")


# --- faults --------------------------------------------------------------------

APPLICABLE = {
    "malformed_json": {"nemo"},
    "wrong_columns": {"ljspeech", "csv"},
    "duration_claim": {"nemo"},
    "bom": {"ljspeech", "nemo", "csv", "kaldi"},
    "crlf": {"ljspeech", "nemo", "csv", "kaldi"},
    "blank_line": {"ljspeech", "nemo", "csv", "kaldi"},
    "conflicting_text": {"ljspeech", "nemo", "csv", "kaldi"},
    "duplicate_id": {"ljspeech", "nemo", "csv", "kaldi"},
    "unlisted_file": {"ljspeech", "nemo", "csv", "kaldi", "folder"},  # a Parquet shard holds its clips: nothing beside it is unlisted
    "split_leak_audio": {"parquet"},
    "split_leak_text": {"parquet"},
}
CASES = [(name, layout) for name in speech.FAULTS for layout in speech.LAYOUTS if layout in APPLICABLE.get(name, speech.LAYOUTS)]


@pytest.mark.parametrize(("name", "layout"), CASES)
def test_every_fault_points_at_the_line_and_file_it_broke(fresh, name, layout):
    corpus = fresh(layout)
    fault = speech.FAULTS[name](corpus)
    assert fault.name == name
    if fault.id is not None and name not in ("malformed_json", "wrong_columns"):
        assert points_at(corpus, Loc(fault.line, fault.audio, fault.manifest), fault.id)
    for clip, loc in zip(corpus.clips, corpus.locs):  # every other line still points at its clip
        if clip.raw is None:
            assert points_at(corpus, loc, clip.id)


@pytest.mark.parametrize("name", ["malformed_json", "duration_claim", "wrong_columns", "bom"])
def test_faults_refuse_layouts_without_them(fresh, name):
    with pytest.raises(speech.NotApplicableFault):
        speech.FAULTS[name](fresh("folder"))


def test_clipped(fresh):
    corpus = fresh()
    fault = speech.clipped(corpus)
    assert longest_full_scale_run(fault.audio) >= 10
    assert (np.abs(int16(fault.audio).astype(int)) >= FULL_SCALE_16).mean() > 0.01
    assert all(longest_full_scale_run(c.audio) == 0 for c in corpus.clips if c.id != fault.id)


def test_padded_silence(fresh):
    corpus = fresh()
    before = corpus.clip(speech._pick(corpus, None).id).seconds
    fault = speech.padded_silence(corpus)
    lead, trail, _, _ = edges_s(fault.audio)
    assert lead > 1.5
    assert trail > 1.5
    assert speech.duration_of(fault.audio) == pytest.approx(before + 3.0, abs=0.01)
    x, rate = sf.read(str(fault.audio))
    assert 20 * np.log10(np.abs(x[: int(1.5 * rate)]).max()) < -55
    assert json.loads(line_at(corpus.loc(fault.id)))["duration"] == pytest.approx(before + 3.0, abs=0.01)


def test_cut_end(fresh):
    fault = speech.cut_end(fresh())
    lead, trail, db, level = edges_s(fault.audio)
    assert trail == 0
    assert db[-1] > level - 6


def test_dc_offset_silent_rate_channels_subtype(fresh):
    corpus = fresh()
    fault = speech.dc_offset(corpus)
    assert sf.read(str(fault.audio))[0].mean() == pytest.approx(0.2, abs=0.01)
    fault = speech.silent(corpus, corpus.clips[0].id)
    assert peak_db(fault.audio) < -55
    assert corpus.clip(fault.id).text
    fault = speech.other_rate(corpus, corpus.clips[1].id)
    assert sf.info(str(fault.audio)).samplerate == 44100
    assert speech.duration_of(fault.audio) == pytest.approx(corpus.clips[1].seconds, abs=1e-3)
    fault = speech.stereo(corpus, corpus.clips[2].id)
    assert sf.info(str(fault.audio)).channels == 2
    fault = speech.other_subtype(corpus, corpus.clips[3].id)
    assert sf.info(str(fault.audio)).subtype == "PCM_24"
    fault = speech.other_subtype(corpus, corpus.clips[4].id, "FLOAT")
    assert sf.info(str(fault.audio)).subtype == "FLOAT"


def test_broken_files(fresh):
    corpus = fresh()
    fault = speech.truncated(corpus)
    data = fault.audio.read_bytes()
    at = data.index(b"data")
    claimed = struct.unpack("<I", data[at + 4 : at + 8])[0]
    assert claimed > len(data) - at - 8  # the header lies about the length
    fault = speech.empty_file(corpus, corpus.clips[0].id)
    assert fault.audio.stat().st_size == 0
    fault = speech.not_audio(corpus, corpus.clips[1].id)
    with pytest.raises(sf.LibsndfileError):
        sf.info(str(fault.audio))
    fault = speech.missing_file(corpus, corpus.clips[2].id)
    assert not fault.audio.exists()
    assert fault.audio.name in line_at(corpus.loc(fault.id))
    fault = speech.unlisted_file(corpus)
    assert fault.audio.exists()
    assert fault.line is None
    assert fault.audio.name not in corpus.manifest.read_text()


def test_duplicates_and_conflicts(fresh):
    corpus = fresh()
    fault = speech.duplicate_audio(corpus)
    original = fault.also[0]
    assert np.array_equal(int16(fault.audio), int16(original.audio))
    assert fault.audio != original.audio
    assert json.loads(line_at(Loc(fault.line, fault.audio, fault.manifest)))["text"] == json.loads(line_at(original))["text"]
    assert fault.line == original.line + 1
    corpus = fresh()
    fault = speech.conflicting_text(corpus)
    mine, theirs = json.loads(line_at(Loc(fault.line, fault.audio, fault.manifest))), json.loads(line_at(fault.also[0]))
    assert mine["audio_filepath"] == theirs["audio_filepath"]
    assert mine["text"] != theirs["text"]
    corpus = fresh()
    fault = speech.duplicate_id(corpus)
    assert line_at(Loc(fault.line, fault.audio, fault.manifest)) == line_at(fault.also[0])
    assert fault.line == len(corpus.clips)


def test_swapped_transcripts_read_far_from_the_median(fresh):
    corpus = fresh("nemo", 24)
    fault = speech.swapped_transcripts(corpus)
    assert corpus.clip(fault.id).seconds == pytest.approx(1.5)
    z = dict(zip([c.id for c in corpus.clips], robust_z([letters_per_s(c) for c in corpus.clips])))
    other = next(c.id for c in corpus.clips if corpus.loc(c.id) == fault.also[0])
    assert z[fault.id] > 8
    assert z[other] < -8
    assert sorted(abs(v) for v in z.values())[-3] < 3  # nothing else moved


def test_transcript_faults(fresh):
    corpus = fresh()
    text = lambda fault: json.loads(line_at(Loc(fault.line, fault.audio, fault.manifest)))["text"]  # noqa: E731
    assert text(speech.empty_transcript(corpus)) == ""
    assert text(speech.unnormalized(corpus)) == "Dr. Smith paid $40 on 3/4."
    assert "\u200b" in text(speech.invisible_char(corpus, corpus.clips[0].id))
    assert "\u0007" in text(speech.invisible_char(corpus, corpus.clips[1].id, "\u0007"))
    fault = speech.other_script(corpus)
    assert text(fault) == speech.CYRILLIC
    assert peak_db(fault.audio) > -4
    before = corpus.clips[2].text
    fault = speech.homoglyph(corpus, corpus.clips[2].id)
    assert sum("\u0400" <= ch <= "\u04ff" for ch in text(fault)) == 2
    assert text(fault).translate({ord(v): k for k, v in speech.HOMOGLYPHS.items()}) == before
    fault = speech.duplicate_transcript(corpus)
    assert text(fault) == json.loads(line_at(fault.also[0]))["text"]
    fault = speech.duration_claim(corpus)
    assert json.loads(line_at(corpus.loc(fault.id)))["duration"] == 9.0
    assert speech.duration_of(fault.audio) == pytest.approx(3.0, abs=0.5)


def test_duration_faults(fresh):
    corpus = fresh()
    fault = speech.too_short(corpus)
    assert speech.duration_of(fault.audio) == pytest.approx(0.3, abs=1e-3)
    fault = speech.too_long(corpus, corpus.clips[0].id)
    assert speech.duration_of(fault.audio) == pytest.approx(25.0, abs=1e-3)
    assert 9 < letters_per_s(corpus.clip(fault.id)) < 17


def test_manifest_faults(fresh):
    corpus = fresh()
    fault = speech.malformed_json(corpus)
    lines = corpus.manifest.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if number == fault.line:
            with pytest.raises(json.JSONDecodeError):
                json.loads(line)
        else:
            json.loads(line)
    corpus = fresh("ljspeech")
    fault = speech.wrong_columns(corpus)
    counts = [len(line.split("|")) for line in corpus.manifest.read_text(encoding="utf-8").splitlines()]
    assert counts[fault.line - 1] == 5
    assert counts.count(3) == len(counts) - 1
    corpus = fresh("ljspeech")
    speech.bom(corpus)
    speech.crlf(corpus)
    fault = speech.blank_line(corpus, after=4)
    raw = corpus.manifest.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    assert raw.count(b"\r\n") == raw.count(b"\n") == len(corpus.clips) + 1
    assert fault.line == 5
    assert line_at(Loc(5, Path(), corpus.manifest)) == ""
    assert corpus.loc(corpus.clips[4].id).line == 6
    assert all(points_at(corpus, loc, clip.id) for clip, loc in zip(corpus.clips, corpus.locs))
