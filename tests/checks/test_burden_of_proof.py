"""A FAIL must be proven: every FAIL rule at its boundary.

For each FAIL rule: a clear failure FAILs, clear health passes, and the noisy undecidable middle (a short fine-tune
whose per-batch loss noise is a fifth of its level, as real SFT logs are) never FAILs, but says what it cannot decide.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tests.helpers import decaying, make_run, noisy
from trainproof.checks.registry import RULES
from trainproof.commands import judge
from trainproof.config import DEFAULT_SETTINGS
from trainproof.report import Level
from trainproof.runs.model import Run

SFT_SEEDS = range(12)


def sft(seed: int, n: int = 26, noise: float = 0.2) -> Run:
    """A 128-step fine-tune logged every 5 steps: a fast fall over the first points to a level it then hovers at,
    with multiplicative per-batch noise of ``noise`` (about 20% of the level in real SFT logs)."""
    rng = np.random.default_rng(seed)
    level = 0.55 + 0.45 * np.exp(-np.arange(n) / 1.5)
    loss = level * np.exp(rng.normal(0.0, noise, n))
    grad = 1.0 * np.exp(rng.normal(0.0, 0.3, n))
    return make_run(loss, steps=list(range(1, 5 * n, 5)), lr=[2e-5] * n, grad=grad)


def findings(run: Run | tuple[Run, Run], command: str = "epoch") -> dict[str, Level]:
    if command == "compare":
        run_, base = run  # type: ignore[misc]
        subject = judge("compare", [run_], DEFAULT_SETTINGS, baseline=base).subjects[0]
    else:
        subject = judge("epoch", [run], DEFAULT_SETTINGS).subjects[0]
    return {f.rule_id: f.level for f in subject.findings}


def fail_rules(command: str) -> set[str]:
    return {rule.id for rule in RULES[command] if rule.level is Level.FAIL}


@pytest.mark.parametrize("seed", SFT_SEEDS)
def test_a_noisy_fine_tune_never_fails(seed: int) -> None:
    """Nothing in the undecidable middle is a FAIL, whatever the seed of its noise."""
    found = findings(sft(seed))
    assert Level.FAIL not in found.values(), found


def test_the_noisy_fine_tune_says_what_it_cannot_decide() -> None:
    """Over the seeds, the noise sometimes hides the early fall from the no-learning test: then it is a WARN that
    names the noise and what would settle it, never silence dressed as proof and never a FAIL."""
    warned = [seed for seed in SFT_SEEDS if findings(sft(seed)).get("TP-NO-LEARNING") is Level.WARN]
    assert warned, "no seed reaches the undecidable middle: the test would not test it"
    subject = judge("epoch", [sft(warned[0])], DEFAULT_SETTINGS).subjects[0]
    finding = next(f for f in subject.findings if f.rule_id == "TP-NO-LEARNING")
    assert "noise is too large to tell" in finding.message
    assert "logged points" in finding.message
    assert finding.values["improvement_bound"] >= 0.05


# --- TP-NO-LEARNING --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("noise", "level"), [(0.002, Level.FAIL), (0.01, Level.FAIL), (0.1, Level.WARN), (0.3, Level.WARN)])
def test_no_learning_fails_only_when_the_noise_lets_it_prove_it(noise: float, level: Level) -> None:
    """A flat loss: with little noise, a 5% improvement would have shown, so its absence is proof; with much, not."""
    run = make_run(1.47 * np.exp(np.random.default_rng(3).normal(0.0, noise, 60)), lr=[1e-4] * 60)
    assert findings(run).get("TP-NO-LEARNING") is level


def test_no_learning_is_silent_on_a_clear_fall() -> None:
    assert "TP-NO-LEARNING" not in findings(make_run(noisy(decaying(), 0.02), lr=[1e-4] * 60))


# --- TP-DIVERGE ------------------------------------------------------------------------------------------------------


def test_diverge_fails_on_a_clear_blow_up_and_only_notes_one_inside_the_noise() -> None:
    clear = make_run(np.concatenate([noisy(np.full(30, 1.0), 0.01, 1), np.geomspace(1.2, 20, 30)]))
    assert findings(clear)["TP-DIVERGE"] is Level.FAIL
    rng = np.random.default_rng(5)  # an end 1.5x the start, but every point is noise of 60%
    murky = make_run(np.concatenate([np.full(3, 1.0), np.full(5, 1.55)]) * np.exp(rng.normal(0.0, 0.6, 8)))
    assert findings(murky).get("TP-DIVERGE") is Level.INFO
    assert "TP-DIVERGE" not in findings(make_run(noisy(decaying(), 0.02)))


def test_a_note_inside_the_noise_does_not_silence_the_rules_that_defer_to_it() -> None:
    """TP-DIVERGE's INFO explains nothing: the rules deferring to TP-DIVERGE still run, and an eval loss that climbed
    85% is still reported."""
    rng = np.random.default_rng(5)
    loss = np.concatenate([np.full(3, 1.0), np.full(5, 1.55)]) * np.exp(rng.normal(0.0, 0.6, 8))
    run = make_run(loss, evals={"eval_loss": ([10, 20, 30, 40, 50, 60, 70, 80], [0.52, 0.6, 0.75, 0.9, 0.95, 0.97, 0.96, 0.96])})
    subject = judge("epoch", [run], DEFAULT_SETTINGS).subjects[0]
    found = {f.rule_id: f.level for f in subject.findings}
    assert found["TP-DIVERGE"] is Level.INFO
    assert found.get("TP-EVAL-WORSE") is Level.WARN
    assert "TP-NO-LEARNING" in subject.ran

# --- TP-GRAD-NONFINITE -----------------------------------------------------------------------------------------------


def test_grad_nonfinite_fails_on_harm_and_warns_on_a_loss_scaler() -> None:
    falling = noisy(decaying(230), 0.02, 2)
    scaler = np.full(230, 0.5)
    scaler[[40, 120]] = np.inf
    assert findings(make_run(falling, grad=scaler))["TP-GRAD-NONFINITE"] is Level.WARN
    broken = scaler.copy()
    broken[-1] = np.nan
    assert findings(make_run(falling, grad=broken))["TP-GRAD-NONFINITE"] is Level.FAIL
    nan_loss = falling.copy()
    nan_loss[100:] = np.nan
    assert findings(make_run(nan_loss, grad=scaler))["TP-GRAD-NONFINITE"] is Level.FAIL
    assert "TP-GRAD-NONFINITE" not in findings(make_run(falling, grad=np.full(230, 0.5)))


# --- rules whose evidence is exact -----------------------------------------------------------------------------------


def test_rules_on_exact_values_fire_on_them_and_never_on_noise() -> None:
    """TP-LOSS-FLAT (one value repeated), TP-LOSS-ZERO (exact zeros), TP-LR-ZERO (an exact 0), TP-LOSS-NONFINITE and
    TP-EVAL-NONFINITE (NaN): their evidence is the value itself, not a level inside noise."""
    n = 60
    flat = make_run([2.302585] * n, lr=[1e-4] * n)
    assert findings(flat)["TP-LOSS-FLAT"] is Level.FAIL
    rounded = make_run(np.round(noisy(np.full(n, 1.0), 0.02, 4), 2), lr=[1e-4] * n)  # few decimals: repeats, not flat
    assert "TP-LOSS-FLAT" not in findings(rounded)
    assert findings(make_run(noisy(np.full(n, 1.5), 0.02), lr=[0.0] * n))["TP-LR-ZERO"] is Level.FAIL
    # ... but a loss that fell 75% beyond its noise shows the weights moved: the logged 0 is a rounded rate (2e-5
    # written as 0.0000) or another param group's, and cannot prove they did not
    assert findings(make_run(noisy(decaying(), 0.02), lr=[0.0] * n))["TP-LR-ZERO"] is Level.WARN
    assert findings(make_run([*decaying(30), np.nan, *decaying(29)]))["TP-LOSS-NONFINITE"] is Level.FAIL
    assert findings(make_run([1.0, 0.5, *[0.0] * 58]))["TP-LOSS-ZERO"] is Level.FAIL
    with_nan_eval = make_run(noisy(decaying(), 0.02), evals={"eval_loss": ([100, 200, 300], [1.9, 1.7, np.nan])})
    assert findings(with_nan_eval)["TP-EVAL-NONFINITE"] is Level.FAIL
    zero_lr_run = make_run(noisy(decaying(), 0.02, 5), lr=[0.0] * n)
    working = make_run(noisy(decaying(), 0.02, 6), lr=[1e-4] * n)
    assert findings((make_run(noisy(np.full(n, 1.5), 0.02), lr=[0.0] * n), working), "compare")["TP-CMP-LR-ZERO"] is Level.FAIL
    assert findings((zero_lr_run, working), "compare")["TP-CMP-LR-ZERO"] is Level.WARN  # its loss fell: the weights moved
    for seed in SFT_SEEDS:
        found = findings(sft(seed))
        assert not {"TP-LOSS-FLAT", "TP-LOSS-ZERO", "TP-LR-ZERO", "TP-LOSS-NONFINITE"} & set(found)


# --- compare ---------------------------------------------------------------------------------------------------------


def test_compare_floor_fails_when_proven_and_warns_inside_the_noise() -> None:
    base = make_run(noisy(decaying(60, 2.0, 0.2), 0.005, 1))
    clear = make_run(noisy(decaying(60, 2.0, 1.0), 0.005, 2))
    assert findings((clear, base), "compare")["TP-CMP-FLOOR"] is Level.FAIL
    rng = np.random.default_rng(8)  # a floor 1.6x the baseline's, on 12 points with 40% noise each
    murky_base = make_run(np.concatenate([np.full(4, 1.0), np.full(8, 0.5)]) * np.exp(rng.normal(0.0, 0.4, 12)))
    murky = make_run(np.concatenate([np.full(4, 1.0), np.full(8, 0.8)]) * np.exp(rng.normal(0.0, 0.4, 12)))
    assert findings((murky, murky_base), "compare").get("TP-CMP-FLOOR") is Level.WARN
    assert "TP-CMP-FLOOR" not in findings((make_run(noisy(decaying(60, 2.0, 0.2), 0.005, 3)), base), "compare")


def test_compare_holds_a_shorter_run_to_where_the_baseline_was_at_its_last_step() -> None:
    """A run of 100 logged steps against a baseline that ran ten times longer: by its last step it is far below where
    the baseline was then, so the floor the baseline reached 900 steps later proves nothing against it."""
    rng = np.random.default_rng(5)
    base = make_run(np.linspace(3.0, 0.5, 1000) * np.exp(rng.normal(0.0, 0.03, 1000)))
    short = make_run(np.linspace(3.0, 1.0, 100) * np.exp(rng.normal(0.0, 0.03, 100)))
    found = findings((short, base), "compare")
    assert Level.FAIL not in found.values(), found
    assert "TP-CMP-END" not in found
    # cut at the run's last step, a baseline that had learned by then still proves a run that had not
    fast = make_run(decaying(1000, 3.0, 0.5, 60.0) * np.exp(rng.normal(0.0, 0.03, 1000)))
    flat = make_run(3.0 * np.exp(rng.normal(0.0, 0.03, 100)))
    subject = judge("compare", [flat], DEFAULT_SETTINGS, baseline=fast).subjects[0]
    floor = next(f for f in subject.findings if f.rule_id == "TP-CMP-FLOOR")
    assert floor.level is Level.FAIL
    assert "the baseline up to step 1,000, where the run ends; it went on to 10,000" in floor.evidence
    # a baseline with no point at the run's steps cannot be compared with it: said, never a FAIL
    late = make_run(np.linspace(3.0, 0.5, 100), steps=list(range(10_000, 11_000, 10)))
    subject = judge("compare", [flat], DEFAULT_SETTINGS, baseline=late).subjects[0]
    assert not [f for f in subject.findings if f.rule_id.startswith("TP-CMP-") and f.level is Level.FAIL]
    assert "the two cannot be compared over the same steps" in {s.rule_id: s.reason for s in subject.skipped}["TP-CMP-FLOOR"]


def test_compare_does_not_cut_a_baseline_that_counts_in_another_unit() -> None:
    """A run counting epochs ends at "epoch 100"; a baseline counting steps is at step 100 in its first epoch: held
    to the baseline there, the run would be judged against a baseline that had barely started. The cut is for runs
    that count alike; a baseline counting another unit is judged whole."""
    rng = np.random.default_rng(5)
    fast = make_run(decaying(1000, 3.0, 0.5, 60.0) * np.exp(rng.normal(0.0, 0.03, 1000)))
    flat = replace(make_run(3.0 * np.exp(rng.normal(0.0, 0.03, 100)), steps=list(range(1, 101))), step_unit="epoch")
    subject = judge("compare", [flat], DEFAULT_SETTINGS, baseline=fast).subjects[0]
    judged = {f.rule_id: f for f in subject.findings}
    assert judged["TP-CMP-FLOOR"].level is Level.FAIL
    for rule_id in ("TP-CMP-FLOOR", "TP-CMP-END"):
        assert rule_id in judged, subject.skipped
        assert "the baseline up to" not in judged[rule_id].evidence
    assert not {"TP-CMP-FLOOR", "TP-CMP-END"} & {s.rule_id for s in subject.skipped}


def test_compare_worse_than_start_needs_a_baseline_that_proved_the_loss_can_fall() -> None:
    rising = make_run(np.concatenate([noisy(np.full(20, 1.4), 0.01, 1), np.linspace(1.5, 7.5, 40)]))
    fell = make_run(noisy(decaying(60, 1.5, 1.0), 0.01, 2))
    assert findings((rising, fell), "compare")["TP-CMP-WORSE-THAN-START"] is Level.FAIL
    # a baseline that ends 10% lower under 30% noise a point: its fall is not shown, so the accusation is not either
    hovered = make_run(1.5 * np.exp(np.random.default_rng(1).normal(0.0, 0.3, 60)) * np.linspace(1.0, 0.9, 60))
    assert findings((rising, hovered), "compare").get("TP-CMP-WORSE-THAN-START") is Level.WARN
    assert "TP-CMP-WORSE-THAN-START" not in findings((make_run(noisy(decaying(60, 1.5, 1.0), 0.01, 3)), fell), "compare")


def test_every_fail_rule_of_the_run_commands_is_tested_here() -> None:
    """A FAIL rule added later joins this file: its boundary is part of what it is."""
    tested = {
        "TP-NO-LEARNING", "TP-DIVERGE", "TP-GRAD-NONFINITE", "TP-LOSS-FLAT", "TP-LOSS-ZERO", "TP-LR-ZERO",
        "TP-LOSS-NONFINITE", "TP-EVAL-NONFINITE", "TP-CMP-FLOOR", "TP-CMP-WORSE-THAN-START", "TP-CMP-LR-ZERO",
    }  # fmt: skip
    assert fail_rules("epoch") | fail_rules("compare") <= tested


@pytest.mark.parametrize("share", [0.3, 0.5, 0.6, 0.9, 1.0])
def test_the_flat_loss_rule_finds_what_counting_every_value_finds(share):
    """TP-LOSS-FLAT counts only the middle value when more than half the points must repeat; on losses with one value
    repeated on 0-100% of the points (among ties, zeros and noise), it fires exactly as counting every distinct value."""
    from trainproof.checks.base import NotApplicable, RunContext
    from trainproof.checks.thresholds import Thresholds
    from trainproof.checks.values import loss_flat

    t = Thresholds(FLAT_SAME_SHARE=share)
    rng = np.random.default_rng(int(share * 10))
    for case in range(300):
        n = int(rng.integers(20, 200))
        values = rng.choice((rng.normal(2, 0.1, n), rng.integers(0, 3, n) * 0.5)[case % 2], n)
        repeated = rng.random(n) < rng.random()
        values[repeated] = rng.choice((0.0, 1.25))
        try:
            hits = list(loss_flat(RunContext(make_run(values), t)))
        except NotApplicable:
            continue
        uniques, counts = np.unique(values, return_counts=True)
        value, count = float(uniques[np.argmax(counts)]), int(counts.max())
        expected = value != 0 and count >= share * n
        assert len(hits) == int(expected), (share, case)
        if hits:
            assert hits[0].values == {"value": value, "repeated": count, "points": n}
    # the value spread as evenly as it can be, around the share: the fewest equal neighbours, where the rule's first
    # count (equal neighbours, at least 2m - n - 1 for a value on m points) is tightest
    for n in (40, 41, 97, 200):
        for repeated in range(max(1, int(share * n) - 2), n + 1):
            values = rng.normal(2.0, 0.1, n)
            values[np.linspace(0, n - 1, repeated).round().astype(int)] = 2.302585
            hits = list(loss_flat(RunContext(make_run(values), t)))
            assert len(hits) == int(repeated >= share * n), (share, n, repeated)
