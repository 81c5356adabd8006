"""``trainproof tokenizer``: one tokenizer judged against each text it will be trained on.

The tokenizer is loaded once (a tokenizer that cannot be loaded is an
InputError: nothing can be judged, exit 2); each text is one subject,
encoded once with the library's batch encoder in chunks of ENCODE_CHUNK
lines, so memory holds the token ids, not copies of the text. A line the
tokenizer cannot encode (a lone surrogate from a ``"\\ud800"`` escape) is
left out of the judgement and named in a note; the rest are judged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from trainproof.checks.registry import RULES
from trainproof.config import Settings
from trainproof.io import figures
from trainproof.io.errors import UsageError
from trainproof.io.progress import terminal_progress
from trainproof.io.safe import quoted
from trainproof.judge import Command, Prepared, Stage
from trainproof.report import Subject
from trainproof.tokenizer.transcripts import Transcripts, read_transcripts

ENCODE_CHUNK = 16384
"""Lines encoded per batch call when a progress line is shown (it moves once per chunk)."""



@dataclass(frozen=True)
class EncodedText:
    """A text and its encoding by the tokenizer under test."""

    text: Transcripts
    ids: tuple[Sequence[int], ...]


def encode(tokenizer: Any, text: Transcripts, progress: Callable[[int, int], None] | None = None) -> EncodedText:
    """The text's encoding: in one batch call without a progress line (the library's threads see every line), else
    in chunks of ENCODE_CHUNK so the line can move. Lines the tokenizer cannot encode are left out of the text, with
    a note naming them; NothingEncoded when it can encode none."""
    from trainproof.tokenizer.batches import Failed, each, failed_note

    total = len(text.texts)
    chunk = max(total, 1) if progress is None else ENCODE_CHUNK
    got: list[list[int] | Failed] = []
    for start in range(0, total, chunk):
        got.extend(each(tokenizer.encode_batch, text.texts[start : start + chunk]))
        if progress is not None:
            progress(len(got), total)
    if Failed not in map(type, got):  # every line encoded, told in one C pass over the results
        return EncodedText(text, tuple(got))  # type: ignore[arg-type]  # none is a Failed
    encoded = tuple(ids for ids in got if not isinstance(ids, Failed))
    if not encoded:
        raise NothingEncoded(next(ids.reason for ids in got if isinstance(ids, Failed)))
    failed = [(k, ids.reason) for k, ids in enumerate(got) if isinstance(ids, Failed)]
    kept = [k for k, ids in enumerate(got) if not isinstance(ids, Failed)]
    note = failed_note([(text.lines[k], why) for k, why in failed], "line", "left out of the judgement")
    rest = replace(
        text,
        lines=tuple(text.lines[k] for k in kept),
        texts=tuple(text.texts[k] for k in kept),
        durations=tuple(text.durations[k] for k in kept),
        notes=(*text.notes, note),
    )
    return EncodedText(rest, encoded)


class NothingEncoded(Exception):
    """The tokenizer can encode no line of a text; the message is why it cannot encode the first."""


def summarize(tokenizer: Any, encoded: EncodedText, ctx: Any) -> dict:
    lengths = ctx.lengths
    words = int(ctx.words.sum())
    unsegmented = int(ctx.unsegmented.sum())
    chars = int(ctx.chars.sum())
    out: dict = {
        "tokenizer": tokenizer.path,
        "tokenizer_kind": tokenizer.kind,
        "vocab_size": tokenizer.vocab_size,
        "lines": len(encoded.text.texts),
        "tokens": ctx.total,
        "tokens_per_word": round(ctx.total / words, 4) if words and not unsegmented else None,
        "tokens_per_char": round(ctx.total / chars, 4) if chars else None,
        "words": words,
        "unsegmented_chars": unsegmented,
        "unsegmented_scripts": ", ".join(ctx.unsegmented_scripts) or None,
        "tokens_per_unit": round(ctx.total / (words + unsegmented), 4) if unsegmented else None,
        "max_tokens_line": int(lengths.max()) if lengths.size else None,
        "unknown_share": round(int(ctx.unknown.sum()) / ctx.total, 6) if ctx.total else None,
        "byte_share": round(int(ctx.byte_pieces.sum()) / ctx.total, 6) if ctx.total and tokenizer.byte_ids else None,
        "words_split_share": round(ctx.split_share, 4) if ctx.split_share is not None else None,
        "special_tokens": _specials(tokenizer.specials),
    }
    seconds = ctx.seconds
    known = np.isfinite(seconds) & (seconds > 0)
    if known.any():
        out["tokens_per_second_p50"] = round(float(np.median(lengths[known] / seconds[known])), 3)
    return out


def _specials(specials: Any) -> str:
    """"bos '<s>' (1), eos '</s>' (2), pad none, unk '<unk>' (0)": each special token, or that there is none."""
    from trainproof.checks.tokenizer import WORD_CHARS

    shown = []
    for role in ("bos", "eos", "pad", "unk"):
        token_id, text = getattr(specials, role), getattr(specials, f"{role}_text")
        shown.append(f"{role} none" if token_id is None else f"{role} {quoted(text, WORD_CHARS)} ({token_id})")
    return ", ".join(shown)


def headline(encoded: EncodedText, summary: Mapping[str, Any]) -> str:
    kind = {"text": "plain text", "jsonl": "JSONL manifest", "ljspeech": "LJSpeech metadata.csv"}.get(encoded.text.kind, encoded.text.kind)
    counts = f"{figures.plural(summary['lines'], 'line')}, {figures.plural(summary['tokens'], 'token')}"
    parts = [f"{kind}, {counts} by a {summary['tokenizer_kind']} tokenizer of {summary['vocab_size']:,} pieces"]
    if summary.get("tokens_per_word") is not None:
        parts.append(f"{figures.plural(summary['tokens_per_word'], 'token')} per word")
    elif summary.get("tokens_per_unit") is not None:  # a word is no unit in a script without spaces: its characters are
        written = summary["unsegmented_scripts"]
        unit = f"word or {written} character" if summary["words"] else f"{written} character"
        parts.append(f"{figures.plural(summary['tokens_per_unit'], 'token')} per {unit}")
    if summary.get("tokens_per_second_p50") is not None:
        parts.append(f"{figures.plural(summary['tokens_per_second_p50'], 'token')} per second of audio (median)")
    return "; ".join(parts)


class TokenizerCommand(Command):
    """``trainproof tokenizer TOKENIZER TEXT...``: each text judged with the one tokenizer by the tokenizer rules."""

    name = "tokenizer"

    def reads(self, path: str) -> Sequence[Path]:
        """A text folder's files are inputs too (no output may overwrite its metadata.csv)."""
        target = Path(path)
        if target.is_dir():
            return sorted(p for p in target.iterdir() if p.is_file()) + [target]
        return [target]

    def reads_listed(self, path: str, options: Mapping[str, Any]) -> Sequence[str]:
        """The clips an LJSpeech text lists, whose headers are read for the durations."""
        from trainproof.tokenizer.transcripts import listed_audio

        return listed_audio(path, follow_links=bool(options.get("follow_links")))

    def reads_options(self, options: Mapping[str, Any]) -> Sequence[tuple[str, str]]:
        """Every file loading the tokenizer reads (a folder's tokenizer.json, the special_tokens_map.json beside a
        tokenizer.json)."""
        from trainproof.tokenizer.load import files_read_as

        return files_read_as(options.get("tokenizer"), "is read as an input")

    def prepare(self, settings: Settings, options: Mapping[str, Any]) -> Prepared:
        from trainproof.tokenizer.load import load_tokenizer

        source = options.get("tokenizer")
        if source is None:
            raise UsageError("trainproof tokenizer needs a tokenizer: the first path")
        tokenizer = source if hasattr(source, "encode_batch") else load_tokenizer(source)
        return Prepared(shared={**options, "tokenizer": tokenizer})

    def read(self, source: Any, options: Mapping[str, Any]) -> Any:
        if isinstance(source, EncodedText):
            return source
        return read_transcripts(source, follow_links=bool(options.get("follow_links")))

    def stages(self, text: Any, settings: Settings, prepared: Prepared) -> Sequence[Stage]:
        from trainproof.checks.tokenizer import TokenizerContext

        shared = prepared.shared
        tokenizer = shared["tokenizer"]
        try:  # a line the library refuses costs that line (batches.each); a panic is an InputError, for the run
            encoded = text if isinstance(text, EncodedText) else encode(tokenizer, text, terminal_progress(shared, "tokenizer", "lines encoded"))
        except NothingEncoded as exc:
            return (Stage(RULES["tokenizer"], f"the tokenizer cannot encode any line of this text ({exc})"),)
        ctx = TokenizerContext(tokenizer, encoded.text, encoded.ids, settings.thresholds, shared.get("max_tokens"))
        return (Stage(RULES["tokenizer"], ctx),)

    def present(self, text: Any, subject: Subject, stages: Sequence[Stage], prepared: Prepared) -> Subject:
        ctx = stages[0].context
        if isinstance(ctx, str):
            source = text.text if isinstance(text, EncodedText) else text
            return replace(subject, path=source.path, format=source.kind, unjudged=ctx)
        tokenizer = prepared.shared["tokenizer"]
        from trainproof.checks.tokenizer import TokenizerContext

        assert isinstance(ctx, TokenizerContext), "a tokenizer stage's context, when it is no reason"
        from trainproof.commands.token_charts import tokenizer_charts

        encoded = EncodedText(ctx.text, ctx.ids)
        summary = summarize(tokenizer, encoded, ctx)
        return replace(
            subject,
            path=encoded.text.path,
            format=encoded.text.kind,
            summary=summary,
            headline=headline(encoded, summary),
            notes=encoded.text.notes,
            charts=tokenizer_charts(ctx, subject.findings),
        )


TOKENIZER = TokenizerCommand()
