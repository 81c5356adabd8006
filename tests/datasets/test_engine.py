"""The local engine and the record cache: order, parallel equals inline, what the cache saves and survives."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from dataclasses import replace

import numpy as np
import pytest

sf = pytest.importorskip("soundfile")

from tests.datasets import get_records, put_records
from tests.datasets.test_clip import SENTENCE, stereo, voiced, write  # noqa: E402
from tests.helpers import REPO  # noqa: E402
from trainproof.data import cache as cache_module  # noqa: E402
from trainproof.data import engine  # noqa: E402
from trainproof.data.cache import DB_NAME, Cache, CacheKey  # noqa: E402
from trainproof.data.clip import analyze  # noqa: E402
from trainproof.data.engine import analyze_all  # noqa: E402
from trainproof.data.model import ClipRecord, ClipRef  # noqa: E402
from trainproof.data.records import SIZE, pack, unpack  # noqa: E402

# --- per-clip functions the tests hand the engine (top-level: workers import them by name) -------------

CALLS: list[str] = []


def counting(ref: ClipRef) -> ClipRecord:
    """clip.analyze, counted (in this process: only for jobs=1)."""
    CALLS.append(ref.audio)
    return analyze(ref)


def refusing(ref: ClipRef) -> ClipRecord:
    """Stands for a decode that must not happen: its records differ from analyze's."""
    return ClipRecord(audio=ref.audio, error="decoded although cached", error_kind="unreadable")


def crashing(ref: ClipRef) -> ClipRecord:
    """Kills its worker process on a file named crash*.wav (as a decoder segfault would)."""
    if os.path.basename(ref.audio).startswith("crash"):
        os._exit(3)
    return analyze(ref)


def raising(ref: ClipRef) -> ClipRecord:
    if "raise" in ref.audio:
        raise ValueError("a bug in the analysis")
    return analyze(ref)


def slow(ref: ClipRef) -> ClipRecord:
    """For the Ctrl-C test: records this worker's pid, then takes its time."""
    marker = os.environ.get("TRAINPROOF_TEST_PIDS")
    if marker:
        with open(os.path.join(marker, str(os.getpid())), "w"):
            pass
    time.sleep(0.05)
    return analyze(ref)


# --- a small corpus --------------------------------------------------------------------------------------


def corpus(folder, count: int = 12) -> list[str]:
    """Clips in several formats, rates and channel counts, each different audio."""
    folder.mkdir(parents=True, exist_ok=True)
    kinds = [
        ("wav", "WAV", "PCM_16", 22050, 1),
        ("flac", "FLAC", "PCM_16", 16000, 1),
        ("wav", "WAV", "FLOAT", 44100, 2),
        ("wav", "WAV", "PCM_24", 22050, 2),
    ]
    paths = []
    for i in range(count):
        ext, fmt, subtype, rate, channels = kinds[i % len(kinds)]
        mono = voiced(rate, [("pause", 0.05 * (i % 3)), *SENTENCE], seed=i)
        paths.append(write(folder / f"c{i:03d}.{ext}", mono if channels == 1 else stereo(mono), rate, subtype, fmt))
    return paths


@pytest.fixture
def pooled(monkeypatch):
    """Make the engine start its worker pool however few the clips, with several small chunks in flight."""
    monkeypatch.setattr(engine, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(engine, "CHUNK", 2)
    monkeypatch.setattr(engine, "IN_FLIGHT", 1)


@pytest.fixture(autouse=True)
def _clear_calls():
    CALLS.clear()


# --- order, parallelism ------------------------------------------------------------------------------------


def test_records_come_back_in_order_with_missing_files_in_place(tmp_path):
    paths = corpus(tmp_path / "c", 6)
    refs = [ClipRef(p) for p in reversed(paths)]
    refs.insert(2, ClipRef(str(tmp_path / "missing.wav")))
    records = analyze_all(refs, jobs=1)
    assert [r.audio for r in records] == [r.audio for r in refs]
    assert records[2].error_kind == "missing"
    assert [r for i, r in enumerate(records) if i != 2] == [analyze(ref) for i, ref in enumerate(refs) if i != 2]


def test_parallel_records_equal_inline_records(tmp_path, pooled):
    paths = corpus(tmp_path / "c", 13)
    (tmp_path / "c" / "empty.wav").write_bytes(b"")
    (tmp_path / "c" / "text.wav").write_text("not audio")
    refs = [ClipRef(p) for p in paths] + [ClipRef(str(tmp_path / "c" / n)) for n in ("empty.wav", "text.wav", "gone.wav")]
    refs.append(ClipRef(paths[0], offset=0.2, duration=0.5))
    inline = analyze_all(refs, jobs=1)
    parallel = analyze_all(refs, jobs=2)
    assert parallel == inline
    assert [r.error_kind for r in parallel[-4:]] == ["empty", "unreadable", "missing", None]
    assert parallel[-1].frames == int(0.5 * 22050)


def test_references_made_a_block_at_a_time_are_the_list_they_stand_for(monkeypatch):
    """ClipRefs (the references read_dataset hands the engines) give the ClipRef the manifest's columns make, however
    they are asked for: one at a time, out of order, by slice, negative index, iterated; clips of shards carry their
    blob; a segment's duration only with its offset. A few blocks are kept, not every reference."""
    from trainproof.data import model
    from trainproof.data.model import Blob, ClipRefs

    monkeypatch.setattr(model, "REFS_BLOCK", 4)
    paths = [f"c{i}.wav" for i in range(23)]
    offsets = [None if i % 3 else 0.5 * i for i in range(23)]
    durations = [1.0 + i for i in range(23)]
    blobs = [Blob(kind="tar", container="s.tar", group=0, row=i, column="", size=1) if i % 5 == 0 else None for i in range(23)]
    expected = [ClipRef(p, o, d if o is not None else None, b) for p, o, d, b in zip(paths, offsets, durations, blobs)]
    refs = ClipRefs(paths, offsets, durations, blobs)
    assert len(refs) == 23 and refs.paths is paths
    for i in (0, 22, 5, 4, 21, 3, 13, -1, -23, 8):
        assert refs[i] == expected[i], i
        assert len(refs._blocks) <= 4
    assert refs[2:19:3] == expected[2:19:3] and refs[::-1] == expected[::-1]
    assert list(refs) == expected
    with pytest.raises(IndexError):
        refs[23]
    plain = ClipRefs(paths, offsets, durations)
    assert [ref.blob for ref in plain] == [None] * 23


def test_records_of_references_made_a_block_at_a_time_equal_those_of_a_list(tmp_path, pooled):
    """The engine given ClipRefs puts each record without its path and gives them the references' column: the same
    records as for a list of ClipRef, cached or not, with missing files in place."""
    from trainproof.data.model import ClipRefs

    paths = [*corpus(tmp_path / "c", 9), str(tmp_path / "gone.wav")]
    listed = [ClipRef(p) for p in paths]
    made = ClipRefs(paths, [None] * len(paths), [None] * len(paths))
    with Cache(tmp_path / "cache") as cache:
        cold = analyze_all(made, jobs=2, cache=cache)
        warm = analyze_all(made, jobs=2, cache=cache)
    assert cold == analyze_all(listed, jobs=2) == warm
    assert cold.column("audio") is paths and warm.column("audio") is paths


def test_missing_files_never_reach_a_worker(tmp_path, pooled, monkeypatch):
    def no_pool(*args):
        raise AssertionError("a pool was started")

    monkeypatch.setattr(engine, "_executor", no_pool)
    records = analyze_all([ClipRef(str(tmp_path / f"gone{i}.wav")) for i in range(50)], jobs=2)
    assert {r.error_kind for r in records} == {"missing"}


def test_few_small_clips_are_decoded_inline(tmp_path, monkeypatch):
    """Below POOL_MIN_BYTES of audio, starting workers costs more than it saves."""
    monkeypatch.setattr(engine, "_executor", lambda *args: (_ for _ in ()).throw(AssertionError("a pool was started")))
    assert len(analyze_all([ClipRef(p) for p in corpus(tmp_path / "c", 4)], jobs=2)) == 4


LOADED = "{'numpy', 'soundfile', 'xxhash'} <= __import__('sys').modules.keys()"
"""Evaluated in a worker (eval is pickled by name, so the task imports no module of its own): whether the analysis's
libraries are imported there."""


def test_every_worker_starts_and_imports_before_the_first_clip(pooled):
    """The start check starts one process per worker at once (not the second after the first has answered), each
    importing the default analysis's libraries as it starts; a pool for a custom per-clip function imports none."""
    for analyze_fn, loaded in ((None, True), (counting, False)):
        executor = engine._executor(2, analyze_fn)
        try:
            engine._check_start(executor, 2)
            assert len(executor._processes) == 2
            assert executor.submit(eval, LOADED).result() is loaded
        finally:
            executor.shutdown(wait=True)


def test_progress_counts_up_to_the_total(tmp_path, pooled):
    paths = corpus(tmp_path / "c", 9)
    seen = []
    analyze_all([ClipRef(p) for p in paths], jobs=2, progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (9, 9)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert {t for _, t in seen} == {9}


def test_a_worker_that_dies_costs_only_its_clip(tmp_path, pooled):
    paths = corpus(tmp_path / "c", 8)
    crash = write(tmp_path / "c" / "crash.wav", voiced(16000, SENTENCE), 16000)
    refs = [ClipRef(p) for p in paths[:4]] + [ClipRef(crash)] + [ClipRef(p) for p in paths[4:]]
    records = analyze_all(refs, jobs=2, analyze=crashing)
    assert records[4].error_kind == "unreadable"
    assert "crashed" in records[4].error
    assert [r for i, r in enumerate(records) if i != 4] == [analyze(ref) for i, ref in enumerate(refs) if i != 4]


_COUNT_INLINE = """
import json, sys
from trainproof.data import engine
from trainproof.data.model import ClipRef
engine.POOL_MIN_BYTES = 0
calls = []
inline = engine._inline
engine._inline = lambda ref, analyze: calls.append(ref.audio) or inline(ref, analyze)
records = engine.analyze_all([ClipRef(p) for p in sys.argv[1:]], jobs=2)
print(json.dumps({"kinds": [r.error_kind for r in records], "inline": len(calls)}))
"""


def _run_script(args: list[str], stdin: str | None = None) -> tuple[dict, str]:
    import json

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, *args], input=stdin, capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def test_workers_that_cannot_start_leave_the_clips_to_the_parent(tmp_path):
    """A main module a worker cannot import kills every worker before its first clip: nothing is blamed on the clips."""
    paths = corpus(tmp_path / "c", 5)
    script = tmp_path / "run.py"
    script.write_text('if __name__ != "__main__":\n    raise SystemExit(3)  # a worker cannot import this main module\n' + _COUNT_INLINE)
    result, err = _run_script([str(script), *paths])
    assert result == {"kinds": [None] * 5, "inline": 5}
    assert "Traceback" not in err


def test_a_script_read_from_stdin_decodes_inline(tmp_path):
    """``python - < script``: workers would try to run a main module called <stdin>, so none is started."""
    paths = corpus(tmp_path / "c", 5)
    result, err = _run_script(["-", *paths], stdin=_COUNT_INLINE)
    assert result == {"kinds": [None] * 5, "inline": 5}
    assert "Traceback" not in err


def test_a_worker_that_dies_on_the_first_clip_costs_only_that_clip(tmp_path, pooled):
    """The first clip kills its worker: a worker that started and died on a clip blames that clip, not the pool."""
    paths = corpus(tmp_path / "c", 4)
    crash = write(tmp_path / "c" / "crash.wav", voiced(16000, SENTENCE), 16000)
    records = analyze_all([ClipRef(crash)] + [ClipRef(p) for p in paths], jobs=2, analyze=crashing)
    assert records[0].error_kind == "unreadable"
    assert records[1:] == [analyze(ClipRef(p)) for p in paths]


def test_an_exception_in_the_analysis_is_that_clips_record(tmp_path, pooled):
    paths = corpus(tmp_path / "c", 4)
    bad = write(tmp_path / "c" / "raise.wav", voiced(16000, SENTENCE), 16000)
    for jobs in (1, 2):
        records = analyze_all([ClipRef(p) for p in [*paths, bad]], jobs=jobs, analyze=raising)
        assert records[-1].error_kind == "unreadable"
        assert "ValueError: a bug in the analysis" in records[-1].error
        assert records[:-1] == [analyze(ClipRef(p)) for p in paths]


def test_default_jobs_is_every_usable_core():
    assert 1 <= engine.default_jobs() <= (os.cpu_count() or 1)


# --- the cache ------------------------------------------------------------------------------------------------


def test_a_cached_run_decodes_nothing(tmp_path):
    paths = corpus(tmp_path / "c", 6)
    refs = [ClipRef(p) for p in paths] + [ClipRef(str(tmp_path / "gone.wav"))]
    with Cache(tmp_path / "cache") as cache:
        first = analyze_all(refs, jobs=1, cache=cache, analyze=counting)
        assert len(CALLS) == 7  # the missing one is asked about in the parent, and not cached
        assert cache.count() == 6
        CALLS.clear()
        second = analyze_all(refs, jobs=1, cache=cache, analyze=counting)
    assert CALLS == [str(tmp_path / "gone.wav")]
    assert second == first


def test_records_found_and_decoded_a_few_at_a_time_fill_their_own_rows(tmp_path, monkeypatch):
    """Lookups and decoded records put into the columns 2 at a time (a million clips' are, LOOKUP_BATCH at a time, so
    no batch's packed records are held beside the columns): half cached, half new, a missing file, in order."""
    monkeypatch.setattr(engine, "LOOKUP_BATCH", 2)
    paths = corpus(tmp_path / "c", 9)
    refs = [ClipRef(p) for p in paths[::2]] + [ClipRef(str(tmp_path / "gone.wav"))]
    with Cache(tmp_path / "cache") as cache:
        analyze_all(refs, jobs=1, cache=cache)
        mixed = [ClipRef(p) for p in reversed(paths)] + [ClipRef(str(tmp_path / "gone.wav"))]
        records = analyze_all(mixed, jobs=1, cache=cache, analyze=counting)
    assert len(CALLS) == 4 + 1  # the new clips, and the missing one asked about in the parent
    assert [r.audio for r in records] == [r.audio for r in mixed]
    assert list(records) == [analyze(ref) for ref in mixed]


def test_a_cached_parallel_run_decodes_nothing(tmp_path, pooled):
    paths = corpus(tmp_path / "c", 10)
    refs = [ClipRef(p) for p in paths]
    with Cache(tmp_path / "cache") as cache:
        first = analyze_all(refs, jobs=2, cache=cache)
        assert cache.count() == 10
    with Cache(tmp_path / "cache") as cache:  # a new run: reopened from disk
        second = analyze_all(refs, jobs=2, cache=cache, analyze=refusing)
    assert second == first == [analyze(r) for r in refs]


def unjsonable(ref: ClipRef) -> ClipRecord:
    """A per-clip function whose records carry an extra that JSON cannot hold."""
    return replace(analyze(ref), extra={"when": object()})


def test_a_record_that_will_not_pack_is_kept_as_it_is_and_not_cached(tmp_path):
    paths = corpus(tmp_path / "c", 2)
    with Cache(tmp_path / "cache") as cache:
        records = analyze_all([ClipRef(p) for p in paths], jobs=1, cache=cache, analyze=unjsonable)
        assert [set(r.extra) for r in records] == [{"when"}, {"when"}]
        assert records[1].duration_s == analyze(ClipRef(paths[1])).duration_s
        assert cache.count() == 0


def test_infinities_and_nan_survive_the_cache(tmp_path):
    silent = write(tmp_path / "zero.wav", np.zeros(16000), 16000)
    with Cache(tmp_path / "cache") as cache:
        first = analyze_all([ClipRef(silent)], jobs=1, cache=cache)
    with Cache(tmp_path / "cache") as cache:
        second = analyze_all([ClipRef(silent)], jobs=1, cache=cache, analyze=refusing)
    assert second == first
    assert second[0].level_db == -float("inf")
    # a level of -inf (a silent frame) is one the analysis writes; a NaN or inf where it writes none is a miss (test_cache.py),
    # but a custom analysis's extra keeps what it holds
    odd = ClipRecord("x", level_db=-20.0, last_frame_db=float("-inf"), extra={"a": float("-inf"), "b": [1, 2], "n": float("nan")})
    key = CacheKey(str(tmp_path / "x.wav"), 10, 1)
    with Cache(tmp_path / "cache") as cache:
        put_records(cache, [(key, odd)])
    with Cache(tmp_path / "cache") as cache:
        back = get_records(cache, [key])[key]
    assert back.last_frame_db == float("-inf")
    for extra in (back.extra, unpack("x", *pack(odd)).extra):  # through the cache, and packed alone
        assert np.isnan(extra.pop("n"))
        assert extra == {"a": float("-inf"), "b": [1, 2]}


@pytest.mark.parametrize(
    "damage",
    [
        lambda packed, texts: (packed[:-1], texts),  # another size
        lambda packed, texts: (packed.decode("latin-1"), texts),  # text where bytes belong
        lambda packed, texts: (packed, '{"extra": 3}'),
        lambda packed, texts: (packed, '{"error": 5}'),
        lambda packed, texts: (packed, '{"no_such_field": 1}'),
        lambda packed, texts: (packed, "[1, 2]"),
        lambda packed, texts: (packed, "[1, 2"),
        lambda packed, texts: (packed.replace(b"WAV", b"W\xc4V"), texts),  # not ASCII in a string's slot
    ],
)
def test_a_packed_row_pack_cannot_have_written_is_refused(damage):
    packed, texts = damage(*pack(ClipRecord("x", size=7, format="WAV", extra={"frames_read": 3})))
    with pytest.raises(ValueError):
        unpack("x", packed, texts)


def test_a_row_with_extra_that_is_not_an_object_is_a_miss(tmp_path):
    path = corpus(tmp_path / "c", 1)[0]
    with Cache(tmp_path / "cache") as cache:
        first = analyze_all([ClipRef(path)], jobs=1, cache=cache)
    for texts in ("[1, 2", "[1, 2]", "1e999999", '{"extra": [1]}', '{"format": 3}'):
        db = sqlite3.connect(tmp_path / "cache" / DB_NAME)
        db.execute("UPDATE clips SET texts = ?", (texts,))
        db.commit()
        db.close()
        CALLS.clear()
        with Cache(tmp_path / "cache") as cache:
            assert analyze_all([ClipRef(path)], jobs=1, cache=cache, analyze=counting) == first
        assert CALLS == [path]


def test_a_clip_listed_twice_is_found_in_the_cache_twice(tmp_path):
    """The same file on two lines (a duplicated line, one clip with two transcripts) is one cache row, found for both."""
    paths = corpus(tmp_path / "c", 2)
    refs = [ClipRef(paths[0]), ClipRef(paths[1]), ClipRef(paths[0]), ClipRef(paths[0], offset=0.1, duration=0.2), ClipRef(paths[0])]
    with Cache(tmp_path / "cache") as cache:
        first = analyze_all(refs, jobs=1, cache=cache)
    CALLS.clear()
    with Cache(tmp_path / "cache") as cache:
        assert analyze_all(refs, jobs=1, cache=cache, analyze=counting) == first
    assert CALLS == []


def test_a_changed_file_is_decoded_again(tmp_path):
    paths = corpus(tmp_path / "c", 3)
    refs = [ClipRef(p) for p in paths]
    with Cache(tmp_path / "cache") as cache:
        analyze_all(refs, jobs=1, cache=cache)
        stat = os.stat(paths[0])
        os.utime(paths[0], ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))  # touched: same bytes, new mtime
        CALLS.clear()
        analyze_all(refs, jobs=1, cache=cache, analyze=counting)
        assert CALLS == [paths[0]]
        # rewritten with other audio of another length, mtime put back: the size still tells
        before = os.stat(paths[1])
        write(paths[1], voiced(22050, [("speech", 0.3)], seed=99), 22050, "PCM_16", "FLAC")
        os.utime(paths[1], ns=(before.st_atime_ns, before.st_mtime_ns))
        CALLS.clear()
        records = analyze_all(refs, jobs=1, cache=cache, analyze=counting)
        assert CALLS == [paths[1]]
        assert records[1].duration_s == pytest.approx(0.3)
        assert cache.count() == 3  # replaced, not added


@pytest.mark.parametrize("share", [0.0, 2.0], ids=["whole-table", "path-by-path"])
def test_a_lookup_reads_the_whole_table_or_path_by_path_alike(tmp_path, monkeypatch, share):
    """A lookup of most of the cache reads the table in one pass; of a few of its rows, QUERY_BATCH paths a query: the
    same hits either way, and only valid ones (a stale size, another segment or another version is a miss)."""
    monkeypatch.setattr(cache_module, "SCAN_SHARE", share)
    monkeypatch.setattr(cache_module, "QUERY_BATCH", 2)
    keys = [CacheKey(str(tmp_path / f"c{i}.wav"), 100 + i, 7) for i in range(9)]
    with Cache(tmp_path / "cache") as cache:
        put_records(cache, [(key, ClipRecord(key.path, size=key.size, format="WAV")) for key in keys])
        put_records(cache, [(keys[0]._replace(offset=1.0, duration=2.0), ClipRecord(keys[0].path, size=1))])
    asked = [keys[1], keys[4]._replace(size=1), keys[5], keys[0]._replace(offset=1.0, duration=2.0), keys[8], CacheKey("/nowhere.wav", 1, 1)]
    with Cache(tmp_path / "cache") as cache:
        found = get_records(cache, asked)
        assert sorted(found) == sorted([keys[1], keys[5], asked[3], keys[8]])
        assert found[keys[5]] == ClipRecord(keys[5].path, size=105, format="WAV")
        assert found[asked[3]].size == 1
    with Cache(tmp_path / "cache", version=99) as cache:
        assert get_records(cache, asked) == {}


def test_another_segment_of_the_same_file_is_another_entry(tmp_path):
    path = corpus(tmp_path / "c", 1)[0]
    refs = [ClipRef(path), ClipRef(path, 0.0, 0.5), ClipRef(path, 0.5, 0.5)]
    with Cache(tmp_path / "cache") as cache:
        first = analyze_all(refs, jobs=1, cache=cache)
        assert cache.count() == 3
        CALLS.clear()
        assert analyze_all(refs, jobs=1, cache=cache, analyze=counting) == first
        assert CALLS == []
    assert len({r.audio_hash for r in first}) == 3


def test_a_new_analysis_version_invalidates_every_record(tmp_path):
    paths = corpus(tmp_path / "c", 3)
    refs = [ClipRef(p) for p in paths]
    with Cache(tmp_path / "cache") as cache:
        analyze_all(refs, jobs=1, cache=cache)
    with Cache(tmp_path / "cache", version=cache.version + 1) as newer:
        CALLS.clear()
        analyze_all(refs, jobs=1, cache=newer, analyze=counting)
        assert sorted(CALLS) == sorted(paths)
        assert newer.count() == 3


def test_the_analysis_version_comes_from_the_model(tmp_path, monkeypatch):
    from trainproof.data import model

    monkeypatch.setattr(model, "ANALYSIS_VERSION", 12345)
    assert Cache(tmp_path / "cache").version == 12345


def test_relative_and_absolute_paths_share_an_entry(tmp_path, monkeypatch):
    path = corpus(tmp_path / "c", 1)[0]
    monkeypatch.chdir(tmp_path)
    with Cache(tmp_path / "cache") as cache:
        analyze_all([ClipRef(path)], jobs=1, cache=cache)
        CALLS.clear()
        records = analyze_all([ClipRef(os.path.join("c", os.path.basename(path)))], jobs=1, cache=cache, analyze=counting)
    assert CALLS == []
    assert records[0].audio == os.path.join("c", os.path.basename(path))  # the path as the caller gave it


def test_the_cache_directory_is_tagged_and_ignored(tmp_path):
    with Cache(tmp_path / "cache") as cache:
        analyze_all([ClipRef(p) for p in corpus(tmp_path / "c", 1)], jobs=1, cache=cache)
    assert (tmp_path / "cache" / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (tmp_path / "cache" / ".gitignore").read_text().splitlines()[-1] == "*"
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [".gitignore", "CACHEDIR.TAG", DB_NAME]


def test_an_existing_folder_given_as_the_cache_is_not_tagged(tmp_path):
    """--cache-dir . in a project must not drop a .gitignore of * into it."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "metadata.csv").write_text("a|b\n")
    with Cache(project) as cache:
        analyze_all([ClipRef(p) for p in corpus(tmp_path / "c", 1)], jobs=1, cache=cache)
        assert cache.count() == 1
    assert sorted(p.name for p in project.iterdir()) == [DB_NAME, "metadata.csv"]


def test_no_cache_writes_nothing(tmp_path, monkeypatch):
    paths = corpus(tmp_path / "c", 2)
    monkeypatch.chdir(tmp_path)
    before = sorted(os.listdir(tmp_path))
    analyze_all([ClipRef(p) for p in paths], jobs=1, cache=None)
    Cache()  # a cache object that is never used creates nothing either
    assert sorted(os.listdir(tmp_path)) == before
    assert not (tmp_path / cache_module.DEFAULT_DIR).exists()


def test_the_default_directory_is_in_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with Cache() as cache:
        analyze_all([ClipRef(p) for p in corpus(tmp_path / "c", 1)], jobs=1, cache=cache)
    assert (tmp_path / ".trainproof_cache" / DB_NAME).is_file()


def test_a_corrupt_cache_is_replaced_with_a_note(tmp_path):
    paths = corpus(tmp_path / "c", 3)
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "CACHEDIR.TAG").write_text(cache_module.CACHEDIR_TAG)  # the cache's own folder
    (tmp_path / "cache" / DB_NAME).write_bytes(b"this is not a database" * 100)
    with Cache(tmp_path / "cache") as cache:
        records = analyze_all([ClipRef(p) for p in paths], jobs=1, cache=cache)
        assert any("not a readable database" in note for note in cache.notes)
        assert cache.count() == 3
    assert records == [analyze(ClipRef(p)) for p in paths]


@pytest.mark.parametrize("kind", ["not a database", "someone else's database"])
def test_a_file_of_the_cache_s_name_in_a_folder_not_its_own_is_left_alone(tmp_path, kind):
    paths = corpus(tmp_path / "c", 2)
    project = tmp_path / "project"
    project.mkdir()
    (project / "README").write_text("mine")
    if kind == "not a database":
        (project / DB_NAME).write_bytes(b"my own notes")
    else:
        db = sqlite3.connect(project / DB_NAME)
        db.execute("CREATE TABLE clips (v TEXT)")
        db.execute("INSERT INTO clips VALUES ('precious')")
        db.commit()
        db.close()
    before = (project / DB_NAME).read_bytes()
    with Cache(project) as cache:
        records = analyze_all([ClipRef(p) for p in paths], jobs=1, cache=cache)
        assert not cache.usable
        assert any("is not a trainproof cache" in note for note in cache.notes)
    assert records == [analyze(ClipRef(p)) for p in paths]
    assert (project / DB_NAME).read_bytes() == before
    assert sorted(p.name for p in project.iterdir()) == ["README", DB_NAME]


def test_a_trainproof_cache_in_a_folder_not_its_own_is_used(tmp_path):
    paths = corpus(tmp_path / "c", 2)
    project = tmp_path / "project"
    project.mkdir()
    with Cache(project) as cache:  # empty: the cache's own, tagged
        analyze_all([ClipRef(p) for p in paths], jobs=1, cache=cache)
    (project / "CACHEDIR.TAG").unlink()
    (project / "README").write_text("mine")
    CALLS.clear()
    with Cache(project) as cache:
        analyze_all([ClipRef(p) for p in paths], jobs=1, cache=cache, analyze=counting)
        assert cache.usable
    assert CALLS == []


def test_a_cache_of_another_schema_is_emptied(tmp_path):
    (tmp_path / "cache").mkdir()
    db = sqlite3.connect(tmp_path / "cache" / DB_NAME)
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("INSERT INTO meta VALUES ('schema', '0')")
    db.execute("CREATE TABLE clips (whatever)")
    db.commit()
    db.close()
    path = corpus(tmp_path / "c", 1)[0]
    with Cache(tmp_path / "cache") as cache:
        analyze_all([ClipRef(path)], jobs=1, cache=cache)
        assert cache.count() == 1
        assert cache.notes == []


@pytest.mark.parametrize(
    "update",
    [
        ("UPDATE clips SET packed = 'fast'", ()),  # text where the packed bytes belong: a row no version wrote
        ("UPDATE clips SET packed = substr(packed, 1, 100)", ()),  # bytes of another layout
        ("UPDATE clips SET packed = ?", (b"\xff" * SIZE,)),  # the right size, but no ASCII where a string's slot is
    ],
)
def test_an_unreadable_row_is_a_miss(tmp_path, update):
    path = corpus(tmp_path / "c", 1)[0]
    with Cache(tmp_path / "cache") as cache:
        first = analyze_all([ClipRef(path)], jobs=1, cache=cache)
    db = sqlite3.connect(tmp_path / "cache" / DB_NAME)
    db.execute(*update)
    db.commit()
    db.close()
    with Cache(tmp_path / "cache") as cache:
        assert analyze_all([ClipRef(path)], jobs=1, cache=cache, analyze=counting) == first
        assert CALLS == [path]


def test_a_locked_cache_is_skipped_with_a_note(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_module, "TIMEOUT_S", 0.2)
    paths = corpus(tmp_path / "c", 2)
    with Cache(tmp_path / "cache") as cache:
        analyze_all([ClipRef(paths[0])], jobs=1, cache=cache)
    other = sqlite3.connect(tmp_path / "cache" / DB_NAME, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")  # another run, mid-write
    try:
        with Cache(tmp_path / "cache") as cache:
            records = analyze_all([ClipRef(p) for p in paths], jobs=1, cache=cache)
            assert cache.notes
            assert "going on without it" in cache.notes[0]
            assert not cache.usable
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert records == [analyze(ClipRef(p)) for p in paths]


def test_a_cache_directory_that_cannot_be_created_is_skipped(tmp_path):
    (tmp_path / "file").write_text("in the way")
    path = corpus(tmp_path / "c", 1)[0]
    with Cache(tmp_path / "file" / "cache") as cache:
        assert analyze_all([ClipRef(path)], jobs=1, cache=cache) == [analyze(ClipRef(path))]
        assert cache.notes
        assert "cannot be created" in cache.notes[0]


def test_concurrent_runs_share_the_cache(tmp_path):
    """Two processes filling one cache at once: both finish, and every clip is in it once."""
    paths = corpus(tmp_path / "c", 8)
    script = textwrap.dedent(
        f"""
        import sys
        from trainproof.data.cache import Cache
        from trainproof.data.engine import analyze_all
        from trainproof.data.model import ClipRef
        paths = {paths!r}
        order = paths if sys.argv[1] == "0" else paths[::-1]
        with Cache({str(tmp_path / "cache")!r}) as cache:
            for p in order:
                analyze_all([ClipRef(p)], jobs=1, cache=cache)
            print(len(cache.notes))
        """
    )
    runs = [subprocess.Popen([sys.executable, "-c", script, str(i)], cwd=REPO, stdout=subprocess.PIPE, text=True) for i in range(2)]
    outputs = [run.communicate(timeout=120)[0].strip() for run in runs]
    assert [run.returncode for run in runs] == [0, 0]
    assert outputs == ["0", "0"]
    with Cache(tmp_path / "cache") as cache:
        assert cache.count() == 8


def test_the_key_of_a_segment_keeps_exact_floats():
    key = CacheKey("/a.wav", 1, 2, 0.1, 1 / 3)
    assert key.segment == "0.1:0.3333333333333333"
    assert CacheKey("/a.wav", 1, 2).segment == ""
    assert replace(ClipRecord("x"), audio="y").audio == "y"


# --- Ctrl-C -------------------------------------------------------------------------------------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")
def test_ctrl_c_stops_the_workers(tmp_path):
    paths = corpus(tmp_path / "c", 4) * 100  # 400 clips at 50 ms each: far longer than the test waits
    pids = tmp_path / "pids"
    pids.mkdir()
    script = textwrap.dedent(
        f"""
        import sys
        from trainproof.data import engine
        from trainproof.data.model import ClipRef
        from tests.datasets.test_engine import slow
        if __name__ == "__main__":
            engine.POOL_MIN_BYTES = 0
            try:
                engine.analyze_all([ClipRef(p) for p in {paths!r}], jobs=2, analyze=slow)
            except KeyboardInterrupt:
                print("interrupted", flush=True)
                sys.exit(130)
            print("finished", flush=True)
        """
    )
    (tmp_path / "run.py").write_text(script)
    env = {**os.environ, "TRAINPROOF_TEST_PIDS": str(pids), "PYTHONPATH": str(REPO)}
    run = subprocess.Popen(
        [sys.executable, str(tmp_path / "run.py")], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 60
    while len(os.listdir(pids)) < 2 and time.monotonic() < deadline:  # both workers are decoding
        time.sleep(0.05)
    assert len(os.listdir(pids)) >= 1, "the workers never started"
    run.send_signal(signal.SIGINT)
    out, err = run.communicate(timeout=30)
    assert run.returncode == 130, err
    assert out.strip() == "interrupted"
    assert "Traceback" not in err  # no worker printed one
    for pid in (int(name) for name in os.listdir(pids)):
        for _ in range(100):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"worker {pid} outlived the interrupted run")
