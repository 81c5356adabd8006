"""One canonical report through every renderer, compared byte for byte.

Regenerate on purpose with ``pytest tests/render --update-golden`` and read the diff.
"""

from __future__ import annotations

import pytest

from tests.helpers import REPO
from trainproof.commands import judge_compare, judge_epoch
from trainproof.render import RENDERERS, render

GOLDEN = REPO / "tests" / "golden"
INPUTS = ["tests/data/hot", "tests/data/healthy", "tests/data/overfit", "tests/data/missing/trainer_state.json"]
SUFFIX = {"text": "txt", "json": "json", "html": "html", "sarif": "sarif", "junit": "xml", "markdown": "md"}
OPTIONS = {"sarif": {"base": str(REPO)}}


@pytest.fixture
def reports(monkeypatch):
    monkeypatch.chdir(REPO)
    return {
        "epoch": judge_epoch(INPUTS),
        "compare": judge_compare(["tests/data/hot", "tests/data/overfit"], "tests/data/healthy"),
    }


@pytest.mark.parametrize("command", ["epoch", "compare"])
@pytest.mark.parametrize("name", sorted(RENDERERS))
def test_golden(reports, update_golden, command, name):
    produced = render(name, reports[command], **OPTIONS.get(name, {}))
    target = GOLDEN / f"{command}.{SUFFIX[name]}"
    if update_golden:
        target.write_text(produced)
    assert target.exists(), f"missing golden file {target}: run pytest --update-golden"
    assert produced == target.read_text(), f"{target.name} changed; if intended, run pytest --update-golden and review the diff"


@pytest.mark.parametrize("command", ["epoch", "compare"])
def test_github_annotations_golden(reports, update_golden, command):
    from trainproof.render.github import annotations

    produced = annotations(reports[command], str(REPO))
    target = GOLDEN / f"{command}.annotations"
    if update_golden:
        target.write_text(produced)
    assert target.exists(), f"missing golden file {target}: run pytest --update-golden"
    assert produced == target.read_text(), f"{target.name} changed; if intended, run pytest --update-golden and review the diff"


def test_rendering_twice_gives_the_same_bytes(reports):
    for name in RENDERERS:
        options = OPTIONS.get(name, {})
        assert render(name, reports["epoch"], **options) == render(name, reports["epoch"], **options)
