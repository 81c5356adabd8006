"""The core import path stays light: judging a log loads none of the heavy optional packages."""

import json
import subprocess
import sys

from tests.helpers import REPO, hf_entries, write_hf_state

HEAVY = ("torch", "transformers", "sentencepiece", "soundfile", "pandas", "xxhash", "jinja2", "markdown", "tensorflow", "ray", "pyarrow", "lightning", "pytorch_lightning", "keras", "trainer", "accelerate")

PROBE = """
import json, sys
from trainproof.cli import main
code = main(sys.argv[1:])
sys.stdout.flush()
print(json.dumps(list(sys.modules)), file=sys.stderr)
"""


def modules_after(*argv: str) -> list[str]:
    """Every module a ``trainproof`` process has loaded once ``main(argv)`` returns, in the order they were loaded."""
    result = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, cwd=REPO)
    return json.loads(result.stderr.strip().splitlines()[-1])


def loaded_by(*argv: str) -> list[str]:
    """The heavy optional packages' modules a ``trainproof`` process loaded, sorted."""
    return sorted(m for m in modules_after(*argv) if m.split(".")[0] in HEAVY)


def test_epoch_text_and_json_import_nothing_heavy(tmp_path):
    path = write_hf_state(tmp_path / "trainer_state.json", hf_entries([2.0, 1.8, 1.5, 1.3, 1.2, 1.1]))
    assert loaded_by("epoch", str(path)) == []
    assert loaded_by("epoch", str(path), "--json") == []


def test_importing_the_package_imports_nothing_heavy():
    result = subprocess.run(
        [sys.executable, "-c", f"import sys, trainproof, trainproof.judge; print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))"],
        capture_output=True, text=True, cwd=REPO,
    )
    assert result.stdout.strip() == "[]"


def test_html_loads_its_template_engine_only_when_asked(tmp_path):
    path = write_hf_state(tmp_path / "trainer_state.json", hf_entries([2.0, 1.8, 1.5, 1.3, 1.2, 1.1]))
    assert "jinja2" in loaded_by("epoch", str(path), "--html", str(tmp_path / "r.html"))


def test_epoch_imports_no_other_commands_checks_or_readers(tmp_path):
    path = write_hf_state(tmp_path / "trainer_state.json", hf_entries([2.0, 1.8, 1.5, 1.3, 1.2, 1.1]))
    loaded = modules_after("epoch", str(path))
    assert "trainproof.runs.readers.hf" in loaded, "the probe sees what epoch loads"
    assert [m for m in loaded if m.startswith(("trainproof.data", "trainproof.checks.data", "trainproof.cli.data"))] == []


def test_data_on_the_local_engine_imports_no_ray(tmp_path):
    """Only --engine ray imports ray; the default engine never does (pyarrow may come in with pandas, which loads it when installed)."""
    import pytest

    pytest.importorskip("soundfile")
    import numpy as np
    import soundfile as sf

    sf.write(tmp_path / "a.wav", np.zeros(1600), 16000)
    (tmp_path / "m.jsonl").write_text(json.dumps({"audio_filepath": str(tmp_path / "a.wav"), "text": "hello"}) + "\n")
    loaded = loaded_by("data", str(tmp_path / "m.jsonl"), "--no-cache", "--jobs", "1")
    assert "soundfile" in loaded, "the probe sees what the data command loads"
    assert not [m for m in loaded if m.split(".")[0] == "ray"]


def test_epoch_loads_no_numpy_masked_arrays(tmp_path):
    """numpy.ma costs a small log's `epoch` a tenth of its start (bench_startup.py): quantiles, medians and uniques
    on the epoch path are computed without it. Three logs reach the three quantiles: the report's log-scale choice,
    the noise of a loss printed with two decimals (robust_sigma's fallback), and a step-time column (its cliff)."""
    entries = hf_entries([2.0 * 0.97**i for i in range(60)])
    path = write_hf_state(tmp_path / "trainer_state.json", entries)
    (tmp_path / "rounded").mkdir()
    rounded = write_hf_state(tmp_path / "rounded" / "trainer_state.json", hf_entries([round(2.0 - 0.01 * i, 2) for i in range(60)]))
    timed = tmp_path / "timed.jsonl"
    timed.write_text("".join(json.dumps({"step": i, "loss": 2.0 * 0.97**i, "step_time": 0.5}) + "\n" for i in range(1, 61)))
    html = str(tmp_path / "r.html")  # the only output that draws charts, and so decides a log scale
    for argv in ([path], [path, "--json"], [path, "--markdown", str(tmp_path / "r.md")], [path, "--html", html], [rounded], [timed]):
        loaded = modules_after("epoch", *map(str, argv))
        assert "numpy" in loaded, "the probe sees what epoch loads"
        assert "numpy.ma" not in loaded, argv


def test_the_data_commands_options_are_listed_without_loading_the_command():
    """`trainproof data --help` (and every hook run that builds the parser) needs the engines' names only."""
    code = "import json, sys; from trainproof.cli import build_parser; build_parser('data'); print(json.dumps(list(sys.modules)))"
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True).stdout)
    assert "trainproof.cli.data" in loaded
    # of the rules' floor, only the report's vocabulary (a finding and its level) and the thresholds the settings hold
    vocabulary = {"trainproof.checks", "trainproof.checks.findings", "trainproof.checks.thresholds"}
    rules = [m for m in loaded if m.startswith(("trainproof.judge", "trainproof.checks", "trainproof.data.")) and m not in vocabulary]
    assert rules == []


def _readers_checks_and_tempfile_loaded_by(*argv: str) -> list[str]:
    return [m for m in modules_after(*argv) if m.startswith(("trainproof.runs.readers.", "trainproof.checks.")) or m == "tempfile"]


def test_epoch_on_an_hf_log_imports_only_its_reader_and_rules(tmp_path):
    """Each reader, compare's and watch's rules, and tempfile are imported on first use: an HF log's `epoch` (a pre-commit
    hook's whole run, bench_startup.py) loads no other format's reader, no rule it does not apply, and writes no file."""
    path = write_hf_state(tmp_path / "trainer_state.json", hf_entries([2.0 * 0.97**i for i in range(60)]))
    loaded = _readers_checks_and_tempfile_loaded_by("epoch", str(path))
    assert "trainproof.runs.readers.hf" in loaded, "the probe sees the reader the log needs"
    others = {f"trainproof.runs.readers.{name}" for name in ("coqui", "csv", "jsonl", "mlflow", "tensorboard", "tfrecord")}
    assert not others.intersection(loaded)
    assert "trainproof.checks.compare" not in loaded
    assert "trainproof.checks.watching" not in loaded
    assert "tempfile" not in loaded
    assert "tempfile" in _readers_checks_and_tempfile_loaded_by("epoch", str(path), "--json-file", str(tmp_path / "r.json")), "a file written loads it"


def test_a_reader_is_imported_when_its_format_is_read_or_named(tmp_path):
    """The other side of lazy readers: the one a log's content picks, or the one ``--format`` names, is there."""
    (tmp_path / "log.jsonl").write_text("".join(json.dumps({"step": 10 * i, "loss": 2.0 * 0.97**i}) + "\n" for i in range(1, 30)))
    loaded = _readers_checks_and_tempfile_loaded_by("epoch", str(tmp_path / "log.jsonl"))
    assert "trainproof.runs.readers.jsonl" in loaded
    assert "trainproof.runs.readers.tensorboard" not in loaded
    assert "trainproof.runs.readers.tensorboard" in _readers_checks_and_tempfile_loaded_by("epoch", str(tmp_path / "log.jsonl"), "--format", "tensorboard")


def test_the_cli_imports_numpy_before_the_modules_that_use_it():
    """numpy imported deep in the import chain costs CPython 3.11 about 900 frame-stack munmap calls (15 ms of a small
    log's epoch); trainproof.cli imports it first, at the top of the stack (see its comment)."""
    order = modules_after("rules")
    assert "trainproof.checks.registry" in order, "the probe sees what rules loads"
    light = {"trainproof.cli", "trainproof.io", "trainproof.io.about"}  # the version, which the package itself names
    assert [m for m in order[: order.index("numpy")] if m.startswith("trainproof.") and m not in light] == []
