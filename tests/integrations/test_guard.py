"""The shared live guard, fed records as any trainer's adapter feeds them."""

from __future__ import annotations

import io
import json
import math

import pytest

from trainproof.integrations.guard import Guard


def rising(step: int) -> float:
    return 2.0 * 1.25**step  # a loss that grows by a quarter a step: diverging, beyond any noise


def falling(step: int) -> float:
    return 2.0 / (1 + 0.05 * step) + 0.01 * math.sin(step)


def test_a_diverging_loss_stops_under_stop_on_fail_with_its_abort_report(tmp_path):
    out = io.StringIO()
    guard = Guard("stop_on_fail", stream=out, framework="lightning")
    guard.begin(tmp_path)
    stopped = [step for step in range(1, 101) if guard.record(step, {"train_loss": rising(step), "lr-AdamW": 0.1}, max_steps=100)]
    assert stopped, out.getvalue()
    assert guard.stopped_at == stopped[0] < 30
    assert stopped == list(range(stopped[0], 101)), "once stopped, stopped"
    assert f"trainproof: stopping training at step {stopped[0]} of 100" in out.getvalue()
    abort = json.loads((tmp_path / "trainproof_abort.json").read_text())
    assert abort["abort"]["step"] == stopped[0]
    report = guard.finish(100, 100)
    assert report is not None and report.verdict.value == "FAIL"


def test_warn_never_stops_and_a_healthy_run_is_never_stopped(tmp_path):
    warn = Guard("warn", stream=io.StringIO(), framework="keras")
    healthy = Guard("stop_on_fail", stream=io.StringIO(), framework="keras")
    for guard in (warn, healthy):
        guard.begin(None)
    for step in range(1, 201):
        assert not warn.record(step, {"loss": rising(min(step, 60))}, 200)
        assert not healthy.record(step, {"loss": falling(step), "learning_rate": 1e-3}, 200)
    assert warn.judge.judgements > 0 and warn.failures(), "warn judged the failure and did not act"
    assert healthy.judge.judgements > 0 and not healthy.failures()
    assert not list(tmp_path.iterdir()), "no output folder, nothing written"


def test_names_are_read_by_the_readers_table_and_the_configurations_map(tmp_path):
    guard = Guard(framework="lightning")
    guard.begin(None)
    for step in range(1, 11):
        guard.record(step, {"train_loss_step": 2.0 - step / 10, "lr-AdamW/pg1": 1e-3, "grad_norm": 0.5, "epoch": 0})
    guard.record(10, {"val_loss": 1.5, "val_wer": 0.4})
    run = guard.snapshot(copy=True, max_steps=10)
    assert list(run.loss.steps) == list(range(1, 11))
    assert run.learning_rate is not None and run.grad_norm is not None
    assert {name: list(series.steps) for name, series in run.eval_losses.items()} == {"eval_loss": [10]}
    assert list(run.eval_metrics) == ["val_wer"] and run.metric_goals["val_wer"] == "min"
    from trainproof.config import load

    (tmp_path / ".trainproof.toml").write_text('[map]\nloss = "my_objective"\n')
    mapped = Guard(config=tmp_path / ".trainproof.toml", framework="plain")
    mapped.begin(None)
    mapped.record(1, {"my_objective": 3.0, "loss": 99.0})
    assert list(mapped.snapshot(copy=True, max_steps=None).loss.values) == [3.0]
    assert load(tmp_path / ".trainproof.toml").names.overrides["loss"] == "my_objective"


def test_an_error_inside_the_guard_is_reported_once_and_never_stops_training():
    out = io.StringIO()
    guard = Guard("stop_on_fail", stream=out, framework="plain")
    guard.begin(None)

    def broken(*args, **kwargs):
        raise RuntimeError("judge exploded\n::error::injected")

    guard.judge.judge = broken  # type: ignore[method-assign]
    agreed = []
    for step in range(1, 50):
        assert guard.record(step, {"loss": rising(step)}, 50, agree=lambda d: agreed.append(d) or d) is False
    assert agreed == [False] * 49, "the ranks still agree, on going on"
    text = out.getvalue()
    assert text.count("the guard stopped judging after an error of its own") == 1
    assert "\n::error" not in text, "its message stays on one line"
    assert guard.finish(49, 50) is None


def test_bad_policy_and_renderer_names_are_refused():
    with pytest.raises(ValueError, match="policy"):
        Guard(policy="stop")
    with pytest.raises(ValueError, match="unknown renderers: pdf"):
        Guard(final_report={"pdf": "x.pdf"})
