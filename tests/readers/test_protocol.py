"""Every reader module satisfies the Reader protocol, line parser included (what ``trainproof watch`` relies on)."""

from __future__ import annotations

import inspect

import pytest

from trainproof.runs.model import Run
from trainproof.runs.readers import READERS
from trainproof.runs.readers.base import Reader, RunBuilder

LINES = {
    "jsonl": ['{"step": 1, "loss": 2.0}', '{"step": 2, "loss": 1.5}'],
    "csv": ["step,loss", "1,2.0", "2,1.5"],
    "coqui": [" --> STEP: 0/10 -- GLOBAL_STEP: 1", "   | > loss: 2.0  (2.0)", " --> STEP: 1/10 -- GLOBAL_STEP: 2", "   | > loss: 1.5  (1.75)"],
    "mlflow": ["1700000000000 2.0 1", "1700000001000 1.5 2"],
}
READ_WHOLE = {"hf", "tensorboard"}


def test_every_member_of_the_protocol_is_declared_by_every_reader():
    members = {name for name in dir(Reader) if not name.startswith("_")} | set(inspect.get_annotations(Reader))
    assert members == {"name", "description", "line_parser", "sniff", "read"}
    for key, module in READERS.items():
        assert module.name == key
        assert module.description
        assert all(hasattr(module, member) for member in members), key
    assert {key for key, module in READERS.items() if module.line_parser is None} == READ_WHOLE
    assert set(LINES) == set(READERS) - READ_WHOLE


@pytest.mark.parametrize("fmt", sorted(LINES))
def test_a_line_parser_builds_a_run_from_lines_fed_one_at_a_time(tmp_path, fmt):
    make = READERS[fmt].line_parser
    assert make is not None
    parser = make(tmp_path / "loss")
    for number, line in enumerate(LINES[fmt], start=1):
        parser.feed(line, number)
    assert isinstance(parser.builder, RunBuilder)
    snapshot = parser.build(copy=False)
    assert isinstance(snapshot, Run)
    assert snapshot.loss.steps.tolist() == [1, 2]
    assert parser.build().loss.values.tolist() == [2.0, 1.5]
