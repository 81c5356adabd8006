"""No output says "1" before a plural noun ("1 speakers", "1 were resolved", "(1 problems)").

Every command the README shows on shipped files, every gallery run (judged
alone and against a healthy baseline), every log in tests/data and every
shipped dataset, tokenizer and text is run in-process through the CLI with
every output at once (text on stdout, stderr, JSON, HTML, SARIF, JUnit,
markdown, the GitHub job summary and annotations), and each output is searched
for "1 " before a plural. Inputs made to count one of something (one speaker,
one problem line, one clip, one row, one logged point, one example named)
reach the messages whose counts the shipped files never bring to one.
"""

from __future__ import annotations

import html
import re
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import REPO
from trainproof.cli import main

README = REPO / "README.md"
GALLERY = REPO / "examples" / "gallery"
SPEECH = REPO / "examples" / "speech" / "ljspeech_tiny"
SPM = "examples/tokenizer/tts_unigram.model"
TRANSCRIPTS = "examples/tokenizer/transcripts.txt"
HF_TOKENIZER = "examples/text/tokenizer"
CHAT = "examples/text/chat.jsonl"

# "1 " then a word, and the word after it ("1 distinct numbers"); not "11 clips", "0.1 tokens" nor "1.5 tokens"
_ONE = re.compile(r"(?<![\w.,-])1 ([A-Za-z]+)(?: ([A-Za-z]+))?")
_NOT_PLURAL = frozenset("as has is was its this thus us plus across less unless pass class loss process status bias axis ms dbfs".split())
_PLURAL_VERBS = frozenset({"were", "are", "have"})


def _plural(word: str) -> bool:
    word = word.lower()
    return word in _PLURAL_VERBS or (len(word) > 2 and word.endswith("s") and word not in _NOT_PLURAL)


def ones_before_plurals(text: str) -> list[str]:
    """Each "1 <plural>" in ``text``, with a little of what surrounds it."""
    found = []
    for m in _ONE.finditer(text):
        if _plural(m.group(1)) or (m.group(2) and _plural(m.group(2))):
            found.append(" ".join(text[max(0, m.start() - 50) : m.end() + 20].split()))
    return found


@pytest.mark.parametrize(
    "text",
    [
        "Line 34 takes 1 tokens per character",
        "nemo dataset; 2 clips; 1 speakers",
        "and 1 were resolved against the manifest's folder",
        "0 records (1 problems)",
        "only 1 distinct numbers of 2 digits",
        "1 rows have",
        "1 are",
    ],
)
def test_the_search_finds_a_one_before_a_plural(text):
    assert ones_before_plurals(text)


@pytest.mark.parametrize(
    "text",
    [
        "1 token per character",
        "lasts 1 s",
        "1 class",
        "1.0 tokens per character",
        "11 clips",
        "0.1 tokens",
        "1,500 clips",
        "1 clip has",
        "1 of 5 clips",
        "1 input: 1 PASS",
        "messages 1 and 2 are both 'user' turns",
        "steps (1 to 300)",
        "-1 tokens",
    ],
)
def test_the_search_passes_a_one_before_a_singular(text):
    assert not ones_before_plurals(text)


# --- what is run ---------------------------------------------------------------------------------

_COMMANDS = ("epoch", "compare", "data", "tokenizer", "text", "watch", "rules")


def readme_commands() -> list[str]:
    """Each ``trainproof ...`` line of the README's bash and text blocks whose every positional word is a shipped file."""
    found = []
    for block in re.findall(r"```(?:bash|text)\n(.*?)```", README.read_text(), re.S):
        for line in block.splitlines():
            m = re.search(rf"(?:^|&&|\$)\s*trainproof\s+((?:{'|'.join(_COMMANDS)})\b[^#]*)", line)
            if not m:
                continue
            words = shlex.split(m.group(1))
            positional = [w for i, w in enumerate(words[1:]) if not w.startswith("-") and not (i and words[i].startswith("-"))]
            if positional and all((REPO / w).exists() for w in positional) and words not in found:
                found.append(words)
    return [" ".join(words) for words in found]


def gallery_commands() -> list[str]:
    out = ["epoch examples/gallery", "compare examples/gallery/lr_hot examples/gallery/healthy"]
    for config in sorted(p.name for p in GALLERY.iterdir() if (p / "seed0").is_dir()):
        for seed in sorted(p.name for p in (GALLERY / config).iterdir() if p.is_dir()):
            run = f"examples/gallery/{config}/{seed}"
            baseline = f"seed{(int(seed[-1]) + 1) % 3}" if config == "healthy" else seed  # a healthy run, not the run itself
            out += [f"epoch {run}", f"compare {run} examples/gallery/healthy/{baseline}"]
    out += ["watch examples/gallery/lr_hot/seed0/trainer_state.json --max-ticks 1 --interval 0.01"]
    return out


def log_commands() -> list[str]:
    runs = [
        "tests/data/healthy",
        "tests/data/hot",
        "tests/data/overfit",
        "tests/data/tensorboard/keras_style",
        "tests/data/tensorboard/hf_style",
    ]
    for run in runs:
        assert (REPO / run).is_dir(), run
    return ["epoch tests/data"] + [f"epoch {run}" for run in runs] + [f"compare {run} tests/data/healthy" for run in runs[1:]]


def shipped_input_commands() -> list[str]:
    return [
        f"data {SPEECH.relative_to(REPO)}",
        f"tokenizer {SPM} {TRANSCRIPTS}",
        f"tokenizer {SPM} {SPEECH.relative_to(REPO)}/metadata.csv",
        f"tokenizer {HF_TOKENIZER} {TRANSCRIPTS}",
        f"text {CHAT}",
        f"text {CHAT} --tokenizer {HF_TOKENIZER} --max-len 96",
        "rules",
    ]


def _clip(n: int) -> Path:
    return SPEECH / "wavs" / f"tiny-000{n}.wav"


def _one_speaker_and_one_path_each_way(tmp: Path) -> str:
    """Two clips of one speaker: one found from the working directory, one beside the manifest."""
    (tmp / "sub").mkdir()
    shutil.copy(_clip(1), tmp / "a.wav")
    shutil.copy(_clip(2), tmp / "sub" / "b.wav")
    (tmp / "sub" / "manifest.jsonl").write_text(
        '{"audio_filepath": "a.wav", "text": "the birch canoe", "speaker": "s1"}\n'
        '{"audio_filepath": "b.wav", "text": "glue the sheet", "speaker": "s1"}\n'
    )
    return "data sub/manifest.jsonl"


def _one_problem_and_no_clip(tmp: Path) -> str:
    (tmp / "metadata.csv").write_text("id|text\n|nothing\n")
    return "data metadata.csv"


def _one_clip(tmp: Path) -> str:
    (tmp / "clips").mkdir()
    shutil.copy(_clip(1), tmp / "clips" / "one.wav")
    (tmp / "clips" / "one.txt").write_text("the birch canoe slid on the smooth planks\n")
    return "data clips"


def _one_row(tmp: Path) -> str:
    (tmp / "one.jsonl").write_text('{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}\n')
    return f"text one.jsonl --tokenizer {REPO / HF_TOKENIZER} --max-len 1"


def _one_line(tmp: Path) -> str:
    (tmp / "one.txt").write_text("the birch canoe slid on the smooth planks\n")
    return f"tokenizer {REPO / SPM} one.txt --max-tokens 1"


def _one_logged_point(tmp: Path) -> str:
    """Too short to judge (exit 2): what is said is the reason."""
    (tmp / "log.csv").write_text("step,loss\n1,2.3\n")
    return "epoch log.csv"


def _one_tick_of_one_point(tmp: Path) -> str:
    """Not judged yet (exit 2): the tick line counts the point."""
    (tmp / "log.csv").write_text("step,loss\n1,2.3\n")
    return "watch log.csv --max-ticks 1 --interval 0.01"


def _examples(command: str) -> Callable[[Path], str]:
    """``command`` (on shipped files) with every rule naming only its first example."""

    def build(tmp: Path) -> str:
        (tmp / "one.toml").write_text("[thresholds]\nTOK_EXAMPLES = 1\nTEXT_EXAMPLES = 1\nDATA_EXAMPLES = 1\n")
        return f"{command} --config {tmp / 'one.toml'}"

    return build


def _ones_in_rules(tmp: Path) -> str:
    """The rules listing with a threshold of 1 in each kind of unit (points, samples, seconds, standard errors, ...)."""
    ones = "MIN_TIMED_POINTS DATA_CLIP_RUN TOK_NUMBER_MIN DATA_EXAMPLES TOK_FERTILITY_WARN FLAT_COARSE_QUANTA PROOF_Z DATA_MAX_DURATION_S"
    (tmp / "ones.toml").write_text("[thresholds]\n" + "".join(f"{name} = 1\n" for name in ones.split()))
    return f"rules --config {tmp / 'ones.toml'}"


ONE_OF_A_KIND: dict[str, Callable[[Path], str]] = {
    "one speaker, one path each way": _one_speaker_and_one_path_each_way,
    "one problem line, no clip": _one_problem_and_no_clip,
    "one clip": _one_clip,
    "one row, --max-len 1": _one_row,
    "one line, --max-tokens 1": _one_line,
    "one logged point": _one_logged_point,
    "one watch tick of one point": _one_tick_of_one_point,
    "tokenizer, one example named": _examples(f"tokenizer {REPO / SPM} {REPO / TRANSCRIPTS} --max-tokens 1"),
    "text, one example named": _examples(f"text {REPO / CHAT} --tokenizer {REPO / HF_TOKENIZER} --max-len 1"),
    "data, one example named": _examples(f"data {SPEECH}"),
    "rules, thresholds of 1": _ones_in_rules,
}


# --- running them ----------------------------------------------------------------------------------

_FILES = {"json-file": "report.json", "html": "report.html", "sarif": "report.sarif", "junit": "report.xml", "markdown": "report.md"}


def outputs_of(words: list[str], out: Path, capsys, monkeypatch, judged: bool = True) -> dict[str, str]:
    """Every output of one command line, by name; a command that needs an optional package it lacks skips.
    ``judged``: the command must judge (exit 0 or 1), not stop at a usage or input error that says little."""
    out.mkdir()
    summary = out / "summary.md"
    summary.touch()
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("CI", "1")
    extra: list[str] = []
    if words[0] in ("data",):
        extra += ["--no-cache", "--jobs", "1"]
    if words[0] not in ("watch", "rules"):
        extra += [f for flag, name in _FILES.items() for f in (f"--{flag}", str(out / name))] + ["--github"]
    capsys.readouterr()
    code = main([*words, *extra])
    captured = capsys.readouterr()
    if "needs the optional package" in captured.err:
        pytest.skip(captured.err.strip())
    assert (code in (0, 1)) is judged, captured.err
    found = {"stdout": captured.out, "stderr": captured.err, "job summary": summary.read_text()}
    found.update({name: html.unescape((out / name).read_text()) for name in _FILES.values() if (out / name).exists()})
    return found


def assert_no_one_before_a_plural(outputs: dict[str, str]) -> None:
    said = [f"{name}: {where}" for name, text in outputs.items() for where in ones_before_plurals(text)]
    assert not said, "'1' before a plural:\n" + "\n".join(said)


SHIPPED = readme_commands() + gallery_commands() + log_commands() + shipped_input_commands()


def test_the_readme_commands_are_found():
    commands = readme_commands()
    for command in ("epoch", "compare", "data", "tokenizer", "text"):
        assert any(line.startswith(command + " ") for line in commands), (command, commands)


@pytest.mark.parametrize("line", list(dict.fromkeys(SHIPPED)))
def test_no_output_of_a_shipped_input_says_one_before_a_plural(line, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    assert_no_one_before_a_plural(outputs_of(shlex.split(line), tmp_path / "out", capsys, monkeypatch))


@pytest.mark.parametrize("name", list(ONE_OF_A_KIND))
def test_no_output_says_one_before_a_plural_where_a_count_is_one(name, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    line = ONE_OF_A_KIND[name](tmp_path)
    judged = name not in ("one logged point", "one watch tick of one point")
    assert_no_one_before_a_plural(outputs_of(shlex.split(line), tmp_path / "out", capsys, monkeypatch, judged))


def test_committed_example_outputs_say_no_one_before_a_plural():
    """The outputs the README and the examples show (the README's code blocks; its prose may say "1 Mi characters")."""
    texts = {f"README.md block {i}": block for i, block in enumerate(re.findall(r"```\w*\n(.*?)```", README.read_text(), re.S))}
    texts.update({str(p.relative_to(REPO)): p.read_text() for p in [*REPO.glob("examples/**/*.md"), *REPO.glob("examples/**/output.txt")]})
    assert len(texts) > 20
    assert_no_one_before_a_plural(texts)
