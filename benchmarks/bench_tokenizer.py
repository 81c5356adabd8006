"""How fast `trainproof tokenizer` and `trainproof text` judge, against the tokenizer library alone, in one run.

Two targets, each printed as one line (measured, target, OK/MISSED):

(a) ``trainproof tokenizer`` on --lines (100,000) transcripts with a
    sentencepiece model, against sentencepiece alone batch-encoding the same
    lines (``SentencePieceProcessor.encode(list)``). Target: within 1.5x.
(b) ``trainproof text --tokenizer FOLDER --max-len 512`` on --rows (100,000)
    chat rows (system, user, assistant) with a HuggingFace tokenizer folder
    that has a chat template, against transformers alone encoding the same
    conversations the way a trainer does (``apply_chat_template`` on the
    list of conversations, ``tokenize=True``). Target: within 1.5x.

Both sides run in this process, interleaved, --repeat times (median). What
is measured for trainproof is the whole command through the library
(``judge``): the file read, the encoding, every rule, the report. The
tokenizers are trained here by the test suite's builders
(tests/tokenizer/build.py); the text is their English, made into lines and
rows that differ from each other. Inputs are written before the clock starts.

    python benchmarks/bench_tokenizer.py [--lines 100000] [--rows 100000] [--repeat 3] [--parts ab]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

TARGET = 1.5


def transcripts(count: int) -> list[str]:
    """``count`` English lines, each made of two of the builders' sentences, so that no two are alike."""
    from tests.tokenizer import build

    english = build.english_lines()
    n = len(english)
    return [f"{english[i % n]} {english[(i * 7 + 3) % n]}" for i in range(count)]


def chat_rows(count: int) -> list[dict]:
    from tests.tokenizer import build

    english = build.english_lines()
    n = len(english)
    return [
        {"messages": [
            {"role": "system", "content": "You answer questions about Python's standard library."},
            {"role": "user", "content": f"Explain this: {english[i % n]}"},
            {"role": "assistant", "content": f"{english[(i * 7 + 3) % n]} {english[(i * 11 + 5) % n]}"},
        ]}
        for i in range(count)
    ]  # fmt: skip


def timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def median_pair(repeat: int, baseline, ours) -> tuple[float, float, list[float], list[float]]:
    base, mine = [], []
    for _ in range(repeat):
        base.append(timed(baseline))
        mine.append(timed(ours))
    return statistics.median(base), statistics.median(mine), base, mine


def verdict(name: str, measured: str, ok: bool) -> str:
    return f"{name:<48} {measured:<34} target <= {TARGET}x   {'OK' if ok else 'MISSED'}"


def part_tokenizer(args: argparse.Namespace, work: Path) -> str:
    import sentencepiece

    from tests.tokenizer import build
    from trainproof.commands import judge

    model = build.sentencepiece_model(work / "sp", vocab_size=4000)
    lines = transcripts(args.lines)
    text = work / "transcripts.txt"
    text.write_text("\n".join(lines) + "\n", encoding="utf-8")
    processor = sentencepiece.SentencePieceProcessor(model_file=str(model))

    def baseline() -> None:
        processor.encode(lines)

    def ours() -> None:
        judge("tokenizer", [str(text)], tokenizer=str(model), progress=False)

    ours()  # imports and caches warmed on both sides
    baseline()
    b, o, base, mine = median_pair(args.repeat, baseline, ours)
    print(f"(a) sentencepiece alone {b:.2f} s, trainproof tokenizer {o:.2f} s (runs {', '.join(f'{x:.2f}' for x in mine)}; "
          f"baseline {', '.join(f'{x:.2f}' for x in base)})", file=sys.stderr)  # fmt: skip
    return verdict(f"(a) tokenizer, {args.lines:,} transcripts", f"{o / b:.2f}x ({o:.2f} s vs {b:.2f} s)", o / b <= TARGET)


def part_text(args: argparse.Namespace, work: Path) -> str:
    from transformers import AutoTokenizer

    from tests.tokenizer import build
    from trainproof.commands import judge

    folder = build.hf_folder(work / "hf")
    rows = chat_rows(args.rows)
    dataset = work / "chat.jsonl"
    dataset.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    conversations = [row["messages"] for row in rows]

    def baseline() -> None:
        tokenizer.apply_chat_template(conversations, tokenize=True)

    def ours() -> None:
        judge("text", [str(dataset)], tokenizer=str(folder), max_len=512, progress=False)

    ours()
    baseline()
    b, o, base, mine = median_pair(args.repeat, baseline, ours)
    print(f"(b) transformers alone {b:.2f} s, trainproof text {o:.2f} s (runs {', '.join(f'{x:.2f}' for x in mine)}; "
          f"baseline {', '.join(f'{x:.2f}' for x in base)})", file=sys.stderr)  # fmt: skip
    return verdict(f"(b) text, {args.rows:,} chat rows", f"{o / b:.2f}x ({o:.2f} s vs {b:.2f} s)", o / b <= TARGET)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--parts", default="ab")
    args = parser.parse_args()
    out = []
    with tempfile.TemporaryDirectory(prefix="bench_tokenizer") as tmp:
        work = Path(tmp)
        if "a" in args.parts:
            out.append(part_tokenizer(args, work))
        if "b" in args.parts:
            out.append(part_text(args, work))
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
