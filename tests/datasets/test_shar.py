"""Lhotse Shar (trainproof/data/layouts/shar.py), written by lhotse's own ``CutSet.to_shar`` from the shared corpus's
real audio (the Kaldi yesno recordings): judged as the NeMo manifest of the same clips is, read as
``CutSet.from_shar`` loads it, and broken one way at a time (a tar cut mid-member, a gzip that ends early, a cut whose
audio is not in its tar, members out of order)."""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

pytest.importorskip("soundfile")
pytest.importorskip("pandas")
xxhash = pytest.importorskip("xxhash")
lhotse = pytest.importorskip("lhotse")

import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402

from tests.datasets.test_lhotse import _text, _yesno_wavs, findings, judged, write_nemo  # noqa: E402
from trainproof.data.blobs import digest_of  # noqa: E402
from trainproof.data.manifest import read_manifest  # noqa: E402
from trainproof.io.errors import InputError  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def write_shar(wavs: list[Path], folder: Path, texts: dict[str, str], shard_size: int | None = 4) -> dict[str, list[str]]:
    """``wavs`` as one cut each (its whole recording, one supervision), written by lhotse's ``to_shar`` as FLAC."""
    from lhotse import CutSet, Recording, RecordingSet, SupervisionSegment, SupervisionSet

    recordings = RecordingSet.from_recordings(Recording.from_file(str(wav)) for wav in wavs)
    supervisions = SupervisionSet.from_segments(
        SupervisionSegment(id=r.id, recording_id=r.id, start=0.0, duration=r.duration, channel=0, text=texts[r.id], speaker="global")
        for r in recordings
    )
    folder.mkdir(parents=True, exist_ok=True)
    cuts = CutSet.from_manifests(recordings=recordings, supervisions=supervisions)
    return cuts.to_shar(str(folder), fields={"recording": "flac"}, shard_size=shard_size)


def _members(tar: Path) -> list[tarfile.TarInfo]:
    with tarfile.open(tar) as archive:
        return archive.getmembers()


def _garble(tar: Path) -> None:
    """Overwrite the tar's first member (its first cut's audio) in place with bytes that are no audio format (its size
    and the tar's kept)."""
    info = _members(tar)[0]
    with open(tar, "r+b") as handle:
        handle.seek(info.offset_data)
        handle.write(bytes(np.random.default_rng(0).integers(0, 256, info.size, dtype=np.uint8)))


@pytest.fixture
def faulty(corpus, tmp_path) -> dict[str, Path]:
    """Twelve yesno clips copied, then broken one fault each: clip 1 resampled to 16 kHz (mixed rates), clip 2 clipped,
    clip 3's transcript empty, clip 4 garbled (its file for NeMo, its FLAC member in the Shar tar). The Shar folder of
    them (three shards) and the NeMo manifest of the same clips."""
    audio = tmp_path / "audio"
    audio.mkdir()
    wavs = [Path(shutil.copy(wav, audio / wav.name)) for wav in _yesno_wavs(corpus)]
    samples, rate = sf.read(str(wavs[1]))
    sf.write(str(wavs[1]), np.repeat(samples, 2), rate * 2, subtype="PCM_16")
    samples, rate = sf.read(str(wavs[2]))
    sf.write(str(wavs[2]), np.clip(samples * 8.0, -1.0, 1.0), rate, subtype="PCM_16")
    texts = {wav.stem: _text(wav.stem) for wav in wavs}
    texts[wavs[3].stem] = ""
    write_shar(wavs, tmp_path / "shar", texts)
    nemo = write_nemo(wavs, tmp_path / "nemo_manifest.json", texts)
    wavs[4].write_bytes(bytes(np.random.default_rng(0).integers(0, 256, 30_000, dtype=np.uint8)))
    _garble(tmp_path / "shar" / "recording.000001.tar")  # shard 1's first cut: clip 4
    return {"shar": tmp_path / "shar", "nemo": nemo, "garbled": wavs[4]}


def test_a_shar_folder_is_judged_as_the_nemo_manifest_of_the_same_clips(faulty):
    nemo = judged(faulty["nemo"])
    expected = findings(nemo)
    rules = {rule for rule, _, _ in expected}
    assert {"TP-DATA-UNREADABLE", "TP-DATA-SAMPLE-RATE", "TP-DATA-CLIPPING", "TP-DATA-EMPTY-TEXT"} <= rules, expected
    subject = judged(faulty["shar"])
    assert subject.format == "shar"
    assert subject.summary["clips"] == nemo.summary["clips"] == 12
    assert subject.summary["readable"] == nemo.summary["readable"] == 11
    assert findings(subject) == expected
    unreadable = next(f for f in subject.findings if f.rule_id == "TP-DATA-UNREADABLE")
    assert (Path(unreadable.file).name, unreadable.line) == ("cuts.000001.jsonl.gz", 1)  # the cut's line, in the shard one opens
    shard = judged(faulty["shar"] / "cuts.000000.jsonl.gz")  # one shard: its four clips, two of them faulty
    by_tar = judged(faulty["shar"] / "recording.000000.tar")  # a recording tar names its shard
    assert shard.format == by_tar.format == "shar"
    assert shard.summary["clips"] == by_tar.summary["clips"] == 4
    assert findings(shard) == findings(by_tar)
    assert {"TP-DATA-SAMPLE-RATE", "TP-DATA-CLIPPING", "TP-DATA-EMPTY-TEXT"} <= {rule for rule, _, _ in findings(shard)}


def test_a_shar_folder_gives_the_same_report_on_both_engines(ray_cluster, faulty, capsys):
    from trainproof.cli import main

    reports = []
    for engine in ("local", "ray"):
        code = main(["data", str(faulty["shar"]), "--json", "--no-cache", "--engine", engine])
        reports.append((code, *capsys.readouterr()))
    assert reports[0] == reports[1]
    assert reports[0][0] == 1 and "TP-DATA-UNREADABLE" in reports[0][1]


def test_what_trainproof_reads_is_what_lhotse_loads(faulty):
    from lhotse import CutSet

    theirs = [
        (s.id, xxhash.xxh3_128(c.recording.sources[0].source).hexdigest(), s.start, s.duration, s.text, s.speaker)
        for c in CutSet.from_shar(in_dir=str(faulty["shar"]))
        for s in c.supervisions
    ]
    manifest = read_manifest(faulty["shar"])
    assert manifest.layout == "shar"
    ours = [(e.id, digest_of(blob), e.offset or 0.0, e.duration, e.text, e.speaker) for e, blob in zip(manifest.entries, manifest.blobs)]
    assert ours == theirs
    assert [p.kind for p in manifest.problems] == ["empty-text"] and not manifest.splits


def test_supervisions_inside_a_cut_are_read_at_their_offsets(corpus, tmp_path):
    from lhotse import CutSet, Recording, RecordingSet, SupervisionSegment, SupervisionSet

    wav = _yesno_wavs(corpus)[0]
    recording = Recording.from_file(str(wav))
    words = _text(wav.stem).split()
    step = recording.duration / len(words)
    supervisions = SupervisionSet.from_segments(
        SupervisionSegment(id=f"w{i}", recording_id=recording.id, start=round(i * step, 3), duration=round(step, 3), text=word)
        for i, word in enumerate(words)
    )
    cuts = CutSet.from_manifests(recordings=RecordingSet.from_recordings([recording]), supervisions=supervisions)
    (tmp_path / "shar").mkdir()
    cuts.to_shar(str(tmp_path / "shar"), fields={"recording": "wav"}, shard_size=None)
    assert sorted(os.listdir(tmp_path / "shar")) == ["cuts.jsonl.gz", "recording.tar"]  # unsharded: no numbers
    manifest = read_manifest(tmp_path / "shar")
    assert [(e.id, e.offset, e.duration) for e in manifest.entries] == [(s.id, s.start, s.duration) for s in supervisions]
    subject = judged(tmp_path / "shar")
    assert subject.summary["clips"] == subject.summary["readable"] == len(words)


def test_split_folders_are_one_dataset_and_a_leak_between_them_is_found(corpus, tmp_path):
    wavs = _yesno_wavs(corpus)
    texts = {wav.stem: _text(wav.stem) for wav in wavs}
    write_shar(wavs[:8], tmp_path / "shar" / "train", texts)
    write_shar(wavs[8:12], tmp_path / "shar" / "test", texts)
    manifest = read_manifest(tmp_path / "shar")
    assert manifest.splits == ("train",) * 8 + ("test",) * 4
    assert not [f for f in judged(tmp_path / "shar").findings if f.rule_id.startswith("TP-DATA-SPLIT-LEAK")]
    shutil.rmtree(tmp_path / "shar" / "test")
    write_shar(wavs[8:11] + wavs[2:3], tmp_path / "shar" / "test", texts)  # a train recording in the test split too
    leaks = [f for f in judged(tmp_path / "shar").findings if f.rule_id == "TP-DATA-SPLIT-LEAK-AUDIO"]
    assert [(Path(f.file).parent.name, Path(f.file).name, f.line) for f in leaks] == [("test", "cuts.000000.jsonl.gz", 4)]


# --- broken shards ---------------------------------------------------------------------------------------------------


@pytest.fixture
def clean(corpus, tmp_path) -> Path:
    wavs = _yesno_wavs(corpus)[:8]
    write_shar(wavs, tmp_path / "shar", {wav.stem: _text(wav.stem) for wav in wavs})
    return tmp_path / "shar"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trainproof", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def _problems(path: Path) -> list[tuple[str, str, int | None]]:
    return [(p.kind, os.path.basename(p.manifest), p.line) for p in read_manifest(path).problems]


def _rewrite_tar(tar: Path, members: list[tuple[str, bytes]]) -> None:
    with tarfile.open(tar, "w") as archive:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


def _tar_members(tar: Path) -> list[tuple[str, bytes]]:
    with tarfile.open(tar) as archive:
        return [(m.name, archive.extractfile(m).read()) for m in archive.getmembers()]  # type: ignore[union-attr]


def test_a_tar_cut_mid_member_is_found_and_the_cuts_before_it_judged(clean):
    tar = clean / "recording.000001.tar"
    data = tar.read_bytes()
    tar.write_bytes(data[: len(data) // 2])
    given = _cli("data", str(clean), "--no-cache", cwd=clean.parent)
    assert given.returncode == 1, given.stdout + given.stderr
    assert "Traceback" not in given.stdout + given.stderr and "internal error" not in given.stdout
    assert "TP-DATA-MANIFEST" in given.stdout and "a tar cut short" in given.stdout
    subject = judged(clean)
    assert subject.summary["clips"] >= 5 and subject.summary["readable"] >= 4


def test_a_cuts_gzip_that_ends_early_is_a_problem_after_its_last_whole_line(clean):
    cuts = clean / "cuts.000000.jsonl.gz"
    data = cuts.read_bytes()
    cuts.write_bytes(data[: len(data) * 3 // 4])
    problems = [p for p in read_manifest(clean).problems if p.manifest == str(cuts)]
    assert problems and problems[0].message.startswith("the gzip stream ends early")
    assert judged(clean).summary["clips"] < 8


def test_a_cut_whose_audio_is_not_in_its_tar_and_members_out_of_order_are_problems_at_their_lines(clean):
    tar = clean / "recording.000000.tar"
    members = _tar_members(tar)
    _rewrite_tar(tar, members[2:4] + members[:2] + members[6:])  # cuts 1 and 2 swapped, cut 3 lost
    assert _problems(clean) == [
        ("unparsable", "cuts.000000.jsonl.gz", 1),
        ("no-audio-field", "cuts.000000.jsonl.gz", 3),
    ]
    manifest = read_manifest(clean)
    assert "'Mismatched IDs'" in manifest.problems[0].message
    assert len(manifest.entries) == 7  # every cut found by its id is judged
    subject = judged(clean)
    assert {f.rule_id for f in subject.findings if f.level.name == "FAIL"} == {"TP-DATA-MANIFEST"}


def test_a_missing_recording_tar_and_an_odd_tar_are_problems_not_crashes(clean):
    (clean / "recording.000001.tar").unlink()
    problems = read_manifest(clean).problems
    assert [(p.kind, Path(p.manifest).name, p.lines) for p in problems] == [("no-audio-field", "cuts.000001.jsonl.gz", 4)]
    assert "recording.000001.tar) is not beside it" in problems[0].message
    tar = clean / "recording.000000.tar"
    _rewrite_tar(tar, _tar_members(tar)[:-1])  # the last cut's metadata lost
    assert any("'Uneven number of files'" in p.message for p in read_manifest(clean).problems)


def test_a_shar_folder_without_audio_and_a_compressed_tar_say_so(clean, tmp_path):
    for tar in clean.glob("recording.*.tar"):
        tar.rename(tar.with_name(tar.name.replace("recording", "features")))
    with pytest.raises(InputError, match="without a 'recording' field"):
        read_manifest(clean)
    given = _cli("data", str(clean), "--no-cache", cwd=tmp_path)
    assert given.returncode == 2 and len(given.stderr.strip().splitlines()) == 1, given.stderr
    for tar in clean.glob("features.*.tar"):
        tar.rename(tar.with_name(tar.name.replace("features", "recording")))
    tar = clean / "recording.000000.tar"
    tar.write_bytes(gzip.compress(tar.read_bytes()))
    assert any("is a compressed tar" in p.message for p in read_manifest(clean).problems)


def test_damaged_shards_are_judged_or_refused_never_crash(corpus, tmp_path_factory):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    seed = tmp_path_factory.mktemp("seed") / "shar"
    wavs = _yesno_wavs(corpus)[:3]
    write_shar(wavs, seed, {wav.stem: _text(wav.stem) for wav in wavs}, shard_size=None)
    originals = {name: (seed / name).read_bytes() for name in ("cuts.jsonl.gz", "recording.tar")}

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        which=st.sampled_from(sorted(originals)),
        cut=st.floats(0, 1),
        flips=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)), max_size=4),
    )
    def check(which, cut, flips):
        folder = tmp_path_factory.mktemp("damaged")
        for name, data in originals.items():
            (folder / name).write_bytes(data)
        data = bytearray(originals[which])
        for where, value in flips:
            data[min(int(where * len(data)), len(data) - 1)] = value
        data = data[: max(1, int(cut * len(data)))] if cut < 0.98 else data
        (folder / which).write_bytes(bytes(data))
        try:
            from trainproof.commands import judge

            subject = judge("data", [str(folder)], no_cache=True, progress=False, jobs=1).subjects[0]
        except Exception as exc:  # noqa: BLE001 -- the point: nothing may escape the command
            raise AssertionError(f"{type(exc).__name__}: {exc}") from None
        said = " ".join([subject.unjudged or "", *(f.message for f in subject.findings)])
        assert "internal error" not in said, said

    check()


def test_the_lhotse_hook_matches_shar_cut_shards():
    hooks = (REPO / ".pre-commit-hooks.yaml").read_text()
    pattern = re.search(r"- id: trainproof-lhotse\n(?:  .*\n)*?  files: (.*)\n", hooks)
    assert pattern is not None
    files = re.compile(pattern.group(1))
    for name in ("data/shar/train/cuts.000000.jsonl.gz", "cuts.jsonl.gz", "data/manifests/yesno_cuts_train.jsonl.gz"):
        assert files.search(name), name
    for name in ("data/shar/train/recording.000000.tar", "cuts.000000.json", "notcuts.000000.jsonl.gz"):
        assert not files.search(name), name
