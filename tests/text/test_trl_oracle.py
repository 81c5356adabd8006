"""Preference rows are measured as TRL's DPOTrainer tokenizes them: a real trainer, on a tiny model built from a config
and a tokenizer trained in the session, prepares the same rows, and its prompt + chosen and prompt + rejected token
counts are the lengths trainproof judges (``Lengths.total`` and ``Lengths.rejected``)."""

from __future__ import annotations

import pytest

pytest.importorskip("trl")
pytest.importorskip("torch")

from tests.text.test_reader import assistant, jsonl, user  # noqa: E402
from tests.tokenizer import conftest as tokenizer_fixtures  # noqa: E402
from trainproof.commands.text import measure  # noqa: E402
from trainproof.text.reader import read_text_dataset  # noqa: E402
from trainproof.tokenizer.load import load_tokenizer  # noqa: E402

built = tokenizer_fixtures.built

SENTENCE = "Return the value of the argument."
LONG = " ".join([SENTENCE] * 12)


def _trl_lengths(folder, rows: list[dict], tmp_path) -> list[tuple[int, int]]:
    """(prompt + chosen, prompt + rejected) tokens of each row, as DPOTrainer prepares its train dataset."""
    import datasets
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM
    from trl import DPOConfig, DPOTrainer

    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=1024)  # fmt: skip
    arguments = DPOConfig(output_dir=str(tmp_path / "dpo"), report_to=[], max_length=None, dataset_num_proc=None, use_cpu=True)
    trainer = DPOTrainer(model=LlamaForCausalLM(config), ref_model=LlamaForCausalLM(config), args=arguments, train_dataset=datasets.Dataset.from_list(rows),
                         processing_class=tokenizer)  # fmt: skip
    prepared = trainer.train_dataset
    return [
        (len(row["prompt_ids"]) + len(row["chosen_ids"]), len(row["prompt_ids"]) + len(row["rejected_ids"]))
        for row in prepared
    ]


def test_conversational_preference_rows_have_the_lengths_dpo_trainer_gives_them(built, tmp_path):
    rows = [
        {"prompt": [user(SENTENCE)], "chosen": [assistant(SENTENCE)], "rejected": [assistant(LONG)]},
        {"prompt": [user(LONG), assistant(SENTENCE), user(SENTENCE)], "chosen": [assistant(LONG)], "rejected": [assistant("No.")]},
        {"prompt": [user("Why?")], "chosen": [assistant("Because.")], "rejected": [assistant("I will not say.")]},
    ]
    folder = built("hf")
    lengths = measure(read_text_dataset(jsonl(tmp_path, *rows)), load_tokenizer(folder))
    theirs = _trl_lengths(folder, rows, tmp_path)
    assert lengths.templated == bytes([1] * len(rows))
    assert [(lengths.total[i], lengths.rejected[i]) for i in range(len(rows))] == theirs
    assert theirs[0][1] > theirs[0][0] and theirs[1][0] > theirs[1][1]  # the long side is the longer: nothing was cut



def test_standard_preference_rows_have_the_lengths_dpo_trainer_gives_them(built, tmp_path):
    """Strings: TRL adds eos to each answer and tokenizes prompt + answer with the tokenizer's own special tokens (this
    one's bos); the answers start at a word, so no token spans the join."""
    rows = [
        {"prompt": SENTENCE, "chosen": " " + SENTENCE, "rejected": " " + LONG},
        {"prompt": LONG, "chosen": " " + LONG, "rejected": " No."},
    ]
    folder = built("hf")
    lengths = measure(read_text_dataset(jsonl(tmp_path, *rows)), load_tokenizer(folder))
    theirs = _trl_lengths(folder, rows, tmp_path)
    assert not any(lengths.templated)
    assert [(lengths.total[i], lengths.rejected[i]) for i in range(len(rows))] == theirs
