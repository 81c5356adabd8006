"""Tokenizers trained once per test session: tests must copy one before breaking it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.tokenizer import build

BUILDERS: dict[str, tuple[Callable[..., Path], tuple[str, ...]]] = {
    "sentencepiece": (build.sentencepiece_model, ("sentencepiece",)),
    "bpe": (build.bpe_tokenizer_json, ("tokenizers",)),
    "hf": (build.hf_folder, ("tokenizers", "transformers")),
}
"""Builder name -> the builder and the packages it needs (its tests skip without them)."""


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """``built(name, **options)``: the path of that tokenizer, trained at its first request."""
    cache: dict[tuple[str, tuple[tuple[str, object], ...]], Path] = {}

    def get(name: str, **options: object) -> Path:
        key = (name, tuple(sorted(options.items())))
        if key not in cache:
            builder, packages = BUILDERS[name]
            for package in packages:
                pytest.importorskip(package)
            cache[key] = builder(tmp_path_factory.mktemp(name), **options)
        return cache[key]

    return get
