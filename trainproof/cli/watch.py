"""``trainproof watch PATH``: follow a growing training log, a line per tick, exit non-zero on FAIL."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from trainproof.cli.common import add_input_options


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "watch",
        help="follow a growing training log and judge it as it grows",
        description=(
            "Follow a growing training log (any format trainproof reads), judging it as it grows. "
            "Prints a line per tick; on Ctrl-C (or after --max-ticks) exits with the last verdict's code."
        ),
    )
    parser.add_argument("path", metavar="PATH", help="the log file to follow")
    add_input_options(parser)
    parser.add_argument("--interval", type=float, default=5.0, metavar="SECONDS", help="seconds between ticks (default 5)")
    parser.add_argument("--until-fail", action="store_true", help="exit 1 at the first FAIL")
    parser.add_argument("--stall-timeout", type=float, metavar="SECONDS", help="TP-LOG-STALLED (WARN) once per stall when the file has not grown for this long")
    parser.add_argument("--max-ticks", type=int, metavar="N", help="stop after N ticks")
    parser.add_argument("--no-color", action="store_true", help="no colour (also: NO_COLOR)")
    parser.set_defaults(run=run)


MAX_SECONDS = 86_400


def _seconds(value: float) -> bool:
    """A sleep the clock can take: above 0, finite, at most a day (NaN and inf are refused)."""
    return 0 < value <= MAX_SECONDS


def _checked(args: argparse.Namespace) -> Path:
    """The path to follow, once the arguments make sense; a UsageError or InputError saying why not."""
    from trainproof.io.errors import InputError, UsageError

    if not _seconds(args.interval) or (args.stall_timeout is not None and not _seconds(args.stall_timeout)):
        raise UsageError(f"--interval and --stall-timeout must be a number of seconds above 0 and at most {MAX_SECONDS:,}")
    if args.max_ticks is not None and args.max_ticks < 1:
        raise UsageError("--max-ticks must be at least 1")
    path = Path(args.path)
    if not path.exists():
        raise InputError(path, "does not exist")
    if not path.is_file() and not path.is_dir():
        raise InputError(path, "is not a regular file (a FIFO or a device); watch follows a log file or a run directory")
    return path


def run(args: argparse.Namespace) -> int:
    from trainproof.checks.registry import LIVE_RULES
    from trainproof.checks.watching import WATCH_RULES
    from trainproof.cli.common import settings_from
    from trainproof.commands.watch import Watcher
    from trainproof.io import figures
    from trainproof.io.errors import EXIT_ERROR, EXIT_FAIL
    from trainproof.io.safe import visible
    from trainproof.render.grouped import block
    from trainproof.render.text import block_lines, wants_colour
    from trainproof.report import Verdict, grouped

    path = _checked(args)
    settings = settings_from(args)
    colour = not args.no_color and wants_colour(sys.stdout)
    watcher = Watcher(path, args.format, settings, stall_timeout=args.stall_timeout)
    summaries = {rule.id: rule.summary for rule in LIVE_RULES + WATCH_RULES}
    ticks = 0
    try:
        while True:
            tick = watcher.tick()
            parts = [time.strftime("%H:%M:%S"), figures.plural(tick.points, "loss point"), str(tick.verdict)]
            if tick.restarted:
                parts.append("(a new run in the folder: read afresh)" if path.is_dir() else "(file truncated or replaced: read afresh)")
            if tick.waiting:
                parts.append(f"({tick.waiting})")
            print("  ".join(parts))
            subject = tick.subject
            for group in grouped(tick.new_findings) if subject is not None else ():
                assert subject is not None
                print("\n".join(block_lines(block(subject, group, summaries.get(group.rule_id, "")), colour)))
            sys.stdout.flush()
            if args.until_fail and tick.subject is not None and tick.verdict is Verdict.FAIL:
                return EXIT_FAIL
            ticks += 1
            if args.max_ticks is not None and ticks >= args.max_ticks:
                break
            time.sleep(args.interval)
    except KeyboardInterrupt:
        print("  interrupted", file=sys.stderr)
    if watcher.report is None:
        print(f"trainproof: error: {visible(path)}: nothing could be judged yet", file=sys.stderr)
        return EXIT_ERROR
    return watcher.report.exit_code
