"""What every judging subcommand shares: input and output options, configuration, writing, exit."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from trainproof.config import FAIL_ON, Settings
from trainproof.io.errors import EXIT_ERROR, EXIT_FAIL, UsageError
from trainproof.io.safe import visible
from trainproof.report import Report, Verdict
from trainproof.runs.readers import READERS

# Output option -> renderer; each writes one file, all from the same report.
FILE_OUTPUTS = (("html", "html"), ("sarif", "sarif"), ("junit", "junit"), ("markdown", "markdown"), ("json_file", "json"))


def add_input_options(parser: argparse.ArgumentParser, formats: bool = True) -> None:
    if formats:
        parser.add_argument("--format", choices=sorted(READERS), help="log format (default: detected from the content)")
    if formats:
        parser.add_argument(
            "--map",
            action="append",
            metavar="SERIES=NAME",
            help="the name the log writes for a series (loss, eval_loss, learning_rate, grad_norm, step, epoch, "
            "wall_time, step_time, loader_time), over the names trainproof knows; repeatable",
        )
        parser.add_argument(
            "--metric",
            action="append",
            metavar="NAME=min|max",
            help="an eval metric to judge and which way is better (min: lower is better, like wer; max: higher, like "
            "accuracy), for a name whose words do not say; repeatable",
        )
    parser.add_argument("--config", metavar="PATH", help="configuration file (default: nearest .trainproof.toml or pyproject.toml [tool.trainproof])")
    parser.add_argument("--fail-on", choices=FAIL_ON, help="what exits 1: fail (default), warn (WARN too), never")


def add_follow_links(group: argparse._ArgumentGroup, reads: str, within: str = "its folder and the working directory") -> None:
    """``--follow-links``, for a command that reads ``reads`` under the link rule of :mod:`trainproof.io.access`."""
    group.add_argument(
        "--follow-links",
        action="store_true",
        help=f"read {reads} through a symlink that leads out of {within}, or into a .git folder (refused by default: "
        "a committed link could make a report quote a credentials file or a token)",
    )


def add_output_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("output (any number of them, all from the same report)")
    group.add_argument("--json", action="store_true", help="print one JSON document instead of the text report")
    group.add_argument("--json-file", metavar="PATH", help="also write the JSON document to PATH")
    group.add_argument("--html", metavar="PATH", help="also write a self-contained HTML report with the charts")
    group.add_argument("--sarif", metavar="PATH", help="also write SARIF 2.1.0 for GitHub code scanning")
    group.add_argument("--junit", metavar="PATH", help="also write JUnit XML for test reporters")
    group.add_argument("--markdown", metavar="PATH", help="also write markdown for a pull-request comment")
    group.add_argument(
        "--markdown-charts",
        choices=("on", "off"),
        default="on",
        help="Mermaid charts in the markdown and the job summary (loss curves, a dataset's histograms): on (default) or off",
    )
    group.add_argument("--github", action="store_true", help="in GitHub Actions: append the markdown to the job summary and print annotations")
    group.add_argument("--no-color", action="store_true", help="no colour in the text report (also: NO_COLOR)")


class _PathsRequired(argparse.HelpFormatter):
    """Usage shows ``PATH [PATH ...]``: the paths are required, though counted after parsing rather than by argparse
    (see :func:`too_few_paths`)."""

    def _format_args(self, action: argparse.Action, default_metavar: str) -> str:
        if action.dest == "paths":
            return "{0} [{0} ...]".format(*self._metavar_formatter(action, default_metavar)(1))
        return super()._format_args(action, default_metavar)


def too_few_paths(name: str, paths: list[str], needs: str, usage: str) -> str:
    """What a command given fewer paths than it needs says: how to call it, or, run by a pre-commit hook (whose paths
    come from its ``args``, or from the files it matched), the ``args`` the hook needs."""
    from trainproof.cli.hints import hook_args, under_pre_commit

    if under_pre_commit():
        got = "none" if not paths else f"{len(paths)} path{'' if len(paths) == 1 else 's'}"
        return f"trainproof {name} needs {needs}, and the hook gave it {got}: name them in the hook's args in .pre-commit-config.yaml, {hook_args(usage)}"  # fmt: skip
    return f"trainproof {name} needs {needs}: trainproof {name} [OPTIONS] -- {usage}"


def add_judging_command(
    commands: argparse._SubParsersAction,
    name: str,
    summary: str,
    description: str,
    paths_help: str,
    inputs: Callable[[list[str]], tuple[list[str], dict[str, Any]]] = lambda paths: (paths, {}),
    arguments: Callable[[argparse.ArgumentParser], None] | None = None,
    options: Callable[[argparse.Namespace], dict[str, Any]] = lambda args: {"fmt": args.format},
    formats: bool = True,
    usage: str = "PATH...",
    needs: str = "at least one PATH to judge",
) -> None:
    """A subcommand that judges paths by one command of :mod:`trainproof.judge` and writes every output asked for.

    ``usage`` names the paths it takes (``TOKENIZER TEXT...``: at least as
    many as it has words) and ``needs`` says so in words; fewer is a
    UsageError (:func:`too_few_paths`). ``inputs`` splits the paths typed
    into the inputs judged and the command's options (compare's last path is
    its baseline). ``arguments`` adds the command's own options and
    ``options`` turns them into the keyword options its Command reads.
    """

    def run(args: argparse.Namespace) -> int:
        from trainproof.commands import judge
        from trainproof.io.memo import invocation

        if len(args.paths) < len(usage.split()):
            raise UsageError(too_few_paths(name, args.paths, needs, usage))
        sources, extra = inputs(args.paths)
        chosen = options(args)
        with invocation():  # what is read to check the outputs (a folder's search, a manifest) is judged as read, not read again
            check_outputs(args, name, {**chosen, **extra})
            settings = settings_from(args)
            report = judge(name, sources, settings, **chosen, **extra)
        return emit(report, args)

    parser = commands.add_parser(name, help=summary, description=description, formatter_class=_PathsRequired)
    parser.add_argument("paths", nargs="*", metavar="PATH", help=paths_help)  # counted in run(), to say what a hook lacks
    add_input_options(parser, formats)
    if arguments is not None:
        arguments(parser)
    add_output_options(parser)
    parser.set_defaults(run=run)


def settings_from(args: argparse.Namespace) -> Settings:
    from trainproof.config import load

    return load(args.config).with_fail_on(args.fail_on).with_map(getattr(args, "map", None)).with_metrics(getattr(args, "metric", None))


def check_outputs(args: argparse.Namespace, name: str, options: Mapping[str, Any]) -> None:
    """Refuse impossible or destructive output requests before any work is done (``options``: the command's, as
    :func:`trainproof.judge.judge` is given them). Files are told apart by identity (device and inode), so a symlink or
    a hard link to an input is refused like the input itself."""
    from trainproof.commands import command
    from trainproof.io import outputs

    judging = command(name)
    protected: dict[outputs.Identity, tuple[str, str]] = {}  # identity -> (the file as the input names it, why it is read)

    def protect(source: str | os.PathLike[str], why: str) -> None:
        if (found := outputs.identity(source)) is not None:
            protected.setdefault(found, (str(source), why))

    for path in args.paths:
        for read in judging.reads(str(path)):
            protect(read, "is read as an input")
    for option_file, why in judging.reads_options(options):  # what an option names (text's --tokenizer)
        protect(option_file, why)
    if args.config:
        protect(args.config, "is the configuration file")
    targets = [(option.replace("_", "-"), str(value)) for option, _ in FILE_OUTPUTS if (value := getattr(args, option)) is not None]
    summary = os.environ.get("GITHUB_STEP_SUMMARY") if getattr(args, "github", False) else None
    there = {path: outputs.identity(path) for path in [*(value for _, value in targets), *([summary] if summary else [])]}
    if any(found is not None and found not in protected for found in there.values()):
        # an output already there may be a file an input lists (a clip, a transcript, under any name): only then are the
        # inputs' lists read (once: judging takes the same reading) and each listed file compared by identity
        for path in args.paths:
            for listed in judging.reads_listed(str(path), options):
                protect(listed, "is read as an input")
    if summary and (found := there[summary]) in protected:
        source, why = protected[found]
        raise UsageError(f"GITHUB_STEP_SUMMARY ({visible(summary)}) is {visible(source)}, which {why}; refusing to append to it")
    named: dict[object, str] = {}
    for flag, value in targets:
        outputs.check_target(flag, value)
        found = there[value]
        if found in protected:
            raise UsageError(f"{_same_file(value, *protected[found])}; refusing to overwrite it")
        key = found or Path(value).resolve()
        if key in named:
            raise UsageError(f"{visible(value)}: named by both --{named[key]} and --{flag}")
        named[key] = flag


def _same_file(output: str, source: str, why: str) -> str:
    """What an output path is, said of the input file it would overwrite: ``a.txt: is read as an input``, or, for
    another name of it (a hard link, a symlink), ``out.json: is the same file as a.txt, which is read as an input``."""
    if os.path.abspath(output) == os.path.abspath(source):
        return f"{visible(source)}: {why}"
    return f"{visible(output)}: is the same file as {visible(source)}, which {why}"


def emit(report: Report, args: argparse.Namespace) -> int:
    """Render what was asked, write the files, report what could not be judged, return the exit code."""
    from trainproof.io import outputs
    from trainproof.render import render

    base = os.getcwd()
    unwritten: list[str] = []
    for option, name in FILE_OUTPUTS:
        target = getattr(args, option)
        if target is not None:
            options: dict[str, object] = {"base": base} if name == "sarif" else {}
            if name == "markdown":
                options["charts"] = args.markdown_charts == "on"
            try:
                outputs.write(target, render(name, report, **options))
            except UsageError as exc:  # the other outputs and the report still go out
                unwritten.append(str(exc))
    if args.github:
        try:
            github(report, base, annotate=not args.json, charts=args.markdown_charts == "on")
        except UsageError as exc:
            unwritten.append(str(exc))
    if args.json:
        text = render("json", report)
    else:
        from trainproof.render.text import wants_colour

        text = render("text", report, colour=not args.no_color and wants_colour(sys.stdout))
    write_stdout(text)
    for subject in report.subjects:
        if subject.verdict is Verdict.NOT_CHECKED:
            print(f"trainproof: error: {visible(subject.path)}: {visible(subject.unjudged)}", file=sys.stderr)
    for problem in unwritten:
        print(f"trainproof: error: {problem}", file=sys.stderr)
    if unwritten and report.exit_code != EXIT_FAIL:
        return EXIT_ERROR
    return report.exit_code


def github(report: Report, base: str, annotate: bool, charts: bool = True) -> None:
    """The job summary and annotations, when running inside GitHub Actions."""
    from trainproof.render import render
    from trainproof.render.github import annotations

    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary:
        print("trainproof: note: --github does nothing outside GitHub Actions (GITHUB_STEP_SUMMARY is not set)", file=sys.stderr)
        return
    from trainproof.io import outputs

    try:
        outputs.append(summary, render("markdown", report, charts=charts) + "\n")
    except OSError as exc:
        raise UsageError(f"{visible(summary)}: cannot append the job summary: {exc.strerror or exc}") from None
    if annotate:
        write_stdout(annotations(report, base))


def write_stdout(text: str) -> None:
    """Write to stdout; a reader that went away (``| head``) is not an error worth a traceback.

    What the stream's encoding cannot carry is written as a backslash escape.
    """
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    text = text.encode(encoding, errors="backslashreplace").decode(encoding)
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
