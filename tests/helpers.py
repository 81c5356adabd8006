"""Shared builders for tests: synthetic runs and log files with known truths."""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from trainproof.runs.model import Checkpoint, Run, Series

REPO = Path(__file__).resolve().parent.parent
CORPUS = next((up / "shared" / "corpus" for up in (REPO.parent, REPO.parent.parent) if (up / "shared" / "corpus").is_dir()), REPO.parent / "shared" / "corpus")
"""The shared corpus beside the checkout (``/work/main``), or beside the folder of its worktrees (``/work/wt/<name>``)."""


def series(values: Sequence[float], steps: Sequence[int] | None = None) -> Series:
    values = np.asarray(values, dtype=float)
    if steps is None:
        steps = np.arange(1, values.size + 1) * 10
    return Series(np.asarray(steps, dtype=np.int64), values)


def make_run(
    loss: Sequence[float] | None = None,
    *,
    steps: Sequence[int] | None = None,
    lr: Sequence[float] | None = None,
    grad: Sequence[float] | None = None,
    evals: dict[str, tuple[Sequence[int], Sequence[float]]] | None = None,
    wall: Sequence[float] | None = None,
    step_time: Sequence[float] | None = None,
    loader_time: Sequence[float] | None = None,
    runtime_s: float | None = None,
    checkpoints: Sequence[Checkpoint] = (),
) -> Run:
    """A Run from plain lists; every series shares ``steps`` (default 10, 20, ...)."""
    n = len(loss) if loss is not None else len(lr or grad or [])
    if steps is None:
        steps = list(range(10, 10 * n + 1, 10))

    def opt(values: Sequence[float] | None) -> Series | None:
        return None if values is None else series(values, steps)

    return Run(
        path="synthetic.json",
        format="test",
        loss=opt(loss),
        eval_losses={name: series(v, s) for name, (s, v) in (evals or {}).items()},
        learning_rate=opt(lr),
        grad_norm=opt(grad),
        wall_time=opt(wall),
        step_time=opt(step_time),
        loader_time=opt(loader_time),
        runtime_s=runtime_s,
        checkpoints=tuple(checkpoints),
    )


def noisy(curve: Sequence[float] | np.ndarray, sigma: float, seed: int = 0) -> np.ndarray:
    """A curve with Gaussian noise of a given sigma, deterministic by seed."""
    rng = np.random.default_rng(seed)
    curve = np.asarray(curve, dtype=float)
    return curve + rng.normal(0.0, sigma, curve.size)


def decaying(n: int = 60, start: float = 2.0, floor: float = 0.5, rate: float = 6.0) -> np.ndarray:
    """A healthy-looking loss: exponential decay from start to floor."""
    x = np.linspace(0, 1, n)
    return floor + (start - floor) * np.exp(-rate * x)


def write_hf_state(path: Path, entries: list[dict], **state: object) -> Path:
    """A trainer_state.json with the given log_history (NaN and Infinity allowed, as the Trainer writes them)."""
    body = {"global_step": entries[-1]["step"] if entries else 0, "log_history": entries, **state}
    path.write_text(json.dumps(body, indent=2, allow_nan=True))
    return path


def hf_entries(loss: Sequence[float], *, lr: float | Sequence[float] = 1e-4, grad: Sequence[float] | None = None, every: int = 5) -> list[dict]:
    entries = []
    for i, value in enumerate(loss):
        entry = {"epoch": (i + 1) / len(loss), "loss": value, "step": (i + 1) * every}
        entry["learning_rate"] = lr if isinstance(lr, (int, float)) else lr[i]
        if grad is not None:
            entry["grad_norm"] = grad[i]
        entries.append(entry)
    return entries


def two_nan_eval_sets(folder: Path) -> Path:
    """A run folder whose trainer_state.json logs two eval sets that both turn NaN at the last evaluation (step 300):
    TP-EVAL-NONFINITE finds it once per set."""
    entries = hf_entries(decaying(60).tolist())
    for step in (100, 200, 300):
        value = float("nan") if step == 300 else 1.5
        entries.append({"step": step, "epoch": step / 300, "eval_a_loss": value, "eval_b_loss": value})
    entries.sort(key=lambda e: e["step"])
    folder.mkdir()
    return write_hf_state(folder / "trainer_state.json", entries)


def load_tiny_task():
    """The gallery's tiny-model task module (examples/gallery/tiny_task.py), imported by path."""
    import importlib.util
    import sys

    if "tiny_task" in sys.modules:
        return sys.modules["tiny_task"]
    spec = importlib.util.spec_from_file_location("tiny_task", REPO / "examples" / "gallery" / "tiny_task.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["tiny_task"] = module
    spec.loader.exec_module(module)
    return module


# TensorBoard event files, written the way TensorFlow writes them (TFRecords with masked CRC-32C checksums).


def _crc_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC = _crc_table()


def masked_crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for byte in data:
        c = _CRC[(c ^ byte) & 0xFF] ^ (c >> 8)
    c ^= 0xFFFFFFFF
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(n: int) -> bytes:
    n = n + (1 << 64) if n < 0 else n  # int64 two's complement; larger numbers make over-long varints
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | 0x80 if n else low)
        if not n:
            return bytes(out)


def pb_field(number: int, wire: int, value: int | bytes) -> bytes:
    """One protocol-buffer field; ``value`` is an int for wire type 0, bytes otherwise."""
    key = varint(number << 3 | wire)
    if wire == 0:
        return key + varint(value)  # type: ignore[arg-type]
    if wire == 2:
        return key + varint(len(value)) + value  # type: ignore[arg-type]
    return key + value  # type: ignore[operator]


def tf_record(data: bytes) -> bytes:
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc32c(length)) + data + struct.pack("<I", masked_crc32c(data))
