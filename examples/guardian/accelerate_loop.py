"""A hand-written Accelerate training loop under trainproof's Guardian, stopped by it when its learning rate is hot.

    torchrun --nproc_per_node 2 examples/guardian/accelerate_loop.py --lr 3 --out runs/hot   # 2 CPU processes (gloo)
    python examples/guardian/accelerate_loop.py --lr 0.05                                    # one process, healthy

A small classifier on synthetic data (built here: nothing is downloaded). Every process logs every step to its
Guardian; rank 0 judges, and its decision reaches every process, so all of them leave the loop at the same step.
Each process prints one line at the end: its rank, the step it stopped at (or that it ran to the end) and the verdict.
"""

from __future__ import annotations

import argparse

import torch
from accelerate import Accelerator

from trainproof import Guardian


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=3.0)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--policy", default="stop_on_fail")
    parser.add_argument("--out", default=None, help="where the abort report and the final report go")
    args = parser.parse_args()

    accelerator = Accelerator(cpu=True)
    torch.manual_seed(args.seed)
    x = torch.randn(512, 16)
    y = (x @ torch.randn(16, 4)).argmax(1)
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    model, optimizer = accelerator.prepare(model, optimizer)
    guardian = Guardian(policy=args.policy, max_steps=args.steps, output_dir=args.out)
    generator = torch.Generator().manual_seed(args.seed + accelerator.process_index)
    step = 0
    for step in range(1, args.steps + 1):
        batch = torch.randint(0, len(x), (32,), generator=generator)
        loss = torch.nn.functional.cross_entropy(model(x[batch]), y[batch])
        optimizer.zero_grad()
        accelerator.backward(loss)
        norm = accelerator.clip_grad_norm_(model.parameters(), 1e9)
        optimizer.step()
        mean_loss = accelerator.reduce(loss.detach(), reduction="mean")  # every rank logs the same value
        guardian.log(step, loss=mean_loss, lr=args.lr, grad_norm=norm)
        if guardian.should_stop:
            break
    report = guardian.finish()
    verdict = report.verdict.value if report is not None else "judged on rank 0"
    print(f"rank {accelerator.process_index}: {'stopped at step ' + str(guardian.stopped_at) if guardian.should_stop else 'ran'} "
          f"of {args.steps} ({step} steps run); {verdict}", flush=True)


if __name__ == "__main__":
    main()
