"""Every rule trainproof has, by stable id. Ids are never reused.

A retired rule moves to ``REMOVED`` with a note; a renamed one keeps its old
id in ``ALIASES``. Order here is the order rules run and findings are listed
(rules later in the list may defer to findings of earlier ones).
"""

from __future__ import annotations

from collections.abc import Mapping

from trainproof.checks import compare, evals, speed, spikes, trend, values
from trainproof.checks.base import Rule
from trainproof.report import Level

FAIL, WARN = Level.FAIL, Level.WARN

EPOCH_RULES: tuple[Rule, ...] = (
    Rule("TP-LOSS-NONFINITE", FAIL, values.loss_nonfinite, "epoch"),
    Rule("TP-GRAD-NONFINITE", FAIL, values.grad_nonfinite, "epoch"),
    Rule("TP-EVAL-NONFINITE", FAIL, values.eval_nonfinite, "epoch"),
    Rule("TP-LOSS-ZERO", FAIL, values.loss_zero, "epoch"),
    Rule("TP-LOSS-FLAT", FAIL, values.loss_flat, "epoch"),
    Rule("TP-LR-ZERO", FAIL, values.lr_zero, "epoch"),
    Rule("TP-LR-ZERO-PARTIAL", WARN, values.lr_zero_partial, "epoch"),
    Rule("TP-DIVERGE", FAIL, trend.diverge, "epoch"),
    Rule("TP-NO-LEARNING", FAIL, trend.no_learning, "epoch"),
    Rule("TP-PLATEAU", WARN, trend.plateau, "epoch"),
    Rule("TP-OVERFIT", WARN, evals.overfit, "epoch"),
    Rule("TP-GRAD-SPIKE", WARN, spikes.grad_spike, "epoch"),
    Rule("TP-LOSS-SPIKE", WARN, spikes.loss_spike, "epoch"),
    Rule("TP-STEP-TIME-CLIFF", WARN, speed.step_time_cliff, "epoch"),
    Rule("TP-LOADER-BOUND", WARN, speed.loader_bound, "epoch"),
)

COMPARE_RULES: tuple[Rule, ...] = (
    Rule("TP-CMP-FLOOR", FAIL, compare.floor, "compare"),
    Rule("TP-CMP-WORSE-THAN-START", FAIL, compare.worse_than_start, "compare"),
    Rule("TP-CMP-LR-ZERO", FAIL, compare.lr_zero, "compare"),
    Rule("TP-CMP-END", WARN, compare.end, "compare"),
    Rule("TP-CMP-IMPROVEMENT", WARN, compare.improved_less, "compare"),
    Rule("TP-CMP-GRAD-SCALE", WARN, compare.grad_scale, "compare"),
    Rule("TP-CMP-BASELINE-UNHEALTHY", WARN, compare.baseline_unhealthy, "compare"),
)

# Rules whose verdict holds before a run has finished, and so may judge (and
# stop) a run that is still growing. Left out: TP-NO-LEARNING and
# TP-LR-ZERO-PARTIAL (a run part-way through may simply not have got there
# yet) and TP-PLATEAU (a judgement about the whole schedule's time).
LIVE_RULE_IDS: frozenset[str] = frozenset(
    {
        "TP-LOSS-NONFINITE", "TP-GRAD-NONFINITE", "TP-EVAL-NONFINITE", "TP-LOSS-ZERO", "TP-LOSS-FLAT", "TP-LR-ZERO",
        "TP-DIVERGE", "TP-OVERFIT", "TP-GRAD-SPIKE", "TP-LOSS-SPIKE", "TP-STEP-TIME-CLIFF", "TP-LOADER-BOUND",
    }
)
LIVE_RULES: tuple[Rule, ...] = tuple(rule for rule in EPOCH_RULES if rule.id in LIVE_RULE_IDS)

ALL_RULES: tuple[Rule, ...] = EPOCH_RULES + COMPARE_RULES
BY_ID: Mapping[str, Rule] = {rule.id: rule for rule in ALL_RULES}

REMOVED: Mapping[str, str] = {}
"""Retired rule ids and why; they are never given to another rule."""

ALIASES: Mapping[str, str] = {}
"""Old id -> current id, for rules that were renamed."""
