"""The text report of every command prints one block per rule on one input, however many places the rule found.

Each case runs a command through ``main`` on real inputs (the repository's
examples, gallery and test data, inputs made here with several faults of one
kind, and the shared corpus when it is present) and reads the text report
against the JSON one from the same run: every rule with findings on an input
heads exactly one block of that input (and one row of the markdown and HTML
reports), and the cases made here do have a rule with several findings on one
input, so the check is not vacuous.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter

import pytest

from tests.helpers import REPO, two_nan_eval_sets
from trainproof.cli import main

_VERDICTS = ("PASS  ", "WARN  ", "FAIL  ", "NOT-CHECKED  ")
_BLOCK = re.compile(r"^  \[(?:FAIL|WARN|INFO)\] (\S+)  ")


def _subject_blocks(text: str) -> list[list[str]]:
    """Per input of the text report, in order, the rule id heading each of its finding blocks."""
    return [
        [m.group(1) for line in paragraph.splitlines() if (m := _BLOCK.match(line))]
        for paragraph in text.split("\n\n")
        if paragraph.startswith(_VERDICTS)
    ]


def _judged(argv: list[str], tmp_path, capsys) -> tuple[list[list[str]], list[Counter], str, str]:
    """The command's text report read as blocks per input, per input how many findings of each rule its JSON has, and
    its markdown and HTML reports, all from one run."""
    document, comment, page = tmp_path / "report.json", tmp_path / "comment.md", tmp_path / "report.html"
    capsys.readouterr()
    code = main([*argv, "--json-file", str(document), "--markdown", str(comment), "--html", str(page)])
    text = capsys.readouterr().out
    assert code in (0, 1, 2), f"{argv}: exit {code}"  # 2: some input could not be judged, the others were
    subjects = json.loads(document.read_text())["subjects"]
    return _subject_blocks(text), [Counter(f["id"] for f in s["findings"]) for s in subjects], comment.read_text(), page.read_text()


def _assert_one_block_per_rule(argv: list[str], tmp_path, capsys, *, grouped: str | None = None) -> None:
    """No rule heads two blocks of one input, and each rule with findings heads one: in the text report, and as rows
    of the markdown and HTML reports; ``grouped``: a rule that must have found several things on some input (the case is
    made for it)."""
    blocks, counts, comment, page = _judged(argv, tmp_path, capsys)
    assert len(blocks) == len(counts), argv
    for heads, count in zip(blocks, counts):
        twice = [rule for rule, n in Counter(heads).items() if n > 1]
        assert not twice, f"{argv}: {twice} head more than one block of one input"
        assert sorted(heads) == sorted(count), argv
    per_input = Counter(rule for count in counts for rule in count)
    rows = Counter(re.findall(r"^\| \*\*(?:FAIL|WARN|INFO)\*\* \| `(\S+)` \|", comment, flags=re.MULTILINE))
    if "left out to stay within" in comment:
        assert all(rows[rule] <= n for rule, n in per_input.items()), argv
    else:
        assert rows == per_input, f"{argv}: markdown rows {rows - per_input} beyond one per rule and input"
    sections = re.split(r"<section id=\"input-\d+\">", page)[1:]
    assert len(sections) == len(counts), argv
    for section, count in zip(sections, counts):
        heads = re.findall(r'<tr><td><span class="badge \w+">\w+</span></td><td><code>(\S+)</code>', section)
        assert sorted(heads) == sorted(count), f"{argv}: HTML rows {heads}"
    if grouped is not None:
        assert any(c[grouped] > 1 for c in counts), f"{argv}: no input has several {grouped} findings"


# --- the repository's own inputs ---------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["epoch", "examples/gallery"],
        ["epoch", "tests/data/healthy", "tests/data/hot", "tests/data/overfit", "tests/data/tensorboard"],
        ["compare", "examples/gallery/lr_hot", "examples/gallery/nonfinite", "examples/gallery/healthy"],
        ["compare", "tests/data/hot", "tests/data/overfit", "tests/data/healthy"],
        ["data", "examples/speech/ljspeech_tiny", "--no-cache", "--jobs", "1"],
        ["text", "examples/text/chat.jsonl"],
    ],
    ids=lambda argv: " ".join(argv[:2]),
)
def test_the_repositorys_inputs(argv, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    if argv[0] == "data":
        pytest.importorskip("soundfile")
    _assert_one_block_per_rule(argv, tmp_path, capsys)


def test_the_tokenizer_example(tmp_path, capsys, monkeypatch):
    pytest.importorskip("sentencepiece")
    monkeypatch.chdir(REPO)
    _assert_one_block_per_rule(
        ["tokenizer", "examples/tokenizer/tts_unigram.model", "examples/tokenizer/transcripts.txt"], tmp_path, capsys
    )


def test_the_text_example_with_its_tokenizer(tmp_path, capsys, monkeypatch):
    pytest.importorskip("transformers")
    monkeypatch.chdir(REPO)
    _assert_one_block_per_rule(
        ["text", "examples/text/chat.jsonl", "--tokenizer", "examples/text/tokenizer", "--max-len", "64"], tmp_path, capsys
    )


# --- inputs made here with several faults of one kind --------------------------------


def test_epoch_on_a_run_with_two_nan_eval_sets(tmp_path, capsys):
    run = two_nan_eval_sets(tmp_path / "run")
    _assert_one_block_per_rule(["epoch", str(run)], tmp_path, capsys, grouped="TP-EVAL-NONFINITE")


def test_compare_on_a_run_with_two_nan_eval_sets(tmp_path, capsys):
    run = two_nan_eval_sets(tmp_path / "run")
    _assert_one_block_per_rule(
        ["compare", str(run), str(REPO / "tests" / "data" / "healthy")], tmp_path, capsys, grouped="TP-EVAL-NONFINITE"
    )


def test_data_with_missing_clips_and_repeated_ids(tmp_path, capsys):
    pytest.importorskip("soundfile")
    dataset = tmp_path / "ds"
    shutil.copytree(REPO / "examples" / "speech" / "ljspeech_tiny", dataset)
    with (dataset / "metadata.csv").open("a", encoding="utf-8") as manifest:
        for n in range(3):
            manifest.write(f"gone-{n}|A clip that was never recorded.|A clip that was never recorded.\n")
        for _ in range(2):
            manifest.write("tiny-0001|The birch canoe slid on the smooth planks.|The birch canoe slid on the smooth planks.\n")
    argv = ["data", str(dataset), "--no-cache", "--jobs", "1"]
    _assert_one_block_per_rule(argv, tmp_path, capsys, grouped="TP-DATA-MISSING")
    _assert_one_block_per_rule(argv, tmp_path, capsys, grouped="TP-DATA-DUPLICATE-ID")


def test_tokenizer_on_lines_it_cannot_represent(tmp_path, capsys):
    pytest.importorskip("sentencepiece")
    text = tmp_path / "german.txt"
    text.write_text("Die Straße führt über den Fluß.\nGrüße aus München.\nÄpfel und Öl.\nA plain English line.\n", encoding="utf-8")
    argv = ["tokenizer", str(REPO / "examples" / "tokenizer" / "tts_unigram.model"), str(text)]
    _assert_one_block_per_rule(argv, tmp_path, capsys, grouped="TP-TOK-UNKNOWN")


def test_text_with_several_broken_lines(tmp_path, capsys):
    data = tmp_path / "train.jsonl"
    lines = [
        '{"prompt": "p", "completion": "c"}',
        '{"prompt": "p2"',
        "[1, 2]",
        '{"Prompt": "x", "Completion": "y"}',
        '{"Prompt": "z", "Completion": "w"}',
        "{",
    ]
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _assert_one_block_per_rule(["text", str(data)], tmp_path, capsys, grouped="TP-TEXT-MALFORMED")
    _assert_one_block_per_rule(["text", str(data)], tmp_path, capsys, grouped="TP-TEXT-SHAPE")


# --- the shared corpus, when it is here ------------------------------------------------

_TRANSCRIPTS = str(REPO / "examples" / "tokenizer" / "transcripts.txt")
_BOTCHAN = "public/tokenizers/sentencepiece_test_botchan.txt"
CORPUS_CASES = {
    "gallery": ["epoch", "gallery"],
    "gallery compared": ["compare", "gallery/lr_hot", "gallery/fp16_nan", "gallery/healthy"],
    "xtts": ["epoch", "real_world/xtts_ljspeech"],
    "hf logs": ["epoch", "public/hf/*.json"],
    "other logs": ["epoch", "public/coqui/*_log.txt", "public/keras/*.csv", "public/lightning/*.csv", "public/tensorboard/*tfevents*"],
    **{
        f"speech {name.split('__')[0]}": ["data", f"public/datasets/speech/{name}", "--no-cache", "--jobs", "1"]
        for name in (
            "Cian911__piper1-gpl__dataset",
            "NVIDIA__NeMo__tests_data_asr",
            "Tawheed-tariq__TechnicalTerms-TTS__dataset",
            "jmolina116__kaldi-yesno-tutorial__yesno",
            "wenet-e2e__wenet__test_resources_dataset",
        )
    },
    "text datasets": ["text", "public/datasets/text/*.jsonl"],
    "bpe tokenizer": ["tokenizer", "public/tokenizers/sentencepiece-0.2.3_sdist__botchan_en_bpe_1000.model", _BOTCHAN, _TRANSCRIPTS],
    "unigram tokenizer": [
        "tokenizer",
        "public/tokenizers/sentencepiece-0.2.3_sdist__botchan_en_unigram_1000.model",
        _BOTCHAN,
        _TRANSCRIPTS,
    ],
}
"""Commands over the shared corpus: an argument that is not an option is a path (a glob) relative to it."""


@pytest.mark.parametrize("case", sorted(CORPUS_CASES))
def test_the_shared_corpus(case, tmp_path, capsys, corpus):
    command, *words = CORPUS_CASES[case]
    argv = [command]
    for word in words:
        if word.startswith("-") or word.isdigit() or word.startswith("/"):
            argv.append(word)
            continue
        found = sorted(str(p) for p in corpus.glob(word))
        if not found:
            pytest.skip(f"{word} is not in the corpus")
        argv.extend(found)
    if command == "data":
        pytest.importorskip("soundfile")
    if command == "tokenizer":
        pytest.importorskip("sentencepiece")
    _assert_one_block_per_rule(argv, tmp_path, capsys)
