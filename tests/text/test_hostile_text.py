"""``trainproof text`` on what a hostile pull request can commit, and on chat templates that refuse rows (issue 27):
a dataset linked to a credentials file is refused (items 1); a template that raises on some or every conversation is
said, and its rows are not measured as if it had rendered them (item 8)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.text import findings_of, judged, lines_of
from tests.text.test_cli import one_error_line, run
from tests.text.test_reader import assistant, jsonl, user
from tests.tokenizer import conftest as tokenizer_fixtures
from tests.tokenizer.test_hostile_inputs import CHAT_ROW, HANG_TIMEOUT_S, SECRET, SOURCE
from trainproof.report import Skipped, Verdict
from trainproof.tokenizer.load import load_tokenizer

built = tokenizer_fixtures.built  # the session's tokenizers, trained once at their first request (tests/tokenizer)

SENTENCE = "Return the value of the argument. "
LENGTH_RULES = ("TP-TEXT-TRUNCATED-TARGET", "TP-TEXT-TOO-LONG")


@pytest.fixture
def repo(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text(f"[http]\n\textraheader = AUTHORIZATION: basic {SECRET}\n")
    (tmp_path / "data").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --- item 1: a dataset behind a symlink ---------------------------------------------------------------------------


def test_a_dataset_linked_into_git_is_refused(repo, capsys):
    """Before: the config was read as the dataset (and judged: a FAIL, exit 1)."""
    os.symlink("../.git/config", repo / "data" / "train.jsonl")
    code, out, err = run(capsys, "text", "data/train.jsonl")
    assert code == 2
    line = one_error_line(err)
    assert "data/train.jsonl: leads through a symlink into a .git folder" in line
    assert "--follow-links" in line
    assert SECRET[4:12] not in out + err


@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="no /proc/self/environ here")
def test_a_dataset_linked_to_the_environment_is_refused_for_the_link(repo, capsys):
    os.symlink("/proc/self/environ", repo / "data" / "train.jsonl")
    code, _, err = run(capsys, "text", "data/train.jsonl")
    assert code == 2
    assert "leads through a symlink to /proc/" in one_error_line(err)  # before: read, then "binary"


def test_follow_links_and_links_within_the_checkout_read_the_dataset(repo, capsys, tmp_path_factory):
    outside = tmp_path_factory.mktemp("elsewhere") / "train.jsonl"
    outside.write_text(CHAT_ROW)
    os.symlink(outside, repo / "data" / "out.jsonl")
    (repo / "shared.jsonl").write_text(CHAT_ROW)
    os.symlink("../shared.jsonl", repo / "data" / "in.jsonl")
    assert run(capsys, "text", "data/out.jsonl")[0] == 2
    code, out, err = run(capsys, "text", "--follow-links", "data/out.jsonl", "data/in.jsonl")
    assert (code, err) == (0, "")
    assert out.count("PASS  data/") == 2


def test_a_pipe_and_dev_stdin_are_read_as_before(repo, tmp_path_factory):
    outside = tmp_path_factory.mktemp("elsewhere") / "train.jsonl"
    outside.write_text(CHAT_ROW)
    env = {**os.environ, "PYTHONPATH": str(SOURCE)}
    command = [sys.executable, "-m", "trainproof", "text", "/dev/stdin"]
    piped = subprocess.run(command, cwd=repo, env=env, input=CHAT_ROW, capture_output=True, text=True, timeout=HANG_TIMEOUT_S)
    assert (piped.returncode, piped.stderr) == (0, ""), piped.stderr
    with outside.open() as handle:
        redirected = subprocess.run(command, cwd=repo, env=env, stdin=handle, capture_output=True, text=True, timeout=HANG_TIMEOUT_S)
    assert (redirected.returncode, redirected.stderr) == (0, ""), redirected.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_link_to_a_pipe_outside_the_folder_is_judged_as_a_link(repo, capsys, tmp_path_factory):
    """Before: a link whose target was a FIFO skipped the link rule, and the pipe was read (a committed link to
    /proc/self/fd/1 waited for ever on the run's own stdout pipe). Only a descriptor the user names is exempt."""
    fifo = tmp_path_factory.mktemp("elsewhere") / "pipe"
    os.mkfifo(fifo)
    os.symlink(fifo, repo / "data" / "train.jsonl")
    writer = subprocess.Popen(["sh", "-c", f"cat > '{fifo}'"], stdin=subprocess.PIPE)
    try:
        writer.stdin.write(CHAT_ROW.encode())
        writer.stdin.close()
        code, _, err = run(capsys, "text", "data/train.jsonl")
    finally:
        writer.kill()  # still waiting for a reader
        writer.wait()
    assert code == 2
    assert f"data/train.jsonl: leads through a symlink to {fifo}, outside the input's folder" in one_error_line(err)


def test_a_long_value_in_a_problem_is_quoted_cut_with_its_length(tmp_path):
    """The reader's quotations go through trainproof.io.safe.quoted: 40 characters, then the length."""
    path = jsonl(tmp_path, {"messages": [user("hi"), {"role": "k" * 5000, "content": "x"}, assistant("a")]}, {"messages": [{"role": "k" * 5000, "content": "x"}]})
    subject = judged(path)
    (finding,) = findings_of(subject, "TP-TEXT-ROLES")
    assert "... (5,000 characters), which is none of" in finding.message
    (unanswered,) = findings_of(subject, "TP-TEXT-NO-ASSISTANT")
    assert "(its roles: 'kkk" in unanswered.message
    assert "... (5,000 characters))" in unanswered.message
    assert all("k" * 41 not in f.message for f in subject.findings)


# --- item 8: a chat template that refuses conversations ------------------------------------------------------------


def _templated(built, tmp_path: Path, template: str):
    folder = shutil.copytree(built("hf"), tmp_path / "templated")
    (folder / "chat_template.jinja").write_text(template, encoding="utf-8")
    return load_tokenizer(folder)


REFUSES_EVERYTHING = "{{ raise_exception('This template renders nothing.') }}"
REFUSES_SYSTEM = (
    "{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
    "{% for message in messages %}{{ '<|' + message['role'] + '|>\\n' + message['content'] + eos_token + '\\n' }}{% endfor %}"
)
"""Gemma's way: a system turn refused, every other conversation rendered like build.CHAT_TEMPLATE."""


def test_a_template_that_refuses_every_conversation_leaves_the_lengths_unjudged(built, tmp_path):
    """Before: every row was measured as its bare contents (fewer tokens than the trainer would see: the role lines
    and eos tokens were missing), with no note, and the length rules PASSed. The contents without the template are not
    what a trainer sees, and a trainer rendering these rows would stop: NOT-CHECKED, saying why."""
    tokenizer = _templated(built, tmp_path, REFUSES_EVERYTHING)
    path = jsonl(tmp_path, {"messages": [user(SENTENCE), assistant(SENTENCE)]}, {"messages": [user("Name a colour."), assistant("Blue.")]})
    subject = judged(path, tokenizer=tokenizer, max_len=4096)
    why = "the chat template fails on every conversation (TemplateError: This template renders nothing.)"
    assert subject.verdict is Verdict.NOT_CHECKED
    assert subject.unjudged == f"--max-len could not be judged: {why}"
    assert tuple(s for s in subject.skipped if s.rule_id in LENGTH_RULES) == tuple(Skipped(rule, why) for rule in LENGTH_RULES)
    assert "tokens" not in subject.summary
    (note,) = subject.notes
    assert note.startswith("the chat template fails on 2 of 2 conversations, so their length as a trainer would see it is not known")
    assert "line 1 (TemplateError: This template renders nothing.); line 2 (" in note
    without_limit = judged(path, tokenizer=tokenizer)
    assert without_limit.notes == subject.notes  # said even when no limit is asked for


def test_the_note_names_the_first_refused_rows_and_counts_the_rest(built, tmp_path):
    tokenizer = _templated(built, tmp_path, REFUSES_EVERYTHING)
    path = jsonl(tmp_path, *({"messages": [user(f"Question {k}?"), assistant("Yes.")]} for k in range(7)))
    (note,) = judged(path, tokenizer=tokenizer).notes
    why = "(TemplateError: This template renders nothing.)"
    assert note.endswith(f": line 1 {why}; line 2 {why}; line 3 {why}; line 4 {why}; line 5 {why}; and 2 more")


def test_a_template_that_refuses_some_conversations_costs_those_rows_and_says_so(built, tmp_path):
    """Before: the refused conversation was measured as its contents, silently. Now it is left out (and named), and
    the others are measured through the template."""
    tokenizer = _templated(built, tmp_path, REFUSES_SYSTEM)
    rows = [
        {"messages": [user(SENTENCE), assistant(SENTENCE)]},
        {"messages": [{"role": "system", "content": "Be brief."}, user(SENTENCE * 40), assistant("Yes.")]},
        {"messages": [user(SENTENCE * 40), assistant("Yes.")]},
    ]
    subject = judged(jsonl(tmp_path, *rows), tokenizer=tokenizer, max_len=64)
    assert subject.unjudged is None
    assert subject.notes == (
        "the chat template fails on 1 of 3 conversations, so its length as a trainer would see it is not known and not "
        "judged: line 2 (TemplateError: System role not supported)",
    )
    assert lines_of(findings_of(subject, "TP-TEXT-TOO-LONG")) == [3]  # line 2 is as long, but unmeasured
    (too_long,) = findings_of(subject, "TP-TEXT-TOO-LONG")
    assert too_long.message.startswith("Line 3 has ")
    assert lines_of(findings_of(subject, "TP-TEXT-TRUNCATED-TARGET")) == [3]
    rendered = tokenizer.render_chat(rows[2]["messages"])
    assert rendered.startswith("<|user|>\n")  # measured through the template
    (ids,) = tokenizer.encode_batch([rendered])
    assert f"Line 3 has {len(ids):,} tokens" in too_long.message


def test_a_template_that_renders_every_conversation_has_no_note(built, tmp_path):
    tokenizer = _templated(built, tmp_path, REFUSES_SYSTEM)
    subject = judged(jsonl(tmp_path, {"messages": [user(SENTENCE), assistant(SENTENCE)]}), tokenizer=tokenizer, max_len=4096)
    assert subject.verdict is Verdict.PASS
    assert subject.notes == ()
    assert subject.summary["tokens"] > 0
