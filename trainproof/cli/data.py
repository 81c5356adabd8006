"""``trainproof data MANIFEST...``: judge speech/TTS datasets before training on them."""

from __future__ import annotations

import argparse
from typing import Any

from trainproof.cli.common import add_follow_links, add_judging_command
from trainproof.data import ENGINES

MAX_JOBS = 1024
"""The most decoding processes --jobs may ask for: a mistyped count must not start a process per clip."""


def _positive(kind: type, most: int | None = None) -> Any:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be above 0: {text!r}")
        if most is not None and value > most:
            raise argparse.ArgumentTypeError(f"at most {most:,}: {text!r}")
        return value

    return parse


def _folder_name(text: str) -> str:
    if not text:
        raise argparse.ArgumentTypeError("needs a folder name, got an empty one")
    return text


def _column_name(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("needs a column name, got an empty one")
    return text


def _arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("dataset")
    group.add_argument(
        "--root",
        metavar="DIR",
        help="resolve every relative audio path against DIR, or a URI (s3://, gs://, file://) (overrides each layout's own rule)",
    )
    group.add_argument("--audio-dir", metavar="DIR", help="where an LJSpeech-style metadata.csv's clips are (default: wavs/ or audio/ beside it)")
    group.add_argument(
        "--audio-column",
        type=_column_name,
        metavar="NAME",
        help="the CSV/TSV column or JSONL key holding each clip's audio path (default: the first of audio_filepath, "
        "wav_filename, wav, audio_path, ... there; a note names the others when there are several)",
    )
    group.add_argument(
        "--text-column",
        type=_column_name,
        metavar="NAME",
        help="the CSV/TSV column or JSONL key holding each clip's transcript (default: the first of normalized_text, text, "
        "transcript, sentence, wrd, ... there; a note names the others when there are several)",
    )
    group.add_argument("--sample-rate", type=_positive(int), metavar="HZ", help="the sample rate the clips must have (default: one rate, whichever)")
    group.add_argument("--channels", type=_positive(int), metavar="N", help="the channel count the clips must have (default: one count, whichever)")
    group.add_argument(
        "--jobs",
        type=_positive(int, MAX_JOBS),
        metavar="N",
        help="decoding processes (default: every core); with --engine ray and no address, the local Ray cluster's CPUs",
    )
    group.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="where clips are decoded: this machine's cores (local, the default) or a Ray cluster's (ray: needs the [ray] extra)",
    )
    group.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="with --engine ray: the cluster to join (auto, host:port, or ray://host:port; default: start a local one)",
    )
    add_follow_links(group, "a manifest, a list, a transcript or a clip", "the dataset's folder (and the working directory, for NeMo, CSV and Kaldi)")
    group.add_argument(
        "--no-audio",
        action="store_true",
        help="with --html: show each flagged clip's waveform without embedding its audio (the report is then a few kB a clip)",
    )
    group.add_argument("--no-cache", action="store_true", help="decode every clip; read and write no cache")
    group.add_argument("--cache-dir", type=_folder_name, metavar="DIR", help="where per-clip records are cached (default: .trainproof_cache)")


def _options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "root": args.root,
        "audio_dir": args.audio_dir,
        "audio_column": args.audio_column,
        "text_column": args.text_column,
        "sample_rate": args.sample_rate,
        "channels": args.channels,
        "jobs": args.jobs,
        "engine": args.engine,
        "ray_address": args.ray_address,
        "no_cache": args.no_cache,
        "cache_dir": args.cache_dir,
        "follow_links": args.follow_links,
        "progress": not args.json,
        # the flagged clips' excerpts, read only for the report that shows them
        "excerpts": None if args.html is None else "waveform" if args.no_audio else "audio",
    }


def register(commands: argparse._SubParsersAction) -> None:
    add_judging_command(
        commands,
        "data",
        "judge speech/TTS datasets before training on them",
        "Judge each speech dataset (an LJSpeech folder or metadata.csv, a NeMo JSONL or CSV/TSV manifest, a Kaldi data dir, "
        "or a folder of audio with .txt/.lab transcripts) by the data rules: the manifest, every clip's audio, the transcripts.",
        "a manifest, or a dataset folder",
        arguments=_arguments,
        options=_options,
        formats=False,
    )
