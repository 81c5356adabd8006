"""Kaldi data dirs: ``wav.scp``, ``text``, ``segments``, ``utt2spk``."""


from __future__ import annotations

import os

from trainproof.data.layouts.shared import (
    MAX_CLAIM_S,
    _Builder,
    _check_text,
    _Context,
    _join,
    _lines,
    _quote,
    _seconds,
    _settle_above,
    _too_long,
)
from trainproof.data.model import Entry
from trainproof.io.bounded import EmptyLog


def _kaldi_table(path: str, ctx: _Context, builder: _Builder, required: bool) -> dict[str, tuple[int, str]]:
    """A Kaldi ``key rest`` file as key -> (line, rest); a repeated key is a problem and the first one kept.

    An optional file that is absent or empty is an empty table; one that is there but a FIFO, a device or a link the
    dataset's policy refuses is an InputError, as for ``wav.scp``: judging the dir without it would be judging
    another dataset."""
    table: dict[str, tuple[int, str]] = {}
    if not required and not os.path.lexists(path):
        return table
    ctx.policy.require(path)  # a list found in the dataset's folder: never opened through a link out of it
    _check_text(path)
    try:
        for number, text in _lines(path, builder):
            parts = text.strip().split(None, 1)
            key, rest = parts[0], (parts[1].strip() if len(parts) > 1 else "")
            if key in table:
                builder.problem("duplicate-id", f"line {number} repeats the id {_quote(key)} of line {table[key][0]}", path, number)
                continue
            table[key] = (number, rest)
    except EmptyLog:
        if required:
            raise
    return table


def _read_kaldi(folder: str, ctx: _Context, builder: _Builder) -> None:
    scp_path, text_path = os.path.join(folder, "wav.scp"), os.path.join(folder, "text")
    seg_path, spk_path = os.path.join(folder, "segments"), os.path.join(folder, "utt2spk")
    base = ctx.root if ctx.root is not None else (ctx.cwd or "")
    scp = _kaldi_table(scp_path, ctx, builder, required=True)
    recordings: dict[str, str] = {}
    for rec, (number, rest) in scp.items():
        if rest.endswith("|"):
            builder.problem(
                "unparsable", f"line {number}: {_quote(rec)} is a command pipeline; trainproof reads only plain files", scp_path, number
            )
        elif ".ark:" in rest or rest.startswith(("ark:", "scp:")):
            builder.problem(
                "unparsable",
                f"line {number}: {_quote(rec)} points into a Kaldi archive; trainproof reads only plain files",
                scp_path,
                number,
            )
        elif not rest:
            builder.problem("no-audio-field", f"line {number}: {_quote(rec)} names no file", scp_path, number)
        else:
            recordings[rec] = rest
    speakers = {utt: rest for utt, (_, rest) in _kaldi_table(spk_path, ctx, builder, required=False).items()}
    has_segments = os.path.lexists(seg_path)
    # utterance -> (recording, offset, duration, line, the file of that line)
    utterances: dict[str, tuple[str, float | None, float | None, int, str]] = {}
    if has_segments:
        for utt, (number, rest) in _kaldi_table(seg_path, ctx, builder, required=False).items():
            parts = rest.split()
            start = _seconds(parts[1])[0] if len(parts) >= 3 else None
            end = _seconds(parts[2])[0] if len(parts) >= 3 else None
            if start is None or end is None or start < 0:
                builder.problem("unparsable", f"line {number} is not 'utterance recording start end'", seg_path, number)
                continue
            if max(start, end) > MAX_CLAIM_S:
                what = "start" if start > MAX_CLAIM_S else "end"
                builder.problem(
                    "unparsable", f"line {number}: segment {_quote(utt)}'s {what} {_too_long(max(start, end))}", seg_path, number
                )
                continue
            if end != -1 and end <= start:
                builder.problem(
                    "unparsable",
                    f"line {number}: segment {_quote(utt)} ends at {end:g} s, not after its start at {start:g} s",
                    seg_path,
                    number,
                )
                continue
            utterances[utt] = (parts[0], start, None if end == -1 else end - start, number, seg_path)
    else:
        utterances = {rec: (rec, None, None, number, scp_path) for rec, (number, _) in scp.items()}
    texts = _kaldi_table(text_path, ctx, builder, required=False)

    def add(utt: str, line: int, manifest: str, text: str | None) -> None:
        rec, offset, duration, rec_line, rec_file = utterances[utt]
        listed = recordings.get(rec)
        if listed is None:
            if rec not in scp:  # a pipeline or an archive is reported once, on its wav.scp line
                builder.problem(
                    "no-audio-field",
                    f"line {rec_line}: utterance {_quote(utt)} has recording {_quote(rec)}, which wav.scp does not list",
                    rec_file,
                    rec_line,
                )
            return
        entry = Entry(line, utt, _join(base, listed), listed, text, manifest, duration, offset, speakers.get(utt) or None)
        builder.add(entry, unique=False, missing=f"line {line}: utterance {_quote(utt)} has no line in {text_path}")

    for utt, (number, text) in texts.items():
        if utt in utterances:
            add(utt, number, text_path, text)
        else:
            where = "segments" if has_segments else "wav.scp"
            builder.problem("no-audio-field", f"line {number}: utterance {_quote(utt)} is not in {where}", text_path, number)
    for utt, (_, _, _, number, manifest) in utterances.items():
        if utt not in texts:
            add(utt, number, manifest, None)
    _settle_above(builder, folder, ctx, (base,))
