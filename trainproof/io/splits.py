"""A dataset's splits as the Hugging Face ``datasets`` library infers them from file paths, and the order leaks are
judged in: shared by the speech layouts (:mod:`trainproof.data.layouts.hub`) and fine-tuning sets
(:mod:`trainproof.text.columns`).

A file's split is the first of its file and folder names' words (file name first, then its folders from the nearest
up) that names a split (``train``, ``validation``/``valid``/``val``/``dev``, ``test``/``eval``), else the part of its
file name before ``-00000-of-00004``, else ``train``. Splits are ordered train, validation, test, then any other by
name: a row shared by two splits is named in the later one, the split it leaked into.
"""

from __future__ import annotations

import os
import re

SPLIT_WORDS = {
    "train": "train", "training": "train",
    "validation": "validation", "valid": "validation", "val": "validation", "dev": "validation",
    "test": "test", "testing": "test", "eval": "test", "evaluation": "test",
}  # fmt: skip
"""The words of a shard's path that name its split, as ``datasets`` infers splits, and the split each names."""

SPLIT_ORDER = {"train": 0, "validation": 1, "test": 2}

_WORDS = re.compile(r"[^A-Za-z0-9]+")
_SHARD_SUFFIX = re.compile(r"^(?P<split>.+?)-\d{5}-of-\d{5}$")


def split_of(relative: str) -> str:
    """The split ``datasets`` infers for a file at ``relative`` (to the dataset's folder): see the module doc."""
    parts = relative.replace(os.sep, "/").split("/")
    stem = parts[-1].split(".")[0]
    for part in (stem, *reversed(parts[:-1])):
        for word in _WORDS.split(part.lower()):
            if word in SPLIT_WORDS:
                return SPLIT_WORDS[word]
    named = _SHARD_SUFFIX.match(stem)
    return named.group("split") if named else "train"


def split_rank(split: str) -> tuple[int, str]:
    """Where a split comes in the order leaks are judged in: train, validation, test, then others by name."""
    return (SPLIT_ORDER.get(split, len(SPLIT_ORDER)), split)
