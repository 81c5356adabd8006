"""GitHub Actions workflow commands: an annotation per finding, worst first, at most ten per level.

Annotations point at the log file and line when the finding knows it. Text is
escaped the way the runner expects (``%``, CR and LF in messages; also ``:``
and ``,`` in properties), so a path or message cannot inject a command, and
control characters from the user's files are spelled out
(:func:`trainproof.io.safe.visible`), so none reaches the log viewer raw.
"""

from pathlib import Path

from trainproof.io.safe import visible
from trainproof.render.shared import relative
from trainproof.report import Level, Report, location

PER_LEVEL = 10
COMMANDS = {Level.FAIL: "error", Level.WARN: "warning", Level.INFO: "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _relative(path: str, base: str | None) -> str:
    return visible(relative(path, base) or Path(path).as_posix())


def annotations(report: Report, base: str | None = None, per_level: int = PER_LEVEL) -> str:
    lines = []
    for subject in report.subjects:
        if subject.unjudged:
            lines.append(f"::error file={escape_property(_relative(subject.path, base))},title=trainproof::{escape_data(visible(subject.unjudged))}")
    for level in (Level.FAIL, Level.WARN, Level.INFO):
        chosen = [(s, f) for s, f in report.findings if f.level is level][:per_level]
        for subject, finding in chosen:
            path, line = location(subject, finding)
            props = [f"file={escape_property(_relative(path, base))}"]
            if line:
                props.append(f"line={line}")
            props.append(f"title={escape_property(visible(f'{finding.rule_id}: {finding.title}'))}")
            message = f"{visible(finding.message)}\nEvidence: {visible(finding.evidence)}"
            lines.append(f"::{COMMANDS[level]} {','.join(props)}::{escape_data(message)}")
    return "\n".join(lines) + ("\n" if lines else "")
