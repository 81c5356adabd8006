"""``trainproof data`` on the Hugging Face layouts (Parquet shards, ``save_to_disk`` Arrow, ``audiofolder``), each
written by ``datasets`` itself from a corpus of real audio, judged against the NeMo manifest of the same clips, and
read back by ``datasets`` as the oracle of what the rows hold."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.datasets.speech import FAULTS, Corpus, clean_corpus, has_espeak
from trainproof.commands import judge
from trainproof.data.blobs import digest_of
from trainproof.data.manifest import read_manifest

datasets = pytest.importorskip("datasets")
xxhash = pytest.importorskip("xxhash")

@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """One clean corpus per (layout, size), built once; tests break copies."""
    built: dict[tuple[str, int], Corpus] = {}

    def get(layout: str, n: int) -> Corpus:
        if (layout, n) not in built:
            built[layout, n] = clean_corpus(tmp_path_factory.mktemp(f"{layout}{n}"), n=n, layout=layout, espeak=has_espeak())
        return built[layout, n]

    return get


HUB_LAYOUTS = ("parquet", "arrow", "audiofolder")
FAULTS_COMPARED = ("missing_file", "truncated", "not_audio", "other_rate", "clipped", "empty_transcript", "duplicate_audio")
NOT_COMPARED = {"TP-DATA-DURATION-CLAIM"}  # the NeMo manifest claims each clip's duration; the Hub's rows do not


def _rows(corpus: Corpus, embed: bool = True) -> dict[str, list]:
    rows: dict[str, list] = {"audio": [], "text": [], "speaker": [], "id": []}
    for clip in corpus.clips:
        held = clip.audio.read_bytes() if embed and clip.audio.is_file() else None
        rows["audio"].append({"bytes": held, "path": clip.audio.name if held is not None else str(clip.audio)})
        rows["text"].append(clip.text)
        rows["speaker"].append(clip.speaker)
        rows["id"].append(clip.id)
    return rows


def _dataset(rows: dict[str, list]):
    from datasets import Audio, Dataset, Features, Value

    plain = Features({"audio": {"bytes": Value("binary"), "path": Value("string")}, "text": Value("string"),
                      "speaker": Value("string"), "id": Value("string")})  # fmt: skip
    return Dataset.from_dict(rows, features=plain).cast_column("audio", Audio())  # the storage as it is: nothing encoded


def convert(corpus: Corpus, layout: str, dest: Path) -> Path:
    """The corpus's clips (as its manifest lists them, faults and all) written in ``layout`` by ``datasets``."""
    if layout == "parquet":
        _dataset(_rows(corpus)).to_parquet(str(dest / "data" / "train-00000-of-00001.parquet"), batch_size=100)
        return dest
    if layout == "arrow":
        _dataset(_rows(corpus)).save_to_disk(str(dest / "saved"), num_shards=1)
        return dest / "saved"
    folder = dest / "audiofolder" / "train"
    folder.mkdir(parents=True)
    with (folder / "metadata.jsonl").open("w", encoding="utf-8") as out:
        for clip in corpus.clips:
            if clip.audio.is_file():
                shutil.copyfile(clip.audio, folder / clip.audio.name)
            out.write(json.dumps({"file_name": clip.audio.name, "text": clip.text, "speaker": clip.speaker}) + "\n")
    return dest / "audiofolder"


def found(path: Path) -> set[tuple[str, str, int]]:
    subject = judge("data", [str(path)], no_cache=True, progress=False, jobs=1).subjects[0]
    assert subject.unjudged is None, subject.unjudged
    return {(f.rule_id, f.level.name, int(f.values.get("count", 1))) for f in subject.findings if f.rule_id not in NOT_COMPARED}


COMPARED = [
    pytest.param(fault, layout, id=f"{fault}-{layout}")
    for fault in FAULTS_COMPARED
    for layout in HUB_LAYOUTS
    if (fault, layout) != ("missing_file", "arrow")  # save_to_disk cannot write it: it stats every path to size its shards
]


@pytest.mark.parametrize(("fault", "layout"), COMPARED)
def test_each_layout_finds_what_the_nemo_manifest_of_its_clips_finds(clean, tmp_path, layout, fault):
    corpus = clean("nemo", 12).copy(tmp_path / "nemo")
    FAULTS[fault](corpus)
    expected = found(corpus.path)
    assert expected, f"{fault} found nothing in the NeMo manifest"
    assert found(convert(corpus, layout, tmp_path)) == expected


def test_the_clean_corpus_is_clean_in_every_layout(clean, tmp_path):
    corpus = clean("nemo", 12).copy(tmp_path / "nemo")
    for layout in HUB_LAYOUTS:
        assert {f for f in found(convert(corpus, layout, tmp_path / layout)) if f[1] != "INFO"} == set(), layout


def test_a_leak_between_splits_is_found_where_nemo_sees_a_duplicate(clean, tmp_path):
    corpus = clean("nemo", 12).copy(tmp_path / "nemo")
    FAULTS["duplicate_audio"](corpus)
    rows = _rows(corpus)
    copied = next(i for i, clip in enumerate(corpus.clips) if clip.id.endswith("_copy"))
    test_rows = {key: [values[copied]] for key, values in rows.items()}
    train_rows = {key: values[:copied] + values[copied + 1 :] for key, values in rows.items()}
    hub = tmp_path / "hub"
    _dataset(train_rows).to_parquet(str(hub / "data" / "train-00000-of-00001.parquet"), batch_size=100)
    _dataset(test_rows).to_parquet(str(hub / "data" / "test-00000-of-00001.parquet"), batch_size=100)
    subject = judge("data", [str(hub)], no_cache=True, progress=False, jobs=1).subjects[0]
    leaks = [f for f in subject.findings if f.rule_id == "TP-DATA-SPLIT-LEAK-AUDIO"]
    assert len(leaks) == 1 and leaks[0].level.name == "FAIL"
    assert leaks[0].file.endswith("test-00000-of-00001.parquet") and leaks[0].line == 1
    assert "TP-DATA-DUPLICATE-AUDIO" in {f.rule_id for f in judge("data", [str(corpus.path)], no_cache=True, progress=False).subjects[0].findings}


# --- what datasets loads is what trainproof reads ------------------------------------------------------------------


def _oracle_rows(loaded) -> list[tuple[str, str, str | None]]:
    from datasets import Audio

    loaded = loaded.cast_column("audio", Audio(decode=False))
    return [(row["audio"]["path"], xxhash.xxh3_128(row["audio"]["bytes"]).hexdigest(), row["text"]) for row in loaded]


def _ours(path: Path, split: str) -> list[tuple[str, str, str | None]]:
    manifest = read_manifest(path)
    splits = manifest.splits or ("train",) * len(manifest.entries)
    return [
        (entry.listed, digest_of(blob), entry.text)
        for entry, blob, named in zip(manifest.entries, manifest.blobs, splits)
        if named == split and blob is not None
    ]


def test_parquet_shards_read_as_datasets_loads_them(clean, tmp_path):
    corpus = clean("parquet", 12).copy(tmp_path)
    from datasets import load_dataset

    loaded = load_dataset("parquet", data_dir=str(corpus.root / "data"))
    assert set(loaded) == {"train", "test"}
    for split in loaded:
        assert _ours(corpus.root, split) == _oracle_rows(loaded[split])


def test_a_save_to_disk_folder_reads_as_load_from_disk_loads_it(clean, tmp_path):
    corpus = clean("nemo", 12).copy(tmp_path / "nemo")
    whole = _dataset(_rows(corpus))
    saved = tmp_path / "saved"
    datasets.DatasetDict({"train": whole.select(range(8)), "validation": whole.select(range(8, 12))}).save_to_disk(str(saved))
    loaded = datasets.load_from_disk(str(saved))
    manifest = read_manifest(saved)
    assert manifest.layout == "arrow" and set(manifest.splits) == {"train", "validation"}
    for split in loaded:
        assert _ours(saved, split) == _oracle_rows(loaded[split])


def test_an_audiofolder_reads_as_datasets_finds_its_files_and_splits(clean, tmp_path):
    """datasets 5 decodes an audiofolder only through torchcodec (and FFmpeg): the oracle is its own resolution of the
    folder into splits and files (``get_data_patterns``), which its audiofolder builder pairs with the metadata."""
    from datasets.data_files import DataFilesDict, get_data_patterns

    corpus = clean("nemo", 12).copy(tmp_path / "nemo")
    folder = tmp_path / "audiofolder"
    for split, clips in (("train", corpus.clips[:9]), ("test", corpus.clips[9:])):
        (folder / split).mkdir(parents=True)
        with (folder / split / "metadata.jsonl").open("w", encoding="utf-8") as out:
            for clip in clips:
                shutil.copyfile(clip.audio, folder / split / clip.audio.name)
                out.write(json.dumps({"file_name": clip.audio.name, "text": clip.text}) + "\n")
    files = DataFilesDict.from_patterns(get_data_patterns(str(folder)), base_path=str(folder))
    theirs = {split: sorted(str(Path(f).resolve()) for f in found if not f.endswith("metadata.jsonl")) for split, found in files.items()}
    manifest = read_manifest(folder)
    assert manifest.layout == "audiofolder"
    ours: dict[str, list[str]] = {}
    for entry, split in zip(manifest.entries, manifest.splits):
        ours.setdefault(split, []).append(str(Path(entry.audio).resolve()))
    assert {split: sorted(paths) for split, paths in ours.items()} == theirs
    texts = {clip.audio.name: clip.text for clip in corpus.clips}
    assert all(entry.text == texts[Path(entry.audio).name] for entry in manifest.entries)


# --- the cache keys a clip held in a shard by its bytes ----------------------------------------------------------------


def test_a_rewritten_shard_decodes_only_the_clips_that_changed(clean, tmp_path):
    from trainproof.data.cache import Cache
    from trainproof.data.engine import Work
    from trainproof.data.model import ClipRef

    corpus = clean("parquet", 12).copy(tmp_path)
    cache_dir = tmp_path / "cache"
    judge("data", [str(corpus.root)], cache_dir=str(cache_dir), progress=False)
    changed = corpus.clips[5]
    FAULTS["clipped"](corpus, changed.id)  # rewrites the clip's file and both shards, every other clip's bytes as they were
    manifest = read_manifest(corpus.root)
    refs = [ClipRef(entry.audio, blob=blob) for entry, blob in zip(manifest.entries, manifest.blobs)]
    with Cache(str(cache_dir)) as cache:
        todo = Work(refs, cache).todo
    assert [manifest.entries[i].id for i in todo] == [changed.id]


def test_a_first_run_hashes_in_the_workers_and_a_re_run_decodes_nothing(clean, tmp_path, monkeypatch):
    """The manifest leaves the bytes unread; the workers that decode them hash them; the re-run finds every clip."""
    from trainproof.data import engine
    from trainproof.data.cache import Cache
    from trainproof.data.model import ClipRef

    corpus = clean("parquet", 12).copy(tmp_path)
    manifest = read_manifest(corpus.root)
    assert all(blob is not None and not blob.digest for blob in manifest.blobs)  # nothing was hashed reading it
    refs = [ClipRef(entry.audio, blob=blob) for entry, blob in zip(manifest.entries, manifest.blobs)]
    monkeypatch.setattr(engine, "POOL_MIN_BYTES", 0)  # the pool, as a corpus of real size gets it
    with Cache(str(tmp_path / "cache")) as cache:
        cold = engine.analyze_all(refs, jobs=2, cache=cache)
        stored = {path for (path,) in cache._db.execute("SELECT path FROM clips")}
    assert stored == {f"{engine.BLOB_KEY}{digest_of(blob)}" for blob in manifest.blobs}
    with Cache(str(tmp_path / "cache")) as cache:
        work = engine.Work(refs, cache, hash_first=False)  # the cache holds clips of shards: hashed first, and found
        assert not work.todo and work.found == len(refs)
        warm = engine.analyze_all(refs, jobs=2, cache=cache)
    assert list(warm) == list(cold)


# --- bad input ---------------------------------------------------------------------------------------------------------


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trainproof", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_a_truncated_parquet_footer_is_one_line_and_exit_2(clean, tmp_path):
    corpus = clean("parquet", 12).copy(tmp_path)
    shard = corpus.root / "data" / "train-00000-of-00001.parquet"
    shard.write_bytes(shard.read_bytes()[:-100])
    given = _cli("data", str(shard), "--no-cache", cwd=tmp_path)
    assert given.returncode == 2, given.stdout + given.stderr
    assert len(given.stderr.strip().splitlines()) == 1 and "Parquet" in given.stderr and "Traceback" not in given.stderr
    folder = _cli("data", str(corpus.root), "--no-cache", cwd=tmp_path)  # the other shard is judged; the cut one is a finding
    assert folder.returncode == 1, folder.stdout + folder.stderr
    assert "TP-DATA-MANIFEST" in folder.stdout and "Traceback" not in folder.stdout + folder.stderr


def test_an_arrow_file_cut_short_is_a_finding_not_a_crash(clean, tmp_path):
    corpus = clean("nemo", 12).copy(tmp_path / "nemo")
    saved = tmp_path / "saved"
    _dataset(_rows(corpus)).save_to_disk(str(saved), num_shards=1)
    shard = next(saved.glob("*.arrow"))
    shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])
    given = _cli("data", str(saved), "--no-cache", cwd=tmp_path)
    assert given.returncode in (1, 2), given.stdout + given.stderr
    assert "Traceback" not in given.stdout + given.stderr and "internal error" not in given.stdout + given.stderr


def test_a_corrupt_blob_is_unreadable_at_its_row(clean, tmp_path):
    corpus = clean("nemo", 12).copy(tmp_path / "nemo")
    rows = _rows(corpus)
    rows["audio"][3] = {"bytes": b"RIFF\x00\x00 not a wave at all", "path": "broken.wav"}
    _dataset(rows).to_parquet(str(tmp_path / "one.parquet"), batch_size=100)
    subject = judge("data", [str(tmp_path / "one.parquet")], no_cache=True, progress=False).subjects[0]
    unreadable = [f for f in subject.findings if f.rule_id == "TP-DATA-UNREADABLE"]
    assert [(f.line, Path(f.file).name) for f in unreadable] == [(4, "one.parquet")]
    assert "broken.wav" in unreadable[0].message


# --- fuzz: any damage to a shard is a finding or exit 2, never an internal error ---------------------------------------

_FUZZ_CLIPS = 3


@pytest.fixture(scope="module")
def small_shards(clean, tmp_path_factory):
    """A three-clip Parquet shard and Arrow file, written by datasets, as bytes."""
    corpus = clean("nemo", 12)
    rows = {key: values[:_FUZZ_CLIPS] for key, values in _rows(corpus).items()}
    folder = tmp_path_factory.mktemp("fuzz")
    _dataset(rows).to_parquet(str(folder / "one.parquet"), batch_size=100)
    _dataset(rows).save_to_disk(str(folder / "saved"), num_shards=1)
    return {"parquet": (folder / "one.parquet").read_bytes(), "arrow": next((folder / "saved").glob("*.arrow")).read_bytes()}


def test_damaged_shards_are_judged_or_refused_never_crash(small_shards, tmp_path_factory):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(kind=st.sampled_from(["parquet", "arrow"]), cut=st.floats(0, 1), flips=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)), max_size=4))
    def check(kind, cut, flips):
        data = bytearray(small_shards[kind])
        for where, value in flips:
            data[min(int(where * len(data)), len(data) - 1)] = value
        data = data[: max(1, int(cut * len(data)))] if cut < 0.98 else data
        path = tmp_path_factory.mktemp("damaged") / f"shard.{kind}"
        path.write_bytes(bytes(data))
        subject = judge("data", [str(path)], no_cache=True, progress=False, jobs=1).subjects[0]
        said = " ".join([subject.unjudged or "", *(f.message for f in subject.findings)])
        assert "internal error" not in said, said

    check()
