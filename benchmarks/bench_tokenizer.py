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

(c) the user's view: whole processes on real 32,000-piece vocabularies.
    ``trainproof tokenizer VOCAB TEXT --json`` as a user runs it (a new
    interpreter: imports, loading, --lines (100,000) lines of English,
    every rule, the report), against a new interpreter that loads the same
    vocabulary with its own library and batch-encodes the same lines:
    (c1) Mistral 7B's sentencepiece model (``tokenizer.model.v1``, 32,000
    pieces, shipped in the ``mistral_common`` wheel, which is fetched once
    from the package index into --cache), against
    ``SentencePieceProcessor.encode(lines)``; (c2) the ``tokenizer.json``
    transformers converts that model to (32,000 tokens, byte fallback),
    against ``tokenizers.Tokenizer.encode_batch``; (c3) the folder holding
    it, read through transformers, against ``AutoTokenizer`` called on the
    lines. Target: within 1.5x each. Interleaved, median of --repeat runs.
    Not in the default --parts.

(m) memory: ``trainproof text FILE --json`` on --memory-rows (1,000,000)
    chat rows (part (b)'s rows: system, user and assistant turns), as whole
    processes, without a tokenizer and with part (b)'s tokenizer folder
    (``--tokenizer FOLDER --max-len 512``). Each process's own peak RSS is
    sampled every 50 ms. Target: at most 1 GiB each. For scale, the line
    also gives a new interpreter that only holds the file's rows as parsed
    JSON (``json.loads`` of each line, kept in a list). Not in the default
    --parts (it writes 500 MB of rows).

    python benchmarks/bench_tokenizer.py [--lines 100000] [--rows 100000] [--repeat 3] [--parts ab] [--parts c]
    python benchmarks/bench_tokenizer.py --parts m [--memory-rows 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
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


def chat_rows(count: int, start: int = 0) -> list[dict]:
    from tests.tokenizer import build

    english = build.english_lines()
    n = len(english)
    return [
        {"messages": [
            {"role": "system", "content": "You answer questions about Python's standard library."},
            {"role": "user", "content": f"Explain this: {english[i % n]}"},
            {"role": "assistant", "content": f"{english[(i * 7 + 3) % n]} {english[(i * 11 + 5) % n]}"},
        ]}
        for i in range(start, start + count)
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


MISTRAL_WHEEL = "mistral_common==1.13.1"
MISTRAL_MEMBER = "mistral_common/data/tokenizer.model.v1"
"""Mistral 7B v0.1's sentencepiece model (32,000 pieces), as the mistral_common wheel ships it."""

BASELINES = {
    "sentencepiece": (
        "import sys, sentencepiece\n"
        "processor = sentencepiece.SentencePieceProcessor(model_file=sys.argv[1])\n"
        "lines = open(sys.argv[2], encoding='utf-8').read().splitlines()\n"
        "print(sum(map(len, processor.encode(lines))))\n"
    ),
    "tokenizers": (
        "import sys\nfrom tokenizers import Tokenizer\n"
        "tokenizer = Tokenizer.from_file(sys.argv[1])\n"
        "lines = open(sys.argv[2], encoding='utf-8').read().splitlines()\n"
        "print(sum(len(e.ids) for e in tokenizer.encode_batch(lines, add_special_tokens=False)))\n"
    ),
    "transformers": (
        "import sys\nfrom transformers import AutoTokenizer\n"
        "tokenizer = AutoTokenizer.from_pretrained(sys.argv[1], local_files_only=True)\n"
        "lines = open(sys.argv[2], encoding='utf-8').read().splitlines()\n"
        "print(sum(map(len, tokenizer(lines, add_special_tokens=False)['input_ids'])))\n"
    ),
}
"""Each library alone, in a new interpreter: load the vocabulary, read the lines, batch-encode them."""


def real_vocabularies(cache: Path) -> tuple[Path, Path]:
    """Mistral 7B's sentencepiece model, and the folder of the tokenizer.json (and its config) transformers converts it
    to; made once in ``cache``."""
    model = cache / "mistral-7b-v0.1.model"
    if not model.exists():
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="wheel") as tmp:
            subprocess.run([sys.executable, "-m", "pip", "download", MISTRAL_WHEEL, "--no-deps", "--quiet", "-d", tmp], check=True)
            (wheel,) = Path(tmp).glob("*.whl")
            with zipfile.ZipFile(wheel) as archive:
                model.write_bytes(archive.read(MISTRAL_MEMBER))
    folder = cache / "mistral-7b-v0.1-hf"
    if not (folder / "tokenizer.json").exists():
        from transformers import AutoTokenizer

        with tempfile.TemporaryDirectory(prefix="slow") as tmp:
            shutil.copy(model, Path(tmp) / "tokenizer.model")
            config = {"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "legacy": False}
            (Path(tmp) / "tokenizer_config.json").write_text(json.dumps(config))
            AutoTokenizer.from_pretrained(tmp, local_files_only=True).save_pretrained(str(folder))
    return model, folder


def _process(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{argv[:4]} exited {done.returncode}: {done.stderr.strip()}")
    return elapsed


def part_real(args: argparse.Namespace, work: Path) -> list[str]:
    model, folder = real_vocabularies(Path(args.cache))
    text = work / "english.txt"
    text.write_text("\n".join(transcripts(args.lines)) + "\n", encoding="utf-8")
    cases = (
        ("(c1) sentencepiece, Mistral 7B 32k", "sentencepiece", model),
        ("(c2) tokenizer.json, Mistral 7B 32k", "tokenizers", folder / "tokenizer.json"),
        ("(c3) folder via transformers, 32k", "transformers", folder),
    )
    out = []
    for name, library, vocabulary in cases:
        baseline = [sys.executable, "-c", BASELINES[library], str(vocabulary), str(text)]
        ours = [sys.executable, "-m", "trainproof", "tokenizer", str(vocabulary), str(text), "--json"]
        _process(baseline), _process(ours)  # the page cache warmed on both sides
        base, mine = [], []
        for _ in range(args.repeat):
            base.append(_process(baseline))
            mine.append(_process(ours))
        b, o = statistics.median(base), statistics.median(mine)
        print(f"{name}: {library} alone {b:.2f} s, trainproof tokenizer {o:.2f} s (runs {', '.join(f'{x:.2f}' for x in mine)}; "
              f"baseline {', '.join(f'{x:.2f}' for x in base)})", file=sys.stderr)  # fmt: skip
        out.append(verdict(f"{name}, {args.lines:,} lines", f"{o / b:.2f}x ({o:.2f} s vs {b:.2f} s)", o / b <= TARGET))
    return out


MEMORY_TARGET_MIB = 1024

HOLD_ROWS = "import json, sys\nrows = [json.loads(line) for line in open(sys.argv[1], encoding='utf-8')]\nprint(len(rows))\n"
"""The scale (m) is given against: a new interpreter holding the file's rows as parsed JSON."""


def part_memory(args: argparse.Namespace, work: Path) -> list[str]:
    from processes import peak_run
    from tests.tokenizer import build

    folder = build.hf_folder(work / "hf")
    dataset = work / "chat-memory.jsonl"
    with dataset.open("w", encoding="utf-8") as out:
        for start in range(0, args.memory_rows, 100_000):
            rows = chat_rows(min(100_000, args.memory_rows - start), start)
            out.write("".join(json.dumps(row) + "\n" for row in rows))
    held_seconds, held = peak_run([sys.executable, "-c", HOLD_ROWS, str(dataset)])
    print(f"(m) {args.memory_rows:,} rows ({dataset.stat().st_size / 2**20:,.0f} MiB of JSON Lines) held as parsed JSON: {held:,.0f} MiB, "
          f"{held_seconds:.1f} s", file=sys.stderr)  # fmt: skip
    out = []
    text = [sys.executable, "-m", "trainproof", "text", str(dataset), "--json"]
    for name, argv in (("without a tokenizer", text), ("with --tokenizer", [*text, "--tokenizer", str(folder), "--max-len", "512"])):
        seconds, peak = peak_run(argv)
        measured = f"{peak:,.0f} MiB ({peak / held:.2f}x the rows as JSON), {seconds:.0f} s"
        out.append(f"{f'(m) text, {args.memory_rows:,} rows, {name}':<48} {measured:<34} target <= {MEMORY_TARGET_MIB:,} MiB   "
                   f"{'OK' if peak <= MEMORY_TARGET_MIB else 'MISSED'}")  # fmt: skip
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--memory-rows", type=int, default=1_000_000, help="the rows of (m)")
    parser.add_argument("--parts", default="ab")
    parser.add_argument("--cache", default=os.path.join(os.path.expanduser("~"), ".cache", "trainproof-bench"), help="where (c)'s vocabularies are kept")
    args = parser.parse_args()
    out = []
    with tempfile.TemporaryDirectory(prefix="bench_tokenizer") as tmp:
        work = Path(tmp)
        if "a" in args.parts:
            out.append(part_tokenizer(args, work))
        if "b" in args.parts:
            out.append(part_text(args, work))
        if "c" in args.parts:
            out.extend(part_real(args, work))
        if "m" in args.parts:
            out.extend(part_memory(args, work))
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
