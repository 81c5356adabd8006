"""``trainproof watch PATH``: follow a growing training log, a line per tick, exit non-zero on FAIL."""

from __future__ import annotations

import argparse
import sys
import time


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
    parser.add_argument("--format", help="log format (default: detected from the first bytes)")
    parser.add_argument("--config", metavar="PATH", help="configuration file (default: found from the working directory)")
    parser.add_argument("--fail-on", choices=("fail", "warn", "never"), help="what exits 1: fail (default), warn, never")
    parser.add_argument("--interval", type=float, default=5.0, metavar="SECONDS", help="seconds between ticks (default 5)")
    parser.add_argument("--until-fail", action="store_true", help="exit 1 at the first FAIL")
    parser.add_argument("--stall-timeout", type=float, metavar="SECONDS", help="WARN once per stall when the file has not grown for this long")
    parser.add_argument("--max-ticks", type=int, metavar="N", help="stop after N ticks")
    parser.add_argument("--no-color", action="store_true", help="no colour (also: NO_COLOR)")
    parser.set_defaults(run=run)


MAX_SECONDS = 86_400


def _seconds(value: float) -> bool:
    """A sleep the clock can take: above 0, finite, at most a day (NaN and inf are refused)."""
    return 0 < value <= MAX_SECONDS


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from trainproof import __version__
    from trainproof.cli.common import settings_from
    from trainproof.errors import EXIT_ERROR, InputError, UsageError
    from trainproof.readers import READERS
    from trainproof.render.text import finding_lines, wants_colour
    from trainproof.report import Report
    from trainproof.safe import visible
    from trainproof.watch import Watcher

    if args.format is not None and args.format not in READERS:
        raise UsageError(f"unknown format '{args.format}' (known: {', '.join(READERS)})")
    if not _seconds(args.interval) or (args.stall_timeout is not None and not _seconds(args.stall_timeout)):
        raise UsageError(f"--interval and --stall-timeout must be a number of seconds above 0 and at most {MAX_SECONDS:,}")
    if args.max_ticks is not None and args.max_ticks < 1:
        raise UsageError("--max-ticks must be at least 1")
    path = Path(args.path)
    if not path.exists():
        raise InputError(path, "does not exist")
    if path.is_dir():
        raise InputError(path, "is a directory; watch follows one log file")
    if not path.is_file():
        raise InputError(path, "is not a regular file (a FIFO or a device); watch follows a log file")
    settings = settings_from(args)
    colour = not args.no_color and wants_colour(sys.stdout)
    watcher = Watcher(path, args.format, settings)
    last_growth = time.monotonic()
    stalled = False
    ticks = 0
    try:
        while True:
            tick = watcher.tick()
            now = time.monotonic()
            if tick.grew:
                last_growth, stalled = now, False
            parts = [time.strftime("%H:%M:%S"), f"{tick.points:,} loss points", str(tick.verdict)]
            if tick.restarted:
                parts.append("(file truncated or replaced: read afresh)")
            if tick.waiting:
                parts.append(f"({tick.waiting})")
            print("  ".join(parts))
            for finding in tick.new_findings:
                print("\n".join(finding_lines(finding, colour)))
            if args.stall_timeout and not stalled and now - last_growth >= args.stall_timeout:
                stalled = True
                print(f"  [WARN] stalled: {visible(path)} has not grown for {now - last_growth:.0f} s (--stall-timeout {args.stall_timeout:g})")
            sys.stdout.flush()
            if args.until_fail and tick.subject is not None and str(tick.verdict) == "FAIL":
                return 1
            ticks += 1
            if args.max_ticks is not None and ticks >= args.max_ticks:
                break
            time.sleep(args.interval)
    except KeyboardInterrupt:
        print("  interrupted", file=sys.stderr)
    subject = watcher.last
    if subject is None:
        print(f"trainproof: error: {visible(path)}: nothing could be judged yet", file=sys.stderr)
        return EXIT_ERROR
    return Report("watch", (subject,), __version__, settings.fail_on).exit_code
