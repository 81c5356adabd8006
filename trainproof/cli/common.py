"""What every judging subcommand shares: input and output options, configuration, writing, exit."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from trainproof.config import FAIL_ON, Settings
from trainproof.errors import UsageError
from trainproof.readers import READERS
from trainproof.report import Report, Verdict

# Output option -> renderer; each writes one file, all from the same report.
FILE_OUTPUTS = (("html", "html"), ("sarif", "sarif"), ("junit", "junit"), ("markdown", "markdown"), ("json_file", "json"))


def add_input_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=sorted(READERS), help="log format (default: detected from the content)")
    parser.add_argument("--config", metavar="PATH", help="configuration file (default: nearest .trainproof.toml or pyproject.toml [tool.trainproof])")
    parser.add_argument("--fail-on", choices=FAIL_ON, help="what exits 1: fail (default), warn (WARN too), never")


def add_output_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("output (any number of them, all from the same report)")
    group.add_argument("--json", action="store_true", help="print one JSON document instead of the text report")
    group.add_argument("--json-file", metavar="PATH", help="also write the JSON document to PATH")
    group.add_argument("--html", metavar="PATH", help="also write a self-contained HTML report with the curves")
    group.add_argument("--sarif", metavar="PATH", help="also write SARIF 2.1.0 for GitHub code scanning")
    group.add_argument("--junit", metavar="PATH", help="also write JUnit XML for test reporters")
    group.add_argument("--markdown", metavar="PATH", help="also write markdown for a pull-request comment")
    group.add_argument("--github", action="store_true", help="in GitHub Actions: append the markdown to the job summary and print annotations")
    group.add_argument("--no-color", action="store_true", help="no colour in the text report (also: NO_COLOR)")


def settings_from(args: argparse.Namespace) -> Settings:
    from trainproof.config import load

    return load(args.config).with_fail_on(args.fail_on)


def write_output(path: str, content: str) -> None:
    """Write one output file atomically (check_outputs has already refused inputs and collisions)."""
    target = Path(path)
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


def check_outputs(args: argparse.Namespace) -> None:
    """Refuse impossible output requests before any work is done."""
    inputs = {Path(p).resolve() for p in args.paths}
    targets: dict[Path, str] = {}
    for option, _ in FILE_OUTPUTS:
        value = getattr(args, option)
        if value is None:
            continue
        resolved = Path(value).resolve()
        if resolved in inputs:
            raise UsageError(f"{value}: is one of the inputs; refusing to overwrite it")
        if resolved in targets:
            raise UsageError(f"{value}: named by both --{targets[resolved]} and --{option.replace('_', '-')}")
        targets[resolved] = option.replace("_", "-")


def emit(report: Report, args: argparse.Namespace) -> int:
    """Render what was asked, write the files, report what could not be judged, return the exit code."""
    from trainproof.render import render

    base = os.getcwd()
    for option, name in FILE_OUTPUTS:
        target = getattr(args, option)
        if target is not None:
            options = {"base": base} if name == "sarif" else {}
            write_output(target, render(name, report, **options))
    if args.github:
        github(report, base, annotate=not args.json)
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


def github(report: Report, base: str, annotate: bool) -> None:
    """The job summary and annotations, when running inside GitHub Actions."""
    from trainproof.render import render
    from trainproof.render.github import annotations

    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary:
        print("trainproof: note: --github does nothing outside GitHub Actions (GITHUB_STEP_SUMMARY is not set)", file=sys.stderr)
        return
    try:
        with open(summary, "a", encoding="utf-8") as handle:
            handle.write(render("markdown", report) + "\n")
    except OSError as exc:
        raise UsageError(f"{summary}: cannot append the job summary: {exc.strerror or exc}") from None
    if annotate:
        write_stdout(annotations(report, base))


def write_stdout(text: str) -> None:
    """Write to stdout; a reader that went away (``| head``) is not an error worth a traceback."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
