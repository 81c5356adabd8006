import pytest

from trainproof.errors import InputError
from trainproof.readers import read_run


def test_lightning_sparse_rows_prefer_the_step_loss(tmp_path):
    path = tmp_path / "metrics.csv"
    path.write_text(
        "epoch,step,train_loss_epoch,train_loss_step,val_loss\n"
        "0,49,,2.5,\n0,99,,2.3,\n0,99,,,2.4\n0,99,2.4,,\n1,149,,2.1,\n1,199,,2.0,\n1,199,,,2.2\n"
    )
    run = read_run(path)
    assert run.format == "csv"
    assert run.loss_name == "train_loss_step"
    assert run.loss.steps.tolist() == [49, 99, 149, 199]
    assert run.eval_losses["val_loss"].values.tolist() == [2.4, 2.2]
    assert run.epoch.values.tolist() == [0, 0, 1, 1]


def test_keras_log_is_judged_per_epoch(tmp_path):
    path = tmp_path / "training_log.csv"
    path.write_text("epoch,accuracy,learning_rate,loss,val_loss\n0,0.7,0.005,1.9,1.4\n1,0.8,0.005,1.3,1.2\n")
    run = read_run(path)
    assert run.step_unit == "epoch"
    assert run.loss.steps.tolist() == [0, 1]
    assert run.learning_rate.values.tolist() == [0.005, 0.005]


def test_repeated_header_and_tabs(tmp_path):
    path = tmp_path / "log.tsv"
    path.write_text("step\tloss\n1\t2.0\nstep\tloss\n2\t1.5\n")
    run = read_run(path)
    assert run.loss.values.tolist() == [2.0, 1.5]


def test_no_loss_column(tmp_path):
    path = tmp_path / "metrics.csv"
    path.write_text("epoch,test_loss,test_acc,step\n0,0.15,0.95,0\n")
    with pytest.raises(InputError, match="no loss column"):
        read_run(path)


def test_header_only(tmp_path):
    path = tmp_path / "metrics.csv"
    path.write_text("step,loss\n")
    with pytest.raises(InputError, match="no rows"):
        read_run(path)
