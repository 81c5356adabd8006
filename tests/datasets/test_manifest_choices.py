"""Which file, column or path a dataset is read from when there are several: a folder clip's transcript among its
sidecars (a .lab of times is a label file, not a transcript), a manifest's audio and transcript columns
(``--audio-column``, ``--text-column``), and every path a missing clip was looked for at.

The audio is real (a voiced clip written by soundfile); the sidecars are shaped like pocketsphinx's
``test/data/librivox`` (``X.wav``, ``X.txt``, and ``X.lab`` of ``start<TAB>end<TAB>speech|silence`` lines) and
SpeechBrain's ``tests/samples/annotation/ASR_train.csv`` (``wav`` and ``audio_path`` both, the latter naming the first
clip on every line).
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from tests.datasets.speech import voiced_clip
from trainproof.cli import main
from trainproof.data.layouts import folder as folder_layout
from trainproof.data.manifest import read_manifest

pytest.importorskip("soundfile")
pytest.importorskip("pandas")

SENTENCES = (
    "and mister john dashwood had then leisure to consider how much there might be prudently in his power to do for them",
    "he was not an ill disposed young man",
    "unless to be rather cold hearted and rather selfish is to be ill disposed",
    "but he was in general well respected",
    "for he conducted himself with propriety in the discharge of his ordinary duties",
)
TIMES = ("0.235689\t0.235689\tspeech\n6.761690\t6.761690\tsilence\n", "0.250750\t0.250750\tspeech\n2.773918\t2.773918\tsilence\n")
"""Two real pocketsphinx ``.lab`` files (speech/silence times): the shape of every one in test/data/librivox."""


@pytest.fixture(scope="module")
def clips(tmp_path_factory) -> list[Path]:
    """Five real clips of speech-like audio, 16 kHz, written once for the module."""
    folder = tmp_path_factory.mktemp("clips")
    return [voiced_clip(folder / f"clip-{i}.wav", 2.0 + 0.3 * i, rate=16000, words=sentence, seed=i) for i, sentence in enumerate(SENTENCES)]


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["data", *args, "--no-cache", "--jobs", "1"])
    out, err = capsys.readouterr()
    return code, out, err


def jsonl(path: Path, *records: dict) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def librivox(folder: Path, clips: list[Path]) -> Path:
    """pocketsphinx's librivox layout: each clip with its transcript (.txt) and its speech/silence times (.lab)."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, clip in enumerate(clips):
        stem = f"sense_and_sensibility_01_austen_64kb-{870 + 10 * i:04d}"
        shutil.copy(clip, folder / f"{stem}.wav")
        (folder / f"{stem}.txt").write_text(SENTENCES[i] + "\n")
        (folder / f"{stem}.lab").write_text(TIMES[i % 2])
    return folder


# --- a folder clip's sidecars --------------------------------------------------------------------


def test_a_folder_with_a_transcript_and_a_times_file_beside_each_clip_is_one_clip_each(tmp_path, clips):
    m = read_manifest(librivox(tmp_path / "librivox", clips))
    assert len(m.entries) == 5
    assert [e.text for e in m.entries] == list(SENTENCES)
    assert all(e.manifest.endswith(".txt") for e in m.entries)
    assert m.problems == ()
    (note,) = [n for n in m.notes if "times" in n]
    assert note.startswith("5 files beside the clips hold start/end times, not text (they are label or alignment files")
    assert "sense_and_sensibility_01_austen_64kb-0870.lab" in note
    assert "and 2 more" in note


def test_the_librivox_layout_passes_with_every_clip_readable(capsys, tmp_path, clips):
    code, out, err = run_cli(capsys, str(librivox(tmp_path / "librivox", clips)), "--json")
    assert code == 0, out
    subject = json.loads(out)["subjects"][0]
    assert (subject["summary"]["clips"], subject["summary"]["readable"]) == (5, 5)
    assert subject["findings"] == []
    assert err == ""


def test_a_times_file_alone_is_no_transcript_and_says_so(tmp_path, clips):
    shutil.copy(clips[0], tmp_path / "a.wav")
    (tmp_path / "a.lab").write_text(TIMES[0])
    shutil.copy(clips[1], tmp_path / "b.wav")
    (tmp_path / "b.txt").write_text("he was not an ill disposed young man")
    m = read_manifest(tmp_path)
    assert [e.id for e in m.entries] == ["b.wav"]
    (problem,) = m.problems
    assert (problem.kind, problem.file) == ("unlisted", str(tmp_path / "a.wav"))
    assert "a.lab holds start/end times, not text" in problem.message
    assert any(n.startswith("1 file beside the clips holds start/end times") for n in m.notes)


def test_a_times_file_without_its_clip_is_not_a_missing_clip(tmp_path, clips):
    shutil.copy(clips[0], tmp_path / "a.wav")
    (tmp_path / "a.txt").write_text("hello there")
    (tmp_path / "gone.lab").write_text(TIMES[1])
    m = read_manifest(tmp_path)
    assert [e.id for e in m.entries] == ["a.wav"]


def test_of_two_transcripts_the_first_is_read_and_a_note_names_the_other(tmp_path, clips):
    shutil.copy(clips[0], tmp_path / "a.wav")
    (tmp_path / "a.txt").write_text("and mister john dashwood")
    (tmp_path / "a.lab").write_text("AND MISTER JOHN DASHWOOD")  # a Montreal Forced Aligner .lab: a transcript
    m = read_manifest(tmp_path)
    assert [(e.id, e.text) for e in m.entries] == [("a.wav", "and mister john dashwood")]
    assert m.problems == ()
    assert "1 clip has more than one transcript beside it; the first of .txt, .lab, .normalized.txt, .original.txt holding text was read: a.txt (not a.lab)" in m.notes


def test_a_librispeech_style_pair_of_transcripts_is_one_clip(tmp_path, clips):
    """LibriTTS has X.normalized.txt and X.original.txt: the second was read as a transcript whose clip is missing."""
    shutil.copy(clips[0], tmp_path / "84_121123_000007_000001.wav")
    (tmp_path / "84_121123_000007_000001.normalized.txt").write_text("Mister Dashwood.")
    (tmp_path / "84_121123_000007_000001.original.txt").write_text("Mr. Dashwood.")
    m = read_manifest(tmp_path)
    assert [(e.id, e.text) for e in m.entries] == [("84_121123_000007_000001.wav", "Mister Dashwood.")]


def test_one_transcript_needs_no_note(tmp_path, clips):
    shutil.copy(clips[0], tmp_path / "a.wav")
    (tmp_path / "a.lab").write_text("a transcript in a lab file")
    m = read_manifest(tmp_path)
    assert [e.text for e in m.entries] == ["a transcript in a lab file"]
    assert m.notes == ()
    assert m.problems == ()


@pytest.mark.parametrize(
    "text, times",
    [
        (TIMES[0], True),
        ("0 2350000 sil\n2350000 4100000 hh\n4100000 5300000 ax -123.5\n", True),  # HTK: 100 ns units, a score
        ("\ufeff0.5\t1.25\t\n", True),  # an Audacity label without text
        ("1 2 buckle my shoe\n", False),
        ("1 2 3\n", False),
        ("one 2 3\n", False),
        ("5 3 late\n", False),  # ends before it starts
        ("0.1 0.2 speech\nand then some words\n", False),
        ("", False),
    ],
)
def test_a_times_file_is_told_from_a_transcript(text, times):
    assert folder_layout._holds_times(text.encode()) is times


# --- a manifest's columns ---------------------------------------------------------------------------


def speechbrain_csv(folder: Path, clips: list[Path], rows: int = 2) -> Path:
    """ASR_train.csv's shape: ID, duration, wav, audio_path (the first clip on every line), wrd, text, transcript."""
    header = ["ID", "duration", "start", "stop", "wav", "audio_path", "spk_id", "wrd", "text", "transcript"]
    with (folder / "ASR_train.csv").open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        for i in range(rows):
            row = [f"spk1_snt{i + 1}", f"{2.0 + 0.3 * i:.2f}", "0", "16000", str(clips[i]), str(clips[0]), "spk1"] + [SENTENCES[i]] * 3
            writer.writerow(row)
    return folder / "ASR_train.csv"


def test_speechbrains_wav_column_is_read_and_a_note_names_the_other(tmp_path, clips):
    m = read_manifest(speechbrain_csv(tmp_path, clips))
    assert [e.audio for e in m.entries] == [str(clips[0]), str(clips[1])]
    assert "2 columns could be the audio path: 'wav' was read, not 'audio_path' (choose with --audio-column NAME)" in m.notes
    assert "3 columns could be the transcript: 'text' was read, not 'transcript', 'wrd' (choose with --text-column NAME)" in m.notes


def test_speechbrains_manifest_passes(capsys, tmp_path, clips):
    code, out, _ = run_cli(capsys, str(speechbrain_csv(tmp_path, clips)), "--json")
    assert code == 0, out
    assert json.loads(out)["subjects"][0]["findings"] == []


def test_the_options_choose_the_columns(capsys, tmp_path, clips):
    path = speechbrain_csv(tmp_path, clips)
    m = read_manifest(path, audio_column="AUDIO_PATH", text_column="wrd")
    assert [e.audio for e in m.entries] == [str(clips[0]), str(clips[0])]
    assert not any("could be" in note for note in m.notes)  # chosen, not guessed
    code, out, _ = run_cli(capsys, str(path), "--audio-column", "audio_path")
    assert code == 1
    assert "[FAIL] TP-DATA-CONFLICTING-TEXT" in out


def test_a_column_that_is_not_there_is_exit_2_naming_the_columns(capsys, tmp_path, clips):
    path = speechbrain_csv(tmp_path, clips)
    code, out, err = run_cli(capsys, str(path), "--text-column", "words")
    assert code == 2
    assert err == (
        f"trainproof: error: {path}: has no column 'words' (--text-column): its header names 'ID', 'duration', 'start', "
        "'stop', 'wav', 'audio_path', 'spk_id', 'wrd', 'text', 'transcript'\n"
    )


def test_an_empty_column_name_is_a_usage_error(capsys, tmp_path, clips):
    with pytest.raises(SystemExit) as exc:
        main(["data", str(speechbrain_csv(tmp_path, clips)), "--audio-column", " "])
    assert exc.value.code == 2
    assert "needs a column name" in capsys.readouterr().err


@pytest.mark.parametrize("columnar", [True, False], ids=["columnar", "line-by-line"])
def test_a_jsonl_manifest_with_two_audio_keys(tmp_path, clips, columnar):
    records = [{"audio_path": str(clips[0]), "wav": str(clip), "text": SENTENCES[i]} for i, clip in enumerate(clips[:3])]
    if not columnar:
        records.append({"Audio_Path": str(clips[0]), "WAV": str(clips[3]), "text": SENTENCES[3]})  # keys in capitals: read line by line
    path = jsonl(tmp_path / "train.jsonl", *records)
    m = read_manifest(path)
    assert [e.audio for e in m.entries] == [str(clip) for clip in clips[: len(records)]]
    assert "2 keys could be the audio path: 'wav' was read, not 'audio_path' (choose with --audio-column NAME)" in m.notes
    chosen = read_manifest(path, audio_column="audio_path")
    assert [e.audio for e in chosen.entries] == [str(clips[0])] * len(records)
    assert chosen.notes == ()


@pytest.mark.parametrize("columnar", [True, False], ids=["columnar", "line-by-line"])
def test_a_jsonl_key_that_no_record_has_is_exit_2_naming_the_keys(capsys, tmp_path, clips, columnar):
    records = [{"audio_filepath": str(clips[0]), "text": SENTENCES[0]}, {"audio_filepath": str(clips[1]), "text": SENTENCES[1]}]
    if not columnar:
        records.append({"audio_filepath": str(clips[2]), "text": SENTENCES[2], "Speaker": "s1"})
    path = jsonl(tmp_path / "train.jsonl", *records)
    code, _, err = run_cli(capsys, str(path), "--audio-column", "wav")
    assert code == 2
    keys = "'audio_filepath', 'text'" + (", 'Speaker'" if not columnar else "")
    assert err == f"trainproof: error: {path}: has no key 'wav' (--audio-column): its records have the keys {keys}\n"


def test_a_record_without_the_key_named_is_a_problem_at_its_line(tmp_path, clips):
    path = jsonl(tmp_path / "train.jsonl", {"wav": str(clips[0]), "text": "a"}, {"audio_filepath": str(clips[1]), "text": "b"})
    m = read_manifest(path, audio_column="wav")
    assert [e.line for e in m.entries] == [1]
    assert [(p.kind, p.line, p.message) for p in m.problems] == [
        ("no-audio-field", 2, "line 2 has no field 'wav' (its fields: 'audio_filepath', 'text')")
    ]


def test_the_column_options_on_another_layout_say_they_were_not_used(tmp_path, clips):
    (tmp_path / "wavs").mkdir()
    shutil.copy(clips[0], tmp_path / "wavs" / "a.wav")
    (tmp_path / "metadata.csv").write_text("a|hello there\n")
    m = read_manifest(tmp_path, audio_column="wav")
    assert m.notes == ("--audio-column applies to CSV/TSV and JSONL manifests only; this is a ljspeech dataset, so it was not used",)


def test_the_real_speechbrain_manifest_reads_the_wav_column(corpus):
    path = corpus / "public" / "speech" / "speechbrain_tests_samples" / "annotation" / "ASR_train.csv"
    m = read_manifest(path)
    assert [e.listed for e in m.entries] == ["tests/samples/ASR/spk1_snt1.wav", "tests/samples/ASR/spk1_snt2.wav"]
    assert "2 columns could be the audio path: 'wav' was read, not 'audio_path' (choose with --audio-column NAME)" in m.notes


# --- every path a missing clip was looked for at --------------------------------------------------


def missing_evidence(capsys, *args: str) -> list[str]:
    code, out, _ = run_cli(capsys, *args, "--json")
    assert code == 1
    return [f["evidence"] for f in json.loads(out)["subjects"][0]["findings"] if f["id"] == "TP-DATA-MISSING"]


def test_a_missing_nemo_clip_names_both_paths_tried(capsys, tmp_path, clips, monkeypatch):
    (tmp_path / "data" / "wavs").mkdir(parents=True)
    shutil.copy(clips[0], tmp_path / "data" / "wavs" / "a.wav")
    jsonl(tmp_path / "data" / "manifest.jsonl", {"audio_filepath": "wavs/a.wav", "text": "a"}, {"audio_filepath": "data/wavs/missing_clip.wav", "text": "b"})
    monkeypatch.chdir(tmp_path)
    assert missing_evidence(capsys, "data/manifest.jsonl") == [
        "line 2: looked for at data/wavs/missing_clip.wav, then data/data/wavs/missing_clip.wav"
    ]
    # a CSV manifest is looked for in clips/ beside it too (Common Voice)
    (tmp_path / "data" / "train.csv").write_text("path,sentence\nwavs/a.wav,a\ngone.mp3,b\n")
    assert missing_evidence(capsys, "data/train.csv") == ["line 3: looked for at gone.mp3, then data/gone.mp3, then data/clips/gone.mp3"]


def test_a_missing_ljspeech_id_names_each_folder_looked_in(capsys, tmp_path, clips):
    (tmp_path / "wavs").mkdir()
    shutil.copy(clips[0], tmp_path / "wavs" / "a.wav")
    (tmp_path / "metadata.csv").write_text("a|hello there\nb|gone now\n")
    assert missing_evidence(capsys, str(tmp_path)) == [f"line 2: looked for at {tmp_path}/wavs/b.*, then {tmp_path}/b.*"]


def test_a_path_looked_for_in_one_place_is_named_as_resolved(capsys, tmp_path, clips):
    (tmp_path / "data").mkdir()
    jsonl(tmp_path / "data" / "manifest.jsonl", {"audio_filepath": str(clips[0]), "text": "a"}, {"audio_filepath": "gone.wav", "text": "b"})
    evidence = missing_evidence(capsys, str(tmp_path / "data" / "manifest.jsonl"), "--root", str(tmp_path))
    assert evidence == [f"line 2: resolved to {tmp_path}/gone.wav"]


# --- a manifest that lists nothing -----------------------------------------------------------------


def test_a_manifest_that_lists_no_clip_says_why_nothing_was_checked_once(capsys, tmp_path):
    path = tmp_path / "ASR_train.json"
    path.write_text('{\n    "spk1_snt1": {\n        "wav": "{data_root}/spk1_snt1.wav",\n        "duration": "2.87"\n    }\n}\n')
    code, out, _ = run_cli(capsys, str(path))
    assert code == 1
    skipped = [line for line in out.splitlines() if line.lstrip().startswith("Skipped")]
    assert len(skipped) == 1, skipped
    assert skipped[0].endswith(": the manifest lists no clip")
    assert "TP-DATA-SAMPLE-RATE" in skipped[0]
    assert "TP-DATA-TEXT-RATE" in skipped[0]
