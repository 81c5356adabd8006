"""The PR comment: a stable marker, escaped user data, and a hard length limit."""

from __future__ import annotations

import re

import pytest

from tests.helpers import REPO, decaying, hf_entries, noisy, write_hf_state
from trainproof.commands import judge_epoch
from trainproof.render import render
from trainproof.render.markdown import MAX_CHARS, escape, marker
from trainproof.report import Finding, Level, Report, Subject

HOSTILE = "runs|x <script>alert(1)<script> @someone #12 [link](javascript:x) *bold* `code`"


def test_first_line_is_a_stable_marker_per_command(monkeypatch):
    monkeypatch.chdir(REPO)
    body = render("markdown", judge_epoch(["tests/data/hot"]))
    assert body.splitlines()[0] == marker("epoch") == "<!-- trainproof:epoch -->"
    assert "| **FAIL** | `TP-DIVERGE` |" in body
    assert "<details>" in body


def test_user_strings_come_out_inert(tmp_path):
    folder = tmp_path / HOSTILE
    folder.mkdir()
    loss = [1.4, 3.3, 24.2, 26.4, 20.1] + noisy(decaying(55, 9.0, 7.5), 0.1).tolist()
    write_hf_state(folder / "trainer_state.json", hf_entries(loss))
    body = render("markdown", judge_epoch([str(folder)]))
    assert "<script>" not in body
    assert "&lt;script&gt;" in body
    assert "@someone" not in body
    assert "@&#8203;someone" in body
    assert "#12" not in body
    assert not re.search(r"(?<!\\)\]\(javascript", body), "a link survived"
    assert "\\[link\\](javascript" in body
    for line in body.splitlines():
        if line.startswith("| **"):
            cells = re.split(r"(?<!\\)\|", line)
            assert len(cells) == 6, line  # 4 columns: no pipe from the path escaped its cell


@pytest.mark.parametrize("text", ["a|b", "<b>", "@me", "x\ny", "back\\slash", "50%"])
def test_escape_is_safe_for_a_table_cell(text):
    out = escape(text)
    assert "\n" not in out
    assert "<b>" not in out
    assert not re.search(r"(?<!\\)\|", out)


def test_body_never_exceeds_the_limit_and_counts_what_was_left_out():
    """2,000 rules fired on one input: a row each, as many as fit, the rest counted."""
    findings = tuple(Finding(f"TP-RULE-{i}", Level.WARN, f"Spike number {i} " + "x" * 300 + ".", "e" * 200, steps=(i,)) for i in range(2000))
    report = Report("epoch", (Subject(path="big.json", format="hf", findings=findings, ran=("TP-GRAD-SPIKE",)),), "0.0.0")
    body = render("markdown", report)
    assert len(body) <= MAX_CHARS
    left = int(re.search(r"_(\d+) more findings left out", body).group(1))
    assert left > 0
    assert body.count("| **WARN** |") + left == 2000


def test_one_rule_with_more_places_than_fit_is_one_row_that_counts_the_places_left_out():
    findings = tuple(Finding("TP-GRAD-SPIKE", Level.WARN, f"Spike number {i} " + "x" * 300 + ".", "e" * 200, line=i + 1) for i in range(2000))
    report = Report("epoch", (Subject(path="big.json", format="hf", findings=findings, ran=("TP-GRAD-SPIKE",)),), "0.0.0")
    body = render("markdown", report)
    assert len(body) <= MAX_CHARS
    assert body.count("| **WARN** | `TP-GRAD-SPIKE` |") == 1
    shown = body.count("<br>· ")
    left = int(re.search(r"_(\d+) more places left out; see the full report\._", body).group(1))
    assert shown > 50
    assert shown + left == 2000
    assert "more findings left out" not in body


def _group(level_of=lambda i: Level.WARN, shared: str = "3 of 40 lines hold unknown tokens; the first 3 are named here.", **extra):
    """Three findings of one rule on ``t.txt``, the first carrying the shared sentence, as the tokenizer rules make them."""
    out = []
    for i, line in enumerate((4, 9, 12)):
        detail = f"Line {line} holds {i + 1} unknown tokens: 'w{i}'."
        out.append(
            Finding("TP-TOK-UNKNOWN", level_of(i), f"{detail} {shared}" if i == 0 and shared else detail, "7 unknown of 900 tokens", line=line, shared=shared if i == 0 else "", **extra)
        )
    return tuple(out)


def test_several_findings_of_one_rule_are_one_row_with_their_shared_sentence_once():
    report = Report("tokenizer", (Subject(path="t.txt", findings=_group(), ran=("TP-TOK-UNKNOWN",)),), "0.0.0")
    body = render("markdown", report)
    rows = [line for line in body.splitlines() if line.startswith("| **")]
    assert len(rows) == 1
    assert rows[0].startswith("| **WARN** | `TP-TOK-UNKNOWN` | t.txt | 3 of 40 lines hold unknown tokens; the first 3 are named here.<br>Evidence: 7 unknown of 900 tokens")
    assert rows[0].count("named here") == 1
    assert rows[0].count("Evidence:") == 1
    assert "<br>· Line 4 holds 1 unknown tokens: 'w0'.<br>· Line 9 holds 2" in rows[0]
    assert len(re.split(r"(?<!\\)\|", rows[0])) == 6


def test_a_group_row_takes_its_worst_level_and_marks_the_milder_places():
    findings = _group(level_of=lambda i: Level.FAIL if i == 1 else Level.WARN)
    findings = (findings[1], findings[0], findings[2])  # a subject lists its worst first
    body = render("markdown", Report("tokenizer", (Subject(path="t.txt", findings=findings),), "0.0.0"))
    rows = [line for line in body.splitlines() if line.startswith("| **")]
    assert len(rows) == 1
    assert rows[0].startswith("| **FAIL** | `TP-TOK-UNKNOWN` |")
    assert "<br>· **WARN** Line 4 holds" in rows[0]
    assert "<br>· Line 9 holds" in rows[0]
