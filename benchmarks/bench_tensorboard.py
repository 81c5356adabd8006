"""How fast `trainproof` reads a TensorBoard event file of a million scalars, against reading its bytes, in one run.

Target: reading the run (``trainproof.runs.readers.tensorboard.read``: every
record's length and data checked against their CRC-32C checksums, every
Event decoded, the tags resolved, the Run built) within 5x of reading the
file's bytes (``Path.read_bytes()``, the baseline). Both are timed in this
process, alternating, the median of --repeat runs, after one untimed run of
each (the file is in the page cache for both). Peak RSS is measured in a
fresh interpreter for each side (VmHWM, Linux). The figures are ratios
measured in this run; the machine's other load moves the absolute numbers.

The file is written here before the clock starts, the way the HF Trainer's
TensorBoardCallback logs: every step ``train/loss``, ``train/grad_norm``,
``train/learning_rate`` and ``train/epoch``, and every --eval-every steps an
evaluation (``eval/loss``, ``eval/runtime``, ``eval/samples_per_second``,
``eval/steps_per_second``, ``train/epoch``). The default, 250,000 steps and an
evaluation every 1,000, is 1,001,250 scalars in 53 MB. The records are
encoded here by hand with their checksums (a real writer takes minutes for a
million scalars); tests/runs/readers/test_tensorboard_real.py checks the reader
against TensorBoard's own on files real writers wrote.

    python benchmarks/bench_tensorboard.py [--steps 250000] [--eval-every 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import math
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

TARGET = 5.0
TRAIN = ("train/loss", "train/grad_norm", "train/learning_rate", "train/epoch")
EVAL = ("eval/loss", "eval/runtime", "eval/samples_per_second", "eval/steps_per_second", "train/epoch")


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _event(wall: float, step: int, tag: bytes, value: float) -> bytes:
    """An Event of one simple_value scalar, as torch's and tensorboardX's writers encode it."""
    scalar = b"\x0a" + _varint(len(tag)) + tag + b"\x15" + struct.pack("<f", value)
    summary = b"\x0a" + _varint(len(scalar)) + scalar
    return b"\x09" + struct.pack("<d", wall) + (b"\x10" + _varint(step) if step else b"") + b"\x2a" + _varint(len(summary)) + summary


def write_events(path: Path, steps: int, eval_every: int) -> int:
    """The event file; returns how many scalars it holds."""
    from trainproof.runs.readers.tfrecord import crc32c_many

    payloads = [b"\x09" + struct.pack("<d", 1.7e9) + b"\x1a\x0dbrain.Event:2"]
    train = [tag.encode() for tag in TRAIN]
    evals = [tag.encode() for tag in EVAL]
    for step in range(1, steps + 1):
        wall = 1.7e9 + step * 0.31
        loss = 0.6 + 2.0 * math.exp(-step / (steps / 5)) + 0.05 * math.sin(step * 0.7)
        values = (loss, 0.5 + 0.2 * math.cos(step * 0.13), 2e-4 * (1 - step / steps), step / (steps / 3))
        payloads += [_event(wall + k * 1e-4, step, tag, value) for k, (tag, value) in enumerate(zip(train, values))]
        if step % eval_every == 0:
            values = (loss + 0.05, 41.5 + step % 7, 120.25, 15.0 + step % 3, step / (steps / 3))
            payloads += [_event(wall + 0.2 + k * 1e-4, step, tag, value) for k, (tag, value) in enumerate(zip(evals, values))]
    sums = crc32c_many(payloads).tolist()
    lengths: dict[int, bytes] = {}
    with path.open("wb") as out:
        for payload, crc in zip(payloads, sums):
            head = lengths.get(len(payload))
            if head is None:
                length = struct.pack("<Q", len(payload))
                head = lengths[len(payload)] = length + struct.pack("<I", _masked(crc32c_many([length])[0].item()))
            out.write(head + payload + struct.pack("<I", _masked(crc)))
    return len(payloads) - 1


def _masked(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


PEAK = """
import sys
from pathlib import Path
sys.path.insert(0, {repo!r})
path = Path({path!r})
if sys.argv[1] == "bytes":
    data = path.read_bytes()
else:
    from trainproof.runs.readers.tensorboard import read
    run = read(path)
print(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")))
"""


def peak_rss_mb(path: Path, side: str) -> float:
    """The peak RSS of a fresh interpreter that reads the file one way (``bytes`` or ``trainproof``), in MB: its
    VmHWM, which starts afresh at exec (ru_maxrss carries the parent's over)."""
    script = PEAK.format(repo=str(REPO), path=str(path))
    result = subprocess.run([sys.executable, "-c", script, side], capture_output=True, text=True, check=True)
    return int(result.stdout.strip()) / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=250_000)
    parser.add_argument("--eval-every", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from trainproof.runs.readers.tensorboard import read

    with tempfile.TemporaryDirectory(prefix="bench_tensorboard") as tmp:
        path = Path(tmp) / "events.out.tfevents.1700000000.bench.1.0"
        scalars = write_events(path, args.steps, args.eval_every)
        size = path.stat().st_size
        run = read(path)  # warm: the page cache, the imports and the reader's tables
        assert len(run.loss) == args.steps, len(run.loss)
        path.read_bytes()
        base, mine = [], []
        for _ in range(args.repeat):
            base.append(timed(path.read_bytes))
            mine.append(timed(read, path))
        b, m = statistics.median(base), statistics.median(mine)
        rss_bytes, rss_read = peak_rss_mb(path, "bytes"), peak_rss_mb(path, "trainproof")
    ratio = m / b
    print(f"event file: {scalars:,} scalars in {size / 1e6:.1f} MB ({args.steps:,} steps, an evaluation every {args.eval_every:,})")
    print(f"Path.read_bytes()       median {b * 1000:7.1f} ms over {args.repeat} runs ({', '.join(f'{x * 1000:.1f}' for x in base)})")
    print(f"tensorboard.read(path)  median {m * 1000:7.1f} ms over {args.repeat} runs ({', '.join(f'{x * 1000:.1f}' for x in mine)})")
    print(f"peak RSS: {rss_bytes:.0f} MB reading the bytes, {rss_read:.0f} MB reading the run (fresh interpreters)")
    print(f"ratio {ratio:.2f}x (target <= {TARGET}x): {'OK' if ratio <= TARGET else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
