"""No output may overwrite a clip whose header ``tokenizer`` reads for an LJSpeech text's durations (issue 27, item 4)."""

from __future__ import annotations

import os

import pytest

from trainproof.cli import main

sf = pytest.importorskip("soundfile")
np = pytest.importorskip("numpy")


@pytest.fixture
def lj(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ds" / "wavs").mkdir(parents=True)
    lines = []
    for i in range(3):
        sf.write(tmp_path / "ds" / "wavs" / f"LJ00{i}.wav", np.zeros(1600, dtype="int16"), 16000)
        lines.append(f"LJ00{i}|the number {i} is said here|the number {i} is said here")
    (tmp_path / "ds" / "metadata.csv").write_text("\n".join(lines) + "\n")
    return tmp_path


@pytest.mark.parametrize("text", ["ds/metadata.csv", "ds"])
def test_an_output_naming_a_clip_the_text_lists_is_refused(built, lj, capsys, text):
    model = built("sentencepiece")
    before = (lj / "ds" / "wavs" / "LJ001.wav").read_bytes()
    code = main(["tokenizer", str(model), text, "--json-file", "ds/wavs/LJ001.wav"])
    assert code == 2
    assert capsys.readouterr().err == "trainproof: error: ds/wavs/LJ001.wav: is read as an input; refusing to overwrite it\n"
    assert (lj / "ds" / "wavs" / "LJ001.wav").read_bytes() == before


def test_a_hard_link_to_a_listed_clip_is_refused_and_a_new_report_is_written(built, lj, capsys):
    model = built("sentencepiece")
    os.link(lj / "ds" / "wavs" / "LJ002.wav", lj / "report.json")
    assert main(["tokenizer", str(model), "ds", "--json-file", "report.json"]) == 2
    assert "report.json: is the same file as" in capsys.readouterr().err
    os.unlink(lj / "report.json")
    (lj / "report.json").write_text("{}")  # an earlier report, a file of its own: written over, as asked
    assert main(["tokenizer", str(model), "ds", "--json-file", "report.json"]) in (0, 1)
    assert '"command": "tokenizer"' in (lj / "report.json").read_text()
