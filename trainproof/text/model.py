"""What the fine-tuning dataset reader hands on: plain frozen records, picklable."""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import FrozenInstanceError, dataclass
from typing import Any, NamedTuple

SHAPES = ("text", "prompt_completion", "instruction", "messages", "preference")
"""The shapes of a training example. A row that has the fields of several is read as the first of messages,
prompt_completion, instruction, text, preference (see the reader)."""

ROLES = ("system", "developer", "user", "assistant", "tool")
"""The roles a chat template knows; ``developer`` is OpenAI's newer name for the system role. Any other role is kept as
written and is a ``role-order`` problem."""

SYSTEM_ROLES = ("system", "developer")
"""The roles that set the scene: only the first message may have one."""

PROBLEM_KINDS = (
    "unparsable", "document", "not-object", "unknown-shape", "wrong-type", "empty-field", "null-field",
    "role-order", "no-assistant", "no-user", "unanswered", "same-pair", "blank-line", "overlong-line",
    "tool-arguments", "orphan-tool",
)  # fmt: skip
"""Every :attr:`RowProblem.kind`. The first five and ``overlong-line`` keep a line from being a row; the others are
recorded on a row that is still read, so a rule can count them."""


class Message(NamedTuple):
    """One turn of a conversation, its role as the chat template sees it (ShareGPT's ``human``/``gpt`` already mapped).
    A named tuple: a row makes its Messages each time they are asked for (see :class:`Row`), and a tuple is made in a
    fifth of a frozen dataclass's time."""

    role: str
    content: str | None  # None when the field is missing or null
    tool_calls: tuple[Any, ...] = ()  # an assistant turn's calls, as written (OpenAI's shape), for the chat template


class Row:
    """One JSONL line that is a training example.

    ``target`` is what the model is trained to produce; ``prompt`` what it
    reads without being trained on it (``""`` for shape ``text``, whose
    whole text is trained on). By shape:

    - ``text``: target is ``text``.
    - ``prompt_completion``: ``prompt`` and ``completion``; when both are
      lists of messages (TRL's conversational prompt-completion), the
      contents of each list's messages joined by a blank line.
    - ``instruction`` (Alpaca): prompt is ``instruction``, then a blank line
      and ``input`` when there is one; target is ``output``.
    - ``messages``: prompt is the contents of every message before the last
      assistant turn, target the contents of every assistant turn, each
      joined by a blank line.
    - ``preference`` (TRL's DPO, ORPO, reward modelling): prompt is
      ``prompt``, target the ``chosen`` answer, ``rejected`` the rejected
      one; lists of messages read as their contents joined, as above. With
      no ``prompt`` of the answers' kind (an implicit one), the prompt is
      what ``chosen`` and ``rejected`` begin with alike, as TRL's
      ``extract_prompt`` splits them, and each answer is the rest.

    ``messages`` keeps the turns of a conversation (a ``messages`` row, or a
    prompt and completion or chosen answer given as lists of messages, the
    prompt's turns first), for a tokenizer's chat template to render as the
    trainer will; ``completion_at`` is where in it the completion or chosen
    answer starts (None for a ``messages`` row, whose every assistant turn is
    trained). A null field reads as ``""`` here (its problem is recorded).

    A million rows are held at once, so a row is kept small: a conversation
    whose turns carry no tool calls keeps them as one flat tuple of roles and
    contents (``messages`` makes the Message objects when asked), a prompt or
    target given as JOINED (None) is joined from them when asked rather than
    held beside them, and the fields of the rarer shapes share one slot. It is
    otherwise a frozen record: compared, hashed and pickled by its fields.
    """

    __slots__ = ("line", "shape", "_prompt", "_target", "_turns", "_rare")

    line: int  # 1-based line number in the file
    shape: str  # one of SHAPES
    _prompt: str | None  # None: JOINED
    _target: str | None
    _turns: tuple[Any, ...]  # roles and contents in turn, or the Messages when a turn has tool calls
    _rare: tuple[Any, ...] | None  # completion_at, rejected, rejected_messages, tools; None when all are as _COMMON

    def __init__(
        self,
        line: int,
        shape: str,
        prompt: str | None,  # None: joined from the messages when asked (see JOINED)
        target: str | None,
        messages: tuple[Message, ...] = (),
        completion_at: int | None = None,
        rejected: str | None = None,  # a preference row's rejected answer; None for every other shape
        rejected_messages: tuple[Message, ...] = (),  # a conversational preference row's rejected conversation (its prompt's turns first)
        tools: tuple[Any, ...] = (),  # the row's ``tools`` (function schemas), passed to a chat template as transformers does
    ) -> None:
        put = object.__setattr__
        put(self, "line", line)
        put(self, "shape", shape)
        put(self, "_turns", _packed(messages) if messages else ())
        rare = (completion_at, rejected, rejected_messages, tools)
        put(self, "_rare", None if rare == _COMMON else rare)
        put(self, "_prompt", prompt if prompt is not None or messages else "")
        put(self, "_target", target if target is not None or messages else "")

    @property
    def prompt(self) -> str:
        held = self._prompt
        return held if held is not None else _split(self.pairs(), self.completion_at)[0]

    @property
    def target(self) -> str:
        held = self._target
        return held if held is not None else _split(self.pairs(), self.completion_at)[1]

    @property
    def messages(self) -> tuple[Message, ...]:
        turns = self._turns
        if not turns or isinstance(turns[0], Message):
            return turns
        made = tuple.__new__  # Message's own __new__ is a Python function: a third of the time again
        return tuple([made(Message, (turns[k], turns[k + 1], ())) for k in range(0, len(turns), 2)])

    def pairs(self) -> Iterable[tuple[str, str | None]]:
        """Each turn's role and content, in order: ``messages`` without making the Message objects."""
        turns = self._turns
        if turns and isinstance(turns[0], Message):
            return [(m.role, m.content) for m in turns]
        return zip(turns[0::2], turns[1::2])

    @property
    def roles(self) -> tuple[str, ...]:
        """Each turn's role, in order."""
        turns = self._turns
        if turns and isinstance(turns[0], Message):
            return tuple([m.role for m in turns])
        return turns[0::2]

    @property
    def plain_turns(self) -> bool:
        """Whether no turn has tool calls (then :meth:`pairs` says all there is of the turns)."""
        turns = self._turns
        return not turns or not isinstance(turns[0], Message)

    @property
    def turn_count(self) -> int:
        """``len(self.messages)``, without making them."""
        turns = self._turns
        return len(turns) if not turns or isinstance(turns[0], Message) else len(turns) // 2

    @property
    def completion_at(self) -> int | None:
        return None if self._rare is None else self._rare[0]

    @property
    def rejected(self) -> str | None:
        return None if self._rare is None else self._rare[1]

    @property
    def rejected_messages(self) -> tuple[Message, ...]:
        return () if self._rare is None else self._rare[2]

    @property
    def tools(self) -> tuple[Any, ...]:
        return () if self._rare is None else self._rare[3]

    @property
    def is_chat(self) -> bool:
        """Whether the row is a conversation, for a chat template to render."""
        return self.shape == "messages" or bool(self._turns)

    def _fields(self) -> tuple:
        return (self.line, self.shape, self.prompt, self.target, self.messages, self.completion_at, self.rejected, self.rejected_messages, self.tools)

    def replaced(self, **changes: Any) -> Row:
        """The row with the fields named changed (as ``dataclasses.replace``)."""
        return Row(**{**dict(zip(_FIELDS, self._fields())), "prompt": self._prompt, "target": self._target, **changes})

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        return self._fields() == other._fields() if isinstance(other, Row) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._fields())

    def __reduce__(self) -> tuple:
        return (Row, self._fields())

    def __repr__(self) -> str:
        return f"Row({', '.join(f'{name}={value!r}' for name, value in zip(_FIELDS, self._fields()))})"


_FIELDS = ("line", "shape", "prompt", "target", "messages", "completion_at", "rejected", "rejected_messages", "tools")


_COMMON = (None, None, (), ())
"""The fields of the rarer shapes as most rows have them: held as None."""


JOINED = None
"""A conversation's prompt or target given so to :class:`Row`: joined from its turns each time it is asked for (a text
joined from several turns would otherwise be held twice, in the turns and joined)."""


def held(contents: list[str | None]) -> str | None:
    """What a row is given for the text these contents join to: the one non-empty content itself (or "") where there is
    no more than one, which costs nothing to hold; else JOINED."""
    filled = [content for content in contents if content]
    return JOINED if len(filled) > 1 else (filled[0] if filled else "")


def joined(contents: Iterable[str | None]) -> str:
    """The contents of turns as one text: the non-empty ones, a blank line between them."""
    return "\n\n".join([content for content in contents if content])


def _split(pairs: Iterable[tuple[str, str | None]], completion_at: int | None) -> tuple[str, str]:
    """A conversation's prompt and target as the reader joins them (see :class:`Row`): split where its completion or
    chosen answer starts; else every turn before its last assistant turn, and every assistant turn."""
    turns = list(pairs)
    contents = [content for _, content in turns]
    if completion_at is not None:
        return joined(contents[:completion_at]), joined(contents[completion_at:])
    answers = [k for k, (role, _) in enumerate(turns) if role == "assistant"]
    return joined(contents[: answers[-1] if answers else len(turns)]), joined(contents[k] for k in answers)


def _packed(messages: tuple[Message, ...]) -> tuple:
    """A conversation's turns as a row holds them: roles and contents in one flat tuple, when no turn has tool calls
    (two turns in a tuple of four, not a tuple of two Message objects: 96 bytes a row less); else the Messages."""
    flat: list = []
    for role, content, calls in messages:
        if calls:
            return tuple(messages)
        flat += (role, content)
    return tuple(flat)


@dataclass(frozen=True)
class RowProblem:
    """What is wrong with one line (``line`` None: the file as a whole); ``kind`` is one of PROBLEM_KINDS.

    ``message`` is one sentence naming the line and the field; user data in
    it is quoted with ``repr`` and cut to about 40 characters, so it never
    carries raw control characters to a terminal. ``field`` is the top-level
    key at fault (``messages`` for a problem of one of its turns).
    """

    kind: str
    message: str
    line: int | None
    field: str | None = None


@dataclass(frozen=True)
class TextDataset:
    """A fine-tuning dataset as read: its rows, its problems in line order, and notes on how it was read.

    ``lines`` counts every line read, blank ones included; ``shapes`` maps
    every shape in SHAPES, in that order, to its number of rows (0 included).
    """

    path: str
    rows: tuple[Row, ...]
    problems: tuple[RowProblem, ...]
    lines: int
    shapes: Mapping[str, int]
    notes: tuple[str, ...] = ()
    format: str = "jsonl"  # "jsonl", "parquet" or "arrow"
    files: tuple[tuple[str, int], ...] = ()  # a Parquet or Arrow split: each file read and its number of rows, in order
    split: str | None = None  # its split, in a dataset of several (train, validation, test)
    earlier: tuple[TextDataset, ...] = ()  # the dataset's splits before this one (train before validation before test)

    def where(self, line: int) -> str:
        """A row (by its ``line``) as the user finds it: ``line 12`` of a JSON Lines file; ``row 12`` of a Parquet or
        Arrow file (``row 3 of train-00001-of-00002.parquet`` in a split of several files, numbered in that file)."""
        if not self.files:
            return f"line {line}"
        file, row = self.locate(line)
        return f"row {row}" if len(self.files) == 1 else f"row {row} of {os.path.basename(file)}"

    def locate(self, line: int) -> tuple[str, int]:
        """The file a row is in, and its 1-based number there (JSON Lines: the dataset's own file and the line)."""
        if not self.files:
            return self.path, line
        k = min(bisect_right(self._starts, line - 1) - 1, len(self.files) - 1)
        return self.files[k][0], line - self._starts[k]

    @property
    def _starts(self) -> list[int]:
        starts, total = [], 0
        for _, count in self.files:
            starts.append(total)
            total += count
        return starts
