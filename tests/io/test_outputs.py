"""Output files: never an input, never anything but what the user named, written safely whatever the path is."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import threading

import pytest

from tests.helpers import REPO
from tests.cli.test_cli import assert_one_error_line, run_cli

GALLERY = REPO / "examples" / "gallery"


@pytest.fixture
def run_dir(tmp_path):
    target = tmp_path / "run"
    shutil.copytree(GALLERY / "lr_hot" / "seed0", target)
    return target


@pytest.fixture
def baseline_dir(tmp_path):
    target = tmp_path / "base"
    shutil.copytree(GALLERY / "healthy" / "seed0", target)
    return target


def snapshot(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("option", ["--json-file", "--html", "--sarif", "--junit", "--markdown"])
def test_an_output_is_never_the_log_inside_an_input_folder(capsys, run_dir, option):
    before = snapshot(run_dir)
    code, _, err = run_cli(capsys, "epoch", run_dir, option, run_dir / "trainer_state.json")
    assert code == 2
    assert_one_error_line(err, "trainer_state.json", "is read as an input; refusing to overwrite it")
    assert snapshot(run_dir) == before


def test_compare_never_overwrites_the_baseline_log(capsys, run_dir, baseline_dir):
    before = snapshot(baseline_dir)
    code, _, err = run_cli(capsys, "compare", run_dir, baseline_dir, "--html", baseline_dir / "trainer_state.json")
    assert code == 2
    assert "refusing to overwrite" in err
    assert snapshot(baseline_dir) == before


def test_a_link_to_an_input_is_caught_by_identity(capsys, run_dir, tmp_path):
    log = run_dir / "trainer_state.json"
    before = log.read_bytes()
    (tmp_path / "soft.sarif").symlink_to(log)
    os.link(log, tmp_path / "hard.sarif")
    for name in ("soft.sarif", "hard.sarif"):
        code, _, err = run_cli(capsys, "epoch", run_dir, "--sarif", tmp_path / name)
        assert code == 2
        assert "refusing to overwrite" in err
    assert log.read_bytes() == before


def test_the_configuration_file_is_never_an_output(capsys, run_dir, tmp_path):
    config = tmp_path / "trainproof.toml"
    config.write_text('ignore = ["TP-PLATEAU"]\n')
    code, _, err = run_cli(capsys, "epoch", run_dir, "--config", config, "--markdown", config)
    assert code == 2
    assert "is the configuration file" in err
    assert config.read_text() == 'ignore = ["TP-PLATEAU"]\n'


def test_the_job_summary_is_never_appended_to_an_input(capsys, run_dir, monkeypatch):
    log = run_dir / "trainer_state.json"
    before = log.read_bytes()
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(log))
    code, _, err = run_cli(capsys, "epoch", run_dir, "--github")
    assert code == 2
    assert "GITHUB_STEP_SUMMARY" in err
    assert "refusing" in err
    assert log.read_bytes() == before


def test_writing_again_into_the_run_folder_is_fine(capsys, run_dir):
    report = run_dir / "report.html"
    for _ in range(2):  # the second run finds the first report there: it is not an input
        code, _, err = run_cli(capsys, "epoch", run_dir, "--html", report)
        assert code == 1, err
    assert report.read_text().startswith("<!DOCTYPE html>")


def test_a_symlink_output_is_written_through_and_stays_a_link(capsys, run_dir, tmp_path):
    target = tmp_path / "real.sarif"
    target.write_text("old")
    link = tmp_path / "link.sarif"
    link.symlink_to(target)
    code, _, _ = run_cli(capsys, "epoch", run_dir, "--sarif", link)
    assert code == 1
    assert link.is_symlink()
    assert os.readlink(link) == str(target)
    assert json.loads(target.read_text())["version"] == "2.1.0"


def test_a_dangling_symlink_output_creates_its_target(capsys, run_dir, tmp_path):
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "made.json")
    code, _, _ = run_cli(capsys, "epoch", run_dir, "--json-file", link)
    assert code == 1
    assert link.is_symlink()
    assert json.loads((tmp_path / "made.json").read_text())["verdict"] == "FAIL"


def test_a_fifo_output_is_written_as_a_stream(capsys, run_dir, tmp_path):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    received = []

    def read():
        with open(fifo, "rb") as handle:
            received.append(handle.read())

    reader = threading.Thread(target=read)
    reader.start()
    try:
        code, _, err = run_cli(capsys, "epoch", run_dir, "--junit", fifo)
    finally:
        reader.join(timeout=30)
    assert code == 1, err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO is still a FIFO"
    assert received
    assert received[0].startswith(b"<?xml")


def test_a_fifo_nobody_reads_is_an_error_not_a_hang(capsys, run_dir, tmp_path):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    code, out, err = run_cli(capsys, "epoch", run_dir, "--sarif", fifo)
    assert code == 1, "the FAIL is still the exit code"
    assert "no process is reading" in err
    assert "[FAIL] TP-DIVERGE" in out
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_job_summary_fifo_nobody_reads_is_an_error_not_a_hang(capsys, run_dir, tmp_path, monkeypatch):
    fifo = tmp_path / "summary.fifo"
    os.mkfifo(fifo)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(fifo))
    code, out, err = run_cli(capsys, "epoch", run_dir, "--github")
    assert code == 1, "the FAIL is still the exit code"
    assert "no process is reading" in err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_the_job_summary_is_appended_to_not_replaced(capsys, run_dir, tmp_path, monkeypatch):
    summary = tmp_path / "summary.md"
    summary.write_text("an earlier step's summary\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    for _ in range(2):
        run_cli(capsys, "epoch", run_dir, "--github")
    text = summary.read_text()
    assert text.startswith("an earlier step's summary\n")
    assert text.count("<!-- trainproof:epoch -->") == 2


def device(folder, name, minor):
    """A character device of our own (1,3 is null, 1,7 is full): never point a test at the system's /dev."""
    node = folder / name
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    except PermissionError:
        pytest.skip("making a device node needs root")
    return node


def test_a_device_node_is_written_through_not_replaced(capsys, run_dir, tmp_path):
    node = device(tmp_path, "mynull", 3)
    code, _, err = run_cli(capsys, "epoch", run_dir, "--html", node)
    assert code == 1, err
    assert stat.S_ISCHR(os.lstat(node).st_mode), "the device node is still a device node"


def test_a_full_device_is_one_error_line(capsys, run_dir, tmp_path):
    node = device(tmp_path, "myfull", 7)
    code, out, err = run_cli(capsys, "epoch", run_dir, "--html", node)
    assert code == 1
    assert "TP-DIVERGE" in out
    assert_one_error_line(err, "myfull", "cannot write it")
    assert stat.S_ISCHR(os.lstat(node).st_mode)
    assert os.lstat(node).st_rdev == os.makedev(1, 7)


@pytest.mark.parametrize("option", ["--html", "--sarif"])
def test_an_empty_output_name_is_a_usage_error(capsys, run_dir, option):
    code, _, err = run_cli(capsys, "epoch", run_dir, option, "")
    assert code == 2
    assert_one_error_line(err, f"{option} needs a file name")


def test_an_output_in_a_read_only_folder_loses_nothing_else(capsys, run_dir, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    # root writes into any folder of a normal filesystem; sysfs refuses a new file even to root
    folder = locked if not os.access(locked, os.W_OK) else "/sys"
    if not os.path.isdir(folder):
        pytest.skip("no folder this user cannot write into")
    try:
        code, out, err = run_cli(capsys, "epoch", run_dir, "--html", f"{folder}/r.html", "--json-file", tmp_path / "r.json")
    finally:
        locked.chmod(0o700)
    assert code == 1
    assert "TP-DIVERGE" in out
    assert_one_error_line(err, "r.html: cannot write it")
    assert json.loads((tmp_path / "r.json").read_text())["verdict"] == "FAIL"


def test_an_unwritable_output_exits_2_when_nothing_fails(capsys, baseline_dir, tmp_path):
    node = device(tmp_path, "myfull", 7)
    code, out, err = run_cli(capsys, "epoch", baseline_dir, "--json-file", node)
    assert code == 2
    assert out.startswith("trainproof epoch: PASS")
    assert_one_error_line(err, "myfull", "cannot write it")


def test_a_file_name_that_is_not_utf8_is_written_and_printed(capsys, run_dir, tmp_path):
    weird = os.fsdecode(b"r\xff\xfe.json")
    (tmp_path / weird).write_bytes((run_dir / "trainer_state.json").read_bytes())
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    argv = ["epoch", str(tmp_path / weird)]
    for option, name in (("--html", "r.html"), ("--sarif", "r.sarif"), ("--junit", "r.xml"), ("--markdown", "r.md"), ("--json-file", "r.json")):
        argv += [option, str(out_dir / name)]
    code, out, err = run_cli(capsys, *argv)
    assert code == 1, err
    assert "\\xff" in out or "\\udcff" in out
    for written in out_dir.iterdir():
        written.read_bytes().decode("utf-8")  # valid UTF-8 throughout
    assert not [p for p in out_dir.iterdir() if p.name.startswith(".")], "no temporary file left behind"


def test_a_link_to_the_process_stdout_is_written_through_not_replaced(run_dir, tmp_path):
    """``out.sarif -> /proc/self/fd/1``: the report goes down the CLI's own stdout (a pipe here), and the link stays."""
    link = tmp_path / "out.sarif"
    link.symlink_to("/proc/self/fd/1")  # resolved by the CLI process: a subprocess, so never this test's stdout
    result = subprocess.run(
        [sys.executable, "-m", "trainproof", "epoch", "run", "--sarif", "out.sarif"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,  # stdout is a pipe the link leads into
    )
    assert result.returncode == 1, result.stderr
    assert link.is_symlink()
    assert os.readlink(link) == "/proc/self/fd/1"
    assert '"version": "2.1.0"' in result.stdout
    assert "TP-DIVERGE" in result.stdout
