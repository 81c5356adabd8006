"""No output, nor the job summary, may overwrite a file a dataset lists, under any name (issue 27, item 4).

Outputs are told from inputs by identity (device and inode), so a hard link to a listed clip is caught, and every
listed file counts whatever its name: a clip named ``.m4a``, ``.json`` or nothing at all.
"""

from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("soundfile")
pytest.importorskip("pandas")

from tests.datasets.test_odd_inputs import clip, run  # noqa: E402


@pytest.fixture
def nemo(tmp_path, monkeypatch):
    """A NeMo manifest listing a WAV clip and three files under names no audio extension gives away."""
    monkeypatch.chdir(tmp_path)
    clip(tmp_path / "ds" / "a.wav")
    for name in ("c.m4a", "d.json", "e"):
        (tmp_path / "ds" / name).write_bytes((tmp_path / "ds" / "a.wav").read_bytes())
    lines = [{"audio_filepath": f"ds/{name}", "text": f"clip {name}"} for name in ("a.wav", "c.m4a", "d.json", "e")]
    (tmp_path / "ds" / "manifest.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return tmp_path


@pytest.mark.parametrize("name", ["c.m4a", "d.json", "e"])
def test_a_listed_clip_of_any_name_is_not_overwritten(nemo, capsys, name):
    before = (nemo / "ds" / name).read_bytes()
    code, _, err = run(capsys, "ds/manifest.jsonl", "--markdown", f"ds/{name}")
    assert code == 2
    assert err == f"trainproof: error: ds/{name}: is read as an input; refusing to overwrite it\n"
    assert (nemo / "ds" / name).read_bytes() == before


def test_a_hard_link_to_a_listed_clip_is_not_overwritten(nemo, capsys):
    os.link(nemo / "ds" / "a.wav", nemo / "report.json")
    before = (nemo / "ds" / "a.wav").read_bytes()
    code, _, err = run(capsys, "ds/manifest.jsonl", "--json-file", "report.json")
    assert code == 2
    assert err == "trainproof: error: report.json: is the same file as ds/a.wav, which is read as an input; refusing to overwrite it\n"
    assert (nemo / "ds" / "a.wav").read_bytes() == before


def test_a_hard_link_to_a_folder_datasets_transcript_is_not_overwritten(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    clip(tmp_path / "ds" / "a.wav")
    (tmp_path / "ds" / "a.txt").write_text("hello there")
    os.link(tmp_path / "ds" / "a.txt", tmp_path / "notes.md")
    code, _, err = run(capsys, "ds", "--markdown", "notes.md")
    assert code == 2
    assert "is the same file as ds/a.txt" in err
    assert (tmp_path / "ds" / "a.txt").read_text() == "hello there"


def test_the_job_summary_may_not_be_a_listed_clip(nemo, capsys, monkeypatch):
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", "ds/a.wav")
    before = (nemo / "ds" / "a.wav").read_bytes()
    code, _, err = run(capsys, "ds/manifest.jsonl", "--github")
    assert code == 2
    assert err == "trainproof: error: GITHUB_STEP_SUMMARY (ds/a.wav) is ds/a.wav, which is read as an input; refusing to append to it\n"
    assert (nemo / "ds" / "a.wav").read_bytes() == before


def test_an_earlier_report_and_a_summary_elsewhere_are_written(nemo, capsys, monkeypatch):
    (nemo / "report.json").write_text("{}")
    (nemo / "summary.md").write_text("")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(nemo / "summary.md"))
    code, _, _ = run(capsys, "ds/manifest.jsonl", "--json-file", "report.json", "--github")
    assert code in (0, 1)
    assert json.loads((nemo / "report.json").read_text())["command"] == "data"
    assert "trainproof" in (nemo / "summary.md").read_text()
