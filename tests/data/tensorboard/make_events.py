"""Write the TensorBoard event files these tests read, with torch's real SummaryWriter.

    pip install tensorboard && python tests/data/tensorboard/make_events.py

`hf_style/` logs like the HF Trainer's TensorBoardCallback (train/loss,
train/learning_rate, train/grad_norm; eval/loss in the same run directory),
learning healthily. `keras_style/` logs like Keras (epoch_loss per epoch, with
the validation loss under validation/), and its loss blows up half-way.
tensorboard is needed only to regenerate them, not to read them.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

from torch.utils.tensorboard import SummaryWriter

HERE = Path(__file__).resolve().parent


def main() -> None:
    for name in ("hf_style", "keras_style"):
        shutil.rmtree(HERE / name, ignore_errors=True)
    writer = SummaryWriter(HERE / "hf_style", flush_secs=1)
    for step in range(10, 610, 10):
        loss = 0.6 + 1.8 * math.exp(-step / 120) + 0.02 * math.sin(step)
        writer.add_scalar("train/loss", loss, step, walltime=1_700_000_000 + step * 0.5)
        writer.add_scalar("train/learning_rate", 2e-4 * min(1.0, step / 60), step, walltime=1_700_000_000 + step * 0.5)
        writer.add_scalar("train/grad_norm", 0.5 + 0.05 * math.cos(step), step, walltime=1_700_000_000 + step * 0.5)
        if step % 100 == 0:
            writer.add_scalar("eval/loss", loss + 0.05, step, walltime=1_700_000_000 + step * 0.5 + 0.1)
    writer.close()
    train = SummaryWriter(HERE / "keras_style" / "train", flush_secs=1)
    validation = SummaryWriter(HERE / "keras_style" / "validation", flush_secs=1)
    for epoch in range(30):
        loss = 1.2 * math.exp(-epoch / 4) + 0.3 if epoch < 15 else 0.3 * 1.6 ** (epoch - 14)
        train.add_scalar("epoch_loss", loss, epoch, walltime=1_700_000_000 + epoch * 60)
        validation.add_scalar("epoch_loss", loss * 1.1, epoch, walltime=1_700_000_000 + epoch * 60 + 5)
    train.close()
    validation.close()


if __name__ == "__main__":
    main()
