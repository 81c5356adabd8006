"""Clips named by URI: told apart from paths, kept as written by the manifest reader, stat'ed and read through pyarrow."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("soundfile")
pytest.importorskip("pyarrow")

from tests.datasets.test_engine import corpus  # noqa: E402
from trainproof.data import uri  # noqa: E402
from trainproof.data.clip import analyze  # noqa: E402
from trainproof.data.manifest import read_manifest  # noqa: E402
from trainproof.data.model import ClipRef  # noqa: E402


def test_a_uri_is_told_apart_from_a_path():
    assert uri.is_uri("s3://bucket/a.wav")
    assert uri.is_uri("file:///tmp/a.wav")
    assert not uri.is_uri("/tmp/a.wav")
    assert not uri.is_uri("audio/a.wav")
    assert not uri.is_uri("C://a.wav"), "a drive letter is not a scheme"


def test_a_relative_path_joins_a_uri_with_slashes():
    assert uri.join("s3://b/corpus", "wavs/../clips/a.wav") == "s3://b/corpus/clips/a.wav"
    assert uri.join("file:///data", "a.wav") == "file:///data/a.wav"
    assert uri.join("s3://b/corpus", "gs://other/a.wav") == "gs://other/a.wav"


def test_a_manifest_keeps_uris_as_written_and_joins_a_uri_root(tmp_path):
    manifest = tmp_path / "m.jsonl"
    rows = [{"audio_filepath": "s3://bucket/a/x.wav", "text": "one"}, {"audio_filepath": "b/../y.wav", "text": "two"}]
    manifest.write_text("".join(json.dumps(row) + "\n" for row in rows))
    rooted = read_manifest(manifest, root="gs://corpus/clips").entries
    assert [e.audio for e in rooted] == ["s3://bucket/a/x.wav", "gs://corpus/clips/y.wav"]
    assert read_manifest(manifest).entries[0].audio == "s3://bucket/a/x.wav"
    metadata = tmp_path / "lj" / "metadata.csv"
    metadata.parent.mkdir()
    metadata.write_text("a01|hello there\n")
    assert read_manifest(metadata.parent, root="s3://bucket/lj").entries[0].audio == "s3://bucket/lj/wavs/a01.wav"


def test_a_file_uri_is_analysed_like_its_path(tmp_path):
    paths = corpus(tmp_path / "c", 4)
    for path in paths:
        address = Path(path).as_uri()
        assert analyze(ClipRef(address)) == replace(analyze(ClipRef(path)), audio=address)
    segment = ClipRef(Path(paths[0]).as_uri(), 0.1, 0.3)
    assert analyze(segment) == replace(analyze(ClipRef(paths[0], 0.1, 0.3)), audio=segment.audio)
    info = uri.stat(Path(paths[0]).as_uri())
    assert (info.kind, info.size) == ("file", Path(paths[0]).stat().st_size)


def test_what_is_wrong_with_a_uri_is_the_clips_record(tmp_path):
    (tmp_path / "empty.wav").write_bytes(b"")
    (tmp_path / "text.wav").write_text("not audio")
    kinds = {name: analyze(ClipRef((tmp_path / name).as_uri())) for name in ("gone.wav", "empty.wav", "text.wav")}
    kinds["folder"] = analyze(ClipRef(tmp_path.as_uri()))
    assert {name: r.error_kind for name, r in kinds.items()} == {
        "gone.wav": "missing",
        "empty.wav": "empty",
        "text.wav": "unreadable",
        "folder": "unreadable",
    }
    assert kinds["text.wav"].error.startswith("libsndfile: ")


def test_a_scheme_pyarrow_does_not_know_is_unreadable_for_each_clip(monkeypatch):
    """A URI that does not parse is that clip's problem alone (only a store that cannot be reached is remembered for
    the clips of its bucket), so the clips of a manifest read alike in any order."""
    monkeypatch.setattr(uri, "_UNRESOLVED", {})
    records = [analyze(ClipRef(f"nosuchscheme://host/clip{i}.wav")) for i in range(3)]
    assert {r.error_kind for r in records} == {"unreadable"}
    assert all("cannot resolve the URI" in r.error for r in records)
    assert uri._UNRESOLVED == {}


@pytest.mark.parametrize("order", [1, -1])
def test_escaped_and_unparsable_uris_read_the_same_whatever_comes_first(tmp_path, monkeypatch, order):
    monkeypatch.setattr(uri, "_FILESYSTEMS", {})
    monkeypatch.setattr(uri, "_UNRESOLVED", {})
    for name in ("a b.wav", "a%20b.wav", "x.wav"):
        (tmp_path / name).write_bytes(b"x" * (10 + len(name)))
    base = f"file://{tmp_path}"
    uris = [f"{base}/a b.wav", f"{base}/x.wav", f"{base}/a%20b.wav", f"{base}/x.wav#1"][::order]
    found = {}
    for address in uris:  # the unparsable one first, or last
        if " " in address:
            with pytest.raises(OSError, match="cannot resolve the URI"):
                uri.stat(address)
        else:
            found[address] = uri.stat(address)
    assert found[f"{base}/x.wav"].size == 15
    assert found[f"{base}/a%20b.wav"].size == len("a b.wav") + 10  # %20 is a space, as from_uri reads it
    assert found[f"{base}/x.wav#1"].size == 15  # the fragment is not part of the path
    assert uri.stat(f"{base}/x.wav").kind == "file"  # a URI that does not parse spoils nothing for its neighbours
    assert uri._UNRESOLVED == {}


def test_the_engine_asks_the_store_about_each_uri_once(tmp_path, monkeypatch):
    """Each URI is stat'ed once, by the engine's own (threaded) stat: a missing, empty or folder clip is decided by
    it, not stat'ed again one clip after another to say so, and a clip that is decoded is opened without another stat
    (on an object store each is a round trip). The records are the ones the per-clip analysis gives."""
    from trainproof.data.engine import analyze_all

    good = corpus(tmp_path / "c", 2)
    (tmp_path / "empty.wav").write_bytes(b"")
    addresses = [Path(p).as_uri() for p in good] + [(tmp_path / f"gone{i}.wav").as_uri() for i in range(5)]
    addresses += [(tmp_path / "empty.wav").as_uri(), tmp_path.as_uri()]
    expected = [analyze(ClipRef(a)) for a in addresses]
    asked: list[str] = []
    real = uri.stat
    monkeypatch.setattr(uri, "stat", lambda address: asked.append(address) or real(address))
    records = analyze_all([ClipRef(a) for a in addresses], jobs=1)
    assert records == expected
    assert sorted(asked) == sorted(addresses), "one stat each"


def test_a_clip_out_of_memory_is_the_same_record_by_uri_and_by_path(tmp_path, monkeypatch):
    """The size of a clip whose decoding ran out of memory is kept, by URI as by path."""
    from trainproof.data import clip

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(clip, "_decode", no_memory)
    path = corpus(tmp_path / "c", 1)[0]
    by_path, by_uri = analyze(ClipRef(path)), analyze(ClipRef(Path(path).as_uri()))
    assert by_path.size == Path(path).stat().st_size
    assert by_uri == replace(by_path, audio=Path(path).as_uri())
