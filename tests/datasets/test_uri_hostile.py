"""A manifest from someone else names clips by URI: it chooses no endpoint, runs no program, and an object store that
cannot be reached is one exit-2 line in bounded time (issue 27, item 2).

Each test runs ``trainproof data`` in a fresh process, with fake AWS credentials in its environment, HOME in a
temporary folder (no ~/.aws) and no Google credentials. This machine has no route to a real bucket, so ``s3://`` and
``gs://`` clips are offline here: DNS fails. The hang tests carry a generous subprocess timeout, never a wall-time
assertion.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("soundfile")
pytest.importorskip("pyarrow")

import trainproof  # noqa: E402
from tests.datasets.test_engine import corpus  # noqa: E402

SECRET = "wJalrXUtnFEMI-fake-secret-trainproof-27"
TOKEN = "IQoJb3JpZ2luX2VjE-fake-session-token-27"
HANG_TIMEOUT_S = 150
"""A generous bound for a run that must end by itself (the old code hung for minutes)."""


class Listener:
    """A TCP listener on 127.0.0.1 that records every connection and what it was sent, and never answers."""

    def __init__(self) -> None:
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(64)
        self.port = self.server.getsockname()[1]
        self.connections = 0
        self.received = bytearray()
        self._held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.connections += 1
            self._held.append(conn)
            threading.Thread(target=self._read, args=(conn,), daemon=True).start()

    def _read(self, conn: socket.socket) -> None:
        try:
            while chunk := conn.recv(65536):
                self.received.extend(chunk)
        except OSError:
            pass

    def close(self) -> None:
        self.server.close()
        for conn in self._held:
            conn.close()


@pytest.fixture
def listener():
    heard = Listener()
    yield heard
    heard.close()


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a CI job with cloud credentials: fake AWS keys, nothing of this machine's cloud setup."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "GOOGLE_", "CLOUD_STORAGE_", "AZURE_"))}
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env.update(
        HOME=str(home),
        AWS_ACCESS_KEY_ID="AKIAFAKEKEY27TRAINPROOF",
        AWS_SECRET_ACCESS_KEY=SECRET,
        AWS_SESSION_TOKEN=TOKEN,
        PYTHONPATH=os.pathsep.join(filter(None, [str(Path(trainproof.__file__).resolve().parents[1]), env.get("PYTHONPATH")])),
    )
    env.update(extra)
    return env


def run(tmp_path: Path, audio: list[str], env: dict[str, str], timeout: float = HANG_TIMEOUT_S) -> tuple[subprocess.CompletedProcess, str]:
    """``trainproof data`` on a NeMo manifest listing ``audio``; the process and its JSON report (or "")."""
    manifest = tmp_path / "manifest.jsonl"
    lines = (json.dumps({"audio_filepath": a, "text": f"clip {i}", "duration": 1.0}) for i, a in enumerate(audio))
    manifest.write_text("".join(line + "\n" for line in lines))
    report = tmp_path / "report.json"
    argv = [sys.executable, "-m", "trainproof", "data", "--no-cache", "--jobs", "1", "--json-file", str(report), "--", str(manifest)]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=timeout)
    return done, report.read_text() if report.exists() else ""


def one_error_line(done: subprocess.CompletedProcess) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("trainproof: error: "), done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


@pytest.mark.parametrize(
    "template",
    [
        "s3://b/x.wav?endpoint_override=127.0.0.1:{port}&scheme=http",
        "gs://b/x.wav?endpoint_override=127.0.0.1:{port}&scheme=http",
        "s3://AKIA:secret@127.0.0.1:{port}/x.wav",
        "s3://127.0.0.1:{port}/x.wav",
    ],
)
def test_a_manifest_uri_chooses_no_endpoint(tmp_path, listener, template):
    """The issue's line sent the environment's key and session token over plain HTTP to the listener. Now the clip is
    refused before any library sees it: nothing connects, and no credential appears in any output."""
    address = template.format(port=listener.port)
    done, report = run(tmp_path, [address], environment(tmp_path, AWS_REGION="us-east-1"))
    assert listener.connections == 0
    assert not listener.received, bytes(listener.received[:300])
    for output in (done.stdout, done.stderr, report):
        assert SECRET not in output
        assert TOKEN not in output
    assert done.returncode == 1, done.stderr
    record = json.loads(report)["subjects"][0]
    assert any(f["id"] == "TP-DATA-UNREADABLE" for f in record["findings"])
    assert "is not read" in done.stdout or "not a bucket name" in done.stdout


def test_an_abfs_uri_runs_no_program(tmp_path):
    """pyarrow's Azure filesystem ran ``/bin/sh -c "az account get-access-token"`` for an abfs:// line. A fake ``az``
    first on PATH leaves a mark if anything runs it; nothing may."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mark = tmp_path / "az-ran"
    fake = bin_dir / "az"
    fake.write_text(f"#!/bin/sh\necho ran >> {mark}\nexit 1\n")
    fake.chmod(0o755)
    env = environment(tmp_path, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    done, report = run(tmp_path, ["abfs://container@account.dfs.core.windows.net/x.wav", "az://container/x.wav"], env)
    assert not mark.exists(), "az was run"
    assert done.returncode == 1, done.stderr
    assert "scheme abfs:// is not read" in done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("region", [None, "eu-west-1"])
def test_an_offline_s3_bucket_is_one_exit_2_line(tmp_path, region):
    """No route to S3 (a DNS failure here): the region lookup (or, with AWS_REGION set, the first request) fails,
    and the run says so once about the manifest, instead of a FAIL naming every clip. Hang test: subprocess timeout."""
    env = environment(tmp_path, **({"AWS_REGION": region} if region else {}))
    done, report = run(tmp_path, [f"s3://trainproof-offline-27/clip{i}.wav" for i in range(5)], env)
    line = one_error_line(done)
    assert "manifest.jsonl: cannot reach s3://trainproof-offline-27: " in line
    assert SECRET not in done.stdout + done.stderr + report


def test_an_offline_gcs_bucket_is_one_exit_2_line(tmp_path):
    """A gs:// line hung past 100 s offline (GCS retries for minutes by default). Hang test: subprocess timeout."""
    done, _ = run(tmp_path, ["gs://trainproof-offline-27/a.wav", "gs://trainproof-offline-27/b.wav"], environment(tmp_path))
    line = one_error_line(done)
    assert "cannot reach gs://trainproof-offline-27: " in line
    assert len(line) < 600, "GCS's retry metadata is left out"


def test_many_buckets_are_looked_up_side_by_side(tmp_path, listener):
    """Each distinct bucket cost about 6 s of region lookup, one after another (60 buckets: 6 minutes). Here DNS fails
    at once, which would not tell the two apart, so the environment sends the lookups through an HTTPS proxy (the
    listener) that never answers: each takes its whole URI_REGION_TIMEOUT_S (10 s). One after another, some 5 of the
    20 buckets would be asked before reach gives up (URI_REACH_TIMEOUT_S, 45 s); side by side, all 20 are, and the run
    is one line. The anonymous lookup carries no credential. Hang test: subprocess timeout."""
    buckets = [f"trainproof-offline-{i:03d}" for i in range(20)]
    env = environment(tmp_path, https_proxy=f"http://127.0.0.1:{listener.port}")
    for variable in ("HTTPS_PROXY", "no_proxy", "NO_PROXY"):
        env.pop(variable, None)
    done, _ = run(tmp_path, [f"s3://{b}/a.wav" for b in buckets], env)
    line = one_error_line(done)
    assert f"cannot reach s3://{buckets[0]}: cannot look up the bucket's region: " in line
    assert "(and 19 other stores)" in line
    assert listener.connections == len(buckets), "every bucket's lookup was under way at once"
    assert SECRET.encode() not in listener.received
    assert TOKEN.encode() not in listener.received


@pytest.mark.parametrize("variable", ["AWS_ENDPOINT_URL", "CLOUD_STORAGE_EMULATOR_ENDPOINT"])
def test_a_store_that_never_answers_is_given_up_on_in_bounded_time(tmp_path, listener, variable):
    """The user's own environment names the endpoint (honoured: the listener is asked), and it accepts connections
    and never answers: the run gives up on the store after its bounded request time (GCS alone would wait two
    minutes a request) and says so in one line. Hang test: subprocess timeout."""
    scheme = "s3" if variable.startswith("AWS") else "gs"
    env = environment(tmp_path, **{variable: f"http://127.0.0.1:{listener.port}"})
    done, _ = run(tmp_path, [f"{scheme}://bucket/a.wav", f"{scheme}://bucket/b.wav"], env)
    line = one_error_line(done)
    assert f"cannot reach {scheme}://bucket: " in line
    assert listener.connections >= 1, "the environment's endpoint is the one asked"
    if scheme == "gs":
        assert SECRET.encode() not in listener.received


EMPTY_LISTING = (
    b'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
    b"<Name>bucket</Name><Prefix></Prefix><KeyCount>0</KeyCount><MaxKeys>1</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>"
)


class FadingStore(Listener):
    """An S3 endpoint that answers its first ``answers`` requests as a bucket without the object would (HEAD: 404,
    a listing: empty) and then stops answering, connections left open."""

    def __init__(self, answers: int) -> None:
        self.answers = answers
        self.requests: list[str] = []
        super().__init__()

    def _read(self, conn: socket.socket) -> None:
        pending = b""
        try:
            while chunk := conn.recv(65536):
                pending += chunk
                while b"\r\n\r\n" in pending:
                    head, _, pending = pending.partition(b"\r\n\r\n")
                    self.requests.append(head.split(b"\r\n", 1)[0].decode("latin-1"))
                    if len(self.requests) > self.answers:
                        continue
                    if head.startswith(b"HEAD"):
                        conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                    else:
                        conn.sendall(
                            b"HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: %d\r\n\r\n%s"
                            % (len(EMPTY_LISTING), EMPTY_LISTING)
                        )
        except OSError:
            pass


def test_a_store_that_stops_answering_mid_run_is_one_exit_2_line(tmp_path):
    """The store answers the first look (a HEAD and a listing: the clip is missing) and then goes silent: the clips
    asked about after it are given up on within the bounded request time, not waited on each, and the run is one
    exit-2 line, not a FAIL per clip. Hang test: subprocess timeout."""
    store = FadingStore(answers=2)
    try:
        env = environment(tmp_path, AWS_ENDPOINT_URL=f"http://127.0.0.1:{store.port}")
        done, _ = run(tmp_path, [f"s3://bucket/clip{i}.wav" for i in range(20)], env)
    finally:
        store.close()
    line = one_error_line(done)
    assert "cannot reach s3://bucket: no answer within " in line
    assert len(store.requests) > 2, "the first look was answered, the next request was not"


def test_file_uris_are_read_and_judged(tmp_path):
    """What must keep working: file:// URIs of real clips are decoded like their paths, and nothing is refused."""
    paths = corpus(tmp_path / "c", 3)
    done, report = run(tmp_path, [Path(p).as_uri() for p in paths], environment(tmp_path))
    assert done.returncode in (0, 1), done.stderr
    subject = json.loads(report)["subjects"][0]
    assert subject["summary"]["readable"] == 3
    assert not any(f["id"] in ("TP-DATA-UNREADABLE", "TP-DATA-MISSING") for f in subject["findings"])
