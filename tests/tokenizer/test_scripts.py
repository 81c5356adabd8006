"""Which characters belong to scripts written without spaces between words, and how a line's units are counted."""

from __future__ import annotations

import pytest

from trainproof.tokenizer.scripts import names_in, script_of, units


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("him.", (1, 0)),
        ("Straße über", (2, 0)),
        ("Съешь же ещё", (3, 0)),
        ("한국어 문장은 띄어 쓴다", (4, 0)),  # Hangul is written with spaces: its words are words
        ("你好，世界。", (0, 4)),  # full-width punctuation is no unit of its own
        ("iPhone手机", (1, 2)),
        ("第3章 开始", (1, 4)),  # a digit between two Han characters is a word
        ("ユーザーのPCにログイン", (1, 10)),  # the long-vowel mark is Katakana
        ("ｶﾀｶﾅ", (0, 4)),  # half-width Katakana
        ("ภาษาไทย ง่าย", (0, 11)),  # vowel signs and tone marks are characters of the text too
        ("ພາສາລາວ", (0, 7)),
        ("ភាសាខ្មែរ", (0, 9)),
        ("မြန်မာ", (0, 6)),
        ("བོད་ཡིག", (0, 7)),
        ("𠀋𪚲", (0, 2)),  # Han beyond the Basic Multilingual Plane
        ("", (0, 0)),
    ],
)
def test_a_line_counts_its_words_and_its_characters_of_scripts_without_spaces(text, expected):
    assert units(text) == expected


def test_the_scripts_of_a_text_are_named_in_a_fixed_order():
    assert names_in(["สวัสดี", "ひらがな", "漢字"]) == ["Han", "Kana", "Thai"]
    assert names_in(["plain English", "Ελληνικά"]) == []


@pytest.mark.parametrize(
    ("ch", "script"),
    [("漢", "Han"), ("𠀋", "Han"), ("ひ", "Kana"), ("ｶ", "Kana"), ("ภ", "Thai"), ("ລ", "Lao"), ("ក", "Khmer"), ("မ", "Myanmar"),
     ("བ", "Tibetan"), ("a", None), ("한", None), ("Ж", None), ("。", None)],
)  # fmt: skip
def test_a_character_is_named_by_its_script_without_spaces_or_none(ch, script):
    assert script_of(ch) == script
