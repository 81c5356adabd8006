"""``trainproof text``: LLM fine-tuning datasets (JSON Lines) judged row by row, and with a tokenizer, by length.

With ``--tokenizer`` every row is measured as a trainer would see it: a
``messages`` row rendered through the tokenizer's chat template when it has
one; a prompt/completion or instruction row as its prompt's tokens followed by
its answer's (TRL's way), plus the eos token. The part before the trained
one is the prompt: for a conversation, the tokens before the content of its
first assistant turn (its role header included). Rows are encoded in
batches of ENCODE_CHUNK.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from trainproof import figures
from trainproof.checks.registry import RULES
from trainproof.config import Settings
from trainproof.judge import Command, Prepared, Stage
from trainproof.progress import terminal_progress
from trainproof.report import Subject

ENCODE_CHUNK = 4096
"""Strings encoded per batch call (the progress line moves once per chunk)."""


def _turns(row: Any) -> list[dict]:
    return [{"role": m.role, "content": m.content or ""} for m in row.messages]


def _first_answer(row: Any) -> int:
    return next((k for k, m in enumerate(row.messages) if m.role == "assistant"), len(row.messages))


def _before_answer(rendered: str, turns: list[dict], first: int) -> int | None:
    """Where the first assistant turn's content starts in the rendered conversation (its role header stays before it,
    masked as a trainer masks it), found by walking the contents in order; None when a template rewrote one."""
    if first >= len(turns):
        return len(rendered)
    at = 0
    for turn in turns[: first + 1]:
        found = rendered.find(turn["content"], at) if turn["content"] else at
        if found < 0:
            return None
        at = found + (len(turn["content"]) if turn is not turns[first] else 0)
    return at


def _plain(row: Any) -> tuple[str, str]:
    """A row's prompt and answer as plain text: a conversation split at its first assistant turn."""
    if row.shape != "messages":
        return row.prompt, row.target
    first = _first_answer(row)
    return "\n\n".join(m.content or "" for m in row.messages[:first]), "\n\n".join(m.content or "" for m in row.messages[first:])


def measure(dataset: Any, tokenizer: Any, progress: Callable[[int, int], None] | None = None) -> Any:
    """Each row's tokens in all and before its trained part (see the module doc).

    A conversation is rendered (all of them in one call) and encoded once;
    its prompt is the tokens that start before its answer's content. Other
    rows, and conversations the template refuses, are encoded as prompt and
    answer apart, plus eos.
    """
    from trainproof.checks.text import Lengths

    rows = dataset.rows
    chats = [i for i, row in enumerate(rows) if row.shape == "messages"] if tokenizer.chat_template is not None else []
    rendered = dict(zip(chats, tokenizer.render_chats([_turns(rows[i]) for i in chats]))) if chats else {}
    cuts = {i: _before_answer(text, _turns(rows[i]), _first_answer(rows[i])) for i, text in rendered.items() if text is not None}
    whole = [i for i, cut in cuts.items() if cut is not None]
    apart = [i for i in range(len(rows)) if i not in cuts or cuts[i] is None]
    total, prompt = [0] * len(rows), [0] * len(rows)
    done = 0
    for start in range(0, len(whole), ENCODE_CHUNK):
        chunk = whole[start : start + ENCODE_CHUNK]
        for i, (n, before) in zip(chunk, tokenizer.count_before([rendered[i] for i in chunk], [cuts[i] for i in chunk])):
            total[i], prompt[i] = n, before
        done += len(chunk)
        if progress is not None:
            progress(done, len(rows))
    for start in range(0, len(apart), ENCODE_CHUNK):
        chunk = apart[start : start + ENCODE_CHUNK]
        pairs = [_plain(rows[i]) for i in chunk]
        counts = tokenizer.encode_batch([text for pair in pairs for text in pair])
        eos = 1 if tokenizer.specials.eos is not None else 0
        for k, i in enumerate(chunk):
            prompt[i] = len(counts[2 * k])
            total[i] = prompt[i] + len(counts[2 * k + 1]) + eos
        done += len(chunk)
        if progress is not None:
            progress(done, len(rows))
    return Lengths(tuple(total), tuple(prompt))


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
                lengths = measure(dataset, tokenizer, terminal_progress(shared, "text", "rows measured"))
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
