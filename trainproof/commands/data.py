"""``trainproof data``: the command that judges a speech dataset, as a :class:`trainproof.judge.Command`.

Reading a dataset is reading its manifest and reducing every listed clip to
a record of numbers (on this machine's cores, or a Ray cluster's with
``engine="ray"``, through the cache); the rules
judge the manifest and the table of records. What a dataset shows: its
summary (clips, hours, sample rates, speakers, duration percentiles).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from trainproof.checks.registry import RULES
from trainproof.config import Settings
from trainproof.data import ENGINES
from trainproof.data.model import ClipRecord, ClipRefs, Manifest, entry_column
from trainproof.data.records import ClipRecords
from trainproof.data.uri import is_uri
from trainproof.io import figures
from trainproof.io.errors import MissingDependencyError, UsageError
from trainproof.io.progress import terminal_progress
from trainproof.io.safe import visible
from trainproof.judge import Command, Input, Inputs, Prepared, Stage
from trainproof.report import Subject


@dataclass(frozen=True)
class Dataset:
    """A manifest and the record of each clip it lists, in manifest order."""

    manifest: Manifest
    records: Sequence[ClipRecord]  # a ClipRecords (columns) from the engines


def _require() -> None:
    """soundfile, pandas and xxhash are the data command's own dependencies: a missing one is exit 2 naming it."""
    for package in ("soundfile", "pandas", "xxhash"):
        try:
            __import__(package)
        except ImportError:
            raise MissingDependencyError(package, "data", "trainproof data") from None


def read_dataset(source: Any, options: Mapping[str, Any]) -> Dataset:
    if isinstance(source, Dataset):
        return source
    _require()
    from trainproof.data.manifest import read_policy
    from trainproof.io.collector import collector_paused

    with collector_paused():
        manifest = manifest_of(source, options)
        paths, offsets, durations = (entry_column(manifest.entries, name) for name in ("audio", "offset", "duration"))
        refs = ClipRefs(cast("Sequence[str]", paths), cast("Sequence[float | None]", offsets), cast("Sequence[float | None]", durations), manifest.blobs)
    remote = [audio for audio in refs.paths if "://" in audio and is_uri(audio)]
    if remote:
        _require_uri_support()
        from trainproof.data import uri

        _require_reachable(source, uri.reach(remote))
    # the roots the manifest was read under, and the folder above it its paths were found from
    policy = read_policy(manifest.path, manifest.layout, found_root=manifest.found_root, **_roots(options))
    cache = _cache(options)
    if cache is None:
        records = _decode(refs, None, options, policy)
    else:
        with cache:
            records = _decode(refs, cache, options, policy)
        if cache.notes:
            manifest = replace(manifest, notes=manifest.notes + tuple(cache.notes))
    if remote:
        _require_reachable(source, uri.unreachable(remote))  # a store that stopped answering while its clips were read
    return Dataset(manifest, records)


def _require_reachable(source: Any, problems: Sequence[tuple[str, str]]) -> None:
    """An object store the manifest names that cannot be reached (no network, no region, credentials refused, no
    answer in time) is an InputError about the manifest, one line and exit 2, not one finding per clip."""
    if not problems:
        return
    from trainproof.io.errors import InputError

    store, why = problems[0]
    more = f" (and {figures.plural(len(problems) - 1, 'other store')})" if len(problems) > 1 else ""
    raise InputError(source, f"cannot reach {store}: {why}{more}")


def manifest_of(source: Any, options: Mapping[str, Any]) -> Manifest:
    """The manifest of the dataset at ``source`` as ``options`` say to read it; read once per invocation (checking the
    outputs against the listed clips and judging take the same reading)."""
    from trainproof.data.manifest import read_manifest
    from trainproof.io import memo

    how = _reading(options)
    key = ("manifest", str(source), os.getcwd(), *map(str, how.values()))
    return memo.remembered(key, lambda: read_manifest(source, **how))


def _roots(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options that say what a dataset's clips may be read through, as ``read_policy`` takes them."""
    return {"root": options.get("root"), "audio_dir": options.get("audio_dir"), "follow_links": bool(options.get("follow_links"))}


def _reading(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options that change how a manifest is read (and so which reading an invocation may share), as
    :func:`~trainproof.data.manifest.read_manifest` takes them."""
    return {**_roots(options), "audio_column": options.get("audio_column"), "text_column": options.get("text_column")}


def _decode(refs: ClipRefs, cache: Any, options: Mapping[str, Any], policy: Any = None) -> ClipRecords:
    """Every clip's record, in order, on the engine asked for; a clip ``policy`` refuses is never opened."""
    progress = terminal_progress(options, "data", "clips decoded")
    if _engine(options) == "ray":
        from trainproof.data import ray_engine

        return ray_engine.analyze_all(
            refs, cache, progress=progress is not None, address=options.get("ray_address"), jobs=options.get("jobs"), policy=policy
        )
    from trainproof.data.engine import analyze_all

    return analyze_all(refs, jobs=options.get("jobs"), cache=cache, progress=progress, policy=policy)


def _engine(options: Mapping[str, Any]) -> str:
    """The engine asked for (default local); UsageError for an unknown one, or a Ray address without the Ray engine."""
    engine = options.get("engine") or "local"
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}: one of {', '.join(ENGINES)}")
    if options.get("ray_address") and engine != "ray":
        raise UsageError("--ray-address needs --engine ray")
    return engine


def _require_uri_support() -> None:
    """Clips named by URI are read through pyarrow's filesystems: a missing pyarrow is exit 2 naming the extra that has it."""
    try:
        import pyarrow.fs  # noqa: F401
    except ImportError:
        raise MissingDependencyError("pyarrow", "ray", "reading clips named by URI (s3://, gs://, file://)") from None


def _cache(options: Mapping[str, Any]) -> Any:
    if options.get("no_cache"):
        return None
    from trainproof.data.cache import Cache

    return Cache(options.get("cache_dir") or None)  # None: the default folder, which must not be a symbolic link


def summarize(dataset: Dataset) -> dict:
    """The dataset's summary pairs: clips, hours, sample rates, speakers, duration percentiles."""
    import numpy as np

    from trainproof.data.records import ClipRecords

    clips = ClipRecords.of(dataset.records)
    readable = np.equal(clips.column("error_kind"), cast(Any, None))  # elementwise: no error recorded
    durations = np.asarray(clips.column("duration_s")[readable], dtype=float)
    rates = sorted(set(clips.column("sample_rate")[readable].tolist()))
    speakers = {speaker for speaker in entry_column(dataset.manifest.entries, "speaker") if speaker}
    out: dict = {
        "layout": dataset.manifest.layout,
        "audio_only": dataset.manifest.audio_only,
        "clips": len(dataset.manifest.entries),
        "readable": int(readable.sum()),
        "hours": round(float(durations.sum()) / 3600, 4),
        "sample_rates": ", ".join(f"{rate:,} Hz" for rate in rates) or None,
        "speakers": len(speakers) or None,
    }
    if durations.size:
        for q in (5, 50, 95):
            out[f"duration_p{q}_s"] = round(float(np.percentile(durations, q)), 3)
    return out


def headline(dataset: Dataset, summary: Mapping[str, Any]) -> str:
    kind = "audio-only folder (no transcripts)" if dataset.manifest.audio_only else f"{dataset.manifest.layout} dataset"
    parts = [kind, f"{figures.plural(summary['clips'], 'clip')} ({summary['readable']:,} readable)"]
    parts.append(f"{figures.duration(summary['hours'] * 3600)} of audio")
    if summary.get("sample_rates"):
        parts.append(str(summary["sample_rates"]))
    if summary.get("speakers"):
        parts.append(figures.plural(summary["speakers"], "speaker"))
    if "duration_p50_s" in summary:
        parts.append(f"clip durations {figures.num(summary['duration_p5_s'])}/{figures.num(summary['duration_p50_s'])}/{figures.num(summary['duration_p95_s'])} s (5th/50th/95th percentile)")
    return "; ".join(parts)


class Data(Command):
    """``trainproof data``: each dataset (a manifest, or a folder holding one) by the data rules."""

    name = "data"

    def read(self, source: Any, options: Mapping[str, Any]) -> Dataset:
        return read_dataset(source, options)

    def inputs(self, source: Any, options: Mapping[str, Any], prepared: Prepared) -> Inputs:
        """The dataset at ``source``, or each dataset of a folder of Lhotse manifests that holds several (a recipe's
        splits), each named by the file it is read from."""
        if isinstance(source, (str, Path)):
            from trainproof.data.layouts.lhotse import split_inputs

            found = split_inputs(str(source))
            if found:
                return Inputs(tuple(Input(path) for path in found))
        return Inputs((Input(source),))

    def reads(self, path: str) -> Sequence[Path]:
        """The manifest files a dataset is read from (a folder's metadata.csv, a Kaldi dir's lists, Lhotse manifests)."""
        from trainproof.data.layouts.lhotse import lhotse_files, lhotse_name

        target = Path(path)
        if not target.is_dir():
            return [Path(file) for file in lhotse_files(path)] if lhotse_name(target.name) else [target]
        names = ("metadata.csv", "wav.scp", "text", "utt2spk", "segments")
        return [target / name for name in names if (target / name).is_file()] + [Path(file) for file in lhotse_files(path)] + [target]

    def reads_listed(self, path: str, options: Mapping[str, Any]) -> Sequence[str]:
        """Every listed clip and transcript file of the dataset at ``path`` (asked only when an output exists already:
        the manifest read here is the one judged, see :func:`manifest_of`)."""
        from trainproof.io.errors import InputError

        try:
            manifest = manifest_of(path, options)
        except (InputError, OSError):
            return ()
        files = dict.fromkeys(file for column in ("audio", "manifest") for file in cast("Sequence[str]", entry_column(manifest.entries, column)))
        return [file for file in files if not is_uri(file)]

    def stages(self, dataset: Dataset, settings: Settings, prepared: Prepared) -> Sequence[Stage]:
        from trainproof.checks.data import DataContext
        options = prepared.shared or {}
        ctx = DataContext(dataset.manifest, dataset.records, settings.thresholds, options.get("sample_rate"), options.get("channels"))
        return (Stage(RULES["data"], ctx),)

    def prepare(self, settings: Settings, options: Mapping[str, Any]) -> Prepared:
        for flag in ("root", "audio_dir"):  # a mistyped folder would report every clip missing
            folder = options.get(flag)
            if folder and not is_uri(str(folder)) and not Path(folder).is_dir():
                what = "does not exist" if not Path(folder).exists() else "is not a folder"
                raise UsageError(f"--{flag.replace('_', '-')} {visible(folder)}: {what}")
        if _engine(options) == "ray":  # before any manifest is read: ray installed, the cluster's address reachable
            from trainproof.data import ray_engine

            ray_engine.check(options.get("ray_address"))
        return Prepared(shared=dict(options))

    def present(self, dataset: Dataset, subject: Subject, stages: Sequence[Stage], prepared: Prepared) -> Subject:
        from trainproof.checks.data import DataContext
        from trainproof.commands.data_charts import charts
        from trainproof.commands.data_clips import flagged_clips

        summary = summarize(dataset)
        context = stages[0].context if stages else None
        judged = context if isinstance(context, DataContext) else None
        return replace(
            subject,
            path=dataset.manifest.path,
            format=dataset.manifest.layout,
            summary=summary,
            headline=headline(dataset, summary),
            notes=dataset.manifest.notes,
            charts=charts(judged, subject.findings) if judged is not None else (),
            clips=flagged_clips(judged, subject.findings, (prepared.shared or {}).get("excerpts")) if judged is not None else (),
        )


DATA = Data()
