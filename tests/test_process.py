"""The ``trainproof`` process: its entry points, and the allocator setting only that process makes."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from tests.helpers import REPO

FAULTS = """
import resource, sys
import numpy as np
from trainproof.cli import keep_freed_memory
if sys.argv[1] == "kept":
    keep_freed_memory()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
kept = []
for _ in range(3):
    for mib in (1, 2, 4, 8, 16, 24):  # a reader's temporaries, growing, each freed; small arrays kept between them
        temporary, half = np.ones(mib * 131072), np.ones(mib * 65536)
        del temporary
        kept.append(np.ones(1000))
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def test_the_console_script_and_python_m_run_the_process_entry():
    assert 'trainproof = "trainproof.cli:process_main"' in (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert "process_main()" in (REPO / "trainproof" / "__main__.py").read_text(encoding="utf-8")


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the setting is glibc's")
def test_the_process_reuses_freed_arrays_instead_of_faulting_in_fresh_pages():
    """Temporaries of 1 to 24 MiB, freed between small arrays that stay: glibc by default maps many of them afresh or
    trims the heap under them (28,000 page faults here); set by keep_freed_memory, it hands freed pages out again
    (15,400)."""

    def faults(mode: str) -> int:
        # numpy's transparent huge pages, when the kernel has some to give, fault 2 MiB at a time: counts would vary
        env = {**os.environ, "NUMPY_MADVISE_HUGEPAGE": "0"}
        out = subprocess.run([sys.executable, "-c", FAULTS, mode], capture_output=True, text=True, check=True, cwd=REPO, env=env)
        return int(out.stdout)

    default, kept = faults("default"), faults("kept")
    assert kept < default * 0.7


def test_the_library_leaves_the_allocator_alone():
    """Importing trainproof or calling main() (what a library caller and the HF callback's process do) sets nothing."""
    source = (REPO / "trainproof" / "cli" / "__init__.py").read_text(encoding="utf-8")
    main_body = source.split("def main(", 1)[1]
    assert "keep_freed_memory" not in main_body
