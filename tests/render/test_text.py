"""The plain-text report's lines about each input (what the golden files do not pin one case at a time)."""

from __future__ import annotations

from trainproof.render import render
from trainproof.report import Report, Skipped, Subject


def skipped_lines(*skipped: Skipped) -> list[str]:
    subject = Subject(path="manifest.json", ran=("TP-A",), skipped=skipped)
    text = render("text", Report(command="data", subjects=(subject,), tool_version="0"), colour=False)
    return [line for line in text.splitlines() if line.startswith("  Skipped")]


def test_checks_skipped_for_one_reason_share_one_line():
    reason = "the manifest lists no clip"
    lines = skipped_lines(*(Skipped(f"TP-DATA-{i}", reason) for i in range(14)))
    assert lines == [f"  Skipped {', '.join(f'TP-DATA-{i}' for i in range(14))}: {reason}"]


def test_checks_skipped_for_different_reasons_keep_a_line_each_in_order_of_first_mention():
    lines = skipped_lines(Skipped("TP-A", "one"), Skipped("TP-B", "two"), Skipped("TP-C", "one"))
    assert lines == ["  Skipped TP-A, TP-C: one", "  Skipped TP-B: two"]
