"""Rules that judge an LLM fine-tuning dataset (JSON Lines): its lines, its rows' shapes and roles, duplicates, the
answers it trains, and, with a tokenizer, what truncation at ``--max-len`` does to each row.

A rule that finds many lines names the first TEXT_EXAMPLES in file order, each
at its line, and counts the rest. FAIL is kept for what breaks training or
makes it learn nothing: a file that is not JSON Lines, lines that are not
rows, rows of no known shape, conversations with no answer, rows whose
trained part is cut off entirely.
"""

from __future__ import annotations

import hashlib
import math
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from trainproof.checks.base import Hit, NotApplicable, first_named, rules_of
from trainproof.checks.findings import Finding, Level
from trainproof.checks.stats import MAD_TO_SIGMA, median
from trainproof.checks.thresholds import Thresholds
from trainproof.io import figures
from trainproof.io.safe import quoted
from trainproof.text.repeats import Run, repeated_run

if TYPE_CHECKING:
    from trainproof.text.model import Row, RowProblem, TextDataset


@dataclass(frozen=True)
class Lengths:
    """Each row's tokens as a trainer would see them: ``total[i]`` in all, ``prompt[i]`` before the trained part.

    ``unmeasured`` are the rows (indices) the tokenizer could not encode, ``unrendered`` the conversations the chat
    template refused, each with why; their counts are 0, so no length rule names them, and no share counts them.
    ``templated`` flags the rows counted with the chat template applied (the rest were counted as their text).
    """

    total: Sequence[int]  # an array of int64, a million rows' 8 MB, not a tuple of int objects
    prompt: Sequence[int]
    unmeasured: tuple[tuple[int, str], ...] = ()
    unrendered: tuple[tuple[int, str], ...] = ()
    templated: bytes = b""  # templated[i] is 1 for a row counted with the chat template applied, else 0
    rejected: Mapping[int, int] = field(default_factory=dict)  # a preference row's prompt and rejected answer, in tokens

    def measured(self) -> np.ndarray:
        """The totals of the rows measured (those left out dropped), in row order."""
        totals = np.asarray(self.total, dtype=np.int64)
        return np.delete(totals, sorted(self.left_out)) if self.left_out else totals

    @cached_property
    def left_out(self) -> frozenset[int]:
        """The rows not measured, for either reason."""
        return frozenset(i for i, _ in (*self.unmeasured, *self.unrendered))


@dataclass(frozen=True)
class TextContext:
    """A fine-tuning dataset, and (with a tokenizer) each row's token counts against ``max_len``."""

    dataset: TextDataset
    t: Thresholds
    lengths: Lengths | None = None
    max_len: int | None = None
    topic = "this dataset"

    def locate(self, finding: Finding) -> Finding:
        """The finding at the dataset's file; a Parquet or Arrow row at the file it is in, by its number there."""
        if finding.file is not None:
            return finding
        if self.dataset.files and finding.line is not None:
            file, row = self.dataset.locate(finding.line)
            return replace(finding, file=file, line=row)
        return replace(finding, file=self.dataset.path)

    def at(self, row: Row) -> str:
        """A row as a sentence begins with it: ``Line 12``, ``Row 12 of train-00001-of-00002.parquet``."""
        where = self.dataset.where(row.line)
        return where[:1].upper() + where[1:]

    def problems(self, *kinds: str) -> list[RowProblem]:
        return [p for p in self.dataset.problems if p.kind in kinds]

    @cached_property
    def folded(self) -> np.ndarray:
        """Each row as what it teaches, with case, Unicode form and runs of whitespace folded (for near duplicates):
        a conversation's turns with their roles, else its prompt and its target, kept apart; as the digest of that
        (:func:`_digests`), so that a million rows' keys are an array of 16 bytes each, not a folded copy of the
        dataset, nor a million bytes objects."""
        return _digests(self.dataset.rows, _fold)

    @cached_property
    def row_index(self) -> Callable[[int], int]:
        """A row's line -> its index in the dataset's rows (a line holds one row at most): found in the rows' lines, which
        the readers give in order, rather than a dict of every row (a million rows' dict is 100 MB)."""
        lines = np.fromiter((row.line for row in self.dataset.rows), dtype=np.int64, count=len(self.dataset.rows))
        if len(lines) > 1 and not bool(np.all(lines[1:] > lines[:-1])):
            return {int(line): i for i, line in enumerate(lines)}.__getitem__
        return lambda line: int(np.searchsorted(lines, line))

    @cached_property
    def repeats(self) -> dict[int, tuple[str, str, Run]]:
        """Row index -> its first answer that is one short unit repeated: where it is, its text, and the run."""
        t = self.t
        found = {}
        for i, row in enumerate(self.dataset.rows):
            for k, text in enumerate(_answer_texts(row)):
                if len(text) < t.TEXT_REPEAT_MIN_CHARS:
                    continue
                run = repeated_run(text, t.TEXT_REPEAT_SHARE, t.TEXT_REPEAT_TIMES, t.TEXT_REPEAT_MAX_UNIT)
                if run is not None:
                    found[i] = (_answers_of(row)[k][0], text, run)
                    break
        return found



def _fold(text: str) -> str:
    if not text.isascii():  # NFKC changes nothing in ASCII, and costs as much as the rest
        text = unicodedata.normalize("NFKC", text)
    return " ".join(text.casefold().split())


_TARGET_FIELD = {"text": "text", "prompt_completion": "completion", "instruction": "output", "preference": "chosen"}


def _answers_of(row: Row) -> list[tuple[str, str]]:
    """What a row trains the model to write, each part with where it is: every assistant turn of a ``messages`` row, each
    message of a completion or chosen answer given as messages, else the row's one trained field (a preference row's
    chosen answer: its rejected one is what the model is taught not to write)."""
    if row.completion_at is not None:  # counted from where the answer starts (an implicit prompt's is inside 'chosen')
        answer = "its 'completion'" if row.shape == "prompt_completion" else "its chosen answer"
        return [(f"message {k} of {answer}", content or "") for k, (_, content) in enumerate(list(row.pairs())[row.completion_at :], 1)]
    if row.shape == "messages":
        return [(f"message {k} (the assistant's)", content or "") for k, (role, content) in enumerate(row.pairs(), 1) if role == "assistant"]
    return [(f"its {_TARGET_FIELD[row.shape]!r}", row.target)]


def _answer_texts(row: Row) -> list[str]:
    """The texts of :func:`_answers_of`, in order, without saying where each is."""
    if row.completion_at is not None:
        return [content or "" for _, content in list(row.pairs())[row.completion_at :]]
    if row.shape == "messages":
        return [content or "" for role, content in row.pairs() if role == "assistant"]
    return [row.target]


def _key(row: Row, fold: Callable[[str], str]) -> tuple:
    """What a row teaches: its turns with their roles, or its prompt and answer (a preference row's rejected answer too:
    two pairs that share a prompt and a chosen answer but not the rejected one teach different things)."""
    rejected = () if row.rejected is None else (fold(row.rejected),)
    if row.turn_count:
        return (row.shape, row.completion_at, *((role, fold(content or "")) for role, content in row.pairs()), *rejected)
    return (row.shape, fold(row.prompt), fold(row.target), *rejected)


def _key_bytes(row: Row, fold: Callable[[str], str]) -> bytes:
    """A row's :func:`_key` as bytes that are equal for two rows exactly when their keys are: a header naming the key's
    shape (the row's shape, completion_at, its number of turns, whether it has a rejected answer), then its strings,
    NUL between them; the key's ``repr`` (five times the cost) when a string holds a NUL itself."""
    rejected = row.rejected
    turns = row.turn_count
    if turns:
        parts = [f"{row.shape} {row.completion_at} {turns} {rejected is not None}"]
        for role, content in row.pairs():
            parts += (role, fold(content or ""))
    else:
        parts = [f"{row.shape} - 0 {rejected is not None}", fold(row.prompt), fold(row.target)]
    if rejected is not None:
        parts.append(fold(rejected))
    text = "\x00".join(parts)
    if text.count("\x00") != len(parts) - 1:
        text = "\x01" + repr(_key(row, fold))
    return text.encode("utf-8", "surrogatepass")


def _digest(key: bytes) -> bytes:
    """A row's key (:func:`_key_bytes`) as 16 bytes: its BLAKE2b digest; two keys alike by chance would need 2**64 rows."""
    return hashlib.blake2b(key, digest_size=16).digest()


def _digests(rows: Sequence[Row], fold: Callable[[str], str], among: np.ndarray | None = None) -> np.ndarray:
    """Each row's key digest (:func:`_digest`), folded by ``fold``, in one array of 16-byte strings; with ``among`` (row
    indices), those rows' only, in that order (taken a chunk at a time: a million indices as a list are 36 MB)."""
    picked = rows if among is None else (rows[i] for start in range(0, len(among), _CHUNK) for i in among[start : start + _CHUNK].tolist())
    packed = bytearray(16 * (len(rows) if among is None else len(among)))
    for k, row in enumerate(picked):
        packed[16 * k : 16 * k + 16] = _digest(_key_bytes(row, fold))
    return np.frombuffer(packed, dtype="S16")


_CHUNK = 65_536


def _repeating(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows whose key an earlier row has (ascending), and for each the first row with that key. Only the rows whose
    key's first 8 bytes another row shares are grouped, by the whole key: a million distinct rows sort 8 MB of prefixes
    and group none; a million copies of a few rows are grouped in arrays, not in a dict a row."""
    none = np.zeros(0, dtype=np.int64)
    if len(keys) < 2:
        return none, none
    prefixes = keys.view(np.uint64)[0::2]
    order = np.argsort(prefixes, kind="stable")
    ranked = prefixes[order]
    same = np.flatnonzero(ranked[1:] == ranked[:-1])
    del ranked
    shared = np.zeros(len(keys), dtype=bool)
    shared[order[same]] = shared[order[same + 1]] = True
    del order, same
    candidates = np.flatnonzero(shared)  # ascending: a stable sort of their keys keeps each group's first row first
    if not len(candidates):
        return none, none
    by_key = np.argsort(keys[candidates], kind="stable")
    ranked_keys = keys[candidates[by_key]]
    starts = np.ones(len(by_key), dtype=bool)
    starts[1:] = ranked_keys[1:] != ranked_keys[:-1]
    del ranked_keys
    group_start = np.maximum.accumulate(np.where(starts, np.arange(len(by_key)), 0))
    firsts = np.empty(len(candidates), dtype=np.int64)
    firsts[by_key] = candidates[by_key][group_start]
    later = firsts != candidates
    return candidates[later], firsts[later]


def _problem_hits(ctx: TextContext, problems: Sequence[RowProblem], what: str) -> Iterator[Hit]:
    """One hit per problem for the first TEXT_EXAMPLES, the first counting them all."""
    total = len(problems)
    for n, problem in enumerate(problems[: ctx.t.TEXT_EXAMPLES]):
        message = problem.message.rstrip(".") + "."
        message = message[:1].upper() + message[1:]
        shared = ""
        if n == 0 and total > 1:
            shared = f"{total:,} {what}; {first_named(min(total, ctx.t.TEXT_EXAMPLES), total)}."
            message += f" {shared}"
        yield Hit(message=message, evidence=f"{ctx.dataset.where(problem.line)}: {problem.kind}" if problem.line else problem.kind, values={"count": total}, line=problem.line, shared=shared)


def _row_hits(
    ctx: TextContext, rows: Sequence[int] | np.ndarray, what: str, say: Callable[[Row], tuple[str, str]], values: dict | None = None, *, measured: bool = False
) -> Iterator[Hit]:
    """One hit for each of the first TEXT_EXAMPLES rows (indices into the dataset's rows), the first counting them all
    (``measured``: out of the rows the tokenizer measured, not those it could not encode)."""
    total = len(rows)
    count = len(ctx.dataset.rows) - (len(ctx.lengths.left_out) if measured and ctx.lengths is not None else 0)
    for n, i in enumerate(rows[: ctx.t.TEXT_EXAMPLES]):
        row = ctx.dataset.rows[i]
        message, evidence = say(row)
        shared = ""
        if n == 0 and total > 1:
            shared = f"{total:,} of {count:,} rows {what} ({figures.pct(total / count)}); {first_named(min(total, ctx.t.TEXT_EXAMPLES), total)}."
            message += f" {shared}"
        yield Hit(message=message, evidence=evidence, values={"count": total, "rows": count, **(values or {})}, line=row.line, shared=shared)


# --- the file and its lines --------------------------------------------------------


def document(ctx: TextContext) -> Iterator[Hit]:
    """The file is one JSON document (an array, or pretty-printed), not JSON Lines.

    What it detects: a file that starts with `[` (a JSON array) or holds one object spread over many lines.
    Why it matters: fine-tuning loaders read one JSON object per line; they fail on the first line, or (some) read nothing.
    Fires on: `json.dump(rows, f, indent=2)` saved as `train.jsonl`.
    Does not fire on: one object per line.
    Does not mean: the rows are wrong; write one per line (`jq -c '.[]'`).
    """
    yield from _problem_hits(ctx, ctx.problems("document"), "documents")


def malformed(ctx: TextContext) -> Iterator[Hit]:
    """A line is not a JSON object.

    What it detects: lines that are not valid JSON, or JSON that is not an object (a list, a string, a number), or longer than the reader reads; the first TEXT_EXAMPLES are named.
    Why it matters: a loader either crashes on the line or skips it, so you train on less than you think.
    Fires on: a line cut in half by a bad merge; a stray `[` line.
    Does not fire on: blank lines (see TP-TEXT-FORMAT), or objects of an unknown shape (TP-TEXT-SHAPE).
    Does not mean: the other lines are fine.
    """
    yield from _problem_hits(ctx, ctx.problems("unparsable", "not-object", "overlong-line"), "lines are not JSON objects")


def shape(ctx: TextContext) -> Iterator[Hit]:
    """A row has none of the shapes fine-tuning trainers read, or a field of the wrong type.

    What it detects: objects with no `text`, `prompt`/`completion`, `instruction`/`output`, `messages` or `chosen`/`rejected` field (the near miss named: `Prompt` for `prompt`; a `prompt` and `chosen` with no `rejected`), and shape fields that are not strings (or messages that are not a list of role/content objects), or a list of messages beside a string where both must be of one kind (`prompt` and `completion`; `chosen` and `rejected`; a `prompt` of messages beside string answers, which TRL drops).
    Why it matters: the trainer's formatting function raises a KeyError on the row, or silently formats it as empty.
    Fires on: `{"Prompt": ..., "Completion": ...}`; `{"prompt": ..., "completion": 42}`; `{"prompt": ..., "chosen": ...}` with no `rejected`.
    Does not fire on: rows of a known shape with extra keys; TRL's conversational prompt-completion and preference rows (lists of messages), with an implicit prompt or not; KTO's `prompt`/`completion`/`label`.
    Does not mean: the data is wrong; rename the fields.
    """
    yield from _problem_hits(ctx, ctx.problems("unknown-shape", "wrong-type"), "rows have no known shape")


def file_format(ctx: TextContext) -> Iterator[Hit]:
    """The file has blank lines.

    What it detects: blank lines between rows.
    Why it matters: some loaders stop at the first blank line, or count it as an empty row.
    Fires on: rows separated by empty lines.
    Does not fire on: a file with one row on every line.
    Does not mean: rows are lost; most readers skip them.
    """
    yield from _problem_hits(ctx, ctx.problems("blank-line"), "blank lines")


def mixed_shapes(ctx: TextContext) -> Iterator[Hit]:
    """Rows of different shapes are mixed in one file.

    What it detects: a file whose rows are of more than one shape (some `messages`, some `prompt`/`completion`); the rows of the less common shapes are named.
    Why it matters: a trainer formats every row one way: the rows of the other shape are formatted as empty, or fail.
    Fires on: a chat dataset with a few Alpaca rows appended.
    Does not fire on: rows of one shape.
    Does not mean: either shape is wrong; convert one to the other.
    """
    shapes = {name: n for name, n in ctx.dataset.shapes.items() if n}
    if len(shapes) < 2:
        return
    main = max(sorted(shapes), key=lambda s: shapes[s])
    others = [i for i, r in enumerate(ctx.dataset.rows) if r.shape != main]
    spread = ", ".join(f"{name} ({n:,})" for name, n in sorted(shapes.items(), key=lambda kv: -kv[1]) if n)
    yield from _row_hits(ctx, others, f"are not of the main shape, {main}", lambda r: (f"{ctx.at(r)} is {_a(r.shape)} {r.shape} row in a file of {main} rows.", f"shapes: {spread}"))


def _a(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


# --- fields and roles ----------------------------------------------------------------


def empty_fields(ctx: TextContext) -> Iterator[Hit]:
    """A row has an empty or null field.

    What it detects: shape fields (or message contents) that are null, empty or only whitespace, a preference row's `chosen` and `rejected` included, and the implicit prompt of a preference row whose answers begin with nothing alike (TRL reads the prompt from what they share).
    Why it matters: an empty completion trains the model to answer with nothing; an empty prompt teaches it to answer nobody; an empty chosen or rejected answer makes a preference for or against saying nothing.
    Fires on: `{"prompt": "Summarise:", "completion": ""}`; `{"prompt": ..., "chosen": "", "rejected": ...}`.
    Does not fire on: Alpaca's optional `input` left empty.
    Does not mean: the row is unusable; fill it or drop it.
    """
    yield from _problem_hits(ctx, ctx.problems("empty-field", "null-field"), "fields are empty or null")


def no_assistant(ctx: TextContext) -> Iterator[Hit]:
    """A conversation has no assistant turn.

    What it detects: chat rows with no message whose role is `assistant` (ShareGPT's `gpt`); each is named with the roles it has, each once, so a misspelt one (`Assistant`, `bot`) shows.
    Why it matters: nothing in the row is trained on: a trainer that learns the answers only (OpenAI's, TRL's assistant-only loss) gets no token from it (or, with some trainers, a NaN loss), and OpenAI's own format check counts the row an error (`example_missing_assistant_message`).
    Fires on: a conversation of one user message; system and user with no answer; an answer under the role `Assistant`.
    Does not fire on: conversations with an assistant turn (their other role problems are TP-TEXT-ROLES'); a conversational completion or chosen answer with no assistant turn (TP-TEXT-ROLES': its tokens are trained whatever its role).
    Does not mean: the question is bad; add its answer or drop the row.
    """
    yield from _problem_hits(ctx, ctx.problems("no-assistant"), "conversations have no assistant message")


def roles(ctx: TextContext) -> Iterator[Hit]:
    """A conversation's roles are out of order or unknown, or it has no user turn, or its last user turn is not answered.

    What it detects: chat rows whose system (or OpenAI's `developer`) message is not first, whose user and assistant turns do not alternate, that do not start with system, developer or user, that use an unknown role, that have no user turn at all (system then assistant), or whose last user turn has no assistant turn after it; a conversational completion or chosen answer with no assistant turn; each read with its prompt's turns first (a preference row's rejected answer too). A conversation with several of these is named once, for the first. `messages` rows with no assistant turn are TP-TEXT-NO-ASSISTANT's.
    Why it matters: chat templates raise on broken alternation (several refuse a conversation that does not alternate); an answer to no user message trains the model to speak unprompted, not the chat it is meant for (OpenAI's format check counts such rows as missing a user message); a completion with no assistant turn trains the model to write another role's turn; a last question no one answers is trained on nothing, and is often a conversation cut short.
    Fires on: two user turns in a row; system then assistant with no user; user, assistant, user.
    Does not fire on: system, user, assistant, user, assistant (tool turns between assistant turns are fine); developer, user, assistant; user then assistant with no system message.
    Does not mean: the content is wrong.
    """
    unanswerable = {p.line for p in ctx.problems("no-assistant")}  # TP-TEXT-NO-ASSISTANT names them
    first_per_row: dict[int | None, RowProblem] = {}
    for problem in ctx.problems("role-order", "no-user", "unanswered"):
        if problem.line not in unanswerable:
            first_per_row.setdefault(problem.line, problem)  # a conversation with two role problems is one conversation
    yield from _problem_hits(ctx, list(first_per_row.values()), "conversations have role problems")


def duplicates(ctx: TextContext) -> Iterator[Hit]:
    """Rows repeat an earlier row exactly, or after case and whitespace are folded.

    What it detects: rows whose prompt and trained part (and a preference row's rejected answer) equal an earlier row's, exactly or after Unicode, case and whitespace folding (each named with the line it repeats: the first identical row, else the first equal after folding); the evidence counts the rows identical to an earlier row and those equal to one only after folding.
    Why it matters: duplicates weigh those examples double and leak between a train and an evaluation split.
    Fires on: the same example appended twice; "Hello  World" and "hello world" with the same answer.
    Does not fire on: rows that share a prompt but differ in the answer; preference pairs that share a prompt and a chosen answer but not the rejected one.
    Does not mean: which copy to keep.
    """
    rows = ctx.dataset.rows
    repeating, first = _repeating(ctx.folded)  # rows equal to an earlier one after folding, and the first of each
    in_group = np.zeros(len(rows), dtype=bool)  # a row identical to another is equal to it after folding: only these can be
    in_group[repeating] = in_group[first] = True
    grouped = np.flatnonzero(in_group)
    del in_group
    within, first_within = _repeating(_digests(rows, str, grouped))
    identical_rows, first_identical = grouped[within], grouped[first_within]  # rows identical to an earlier one
    identical = len(identical_rows)
    folded = len(repeating) - identical

    def say(r: Row) -> tuple[str, str]:
        i = _index(ctx, r)
        at = int(np.searchsorted(identical_rows, i))  # identical to an earlier row: named with the first of them
        same = at < identical and identical_rows[at] == i
        earlier = int(first_identical[at]) if same else int(first[np.searchsorted(repeating, i)])
        how = "" if same else " after folding case, Unicode form and whitespace"
        return (f"{ctx.at(r)} repeats {ctx.dataset.where(rows[earlier].line)}{how}.",
                f"{identical:,} identical to an earlier row, {folded:,} equal to one only after folding case, Unicode form and whitespace")

    yield from _row_hits(ctx, repeating, "repeat an earlier row", say)


ONE_SPLIT = "the dataset has one split"
"""Why TP-TEXT-SPLIT-LEAK does not judge a dataset of one split (a JSON Lines file, a folder holding one)."""


def split_leak(ctx: TextContext) -> Iterator[Hit]:
    """Rows of a validation or test split repeat rows of the train split.

    What it detects: in a dataset of several splits (a folder of Parquet or Arrow shards, a `DatasetDict` saved by `datasets`), rows of a later split whose prompt and trained part (and a preference row's rejected answer) equal a row of an earlier one (train before validation before test) after Unicode, case and whitespace folding, each named with the split and row it repeats.
    Why it matters: the model is evaluated on examples it was trained on, so its validation loss and test scores say it generalises better than it does.
    Fires on: the same prompt and completion in `train-00000-of-00001.parquet` and in `test-00000-of-00001.parquet`.
    Does not fire on: a row repeated within one split (TP-TEXT-DUPLICATE says so); rows of two splits that share a prompt but not the answer. It does not run on a dataset of one split, and a leak is named in the later split, the one it leaked into.
    Does not mean: which split to take the row out of.
    """
    dataset = ctx.dataset
    if dataset.split is None:
        raise NotApplicable(ONE_SPLIT)
    if not dataset.earlier:
        raise NotApplicable(f"{dataset.split} is the dataset's first split: a row in two splits is named in the later one")
    splits = [split for split in dataset.earlier for _ in split.rows]
    rows = [row for split in dataset.earlier for row in split.rows]
    earlier = _digests(rows, _fold)
    keys, first = np.unique(earlier, return_index=True)  # each key of the earlier splits, at its first row
    folded = ctx.folded
    at = np.minimum(np.searchsorted(keys, folded), max(len(keys) - 1, 0))
    found = np.flatnonzero(keys[at] == folded) if len(keys) else np.zeros(0, dtype=np.int64)
    leaked = {i: (splits[first[at[i]]], rows[first[at[i]]]) for i in found.tolist()}
    by_line = {dataset.rows[i].line: found for i, found in leaked.items()}

    def say(r: Row) -> tuple[str, str]:
        split, row = by_line[r.line]
        return (f"{ctx.at(r)} ({dataset.split}) repeats {split.where(row.line)} of the {split.split} split, {split.path}.",
                f"{len(leaked):,} of {len(dataset.rows):,} rows equal a row of an earlier split")  # fmt: skip

    yield from _row_hits(ctx, sorted(leaked), f"repeat a row of an earlier split ({', '.join(sorted({s.split or '' for s, _ in leaked.values()}))})", say)


def same_pair(ctx: TextContext) -> Iterator[Hit]:
    """A preference row's chosen and rejected answers are the same.

    What it detects: preference rows (`chosen` and `rejected`) whose two answers are equal as written: the same string, or the same list of messages.
    Why it matters: the pair prefers neither answer. DPO's loss on it is log 2 whatever the weights, with no gradient, and so is a reward model's; ORPO and CPO learn only their plain likelihood term from it. It comes of a generation step that sampled the same answer twice, or a join that put one column in both.
    Fires on: `{"prompt": "2+2?", "chosen": "4", "rejected": "4"}`.
    Does not fire on: answers that differ in anything, even case or a space (the pair then prefers that difference); answers both empty (TP-TEXT-EMPTY names them).
    Does not mean: the answer is wrong; generate another to reject, or drop the row.
    """
    yield from _problem_hits(ctx, ctx.problems("same-pair"), "preference pairs have the same chosen and rejected answer")


def tool_arguments(ctx: TextContext) -> Iterator[Hit]:
    """A tool call's arguments are not a JSON object.

    What it detects: assistant turns whose `tool_calls` (OpenAI's shape, `{"type": "function", "function": {"name": ..., "arguments": ...}}`, or the legacy `function_call`) give `arguments` as a string that does not parse as JSON, or parses to something other than an object (a number, a list, a string), or as a value that is neither a string nor an object; the parser's message and the arguments are quoted.
    Why it matters: the turn is trained as written, so the model learns to emit calls no tool runner can parse (a JSON string cut off by a length limit, single quotes, a trailing comma); the chat template renders them as broken text either way.
    Fires on: `"arguments": "{\"city\": \"Paris\""` (cut off); `"arguments": "{'city': 'Paris'}"`.
    Does not fire on: `"arguments": "{\"city\": \"Paris\"}"` or `"arguments": {"city": "Paris"}` (an object, as transformers' templates take it); calls written in the assistant's text (Hermes' `<tool_call>`), which are not parsed.
    Does not mean: the tool exists or its schema matches; only that the arguments are not JSON.
    """
    yield from _problem_hits(ctx, ctx.problems("tool-arguments"), "tool calls have arguments that are not a JSON object")


def tool_orphan(ctx: TextContext) -> Iterator[Hit]:
    """A `tool` message answers no tool call.

    What it detects: conversations with a `tool` message (a tool's result) whose run of tool results does not follow an assistant turn: it follows a user or system turn, or opens the conversation; or, in a conversation that writes its calls as `tool_calls`, follows an assistant turn that has none. The first such message of a conversation is named.
    Why it matters: the model is trained on a tool result it never asked for, so it learns that results arrive unbidden; it is most often a conversation whose calling turn was dropped (a filter on empty assistant contents drops exactly the turns that only call a tool), and templates that check calls against results refuse it.
    Fires on: user, tool, assistant; an assistant turn with no `tool_calls` then a tool result, where other turns use `tool_calls`.
    Does not fire on: an assistant turn with `tool_calls`, then one or more tool results, then the answer; tool results after assistant turns in a conversation that writes its calls in the assistant's text (no `tool_calls` anywhere); ShareGPT's `function_call` and `observation` turns.
    Does not mean: the result itself is wrong; restore the calling turn or drop the row.
    """
    yield from _problem_hits(ctx, ctx.problems("orphan-tool"), "conversations have a tool result that answers no call")


def _index(ctx: TextContext, row: Row) -> int:
    return ctx.row_index(row.line)


# --- answers ---------------------------------------------------------------------------


def repeated_target(ctx: TextContext) -> Iterator[Hit]:
    """A row's answer is one short unit written over and over.

    What it detects: answers (each assistant turn, a completion, an output, a `text` row, a preference row's chosen answer: its rejected one is meant to be bad) of at least TEXT_REPEAT_MIN_CHARS characters of which at least TEXT_REPEAT_SHARE is one run of a unit written back to back at least TEXT_REPEAT_TIMES times, the unit at most TEXT_REPEAT_MAX_UNIT characters long; the unit, its count and the characters the run covers are named. Found exactly, in time linear in the answer's length.
    Why it matters: the row trains the model to loop, writing the same phrase until its length runs out; it is what a generation stuck in a loop leaves in a distilled or scraped dataset, and one such row weighs as much as a thousand short answers.
    Fires on: `'Eat a banana!'` 2,000 times in a row (26,000 characters), as OpenAI's toy chat dataset has it.
    Does not fire on: code, SQL, tables, lists, JSON and poems, which repeat keys, lines or refrains between other text; a short reply such as 'Noooooooooo'.
    Does not mean: the row is wrong in every case (an array of zeros looks the same): read it.
    """
    found = ctx.repeats

    def say(r: Row) -> tuple[str, str]:
        where, text, run = found[_index(ctx, r)]
        covered = f"{run.length:,} characters" if run.length == len(text) else f"{run.length:,} of its {len(text):,} characters"
        return (f"{ctx.at(r)}: {where} is {quoted(run.unit)} repeated {run.times:,} times ({covered}).",
                f"one run of a {len(run.unit):,}-character unit covers {figures.pct(run.length / len(text))} of the answer")

    yield from _row_hits(ctx, sorted(found), "have an answer that is one short unit repeated", say)


def length_outlier(ctx: TextContext) -> Iterator[Hit]:
    """A row's answer is far longer than the file's other answers.

    What it detects: rows whose answer (their longest assistant turn, else their completion, output, text or chosen answer) is TEXT_LENGTH_Z robust sigmas (MAD x 1.4826) above the median answer's length in characters on a log scale (or any amount above it, when over half the answers are of one length), and at least TEXT_LENGTH_RATIO times that median, judged in files of at least TEXT_LENGTH_MIN_ROWS rows with an answer; rows TP-TEXT-REPEATED-TARGET names are left to it.
    Why it matters: one answer hundreds of times longer than the rest is most often rows glued together, a document pasted into an answer, or a generation that did not stop; and it weighs as much as hundreds of the other rows.
    Fires on: one 26,000-character answer among 30 answers of 40 to 100 characters.
    Does not fire on: the long tail of natural answers (Reddit jokes of one line to 3,500 characters: 53 times the median, but 3.7 sigmas on the log scale); answers of much the same length of which one is three times the median (WikiSQL's longest queries); a file of fewer than TEXT_LENGTH_MIN_ROWS answers.
    Does not mean: the row is wrong; read it.
    """
    t = ctx.t
    rows = ctx.dataset.rows
    # a row has an answer when its target is not empty, and then one of its answers is not either: longest > 0
    longest = np.fromiter((max(map(len, _answer_texts(row))) if row.target else 0 for row in rows), dtype=np.int64, count=len(rows))
    answered = np.flatnonzero(longest)
    if len(answered) < t.TEXT_LENGTH_MIN_ROWS:
        raise NotApplicable(f"only {figures.plural(len(answered), 'row')} with an answer to compare lengths across (needs {t.TEXT_LENGTH_MIN_ROWS})")
    counts = longest[answered].astype(np.float64)
    logs = np.log(counts)
    center = float(median(logs))
    sigma = MAD_TO_SIGMA * float(median(np.abs(logs - center)))
    middle = float(median(counts))

    def z(n: int) -> float:
        above = math.log(n) - center
        return above / sigma if sigma > 0 else (math.inf if above > 0 else 0.0)

    candidates = answered[longest[answered] >= t.TEXT_LENGTH_RATIO * middle].tolist()
    far = [i for i in candidates if z(int(longest[i])) >= t.TEXT_LENGTH_Z and i not in ctx.repeats]

    def say(r: Row) -> tuple[str, str]:
        n = int(longest[_index(ctx, r)])
        where = next(w for w, text in _answers_of(r) if len(text) == n)
        spread = f"{z(n):.1f} robust sigmas above it on a log scale" if sigma > 0 else "over half the answers are of that length"
        return (f"{ctx.at(r)}: {where} has {figures.plural(n, 'character')}, {figures.num(n / middle)} times the median answer "
                f"({figures.plural(middle, 'character')}).",
                f"median of {figures.plural(len(answered), 'answer')} {figures.plural(middle, 'character')}; {spread}")

    yield from _row_hits(ctx, sorted(far), "have an answer far longer than the rest", say)


# --- lengths, with a tokenizer ---------------------------------------------------------


def _need_lengths(ctx: TextContext) -> Lengths:
    if ctx.lengths is None:
        raise NotApplicable("no --tokenizer given")
    if ctx.max_len is None:
        raise NotApplicable("no --max-len given")
    return ctx.lengths


def _answers(row: Row) -> bool:
    """Whether the row has a part to train on: a conversation with no assistant turn has none (TP-TEXT-NO-ASSISTANT names it)."""
    return row.shape != "messages" or any(role == "assistant" for role, _ in row.pairs())


def too_long(ctx: TextContext) -> Iterator[Hit]:
    """A row has more tokens than `--max-len`.

    What it detects: rows whose tokens (as the tokenizer, and its chat template when it has one, make them) exceed `--max-len`; the share of all tokens lost to truncation is in the first finding. A preference row is measured as its prompt and chosen answer, as DPO renders them.
    Why it matters: the trainer truncates the row, and the end of its answer is never learnt.
    Fires on: a 3,000-token row with `--max-len 2048`.
    Does not fire on: rows within the limit.
    Does not mean: the answer is lost entirely (see TP-TEXT-TRUNCATED-TARGET); a preference row's rejected answer, not measured, may be longer.
    """
    lengths = _need_lengths(ctx)
    limit = ctx.max_len or 0
    over = [i for i, n in enumerate(lengths.total) if n > limit]
    lost = sum(n - limit for n in lengths.total if n > limit)
    share = lost / max(sum(lengths.total), 1)
    yield from _row_hits(
        ctx, over, f"are over {figures.plural(limit, 'token')}",
        lambda r: (f"{ctx.at(r)} has {lengths.total[_index(ctx, r)]:,} tokens, over --max-len {limit:,}.",
                   f"{lost:,} of {figures.plural(sum(lengths.total), 'token')} ({figures.pct(share)}) "
                   f"{'is' if lost == 1 else 'are'} lost to truncation"),
        {"lost_tokens": lost, "lost_share": share}, measured=True,
    )  # fmt: skip


def truncated_target(ctx: TextContext) -> Iterator[Hit]:
    """A row's trained part is cut off entirely by `--max-len`.

    What it detects: rows whose prompt alone (everything before the completion, output, chosen answer or assistant turn) takes `--max-len` tokens or more.
    Why it matters: after truncation nothing of the answer is left (of neither answer, in a preference pair), so the row adds no loss (or, with some trainers, NaN): it is trained on nothing.
    Fires on: a 5,000-token document to summarise with `--max-len 4096`.
    Does not fire on: rows whose answer starts within the limit, plain `text` rows (every token of them is trained), or conversations with no assistant turn (TP-TEXT-NO-ASSISTANT).
    Does not mean: the row is bad; raise the limit or shorten the prompt.
    """
    lengths = _need_lengths(ctx)
    limit = ctx.max_len or 0
    cut = [i for i, (r, p) in enumerate(zip(ctx.dataset.rows, lengths.prompt)) if r.shape != "text" and _answers(r) and p >= limit]
    yield from _row_hits(
        ctx, cut, "lose their whole answer to truncation",
        lambda r: (f"{ctx.at(r)}'s prompt alone has {figures.plural(lengths.prompt[_index(ctx, r)], 'token')}, "
                   f"so at --max-len {limit:,} none of its answer is trained.",
                   f"prompt {figures.plural(lengths.prompt[_index(ctx, r)], 'token')}, "
                   f"row {lengths.total[_index(ctx, r)]:,}; limit {limit:,}"),
        measured=True,
    )  # fmt: skip


def rejected_too_long(ctx: TextContext) -> Iterator[Hit]:
    """A preference row's rejected side is over `--max-len` where its chosen side fits.

    What it detects: preference rows whose prompt and rejected answer (measured as the chosen side is: through the chat template as TRL's DPO and ORPO trainers render `prompt + rejected`, else the prompt's tokens, the rejected answer's and eos) exceed `--max-len` tokens while the prompt and chosen answer do not; both counts and the difference are named.
    Why it matters: the trainer cuts the rejected side and not the chosen one, so the pair compares a whole answer with a truncated one: the loss rewards the model for whatever the cut removes (DPO's log-ratio of the rejected side loses the end of the answer, often the part that made it worse), and the model learns "shorter than the cut" rather than the preference.
    Fires on: `{"prompt": "Write.", "chosen": "Short.", "rejected": <300 tokens>}` with `--max-len 64`.
    Does not fire on: pairs whose two sides both fit, or both exceed the limit (TP-TEXT-TOO-LONG names the chosen side); rows that are not preference rows.
    Does not mean: the pair is wrong; raise the limit, or drop pairs whose rejected answer runs far past it.
    """
    lengths = _need_lengths(ctx)
    limit = ctx.max_len or 0
    over = [i for i, n in sorted(lengths.rejected.items()) if n > limit and lengths.total[i] <= limit and i not in lengths.left_out]
    yield from _row_hits(
        ctx, over, f"have a rejected side over {figures.plural(limit, 'token')} where the chosen side fits",
        lambda r: (f"{ctx.at(r)}: its prompt and rejected answer have {lengths.rejected[_index(ctx, r)]:,} tokens, over --max-len {limit:,}, "
                   f"where its prompt and chosen answer have {lengths.total[_index(ctx, r)]:,}.",
                   f"rejected {lengths.rejected[_index(ctx, r)]:,} tokens, chosen {lengths.total[_index(ctx, r)]:,}; limit {limit:,}"),
        measured=True,
    )  # fmt: skip


TEXT_RULES = rules_of(
    "text",
    (
        ("TP-TEXT-DOCUMENT", Level.FAIL, document),
        ("TP-TEXT-MALFORMED", Level.FAIL, malformed),
        ("TP-TEXT-SHAPE", Level.FAIL, shape),
        ("TP-TEXT-FORMAT", Level.WARN, file_format),
        ("TP-TEXT-MIXED-SHAPES", Level.WARN, mixed_shapes),
        ("TP-TEXT-EMPTY", Level.WARN, empty_fields),
        ("TP-TEXT-NO-ASSISTANT", Level.FAIL, no_assistant),
        ("TP-TEXT-ROLES", Level.WARN, roles),
        ("TP-TEXT-DUPLICATE", Level.WARN, duplicates),
        ("TP-TEXT-SPLIT-LEAK", Level.WARN, split_leak),
        ("TP-TEXT-SAME-PAIR", Level.WARN, same_pair),
        ("TP-TEXT-TOOL-ARGUMENTS", Level.FAIL, tool_arguments),
        ("TP-TEXT-TOOL-ORPHAN", Level.WARN, tool_orphan),
        ("TP-TEXT-REPEATED-TARGET", Level.WARN, repeated_target),
        ("TP-TEXT-LENGTH-OUTLIER", Level.WARN, length_outlier),
        ("TP-TEXT-TRUNCATED-TARGET", Level.FAIL, truncated_target),
        ("TP-TEXT-TOO-LONG", Level.WARN, too_long),
        ("TP-TEXT-REJECTED-TOO-LONG", Level.WARN, rejected_too_long),
    ),
)
"""The text command's rules, in the order they run; registered by id in :mod:`trainproof.checks.registry`."""
