"""compare's HTML: each metric of the run overlaid on the baseline's, one scale for both; log axes ticked 1-2-5; named axes;
compare's markdown carries the table of ratios."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from tests.helpers import REPO
from tests.render.geometry import svgs
from trainproof.checks.thresholds import Thresholds
from trainproof.commands import judge_compare
from trainproof.commands.epoch import charts as epoch_charts
from trainproof.render import render
from trainproof.render.markdown import render as markdown
from trainproof.render.svg import chart, log_ticks, tick_label
from trainproof.report import Line, Report, Subject, Table, wants_log
from trainproof.runs.readers import read_run

NS = {"svg": "http://www.w3.org/2000/svg"}
RUN = "examples/gallery/bad_labels/seed0/trainer_state.json"
BASELINE = "examples/gallery/healthy/seed0/trainer_state.json"


def is_125(value: float) -> bool:
    """Is this 1, 2 or 5 times a power of ten?"""
    exponent = math.floor(math.log10(value) + 1e-9)
    return round(value / 10**exponent, 9) in (1, 2, 5)


@pytest.mark.parametrize(
    ("lo", "hi", "expected"),
    [
        (0.3, 3, [0.5, 1, 2]),
        (1e-5, 1e-3, [1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3]),
        (0.04, 3.5, [0.05, 0.1, 0.2, 0.5, 1, 2]),
        (0.003, 7, [0.01, 0.1, 1]),  # ten 1-2-5 values would fit: thinned to the powers of ten
        (1e-9, 1e9, [1e-9, 1e-6, 1e-3, 1, 1e3, 1e6, 1e9]),  # 19 powers: every third
    ],
    ids=["0.3-3", "1e-5-1e-3", "0.04-3.5", "0.003-7", "1e-9-1e9"],
)
def test_log_ticks_are_1_2_5_values_thinned_when_too_many(lo, hi, expected):
    ticks = log_ticks(lo, hi)
    assert ticks == expected
    assert all(is_125(t) and lo <= t <= hi for t in ticks)
    assert len(ticks) <= 8


def test_a_range_too_narrow_for_two_1_2_5_values_gets_round_linear_ticks():
    ticks = log_ticks(0.9, 1.1)
    assert ticks == [0.9, 0.95, 1.0, 1.05, 1.1]
    assert [tick_label(t) for t in ticks] == ["0.9", "0.95", "1", "1.05", "1.1"]


@pytest.mark.parametrize(
    ("value", "label"), [(0.2, "0.2"), (5.0, "5"), (1e-05, "1e-05"), (0.0005, "0.0005"), (2e-05, "2e-05"), (1000.0, "1000"), (1e6, "1e+06")]
)
def test_tick_labels_have_no_float_noise(value, label):
    assert tick_label(value) == label


def test_tick_labels_of_computed_1_2_5_values_have_no_float_noise():
    labels = [tick_label(t) for t in log_ticks(3e-7, 4e-5)]
    assert labels == ["5e-07", "1e-06", "2e-06", "5e-06", "1e-05", "2e-05"]


def test_a_log_chart_is_ticked_at_1_2_5_values_and_its_axes_are_named():
    svg = chart(
        "Loss",
        [Line("loss", np.arange(50) * 10, np.geomspace(3, 0.004, 50), "train")],
        [],
        log_y=True,
        x_label="epoch",
        y_label="eval_loss",
    )
    root = ET.fromstring(svg)
    assert root.get("data-scale") == "log"
    labels = [t.text for t in root.findall("svg:text[@class='tick'][@text-anchor='end']", NS)]
    assert labels
    assert all(is_125(float(label)) for label in labels)
    assert [t.text for t in root.findall("svg:text[@class='axis-label x']", NS)] == ["epoch"]
    assert [t.text for t in root.findall("svg:text[@class='axis-label y']", NS)] == ["eval_loss (log scale)"]


@pytest.fixture(scope="module")
def compare_html():
    import os

    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        report = judge_compare([RUN], BASELINE)
        return report, render("html", report)
    finally:
        os.chdir(cwd)


def series(root: ET.Element) -> dict[str, ET.Element]:
    return {p.find("svg:title", NS).text: p for p in root.findall("svg:polyline", NS)}


def test_compare_html_overlays_the_run_on_the_baseline_on_one_scale(compare_html):
    report, page = compare_html
    run, base = read_run(REPO / RUN), read_run(REPO / BASELINE)
    charts = svgs(page)
    # On its own the run's loss (2-3) is drawn linear and the baseline's (0.05-3) log; overlaid they share the log axis.
    alone = {
        which: svgs(render("html", Report("epoch", (Subject(which, charts=epoch_charts(r, (), (), Thresholds())),), "0")))
        for which, r in (("run", run), ("baseline", base))
    }
    assert alone["run"]["Loss"].get("data-scale") == "linear"
    assert alone["baseline"]["Loss (log scale)"].get("data-scale") == "log"
    assert wants_log(run.loss.values, base.loss.values)
    loss = charts["Loss: run against baseline (log scale)"]
    assert loss.get("data-scale") == "log"
    lines = series(loss)
    assert list(lines) == ["run: loss", "baseline: loss"]
    assert int(lines["run: loss"].get("data-points")) == len(run.loss.values) == 61
    assert int(lines["baseline: loss"].get("data-points")) == len(base.loss.values)
    assert lines["baseline: loss"].get("class") == "line base baseline"
    assert "baseline" not in lines["run: loss"].get("class")
    # Both lines are on one value axis: the baseline's last point lies far below the run's.
    last_y = {name: float(p.get("points").split()[-1].split(",")[1]) for name, p in lines.items()}
    assert last_y["baseline: loss"] - last_y["run: loss"] > 100
    ticks = [t.text for t in loss.findall("svg:text[@class='tick'][@text-anchor='end']", NS)]
    assert ticks == ["0.05", "0.1", "0.2", "0.5", "1", "2"]  # from the foot of the axis up
    assert [t.text for t in loss.findall("svg:text[@class='legend']", NS)] == ["run: loss", "baseline: loss"]
    assert [t.text for t in loss.findall("svg:text[@class='axis-label x']", NS)] == ["step"]
    assert [t.text for t in loss.findall("svg:text[@class='axis-label y']", NS)] == ["loss (log scale)"]
    # compare's findings are marked on the overlay, and named once.
    marked = {
        m.find("svg:title", NS).text.split(" at step")[0]
        for m in loss.findall("svg:line", NS)
        if (m.get("class") or "").startswith("marker")
    }
    assert {"TP-CMP-FLOOR", "TP-CMP-END", "TP-CMP-IMPROVEMENT"} <= marked
    assert {"TP-CMP-FLOOR", "TP-CMP-END"} <= {
        t.text for t in loss.iter("{http://www.w3.org/2000/svg}text") if "marker-label" in (t.get("class") or "")
    }
    # the dashed baseline is what tells the lines apart without colour
    assert re.search(r"svg \.line\.baseline \{[^}]*stroke-dasharray", page)


def test_compare_html_overlays_eval_loss_learning_rate_and_gradient_norm(compare_html):
    _, page = compare_html
    run, base = read_run(REPO / RUN), read_run(REPO / BASELINE)
    charts = svgs(page)
    expected = {
        "Eval loss: run against baseline (log scale)": (
            "eval_loss",
            run.eval_losses["eval_loss"].values,
            base.eval_losses["eval_loss"].values,
            "log",
        ),
        "Learning rate: run against baseline": ("learning rate", run.learning_rate.values, base.learning_rate.values, "linear"),
        # 0.14-1.56: just over a decade, so log
        "Gradient norm: run against baseline (log scale)": ("gradient norm", run.grad_norm.values, base.grad_norm.values, "log"),
    }
    for title, (name, mine, theirs, scale) in expected.items():
        root = charts[title]
        assert root.get("data-scale") == scale
        assert scale == ("log" if wants_log(mine, theirs) else "linear")
        lines = series(root)
        assert list(lines) == [f"run: {name}", f"baseline: {name}"]
        assert [int(p.get("data-points")) for p in lines.values()] == [int(np.isfinite(mine).sum()), int(np.isfinite(theirs).sum())]
        assert [t.text for t in root.findall("svg:text[@class='axis-label y']", NS)] == [name + (" (log scale)" if scale == "log" else "")]


def test_the_baseline_keeps_its_own_charts_and_the_run_has_no_unpaired_copy(compare_html):
    _, page = compare_html
    titles = [ET.fromstring(m).find("svg:text[@class='title']", NS).text for m in re.findall(r"<svg .*?</svg>", page, flags=re.S)]
    assert titles[:4] == [
        "Loss: run against baseline (log scale)",
        "Eval loss: run against baseline (log scale)",
        "Learning rate: run against baseline",
        "Gradient norm: run against baseline (log scale)",
    ]
    assert "run against baseline" not in " ".join(titles[4:])
    report, _ = compare_html
    run, baseline = report.subjects
    assert [chart.title for chart in run.charts] == [
        "Loss: run against baseline",
        "Eval loss: run against baseline",
        "Learning rate: run against baseline",
        "Gradient norm: run against baseline",
    ]  # the run's own, unpaired charts are not drawn beside the overlays
    assert [chart.title for chart in baseline.charts][:2] == ["Loss", "Learning rate"]  # the baseline keeps its own
    assert len(titles) == len(run.charts) + len(baseline.charts)


def test_compare_markdown_carries_the_ratio_table(compare_html):
    report, _ = compare_html
    body = markdown(report)
    assert "| verdict | run | floor | end | improved | baseline improved |\n|---|---|---|---|---|---|\n" in body
    assert "| FAIL | examples/gallery/bad\\_labels/seed0/trainer\\_state.json | 43.6x | 44.2x | 33% | 98% |" in body
    assert body.index("| verdict | run |") < body.index("| level | rule |")


def test_the_ratio_table_escapes_user_data_for_markdown():
    hostile = "runs/<script>x</script>|a_b @team #12/trainer_state.json"
    report = Report("compare", (Subject(hostile),), "0", table=Table(("verdict", "run", "floor"), (("FAIL", hostile, "2.0x"),)))
    body = markdown(report)
    row = next(line for line in body.splitlines() if line.startswith("| FAIL |"))
    assert "<script>" not in row
    assert "&lt;script&gt;" in row
    assert row.count(" | ") == 2
    assert "\\|a\\_b" in row
    assert "@&#8203;team" in row
    assert "#&#8203;12" in row


def test_a_ratio_table_too_long_for_the_comment_is_cut_and_counted():
    rows = tuple(("PASS", f"run{i:05d}/trainer_state.json", "1.0x") for i in range(5000))
    report = Report("compare", (Subject("x"),), "0", table=Table(("verdict", "run", "floor"), rows))
    body = markdown(report, max_chars=20_000)
    assert len(body) <= 20_000
    kept = sum(1 for line in body.splitlines() if line.startswith("| PASS |"))
    assert 0 < kept < 5000
    assert f"_{5000 - kept} more rows left out; see the full report._" in body


def test_epoch_charts_name_their_axes_by_the_log_s_unit_and_metric(tmp_path):
    path = tmp_path / "training_log.csv"
    path.write_text("epoch,learning_rate,loss,val_loss\n" + "".join(f"{i},0.005,{2 / (i + 1)},{2.5 / (i + 1)}\n" for i in range(12)))
    run = read_run(path)
    assert run.step_unit == "epoch"
    built = {c.title: c for c in epoch_charts(run, (), (), Thresholds())}
    assert {title: (c.x_label, c.y_label) for title, c in built.items()} == {
        "Loss": ("epoch", "loss"),
        "Learning rate": ("epoch", "learning rate"),
    }
    assert [line.label for line in built["Loss"].lines] == ["training loss (loss)", "val_loss"]  # val_loss on the loss's scale
    assert built["Loss"].log_y is built["Learning rate"].log_y is None  # decided as they are drawn, from the values
    page = render("html", Report("epoch", (Subject(str(path), charts=tuple(built.values())),), "0"))
    assert svgs(page)["Loss (log scale)"].get("data-scale") == "log"  # 0.17-2.5: more than a decade
    assert svgs(page)["Learning rate"].get("data-scale") == "linear"
    assert page.count('<text class="axis-label x"') == 2
    assert page.count(">epoch</text>") == 2
