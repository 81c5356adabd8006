"""The Ray engine: the same report as the local engine, the same cache, worker failures, URIs, and its errors.

Every test that decodes on Ray shares one local cluster of 2 CPUs (the
session fixture ``ray_cluster`` in tests/conftest.py) and a corpus of a few
clips: starting a cluster costs seconds, a clip milliseconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("soundfile")
pytest.importorskip("pandas")

from tests.datasets.speech import FAULTS, clean_corpus  # noqa: E402
from tests.datasets.test_engine import corpus, raising, refusing, unjsonable  # noqa: E402
from tests.helpers import REPO  # noqa: E402
from trainproof.cli import main  # noqa: E402
from trainproof.data import engine, ray_engine  # noqa: E402
from trainproof.data.cache import Cache  # noqa: E402
from trainproof.data.clip import analyze  # noqa: E402
from trainproof.data.engine import analyze_all  # noqa: E402
from trainproof.data.model import ClipRecord, ClipRef  # noqa: E402

# --- per-clip functions run on Ray workers (top-level in an importable module: workers import them by name) ------


def dying_once(ref: ClipRef) -> ClipRecord:
    """Kills its worker the first time it sees a clip named crash*, leaving a marker file; analyses it normally after."""
    if os.path.basename(ref.audio).startswith("crash"):
        marker = ref.audio + ".died"
        if not os.path.exists(marker):
            with open(marker, "w"):
                pass
            os._exit(3)
    return analyze(ref)


def dying_always(ref: ClipRef) -> ClipRecord:
    """Kills its worker on every clip named crash* (a decoder that segfaults on that file)."""
    if os.path.basename(ref.audio).startswith("crash"):
        os._exit(3)
    return analyze(ref)


def logging_decodes(ref: ClipRef) -> ClipRecord:
    """clip.analyze, with a line per decode appended to decoded.log beside the clip (workers are other processes)."""
    with open(os.path.join(os.path.dirname(ref.audio), "decoded.log"), "a") as log:
        log.write(os.path.basename(ref.audio) + "\n")
    return analyze(ref)


def decoded(folder: Path) -> list[str]:
    log = folder / "decoded.log"
    return sorted(log.read_text().split()) if log.exists() else []


@pytest.fixture(scope="module")
def broken(tmp_path_factory) -> Path:
    """A 12-clip NeMo corpus with an unreadable file, a missing one, a clipped one and a duplicate: findings of several rules."""
    built = clean_corpus(tmp_path_factory.mktemp("ray"), n=12, layout="nemo")
    for name, clip in zip(("not_audio", "missing_file", "clipped", "duplicate_audio"), built.clips[:4]):
        FAULTS[name](built, clip.id)
    return built.path


@pytest.fixture
def ray_runs(monkeypatch) -> list[int]:
    """The number of clips each Ray pass was given, so a test sees that Ray did the decoding."""
    runs: list[int] = []
    real = ray_engine._run

    def counted(ray, work, refs, indices, per_task, analyze):
        runs.append(len(indices))
        return real(ray, work, refs, indices, per_task, analyze)

    monkeypatch.setattr(ray_engine, "_run", counted)
    return runs


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["data", *args])
    out, err = capsys.readouterr()
    return code, out, err


# --- the same report ---------------------------------------------------------------------------------------------


def test_both_engines_give_byte_identical_reports(ray_cluster, broken, capsys, ray_runs):
    local = cli(capsys, str(broken), "--json", "--no-cache", "--engine", "local")
    on_ray = cli(capsys, str(broken), "--json", "--no-cache", "--engine", "ray")
    assert ray_runs == [12], "the 12 clips that exist were decoded on Ray (the missing 13th is known on the driver)"
    assert on_ray[0] == local[0] == 1
    assert on_ray[1] == local[1]
    assert on_ray[2] == local[2] == ""
    found = {f["id"] for f in json.loads(on_ray[1])["subjects"][0]["findings"]}
    assert {"TP-DATA-UNREADABLE", "TP-DATA-MISSING", "TP-DATA-CLIPPING", "TP-DATA-DUPLICATE-AUDIO"} <= found


@pytest.fixture(scope="module")
def broken_hub(tmp_path_factory) -> Path:
    """A 12-clip Hub Parquet dataset (a train and a test shard, clips embedded) with a clipped clip and a leak."""
    built = clean_corpus(tmp_path_factory.mktemp("ray_hub"), n=12, layout="parquet")
    FAULTS["clipped"](built, built.clips[1].id)
    FAULTS["split_leak_audio"](built)
    return built.path


def test_clips_held_in_parquet_shards_give_the_same_report_on_both_engines(ray_cluster, broken_hub, capsys, ray_runs):
    local = cli(capsys, str(broken_hub), "--json", "--no-cache", "--engine", "local")
    on_ray = cli(capsys, str(broken_hub), "--json", "--no-cache", "--engine", "ray")
    assert ray_runs == [13], "every clip, each read from its shard on a Ray worker"
    assert on_ray == local
    found = {f["id"] for f in json.loads(on_ray[1])["subjects"][0]["findings"]}
    assert {"TP-DATA-CLIPPING", "TP-DATA-SPLIT-LEAK-AUDIO"} <= found


def first_clip_slow(ref: ClipRef) -> ClipRecord:
    """The per-clip function, a second late on the clip whose name ends in 08.wav: its task finishes last."""
    if ref.audio.endswith("08.wav") and ref.offset is None:
        time.sleep(1.0)
    return analyze(ref)


def test_records_come_back_in_manifest_order(ray_cluster, tmp_path, monkeypatch):
    """Two clips a task on two CPUs, the first task made the slowest, a Dataset of four clips at a time: the records
    still come back in manifest order."""
    monkeypatch.setattr(ray_engine, "TASK_CLIPS", 2)
    monkeypatch.setattr(ray_engine, "DATASET_CLIPS", 4)
    parts = []
    dataset = ray_engine._dataset
    monkeypatch.setattr(ray_engine, "_dataset", lambda ray, references, *a: parts.append(references.num_rows) or dataset(ray, references, *a))
    paths = corpus(tmp_path / "c", 9)
    refs = [ClipRef(p) for p in reversed(paths)] + [ClipRef(paths[0], offset=0.1, duration=0.4)]
    assert refs[0].audio.endswith("08.wav")
    assert ray_engine.analyze_all(refs, analyze=first_clip_slow) == [analyze(ref) for ref in refs]
    assert parts == [4, 4, 2]


# --- the cache ---------------------------------------------------------------------------------------------------


def test_the_engines_share_the_cache_and_a_rerun_decodes_only_what_changed(ray_cluster, tmp_path, ray_runs):
    folder = tmp_path / "c"
    paths = corpus(folder, 6)
    refs = [ClipRef(p) for p in paths]
    with Cache(tmp_path / "cache") as cache:
        first = ray_engine.analyze_all(refs, cache, analyze=logging_decodes)
        assert cache.count() == 6
    assert decoded(folder) == sorted(os.path.basename(p) for p in paths)
    assert first == [analyze(r) for r in refs]
    with Cache(tmp_path / "cache") as cache:  # the local engine finds every record the Ray engine stored
        assert analyze_all(refs, jobs=1, cache=cache, analyze=refusing) == first
    stat = os.stat(paths[2])
    os.utime(paths[2], ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    (folder / "decoded.log").unlink()
    with Cache(tmp_path / "cache") as cache:
        assert ray_engine.analyze_all(refs, cache, analyze=logging_decodes) == first
    assert decoded(folder) == [os.path.basename(paths[2])]
    assert ray_runs == [6, 1]
    with Cache(tmp_path / "cache") as cache:  # all cached: Ray is not asked at all
        assert ray_engine.analyze_all(refs, cache, analyze=refusing) == first
    assert ray_runs == [6, 1]


# --- failures ----------------------------------------------------------------------------------------------------


def test_a_record_that_will_not_pack_comes_back_as_it_is_as_on_the_local_engine(ray_cluster, tmp_path):
    """Not a crash: the task sends a record pack refuses (an extra JSON cannot hold) pickled, as local workers do."""
    refs = [ClipRef(p) for p in corpus(tmp_path / "c", 2)]
    records = ray_engine.analyze_all(refs, analyze=unjsonable)
    assert [r.error for r in records] == [None, None]
    assert [set(r.extra) for r in records] == [{"when"}, {"when"}]
    assert [r.duration_s for r in records] == [r.duration_s for r in analyze_all(refs, jobs=1)]


def test_an_exception_in_the_analysis_is_that_clips_record_as_on_the_local_engine(ray_cluster, tmp_path):
    paths = corpus(tmp_path / "c", 3)
    bad = corpus(tmp_path / "raise", 1)[0]
    refs = [ClipRef(p) for p in [*paths, bad]]
    records = ray_engine.analyze_all(refs, analyze=raising)
    assert records == analyze_all(refs, jobs=1, analyze=raising)
    assert records[-1].error_kind == "unreadable"
    assert "ValueError: a bug in the analysis" in records[-1].error


def test_a_worker_killed_once_is_retried_and_the_records_are_complete(ray_cluster, tmp_path, monkeypatch, ray_runs):
    monkeypatch.setattr(ray_engine, "TASK_CLIPS", 2)
    paths = corpus(tmp_path / "c", 5)
    crash = str(tmp_path / "c" / "crash.flac")
    os.rename(paths[1], crash)
    refs = [ClipRef(p) for p in [paths[0], crash, *paths[2:]]]
    records = ray_engine.analyze_all(refs, analyze=dying_once)
    assert os.path.exists(crash + ".died"), "the worker was killed"
    assert records == [analyze(ref) for ref in refs]
    assert ray_runs == [5], "Ray's retry completed the block: no clip had to be run again alone"


def test_a_clip_that_kills_every_worker_is_unreadable_and_the_rest_complete(ray_cluster, tmp_path, monkeypatch, capfd):
    monkeypatch.setattr(ray_engine, "MAX_RETRIES", 1)
    monkeypatch.setattr(ray_engine, "TASK_CLIPS", 2)
    paths = corpus(tmp_path / "c", 4)
    crash = str(tmp_path / "c" / "crash.wav")
    os.rename(paths[0], crash)
    refs = [ClipRef(p) for p in [crash, *paths[1:]]]
    records = ray_engine.analyze_all(refs, analyze=dying_always)
    assert records[0] == ClipRecord(audio=crash, error=engine.CRASHED, error_kind="unreadable")  # the local engine's record
    assert records[1:] == [analyze(ref) for ref in refs[1:]]
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err
    assert "worker died" not in captured.out + captured.err, "Ray's notices stay off stdout (the report's) and stderr"


# --- URIs --------------------------------------------------------------------------------------------------------


def uri_manifest(source: Path, where: Path) -> Path:
    """The NeMo manifest ``source`` with every audio path as a file:// URI."""
    lines = []
    for line in source.read_text().splitlines():
        record = json.loads(line)
        path = Path(record["audio_filepath"])
        record["audio_filepath"] = (path if path.is_absolute() else source.parent / path).resolve().as_uri()
        lines.append(json.dumps(record))
    where.write_text("\n".join(lines) + "\n")
    return where


def test_file_uris_give_the_same_report_on_both_engines(ray_cluster, broken, tmp_path, capsys, ray_runs):
    manifest = uri_manifest(broken, tmp_path / "uris.jsonl")
    local = cli(capsys, str(manifest), "--json", "--no-cache")
    on_ray = cli(capsys, str(manifest), "--json", "--no-cache", "--engine", "ray")
    assert ray_runs == [12]
    assert on_ray == local
    report = json.loads(on_ray[1])
    assert report["subjects"][0]["summary"]["readable"] == 11
    plain = json.loads(cli(capsys, str(broken), "--json", "--no-cache")[1])
    ids = lambda r: sorted(f["id"] for f in r["subjects"][0]["findings"])  # noqa: E731
    assert ids(report) == ids(plain), "the same findings as for the same clips named by path"


def test_a_uri_is_stat_and_decoded_through_its_filesystem_and_cached_under_itself(ray_cluster, tmp_path):
    paths = corpus(tmp_path / "c", 3)
    uris = [Path(p).as_uri() for p in paths] + [(tmp_path / "c" / "gone.wav").as_uri(), (tmp_path / "c").as_uri()]
    refs = [ClipRef(u) for u in uris]
    with Cache(tmp_path / "cache") as cache:
        records = ray_engine.analyze_all(refs, cache)
        assert cache.count() == 3
    assert records[:3] == [replace(analyze(ClipRef(p)), audio=u) for p, u in zip(paths, uris)]
    assert [r.error_kind for r in records[3:]] == ["missing", "unreadable"]
    with Cache(tmp_path / "cache") as cache:
        assert analyze_all(refs, jobs=1, cache=cache, analyze=refusing)[:3] == records[:3]  # missing ones are never cached


# --- errors: one line, exit 2 ------------------------------------------------------------------------------------


def run_fresh(*args: str, prelude: str = "") -> subprocess.CompletedProcess:
    """The CLI in a fresh interpreter (no Ray connection yet)."""
    script = f"import sys; {prelude}from trainproof.cli import main; sys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("RAY_ADDRESS", None)
    return subprocess.run([sys.executable, "-c", script, "data", *args], capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize("address", ["127.0.0.1:1", "ray://127.0.0.1:1"])
def test_an_unreachable_cluster_is_one_line_and_exit_2(tmp_path, address):
    pytest.importorskip("ray")
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(json.dumps({"audio_filepath": "x.wav", "text": "hello"}) + "\n")
    done = run_fresh(str(manifest), "--no-cache", "--engine", "ray", "--ray-address", address)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"trainproof: error: cannot reach the Ray cluster at {address}: ")


def test_auto_joins_the_running_cluster(ray_cluster, broken, capsys):
    """Another process (a fresh interpreter) joins the session's cluster with --ray-address auto: the same report, no chatter."""
    local = cli(capsys, str(broken), "--json", "--no-cache")
    done = run_fresh(str(broken), "--json", "--no-cache", "--engine", "ray", "--ray-address", "auto")
    assert (done.returncode, done.stdout, done.stderr) == (local[0], local[1], "")


def test_a_few_clips_to_decode_start_no_local_cluster_and_get_the_local_report(broken, capsys):
    """A fresh process with no cluster and no address, and less audio to decode than the local engine starts workers
    for (a re-run's new clips): decoded in the process, the local report, and Ray never started."""
    pytest.importorskip("ray")
    local = cli(capsys, str(broken), "--json", "--no-cache")
    script = "import sys, ray; from trainproof.cli import main; code = main(sys.argv[1:]); print(ray.is_initialized(), file=sys.stderr); sys.exit(code)"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("RAY_ADDRESS", None)
    argv = ["data", str(broken), "--json", "--no-cache", "--engine", "ray"]
    done = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, timeout=120, env=env)
    assert (done.returncode, done.stdout, done.stderr) == (local[0], local[1], "False\n")


def test_a_cluster_started_for_the_run_is_left_before_the_rules_and_gives_the_local_report(broken, capsys):
    """A fresh process with no cluster and enough audio to decode (the bound set to 0 here) starts a local cluster,
    decodes there, and leaves it once the records are in: its memory is not held through the rules."""
    pytest.importorskip("ray")
    local = cli(capsys, str(broken), "--json", "--no-cache")
    script = (
        "import sys, ray; import trainproof.data.ray_engine as engine; engine.POOL_MIN_BYTES = 0; left = []; real = engine._leave\n"
        "engine._leave = lambda r: (left.append(r.is_initialized()), real(r))\n"
        "from trainproof.cli import main; code = main(sys.argv[1:]); print(left, ray.is_initialized(), file=sys.stderr); sys.exit(code)"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("RAY_ADDRESS", None)
    argv = ["data", str(broken), "--json", "--no-cache", "--engine", "ray", "--jobs", "2"]
    done = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, timeout=300, env=env)
    assert (done.returncode, done.stdout, done.stderr) == (local[0], local[1], "[True] False\n")


def test_a_missing_ray_is_one_line_naming_the_extra(tmp_path):
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(json.dumps({"audio_filepath": "x.wav", "text": "hello"}) + "\n")
    done = run_fresh(str(manifest), "--no-cache", "--engine", "ray", prelude="sys.modules['ray'] = None; ")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "'ray'" in done.stderr
    assert "trainproof data needs" in done.stderr  # the command run, then the extras it reads with: data's and ray's
    assert "pip install -e '.[data,ray]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_ray_address_without_the_ray_engine_is_a_usage_error(tmp_path, capsys):
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(json.dumps({"audio_filepath": "x.wav", "text": "hello"}) + "\n")
    code, out, err = cli(capsys, str(manifest), "--no-cache", "--ray-address", "auto")
    assert code == 2
    assert out == ""
    assert err == "trainproof: error: --ray-address needs --engine ray\n"


def test_references_made_a_chunk_at_a_time_are_one_table_of_them(monkeypatch):
    """The references sent to the cluster are made REFERENCES_CHUNK clips at a time: the same rows, in the order of
    the indices asked for, as one table made at once; no index, no row."""
    from trainproof.data import ray_engine
    from trainproof.data.model import Blob, ClipRefs

    paths = [f"c{i}.wav" for i in range(11)]
    blobs = [Blob(kind="tar", container="s.tar", group=0, row=i, column="", size=3) if i % 4 == 0 else None for i in range(11)]
    refs = ClipRefs(paths, [None if i % 3 else 0.25 * i for i in range(11)], [1.0 + i for i in range(11)], blobs)
    indices = [10, 0, 3, 4, 5, 7, 9, 1]
    whole = ray_engine._references(refs, indices)
    monkeypatch.setattr(ray_engine, "REFERENCES_CHUNK", 3)
    chunked = ray_engine._references(refs, indices)
    assert chunked.num_rows == len(indices) and chunked.column("audio").num_chunks == 3
    assert chunked.to_pylist() == whole.to_pylist()
    assert chunked.column("i").to_pylist() == indices
    assert ray_engine._references(refs, []).num_rows == 0
