"""A row's ``tools`` (function schemas) reach the chat template as transformers passes them: its lengths are those
``apply_chat_template(messages, tools=tools, tokenize=True)`` counts, on a real tokenizer built here."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers")

from tests.tokenizer import build  # noqa: E402
from trainproof.commands.text import measure  # noqa: E402
from trainproof.text.reader import read_text_dataset  # noqa: E402
from trainproof.tokenizer.load import load_tokenizer  # noqa: E402

TOOLS_TEMPLATE = (
    "{% if tools %}<|tools|>{% for tool in tools %}{{ tool | tojson }}\n{% endfor %}{% endif %}"
    "{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}"
    "{% if message.tool_calls %}{% for call in message.tool_calls %}<call>{{ call.function.name }}({{ call.function.arguments }})</call>{% endfor %}{% endif %}"
    "{{ eos_token }}\n{% endfor %}"
)
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city today.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}  # fmt: skip


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    built = build.hf_folder(tmp_path_factory.mktemp("hf_tools"))
    config = json.loads((built / "tokenizer_config.json").read_text())
    config["chat_template"] = TOOLS_TEMPLATE
    (built / "tokenizer_config.json").write_text(json.dumps(config))
    if (built / "chat_template.jinja").exists():  # where transformers 4.43+ saves it, read before the config's
        (built / "chat_template.jinja").write_text(TOOLS_TEMPLATE)
    return built


def test_rows_with_tools_are_measured_as_transformers_renders_them(folder, tmp_path):
    from transformers import AutoTokenizer

    call = {"id": "1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    rows = [
        {"messages": [{"role": "user", "content": "Weather in Paris?"}, {"role": "assistant", "content": "", "tool_calls": [call]},
                      {"role": "tool", "content": "Sunny, 21 C."}, {"role": "assistant", "content": "Sunny and 21 degrees."}],
         "tools": [WEATHER]},
        {"messages": [{"role": "user", "content": "Say hello."}, {"role": "assistant", "content": "Hello."}]},
    ]  # fmt: skip
    path = tmp_path / "tools.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    lengths = measure(read_text_dataset(path), load_tokenizer(folder))
    reference = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    def ids(messages: list, tools: list | None = None) -> list[int]:
        got = reference.apply_chat_template(messages, tools=tools, tokenize=True)
        return list(got["input_ids"] if hasattr(got, "keys") else got)  # transformers 5 gives a BatchEncoding

    expected = [len(ids(row["messages"], row.get("tools"))) for row in rows]
    assert list(lengths.total) == expected
    without = len(ids(rows[0]["messages"]))
    assert lengths.total[0] > without  # the schema was rendered, and counted
