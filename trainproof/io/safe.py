"""Text from the user's files made safe to print on one line of a terminal or a CI log.

Inside GitHub Actions every line a step prints is parsed for ``::`` workflow
commands, and a terminal obeys escape sequences. A file name, a metric name, a
TensorBoard tag or a logged string is the user's (or an attacker's) text: it
must never break a line, move the cursor, recolour the screen or reverse the
reading order. :func:`visible` spells every such character out as a
backslash escape, so the text stays readable and evidently odd.
:func:`replace_hidden` is the loop beneath it, which the JSON and JUnit
renderers share with their own spelling of a character.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# Control characters, format characters (bidi overrides, zero-width), line and
# paragraph separators, and lone surrogates (undecodable bytes of a file name).
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def spelled(char: str) -> str:
    """One character as the text report spells it: ``\\n``, ``\\x1b``, ``\\u202e``, ``\\U000e0001``."""
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def hidden(char: str) -> bool:
    """Whether one character is a control, format or separator character, or a lone surrogate."""
    return unicodedata.category(char) in _HIDDEN_CATEGORIES


@functools.lru_cache(maxsize=16)
def _suspect(keep: str) -> re.Pattern[str]:
    """What may be hidden: all but printable ASCII and the characters of ``keep``, so that text holding nothing else
    is scanned once, in C, with no call per character."""
    kept = "".join(f"\\U{ord(char):08x}" for char in keep)
    return re.compile(f"[^\\x20-\\x7e{kept}]")


def replace_hidden(text: str, spell: Callable[[str], str] = spelled, keep: str = "") -> str:
    """``text`` with every control, format or separator character and lone surrogate (see :func:`hidden`) but those
    in ``keep`` replaced by ``spell(char)``; every other character is left as it is."""
    if text.isascii() and text.isprintable():  # the usual name or message: nothing to look at
        return text

    def replace(match: re.Match[str]) -> str:
        char = match.group()
        return spell(char) if hidden(char) else char

    return _suspect(keep).sub(replace, text)


def visible(text: object, keep: str = "") -> str:
    """``text`` on one line with every control, format or separator character escaped.

    ``keep`` names characters to leave as they are (the markdown renderer keeps
    tab, CR and LF, which it then turns into plain spaces).
    """
    return replace_hidden(str(text), keep=keep)


def utf8_encodable(text: str) -> bool:
    """Whether ``text`` has a UTF-8 form: not when it holds lone surrogates (the bytes of a file name that are not
    UTF-8, as Python decodes them, or a JSON escape such as \\ud800), which a database, a C library or Arrow refuses."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


QUOTE_CHARS = 200
"""The most characters of one piece of user text (a transcript, a line of a file) a report quotes: enough to
recognise it, and a bound on what a file that is not what it claims (a credentials file behind a symlink) can put
into every output."""


def quoted(text: object, limit: int = QUOTE_CHARS) -> str:
    """``text`` as a quotation in a finding: its ``repr``, cut to ``limit`` characters with ``...`` and its length
    when longer (``'abc...' (1,234 characters)``)."""
    shown = str(text)
    if len(shown) <= limit:
        return repr(shown)
    return f"{shown[:limit]!r}... ({len(shown):,} characters)"
