"""Every rule fires where it must and stays quiet where it must not (cases in cases.py)."""

from __future__ import annotations

import pytest

from tests.checks.cases import CASES, Case
from trainproof.checks.registry import ALL_RULES
from trainproof.config import DEFAULT_SETTINGS, parse
from trainproof.judge import judge_against, judge_baseline, judge_run
from trainproof.report import Subject

PARAMS = [pytest.param(rule_id, case, id=f"{rule_id}:{case.name}") for rule_id, cases in CASES.items() for case in cases]


def judge(case: Case) -> Subject:
    settings = parse({"thresholds": case.overrides}, "case") if case.overrides else DEFAULT_SETTINGS
    built = case.build()
    if isinstance(built, tuple):
        run, baseline = built
        base_subject, base_ctx = judge_baseline(baseline, settings)
        return judge_against(run, base_subject, base_ctx, settings)
    return judge_run(built, settings)


@pytest.mark.parametrize(("rule_id", "case"), PARAMS)
def test_rule_case(rule_id: str, case: Case) -> None:
    subject = judge(case)
    hits = [f for f in subject.findings if f.rule_id == rule_id]
    if case.fires:
        assert hits, f"{rule_id} did not fire; findings: {[f.rule_id for f in subject.findings]}; skipped: {subject.skipped}"
        assert rule_id in subject.ran
        if case.level is not None:
            assert {f.level.label for f in hits} == {case.level}
        for finding in hits:
            assert finding.message and finding.evidence
            assert any(ch.isdigit() for ch in finding.evidence), "evidence must cite numbers"
    else:
        assert not hits, f"{rule_id} fired: {hits[0].message}"


def test_every_rule_has_cases_both_ways() -> None:
    for rule in ALL_RULES:
        cases = CASES.get(rule.id, [])
        assert any(c.fires for c in cases), f"{rule.id} has no case where it fires"
        assert any(not c.fires for c in cases), f"{rule.id} has no case where it must not fire"
    assert set(CASES) <= {r.id for r in ALL_RULES}, "a case names a rule that does not exist"


@pytest.mark.parametrize(("rule_id", "case"), PARAMS)
def test_every_case_renders_through_every_renderer(rule_id: str, case: Case) -> None:
    """Findings carry plain numbers and text: JSON, SARIF, JUnit and markdown accept every one."""
    from trainproof.render import render
    from trainproof.report import Report

    report = Report("compare" if rule_id.startswith("TP-CMP") else "epoch", (judge(case),), "0.0.0")
    for name in ("json", "sarif", "junit", "markdown", "text"):
        assert render(name, report, **({"base": "."} if name == "sarif" else {}))
