"""Numbers as findings print them: few significant digits, steps with separators, stable."""

from __future__ import annotations

import math
from collections.abc import Sequence


def num(x: float) -> str:
    """A measured value with 4 significant digits: 0.0317, 7.55, 2.7e+03 -> 2,650."""
    if x is None:
        return "n/a"
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "0"
    if 1e-4 <= abs(x) < 1e4:
        return f"{x:.4g}"
    if abs(x) >= 1e4 and abs(x) < 1e9:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def step(s: int) -> str:
    return f"{int(s):,}"


def steps(values: Sequence[int], limit: int = 5) -> str:
    """'5, 10 and 15' or '5, 10, 15, 20, 25 and 7 more'."""
    shown = [step(s) for s in list(values)[:limit]]
    rest = len(values) - len(shown)
    if rest > 0:
        return ", ".join(shown) + f" and {rest} more"
    if len(shown) > 1:
        return ", ".join(shown[:-1]) + " and " + shown[-1]
    return shown[0] if shown else "none"


def ratio(x: float) -> str:
    """'0.05x', '5.4x', '4,513x'."""
    if x < 1:
        return f"{x:.2f}x"
    return f"{x:.1f}x" if x < 100 else f"{x:,.0f}x"


def pct(share: float) -> str:
    value = share * 100
    if value != 0 and abs(value) < 1:
        return f"{value:.2f}%"
    return f"{value:.0f}%" if abs(value) >= 10 else f"{value:.1f}%"


def duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"
