"""Records as packed bytes and as columns: what goes in comes back, whatever the values."""

from __future__ import annotations

import math
import pickle
from dataclasses import astuple

import numpy as np
import pytest

from trainproof.data.model import ClipRecord
from trainproof.data.records import SIZE, ClipRecords, pack, unpack, unpack_many

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
    builder.put_packed([3, 0], ["x.wav", "y.wav"], unpack_many([p for p, _ in packs]), [t for _, t in packs])
    builder.put([1, 2], [ODD[0], ODD[2]])
    built = builder.build()
    assert same(built[3], ClipRecord("x.wav", **{k: v for k, v in PLAIN.__dict__.items() if k != "audio"}))
    assert built[0].extra == ODD[1].extra
    assert math.isnan(built[0].dc_offset)
    assert built[0].audio == "y.wav"
    assert same(built[1], ODD[0])
    assert same(built[2], ODD[2])
    assert built[3].extra is not built[1].extra  # each row its own dict


def test_records_as_columns_pickle():
    columns = ClipRecords.of([PLAIN, *ODD])
    assert all(same(a, b) for a, b in zip(pickle.loads(pickle.dumps(columns)), columns))
