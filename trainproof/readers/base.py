"""What every reader shares: the protocol, bounded reading, value parsing, and the run builder."""

from __future__ import annotations

import json
import math
import os
import re
import reprlib
import stat
from collections.abc import Callable, Hashable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol

import numpy as np

from trainproof.errors import InputError
from trainproof.model import Checkpoint, DeferredStepLines, Run, Series, StepLines
from trainproof.readers.names import unjudged_note

if TYPE_CHECKING:
    from trainproof.readers.names import Names

Value = object

MAX_LINE_BYTES = 1024 * 1024
"""The longest line (or record) of a line-oriented log. Real log lines are a few hundred bytes; a longer one is
binary junk, the zero bytes a crash leaves at the end of a file, or a device that never ends, and is an InputError."""

MAX_DOCUMENT_BYTES = 512 * 1024 * 1024
"""The largest log read whole (``trainer_state.json``, a JSON array of records). A trainer_state.json of a million
logged steps is about 200 MB; anything larger is not one, and parsing it would take several times its size in memory."""

BLOCK_BYTES = 1024 * 1024
"""How much of a line-oriented log is read at a time."""

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_INTEGER = re.compile(r"[+-]?[0-9]+")


class LineParser(Protocol):
    """A line-oriented log parsed as it is written: ``trainproof watch`` feeds it each complete line, in order, and
    builds a Run whenever it judges (``copy=False``: a snapshot of views, see :meth:`RunBuilder.build`)."""

    builder: RunBuilder

    def feed(self, line: str, number: int) -> None: ...

    def build(self, copy: bool = True) -> Run: ...


class Reader(Protocol):
    """One log format (a module). ``sniff`` looks at the first bytes; ``read`` parses the whole file."""

    name: str
    description: str

    @property
    def line_parser(self) -> Callable[[Path | str], LineParser] | None:
        """Makes the LineParser of a log at a path; None for a format read whole (a JSON document, binary records),
        which ``watch`` reads again whenever it changes. A module attribute: read-only here so that a class fits."""

    def sniff(self, path: Path, head: str) -> bool: ...

    def read(self, path: Path, names: Names = ...) -> Run: ...


def size_text(n: int) -> str:
    """A byte count as people write limits: ``1 MiB``, ``512 MiB``, else ``1,000 bytes``."""
    return f"{n // 2**20} MiB" if n and n % 2**20 == 0 else f"{n:,} bytes"


def _shown(value: Value) -> str:
    """A logged value quoted for a message: short, and with control characters escaped by repr."""
    text = value.strip() if isinstance(value, str) else reprlib.repr(value)
    return repr(text if len(text) <= 40 else text[:40] + "...")


def parse_step(value: Value, path: Path | str, where: str = "", what: str = "step") -> int | None:
    """A logged step (or epoch, or step count) as an int; None when it is missing (the empty cell of a sparse row).

    A step indexes int64 arrays and orders the run, so anything else -- NaN,
    infinity, a fraction, a word, a number beyond int64 -- is an InputError
    naming where it is and what it says, never a silent truncation or an
    OverflowError further down. ``where`` is ``line 3``, ``record 2``, ...
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    number = _whole(value)
    problem = "is not a whole number"
    if number is not None:
        if INT64_MIN <= number <= INT64_MAX:
            return number
        problem = f"is out of range (a {what} fits in 64 bits)"
    raise InputError(path, f"{where + ': ' if where else ''}the {what} {_shown(value)} {problem}")


def _whole(value: Value) -> int | None:
    """The whole number a value spells, however large (capped beyond int64); None when it is not one."""
    if isinstance(value, str):
        text = value.strip()
        if _INTEGER.fullmatch(text):
            return int(text) if len(text) <= 20 else INT64_MAX + 1  # int() refuses thousands of digits
        try:
            value = float(text)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    return int(value)


def parse_number(value: Value) -> tuple[float, str | None] | None:
    """A logged value as a float, keeping what is not a finite number as evidence.

    Returns None for a missing value (None, empty cell). A value that is not a
    number at all (``"n/a"``, ``"error"``) comes back as NaN with its text, so a
    check can cite it; ``NaN`` and ``Infinity`` come back as themselves, and an
    integer too large for a float as an infinity.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return math.nan, str(value)
    if isinstance(value, int):
        try:
            return float(value), None
        except OverflowError:
            return (math.inf if value > 0 else -math.inf), None
    if isinstance(value, float):
        return value, None
    if not isinstance(value, str):  # a list or an object: its text, bounded however large or deep it is
        return math.nan, reprlib.repr(value)[:40]
    text = value.strip()
    if not text:
        return None
    try:
        return float(text), None
    except ValueError:
        return math.nan, text[:40]


def parse_timestamp(value: Value) -> float | None:
    """Seconds on some absolute or relative clock, from a number or an ISO-8601 string.

    Numbers above 1e11 are taken as milliseconds since the epoch (MLflow,
    JavaScript), above 1e14 as microseconds.
    """
    parsed = parse_number(value)
    if parsed is not None and parsed[1] is None:
        seconds = parsed[0]
        if not math.isfinite(seconds):
            return None
        if seconds > 1e14:
            return seconds / 1e6
        if seconds > 1e11:
            return seconds / 1e3
        return seconds
    if isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return None
        if moment.tzinfo is None:  # only differences matter; keep them zone-independent
            moment = moment.replace(tzinfo=timezone.utc)
        return moment.timestamp()
    return None


RESUMES_AT_MOST = 3
"""A series whose steps go back at most this many times (or RESUME_SHARE of its points, if more) may have been
resumed or restarted that often: see :func:`last_per_step`. Steps that go back more often are out of order."""
RESUME_SHARE = 0.05


def last_per_step(steps: np.ndarray) -> np.ndarray | None:
    """What keeps one value per step of a series whose steps are in the order they were logged, steps ascending: a
    mask or positions in step order; None when the steps already rise strictly. Each step's last value is kept, and
    when the run was resumed or restarted, only its last timeline.

    A run resumed from a checkpoint at step 400 (or restarted at step 0) logs its steps again from there: what it
    logged before at those steps, and at any step after them, is a history that was abandoned, not the run's. Keeping
    the old points past the last step logged again made one curve of two runs (a restarted, healthy run at steps
    0-200, then the diverged run it replaced at steps 200-500, judged as diverged). A step goes back for a resumption
    when the next step logged is no further than the steps logged before it (the run logs them again), and at most
    RESUMES_AT_MOST times (or RESUME_SHARE of the steps); a lone point out of order (the last point too), or steps
    that go back more often, are sorted in with the last value of each step kept.
    """
    if steps.size < 2 or not bool(np.any(steps[1:] < steps[:-1])):  # never goes back: no resumption
        return one_of_each(steps, last=True)
    stretches = np.flatnonzero(np.append(steps[1:] != steps[:-1], True))  # the last point of each stretch of one step
    return stretches[_timeline(steps[stretches])]


class StepCuts:
    """:func:`last_per_step` worked out once per steps array that several series share (the series of one kind of
    record share their steps: cut once, the cut shared). Given ``shared`` arrays, steps cut equal to one of them, or to
    steps cut before, are that array: equal steps, one array."""

    __slots__ = ("_done", "_shared")

    def __init__(self, shared: list[np.ndarray] | None = None) -> None:
        self._done: dict[Hashable, tuple[np.ndarray | None, np.ndarray, np.ndarray]] = {}
        self._shared = shared

    def cut(self, key: Hashable, steps: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
        """What keeps one value per step of ``steps`` (:func:`last_per_step`) and the steps it leaves, worked out on the
        first call with ``key`` (an array's id will do: the steps are held, so it is not reused)."""
        found = self._done.get(key)
        if found is None:
            keep = last_per_step(steps)
            kept = steps if keep is None else steps[keep]
            if self._shared is not None:
                same = next((s for s in self._shared if s.size == kept.size and np.array_equal(s, kept)), None)
                if same is None:
                    self._shared.append(kept)
                else:
                    kept = same
            found = self._done[key] = (keep, kept, steps)
        return found[0], found[1]


def _timeline(steps: np.ndarray) -> np.ndarray:
    """:func:`last_per_step` of steps that go back somewhere and never repeat the step before them: positions, in
    step order."""
    kept: np.ndarray | None = None
    rewinds = np.flatnonzero(steps[1:] < steps[:-1]) + 1
    if rewinds.size <= max(RESUMES_AT_MOST, int(RESUME_SHARE * steps.size)):
        highest = np.maximum.accumulate(steps)
        after = np.minimum(rewinds + 1, steps.size - 1)
        # a resumption logs on from where it went back, below the highest step before: a last point alone is one
        # stray value (MLflow's log_metric without a step logs at step 0), sorted in, not a new run
        resumes = rewinds[(rewinds < steps.size - 1) & (steps[after] <= highest[rewinds - 1])]
        if resumes.size:
            # a point is left out when a resumption after it logs its step or an earlier one: each point against the
            # lowest step a resumption logs after it, the minimum of every suffix, in one backwards pass
            cuts = np.full(steps.size + 1, INT64_MAX, dtype=np.int64)
            cuts[resumes] = steps[resumes]
            lowest_after = np.minimum.accumulate(cuts[::-1])[::-1][1:]
            last = int(resumes[-1])  # from the last resumption on, no point has one after it, whatever its step
            kept = np.concatenate((np.flatnonzero(steps[:last] < lowest_after[:last]), np.arange(last, steps.size)))
            steps = steps[kept]
            if bool(np.all(steps[1:] > steps[:-1])):
                return kept
    keep = one_of_each(steps, last=True)  # out of order: sorted, the last value of each step kept
    if keep is None:
        return np.arange(steps.size) if kept is None else kept
    return keep if kept is None else kept[keep]


def one_of_each(steps: np.ndarray, last: bool) -> np.ndarray | None:
    """What keeps one entry of each step (its last, or its first, in the order given), steps ascending: a mask when
    the steps never step back (an eval record beside the training one repeats a step: no sort needed), else the
    positions in step order; None when the steps already rise strictly. Comparisons only, no differences: at ten
    million steps each difference is an 80 MB array."""
    if steps.size < 2:
        return None
    later, earlier = steps[1:], steps[:-1]
    if bool(np.all(later > earlier)):
        return None
    if bool(np.all(later >= earlier)):
        changes = later != earlier
        return np.append(changes, True) if last else np.insert(changes, 0, True)
    order = np.argsort(steps, kind="stable")
    ordered = steps[order]
    changes = ordered[1:] != ordered[:-1]
    return order[np.append(changes, True) if last else np.insert(changes, 0, True)]


class GrowingSeries:
    """Append-only ``(step, value)`` columns with amortised O(1) appends.

    Steps normally arrive in order. The same step again overwrites the last
    value; an earlier step (a resumed or restarted run, or steps out of order)
    marks the series to be cut to one value per step when it is frozen (see
    :func:`last_per_step`).
    """

    __slots__ = ("_steps", "_values", "n", "_ordered", "raw")

    def __init__(self, capacity: int = 64) -> None:
        self._steps = np.empty(capacity, dtype=np.int64)
        self._values = np.empty(capacity, dtype=np.float64)
        self.n = 0
        self._ordered = True
        self.raw: dict[int, str] = {}

    def append(self, step: int, value: float, raw: str | None = None) -> None:
        n = self.n
        if n and step <= self._steps[n - 1]:
            if step == self._steps[n - 1]:
                self._values[n - 1] = value
                self._note_raw(step, raw)
                return
            self._ordered = False
        if n == self._steps.size:
            self._steps = np.concatenate([self._steps, np.empty(n, dtype=np.int64)])
            self._values = np.concatenate([self._values, np.empty(n, dtype=np.float64)])
        self._steps[n] = step
        self._values[n] = value
        self.n = n + 1
        self._note_raw(step, raw)

    def _note_raw(self, step: int, raw: str | None) -> None:
        if raw is not None:
            self.raw[step] = raw
        elif self.raw:
            self.raw.pop(step, None)

    def freeze(self, copy: bool = True) -> Series:
        """The series so far; ``copy=False`` gives views for a live snapshot."""
        steps, values = self._steps[: self.n], self._values[: self.n]
        if not self._ordered:
            keep = last_per_step(steps)
            steps, values = steps[keep], values[keep]  # each step's last value, of the last timeline
            raw = {}
            if self.raw:  # a few steps' texts: looked up in the steps kept, not a set of them all
                wanted = np.fromiter(self.raw, dtype=np.int64, count=len(self.raw))
                raw = {step: self.raw[step] for step, inside in zip(wanted.tolist(), np.isin(wanted, steps).tolist()) if inside}
            return Series(steps, values, raw)
        if copy:
            steps, values = steps.copy(), values.copy()
        return Series(steps, values, dict(self.raw) if self.raw else {})


class RunBuilder:
    """Collects ``(series, step, value)`` triples from a reader and freezes them into a Run.

    The same builder serves a whole-file read and a live one (``watch``, the
    HF callback): appends are amortised O(1), and ``build(copy=False)`` makes
    a snapshot from views without copying the history.
    """

    def __init__(self, path: Path | str, fmt: str) -> None:
        self.path = path
        self.format = fmt
        self._series: dict[str, GrowingSeries] = {}
        self.checkpoints: list[Checkpoint] = []
        self.notes: list[str] = []
        self.lines: dict[int, int] = {}
        self.step_lines: StepLines | DeferredStepLines | None = None
        """The lines of a columnar read, set whole (``lines`` is the record-at-a-time path's)."""
        self._frozen: dict[str, Series] = {}
        self.runtime_s: float | None = None
        self.max_steps: int | None = None
        self.nonfinite_added = 0
        """How many non-finite values were added so far: a live judge looks at once when it grows."""

    def mark_line(self, step: int, line: int) -> None:
        """Remember the first line (1-based) where a record of ``step`` appears."""
        self.lines.setdefault(step, line)

    def add(self, series: str, step: int, value: Value) -> float | None:
        """Record one logged value; returns it as a float (None when the cell was empty)."""
        parsed = parse_number(value)
        if parsed is None:
            return None
        number, raw = parsed
        column = self._series.get(series)
        if column is None:
            column = self._series[series] = GrowingSeries()
        column.append(step, number, raw)
        if not math.isfinite(number):
            self.nonfinite_added += 1
        return number

    def add_time(self, step: int, seconds: float | None) -> None:
        if seconds is not None:
            self.add("wall_time", step, seconds)

    def put(self, series: str, values: Series) -> None:
        """A whole series at once (a columnar read): steps ascending and unique. Its arrays become the Run's; build
        writes only into a ``wall_time`` series' values (the clock shifted to zero), so that one must be the reader's
        own, while steps may be shared between series."""
        self._frozen[series] = values

    def names(self) -> list[str]:
        return list(self._series) + list(self._frozen)

    def series(self, name: str, copy: bool = True) -> Series | None:
        if name in self._frozen:
            found = self._frozen[name]
            return found if len(found) else None
        column = self._series.get(name)
        if column is None or column.n == 0:
            return None
        return column.freeze(copy)

    def build(
        self,
        *,
        loss: str = "loss",
        loss_name: str | None = None,
        eval_names: Mapping[str, str] | None = None,
        metrics: Mapping[str, tuple[str, str]] | None = None,
        sources: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
        copy: bool = True,
        **meta: object,
    ) -> Run:
        """Freeze into a Run.

        ``loss`` is the key of the series that is the training loss and
        ``loss_name`` what the log calls it; ``eval_names`` maps series keys to
        eval-set names; ``sources`` maps a Run field (``learning_rate``, ...)
        to the series key that holds it when that is not the field's own name;
        ``labels`` maps series keys to what the log calls them, for messages.
        ``copy=False`` makes a live snapshot: its series are views of the
        builder's buffers, valid as long as nothing earlier than the last step
        is logged again.

        A series in which no value is a number (``lorem``, ``ipsum``) is not a
        metric: as the loss it is an InputError, any other is left out with a
        note. One with numbers among its words keeps the words as NaN evidence.
        """
        keys = dict(sources or {})
        metrics = dict(metrics or {})
        names = {**dict(labels or {}), **dict(eval_names or {}), **{k: label for k, (label, _) in metrics.items()}, loss: loss_name or loss}
        notes = list(self.notes)

        def get(field: str) -> Series | None:
            key = keys.get(field, field)
            found = self.series(key, copy)
            words = _words(found)
            if words is None:
                return found
            label = names.get(key, field)
            if key == loss:
                raise InputError(self.path, f"has a loss column '{label}' that holds no number ({words}): not a training loss")
            notes.append(f"'{label}' holds no number ({words}) and was left out")
            return None

        wall = get("wall_time")
        if wall is not None and len(wall):  # the clock from zero: in place in a copy of the builder's own (or a put array)
            start = float(wall.values.min())
            wall = Series(wall.steps, np.subtract(wall.values, start, out=wall.values if copy else None))
        loss_series = get(loss)
        evals = {label: s for key, label in (eval_names or {}).items() if (s := get(key)) is not None}
        eval_metrics, metric_goals, unjudged = metric_fields({label: (get(key), goal) for key, (label, goal) in metrics.items()})
        notes.extend(unjudged)
        meta.setdefault("runtime_s", self.runtime_s)
        meta.setdefault("max_steps", self.max_steps)
        return Run(
            path=str(self.path),
            format=self.format,
            loss=loss_series,
            eval_losses=evals,
            eval_metrics=eval_metrics,
            metric_goals=metric_goals,
            learning_rate=get("learning_rate"),
            grad_norm=get("grad_norm"),
            wall_time=wall,
            step_time=get("step_time"),
            loader_time=get("loader_time"),
            checkpoints=tuple(sorted(self.checkpoints, key=lambda c: (c.step, c.best, c.path))),
            loss_name=loss_name or loss,
            notes=tuple(notes),
            step_lines=(self.step_lines if self.step_lines is not None else StepLines.from_dict(self.lines)) if copy else self.lines,
            **meta,  # type: ignore[arg-type]
        )


def metric_fields(found: Mapping[str, tuple[Series | None, str]]) -> tuple[dict[str, Series], dict[str, str], list[str]]:
    """A Run's ``eval_metrics`` and ``metric_goals`` from each eval metric's name to its series (None when it has none)
    and goal, sorted by name; and the note naming those whose goal is ``unknown`` (read by no rule), if any."""
    judged = {name: pair for name, pair in sorted(found.items()) if pair[1] != "unknown" and pair[0] is not None}
    note = unjudged_note(name for name, (_, goal) in found.items() if goal == "unknown")
    return {name: series for name, (series, _) in judged.items()}, {name: goal for name, (_, goal) in judged.items()}, [note] if note else []  # type: ignore[misc]


def _words(series: Series | None) -> str | None:
    """The first words of a series with no number in it, quoted for a message; None when it has a number (or is absent)."""
    if series is None or len(series.raw) < len(series):
        return None
    raw = series.raw
    texts: dict[str, None] = {}
    for step in series.steps.tolist():
        text = raw.get(step)
        if text is None:
            return None
        texts.setdefault(text, None)
    shown = [repr(t) for t in list(texts)[:3]]
    return ", ".join(shown[:2]) + (", ..." if len(shown) > 2 else "")


class EmptyLog(InputError):
    """A log with nothing but whitespace in it ("is empty"): a reader of several files may skip one."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(path, "is empty")


def _unreadable(path: Path | str, exc: OSError) -> InputError:
    return InputError(path, f"cannot be read: {exc.strerror or exc}")


SPECIAL_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
"""How a file that is not a regular file is named in a message, by the test of its mode."""


def special_kind(mode: int) -> str:
    """What a file of ``mode`` that is neither a regular file nor a directory is ("a FIFO", "a character device"...)."""
    return next((what for test, what in SPECIAL_KINDS if test(mode)), "a special file")


@contextmanager
def open_log(path: Path, pipe: bool = False) -> Iterator[BinaryIO]:
    """A regular file opened for binary reading; failing to open it, or anything else (a FIFO, whose open blocks
    until a writer comes, maybe never; a device, which may never end), is an InputError. ``pipe``: a FIFO is read
    too, by a reader that reads its input once, as it comes (``<(...)`` always has a writer)."""
    try:
        info = path.stat()
    except OSError as exc:
        raise _unreadable(path, exc) from None
    except ValueError as exc:  # a NUL byte in the name
        raise InputError(path, f"cannot be read: {exc}") from None
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode) or (pipe and stat.S_ISFIFO(info.st_mode))):  # a directory fails to open
        pipe = ": a pipe is read once, as it is written, and trainproof reads a file more than once; save it to a file" if stat.S_ISFIFO(info.st_mode) else ""
        raise InputError(path, f"is not a regular file ({special_kind(info.st_mode)}){pipe}")
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise _unreadable(path, exc) from None
    with handle:
        yield handle


_CONTROL_BYTES = bytes(byte for byte in range(32) if byte not in (9, 10, 12, 13))


def mostly_binary(head: bytes, share: float) -> bool:
    """Whether more than ``share`` of these bytes are control bytes (other than tab, LF, FF and CR) or not UTF-8: the
    head of a file that is not text. (The control bytes are counted by deleting them, in C: a Python loop over a 64 KiB
    head cost 4 ms a manifest.)"""
    control = len(head) - len(head.translate(None, _CONTROL_BYTES))
    undecodable = head.decode("utf-8", errors="replace").count("\ufffd")
    return control > share * len(head) or undecodable > share * len(head)


def read_block(handle: BinaryIO, size: int, path: Path | str) -> bytes:
    """Up to ``size`` bytes; a read error (EIO, a file removed under a network mount) is an InputError."""
    try:
        return handle.read(size)
    except OSError as exc:
        raise _unreadable(path, exc) from None


def iter_lines(path: Path, first_block: int = BLOCK_BYTES, seen: set[str] | None = None) -> Iterator[tuple[int, str, bool]]:
    """The lines of a log as ``(number, text, ended)``, read in blocks: memory stays bounded whatever the file holds.

    Lines end at a newline (a trailing CR is dropped, so CRLF logs read the
    same) and are decoded as UTF-8, a bad byte becoming U+FFFD. ``ended`` is
    False only for a last line with no newline, which a writer may still be
    writing. A line longer than MAX_LINE_BYTES is an InputError as soon as it
    is that long, so 2 GB of zero bytes (or ``/dev/zero``) costs one line's
    worth of memory, not the file's; a file of nothing but whitespace "is
    empty". ``first_block``: the bytes read first (less for a reader that wants only the first lines; the rest are
    read BLOCK_BYTES at a time). ``seen``, when given, gets ``"cr"`` if a line held a CR (before it was dropped) and
    ``"replaced"`` if one held U+FFFD once decoded (a byte that is not UTF-8, or the character itself).
    """
    for first, texts, ended in iter_line_blocks(path, first_block, seen):
        for number, text in enumerate(texts, first):
            yield number, text, ended


def lines_flagged(data: bytes, table: bytes, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per line [start, end) of ``data``, whether any of its bytes is flagged by the translation ``table`` (256 bytes,
    1 for a flagged byte, 0 for a newline): one pass over the bytes (a ``translate``, then a reduceat from each line's
    start), not the position of every flagged byte, whatever share of them is flagged."""
    found = np.zeros(starts.size, dtype=bool)
    filled = ends > starts
    if filled.any():  # each filled line's segment runs to the next one's start: newlines and empty lines add nothing
        found[filled] = np.logical_or.reduceat(np.frombuffer(data.translate(table), dtype=np.bool_), starts[filled])
    return found


COUNT_STRIDE = 256 * 1024
"""How much of a block count_byte compares at a time: its flags stay in the CPU's cache."""


def count_byte(data: bytes | memoryview, byte: bytes) -> int:
    """How many times ``byte`` (one byte; any longer string is counted by ``bytes.count``) occurs in ``data`` (bytes,
    or a memoryview of them: a part of a large text without a copy). numpy compares a stride at a time into one reused array of flags:
    over a 64 MiB block that is 3-4x faster than ``bytes.count``, which at ten million lines counting newlines and
    colons was 0.7 s of the reading."""
    if len(data) <= COUNT_STRIDE or len(byte) != 1:
        return bytes(data).count(byte)
    content = np.frombuffer(data, dtype=np.uint8)
    flags = np.empty(COUNT_STRIDE, dtype=bool)
    total = 0
    for at in range(0, content.size, COUNT_STRIDE):
        part = content[at : at + COUNT_STRIDE]
        found = flags[: part.size]
        np.equal(part, byte[0], out=found)
        total += int(np.count_nonzero(found))
    return total


def iter_line_blocks(path: Path, first_block: int = BLOCK_BYTES, seen: set[str] | None = None) -> Iterator[tuple[int, list[str], bool]]:
    """The lines of :func:`iter_lines`, a block at a time: ``(number of the first, texts, ended)``, for a reader that
    handles lines in bulk (100,000 transcripts) rather than one by one. ``seen``: as for :func:`iter_lines`."""
    number, pending, blank = 0, b"", True
    size = first_block
    with open_log(path) as handle:
        while block := read_block(handle, size, path):
            size = BLOCK_BYTES
            blank = blank and not block.strip()
            pieces = (pending + block if pending else block).split(b"\n")
            pending = pieces.pop()
            over = None
            if pieces and max(map(len, pieces)) > MAX_LINE_BYTES:
                over = next(k for k, piece in enumerate(pieces) if len(piece) > MAX_LINE_BYTES)
                pieces = pieces[:over]
            if pieces:
                # a block's lines decoded at once (a newline never falls inside a UTF-8 sequence, so bad bytes are
                # replaced exactly as line by line): at 100,000 short lines, a decode per line was most of the reading
                decoded = b"\n".join(pieces).decode("utf-8", errors="replace")
                texts = decoded.split("\n")
                if "\r" in decoded:
                    texts = [text.rstrip("\r") for text in texts]
                    if seen is not None:
                        seen.add("cr")
                if seen is not None and "\ufffd" in decoded:
                    seen.add("replaced")
                yield number + 1, texts, True
                number += len(texts)
            if over is not None:
                raise too_long(path, number + 1)
            if len(pending) > MAX_LINE_BYTES:
                raise too_long(path, number + 1)
    if blank:
        raise EmptyLog(path)
    if pending:
        last = pending.decode("utf-8", errors="replace")
        if seen is not None:
            seen.update(name for name, char in (("cr", "\r"), ("replaced", "\ufffd")) if char in last)
        yield number + 1, [last.rstrip("\r")], False


COLUMN_BLOCK_BYTES = 64 * 1024 * 1024
"""The most of a long log read as columns that is parsed at a time: large enough that the parser's threads share
the work and a call's cost is spread thin, small enough that the block and its parsed columns are a small part of a
long run's arrays."""
STEADY_BLOCK_BYTES = 16 * 1024 * 1024
"""The first block is 1-2 MiB (a file that is junk past its first lines is refused having read little of it), the next
ones this size; past it, each is an eighth of what was read before it, up to COLUMN_BLOCK_BYTES. Blocks, not the rest
of the file at once: each block's memory is reused by the next, where one read of a 120 MB log is 120 MB of fresh pages
(on a virtual machine, a tenth of a second, and twice the peak memory); and a block in proportion to the file, so a
ten-million-line log is parsed in tens of calls, not hundreds. (Blocks doubling from the first cost a call of the
parser each, tens of milliseconds, for nothing.)"""


def iter_blocks(path: Path, size: int = COLUMN_BLOCK_BYTES) -> Iterator[tuple[int, bytes, bool, int]]:
    """The complete lines of a log in blocks as ``(number of the first line, bytes ending with a newline, True, how
    many lines)``, then a last line with no newline as ``(number, bytes, False, 1)``. The first block is 1-2 MiB, the
    next ones grow up to ``size`` (see STEADY_BLOCK_BYTES).

    The limits of :func:`iter_lines` hold: a line longer than MAX_LINE_BYTES is an InputError (the lines before it
    are handed over first), and a file of nothing but whitespace "is empty".
    """
    number, pending, blank = 1, b"", True
    with open_log(path) as handle:
        sizes = _block_sizes(min(size, 2 * MAX_LINE_BYTES), size)
        while block := read_block(handle, next(sizes), path):
            blank = blank and not block.strip()
            if pending:
                data = pending + block
            elif len(block) > MAX_LINE_BYTES and (back := len(block) - block.rfind(b"\n") - 1) < len(block):
                # a partial last line is read again with the next block, not copied: each copy of a 64 MiB block
                # costs as much as polars takes to parse a tenth of it
                data = block
                if back:
                    handle.seek(-back, os.SEEK_CUR)
                    data = block[: len(block) - back]
            else:
                data = block
            cut = data.rfind(b"\n") + 1
            complete, pending = (data, b"") if cut == len(data) else (data[:cut], data[cut:])
            if complete:
                if _may_hold_a_long_line(complete):
                    ends = np.flatnonzero(np.frombuffer(complete, dtype=np.uint8) == 10)
                    over = np.flatnonzero(np.diff(ends, prepend=-1) - 1 > MAX_LINE_BYTES)
                    if over.size:
                        k = int(over[0])
                        if k:
                            yield number, complete[: int(ends[k - 1]) + 1], True, k
                        raise too_long(path, number + k)
                count = count_byte(complete, b"\n")
                yield number, complete, True, count
                number += count
            if len(pending) > MAX_LINE_BYTES:
                raise too_long(path, number)
    if blank:
        raise EmptyLog(path)
    if pending:
        yield number, pending, False, 1


def _block_sizes(first: int, most: int) -> Iterator[int]:
    """How much iter_blocks reads each time: ``first``, then STEADY_BLOCK_BYTES, growing to an eighth of what was read
    before, up to ``most`` (see STEADY_BLOCK_BYTES)."""
    yield first
    read = first
    while True:
        want = min(most, max(STEADY_BLOCK_BYTES, read // 8))
        yield want
        read += want


def _may_hold_a_long_line(data: bytes) -> bool:
    """Whether some stretch of half MAX_LINE_BYTES has no newline, which a line longer than MAX_LINE_BYTES must
    contain (a few searches that each stop at the first newline, where measuring every line reads the whole block)."""
    half = MAX_LINE_BYTES // 2
    return any(data.find(b"\n", at, at + half) < 0 for at in range(0, len(data) - half + 1, half))


def too_long(path: Path | str, number: int) -> InputError:
    return InputError(path, f"line {number} is longer than {size_text(MAX_LINE_BYTES)}: no log, manifest or transcript line is that long")


def read_document(path: Path) -> str:
    """A log read whole (a JSON document), refused beyond MAX_DOCUMENT_BYTES before it is read."""
    return read_document_bytes(path).decode("utf-8", errors="replace")


def read_document_bytes(path: Path) -> bytes:
    """The bytes of a log read whole, refused beyond MAX_DOCUMENT_BYTES before it is read."""
    limit = MAX_DOCUMENT_BYTES
    with open_log(path) as handle:
        try:
            size = os.fstat(handle.fileno()).st_size
        except OSError as exc:
            raise _unreadable(path, exc) from None
        if size <= limit:
            data = read_block(handle, limit + 1, path)  # bounded even when the size lies (a file still growing)
            size = len(data)
    if size > limit:
        raise InputError(path, f"is {size_text(size)}, over the {size_text(limit)} limit for a log read whole (a JSON document)")
    if not data or data.isspace():  # not data.strip(), which copies a document that ends in a newline
        raise EmptyLog(path)
    return data


def load_json(path: Path | str, text: str, where: str = "") -> object:
    """JSON text parsed, every way it can fail an InputError.

    ``where`` names the line of a JSON Lines log; without it ``text`` is a
    whole document, where an error at its very end means it was cut short.
    Python's decoder also fails, outside JSONDecodeError, on nesting deeper
    than its recursion limit and on integers of more than 4,300 digits.
    """
    subject = f"{where} " if where else ""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if where:
            problem = f"{where} is not valid JSON: {exc.msg}"
        elif exc.pos >= len(text.rstrip()) - 1:
            problem = "is truncated: the JSON ends before the document is complete"
        else:
            problem = f"is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    except RecursionError:
        problem = f"{subject}is nested too deeply"
    except ValueError:
        problem = f"{subject}has a number too large to read"
    raise InputError(path, problem)
