"""``trainproof compare RUN... BASELINE``: judge runs against a known-good baseline."""

from __future__ import annotations

import argparse
from typing import Any

from trainproof.cli.common import add_judging_command


def _runs_and_baseline(paths: list[str]) -> tuple[list[str], dict[str, Any]]:
    *runs, baseline = paths
    return runs, {"baseline": baseline}


def register(commands: argparse._SubParsersAction) -> None:
    add_judging_command(
        commands,
        "compare",
        "judge runs against a known-good baseline",
        "Judge each RUN against BASELINE (the last path) by ratio rules, plus the single-run rules. "
        "When BASELINE is a folder of runs, each run of the RUN folders is compared with the baseline run at the same relative path.",
        "one or more runs, then the baseline",
        _runs_and_baseline,
        usage="RUN... BASELINE",
        needs="at least one run and a baseline",
    )
