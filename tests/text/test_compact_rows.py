"""A million rows are held at once: the compact Row keeps what the frozen record kept, and the duplicate grouping by
key prefix finds what a dict of every key finds."""

from __future__ import annotations

import pickle
import random
from dataclasses import FrozenInstanceError

import numpy as np
import pytest

from trainproof.checks.text import _repeating
from trainproof.text.model import JOINED, Message, Row
from trainproof.text.reader import read_text_dataset

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
    rows, firsts = _repeating(np.frombuffer(b"".join(keys), dtype="S16"))
    assert dict(zip(rows.tolist(), firsts.tolist())) == _reference(keys)
    assert rows.tolist() == sorted(rows.tolist())


def test_distinct_keys_repeat_nothing() -> None:
    keys = [i.to_bytes(16, "little") for i in range(1000)]  # alike in their last 14 bytes, all zero
    for packed in (b"".join(keys), b""):
        rows, firsts = _repeating(np.frombuffer(packed, dtype="S16"))
        assert rows.size == firsts.size == 0


def test_thousands_of_copies_of_a_few_rows_are_grouped_to_their_first() -> None:
    keys = [bytes([k]) * 16 for k in range(3)] * 2000
    rows, firsts = _repeating(np.frombuffer(b"".join(keys), dtype="S16"))
    assert rows.tolist() == list(range(3, 6000)) and firsts.tolist() == [i % 3 for i in range(3, 6000)]


def test_a_prompt_joined_from_several_turns_is_joined_when_asked_for(tmp_path) -> None:
    given = Row(2, "messages", JOINED, JOINED, CONVERSATION)
    assert (given.prompt, given.target) == ("Be brief.\n\nHi", "")
    assert given == Row(2, "messages", "Be brief.\n\nHi", "", CONVERSATION)
    assert given.replaced(tools=({"type": "function"},))._prompt is JOINED  # not held joined by a change of another field
    path = tmp_path / "chat.jsonl"
    lines = [
        '{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]}',
        '{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "A"},'
        ' {"role": "user", "content": "More"}, {"role": "assistant", "content": "B"}]}',
    ]
    path.write_text("\n".join(lines) + "\n")
    first, second = read_text_dataset(path).rows
    assert (first.prompt, first.target, second.prompt, second.target) == ("Be brief.\n\nHi", "Hello", "Be brief.\n\nHi\n\nA\n\nMore", "A\n\nB")
    assert first._prompt is JOINED and first.target is first.messages[2].content  # one turn's text is held as that turn's
    assert first.messages[0].content is second.messages[0].content  # one system prompt, shared by the rows that open with it
