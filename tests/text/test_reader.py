"""Reading fine-tuning datasets: every shape into its row, every problem at its line, every file that cannot be judged."""

from __future__ import annotations

import json
import os
import pickle
import threading
import tracemalloc
from pathlib import Path

import pytest

from trainproof.io.errors import InputError
from trainproof.text import reader
from trainproof.text.model import PROBLEM_KINDS, SHAPES, Message, Row, RowProblem, TextDataset
from trainproof.text.reader import MAX_TEXT_LINE_BYTES, read_text_dataset

MiB = 1024 * 1024


def jsonl(tmp_path: Path, *lines: object, name: str = "train.jsonl") -> Path:
    """A JSON Lines file of one line per argument: a str is written as it is (blank lines, broken JSON), anything else
    as its JSON. Line N of the file is argument N."""
    path = tmp_path / name
    path.write_bytes("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines).encode("utf-8"))
    return path


def kinds(dataset: TextDataset) -> list[tuple[str, int | None]]:
    return [(p.kind, p.line) for p in dataset.problems]


def only_problem(dataset: TextDataset) -> RowProblem:
    (problem,) = dataset.problems
    return problem


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def assistant(text: str | None) -> dict:
    return {"role": "assistant", "content": text}


CHAT = {"messages": [user("hi"), assistant("hello")]}


# --- shapes -----------------------------------------------------------------------------------------------------


def test_every_shape_is_read_into_its_row(tmp_path):
    path = jsonl(
        tmp_path,
        {"text": "The whole example."},
        {"prompt": "2+2=", "completion": " 4"},
        {"instruction": "Translate.", "input": "Bonjour", "output": "Hello"},
        {"messages": [{"role": "system", "content": "Be brief."}, user("Hi?"), assistant("Hello.")]},
        {"prompt": "The sky is", "chosen": " blue.", "rejected": " green."},
    )
    d = read_text_dataset(path)
    assert d.rows == (
        Row(1, "text", "", "The whole example."),
        Row(2, "prompt_completion", "2+2=", " 4"),
        Row(3, "instruction", "Translate.\n\nBonjour", "Hello"),
        Row(
            4,
            "messages",
            "Be brief.\n\nHi?",
            "Hello.",
            (Message("system", "Be brief."), Message("user", "Hi?"), Message("assistant", "Hello.")),
        ),
        Row(5, "preference", "The sky is", " blue.", rejected=" green."),
    )
    assert d.problems == ()
    assert d.notes == ()
    assert d.lines == 5
    assert d.path == str(path)
    assert dict(d.shapes) == {"text": 1, "prompt_completion": 1, "instruction": 1, "messages": 1, "preference": 1}
    assert list(d.shapes) == list(SHAPES)


@pytest.mark.parametrize("extra", [{}, {"input": ""}, {"input": None}])
def test_alpaca_without_an_input_prompts_with_the_instruction_alone(tmp_path, extra):
    d = read_text_dataset(jsonl(tmp_path, {"instruction": "Name a colour.", **extra, "output": "Blue"}))
    assert d.rows == (Row(1, "instruction", "Name a colour.", "Blue"),)
    assert d.problems == ()


def test_a_multi_turn_conversation_prompts_with_everything_before_the_last_answer_and_trains_on_every_answer(tmp_path):
    turns = [user("a?"), assistant("A."), user("b?"), {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]}]
    turns += [{"role": "tool", "content": "42"}, assistant("B is 42.")]
    (row,) = read_text_dataset(jsonl(tmp_path, {"messages": turns})).rows
    assert row.prompt == "a?\n\nA.\n\nb?\n\n42"
    assert row.target == "A.\n\nB is 42."
    assert [m.role for m in row.messages] == ["user", "assistant", "user", "assistant", "tool", "assistant"]
    assert row.messages[3] == Message("assistant", None, ({"id": "1"},))


def test_extra_keys_are_ignored(tmp_path):
    d = read_text_dataset(jsonl(tmp_path, {"id": 7, "source": "web", "text": "x", "meta": {"lang": "en"}}))
    assert d.rows == (Row(1, "text", "", "x"),)
    assert d.problems == ()


def test_sharegpt_turns_are_mapped_to_roles_with_a_note(tmp_path):
    convo = [{"from": "system", "value": "S"}, {"from": "human", "value": "H"}, {"from": "gpt", "value": "G"}]
    d = read_text_dataset(jsonl(tmp_path, {"conversations": convo}, CHAT))
    assert d.rows[0] == Row(1, "messages", "S\n\nH", "G", (Message("system", "S"), Message("user", "H"), Message("assistant", "G")))
    assert d.shapes["messages"] == 2
    assert d.problems == ()
    assert d.notes == (
        "1 row has ShareGPT turns ('from' and 'value'), read as messages with human as user, gpt as assistant and system as system",
    )


def test_a_row_with_the_fields_of_two_shapes_is_read_as_messages_with_a_note(tmp_path):
    d = read_text_dataset(jsonl(tmp_path, {"text": "x"}, {"text": "<s>hi</s>", **CHAT}))
    assert d.rows[1].shape == "messages"
    assert d.notes == (
        "1 row has the fields of more than one shape, the first at line 2; each was read as the first of messages, "
        "prompt_completion, instruction, text, preference",
    )


# --- TRL's other forms: preference, conversational prompt-completion, KTO -------------------------------------------


def test_preference_rows_are_read_in_every_form_trl_takes(tmp_path):
    """TRL's dataset-formats table: standard and conversational preference, each with an explicit and an implicit
    prompt (Anthropic's HH-RLHF writes whole dialogues as chosen and rejected), and UltraFeedback's string prompt beside
    conversational answers, which TRL's maybe_extract_prompt reads as an implicit one."""
    sky = user("What color is the sky?")
    hh = "\n\nHuman: What color is the sky?\n\nAssistant: It is"
    path = jsonl(
        tmp_path,
        {"prompt": "The sky is", "chosen": " blue.", "rejected": " green."},
        {"chosen": hh + " blue.", "rejected": hh + " green."},
        {"prompt": [sky], "chosen": [assistant("It is blue.")], "rejected": [assistant("It is green.")]},
        {"chosen": [sky, assistant("It is blue.")], "rejected": [sky, assistant("It is green.")]},
        {"prompt": "What color is the sky?", "chosen": [sky, assistant("It is blue.")], "rejected": [sky, assistant("It is green.")], "score_chosen": 8.0},
    )  # fmt: skip
    d = read_text_dataset(path)
    conversation = (Message("user", "What color is the sky?"), Message("assistant", "It is blue."))
    other = (Message("user", "What color is the sky?"), Message("assistant", "It is green."))
    assert d.rows == (
        Row(1, "preference", "The sky is", " blue.", rejected=" green."),
        Row(2, "preference", hh, " blue.", rejected=" green."),  # split before the space, as TRL's extract_prompt splits it
        Row(3, "preference", "What color is the sky?", "It is blue.", conversation, 1, "It is green.", other),
        Row(4, "preference", "What color is the sky?", "It is blue.", conversation, 1, "It is green.", other),
        Row(5, "preference", "What color is the sky?", "It is blue.", conversation, 1, "It is green.", other),
    )
    assert d.problems == ()
    assert d.notes == ()
    assert d.shapes["preference"] == 5


def test_a_conversational_prompt_and_completion_are_one_conversation_trained_from_the_completion(tmp_path):
    turns = {"prompt": [{"role": "system", "content": "Be brief."}, user("a?"), assistant("A."), user("b?")], "completion": [assistant("B.")]}
    d = read_text_dataset(jsonl(tmp_path, turns))
    (row,) = d.rows
    assert row == Row(
        1, "prompt_completion", "Be brief.\n\na?\n\nA.\n\nb?", "B.",
        (Message("system", "Be brief."), Message("user", "a?"), Message("assistant", "A."), Message("user", "b?"), Message("assistant", "B.")), 4,
    )  # fmt: skip
    assert d.problems == ()


@pytest.mark.parametrize("label", [True, False])
def test_kto_unpaired_preference_rows_are_prompt_completion_rows(tmp_path, label):
    d = read_text_dataset(jsonl(tmp_path, {"prompt": "Sky?", "completion": "Blue.", "label": label},
                                {"prompt": [user("Sky?")], "completion": [assistant("Blue.")], "label": label}))  # fmt: skip
    assert [(r.shape, r.prompt, r.target) for r in d.rows] == [("prompt_completion", "Sky?", "Blue.")] * 2
    assert d.problems == ()


def test_openais_developer_role_is_a_system_role(tmp_path):
    d = read_text_dataset(jsonl(tmp_path, {"messages": [{"role": "developer", "content": "Be brief."}, user("2+2?"), assistant("4")]}))
    assert d.problems == ()
    assert d.rows[0].prompt == "Be brief.\n\n2+2?"


def test_an_openai_tool_call_with_null_content_then_its_result_is_in_order(tmp_path):
    call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    row = {
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
        "messages": [user("Weather in Paris?"), {"role": "assistant", "content": None, "tool_calls": [call]},
                     {"role": "tool", "tool_call_id": "call_1", "content": "18C, sunny"}, assistant("18C and sunny.")],
    }  # fmt: skip
    d = read_text_dataset(jsonl(tmp_path, row))
    assert d.problems == ()
    assert d.rows[0].target == "18C and sunny."


def test_an_implicit_prompt_the_answers_do_not_share_is_an_empty_field(tmp_path):
    """With no prompt of their kind, TRL reads the prompt from what chosen and rejected begin with alike: answers that
    part at once leave it empty (trained on no prompt; a list of no messages fails TRL's chat template)."""
    path = jsonl(
        tmp_path,
        {"chosen": "Blue.", "rejected": "Green."},
        {"prompt": "Sky?", "chosen": [assistant("Blue.")], "rejected": [assistant("Green.")]},
        {"chosen": [user("Sky?"), assistant("Blue.")], "rejected": [user("Sea?"), assistant("Green.")]},
        {"chosen": "Sky? Blue.", "rejected": "Sky? Green."},
    )
    d = read_text_dataset(path)
    assert [r.line for r in d.rows] == [1, 2, 3, 4]
    assert [(p.kind, p.line, p.field, p.message) for p in d.problems if p.kind == "empty-field"] == [
        ("empty-field", 1, "prompt", "line 1: 'chosen' and 'rejected' begin with nothing alike, so the prompt read from them is empty"),
        ("empty-field", 2, "prompt", "line 2: 'chosen' and 'rejected' begin with nothing alike, so the prompt read from them is empty, "
         "and its string 'prompt' is not read"),
        ("empty-field", 3, "prompt", "line 3: 'chosen' and 'rejected' begin with nothing alike, so the prompt read from them is empty"),
    ]  # fmt: skip
    assert d.rows[3].prompt == "Sky?"


def test_what_is_wrong_with_a_preference_row_is_found_at_its_line(tmp_path):
    path = jsonl(
        tmp_path,
        {"prompt": "Sky?", "chosen": "Blue.", "rejected": "Green."},
        {"prompt": "Sky?", "chosen": "", "rejected": "Green."},
        {"prompt": "Sky?", "chosen": "Blue.", "rejected": None},
        {"prompt": "2+2?", "chosen": "4", "rejected": "4"},
        {"prompt": [user("2+2?")], "chosen": [assistant("4")], "rejected": [assistant("4")]},
        {"prompt": "Sky?", "chosen": " ", "rejected": " "},
        {"prompt": [user("Sky?")], "chosen": [{"role": "bot", "content": "Blue."}], "rejected": [assistant("Green.")]},
        {"prompt": [user("Sky?")], "chosen": [assistant("Blue.")], "rejected": [assistant("Green."), assistant("Red.")]},
        {"prompt": [user("Sky?"), assistant("Which sky?")], "completion": [user("Blue.")]},
        {"prompt": [user("Sky?")], "completion": []},
    )
    d = read_text_dataset(path)
    assert [r.line for r in d.rows] == list(range(1, 11))
    assert [(p.kind, p.line, p.field, p.message) for p in d.problems] == [
        ("empty-field", 2, "chosen", "line 2: 'chosen' is empty"),
        ("null-field", 3, "rejected", "line 3: 'rejected' is null"),
        ("same-pair", 4, "rejected", "line 4: 'chosen' and 'rejected' are the same, so the pair prefers neither"),
        ("same-pair", 5, "rejected", "line 5: 'chosen' and 'rejected' are the same, so the pair prefers neither"),
        ("empty-field", 6, "chosen", "line 6: 'chosen' is only whitespace (' ')"),
        ("empty-field", 6, "rejected", "line 6: 'rejected' is only whitespace (' ')"),
        ("role-order", 7, "chosen", "line 7: message 1 of 'chosen' has the role 'bot', which is none of 'system', 'developer', 'user', 'assistant', 'tool'"),
        ("role-order", 8, "rejected", "line 8: message 1 of 'rejected' and message 2 of 'rejected' are both 'assistant' turns, one after the other"),
        ("role-order", 9, "completion", "line 9: 'completion' has no assistant message (its roles: 'user'), so the answer trained is no assistant's"),
        ("empty-field", 10, "completion", "line 10: 'completion' is an empty list"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("record", "field", "message"),
    [
        ({"prompt": "p", "chosen": "c"}, "rejected", "line 2 has no field 'rejected', which preference needs beside 'chosen'"),
        ({"rejected": "r"}, "chosen", "line 2 has no field 'chosen', which preference needs beside 'rejected'"),
        (
            {"prompt": "p", "Chosen": "c", "Rejected": "r"},
            "chosen",
            "line 2 has no field 'chosen' (found 'Chosen'; keys are case-sensitive) and no field 'rejected' (found 'Rejected'; keys are case-sensitive)",
        ),
    ],
)
def test_a_preference_row_missing_a_field_is_named_as_one(tmp_path, record, field, message):
    problem = only_problem(read_text_dataset(jsonl(tmp_path, {"text": "ok"}, record)))
    assert (problem.kind, problem.line, problem.field, problem.message) == ("unknown-shape", 2, field, message)


# --- problems at their lines --------------------------------------------------------------------------------------


def test_lines_that_are_not_json(tmp_path):
    path = jsonl(tmp_path, {"text": "ok"}, '{"text": "unterminated}', "[" * 100_000, '{"n": 1' + "0" * 5000 + "}")
    d = read_text_dataset(path)
    assert kinds(d) == [("unparsable", 2), ("unparsable", 3), ("unparsable", 4)]
    assert d.problems[0].message == "line 2 is not valid JSON: Unterminated string starting at column 10"
    assert d.problems[1].message == "line 3 is JSON nested too deeply to read"
    assert d.problems[2].message == "line 4 holds a number too long to read"
    assert [r.line for r in d.rows] == [1]


def test_lines_that_end_in_cr_alone_are_said_to(tmp_path):
    """An old Mac file: its rows are one line to every JSON Lines reader, and the message says why, not only "Extra data"."""
    path = tmp_path / "train.jsonl"
    path.write_bytes(b'{"text": "a"}\r{"text": "b"}\r')
    (problem,) = read_text_dataset(path).problems
    assert problem.message == (
        "line 1 is not valid JSON: Extra data at column 15, after a carriage return (CR) with no line feed: lines that end "
        "in CR alone are one line to JSON Lines readers"
    )
    crlf = tmp_path / "crlf.jsonl"
    crlf.write_bytes(b'{"text": "a"}\r\n{"text": "b"} x\r\n')
    (problem,) = read_text_dataset(crlf).problems
    assert problem.message == "line 2 is not valid JSON: Extra data at column 15"


def test_lines_that_are_json_but_not_objects(tmp_path):
    d = read_text_dataset(jsonl(tmp_path, CHAT, '"a string"', "[1, 2]", "3.5", "null", CHAT))
    assert kinds(d) == [("not-object", 2), ("not-object", 3), ("not-object", 4), ("not-object", 5)]
    assert [p.message for p in d.problems] == [
        "line 2 is a JSON string, not an object",
        "line 3 is a JSON array, not an object",
        "line 4 is a JSON number, not an object",
        "line 5 is a JSON null, not an object",
    ]
    assert [r.line for r in d.rows] == [1, 6]


@pytest.mark.parametrize(
    ("record", "field", "message"),
    [
        ({"Prompt": "p", "completion": "c"}, "prompt", "line 2 has no field 'prompt' (found 'Prompt'; keys are case-sensitive)"),
        ({"prompt": "p", "completions": "c"}, "completion", "line 2 has no field 'completion' (found 'completions', spelt differently)"),
        ({"mesages": []}, "messages", "line 2 has no field 'messages' (found 'mesages', spelt differently)"),
        ({"TEXT": "t"}, "text", "line 2 has no field 'text' (found 'TEXT'; keys are case-sensitive)"),
        (
            {"instruction": "i", "response": "r"},
            "output",
            "line 2 has no field 'output' (found 'response', which trainers do not read as 'output')",
        ),
        (
            {"prompt": "p", "response": "r"},
            "completion",
            "line 2 has no field 'completion' (found 'response', which trainers do not read as 'completion')",
        ),
        (
            {"question": "q", "answer": "a"},
            "prompt",
            "line 2 has no field 'prompt' (found 'question', which trainers do not read as 'prompt') "
            "and no field 'completion' (found 'answer', which trainers do not read as 'completion')",
        ),
        ({"prompt": "p"}, "completion", "line 2 has no field 'completion', which prompt_completion needs beside 'prompt'"),
        (
            {"id": 1, "body": "b"},
            None,
            "line 2 has none of the fields of a training example (it has 'id', 'body'; "
            "a row has 'text', 'prompt' and 'completion', 'instruction' and 'output', 'messages', or 'chosen' and 'rejected')",
        ),
        ({}, None, "line 2 is an empty object, with none of the fields of a training example"),
    ],
)
def test_an_object_of_no_shape_names_the_near_miss(tmp_path, record, field, message):
    d = read_text_dataset(jsonl(tmp_path, {"text": "ok"}, record))
    problem = only_problem(d)
    assert (problem.kind, problem.line, problem.field, problem.message) == ("unknown-shape", 2, field, message)
    assert [r.line for r in d.rows] == [1]


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"text": 5}, "line 2: 'text' is a number, not a string"),
        ({"text": True}, "line 2: 'text' is a boolean, not a string"),
        (
            {"prompt": ["a"], "completion": "c"},
            "line 2: 'completion' is a string but 'prompt' is a list of messages: a conversational prompt and completion are both lists of messages",
        ),
        ({"instruction": "i", "input": {"k": 1}, "output": "o"}, "line 2: 'input' is an object, not a string"),
        ({"messages": "hi"}, "line 2: 'messages' is a string, not a list of messages"),
        ({"messages": [user("a"), "b"]}, "line 2: message 2 of 'messages' is a string, not an object"),
        ({"messages": [{"content": "a"}]}, "line 2: message 1 of 'messages' has no 'role' (nor ShareGPT's 'from')"),
        ({"messages": [{"role": None, "content": "a"}]}, "line 2: the 'role' of message 1 of 'messages' is null, not a string"),
        (
            {"messages": [{"role": "user", "content": {"type": "text", "text": "a"}}]},
            "line 2: the 'content' of message 1 of 'messages' is an object, not a string",
        ),
        ({"prompt": [user("a")], "completion": 7}, "line 2: 'completion' is a number but 'prompt' is a list of messages: "
         "a conversational prompt and completion are both lists of messages"),
        ({"prompt": "p", "chosen": [assistant("b")], "rejected": "c"}, "line 2: 'rejected' is a string but 'chosen' is a list of messages: "
         "the chosen and rejected answers are both strings or both lists of messages"),
        ({"prompt": "p", "chosen": "b", "rejected": 3}, "line 2: 'rejected' is a number, not a string"),
        ({"prompt": [user("a")], "chosen": "yes", "rejected": "no"}, "line 2: 'prompt' is a list of messages but 'chosen' and 'rejected' "
         "are strings, so TRL drops it: give all three as one kind"),
        ({"prompt": [user("a")], "chosen": [assistant("b"), 5], "rejected": [assistant("c")]}, "line 2: message 2 of 'chosen' is a number, not an object"),
    ],  # fmt: skip
)
def test_a_field_of_the_wrong_type_keeps_the_line_from_being_a_row(tmp_path, record, message):
    d = read_text_dataset(jsonl(tmp_path, {"text": "ok"}, record, {"text": "ok"}))
    problem = only_problem(d)
    assert (problem.kind, problem.line, problem.message) == ("wrong-type", 2, message)
    assert [r.line for r in d.rows] == [1, 3]


def test_empty_and_null_fields_are_rows_with_their_problems(tmp_path):
    path = jsonl(
        tmp_path,
        {"text": "ok"},
        {"text": ""},
        {"prompt": "p", "completion": " \n "},
        {"instruction": None, "output": "o"},
        {"messages": []},
        {"messages": [user("a"), assistant("")]},
        {"messages": [user("a"), assistant(None)]},
        {"messages": [user("a"), {"role": "assistant"}]},
        {"conversations": [{"from": "human"}, {"from": "gpt", "value": "g"}]},
        {"messages": None},
    )
    d = read_text_dataset(path)
    assert [r.line for r in d.rows] == list(range(1, 11))
    assert [(p.kind, p.line, p.field, p.message) for p in d.problems] == [
        ("empty-field", 2, "text", "line 2: 'text' is empty"),
        ("empty-field", 3, "completion", "line 3: 'completion' is only whitespace (' \\n ')"),
        ("null-field", 4, "instruction", "line 4: 'instruction' is null"),
        ("empty-field", 5, "messages", "line 5: 'messages' is an empty list"),
        ("empty-field", 6, "messages", "line 6: message 2 ('assistant') of 'messages': its 'content' is empty"),
        ("null-field", 7, "messages", "line 7: message 2 ('assistant') of 'messages': its 'content' is null"),
        ("null-field", 8, "messages", "line 8: message 2 ('assistant') of 'messages' has no 'content'"),
        ("null-field", 9, "conversations", "line 9: message 1 ('user') of 'conversations' has no 'value'"),
        ("null-field", 10, "messages", "line 10: 'messages' is null"),
    ]
    assert d.rows[3] == Row(4, "instruction", "", "o")
    assert d.rows[6].messages[1] == Message("assistant", None)


@pytest.mark.parametrize(
    ("turns", "message"),
    [
        (
            [user("a"), {"role": "system", "content": "s"}, assistant("b")],
            "line 2: message 2 is a 'system' message; only the first message may be one",
        ),
        ([user("a"), user("b"), assistant("c")], "line 2: messages 1 and 2 are both 'user' turns, one after the other"),
        ([user("a"), assistant("b"), assistant("c")], "line 2: messages 2 and 3 are both 'assistant' turns, one after the other"),
        (
            [{"role": "developer", "content": "d"}, user("a"), {"role": "developer", "content": "e"}, assistant("b")],
            "line 2: message 3 is a 'developer' message; only the first message may be one",
        ),
        (
            [assistant("Hi!"), user("a"), assistant("b")],
            "line 2 starts with the role 'assistant'; a conversation starts with 'system', 'developer' or 'user'",
        ),
        (
            [user("a"), {"role": "bot", "content": "b"}, assistant("c")],
            "line 2: message 2 has the role 'bot', which is none of 'system', 'developer', 'user', 'assistant', 'tool'",
        ),
        (
            [user("a"), {"role": "Assistant", "content": "b"}],
            "line 2: message 2 has the role 'Assistant', which is none of 'system', 'developer', 'user', 'assistant', 'tool'",
        ),
    ],
)
def test_turns_out_of_order_are_a_role_problem_of_a_row(tmp_path, turns, message):
    d = read_text_dataset(jsonl(tmp_path, CHAT, {"messages": turns}))
    assert [r.line for r in d.rows] == [1, 2]
    assert [(p.kind, p.line, p.field, p.message) for p in d.problems if p.kind == "role-order"] == [("role-order", 2, "messages", message)]


def test_tool_turns_between_assistant_turns_are_in_order(tmp_path):
    turns = [{"role": "system", "content": "s"}, user("a"), assistant("call"), {"role": "tool", "content": "r"}, assistant("b")]
    d = read_text_dataset(jsonl(tmp_path, {"messages": turns}))
    assert d.problems == ()


def test_an_unknown_sharegpt_speaker_is_named(tmp_path):
    d = read_text_dataset(jsonl(tmp_path, {"conversations": [{"from": "human", "value": "a"}, {"from": "bing", "value": "b"}]}))
    assert kinds(d) == [("role-order", 1), ("no-assistant", 1)]
    assert "the role 'bing'" in d.problems[0].message


def test_a_conversation_with_no_assistant_turn(tmp_path):
    d = read_text_dataset(jsonl(tmp_path, CHAT, {"messages": [{"role": "system", "content": "s"}, user("a")]}))
    problem = only_problem(d)
    assert (problem.kind, problem.line, problem.field) == ("no-assistant", 2, "messages")
    assert problem.message == "line 2 has no assistant message in 'messages' (its roles: 'system', 'user'): nothing in it is trained on"
    assert d.rows[1] == Row(2, "messages", "s\n\na", "", (Message("system", "s"), Message("user", "a")))


def test_quoted_user_data_is_short_and_never_carries_control_characters(tmp_path):
    key = "\x1b[31mred" + "k" * 100
    d = read_text_dataset(jsonl(tmp_path, {key: 1}, {"text": "\x1b[2J\r\t "}))
    assert all(not any(ord(ch) < 32 for ch in p.message) for p in d.problems)
    assert "'\\x1b[31mred" in d.problems[0].message
    assert "k" * 40 not in d.problems[0].message
    assert kinds(d) == [("unknown-shape", 1)]
    assert d.rows == (Row(2, "text", "", "\x1b[2J\r\t "),)  # kept as written: only messages are escaped


def test_every_problem_kind_is_one_the_model_documents(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "MAX_TEXT_LINE_BYTES", 100)
    lines = [CHAT, "{", "[1]", {"x": 1}, {"text": 1}, {"text": ""}, {"text": None}, "", {"text": "x" * 200}]
    lines += [{"messages": [assistant("a"), assistant("b")]}, {"messages": [user("a")]}]
    lines += ['{"messages":[{"role":"user"},{"role":"assistant","content":"b"},{"role":"user"}]}']  # under 100 bytes
    lines += [{"chosen": "a", "rejected": "a"}]
    lines += ['{"messages":[{"role":"tool"},{"role":"assistant","tool_calls":[{"arguments":"{"}]}]}']  # under 100 bytes
    found = {p.kind for p in read_text_dataset(jsonl(tmp_path, *lines)).problems}
    found |= {p.kind for p in read_text_dataset(jsonl(tmp_path, "[", CHAT, "]", name="array.json")).problems}
    assert found == set(PROBLEM_KINDS)


# --- the file as a whole ------------------------------------------------------------------------------------------


def test_blank_lines_are_one_problem_naming_the_count_and_the_first(tmp_path):
    d = read_text_dataset(jsonl(tmp_path, {"text": "a"}, "", {"text": "b"}, "   \t", "", {"text": "c"}))
    problem = only_problem(d)
    assert (problem.kind, problem.line, problem.message) == ("blank-line", 2, "the file has 3 blank lines, the first at line 2")
    assert [r.line for r in d.rows] == [1, 3, 6]
    assert d.lines == 6


def test_crlf_line_ends_a_utf8_bom_and_a_last_line_without_a_newline_are_read(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"text": "a"}\r\n{"text": "b"}\r\n{"text": "c"}')
    d = read_text_dataset(path)
    assert [(r.line, r.target) for r in d.rows] == [(1, "a"), (2, "b"), (3, "c")]
    assert d.problems == ()
    assert d.lines == 3
    assert d.notes == ("starts with a UTF-8 byte-order mark (BOM), which was skipped",)


@pytest.mark.parametrize(
    ("text", "line", "what"),
    [
        (json.dumps([{"text": f"row {i}"} for i in range(300)], indent=2), 1, "one JSON array"),
        ("\n\n" + json.dumps([{"text": f"row {i}"} for i in range(300)]), 3, "one JSON array"),
        (json.dumps({"data": [{"text": f"row {i}"} for i in range(300)]}, indent=2), 1, "one pretty-printed JSON document"),
        (
            json.dumps({"messages": [user("a"), assistant("b")]}, indent=None, separators=(",\n", ": ")),
            1,
            "one pretty-printed JSON document",
        ),
    ],
)
def test_one_json_document_is_reported_once_not_as_hundreds_of_broken_lines(tmp_path, text, line, what):
    path = tmp_path / "train.jsonl"
    path.write_text(text + "\n")
    d = read_text_dataset(path)
    problem = only_problem(d)
    assert (problem.kind, problem.line, problem.field) == ("document", line, None)
    assert problem.message == f"the file is {what}, not JSON Lines: a fine-tuning dataset has one JSON object per line"
    assert d.rows == ()
    assert d.lines == text.count("\n") + 1


def test_a_json_array_too_long_for_one_line_is_still_one_document(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "MAX_TEXT_LINE_BYTES", 1000)
    path = tmp_path / "train.json"
    path.write_text(json.dumps([{"text": "x" * 100}] * 50))
    assert kinds(read_text_dataset(path)) == [("document", 1)]


def test_lines_that_each_hold_an_array_are_json_lines_not_one_document(tmp_path):
    d = read_text_dataset(jsonl(tmp_path, ["a", "b"], ["c", "d"]))
    assert kinds(d) == [("not-object", 1), ("not-object", 2)]


def read_with_peak(path):
    """The dataset, and the most memory Python allocated while reading it."""
    tracemalloc.start()
    try:
        dataset = read_text_dataset(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return dataset, peak


def test_an_overlong_line_is_skipped_in_bounded_memory_and_the_next_row_is_read(tmp_path):
    path = tmp_path / "train.jsonl"
    with path.open("wb") as handle:
        handle.write(b'{"text": "ok"}\n{"text": "')
        handle.write(b"x" * (20 * MiB))
        handle.write(b'"}\n{"text": "after"}\n')
    d, peak = read_with_peak(path)
    assert [(r.line, r.target) for r in d.rows] == [(1, "ok"), (3, "after")]
    problem = only_problem(d)
    assert (problem.kind, problem.line) == ("overlong-line", 2)
    assert problem.message == "line 2 is 20,971,532 bytes long, over the 16 MiB limit for one row"
    assert peak < 20 * MiB  # the line was never held whole
    assert MAX_TEXT_LINE_BYTES == 16 * MiB


def test_memory_is_bounded_by_the_line_limit_not_the_line(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "MAX_TEXT_LINE_BYTES", 1 * MiB)
    path = tmp_path / "train.jsonl"
    with path.open("wb") as handle:
        handle.write(b'{"text": "a"}\n{"text": [' + b"1," * (16 * MiB) + b'1]}\n{"text": "b"}')  # ends without a newline
    d, peak = read_with_peak(path)
    assert kinds(d) == [("overlong-line", 2)]
    assert d.rows == (Row(1, "text", "", "a"), Row(3, "text", "", "b"))
    assert peak < 6 * MiB


def test_every_line_that_is_not_a_row_is_a_problem_of_its_own_so_the_rules_count_them_all(tmp_path):
    lines = [{"text": "ok"}] + ["{", {"Prompt": "p", "completion": "c"}] * 1500
    d = read_text_dataset(jsonl(tmp_path, *lines))
    assert len(d.problems) == 3000
    assert d.problems[-1].message == "line 3001 has no field 'prompt' (found 'Prompt'; keys are case-sensitive)"
    assert [p.line for p in d.problems] == list(range(2, 3002))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_pipe_is_read_in_one_pass(tmp_path):
    fifo = tmp_path / "train.jsonl"
    os.mkfifo(fifo)
    body = "".join(json.dumps({"text": f"row {i}"}) + "\n" for i in range(1000)).encode()

    def feed():
        with open(fifo, "wb") as handle:
            handle.write(body)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    d = read_text_dataset(fifo)
    writer.join(timeout=10)
    assert len(d.rows) == 1000
    assert d.problems == ()


def test_the_same_file_reads_the_same_every_time(tmp_path):
    path = jsonl(
        tmp_path,
        CHAT,
        {"conversations": [{"from": "human", "value": "a"}, {"from": "gpt", "value": "b"}]},
        "",
        "{",
        {"Prompt": "p", "completion": "c"},
        {"messages": [user("a"), user("b")]},
        {"text": None},
    )
    first, second = read_text_dataset(path), read_text_dataset(path)
    assert first == second
    assert repr(first) == repr(second)
    assert pickle.loads(pickle.dumps(first)) == first


# --- files that cannot be judged ----------------------------------------------------------------------------------


def error_of(path: Path) -> str:
    with pytest.raises(InputError) as caught:
        read_text_dataset(path)
    assert caught.value.path == str(path)
    return caught.value.problem


def test_a_missing_file(tmp_path):
    assert error_of(tmp_path / "nope.jsonl") == "does not exist"


def test_a_folder(tmp_path):
    assert error_of(tmp_path) == "is a folder, not a JSON Lines file: give the dataset's .jsonl file"


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", "is empty"),
        (b"\n  \n\t\r\n", "is empty: it holds nothing but whitespace"),
        (b"\xef\xbb\xbf", "is empty: it holds nothing but whitespace"),
        (b"\xef\xbb\xbf\n", "is empty: it holds nothing but whitespace"),
    ],
)
def test_an_empty_file(tmp_path, data, problem):
    path = tmp_path / "train.jsonl"
    path.write_bytes(data)
    assert error_of(path) == problem


def test_a_binary_file(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_bytes(b"PK\x03\x04\x14\x00\x00\x00" + bytes(range(256)) * 40)
    assert error_of(path) == "is binary, not JSON Lines (it holds NUL bytes)"
    path.write_bytes(bytes(range(1, 32)) * 100 + bytes(range(128, 256)) * 50)
    assert error_of(path) == "is binary, not JSON Lines"


@pytest.mark.parametrize(
    ("codec", "name"),
    [
        ("utf-16-le", "UTF-16 (little-endian)"),
        ("utf-16-be", "UTF-16 (big-endian)"),
        ("utf-32-le", "UTF-32 (little-endian)"),
        ("utf-32-be", "UTF-32 (big-endian)"),
    ],
)
def test_text_with_the_byte_order_mark_of_another_encoding(tmp_path, codec, name):
    path = tmp_path / "train.jsonl"
    path.write_bytes(("\ufeff" + "".join(json.dumps({"text": f"row {i}"}) + "\n" for i in range(20))).encode(codec))
    assert error_of(path) == f"is {name} text (by its byte-order mark), not UTF-8, which trainers read JSON Lines as: save it as UTF-8"


def test_utf16_text_without_a_byte_order_mark(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_bytes("".join(json.dumps({"text": f"row {i}"}) + "\n" for i in range(20)).encode("utf-16-le"))
    assert error_of(path).startswith("is UTF-16 (little-endian) text without a byte-order mark, not UTF-8")


def test_latin1_text(tmp_path):
    path = tmp_path / "train.jsonl"
    rows = [{"text": "café"}, {"text": "naïve"}, {"prompt": "¿qué?", "completion": "sí"}, {"text": "plain"}]
    path.write_bytes("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("latin-1"))
    assert error_of(path) == (
        "is not UTF-8: 3 of its 4 lines hold bytes that are not UTF-8, the first at line 1, so it is in another "
        "encoding (Latin-1 or Windows-1252, perhaps): save it as UTF-8"
    )


def test_one_line_that_is_not_utf8_among_many_is_a_problem_at_its_line(tmp_path):
    path = jsonl(tmp_path, *[{"text": "fine"}] * 5)
    path.write_bytes(path.read_bytes() + '{"text": "café"}\n'.encode("latin-1"))
    d = read_text_dataset(path)
    problem = only_problem(d)
    assert (problem.kind, problem.line, problem.message) == ("unparsable", 6, "line 6 is not UTF-8: byte 0xe9 at byte 14 of the line")
    assert len(d.rows) == 5


def test_content_given_as_parts_is_read_as_its_text(tmp_path):
    image = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
    parts = [{"type": "text", "text": "What is in "}, {"type": "text", "text": "this picture?"}, image]
    dataset = read_text_dataset(
        jsonl(
            tmp_path,
            {"messages": [{"role": "user", "content": parts}, assistant("A cat.")]},
            {"messages": [{"role": "user", "content": [image]}, {"role": "assistant", "content": [{"type": "text", "text": "A dog."}]}]},
        )
    )
    assert dataset.problems == ()
    assert [[m.content for m in row.messages] for row in dataset.rows] == [["What is in this picture?", "A cat."], ["", "A dog."]]


@pytest.mark.parametrize(
    ("parts", "said"),
    [
        (["a string"], "part 1 is a string, not an object with a 'type'"),
        ([{"text": "no type"}], "part 1 is an object, not an object with a 'type'"),
        ([{"type": "text", "text": 5}], "the 'text' of part 1 is a number, not a string"),
        ([{"type": "text", "text": "ok"}, {"type": "text"}], "the 'text' of part 2 is null, not a string"),
    ],
)
def test_content_parts_that_are_not_parts_are_malformed(tmp_path, parts, said):
    dataset = read_text_dataset(jsonl(tmp_path, {"messages": [{"role": "user", "content": parts}, assistant("x")]}))
    problem = only_problem(dataset)
    assert problem.kind == "wrong-type"
    assert said in problem.message


def test_an_empty_list_of_parts_is_an_empty_message(tmp_path):
    dataset = read_text_dataset(jsonl(tmp_path, {"messages": [{"role": "user", "content": []}, assistant("x")]}))
    assert kinds(dataset) == [("empty-field", 1)]
