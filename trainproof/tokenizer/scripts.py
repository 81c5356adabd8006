"""Scripts written without spaces between words, where a whitespace word is a whole clause and a character is the unit.

In Chinese, Japanese, Thai, Lao, Khmer, Myanmar and Tibetan text a space
does not mark a word (Chinese and Japanese use none; the others put one
between phrases or sentences), so counting whitespace words makes a line of
thirty characters one "word". TP-TOK-FERTILITY counts each character of
these scripts as one unit instead, and each whitespace word of the rest of
the line (Latin, digits, Hangul) as one unit, as before. Only code points
are looked at: the blocks below, by number, not a library's idea of the
script.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

UNSEGMENTED: tuple[tuple[str, tuple[tuple[int, int], ...]], ...] = (
    ("Han", ((0x2E80, 0x2FDF), (0x3005, 0x3007), (0x3021, 0x3029), (0x3038, 0x303B), (0x3400, 0x4DBF), (0x4E00, 0x9FFF),
             (0xF900, 0xFAFF), (0x20000, 0x323AF))),
    ("Kana", ((0x3041, 0x309F), (0x30A0, 0x30FF), (0x31F0, 0x31FF), (0xFF66, 0xFF9F), (0x1AFF0, 0x1B16F))),
    ("Thai", ((0x0E00, 0x0E7F),)),
    ("Lao", ((0x0E80, 0x0EFF),)),
    ("Tibetan", ((0x0F00, 0x0FFF),)),
    ("Myanmar", ((0x1000, 0x109F), (0xA9E0, 0xA9FF), (0xAA60, 0xAA7F))),
    ("Khmer", ((0x1780, 0x17FF), (0x19E0, 0x19FF))),
)  # fmt: skip
"""Each script written without spaces and its Unicode blocks (first and last code point): Han with its radicals,
compatibility ideographs, iteration marks (々) and extensions; Hiragana and Katakana with their extensions and
half-width forms (ー, the long-vowel mark, is Katakana); the whole Thai, Lao, Tibetan, Myanmar and Khmer blocks, their
vowel signs and tone marks included (each is a character of the text: tokenizers spend tokens on them)."""


def _class(ranges: Iterable[tuple[int, int]]) -> str:
    return "".join(f"\\U{first:08x}-\\U{last:08x}" for first, last in ranges)


_ANY = re.compile(f"[{_class(r for _, ranges in UNSEGMENTED for r in ranges)}]")
_EACH = tuple((name, re.compile(f"[{_class(ranges)}]")) for name, ranges in UNSEGMENTED)
_WORD_CHARACTER = re.compile(r"[^\W_]")
LOWEST = min(first for _, ranges in UNSEGMENTED for first, _ in ranges)
"""No character below this is in a script without spaces (every one above is three or four bytes in UTF-8)."""


def units(text: str) -> tuple[int, int]:
    """The whitespace words of ``text`` outside the characters of scripts without spaces, and those characters.

    A word is what is left between spaces once those characters are taken
    out, if it holds a letter or a digit: "iPhone手机" is one word and two
    characters, "，" between two Han characters is neither (punctuation
    rides on its neighbours, as "." does on "him.").
    """
    rest, count = _ANY.subn(" ", text)
    if not count:
        return len(text.split()), 0
    return sum(1 for chunk in rest.split() if _WORD_CHARACTER.search(chunk)), count


def names_in(texts: Sequence[str]) -> list[str]:
    """The scripts without spaces that occur in ``texts``, in the order of UNSEGMENTED."""
    joined = "\n".join(texts)
    return [name for name, pattern in _EACH if pattern.search(joined)]


def script_of(ch: str) -> str | None:
    """The script without spaces a character is of (its name in UNSEGMENTED), or None for any other character."""
    if ord(ch) < LOWEST:
        return None
    return next((name for name, pattern in _EACH if pattern.match(ch)), None)
