"""What several renderers need the same way: paths relative to the working directory, numbers and text JSON can carry."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from trainproof.io.safe import replace_hidden


def relative(path: str, base: str | None) -> str | None:
    """``path`` as a POSIX path relative to ``base`` when it is relative or lies under it; None when it lies elsewhere."""
    candidate = Path(path)
    if candidate.is_absolute():
        if base is None:
            return None
        try:
            candidate = candidate.relative_to(Path(base))
        except ValueError:
            return None
    return candidate.as_posix() if candidate.parts else "."


def json_number(value: Any) -> Any:
    """A value JSON can carry: a non-finite float as the string ``NaN``, ``Infinity`` or ``-Infinity``."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def _u_escaped(char: str) -> str:
    """One character as JSON's ``\\u`` escape: a surrogate pair above U+FFFF."""
    units = char.encode("utf-16-be", "surrogatepass")
    return "".join(f"\\u{int.from_bytes(units[i : i + 2], 'big'):04x}" for i in range(0, len(units), 2))


def json_text(document: Any) -> str:
    """``document`` as indented JSON, readable non-ASCII text kept, and every control, format or separator character
    (which ``json.dumps`` leaves raw above U+007E: DEL, C1, bidi controls, U+2028) as a ``\\u`` escape.

    The escapes change the bytes, not what a parser reads: every such character can only be inside a string, as JSON
    outside strings is ASCII. The line breaks kept are the indentation's: ``json.dumps`` escapes one in a string.
    """
    text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False)
    return replace_hidden(text, _u_escaped, keep="\n") + "\n"
