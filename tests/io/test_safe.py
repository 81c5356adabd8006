"""User-derived text never breaks a line, starts a workflow command or reaches a terminal raw."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from tests.helpers import decaying, hf_entries, noisy, pb_field, tf_record, write_hf_state
from tests.cli.test_cli import run_cli
from trainproof.io.safe import replace_hidden, visible

INJECTION = "\n::error file=README.md,line=1::INJECTED\n"
# What a terminal or a CI log must never receive from a user's file.
RAW = ("\r", "\x1b", "\x85", "\u2028", "\u202e")


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain/path.json", "plain/path.json"),
        ("a\nb", "a\\nb"),
        ("a\r\n", "a\\r\\n"),
        ("\x1b[2J", "\\x1b[2J"),
        ("tab\there", "tab\\there"),
        ("caf\u00e9 \u65e5\u672c", "caf\u00e9 \u65e5\u672c"),
        ("\u202egnp.exe", "\\u202egnp.exe"),
        ("x\u2028y\x85z", "x\\u2028y\\x85z"),
        (os.fsdecode(b"r\xff.json"), "r\\udcff.json"),
    ],
)
def test_visible_spells_out_what_would_break_a_line_or_a_terminal(text, shown):
    assert visible(text) == shown
    assert visible(visible(text)) == shown, "escaping twice changes nothing"


def test_visible_leaves_what_it_is_told_to_keep():
    assert visible("a\tb\r\n\x1b\u202e", keep="\t\n\r") == "a\tb\r\n\\x1b\\u202e"


def test_replace_hidden_spells_only_hidden_characters_its_own_way():
    text = "a\tb\nc\x1b\u202e\U000e0041 caf\u00e9 \uffff"  # U+FFFF is unassigned (Cn), not hidden
    assert replace_hidden(text, lambda char: f"<{ord(char):x}>", keep="\n") == "a<9>b\nc<1b><202e><e0041> caf\u00e9 \uffff"
    assert replace_hidden("plain ascii") == "plain ascii"


def assert_clean(stream: str, raw_chars: tuple[str, ...] = RAW) -> None:
    """No line of ``stream`` is a workflow command but trainproof's own annotations, and nothing raw is in it."""
    for raw in raw_chars:
        assert raw not in stream, repr(raw)
    for line in stream.split("\n"):
        stripped = line.lstrip()
        if stripped.startswith("::"):
            command, _, rest = stripped[2:].partition(" ")
            assert command in ("error", "warning", "notice"), line
            properties = rest.split("::", 1)[0].split(",")  # user text in them is %-escaped: no raw ',' or '::'
            assert all(p.split("=", 1)[0] in ("file", "line", "title") for p in properties), line
            assert not stripped.startswith("::error file=README.md"), line
        assert not stripped.startswith("INJECTED"), line


@pytest.fixture
def in_actions(tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    return summary


def diverging_entries():
    loss = [1.4, 3.3, 24.2, 26.4, 20.1] + noisy(decaying(55, 9.0, 7.5), 0.1, 2).tolist()
    return hf_entries(loss, lr=2e-2)


def test_a_file_name_cannot_inject_a_workflow_command(capsys, tmp_path, in_actions):
    path = tmp_path / f"x{INJECTION}.jsonl"
    path.write_text("".join(json.dumps({"step": e["step"], "loss": e["loss"]}) + "\n" for e in diverging_entries() if "loss" in e))
    code, out, err = run_cli(capsys, "epoch", path, "--github")
    assert code == 1
    assert_clean(out)
    assert_clean(err)
    assert "\\n::error file=README.md" in out, "the name is still there, spelled out"


def test_a_missing_file_name_cannot_inject_through_stderr(capsys, tmp_path, in_actions):
    code, out, err = run_cli(capsys, "epoch", tmp_path / f"gone{INJECTION}\x1b[2J.json", "--github")
    assert code == 2
    assert_clean(out)
    assert_clean(err)
    assert len(err.strip().splitlines()) == 1


def test_a_jsonl_key_cannot_inject_through_the_error_line(capsys, tmp_path, in_actions):
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps({"step": s, INJECTION: 1.0, "\x1b[32mPASS\x1b[0m": 2}) + "\n" for s in range(10)))
    code, out, err = run_cli(capsys, "epoch", path, "--github")
    assert code == 2
    assert_clean(out)
    assert_clean(err)
    assert "has no loss column" in err


def test_hf_eval_set_names_with_cr_and_escapes_are_spelled_out(capsys, tmp_path, in_actions):
    entries = diverging_entries()
    for i, step in enumerate(range(50, 301, 50)):
        entries.append({"step": step, "epoch": 1.0, "eval_x\r::error::INJECTED\x1b[2J\u202e_loss": 3.0 + i})
    path = write_hf_state(tmp_path / "trainer_state.json", entries, max_steps=300)
    for argv in (["epoch", path, "--github"], ["epoch", path, "--github", "--json"], ["compare", path, path.parent, "--github"]):
        code, out, err = run_cli(capsys, *argv)
        assert code in (1, 2), err
        assert_clean(out)  # JSON too: every control and format character is a \u escape
        assert_clean(err)
        assert_clean(in_actions.read_text())  # the job summary


def test_a_bad_argument_cannot_inject_through_argparse(capsys):
    with pytest.raises(SystemExit) as exc:
        from trainproof.cli import main

        main(["epoch", "--format", f"x{INJECTION}", "log.json"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert_clean(err)
    assert len(err.strip().splitlines()) == 1


def test_the_compare_table_never_starts_a_line_with_a_path(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a relative name: the table's line would begin with the user's "::" itself
    run = write_hf_state(Path("::warning::x.json"), diverging_entries(), max_steps=300)
    base = write_hf_state(tmp_path / "base.json", hf_entries(noisy(decaying(60, 2.0, 0.6), 0.02, 1).tolist()), max_steps=300)
    code, out, _ = run_cli(capsys, "compare", run, base)
    assert code == 1
    assert not [line for line in out.splitlines() if line.lstrip().startswith("::")]


def tensorboard_events(points: list[tuple[int, str, float]]) -> bytes:
    """An event file of (step, tag, value) scalars, with real checksums."""
    header = pb_field(1, 1, struct.pack("<d", 1.7e9)) + pb_field(3, 2, b"brain.Event:2")
    records = [tf_record(header)]
    for step, tag, value in points:
        summary = pb_field(1, 2, pb_field(1, 2, tag.encode()) + pb_field(2, 5, struct.pack("<f", value)))
        records.append(tf_record(pb_field(1, 1, struct.pack("<d", 1.7e9 + step)) + pb_field(2, 0, step) + pb_field(5, 2, summary)))
    return b"".join(records)


def test_a_cr_in_a_tensorboard_tag_is_spelled_out(capsys, tmp_path, in_actions):
    points = []
    for entry in diverging_entries():  # every training-loss event carries the CR, as a careless logger would write it
        points += [(entry["step"], "train/loss\r", entry["loss"]), (entry["step"], "train/learning_rate", entry["learning_rate"])]
    run = tmp_path / "tb"
    run.mkdir()
    (run / "events.out.tfevents.1.host.0").write_bytes(tensorboard_events(points))
    code, out, err = run_cli(capsys, "epoch", run, "--github")
    assert code == 1, err
    assert_clean(out)
    assert_clean(err)
    assert "train/loss\\r" in out, "the tag is still there, spelled out"
    assert "\r" not in in_actions.read_text()


def test_a_symlink_loop_on_the_command_line_is_one_error_line(capsys, tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    code, _, err = run_cli(capsys, "epoch", loop)
    assert code == 2
    assert "internal error" not in err
    assert len(err.strip().splitlines()) == 1, err
