"""``trainproof epoch PATH...``: judge each training log on its own."""

from __future__ import annotations

import argparse

from trainproof.cli.common import add_judging_command
from trainproof.runs.readers.discover import MAX_DEPTH


def register(commands: argparse._SubParsersAction) -> None:
    add_judging_command(
        commands,
        "epoch",
        "judge training logs, each on its own",
        "Judge each training log (a file, or a run directory holding one) by the single-run rules. "
        f"A folder of several runs (lightning_logs/, runs/, mlruns/, a sweep) is searched {MAX_DEPTH} folder levels down, each run judged on its own.",
        "trainer_state.json, trainer_0_log.txt, *.jsonl, *.csv, a run directory, or a folder of runs",
    )
