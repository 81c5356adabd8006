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
