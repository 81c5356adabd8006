"""A million rows are held at once: the compact Row keeps what the frozen record kept, and the duplicate grouping by
key prefix finds what a dict of every key finds."""

from __future__ import annotations

import pickle
import random
from dataclasses import FrozenInstanceError

import numpy as np
import pytest

from trainproof.checks.text import _repeating
from trainproof.text.model import Message, Row

CONVERSATION = (Message("system", "Be brief."), Message("user", "Hi"), Message("assistant", None))
CALLING = (Message("user", "Weather?"), Message("assistant", "", ({"type": "function", "function": {"name": "w"}},)), Message("tool", "sunny"))


@pytest.mark.parametrize(
    "row",
    [
        Row(1, "text", "", "the whole text"),
        Row(2, "messages", "Be brief.\n\nHi", "", CONVERSATION),
        Row(3, "messages", "Weather?", "", CALLING, tools=({"type": "function"},)),
        Row(4, "preference", "Be brief.\n\nHi", "", CONVERSATION, 2, "no", CONVERSATION[:2] + (Message("assistant", "no"),)),
        Row(5, "prompt_completion", "Hi", "Hello", CONVERSATION[1:], 1),
    ],
)
def test_a_row_gives_back_every_field_it_was_made_with(row: Row) -> None:
    again = pickle.loads(pickle.dumps(row))
    assert again == row and repr(again) == repr(row)
    if not row.tools and not any(m.tool_calls for m in row.messages):  # a tool's schema is a dict: such a row has no hash
        assert hash(again) == hash(row)
    assert row.turn_count == len(row.messages)
    assert all(isinstance(m, Message) for m in row.messages)
    assert row.replaced(line=9) == Row(9, row.shape, row.prompt, row.target, row.messages, row.completion_at, row.rejected, row.rejected_messages, row.tools)
    assert row.replaced(line=9) != row


def test_a_conversation_without_tool_calls_is_held_flat_and_read_back_as_messages() -> None:
    row = Row(2, "messages", "Be brief.\n\nHi", "", CONVERSATION)
    assert row.messages == CONVERSATION
    assert not any(isinstance(part, Message) for part in row._turns)  # roles and contents, not Message objects
    calling = Row(3, "messages", "Weather?", "", CALLING)
    assert calling.messages == CALLING and calling.messages[1].tool_calls  # a turn with calls keeps its Messages


def test_the_rare_fields_read_as_their_defaults_and_as_given() -> None:
    plain = Row(1, "text", "", "t")
    assert (plain.completion_at, plain.rejected, plain.rejected_messages, plain.tools) == (None, None, (), ())
    assert not plain.is_chat and Row(2, "messages", "", "").is_chat
    preference = Row(4, "preference", "p", "c", rejected="r")
    assert preference.rejected == "r" and preference != Row(4, "preference", "p", "c")


def test_a_row_cannot_be_changed() -> None:
    row = Row(1, "text", "", "t")
    with pytest.raises(FrozenInstanceError):
        row.target = "other"  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del row.line


def _reference(keys: list[bytes]) -> dict[int, int]:
    first: dict[bytes, int] = {}
    return {i: first[key] for i, key in enumerate(keys) if first.setdefault(key, i) != i}


@pytest.mark.parametrize("seed", range(6))
def test_rows_repeating_a_key_are_found_as_a_dict_of_every_key_finds_them(seed: int) -> None:
    rng = random.Random(seed)
    prefixes = [rng.randbytes(8) for _ in range(5)]
    pool = [rng.choice(prefixes) + rng.randbytes(8) for _ in range(12)]  # keys alike in their first 8 bytes only
    pool += [pool[0][:15] + b"\x00", pool[0][:15] + b"\x01", b"\x00" * 16, b"\x00" * 15 + b"\x01"]  # zero bytes at the end
    keys = [rng.choice(pool) if rng.random() < 0.6 else rng.randbytes(16) for _ in range(400)]
    assert _repeating(np.frombuffer(b"".join(keys), dtype="S16")) == _reference(keys)


def test_distinct_keys_repeat_nothing() -> None:
    keys = [i.to_bytes(16, "little") for i in range(1000)]  # alike in their last 14 bytes, all zero
    assert _repeating(np.frombuffer(b"".join(keys), dtype="S16")) == {}
    assert _repeating(np.frombuffer(b"", dtype="S16")) == {}
