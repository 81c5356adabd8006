"""What a tokenizer's and a fine-tuning set's reports plot: how many tokens a line or a row takes, against the limit
given, and which characters the vocabulary cannot write alone.

Each chart is built from the same context as the rule it illustrates (TP-TOK-TOO-LONG, TP-TEXT-TOO-LONG,
TP-TOK-UNKNOWN, TP-TOK-BYTES), so a bar is coloured exactly where that rule counted lines, rows or characters.
Renderers only draw the result.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Sequence

import numpy as np

from trainproof.checks.text import TextContext
from trainproof.checks.tokenizer import TokenizerContext
from trainproof.commands.histograms import fired, flagged_at, histogram
from trainproof.io import figures
from trainproof.report import Bars, Finding, Histogram, Level

MAX_BARS = 20
"""Characters a chart names at most, the most frequent first."""


def tokens_per_line(ctx: TokenizerContext, findings: Sequence[Finding]) -> Histogram | None:
    values = ctx.lengths.astype(float)
    if values.size == 0:
        return None
    limit = ctx.max_tokens
    over = values > limit if limit is not None else np.zeros(values.size, dtype=bool)
    levels = flagged_at(findings, "TP-TOK-TOO-LONG", over)
    median = float(np.median(values))
    limits: tuple[tuple[float, str], ...] = ((median, f"median {figures.num(median)}"),)
    note = f"{figures.plural(values.size, 'line')}, median {figures.plural(median, 'token')}"
    if limit is not None:
        limits += ((float(limit), f"--max-tokens {limit:,}"),)
        note += f"; {int(np.count_nonzero(over)):,} over --max-tokens {limit:,} (TP-TOK-TOO-LONG)"
    return histogram("Tokens per line", "tokens", values, levels, limits, note, y_label="lines", covers=() if limit is None else (float(limit),))


def tokens_per_row(ctx: TextContext, findings: Sequence[Finding]) -> Histogram | None:
    lengths = ctx.lengths
    if lengths is None:
        return None
    values = lengths.measured().astype(float)
    if values.size == 0:
        return None
    limit = ctx.max_len
    over = values > limit if limit is not None else np.zeros(values.size, dtype=bool)
    levels = flagged_at(findings, "TP-TEXT-TOO-LONG", over)
    median = float(np.median(values))
    limits: tuple[tuple[float, str], ...] = ((median, f"median {figures.num(median)}"),)
    note = f"{figures.plural(values.size, 'row')} measured, median {figures.plural(median, 'token')}"
    if limit is not None:
        limits += ((float(limit), f"--max-len {limit:,}"),)
        note += f"; {int(np.count_nonzero(over)):,} over --max-len {limit:,} (TP-TEXT-TOO-LONG)"
    return histogram("Tokens per row", "tokens", values, levels, limits, note, y_label="rows", covers=() if limit is None else (float(limit),))


def character_label(ch: str) -> str:
    """A character as a chart names it: itself and its code point (``ß U+00DF``); one that does not print (a space, a
    zero-width or control character), by its code point and Unicode name."""
    if ch.isprintable() and not ch.isspace():
        return f"{ch} U+{ord(ch):04X}"
    name = unicodedata.name(ch, "").title()
    return f"U+{ord(ch):04X} {name[:18]}".rstrip()


def character_bars(title: str, counted: Counter, rule_id: str, level: Level, what: str) -> Bars | None:
    if not counted:
        return None
    top = sorted(counted.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_BARS]
    more = len(counted) - len(top)
    note = f"{figures.plural(len(counted), 'distinct character')} {what} ({rule_id})" + (f"; the {len(top)} most frequent shown" if more else "")
    return Bars(title, tuple(character_label(ch) for ch, _ in top), tuple(n for _, n in top), level.name, note)


def tokenizer_charts(ctx: TokenizerContext, findings: Sequence[Finding]) -> tuple[Histogram | Bars, ...]:
    """The tokens per line; the characters behind unknown tokens or byte pieces, when their rule found them."""
    out: list[Histogram | Bars | None] = [tokens_per_line(ctx, findings)]
    for rule_id, title, culprits, what in (
        ("TP-TOK-UNKNOWN", "Characters that become unknown tokens", "unknown_culprits", "become unknown tokens"),
        ("TP-TOK-BYTES", "Characters spelled in byte pieces", "byte_culprits", "fall back to byte pieces"),
    ):
        levels = fired(findings, rule_id)
        if levels:
            out.append(character_bars(title, getattr(ctx, culprits)[0], rule_id, max(levels), what))
    return tuple(chart for chart in out if chart is not None)


def text_charts(ctx: TextContext, findings: Sequence[Finding]) -> tuple[Histogram, ...]:
    """The tokens per row, when a tokenizer measured them."""
    found = tokens_per_row(ctx, findings)
    return (found,) if found is not None else ()
