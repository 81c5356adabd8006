"""Each threshold moved out of the rules' code is really read: set in a configuration file, it changes a rule's outcome."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.checks.cases import healthy, timed
from tests.helpers import decaying, make_run, noisy
from trainproof.commands import judge_against, judge_run
from trainproof.config import Settings, load
from trainproof.report import Subject
from trainproof.runs.model import Run


def configured(folder: Path, **thresholds: float) -> Settings:
    """Settings read from a pyproject.toml with these [tool.trainproof.thresholds]."""
    lines = "".join(f"{name} = {value!r}\n" for name, value in thresholds.items())
    (folder / "pyproject.toml").write_text(f"[tool.trainproof.thresholds]\n{lines}")
    settings = load(cwd=folder)
    assert settings.source == "pyproject.toml [tool.trainproof]"
    return settings


def fired(subject: Subject, rule_id: str) -> bool:
    return any(f.rule_id == rule_id for f in subject.findings)


def skipped(subject: Subject, rule_id: str) -> str | None:
    return next((s.reason for s in subject.skipped if s.rule_id == rule_id), None)


def test_min_timed_points_gates_the_speed_rules(tmp_path):
    loader_bound = make_run(decaying(), step_time=[0.4] * 60, loader_time=[0.9] * 60)
    cliff = timed(np.concatenate([np.full(70, 0.4), np.full(30, 1.1)]))
    assert fired(judge_run(loader_bound), "TP-LOADER-BOUND")
    assert fired(judge_run(cliff), "TP-STEP-TIME-CLIFF")
    settings = configured(tmp_path, MIN_TIMED_POINTS=150)
    assert skipped(judge_run(loader_bound, settings), "TP-LOADER-BOUND") == "fewer than 150 timed points"
    assert skipped(judge_run(cliff, settings), "TP-STEP-TIME-CLIFF") == "the log has no step time or timestamps"
    # Below the default, a short timed log is judged that the default would skip.
    short = make_run(decaying(8), step_time=[0.4] * 8, loader_time=[0.9] * 8)
    assert skipped(judge_run(short), "TP-LOADER-BOUND") == "fewer than 10 timed points"
    assert fired(judge_run(short, configured(tmp_path, MIN_TIMED_POINTS=5)), "TP-LOADER-BOUND")


def test_step_time_normal_quantile_sets_the_normal_speed(tmp_path):
    run = timed(np.concatenate([np.full(70, 0.4), np.full(30, 1.1)]))
    default = [f for f in judge_run(run).findings if f.rule_id == "TP-STEP-TIME-CLIFF"]
    assert default
    assert "normal speed (25th percentile of" in default[0].evidence
    median = [f for f in judge_run(run, configured(tmp_path, STEP_TIME_NORMAL_QUANTILE=0.5)).findings if f.rule_id == "TP-STEP-TIME-CLIFF"]
    assert median
    assert "normal speed (50th percentile of" in median[0].evidence
    # Judged against its slowest segments, the slow stretch is the norm: no cliff.
    assert not fired(judge_run(run, configured(tmp_path, STEP_TIME_NORMAL_QUANTILE=1.0)), "TP-STEP-TIME-CLIFF")


def test_min_lr_points_gates_the_learning_rate_rules(tmp_path):
    run = make_run(noisy(np.full(60, 1.5), 0.1), lr=[0.0] * 60)
    assert fired(judge_run(run), "TP-LR-ZERO")
    subject = judge_run(run, configured(tmp_path, MIN_LR_POINTS=61))
    assert not fired(subject, "TP-LR-ZERO")
    assert skipped(subject, "TP-LR-ZERO") == "only 60 finite learning-rate points (needs 61)"
    assert skipped(subject, "TP-LR-ZERO-PARTIAL") == "only 60 finite learning-rate points (needs 61)"
    two = make_run(decaying(2), lr=[0.0, 0.0])
    assert skipped(judge_run(two), "TP-LR-ZERO") == "only 2 finite learning-rate points (needs 3)"
    assert fired(judge_run(two, configured(tmp_path, MIN_LR_POINTS=2)), "TP-LR-ZERO")


def overfit_then_recover() -> Run:
    """Eval loss best at 1.25, then 1.6 for a long stretch, and 1.26 at the very last evaluation."""
    train = noisy(decaying(60, 1.4, 0.03, 8.0), 0.005, 9)
    steps = list(range(15, 301, 15))
    evals = np.array([1.37, 1.25] + [1.6] * 17 + [1.26])
    return make_run(train, steps=list(range(5, 301, 5)), evals={"eval_loss": (steps, evals)})


def test_overfit_end_evals_sets_how_the_end_eval_level_is_taken(tmp_path):
    run = overfit_then_recover()
    assert fired(judge_run(run), "TP-OVERFIT")  # median of the last three: 1.6, 28% above the best
    assert not fired(judge_run(run, configured(tmp_path, OVERFIT_END_EVALS=1)), "TP-OVERFIT")  # the last alone: 1.26


def coarse_loss_with_spike() -> Run:
    """A loss printed with two decimals: most first differences are 0, so the noise comes from the fallback quantile."""
    loss = np.full(60, 1.10)
    loss[[5, 12, 19, 26, 40, 47, 54]] = 1.20
    loss[33] = 3.0
    return make_run(loss)


def test_noise_fallback_quantile_sets_the_noise_of_a_log_that_repeats_values(tmp_path):
    run = coarse_loss_with_spike()
    assert fired(judge_run(run), "TP-LOSS-SPIKE")
    # The 0.99 quantile of the deviations is the spike itself: against that noise it is no spike.
    assert not fired(judge_run(run, configured(tmp_path, NOISE_FALLBACK_QUANTILE=0.99)), "TP-LOSS-SPIKE")


def judge_pair(run: Run, baseline: Run, settings: Settings | None = None) -> Subject:
    extra = {} if settings is None else {"settings": settings}
    return judge_against(run, baseline, **extra)


def test_cmp_baseline_lr_zero_share_is_its_own_threshold(tmp_path):
    run = make_run(decaying(), lr=[0.0] * 60)
    baseline = make_run(healthy().loss.values, lr=[1e-4] * 54 + [0.0] * 6)  # 0 on the last 10% of its steps
    assert not fired(judge_pair(run, baseline), "TP-CMP-LR-ZERO")
    assert fired(judge_pair(run, baseline, configured(tmp_path, CMP_BASELINE_LR_ZERO_SHARE=0.2)), "TP-CMP-LR-ZERO")
    # The single-run rule's tail share no longer decides the comparison.
    assert not fired(judge_pair(run, baseline, configured(tmp_path, LR_ZERO_TAIL_MIN_SHARE=0.2)), "TP-CMP-LR-ZERO")


@pytest.mark.parametrize(("name", "value"), [("CHART_SHARED_AXIS_MAX_RATIO", 20.0), ("NOISE_FALLBACK_QUANTILE", 0.5)])
def test_new_thresholds_are_configurable(tmp_path, name, value):
    assert getattr(configured(tmp_path, **{name: value}).thresholds, name) == value
