"""The ``trainproof`` process: its entry points, and the allocator setting only that process makes."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

from tests.helpers import REPO

FAULTS = """
import ctypes, resource, sys
ctypes.CDLL(None).prctl(41, 1, 0, 0, 0)  # PR_SET_THP_DISABLE: 4 KiB pages whatever the kernel's huge-page setting
import numpy as np
from trainproof.cli.process import keep_freed_memory
if sys.argv[1] == "kept":
    keep_freed_memory()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
kept = []
sizes = (1, 2, 4, 8, 16, 24) if sys.argv[2] == "small" else (48, 80)  # 80 MiB: a ten-million-step series
for _ in range(3):
    for mib in sizes:  # a reader's temporaries, growing, each freed; small arrays kept between them
        temporary, half = np.ones(mib * 131072), np.ones(mib * 65536)
        del temporary
        kept.append(np.ones(1000))
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""

PROBE = """
import sys
import trainproof.cli as cli
import trainproof.cli.process as process
def refuse():
    raise SystemExit("keep_freed_memory was called")
process.keep_freed_memory = refuse
def refuse_data():
    raise SystemExit("return_large_arrays was called")
process.return_large_arrays = refuse_data
sys.argv = ["trainproof", *sys.argv[1:]]
if sys.argv[1] == "library":
    sys.exit(cli.main(["rules"]))
if sys.argv[1] == "-m":  # python -m trainproof, as the process runs it
    import runpy
    sys.argv = ["trainproof", *sys.argv[2:]]
    runpy.run_module("trainproof", run_name="__main__")
sys.exit(cli.process_main())
"""
"""Runs a command with keep_freed_memory and return_large_arrays replaced by ones that end the process, to tell where
each is called."""


def _clean_env() -> dict[str, str]:
    """This environment without the user's allocator settings, which keep_freed_memory leaves alone."""
    from trainproof.cli.process import _USERS_OWN

    names = (*_USERS_OWN, "LD_PRELOAD")
    return {k: v for k, v in os.environ.items() if k not in names} | {"NUMPY_MADVISE_HUGEPAGE": "0"}


def _probe(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, cwd=REPO, env=env or _clean_env())


def test_one_switch_runs_the_process_untuned():
    """TRAINPROOF_PLAIN_PROCESS=1: the command runs, and nothing of the process tuning is set."""
    done = _probe("rules", env=_clean_env() | {"TRAINPROOF_PLAIN_PROCESS": "1"})
    assert "keep_freed_memory was called" not in done.stderr
    assert done.returncode == 0, done.stderr
    assert "keep_freed_memory was called" in _probe("rules", env=_clean_env() | {"TRAINPROOF_PLAIN_PROCESS": "0"}).stderr


def test_the_console_script_and_python_m_run_the_process_entry():
    from importlib.metadata import entry_points

    assert entry_points(group="console_scripts")["trainproof"].value == "trainproof.cli:process_main"
    assert "keep_freed_memory was called" in _probe("-m", "rules").stderr


def test_the_process_sets_the_allocator_but_not_for_watch_data_or_a_library_caller():
    assert "keep_freed_memory was called" in _probe("rules").stderr
    watch = _probe("watch", "--help")
    assert watch.returncode == 0, watch.stderr
    data = _probe("data", "--help")  # a corpus's driver: its peak, not a few page faults, is what bounds it
    assert "return_large_arrays was called" in data.stderr and "keep_freed_memory" not in data.stderr
    assert "return_large_arrays" not in _probe("rules").stderr
    library = _probe("library")
    assert library.returncode == 0, library.stderr


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the setting is glibc's")
def test_the_process_reuses_freed_arrays_instead_of_faulting_in_fresh_pages():
    """Temporaries of 1 to 24 MiB, freed between small arrays that stay: glibc by default maps many of them afresh or
    trims the heap under them (28,000 page faults here); set by keep_freed_memory, it hands freed pages out again
    (15,400)."""

    default, kept = _faults("default", "small"), _faults("kept", "small")
    assert kept < default * 0.7


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the setting is glibc's")
def test_arrays_over_glibcs_largest_mapping_threshold_are_reused_too():
    """glibc maps every allocation over 32 MiB on its own whatever its threshold is set to; kept from the heap, three
    rounds of 48 and 80 MiB temporaries fault in about one round's pages, not three."""
    default, kept = _faults("default", "large"), _faults("kept", "large")
    assert kept < default * 0.5


def _faults(mode: str, sizes: str, env: dict[str, str] | None = None) -> int:
    out = subprocess.run([sys.executable, "-c", FAULTS, mode, sizes], capture_output=True, text=True, check=True, cwd=REPO, env=env or _clean_env())
    return int(out.stdout)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the setting is glibc's")
def test_an_allocator_the_user_set_is_left_as_it_is():
    env = _clean_env() | {"MALLOC_TRIM_THRESHOLD_": "131072"}
    kept, default = _faults("kept", "small", env), _faults("default", "small", env)
    assert abs(kept - default) < default * 0.02  # set, it would be a quarter


def test_without_ctypes_the_command_still_runs():
    code = "import sys; sys.modules['ctypes'] = None; sys.argv = ['trainproof', '--version']; from trainproof.cli import process_main; process_main()"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=_clean_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("trainproof ")


ENDING = """
import atexit, sys
class Teardown:
    def __del__(self):
        print("torn down", flush=True)
kept = Teardown()  # freed only by the interpreter's teardown
atexit.register(lambda: print("exit handler ran"))  # buffered: printed only if stdout is flushed after the handlers
sys.argv = ["trainproof", *sys.argv[1:]]
from trainproof.cli import process_main
process_main()
print("process_main returned")
"""


@pytest.mark.parametrize(("log", "code"), [("good", 0), ("flat", 1), ("missing", 2)])
def test_the_process_ends_with_the_commands_code_after_the_exit_handlers_and_without_teardown(tmp_path, log, code):
    """The report is printed whole, exit handlers run (and what they print is flushed), the command's exit code is the
    process's; the interpreter's teardown is skipped (an object freed only by it is never freed)."""
    path = tmp_path / "log.jsonl"
    losses = [2.0 * 0.97**i for i in range(60)] if log == "good" else [1.5] * 60
    if log != "missing":
        path.write_text("".join(json.dumps({"step": i, "loss": loss}) + "\n" for i, loss in enumerate(losses, 1)))
    done = subprocess.run([sys.executable, "-c", ENDING, "epoch", str(path)], capture_output=True, text=True, cwd=REPO, env=_clean_env())
    assert done.returncode == code, done.stderr
    assert "Findings:" in done.stdout
    assert done.stdout.rstrip().endswith("exit handler ran")
    assert "torn down" not in done.stdout
    assert "process_main returned" not in done.stdout
    assert "Traceback" not in done.stderr


def test_watch_ends_the_usual_way(tmp_path):
    """watch runs as long as a training job: its process is not cut short (that its allocator is not set, the
    probe above shows)."""
    code = ENDING.replace(
        "from trainproof.cli import process_main",
        "import trainproof.cli as cli\nimport trainproof.cli.process as process\n"
        "process.end_process = lambda code: print('end_process', code)\nprocess_main = cli.process_main",
    )
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps({"step": i, "loss": 2.0 * 0.97**i}) + "\n" for i in range(1, 61)))
    watched = subprocess.run([sys.executable, "-c", code, "watch", str(path), "--max-ticks", "1", "--interval", "0.1"], capture_output=True, text=True, cwd=REPO, env=_clean_env())
    assert watched.returncode == 0, watched.stderr
    assert "process_main returned" in watched.stdout
    assert "end_process" not in watched.stdout
    rules = subprocess.run([sys.executable, "-c", code, "rules"], capture_output=True, text=True, cwd=REPO, env=_clean_env())
    assert "end_process 0" in rules.stdout


PAGES = """
import sys
from trainproof.cli.process import ordinary_pages
ordinary_pages()
try:
    from numpy._core.multiarray import _set_madvise_hugepage
except ImportError:
    from numpy.core.multiarray import _set_madvise_hugepage
print(_set_madvise_hugepage(True))  # what it was
"""


@pytest.mark.parametrize(("users", "huge"), [(None, "False"), ("1", "True")])
def test_the_process_asks_for_ordinary_pages_unless_the_user_chose(users, huge):
    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    if users is not None:
        env["NUMPY_MADVISE_HUGEPAGE"] = users
    done = subprocess.run([sys.executable, "-c", PAGES], capture_output=True, text=True, cwd=REPO, env=env, check=True)
    assert done.stdout.strip() == huge


def test_under_a_profiler_the_process_returns_and_the_profile_is_written(tmp_path):
    """python -m cProfile -o FILE -m trainproof writes FILE when trainproof's main returns: the process is not cut short."""
    out = tmp_path / "run.prof"
    done = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(out), "-m", "trainproof", "rules"], capture_output=True, text=True, cwd=REPO, env=_clean_env())
    assert done.returncode == 0, done.stderr
    assert out.is_file()
    assert out.stat().st_size > 0


DROPPED = """
import sys, weakref
import trainproof.cli as cli
import trainproof.cli.process as process
from trainproof.io import collector
class Parsed:
    pass
def main(argv=None, real=cli.main):
    parsed = Parsed()
    alive = weakref.ref(parsed)
    collector.drop(parsed)
    del parsed
    print("kept" if alive() is not None else "freed", flush=True)
    return real(argv)
if sys.argv[1] == "library":
    main(["rules"])
    sys.exit(0)
if sys.argv[1] == "two":  # a second document read: the first is freed before it, one held at a time
    collector.keep_dropped_to_exit()
    first, second = Parsed(), Parsed()
    alive = weakref.ref(first)
    collector.drop(first)
    del first
    collector.release_dropped()
    collector.drop(second)
    print("kept" if alive() is not None else "freed", flush=True)
    sys.exit(0)
cli.main = main
sys.argv = ["trainproof", *sys.argv[1:]]
sys.exit(cli.process_main())
"""


@pytest.mark.parametrize(("argv", "fate"), [(["rules"], "kept"), (["watch", "--help"], "freed"), (["library"], "freed"), (["two"], "freed")])
def test_a_dropped_document_is_kept_to_the_end_only_in_the_short_process(argv, fate):
    """The parsed trainer_state.json a reader drops is freed at once for a library caller and for watch (which reads
    it again and again), and kept until os._exit in the one-command process, one at a time (a folder of runs)."""
    done = subprocess.run([sys.executable, "-c", DROPPED, *argv], capture_output=True, text=True, cwd=REPO, env=_clean_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == fate


def test_what_is_built_with_the_collector_paused_goes_to_the_oldest_generation():
    """A corpus's entries, built with the collector paused, are not left young for the next collections to walk."""
    import gc

    from trainproof.io.collector import collector_paused

    assert gc.get_freeze_count() == 0
    with collector_paused():
        assert not gc.isenabled()
        built = [[n] for n in range(10_000)]
    assert gc.isenabled()
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert all(id(o) in oldest for o in built)
    assert not any(id(o) in oldest for o in [[n] for n in range(10)])  # what comes after starts young, as ever


def test_a_programs_own_frozen_objects_stay_frozen_through_a_pause():
    import gc

    from trainproof.io.collector import collector_paused

    kept = [[n] for n in range(100)]
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with collector_paused():
            built = [[n] for n in range(100)]
        assert gc.get_freeze_count() == frozen
        assert len(built) == len(kept)
    finally:
        gc.unfreeze()


POOL = """
import sys
import trainproof.cli as cli
def show():
    import pyarrow
    print(pyarrow.default_memory_pool().backend_name)
    return 0
cli.main = lambda argv=None: show()
sys.argv = ["trainproof", *sys.argv[1:]]
sys.exit(cli.process_main())
"""


def _arrow_pool(*argv: str, env: dict[str, str]) -> str:
    pytest.importorskip("pyarrow")
    done = subprocess.run([sys.executable, "-c", POOL, *argv], capture_output=True, text=True, cwd=REPO, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_process_has_arrow_allocate_through_the_c_library_unless_the_user_chose_a_pool():
    """Arrow's own pool keeps what the data command's columns freed (a sixth of the driver's peak at 300,000 clips);
    the tuned process asks for the system allocator, a plain one and a user's choice are left alone."""
    env = {k: v for k, v in _clean_env().items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    assert _arrow_pool("rules", env=env) == "system"
    assert _arrow_pool("rules", env=env | {"TRAINPROOF_PLAIN_PROCESS": "1"}) != "system"
    assert _arrow_pool("rules", env=env | {"ARROW_DEFAULT_MEMORY_POOL": "jemalloc"}) == "jemalloc"


PAGES_PROBE = """
import sys
import trainproof.cli as cli
import trainproof.cli.process as process
process.keep_freed_memory = process.return_large_arrays = lambda: None
def refuse():
    raise SystemExit("ordinary_pages was called")
process.ordinary_pages = refuse
sys.argv = ["trainproof", *sys.argv[1:]]
sys.exit(cli.process_main())
"""


def test_data_leaves_numpy_its_huge_pages_and_other_commands_do_not():
    """trainproof data maps its large arrays afresh (return_large_arrays): huge pages make fewer faults of them."""

    def probe(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", PAGES_PROBE, *argv], capture_output=True, text=True, cwd=REPO, env=_clean_env())

    assert "ordinary_pages was called" in probe("rules").stderr
    data = probe("data", "--help")
    assert data.returncode == 0, data.stderr
    assert "ordinary_pages" not in data.stderr
