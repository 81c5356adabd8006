"""A dataset's histograms in the HTML report: every label inside the chart and clear of the others, the count axis named,
and the rules' headings with their `code` as code."""

from __future__ import annotations

import html.parser
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from tests.render.geometry import assert_labels_clear
from trainproof.render.svg import histogram
from trainproof.report import Histogram

NS = {"svg": "http://www.w3.org/2000/svg"}


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def labels(root: ET.Element, css: str) -> list[ET.Element]:
    return [t for t in root.findall("svg:text", NS) if css in (t.get("class") or "").split()]


def near_the_edge() -> Histogram:
    """Durations as a small corpus with four 30 s clips draws them: the axis ends at 20.05 s, just past the 20 s limit,
    and the open last bin is as tall as the tallest."""
    edges = np.linspace(9.93, 20.048, 11)
    return Histogram(
        "Clip duration", "s", edges,
        passed=np.array([4, 3, 1, 0, 0, 0, 0, 0, 0, 0]), warned=np.array([0] * 9 + [4]), failed=np.zeros(10, dtype=int),
        limits=((0.5, "min 0.5 s"), (20.0, "max 20 s")), note="4 of 12 clips outside 0.5-20 s (TP-DATA-DURATION)", open_high=True,
    )  # fmt: skip


def test_a_limit_at_the_right_edge_keeps_its_label_whole_and_clear_of_the_open_bin_s():
    root = parse(histogram(near_the_edge()))
    boxes = {b.text: b for b in assert_labels_clear(root)}
    assert [t.text for t in labels(root, "limit-label")] == ["max 20 s"]  # the 0.5 s limit is off the axis
    assert [t.text for t in labels(root, "bin-label")] == ["\u2265 19.04"]
    limit = root.find("svg:line[@class='limit']", NS)
    x = float(limit.get("x1"))
    assert x > 740
    assert abs(boxes["max 20 s"].x1 - (x - 3)) < 0.01  # ends just left of its line, which the right edge leaves no room to pass
    assert boxes["\u2265 19.04"].x1 == 748.0  # at the open bin's outer edge


def test_the_count_axis_is_named():
    root = parse(histogram(near_the_edge()))
    (name,) = root.findall("svg:text[@class='axis-label y']", NS)
    assert name.text == "clips"
    assert name.get("transform") == f"rotate(-90 {name.get('x')} {name.get('y')})"
    frame = root.find("svg:rect[@class='frame']", NS)
    assert float(name.get("y")) == pytest.approx(float(frame.get("y")) + float(frame.get("height")) / 2, abs=0.06)


def test_histogram_labels_stay_inside_and_apart_wherever_limits_and_bins_fall():
    """Limits anywhere on the axis (two close together, at either edge), tall and short open bins, counts up to a
    million: every label inside the viewBox, none over another."""
    rng = np.random.default_rng(28)
    drawn = 0
    for _ in range(300):
        bins = int(rng.integers(3, 41))
        low = float(rng.choice([0.0, 0.5, 2.0, 100.0]))
        edges = low + np.cumsum(np.r_[0, np.full(bins, float(rng.choice([0.01, 0.2, 1.0, 37.5])))])
        scale = int(rng.choice([3, 30, 3_000, 2_000_000]))
        counts = [rng.integers(0, scale, bins) * (rng.random(bins) < 0.8) for _ in range(3)]
        counts[0][0] += 1
        picks = rng.uniform(edges[0], edges[-1], int(rng.integers(0, 4)))
        picks = np.r_[picks, [edges[-1] - (edges[-1] - edges[0]) * 0.004, edges[0]][: int(rng.integers(0, 3))]]
        limits = tuple((float(v), str(rng.choice(["max 20 s", "median 14.37", "+4 sigma", "-4 sigma", "min 0.5 s"]))) for v in picks)
        h = Histogram("Clip duration", "s", edges, *counts, limits=limits, note="n of m clips outside (TP-DATA-DURATION)" if rng.random() < 0.7 else "",
                      open_low=bool(rng.random() < 0.5), open_high=bool(rng.random() < 0.5))  # fmt: skip
        root = parse(histogram(h))
        assert_labels_clear(root)
        drawn += len(labels(root, "limit-label"))
    assert drawn > 300  # most limits keep their labels


# --- a real dataset, through the command ----------------------------------------------------------------------------


def write_corpus(root: Path) -> Path:
    """Eight clips of 10-12 s and four of 30 s (real 16-bit WAV, 4 kHz, one at 8 kHz), in the LJSpeech layout."""
    from statistics import NormalDist

    from tests.datasets.speech import write_audio

    durations = [round(11.0 + 0.7 * NormalDist().inv_cdf((k + 0.5) / 8), 3) for k in range(8)] + [30.0] * 4
    rows = []
    for i, seconds in enumerate(durations, 1):
        rate = 8000 if i == 1 else 4000
        t = np.arange(int(seconds * rate)) / rate
        write_audio(root / "wavs" / f"c{i:03d}.wav", 0.3 * np.sin(2 * np.pi * 180 * t) * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t)), rate)
        rows.append(f"c{i:03d}|Clip number {i} reads aloud.|Clip number {i} reads aloud.")
    (root / "metadata.csv").write_text("\n".join(rows) + "\n")
    return root


@pytest.fixture(scope="module")
def data_page(tmp_path_factory):
    pytest.importorskip("soundfile")
    from trainproof.cli import main

    corpus = write_corpus(tmp_path_factory.mktemp("corpus"))
    out = corpus.parent / "report.html"
    assert main(["data", str(corpus), "--no-cache", "--jobs", "1", "--html", str(out)]) in (0, 1)
    return out.read_text()


def test_the_data_command_s_duration_histogram_labels_are_whole_apart_and_the_counts_named(data_page, capsys):
    capsys.readouterr()
    (markup,) = [m for m in re.findall(r"<svg .*?</svg>", data_page, flags=re.S) if 'aria-label="Clip duration (s)"' in m]
    root = parse(markup)
    texts = {b.text for b in assert_labels_clear(root)}
    assert "max 20 s" in texts
    assert any(t.startswith("\u2265 ") for t in texts)  # the open bin of the 30 s clips
    assert [t.text for t in root.findall("svg:text[@class='axis-label y']", NS)] == ["clips"]


class Headings(html.parser.HTMLParser):
    """The <h3> headings of a page: their text, and the text of the <code> elements inside them."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[dict] = []
        self.depth: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "h3":
            self.found.append({"text": "", "code": []})
        if self.found and "h3" in self.depth + [tag]:
            self.depth.append(tag)
            if tag == "code":
                self.found[-1]["code"].append("")

    def handle_endtag(self, tag):
        if self.depth and self.depth[-1] == tag:
            self.depth.pop()

    def handle_data(self, data):
        if "h3" in self.depth:
            self.found[-1]["text"] += data
            if self.depth[-1] == "code":
                self.found[-1]["code"][-1] += data


def test_a_rule_heading_shows_its_option_as_code_not_backticks(data_page):
    parser = Headings()
    parser.feed(data_page)
    heading = next(h for h in parser.found if h["text"].startswith("TP-DATA-SAMPLE-RATE"))
    assert heading["code"] == ["TP-DATA-SAMPLE-RATE", "--sample-rate"]
    assert "`" not in heading["text"]
    assert heading["text"] == "TP-DATA-SAMPLE-RATE Clips have different sample rates, or not the rate asked for with --sample-rate."


@pytest.mark.parametrize(
    ("summary", "expected"),
    [
        ("more tokens than `--max-len`.", "more tokens than <code>--max-len</code>."),
        ("a `<b>` & `x` and `y`", "a <code>&lt;b&gt;</code> &amp; <code>x</code> and <code>y</code>"),
        ("a lone ` stays, <i> and ' escaped", "a lone ` stays, &lt;i&gt; and &#39; escaped"),
        ("no code at all", "no code at all"),
        ("bell `\x07` spelled", "bell <code>\\x07</code> spelled"),
    ],
)
def test_inline_code_is_escaped_html(summary, expected):
    from trainproof.render.html import inline_code

    assert inline_code(summary) == expected


def test_the_rules_markdown_keeps_an_option_as_a_code_span():
    from trainproof.checks.registry import all_rules
    from trainproof.checks.thresholds import Thresholds
    from trainproof.render.rules import markdown_table

    table = markdown_table(all_rules(), Thresholds())
    row = next(line for line in table.splitlines() if line.startswith("| `TP-DATA-SAMPLE-RATE`"))
    assert "with `--sample-rate`." in row
    assert all(line.count("`") % 2 == 0 for line in table.splitlines())
