"""Whether a text is mostly one short unit repeated back to back: ``'Eat a banana!'`` 2,000 times.

:func:`repeated_run` finds the longest stretch of a text that is one unit
written over and over, when that stretch covers at least a share of the text,
exactly and in time linear in the text's length (in C string operations, but
for two passes over at most ``2 * max_unit`` characters in Python).

A stretch covering more than half of a text covers its middle: the
characters from ``(1 - share) * n`` to ``share * n``. So that middle is
periodic, with the unit's length as a period, and its smallest period divides
the unit's length (Fine and Wilf: two periods of a string at least as long as
their sum have their gcd as a period too). That smallest period is read off
the middle's first ``2 * max_unit`` characters (a KMP failure function),
checked against the whole middle in one comparison, and the stretch grown
from the middle outwards while each character equals the one a unit before it.
Before any of that, prose, code and JSON fail a search in C for the middle's
first ``max_unit`` characters within the next ``max_unit`` (a middle with such
a period always passes it), so they cost no Python loop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Run:
    """``unit`` written ``times`` times back to back (and part of once more, perhaps), from ``start``, ``length`` characters in all.

    The stretch is read from its first character that is not whitespace (unless its unit is all whitespace), so that
    its unit is named as it is written: ``'Eat a banana! '``, not ``' Eat a banana!'``.
    """

    unit: str
    times: int
    start: int
    length: int


def repeated_run(text: str, share: float, times: int, max_unit: int) -> Run | None:
    """The stretch of ``text`` that is one unit of at most ``max_unit`` characters repeated, when it covers at least
    ``share`` of the text (``share`` > 0.5) and holds the unit at least ``times`` times; None when there is none."""
    n = len(text)
    lo, hi = n - math.floor(share * n), math.floor(share * n)
    middle = text[lo:hi]
    longest = min(max_unit, n // times, len(middle) // 2)  # a unit longer than half the middle cannot be seen in it
    if longest < 1 or middle.find(middle[:longest], 1, 2 * longest) < 0:
        return None
    period = _smallest_period(middle[: 2 * longest])
    if period > longest or middle[period:] != middle[:-period]:
        return None
    end = _periodic_end(text, hi, period)
    start = n - _periodic_end(text[::-1], n - lo, period)
    unit = text[start : start + period]
    if not unit.isspace():  # read from its first word: 'Eat a banana! ' after 'Sure: ', not ' Eat a banana!'
        start += len(unit) - len(unit.lstrip())
    length = end - start
    if length < share * n or length // period < times:
        return None
    return Run(text[start : start + period], length // period, start, length)


def _smallest_period(text: str) -> int:
    """The smallest p such that every character of ``text`` equals the one p after it (its length when none is shorter)."""
    border = [0] * len(text)  # border[i]: the longest proper prefix of text[: i + 1] that is also its suffix
    k = 0
    for i in range(1, len(text)):
        while k and text[i] != text[k]:
            k = border[k - 1]
        if text[i] == text[k]:
            k += 1
        border[i] = k
    return len(text) - (border[-1] if text else 0)


def _periodic_end(text: str, start: int, period: int) -> int:
    """Where the stretch from ``start`` (at least ``period``) ends in which every character equals the one ``period``
    before it: compared in blocks that double while they agree and halve where they do not."""
    end, step = start, 64
    while end < len(text):
        stop = min(len(text), end + step)
        if text[end:stop] == text[end - period : stop - period]:
            end, step = stop, step * 2
        elif step > 1:
            step //= 2
        else:
            break
    return end
