"""Clips named by URI: told apart from paths, kept as written by the manifest reader, stat'ed and read through pyarrow."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


READ = ["s3://bucket/a.wav", "gs://bucket/deep/a.wav", "s3://Legacy_Bucket.1/a%20b.wav", "gs://b/a b.wav", "s3://bucket"]
REFUSED = {
    "abfs://container@account.dfs.core.windows.net/a.wav": "scheme abfs:// is not read",
    "hdfs://namenode:8020/a.wav": "scheme hdfs:// is not read",
    "mock:///a.wav": "scheme mock:// is not read",
    "s3://b/a.wav?endpoint_override=127.0.0.1:9&scheme=http": "has a query",
    "gs://b/a.wav?endpoint_override=127.0.0.1:9": "has a query",
    "s3://b/a.wav#x": "has a fragment",
    "s3://key:secret@b/a.wav": "names a user",
    "s3://127.0.0.1:9000/a.wav": "not a bucket name",
    "s3://b%2Fc/a.wav": "not a bucket name",
    "gs:///a.wav": "names no bucket",
    "file://host/a.wav": "names a host",
    "s3://b/x/../../other/a.wav": "'..' segment",
    "s3://b/a%ff.wav": "not UTF-8",
    "s3://b/a%0a.wav": "control character",
}


def refusal(address: str) -> str | None:
    """Why ``address`` is not read, or None when it may be."""
    try:
        uri.parse(address)
    except uri.Refused as exc:
        return str(exc)
    return None


def test_what_a_uri_may_name_is_decided_before_any_library_is_asked():
    """A URI names an object and nothing else: no other scheme, no setting (query, fragment, user, port)."""
    assert {address: refusal(address) for address in READ} == dict.fromkeys(READ)
    for address, reason in REFUSED.items():
        assert reason in (refusal(address) or ""), address
    assert uri.parse("s3://b/a%20b.wav").path == "b/a b.wav"
    assert uri.parse("gs://b/k.wav").store == "gs://b"
    assert uri.parse("file://localhost/tmp/a.wav").path == "/tmp/a.wav"


def test_a_uri_that_is_refused_is_the_clips_record_and_its_neighbours_are_read(tmp_path):
    """A file:// URI with a query, and pyarrow's own in-memory ``mock://`` scheme: read as their paths before
    (from_uri drops a file URI's query, and knows mock://), now each clip's ``unreadable`` record, without a library call."""
    path = corpus(tmp_path / "c", 1)[0]
    address = Path(path).as_uri()
    for refused in (f"{address}?x=1", f"{address}#1", "mock:///a.wav", f"file://elsewhere{path}"):
        record = analyze(ClipRef(refused))
        assert (record.error_kind, record.audio) == ("unreadable", refused), record
        assert record.error == refusal(refused)
    assert analyze(ClipRef(address)).error_kind is None


def test_escaped_uris_name_the_file_they_spell(tmp_path):
    for name in ("a b.wav", "x.wav"):
        (tmp_path / name).write_bytes(b"x" * (10 + len(name)))
    base = f"file://{tmp_path}"
    assert uri.stat(f"{base}/a%20b.wav").size == len("a b.wav") + 10  # %20 is a space, as a URI spells it
    assert uri.stat(f"{base}/a b.wav").size == len("a b.wav") + 10
    assert uri.stat(f"{base}/x.wav").kind == "file"
    assert uri.stat(f"{base}/y.wav").kind == "missing"
    with pytest.raises(uri.Refused):
        uri.stat(f"{base}/x.wav#1")


def test_a_fetch_that_fails_ends_the_bytes_and_says_why(tmp_path, monkeypatch):
    """The object shrinks under an open reader (a fetch gives no bytes): the reader ends its bytes and keeps why (the
    clip's record is then unreadable), never raising into soundfile's C callbacks."""
    monkeypatch.setattr(uri, "URI_READ_BLOCK_BYTES", 4096)
    path = Path(corpus(tmp_path / "c", 1)[0])
    source = uri.open_input(path.as_uri())
    size = source.size()
    assert source.read(44) == path.read_bytes()[:44]
    path.write_bytes(b"")
    source.seek(size // 2)
    assert source.read(1000) == b""
    assert "no bytes" in (source.error or "")
    source.close()


def test_reach_asks_only_object_stores(monkeypatch):
    """file:// URIs and refused ones are not asked about: nothing to reach, no request. An object store is asked
    once, about its first clip."""
    asked = []
    monkeypatch.setattr(uri, "_ask", lambda address, call: asked.append(address))
    assert uri.reach(["file:///nonexistent/a.wav", "s3://b/a.wav?x=1", "abfs://c@a/x.wav", "local/a.wav"]) == []
    assert asked == []
    assert uri.reach(["file:///a.wav", "s3://b/a.wav", "s3://b/c.wav", "s3://b/a.wav?x=1"]) == []
    assert asked == [uri.parse("s3://b/a.wav")]


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


PIECES = ["s3://", "gs://", "file://", "S3://", "abfs://", "hdfs://", "mock://", "b", "/", ".", "..", "?", "#", "@", ":", "%"]
URI_PARTS = st.sampled_from([*PIECES, "%2F", "%ff", "%00", " ", "\n", "\u202e", "k"])


@settings(max_examples=400, deadline=None)
@given(st.lists(URI_PARTS | st.text(max_size=4), max_size=12))
def test_a_uri_is_read_or_refused_never_anything_else(parts):
    """Whatever a manifest writes: parse gives an address of a scheme that is read, with no query, fragment or user
    and a plain bucket, or refuses it; no other exception."""
    text = "".join(parts)
    try:
        address = uri.parse(text)
    except uri.Refused as exc:
        assert str(exc)
        return
    assert address.scheme in uri.SCHEMES
    assert "?" not in text
    assert "#" not in text
    if address.scheme != "file":
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._\-]*", address.bucket)
        assert address.path.split("/", 1)[0] == address.bucket
    else:
        assert address.path.startswith("/")


def test_a_clip_of_a_store_that_could_not_be_read_is_not_cached(tmp_path, monkeypatch):
    """A store may fail for a moment; its unreadable record is asked again next run, where a file's is kept."""
    from trainproof.data.cache import Cache
    from trainproof.data.engine import analyze_all

    paths = corpus(tmp_path, 1)
    broken = tmp_path / "broken.wav"
    broken.write_bytes(b"RIFF this is not audio at all" * 10)
    refs = [ClipRef(Path(paths[0]).resolve().as_uri()), ClipRef(broken.resolve().as_uri()), ClipRef(str(broken))]
    with Cache(tmp_path / "cache") as cache:
        records = analyze_all(refs, jobs=1, cache=cache)
        assert [r.error_kind for r in records] == [None, "unreadable", "unreadable"]
        assert cache.count() == 2  # the readable URI's record and the local file's, not the unreadable URI's
