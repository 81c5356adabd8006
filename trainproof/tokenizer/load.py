"""A tokenizer on disk, whatever library wrote it, loaded behind one :class:`Tokenizer` interface.

What a path is, is decided by its content first and its name second:

- a file whose first bytes are a JSON object (or named ``*.json``) is a
  HuggingFace ``tokenizer.json``, loaded with the ``tokenizers`` library
  alone (transformers is never imported for it); special tokens named in a
  ``tokenizer_config.json`` or ``special_tokens_map.json`` beside it count;
- a file that starts like a protobuf ``ModelProto`` (or named ``*.model``)
  is a sentencepiece model;
- a folder with a ``tokenizer_config.json`` (or a ``chat_template.jinja`` /
  ``.json``) is a HuggingFace tokenizer folder, loaded with transformers'
  ``AutoTokenizer``, offline (HF_HUB_OFFLINE=1 is set for the process,
  ``local_files_only=True``) and with ``trust_remote_code=False``; a folder
  with only a ``tokenizer.json`` is loaded with ``tokenizers``, one with only
  a sentencepiece ``.model`` with sentencepiece.

Refused, each as an :class:`~trainproof.io.errors.InputError` naming the path
(a library's own exception never escapes loading; a Rust panic of
``tokenizers``, in loading or in any later call, is one too: see
:mod:`trainproof.tokenizer.panics`): a missing path, an empty file, a
pickle (by its protocol header or a ``.pkl``/``.pickle``/``.bin``/``.pt``/
``.pth`` name: unpickling runs code), a folder that ships code (a
``.py`` file, or an ``auto_map`` that would make transformers import it), a
truncated or corrupt sentencepiece model (checked by walking its protobuf
fields: a cut model loses the normalizer spec serialised after its pieces,
which sentencepiece itself would load with defaults; a piece whose text is
not UTF-8 is named), a ``tokenizer.json``
(or a configuration beside it) that is not JSON, is JSON nested too deeply
to read, or is not a tokenizer, a folder with nothing loadable. A
library that is not installed is a
:class:`~trainproof.io.errors.MissingDependencyError`.

Before any library opens a file of a folder, every entry is looked at with
its links followed (the HuggingFace cache's snapshot files are links into
``../../blobs/``, so links are followed here, wherever they lead): one that
is not a regular file or a folder (a FIFO, whose open would wait for ever;
a link to ``/dev/zero``, read without end) is refused, and so is a file a
library reads that is past its bound: MAX_CONFIG_BYTES for configurations,
MAX_TEMPLATE_FILE_BYTES for chat templates, MAX_FILE_BYTES for the rest.
trainproof's own reads open without waiting and look before reading. A chat
template is rendered within bounds of time and size
(:mod:`trainproof.tokenizer.templates`).

The round-trip contract: for every text the vocabulary covers (no unknown
token in its encoding), ``decode(encode_batch([t])[0]) == normalize(t)``.
``normalize`` is what decoding gives back, not the library's raw normaliser
output: sentencepiece's normaliser writes spaces as "▁" and adds a dummy
prefix that decoding removes again, and a ``tokenizers`` pipeline's
pre-tokenizer and decoder (Metaspace, ByteLevel, a Strip) shape the text as
much as its normaliser does. Where the contract does not hold:

- a ``tokenizers`` pipeline without a decoder: the library joins tokens with
  spaces, so only texts whose pre-tokens are single tokens round-trip;
- a text containing an added token's string (``"<s>"``): the library cuts
  the text around it before pre-tokenizing, ``normalize`` does not, which
  differs where the pre-tokenizer prepends a space to every piece
  (Metaspace with ``prepend_scheme="always"``);
- sentencepiece before 0.2 has no ``normalize``: NFKC with runs of
  whitespace collapsed and the ends stripped stands in for its default
  ``nmt_nfkc`` rule, which is exact only for models trained with that rule;
- a transformers tokenizer with neither a ``tokenizers`` backend nor a
  sentencepiece model: ``normalize`` is the identity.
"""

from __future__ import annotations

import bisect
import os
import re
import stat
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from trainproof.io.bounded import load_json, size_text, special_kind
from trainproof.io.errors import InputError, MissingDependencyError
from trainproof.tokenizer.panics import guarded, said

if TYPE_CHECKING:
    from trainproof.tokenizer.batches import Failed
    from trainproof.tokenizer.templates import BoundedTemplate

MAX_FILE_BYTES = 1 << 30
"""Bytes: the largest file read as a tokenizer (1 GiB). The largest tokenizer.json files are tens of MB; a file
over this is a model or a dataset given by mistake, refused before it is read into memory."""

MAX_CONFIG_BYTES = 16 << 20
"""Bytes: the largest configuration file of a tokenizer read (``*config*.json``, ``special_tokens_map.json``,
``added_tokens.json``: 16 MiB). Gemma 3's tokenizer_config.json, which lists six thousand added tokens, is 1.2 MB;
speech models that add tens of thousands of audio tokens reach a few MB."""

MAX_TEMPLATE_FILE_BYTES = 1 << 20
"""Bytes: the largest chat template file read (``chat_template.jinja``, ``chat_template.json``,
``additional_chat_templates/*.jinja``: 1 MiB). The longest templates in use, with tool calling, are tens of KB."""

TEMPLATE_FOLDER = "additional_chat_templates"
"""The sub-folder of a tokenizer folder whose ``*.jinja`` files transformers reads as named chat templates."""

TOKENIZER_FILE_SUFFIXES = (".json", ".jinja", ".txt", ".model", ".spm", ".tiktoken", ".codes", ".vocab", ".bpe", ".tokenizer")
"""The files of a tokenizer folder a tokenizer library may read (a vocab.json, merges.txt, spiece.model, a
tokenizer.json, configurations), each held to MAX_FILE_BYTES, or less for configurations and templates. Other files
(weights, a dataset kept beside) are not read, and have no bound."""

PICKLE_SUFFIXES = (".pkl", ".pickle", ".bin", ".pt", ".pth")
"""File names refused as pickles whatever their first bytes (a zip-format torch file does not start with 0x80)."""

USUAL_SPECIALS: Mapping[str, tuple[str, ...]] = {
    "bos": ("<s>",),
    "eos": ("</s>", "<|endoftext|>"),
    "pad": ("<pad>",),
    "unk": ("<unk>",),
}
"""The strings a bare tokenizer.json's special tokens are found by, when neither its post-processor, its model,
its padding nor a configuration beside it names them."""

ROLES = ("bos", "eos", "pad", "unk")

_BYTE_PIECE = re.compile(r"<0x[0-9A-F]{2}>")
_SPACE = "\u2581"  # sentencepiece's and Metaspace's stand-in for a space
_CONFIG_FILES = ("tokenizer_config.json", "special_tokens_map.json", "config.json", "generation_config.json")
_NAMING_FILES = ("tokenizer_config.json", "special_tokens_map.json")  # beside a tokenizer.json, they name its special tokens
_READS = "a sentencepiece .model, a tokenizer.json or a HuggingFace tokenizer folder"
_PICKLE = "is a pickle; trainproof never unpickles a tokenizer"
_CODE = "ships its own code (auto_map / .py); trainproof never runs it (trust_remote_code)"


@dataclass(frozen=True)
class Specials:
    """The special tokens a trainer relies on: id and text of each, None when the tokenizer has none.

    An id of None with a text is a token the configuration names but the
    vocabulary lacks (only a ``tokenizers`` tokenizer can say so: the other
    libraries add or refuse such a token on loading).
    """

    bos: int | None
    bos_text: str | None
    eos: int | None
    eos_text: str | None
    pad: int | None
    pad_text: str | None
    unk: int | None
    unk_text: str | None


class Tokenizer(ABC):
    """A loaded tokenizer: what trainproof's rules ask of one, the same for every library.

    ``vocab_size`` is one more than the largest id the tokenizer has, added
    tokens included: the rows an embedding matrix needs (:meth:`pieces` has
    the ids there are, which may be far fewer). ``byte_ids`` are the
    ids whose piece is a byte-fallback piece (``<0x41>``), empty when the
    vocabulary has none. ``matched`` are the strings the library finds whole
    in a text (or in the text as its normaliser leaves it, lowercased) before
    its pipeline sees the rest: added tokens (for a transformers folder, those
    its ``added_tokens_decoder`` lists), a sentencepiece model's user-defined
    pieces. A text holding one may not round-trip as :meth:`normalize` says. ``chat_template`` is set only for a transformers
    folder that has one, ``chat_template_file`` then to the file it was read from (the folder itself when no file of it
    holds that text). Ids outside ``0 .. vocab_size - 1`` are a ValueError
    in :meth:`decode` and :meth:`piece`, whatever the library would do.
    """

    kind: ClassVar[str]
    """"sentencepiece", "tokenizers" or "transformers": the library that loaded it."""

    def __init__(
        self,
        path: str,
        vocab_size: int,
        specials: Specials,
        byte_ids: frozenset[int],
        matched: frozenset[str],
        chat_template: str | None = None,
    ) -> None:
        self.path = path
        self.vocab_size = vocab_size
        self.specials = specials
        self.byte_ids = byte_ids
        self.matched = matched
        self.chat_template = chat_template
        self.chat_template_file: str | None = None
        self._wrapping: tuple[int, int] | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.path!r}: {self.vocab_size} ids>"

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's ids, no special tokens added, through the library's batch call."""
        texts = list(texts)
        with self._calling():
            return self._encode_batch(texts) if texts else []

    def decode(self, ids: Sequence[int]) -> str:
        """The plain decode: nothing skipped, no clean-up of spaces around punctuation."""
        checked = self._checked(ids)
        with self._calling():
            return self._decode(checked)

    def decode_batch(self, batch: Sequence[Sequence[int]], *, own: bool = False) -> list[str]:
        """:meth:`decode` of each, through the library's batch call where it has one. ``own=True`` says the ids are
        this tokenizer's own encoding, so they are not checked against the vocabulary (a pass as long as the text)."""
        lists = [ids if isinstance(ids, list) else list(ids) for ids in batch]
        filled = [ids for ids in lists if ids] if not own else []
        if filled and (min(map(min, filled)) < 0 or max(map(max, filled)) >= self.vocab_size):
            for ids in filled:
                self._checked(ids)  # names the id that is out of range
        with self._calling():
            return self._decode_batch(lists) if lists else []

    def normalize(self, text: str) -> str:
        """The text as this tokenizer gives it back: ``decode(encode(t)) == normalize(t)`` when the vocabulary covers ``t``."""
        with self._calling():
            return self._normalize(text)

    def normalize_batch(self, texts: Sequence[str]) -> list[str]:
        """:meth:`normalize` of each text."""
        with self._calling():
            return self._normalize_batch(list(texts))

    def piece(self, token_id: int) -> str:
        """The vocabulary entry of an id ("" for an id in a hole of the vocabulary, which no entry has)."""
        checked = self._checked([token_id])[0]
        with self._calling():
            return self._piece(checked)

    def pieces(self) -> dict[int, str]:
        """Every id the vocabulary has, with its entry: the holes of a sparse vocabulary (a tokenizer.json may give a
        piece any id, 4,294,967,295 too) are not in it, so a pass over it is as long as the vocabulary, not its ids."""
        with self._calling():
            return self._pieces()

    def render_chat(self, messages: Sequence[Mapping[str, str]]) -> str | None:
        """The chat template applied to ``messages`` (``role`` / ``content``), as text; None without a template.

        A template that fails on the messages (its own ``raise_exception``, a
        role it refuses) is a ValueError with the template's message; one
        stopped past a bound of time or size, a
        :class:`~trainproof.tokenizer.templates.TemplateOverrun`.
        """
        with self._calling():
            return self._render_chat(messages)

    def render_chats(self, conversations: Sequence[Sequence[Mapping[str, str]]], tools: Sequence[Any] | None = None) -> list[str | Failed | None]:
        """:meth:`render_chat` of each conversation: its text, a :class:`~trainproof.tokenizer.batches.Failed` with the
        template's message where the template refuses it, None without a template. TemplateOverrun as soon as one
        rendering is past a bound (the rest are not rendered)."""
        with self._calling():
            return self._render_chats(conversations, tools)

    @property
    def wrapping(self) -> tuple[int, int]:
        """How many special tokens the library's own call (a trainer's ``tokenizer(text)``) puts before and after one
        sequence: (1, 0) for a Llama tokenizer's bos; (0, 0) for GPT-2's, and for a sentencepiece model, which adds
        none unless asked. Found by encoding a letter both ways, once. A closing eos is not counted here: a trainer
        appends the eos once whether or not the call put it there."""
        if self._wrapping is None:
            with self._calling():
                before, after, last = self._wrapped()
            if after and last is not None and last == self.specials.eos:
                after -= 1
            self._wrapping = (before, after)
        return self._wrapping

    def _wrapped(self) -> tuple[int, int, int | None]:
        """(tokens before, tokens after, the last token id of the wrapped letter) as the library's call adds them."""
        return (0, 0, None)

    def count_before(self, texts: Sequence[str], cuts: Sequence[int]) -> list[tuple[int, int]]:
        """For each text, its tokens and how many of them start before character ``cut``: the part of one sequence a
        trainer masks out (a rendered conversation up to its answer). Where the library gives no offsets, the text up
        to the cut is encoded on its own."""
        texts = list(texts)
        with self._calling():
            return self._count_before(texts, list(cuts)) if texts else []

    def _calling(self) -> AbstractContextManager[None]:
        """A call into the library: a Rust panic in it is an InputError naming this tokenizer (see :mod:`.panics`)."""
        return guarded(self.path, "cannot be used")

    @abstractmethod
    def _encode_batch(self, texts: list[str]) -> list[list[int]]: ...

    @abstractmethod
    def _decode(self, ids: list[int]) -> str: ...

    def _decode_batch(self, lists: list[list[int]]) -> list[str]:
        return [self._decode(ids) for ids in lists]

    @abstractmethod
    def _normalize(self, text: str) -> str: ...

    def _normalize_batch(self, texts: list[str]) -> list[str]:
        return [self._normalize(text) for text in texts]

    @abstractmethod
    def _piece(self, token_id: int) -> str: ...

    @abstractmethod
    def _pieces(self) -> dict[int, str]: ...

    def _render_chat(self, messages: Sequence[Mapping[str, str]]) -> str | None:
        return None

    def _render_chats(self, conversations: Sequence[Sequence[Mapping[str, str]]], tools: Sequence[Any] | None = None) -> list[str | Failed | None]:
        return [None] * len(conversations)

    def _count_before(self, texts: list[str], cuts: list[int]) -> list[tuple[int, int]]:
        wholes = self._encode_batch(texts)
        heads = self._encode_batch([text[:cut] for text, cut in zip(texts, cuts)])
        return [(len(w), min(len(h), len(w))) for w, h in zip(wholes, heads)]

    def _checked(self, ids: Iterable[int]) -> list[int]:
        checked = [int(i) for i in ids]
        for token_id in checked:
            if not 0 <= token_id < self.vocab_size:
                raise ValueError(f"id {token_id} is outside the vocabulary of {self.path} (0 to {self.vocab_size - 1})")
        return checked


class SentencePieceTokenizer(Tokenizer):
    """A sentencepiece ``ModelProto``, through sentencepiece's own processor.

    Special tokens are the model's ``bos_id`` / ``eos_id`` / ``pad_id`` /
    ``unk_id`` (-1: none). Decoding drops control pieces (bos, eos, pad): that
    is sentencepiece's plain decode, not a choice made here.
    """

    kind = "sentencepiece"

    def __init__(self, path: str, processor: Any, user_defined: Sequence[int] | None = None) -> None:
        """``user_defined``: the ids of the model's user-defined pieces (see :func:`_user_defined`), when the caller
        has walked the model already; None reads them from the processor's own serialised model."""
        self._processor = processor
        if user_defined is None:
            user_defined = _user_defined(_model_pieces(processor.serialized_model_proto()) or [])
        size = processor.get_piece_size()
        pieces = processor.id_to_piece(list(range(size)))

        def special(token_id: int) -> tuple[int | None, str | None]:
            return (token_id, pieces[token_id]) if 0 <= token_id < size else (None, None)

        found = {role: special(getattr(processor, f"{role}_id")()) for role in ROLES}
        super().__init__(path, size, _specials(found), _byte_ids(enumerate(pieces)), frozenset(pieces[i] for i in user_defined))
        self._dummy_space = _adds_dummy_space(processor)

    def _encode_batch(self, texts: list[str]) -> list[list[int]]:
        return self._processor.encode(texts, add_bos=False, add_eos=False)

    def _decode(self, ids: list[int]) -> str:
        return self._processor.decode(ids)

    def _decode_batch(self, lists: list[list[int]]) -> list[str]:
        return list(self._processor.decode(lists))

    def _normalize(self, text: str) -> str:
        return _sentencepiece_normalize(self._processor, text, self._dummy_space)

    def _normalize_batch(self, texts: list[str]) -> list[str]:
        if not texts or not hasattr(self._processor, "normalize"):
            return [self._normalize(text) for text in texts]
        out = [t.replace(_SPACE, " ") for t in self._processor.normalize(texts)]
        return [t[1:] if self._dummy_space and t.startswith(" ") else t for t in out]

    def _piece(self, token_id: int) -> str:
        return self._processor.id_to_piece(token_id)

    def _pieces(self) -> dict[int, str]:
        return dict(enumerate(self._processor.id_to_piece(list(range(self.vocab_size)))))


class TokenizersTokenizer(Tokenizer):
    """A HuggingFace ``tokenizer.json``, through the ``tokenizers`` library alone.

    Special tokens, by precedence: those a ``special_tokens_map.json`` or
    ``tokenizer_config.json`` beside the file names; then the library's own:
    the model's unknown token, the post-processor's template (the special
    token before the sequence is bos, the one after it eos; RoBERTa's
    cls/sep), the padding's token; then the USUAL_SPECIALS strings the
    vocabulary has. Padding and truncation saved in the file are switched
    off, so a batch encodes like its texts one by one.
    """

    kind = "tokenizers"

    def __init__(self, path: str, backend: Any, spec: Mapping[str, Any], named: Mapping[str, str]) -> None:
        self._backend = backend
        vocab = backend.get_vocab(with_added_tokens=True)
        found: dict[str, str | None] = {**_library_specials(backend, spec), **named}
        for role, usual in USUAL_SPECIALS.items():
            if role not in found:
                found[role] = next((text for text in usual if text in vocab), None)
        specials = _specials({role: (vocab.get(text) if text else None, text) for role, text in found.items()})
        backend.no_padding()
        backend.no_truncation()
        size = max(max(vocab.values(), default=-1) + 1, backend.get_vocab_size(with_added_tokens=True))
        super().__init__(
            path, size, specials, _byte_ids((i, piece) for piece, i in vocab.items()), _added(backend.get_added_tokens_decoder())
        )

    def _encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [encoding.ids for encoding in self._backend.encode_batch(texts, add_special_tokens=False)]

    def _wrapped(self) -> tuple[int, int, int | None]:
        return _around(self._backend.encode("a", add_special_tokens=False).ids, self._backend.encode("a", add_special_tokens=True).ids)

    def _decode(self, ids: list[int]) -> str:
        return self._backend.decode(ids, skip_special_tokens=False)

    def _decode_batch(self, lists: list[list[int]]) -> list[str]:
        return list(self._backend.decode_batch(lists, skip_special_tokens=False))

    def _count_before(self, texts: list[str], cuts: list[int]) -> list[tuple[int, int]]:
        encodings = self._backend.encode_batch(texts, add_special_tokens=False)
        return [_counted(e, cut, len(text)) for e, cut, text in zip(encodings, cuts, texts)]

    def _normalize(self, text: str) -> str:
        return _pipeline_normalize(self._backend, text)

    def _piece(self, token_id: int) -> str:
        return self._backend.id_to_token(token_id) or ""

    def _pieces(self) -> dict[int, str]:
        return {i: piece for piece, i in self._backend.get_vocab(with_added_tokens=True).items()}


class TransformersTokenizer(Tokenizer):
    """A local HuggingFace tokenizer folder, through transformers' ``AutoTokenizer``.

    Special tokens are the tokenizer's own ``bos_token`` / ``bos_token_id``
    and so on. Decoding passes ``clean_up_tokenization_spaces=False``: the
    clean-up (" ." to ".") is for display and would break the round trip.
    """

    kind = "transformers"

    def __init__(self, path: str, tokenizer: Any) -> None:
        self._tokenizer = tokenizer
        vocab = tokenizer.get_vocab()
        found = {}
        for role in ROLES:
            text = getattr(tokenizer, f"{role}_token", None)
            found[role] = (getattr(tokenizer, f"{role}_token_id", None), None if text is None else str(text))
        size = max(max(vocab.values(), default=-1) + 1, len(tokenizer))
        added = _added(getattr(tokenizer, "added_tokens_decoder", None) or {})
        super().__init__(path, size, _specials(found), _byte_ids((i, piece) for piece, i in vocab.items()), added, _template(tokenizer))
        self.chat_template_file = _template_file(path, self.chat_template)
        self._template: BoundedTemplate | None = None

    def _encode_batch(self, texts: list[str]) -> list[list[int]]:
        encoded = self._tokenizer(texts, add_special_tokens=False, truncation=False, return_attention_mask=False, verbose=False)
        return [list(ids) for ids in encoded["input_ids"]]

    def _wrapped(self) -> tuple[int, int, int | None]:
        plain, wrapped = (self._tokenizer("a", add_special_tokens=specials, verbose=False)["input_ids"] for specials in (False, True))
        return _around(list(plain), list(wrapped))

    def _decode(self, ids: list[int]) -> str:
        return self._tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)

    def _decode_batch(self, lists: list[list[int]]) -> list[str]:
        return list(self._tokenizer.batch_decode(lists, skip_special_tokens=False, clean_up_tokenization_spaces=False))

    def _normalize(self, text: str) -> str:
        backend = getattr(self._tokenizer, "backend_tokenizer", None)
        if backend is not None:
            return _pipeline_normalize(backend, text)
        processor = getattr(self._tokenizer, "sp_model", None)
        if processor is not None:
            return _sentencepiece_normalize(processor, text, _adds_dummy_space(processor))
        return text

    def _piece(self, token_id: int) -> str:
        return self._tokenizer.convert_ids_to_tokens(token_id) or ""

    def _pieces(self) -> dict[int, str]:
        return {i: piece for piece, i in self._tokenizer.get_vocab().items()}

    def _render_chat(self, messages: Sequence[Mapping[str, str]]) -> str | None:
        if self.chat_template is None:
            return None
        (text,) = self._bounded().render_all([messages])
        if not isinstance(text, str):
            raise ValueError(f"the chat template of {self.path} fails on these messages: {text.reason}")
        return text

    def _render_chats(self, conversations: Sequence[Sequence[Mapping[str, str]]], tools: Sequence[Any] | None = None) -> list[str | Failed | None]:
        if self.chat_template is None:
            return [None] * len(conversations)
        return list(self._bounded().render_all(conversations, tools))

    def _bounded(self) -> BoundedTemplate:
        """The chat template as trainproof renders it: as transformers does, within bounds (see :mod:`.templates`)."""
        if self._template is None:
            from trainproof.tokenizer.templates import BoundedTemplate

            try:
                self._template = BoundedTemplate.of(self._tokenizer, self.chat_template or "")
            except RuntimeError as exc:  # a transformers too old or too new to say how it compiles templates
                raise InputError(self.path, f"its chat template cannot be rendered within bounds: {exc}") from None
        return self._template

    def _count_before(self, texts: list[str], cuts: list[int]) -> list[tuple[int, int]]:
        backend = getattr(self._tokenizer, "backend_tokenizer", None) if getattr(self._tokenizer, "is_fast", False) else None
        if backend is None:
            return super()._count_before(texts, cuts)
        # the fast tokenizer's own backend, as its __call__ uses it, without converting every offset to Python twice
        encodings = backend.encode_batch(texts, add_special_tokens=False)
        return [_counted(e, cut, len(text)) for e, cut, text in zip(encodings, cuts, texts)]


def _around(plain: list[int], wrapped: list[int]) -> tuple[int, int, int | None]:
    """(tokens before, tokens after, last id of ``wrapped``) for ``plain`` inside ``wrapped``: what a call with special
    tokens adds around it; nothing when ``wrapped`` does not hold ``plain`` whole (a library that changes the text's
    own tokens)."""
    for start in range(len(wrapped) - len(plain) + 1):
        if wrapped[start : start + len(plain)] == plain:
            return start, len(wrapped) - start - len(plain), wrapped[-1]
    return (0, 0, None)


CUT_LOOKAHEAD = 16
"""Characters past a cut searched for the token that holds it (whitespace a pre-tokenizer drops belongs to none)."""


def _counted(encoding: Any, cut: int, length: int) -> tuple[int, int]:
    """(tokens, tokens before the one holding character ``cut``) of a ``tokenizers`` Encoding: one lookup in the
    library, not a Python pass over every offset; the offsets only when no token holds the characters after the cut."""
    total = len(encoding)
    if cut >= length:
        return total, total
    for at in range(cut, min(cut + CUT_LOOKAHEAD, length)):
        token = encoding.char_to_token(at)
        if token is not None:
            return total, token
    return total, bisect.bisect_left([start for start, _ in encoding.offsets], cut)


def files_read(path: str | os.PathLike[str]) -> list[str]:
    """The files loading the tokenizer at ``path`` may read, which no output may overwrite: a folder's files (and the
    folder), or a file and the configurations beside it that a tokenizer.json's special tokens are read from (beside
    any file: which a file is, is decided by its content, which is not read here)."""
    shown = os.fsdecode(path)
    if os.path.isdir(shown):
        try:
            names = sorted(os.listdir(shown))
        except OSError:
            return [shown]
        return [file for name in names if os.path.isfile(file := os.path.join(shown, name))] + [shown]
    return [shown, *(os.path.join(os.path.dirname(shown), name) for name in _NAMING_FILES)]


def files_read_as(source: Any, why: str) -> list[tuple[str, str]]:
    """:func:`files_read` for the tokenizer at ``source`` (none for a tokenizer already loaded, or none given), each
    with ``why`` no output may overwrite it."""
    if not isinstance(source, (str, os.PathLike)):
        return []
    return [(file, why) for file in files_read(source)]


def load_tokenizer(path: str | os.PathLike[str]) -> Tokenizer:
    """The tokenizer at ``path`` (a file or a folder; see the module doc), or an InputError that says why not."""
    shown = os.fsdecode(path)
    try:
        info = os.stat(shown)
    except (FileNotFoundError, NotADirectoryError):
        raise InputError(shown, "does not exist") from None
    except (OSError, ValueError) as exc:
        raise InputError(shown, f"cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        return _load_folder(shown)
    if not stat.S_ISREG(info.st_mode):
        raise InputError(shown, "is neither a regular file nor a folder")
    return _load_file(shown, info.st_size)


# --- files ------------------------------------------------------------------------------------------------


def _load_file(path: str, size: int) -> Tokenizer:
    if size == 0:
        raise InputError(path, "is empty (0 bytes)")
    head = _read(path, 64)
    if path.lower().endswith(PICKLE_SUFFIXES) or (head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05")):
        raise InputError(path, _PICKLE)
    if size > MAX_FILE_BYTES:
        raise InputError(path, f"is {size / 2**20:,.0f} MiB, more than any tokenizer (at most {MAX_FILE_BYTES >> 20:,} MiB are read)")
    if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{") or path.lower().endswith(".json"):
        return _load_tokenizer_json(path, path)
    if _starts_like_model_proto(head) or path.lower().endswith(".model"):
        return _load_sentencepiece(path, path)
    raise InputError(path, f"is not a tokenizer trainproof reads ({_READS})")


def _load_tokenizer_json(file: str, shown: str) -> TokenizersTokenizer:
    try:
        text = _read(file).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(file, "is not UTF-8 text, so not a tokenizer.json") from None
    spec = load_json(file, text)
    if not isinstance(spec, dict) or not isinstance(spec.get("model"), dict):
        hint = ": give the folder that holds it" if os.path.basename(file) in _CONFIG_FILES else ""
        raise InputError(file, f'is JSON but not a tokenizer.json (a JSON object with a "model" object){hint}')
    named = _named_specials(os.path.dirname(file) or ".")
    tokenizers = _require("tokenizers")
    with guarded(file, "cannot be loaded"):
        try:
            backend = tokenizers.Tokenizer.from_str(text)
            return TokenizersTokenizer(shown, backend, spec, named)
        except Exception as exc:  # the Rust side raises a bare Exception
            raise InputError(file, f"is a tokenizer.json the tokenizers library cannot load: {said(exc)}") from None


def _load_sentencepiece(file: str, shown: str) -> SentencePieceTokenizer:
    data = _read(file)
    pieces = _model_pieces(data)
    if pieces is None:
        raise InputError(
            file, "is a truncated or corrupt sentencepiece model (its protobuf does not parse to the end, or lacks the normalizer spec)"
        )
    sentencepiece = _require("sentencepiece")
    try:  # the bytes already read and walked, not the file opened again
        processor = sentencepiece.SentencePieceProcessor(model_proto=data)
    except Exception as exc:  # RuntimeError or OSError, with sentencepiece's status text
        raise InputError(file, f"is not a sentencepiece model sentencepiece can load: {said(exc)}") from None
    try:
        return SentencePieceTokenizer(shown, processor, _user_defined(pieces))
    except UnicodeDecodeError:  # sentencepiece loads a piece whose text is not UTF-8, and fails when asked for it
        raise InputError(file, f"is a corrupt sentencepiece model: {_undecodable_piece(processor)}") from None


def _undecodable_piece(processor: Any) -> str:
    """Which piece of a sentencepiece model is not UTF-8 text (a byte of the model changed), as a clause."""
    for token_id in range(processor.get_piece_size()):
        try:
            processor.id_to_piece(token_id)
        except UnicodeDecodeError as exc:
            return f"piece {token_id} is not UTF-8 text ({exc.reason} at byte {exc.start + 1})"
    return "a piece is not UTF-8 text"


def _read(path: str, limit: int = -1, cap: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file at ``path`` (its first ``limit``, when given); an InputError when it is anything
    else or over ``cap`` bytes. It is opened without waiting (a FIFO's plain open blocks until a writer comes) and
    looked at before a byte is read (``/dev/zero`` never ends)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(path, f"cannot be read: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(path, f"is not a regular file ({special_kind(info.st_mode)}); trainproof reads a tokenizer's files only")
        if info.st_size > cap:
            raise InputError(path, _too_large(info.st_size, cap))
        try:
            data = handle.read(cap + 1 if limit < 0 else min(limit, cap + 1))
        except OSError as exc:
            raise InputError(path, f"cannot be read: {exc.strerror or exc}") from None
    if len(data) > cap:  # it grew since it was looked at
        raise InputError(path, _too_large(len(data), cap))
    return data


def _too_large(size: int, cap: int) -> str:
    return f"is {size_text(size)}, more than trainproof reads of such a file (at most {size_text(cap)})"


def _cap_of(name: str) -> int | None:
    """The most bytes a tokenizer library may read of the file ``name`` of a tokenizer folder; None for a file none
    reads (see TOKENIZER_FILE_SUFFIXES)."""
    lowered = name.lower()
    if lowered.startswith("chat_template.") or lowered.endswith(".jinja"):
        return MAX_TEMPLATE_FILE_BYTES
    if lowered.endswith(".json") and ("config" in lowered or lowered in ("special_tokens_map.json", "added_tokens.json")):
        return MAX_CONFIG_BYTES
    if lowered.endswith(TOKENIZER_FILE_SUFFIXES) or lowered.startswith(("vocab", "merges", "tokenizer", "spiece", "sentencepiece")):
        return MAX_FILE_BYTES
    return None


def _check_folder(path: str, names: Sequence[str]) -> None:
    """Before any library opens a file of the tokenizer folder ``path``: every entry (and every template of its
    TEMPLATE_FOLDER) is a folder or, after its links are followed, a regular file within its bound (:func:`_cap_of`).
    A FIFO would hang the library's open and a link to ``/dev/zero`` fill memory: each is an InputError naming the
    file. A link to nowhere is left to the library, which says the file is missing if it needs it."""
    for name in names:
        file = os.path.join(path, name)
        try:
            info = os.stat(file)
        except (OSError, ValueError):
            continue
        if stat.S_ISDIR(info.st_mode):
            if name == TEMPLATE_FOLDER:
                try:
                    inner = sorted(os.listdir(file))
                except OSError as exc:
                    raise InputError(file, f"cannot be listed: {exc.strerror or exc}") from None
                _check_folder(file, [entry for entry in inner if entry.endswith(".jinja")])
            continue
        if not stat.S_ISREG(info.st_mode):
            raise InputError(file, f"is not a regular file ({special_kind(info.st_mode)}); a tokenizer folder holds files, and a library would wait on it or read it without end")
        cap = _cap_of(name)
        if cap is not None and info.st_size > cap:
            raise InputError(file, _too_large(info.st_size, cap))


def _starts_like_model_proto(head: bytes) -> bool:
    """A ModelProto starts with its first piece: field 1 (a message), whose own first field 1 is the piece's text."""
    if head[:1] != b"\x0a":
        return False
    _, pos = _varint(head, 1)
    return pos is not None and head[pos : pos + 1] == b"\x0a"


def _model_pieces(data: bytes) -> list[bytes] | None:
    """The serialised pieces (field 1, in id order) of a whole ModelProto; None when ``data`` does not walk as one
    whole protobuf message with pieces and a normalizer spec (field 3).

    Protobuf writes fields in number order, so a model cut anywhere in its
    pieces or trainer spec ends mid-field or lacks field 3.
    """
    pieces: list[bytes] = []
    seen: set[int] = set()
    try:
        for field, value in _fields(data):
            seen.add(field)
            if field == 1 and isinstance(value, bytes):
                pieces.append(value)
    except _Unwalkable:
        return None
    return pieces if {1, 3} <= seen else None


class _Unwalkable(Exception):
    """The bytes end inside a field, or hold a field number 0 or a wire type protobuf does not have."""


def _fields(message: bytes) -> Iterator[tuple[int, int | bytes | None]]:
    """Each field of a protobuf message: its number and value (an int for a varint, the bytes of a length-delimited
    field, None for a fixed-width one), raising _Unwalkable where the bytes do not walk as a message."""
    pos = 0
    while pos < len(message):
        tag, after = _varint(message, pos)
        if after is None or tag >> 3 == 0:
            raise _Unwalkable
        wire = tag & 7
        value: int | bytes | None = None
        end: int | None = after
        if wire == 0:
            number, end = _varint(message, after)
            value = number
        elif wire == 2:
            length, start = _varint(message, after)
            if start is not None:
                value, end = message[start : start + length], start + length
            else:
                end = None
        elif wire in (1, 5):
            end = after + (8 if wire == 1 else 4)
        else:
            raise _Unwalkable
        if end is None or end > len(message):
            raise _Unwalkable
        pos = end
        yield tag >> 3, value


def _varint(data: bytes, pos: int) -> tuple[int, int | None]:
    """A protobuf varint at ``pos`` and the position after it; (0, None) when the bytes end inside it."""
    value = shift = 0
    while pos < len(data) and shift < 64:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    return 0, None


# --- folders ----------------------------------------------------------------------------------------------


def _load_folder(path: str) -> Tokenizer:
    try:
        names = sorted(os.listdir(path))
    except OSError as exc:
        raise InputError(path, f"cannot be listed: {exc.strerror or exc}") from None
    _check_folder(path, names)
    config_path = os.path.join(path, "tokenizer_config.json")
    config = _json_object(config_path) if "tokenizer_config.json" in names else None
    if any(name.endswith(".py") for name in names) or (config is not None and "auto_map" in config) or _model_maps_tokenizer(path, names):
        raise InputError(path, _CODE)
    if config is not None or "chat_template.jinja" in names or "chat_template.json" in names:
        return _load_transformers(path)
    if "tokenizer.json" in names:
        return _load_tokenizer_json(os.path.join(path, "tokenizer.json"), path)
    models = [name for name in names if name.endswith(".model")]
    if len(models) > 1:
        raise InputError(path, f"holds several sentencepiece models ({', '.join(models)}): give one of them")
    if models:
        return _load_sentencepiece(os.path.join(path, models[0]), path)
    raise InputError(path, "holds no tokenizer: no tokenizer.json, tokenizer_config.json or sentencepiece .model")


def _model_maps_tokenizer(path: str, names: list[str]) -> bool:
    """Whether the folder's config.json maps AutoTokenizer to code of its own (its auto_map for a model alone does not matter here)."""
    if "config.json" not in names:
        return False
    auto_map = _json_object(os.path.join(path, "config.json")).get("auto_map")
    return isinstance(auto_map, dict) and "AutoTokenizer" in auto_map


def _load_transformers(path: str) -> TransformersTokenizer:
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        import transformers
    except ImportError:
        raise MissingDependencyError("transformers", "hf", "trainproof", use="to read a HuggingFace tokenizer folder") from None
    with guarded(path, "cannot be loaded"):
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True, trust_remote_code=False)
            return TransformersTokenizer(path, tokenizer)
        except Exception as exc:  # OSError, ValueError, KeyError, ImportError for a converter's package...: all say "cannot load"
            raise InputError(path, f"transformers cannot load this tokenizer folder: {said(exc)}") from None


def _json_object(path: str) -> dict[str, Any]:
    try:
        text = _read(path, cap=MAX_CONFIG_BYTES).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(path, "is not UTF-8 text") from None
    value = load_json(path, text)
    if not isinstance(value, dict):
        raise InputError(path, "is not a JSON object")
    return value


def _named_specials(folder: str) -> dict[str, str]:
    """The special tokens HuggingFace configuration files in ``folder`` name; special_tokens_map.json wins, as in transformers."""
    named: dict[str, str] = {}
    for name in _NAMING_FILES:
        file = os.path.join(folder, name)
        if not os.path.exists(file):  # missing, or a link to nowhere: nothing names a token there
            continue
        config = _json_object(file)  # a FIFO or a device is refused, not waited on
        for role in ROLES:
            text = _token_text(config.get(f"{role}_token"))
            if text is not None:
                named[role] = text
    return named


def _token_text(value: object) -> str | None:
    """A token as configuration files write it: a string, or an AddedToken object with its ``content``."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


# --- what the libraries know ------------------------------------------------------------------------------


def _require(package: str) -> Any:
    try:
        return __import__(package)
    except ImportError:
        raise MissingDependencyError(package, "tokenizer", "trainproof", use=_READING[package]) from None


_READING = {"tokenizers": "to read a tokenizer.json", "sentencepiece": "to read a sentencepiece model"}


def _specials(found: Mapping[str, tuple[int | None, str | None]]) -> Specials:
    fields: dict[str, Any] = {}
    for role in ROLES:
        fields[role], fields[f"{role}_text"] = found.get(role, (None, None))
    return Specials(**fields)


def _byte_ids(pairs: Iterable[tuple[int, str]]) -> frozenset[int]:
    return frozenset(token_id for token_id, piece in pairs if _BYTE_PIECE.fullmatch(piece))


def _added(decoder: Mapping[int, Any]) -> frozenset[str]:
    """The text of each added token (``tokenizers``' AddedToken, or a plain string)."""
    return frozenset(text for token in decoder.values() if (text := str(getattr(token, "content", token))))


_USER_DEFINED_TYPE = b"\x18\x04"
"""A sentencepiece piece's field 3 (type) set to USER_DEFINED (4), as its ModelProto serialises it."""


def _user_defined(pieces: Sequence[bytes]) -> list[int]:
    """The ids of a sentencepiece model's user-defined pieces (the library has no call for it), from its serialised
    pieces: a piece's own field 3 is its type. Only a piece holding the type's bytes is parsed."""
    return [i for i, piece in enumerate(pieces) if _USER_DEFINED_TYPE in piece and _type_of(piece) == 4]


def _type_of(piece: bytes) -> int | None:
    """Field 3 (the type) of a serialised sentencepiece piece; None when absent or the bytes do not walk."""
    try:
        return next((value for field, value in _fields(piece) if field == 3 and isinstance(value, int)), None)
    except _Unwalkable:
        return None


def _library_specials(backend: Any, spec: Mapping[str, Any]) -> dict[str, str]:
    """The special tokens a tokenizer.json itself implies: its model's unknown token, post-processor and padding."""
    found = _post_processor_specials(spec.get("post_processor"))
    model = spec["model"]
    if isinstance(model.get("unk_token"), str):
        found["unk"] = model["unk_token"]
    elif isinstance(model.get("unk_id"), int):  # Unigram names its unknown token by id
        text = backend.id_to_token(model["unk_id"])
        if text is not None:
            found["unk"] = text
    padding = spec.get("padding")
    if isinstance(padding, dict) and isinstance(padding.get("pad_token"), str):
        found["pad"] = padding["pad_token"]
    return found


def _post_processor_specials(processor: object) -> dict[str, str]:
    """bos and eos as a post-processor adds them: the special token before the single sequence and the one after it."""
    if not isinstance(processor, dict):
        return {}
    kind = processor.get("type")
    if kind == "Sequence":
        found: dict[str, str] = {}
        for inner in processor.get("processors") or []:
            found.update(_post_processor_specials(inner))
        return found
    if kind == "RobertaProcessing":
        cls, sep = processor.get("cls"), processor.get("sep")
        pairs = {"bos": cls, "eos": sep}
        return {role: pair[0] for role, pair in pairs.items() if isinstance(pair, list) and pair and isinstance(pair[0], str)}
    if kind != "TemplateProcessing":
        return {}
    tokens = processor.get("special_tokens") or {}
    before: list[str] = []
    after: list[str] = []
    sequence_seen = False
    for item in processor.get("single") or []:
        if not isinstance(item, dict):
            continue
        if "Sequence" in item:
            sequence_seen = True
        elif isinstance(item.get("SpecialToken"), dict):
            key = item["SpecialToken"].get("id")
            texts = (tokens.get(key) or {}).get("tokens") or [key]
            if len(texts) == 1 and isinstance(texts[0], str):
                (after if sequence_seen else before).append(texts[0])
    found = {}
    if before:
        found["bos"] = before[0]
    if after:
        found["eos"] = after[-1]
    return found


def _pipeline_normalize(backend: Any, text: str) -> str:
    """A ``tokenizers`` pipeline's text as decoding gives it back: normaliser, then pre-tokenizer, then decoder.

    The decoder undoes what the pre-tokenizer did (Metaspace's "▁" and its
    prefix space, ByteLevel's byte alphabet), which the normaliser alone
    does not show. Without a decoder the library joins tokens with spaces.
    """
    if not text:
        return ""
    if backend.normalizer is not None:
        text = backend.normalizer.normalize_str(text)
    pieces = [piece for piece, _ in backend.pre_tokenizer.pre_tokenize_str(text)] if backend.pre_tokenizer is not None else [text]
    return backend.decoder.decode(pieces) if backend.decoder is not None else " ".join(pieces)


def _adds_dummy_space(processor: Any) -> bool:
    """Whether the model adds a dummy space to every text (``add_dummy_prefix``), which decoding removes from the front.

    The space is added in front, or at the end with
    ``treat_whitespace_as_suffix``; either way sentencepiece's decoder drops
    one leading space and nothing at the end.
    """
    return hasattr(processor, "normalize") and _SPACE in processor.normalize("a")


def _sentencepiece_normalize(processor: Any, text: str, dummy_space: bool) -> str:
    if not hasattr(processor, "normalize"):  # sentencepiece < 0.2: the default nmt_nfkc rule, approximately
        return " ".join(unicodedata.normalize("NFKC", text).split())
    normalized = processor.normalize(text).replace(_SPACE, " ")
    return normalized[1:] if dummy_space and normalized.startswith(" ") else normalized


def _template_file(folder: str, template: str | None) -> str | None:
    """The file of ``folder`` a chat template was read from: the one holding its text, looked for where transformers
    reads templates (a ``chat_template.jinja``, which newer versions prefer, the ``chat_template`` of a
    ``chat_template.json`` or a ``tokenizer_config.json``); the folder when none does. None without a template."""
    if template is None:
        return None
    jinja = os.path.join(folder, "chat_template.jinja")
    if os.path.isfile(jinja) and _text_lines(_read(jinja, cap=MAX_TEMPLATE_FILE_BYTES)) == template:
        return jinja
    for name in ("chat_template.json", "tokenizer_config.json"):
        config = os.path.join(folder, name)
        if os.path.isfile(config) and template in _templates_in(_json_object(config).get("chat_template")):
            return config
    return folder


def template_beside(tokenizer: Tokenizer) -> str | None:
    """A chat template file beside a tokenizer loaded from a file (a tokenizer.json, a .model), whose library does not
    read it: the folder, loaded with transformers, would apply it. None when there is none, or the tokenizer was
    loaded from a folder (one holding a template is loaded with transformers)."""
    if tokenizer.chat_template is not None or not os.path.isfile(tokenizer.path):
        return None
    folder = os.path.dirname(tokenizer.path) or "."
    jinja = os.path.join(folder, "chat_template.jinja")
    if os.path.isfile(jinja):
        return jinja
    config = os.path.join(folder, "tokenizer_config.json")
    try:
        return config if os.path.isfile(config) and _templates_in(_json_object(config).get("chat_template")) else None
    except InputError:  # a configuration that cannot be read is no template, here where nothing else needs it
        return None


def _text_lines(data: bytes) -> str:
    """A template file's text as transformers reads it (``open`` in text mode: any line ending is "\\n")."""
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def _templates_in(value: object) -> list[str]:
    """The templates a configuration's ``chat_template`` holds: a text, or a list of ``{"name", "template"}``."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item["template"] for item in value if isinstance(item, dict) and isinstance(item.get("template"), str)]
    return []


def _template(tokenizer: Any) -> str | None:
    """The chat template as text; of several named ones (a dict), the one named "default"."""
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, dict):
        template = template.get("default")
    return template if isinstance(template, str) and template else None
