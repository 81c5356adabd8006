"""A text of transcripts: each kept line at its own line number, whatever blocks it was read in; a pipe read once, a
device refused."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tests.helpers import REPO
from trainproof.io import bounded as base
from trainproof.io.errors import InputError
from trainproof.tokenizer import transcripts
from trainproof.tokenizer.transcripts import read_transcripts


def test_blank_lines_are_skipped_and_the_rest_keep_their_numbers(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes("\ufeffone\r\n\r\n  \ntwo\n\t\nthree".encode())
    text = read_transcripts(path)
    assert (text.kind, text.lines, text.texts) == ("text", (1, 4, 6), ("one", "two", "three"))


def test_a_first_line_that_is_only_a_bom_is_skipped(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("\ufeff\nfirst words\n", encoding="utf-8")
    assert read_transcripts(path).lines == (2,)


def test_lines_read_over_many_blocks_keep_their_numbers(tmp_path, monkeypatch):
    monkeypatch.setattr(base, "BLOCK_BYTES", 64)  # a block holds a few lines: the numbering runs on across blocks
    lines = [f"line {i} " + "word " * (i % 7) + "end" if i % 5 else "" for i in range(1, 301)]
    path = tmp_path / "t.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    text = read_transcripts(path)
    expected = [(number, line) for number, line in enumerate(lines, 1) if line]
    assert list(zip(text.lines, text.texts)) == expected
    assert [(n, t) for n, t, _ in base.iter_lines(path) if t] == expected


def test_a_file_of_whitespace_is_empty(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text(" \n\n\t\n", encoding="utf-8")
    with pytest.raises(InputError, match="is empty"):
        read_transcripts(path)


# --- what is not a regular file ---------------------------------------------------------------------------------


@pytest.fixture
def tmpdir_of_run(tmp_path, monkeypatch):
    """The temporary folder a run uses: empty, to be looked at afterwards."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_a_device_is_refused_before_it_is_opened(tmpdir_of_run, monkeypatch):
    """/dev/null stands in for /dev/zero, which never ends: nothing is copied, or even opened."""
    opened = []
    monkeypatch.setattr(transcripts, "open", lambda *args, **kw: opened.append(args) or open(*args, **kw), raising=False)
    with pytest.raises(InputError) as raised:
        read_transcripts(os.devnull)
    assert raised.value.problem == "is not a regular file (a character device); give a text file, a JSONL manifest or a metadata.csv"
    assert opened == []
    assert list(tmpdir_of_run.iterdir()) == []


def _fed(fifo: Path, data: bytes) -> threading.Thread:
    def feed() -> None:
        with open(fifo, "wb") as handle:
            handle.write(data)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    return writer


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
@pytest.mark.parametrize("name", ["t.jsonl", "t.txt"])
def test_a_pipe_is_read_once_under_its_own_name_and_leaves_nothing(tmp_path, tmpdir_of_run, name):
    fifo = tmp_path / name
    os.mkfifo(fifo)
    writer = _fed(fifo, b'{"text": "one two"}\n{"text": "three"}\n' if name.endswith(".jsonl") else b"one two\nthree\n")
    text = read_transcripts(fifo)
    writer.join(timeout=10)
    assert (text.path, text.kind, text.lines, text.texts) == (str(fifo), "jsonl" if name.endswith(".jsonl") else "text", (1, 2), ("one two", "three"))
    assert list(tmpdir_of_run.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_pipe_longer_than_the_limit_is_refused(tmp_path, tmpdir_of_run, monkeypatch):
    monkeypatch.setattr(transcripts, "MAX_STREAM_BYTES", 1000)
    fifo = tmp_path / "t.txt"
    os.mkfifo(fifo)
    writer = _fed(fifo, b"word " * 1000)
    with pytest.raises(InputError, match="is a stream of more than 1,000 bytes"):
        read_transcripts(fifo)
    writer.join(timeout=10)
    assert list(tmpdir_of_run.iterdir()) == []


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="a file without a name is reopened through Linux's /proc")
def test_a_run_killed_while_copying_a_pipe_leaves_nothing_behind(tmp_path):
    """Killed (SIGKILL: no clean-up runs) with 4 MiB of a pipe copied and the pipe still open."""
    fifo = tmp_path / "t.txt"
    os.mkfifo(fifo)
    folder = tmp_path / "tmp"
    folder.mkdir()
    probe = f"from trainproof.tokenizer.transcripts import read_transcripts; read_transcripts({str(fifo)!r})"
    child = subprocess.Popen([sys.executable, "-c", probe], cwd=REPO, env={**os.environ, "TMPDIR": str(folder)})
    try:
        deadline = time.monotonic() + 60
        while True:  # opening without blocking fails until the child has opened its end
            try:
                pipe = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError as exc:
                assert exc.errno == errno.ENXIO, exc
                assert child.poll() is None
                assert time.monotonic() < deadline
                time.sleep(0.05)
        os.set_blocking(pipe, True)
        data = b"word " * ((4 << 20) // 5)
        while data:  # a blocking write returns once the child has read (and copied) all but a pipe's buffer of it
            data = data[os.write(pipe, data) :]
        child.kill()
        child.wait(timeout=10)
        os.close(pipe)
    finally:
        child.kill()
    assert list(folder.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_an_ljspeech_clip_that_is_a_fifo_loses_its_duration_not_the_run(tmp_path):
    (tmp_path / "wavs").mkdir()
    os.mkfifo(tmp_path / "wavs" / "a.wav")
    (tmp_path / "metadata.csv").write_text("a|hello there|hello there\n")
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from trainproof.tokenizer.transcripts import _audio_durations; print(_audio_durations(sys.argv[1:]))", str(tmp_path / "wavs" / "a.wav")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0
    assert done.stdout.startswith("([None], ['1 of 1 clip has no readable audio")
