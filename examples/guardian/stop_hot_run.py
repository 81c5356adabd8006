"""Train the gallery's tiny model with the learning rate far too hot, guarded by trainproof.

    python examples/guardian/stop_hot_run.py [--seed 0] [--policy stop_on_fail]

It runs `lr_hot` from examples/gallery (learning rate 3.0, 1500x the healthy
one, no warmup, no clipping; 300 steps scheduled) on CPU with
`TrainproofCallback(policy="stop_on_fail")`, and prints what the callback
prints, then where training ended and how much of the schedule it saved.
`output.txt` beside this script is its captured output at seed 0:

    python examples/guardian/stop_hot_run.py > examples/guardian/output.txt
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

GALLERY = Path(__file__).resolve().parent.parent / "gallery"


def tiny_task():
    spec = importlib.util.spec_from_file_location("tiny_task", GALLERY / "tiny_task.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["tiny_task"] = module
    spec.loader.exec_module(module)
    return module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--policy", choices=("warn", "stop_on_fail"), default="stop_on_fail")
    args = parser.parse_args()

    task = tiny_task()
    import torch
    import transformers

    from trainproof.integrations.hf import TrainproofCallback

    class PrintLoss(transformers.TrainerCallback):
        """The Trainer's own log lines, without the timing fields that change every run."""

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                print(f"step {state.global_step:>3}: loss {logs['loss']:.4g}, learning_rate {logs['learning_rate']:.3g}, grad_norm {logs['grad_norm']:.4g}")

    torch.set_num_threads(2)
    transformers.logging.set_verbosity_error()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)  # so the report path printed below is the same on every machine
        callback = TrainproofCallback(policy=args.policy)
        trainer = task.make_trainer("lr_hot", args.seed, "run", extra_callbacks=[PrintLoss(), callback])
        trainer.remove_callback(transformers.PrinterCallback)
        trainer.train()
        total, done = trainer.state.max_steps, trainer.state.global_step
        print(f"\ntraining ended at step {done} of {total}: {total - done} steps ({(total - done) / total:.0%} of the schedule) never ran")
        abort = Path("run/trainproof_abort.json")
        print(f"abort report written: {abort.is_file()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
