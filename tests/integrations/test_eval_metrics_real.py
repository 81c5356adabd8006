"""Eval metrics in real transformers.Trainer logs: the gallery's tiny model, with next-token accuracy computed at
every evaluation (``compute_metrics``), read from the trainer_state.json it writes and judged by TP-EVAL-WORSE."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.helpers import load_tiny_task

pytest.importorskip("transformers")
pytest.importorskip("torch")

import torch  # noqa: E402
import transformers  # noqa: E402

from trainproof.judge import judge_epoch  # noqa: E402
from trainproof.readers import read_run  # noqa: E402


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The healthy run and the too-hot fine-tune, seed 0, each logging eval_accuracy every 25 steps: their
    trainer_state.json paths. (The gallery's fine-tune evaluates every 50 steps; of its six accuracies, the fall
    itself dominates the noise the rule estimates from them, and the accuracy alone is not judged worse.)"""
    torch.set_num_threads(2)
    transformers.logging.set_verbosity_error()
    tiny = load_tiny_task()
    out = {}
    for config in ("healthy", "finetune_hot"):
        folder = tmp_path_factory.mktemp(config)
        tiny.train(config, 0, str(folder), accuracy=True, eval_steps=25)
        out[config] = folder / "trainer_state.json"
    return out


def worse(run):
    subject = judge_epoch([run]).subjects[0]
    assert "TP-EVAL-WORSE" in subject.ran
    return next((f for f in subject.findings if f.rule_id == "TP-EVAL-WORSE"), None)


def test_the_trainer_log_gives_eval_accuracy_as_a_higher_is_better_metric(runs):
    run = read_run(runs["healthy"])
    assert run.metric_goals == {"eval_accuracy": "max"}
    assert len(run.eval_metrics["eval_accuracy"]) == len(run.eval_losses["eval_loss"]) == 12
    assert not any("direction" in note for note in run.notes)  # eval_runtime and the rest are not metrics


def test_the_hot_fine_tunes_accuracy_alone_is_judged_worse(runs):
    run = read_run(runs["finetune_hot"])
    f = worse(replace(run, eval_losses={}))  # the accuracy on its own, without the eval loss beside it
    assert f is not None
    assert f.values["eval_metric"] == "eval_accuracy"
    assert f.values["best_eval_step"] <= 75  # the accuracy the fine-tune started with, before the peak rate
    assert f.message.startswith("An eval metric got worse: eval_accuracy was highest at step ")
    assert worse(run) is not None  # with both: one finding


def test_the_healthy_runs_accuracy_never_fires(runs):
    run = read_run(runs["healthy"])
    assert worse(run) is None
    assert worse(replace(run, eval_losses={})) is None
