"""The core import path stays light: judging a log loads none of the heavy optional packages."""

import json
import subprocess
import sys

from tests.helpers import REPO, hf_entries, write_hf_state

HEAVY = ("torch", "transformers", "sentencepiece", "soundfile", "pandas", "xxhash", "jinja2", "markdown", "tensorflow", "ray", "pyarrow")

PROBE = """
import json, sys
from trainproof.cli import main
code = main(sys.argv[1:])
sys.stdout.flush()
print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {heavy})), file=sys.stderr)
"""


def loaded_by(*argv):
    script = PROBE.format(heavy=set(HEAVY))
    result = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, cwd=REPO)
    return json.loads(result.stderr.strip().splitlines()[-1])


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
    probe = (
        "import sys; from trainproof.cli import main; main(sys.argv[1:]); "
        "print(sorted(m for m in sys.modules if m.startswith(('trainproof.data', 'trainproof.checks.data', 'trainproof.cli.data'))), file=sys.stderr)"
    )
    result = subprocess.run([sys.executable, "-c", probe, "epoch", str(path)], capture_output=True, text=True, cwd=REPO)
    assert result.stderr.strip().splitlines()[-1] == "[]"


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
    on the epoch path are computed without it."""
    entries = hf_entries([2.0 * 0.97**i for i in range(60)])
    path = write_hf_state(tmp_path / "trainer_state.json", entries)
    probe = "import sys; from trainproof.cli import main; main(sys.argv[1:]); print('numpy.ma' in sys.modules, file=sys.stderr)"
    for extra in ([], ["--json"], ["--markdown", str(tmp_path / "r.md")]):
        result = subprocess.run([sys.executable, "-c", probe, "epoch", str(path), *extra], capture_output=True, text=True, cwd=REPO)
        assert result.stderr.strip().splitlines()[-1] == "False", extra
