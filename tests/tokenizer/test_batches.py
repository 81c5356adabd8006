"""A batch call that fails on some items: the others answered, the failing ones named, in few calls."""

from __future__ import annotations

import pytest

from trainproof.io.errors import InputError
from trainproof.tokenizer.batches import Failed, each


class Library:
    """A batch encoder that refuses a whole batch holding an item it cannot take, as sentencepiece does."""

    def __init__(self) -> None:
        self.calls = 0

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        self.calls += 1
        if any("bad" in text for text in texts):
            raise TypeError("List elements must be str or bytes")
        return [[len(text)] for text in texts]


def test_only_the_items_that_fail_alone_are_failed_in_few_calls():
    library = Library()
    texts = [f"text {i}" for i in range(1024)]
    texts[700] = "bad one"
    got = each(library.encode_batch, texts)
    assert got[700] == Failed("TypeError: List elements must be str or bytes")
    assert [ids for k, ids in enumerate(got) if k != 700] == [[len(t)] for k, t in enumerate(texts) if k != 700]
    assert library.calls <= 2 * 10 + 1  # two calls per halving of 1,024 items, not one per item


def test_a_lone_surrogate_is_said_as_such():
    def refuses_surrogates(texts: list[str]) -> list[list[int]]:
        if not all(text.isascii() for text in texts):
            raise TypeError("List elements must be str or bytes")
        return [[1] for _ in texts]

    got = each(refuses_surrogates, ["fine", "hello \ud800 world"])
    assert got == [[1], Failed("'\\ud800' is a lone UTF-16 surrogate, not Unicode text")]


def test_items_holding_a_lone_surrogate_cost_no_call():
    """No library encodes a lone surrogate: such items are failed up front, as a call on them alone would fail them,
    and a file of nothing else costs no call at all."""
    library = Library()
    texts = ["bad \ud800 one", "text", ("fine", "bad \udc00 two"), "bad"]
    assert each(library.encode_batch, texts) == [
        Failed("'\\ud800' is a lone UTF-16 surrogate, not Unicode text"),
        [4],
        Failed("'\\udc00' is a lone UTF-16 surrogate, not Unicode text"),
        Failed("TypeError: List elements must be str or bytes"),
    ]
    assert library.calls == 3  # the two items left, then each alone
    library.calls = 0
    assert each(library.encode_batch, [f"line {i} \ud800" for i in range(1000)]) == [Failed("'\\ud800' is a lone UTF-16 surrogate, not Unicode text")] * 1000
    assert library.calls == 0


def test_items_of_several_texts_are_screened_and_called_at_once():
    """Pairs of texts (a conversation's messages) cannot be screened by joining them all: each is screened, then
    one call takes them all."""
    library = Library()
    assert each(library.encode_batch, [("a", "b"), ("c", "d", "e")]) == [[2], [3]]
    assert library.calls == 1


def test_nothing_to_call_on_is_no_call():
    assert each(lambda items: 1 / 0, []) == []


def test_a_broken_tokenizer_is_not_a_failing_item():
    def panics(texts):
        raise InputError("tok.json", "cannot be used: the tokenizers library panicked (boom)")

    with pytest.raises(InputError):
        each(panics, ["a", "b"])
