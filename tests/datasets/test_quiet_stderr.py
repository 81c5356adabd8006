"""stderr carries trainproof's own lines alone (issue 27, item 9): what libmpg123 prints while decoding a bad MP3, in
this process or in a worker, goes nowhere; a SIGTERM mid-run stops the worker pool as Ctrl-C does, with no "leaked
semaphore" warning from multiprocessing's resource tracker and no worker left behind. Real processes throughout."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

sf = pytest.importorskip("soundfile")
pytest.importorskip("pandas")

from tests.datasets.test_clip import SENTENCE, voiced, write  # noqa: E402
from tests.helpers import REPO  # noqa: E402
from trainproof.data import engine  # noqa: E402
from trainproof.data.clip import analyze  # noqa: E402
from trainproof.data.model import ClipRef  # noqa: E402

RATE = 16000
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="file descriptors, signals and /proc as on POSIX")


def bad_mp3(path) -> str:
    """An ID3 header, then random bytes: libmpg123 prints "Illegal Audio-MPEG-Header" and its resync notes to fd 2."""
    noise = np.random.default_rng(1).integers(0, 256, 20_000, dtype=np.uint8).tobytes()
    path.write_bytes(b"ID3\x03\x00\x00\x00\x00\x00\x00" + noise)
    return str(path)


def garbled_mp3(path) -> str:
    """A real MP3 (written by libsndfile) whose middle third is random bytes."""
    write(path, voiced(RATE, SENTENCE * 2), RATE, "MPEG_LAYER_III", "MP3")
    data = path.read_bytes()
    third = len(data) // 3
    path.write_bytes(data[:third] + np.random.default_rng(2).integers(0, 256, third, dtype=np.uint8).tobytes() + data[2 * third :])
    return str(path)


def pooled_dataset(folder, extra: list[str]) -> str:
    """A NeMo manifest of a minute of speech-like audio listed under enough names (hard links: no disk) for the worker
    pool to start (POOL_MIN_BYTES of audio to decode), then ``extra``."""
    folder.mkdir(exist_ok=True)
    t = np.arange(RATE * 60) / RATE
    source = write(folder / "minute.wav", 0.3 * np.sin(2 * np.pi * 180 * t) * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t)), RATE)
    links = engine.POOL_MIN_BYTES // os.path.getsize(source) + 8
    paths = []
    for i in range(links):
        os.link(source, folder / f"c{i}.wav")
        paths.append(str(folder / f"c{i}.wav"))
    manifest = folder / "m.jsonl"
    manifest.write_text("".join(json.dumps({"audio_filepath": p, "text": f"clip number {i}"}) + "\n" for i, p in enumerate(paths + extra)))
    return str(manifest)


def trainproof(*args: str, **popen) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "trainproof", "data", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, **popen
    )


def test_a_bad_mp3_decoded_in_this_process_prints_nothing_and_stderr_comes_back(tmp_path, capfd):
    for path in (bad_mp3(tmp_path / "bad.mp3"), garbled_mp3(tmp_path / "garbled.mp3")):
        assert analyze(ClipRef(path)).error_kind in ("unreadable", "truncated")
    assert capfd.readouterr().err == ""
    os.write(2, b"still here\n")  # fd 2 is the test's again
    assert capfd.readouterr().err == "still here\n"


def test_a_bad_mp3_decoded_inline_by_the_command_prints_nothing(tmp_path):
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(json.dumps({"audio_filepath": bad_mp3(tmp_path / "bad.mp3"), "text": "hello"}) + "\n")
    run = trainproof(str(manifest), "--no-cache", "--jobs", "1")
    out, err = run.communicate(timeout=120)
    assert run.returncode == 1, err
    assert "TP-DATA-UNREADABLE" in out
    assert err == ""


def test_a_bad_mp3_decoded_in_a_worker_prints_nothing(tmp_path):
    extra = [bad_mp3(tmp_path / "bad.mp3"), garbled_mp3(tmp_path / "garbled.mp3")]
    run = trainproof(pooled_dataset(tmp_path / "ds", extra), "--no-cache", "--jobs", "2", "--json")
    out, err = run.communicate(timeout=300)  # generous: a hang would be a failure of its own
    assert run.returncode == 1, err
    unreadable = [f for f in json.loads(out)["subjects"][0]["findings"] if f["id"] == "TP-DATA-UNREADABLE"]
    assert {"bad.mp3", "garbled.mp3"} <= {name for f in unreadable for name in ("bad.mp3", "garbled.mp3") if name in f["message"]}
    assert err == ""


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (its workers, the fork server, the resource tracker), from /proc."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except OSError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the workers through /proc")
@pytest.mark.parametrize("whom", ["the process", "its process group"])
def test_sigterm_mid_run_stops_the_pool_with_one_line_on_stderr(tmp_path, whom):
    """A CI job cancelled or timed out sends SIGTERM, to the process or to its whole group. Before, the parent died
    at once: its workers outlived it, holding its stderr open, and multiprocessing's resource tracker printed a "leaked
    semaphore" warning. Now the run stops as on Ctrl-C: exit 2, one line, every process it started gone.
    (Timeouts here are generous bounds on a hang, not measurements.)"""
    manifest = pooled_dataset(tmp_path / "ds", [])
    (tmp_path / "ds" / "m.jsonl").write_text((tmp_path / "ds" / "m.jsonl").read_text() * 8)  # decoding for tens of seconds
    run = trainproof(manifest, "--no-cache", "--jobs", "2", start_new_session=True)
    seen: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while len(seen) < 4 and time.monotonic() < deadline:  # two workers, the fork server, the resource tracker
            seen |= _descendants(run.pid)
            time.sleep(0.05)
        assert len(seen) >= 4, f"the pool never started: {seen}"
        time.sleep(0.5)  # mid-run: the workers are decoding
        assert run.poll() is None, "the run ended before it could be stopped"
        if whom == "the process":
            run.send_signal(signal.SIGTERM)
        else:
            os.killpg(run.pid, signal.SIGTERM)
        out, err = run.communicate(timeout=60)
        assert run.returncode == 2, err
        assert err == "trainproof: interrupted\n"
        for pid in seen:
            for _ in range(100):
                if not _alive(pid):
                    break
                time.sleep(0.05)
            else:
                pytest.fail(f"process {pid} outlived the stopped run")
    finally:  # what the test started never outlives it, whatever went wrong
        for pid in seen | ({run.pid} if run.poll() is None else set()):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        if run.returncode is None:
            run.communicate(timeout=60)
