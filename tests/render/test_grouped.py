"""A rule's findings on one input are one block in the text, markdown and HTML reports; SARIF and JUnit keep each.

The findings here are built as the rules build them: the first of a rule's
findings carries the sentence about all of them (``shared``) at the end of its
message, the others say only what they find at their own line.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest

from trainproof.checks.registry import by_id
from trainproof.render import render
from trainproof.render.grouped import blocks
from trainproof.report import Finding, Level, Report, Subject, grouped

SHARED = "3 of 40 lines hold unknown tokens (7.5%); the first 3 are named here. Characters: 'ß' (2)."


def unknown(line: int, detail: str, *, shared: str = "", level: Level = Level.WARN, evidence: str = "9 unknown of 900 tokens") -> Finding:
    return Finding(
        "TP-TOK-UNKNOWN", level, f"{detail} {shared}" if shared else detail, evidence, values={"count": 3}, line=line, shared=shared
    )


def three_lines(**first: object) -> tuple[Finding, ...]:
    return (
        unknown(4, "Line 4 holds 2 unknown tokens: 'Straße'.", shared=SHARED, **first),  # type: ignore[arg-type]
        unknown(9, "Line 9 holds 1 unknown token: 'Fluß'."),
        unknown(12, "Line 12 holds 1 unknown token: 'süß'."),
    )


def report_of(*findings: Finding, path: str = "t.txt", command: str = "tokenizer", rules: tuple = ()) -> Report:
    ran = tuple(dict.fromkeys(f.rule_id for f in findings))
    return Report(command, (Subject(path=path, format="text", findings=findings, ran=ran),), "0.0.0", rules=rules)


def heads(text: str) -> list[str]:
    return re.findall(r"^  \[(?:FAIL|WARN|INFO)\] (\S+)  ", text, flags=re.MULTILINE)


# --- the model ----------------------------------------------------------------------


def test_a_findings_shared_sentences_must_end_its_message():
    with pytest.raises(ValueError, match="shared"):
        Finding("TP-X", Level.WARN, "Line 4 is bad. 3 lines are bad.", "e", shared="3 lines are worse.")


def test_detail_is_the_message_without_its_shared_sentences():
    first = three_lines()[0]
    assert first.detail == "Line 4 holds 2 unknown tokens: 'Straße'."
    assert first.message == f"{first.detail} {SHARED}"
    assert three_lines()[1].detail == three_lines()[1].message


def test_grouping_keeps_each_rule_where_its_worst_finding_is_and_gathers_the_rest():
    worse = unknown(9, "Line 9 holds 1 unknown token: 'Fluß'.", level=Level.FAIL)
    spike = Finding("TP-GRAD-SPIKE", Level.WARN, "A spike.", "e")
    a, _, c = three_lines()
    groups = grouped((worse, spike, a, c))  # a subject lists its worst first
    assert [g.rule_id for g in groups] == ["TP-TOK-UNKNOWN", "TP-GRAD-SPIKE"]
    assert groups[0].findings == (worse, a, c)
    assert groups[0].level is Level.FAIL
    assert groups[0].shared == SHARED


def test_a_subject_counts_rules_at_their_worst_level_not_places():
    subject = Subject(
        path="t.txt", findings=(unknown(9, "x", level=Level.FAIL), *three_lines(), Finding("TP-TOK-NUMBERS", Level.WARN, "n", "e"))
    )
    assert (subject.count(Level.FAIL), subject.count(Level.WARN), subject.count(Level.INFO)) == (1, 1, 0)


# --- text -------------------------------------------------------------------------------


def test_text_prints_one_block_with_the_shared_sentence_once_then_each_line():
    text = render("text", report_of(*three_lines()))
    assert heads(text) == ["TP-TOK-UNKNOWN"]
    block = text[text.index("  [WARN]") : text.index("  Checks ran")]
    assert block == (
        f"  [WARN] TP-TOK-UNKNOWN  {SHARED}\n"
        "         Evidence: 9 unknown of 900 tokens\n"
        "         - Line 4 holds 2 unknown tokens: 'Straße'.\n"
        "         - Line 9 holds 1 unknown token: 'Fluß'.\n"
        "         - Line 12 holds 1 unknown token: 'süß'.\n"
    )
    assert "Findings: 0 FAIL, 1 WARN, 0 INFO." in text


def test_text_gives_each_line_its_evidence_when_they_differ():
    findings = tuple(
        Finding("TP-TEXT-MALFORMED", Level.FAIL, f"Line {n} is not valid JSON: {why}." + (" 2 lines are not JSON objects; the first 2 are named here." if n == 1 else ""),
                f"line {n}: unparsable", line=n, shared="2 lines are not JSON objects; the first 2 are named here." if n == 1 else "")
        for n, why in ((1, "Expecting value at column 14"), (2, "Extra data at column 86"))
    )  # fmt: skip
    text = render("text", report_of(*findings, path="d.jsonl", command="text"))
    assert heads(text) == ["TP-TEXT-MALFORMED"]
    assert (
        "  [FAIL] TP-TEXT-MALFORMED  2 lines are not JSON objects; the first 2 are named here.\n"
        "         - Line 1 is not valid JSON: Expecting value at column 14.\n"
        "           Evidence: line 1: unparsable\n"
        "         - Line 2 is not valid JSON: Extra data at column 86.\n"
        "           Evidence: line 2: unparsable\n"
    ) in text
    assert "Findings: 1 FAIL, 0 WARN, 0 INFO." in text


def test_text_says_a_finding_once_when_the_others_differ_only_in_their_line():
    shared = "3 rows have no known shape; the first 3 are named here."
    detail = "Line {} has none of the fields of a training example (it has 'role', 'content')."
    findings = tuple(
        Finding(
            "TP-TEXT-SHAPE",
            Level.FAIL,
            detail.format(n) + (f" {shared}" if n == 3 else ""),
            f"line {n}: unknown-shape",
            line=n,
            shared=shared if n == 3 else "",
        )
        for n in (3, 7, 11)
    )
    text = render("text", report_of(*findings, path="d.jsonl", command="text"))
    assert (
        f"  [FAIL] TP-TEXT-SHAPE  {shared}\n"
        "         - Line 3 has none of the fields of a training example (it has 'role', 'content').\n"
        "           Evidence: line 3: unknown-shape\n"
        "         The same at lines 7 and 11.\n"
    ) in text
    assert text.count("has none of the fields") == 1


def test_text_names_the_file_under_the_input_and_a_step_when_there_is_no_line(tmp_path):
    clips = tuple(
        Finding("TP-DATA-MISSING", Level.FAIL, f"wavs/c{n}.wav does not exist." + (" 2 of 9 listed clips are missing (22%); the first 2 are named here." if n == 1 else ""),
                f"line {n}: resolved to wavs/c{n}.wav", line=n, file=f"{tmp_path}/ds/metadata.csv", shared="2 of 9 listed clips are missing (22%); the first 2 are named here." if n == 1 else "")
        for n in (1, 5)
    )  # fmt: skip
    text = render("text", report_of(*clips, path=f"{tmp_path}/ds", command="data"))
    assert "         - metadata.csv:1  wavs/c1.wav does not exist.\n" in text
    assert "         - metadata.csv:5  wavs/c5.wav does not exist.\n" in text
    evals = tuple(
        Finding("TP-EVAL-NONFINITE", Level.FAIL, f"The eval loss ({name}) is not a finite number.", f"{name} NaN at step 300", steps=(300,))
        for name in ("a", "b")
    )
    text = render("text", report_of(*evals, path="run", command="epoch"))
    assert "         - step 300  The eval loss (a) is not a finite number.\n" in text


def test_a_block_whose_findings_share_no_sentence_is_headed_by_the_rules_summary():
    rule = by_id("TP-TOK-NUMBERS")
    findings = (
        Finding(
            "TP-TOK-NUMBERS",
            Level.WARN,
            "3-digit numbers are split 2 ways: 600 as 6|0|0, 200 as 200.",
            "8 distinct 3-digit numbers in 2 groupings",
            line=359,
        ),
        Finding(
            "TP-TOK-NUMBERS",
            Level.WARN,
            "4-digit numbers are split 2 ways: 8868 as 8|8|6|8, 2012 as 201|2.",
            "11 distinct 4-digit numbers in 2 groupings",
            line=9,
        ),
    )
    text = render("text", report_of(*findings, rules=(rule,)))
    assert f"  [WARN] TP-TOK-NUMBERS  {rule.summary}\n         - line 359  3-digit numbers are split 2 ways" in text
    assert "  [WARN] TP-TOK-NUMBERS  2 findings.\n" in render("text", report_of(*findings))  # a report that knows no rules


def test_a_block_is_at_its_worst_level_and_marks_the_milder_lines():
    findings = three_lines()
    worst = unknown(9, "Line 9 holds 1 unknown token: 'Fluß'.", level=Level.FAIL)
    text = render("text", report_of(worst, findings[0], findings[2]))
    assert heads(text) == ["TP-TOK-UNKNOWN"]
    assert f"  [FAIL] TP-TOK-UNKNOWN  {SHARED}\n" in text
    assert "         - Line 9 holds 1 unknown token: 'Fluß'.\n" in text
    assert "         - [WARN] Line 4 holds 2 unknown tokens: 'Straße'.\n" in text
    assert "Findings: 1 FAIL, 0 WARN, 0 INFO." in text


def test_a_single_finding_prints_as_it_always_did():
    finding = Finding("TP-TOK-UNKNOWN", Level.WARN, "Line 13 holds 4 unknown tokens: 'x'.", "4 unknown of 1,127 tokens (0.35%)", line=13)
    text = render("text", report_of(finding))
    assert (
        "  [WARN] TP-TOK-UNKNOWN  Line 13 holds 4 unknown tokens: 'x'.\n         Evidence: 4 unknown of 1,127 tokens (0.35%)\n  Checks"
        in text
    )


def test_user_text_in_a_block_is_spelled_out():
    findings = tuple(
        Finding("TP-DATA-MISSING", Level.FAIL, f"x{n}\x1b[31m\n::error::x does not exist." + (" 2 are missing." if n == 1 else ""), "e\rv", line=n,
                file=f"ds/a\x1b{n}.csv", shared="2 are missing." if n == 1 else "")
        for n in (1, 2)
    )  # fmt: skip
    text = render("text", report_of(*findings, path="ds", command="data"))
    assert "\x1b" not in text
    assert "\r" not in text
    assert not any(line.startswith("::") for line in text.splitlines())
    assert "a\\x1b1.csv:1" in text


# --- markdown and HTML show the same blocks; SARIF, JUnit and JSON keep every place -----------------------------------------


def test_html_has_one_row_per_rule_with_its_lines_listed():
    html = render("html", report_of(*three_lines(), Finding("TP-TOK-NUMBERS", Level.WARN, "n.", "e", line=2)))
    rows = re.findall(r"<tr><td><span class=\"badge (\w+)\">\w+</span></td><td><code>([A-Z0-9-]+)</code>", html)
    assert rows == [("WARN", "TP-TOK-UNKNOWN"), ("WARN", "TP-TOK-NUMBERS")]
    assert html.count("the first 3 are named here") == 1
    places = re.search(r'<ul class="places">(.*?)</ul>', html, flags=re.DOTALL).group(1)
    assert places.count("<li>") == 3
    assert "<li>Line 9 holds 1 unknown token: &#39;Fluß&#39;.</li>" in places


def test_html_escapes_the_places_it_lists():
    findings = tuple(
        Finding(
            "TP-DATA-MISSING",
            Level.FAIL,
            f"<b>{n}</b> does not exist." + (" 2 are missing." if n == 1 else ""),
            f"e{n}",
            line=n,
            file="ds/<script>.csv",
            shared="2 are missing." if n == 1 else "",
        )
        for n in (1, 2)
    )
    html = render("html", report_of(*findings, path="ds", command="data"))
    assert "<script>" not in html
    assert "<code>&lt;script&gt;.csv:1</code> &lt;b&gt;1&lt;/b&gt; does not exist." in html


def test_every_place_keeps_its_own_sarif_result_junit_failure_and_json_finding():
    findings = tuple(
        unknown(n, f"Line {n} holds 1 unknown token: 'w'.", level=Level.FAIL, shared=SHARED if n == 4 else "") for n in (4, 9, 12)
    )
    report = report_of(*findings)
    results = json.loads(render("sarif", report))["runs"][0]["results"]
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in results] == [4, 9, 12]
    assert results[0]["message"]["text"].startswith(f"Line 4 holds 1 unknown token: 'w'. {SHARED}")
    failures = ET.fromstring(render("junit", report).encode()).findall(".//failure")
    assert len(failures) == 3
    document = json.loads(render("json", report))
    assert [f["line"] for f in document["subjects"][0]["findings"]] == [4, 9, 12]
    assert "shared" not in document["subjects"][0]["findings"][0]  # the schema is as it was: each message says it all


def test_the_three_grouped_reports_count_the_same_blocks():
    report = report_of(*three_lines(), unknown(9, "x", level=Level.FAIL), Finding("TP-TOK-NUMBERS", Level.WARN, "n.", "e", line=2))
    subject = report.subjects[0]
    shown = blocks(subject)
    assert len(shown) == 2
    text = render("text", report)
    assert len(heads(text)) == len(shown)
    assert "Findings: 1 FAIL, 1 WARN, 0 INFO." in text
    assert len([line for line in render("markdown", report).splitlines() if line.startswith("| **")]) == len(shown)
    assert render("html", report).count('<tr><td><span class="badge') == len(shown)
