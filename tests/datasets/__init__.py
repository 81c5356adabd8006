"""Tests of the data subject (trainproof.data), and the helpers they share."""

def put_records(cache, items) -> None:
    """Store ClipRecords in ``cache`` the way the engine does: packed (records.try_pack), then put_packed."""
    from trainproof.data import records

    cache.put_packed([(key, *packed) for key, record in items if (packed := records.try_pack(record)) is not None])


def get_records(cache, keys) -> dict:
    """The cached ClipRecords valid for ``keys``, read back the way the engine does (look_up, then a ClipRecords)."""
    from trainproof.data import records

    keys = list(keys)
    hits = cache.look_up(keys)
    builder = records.ClipRecords.builder(len(hits.positions))
    builder.put_packed(range(len(hits.positions)), [keys[k].path for k in hits.positions], hits.block, hits.overridden)
    return dict(zip((keys[k] for k in hits.positions), builder.build()))
