"""What the tokenizer's and the text command's reports plot: tokens per line or row against the limit, coloured where
the length rule counted them, and the characters behind unknown tokens."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.helpers import REPO
from trainproof.commands import judge
from trainproof.render import render
from trainproof.render.svg import bars
from trainproof.report import Bars, Histogram

pytest.importorskip("sentencepiece")
TOKENIZER = str(REPO / "examples/tokenizer/tts_unigram.model")
TRANSCRIPTS = str(REPO / "examples/tokenizer/transcripts.txt")


def charts(report):
    return report.subjects[0].charts


def test_tokens_per_line_are_coloured_where_too_long_counted_them_with_the_limit_drawn():
    report = judge("tokenizer", [TRANSCRIPTS], tokenizer=TOKENIZER, max_tokens=40)
    lines = next(c for c in charts(report) if isinstance(c, Histogram))
    assert lines.title == "Tokens per line" and lines.y_label == "lines"
    assert int(lines.passed.sum() + lines.warned.sum() + lines.failed.sum()) == 43
    too_long = next(f for f in report.subjects[0].findings if f.rule_id == "TP-TOK-TOO-LONG")
    assert int(lines.warned.sum()) == too_long.values["count"] == 7 and not lines.failed.any()
    assert (40.0, "--max-tokens 40") in lines.limits
    assert lines.edges[0] <= 40 <= lines.edges[-1]


def test_without_a_limit_no_line_is_coloured_and_none_is_drawn():
    lines = charts(judge("tokenizer", [TRANSCRIPTS], tokenizer=TOKENIZER))[0]
    assert isinstance(lines, Histogram)
    assert not lines.warned.any() and not lines.failed.any()
    assert [label for _, label in lines.limits] == ["median 22"]


def test_the_characters_behind_unknown_tokens_are_counted_as_the_rule_names_them():
    report = judge("tokenizer", [TRANSCRIPTS], tokenizer=TOKENIZER)
    (chars,) = [c for c in charts(report) if isinstance(c, Bars)]
    finding = next(f for f in report.subjects[0].findings if f.rule_id == "TP-TOK-UNKNOWN")
    assert dict(zip(chars.labels, chars.counts)) == {"ß U+00DF": 2, "ü U+00FC": 2}
    assert "'ß' (2), 'ü' (2)" in finding.message
    assert chars.level == finding.level.name == "WARN"


def test_a_text_the_tokenizer_covers_has_no_character_chart(tmp_path):
    plain = tmp_path / "plain.txt"
    plain.write_text("".join(f"the cat sat on mat number {i}.\n" for i in range(30)))
    assert not [c for c in charts(judge("tokenizer", [str(plain)], tokenizer=TOKENIZER)) if isinstance(c, Bars)]


def test_tokens_per_row_of_a_fine_tuning_set_with_its_max_len():
    pytest.importorskip("tokenizers")
    tokenizer = str(REPO / "examples/text/tokenizer")
    report = judge("text", [str(REPO / "examples/text/chat.jsonl")], tokenizer=tokenizer, max_len=96)
    (rows,) = charts(report)
    assert isinstance(rows, Histogram) and rows.y_label == "rows"
    assert int(rows.passed.sum() + rows.warned.sum()) == 9
    assert int(rows.warned.sum()) == 1 == next(f for f in report.subjects[0].findings if f.rule_id == "TP-TEXT-TOO-LONG").values.get("count", 1)
    page = render("html", report)
    assert 'aria-label="Tokens per row (tokens)"' in page and "1 row flagged at WARN" in page
    assert charts(judge("text", [str(REPO / "examples/text/chat.jsonl")])) == ()


def test_bars_escape_their_names_and_count_nothing_as_nothing():
    drawn = bars(Bars("Characters <b>", ("<script>", "a&b"), (3, 1), "FAIL", note="x < y"))
    assert "<script>" not in drawn and "&lt;script&gt;" in drawn and "a&amp;b" in drawn
    assert drawn.count('class="bar fail"') == 2
    widths = [float(w) for w in re.findall(r'class="bar fail" x="[\d.]+" y="\d+" width="([\d.]+)"', drawn)]
    assert widths[0] == pytest.approx(3 * widths[1])
    assert bars(Bars("none", (), (), "WARN")) == ""
    assert np.isfinite(widths).all()
