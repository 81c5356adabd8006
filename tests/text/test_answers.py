"""What a row trains the model to answer: conversations with no answer or no question; on real files (skipped without
the shared corpus) and on files written here.

TP-TEXT-NO-ASSISTANT and TP-TEXT-ROLES (no user turn, a last question unanswered). The table in test_rules.py has each
both ways; these pin the real files they were measured on.
"""

from __future__ import annotations

import pytest

from tests.helpers import REPO
from tests.text import findings_of, judged, lines_of
from tests.text.test_reader import assistant, jsonl, user
from trainproof.report import Level, Verdict

NEW_RULES = ("TP-TEXT-NO-ASSISTANT", "TP-TEXT-ROLES")
OPENAI_TOY = "openai__openai-cookbook__examples_data_toy_chat_fine_tuning.jsonl"
CLEAN = (
    "atilsamancioglu__FineTuningTR__training_set.jsonl",
    "Singh-Aman08__nlp-information-extraction__LoRA_training_set.jsonl",
    "ml-explore__mlx-examples__lora_data_train.jsonl",
    "ml-explore__mlx-examples__wwdc25_data_train.jsonl",
)
"""Real files with no conversation or answer problem: Turkish system/user/assistant chats; PICO extraction whose
outputs are JSON of up to 1,214 characters; WikiSQL text rows (repetitive SQL); essays from one line to 2,161
characters."""


def system(text: str) -> dict:
    return {"role": "system", "content": text}


def chat(*turns: dict) -> dict:
    return {"messages": list(turns)}


# --- on real files ------------------------------------------------------------------------------------------------


def test_openai_toy_chat_names_the_row_with_no_user(corpus):
    """OpenAI's own example of a bad file: line 4 is system then assistant. Line 3, which has no system message, is
    fine."""
    subject = judged(corpus / "public" / "datasets" / "text" / OPENAI_TOY)
    (no_user,) = findings_of(subject, "TP-TEXT-ROLES")
    assert (no_user.line, no_user.level) == (4, Level.WARN)
    assert no_user.message == "Line 4 has no user message in 'messages': its assistant turn answers no one."
    assert no_user.evidence == "line 4: no-user"
    assert findings_of(subject, "TP-TEXT-NO-ASSISTANT") == []


@pytest.mark.parametrize("name", CLEAN)
def test_real_clean_files_have_no_answer_or_conversation_finding(corpus, name):
    subject = judged(corpus / "public" / "datasets" / "text" / name)
    assert [f for f in subject.findings if f.rule_id in NEW_RULES] == []


def test_the_example_chat_file_keeps_its_one_role_problem():
    subject = judged(REPO / "examples" / "text" / "chat.jsonl")
    assert [(f.rule_id, f.line) for f in subject.findings if f.rule_id in NEW_RULES] == [("TP-TEXT-ROLES", 5)]


# --- conversations ------------------------------------------------------------------------------------------------


def test_rows_with_no_user_or_a_last_question_unanswered_are_counted_and_named(tmp_path):
    rows = [
        chat(user("a"), assistant("A")),
        chat(system("s"), assistant("Hi!")),
        chat(user("b"), assistant("B"), user("And then?")),
        chat(system("s"), user("c"), assistant("C"), user("d"), assistant("D")),
        chat(assistant("Hello."), assistant("Anyone?")),
    ]
    hits = findings_of(judged(jsonl(tmp_path, *rows)), "TP-TEXT-ROLES")
    assert lines_of(hits) == [2, 3, 5]
    assert hits[0].message == (
        "Line 2 has no user message in 'messages': its assistant turn answers no one. 3 conversations have role problems; the first 3 are named here."
    )
    assert hits[1].message == "Line 3: its last user turn (message 3) has no assistant turn after it, so nothing answers it."
    assert hits[2].message.startswith("Line 5 starts with the role 'assistant'")  # and has no user turn: one finding


def test_a_conversation_with_no_answer_is_a_fail_naming_its_roles(tmp_path):
    rows = [chat(user("a"), assistant("A")), chat(system("s"), user("b")), {"conversations": [{"from": "human", "value": "c"}, {"from": "bot", "value": "C"}]}]
    subject = judged(jsonl(tmp_path, *rows))
    hits = findings_of(subject, "TP-TEXT-NO-ASSISTANT")
    assert [(f.line, f.level) for f in hits] == [(2, Level.FAIL), (3, Level.FAIL)]
    assert hits[0].message == (
        "Line 2 has no assistant message in 'messages' (its roles: 'system', 'user'): nothing in it is trained on. "
        "2 conversations have no assistant message; the first 2 are named here."
    )
    assert hits[1].message == "Line 3 has no assistant message in 'conversations' (its roles: 'user', 'bot'): nothing in it is trained on."
    assert findings_of(subject, "TP-TEXT-ROLES") == []  # line 3's unknown role is said once, in the FAIL
    assert subject.verdict is Verdict.FAIL
