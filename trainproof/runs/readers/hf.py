"""HuggingFace ``Trainer`` state: ``trainer_state.json`` and its ``log_history``.

``log_history`` mixes three kinds of entries, told apart by their keys:
training entries (``loss``, ``learning_rate`` or ``lr``, ``grad_norm``),
evaluation entries (``eval_loss``, or ``eval_<set>_loss`` per eval set, and
metrics such as ``eval_wer``, read when :mod:`trainproof.runs.readers.names` knows
which way is better) and the final summary (``train_runtime``, ``train_loss``, the mean over the whole
run, which is not a point of the curve).

The file is read whole, up to MAX_DOCUMENT_BYTES. A large one (LARGE_BYTES or
more, when orjson is installed) is parsed by orjson and its entries sorted by
their keys, each kind's values taken as columns: the same Run, without
Python work per value.
"""

from __future__ import annotations

import array
import functools
import itertools
import math
import operator
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from trainproof.io.bounded import count_byte, load_json, read_document, read_document_bytes
from trainproof.io.collector import collector_paused, drop, release_dropped
from trainproof.io.errors import InputError
from trainproof.runs.model import Checkpoint, DeferredStepLines, Run, Series, StepLines
from trainproof.runs.readers.base import Entries, RunBuilder, StepCuts, parse_number, parse_step
from trainproof.runs.readers.columns import metric_columns
from trainproof.runs.readers.names import DEFAULT_NAMES, Names
from trainproof.runs.readers.table import SPECIAL_FLOATS, as_columns, first_lines, moved

name = "hf"
description = "HuggingFace Trainer trainer_state.json"
line_parser = None  # the Trainer rewrites the file whole at every save
_INT_NAME = re.compile(r"[0-9]{1,18}")


def is_checkpoint_name(name: str) -> bool:
    """Is a folder named as an HF checkpoint, ``checkpoint-<step>`` (a step of more than 18 digits is no checkpoint)?"""
    return name.startswith("checkpoint-") and _INT_NAME.fullmatch(name[11:]) is not None


def nested_log(directory: Path) -> Path | None:
    """``checkpoint-<step>/trainer_state.json`` of the highest step (see :func:`is_checkpoint_name`)."""
    checkpoints = sorted(
        (p for p in directory.glob("checkpoint-*/trainer_state.json") if is_checkpoint_name(p.parent.name) and p.is_file()),
        key=lambda p: int(p.parent.name[11:]),
    )
    return checkpoints[-1] if checkpoints else None


def holds_run(folder: Path, entries: Entries) -> bool:
    """An HF output folder with no trainer_state.json of its own: its checkpoints are one run, not several."""
    return any(is_dir and is_checkpoint_name(name) and (folder / name / "trainer_state.json").is_file() for name, is_dir in entries)

_EVAL_LOSS = re.compile(r"eval_(?:(.+)_)?loss\Z", re.S)  # any set name, line breaks and all (they are escaped when shown)
_CHECKPOINT_STEP = re.compile(r"checkpoint-(\d+)")
_STEP_KEY = re.compile(r'"step"\s*:\s*(\d+)')
_SUMMARY_KEYS = ("train_runtime", "train_samples_per_second", "train_steps_per_second")


def sniff(path: Path, head: str) -> bool:
    return head.lstrip().startswith("{") and '"log_history"' in head


def read(path: Path, names: Names = DEFAULT_NAMES, columnar: bool | None = None) -> Run:
    """The Run of a trainer_state.json; ``columnar`` forces (True) or forbids (False) the column-wise read, otherwise
    chosen for a file of LARGE_BYTES or more when orjson is installed."""
    found = as_columns(path, "orjson", columnar, lambda: _read_columns(path, names))
    if found is not None:
        return found
    text = read_document(path)
    state, history = _state(path, load_json(path, text))
    return parse_state(path, state, history, text, names)


def _state(path: Path, state: object) -> tuple[dict, list]:
    if not isinstance(state, dict) or "log_history" not in state:
        raise InputError(path, "is JSON but not a HuggingFace trainer_state.json (no log_history)")
    history = state["log_history"]
    if not isinstance(history, list):
        raise InputError(path, "has a log_history that is not a list")
    return state, history


def keys_of(names: Names) -> tuple[str, str, str, str]:
    """The keys of a training entry: its loss, learning rate (``lr`` when there is no ``learning_rate``), gradient
    norm; and the default eval loss. ``--map`` renames them."""
    over = names.overrides
    return (
        over.get("loss", "loss"),
        over.get("learning_rate", "learning_rate"),
        over.get("grad_norm", "grad_norm"),
        over.get("eval_loss", "eval_loss"),
    )


@dataclass
class EvalKeys:
    """The eval series of an HF log seen so far, by builder key: eval sets' losses and other eval metrics."""

    losses: dict[str, str] = field(default_factory=dict)
    """Builder key (``eval:eval_loss``) to the eval set's name."""
    metrics: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Builder key (``metric:eval_wer``) to the metric's name and goal (``min``, ``max``, ``unknown``)."""
    _targets: dict[str, str | None] = field(default_factory=dict)

    def target(self, key: str, names: Names = DEFAULT_NAMES) -> str | None:
        """The builder key an entry's ``key`` feeds when it is an eval series, None otherwise (and for a metric whose
        better direction is unknown: it is only named in a note)."""
        if key in self._targets:
            return self._targets[key]
        found: str | None = None
        evals = keys_of(names)[3]
        if _is_eval(key, evals):
            found = "eval:" + key
            self.losses[found] = key
        elif (goal := metric_columns(names, (key,), names.resolve((key,))).get(key)) is not None:  # as the other readers
            self.metrics["metric:" + key] = (key, goal)
            found = "metric:" + key if goal != "unknown" else None
        self._targets[key] = found
        return found

    def build(self, builder: RunBuilder, copy: bool = True) -> Run:
        """The builder's Run with these eval series: the default eval set first, then named ones alphabetically."""
        losses = dict(sorted(self.losses.items(), key=lambda kv: (kv[1] != "eval_loss", kv[1])))
        return builder.build(eval_names=losses, metrics=self.metrics, copy=copy)


def add_entry(builder: RunBuilder, entry: object, evals: EvalKeys, where: str = "", names: Names = DEFAULT_NAMES) -> None:
    """One ``log_history`` entry (or one ``on_log`` record of a live Trainer) into the builder.

    Training entries carry ``loss``; evaluation entries ``eval_loss`` or
    ``eval_<set>_loss`` and metrics; the summary entry ``train_runtime`` (its
    ``train_loss`` is the run's mean, not a point of the curve). An entry
    without a numeric step is not a point; a numeric step that is not a whole
    int64 number is an InputError naming ``where`` (``log_history entry 3``).
    """
    if not isinstance(entry, dict):
        return
    value = entry.get("step")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    step: int = parse_step(value, builder.path, where)  # type: ignore[assignment]  # a number is never missing
    loss, lr, grad, _ = keys_of(names)
    if loss not in entry and any(k in entry for k in _SUMMARY_KEYS):
        runtime = entry.get("train_runtime")
        if isinstance(runtime, (int, float)) and not isinstance(runtime, bool) and math.isfinite(runtime):
            builder.runtime_s = float(runtime)
        return
    for key, value in entry.items():
        target = evals.target(key, names)
        if target is not None:
            builder.add(target, step, value)
    if loss in entry:
        builder.add("loss", step, entry[loss])
        builder.add("learning_rate", step, entry.get(lr, entry.get("lr")))
        builder.add("grad_norm", step, entry.get(grad))


def _is_eval(key: str, evals: str) -> bool:
    return key == evals or (evals == "eval_loss" and _EVAL_LOSS.match(key) is not None)


def parse_state(path: Path, state: dict, history: list, text: str = "", names: Names = DEFAULT_NAMES) -> Run:
    builder = RunBuilder(path, name)
    for number, line in enumerate(text.splitlines(), start=1):
        for match in _STEP_KEY.finditer(line):
            if len(match.group(1)) <= 18:  # a longer one is refused with its entry below
                builder.mark_line(int(match.group(1)), number)
    evals = EvalKeys()
    for index, entry in enumerate(history, start=1):
        add_entry(builder, entry, evals, f"log_history entry {index}", names)
    return _finish(path, builder, state, evals)


def _finish(path: Path, builder: RunBuilder, state: dict, evals: EvalKeys) -> Run:
    best = state.get("best_model_checkpoint")
    if isinstance(best, str) and best:
        match = _CHECKPOINT_STEP.search(best)
        best_step = state.get("best_global_step")
        step = None
        if match:
            step = parse_step(match.group(1), path, "best_model_checkpoint")
        elif isinstance(best_step, int) and not isinstance(best_step, bool):
            step = parse_step(best_step, path, "best_global_step")
        if step is not None:
            builder.checkpoints.append(Checkpoint(step=step, path=best, best=True))
    max_steps = state.get("max_steps")
    if isinstance(max_steps, (int, float)) and not isinstance(max_steps, bool):
        count = parse_step(max_steps, path, what="max_steps")
        builder.max_steps = count if count is not None and count > 0 else None
    return evals.build(builder)


_STEP_OF = operator.itemgetter("step")
_STEP_KEY_BYTES = rb'"step"[ \t]*:[ \t]*'
"""How a step's key is written in the text, up to its value: what the line index and a single step's search look for."""
_STEP_BYTES = re.compile(_STEP_KEY_BYTES + rb"(\d+)")
_OTHER_LINE_BREAKS = re.compile(b"\xc2\x85|\xe2\x80[\xa8\xa9]")
"""U+0085, U+2028 and U+2029 in UTF-8: line breaks to str.splitlines that JSON strings may hold raw."""


@collector_paused()
def _read_columns(path: Path, names: Names) -> Run | None:
    """The Run of a trainer_state.json parsed by orjson, its entries' values taken a kind of entry at a time; None
    when orjson refuses the file or the file holds something this path leaves to the other (the text path then
    reads it, and names any problem)."""
    import orjson

    release_dropped()  # the document read before this one, if any
    data = read_document_bytes(path)
    try:
        state = orjson.loads(data)
    except orjson.JSONDecodeError:  # Python's NaN and Infinity, which orjson refuses, or a broken file
        if not (b"NaN" in data or b"Infinity" in data):
            return None
        try:
            state = orjson.loads(SPECIAL_FLOATS.sub(rb'"\g<0>"', data))
        except orjson.JSONDecodeError:
            return None
    state, history = _state(path, state)
    if set(map(type, history)) - {dict}:
        return None
    builder = RunBuilder(path, name)
    lines = _step_lines(data)
    if lines is None:
        return None
    builder.step_lines = lines
    evals = EvalKeys()
    if not _columns(builder, history, evals, names):
        return None
    drop(state)  # read: kept to the end of the process (a fallback frees it before the text path parses the file)
    return _finish(path, builder, state, evals)


def _step_lines(data: bytes) -> DeferredStepLines | None:
    """The first line of each ``"step": N`` of the text, as parse_state marks them, indexed when first asked for (see
    :class:`DeferredStepLines`); None when a line could end at another byte than a newline, which str.splitlines would
    count.

    In JSON that orjson has parsed, raw control characters appear nowhere but as whitespace, so the only such bytes
    can be a carriage return, or U+0085, U+2028 or U+2029 inside a string (never in ASCII text).
    """
    if b"\r" in data or (not data.isascii() and _OTHER_LINE_BREAKS.search(data)):
        return None
    return DeferredStepLines(functools.partial(_index_step_lines, data), functools.partial(_find_step_line, data))


def _find_step_line(data: bytes, step: int) -> int | None:
    """The line :func:`_index_step_lines` gives ``step``, by one search of the text (its first ``"step": N``)."""
    digits = str(step)
    if step < 0 or len(digits) > 18:
        return None
    found = re.search(_STEP_KEY_BYTES + digits.encode() + rb"(?![0-9])", data)
    return None if found is None else count_byte(memoryview(data)[: found.start()], b"\n") + 1


def _index_step_lines(data: bytes) -> StepLines:
    starts = list(map(re.Match.start, _STEP_BYTES.finditer(data)))
    digits = _STEP_BYTES.findall(data)
    if not digits:
        return StepLines(np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))
    if max(map(len, digits)) > 18:  # a longer one is refused with its entry
        kept = [k for k, text in enumerate(digits) if len(text) <= 18]
        starts, digits = [starts[k] for k in kept], [digits[k] for k in kept]
    # the newlines between one "step" and the next, counted by bytes.count from C: a Python loop, or numpy's
    # positions of every newline, take several times as long
    gaps = np.fromiter(map(data.count, itertools.repeat(b"\n"), [0, *starts[:-1]], starts), dtype=np.int64, count=len(starts))
    return first_lines([(np.array(digits).astype(np.int64), np.cumsum(gaps) + 1)])


def _typed(entries: list[dict], key: str, code: str) -> np.ndarray | None:
    """The entries' values of ``key`` as an array of ``code`` (``d``: float64 from ints and floats; ``q``: int64 from
    ints) when every one is of those types, else None.

    array.array converts in C, straight from the entries, and refuses text, None, lists and dicts (and floats, for
    ``q``); it takes a bool as 0 or 1, so only the values that came out 0 or 1 have their types looked at: a loss, a
    learning rate or a step is rarely either, and a list of the values, and every value's type checked, took as long
    as the conversion.
    """
    try:
        converted = np.frombuffer(array.array(code, map(operator.itemgetter(key), entries)), dtype=np.float64 if code == "d" else np.int64)
    except (TypeError, OverflowError):
        return None
    maybe = np.flatnonzero((converted == 0) | (converted == 1))
    if maybe.size * 8 > converted.size:
        return None if bool in set(map(type, map(operator.itemgetter(key), entries))) else converted
    return None if any(type(entries[i][key]) is bool for i in maybe.tolist()) else converted


def _numbers(values: list) -> tuple[np.ndarray, np.ndarray, dict[int, str]]:
    """Values as parse_number reads them, one at a time: the floats, which ones are points (not missing), and the
    text of those that are no number, by position."""
    numbers = np.empty(len(values), dtype=np.float64)
    points = np.zeros(len(values), dtype=bool)
    raw: dict[int, str] = {}
    for k, value in enumerate(values):
        parsed = parse_number(value)
        if parsed is not None:
            numbers[k], points[k] = parsed
            points[k] = True
            if parsed[1] is not None:
                raw[k] = parsed[1]
    return numbers, points, raw


CLASS_SHARE = 4
"""An entry count of one size held by at least 1/CLASS_SHARE of the history is a main class of entries (at most
CLASS_SHARE of them): its entries are taken by a mask over the history, and their keys checked for one kind in one
pass. The other entries are grouped by their keys one by one."""


def _kinds(history: list[dict]) -> list[tuple[tuple[str, ...], np.ndarray, list[dict]]]:
    """The history's entries by kind (their keys, in the order of the kind's first entry): each kind's keys, rows in
    the history and entries, kinds in the order they first appear.

    Entries of a kind have as many keys: a main class of entries of one size whose keys, all together, are no more
    than that size are all of one kind, as a training log's entries are (one pass over their keys, instead of a tuple
    of keys built and hashed for every entry).
    """
    sizes = np.fromiter(map(len, history), dtype=np.intp, count=len(history))
    counts = np.bincount(sizes)
    kinds: list[tuple[tuple[str, ...], np.ndarray, list[dict]]] = []
    rest = np.ones(len(history), dtype=bool)
    for size in np.flatnonzero(CLASS_SHARE * counts >= len(history)).tolist():
        members = sizes == size
        entries = list(itertools.compress(history, members.tolist()))
        if len(set().union(*entries)) == size:
            kinds.append((tuple(entries[0]), np.flatnonzero(members), entries))
            rest &= ~members
    if rest.any():
        kinds += _kinds_by_keys(history, np.flatnonzero(rest))
    kinds.sort(key=lambda kind: int(kind[1][0]))
    return kinds


def _kinds_by_keys(history: list[dict], rows: np.ndarray) -> list[tuple[tuple[str, ...], np.ndarray, list[dict]]]:
    """:func:`_kinds` of the entries at ``rows``, each's keys taken as a tuple."""
    entries = list(map(history.__getitem__, rows.tolist()))
    # each entry's kind, numbered by the index of the first entry of that kind, in one pass: setdefault keeps the
    # number a kind got when first seen, so the numbers rise in the order the kinds are first seen
    first: dict[tuple[str, ...], int] = {}
    kind_of = np.fromiter(map(first.setdefault, map(tuple, entries), itertools.count()), dtype=np.int64, count=len(entries))
    order = np.argsort(kind_of, kind="stable")
    firsts = np.fromiter(first.values(), dtype=np.int64, count=len(first))
    bounds = np.searchsorted(kind_of[order], np.append(firsts, len(entries)))
    kinds = []
    for kind, keys in enumerate(first):
        at = order[bounds[kind] : bounds[kind + 1]]
        kinds.append((keys, rows[at], list(map(entries.__getitem__, at.tolist()))))
    return kinds


def _columns(builder: RunBuilder, history: list, evals: EvalKeys, names: Names) -> bool:
    """add_entry over every entry, a kind of entry (its keys) at a time; False for a step of a kind this path does
    not read exactly (the text path reads the file)."""
    loss, lr, grad, _ = keys_of(names)
    series: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, str]]]] = {}
    runtime: tuple[int, float] | None = None
    problem: int | None = None
    for keys, rows, entries in _kinds(history):
        if "step" not in keys:
            continue
        ints = _typed(entries, "step", "q")
        floats = None
        if ints is None:
            types = set(map(type, map(_STEP_OF, entries)))
            if types - {int, float}:
                return False  # a step of another kind (a quoted NaN too): skipped or refused entry by entry, as the text path does
            if types == {int}:
                return False  # past int64: refused with its entry by the text path
            try:
                floats = np.fromiter(map(_STEP_OF, entries), dtype=np.float64, count=len(entries))
            except OverflowError:
                return False
        if floats is not None:
            whole = np.isfinite(floats) & (np.abs(floats) < 2.0**63)
            whole[whole] = floats[whole] == np.floor(floats[whole])
            if not whole.all():
                broken = int(rows[~whole][0])
                problem = broken if problem is None else min(problem, broken)
                rows, floats = rows[whole], floats[whole]
                entries = list(itertools.compress(entries, whole.tolist()))
            ints = floats.astype(np.int64)
        assert ints is not None, "a kind's steps are typed ints, or floats that are whole"
        if loss not in keys and any(k in keys for k in _SUMMARY_KEYS):
            if "train_runtime" in keys:
                for i in rows.tolist()[::-1]:
                    value = history[i]["train_runtime"]
                    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                        runtime = max(runtime or (i, float(value)), (i, float(value)))
                        break
            continue
        wanted = [(target, key) for key in keys if (target := evals.target(key, names)) is not None]
        if loss in keys:
            wanted += [("loss", loss), ("learning_rate", lr if lr in keys else "lr"), ("grad_norm", grad)]
        for target, key in wanted:
            if key not in keys:
                continue
            numbers = _typed(entries, key, "d")
            if numbers is not None:  # every entry a point: the kind's arrays, its steps shared (see RunBuilder.put)
                series.setdefault(target, []).append((rows, ints, numbers, {}))
                continue
            numbers, points, raw = _numbers(list(map(operator.itemgetter(key), entries)))
            at = np.flatnonzero(points)
            kept = {k: raw[int(j)] for k, j in enumerate(at.tolist()) if int(j) in raw} if raw else {}
            series.setdefault(target, []).append((rows[at], ints[at], numbers[at], kept))
    if problem is not None:
        parse_step(history[problem]["step"], builder.path, f"log_history entry {problem + 1}")  # raises, naming it
    if runtime is not None:
        builder.runtime_s = runtime[1]
    cuts = StepCuts()  # a steps array the series of one kind share: cut once, the cut shared
    for target, parts in series.items():
        builder.put(target, _merged(parts, cuts))
    return True


def _merged(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, str]]], cuts: StepCuts) -> Series:
    """One series from the points of several kinds of entry: in entry order, the last value of a step kept, by
    ``cuts`` (a steps array the series of one kind share is cut once)."""
    if len(parts) == 1:
        rows, steps, values, texts = parts[0]
    else:
        rows = np.concatenate([p[0] for p in parts])
        steps = np.concatenate([p[1] for p in parts])
        values = np.concatenate([p[2] for p in parts])
        texts = {}
        offset = 0
        for part in parts:
            texts.update({offset + k: text for k, text in part[3].items()})
            offset += part[0].size
        # each kind's entries are in file order; several kinds interleave
        order = np.argsort(rows, kind="stable")
        steps, values = steps[order], values[order]
        texts = moved(texts, order)
    keep, steps = cuts.cut(id(steps), steps)
    if keep is not None:
        values = values[keep]
        texts = moved(texts, keep)
    return Series(steps, values, {int(steps[k]): text for k, text in texts.items()})
