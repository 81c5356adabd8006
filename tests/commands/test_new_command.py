"""A new command needs only its own modules and one registration: its subject, its context, its rules.

This test registers a small command of its own (a manifest that lists text
files; one rule that points at lines of the listed files) and sends it
through the one judge path and every renderer: each must locate the finding
at the listed file and its line, without knowing anything about the command.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from trainproof.checks.base import Hit, NotApplicable, Rule
from trainproof.checks.registry import RULES, all_rules
from trainproof.checks.thresholds import DEFAULTS, Thresholds
from trainproof.commands import judge, register, unregister
from trainproof.config import Settings
from trainproof.io.errors import InputError
from trainproof.judge import Command, Prepared, Stage
from trainproof.render import RENDERERS, render
from trainproof.render.github import annotations
from trainproof.report import Finding, Level, Subject, Verdict


@dataclass(frozen=True)
class Manifest:
    """The subject: a manifest file and the text files it lists, line by line."""

    path: str
    files: Mapping[str, tuple[str, ...]]


@dataclass(frozen=True)
class ManifestContext:
    manifest: Manifest
    t: Thresholds
    topic = "this manifest"

    def locate(self, finding: Finding) -> Finding:
        return finding if finding.file else replace(finding, file=self.manifest.path)


def todo_lines(ctx: ManifestContext) -> Iterator[Hit]:
    """A listed file still has a TODO line.

    What it detects: a line containing TODO in a file the manifest lists.
    Why it matters: the text is not finished.
    Fires on: "TODO: write this".
    Does not fire on: finished text.
    Does not mean: anything else.
    """
    if not ctx.manifest.files:
        raise NotApplicable("the manifest lists no file")
    for name, lines in ctx.manifest.files.items():
        for number, text in enumerate(lines, start=1):
            if "TODO" in text:
                yield Hit(message=f"{name} line {number} is not finished.", evidence=f"line {number}: {text!r}", file=name, line=number)


RULE = Rule("TP-TEST-TODO", Level.FAIL, todo_lines, "manifest-test")


class ManifestCommand(Command):
    name = "manifest-test"

    def read(self, source: Any, options: Mapping[str, Any]) -> Manifest:
        path = Path(source)
        if not path.is_file():
            raise InputError(path, "does not exist")
        listed = [line.strip() for line in path.read_text().splitlines() if line.strip()]
        return Manifest(str(path), {name: tuple((path.parent / name).read_text().splitlines()) for name in listed})

    def stages(self, thing: Manifest, settings: Settings, prepared: Prepared) -> Sequence[Stage]:
        return (Stage(self.rules, ManifestContext(thing, settings.thresholds)),)

    def present(self, thing: Manifest, subject: Subject, stages: Sequence[Stage], prepared: Prepared) -> Subject:
        return replace(subject, path=thing.path, format="manifest", headline=f"manifest of {len(thing.files)} files", summary={"files": len(thing.files)})


@pytest.fixture
def registered():
    register(ManifestCommand(), (RULE,))  # the one registration a new command needs
    yield
    unregister("manifest-test")


@pytest.fixture
def manifest(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("a.txt").write_text("done\nTODO: write this\n")
    Path("b.txt").write_text("finished\n")
    Path("list.txt").write_text("a.txt\nb.txt\n")
    return "list.txt"


def test_the_command_is_judged_through_the_one_path(registered, manifest):
    report = judge("manifest-test", [manifest, "nope.txt"])
    subject, missing = report.subjects
    assert report.command == "manifest-test"
    assert report.rules == (RULE,)
    assert subject.verdict is Verdict.FAIL
    assert subject.ran == ("TP-TEST-TODO",)
    (finding,) = subject.findings
    assert (finding.file, finding.line) == ("a.txt", 2)
    assert missing.error
    assert missing.unjudged == "does not exist"
    assert report.exit_code == 1


def test_every_renderer_locates_the_finding_at_its_file_and_line(registered, manifest, tmp_path):
    report = judge("manifest-test", [manifest])
    outputs = {name: render(name, report, **({"base": str(tmp_path)} if name == "sarif" else {})) for name in RENDERERS}

    (result,) = json.loads(outputs["sarif"])["runs"][0]["results"]
    place = result["locations"][0]["physicalLocation"]
    assert place["artifactLocation"]["uri"] == "a.txt"
    assert place["region"]["startLine"] == 2
    assert result["ruleId"] == "TP-TEST-TODO"
    descriptors = json.loads(outputs["sarif"])["runs"][0]["tool"]["driver"]["rules"]
    assert [d["id"] for d in descriptors] == ["TP-TEST-TODO"]

    failure = ET.fromstring(outputs["junit"]).find(".//testcase[@name='TP-TEST-TODO']/failure")
    assert failure is not None
    assert "Location: a.txt:2" in failure.text

    assert "| **FAIL** | `TP-TEST-TODO` | a.txt:2 |" in outputs["markdown"]

    annotation = annotations(report, str(tmp_path)).splitlines()[0]
    assert annotation.startswith("::error file=a.txt,line=2,title=TP-TEST-TODO")

    document = json.loads(outputs["json"])
    finding = document["subjects"][0]["findings"][0]
    assert (finding["file"], finding["line"]) == ("a.txt", 2)
    assert document["subjects"][0]["summary"] == {"files": 2}

    assert "manifest of 2 files" in outputs["text"]
    assert "[FAIL] TP-TEST-TODO  a.txt line 2 is not finished." in outputs["text"]
    assert "manifest of 2 files" in outputs["html"]
    assert "<code>TP-TEST-TODO</code> A listed file still has a TODO line." in outputs["html"]


def test_configuration_reaches_the_new_rule(registered, manifest):
    quiet = Settings(thresholds=DEFAULTS, levels={"TP-TEST-TODO": Level.WARN})
    assert judge("manifest-test", [manifest], quiet).subjects[0].verdict is Verdict.WARN
    ignored = Settings(thresholds=DEFAULTS, ignore=frozenset({"TP-TEST-TODO"}))
    subject = judge("manifest-test", [manifest], ignored).subjects[0]
    assert subject.verdict is Verdict.NOT_CHECKED
    assert subject.unjudged == "no rule ran: the configuration disables every rule"


def test_registration_refuses_a_taken_id_and_a_forward_deferral():
    with pytest.raises(ValueError, match="already registered"):
        RULES.register("other-test", (replace(all_rules()[0], command="other-test"),))
    later = Rule("TP-TEST-LATER", Level.WARN, todo_lines, "other-test", defers_to=("TP-TEST-EARLIER",))
    earlier = Rule("TP-TEST-EARLIER", Level.WARN, todo_lines, "other-test")
    with pytest.raises(ValueError, match="not an earlier rule"):
        RULES.register("other-test", (later, earlier))
    assert "other-test" not in RULES


def test_a_command_name_is_registered_once(registered):
    with pytest.raises(ValueError, match="already registered"):
        register(ManifestCommand(), (RULE,))
