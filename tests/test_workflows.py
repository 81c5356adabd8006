"""The project's workflows: valid, pinned, least-privileged, and using the action as documented."""

from __future__ import annotations

import re
import subprocess

import pytest
import yaml

from tests.helpers import REPO

WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")


def test_there_are_workflows():
    assert {p.name for p in WORKFLOWS} >= {"ci.yml", "self-test.yml"}


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_valid_against_the_github_workflow_schema(path):
    result = subprocess.run(["check-jsonschema", "--builtin-schema", "vendor.github-workflows", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_pinned_and_least_privileged(path):
    workflow = yaml.safe_load(path.read_text())
    assert workflow["permissions"] == {"contents": "read"}
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            uses = step.get("uses")
            if uses and uses != "./":
                assert PINNED.match(uses), f"{uses} is not pinned to a full commit SHA"
            if "run" in step:
                assert "${{" not in step["run"], f"{step.get('name')}: expressions must reach scripts through env:"


def test_self_test_uploads_sarif_per_command_even_on_failure():
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "self-test.yml").read_text())
    categories = set()
    for job in workflow["jobs"].values():
        uploads = [s for s in job["steps"] if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif@")]
        if uploads:
            assert job["permissions"]["security-events"] == "write"
        for step in uploads:
            assert step["if"] == "always()"
            categories.add(step["with"]["category"])
        assert any(s.get("uses") == "./" for s in job["steps"])
    assert categories == {"trainproof-epoch", "trainproof-compare"}
