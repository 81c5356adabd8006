"""``trainproof text DATASET...``: judge LLM fine-tuning datasets (JSON Lines) before training on them."""

from __future__ import annotations

import argparse
from typing import Any

from trainproof.cli.common import add_follow_links, add_judging_command
from trainproof.cli.data import _positive


def _arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("dataset")
    group.add_argument("--tokenizer", metavar="PATH", help="measure rows in tokens with this tokenizer (a .model, a tokenizer.json or a tokenizer folder)")
    group.add_argument("--max-len", type=_positive(int), metavar="N", help="the trainer's maximum sequence length in tokens (needs --tokenizer)")
    add_follow_links(group, "a dataset")


def _options(args: argparse.Namespace) -> dict[str, Any]:
    from trainproof.io.errors import UsageError

    if args.max_len is not None and args.tokenizer is None:
        raise UsageError("--max-len needs --tokenizer: lengths are counted in the tokenizer's tokens")
    return {"tokenizer": args.tokenizer, "max_len": args.max_len, "follow_links": args.follow_links, "progress": not args.json}


def register(commands: argparse._SubParsersAction) -> None:
    add_judging_command(
        commands,
        "text",
        "judge LLM fine-tuning datasets (JSON Lines) before training on them",
        "Judge each fine-tuning dataset (JSON Lines of text, prompt/completion, instruction/input/output, chat messages or "
        "prompt/chosen/rejected preference pairs) by "
        "the text rules: lines that are not rows, rows of no known shape, empty fields, roles out of order, duplicates, and "
        "with --tokenizer and --max-len, rows too long and rows whose answer truncation cuts off.",
        "a fine-tuning JSONL file",
        arguments=_arguments,
        options=_options,
        formats=False,
    )
