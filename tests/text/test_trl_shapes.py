"""The shapes TRL's trainers read beyond SFT's: preference pairs (DPO, ORPO, reward models) and conversational
prompt/completion, and OpenAI's ``developer`` role. Each is a valid file a trainer reads, so it must not FAIL as "no
known shape"; what is wrong inside one (an empty answer, a pair with nothing between its answers) still fires."""

from __future__ import annotations

import pytest

from tests.text import findings_of, judged, lines_of
from tests.text.test_reader import assistant, jsonl, user
from trainproof.report import Level

QUESTIONS = ("What colour is the sky on a clear day?", "What is two plus two?", "Which city is the capital of France?")
GOOD = ("Blue, from scattered sunlight.", "Four.", "Paris.")
BAD = ("Green, because of the grass.", "Five.", "Lyon.")


def warned(subject) -> list[str]:
    return [f"{f.rule_id}: {f.message}" for f in subject.findings if f.level >= Level.WARN]


def standard_pairs() -> list[dict]:
    return [{"prompt": q, "chosen": good, "rejected": bad} for q, good, bad in zip(QUESTIONS, GOOD, BAD)]


def conversational_pairs() -> list[dict]:
    return [{"prompt": [user(q)], "chosen": [assistant(good)], "rejected": [assistant(bad)]} for q, good, bad in zip(QUESTIONS, GOOD, BAD)]


def implicit_pairs() -> list[dict]:
    return [{"chosen": [user(q), assistant(good)], "rejected": [user(q), assistant(bad)]} for q, good, bad in zip(QUESTIONS, GOOD, BAD)]


@pytest.mark.parametrize("pairs", [standard_pairs, conversational_pairs, implicit_pairs], ids=["standard", "conversational", "implicit"])
def test_a_preference_file_passes_and_is_read_as_pairs(tmp_path, pairs):
    subject = judged(jsonl(tmp_path, *pairs()))
    assert warned(subject) == []
    assert subject.summary["rows_preference"] == 3


def test_a_preference_row_is_its_prompt_and_chosen_answer(tmp_path):
    from trainproof.text.reader import read_text_dataset

    rows = read_text_dataset(jsonl(tmp_path, *implicit_pairs())).rows
    assert (rows[0].prompt, rows[0].target, rows[0].rejected) == (QUESTIONS[0], GOOD[0], BAD[0])


def test_a_pair_whose_answers_are_the_same_is_a_warn_at_its_line(tmp_path):
    pairs = standard_pairs()
    pairs[1] = {**pairs[1], "rejected": " Four. "}
    found = findings_of(judged(jsonl(tmp_path, *pairs)), "TP-TEXT-SAME-PAIR")
    assert lines_of(found) == [2]
    assert found[0].level is Level.WARN


def test_an_empty_answer_of_a_pair_is_empty(tmp_path):
    pairs = standard_pairs()
    pairs[2] = {**pairs[2], "chosen": ""}
    assert lines_of(findings_of(judged(jsonl(tmp_path, *pairs)), "TP-TEXT-EMPTY")) == [3]


def test_a_pair_missing_its_rejected_answer_is_no_known_shape(tmp_path):
    pairs = standard_pairs()
    del pairs[0]["rejected"]
    found = findings_of(judged(jsonl(tmp_path, *pairs)), "TP-TEXT-SHAPE")
    assert lines_of(found) == [1]
    assert found[0].level is Level.FAIL


def test_the_same_prompt_and_chosen_answer_against_another_rejected_one_is_no_duplicate(tmp_path):
    pairs = standard_pairs()
    pairs.append({**pairs[0], "rejected": "Red, at noon."})
    assert findings_of(judged(jsonl(tmp_path, *pairs)), "TP-TEXT-DUPLICATE") == []
    pairs.append(dict(pairs[0]))
    assert lines_of(findings_of(judged(jsonl(tmp_path, *pairs, name="again.jsonl")), "TP-TEXT-DUPLICATE")) == [5]


def test_a_conversational_prompt_and_completion_is_read_as_its_conversation(tmp_path):
    rows = [{"prompt": [user(q)], "completion": [assistant(good)]} for q, good in zip(QUESTIONS, GOOD)]
    subject = judged(jsonl(tmp_path, *rows))
    assert warned(subject) == []
    assert subject.summary["rows_messages"] == 3


def test_a_conversational_prompt_with_a_string_completion_is_the_wrong_type(tmp_path):
    subject = judged(jsonl(tmp_path, {"prompt": [user(QUESTIONS[0])], "completion": GOOD[0]}))
    (found,) = findings_of(subject, "TP-TEXT-SHAPE")
    assert "both lists of turns" in found.message


def test_the_developer_role_opens_a_conversation_as_system_does(tmp_path):
    rows = [{"messages": [{"role": "developer", "content": "Answer briefly."}, user(q), assistant(good)]} for q, good in zip(QUESTIONS, GOOD)]
    assert warned(judged(jsonl(tmp_path, *rows))) == []


def test_a_developer_message_after_the_first_is_out_of_order(tmp_path):
    row = {"messages": [user(QUESTIONS[0]), {"role": "developer", "content": "Answer briefly."}, assistant(GOOD[0])]}
    (found,) = findings_of(judged(jsonl(tmp_path, row)), "TP-TEXT-ROLES")
    assert "'developer' message" in found.message
