"""The TP-TEXT rules on real files: each fires where its docstring says, at the lines it names, and nowhere else.

The table CASES holds every rule both ways; the tests after it pin what the
table cannot: clean files of every shape, every bad-row kind the reader
records located through its rule, how many findings a rule gives and how
the first counts them all, and the length rules measured with real
tokenizers (token counts computed here, independently, with the same
tokenizer, and through the HF folder's chat template).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from dataclasses import dataclass, replace

import pytest

from tests.text import cites_a_number, findings_of, judged, lines_of
from tests.text.test_reader import assistant, jsonl, user
from tests.tokenizer import build
from tests.tokenizer import conftest as tokenizer_fixtures
from trainproof.checks.text import TEXT_RULES
from trainproof.commands import judge
from trainproof.commands.text import measure
from trainproof.config import DEFAULT_SETTINGS
from trainproof.report import Level, Skipped, Verdict
from trainproof.text import reader
from trainproof.text.model import PROBLEM_KINDS
from trainproof.text.reader import read_text_dataset
from trainproof.tokenizer.load import load_tokenizer

built = tokenizer_fixtures.built  # the session's tokenizers, trained once at their first request (tests/tokenizer)

FAIL, WARN = Level.FAIL, Level.WARN
LEVELS = {
    "TP-TEXT-DOCUMENT": FAIL,
    "TP-TEXT-MALFORMED": FAIL,
    "TP-TEXT-SHAPE": FAIL,
    "TP-TEXT-FORMAT": WARN,
    "TP-TEXT-MIXED-SHAPES": WARN,
    "TP-TEXT-EMPTY": WARN,
    "TP-TEXT-NO-ASSISTANT": FAIL,
    "TP-TEXT-ROLES": WARN,
    "TP-TEXT-DUPLICATE": WARN,
    "TP-TEXT-SPLIT-LEAK": WARN,
    "TP-TEXT-SAME-PAIR": WARN,
    "TP-TEXT-TOOL-ARGUMENTS": FAIL,
    "TP-TEXT-TOOL-ORPHAN": WARN,
    "TP-TEXT-REPEATED-TARGET": WARN,
    "TP-TEXT-LENGTH-OUTLIER": WARN,
    "TP-TEXT-TRUNCATED-TARGET": FAIL,
    "TP-TEXT-TOO-LONG": WARN,
    "TP-TEXT-REJECTED-TOO-LONG": WARN,
}
LENGTH_RULES = ("TP-TEXT-TRUNCATED-TARGET", "TP-TEXT-TOO-LONG", "TP-TEXT-REJECTED-TOO-LONG")
ROW_RULES = tuple(rule for rule in LEVELS if rule not in LENGTH_RULES)
COMPARED = ("TP-TEXT-LENGTH-OUTLIER",)
"""Rules that judge a row against the file's others: only with TEXT_LENGTH_MIN_ROWS rows, so skipped on small files."""
SPLIT_RULES = ("TP-TEXT-SPLIT-LEAK",)
"""Rules that judge a split against the splits before it: skipped on a dataset of one split (any JSON Lines file)."""
SMALL_FILE_RULES = tuple(rule for rule in ROW_RULES if rule not in COMPARED and rule not in SPLIT_RULES)
EXAMPLES = DEFAULT_SETTINGS.thresholds.TEXT_EXAMPLES

SENTENCE = "Return the value of the argument. "
"""English the test tokenizers were trained on (standard-library docstrings), a few tokens long."""
LONG = SENTENCE * 40
"""Some 300 tokens with every test tokenizer: far over the table's --max-len of 64."""


def pc(i: int) -> dict:
    """A clean prompt/completion row, different for every ``i`` (so a file of them has no duplicates)."""
    return {"prompt": f"What is {i} plus {i}?", "completion": f" {2 * i}."}


def qa(i: int, answer: str | None = None) -> dict:
    """A prompt/completion row whose answer is a sentence of 30 to 60 characters (``answer`` instead, when given)."""
    return {"prompt": f"Why is {i} the answer?", "completion": answer or f"Because {i} is {'quite ' * (i % 6)}what was asked."}


BANANA = "Eat a banana!" * 2000
"""Line 5 of OpenAI's toy chat dataset: a 13-character sentence 2,000 times (26,000 characters)."""
STEPS = " ".join(f"Step {i}: add {i * i} to the running total and carry the remainder." for i in range(1, 90))
"""Some 6,000 characters that repeat no unit: every step has its own numbers."""


def system(text: str) -> dict:
    return {"role": "system", "content": text}


def tool(text: str) -> dict:
    return {"role": "tool", "content": text}


def calling(arguments: object, name: str = "get_weather") -> dict:
    """An assistant turn that calls one tool, OpenAI's shape."""
    return {"role": "assistant", "content": None, "tool_calls": [{"type": "function", "function": {"name": name, "arguments": arguments}}]}


def tool_chat(arguments: object = '{"city": "Paris"}') -> dict:
    """A clean tool-calling conversation: a question, a call, its result, the answer."""
    return chat(user("Weather in Paris?"), calling(arguments), tool('{"temp": 21}'), assistant("It is 21 degrees."))


def chat(*turns: dict) -> dict:
    return {"messages": list(turns)}


def pair(prompt: str, chosen: str, rejected: str) -> dict:
    """A preference row, TRL's standard form."""
    return {"prompt": prompt, "chosen": chosen, "rejected": rejected}


def conversational_pair(question: str, chosen: str, rejected: str) -> dict:
    """A preference row, TRL's conversational form: the prompt and each answer a list of messages."""
    return {"prompt": [user(question)], "chosen": [assistant(chosen)], "rejected": [assistant(rejected)]}


def sharegpt(*turns: tuple[str, str]) -> dict:
    return {"conversations": [{"from": speaker, "value": value} for speaker, value in turns]}


def document_lines(value: object) -> tuple[str, ...]:
    """The lines of ``json.dump(value, f, indent=2)``: one JSON document over many lines."""
    return tuple(json.dumps(value, indent=2).splitlines())


@pytest.fixture(scope="module")
def tokenizers(built):
    """name -> the tokenizer object judge() is given (loaded once per module)."""
    cache: dict = {}

    def get(name: str):
        if name not in cache:
            cache[name] = load_tokenizer(built(name))
        return cache[name]

    return get


def length_skips(subject) -> tuple[Skipped, ...]:
    """The length rules a subject skipped, with why (a small file also skips TP-TEXT-LENGTH-OUTLIER, for its own reason)."""
    return tuple(s for s in subject.skipped if s.rule_id in LENGTH_RULES)


def specials_added(folder) -> int:
    """The special tokens transformers' own call adds to a text with this folder's tokenizer (its bos)."""
    from transformers import AutoTokenizer

    reference = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    return len(reference("a")["input_ids"]) - len(reference("a", add_special_tokens=False)["input_ids"])


def count(tokenizer, text: str) -> int:
    (ids,) = tokenizer.encode_batch([text])
    return len(ids)


# --- every rule both ways -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """A file (``rows`` as :func:`jsonl` writes them) and the lines ``rule`` names in it (none: it must not fire).

    ``says`` is part of the first finding's message; ``instead`` a rule that
    fires on the file in this rule's place (the docstring's "see ..."). The
    length rules run with the named test tokenizer and ``max_len``. With
    ``train``, the rows are a Hub dataset's test split, written with these
    rows as its train split (:func:`hub_splits`), and the test split is judged.
    """

    rule: str
    name: str
    rows: tuple
    lines: tuple[int, ...] = ()
    says: str = ""
    instead: str | None = None
    tokenizer: str | None = None
    max_len: int | None = None
    train: tuple | None = None

    @property
    def fires(self) -> bool:
        return bool(self.lines)


ARRAY = [pc(i) for i in range(1, 301)]

CASES = [
    # TP-TEXT-DOCUMENT
    Case("TP-TEXT-DOCUMENT", "json.dump(rows, indent=2)", document_lines(ARRAY), (1,), "one JSON array, not JSON Lines"),
    Case("TP-TEXT-DOCUMENT", "a JSON array on one line", (json.dumps(ARRAY),), (1,), "one JSON array"),
    Case("TP-TEXT-DOCUMENT", "a pretty-printed object", document_lines({"data": ARRAY[:20]}), (1,), "one pretty-printed JSON document"),
    Case("TP-TEXT-DOCUMENT", "an array after blank lines", ("", "", *document_lines(ARRAY[:5])), (3,), "one JSON array"),
    Case("TP-TEXT-DOCUMENT", "one object per line", tuple(ARRAY[:5])),
    Case("TP-TEXT-DOCUMENT", "a JSON array on every line", (["a", "b"], ["c", "d"]), instead="TP-TEXT-MALFORMED"),
    # TP-TEXT-MALFORMED
    Case(
        "TP-TEXT-MALFORMED",
        "broken lines, a stray [, JSON that is no object",
        (pc(1), '{"prompt": "cut in ha', pc(3), "[", '"a string"', "42", pc(7), "null"),
        (2, 4, 5, 6, 8),
        "Line 2 is not valid JSON: Unterminated string starting at column 12. 5 lines are not JSON objects; the first 5 are named here.",
    ),
    Case("TP-TEXT-MALFORMED", "blank lines", (pc(1), "", pc(3), "  "), instead="TP-TEXT-FORMAT"),
    Case("TP-TEXT-MALFORMED", "objects of an unknown shape", (pc(1), {"Prompt": "p", "Completion": "c"}), instead="TP-TEXT-SHAPE"),
    # TP-TEXT-SHAPE
    Case(
        "TP-TEXT-SHAPE",
        "Prompt for prompt, a number for a completion, messages as a string",
        (pc(1), {"Prompt": "p", "Completion": "c"}, {"prompt": "p", "completion": 42}, {"messages": "hi"}, pc(5)),
        (2, 3, 4),
        "Line 2 has no field 'prompt' (found 'Prompt'; keys are case-sensitive) and no field 'completion' (found 'Completion'; "
        "keys are case-sensitive). 3 rows have no known shape; the first 3 are named here.",
    ),
    Case("TP-TEXT-SHAPE", "an object with none of the fields", (pc(1), {"id": 7, "body": "b"}), (2,), "none of the fields of a training example"),
    Case("TP-TEXT-SHAPE", "known shapes with extra keys", ({"id": 1, **pc(1), "meta": {"source": "web"}}, {"source": "x", **pc(2)})),
    Case("TP-TEXT-SHAPE", "a preference row with no rejected answer, a conversational prompt with a string completion", (
        pair("Sky?", "Blue.", "Green."), {"prompt": "2+2?", "chosen": "4"}, {"prompt": [user("a")], "completion": "A"},
    ), (2, 3), "Line 2 has no field 'rejected', which preference needs beside 'chosen'."),  # fmt: skip
    Case("TP-TEXT-SHAPE", "TRL's preference, conversational prompt-completion and KTO rows", (
        pair("Sky?", "Blue.", "Green."), conversational_pair("Sky?", "Blue.", "Green."),
        {"chosen": [user("Sky?"), assistant("Blue.")], "rejected": [user("Sky?"), assistant("Green.")]},
        {"prompt": [user("Sky?")], "completion": [assistant("Blue.")]}, {"prompt": "Sky?", "completion": "Blue.", "label": True},
    ), instead="TP-TEXT-MIXED-SHAPES"),  # fmt: skip
    # TP-TEXT-FORMAT
    Case("TP-TEXT-FORMAT", "rows separated by blank lines", (pc(1), "", pc(3), " \t", pc(5)), (2,), "The file has 2 blank lines, the first at line 2."),
    Case("TP-TEXT-FORMAT", "one row on every line", tuple(pc(i) for i in range(1, 6))),
    Case("TP-TEXT-FORMAT", "CRLF line ends", tuple(json.dumps(pc(i)) + "\r" for i in range(1, 4))),
    # TP-TEXT-MIXED-SHAPES
    Case(
        "TP-TEXT-MIXED-SHAPES",
        "a chat dataset with Alpaca rows appended",
        (chat(user("a"), assistant("A")), chat(user("b"), assistant("B")), chat(user("c"), assistant("C")),
         {"instruction": "d", "output": "D"}, {"instruction": "e", "output": "E"}),
        (4, 5),
        "2 of 5 rows are not of the main shape, messages (40%); the first 2 are named here.",
    ),  # fmt: skip
    Case("TP-TEXT-MIXED-SHAPES", "rows of one shape", tuple(pc(i) for i in range(1, 4))),
    Case("TP-TEXT-MIXED-SHAPES", "messages and ShareGPT conversations (one shape)", (chat(user("a"), assistant("A")), sharegpt(("human", "b"), ("gpt", "B")))),
    # TP-TEXT-EMPTY
    Case(
        "TP-TEXT-EMPTY",
        "an empty completion, a null prompt, an empty answer",
        ({"prompt": "Summarise:", "completion": ""}, pc(2), {"prompt": None, "completion": "c"}, pc(4),
         {"prompt": "p", "completion": "  \n"}, chat(user("a"), assistant(" "))),
        (1, 3, 5, 6),
        "Line 1: 'completion' is empty. 4 fields are empty or null; the first 4 are named here.",
    ),  # fmt: skip
    Case("TP-TEXT-EMPTY", "Alpaca's optional input left empty, null or out", (
        {"instruction": "Name a colour.", "input": "", "output": "Blue."},
        {"instruction": "Name a fruit.", "input": None, "output": "Apple."},
        {"instruction": "Name a city.", "output": "Paris."},
        {"instruction": "Translate.", "input": "Bonjour", "output": "Hello."},
    )),  # fmt: skip
    Case("TP-TEXT-EMPTY", "an empty chosen answer, a null rejected one", (
        pair("Sky?", "Blue.", "Green."), pair("Sky?", "", "Green."), {"prompt": [user("Sky?")], "chosen": [assistant("Blue.")], "rejected": None},
    ), (2, 3), "Line 2: 'chosen' is empty. 2 fields are empty or null; the first 2 are named here."),  # fmt: skip
    Case("TP-TEXT-EMPTY", "an assistant turn that calls a tool and says nothing", (
        chat(user("What is 6 times 7?"), {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]}, tool("42"), assistant("42.")),
    )),  # fmt: skip
    # TP-TEXT-NO-ASSISTANT
    Case(
        "TP-TEXT-NO-ASSISTANT",
        "one user message, system and user, two user turns, an answer under 'Assistant'",
        (chat(user("a"), assistant("A")), chat(user("b")), chat(system("s"), user("c")), chat(user("d"), user("e")),
         chat(user("f"), {"role": "Assistant", "content": "F"})),
        (2, 3, 4, 5),
        "Line 2 has no assistant message in 'messages' (its roles: 'user'): nothing in it is trained on. "
        "4 conversations have no assistant message; the first 4 are named here.",
    ),
    Case("TP-TEXT-NO-ASSISTANT", "every conversation answered", (chat(user("a"), assistant("A")), sharegpt(("human", "b"), ("gpt", "B")))),
    Case("TP-TEXT-NO-ASSISTANT", "an answer with no question", (chat(user("a"), assistant("A")), chat(system("s"), assistant("S"))), instead="TP-TEXT-ROLES"),
    # TP-TEXT-ROLES
    Case(
        "TP-TEXT-ROLES",
        "two user turns in a row, an assistant first, system then assistant, a last question unanswered",
        (chat(user("a"), assistant("A")), chat(user("b"), user("c"), assistant("C")), chat(assistant("Hi!"), user("e"), assistant("E")),
         chat(system("s"), assistant("You're great!")), chat(user("f"), assistant("F"), user("g"))),
        (2, 3, 4, 5),
        "Line 2: messages 1 and 2 are both 'user' turns, one after the other. 4 conversations have role problems; the first 4 are named here.",
    ),
    Case("TP-TEXT-ROLES", "system, user, assistant, user, assistant", (chat(system("s"), user("a"), assistant("A"), user("b"), assistant("B")),)),
    Case("TP-TEXT-ROLES", "OpenAI's developer role first", (chat({"role": "developer", "content": "Be brief."}, user("a"), assistant("A")),)),
    Case("TP-TEXT-ROLES", "a bogus role in a chosen answer, a completion that is a user turn", (
        conversational_pair("a", "A", "B"), {"prompt": [user("b")], "chosen": [{"role": "bot", "content": "B"}], "rejected": [assistant("C")]},
        {"prompt": [user("c"), assistant("Which?")], "completion": [user("That one.")]},
    ), (2, 3), "Line 2: message 1 of 'chosen' has the role 'bot', which is none of "),  # fmt: skip
    Case("TP-TEXT-ROLES", "user then assistant with no system message", (chat(user("a"), assistant("A")), chat(system("s"), user("b"), assistant("B")))),
    Case("TP-TEXT-ROLES", "a conversation of one user message", (chat(user("a"), assistant("A")), chat(user("d"))), instead="TP-TEXT-NO-ASSISTANT"),
    Case("TP-TEXT-ROLES", "tool turns between assistant turns", (
        chat(system("s"), user("a"), assistant("calling"), tool("r1"), tool("r2"), assistant("A")),
        sharegpt(("human", "b"), ("function_call", "call"), ("observation", "r"), ("gpt", "B")),
    )),  # fmt: skip
    # TP-TEXT-DUPLICATE
    Case(
        "TP-TEXT-DUPLICATE",
        "an example appended twice, and one again after case and whitespace folding",
        ({"prompt": "Hello  World", "completion": "Hi."}, pc(2), pc(3), pc(2), {"prompt": "hello world", "completion": "HI."}),
        (4, 5),
        "Line 4 repeats line 2. 2 of 5 rows repeat an earlier row (40%); the first 2 are named here.",
    ),
    Case("TP-TEXT-DUPLICATE", "the same text row twice", ({"text": "A row."}, {"text": "Another."}, {"text": "A row."}), (3,), "Line 3 repeats line 1."),
    Case("TP-TEXT-DUPLICATE", "a preference pair twice", (pair("Sky?", "Blue.", "Green."), pair("2+2?", "4", "5"), pair("Sky?", "Blue.", "Green.")),
         (3,), "Line 3 repeats line 1."),
    Case("TP-TEXT-DUPLICATE", "pairs sharing a prompt and a chosen answer, not the rejected one", (
        pair("Sky?", "Blue.", "Green."), pair("Sky?", "Blue.", "Red."),
        conversational_pair("Sky?", "Blue.", "Green."), conversational_pair("Sky?", "Blue.", "Red."),
    )),  # fmt: skip
    Case("TP-TEXT-DUPLICATE", "rows that share a prompt with different answers", (
        {"prompt": "Name a colour.", "completion": "Blue."},
        {"prompt": "Name a colour.", "completion": "Red."},
        chat(user("Name a colour."), assistant("Green.")),
        chat(user("Name a colour."), assistant("Green."), user("Another?"), assistant("Blue.")),
    )),  # fmt: skip
    # TP-TEXT-SPLIT-LEAK
    Case("TP-TEXT-SPLIT-LEAK", "test rows that are train rows, one after folding case and space",
         (pc(7), pc(1), {"prompt": "WHAT is 2  plus 2?", "completion": " 4."}, pc(8)), (2, 3),
         "Row 2 (test) repeats row 1 of the train split", train=(pc(1), pc(2), pc(3))),  # fmt: skip
    Case("TP-TEXT-SPLIT-LEAK", "a test split sharing prompts, not answers, with train",
         ({"prompt": "What is 1 plus 1?", "completion": " two."}, pc(9)), train=(pc(1), pc(2))),  # fmt: skip
    Case("TP-TEXT-SPLIT-LEAK", "a row twice within the test split", (pc(5), pc(5)), instead="TP-TEXT-DUPLICATE", train=(pc(1), pc(2))),
    # TP-TEXT-SAME-PAIR
    Case("TP-TEXT-SAME-PAIR", "the same answer chosen and rejected, as strings and as messages", (
        pair("Sky?", "Blue.", "Green."), pair("2+2?", "4", "4"), conversational_pair("Capital of France?", "Paris.", "Paris."),
        {"chosen": [user("Hi"), assistant("Hello.")], "rejected": [user("Hi"), assistant("Hello.")]},
    ), (2, 3, 4), "Line 2: 'chosen' and 'rejected' are the same, so the pair prefers neither. 3 preference pairs have the same "
       "chosen and rejected answer; the first 3 are named here."),  # fmt: skip
    Case("TP-TEXT-SAME-PAIR", "answers that differ only in case or a space", (pair("Sky?", "Blue.", "blue."), pair("2+2?", "4", "4 "))),
    Case("TP-TEXT-SAME-PAIR", "both answers empty", (pair("Sky?", "Blue.", "Green."), pair("2+2?", "", "")), instead="TP-TEXT-EMPTY"),
    # TP-TEXT-TOOL-ARGUMENTS
    Case("TP-TEXT-TOOL-ARGUMENTS", "arguments cut off, in single quotes, a JSON list", (
        tool_chat(), tool_chat('{"city": "Par'), tool_chat("{'city': 'Paris'}"), tool_chat("[1, 2]"),
    ), (2, 3, 4), "Line 2: the arguments of tool call 1 ('get_weather') of message 2 of 'messages' are not valid JSON"),  # fmt: skip
    Case("TP-TEXT-TOOL-ARGUMENTS", "arguments as a JSON string and as an object, a legacy function_call", (
        tool_chat(), tool_chat({"city": "Paris"}),
        chat(user("Weather?"), {"role": "assistant", "content": None, "function_call": {"name": "w", "arguments": "{}"}},
             tool("21"), assistant("21 degrees.")),
    )),  # fmt: skip
    # TP-TEXT-TOOL-ORPHAN
    Case("TP-TEXT-TOOL-ORPHAN", "a result after a user turn, a result after an assistant turn with no call", (
        tool_chat(), chat(user("Weather?"), tool("21"), assistant("21 degrees.")),
        chat(user("Weather?"), calling("{}"), tool("21"), assistant("Let me check."), tool("22"), assistant("22 degrees.")),
    ), (2, 3), "Line 2: message 2 is a 'tool' result that answers no call"),  # fmt: skip
    Case("TP-TEXT-TOOL-ORPHAN", "parallel results after one call; calls written in the assistant's text", (
        chat(user("Weather in two cities?"), {"role": "assistant", "content": None, "tool_calls": [
            {"type": "function", "function": {"name": "w", "arguments": '{"city": "A"}'}},
            {"type": "function", "function": {"name": "w", "arguments": '{"city": "B"}'}}]},
            tool("21"), tool("22"), assistant("21 and 22.")),
        chat(user("Weather?"), assistant("<tool_call>{\"name\": \"w\"}</tool_call>"), tool("21"), assistant("21 degrees.")),
    )),  # fmt: skip
    # TP-TEXT-REPEATED-TARGET
    Case(
        "TP-TEXT-REPEATED-TARGET",
        "a sentence 2,000 times, a laugh after a preamble, a text row of one word",
        (qa(1), chat(system("s"), user("I'm hungry."), assistant(BANANA)), qa(3, "Sure, here it is: " + "ha" * 200), {"text": "la " * 60}),
        (2, 3, 4),
        "Line 2: message 3 (the assistant's) is 'Eat a banana!' repeated 2,000 times (26,000 characters). "
        "3 of 4 rows have an answer that is one short unit repeated (75%); the first 3 are named here.",
    ),
    Case("TP-TEXT-REPEATED-TARGET", "a chosen answer that loops, as a string and as a message", (
        pair("Hungry?", BANANA, "No."), conversational_pair("Hungry?", "Yes.", "No."), conversational_pair("Hungry!", BANANA, "Eat."),
    ), (1, 3), "Line 1: its 'chosen' is 'Eat a banana!' repeated 2,000 times"),  # fmt: skip
    Case("TP-TEXT-REPEATED-TARGET", "a rejected answer that loops (what the pair teaches against)", (
        pair("Hungry?", "Eat something.", BANANA), conversational_pair("Hungry!", "Eat.", BANANA),
    )),  # fmt: skip
    Case("TP-TEXT-REPEATED-TARGET", "code, SQL, a table, a list, a poem, JSON and a short 'Noooooooooo'", (
        qa(1, "\n".join(f"    total_{i} = compute(values[{i}], scale=2)" for i in range(40))),
        qa(2, " UNION ".join(f"SELECT name FROM t{i} WHERE id = {i}" for i in range(30))),
        qa(3, "| id | name |\n|---|---|\n" + "\n".join(f"| {i} | row {i} |" for i in range(40))),
        qa(4, "\n".join(f"{i}. Preheat the oven, then wait." for i in range(1, 30))),
        qa(5, "\n".join(f"{line}\nRow, row, row your boat." for line in ("Gently down the stream", "Merrily merrily", "Life is but a dream") * 5)),
        qa(6, json.dumps([{"participant": f"p{i}", "intervention": "none", "outcome": "recovered"} for i in range(30)])),
        qa(7, "N" + "o" * 30),
    )),  # fmt: skip
    # TP-TEXT-LENGTH-OUTLIER
    Case(
        "TP-TEXT-LENGTH-OUTLIER",
        "one 6,000-character answer among 30 sentences",
        (*(qa(i) for i in range(1, 15)), qa(15, STEPS), *(qa(i) for i in range(16, 31))),
        (15,),
        f"Line 15: its 'completion' has {len(STEPS):,} characters, ",
    ),
    Case("TP-TEXT-LENGTH-OUTLIER", "answers from 10 to 5,000 characters, evenly on a log scale", tuple(
        qa(i, " ".join(f"word{k}" for k in range(round(10 ** (1 + 2.7 * i / 30) / 6)))) for i in range(1, 31)
    )),  # fmt: skip
    Case("TP-TEXT-LENGTH-OUTLIER", "near-equal answers of which one is three times the rest (6.4 robust sigmas)", (
        *(qa(i, f"Because {i} is {'so ' * (i % 3)}asked.") for i in range(1, 30)), qa(30, "Because " + "so " * 20 + "asked."),
    )),  # fmt: skip
    Case("TP-TEXT-LENGTH-OUTLIER", "a 26,000-character answer that is one sentence repeated", (
        *(qa(i) for i in range(1, 30)), qa(30, BANANA),
    ), instead="TP-TEXT-REPEATED-TARGET"),  # fmt: skip
    # TP-TEXT-TOO-LONG (the exact counts are pinned further down)
    Case("TP-TEXT-TOO-LONG", "a prompt/completion row over the limit", (pc(1), {"prompt": "Summarise:", "completion": LONG}), (2,),
         "Line 2 has ", tokenizer="bpe", max_len=64),
    Case("TP-TEXT-TOO-LONG", "a chat row over the limit", (chat(user("a"), assistant("A")), chat(user("b"), assistant(LONG))), (2,),
         "Line 2 has ", tokenizer="hf", max_len=64),
    Case("TP-TEXT-TOO-LONG", "rows within the limit", (pc(1), pc(2), {"prompt": SENTENCE, "completion": SENTENCE}), tokenizer="bpe", max_len=64),
    Case("TP-TEXT-TOO-LONG", "a preference pair within the limit whose rejected answer is not", (pair("Write.", "Short.", LONG),),
         tokenizer="bpe", max_len=64),
    # TP-TEXT-REJECTED-TOO-LONG
    Case("TP-TEXT-REJECTED-TOO-LONG", "a rejected answer over the limit, as a string and as messages through the template", (
        pair("Write.", "Short.", "Long."), pair("Write.", "Short.", LONG), conversational_pair("Write.", "Short.", LONG),
    ), (2, 3), "Line 2: its prompt and rejected answer have ", tokenizer="hf", max_len=64),  # fmt: skip
    Case("TP-TEXT-REJECTED-TOO-LONG", "both sides within the limit, both over it", (
        pair("Write.", "Short.", "Long."), pair("Write.", LONG, LONG + "More."),
    ), instead="TP-TEXT-TOO-LONG", tokenizer="bpe", max_len=64),  # fmt: skip
    # TP-TEXT-TRUNCATED-TARGET
    Case("TP-TEXT-TRUNCATED-TARGET", "a document to summarise longer than the limit", (pc(1), {"prompt": LONG, "completion": "Short."}), (2,),
         "Line 2's prompt alone has ", tokenizer="bpe", max_len=64),
    Case("TP-TEXT-TRUNCATED-TARGET", "a long answer to a short prompt", (pc(1), {"prompt": "Write.", "completion": LONG}), tokenizer="bpe", max_len=64),
    Case("TP-TEXT-TRUNCATED-TARGET", "a preference pair and a conversational prompt longer than the limit", (
        pair("Sky?", "Blue.", "Green."), pair(LONG, "Short.", "Long."), conversational_pair(LONG, "Short.", "Long."),
        {"prompt": [user(LONG)], "completion": [assistant("Short.")]},
    ), (2, 3, 4), "Line 2's prompt alone has ", tokenizer="hf", max_len=64),  # fmt: skip
    Case("TP-TEXT-TRUNCATED-TARGET", "plain text rows over the limit (all trained)", ({"text": LONG}, {"text": "A" + LONG}),
         instead="TP-TEXT-TOO-LONG", tokenizer="bpe", max_len=64),
    Case("TP-TEXT-TRUNCATED-TARGET", "a long second question after a short first", (
        chat(user("a"), assistant("A"), user(LONG), assistant("B")),
    ), instead="TP-TEXT-TOO-LONG", tokenizer="hf", max_len=64),  # fmt: skip
]  # fmt: skip


def hub_splits(tmp_path, train: tuple, test: tuple) -> Path:
    """A Hub dataset folder of two Parquet splits, ``data/train-00000-of-00001.parquet`` and the test one; the test
    split's path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "hub" / "data"
    folder.mkdir(parents=True)
    for split, rows in (("train", train), ("test", test)):
        pq.write_table(pa.Table.from_pylist(list(rows)), folder / f"{split}-00000-of-00001.parquet")
    return folder / "test-00000-of-00001.parquet"


def judged_split(path: Path, **options: object):
    """The subject of the split at ``path`` when its dataset's folder (two above it) is judged."""
    report = judge("text", [str(path.parent.parent)], **options)
    (subject,) = [s for s in report.subjects if s.path == str(path)]
    return subject


@pytest.mark.parametrize("case", CASES, ids=[f"{c.rule}-{'fires' if c.fires else 'silent'}-{c.name}" for c in CASES])
def test_a_rule_fires_at_the_lines_it_should_and_nowhere_else(case, tmp_path, tokenizers):
    options = {} if case.tokenizer is None else {"tokenizer": tokenizers(case.tokenizer), "max_len": case.max_len}
    if case.train is None:
        path = jsonl(tmp_path, *case.rows)
        subject = judged(path, **options)
    else:
        path = hub_splits(tmp_path, case.train, case.rows)
        subject = judged_split(path, **options)
    assert case.rule in subject.ran, subject.skipped
    hits = findings_of(subject, case.rule)
    assert lines_of(hits) == list(case.lines), [f.message for f in hits]
    for finding in hits:
        assert finding.level is LEVELS[case.rule]
        assert finding.file == str(path)
        assert cites_a_number(finding.evidence), finding.evidence
        assert finding.message.rstrip().endswith(".")
    if case.says:
        assert case.says in hits[0].message
    if case.instead is not None:
        assert findings_of(subject, case.instead), f"{case.instead} should fire in place of {case.rule}"
    if case.fires:
        assert subject.verdict in ((Verdict.FAIL,) if LEVELS[case.rule] is FAIL else (Verdict.WARN, Verdict.FAIL))


def test_every_text_rule_has_cases_both_ways_at_its_level():
    assert {rule.id: rule.level for rule in TEXT_RULES} == LEVELS
    for rule in LEVELS:
        assert any(c.rule == rule and c.fires for c in CASES), f"{rule} has no case where it fires"
        assert any(c.rule == rule and not c.fires for c in CASES), f"{rule} has no case where it must not fire"


# --- clean files of every shape -----------------------------------------------------------------------------------

CLEAN = {
    "text": (
        {"text": "The cat sat on the mat."},
        {"text": "Paris is the capital of France."},
        {"text": "Water boils at one hundred degrees."},
    ),
    "prompt_completion": (pc(1), pc(2), pc(3)),
    "instruction": (
        {"instruction": "Translate to English.", "input": "Bonjour", "output": "Hello."},
        {"instruction": "Name a colour.", "input": "", "output": "Blue."},
        {"instruction": "Name a fruit.", "output": "Apple."},
    ),
    "messages": (
        chat(system("Be brief."), user("Hi?"), assistant("Hello.")),
        chat(user("a?"), assistant("A."), user("b?"), assistant("B.")),
        chat(user("6 x 7?"), {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]}, tool("42"), assistant("42.")),
    ),
    "sharegpt": (
        sharegpt(("system", "Be brief."), ("human", "Hi?"), ("gpt", "Hello.")),
        sharegpt(("human", "a?"), ("gpt", "A."), ("human", "b?"), ("gpt", "B.")),
        sharegpt(("human", "6 x 7?"), ("function_call", "multiply"), ("observation", "42"), ("gpt", "42.")),
    ),
    "openai_chat": (  # the developer role, a tool call with null content and its result, tools beside the messages
        chat({"role": "developer", "content": "Be brief."}, user("Hi?"), assistant("Hello.")),
        {"tools": [{"type": "function", "function": {"name": "multiply", "parameters": {"type": "object"}}}],
         "messages": [user("6 x 7?"), {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                      "function": {"name": "multiply", "arguments": '{"a": 6, "b": 7}'}}]},
                      {"role": "tool", "tool_call_id": "c1", "content": "42"}, assistant("42.")]},
        chat({"role": "developer", "content": "Answer in French."}, user("Hello?"), assistant("Bonjour.")),
    ),
    "prompt_completion_conversational": (
        {"prompt": [user("What color is the sky?")], "completion": [assistant("It is blue.")]},
        {"prompt": [system("Be brief."), user("2+2?")], "completion": [assistant("4")]},
        {"prompt": [user("a?"), assistant("A."), user("b?")], "completion": [assistant("B.")]},
    ),
    "kto": (
        {"prompt": "The sky is", "completion": " blue.", "label": True},
        {"prompt": "The sky is", "completion": " green.", "label": False},
        {"prompt": [user("2+2?")], "completion": [assistant("4")], "label": True},
    ),
    "preference": (pair("What color is the sky?", "Blue.", "Green."), pair("2+2?", "4", "5"), pair("Capital of France?", "Paris.", "Lyon.")),
    "preference_conversational": (
        conversational_pair("What color is the sky?", "It is blue.", "It is green."),
        {"prompt": [system("Be brief."), user("2+2?")], "chosen": [assistant("4")], "rejected": [assistant("5")]},
        conversational_pair("Capital of France?", "Paris.", "Lyon."),
    ),
    "preference_implicit": (  # Anthropic's HH-RLHF; TRL's implicit conversational form; UltraFeedback's string prompt beside it
        {"chosen": "\n\nHuman: Sky?\n\nAssistant: Blue.", "rejected": "\n\nHuman: Sky?\n\nAssistant: Green."},
        {"chosen": [user("2+2?"), assistant("4")], "rejected": [user("2+2?"), assistant("5")]},
        {"prompt": "Capital?", "chosen": [user("Capital?"), assistant("Paris.")], "rejected": [user("Capital?"), assistant("Lyon.")]},
    ),
}
SHAPE_OF = {"sharegpt": "messages", "openai_chat": "messages", "prompt_completion_conversational": "prompt_completion", "kto": "prompt_completion",
            "preference_conversational": "preference", "preference_implicit": "preference"}  # fmt: skip
"""The shape a clean file's rows are counted as, where its name is not one."""


@pytest.mark.parametrize("shape", sorted(CLEAN))
def test_a_clean_file_of_every_shape_passes_with_no_finding(tmp_path, shape):
    path = jsonl(tmp_path, *CLEAN[shape])
    subject = judged(path)
    assert subject.findings == ()
    assert subject.verdict is Verdict.PASS
    assert subject.unjudged is None
    assert subject.ran == SMALL_FILE_RULES
    assert subject.summary["rows"] == 3
    assert subject.summary[f"rows_{SHAPE_OF.get(shape, shape)}"] == 3


@pytest.mark.parametrize("shape", sorted(CLEAN))
def test_a_clean_file_of_every_shape_passes_every_rule_with_a_tokenizer(tmp_path, shape, tokenizers):
    subject = judged(jsonl(tmp_path, *CLEAN[shape]), tokenizer=tokenizers("hf"), max_len=4096)
    assert subject.findings == ()
    assert subject.verdict is Verdict.PASS
    assert subject.ran == SMALL_FILE_RULES + LENGTH_RULES
    assert length_skips(subject) == ()
    assert subject.summary["rows_over_max_len"] == 0


# --- every bad-row kind the reader records, at its line, through its rule ----------------------------------------

KINDS = {
    "unparsable": ("TP-TEXT-MALFORMED", '{"prompt": "cut in ha'),
    "not-object": ("TP-TEXT-MALFORMED", '["a", "list"]'),
    "overlong-line": ("TP-TEXT-MALFORMED", {"prompt": "x" * 5000, "completion": "y"}),
    "unknown-shape": ("TP-TEXT-SHAPE", {"Prompt": "p", "Completion": "c"}),
    "wrong-type": ("TP-TEXT-SHAPE", {"prompt": "p", "completion": 42}),
    "empty-field": ("TP-TEXT-EMPTY", {"prompt": "p", "completion": ""}),
    "null-field": ("TP-TEXT-EMPTY", {"prompt": None, "completion": "c"}),
    "role-order": ("TP-TEXT-ROLES", chat(user("a"), user("b"), assistant("c"))),
    "no-assistant": ("TP-TEXT-NO-ASSISTANT", chat(system("s"), user("a"))),
    "no-user": ("TP-TEXT-ROLES", chat(system("s"), assistant("a"))),
    "unanswered": ("TP-TEXT-ROLES", chat(user("a"), assistant("b"), user("c"))),
    "same-pair": ("TP-TEXT-SAME-PAIR", pair("2+2?", "4", "4")),
    "tool-arguments": ("TP-TEXT-TOOL-ARGUMENTS", tool_chat('{"city": ')),
    "orphan-tool": ("TP-TEXT-TOOL-ORPHAN", chat(user("a"), tool("r"), assistant("b"))),
    "blank-line": ("TP-TEXT-FORMAT", ""),
    "document": ("TP-TEXT-DOCUMENT", None),
}
"""Problem kind -> the rule that reports it, and a line of that kind (written as line 3 of a file)."""


def test_every_problem_kind_has_a_case_and_a_rule():
    assert set(KINDS) == set(PROBLEM_KINDS)


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_bad_row_kind_is_found_at_its_line_by_its_rule(tmp_path, monkeypatch, kind):
    monkeypatch.setattr(reader, "MAX_TEXT_LINE_BYTES", 1000)
    rule, bad = KINDS[kind]
    if kind == "document":  # a JSON array, after two blank lines
        path = jsonl(tmp_path, "", "", "[", json.dumps(pc(1)) + ",", json.dumps(pc(2)), "]")
    else:
        path = jsonl(tmp_path, pc(1), pc(2), bad, pc(4))
    subject = judged(path)
    (finding,) = findings_of(subject, rule)
    assert finding.line == 3
    assert finding.level is LEVELS[rule]
    assert finding.evidence == f"line 3: {kind}"
    if kind == "document":
        assert "one JSON array" in finding.message
        assert subject.findings == (finding,)  # one finding, not one per line of the document
    else:
        assert finding.message.startswith(("Line 3", "The file has 1 blank line, the first at line 3"))


def test_an_overlong_line_is_named_with_its_size_and_the_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "MAX_TEXT_LINE_BYTES", 1000)
    row = {"text": "x" * 2000}
    path = jsonl(tmp_path, pc(1), row, pc(3))
    (finding,) = judged(path).findings
    assert (finding.rule_id, finding.line) == ("TP-TEXT-MALFORMED", 2)
    assert finding.message == f"Line 2 is {len(json.dumps(row)):,} bytes long, over the 1,000 bytes limit for one row."


# --- how many findings, and the count in the first ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "rows", "first", "start"),
    [
        (
            "TP-TEXT-DUPLICATE",
            [pc(1)] * 12,
            "Line 2 repeats line 1. 11 of 12 rows repeat an earlier row (92%); the first 5 are named here and 6 more.",
            2,
        ),
        ("TP-TEXT-MALFORMED", [pc(1)] + ["{"] * 12, "12 lines are not JSON objects; the first 5 are named here and 7 more.", 2),
        (
            "TP-TEXT-EMPTY",
            [{"prompt": f"p{i}", "completion": ""} for i in range(9)],
            "9 fields are empty or null; the first 5 are named here and 4 more.",
            1,
        ),
        (
            "TP-TEXT-SHAPE",
            [pc(1)] + [{"Prompt": f"p{i}", "completion": "c"} for i in range(7)],
            "7 rows have no known shape; the first 5 are named here and 2 more.",
            2,
        ),
        (
            "TP-TEXT-NO-ASSISTANT",
            [chat(user(f"q{i}")) for i in range(6)],
            "6 conversations have no assistant message; the first 5 are named here and 1 more.",
            1,
        ),
        (
            "TP-TEXT-ROLES",
            [chat(system("s"), assistant(f"a{i}")) for i in range(6)],
            "6 conversations have role problems; the first 5 are named here and 1 more.",
            1,
        ),
        (
            "TP-TEXT-MIXED-SHAPES",
            [pc(i) for i in range(10)] + [{"text": f"t{i}"} for i in range(8)],
            "8 of 18 rows are not of the main shape, prompt_completion (44%); the first 5 are named here and 3 more.",
            11,
        ),
    ],
)
def test_a_rule_with_many_hits_names_the_first_few_and_its_first_finding_counts_them_all(tmp_path, rule, rows, first, start):
    subject = judged(jsonl(tmp_path, *rows))
    hits = findings_of(subject, rule)
    assert lines_of(hits) == list(range(start, start + EXAMPLES))  # the first in file order, one finding each
    assert hits[0].message.endswith(first)
    assert all("are named here" not in f.message for f in hits[1:])
    assert all(f.values == hits[0].values for f in hits)


def test_exactly_the_limit_names_them_all_and_one_hit_counts_nothing(tmp_path):
    five = judged(jsonl(tmp_path, pc(1), *["{"] * EXAMPLES, name="five.jsonl"))
    assert len(five.findings) == EXAMPLES
    assert five.findings[0].message.endswith(f"{EXAMPLES} lines are not JSON objects; the first {EXAMPLES} are named here.")
    one = judged(jsonl(tmp_path, pc(1), "{", name="one.jsonl"))
    (finding,) = one.findings
    assert finding.message == "Line 2 is not valid JSON: Expecting property name enclosed in double quotes at column 2."


def test_the_number_of_examples_is_a_threshold(tmp_path):
    settings = replace(DEFAULT_SETTINGS, thresholds=DEFAULT_SETTINGS.thresholds.with_overrides({"TEXT_EXAMPLES": 2}))
    report = judge("text", [str(jsonl(tmp_path, *[pc(1)] * 6))], settings)
    hits = report.subjects[0].findings
    assert lines_of(hits) == [2, 3]
    assert hits[0].message == "Line 2 repeats line 1. 5 of 6 rows repeat an earlier row (83%); the first 2 are named here and 3 more."


def test_a_row_identical_to_an_earlier_row_is_counted_identical_and_named_with_it(tmp_path):
    """Lines 2 and 3 are byte for byte the same; line 1 differs from them only in case. Line 3 repeats line 2 exactly,
    though the first row it folds to is line 1: it is counted with the identical rows and named with line 2."""
    rows = ({"prompt": "Hello there", "completion": "Hi."}, {"prompt": "hello there", "completion": "hi."}, {"prompt": "hello there", "completion": "hi."})
    hits = findings_of(judged(jsonl(tmp_path, *rows)), "TP-TEXT-DUPLICATE")
    assert [f.message.split(".")[0] for f in hits] == [
        "Line 2 repeats line 1 after folding case, Unicode form and whitespace",
        "Line 3 repeats line 2",
    ]
    assert {f.evidence for f in hits} == {"1 identical to an earlier row, 1 equal to one only after folding case, Unicode form and whitespace"}


def test_the_duplicate_counts_of_a_real_file_add_up(corpus):
    """mlx-examples' wwdc25 train.jsonl: 1,800 rows, 437 byte-identical to an earlier one (164 groups), 477 repeats
    once case and whitespace are folded."""
    path = corpus / "public" / "datasets" / "text" / "ml-explore__mlx-examples__wwdc25_data_train.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    identical = len(lines) - len(set(lines))
    hits = findings_of(judged(path), "TP-TEXT-DUPLICATE")
    assert hits[0].values["count"] == 477
    assert hits[0].evidence == f"{identical} identical to an earlier row, {477 - identical} equal to one only after folding case, Unicode form and whitespace"
    assert identical == 437


# --- lengths, with real tokenizers ------------------------------------------------------------------------------


def test_prompt_completion_rows_count_prompt_then_answer_then_eos(tmp_path, built):
    """No chat template: a row is its prompt's tokens, its completion's, and the eos token (TRL's way)."""
    path_of_tokenizer = built("bpe")
    tokenizer = load_tokenizer(path_of_tokenizer)
    assert tokenizer.chat_template is None
    assert tokenizer.specials.eos is not None
    from tokenizers import Tokenizer  # the library itself agrees with the loaded tokenizer's counts

    assert len(Tokenizer.from_file(str(path_of_tokenizer)).encode(SENTENCE, add_special_tokens=False).ids) == count(tokenizer, SENTENCE)

    pairs = [(SENTENCE, SENTENCE), (SENTENCE, SENTENCE * 6), (SENTENCE * 6, SENTENCE), ("Name a colour.", "Blue.")]
    path = jsonl(tmp_path, *[{"prompt": p, "completion": c} for p, c in pairs])
    prompts = [count(tokenizer, p) for p, _ in pairs]
    totals = [count(tokenizer, p) + count(tokenizer, c) + 1 for p, c in pairs]
    limit = totals[0]  # row 1 is exactly at the limit: not over it
    assert prompts[1] < limit < totals[1]
    assert prompts[2] >= limit
    assert totals[3] < limit

    subject = judged(path, tokenizer=str(path_of_tokenizer), max_len=limit)
    assert subject.verdict is Verdict.FAIL
    too_long = findings_of(subject, "TP-TEXT-TOO-LONG")
    assert lines_of(too_long) == [2, 3]
    assert {f.level for f in too_long} == {WARN}
    lost = (totals[1] - limit) + (totals[2] - limit)
    assert too_long[0].message == (
        f"Line 2 has {totals[1]:,} tokens, over --max-len {limit:,}. 2 of 4 rows are over {limit:,} tokens (50%); the first 2 are named here."
    )
    assert too_long[1].message == f"Line 3 has {totals[2]:,} tokens, over --max-len {limit:,}."
    assert too_long[0].evidence.startswith(f"{lost:,} of {sum(totals):,} tokens (")
    assert too_long[0].values["lost_tokens"] == lost
    assert too_long[0].values["lost_share"] == pytest.approx(lost / sum(totals))
    (cut,) = findings_of(subject, "TP-TEXT-TRUNCATED-TARGET")
    assert (cut.line, cut.level) == (3, FAIL)
    assert cut.message == f"Line 3's prompt alone has {prompts[2]:,} tokens, so at --max-len {limit:,} none of its answer is trained."
    assert cut.evidence == f"prompt {prompts[2]:,} tokens, row {totals[2]:,}; limit {limit:,}"
    assert subject.summary["tokens"] == sum(totals)
    assert subject.summary["tokens_max"] == max(totals)
    assert subject.summary["max_len"] == limit
    assert subject.summary["rows_over_max_len"] == 2

    # A prompt of exactly --max-len tokens leaves no room for the answer; one token less does.
    at_the_prompt = judged(path, tokenizer=tokenizer, max_len=prompts[2])
    assert lines_of(findings_of(at_the_prompt, "TP-TEXT-TRUNCATED-TARGET")) == [3]
    above_the_prompt = judged(path, tokenizer=tokenizer, max_len=prompts[2] + 1)
    assert findings_of(above_the_prompt, "TP-TEXT-TRUNCATED-TARGET") == []


def test_instruction_rows_prompt_with_instruction_and_input(tmp_path, tokenizers):
    tokenizer = tokenizers("bpe")
    rows = [
        {"instruction": "Summarise.", "input": SENTENCE * 6, "output": "Short."},
        {"instruction": "Summarise.", "input": "", "output": SENTENCE * 10},
    ]
    prompts = [count(tokenizer, "Summarise.\n\n" + SENTENCE * 6), count(tokenizer, "Summarise.")]
    totals = [prompts[0] + count(tokenizer, "Short.") + 1, prompts[1] + count(tokenizer, SENTENCE * 10) + 1]
    limit = prompts[0]
    assert totals[1] > limit
    subject = judged(jsonl(tmp_path, *rows), tokenizer=tokenizer, max_len=limit)
    assert lines_of(findings_of(subject, "TP-TEXT-TRUNCATED-TARGET")) == [1]
    assert lines_of(findings_of(subject, "TP-TEXT-TOO-LONG")) == [1, 2]
    assert f"row {totals[0]:,}" in findings_of(subject, "TP-TEXT-TRUNCATED-TARGET")[0].evidence
    assert f"Line 2 has {totals[1]:,} tokens" in findings_of(subject, "TP-TEXT-TOO-LONG")[1].message


def zephyr(turns: list[dict]) -> str:
    """tests/tokenizer/build.CHAT_TEMPLATE, written out by hand: a role line, the content, eos closing each turn."""
    return "".join(f"<|{turn['role']}|>\n{turn['content']}</s>\n" for turn in turns)


def test_chat_rows_are_measured_through_the_folders_chat_template(tmp_path, built):
    folder = built("hf")
    tokenizer = load_tokenizer(folder)
    assert tokenizer.chat_template == build.CHAT_TEMPLATE
    conversations = [
        [system(SENTENCE), user(SENTENCE), assistant(SENTENCE)],
        [user(SENTENCE), assistant(SENTENCE * 10)],  # a long answer
        [user(SENTENCE * 10), assistant(SENTENCE)],  # a long question
        [user(SENTENCE), assistant(SENTENCE), user(SENTENCE * 10), assistant(SENTENCE)],  # answered before the long part
    ]
    for turns in conversations:
        assert tokenizer.render_chat(turns) == zephyr(turns)
    firsts = [next(k for k, t in enumerate(turns) if t["role"] == "assistant") for turns in conversations]
    totals = [count(tokenizer, zephyr(turns)) for turns in conversations]  # the template closes the answer with eos itself
    # the prompt runs to the first assistant turn's content: its role line is not trained on either
    prompts = [count(tokenizer, zephyr(turns[:first]) + "<|assistant|>\n") for turns, first in zip(conversations, firsts)]
    plain = count(tokenizer, f"{SENTENCE}\n\n{SENTENCE}") + count(tokenizer, SENTENCE) + 1
    assert totals[0] > plain  # the template's role lines and eos tokens are counted
    limit = totals[0]
    assert prompts[1] < limit < totals[1]
    assert prompts[2] >= limit
    assert prompts[3] < limit < totals[3]

    subject = judged(jsonl(tmp_path, *[chat(*turns) for turns in conversations]), tokenizer=str(folder), max_len=limit)
    too_long = findings_of(subject, "TP-TEXT-TOO-LONG")
    assert lines_of(too_long) == [2, 3, 4]
    assert [f.message.split(".")[0] for f in too_long] == [
        f"Line {n} has {totals[n - 1]:,} tokens, over --max-len {limit:,}" for n in (2, 3, 4)
    ]
    lost = sum(t - limit for t in totals if t > limit)
    assert too_long[0].evidence.startswith(f"{lost:,} of {sum(totals):,} tokens")
    (cut,) = findings_of(subject, "TP-TEXT-TRUNCATED-TARGET")
    assert (cut.line, cut.level) == (3, FAIL)
    assert cut.evidence == f"prompt {prompts[2]:,} tokens, row {totals[2]:,}; limit {limit:,}"
    assert subject.summary["tokens"] == sum(totals)


def test_preference_and_conversational_completion_rows_are_measured_as_trl_renders_them(tmp_path, built):
    """A preference row is its prompt and chosen answer (DPO renders prompt + chosen; the rejected answer, long here, is
    not counted); a conversational prompt and completion are one conversation trained from the completion, so its
    prompt runs to the completion's content, past an assistant turn inside the prompt."""
    tokenizer = load_tokenizer(built("hf"))
    asked, earlier = [user(SENTENCE)], [user(SENTENCE), assistant(SENTENCE), user(SENTENCE * 2)]
    rows = [
        pair(SENTENCE, SENTENCE * 2, LONG),
        {"prompt": asked, "chosen": [assistant(SENTENCE * 2)], "rejected": [assistant(LONG)]},
        {"chosen": [*asked, assistant(SENTENCE * 2)], "rejected": [*asked, assistant(LONG)]},
        {"prompt": earlier, "completion": [assistant(SENTENCE)]},
    ]
    lengths = measure(read_text_dataset(jsonl(tmp_path, *rows)), tokenizer)
    header = "<|assistant|>\n"
    chosen = count(tokenizer, zephyr([*asked, assistant(SENTENCE * 2)]))
    bos = specials_added(built("hf"))  # TRL tokenizes a row of strings with the tokenizer's own special tokens
    assert bos == 1
    assert tuple(lengths.total) == (
        bos + count(tokenizer, SENTENCE) + count(tokenizer, SENTENCE * 2) + 1, chosen, chosen,
        count(tokenizer, zephyr([*earlier, assistant(SENTENCE)])),
    )  # fmt: skip
    assert tuple(lengths.prompt) == (
        bos + count(tokenizer, SENTENCE), count(tokenizer, zephyr(asked) + header), count(tokenizer, zephyr(asked) + header),
        count(tokenizer, zephyr(earlier) + header),
    )  # fmt: skip
    assert lengths.templated == bytes([0, 1, 1, 1])


TRIMMING_TEMPLATE = (
    "{% for message in messages %}{{ '<|' + message['role'] + '|>\\n' + (message['content'] | trim) + eos_token + '\\n' }}{% endfor %}"
)
"""build.CHAT_TEMPLATE with each content trimmed, as Llama 3's template trims it."""


def _with_template(built, tmp_path, template: str):
    folder = shutil.copytree(built("hf"), tmp_path / "templated")
    (folder / "chat_template.jinja").write_text(template, encoding="utf-8")
    tokenizer = load_tokenizer(folder)
    assert tokenizer.chat_template == template
    return tokenizer


def test_the_answer_is_found_where_a_template_that_trims_puts_it(tmp_path, built):
    """The first question, trimmed, is not in the rendering as written, but begins the second, long one: the prompt
    is still the tokens before the first answer, not before the second."""
    tokenizer = _with_template(built, tmp_path, TRIMMING_TEMPLATE)
    turns = [user("Hi \n"), assistant("Sure."), user("Hi \n" + LONG), assistant("Sure.")]
    path = jsonl(tmp_path, chat(*turns))
    (prompt,) = measure(read_text_dataset(path), tokenizer).prompt
    assert prompt == count(tokenizer, "<|user|>\nHi</s>\n<|assistant|>\n")
    subject = judged(path, tokenizer=tokenizer, max_len=64)
    assert findings_of(subject, "TP-TEXT-TRUNCATED-TARGET") == []
    assert lines_of(findings_of(subject, "TP-TEXT-TOO-LONG")) == [1]


def test_an_answer_a_template_changes_past_finding_is_measured_as_the_contents(tmp_path, built):
    """A template that cuts every content to five characters cuts the mark too: the row falls back to its contents
    (the question alone, without the template's role lines), and is not accused on a guess."""
    tokenizer = _with_template(built, tmp_path, TRIMMING_TEMPLATE.replace("(message['content'] | trim)", "message['content'][:5]"))
    turns = [user("Hi"), assistant("Sure."), user(LONG), assistant("Sure.")]
    (prompt,) = measure(read_text_dataset(jsonl(tmp_path, chat(*turns))), tokenizer).prompt
    assert prompt == specials_added(built("hf")) + count(tokenizer, "Hi")  # as a row of strings: inside the bos


def test_a_row_the_tokenizer_cannot_encode_costs_that_row(tmp_path, tokenizers):
    path = jsonl(tmp_path, pc(1), {"prompt": "Say \ud800.", "completion": "No."}, {"prompt": LONG, "completion": "Yes."})
    subject = judged(path, tokenizer=tokenizers("sentencepiece"), max_len=64)
    assert subject.unjudged is None
    assert subject.notes == (
        "the tokenizer cannot encode 1 row, so its length is not judged: line 2 ('\\ud800' is a lone UTF-16 surrogate, not Unicode text)",
    )
    assert lines_of(findings_of(subject, "TP-TEXT-TRUNCATED-TARGET")) == [3]
    assert subject.summary["tokens_p50"] == subject.summary["tokens_max"]  # of the two rows measured, the longer: not a row of no tokens
    unmeasured = judged(jsonl(tmp_path, {"text": "\ud800"}, name="only.jsonl"), tokenizer=tokenizers("sentencepiece"), max_len=64)
    assert unmeasured.verdict is Verdict.NOT_CHECKED
    assert unmeasured.unjudged == "--max-len could not be judged: the tokenizer failed on this file ('\\ud800' is a lone UTF-16 surrogate, not Unicode text)"
    assert judged(jsonl(tmp_path, {"text": "\ud800"}, name="again.jsonl"), tokenizer=tokenizers("sentencepiece")).verdict is Verdict.PASS  # no limit asked


def test_shares_of_too_long_rows_count_only_the_rows_measured(tmp_path, tokenizers):
    rows = [{"text": "\ud800"}, {"text": "\udc00 too"}, {"text": f"One. {LONG}"}, {"text": f"Two. {LONG}"}, {"text": "Short."}]
    subject = judged(jsonl(tmp_path, *rows), tokenizer=tokenizers("sentencepiece"), max_len=64)
    first = findings_of(subject, "TP-TEXT-TOO-LONG")[0]
    assert "2 of 3 rows" in first.message  # the two rows the tokenizer could not encode are not rows of no tokens
    assert first.values["rows"] == 3


def test_chat_rows_without_a_template_are_measured_as_their_contents(tmp_path, tokenizers):
    tokenizer = tokenizers("sentencepiece")
    assert tokenizer.chat_template is None
    turns = [system("Be brief."), user(SENTENCE * 6), assistant("Yes."), user("And?"), assistant(SENTENCE)]
    before = count(tokenizer, f"Be brief.\n\n{SENTENCE * 6}")
    total = before + count(tokenizer, f"Yes.\n\nAnd?\n\n{SENTENCE}") + 1
    subject = judged(jsonl(tmp_path, chat(*turns)), tokenizer=tokenizer, max_len=before)
    (cut,) = findings_of(subject, "TP-TEXT-TRUNCATED-TARGET")
    assert cut.evidence == f"prompt {before:,} tokens, row {total:,}; limit {before:,}"
    assert subject.summary["tokens"] == total


def test_too_long_names_five_rows_and_counts_them_all(tmp_path, tokenizers):
    rows = [{"text": f"Row {i}. {LONG}"} for i in range(8)] + [{"text": "Short."}]
    subject = judged(jsonl(tmp_path, *rows), tokenizer=tokenizers("bpe"), max_len=64)
    hits = findings_of(subject, "TP-TEXT-TOO-LONG")
    assert lines_of(hits) == [1, 2, 3, 4, 5]
    assert hits[0].message.endswith("8 of 9 rows are over 64 tokens (89%); the first 5 are named here and 3 more.")
    assert findings_of(subject, "TP-TEXT-TRUNCATED-TARGET") == []  # every token of a text row is trained
    assert subject.verdict is Verdict.WARN


def test_without_a_tokenizer_both_length_rules_are_skipped_with_their_reason(tmp_path, tokenizers):
    varied = " ".join(f"Return the value of argument {i}." for i in range(40))  # long, and not one sentence repeated
    path = jsonl(tmp_path, pc(1), {"prompt": varied, "completion": varied})
    for options in ({}, {"max_len": 8}):
        subject = judged(path, **options)
        assert length_skips(subject) == (
            Skipped("TP-TEXT-TRUNCATED-TARGET", "no --tokenizer given"),
            Skipped("TP-TEXT-TOO-LONG", "no --tokenizer given"),
            Skipped("TP-TEXT-REJECTED-TOO-LONG", "no --tokenizer given"),
        )
        assert subject.verdict is Verdict.PASS  # the rules that could run passed it
        assert "tokens" not in subject.summary
    measured = judged(path, tokenizer=tokenizers("bpe"))
    assert length_skips(measured) == (
        Skipped("TP-TEXT-TRUNCATED-TARGET", "no --max-len given"),
        Skipped("TP-TEXT-TOO-LONG", "no --max-len given"),
        Skipped("TP-TEXT-REJECTED-TOO-LONG", "no --max-len given"),
    )
    assert measured.summary["tokens"] > 0
    assert "max_len" not in measured.summary


class _Failing:
    """A tokenizer whose library raises on this file."""

    chat_template = None

    def encode_batch(self, texts):
        raise RuntimeError("the library choked")


def test_a_tokenizer_that_fails_on_every_row_costs_the_length_rules_not_the_run(tmp_path):
    subject = judged(jsonl(tmp_path, pc(1), pc(1)), tokenizer=_Failing(), max_len=8)
    reason = "the tokenizer failed on this file (RuntimeError: the library choked)"
    assert length_skips(subject) == tuple(Skipped(rule, reason) for rule in LENGTH_RULES)
    assert lines_of(findings_of(subject, "TP-TEXT-DUPLICATE")) == [2]
    assert subject.ran == SMALL_FILE_RULES


# --- what once looked wrong (each a bug, mended) ---------------------------------------------------------------------------------------------


def test_one_conversation_with_two_role_problems_is_counted_once(tmp_path):
    (first, *_) = judged(jsonl(tmp_path, chat(assistant("A"), assistant("b")), chat(user("c"), assistant("C")))).findings
    assert first.rule_id == "TP-TEXT-ROLES"  # it starts with an assistant turn, and has no user turn
    assert "2 conversations" not in first.message


def test_a_conversation_with_no_assistant_turn_is_named_once_whatever_else_is_wrong_with_it(tmp_path):
    """Two user turns in a row and no answer: one finding, a FAIL, whose roles show why there is no answer."""
    subject = judged(jsonl(tmp_path, chat(user("a"), user("b")), chat(user("c"), {"role": "bot", "content": "C"}), chat(user("d"), assistant("D"))))
    assert [(f.rule_id, f.line) for f in subject.findings] == [("TP-TEXT-NO-ASSISTANT", 1), ("TP-TEXT-NO-ASSISTANT", 2)]
    assert "(its roles: 'user', 'bot')" in subject.findings[1].message
    assert subject.verdict is Verdict.FAIL


def test_rows_that_differ_in_prompt_and_in_answer_are_not_duplicates(tmp_path):
    rows = ({"prompt": "Complete: the sky is", "completion": "blue"}, {"prompt": "Complete: the sky", "completion": "is blue"})
    assert findings_of(judged(jsonl(tmp_path, *rows)), "TP-TEXT-DUPLICATE") == []


def test_the_length_rules_skipped_on_a_file_of_no_rows_do_not_say_no_tokenizer_was_given(tmp_path, tokenizers):
    subject = judged(jsonl(tmp_path, *document_lines(ARRAY[:3])), tokenizer=tokenizers("bpe"), max_len=64)
    assert [s.reason for s in subject.skipped if s.rule_id in LENGTH_RULES] != ["no --tokenizer given"] * 2


def test_the_document_finding_says_what_is_one_document(tmp_path):
    (finding,) = judged(jsonl(tmp_path, *document_lines(ARRAY[:3]))).findings
    assert not finding.message.startswith("Is ")


def test_mixed_shapes_names_an_instruction_row_in_english(tmp_path):
    (finding,) = judged(jsonl(tmp_path, pc(1), pc(2), {"instruction": "i", "output": "o"})).findings
    assert "a instruction row" not in finding.message


def test_duplicate_keys_hold_apart_texts_that_a_nul_between_them_would_join(tmp_path):
    """Keys are compared as their strings joined by NUL: a string holding a NUL itself is compared by its key's repr, so
    moving a NUL across a field's boundary makes another row, and the same NUL-holding row twice is still one."""
    rows = (
        {"prompt": "a\u0000b", "completion": "c"},
        {"prompt": "a", "completion": "b\u0000c"},
        {"prompt": "a\u0000b", "completion": "c"},
        chat(user("x\u0000"), assistant("y")),
        chat(user("x"), assistant("\u0000y")),
    )
    subject = judged(jsonl(tmp_path, *rows))
    assert lines_of(findings_of(subject, "TP-TEXT-DUPLICATE")) == [3]


def test_exact_duplicates_are_told_from_folded_ones_among_many_groups(tmp_path):
    """The exact check runs only within groups equal after folding: each row is still named with the row it repeats."""
    rows = [pc(k % 3) for k in range(6)] + [{"prompt": "WHAT is 0   plus 0?", "completion": " 0."}]
    by_line = {f.line: f.message for f in findings_of(judged(jsonl(tmp_path, *rows)), "TP-TEXT-DUPLICATE")}
    assert sorted(by_line) == [4, 5, 6, 7]
    assert "repeats line 1." in by_line[4] and "after folding" not in by_line[4]
    assert "repeats line 1 after folding" in by_line[7]
