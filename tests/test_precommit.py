"""The hooks in .pre-commit-hooks.yaml, run by the real pre-commit against this repository."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.helpers import REPO

GALLERY = REPO / "examples" / "gallery"


def test_manifest_is_valid():
    result = subprocess.run(["pre-commit", "validate-manifest", str(REPO / ".pre-commit-hooks.yaml")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory):
    """Every test that runs a hook takes this: pre-commit runs hooks only in a git repository, and git is not a Python
    package the test extra can install."""
    if shutil.which("git") is None:
        pytest.skip("pre-commit runs hooks in a git repository, and git is not on PATH")
    return tmp_path_factory.mktemp("pre-commit-home")


def scratch_repo(root, logs: dict[str, str]):
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for relative, source in logs.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(GALLERY / source / "trainer_state.json", target)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)


def try_repo(root, home):
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(
        ["pre-commit", "try-repo", str(REPO), "trainproof-logs", "--all-files", "--hook-stage", "manual", "--color", "never"],
        cwd=root, env=env, capture_output=True, text=True,
    )


def test_good_log_passes(tmp_path, pre_commit_home):
    scratch_repo(tmp_path, {"runs/good/trainer_state.json": "healthy/seed0", "README.md": "healthy/seed1"})
    result = try_repo(tmp_path, pre_commit_home)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "trainproof (training logs)" in result.stdout
    assert "Passed" in result.stdout


def test_bad_log_fails(tmp_path, pre_commit_home):
    scratch_repo(tmp_path, {"runs/good/trainer_state.json": "healthy/seed0", "runs/hot/trainer_state.json": "lr_hot/seed0"})
    result = try_repo(tmp_path, pre_commit_home)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Failed" in result.stdout
    assert "TP-DIVERGE" in result.stdout
    assert "runs/hot/trainer_state.json" in result.stdout


def try_data_hook(root, home, hook):
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(
        ["pre-commit", "try-repo", str(REPO), hook, "--all-files", "--verbose", "--color", "never"], cwd=root, env=env, capture_output=True, text=True
    )


def test_the_ljspeech_hook_judges_a_committed_dataset(tmp_path, pre_commit_home):
    pytest.importorskip("soundfile")
    dataset = tmp_path / "data" / "tts"
    shutil.copytree(REPO / "examples" / "speech" / "ljspeech_tiny", dataset)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    result = try_data_hook(tmp_path, pre_commit_home, "trainproof-ljspeech")
    assert result.returncode == 0, result.stdout + result.stderr  # three WARNs, no FAIL
    assert "TP-DATA-CLIPPING" in result.stdout
    (dataset / "wavs" / "tiny-0003.wav").unlink()  # a clip lost: the manifest still lists it
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    result = try_data_hook(tmp_path, pre_commit_home, "trainproof-ljspeech")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "TP-DATA-MISSING" in result.stdout
    assert "tiny-0003" in result.stdout


def test_the_lhotse_hook_judges_a_committed_recipe(tmp_path, pre_commit_home, corpus, monkeypatch):
    """A recipe's manifests, written by lhotse with sources relative to the repository's root (where pre-commit runs)."""
    pytest.importorskip("soundfile")
    lhotse = pytest.importorskip("lhotse")
    waves = sorted((corpus / "public" / "datasets" / "speech" / "jmolina116__kaldi-yesno-tutorial__yesno" / "waves_yesno").glob("*.wav"))[:4]
    if not waves:
        pytest.skip("the yesno recordings are not in the corpus")
    (tmp_path / "download").mkdir()
    for wave in waves:
        shutil.copy(wave, tmp_path / "download" / wave.name)
    with monkeypatch.context() as patch:
        patch.chdir(tmp_path)
        recordings = lhotse.RecordingSet.from_recordings(lhotse.Recording.from_file(f"download/{wave.name}") for wave in waves)
    supervisions = lhotse.SupervisionSet.from_segments(
        lhotse.SupervisionSegment(id=r.id, recording_id=r.id, start=0, duration=r.duration, text=r.id.replace("_", " ")) for r in recordings
    )
    (tmp_path / "data" / "manifests").mkdir(parents=True)
    recordings.to_file(str(tmp_path / "data" / "manifests" / "yesno_recordings_train.jsonl.gz"))
    supervisions.to_file(str(tmp_path / "data" / "manifests" / "yesno_supervisions_train.jsonl.gz"))
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    result = try_data_hook(tmp_path, pre_commit_home, "trainproof-lhotse")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "lhotse dataset; 4 clips (4 readable)" in result.stdout
    (tmp_path / "download" / waves[2].name).unlink()  # a recording lost: the manifests still name it
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    result = try_data_hook(tmp_path, pre_commit_home, "trainproof-lhotse")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "TP-DATA-MISSING" in result.stdout
    assert waves[2].stem in result.stdout


def test_the_lhotse_hook_judges_committed_shar_shards(tmp_path, pre_commit_home, corpus):
    """Lhotse Shar shards (``cuts.00000N.jsonl.gz`` with the ``recording.00000N.tar`` beside each), written by lhotse."""
    pytest.importorskip("soundfile")
    lhotse = pytest.importorskip("lhotse")
    waves = sorted((corpus / "public" / "datasets" / "speech" / "jmolina116__kaldi-yesno-tutorial__yesno" / "waves_yesno").glob("*.wav"))[:4]
    if not waves:
        pytest.skip("the yesno recordings are not in the corpus")
    recordings = lhotse.RecordingSet.from_recordings(lhotse.Recording.from_file(str(wave)) for wave in waves)
    supervisions = lhotse.SupervisionSet.from_segments(
        lhotse.SupervisionSegment(id=r.id, recording_id=r.id, start=0, duration=r.duration, text=r.id.replace("_", " ")) for r in recordings
    )
    shar = tmp_path / "data" / "shar"
    shar.mkdir(parents=True)
    lhotse.CutSet.from_manifests(recordings=recordings, supervisions=supervisions).to_shar(str(shar), fields={"recording": "flac"}, shard_size=2)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    result = try_data_hook(tmp_path, pre_commit_home, "trainproof-lhotse")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("shar dataset; 2 clips (2 readable)") == 2  # each changed cut shard, with its recording tar
    tar = shar / "recording.000001.tar"
    tar.write_bytes(tar.read_bytes()[: tar.stat().st_size // 3])  # a tar cut short
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    result = try_data_hook(tmp_path, pre_commit_home, "trainproof-lhotse")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "TP-DATA-MANIFEST" in result.stdout and "cuts.000001.jsonl.gz" in result.stdout


def _committed_copy(root):
    """This working tree, committed in a scratch repository: a rev that a .pre-commit-config.yaml can pin."""
    ignore = shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "__pycache__", ".trainproof_cache", ".pytest_cache", ".ruff_cache")
    shutil.copytree(REPO, root, ignore=ignore)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "snapshot"], cwd=root, check=True, env=env)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def pinned(tmp_path_factory):
    """The head of a .pre-commit-config.yaml pinning one committed copy of this tree: the tests below share it, so each
    hook's environment is built once for the module (``try-repo`` builds a new one on every call)."""
    root = tmp_path_factory.mktemp("pinned") / "trainproof"
    return f"repos:\n- repo: {root}\n  rev: {_committed_copy(root)}\n  hooks:\n"


def run_hook(project, home, pinned, hook, args=None, dependencies=None):
    """`pre-commit run HOOK --all-files` in the scratch repository `project`, its config pinning this tree (with `args`
    and `additional_dependencies` when given, else the hook's own); everything in `project` is staged first."""
    config = pinned + f"  - id: {hook}\n" + (f"    args: {args}\n" if args is not None else "")
    config += f"    additional_dependencies: {dependencies}\n" if dependencies is not None else ""
    (project / ".pre-commit-config.yaml").write_text(config)
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    env = {**os.environ, "PRE_COMMIT_HOME": str(home)}
    run = ["pre-commit", "run", hook, "--all-files", "--verbose", "--color", "never"]
    return subprocess.run(run, cwd=project, env=env, capture_output=True, text=True)


def test_the_tokenizer_hook_judges_the_tokenizer_with_its_text(tmp_path, pre_commit_home, pinned):
    """The hook takes the tokenizer and its text from `args` (pre-commit's try-repo cannot pass args: a real config)."""
    pytest.importorskip("sentencepiece")
    (tmp_path / "tok").mkdir()
    shutil.copyfile(REPO / "examples" / "tokenizer" / "tts_unigram.model", tmp_path / "tok" / "tts.model")
    (tmp_path / "tok" / "sample.txt").write_text("The birch canoe slid on the smooth planks.\nGlue the sheet to the dark blue background.\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    args = "[--, tok/tts.model, tok/sample.txt]"
    result = run_hook(tmp_path, pre_commit_home, pinned, "trainproof-tokenizer", args)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASS" in result.stdout
    (tmp_path / "tok" / "sample.txt").write_text("Das Wasser ist über der Straße.\nÜber Größe.\n")
    result = run_hook(tmp_path, pre_commit_home, pinned, "trainproof-tokenizer", args)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "TP-TOK-UNKNOWN" in result.stdout


def test_the_tokenizer_hook_without_its_args_says_which_args_it_needs(tmp_path, pre_commit_home, pinned):
    """Issue 28: the hook passes no file names, so without `args` trainproof got no path and argparse said "the
    following arguments are required: PATH". It says the hook needs `args: [--, TOKENIZER, TEXT...]`, exit 2."""
    pytest.importorskip("sentencepiece")
    (tmp_path / "tok").mkdir()
    shutil.copyfile(REPO / "examples" / "tokenizer" / "tts_unigram.model", tmp_path / "tok" / "tts.model")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for args, got in ((None, "none"), ("[--, tok/tts.model]", "1 path")):
        result = run_hook(tmp_path, pre_commit_home, pinned, "trainproof-tokenizer", args)
        assert result.returncode == 1, result.stdout + result.stderr
        assert "- exit code: 2" in result.stdout
        assert (
            f"trainproof: error: trainproof tokenizer needs a tokenizer and at least one text, and the hook gave it {got}: "
            "name them in the hook's args in .pre-commit-config.yaml, args: [--, TOKENIZER, TEXT...]\n"
        ) in result.stdout
        assert "arguments are required" not in result.stdout


def _extras(*names):
    """The requirements pyproject.toml lists for these extras, as a YAML flow list."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    return "[" + ", ".join(f'"{requirement}"' for name in names for requirement in extras[name]) + "]"


def test_the_finetune_hook_with_a_tokenizer_names_the_additional_dependencies_it_needs(tmp_path, pre_commit_home, pinned):
    """Issue 28: the hook's environment has no tokenizer library; `args: [--tokenizer, ...]` said "trainproof tokenizer
    needs ... pip install". It names the command run and the `additional_dependencies` to set, which then judge the
    lengths (the same list as the tokenizer hook's, so pre-commit reuses that hook's environment)."""
    pytest.importorskip("tokenizers")
    (tmp_path / "tok").mkdir()
    shutil.copyfile(REPO / "examples" / "text" / "tokenizer" / "tokenizer.json", tmp_path / "tok" / "tokenizer.json")
    (tmp_path / "sft_chat.jsonl").write_text(CHAT_ROW)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    args = "[--tokenizer, tok/tokenizer.json, --]"
    result = run_hook(tmp_path, pre_commit_home, pinned, "trainproof-finetune-jsonl", args)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "- exit code: 2" in result.stdout
    dependencies = _extras("tokenizer")
    assert (
        "trainproof: error: trainproof text needs the optional package 'tokenizers' to read a tokenizer.json, which this "
        "pre-commit hook's environment does not have: list the packages it needs in the hook's additional_dependencies in "
        f".pre-commit-config.yaml (your list replaces the hook's own): additional_dependencies: {dependencies}\n"
    ) in result.stdout
    result = run_hook(tmp_path, pre_commit_home, pinned, "trainproof-finetune-jsonl", args, dependencies)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "tokens per row (median)" in result.stdout
    assert "counted on the raw text (the tokenizer has no chat template)" in result.stdout


CHAT_ROW = '{"messages": [{"role": "user", "content": "What is two and two?"}, {"role": "assistant", "content": "Four."}]}\n'
LOOPING_TOKENIZER_CONFIG = '{"chat_template": "{% for i in range(1000000000) %}{{ i }}{% endfor %}", "eos_token": "</s>"}\n'
"""A tokenizer folder's config whose chat template never ends: loading and using it would hang the hook."""


def option_named_files(root):
    """A scratch repository with `--tokenizer=chat.jsonl` at its root (matched by the finetune hook's
    pattern) and the tokenizer folder `chat.jsonl/` its name points at."""
    (root / "--tokenizer=chat.jsonl").write_text(CHAT_ROW)
    (root / "sft_clean.jsonl").write_text(CHAT_ROW)
    (root / "chat.jsonl").mkdir()
    (root / "chat.jsonl" / "tokenizer_config.json").write_text(LOOPING_TOKENIZER_CONFIG)
    subprocess.run(["git", "init", "-q", str(root)], check=True)


def test_the_finetune_hook_judges_changed_jsonl(tmp_path, pre_commit_home, pinned):
    """Clean files pass and broken ones fail, in a folder or at the root. The hook's `args: ["--"]` puts the file names
    after `--`: `--tokenizer=chat.jsonl` is judged as a dataset and no tokenizer is loaded; `-x_chat.jsonl` fails on its
    own rows. Before, each was taken for an option."""
    option_named_files(tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    (data / "sft_clean.jsonl").write_text(
        '{"prompt": "What is two and two?", "completion": "Four."}\n{"prompt": "Name a primary colour.", "completion": "Red."}\n'
    )
    result = run_hook(tmp_path, pre_commit_home, pinned, "trainproof-finetune-jsonl")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASS  --tokenizer=chat.jsonl\n" in result.stdout
    assert "PASS  sft_clean.jsonl\n" in result.stdout
    assert "PASS  data/sft_clean.jsonl\n" in result.stdout
    assert "Skipped TP-TEXT-TRUNCATED-TARGET, TP-TEXT-TOO-LONG, TP-TEXT-REJECTED-TOO-LONG: no --tokenizer given" in result.stdout
    assert "tokens per row" not in result.stdout
    for broken in (data / "sft_broken.jsonl", tmp_path / "-x_chat.jsonl"):
        broken.write_text('{"Prompt": "a", "Completion": "b"}\n')
    result = run_hook(tmp_path, pre_commit_home, pinned, "trainproof-finetune-jsonl")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "FAIL  data/sft_broken.jsonl\n" in result.stdout
    assert "FAIL  -x_chat.jsonl\n" in result.stdout
    assert "TP-TEXT-SHAPE" in result.stdout
    assert "PASS  --tokenizer=chat.jsonl\n" in result.stdout


def test_own_args_without_dashdash_are_refused_not_guessed(tmp_path, pre_commit_home, pinned):
    """A user's `args` that forget the closing `--`: trainproof refuses the file name that reads as an option (exit 2,
    one line saying to put -- before the paths) instead of loading the tokenizer it names; with `--` it judges."""
    option_named_files(tmp_path)
    result = run_hook(tmp_path, pre_commit_home, pinned, "trainproof-finetune-jsonl", "[--fail-on, warn]")
    assert result.returncode == 1, result.stdout + result.stderr
    assert (
        "trainproof: error: --tokenizer=chat.jsonl: reads as an option but names a file or folder here; "
        "put -- before the paths (trainproof text [OPTIONS] -- PATH...)"
    ) in result.stdout
    assert "PASS" not in result.stdout
    result = run_hook(tmp_path, pre_commit_home, pinned, "trainproof-finetune-jsonl", "[--fail-on, warn, --]")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASS  --tokenizer=chat.jsonl\n" in result.stdout
    assert "tokens per row" not in result.stdout
