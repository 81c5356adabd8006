"""Records as packed bytes and as columns: what goes in comes back, whatever the values."""

from __future__ import annotations

import math
import pickle
from dataclasses import astuple, replace

import numpy as np
import pytest

from trainproof.data.model import ClipRecord, CodedColumn
from trainproof.data.records import SIZE, ClipRecords, overrides, pack, unpack, unpack_many

PLAIN = ClipRecord("a.wav", size=10, format="WAV", subtype="PCM_16", sample_rate=22050, channels=1, frames=33075, duration_s=1.5,
                   peak=0.7, level_db=-20.5, first_frame_db=-math.inf, audio_hash="0123456789abcdef" * 2)  # fmt: skip
ODD = [
    ClipRecord("b.wav", error="the file does not exist", error_kind="missing"),
    ClipRecord("c.wav", dc_offset=math.nan, peak=math.inf, extra={"frames_read": 3, "x": [1, -math.inf]}),
    ClipRecord("d.wav", format="ÄIFF", subtype="A_SUBTYPE_NAME_LONGER_THAN_ITS_SLOT", error="bad byte \udcff"),
    ClipRecord("e.wav", size=2**70, frames=-(2**64), error_kind=""),
    ClipRecord("f.wav", format="WA\x00V", audio_hash="x" * 33),
]


def same(a: ClipRecord, b: ClipRecord) -> bool:
    """Equal field by field, NaN equal to NaN (repr compares them as text)."""
    return repr(astuple(a)) == repr(astuple(b)) and a.audio == b.audio


@pytest.mark.parametrize("record", [PLAIN, *ODD], ids=lambda r: r.audio)
def test_a_packed_record_comes_back_as_it_went(record):
    packed, texts = pack(record)
    assert len(packed) == SIZE
    assert same(unpack(record.audio, packed, texts), record)


def test_a_plain_record_needs_no_texts():
    """What every decoded clip holds fits the bytes: no JSON to write or parse on the warm path."""
    assert pack(PLAIN)[1] is None


def test_records_as_columns_come_back_as_records_in_order():
    records = [PLAIN, *ODD]
    columns = ClipRecords.of(records)
    assert len(columns) == len(records)
    assert all(same(a, b) for a, b in zip(columns, records))
    assert same(columns[-1], records[-1])
    assert [r.audio for r in columns[1:3]] == ["b.wav", "c.wav"]
    with pytest.raises(IndexError):
        columns[len(records)]
    assert ClipRecords.of([PLAIN, ODD[0]]) == [PLAIN, ODD[0]]  # equals the list of the same records (NaN, as ever, equals nothing)
    assert ClipRecords.of([PLAIN, ODD[0]]) != [ODD[0], PLAIN]
    assert columns.column("size").dtype == object  # 2**70 does not fit int64: the column holds objects
    assert columns.column("sample_rate").dtype == np.int64
    assert columns.column("duration_s").dtype == np.float64
    assert columns.column("error_kind").tolist() == [None, "missing", None, None, "", None]


def test_packed_and_object_records_fill_one_table_in_their_rows():
    builder = ClipRecords.builder(4)
    packs = [pack(r) for r in (PLAIN, ODD[1])]
    builder.put_packed([3, 0], ["x.wav", "y.wav"], unpack_many([p for p, _ in packs]), [None if t is None else overrides(t) for _, t in packs])
    builder.put([1, 2], [ODD[0], ODD[2]])
    built = builder.build()
    assert same(built[3], ClipRecord("x.wav", **{k: v for k, v in PLAIN.__dict__.items() if k != "audio"}))
    assert built[0].extra == ODD[1].extra
    assert math.isnan(built[0].dc_offset)
    assert built[0].audio == "y.wav"
    assert same(built[1], ODD[0])
    assert same(built[2], ODD[2])
    assert built[3].extra is not built[1].extra  # each row its own dict


def test_a_block_of_packed_records_comes_back_as_they_went():
    """The decoder a run uses (a block at once, texts grouped by field) on every odd record together."""
    records = [PLAIN, *ODD, PLAIN, ODD[1]]
    packs = [pack(r) for r in records]
    builder = ClipRecords.builder(len(records))
    builder.put_packed(range(len(records)), [r.audio for r in records], unpack_many([p for p, _ in packs]),
                       [None if t is None else overrides(t) for _, t in packs])  # fmt: skip
    assert all(same(a, b) for a, b in zip(builder.build(), records))


def test_records_as_columns_pickle():
    columns = ClipRecords.of([PLAIN, *ODD])
    assert all(same(a, b) for a, b in zip(pickle.loads(pickle.dumps(columns)), columns))


@pytest.mark.parametrize(
    "record",
    [
        ClipRecord("x", format=None),  # type: ignore[arg-type]
        ClipRecord("x", error=42),  # type: ignore[arg-type]
        ClipRecord("x", error_kind=7),  # type: ignore[arg-type]
        ClipRecord("x", extra=[1]),  # type: ignore[arg-type]
        ClipRecord("x", frames=1.5),  # type: ignore[arg-type]
        ClipRecord("x", duration_s="long"),  # type: ignore[arg-type]
        ClipRecord("x", extra={"when": object()}),
    ],
    ids=["format-None", "error-int", "error_kind-int", "extra-list", "frames-float", "duration-text", "extra-object"],
)
def test_a_record_of_types_its_fields_cannot_have_is_refused_not_packed(record):
    """So texts only ever hold what a lookup accepts back (a record refused here is kept as it is, uncached)."""
    with pytest.raises((TypeError, ValueError)):
        pack(record)


def test_numbers_of_other_types_are_packed_as_python_numbers():
    record = ClipRecord("x", sample_rate=np.int64(16000), frames=np.uint32(7), peak=np.float32(0.5), duration_s=2)  # type: ignore[arg-type]
    back = unpack("x", *pack(record))
    assert (back.sample_rate, back.frames, back.peak, back.duration_s) == (16000, 7, 0.5, 2.0)
    assert (type(back.sample_rate), type(back.peak), type(back.duration_s)) == (int, float, float)


@pytest.mark.parametrize(
    "texts",
    ['{"nonfinite_samples": "x"}', '{"duration_s": 1.5}', '{"size": 5}', '{"size": true}', '{"error": null}', '{"format": 3}'],
)
def test_texts_pack_never_writes_are_refused(texts):
    """A damaged or foreign row: a number where pack never writes one (an int field is in texts only past 64 bits)."""
    with pytest.raises(ValueError):
        unpack("x", pack(PLAIN)[0], texts)


def test_slices_of_records_as_columns_are_slices_of_the_list():
    records = [ClipRecord(f"{i}.wav", size=i) for i in range(5)]
    columns = ClipRecords.of(records)
    for cut in (slice(None, None, -1), slice(3, 0, -1), slice(None, None, 2), slice(-2, None), slice(4, 1)):
        assert columns[cut] == records[cut], cut


def test_a_column_of_values_its_type_cannot_hold_is_inferred_as_numpy_infers_it():
    """An int field holding a float in one record (a custom analysis) is a float64 column, as pandas made it before."""
    columns = ClipRecords.of([ClipRecord("a", frames=16000), ClipRecord("b", frames=16000.5)])  # type: ignore[arg-type]
    assert columns.column("frames").dtype == np.float64
    assert columns.column("frames").tolist() == [16000.0, 16000.5]
    mixed = ClipRecords.of([ClipRecord("a", frames=1), ClipRecord("b", frames=None)])  # type: ignore[arg-type]
    assert mixed.column("frames").tolist() == [1, None]


def test_records_as_columns_equal_themselves_even_holding_nan():
    columns = ClipRecords.of(ODD)
    assert columns == columns


def test_hashes_are_held_as_bytes_until_one_will_not_fit_and_read_as_strings_either_way():
    """32 hex digits a clip are kept as ``S32`` bytes, not a string object each; a hash that will not fit (33
    characters, not ASCII) makes the column strings, the hashes put before it kept."""
    from trainproof.data.records import ascii_strings

    builder = ClipRecords.builder(3)
    packed = pack(PLAIN)[0]
    builder.put_packed([0], ["x.wav"], unpack_many([packed]), [None])
    held = builder.build()
    assert held.column("audio_hash").dtype == np.dtype("S32")
    assert held[0].audio_hash == PLAIN.audio_hash and held[1].audio_hash == ""
    assert ascii_strings(held.column("audio_hash")).tolist() == [PLAIN.audio_hash, "", ""]
    builder.put([1, 2], [ODD[-1], ClipRecord("g.wav", audio_hash="é")])
    mixed = builder.build()
    assert mixed.column("audio_hash").dtype == object
    assert [r.audio_hash for r in mixed] == [PLAIN.audio_hash, "x" * 33, "é"]
    builder.put_packed([0], ["x.wav"], unpack_many([packed]), [None])  # bytes again, into the column of strings
    assert builder.build()[0].audio_hash == PLAIN.audio_hash


def _spilled(monkeypatch, build):
    """What ``build()`` makes with every builder's numbers and hashes in a spill file, and with them in memory."""
    from trainproof.data import records as module

    monkeypatch.setattr(module, "SPILL_FROM", 1)
    spilled = build()
    monkeypatch.setattr(module, "SPILL_FROM", 10**9)
    return spilled, build()


def test_records_spilled_to_a_file_come_back_as_those_held_in_memory(monkeypatch):
    """From SPILL_FROM clips the numbers and hashes are written to a spill file as they are put and mapped when a
    column is read: the same records, odd ones too (a size past 64 bits makes its column objects, in memory)."""
    records = [PLAIN, *ODD, PLAIN]
    spilled, held = _spilled(monkeypatch, lambda: ClipRecords.of(records))
    assert type(spilled._columns["duration_s"]).__name__ == "_Spilled"
    assert type(held._columns["duration_s"]).__name__ == "ndarray"
    assert isinstance(spilled.column("duration_s"), np.memmap)
    assert spilled.column("size").dtype == object  # 2**70: taken out of the file, as numpy infers it
    assert all(same(a, b) for a, b in zip(spilled, held))
    assert all(same(a, b) for a, b in zip(spilled, records))
    assert all(same(a, b) for a, b in zip(pickle.loads(pickle.dumps(spilled)), records))


def test_packed_blocks_spilled_to_a_file_come_back_as_they_went(monkeypatch):
    records = [PLAIN, *ODD[:3], PLAIN]
    packs = [pack(r) for r in records]

    def build():
        builder = ClipRecords.builder(len(records) + 2)
        builder.put_packed([4, 0, 2, 1, 3], [r.audio for r in records], unpack_many([p for p, _ in packs]),
                           [None if t is None else overrides(t) for _, t in packs])  # fmt: skip
        return builder.build()

    spilled, held = _spilled(monkeypatch, build)
    assert type(spilled._columns["audio_hash"]).__name__ == "_Spilled"
    assert spilled.column("audio_hash").tolist() == held.column("audio_hash").tolist()
    assert all(same(a, b) for a, b in zip(spilled, held))
    assert [spilled[k].audio for k in (4, 0, 2, 1, 3)] == [r.audio for r in records]
    assert spilled[5].duration_s == 0.0 and spilled[5].audio_hash == ""  # a row never put: the defaults, as in memory


def test_records_put_without_their_paths_take_the_references_column():
    """Packed records put without a path (the engines') take the references' column of paths itself when every path
    that was put is the same; a record put with another path keeps it, and the rest are filled in."""
    paths = ["a.wav", "b.wav", "c.wav"]
    packed = unpack_many([pack(PLAIN)[0]] * 2)
    builder = ClipRecords.builder(3)
    builder.put_packed([0, 2], None, packed, [None, None])
    builder.put([1], [ClipRecord("b.wav", error="gone", error_kind="missing")])
    assert builder.build().with_paths(paths).column("audio") is paths
    builder.put([1], [ClipRecord("elsewhere/b.wav", error="gone", error_kind="missing")])
    filled = builder.build().with_paths(paths)
    assert filled.column("audio").tolist() == ["a.wav", "elsewhere/b.wav", "c.wav"]
    with pytest.raises(ValueError):
        builder.build().with_paths(paths[:2])


def test_object_columns_are_held_as_codes_and_read_as_the_objects_they_were():
    """A kind, format and subtype are a few strings across a corpus and an error or extra is None for most clips: held
    as a small int a clip, read back as the same objects, odd ones too (a record that would not pack can hold None or
    NaN where text belongs; each extra stays its own dict)."""
    odd = ClipRecord("g.wav", format=None, subtype=math.nan, extra={"a": 1})  # type: ignore[arg-type]
    records = [PLAIN, *ODD, odd, PLAIN, replace(ODD[1], extra=dict(ODD[1].extra))]
    built = ClipRecords.of(records)
    coded = built._columns["format"]
    assert type(coded) is CodedColumn and coded.codes.dtype == np.uint8
    assert built.column("format").tolist() == [r.format for r in records]
    assert built.column("error").tolist() == [r.error for r in records]
    subtypes = built.column("subtype").tolist()
    assert math.isnan(subtypes[6]) and subtypes[:6] + subtypes[7:] == [r.subtype for r in records[:6] + records[7:]]
    extras = built.column("extra").tolist()
    assert extras == [r.extra or None for r in records]
    assert extras[2] is not extras[8]  # each row its own dict
    assert all(same(a, b) for a, b in zip(built, records))
    assert all(same(a, b) for a, b in zip(pickle.loads(pickle.dumps(built)), records))
