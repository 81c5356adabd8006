"""The PR comment: a stable marker, escaped user data, and a hard length limit."""

from __future__ import annotations

import re

import pytest

from tests.helpers import REPO, decaying, hf_entries, noisy, write_hf_state
from trainproof.judge import judge_epoch
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
    findings = tuple(Finding("TP-GRAD-SPIKE", Level.WARN, f"Spike number {i} " + "x" * 300 + ".", "e" * 200, steps=(i,)) for i in range(2000))
    report = Report("epoch", (Subject(path="big.json", format="hf", findings=findings, ran=("TP-GRAD-SPIKE",)),), "0.0.0")
    body = render("markdown", report)
    assert len(body) <= MAX_CHARS
    left = int(re.search(r"_(\d+) more findings left out", body).group(1))
    assert left > 0
    assert body.count("| **WARN** |") + left == 2000
