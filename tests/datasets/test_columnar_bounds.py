"""The columnar NeMo reading (Arrow's JSON reader) on manifests made to break it (issue 27, item 5): deep nesting,
which crashed the process (SIGSEGV) or took time quadratic in the depth, and a new key on every line, which took GBs.
Each is now screened before Arrow sees it and read line by line: an exit in {0, 1, 2} with no traceback, in bounded
time and memory, and the verdict of a run where pyarrow cannot be imported.

These run ``trainproof data`` in a subprocess under an address-space limit, through a small wrapper that reports its
child's peak RSS. HANG TEST: SUBPROCESS_SECONDS is a generous bound on a run that takes about a second here (the old
code took 70 s at a depth of 10,000), not a measure of speed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("soundfile")
pytest.importorskip("pandas")

from tests.helpers import REPO  # noqa: E402

SUBPROCESS_SECONDS = 60.0
"""Seconds a run may take before it counts as a hang (generous: see the module doc)."""

ADDRESS_SPACE = 3 * 2**29
"""The child's address-space limit (1.5 GiB), as the fuzz suite sets it."""

PEAK_MIB = 512
"""The most resident memory a run may reach on these manifests of at most 2 MB (about 170 MiB now; the old code took
over 1 GiB on the new-key manifest, 3.4 GB without a limit)."""

_WRAPPER = """
import json, resource, subprocess, sys
limit, seconds, argv = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
def limited():
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    done = subprocess.run(argv, capture_output=True, text=True, errors="backslashreplace", timeout=seconds, preexec_fn=limited)
    result = {"code": done.returncode, "out": done.stdout, "err": done.stderr}
except subprocess.TimeoutExpired:
    result = {"code": None, "out": "", "err": ""}
result["peak_mib"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps(result))
"""

_NO_PYARROW = "raise ImportError('pyarrow is hidden for this run')\n"


def run_limited(tmp_path: Path, manifest: Path, *, hide_pyarrow: bool = False) -> dict:
    """``trainproof data MANIFEST --json`` in a child process under ADDRESS_SPACE: its exit code (None past
    SUBPROCESS_SECONDS), output and peak RSS in MiB."""
    path = [str(REPO)]
    if hide_pyarrow:
        shim = tmp_path / "no_pyarrow" / "pyarrow"
        shim.mkdir(parents=True, exist_ok=True)
        (shim / "__init__.py").write_text(_NO_PYARROW)
        path.insert(0, str(shim.parent))
    argv = [sys.executable, "-c", _WRAPPER, str(ADDRESS_SPACE), str(SUBPROCESS_SECONDS)]
    argv += [sys.executable, "-m", "trainproof", "data", str(manifest), "--no-cache", "--jobs", "1", "--json"]
    env = {"PYTHONPATH": ":".join(path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=SUBPROCESS_SECONDS + 30, cwd=tmp_path, env=env)
    return json.loads(done.stdout)


def _line(i: int, **more: object) -> str:
    return json.dumps({"audio_filepath": f"clips/c{i}.wav", "text": f"utterance number {i} of the corpus", **more})


def deep(depth: int):
    def write(folder: Path) -> Path:
        nested = '{"audio_filepath": "clips/deep.wav", "text": "nested", "x": ' + "[" * depth + "]" * depth + "}"
        path = folder / "deep.jsonl"
        path.write_text("".join(_line(i) + "\n" for i in range(3)) + nested + "\n")
        return path

    return write


def new_key_every_line(folder: Path) -> Path:
    path = folder / "keys.jsonl"
    path.write_text("".join(_line(i, **{f"k{i}": 1}) + "\n" for i in range(20_000)))
    return path


HOSTILE = {
    "a line nested 50,000 deep (a segfault)": deep(50_000),
    "a line nested 10,000 deep (70 s, quadratic)": deep(10_000),
    "a new key on every line of 20,000 (3.4 GB)": new_key_every_line,
}


def _verdict(result: dict) -> tuple:
    report = json.loads(result["out"])
    return result["code"], [(f["id"], f["level"], f.get("message")) for s in report["subjects"] for f in s["findings"]]


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_manifest_made_to_break_the_columnar_reader_ends_in_bounded_time_and_memory(name, tmp_path):
    manifest = HOSTILE[name](tmp_path)
    result = run_limited(tmp_path, manifest)
    assert result["code"] is not None, f"no verdict in {SUBPROCESS_SECONDS:.0f} s"
    assert result["code"] in (0, 1, 2), f"exit {result['code']} (a signal when negative), stderr {result['err'][-500:]!r}"
    assert "Traceback" not in result["err"], result["err"][-2000:]
    assert "internal error" not in result["err"], result["err"][-2000:]
    assert result["peak_mib"] < PEAK_MIB, f"peak RSS {result['peak_mib']:.0f} MiB"
    assert _verdict(result) == _verdict(run_limited(tmp_path, manifest, hide_pyarrow=True))
