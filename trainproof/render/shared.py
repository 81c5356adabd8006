"""What several renderers need the same way: paths relative to the working directory, numbers JSON can carry."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any


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
