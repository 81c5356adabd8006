"""Property-based fuzz test: hostile and careless input for every reader, every renderer and the CLI (issue 7).

Inputs are valid seed logs of every format (HF ``trainer_state.json``, JSONL,
Lightning and Keras CSV, Coqui ``trainer_0_log.txt``, TensorBoard event files
written here by hand, MLflow run folders), mutated: values and keys replaced
by hostile ones (``inf``, ``nan``, ``1e300``, ``2**70``, 5,000-digit numbers,
deep nesting, ``\\n::error::X\\n``, CR, ``ESC[2J``, lone surrogates,
non-UTF-8 bytes), TensorBoard fields of the wrong wire type, then bytes
flipped, inserted, deleted, truncated and spliced; plus pure random bytes,
odd file-system layouts (symlink loops, empty folders), hostile file names
and mangled ``--config`` files. The invariants:

* a reader returns a Run or raises :class:`trainproof.io.errors.TrainproofError`
  (an input error), whatever the bytes and whatever ``--format`` forces;
* every renderer renders every report without raising; written as the CLI
  writes it, JSON and SARIF parse as JSON and JUnit as XML; the plain text
  and the GitHub annotations carry no raw CR or ESC, and no line of them
  starts with ``::`` unless it is one of trainproof's own annotations;
* the CLI (``epoch``, ``compare``, every output option, ``--github``,
  ``--config``) exits 0, 1 or 2, never says "internal error", never prints a
  traceback or a warning, prints stderr as whole ``trainproof: ...`` lines,
  finishes in bounded time, leaves every input untouched, creates or changes
  nothing in its working folder but the outputs it was asked for, and writes
  those even when one of several inputs cannot be read;
* (in a subprocess with a 1.5 GiB address-space limit and a timeout) a 2 GB
  sparse log, a FIFO, ``/dev/zero``, ``/dev/urandom`` and a 16 MB line are
  refused with one stderr line and exit 2, in bounded memory and time.

Besides the random search, a table puts every hostile value in the slots that
matter (step, loss, column or tag name) of every format on every run.

Budgets are hypothesis profiles registered in ``tests/conftest.py``: ``ci``
(the default: derandomized, about a minute on two cores) and ``long`` (20x
the examples, new ones each run)::

    pytest tests/test_fuzz.py                                # ci
    pytest tests/test_fuzz.py --hypothesis-profile=long      # long
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import re
import resource
import struct
import subprocess
import sys
import tempfile
import time
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.helpers import pb_field, tf_record  # noqa: E402
from trainproof.cli import main  # noqa: E402
from trainproof.commands import judge_compare, judge_epoch  # noqa: E402
from trainproof.io.errors import TrainproofError  # noqa: E402
from trainproof.render import RENDERERS, render  # noqa: E402
from trainproof.render.github import annotations  # noqa: E402
from trainproof.runs.readers import READERS, read_run  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
HF_FILES = sorted((REPO / "examples" / "gallery").glob("*/seed0/trainer_state.json")) + sorted((REPO / "tests" / "data").glob("*/trainer_state.json"))
GOOD_LOG = REPO / "examples" / "gallery" / "healthy" / "seed0" / "trainer_state.json"
CLI_SECONDS = 20.0  # one in-process CLI run on a fuzzed input of a few KB
SUBPROCESS_SECONDS = 30.0
ADDRESS_SPACE = 3 * 2**29  # 1.5 GiB

# ---------------------------------------------------------------------------
# Hostile material
# ---------------------------------------------------------------------------

INJECTION = "\n::error file=README.md,line=1::INJECTED\n"
HOSTILE_TEXT = (
    "inf", "-inf", "nan", "NaN", "Infinity", "1e300", "-1e300", "1e309", "3.5e38", str(2**63), str(2**70), str(-(2**63) - 1),
    "-0", "0", "9" * 5000, "1" + "0" * 4400, "0x1F", "1_000", "", " ", "lorem", "ipsum", INJECTION, "::error::X", "\r",
    "\x1b[2J", "\x1b[32mPASS\x1b[0m", "\u202e", "\udc80", "\udcff\udcfe", "\x00", "\t", ",", '"', "%0A", "\u2028",
)  # fmt: skip
"""Replacements for a number or a word of a text log (lone surrogates become non-UTF-8 bytes)."""

HOSTILE_JSON = (
    "Infinity", "-Infinity", "NaN", "1e300", "-1e300", "1e999", "-0", "0", str(2**63), str(2**70), "9" * 5000, "-" + "9" * 4400,
    "1" + "0" * 400 + ".5", "null", "true", "false", '"-0"', '"inf"', '"nan"', '"1e300"', '"lorem"', '""', '"\\n::error::X\\n"',
    json.dumps(INJECTION), '"\\r"', '"\\u001b[2J"', '"\\udc80"', '"\\ud800"', "[]", "{}", "[" * 5000 + "]" * 5000,
    '{"a":' * 3000 + "1" + "}" * 3000, "[1e300, -1e300]",
)  # fmt: skip
"""Raw JSON text to put where a seed has a value."""

HOSTILE_KEYS = (
    INJECTION, "\n::error::INJECTED\n", "loss\r", "\r::error::X", "\x1b[2J", "\x1b[32mPASS\x1b[0m", "\udc80", "\ud800", "\u202eloss",
    "::warning::k", "", "loss ", "LOSS", "train/loss\n", "eval_\n::error::x\n_loss", "eval_\x1b[2J_loss", "%0A",
)  # fmt: skip
"""Keys, column names, metric names and TensorBoard tags."""

HOSTILE_BYTES = (
    b"\n::error::X\n", INJECTION.encode(), b"\r", b"\x1b[2J", b"\xff\xfe", b"\xed\xb2\x80", b"\xc3", b"\x00", b"\n", b"\xe2\x80\xae",
    b'"\\udc80"', b"NaN", b"Infinity", b"1e300", b"9" * 5000, b"[" * 3000, b"\r\n", b"\x80" * 64,
)  # fmt: skip
"""Byte strings to insert anywhere."""

HOSTILE_NAMES = (
    "x\n::error file=README.md,line=1::INJECTED\n", "::error::X", "cr\rname", "\x1b[2J", "\x1b[32mPASS\x1b[0m",
    os.fsdecode(b"caf\xe9"), os.fsdecode(b"\xff\xfe"), "\u202egol", "sp ace", "%0A%0D", "a" * 200, "-dash", "tab\t", "\u2028",
)  # fmt: skip
"""File and folder names the file system accepts (non-UTF-8 bytes as surrogate escapes)."""

PLAIN_NAMES = ("run", "log")

# ---------------------------------------------------------------------------
# Seeds: a valid log of every format
# ---------------------------------------------------------------------------


def curve(n: int, shape: str) -> list[float]:
    """A loss curve of n points: healthy decay, a blow-up half-way, or flat."""
    if shape == "diverging":
        return [2.0 * math.exp(-i / 8) + 0.3 if i < n // 2 else 0.3 * 1.5 ** (i - n // 2) for i in range(n)]
    if shape == "flat":
        return [2.3 + 0.001 * (i % 3) for i in range(n)]
    return [0.5 + 2.0 * math.exp(-6 * i / max(n, 1)) + 0.01 * math.sin(i) for i in range(n)]


def hf_seed(n: int, shape: str) -> dict:
    """A trainer_state.json as the HF Trainer writes it."""
    history: list[dict] = []
    for i, loss in enumerate(curve(n, shape)):
        step = (i + 1) * 10
        history.append({"epoch": step / (10 * n), "grad_norm": 1.0 + 0.1 * i, "learning_rate": 2e-4 * (1 - i / n), "loss": loss, "step": step})
        if (i + 1) % 5 == 0:
            history.append({"epoch": step / (10 * n), "eval_loss": loss + 0.05, "eval_runtime": 1.5, "step": step})
    history.append({"epoch": 1.0, "step": 10 * n, "total_flos": 1.0e15, "train_loss": 1.0, "train_runtime": 12.5, "train_samples_per_second": 80.0})
    return {
        "best_model_checkpoint": f"out/checkpoint-{10 * n}",
        "epoch": 1.0,
        "global_step": 10 * n,
        "log_history": history,
        "max_steps": 10 * n,
        "train_batch_size": 8,
    }


def jsonl_seed(n: int, shape: str) -> list[dict]:
    records: list[dict] = []
    for i, loss in enumerate(curve(n, shape)):
        records.append({"step": (i + 1) * 5, "loss": loss, "lr": 1e-3, "grad_norm": 0.5 + 0.01 * i, "time": 1_700_000_000 + 2 * i})
        if (i + 1) % 4 == 0:
            records.append({"step": (i + 1) * 5, "val_loss": loss + 0.1})
    return records


def csv_seed(n: int, shape: str, keras: bool) -> str:
    if keras:  # Keras CSVLogger: one row per epoch
        rows = ["epoch,learning_rate,loss,val_loss"]
        rows += [f"{i},0.001,{v!r},{v + 0.1!r}" for i, v in enumerate(curve(n, shape))]
    else:  # Lightning CSVLogger: sparse rows, training and validation apart
        rows = ["epoch,step,lr-AdamW,train_loss_step,val_loss"]
        for i, v in enumerate(curve(n, shape)):
            rows.append(f"0,{i * 10},0.0003,{v!r},")
            if (i + 1) % 5 == 0:
                rows.append(f"0,{i * 10},,,{v + 0.1!r}")
    return "\n".join(rows) + "\n"


COQUI_HEAD = " > Training Environment:\n | > Backend: Torch\n\x1b[4m\x1b[1m > EPOCH: 0/1000\x1b[0m\n\x1b[1m > TRAINING (2026-02-11 01:08:02) \x1b[0m\n"
COQUI_STEP = (
    "\x1b[1m   --> TIME: 2026-02-11 01:{minute:02d}:00 -- STEP: {i}/100 -- GLOBAL_STEP: {g}\x1b[0m\n"
    "     | > loss: {loss}  (0.05)\n     | > current_lr: 5e-06\n     | > grad_norm: 1.5  (1.5)\n     | > step_time: 0.05  (0.05)\n"
)
COQUI_TAIL = (
    "\x1b[1m > EVALUATION \x1b[0m\n  \x1b[1m--> EVAL PERFORMANCE\x1b[0m\n     | > avg_loss: {loss} \x1b[0m(-2.1)\n\n"
    " > BEST MODEL : /run/best_model_{last}.pth\n > CHECKPOINT : /run/checkpoint_{last}.pth\n"
)


def coqui_seed(n: int, shape: str) -> str:
    values = curve(n, shape)
    steps = "".join(COQUI_STEP.format(minute=i % 60, i=i, g=i * 50, loss=round(v, 6)) for i, v in enumerate(values))
    return COQUI_HEAD + steps + COQUI_TAIL.format(loss=round(values[-1] + 0.1, 6), last=(n - 1) * 50)


def mlflow_seed(n: int, shape: str) -> dict[str, str]:
    """metrics/<name> files of ``<timestamp ms> <value> <step>`` lines."""
    values = curve(n, shape)
    return {
        "loss": "".join(f"{1_700_000_000_000 + s * 2000} {v!r} {s}\n" for s, v in enumerate(values)),
        "val_loss": "".join(f"{1_700_000_000_000 + s * 2000} {v + 0.1!r} {s}\n" for s, v in enumerate(values) if s % 5 == 4),
        "learning_rate": "".join(f"{1_700_000_000_000 + s * 2000} 0.001 {s}\n" for s in range(n)),
    }


# TensorBoard: TFRecords of Event protocol buffers, encoded by hand.


@dataclass
class Event:
    wall: float
    step: int
    tag: str
    value: float
    twist: str | None = None  # a wrong wire type or an unusual encoding, see encode_event


TWISTS = (None, "wall_varint", "step_bytes", "value_varint", "value_bytes", "tensor_double", "tensor_int64", "tensor_packed", "tensor_bad_dtype")


def encode_event(event: Event) -> bytes:
    tag = pb_field(1, 2, event.tag.encode("utf-8", "surrogatepass"))
    twist = event.twist
    if twist == "value_varint":
        scalar = pb_field(2, 0, 7)
    elif twist == "value_bytes":
        scalar = pb_field(2, 2, b"\x00\x00\x80\x3f")
    elif twist == "tensor_double":
        scalar = pb_field(8, 2, pb_field(1, 0, 2) + pb_field(4, 2, struct.pack("<d", event.value)))
    elif twist == "tensor_int64":
        scalar = pb_field(8, 2, pb_field(1, 0, 9) + pb_field(10, 0, 2**70))
    elif twist == "tensor_packed":
        scalar = pb_field(8, 2, pb_field(5, 2, b"\x00\x00\x80"))  # packed floats of a length that is not a multiple of 4
    elif twist == "tensor_bad_dtype":
        scalar = pb_field(8, 2, pb_field(1, 2, b"x") + pb_field(4, 2, b"\x00" * 4))
    elif abs(event.value) > 3.4e38 and math.isfinite(event.value):
        scalar = pb_field(2, 5, b"\x00\x00\x80\x7f")  # too big for a float32: +inf
    else:
        scalar = pb_field(2, 5, struct.pack("<f", event.value))
    summary = pb_field(1, 2, tag + scalar)
    wall = pb_field(1, 0, 1_700_000_000) if twist == "wall_varint" else pb_field(1, 1, struct.pack("<d", event.wall))
    step = pb_field(2, 2, b"\x01") if twist == "step_bytes" else pb_field(2, 0, event.step)
    return wall + step + pb_field(5, 2, summary)


def event_file(events: list[Event]) -> bytes:
    header = pb_field(1, 1, struct.pack("<d", 1_700_000_000.0)) + pb_field(3, 2, b"brain.Event:2")
    return tf_record(header) + b"".join(tf_record(encode_event(e)) for e in events)


def tensorboard_seed(n: int, shape: str, keras: bool) -> dict[str, list[Event]]:
    """Event files by relative path: HF style (one file, eval tags beside) or Keras style (train/ and validation/)."""
    values = curve(n, shape)
    if keras:
        train = [Event(1_700_000_000 + 60 * i, i, "epoch_loss", v) for i, v in enumerate(values)]
        validation = [Event(1_700_000_005 + 60 * i, i, "epoch_loss", v * 1.1) for i, v in enumerate(values)]
        return {"train/events.out.tfevents.1.host.1": train, "validation/events.out.tfevents.1.host.2": validation}
    events = []
    for i, v in enumerate(values):
        step = (i + 1) * 10
        events += [Event(1_700_000_000 + i, step, "train/loss", v), Event(1_700_000_000 + i, step, "train/learning_rate", 2e-4)]
        if (i + 1) % 5 == 0:
            events.append(Event(1_700_000_000 + i, step, "eval/loss", v + 0.05))
    return {"events.out.tfevents.1.host.0": events}


# ---------------------------------------------------------------------------
# Mutations
# ---------------------------------------------------------------------------

HOW_MANY = st.sampled_from((0, 1, 1, 2, 2, 3))
"""How many values, keys or fields of a seed a mutation replaces."""
HOLE = "@@hostile-value@@"
KEY_HOLE = "@@hostile-key@@"


def json_slots(obj: object) -> Iterator[tuple[object, object]]:
    """(container, key or index) of every value in a JSON document, depth first."""
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for key, value in list(items):
        yield obj, key
        yield from json_slots(value)


def json_dicts(obj: object) -> list[dict]:
    found = [obj] if isinstance(obj, dict) else []
    for container, key in json_slots(obj):
        value = container[key]  # type: ignore[index]
        if isinstance(value, dict):
            found.append(value)
    return found


@st.composite
def mutated_json(draw: st.DrawFn, document: object) -> tuple[object, list[str], list[str]]:
    """The document with some values and keys replaced by holes, and the raw JSON text each hole becomes."""
    document = copy.deepcopy(document)
    values: list[str] = []
    keys: list[str] = []
    for _ in range(draw(HOW_MANY)):
        how = draw(st.sampled_from(("value", "value", "value", "key", "new key", "drop")))
        slots = list(json_slots(document))
        if how == "value" and slots:
            container, key = slots[draw(st.integers(0, len(slots) - 1))]
            container[key] = f"{HOLE}{len(values)}"  # type: ignore[index]
            values.append(draw(st.sampled_from(HOSTILE_JSON)))
        elif how in ("key", "new key"):
            dicts = json_dicts(document)
            if not dicts:
                continue
            target = dicts[draw(st.integers(0, len(dicts) - 1))]
            if how == "key" and target:
                old = list(target)[draw(st.integers(0, len(target) - 1))]
                target[f"{KEY_HOLE}{len(keys)}"] = target.pop(old)
            else:
                target[f"{KEY_HOLE}{len(keys)}"] = draw(st.sampled_from((1.0, 0.5, "x", None)))
            keys.append(draw(st.sampled_from(HOSTILE_KEYS)))
        elif how == "drop" and slots:
            container, key = slots[draw(st.integers(0, len(slots) - 1))]
            if isinstance(container, dict):
                del container[key]
            else:
                container.pop(key)  # type: ignore[attr-defined]
    return document, values, keys


def dump_json(document: object, values: list[str], keys: list[str], indent: int | None = None) -> str:
    text = json.dumps(document, indent=indent, allow_nan=True)
    for i, raw in enumerate(values):
        text = text.replace(json.dumps(f"{HOLE}{i}"), raw)
    for i, key in enumerate(keys):
        text = text.replace(json.dumps(f"{KEY_HOLE}{i}"), json.dumps(key))
    return text


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
_WORD = re.compile(r"[A-Za-z_][A-Za-z_/-]*")


@st.composite
def mutated_text(draw: st.DrawFn, text: str) -> str:
    """Some numbers or words (values, keys, column names) of a text log replaced by hostile text."""
    for _ in range(draw(HOW_MANY)):
        pattern = draw(st.sampled_from((_NUMBER, _NUMBER, _WORD)))
        spans = [m.span() for m in pattern.finditer(text)]
        if not spans:
            continue
        start, end = spans[draw(st.integers(0, len(spans) - 1))]
        text = text[:start] + draw(st.sampled_from(HOSTILE_TEXT + HOSTILE_KEYS)) + text[end:]
    return text


def to_bytes(text: str) -> bytes:
    """UTF-8, with the lone surrogates U+DC80..U+DCFF turned into the non-UTF-8 bytes they stand for."""
    if re.search("[\ud800-\udc7f\udd00-\udfff]", text):
        return text.encode("utf-8", "surrogatepass")  # other lone surrogates: CESU-style bytes, not UTF-8 either
    return text.encode("utf-8", "surrogateescape")


SPLICE_POOL = (
    json.dumps(hf_seed(6, "healthy")).encode(),
    "\n".join(json.dumps(r) for r in jsonl_seed(6, "healthy")).encode(),
    csv_seed(6, "healthy", keras=False).encode(),
    coqui_seed(4, "healthy").encode(),
    mlflow_seed(6, "healthy")["loss"].encode(),
    event_file(tensorboard_seed(4, "healthy", keras=False)["events.out.tfevents.1.host.0"]),
)


@st.composite
def mutated_bytes(draw: st.DrawFn, data: bytes) -> bytes:
    """Bytes flipped, inserted, deleted, duplicated, spliced with another log, or cut short."""
    for _ in range(draw(st.sampled_from((0, 0, 0, 1, 1, 2, 3)))):  # often none, so that value mutations reach the parser
        how = draw(st.sampled_from(("flip", "insert", "delete", "duplicate", "splice", "truncate")))
        at = draw(st.integers(0, 2**20)) % (len(data) + 1)
        if how == "flip" and data:
            at %= len(data)
            data = data[:at] + bytes([data[at] ^ (1 << draw(st.integers(0, 7)))]) + data[at + 1 :]
        elif how == "insert":
            data = data[:at] + draw(st.one_of(st.sampled_from(HOSTILE_BYTES), st.binary(min_size=1, max_size=16))) + data[at:]
        elif how == "delete":
            data = data[:at] + data[at + draw(st.integers(1, 256)) :]
        elif how == "duplicate":
            data = data[:at] + data[at : at + draw(st.integers(1, 512))] * draw(st.integers(2, 8)) + data[at:]
        elif how == "splice":
            other = draw(st.sampled_from(SPLICE_POOL))
            cut = draw(st.integers(0, len(other)))
            data = data[:at] + other[cut:]
        elif how == "truncate":
            data = data[:at]
    return data


@st.composite
def mutated_events(draw: st.DrawFn, events: list[Event]) -> list[Event]:
    """TensorBoard events with hostile tags, steps, values or wire types."""
    events = [copy.copy(e) for e in events]
    for _ in range(draw(HOW_MANY)):
        if not events:
            break
        event = events[draw(st.integers(0, len(events) - 1))]
        how = draw(st.sampled_from(("tag", "step", "value", "twist")))
        if how == "tag":
            event.tag = draw(st.sampled_from(HOSTILE_KEYS + ("train/loss\r", "eval/\x1b[2J/loss", "lm loss")))
        elif how == "step":
            event.step = draw(st.sampled_from((2**63 - 1, 2**63, 2**64 - 1, -1, -(2**63), 2**70, 0)))
        elif how == "value":
            event.value = draw(st.sampled_from((math.inf, -math.inf, math.nan, 3.4e38, 1e300, -0.0, 1e-45)))
        else:
            event.twist = draw(st.sampled_from(TWISTS))
    return events


# ---------------------------------------------------------------------------
# Cases: a layout of files and the path handed to trainproof
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Link:
    """A symbolic link to ``to`` (relative to the link's folder)."""

    to: str


EMPTY_DIR = None
Entry = bytes | Link | None


@dataclass
class Case:
    kind: str
    files: dict[str, Entry]
    target: str
    fmt: str | None = None  # a --format to force (the CLI only; the readers are tried with every one)

    def __repr__(self) -> str:
        def short(entry: Entry) -> str:
            if isinstance(entry, bytes) and len(entry) > 400:
                return f"{entry[:200]!r} + ... + {entry[-120:]!r} ({len(entry)} bytes)"
            return repr(entry)

        files = ", ".join(f"{name!r}: {short(entry)}" for name, entry in self.files.items())
        return f"Case(kind={self.kind!r}, target={self.target!r}, fmt={self.fmt!r}, files={{{files}}})"

    def _repr_pretty_(self, printer, cycle: bool) -> None:  # how hypothesis prints a falsifying example
        printer.text(repr(self))


CANONICAL = {"hf": "trainer_state.json", "jsonl": "metrics.jsonl", "csv": "metrics.csv", "coqui": "trainer_0_log.txt"}
SUFFIX = {"hf": ".json", "jsonl": ".jsonl", "csv": ".csv", "coqui": "_trainer_0_log.txt"}


def names() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(PLAIN_NAMES), st.sampled_from(HOSTILE_NAMES))


@st.composite
def one_file_log(draw: st.DrawFn, kind: str, content: bytes) -> Case:
    """A single-file log, given directly under some name, or as the run folder that holds it."""
    name = draw(names())
    if draw(st.booleans()):
        path = f"{name}/{CANONICAL[kind]}"
        return Case(kind, {path: content}, name)
    path = name + SUFFIX[kind]
    return Case(kind, {path: content}, path)


@st.composite
def seed_shape(draw: st.DrawFn) -> tuple[int, str]:
    return draw(st.integers(3, 60)), draw(st.sampled_from(("healthy", "diverging", "flat")))


@st.composite
def hf_cases(draw: st.DrawFn) -> Case:
    if draw(st.booleans()):
        document = json.loads(draw(st.sampled_from(HF_FILES)).read_text())
    else:
        document = hf_seed(*draw(seed_shape()))
    text = dump_json(*draw(mutated_json(document)), indent=draw(st.sampled_from((None, 2))))
    return draw(one_file_log("hf", draw(mutated_bytes(to_bytes(text)))))


@st.composite
def jsonl_cases(draw: st.DrawFn) -> Case:
    records = jsonl_seed(*draw(seed_shape()))
    document, values, keys = draw(mutated_json(records))
    if draw(st.booleans()):
        text = dump_json(document, values, keys)  # a JSON array of records
    else:
        text = "".join(dump_json(record, values, keys) + "\n" for record in document)  # type: ignore[attr-defined]
    return draw(one_file_log("jsonl", draw(mutated_bytes(to_bytes(text)))))


@st.composite
def csv_cases(draw: st.DrawFn) -> Case:
    n, shape = draw(seed_shape())
    text = draw(mutated_text(csv_seed(n, shape, keras=draw(st.booleans()))))
    return draw(one_file_log("csv", draw(mutated_bytes(to_bytes(text)))))


@st.composite
def coqui_cases(draw: st.DrawFn) -> Case:
    n, shape = draw(seed_shape())
    text = draw(mutated_text(coqui_seed(min(n, 30), shape)))
    return draw(one_file_log("coqui", draw(mutated_bytes(to_bytes(text)))))


@st.composite
def mlflow_cases(draw: st.DrawFn) -> Case:
    metrics = mlflow_seed(*draw(seed_shape()))
    victim = draw(st.sampled_from(sorted(metrics)))
    contents = {name: to_bytes(text) for name, text in metrics.items()}
    contents[victim] = draw(mutated_bytes(to_bytes(draw(mutated_text(metrics[victim])))))
    if draw(st.integers(0, 4)) == 0:  # a hostile metric name
        contents[draw(st.sampled_from(HOSTILE_KEYS[:5] + HOSTILE_NAMES[:5]))] = contents.pop(victim)
    if draw(st.integers(0, 4)) == 0:  # one metric file is empty
        contents[draw(st.sampled_from(sorted(contents)))] = b""
    run = draw(names())
    if draw(st.integers(0, 3)) == 0:  # a single metric file given directly
        return Case("mlflow", {f"{run}/loss": contents.get("loss", b"")}, f"{run}/loss")
    files: dict[str, Entry] = {f"{run}/metrics/{name}": data for name, data in contents.items() if "/" not in name}
    files[f"{run}/meta.yaml"] = b"run_id: abc123\n"
    return Case("mlflow", files, run)


@st.composite
def tensorboard_cases(draw: st.DrawFn) -> Case:
    n, shape = draw(seed_shape())
    layout = tensorboard_seed(min(n, 30), shape, keras=draw(st.booleans()))
    run = draw(names())
    files: dict[str, Entry] = {}
    for relative, events in layout.items():
        files[f"{run}/{relative}"] = draw(mutated_bytes(event_file(draw(mutated_events(events)))))
    first = sorted(files)[0]
    if draw(st.integers(0, 3)) == 0:  # one event file given directly
        return Case("tensorboard", {first: files[first]}, first)
    return Case("tensorboard", files, run)


@st.composite
def random_cases(draw: st.DrawFn) -> Case:
    """Pure random bytes under a name that makes some reader take them."""
    data = draw(st.binary(max_size=2048))
    name = draw(names()) + draw(st.sampled_from((".jsonl", ".csv", ".json", ".txt", "", "/trainer_state.json", "/events.out.tfevents.1.h")))
    return Case("random", {name: data}, name)


SPECIAL_LAYOUTS: dict[str, tuple[dict[str, Entry], str]] = {
    "self-symlink": ({"loop.jsonl": Link("loop.jsonl")}, "loop.jsonl"),
    "dangling symlink": ({"gone.jsonl": Link("nowhere.jsonl")}, "gone.jsonl"),
    "symlink loop in a folder": ({"run/sub/up": Link(".."), "run/notes.txt": b"hello\n"}, "run"),
    "empty folder": ({"run": EMPTY_DIR}, "run"),
    "empty file": ({"log.jsonl": b""}, "log.jsonl"),
    "whitespace file": ({"log.csv": b" \n\t\r\n"}, "log.csv"),
    "folder named like a log": ({"log.jsonl/x": b"{}\n"}, "log.jsonl"),
    "several candidate logs": ({"run/a.jsonl": b'{"step": 1, "loss": 1}\n', "run/b.jsonl": b'{"step": 1, "loss": 1}\n'}, "run"),
    "empty metrics folder": ({"run/metrics": EMPTY_DIR}, "run"),
    "checkpoint folders": ({"run/checkpoint-99999999999999999999999/trainer_state.json": b'{"log_history": []}'}, "run"),
    "trainer_state.json is a folder": ({"run/trainer_state.json/x": b"1"}, "run"),
    "Git LFS pointer": (
        {"log.jsonl": b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"a" * 64 + b"\nsize 99999999999999999999999999\n"},
        "log.jsonl",
    ),
}


@st.composite
def special_cases(draw: st.DrawFn) -> Case:
    files, target = SPECIAL_LAYOUTS[draw(st.sampled_from(sorted(SPECIAL_LAYOUTS)))]
    return Case("special", dict(files), target)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    case = draw(
        st.one_of(
            hf_cases(), jsonl_cases(), csv_cases(), coqui_cases(), mlflow_cases(), tensorboard_cases(), random_cases(), special_cases()
        )
    )
    if draw(st.integers(0, 4)) == 0:
        case.fmt = draw(st.sampled_from(sorted(READERS)))
    return case


def write_case(case: Case, root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for relative, entry in case.files.items():
        path = root / relative
        if entry is EMPTY_DIR:
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(entry, Link):
            os.symlink(entry.to, path)
        else:
            path.write_bytes(entry)


def snapshot(root: Path) -> dict[str, tuple]:
    """Every path under root: its kind, and its size and content hash or link target."""
    found: dict[str, tuple] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, root)
            if os.path.islink(path):
                found[relative] = ("link", os.readlink(path))
            elif os.path.isdir(path):
                found[relative] = ("dir",)
            elif os.path.isfile(path) and os.path.getsize(path) > 2**20:  # a huge (sparse) file: its size and time will do
                found[relative] = ("file", os.path.getsize(path), os.stat(path).st_mtime_ns)
            elif os.path.isfile(path):
                data = Path(path).read_bytes()
                found[relative] = ("file", len(data), hashlib.sha256(data).hexdigest())
            else:
                found[relative] = ("other", os.lstat(path).st_mode)
    return found


def changed(before: dict[str, tuple], after: dict[str, tuple]) -> set[str]:
    return {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}


# ---------------------------------------------------------------------------
# What printed text may look like
# ---------------------------------------------------------------------------

OWN_ANNOTATION = re.compile(r"::(error|warning|notice) file=[^:\r\n]*?(,line=\d+)?,title=[^:\r\n]*::[^\r\n]*")
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def injection_problems(text: str, annotations_allowed: bool, colour: bool = False) -> list[str]:
    """Why this printed text could inject a workflow command or fool a terminal (empty when it cannot)."""
    problems = []
    if colour:
        text = _SGR.sub("", text)
    if "\r" in text:
        problems.append(f"a raw CR: {text[max(0, text.index(chr(13)) - 60) : text.index(chr(13)) + 20]!r}")
    if "\x1b" in text:
        problems.append(f"a raw ESC: {text[max(0, text.index(chr(27)) - 60) : text.index(chr(27)) + 20]!r}")
    for line in text.split("\n"):
        if line.lstrip().startswith("::") and not (annotations_allowed and OWN_ANNOTATION.fullmatch(line)):
            problems.append(f"a line that is a workflow command: {line[:200]!r}")
    return problems


def check_document(name: str, data: bytes) -> None:
    """An output as written is UTF-8, and parses when it is JSON, SARIF or JUnit XML."""
    text = data.decode("utf-8")
    if name in ("json", "sarif"):
        json.loads(text)
    elif name == "junit":
        ET.fromstring(data)


def is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def fuzz_settings(**extra: object):
    """The active profile's budget (ci or long), with these changes."""
    return settings(settings.default, **extra)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# (a) Readers
# ---------------------------------------------------------------------------


def check_readers(case: Case) -> None:
    with tempfile.TemporaryDirectory(prefix="tp-fuzz-") as tmp:
        write_case(case, Path(tmp))
        target = Path(tmp) / case.target
        for fmt in (None, *READERS):
            try:
                run = read_run(target, fmt)
            except TrainproofError:
                continue
            assert run.format in READERS


@fuzz_settings()
@given(case=cases())
def test_every_reader_returns_a_run_or_raises_an_input_error(case: Case):
    check_readers(case)


# ---------------------------------------------------------------------------
# (b) Renderers
# ---------------------------------------------------------------------------


def reports(target: Path, fmt: str | None) -> list:
    """epoch on the case, and compare with the case as the run and as the baseline."""
    built = []
    for judge in (
        lambda: judge_epoch([target], fmt=fmt),
        lambda: judge_compare([target], GOOD_LOG, fmt=fmt if fmt == "hf" else None),
        lambda: judge_compare([GOOD_LOG], target, fmt=fmt if fmt == "hf" else None),
    ):
        try:
            built.append(judge())
        except Exception:  # noqa: BLE001 - a reader's own failure is test (a)'s to report
            assume(False)
    return built


def check_renderers(case: Case) -> None:
    with tempfile.TemporaryDirectory(prefix="tp-fuzz-") as tmp:
        write_case(case, Path(tmp))
        for report in reports(Path(tmp) / case.target, case.fmt):
            for name in RENDERERS:
                options = {"base": tmp} if name == "sarif" else {}
                check_document(name, render(name, report, **options).encode("utf-8", "backslashreplace"))  # as the CLI writes it
            for colour in (False, True):
                problems = injection_problems(render("text", report, colour=colour), annotations_allowed=False, colour=colour)
                assert not problems, f"text report (colour={colour}): {problems}"
            problems = injection_problems(annotations(report, tmp), annotations_allowed=True)
            assert not problems, f"GitHub annotations: {problems}"


@fuzz_settings()
@given(case=cases())
def test_every_renderer_renders_every_report_safely(case: Case):
    check_renderers(case)


# ---------------------------------------------------------------------------
# (c) The CLI, in process
# ---------------------------------------------------------------------------

OUTPUT_OPTIONS = {"--json-file": "json", "--html": "html", "--sarif": "sarif", "--junit": "xml", "--markdown": "md"}
RENDERER_OF = {"json": "json", "html": "html", "sarif": "sarif", "xml": "junit", "md": "markdown"}


CONFIG_SEED = """[tool.trainproof]
select = ["TP-DIVERGE", "TP-LOSS-NONFINITE", "TP-LR-ZERO"]
ignore = ["TP-PLATEAU"]
fail-on = "warn"

[tool.trainproof.levels]
TP-GRAD-NONFINITE = "WARN"

[tool.trainproof.thresholds]
PLATEAU_WARN_S = 7200
DIVERGE_START_RATIO = 1.5
TAIL_SHARE = 0.1
SEGMENTS = 20
"""
HOSTILE_TOML = (
    "nan", "inf", "-inf", "5", "-1", "0", "1e400", str(2**70), "9" * 5000, "[]", '"x"', '""', "{}", "true", "[1, [2]]",
    "[" * 3000 + "]" * 3000, "{a = " * 500 + "1" + "}" * 500, '"\\u001b[2J"', '"\\n::error::X\\n"', "1979-05-27T07:32:00Z",
)  # fmt: skip
"""TOML values to put where the configuration seed has a number, a word or a list."""


@st.composite
def config_files(draw: st.DrawFn) -> bytes:
    """A .trainproof.toml with hostile values, keys or sections, maybe mangled further."""
    text = CONFIG_SEED
    for _ in range(draw(HOW_MANY)):
        spans = [m.span() for m in re.finditer(r'(?<== )(?:\[[^\]]*\]|"[^"]*"|[\d.]+)|^[A-Za-z_-]+(?= =)', text, re.M)]
        start, end = spans[draw(st.integers(0, len(spans) - 1))]
        text = text[:start] + draw(st.sampled_from(HOSTILE_TOML + HOSTILE_KEYS[:6])) + text[end:]
    if draw(st.booleans()):
        text += draw(st.sampled_from(('tool = "x"\n', "select = []\n", "[tool.trainproof.extra]\nx = 1\n", "[" * 2000 + "\n")))
    return draw(mutated_bytes(to_bytes(text)))


@dataclass
class Invocation:
    case: Case
    argv: list[str]
    outputs: list[str]  # every output path named, relative to the working folder
    plain_outputs: bool  # every output (and the job summary) is a new file in an existing folder, so each must be written
    summary: str | None  # GITHUB_STEP_SUMMARY, relative to the working folder
    config: bytes | None = None  # written to cfg/trainproof.toml and passed as --config


@st.composite
def output_path(draw: st.DrawFn, ext: str, case_inputs: list[str]) -> tuple[str, bool]:
    """An output path, and whether it is a plain new file that must get written."""
    how = draw(st.sampled_from(("plain", "plain", "plain", "hostile name", "an input", "a folder", "missing folder", "too long", "empty")))
    if how == "plain" or how == "an input" and not case_inputs:
        return f"out/report.{ext}", True
    if how == "hostile name":
        return f"out/{draw(st.sampled_from(HOSTILE_NAMES))}.{ext}", False
    if how == "an input" and case_inputs:
        return draw(st.sampled_from(case_inputs)), False
    if how == "a folder":
        return "out", False
    if how == "missing folder":
        return f"missing/report.{ext}", False
    if how == "too long":
        return "out/" + "x" * 300 + f".{ext}", False
    return "", False


@st.composite
def invocations(draw: st.DrawFn) -> Invocation:
    case = draw(cases())
    subject = f"in/{case.target}"
    good = "good/trainer_state.json"
    command = draw(st.sampled_from(("epoch", "epoch with a good log", "epoch with a missing log", "compare", "compare against it")))
    missing = draw(st.sampled_from(("in/missing.jsonl", "in/" + "y" * 300 + ".jsonl", "in/" + "y/" * 3000 + "log.jsonl")))
    paths = {
        "epoch": [subject],
        "epoch with a good log": [subject, good],
        "epoch with a missing log": [subject, missing, good],
        "compare": [subject, good],
        "compare against it": [good, subject],
    }[command]
    argv = [command.split()[0], *paths]
    logs = [f"in/{p}" for p, e in case.files.items() if isinstance(e, bytes) and case.kind != "special" and not p.endswith("meta.yaml")]
    inputs = logs + ([good] if good in paths else [])  # files read: an output or the job summary may be pointed at one, and must not change it
    config = draw(st.none() | config_files())
    if config is not None:
        argv += ["--config", "cfg/trainproof.toml"]
    if case.fmt is not None:
        argv += ["--format", case.fmt]
    outputs, plain = [], True
    for option in draw(st.lists(st.sampled_from(sorted(OUTPUT_OPTIONS)), unique=True, max_size=5)):
        path, is_plain = draw(output_path(OUTPUT_OPTIONS[option], inputs))
        argv += [option, path]
        outputs.append(path)
        plain = plain and is_plain
    argv += draw(st.lists(st.sampled_from(("--json", "--no-color", "--fail-on=warn", "--fail-on=never")), unique=True, max_size=2))
    summary = None
    if draw(st.booleans()):
        argv.append("--github")
        summary = draw(st.sampled_from(("summary.md", "summary.md", *inputs)))
        plain = plain and summary == "summary.md"
    return Invocation(case, argv, outputs, plain, summary, config)


def check_cli(call: Invocation, capsys) -> None:
    capsys.readouterr()
    here = os.getcwd()
    saved_summary = os.environ.pop("GITHUB_STEP_SUMMARY", None)
    with tempfile.TemporaryDirectory(prefix="tp-fuzz-") as tmp:
        root = Path(tmp)
        try:
            write_case(call.case, root / "in")
            (root / "good").mkdir()
            (root / "good" / "trainer_state.json").write_bytes(GOOD_LOG.read_bytes())
            (root / "out").mkdir()
            if call.config is not None:
                (root / "cfg").mkdir()
                (root / "cfg" / "trainproof.toml").write_bytes(call.config)
            if call.summary is not None:
                os.environ["GITHUB_STEP_SUMMARY"] = str(root / call.summary)
            os.chdir(root)
            before = snapshot(root)
            started = time.monotonic()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    code = main(call.argv)
                except SystemExit as exit:  # argparse refusing the command line
                    code = exit.code
            elapsed = time.monotonic() - started
            out, err = capsys.readouterr()
            if "internal error" in err:
                main(["--debug", *call.argv])  # raise it, so that each distinct internal error is reported (and shrunk) on its own
            after = snapshot(root)
            written = {o: (root / o).read_bytes() for o in call.outputs if o.startswith("out/report.") and (root / o).is_file()}
        finally:
            os.chdir(here)
            os.environ.pop("GITHUB_STEP_SUMMARY", None)
            if saved_summary is not None:
                os.environ["GITHUB_STEP_SUMMARY"] = saved_summary
    assert code in (0, 1, 2)
    assert is_utf8(out), "stdout holds a lone surrogate: it cannot be printed as UTF-8"
    assert is_utf8(err), "stderr holds a lone surrogate: it cannot be printed as UTF-8"
    assert "internal error" not in out + err, err
    assert "Traceback" not in out + err, err
    quiet = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)  # hidden by Python's default filters
    shown = [w for w in caught if not issubclass(w.category, quiet)]
    assert not shown, f"warnings reach stderr: {[str(w.message) for w in shown]}"
    assert all(line.startswith("trainproof: ") for line in err.splitlines() if line), f"stderr is not whole 'trainproof: ' lines: {err!r}"
    problems = injection_problems(err, annotations_allowed=False)
    assert not problems, f"stderr: {problems}"
    problems = injection_problems(out, annotations_allowed="--github" in call.argv)
    assert not problems, f"stdout: {problems}"
    assert elapsed < CLI_SECONDS, f"took {elapsed:.1f} s"
    read = ("in", "cfg", "good") if "good/trainer_state.json" in call.argv else ("in", "cfg")
    inputs = {p for p in before if p.startswith(tuple(folder + os.sep for folder in read))}
    touched = changed(before, after)
    assert not touched & inputs, f"an input was changed: {sorted(touched & inputs)}"
    allowed = {os.path.normpath(p) for p in call.outputs if p} | ({call.summary} if call.summary else set())
    assert touched <= allowed, f"created or changed outside the named outputs: {sorted(touched - allowed)}"
    if call.plain_outputs and call.config is None:  # one input that cannot be read must not lose the report of the others
        missing = [o for o in call.outputs if os.path.normpath(o) not in after]
        assert not missing, f"outputs not written: {missing} (exit {code}, stderr {err!r})"
        for output in call.outputs:
            check_document(RENDERER_OF[output.rsplit(".", 1)[1]], written[output])


@fuzz_settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(call=invocations())
def test_cli_exits_cleanly_and_writes_only_its_outputs(call: Invocation, capsys):
    check_cli(call, capsys)


CONFIG_SLOTS = ("select", "fail-on", "TP-GRAD-NONFINITE", "PLATEAU_WARN_S", "TAIL_SHARE", "SEGMENTS")
CONFIG_TABLE = {
    f"{slot}-{i}": re.sub(rf"^{slot} = .*$", lambda m, slot=slot, value=value: f"{slot} = {value}", CONFIG_SEED, flags=re.M)
    for slot in CONFIG_SLOTS
    for i, value in enumerate(HOSTILE_TOML)
}


@pytest.mark.parametrize("name", list(CONFIG_TABLE))
def test_hostile_config_table(name: str, capsys):
    """Every hostile TOML value in each kind of configuration slot: an error naming the key, never an internal one."""
    case = Case("jsonl", {"log.jsonl": "".join(json.dumps(r) + "\n" for r in jsonl_seed(30, "healthy")).encode()}, "log.jsonl")
    argv = ["epoch", "in/log.jsonl", "--config", "cfg/trainproof.toml"]
    check_cli(Invocation(case, argv, [], True, None, to_bytes(CONFIG_TABLE[name])), capsys)


# ---------------------------------------------------------------------------
# The hostile-value table: every hostile value in the slots that matter of every format
# ---------------------------------------------------------------------------
# The fuzz finds combinations; the table makes sure each hostile value meets each
# parser on every run, whatever the budget.


def _hf_table() -> Iterator[tuple[str, Case]]:
    for slot in ("step", "loss", "max_steps"):
        for i, token in enumerate(HOSTILE_JSON):
            document = hf_seed(12, "healthy")
            (document if slot == "max_steps" else document["log_history"][3])[slot] = f"{HOLE}0"
            yield f"hf-{slot}-{i}", Case("hf", {"run/trainer_state.json": to_bytes(dump_json(document, [token], []))}, "run")
    for i, key in enumerate(HOSTILE_KEYS):
        document = hf_seed(12, "healthy")
        document["log_history"][3][f"{KEY_HOLE}0"] = 1.0
        yield f"hf-key-{i}", Case("hf", {"run/trainer_state.json": to_bytes(dump_json(document, [], [key]))}, "run")


def _jsonl_table() -> Iterator[tuple[str, Case]]:
    for slot in ("step", "loss"):
        for i, token in enumerate(HOSTILE_JSON):
            records = jsonl_seed(12, "healthy")
            records[3][slot] = f"{HOLE}0"
            text = "".join(dump_json(r, [token], []) + "\n" for r in records)
            yield f"jsonl-{slot}-{i}", Case("jsonl", {"log.jsonl": to_bytes(text)}, "log.jsonl")
    for i, key in enumerate(HOSTILE_KEYS):  # the loss column under a hostile name
        records = [{(f"{KEY_HOLE}0" if k == "loss" else k): v for k, v in r.items()} for r in jsonl_seed(12, "healthy")]
        text = "".join(dump_json(r, [], [key]) + "\n" for r in records)
        yield f"jsonl-key-{i}", Case("jsonl", {"log.jsonl": to_bytes(text)}, "log.jsonl")


def _replace_cell(text: str, row: int, column: int, token: str, separator: str = ",") -> str:
    lines = text.split("\n")
    cells = lines[row].split(separator)
    cells[column] = token
    lines[row] = separator.join(cells)
    return "\n".join(lines)


def _text_table() -> Iterator[tuple[str, Case]]:
    lightning, keras = csv_seed(12, "healthy", keras=False), csv_seed(12, "healthy", keras=True)
    coqui = coqui_seed(12, "healthy").split("\n")
    for i, token in enumerate(HOSTILE_TEXT):
        yield f"csv-step-{i}", Case("csv", {"metrics.csv": to_bytes(_replace_cell(lightning, 4, 1, token))}, "metrics.csv")
        yield f"csv-loss-{i}", Case("csv", {"metrics.csv": to_bytes(_replace_cell(lightning, 4, 3, token))}, "metrics.csv")
        yield f"keras-epoch-{i}", Case("csv", {"training_log.csv": to_bytes(_replace_cell(keras, 4, 0, token))}, "training_log.csv")
        for slot, pattern in (("step", r"(GLOBAL_STEP: )\d+"), ("loss", r"(\| > loss: )\S+")):
            lines = list(coqui)
            at = next(n for n, line in enumerate(lines) if re.search(pattern, line) and n > 10)
            lines[at] = re.sub(pattern, lambda m, token=token: m.group(1) + token, lines[at])
            yield f"coqui-{slot}-{i}", Case("coqui", {"run/trainer_0_log.txt": to_bytes("\n".join(lines))}, "run")
        for slot, column in (("step", 2), ("loss", 1)):
            metrics = {name: to_bytes(text) for name, text in mlflow_seed(12, "healthy").items()}
            metrics["loss"] = to_bytes(_replace_cell(mlflow_seed(12, "healthy")["loss"], 3, column, token, " "))
            yield f"mlflow-{slot}-{i}", Case("mlflow", {f"run/metrics/{k}": v for k, v in metrics.items()}, "run")
    for i, key in enumerate(HOSTILE_KEYS):
        header = _replace_cell(lightning, 0, 3, key)
        yield f"csv-column-{i}", Case("csv", {"metrics.csv": to_bytes(header)}, "metrics.csv")
        if key and "/" not in key and "\ud800" not in key:  # a file name the file system takes
            metrics = {(key if k == "loss" else k): to_bytes(v) for k, v in mlflow_seed(12, "healthy").items()}
            yield f"mlflow-metric-{i}", Case("mlflow", {f"run/metrics/{k}": v for k, v in metrics.items()}, "run")


def _tensorboard_table() -> Iterator[tuple[str, Case]]:
    changes: list[tuple[str, dict]] = [(f"step-{step}", {"step": step}) for step in (2**63 - 1, 2**63, 2**64 - 1, -1, -(2**63), 2**70)]
    changes += [(f"value-{value}", {"value": value}) for value in (math.inf, -math.inf, math.nan, 3.4e38, 1e300, -0.0)]
    changes += [(f"twist-{twist}", {"twist": twist}) for twist in TWISTS if twist]
    changes += [(f"tag-{i}", {"tag": tag}) for i, tag in enumerate(HOSTILE_KEYS + ("train/loss\r", "eval/\x1b[2J/loss"))]
    for label, change in changes:
        events = tensorboard_seed(12, "healthy", keras=False)["events.out.tfevents.1.host.0"]
        for name, value in change.items():
            setattr(events[6], name, value)
        yield f"tensorboard-{label}", Case("tensorboard", {"run/events.out.tfevents.1.host.0": event_file(events)}, "run")


TABLE = dict(item for table in (_hf_table(), _jsonl_table(), _text_table(), _tensorboard_table()) for item in table)


@pytest.mark.parametrize("name", list(TABLE))
def test_hostile_value_table(name: str):
    check_readers(TABLE[name])
    check_renderers(TABLE[name])


# ---------------------------------------------------------------------------
# Bounded memory and time, in a subprocess
# ---------------------------------------------------------------------------


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def run_limited(argv: list[str], cwd: Path) -> tuple[int, str, str, float]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("GITHUB_STEP_SUMMARY", None)
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "trainproof", *argv],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            errors="backslashreplace",
            timeout=SUBPROCESS_SECONDS,
            preexec_fn=_limit_memory,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"trainproof {' '.join(argv)} did not finish in {SUBPROCESS_SECONDS:.0f} s")
    return done.returncode, done.stdout, done.stderr, time.monotonic() - started


def sparse_log(folder: Path) -> list[str]:
    """300 good JSONL lines, then 2 GB of zero bytes (a sparse file: no disk used)."""
    path = folder / "sparse.jsonl"
    with path.open("wb") as handle:
        handle.write("".join(json.dumps(r) + "\n" for r in jsonl_seed(300, "healthy")[:300]).encode())
        handle.truncate(2 * 10**9)
    return ["epoch", "sparse.jsonl"]


def fifo(folder: Path) -> list[str]:
    os.mkfifo(folder / "log.jsonl")
    return ["epoch", "log.jsonl"]


def long_line(folder: Path) -> list[str]:
    """Good lines, then one valid JSON line of 16 MB."""
    good = "".join(json.dumps(r) + "\n" for r in jsonl_seed(30, "healthy"))
    (folder / "log.jsonl").write_text(good + json.dumps({"step": 999, "loss": 1.0, "note": "x" * 16 * 2**20}) + "\n")
    return ["epoch", "log.jsonl"]


def coqui_best_model(folder: Path) -> list[str]:
    (folder / "trainer_0_log.txt").write_text("> EPOCH: 0/1\n | > loss: 1\n" + "> BEST MODEL :" * 40000 + "\n")
    return ["epoch", "trainer_0_log.txt"]


BOUNDED = {
    "2 GB sparse JSONL": (sparse_log, {2}),
    "a FIFO": (fifo, {2}),
    "/dev/zero as JSONL": (lambda folder: ["epoch", "/dev/zero", "--format", "jsonl"], {2}),
    "/dev/urandom as CSV": (lambda folder: ["epoch", "/dev/urandom", "--format", "csv"], {2}),
    "a 16 MB line": (long_line, {2}),
    "560 KB of '> BEST MODEL :'": (coqui_best_model, {0, 1, 2}),
    "a healthy log (control)": (lambda folder: ["epoch", str(GOOD_LOG)], {0}),
}


@pytest.mark.parametrize("name", list(BOUNDED))
def test_hostile_inputs_end_in_bounded_memory_and_time(name: str, tmp_path: Path):
    prepare, expected = BOUNDED[name]
    argv = prepare(tmp_path)
    before = snapshot(tmp_path)
    code, out, err, elapsed = run_limited(argv, tmp_path)
    assert "Traceback" not in out + err, err[-2000:]
    assert "internal error" not in err, err[-2000:]
    assert code in expected, f"exit {code}, stderr {err[-500:]!r}"
    if code == 2:
        assert len(err.strip().splitlines()) == 1, err[-2000:]
        assert err.startswith("trainproof: error: "), err[-2000:]
    assert not changed(before, snapshot(tmp_path)), "wrote into its working folder"
    assert elapsed < SUBPROCESS_SECONDS
