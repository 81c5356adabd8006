"""Inline SVG charts: well-formed, one polyline per series, markers where their steps are, text escaped."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from tests.render.geometry import assert_labels_clear
from trainproof.io import figures
from trainproof.render.svg import BOTTOM, HEIGHT, LEFT, RIGHT, TOP, WIDTH, chart
from trainproof.report import Line, Marker

NS = {"svg": "http://www.w3.org/2000/svg"}
PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM


def line(values, steps=None, label="loss", css="train") -> Line:
    values = np.asarray(values, dtype=float)
    steps = np.arange(values.size, dtype=np.int64) * 10 if steps is None else np.asarray(steps, dtype=np.int64)
    return Line(label, steps, values, css)


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    return root


def polylines(root: ET.Element) -> list[ET.Element]:
    return root.findall("svg:polyline", NS)


def points(polyline: ET.Element) -> list[tuple[float, float]]:
    return [tuple(float(v) for v in pair.split(",")) for pair in polyline.get("points").split()]


def texts(root: ET.Element, css: str) -> list[ET.Element]:
    return [t for t in root.findall("svg:text", NS) if t.get("class") == css]


def title_text(root: ET.Element) -> str:
    return texts(root, "title")[0].text


def y_ticks(root: ET.Element) -> list[tuple[float, str]]:
    """(y, label) of the value-axis ticks, top to bottom."""
    found = [(float(t.get("y")), t.text) for t in texts(root, "tick") if t.get("text-anchor") == "end"]
    return sorted(found)


def test_a_chart_is_well_formed_svg_of_the_declared_size():
    root = parse(chart("Loss", [line([3.0, 2.0, 1.5, 1.2])], []))
    assert (root.get("width"), root.get("height"), root.get("viewBox")) == (str(WIDTH), str(HEIGHT), f"0 0 {WIDTH} {HEIGHT}")
    assert title_text(root) == "Loss"
    frame = root.find("svg:rect", NS)
    assert (frame.get("x"), frame.get("y"), frame.get("width"), frame.get("height")) == (str(LEFT), str(TOP), str(PLOT_W), str(PLOT_H))


@pytest.mark.parametrize("count", [1, 2, 3, 6])
def test_one_polyline_per_series_and_a_legend_only_for_several(count):
    lines = [line(np.linspace(2, 1, 20) + i, label=f"series {i}", css=f"eval eval{i}") for i in range(count)]
    root = parse(chart("Loss", lines, []))
    drawn = polylines(root)
    assert len(drawn) == count
    assert [p.find("svg:title", NS).text for p in drawn] == [f"series {i}" for i in range(count)]
    assert [p.get("class") for p in drawn] == [f"line eval eval{i}" for i in range(count)]
    assert [t.text for t in texts(root, "legend")] == ([f"series {i}" for i in range(count)] if count > 1 else [])


def test_points_map_steps_and_values_onto_the_plot_area():
    # Steps 0..100, values 1..3: the y axis is 1..3 padded by 5% of its span on each side.
    root = parse(chart("Loss", [line([3.0, 2.0, 1.0], steps=[0, 50, 100])], [], log_y=False))
    y0, y1 = 1 - 0.1, 3 + 0.1
    expected = [(LEFT + s / 100 * PLOT_W, TOP + (1 - (v - y0) / (y1 - y0)) * PLOT_H) for s, v in [(0, 3), (50, 2), (100, 1)]]
    assert points(polylines(root)[0]) == [(round(x, 1), round(y, 1)) for x, y in expected]
    assert points(polylines(root)[0]) == [(64.0, 30.1), (406.0, 111.0), (748.0, 191.9)]


def test_a_constant_series_is_drawn_across_the_middle():
    root = parse(chart("Loss", [line([2.0] * 5)], []))
    assert {y for _, y in points(polylines(root)[0])} == {TOP + PLOT_H / 2}


def test_a_marker_is_a_vertical_line_at_its_step():
    markers = [Marker(250, "TP-DIVERGE", "FAIL", "Loss diverged"), Marker(1500, "TP-GRAD-SPIKE", "WARN", "Spike")]
    root = parse(chart("Loss", [line(np.linspace(3, 1, 101), steps=np.arange(0, 1010, 10))], markers, x_range=(0, 2000)))
    drawn = root.findall("svg:line[@class]", NS)
    found = [m for m in drawn if m.get("class").startswith("marker")]
    assert [m.get("class") for m in found] == ["marker fail", "marker warn"]
    assert [float(m.get("x1")) for m in found] == [LEFT + 250 / 2000 * PLOT_W, LEFT + 1500 / 2000 * PLOT_W] == [149.5, 577.0]
    assert all(m.get("x1") == m.get("x2") and (m.get("y1"), m.get("y2")) == (str(TOP), str(TOP + PLOT_H)) for m in found)
    assert [m.find("svg:title", NS).text for m in found] == ["TP-DIVERGE at step 250: Loss diverged", "TP-GRAD-SPIKE at step 1,500: Spike"]


def test_a_marker_beyond_the_data_widens_the_step_axis():
    root = parse(chart("Loss", [line([3.0, 2.0, 1.0], steps=[0, 50, 100])], [Marker(200, "TP-X", "INFO", "note")]))
    assert [x for x, _ in points(polylines(root)[0])] == [LEFT, LEFT + PLOT_W / 4, LEFT + PLOT_W / 2]
    marker = root.find("svg:line[@class='marker info']", NS)
    assert float(marker.get("x1")) == LEFT + PLOT_W


def test_charts_given_one_x_range_share_their_step_axis():
    a = parse(chart("Loss", [line([3.0, 2.0], steps=[100, 200])], [], x_range=(0, 400)))
    b = parse(chart("Learning rate", [line([1e-3, 1e-3, 1e-4], steps=[0, 200, 400])], [], x_range=(0, 400)))
    xs_a = [x for x, _ in points(polylines(a)[0])]
    xs_b = [x for x, _ in points(polylines(b)[0])]
    assert xs_a[1] == xs_b[1] == LEFT + PLOT_W / 2
    assert [t.text for t in texts(a, "tick") if t.get("text-anchor") == "middle"] == ["0", "100", "200", "300", "400"]


@pytest.mark.parametrize(
    ("values", "log_y", "is_log"),
    [
        (np.geomspace(10, 0.01, 50), None, True),  # spans 1,000x: log
        (np.geomspace(10, 0.9, 50), None, True),  # 11x, just over a decade: log
        (np.geomspace(8, 1, 50), None, False),  # 8x: linear
        (np.concatenate([[0.0], np.geomspace(10, 0.01, 49)]), None, False),  # a zero: linear
        (np.geomspace(10, 0.01, 50) - 0.05, None, False),  # negatives: linear
        (np.geomspace(10, 0.01, 50), False, False),  # forced linear
        (np.geomspace(3, 0.3, 50), True, True),  # forced log
    ],
    ids=["wide positive", "just over a decade", "under a decade", "with zero", "with negatives", "forced linear", "forced log"],
)
def test_log_axis_chosen_from_the_spread_of_positive_values(values, log_y, is_log):
    root = parse(chart("Gradient norm", [line(values)], [], log_y=log_y))
    assert title_text(root) == ("Gradient norm (log scale)" if is_log else "Gradient norm")


def test_a_linear_axis_has_round_ticks_increasing_upwards():
    root = parse(chart("Loss", [line([0.0, 10.0])], [], log_y=False))
    ticks = y_ticks(root)
    assert [label for _, label in ticks] == ["10", "7.5", "5", "2.5", "0"]  # -0.5 to 10.5 in steps of 2.5
    grid = sorted(float(g.get("y1")) for g in root.findall("svg:line[@class='grid']", NS))
    assert [y + 4 for y in grid] == pytest.approx([y for y, _ in ticks], abs=0.11)


def test_a_log_axis_from_0_3_to_3_labels_values_not_exponents():
    root = parse(chart("Gradient norm", [line(np.geomspace(0.3, 3, 40))], [], log_y=True))
    ticks = y_ticks(root)
    labels = [float(label.replace(",", "")) for _, label in ticks]
    assert 3 <= len(labels) <= 12
    assert labels == sorted(labels, reverse=True)  # top to bottom: falling values
    assert all(0.2 <= v <= 4.5 for v in labels)  # values on the axis, not log10 exponents
    assert "1" in [label for _, label in ticks]
    one = next(y for y, label in ticks if label == "1")
    # 1 sits where log10 puts it: at the share log(3)/log(10) of the data's height from the top, padded by 5%.
    y0, y1 = math.log10(0.3), math.log10(3)
    pad = (y1 - y0) * 0.05
    assert one - 4 == pytest.approx(TOP + (1 - (0 - (y0 - pad)) / (y1 - y0 + 2 * pad)) * PLOT_H, abs=0.06)


def test_a_log_axis_drops_values_it_cannot_place():
    root = parse(chart("Gradient norm", [line([1.0, 0.0, -2.0, 10.0, 100.0])], [], log_y=True))
    assert [x for x, _ in points(polylines(root)[0])] == [LEFT, LEFT + PLOT_W * 3 / 4, LEFT + PLOT_W]


def test_non_finite_values_are_skipped_by_the_line_and_marked_at_their_steps():
    values = [2.0, math.nan, 1.5, math.inf, 1.0, -math.inf]
    root = parse(chart("Loss", [line(values, steps=[0, 20, 40, 60, 80, 100], label="training loss")], []))
    assert [x for x, _ in points(polylines(root)[0])] == [LEFT, LEFT + PLOT_W * 0.4, LEFT + PLOT_W * 0.8]
    crosses = texts(root, "nonfinite")
    assert [float(c.get("x")) for c in crosses] == [round(LEFT + PLOT_W * f, 1) for f in (0.2, 0.6, 1.0)]
    assert [c.text for c in crosses] == ["\u00d7"] * 3
    assert [c.find("svg:title", NS).text for c in crosses] == [f"training loss: not finite at step {s}" for s in (20, 60, 100)]


def test_at_most_200_non_finite_crosses_per_series():
    values = np.full(500, math.nan)
    values[::2] = np.linspace(2, 1, 250)
    root = parse(chart("Loss", [line(values)], []))
    assert len(texts(root, "nonfinite")) == 200


@pytest.mark.parametrize(
    "lines",
    [[], [line([])], [line([math.nan, math.inf, -math.inf])], [line([math.nan]), line([])]],
    ids=["no lines", "empty line", "nothing finite", "several with nothing finite"],
)
def test_nothing_finite_to_draw_is_no_chart(lines):
    assert chart("Loss", lines, [Marker(10, "TP-LOSS-NONFINITE", "FAIL", "NaN")]) == ""


def test_a_series_with_nothing_finite_beside_one_that_has_is_marked_but_not_drawn():
    root = parse(chart("Loss", [line([1.0, 2.0, 3.0], label="a"), line([math.nan, math.nan], label="b")], []))
    assert [p.find("svg:title", NS).text for p in polylines(root)] == ["a"]
    assert len(texts(root, "nonfinite")) == 2
    assert [t.text for t in texts(root, "legend")] == ["a", "b"]


def test_a_long_series_is_reduced_but_keeps_a_one_step_spike():
    values = np.full(100_000, 1.0) + np.random.default_rng(0).normal(0, 0.01, 100_000)
    values[54_321] = 50.0
    root = parse(chart("Loss", [line(values, steps=np.arange(100_000))], [], log_y=False))
    drawn = points(polylines(root)[0])
    assert len(drawn) <= 2 * PLOT_W
    top = min(drawn, key=lambda p: p[1])
    assert top == (round(LEFT + 54_321 / 99_999 * PLOT_W, 1), round(TOP + 0.05 / 1.1 * PLOT_H, 1))
    assert [x for x, _ in drawn] == sorted(x for x, _ in drawn)


def test_user_text_is_escaped():
    nasty = """<script>alert("x")</script> & 'quoted'"""
    svg = chart(nasty, [line([1.0, 2.0], label=nasty, css='a"b'), line([2.0, 1.0], label="b")], [Marker(10, nasty, "FAIL", nasty)])
    assert "<script>" not in svg
    root = parse(svg)
    assert root.get("aria-label") == nasty
    assert title_text(root) == nasty
    assert polylines(root)[0].find("svg:title", NS).text == nasty
    assert polylines(root)[0].get("class") == 'line a"b'
    assert texts(root, "legend")[0].text == nasty
    assert root.find("svg:line[@class='marker fail']/svg:title", NS).text == f"{nasty} at step 10: {nasty}"


def test_a_log_axis_is_named_as_log_and_a_linear_one_is_not():
    log = parse(chart("Loss", [line(np.geomspace(3.45, 1300, 40))], [], y_label="loss"))
    assert log.get("data-scale") == "log"
    assert [t.text for t in texts(log, "axis-label y")] == ["loss (log scale)"]
    flat = parse(chart("Loss", [line(np.linspace(3, 1, 40))], [], y_label="loss"))
    assert flat.get("data-scale") == "linear"
    assert [t.text for t in texts(flat, "axis-label y")] == ["loss"]


def circles(root: ET.Element) -> list[ET.Element]:
    return root.findall("svg:circle", NS)


def test_a_cited_level_is_a_dot_at_its_step_and_value_with_its_name_and_value_beside_it():
    from trainproof.report import Point

    values = np.geomspace(3.45, 1300, 31)
    root = parse(chart("Loss", [line(values, steps=np.arange(0, 310, 10))], [], points=[Point(150, float(values[15]), "best", "TP-X", "FAIL")]))
    (dot,) = circles(root)
    drawn = dict(zip(range(0, 310, 10), points(polylines(root)[0])))
    assert (float(dot.get("cx")), float(dot.get("cy"))) == drawn[150]  # on the curve, on the log axis
    assert dot.get("class") == "point fail"
    assert dot.find("svg:title", NS).text == f"TP-X best: {figures.num(values[15])} at step 150"
    assert [t.text for t in texts(root, "point-label fail")] == [f"best {figures.num(values[15])}"]
    assert_labels_clear(root)


def test_crowded_dots_keep_their_labels_apart_and_inside_the_plot():
    """Six levels at one corner of the plot, beside a marker's label: each label is placed clear of every other text
    or left to its dot's tooltip, never over another."""
    from trainproof.report import Point

    cited = [Point(0, 1.0 + 0.01 * i, f"level {i}", "TP-DIVERGE", "FAIL") for i in range(6)]
    root = parse(chart("Loss", [line([1.0, 2.0, 3.0, 2.5, 1.5], steps=[0, 10, 20, 30, 40])], [Marker(0, "TP-DIVERGE", "FAIL", "x")], points=cited))
    assert len(circles(root)) == 6
    boxes = assert_labels_clear(root)
    placed = [b for b in boxes if b.css == "point-label fail"]
    assert 2 <= len(placed) < 6  # the rest only in their dots' tooltips
    assert [c.find("svg:title", NS).text for c in circles(root)] == [f"TP-DIVERGE level {i}: {figures.num(1 + 0.01 * i)} at step 0" for i in range(6)]
    assert all(LEFT <= b.x0 and b.x1 <= LEFT + PLOT_W and TOP <= b.y0 and b.y1 <= TOP + PLOT_H for b in placed)


def test_a_level_a_log_axis_cannot_place_is_not_drawn():
    from trainproof.report import Point

    cited = [Point(10, 0.0, "start", "TP-X", "WARN"), Point(20, -1.0, "end", "TP-X", "WARN"), Point(30, math.nan, "best", "TP-X", "WARN")]
    root = parse(chart("Loss", [line(np.geomspace(1, 1000, 5))], [], log_y=True, points=cited))
    assert circles(root) == []
    assert texts(root, "point-label warn") == []
    linear = parse(chart("Loss", [line([-2.0, 1.0, 3.0])], [], points=cited[:2]))
    assert len(circles(linear)) == 2


def test_step_labels_at_the_right_edge_stay_inside_the_chart():
    root = parse(chart("Loss", [line([3.0, 2.0, 1.0], steps=[0, 500_000, 1_000_000])], []))
    last = [t for t in texts(root, "tick") if t.get("y") == str(HEIGHT - BOTTOM + 14)][-1]
    assert (last.text, last.get("text-anchor"), float(last.get("x"))) == ("1,000,000", "end", WIDTH - 1)
    assert_labels_clear(root)
