"""The names real training stacks give a run's series, in one table every reader shares, with the user's own on top.

A log calls its training loss ``loss`` (HF), ``train/loss`` (HF to
TensorBoard), ``TrainIterStats/loss`` (Coqui), ``train_loss_step``
(Lightning), ``reduced_train_loss`` (NeMo), ``epoch_loss`` (Keras) or
``lm loss`` (Megatron). :data:`NAMES` lists, per series, the spellings in the
order they are preferred; a log that writes two of them (``train_loss_step``
and ``train_loss_epoch``) is judged on the first. Names are compared after
:func:`normal`: lower case, spaces and dashes as underscores, so ``lm loss``,
``learning-rate`` and ``lr-AdamW`` match ``lm_loss``, ``learning_rate`` and
``lr_adamw``.

``--map SERIES=NAME`` (repeatable) and the configuration's ``map`` table name
a series the table does not know; a name the user maps is that series' only
name, and no other series takes it.

Eval metrics other than loss (``eval_wer``, ``val/accuracy``) are read when
their name says which way is better: :data:`GOALS` lists the words of lower-
and higher-is-better metrics; ``--metric NAME=min|max`` and the
configuration's ``metrics`` table name the others (and any metric, eval
prefix or not, the user wants judged).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from trainproof.io.errors import TrainproofError

NAMES: Mapping[str, tuple[str, ...]] = {
    "step": (
        "step",
        "global_step",
        "trainer/global_step",
        "train/global_step",
        "_step",
        "iteration",
        "iter",
        "it",
        "steps",
    ),
    "epoch": ("epoch", "epochs", "train/epoch"),
    "loss": (
        "loss",
        "train_loss",
        "training_loss",
        "train/loss",
        "loss/train",
        "trainer/loss",
        "train_loss_step",
        "train/loss_step",
        "train_loss_epoch",
        "train/loss_epoch",
        "reduced_train_loss",  # NeMo
        "trainiterstats/loss",  # Coqui
        "lm_loss",  # Megatron
        "epoch_loss",  # Keras, under train/
    ),
    "eval_loss": (
        "eval_loss",
        "val_loss",
        "valid_loss",
        "validation_loss",
        "eval/loss",
        "val/loss",
        "valid/loss",
        "validation/loss",
        "loss/val",
        "loss/valid",
        "loss/validation",
        "val_loss_epoch",
        "val/loss_epoch",
        "evalstats/avg_loss",  # Coqui
        "lm_loss_validation",  # Megatron
        "epoch_val_loss",
    ),
    "learning_rate": (
        "learning_rate",
        "lr",
        "train/learning_rate",
        "train/lr",
        "current_lr",
        "lr_adamw",
        "lr_adam",
        "lr_sgd",
        "trainiterstats/current_lr",  # Coqui
        "epoch_learning_rate",
        "epoch_lr",  # Keras
    ),
    "grad_norm": (
        "grad_norm",
        "gradient_norm",
        "train/grad_norm",
        "grad_norm/total",
        "total_grad_norm",
        "grad_norm_2.0_norm_total",
        "trainiterstats/grad_norm",  # Coqui, per step
        "trainepochstats/avg_grad_norm",  # Coqui, per epoch: only when nothing finer is logged
    ),
    "wall_time": ("time", "timestamp", "wall_time", "walltime", "_timestamp", "_runtime", "elapsed", "elapsed_time", "created_at"),
    "step_time": (
        "step_time",
        "time_per_step",
        "iter_time",
        "batch_time",
        "train/step_time",
        "sec_per_step",
        "trainiterstats/step_time",  # Coqui
        "train_step_timing",
        "train_step_timing_in_s",  # NeMo
        "iteration_time",  # Megatron
    ),
    "loader_time": ("loader_time", "data_time", "dataloader_time", "data_load_time", "trainiterstats/loader_time"),
}
"""Per series, the names stacks write for it, normalised (see :func:`normal`), preferred first."""

SERIES = tuple(NAMES)

_LIGHTNING_LR = re.compile(r"lr_[a-z][a-z0-9_]*(?:/pg\d+)?")
"""Lightning's LearningRateMonitor: ``lr-<Optimizer>``, ``lr-<Optimizer>/pg<N>`` per parameter group."""
_EVAL_SET = re.compile(r"(?:eval|validation|val)[/_](.+)_loss", re.S)
"""A named eval set's loss: HF's ``eval_<set>_loss``, ``eval/<set>_loss`` in TensorBoard."""
VALIDATION_FOLDERS = ("validation", "eval", "val")
"""Folder names (Lightning's and Keras's TensorBoard subfolders) whose tags are held-out data's."""

GOALS: Mapping[str, tuple[str, ...]] = {
    "min": ("loss", "perplexity", "ppl", "wer", "cer", "ter", "der", "error", "error_rate", "err", "mae", "mse", "rmse"),
    "max": (
        "accuracy",
        "acc",
        "f1",
        "bleu",
        "sacrebleu",
        "rouge",
        "rouge1",
        "rouge2",
        "rougel",
        "rougelsum",
        "exact_match",
        "em",
        "precision",
        "recall",
        "auc",
        "auroc",
        "chrf",
        "meteor",
        "mcc",
        "matthews_correlation",
        "iou",
        "io_u",  # Keras MeanIoU, as val_mean_io_u
        "miou",
        "dice",
    ),
}
"""Which way is better for an eval metric, by the words of its name after the eval prefix (``eval_wer``: lower;
``val/accuracy``: higher). A name with words of both kinds, or neither, has no known goal."""

_EVAL_METRIC = re.compile(r"(?:eval|validation|valid|val)[/_](.+)", re.S)
"""An eval metric's name: HF's ``eval_<metric>``, ``eval/<metric>`` in TensorBoard, Lightning's ``val_<metric>``."""
_BOOKKEEPING = frozenset(("runtime", "samples_per_second", "steps_per_second", "epoch", "step", "global_step", "time", "num_samples", "samples", "num_tokens", "tokens", "batch_size", "gen_len"))
"""What an evaluation logs about itself, not about the model: never a metric to judge, nor worth a note."""
_BOOKKEEPING_ENDS = ("_loss", "_time", "_runtime", "per_second", "_samples", "_tokens")
_TURNS = ("improvement", "reduction", "drop", "delta", "diff", "gain", "change")
"""Words that turn a metric's direction around or make it a difference ("wer_reduction" is better higher): no guess."""
_WORDS = re.compile(r"[/_.]")


class MapError(TrainproofError):
    """A ``--map`` or configuration ``map`` entry that names no series or no name (exit 2)."""


def normal(name: str) -> str:
    return name.strip().lower().replace(" ", "_").replace("-", "_")


def eval_set(name: str) -> str | None:
    """The label of a named eval set's loss (``eval_g0_loss`` for ``eval_g0_loss`` or ``eval/g0_loss``), else None."""
    match = _EVAL_SET.fullmatch(normal(name))
    return f"eval_{match.group(1)}_loss" if match else None


@dataclass(frozen=True)
class Names:
    """Which name of a log carries each series: the table's spellings, and the user's map over them.

    ``overrides`` maps a series (``loss``, ``eval_loss``, ``learning_rate``, ...) to the name the log writes for it.
    """

    overrides: Mapping[str, str] = field(default_factory=dict)
    goals: Mapping[str, str] = field(default_factory=dict)
    """The user's eval metrics (``--metric``), by normalised name, to ``min`` or ``max``."""

    def candidates(self, names: Iterable[str], validation: bool = False) -> dict[str, list[str]]:
        """Per series, the names among ``names`` that could carry it, preferred first.

        ``validation`` says the names come from a validation folder (Keras writes ``validation/`` beside ``train/``):
        there a training-loss spelling is the eval loss, and nothing else is taken.
        """
        by_normal: dict[str, list[str]] = {}
        exact: set[str] = set()
        for name in names:
            if name not in exact:
                exact.add(name)
                by_normal.setdefault(normal(name), []).append(name)
        found: dict[str, list[str]] = {}
        taken: set[str] = set()
        for series, wanted in self.overrides.items():
            chosen = [wanted] if wanted in exact else by_normal.get(normal(wanted), [])
            if chosen:
                found[series] = chosen[:1]
                taken.add(chosen[0])
        for series, spellings in NAMES.items():
            if series in self.overrides:
                continue
            if validation:
                if series != "eval_loss":
                    continue
                spellings = NAMES["eval_loss"] + NAMES["loss"]
            chosen = [name for spelling in spellings for name in by_normal.get(spelling, ()) if name not in taken]
            if series == "learning_rate" and not validation:
                chosen += [n for k, group in by_normal.items() if _LIGHTNING_LR.fullmatch(k) and k not in spellings for n in group]
            if chosen:
                found[series] = chosen
        return found

    def resolve(self, names: Iterable[str], validation: bool = False) -> dict[str, str]:
        """Each series to the name that carries it, for the names one record (or one log) has."""
        return {series: chosen[0] for series, chosen in self.candidates(names, validation).items()}

    def metric_goal(self, name: str) -> str | None:
        """``min`` or ``max`` for an eval metric whose better direction is known (the user's, else its words'),
        ``unknown`` for one whose is not, None for a name that is no eval metric (a loss, the eval's runtime).

        Eval losses are read as eval sets, not here: this is for the other metrics.
        """
        key = normal(name)
        goal = self.goals.get(key)
        if goal is not None:
            return goal
        match = _EVAL_METRIC.fullmatch(key)
        if match is None or eval_set(name) is not None or key in NAMES["eval_loss"] or key in map(normal, self.overrides.values()):
            return None
        rest = match.group(1)
        if rest in _BOOKKEEPING or rest.endswith(_BOOKKEEPING_ENDS) or rest == "loss":
            return None
        words = "/" + _WORDS.sub("/", rest) + "/"
        if rest[0].isdigit() or any(f"/{word}/" in words for word in _TURNS):
            return "unknown"  # "1-wer" is an accuracy, "wer_improvement" a gain: no guess
        if words.endswith("/per/"):  # phone error rate, alone or of a set ("timit_per")
            return "min"
        if "/per/" in words:
            return "unknown"  # "per" between words is a rate ("tokens_per_step"): no guess
        found = {goal for goal, spellings in GOALS.items() if any(f"/{_WORDS.sub('/', s)}/" in words for s in spellings)}
        return found.pop() if len(found) == 1 else "unknown"


DEFAULT_NAMES = Names()


def is_eval_name(name: str) -> bool:
    """Whether a name has an eval prefix (``eval_``, ``val/``, ...): a metric of held-out data."""
    return _EVAL_METRIC.fullmatch(normal(name)) is not None


def unjudged_note(names: Iterable[str]) -> str | None:
    """The note a log gets for its eval metrics of unknown direction, None when it has none."""
    shown = sorted(set(names))
    if not shown:
        return None
    listed = ", ".join(shown[:8]) + (f" and {len(shown) - 8} more" if len(shown) > 8 else "")
    return f"eval metrics not judged, their better direction unknown: {listed} (name it with --metric NAME=min or NAME=max)"


def parse_goals(entries: Iterable[str], source: str = "--metric") -> dict[str, str]:
    """``NAME=min|max`` entries as ``{normalised name: goal}``; anything else is a MapError."""
    out: dict[str, str] = {}
    for entry in entries:
        name, sep, goal = entry.rpartition("=")
        name, goal = name.strip(), goal.strip().lower()
        if not sep or not name or goal not in ("min", "max"):
            raise MapError(f"{source}: '{entry}' is not NAME=min or NAME=max (for example eval_wer=min)")
        if out.get(normal(name), goal) != goal:
            raise MapError(f"{source}: '{name}' is given both goals, min and max")
        out[normal(name)] = goal
    return out


def in_validation_folder(parts: Sequence[str]) -> bool:
    """Whether a file's folders (relative to its run) put it under ``validation/`` (``eval/``, ``val/``), as Keras does."""
    return any(part.lower() in VALIDATION_FOLDERS for part in parts)


def parse_map(entries: Iterable[str], source: str = "--map") -> dict[str, str]:
    """``SERIES=NAME`` entries as ``{series: name}``; a series that does not exist, or no name, is a MapError."""
    out: dict[str, str] = {}
    for entry in entries:
        series, sep, name = entry.partition("=")
        series, name = series.strip().lower().replace("-", "_"), name.strip()
        if not sep or not name:
            raise MapError(f"{source}: '{entry}' is not SERIES=NAME (for example loss=train/total_loss)")
        if series not in SERIES:
            raise MapError(f"{source}: '{series}' is not a series trainproof reads (one of {', '.join(SERIES)})")
        if out.get(series, name) != name:
            raise MapError(f"{source}: '{series}' is mapped twice, to '{out[series]}' and to '{name}'")
        out[series] = name
    return out
