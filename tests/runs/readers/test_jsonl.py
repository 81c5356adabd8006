import math

import pytest

from trainproof.io.errors import InputError
from trainproof.runs.readers import read_run


def test_common_spellings(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text(
        '{"global_step": 1, "train_loss": 2.0, "lr": 0.001, "grad_norm": 1.5, "timestamp": "2026-01-01T00:00:00"}\n'
        '{"global_step": 2, "train_loss": 1.8, "lr": 0.001, "grad_norm": 1.2, "timestamp": "2026-01-01T00:00:10"}\n'
        '{"global_step": 2, "val_loss": 1.9}\n'
    )
    run = read_run(path)
    assert run.format == "jsonl"
    assert run.loss_name == "train_loss"
    assert run.loss.values.tolist() == [2.0, 1.8]
    assert run.eval_losses["val_loss"].values.tolist() == [1.9]
    assert run.wall_time.values.tolist() == [0.0, 10.0]


def test_partial_last_line_is_left_out_with_a_note(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text('{"step": 1, "loss": 2.0}\n{"step": 2, "loss": 1.9}\n{"step": 3, "lo')
    run = read_run(path)
    assert run.loss.steps.tolist() == [1, 2]
    assert any("incomplete" in n for n in run.notes)


def test_broken_line_in_the_middle_is_an_error_with_its_number(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text('{"step": 1, "loss": 2.0}\n{"step": 2, loss: 1.9}\n{"step": 3, "loss": 1.8}\n')
    with pytest.raises(InputError, match="line 2"):
        read_run(path)


def test_json_array_and_nonfinite_values(tmp_path):
    path = tmp_path / "metrics.json"
    path.write_text('[{"step": 1, "loss": 2.0}, {"step": 2, "loss": NaN}, {"step": 3, "loss": "inf"}]')
    run = read_run(path, "jsonl")
    assert math.isnan(run.loss.values[1])
    assert math.isinf(run.loss.values[2])


def test_no_loss_column_names_the_columns(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text('{"step": 1, "accuracy": 0.5}\n')
    with pytest.raises(InputError, match="no loss column.*accuracy"):
        read_run(path)
