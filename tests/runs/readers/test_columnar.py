"""The columnar readers build the same Run as the record-at-a-time ones, on every log this project and the shared
corpus hold, and on the cases where the two could part: nulls, text among numbers, keys that appear late, blank
lines, repeated and out-of-order steps, a broken or unfinished last line."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import REPO
from trainproof.commands import judge
from trainproof.config import DEFAULT_SETTINGS
from trainproof.io.errors import InputError
from trainproof.runs.model import Run, Series
from trainproof.runs.readers import csv as csv_reader
from trainproof.runs.readers import detect, hf, jsonl, table

pytest.importorskip("polars")

CORPUS = REPO.parent / "shared" / "corpus"
READERS = {"jsonl": jsonl, "csv": csv_reader, "hf": hf}


def _logs() -> list[Path]:
    roots = [REPO / "tests" / "data", REPO / "examples", CORPUS]
    found = []
    for root in roots:
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.suffix in (".jsonl", ".csv", ".json", ".tsv", ".ndjson"):
                try:
                    head = path.read_bytes()[:262144].decode("utf-8", errors="replace")
                    fmt = detect(path, head)
                except (InputError, OSError):
                    continue
                if fmt in READERS:
                    found.append(path)
    return found


def _same_series(a: Series | None, b: Series | None, what: str) -> None:
    assert (a is None) == (b is None), what
    if a is None or b is None:
        return
    assert np.array_equal(a.steps, b.steps), what
    assert np.array_equal(a.values, b.values, equal_nan=True), what
    assert dict(a.raw) == dict(b.raw), what


def assert_same_run(a: Run, b: Run) -> None:
    for field in ("loss", "learning_rate", "grad_norm", "wall_time", "step_time", "loader_time"):
        _same_series(getattr(a, field), getattr(b, field), field)
    assert list(a.eval_losses) == list(b.eval_losses)
    for name in a.eval_losses:
        _same_series(a.eval_losses[name], b.eval_losses[name], name)
    assert list(a.eval_metrics) == list(b.eval_metrics)
    assert dict(a.metric_goals) == dict(b.metric_goals)
    for name in a.eval_metrics:
        _same_series(a.eval_metrics[name], b.eval_metrics[name], name)
    lines = lambda run: run.step_lines.as_dict() if hasattr(run.step_lines, "as_dict") else dict(run.step_lines)  # noqa: E731
    assert lines(a) == lines(b)
    for field in ("path", "format", "loss_name", "notes", "step_unit", "max_steps", "runtime_s", "checkpoints"):
        assert getattr(a, field) == getattr(b, field), field


def _agree(path: Path, fmt: str) -> tuple[Run | str, Run | str]:
    """Both paths' Runs of a log, asserted the same (or the same error); returned for further checks."""
    line, column = _both(path, fmt)
    if isinstance(line, str) or isinstance(column, str):
        assert line == column
    else:
        assert_same_run(line, column)
    return line, column


def _both(path: Path, fmt: str) -> tuple[Run | str, Run | str]:
    out = []
    for columnar in (False, True):
        try:
            out.append(READERS[fmt].read(path, columnar=columnar))
        except InputError as exc:
            out.append(str(exc))
    return out[0], out[1]


LOGS = _logs()


def test_the_logs_are_found() -> None:
    assert len(LOGS) >= 5


def _verdict(run: Run) -> tuple:
    subject = judge("epoch", [run], DEFAULT_SETTINGS).subjects[0]
    return subject.verdict, [(f.rule_id, f.level, f.message, f.steps, f.line) for f in subject.findings]


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(p.parents[2])))
def test_every_log_reads_the_same_both_ways(path: Path) -> None:
    fmt = detect(path, path.read_bytes()[:262144].decode("utf-8", errors="replace"))
    line, column = _agree(path, fmt)
    if isinstance(line, Run) and isinstance(column, Run):
        assert _verdict(line) == _verdict(column)


def _jsonl(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "log.jsonl"
    path.write_text(text)
    return path


def _records(n: int, **extra: object) -> list[dict]:
    return [{"step": i, "loss": 2.0 - i / (n + 1), "learning_rate": 1e-4, **extra} for i in range(1, n + 1)]


CASES = {
    "plain": "\n".join(json.dumps(r) for r in _records(50)) + "\n",
    "key appearing after the first thousand lines": "\n".join(json.dumps(r) for r in _records(1500))
    + "\n"
    + json.dumps({"step": 1500, "eval_loss": 1.5, "grad_norm": 2.0})
    + "\n",
    "nulls in eval rows": "\n".join(
        json.dumps({"step": i, "loss": 1.0 / i if i % 10 else None, "eval_loss": None if i % 10 else 0.5}) for i in range(1, 60)
    )
    + "\n",
    "null loss beside a second loss name": "\n".join(
        json.dumps({"step": i, "loss": None if i == 5 else 1.0 / i, "train_loss": 9.0}) for i in range(1, 20)
    )
    + "\n",
    "null step in the first record": '{"step": null, "epoch": 1, "loss": 1}\n{"step": 2, "epoch": 1, "loss": 0.5}\n',
    "NaN and Infinity": "\n".join(
        json.dumps({"step": i, "loss": float("nan") if i == 3 else 1.0 / i, "grad_norm": float("inf")}) for i in range(1, 9)
    )
    + "\n",
    "text among numbers": '{"step":1,"loss":1.5}\n{"step":2,"loss":"n/a"}\n{"step":3,"loss":" 0.5 "}\n{"step":4,"loss":"nan"}\n',
    "booleans and nested values": '{"step":1,"loss":1.5,"flag":true}\n{"step":2,"loss":[1,2]}\n{"step":3,"loss":{"a":1}}\n',
    "blank and CRLF lines": '{"step":1,"loss":1.5}\r\n\r\n   \n{"step":2,"loss":1.0}\r\n\n',
    "repeated and out-of-order steps": '{"step":5,"loss":1}\n{"step":5,"loss":2}\n{"step":3,"loss":3}\n{"step":7,"loss":"x"}\n{"step":7,"loss":4}\n',
    "an epoch axis": '{"epoch":0,"loss":2}\n{"epoch":1,"loss":1.5}\n{"epoch":1.5,"loss":1}\n',
    "a fractional step": '{"step":1,"loss":2}\n{"step":2.5,"loss":1}\n',
    "a step as text": '{"step":"1","loss":2}\n{"step":"2","loss":1}\n{"step":"","loss":1}\n',
    "no step at all": '{"loss":2}\n{"loss":1.5}\n{"other":1}\n{"loss":1}\n',
    "numbers beyond int64": '{"step":1,"loss":123456789012345678901234567890}\n{"step":2,"loss":1}\n',
    "a step beyond int64": '{"step":1,"loss":2}\n{"step":99999999999999999999,"loss":1}\n',
    "a broken line": '{"step":1,"loss":2}\n{"step":2,"loss":\n{"step":3,"loss":1}\n',
    "an unfinished last line": '{"step":1,"loss":2}\n{"step":2,"loss":1}\n{"step":3,"lo',
    "a finished last line without newline": '{"step":1,"loss":2}\n{"step":2,"loss":1}',
    "a line that is no object": '{"step":1,"loss":2}\n[1,2]\n7\n{"step":2,"loss":1}\n',
    "timestamps in ms and ISO": '{"step":1,"loss":2,"time":1700000000000}\n{"step":2,"loss":1,"time":"2024-01-01T00:00:00Z"}\n{"step":3,"loss":1,"time":1700000002000}\n',
    "Lightning names": '{"step":1,"train_loss_step":2,"lr-AdamW":0.1}\n{"step":1,"val_loss":2.5}\n{"step":2,"train_loss_epoch":1.9}\n',
    "no loss": '{"step":1,"acc":2}\n{"step":2,"acc":1}\n',
    "a loss that is only null": '{"step":1,"loss":null,"acc":1}\n{"step":2,"loss":null}\n',
    "a quote-colon inside a value": '{"step":1,"loss":2,"note":"a\\":b"}\n{"step":2,"loss":1}\n',
}


@pytest.mark.parametrize("name", list(CASES))
def test_jsonl_cases_read_the_same_both_ways(tmp_path: Path, name: str) -> None:
    _agree(_jsonl(tmp_path, CASES[name]), "jsonl")


def test_the_fast_path_is_taken_on_a_plain_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The equivalence above would hold trivially if every block fell back to the line-at-a-time parse."""
    path = _jsonl(tmp_path, CASES["key appearing after the first thousand lines"])
    slow = []
    original = jsonl._slow_block
    monkeypatch.setattr(jsonl, "_slow_block", lambda *a: slow.append(1) or original(*a))
    run = jsonl.read(path, columnar=True)
    assert not slow
    assert run.grad_norm is not None
    assert run.eval_losses


def test_a_large_log_is_read_as_columns_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _jsonl(tmp_path, CASES["plain"])
    monkeypatch.setattr(table, "LARGE_BYTES", 1)
    taken = []
    original = jsonl.read_columns
    monkeypatch.setattr(jsonl, "read_columns", lambda *a: taken.append(1) or original(*a))
    jsonl.read(path)
    assert taken


def _state(history: list, **extra: object) -> str:
    return json.dumps({"log_history": history, "max_steps": 40, **extra}, indent=2)


HF_CASES = {
    "train, eval sets and summary": _state(
        [{"step": s, "loss": 2.0 / s, "learning_rate": 1e-4, "grad_norm": 1.0} for s in range(1, 30)]
        + [{"step": 10, "eval_loss": 1.5}, {"step": 10, "eval_g0_loss": 1.2, "eval_g1_loss": 1.1}]
        + [{"step": 29, "train_runtime": 12.5, "train_loss": 0.4, "train_samples_per_second": 3}],
        best_model_checkpoint="out/checkpoint-10",
    ),
    "NaN, text and lr spelled lr": _state(
        [{"step": 1, "loss": 2.0, "lr": 1e-4}, {"step": 2, "loss": float("nan"), "lr": 1e-4, "grad_norm": float("inf")}]
        + [{"step": 3, "loss": "n/a", "lr": True}, {"step": 4, "loss": None, "grad_norm": [1]}]
    ),
    "repeated and out-of-order steps": _state([{"step": 5, "loss": 1.0}, {"step": 5, "loss": 2.0}, {"step": 3, "loss": 3.0}]),
    "entries that are no point": _state(
        [{"step": 1, "loss": 1.0}, "text", {"loss": 2.0}, {"step": "7", "loss": 1.0}, {"step": True, "loss": 1}]
    ),
    "a fractional step": _state([{"step": 1, "loss": 1.0}, {"step": 2.5, "loss": 1.0}]),
    "a NaN step": _state([{"step": 1, "loss": 1.0}]).replace('"step": 1', '"step": NaN'),
    "a whole float step": _state([{"step": 1.0, "loss": 1.0}, {"step": 2, "loss": 0.5}]),
}


@pytest.mark.parametrize("name", list(HF_CASES))
def test_trainer_state_cases_read_the_same_both_ways(tmp_path: Path, name: str) -> None:
    path = tmp_path / "trainer_state.json"
    path.write_text(HF_CASES[name])
    _agree(path, "hf")


@pytest.mark.parametrize("name", ["train, eval sets and summary", "NaN, text and lr spelled lr"])
def test_the_column_path_is_taken_on_a_trainer_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Summary entries, eval sets, Python's NaN and Infinity, text and booleans among the values: all read as columns."""
    path = tmp_path / "trainer_state.json"
    path.write_text(HF_CASES[name])
    monkeypatch.setattr(hf, "parse_state", lambda *a, **k: pytest.fail("fell back to the text path"))
    run = hf.read(path, columnar=True)
    if name == "train, eval sets and summary":
        assert run.runtime_s == 12.5
        assert list(run.eval_losses) == ["eval_loss", "eval_g0_loss", "eval_g1_loss"]
    else:
        assert run.loss is not None
        assert run.loss.raw == {3: "n/a"}


def test_random_trainer_states_read_the_same_both_ways(tmp_path: Path) -> None:
    """Random log histories: training entries with and without a learning rate or gradient norm, eval entries of two
    sets, summary entries, entries without a step, steps that repeat or step back, and values that are text, NaN,
    null or booleans, in the entries' own key orders."""
    import random

    rng = random.Random(31)
    for case in range(120):
        history: list[dict[str, object]] = []
        step = 0
        for _ in range(rng.randint(1, 40)):
            step += rng.choice((1, 1, 2, 0, -3))

            def value() -> object:
                return round(rng.random() + 0.1, 4) if rng.random() > 0.05 else rng.choice(("n/a", "NaN", None, True, 7))

            kind = rng.choice(("train", "train", "train", "eval", "eval", "summary", "no step"))
            if kind == "train":
                entry = {"loss": value(), "step": step, **({"learning_rate": value()} if rng.random() < 0.8 else {})}
                if rng.random() < 0.7:
                    entry["grad_norm"] = value()
            elif kind == "eval":
                prefix = rng.choice(("eval", "eval_g1"))
                entry = {f"{prefix}_loss": value(), f"{prefix}_runtime": 1.5, "step": step}
            elif kind == "summary":
                entry = {"train_runtime": round(rng.random() * 100, 2), "train_loss": value(), "step": step}
            else:
                entry = {"loss": value()}
            if rng.random() < 0.3:
                entry = dict(reversed(list(entry.items())))
            history.append(entry)
        path = tmp_path / "trainer_state.json"
        path.write_text(json.dumps({"global_step": max(step, 0), "log_history": history}, indent=2))
        line, column = _both(path, "hf")
        if isinstance(line, str) or isinstance(column, str):
            assert line == column, case
        else:
            assert_same_run(line, column)


CSV_CASES = {
    "Lightning rows": "epoch,step,train_loss_step,val_loss,lr-AdamW\n0,1,2.0,,0.1\n0,1,,2.5,\n0,2,1.8,,0.1\n1,3,1.7,,0.1\n",
    "Keras epochs": "epoch,loss,val_loss,lr\n0,2.0,2.1,0.01\n1,1.5,1.9,0.01\n2,1.2,2.0,0.001\n",
    "blank, whitespace and empty rows": "step,loss\n1,2.0\n\n   \n,\n  ,  \n2,1.5\n",
    "a header repeated": "step,loss\n1,2.0\nstep,loss\n2,1.0\n step , loss \n3,0.5\n",
    "short rows": "step,loss,grad_norm\n1,2.0,1.0\n2,1.5\n3\n4,1.0,0.5\n",
    "a short row dropping one of two loss names": "step,train_loss,loss\n1,2.0,1.9\n2,1.8\n3,1.7,1.6\n",
    "a short row dropping one of two lr names": "step,loss,lr,learning_rate\n1,2.0,0.1,0.2\n2,1.5,0.1\n3,1.2,0.1,0.2\n",
    "a row of only its epoch": "epoch,step,loss\n1,10,2.0\n2\n3,30,1.0\n",
    "a longer row": "step,loss\n1,2.0\n2,1.5,9\n",
    "text among numbers": "step,loss\n1,2.0\n2,nan\n3,n/a\n4, 1.5 \n5,inf\n6,1_0\n",
    "a step as a fraction or text": "step,loss\n1,2.0\n2.5,1.5\n",
    "a word as a step": "step,loss\n1,2.0\nabc,1.5\n",
    "an empty step cell": "step,loss\n1,0.9\n,0.8\n2,0.7\n3,0.6\n",
    "an integer column past int64": "step,loss,total_flos\n1,0.9,58000000000000000000\n2,0.8,58000000000000000001\n",
    "a step past int64": "step,loss\n1,0.9\n58000000000000000000,0.8\n",
    "CRLF": "step,loss\r\n1,2.0\r\n2,1.5\r\n",
    "tabs": "step\tloss\n1\t2.0\n2\t1.5\n",
    "a quoted cell": 'step,loss,note\n1,2.0,"a\nb"\n2,1.5,x\n',
    "no trailing newline": "step,loss\n1,2.0\n2,1.5",
    "leading blank lines": "\n\nstep,loss\n1,2.0\n2,1.5\n",
    "a duplicated column": "step,loss,loss\n1,2.0,3.0\n",
    "no rows": "step,loss\n",
    "no step column": "loss,acc\n2.0,1\n1.5,2\n",
    "repeated steps": "step,loss\n5,1\n5,2\n3,3\n7,x\n7,4\n",
    "a time column": "step,loss,time\n1,2.0,1700000000000\n2,1.5,2024-01-01T00:00:00Z\n",
    "a column of true and false": "step,loss,val_acc\n1,2.0,true\n2,1.5,false\n3,1.2,true\n4,1.1,false\n",
}


@pytest.mark.parametrize("name", list(CSV_CASES))
def test_csv_cases_read_the_same_both_ways(tmp_path: Path, name: str) -> None:
    path = tmp_path / "metrics.csv"
    path.write_text(CSV_CASES[name])
    _agree(path, "csv")


def test_the_column_path_is_taken_on_a_plain_csv(tmp_path: Path) -> None:
    path = tmp_path / "metrics.csv"
    path.write_text(CSV_CASES["Lightning rows"])
    assert csv_reader.read_columns(path) is not None


def test_a_series_missing_from_a_whole_block_keeps_its_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """grad_norm on every record of the first and last blocks, on none of the middle one: its steps must not be
    taken from the records' own."""
    monkeypatch.setattr(jsonl, "iter_blocks", lambda path: _blocks(path, 20))
    rows = [{"step": s, "loss": 1.0 / s, **({} if 21 <= s <= 40 else {"grad_norm": float(s)})} for s in range(1, 61)]
    path = _jsonl(tmp_path, "".join(json.dumps(r) + "\n" for r in rows))
    line, column = _both(path, "jsonl")
    assert_same_run(line, column)
    assert column.grad_norm is not None
    assert 25 not in column.grad_norm.steps.tolist()


def test_series_that_share_their_points_in_some_blocks_and_not_others(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Random logs in blocks of random sizes: each series is logged on its own random share of the records, per
    block, so series share their steps for a while, part, meet again, skip whole blocks and appear late. The column
    path (which shares one steps buffer among series with the same points) must build the line path's Run."""
    import random

    rng = random.Random(13)
    series = ("loss", "learning_rate", "grad_norm", "eval_loss")
    for case in range(60):
        size = rng.choice((3, 7, 20))
        monkeypatch.setattr(jsonl, "iter_blocks", lambda path, size=size: _blocks(path, size))
        rows, step = [], 0
        for _ in range(rng.randint(1, 6)):  # stretches of records, each with its own pattern of what is logged
            share = {name: rng.choice((0.0, 0.5, 1.0)) for name in series}
            together = rng.random() < 0.5  # the series logged together, or each on its own draw
            for _ in range(rng.randint(1, 25)):
                step += rng.choice((1, 1, 1, 0))  # a step logged again now and then
                draw = rng.random()
                row: dict[str, object] = {"step": step}
                for name in series:
                    if (draw if together else rng.random()) < share[name]:
                        row[name] = round(rng.random(), 3)
                rows.append(row)
        path = _jsonl(tmp_path, "".join(json.dumps(r) + "\n" for r in rows))
        line, column = _both(path, "jsonl")
        if isinstance(line, str) or isinstance(column, str):
            assert line == column, case
        else:
            assert_same_run(line, column)


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_random_logs_read_the_same_both_ways(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    """Random logs of many series, in blocks of 1 to 8 lines: steps that repeat, step back or are missing, values
    that are text, "nan" or empty, series logged together or apart, blank lines. (A reviewer's version of this found an empty CSV
    step cell read as step 0 in a third of its cases.)"""
    import random

    rng = random.Random(29)
    reader = jsonl if fmt == "jsonl" else csv_reader
    series = ("loss", "learning_rate", "grad_norm", "eval_loss", "eval_accuracy", "step_time", "train_loss", "timestamp")
    for case in range(80):
        size = rng.choice((1, 2, 3, 5, 8))
        monkeypatch.setattr(reader, "iter_blocks", lambda path, size=size: _blocks(path, size))
        rows, step = [], 0
        for _ in range(rng.randint(1, 8)):
            share = {name: rng.choice((0.0, 0.3, 1.0, 1.0)) for name in series}
            together = rng.random() < 0.6
            for _ in range(rng.randint(1, 12)):
                step += rng.choice((1, 1, 1, 0, -2))
                draw = rng.random()
                row: dict[str, object] = {} if rng.random() < 0.03 else {"step": step}
                for name in series:
                    if (draw if together else rng.random()) < share[name]:
                        row[name] = round(rng.random() + 0.1, 3) if rng.random() > 0.03 else rng.choice(("abc", "nan", None))
                rows.append(row)
        path = tmp_path / f"log.{fmt}"
        if fmt == "jsonl":
            path.write_text("".join(json.dumps(row) + ("\n\n" if rng.random() < 0.04 else "\n") for row in rows))  # a blank line now and then
        else:
            columns = ["step", *series]
            cells = (",".join("" if row.get(c) is None else str(row[c]) for c in columns) for row in rows)
            path.write_text(",".join(columns) + "\n" + "".join(line + "\n" for line in cells))
        line, column = _both(path, fmt)
        if isinstance(line, str) or isinstance(column, str):
            assert line == column, case
        else:
            assert_same_run(line, column)


def _blocks(path: Path, lines_per_block: int):
    lines = path.read_bytes().splitlines(keepends=True)
    for at in range(0, len(lines), lines_per_block):
        chunk = lines[at : at + lines_per_block]
        yield at + 1, b"".join(chunk), True, len(chunk)


@pytest.mark.parametrize("name", ["NaN and Infinity", "nulls in eval rows", "text among numbers", "key appearing after the first thousand lines"])
def test_these_logs_take_the_fast_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """NaN, nulls that decide nothing, text among numbers and late keys are read by polars, not line by line."""
    text = CASES[name]
    if name == "nulls in eval rows":  # nulls in the first block decide the step axis: start with a plain block
        monkeypatch.setattr(jsonl, "iter_blocks", lambda path: _blocks(path, 5))
        text = CASES["plain"][: CASES["plain"].index("\n", 0) + 1] * 5 + text
    path = _jsonl(tmp_path, text)
    slow = []
    original = jsonl._slow_block
    monkeypatch.setattr(jsonl, "_slow_block", lambda *a: slow.append(a[2]) or original(*a))
    jsonl.read(path, columnar=True)
    assert slow == []


def test_nulls_in_the_first_block_are_read_line_by_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first record decides the step axis, and a null step there is not a missing one."""
    path = _jsonl(tmp_path, CASES["null step in the first record"])
    slow = []
    original = jsonl._slow_block
    monkeypatch.setattr(jsonl, "_slow_block", lambda *a: slow.append(a[2]) or original(*a))
    jsonl.read(path, columnar=True)
    assert slow == [1]


def test_a_csv_column_whose_kind_changes_past_the_first_thousand_rows(tmp_path: Path) -> None:
    """Typed from its first rows, a column meeting a fraction, a word or an empty cell further down reads the same."""
    rows = [f"{s},{s},{2.0 / s}" for s in range(1, 1500)] + ["1500,2.5,x", "1501,,0.5", "1502, 7 ,nan"]
    path = tmp_path / "metrics.csv"
    path.write_text("step,epoch,loss\n" + "\n".join(rows) + "\n")
    line, column = _both(path, "csv")
    assert_same_run(line, column)


def test_count_byte_counts_as_bytes_count_does() -> None:
    """Lengths around the stride (one short, exact, one over, several strides and a part), dense and sparse bytes."""
    from trainproof.io.bounded import COUNT_STRIDE, count_byte

    rng = np.random.default_rng(11)
    for length in (0, 1, COUNT_STRIDE - 1, COUNT_STRIDE, COUNT_STRIDE + 1, 3 * COUNT_STRIDE + 4321):
        for alphabet in (b"\n:", b'{"a":1}\n', bytes(range(256))):
            data = bytes(rng.choice(np.frombuffer(alphabet, dtype=np.uint8), size=length))
            for needle in (b"\n", b":", b"\x00", b"\xff", b'":'):
                assert count_byte(data, needle) == data.count(needle), (length, alphabet[:3], needle)


def test_blocks_are_a_small_first_then_the_most_asked_for(tmp_path: Path) -> None:
    """A 2 MiB block first (a file of junk is refused having read little), then the most asked for: never the rest of
    a long file at once, whose fresh memory would cost more than the blocks' parser calls."""
    from trainproof.io.bounded import MAX_LINE_BYTES, iter_blocks

    path = tmp_path / "log.jsonl"
    line = b'{"step": 1, "loss": 2.0}\n'
    path.write_bytes(line * (21 * MAX_LINE_BYTES // len(line)))
    blocks = list(iter_blocks(path, size=6 * MAX_LINE_BYTES))
    sizes = [len(data) for _, data, _, _ in blocks]
    wanted = [2, 6, 6, 6]
    assert len(sizes) == len(wanted) + 1
    assert sum(sizes) == path.stat().st_size
    for size, mib in zip(sizes, wanted):
        assert mib * MAX_LINE_BYTES - len(line) < size <= mib * MAX_LINE_BYTES
    assert [first for first, *_ in blocks] == [1 + sum(sizes[:k]) // len(line) for k in range(len(sizes))]


def test_blocks_past_the_steady_size_grow_with_what_was_read() -> None:
    """A 2 MiB first block, then none smaller than the steady size or larger than the most; none larger than an eighth
    of what was read before it unless it is the steady size; a ten-million-line log (1.2 GB) in tens of blocks."""
    from trainproof.io.bounded import STEADY_BLOCK_BYTES, _block_sizes

    mib = 1024 * 1024
    sizes, read = [], 0
    for size in _block_sizes(2 * mib, 64 * mib):
        if read >= 1205 * mib:
            break
        sizes.append(size)
        read += size
    assert sizes[0] == 2 * mib
    assert all(STEADY_BLOCK_BYTES <= size <= 64 * mib for size in sizes[1:])
    assert all(size == STEADY_BLOCK_BYTES or size <= sum(sizes[:k]) / 8 for k, size in enumerate(sizes) if k)
    assert sizes[-1] == 64 * mib
    assert 20 <= len(sizes) <= 40
    assert list(itertools.islice(_block_sizes(mib, 3 * mib), 3)) == [mib, 3 * mib, 3 * mib]


def test_a_float_columns_points_are_its_non_null_values_nan_included() -> None:
    """Nulls come out of polars as NaN: a NaN that is a value (not from JSON, which has none) stays a point."""
    import polars as pl

    for values, has in (([1.0, None, 3.0], [True, False, True]), ([1.0, None, float("nan")], [True, False, True]), ([1.0, 2.0], [True, True])):
        column = table.column_of_frame(pl.Series("loss", values, dtype=pl.Float64))
        assert column.has.tolist() == has
        assert np.array_equal(column.numbers, np.array([np.nan if v is None else v for v in values]), equal_nan=True)


def test_a_steps_first_line_found_alone_is_the_one_the_index_gives() -> None:
    """Steps that repeat (an eval record beside its training record), step back (a resumed run), or are not there."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        steps = np.sort(rng.integers(0, 30, 40)) if rng.random() < 0.5 else rng.integers(0, 30, 40)
        lines = np.cumsum(rng.integers(1, 3, steps.size))
        index, one_per_line = table.first_lines([(steps, lines)]), table.first_lines([(steps, np.arange(1, steps.size + 1))])
        for step in [*range(-1, 32), 2**63, -(2**63) - 1]:
            assert table._first_line_of(steps, lines, step) == index.get(step), (steps.tolist(), step)
            assert table._first_line_of(steps, None, step) == one_per_line.get(step), (steps.tolist(), step)


def test_a_csv_number_columns_empty_cells_are_its_nulls_nan_cells_included() -> None:
    """polars gives a typed column's empty cells as NaN (an Int64 column's as floats): they are the empty cells only
    when there are as many NaNs as nulls; a cell reading "nan" stays a (non-finite) value."""
    import polars as pl

    cases = [
        (pl.Float64, [1.5, None, float("nan")], [False, True, False], None),
        (pl.Float64, [1.5, None, 2.0], [False, True, False], None),
        (pl.Float64, [1.5, 2.0], [False, False], None),
        (pl.Int64, [1, None, 3], [False, True, False], [1, 0, 3]),
        (pl.Int64, [2**62 + 1, 5], [False, False], [2**62 + 1, 5]),
    ]
    for dtype, values, empty, ints in cases:
        column = csv_reader._numbers_column(pl.Series("x", values, dtype=dtype))
        assert column.empty.tolist() == empty
        assert column.has.all()
        assert np.array_equal(column.numbers, np.array([np.nan if v is None else float(v) for v in values]), equal_nan=True)
        assert (column.ints is None) if ints is None else column.ints.tolist() == ints
