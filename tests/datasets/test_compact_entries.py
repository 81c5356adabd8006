"""A large manifest's entries held compactly (text as Arrow arrays, lines as an int64 array): the same entries, and
the same report, as the lists a reader made."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from tests.datasets.speech import FAULTS, Corpus, clean_corpus, has_espeak
from trainproof.cli import main
from trainproof.data import model
from trainproof.data.manifest import read_manifest
from trainproof.data.model import ENTRY_FIELDS, CodedColumn, Entries, Entry, FloatColumn, LineColumn, TextColumn, entry_column

pytest.importorskip("pyarrow")

ROWS = (
    Entry(1, "a", "/d/a.wav", "a.wav", "one", "m", 1.5, None, "s"),
    Entry(2, "b", "/d/b.wav", "b.wav", None, "m"),
    Entry(30_000, "c", "/d/c.wav", "c.wav", "trois \u00e9t\u00e9", "m", None, 0.25, "s"),
)


def _columns(rows=ROWS) -> dict[str, list[object]]:
    return {name: [getattr(entry, name) for entry in rows] for name in ENTRY_FIELDS}


@pytest.fixture
def compact_all(monkeypatch):
    monkeypatch.setattr(model, "COMPACT_FROM", 0)


def test_compact_columns_are_the_same_sequence_of_entries(compact_all):
    entries = Entries(columns=_columns())
    assert isinstance(entries.column("text"), TextColumn)
    assert isinstance(entries.column("line"), LineColumn)
    assert isinstance(entries.column("duration"), FloatColumn) and isinstance(entries.column("offset"), FloatColumn)
    assert isinstance(entries.column("speaker"), CodedColumn) and isinstance(entries.column("manifest"), CodedColumn)
    assert entries == ROWS and list(entries) == list(ROWS)
    assert (entries[0], entries[-1], entries[1:], entries[::2]) == (ROWS[0], ROWS[-1], ROWS[1:], ROWS[::2])
    with pytest.raises(IndexError):
        entries[3]
    assert pickle.loads(pickle.dumps(entries)) == ROWS
    for name in ENTRY_FIELDS:
        column = entries.column(name)
        assert list(column) == list(entry_column(ROWS, name))
        assert [column[i] for i in range(-3, 3)] == [getattr(ROWS[i], name) for i in range(-3, 3)]
        assert column[1:] == [getattr(entry, name) for entry in ROWS[1:]]
    assert all(type(line) is int for line in entries.column("line"))


def test_equal_columns_share_one_array_and_shared_text_stays_one_string(compact_all):
    columns = _columns()
    columns["audio"] = list(columns["listed"])  # equal, not the same strings: one array all the same
    columns["manifest"] = ["/data/train.json" + "" for _ in ROWS]
    entries = Entries(columns=columns)
    assert entries.column("id") is not entries.column("listed")
    assert entries.column("audio") is entries.column("listed")
    assert len({id(path) for path in entries.column("manifest")}) == 1


@pytest.mark.parametrize(
    "field, value",
    [("text", "half a pair \ud800"), ("id", 7), ("line", "12")],
    ids=["lone-surrogate", "int-id", "text-line"],
)
def test_a_column_arrow_cannot_hold_as_its_type_is_kept_as_it_is(compact_all, field, value):
    rows = (ROWS[0], Entry.of_values(**{**ROWS[1].__dict__, field: value}))
    entries = Entries(columns=_columns(rows))
    assert type(entries.column(field)) is list
    assert entries == rows
    assert entries.column("listed")[1] == "b.wav"


@pytest.mark.parametrize(
    "durations, held",
    [((None, None, None), CodedColumn), ((1.5, 2, None), list), ((1.5, float("nan"), None), list), ((0.0, -1.0, 1e300), FloatColumn)],
    ids=["none-claimed", "an-int", "a-nan", "floats"],
)
def test_claimed_numbers_are_held_as_floats_only_when_they_read_back_as_they_were(compact_all, durations, held):
    """None is NaN in a FloatColumn: a column holding NaN itself, or an int, stays the list it was."""
    rows = tuple(Entry.of_values(**{**entry.__dict__, "duration": duration}) for entry, duration in zip(ROWS, durations))
    column = Entries(columns=_columns(rows)).column("duration")
    assert type(column) is held
    assert [type(value) for value in column] == [type(value) for value in durations]
    assert [repr(value) for value in column] == [repr(value) for value in durations]


def test_small_manifests_keep_their_lists():
    assert type(Entries(columns=_columns()).column("text")) is list


# --- the same report ----------------------------------------------------------------------------------------------

FAULTS_COMPARED = (
    "clipped", "missing_file", "not_audio", "duplicate_audio", "conflicting_text", "empty_transcript",
    "unnormalized", "invisible_char", "other_script", "duplicate_transcript", "duration_claim", "duplicate_id",
)  # fmt: skip


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> Corpus:
    return clean_corpus(tmp_path_factory.mktemp("compact"), n=12, layout="nemo", espeak=has_espeak())


def _report(path: Path | str, capsys) -> str:
    code = main(["data", str(path), "--json", "--no-cache", "--jobs", "1"])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return out


@pytest.mark.parametrize("fault", FAULTS_COMPARED)
def test_a_corpus_read_compactly_gets_the_report_it_gets_from_lists(clean, tmp_path, capsys, monkeypatch, fault):
    corpus = clean.copy(tmp_path)
    FAULTS[fault](corpus)
    as_lists = _report(corpus.path, capsys)
    monkeypatch.setattr(model, "COMPACT_FROM", 0)
    entries = read_manifest(corpus.path).entries
    read_as_columns = entries._rows is None  # a manifest the line reading takes (a repeated id, a bad line) has no columns
    assert isinstance(entries.column("text"), TextColumn) is read_as_columns
    assert _report(corpus.path, capsys) == as_lists
    assert json.loads(as_lists)["subjects"][0]["findings"]


def test_a_clean_manifest_is_read_as_columns_and_held_compactly(clean, monkeypatch):
    monkeypatch.setattr(model, "COMPACT_FROM", 0)
    entries = read_manifest(clean.path).entries
    assert isinstance(entries.column("text"), TextColumn)
    assert isinstance(entries.column("line"), LineColumn)


def test_a_lone_surrogate_transcript_is_judged_alike_read_compactly_or_not(clean, tmp_path, capsys, monkeypatch):
    corpus = clean.copy(tmp_path)
    lines = corpus.path.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[3])
    lines[3] = json.dumps({**record, "text": record["text"] + " \\ud800"}).replace("\\\\ud800", "\\ud800")
    corpus.path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    as_lists = _report(corpus.path, capsys)
    monkeypatch.setattr(model, "COMPACT_FROM", 0)
    assert type(read_manifest(corpus.path).entries.column("text")) is list
    assert _report(corpus.path, capsys) == as_lists
    assert "U+D800" in as_lists


# --- a manifest larger than one block ---------------------------------------------------------------------------


def _nemo_lines(count: int) -> list[dict]:
    return [
        {"audio_filepath": f"clips/{i}.wav" if i % 3 else f"/abs/{i}.wav", "text": f"sentence number {i} caf\u00e9",
         "duration": i % 7 + (0.5 if i % 2 else 0), "speaker": ["", "ann", "bo"][i % 3], "id": f"u{i}" if i % 5 else ""}
        for i in range(count)
    ]  # fmt: skip


@pytest.mark.parametrize("colliding", [False, True], ids=["", "every-hash-alike"])
@pytest.mark.parametrize("duplicate", [False, True], ids=["plain", "an-id-repeated-blocks-apart"])
def test_a_manifest_read_a_block_at_a_time_is_what_the_line_reading_gives(tmp_path, monkeypatch, duplicate, colliding):
    """Blocks of 1 KiB of whole lines: relative paths resolved block by block, ids, speakers, whole and fractional
    durations; an id of the first block repeated in the last sends the file to the line reading, which says so. Ids
    are told apart by their hashes, and compared exactly where hashes are alike: a hash every id shares changes
    nothing."""
    from trainproof.data.layouts import nemo

    if colliding:
        monkeypatch.setattr(nemo, "hash", lambda value: 7, raising=False)

    records = _nemo_lines(300)
    if duplicate:
        records[-1]["id"] = records[1]["id"]
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    (tmp_path / "clips").mkdir()
    (tmp_path / "clips" / "1.wav").write_bytes(b"")  # found from the working directory; the rest beside the manifest
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(nemo, "COLUMNAR_MAX_BYTES", 1024)
    taken = []
    blockwise = nemo._read_nemo_blocks
    monkeypatch.setattr(nemo, "_read_nemo_blocks", lambda *a: blockwise(*a) and not taken.append(True))
    quick = read_manifest(path)
    monkeypatch.setattr(nemo, "_read_nemo_columns", lambda *a: False)
    lined = read_manifest(path)
    assert (quick.entries, quick.problems, quick.notes) == (lined.entries, lined.problems, lined.notes)
    assert bool(taken) is not duplicate
    if not duplicate:
        assert isinstance(quick.entries.column("text"), TextColumn)
        assert quick.entries.column("text").arrow.num_chunks > 10
    else:
        assert any(p.kind == "duplicate-id" for p in lined.problems)


def test_a_line_longer_than_a_block_sends_the_manifest_to_the_line_reading(tmp_path, monkeypatch):
    from trainproof.data.layouts import nemo

    records = _nemo_lines(20)
    records[12]["text"] = "long " * 400
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    monkeypatch.setattr(nemo, "COLUMNAR_MAX_BYTES", 1024)
    manifest = read_manifest(path)
    assert manifest.entries._rows is not None  # read line by line
    assert len(manifest.entries) == 20 and manifest.entries[12].text == records[12]["text"]


def test_values_taken_from_a_chunked_text_column_are_those_at_the_positions():
    """TextColumn.take gives the values at any positions, in the order asked, repeated or not, from a chunked array
    (a NeMo reader's, a block a chunk) without joining its chunks first: empty chunks, one chunk, none asked for."""
    import random

    import numpy as np
    import pyarrow as pa

    from trainproof.data.model import TextColumn

    rng = random.Random(7)
    for chunks in ([["a", "b"], ["c"], ["d", None, "f"]], [["x"]], [[], ["p", "q"], []], [["é", "日本"], ["\U0001f600"]]):
        column = TextColumn(pa.chunked_array(chunks, type=pa.large_string()))
        flat = [value for chunk in chunks for value in chunk]
        for _ in range(40):
            at = np.array([rng.randrange(len(flat)) for _ in range(rng.randrange(0, 9))], dtype=np.int64)
            assert column.take(at).to_pylist() == [flat[i] for i in at], (chunks, at)
    plain = TextColumn(pa.array(["u", "v", "w"], type=pa.large_string()))
    assert plain.take(np.array([2, 0, 2])).to_pylist() == ["w", "u", "w"]
