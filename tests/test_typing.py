"""The package type-checks clean under the project's mypy configuration ([tool.mypy] in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import REPO


def test_mypy_finds_no_error(tmp_path):
    pytest.importorskip("mypy")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")], capture_output=True, text=True, cwd=REPO
    )
    assert done.returncode == 0, done.stdout + done.stderr
