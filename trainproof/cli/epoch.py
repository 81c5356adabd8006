"""``trainproof epoch PATH...``: judge each training log on its own."""

from __future__ import annotations

import argparse

from trainproof.cli.common import add_judging_command


def register(commands: argparse._SubParsersAction) -> None:
    add_judging_command(
        commands,
        "epoch",
        "judge training logs, each on its own",
        "Judge each training log (a file, or a run directory holding one) by the single-run rules.",
        "trainer_state.json, trainer_0_log.txt, *.jsonl, *.csv, or a run directory",
    )
