"""File names that read as options (issue 27, item 6).

A hook or a workflow that expands a glob puts committed file names on the
command line; a file named ``--tokenizer=chat.jsonl`` there chooses the
tokenizer unless ``--`` comes first. After ``--`` every word is a path, for
every command; before it, a word that reads as an option and also names a
file or folder in the working directory is refused (exit 2), whoever wrote
the command line.
"""

from __future__ import annotations

import json
import math
import os
import shutil

import pytest

from tests.helpers import REPO
from trainproof.cli import JUDGING_COMMANDS, build_parser, main

GALLERY = REPO / "examples" / "gallery"
ROW = '{"messages": [{"role": "user", "content": "What is two and two?"}, {"role": "assistant", "content": "Four."}]}\n'


def healthy_log() -> str:
    """A metrics.jsonl training log that passes every check."""
    return "".join(json.dumps({"step": i, "loss": 2.0 * math.exp(-i / 60) + 0.5, "learning_rate": 1e-4}) + "\n" for i in range(1, 201))


def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def subjects(out: str) -> dict[str, str]:
    return {s["path"]: s["verdict"] for s in json.loads(out)["subjects"]}


# -- before --: refused when it names a file here --------------------------------------------------------------


def test_a_file_named_like_the_tokenizer_option_never_chooses_the_tokenizer(tmp_path, monkeypatch, capsys):
    """The attack: `--tokenizer=chat.jsonl` committed beside a tokenizer folder `chat.jsonl/`, on a command line
    without `--`. Before, the folder was loaded and every row measured with it (32 tokens per row)."""
    pytest.importorskip("tokenizers")
    pytest.importorskip("transformers")
    from tests.tokenizer.build import hf_folder

    monkeypatch.chdir(tmp_path)
    hf_folder(tmp_path / "chat.jsonl")
    (tmp_path / "--tokenizer=chat.jsonl").write_text(ROW)
    (tmp_path / "sft.jsonl").write_text(ROW)
    code, out, err = run(capsys, ["text", "--tokenizer=chat.jsonl", "sft.jsonl"])
    assert code == 2
    assert out == ""
    assert err == (
        "trainproof: error: --tokenizer=chat.jsonl: reads as an option but names a file or folder here; "
        "put -- before the paths (trainproof text [OPTIONS] -- PATH...)\n"
    )


def test_a_file_named_like_an_output_option_never_chooses_where_the_report_goes(tmp_path, monkeypatch, capsys):
    """`--json-file=report.jsonl` as a file name: before, the JSON report was written to report.jsonl."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "--json-file=report.jsonl").write_text(healthy_log())
    (tmp_path / "run.jsonl").write_text(healthy_log())
    code, out, err = run(capsys, ["epoch", "--json-file=report.jsonl", "run.jsonl"])
    assert code == 2
    assert "--json-file=report.jsonl: reads as an option but names a file or folder here; put -- before the paths" in err
    assert len(err.splitlines()) == 1
    assert not (tmp_path / "report.jsonl").exists()


@pytest.mark.parametrize("kind", ["file", "folder", "dangling symlink"])
def test_any_entry_of_that_name_is_ambiguous(tmp_path, monkeypatch, capsys, kind):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.jsonl").write_text(healthy_log())
    if kind == "file":
        (tmp_path / "--json").write_text("")
    elif kind == "folder":
        (tmp_path / "--json").mkdir()
    else:
        os.symlink("nowhere", tmp_path / "--json")
    code, out, err = run(capsys, ["epoch", "--json", "run.jsonl"])
    assert (code, out) == (2, "")
    assert err.startswith("trainproof: error: --json: reads as an option but names a file or folder here")


def test_the_message_shows_hidden_characters_of_the_name(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    name = "--x\x1b[2J\u202e.jsonl"
    (tmp_path / name).write_text("")
    code, _, err = run(capsys, ["epoch", name])
    assert code == 2
    assert err.startswith("trainproof: error: --x\\x1b[2J\\u202e.jsonl: reads as an option")
    assert "\x1b" not in err


# -- what must not change ------------------------------------------------------------------------------------


def test_options_run_as_before_when_no_file_has_their_name(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.jsonl").write_text(healthy_log())
    code, out, _ = run(capsys, ["epoch", "--fail-on", "warn", "--json", "--json-file=report.json", "run.jsonl"])
    assert code == 0
    assert subjects(out) == {"run.jsonl": "PASS"}
    assert json.loads((tmp_path / "report.json").read_text())["verdict"] == "PASS"


def test_a_file_named_dash_is_a_path(tmp_path, monkeypatch, capsys):
    """`-` is never an option (argparse reads it as a positional); a file of that name is judged, with or without --."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-").write_text(healthy_log())
    for argv in (["epoch", "--json", "-"], ["epoch", "--json", "--", "-"]):
        code, out, _ = run(capsys, argv)
        assert code == 0, argv
        assert subjects(out) == {"-": "PASS"}


def test_an_option_like_word_naming_nothing_is_argparses_to_judge(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.jsonl").write_text(healthy_log())
    with pytest.raises(SystemExit) as exit:
        main(["epoch", "run.jsonl", "--no-such-option"])
    assert exit.value.code == 2
    assert "unrecognized arguments: --no-such-option" in capsys.readouterr().err


# -- after --: always a path -----------------------------------------------------------------------------------


def test_after_dashdash_names_like_options_are_logs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for name in ("--tokenizer=tok.jsonl", "-x.jsonl", "--json"):
        (tmp_path / name).write_text(healthy_log())
    code, _, err = run(capsys, ["epoch", "--json-file=out.json", "--fail-on", "warn", "--", "--tokenizer=tok.jsonl", "-x.jsonl", "--json"])
    assert code == 0, err
    assert subjects((tmp_path / "out.json").read_text()) == {"--tokenizer=tok.jsonl": "PASS", "-x.jsonl": "PASS", "--json": "PASS"}


def test_after_dashdash_text_reads_the_file_and_loads_no_tokenizer(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "chat.jsonl").mkdir()  # a tokenizer folder the name points at: never opened
    (tmp_path / "chat.jsonl" / "tokenizer_config.json").write_text("{")
    (tmp_path / "--tokenizer=chat.jsonl").write_text(ROW)
    (tmp_path / "-x.jsonl").write_text(ROW)
    code, out, err = run(capsys, ["text", "--json", "--", "--tokenizer=chat.jsonl", "-x.jsonl"])
    assert code == 0, err
    report = json.loads(out)
    assert {s["path"]: s["verdict"] for s in report["subjects"]} == {"--tokenizer=chat.jsonl": "PASS", "-x.jsonl": "PASS"}
    assert "no --tokenizer given" in out


def test_after_dashdash_compare_takes_its_baseline_last(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for name, source in (("-hot", "lr_hot"), ("--baseline=healthy", "healthy")):
        (tmp_path / name).mkdir()
        shutil.copyfile(GALLERY / source / "seed0" / "trainer_state.json", tmp_path / name / "trainer_state.json")
    code, out, err = run(capsys, ["compare", "--json", "--", "-hot", "--baseline=healthy"])
    assert code == 1, err
    found = [(s["path"], s["role"], s["verdict"]) for s in json.loads(out)["subjects"]]
    assert found == [("-hot/trainer_state.json", "run", "FAIL"), ("--baseline=healthy/trainer_state.json", "baseline", "PASS")]


def test_after_dashdash_the_tokenizer_comes_first(tmp_path, monkeypatch, capsys):
    pytest.importorskip("sentencepiece")
    monkeypatch.chdir(tmp_path)
    shutil.copyfile(REPO / "examples" / "tokenizer" / "tts_unigram.model", tmp_path / "-tok.model")
    (tmp_path / "--text.txt").write_text("The birch canoe slid on the smooth planks.\nGlue the sheet to the dark blue background.\n")
    code, out, err = run(capsys, ["tokenizer", "--json", "--", "-tok.model", "--text.txt"])
    assert code == 0, err
    assert [s["path"] for s in json.loads(out)["subjects"]] == ["--text.txt"]


@pytest.mark.parametrize("name", JUDGING_COMMANDS)
def test_every_judging_command_takes_every_word_after_dashdash_as_a_path(name):
    args = build_parser().parse_args([name, "--fail-on", "warn", "--json", "--", "-a", "--b=c", "-", "--fail-on"])
    assert args.paths == ["-a", "--b=c", "-", "--fail-on"]
    assert (args.fail_on, args.json) == ("warn", True)


def test_watch_takes_the_word_after_dashdash_as_its_log():
    assert build_parser().parse_args(["watch", "--max-ticks", "1", "--", "--interval=1.jsonl"]).path == "--interval=1.jsonl"
