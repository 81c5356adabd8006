"""The registry is the documentation: ids, levels, docs and thresholds are checked here."""

import inspect
import re

import pytest

from trainproof.checks.registry import ALIASES, REMOVED, RULES, all_rules
from trainproof.checks.thresholds import DEFAULTS, Thresholds, describe
from trainproof.report import Level

ID = re.compile(r"^TP-[A-Z]+(-[A-Z]+)*$")
SECTIONS = ("What it detects:", "Why it matters:", "Fires on:", "Does not fire on:", "Does not mean:")


def test_ids_are_well_formed_unique_and_never_reused():
    ids = [r.id for r in all_rules()]
    assert len(ids) == len(set(ids))
    for rule_id in ids:
        assert ID.match(rule_id), rule_id
    assert not set(REMOVED) & RULES.ids()
    assert all(new in RULES.ids() and old not in RULES.ids() for old, new in ALIASES.items())


def test_every_rule_is_documented_in_the_fixed_order():
    for rule in all_rules():
        doc = rule.doc
        assert rule.summary, rule.id
        assert rule.summary.endswith("."), rule.id
        positions = [doc.find(section) for section in SECTIONS]
        assert all(p > 0 for p in positions), f"{rule.id} misses a section: {dict(zip(SECTIONS, positions))}"
        assert positions == sorted(positions), f"{rule.id} sections out of order"
        if rule.level is Level.INFO:  # a note by default: its doc says why, and how to make it count
            assert "[tool.trainproof.levels]" in doc, rule.id
        else:
            assert rule.level in (Level.WARN, Level.FAIL), rule.id
        assert rule in RULES[rule.command]


def test_docs_name_only_thresholds_that_exist_and_code_uses_only_named_ones():
    known = {t.name for t in describe()}
    for rule in all_rules():
        named = set(rule.thresholds)
        assert named <= known, f"{rule.id} names unknown thresholds {named - known}"
        used = set(re.findall(r"\bt\.([A-Z][A-Z0-9_]+)", inspect.getsource(rule.check)))
        assert used <= named, f"{rule.id} uses {used - named} without documenting them"


def test_every_threshold_has_a_unit_a_doc_and_a_user():
    documented = {name for rule in all_rules() for name in rule.thresholds}
    for info in describe():
        assert info.unit, info.name
        assert info.doc, info.name
        assert isinstance(getattr(DEFAULTS, info.name), (int, float))
    general = {"MIN_TREND_POINTS", "HEAD_POINTS", "TAIL_SHARE", "SEGMENTS", "MIN_SEGMENT_POINTS"}
    live = {"GUARD_MIN_POINTS", "GUARD_JUDGE_GROWTH"}  # the live judge's schedule, documented in trainproof/commands/live.py
    import trainproof.commands.live

    assert all(name in trainproof.commands.live.__doc__ for name in live)
    presentation = {"CHART_SHARED_AXIS_MAX_RATIO"}  # how the HTML report draws, never a verdict
    unused = {t.name for t in describe()} - documented - general - live - presentation
    assert not unused, f"thresholds no rule documents: {unused}"


def test_overrides_make_a_new_thresholds():
    changed = DEFAULTS.with_overrides({"DIVERGE_START_RATIO": 3.0})
    assert changed.DIVERGE_START_RATIO == 3.0
    assert DEFAULTS.DIVERGE_START_RATIO == 1.5
    assert isinstance(changed, Thresholds)


def test_the_commands_keep_their_order_whichever_were_imported_first():
    """Iteration (and so every generated rules table) must not depend on which commands a test happened to load."""
    from trainproof.checks.registry import _Registry, _text_rules

    registry = _Registry()
    registry.register("a", _text_rules)
    registry.register("b", ())
    registry.register("text", _text_rules)
    assert list(registry) == ["a", "b", "text"]
    registry["text"]  # imported now
    assert list(registry) == ["a", "b", "text"]
    with pytest.raises(ValueError, match="already registered"):
        registry.register("c", (registry["text"][0],))  # a refused registration leaves no trace
    assert list(registry) == ["a", "b", "text"]
