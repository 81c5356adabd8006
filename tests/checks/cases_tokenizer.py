"""Rule cases as data for ``trainproof tokenizer``: for every TP-TOK rule, a tokenizer and a text where it fires and
a pairing where it must not.

Tokenizers are real ones trained in the test session (tests/tokenizer/build.py); a case names one by builder and
options, or breaks a copy of one. The text is held-out English (``CLEAN``) with a fault added at a known line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.tokenizer import build
from tests.tokenizer.build import BASE64, CLEAN, CYRILLIC, NUMBERS

Built = Callable[..., Path]
"""``built(name, **options)``: a session-trained tokenizer (tests/tokenizer/conftest.py)."""


def trained(name: str, **options: object) -> Callable[[Built, Path], Path]:
    return lambda built, folder: built(name, **options)


def without_decoder(built: Built, folder: Path) -> Path:
    """A tokenizer.json whose decoder was lost: the library joins tokens with spaces, so lines do not come back."""
    document = json.loads(built("bpe").read_text(encoding="utf-8"))
    document["decoder"] = None
    broken = folder / "tokenizer.json"
    broken.write_text(json.dumps(document), encoding="utf-8")
    return broken


def without_eos(built: Built, folder: Path) -> Path:
    return build.model_without_eos(folder)


def lines(*text: str) -> Callable[[Built, Path, Path], Path]:
    def write(built: Built, tokenizer: Path, folder: Path) -> Path:
        path = folder / "text.txt"
        path.write_text("\n".join(text) + "\n", encoding="utf-8")
        return path

    return write


def manifest(outlier: bool) -> Callable[[Built, Path, Path], Path]:
    """A JSONL manifest of 30 clips at about ten tokens a second; with ``outlier``, line 18 has far too little audio."""

    def write(built: Built, tokenizer: Path, folder: Path) -> Path:
        from trainproof.tokenizer.load import load_tokenizer

        counts = [len(ids) for ids in load_tokenizer(tokenizer).encode_batch(list(CLEAN[:30]))]
        path = folder / "m.jsonl"
        with path.open("w", encoding="utf-8") as out:
            for i, (text, n) in enumerate(zip(CLEAN[:30], counts)):
                seconds = 0.2 if outlier and i == 17 else n / 10 * (1 + 0.03 * (i % 5))
                out.write(json.dumps({"audio_filepath": f"clip{i}.wav", "text": text, "duration": seconds}) + "\n")
        return path

    return write


@dataclass(frozen=True)
class TokenizerCase:
    name: str
    tokenizer: Callable[[Built, Path], Path]
    text: Callable[[Built, Path, Path], Path]
    fires: bool
    level: str | None = None
    options: dict = field(default_factory=dict)


SP = trained("sentencepiece", split_digits=True)
BYTE_FALLBACK = trained("sentencepiece", byte_fallback=True)
ROTATED = [" ".join(CYRILLIC.split()[i:] + CYRILLIC.split()[:i]) for i in range(len(CYRILLIC.split()))]
LONG_LINE = " ".join(CLEAN[:6])

CASES: dict[str, list[TokenizerCase]] = {
    "TP-TOK-UNKNOWN": [
        TokenizerCase("another script", SP, lines(*CLEAN[:10], CYRILLIC, CYRILLIC), True, "FAIL"),
        TokenizerCase("a few rare letters", SP, lines(*CLEAN[:20], "Die Straße führt über den Fluß.", *CLEAN[20:], "Größere Häuser stehen drüben."), True, "WARN"),
        TokenizerCase("english", SP, lines(*CLEAN), False),
        TokenizerCase("byte fallback", BYTE_FALLBACK, lines(*CLEAN[:10], CYRILLIC, CYRILLIC), False),
    ],
    "TP-TOK-BYTES": [
        TokenizerCase("another script in bytes", BYTE_FALLBACK, lines(*CLEAN[:10], CYRILLIC, CYRILLIC), True, "WARN"),
        TokenizerCase("one rare character", BYTE_FALLBACK, lines(*CLEAN, "Coffee \u2615 please."), False),
    ],
    "TP-TOK-ROUND-TRIP": [
        TokenizerCase("decoder lost", without_decoder, lines(*CLEAN), True),
        TokenizerCase("bpe with its decoder", trained("bpe"), lines(*CLEAN), False),
    ],
    "TP-TOK-FERTILITY": [
        TokenizerCase("cyrillic through english", BYTE_FALLBACK, lines(*ROTATED, *(" ".join(reversed(r.split())) for r in ROTATED)), True),
        TokenizerCase("english through english", SP, lines(*CLEAN), False),
    ],
    "TP-TOK-DENSE-LINE": [
        TokenizerCase("a line of base64", SP, lines(*CLEAN[:25], BASE64, *CLEAN[25:]), True),
        TokenizerCase("english", SP, lines(*CLEAN), False),
    ],
    "TP-TOK-TOO-LONG": [
        TokenizerCase("six lines run together", SP, lines(*CLEAN[:10], LONG_LINE, *CLEAN[10:20]), True, options={"max_tokens": 60}),
        TokenizerCase("within the limit", SP, lines(*CLEAN[:20]), False, options={"max_tokens": 60}),
    ],
    "TP-TOK-RATE": [
        TokenizerCase("a clip with too little audio", SP, manifest(outlier=True), True),
        TokenizerCase("rates within their spread", SP, manifest(outlier=False), False),
    ],
    "TP-TOK-NUMBERS": [
        TokenizerCase("bpe splits numbers two ways", trained("bpe"), lines(*CLEAN[:10], *NUMBERS), True, "INFO"),
        TokenizerCase("split digits", SP, lines(*CLEAN[:10], *NUMBERS), False),
    ],
    "TP-TOK-NO-EOS": [
        TokenizerCase("no eos piece", without_eos, lines(*CLEAN), True),
        TokenizerCase("hf folder with eos", trained("hf"), lines(*CLEAN), False),
    ],
    "TP-TOK-PAD-IS-EOS": [
        TokenizerCase("pad is eos", trained("hf", pad_is_eos=True), lines(*CLEAN), True),
        TokenizerCase("distinct pad and eos", trained("hf"), lines(*CLEAN), False),
    ],
}
