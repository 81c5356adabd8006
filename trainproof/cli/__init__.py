"""``trainproof`` command line: parse, call the library, render, write, exit.

Exit codes (see :mod:`trainproof.io.errors`): 0 judged and no FAIL, 1 a FAIL,
2 could not judge (bad input, bad arguments, missing dependency, internal
error), always with one line on stderr and never a traceback unless
``--debug`` asks for it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

# Every command needs numpy; imported here, at the top of the stack, rather than eight imports deep (cli.epoch ->
# cli.common -> config -> readers -> model -> numpy), where CPython 3.11 maps and unmaps a frame-stack chunk on
# nearly every call numpy's import makes (about 900 munmap calls, 15 ms of a 110 ms `trainproof epoch`).
import numpy  # noqa: F401

from trainproof.io.about import __version__
from trainproof.io.errors import EXIT_ERROR, MissingDependencyError, TrainproofError
from trainproof.io.safe import visible


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_ERROR, f"trainproof: error: {visible(message)} (see '{self.prog} --help')\n")


JUDGING_COMMANDS = ("epoch", "compare", "data", "tokenizer", "text")
"""The commands that judge inputs into a report with every output; the GitHub Action runs exactly these."""
COMMANDS = JUDGING_COMMANDS + ("watch", "rules")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; ``only`` builds just that subcommand (the rest cost time on every hook run)."""
    import importlib

    parser = _Parser(
        prog="trainproof",
        description="A deterministic linter for ML training runs: PASS / WARN / FAIL from the log a run already writes.",
        epilog="Exit codes: 0 judged, no FAIL; 1 at least one FAIL; 2 could not judge.",
    )
    parser.add_argument("--version", action="version", version=f"trainproof {__version__}")
    parser.add_argument("--debug", action="store_true", help="show a traceback on internal errors")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS if only is None else (only,):
        importlib.import_module(f"trainproof.cli.{name}").register(commands)
    return parser


def _command_in(argv: Sequence[str]) -> str | None:
    """The subcommand named on the command line, if it is the first non-option word."""
    for word in argv:
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def option_naming_a_file(argv: Sequence[str]) -> str | None:
    """The first word before ``--`` that reads as an option yet names a file or folder in the working directory.

    A hook or a workflow that expands a glob puts a committed file's name where
    options go unless ``--`` comes first: a file named ``--tokenizer=chat.jsonl``
    would choose the tokenizer, ``--json-file=x.jsonl`` where the report goes.
    Such a word is ambiguous, so it is refused rather than guessed at, whoever
    wrote the command line. ``-`` and ``--`` are the conventions, never options.
    """
    import os

    for word in argv:
        if word == "--":
            return None
        if word.startswith("-") and word != "-" and os.path.lexists(word):
            return word
    return None


def process_main() -> int:
    """The ``trainproof`` process (the console script and ``python -m trainproof``): :func:`main`, in a process tuned
    for a short command (:mod:`trainproof.cli.process`; not for ``watch``)."""
    from trainproof.cli import process

    command = _command_in(sys.argv[1:])
    return process.run_tuned(main, short=command != "watch", corpus=command == "data")


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if (word := option_naming_a_file(argv)) is not None:
        command = _command_in(argv) or "COMMAND"
        print(
            f"trainproof: error: {visible(word)}: reads as an option but names a file or folder here; put -- before the paths "
            f"(trainproof {command} [OPTIONS] -- PATH...)",
            file=sys.stderr,
        )
        return EXIT_ERROR
    parser = build_parser(_command_in(argv))
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    try:
        return int(args.run(args))
    except MissingDependencyError as exc:
        from trainproof.cli.hints import missing_dependency

        print(f"trainproof: error: {visible(missing_dependency(exc, args.command))}", file=sys.stderr)
        return EXIT_ERROR
    except TrainproofError as exc:
        print(f"trainproof: error: {visible(exc)}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("trainproof: interrupted", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - the contract is one line, never a traceback
        if args.debug:
            raise
        print(f"trainproof: internal error: {type(exc).__name__}: {visible(exc)} (run with --debug for the traceback)", file=sys.stderr)
        return EXIT_ERROR
