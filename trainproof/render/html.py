"""A self-contained HTML report: verdicts, findings, and the curves as inline SVG.

No network assets, no script; jinja2 autoescapes everything from the report.
"""

from __future__ import annotations

from functools import cache, lru_cache

import numpy as np

from trainproof.checks.registry import BY_ID
from trainproof.model import Run
from trainproof.render.svg import Line, Marker
from trainproof.render.svg import chart as draw
from trainproof.report import Report, Subject

_MAX_MARKERS = 50


def _chart_of(rule_id: str) -> str:
    if "EVAL" in rule_id or "OVERFIT" in rule_id:
        return "eval"
    if "TIME" in rule_id or "LOADER" in rule_id:
        return "time"
    if "GRAD" in rule_id:
        return "grad"
    if "LR" in rule_id:
        return "lr"
    return "loss"


def _markers(subject: Subject, *which: str) -> list[Marker]:
    out = []
    for finding in subject.findings:
        if _chart_of(finding.rule_id) not in which:
            continue
        for step in finding.steps[:_MAX_MARKERS]:
            out.append(Marker(int(step), finding.rule_id, finding.level.label, finding.title))
    return out


def _charts(subject: Subject) -> list[str]:
    run: Run | None = subject.run
    if run is None:
        return []
    out = []
    span = (run.first_step, run.last_step) if run.first_step is not None and run.last_step is not None else None

    def chart(title: str, lines: list[Line], markers: list[Marker], **options: object) -> str:
        return draw(title, lines, markers, x_range=span, **options)

    loss_lines = []
    if run.loss is not None:
        loss_lines.append(Line(f"training loss ({run.loss_name})", run.loss.steps, run.loss.values, "train"))
    separate_eval = []
    for i, (name, series) in enumerate(run.eval_losses.items()):
        line = Line(name, series.steps, series.values, f"eval eval{i % 6}")
        train_mid = np.nanmedian(run.loss.values[np.isfinite(run.loss.values)]) if run.loss is not None and run.loss.finite.any() else None
        eval_mid = np.nanmedian(series.values[series.finite]) if series.finite.any() else None
        comparable = train_mid is not None and eval_mid is not None and train_mid > 0 and eval_mid > 0 and max(train_mid / eval_mid, eval_mid / train_mid) < 10
        (loss_lines if comparable else separate_eval).append(line)
    if loss_lines:
        out.append(chart("Loss", loss_lines, _markers(subject, "loss", *(() if separate_eval else ("eval",)))))
    if separate_eval:
        out.append(chart("Eval loss", separate_eval, _markers(subject, "eval")))
    if run.learning_rate is not None:
        out.append(chart("Learning rate", [Line("learning rate", run.learning_rate.steps, run.learning_rate.values, "lr")], _markers(subject, "lr"), log_y=False))
    if run.grad_norm is not None:
        out.append(chart("Gradient norm", [Line("gradient norm", run.grad_norm.steps, run.grad_norm.values, "grad")], _markers(subject, "grad")))
    timing = run.seconds_per_step()
    if timing is not None:
        steps, seconds, _ = timing
        out.append(chart("Seconds per step", [Line("seconds per step", steps, seconds, "time")], _markers(subject, "time")))
    return [c for c in out if c]


@cache
def _rule_doc_html(rule_id: str) -> str:
    import markdown

    rule = BY_ID.get(rule_id)
    if rule is None:
        return ""
    text = "\n\n".join(f"**{head}:** {body}" for head, body in rule.sections().items())
    return markdown.markdown(text)


@lru_cache(maxsize=1)
def _environment():
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("trainproof.render", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render(report: Report) -> str:
    from markupsafe import Markup

    with np.errstate(all="ignore"):  # extreme logged values overflow to inf on the chart's scale, as they should
        subjects = [{"subject": s, "charts": [Markup(c) for c in _charts(s)]} for s in report.subjects]
    fired = sorted({f.rule_id for s in report.subjects for f in s.findings})
    docs = [(rule_id, BY_ID[rule_id].summary, Markup(_rule_doc_html(rule_id))) for rule_id in fired if rule_id in BY_ID]
    return _environment().get_template("report.html.j2").render(report=report, subjects=subjects, docs=docs)
