"""Reusable pieces for producing REAL ``transformers.Trainer`` logs on CPU.

A tiny GPT-2-style causal LM (2 layers, hidden 64, ~0.1M parameters, built
from a ``GPT2Config``; nothing is downloaded) is trained on a small,
deterministic, synthetic task.  Every run writes a genuine
``trainer_state.json`` via ``trainer.save_state()``.

Importing this module has no side effects besides importing numpy, torch and
transformers.  To import it by file path, register it in ``sys.modules``
before executing it (``dataclasses`` needs that)::

    spec = importlib.util.spec_from_file_location("tiny_task", path)
    tiny_task = importlib.util.module_from_spec(spec)
    sys.modules["tiny_task"] = tiny_task
    spec.loader.exec_module(tiny_task)
    state = tiny_task.train("healthy", seed=0, output_dir="/tmp/run",
                            extra_callbacks=[MyCallback()], max_steps=50)

Tasks (vocabulary of 32 tokens, sequences of 64 tokens)
-----
``count``   Modular counting: ``x[t] = (x0 + d * t) mod 32`` with the start
            ``x0`` uniform and the stride ``d`` drawn per sequence from
            (1, 2, 4, 8, 16).  Only the first token (and the stride, known after
            the second) is unpredictable, so the loss can fall from
            log(32) = 3.47 to about 0.05.  Default task.
``repeat``  A random pattern of 2..8 tokens tiled to the sequence length
            (needs induction heads; learns more slowly; not used by CONFIGS).
``markov``  Sequences from one fixed sparse first-order Markov chain (every
            token has 4 possible successors).  Only the bigram statistics
            generalise; anything beyond them learned from a tiny train set is
            memorisation.  Used by ``overfit``.

Labels: ``true`` uses ``labels = input_ids`` (the model shifts internally).
``shuffled`` permutes the label positions within every training sequence
(independently per sequence, deterministic from the seed), which destroys the
next-token relation but keeps each sequence's bag of tokens.  The eval set
always has true labels.
"""

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

VOCAB_SIZE = 32
SEQ_LEN = 64
MARKOV_BRANCHING = 4
MARKOV_TABLE_SEED = 1234  # fixed: the chain is part of the task, not of the run
LOG_VOCAB = math.log(VOCAB_SIZE)  # loss of a uniform guess


# --------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------

def _repeat_sequences(rng: np.random.Generator, n: int, seq_len: int, vocab: int) -> np.ndarray:
    out = np.empty((n, seq_len), dtype=np.int64)
    for i in range(n):
        k = int(rng.integers(2, 9))  # period 2..8
        pattern = rng.integers(0, vocab, size=k)
        out[i] = np.resize(pattern, seq_len)
    return out


# Strides 4, 8 and 16 visit only 8, 4 and 2 of the 32 tokens, so a sequence's
# bag of tokens tells something: a model trained on shuffled labels can learn
# it (its loss falls from log 32 to about 2.1, as a real model's does on
# shuffled labels) but never the next-token rule (healthy reaches about 0.1).
COUNT_STEPS = (1, 2, 4, 8, 16)


def _count_sequences(rng: np.random.Generator, n: int, seq_len: int, vocab: int) -> np.ndarray:
    start = rng.integers(0, vocab, size=(n, 1))
    step = np.asarray(COUNT_STEPS)[rng.integers(0, len(COUNT_STEPS), size=(n, 1))]
    return (start + step * np.arange(seq_len)[None, :]) % vocab


def markov_table(vocab: int = VOCAB_SIZE, branching: int = MARKOV_BRANCHING) -> tuple[np.ndarray, np.ndarray]:
    """The fixed sparse transition table: (successors[V, b], probs[V, b])."""
    rng = np.random.default_rng(MARKOV_TABLE_SEED)
    succ = np.stack([rng.choice(vocab, size=branching, replace=False) for _ in range(vocab)])
    probs = rng.dirichlet(np.full(branching, 2.0), size=vocab)
    return succ, probs


def _markov_sequences(rng: np.random.Generator, n: int, seq_len: int, vocab: int) -> np.ndarray:
    succ, probs = markov_table(vocab)
    cum = np.cumsum(probs, axis=1)
    out = np.empty((n, seq_len), dtype=np.int64)
    out[:, 0] = rng.integers(0, vocab, size=n)
    u = rng.random((n, seq_len))
    for t in range(1, seq_len):
        prev = out[:, t - 1]
        idx = (u[:, t, None] > cum[prev]).sum(axis=1)
        idx = np.minimum(idx, MARKOV_BRANCHING - 1)
        out[:, t] = succ[prev, idx]
    return out


TASKS = {"repeat": _repeat_sequences, "count": _count_sequences, "markov": _markov_sequences}


class SeqDataset(torch.utils.data.Dataset):
    """A list of ``{"input_ids", "labels", "attention_mask"}`` examples."""

    def __init__(self, input_ids: np.ndarray, labels: np.ndarray):
        self.input_ids = torch.as_tensor(input_ids, dtype=torch.long)
        self.labels = torch.as_tensor(labels, dtype=torch.long)

    def __len__(self) -> int:
        return self.input_ids.shape[0]

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        ids = self.input_ids[i]
        return {"input_ids": ids, "labels": self.labels[i], "attention_mask": torch.ones_like(ids)}


def make_sequences(task: str, n: int, seed: int, seq_len: int = SEQ_LEN, vocab: int = VOCAB_SIZE) -> np.ndarray:
    """Deterministic ``[n, seq_len]`` int64 token array for ``task``."""
    rng = np.random.default_rng(seed)
    return TASKS[task](rng, n, seq_len, vocab)


def shuffle_labels(ids: np.ndarray, seed: int) -> np.ndarray:
    """Permute label positions independently within every sequence."""
    rng = np.random.default_rng(seed)
    return np.stack([row[rng.permutation(row.shape[0])] for row in ids])


def build_datasets(task: str, n_train: int, n_eval: int, seed: int, label_mode: str = "true",
                   seq_len: int = SEQ_LEN, vocab: int = VOCAB_SIZE) -> tuple[SeqDataset, SeqDataset]:
    """Train and held-out eval sets, deterministic from ``seed``.

    The eval set comes from a disjoint seed stream and always has true labels.
    """
    train_ids = make_sequences(task, n_train, seed=10_000 + seed, seq_len=seq_len, vocab=vocab)
    eval_ids = make_sequences(task, n_eval, seed=20_000 + seed, seq_len=seq_len, vocab=vocab)
    if label_mode == "true":
        train_labels = train_ids.copy()
    elif label_mode == "shuffled":
        train_labels = shuffle_labels(train_ids, seed=30_000 + seed)
    else:
        raise ValueError(f"unknown label_mode {label_mode!r}")
    return SeqDataset(train_ids, train_labels), SeqDataset(eval_ids, eval_ids.copy())


# --------------------------------------------------------------------------
# model
# --------------------------------------------------------------------------

def model_config(dropout: float = 0.0, vocab: int = VOCAB_SIZE, seq_len: int = SEQ_LEN) -> GPT2Config:
    return GPT2Config(
        vocab_size=vocab,
        n_positions=seq_len,
        n_embd=64,
        n_layer=2,
        n_head=4,
        n_inner=256,
        resid_pdrop=dropout,
        embd_pdrop=dropout,
        attn_pdrop=dropout,
        bos_token_id=0,
        eos_token_id=0,
        tie_word_embeddings=True,
    )


def build_model(seed: int, dropout: float = 0.0) -> GPT2LMHeadModel:
    """A ~0.1M-parameter 2-layer GPT-2 built from a config (no downloads)."""
    torch.manual_seed(seed)
    return GPT2LMHeadModel(model_config(dropout=dropout))


def n_params(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


# --------------------------------------------------------------------------
# configs
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class RunConfig:
    task: str = "count"
    label_mode: str = "true"
    n_train: int = 9600          # 300 steps x 32 = one pass
    n_eval: int = 256
    batch_size: int = 32
    max_steps: int = 300
    learning_rate: float = 2e-3
    lr_scheduler_type: str = "cosine"
    warmup_steps: int = 30
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    optim: str = "adamw_torch"
    dropout: float = 0.0
    logging_steps: int = 5
    eval_steps: int | None = 25
    logging_nan_inf_filter: bool = True  # the Trainer default
    # > 0: start from a model trained first, in-process, by the healthy config for this many steps
    # (its log is thrown away), as a fine-tune starts from a pretrained checkpoint
    pretrain_steps: int = 0
    pretrain_task: str = "count"  # the task of those pretraining steps (the healthy config's, unless named)
    # True: every evaluation also logs eval_accuracy, the share of next tokens the model predicts right
    accuracy: bool = False


HEALTHY = RunConfig()

CONFIGS: dict[str, RunConfig] = {
    # sane AdamW (lr 2e-3), 30 warmup steps + cosine decay, clipping at 1.0, eval every 25 steps
    "healthy": HEALTHY,
    # 1500x the healthy learning rate, constant, no warmup, no clipping
    "lr_hot": dataclasses.replace(HEALTHY, learning_rate=3.0, lr_scheduler_type="constant",
                                  warmup_steps=0, max_grad_norm=0.0),
    # nothing moves
    "lr_zero": dataclasses.replace(HEALTHY, learning_rate=0.0),
    # labels permuted within each training sequence
    "bad_labels": dataclasses.replace(HEALTHY, label_mode="shuffled"),
    # 16 training sequences of the markov task (150 epochs), no weight decay, eval every 15 steps
    "overfit": dataclasses.replace(HEALTHY, task="markov", n_train=16, batch_size=8, weight_decay=0.0,
                                   eval_steps=15),
    # absurd learning rate, no clipping: the loss explodes, then float32 overflows to NaN;
    # the Trainer's NaN/inf loss filter is switched off so the logged loss shows it too
    "nonfinite": dataclasses.replace(HEALTHY, learning_rate=300.0, max_grad_norm=0.0,
                                     logging_nan_inf_filter=False),
    # a fine-tune gone wrong: start from the healthy model (300 steps of `count`, trained in-process),
    # fine-tune it on `markov` with the learning rate warmed up over 60 steps to a peak of 0.2 (100x
    # healthy; clipping keeps it finite) and held there, eval every 50 steps: the eval loss is lowest at
    # its first evaluation and ends well above it while the training loss rises and partly recovers
    "finetune_hot": dataclasses.replace(HEALTHY, task="markov", pretrain_steps=300, learning_rate=0.2,
                                        lr_scheduler_type="constant_with_warmup", warmup_steps=60, eval_steps=50),
}


def config_diff(name: str, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Knobs of ``CONFIGS[name]`` (plus overrides) that differ from ``healthy``."""
    cfg = dataclasses.replace(CONFIGS[name], **(overrides or {}))
    base = dataclasses.asdict(HEALTHY)
    return {k: v for k, v in sorted(dataclasses.asdict(cfg).items()) if base[k] != v}


# --------------------------------------------------------------------------
# training
# --------------------------------------------------------------------------

def make_trainer(config_name: str, seed: int, output_dir: str,
                 extra_callbacks: Iterable[Any] | None = None, training_args: dict[str, Any] | None = None,
                 **overrides: Any) -> Trainer:
    """Build (but do not run) the Trainer for ``CONFIGS[config_name]``.

    ``overrides`` replace fields of the RunConfig (e.g. ``max_steps=50``);
    ``training_args`` adds ``TrainingArguments`` (e.g. ``ddp_backend="gloo"``).
    """
    cfg = dataclasses.replace(CONFIGS[config_name], **overrides)
    train_ds, eval_ds = build_datasets(cfg.task, cfg.n_train, cfg.n_eval, seed, cfg.label_mode)
    model = build_model(seed, dropout=cfg.dropout)
    if cfg.pretrain_steps:
        # the starting checkpoint: healthy training, run now (a config with pretrain_steps trains here)
        import os

        pretrain = make_trainer("healthy", seed, os.path.join(output_dir, "pretrain"), training_args=training_args,
                                max_steps=cfg.pretrain_steps, eval_steps=None, task=cfg.pretrain_task)
        pretrain.train()
        model = pretrain.model
    do_eval = cfg.eval_steps is not None
    args = TrainingArguments(
        output_dir=output_dir,
        max_steps=cfg.max_steps,
        per_device_train_batch_size=cfg.batch_size,
        per_device_eval_batch_size=128,
        learning_rate=cfg.learning_rate,
        lr_scheduler_type=cfg.lr_scheduler_type,
        warmup_steps=cfg.warmup_steps,
        weight_decay=cfg.weight_decay,
        max_grad_norm=cfg.max_grad_norm,
        optim=cfg.optim,
        logging_strategy="steps",
        logging_steps=cfg.logging_steps,
        logging_first_step=True,
        logging_nan_inf_filter=cfg.logging_nan_inf_filter,
        eval_strategy="steps" if do_eval else "no",
        eval_steps=cfg.eval_steps if do_eval else None,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        use_cpu=True,
        dataloader_num_workers=0,
        seed=seed,
        data_seed=seed,
        **(training_args or {}),
    )
    metrics = {"compute_metrics": next_token_accuracy, "preprocess_logits_for_metrics": predicted_tokens} if cfg.accuracy else {}
    return Trainer(
        model=model,
        args=args,
        train_dataset=train_ds,
        eval_dataset=eval_ds if do_eval else None,
        callbacks=list(extra_callbacks) if extra_callbacks else None,
        **metrics,
    )


def predicted_tokens(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The token the model predicts at each position (kept instead of the logits, which the Trainer would gather)."""
    return logits.argmax(dim=-1)


def next_token_accuracy(prediction: Any) -> dict[str, float]:
    """The share of next tokens predicted right: position t's prediction against token t + 1."""
    predicted, labels = prediction.predictions, prediction.label_ids
    return {"accuracy": float((predicted[:, :-1] == labels[:, 1:]).mean())}


def train(config_name: str, seed: int, output_dir: str,
          extra_callbacks: Iterable[Any] | None = None, training_args: dict[str, Any] | None = None,
          **overrides: Any) -> dict[str, Any]:
    """Train one run; writes ``output_dir/trainer_state.json`` and returns it as a dict.

    Non-finite floats are returned as ``float('nan')``/``inf`` exactly as the
    Trainer recorded them (``json`` writes them as NaN/Infinity tokens).
    """
    import json
    import os

    trainer = make_trainer(config_name, seed, output_dir, extra_callbacks, training_args, **overrides)
    trainer.train()
    trainer.save_state()
    with open(os.path.join(output_dir, "trainer_state.json")) as f:
        return json.load(f)


__all__ = [
    "VOCAB_SIZE", "SEQ_LEN", "LOG_VOCAB", "RunConfig", "HEALTHY", "CONFIGS", "config_diff",
    "make_sequences", "shuffle_labels", "build_datasets", "markov_table", "SeqDataset",
    "model_config", "build_model", "n_params", "make_trainer", "train", "predicted_tokens", "next_token_accuracy",
]
