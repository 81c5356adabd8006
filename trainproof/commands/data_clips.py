"""The flagged clips a dataset's HTML report lets its reader hear and see: the worst first, at most MAX_FLAGGED.

A clip is flagged when a finding names its manifest line; its findings are listed with it, FAIL first. The clips
are ordered by their worst finding, then by manifest order, and each gets an excerpt
(:mod:`trainproof.data.excerpt`): its waveform always, its audio unless left out (``--no-audio``). At most
MAX_FLAGGED clips of at most EXCERPT_S seconds of Opus at about 2.6 kB a second: under 0.6 MB of audio in any
report, however many clips were flagged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from trainproof.checks.data import DataContext
from trainproof.data.excerpt import MIME, excerpt
from trainproof.data.model import ClipRef
from trainproof.report import Finding, FlaggedClip

MAX_FLAGGED = 24

EXCERPTS = ("audio", "waveform")
"""What each flagged clip is shown with: its audio and waveform, or its waveform only (``--no-audio``)."""


def flagged_clips(ctx: DataContext, findings: Sequence[Finding], excerpts: str | None) -> tuple[FlaggedClip, ...]:
    """The flagged clips, worst first, with their excerpts; () when ``excerpts`` is None (no report shows them)."""
    if excerpts is None:
        return ()
    entries = ctx.manifest.entries
    index: dict[tuple[str | None, int], int] = {(entry.manifest, entry.line): i for i, entry in enumerate(entries)}
    found: dict[int, list[Finding]] = {}
    for finding in findings:
        if finding.line is None:
            continue
        i = index.get((finding.file, finding.line))
        if i is not None:
            found.setdefault(i, []).append(finding)
    ranked = sorted(found, key=lambda i: (-max(f.level for f in found[i]), i))[:MAX_FLAGGED]
    errors = ctx.frame("error_kind")["error_kind"].tolist()
    out = []
    for i in ranked:
        entry = entries[i]
        listed = sorted(found[i], key=lambda f: -f.level)
        clip = FlaggedClip(
            id=entry.id,
            where=f"{entry.manifest}:{entry.line}" if entry.line else entry.manifest,
            transcript=entry.text,
            findings=tuple((f.level.name, f.rule_id, f.message) for f in listed),
        )
        if not isinstance(errors[i], str):  # the analysis read it (an unreadable clip has no excerpt to show)
            ref = ClipRef(entry.audio, entry.offset, entry.duration if entry.offset is not None else None)
            if ctx.manifest.blobs and ctx.manifest.blobs[i] is not None:
                ref = replace(ref, blob=ctx.manifest.blobs[i])
            shown = excerpt(ref, audio=excerpts == "audio")
            if shown is not None:
                clip = replace(clip, start_s=shown.start_s, seconds=shown.seconds, total_s=shown.total_s, low=shown.low, high=shown.high,
                               audio=shown.audio, mime=MIME if shown.audio else "")  # fmt: skip
        out.append(clip)
    return tuple(out)

