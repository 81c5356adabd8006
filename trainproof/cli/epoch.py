"""``trainproof epoch PATH...``: judge each training log on its own."""

from __future__ import annotations

import argparse

from trainproof.cli.common import add_input_options, add_output_options, check_outputs, emit, settings_from


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "epoch",
        help="judge training logs, each on its own",
        description="Judge each training log (a file, or a run directory holding one) by the single-run rules.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="trainer_state.json, trainer_0_log.txt, *.jsonl, *.csv, or a run directory")
    add_input_options(parser)
    add_output_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from trainproof.judge import judge_epoch

    check_outputs(args)
    report = judge_epoch(args.paths, fmt=args.format, settings=settings_from(args))
    return emit(report, args)
