"""Rules that judge a tokenizer against the text it will be trained on: coverage, fidelity, fertility, numbers, specials.

Every rule reads the text's encoding (one list of ids per transcript, made
once by the tokenizer's own batch encoder) and the tokenizer's vocabulary,
never a model. A rule that finds many lines names the first TOK_EXAMPLES in
file order, each at its line, and counts the rest.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from functools import cached_property
from itertools import chain, repeat
from typing import TYPE_CHECKING

import numpy as np

from trainproof.checks.base import Hit, NotApplicable, first_named, rules_of
from trainproof.checks.findings import Finding, Level
from trainproof.checks.stats import MAD_TO_SIGMA
from trainproof.checks.thresholds import Thresholds
from trainproof.io import figures
from trainproof.io.bounded import lines_flagged
from trainproof.io.safe import quoted
from trainproof.tokenizer import scripts

if TYPE_CHECKING:
    from trainproof.tokenizer.load import Tokenizer
    from trainproof.tokenizer.transcripts import Transcripts

_DIGITS = re.compile(r"[0-9]+")
_DIGIT_FLAGS = bytes(1 if byte in b"0123456789" else 0 for byte in range(256))
"""A translation table flagging each digit byte (see _NOT_PRINTABLE_FLAGS)."""
_NOT_DIGITS = bytes(byte for byte in range(256) if byte not in b"0123456789")
WORD_MARKS = ("\u2581", "\u0120")
"""The marks a vocabulary's pieces carry at the start of a word: sentencepiece's and Metaspace's "▁", byte-level BPE's "Ġ"."""
SPLIT_SHARE_LINES = 20_000
"""Transcripts the share of split words is measured on: a description, not a verdict, and a pass over every token."""
WORD_MARK_SHARE = 0.2
"""A vocabulary marks word starts when at least this share of its pieces carry one of WORD_MARKS."""
SNIPPET_CHARS = 60
"""Characters of a transcript a finding quotes (then its length): enough to find the line, and all a text that is
not what it claims (a credentials file under a transcript's name) can put into a report."""
WORD_CHARS = 40
"""Characters of one word, or one special token's text, a finding quotes."""
NUMBER_CHARS = 24
"""Digits of one number a finding shows as they are; a longer one is quoted, cut, with its length."""


@dataclass(frozen=True)
class TokenizerContext:
    """A tokenizer, the transcripts it is judged against, and their encoding (``ids[i]`` is transcript i's)."""

    tokenizer: Tokenizer
    text: Transcripts
    ids: tuple[Sequence[int], ...]
    t: Thresholds
    max_tokens: int | None = None
    topic = "this text"

    def locate(self, finding: Finding) -> Finding:
        return finding if finding.file is not None else replace(finding, file=self.text.path)

    @cached_property
    def lengths(self) -> np.ndarray:
        return np.fromiter(map(len, self.ids), dtype=np.int64, count=len(self.ids))

    @cached_property
    def total(self) -> int:
        return int(self.lengths.sum())

    @cached_property
    def chars(self) -> np.ndarray:
        """Characters per transcript."""
        return np.fromiter(map(len, self.text.texts), dtype=np.int64, count=len(self.text.texts))

    @cached_property
    def seconds(self) -> np.ndarray:
        """Per transcript, the seconds of its audio; NaN where not known."""
        durations = self.text.durations
        if durations.count(None) == len(durations):  # text without audio, told by one C call
            return np.full(len(durations), np.nan)
        return np.array([d if d is not None else np.nan for d in durations], dtype=float)

    @cached_property
    def irregular(self) -> set[int]:
        """The transcripts that are not printable ASCII with single spaces (see :func:`_irregular_lines`)."""
        return _irregular_lines(self.text.texts, self.joined)

    @cached_property
    def unusual(self) -> set[int]:
        """The transcripts a sample of the others does not speak for: the irregular ones, and those holding a string
        the tokenizer matches whole (``Tokenizer.matched``: an added token such as "<s>"), in any letter case."""
        return self.irregular | _lines_holding(self.text.texts, self.joined, self.tokenizer.matched, skip=self.irregular)

    @cached_property
    def joined(self) -> _Joined | None:
        """The bytes of all the transcripts, for searches over the whole text (None when a transcript holds a newline)."""
        return _Joined.of(self.text.texts)

    @cached_property
    def units(self) -> tuple[np.ndarray, np.ndarray]:
        """Per transcript, its whitespace-separated words and its characters of scripts written without spaces (Han,
        Kana, Thai, ...: see :func:`trainproof.tokenizer.scripts.units`): a plain line's spaces counted, the others
        split (only a line outside printable ASCII can hold such a character)."""
        texts, joined = self.text.texts, self.joined
        if joined is None:
            words = np.fromiter(map(str.count, texts, repeat(" ")), dtype=np.int64, count=len(texts)) + 1
        else:
            words = joined.count_per_line(joined.spaces) + 1
        unsegmented = np.zeros(len(texts), dtype=np.int64)
        for i in self.irregular:
            words[i], unsegmented[i] = scripts.units(texts[i])
        return words, unsegmented

    @property
    def words(self) -> np.ndarray:
        """Per transcript, its whitespace-separated words outside scripts written without spaces."""
        return self.units[0]

    @property
    def unsegmented(self) -> np.ndarray:
        """Per transcript, its characters of scripts written without spaces."""
        return self.units[1]

    @cached_property
    def unsegmented_scripts(self) -> list[str]:
        """The scripts written without spaces that the text holds (their names, in the order of scripts.UNSEGMENTED)."""
        lines = np.flatnonzero(self.unsegmented).tolist()
        return scripts.names_in([self.text.texts[i] for i in lines]) if lines else []

    @cached_property
    def word_starts(self) -> np.ndarray | None:
        """The ids whose piece begins a word ("▁" of sentencepiece and Metaspace, "Ġ" of byte-level BPE), sorted; None
        for a vocabulary that marks words otherwise (WordPiece's "##" marks the rest of a word instead). Only the ids
        the vocabulary has are looked at, not every id up to the largest (a tokenizer.json may have a piece at id
        4,294,967,295)."""
        pieces = self.tokenizer.pieces()
        for mark in WORD_MARKS:
            starts = np.fromiter(sorted(i for i, piece in pieces.items() if piece.startswith(mark)), dtype=np.int64)
            if pieces and starts.size / len(pieces) >= WORD_MARK_SHARE:
                return starts
        return None

    @cached_property
    def split_share(self) -> float | None:
        """The share of words encoded as more than one token, over the first SPLIT_SHARE_LINES transcripts (a figure of
        the summary and of TP-TOK-FERTILITY's evidence, which no verdict depends on); None for a text of no words.

        With a vocabulary that marks word starts, read off the encoding itself:
        a word is a start token and the tokens up to the next start. Otherwise
        each distinct word is encoded on its own.
        """
        if self.word_starts is not None:
            head = self.ids[:SPLIT_SHARE_LINES]
            ids = np.fromiter(chain.from_iterable(head), dtype=np.int64, count=int(self.lengths[:SPLIT_SHARE_LINES].sum()))
            owner = np.repeat(np.arange(len(head)), self.lengths[:SPLIT_SHARE_LINES])
            if ids.size == 0:
                return None
            start = _among(ids, self.word_starts)
            words = int(start.sum())
            continued = start[:-1] & ~start[1:] & (owner[:-1] == owner[1:])
            return int(continued.sum()) / words if words else None
        counts = Counter(chain.from_iterable(text.split() for text in self.text.texts[:SPLIT_SHARE_LINES]))
        if not counts:
            return None
        distinct = sorted(counts)
        split = sum(counts[w] for w, ids in zip(distinct, self.tokenizer.encode_batch(distinct)) if len(ids) > 1)
        return split / sum(counts.values())

    @cached_property
    def flat(self) -> tuple[np.ndarray, np.ndarray]:
        """Every token id of the text in one array, and the transcript each belongs to."""
        ids = np.fromiter(chain.from_iterable(self.ids), dtype=np.int64, count=self.total)
        return ids, np.repeat(np.arange(len(self.ids)), self.lengths)

    def count_of(self, wanted: frozenset[int]) -> np.ndarray:
        """Per transcript, how many of its tokens are in ``wanted``."""
        if not wanted:
            return np.zeros(len(self.ids), dtype=np.int64)
        ids, owner = self.flat
        hit = _among(ids, np.fromiter(sorted(wanted), dtype=np.int64, count=len(wanted)))
        return np.bincount(owner[hit], minlength=len(self.ids)).astype(np.int64)

    @cached_property
    def unk_literal(self) -> str | None:
        """The unknown token's own text when the tokenizer matches it whole in a text (:attr:`Tokenizer.matched`), so
        that a transcript writing it encodes to the unknown id with nothing unknown: GPT-2's "<|endoftext|>", its unk
        and its eos, written between documents."""
        text = self.tokenizer.specials.unk_text
        return text if text and text in self.tokenizer.matched else None

    @cached_property
    def unknown(self) -> np.ndarray:
        """Per transcript, its unknown tokens: the unknown id's, but for those that are :attr:`unk_literal` as written."""
        unk = self.tokenizer.specials.unk
        if unk is None:
            return np.zeros(len(self.ids), dtype=np.int64)
        counts = np.fromiter((ids.count(unk) for ids in self.ids), dtype=np.int64, count=len(self.ids))
        if self.unk_literal is not None:
            for i in np.flatnonzero(counts).tolist():
                counts[i] = max(0, counts[i] - self.text.texts[i].count(self.unk_literal))
        return counts

    @cached_property
    def byte_pieces(self) -> np.ndarray:
        return self.count_of(self.tokenizer.byte_ids)

    @cached_property
    def unknown_culprits(self) -> tuple[Counter, Counter]:
        """The characters and words that become unknown tokens, with their counts (TP-TOK-UNKNOWN's, and the report's
        chart of them); empty for a tokenizer with no unknown token."""
        unk = self.tokenizer.specials.unk
        if unk is None:
            return Counter(), Counter()
        return _culprits(self, np.flatnonzero(self.unknown).tolist(), frozenset({unk}), self.unk_literal)

    @cached_property
    def byte_culprits(self) -> tuple[Counter, Counter]:
        """The characters and words spelled in byte-fallback pieces, with their counts (TP-TOK-BYTES's, and its chart)."""
        if not self.tokenizer.byte_ids:
            return Counter(), Counter()
        return _culprits(self, np.flatnonzero(self.byte_pieces).tolist(), self.tokenizer.byte_ids)


LOOKUP_MAX_ID = 1 << 24
"""The largest id a table of flags is made for (16 MB); past it (a tokenizer.json may have a piece at id 4,294,967,295),
:func:`_among` sorts instead."""


def _among(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Per token id, whether it is one of ``wanted`` (sorted, none negative): looked up in a table of flags up to the
    largest wanted, which takes a fifth of the time np.isin takes to sort them."""
    if wanted.size == 0:
        return np.zeros(ids.size, dtype=bool)
    top = int(wanted[-1])
    if top > LOOKUP_MAX_ID:
        return np.isin(ids, wanted)
    table = np.zeros(top + 2, dtype=bool)  # the last flag, False, stands for every id past the largest wanted (and -1)
    table[wanted] = True
    return table[np.clip(ids, -1, top + 1)]


def _examples(ctx: TokenizerContext, where: Sequence[int], what: str, say: Callable[[int], tuple[str, str]], values: dict | None = None) -> Iterator[Hit]:
    """One hit for each of the first TOK_EXAMPLES transcripts (indices ``where``), the first counting them all."""
    total = len(where)
    shown = list(where[: ctx.t.TOK_EXAMPLES])
    lines = len(ctx.text.texts)
    for n, i in enumerate(shown):
        message, evidence = say(i)
        shared = ""
        if n == 0 and total > 1:
            shared = f"{total:,} of {lines:,} lines {what} ({figures.pct(total / lines)}); {first_named(len(shown), total)}."
            message += f" {shared}"
        yield Hit(message=message, evidence=evidence, values={"count": total, "lines": lines, **(values or {})}, line=ctx.text.lines[i], shared=shared)


def _snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    return quoted(text, limit)


def _first_difference(a: str, b: str) -> int:
    """The index of the first character where ``a`` and ``b`` differ (the shorter one's length when one starts the other)."""
    return next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def _around(a: str, b: str) -> tuple[int, int]:
    """The window of SNIPPET_CHARS characters that shows where ``a`` and ``b`` first differ (the same in both: they
    are alike up to there)."""
    at = _first_difference(a, b)
    start = max(0, at - SNIPPET_CHARS // 3)
    return start, start + SNIPPET_CHARS


def _excerpt(text: str, start: int, end: int) -> str:
    """``text[start:end]`` quoted, with "..." on a side where the text goes on: a part of a line is not quoted as if it
    were the line."""
    return ("..." if start > 0 else "") + _snippet(text[start:end]) + ("..." if end < len(text) else "")


def _digits(text: str) -> str:
    """A number (or its pieces joined by "|") as a finding shows it: as it is, or quoted and cut past NUMBER_CHARS."""
    return text if len(text) <= NUMBER_CHARS else quoted(text, NUMBER_CHARS)


def _culprits(ctx: TokenizerContext, where: Sequence[int], wanted: frozenset[int], literal: str | None = None) -> tuple[Counter, Counter]:
    """The characters and words whose encoding holds a token of ``wanted``, with their counts over the given lines; a
    token that is ``literal`` as written (see :attr:`TokenizerContext.unk_literal`) does not count."""

    def holds(text: str, ids: list[int]) -> bool:
        return sum(i in wanted for i in ids) > (text.count(literal) if literal else 0)

    words: Counter = Counter()
    for i in where:
        words.update(ctx.text.texts[i].split())
    distinct = sorted(words)
    bad_words = Counter({w: words[w] for w, ids in zip(distinct, ctx.tokenizer.encode_batch(distinct)) if holds(w, ids)})
    letters = sorted({ch for w in bad_words for ch in w})
    bad_chars: Counter = Counter()
    for ch, ids in zip(letters, ctx.tokenizer.encode_batch(letters)):
        if holds(ch, ids):
            bad_chars[ch] = sum(w.count(ch) * n for w, n in bad_words.items())
    return bad_chars, bad_words


def _blamed(hits: Iterator[Hit], chars: Counter, words: Counter) -> Iterator[Hit]:
    """The hits, the first one naming the characters and words responsible (those of them found)."""
    named = "; ".join(f"{what}: {_listed(found, limit)}" for what, found, limit in (("characters", chars, 8), ("words", words, 5)) if found)
    blame = f" {named[:1].upper()}{named[1:]}." if named else ""
    for n, hit in enumerate(hits):
        yield replace(hit, message=hit.message + blame, shared=(hit.shared + blame).lstrip()) if n == 0 else hit


def _listed(counter: Counter, limit: int = 8) -> str:
    top = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    return ", ".join(f"{quoted(k, WORD_CHARS)} ({n:,})" for k, n in top) + (f" and {len(counter) - limit:,} more" if len(counter) > limit else "")


# --- coverage ------------------------------------------------------------------


def unknown_tokens(ctx: TokenizerContext) -> Iterator[Hit]:
    """Text the vocabulary cannot represent becomes the unknown token.

    What it detects: unknown-token ids in the encoding (counted by id, not by piece text: a sentencepiece unknown piece decodes to the original characters), with the characters and words responsible; judged by the characters they stand for (those the vocabulary cannot write alone, at least one per unknown token), as a share of the text's characters, whatever the tokenizer's tokens per character: a FAIL from TOK_UNK_FAIL_SHARE, a WARN from TOK_UNK_WARN_SHARE, and below that an INFO naming them.
    Why it matters: every unknown token is text the model is trained to read and say as one meaningless symbol; a TTS or ASR model can never produce those characters.
    Fires on: Chinese text through a tokenizer trained on English (a FAIL); German lines in an English transcript file ("Straße" holds an unknown "ß").
    Does not fire on: a tokenizer without an unknown token (byte-level or byte fallback: see TP-TOK-BYTES), or text it covers. A few rare characters are an INFO: a sentencepiece model drops the rarest characters of its own training text by design (`character_coverage` 0.9995, its default, leaves up to 0.05% of them unknown: 0.044% and 0.051% for the two botchan models on the novel they were trained on), so unknown characters under TOK_UNK_WARN_SHARE of the text are no sign that the tokenizer was built for other text.
    Does not mean: the tokenizer is wrong for the language; normalising the text (or retraining with the missing characters) may be the fix.
    """
    unk = ctx.tokenizer.specials.unk
    if unk is None:
        raise NotApplicable("the tokenizer has no unknown token")
    where = np.flatnonzero(ctx.unknown).tolist()
    if not where:
        return
    count = int(ctx.unknown.sum())
    share = count / max(ctx.total, 1)
    chars, words = ctx.unknown_culprits
    unknown_chars = max(sum(chars.values()), count)  # an unknown token stands for one character at least
    char_share = unknown_chars / max(int(ctx.chars.sum()), 1)
    if char_share >= ctx.t.TOK_UNK_FAIL_SHARE:
        level = None  # the rule's own level, FAIL
    else:
        level = Level.WARN if char_share >= ctx.t.TOK_UNK_WARN_SHARE else Level.INFO
    measured = (f"{count:,} unknown of {figures.plural(ctx.total, 'token')} ({figures.pct(share)}), for {figures.plural(unknown_chars, 'character')} "
                f"of {int(ctx.chars.sum()):,} ({figures.pct(char_share)}")  # fmt: skip
    if level is Level.INFO:
        measured += f"; a WARN from {figures.pct(ctx.t.TOK_UNK_WARN_SHARE)}: a vocabulary drops the rarest characters by design)"
    else:
        measured += ")"
    hits = _examples(
        ctx, where, "hold unknown tokens",
        lambda i: (f"Line {ctx.text.lines[i]} holds {int(ctx.unknown[i])} unknown token{'s' if ctx.unknown[i] != 1 else ''}: {_snippet(ctx.text.texts[i])}.", measured),
        {"unknown": count, "tokens": ctx.total, "unknown_characters": unknown_chars, "characters": int(ctx.chars.sum())},
    )  # fmt: skip
    yield from (replace(hit, level=level) for hit in _blamed(hits, chars, words))


def byte_fallback(ctx: TokenizerContext) -> Iterator[Hit]:
    """Much of the text falls back to byte pieces.

    What it detects: byte-fallback pieces (`<0x..>`) making up at least TOK_BYTE_WARN_SHARE of all tokens, with the characters and words responsible.
    Why it matters: a character spelled as 2-4 byte pieces costs that many tokens and must be learnt from rare byte combinations; a large share means the vocabulary was not built for this text.
    Fires on: Cyrillic text through a byte-fallback tokenizer trained on English.
    Does not fire on: an emoji or a rare symbol here and there (under the share), or a tokenizer without byte fallback.
    Does not mean: text is lost: byte fallback is lossless, only costly.
    """
    if not ctx.tokenizer.byte_ids:
        raise NotApplicable("the tokenizer has no byte-fallback pieces")
    count = int(ctx.byte_pieces.sum())
    share = count / max(ctx.total, 1)
    if share < ctx.t.TOK_BYTE_WARN_SHARE:
        return
    where = np.flatnonzero(ctx.byte_pieces).tolist()
    chars, words = ctx.byte_culprits
    hits = _examples(
        ctx, where, "fall back to bytes",
        lambda i: (f"Line {ctx.text.lines[i]} spends {int(ctx.byte_pieces[i])} of its {figures.plural(int(ctx.lengths[i]), 'token')} "
                   f"on byte pieces: {_snippet(ctx.text.texts[i])}.",
                   f"{figures.plural(count, 'byte piece')} of {figures.plural(ctx.total, 'token')} ({figures.pct(share)}); "
                   f"limit {figures.pct(ctx.t.TOK_BYTE_WARN_SHARE)}"),
        {"bytes": count, "tokens": ctx.total},
    )  # fmt: skip
    yield from _blamed(hits, chars, words)


ROUND_TRIP_SAMPLE = 1000
ROUND_TRIP_STRIDE = 50
_PRINTABLE = bytes(range(0x20, 0x7F))


def _irregular_lines(texts: Sequence[str], joined: _Joined | None) -> set[int]:
    """The transcripts that are not printable ASCII with single spaces, or are empty (no word, where counting spaces
    would say one). Searched for in the bytes of all the text at once (``joined``: :class:`_Joined`), a few passes
    over them (every byte of a non-ASCII character is flagged, and none is a space); line by line when a transcript
    holds a newline (``joined`` is None)."""
    if joined is None:
        return {i for i, text in enumerate(texts) if _irregular(text)}
    data, starts, ends, filled = joined.array, joined.starts, joined.ends, joined.filled
    irregular = ~filled
    irregular[filled] = (data[starts[filled]] == _SPACE) | (data[ends[filled] - 1] == _SPACE)  # a space at its start or end
    space, double = joined.spaces, np.zeros(data.size, dtype=bool)
    np.logical_and(space[:-1], space[1:], out=double[:-1])  # per byte: it and the next are spaces
    if double.any():  # (searching the bytes for b"  " took longer: every single space is a partial match)
        irregular |= joined.count_per_line(double) > 0
    if joined.data.translate(None, _PRINTABLE + b"\n"):  # a byte that is not printable ASCII (one C call says whether)
        irregular |= joined.lines_flagged(_NOT_PRINTABLE_FLAGS)
    return set(np.flatnonzero(irregular).tolist())


def _irregular(text: str) -> bool:
    """One transcript's test of :func:`_irregular_lines`."""
    return (
        not text or not text.isascii() or bool(text.encode("ascii").translate(None, _PRINTABLE))
        or "  " in text or text.startswith(" ") or text.endswith(" ")
    )  # fmt: skip


_SPACE = ord(" ")
_NOT_PRINTABLE_FLAGS = bytes(0 if byte in _PRINTABLE + b"\n" else 1 for byte in range(256))
"""A translation table flagging each byte that makes a line irregular (a byte table: faster than indexing an array)."""


def _lines_holding(texts: Sequence[str], joined: _Joined | None, needles: Iterable[str], skip: AbstractSet[int] = frozenset()) -> set[int]:
    """The transcripts that hold any of ``needles`` in any letter case (a tokenizer may match an added token in the
    text as its normaliser leaves it, lowercased), by one search for them all (a tokenizer may add hundreds: reserved
    tokens, timestamps), but for those in ``skip`` (already known to the caller: not searched, and not returned).
    With the whole text's bytes (``joined``), only the lines holding a needle's first byte (in either case) or a
    non-ASCII character are searched."""
    wanted = sorted({n.lower() for n in needles if n and (joined is None or "\n" not in n)})  # joined: no line holds one
    if not wanted:
        return set()
    pattern = re.compile("|".join(map(re.escape, wanted)))
    if joined is None:
        return {i for i, text in enumerate(texts) if i not in skip and pattern.search(text.lower())}
    firsts = {ord(c) for n in wanted for c in {n[0], n[0].upper()} if c.isascii()}
    candidates = np.flatnonzero(joined.lines_flagged(bytes(1 if b in firsts or b >= 0x80 else 0 for b in range(256))))
    return {i for i in candidates.tolist() if i not in skip and pattern.search(texts[i].lower())}


@dataclass(frozen=True, eq=False)
class _Joined:
    """The UTF-8 bytes of every transcript, one newline between each, and the [start, end) of each: a search over all
    the text at once names the line of what it finds. Only for transcripts that hold no newline themselves."""

    data: bytes
    array: np.ndarray
    starts: np.ndarray
    ends: np.ndarray

    @classmethod
    def of(cls, texts: Sequence[str]) -> _Joined | None:
        if not texts:
            return None
        data = "\n".join(texts).encode("utf-8", "surrogatepass")
        array = np.frombuffer(data, dtype=np.uint8)
        newlines = np.flatnonzero(array == ord("\n"))
        if newlines.size != len(texts) - 1:
            return None
        return cls(data, array, np.concatenate(([0], newlines + 1)), np.concatenate((newlines, [array.size])))

    @cached_property
    def spaces(self) -> np.ndarray:
        """Per byte, whether it is a space."""
        return self.array == _SPACE

    @cached_property
    def filled(self) -> np.ndarray:
        """Per transcript, whether it holds a byte."""
        return self.ends > self.starts

    def count_per_line(self, flags: np.ndarray) -> np.ndarray:
        """Per transcript, how many of its bytes are flagged (``flags``: one per byte of :attr:`data`, False at the
        newlines between transcripts)."""
        counts = np.zeros(self.starts.size, dtype=np.int64)
        if self.filled.any():  # each filled transcript's segment runs to the next one's start
            wide = np.int32 if flags.size < 2**31 else np.int64  # a narrower sum is twice as fast
            counts[self.filled] = np.add.reduceat(flags.view(np.uint8), self.starts[self.filled], dtype=wide)
        return counts

    def lines_flagged(self, table: bytes) -> np.ndarray:
        """Per transcript, whether any of its bytes is flagged by the translation ``table`` (see
        :func:`~trainproof.io.bounded.lines_flagged`)."""
        return lines_flagged(self.data, table, self.starts, self.ends)


def round_trip(ctx: TokenizerContext) -> Iterator[Hit]:
    """Decoding a line's tokens does not give the line back.

    What it detects: lines whose decoded encoding is neither the line itself nor the line as the tokenizer's own normaliser makes it (lines holding unknown tokens are left to TP-TOK-UNKNOWN). Every line with a character outside printable ASCII, irregular whitespace, or a string the tokenizer matches whole (an added token such as "<s>", a sentencepiece user-defined symbol) is checked; of the plain lines, the first thousand and every fiftieth, and all of them as soon as one of those fails (a plain line fails only when the pipeline fails every line alike, as with a lost decoder).
    Why it matters: what the model is trained to produce is not what the transcript says: dropped characters, merged spaces, or a normaliser that rewrites text (a TTS model then reads "½" as whatever "1/2" became).
    Fires on: a tokenizer whose normaliser strips accents, on French text; text with characters the decoder drops.
    Does not fire on: lines that decode to their own normalised form.
    Does not mean: the model cannot be trained; it will learn the normalised text, which may be what you want.
    """
    tok = ctx.tokenizer
    texts = ctx.text.texts
    flagged = ctx.unusual
    unusual = sorted(flagged)
    is_plain = np.ones(len(texts), dtype=bool)
    is_plain[sorted(flagged)] = False
    plain = np.flatnonzero(is_plain).tolist()
    sample = sorted(set(plain[:ROUND_TRIP_SAMPLE]) | set(plain[::ROUND_TRIP_STRIDE]))
    decoded: dict[int, str] = {}
    wanted: dict[int, str] = {}

    def failing(indices: list[int]) -> list[int]:
        todo = [i for i in indices if i not in decoded]
        decoded.update(zip(todo, tok.decode_batch([ctx.ids[i] for i in todo], own=True)))
        changed = [i for i in todo if decoded[i] != texts[i]]  # a line given back as it is: fine
        wanted.update(zip(changed, tok.normalize_batch([texts[i] for i in changed])))
        return [i for i in indices if i in wanted and decoded[i] != wanted[i] and ctx.unknown[i] == 0]

    bad = set(failing(unusual + sample))
    if bad.intersection(sample):  # a plain line fails: the pipeline itself does (a lost decoder), so every line is checked
        bad.update(failing(plain))
    where = sorted(bad)

    def say(i: int) -> tuple[str, str]:
        # the line as written beside what decoding gave; the normalised form the check allows, when it is another text,
        # apart: quoting it as the line showed a space the line does not have ("modern ." for "modern.")
        line, want, got = texts[i], wanted[i], decoded[i]
        start, end = _around(line, got)
        message = f"Line {ctx.text.lines[i]}: {_excerpt(line, start, end)} comes back as {_excerpt(got, start, end)} from encoding and decoding."  # fmt: skip
        at = _first_difference(want, got)
        if want == line:
            return message, f"first difference at character {at + 1} of {len(line)}"
        start, end = _around(want, got)
        return message, (f"the tokenizer's own normalisation of the line, {_excerpt(want, start, end)}, is not what decoding gives "
                         f"either: first difference from it at character {at + 1} of {len(want)}")  # fmt: skip

    yield from _examples(ctx, where, "do not round-trip", say)


# --- fertility and length ------------------------------------------------------------


def fertility(ctx: TokenizerContext) -> Iterator[Hit]:
    """The text is split into many more tokens per word, or per character of a script without spaces, than a tokenizer built for it would use.

    What it detects: more tokens than the text's words and characters allow: TOK_FERTILITY_WARN per whitespace-separated word (a line counting at least one word per TOK_WORD_CHARS characters, so text run together without spaces is not one long word), and TOK_CHAR_FERTILITY_WARN per character of a script written without spaces between words (Han, Kana, Thai, Lao, Khmer, Myanmar, Tibetan: told by code point), where a whitespace "word" is a whole clause; a line mixing both counts each of its characters of those scripts and each of its other words (with at least TOK_MIN_LINES lines). The finding says which unit it measured, and names the line most over its allowance (of the lines of TOK_DENSE_MIN_CHARS characters or more, when there are any).
    Why it matters: a model sees less text per context window and learns slower; for TTS and ASR, long token sequences strain the aligner and the attention.
    Fires on: Finnish or Hindi text through a tokenizer trained on English; Chinese, Japanese or Thai through a byte-level BPE trained on English (about 3 tokens per character: each is 3 bytes and nothing merged them).
    Does not fire on: text in the tokenizer's own language (English through an English BPE is about 1.3 tokens per word; Sanskrit written with sandhi, lines of 2,000 characters without a space, through a tokenizer trained on it, 0.31 tokens per character; Chinese, Japanese and Thai through a tokenizer trained on them 0.3-1 per character), or a sample under TOK_MIN_LINES lines.
    Does not mean: the tokenizer cannot represent the text; see TP-TOK-UNKNOWN for that (a tokenizer without a script's characters and without byte fallback is few tokens per character: runs of unknown characters become one unknown token each).
    """
    if len(ctx.text.texts) < ctx.t.TOK_MIN_LINES:
        raise NotApplicable(f"only {figures.plural(len(ctx.text.texts), 'line')} (needs {ctx.t.TOK_MIN_LINES})")
    line_words = np.maximum(ctx.words, (ctx.chars - ctx.unsegmented) // ctx.t.TOK_WORD_CHARS)  # run-together text
    words, characters = int(line_words.sum()), int(ctx.unsegmented.sum())
    if words + characters == 0:
        raise NotApplicable("the text has no words")
    per_word, per_character = ctx.t.TOK_FERTILITY_WARN, ctx.t.TOK_CHAR_FERTILITY_WARN
    allowed = words * per_word + characters * per_character
    if ctx.total <= allowed:
        return
    line_allowed = line_words * per_word + ctx.unsegmented * per_character
    over = np.divide(ctx.lengths, line_allowed, out=np.zeros(len(ctx.lengths)), where=line_allowed > 0)
    if (ctx.chars >= ctx.t.TOK_DENSE_MIN_CHARS).any():  # a title of three characters is no example: one piece swings its rate
        over[ctx.chars < ctx.t.TOK_DENSE_MIN_CHARS] = 0
    worst = int(np.argmax(over))
    rate, limit = ctx.total / (words + characters), allowed / (words + characters)
    written = ", ".join(ctx.unsegmented_scripts)
    if not characters:
        measured, unit = f"{figures.plural(rate, 'token')} per word (limit {figures.num(per_word)})", "tokens_per_word"
        counted = figures.plural(words, "word")
    elif not words:
        measured = (f"{figures.plural(rate, 'token')} per character (limit {figures.num(per_character)}; {written} is written without "
                    f"spaces between words, so each character is counted, not each word)")  # fmt: skip
        unit, counted = "tokens_per_character", f"{figures.plural(characters, 'character')} of {written}"
    else:
        measured = (f"{figures.plural(rate, 'token')} per unit, against a limit of {figures.num(limit)} for its mix of units: "
                    f"{figures.plural(words, 'word')} at {figures.num(per_word)} each and {figures.plural(characters, 'character')} "
                    f"of {written} (written without spaces between words, so counted one by one) at {figures.num(per_character)} each")  # fmt: skip
        unit, counted = "tokens_per_unit", f"{figures.plural(words, 'word')} and {figures.plural(characters, 'character')} of {written}"
    split = ""
    if not characters:  # a whitespace word of a script without spaces is a clause: its "split share" says nothing
        split = (f"; {figures.pct(ctx.split_share or 0)} of words split into several pieces"
                 f"{f' (in the first {SPLIT_SHARE_LINES:,} lines)' if len(ctx.text.texts) > SPLIT_SHARE_LINES else ''}")  # fmt: skip
    yield Hit(
        message=f"The text averages {measured}; line {ctx.text.lines[worst]} is split finest: {_snippet(ctx.text.texts[worst])}.",
        evidence=f"{figures.plural(ctx.total, 'token')} for {counted} "
        f"({figures.num(ctx.total / max(int(ctx.chars.sum()), 1))} per character of the whole text){split}",
        values={unit: rate, "limit": limit, "tokens": ctx.total, "words": words, "unsegmented_characters": characters,
                "split_share": ctx.split_share if not characters else None},
        line=ctx.text.lines[worst],
    )  # fmt: skip


def _outliers(values: np.ndarray, z_limit: float) -> tuple[np.ndarray, float, float]:
    """Indices of values above the median by more than ``z_limit`` robust sigmas, the median and the sigma."""
    median = float(np.median(values))
    sigma = MAD_TO_SIGMA * float(np.median(np.abs(values - median)))
    if not sigma > 0:
        return np.array([], dtype=int), median, sigma
    return np.flatnonzero((values - median) / sigma > z_limit), median, sigma


def dense_lines(ctx: TokenizerContext) -> Iterator[Hit]:
    """A line takes far more tokens per character than the rest of the text.

    What it detects: lines of at least TOK_DENSE_MIN_CHARS characters whose tokens per character are both more than TOK_OUTLIER_Z robust sigmas above the median of such lines and at least TOK_DENSE_RATIO times that median (with at least TOK_MIN_LINES such lines); lines holding unknown tokens are left to TP-TOK-UNKNOWN.
    Why it matters: such a line is usually not the text's language: base64, a hash, text in another script; it costs tokens and teaches nothing the model needs.
    Fires on: a line of base64 or of Chinese in an English transcript file (3-12 times the median).
    Does not fire on: a text with fewer than TOK_MIN_LINES lines of TOK_DENSE_MIN_CHARS characters; a short line ("him.", "1919": a piece more or less swings its rate past any spread); the denser lines clean text has, which the spread alone would name (an all-capitals heading, a licence's URL or postal address, "bang, bang, bang": at most 2.4 times the median through 8,000- and 32,000-piece tokenizers, 2.9 through 1,000-piece ones, on the English novel botchan).
    Does not mean: the line is wrong; check what it is.
    """
    long_enough = np.flatnonzero(ctx.chars >= ctx.t.TOK_DENSE_MIN_CHARS)
    if len(long_enough) < ctx.t.TOK_MIN_LINES:
        raise NotApplicable(f"only {figures.plural(len(long_enough), 'line')} of {figures.plural(ctx.t.TOK_DENSE_MIN_CHARS, 'character')} or more (needs {ctx.t.TOK_MIN_LINES})")
    rates = ctx.lengths[long_enough] / ctx.chars[long_enough]
    outliers, median, _ = _outliers(rates, ctx.t.TOK_OUTLIER_Z)
    dense = {int(long_enough[k]): float(rates[k]) for k in outliers.tolist() if rates[k] >= ctx.t.TOK_DENSE_RATIO * median}
    covered = [i for i in sorted(dense) if ctx.unknown[i] == 0]  # a line dense with unknown tokens is TP-TOK-UNKNOWN's
    yield from _examples(
        ctx, covered, "are split far finer than the rest",
        lambda i: (f"Line {ctx.text.lines[i]} takes {figures.plural(dense[i], 'token')} per character, {figures.ratio(dense[i] / median)} "
                   f"the median of {figures.num(median)}: {_snippet(ctx.text.texts[i])}.",
                   f"{figures.plural(int(ctx.lengths[i]), 'token')} for {figures.plural(int(ctx.chars[i]), 'character')}; "
                   f"the median over the {len(long_enough):,} lines of {ctx.t.TOK_DENSE_MIN_CHARS} characters or more"),
    )  # fmt: skip


def too_long(ctx: TokenizerContext) -> Iterator[Hit]:
    """A line has more tokens than `--max-tokens`.

    What it detects: lines whose encoding is longer than the limit given with `--max-tokens` (the model's context, or the aligner's budget); the first TOK_EXAMPLES are named.
    Why it matters: trainers truncate such lines silently (the end of the transcript is never learnt) or skip them.
    Fires on: a 700-token paragraph with `--max-tokens 512`.
    Does not fire on: lines within the limit, or when no limit is given.
    Does not mean: the line is bad; split it, or raise the limit.
    """
    if ctx.max_tokens is None:
        raise NotApplicable("no --max-tokens given")
    where = np.flatnonzero(ctx.lengths > ctx.max_tokens).tolist()
    yield from _examples(
        ctx, where, f"are over {figures.plural(ctx.max_tokens, 'token')}",
        lambda i: (f"Line {ctx.text.lines[i]} has {int(ctx.lengths[i]):,} tokens, over the limit of {ctx.max_tokens:,}.", f"{int(ctx.lengths[i]):,} tokens; limit {ctx.max_tokens:,}"),
    )  # fmt: skip


def token_rate(ctx: TokenizerContext) -> Iterator[Hit]:
    """A transcript has far more tokens per second of its audio than the rest.

    What it detects: transcripts whose tokens per second of audio are more than TOK_OUTLIER_Z robust sigmas above the median (when durations are known for at least TOK_MIN_LINES lines).
    Why it matters: a TTS or CTC model needs audio frames for every token; a transcript with too many tokens for its clip cannot be aligned, or belongs to another clip.
    Fires on: a long sentence paired with a one-second clip.
    Does not fire on: text without audio durations, or rates within the spread.
    Does not mean: which side is wrong; the audio may be cut short.
    """
    seconds = ctx.seconds
    known = np.flatnonzero(np.isfinite(seconds) & (seconds > 0))
    if len(known) < ctx.t.TOK_MIN_LINES:
        raise NotApplicable(f"audio durations known for {figures.plural(len(known), 'line')} (needs {ctx.t.TOK_MIN_LINES})")
    rates = ctx.lengths[known] / seconds[known]
    where, median, _ = _outliers(rates, ctx.t.TOK_OUTLIER_Z)
    rate_of = dict(zip(known[where].tolist(), rates[where].tolist()))
    yield from _examples(
        ctx, sorted(rate_of), "have too many tokens for their audio",
        lambda i: (f"Line {ctx.text.lines[i]} has {figures.plural(rate_of[i], 'token')} per second of audio "
                   f"against a median of {figures.num(median)}.",
                   f"{figures.plural(int(ctx.lengths[i]), 'token')} over {figures.num(seconds[i])} s"),
    )  # fmt: skip


# --- numbers -------------------------------------------------------------------------


def _split(ctx: TokenizerContext, strings: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """How each digit string is split when it follows a space, as in running text (pieces as text), where that can be told."""
    encoded = ctx.tokenizer.encode_batch([f" {s}" for s in strings])
    decoded = iter(ctx.tokenizer.decode_batch([[i] for ids in encoded for i in ids], own=True))  # each token alone, in one call
    out = {}
    for digits, ids in zip(strings, encoded):
        pieces = tuple(p for p in (next(decoded).strip() for _ in ids) if p)
        if "".join(pieces) == digits:
            out[digits] = pieces
    return out


def _numbers_in(ctx: TokenizerContext) -> dict[str, int]:
    """Each distinct digit string in the transcripts and the index of the first transcript it is in, in order of first
    appearance. Only the lines that hold a digit are searched, found in all the text at once when it can be."""
    texts, joined = ctx.text.texts, ctx.joined
    if joined is not None and not joined.data.translate(None, _NOT_DIGITS):  # no digit anywhere: one C call says so
        return {}
    if joined is None:  # a line without digits costs one C call
        lines: Iterable[int] = (i for i, text in enumerate(texts) if text.encode("utf-8", "surrogatepass").translate(None, _NOT_DIGITS))
    else:
        lines = np.flatnonzero(joined.lines_flagged(_DIGIT_FLAGS)).tolist()
    where: dict[str, int] = {}
    for i in lines:
        for match in _DIGITS.finditer(texts[i]):
            where.setdefault(match.group(0), i)
    return where


def numbers(ctx: TokenizerContext) -> Iterator[Hit]:
    """Numbers of the same length are split into digit groups inconsistently.

    What it detects: digit strings of one length (2 digits or more) in the text that the tokenizer splits into different groupings (`1984` as `19|84`, `2024` as one piece, `1066` as `1|066`), for each length of which the text holds at least TOK_NUMBER_MIN distinct numbers (two numbers split two ways is no pattern).
    Why it matters: the model must learn each number's reading from whichever pieces its merges happened to produce, so it reads and says similar numbers differently; tokenizers built for numbers split every digit (sentencepiece's `split_digits`).
    Fires on: a BPE trained without digit splitting, on text with years and prices.
    Does not fire on: a tokenizer that splits digits one by one, or one that keeps every number of a length whole; lengths with fewer than TOK_NUMBER_MIN distinct numbers.
    Does not mean: the transcripts are wrong; normalising numbers to words also avoids it. An INFO note, not a
    warning: it is how most byte-level BPEs (GPT-2's family) were built, true of the tokenizer on any text, and it
    matters only to a task that reads or writes numbers (calibrated: it fired on 3 of 9 clean tokenizer-and-own-text
    pairs from public repositories). Where numbers matter, make it a warning: ``[tool.trainproof.levels]
    TP-TOK-NUMBERS = "WARN"``.
    """
    where = _numbers_in(ctx)
    strings = sorted(s for s in where if len(s) >= 2)
    if len(strings) < ctx.t.TOK_NUMBER_MIN:
        raise NotApplicable(f"only {figures.plural(len(strings), 'distinct number')} of 2 digits or more (needs {ctx.t.TOK_NUMBER_MIN})")
    splits = _split(ctx, strings)
    by_length: dict[int, dict[tuple[int, ...], list[str]]] = {}
    for digits, pieces in splits.items():
        by_length.setdefault(len(digits), {}).setdefault(tuple(len(p) for p in pieces), []).append(digits)
    enough = {length: patterns for length, patterns in by_length.items() if sum(map(len, patterns.values())) >= ctx.t.TOK_NUMBER_MIN}
    if not enough:
        raise NotApplicable(f"no length of number has {ctx.t.TOK_NUMBER_MIN} distinct numbers the tokenizer spells with digit pieces (of {figures.plural(len(strings), 'distinct number')} of 2 digits or more)")
    for length in sorted(enough):
        patterns = enough[length]
        if len(patterns) < 2:
            continue
        examples = [(sorted(ds, key=lambda d: where[d])[0], shape) for shape, ds in patterns.items()]
        examples.sort(key=lambda e: where[e[0]])
        shown = ", ".join(f"{_digits(d)} as {_digits('|'.join(splits[d]))}" for d, _ in examples[:4])
        first = where[examples[0][0]]
        count = sum(len(ds) for ds in patterns.values())
        yield Hit(
            message=f"{length}-digit numbers are split {len(patterns)} ways: {shown}.",
            evidence=f"{count:,} distinct {length}-digit numbers in {len(patterns)} groupings",
            values={"length": length, "groupings": len(patterns), "numbers": count},
            line=ctx.text.lines[first],
        )


# --- special tokens ------------------------------------------------------------------


def no_eos(ctx: TokenizerContext) -> Iterator[Hit]:
    """The tokenizer has no end-of-sequence token.

    What it detects: a tokenizer with no eos token defined.
    Why it matters: a model fine-tuned without one never learns where to stop, and generation runs to the length limit.
    Fires on: a sentencepiece model trained with `eos_id=-1`.
    Does not fire on: a tokenizer that defines eos.
    Does not mean: a trainer cannot add one; it must, and resize the embeddings.
    """
    specials = ctx.tokenizer.specials
    if specials.eos is None:
        yield Hit(message=f"{ctx.tokenizer.path} defines no end-of-sequence (eos) token.", evidence=f"eos: none; bos {specials.bos}, pad {specials.pad}, unk {specials.unk}", file=ctx.tokenizer.path)


def pad_is_eos(ctx: TokenizerContext) -> Iterator[Hit]:
    """The padding token is the end-of-sequence token.

    What it detects: a pad token with the same id as the eos token.
    Why it matters: collators mask padding out of the labels by id, so every real eos is masked too: the model is never taught to stop.
    Fires on: `tokenizer.pad_token = tokenizer.eos_token`, saved.
    Does not fire on: a distinct pad token, or no pad token (trainers then refuse to batch, which is loud).
    Does not mean: every trainer masks by id; check yours, or add a pad token.
    """
    specials = ctx.tokenizer.specials
    if specials.pad is not None and specials.pad == specials.eos:
        yield Hit(message=f"{ctx.tokenizer.path} pads with its end-of-sequence token {quoted(specials.eos_text, WORD_CHARS)} (id {specials.eos}).", evidence=f"pad id {specials.pad} = eos id {specials.eos}", file=ctx.tokenizer.path)


TOKENIZER_RULES = rules_of(
    "tokenizer",
    (
        ("TP-TOK-UNKNOWN", Level.FAIL, unknown_tokens),
        ("TP-TOK-BYTES", Level.WARN, byte_fallback),
        ("TP-TOK-ROUND-TRIP", Level.WARN, round_trip),
        ("TP-TOK-FERTILITY", Level.WARN, fertility),
        ("TP-TOK-DENSE-LINE", Level.WARN, dense_lines),
        ("TP-TOK-TOO-LONG", Level.WARN, too_long),
        ("TP-TOK-RATE", Level.WARN, token_rate),
        ("TP-TOK-NUMBERS", Level.INFO, numbers),
        ("TP-TOK-NO-EOS", Level.WARN, no_eos),
        ("TP-TOK-PAD-IS-EOS", Level.WARN, pad_is_eos),
    ),
)
"""The tokenizer command's rules, in the order they run; registered by id in :mod:`trainproof.checks.registry`."""
