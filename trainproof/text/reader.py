"""A fine-tuning dataset in JSON Lines read into a :class:`TextDataset`.

Each line is one JSON object of one of five shapes, its keys spelt exactly
as the tools people train with write them (other keys are ignored):

- ``text``: ``{"text": ...}``, a pre-rendered example trained on whole;
- ``prompt_completion``: ``{"prompt": ..., "completion": ...}`` (OpenAI's
  legacy format, TRL; KTO's ``label`` beside them is ignored), both strings
  or both lists of messages (TRL's conversational prompt-completion, read
  as one conversation, the prompt's turns first);
- ``instruction``: ``{"instruction": ..., "input": ..., "output": ...}``
  (Alpaca; ``input`` may be missing, null or empty);
- ``messages``: ``{"messages": [{"role": ..., "content": ...}, ...]}``
  (OpenAI chat, TRL, Axolotl), or ShareGPT's ``{"conversations": [{"from":
  "human", "value": ...}, ...]}`` with its speakers mapped to roles. A
  ``content`` may be a list of parts (``{"type": "text", "text": ...}``,
  images), read as its text parts joined: a length counts their text only;
- ``preference``: ``{"prompt": ..., "chosen": ..., "rejected": ...}`` (TRL's
  DPO, ORPO, CPO and reward trainers), strings or lists of messages; with
  no ``prompt`` of the answers' kind, the prompt is what ``chosen`` and
  ``rejected`` begin with alike (TRL's ``maybe_extract_prompt``).

A row with the fields of several shapes is read as the first of messages,
prompt_completion, instruction, text, preference, with a note.

What is wrong with a line is a :class:`RowProblem` at its line. A line
that is not a training example (not JSON, not an object, of no shape, a
field of the wrong type, too long) is not a row; one with an empty or null
field or turns out of order still is, so the rules can count it. Only a
file that cannot be judged at all is an InputError: missing, a folder,
empty, binary, or text in another encoding than UTF-8.

The file is read once, in blocks, so a pipe can be read too, and one line
costs at most about MAX_TEXT_LINE_BYTES of memory whatever the file holds.
A file that is a symlink, or lies under one, inside its folder or the working
directory is read only when the link stays inside them and out of any
``.git`` folder (:class:`~trainproof.io.access.ReadPolicy`; ``follow_links``
lifts it); a link to a pipe is a link like any other, and only a descriptor
named as such (``/dev/stdin``, ``/dev/fd/63``) is the user's own.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO, NamedTuple

from trainproof.io import figures
from trainproof.io.access import ReadPolicy
from trainproof.io.bounded import BLOCK_BYTES, mostly_binary, open_log, read_block, size_text
from trainproof.io.collector import collector_paused
from trainproof.io.errors import InputError
from trainproof.io.safe import quoted
from trainproof.text.model import ROLES, SHAPES, SYSTEM_ROLES, Message, Row, RowProblem, TextDataset, held, joined

MAX_TEXT_LINE_BYTES = 16 * 1024 * 1024
"""The longest line kept as a row. Long-context fine-tuning rows run to 100k+ characters, and JSON escapes of non-Latin
text (``\\u0416``, six bytes a character) can make a 128k-token row several MiB; 16 MiB leaves room for a whole book in
one row. A longer line is an ``overlong-line`` problem, skipped to its end without being held, so a file of one 1 GB line
costs 16 MiB of memory, not 1 GB. (Training logs are held to 1 MiB a line: their lines are a few hundred bytes.)"""

HEAD_BYTES = 64 * 1024
"""How much of the file is looked at to tell JSON Lines text from binary data or another encoding."""

BINARY_SHARE = 0.1
"""Share of control bytes, or of bytes that are not UTF-8, in the first HEAD_BYTES above which the file is binary."""

QUOTE_CHARS = 40
"""Most characters of the file's own text a problem message quotes."""

SHAREGPT_ROLES = {"human": "user", "gpt": "assistant", "system": "system", "observation": "tool", "function_call": "assistant"}
"""ShareGPT speakers (``from``) as chat-template roles; LLaMA-Factory adds ``observation`` and ``function_call``. A speaker
that is none of these is kept as written (a ``role-order`` problem names it)."""

SYNONYMS = {
    "response": ("output", "completion"),
    "answer": ("completion", "output"),
    "target": ("completion", "output"),
    "question": ("prompt",),
    "query": ("prompt",),
    "chat": ("messages",),
    "dialog": ("messages",),
    "dialogue": ("messages",),
}
"""Keys other datasets use for a shape's field, which no trainer reads in its place: an ``unknown-shape`` problem names
them as the near miss (lower case, without ``_`` and ``-``)."""

_FORMS = tuple(
    (shape, keys, frozenset(keys))
    for shape, keys in (
        ("messages", ("messages",)),
        ("messages", ("conversations",)),
        ("prompt_completion", ("prompt", "completion")),
        ("instruction", ("instruction", "output")),
        ("text", ("text",)),
        ("preference", ("chosen", "rejected")),
    )
)
"""The required keys of each shape (ShareGPT's ``conversations`` is a form of ``messages``), in the order a row that has
the keys of several is read as, and as a set to test a record's keys against."""
_OPTIONAL = {"preference": ("prompt",)}
"""The fields a shape may have beside its required ones, which make a record of no shape nearer to it."""
_FIELDS = tuple(dict.fromkeys(key for _, keys, _ in _FORMS for key in keys))
_EXPECTED = "'text', 'prompt' and 'completion', 'instruction' and 'output', 'messages', or 'chosen' and 'rejected'"

_UTF8_BOM = b"\xef\xbb\xbf"
_OTHER_BOMS = (
    (b"\x00\x00\xfe\xff", "UTF-32 (big-endian)"),
    (b"\xff\xfe\x00\x00", "UTF-32 (little-endian)"),
    (b"\xfe\xff", "UTF-16 (big-endian)"),
    (b"\xff\xfe", "UTF-16 (little-endian)"),
)  # UTF-32 first: its little-endian mark begins with UTF-16's
_PREFIX_BYTES = 64
_MAX_KEYS_EXAMINED = 50
_MAX_KEY_SETS = 1024
_MAX_SHARED_PROMPTS = 1024  # distinct system prompts a file's rows share one string of (most files have one)
_SHARED_PROMPT_CHARS = 8192  # longer ones are kept per row: the strings shared stay a few MiB at most
_ROLES_SHOWN = 6  # a conversation with no assistant turn is named with its roles, each once (so a misspelt one shows)


def read_text_dataset(path: str | os.PathLike[str], follow_links: bool = False) -> TextDataset:
    """The fine-tuning dataset at ``path``, a JSON Lines file, as rows and problems; an InputError when a symlink leads
    it outside its folder and the working directory, or into ``.git`` (unless ``follow_links``)."""
    given = str(os.fspath(path))
    if os.path.isdir(given):
        raise InputError(given, "is a folder, not a JSON Lines file: give the dataset's .jsonl file")
    if not os.path.exists(given):
        raise InputError(given, "does not exist")
    refusal = ReadPolicy.for_input(given, follow_links=follow_links).refusal(given)
    if refusal is not None:
        raise InputError(given, refusal)
    reader = _Reader(given)
    with open_log(Path(given), pipe=True) as handle, collector_paused():  # rows: many small objects in no cycle
        head = read_block(handle, HEAD_BYTES, given)
        _check_head(given, head)
        if head.startswith(_UTF8_BOM):
            head = head[len(_UTF8_BOM) :]
            reader.notes.append("starts with a UTF-8 byte-order mark (BOM), which was skipped")
        reader.read(_lines(handle, given, head))
    return reader.build()


# --- bytes to lines -------------------------------------------------------------


def _check_head(path: str, head: bytes) -> None:
    """The first HEAD_BYTES of a file must be UTF-8 text: anything else is an InputError naming what it is."""
    if not head:
        raise InputError(path, "is empty")
    for mark, encoding in _OTHER_BOMS:
        if head.startswith(mark):
            raise InputError(
                path, f"is {encoding} text (by its byte-order mark), not UTF-8, which trainers read JSON Lines as: save it as UTF-8"
            )
    if b"\x00" in head:
        utf16 = _utf16_without_bom(head)
        if utf16:
            raise InputError(
                path, f"is {utf16} text without a byte-order mark, not UTF-8, which trainers read JSON Lines as: save it as UTF-8"
            )
        raise InputError(path, "is binary, not JSON Lines (it holds NUL bytes)")
    if mostly_binary(head, BINARY_SHARE):
        raise InputError(path, "is binary, not JSON Lines")


def _utf16_without_bom(head: bytes) -> str | None:
    """UTF-16 of mostly ASCII text has a NUL in every other byte, on one side only; which side names its byte order."""
    half = len(head) / 2
    even, odd = head[0::2].count(0), head[1::2].count(0)
    if odd > 0.3 * half and even < 0.05 * half:
        return "UTF-16 (little-endian)"
    if even > 0.3 * half and odd < 0.05 * half:
        return "UTF-16 (big-endian)"
    return None


class _Line(NamedTuple):
    number: int
    data: bytes | None  # without its line end (LF, or CRLF); None when longer than MAX_TEXT_LINE_BYTES and dropped
    size: int  # its length in bytes, LF excluded
    prefix: bytes = b""  # the first bytes of a dropped line: enough to see that it opens a JSON array


def _lines(handle: BinaryIO, path: str, first: bytes) -> Iterator[_Line]:
    """The lines of an open file, ``first`` its bytes already read, in blocks of BLOCK_BYTES.

    A line that grows past MAX_TEXT_LINE_BYTES is dropped as soon as it
    does, and only its length is counted until its newline, so no line
    costs more memory than that limit whatever the file holds.
    """
    kept: list[bytes] = []
    number, size, prefix, dropping = 0, 0, b"", False
    block = first or read_block(handle, BLOCK_BYTES, path)
    while block:
        *ended, rest = block.split(b"\n")
        for piece in ended:
            number += 1
            yield _finished(number, kept, piece, size + len(piece), prefix, dropping)
            kept, size, prefix, dropping = [], 0, b"", False
        if rest:
            size += len(rest)
            if not dropping and size > MAX_TEXT_LINE_BYTES:
                prefix = (kept[0] if kept else rest)[:_PREFIX_BYTES]
                kept, dropping = [], True
            elif not dropping:
                kept.append(rest)
        block = read_block(handle, BLOCK_BYTES, path)
    if size:
        yield _finished(number + 1, kept, b"", size, prefix, dropping)


def _finished(number: int, kept: list[bytes], piece: bytes, size: int, prefix: bytes, dropping: bool) -> _Line:
    if dropping or size > MAX_TEXT_LINE_BYTES:
        return _Line(number, None, size, prefix or (kept[0] if kept else piece)[:_PREFIX_BYTES])
    data = b"".join((*kept, piece)) if kept else piece
    return _Line(number, data[:-1] if data.endswith(b"\r") else data, size)


def _is_blank(line: _Line) -> bool:
    return line.data is not None and (not line.data or line.data.isspace())


def _one_document(first: list[_Line]) -> tuple[int, str] | None:
    """Where a file is one JSON document rather than JSON Lines (a JSON array, or pretty-printed), and which, from its
    first two non-blank lines. The same judgement as :func:`trainproof.data.manifest._one_document`, on lines that may
    be too long to keep, and a file of JSON arrays one per line is JSON Lines (of lines that are not objects)."""
    if not first:
        return None
    number, opening = first[0].number, _sniffed(first[0])
    if opening.startswith("["):
        if len(first) == 2 and all(_parses(line) for line in first):
            return None
        return number, "one JSON array"
    if opening == "{":
        return number, "one pretty-printed JSON document"
    if (
        opening.startswith("{")
        and len(first) == 2
        and _sniffed(first[1]).startswith('"')
        and not _parses(first[0])
        and not _parses(first[1])
    ):
        return number, "one pretty-printed JSON document"
    return None


def _sniffed(line: _Line) -> str:
    return (line.prefix if line.data is None else line.data).decode("utf-8", errors="replace").strip()


def _parses(line: _Line) -> bool:
    if line.data is None:
        return False
    try:
        json.loads(line.data)
    except (ValueError, RecursionError):
        return False
    return True


# --- lines to rows --------------------------------------------------------------


class _NotARow(Exception):
    """Raised with the problem that keeps a line from being a row (a field of the wrong type)."""

    def __init__(self, problem: RowProblem) -> None:
        super().__init__(problem.message)
        self.problem = problem


class _Reader:
    """Collects rows, problems and notes in line order, and what the notes and file-level problems count."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.rows: list[Row] = []
        self.problems: list[RowProblem] = []
        self.notes: list[str] = []
        self.lines = 0
        self.content = 0
        self.blank = 0
        self.first_blank: int | None = None
        self.not_utf8 = 0
        self.first_not_utf8: int | None = None
        self.diagnosed: dict[tuple[str, ...], tuple[str, str | None]] = {}
        self.system_prompts: dict[str, str] = {}
        self.sharegpt = 0
        self.several = 0
        self.first_several: int | None = None
        self.document: tuple[int, str] | None = None
        self.where: Callable[[int], str] | None = None  # how a row is named when not by its line (a Parquet row)

    def read(self, lines: Iterator[_Line]) -> None:
        """Every line; the first two with content decide first whether the file is one JSON document."""
        first: list[_Line] = []
        for line in lines:
            if self._count(line):
                first.append(line)
                if len(first) == 2:
                    break
        self.document = _one_document(first)
        if self.document is not None:
            for line in lines:
                self._count(line)
            return
        for line in first:
            self._line(line)
        for line in lines:
            if self._count(line):
                self._line(line)

    def _count(self, line: _Line) -> bool:
        """Counts a line; True when it has content (is not blank)."""
        self.lines = line.number
        if _is_blank(line):
            self.blank += 1
            self.first_blank = self.first_blank or line.number
            return False
        self.content += 1
        return True

    def _not_a_row(self, problem: RowProblem) -> None:
        self.problems.append(self._named(problem))

    def _named(self, problem: RowProblem) -> RowProblem:
        """The problem named by its row (``row 12 of ...``) where rows are not lines: every row problem's message
        starts with ``line N``."""
        n = problem.line
        if self.where is None or n is None or not problem.message.startswith(f"line {n}"):
            return problem
        return replace(problem, message=self.where(n) + problem.message[len(f"line {n}") :])

    def _line(self, line: _Line) -> None:
        n = line.number
        if line.data is None:
            limit = size_text(MAX_TEXT_LINE_BYTES)
            self._not_a_row(RowProblem("overlong-line", f"line {n} is {line.size:,} bytes long, over the {limit} limit for one row", n))
            return
        try:
            text = line.data.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.not_utf8 += 1
            self.first_not_utf8 = self.first_not_utf8 or n
            byte = line.data[exc.start]
            self._not_a_row(RowProblem("unparsable", f"line {n} is not UTF-8: byte {byte:#04x} at byte {exc.start + 1} of the line", n))
            return
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            where = f"{exc.msg} column {exc.colno}" if exc.msg.endswith(" at") else f"{exc.msg} at column {exc.colno}"
            if exc.msg == "Extra data" and "\r" in text[: exc.pos]:  # a file whose lines end in CR alone reads as one line
                where += ", after a carriage return (CR) with no line feed: lines that end in CR alone are one line to JSON Lines readers"
            self._not_a_row(RowProblem("unparsable", f"line {n} is not valid JSON: {where}", n))
            return
        except RecursionError:
            self._not_a_row(RowProblem("unparsable", f"line {n} is JSON nested too deeply to read", n))
            return
        except ValueError:  # Python refuses to read an integer of more than 4,300 digits
            self._not_a_row(RowProblem("unparsable", f"line {n} holds a number too long to read", n))
            return
        if not isinstance(record, dict):
            self._not_a_row(RowProblem("not-object", f"line {n} is a JSON {_kind(record)}, not an object", n))
            return
        self._record(n, record)

    def _record(self, n: int, record: dict[str, object]) -> None:
        forms = [(shape, keys) for shape, keys, required in _FORMS if record.keys() >= required]
        if not forms:
            names = tuple(record)
            diagnosis = self.diagnosed.get(names)
            if diagnosis is None:
                diagnosis = _unknown_shape(record)
                if len(self.diagnosed) < _MAX_KEY_SETS:  # rows of no shape mostly share their keys; bounded should each differ
                    self.diagnosed[names] = diagnosis
            said, field = diagnosis
            self._not_a_row(RowProblem("unknown-shape", f"line {n} {said}", n, field))
            return
        if len(forms) > 1:
            self.several += 1
            self.first_several = self.first_several or n
        shape, keys = forms[0]
        self._share_system_prompt(record, keys)
        found: list[RowProblem] = []
        try:
            row, sharegpt = _row(n, shape, keys[0], record, found)
        except _NotARow as exc:
            self._not_a_row(exc.problem)
            return
        self.sharegpt += sharegpt
        if "tools" in record and row.is_chat:
            row = row.replaced(tools=_tools(record))
        self.rows.append(row)
        self.problems.extend(map(self._named, found))

    def _share_system_prompt(self, record: dict[str, object], keys: tuple[str, ...]) -> None:
        """The system prompt opening a conversation, as the one string every row with that prompt shares: a million
        rows that open with the same 100-character prompt hold it once, not a million times (100 MiB)."""
        for key in ("prompt", *keys) if keys[0] == "chosen" else keys[:1]:
            turns = record.get(key)
            if not isinstance(turns, list) or not turns or not isinstance(turns[0], dict):
                continue
            turn = turns[0]
            content_key = "content" if "role" in turn else "value"
            content = turn.get(content_key)
            if turn.get("role", turn.get("from")) not in SYSTEM_ROLES or not isinstance(content, str) or len(content) > _SHARED_PROMPT_CHARS:
                continue
            shared = self.system_prompts.get(content)
            if shared is not None:
                turn[content_key] = shared
            elif len(self.system_prompts) < _MAX_SHARED_PROMPTS:
                self.system_prompts[content] = content

    def build(self) -> TextDataset:
        if not self.content:
            raise InputError(self.path, "is empty: it holds nothing but whitespace")
        if self.not_utf8 * 2 > self.content:
            raise InputError(
                self.path,
                f"is not UTF-8: {self.not_utf8:,} of its {figures.plural(self.content, 'line')} "
                f"{'holds' if self.not_utf8 == 1 else 'hold'} bytes that are not UTF-8, the first "
                f"at line {self.first_not_utf8}, so it is in another encoding (Latin-1 or Windows-1252, perhaps): save it as UTF-8",
            )
        notes = list(self.notes)
        if self.document is not None:
            number, what = self.document
            problem = RowProblem("document", f"the file is {what}, not JSON Lines: a fine-tuning dataset has one JSON object per line", number)
            return TextDataset(self.path, (), (problem,), self.lines, dict.fromkeys(SHAPES, 0), tuple(notes))
        problems = list(self.problems)
        if self.blank:
            s = "s" if self.blank != 1 else ""
            problems.append(
                RowProblem("blank-line", f"the file has {self.blank:,} blank line{s}, the first at line {self.first_blank}", self.first_blank)
            )
        problems.sort(key=lambda p: p.line or 0)
        if self.sharegpt:
            notes.append(
                f"{_rows(self.sharegpt)} ShareGPT turns ('from' and 'value'), read as messages with "
                "human as user, gpt as assistant and system as system"
            )
        if self.several:
            notes.append(
                f"{_rows(self.several)} the fields of more than one shape, the first at {(self.where or _line)(self.first_several or 0)}; "
                "each was read as the first of messages, prompt_completion, instruction, text, preference"
            )
        shapes = dict.fromkeys(SHAPES, 0)
        for row in self.rows:
            shapes[row.shape] += 1
        return TextDataset(self.path, tuple(self.rows), tuple(problems), self.lines, shapes, tuple(notes))


def _line(n: int) -> str:
    return f"line {n}"


def _rows(count: int) -> str:
    return f"{count:,} row{'s' if count != 1 else ''} {'have' if count != 1 else 'has'}"


# --- one object to one row ------------------------------------------------------


def _row(n: int, shape: str, key: str, record: Mapping[str, object], found: list[RowProblem]) -> tuple[Row, bool]:
    """The row a record of a known shape is, its empty and null fields and role problems added to ``found``, and
    whether it holds ShareGPT turns. A field of the wrong type raises _NotARow."""
    if shape == "text":
        return Row(n, shape, "", _string(n, record, "text", found)), False
    if shape == "prompt_completion":
        if _listed(n, record, ("prompt", "completion"), "a conversational prompt and completion are both lists of messages"):
            turns, sharegpt = _read_turns(n, record, ("prompt", "completion"), found)
            return _chat_row(n, shape, turns, len(turns[0][1]), found, sharegpt), sharegpt
        prompt = _string(n, record, "prompt", found)
        return Row(n, shape, prompt, _string(n, record, "completion", found)), False
    if shape == "instruction":
        instruction = _string(n, record, "instruction", found)
        extra = _string(n, record, "input", found, optional=True)
        output = _string(n, record, "output", found)
        return Row(n, shape, f"{instruction}\n\n{extra}" if extra else instruction, output), False
    if shape == "preference":
        return _preference(n, record, found)
    messages, sharegpt = _conversation(n, key, record[key], found)
    answers = [i for i, message in enumerate(messages) if message.role == "assistant"]
    if messages:
        spans = _Spans(((key, len(messages)),))
        role_problem = _role_order(n, messages, spans)
        if role_problem is not None:
            found.append(role_problem)
        found.extend(_missing_turns(n, messages, answers, spans))
        if not sharegpt:  # ShareGPT's function_call turns carry the call in their text
            found.extend(_orphan_tools(n, messages, spans))
    before = held([message.content for message in messages[: answers[-1] if answers else len(messages)]])
    return Row(n, shape, before, held([messages[i].content for i in answers]), messages), sharegpt


def _tools(record: Mapping[str, object]) -> tuple[object, ...]:
    """A row's ``tools`` (function schemas, as TRL's tool-calling datasets give them): a list, or a JSON string of one."""
    tools = record.get("tools")
    if isinstance(tools, str):
        try:
            tools = json.loads(tools)
        except (ValueError, RecursionError):
            return ()
    return tuple(tools) if isinstance(tools, list) else ()


_Turns = tuple[tuple[str, tuple[Message, ...]], ...]
"""The fields a conversation is made of, in order, each with its messages (``("prompt", ...), ("completion", ...)``)."""


class _Spans(NamedTuple):
    """The fields a conversation's messages come from, each with its number of messages, in order: how to name a
    message (``message 3`` of a ``messages`` row; ``message 1 of 'completion'`` of one made of several fields)."""

    fields: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, turns: _Turns) -> _Spans:
        return cls(tuple((key, len(messages)) for key, messages in turns))

    def _at(self, i: int) -> tuple[str, int]:
        for key, count in self.fields:
            if i < count:
                return key, i
            i -= count
        raise IndexError(i)

    def name(self, i: int) -> str:
        """Message ``i`` (0-based, in the whole conversation) as the file has it."""
        if len(self.fields) == 1 and self.fields[0][0] in ("messages", "conversations"):
            return f"message {i + 1}"
        key, k = self._at(i)
        return f"message {k + 1} of {key!r}"

    def field(self, i: int) -> str:
        return self._at(i)[0]

    def names(self) -> str:
        return " and ".join(repr(key) for key, _ in self.fields)


def _listed(n: int, record: Mapping[str, object], keys: tuple[str, ...], rule: str) -> bool:
    """Whether the fields ``keys`` are lists of messages (a null one goes with the others); a list beside a field that
    is neither is a wrong type, named with ``rule``."""
    lists = [key for key in keys if isinstance(record.get(key), list)]
    if not lists:
        return False
    for key in keys:
        value = record.get(key)
        if value is not None and not isinstance(value, list):
            said = f"line {n}: {key!r} is {_a(value)} but {lists[0]!r} is a list of messages: {rule}"
            raise _NotARow(RowProblem("wrong-type", said, n, key))
    return True


def _read_turns(n: int, record: Mapping[str, object], keys: tuple[str, ...], found: list[RowProblem]) -> tuple[_Turns, bool]:
    """The messages of each field ``keys`` names, and whether any was ShareGPT's."""
    turns, sharegpt = [], False
    for key in keys:
        messages, shared = _conversation(n, key, record.get(key), found)
        turns.append((key, messages))
        sharegpt = sharegpt or shared
    return tuple(turns), sharegpt


def _chat_row(n: int, shape: str, turns: _Turns, at: int, found: list[RowProblem], sharegpt: bool = False) -> Row:
    """A row whose conversation is made of several fields (a prompt and its completion or chosen answer), the trained
    answer from message ``at``; its role problems added to ``found``."""
    messages = tuple(m for _, part in turns for m in part)
    _check_answered(n, messages, _Spans.of(turns), at, found)
    if not sharegpt:  # ShareGPT's function_call turns carry the call in their text
        found.extend(_orphan_tools(n, messages, _Spans.of(turns)))
    return Row(n, shape, held([m.content for m in messages[:at]]), held([m.content for m in messages[at:]]), messages, at)


_ROLE_KINDS = ("role-order", "no-assistant", "no-user", "unanswered")


def _check_answered(n: int, messages: tuple[Message, ...], spans: _Spans, at: int, found: list[RowProblem]) -> None:
    """The role problems of a conversation whose answer, from message ``at``, is trained whatever its roles (TRL trains a
    completion's tokens, not its assistant turns): an answer with no assistant turn is a ``role-order`` problem (the
    model learns to write another role's turn), not ``no-assistant``; an empty answer is an empty field already."""
    if not messages:
        return
    problem = _role_order(n, messages, spans)
    if problem is None and at < len(messages):
        answers = [i for i in range(at, len(messages)) if messages[i].role == "assistant"]
        if not answers:
            field = spans.field(at)
            roles = ", ".join(_quote(role) for role in list(dict.fromkeys(m.role for m in messages[at:]))[:_ROLES_SHOWN])
            said = f"line {n}: {field!r} has no assistant message (its roles: {roles}), so the answer trained is no assistant's"
            problem = RowProblem("role-order", said, n, field)
        else:
            found.extend(_missing_turns(n, messages, answers, spans))
    if problem is not None:
        found.append(problem)


def _preference(n: int, record: Mapping[str, object], found: list[RowProblem]) -> tuple[Row, bool]:
    """A preference row: the prompt and the chosen answer as the row, the rejected answer beside them. Its prompt is
    ``prompt`` when that is of the answers' kind (both strings, or both lists of messages), else what the two answers
    begin with alike, as TRL's ``maybe_extract_prompt`` takes it (an empty one is an ``empty-field`` problem: TRL
    trains such a pair on no prompt, or fails on an empty list of messages). A list of messages as the prompt of string
    answers is a wrong type: TRL drops it."""
    conversational = _listed(n, record, ("chosen", "rejected"), "the chosen and rejected answers are both strings or both lists of messages")
    if not conversational and isinstance(record.get("prompt"), list):  # TRL reads a prompt from the answers instead
        said = f"line {n}: 'prompt' is a list of messages but 'chosen' and 'rejected' are strings, so TRL drops it: give all three as one kind"
        raise _NotARow(RowProblem("wrong-type", said, n, "prompt"))
    explicit = "prompt" in record and isinstance(record["prompt"], list) == conversational
    before = len(found)
    sharegpt = False
    if conversational:
        row, sharegpt = _conversational_preference(n, record, explicit, found)
    elif explicit:
        prompt, chosen, rejected = (_string(n, record, key, found) for key in ("prompt", "chosen", "rejected"))
        row = Row(n, "preference", prompt, chosen, rejected=rejected)
    else:
        chosen, rejected = _string(n, record, "chosen", found), _string(n, record, "rejected", found)
        at = _shared_prefix(chosen, rejected)
        row = Row(n, "preference", chosen[:at], chosen[at:], rejected=rejected[at:])
    empty = any(p.kind in ("empty-field", "null-field") and p.field in ("chosen", "rejected") for p in found[before:])
    if not explicit and not empty and not (row.messages[: row.completion_at] if conversational else row.prompt):
        ignored = ", and its string 'prompt' is not read" if "prompt" in record else ""
        said = f"line {n}: 'chosen' and 'rejected' begin with nothing alike, so the prompt read from them is empty{ignored}"
        found.append(RowProblem("empty-field", said, n, "prompt"))
    if record["chosen"] == record["rejected"] and not empty:  # an empty pair is an empty field
        found.append(RowProblem("same-pair", f"line {n}: 'chosen' and 'rejected' are the same, so the pair prefers neither", n, "rejected"))
    return row, sharegpt


def _conversational_preference(n: int, record: Mapping[str, object], explicit: bool, found: list[RowProblem]) -> tuple[Row, bool]:
    """A preference row of lists of messages: the prompt's turns then the chosen answer's as its conversation (with an
    implicit prompt, the chosen conversation, its answer from where it parts from the rejected one); the rejected
    answer's contents beside them, its conversation's roles checked too when the chosen one's are fine."""
    keys = ("prompt", "chosen", "rejected") if explicit else ("chosen", "rejected")
    turns, sharegpt = _read_turns(n, record, keys, found)
    parts = dict(turns)
    if explicit:
        at = len(parts["prompt"])
        chosen: tuple[tuple[str, tuple[Message, ...]], ...] = (("prompt", parts["prompt"]), ("chosen", parts["chosen"]))
        rejected: tuple[tuple[str, tuple[Message, ...]], ...] = (("prompt", parts["prompt"]), ("rejected", parts["rejected"]))
    else:
        at = _shared_prefix(parts["chosen"], parts["rejected"])
        chosen, rejected = (("chosen", parts["chosen"]),), (("rejected", parts["rejected"]),)
    row = _chat_row(n, "preference", chosen, at, found, sharegpt)
    other = tuple(m for _, part in rejected for m in part)
    if not any(p.kind in _ROLE_KINDS for p in found):
        _check_answered(n, other, _Spans.of(rejected), at, found)
    return row.replaced(rejected=joined([m.content for m in other[at:]]), rejected_messages=other), sharegpt


def _shared_prefix(chosen: Sequence[object], rejected: Sequence[object]) -> int:
    """Where TRL's ``extract_prompt`` ends the prompt two answers share: at their first difference (in a string, before
    the space ahead of it); when one is the other's beginning, or the same, before the shorter's last item."""
    shorter = min(len(chosen), len(rejected))
    for i in range(shorter):
        if chosen[i] != rejected[i]:
            return i - 1 if i > 0 and chosen[i - 1] == " " else i
    return max(shorter - 1, 0)


def _missing_turns(n: int, messages: tuple[Message, ...], answers: list[int], spans: _Spans) -> list[RowProblem]:
    """What a conversation lacks to train a chat: an assistant turn (``no-assistant``); else a user turn for it to answer
    (``no-user``), or an assistant turn after its last user turn (``unanswered``)."""
    where = spans.names()
    if not answers:
        seen = list(dict.fromkeys(m.role for m in messages))
        roles = ", ".join(_quote(role) for role in seen[:_ROLES_SHOWN]) + (", ..." if len(seen) > _ROLES_SHOWN else "")
        field = spans.fields[-1][0]
        return [RowProblem("no-assistant", f"line {n} has no assistant message in {where} (its roles: {roles}): nothing in it is trained on", n, field)]
    asked = [i for i, m in enumerate(messages) if m.role == "user"]
    if not asked:
        turns = "its assistant turn answers" if len(answers) == 1 else "its assistant turns answer"
        return [RowProblem("no-user", f"line {n} has no user message in {where}: {turns} no one", n, spans.field(answers[0]))]
    if asked[-1] > answers[-1]:
        said = f"line {n}: its last user turn ({spans.name(asked[-1])}) has no assistant turn after it, so nothing answers it"
        return [RowProblem("unanswered", said, n, spans.field(asked[-1]))]
    return []




def _string(n: int, record: Mapping[str, object], key: str, found: list[RowProblem], optional: bool = False) -> str:
    """A shape's text field; null reads as "" (a ``null-field`` problem unless it is optional)."""
    value = record.get(key)
    if value is None:
        if not optional:
            found.append(RowProblem("null-field", f"line {n}: {key!r} is null", n, key))
        return ""
    if not isinstance(value, str):
        raise _NotARow(RowProblem("wrong-type", f"line {n}: {key!r} is {_a(value)}, not a string", n, key))
    if not optional and (not value or value.isspace()):
        found.append(RowProblem("empty-field", _empty(f"line {n}: {key!r}", value), n, key))
    return value


def _conversation(n: int, key: str, turns: object, found: list[RowProblem]) -> tuple[tuple[Message, ...], bool]:
    """The turns of a list of messages (``messages``, ``conversations``, or a conversational prompt, completion, chosen
    or rejected answer), and whether any was ShareGPT's (``from``/``value``)."""
    if turns is None:
        found.append(RowProblem("null-field", f"line {n}: {key!r} is null", n, key))
        return (), False
    if not isinstance(turns, list):
        raise _NotARow(RowProblem("wrong-type", f"line {n}: {key!r} is {_a(turns)}, not a list of messages", n, key))
    if not turns:
        found.append(RowProblem("empty-field", f"line {n}: {key!r} is an empty list", n, key))
        return (), False
    messages, sharegpt = [], False
    for i, turn in enumerate(turns, 1):
        if not isinstance(turn, dict):
            raise _NotARow(RowProblem("wrong-type", f"line {n}: message {i} of {key!r} is {_a(turn)}, not an object", n, key))
        if "role" in turn:
            role_key, content_key = "role", "content"
        elif "from" in turn:
            role_key, content_key, sharegpt = "from", "value", True
        else:
            raise _NotARow(RowProblem("wrong-type", f"line {n}: message {i} of {key!r} has no 'role' (nor ShareGPT's 'from')", n, key))
        role, content = turn[role_key], turn.get(content_key)
        if not isinstance(role, str):
            raise _NotARow(
                RowProblem("wrong-type", f"line {n}: the {role_key!r} of message {i} of {key!r} is {_a(role)}, not a string", n, key)
            )
        role = sys.intern(role)  # one string per role name for the whole file, not one a message
        other_parts = False
        if isinstance(content, list) and role_key == "role":  # OpenAI's and TRL's content parts: its text, in order
            content, other_parts = _parts_text(content, f"line {n}: the 'content' of message {i} of {key!r}", n, key)
        if content is not None and not isinstance(content, str):
            problem = f"line {n}: the {content_key!r} of message {i} of {key!r} is {_a(content)}, not a string"
            raise _NotARow(RowProblem("wrong-type", problem, n, key))
        if role_key == "from":
            role = SHAREGPT_ROLES.get(role, role)
        if other_parts and not content:  # an image (or audio) alone is what the turn says
            pass
        elif (not content or content.isspace()) and not (role == "assistant" and (turn.get("tool_calls") or turn.get("function_call"))):
            where = f"line {n}: message {i} ({_quote(role)}) of {key!r}"  # an assistant turn that calls a tool may say nothing
            if content is None:
                said = f"{where}: its {content_key!r} is null" if content_key in turn else f"{where} has no {content_key!r}"
                found.append(RowProblem("null-field", said, n, key))
            else:
                found.append(RowProblem("empty-field", _empty(f"{where}: its {content_key!r}", content), n, key))
        calls = _tool_calls(n, i, key, turn, found) if role_key == "role" and ("tool_calls" in turn or "function_call" in turn) else ()
        messages.append(_message((role, content, calls)))
    return tuple(messages), sharegpt


def _message(fields: tuple[str, str | None, tuple[object, ...]]) -> Message:
    return tuple.__new__(Message, fields)  # Message's own __new__ is a Python function: a third of the time again


def _tool_calls(n: int, i: int, key: str, turn: Mapping[str, object], found: list[RowProblem]) -> tuple[object, ...]:
    """The tool calls of a turn (OpenAI's ``tool_calls``, or its legacy ``function_call`` as one call), as written; a
    call whose ``arguments`` is a string that is not JSON, or not a JSON object, is a ``tool-arguments`` problem."""
    calls = turn.get("tool_calls")
    if not isinstance(calls, list):
        legacy = turn.get("function_call")
        calls = [{"type": "function", "function": legacy}] if isinstance(legacy, dict) else []
    for k, call in enumerate(calls, 1):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            function = call if isinstance(call, dict) else {}  # some datasets write {"name": ..., "arguments": ...} flat
        if "arguments" not in function:
            continue
        arguments, why = function["arguments"], None
        name = function.get("name")
        if isinstance(arguments, str):
            try:
                parsed = json.loads(arguments)
            except (ValueError, RecursionError) as exc:
                why = f"are not valid JSON ({exc.msg} at column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else "are not readable JSON"
            else:
                if not isinstance(parsed, dict):
                    why = f"are JSON {_a(parsed)}, not an object"
        elif arguments is not None and not isinstance(arguments, dict):
            why = f"are {_a(arguments)}, not a JSON object"
        if why is not None:
            called = f" ({_quote(name)})" if isinstance(name, str) else ""
            said = f"line {n}: the arguments of tool call {k}{called} of message {i} of {key!r} {why}: {_quote(str(arguments))}"
            found.append(RowProblem("tool-arguments", said, n, key))
    return tuple(calls)


def _orphan_tools(n: int, messages: tuple[Message, ...], spans: _Spans) -> list[RowProblem]:
    """The first ``tool`` result that answers no call: the turn before its run of tool results is not an assistant turn
    (a user's, a system's, none), or is an assistant turn with no ``tool_calls`` in a conversation that gives its calls
    as ``tool_calls`` elsewhere. A conversation that gives no ``tool_calls`` at all writes its calls in the assistant's
    text (Hermes' ``<tool_call>``), which is not parsed here: a tool result after any assistant turn is fine there."""
    structured = any(m.tool_calls for m in messages)
    caller: Message | None = None
    for i, message in enumerate(messages):
        if message.role != "tool":
            caller = message
            continue
        if caller is None or caller.role != "assistant":
            before = "it is the first turn" if caller is None else f"the turn before it is a {caller.role!r} turn"
            said = f"line {n}: {spans.name(i)} is a 'tool' result that answers no call: {before}, not an assistant's tool call"
            return [RowProblem("orphan-tool", said, n, spans.field(i))]
        if structured and not caller.tool_calls:
            said = f"line {n}: {spans.name(i)} is a 'tool' result that answers no call: the assistant turn before it has no 'tool_calls'"
            return [RowProblem("orphan-tool", said, n, spans.field(i))]
    return []


def _parts_text(parts: list, where: str, n: int, key: str) -> tuple[str, bool]:
    """The text of a message's content given as parts (``[{"type": "text", "text": ...}, {"type": "image_url", ...}]``,
    as OpenAI's chat format and TRL's vision datasets write it): its text parts joined, and whether it had other parts
    (an image, audio: what a length in tokens of text does not count). A part that is not an object with a ``type``, or
    a text part whose ``text`` is not a string, makes the row malformed."""
    texts, others = [], False
    for k, part in enumerate(parts, 1):
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise _NotARow(RowProblem("wrong-type", f"{where}: part {k} is {_a(part)}, not an object with a 'type'", n, key))
        if part["type"] == "text":
            if not isinstance(part.get("text"), str):
                raise _NotARow(RowProblem("wrong-type", f"{where}: the 'text' of part {k} is {_a(part.get('text'))}, not a string", n, key))
            texts.append(part["text"])
        else:
            others = True
    return "".join(texts), others


def _role_order(n: int, messages: tuple[Message, ...], spans: _Spans) -> RowProblem | None:
    """The first turn that breaks the order chat templates expect: system or developer (only first), then user and
    assistant in turns, tool results anywhere after the first; None when none does."""
    previous = None
    for i, message in enumerate(messages):
        role = message.role
        problem = None
        if role not in ROLES:
            problem = f"line {n}: {spans.name(i)} has the role {_quote(role)}, which is none of {', '.join(map(repr, ROLES))}"
        elif i == 0 and role not in (*SYSTEM_ROLES, "user"):
            problem = f"line {n} starts with the role {role!r}; a conversation starts with 'system', 'developer' or 'user'"
        elif i > 0 and role in SYSTEM_ROLES:
            problem = f"line {n}: {spans.name(i)} is a {role!r} message; only the first message may be one"
        elif role == previous and role in ("user", "assistant"):
            pair = f"messages {i} and {i + 1}" if spans.name(i) == f"message {i + 1}" else f"{spans.name(i - 1)} and {spans.name(i)}"
            problem = f"line {n}: {pair} are both {role!r} turns, one after the other"
        if problem is not None:
            return RowProblem("role-order", problem, n, spans.field(i))
        previous = role
    return None


# --- near misses ----------------------------------------------------------------


def _unknown_shape(record: Mapping[str, object]) -> tuple[str, str | None]:
    """What is wrong with an object of no shape, after "line N ", and the field it lacks: the shape it is nearest, and the
    key that almost names a missing field (None when it is near no shape)."""
    if not record:
        return "is an empty object, with none of the fields of a training example", None
    keys = list(record)[:_MAX_KEYS_EXAMINED]
    near: dict[str, str] = {}
    for key in keys:
        for field, hint in _resemblances(key):
            near.setdefault(field, hint)

    def score(form: tuple[str, tuple[str, ...], frozenset[str]]) -> int:
        fields = (*form[1], *_OPTIONAL.get(form[0], ()))
        return sum(1 for field in fields if field in record or field in near)

    best = max(_FORMS, key=score)  # max keeps the first of equals: the order rows are read in
    if not score(best):
        shown = ", ".join(_quote(key) for key in keys[:8]) + (", ..." if len(record) > 8 else "")
        return f"has none of the fields of a training example (it has {shown}; a row has {_EXPECTED})", None
    shape, fields, _ = best
    missing = [field for field in fields if field not in record]
    named = " and ".join(f"no field {field!r}" + (f" ({near[field]})" if field in near else "") for field in missing)
    said = f"has {named}"
    if not any(field in near for field in missing):
        said += f", which {shape} needs beside {', '.join(repr(field) for field in fields if field in record)}"
    return said, missing[0]


def _resemblances(key: str) -> Iterator[tuple[str, str]]:
    """The shape fields ``key`` almost is (another case, a misspelling, a synonym), each with how to say so."""
    if key in _FIELDS or len(key) > QUOTE_CHARS:
        return
    folded = key.lower()
    squeezed = folded.replace("_", "").replace("-", "")
    for field in _FIELDS:
        if folded == field:
            yield field, f"found {_quote(key)}; keys are case-sensitive"
        elif _within(squeezed, field, 1 if len(field) <= 5 else 2):
            yield field, f"found {_quote(key)}, spelt differently"
    for field in SYNONYMS.get(squeezed, ()):
        yield field, f"found {_quote(key)}, which trainers do not read as {field!r}"


def _within(a: str, b: str, limit: int) -> bool:
    """Whether the edit distance (Levenshtein) between two short strings is at most ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return False
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        if min(current) > limit:
            return False
        previous = current
    return previous[-1] <= limit


# --- wording --------------------------------------------------------------------


def _quote(text: str) -> str:
    """User text for a message: repr'd (control characters show as escapes), cut to QUOTE_CHARS with its length."""
    return quoted(text, QUOTE_CHARS)


def _empty(subject: str, value: str) -> str:
    return f"{subject} is empty" if not value else f"{subject} is only whitespace ({_quote(value)})"


def _kind(value: object) -> str:
    """What JSON calls the type of a parsed value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _a(value: object) -> str:
    kind = _kind(value)
    return kind if kind == "null" else ("an " if kind[0] in "aeiou" else "a ") + kind
