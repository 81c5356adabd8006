"""Lhotse manifests (trainproof/data/layouts/lhotse.py), written by lhotse itself from the shared corpus's real audio
(the Kaldi yesno recordings): read as lhotse loads them, judged as the NeMo manifest of the same clips is, and broken
one way at a time (a gzip that ends early, a line that is not JSON, sources trainproof cannot read)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("soundfile")
pytest.importorskip("pandas")
lhotse = pytest.importorskip("lhotse")

import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402

from trainproof.cli import main  # noqa: E402
from trainproof.commands import judge  # noqa: E402
from trainproof.data.manifest import read_manifest  # noqa: E402
from trainproof.io.errors import InputError  # noqa: E402
from trainproof.report import Subject  # noqa: E402

YESNO = Path("public") / "datasets" / "speech" / "jmolina116__kaldi-yesno-tutorial__yesno"
CLIPS = 12


def judged(path: Path | str, **options) -> Subject:
    return judge("data", [str(path)], no_cache=True, jobs=1, **options).subjects[0]


def findings(subject: Subject) -> list[tuple[str, str, object]]:
    """What a subject's findings say, without where: rule, level, how many clips."""
    return sorted((f.rule_id, f.level.name, f.values.get("count")) for f in subject.findings)


def _yesno_wavs(corpus: Path) -> list[Path]:
    waves = corpus / YESNO / "waves_yesno"
    if not waves.is_dir():
        pytest.skip(f"{waves} is not in the corpus")
    return sorted(waves.glob("*.wav"))[:CLIPS]


def _text(stem: str) -> str:
    return " ".join("YES" if bit == "1" else "NO" for bit in stem.split("_"))


def write_lhotse(wavs: list[Path], folder: Path, texts: dict[str, str], prefix: str = "yesno", split: str = "train") -> dict[str, Path]:
    """``wavs`` as a recipe writes them, with lhotse: recordings, supervisions (one a recording, the whole of it) and cuts."""
    from lhotse import CutSet, Recording, RecordingSet, SupervisionSegment, SupervisionSet

    recordings = RecordingSet.from_recordings(Recording.from_file(str(wav)) for wav in wavs)
    supervisions = SupervisionSet.from_segments(
        SupervisionSegment(id=r.id, recording_id=r.id, start=0.0, duration=r.duration, channel=0, text=texts[r.id], speaker="global", language="Hebrew")
        for r in recordings
    )
    folder.mkdir(parents=True, exist_ok=True)
    paths = {kind: folder / f"{prefix}_{kind}_{split}.jsonl.gz" for kind in ("recordings", "supervisions", "cuts")}
    recordings.to_file(str(paths["recordings"]))
    supervisions.to_file(str(paths["supervisions"]))
    CutSet.from_manifests(recordings=recordings, supervisions=supervisions).to_file(str(paths["cuts"]))
    return paths


def write_nemo(wavs: list[Path], path: Path, texts: dict[str, str]) -> Path:
    lines = [json.dumps({"audio_filepath": str(wav), "duration": sf.info(str(wav)).duration, "text": texts[wav.stem]}) for wav in wavs]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def faulty(corpus, tmp_path) -> dict[str, Path]:
    """Twelve yesno clips copied, then broken one fault each: clip 1 resampled to 16 kHz (mixed rates), clip 2 clipped,
    clip 3's transcript empty, clip 4's file deleted after the manifests were written (missing). Lhotse's manifests of
    them and the NeMo manifest of the same clips."""
    audio = tmp_path / "audio"
    audio.mkdir()
    wavs = [Path(shutil.copy(wav, audio / wav.name)) for wav in _yesno_wavs(corpus)]
    samples, rate = sf.read(str(wavs[1]))
    sf.write(str(wavs[1]), np.repeat(samples, 2), rate * 2, subtype="PCM_16")
    samples, rate = sf.read(str(wavs[2]))
    sf.write(str(wavs[2]), np.clip(samples * 8.0, -1.0, 1.0), rate, subtype="PCM_16")
    texts = {wav.stem: _text(wav.stem) for wav in wavs}
    texts[wavs[3].stem] = ""
    paths = write_lhotse(wavs, tmp_path / "data" / "manifests", texts)
    paths["nemo"] = write_nemo(wavs, tmp_path / "nemo_manifest.json", texts)
    wavs[4].unlink()
    paths["missing"] = wavs[4]
    return paths


def test_lhotse_manifests_are_judged_as_the_nemo_manifest_of_the_same_clips(faulty):
    nemo = judged(faulty["nemo"])
    expected = findings(nemo)
    rules = {rule for rule, _, _ in expected}
    assert {"TP-DATA-MISSING", "TP-DATA-SAMPLE-RATE", "TP-DATA-CLIPPING", "TP-DATA-EMPTY-TEXT"} <= rules, expected
    for given in (faulty["supervisions"], faulty["recordings"], faulty["cuts"]):
        subject = judged(given)
        assert subject.format == "lhotse"
        assert subject.summary["clips"] == nemo.summary["clips"] == CLIPS
        assert subject.summary["readable"] == nemo.summary["readable"] == CLIPS - 1
        assert findings(subject) == expected, given.name
    missing = next(f for f in judged(faulty["supervisions"]).findings if f.rule_id == "TP-DATA-MISSING")
    assert missing.file == str(faulty["supervisions"]) and missing.line == 5  # the supervision's line, in the file one opens
    cut_missing = next(f for f in judged(faulty["cuts"]).findings if f.rule_id == "TP-DATA-MISSING")
    assert cut_missing.file == str(faulty["cuts"]) and cut_missing.line == 5


def test_a_wrong_recording_duration_is_the_duration_claim_nemo_reports(corpus, tmp_path):
    wavs = _yesno_wavs(corpus)[:3]
    paths = write_lhotse(wavs, tmp_path, {wav.stem: _text(wav.stem) for wav in wavs})
    for kind in ("recordings", "supervisions"):  # a recipe that wrote twice the duration, everywhere
        records = [json.loads(line) for line in gzip.open(paths[kind], "rt")]
        for record in records:
            record["duration"] *= 2
        with gzip.open(paths[kind], "wt") as handle:
            handle.write("".join(json.dumps(record) + "\n" for record in records))
    claims = [f for f in judged(paths["supervisions"]).findings if f.rule_id == "TP-DATA-DURATION-CLAIM"]
    assert claims and claims[0].values["count"] == 3


def test_what_trainproof_reads_is_what_lhotse_loads(faulty):
    from lhotse import CutSet, RecordingSet, SupervisionSet

    recordings = {r.id: r for r in RecordingSet.from_file(str(faulty["recordings"]))}
    loaded = [
        (s.id, recordings[s.recording_id].sources[0].source, s.start, s.duration, s.text, s.speaker)
        for s in SupervisionSet.from_file(str(faulty["supervisions"]))
    ]
    cuts = [
        (s.id, c.recording.sources[0].source, c.start + s.start, s.duration, s.text, s.speaker)
        for c in CutSet.from_file(str(faulty["cuts"]))
        for s in c.supervisions
    ]
    assert cuts == loaded
    for given in (faulty["supervisions"], faulty["cuts"]):
        read = [(e.id, e.audio, e.offset or 0.0, e.duration, e.text, e.speaker) for e in read_manifest(given).entries]
        assert read == loaded


def test_segments_of_a_recording_are_read_at_their_offsets(corpus, tmp_path):
    from lhotse import CutSet, Recording, RecordingSet, SupervisionSegment, SupervisionSet

    wav = _yesno_wavs(corpus)[0]
    recording = Recording.from_file(str(wav))
    words = _text(wav.stem).split()
    step = recording.duration / len(words)
    supervisions = SupervisionSet.from_segments(
        SupervisionSegment(id=f"w{i}", recording_id=recording.id, start=round(i * step, 3), duration=round(step, 3), text=word)
        for i, word in enumerate(words)
    )
    RecordingSet.from_recordings([recording]).to_file(str(tmp_path / "recordings.jsonl"))
    supervisions.to_file(str(tmp_path / "supervisions.jsonl"))
    cuts = CutSet.from_manifests(recordings=RecordingSet.from_recordings([recording]), supervisions=supervisions).trim_to_supervisions()
    cuts.to_file(str(tmp_path / "words_cuts.jsonl.gz"))
    pair = read_manifest(tmp_path / "supervisions.jsonl").entries
    assert [(e.id, e.offset, e.duration) for e in pair] == [(s.id, s.start, s.duration) for s in supervisions]
    trimmed = read_manifest(tmp_path / "words_cuts.jsonl.gz").entries
    assert [(e.id, e.offset, e.duration) for e in trimmed] == [(s.id, pytest.approx(c.start + s.start), s.duration) for c in cuts for s in c.supervisions]
    subject = judged(tmp_path / "supervisions.jsonl")
    assert subject.summary["clips"] == subject.summary["readable"] == len(words)


def test_relative_sources_resolve_from_the_working_directory_or_the_recipe_root(corpus, tmp_path, monkeypatch):
    recipe = tmp_path / "egs" / "yesno"
    (recipe / "download").mkdir(parents=True)
    wavs = [Path(shutil.copy(wav, recipe / "download" / wav.name)) for wav in _yesno_wavs(corpus)[:3]]
    monkeypatch.chdir(recipe)
    paths = write_lhotse([Path("download") / wav.name for wav in wavs], Path("data/manifests"), {wav.stem: _text(wav.stem) for wav in wavs})
    manifest = read_manifest(paths["cuts"])
    assert [e.audio for e in manifest.entries] == [f"download/{wav.name}" for wav in wavs]
    monkeypatch.chdir(tmp_path)  # run from elsewhere: the recipe's root, two folders above the manifests, is found
    subject = judged(recipe / "data" / "manifests" / "yesno_cuts_train.jsonl.gz")
    assert subject.summary["readable"] == 3
    assert any("two folders above the manifest's" in note for note in subject.notes)


def test_a_recipe_folder_of_several_splits_is_one_dataset_and_its_leaks_are_found(corpus, tmp_path, capsys):
    wavs = _yesno_wavs(corpus)
    texts = {wav.stem: _text(wav.stem) for wav in wavs}
    folder = tmp_path / "manifests"
    write_lhotse(wavs[:4], folder, texts, split="train")
    dev = write_lhotse(wavs[4:6], folder, texts, split="dev")
    dev["cuts"].unlink()  # the dev split as recordings and supervisions only
    manifest = read_manifest(folder)
    assert manifest.splits == ("train",) * 4 + ("dev",) * 2  # train first: a clip shared is found in the later split
    report = judge("data", [str(folder)], no_cache=True, jobs=1)
    assert [(s.path, s.summary["clips"]) for s in report.subjects] == [(str(folder), 6)]
    assert "TP-DATA-SPLIT-LEAK-AUDIO" in report.subjects[0].ran
    assert main(["data", str(folder), "--no-cache", "--jobs", "1"]) == 0
    capsys.readouterr()
    write_lhotse(wavs[:4] + [wavs[0]], folder, texts, split="test")  # a train recording in the test split too
    leaks = [f for f in judge("data", [str(folder)], no_cache=True, jobs=1).subjects[0].findings if f.rule_id == "TP-DATA-SPLIT-LEAK-AUDIO"]
    assert leaks and all(Path(f.file).name.endswith("_test.jsonl.gz") for f in leaks)


def test_a_folder_of_two_corpora_is_judged_one_dataset_a_corpus(corpus, tmp_path):
    wavs = _yesno_wavs(corpus)
    texts = {wav.stem: _text(wav.stem) for wav in wavs}
    folder = tmp_path / "manifests"
    write_lhotse(wavs[:4], folder, texts, prefix="yesno", split="train")
    write_lhotse(wavs[4:6], folder, texts, prefix="other", split="train")
    report = judge("data", [str(folder)], no_cache=True, jobs=1)
    assert [(Path(s.path).name, s.summary["clips"]) for s in report.subjects] == [
        ("other_cuts_train.jsonl.gz", 2),
        ("yesno_cuts_train.jsonl.gz", 4),
    ]
    with pytest.raises(InputError, match="holds 2 Lhotse datasets"):
        read_manifest(folder)


def _lines(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as handle:
        return [json.loads(line) for line in handle]


def _write(path: Path, lines: list[str]) -> None:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt") as handle:
        handle.write("".join(line + "\n" for line in lines))


@pytest.fixture
def clean(corpus, tmp_path) -> dict[str, Path]:
    wavs = _yesno_wavs(corpus)[:6]
    return write_lhotse(wavs, tmp_path / "m", {wav.stem: _text(wav.stem) for wav in wavs})


def _problems(path: Path) -> list[tuple[str, str, int | None]]:
    return [(p.kind, os.path.basename(p.manifest), p.line) for p in read_manifest(path).problems]


def test_bad_lines_are_problems_at_their_line(clean):
    recordings = _lines(clean["recordings"])
    recordings[1]["sources"] = []
    for i, kind in ((2, "url"), (3, "memory"), (4, "command"), (5, "shar")):
        recordings[i]["sources"] = [{"type": kind, "channels": [0], "source": "x"}]
    _write(clean["recordings"], [json.dumps(r) for r in recordings])
    supervisions = [json.dumps(s) for s in _lines(clean["supervisions"])]
    ghost = json.dumps({**json.loads(supervisions[0]), "id": "ghost", "recording_id": "nowhere"})
    _write(clean["supervisions"], [supervisions[0], "{not json", *supervisions[1:], ghost])
    assert _problems(clean["supervisions"]) == [
        ("no-audio-field", "yesno_recordings_train.jsonl.gz", 2),
        *(("unparsable", "yesno_recordings_train.jsonl.gz", line) for line in (3, 4, 5, 6)),
        ("unparsable", "yesno_supervisions_train.jsonl.gz", 2),
        ("no-audio-field", "yesno_supervisions_train.jsonl.gz", 8),
    ]
    manifest = read_manifest(clean["supervisions"])
    assert [e.id for e in manifest.entries] == [recordings[0]["id"]]
    assert "type 'memory'; trainproof reads only sources of type 'file'" in manifest.problems[2].message
    subject = judged(clean["supervisions"])
    assert {f.rule_id for f in subject.findings if f.level.name == "FAIL"} == {"TP-DATA-MANIFEST"}


def test_a_gzip_that_ends_early_is_a_problem_after_its_last_whole_line(clean):
    cuts = [json.dumps(c) for c in _lines(clean["cuts"])] * 400  # long enough that a cut stream still holds whole lines
    cuts = [json.dumps({**json.loads(line), "id": f"c{i}", "supervisions": [{**json.loads(line)["supervisions"][0], "id": f"s{i}"}]}) for i, line in enumerate(cuts)]
    _write(clean["cuts"], cuts)
    data = clean["cuts"].read_bytes()
    clean["cuts"].write_bytes(data[: len(data) // 2])
    manifest = read_manifest(clean["cuts"])
    (problem,) = manifest.problems
    read = len(manifest.entries)
    assert 0 < read < len(cuts)
    assert (problem.kind, problem.line) == ("unparsable", read + 1)
    assert problem.message.startswith(f"the gzip stream ends early after line {read:,}")


def test_inputs_that_cannot_be_judged_are_one_line_and_exit_2(clean, tmp_path, capsys):
    clean["recordings"].unlink()
    assert main(["data", str(clean["supervisions"]), "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "yesno_recordings_train.jsonl.gz) is not beside it" in err
    odd = tmp_path / "odd.jsonl.gz"
    odd.write_bytes(gzip.compress(b'{"audio_filepath": "a.wav", "text": "x"}\n'))
    assert main(["data", str(odd), "--no-cache"]) == 2
    assert "is gzip-compressed and not a Lhotse manifest" in capsys.readouterr().err
    empty = tmp_path / "empty_cuts.jsonl.gz"
    empty.write_bytes(gzip.compress(b""))
    assert main(["data", str(empty), "--no-cache"]) == 2
    assert "is empty" in capsys.readouterr().err


def test_recordings_alone_are_audio_without_transcripts(clean):
    clean["supervisions"].unlink()
    clean["cuts"].unlink()
    manifest = read_manifest(clean["recordings"])
    assert manifest.audio_only and len(manifest.entries) == 6 and not manifest.problems
    assert judged(clean["recordings"]).summary["readable"] == 6
