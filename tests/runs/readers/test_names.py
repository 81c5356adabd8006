"""The one table of the names stacks write, and the user's --map and configuration map over it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainproof.cli import main
from trainproof.config import ConfigError, load
from trainproof.runs.readers import read_run
from trainproof.runs.readers.names import DEFAULT_NAMES, MapError, Names, eval_set, parse_goals, parse_map

STACKS = {
    "HF": (
        ["loss", "learning_rate", "grad_norm", "eval_loss", "step", "epoch"],
        {
            "loss": "loss",
            "learning_rate": "learning_rate",
            "grad_norm": "grad_norm",
            "eval_loss": "eval_loss",
            "step": "step",
            "epoch": "epoch",
        },
    ),
    "HF to TensorBoard": (
        ["train/loss", "train/learning_rate", "train/grad_norm", "eval/loss", "train/epoch"],
        {
            "loss": "train/loss",
            "learning_rate": "train/learning_rate",
            "grad_norm": "train/grad_norm",
            "eval_loss": "eval/loss",
            "epoch": "train/epoch",
        },
    ),
    "Coqui": (
        [
            "TrainIterStats/loss",
            "TrainIterStats/current_lr",
            "TrainIterStats/step_time",
            "TrainIterStats/loader_time",
            "EvalStats/avg_loss",
            "TrainEpochStats/avg_grad_norm",
        ],
        {
            "loss": "TrainIterStats/loss",
            "learning_rate": "TrainIterStats/current_lr",
            "step_time": "TrainIterStats/step_time",
            "loader_time": "TrainIterStats/loader_time",
            "eval_loss": "EvalStats/avg_loss",
            "grad_norm": "TrainEpochStats/avg_grad_norm",
        },
    ),
    "Lightning": (
        ["train_loss_step", "train_loss_epoch", "val_loss", "lr-AdamW", "step", "epoch"],
        {"loss": "train_loss_step", "eval_loss": "val_loss", "learning_rate": "lr-AdamW", "step": "step", "epoch": "epoch"},
    ),
    "Lightning, a parameter group": (["train_loss", "lr-SGD/pg1"], {"loss": "train_loss", "learning_rate": "lr-SGD/pg1"}),
    "NeMo": (
        ["reduced_train_loss", "lr", "val_loss", "grad_norm", "global_step", "train_step_timing in s"],
        {
            "loss": "reduced_train_loss",
            "learning_rate": "lr",
            "eval_loss": "val_loss",
            "grad_norm": "grad_norm",
            "step": "global_step",
            "step_time": "train_step_timing in s",
        },
    ),
    "Megatron": (
        ["lm loss", "learning-rate", "grad-norm", "lm loss validation", "iteration-time"],
        {
            "loss": "lm loss",
            "learning_rate": "learning-rate",
            "grad_norm": "grad-norm",
            "eval_loss": "lm loss validation",
            "step_time": "iteration-time",
        },
    ),
    "Keras": (["epoch_loss", "epoch_learning_rate"], {"loss": "epoch_loss", "learning_rate": "epoch_learning_rate"}),
    "timings": (["data_time", "batch_time", "loss"], {"loader_time": "data_time", "step_time": "batch_time", "loss": "loss"}),
}


@pytest.mark.parametrize("stack", list(STACKS))
def test_each_stack_s_names_map_to_the_run_s_series(stack: str) -> None:
    names, expected = STACKS[stack]
    assert DEFAULT_NAMES.resolve(names) == expected


def test_keras_validation_folder_makes_its_loss_the_eval_loss() -> None:
    assert DEFAULT_NAMES.resolve(["epoch_loss", "epoch_learning_rate"], validation=True) == {"eval_loss": "epoch_loss"}


def test_the_preferred_name_wins_when_a_log_writes_two() -> None:
    assert DEFAULT_NAMES.resolve(["train_loss_epoch", "train_loss_step"])["loss"] == "train_loss_step"


def test_names_are_compared_without_case_spaces_or_dashes_but_an_unknown_name_is_nothing() -> None:
    assert DEFAULT_NAMES.resolve(["LM Loss", "Learning-Rate"]) == {"loss": "LM Loss", "learning_rate": "Learning-Rate"}
    assert DEFAULT_NAMES.resolve(["total_objective", "lrate"]) == {}


def test_named_eval_sets() -> None:
    assert eval_set("eval_g0_loss") == eval_set("eval/g0_loss") == "eval_g0_loss"
    assert eval_set("eval_loss") is None
    assert eval_set("train/loss") is None


def test_a_mapped_name_is_its_series_only_name_and_no_other_series_takes_it() -> None:
    names = Names({"loss": "objective", "eval_loss": "loss"})
    assert names.resolve(["loss", "objective", "lr"]) == {"loss": "objective", "eval_loss": "loss", "learning_rate": "lr"}
    assert names.resolve(["loss"]) == {"eval_loss": "loss"}, "no fallback to the table for a mapped series"


def test_parse_map_refuses_what_is_not_series_equals_name() -> None:
    assert parse_map(["loss=train/total", "Eval-Loss = val/total"]) == {"loss": "train/total", "eval_loss": "val/total"}
    for bad in ("loss", "loss=", "lose=x", "=x"):
        with pytest.raises(MapError):
            parse_map([bad])


def _custom_log(tmp_path: Path) -> Path:
    path = tmp_path / "log.jsonl"
    rows = [{"step": s, "objective": 3.0 * 0.99**s, "lrate": 1e-4} for s in range(1, 200)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_log_that_maps_to_nothing_lists_its_names_and_how_to_map_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["epoch", str(_custom_log(tmp_path))])
    err = capsys.readouterr().err
    assert code == 2
    assert "columns: step, objective, lrate" in err
    assert "--map loss=COLUMN" in err
    assert len(err.strip().splitlines()) == 1


def test_map_on_the_command_line_names_the_loss(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["epoch", str(_custom_log(tmp_path)), "--map", "loss=objective", "--map", "learning_rate=lrate", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert doc["subjects"][0]["summary"]["loss"] == "objective"
    run = read_run(_custom_log(tmp_path), names=Names({"loss": "objective", "learning_rate": "lrate"}))
    assert run.learning_rate is not None
    assert len(run.learning_rate) == 199


def test_a_bad_map_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["epoch", str(_custom_log(tmp_path)), "--map", "lose=objective"])
    err = capsys.readouterr().err
    assert code == 2
    assert "'lose' is not a series" in err
    assert len(err.strip().splitlines()) == 1


def test_the_configuration_map_table_and_the_command_line_over_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _custom_log(tmp_path)
    (tmp_path / ".trainproof.toml").write_text('[map]\nloss = "objective"\n')
    monkeypatch.chdir(tmp_path)
    assert load().names.overrides == {"loss": "objective"}
    assert main(["epoch", str(log)]) == 0
    capsys.readouterr()
    assert main(["epoch", str(log), "--map", "loss=lrate", "--json"]) in (0, 1)
    assert json.loads(capsys.readouterr().out)["subjects"][0]["summary"]["loss"] == "lrate"


@pytest.mark.parametrize("table", ['[map]\nlose = "x"\n', "[map]\nloss = 3\n", 'map = "loss=x"\n'])
def test_a_bad_configuration_map_names_its_key(tmp_path: Path, table: str) -> None:
    path = tmp_path / ".trainproof.toml"
    path.write_text(table)
    with pytest.raises(ConfigError, match="'map'"):
        load(path)


def test_map_renames_the_keys_of_a_trainer_state(tmp_path: Path) -> None:
    history = [{"step": s, "total_loss": 2.0 / s, "learning_rate": 1e-4} for s in range(1, 30)]
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"log_history": history}))
    run = read_run(path, names=Names({"loss": "total_loss"}))
    assert run.loss is not None
    assert len(run.loss) == 29
    assert run.learning_rate is not None


def test_map_names_an_mlflow_metric(tmp_path: Path) -> None:
    metrics = tmp_path / "run" / "metrics"
    metrics.mkdir(parents=True)
    (metrics / "objective").write_text("".join(f"{1700000000000 + s} {2.0 / s} {s}\n" for s in range(1, 20)))
    run = read_run(tmp_path / "run", names=Names({"loss": "objective"}))
    assert run.loss is not None
    assert len(run.loss) == 19


def test_a_series_mapped_twice_to_different_names_is_refused_and_the_same_twice_is_not():
    with pytest.raises(MapError, match="'loss' is mapped twice, to 'a' and to 'b'"):
        parse_map(["loss=a", "loss=b"])
    assert parse_map(["loss=a", "loss=a"]) == {"loss": "a"}
    with pytest.raises(MapError, match="given both goals"):
        parse_goals(["eval_wer=min", "eval_wer=max"])
    assert parse_goals(["eval_wer=min", "EVAL_WER=min"]) == {"eval_wer": "min"}
