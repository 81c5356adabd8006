"""CSV and TSV manifests with a header naming the audio and text columns."""


from __future__ import annotations

import csv
from collections.abc import Iterator

from trainproof.data.layouts.shared import (
    AUDIO_KEYS,
    _Builder,
    _check_text,
    _Columns,
    _content_lines,
    _Context,
    _lines,
    _PathResolver,
    _record,
    _require_named,
)
from trainproof.io import figures


def _read_csv(path: str, ctx: _Context, builder: _Builder) -> None:
    _check_text(path)
    lines = _lines(path, builder)
    start: list[int] = []

    def feed() -> Iterator[str]:
        for number, text in lines:
            start.append(number)
            yield text + "\n"  # with its line end, as the csv module wants it: a quoted cell spanning lines keeps its newline

    first = next(_content_lines(path), (0, ""))[1]
    tab = "\t" in first
    reader = csv.reader(feed(), delimiter="\t" if tab else ",", quoting=csv.QUOTE_NONE if tab else csv.QUOTE_MINIMAL)
    header: list[str] | None = None
    columns: _Columns | None = None
    resolve = _PathResolver(path, ctx, fallbacks=("clips",))
    while True:
        start.clear()
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            number = start[0] if start else 0
            builder.problem("unparsable", f"line {number} is not a CSV record: {exc}", path, number)
            continue
        number = start[0]
        if header is None:
            _require_named(path, ctx, row, "column")
            header = [cell.strip().lower() for cell in row]
            columns = _Columns.of(header, ctx)
            builder.saw_names(header, ctx)
            if columns.audio is None:
                wanted = ", ".join(AUDIO_KEYS[:8])
                builder.problem(
                    "no-audio-field", f"line {number} is not a header naming the audio column (one of {wanted}, ...)", path, number
                )
                lines.close()
                return
            continue
        if len(row) != len(header):
            where = f"line {number}" if len(start) == 1 else f"lines {number}-{start[-1]} (a quote left open joins them)"
            builder.problem(
                "unparsable",
                f"{where} {'has' if len(start) == 1 else 'have'} {figures.plural(len(row), 'column')}; the header has {len(header)}",
                path,
                number,
            )
            continue
        assert columns is not None
        _record(dict(zip(header, row)), columns, number, path, resolve, builder)
    resolve.settle(builder)
    builder.choice_notes("column")
