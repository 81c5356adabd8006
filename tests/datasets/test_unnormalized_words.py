"""TP-DATA-UNNORMALIZED on words that only look like abbreviations.

"No." is an abbreviation before a number ("Room No. 5"); at the end of a sentence it is the word "no" and a full
stop, in English ("I said no.") and in Twi, where "no" means "the" and 16 of 205 transcripts of a Common Voice
release end in it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.datasets.speech import voiced_clip
from trainproof.cli import main

pytest.importorskip("soundfile")
pytest.importorskip("pandas")


def judge(capsys, tmp_path: Path, transcripts: list[str]) -> dict:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for i, text in enumerate(transcripts):
        voiced_clip(folder / f"clip-{i}.wav", 2.0, rate=16000, words=text, seed=i)
        (folder / f"clip-{i}.txt").write_text(text + "\n")
    main(["data", str(folder), "--json", "--no-cache", "--jobs", "1"])
    return {f["id"]: f for f in json.loads(capsys.readouterr().out)["subjects"][0]["findings"]}


def test_no_ending_a_sentence_is_a_word_not_an_abbreviation(capsys, tmp_path):
    found = judge(capsys, tmp_path, ["I said no.", "Ɔkɔɔ fie no.", "Say no. Then leave."])
    assert "TP-DATA-UNNORMALIZED" not in found


def test_no_before_a_number_is_an_abbreviation(capsys, tmp_path):
    found = judge(capsys, tmp_path, ["I said no.", "They live at No. 5, the red house."])
    assert "TP-DATA-UNNORMALIZED" in found
    assert "'No.'" in found["TP-DATA-UNNORMALIZED"]["message"]
