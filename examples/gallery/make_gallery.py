#!/usr/bin/env python
"""Train every gallery config at every seed and keep only the Trainer logs.

    python examples/gallery/make_gallery.py [--configs ...] [--seeds 0 1 2]
                                            [--out examples/gallery] [--threads 2]

Each run trains in a throw-away temporary directory (no checkpoints or weights
are kept); only ``trainer_state.json`` is copied to
``<out>/<config>/seed<k>/trainer_state.json``, with a ``run_meta.json`` beside it.
"""

import argparse
import contextlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load_tiny_task():
    spec = importlib.util.spec_from_file_location("tiny_task", os.path.join(HERE, "tiny_task.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules["tiny_task"] = module
    spec.loader.exec_module(module)
    return module


def main(argv=None):
    tiny_task = load_tiny_task()
    import torch
    import transformers

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", default=list(tiny_task.CONFIGS), choices=list(tiny_task.CONFIGS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--out", default=HERE)
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    parser.add_argument("--verbose", action="store_true", help="show the Trainer's per-log printouts")
    args = parser.parse_args(argv)

    torch.set_num_threads(args.threads)
    transformers.logging.set_verbosity_error()

    total_start = time.time()
    for name in args.configs:
        for seed in args.seeds:
            dest = os.path.join(args.out, name, f"seed{seed}")
            start = time.time()
            with tempfile.TemporaryDirectory(prefix=f"trainproof-{name}-{seed}-") as tmp:
                quiet = contextlib.nullcontext() if args.verbose else contextlib.redirect_stdout(open(os.devnull, "w"))
                with quiet:
                    tiny_task.train(name, seed, tmp)
                os.makedirs(dest, exist_ok=True)
                shutil.copyfile(os.path.join(tmp, "trainer_state.json"), os.path.join(dest, "trainer_state.json"))
            wall = time.time() - start
            meta = {
                "config": name,
                "seed": seed,
                "differs_from_healthy": tiny_task.config_diff(name),
                "torch_version": torch.__version__,
                "transformers_version": transformers.__version__,
                "torch_num_threads": args.threads,
                "wall_seconds": round(wall),
            }
            with open(os.path.join(dest, "run_meta.json"), "w") as f:
                json.dump(meta, f, indent=2, sort_keys=True)
                f.write("\n")
            print(f"{name:>10} seed{seed}  {wall:6.1f}s  -> {os.path.relpath(dest)}", flush=True)
    print(f"total {time.time() - total_start:.0f}s", flush=True)


if __name__ == "__main__":
    main()
