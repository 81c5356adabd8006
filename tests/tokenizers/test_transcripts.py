"""A plain text file of transcripts: each kept line at its own line number, whatever blocks it was read in."""

from __future__ import annotations

import pytest

from trainproof.errors import InputError
from trainproof.readers import base
from trainproof.tokenizer.transcripts import read_transcripts


def test_blank_lines_are_skipped_and_the_rest_keep_their_numbers(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes("\ufeffone\r\n\r\n  \ntwo\n\t\nthree".encode())
    text = read_transcripts(path)
    assert (text.kind, text.lines, text.texts) == ("text", (1, 4, 6), ("one", "two", "three"))


def test_a_first_line_that_is_only_a_bom_is_skipped(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("\ufeff\nfirst words\n", encoding="utf-8")
    assert read_transcripts(path).lines == (2,)


def test_lines_read_over_many_blocks_keep_their_numbers(tmp_path, monkeypatch):
    monkeypatch.setattr(base, "BLOCK_BYTES", 64)  # a block holds a few lines: the numbering runs on across blocks
    lines = [f"line {i} " + "word " * (i % 7) + "end" if i % 5 else "" for i in range(1, 301)]
    path = tmp_path / "t.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    text = read_transcripts(path)
    expected = [(number, line) for number, line in enumerate(lines, 1) if line]
    assert list(zip(text.lines, text.texts)) == expected
    assert [(n, t) for n, t, _ in base.iter_lines(path) if t] == expected


def test_a_file_of_whitespace_is_empty(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text(" \n\n\t\n", encoding="utf-8")
    with pytest.raises(InputError, match="is empty"):
        read_transcripts(path)
