#!/usr/bin/env python
"""Make ``examples/speech/ljspeech_tiny``: a 12-clip LJSpeech-style TTS dataset spoken by espeak-ng, with three faults.

    python examples/speech/make_example.py [--out examples/speech/ljspeech_tiny]
    python examples/speech/make_example.py --check   # regenerate in a temporary folder and compare, byte for byte

One speaker (espeak-ng's ``en-us+f3`` voice at 140 words per minute) reads
twelve Harvard sentences; each clip is cut to its speech with 80 ms of
silence before and 100 ms after, peak-normalised to -3 dBFS, FFT-resampled
from espeak-ng's 22050 Hz to 16 kHz and written as mono 16-bit WAV in
``wavs/``. ``metadata.csv`` is pipe-separated ``id|text|normalized text``
with no header, as in LJSpeech 1.1. Three clips are then broken the way
real recordings break (see README.md): a long trailing silence, a clipped
clip, a transcript whose numbers were never spelled out. The same espeak-ng
version (1.51 on Debian bookworm) gives the same bytes on every run.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from tests.datasets import speech  # noqa: E402  (the test suite's corpus builder)

RATE = 16000
VOICE = "en-us+f3"
# Eleven of the test suite's Harvard sentences, and in ninth place a line with numbers (one of the three faults).
SENTENCES = (*speech.SENTENCES[:8], "Chapter 3, page 42.", *speech.SENTENCES[9:11], speech.SENTENCES[13])
TRAILING_SILENCE = ("tiny-0004", 2.5)
"""The recorder was left running: 2.5 s of room tone (-65 dBFS noise) after the speech."""
CLIPPED = ("tiny-0007", 4.0)
"""Recorded too hot: the clip at 4x gain, clipped at full scale."""
UNNORMALIZED = "tiny-0009"
"""'Chapter 3, page 42.' in both transcript columns: the normaliser never ran on it (espeak-ng still says the numbers)."""


def make(out: Path) -> None:
    if not speech.has_espeak():
        raise SystemExit("espeak-ng is not installed (apt-get install espeak-ng)")
    if out.exists():
        shutil.rmtree(out)
    wavs = out / "wavs"
    rows = []
    for i, text in enumerate(SENTENCES, start=1):
        id = f"tiny-{i:04d}"
        x = speech.resample(speech.espeak_samples(text, VOICE, speech.ESPEAK_WPM), speech.ESPEAK_RATE, RATE)
        if id == TRAILING_SILENCE[0]:
            room = np.random.default_rng(4).normal(0, 10 ** (-65 / 20), int(TRAILING_SILENCE[1] * RATE))
            x = np.concatenate([x, room])
        if id == CLIPPED[0]:
            x = np.clip(x * CLIPPED[1], -1.0, 1.0)
        speech.write_audio(wavs / f"{id}.wav", x, RATE)
        rows.append(f"{id}|{text}|{text}")
    (out / "metadata.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")


def same_tree(a: Path, b: Path) -> list[str]:
    left = sorted(p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file())
    right = sorted(p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file())
    if left != right:
        return sorted(set(left) ^ set(right))
    return [name for name in left if not filecmp.cmp(a / name, b / name, shallow=False)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=HERE / "ljspeech_tiny")
    parser.add_argument("--check", action="store_true", help="regenerate in a temporary folder and compare with --out")
    args = parser.parse_args(argv)
    if not args.check:
        make(args.out)
        size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
        print(f"wrote {args.out} ({len(SENTENCES)} clips, {size / 1e6:.2f} MB)", file=sys.stderr)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        make(Path(tmp) / "ljspeech_tiny")
        differ = same_tree(args.out, Path(tmp) / "ljspeech_tiny")
    for name in differ:
        print(f"differs: {name}", file=sys.stderr)
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
