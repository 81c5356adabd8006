#!/usr/bin/env python
"""Summarise the gallery logs and verify each config's known-by-construction truth.

    python examples/gallery/check_gallery.py [--root examples/gallery]

Prints one row per run and exits non-zero if any property fails at any seed.
"""

import argparse
import glob
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LOG_VOCAB = math.log(32)
CONFIG_ORDER = ["healthy", "lr_hot", "lr_zero", "bad_labels", "overfit", "nonfinite", "finetune_hot"]


def finite(x):
    return isinstance(x, (int, float)) and math.isfinite(x)


def summarise(state):
    hist = state["log_history"]
    train = [h for h in hist if "loss" in h]
    evals = [h for h in hist if "eval_loss" in h]
    loss = [h["loss"] for h in train]
    gn = [h.get("grad_norm") for h in train]
    lr = [h.get("learning_rate") for h in train]
    ev = [h["eval_loss"] for h in evals]
    fin_loss = [x for x in loss if finite(x)]
    fin_ev = [x for x in ev if finite(x)]
    return {
        "n_train_logs": len(train),
        "n_eval_logs": len(evals),
        "loss": loss,
        "eval": ev,
        "lr": lr,
        "loss_first": loss[0],
        "loss_last": loss[-1],
        "loss_min": min(fin_loss) if fin_loss else float("nan"),
        "eval_min": min(fin_ev) if fin_ev else None,
        "eval_last": ev[-1] if ev else None,
        "nonfinite_loss": sum(not finite(x) for x in loss),
        "nonfinite_grad_norm": sum(not finite(x) for x in gn if x is not None),
        "grad_norm_logged": sum(x is not None for x in gn),
        "lr_first": lr[0],
        "lr_last": lr[-1],
        "train_steps": [h["step"] for h in train],
        "eval_steps": [h["step"] for h in evals],
    }


def check(name, s, healthy_last):
    """Return a list of failed property descriptions (empty = pass)."""
    fails = []

    def need(cond, what):
        if not cond:
            fails.append(what)

    need(s["n_train_logs"] >= 50, "at least 50 logged training points")
    need(s["grad_norm_logged"] == s["n_train_logs"], "grad_norm logged on every training log")
    loss, ev = s["loss"], s["eval"]
    if name != "nonfinite":
        need(s["nonfinite_loss"] == 0 and s["nonfinite_grad_norm"] == 0, "no non-finite values")
    if name == "healthy":
        need(abs(s["loss_first"] - LOG_VOCAB) < 0.3, "starts near log(V)")
        need(s["loss_last"] < 0.5 * s["loss_first"], "final loss < half the first")
        need(s["loss_last"] < 0.25, "final loss < 0.25")
        # no big spikes: no logged loss more than 10% above the running minimum so far (after the first)
        run_min, spikes = loss[0], 0
        for x in loss[1:]:
            spikes += x > 1.10 * run_min + 0.05
            run_min = min(run_min, x)
        need(spikes == 0, "no loss spikes")
        need(len(ev) >= 10, ">= 10 evals")
        need(all(b <= a + 1e-3 for a, b in zip(ev, ev[1:])), "eval loss non-increasing")
        need(ev[-1] < 0.5 * ev[0] and ev[-1] <= 1.1 * s["eval_min"], "eval falls and ends near its min")
    elif name == "lr_hot":
        first = s["loss_first"]
        need(max(loss[1:4]) > 3 * first, "blows up (>3x first) within the first 3 logged steps after the first")
        need(min(loss[1:]) > 2 * first, "never recovers: every later loss > 2x first")
        need(s["loss_last"] > 2 * first, "final loss > 2x first")
    elif name == "lr_zero":
        need(all(x == 0.0 for x in s["lr"]), "lr == 0 on every log")
        need(max(loss) - min(loss) < 0.05, "loss flat (range < 0.05)")
        need(abs(s["loss_last"] - s["loss_first"]) < 0.05, "loss ends where it started")
    elif name == "bad_labels":
        need(healthy_last is not None and s["loss_min"] >= 3 * healthy_last, "loss floor >= 3x healthy final loss")
        need(s["loss_last"] < 0.8 * s["loss_first"], "loss falls clearly on its own (a single-run view cannot condemn it)")
    elif name == "overfit":
        need(s["loss_last"] < 0.05, "train loss -> ~0 (< 0.05)")
        need(s["eval_min"] is not None and len(ev) >= 10, ">= 10 evals")
        imin = ev.index(s["eval_min"])
        need(imin <= len(ev) // 3, "eval minimum in the first third of evals")
        need(ev[-1] >= 1.5 * s["eval_min"], "eval ends >= 1.5x its minimum")
    elif name == "finetune_hot":
        need(s["nonfinite_loss"] == 0 and s["nonfinite_grad_norm"] == 0, "stays finite")
        need(len(ev) >= 6, ">= 6 evals")
        need(s["eval_min"] is not None and ev.index(s["eval_min"]) == 0, "eval lowest at its first evaluation")
        need(min(ev[-3:]) >= 1.3 * ev[0], "each of the last 3 evals >= 1.3x the first")
        # the training loss rises after the learning rate peaks and only partly recovers; it ends below where the
        # fine-tune started (the pretrained model meets a new task), so the training curve alone is no divergence
        at_first_eval = [x for x, h in zip(loss, s["train_steps"]) if h <= s["eval_steps"][0]]
        after_first_eval = loss[len(at_first_eval) :]
        peak = max(after_first_eval) if at_first_eval and after_first_eval else None
        need(peak is not None and peak > 1.5 * min(at_first_eval[-3:]), "training loss rises after the first eval")
        need(peak is not None and s["loss_last"] < peak, "training loss partly recovers from its peak")
        need(s["loss_last"] < s["loss_first"], "training loss ends below where the fine-tune started")
    elif name == "nonfinite":
        need(s["nonfinite_loss"] > 0, "non-finite logged loss")
        need(s["nonfinite_grad_norm"] > 0, "non-finite logged grad_norm")
        need(finite(s["loss_first"]), "first logged loss finite (blow-up happens during training)")
    return fails


def fmt(x, w=9):
    if x is None:
        return "-".rjust(w)
    if isinstance(x, float) and (not math.isfinite(x) or abs(x) >= 1e4 or (x != 0 and abs(x) < 1e-3)):
        return f"{x:.3g}".rjust(w)
    return f"{x:.4g}".rjust(w)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", default=HERE)
    args = parser.parse_args(argv)

    runs = {}
    for path in sorted(glob.glob(os.path.join(args.root, "*", "seed*", "trainer_state.json"))):
        config = os.path.basename(os.path.dirname(os.path.dirname(path)))
        seed = int(os.path.basename(os.path.dirname(path))[4:])
        with open(path) as f:
            state = json.load(f)
        meta_path = os.path.join(os.path.dirname(path), "run_meta.json")
        wall = None
        if os.path.exists(meta_path):
            with open(meta_path) as f:
                wall = json.load(f).get("wall_seconds")
        runs[(config, seed)] = (summarise(state), wall)
    if not runs:
        print("no runs found under", args.root)
        return 1

    order = {c: i for i, c in enumerate(CONFIG_ORDER)}
    keys = sorted(runs, key=lambda k: (order.get(k[0], 99), k[0], k[1]))
    head = ("config", "seed", "loss0", "lossN", "lossMin", "evalMin", "evalN", "nfLoss", "nfGN", "lr0", "lrN", "wall_s", "check")
    print(f"{head[0]:<11}{head[1]:>4}" + "".join(f"{h:>9}" for h in head[2:12]) + "  " + head[12])
    total_wall, failed = 0, []
    for config, seed in keys:
        s, wall = runs[(config, seed)]
        healthy = runs.get(("healthy", seed))
        healthy_last = healthy[0]["loss_last"] if healthy else None
        fails = check(config, s, healthy_last) if config in CONFIG_ORDER else []
        total_wall += wall or 0
        row = [s["loss_first"], s["loss_last"], s["loss_min"], s["eval_min"], s["eval_last"]]
        print(f"{config:<11}{seed:>4}" + "".join(fmt(x) for x in row)
              + f"{s['nonfinite_loss']:>9}{s['nonfinite_grad_norm']:>9}"
              + fmt(s["lr_first"]) + fmt(s["lr_last"]) + f"{wall if wall is not None else '-':>9}"
              + "  " + ("ok" if not fails else "FAIL"))
        for what in fails:
            failed.append((config, seed, what))
    print(f"total wall seconds (sum of run_meta): {total_wall}")
    for config, seed, what in failed:
        print(f"FAIL {config} seed{seed}: {what}")
    missing = [(c, s) for c in CONFIG_ORDER for s in (0, 1, 2) if (c, s) not in runs]
    for c, s in missing:
        print(f"FAIL missing run {c} seed{s}")
    ok = not failed and not missing
    print("ALL PROPERTIES HOLD" if ok else f"{len(failed) + len(missing)} failure(s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
