"""Every rule trainproof has, by command and stable id. Ids are never reused.

``RULES[command]`` is the rule set of one command, in the order rules run and
findings are listed; ids are unique across every command. A rule may defer to
earlier rules of its set (``defers_to``): it is skipped on a subject where one
of them fired, because that one explains the symptom better. A command added
later registers its rules with :func:`register`. ``epoch``'s rules are here;
every other command's are beside their checks, imported by a loader when
first asked for, so importing this module imports no other command's checks.

A retired rule moves to ``REMOVED`` with a note; a renamed one keeps its old
id in ``ALIASES``.

Writing a FAIL rule: a FAIL is an accusation. It stops CI and can stop a run,
so it must rest on evidence for the failure, never on the absence of evidence
against it. A rule FAILs only when the data shows the failure beyond the
curve's own noise (a level compared with another by more than its standard
errors, a value that is exactly what it must not be, a non-finite loss); where
the noise is too large to decide, it reports at WARN (or INFO), naming the
noise level and what more logging would settle it. Each FAIL rule is tested at
its boundary: a clear failure FAILs, clear health passes, and the noisy
undecidable middle never FAILs (tests/checks/test_burden_of_proof.py).

The same holds for datasets, tokenizers and text. Most of their FAIL rules
count facts with no noise in them (a missing file, a NaN sample, a line
that is not JSON, a transcript with no letters): the fact is the proof.
One that measures and compares (TP-DATA-TEXT-RATE: a clip's speaking rate
against its group's spread) FAILs only when the clip is past the line even
at the edge of what the measurement allows (its speech duration's error,
the spread's standard error from the group's size), and says so at WARN
otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from trainproof.checks import evals, speed, spikes, trend, values
from trainproof.checks.base import Rule
from trainproof.checks.findings import Level

FAIL, WARN = Level.FAIL, Level.WARN

EPOCH_RULES: tuple[Rule, ...] = (
    Rule("TP-LOSS-NONFINITE", FAIL, values.loss_nonfinite, "epoch", chart="loss"),
    Rule("TP-GRAD-NONFINITE", FAIL, values.grad_nonfinite, "epoch", chart="grad"),
    Rule("TP-EVAL-NONFINITE", FAIL, values.eval_nonfinite, "epoch", chart="eval"),
    Rule("TP-LOSS-ZERO", FAIL, values.loss_zero, "epoch", chart="loss"),
    Rule("TP-LOSS-FLAT", FAIL, values.loss_flat, "epoch", chart="loss"),
    Rule("TP-LR-ZERO", FAIL, values.lr_zero, "epoch", chart="lr"),
    Rule("TP-LR-ZERO-PARTIAL", WARN, values.lr_zero_partial, "epoch", defers_to=("TP-LR-ZERO",), chart="lr"),
    Rule("TP-DIVERGE", FAIL, trend.diverge, "epoch", chart="loss"),
    Rule("TP-NO-LEARNING", FAIL, trend.no_learning, "epoch", defers_to=("TP-LOSS-ZERO", "TP-LOSS-FLAT", "TP-DIVERGE"), chart="loss"),
    Rule(
        "TP-PLATEAU", WARN, trend.plateau, "epoch",
        defers_to=("TP-LOSS-ZERO", "TP-LOSS-FLAT", "TP-DIVERGE", "TP-NO-LEARNING"), chart="loss",
    ),
    Rule("TP-OVERFIT", WARN, evals.overfit, "epoch", defers_to=("TP-DIVERGE",), chart="eval"),
    Rule("TP-EVAL-WORSE", WARN, evals.eval_worse, "epoch", defers_to=("TP-EVAL-NONFINITE", "TP-DIVERGE", "TP-OVERFIT"), chart="eval"),
    Rule("TP-GRAD-SPIKE", WARN, spikes.grad_spike, "epoch", chart="grad"),
    Rule("TP-LOSS-SPIKE", WARN, spikes.loss_spike, "epoch", defers_to=("TP-DIVERGE",), chart="loss"),
    Rule("TP-STEP-TIME-CLIFF", WARN, speed.step_time_cliff, "epoch", chart="time"),
    Rule("TP-LOADER-BOUND", WARN, speed.loader_bound, "epoch", chart="time"),
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


RuleLoader = Callable[[], tuple[Rule, ...]]
"""A command's rules, imported when first asked for: the function imports the module that holds them."""


class _Registry(Mapping[str, tuple[Rule, ...]]):
    """Command -> its rules. A command's set is either registered here or given by a loader, called on first use."""

    def __init__(self) -> None:
        self._sets: dict[str, tuple[Rule, ...]] = {}
        self._lazy: dict[str, RuleLoader] = {}
        self._order: list[str] = []  # commands as registered: iteration must not depend on which were imported yet

    def __getitem__(self, command: str) -> tuple[Rule, ...]:
        if command not in self._sets and command in self._lazy:
            self.register(command, self._lazy.pop(command)())
        return self._sets[command]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._order))

    def __len__(self) -> int:
        return len(self._sets) + len(self._lazy)

    def register(self, command: str, rules: tuple[Rule, ...] | RuleLoader) -> None:
        """Add a command's rules, or a loader that imports them when first asked for.

        Ids must be unique across every command, a rule's ``command`` must be
        the command it is registered under, and it may defer only to rules
        listed before it in the same set.
        """
        if command in self._sets or command in self._lazy:
            raise ValueError(f"rules for '{command}' are already registered")
        if callable(rules):
            self._lazy[command] = rules
            self._order.append(command)
            return
        seen: set[str] = set()
        taken = {rule.id for rules_ in self._sets.values() for rule in rules_}
        for rule in rules:
            if rule.id in taken or rule.id in seen:
                raise ValueError(f"rule id {rule.id} is already registered")
            if rule.command != command:
                raise ValueError(f"{rule.id} says it belongs to '{rule.command}', registered under '{command}'")
            unknown = [other for other in rule.defers_to if other not in seen]
            if unknown:
                raise ValueError(f"{rule.id} defers to {', '.join(unknown)}, which is not an earlier rule of '{command}'")
            seen.add(rule.id)
        self._sets[command] = tuple(rules)
        if command not in self._order:  # a lazy set being imported keeps its place
            self._order.append(command)

    def unregister(self, command: str) -> None:
        if command in self._order:
            self._order.remove(command)
        self._sets.pop(command, None)
        self._lazy.pop(command, None)

    def knows(self, rule_id: str) -> bool:
        """Whether any command has a rule ``rule_id``: the sets imported so far first, then every set (a configuration
        naming another command's rule costs that command's import, once)."""
        if any(rule.id == rule_id for rules in self._sets.values() for rule in rules):
            return True
        return rule_id in self.ids()

    def ids(self) -> frozenset[str]:
        """Every rule id of every command (this imports every command's checks)."""
        return frozenset(rule.id for command in self for rule in self[command])


def _compare_rules() -> tuple[Rule, ...]:
    from trainproof.checks.compare import COMPARE_RULES

    return COMPARE_RULES


def _watch_rules() -> tuple[Rule, ...]:
    from trainproof.checks.watching import WATCH_RULES

    return WATCH_RULES


def _data_rules() -> tuple[Rule, ...]:
    from trainproof.checks.data import DATA_RULES

    return DATA_RULES


def _tokenizer_rules() -> tuple[Rule, ...]:
    from trainproof.checks.tokenizer import TOKENIZER_RULES

    return TOKENIZER_RULES


def _text_rules() -> tuple[Rule, ...]:
    from trainproof.checks.text import TEXT_RULES

    return TEXT_RULES


RULES = _Registry()
RULES.register("epoch", EPOCH_RULES)
# Every other command's rules are imported only when that command judges: an `epoch` in a pre-commit hook loads none
# of them (the data command's checks bring pandas and the data model).
RULES.register("compare", _compare_rules)
RULES.register("watch", _watch_rules)
RULES.register("data", _data_rules)
RULES.register("tokenizer", _tokenizer_rules)
RULES.register("text", _text_rules)


def register(command: str, rules: tuple[Rule, ...] | RuleLoader) -> None:
    RULES.register(command, rules)


def all_rules() -> tuple[Rule, ...]:
    """Every rule of every command, command by command (this imports every command's checks)."""
    return tuple(rule for command in RULES for rule in RULES[command])


def by_id(rule_id: str) -> Rule | None:
    return next((rule for rule in all_rules() if rule.id == rule_id), None)


REMOVED: Mapping[str, str] = {}
"""Retired rule ids and why; they are never given to another rule."""

ALIASES: Mapping[str, str] = {}
"""Old id -> current id, for rules that were renamed."""
