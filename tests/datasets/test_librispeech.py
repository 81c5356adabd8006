"""LibriSpeech's layout: one transcript list per chapter folder, ``<reader>/<chapter>/<reader>-<chapter>.trans.txt``, each
line ``<utterance-id> <TRANSCRIPT IN CAPITALS>`` naming the ``<utterance-id>.flac`` beside it. The clips are real FLAC
files written by soundfile (voiced speech-like audio whose length follows its transcript), in the nested tree of a
split (``LibriSpeech/dev-clean/84/121123/...``), with LibriSpeech's own top-level text files beside the split.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("soundfile")
pytest.importorskip("pandas")

from tests.datasets.speech import LETTERS_PER_S, VOICED_DURATIONS, text_for, voiced_clip  # noqa: E402
from trainproof.commands import judge  # noqa: E402
from trainproof.data.manifest import read_manifest  # noqa: E402
from trainproof.report import Level, Subject  # noqa: E402

RATE = 16000
CHAPTERS = (("84", "121123"), ("84", "121550"), ("174", "50561"), ("174", "84280"))
PER_CHAPTER = 5  # 20 clips: enough for TP-DATA-TEXT-RATE to judge them
TRANSCRIPT_RULES = {
    "TP-DATA-EMPTY-TEXT", "TP-DATA-TEXT-RATE", "TP-DATA-UNNORMALIZED", "TP-DATA-CHARACTERS", "TP-DATA-DUPLICATE-TEXT",
    "TP-DATA-CONFLICTING-TEXT",
}  # fmt: skip


def _librispeech(root: Path) -> Path:
    """A LibriSpeech-shaped corpus under ``root``: ``LibriSpeech/{README,SPEAKERS}.TXT`` and the split ``dev-clean``."""
    rng = np.random.default_rng(0)
    split = root / "LibriSpeech" / "dev-clean"
    (root / "LibriSpeech").mkdir(parents=True)
    (root / "LibriSpeech" / "README.TXT").write_text("LibriSpeech ASR corpus\n")
    (root / "LibriSpeech" / "SPEAKERS.TXT").write_text(";ID  |SEX| SUBSET   |MINUTES| NAME\n84   | F | dev-clean | 8.02 | Christie Nowak\n")
    taken: set[str] = set()
    k = 0
    for reader, chapter in CHAPTERS:
        folder = split / reader / chapter
        folder.mkdir(parents=True)
        lines = []
        for i in range(PER_CHAPTER):
            seconds = VOICED_DURATIONS[k % len(VOICED_DURATIONS)]
            text = text_for(seconds - 0.2, rng, LETTERS_PER_S * rng.uniform(0.95, 1.05), taken)
            taken.add(text)
            utterance = f"{reader}-{chapter}-{i:04d}"
            voiced_clip(folder / f"{utterance}.flac", seconds, RATE, text, 110.0 + 40 * (reader == "174"), seed=k)
            lines.append(f"{utterance} {text.rstrip('.').upper()}\n")
            k += 1
        (folder / f"{reader}-{chapter}.trans.txt").write_text("".join(lines))
    return split


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """The clean corpus, written once; each test takes its own copy (see ``split``)."""
    return _librispeech(tmp_path_factory.mktemp("librispeech"))


@pytest.fixture
def split(corpus: Path, tmp_path: Path) -> Path:
    shutil.copytree(corpus.parent, tmp_path / "LibriSpeech")
    return tmp_path / "LibriSpeech" / "dev-clean"


def judged(path: Path) -> Subject:
    return judge("data", [str(path)], no_cache=True, jobs=1).subjects[0]


def loud(subject: Subject) -> list[str]:
    return [f"{f.rule_id}: {f.message}" for f in subject.findings if f.level >= Level.WARN]


def test_a_clean_librispeech_split_passes_with_its_transcripts_judged(split):
    subject = judged(split)
    assert loud(subject) == []
    assert subject.verdict.value == "PASS"
    assert TRANSCRIPT_RULES <= set(subject.ran), {s.rule_id: s.reason for s in subject.skipped}
    assert subject.summary["layout"] == "librispeech"
    assert subject.summary["audio_only"] is False
    assert subject.summary["clips"] == subject.summary["readable"] == len(CHAPTERS) * PER_CHAPTER
    assert subject.summary["speakers"] == 2  # the readers
    assert subject.headline.startswith("librispeech dataset; 20 clips (20 readable)")
    assert any(note.startswith("read as LibriSpeech-style: 4 transcript lists") for note in subject.notes)


def test_each_line_is_an_entry_with_its_transcript_reader_and_line(split):
    manifest = read_manifest(split)
    first = manifest.entries[0]
    chapter = split / "174" / "50561"
    assert (first.id, first.listed, first.speaker, first.line) == ("174/50561/174-50561-0000", "174/50561/174-50561-0000.flac", "174", 1)
    assert first.audio == str(chapter / "174-50561-0000.flac")
    assert first.manifest == str(chapter / "174-50561.trans.txt")
    assert first.text == (chapter / "174-50561.trans.txt").read_text().splitlines()[0].split(" ", 1)[1]
    assert first.text.isupper()


@pytest.mark.parametrize("where", ["LibriSpeech", "LibriSpeech/dev-clean", "LibriSpeech/dev-clean/84", "LibriSpeech/dev-clean/84/121123"])
def test_the_corpus_root_the_split_a_reader_or_a_chapter_is_read_alike(split, where):
    target = split.parent.parent / where
    subject = judged(target)
    assert loud(subject) == []
    assert subject.summary["layout"] == "librispeech"
    expected = {"LibriSpeech": 20, "LibriSpeech/dev-clean": 20, "LibriSpeech/dev-clean/84": 10, "LibriSpeech/dev-clean/84/121123": 5}[where]
    assert subject.summary["clips"] == subject.summary["readable"] == expected


def test_a_chapter_list_named_itself_is_read_as_its_chapter(split):
    """Not a CSV (a transcript with a comma) nor an unknown manifest: the list of the chapter beside it."""
    listed = split / "84" / "121123" / "84-121123.trans.txt"
    listed.write_text(listed.read_text().replace(" ", " WELL, ", 1))  # '84-121123-0000 WELL, ...'
    manifest = read_manifest(listed)
    assert manifest.layout == "librispeech"
    assert [entry.listed for entry in manifest.entries] == [f"84-121123-000{i}.flac" for i in range(PER_CHAPTER)]
    assert manifest.entries[0].text.startswith("WELL, ")
    subject = judged(listed)
    assert subject.summary["clips"] == subject.summary["readable"] == PER_CHAPTER
    assert loud(subject) == []


def test_a_line_naming_an_absent_clip_is_missing_at_its_line(split):
    chapter = split / "84" / "121123"
    (chapter / "84-121123-0002.flac").unlink()
    subject = judged(split)
    missing = [f for f in subject.findings if f.rule_id == "TP-DATA-MISSING"]
    assert [(f.file, f.line, f.message) for f in missing] == [
        (str(chapter / "84-121123.trans.txt"), 3, "84/121123/84-121123-0002.* does not exist.")
    ]
    assert subject.verdict.value == "FAIL"
    assert "TP-DATA-UNLISTED" not in {f.rule_id for f in subject.findings}


def test_a_clip_on_no_line_of_its_chapter_list_is_unlisted(split):
    chapter = split / "174" / "84280"
    shutil.copy(chapter / "174-84280-0000.flac", chapter / "174-84280-0099.flac")
    subject = judged(split)
    assert [(f.rule_id, f.level) for f in subject.findings] == [("TP-DATA-UNLISTED", Level.WARN)]
    assert subject.findings[0].file == str(chapter / "174-84280-0099.flac")
    assert subject.summary["clips"] == 20


def test_a_wav_copy_beside_the_listed_flac_is_not_unlisted(split):
    """A clip converted to WAV beside its FLAC: the line names both, and the FLAC (LibriSpeech's own) is read."""
    import soundfile as sf

    chapter = split / "84" / "121550"
    samples, rate = sf.read(chapter / "84-121550-0001.flac")
    sf.write(chapter / "84-121550-0001.wav", samples, rate, subtype="PCM_16")
    subject = judged(split)
    assert loud(subject) == []
    audio = {entry.id: entry.audio for entry in read_manifest(split).entries}
    assert audio["84/121550/84-121550-0001"] == str(chapter / "84-121550-0001.flac")
