"""MLflow file-store metrics: a run directory, or one metric file."""

from __future__ import annotations

import math

import pytest

from trainproof.io.errors import InputError
from trainproof.runs.readers import read_run


def write_metric(path, values, start=1):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{1_700_000_000_000 + s * 2000} {v!r} {s}\n" for s, v in enumerate(values, start=start)))


@pytest.fixture
def run_dir(tmp_path):
    run = tmp_path / "mlruns" / "0" / "abc123"
    write_metric(run / "metrics" / "loss", [2 * math.exp(-s / 20) + 0.5 for s in range(1, 61)])
    write_metric(run / "metrics" / "val_loss", [1.9, 1.2, 0.9], start=20)
    write_metric(run / "metrics" / "accuracy", [0.5, 0.7])
    (run / "meta.yaml").write_text("run_id: abc123\n")
    return run


def test_run_directory_is_one_run(run_dir):
    run = read_run(run_dir)
    assert run.format == "mlflow"
    assert run.path.endswith("metrics/loss")
    assert len(run.loss) == 60
    assert run.eval_losses["val_loss"].steps.tolist() == [20, 21, 22]
    assert run.wall_time.values[-1] == pytest.approx(118.0)
    assert run.line_of(10) == 10


def test_a_metric_file_is_named_by_its_file(run_dir):
    assert len(read_run(run_dir / "metrics" / "loss").loss) == 60
    with pytest.raises(InputError, match=r"no loss metric \(metrics: accuracy\)"):
        read_run(run_dir / "metrics" / "accuracy")


def test_a_malformed_line_names_its_number(tmp_path):
    path = tmp_path / "loss"
    path.write_text("1700000000000 2.0 1\n1700000001000 1.9 2\nnot a metric line\n")
    with pytest.raises(InputError, match="line 3"):
        read_run(path, "mlflow")
