"""The one judge path: read inputs, build each command's contexts, apply its rules, return a Report.

A command is described by a small :class:`Command` (how it reads an input,
which rules run in which context, what a subject shows); :func:`judge` does
the rest the same way for every command. The commands themselves, and the
library calls that name them (``judge("epoch", ...)``), are a floor above, in
:mod:`trainproof.commands`. The CLI, ``watch``, the HF callback
and the CI wrappers all come through here; none of them runs a rule or builds
a finding on its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from trainproof.io.about import __version__
from trainproof.checks.base import Context, NotApplicable, Rule
from trainproof.checks.registry import RULES
from trainproof.config import DEFAULT_SETTINGS, Settings
from trainproof.io.errors import ClusterError, InputError, MissingDependencyError
from trainproof.report import Finding, Folder, Level, Report, Skipped, Subject, Table


@dataclass(frozen=True)
class Outcome:
    findings: tuple[Finding, ...] = ()
    ran: tuple[str, ...] = ()
    skipped: tuple[Skipped, ...] = ()

    def __add__(self, other: Outcome) -> Outcome:
        return Outcome(self.findings + other.findings, self.ran + other.ran, self.skipped + other.skipped)


@dataclass(frozen=True)
class Stage:
    """Rules applied in one context; ``context`` is a string when the stage cannot run, saying why."""

    rules: tuple[Rule, ...]
    context: Context | str


@dataclass(frozen=True)
class Prepared:
    """What a command works out once, before its inputs: subjects listed after them (a baseline), and shared state."""

    subjects: tuple[Subject, ...] = ()
    shared: Any = None


@dataclass(frozen=True)
class Input:
    """One thing to judge, as a command's :meth:`Command.inputs` hands it over.

    ``relative`` says where a folder search found it, within the folder of
    its :class:`Inputs`;
    ``prepared`` replaces the command's prepared state for this input alone
    (the baseline run a run is paired with), and ``missing`` says why there
    is nothing to judge (a run with no counterpart), making it NOT-CHECKED.
    """

    source: Any
    relative: str | None = None
    prepared: Prepared | None = None
    missing: str | None = None


@dataclass(frozen=True)
class Inputs:
    """What one source given to a command stands for: itself, or each run found in a folder of runs."""

    items: tuple[Input, ...]
    folder: Folder | None = None


class Command:
    """How one command judges: override what differs. Instances are stateless."""

    name: str = ""

    @property
    def rules(self) -> tuple[Rule, ...]:
        """Every rule the command may apply, in registry order."""
        return RULES[self.name]

    def read(self, source: Any, options: Mapping[str, Any]) -> Any:
        """One input (a path, or an object already read) into what the rules judge; InputError when it cannot be."""
        raise NotImplementedError

    def reads(self, path: str) -> Sequence[Path]:
        """The files judging ``path`` reads, which no output may overwrite (a folder's log, a dataset's manifest)."""
        return [Path(path)]

    def reads_listed(self, path: str, options: Mapping[str, Any]) -> Sequence[str]:
        """The files judging ``path`` (with ``options``) reads that :meth:`reads` cannot list before reading the input
        (a dataset's clips and transcripts): asked only when an output exists already, which may be one of them."""
        return ()

    def reads_options(self, options: Mapping[str, Any]) -> Sequence[tuple[str, str]]:
        """The files the command's ``options`` (not its inputs) make it read, which no output may overwrite, each with
        why, as the refusal says it: ``("tok/tokenizer.json", "is read as the tokenizer")``."""
        return ()

    def inputs(self, source: Any, options: Mapping[str, Any], prepared: Prepared) -> Inputs:
        """What one source stands for (each run of a folder of runs); InputError when that cannot be worked out."""
        return Inputs((Input(source),))

    def prepare(self, settings: Settings, options: Mapping[str, Any]) -> Prepared:
        return Prepared()

    def stages(self, thing: Any, settings: Settings, prepared: Prepared) -> Sequence[Stage]:
        raise NotImplementedError

    def unjudged(self, stages: Sequence[Stage], outcome: Outcome, prepared: Prepared) -> str | None:
        """Why a subject that was read still cannot be judged, or None."""
        return nothing_ran(outcome)

    def present(self, thing: Any, subject: Subject, stages: Sequence[Stage], prepared: Prepared) -> Subject:
        """The subject with what it shows (summary, headline, notes, charts, metrics) filled in."""
        return subject

    def table(self, subjects: Sequence[Subject]) -> Table | None:
        return None


def apply_rules(rules: Iterable[Rule], ctx: Context, settings: Settings = DEFAULT_SETTINGS) -> Outcome:
    """Run rules in order; a rule that cannot judge, that the configuration disables, or that defers to one that fired is skipped with its reason."""
    findings: list[Finding] = []
    ran: list[str] = []
    skipped: list[Skipped] = []
    fired: set[str] = set()
    for rule in rules:
        if not settings.enabled(rule.id):
            skipped.append(Skipped(rule.id, settings.disabled_reason(rule.id)))
            continue
        deferred = next((other for other in rule.defers_to if other in fired), None)
        if deferred is not None:
            skipped.append(Skipped(rule.id, f"{deferred} already explains {ctx.topic}"))
            continue
        try:
            # Logged values reach float64's limits (a loss of 1e308): overflow to inf is the right answer, not a warning.
            with np.errstate(all="ignore"):
                hits = list(rule.check(ctx))
        except NotApplicable as reason:
            skipped.append(Skipped(rule.id, str(reason)))
            continue
        ran.append(rule.id)
        for hit in hits:
            findings.append(ctx.locate(rule.stamp(hit, settings.levels.get(rule.id))))
            # a rule's own note (a rise within noise) explains nothing for the others; one the configuration sets to INFO
            # still found what it found, and still explains it
            if hit.level is not Level.INFO:
                fired.add(rule.id)
    return Outcome(tuple(findings), tuple(ran), tuple(skipped))


def nothing_ran(outcome: Outcome) -> str | None:
    """A judgement no rule took part in is no PASS."""
    if outcome.ran:
        return None
    if outcome.skipped and all(s.reason.startswith("disabled by configuration") for s in outcome.skipped):
        return "no rule ran: the configuration disables every rule"
    return "no rule could run on this log"


def unreadable(source: Any, error: InputError, role: str = "run") -> Subject:
    """An input that could not be read, located at the file that failed (inside a run folder, the log itself)."""
    return Subject(path=error.path or str(source), unjudged=error.problem, error=True, role=role)


def read_input(cmd: Command, source: Any, options: Mapping[str, Any]) -> Any:
    """One input read by its command; anything that goes wrong is an InputError about that input alone.

    An unexpected exception is a bug in trainproof, said as such, but it must
    not cost the user the verdicts of the other inputs and the output files.
    """
    try:
        return cmd.read(source, options)
    except (InputError, MissingDependencyError, ClusterError):  # a missing extra or cluster is about the installation, not this input
        raise
    except (OSError, RecursionError, MemoryError) as exc:
        raise InputError(source, f"cannot be read: {getattr(exc, 'strerror', None) or type(exc).__name__}") from None
    except Exception as exc:  # noqa: BLE001 - see the docstring
        raise InputError(source, f"internal error while reading it: {type(exc).__name__}: {exc}") from None


def _ordered(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    return tuple(sorted(findings, key=lambda f: -f.level))


def reading_options(settings: Settings, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` for a command's reader, with the settings' ``names`` (which name of a log carries each series, and
    the eval metrics' goals) unless an option says otherwise."""
    return {"names": settings.names, **options}


def judge_one(
    cmd: Command,
    source: Any,
    settings: Settings = DEFAULT_SETTINGS,
    prepared: Prepared = Prepared(),
    options: Mapping[str, Any] | None = None,
    role: str = "run",
    only: frozenset[str] | None = None,
) -> Subject:
    """One input through one command: read, every stage's rules (``only`` these ids, when given), presented."""
    options = reading_options(settings, options or {})
    try:
        thing = read_input(cmd, source, options)
    except InputError as error:
        return unreadable(source, error, role)
    stages = [
        replace(stage, rules=tuple(r for r in stage.rules if r.id in only)) if only is not None else stage
        for stage in cmd.stages(thing, settings, prepared)
    ]
    outcome = Outcome()
    for stage in stages:
        if isinstance(stage.context, str):
            outcome += Outcome(skipped=tuple(Skipped(rule.id, stage.context) for rule in stage.rules))
        else:
            outcome += apply_rules(stage.rules, stage.context, settings)
    subject = Subject(
        path=str(source),
        findings=_ordered(outcome.findings),
        ran=outcome.ran,
        skipped=outcome.skipped,
        unjudged=cmd.unjudged(stages, outcome, prepared),
        role=role,
    )
    return cmd.present(thing, subject, stages, prepared)


def judge(
    cmd: Command,
    sources: Sequence[Any],
    settings: Settings = DEFAULT_SETTINGS,
    only: frozenset[str] | None = None,
    **options: Any,
) -> Report:
    """Judge every input by one command and return the Report every renderer draws.

    ``options`` go to the command's reader (see :func:`reading_options`)."""
    options = reading_options(settings, options)
    prepared = cmd.prepare(settings, options)
    judged: list[Subject] = []
    folders: list[Folder] = []
    for source in sources:
        try:
            found = cmd.inputs(source, options, prepared)
        except InputError as error:
            judged.append(unreadable(source, error))
            continue
        if found.folder is not None:
            folders.append(found.folder)
        judged.extend(_judge_input(cmd, item, found.folder, settings, prepared, options, only) for item in found.items)
    return Report(
        command=cmd.name,
        subjects=tuple(judged) + prepared.subjects,
        tool_version=__version__,
        fail_on=settings.fail_on,
        rules=cmd.rules,
        table=cmd.table(judged),
        folders=tuple(folders),
    )


def _judge_input(
    cmd: Command, item: Input, folder: Folder | None, settings: Settings, prepared: Prepared, options: Mapping[str, Any], only: frozenset[str] | None
) -> Subject:
    if item.missing is not None:
        subject = Subject(path=str(item.source), unjudged=item.missing)
    else:
        subject = judge_one(cmd, item.source, settings, prepared if item.prepared is None else item.prepared, options, only=only)
    return located(subject, folder, item)


def located(subject: Subject, folder: Folder | None, item: Input) -> Subject:
    """A subject found in a folder of runs, carrying the folder's path and its own path relative to it."""
    return subject if folder is None else replace(subject, folder=folder.path, relative=item.relative)
