"""``trainproof text`` on Parquet and Arrow: the real corpus files written by ``datasets`` itself (the format's own
library as the oracle) give the same findings as their JSON Lines; shards, splits and saved folders are each judged and
named; a file cut short or not Parquet at all is one clear error, exit 2."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tests.text import findings_of, judged
from tests.text.test_cli import one_error_line, run
from tests.text.test_reader import jsonl
from trainproof.commands import judge

datasets = pytest.importorskip("datasets")
pytest.importorskip("pyarrow")

REAL = (
    "openai__openai-cookbook__examples_data_toy_chat_fine_tuning.jsonl",  # messages, a row with no user, a loop
    "ml-explore__mlx-examples__wwdc25_data_train.jsonl",  # prompt/completion, 477 repeats
    "ml-explore__mlx-examples__lora_data_train.jsonl",  # text
    "Singh-Aman08__nlp-information-extraction__LoRA_training_set.jsonl",  # instruction/input/output
    "atilsamancioglu__FineTuningTR__training_set.jsonl",  # messages with a system turn
    "mokydoky__DeepElonBot__data_finetune_data.jsonl",  # Prompt/Completion: of no shape
)


def counted(subject) -> Counter:
    """Rule id -> the rows it names in all (the first finding's count, else its number of findings)."""
    out: Counter = Counter()
    for finding in subject.findings:
        out[finding.rule_id] = max(out[finding.rule_id], (finding.values or {}).get("count", 1))
    return out


def quiet(data):
    datasets.disable_progress_bars()
    return data


@pytest.mark.parametrize("name", REAL)
def test_a_real_file_as_parquet_arrow_and_saved_folders_gives_the_jsonl_findings(corpus, tmp_path, name):
    source = corpus / "public" / "datasets" / "text" / name
    expected = judged(source)
    data = quiet(datasets.Dataset.from_json(str(source), cache_dir=str(tmp_path / "cache")))
    data.to_parquet(str(tmp_path / "train.parquet"))
    data.save_to_disk(str(tmp_path / "saved"))
    datasets.DatasetDict({"train": data}).save_to_disk(str(tmp_path / "dict"))
    for path in (tmp_path / "train.parquet", tmp_path / "saved", tmp_path / "dict"):
        subject = judged(path)
        assert counted(subject) == counted(expected), path
        assert [f.line for f in subject.findings] == [f.line for f in expected.findings], path
        assert subject.verdict is expected.verdict
        assert subject.summary["rows"] == expected.summary["rows"]


def test_hub_shards_are_one_subject_per_split_and_rows_are_named_in_their_shard(corpus, tmp_path):
    source = corpus / "public" / "datasets" / "text" / "ml-explore__mlx-examples__wwdc25_data_train.jsonl"
    data = quiet(datasets.Dataset.from_json(str(source), cache_dir=str(tmp_path / "cache")))
    (tmp_path / "repo" / "data").mkdir(parents=True)
    half = len(data) // 2
    data.select(range(half)).to_parquet(str(tmp_path / "repo" / "data" / "train-00000-of-00002.parquet"))
    data.select(range(half, len(data))).to_parquet(str(tmp_path / "repo" / "data" / "train-00001-of-00002.parquet"))
    data.select(range(10)).to_parquet(str(tmp_path / "repo" / "data" / "test-00000-of-00001.parquet"))
    report = judge("text", [str(tmp_path / "repo")])
    test, train = report.subjects
    assert test.path == str(tmp_path / "repo" / "data" / "test-00000-of-00001.parquet")
    assert train.path == str(tmp_path / "repo" / "data" / "train-*.parquet")
    assert counted(train) == counted(judged(source))  # 477 repeats, across the two shards
    second = [f for f in findings_of(train, "TP-TEXT-DUPLICATE") if f.file.endswith("00001-of-00002.parquet")]
    whole = judged(source)
    (dup,) = findings_of(whole, "TP-TEXT-DUPLICATE")[:1]
    first = findings_of(train, "TP-TEXT-DUPLICATE")[0]
    assert first.message.startswith(f"Row {dup.line} of train-00000-of-00002.parquet repeats row ")
    assert first.file.endswith("train-00000-of-00002.parquet") and first.line == dup.line
    assert not second or all(f.line <= len(data) - half for f in second)
    leaks = findings_of(test, "TP-TEXT-SPLIT-LEAK")  # the test split is train's first ten rows
    assert leaks[0].values["count"] == 10 and leaks[0].line == 1
    assert " of the train split, " in leaks[0].message and str(tmp_path / "repo" / "data" / "train-*.parquet") in leaks[0].message
    assert "TP-TEXT-SPLIT-LEAK" in {s.rule_id for s in train.skipped}  # the first split: leaks are named in the later one


def test_a_datasetdict_names_its_validation_rows_that_are_train_rows(tmp_path):
    rows = [{"prompt": f"What is {i} plus {i}?", "completion": f" {2 * i}."} for i in range(12)]
    datasets.DatasetDict({
        "train": datasets.Dataset.from_list(rows[:10]),
        "validation": datasets.Dataset.from_list([rows[10], {"prompt": "what is 3 PLUS 3?", "completion": " 6."}, rows[11]]),
        "test": datasets.Dataset.from_list([rows[10], rows[1]]),
    }).save_to_disk(str(tmp_path / "dict"))  # fmt: skip
    report = judge("text", [str(tmp_path / "dict")])
    by_split = {s.path.rsplit("/", 1)[-1]: s for s in report.subjects}
    assert [f.line for f in findings_of(by_split["validation"], "TP-TEXT-SPLIT-LEAK")] == [2]  # row 3 of train, folded
    assert [f.line for f in findings_of(by_split["test"], "TP-TEXT-SPLIT-LEAK")] == [1, 2]  # one of validation, one of train
    assert findings_of(by_split["train"], "TP-TEXT-SPLIT-LEAK") == []


def test_tool_calls_survive_parquet(tmp_path):
    call = {"type": "function", "function": {"name": "w", "arguments": '{"city": '}}
    rows = [
        {"messages": [{"role": "user", "content": "Weather?"}, {"role": "assistant", "content": None, "tool_calls": [call]},
                      {"role": "tool", "content": "21"}, {"role": "assistant", "content": "21 degrees."}]},
        {"messages": [{"role": "user", "content": "Weather?"}, {"role": "tool", "content": "21"}, {"role": "assistant", "content": "21."}]},
    ]  # fmt: skip
    path = jsonl(tmp_path, *rows)
    data = quiet(datasets.Dataset.from_json(str(path), cache_dir=str(tmp_path / "cache")))
    data.to_parquet(str(tmp_path / "t.parquet"))
    for subject in (judged(path), judged(tmp_path / "t.parquet")):
        assert [f.line for f in findings_of(subject, "TP-TEXT-TOOL-ARGUMENTS")] == [1]
        assert [f.line for f in findings_of(subject, "TP-TEXT-TOOL-ORPHAN")] == [2]
    (finding,) = findings_of(judged(tmp_path / "t.parquet"), "TP-TEXT-TOOL-ORPHAN")
    assert finding.message.startswith("Row 2: message 2 is a 'tool' result")


def _parquet(tmp_path) -> bytes:
    data = quiet(datasets.Dataset.from_list([{"prompt": f"q{i}", "completion": f"a{i}"} for i in range(50)]))
    data.to_parquet(str(tmp_path / "good.parquet"))
    return (tmp_path / "good.parquet").read_bytes()


def _arrow(tmp_path) -> bytes:
    data = quiet(datasets.Dataset.from_list([{"prompt": f"q{i}", "completion": f"a{i}"} for i in range(50)]))
    data.save_to_disk(str(tmp_path / "saved"))
    return (tmp_path / "saved" / "data-00000-of-00001.arrow").read_bytes()


BAD = {
    "a Parquet footer cut short": ("cut.parquet", lambda t: _parquet(t)[:-20], "is not a Parquet file, or its footer is cut short"),
    "JSON named .parquet": ("x.parquet", lambda t: json.dumps({"prompt": "p"}).encode(), "is not a Parquet file, or its footer is cut short"),
    "an empty .parquet": ("e.parquet", lambda t: b"", "is not a Parquet file, or its footer is cut short"),
    "an Arrow stream cut short": ("cut.arrow", lambda t: _arrow(t)[:300], "cut short"),
    "text named .arrow": ("x.arrow", lambda t: b"not arrow at all\n" * 20, "is not an Arrow file"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_damaged_file_is_one_clear_error_and_exit_2(capsys, tmp_path, case):
    name, make, said = BAD[case]
    path = tmp_path / name
    path.write_bytes(make(tmp_path))
    code, out, err = run(capsys, "text", path)
    assert code == 2
    line = one_error_line(err)
    assert line.startswith(f"trainproof: error: {path}: ") and said in line, line
    assert "internal error" not in line and "Traceback" not in out + err


def test_a_folder_with_nothing_to_read_is_exit_2(capsys, tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    code, _, err = run(capsys, "text", tmp_path)
    assert code == 2
    assert "no .parquet or .arrow file" in one_error_line(err)


# --- fuzz: damaged Parquet and Arrow bytes end in a dataset or an InputError, never anything else ---------------------

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from trainproof.io.errors import InputError  # noqa: E402
from trainproof.text.columns import read_split  # noqa: E402


@st.composite
def damaged(draw, good: bytes) -> bytes:
    """``good`` cut, with bytes overwritten, or both."""
    data = bytearray(good[: draw(st.integers(0, len(good)))] if draw(st.booleans()) else good)
    for _ in range(draw(st.integers(0, 8))):
        if data:
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    return bytes(data)


@pytest.mark.parametrize("suffix", [".parquet", ".arrow"])
def test_damaged_columnar_files_read_or_raise_an_input_error(tmp_path_factory, suffix):
    seed_dir = tmp_path_factory.mktemp("seed")
    good = _parquet(seed_dir) if suffix == ".parquet" else _arrow(seed_dir)
    folder = tmp_path_factory.mktemp("fuzz")
    written = iter(range(10**6))

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(damaged(good))
    def check(data: bytes) -> None:
        out = folder / f"d{next(written)}{suffix}"  # a new file each time: never one a reader still holds
        out.write_bytes(data)
        try:
            dataset = read_split(str(out))
        except InputError as error:
            assert error.problem and "\n" not in error.problem
        else:
            assert sum(n for _, n in dataset.files) == dataset.lines

    check()
