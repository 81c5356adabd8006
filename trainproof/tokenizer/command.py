"""``trainproof tokenizer``: one tokenizer judged against each text it will be trained on.

The tokenizer is loaded once (a tokenizer that cannot be loaded is an
InputError: nothing can be judged, exit 2); each text is one subject,
encoded once with the library's batch encoder in chunks of ENCODE_CHUNK
lines, so memory holds the token ids, not copies of the text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from trainproof import figures
from trainproof.checks.registry import RULES
from trainproof.config import Settings
from trainproof.errors import UsageError
from trainproof.judge import Command, Prepared, Stage
from trainproof.progress import terminal_progress
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
    in chunks of ENCODE_CHUNK so the line can move."""
    total = len(text.texts)
    if progress is None:
        return EncodedText(text, tuple(tokenizer.encode_batch(text.texts)))
    ids: list[list[int]] = []
    for start in range(0, total, ENCODE_CHUNK):
        ids.extend(tokenizer.encode_batch(text.texts[start : start + ENCODE_CHUNK]))
        progress(len(ids), total)
    return EncodedText(text, tuple(ids))


def summarize(tokenizer: Any, encoded: EncodedText, ctx: Any) -> dict:
    lengths = ctx.lengths
    words = int(ctx.words.sum())
    chars = int(ctx.chars.sum())
    out: dict = {
        "tokenizer": tokenizer.path,
        "tokenizer_kind": tokenizer.kind,
        "vocab_size": tokenizer.vocab_size,
        "lines": len(encoded.text.texts),
        "tokens": ctx.total,
        "tokens_per_word": round(ctx.total / words, 4) if words else None,
        "tokens_per_char": round(ctx.total / chars, 4) if chars else None,
        "max_tokens_line": int(lengths.max()) if lengths.size else None,
        "unknown_share": round(int(ctx.unknown.sum()) / ctx.total, 6) if ctx.total else None,
        "byte_share": round(int(ctx.byte_pieces.sum()) / ctx.total, 6) if ctx.total and tokenizer.byte_ids else None,
        "words_split_share": round(ctx.split_share, 4) if ctx.split_share is not None else None,
        "special_tokens": _specials(tokenizer.specials),
    }
    seconds = np.array([d if d is not None else np.nan for d in encoded.text.durations], dtype=float)
    known = np.isfinite(seconds) & (seconds > 0)
    if known.any():
        out["tokens_per_second_p50"] = round(float(np.median(lengths[known] / seconds[known])), 3)
    return out


def _specials(specials: Any) -> str:
    """"bos '<s>' (1), eos '</s>' (2), pad none, unk '<unk>' (0)": each special token, or that there is none."""
    shown = []
    for role in ("bos", "eos", "pad", "unk"):
        token_id, text = getattr(specials, role), getattr(specials, f"{role}_text")
        shown.append(f"{role} none" if token_id is None else f"{role} {text!r} ({token_id})")
    return ", ".join(shown)


def headline(encoded: EncodedText, summary: Mapping[str, Any]) -> str:
    kind = {"text": "plain text", "jsonl": "JSONL manifest", "ljspeech": "LJSpeech metadata.csv"}.get(encoded.text.kind, encoded.text.kind)
    parts = [f"{kind}, {summary['lines']:,} lines, {summary['tokens']:,} tokens by a {summary['tokenizer_kind']} tokenizer of {summary['vocab_size']:,} pieces"]
    if summary.get("tokens_per_word") is not None:
        parts.append(f"{figures.num(summary['tokens_per_word'])} tokens per word")
    if summary.get("tokens_per_second_p50") is not None:
        parts.append(f"{figures.num(summary['tokens_per_second_p50'])} tokens per second of audio (median)")
    return "; ".join(parts)


class TokenizerCommand(Command):
    """``trainproof tokenizer TOKENIZER TEXT...``: each text judged with the one tokenizer by the tokenizer rules."""

    name = "tokenizer"

    def reads(self, path: str) -> Sequence[Path]:
        """A tokenizer folder's files are inputs too (no output may overwrite its tokenizer.json)."""
        target = Path(path)
        if target.is_dir():
            return sorted(p for p in target.iterdir() if p.is_file()) + [target]
        return [target]

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
        return read_transcripts(source)

    def stages(self, text: Any, settings: Settings, prepared: Prepared) -> Sequence[Stage]:
        from trainproof.checks.tokenizer import TokenizerContext

        shared = prepared.shared
        tokenizer = shared["tokenizer"]
        try:
            encoded = text if isinstance(text, EncodedText) else encode(tokenizer, text, terminal_progress(shared, "tokenizer", "lines encoded"))
        except Exception as exc:  # noqa: BLE001 -- a library that chokes on one text costs that text's verdict, not the run
            return (Stage(RULES["tokenizer"], f"the tokenizer failed to encode this text ({type(exc).__name__}: {exc})"),)
        ctx = TokenizerContext(tokenizer, encoded.text, encoded.ids, settings.thresholds, shared.get("max_tokens"))
        return (Stage(RULES["tokenizer"], ctx),)

    def present(self, text: Any, subject: Subject, stages: Sequence[Stage], prepared: Prepared) -> Subject:
        ctx = stages[0].context
        if isinstance(ctx, str):
            source = text.text if isinstance(text, EncodedText) else text
            return replace(subject, path=source.path, format=source.kind, unjudged=ctx)
        tokenizer = prepared.shared["tokenizer"]
        encoded = EncodedText(ctx.text, ctx.ids)  # type: ignore[union-attr]
        summary = summarize(tokenizer, encoded, ctx)
        return replace(
            subject,
            path=encoded.text.path,
            format=encoded.text.kind,
            summary=summary,
            headline=headline(encoded, summary),
            notes=encoded.text.notes,
        )


TOKENIZER = TokenizerCommand()
