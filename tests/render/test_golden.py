"""One canonical report of every command through every renderer, compared byte for byte.

Each command judges inputs this repository makes itself and ships: the
training logs of tests/data, the speech dataset, the tokenizer and the chat
file of examples/ (each with faults on purpose, so every golden shows WARN
and FAIL findings, not only a PASS).

Regenerate on purpose with ``pytest tests/render --update-golden`` and read the diff.
"""

from __future__ import annotations

import pytest

from tests.helpers import REPO
from trainproof.commands import judge, judge_compare, judge_epoch
from trainproof.render import RENDERERS, render

GOLDEN = REPO / "tests" / "golden"
INPUTS = ["tests/data/hot", "tests/data/healthy", "tests/data/overfit", "tests/data/missing/trainer_state.json"]
SUFFIX = {"text": "txt", "json": "json", "html": "html", "sarif": "sarif", "junit": "xml", "markdown": "md"}
OPTIONS = {"sarif": {"base": str(REPO)}}


COMMANDS = ["epoch", "compare", "data", "tokenizer", "text"]


def _data():
    pytest.importorskip("soundfile")
    options = {"no_cache": True, "jobs": 1, "progress": False, "excerpts": "waveform"}  # the flagged clips with waveforms (audio: --html's own test)
    return judge("data", ["examples/speech/ljspeech_tiny", "tests/data/speech_faulty"], **options)


def _tokenizer():
    pytest.importorskip("sentencepiece")
    return judge("tokenizer", ["examples/tokenizer/transcripts.txt"], tokenizer="examples/tokenizer/tts_unigram.model", progress=False)


def _text():
    pytest.importorskip("tokenizers")
    return judge("text", ["examples/text/chat.jsonl"], tokenizer="examples/text/tokenizer", max_len=96, progress=False)


JUDGED = {
    "epoch": lambda: judge_epoch(INPUTS),
    "compare": lambda: judge_compare(["tests/data/hot", "tests/data/overfit"], "tests/data/healthy"),
    "data": _data,
    "tokenizer": _tokenizer,
    "text": _text,
}


@pytest.fixture(scope="module")
def reports():
    """Each command's report, judged once from the repository root (so every path in the goldens is relative)."""
    cache: dict = {}

    def get(command):
        if command not in cache:
            with pytest.MonkeyPatch.context() as patch:
                patch.chdir(REPO)
                cache[command] = JUDGED[command]()
        return cache[command]

    return get


def test_every_golden_shows_findings_at_more_than_one_level(reports):
    """A golden of an all-PASS report proves little: each command's shows findings at more than one level."""
    for command in COMMANDS:
        levels = {finding.level.name for _, finding in reports(command).findings}
        assert "WARN" in levels and len(levels) >= 2, (command, levels)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("name", sorted(RENDERERS))
def test_golden(reports, update_golden, command, name):
    produced = render(name, reports(command), **OPTIONS.get(name, {}))
    target = GOLDEN / f"{command}.{SUFFIX[name]}"
    if update_golden:
        target.write_text(produced)
    assert target.exists(), f"missing golden file {target}: run pytest --update-golden"
    assert produced == target.read_text(), f"{target.name} changed; if intended, run pytest --update-golden and review the diff"


@pytest.mark.parametrize("command", COMMANDS)
def test_github_annotations_golden(reports, update_golden, command):
    from trainproof.render.github import annotations

    produced = annotations(reports(command), str(REPO))
    target = GOLDEN / f"{command}.annotations"
    if update_golden:
        target.write_text(produced)
    assert target.exists(), f"missing golden file {target}: run pytest --update-golden"
    assert produced == target.read_text(), f"{target.name} changed; if intended, run pytest --update-golden and review the diff"


def test_rendering_twice_gives_the_same_bytes(reports):
    for command in COMMANDS:
        for name in RENDERERS:
            options = OPTIONS.get(name, {})
            assert render(name, reports(command), **options) == render(name, reports(command), **options)
