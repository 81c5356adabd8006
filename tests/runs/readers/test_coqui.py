import pytest

from trainproof.io.errors import InputError
from trainproof.runs.readers import read_run
from trainproof.runs.readers.names import Names

NEW_STYLE = """ > Training Environment:
 | > Backend: Torch
\x1b[4m\x1b[1m > EPOCH: 0/1000\x1b[0m
\x1b[1m > EVALUATION \x1b[0m

  \x1b[1m--> EVAL PERFORMANCE\x1b[0m
     | > avg_loader_time: 0.0117 \x1b[0m(+0)
     | > avg_loss: 4.88 \x1b[0m(+0)

\x1b[1m > TRAINING (2026-02-11 01:08:02) \x1b[0m
{steps}
\x1b[1m > EVALUATION \x1b[0m
  \x1b[1m--> EVAL PERFORMANCE\x1b[0m
     | > avg_loss: 2.75 \x1b[0m(-2.1)

 > BEST MODEL : /run/best_model_{last}.pth
 > CHECKPOINT : /run/checkpoint_{last}.pth
"""

STEP = """\x1b[1m   --> TIME: 2026-02-11 01:{minute:02d}:00 -- STEP: {i}/100 -- GLOBAL_STEP: {g}\x1b[0m
     | > loss: {loss}  (0.05)
     | > current_lr: 5e-06
     | > step_time: 0.05  (0.05)
     | > loader_time: 0.004  (0.004)
"""


def _log(n: int = 12) -> str:
    steps = "\n".join(STEP.format(minute=i, i=i * 50, g=i * 50, loss=0.06 - 0.001 * i) for i in range(n))
    return NEW_STYLE.format(steps=steps, last=(n - 1) * 50)


def test_steps_evals_and_checkpoints(tmp_path):
    path = tmp_path / "trainer_0_log.txt"
    path.write_text(_log())
    run = read_run(path)
    assert run.format == "coqui"
    assert run.loss.steps.tolist() == list(range(0, 600, 50))
    assert run.loss.values[0] == 0.06
    assert run.learning_rate.values.tolist() == [5e-06] * 12
    assert run.eval_losses["avg_loss"].steps.tolist() == [0, 550]
    assert run.eval_losses["avg_loss"].values.tolist() == [4.88, 2.75]
    assert run.wall_time.values[-1] == 11 * 60
    assert run.step_time is not None
    assert run.loader_time is not None
    assert [(c.step, c.best) for c in run.checkpoints] == [(550, False), (550, True)]


def test_gan_losses_judge_the_last_optimizer_and_say_so(tmp_path):
    block = """ > TRAINING (2022-11-03 10:47:31)
   --> STEP: {i}/36 -- GLOBAL_STEP: {g}
     | > loss_0: 3.0  (3.4)
     | > grad_norm_0: 0.5  (2.7)
     | > loss_1: {l1}  (35.5)
     | > grad_norm_1: 54.0  (62.8)
     | > current_lr_0: 0.00020
     | > current_lr_1: 0.00010
"""
    path = tmp_path / "trainer_0_log.txt"
    path.write_text("".join(block.format(i=i, g=1_000_000 + i, l1=27 - i * 0.1) for i in range(8)))
    run = read_run(path)
    assert run.loss_name == "loss_1"
    assert run.learning_rate.values.tolist() == [0.0001] * 8
    assert run.grad_norm.values.tolist() == [54.0] * 8
    assert any("GAN" in note for note in run.notes)
    assert run.wall_time is not None  # epoch start times stand in for per-step stamps


def test_real_xtts_log(corpus):
    run = read_run(corpus / "real_world" / "xtts_ljspeech" / "trainer_0_log.txt")
    assert len(run.loss) == 1459
    assert run.last_step == 72900
    assert any(c.best and c.path.endswith("best_model_49880.pth") for c in run.checkpoints)
    assert run.eval_losses["avg_loss"].values.round(2).tolist() == [4.88, 2.75, 2.68]
    assert run.wall_time.values[-1] == 35131


def test_map_picks_another_key_of_a_coqui_log(tmp_path):
    block = """   --> STEP: {i}/36 -- GLOBAL_STEP: {g}
     | > loss_0: 3.0  (3.4)
     | > loss_1: {l1}  (35.5)
     | > loss_mel: {mel}  (1.0)
     | > lr_gen: 0.0002
"""
    path = tmp_path / "trainer_0_log.txt"
    path.write_text(
        "".join(block.format(i=i, g=100 + i, l1=27 - i * 0.1, mel=2 - i * 0.1) for i in range(8))
        + "  --> EVAL PERFORMANCE\n     | > avg_loss_mel: 1.5  (0)\n     | > avg_loss_1: 20.0  (0)\n"
    )
    names = Names({"loss": "loss_mel", "learning_rate": "lr_gen", "eval_loss": "avg_loss_mel"})
    run = read_run(path, names=names)
    assert run.loss_name == "loss_mel"
    assert run.loss.values.tolist() == [2 - i * 0.1 for i in range(8)]
    assert run.learning_rate.values.tolist() == [0.0002] * 8
    assert list(run.eval_losses) == ["avg_loss_mel"]
    assert run.eval_losses["avg_loss_mel"].values.tolist() == [1.5]
    assert not any("GAN" in note for note in run.notes), "a mapped loss is the user's choice, not a guess"
    assert read_run(path).loss_name == "loss_1", "without --map the last optimizer's loss"


def test_map_to_a_key_the_coqui_log_lacks_lists_the_keys(tmp_path):
    path = tmp_path / "trainer_0_log.txt"
    path.write_text(_log())
    with pytest.raises(InputError, match=r"has no training value 'loss_mel' for --map loss \(keys: loss, current_lr, step_time, loader_time\)"):
        read_run(path, names=Names({"loss": "loss_mel"}))
