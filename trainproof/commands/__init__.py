"""The commands, one module each (epoch, compare, watch, data, tokenizer, text), and the library calls that name them.

``COMMANDS`` maps a command's name to its :class:`~trainproof.judge.Command`,
or to a loader that imports it on first use, so ``epoch`` never imports
``data``. Every command goes through one call, :func:`judge`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from trainproof.checks.base import Rule
from trainproof.checks.registry import RULES, RuleLoader
from trainproof.config import DEFAULT_SETTINGS, Settings
from trainproof.judge import Command, judge_one, reading_options
from trainproof.judge import judge as judge_by
from trainproof.report import Report, Subject

CommandLoader = Callable[[], Command]
"""A command imported when first asked for: the function imports the module that holds it."""


def _epoch() -> Command:
    from trainproof.commands.epoch import EPOCH

    return EPOCH


def _compare() -> Command:
    from trainproof.commands.compare import COMPARE

    return COMPARE


def _watch() -> Command:
    from trainproof.commands.watch import WATCH

    return WATCH


def _data() -> Command:
    from trainproof.commands.data import DATA

    return DATA


def _tokenizer() -> Command:
    from trainproof.commands.tokenizer import TOKENIZER

    return TOKENIZER


def _text() -> Command:
    from trainproof.commands.text import TEXT

    return TEXT


COMMANDS: dict[str, Command | CommandLoader] = {
    "epoch": _epoch,
    "compare": _compare,
    "watch": _watch,
    "data": _data,
    "tokenizer": _tokenizer,
    "text": _text,
}


def register(cmd: Command, rules: tuple[Rule, ...] | RuleLoader) -> None:
    """Add a command: its description and its rules (or a loader that imports them on first use)."""
    if cmd.name in COMMANDS:
        raise ValueError(f"a command '{cmd.name}' is already registered")
    RULES.register(cmd.name, rules)
    COMMANDS[cmd.name] = cmd


def unregister(name: str) -> None:
    RULES.unregister(name)
    COMMANDS.pop(name, None)


def command(name: str | Command) -> Command:
    """The command of that name (imported now if it was not yet), or the command itself."""
    if isinstance(name, Command):
        return name
    found = COMMANDS[name]
    if not isinstance(found, Command):
        found = COMMANDS[name] = found()
    return found


def judge(
    name: str | Command,
    sources: Sequence[Any],
    settings: Settings = DEFAULT_SETTINGS,
    only: frozenset[str] | None = None,
    **options: Any,
) -> Report:
    """Judge every input by one command (by name) and return the Report every renderer draws.

    ``options`` go to the command's reader (see :func:`trainproof.judge.reading_options`)."""
    return judge_by(command(name), sources, settings, only, **options)


def judge_epoch(paths: Sequence[str | Path], fmt: str | None = None, settings: Settings = DEFAULT_SETTINGS) -> Report:
    """``trainproof epoch``: each log judged on its own."""
    return judge("epoch", paths, settings, fmt=fmt)


def judge_compare(
    run_paths: Sequence[str | Path],
    baseline_path: str | Path,
    fmt: str | None = None,
    settings: Settings = DEFAULT_SETTINGS,
) -> Report:
    """``trainproof compare``: each run against one known-good baseline.

    The baseline is judged by the single-run rules too and listed with role
    ``baseline``; its FAILs make every comparison WARN
    (TP-CMP-BASELINE-UNHEALTHY) but do not count toward the job's verdict.
    """
    return judge("compare", run_paths, settings, fmt=fmt, baseline=baseline_path)


def judge_run(run: Any, settings: Settings = DEFAULT_SETTINGS, rules: Sequence[Rule] | None = None) -> Subject:
    """Every single-run rule (or only ``rules``) on one Run you built or read yourself."""
    only = frozenset(rule.id for rule in rules) if rules is not None else None
    return judge_one(command("epoch"), run, settings, only=only)


def judge_against(run: Any, baseline: Any, settings: Settings = DEFAULT_SETTINGS) -> Subject:
    """One Run by the single-run rules and the compare rules against a baseline Run."""
    cmd = command("compare")
    options = reading_options(settings, {"baseline": baseline})
    return judge_one(cmd, run, settings, cmd.prepare(settings, options), options)
