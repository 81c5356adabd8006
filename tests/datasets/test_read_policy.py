"""What ``trainproof data`` may read (issue 27, items 1 and 9): no symlink met in a dataset may lead out of its folder
(and the working directory, for the layouts whose paths resolve there) or into a ``.git`` folder, and no special file
is read or taken for absent; ``--follow-links`` lifts the link rule. Real files, real links, real FIFOs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("soundfile")
pytest.importorskip("pandas")

from tests.datasets.test_clip import SENTENCE, voiced, write  # noqa: E402
from tests.helpers import REPO  # noqa: E402
from trainproof.cli import main  # noqa: E402
from trainproof.data.engine import analyze_all  # noqa: E402
from trainproof.data.manifest import read_manifest  # noqa: E402
from trainproof.data.model import ClipRecord, ClipRef  # noqa: E402
from trainproof.io.errors import InputError  # noqa: E402

RATE = 16000
TOKEN = "ghs_tp27TokenThatMustNeverBePrinted"
SECRET = "tp27-aws-secret-that-must-never-be-printed"
FIFOS = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
HANG_SECONDS = 120
"""HANG TEST bound for a subprocess run that takes about a second: generous, it only tells a verdict from a hang."""


def clip(path: Path, seed: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    write(path, voiced(RATE, SENTENCE, seed=seed), RATE)
    return path


@pytest.fixture
def checkout(tmp_path, monkeypatch) -> Path:
    """A repository as actions/checkout leaves it (its token in .git/config), the working directory."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text(f'[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic {TOKEN}\n')
    monkeypatch.chdir(repo)
    return repo


def run(capsys, *args: object) -> tuple[int, str, str]:
    code = main(["data", *map(str, args), "--no-cache", "--jobs", "1"])
    out, err = capsys.readouterr()
    return code, out, err


class Opened:
    """The paths this process opens while it is active (a Python audit hook: ``open`` events of io.open and os.open)."""

    hooked = False
    active: list[str] | None = None

    def __enter__(self) -> list[str]:
        if not Opened.hooked:
            sys.addaudithook(_record_open)
            Opened.hooked = True
        Opened.active = []
        return Opened.active

    def __exit__(self, *exc: object) -> None:
        Opened.active = None


def _record_open(event: str, args: tuple) -> None:
    if event == "open" and Opened.active is not None and isinstance(args[0], (str, bytes, os.PathLike)):
        Opened.active.append(os.path.realpath(os.fsdecode(args[0])))


# --- transcripts of a folder dataset ----------------------------------------------------


def test_transcripts_linked_to_the_token_are_never_read_nor_printed(checkout, capsys, tmp_path):
    clip(checkout / "ds" / "a.wav")
    clip(checkout / "ds" / "b.wav", seed=1)
    os.symlink("../.git/config", checkout / "ds" / "a.txt")
    os.symlink("../.git/config", checkout / "ds" / "b.txt")
    sarif, markdown = tmp_path / "out.sarif", tmp_path / "out.md"
    with Opened() as opened:
        code, out, err = run(capsys, "ds", "--github", "--sarif", sarif, "--markdown", markdown)
    assert str(checkout / ".git" / "config") not in opened  # not even partly
    everything = out + err + sarif.read_text() + markdown.read_text()
    assert TOKEN not in everything
    error = err.splitlines()[-1]  # after --github's note that this is not GitHub Actions
    assert error.startswith("trainproof: error: ds/a.txt: leads through a symlink into a .git folder")
    assert error.endswith("--follow-links reads it)")
    assert code == 2  # not judged: a trainer would read the link's target, which trainproof will not


def test_a_transcript_linked_to_the_environment_is_not_read(tmp_path):
    (tmp_path / "ds").mkdir()
    clip(tmp_path / "ds" / "a.wav")
    clip(tmp_path / "ds" / "b.wav", seed=1)
    os.symlink("/proc/self/environ", tmp_path / "ds" / "a.txt")
    os.symlink("/proc/self/environ", tmp_path / "ds" / "b.txt")
    env = {**os.environ, "PYTHONPATH": str(REPO), "AWS_SECRET_ACCESS_KEY": SECRET}
    env.pop("GITHUB_STEP_SUMMARY", None)
    done = subprocess.run(
        [sys.executable, "-m", "trainproof", "data", "ds", "--no-cache", "--jobs", "1"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=HANG_SECONDS,
    )  # fmt: skip
    assert SECRET not in done.stdout + done.stderr
    assert done.returncode == 2
    assert done.stderr.startswith("trainproof: error: ds/a.txt: leads through a symlink to /proc/")
    assert "outside the input's folder; trainproof does not follow it (--follow-links reads it)" in done.stderr


def test_follow_links_reads_a_linked_transcript(checkout, capsys):
    clip(checkout / "ds" / "a.wav")
    (checkout / "elsewhere.txt").write_text("a transcript kept beside the dataset")
    os.symlink("../elsewhere.txt", checkout / "ds" / "a.txt")
    with pytest.raises(InputError, match="leads through a symlink"):
        read_manifest("ds")
    assert read_manifest("ds", follow_links=True).entries[0].text == "a transcript kept beside the dataset"
    code, out, err = run(capsys, "ds", "--follow-links")
    assert code in (0, 1)
    assert err == ""


def test_a_transcript_linked_within_the_dataset_is_read(checkout):
    clip(checkout / "ds" / "a.wav")
    (checkout / "ds" / "texts").mkdir()
    (checkout / "ds" / "texts" / "a.txt").write_text("kept in a folder of its own")
    os.symlink("texts/a.txt", checkout / "ds" / "a.txt")
    manifest = read_manifest("ds")
    assert manifest.entries[0].text == "kept in a folder of its own"
    assert manifest.notes == ()


# --- manifests ----------------------------------------------------------------------------


def test_a_named_manifest_linked_to_the_token_is_exit_2_and_never_read(checkout, capsys):
    (checkout / "data").mkdir()
    os.symlink("../.git/config", checkout / "data" / "train.jsonl")
    with Opened() as opened:
        code, out, err = run(capsys, "data/train.jsonl")
    assert code == 2
    assert str(checkout / ".git" / "config") not in opened
    assert TOKEN not in out + err
    assert "data/train.jsonl: leads through a symlink into a .git folder" in err


def test_a_named_manifest_linked_within_the_working_directory_is_read(checkout):
    clip(checkout / "clips" / "a.wav")
    (checkout / "shared").mkdir()
    (checkout / "shared" / "train.jsonl").write_text(json.dumps({"audio_filepath": "clips/a.wav", "text": "hello"}) + "\n")
    (checkout / "data").mkdir()
    os.symlink("../shared/train.jsonl", checkout / "data" / "train.jsonl")
    assert [entry.text for entry in read_manifest("data/train.jsonl").entries] == ["hello"]


@pytest.mark.parametrize("target", ["../.git/config", "/etc/hostname"])
def test_a_metadata_csv_linked_out_of_the_dataset_is_exit_2(checkout, capsys, target):
    clip(checkout / "ds" / "wavs" / "a.wav")
    os.symlink(target, checkout / "ds" / "metadata.csv")
    with Opened() as opened:
        code, _, err = run(capsys, "ds")
    assert code == 2
    assert os.path.realpath(target if target.startswith("/") else checkout / ".git" / "config") not in opened
    assert "ds/metadata.csv: leads through a symlink" in err
    assert "--follow-links reads it" in err
    assert TOKEN not in err


@pytest.mark.parametrize("name", ["text", "segments", "utt2spk", "wav.scp"])
def test_a_kaldi_list_linked_out_of_the_dir_is_exit_2(tmp_path, monkeypatch, capsys, name):
    kaldi = _kaldi(tmp_path / "project")
    outside = tmp_path / "outside"
    outside.mkdir()
    (kaldi / name).rename(outside / name)
    os.symlink(outside / name, kaldi / name)
    monkeypatch.chdir(tmp_path / "project")
    with pytest.raises(InputError, match=f"data/{name}.*leads through a symlink to .*outside the input's folder"):
        read_manifest("data")
    assert len(read_manifest("data", follow_links=True).entries) == 1


# --- special files: an error, never absent, never a hang ---------------------------------


def _kaldi(project: Path) -> Path:
    clip(project / "a.wav")
    kaldi = project / "data"
    kaldi.mkdir(parents=True)
    (kaldi / "wav.scp").write_text("rec1 a.wav\n")
    (kaldi / "segments").write_text("utt1 rec1 0.0 0.5\n")
    (kaldi / "text").write_text("utt1 hello there\n")
    (kaldi / "utt2spk").write_text("utt1 spk1\n")
    return kaldi


@FIFOS
@pytest.mark.parametrize("name", ["text", "segments", "utt2spk"])
def test_a_kaldi_list_that_is_a_fifo_is_exit_2_not_absent_nor_a_hang(tmp_path, name):
    kaldi = _kaldi(tmp_path)
    (kaldi / name).unlink()
    os.mkfifo(kaldi / name)
    done = subprocess.run(
        [sys.executable, "-m", "trainproof", "data", "data", "--no-cache"],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=HANG_SECONDS,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith(f"trainproof: error: data/{name}: is not a regular file (a FIFO): a pipe is read once")
    assert done.stderr.count("\n") == 1


@FIFOS
def test_a_fifo_metadata_csv_is_exit_2_not_a_folder_of_clips(tmp_path, capsys):
    clip(tmp_path / "ds" / "a.wav")
    (tmp_path / "ds" / "a.txt").write_text("a folder dataset, were metadata.csv not there")
    os.mkfifo(tmp_path / "ds" / "metadata.csv")
    with pytest.raises(InputError, match="metadata.csv: is not a regular file"):
        read_manifest(tmp_path / "ds")


def test_an_absent_kaldi_list_is_still_absent(tmp_path, monkeypatch):
    kaldi = _kaldi(tmp_path)
    (kaldi / "segments").unlink()
    (kaldi / "utt2spk").unlink()
    monkeypatch.chdir(tmp_path)
    assert [(entry.id, entry.text, entry.offset) for entry in read_manifest("data").entries] == [("rec1", None, None)]


# --- clips ---------------------------------------------------------------------------------


@pytest.fixture
def linked_clips(tmp_path, monkeypatch) -> Path:
    """A NeMo dataset, the working directory, listing a clip, a link to a clip beside it, and links out of it: one
    to a clip, one through a linked folder."""
    ds = tmp_path / "ds"
    clip(ds / "a.wav")
    clip(tmp_path / "outside" / "far.wav", seed=1)
    os.symlink("a.wav", ds / "same.wav")
    os.symlink("../outside/far.wav", ds / "far.wav")
    os.symlink("../outside", ds / "linked")
    lines = [{"audio_filepath": name, "text": f"clip {n}"} for n, name in enumerate(["a.wav", "same.wav", "far.wav", "linked/far.wav"])]
    (ds / "m.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    monkeypatch.chdir(ds)
    return ds


def test_a_clip_linked_out_of_the_dataset_is_exit_2_and_says_why(linked_clips, capsys):
    code, out, err = run(capsys, "m.jsonl", "--json")
    assert code == 2
    assert err.startswith("trainproof: error: far.wav: leads through a symlink to ")
    assert err.endswith("(--follow-links reads it); so do 1 more listed clips\n")
    code, out, _ = run(capsys, "m.jsonl", "--json", "--follow-links")
    assert json.loads(out)["subjects"][0]["summary"]["readable"] == 4


def _recorded(ref: ClipRef) -> ClipRecord:
    _RECORDED.append(ref.audio)
    return ClipRecord(audio=ref.audio, error="recorded", error_kind="unreadable")


_RECORDED: list[str] = []


def test_a_clip_the_policy_refuses_never_reaches_the_analysis(linked_clips):
    from trainproof.data.manifest import read_policy

    manifest = read_manifest("m.jsonl")
    refs = [ClipRef(entry.audio) for entry in manifest.entries]
    policy = read_policy(manifest.path, manifest.layout)
    _RECORDED.clear()
    with pytest.raises(InputError, match="leads through a symlink"):
        analyze_all(refs, jobs=1, analyze=_recorded, policy=policy)
    assert _RECORDED == []  # refused before any clip is analysed
    _RECORDED.clear()
    analyze_all(refs, jobs=1, analyze=_recorded, policy=read_policy(manifest.path, manifest.layout, follow_links=True))
    assert _RECORDED == ["a.wav", "same.wav", "far.wav", "linked/far.wav"]


def test_a_record_cached_with_follow_links_is_not_served_without_it(linked_clips, capsys, tmp_path):
    cache = tmp_path / "cache"
    main(["data", "m.jsonl", "--cache-dir", str(cache), "--jobs", "1", "--follow-links", "--json"])
    assert json.loads(capsys.readouterr().out)["subjects"][0]["summary"]["readable"] == 4
    assert main(["data", "m.jsonl", "--cache-dir", str(cache), "--jobs", "1", "--json"]) == 2
    assert "leads through a symlink" in capsys.readouterr().err


def test_the_policy_of_each_layout_has_its_roots(tmp_path, monkeypatch):
    from trainproof.data.manifest import read_policy
    from trainproof.io.access import ReadPolicy

    monkeypatch.chdir(tmp_path)
    (tmp_path / "ds").mkdir()
    (tmp_path / "audio").mkdir()
    real = os.path.realpath(tmp_path)
    assert read_policy("ds", "folder") == ReadPolicy((f"{real}/ds",), False)
    assert read_policy("ds", "folder").real_roots == (f"{real}/ds",)
    assert read_policy("ds/m.jsonl", "nemo").roots == (f"{real}/ds", real)
    assert read_policy("ds/metadata.csv", "ljspeech", audio_dir="audio").roots == (f"{real}/ds", f"{real}/audio")
    assert read_policy("ds/m.jsonl", "nemo", root="s3://bucket/clips").roots == (f"{real}/ds", real)  # a URI is no folder
