"""Chat templates rendered within bounds (issue 27, item 7): a template that loops for hours or builds gigabytes is
stopped, with one line naming it; a normal template renders exactly as transformers renders it.

The hostile templates run through ``trainproof text`` in a subprocess with a generous timeout and an address-space
limit (hang tests): before the fix, the loops ran past any timeout and ``'x' * 3000000000`` took 3 GB.
"""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest

from tests.tokenizer import build
from tests.tokenizer.test_hostile_inputs import one_error_line, trainproof_cli
from trainproof.tokenizer.batches import Failed
from trainproof.tokenizer.load import load_tokenizer

CONVERSATIONS = [
    [
        {"role": "system", "content": "Be brief. Always."},
        {"role": "user", "content": "What is two and two?  "},
        {"role": "assistant", "content": "Four, a banana."},
    ],
    [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello\nthere\ttab"}],
    [{"role": "assistant", "content": "I speak first."}, {"role": "user", "content": "Do you?"}],
]

NORMAL_TEMPLATES = {
    "zephyr": build.CHAT_TEMPLATE,
    "llama3": (
        "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + "
        "message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
        "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}"
        "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
    ),
    "chatml": (
        "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
        "{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}"
        "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    ),
    "mistral": (
        "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
        "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
        "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
        "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token }}"
        "{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}"
    ),
    "everything": (  # every operator, filter and method the bounds look at, used as templates use them
        "{% set ns = namespace(sys='', n=0) %}{% for m in messages %}{% if m.role == 'system' %}{% set ns.sys = ns.sys + m.content %}"
        "{% endif %}{% set ns.n = ns.n + 1 %}{% endfor %}[{{ ns.sys }}|{{ ns.n }}]{% for m in messages %}{{ m.role|upper }}: "
        "{{ m.content|tojson }} {{ m|tojson(indent=2) }} {{ '%-10s|' % m.role }}{{ '{:>12}'.format(m.role) }}"
        "{{ m.content|replace('a', 'AA')|center(80) }}{{ [m.role, m.content]|join(' / ') }}{{ m.content.split()|map('upper')|join(',') }}"
        "{{ ('x' * 3) ~ (loop.index ** 2) }}{{ m.content|indent(4, true) }}{{ m.content|wordwrap(20) }}{{ m.role.ljust(12) }}"
        "{{ strftime_now('%Y') != '' }}{% endfor %}{{ messages|map(attribute='content')|join('') }}{{ range(5)|list }}{{ dict(a=1) }}"
    ),
}


@pytest.fixture(scope="module")
def hf(built):
    return load_tokenizer(built("hf"))


def bounded(tokenizer, template: str):
    """The template of a transformers tokenizer as trainproof renders it (imported here: the subprocess tests below
    run on code that predates the module too)."""
    from trainproof.tokenizer.templates import BoundedTemplate

    return BoundedTemplate.of(tokenizer._tokenizer, template)


@pytest.mark.parametrize("name", sorted(NORMAL_TEMPLATES))
def test_a_normal_template_renders_exactly_as_transformers_renders_it(hf, name):
    """The same text for every conversation, and the same message where the template raises (the must-not-fire side)."""
    template = NORMAL_TEMPLATES[name]
    expected = []
    for conversation in CONVERSATIONS:
        try:
            expected.append(hf._tokenizer.apply_chat_template(conversation, tokenize=False, chat_template=template))
        except Exception as exc:  # noqa: BLE001 -- the template's own refusal, compared as text
            expected.append(f"{type(exc).__name__}: {exc}")
    got = bounded(hf, template).render_all(CONVERSATIONS)
    assert [text if isinstance(text, str) else text.reason for text in got] == expected


def test_a_conversation_far_longer_than_the_base_bound_renders(hf):
    """The size bound grows with the conversation: a template writing each content three times, for a content of
    400,000 characters, writes 1.2 million, past TEMPLATE_BASE_CHARS alone."""
    template = "{% for m in messages %}{{ m.content ~ m.content ~ m.content }}{% endfor %}"
    content = "All work and no play. " * 18_200
    (text,) = bounded(hf, template).render_all([[{"role": "user", "content": content}]])
    from trainproof.tokenizer.templates import TEMPLATE_BASE_CHARS

    assert text == content * 3
    assert len(text) > TEMPLATE_BASE_CHARS


def test_a_template_that_does_not_compile_fails_every_conversation_not_the_run(hf):
    got = bounded(hf, "{% for m in messages %}{{ m.content }}").render_all(CONVERSATIONS)
    assert all(isinstance(text, Failed) and text.reason.startswith("TemplateSyntaxError") for text in got)


def test_off_the_main_thread_a_loop_is_stopped_by_the_clock_it_reads(hf):
    """No SIGALRM outside the main thread: the deadline is read at each operation the sandbox sees."""
    template = "{% for i in range(100000) %}{% for j in range(100000) %}{{ '' }}{% endfor %}{% endfor %}"
    caught: list[BaseException] = []

    def render() -> None:
        try:
            bounded(hf, template).render_all(CONVERSATIONS[:1])
        except BaseException as exc:  # noqa: BLE001 -- handed to the test
            caught.append(exc)

    from trainproof.tokenizer.templates import TemplateOverrun

    worker = threading.Thread(target=render)
    worker.start()
    worker.join(timeout=120)
    assert not worker.is_alive()
    (exc,) = caught
    assert isinstance(exc, TemplateOverrun)
    assert exc.index == 0
    assert "runs past 2 s on one conversation" in exc.reason


SLOW_ON_ITS_MARK = (
    "{% for m in messages %}{% if m.content == 'slow' %}{% for i in range(100000) %}{% for j in range(100000) %}{{ '' }}"
    "{% endfor %}{% endfor %}{% endif %}{{ m.content }}{% endfor %}"
)


def test_in_the_main_thread_the_one_timer_stops_the_conversation_past_its_time_and_no_other(hf):
    """One SIGALRM timer for the batch reads the clock every ALARM_EVERY: the conversations before the slow one render
    (between two renderings there is no deadline to pass), and the slow one is named by its index."""
    import signal

    from trainproof.tokenizer.templates import TemplateOverrun

    before = signal.getsignal(signal.SIGALRM)
    conversations = [*CONVERSATIONS[:2], [{"role": "user", "content": "slow"}]]
    template = bounded(hf, SLOW_ON_ITS_MARK)
    assert template.render_all(CONVERSATIONS[:2]) == ["".join(m["content"] for m in turns) for turns in CONVERSATIONS[:2]]
    with pytest.raises(TemplateOverrun) as stopped:
        template.render_all(conversations)
    assert stopped.value.index == 2
    assert "runs past 2 s on one conversation" in stopped.value.reason
    assert signal.getsignal(signal.SIGALRM) is before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_callers_own_alarm_and_its_timer_are_put_back(hf):
    import signal
    import time

    rang: list[int] = []

    def callers(signum, frame):
        rang.append(signum)

    previous = signal.signal(signal.SIGALRM, callers)
    try:
        signal.setitimer(signal.ITIMER_REAL, 30.0)
        started = time.monotonic()
        assert len(bounded(hf, NORMAL_TEMPLATES["chatml"]).render_all(CONVERSATIONS * 50)) == 150
        left, interval = signal.getitimer(signal.ITIMER_REAL)
        assert signal.getsignal(signal.SIGALRM) is callers
        assert 0 < left <= 30.0 - (time.monotonic() - started) + 0.01 and interval == 0.0
        assert rang == []
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


HOSTILE = {
    "nested range loops": ("{% for i in range(100000) %}{% for j in range(100000) %}{{ '' }}{% endfor %}{% endfor %}", "runs past 2 s"),
    "loops that do nothing": ("{% set r = range(100000)|list %}{% for i in r %}{% for j in r %}{% endfor %}{% endfor %}", "runs past 2 s"),
    "a string times 3e9": ("{{ 'x' * 3000000000 }}", "builds a value of more than"),
    "a string times a variable": ("{% set n = 3000000000 %}{{ 'x' * n }}", "builds a value of more than"),
    "a padding filter": ("{% set n = 3000000000 %}{{ 'x'|center(n) }}", "builds a value of more than"),
    "a padding method": ("{% set n = 3000000000 %}{{ 'x'.ljust(n) }}", "builds a value of more than"),
    "a format width": ("{{ '{:>3000000000}'.format(1) }}", "builds a value of more than"),
    "a percent width": ("{{ '%3000000000d' % 1 }}", "builds a value of more than"),
    "a format filter width": ("{% set f = '%3000000000d' %}{{ f|format(1) }}", "builds a value of more than"),
    "a tab expansion": ("{% set t = '\\t' * 1000 %}{{ t.expandtabs(3000000) }}", "builds a value of more than"),
    "a power": ("{{ 10 ** 100000000 }}", "computes a number of more than"),
    "doubling in a namespace": (
        "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}",
        "builds a value of more than",
    ),
    "doubling through a macro": (
        "{% macro d(s, n) %}{% if n %}{{ d(s ~ s, n - 1) }}{% else %}{{ s|length }}{% endif %}{% endmacro %}{{ d('x', 40) }}",
        "builds a value of more than",
    ),
    "a list of big strings": (
        "{% set ns = namespace(l=[]) %}{% for i in range(5000) %}{% set ns.l = ns.l + ['y' * 1000000 ~ i] %}{% endfor %}",
        "builds a value of more than",
    ),
    "a join of a mapped range": ("{{ range(100000)|map('string')|map('center', 100000)|join }}", "builds a value of more than"),
    "a long separator joining a mapped range": ("{{ range(100000)|map('string')|join('y' * 100000) }}", "builds a value of more than"),
    "a join method on a mapped range": ("{{ ('y' * 100000).join(range(100000)|map('string')) }}", "builds a value of more than"),
    "a join by attribute": ("{{ range(100000)|list|join('y' * 100000, attribute='real') }}", "builds a value of more than"),
    "an endless output": ("{% for i in range(100000) %}{{ 'x' * 100000 }}{% endfor %}", "writes more than"),
    "a replace": ("{% set s = 'x' * 50000 %}{{ s|replace('x', s) }}", "builds a value of more than"),
    "an indented json": ("{{ range(100000)|list|tojson(indent=100000) }}", "builds a value of more than"),
    "an indent": ("{% set s = '\\n' * 100000 %}{{ s|indent(100000) }}", "builds a value of more than"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_template_is_stopped_with_one_line(built, tmp_path, name):
    """A hang test (subprocess, generous timeout, limited address space): exit 2 and one line naming the tokenizer,
    the line being rendered and the bound."""
    template, said = HOSTILE[name]
    folder = Path(shutil.copytree(built("hf"), tmp_path / "tok"))
    (folder / "chat_template.jinja").write_text(template, encoding="utf-8")
    row = {"messages": [{"role": "user", "content": "What is two and two?"}, {"role": "assistant", "content": "Four."}]}
    (tmp_path / "chat.jsonl").write_text(json.dumps(row) + "\n")
    done = trainproof_cli("text", "--tokenizer", "tok", "--max-len", 100, "chat.jsonl", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    line = one_error_line(done.stderr)
    assert line.startswith("trainproof: error: tok: its chat template")
    assert said in line
    assert line.endswith("trainproof stops a template there")


def test_a_constant_too_large_to_fold_stops_the_template_while_it_compiles(hf):
    """jinja2 folds a filter of constants while compiling: ``'x'|center(3000000000)`` is stopped there, before any
    conversation (index None), instead of allocating 3 GB."""
    from trainproof.tokenizer.templates import TemplateOverrun

    with pytest.raises(TemplateOverrun) as stopped:
        bounded(hf, "{{ 'x'|center(3000000000) }}").render_all(CONVERSATIONS[:1])
    assert stopped.value.index is None
    assert "builds a value of more than" in stopped.value.reason


def test_a_template_too_long_to_compile_is_stopped(hf):
    from trainproof.tokenizer.templates import TemplateOverrun

    with pytest.raises(TemplateOverrun, match="characters long, more than the 1,048,576 trainproof compiles"):
        bounded(hf, "x" * ((1 << 20) + 1)).render_all(CONVERSATIONS[:1])
