"""Reading dataset manifests: every layout, every resolution rule, every structural problem at its line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from trainproof.data.layouts.shared import LEADING_GARBAGE
from trainproof.data.manifest import read_manifest
from trainproof.data.model import Manifest
from trainproof.io.errors import InputError

SPEECH = "public/speech"


def touch(*paths: Path) -> None:
    """Empty placeholder audio files (the manifest reader never opens them)."""
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        text = text.encode("utf-8")
    path.write_bytes(text)
    return path


def kinds(manifest: Manifest) -> list[tuple[str, int | None]]:
    return [(p.kind, p.line) for p in manifest.problems]


def ljspeech(tmp_path: Path, metadata: str, clips: tuple[str, ...] = (), folder: str = "wavs") -> Path:
    touch(*(tmp_path / folder / clip for clip in clips))
    write(tmp_path / "metadata.csv", metadata)
    return tmp_path


# --- LJSpeech ---------------------------------------------------------------------


def test_ljspeech_folder_three_columns_takes_the_normalized_text(tmp_path):
    root = ljspeech(
        tmp_path,
        "LJ001-0001|Dr. Smith, 1st|Doctor Smith, first\nLJ001-0002|in being modern.|in being modern.\n",
        ("LJ001-0001.wav", "LJ001-0002.wav"),
    )
    m = read_manifest(root)
    assert m.layout == "ljspeech"
    assert [e.id for e in m.entries] == ["LJ001-0001", "LJ001-0002"]
    assert m.entries[0].text == "Doctor Smith, first"
    assert m.entries[0].audio == str(tmp_path / "wavs" / "LJ001-0001.wav")
    assert m.entries[0].listed == "LJ001-0001"
    assert [e.line for e in m.entries] == [1, 2]
    assert m.entries[1].manifest == str(tmp_path / "metadata.csv")
    assert m.problems == ()


def test_ljspeech_metadata_file_itself_two_columns(tmp_path):
    ljspeech(tmp_path, "a|hello\nb|world\n", ("a.wav", "b.wav"))
    m = read_manifest(tmp_path / "metadata.csv")
    assert m.layout == "ljspeech"
    assert [e.text for e in m.entries] == ["hello", "world"]
    assert m.entries[1].audio == str(tmp_path / "wavs" / "b.wav")
    assert m.problems == ()


@pytest.mark.parametrize(
    ("header", "text"),
    [("id|text", "hello"), ("file|transcript", "hello"), ("audio|text|normalized_text", "HELLO"), ("ID|Text", "hello")],
)
def test_ljspeech_header_row_is_recognised_not_read_as_a_clip(tmp_path, header, text):
    columns = header.count("|") + 1
    row = "a|hello" if columns == 2 else "a|hello|HELLO"
    ljspeech(tmp_path, f"{header}\n{row}\n", ("a.wav",))
    m = read_manifest(tmp_path)
    assert [e.id for e in m.entries] == ["a"]
    assert m.entries[0].line == 2
    assert m.entries[0].text == text
    assert m.problems == ()
    assert any("header" in note for note in m.notes)


def test_ljspeech_header_names_audio_and_speaker_columns(tmp_path):
    ljspeech(tmp_path, "audio_file|text|transcription|speaker_name\nwavs/a.flac|Hi there|hi there|spk-0\n", ("a.flac",))
    m = read_manifest(tmp_path)
    (entry,) = m.entries
    assert entry.audio == str(tmp_path / "wavs" / "a.flac")
    assert entry.text == "Hi there"
    assert entry.speaker == "spk-0"
    assert m.problems == ()


@pytest.mark.parametrize("folder", ["audio", "wav"])
def test_ljspeech_ids_resolve_in_the_layouts_other_folders(tmp_path, folder):
    ljspeech(tmp_path, "a|hello\n", ("a.wav",), folder=folder)
    m = read_manifest(tmp_path)
    assert m.entries[0].audio == str(tmp_path / folder / "a.wav")
    assert m.problems == ()


def test_ljspeech_audio_dir_overrides(tmp_path):
    ljspeech(tmp_path, "a|hello\n", ("a.wav",))
    touch(tmp_path / "elsewhere" / "a.wav", tmp_path / "elsewhere" / "extra.wav")
    m = read_manifest(tmp_path, audio_dir=tmp_path / "elsewhere")
    assert m.entries[0].audio == str(tmp_path / "elsewhere" / "a.wav")
    assert [(p.kind, p.file) for p in m.problems] == [("unlisted", str(tmp_path / "elsewhere" / "extra.wav"))]


def test_ljspeech_ids_carrying_a_folder_or_an_extension(tmp_path):
    ljspeech(tmp_path, "wavs/a.wav|one\nb.wav|two\nwavs/c|three\nd.flac|four\n", ("a.wav", "b.wav", "c.flac", "d.flac"))
    m = read_manifest(tmp_path)
    wavs = tmp_path / "wavs"
    assert [e.audio for e in m.entries] == [str(wavs / "a.wav"), str(wavs / "b.wav"), str(wavs / "c.flac"), str(wavs / "d.flac")]
    assert [e.listed for e in m.entries] == ["wavs/a.wav", "b.wav", "wavs/c", "d.flac"]
    assert m.problems == ()


def test_ljspeech_id_without_extension_prefers_wav_then_sorted_with_a_note(tmp_path):
    ljspeech(tmp_path, "a|one\nb|two\nc|three\n", ("a.flac", "a.wav", "a.mp3", "b.ogg", "b.mp3", "c.flac"))
    m = read_manifest(tmp_path)
    wavs = tmp_path / "wavs"
    assert [e.audio for e in m.entries] == [str(wavs / "a.wav"), str(wavs / "b.mp3"), str(wavs / "c.flac")]
    (note,) = [n for n in m.notes if "several audio files" in n]
    assert note.startswith("2 ids")
    assert "a: a.flac, a.mp3, a.wav (took a.wav)" in note
    assert "unlisted" not in [p.kind for p in m.problems]  # the alternatives of a listed id are not unlisted


def test_ljspeech_missing_file_is_not_a_problem_and_resolves_to_wavs(tmp_path):
    ljspeech(tmp_path, "a|hello\nb|world\n", ("a.wav",))
    m = read_manifest(tmp_path)
    assert m.entries[1].audio == str(tmp_path / "wavs" / "b.wav")
    assert m.problems == ()


def test_ljspeech_without_an_audio_folder_looks_beside_metadata(tmp_path):
    write(tmp_path / "metadata.csv", "a|hello\nb|world\n")
    touch(tmp_path / "a.wav")
    m = read_manifest(tmp_path)
    assert m.entries[0].audio == str(tmp_path / "a.wav")
    assert m.entries[1].audio == str(tmp_path / "wavs" / "b.wav")  # reported missing where LJSpeech keeps clips
    assert any("no wavs/" in note for note in m.notes)


def test_ljspeech_unlisted_files_of_the_listed_format(tmp_path):
    ljspeech(tmp_path, "a|hello\n", ("a.wav", "b.wav", "c.wav", "a.flac", "z.flac"))
    write(tmp_path / "wavs" / "notes.txt", "not audio")
    m = read_manifest(tmp_path)
    unlisted = [p for p in m.problems if p.kind == "unlisted"]
    assert [p.file for p in unlisted] == [str(tmp_path / "wavs" / "b.wav"), str(tmp_path / "wavs" / "c.wav")]
    assert all(p.manifest == str(tmp_path / "metadata.csv") for p in unlisted)
    assert all(p.line is None for p in unlisted)


def test_ljspeech_root_overrides_the_dataset_folder(tmp_path):
    write(tmp_path / "meta" / "metadata.csv", "a|hello\nwavs/b.wav|world\n")
    touch(tmp_path / "data" / "wavs" / "a.wav", tmp_path / "data" / "wavs" / "b.wav")
    m = read_manifest(tmp_path / "meta" / "metadata.csv", root=tmp_path / "data")
    assert [e.audio for e in m.entries] == [str(tmp_path / "data" / "wavs" / "a.wav"), str(tmp_path / "data" / "wavs" / "b.wav")]
    assert m.problems == ()


def test_ljspeech_wrong_column_counts_are_unparsable_at_their_lines(tmp_path):
    ljspeech(tmp_path, "a|one\nb\nc|x|y|z\nd|four\n", ("a.wav", "d.wav"))
    m = read_manifest(tmp_path)
    assert [e.id for e in m.entries] == ["a", "d"]
    assert kinds(m) == [("unparsable", 2), ("unparsable", 3)]
    assert "4 columns" in m.problems[1].message


def test_ljspeech_header_fixes_the_column_count(tmp_path):
    ljspeech(tmp_path, "id|text|speaker\na|one|s1\nb|two\n", ("a.wav", "b.wav"))
    m = read_manifest(tmp_path)
    assert [e.speaker for e in m.entries] == ["s1"]
    assert kinds(m) == [("unlisted", None), ("unparsable", 3)]  # b.wav: its line is not a record


def test_bom_is_a_problem_at_line_1_and_taken_off(tmp_path):
    ljspeech(tmp_path, "\ufeffa|hello\nb|world\n", ("a.wav", "b.wav"))
    m = read_manifest(tmp_path)
    assert kinds(m) == [("bom", 1)]
    assert m.entries[0].id == "a"


def test_crlf_is_one_problem_with_count_and_first_line(tmp_path):
    ljspeech(tmp_path, "a|one\nb|two\r\nc|three\r\n", ("a.wav", "b.wav", "c.wav"))
    m = read_manifest(tmp_path)
    (problem,) = m.problems
    assert (problem.kind, problem.line) == ("crlf", 2)
    assert "2 lines" in problem.message
    assert [e.text for e in m.entries] == ["one", "two", "three"]


def test_the_byte_pass_tells_a_replacement_character_from_a_bad_byte(tmp_path):
    """The lines are read once; the bytes are looked at again only when a line held a CR or U+FFFD, and that pass
    decides: U+FFFD written as such is no problem, a bad byte in a last line with no newline is one."""
    ljspeech(tmp_path, "a|one \ufffd\nb|two \r here\n", ("a.wav", "b.wav"))
    assert kinds(read_manifest(tmp_path)) == []
    write(tmp_path / "metadata.csv", b"a|one\nb|caf\xe9")
    assert kinds(read_manifest(tmp_path)) == [("not-utf8", 2)]


def test_crlf_split_across_read_blocks(tmp_path):
    from trainproof.io.bounded import BLOCK_BYTES

    first = "a|" + "x" * (BLOCK_BYTES - 3) + "\r"  # the CR ends the first block, its LF starts the second
    ljspeech(tmp_path, first + "\nb|two\n", ("a.wav", "b.wav"))
    m = read_manifest(tmp_path)
    assert kinds(m) == [("crlf", 1)]


def test_blank_lines_are_one_problem_with_count_and_first_line(tmp_path):
    ljspeech(tmp_path, "a|one\n\nb|two\n   \nc|three\n", ("a.wav", "b.wav", "c.wav"))
    m = read_manifest(tmp_path)
    (problem,) = m.problems
    assert (problem.kind, problem.line) == ("blank-line", 2)
    assert "2 blank lines" in problem.message
    assert [e.line for e in m.entries] == [1, 3, 5]


def test_duplicate_id_at_the_second_occurrence_citing_the_first(tmp_path):
    ljspeech(tmp_path, "a|one\nb|two\na|again\n", ("a.wav", "b.wav"))
    m = read_manifest(tmp_path)
    (problem,) = m.problems
    assert (problem.kind, problem.line) == ("duplicate-id", 3)
    assert "line 1" in problem.message
    assert len(m.entries) == 3


def test_empty_text_is_a_problem_and_the_entry_stays(tmp_path):
    ljspeech(tmp_path, "a|one\nb|\nc|x|  \n", ("a.wav", "b.wav", "c.wav"))
    m = read_manifest(tmp_path)
    assert kinds(m) == [("empty-text", 2), ("empty-text", 3)]
    assert [e.text for e in m.entries] == ["one", "", "  "]


def test_problems_are_sorted_by_manifest_and_line(tmp_path):
    ljspeech(tmp_path, "\ufeffa|one\r\nb\r\na|x\r\n\r\nc|\r\n", ("a.wav", "c.wav", "zz.wav"))
    m = read_manifest(tmp_path)
    lines = [p.line or 0 for p in m.problems]
    assert lines == sorted(lines)
    assert {p.kind for p in m.problems} == {"bom", "crlf", "unparsable", "duplicate-id", "blank-line", "empty-text", "unlisted"}


# --- NeMo JSON Lines ------------------------------------------------------------


def jsonl(path: Path, *records: object) -> Path:
    return write(path, "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))


def test_nemo_fields_and_aliases(tmp_path):
    path = jsonl(
        tmp_path / "train.jsonl",
        {"audio_filepath": "a.wav", "text": "one", "duration": 1.5, "offset": 0.25, "speaker": 3},
        {"audio_path": "b.wav", "transcript": "two", "speaker_id": "s2", "duration": "2.0"},
        {"path": "c.wav", "sentence": "three", "spk": "s3"},
        {"audio": {"path": "d.wav", "array": None}, "normalized_text": "four", "text": "4", "pred_text": "for"},
        {"wav": "e.wav", "pred_text": "only a prediction"},
    )
    m = read_manifest(path, cwd=tmp_path / "nowhere")
    assert m.layout == "nemo"
    assert [e.listed for e in m.entries] == ["a.wav", "b.wav", "c.wav", "d.wav", "e.wav"]
    assert [e.text for e in m.entries] == ["one", "two", "three", "four", None]
    assert [e.speaker for e in m.entries] == ["3", "s2", "s3", None, None]
    assert [e.duration for e in m.entries] == [1.5, 2.0, None, None, None]
    assert m.entries[0].offset == 0.25
    assert kinds(m) == [("empty-text", 5)]


def test_nemo_relative_path_from_cwd_first_then_manifest_folder(tmp_path):
    cwd, data = tmp_path / "recipe", tmp_path / "data"
    touch(cwd / "clips" / "a.wav", data / "clips" / "a.wav", data / "clips" / "b.wav")
    path = jsonl(
        data / "m.jsonl",
        {"audio_filepath": "clips/a.wav", "text": "x"},
        {"audio_filepath": "clips/b.wav", "text": "y"},
        {"audio_filepath": "clips/c.wav", "text": "z"},
    )
    m = read_manifest(path, cwd=cwd)
    assert [e.audio for e in m.entries] == [str(cwd / "clips" / "a.wav"), str(data / "clips" / "b.wav"), str(data / "clips" / "c.wav")]
    assert any("working directory" in note for note in m.notes)


def test_nemo_default_cwd_keeps_relative_paths_relative(tmp_path, monkeypatch):
    touch(tmp_path / "a.wav", tmp_path / "sub" / "b.wav")
    jsonl(
        tmp_path / "sub" / "m.jsonl",
        {"audio_filepath": "a.wav", "text": "x"},
        {"audio_filepath": "b.wav", "text": "y"},
        {"audio_filepath": "/abs/c.wav", "text": "z"},
    )
    monkeypatch.chdir(tmp_path)
    m = read_manifest("sub/m.jsonl")
    assert [e.audio for e in m.entries] == ["a.wav", os.path.join("sub", "b.wav"), "/abs/c.wav"]
    assert m.entries[0].manifest == "sub/m.jsonl"


def test_nemo_root_overrides(tmp_path):
    touch(tmp_path / "a.wav")
    path = jsonl(tmp_path / "m.jsonl", {"audio_filepath": "a.wav", "text": "x"})
    m = read_manifest(path, root=tmp_path / "other", cwd=tmp_path)
    assert m.entries[0].audio == str(tmp_path / "other" / "a.wav")


def test_nemo_broken_lines_are_problems_at_their_lines(tmp_path):
    path = jsonl(
        tmp_path / "m.jsonl",
        {"audio_filepath": "a.wav", "text": "one"},
        '{"audio_filepath": "b.wav", "text": "two"',
        "[1, 2]",
        {"text": "no audio"},
        {"audio_filepath": 7, "text": "not a path"},
        {"audio_filepath": "f.wav", "text": "six", "duration": "long"},
        {"audio_filepath": "g.wav", "text": "seven", "duration": float("nan")},
    )
    m = read_manifest(path, cwd=tmp_path)
    assert kinds(m) == [
        ("unparsable", 2),
        ("unparsable", 3),
        ("no-audio-field", 4),
        ("no-audio-field", 5),
        ("unparsable", 6),
        ("unparsable", 7),
    ]
    assert [e.line for e in m.entries] == [1, 6, 7]
    assert m.entries[1].duration is None
    assert "not valid JSON" in m.problems[0].message


def test_nemo_duplicate_path_is_a_duplicate_unless_offsets_differ(tmp_path):
    path = jsonl(
        tmp_path / "m.jsonl",
        {"audio_filepath": "long.wav", "offset": 0, "duration": 2, "text": "a"},
        {"audio_filepath": "long.wav", "offset": 2, "duration": 2, "text": "b"},
        {"audio_filepath": "x.wav", "text": "c"},
        {"audio_filepath": "x.wav", "text": "d"},
    )
    m = read_manifest(path, cwd=tmp_path)
    assert kinds(m) == [("duplicate-id", 4)]


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ('[\n  {"audio_filepath": "a.wav", "text": "x"},\n  {"audio_filepath": "b.wav", "text": "y"}\n]\n', "JSON array"),
        ('[{"audio_filepath": "a.wav", "text": "x"}]\n', "JSON array"),
        ('{\n  "audio_filepath": "a.wav",\n  "text": "x"\n}\n', "pretty-printed"),
        ('{"a": {\n    "wav": "a.wav",\n    "text": "x"\n  }\n}\n', "pretty-printed"),
    ],
)
def test_one_json_document_is_one_problem(tmp_path, text, what):
    m = read_manifest(write(tmp_path / "m.json", text * 50))
    assert m.entries == ()
    (problem,) = m.problems
    assert problem.kind == "unparsable"
    assert what in problem.message


def test_binary_jsonl_is_an_input_error(tmp_path):
    path = write(tmp_path / "m.jsonl", bytes(range(256)) * 100)
    with pytest.raises(InputError, match="binary"):
        read_manifest(path)


def test_mostly_control_bytes_is_an_input_error(tmp_path):
    path = write(tmp_path / "m.jsonl", b"\x01\x02\x03\x04abc\n" * 1000)
    with pytest.raises(InputError, match="binary"):
        read_manifest(path)


def test_utf16_manifest_is_an_input_error(tmp_path):
    path = write(tmp_path / "m.jsonl", '{"audio_filepath": "a.wav"}\n'.encode("utf-16"))
    with pytest.raises(InputError, match="UTF-16"):
        read_manifest(path)


def test_a_manifest_of_garbage_is_an_input_error(tmp_path):
    path = write(tmp_path / "m.jsonl", "this is not json\n" * (LEADING_GARBAGE + 5))
    with pytest.raises(InputError, match="not a nemo manifest"):
        read_manifest(path)


def test_a_few_garbage_lines_are_problems(tmp_path):
    m = read_manifest(write(tmp_path / "m.jsonl", "not json\nnor this\n"))
    assert kinds(m) == [("unparsable", 1), ("unparsable", 2)]


def test_ten_thousand_missing_files_read_quickly(tmp_path):
    path = write(
        tmp_path / "m.jsonl",
        "".join(json.dumps({"audio_filepath": f"clips/{i:05d}.wav", "text": f"clip {i}", "duration": 1.0}) + "\n" for i in range(10_000)),
    )
    m = read_manifest(path, cwd=tmp_path)
    assert len(m.entries) == 10_000
    assert m.problems == ()
    assert m.entries[-1].audio == str(tmp_path / "clips" / "09999.wav")


def test_ten_thousand_missing_ljspeech_ids(tmp_path):
    ljspeech(tmp_path, "".join(f"LJ{i:05d}|clip {i}\n" for i in range(10_000)), ("LJ00000.wav",))
    m = read_manifest(tmp_path)
    assert len(m.entries) == 10_000
    assert m.problems == ()


# --- CSV / TSV --------------------------------------------------------------------


def test_csv_deepspeech_style(tmp_path):
    touch(tmp_path / "a.wav")
    path = write(
        tmp_path / "train.csv", 'wav_filename,wav_filesize,transcript\na.wav,1234,hello there\n/abs/b.wav,99,"quoted, with comma"\n'
    )
    m = read_manifest(path, cwd=tmp_path / "elsewhere")
    assert m.layout == "csv"
    assert [e.audio for e in m.entries] == [str(tmp_path / "a.wav"), "/abs/b.wav"]
    assert [e.text for e in m.entries] == ["hello there", "quoted, with comma"]
    assert [e.line for e in m.entries] == [2, 3]
    assert m.problems == ()


def test_tsv_common_voice_style_with_clips_folder(tmp_path):
    touch(tmp_path / "clips" / "cv_1.mp3")
    path = write(
        tmp_path / "validated.tsv", 'client_id\tpath\tsentence\tup_votes\nabc\tcv_1.mp3\t"Hello," he said.\t2\ndef\tcv_2.mp3\tBye.\t0\n'
    )
    m = read_manifest(path, cwd=tmp_path / "elsewhere")
    assert [e.audio for e in m.entries] == [str(tmp_path / "clips" / "cv_1.mp3"), str(tmp_path / "cv_2.mp3")]
    assert m.entries[0].text == '"Hello," he said.'
    assert [e.speaker for e in m.entries] == ["abc", "def"]
    assert [e.id for e in m.entries] == ["cv_1.mp3", "cv_2.mp3"]


def test_csv_relative_paths_from_cwd_first(tmp_path):
    touch(tmp_path / "run" / "a.wav", tmp_path / "data" / "a.wav", tmp_path / "data" / "b.wav")
    path = write(tmp_path / "data" / "m.csv", "ID,duration,wav,spk_id,wrd\nu1,1.5,a.wav,s1,HELLO\nu2,2,b.wav,s1,WORLD\n")
    m = read_manifest(path, cwd=tmp_path / "run")
    assert [e.audio for e in m.entries] == [str(tmp_path / "run" / "a.wav"), str(tmp_path / "data" / "b.wav")]
    assert [e.id for e in m.entries] == ["u1", "u2"]
    assert [e.duration for e in m.entries] == [1.5, 2.0]
    assert [e.text for e in m.entries] == ["HELLO", "WORLD"]


def test_csv_wrong_column_count_and_blank_lines(tmp_path):
    path = write(tmp_path / "m.csv", "path,text\na.wav,one\nb.wav,two,three\n\nc.wav,four\n")
    m = read_manifest(path, cwd=tmp_path)
    assert kinds(m) == [("unparsable", 3), ("blank-line", 4)]
    assert [e.line for e in m.entries] == [2, 5]


def test_csv_open_quote_spanning_lines_is_one_problem(tmp_path):
    path = write(tmp_path / "m.csv", 'path,text\na.wav,"open\nb.wav,x",y\nc.wav,fine\n')
    m = read_manifest(path, cwd=tmp_path)
    assert kinds(m) == [("unparsable", 2)]
    assert "lines 2-3" in m.problems[0].message
    assert [e.line for e in m.entries] == [4]


def test_csv_without_an_audio_column(tmp_path):
    m = read_manifest(write(tmp_path / "m.csv", "speaker,text\ns1,hello\n"))
    assert m.entries == ()
    assert kinds(m) == [("no-audio-field", 1)]


def test_csv_root_overrides(tmp_path):
    touch(tmp_path / "a.wav")
    path = write(tmp_path / "m.csv", "path,text\na.wav,one\n")
    m = read_manifest(path, root="/data", cwd=tmp_path)
    assert m.entries[0].audio == "/data/a.wav"


# --- Kaldi ------------------------------------------------------------------------


def kaldi(folder: Path, wav_scp: str, text: str | None = None, utt2spk: str | None = None, segments: str | None = None) -> Path:
    write(folder / "wav.scp", wav_scp)
    for name, content in (("text", text), ("utt2spk", utt2spk), ("segments", segments)):
        if content is not None:
            write(folder / name, content)
    return folder


def test_kaldi_data_dir_resolves_from_the_working_directory(tmp_path):
    folder = kaldi(tmp_path / "data" / "train", "u1 wavs/u1.wav\nu2 /abs/u2.flac\n", "u2 second one\nu1 first one\n", "u1 spkA\nu2 spkB\n")
    m = read_manifest(folder, cwd=tmp_path)
    assert m.layout == "kaldi"
    assert [e.id for e in m.entries] == ["u2", "u1"]  # the order of text
    assert [e.line for e in m.entries] == [1, 2]
    assert {e.manifest for e in m.entries} == {str(folder / "text")}
    assert [e.audio for e in m.entries] == ["/abs/u2.flac", str(tmp_path / "wavs" / "u1.wav")]
    assert [e.speaker for e in m.entries] == ["spkB", "spkA"]
    assert [e.text for e in m.entries] == ["second one", "first one"]
    assert m.problems == ()


def test_kaldi_root_and_default_cwd(tmp_path, monkeypatch):
    folder = kaldi(tmp_path / "d", "u1 wavs/u1.wav\n", "u1 hello\n")
    assert read_manifest(folder, root="/corpus").entries[0].audio == "/corpus/wavs/u1.wav"
    monkeypatch.chdir(tmp_path)
    assert read_manifest("d").entries[0].audio == "wavs/u1.wav"


def test_kaldi_segments_give_offset_and_duration(tmp_path):
    folder = kaldi(tmp_path, "rec1 rec1.wav\n", "s1 one\ns2 two\n", segments="s1 rec1 0.5 2.0\ns2 rec1 2.0 -1\n")
    m = read_manifest(folder, cwd=tmp_path)
    assert [(e.id, e.offset, e.duration) for e in m.entries] == [("s1", 0.5, 1.5), ("s2", 2.0, None)]
    assert {e.audio for e in m.entries} == {str(tmp_path / "rec1.wav")}
    assert m.problems == ()


def test_a_segment_past_any_recording_is_unparsable_at_its_line(tmp_path):
    """A segment time of 1e308 s (past MAX_CLAIM_S, 68 years) is a value out of range at its line, not a segment sought
    at a clamped frame count and reported at that figure (issue 27, item 9)."""
    segments = "s1 rec1 1e308 1e308\ns2 rec1 0 1e308\ns3 rec1 0.5 2147483648\n"
    folder = kaldi(tmp_path / "k", "rec1 rec1.wav\n", "s3 three\n", segments=segments)
    m = read_manifest(folder, cwd=tmp_path)
    assert [(e.id, e.offset, e.duration) for e in m.entries] == [("s3", 0.5, 2147483647.5)]  # up to 2**31 s is a time
    why = "1e+308 s is out of range: over 2,147,483,648 s (68 years), longer than any recording"
    assert [(p.kind, p.line, p.message) for p in m.problems] == [
        ("unparsable", 1, f"line 1: segment 's1''s start {why}"),
        ("unparsable", 2, f"line 2: segment 's2''s end {why}"),
    ]
    lines = [
        {"audio_filepath": "a.wav", "text": "one", "offset": 1e308, "duration": 1.0},
        {"audio_filepath": "b.wav", "text": "two", "offset": 1.0, "duration": 1e308},
        {"audio_filepath": "c.wav", "text": "three", "offset": 2**31, "duration": 1.0},
        {"audio_filepath": "d.wav", "text": "four", "duration": 1e308},  # no segment: a claim about the clip, kept
    ]
    m = read_manifest(write(tmp_path / "m.jsonl", "".join(json.dumps(line) + "\n" for line in lines)), cwd=tmp_path)
    assert [(e.offset, e.duration) for e in m.entries] == [(None, 1.0), (1.0, None), (2.0**31, 1.0), (None, 1e308)]
    assert [(p.line, p.message) for p in m.problems] == [(1, f"line 1: offset {why}"), (2, f"line 2: duration {why}")]


def test_a_segment_past_any_recording_is_reported_as_its_value_not_a_clamped_figure(tmp_path, capsys, monkeypatch):
    pytest.importorskip("soundfile")
    pytest.importorskip("pandas")
    import wave

    from trainproof.cli import main

    with wave.open(str(tmp_path / "a.wav"), "wb") as clip:
        clip.setnchannels(1)
        clip.setsampwidth(2)
        clip.setframerate(16000)
        clip.writeframes(bytes(range(256)) * 125)
    write(tmp_path / "m.jsonl", json.dumps({"audio_filepath": "a.wav", "text": "hello there", "offset": 1e308, "duration": 1.0}) + "\n")
    monkeypatch.chdir(tmp_path)
    main(["data", "m.jsonl", "--no-cache", "--jobs", "1"])
    out = capsys.readouterr().out
    assert "288230376151711" not in out
    assert "line 1: offset 1e+308 s is out of range" in out


def test_kaldi_pipeline_is_unparsable_and_bad_segments(tmp_path):
    folder = kaldi(
        tmp_path,
        "rec1 sox rec1.sph -t wav - |\nrec2 rec2.wav\nrec3 feats.ark:1234\n",
        "s1 one\ns2 two\ns3 three\ns4 four\n",
        segments="s1 rec1 0 1\ns2 rec2 0 1\ns3 rec2 5 4\ns4 nowhere 0 1\n",
    )
    m = read_manifest(folder, cwd=tmp_path)
    assert [e.id for e in m.entries] == ["s2"]
    found = [(Path(p.manifest).name, p.kind, p.line) for p in m.problems]
    assert found == [
        ("segments", "unparsable", 3),
        ("segments", "no-audio-field", 4),
        ("text", "no-audio-field", 3),
        ("wav.scp", "unparsable", 1),
        ("wav.scp", "unparsable", 3),
    ]
    assert "command pipeline" in m.problems[3].message


def test_kaldi_utterance_missing_from_text(tmp_path):
    folder = kaldi(tmp_path, "u1 u1.wav\nu2 u2.wav\n", "u1 hello\nu9 orphan\n")
    m = read_manifest(folder, cwd=tmp_path)
    assert [(e.id, e.line, Path(e.manifest).name, e.text) for e in m.entries] == [("u1", 1, "text", "hello"), ("u2", 2, "wav.scp", None)]
    assert [(Path(p.manifest).name, p.kind, p.line) for p in m.problems] == [("text", "no-audio-field", 2), ("wav.scp", "empty-text", 2)]


def test_kaldi_given_as_one_of_its_files(tmp_path):
    folder = kaldi(tmp_path, "u1 u1.wav\n", "u1 hello\n")
    assert read_manifest(folder / "wav.scp").layout == "kaldi"
    assert read_manifest(folder / "text").layout == "kaldi"


def test_kaldi_duplicates_and_crlf_per_file(tmp_path):
    folder = kaldi(tmp_path, "u1 u1.wav\r\nu1 other.wav\r\n", "u1 hello\n")
    m = read_manifest(folder, cwd=tmp_path)
    assert [(Path(p.manifest).name, p.kind, p.line) for p in m.problems] == [("wav.scp", "crlf", 1), ("wav.scp", "duplicate-id", 2)]
    assert m.entries[0].audio == str(tmp_path / "u1.wav")


# --- a folder of clips --------------------------------------------------------------


def test_folder_of_audio_with_transcripts(tmp_path):
    touch(tmp_path / "a.wav", tmp_path / "b.flac", tmp_path / "c.wav", tmp_path / "spk2" / "d.wav", tmp_path / "._a.wav")
    write(tmp_path / "a.txt", "hello\nthere\n")
    write(tmp_path / "b.lab", "lab text")
    write(tmp_path / "spk2" / "d.normalized.txt", "normalized")
    write(tmp_path / "README.txt", "about")
    m = read_manifest(tmp_path)
    assert m.layout == "folder"
    assert [e.id for e in m.entries] == ["a.wav", "b.flac", "spk2/d.wav"]
    assert [e.text for e in m.entries] == ["hello there", "lab text", "normalized"]
    assert [e.manifest for e in m.entries] == [
        str(tmp_path / "a.txt"),
        str(tmp_path / "b.lab"),
        str(tmp_path / "spk2" / "d.normalized.txt"),
    ]
    assert {e.line for e in m.entries} == {1}
    assert m.entries[2].audio == str(tmp_path / "spk2" / "d.wav")
    # an audio file no transcript lists is the folder layout's unlisted clip
    assert [(p.kind, p.file) for p in m.problems] == [("unlisted", str(tmp_path / "c.wav"))]


def test_folder_transcript_without_its_audio_is_a_listed_missing_clip(tmp_path):
    touch(tmp_path / "a.wav")
    write(tmp_path / "a.txt", "hello")
    write(tmp_path / "gone.txt", "lost clip")
    m = read_manifest(tmp_path)
    assert [(e.id, e.listed, e.audio, e.manifest) for e in m.entries][1] == ("gone", "gone.*", str(tmp_path / "gone"), str(tmp_path / "gone.txt"))


def test_a_folder_of_audio_without_any_transcript_is_an_audio_only_dataset(tmp_path):
    touch(tmp_path / "a.wav", tmp_path / "sub" / "b.flac")
    write(tmp_path / "sub" / "notes.csv", "path,text\n")
    m = read_manifest(tmp_path)
    assert (m.layout, m.audio_only) == ("folder", True)
    assert [(e.id, e.audio, e.text, e.line, e.manifest) for e in m.entries] == [
        ("a.wav", str(tmp_path / "a.wav"), None, 0, str(tmp_path / "a.wav")),
        ("sub/b.flac", str(tmp_path / "sub" / "b.flac"), None, 0, str(tmp_path / "sub" / "b.flac")),
    ]
    assert m.problems == ()  # no clip is unlisted, none has an empty transcript: there are none to have
    assert any("audio-only" in note and "sub/notes.csv" in note for note in m.notes)


def test_a_folder_with_some_transcripts_keeps_the_untranscribed_clips_unlisted(tmp_path):
    touch(tmp_path / "a.wav", tmp_path / "b.wav")
    write(tmp_path / "a.txt", "hello")
    m = read_manifest(tmp_path)
    assert not m.audio_only
    assert [e.id for e in m.entries] == ["a.wav"]
    assert [(p.kind, p.file) for p in m.problems] == [("unlisted", str(tmp_path / "b.wav"))]


def test_a_folder_without_audio_is_still_no_dataset(tmp_path):
    write(tmp_path / "a.txt", "hello")
    (tmp_path / "a.txt").unlink()
    write(tmp_path / "README.md", "nothing here")
    with pytest.raises(InputError, match="holds none of the dataset layouts"):
        read_manifest(tmp_path)


def test_folder_transcript_with_bom(tmp_path):
    touch(tmp_path / "a.wav")
    write(tmp_path / "a.txt", "\ufeffhello")
    m = read_manifest(tmp_path)
    assert m.entries[0].text == "hello"
    assert kinds(m) == [("bom", 1)]


def test_folder_with_no_layout_is_an_input_error(tmp_path):
    write(tmp_path / "train.jsonl", '{"audio_filepath": "a.wav"}\n')
    with pytest.raises(InputError, match="train.jsonl"):
        read_manifest(tmp_path)


# --- errors and determinism ---------------------------------------------------------


def test_missing_path_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        read_manifest(tmp_path / "nope")


def test_audio_file_is_an_input_error(tmp_path):
    touch(tmp_path / "a.wav")
    with pytest.raises(InputError, match="audio file"):
        read_manifest(tmp_path / "a.wav")


def test_empty_manifest_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="empty"):
        read_manifest(write(tmp_path / "m.jsonl", "\n\n"))


def test_unknown_text_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="not a manifest"):
        read_manifest(write(tmp_path / "notes.txt", "just some words\n"))


def test_long_garbage_line_costs_bounded_memory(tmp_path):
    from trainproof.io.bounded import MAX_LINE_BYTES

    path = tmp_path / "m.jsonl"
    with path.open("wb") as handle:
        handle.write(b'{"audio_filepath": "a.wav"}\n')
        handle.write(b"x" * (MAX_LINE_BYTES + 10))
    with pytest.raises(InputError, match="longer than"):
        read_manifest(path)


def test_reading_is_deterministic(tmp_path):
    ljspeech(tmp_path, "\ufeffb|two\r\na|one\r\na|dup\r\n", ("a.wav", "b.wav", "a.flac", "x.wav", "y.wav"))
    first, second = read_manifest(tmp_path), read_manifest(tmp_path)
    assert first == second
    assert [p.file for p in first.problems if p.kind == "unlisted"] == [str(tmp_path / "wavs" / "x.wav"), str(tmp_path / "wavs" / "y.wav")]


# --- the shared corpus ----------------------------------------------------------------


def test_corpus_ljspeech_folder(corpus):
    folder = corpus / SPEECH / "coqui-ai_TTS_tests_ljspeech"
    if not folder.is_dir():
        pytest.skip("no coqui LJSpeech sample in the corpus")
    m = read_manifest(folder)
    assert m.layout == "ljspeech"
    assert len(m.entries) == 8
    assert all(Path(e.audio).is_file() for e in m.entries)
    assert all(e.audio.endswith(".wav") for e in m.entries)
    unlisted = [p for p in m.problems if p.kind == "unlisted"]
    assert len(unlisted) == 24  # 32 wavs, 8 transcribed
    assert all(p.file.endswith(".wav") for p in unlisted)
    assert {p.kind for p in m.problems} == {"unlisted"}
    assert any("several audio files" in note for note in m.notes)


@pytest.mark.parametrize("name", ["metadata_wav.csv", "metadata_flac.csv", "metadata_mp3.csv"])
def test_corpus_coqui_manifests_with_a_header(corpus, name):
    path = corpus / SPEECH / "coqui-ai_TTS_tests_ljspeech" / name
    if not path.is_file():
        pytest.skip(f"no {name} in the corpus")
    m = read_manifest(path)
    assert len(m.entries) == 8
    assert all(Path(e.audio).is_file() for e in m.entries)
    assert {e.speaker for e in m.entries} == {f"ljspeech-{n}" for n in range(4)}
    unlisted = [p for p in m.problems if p.kind == "unlisted"]
    assert len(unlisted) == (24 if name == "metadata_wav.csv" else 0)


def test_corpus_speechbrain_samples(corpus):
    base = corpus / SPEECH / "speechbrain_tests_samples"
    if not base.is_dir():
        pytest.skip("no speechbrain samples in the corpus")
    audio = read_manifest(base / "ASR")  # its transcripts are in annotation/, not beside the clips: audio alone
    assert audio.audio_only and len(audio.entries) == 12
    assert {e.text for e in audio.entries} == {None}
    table = read_manifest(base / "annotation" / "ASR_train.csv", root=base.parent / "nowhere")
    assert table.layout == "csv"
    assert [e.id for e in table.entries][:1] == ["spk1_snt1"]
    assert all(e.speaker and e.text and e.duration for e in table.entries)
    document = read_manifest(base / "annotation" / "ASR_train.json")
    assert document.entries == ()
    assert [p.kind for p in document.problems] == ["unparsable"]


def test_nemo_lines_read_alike_by_the_fast_and_the_standard_parser(tmp_path):
    """Manifest lines go through orjson unless it would read them differently: a 19-digit id stays an exact integer,
    NaN is read (and refused as a duration), and a broken line names its column as the standard parser does."""
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(
        '{"audio_filepath": "/data/a.wav", "text": "one", "id": 1234567890123456789012}\n'
        '{"audio_filepath": "/data/./b.wav", "text": "two", "duration": NaN}\n'
        '{"audio_filepath": "/data//c.wav", "text": "three", "duration": 1e400}\n'
        '{"audio_filepath": "/data/d.wav", "text": "four",}\n'
        '{"audio_filepath": "/data/e.wav", "text": "five", "id": -9223372036854775809}\n'
        '{"audio_filepath": "/data/f.wav", "text": "six", "duration": 1' + "0" * 400 + "}\n"
    )
    m = read_manifest(str(manifest))
    assert [e.id for e in m.entries][:1] == ["1234567890123456789012"]
    assert m.entries[-2].id == "-9223372036854775809"  # one past int64: orjson's float is seen and read again
    assert [e.audio for e in m.entries] == ["/data/a.wav", os.path.normpath("/data/./b.wav"), os.path.normpath("/data//c.wav"), "/data/e.wav", "/data/f.wav"]
    problems = {(p.line, p.kind): p.message for p in m.problems}
    assert problems[2, "unparsable"] == "line 2: duration 'nan' is not a number of seconds"
    assert problems[3, "unparsable"] == "line 3: duration 'inf' is not a number of seconds"
    assert problems[4, "unparsable"] == "line 4 is not valid JSON: Expecting property name enclosed in double quotes at column 50"
    assert problems[6, "unparsable"] == "line 6: duration '1" + "0" * 39 + "...' is not a number of seconds"  # past float range: not a crash


def _plain_line(i: int, **more: object) -> str:
    return json.dumps({"audio_filepath": f"/d/{i}.wav", "text": f"line {i}", **more})


COLUMNAR_CASES = {
    # name: (lines of the manifest, whether Arrow's columnar reading takes it)
    "plain": (['{"audio_filepath": "/d/a.wav", "text": "one", "duration": 1.5, "speaker": "s1", "id": "a"}',
               '{"audio_filepath": "/d/b.wav", "text": "two", "duration": 2, "speaker": "", "id": ""}',
               '{"audio_filepath": "/d/c.wav", "text": "caf\u00e9 \u65e5\u672c", "duration": null, "speaker": null, "id": null, "extra": {"x": [1]}}',
               '{"audio_filepath": "/d/d.wav", "text": "a \\n b", "duration": 0}'], True),
    "relative and odd paths": (['{"audio_filepath": "rel.wav", "text": "one"}', '{"audio_filepath": "/d//e.wav", "text": "two"}',
                                '{"audio_filepath": "sub/../x.wav", "text": "three"}'], True),
    "no newline at the end": (['{"audio_filepath": "/d/a.wav", "text": "one"}', '{"audio_filepath": "/d/b.wav", "text": "two"}\\'], True),
    "a whole number past 64 bits": (['{"audio_filepath": "/d/a.wav", "text": "one", "duration": 1180591620717411303424}'], True),
    "BOM": (['\ufeff{"audio_filepath": "/d/a.wav", "text": "one"}'], False),
    "CRLF": (['{"audio_filepath": "/d/a.wav", "text": "one"}\r'], False),
    "blank line": (['{"audio_filepath": "/d/a.wav", "text": "one"}', "", '{"audio_filepath": "/d/b.wav", "text": "two"}'], False),
    "spaces line": (['{"audio_filepath": "/d/a.wav", "text": "one"}', "   ", '{"audio_filepath": "/d/b.wav", "text": "two"}'], False),
    "blank last lines": (['{"audio_filepath": "/d/a.wav", "text": "one"}', "", ""], False),
    "whitespace line": (['{"audio_filepath": "/d/a.wav", "text": "one"}', "  \u3000", '{"audio_filepath": "/d/b.wav", "text": "two"}'], False),
    "tab": (['{"audio_filepath": "/d/a.wav",\t"text": "one"}'], False),
    "escaped pair": (['{"audio_filepath": "/d/a.wav", "text": "\\ud83d\\ude00"}'], False),
    "lone surrogate": (['{"audio_filepath": "/d/a.wav", "text": "x\\udc80"}'], False),
    "NaN": (['{"audio_filepath": "/d/a.wav", "text": "one", "duration": NaN}'], False),
    "negative": (['{"audio_filepath": "/d/a.wav", "text": "one", "duration": -1}'], False),
    "duplicate id": (['{"audio_filepath": "/d/a.wav", "text": "one"}', '{"audio_filepath": "/d/a.wav", "text": "two"}'], False),
    "upper-case key": (['{"Audio_Filepath": "/d/a.wav", "text": "one"}'], False),
    "two speaker names": (['{"audio_filepath": "/d/a.wav", "text": "one", "speaker": "s"}', '{"audio_filepath": "/d/b.wav", "text": "two", "spk": "t"}'], False),
    "missing text": (['{"audio_filepath": "/d/a.wav", "text": "one"}', '{"audio_filepath": "/d/b.wav"}'], False),
    "empty text": (['{"audio_filepath": "/d/a.wav", "text": " "}'], False),
    "unicode space text": (['{"audio_filepath": "/d/a.wav", "text": "\u3000"}'], False),
    "audio as a dict": (['{"audio": {"path": "/d/a.wav"}, "text": "one"}'], False),
    "an array line": (['{"audio_filepath": "/d/a.wav", "text": "one"}', "[1, 2]"], False),
    "number id": (['{"audio_filepath": "/d/a.wav", "text": "one", "id": 7}'], False),
    "offset": (['{"audio_filepath": "/d/a.wav", "text": "one", "offset": 1.0}'], False),
    "duration as text": (['{"audio_filepath": "/d/a.wav", "text": "one", "duration": "2.5"}'], False),
    "two objects on a line": (['{"audio_filepath": "/d/a.wav", "text": "one"} {"audio_filepath": "/d/b.wav", "text": "two"}'], False),
    "empty object": (['{"audio_filepath": "/d/a.wav", "text": "one"}', "{}"], False),
    "repeated key": (['{"audio_filepath": "/d/a.wav", "text": "one", "text": "two"}'], False),
    "bad UTF-8": ([b'{"audio_filepath": "/d/a.wav", "text": "caf\xe9"}'], False),
    # screened before Arrow sees the bytes (issue 27): nesting that crashes or stalls its parser, fields that blow up
    "nesting within the bound": ([_plain_line(i) for i in range(40)]
                                 + ['{"audio_filepath": "/d/a.wav", "text": "one", "x": ' + "[" * 100 + "]" * 100 + "}"], True),
    "nesting past the bound": (['{"audio_filepath": "/d/a.wav", "text": "one"}',
                                '{"audio_filepath": "/d/b.wav", "text": "two", "x": ' + "[" * 257 + "]" * 257 + "}"], False),
    "brackets in a transcript past the bound": (['{"audio_filepath": "/d/a.wav", "text": "' + "[noise] " * 300 + '"}'], False),
    "a field first seen past the sampled lines": ([_plain_line(i) for i in range(70)] + [_plain_line(70, extra=1)], False),
    "a whole-number duration in the sampled lines, a fraction later": ([_plain_line(i, duration=i + 1) for i in range(70)]
                                                                       + [_plain_line(70, duration=2.5)], True),
    "more fields than the file has bytes for": ([_plain_line(0, **{f"k{i}": 0 for i in range(300)})]
                                                + [_plain_line(i) for i in range(1, 200)], False),
    "brackets denser than the screen indexes": ([_plain_line(i, text="[" * 100) for i in range(4)], False),
    "a first line longer than the sample": ([_plain_line(0, text="a" * 17_000), _plain_line(1)], False),
}  # fmt: skip


FIRST_SEEN_PAST_THE_FIRST_BLOCK = {"nesting within the bound"}


@pytest.mark.parametrize("blocks", [False, True], ids=["whole", "in-blocks"])
@pytest.mark.parametrize("case", sorted(COLUMNAR_CASES))
def test_nemo_read_as_columns_is_what_the_line_reading_gives(case, blocks, tmp_path, monkeypatch):
    """A plain NeMo manifest is read at once as columns by Arrow's JSON reader; anything the line reading has something
    to say about, or that Arrow and Python's json might read apart, goes to the line reading. Either way, the same
    entries, problems and notes as the line reading alone. ``in-blocks``: read as a manifest over COLUMNAR_MAX_BYTES
    is, 512 bytes of whole lines at a time (every case's lines but those of cases it refuses anyway fit one)."""
    pytest.importorskip("pyarrow")
    from trainproof.data.layouts import nemo as manifest_module

    if blocks:
        monkeypatch.setattr(manifest_module, "COLUMNAR_MAX_BYTES", 512)
    lines, columnar = COLUMNAR_CASES[case]
    raw = [line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass") for line in lines]
    data = b"\n".join(raw)
    data = data[:-1] if data.endswith(b"\\") else data + b"\n"  # a last line ending in a backslash: no newline after it
    path = write(tmp_path / "m.jsonl", data)
    touch(tmp_path / "rel.wav")
    taken = []
    at_once = manifest_module._read_nemo_columns
    monkeypatch.setattr(manifest_module, "_read_nemo_columns", lambda *a: at_once(*a) and not taken.append(True))
    monkeypatch.chdir(tmp_path)
    quick = read_manifest(path)
    monkeypatch.setattr(manifest_module, "_read_nemo_columns", lambda *a: False)
    lined = read_manifest(path)
    assert (quick.entries, quick.problems, quick.notes) == (lined.entries, lined.problems, lined.notes)
    if blocks and case in FIRST_SEEN_PAST_THE_FIRST_BLOCK:
        columnar = False  # its "x" is past the first 512 bytes, whose lines give every block its fields
    assert bool(taken) is columnar
    if columnar:
        assert len(quick.entries) == len(lines)


def test_entries_kept_as_rows_or_as_columns_are_the_same_sequence():
    """A manifest's entries as the line reading keeps them (objects) and as the columnar reading does (lists): equal,
    indexed, sliced, pickled and read a column at a time alike."""
    import pickle

    from trainproof.data.model import ENTRY_FIELDS, Entries, Entry, entry_column

    rows = (Entry(1, "a", "/d/a.wav", "a.wav", "one", "m", 1.5, None, "s"), Entry(2, "b", "/d/b.wav", "b.wav", None, "m"))
    columns = {name: [getattr(entry, name) for entry in rows] for name in ENTRY_FIELDS}
    as_rows, as_columns = Entries(rows), Entries(columns=columns)
    assert as_rows == as_columns == rows
    assert as_columns == list(rows)
    assert as_columns != rows[:1]
    assert (len(as_columns), as_columns[1], as_columns[-1], as_columns[:1]) == (2, rows[1], rows[1], rows[:1])
    assert list(as_columns) == list(rows)
    assert pickle.loads(pickle.dumps(as_columns)) == rows
    assert hash(as_rows) == hash(as_columns)
    for name in ENTRY_FIELDS:
        assert list(as_rows.column(name)) == list(as_columns.column(name)) == list(entry_column(rows, name))
    assert not Entries()
    assert Entries(columns={name: [] for name in ENTRY_FIELDS}) == ()
