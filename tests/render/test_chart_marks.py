"""A run's HTML charts: log where a curve spans more than a decade, and the levels a finding cites marked as dots."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from tests.helpers import REPO
from tests.render.geometry import assert_labels_clear, svgs
from trainproof.checks.thresholds import Thresholds
from trainproof.cli import main
from trainproof.commands import judge_epoch
from trainproof.commands.epoch import charts as epoch_charts
from trainproof.render import render
from trainproof.report import Finding, Level, Report, Subject
from trainproof.runs.readers import read_run

NS = {"svg": "http://www.w3.org/2000/svg"}
LR_HOT = "examples/gallery/lr_hot/seed0/trainer_state.json"


def dots(root: ET.Element) -> dict[str, tuple[float, float]]:
    """Each dot's tooltip and its centre."""
    return {c.find("svg:title", NS).text: (float(c.get("cx")), float(c.get("cy"))) for c in root.findall("svg:circle", NS)}


def curve(root: ET.Element, label: str) -> list[tuple[float, float]]:
    line = next(p for p in root.findall("svg:polyline", NS) if p.find("svg:title", NS).text == label)
    return [tuple(float(v) for v in pair.split(",")) for pair in line.get("points").split()]


def log_axis(root: ET.Element):
    """The value -> y mapping the chart's log axis draws, read back from two of its tick labels."""
    ticks = sorted((float(t.text.replace(",", "")), float(t.get("y")) - 4) for t in root.findall("svg:text[@class='tick'][@text-anchor='end']", NS))
    (v0, y0), (v1, y1) = ticks[0], ticks[-1]
    return lambda v: y0 + (math.log10(v) - math.log10(v0)) / (math.log10(v1) - math.log10(v0)) * (y1 - y0)


@pytest.fixture(scope="module")
def lr_hot_page(tmp_path_factory):
    out = tmp_path_factory.mktemp("html") / "report.html"
    assert main(["epoch", str(REPO / LR_HOT), "--html", str(out)]) == 1
    return out.read_text()


def test_the_lr_hot_loss_chart_is_log_so_its_start_shows_below_where_it_ends(lr_hot_page):
    """The loss runs 3.45 -> 1,300 -> 159: on a linear axis the start and the end lie within an eighth of the plot of
    each other at its foot and the run seems to recover; on the log axis they are over half its height apart."""
    loss = svgs(lr_hot_page)["Loss (log scale)"]
    assert loss.get("data-scale") == "log"
    assert [t.text for t in loss.findall("svg:text[@class='axis-label y']", NS)] == ["loss (log scale)"]
    ticks = [t.text for t in loss.findall("svg:text[@class='tick'][@text-anchor='end']", NS)]
    assert ticks == ["5", "10", "20", "50", "100", "200", "500", "1000"]  # 1-2-5 values, by value, from the foot up
    at = log_axis(loss)
    training = curve(loss, "training loss (loss)")
    assert training[0][1] == pytest.approx(at(3.453), abs=0.2)  # the first point, drawn where 3.45 is
    height = float(loss.find("svg:rect[@class='frame']", NS).get("height"))
    assert at(3.453) - at(159.5) > 0.5 * height  # linear, they were 0.11 of it apart


def test_the_lr_hot_divergence_marks_its_start_best_and_end_levels_as_labelled_dots(lr_hot_page):
    loss = svgs(lr_hot_page)["Loss (log scale)"]
    marked = dots(loss)
    assert list(marked) == ["TP-DIVERGE start, best: 3.453 at step 1", "TP-DIVERGE end: 159.5 at step 285"]
    training = curve(loss, "training loss (loss)")
    assert marked["TP-DIVERGE start, best: 3.453 at step 1"] == training[0]  # the run's first point: where it started
    at = log_axis(loss)
    x_end, y_end = marked["TP-DIVERGE end: 159.5 at step 285"]
    assert y_end == pytest.approx(at(159.5), abs=0.2)
    assert training[-1][0] > x_end > training[len(training) * 9 // 10][0]  # in the last tenth, where the end level is measured
    labels = {t.text: t for t in loss.findall("svg:text", NS) if t.get("class") == "point-label fail"}
    assert set(labels) == {"start, best 3.453", "end 159.5"}
    boxes = {b.text: b for b in assert_labels_clear(loss)}
    for text, (x, y) in zip(("start, best 3.453", "end 159.5"), marked.values()):
        box = boxes[text]
        assert abs((box.x0 if labels[text].get("text-anchor") == "start" else box.x1) - x) < 8  # beside its own dot
        assert min(abs(box.y0 - y), abs(box.y1 - y)) < 20


def test_the_divergence_finding_gives_the_steps_its_levels_are_drawn_at(monkeypatch):
    monkeypatch.chdir(REPO)
    (finding,) = judge_epoch([LR_HOT]).subjects[0].findings
    assert finding.rule_id == "TP-DIVERGE"
    assert {k: finding.values[k] for k in ("start_step", "best_step", "end_step")} == {"start_step": 1, "best_step": 1, "end_step": 285}


def test_other_cited_levels_are_dots_on_their_own_curves(monkeypatch):
    """A gradient spike's max on the gradient norm, an eval set's best on its eval curve: each exactly on a drawn point."""
    monkeypatch.chdir(REPO)
    page = render("html", judge_epoch(["tests/data/hot", "tests/data/overfit"]))
    hot, overfit = page.split("<section id=\"input-2\">", 1)  # after the contents table, which names both
    grad = svgs(hot)["Gradient norm (log scale)"]
    (spike,) = dots(grad).items()
    assert spike[0] == "TP-GRAD-SPIKE max: 2650 at step 105"
    assert spike[1] in curve(grad, "gradient norm")
    assert min(y for _, y in curve(grad, "gradient norm")) == spike[1][1]  # the highest point of the curve
    evals = svgs(overfit)["Eval loss"]
    (best,) = dots(evals).items()
    assert best[0] == "TP-OVERFIT best eval: 1.25 at step 30"
    assert best[1] in curve(evals, "eval_loss")
    assert_labels_clear(grad)
    assert_labels_clear(evals)


def _csv_run(tmp_path, lr):
    path = tmp_path / "training_log.csv"
    path.write_text("step,learning_rate,loss\n" + "".join(f"{i},{lr(i)},{2 - i / 40}\n" for i in range(40)))
    return read_run(path)


@pytest.mark.parametrize(
    ("lr", "scale"),
    [
        (lambda i: 1e-3 * 0.85**i, "log"),  # 1e-3 decaying to 2e-6: over two decades
        (lambda i: 1e-3 * (1 - i / 39), "linear"),  # decays to exactly 0: a log axis cannot place it
        (lambda i: 1e-3 * (1 - i / 80), "linear"),  # 1e-3 to 5.1e-4: under a decade
    ],
    ids=["decades", "to zero", "under a decade"],
)
def test_the_learning_rate_chart_is_decided_by_the_same_rule_as_every_other(tmp_path, lr, scale):
    run = _csv_run(tmp_path, lr)
    built = {c.title: c for c in epoch_charts(run, (), (), Thresholds())}
    assert built["Learning rate"].log_y is None
    page = render("html", Report("epoch", (Subject("x", charts=tuple(built.values())),), "0"))
    (chart,) = [root for title, root in svgs(page).items() if title.startswith("Learning rate")]
    assert chart.get("data-scale") == scale
    assert chart.find("svg:text[@class='title']", NS).text == "Learning rate" + (" (log scale)" if scale == "log" else "")
    assert [t.text for t in chart.findall("svg:text[@class='axis-label y']", NS)] == ["learning rate" + (" (log scale)" if scale == "log" else "")]


def test_an_eval_set_s_level_is_drawn_only_on_a_chart_that_draws_that_set(tmp_path):
    """A finding about an eval set not on the chart marks its steps but draws no dot at a level of another curve."""
    path = tmp_path / "training_log.csv"
    rows = "".join(f"{i},{2 - i / 40},{2.1 - i / 50},{0.02 + i / 1000}\n" for i in range(40))
    path.write_text("step,loss,eval_loss,eval_other_loss\n" + rows)
    run = read_run(path)
    on_loss = Finding("TP-OVERFIT", Level.WARN, "x", "x", values={"eval_set": "eval_loss", "best_eval": 1.3, "best_eval_step": 30}, steps=(30,))
    elsewhere = Finding("TP-OVERFIT", Level.WARN, "y", "y", values={"eval_set": "nowhere", "best_eval": 0.5, "best_eval_step": 20}, steps=(20,))
    from trainproof.checks.registry import RULES

    built = {c.title: c for c in epoch_charts(run, (on_loss, elsewhere), RULES["epoch"], Thresholds())}
    evals = [c for c in built.values() if any(line.label == "eval_loss" for line in c.lines)]
    assert len(evals) == 1
    assert [(p.step, p.value, p.name) for p in evals[0].points] == [(30, 1.3, "best eval")]
    assert [m.step for m in evals[0].markers] == [30, 20]
    assert all(not c.points for c in built.values() if c is not evals[0])
    assert np.isfinite([p.value for c in built.values() for p in c.points]).all()
