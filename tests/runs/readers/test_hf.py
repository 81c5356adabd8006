import json
import math

import pytest

from tests.helpers import hf_entries, write_hf_state
from trainproof.io.errors import InputError
from trainproof.runs.model import DeferredStepLines
from trainproof.runs.readers import read_run


def test_training_eval_and_summary_entries_are_told_apart(tmp_path):
    entries = hf_entries([2.0, 1.5, 1.2], grad=[0.9, 0.7, 0.5])
    entries.insert(2, {"epoch": 0.5, "eval_loss": 1.8, "eval_runtime": 3.2, "step": 10})
    entries.append({"epoch": 1.0, "step": 15, "train_loss": 1.57, "train_runtime": 123.4, "train_samples_per_second": 9.1})
    path = write_hf_state(tmp_path / "trainer_state.json", entries, max_steps=15, best_model_checkpoint="out/checkpoint-10")
    run = read_run(path)
    assert run.format == "hf"
    assert run.loss.steps.tolist() == [5, 10, 15]
    assert run.loss.values.tolist() == [2.0, 1.5, 1.2]  # train_loss (the run's mean) is not a point
    assert run.eval_losses["eval_loss"].steps.tolist() == [10]
    assert run.grad_norm.values.tolist() == [0.9, 0.7, 0.5]
    assert run.runtime_s == pytest.approx(123.4)
    assert run.max_steps == 15
    assert [(c.step, c.best) for c in run.checkpoints] == [(10, True)]


def test_named_eval_sets_and_custom_lr_key(tmp_path):
    entries = [{"loss": 3.0, "lr": 1e-4, "remaining_time": "59h:30m", "step": 20}]
    entries.append({"eval_g0_loss": 1.1, "eval_g1_loss": 1.6, "eval_g0_accuracy": 0.5, "step": 20})
    run = read_run(write_hf_state(tmp_path / "s.json", entries))
    assert list(run.eval_losses) == ["eval_g0_loss", "eval_g1_loss"]
    assert run.learning_rate.values.tolist() == [1e-4]


def test_nan_infinity_and_text_are_kept_as_nonfinite_evidence(tmp_path):
    entries = hf_entries([1.0, float("nan"), 0.9], grad=[0.5, float("inf"), "n/a"])
    run = read_run(write_hf_state(tmp_path / "trainer_state.json", entries))
    assert math.isnan(run.loss.values[1])
    assert math.isinf(run.grad_norm.values[1])
    assert math.isnan(run.grad_norm.values[2])
    assert run.grad_norm.raw == {15: "n/a"}


def test_truncated_file_is_named_as_such(tmp_path):
    path = write_hf_state(tmp_path / "trainer_state.json", hf_entries([1.0, 0.9, 0.8]))
    path.write_text(path.read_text()[:-40])
    with pytest.raises(InputError, match="truncated"):
        read_run(path)


def test_json_without_log_history(tmp_path):
    path = tmp_path / "trainer_state.json"
    path.write_text('{"global_step": 3}')
    with pytest.raises(InputError, match="log_history|format"):
        read_run(path)


def test_broken_json_names_line_and_column(tmp_path):
    path = tmp_path / "trainer_state.json"
    path.write_text('{"log_history": [\n {"loss": 1.0, "step": 5},\n {"loss": , "step": 10}\n ]}')
    with pytest.raises(InputError, match="line 3"):
        read_run(path)


def test_the_line_of_each_step_is_indexed_only_when_many_findings_ask(tmp_path, monkeypatch):
    """Indexing a trainer_state.json's lines is a quarter of judging a million entries on the column path: a run
    without findings never does it, a finding's line is one search of the text, the same line the text path gives."""
    from trainproof.commands import judge_run
    from trainproof.runs.readers import hf

    calls = []
    index = hf._index_step_lines
    monkeypatch.setattr(hf, "_index_step_lines", lambda data: calls.append(1) or index(data))
    healthy = write_hf_state(tmp_path / "healthy.json", hf_entries([2.0 * 0.97**i for i in range(60)]))
    assert judge_run(hf.read(healthy, columnar=True)).findings == ()
    broken = hf_entries([2.0 * 0.97**i for i in range(60)])
    broken[40]["loss"] = math.nan
    path = write_hf_state(tmp_path / "broken.json", broken)
    finding = next(f for f in judge_run(hf.read(path, columnar=True)).findings if f.rule_id == "TP-LOSS-NONFINITE")
    assert calls == []
    assert finding.line == hf.read(path, columnar=False).line_of(broken[40]["step"])
    assert f'"step": {broken[40]["step"]}' in path.read_text().splitlines()[finding.line - 1]
    run = hf.read(path, columnar=True)
    text_path = hf.read(path, columnar=False)
    for step in [5, 10, 15, 20, 25, 30]:  # past FINDS_BEFORE_INDEX lookups, the whole index is made, once
        assert run.line_of(step) == text_path.line_of(step)
    assert calls == [1]


STEP_TEXTS = {
    "indented": '{"log_history": [\n  {"loss": 1.0, "step": 5},\n  {"eval_loss": 2.0, "step": 5},\n  {"loss": 0.5, "step": 10}\n]}',
    "packed and tabbed": '{"log_history": [{"loss": 1.0, "step":5},\n{"loss": 1.0,\t"step"\t:\t10},\n{"step": 100, "loss": 2}]}',
    "prefixes and floats": '{"log_history": [\n{"step": 100, "loss": 1},\n{"step": 10.0, "loss": 1},\n{"step": 1, "loss": 1},\n{"step": 10, "loss": 1}]}',
    "a step inside a string": '{"note": "\\"step\\": 7 is fine",\n "log_history": [\n{"step": 7, "loss": 1}]}',
}


@pytest.mark.parametrize("name", list(STEP_TEXTS))
def test_one_step_s_search_finds_the_line_the_whole_index_gives(name):
    from trainproof.runs.readers import hf

    data = STEP_TEXTS[name].encode()
    index = hf._index_step_lines(data)
    for step in [*index, 0, 2, 3, 11, 99, 1000, -5, 10**19]:
        assert hf._find_step_line(data, step) == index.get(step), step


def test_a_compare_baseline_is_kept_without_its_log_lines(tmp_path, monkeypatch):
    """compare keeps the baseline's context for every run compared with it and never asks its lines; a deferred index
    would keep the whole trainer_state.json's bytes alive that long."""
    from trainproof.commands.compare import COMPARE
    from trainproof.config import Settings
    from trainproof.runs.readers import hf, table

    monkeypatch.setattr(table, "LARGE_BYTES", 0)  # the baseline read as columns, its line index deferred
    path = write_hf_state(tmp_path / "trainer_state.json", hf_entries([2.0 * 0.97**i for i in range(60)]))
    assert isinstance(hf.read(path).step_lines, DeferredStepLines)
    assert hf.read(path).line_of(5) is not None, "the log's own lines are known"
    prepared = COMPARE.prepare(Settings(), {"baseline": str(path)})
    assert dict(prepared.shared.ctx.run.step_lines) == {}


def test_a_deferred_line_index_answers_as_the_index_does_before_and_after_it_is_made():
    import numpy as np

    from trainproof.runs.model import StepLines

    index = StepLines(np.array([5, 10, 15]), np.array([3, 7, 11]))
    searched = []
    deferred = DeferredStepLines(lambda: index, lambda step: searched.append(step) or index.get(step))
    asked = [10, 10.5, 4, 15, 10.0, 5, 99, 15]  # past FINDS_BEFORE_INDEX searches, the index answers
    assert [deferred.get(step) for step in asked] == [index.get(step) for step in asked]
    assert searched == [10, 4, 15, 10]
    assert 10.5 not in deferred
    assert deferred[5] == 3
    with pytest.raises(KeyError):
        deferred[6]
    assert (deferred == {5: 3, 10: 7, 15: 11}, len(deferred), list(deferred)) == (True, 3, [5, 10, 15])
    assert repr(deferred) == f"DeferredStepLines({index!r})"


@pytest.mark.parametrize("columnar", [False, True], ids=["text", "columns"])
def test_an_axis_or_training_series_given_a_goal_is_no_metric_as_in_the_other_readers(tmp_path, columnar):
    """A goal given to `epoch` or `learning_rate` (by --metric or the configuration) does not make it an eval metric:
    the names table reads them as an axis and a training series, in trainer_state.json as in JSON Lines."""
    from dataclasses import replace

    from trainproof.runs.readers import hf, jsonl
    from trainproof.runs.readers.names import DEFAULT_NAMES

    names = replace(DEFAULT_NAMES, goals={"epoch": "max", "learning_rate": "min", "eval_bleu": "max"})
    entries = hf_entries([2.0, 1.8, 1.5, 1.3, 1.2, 1.1])
    entries += [{"step": 6, "epoch": 1.0, "eval_loss": 1.4, "eval_bleu": 0.3}]
    state = write_hf_state(tmp_path / "trainer_state.json", entries)
    lines = tmp_path / "log.jsonl"
    lines.write_text("".join(json.dumps(e) + "\n" for e in entries))
    for run in (hf.read(state, names, columnar=columnar), jsonl.read(lines, names, columnar=columnar)):
        assert list(run.eval_metrics) == ["eval_bleu"]


def test_one_step_s_search_finds_the_first_match_of_the_pattern():
    """The line is counted up to the first match of the step's pattern (by count_byte over a view of the text, past
    its stride behind a long head): on random texts of steps with and without spaces or tabs around the colon, and
    their digits inside other numbers and after other keys."""
    import random
    import re

    from trainproof.runs.readers import hf

    rng = random.Random(3)
    for _ in range(300):
        parts = []
        for _ in range(rng.randint(1, 30)):
            key = rng.choice(('"step"', '"step"', '"steps"', '"xstep"', '"loss"'))
            value = rng.choice(("7", "17", "71", "7.5", "107", "1", "10"))
            parts.append(key + rng.choice(("", " ", "\t", "  ")) + ":" + rng.choice(("", " ", " \t")) + value + rng.choice((",", "\n", "}")))
        data = b'"loss": 0.5,\n' * rng.choice((0, 0, 30000)) + "".join(parts).encode()  # a long head: past count_byte's stride
        for step in (1, 7, 10, 17, 71, 107, 5):
            found = re.search(hf._STEP_KEY_BYTES + str(step).encode() + rb"(?![0-9])", data)
            expected = None if found is None else data.count(b"\n", 0, found.start()) + 1
            assert hf._find_step_line(data, step) == expected, (data[:200], step)


def test_a_file_of_many_kinds_of_entry_is_read_in_linear_time(tmp_path, monkeypatch):
    """Each entry with a key of its own (4,000 kinds): every kind's entries are taken by index, not by a mask over the
    whole history each (which took 13 s at 40,000). Counted, not timed: the entries the masks (itertools.compress,
    the reader's only pass over the whole history for a kind) take, over all of them."""
    import itertools
    import json

    from trainproof.runs.readers import hf

    path = tmp_path / "trainer_state.json"
    history = [{"step": i, "loss": 1 / (i + 1), f"extra_{i}": 1.0} for i in range(1, 4001)]
    path.write_text(json.dumps({"log_history": history}))
    taken = []
    compress = itertools.compress

    def counted(data, selectors):
        selectors = list(selectors)
        taken.append(len(selectors))  # a pass over this many entries
        return compress(data, selectors)

    monkeypatch.setattr(hf.itertools, "compress", counted)
    run = hf.read(path, columnar=True)
    assert len(run.loss) == 4000
    assert sum(taken) <= 4 * len(history)


def test_entries_are_grouped_by_their_keys_whatever_their_sizes():
    """_kinds against grouping by each entry's tuple of keys: main classes of one size holding one kind or several
    (the same number of keys, other names), keys in other orders, and minority sizes."""
    import random

    from trainproof.runs.readers import hf

    rng = random.Random(5)
    shapes = [("step", "loss", "lr"), ("step", "eval_loss", "eval_runtime"), ("lr", "loss", "step"), ("step",), ("loss", "step", "lr", "grad_norm"), ()]
    for _ in range(200):
        history = [dict.fromkeys(rng.choice(shapes[: rng.randint(1, len(shapes))]), 1.0) for _ in range(rng.randint(1, 60))]
        expected: dict[frozenset, list[int]] = {}
        for row, entry in enumerate(history):
            expected.setdefault(frozenset(entry), []).append(row)
        got = hf._kinds(history)
        assert [int(rows[0]) for _, rows, _ in got] == sorted(int(rows[0]) for _, rows, _ in got)
        for keys, rows, entries in got:
            assert keys == tuple(history[int(rows[0])])  # in the order of the kind's first entry
            assert entries == [history[r] for r in rows.tolist()]
            assert all(frozenset(e) == frozenset(keys) for e in entries)
        by_set: dict[frozenset, list[int]] = {}
        for keys, rows, _ in got:
            by_set.setdefault(frozenset(keys), []).extend(rows.tolist())
        assert {k: sorted(v) for k, v in by_set.items()} == expected


@pytest.mark.parametrize(
    ("values", "code", "expected"),
    [
        ([1.5, 2, 3.25], "d", [1.5, 2.0, 3.25]),
        ([0.0, 1.0, 0, 1, 2.5], "d", [0.0, 1.0, 0.0, 1.0, 2.5]),
        ([0.5, True, 2.0], "d", None),  # a bool converts to 1.0: found among the values that came out 0 or 1
        ([2.0] * 8 + [True], "d", None),  # few values 0 or 1: only theirs looked at, the bool among them
        ([2.0] * 8 + [1.0, 0], "d", [2.0] * 8 + [1.0, 0.0]),
        ([False] + [0.0] * 20, "d", None),  # most values 0 or 1: every type looked at
        ([0.0] * 20, "d", [0.0] * 20),
        ([1.0, "n/a"], "d", None),
        ([1.0, None], "d", None),
        ([1.0, [1]], "d", None),
        ([1.0, 10**400], "d", None),  # past float64
        ([3, 1, 2**63 - 1], "q", [3, 1, 2**63 - 1]),
        ([3, 2.0], "q", None),  # a float step is read the float way
        ([0, 1, True], "q", None),
        ([2**63], "q", None),
    ],
)
def test_typed_takes_numbers_and_refuses_anything_else_bools_included(values, code, expected):
    from trainproof.runs.readers import hf

    got = hf._typed([{"value": value} for value in values], "value", code)
    assert (got if got is None else got.tolist()) == expected


def test_a_trainer_state_read_as_columns_is_kept_only_when_read_and_one_at_a_time(tmp_path, monkeypatch):
    """In the CLI's short process (the collector keeping what is dropped), the columnar read keeps its parsed
    document, frees it before the next one is parsed, and keeps nothing when it leaves the file to the text path (a
    CRLF file), which parses it again."""
    import json

    from trainproof.io import collector
    from trainproof.runs.readers import hf

    monkeypatch.setattr(collector, "_kept_to_exit", [])
    held_while_reading = []  # documents held when the next one's bytes are read: freed first, never two at once
    read_bytes = hf.read_document_bytes
    monkeypatch.setattr(hf, "read_document_bytes", lambda path: held_while_reading.append(len(collector._kept_to_exit)) or read_bytes(path))
    history = [{"step": i, "loss": 1 / i, "learning_rate": 1e-4} for i in range(1, 50)]
    first, second, crlf = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    first.write_text(json.dumps({"log_history": history}, indent=2))
    second.write_text(json.dumps({"log_history": history[:10]}, indent=2))
    crlf.write_bytes(json.dumps({"log_history": history}, indent=2).replace("\n", "\r\n").encode())
    hf.read(first, columnar=True)
    assert [len(kept["log_history"]) for kept in collector._kept_to_exit] == [49]
    hf.read(second, columnar=True)
    assert [len(kept["log_history"]) for kept in collector._kept_to_exit] == [10]
    run = hf.read(crlf, columnar=True)
    assert len(run.loss) == 49  # read by the text path
    assert collector._kept_to_exit == []
    assert held_while_reading == [0, 0, 0]
