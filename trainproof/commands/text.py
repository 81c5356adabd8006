"""``trainproof text``: LLM fine-tuning datasets (JSON Lines) judged row by row, and with a tokenizer, by length.

With ``--tokenizer`` every row is measured as a trainer would see it: a
conversation (a ``messages`` row, or a prompt and completion or chosen answer
given as lists of messages, the prompt's turns first, as TRL renders them)
through the tokenizer's chat template when it has one; a prompt/completion,
instruction or preference row of strings as its prompt's tokens followed by
its answer's (TRL's way; a preference row's chosen answer), plus the eos
token, inside the special tokens the tokenizer's own call puts around a
sequence (a Llama tokenizer's bos: TRL tokenizes ``prompt + answer`` with
them; :attr:`~trainproof.tokenizer.load.Tokenizer.wrapping`). A preference
row's rejected answer is measured the same way, beside it. The part before
the trained one is the prompt: for a conversation, the tokens before the
content of its first assistant turn (of its completion or chosen answer's
first turn, when it has one), its role header included, found by rendering
it a second time with ANSWER_MARK as that content. Rows are encoded in batches of
ENCODE_CHUNK; a row the tokenizer cannot encode (a lone surrogate from a
``"\\ud800"`` escape) costs that row, named in a note, not the batch.

A conversation the chat template refuses (its ``raise_exception``, a role it
does not take) is not measured at all: its contents without the template are
not what a trainer would see. A note counts them; when the template refuses
every row, the length rules are NOT-CHECKED, saying why. A template stopped
past a bound of time or size (:mod:`trainproof.tokenizer.templates`) is an
InputError naming the line it was rendering: the tokenizer cannot be used.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from trainproof.checks.registry import RULES
from trainproof.config import Settings
from trainproof.io import figures
from trainproof.io.progress import terminal_progress
from trainproof.judge import Command, Input, Inputs, Outcome, Prepared, Stage, nothing_ran
from trainproof.report import Subject

ENCODE_CHUNK = 512
"""Rows rendered and encoded per batch call (the progress line moves once per chunk). The library's encodings of a
batch hold some 80 bytes a token until the lengths are taken from them: 4,096 rows of 300 tokens held 100 MiB, 512
hold 30 MiB, and encode as fast (a million chat rows, benchmarks/bench_data.py's text case)."""

ANSWER_MARK = "7391046285502846193"
"""What stands in for a conversation's first answer in its second rendering, to find where the template puts the
answer: digits, which a template that trims, escapes or changes the case of content (Llama 3's ``| trim``) keeps."""


def _turns(row: Any, rejected: bool = False) -> list[dict]:
    """A conversation's turns as transformers hands them to a chat template: role and content, and an assistant turn's
    ``tool_calls`` as written (``rejected``: a preference row's prompt and rejected answer)."""
    if not rejected and row.plain_turns:  # no tool calls: the dicts made from the roles and contents, not Messages
        return [{"role": role, "content": content or ""} for role, content in row.pairs()]
    messages = row.rejected_messages if rejected else row.messages
    return [
        {"role": m.role, "content": m.content or "", "tool_calls": list(m.tool_calls)} if m.tool_calls else {"role": m.role, "content": m.content or ""}
        for m in messages
    ]


def _first_answer(row: Any) -> int:
    """Where a conversation's trained part starts: its completion or chosen answer, else its first assistant turn."""
    if row.completion_at is not None:
        return row.completion_at
    roles = row.roles
    return roles.index("assistant") if "assistant" in roles else len(roles)


def _marked(turns: list[dict], first: int) -> list[dict]:
    """The turns with ANSWER_MARK for the content of the first assistant turn."""
    return [*turns[:first], {**turns[first], "content": ANSWER_MARK}, *turns[first + 1 :]]


class _Conversations(Sequence[list[dict]]):
    """The turns of the rows at ``indices``, each made as the template is about to render it (a list of them all would
    keep four dicts a row alive for the garbage collector to walk); with ``first``, the first answer is ANSWER_MARK."""

    def __init__(self, rows: Sequence[Any], indices: list[int], first: Mapping[int, int] | None = None, rejected: bool = False) -> None:
        self.rows, self.indices, self.first, self.rejected = rows, indices, first, rejected

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, k: Any) -> Any:
        i = self.indices[k]
        turns = _turns(self.rows[i], self.rejected)
        return turns if self.first is None else _marked(turns, self.first[i])


def _before_answer(rendered: str, marked: str | None) -> int | None:
    """Where the first assistant turn's content starts in the rendered conversation (its role header stays before it,
    masked as a trainer masks it): where ANSWER_MARK is in the conversation rendered with it as that content, the two
    renderings alike up to there. None when that cannot be told (the template refused the marked conversation, wrote
    the mark other than once, or wrote what comes before it otherwise): the row is then measured as its contents.

    Searching the rendering for each turn's own content would miss a content the template trims, and find the same
    text repeated in a later turn instead.
    """
    if marked is None:
        return None
    at = marked.find(ANSWER_MARK)
    if at < 0 or marked.find(ANSWER_MARK, at + 1) >= 0 or not rendered.startswith(marked[:at]):
        return None
    return at


def _plain(row: Any) -> tuple[str, str]:
    """A row's prompt and answer as plain text: a conversation split where its trained part starts."""
    if not row.is_chat:
        return row.prompt, row.target
    first, messages = _first_answer(row), row.messages
    return "\n\n".join(m.content or "" for m in messages[:first]), "\n\n".join(m.content or "" for m in messages[first:])


def measure(dataset: Any, tokenizer: Any, progress: Callable[[int, int], None] | None = None) -> Any:
    """Each row's tokens in all and before its trained part (see the module doc).

    A conversation is rendered, a second time with its answer marked, and
    encoded once; its prompt is the tokens that start before its answer's
    content. Other rows, and conversations whose answer cannot be placed,
    are encoded as prompt and answer apart, plus eos. Rows are taken
    ENCODE_CHUNK at a time, so that only one chunk's renderings are held:
    a million conversations are never all in memory as text twice over.
    """
    from trainproof.checks.text import Lengths
    from trainproof.tokenizer.batches import Failed, each

    rows = dataset.rows
    templated_rows = tokenizer.chat_template is not None
    before, after = _wrapping(tokenizer)

    def counted_apart(pairs: list[Any]) -> Sequence[tuple[int, int] | Failed]:  # (prompt, answer) texts
        ids = tokenizer.encode_batch([text for pair in pairs for text in pair])
        eos = 1 if tokenizer.specials.eos is not None else 0
        return [(before + len(ids[2 * k]) + len(ids[2 * k + 1]) + eos + after, before + len(ids[2 * k])) for k in range(len(pairs))]

    def counted_whole(pairs: list[Any]) -> Sequence[tuple[int, int] | Failed]:  # (rendered text, where its answer starts)
        return tokenizer.count_before([text for text, _ in pairs], [cut for _, cut in pairs])

    total, prompt = array("q", bytes(8 * len(rows))), array("q", bytes(8 * len(rows)))
    failed: dict[int, str] = {}
    refused: dict[int, str] = {}
    templated = bytearray(len(rows))  # 1 where the row was counted whole, through the chat template
    preference_rows: list[int] = []  # the rows with a rejected answer to measure too
    for start in range(0, len(rows), ENCODE_CHUNK):
        span = range(start, min(len(rows), start + ENCODE_CHUNK))
        chats = [i for i in span if rows[i].is_chat] if templated_rows else []
        results = _rendered(tokenizer, rows, chats, _Conversations(rows, chats))
        refused.update((i, got.reason) for i, got in results.items() if isinstance(got, Failed))
        rendered = {i: got for i, got in results.items() if isinstance(got, str)}
        first = {i: _first_answer(rows[i]) for i in rendered}
        answered = [i for i, k in first.items() if k < rows[i].turn_count]
        marked = _rendered(tokenizer, rows, answered, _Conversations(rows, answered, first))
        cuts = {i: _before_answer(text, _text(marked.get(i))) if i in marked else len(text) for i, text in rendered.items()}
        whole = [i for i, cut in cuts.items() if cut is not None]
        apart = [i for i in span if cuts.get(i) is None and i not in refused]
        for indices, call, items in (
            (whole, counted_whole, lambda i: (rendered[i], cuts[i])),
            (apart, counted_apart, lambda i: _plain(rows[i])),
        ):
            if not indices:
                continue
            for i, got in zip(indices, each(call, [items(i) for i in indices])):
                if isinstance(got, Failed):
                    failed[i] = got.reason
                else:
                    total[i], prompt[i] = got
        for i in whole:
            templated[i] = i not in failed
        preference_rows += (i for i in (*whole, *apart) if rows[i].rejected is not None and i not in failed)
        if progress is not None:
            progress(span.stop, len(rows))
    rejected = _rejected(tokenizer, rows, [i for i in preference_rows if templated[i]], [i for i in preference_rows if not templated[i]])
    return Lengths(total, prompt, tuple(sorted(failed.items())), tuple(sorted(refused.items())), bytes(templated), rejected)


def _wrapping(tokenizer: Any) -> tuple[int, int]:
    """The special tokens the tokenizer's own call puts around a sequence; none when it cannot say (a tokenizer object
    of the caller's making, or a library that fails on one letter: its rows' own failures are named where they are)."""
    try:
        before, after = tokenizer.wrapping
        return int(before), int(after)
    except Exception:  # noqa: BLE001
        return (0, 0)


def _split_once(split: Any, follow_links: bool) -> Any:
    """A split of a folder's dataset, read once per invocation: judged itself, and compared with the splits after it."""
    from trainproof.io import memo
    from trainproof.text.columns import read_split

    return memo.remembered(("text-split", split.files, follow_links), lambda: read_split(replace(split, earlier=()), follow_links=follow_links))


def _rejected(tokenizer: Any, rows: Sequence[Any], whole: list[int], apart: list[int]) -> dict[int, int]:
    """Row index -> the tokens of a preference row's prompt and rejected answer, measured as its chosen side was: a
    conversation through the chat template (the prompt's turns and the rejected answer's, as TRL's
    ``maybe_apply_chat_template`` renders ``prompt + rejected``), else its prompt's tokens, its rejected answer's and
    eos. A row whose rejected side the template refuses or the tokenizer cannot encode is left out."""
    from trainproof.tokenizer.batches import Failed, each

    chats = [i for i in whole if rows[i].rejected is not None and rows[i].rejected_messages]
    texts = [i for i in (*whole, *apart) if rows[i].rejected is not None and not rows[i].rejected_messages]
    out: dict[int, int] = {}
    for start in range(0, len(chats), ENCODE_CHUNK):  # a chunk's renderings held at a time, as in measure
        chunk = chats[start : start + ENCODE_CHUNK]
        rendered = _rendered(tokenizer, rows, chunk, _Conversations(rows, chunk, rejected=True))
        done = [(i, text) for i, text in rendered.items() if isinstance(text, str)]
        for (i, _), got in zip(done, each(tokenizer.encode_batch, [text for _, text in done])):
            if not isinstance(got, Failed):
                out[i] = len(got)

    before, after = _wrapping(tokenizer)

    def counted(pairs: list[Any]) -> Sequence[int | Failed]:
        ids = tokenizer.encode_batch([text for pair in pairs for text in pair])
        eos = 1 if tokenizer.specials.eos is not None else 0
        return [before + len(ids[2 * k]) + len(ids[2 * k + 1]) + eos + after for k in range(len(pairs))]

    for begin in range(0, len(texts), ENCODE_CHUNK):
        indices = texts[begin : begin + ENCODE_CHUNK]
        for i, n in zip(indices, each(counted, [(rows[i].prompt, rows[i].rejected) for i in indices])):
            if not isinstance(n, Failed):
                out[i] = n
    return out


def _rendered(tokenizer: Any, rows: Sequence[Any], indices: list[int], conversations: Sequence[list[dict]]) -> dict[int, Any]:
    """Row index -> its conversation rendered (a text, or Failed where the template refuses it); a template stopped
    past a bound is an InputError about the tokenizer, naming the line it was rendering."""
    from trainproof.io.errors import InputError
    from trainproof.tokenizer.templates import TemplateOverrun

    if not indices:
        return {}
    try:
        tools = [rows[i].tools or None for i in indices]
        return dict(zip(indices, tokenizer.render_chats(conversations, tools if any(tools) else None)))
    except TemplateOverrun as overrun:
        where = f", rendering line {rows[indices[overrun.index]].line}," if overrun.index is not None else ""
        raise InputError(tokenizer.path, f"its chat template{where} {overrun.reason}: trainproof stops a template there") from None


def _text(rendered: Any) -> str | None:
    return rendered if isinstance(rendered, str) else None


def _unmeasured(dataset: Any, lengths: Any) -> tuple[str, ...]:
    """The notes naming the rows the chat template refused and those the tokenizer could not encode (none, when none)."""
    from trainproof.tokenizer.batches import failed_note, named_lines

    notes = []
    if lengths.unrendered:
        count = len(lengths.unrendered)
        chats = sum(row.is_chat for row in dataset.rows)
        whose = "its" if count == 1 else "their"
        named = named_lines([(dataset.rows[i].line, why) for i, why in lengths.unrendered])
        notes.append(
            f"the chat template fails on {count:,} of {figures.plural(chats, 'conversation')}, so {whose} length as a trainer "
            "would see it is "
            f"not known and not judged: {named}"
        )
    if lengths.unmeasured:
        whose = "its" if len(lengths.unmeasured) == 1 else "their"
        notes.append(failed_note([(dataset.rows[i].line, why) for i, why in lengths.unmeasured], "row", f"so {whose} length is not judged"))
    return tuple(notes)


def summarize(dataset: Any, lengths: Any, max_len: int | None, template: str | None = None) -> dict:
    """The dataset's figures; with lengths, how they were counted too: ``chat_template`` is the file the tokenizer's
    chat template was read from ("none" without one), ``rows_chat_template`` the rows measured with it applied."""
    import numpy as np

    out: dict = {"lines": dataset.lines, "rows": len(dataset.rows), "problems": len(dataset.problems)}
    out.update({f"rows_{shape}": n for shape, n in dataset.shapes.items() if n})
    unmeasured = lengths.left_out if lengths is not None else frozenset()
    if lengths is not None and len(lengths.total) > len(unmeasured):
        ordered = np.sort(lengths.measured())
        out["tokens"] = int(ordered.sum())
        out["tokens_p50"] = int(ordered[len(ordered) // 2])
        out["tokens_max"] = int(ordered[-1])
        out["rows_measured"] = len(ordered)
        out["chat_template"] = template or "none"
        out["rows_chat_template"] = lengths.templated.count(1)
        if max_len is not None:
            out["max_len"] = max_len
            out["rows_over_max_len"] = int(np.count_nonzero(ordered > max_len))
    return out


def headline(dataset: Any, summary: Mapping[str, Any]) -> str:
    shapes = ", ".join(f"{shape}: {n:,}" for shape, n in dataset.shapes.items() if n) or "no rows"
    rows, lines = summary["rows"], summary["lines"]
    if dataset.format != "jsonl":
        files = f" ({figures.plural(len(dataset.files), 'file')})" if len(dataset.files) > 1 else ""
        read = f"fine-tuning {'Parquet' if dataset.format == 'parquet' else 'Arrow'}{files}, {rows:,} of {figures.plural(lines, 'row')} read as examples"
        parts = [f"{read} ({shapes})"]
    else:
        parts = [f"fine-tuning JSONL, {rows:,} row{'' if rows == 1 else 's'} of {lines:,} line{'' if lines == 1 else 's'} ({shapes})"]
    if "tokens" in summary:
        parts.append(f"{figures.plural(summary['tokens_p50'], 'token')} per row (median), {summary['tokens_max']:,} at most, {_counted(summary)}")
    return "; ".join(parts)


def _counted(summary: Mapping[str, Any]) -> str:
    """Whether the lengths were counted with the chat template applied, and which, or on the raw text: the same
    conversation is 61 tokens as its text and 88 through a template's role lines and end-of-turn tokens."""
    template, templated, measured = summary["chat_template"], summary["rows_chat_template"], summary["rows_measured"]
    if template == "none":
        return "counted on the raw text (the tokenizer has no chat template)"
    applied = f"the chat template of {template}"
    if templated == measured:
        return f"counted with {applied} applied"
    if templated == 0:
        return f"counted on the raw text ({applied} was applied to no row)"
    return f"{templated:,} of {measured:,} rows counted with {applied} applied, the rest on the raw text"


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

    def reads_options(self, options: Mapping[str, Any]) -> Sequence[tuple[str, str]]:
        """With ``--tokenizer``, every file loading it reads (a folder's files, the configurations beside a file)."""
        from trainproof.tokenizer.load import files_read_as

        return files_read_as(options.get("tokenizer") or None, "is read as the tokenizer")

    def inputs(self, source: Any, options: Mapping[str, Any], prepared: Prepared) -> Inputs:
        """A folder stands for each split in it (Parquet shards, or a dataset saved by ``datasets``), judged apart."""
        if isinstance(source, (str, os.PathLike)) and os.path.isdir(source):
            from trainproof.text.columns import splits

            return Inputs(tuple(Input(split) for split in splits(str(source), bool(options.get("follow_links")))))
        return Inputs((Input(source),))

    def read(self, source: Any, options: Mapping[str, Any]) -> Any:
        if hasattr(source, "rows") and hasattr(source, "problems"):
            return source
        from trainproof.text.columns import Split, is_columnar, read_split

        if isinstance(source, Split) or is_columnar(str(source)):
            follow = bool(options.get("follow_links"))
            if not isinstance(source, Split):
                return read_split(str(source), follow_links=follow)
            dataset = _split_once(source, follow)
            if source.earlier:  # its rows are compared with theirs (TP-TEXT-SPLIT-LEAK); each is read once a run
                dataset = replace(dataset, earlier=tuple(_split_once(split, follow) for split in source.earlier))
            return dataset
        from trainproof.text.reader import read_text_dataset

        return read_text_dataset(source, follow_links=bool(options.get("follow_links")))

    def stages(self, dataset: Any, settings: Settings, prepared: Prepared) -> Sequence[Stage]:
        from trainproof.checks.text import TextContext

        shared = prepared.shared
        tokenizer, max_len = shared.get("tokenizer"), shared.get("max_len")
        lengths = None
        if tokenizer is not None:
            # a row the library refuses costs that row (batches.each); a panic is an InputError, for the run
            lengths = measure(dataset, tokenizer, terminal_progress(shared, "text", "rows measured"))
            if dataset.rows and len(lengths.left_out) == len(dataset.rows):
                return self._unmeasured(dataset, settings, lengths)
        return (Stage(RULES["text"], TextContext(dataset, settings.thresholds, lengths, max_len)),)

    def _unmeasured(self, dataset: Any, settings: Settings, lengths: Any) -> Sequence[Stage]:
        """The row rules in their context (which keeps the lengths, for the notes naming the rows not measured); the
        length rules skipped, saying why no row could be measured."""
        from trainproof.checks.text import TextContext

        rules = RULES["text"]
        return (
            Stage(tuple(r for r in rules if r.id not in _LENGTH_RULES), TextContext(dataset, settings.thresholds, lengths)),
            Stage(tuple(r for r in rules if r.id in _LENGTH_RULES), _why_unmeasured(lengths)),
        )

    def unjudged(self, stages: Sequence[Stage], outcome: Outcome, prepared: Prepared) -> str | None:
        """A length limit asked for (``--max-len``) that no row could be measured against is not a PASS."""
        skipped = next((stage.context for stage in stages if isinstance(stage.context, str)), None)
        if skipped is not None and prepared.shared.get("max_len") is not None:
            return f"--max-len could not be judged: {skipped}"
        return nothing_ran(outcome)

    def present(self, dataset: Any, subject: Subject, stages: Sequence[Stage], prepared: Prepared) -> Subject:
        ctx = stages[0].context
        lengths = getattr(ctx, "lengths", None)
        tokenizer = prepared.shared.get("tokenizer")
        summary = summarize(dataset, lengths, prepared.shared.get("max_len"), getattr(tokenizer, "chat_template_file", None))
        notes = (*dataset.notes, *(_unmeasured(dataset, lengths) if lengths is not None else ()), *_unapplied(dataset, tokenizer))
        from trainproof.checks.text import TextContext
        from trainproof.commands.token_charts import text_charts

        charts = text_charts(ctx, subject.findings) if isinstance(ctx, TextContext) else ()
        return replace(subject, path=dataset.path, format=dataset.format, summary=summary, headline=headline(dataset, summary), notes=notes, charts=charts)


def _unapplied(dataset: Any, tokenizer: Any) -> tuple[str, ...]:
    """The note naming a chat template beside a tokenizer file that its library does not read, when conversations were
    measured without it (a tokenizer.json given where its folder has a chat_template.jinja)."""
    from trainproof.tokenizer.load import Tokenizer, template_beside

    if not isinstance(tokenizer, Tokenizer) or not any(row.is_chat for row in dataset.rows):
        return ()
    beside = template_beside(tokenizer)
    if beside is None:
        return ()
    folder = os.path.dirname(tokenizer.path) or "."
    return (
        f"the chat template in {beside} was not applied ({os.path.basename(tokenizer.path)} alone carries none): "
        f"give the folder, --tokenizer {folder}, to count conversations as a trainer renders them",
    )


_LENGTH_RULES = frozenset({"TP-TEXT-TOO-LONG", "TP-TEXT-TRUNCATED-TARGET", "TP-TEXT-REJECTED-TOO-LONG"})


def _why_unmeasured(lengths: Any) -> str:
    """Why no row could be measured: the chat template refused every row (a conversation's length without the template
    is not the trainer's), or the tokenizer failed on them."""
    if not lengths.unmeasured:
        return f"the chat template fails on every conversation ({lengths.unrendered[0][1]})"
    return f"the tokenizer failed on this file ({lengths.unmeasured[0][1]})"

TEXT = TextCommand()
