"""TensorBoard event files written by real writers, read by trainproof and by TensorBoard itself.

Each stack's run is written with its own tag names by tensorboardX's
SummaryWriter (and torch's, when torch is installed), Keras's tensor-form
scalars by TensorBoard's own EventFileWriter as TF2 lays them out. Every
series trainproof maps is checked value for value (steps, float32 values,
wall times) against TensorBoard's EventAccumulator, and the Run's series
against the tags each stack means. Then: checksums broken in every part of a
record, files cut at the end and in the middle, the name table's choices and
the user's ``--map``, and the bulk decoder against the plain one on files of
every layout.
"""

from __future__ import annotations

import importlib.util
import math
import random
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import pb_field, tf_record
from tests.cli.test_cli import run_cli
from trainproof.io.errors import InputError
from trainproof.runs.readers import read_run, tensorboard, tfrecord
from trainproof.runs.readers.names import Names

pytest.importorskip("tensorboardX")
pytest.importorskip("tensorboard")

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2  # noqa: E402
from tensorboard.summary.writer.event_file_writer import EventFileWriter  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402

WRITERS = [
    "tensorboardX",
    pytest.param("torch", marks=pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")),
]


# --- writing runs ----------------------------------------------------------------------------------


@dataclass
class Stack:
    """A run as one stack logs it: (folder, tag, step, value) points, and the tag each series of the Run must come from."""

    points: list[tuple[str, str, int, float]]
    expected: dict[str, tuple[str, str]]  # Run field (or eval-set label) -> (folder, tag)
    tensors: bool = False  # Keras: scalars as tensors
    runtime: float | None = None
    epochs: bool = False


def curve(step: int, scale: float) -> float:
    return 0.6 + 2.0 * math.exp(-step / scale) + 0.03 * math.sin(step * 0.37)


def hf() -> Stack:
    points = []
    for step in range(10, 1010, 10):
        points += [("", "train/loss", step, curve(step, 300)), ("", "train/grad_norm", step, 0.5 + 0.1 * math.cos(step)),
                   ("", "train/learning_rate", step, 2e-4 * (1 - step / 1000)), ("", "train/epoch", step, step / 500)]  # fmt: skip
        if step % 100 == 0:
            points += [
                ("", "eval/loss", step, curve(step, 300) + 0.05),
                ("", "eval/runtime", step, 12.5),
                ("", "train/epoch", step, step / 500),
            ]
    points += [("", "train/train_runtime", 1000, 1234.5), ("", "train/train_loss", 1000, 0.93)]
    expected = {"loss": "train/loss", "learning_rate": "train/learning_rate", "grad_norm": "train/grad_norm", "eval_loss": "eval/loss"}
    return Stack(points, {k: ("", v) for k, v in expected.items()}, runtime=1234.5)


def coqui(steps: int = 50_000, every: int = 25) -> Stack:
    points = []
    for step in range(every, steps + 1, every):
        points += [("", "TrainIterStats/loss", step, curve(step, steps / 4)), ("", "TrainIterStats/current_lr", step, 5e-6),
                   ("", "TrainIterStats/step_time", step, 0.8 + 0.01 * (step % 7)), ("", "TrainIterStats/loader_time", step, 0.02)]  # fmt: skip
        if step % 2500 == 0:
            points += [("", "EvalStats/avg_loss", step, curve(step, steps / 4) + 0.1), ("", "EvalStats/avg_loss_mel_ce", step, 3.1),
                       ("", "TrainEpochStats/avg_grad_norm", step, 1.5 + 0.1 * math.sin(step))]  # fmt: skip
    expected = {"loss": "TrainIterStats/loss", "learning_rate": "TrainIterStats/current_lr", "step_time": "TrainIterStats/step_time",
                "loader_time": "TrainIterStats/loader_time", "eval_loss": "EvalStats/avg_loss", "grad_norm": "TrainEpochStats/avg_grad_norm"}  # fmt: skip
    return Stack(points, {k: ("", v) for k, v in expected.items()})


def lightning() -> Stack:
    points = [("", "hp_metric", 0, -1.0)]
    for step in range(49, 3000, 50):
        points += [
            ("", "train_loss_step", step, curve(step, 900)),
            ("", "lr-AdamW", step, 1e-3 * min(1.0, step / 500)),
            ("", "epoch", step, step // 500),
        ]
        if (step + 1) % 500 == 0:
            points += [("", "val_loss", step, curve(step, 900) + 0.07), ("", "train_loss_epoch", step, curve(step, 900) + 0.01)]
    expected = {"loss": "train_loss_step", "learning_rate": "lr-AdamW", "eval_loss": "val_loss"}
    return Stack(points, {k: ("", v) for k, v in expected.items()})


def nemo() -> Stack:
    points = []
    for step in range(0, 2000, 10):
        points += [("", "reduced_train_loss", step, curve(step + 1, 600)), ("", "lr", step, 3e-4), ("", "grad_norm", step, 0.9),
                   ("", "train_step_timing in s", step, 0.41 + 0.001 * (step % 5)), ("", "epoch", step, 0.0), ("", "global_step", step, float(step))]  # fmt: skip
        if step and step % 500 == 0:
            points += [("", "val_loss", step, curve(step, 600) + 0.04)]
    expected = {
        "loss": "reduced_train_loss",
        "learning_rate": "lr",
        "grad_norm": "grad_norm",
        "step_time": "train_step_timing in s",
        "eval_loss": "val_loss",
    }
    return Stack(points, {k: ("", v) for k, v in expected.items()})


def keras() -> Stack:
    points = []
    for epoch in range(40):
        points += [("train", "epoch_loss", epoch, curve(epoch, 10)), ("train", "epoch_learning_rate", epoch, 1e-3 * 0.95**epoch),
                   ("validation", "epoch_loss", epoch, curve(epoch, 10) * 1.1), ("validation", "evaluation_loss_vs_iterations", epoch * 300, curve(epoch, 10) * 1.1)]  # fmt: skip
    expected = {
        "loss": ("train", "epoch_loss"),
        "learning_rate": ("train", "epoch_learning_rate"),
        "eval_loss": ("validation", "epoch_loss"),
    }
    return Stack(points, expected, tensors=True, epochs=True)


def megatron() -> Stack:
    points = []
    for it in range(1, 501):
        points += [("", "learning-rate", it, 1.5e-4), ("", "learning-rate vs samples", it * 512, 1.5e-4), ("", "lm loss", it, curve(it, 150) + 8),
                   ("", "lm loss vs samples", it * 512, curve(it, 150) + 8), ("", "grad-norm", it, 2.0), ("", "grad-norm vs samples", it * 512, 2.0)]  # fmt: skip
        if it % 100 == 0:
            points += [
                ("", "lm loss validation", it, curve(it, 150) + 8.1),
                ("", "lm loss validation vs samples", it * 512, curve(it, 150) + 8.1),
            ]
    expected = {"loss": "lm loss", "learning_rate": "learning-rate", "grad_norm": "grad-norm", "eval_loss": "lm loss validation"}
    return Stack(points, {k: ("", v) for k, v in expected.items()})


STACKS: dict[str, Callable[[], Stack]] = {
    "hf": hf,
    "coqui": lambda: coqui(10_000),
    "lightning": lightning,
    "nemo": nemo,
    "keras": keras,
    "megatron": megatron,
}


def write(root: Path, stack: Stack, writer: str = "tensorboardX") -> Path:
    """The stack's points written to event files under ``root`` (one per folder) by a real writer; each point has a
    wall time of its own. ``tensorboard`` is TensorBoard's own EventFileWriter, which keeps tags as they are
    (tensorboardX turns what is not a letter, digit, ``-``, ``/`` or ``.`` into ``_``: ``lm_loss``)."""
    by_folder: dict[str, list[tuple[str, int, float, float]]] = {}
    for n, (folder, tag, step, value) in enumerate(stack.points):
        by_folder.setdefault(folder, []).append((tag, step, value, 1_700_000_000 + 0.25 * n))
    for folder, points in by_folder.items():
        logdir = str(root / folder)
        if writer == "tensorboard" or (stack.tensors and writer == "tensorboardX"):
            _write_events(logdir, points, stack.tensors)
            continue
        if writer == "torch":
            from torch.utils.tensorboard import SummaryWriter
        else:
            from tensorboardX import SummaryWriter
        out = SummaryWriter(logdir)
        for tag, step, value, wall in points:
            if stack.tensors:
                out.add_scalar(tag, value, step, walltime=wall, new_style=True)
            else:
                out.add_scalar(tag, value, step, walltime=wall)
        out.close()
    return root


def written(tag: str, writer: str) -> str:
    """The tag as a writer writes it."""
    return re.sub(r"[^-/\w.]", "_", tag).lstrip("/") if writer == "tensorboardX" else tag


def _write_events(logdir: str, points: list[tuple[str, int, float, float]], tensors: bool) -> None:
    """Scalars written by TensorBoard's own EventFileWriter: simple values, or as TF2's Keras callback writes them, a
    float tensor of shape [] in tensor_content with the scalars plugin's metadata."""
    out = EventFileWriter(logdir)
    metadata = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"))
    for tag, step, value, wall in points:
        if tensors:
            tensor = tensor_pb2.TensorProto(
                dtype=types_pb2.DT_FLOAT, tensor_shape=tensor_shape_pb2.TensorShapeProto(), tensor_content=struct.pack("<f", value)
            )
            item = summary_pb2.Summary.Value(tag=tag, tensor=tensor, metadata=metadata)
        else:
            item = summary_pb2.Summary.Value(tag=tag, simple_value=value)
        out.add_event(event_pb2.Event(wall_time=wall, step=step, summary=summary_pb2.Summary(value=[item])))
    out.close()


def accumulated(folder: Path) -> dict[str, tuple[list[int], list[float], list[float]]]:
    """Every scalar of a folder's event files as TensorBoard reads them: steps, values and wall times per tag."""
    ea = EventAccumulator(str(folder), size_guidance={"scalars": 0, "tensors": 0}, purge_orphaned_data=False).Reload()
    out = {}
    for tag in ea.Tags()["scalars"]:
        events = ea.Scalars(tag)
        out[tag] = ([e.step for e in events], [e.value for e in events], [e.wall_time for e in events])
    for tag in ea.Tags()["tensors"]:
        if ea.SummaryMetadata(tag).plugin_data.plugin_name != "scalars":
            continue  # text summaries, hyperparameters
        events = ea.Tensors(tag)
        out[tag] = (
            [e.step for e in events],
            [float(tensor_util.make_ndarray(e.tensor_proto)) for e in events],
            [e.wall_time for e in events],
        )
    return out


# --- every stack, value for value ------------------------------------------------------------------


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("stack_name", list(STACKS))
def test_each_stack_reads_as_tensorboard_reads_it(tmp_path, stack_name, writer):
    stack = STACKS[stack_name]()
    root = write(tmp_path / "run", stack, writer)
    run = read_run(root)
    truth = {folder: accumulated(root / folder) for folder in {folder for folder, _ in stack.expected.values()}}
    fields = {
        "loss": run.loss,
        "learning_rate": run.learning_rate,
        "grad_norm": run.grad_norm,
        "step_time": run.step_time,
        "loader_time": run.loader_time,
    }
    assert {k for k, v in fields.items() if v is not None} | set(run.eval_losses) == set(stack.expected)
    for name, (folder, tag) in stack.expected.items():
        got = fields.get(name) or run.eval_losses[name]
        steps, values, _ = truth[folder][written(tag, writer)]
        assert got.steps.tolist() == steps, (name, tag)
        assert got.values.tolist() == values, (name, tag)  # the float32 that was written, exactly
    loss_folder, loss_tag = stack.expected["loss"]
    steps, _, walls = truth[loss_folder][written(loss_tag, writer)]
    assert run.loss_name == written(loss_tag, writer)
    assert run.wall_time.steps.tolist() == steps
    assert run.wall_time.values.tolist() == (np.array(walls) - min(walls)).tolist()  # the clock is the loss events'
    assert run.step_unit == ("epoch" if stack.epochs else "step")
    assert run.runtime_s == stack.runtime
    assert Path(run.path).parent == root / loss_folder
    assert run.notes == ()


def test_a_coqui_xtts_event_file_is_judged(tmp_path, capsys):
    """A 50,000-step XTTS run's events (its six tags): read, and judged on TrainIterStats/loss."""
    root = write(tmp_path / "xtts", coqui(50_000, every=25))
    (events,) = root.glob("events.out.tfevents.*")
    code, out, err = run_cli(capsys, "epoch", events)
    assert code in (0, 1), err
    assert "'TrainIterStats/loss' over 2000 points, steps 25-50,000; eval: eval_loss" in out
    assert "TP-LOADER-BOUND" in out  # judged on its step and loader times too


def test_the_preferred_loss_tag_is_the_loss_never_both_mixed(tmp_path):
    """``loss`` comes before ``train/loss`` in the table: a run that writes both is judged on ``loss`` alone."""
    points = []
    for step in range(1, 301):
        points += [("", "train/loss", step, 5.0 + step), ("", "loss", step, curve(step, 100))]
    points += [("", "loss", 301, 0.5)]  # a step only one of them has
    root = write(tmp_path / "both", Stack(points, {}))
    run = read_run(root)
    steps, values, _ = accumulated(root)["loss"]
    assert run.loss_name == "loss"
    assert run.loss.steps.tolist() == steps
    assert run.loss.values.tolist() == values


def test_named_eval_sets_are_their_own_series(tmp_path):
    points = [("", "train/loss", s, curve(s, 50)) for s in range(1, 101)]
    points += [
        ("", tag, s, curve(s, 50) + k / 10)
        for s in range(10, 101, 10)
        for k, tag in enumerate(("eval/loss", "eval/g0_loss", "eval/g1_loss"))
    ]
    run = read_run(write(tmp_path / "sets", Stack(points, {})))
    assert list(run.eval_losses) == ["eval_loss", "eval_g0_loss", "eval_g1_loss"]
    assert run.eval_losses["eval_g1_loss"].values.tolist() == [np.float32(curve(s, 50) + 0.2).item() for s in range(10, 101, 10)]


def test_a_resumed_run_that_logs_steps_again_keeps_the_last_values(tmp_path):
    """A run resumed from a checkpoint at step 50 logs steps 51-80 again (to the same file here): the later values win,
    and the steps 81-100 the abandoned run logged before it was resumed are not the resumed run's."""
    points = [("", "train/loss", s, 1.0 + s) for s in range(1, 101)] + [("", "train/loss", s, 0.5 + s) for s in range(51, 81)]
    run = read_run(write(tmp_path / "run", Stack(points, {})))
    assert run.loss.steps.tolist() == list(range(1, 81))
    assert run.loss.values.tolist() == [(0.5 if 51 <= s <= 80 else 1.0) + s for s in range(1, 81)]


# --- the name table and --map ----------------------------------------------------------------------


def _scalars(tmp_path: Path, tags: list[str], folder: str = "") -> Path:
    points = [(folder, tag, step, curve(step, 20) + k) for step in range(1, 31) for k, tag in enumerate(tags)]
    return write(tmp_path / "run", Stack(points, {}), "tensorboard")


def test_without_a_loss_lr_or_grad_norm_the_error_lists_the_tags(tmp_path, capsys):
    root = _scalars(tmp_path, ["objective", "accuracy", "eval/loss"])
    with pytest.raises(InputError, match=r"has TensorBoard scalars but none is a training loss, learning rate or gradient norm "
                                         r"\(tags: objective, accuracy, eval/loss\); name one with --map loss=TAG$"):  # fmt: skip
        read_run(root)
    code, out, err = run_cli(capsys, "epoch", root)
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "--map loss=TAG" in err
    run = read_run(root, names=Names({"loss": "objective"}))
    assert run.loss_name == "objective"
    assert run.loss.values.tolist() == accumulated(root)["objective"][1]
    assert list(run.eval_losses) == ["eval_loss"]


def test_the_error_shows_twelve_tags_then_an_ellipsis(tmp_path):
    tags = [f"metric_{k:02d}" for k in range(13)]
    with pytest.raises(InputError) as raised:
        read_run(_scalars(tmp_path, tags))
    assert f"(tags: {', '.join(tags[:12])}, ...)" in str(raised.value)
    with pytest.raises(InputError) as raised:
        read_run(_scalars(tmp_path / "twelve", tags[:12]))
    assert f"(tags: {', '.join(tags[:12])});" in str(raised.value)


def test_tags_in_the_error_are_spelled_out_and_cut_short(tmp_path):
    hostile, long = "x\n::error::INJECTED\x1b[2J", "t" * 100
    with pytest.raises(InputError) as raised:
        read_run(_scalars(tmp_path, [hostile, long]))
    problem = raised.value.problem
    assert "\n" not in problem
    assert "\x1b" not in problem
    assert "x\\n::error::INJECTED\\x1b[2J" in problem
    assert f"{'t' * 60}..." in problem
    assert "t" * 61 not in problem


def test_copies_against_samples_or_iterations_are_no_series_unless_mapped(tmp_path):
    """Megatron logs each series again against samples (``lm loss vs samples``), Keras against iterations; without the
    rule, ``lr vs samples`` would be a Lightning-style learning rate (``lr-<optimizer>``)."""
    root = _scalars(tmp_path, ["lm loss", "lr vs samples", "lr_vs_iterations"])
    assert read_run(root).learning_rate is None
    mapped = read_run(root, names=Names({"learning_rate": "lr vs samples"}))
    assert mapped.learning_rate.values.tolist() == accumulated(root)["lr vs samples"][1]
    alone = _scalars(tmp_path / "alone", ["lm loss vs samples", "iteration-time"])
    with pytest.raises(InputError, match=r"\(tags: lm loss vs samples, iteration-time\)"):
        read_run(alone)
    assert read_run(alone, names=Names({"loss": "lm loss vs samples"})).loss_name == "lm loss vs samples"


def test_a_mapped_name_wins_over_the_table(tmp_path):
    root = _scalars(tmp_path, ["loss", "train/total_loss"])
    assert read_run(root).loss_name == "loss"
    run = read_run(root, names=Names({"loss": "train/total_loss"}))
    assert run.loss_name == "train/total_loss"
    assert run.loss.values.tolist() == accumulated(root)["train/total_loss"][1]


def test_under_a_validation_folder_only_the_eval_loss_is_taken(tmp_path):
    points = [(folder, tag, s, curve(s, 10) + k) for s in range(20) for k, (folder, tag) in
              enumerate([("train", "epoch_loss"), ("validation", "epoch_loss"), ("validation", "epoch_learning_rate")])]  # fmt: skip
    root = write(tmp_path / "keras", Stack(points, {}))
    run = read_run(root)
    assert run.learning_rate is None
    assert run.eval_losses["eval_loss"].values.tolist() == accumulated(root / "validation")["epoch_loss"][1]
    (alone,) = (root / "validation").glob("events.out.tfevents.*")
    assert read_run(alone).loss_name == "epoch_loss"  # read on its own, the file is no validation folder's


def test_the_runtime_is_the_last_finite_train_runtime(tmp_path):
    points = [("", "train/loss", s, curve(s, 10)) for s in range(1, 30)]
    assert read_run(write(tmp_path / "a", Stack(points, {}))).runtime_s is None
    points += [("", "train/train_runtime", 29, 61.5), ("", "train/train_runtime", 30, float("nan"))]
    assert read_run(write(tmp_path / "b", Stack(points, {}))).runtime_s == 61.5


# --- broken and cut files --------------------------------------------------------------------------


def offsets(data: bytes) -> list[int]:
    """Where each record of an event file starts."""
    found, at = [], 0
    while at < len(data):
        found.append(at)
        at += 16 + struct.unpack_from("<Q", data, at)[0]
    return found


@pytest.fixture(scope="module")
def hf_events(tmp_path_factory) -> bytes:
    root = write(tmp_path_factory.mktemp("hf") / "run", hf())
    (events,) = root.glob("events.out.tfevents.*")
    return events.read_bytes()


def _record(data: bytes, which: str) -> int:
    """The index of a record: the second, one in the middle of the steps' pattern, or an evaluation's."""
    starts = offsets(data)
    if which == "second":
        return 1
    if which == "middle":
        return len(starts) // 2
    return next(k for k, at in enumerate(starts) if b"eval/loss" in data[at : starts[k + 1]])


@pytest.mark.parametrize("which", ["second", "middle", "evaluation"])
@pytest.mark.parametrize("part", ["length", "length checksum", "data", "data checksum"])
def test_a_byte_changed_in_any_part_of_any_record_is_an_error_at_its_offset(tmp_path, capsys, hf_events, which, part):
    starts = offsets(hf_events)
    k = _record(hf_events, which)
    at = starts[k]
    where = {"length": at, "length checksum": at + 9, "data": (at + starts[k + 1]) // 2, "data checksum": starts[k + 1] - 2}[part]
    broken = bytearray(hf_events)
    broken[where] ^= 0x04
    path = tmp_path / "events.out.tfevents.1.host"
    path.write_bytes(broken)
    code, _, err = run_cli(capsys, "epoch", path)
    assert code == 2
    assert err.strip().endswith(f": record at byte {at:,} fails its checksum: the file is corrupt"), err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("cut", [5, 14, -3])  # in the length, in the data, in the data's checksum
def test_a_last_record_cut_short_is_left_out_and_the_run_judged(tmp_path, capsys, hf_events, cut):
    last = offsets(hf_events)[-1]
    path = tmp_path / "events.out.tfevents.1.host"
    path.write_bytes(hf_events[: last + cut] if cut > 0 else hf_events[:cut])
    run = read_run(path)
    assert run.notes == (f"{path.name}: the last record is cut short (still being written?) and was left out",)
    assert len(run.loss) == 100
    code, out, _ = run_cli(capsys, "epoch", path)
    assert code in (0, 1)
    assert "the last record is cut short" in out


@pytest.mark.parametrize("cut", [4, 30])  # in a record's header, in its data
def test_a_cut_followed_by_more_records_is_an_error_at_the_cut_record(tmp_path, hf_events, cut):
    """A file that lost the end of one record but goes on (a copy that skipped bytes, a writer that restarted on the
    same file): the cut record's length reaches into the records after it, so its checksum fails there. TensorBoard
    would stop reading at that record and show the run as if it ended; trainproof refuses the file instead."""
    starts = offsets(hf_events)
    k = len(starts) // 2
    path = tmp_path / "events.out.tfevents.1.host"
    path.write_bytes(hf_events[: starts[k] + cut] + hf_events[starts[k + 1] :])
    with pytest.raises(InputError, match=rf": record at byte {starts[k]:,} fails its checksum: the file is corrupt$"):
        read_run(path)


def test_a_cut_near_the_end_with_less_after_it_than_the_record_is_long_reads_as_a_last_record_cut_short(tmp_path):
    """What follows cannot be told from the rest of the cut record, so the records after it are lost with the note."""
    points = [("", "train/loss", s, curve(s, 10)) for s in range(1, 40)] + [("", "notes", 40, 0.0)]
    root = write(tmp_path / "run", Stack(points, {}))
    (events,) = root.glob("events.out.tfevents.*")
    data = events.read_bytes()
    long = tf_record(
        pb_field(1, 1, struct.pack("<d", 1.7e9)) + pb_field(5, 2, pb_field(1, 2, pb_field(1, 2, b"text") + pb_field(8, 2, b"x" * 200)))
    )
    events.write_bytes(data + long[:100] + data[-2 * 60 :])  # the text record cut, then less than its length of other bytes
    run = read_run(events)
    assert run.loss.steps.tolist() == list(range(1, 40))
    assert any("cut short" in note for note in run.notes)


# --- bulk and plain decoding agree -----------------------------------------------------------------


def _value(rng: random.Random, kind: str, tag: bytes, value: float) -> bytes:
    """A Summary.Value of one of the layouts writers use (or could)."""
    head = pb_field(1, 2, tag)
    if kind == "simple":
        return head + pb_field(2, 5, struct.pack("<f", value))
    if kind == "content_f32":
        return head + pb_field(8, 2, pb_field(1, 0, 1) + pb_field(2, 2, b"") + pb_field(4, 2, struct.pack("<f", value)))
    if kind == "content_f64":
        return head + pb_field(8, 2, pb_field(1, 0, 2) + pb_field(4, 2, struct.pack("<d", value)))
    if kind == "content_i64":
        return head + pb_field(8, 2, pb_field(1, 0, 9) + pb_field(4, 2, struct.pack("<q", int(value * 1000))))
    if kind == "float_val":
        return head + pb_field(8, 2, pb_field(1, 0, 1) + pb_field(5, 2, struct.pack("<f", value)))
    if kind == "double_val":
        return head + pb_field(8, 2, pb_field(1, 0, 2) + pb_field(6, 1, struct.pack("<d", value)))
    if kind == "int64_val":
        return head + pb_field(8, 2, pb_field(1, 0, 9) + pb_field(10, 0, int(value * 1000) & (2**64 - 1)))
    if kind == "text":
        return head + pb_field(8, 2, pb_field(1, 0, 7) + pb_field(8, 2, b"words" * rng.randrange(1, 80)))
    raise AssertionError(kind)


KINDS = ("simple", "content_f32", "content_f64", "content_i64", "float_val", "double_val", "int64_val", "text")


STARTS = (1, 120, 16_000, 2_097_000, 2**35 - 40, 2**62, -300, 0)
"""First steps: across the one- to four-byte varint widths, wider (read byte by byte), negative (ten bytes), none."""


def random_events(rng: random.Random, step: int) -> bytes:
    """An event file of stretches of every sort: a few tags in a steady pattern, an evaluation now and then, tags of
    equal length, several values to an event, steps past varint widths or missing, repeated or going back, negative
    steps, tensor scalars of every type, text, a tag longer than 256 bytes."""
    tags = [b"train/loss", b"train/lr", b"eval/loss", b"eval/acc", b"loss", b"x" * 300, b"lm loss", b"lm loss vs samples"]
    records = [tf_record(pb_field(1, 1, struct.pack("<d", 1.7e9)) + pb_field(3, 2, b"brain.Event:2"))]
    for _ in range(rng.randrange(3, 9)):
        pattern = [(rng.choice(tags), rng.choice(KINDS) if rng.random() < 0.3 else "simple") for _ in range(rng.randrange(1, 6))]
        for _ in range(rng.randrange(1, 400)):
            step += rng.choice([1, 1, 1, 0, -3]) if rng.random() < 0.1 else 1
            for tag, kind in pattern:
                values = b"".join(pb_field(1, 2, _value(rng, kind, tag, rng.uniform(-5, 5))) for _ in range(rng.choice([1, 1, 1, 2])))
                wall = b"" if rng.random() < 0.02 else pb_field(1, 1, struct.pack("<d", 1.7e9 + step + rng.random()))
                records.append(tf_record(wall + (pb_field(2, 0, step) if step else b"") + pb_field(5, 2, values)))
            if rng.random() < 0.02:
                records.append(
                    tf_record(
                        pb_field(1, 1, struct.pack("<d", 1.7e9))
                        + pb_field(2, 0, step)
                        + pb_field(5, 2, pb_field(1, 2, _value(rng, "simple", b"eval/loss", 1.0)))
                    )
                )
    return b"".join(records)


def _every_tag(path: Path) -> dict[tuple[str, bool], tuple[list, list, list]]:
    scalars = tensorboard._Scalars(path)
    scalars.read_file(path, False)
    return {key: tuple(column.tolist() for column in scalars.series(key)) for key in scalars.parts}


def _plain_only(monkeypatch) -> None:
    """Every record walked one at a time and decoded by the plain decoder."""
    monkeypatch.setattr(tfrecord, "_BULK", 10**9)
    monkeypatch.setattr(tfrecord, "_PERIOD", 0)


@pytest.mark.parametrize("seed", range(16))
def test_bulk_and_plain_decoding_read_every_tag_alike(tmp_path, monkeypatch, seed):
    rng = random.Random(seed)
    path = tmp_path / "events.out.tfevents.1.host"
    path.write_bytes(random_events(rng, STARTS[seed % len(STARTS)]))
    monkeypatch.setattr(tfrecord, "BATCH_BYTES", rng.choice([4096, 65536, 2**21]))
    bulk = _every_tag(path)
    _plain_only(monkeypatch)
    assert _every_tag(path) == bulk
    assert len(bulk) > 1


@pytest.mark.parametrize("seed", range(12))
def test_bulk_and_plain_decoding_meet_the_same_first_problem(tmp_path, monkeypatch, seed):
    rng = random.Random(100 + seed)
    data = bytearray(random_events(rng, STARTS[seed % len(STARTS)]))
    data = data[: rng.randrange(len(data) // 2, len(data) + 1)]
    whole = max(at for at in offsets(bytes(data)) if at <= len(data))  # the end of the last record not cut short
    for _ in range(rng.randrange(1, 4)):
        data[rng.randrange(whole)] ^= 1 << rng.randrange(8)
    path = tmp_path / "events.out.tfevents.1.host"
    path.write_bytes(data)
    monkeypatch.setattr(tfrecord, "BATCH_BYTES", rng.choice([4096, 65536]))

    def outcome() -> str:
        try:
            return repr(_every_tag(path))
        except InputError as error:
            return str(error)

    bulk = outcome()
    _plain_only(monkeypatch)
    assert outcome() == bulk
    assert "fails its checksum" in bulk or "does not decode" in bulk or "over the 64 MiB limit" in bulk


def test_a_step_of_another_width_in_the_same_columns_is_decoded_on_its_own(tmp_path):
    """Fields may come in any order. With the step last, ``10 81 80 01`` (16,385) and ``10 05`` followed by an unknown
    field ``18 00`` have the same length and the same bytes outside the step's three; the second is step 5."""
    summary = pb_field(5, 2, pb_field(1, 2, pb_field(1, 2, b"loss") + pb_field(2, 5, struct.pack("<f", 1.0))))

    def event(k: int, tail: bytes) -> bytes:
        return tf_record(pb_field(1, 1, struct.pack("<d", 1.7e9 + k)) + summary + tail)

    records = [event(k, pb_field(2, 0, 16_384 + k)) for k in range(40)]
    records.insert(20, event(99, b"\x10\x05\x18\x00"))
    records.insert(0, tf_record(pb_field(1, 1, struct.pack("<d", 1.7e9)) + pb_field(3, 2, b"brain.Event:2")))
    path = tmp_path / "events.out.tfevents.1.host"
    path.write_bytes(b"".join(records))
    assert read_run(path).loss.steps.tolist() == [5, *range(16_384, 16_424)]


# --- the real event files of the corpus ------------------------------------------------------------


def test_corpus_event_files_read_as_tensorboard_reads_them(corpus):
    folder = corpus / "public" / "tensorboard"
    cases = {
        "10844110__t5-summarization-demo__events.out.tfevents.1742826235.DESKTOP-41L2EO3.107869.0": {"loss": "train/loss", "learning_rate": "train/learning_rate", "grad_norm": "train/grad_norm"},
        "NVIDIA__Megatron-LM__events.out.tfevents.1623896925.dgx0064.2537583.0": {"loss": "lm loss", "learning_rate": "learning-rate", "grad_norm": "grad-norm"},
        "10tanmay100__DEEPCNNCLASSIFIER__events.out.tfevents.1665999764.DESKTOP-7C58SI9.4464.0.v2": {"loss": "epoch_loss"},
    }  # fmt: skip
    for name, expected in cases.items():
        run = read_run(folder / name)
        truth = accumulated(folder / name)
        for field_name, tag in expected.items():
            got = getattr(run, field_name)
            assert got.steps.tolist() == truth[tag][0], (name, tag)
            assert got.values.tolist() == truth[tag][1], (name, tag)
