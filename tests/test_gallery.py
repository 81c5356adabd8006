"""The project's own gallery gets the verdicts its construction promises, at every seed.

Two locks: the promises below (what each sabotage must and must not trigger),
and a snapshot of every run's verdict and rule ids, so any change in what the
rules say about a real run shows up in review. Regenerate the snapshot on
purpose with ``pytest tests/test_gallery.py --update-golden``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers import REPO
from trainproof.commands import judge_compare, judge_epoch
from trainproof.report import Level, Verdict

GALLERY = REPO / "examples" / "gallery"
SNAPSHOT = REPO / "tests" / "snapshots" / "gallery.json"
CONFIGS = ("healthy", "lr_hot", "lr_zero", "bad_labels", "overfit", "nonfinite", "finetune_hot")
SEEDS = (0, 1, 2)


def judge(config: str, seed: int):
    return judge_epoch([GALLERY / config / f"seed{seed}"]).subjects[0]


def rule_ids(subject, level: Level) -> set[str]:
    return {f.rule_id for f in subject.findings if f.level is level}


@pytest.mark.parametrize("seed", SEEDS)
def test_every_config_and_seed_is_shipped(seed):
    for config in CONFIGS:
        assert (GALLERY / config / f"seed{seed}" / "trainer_state.json").is_file()
        assert (GALLERY / config / f"seed{seed}" / "run_meta.json").is_file()


@pytest.mark.parametrize("seed", SEEDS)
def test_healthy_passes_without_warnings(seed):
    s = judge("healthy", seed)
    assert s.verdict is Verdict.PASS
    assert not rule_ids(s, Level.WARN)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    ("config", "must_fail"),
    [("lr_hot", {"TP-DIVERGE"}), ("lr_zero", {"TP-LR-ZERO", "TP-NO-LEARNING"}), ("nonfinite", {"TP-LOSS-NONFINITE", "TP-GRAD-NONFINITE"})],
)
def test_sabotage_fails_for_the_right_reason(seed, config, must_fail):
    s = judge(config, seed)
    assert s.verdict is Verdict.FAIL
    assert must_fail <= rule_ids(s, Level.FAIL)


@pytest.mark.parametrize("seed", SEEDS)
def test_overfit_warns_naming_overfitting(seed):
    s = judge("overfit", seed)
    assert s.verdict is Verdict.WARN
    assert rule_ids(s, Level.WARN) == {"TP-OVERFIT"}


@pytest.mark.parametrize("seed", SEEDS)
def test_finetune_hot_warns_that_the_eval_loss_got_worse(seed):
    """Eval loss lowest at its first evaluation, well above it at the end; the training loss rose and only partly
    recovered, so this is no overfitting (TP-OVERFIT silent) and the training curve alone is no divergence."""
    s = judge("finetune_hot", seed)
    assert s.verdict is Verdict.WARN
    assert rule_ids(s, Level.WARN) == {"TP-EVAL-WORSE"}
    assert "TP-OVERFIT" in s.ran
    assert "TP-DIVERGE" in s.ran
    worse = next(f for f in s.findings if f.rule_id == "TP-EVAL-WORSE")
    assert worse.values["best_eval_step"] == 50  # the first evaluation
    assert worse.values["rise"] > 0.3


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("config", [c for c in CONFIGS if c != "finetune_hot"])
def test_eval_worse_fires_only_on_the_config_made_for_it(seed, config):
    s = judge(config, seed)
    assert all(f.rule_id != "TP-EVAL-WORSE" for f in s.findings)


@pytest.mark.parametrize("seed", SEEDS)
def test_bad_labels_passes_alone_and_fails_against_healthy(seed):
    assert judge("bad_labels", seed).verdict is not Verdict.FAIL
    compared = judge_compare([GALLERY / "bad_labels" / f"seed{seed}"], GALLERY / "healthy" / f"seed{seed}").judged[0]
    assert compared.verdict is Verdict.FAIL
    assert "TP-CMP-FLOOR" in rule_ids(compared, Level.FAIL)


def snapshot() -> dict:
    out = {}
    for config in CONFIGS:
        for seed in SEEDS:
            s = judge(config, seed)
            out[f"{config}/seed{seed}"] = {
                "verdict": s.verdict.value,
                "findings": sorted(f"{f.level.name} {f.rule_id}" for f in s.findings),
            }
    return out


def test_snapshot_of_every_verdict_and_rule_id(update_golden):
    current = snapshot()
    if update_golden:
        SNAPSHOT.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
    assert json.loads(SNAPSHOT.read_text()) == current


def test_gallery_readme_table_is_generated_and_current():
    result = subprocess.run([sys.executable, str(GALLERY / "make_table.py"), "--check"], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr
