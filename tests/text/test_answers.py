"""What a row trains the model to answer: conversations with no answer or no question, answers that are one unit
repeated, answers far longer than the file's others; on real files (skipped without the shared corpus) and on files
written here.

TP-TEXT-NO-ASSISTANT, TP-TEXT-ROLES (no user turn, a last question unanswered), TP-TEXT-REPEATED-TARGET and
TP-TEXT-LENGTH-OUTLIER. The table in test_rules.py has each both ways; these pin the real files they were measured on,
their boundaries, and the repetition finder against a brute-force search.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace

import pytest

from tests.helpers import REPO
from tests.text import findings_of, judged, lines_of
from tests.text.test_reader import assistant, jsonl, user
from trainproof.commands import judge
from trainproof.config import DEFAULT_SETTINGS
from trainproof.report import Level, Skipped, Verdict
from trainproof.text.repeats import repeated_run

T = DEFAULT_SETTINGS.thresholds
NEW_RULES = ("TP-TEXT-NO-ASSISTANT", "TP-TEXT-ROLES", "TP-TEXT-REPEATED-TARGET", "TP-TEXT-LENGTH-OUTLIER")
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


def answer(i: int, text: str | None = None) -> dict:
    return {"prompt": f"Question {i}?", "completion": text or f"Answer {i}: {'more ' * (i % 5)}said plainly."}


def with_thresholds(**overrides: float) -> object:
    return replace(DEFAULT_SETTINGS, thresholds=T.with_overrides(overrides))


# --- on real files ------------------------------------------------------------------------------------------------


def test_openai_toy_chat_names_the_row_with_no_user_and_the_answer_that_loops(corpus):
    """OpenAI's own example of a bad file: line 4 is system then assistant, line 5's answer is 'Eat a banana!' 2,000
    times. Line 3, which has no system message, is fine."""
    subject = judged(corpus / "public" / "datasets" / "text" / OPENAI_TOY)
    (no_user,) = findings_of(subject, "TP-TEXT-ROLES")
    assert (no_user.line, no_user.level) == (4, Level.WARN)
    assert no_user.message == "Line 4 has no user message in 'messages': its assistant turn answers no one."
    assert no_user.evidence == "line 4: no-user"
    (loop,) = findings_of(subject, "TP-TEXT-REPEATED-TARGET")
    assert (loop.line, loop.level) == (5, Level.WARN)
    assert loop.message == "Line 5: message 3 (the assistant's) is 'Eat a banana!' repeated 2,000 times (26,000 characters)."
    assert loop.evidence == "one run of a 13-character unit covers 100% of the answer"
    assert findings_of(subject, "TP-TEXT-NO-ASSISTANT") == []
    assert Skipped("TP-TEXT-LENGTH-OUTLIER", "only 5 rows with an answer to compare lengths across (needs 20)") in subject.skipped
    assert subject.verdict is Verdict.WARN


@pytest.mark.parametrize("name", CLEAN)
def test_real_clean_files_have_no_answer_or_conversation_finding(corpus, name):
    subject = judged(corpus / "public" / "datasets" / "text" / name)
    assert [f for f in subject.findings if f.rule_id in NEW_RULES] == []
    rows = subject.summary["rows"]
    assert ("TP-TEXT-LENGTH-OUTLIER" in subject.ran) is (rows >= T.TEXT_LENGTH_MIN_ROWS)  # judged where it can be


def test_reddit_jokes_are_a_long_tail_not_outliers(corpus, tmp_path):
    """DeepElonBot's 506 Reddit jokes spell their keys 'Prompt'/'Completion' (no trainer reads them); read as they were
    meant, their answers run from one word to 3,494 characters, 53 times the median, yet 3.7 robust sigmas on the log
    scale: none is an outlier, and none repeats a unit."""
    source = corpus / "public" / "datasets" / "text" / "mokydoky__DeepElonBot__data_finetune_data.jsonl"
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    path = jsonl(tmp_path, *({"prompt": r["Prompt"], "completion": r["Completion"]} for r in rows))
    subject = judged(path)
    assert {"TP-TEXT-REPEATED-TARGET", "TP-TEXT-LENGTH-OUTLIER"} <= set(subject.ran)
    assert [f for f in subject.findings if f.rule_id in NEW_RULES] == []
    lengths = sorted(len(r["Completion"] or "") for r in rows)
    assert lengths[-1] == 3494 and lengths[-1] >= T.TEXT_LENGTH_RATIO * lengths[len(lengths) // 2]  # the ratio alone would fire


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


# --- repeated answers ---------------------------------------------------------------------------------------------


def test_a_run_after_a_preamble_is_named_with_the_characters_it_covers(tmp_path):
    text = "Sure! Here you go: " + "Eat a banana! " * 100
    (hit,) = findings_of(judged(jsonl(tmp_path, answer(1, text))), "TP-TEXT-REPEATED-TARGET")
    assert hit.message == f"Line 1: its 'completion' is 'Eat a banana! ' repeated 100 times (1,400 of its {len(text):,} characters)."
    assert hit.evidence == "one run of a 14-character unit covers 99% of the answer"


def test_an_instruction_output_and_a_text_row_are_answers_too(tmp_path):
    rows = [{"instruction": "Say it.", "output": "yes " * 40}, {"text": "Q: Again?\nA: " + "no " * 100}]
    hits = findings_of(judged(jsonl(tmp_path, *rows)), "TP-TEXT-REPEATED-TARGET")
    assert [h.message.split(" is ")[0] for h in hits] == ["Line 1: its 'output'", "Line 2: its 'text'"]


def test_each_assistant_turn_is_judged_alone_and_the_row_named_once(tmp_path):
    looping = "I am sorry. " * 20
    row = chat(user("a"), assistant("Fine."), user("b"), assistant(looping), user("c"), assistant(looping))
    (hit,) = findings_of(judged(jsonl(tmp_path, row)), "TP-TEXT-REPEATED-TARGET")
    assert hit.message.startswith("Line 1: message 4 (the assistant's) is 'I am sorry. ' repeated 20 times")
    short_turns = chat(*(turn for k in range(30) for turn in (user(f"q{k}"), assistant("OK."))))  # 30 answers of 'OK.'
    assert findings_of(judged(jsonl(tmp_path, short_turns, name="turns.jsonl")), "TP-TEXT-REPEATED-TARGET") == []


@pytest.mark.parametrize(
    ("text", "fires"),
    [
        ("x" * (T.TEXT_REPEAT_MIN_CHARS - 1), False),  # too short to judge
        ("x" * T.TEXT_REPEAT_MIN_CHARS, True),
        ("0123456789" * (T.TEXT_REPEAT_TIMES - 1) + "!" * 10, False),  # 9 repeats, and 90% of the text
        ("0123456789" * T.TEXT_REPEAT_TIMES + "!" * 10, True),
        ("ab" * 79 + "".join(chr(0x4E00 + k) for k in range(42)), False),  # a run of 79%
        ("ab" * 80 + "".join(chr(0x4E00 + k) for k in range(40)), True),  # of 80%
        ("".join(chr(0x4E00 + k) for k in range(T.TEXT_REPEAT_MAX_UNIT + 1)) * 12, False),  # a unit one over the longest
        ("".join(chr(0x4E00 + k) for k in range(T.TEXT_REPEAT_MAX_UNIT)) * 12, True),
    ],
    ids=["99 chars", "100 chars", "9 repeats", "10 repeats", "79% covered", "80% covered", "unit 1,001", "unit 1,000"],
)
def test_repetition_is_judged_at_its_thresholds(tmp_path, text, fires):
    hits = findings_of(judged(jsonl(tmp_path, answer(1, text))), "TP-TEXT-REPEATED-TARGET")
    assert bool(hits) is fires


def test_the_repetition_thresholds_are_read_from_the_configuration(tmp_path):
    path = jsonl(tmp_path, answer(1, "Eat a banana! " * 8))  # 112 characters, 8 times
    assert findings_of(judged(path), "TP-TEXT-REPEATED-TARGET") == []
    report = judge("text", [str(path)], with_thresholds(TEXT_REPEAT_TIMES=8))
    assert lines_of(findings_of(report.subjects[0], "TP-TEXT-REPEATED-TARGET")) == [1]


def _brute_force(text: str, share: float, times: int, max_unit: int) -> tuple[int, int] | None:
    """The (start, length) of a stretch covering ``share`` of the text that is one unit (as long as repeated_run allows)
    written ``times`` times or more, found by trying every unit length and every start."""
    n = len(text)
    middle = math.floor(share * n) - (n - math.floor(share * n))
    for period in range(1, min(max_unit, n // times, middle // 2) + 1):
        start = 0
        while start < n:
            end = start
            while end + period < n and text[end] == text[end + period]:
                end += 1
            first = start
            if not text[start : start + period].isspace():
                while text[first].isspace():
                    first += 1
            length = min(n, end + period) - first
            if length >= share * n and length // period >= times:
                return first, length
            start = end + 1
    return None


def test_the_repetition_finder_agrees_with_a_brute_force_search():
    rng = random.Random(29)
    for _ in range(3000):
        alphabet = rng.choice(["ab", "abc", "a", "abcdefgh", "a ", "ab  "])
        unit = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6)))
        text = (
            "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10)))
            + unit * rng.randint(1, 40)
            + unit[: rng.randint(0, len(unit))]
            + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10)))
        )
        if rng.random() < 0.3:
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 60)))
        share, times, max_unit = rng.choice([0.51, 0.6, 0.8, 0.95]), rng.choice([2, 3, 10]), rng.choice([1, 3, 100])
        run = repeated_run(text, share, times, max_unit)
        expected = _brute_force(text, share, times, max_unit)
        assert (None if run is None else (run.start, run.length)) == expected, (text, share, times, max_unit)
        if run is not None:
            assert text[run.start : run.start + run.length] == (run.unit * (run.times + 1))[: run.length]


def test_a_long_periodic_text_is_found_whole_and_a_long_near_periodic_one_not():
    looping = "Eat a banana!" * 1_000_000  # 13 MB
    run = repeated_run(looping, 0.8, 10, 1000)
    assert (run.unit, run.times, run.length) == ("Eat a banana!", 1_000_000, 13_000_000)
    broken = "a" * 5_000_000 + "b" + "a" * 5_000_000  # every prefix of its middle recurs one character on
    assert repeated_run(broken, 0.8, 10, 1000) is None
    assert repeated_run("a" * 5_000_000 + "b" + "a" * 1_000_000, 0.8, 10, 1000).length == 5_000_000


# --- answers far longer than the rest -----------------------------------------------------------------------------


def test_an_answer_far_longer_than_the_rest_is_named_with_its_figures(tmp_path):
    long = " ".join(f"Step {k}: add {k * k} to the total." for k in range(1, 200))
    rows = [answer(i) for i in range(1, 25)] + [answer(25, long)]
    subject = judged(jsonl(tmp_path, *rows))
    (hit,) = findings_of(subject, "TP-TEXT-LENGTH-OUTLIER")
    lengths = sorted(len(r["completion"]) for r in rows)
    median = lengths[len(lengths) // 2]
    assert hit.line == 25
    assert hit.message.startswith(f"Line 25: its 'completion' has {len(long):,} characters, {len(long) / median:.4g} times the median answer ({median} characters).")
    assert hit.evidence.startswith(f"median of 25 answers {median} characters; ")
    assert hit.evidence.endswith("robust sigmas above it on a log scale")


def test_over_half_the_answers_of_one_length_make_any_far_longer_one_an_outlier(tmp_path):
    rows = [{"prompt": f"Is {i} even?", "completion": "yes" if i % 2 == 0 else "no!"} for i in range(30)]
    rows.append({"prompt": "Is 31 even?", "completion": "No: 31 is odd, since dividing it by two leaves one."})
    (hit,) = findings_of(judged(jsonl(tmp_path, *rows)), "TP-TEXT-LENGTH-OUTLIER")
    assert hit.line == 31
    assert hit.evidence == "median of 31 answers 3 characters; over half the answers are of that length"


def test_lengths_are_compared_only_with_enough_rows(tmp_path):
    long = " ".join(f"Step {k}: add {k * k} to the total." for k in range(1, 200))
    few = T.TEXT_LENGTH_MIN_ROWS - 1
    subject = judged(jsonl(tmp_path, *(answer(i) for i in range(1, few)), answer(few, long)))
    assert Skipped("TP-TEXT-LENGTH-OUTLIER", f"only {few} rows with an answer to compare lengths across (needs {T.TEXT_LENGTH_MIN_ROWS})") in subject.skipped
    assert subject.findings == ()
    enough = judged(jsonl(tmp_path, *(answer(i) for i in range(1, few + 1)), answer(few + 1, long), name="enough.jsonl"))
    assert lines_of(findings_of(enough, "TP-TEXT-LENGTH-OUTLIER")) == [few + 1]


def test_the_length_thresholds_are_read_from_the_configuration(tmp_path):
    rows = [answer(i) for i in range(1, 25)] + [answer(25, " ".join(f"word{k}" for k in range(60)))]  # some 10 times the rest
    path = jsonl(tmp_path, *rows)
    assert lines_of(findings_of(judged(path), "TP-TEXT-LENGTH-OUTLIER")) == [25]
    report = judge("text", [str(path)], with_thresholds(TEXT_LENGTH_RATIO=50.0))
    assert findings_of(report.subjects[0], "TP-TEXT-LENGTH-OUTLIER") == []
