"""TensorBoard event files, decoded without TensorFlow (files written by torch's SummaryWriter)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import REPO
from trainproof.io.errors import InputError
from trainproof.runs.readers import read_run

DATA = REPO / "tests" / "data" / "tensorboard"


def test_hf_style_run_directory():
    run = read_run(DATA / "hf_style")
    assert run.format == "tensorboard"
    assert run.loss_name == "train/loss"
    assert run.loss.steps.tolist() == list(range(10, 610, 10))
    assert run.loss.values[0] == pytest.approx(0.6 + 1.8 * 0.9200444 + 0.02 * -0.5440211, rel=1e-5)
    assert run.learning_rate.values[-1] == pytest.approx(2e-4)
    assert run.eval_losses["eval_loss"].steps.tolist() == list(range(100, 700, 100))
    assert run.wall_time.values[-1] == pytest.approx(295.0)  # seconds since the first event


def test_keras_style_validation_folder_is_the_eval_loss():
    run = read_run(DATA / "keras_style")
    assert run.step_unit == "epoch"
    assert len(run.loss) == 30
    assert run.eval_losses["eval_loss"].values[0] == pytest.approx(run.loss.values[0] * 1.1, rel=1e-6)


def test_a_single_event_file_is_detected_by_content(tmp_path):
    (source,) = (DATA / "hf_style").glob("events.out.tfevents.*")
    copy = tmp_path / "whatever.bin"
    copy.write_bytes(source.read_bytes())
    assert read_run(copy).format == "tensorboard"


def test_a_record_cut_short_is_left_out_with_a_note(tmp_path):
    (source,) = (DATA / "hf_style").glob("events.out.tfevents.*")
    cut = tmp_path / "events.out.tfevents.1.host"
    cut.write_bytes(source.read_bytes()[:-7])
    run = read_run(cut)
    assert any("cut short" in note for note in run.notes)
    assert 0 < len(run.loss) <= 60


def test_other_binary_files_are_refused(tmp_path):
    junk = tmp_path / "model.bin"
    junk.write_bytes(b"\x00\x01\x02" * 100)
    with pytest.raises(InputError, match="binary file"):
        read_run(junk)


def test_corpus_event_files_agree_with_the_trainer_state(corpus):
    events = read_run(corpus / "public" / "tensorboard" / "10844110__t5-summarization-demo__events.out.tfevents.1742826235.DESKTOP-41L2EO3.107869.0")
    state = read_run(corpus / "public" / "hf" / "10844110__t5-summarization-demo__1.json")
    assert events.loss.steps.tolist() == state.loss.steps.tolist()
    assert events.loss.values == pytest.approx(state.loss.values, rel=1e-6)  # float32 in the events
    megatron = read_run(corpus / "public" / "tensorboard" / "NVIDIA__Megatron-LM__events.out.tfevents.1623896925.dgx0064.2537583.0")
    assert megatron.loss_name == "lm loss"
    assert len(megatron.loss) == 100
    assert megatron.grad_norm is not None
    json.dumps(megatron.step_lines)  # nothing unserialisable leaks into the run


def test_a_byte_changed_in_a_real_event_file_fails_its_checksum(tmp_path):
    (source,) = (DATA / "hf_style").glob("events.out.tfevents.*")
    data = bytearray(source.read_bytes())
    data[len(data) // 2] ^= 0x01
    broken = tmp_path / source.name
    broken.write_bytes(data)
    with pytest.raises(InputError, match=r": record at byte [0-9,]+ fails its checksum: the file is corrupt$"):
        read_run(broken)


def test_the_event_files_of_real_writers_pass_their_checksums(corpus):
    """torch's SummaryWriter (tests/data), the HF Trainer, Keras and Megatron-LM (the corpus) all write real CRC-32Cs."""
    files = sorted((corpus / "public" / "tensorboard").glob("*tfevents*"))
    paths = [DATA / "hf_style", DATA / "keras_style", *(f for f in files if not f.read_bytes().startswith(b"version https://git-lfs"))]
    assert len(paths) == 7
    eval_only = "10844110__t5-summarization-demo__events.out.tfevents.1742884204.DESKTOP-41L2EO3.107869.1"
    for path in paths:
        if path.name == eval_only:  # decoded whole, every checksum passed: its tags are known
            with pytest.raises(InputError, match=r"none is a training loss, learning rate or gradient norm \(tags: eval/loss, eval/rouge1, "):
                read_run(path)
        else:
            assert read_run(path).format == "tensorboard"


def test_the_two_event_files_of_an_hf_run_read_as_one_run(corpus, tmp_path):
    """The HF Trainer's run directory: the training events, and the final evaluation's in a second file."""
    folder = corpus / "public" / "tensorboard"
    for source in folder.glob("10844110__t5-summarization-demo__events.out.tfevents.*"):
        (tmp_path / source.name.split("__")[-1]).write_bytes(source.read_bytes())
    run = read_run(tmp_path)
    alone = read_run(next(folder.glob("10844110__*.0")))
    assert run.loss.values.tolist() == alone.loss.values.tolist()
    assert Path(run.path).name.endswith(".0")  # the file of the loss
    assert list(run.eval_losses) == ["eval_loss"]
    assert len(run.eval_losses["eval_loss"]) == 1
