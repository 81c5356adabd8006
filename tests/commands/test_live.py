"""LiveJudge: when a growing run is judged, by which rules, and what it remembers."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from tests.helpers import decaying, make_run, noisy
from trainproof.checks.registry import EPOCH_RULES, LIVE_RULE_IDS, LIVE_RULES
from trainproof.checks.thresholds import DEFAULTS
from trainproof.commands import judge_run
from trainproof.commands.live import LiveJudge
from trainproof.config import DEFAULT_SETTINGS
from trainproof.report import Level

SMALL = make_run(list(decaying(10)))
FLAT = make_run(list(noisy(np.full(60, 1.47), 0.01)), lr=[1e-4] * 60)
DIVERGING = make_run(list(np.concatenate([decaying(30), np.geomspace(0.6, 40, 30)])))
GRAD_SPIKE = make_run(list(noisy(decaying(60), 0.01)), grad=[0.5] * 30 + [60.0] + [0.5] * 29)
LR_ZERO_TAIL = make_run(list(noisy(decaying(60), 0.01)), lr=[1e-4] * 50 + [0.0] * 10)
NAN_LOSS = make_run([*decaying(20)[:10], math.nan, *decaying(20)[10:]])


RULE = {rule.id: rule for rule in EPOCH_RULES}


def settings_with(**thresholds):
    return replace(DEFAULT_SETTINGS, thresholds=DEFAULTS.with_overrides(thresholds))


def schedule(judge: LiveJudge, up_to: int) -> list[int]:
    """The point counts at which a run growing one loss point at a time is judged."""
    judged = []
    for points in range(1, up_to + 1):
        if judge.due(points):
            judge.judge(SMALL, points)
            judged.append(points)
    return judged


def test_a_new_judge_has_judged_nothing():
    judge = LiveJudge()
    assert (judge.next_at, judge.nonfinite_seen, judge.last, judge.judgements) == (DEFAULTS.GUARD_MIN_POINTS, 0, None, 0) == (5, 0, None, 0)
    assert judge.failures() == ()
    assert [judge.due(p) for p in range(7)] == [False, False, False, False, False, True, True]


def test_judged_first_at_min_points_then_each_time_the_history_grows_by_a_tenth():
    judge = LiveJudge()
    judged = schedule(judge, 60)
    # up to 10 points a tenth rounds up to one point; then 11 + ceil(1.1) = 13, 21 + ceil(2.1) = 24, ...
    assert judged == [5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 21, 24, 27, 30, 33, 37, 41, 46, 51, 57]
    assert judge.judgements == len(judged) == 21
    assert judge.next_at == 57 + 6


def test_the_number_of_judgements_grows_with_the_log_of_the_history():
    judged = schedule(LiveJudge(), 100_000)
    # Geometric growth by a tenth: about a hundred judgements for 100,000 points, not 100,000.
    assert len(judged) == 98
    assert sum(p <= 10_000 for p in judged) == 74
    assert all(b - a >= max(1, math.ceil(0.1 * a)) for a, b in zip(judged, judged[1:]))


def test_the_schedule_follows_the_configured_thresholds():
    judge = LiveJudge(settings_with(GUARD_MIN_POINTS=20, GUARD_JUDGE_GROWTH=1.0))
    assert schedule(judge, 400) == [20, 40, 80, 160, 320]


def test_a_new_non_finite_value_is_judged_at_once_but_only_once():
    judge = LiveJudge()
    assert judge.due(2, nonfinite=1)
    judge.judge(NAN_LOSS, 2, nonfinite=1)
    assert (judge.nonfinite_seen, judge.next_at) == (1, 5)  # the minimum still stands for the growth schedule
    assert not judge.due(3, nonfinite=1)
    assert not judge.due(4, nonfinite=1)
    assert judge.due(4, nonfinite=2)
    assert judge.due(5, nonfinite=1)


def test_only_the_live_rules_run():
    subject = LiveJudge().judge(FLAT, 60)
    assert set(subject.ran) | {s.rule_id for s in subject.skipped} == LIVE_RULE_IDS
    assert [rule.id for rule in LIVE_RULES] == [rule.id for rule in EPOCH_RULES if rule.id in LIVE_RULE_IDS]
    assert {"TP-NO-LEARNING", "TP-PLATEAU", "TP-LR-ZERO-PARTIAL"}.isdisjoint(LIVE_RULE_IDS)


@pytest.mark.parametrize(
    ("run", "at_the_end", "mid_way"),
    [
        (FLAT, [("TP-NO-LEARNING", Level.FAIL)], []),  # a run part-way through may not have learned yet
        (LR_ZERO_TAIL, [("TP-LR-ZERO-PARTIAL", Level.WARN)], []),
        (DIVERGING, [("TP-DIVERGE", Level.FAIL)], [("TP-DIVERGE", Level.FAIL)]),
        (GRAD_SPIKE, [("TP-GRAD-SPIKE", Level.WARN)], [("TP-GRAD-SPIKE", Level.WARN)]),
        (NAN_LOSS, [("TP-LOSS-NONFINITE", Level.FAIL)], [("TP-LOSS-NONFINITE", Level.FAIL)]),
    ],
    ids=["flat", "lr zero tail", "diverging", "grad spike", "nan loss"],
)
def test_live_findings_are_the_end_of_run_findings_of_the_live_rules(run, at_the_end, mid_way):
    assert [(f.rule_id, f.level) for f in judge_run(run).findings] == at_the_end
    judge = LiveJudge()
    subject = judge.judge(run, len(run.loss))
    assert [(f.rule_id, f.level) for f in subject.findings] == mid_way
    assert judge.last is subject
    assert judge.judgements == 1


def test_failures_are_the_fail_findings_of_the_last_judgement():
    judge = LiveJudge()
    judge.judge(DIVERGING, 60)
    assert [f.rule_id for f in judge.failures()] == ["TP-DIVERGE"]
    judge.judge(GRAD_SPIKE, 66)  # a WARN is not a failure
    assert [f.rule_id for f in judge.last.findings] == ["TP-GRAD-SPIKE"]
    assert judge.failures() == ()
    assert judge.judgements == 2


def test_configured_levels_and_selection_apply_mid_way():
    settings = replace(DEFAULT_SETTINGS, levels={"TP-GRAD-SPIKE": Level.FAIL}, ignore=frozenset({"TP-DIVERGE"}))
    judge = LiveJudge(settings)
    judge.judge(GRAD_SPIKE, 60)
    assert [(f.rule_id, f.level) for f in judge.failures()] == [("TP-GRAD-SPIKE", Level.FAIL)]
    judge.judge(DIVERGING, 66)
    assert judge.failures() == ()
    assert "TP-DIVERGE" not in judge.last.ran


def test_rules_can_be_narrowed():
    judge = LiveJudge(rules=[RULE["TP-LOSS-NONFINITE"]])
    subject = judge.judge(DIVERGING, 60)
    assert subject.ran == ("TP-LOSS-NONFINITE",)
    assert subject.findings == ()
