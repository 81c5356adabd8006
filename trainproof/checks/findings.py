"""The vocabulary of a rule: how much a finding matters, and the finding itself, with the numbers that prove it."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

Number = int | float


class Level(enum.IntEnum):
    """How much a finding matters. Only WARN and FAIL move a verdict."""

    INFO = 0
    WARN = 1
    FAIL = 2


@dataclass(frozen=True)
class Finding:
    """One rule firing once: what, how bad, and the numbers and steps that prove it.

    ``message`` is one or more sentences whose first reads as a title;
    ``evidence`` is one line of the numbers behind it. ``file`` and ``line``
    locate it: the line of the input (a log's step record, a manifest line)
    and, when that is not the subject's own path, the file it is in (an audio
    file of a dataset, the log inside a run folder).

    ``shared`` is the end of ``message`` that speaks for every finding of its
    rule on its input (how many lines have the problem and how many are
    named, the characters to blame), carried by the first of them: a report
    that shows a rule's findings as one :class:`Group` says it once, then
    what each says of its own place, its :attr:`detail`.
    """

    rule_id: str
    level: Level
    message: str
    evidence: str
    values: Mapping[str, Number | str | None] = field(default_factory=dict)
    steps: tuple[int, ...] = ()
    line: int | None = None
    file: str | None = None
    shared: str = ""

    def __post_init__(self) -> None:
        if not self.message.endswith(self.shared):
            raise ValueError("a finding's shared sentences must end its message")

    @property
    def title(self) -> str:
        head, _, _ = self.message.partition(". ")
        return head.rstrip(".")

    @property
    def detail(self) -> str:
        """The message without its shared sentences: what it says of its own place alone."""
        return self.message[: len(self.message) - len(self.shared)].rstrip() if self.shared else self.message
