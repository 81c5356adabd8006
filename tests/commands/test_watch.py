"""`trainproof watch`: following a growing log, through the library and the real command."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.helpers import REPO
from trainproof.commands.watch import Watcher
from trainproof.runs.follow import Follower

TICK = re.compile(r"^\d\d:\d\d:\d\d  [\d,]+ loss points  (PASS|WARN|FAIL|NOT-CHECKED)", re.M)


def record(step: int, loss: float) -> str:
    return json.dumps({"step": step, "loss": loss, "learning_rate": 1e-4, "grad_norm": 0.5}) + "\n"


def healthy(n: int, start: int = 1) -> str:
    return "".join(record(s, 2.0 * 0.98**s + 0.5) for s in range(start, start + n))


def watch(*args: str, **kwargs):
    return subprocess.Popen(
        [sys.executable, "-m", "trainproof", "watch", *args], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs
    )


def test_follower_reads_only_what_was_appended(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text(healthy(1000))
    follower = Follower(path)
    first = follower.poll()
    assert len(first.lines) == 1000
    assert first.first_line == 1
    before = follower.offset
    extra = healthy(100, start=1001)
    with path.open("a") as handle:
        handle.write(extra)
    chunk = follower.poll()
    assert follower.offset - before == len(extra.encode()), "only the new bytes were read"
    assert len(chunk.lines) == 100
    assert chunk.first_line == 1001
    assert follower.poll().lines == ()


def test_a_partial_last_line_waits_for_its_end(tmp_path):
    path = tmp_path / "log.jsonl"
    line = record(1, 2.0)
    path.write_text(line[:10])
    follower = Follower(path)
    assert follower.poll().lines == ()
    with path.open("a") as handle:
        handle.write(line[10:])
    assert follower.poll().lines == (line.rstrip("\n"),)


def test_truncated_and_replaced_files_are_read_afresh(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text(healthy(50))
    watcher = Watcher(path)
    assert watcher.tick().points == 50
    path.write_text(healthy(5))  # truncated in place
    tick = watcher.tick()
    assert tick.restarted
    assert tick.points == 5
    replacement = tmp_path / "new.jsonl"
    replacement.write_text(healthy(20))
    os.replace(replacement, path)  # a new inode at the same path
    tick = watcher.tick()
    assert tick.restarted
    assert tick.points == 20


def test_judging_is_amortised_while_a_log_grows(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text("")
    watcher = Watcher(path)
    step = 1
    for _ in range(200):
        with path.open("a") as handle:
            handle.write(healthy(50, start=step))
        step += 50
        watcher.tick()
    assert watcher.points == 10_000
    assert watcher.live.judgements <= 80  # geometric schedule, not one judgement per tick


def test_a_trainer_state_json_is_reread_when_rewritten(tmp_path):
    path = tmp_path / "trainer_state.json"
    entries = [{"loss": 2.0 * 0.98**i + 0.5, "step": i, "learning_rate": 1e-4} for i in range(1, 30)]
    path.write_text(json.dumps({"log_history": entries}))
    watcher = Watcher(path)
    assert watcher.tick().points == 29
    entries += [{"loss": 50.0 + i, "step": 30 + i, "learning_rate": 1e-4} for i in range(10)]
    path.write_text(json.dumps({"log_history": entries}))
    tick = watcher.tick()
    assert tick.points == 39
    assert str(tick.verdict) == "FAIL"


def test_watch_until_fail_on_a_growing_log(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text(healthy(10))

    def writer():
        for chunk in range(6):
            time.sleep(0.3)
            with path.open("a") as handle:
                handle.write(healthy(10, start=11 + 10 * chunk))
        with path.open("a") as handle:  # then it blows up
            handle.write("".join(record(s, 40.0 + s) for s in range(71, 120)))

    thread = threading.Thread(target=writer)
    thread.start()
    proc = watch(str(path), "--interval", "0.1", "--until-fail")
    out, err = proc.communicate(timeout=60)
    thread.join()
    assert proc.returncode == 1, out + err
    ticks = TICK.findall(out)
    assert len(ticks) >= 5
    assert ticks[0] == "PASS"
    assert ticks[-1] == "FAIL"
    assert "[FAIL] TP-DIVERGE" in out
    counts = [int(c.replace(",", "")) for c in re.findall(r"  ([\d,]+) loss points", out)]
    assert counts == sorted(counts)
    assert counts[-1] > counts[0]


def test_a_stalled_file_warns_once_per_stall(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text(healthy(30))
    proc = watch(str(path), "--interval", "0.1", "--stall-timeout", "0.3", "--max-ticks", "12")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, out + err
    assert out.count("[WARN] TP-LOG-STALLED") == 1
    assert len(TICK.findall(out)) == 12


@pytest.mark.parametrize(("content", "code"), [(healthy(40), 0), (healthy(5) + "".join(record(s, 40.0 + s) for s in range(6, 40)), 1)])
def test_ctrl_c_exits_with_the_last_verdict(tmp_path, content, code):
    path = tmp_path / "metrics.jsonl"
    path.write_text(content)
    proc = watch(str(path), "--interval", "0.1")
    first = proc.stdout.readline()  # wait for the first tick
    assert TICK.match(first), first
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == code, first + out + err
    assert "Traceback" not in err


def test_missing_file_is_exit_2_with_one_line(tmp_path):
    proc = watch(str(tmp_path / "nope.jsonl"), "--max-ticks", "1")
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert "nope.jsonl: does not exist" in lines[0]


@pytest.mark.parametrize("args", [["--interval", "0"], ["--format", "xml"]])
def test_bad_arguments(tmp_path, args):
    path = tmp_path / "metrics.jsonl"
    path.write_text(healthy(5))
    proc = watch(str(path), *args)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("args", [["--interval", "nan"], ["--interval", "inf"], ["--interval", "-1"], ["--stall-timeout", "nan"], ["--max-ticks", "0"]])
def test_nonsense_intervals_are_usage_errors(tmp_path, args):
    path = tmp_path / "metrics.jsonl"
    path.write_text(healthy(5))
    proc = watch(str(path), "--max-ticks", "1", *args)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2, err
    assert len(err.strip().splitlines()) == 1
    assert "internal error" not in err


def test_a_log_rewritten_in_place_larger_is_read_afresh(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(healthy(50))
    watcher = Watcher(path)
    assert watcher.tick().points == 50
    other = "".join(record(s, 5.0 + (s % 7) / 10) for s in range(1, 81))  # another run, longer, not an append
    with path.open("w") as handle:  # `cat bigger > r.jsonl`: same inode, truncated and rewritten
        handle.write(other)
    tick = watcher.tick()
    assert tick.restarted
    assert tick.points == 80
    run = watcher.parser.build()
    assert run.loss.values[0] == pytest.approx(5.1), "nothing of the first run is left"


def test_a_rewrite_that_lines_up_with_the_old_offset_is_not_merged(tmp_path):
    path = tmp_path / "r.jsonl"
    first = healthy(30)
    path.write_text(first)
    watcher = Watcher(path)
    assert watcher.tick().points == 30
    second = first.replace('"loss": 1.', '"loss": 7.').replace('"loss": 2.', '"loss": 8.')  # another run, byte for byte as long
    assert len(second) == len(first)
    assert second != first
    with path.open("w") as handle:
        handle.write(second + healthy(10, start=31))
    tick = watcher.tick()
    assert tick.restarted
    assert tick.points == 40
    assert watcher.parser.build().loss.values[0] > 7, "the new run, not the old one with the new one's tail"


@pytest.mark.parametrize("name", ["r.jsonl", "trainer_state.json"])
def test_a_log_replaced_by_a_directory_stops_its_old_verdict(tmp_path, name):
    path = tmp_path / name
    if name.endswith(".jsonl"):
        path.write_text(healthy(50))
    else:
        path.write_text(json.dumps({"log_history": [{"step": s, "loss": 2.0 * 0.98**s + 0.5} for s in range(1, 51)]}))
    watcher = Watcher(path)
    assert watcher.tick().verdict.value == "PASS"
    path.unlink()
    path.mkdir()
    tick = watcher.tick()
    assert tick.subject is None
    assert tick.verdict.value == "NOT-CHECKED"
    assert "is a directory" in tick.waiting
    path.rmdir()
    path.write_text(healthy(20))
    assert watcher.tick().points == 20


def test_a_line_without_end_is_an_input_error_not_unbounded_memory(tmp_path):
    from trainproof.io.bounded import MAX_LINE_BYTES
    from trainproof.io.errors import InputError

    path = tmp_path / "r.jsonl"
    path.write_text(healthy(10))
    watcher = Watcher(path)
    watcher.tick()
    with path.open("ab") as handle:
        handle.write(b"\0" * (MAX_LINE_BYTES + 10))
    with pytest.raises(InputError, match="line 11 is longer than 1 MiB"):
        watcher.tick()


def test_a_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    proc = watch(str(fifo), "--max-ticks", "1")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "is not a regular file" in err


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def stall_findings(tick):
    return [f for f in tick.new_findings if f.rule_id == "TP-LOG-STALLED"]


def test_a_stall_is_a_rule_said_once_per_stall_and_cleared_by_growth(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text(healthy(30))
    clock = FakeClock()
    watcher = Watcher(path, stall_timeout=60, clock=clock)
    assert not stall_findings(watcher.tick())
    clock.now = 59
    assert not stall_findings(watcher.tick())
    clock.now = 61
    (finding,) = stall_findings(watcher.tick())
    assert finding.level.name == "WARN"
    assert "has not grown for 1 min after step 30" in finding.message
    assert finding.line == 30, "it points at the last record of the log"
    assert watcher.report.subjects[0].verdict.value == "WARN"
    clock.now = 200
    assert not stall_findings(watcher.tick()), "said once per stall"
    with path.open("a") as handle:
        handle.write(healthy(1, start=31))
    tick = watcher.tick()
    assert not stall_findings(tick)
    assert "TP-LOG-STALLED" not in {f.rule_id for f in tick.subject.findings}, "growth clears it"
    clock.now = 300
    assert stall_findings(watcher.tick()), "the next stall is said again"


def test_a_stall_follows_the_configuration(tmp_path):
    from trainproof.config import DEFAULT_SETTINGS

    path = tmp_path / "metrics.jsonl"
    path.write_text(healthy(30))
    clock = FakeClock()
    ignoring = Watcher(path, settings=DEFAULT_SETTINGS.__class__(ignore=frozenset({"TP-LOG-STALLED"})), stall_timeout=10, clock=clock)
    ignoring.tick()
    clock.now = 11
    tick = ignoring.tick()
    assert not stall_findings(tick)
    assert any(s.rule_id == "TP-LOG-STALLED" and "disabled by configuration" in s.reason for s in tick.subject.skipped)


def test_without_a_stall_timeout_the_rule_says_why_it_did_not_run(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text(healthy(30))
    tick = Watcher(path).tick()
    assert [s.reason for s in tick.subject.skipped if s.rule_id == "TP-LOG-STALLED"] == ["no --stall-timeout was given"]


def test_a_run_restarted_in_the_log_it_appends_to_is_judged_afresh(tmp_path):
    """A diverged run, then the same script restarted from step 1 at a sane rate, appending to the same log: the
    verdict is the restarted run's at once, not the diverged one's until the new run outgrows it, and a finding of the
    new run is said again even when the old run had the same."""
    path = tmp_path / "log.jsonl"
    path.write_text("".join(record(s, 2.0 * 1.05**s) for s in range(1, 101)))
    watcher = Watcher(path)
    tick = watcher.tick()
    assert str(tick.verdict) == "FAIL"
    assert [f.rule_id for f in tick.new_findings] == ["TP-DIVERGE"]
    with path.open("a") as handle:
        handle.write(healthy(30))
    tick = watcher.tick()
    assert tick.points == 30
    assert str(tick.verdict) == "PASS", [f.message for f in tick.subject.findings]
    with path.open("a") as handle:
        handle.write("".join(record(s, 2.0 * 1.08**s) for s in range(31, 61)))
    tick = watcher.tick()
    assert str(tick.verdict) == "FAIL"
    assert [f.rule_id for f in tick.new_findings] == ["TP-DIVERGE"]


@pytest.mark.parametrize("error", [FileNotFoundError, PermissionError])
def test_a_log_that_goes_between_the_stat_and_the_open_is_waited_for_not_an_internal_error(tmp_path, monkeypatch, error):
    """Deleted or rotated away after the poll's stat and before its open (or no longer readable): the watch goes on,
    saying so, and reads what comes back, instead of ending on an internal error."""
    import pathlib

    path = tmp_path / "log.jsonl"
    path.write_text(healthy(50))
    watcher = Watcher(path)
    assert watcher.tick().points == 50
    opened = pathlib.Path.open

    def refused(self, *args, **kwargs):
        if self == path:
            raise error(13, "refused", str(self))
        return opened(self, *args, **kwargs)

    with path.open("a") as handle:
        handle.write(healthy(10, start=51))
    monkeypatch.setattr(pathlib.Path, "open", refused)
    tick = watcher.tick()
    assert tick.waiting is not None
    assert ("does not exist" if error is FileNotFoundError else "cannot be read (refused)") in tick.waiting
    monkeypatch.setattr(pathlib.Path, "open", opened)
    assert watcher.tick().points == 60
    # the same race when the format is first told (the poll read the lines, the file went before its head was read):
    # the lines are read again from the start when the file is back, not lost
    fresh = Watcher(path)
    opens = []

    def second_refused(self, *args, **kwargs):
        if self == path:
            opens.append(1)
            if len(opens) == 2:
                raise error(13, "refused", str(self))
        return opened(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "open", second_refused)
    assert fresh.tick().points == 0
    monkeypatch.setattr(pathlib.Path, "open", opened)
    assert fresh.tick().points == 60


def test_a_rule_that_fires_on_two_eval_sets_at_once_is_said_once_naming_both(tmp_path, capsys):
    """Both eval sets turn NaN at step 300: the tick prints one TP-EVAL-NONFINITE block with a line per set (it used to
    print only the first set's finding, and never the second's)."""
    from tests.helpers import two_nan_eval_sets
    from trainproof.cli import main

    state = two_nan_eval_sets(tmp_path / "run")
    assert main(["watch", str(state), "--max-ticks", "1"]) == 1
    out = capsys.readouterr().out
    assert len(re.findall(r"^  \[FAIL\] TP-EVAL-NONFINITE  ", out, re.M)) == 1
    assert "(eval_a_loss) is not a finite number" in out
    assert "(eval_b_loss) is not a finite number" in out
    watcher = Watcher(state)
    assert sorted(f.message.split(")")[0] for f in watcher.tick().new_findings) == ["The eval loss (eval_a_loss", "The eval loss (eval_b_loss"]
    assert watcher.tick().new_findings == ()  # said once
