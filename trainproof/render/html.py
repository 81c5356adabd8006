"""A self-contained HTML report: verdicts, findings, and the curves as inline SVG.

A rule's findings on one input are one table row, their places listed in it
(see :mod:`trainproof.render.grouped`).

No network assets, no script; jinja2 autoescapes everything from the report,
and every printed value has its control and format characters spelled out.
What each chart plots is the subject's (its command decided); this module
only draws it.
"""

from __future__ import annotations

import base64
import re
from functools import lru_cache

import numpy as np

from trainproof.checks.base import Rule
from trainproof.io.safe import visible
from trainproof.render.grouped import blocks
from trainproof.io import figures
from trainproof.render.svg import bars, chart, histogram, waveform
from trainproof.report import Bars, Chart, FlaggedClip, Histogram, Level, Report


def _rule_doc_html(rule: Rule) -> str:
    import markdown

    text = "\n\n".join(f"**{head}:** {body}" for head, body in rule.sections().items())
    return markdown.markdown(text)


_CODE = re.compile(r"`([^`]+)`")


def inline_code(text: str) -> str:
    """A rule's one-line summary as HTML: its `code` spans (an option such as `--max-len`) as ``<code>``, everything
    escaped as the page escapes it; a lone backtick stays as it is."""
    from markupsafe import escape

    out, at = [], 0
    for match in _CODE.finditer(text):
        out.append(str(escape(visible(text[at : match.start()]))))
        out.append(f"<code>{escape(visible(match.group(1)))}</code>")
        at = match.end()
    out.append(str(escape(visible(text[at:]))))
    return "".join(out)


def _spelled(value: object) -> object:
    """Every value the template prints, before autoescaping: control and format characters spelled out as the text
    report does, line breaks too, so no user text starts a line of the page. Markup (a chart, a rule's doc) is ours and
    passes as it is."""
    from markupsafe import Markup

    return value if isinstance(value, Markup) else visible(value)


@lru_cache(maxsize=1)
def _environment():
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("trainproof.render", "templates"),
        autoescape=True,
        finalize=_spelled,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def _draw(figure: Chart | Histogram | Bars) -> str:
    if isinstance(figure, Histogram):
        return histogram(figure)
    if isinstance(figure, Bars):
        return bars(figure)
    return chart(
        figure.title,
        list(figure.lines),
        list(figure.markers),
        x_range=figure.x_range,
        log_y=figure.log_y,
        x_label=figure.x_label,
        y_label=figure.y_label,
        points=figure.points,
    )


def _clip(clip: FlaggedClip) -> dict:
    """A flagged clip for the page: its waveform drawn, its audio as a data URI (Opus: a few kB a second)."""
    from markupsafe import Markup

    wave = waveform(clip.low, clip.high, clip.seconds) if clip.low is not None and clip.high is not None else ""
    source = None
    if clip.audio:
        source = f"data:{clip.mime.replace(' ', '')};base64,{base64.b64encode(clip.audio).decode('ascii')}"
    part = None
    if clip.seconds and clip.total_s > clip.seconds + 0.05:
        part = f"the first {figures.num(clip.seconds)} s of {figures.num(clip.total_s)} s"
    return {"clip": clip, "wave": Markup(wave), "source": source, "part": part}


def render(report: Report) -> str:
    from markupsafe import Markup

    with np.errstate(all="ignore"):  # extreme logged values overflow to inf on the chart's scale, as they should
        summaries = {rule.id: rule.summary for rule in report.rules}
        subjects = [
            {
                "subject": s,
                "blocks": blocks(s, summaries),
                "charts": [Markup(svg) for c in s.charts if (svg := _draw(c))],
                "counts": [s.count(level) for level in (Level.FAIL, Level.WARN, Level.INFO)],
                "clips": [_clip(c) for c in s.clips],
            }
            for s in report.subjects
        ]
    fired = {f.rule_id for s in report.subjects for f in s.findings}
    docs = [(rule.id, Markup(inline_code(rule.summary)), Markup(_rule_doc_html(rule))) for rule in sorted(report.rules, key=lambda r: r.id) if rule.id in fired]
    return _environment().get_template("report.html.j2").render(report=report, subjects=subjects, docs=docs)
