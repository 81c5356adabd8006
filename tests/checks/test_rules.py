"""Every rule fires where it must and stays quiet where it must not (cases in cases.py)."""

from __future__ import annotations

import pytest

from tests.checks.cases import CASES, Case, check_case, report_of
from trainproof.checks.registry import all_rules
from trainproof.report import Subject

PARAMS = [pytest.param(rule_id, case, id=f"{rule_id}:{case.name}") for rule_id, cases in CASES.items() for case in cases]


def judge(case: Case) -> Subject:
    return report_of(case).subjects[0]


@pytest.mark.parametrize(("rule_id", "case"), PARAMS)
def test_rule_case(rule_id: str, case: Case) -> None:
    check_case(judge(case), rule_id, case.fires, case.level)


def both_ways() -> dict[str, list[bool]]:
    """Every command's rule cases, as rule id -> whether each case fires: training runs (cases.py), datasets
    (cases_data.py), tokenizers (cases_tokenizer.py) and fine-tuning text (tests/text/test_rules.py's table)."""
    from tests.checks import cases_data, cases_tokenizer
    from tests.text.test_rules import CASES as TEXT_CASES

    table: dict[str, list[bool]] = {}
    for cases in (CASES, cases_data.CASES, cases_tokenizer.CASES):
        for rule_id, listed in cases.items():
            table.setdefault(rule_id, []).extend(case.fires for case in listed)
    for case in TEXT_CASES:
        table.setdefault(case.rule, []).append(case.fires)
    return table


def test_every_rule_has_cases_both_ways() -> None:
    """No rule of any command is exempt: each has a case where it fires and one where it must not."""
    table = both_ways()
    for rule in all_rules():
        fires = table.get(rule.id, [])
        assert True in fires, f"{rule.id} has no case where it fires"
        assert False in fires, f"{rule.id} has no case where it must not fire"
    assert set(table) <= {r.id for r in all_rules()}, "a case names a rule that does not exist"


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


def test_spike_ratios_are_the_full_computation_wherever_a_spike_could_be():
    """The spike rules bound each point's level by its windows' smallest points and compute medians only where the
    bound leaves a spike possible: on noisy curves with spikes, dips, zeros, negative stretches and plateaus, every
    point at or above the ratio is found with the very ratio and level of the full computation, and no other."""
    import numpy as np

    from trainproof.checks.spikes import _local_level, _ratio, _spike_ratios

    rng = np.random.default_rng(17)
    for case in range(300):
        n = int(rng.choice([3, 9, 11, 12, 40, 200, 3000]))
        k = int(rng.choice([1, 2, 5, 6]))
        at_least = float(rng.choice([2.0, 10.0, 1.0001]))
        values = np.abs(rng.normal(1.0, rng.choice([0.01, 0.3, 2.0]), n))
        for _ in range(int(rng.integers(0, 6))):
            values[rng.integers(0, n)] *= rng.choice([2.0, 2.000000001, 1.9999999, 10.0, 50.0, 0.0, -1.0])
        if case % 7 == 0:
            values[: n // 2] = 0.0
        level = _local_level(values, k)
        ratio = _ratio(values, level)
        at, got_level, got_ratio = _spike_ratios(values, k, at_least)
        expected = np.flatnonzero(ratio >= at_least)
        assert np.isin(expected, at).all(), case
        np.testing.assert_array_equal(got_level, level[at])
        np.testing.assert_array_equal(got_ratio[at], ratio[at])
        np.testing.assert_array_equal(np.flatnonzero(got_ratio >= at_least), expected)


def test_spike_ratios_at_a_few_hundred_candidates_take_their_windows_as_rows(monkeypatch):
    import numpy as np

    from trainproof.checks import spikes, stats

    rng = np.random.default_rng(3)
    values = np.abs(rng.normal(1.0, 0.01, 5000))
    values[rng.choice(np.arange(6, 4994), 300, replace=False)] *= 12.0
    values[[0, 1, 4998, 4999]] *= 12.0  # at the ends, with fewer than k points on a side
    level = spikes._local_level(values, 5)
    ratio = spikes._ratio(values, level)
    at, got_level, got_ratio = spikes._spike_ratios(values, 5, 10.0)
    assert 300 < at.size < 5000 / 8  # the medians at the candidates only, not the full computation
    np.testing.assert_array_equal(got_level, level[at])
    np.testing.assert_array_equal(np.flatnonzero(got_ratio >= 10.0), np.flatnonzero(ratio >= 10.0))
    monkeypatch.setattr(stats, "_WINDOW_ROWS", 7)  # the windows copied seven rows at a time: the same levels
    np.testing.assert_array_equal(spikes._spike_ratios(values, 5, 10.0)[1], level[at])


def test_spike_ratios_take_the_neighbour_count_as_neighbour_medians_does():
    """A neighbour count below one, or given as a float, is taken as neighbour_medians takes it (at least 1, whole)."""
    import numpy as np

    from trainproof.checks import spikes

    values = np.abs(np.random.default_rng(5).normal(1.0, 0.01, 200))
    values[[50, 120]] *= 12.0
    for k in (0, 1, 2.0, 3.7):
        level = spikes._local_level(values, max(1, int(k)))
        at, got_level, _ = spikes._spike_ratios(values, k, 10.0)  # type: ignore[arg-type]
        np.testing.assert_array_equal(got_level, level[at])
