"""Cost of judging a run while it grows: the HF callback, the Guardian, the Lightning, Keras and Coqui callbacks per record,
and `watch` per tick.

    python benchmarks/bench_live.py [--callback-records 100000] [--watch-records 1000000]

1. TrainproofCallback: the total time of N ``on_log`` calls against the time
   of the same loop with no callback, both measured here. Target: under 50
   microseconds per record. The same for ``Guardian.log`` (plain floats, as a loop
   passes ``loss.item()``), the Lightning callback's ``on_train_batch_end``
   (a stand-in trainer holding the logged tensors), the Keras callback's (the
   running-mean logs Keras passes) and the Coqui callback's on_train_step_end
   (a stand-in trainer holding Coqui's running means).
2. ``watch``: a JSONL log of M records growing by 100 records a tick. Each
   tick's cost is compared with the cost of reading those new bytes alone
   (open, seek, read), and with the tick cost on a log a tenth as long.
   Target: a tick's cost grows with the new bytes, not with the file.

The ratios are what to read; absolute times depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

TARGET_US = 50.0
GROWTH = 100


def bench_callback(n: int) -> None:
    from trainproof.integrations.hf import TrainproofCallback

    args = SimpleNamespace(output_dir=tempfile.mkdtemp(), device="cpu")
    logs = [{"loss": 2.0 * 0.9999**i + 0.5, "learning_rate": 1e-4, "grad_norm": 0.5, "epoch": i / n} for i in range(1, n + 1)]

    def loop(callback) -> float:
        state = SimpleNamespace(global_step=0, max_steps=n, is_world_process_zero=True)
        control = SimpleNamespace(should_training_stop=False)
        if callback is not None:
            callback.on_train_begin(args, state, control)
        start = time.perf_counter()
        for i, entry in enumerate(logs, start=1):
            state.global_step = i
            record = dict(entry)  # the Trainer builds a fresh dict per log call too
            if callback is not None:
                callback.on_log(args, state, control, record)
        return time.perf_counter() - start

    bare = loop(None)
    callback = TrainproofCallback(policy="stop_on_fail")
    guarded = loop(callback)
    per_record = (guarded - bare) / n * 1e6
    print(f"callback: {n:,} on_log calls: {guarded:.3f} s with the callback, {bare:.3f} s without")
    print(f"          {per_record:.1f} us per record ({callback.judge.judgements} judgements); target < {TARGET_US:.0f} us: "
          f"{'OK' if per_record < TARGET_US else 'OVER TARGET'}")


def bench_guardian(n: int) -> None:
    """Guardian.log per record: N calls with plain floats against the same loop with no guardian."""
    import io

    from trainproof import Guardian

    values = [(2.0 * 0.9999**i + 0.5, 0.5) for i in range(1, n + 1)]

    def loop(guardian) -> float:
        start = time.perf_counter()
        for i, (loss, norm) in enumerate(values, start=1):
            if guardian is not None:
                guardian.log(i, loss=loss, lr=1e-4, grad_norm=norm)
        return time.perf_counter() - start

    bare = loop(None)
    guardian = Guardian(policy="stop_on_fail", max_steps=n, stream=io.StringIO())
    guarded = loop(guardian)
    per_record = (guarded - bare) / n * 1e6
    print(f"guardian: {n:,} log calls: {guarded:.3f} s with the Guardian, {bare:.3f} s without")
    print(f"          {per_record:.1f} us per record ({guardian.guard.judge.judgements} judgements); target < {TARGET_US:.0f} us: "
          f"{'OK' if per_record < TARGET_US else 'OVER TARGET'}")


def bench_lightning(n: int) -> None:
    """The Lightning callback per optimizer step: its on_train_batch_end with a stand-in trainer holding what a
    LightningModule logged (tensors, as self.log keeps them), against the same loop with no callback."""
    import torch

    from trainproof.integrations.lightning import TrainproofCallback

    values = [{"train_loss": torch.tensor(2.0 * 0.9999**i + 0.5), "lr": torch.tensor(1e-4), "grad_norm": torch.tensor(0.5)} for i in range(1, n + 1)]
    trainer = SimpleNamespace(global_step=0, callback_metrics={}, max_steps=n, is_global_zero=True, world_size=1, should_stop=False,
                              log_dir=None, default_root_dir=tempfile.mkdtemp(), sanity_checking=False)  # fmt: skip

    def loop(callback) -> float:
        if callback is not None:
            callback.on_train_start(trainer, None)
        start = time.perf_counter()
        for i, logged in enumerate(values, start=1):
            trainer.global_step = i
            trainer.callback_metrics = logged
            if callback is not None:
                callback.on_train_batch_end(trainer, None, None, None, i)
        return time.perf_counter() - start

    bare = loop(None)
    callback = TrainproofCallback(policy="stop_on_fail")
    guarded = loop(callback)
    per_record = (guarded - bare) / n * 1e6
    print(f"lightning: {n:,} on_train_batch_end calls: {guarded:.3f} s with the callback, {bare:.3f} s without")
    print(f"          {per_record:.1f} us per record ({callback.guard.judge.judgements} judgements); target < {TARGET_US:.0f} us: "
          f"{'OK' if per_record < TARGET_US else 'OVER TARGET'}")


def bench_keras(n: int) -> None:
    """The Keras callback per batch: its on_train_batch_end with the running-mean logs Keras passes, against the same
    loop with no callback (Keras on its torch backend)."""
    os.environ.setdefault("KERAS_BACKEND", "torch")
    from trainproof.integrations.keras import TrainproofCallback

    steps = 1000  # batches an epoch, as params says
    means, total = [], 0.0
    for i in range(n):
        total += 2.0 * 0.9999**i + 0.5
        means.append({"loss": total / (i % steps + 1)})
        if (i + 1) % steps == 0:
            total = 0.0

    def loop(callback) -> float:
        if callback is not None:
            callback.set_params({"epochs": n // steps, "steps": steps, "verbose": 0})
            callback.on_train_begin()
        start = time.perf_counter()
        for i, logs in enumerate(means):
            if callback is not None:
                if i % steps == 0:
                    callback.on_epoch_begin(i // steps)
                callback.on_train_batch_end(i % steps, logs)
        return time.perf_counter() - start

    bare = loop(None)
    callback = TrainproofCallback(policy="stop_on_fail")
    guarded = loop(callback)
    per_record = (guarded - bare) / n * 1e6
    print(f"keras:    {n:,} on_train_batch_end calls: {guarded:.3f} s with the callback, {bare:.3f} s without")
    print(f"          {per_record:.1f} us per record ({callback.guard.judge.judgements} judgements); target < {TARGET_US:.0f} us: "
          f"{'OK' if per_record < TARGET_US else 'OVER TARGET'}")


def bench_coqui(n: int) -> None:
    """The Coqui callback per step: its on_train_step_end with a stand-in trainer holding the running means Coqui's
    KeepAverage keeps, against the same loop with no callback."""
    from trainer.generic_utils import KeepAverage

    from trainproof.integrations.coqui import TrainproofCallback

    def loop(callback) -> float:
        averages = KeepAverage()
        trainer = SimpleNamespace(output_path=tempfile.mkdtemp(), keep_avg_train=averages, total_steps_done=0, train_loader=range(n),
                                  config=SimpleNamespace(epochs=1), args=SimpleNamespace(rank=0), epochs_done=0)  # fmt: skip
        start = time.perf_counter()
        for i in range(1, n + 1):
            averages.update_values({"avg_loss": 2.0 * 0.9999**i + 0.5, "avg_current_lr": 1e-4, "avg_grad_norm": 0.5})
            trainer.total_steps_done = i
            if callback is not None:
                callback.on_train_step_end(trainer)
        return time.perf_counter() - start

    bare = loop(None)
    callback = TrainproofCallback(policy="stop_on_fail")
    guarded = loop(callback)
    per_record = (guarded - bare) / n * 1e6
    print(f"coqui:    {n:,} on_train_step_end calls: {guarded:.3f} s with the callback, {bare:.3f} s without")
    print(f"          {per_record:.1f} us per record ({callback.guard.judge.judgements} judgements); target < {TARGET_US:.0f} us: "
          f"{'OK' if per_record < TARGET_US else 'OVER TARGET'}")


def _record(step: int) -> str:
    return json.dumps({"step": step, "loss": round(2.0 * 0.99999**step + 0.5, 6), "learning_rate": 1e-4, "grad_norm": 0.5}) + "\n"


def _tick_costs(path: Path, records: int, ticks: int) -> tuple[list[float], list[float]]:
    from trainproof.commands.watch import Watcher

    with path.open("w") as handle:
        handle.writelines(_record(s) for s in range(1, records + 1))
    watcher = Watcher(path)
    watcher.tick()  # the initial load reads the whole file once
    tick_times, read_times = [], []
    step = records + 1
    for _ in range(ticks):
        chunk = "".join(_record(s) for s in range(step, step + GROWTH))
        step += GROWTH
        offset = path.stat().st_size
        with path.open("a") as handle:
            handle.write(chunk)
        start = time.perf_counter()
        with path.open("rb") as handle:  # the floor: reading the new bytes alone
            handle.seek(offset)
            handle.read(len(chunk))
        read_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        watcher.tick()
        tick_times.append(time.perf_counter() - start)
    return tick_times, read_times


def bench_watch(records: int, ticks: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        small_ticks, _ = _tick_costs(Path(tmp) / "small.jsonl", records // 10, ticks)
        big_ticks, big_reads = _tick_costs(Path(tmp) / "big.jsonl", records, ticks)
    small_median, big_median = statistics.median(small_ticks), statistics.median(big_ticks)
    read_median = statistics.median(big_reads)
    print(f"watch:    {ticks} ticks of +{GROWTH} records on a {records:,}-record JSONL log")
    print(f"          median tick {big_median * 1e3:.2f} ms (mean {statistics.mean(big_ticks) * 1e3:.2f} ms, judgements included); "
          f"reading the new bytes alone {read_median * 1e3:.3f} ms")
    print(f"          the same ticks on a {records // 10:,}-record log: median {small_median * 1e3:.2f} ms; "
          f"ratio big/small {big_median / small_median:.2f} (target ~1: cost grows with the new bytes, not the file)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--callback-records", type=int, default=100_000)
    parser.add_argument("--watch-records", type=int, default=1_000_000)
    parser.add_argument("--ticks", type=int, default=200)
    args = parser.parse_args()
    try:
        bench_callback(args.callback_records)
    except ImportError as exc:
        print(f"callback: skipped ({exc})", file=sys.stderr)
    bench_guardian(args.callback_records)
    for name, bench in (("lightning", bench_lightning), ("keras", bench_keras), ("coqui", bench_coqui)):
        try:
            bench(args.callback_records)
        except ImportError as exc:
            print(f"{name}: skipped ({exc})", file=sys.stderr)
    bench_watch(args.watch_records, args.ticks)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
