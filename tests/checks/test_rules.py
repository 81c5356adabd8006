"""Every rule fires where it must and stays quiet where it must not (cases in cases.py)."""

from __future__ import annotations

import pytest

from tests.checks.cases import CASES, Case, report_of
from trainproof.checks.registry import all_rules
from trainproof.report import Subject

PARAMS = [pytest.param(rule_id, case, id=f"{rule_id}:{case.name}") for rule_id, cases in CASES.items() for case in cases]


def judge(case: Case) -> Subject:
    return report_of(case).subjects[0]


@pytest.mark.parametrize(("rule_id", "case"), PARAMS)
def test_rule_case(rule_id: str, case: Case) -> None:
    subject = judge(case)
    hits = [f for f in subject.findings if f.rule_id == rule_id]
    if case.fires:
        assert hits, f"{rule_id} did not fire; findings: {[f.rule_id for f in subject.findings]}; skipped: {subject.skipped}"
        assert rule_id in subject.ran
        if case.level is not None:
            assert {f.level.name for f in hits} == {case.level}
        for finding in hits:
            assert finding.message
            assert finding.evidence
            assert any(ch.isdigit() for ch in finding.evidence), "evidence must cite numbers"
    else:
        assert not hits, f"{rule_id} fired: {hits[0].message}"


def test_every_rule_has_cases_both_ways() -> None:
    for rule in all_rules():
        if rule.command in ("data", "tokenizer", "text"):
            continue  # judged on real inputs: tests/datasets, tests/tokenizers and tests/text hold their cases both ways
        cases = CASES.get(rule.id, [])
        assert any(c.fires for c in cases), f"{rule.id} has no case where it fires"
        assert any(not c.fires for c in cases), f"{rule.id} has no case where it must not fire"
    assert set(CASES) <= {r.id for r in all_rules()}, "a case names a rule that does not exist"


def test_zero_tail_counts_the_zeros_at_the_end_across_its_chunks():
    """zero_tail reads backwards in growing chunks: tails of every length around the chunk edges, NaN (not zero)
    right before a tail, and all zeros, against a plain count."""
    import numpy as np

    from trainproof.checks.base import zero_tail

    def plain(values: np.ndarray) -> int:
        count = 0
        for value in values[::-1]:
            if value != 0:
                break
            count += 1
        return count

    for size in (0, 1, 5, 1023, 1024, 1025, 6000, 30000):
        for tail in sorted({0, 1, 1023, 1024, 1025, 5119, 5120, 5121, size - 1, size}):
            if not 0 <= tail <= size:
                continue
            values = np.ones(size)
            values[size - tail :] = 0.0
            if size - tail - 1 >= 0 and tail % 2:
                values[size - tail - 1] = np.nan
            assert zero_tail(values) == plain(values) == tail, (size, tail)


def test_loss_flat_fires_exactly_when_a_value_reaches_its_share_however_the_points_lie():
    """TP-LOSS-FLAT clears most curves by counting equal neighbours first: on curves whose repeated value sits right
    at FLAT_SAME_SHARE, spread as evenly as it can be (the fewest equal neighbours) or at random, it fires exactly
    when a plain count says so."""
    import numpy as np

    from tests.checks.cases import make_run
    from trainproof.checks.base import RunContext
    from trainproof.checks.values import loss_flat
    from trainproof.thresholds import Thresholds

    t = Thresholds()
    rng = np.random.default_rng(11)
    for n in (40, 41, 97, 200):
        for repeated in range(int(t.FLAT_SAME_SHARE * n) - 2, n + 1):
            for spread in ("even", "random"):
                values = rng.normal(2.0, 0.1, n)
                at = np.linspace(0, n - 1, repeated).round().astype(int) if spread == "even" else rng.choice(n, repeated, replace=False)
                values[at] = 2.302585
                expected = np.count_nonzero(values == 2.302585) >= t.FLAT_SAME_SHARE * n
                fired = bool(list(loss_flat(RunContext(make_run(values), t))))
                assert fired == expected, (n, repeated, spread)
