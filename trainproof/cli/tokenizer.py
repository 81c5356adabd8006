"""``trainproof tokenizer TOKENIZER TEXT...``: judge a tokenizer against the text it will be trained on."""

from __future__ import annotations

import argparse
from typing import Any

from trainproof.cli.common import add_follow_links, add_judging_command
from trainproof.cli.data import _positive


def _inputs(paths: list[str]) -> tuple[list[str], dict[str, Any]]:
    return paths[1:], {"tokenizer": paths[0]}


def _arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("tokenizer")
    group.add_argument("--max-tokens", type=_positive(int), metavar="N", help="a line over N tokens is too long (the model's context, or the aligner's budget)")
    add_follow_links(group, "a text (or an LJSpeech clip)")


def _options(args: argparse.Namespace) -> dict[str, Any]:
    return {"max_tokens": args.max_tokens, "follow_links": args.follow_links, "progress": not args.json}


def register(commands: argparse._SubParsersAction) -> None:
    add_judging_command(
        commands,
        "tokenizer",
        "judge a tokenizer against the text it will be trained on",
        "Judge a tokenizer (a sentencepiece .model, a HuggingFace tokenizer.json, or a local HuggingFace tokenizer folder) "
        "against each text (a text file with one transcript a line, a JSONL manifest, or an LJSpeech metadata.csv) by the "
        "tokenizer rules: unknown and byte-fallback tokens, round trips, fertility, lengths, numbers, special tokens.",
        "the tokenizer, then one or more texts",
        inputs=_inputs,
        arguments=_arguments,
        options=_options,
        formats=False,
        usage="TOKENIZER TEXT...",
        needs="a tokenizer and at least one text",
    )
