"""``trainproof compare RUN... BASELINE``: judge runs against a known-good baseline."""

from __future__ import annotations

import argparse

from trainproof.cli.common import add_input_options, add_output_options, check_outputs, emit, settings_from


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "compare",
        help="judge runs against a known-good baseline",
        description="Judge each RUN against BASELINE (the last path) by ratio rules, plus the single-run rules.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="one or more runs, then the baseline")
    add_input_options(parser)
    add_output_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from trainproof.errors import UsageError
    from trainproof.judge import judge_compare

    if len(args.paths) < 2:
        raise UsageError("compare needs at least one run and a baseline: trainproof compare RUN... BASELINE")
    check_outputs(args)
    *runs, baseline = args.paths
    report = judge_compare(runs, baseline, fmt=args.format, settings=settings_from(args))
    return emit(report, args)
