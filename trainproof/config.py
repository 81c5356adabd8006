"""Per-repository configuration: which rules run, at which level, against which thresholds.

Read from ``--config PATH``, else the nearest ``.trainproof.toml`` or
``pyproject.toml`` with a ``[tool.trainproof]`` table, searching from the
working directory up to the filesystem root. A ``.trainproof.toml`` holds the
same keys at its top level (or under ``[tool.trainproof]``)::

    [tool.trainproof]
    select = ["TP-DIVERGE", "TP-LR-ZERO"]   # only these rules (default: all)
    ignore = ["TP-PLATEAU"]                  # never these
    fail-on = "warn"                         # fail | warn | never

    [tool.trainproof.levels]
    TP-GRAD-NONFINITE = "WARN"               # FAIL | WARN | INFO

    [tool.trainproof.thresholds]
    PLATEAU_WARN_S = 7200

    [tool.trainproof.map]                    # a series the log names its own way (like --map)
    loss = "train/total_loss"

    [tool.trainproof.metrics]                # an eval metric and which way is better (like --metric)
    eval_mos = "max"

Unknown keys, unknown rule ids and values of the wrong type are errors that
name the key (exit 2), never silently ignored.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from trainproof.checks.thresholds import DEFAULTS, ThresholdInfo, Thresholds, describe
from trainproof.io.errors import TrainproofError
from trainproof.report import Level
from trainproof.runs.readers.names import DEFAULT_NAMES, MapError, Names, parse_goals, parse_map

FAIL_ON = ("fail", "warn", "never")
KEYS = ("select", "ignore", "levels", "thresholds", "fail-on", "map", "metrics")
DEFAULT_SOURCE = "default"


class ConfigError(TrainproofError):
    """A configuration file asks for something that does not exist or has the wrong type."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(f"{source}: {problem}")


@dataclass(frozen=True)
class Settings:
    """The effective configuration, and where each non-default value came from."""

    thresholds: Thresholds = DEFAULTS
    select: frozenset[str] | None = None
    ignore: frozenset[str] = frozenset()
    levels: Mapping[str, Level] = field(default_factory=dict)
    fail_on: str = "fail"
    source: str | None = None
    origins: Mapping[str, str] = field(default_factory=dict)
    names: Names = DEFAULT_NAMES
    """Which name of a log carries each series: the shared table, with the ``map`` table and ``--map`` over it; and
    which way is better for eval metrics: the ``metrics`` table and ``--metric`` over the names' own words."""

    def enabled(self, rule_id: str) -> bool:
        return (self.select is None or rule_id in self.select) and rule_id not in self.ignore

    def disabled_reason(self, rule_id: str) -> str:
        key = "ignore" if rule_id in self.ignore else "select"
        return f"disabled by configuration ({self.source}: {key})"

    def origin(self, name: str) -> str:
        return self.origins.get(name, DEFAULT_SOURCE)

    def with_map(self, entries: list[str] | None) -> Settings:
        """``--map SERIES=NAME`` entries over the configuration's ``map`` table."""
        if not entries:
            return self
        return replace(self, names=replace(self.names, overrides={**self.names.overrides, **parse_map(entries)}))

    def with_metrics(self, entries: list[str] | None) -> Settings:
        """``--metric NAME=min|max`` entries over the configuration's ``metrics`` table."""
        if not entries:
            return self
        return replace(self, names=replace(self.names, goals={**self.names.goals, **parse_goals(entries)}))

    def with_fail_on(self, fail_on: str | None) -> Settings:
        if fail_on is None:
            return self
        return replace(self, fail_on=fail_on, origins={**self.origins, "fail-on": "command line"})


DEFAULT_SETTINGS = Settings()


def _toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(str(path), f"cannot be read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), f"is not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(str(path), "is not a configuration trainproof can read: its tables are nested too deeply") from None
    except UnicodeDecodeError:
        raise ConfigError(str(path), "is not valid TOML: it is not UTF-8 text") from None
    except ValueError as exc:  # e.g. an integer longer than Python converts
        raise ConfigError(str(path), f"is not a configuration trainproof can read: {exc}") from None


def _table(path: Path, explicit: bool) -> tuple[dict[str, Any] | None, bool]:
    """The trainproof table of a file (None when it has none), and whether it sat under [tool.trainproof]."""
    data = _toml(path)
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        if path.name == "pyproject.toml" and not explicit:
            return None, False  # not ours to judge: some other tool's pyproject.toml
        raise ConfigError(str(path), f"'tool' must be a table, got {type(tool).__name__}")
    table = tool.get("trainproof")
    if table is not None:
        if not isinstance(table, dict):
            raise ConfigError(str(path), f"'tool.trainproof' must be a table, got {type(table).__name__}")
        return table, True
    if path.name == "pyproject.toml" and not explicit:
        return None, False
    return {k: v for k, v in data.items() if k != "tool"}, False


def _mentions_us(path: Path) -> bool:
    """A cheap look before parsing: most pyproject.toml files have no trainproof table at all."""
    try:
        return "tool.trainproof" in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def discover(start: Path) -> Path | None:
    """The nearest .trainproof.toml, or pyproject.toml with [tool.trainproof], at or above ``start``."""
    for folder in [start, *start.parents]:
        dedicated = folder / ".trainproof.toml"
        if dedicated.is_file():
            return dedicated
        project = folder / "pyproject.toml"
        if project.is_file() and _mentions_us(project) and _table(project, explicit=False)[0] is not None:
            return project
    return None


def load(path: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> Settings:
    """Settings from ``path`` if given, else from the nearest configuration file, else defaults."""
    explicit = path is not None
    found: Path | None
    if path is not None:
        found = Path(path)
        if not found.is_file():
            raise ConfigError(str(found), "does not exist" if not found.exists() else "is not a file")
    else:
        found = discover((cwd or Path.cwd()).resolve())
        if found is None:
            return DEFAULT_SETTINGS
    table, under_tool = _table(found, explicit=explicit)
    source = str(found) if explicit else _display(found, cwd)
    return parse(table or {}, f"{source} [tool.trainproof]" if under_tool else source)


def _display(path: Path, cwd: Path | None) -> str:
    try:
        return str(path.relative_to((cwd or Path.cwd()).resolve()))
    except ValueError:
        return str(path)


def parse(table: Mapping[str, Any], source: str) -> Settings:
    """Validate a configuration table into Settings; every error names its key and ``source``."""
    for key in table:
        if key not in KEYS:
            raise _error(source, key, f"unknown key (known: {', '.join(KEYS)})")
    origins: dict[str, str] = {}
    select = _rule_ids(table, "select", source) if "select" in table else None
    ignore = _rule_ids(table, "ignore", source) if "ignore" in table else frozenset()
    if select is not None:
        origins["select"] = source
    if ignore:
        origins["ignore"] = source
    levels = _levels(table.get("levels", {}), source)
    origins.update({f"level:{rule_id}": source for rule_id in levels})
    overrides = _thresholds(table.get("thresholds", {}), source)
    origins.update(dict.fromkeys(overrides, source))
    fail_on = _fail_on(table, source)
    names = _names(table.get("map", {}), table.get("metrics", {}), source)
    if "fail-on" in table:
        origins["fail-on"] = source
    return Settings(
        thresholds=DEFAULTS.with_overrides(overrides) if overrides else DEFAULTS,
        select=select,
        ignore=ignore,
        levels=levels,
        fail_on=fail_on,
        source=source,
        origins=origins,
        names=names,
    )


def _names(raw: object, metrics: object, source: str) -> Names:
    """The ``map`` table (series = the name the log writes for it) and the ``metrics`` table (name = min | max)."""
    if not isinstance(raw, dict) or not all(isinstance(v, str) and v.strip() for v in raw.values()):
        raise _error(source, "map", "must be a table of series = name (for example loss = \"train/total_loss\")")
    if not isinstance(metrics, dict) or not all(isinstance(v, str) for v in metrics.values()):
        raise _error(source, "metrics", "must be a table of name = \"min\" or \"max\" (for example eval_mos = \"max\")")
    try:
        overrides = parse_map([f"{k}={v}" for k, v in raw.items()], f"{source}: 'map'")
        goals = parse_goals([f"{k}={v}" for k, v in metrics.items()], f"{source}: 'metrics'")
    except MapError as exc:
        raise ConfigError(source, str(exc).split(": ", 1)[-1]) from None
    return Names(overrides, goals) if overrides or goals else DEFAULT_NAMES


def _error(source: str, key: str, problem: str) -> ConfigError:
    return ConfigError(source, f"'{key}': {problem}")


def _rule_id(name: str) -> str | None:
    """The registered id a configured name means (case-insensitive, aliases followed), or None."""
    from trainproof.checks.registry import ALIASES, RULES

    rule_id = ALIASES.get(name.upper(), name.upper())
    return rule_id if RULES.knows(rule_id) else None


def _rule_ids(table: Mapping[str, Any], key: str, source: str) -> frozenset[str]:
    """The rule ids of ``select`` or ``ignore``."""
    value = table[key]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _error(source, key, f"must be a list of rule ids, got {type(value).__name__}")
    if key == "select" and not value:
        raise _error(source, key, "is empty, which would turn every rule off; name rules to run, or use 'ignore'")
    ids = []
    for item in value:
        rule_id = _rule_id(item)
        if rule_id is None:
            raise _error(source, key, f"unknown rule id '{item}' (see 'trainproof rules')")
        ids.append(rule_id)
    return frozenset(ids)


def _levels(raw: object, source: str) -> dict[str, Level]:
    """The ``levels`` table: rule id = FAIL | WARN | INFO."""
    if not isinstance(raw, dict):
        raise _error(source, "levels", "must be a table of rule id = level")
    levels: dict[str, Level] = {}
    for rule_key, value in raw.items():
        rule_id = _rule_id(rule_key)
        if rule_id is None:
            raise _error(source, f"levels.{rule_key}", "unknown rule id (see 'trainproof rules')")
        if not isinstance(value, str) or value.upper() not in Level.__members__:
            raise _error(source, f"levels.{rule_key}", f"must be one of FAIL, WARN, INFO, got {value!r}")
        levels[rule_id] = Level[value.upper()]
    return levels


def _thresholds(raw: object, source: str) -> dict[str, float | int]:
    """The ``thresholds`` table: NAME = number, of the threshold's type and within its range."""
    if not isinstance(raw, dict):
        raise _error(source, "thresholds", "must be a table of NAME = number")
    known = {info.name: info for info in describe()}
    overrides: dict[str, float | int] = {}
    for name, value in raw.items():
        if name not in known:
            raise _error(source, f"thresholds.{name}", "unknown threshold (see 'trainproof rules --json')")
        overrides[name] = _threshold_value(known[name], value, source)
    return overrides


def _threshold_value(info: ThresholdInfo, value: object, source: str) -> float | int:
    """One threshold's configured value, checked against its type and range."""
    wants_int = info.type is int
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (wants_int and not isinstance(value, int)):
        raise _error(source, f"thresholds.{info.name}", f"must be {'an integer' if wants_int else 'a number'}, got {value!r}")
    if value not in info.range:
        raise _error(source, f"thresholds.{info.name}", f"must be a finite number {info.range}, got {value!r}")
    return value if wants_int else float(value)


def _fail_on(table: Mapping[str, Any], source: str) -> str:
    fail_on = table.get("fail-on", "fail")
    if fail_on not in FAIL_ON:
        raise _error(source, "fail-on", f"must be one of {', '.join(FAIL_ON)}, got {fail_on!r}")
    return fail_on
