"""Eval metrics other than loss: which names are read and which way is better, and TP-EVAL-WORSE judging them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.checks.cases import noisy
from tests.helpers import make_run, series
from trainproof.cli import main
from trainproof.commands import judge_against, judge_epoch, judge_run
from trainproof.config import ConfigError, Settings, parse
from trainproof.report import Verdict
from trainproof.runs.model import Checkpoint
from trainproof.runs.readers import read_run
from trainproof.runs.readers.names import Names

EVAL_STEPS = [20, 40, 60, 80, 100, 120, 140]
ISSUE_WER = [17.7, 21.0, 26.0, 28.0, 29.5, 31.0, 30.2]
"""The issue's speech-recognition fine-tune: word error rate from 17.7 to 28-31, in percent as many scripts log it."""


def with_metrics(run, metrics: dict[str, tuple[str, list[float]]], steps=EVAL_STEPS):
    """``run`` with eval metrics ``{name: (goal, values)}`` logged at ``steps``."""
    return replace(
        run,
        eval_metrics={name: series(values, steps) for name, (_, values) in metrics.items()},
        metric_goals={name: goal for name, (goal, _) in metrics.items()},
    )


def flat_training(seed: int = 3):
    return make_run(noisy(np.full(140, 1.0), 0.05, seed), steps=list(range(1, 141)))


def subject_of(run, settings: Settings | None = None):
    return judge_epoch([run], settings=settings or Settings()).subjects[0]


def finding(subject, rule_id="TP-EVAL-WORSE"):
    return next((f for f in subject.findings if f.rule_id == rule_id), None)


# --- which names are eval metrics, and which way is better ---------------------


@pytest.mark.parametrize(
    ("name", "goal"),
    [
        ("eval_wer", "min"),
        ("eval_cer", "min"),
        ("eval/wer", "min"),
        ("eval_g0_wer", "min"),
        ("eval_perplexity", "min"),
        ("val_epoch_perplexity", "min"),
        ("eval_accuracy", "max"),
        ("val_acc", "max"),
        ("val/accuracy_epoch", "max"),
        ("validation/epoch_accuracy", "max"),
        ("eval_f1", "max"),
        ("eval_bleu", "max"),
        ("eval_rouge-1", "max"),
        ("eval_rougeLsum", "max"),
        ("eval_exact_match", "max"),
        ("val_mean_io_u", "max"),
        ("eval_bar", "unknown"),
        ("eval_f1_error", "unknown"),  # words of both kinds: no direction is guessed
        ("eval_loss", None),  # an eval set's loss, read as one
        ("eval_g0_loss", None),
        ("val_loss", None),
        ("eval_runtime", None),
        ("eval_samples_per_second", None),
        ("eval_model_preparation_time", None),
        ("eval_gen_len", None),
        ("epoch", None),
        ("loss", None),
        ("accuracy", None),  # a training-set metric: no eval prefix
    ],
)
def test_the_goal_of_a_name(name, goal):
    assert Names().metric_goal(name) == goal


def test_the_users_goal_wins_and_names_a_metric_without_an_eval_prefix():
    names = Names(goals={"eval_bar": "max", "wer": "min", "eval_wer": "max"})
    assert names.metric_goal("eval_bar") == "max"
    assert names.metric_goal("WER") == "min"
    assert names.metric_goal("eval_wer") == "max"


# --- the rule ----------------------------------------------------------------------


def test_a_word_error_rate_that_climbs_fires_even_while_eval_loss_holds():
    run = make_run(noisy(np.full(140, 1.0), 0.05, 3), steps=list(range(1, 141)), evals={"eval_loss": (EVAL_STEPS, [0.5, 0.51, 0.49, 0.5, 0.5, 0.51, 0.5])})
    run = replace(with_metrics(run, {"eval_wer": ("min", ISSUE_WER)}), checkpoints=(Checkpoint(20, "out/checkpoint-20"),))
    f = finding(subject_of(run))
    assert f is not None
    assert f.message.startswith("An eval metric got worse: eval_wer was lowest at step 20 (17.7) and ends 71% higher (30.2)")
    assert "out/checkpoint-20" in f.message
    assert f.values["eval_metric"] == "eval_wer"
    assert f.values["goal"] == "min"
    assert f.values["best_eval_step"] == 20
    assert f.values["rise"] == pytest.approx(30.2 / 17.7 - 1, abs=1e-4)
    assert f.steps == (20, 140)


def test_an_accuracy_that_falls_fires_and_is_named_as_a_fall():
    run = with_metrics(flat_training(), {"eval_accuracy": ("max", [0.82, 0.7, 0.61, 0.6, 0.58, 0.6, 0.59])})
    f = finding(subject_of(run))
    assert f is not None
    assert "eval_accuracy was highest at step 20 (0.82) and ends 28% lower (0.59)" in f.message
    assert "still below it" in f.message
    assert "the last at most 0.6" in f.evidence
    assert "noise sigmas below the best" in f.evidence
    assert f.values["fall"] == pytest.approx(1 - 0.59 / 0.82, abs=1e-4)
    assert f.values["best_eval"] == pytest.approx(0.82)
    assert f.values["end_eval"] == pytest.approx(0.59)


@pytest.mark.parametrize(
    "metrics",
    [
        {"eval_wer": ("min", [31.0, 28.0, 25.0, 22.0, 20.0, 19.0, 18.5])},  # improving
        {"eval_accuracy": ("max", [0.5, 0.6, 0.7, 0.75, 0.8, 0.81, 0.82])},  # improving
        {"eval_accuracy": ("max", [0.5, 0.6, 0.7, 0.75, 0.8, 0.78, 0.69])},  # a 14% fall: short of 1 - 1/1.2
        {"eval_wer": ("min", [17.7, 28.0, 30.0, 29.0, 19.0, 18.0, 18.2])},  # worse for a while, then back
    ],
)
def test_metrics_that_improve_or_come_back_never_fire(metrics):
    s = subject_of(with_metrics(flat_training(), metrics))
    assert "TP-EVAL-WORSE" in s.ran
    assert finding(s) is None


@pytest.mark.parametrize("seed", range(12))
def test_a_noisy_flat_accuracy_never_fires(seed):
    values = np.clip(noisy(np.full(30, 0.6), 0.08, 100 + seed), 0.01, 1.0)
    run = with_metrics(flat_training(seed), {"eval_accuracy": ("max", list(values))}, steps=list(range(5, 151, 5)))
    s = subject_of(run)
    assert "TP-EVAL-WORSE" in s.ran
    assert finding(s) is None


def test_a_higher_is_better_metric_that_collapses_to_zero_or_below_fires_and_a_leading_zero_is_no_best():
    collapsed = finding(subject_of(with_metrics(flat_training(), {"eval_accuracy": ("max", [0.5, 0.6, 0.7, 0.3, 0.0, 0.0, 0.0])})))
    assert collapsed is not None
    assert "eval_accuracy was highest at step 60 (0.7) and ends 100% lower (0)" in collapsed.message
    mcc = finding(subject_of(with_metrics(flat_training(), {"eval_mcc": ("max", [0.3, 0.5, 0.55, 0.1, -0.2, -0.25, -0.2])})))
    assert mcc is not None
    assert "eval_mcc was highest at step 60 (0.55) and ends 136% lower (-0.2)" in mcc.message
    leading = finding(subject_of(with_metrics(flat_training(), {"eval_accuracy": ("max", [0.0, 0.82, 0.81, 0.6, 0.58, 0.6, 0.59])})))
    assert leading is not None
    assert "highest at step 40 (0.82)" in leading.message
    nan = with_metrics(flat_training(), {"eval_accuracy": ("max", [0.7, 0.8, 0.82, 0.81, float("nan"), float("nan"), float("nan")])})
    assert finding(subject_of(nan)) is None  # NaN evaluations are left out: counted as a collapse (0), the rule would fire


def test_a_lower_is_better_metric_whose_best_is_zero_is_not_judged():
    s = subject_of(with_metrics(flat_training(), {"eval_wer": ("min", [0.5, 0.3, 0.0, 0.3, 0.5, 0.6, 0.6])}))
    assert "TP-EVAL-WORSE" in s.ran
    assert finding(s) is None


def test_a_metric_alone_is_enough_to_judge_and_too_short_a_one_is_not_applicable():
    only = with_metrics(make_run([2.0], steps=[1]), {"eval_wer": ("min", ISSUE_WER)})
    s = subject_of(only)
    assert s.verdict is Verdict.WARN
    assert finding(s) is not None
    short = with_metrics(make_run([2.0], steps=[1]), {"eval_wer": ("min", ISSUE_WER[:3])}, steps=EVAL_STEPS[:3])
    assert next(r.reason for r in subject_of(short).skipped if r.rule_id == "TP-EVAL-WORSE") == "fewer than 4 finite evaluations in every eval series"


def test_eval_loss_and_metrics_worse_together_make_one_finding_worst_first():
    run = make_run(noisy(np.full(140, 1.0), 0.05, 3), steps=list(range(1, 141)), evals={"eval_loss": (EVAL_STEPS, [0.5, 0.6, 0.7, 0.75, 0.76, 0.75, 0.76])})
    run = with_metrics(run, {"eval_wer": ("min", ISSUE_WER)})
    found = [f for f in subject_of(run).findings if f.rule_id == "TP-EVAL-WORSE"]
    assert len(found) == 1
    assert "eval_wer was lowest" in found[0].message  # +71% beats +52%
    assert "1 more eval series ended worse too" in found[0].message
    assert found[0].values["eval_series_worse"] == 2


# --- reading them: every reader, the user's --metric and the configuration ----------


def _trainer_state(path: Path, extra_key: str = "eval_bar") -> Path:
    rng = np.random.default_rng(0)
    history: list[dict] = []
    for step in range(1, 141):
        history.append({"step": step, "loss": float(1.0 + 0.05 * rng.standard_normal()), "learning_rate": 1e-4, "epoch": step / 140})
        if step % 20 == 0:
            k = step // 20 - 1
            history.append({"step": step, "eval_loss": 0.5, "eval_wer": ISSUE_WER[k], extra_key: float(k + 1), "eval_runtime": 1.5, "eval_samples_per_second": 9.0})
    path.write_text(json.dumps({"log_history": history, "max_steps": 140}))
    return path


@pytest.mark.parametrize("columnar", [False, True])
def test_a_trainer_state_gives_its_eval_metrics_and_notes_the_ones_of_unknown_direction(tmp_path, columnar):
    from trainproof.runs.readers import hf

    run = hf.read(_trainer_state(tmp_path / "trainer_state.json"), columnar=columnar)
    assert list(run.eval_losses) == ["eval_loss"]
    assert list(run.eval_metrics) == ["eval_wer"]
    assert run.metric_goals == {"eval_wer": "min"}
    assert run.eval_metrics["eval_wer"].values.tolist() == ISSUE_WER
    assert any("eval_bar" in note and "--metric" in note for note in run.notes)
    named = hf.read(tmp_path / "trainer_state.json", names=Names(goals={"eval_bar": "max"}), columnar=columnar)
    assert named.metric_goals == {"eval_bar": "max", "eval_wer": "min"}
    assert not any("eval_bar" in note for note in named.notes)


@pytest.mark.parametrize("columnar", [False, True])
@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_named_columns_give_their_eval_metrics(tmp_path, columnar, suffix):
    from trainproof.runs.readers import csv as csv_reader
    from trainproof.runs.readers import jsonl

    records = [{"step": s, "train_loss": 1.0} for s in range(1, 141)]
    records += [{"step": s, "val_loss": 0.5, "val_wer": w, "val/acc": 0.9 - w / 100} for s, w in zip(EVAL_STEPS, ISSUE_WER)]
    path = tmp_path / f"metrics{suffix}"
    if suffix == ".jsonl":
        path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
        run = jsonl.read(path, columnar=columnar)
    else:
        keys = ["step", "train_loss", "val_loss", "val_wer", "val/acc"]
        path.write_text("\n".join([",".join(keys)] + [",".join(str(r.get(k, "")) for k in keys) for r in records]) + "\n")
        run = csv_reader.read(path, columnar=columnar)
    assert run.metric_goals == {"val/acc": "max", "val_wer": "min"}
    assert run.eval_metrics["val_wer"].steps.tolist() == EVAL_STEPS


def test_tensorboard_tags_give_their_eval_metrics(tmp_path):
    tensorboardX = pytest.importorskip("tensorboardX")
    writer = tensorboardX.SummaryWriter(str(tmp_path))
    for step in range(1, 141):
        writer.add_scalar("train/loss", 1.0, step)
    for step, wer in zip(EVAL_STEPS, ISSUE_WER):
        writer.add_scalar("eval/loss", 0.5, step)
        writer.add_scalar("eval/wer", wer, step)
        writer.add_scalar("eval/bar", 1.0, step)
    writer.close()
    run = read_run(tmp_path)
    assert run.metric_goals == {"eval/wer": "min"}
    assert run.eval_metrics["eval/wer"].values.tolist() == pytest.approx(ISSUE_WER)
    assert any("eval/bar" in note for note in run.notes)


def test_the_command_line_judges_a_metric_the_user_names_and_refuses_a_bad_goal(tmp_path, capsys):
    path = _trainer_state(tmp_path / "trainer_state.json", extra_key="eval_mos")
    assert main(["epoch", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    subject = report["subjects"][0]
    assert subject["summary"]["eval_metrics"] == "eval_wer (lower is better)"
    assert "TP-EVAL-WORSE" in [f["id"] for f in subject["findings"]]
    assert main(["epoch", str(path), "--json", "--metric", "eval_mos=max"]) == 0
    summary = json.loads(capsys.readouterr().out)["subjects"][0]["summary"]
    assert summary["eval_metrics"] == "eval_mos (higher is better), eval_wer (lower is better)"
    assert main(["epoch", str(path), "--json", "--metric", "eval_mos=min"]) == 0  # 1 to 7: now it got worse, the most
    worse = next(f for f in json.loads(capsys.readouterr().out)["subjects"][0]["findings"] if f["id"] == "TP-EVAL-WORSE")
    assert (worse["values"]["eval_metric"], worse["values"]["goal"], worse["values"]["best_eval"]) == ("eval_mos", "min", 1.0)
    assert main(["epoch", str(path), "--metric", "eval_mos=up"]) == 2
    err = capsys.readouterr().err
    assert "'eval_mos=up' is not NAME=min or NAME=max" in err
    assert "Traceback" not in err


def test_the_configuration_alone_names_series_and_metrics_for_the_library(tmp_path):
    """judge_epoch with settings from a configuration file, no command line: its map and metrics tables reach the reader."""
    path = tmp_path / "log.jsonl"
    rows = [{"step": s, "total": 1.0} for s in range(1, 141)] + [{"step": s, "dev_mos": 5.0 - k * 0.5} for k, s in enumerate(EVAL_STEPS)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    settings = parse({"map": {"loss": "total"}, "metrics": {"dev_mos": "max"}}, "cfg.toml")
    subject = judge_epoch([str(path)], settings=settings).subjects[0]
    assert subject.summary["loss"] == "total"
    assert subject.summary["eval_metrics"] == "dev_mos (higher is better)"
    assert finding(subject).values["eval_metric"] == "dev_mos"
    for other in (judge_run(str(path), settings), judge_against(str(path), str(path), settings)):  # the other library calls
        assert other.unjudged is None
        assert other.summary["loss"] == "total"
        assert finding(other).values["eval_metric"] == "dev_mos"


def test_a_max_metric_with_an_infinite_value_leaves_that_point_out():
    """An infinite accuracy is no point (as NaN is), not the best one: its reciprocal 0 would have hidden the fall."""
    values = [0.5, float("inf"), 0.80, 0.82, 0.81, 0.79, 0.5, 0.51, 0.5, 0.49, 0.5]
    f = finding(subject_of(with_metrics(flat_training(), {"eval_accuracy": ("max", values)}, steps=list(range(10, 111, 10)))))
    assert f is not None
    assert "eval_accuracy was highest at step 40 (0.82) and ends 39% lower (0.5)" in f.message


def test_the_configuration_metrics_table():
    settings = parse({"metrics": {"eval_mos": "max"}, "map": {"loss": "total"}}, "cfg.toml")
    assert settings.names.goals == {"eval_mos": "max"}
    assert settings.names.overrides == {"loss": "total"}
    assert settings.with_map(["eval_loss=dev_loss"]).names.goals == {"eval_mos": "max"}  # --map keeps the goals
    with pytest.raises(ConfigError, match="'metrics'"):
        parse({"metrics": {"eval_mos": "higher"}}, "cfg.toml")
    with pytest.raises(ConfigError, match="'metrics'"):
        parse({"metrics": ["eval_mos"]}, "cfg.toml")


def test_each_judged_metric_gets_its_own_chart_with_the_finding_marked():
    from trainproof.render import render

    run = with_metrics(flat_training(), {"eval_wer": ("min", ISSUE_WER), "eval_accuracy": ("max", [0.5, 0.6, 0.7, 0.75, 0.8, 0.81, 0.82])})
    report = judge_epoch([run])
    charts = {chart.title: chart for chart in report.subjects[0].charts}
    wer = charts["Eval eval_wer (lower is better)"]
    assert wer.y_label == "eval_wer"
    assert wer.lines[0].values.tolist() == ISSUE_WER
    assert [(m.label, m.step) for m in wer.markers] == [("TP-EVAL-WORSE", 20), ("TP-EVAL-WORSE", 140)]
    assert charts["Eval eval_accuracy (higher is better)"].markers == ()  # the finding is about eval_wer
    assert all(m.label != "TP-EVAL-WORSE" for m in charts["Loss"].markers)  # nor on the training loss's chart
    html = render("html", report)
    assert "Eval eval_wer (lower is better)" in html


def test_overfitting_says_how_the_eval_metrics_moved_since_the_best_evaluation():
    """A speech fine-tune's eval loss often climbs while its WER keeps improving (the corpus's Whisper run does): the
    finding says so, since the checkpoint to keep depends on what the user selects by."""
    from tests.checks.cases import overfitting

    steps = list(range(15, 301, 15))  # the eval steps of the case; its eval loss is lowest at step 30
    wer = list(np.linspace(40.0, 30.0, len(steps)))
    accuracy = list(np.linspace(0.8, 0.6, len(steps)))
    f = finding(subject_of(with_metrics(overfitting(), {"eval_wer": ("min", wer), "eval_accuracy": ("max", accuracy)}, steps)), "TP-OVERFIT")
    assert f is not None
    # from the evaluation at the best eval loss's step to the median of the last three
    assert "Meanwhile eval_wer improved from 39.47 to 30.53: if you pick checkpoints by that metric, the later ones are the better ones." in f.message
    assert "Worse since then too: eval_accuracy got worse from 0.7895 to 0.6105." in f.message
    assert f.values["metrics_improved"] == 1
    still = list(0.8 + 1e-6 * np.arange(len(steps)))  # moved, but by less than its own noise (and the printed digits)
    quiet = finding(subject_of(with_metrics(overfitting(), {"eval_accuracy": ("max", still)}, steps)), "TP-OVERFIT")
    assert "Meanwhile" not in quiet.message
    assert "Worse since then" not in quiet.message
    noisy = list(0.7 * np.exp(np.random.default_rng(0).normal(0, 0.05, len(steps))))  # flat: moves by its own noise only
    flat = finding(subject_of(with_metrics(overfitting(), {"eval_accuracy": ("max", noisy)}, steps)), "TP-OVERFIT")
    assert "Meanwhile" not in flat.message
    assert "Worse since then" not in flat.message
    mcc = list(np.linspace(0.5, -0.2, len(steps)))  # falls past zero: no log scale to measure its noise on
    signed = finding(subject_of(with_metrics(overfitting(), {"eval_mcc": ("max", mcc)}, steps)), "TP-OVERFIT")
    assert "eval_mcc" not in signed.message
    plain = finding(subject_of(overfitting()), "TP-OVERFIT")
    assert "Meanwhile" not in plain.message
    assert "metrics_improved" not in plain.values


@pytest.mark.parametrize(
    ("name", "goal"),
    [
        ("eval_tokens_per_step", "unknown"),
        ("eval_1-wer", "unknown"),
        ("eval_wer_improvement", "unknown"),
        ("eval_error_reduction", "unknown"),
        ("eval_loss_delta", "unknown"),
        ("eval_per", "min"),  # phone error rate, the whole name
        ("eval_timit_per", "min"),  # a set's phone error rate
        ("eval_per_improvement", "unknown"),
    ],
)
def test_names_whose_words_turn_the_direction_around_get_no_guess(name, goal):
    assert Names().metric_goal(name) == goal


def test_a_goal_given_to_a_training_series_does_not_make_it_an_eval_metric(tmp_path, capsys):
    """--metric loss=max names the training loss's own key: the HF reader leaves it the loss, as the others do."""
    path = _trainer_state(tmp_path / "trainer_state.json")
    assert main(["epoch", str(path), "--json", "--metric", "loss=max", "--metric", "learning_rate=min"]) == 0
    summary = json.loads(capsys.readouterr().out)["subjects"][0]["summary"]
    assert summary["eval_metrics"] == "eval_wer (lower is better)"


@pytest.mark.parametrize("columnar", [False, True])
@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".csv"])
def test_every_reader_leaves_a_training_series_with_a_goal_its_series(tmp_path, columnar, suffix):
    """The same on every reader of columns, both ways: a goal on the loss's or the learning rate's key keeps them the
    run's loss and learning rate, and only the eval metric is one."""
    from trainproof.runs.readers import csv as csv_reader
    from trainproof.runs.readers import hf, jsonl

    names = Names(goals={"loss": "max", "learning_rate": "min"})
    records = [{"step": s, "loss": 1.0, "learning_rate": 1e-4} for s in range(1, 141)]
    records += [{"step": s, "eval_loss": 0.5, "eval_wer": w} for s, w in zip(EVAL_STEPS, ISSUE_WER)]
    path = tmp_path / f"log{suffix}"
    if suffix == ".json":
        path = _trainer_state(tmp_path / "trainer_state.json")
        run = hf.read(path, names=names, columnar=columnar)
    elif suffix == ".jsonl":
        path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
        run = jsonl.read(path, names=names, columnar=columnar)
    else:
        keys = ["step", "loss", "learning_rate", "eval_loss", "eval_wer"]
        path.write_text("\n".join([",".join(keys)] + [",".join(str(r.get(k, "")) for k in keys) for r in records]) + "\n")
        run = csv_reader.read(path, names=names, columnar=columnar)
    assert list(run.eval_metrics) == ["eval_wer"]
    assert run.loss_name == "loss"
    assert run.loss is not None
    assert run.learning_rate is not None


def test_a_training_metric_the_user_names_is_not_called_held_out():
    run = with_metrics(flat_training(), {"accuracy": ("max", [0.82, 0.7, 0.61, 0.6, 0.58, 0.6, 0.59])})
    f = finding(subject_of(run))
    assert f.message.startswith("A metric you named got worse: accuracy was highest")
    assert "held-out" not in f.message


def test_compare_overlays_each_eval_metric_on_the_baseline_s_with_the_run_s_findings_marked():
    from trainproof.commands import judge_compare
    from trainproof.render import render

    run = with_metrics(flat_training(), {"eval_wer": ("min", ISSUE_WER), "eval_mos": ("max", [3.0, 3.2, 3.4, 3.5, 3.6, 3.6, 3.7])})
    base = with_metrics(flat_training(seed=4), {"eval_wer": ("min", [30.0, 25.0, 21.0, 19.0, 18.0, 17.5, 17.0])})
    report = judge_compare([run], base)
    charts = {chart.title: chart for chart in next(s for s in report.subjects if s.role == "run").charts}
    wer = charts["Eval eval_wer (lower is better): run against baseline"]
    assert [(line.label, line.values.tolist()) for line in wer.lines] == [
        ("run: eval_wer", ISSUE_WER),
        ("baseline: eval_wer", [30.0, 25.0, 21.0, 19.0, 18.0, 17.5, 17.0]),
    ]
    assert wer.lines[1].css == "base baseline"
    assert ("TP-EVAL-WORSE", 140) in [(m.label, m.step) for m in wer.markers]
    mos = charts["Eval eval_mos (higher is better): run against baseline"]
    assert [line.label for line in mos.lines] == ["run: eval_mos"]  # the baseline has no such metric: nothing to overlay
    assert mos.markers == ()
    assert "Eval eval_wer (lower is better): run against baseline" in render("html", report)


def test_a_higher_is_better_value_too_small_to_invert_counts_as_the_floor_like_a_zero():
    """1 / 1e-310 overflows: counted as EVAL_METRIC_FLOOR of the highest, as a 0 is, the judged series keeps the point
    and the finding names the same figures as for a collapse to 0 (it said "highest at ... (1e-310) and ends inf% lower")."""
    shape = [0.5, 0.6, 0.82, 0.8, None, None, None]
    tiny, zero = ([v if v is not None else fill for v in shape] for fill in (1e-310, 0.0))
    found = [finding(subject_of(with_metrics(flat_training(), {"eval_accuracy": ("max", values)})), "TP-EVAL-WORSE") for values in (tiny, zero)]
    assert found[1] is not None
    assert found[0].message == found[1].message.replace("(0)", "(1e-310)")
    assert "inf" not in found[0].message
    assert "eval_accuracy was highest at step 60 (0.82)" in found[0].message
