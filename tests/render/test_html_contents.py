"""The HTML report of many runs opens with a contents table: each run's verdict badge, its counts, a link to it."""

from __future__ import annotations

import re
from xml.etree import ElementTree

from tests.helpers import REPO, decaying, hf_entries, write_hf_state
from trainproof.commands import judge_epoch
from trainproof.render import render
from trainproof.report import Level


def contents(page: str) -> ElementTree.Element | None:
    found = re.search(r'<nav id="contents">.*?</nav>', page, re.S)
    return None if found is None else ElementTree.fromstring(found.group(0))


def test_a_folder_of_runs_gets_a_contents_table_linking_every_run(monkeypatch):
    monkeypatch.chdir(REPO)
    report = judge_epoch(["tests/data/hot", "tests/data/overfit", "tests/data/healthy"])
    page = render("html", report)
    nav = contents(page)
    assert nav is not None
    rows = nav.findall("./table/tbody/tr")
    assert [row.find("./td/span").text for row in rows] == [s.verdict.value for s in report.subjects] == ["FAIL", "WARN", "PASS"]
    assert [row.find("./td/a").text for row in rows] == [s.path for s in report.subjects]
    for row, subject in zip(rows, report.subjects):
        counts = [int(cell.text) for cell in row.findall("./td")[2:]]
        assert counts == [subject.count(level) for level in (Level.FAIL, Level.WARN, Level.INFO)]
        target = row.find("./td/a").get("href")
        assert page.count(f'<section id="{target[1:]}">') == 1
    assert page.index('<nav id="contents">') < page.index("<section")
    assert page.count('href="#contents"') == 3


def test_one_run_has_no_contents_table(monkeypatch):
    monkeypatch.chdir(REPO)
    page = render("html", judge_epoch(["tests/data/hot"]))
    assert contents(page) is None and 'href="#contents"' not in page


def test_a_hostile_run_name_in_the_contents_stays_text(tmp_path):
    names = ['a"b <script>alert(1)<script>', "c&d ']\u202e"]
    for name in names:
        (tmp_path / name).mkdir()
        write_hf_state(tmp_path / name / "trainer_state.json", hf_entries(decaying(60, 3.0, 0.5).tolist()))
    page = render("html", judge_epoch([str(tmp_path / name) for name in names]))
    nav = contents(page)
    assert nav is not None and "<script>" not in page
    links = [a.text for a in nav.iter("a")]
    assert links[0].endswith('a"b <script>alert(1)<script>/trainer_state.json')
    assert links[1].endswith("c&d ']\\u202e/trainer_state.json"), "a format character spelled out, as every report does"
