"""Real tokenizers for tests, trained here on real English: sentencepiece models, tokenizer.json files, HuggingFace folders.

Nothing is downloaded. The text is the docstrings of a fixed list of
standard-library modules (:func:`english_lines`): real English prose,
kept in ``english.txt`` as Python 3.11.7 wrote it, since another Python's
docstrings differ and so would every tokenizer trained on them (Debian's
3.11.2 gave other models and failed two tests). Every builder is
deterministic (one training thread, no sampling) and takes well under 3 s.
The libraries are imported inside the builders, so a test that needs only
one of them runs without the others.

Every tokenizer has the same four special tokens, "<unk>", "<s>", "</s>",
"<pad>" at ids 0, 1, 2, 3 (except where pad is eos: then there is no
"<pad>"), and is trained on :func:`training_lines`: the English lines plus
a few lines with numbers, so that digits are in the vocabulary and
``split_digits`` changes something. A BPE can be trained on Chinese
instead (``text="chinese"``: :func:`chinese_lines`), a text written
without spaces between words.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import re
import string
from pathlib import Path

MODULES = (
    "textwrap", "json", "csv", "argparse", "collections", "difflib", "functools", "itertools", "logging", "pathlib",
    "shutil", "subprocess", "threading", "unittest", "email", "http.client", "urllib.parse", "zipfile", "tarfile",
    "calendar", "datetime", "decimal", "fractions", "statistics", "random", "heapq", "bisect", "configparser", "pprint",
    "string", "inspect", "ast", "dataclasses", "enum", "contextlib", "abc", "io", "os", "tempfile", "pickle", "sqlite3",
    "xml.dom.minidom", "html.parser", "socket", "selectors", "queue", "sched", "weakref", "copy", "gettext", "locale",
    "codecs", "base64", "hashlib", "hmac", "secrets", "glob", "fnmatch", "filecmp", "tokenize", "doctest", "pdb",
    "timeit", "trace", "optparse", "getopt", "mailbox", "smtplib", "ftplib", "imaplib", "poplib", "wave", "colorsys",
    "shlex", "cmd", "netrc", "plistlib", "traceback", "warnings",
)  # fmt: skip
"""The standard-library modules whose docstrings are the English text."""

SPECIAL_TOKENS = ("<unk>", "<s>", "</s>", "<pad>")
UNK, BOS, EOS, PAD = range(4)

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>\\n' + message['content'] + eos_token + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"
)
"""A chat template in the Zephyr style: a role header line, the content, the eos token closing every turn."""

_ALLOWED = frozenset(string.printable) - frozenset(string.digits) - frozenset("\t\n\r\x0b\x0c")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


ENGLISH = Path(__file__).with_name("english.txt")
"""The English lines, one a line: what :func:`docstring_lines` gave on Python 3.11.7 (Python's docstrings, PSF License)."""


@functools.lru_cache(maxsize=1)
def english_lines() -> tuple[str, ...]:
    """A few thousand sentence-like lines of English: printable ASCII, no digits, single spaces, unique, in a fixed
    order, the same on every Python (read from ENGLISH)."""
    return tuple(ENGLISH.read_text(encoding="ascii").splitlines())


def docstring_lines() -> tuple[str, ...]:
    """The English lines as this Python's docstrings give them (``python -m tests.tokenizer.build`` rewrites ENGLISH).

    From each module of MODULES, in order: its docstring, then those of its
    own classes and functions by name, and the methods of those classes by
    name. A docstring's whitespace is collapsed and it is cut after ".", "!"
    or "?"; a piece of 20 to 200 characters is kept if it is new.
    """
    seen: set[str] = set()
    lines: list[str] = []
    for name in MODULES:
        for doc in _docstrings(importlib.import_module(name)):
            for sentence in _SENTENCE_END.split(" ".join(doc.split())):
                if 20 <= len(sentence) <= 200 and _ALLOWED.issuperset(sentence) and sentence not in seen:
                    seen.add(sentence)
                    lines.append(sentence)
    return tuple(lines)


def _docstrings(module) -> list[str]:
    docs = [module.__doc__]
    for _, obj in sorted(vars(module).items()):
        if not (inspect.isclass(obj) or inspect.isfunction(obj)) or obj.__module__ != module.__name__:
            continue
        docs.append(obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__)
        if inspect.isclass(obj):
            docs.extend(method.__doc__ for _, method in sorted(vars(obj).items()) if inspect.isfunction(method))
    return [doc for doc in docs if isinstance(doc, str)]


@functools.lru_cache(maxsize=1)
def number_lines() -> tuple[str, ...]:
    """Lines with numbers, so digits and frequent digit groups (years, page numbers) are in every vocabulary."""
    lines = []
    for year in range(1950, 2030):
        page = (year * 37) % 400 + 1
        lines.append(f"The edition of {year} has {page} pages and {year % 12 + 1} chapters.")
        lines.append(f"In {year} the library listed {page * 10} books.")
    return tuple(lines)


def training_lines() -> tuple[str, ...]:
    return english_lines() + number_lines()


CHINESE = Path(__file__).with_name("chinese.txt")
"""Forty lines of everyday Chinese written for these tests (see README.md beside it)."""


@functools.lru_cache(maxsize=1)
def chinese_lines() -> tuple[str, ...]:
    return tuple(CHINESE.read_text(encoding="utf-8").splitlines())


TEXTS = {"english": training_lines, "chinese": chinese_lines}
"""What a builder's ``text`` names: the lines it trains on."""


def sentencepiece_model(
    folder: str | Path,
    *,
    byte_fallback: bool = False,
    split_digits: bool = False,
    vocab_size: int = 1000,
    model_type: str = "unigram",
    pad_is_eos: bool = False,
    user_defined: tuple[str, ...] = (),
) -> Path:
    """A sentencepiece model trained on :func:`training_lines`, written to ``folder/tokenizer.model``.

    unk, bos, eos are ids 0, 1, 2 and pad is id 3, so that pad differs from
    eos. ``pad_is_eos=True`` makes the model's pad id its eos id: the trainer
    refuses to give two pieces one id (``pad_id=2, eos_id=2`` fails in
    ``insert_id``), but ``pad_id=-1`` with ``pad_piece="</s>"`` leaves pad
    without a piece of its own, and ``pad_id()`` looks its piece up: eos. The
    model then has no "<pad>" piece. ``character_coverage=1.0`` keeps every
    character of the training text, so every English line is covered.
    ``user_defined`` are pieces the model matches whole in any text.
    """
    import sentencepiece

    path = Path(folder) / "tokenizer.model"
    path.parent.mkdir(parents=True, exist_ok=True)
    pad = {"pad_id": -1, "pad_piece": "</s>"} if pad_is_eos else {"pad_id": PAD}
    with path.open("wb") as handle:
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(training_lines()),
            model_writer=handle,
            model_type=model_type,
            vocab_size=vocab_size,
            byte_fallback=byte_fallback,
            split_digits=split_digits,
            character_coverage=1.0,
            unk_id=UNK,
            bos_id=BOS,
            eos_id=EOS,
            num_threads=1,
            minloglevel=2,
            user_defined_symbols=list(user_defined),
            **pad,
        )
    return path


def bpe_tokenizer_json(folder: str | Path, *, byte_fallback: bool = False, byte_level: bool = False, vocab_size: int = 1000, text: str = "english") -> Path:
    """A BPE tokenizer.json trained with the ``tokenizers`` library on :func:`training_lines` (or the lines ``text``
    names in TEXTS), written to ``folder/tokenizer.json``.

    The default is a sentencepiece-like pipeline (NFKC, Metaspace "▁" with a
    prefix space on the first piece only, a Metaspace decoder), whose unknown
    characters become "<unk>". ``byte_fallback=True`` adds the 256 byte
    pieces "<0x00>".."<0xFF>" to the model's vocabulary and turns byte
    fallback on, as a Llama tokenizer converted from sentencepiece has them:
    an unknown character becomes its UTF-8 bytes. ``byte_level=True`` is a
    GPT-2-style pipeline instead (NFC, ByteLevel pre-tokenizer and decoder,
    the 256 byte characters in the initial alphabet): nothing is unknown and
    every text round-trips exactly. ``vocab_size`` counts every id, the
    special and byte pieces included.
    """
    path = Path(folder) / "tokenizer.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_bpe(byte_fallback=byte_fallback, byte_level=byte_level, vocab_size=vocab_size, text=text).to_str(pretty=True), encoding="utf-8")
    return path


def _bpe(*, byte_fallback: bool, byte_level: bool, vocab_size: int, text: str = "english"):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    if byte_level and byte_fallback:
        raise ValueError("a byte-level BPE has no unknown characters to fall back from")
    if byte_level:
        tokenizer = Tokenizer(models.BPE())
        tokenizer.normalizer = normalizers.NFC()
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = decoders.ByteLevel()
        alphabet = pre_tokenizers.ByteLevel.alphabet()
    else:
        tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
        tokenizer.normalizer = normalizers.NFKC()
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="first")
        tokenizer.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Metaspace(prepend_scheme="first")])
        alphabet = []
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - (256 if byte_fallback else 0),
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=alphabet,
        show_progress=False,
    )
    tokenizer.train_from_iterator(TEXTS[text](), trainer)
    if not byte_fallback:
        return tokenizer
    spec = json.loads(tokenizer.to_str())
    vocab = spec["model"]["vocab"]
    for byte in range(256):
        vocab[f"<0x{byte:02X}>"] = len(vocab)
    spec["model"]["byte_fallback"] = True
    return Tokenizer.from_str(json.dumps(spec))


def hf_folder(folder: str | Path, *, chat_template: bool = True, pad_is_eos: bool = False) -> Path:
    """A HuggingFace tokenizer folder, as ``save_pretrained`` writes it, of a Llama-2-like tokenizer.

    The tokenizer is :func:`bpe_tokenizer_json`'s byte-fallback BPE with a
    post-processor that puts "<s>" before every text (as Llama's does),
    wrapped in ``PreTrainedTokenizerFast`` with bos "<s>", eos "</s>", unk
    "<unk>", pad "<pad>" (or "</s>" with ``pad_is_eos``, as many fine-tunes
    set it) and, with ``chat_template``, CHAT_TEMPLATE.
    """
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    tokenizer = _bpe(byte_fallback=True, byte_level=False, vocab_size=1000)
    tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", BOS)])
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="</s>" if pad_is_eos else "<pad>",
        chat_template=CHAT_TEMPLATE if chat_template else None,
    )
    path = Path(folder)
    wrapped.save_pretrained(str(path))
    return path


if __name__ == "__main__":
    ENGLISH.write_text("\n".join(docstring_lines()) + "\n", encoding="ascii")


CLEAN = english_lines()[::80][:40]
"""Forty English lines: what every clean pairing is judged on (tests/tokenizer/test_rules.py, tests/checks)."""

CYRILLIC = "Съешь же ещё этих мягких французских булок да выпей чаю"
BASE64 = "aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQgdGV4dCB0aGF0IG5vYm9keSByZWFkcw=="
NUMBERS = ("In 1984 the list had 1066 entries and 2024 names.", "Pay 4567 or 8812 now, 31 or 77 later.", "The 1950 edition sold 3910 copies.")


def model_without_eos(folder: Path) -> Path:
    """A sentencepiece model trained with no eos, bos or pad piece."""
    import sentencepiece

    model = folder / "noeos.model"
    with model.open("wb") as handle:
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(training_lines()), model_writer=handle, vocab_size=600, eos_id=-1, bos_id=-1,
            pad_id=-1, unk_id=0, character_coverage=1.0, num_threads=1, minloglevel=2,
        )  # fmt: skip
    return model
