"""A manifest whose relative paths are written from a folder above it (a Kaldi recipe's root, a repository's root) is
read from there when they resolve neither from the working directory nor beside it: no false TP-DATA-MISSING on clean
data, a note naming the folder, the link rule held at that folder, and a clip missing from every base still missing,
named at every path tried. Real WAV files written by soundfile; the shared corpus's Kaldi, WeNet and NeMo datasets."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("soundfile")
pytest.importorskip("pandas")

from tests.datasets.speech import voiced_clip  # noqa: E402
from trainproof.cli import main  # noqa: E402
from trainproof.commands import judge  # noqa: E402
from trainproof.data.manifest import read_manifest, read_policy  # noqa: E402
from trainproof.report import Level, Subject  # noqa: E402

RATE = 16000
SPEECH = Path("public") / "datasets" / "speech"
WORDS = ("yes no yes", "no no yes", "yes yes no", "no yes no")


def kaldi_recipe(root: Path, clips: int = 4) -> Path:
    """A Kaldi recipe as run from ``root``: ``root/waves/*.wav`` and ``root/data/train`` listing ``waves/<id>.wav``."""
    scp, text = [], []
    for i in range(clips):
        voiced_clip(root / "waves" / f"u{i}.wav", 2.0 + 0.3 * i, RATE, words=WORDS[i % 4], seed=i)
        scp.append(f"u{i} waves/u{i}.wav\n")
        text.append(f"u{i} {WORDS[i % 4]}\n")
    data = root / "data" / "train"
    data.mkdir(parents=True)
    (data / "wav.scp").write_text("".join(scp))
    (data / "text").write_text("".join(text))
    return data


def nemo_in_repo(repo: Path, clips: int = 4) -> Path:
    """A repository's test manifest, ``repo/tests/data/asr/m.json``, listing ``tests/data/asr/wav/<id>.wav`` (from ``repo``)."""
    folder = repo / "tests" / "data" / "asr"
    lines = []
    for i in range(clips):
        voiced_clip(folder / "wav" / f"a{i}.wav", 1.5 + 0.2 * i, RATE, words=WORDS[i % 4], seed=10 + i)
        lines.append(json.dumps({"audio_filepath": f"tests/data/asr/wav/a{i}.wav", "text": WORDS[i % 4]}) + "\n")
    (folder / "m.json").write_text("".join(lines))
    return folder / "m.json"


def judged(path: Path, **options) -> Subject:
    return judge("data", [str(path)], no_cache=True, jobs=1, **options).subjects[0]


def warned(subject: Subject) -> list[str]:
    return [f"{f.rule_id}: {f.message}" for f in subject.findings if f.level >= Level.WARN]


@pytest.fixture
def elsewhere(tmp_path, monkeypatch) -> Path:
    """A working directory that is neither the recipe's nor the repository's root, as a CI job's often is."""
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


def test_a_kaldi_data_dir_is_read_from_its_recipe_root(tmp_path, elsewhere):
    data = kaldi_recipe(tmp_path / "recipe")
    m = read_manifest(data)
    assert [e.audio for e in m.entries] == [str(tmp_path / "recipe" / "waves" / f"u{i}.wav") for i in range(4)]
    assert m.found_root == str(tmp_path / "recipe")
    (note,) = [n for n in m.notes if n.startswith("paths resolved from")]
    assert note.startswith(f"paths resolved from {tmp_path / 'recipe'}, two folders above the manifest's ({data}), as Kaldi recipes run from the recipe root")
    assert note.endswith("4 of 4 relative audio paths are found there and not from the working directory")
    subject = judged(data)
    assert warned(subject) == []
    assert subject.verdict.value == "PASS"


def test_a_relative_kaldi_data_dir_resolves_relative_to_the_working_directory(tmp_path, elsewhere):
    kaldi_recipe(tmp_path / "recipe")
    m = read_manifest(os.path.join("..", "recipe", "data", "train"))
    assert m.found_root == os.path.join("..", "recipe")
    assert m.entries[0].audio == os.path.join("..", "recipe", "waves", "u0.wav")


def test_a_repository_root_relative_nemo_manifest_is_read_from_the_root(tmp_path, elsewhere):
    manifest = nemo_in_repo(tmp_path / "repo")
    m = read_manifest(manifest)
    assert m.found_root == str(tmp_path / "repo")
    assert all(Path(e.audio).is_file() for e in m.entries)
    assert m.bases == ("", str(manifest.parent), str(tmp_path / "repo"))  # "": the working directory, as paths are joined to it
    assert any("three folders above the manifest's" in note for note in m.notes)
    assert warned(judged(manifest)) == []


def test_paths_that_resolve_from_the_working_directory_look_no_further(tmp_path, monkeypatch):
    data = kaldi_recipe(tmp_path / "recipe")
    monkeypatch.chdir(tmp_path / "recipe")
    m = read_manifest(data)
    assert (m.found_root, m.bases) == (None, ())
    assert [e.audio for e in m.entries] == [os.path.join("waves", f"u{i}.wav") for i in range(4)]
    assert not any(n.startswith("paths resolved from") for n in m.notes)


def test_root_replaces_every_base_and_no_folder_above_is_tried(tmp_path, elsewhere):
    data = kaldi_recipe(tmp_path / "recipe")
    m = read_manifest(data, root=tmp_path / "other")
    assert m.found_root is None
    assert m.entries[0].audio == str(tmp_path / "other" / "waves" / "u0.wav")


def test_a_clip_missing_from_every_base_is_missing_and_names_each_path_tried(tmp_path, elsewhere, capsys):
    data = kaldi_recipe(tmp_path / "recipe")
    (tmp_path / "recipe" / "waves" / "u2.wav").unlink()
    subject = judged(data)
    (missing,) = [f for f in subject.findings if f.rule_id == "TP-DATA-MISSING"]
    assert missing.level is Level.FAIL
    assert missing.message == "waves/u2.wav does not exist."
    assert missing.evidence == f"line 3: looked for at {os.path.join('waves', 'u2.wav')}, then {tmp_path / 'recipe' / 'waves' / 'u2.wav'}"
    assert [f.rule_id for f in subject.findings if f.level >= Level.WARN] == ["TP-DATA-MISSING"]  # the other 3 read


def test_a_minority_of_paths_found_above_is_no_base(tmp_path, elsewhere):
    """One clip of four happening to exist two folders up is a stray file of that name, not the manifest's root."""
    data = kaldi_recipe(tmp_path / "recipe")
    for i in (1, 2, 3):
        (tmp_path / "recipe" / "waves" / f"u{i}.wav").unlink()
    m = read_manifest(data)
    assert m.found_root is None
    assert [e.audio for e in m.entries] == [os.path.join("waves", f"u{i}.wav") for i in range(4)]


def test_paths_found_nowhere_say_which_folders_were_tried(tmp_path, elsewhere):
    data = kaldi_recipe(tmp_path / "recipe")
    for wav in (tmp_path / "recipe" / "waves").iterdir():
        wav.unlink()
    m = read_manifest(data)
    assert m.found_root is None
    (note,) = [n for n in m.notes if "resolve neither" in n]
    assert f"the 4 folders above the manifest's ({tmp_path / 'recipe' / 'data'}, {tmp_path / 'recipe'}," in note
    assert note.endswith("--root names the folder they are relative to")


def test_windows_paths_written_on_another_machine_are_missing_and_found_by_their_tail(tmp_path, elsewhere):
    """A Kaldi dir committed with its author's Windows paths (a real Hindi digits recipe: 'C:\\Users\\...\\s5\\
    digits_audio\\train\\akarsh\\0_4_8.wav'): every clip is missing as written, and the note says where they are."""
    data = kaldi_recipe(tmp_path / "recipe")
    scp = data / "wav.scp"
    scp.write_text("".join(f"u{i} C:\\Users\\me\\OneDrive - Lab\\recipe\\waves\\u{i}.wav\n" for i in range(4)))
    subject = judged(data)
    assert {f.rule_id for f in subject.findings if f.level is Level.FAIL} == {"TP-DATA-MISSING"}
    (note,) = [n for n in subject.notes if "another machine" in n]
    assert f"4 of 4 looked at are found under {tmp_path / 'recipe'} by their last 2 parts (as 'waves/u0.wav')" in note


def test_absolute_paths_of_another_machine_are_found_by_their_tail(tmp_path, elsewhere):
    manifest = nemo_in_repo(tmp_path / "repo")
    lines = [json.loads(line) for line in manifest.read_text().splitlines()]
    manifest.write_text("".join(json.dumps({**r, "audio_filepath": "/home/alice/" + r["audio_filepath"]}) + "\n" for r in lines))
    m = read_manifest(manifest)
    (note,) = [n for n in m.notes if "another machine" in n]
    assert "'/home/alice/tests/data/asr/wav/a0.wav'" in note
    assert f"found under {manifest.parent} by their last 2 parts (as 'wav/a0.wav')" in note


def test_paths_found_nowhere_by_any_tail_get_no_such_note(tmp_path, elsewhere):
    data = kaldi_recipe(tmp_path / "recipe")
    (data / "wav.scp").write_text("".join(f"u{i} C:\\Users\\me\\other\\x{i}.wav\n" for i in range(4)))
    assert not [n for n in read_manifest(data).notes if "another machine" in n]


def test_the_folder_found_above_is_a_root_of_the_read_policy(tmp_path, elsewhere):
    data = kaldi_recipe(tmp_path / "recipe")
    m = read_manifest(data)
    policy = read_policy(m.path, m.layout, found_root=m.found_root)
    assert os.path.realpath(tmp_path / "recipe") in policy.real_roots


def test_a_link_out_of_the_folder_found_above_is_not_followed(tmp_path, elsewhere, capsys):
    """The recipe's waves/ a symlink to a folder outside the recipe: the clips are found there, but reading them means
    following a link out of the dataset's roots, refused (exit 2) as any such link is; --follow-links reads them."""
    data = kaldi_recipe(tmp_path / "recipe")
    (tmp_path / "recipe" / "waves").rename(tmp_path / "outside")
    (tmp_path / "recipe" / "waves").symlink_to(tmp_path / "outside", target_is_directory=True)
    code = main(["data", str(data), "--no-cache", "--jobs", "1"])
    err = capsys.readouterr().err
    assert code == 2
    assert "leads through a symlink to" in err and str(tmp_path / "outside") in err
    assert main(["data", str(data), "--no-cache", "--jobs", "1", "--follow-links"]) == 0


def test_no_base_is_taken_inside_a_git_folder(tmp_path, monkeypatch):
    """Paths resolving only through a .git folder above the manifest are never read from there."""
    git = tmp_path / "repo" / ".git"
    data = kaldi_recipe(git / "recipe")
    monkeypatch.chdir(tmp_path)
    m = read_manifest(data)
    assert m.found_root is None


# --- the shared corpus: the layouts SOURCES.tsv describes ----------------------------------------------------------


def _corpus_path(corpus: Path, *parts: str) -> Path:
    path = corpus.joinpath(SPEECH, *parts)
    if not path.exists():
        pytest.skip(f"{path} is not in the corpus")
    return path


@pytest.mark.parametrize(("split", "clips"), [("train_yesno", 31), ("test_yesno", 29)])
def test_the_kaldi_yesno_recipe_is_read_from_its_root(corpus, split, clips):
    data = _corpus_path(corpus, "jmolina116__kaldi-yesno-tutorial__yesno", "data", split)
    subject = judged(data)
    assert subject.summary["clips"] == subject.summary["readable"] == clips
    assert any("two folders above the manifest's" in note for note in subject.notes)
    assert warned(subject) == []  # SOURCES.tsv: clean (test_yesno's TEXT-RATE: see test_data_rules.py's uncertain sigma)


def test_the_wenet_test_resources_are_read_from_the_repository_root(corpus):
    data = _corpus_path(corpus, "wenet-e2e__wenet__test_resources_dataset", "test", "resources", "dataset")
    subject = judged(data)
    assert subject.summary["clips"] == subject.summary["readable"] == 2
    assert warned(subject) == []  # SOURCES.tsv: clean


@pytest.mark.parametrize(("name", "clips"), [("an4_train.json", 30), ("an4_val.json", 10)])
def test_the_nemo_an4_manifests_are_read_and_their_wrong_durations_found(corpus, name, clips):
    manifest = _corpus_path(corpus, "NVIDIA__NeMo__tests_data_asr", "tests", "data", "asr", name)
    subject = judged(manifest)
    assert subject.summary["clips"] == subject.summary["readable"] == clips
    assert not [f for f in subject.findings if f.rule_id == "TP-DATA-MISSING"]
    claims = [f for f in subject.findings if f.rule_id == "TP-DATA-DURATION-CLAIM"]
    assert claims and claims[0].values["count"] == clips  # every row states about twice the audio's duration
    if name == "an4_train.json":
        assert claims[0].message.startswith("tests/data/asr/train/an4/wav/an46-mmap-b.wav lasts 1 s; the manifest says 2.003 s.")
