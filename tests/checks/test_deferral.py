"""Rules that defer to others: the interplay is in the registry, applied by the engine, and said by `trainproof rules`."""

from __future__ import annotations

from tests.helpers import REPO
from trainproof.checks.registry import RULES
from trainproof.cli import main
from trainproof.commands import judge_epoch
from trainproof.config import Settings

HOT = str(REPO / "tests" / "data" / "hot")  # a run that blows up: TP-DIVERGE fires, with a huge loss spike on the way


def skipped(subject, rule_id):
    return next((s.reason for s in subject.skipped if s.rule_id == rule_id), None)


def fired(subject):
    return {f.rule_id for f in subject.findings}


def test_a_rule_that_defers_is_skipped_where_the_rule_it_defers_to_fired():
    subject = judge_epoch([HOT]).subjects[0]
    assert "TP-DIVERGE" in fired(subject)
    assert "TP-LOSS-SPIKE" not in fired(subject)
    assert skipped(subject, "TP-LOSS-SPIKE") == "TP-DIVERGE already explains this curve"
    assert skipped(subject, "TP-NO-LEARNING") == "TP-DIVERGE already explains this curve"


def test_ignoring_the_rule_deferred_to_lets_the_other_speak():
    subject = judge_epoch([HOT], settings=Settings(ignore=frozenset({"TP-DIVERGE"}))).subjects[0]
    assert "TP-DIVERGE" not in fired(subject)
    assert "TP-LOSS-SPIKE" in fired(subject), "the spikes of a blown-up run are real once divergence is not reported"
    assert skipped(subject, "TP-DIVERGE").startswith("disabled by configuration")


def test_every_deferral_names_an_earlier_rule_of_the_same_command():
    for command in RULES:
        seen: set[str] = set()
        for rule in RULES[command]:
            assert set(rule.defers_to) <= seen, f"{rule.id} defers to a rule that does not run before it"
            seen.add(rule.id)


def test_trainproof_rules_says_what_each_rule_defers_to(capsys):
    assert main(["rules", "TP-LOSS-SPIKE"]) == 0
    out = capsys.readouterr().out
    assert "Defers to TP-DIVERGE: skipped where one of them fired" in out
    assert main(["rules", "TP-DIVERGE"]) == 0
    assert "Defers to" not in capsys.readouterr().out
