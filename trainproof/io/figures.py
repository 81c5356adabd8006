"""Numbers as findings print them: few significant digits, steps with separators, stable."""

from __future__ import annotations

import math
import numbers


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
    if 1e-4 <= abs(x) and abs(float(f"{x:.4g}")) < 1e4:  # the range is chosen on the value as printed
        return f"{x:.4g}"
    if 1e-4 <= abs(x) and abs(round(x)) < 1e9:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def plural(n: float, noun: str, many: str | None = None) -> str:
    """A count or a measured amount with its noun in the form the number as printed asks: '1 clip', '2,650 clips',
    '1 token' (a rate that prints as 1), '0.5 tokens'. ``many``: a plural other than noun + 's' ('stretches')."""
    shown = f"{int(n):,}" if isinstance(n, numbers.Integral) else num(n)
    return f"{shown} {noun if shown == '1' else many or noun + 's'}"


def step(s: int) -> str:
    return f"{int(s):,}"



def ratio(x: float) -> str:
    """'0.05x', '5.4x', '4,513x', '3.2e+12x' (past a billion, where digits stop saying more), 'infx' never: 'inf x'."""
    if math.isnan(x):
        return "NaN x"
    if math.isinf(x):
        return "inf x"
    if x < 1:
        return f"{x:.2f}x"
    if round(x, 1) < 100:
        return f"{x:.1f}x"
    return f"{x:,.0f}x" if x < 1e9 else f"{x:.2g}x"


def pct(share: float) -> str:
    value = share * 100
    if value != 0 and abs(value) < 1:
        return f"{value:.2f}%"
    return f"{value:.0f}%" if abs(round(value, 1)) >= 10 else f"{value:.1f}%"


def duration(seconds: float) -> str:
    if round(seconds / 60) >= 60:
        return f"{seconds / 3600:.1f} h"
    if round(seconds) >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"
