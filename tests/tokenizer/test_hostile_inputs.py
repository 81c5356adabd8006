"""``trainproof tokenizer`` on what a hostile pull request can commit (issue 27): a text linked to a credentials file,
a tokenizer folder whose files are FIFOs, links to devices or oversized, a sentencepiece model with a byte flipped.

Real tokenizers trained here (tests/tokenizer/build.py), real links and FIFOs. What could hang or fill memory runs
in a subprocess with a generous timeout and an address-space limit, so that the code before the fix (which hangs,
or reads ``/dev/zero`` until MemoryError) fails the test instead of the machine.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import trainproof
from tests.text.test_cli import one_error_line, run
from tests.tokenizer import build
from trainproof.io.errors import InputError
from trainproof.tokenizer.load import load_tokenizer

SOURCE = Path(trainproof.__file__).resolve().parent.parent
"""The checkout whose trainproof is under test (the subprocesses run the same one)."""

SECRET = "ghp_c2VjcmV0LXRva2VuLWZyb20tZ2l0LWNvbmZpZw9x7Qk"
"""A token as actions/checkout writes it into .git/config; no report may carry any of it."""

GIT_CONFIG = "".join(f"# {line}\n" for line in build.english_lines()[:30]) + f"[http]\n\textraheader = AUTHORIZATION: basic {SECRET}\n"
"""A repository's .git/config, with comments enough (30 lines) for TP-TOK-DENSE-LINE to judge its lines: the token's
line is split far finer than English, and was quoted (its first 60 characters) before the fix."""

HANG_TIMEOUT_S = 120
"""Seconds a subprocess that may hang is given (the fixed code answers in a few). Hang tests only: no wall time is
asserted anywhere else."""

ADDRESS_SPACE = 3 << 30
"""Bytes of address space a subprocess may map (transformers and torch map about 0.9 GB): reading /dev/zero to the
end, as the code before the fix does, then stops at a MemoryError instead of filling the machine."""




def trainproof_cli(*argv: object, cwd: Path, stdin: object = None) -> subprocess.CompletedProcess:
    """``python -m trainproof ...`` in a subprocess, HANG_TIMEOUT_S at most, within ADDRESS_SPACE."""

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    env = {**os.environ, "PYTHONPATH": str(SOURCE)}
    return subprocess.run(
        [sys.executable, "-m", "trainproof", *map(str, argv)],
        cwd=cwd, env=env, stdin=stdin, capture_output=True, text=True, timeout=HANG_TIMEOUT_S, preexec_fn=limited,
    )  # fmt: skip


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A checkout: ``.git/config`` holding a token, a ``ds`` folder to put texts in; the working directory."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text(GIT_CONFIG, encoding="utf-8")
    (tmp_path / "ds").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def sp(built):
    return built("sentencepiece")


# --- item 1: a text behind a symlink ------------------------------------------------------------------------------


def test_a_text_linked_into_git_is_refused_and_nothing_of_it_is_quoted(repo, sp, capsys):
    """Before: the config was read as a transcript, and TP-TOK-UNKNOWN quoted the line holding the token."""
    os.symlink("../.git/config", repo / "ds" / "text.txt")
    code, out, err = run(capsys, "tokenizer", sp, "ds/text.txt", "--json")
    assert code == 2
    line = one_error_line(err)
    assert "ds/text.txt: leads through a symlink into a .git folder" in line
    assert "--follow-links" in line
    assert SECRET[4:12] not in out + err
    assert "AUTHORIZATION" not in out + err


@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="no /proc/self/environ here")
def test_a_text_linked_to_the_environment_is_refused_for_the_link(repo, sp, capsys):
    os.symlink("/proc/self/environ", repo / "ds" / "env.txt")
    code, out, err = run(capsys, "tokenizer", sp, "ds/env.txt")
    assert code == 2
    assert "leads through a symlink to /proc/" in one_error_line(err)  # not read at all (it was read, then "binary")


def test_a_folder_whose_metadata_csv_is_linked_out_is_refused(repo, sp, capsys):
    (repo / "lj").mkdir()
    os.symlink("../.git/config", repo / "lj" / "metadata.csv")
    code, _, err = run(capsys, "tokenizer", sp, "lj")
    assert code == 2
    assert "lj/metadata.csv: leads through a symlink into a .git folder" in one_error_line(err)


def test_follow_links_reads_a_link_the_user_trusts(repo, sp, capsys, tmp_path_factory):
    outside = tmp_path_factory.mktemp("elsewhere") / "lines.txt"
    outside.write_text("The quick brown fox.\nA second line of text.\n")
    os.symlink(outside, repo / "ds" / "text.txt")
    code, _, err = run(capsys, "tokenizer", sp, "ds/text.txt")
    assert code == 2
    assert "outside the input's folder" in err
    code, out, err = run(capsys, "tokenizer", "--follow-links", sp, "ds/text.txt")
    assert (code, err) == (0, "")
    assert "plain text, 2 lines" in out


def test_a_link_that_stays_inside_the_folder_or_the_working_directory_is_read(repo, sp, capsys):
    (repo / "ds" / "real.txt").write_text("The quick brown fox.\n")
    (repo / "shared.txt").write_text("A line kept at the top of the checkout.\n")
    os.symlink("real.txt", repo / "ds" / "same.txt")
    os.symlink("../shared.txt", repo / "ds" / "up.txt")
    code, out, err = run(capsys, "tokenizer", sp, "ds/same.txt", "ds/up.txt")
    assert (code, err) == (0, "")
    assert out.count("PASS  ds/") == 2


def test_a_pipe_and_dev_stdin_are_read_as_before(repo, sp, tmp_path_factory, capsys):
    """A pipe the user names (/dev/stdin, a FIFO in the folder) is read; /dev/stdin redirected from a file outside the
    checkout is what the user's shell opened, not a committed link."""
    outside = tmp_path_factory.mktemp("elsewhere") / "lines.txt"
    outside.write_text("The quick brown fox.\nA second line of text.\n")
    piped = subprocess.run(
        [sys.executable, "-m", "trainproof", "tokenizer", str(sp), "/dev/stdin"],
        cwd=repo, env={**os.environ, "PYTHONPATH": str(SOURCE)}, input=outside.read_text(), capture_output=True, text=True, timeout=HANG_TIMEOUT_S,
    )  # fmt: skip
    assert (piped.returncode, piped.stderr) == (0, ""), piped.stderr
    with outside.open() as handle:
        redirected = trainproof_cli("tokenizer", sp, "/dev/stdin", cwd=repo, stdin=handle)
    assert (redirected.returncode, redirected.stderr) == (0, ""), redirected.stderr
    fifo = repo / "ds" / "fifo.txt"
    os.mkfifo(fifo)
    os.symlink("/dev/null", repo / "ds" / "null.txt")  # a device behind a link: refused as a device, as before
    writer = subprocess.Popen(["sh", "-c", f"cat {outside} > {fifo}"])
    try:
        streamed = trainproof_cli("tokenizer", sp, "ds/fifo.txt", cwd=repo)
    finally:
        writer.wait(timeout=HANG_TIMEOUT_S)
    assert (streamed.returncode, streamed.stderr) == (0, ""), streamed.stderr
    code, _, err = run(capsys, "tokenizer", sp, "ds/null.txt")
    assert code == 2
    assert "ds/null.txt: is not a regular file (a character device)" in one_error_line(err)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_link_to_a_pipe_outside_the_folder_is_judged_as_a_link(repo, sp, tmp_path_factory, capsys):
    """Before: a link whose target was a FIFO skipped the link rule, and the pipe was read (a committed link to
    /proc/self/fd/1 waited for ever on the run's own stdout pipe). Only a descriptor the user names is exempt."""
    fifo = tmp_path_factory.mktemp("elsewhere") / "pipe"
    os.mkfifo(fifo)
    os.symlink(fifo, repo / "ds" / "text.txt")
    writer = subprocess.Popen(["sh", "-c", f"cat > '{fifo}'"], stdin=subprocess.PIPE)
    try:
        writer.stdin.write(b"The quick brown fox.\n")
        writer.stdin.close()
        code, _, err = run(capsys, "tokenizer", sp, "ds/text.txt")
    finally:
        writer.kill()  # still waiting for a reader
        writer.wait()
    assert code == 2
    assert f"ds/text.txt: leads through a symlink to {fifo}, outside the input's folder" in one_error_line(err)


def test_an_ljspeech_clip_linked_out_of_the_folder_is_not_opened(repo, sp, capsys, tmp_path_factory):
    """Before: the clip's header was read through the link (its duration used); now it has none, and a note says why."""
    soundfile = pytest.importorskip("soundfile")
    import numpy as np

    outside = tmp_path_factory.mktemp("elsewhere")
    lj = repo / "lj"
    (lj / "wavs").mkdir(parents=True)
    lines = build.english_lines()[:3]
    for k in range(3):
        target = (outside if k == 0 else lj / "wavs") / f"LJ{k}.wav"
        soundfile.write(target, np.zeros(16000 * (k + 1), dtype=np.float32), 16000)
    os.symlink(outside / "LJ0.wav", lj / "wavs" / "LJ0.wav")
    (lj / "metadata.csv").write_text("".join(f"LJ{k}|{line}|{line}\n" for k, line in enumerate(lines)), encoding="utf-8")
    from trainproof.tokenizer.transcripts import read_transcripts

    text = read_transcripts(lj)
    assert text.durations == (None, 2.0, 3.0)
    assert any(note.startswith("1 of 3 clips was not opened, so has no duration:") and "--follow-links" in note for note in text.notes)
    assert read_transcripts(lj, follow_links=True).durations == (1.0, 2.0, 3.0)


# --- item 7: a tokenizer folder's files are looked at before any library opens them -----------------------------


def _folder(built, tmp_path: Path) -> Path:
    return Path(shutil.copytree(built("hf"), tmp_path / "tok"))


CHAT_ROW = '{"messages": [{"role": "user", "content": "What is two and two?"}, {"role": "assistant", "content": "Four."}]}\n'


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("name", ["tokenizer_config.json", "config.json", "special_tokens_map.json", "chat_template.jinja"])
def test_a_fifo_in_a_tokenizer_folder_is_refused_not_waited_on(built, tmp_path, name):
    """A hang test (subprocess, generous timeout). Before: the open of tokenizer_config.json or config.json blocked
    for ever (no writer ever comes)."""
    folder = _folder(built, tmp_path)
    (folder / name).unlink(missing_ok=True)
    os.mkfifo(folder / name)
    (tmp_path / "t.txt").write_text("The quick brown fox.\n")
    done = trainproof_cli("tokenizer", folder, "t.txt", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"tok/{name}: is not a regular file (a FIFO)" in one_error_line(done.stderr)


@pytest.mark.parametrize("name", ["tokenizer_config.json", "config.json"])
def test_a_config_linked_to_dev_zero_is_refused_before_a_byte_is_read(built, tmp_path, name):
    """Before: read to the end, which /dev/zero has not, until MemoryError (within ADDRESS_SPACE here)."""
    folder = _folder(built, tmp_path)
    (folder / name).unlink(missing_ok=True)
    os.symlink("/dev/zero", folder / name)
    (tmp_path / "t.txt").write_text("The quick brown fox.\n")
    done = trainproof_cli("tokenizer", folder, "t.txt", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"tok/{name}: is not a regular file (a character device)" in one_error_line(done.stderr)


def test_a_text_measured_with_a_tokenizer_folder_holding_a_fifo_is_refused_too(built, tmp_path):
    """``trainproof text --tokenizer``: the same folder, the same refusal (a hang test)."""
    folder = _folder(built, tmp_path)
    (folder / "tokenizer_config.json").unlink()
    os.mkfifo(folder / "tokenizer_config.json")
    (tmp_path / "chat.jsonl").write_text(CHAT_ROW)
    done = trainproof_cli("text", "--tokenizer", folder, "--max-len", 64, "chat.jsonl", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "tok/tokenizer_config.json: is not a regular file (a FIFO)" in one_error_line(done.stderr)


@pytest.mark.parametrize(
    ("name", "padding"),
    [("tokenizer_config.json", (16 << 20) + 1), ("special_tokens_map.json", (16 << 20) + 1), ("chat_template.jinja", (1 << 20) + 1)],
)
def test_a_configuration_or_template_past_its_cap_is_refused_naming_it(built, tmp_path, capsys, name, padding):
    """Before: read whole (and a template compiled whole). Configurations are small: 16 MiB, templates 1 MiB."""
    folder = _folder(built, tmp_path)
    original = (folder / name).read_text(encoding="utf-8") if (folder / name).exists() else "{}"
    (folder / name).write_text(original + " " * padding, encoding="utf-8")  # still valid JSON, still the same template
    (tmp_path / "t.txt").write_text("The quick brown fox.\n")
    code, _, err = run(capsys, "tokenizer", folder, tmp_path / "t.txt")
    assert code == 2
    line = one_error_line(err)
    assert f"{name}: is " in line
    assert "more than trainproof reads of such a file (at most" in line


def test_the_hub_cache_layout_of_links_into_blobs_loads(built, tmp_path):
    """HuggingFace's cache keeps a snapshot's files as links into ../../blobs/: tokenizer files are not held to the
    link rule, only to their bounds. And a large file no tokenizer library reads (the model's weights) has none."""
    source = built("hf")
    blobs = tmp_path / "models--x" / "blobs"
    snapshot = tmp_path / "models--x" / "snapshots" / "0123abc"
    blobs.mkdir(parents=True)
    snapshot.mkdir(parents=True)
    for k, file in enumerate(sorted(source.iterdir())):
        shutil.copy(file, blobs / f"blob{k}")
        os.symlink(f"../../blobs/blob{k}", snapshot / file.name)
    with open(blobs / "weights", "wb") as weights:
        weights.truncate(2 << 30)  # sparse: 2 GiB that take no disk
    os.symlink("../../blobs/weights", snapshot / "model.safetensors")
    tokenizer = load_tokenizer(snapshot)
    assert tokenizer.kind == "transformers"
    assert tokenizer.chat_template == build.CHAT_TEMPLATE


def test_a_special_tokens_map_beside_a_tokenizer_json_that_is_a_fifo_is_refused(built, tmp_path):
    """Beside a bare tokenizer.json the configurations naming its special tokens are read too: a FIFO there was skipped
    (looked at as "not a file"); it is now refused like any other, never opened for reading."""
    folder = tmp_path / "plain"
    folder.mkdir()
    shutil.copy(built("bpe"), folder / "tokenizer.json")
    os.mkfifo(folder / "special_tokens_map.json")
    with pytest.raises(InputError, match=r"special_tokens_map\.json: is not a regular file \(a FIFO\)"):
        load_tokenizer(folder / "tokenizer.json")


# --- item 9: a sentencepiece piece that is not UTF-8 --------------------------------------------------------------


def _flipped_piece(model: Path, target: Path) -> Path:
    """The model with one byte flipped inside a piece's text: the second byte of the first "▁" (E2 96 81) loses its top
    bit, so the piece is no longer UTF-8 while the protobuf around it still walks to the end."""
    data = bytearray(model.read_bytes())
    at = data.index("\u2581".encode()) + 1
    data[at] ^= 0x80
    target.write_bytes(bytes(data))
    return target


def test_a_byte_flipped_in_a_piece_is_a_corrupt_model_not_an_internal_error(sp, tmp_path, capsys):
    """Before: "internal error: UnicodeDecodeError" from sentencepiece's IdToPiece, asked for every piece at loading."""
    broken = _flipped_piece(sp, tmp_path / "broken.model")
    with pytest.raises(InputError, match=r"is a corrupt sentencepiece model: piece \d+ is not UTF-8 text"):
        load_tokenizer(broken)
    (tmp_path / "t.txt").write_text("The quick brown fox.\n")
    code, _, err = run(capsys, "tokenizer", broken, tmp_path / "t.txt")
    assert code == 2
    assert "is a corrupt sentencepiece model: piece" in one_error_line(err)
    assert "internal error" not in err


def test_a_folder_loading_the_flipped_model_with_sentencepiece_says_so_too(sp, tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    _flipped_piece(sp, folder / "tokenizer.model")
    with pytest.raises(InputError, match="is a corrupt sentencepiece model"):
        load_tokenizer(folder)


MUTATIONS = 150
PROBE = """
import random, sys
from pathlib import Path
from trainproof.io.errors import InputError
from trainproof.tokenizer.load import load_tokenizer
model, folder = Path(sys.argv[1]).read_bytes(), Path(sys.argv[2])
rng = random.Random(27)
outcomes = {"loaded": 0, "refused": 0}
for k in range(int(sys.argv[3])):
    data = bytearray(model)
    data[rng.randrange(len(data) // 4)] ^= 1 << rng.randrange(8)  # the pieces come first in a ModelProto
    path = folder / f"m{k}.model"
    path.write_bytes(bytes(data))
    try:
        tokenizer = load_tokenizer(path)
        tokenizer.decode_batch(tokenizer.encode_batch(["The quick brown fox.", "Jürgen 1984"]))
        outcomes["loaded"] += 1
    except InputError:
        outcomes["refused"] += 1
print(outcomes)
"""


def test_models_with_a_byte_flipped_load_or_are_refused_never_an_internal_error(sp, tmp_path):
    """The issue's mutation run: 150 models, each with one bit flipped among its pieces, loaded and used. Every one
    loads or is an InputError (a subprocess: a mutation that crashed sentencepiece itself would not take pytest)."""
    folder = tmp_path / "mutants"
    folder.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(sp), str(folder), str(MUTATIONS)],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(SOURCE)}, capture_output=True, text=True, timeout=HANG_TIMEOUT_S,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    outcomes = eval(done.stdout)  # noqa: S307 -- the probe's own dict of two counts
    assert outcomes["loaded"] + outcomes["refused"] == MUTATIONS
    assert outcomes["refused"] > 0


# --- item 1: quotations of the text are capped --------------------------------------------------------------------


def test_a_long_word_blamed_for_unknown_tokens_is_quoted_cut_with_its_length(sp, tmp_path):
    """Before: TP-TOK-UNKNOWN named the words responsible whole: a "word" of 5,001 characters (a key, a token, a blob
    of base64 with one character the vocabulary lacks) was copied into every report."""
    from trainproof.commands import judge

    blob = "Q" * 5000 + "\u00df"
    path = tmp_path / "t.txt"
    path.write_text(f"The quick brown fox.\nA key follows: {blob}\n", encoding="utf-8")
    report = judge("tokenizer", [str(path)], tokenizer=str(sp))
    (finding,) = [f for f in report.subjects[0].findings if f.rule_id == "TP-TOK-UNKNOWN"]
    assert "Q" * 100 not in finding.message
    assert "... (5,001 characters) (1)" in finding.message  # the word, cut, with its length; then its count
    assert len(finding.message) < 600


def test_a_long_number_is_quoted_cut_with_its_length(built, tmp_path):
    """Before: TP-TOK-NUMBERS showed each example number, and how it was split, whole: a 300-digit "number" (a key, a
    hash in decimal) was copied twice into every report."""
    from trainproof.commands import judge

    lines = [*build.english_lines()[:10], *(f"The key is {chunk * 75} here." for chunk in ("1984", "1066", "2024", "4567", "8812"))]
    path = tmp_path / "t.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = judge("tokenizer", [str(path)], tokenizer=str(built("bpe")))
    (finding,) = [f for f in report.subjects[0].findings if f.rule_id == "TP-TOK-NUMBERS"]
    assert finding.message.startswith("300-digit numbers are split ")
    assert "... (300 characters) as " in finding.message  # the number, cut, with its length; then its split, cut
    assert "1984" * 10 not in finding.message
    assert len(finding.message) < 600
