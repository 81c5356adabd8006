"""Where a chart's text lands, read back from the SVG: each label's box from its anchor, its size and an estimated width.

The estimate is independent of the renderer's own and no wider (0.55 em a character, 0.3 em a stop, a space or a
narrow letter), so a layout that keeps its generous boxes apart keeps these apart too, while a label cut at the edge
or drawn over another shows here.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

SVG = "{http://www.w3.org/2000/svg}"
SIZES = {"title": 12.0, "marker-label": 9.0}  # every other text class is drawn at 10 px (the report's stylesheet)
EM, NARROW_EM = 0.55, 0.3
NARROW = frozenset(" .,:;'|!il")


@dataclass(frozen=True)
class Box:
    text: str
    css: str
    x0: float
    y0: float
    x1: float
    y1: float

    def overlaps(self, other: Box) -> bool:
        return self.x0 < other.x1 and other.x0 < self.x1 and self.y0 < other.y1 and other.y0 < self.y1


def text_boxes(root: ET.Element) -> list[Box]:
    """Every <text> of the chart as the box it covers (a label turned a quarter by ``rotate(-90 x y)`` as turned)."""
    boxes = []
    for t in root.iter(f"{SVG}text"):
        css = t.get("class") or ""
        text = "".join(t.itertext()) if t.find(f"{SVG}title") is None else (t.text or "")
        size = SIZES.get(css.split()[0], 10.0)
        width = size * sum(NARROW_EM if ch in NARROW else EM for ch in text)
        x, y = float(t.get("x")), float(t.get("y"))
        anchor = t.get("text-anchor", "start")
        left = {"start": x, "end": x - width, "middle": x - width / 2}[anchor]
        ascent, descent = 0.7 * size, 0.2 * size
        if t.get("transform"):
            turned = re.fullmatch(r"rotate\(-90 ([\d.]+) ([\d.]+)\)", t.get("transform"))
            assert turned, t.get("transform")
            assert (float(turned.group(1)), float(turned.group(2)), anchor) == (x, y, "middle"), t.get("transform")
            boxes.append(Box(text, css, x - ascent, y - width / 2, x + descent, y + width / 2))  # ascent to the left
        else:
            boxes.append(Box(text, css, left, y - ascent, left + width, y + descent))
    return boxes


def view(root: ET.Element) -> tuple[float, float, float, float]:
    x, y, w, h = (float(v) for v in root.get("viewBox").split())
    return x, y, x + w, y + h


def assert_labels_clear(root: ET.Element) -> list[Box]:
    """Every label inside the viewBox and no two overlapping (the non-finite crosses, drawn on purpose at their
    steps, aside); the boxes, for further checks."""
    x0, y0, x1, y1 = view(root)
    boxes = [b for b in text_boxes(root) if b.css != "nonfinite"]
    for b in boxes:
        assert x0 <= b.x0 <= b.x1 <= x1, f"{b.text!r} ({b.css}) leaves the viewBox across: {b}"
        assert y0 <= b.y0 <= b.y1 <= y1, f"{b.text!r} ({b.css}) leaves the viewBox down: {b}"
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b), f"{a.text!r} ({a.css}) overlaps {b.text!r} ({b.css}): {a} / {b}"
    return boxes


def svgs(page: str) -> dict[str, ET.Element]:
    """The first chart of each title in an HTML page, by its title (with any '(log scale)')."""
    found: dict[str, ET.Element] = {}
    for markup in re.findall(r"<svg .*?</svg>", page, flags=re.S):
        root = ET.fromstring(markup)
        found.setdefault(root.find(f"{SVG}text[@class='title']").text, root)
    return found
