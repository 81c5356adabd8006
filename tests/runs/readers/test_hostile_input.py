"""Hostile and careless input to the readers (issue 7): every failure is one InputError, in bounded time and memory."""

from __future__ import annotations

import json
import math
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import REPO, hf_entries, write_hf_state
from trainproof.commands import judge
from trainproof.config import DEFAULT_SETTINGS
from trainproof.io import bounded
from trainproof.io.errors import InputError
from trainproof.runs.readers import READERS, base, hf, jsonl, read_run, tfrecord
from trainproof.runs.readers import csv as csv_reader

TENSORBOARD = REPO / "tests" / "data" / "tensorboard"
GOOD_LINES = "".join(json.dumps({"step": s, "loss": 2.0 / s}) + "\n" for s in range(1, 301))


def test_the_limits_are_what_the_readme_documents():
    assert bounded.MAX_LINE_BYTES == 1024 * 1024
    assert bounded.MAX_DOCUMENT_BYTES == 512 * 1024 * 1024


# --- bounded lines and memory ---------------------------------------------------------------------


def test_zero_bytes_after_good_lines_are_an_overlong_line_read_in_bounded_memory(tmp_path):
    """300 good JSONL lines, then 2 GB of zero bytes (a sparse file): an error at line 301, never the whole file in memory."""
    path = tmp_path / "log.jsonl"
    path.write_text(GOOD_LINES)
    with path.open("r+b") as handle:
        handle.truncate(2 * 1024**3)
    with pytest.raises(InputError):  # untraced: what the reader imports when first needed (polars, 14 MiB) is no read
        read_run(path)
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match=r"line 301 is longer than 1 MiB: no log, manifest or transcript line is that long"):
            read_run(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 32 * 1024 * 1024


@pytest.mark.parametrize(
    ("fmt", "head"),
    [
        ("jsonl", b'{"step": 1, "loss": 2.0}\n{"step": 2, "loss": 1.0}\n'),
        ("csv", b"step,loss\n1,2.0\n"),
        ("coqui", b"> EPOCH: 0/1\n | > loss: 1\n"),
        ("mlflow", b"1700000000000 2.0 1\n1700000001000 1.9 2\n"),
    ],
)
def test_every_line_reader_stops_at_an_overlong_line(tmp_path, fmt, head):
    path = tmp_path / "log"
    path.write_bytes(head + b"x" * (bounded.MAX_LINE_BYTES + 1) + b"\n" + head)
    with pytest.raises(InputError, match="line 3 is longer than 1 MiB"):
        read_run(path, fmt)


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "coqui", "mlflow"])
def test_a_line_reader_given_an_endless_device_refuses_it_before_reading(fmt):
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero here")
    with pytest.raises(InputError, match=r"is not a regular file \(a character device\)"):
        READERS[fmt].read(Path("/dev/zero"))


@pytest.mark.parametrize("block", [1, 2, 3, 7, 64])
def test_lines_split_across_blocks_read_as_one_read_whole(tmp_path, monkeypatch, block):
    monkeypatch.setattr(bounded, "BLOCK_BYTES", block)
    data = b'a\r\n\nbc\xff\r\r\n{"x": 1}\n\n  \nlast'
    path = tmp_path / "log"
    path.write_bytes(data)
    pieces = data.split(b"\n")
    expected = [(n, p.decode("utf-8", errors="replace").rstrip("\r"), n < len(pieces)) for n, p in enumerate(pieces, start=1)]
    assert list(bounded.iter_lines(path)) == expected
    path.write_bytes(b" \r\n\t\n")
    with pytest.raises(InputError, match="is empty"):
        list(bounded.iter_lines(path))


@pytest.mark.parametrize("block", [3, 4, 8, 9, 64])
@pytest.mark.parametrize(("data", "good", "over"), [
    (b"ab\ncdefghijk\nlm\n", ["ab"], 2),  # the second line is over the limit of 8 bytes
    (b"abcdefghi\nlm\n", [], 1),
    (b"ab\ncd\nefghijklm\n", ["ab", "cd"], 3),
    (b"ab\ncdefgh\nijklmnop\nq", ["ab", "cdefgh", "ijklmnop", "q"], None),  # a line of exactly the limit is a line
])  # fmt: skip
def test_a_line_over_the_limit_is_found_in_blocks_of_any_size(tmp_path, monkeypatch, block, data, good, over):
    """Blocks shorter than the limit, as long, and longer (where every line of a block is measured, not only its first):
    the lines before the one over the limit are read, and that one is named."""
    monkeypatch.setattr(bounded, "MAX_LINE_BYTES", 8)
    monkeypatch.setattr(bounded, "BLOCK_BYTES", block)
    path = tmp_path / "log"
    path.write_bytes(data)
    read: list[str] = []
    if over is None:
        read = [text for _, text, _ in bounded.iter_lines(path, block)]
    else:
        with pytest.raises(InputError, match=f"line {over} is longer than 8 bytes"):
            for _, text, _ in bounded.iter_lines(path, block):
                read.append(text)
    assert read == good


def test_a_line_of_exactly_the_limit_is_still_a_line(tmp_path):
    path = tmp_path / "log.jsonl"
    record = json.dumps({"step": 1, "loss": 2.0, "note": ""})
    padded = record[:-2] + "x" * (bounded.MAX_LINE_BYTES - len(record)) + '"}'
    path.write_text(padded + "\n" + json.dumps({"step": 2, "loss": 1.0}) + "\r\n")
    assert read_run(path).loss.steps.tolist() == [1, 2]


def test_a_whole_document_over_the_limit_names_the_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(bounded, "MAX_DOCUMENT_BYTES", 1000)
    path = write_hf_state(tmp_path / "trainer_state.json", hf_entries([1.0] * 40))
    with pytest.raises(InputError, match="over the 1,000 bytes limit"):
        read_run(path)
    array = tmp_path / "log.json"
    array.write_text(json.dumps([{"step": s, "loss": 1.0} for s in range(1, 100)]))
    with pytest.raises(InputError, match="limit"):
        read_run(array, "jsonl")


def test_a_json_array_on_one_long_line_is_not_a_line_too_long(tmp_path):
    path = tmp_path / "log.json"
    path.write_text(json.dumps([{"step": s, "loss": 1.0 + 1 / s, "pad": "p" * 100} for s in range(1, 12000)]))
    assert path.stat().st_size > bounded.MAX_LINE_BYTES
    assert len(read_run(path, "jsonl").loss) == 11999


# --- paths that are not regular files -------------------------------------------------------------


@pytest.fixture
def alarm():
    """A hang guard: a test that would block forever (opening a FIFO) fails after 10 s instead."""

    def timeout(*_):
        raise TimeoutError("blocked")

    if not hasattr(signal, "SIGALRM"):
        pytest.skip("no SIGALRM here")
    previous = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("fmt", [None, "jsonl"])
def test_a_fifo_is_refused_before_it_is_opened(tmp_path, alarm, fmt):
    fifo = tmp_path / "log.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match=r"is not a regular file \(a FIFO\); trainproof reads log files"):
        read_run(fifo, fmt)


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
@pytest.mark.parametrize("fmt", [None, "csv"])
def test_a_character_device_is_refused(alarm, device, fmt):
    if not Path(device).exists():
        pytest.skip(f"no {device} here")
    with pytest.raises(InputError, match=r"is not a regular file \(a character device\)"):
        read_run(device, fmt)


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="no Unix sockets here")
def test_a_socket_is_refused(alarm):
    with tempfile.TemporaryDirectory() as folder:  # a short path: socket names are limited to ~100 bytes
        path = os.path.join(folder, "s")
        server = socket.socket(socket.AF_UNIX)
        try:
            server.bind(path)
            with pytest.raises(InputError, match=r"is not a regular file \(a socket\)"):
                read_run(path)
        finally:
            server.close()


def test_a_symlink_to_a_log_is_read(tmp_path):
    (tmp_path / "real.jsonl").write_text(GOOD_LINES)
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "real.jsonl")
    assert len(read_run(tmp_path / "link.jsonl").loss) == 300


def test_a_symlink_loop_is_an_input_error(tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(InputError, match="cannot be read: Too many levels of symbolic links"):
        read_run(loop)


def test_a_name_too_long_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot be read: File name too long"):
        read_run(tmp_path / ("x" * 300))


# --- linear-time Coqui parsing --------------------------------------------------------------------

HANG_GUARD_S = 30  # the fixed reader needs well under a second; the quadratic one needed about 100 s


@pytest.mark.parametrize("marker", ["> BEST MODEL :", "> CHECKPOINT :"])
def test_coqui_markers_repeated_on_one_line_parse_in_linear_time(tmp_path, marker):
    path = tmp_path / "trainer_0_log.txt"
    path.write_text("> EPOCH: 0/1\n | > loss: 1\n" + marker * 40000 + "\n")
    script = (
        "import sys\nfrom trainproof.io.errors import InputError\nfrom trainproof.runs.readers import read_run\n"
        "try:\n    read_run(sys.argv[1])\nexcept InputError as exc:\n    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=HANG_GUARD_S, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert "no GLOBAL_STEP" in done.stdout


def test_coqui_checkpoint_lines_still_name_their_files(tmp_path):
    path = tmp_path / "trainer_0_log.txt"
    path.write_text(
        " > TRAINING (2026-02-11 01:08:02)\n   --> STEP: 0/1 -- GLOBAL_STEP: 7\n     | > loss: 1.0  (1.0)\n"
        " > BEST MODEL : > BEST MODEL : /r/best_model_x.pth /r/best_model_7.pth and best_model_8.pth\n"
        " > CHECKPOINT :   /r/checkpoint_7.pth\n"
    )
    run = read_run(path)
    assert [(c.step, c.path, c.best) for c in run.checkpoints] == [
        (7, "/r/checkpoint_7.pth", False),
        (7, "> BEST MODEL : /r/best_model_x.pth /r/best_model_7.pth", True),
    ]


# --- malformed values are input errors ------------------------------------------------------------

BIG = str(2**63)  # one past the largest int64


NOT_WHOLE = "is not a whole number"
OUT_OF_RANGE = r"is out of range \(a step fits in 64 bits\)"


@pytest.mark.parametrize(
    ("cell", "problem"),
    [
        ("inf", NOT_WHOLE),
        ("nan", NOT_WHOLE),
        ("2.5", NOT_WHOLE),
        ("many", NOT_WHOLE),
        ("1e300", OUT_OF_RANGE),
        (BIG, OUT_OF_RANGE),
        ("-" + BIG + "0", OUT_OF_RANGE),
    ],
)
def test_a_csv_step_that_is_not_an_int64_names_its_line(tmp_path, cell, problem):
    path = tmp_path / "metrics.csv"
    path.write_text(f"step,loss\n1,2.0\n{cell},1.0\n")
    with pytest.raises(InputError, match=f"line 3: the step '{cell}' {problem}"):
        read_run(path)


@pytest.mark.parametrize("step", ["Infinity", "NaN", "1e300", BIG, "9" * 5000 + ".0", '"inf"'])
def test_a_jsonl_step_that_is_not_an_int64_names_its_line(tmp_path, step):
    path = tmp_path / "log.jsonl"
    path.write_text('{"step": 1, "loss": 2.0}\n{"step": ' + step + ', "loss": 1.0}\n')
    with pytest.raises(InputError, match=f"line 2: the step .* ({NOT_WHOLE}|{OUT_OF_RANGE})"):
        read_run(path)


def test_a_json_array_step_names_its_record(tmp_path):
    path = tmp_path / "log.json"
    path.write_text('[{"step": 1, "loss": 2.0}, {"step": 1e300, "loss": 1.0}]')
    with pytest.raises(InputError, match=f"record 2: the step '1e[+]300' {OUT_OF_RANGE}"):
        read_run(path, "jsonl")


def test_an_empty_step_cell_is_still_not_a_point(tmp_path):
    path = tmp_path / "metrics.csv"
    path.write_text("step,loss,val_loss\n1,2.0,\n,,1.5\n2,1.0,\n")
    assert read_run(path).loss.steps.tolist() == [1, 2]


@pytest.mark.parametrize("step", [math.inf, 1e300, 2**64, -(2**70)])
def test_an_hf_step_that_is_not_an_int64_is_an_input_error(tmp_path, step):
    entries = hf_entries([1.0, 0.9])
    entries[1]["step"] = step
    with pytest.raises(InputError, match=f"log_history entry 2: the step .* ({NOT_WHOLE}|{OUT_OF_RANGE})"):
        read_run(write_hf_state(tmp_path / "trainer_state.json", entries))


@pytest.mark.parametrize("max_steps", [math.inf, 1e300, 2**64])
def test_an_hf_max_steps_that_is_not_an_int64_is_an_input_error(tmp_path, max_steps):
    path = write_hf_state(tmp_path / "trainer_state.json", hf_entries([1.0, 0.9]), max_steps=max_steps)
    with pytest.raises(InputError, match="max_steps .* is (not a whole number|out of range)"):
        read_run(path)


def test_an_hf_best_checkpoint_step_out_of_range_is_an_input_error(tmp_path):
    path = write_hf_state(tmp_path / "trainer_state.json", hf_entries([1.0, 0.9]), best_model_checkpoint="out/checkpoint-" + "9" * 30)
    with pytest.raises(InputError, match=f"best_model_checkpoint: the step '9+' {OUT_OF_RANGE}"):
        read_run(path)


def test_an_mlflow_step_out_of_range_names_its_line(tmp_path):
    path = tmp_path / "loss"
    path.write_text(f"1700000000000 2.0 1\n1700000001000 1.9 {'9' * 5000}\n")
    with pytest.raises(InputError, match=f"line 2: the step '9999.*' {OUT_OF_RANGE}"):
        read_run(path, "mlflow")


def test_a_coqui_global_step_out_of_range_names_its_line(tmp_path):
    path = tmp_path / "trainer_0_log.txt"
    path.write_text(f" > TRAINING (2026-02-11 01:08:02)\n   --> STEP: 0/1 -- GLOBAL_STEP: {BIG}\n     | > loss: 1.0  (1.0)\n")
    with pytest.raises(InputError, match=f"line 2: the step '{BIG}' {OUT_OF_RANGE}"):
        read_run(path)


def test_a_coqui_impossible_date_is_not_an_internal_error(tmp_path):
    path = tmp_path / "trainer_0_log.txt"
    path.write_text(" > TRAINING (2026-19-45 01:08:02)\n   --> TIME: 2026-02-31 01:00:00 -- STEP: 0/1 -- GLOBAL_STEP: 3\n | > loss: 1.0\n")
    run = read_run(path)
    assert run.loss.steps.tolist() == [3]
    assert run.wall_time is None


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("name", "content", "fmt"),
    [
        ("log.jsonl", '{"step": 1, "loss": ' + DEEP + "}\n", None),
        ("log.json", "[" + DEEP + "]", "jsonl"),
        ("trainer_state.json", '{"log_history": ' + DEEP + "}", None),
    ],
)
def test_json_nested_too_deeply_is_an_input_error(tmp_path, name, content, fmt):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(InputError, match="is nested too deeply"):
        read_run(path, fmt)


@pytest.mark.parametrize(
    ("name", "content", "fmt"),
    [
        ("log.jsonl", '{"step": 1, "loss": 1' + "0" * 5000 + "}\n", None),
        ("log.json", '[{"step": 1, "loss": 1' + "0" * 5000 + "}]", "jsonl"),
        ("trainer_state.json", '{"log_history": [{"step": 1, "loss": 1' + "0" * 5000 + "}]}", None),
    ],
)
def test_an_integer_too_long_to_read_is_an_input_error(tmp_path, name, content, fmt):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(InputError, match="has a number too large to read"):
        read_run(path, fmt)


def test_an_integer_too_large_for_a_float_is_infinite(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text('{"step": 1, "loss": 2.0}\n{"step": 2, "loss": 1' + "0" * 400 + "}\n")
    assert read_run(path).loss.values.tolist() == [2.0, math.inf]


# --- TensorBoard records --------------------------------------------------------------------------


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _crc32c(data: bytes) -> int:
    """CRC-32C a bit at a time: slow, and independent of the reader's tables."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def _checksum(data: bytes) -> bytes:
    """The masked CRC-32C a TFRecord stores after its length and after its data."""
    crc = _crc32c(data)
    return struct.pack("<I", (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF)


def _record(payload: bytes) -> bytes:
    length = struct.pack("<Q", len(payload))
    return length + _checksum(length) + payload + _checksum(payload)


def _field(number: int, wire: int, body: bytes) -> bytes:
    return _varint(number << 3 | wire) + body


def _bytes_field(number: int, body: bytes) -> bytes:
    return _field(number, 2, _varint(len(body)) + body)


def _event(step: int, loss: float, *, wall: bytes | None = None, step_field: bytes | None = None, tag: bytes | None = None) -> bytes:
    value = tag if tag is not None else _bytes_field(1, b"train/loss")
    value += _field(2, 5, struct.pack("<f", loss))
    summary = _bytes_field(1, value)
    wall = wall if wall is not None else _field(1, 1, struct.pack("<d", 1.7e9 + step))
    step_field = step_field if step_field is not None else _field(2, 0, _varint(step))
    return _record(wall + step_field + _bytes_field(5, summary))


def _events(tmp_path: Path, *tail: bytes) -> Path:
    path = tmp_path / "events.out.tfevents.1.host"
    head = _record(_field(1, 1, struct.pack("<d", 1.7e9)) + _bytes_field(3, b"brain.Event:2"))
    path.write_bytes(head + b"".join(_event(s, 2.0 / s) for s in range(1, 11)) + b"".join(tail))
    return path


def test_hand_made_events_decode(tmp_path):
    run = read_run(_events(tmp_path))
    assert run.loss.steps.tolist() == list(range(1, 11))


@pytest.mark.parametrize(
    "record",
    [
        _event(11, 1.0, wall=_field(1, 0, _varint(5))),  # wall time as a varint
        _event(11, 1.0, tag=_field(1, 0, _varint(5))),  # tag as a varint
        _event(11, 1.0, step_field=_bytes_field(2, b"12")),  # step as bytes
        _event(11, 1.0, step_field=_field(2, 0, b"\xff" * 12 + b"\x01")),  # a varint longer than 64 bits
        _record(_bytes_field(5, _field(1, 0, _varint(3)))),  # a summary value as a varint
        _record(_field(5, 0, _varint(3))),  # a summary as a varint
        _record(_bytes_field(5, _bytes_field(1, _bytes_field(8, _bytes_field(5, b"\1\2\3"))))),  # packed floats cut short
        _record(b"\x0a\xff"),  # a varint past the end
        _record(b"\x2a\x05ab"),  # a length past the end
        _record(b"\x0b"),  # an unknown wire type
    ],
)
def test_every_malformed_record_is_an_input_error(tmp_path, record):
    with pytest.raises(InputError, match="is not a valid TensorBoard event file"):
        read_run(_events(tmp_path, record))


def test_a_negative_step_is_read_as_signed(tmp_path):
    run = read_run(_events(tmp_path, _event(-5 & 0xFFFFFFFFFFFFFFFF, 1.0)))
    assert run.loss.steps.tolist()[0] == -5


def test_a_record_length_over_the_cap_is_an_input_error(tmp_path):
    length = struct.pack("<Q", 1 << 40)
    path = _events(tmp_path, length + _checksum(length) + b"\0" * 20)
    with pytest.raises(InputError, match="over the 64 MiB limit"):
        read_run(path)


def test_the_checksums_are_crc32c_as_tensorflow_computes_them():
    assert tfrecord.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    rng = random.Random(8)
    records = [rng.randbytes(n) for n in [*range(600), 1000, 4096, 70_001]]  # under 4 bytes, one chunk, several chunks
    rng.shuffle(records)
    assert tfrecord.crc32c_many(records).tolist() == [_crc32c(r) for r in records]
    assert tfrecord.crc32c_many([]).tolist() == []


def _offsets(data: bytes) -> list[int]:
    """Where each TFRecord of an event file starts."""
    offsets, at = [], 0
    while at < len(data):
        offsets.append(at)
        at += 16 + struct.unpack_from("<Q", data, at)[0]
    return offsets


@pytest.mark.parametrize("where", [0, 8, 12, -4, -1])  # the length, its checksum, the data, the data's checksum
def test_a_byte_changed_anywhere_in_a_record_fails_its_checksum(tmp_path, where):
    data = bytearray(_events(tmp_path).read_bytes())
    offsets = _offsets(bytes(data))
    record = offsets[5]
    at = record + where if where >= 0 else offsets[6] + where
    data[at] ^= 0x10
    path = tmp_path / "events.out.tfevents.2.host"
    path.write_bytes(data)
    with pytest.raises(InputError, match=rf"record at byte {record:,} fails its checksum: the file is corrupt$"):
        read_run(path)


def test_the_first_problem_in_the_file_is_the_one_reported(tmp_path):
    good = _events(tmp_path).read_bytes()
    undecodable = _record(b"\x0b")
    corrupt = bytearray(_event(12, 1.0))
    corrupt[-5] ^= 1
    first = tmp_path / "events.out.tfevents.5.host"
    first.write_bytes(good + undecodable + bytes(corrupt))
    with pytest.raises(InputError, match="record 12 does not decode"):
        read_run(first)
    second = tmp_path / "events.out.tfevents.3.host"
    second.write_bytes(good + bytes(corrupt) + undecodable + struct.pack("<Q", 1 << 40) + b"\0" * 8)
    with pytest.raises(InputError, match=f"record at byte {len(good):,} fails"):
        read_run(second)


def test_a_record_larger_than_a_batch_is_checked_whole(tmp_path):
    text = _bytes_field(5, _bytes_field(1, _bytes_field(1, b"notes") + _bytes_field(8, b"x" * (3 * tfrecord.BATCH_BYTES))))
    path = _events(tmp_path, _record(text), _event(11, 0.1))
    assert read_run(path).loss.steps.tolist() == list(range(1, 12))
    data = bytearray(path.read_bytes())
    data[-200] ^= 1  # inside the large record's data
    path.write_bytes(data)
    with pytest.raises(InputError, match="fails its checksum"):
        read_run(path)


@pytest.mark.parametrize("cut", [3, 12, 40, 2])  # in the length, right after its checksum, in the data, in the data's checksum
def test_a_last_record_cut_short_anywhere_is_left_out_with_a_note(tmp_path, cut):
    whole = _events(tmp_path).read_bytes() + _event(11, 0.1)
    path = tmp_path / "events.out.tfevents.4.host"
    last = _offsets(whole)[-1]
    path.write_bytes(whole[: last + cut] if cut != 2 else whole[:-2])
    run = read_run(path)
    assert run.loss.steps.tolist() == list(range(1, 11))
    assert any("the last record is cut short" in note for note in run.notes)


def test_zero_bytes_after_the_records_fail_their_checksum(tmp_path):
    """What a crash can leave at the end of a file: a record of length 0 whose checksum is 0, which it never is."""
    path = _events(tmp_path, b"\0" * 64)
    with pytest.raises(InputError, match="fails its checksum"):
        read_run(path)


def test_a_tensorboard_run_points_at_the_file_of_its_loss():
    run = read_run(TENSORBOARD / "hf_style")
    (events,) = (TENSORBOARD / "hf_style").glob("events.out.tfevents.*")
    assert Path(run.path) == events
    keras = read_run(TENSORBOARD / "keras_style")
    assert Path(keras.path).parent.name == "train"
    assert Path(keras.path).name.startswith("events.out.tfevents")


# --- messages that must not mislead ---------------------------------------------------------------


def test_an_empty_mlflow_metric_file_is_skipped_with_a_note(tmp_path):
    metrics = tmp_path / "run" / "metrics"
    metrics.mkdir(parents=True)
    (metrics / "loss").write_text("".join(f"{1_700_000_000_000 + s} {2.0 / s} {s}\n" for s in range(1, 51)))
    (metrics / "accuracy").write_text("")
    run = read_run(tmp_path / "run")
    assert len(run.loss) == 50
    assert run.path.endswith("loss")
    assert any("accuracy" in note and "empty" in note for note in run.notes)


def test_an_mlflow_error_names_the_metric_file_it_is_in(tmp_path):
    metrics = tmp_path / "run" / "metrics"
    metrics.mkdir(parents=True)
    (metrics / "loss").write_text("1700000000000 2.0 1\n")
    (metrics / "lr").write_text("1700000000000 0.1 1\nbroken\n")
    with pytest.raises(InputError, match=r"metrics/lr: line 2 is not"):
        read_run(tmp_path / "run")


def test_a_forced_format_that_does_not_fit_says_what_the_file_looks_like(tmp_path):
    write_hf_state(tmp_path / "trainer_state.json", hf_entries([1.0, 0.9]))
    expected = r"is not a tensorboard log \(it looks like hf: drop --format, or pass --format hf\)"
    with pytest.raises(InputError, match=expected) as folder:
        read_run(tmp_path, "tensorboard")
    assert folder.value.path.endswith("trainer_state.json")
    with pytest.raises(InputError, match=expected):
        read_run(tmp_path / "trainer_state.json", "tensorboard")


def test_a_forced_format_on_a_folder_looks_for_its_own_files_first(tmp_path):
    write_hf_state(tmp_path / "trainer_state.json", hf_entries([1.0, 0.9]))
    (source,) = (TENSORBOARD / "hf_style").glob("events.out.tfevents.*")
    (tmp_path / source.name).write_bytes(source.read_bytes())
    assert read_run(tmp_path).format == "hf"
    assert read_run(tmp_path, "tensorboard").format == "tensorboard"


def test_a_forced_format_on_a_folder_of_another_kind_says_so(tmp_path):
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    (metrics / "loss").write_text("1700000000000 2.0 1\n")
    with pytest.raises(InputError, match=r"is not a tensorboard log \(it looks like mlflow"):
        read_run(tmp_path, "tensorboard")


# --- a column of words is not a metric ------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("metrics.csv", "step,loss\n1,lorem\n2,ipsum\n3,lorem\n"),
        ("log.jsonl", '{"step": 1, "loss": "lorem"}\n{"step": 2, "loss": "ipsum"}\n'),
        ("loss", "1700000000000 lorem 1\n1700000001000 ipsum 2\n"),
    ],
)
def test_a_loss_column_of_words_is_not_a_training_loss(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(InputError, match=r"loss.* holds no number \('lorem', 'ipsum'\)"):
        read_run(path, "mlflow" if name == "loss" else None)


def test_a_loss_with_a_few_nan_words_is_still_nonfinite_evidence(tmp_path):
    path = tmp_path / "metrics.csv"
    path.write_text("step,loss\n1,2.0\n2,nan\n3,1.5\n4,n/a\n")
    run = read_run(path)
    assert math.isnan(run.loss.values[1])
    assert math.isnan(run.loss.values[3])
    assert run.loss.raw == {4: "n/a"}


def test_a_loss_of_nan_literals_is_numbers(tmp_path):
    path = tmp_path / "metrics.csv"
    path.write_text("step,loss\n1,nan\n2,NaN\n")
    assert all(math.isnan(v) for v in read_run(path).loss.values)


def test_another_column_of_words_is_dropped_with_a_note(tmp_path):
    path = tmp_path / "metrics.csv"
    path.write_text("step,loss,lr,val_loss\n1,2.0,fast,\n2,1.0,slow,\n2,,,n/a\n")
    run = read_run(path)
    assert run.learning_rate is None
    assert run.eval_losses == {}
    assert any("lr" in note and "'fast'" in note for note in run.notes)
    assert any("val_loss" in note for note in run.notes)


# --- resumed and restarted runs -------------------------------------------------------------------


def _spans(*spans: tuple[int, int]) -> list[int]:
    """The steps of timelines logged one after another, each from its first step to its last."""
    return [step for first, last in spans for step in range(first, last + 1)]


@pytest.mark.parametrize(
    ("steps", "kept"),
    [
        ([10, 20, 30, 40, 50, 0, 10, 20], [0, 10, 20]),  # restarted at 0: the run it replaced is gone, tail and all
        ([10, 20, 30, 40, 50, 30, 40], [10, 20, 30, 40]),  # resumed at 30: its history before 30 stays
        ([10, 20, 30, 40, 50, 30], [10, 20, 30, 40, 50]),  # a last point alone is a stray value, sorted in: not a new run
        ([10, 20, 30, 40, 50, 0], [0, 10, 20, 30, 40, 50]),  # (MLflow's log_metric with no step logs at step 0)
        ([10, 20, 30, 40, 50, 0, 10], [0, 10]),  # two points make it a restart: the run it replaced is gone
        ([10, 20, 30, 40, 50, 60, 70, 80, 30, 40, 50, 20, 30, 10, 20], [10, 20]),  # three resumptions: RESUMES_AT_MOST
        ([10, 20, 30, 40, 50, 60, 70, 80, 30, 40, 50, 20, 30, 10, 20, 5, 6], [5, 6, 10, 20, 30, 40, 50, 60, 70, 80]),  # four: out of order, sorted
        ([10, 20, 30, 30, 0, 10, 10, 20], [0, 10, 20]),  # a step logged twice (an eval beside it): its last value
        ([10, 20, 5, 30, 40], [5, 10, 20, 30, 40]),  # one point out of order is sorted in, not a resumption
        (list(range(20, 0, -1)), list(range(1, 21))),  # a log written newest first: out of order, sorted
        ([1, 2, 3, 2**63 - 1, 0, 1, 2**63 - 1], [0, 1, 2**63 - 1]),
        # 200 stretches may be resumed up to RESUME_SHARE of them, 10 times: five resumptions, the last one ending at
        # 110, below the 120 logged before it, are kept as resumptions (sorted, steps 111-120 would stay)
        (_spans((1, 60), (31, 70), (51, 80), (71, 100), (91, 120), (101, 110)), list(range(1, 111))),
        # eleven times back in 200 stretches is more than RESUME_SHARE: out of order, sorted (steps 91-95 stay)
        (_spans((1, 45), *((31 + 5 * k, 45 + 5 * k) for k in range(1, 11)), (86, 90)), list(range(1, 96))),
    ],
)
def test_a_resumed_or_restarted_series_keeps_its_last_timeline(steps, kept):
    steps = np.array(steps, dtype=np.int64)
    order = base.last_per_step(steps)
    assert steps[order].tolist() == kept
    values = np.arange(steps.size, dtype=float)
    builder = base.RunBuilder("log.jsonl", "jsonl")
    for step, value in zip(steps.tolist(), values.tolist()):
        builder.add("loss", step, value)
    frozen = builder.series("loss")
    assert frozen.steps.tolist() == kept  # the line readers' series and the columnar readers' keep the same points
    assert frozen.values.tolist() == values[order].tolist()


def _restarted_run(tmp_path, fmt: str) -> Path:
    """A run that diverged at a hot learning rate for 100 logged steps, then (the same log, appended to) a run restarted
    from step 0 at a sane rate, healthy so far over 31 logged steps."""
    rng = random.Random(7)
    old = [{"step": 10 * i + 10, "loss": 3 * (1 + i / 30) * (1 + 0.03 * rng.uniform(-1, 1)), "learning_rate": 1e-2} for i in range(100)]
    new = [{"step": 10 * i, "loss": (3 - 1.5 * i / 30) * (1 + 0.03 * rng.uniform(-1, 1)), "learning_rate": 1e-4} for i in range(31)]
    if fmt == "hf":
        return write_hf_state(tmp_path / "trainer_state.json", old + new)
    path = tmp_path / f"metrics.{fmt}"
    if fmt == "jsonl":
        path.write_text("".join(json.dumps(entry) + "\n" for entry in old + new))
    else:
        path.write_text("step,loss,learning_rate\n" + "".join(f"{e['step']},{e['loss']},{e['learning_rate']}\n" for e in old + new))
    return path


@pytest.mark.parametrize("fmt", ["hf", "jsonl", "csv"])
@pytest.mark.parametrize("columnar", [False, True])
def test_a_run_restarted_in_the_same_log_is_judged_on_the_restarted_run_alone(tmp_path, fmt, columnar):
    """Kept past the restarted run's last step, the diverged run's steps 310-1,000 made the healthy restart look like
    a divergence (TP-DIVERGE, "it ends 4.3x above where it started")."""
    path = _restarted_run(tmp_path, fmt)
    run = {"hf": hf, "jsonl": jsonl, "csv": csv_reader}[fmt].read(path, columnar=columnar)
    assert run.loss.steps.tolist() == list(range(0, 301, 10))
    assert run.learning_rate.values.tolist() == [1e-4] * 31
    subject = judge("epoch", [run], DEFAULT_SETTINGS).subjects[0]
    assert str(subject.verdict) == "PASS", [f.message for f in subject.findings]


def test_an_eval_set_whose_name_holds_a_line_break_is_read_not_dropped(tmp_path):
    history = [{"step": s, "loss": 2.0 - s / 100} for s in range(1, 50)]
    history += [{"step": 10 * k, "eval_a\nb_loss": 1.5 - k / 10, "eval_loss\n": 9.0} for k in range(1, 5)]
    (tmp_path / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    run = read_run(tmp_path / "trainer_state.json")
    assert list(run.eval_losses) == ["eval_a\nb_loss"]  # "eval_loss\n" is not an eval loss key: $ matched before a final newline


def test_a_stray_last_point_does_not_wipe_a_diverged_run(tmp_path):
    steps = np.arange(1, 301) * 10
    loss = np.concatenate([np.linspace(2.0, 0.6, 150), np.linspace(0.6, 9.0, 150)])
    rows = "".join(f"{s},{v}\n" for s, v in zip(steps, loss))
    for stray in ("1500,0.61\n", "0,2.3\n"):
        path = tmp_path / "metrics.csv"
        path.write_text("step,loss\n" + rows + stray)
        run = read_run(path)
        assert run.loss.steps.size == 300 + (stray.startswith("0,"))
        assert run.loss.values[-1] == pytest.approx(9.0)
