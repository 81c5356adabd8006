#!/usr/bin/env python
"""Make the examples of ``trainproof tokenizer`` and ``trainproof text``: two tokenizers and the text they are judged on.

    python examples/tokenizer/make_example.py            # rewrite the files below
    python examples/tokenizer/make_example.py --check    # regenerate in a temporary folder and compare, byte for byte

Written, with the test suite's tokenizer builders (tests/tokenizer/build.py,
trained on the docstrings of standard-library modules, so the same Python
gives the same bytes):

- ``examples/tokenizer/tts_unigram.model``: a sentencepiece unigram model of
  1,000 pieces, no byte fallback, digits not split: a TTS front end's
  tokenizer built on English alone.
- ``examples/tokenizer/transcripts.txt``: 40 English transcripts and three
  that break it: German with "ß" and "ü" (unknown tokens), years and prices
  (numbers split into inconsistent digit groups), and a line of base64.
- ``examples/text/tokenizer/``: a HuggingFace tokenizer folder (BPE with byte
  fallback, a Zephyr-style chat template, pad distinct from eos).
- ``examples/text/chat.jsonl``: chat rows for fine-tuning with four faults:
  a row whose keys are capitalised, two user turns in a row, a duplicate of
  an earlier row, and a conversation too long for ``--max-len 96``.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO))

from tests.tokenizer import build  # noqa: E402  (the test suite's tokenizer builders)

FAULTY = (
    (12, "Die Straße führt über den Fluß."),
    (25, "In 1984 the fare was 2024 pence; in 1066 it was 31 and in 1950 it was 4567."),
    (33, "aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQgdGV4dCB0aGF0IG5vYm9keSByZWFkcw=="),
)
"""(position, line) of the three broken transcripts."""

QUESTIONS = (
    ("What does the textwrap module do?", "It wraps and fills plain text to a given width."),
    ("How do I read a CSV file?", "Open it and pass the file to csv.reader, which yields one list per row."),
    ("What is a dataclass?", "A class whose fields are declared as annotations; the decorator writes its methods."),
    ("How can I compare two sequences?", "difflib.SequenceMatcher finds the longest matching blocks between them."),
    ("What does functools.lru_cache do?", "It remembers the results of recent calls, keyed by their arguments."),
    ("How do I make a temporary folder?", "tempfile.TemporaryDirectory makes one and removes it when the block ends."),
)


def transcripts() -> list[str]:
    lines = list(build.english_lines()[::80][:40])
    for position, line in FAULTY:
        lines.insert(position, line)
    return lines


def chat_rows() -> list[str]:
    rows = [{"messages": [{"role": "system", "content": "You answer questions about Python briefly."}, {"role": "user", "content": q}, {"role": "assistant", "content": a}]} for q, a in QUESTIONS]
    rows.insert(2, {"Messages": [{"role": "user", "content": "What is a tuple?"}, {"role": "assistant", "content": "An immutable sequence."}]})
    rows.insert(4, {"messages": [{"role": "user", "content": "What is pickle?"}, {"role": "user", "content": "And is it safe?"}, {"role": "assistant", "content": "It serialises objects; never unpickle data you do not trust."}]})
    rows.append(rows[1])
    long_answer = " ".join(build.english_lines()[200:206])
    rows.append({"messages": [{"role": "user", "content": "Explain the string module in detail. " + " ".join(build.english_lines()[300:305])}, {"role": "assistant", "content": long_answer}]})
    return [json.dumps(row, ensure_ascii=False) for row in rows]


def make(root: Path) -> None:
    tokenizer = root / "tokenizer"
    text = root / "text"
    tokenizer.mkdir(parents=True, exist_ok=True)
    text.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        model = build.sentencepiece_model(Path(tmp), vocab_size=1000)
        shutil.copyfile(model, tokenizer / "tts_unigram.model")
    (tokenizer / "transcripts.txt").write_text("\n".join(transcripts()) + "\n", encoding="utf-8")
    folder = text / "tokenizer"
    if folder.exists():
        shutil.rmtree(folder)
    build.hf_folder(folder)
    (text / "chat.jsonl").write_text("\n".join(chat_rows()) + "\n", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="regenerate in a temporary folder and compare with the committed files")
    args = parser.parse_args()
    if not args.check:
        make(REPO / "examples")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        make(Path(tmp))
        differ = []
        for name in ("tokenizer/tts_unigram.model", "tokenizer/transcripts.txt", "text/chat.jsonl"):
            if not filecmp.cmp(Path(tmp) / name, REPO / "examples" / name, shallow=False):
                differ.append(name)
        for path in sorted((Path(tmp) / "text" / "tokenizer").iterdir()):
            if not filecmp.cmp(path, REPO / "examples" / "text" / "tokenizer" / path.name, shallow=False):
                differ.append(f"text/tokenizer/{path.name}")
    print("differ: " + ", ".join(differ) if differ else "the same bytes")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
