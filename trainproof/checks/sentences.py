"""Sentences more than one rule writes, built in one place so they read the same everywhere."""

from __future__ import annotations

from trainproof.io import figures
from trainproof.runs.model import Run


def nearest_checkpoint(run: Run, step: int) -> tuple[str, dict[str, str]]:
    """The sentence naming the checkpoint the trainer recorded nearest to ``step``, and the finding value for it.

    Both are empty when the log records no checkpoint. The sentence starts
    with a space, to be appended to a message that ends with a full stop.
    """
    checkpoint = run.checkpoint_nearest(step)
    if checkpoint is None:
        return "", {}
    sentence = f" Nearest checkpoint the trainer recorded: {checkpoint.path} (step {figures.step(checkpoint.step)})."
    return sentence, {"nearest_checkpoint": checkpoint.path}
