"""The tokenizer rules search all the transcripts at once; each search finds what a line-by-line one finds.

Random transcripts drawn from the characters that matter (spaces, brackets,
control and non-ASCII characters, digits, newlines inside a transcript) are
searched both ways; the line-by-line reference is written here, plainly.
"""

from __future__ import annotations

import random
import re

import pytest

from trainproof.checks import tokenizer as rules

PRINTABLE = set(chr(c) for c in range(0x20, 0x7F))
ALPHABET = [*"ab c1<>[]{}|\t\r\x00é€~9", "\ud800", " ", "  ", "x", "42", "AB", "[c]", "É", "İ", "\n"]


NEEDLES = ["<s>", "</s>", "<|x|>", "|", "é", "É", "\n", "ab", "aB", "[C]", "<0x41>", "İ"]
"""Strings a tokenizer could match whole: added tokens, non-ASCII ones (İ lowercases to two characters), one holding a
newline, plain words in two cases."""


def irregular_line_by_line(texts: list[str]) -> set[int]:
    return {i for i, text in enumerate(texts) if not text or set(text) - PRINTABLE or "  " in text or text[0] == " " or text[-1] == " "}


def holding_line_by_line(texts: list[str], needles: list[str]) -> set[int]:
    return {i for i, text in enumerate(texts) if any(needle.lower() in text.lower() for needle in needles)}


def first_lines_line_by_line(texts: list[str], pattern: re.Pattern[str]) -> dict[str, int]:
    where: dict[str, int] = {}
    for i, text in enumerate(texts):
        for match in pattern.finditer(text):
            where.setdefault(match.group(0), i)
    return where


class Texts:
    """Just what the searches read of a TokenizerContext."""

    def __init__(self, texts):
        self.text = type("T", (), {"texts": texts})()
        self.joined = rules._Joined.of(texts)


def random_texts(rng: random.Random, newlines: bool) -> list[str]:
    alphabet = ALPHABET if newlines else ALPHABET[:-1]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6))) for _ in range(rng.randint(1, 8))]


@pytest.mark.parametrize("newlines", [False, True], ids=["one line each", "newlines inside"])
def test_irregular_lines_are_those_a_line_by_line_test_finds(newlines):
    rng = random.Random(7)
    for _ in range(3000):
        texts = random_texts(rng, newlines)
        assert rules._irregular_lines(texts, rules._Joined.of(texts)) == irregular_line_by_line(texts), texts


@pytest.mark.parametrize("newlines", [False, True], ids=["one line each", "newlines inside"])
def test_lines_holding_a_matched_string_are_those_a_line_by_line_test_finds(newlines):
    rng = random.Random(5)
    for _ in range(3000):
        texts = random_texts(rng, newlines)
        needles = rng.sample(NEEDLES, rng.randint(0, 4))
        assert rules._lines_holding(texts, rules._Joined.of(texts), needles) == holding_line_by_line(texts, needles), (texts, needles)
        skip = set(rng.sample(range(len(texts)), len(texts) // 2))  # lines the caller already knows: never returned
        assert rules._lines_holding(texts, rules._Joined.of(texts), needles, skip) == holding_line_by_line(texts, needles) - skip


def test_hundreds_of_reserved_tokens_are_each_found_at_their_line():
    reserved = [f"<|reserved_{n}|>" for n in range(300)]
    texts = [f"line {i} says <|reserved_{i * 7}|> once" if i % 10 == 0 else f"line {i} <| is not a token |>" for i in range(400)]
    assert rules._lines_holding(texts, rules._Joined.of(texts), reserved) == {i for i in range(0, 400, 10) if i * 7 < 300}


@pytest.mark.parametrize("newlines", [False, True], ids=["one line each", "newlines inside"])
def test_words_are_what_splitting_each_line_finds(newlines):
    rng = random.Random(3)
    for _ in range(3000):
        texts = random_texts(rng, newlines)
        context = rules.TokenizerContext(None, Texts(texts).text, (), None)  # type: ignore[arg-type]
        assert context.words.tolist() == [len(text.split()) for text in texts], texts


@pytest.mark.parametrize("newlines", [False, True], ids=["one line each", "newlines inside"])
def test_each_number_is_found_at_its_first_line(newlines):
    rng = random.Random(11)
    for _ in range(3000):
        texts = random_texts(rng, newlines)
        got = rules._numbers_in(Texts(texts))
        assert got == first_lines_line_by_line(texts, re.compile("[0-9]+")), texts
        assert list(got) == list(first_lines_line_by_line(texts, re.compile("[0-9]+"))), "in order of first appearance"


def test_a_clean_text_has_no_irregular_line():
    texts = ["the quiet river", "carried a small boat 1984", "past old stone bridges [1] <b>."]
    assert rules._irregular_lines(texts, rules._Joined.of(texts)) == set()
    faults = ["ok", "", " lead", "trail ", "dou  ble", "tab\there", "<s> token", "end"]
    assert rules._irregular_lines(faults, rules._Joined.of(faults)) == {1, 2, 3, 4, 5}  # ASCII: each fault its own search
    assert rules._lines_holding(faults, rules._Joined.of(faults), ["<s>"]) == {6}
    accented = ["ok", "café", "fine"]
    assert rules._irregular_lines(accented, rules._Joined.of(accented)) == {1}


@pytest.mark.parametrize("lookup_max_id", [rules.LOOKUP_MAX_ID, 3], ids=["table", "sorted"])
def test_ids_among_a_set_are_those_isin_finds(monkeypatch, lookup_max_id):
    """The table of flags (and the sort past LOOKUP_MAX_ID) agrees with np.isin, for ids past the largest wanted, for
    -1, and for no id wanted."""
    import numpy as np

    monkeypatch.setattr(rules, "LOOKUP_MAX_ID", lookup_max_id)
    rng = np.random.default_rng(3)
    for _ in range(200):
        ids = rng.integers(-1, 40, size=int(rng.integers(0, 50)))
        wanted = np.unique(rng.integers(0, 30, size=int(rng.integers(0, 6))))
        assert rules._among(ids, wanted).tolist() == np.isin(ids, wanted).tolist(), (ids, wanted)
