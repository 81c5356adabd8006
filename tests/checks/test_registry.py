"""The registry is the documentation: ids, levels, docs and thresholds are checked here."""

import inspect
import re

from trainproof.checks.registry import ALIASES, ALL_RULES, BY_ID, REMOVED
from trainproof.report import Level
from trainproof.thresholds import DEFAULTS, Thresholds, describe

ID = re.compile(r"^TP-[A-Z]+(-[A-Z]+)*$")
SECTIONS = ("What it detects:", "Why it matters:", "Fires on:", "Does not fire on:", "Does not mean:")


def test_ids_are_well_formed_unique_and_never_reused():
    ids = [r.id for r in ALL_RULES]
    assert len(ids) == len(set(ids))
    for rule_id in ids:
        assert ID.match(rule_id), rule_id
    assert not set(REMOVED) & set(BY_ID)
    assert all(new in BY_ID and old not in BY_ID for old, new in ALIASES.items())


def test_every_rule_is_documented_in_the_fixed_order():
    for rule in ALL_RULES:
        doc = rule.doc
        assert rule.summary and rule.summary.endswith("."), rule.id
        positions = [doc.find(section) for section in SECTIONS]
        assert all(p > 0 for p in positions), f"{rule.id} misses a section: {dict(zip(SECTIONS, positions))}"
        assert positions == sorted(positions), f"{rule.id} sections out of order"
        assert rule.level in (Level.WARN, Level.FAIL)
        assert rule.command in ("epoch", "compare")


def test_docs_name_only_thresholds_that_exist_and_code_uses_only_named_ones():
    known = {t.name for t in describe()}
    for rule in ALL_RULES:
        named = set(rule.thresholds)
        assert named <= known, f"{rule.id} names unknown thresholds {named - known}"
        used = set(re.findall(r"\bt\.([A-Z][A-Z0-9_]+)", inspect.getsource(rule.check)))
        assert used <= named, f"{rule.id} uses {used - named} without documenting them"


def test_every_threshold_has_a_unit_a_doc_and_a_user():
    documented = {name for rule in ALL_RULES for name in rule.thresholds}
    for info in describe():
        assert info.unit and info.doc, info.name
        assert isinstance(getattr(DEFAULTS, info.name), (int, float))
    general = {"MIN_TREND_POINTS", "HEAD_POINTS", "TAIL_SHARE", "SEGMENTS", "MIN_SEGMENT_POINTS"}
    live = {"GUARD_MIN_POINTS", "GUARD_JUDGE_GROWTH"}  # the live judge's schedule, documented in trainproof/live.py
    import trainproof.live

    assert all(name in trainproof.live.__doc__ for name in live)
    unused = {t.name for t in describe()} - documented - general - live
    assert not unused, f"thresholds no rule documents: {unused}"


def test_overrides_make_a_new_thresholds():
    changed = DEFAULTS.with_overrides({"DIVERGE_START_RATIO": 3.0})
    assert changed.DIVERGE_START_RATIO == 3.0 and DEFAULTS.DIVERGE_START_RATIO == 1.5
    assert isinstance(changed, Thresholds)
