"""The README's tables come from the code; this test fails when they drift."""

from __future__ import annotations

import re

import pytest

from tests.helpers import REPO
from trainproof.checks.registry import all_rules
from trainproof.checks.thresholds import DEFAULTS
from trainproof.render.rules import formats_table, markdown_table, rules_document

README = REPO / "README.md"


def generated() -> dict[str, str]:
    return {"rules": markdown_table(all_rules(), DEFAULTS), "formats": formats_table()}


def test_generated_tables_are_current(update_golden):
    text = README.read_text()
    for name, table in generated().items():
        pattern = re.compile(rf"(<!-- {name}:begin -->\n)(.*?)(<!-- {name}:end -->)", re.S)
        assert pattern.search(text), f"README lacks the {name} markers"
        if update_golden:
            text = pattern.sub(lambda m, t=table: m.group(1) + t + m.group(3), text)
        else:
            assert pattern.search(text).group(2) == table, f"README {name} table is stale: run pytest --update-golden"
    if update_golden:
        README.write_text(text)


def test_quick_start_names_a_shipped_example_and_the_test_command():
    text = README.read_text()
    block = text.split("## Quick start", 1)[1].split("```bash", 1)[1].split("```", 1)[0].strip().splitlines()
    assert len(block) == 2
    install, example = block[0].split(" && trainproof epoch ")
    assert install == "pip install -e ."  # the first verdict needs trainproof alone, not the test extra
    assert (REPO / example.strip()).is_file()
    assert block[1] == "pip install -e '.[test]' && python -m pytest"
    ci = (REPO / ".ci" / "run").read_text()
    assert example.strip() in ci
    assert "\npython -m pip install --quiet -e .\n" in ci
    assert ci.index("-e .\n") < ci.index(example.strip()) < ci.index("-e '.[test]'") < ci.index("\npython -m pytest\n")


def test_readme_never_installs_the_unrelated_pypi_project():
    for path in [README, REPO / ".ci" / "run"]:
        for line in path.read_text().splitlines():
            assert not re.search(r"pip install\s+(-U\s+)?['\"]?trainproof['\"]?\s*$", line.strip().strip("`")), line


def test_rules_document_is_current(update_golden):
    target = REPO / "docs" / "rules.md"
    produced = rules_document(all_rules(), DEFAULTS)
    if update_golden:
        target.write_text(produced)
    assert target.read_text() == produced, "docs/rules.md is stale: run pytest --update-golden"
    for rule in all_rules():
        assert f"## {rule.id}\n" in produced  # the anchor SARIF's helpUri points at


def test_readme_states_the_size_limits_the_readers_enforce():
    from trainproof.io.bounded import MAX_DOCUMENT_BYTES, MAX_LINE_BYTES, size_text
    from trainproof.runs.readers import tfrecord

    guarantees = README.read_text().split("### What trainproof guarantees", 1)[1].split("\n## ", 1)[0]
    guarantees = " ".join(guarantees.split())
    assert f"at most {size_text(MAX_LINE_BYTES)}" in guarantees
    assert f"at most {size_text(MAX_DOCUMENT_BYTES)}" in guarantees
    assert f"at most {size_text(tfrecord.MAX_RECORD_BYTES)}" in guarantees


def test_the_data_example_in_the_readme_is_what_trainproof_prints(capsys, monkeypatch):
    import pytest

    pytest.importorskip("soundfile")
    pytest.importorskip("pandas")
    from trainproof.cli import main

    text = README.read_text()
    shown = text.split("$ trainproof data examples/speech/ljspeech_tiny\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("CI", "1")
    code = main(["data", "examples/speech/ljspeech_tiny", "--no-cache"])
    assert capsys.readouterr().out == shown
    assert code == 0


def _shown_in_readme(command_line: str) -> str:
    return README.read_text().split(f"$ {command_line}\n", 1)[1].split("```", 1)[0]


@pytest.mark.parametrize(
    ("line", "needs", "exit_code"),
    [
        ("trainproof tokenizer examples/tokenizer/tts_unigram.model examples/tokenizer/transcripts.txt", "sentencepiece", 0),
        ("trainproof text examples/text/chat.jsonl --tokenizer examples/text/tokenizer --max-len 96", "transformers", 1),
    ],
)
def test_the_tokenizer_and_text_examples_in_the_readme_are_what_trainproof_prints(capsys, monkeypatch, line, needs, exit_code):
    from trainproof.cli import main

    pytest.importorskip(needs)
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("CI", "1")
    code = main(line.split()[1:])
    assert capsys.readouterr().out == _shown_in_readme(line)
    assert code == exit_code


def test_the_tokenizer_examples_are_what_their_maker_writes():
    import subprocess
    import sys

    import pytest

    pytest.importorskip("sentencepiece")
    pytest.importorskip("transformers")
    done = subprocess.run([sys.executable, str(REPO / "examples" / "tokenizer" / "make_example.py"), "--check"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
