"""TP-EVAL-WORSE: eval loss that ends well above its best, judged on the eval series alone."""

from __future__ import annotations

import pytest

from tests.checks.cases import eval_noisy_flat, finetune_too_hot, overfitting
from tests.helpers import make_run
from trainproof.commands import judge_epoch
from trainproof.config import Settings
from trainproof.report import Level, Verdict


def subject_of(run, settings: Settings | None = None):
    return judge_epoch([run], settings=settings or Settings()).subjects[0]


EVAL_STEPS = [500, 1000, 1500, 2000, 2500, 3000]


def eval_only(values, steps=EVAL_STEPS):
    """An eval series beside a one-point training loss, so no rule about the training curve (TP-OVERFIT) takes part."""
    return make_run([2.0], steps=[10], evals={"eval_loss": (steps, values)})


def finding(subject, rule_id="TP-EVAL-WORSE"):
    return next((f for f in subject.findings if f.rule_id == rule_id), None)


def skipped(subject, rule_id="TP-EVAL-WORSE"):
    return next((s.reason for s in subject.skipped if s.rule_id == rule_id), None)


def test_the_message_names_the_best_evaluation_the_end_level_and_the_checkpoint_to_keep():
    s = subject_of(finetune_too_hot())
    f = finding(s)
    assert f is not None
    assert f.level is Level.WARN
    assert finding(s, "TP-OVERFIT") is None
    assert "lowest at step 500 (0.52)" in f.message
    assert "ends 85% higher (0.96)" in f.message
    assert "out/checkpoint-500" in f.message
    assert f.values["best_eval_step"] == 500
    assert f.values["best_eval"] == pytest.approx(0.52)
    assert f.values["end_eval"] == pytest.approx(0.96)
    assert f.values["evals_after_best"] == 5
    assert f.values["nearest_checkpoint"] == "out/checkpoint-500"
    assert f.steps == (500, 3000)


def test_no_checkpoint_sentence_when_the_log_names_none():
    run = finetune_too_hot()
    bare = make_run(
        run.loss.values,
        steps=run.loss.steps.tolist(),
        evals={"eval_loss": (run.eval_losses["eval_loss"].steps, run.eval_losses["eval_loss"].values)},
    )
    f = finding(subject_of(bare))
    assert f is not None
    assert "checkpoint" not in f.message
    assert "nearest_checkpoint" not in f.values


def test_a_one_point_training_loss_is_still_judged_on_its_eval_series():
    s = subject_of(finetune_too_hot(train_points=1))
    assert s.unjudged
    assert "training-loss point" in s.unjudged  # the curve rules cannot run...
    assert "TP-EVAL-WORSE" in s.ran  # ...this one does, and its WARN is the verdict
    assert finding(s) is not None
    assert s.verdict is Verdict.WARN


def test_with_no_training_loss_at_all_it_still_judges_the_eval_series():
    run = finetune_too_hot()
    evals = {"eval_loss": (run.eval_losses["eval_loss"].steps, run.eval_losses["eval_loss"].values)}
    s = subject_of(make_run(None, lr=[1e-4] * 6, steps=list(range(500, 3001, 500)), evals=evals))
    assert finding(s) is not None


def test_it_defers_to_overfit_when_the_training_loss_fell_and_speaks_when_overfit_is_ignored():
    s = subject_of(overfitting())
    assert finding(s, "TP-OVERFIT") is not None
    assert finding(s) is None
    assert skipped(s) == "TP-OVERFIT already explains this curve"
    alone = subject_of(overfitting(), Settings(ignore=frozenset({"TP-OVERFIT"})))
    assert finding(alone) is not None, "the eval climb is real; overfitting only explains it better"


def test_overfit_stays_silent_on_the_hot_fine_tune():
    """The training loss rose and only partly recovered: not overfitting, so TP-EVAL-WORSE is the one that speaks."""
    s = subject_of(finetune_too_hot())
    assert "TP-OVERFIT" in s.ran
    assert finding(s, "TP-OVERFIT") is None


@pytest.mark.parametrize("seed", range(40))
def test_a_noisy_flat_eval_series_is_judged_and_never_fires(seed):
    s = subject_of(eval_noisy_flat(seed))
    assert "TP-EVAL-WORSE" in s.ran
    assert finding(s) is None


def test_an_eval_loss_that_rises_and_comes_back_down_does_not_fire():
    s = subject_of(eval_only([0.52, 0.78, 0.93, 0.70, 0.55, 0.53]))
    assert "TP-EVAL-WORSE" in s.ran
    assert finding(s) is None


def test_one_bad_last_evaluation_is_not_staying_there():
    s = subject_of(eval_only([0.52, 0.55, 0.54, 0.56, 0.55, 0.95]))
    assert "TP-EVAL-WORSE" in s.ran
    assert finding(s) is None


def test_too_few_evaluations_after_the_best_is_not_judged_worse_and_too_short_a_series_is_not_applicable():
    s = subject_of(eval_only([0.9, 0.8, 0.7, 0.52, 0.95, 0.96]))  # only two evaluations after the best
    assert "TP-EVAL-WORSE" in s.ran
    assert finding(s) is None
    assert finding(subject_of(eval_only([0.9, 0.8, 0.52, 0.95, 0.96, 0.96]))) is not None  # three after it
    short = subject_of(eval_only([0.52, 0.9, 0.95], EVAL_STEPS[:3]))
    assert skipped(short) == "fewer than 4 finite evaluations in every eval series"


def test_a_rise_below_eval_worse_rise_does_not_fire_and_lowering_it_does():
    """A dip to its best at the third evaluation, then a rise to about 17% above it: too small a rise to be judged
    on its size, and too late a best for the steady climb from the start (tests/checks/test_eval_rising.py)."""
    from trainproof.config import parse

    built = eval_only([0.53, 0.525, 0.52, 0.56, 0.59, 0.60, 0.605, 0.61], [500 * k for k in range(1, 9)])
    assert finding(subject_of(built)) is None
    lowered = parse({"thresholds": {"EVAL_WORSE_RISE": 0.1}}, "test")
    assert finding(subject_of(built, lowered)) is not None


@pytest.mark.parametrize(("dip", "fires"), [(0.8, False), (0.6, True)])
def test_the_best_of_many_evaluations_is_weighed_with_its_selection_bias(dip, fires):
    """30 evaluations zigzag between 1.0 and 1.03 (a noise sigma of 0.062 in log), one dips to ``dip``. Every later
    evaluation is 20% or more above a dip to 0.8, and 0.223 in log above it: past EVAL_WORSE_SIGMAS (2.5) sigmas
    (0.155), not past them plus sqrt(2 ln 30) (0.317), which is how low the best of 30 noisy values lands by chance.
    A dip to 0.6 (0.511) is past both."""
    values = [1.0 if i % 2 == 0 else 1.03 for i in range(30)]
    values[2] = dip
    f = finding(subject_of(eval_only(values, list(range(100, 3001, 100)))))
    assert (f is not None) is fires
