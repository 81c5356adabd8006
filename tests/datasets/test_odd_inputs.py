"""``trainproof data`` on inputs a dataset should not have but real ones do: pipes, names that are not UTF-8, bytes
that are not UTF-8, ``..`` in paths, negative offsets, keys that differ in case, quoted newlines, a URI root."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("soundfile")
pytest.importorskip("pandas")

from tests.datasets.test_clip import SENTENCE, voiced, write  # noqa: E402
from tests.helpers import REPO  # noqa: E402
from trainproof.cli import main  # noqa: E402
from trainproof.data.cache import Cache  # noqa: E402
from trainproof.data.manifest import read_manifest  # noqa: E402

RATE = 22050


def clip(path, seed: int = 0) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    return write(path, voiced(RATE, SENTENCE, seed=seed), RATE)


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["data", *map(str, args), "--no-cache", "--jobs", "1"])
    out, err = capsys.readouterr()
    return code, out, err


def judged(capsys, *args: str) -> dict:
    code, out, err = run(capsys, *args, "--json")
    assert "Traceback" not in err
    report = json.loads(out)
    report["code"] = code
    return report


def findings(report: dict) -> list[tuple[str, str]]:
    return [(f["id"], f["level"]) for subject in report["subjects"] for f in subject["findings"]]


# --- pipes ----------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("name", ["manifest.jsonl", "wav.scp", "metadata.csv"])
def test_a_fifo_given_as_the_manifest_is_exit_2_not_a_hang(tmp_path, name):
    fifo = tmp_path / name
    os.mkfifo(fifo)
    done = subprocess.run(
        [sys.executable, "-m", "trainproof", "data", str(fifo), "--no-cache"], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "is not a regular file (a FIFO)" in done.stderr
    assert "save it to a file" in done.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_transcript_costs_its_clip_its_transcript_not_the_dataset(tmp_path, capsys):
    clip(tmp_path / "ds" / "a.wav")
    clip(tmp_path / "ds" / "b.wav")
    (tmp_path / "ds" / "b.txt").write_text("a transcript that is fine")
    os.mkfifo(tmp_path / "ds" / "a.txt")
    manifest = read_manifest(tmp_path / "ds")
    assert {entry.id: entry.text for entry in manifest.entries} == {"a.wav": None, "b.wav": "a transcript that is fine"}
    assert any("1 transcript cannot be read" in note and "a FIFO" in note for note in manifest.notes)
    report = judged(capsys, tmp_path / "ds")
    assert report["code"] == 1
    assert ("TP-DATA-EMPTY-TEXT", "FAIL") in findings(report)


def test_a_dangling_transcript_link_costs_only_its_clip(tmp_path):
    clip(tmp_path / "ds" / "a.wav")
    clip(tmp_path / "ds" / "b.wav")
    (tmp_path / "ds" / "b.txt").write_text("fine")
    os.symlink(tmp_path / "gone.txt", tmp_path / "ds" / "a.txt")
    manifest = read_manifest(tmp_path / "ds")
    assert [entry.text for entry in manifest.entries] == [None, "fine"]


# --- names and bytes that are not UTF-8 ----------------------------------------------


@pytest.mark.skipif(sys.platform != "linux", reason="a file name of any bytes is a Linux filesystem's")
@pytest.mark.parametrize("cache", [False, True])
def test_a_clip_whose_name_is_not_utf8_is_judged_like_any_other(tmp_path, capsys, monkeypatch, cache):
    folder = tmp_path / "ds"
    clip(folder / "ok.wav")
    (folder / "ok.txt").write_text("fine text")
    bad = os.path.join(os.fsencode(folder), b"bad\xff.wav")
    os.rename(clip(tmp_path / "tmp.wav", seed=1), bad)
    with open(os.path.join(os.fsencode(folder), b"bad\xff.txt"), "w") as handle:
        handle.write("other text")
    monkeypatch.chdir(tmp_path)
    args = ["data", "ds", "--jobs", "1", "--json"] + ([] if cache else ["--no-cache"])
    for _ in range(2 if cache else 1):  # with a cache: written, then read
        code = main(args)
        out, err = capsys.readouterr()
        assert (code, err) == (0, "")
        subject = json.loads(out)["subjects"][0]
        assert subject["summary"]["readable"] == 2
    if cache:  # the clip whose path sqlite cannot hold is judged every run, and never stored
        with Cache(tmp_path / ".trainproof_cache") as stored:
            assert stored.count() == 1


def test_a_transcript_with_a_lone_surrogate_escape_is_judged(tmp_path, capsys):
    clip(tmp_path / "a.wav")
    (tmp_path / "m.jsonl").write_text(json.dumps({"audio_filepath": "a.wav", "text": "half a pair \ud800 here"}) + "\n")
    report = judged(capsys, tmp_path / "m.jsonl")
    assert report["code"] == 0
    assert ("TP-DATA-CHARACTERS", "WARN") in findings(report)


def test_a_manifest_line_that_is_not_utf8_fails_at_that_line(tmp_path, capsys):
    lines = [f"c{i}|the speaker reads line {'abcdefghij'[i]} slowly" for i in range(10)]
    lines[3] = "c3|un caf\xe9 cr\xe8me s'il vous pla\xeet"
    for i in range(10):
        clip(tmp_path / "lj" / "wavs" / f"c{i}.wav")
    (tmp_path / "lj" / "metadata.csv").write_bytes(("\n".join(lines) + "\n").encode("latin-1"))
    manifest = read_manifest(tmp_path / "lj")
    assert [(p.kind, p.line) for p in manifest.problems] == [("not-utf8", 4)]
    report = judged(capsys, tmp_path / "lj")
    assert report["code"] == 1
    assert ("TP-DATA-MANIFEST", "FAIL") in findings(report)


def test_utf8_text_and_a_character_split_between_read_blocks_are_not_flagged(tmp_path, monkeypatch):
    from trainproof.data.layouts import shared as module

    monkeypatch.setattr(module, "BLOCK_BYTES", 64)
    line = "a|" + "é" * 40 + "\n"  # two bytes a character: some block ends inside one
    (tmp_path / "wavs").mkdir()
    (tmp_path / "metadata.csv").write_text(line + "b|caf\ufffd is a real replacement character\n", encoding="utf-8")
    assert module._scan_bytes(str(tmp_path / "metadata.csv"))[2:] == (0, None)
    (tmp_path / "metadata.csv").write_bytes(line.encode() + b"b|caf\xe9\n" + line.encode() + b"d|\xff\n")
    assert module._scan_bytes(str(tmp_path / "metadata.csv"))[2:] == (2, 2)


def test_a_line_separator_in_a_transcript_is_an_odd_character(tmp_path, capsys):
    folder = tmp_path / "ds"
    clip(folder / "a.wav")
    (folder / "a.txt").write_text("hello\u2028world\n")
    clip(folder / "b.wav")
    (folder / "b.txt").write_text("hello\vthere\n")
    clip(folder / "c.wav", seed=2)
    (folder / "c.txt").write_bytes(b"an old mac\rtranscript\r")  # CR alone ends a line, as open() reads it
    assert {e.text for e in read_manifest(folder).entries} == {"hello\u2028world", "hello\vthere", "an old mac transcript"}
    report = judged(capsys, folder)
    assert findings(report).count(("TP-DATA-CHARACTERS", "WARN")) == 2


def test_plain_transcripts_have_no_odd_characters(tmp_path, capsys):
    folder = tmp_path / "ds"
    clip(folder / "a.wav")
    (folder / "a.txt").write_text("hello world\nand more\n")
    assert ("TP-DATA-CHARACTERS", "WARN") not in findings(judged(capsys, folder))


# --- paths, claims and fields -------------------------------------------------------------


def test_dot_dot_is_resolved_by_the_system_not_collapsed_in_the_text(tmp_path, capsys, monkeypatch):
    clip(tmp_path / "a.wav")
    (tmp_path / "elsewhere" / "deep").mkdir(parents=True)
    os.symlink(tmp_path / "elsewhere" / "deep", tmp_path / "lnk")
    records = [{"audio_filepath": path, "text": "hello there"} for path in ("nosuchdir/../a.wav", "lnk/../a.wav", "./a.wav")]
    (tmp_path / "m.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    monkeypatch.chdir(tmp_path)
    manifest = read_manifest("m.jsonl")
    assert [e.audio for e in manifest.entries] == ["nosuchdir/../a.wav", "lnk/../a.wav", "a.wav"]
    report = judged(capsys, "m.jsonl")
    missing = [f for f in report["subjects"][0]["findings"] if f["id"] == "TP-DATA-MISSING"]
    assert [f["line"] for f in missing] == [1, 2]


@pytest.mark.parametrize("field", ["offset", "duration"])
def test_a_negative_offset_or_duration_fails_at_its_line(tmp_path, capsys, field):
    clip(tmp_path / "a.wav")
    claims = {"offset": 0.1, "duration": 0.5, field: -3.0}
    (tmp_path / "m.jsonl").write_text(json.dumps({"audio_filepath": "a.wav", "text": "hello", **claims}) + "\n")
    manifest = read_manifest(tmp_path / "m.jsonl", cwd=tmp_path)
    assert [(p.kind, p.line) for p in manifest.problems] == [("unparsable", 1)]
    assert f"{field} -3 s is negative" in manifest.problems[0].message
    assert getattr(manifest.entries[0], field) is None
    report = judged(capsys, tmp_path / "m.jsonl")
    assert ("TP-DATA-MANIFEST", "FAIL") in findings(report)


def test_of_two_keys_differing_in_case_the_lower_case_one_is_read(tmp_path):
    for name in ("a.wav", "zz.wav"):
        clip(tmp_path / name)
    lines = [
        {"audio_filepath": "a.wav", "Audio_Filepath": "zz.wav", "text": "one"},
        {"Audio_Filepath": "zz.wav", "audio_filepath": "a.wav", "text": "two"},
        {"AUDIO_FILEPATH": "zz.wav", "Text": "three"},
    ]
    (tmp_path / "m.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    manifest = read_manifest(tmp_path / "m.jsonl", cwd=tmp_path)
    assert [(os.path.basename(e.audio), e.text) for e in manifest.entries] == [("a.wav", "one"), ("a.wav", "two"), ("zz.wav", "three")]


def test_a_quoted_csv_cell_keeps_its_newline(tmp_path):
    clip(tmp_path / "a.wav")
    (tmp_path / "m.csv").write_text('path,sentence\na.wav,"first line\nsecond line"\n')
    manifest = read_manifest(tmp_path / "m.csv", cwd=tmp_path)
    assert [e.text for e in manifest.entries] == ["first line\nsecond line"]
    assert manifest.problems == ()


def test_ljspeech_under_a_uri_root_finds_its_clips_by_id(tmp_path):
    pytest.importorskip("pyarrow.fs")
    clip(tmp_path / "store" / "a.wav")
    (tmp_path / "lj").mkdir()
    (tmp_path / "lj" / "metadata.csv").write_text("a|hello there|hello there\n")
    for root in (str(tmp_path / "store"), (tmp_path / "store").as_uri()):
        manifest = read_manifest(tmp_path / "lj", root=root)
        assert [e.audio.rsplit("/", 1)[-1] for e in manifest.entries] == ["a.wav"]
        assert manifest.entries[0].audio.startswith(root)
        assert manifest.notes == ()


def test_too_many_jobs_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["data", str(tmp_path), "--jobs", "99999999999"])
    assert exited.value.code == 2
    assert "--jobs: at most 1,024" in capsys.readouterr().err



@pytest.mark.parametrize("flag", ["--root", "--audio-dir"])
def test_a_root_or_audio_dir_that_is_not_a_folder_is_a_usage_error(tmp_path, capsys, flag):
    (tmp_path / "lj").mkdir()
    (tmp_path / "lj" / "metadata.csv").write_text("a|hello there|hello there\n")
    (tmp_path / "file").write_text("not a folder")
    for folder, why in ((tmp_path / "nope", "does not exist"), (tmp_path / "file", "is not a folder")):
        code, out, err = run(capsys, tmp_path / "lj", flag, folder)
        assert code == 2
        assert err.strip().endswith(f"{flag} {folder}: {why}")
        assert err.count("\n") == 1


def test_no_output_may_overwrite_a_listed_clip_or_transcript(tmp_path, capsys, monkeypatch):
    clip(tmp_path / "ds" / "a.wav")
    (tmp_path / "ds" / "a.txt").write_text("hello there")
    clip(tmp_path / "lj" / "wavs" / "b.wav")
    (tmp_path / "lj" / "metadata.csv").write_text("b|hello there|hello there\n")
    (tmp_path / "report.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    for dataset, target in (("ds", "ds/a.txt"), ("ds", "ds/a.wav"), ("lj", "lj/wavs/b.wav")):
        before = (tmp_path / target).read_bytes()
        code, _, err = run(capsys, dataset, "--markdown", target)
        assert code == 2
        assert f"{target}: is read as an input; refusing to overwrite it" in err
        assert (tmp_path / target).read_bytes() == before
    code, _, _ = run(capsys, "lj", "--json-file", "report.json")  # a report of an earlier run is written over, as asked
    assert code == 0
    assert json.loads((tmp_path / "report.json").read_text())["command"] == "data"


def test_an_empty_cache_dir_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["data", str(tmp_path), "--cache-dir", ""])
    assert exited.value.code == 2
    assert "--cache-dir: needs a folder name" in capsys.readouterr().err


def test_manifest_problems_are_counted_per_kind(tmp_path, capsys):
    clip(tmp_path / "a.wav")
    latin = b'{"audio_filepath": "a.wav", "text": "caf\xe9"}'
    lines = [json.dumps({"audio_filepath": "a.wav", "text": "one", "offset": -0.5, "duration": 0.2}).encode(), latin, latin]
    (tmp_path / "m.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    report = judged(capsys, tmp_path / "m.jsonl")
    found = {f["line"]: f for f in report["subjects"][0]["findings"] if f["id"] == "TP-DATA-MANIFEST"}
    assert sorted(found) == [1, 2]
    assert "such line" not in found[1]["message"]  # one negative offset: not counted with the other kind's lines
    assert found[2]["message"].startswith("line 2 holds bytes that are not UTF-8")
    assert "(2 such lines)." in found[2]["message"]  # its own two lines, told once
    assert (found[1]["values"]["count"], found[2]["values"]["count"]) == (1, 2)


def test_an_existing_report_file_does_not_make_the_dataset_read_twice(tmp_path, monkeypatch, capsys):
    from trainproof.data import manifest

    clip(tmp_path / "lj" / "wavs" / "b.wav")
    (tmp_path / "lj" / "metadata.csv").write_text("b|hello there|hello there\n")
    (tmp_path / "report.json").write_text("{}")
    reads = []
    real = manifest.read_manifest
    monkeypatch.setattr(manifest, "read_manifest", lambda *args, **kwargs: reads.append(args) or real(*args, **kwargs))
    code, _, _ = run(capsys, tmp_path / "lj", "--json-file", tmp_path / "report.json")
    assert code == 0
    assert len(reads) == 1  # read to check the clips against report.json, and judged as read

