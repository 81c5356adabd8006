"""``trainproof data`` on WebDataset tar shards written by ``webdataset``'s own ``TarWriter`` from a corpus of real
audio, judged against the NeMo manifest of the same clips, and read back by ``webdataset`` as the oracle."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.datasets.speech import FAULTS, Corpus, clean_corpus, has_espeak
from trainproof.commands import judge
from trainproof.data.blobs import digest_of
from trainproof.data.manifest import read_manifest

wds = pytest.importorskip("webdataset")
xxhash = pytest.importorskip("xxhash")

FAULTS_COMPARED = ("truncated", "not_audio", "other_rate", "clipped", "empty_transcript", "duplicate_audio")
NOT_COMPARED = {"TP-DATA-DURATION-CLAIM"}  # the NeMo manifest claims each clip's duration; a shard's samples do not


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    built: dict[int, Corpus] = {}

    def get(n: int) -> Corpus:
        if n not in built:
            built[n] = clean_corpus(tmp_path_factory.mktemp(f"nemo{n}"), n=n, layout="nemo", espeak=has_espeak())
        return built[n]

    return get


def write_shards(corpus: Corpus, folder: Path, per_shard: int = 5, prefix: str = "train", json_text: bool = False) -> list[Path]:
    """The corpus's clips as WebDataset samples (``key.wav`` and ``key.txt`` or ``key.json``), ``per_shard`` a shard."""
    folder.mkdir(parents=True, exist_ok=True)
    shards = []
    clips = corpus.clips
    for start in range(0, len(clips), per_shard):
        shard = folder / f"{prefix}-{start // per_shard:06d}.tar"
        with wds.TarWriter(str(shard)) as sink:
            for clip in clips[start : start + per_shard]:
                sample = {"__key__": clip.id.replace("-", "_"), "wav": clip.audio.read_bytes()}
                if json_text:
                    sample["json"] = {"text": clip.text, "speaker": clip.speaker}
                else:
                    sample["txt"] = clip.text or ""
                sink.write(sample)
        shards.append(shard)
    return shards


def found(path: Path | str) -> set[tuple[str, str, int]]:
    subject = judge("data", [str(path)], no_cache=True, progress=False, jobs=1).subjects[0]
    assert subject.unjudged is None, subject.unjudged
    return {(f.rule_id, f.level.name, int(f.values.get("count", 1))) for f in subject.findings if f.rule_id not in NOT_COMPARED}


@pytest.mark.parametrize("fault", FAULTS_COMPARED)
def test_shards_find_what_the_nemo_manifest_of_their_clips_finds(clean, tmp_path, fault):
    corpus = clean(12).copy(tmp_path / "nemo")
    FAULTS[fault](corpus)
    expected = found(corpus.path)
    assert expected
    write_shards(corpus, tmp_path / "shards")
    assert found(tmp_path / "shards") == expected
    assert found(tmp_path / "shards" / "train-{000000..000002}.tar") == expected


def test_samples_read_as_webdataset_loads_them(clean, tmp_path):
    corpus = clean(12).copy(tmp_path / "nemo")
    shards = write_shards(corpus, tmp_path / "shards", json_text=True)
    theirs = [
        (sample["__key__"], xxhash.xxh3_128(sample["wav"]).hexdigest(), sample["json"].decode() if isinstance(sample["json"], bytes) else sample["json"])
        for sample in wds.WebDataset([str(s) for s in shards], shardshuffle=False)
    ]
    manifest = read_manifest(tmp_path / "shards")
    assert manifest.layout == "webdataset"
    import json

    ours = [(entry.id, digest_of(blob), entry.text) for entry, blob in zip(manifest.entries, manifest.blobs)]
    assert [(key, digest, json.loads(record)["text"]) for key, digest, record in theirs] == ours
    assert [entry.speaker for entry in manifest.entries] == [clip.speaker for clip in corpus.clips]


def test_a_leak_between_a_train_and_a_test_shard_is_found(clean, tmp_path):
    corpus = clean(12).copy(tmp_path / "nemo")
    write_shards(corpus, tmp_path / "shards", per_shard=12)
    leaked = Corpus(corpus.layout, corpus.root, corpus.audio_dir, corpus.rate, corpus.suffix, corpus.clips[4:5])
    write_shards(leaked, tmp_path / "shards", prefix="test")
    subject = judge("data", [str(tmp_path / "shards")], no_cache=True, progress=False, jobs=1).subjects[0]
    leaks = [f for f in subject.findings if f.rule_id == "TP-DATA-SPLIT-LEAK-AUDIO"]
    assert [(Path(f.file).name, f.line) for f in leaks] == [("test-000000.tar", 1)]


def test_shards_without_transcripts_are_an_audio_only_corpus(clean, tmp_path):
    corpus = clean(12).copy(tmp_path / "nemo")
    with wds.TarWriter(str(tmp_path / "codec-000000.tar")) as sink:
        for clip in corpus.clips:
            sink.write({"__key__": clip.id, "flac": clip.audio.read_bytes()})  # WAV bytes under .flac: libsndfile reads by content
    manifest = read_manifest(tmp_path / "codec-000000.tar")
    assert manifest.audio_only and len(manifest.entries) == 12


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trainproof", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_a_tar_cut_mid_member_is_found_and_the_samples_before_it_judged(clean, tmp_path):
    corpus = clean(12).copy(tmp_path / "nemo")
    (shard,) = write_shards(corpus, tmp_path / "shards", per_shard=12)
    data = shard.read_bytes()
    shard.write_bytes(data[: len(data) * 2 // 3])
    given = _cli("data", str(shard), "--no-cache", cwd=tmp_path)
    assert given.returncode == 1, given.stdout + given.stderr
    assert "Traceback" not in given.stdout + given.stderr and "internal error" not in given.stdout
    assert "TP-DATA-MANIFEST" in given.stdout or "TP-DATA-UNREADABLE" in given.stdout


def test_a_compressed_or_foreign_shard_is_one_line_and_exit_2(tmp_path):
    import gzip

    (tmp_path / "a.tar").write_bytes(gzip.compress(b"not a tar"))
    (tmp_path / "b.tar").write_bytes(b"just some text, not a tar archive\n" * 40)
    for name, said in (("a.tar", "compressed"), ("b.tar", "not a tar")):
        given = _cli("data", name, "--no-cache", cwd=tmp_path)
        assert given.returncode == 2, given.stdout + given.stderr
        assert len(given.stderr.strip().splitlines()) == 1 and said in given.stderr, given.stderr


def test_a_brace_pattern_naming_a_missing_shard_is_exit_2(clean, tmp_path):
    write_shards(clean(12).copy(tmp_path / "nemo"), tmp_path / "shards")
    given = _cli("data", "shards/train-{000000..000005}.tar", "--no-cache", cwd=tmp_path)
    assert given.returncode == 2 and "do not exist" in given.stderr, given.stderr


def test_damaged_shards_are_judged_or_refused_never_crash(clean, tmp_path_factory):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    corpus = clean(12)
    (shard,) = write_shards(Corpus(corpus.layout, corpus.root, corpus.audio_dir, corpus.rate, corpus.suffix, corpus.clips[:3]),
                            tmp_path_factory.mktemp("seed"), per_shard=3)  # fmt: skip
    original = shard.read_bytes()

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(cut=st.floats(0, 1), flips=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)), max_size=4))
    def check(cut, flips):
        data = bytearray(original)
        for where, value in flips:
            data[min(int(where * len(data)), len(data) - 1)] = value
        data = data[: max(1, int(cut * len(data)))] if cut < 0.98 else data
        path = tmp_path_factory.mktemp("damaged") / "shard.tar"
        path.write_bytes(bytes(data))
        try:
            subject = judge("data", [str(path)], no_cache=True, progress=False, jobs=1).subjects[0]
        except Exception as exc:  # noqa: BLE001 -- the point: nothing may escape the command
            raise AssertionError(f"{type(exc).__name__}: {exc}") from None
        said = " ".join([subject.unjudged or "", *(f.message for f in subject.findings)])
        assert "internal error" not in said, said

    check()
