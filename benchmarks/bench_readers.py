"""`trainproof epoch` on logs of a million and ten million steps, each beside the fastest parse of the same file.

Targets (issue 11): the whole `trainproof epoch` process within 2x of a process that only parses the file with the
fastest parser there is for it (polars for JSON Lines and CSV, orjson for a trainer_state.json), at 1e6 and 1e7
steps; peak RSS under 1 GiB at 1e6 and under 2 GiB at 1e7. Both commands run as fresh processes, alternating, and
the medians are compared; each process's peak RSS comes from wait4. The package's bytecode is compiled first, as
`pip install` does, so that an environment with PYTHONDONTWRITEBYTECODE set does not time the compiler. The small-log
cold start is benchmarks/bench_startup.py's.

    python benchmarks/bench_readers.py [--repeat 3] [--only jsonl-1e6,...] [--keep DIR]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

TARGET_RATIO = 2.0
PEAK_MIB = {6: 1024, 7: 2048}

PARSE = {
    "jsonl": "import polars, sys; polars.read_ndjson(sys.argv[1])",
    "csv": "import polars, sys; polars.read_csv(sys.argv[1])",
    "hf": "import orjson, sys; orjson.loads(open(sys.argv[1], 'rb').read())",
}


def _loss(i: int) -> float:
    return 2.5 * (1 + i) ** -0.1 + 0.02 * math.sin(i * 0.37)


def _write(path: Path, lines: Iterator[str], header: str = "") -> None:
    """Lines written a hundred thousand at a time: ten million of them would not fit in memory as one string."""
    with path.open("w") as out:
        out.write(header)
        while chunk := list(itertools.islice(lines, 100_000)):
            out.writelines(chunk)


def write_jsonl(path: Path, steps: int) -> None:
    """A training loop's JSON Lines: a record per step, and an eval record every thousand steps."""

    def lines() -> Iterator[str]:
        for i in range(1, steps + 1):
            yield (
                f'{{"step": {i}, "loss": {_loss(i):.6f}, "learning_rate": {3e-4 * min(1.0, i / 2000):.6g}, '
                f'"grad_norm": {0.8 + 0.1 * math.cos(i):.5f}, "epoch": {i / 50000:.5f}, "time": {1.7e9 + 0.35 * i:.3f}}}\n'
            )
            if i % 1000 == 0:
                yield f'{{"step": {i}, "eval_loss": {_loss(i) * 0.97:.6f}, "epoch": {i / 50000:.5f}}}\n'

    _write(path, lines())


def write_csv(path: Path, steps: int) -> None:
    """A Lightning CSVLogger metrics.csv: training rows, and a validation row every thousand steps."""

    def lines() -> Iterator[str]:
        for i in range(1, steps + 1):
            yield f"{i // 50000},{i},{_loss(i):.6f},{3e-4 * min(1.0, i / 2000):.6g},\n"
            if i % 1000 == 0:
                yield f"{i // 50000},{i},,,{_loss(i) * 0.97:.6f}\n"

    _write(path, lines(), "epoch,step,train_loss_step,lr-AdamW,val_loss\n")


def write_state(path: Path, steps: int) -> None:
    """A trainer_state.json as the Trainer writes it (indent 2, keys sorted), a log entry per step."""
    history: list[dict] = []
    for i in range(1, steps + 1):
        history.append(
            {
                "epoch": i / 50000,
                "grad_norm": 0.8 + 0.1 * math.cos(i),
                "learning_rate": 3e-4 * min(1.0, i / 2000),
                "loss": round(_loss(i), 4),
                "step": i,
            }
        )
        if i % 1000 == 0:
            history.append({"epoch": i / 50000, "eval_loss": _loss(i) * 0.97, "eval_runtime": 1.5, "step": i})
    state = {"best_model_checkpoint": None, "epoch": steps / 50000, "global_step": steps, "log_history": history, "max_steps": steps}
    path.write_text(json.dumps(state, indent=2, sort_keys=True))


CASES = {
    "jsonl-1e6": ("jsonl", 6, write_jsonl, "log.jsonl"),
    "hf-1e6": ("hf", 6, write_state, "trainer_state.json"),
    "csv-1e6": ("csv", 6, write_csv, "metrics.csv"),
    "jsonl-1e7": ("jsonl", 7, write_jsonl, "log.jsonl"),
}


def run(command: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one fresh process."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    if process.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} exited {process.returncode}")
    return seconds, usage.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default=",".join(CASES))
    parser.add_argument("--keep", metavar="DIR", help="write (and reuse) the generated logs here")
    parser.add_argument("--write", nargs=2, metavar=("CASE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write:
        name, path = args.write
        _, power, write, _ = CASES[name]
        write(Path(path), 10**power)
        return 0
    import trainproof

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(trainproof.__file__).parent)], check=True)
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="trainproof-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    ok = True
    print(f"{'log':<10} {'size':>9} {'parse s':>8} {'epoch s':>8} {'ratio':>6} {'parse MiB':>9} {'epoch MiB':>9}  verdict")
    for name in args.only.split(","):
        fmt, power, write, filename = CASES[name]
        path = folder / name / filename
        if not path.exists():
            # written by a child process: a child's peak RSS, as wait4 reports it, starts from its parent's at the
            # fork, so a parent grown by building a million entries would be counted in every command measured after
            path.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run([sys.executable, __file__, "--write", name, str(path)], check=True)
        parse_cmd = [sys.executable, "-c", PARSE[fmt], str(path)]
        epoch_cmd = [sys.executable, "-m", "trainproof", "epoch", str(path), "--no-color"]
        parses, epochs = [], []
        for _ in range(args.repeat):
            parses.append(run(parse_cmd))
            epochs.append(run(epoch_cmd))
        parse_s = statistics.median(t for t, _ in parses)
        epoch_s = statistics.median(t for t, _ in epochs)
        parse_mib = max(m for _, m in parses)
        epoch_mib = max(m for _, m in epochs)
        ratio = epoch_s / parse_s
        met = ratio <= TARGET_RATIO and epoch_mib < PEAK_MIB[power]
        ok = ok and met
        size = path.stat().st_size / 2**20
        print(
            f"{name:<10} {size:>7.0f}MB {parse_s:>8.2f} {epoch_s:>8.2f} {ratio:>5.2f}x {parse_mib:>9.0f} {epoch_mib:>9.0f}  "
            f"{'met' if met else 'MISSED'} (<= {TARGET_RATIO}x, < {PEAK_MIB[power]} MiB)"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
