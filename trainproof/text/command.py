"""``trainproof text``: LLM fine-tuning datasets (JSON Lines) judged row by row, and with a tokenizer, by length.

With ``--tokenizer`` every row is measured as a trainer would see it: a
``messages`` row rendered through the tokenizer's chat template when it has
one; a prompt/completion or instruction row as its prompt's tokens followed by
its answer's (TRL's way), plus the eos token. The part before the trained
one is the prompt: for a conversation, everything before the content of its
first assistant turn (its role header included). Rows are encoded in batches of ENCODE_CHUNK.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from trainproof import figures
from trainproof.checks.registry import RULES
from trainproof.config import Settings
from trainproof.judge import Command, Prepared, Stage
from trainproof.report import Subject

ENCODE_CHUNK = 4096
"""Strings encoded per batch call (the progress line moves once per chunk)."""


@dataclass(frozen=True)
class _Pieces:
    """What to encode for one row: the prompt part and the whole row (None: count the answer on top of the prompt)."""

    prompt: str
    rest: str
    rendered: bool  # rest is the whole rendered conversation, not the answer alone


def _pieces(row: Any, tokenizer: Any) -> _Pieces:
    if row.shape == "messages" and tokenizer.chat_template is not None:
        turns = [{"role": m.role, "content": m.content or ""} for m in row.messages]
        first = next((k for k, m in enumerate(row.messages) if m.role == "assistant"), len(turns))
        try:
            whole = tokenizer.render_chat(turns) or ""
        except ValueError:
            whole = None  # a template that refuses the conversation (TP-TEXT-ROLES says why): measured as plain text
        if whole is not None:
            return _Pieces(_before_answer(whole, turns, first, tokenizer), whole, rendered=True)
    if row.shape == "messages":
        first = next((k for k, m in enumerate(row.messages) if m.role == "assistant"), len(row.messages))
        before = "\n\n".join(m.content or "" for m in row.messages[:first])
        after = "\n\n".join(m.content or "" for m in row.messages[first:])
        return _Pieces(before, after, rendered=False)
    return _Pieces(row.prompt, row.target, rendered=False)


def _before_answer(rendered: str, turns: list[dict], first: int, tokenizer: Any) -> str:
    """The rendered conversation up to the first assistant turn's content (its header included, as a trainer masks it).

    Found in the one rendering by walking the contents in order; a template
    that rewrites contents (so one is not found) is rendered again up to that
    turn instead.
    """
    if first >= len(turns):
        return rendered
    at = 0
    for turn in turns[: first + 1]:
        found = rendered.find(turn["content"], at) if turn["content"] else at
        if found < 0:
            return tokenizer.render_chat(turns[:first]) or "" if first else ""
        at = found + (len(turn["content"]) if turn is not turns[first] else 0)
    return rendered[:at]


def measure(dataset: Any, tokenizer: Any, progress: Callable[[int, int], None] | None = None) -> Any:
    """Each row's tokens in all and before its trained part (see the module doc)."""
    from trainproof.checks.text import Lengths

    pieces = [_pieces(row, tokenizer) for row in dataset.rows]
    strings = [s for p in pieces for s in (p.prompt, p.rest)]
    counts: list[int] = []
    for start in range(0, len(strings), ENCODE_CHUNK):
        counts.extend(len(ids) for ids in tokenizer.encode_batch(strings[start : start + ENCODE_CHUNK]))
        if progress is not None:
            progress(min(start + ENCODE_CHUNK, len(strings)) // 2, len(pieces))
    eos = 1 if tokenizer.specials.eos is not None else 0
    prompt, total = [], []
    for k, p in enumerate(pieces):
        before, rest = counts[2 * k], counts[2 * k + 1]
        prompt.append(before)
        total.append(rest if p.rendered else before + rest + eos)
    return Lengths(tuple(total), tuple(prompt))


def _progress(options: Mapping[str, Any]) -> Callable[[int, int], None] | None:
    from trainproof.progress import terminal_progress

    return terminal_progress(options, "text", "rows measured")


def summarize(dataset: Any, lengths: Any, max_len: int | None) -> dict:
    out: dict = {"lines": dataset.lines, "rows": len(dataset.rows), "problems": len(dataset.problems)}
    out.update({f"rows_{shape}": n for shape, n in dataset.shapes.items() if n})
    if lengths is not None and lengths.total:
        ordered = sorted(lengths.total)
        out["tokens"] = sum(ordered)
        out["tokens_p50"] = ordered[len(ordered) // 2]
        out["tokens_max"] = ordered[-1]
        if max_len is not None:
            out["max_len"] = max_len
            out["rows_over_max_len"] = sum(n > max_len for n in ordered)
    return out


def headline(dataset: Any, summary: Mapping[str, Any]) -> str:
    shapes = ", ".join(f"{n:,} {shape}" for shape, n in dataset.shapes.items() if n) or "no rows"
    rows, lines = summary["rows"], summary["lines"]
    parts = [f"fine-tuning JSONL, {rows:,} row{'' if rows == 1 else 's'} of {lines:,} line{'' if lines == 1 else 's'} ({shapes})"]
    if "tokens" in summary:
        parts.append(f"{figures.num(summary['tokens_p50'])} tokens per row (median), {summary['tokens_max']:,} at most")
    return "; ".join(parts)


class TextCommand(Command):
    """``trainproof text DATASET...``: each fine-tuning JSONL by the text rules (lengths too, with a tokenizer)."""

    name = "text"

    def prepare(self, settings: Settings, options: Mapping[str, Any]) -> Prepared:
        source = options.get("tokenizer")
        tokenizer = None
        if source is not None:
            from trainproof.tokenizer.load import load_tokenizer

            tokenizer = source if hasattr(source, "encode_batch") else load_tokenizer(source)
        return Prepared(shared={**options, "tokenizer": tokenizer})

    def reads(self, path: str) -> Sequence[Path]:
        return [Path(path)]

    def read(self, source: Any, options: Mapping[str, Any]) -> Any:
        from trainproof.text.reader import read_text_dataset

        if hasattr(source, "rows") and hasattr(source, "problems"):
            return source
        return read_text_dataset(source)

    def stages(self, dataset: Any, settings: Settings, prepared: Prepared) -> Sequence[Stage]:
        from trainproof.checks.text import TextContext

        shared = prepared.shared
        tokenizer, max_len = shared.get("tokenizer"), shared.get("max_len")
        lengths = None
        if tokenizer is not None:
            try:
                lengths = measure(dataset, tokenizer, _progress(shared))
            except Exception as exc:  # noqa: BLE001 -- a library that chokes on this file costs its length rules, not the run
                ctx = TextContext(dataset, settings.thresholds)
                why = f"the tokenizer failed on this file ({type(exc).__name__}: {exc})"
                rules = RULES["text"]
                return (Stage(tuple(r for r in rules if r.id not in _LENGTH_RULES), ctx), Stage(tuple(r for r in rules if r.id in _LENGTH_RULES), why))
        return (Stage(RULES["text"], TextContext(dataset, settings.thresholds, lengths, max_len)),)

    def present(self, dataset: Any, subject: Subject, stages: Sequence[Stage], prepared: Prepared) -> Subject:
        ctx = stages[0].context
        lengths = getattr(ctx, "lengths", None)
        summary = summarize(dataset, lengths, prepared.shared.get("max_len"))
        return replace(subject, path=dataset.path, format="jsonl", summary=summary, headline=headline(dataset, summary), notes=tuple(dataset.notes))


_LENGTH_RULES = frozenset({"TP-TEXT-TOO-LONG", "TP-TEXT-TRUNCATED-TARGET"})

TEXT = TextCommand()
