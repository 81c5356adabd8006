"""What every judging subcommand shares: input and output options, writing, exit."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from trainproof.errors import UsageError
from trainproof.readers import READERS
from trainproof.report import Report, Verdict


def add_input_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=sorted(READERS), help="log format (default: detected from the content)")


def add_output_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("output")
    group.add_argument("--json", action="store_true", help="print one JSON document instead of the text report")
    group.add_argument("--html", metavar="PATH", help="also write a self-contained HTML report with the curves")
    group.add_argument("--no-color", action="store_true", help="no colour in the text report (also: NO_COLOR)")


def write_output(path: str, content: str, inputs: Iterable[str]) -> None:
    """Write one output file atomically, refusing to overwrite an input."""
    target = Path(path)
    resolved = target.resolve()
    for item in inputs:
        if Path(item).resolve() == resolved:
            raise UsageError(f"{path}: is one of the inputs; refusing to overwrite it")
    if target.is_dir():
        raise UsageError(f"{path}: is a directory; name a file to write")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"{path}: cannot write it, the directory {parent} does not exist")
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; an output is an ordinary file
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(content)
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise UsageError(f"{path}: cannot write it: {exc.strerror or exc}") from None


def emit(report: Report, args: argparse.Namespace, inputs: list[str]) -> int:
    """Render what was asked, write the files, report what could not be judged, return the exit code."""
    from trainproof.render import render

    if args.html:
        write_output(args.html, render("html", report), inputs)
    if args.json:
        text = render("json", report)
    else:
        from trainproof.render.text import wants_colour

        text = render("text", report, colour=not args.no_color and wants_colour(sys.stdout))
    write_stdout(text)
    for subject in report.subjects:
        if subject.verdict is Verdict.NOT_CHECKED:
            print(f"trainproof: error: {subject.path}: {subject.unjudged}", file=sys.stderr)
    return report.exit_code


def write_stdout(text: str) -> None:
    """Write the report; a reader that went away (``| head``) is not an error worth a traceback."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
