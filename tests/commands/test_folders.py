"""Folders of runs (issue 11): each run under a folder judged as its own subject, compare pairing runs by relative path.

Every tree is built from real logs: the gallery's trainer_state.json files,
the TensorBoard event files torch's SummaryWriter wrote for tests/data, and
CSV, JSONL and MLflow files written the way their loggers write them.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from pathlib import Path

import pytest

from tests.helpers import CORPUS, REPO, decaying, noisy
from trainproof.cli import main
from trainproof.commands import judge_compare, judge_epoch
from trainproof.io.errors import InputError
from trainproof.report import Verdict
from trainproof.runs.readers.discover import MAX_DEPTH, MAX_RUNS, find_runs

GALLERY = REPO / "examples" / "gallery"
HEALTHY = GALLERY / "healthy" / "seed0" / "trainer_state.json"
HOT = GALLERY / "lr_hot" / "seed0" / "trainer_state.json"  # FAILs TP-DIVERGE
EVENTS = REPO / "tests" / "data" / "tensorboard"  # hf_style learns; keras_style diverges half-way
RUN_ID = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"


def _curve(seed: int) -> list[float]:
    return noisy(decaying(60, 2.0, 0.6), 0.02, seed).tolist()


def lightning_csv(folder: Path, seed: int) -> None:
    """A Lightning CSVLogger version folder: metrics.csv with sparse train/val rows, and hparams.yaml."""
    folder.mkdir(parents=True)
    rows = ["epoch,step,train_loss_step,val_loss"]
    for i, loss in enumerate(_curve(seed)):
        rows.append(f"0,{(i + 1) * 10},{loss:.6f},")
        if (i + 1) % 20 == 0:
            rows.append(f"0,{(i + 1) * 10},,{loss + 0.05:.6f}")
    (folder / "metrics.csv").write_text("\n".join(rows) + "\n")
    (folder / "hparams.yaml").write_text("lr: 0.001\n")


def keras_csv(folder: Path) -> None:
    folder.mkdir(parents=True)
    rows = ["epoch,loss,val_loss"] + [f"{e},{1.2 * math.exp(-e / 4) + 0.3:.6f},{1.3 * math.exp(-e / 4) + 0.35:.6f}" for e in range(30)]
    (folder / "training_log.csv").write_text("\n".join(rows) + "\n")


def hf_output(folder: Path, latest: Path) -> None:
    """An HF output folder: two checkpoints (the latest one is the run's log) and the Trainer's TensorBoard events."""
    for step, state in ((10, HEALTHY), (20, latest)):
        (folder / f"checkpoint-{step}").mkdir(parents=True)
        shutil.copy(state, folder / f"checkpoint-{step}" / "trainer_state.json")
    shutil.copytree(EVENTS / "hf_style", folder / "runs" / "Mar01_12-00-00_host")


def mlflow_run(experiment: Path, seed: int) -> Path:
    """An MLflow file-store run: metrics/<key> of '<timestamp ms> <value> <step>' lines, params/, meta.yaml."""
    run = experiment / RUN_ID
    (run / "metrics").mkdir(parents=True)
    (run / "params").mkdir()
    (run / "params" / "lr").write_text("0.001")
    (run / "meta.yaml").write_text(f"run_id: {RUN_ID}\nexperiment_id: '0'\nstatus: 3\n")
    (experiment / "meta.yaml").write_text("experiment_id: '0'\nname: Default\n")
    (run / "metrics" / "loss").write_text("".join(f"{1_700_000_000_000 + 1000 * i} {v} {10 * i}\n" for i, v in enumerate(_curve(seed))))
    return run


def build_tree(root: Path, *, fail: bool = False, broken: bool = False) -> Path:
    """A downloaded-artifact-like tree of six runs that PASS; ``fail`` makes two FAIL, ``broken`` adds a malformed log."""
    lightning_csv(root / "lightning_logs" / "version_0", 1)
    lightning_csv(root / "lightning_logs" / "version_1", 2)
    keras_csv(root / "keras")
    hf_output(root / "hf_out", HOT if fail else GALLERY / "healthy" / "seed1" / "trainer_state.json")
    shutil.copytree(EVENTS / "hf_style", root / "tensorboard" / "hf")
    mlflow_run(root / "mlruns" / "0", 5)
    if fail:
        shutil.copytree(EVENTS / "keras_style", root / "tensorboard" / "keras")  # train/ and validation/: one run
    if broken:
        (root / "broken").mkdir()
        (root / "broken" / "trainer_state.json").write_text('{"log_history": [{"loss": 1.0, "step": 5}, {"loss"')
    return root


RUNS = ["hf_out", "keras", "lightning_logs/version_0", "lightning_logs/version_1", f"mlruns/0/{RUN_ID}", "tensorboard/hf"]


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def runs_table(out: str, folder: Path | str) -> list[list[str]]:
    """The rows of the table of runs the text report ends with, split on runs of spaces."""
    head = f"Runs in {folder}: "
    assert head in out, out
    block = out.rsplit(head, 1)[1].splitlines()
    start = next(i for i, line in enumerate(block) if line.startswith("verdict "))
    return [re.split(r"\s{2,}", line) for line in block[start + 1 :]]


# ---------------------------------------------------------------------------
# Finding the runs
# ---------------------------------------------------------------------------


def test_each_run_of_a_tree_is_one_subject(tmp_path):
    tree = build_tree(tmp_path / "artifact", fail=True)
    report = judge_epoch([tree])
    expected = sorted(RUNS + ["tensorboard/keras"])
    assert [s.relative for s in report.subjects] == expected
    assert {s.folder for s in report.subjects} == {str(tree)}
    logs = {s.relative: Path(s.path).relative_to(tree).as_posix() for s in report.subjects}
    assert logs["hf_out"] == "hf_out/checkpoint-20/trainer_state.json"  # the latest checkpoint; the others and runs/ belong to the run
    assert logs["lightning_logs/version_1"] == "lightning_logs/version_1/metrics.csv"
    assert logs["keras"] == "keras/training_log.csv"
    assert logs[f"mlruns/0/{RUN_ID}"] == f"mlruns/0/{RUN_ID}/metrics/loss"
    assert logs["tensorboard/hf"].startswith("tensorboard/hf/events.out.tfevents.")
    assert logs["tensorboard/keras"].startswith("tensorboard/keras/train/events.out.tfevents.")
    keras = next(s for s in report.subjects if s.relative == "tensorboard/keras")
    assert keras.summary["eval_sets"] == "eval_loss"  # validation/ was read with train/, as one run
    assert [f.path for f in report.folders] == [str(tree)]
    assert report.folders[0].depth == MAX_DEPTH
    assert report.folders[0].not_searched == ()


@pytest.mark.parametrize("command", ["epoch", "compare"])
def test_a_folder_given_on_the_command_line_is_searched_once(capsys, monkeypatch, tmp_path, command):
    import trainproof.commands.epoch

    tree = build_tree(tmp_path / "artifact")
    searched: list[Path] = []

    def counted(path, *args, **kwargs):
        searched.append(Path(path))
        return find_runs(path, *args, **kwargs)

    monkeypatch.setattr(trainproof.commands.epoch, "find_runs", counted)
    paths = [tree] if command == "epoch" else [tree, tree]
    code, out, _ = run_cli(capsys, command, *paths, "--json-file", tmp_path / "r.json")
    assert code in (0, 1), out
    assert searched == [tree]  # the files it reads (kept from the outputs) and the runs it judges are one search
    assert len(json.loads((tmp_path / "r.json").read_text())["subjects"]) == len(RUNS) * (1 if command == "epoch" else 2)
    searched.clear()
    judge_epoch([tree])
    judge_epoch([tree])
    assert searched == [tree, tree]  # outside one invocation (the library, watch) every look searches afresh


def test_find_runs_takes_jsonl_and_csv_logs_by_content_and_skips_what_is_no_run(tmp_path):
    (tmp_path / "sweep").mkdir()
    (tmp_path / "sweep" / "lr_3e-4.jsonl").write_text("".join(json.dumps({"step": 10 * i, "loss": v}) + "\n" for i, v in enumerate(_curve(3))))
    (tmp_path / "sweep" / "lr_1e-3.tsv").write_text("step\tloss\n10\t2.0\n20\t1.5\n")
    (tmp_path / "sweep" / "predictions.csv").write_text("id,label\n1,cat\n")  # a CSV, but no log
    (tmp_path / "sweep" / "notes.txt").write_text("step,loss\n")
    for skipped in (".git", ".hidden/run", "__pycache__", "node_modules/pkg", "venv/lib/run"):
        (tmp_path / skipped).mkdir(parents=True, exist_ok=True)
        (tmp_path / skipped / "metrics.csv").write_text("step,loss\n1,2\n")
    (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    lightning_csv(tmp_path / "lightning_logs" / "version_10", 1)
    lightning_csv(tmp_path / "lightning_logs" / "version_2", 2)
    os.symlink(tmp_path / "lightning_logs", tmp_path / "latest")  # a symlinked folder: not followed, no run found twice
    os.symlink("..", tmp_path / "sweep" / "up")  # a loop
    search = find_runs(tmp_path)
    assert [found.relative for found in search.runs] == [
        "lightning_logs/version_2", "lightning_logs/version_10", "sweep/lr_1e-3.tsv", "sweep/lr_3e-4.jsonl",
    ]  # fmt: skip
    assert search.runs[0].path == tmp_path / "lightning_logs" / "version_2"


def tts_project(root: Path) -> Path:
    """A TTS fine-tune's project folder: its Lightning run, the samples its trainer dumped (an index with a
    ``global_step`` column), its dataset's metadata and fine-tuning text, and a table of past runs kept by hand."""
    lightning_csv(root / "lightning_logs" / "version_0", 1)
    speakers, lines = ("p225", "p226", "p227"), ("Please call Stella.", "Ask her to bring these things.", "Six spoons of fresh snow peas.")
    index = ["global_step\tspeaker\ttext\taudio"] + [
        f"{step}\t{speaker}\t{text}\tsamples/{step}_{speaker}.wav" for step in (500, 1000, 1500) for speaker, text in zip(speakers, lines)
    ]
    (root / "samples").mkdir()
    (root / "samples" / "index.tsv").write_text("\n".join(index) + "\n")
    (root / "data").mkdir()
    (root / "data" / "metadata.tsv").write_text(
        "id\tspeaker\ttext\tduration_ms\tstep\n" + "".join(f"utt{i:04d}\t{speakers[i % 3]}\t{lines[i % 3]}\t{2100 + 37 * i}\t{i}\n" for i in range(12))
    )  # an id and a whole-number duration beside a step-like column: no measurement
    chat = [{"messages": [{"role": "user", "content": text}, {"role": "assistant", "content": text.upper()}]} for text in lines]
    (root / "data" / "chat.jsonl").write_text("".join(json.dumps(record) + "\n" for record in chat))
    (root / "data" / "prompts.jsonl").write_text("".join(json.dumps({"prompt": text, "completion": text[::-1], "id": i}) + "\n" for i, text in enumerate(lines)))
    (root / "runs.tsv").write_text(  # a table of runs: steps in no order, losses under names no series takes
        "run\tcommit\tglobal_step\tloss_first\tloss_last\n"
        "lr_3e-4\t7901d2c\t215337\t1.9963\t1.7423\nlr_1e-3\t5bfc440\t100000\t2.104\t1.811\nwarmup_0\tf41de97\t6687\t2.2\t1.95\n"
    )
    return root


def test_a_table_or_data_set_with_a_step_like_column_is_no_run_of_a_folder_search(capsys, tmp_path):
    project = tts_project(tmp_path / "project")
    assert [found.relative for found in find_runs(project).runs] == ["lightning_logs/version_0"]
    code, out, err = run_cli(capsys, "epoch", project)
    assert (code, err) == (0, "")  # before: NOT-CHECKED "has no loss column" for each of the five, and exit 2
    assert out.startswith(f"trainproof epoch: PASS  (1 input: 1 PASS)\n\nPASS  {project / 'lightning_logs' / 'version_0' / 'metrics.csv'}\n")
    code, _, err = run_cli(capsys, "epoch", project / "samples" / "index.tsv")  # named, it is read, and says why it cannot be judged
    assert code == 2
    assert err.startswith(f"trainproof: error: {project / 'samples' / 'index.tsv'}: has no loss column (columns: global_step, speaker, text, audio)")


def test_a_log_with_names_of_its_own_is_still_a_run_of_a_folder_search(capsys, tmp_path):
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    curve = _curve(4)
    (sweep / "a.csv").write_text("iteration,nll,tokens\n" + "".join(f"{10 * i},{v:.5f},{4096 * i}\n" for i, v in enumerate(curve)))
    (sweep / "b.jsonl").write_text("".join(json.dumps({"iter": 10 * i, "nll": round(v, 5)}) + "\n" for i, v in enumerate(curve)))
    (sweep / "c.tsv").write_text("epoch\tstep\tphase\tnll\n0\t10\ttrain\t2.0\n0\t20\ttrain\t1.8\n1\t30\ttrain\t1.7\nepoch\tstep\tphase\tnll\n0\t10\ttrain\t2.1\n")
    assert [found.relative for found in find_runs(sweep).runs] == ["a.csv", "b.jsonl", "c.tsv"]  # a repeated header may restart the steps
    code, out, _ = run_cli(capsys, "epoch", sweep / "a.csv", sweep / "b.jsonl", "--map", "loss=nll")
    assert code == 0, out


def test_real_tables_and_fine_tuning_sets_of_the_corpus_are_no_runs_and_its_csv_logs_are():
    public = CORPUS / "public"
    if not public.is_dir():
        pytest.skip("the shared corpus is not on this machine")
    runs = [found.relative for found in find_runs(public).runs]
    assert [r for r in runs if r.endswith("SOURCES.tsv") or r.startswith("datasets/")] == []  # hf/SOURCES.tsv has a global_step column
    logs = sorted(p.relative_to(public).as_posix() for folder in ("keras", "lightning") for p in (public / folder).glob("*.csv"))
    assert len(logs) == 9
    assert [r for r in runs if r.endswith(".csv")] == logs


# ---------------------------------------------------------------------------
# JSON files that look like logs: named, not read
# ---------------------------------------------------------------------------


def exported(folder: Path) -> Path:
    """A folder of what a user exported by hand: a trainer state under another name, a history as a JSON array, and
    JSON that is no log (a model's config, the Trainer's train_results.json summary, a clip manifest)."""
    folder.mkdir(parents=True)
    shutil.copy(HEALTHY, folder / "healthy_seed0.json")
    (folder / "history.json").write_text(json.dumps([{"step": 10 * i, "loss": round(v, 5)} for i, v in enumerate(_curve(5))], indent=1))
    (folder / "config.json").write_text(json.dumps({"architectures": ["GPT2LMHeadModel"], "n_embd": 64, "n_layer": 2, "vocab_size": 512}, indent=2))
    (folder / "train_results.json").write_text(json.dumps({"epoch": 3.0, "total_flos": 1.2e12, "train_loss": 0.87, "train_runtime": 41.2}, indent=4))
    (folder / "manifest.json").write_text("".join(json.dumps({"audio_filepath": f"wavs/{i}.wav", "duration": 1.5 + i, "text": "yes"}) + "\n" for i in range(3)))
    return folder


def test_json_logs_a_folder_search_does_not_read_are_named_with_how_to_judge_them(capsys, tmp_path):
    tree = tmp_path / "tree"
    lightning_csv(tree / "lightning_logs" / "version_0", 1)
    keras_csv(tree / "keras")
    exported(tree / "exported")
    code, out, _ = run_cli(capsys, "epoch", tree)
    assert code == 0
    note = (
        "note: 2 JSON files (exported/healthy_seed0.json, exported/history.json) look like training logs, which a folder search does not read "
        "(it reads an HF log by its name, trainer_state.json): name one to judge it, with --format hf or --format jsonl\n"
    )
    assert note in out.split(f"Runs in {tree}: 2 ", 1)[1]
    search = find_runs(tree)
    assert [found.relative for found in search.runs] == ["keras", "lightning_logs/version_0"]
    assert search.unread == ("exported/healthy_seed0.json", "exported/history.json")
    assert search.unread_formats == ("hf", "jsonl")
    code, out, _ = run_cli(capsys, "epoch", tree, "--json")
    assert json.loads(out)["folders"][0]["unread"] == ["exported/healthy_seed0.json", "exported/history.json"]
    for name, fmt in (("healthy_seed0.json", "hf"), ("history.json", "jsonl")):
        assert run_cli(capsys, "epoch", tree / "exported" / name, "--format", fmt)[0] == 0  # as the note says


def test_one_run_beside_a_json_log_keeps_the_folder_report_that_names_it(capsys, tmp_path):
    keras_csv(tmp_path / "keras")
    shutil.copy(HOT, tmp_path / "lr_hot.json")
    code, out, _ = run_cli(capsys, "epoch", tmp_path)
    assert code == 0
    assert f"Runs in {tmp_path}: 1 " in out
    assert "note: 1 JSON file (lr_hot.json) looks like a training log, which a folder search does not read (it reads an HF log by its name, trainer_state.json): name it to judge it, with --format hf\n" in out


def test_a_folder_of_json_logs_alone_says_so_in_its_one_error_line(capsys, tmp_path):
    exported(tmp_path / "exported")
    shutil.copy(GALLERY / "healthy" / "seed1" / "trainer_state.json", tmp_path / "exported" / "a\n::warning::x.json")
    (tmp_path / "exported" / "runs.tsv").write_text("run\tglobal_step\tloss_last\nb\t300\t1.2\na\t200\t1.3\n")  # no run: not read as the folder's one log
    code, out, err = run_cli(capsys, "epoch", tmp_path / "exported")
    assert code == 2
    assert err.count("\n") == 1
    assert err.startswith(
        f"trainproof: error: {tmp_path / 'exported'}: holds no run a folder search takes; 3 JSON files (a\\n::warning::x.json, healthy_seed0.json, history.json) look like training logs"
    )
    assert err.endswith("name one to judge it, with --format hf or --format jsonl\n")
    assert not [line for line in (out + err).splitlines() if line.lstrip().startswith("::")]


def test_config_and_summary_json_alone_leave_a_folder_read_as_before(capsys, tmp_path):
    folder = exported(tmp_path / "exported")
    (folder / "healthy_seed0.json").unlink()
    (folder / "history.json").unlink()
    assert find_runs(folder).unread == ()
    code, _, err = run_cli(capsys, "epoch", folder)
    assert code == 2
    assert "is a directory with no training log in it" in err


def test_at_most_json_looks_json_files_are_opened(monkeypatch, tmp_path):
    import trainproof.runs.readers.discover as discover

    for i in range(3):
        shutil.copy(HEALTHY, tmp_path / f"state_{i}.json")
    monkeypatch.setattr(discover, "JSON_LOOKS", 2)
    assert find_runs(tmp_path).unread == ("state_0.json", "state_1.json")


def test_tensorboard_and_mlflow_run_folders_are_counted_once(tmp_path):
    hf = tmp_path / "runs" / "May01_host"
    shutil.copytree(EVENTS / "hf_style", hf)
    (source,) = (EVENTS / "hf_style").glob("events.out.tfevents.*")
    shutil.copy(source, hf / "events.out.tfevents.1796044999.vm.12243.1")  # the HF Trainer writes several files in one folder
    shutil.copytree(EVENTS / "hf_style", hf / "1796044072.123")  # and an hparams folder inside it
    shutil.copytree(EVENTS / "keras_style", tmp_path / "logs" / "fit" / "20240101-120000")
    run = mlflow_run(tmp_path / "mlruns" / "0", 1)
    (run / "artifacts" / "tb").mkdir(parents=True)
    shutil.copy(source, run / "artifacts" / "tb")  # an MLflow run's artifacts belong to it
    empty = tmp_path / "mlruns" / "0" / ("f" * 32)
    (empty / "metrics").mkdir(parents=True)
    (empty / "meta.yaml").write_text("status: 1\n")  # a run that has not logged yet is still a run (judging it says so)
    assert [found.relative for found in find_runs(tmp_path).runs] == [
        "logs/fit/20240101-120000", f"mlruns/0/{RUN_ID}", "mlruns/0/" + "f" * 32, "runs/May01_host",
    ]  # fmt: skip


# ---------------------------------------------------------------------------
# Judging them: outcomes, exit code, the table
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("fail", "broken", "code"), [(False, False, 0), (False, True, 2), (True, False, 1), (True, True, 1)])
def test_the_exit_code_is_the_worst_outcome(capsys, tmp_path, fail, broken, code):
    tree = build_tree(tmp_path / "tree", fail=fail, broken=broken)
    assert run_cli(capsys, "epoch", tree)[0] == code


def test_a_malformed_log_among_the_runs_is_reported_with_its_reason_and_costs_only_itself(capsys, tmp_path):
    tree = build_tree(tmp_path / "tree", broken=True)
    code, out, err = run_cli(capsys, "epoch", tree, "--json")
    assert code == 2
    subjects = {s["relative"]: s for s in json.loads(out)["subjects"]}
    assert sorted(subjects) == sorted(RUNS + ["broken"])
    assert subjects["broken"]["verdict"] == "NOT-CHECKED"
    assert "truncated" in subjects["broken"]["error"]
    assert all(s["verdict"] == "PASS" for name, s in subjects.items() if name != "broken")
    lines = err.splitlines()
    assert len(lines) == 1
    assert "Traceback" not in err
    assert lines[0].startswith(f"trainproof: error: {tree / 'broken' / 'trainer_state.json'}: ")
    assert "truncated" in lines[0]


def test_the_text_report_ends_with_a_line_per_run(capsys, tmp_path):
    tree = build_tree(tmp_path / "tree", fail=True, broken=True)
    code, out, _ = run_cli(capsys, "epoch", tree)
    assert code == 1
    assert out.startswith("trainproof epoch: FAIL  (8 inputs: 5 PASS, 2 FAIL, 1 NOT-CHECKED)")
    assert f"\nRuns in {tree}: 8 (searched {MAX_DEPTH} folder levels down)\nverdict      FAIL  WARN  run" in out
    rows = runs_table(out, tree)
    assert [row[3] for row in rows] == sorted(RUNS + ["broken", "tensorboard/keras"])
    by_run = {row[3]: row for row in rows}
    assert by_run["hf_out"][:3] == ["FAIL", "1", "0"]
    assert by_run["tensorboard/keras"][:3] == ["FAIL", "1", "0"]
    assert by_run["keras"][:3] == ["PASS", "0", "0"]
    assert by_run["broken"][:3] == ["NOT-CHECKED", "0", "0"]
    assert "truncated" in by_run["broken"][4]  # the reader's one-line reason
    assert out.endswith("\nFAIL         1     0     tensorboard/keras\n")  # the table is the last thing printed


def test_every_output_carries_each_run_as_its_own_subject(capsys, tmp_path):
    tree = build_tree(tmp_path / "tree", fail=True)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    code, _, _ = run_cli(
        capsys, "epoch", tree, "--json-file", out_dir / "r.json", "--junit", out_dir / "r.xml", "--sarif", out_dir / "r.sarif",
        "--markdown", out_dir / "r.md", "--html", out_dir / "r.html",
    )  # fmt: skip
    assert code == 1
    document = json.loads((out_dir / "r.json").read_text())
    assert len(document["subjects"]) == 7
    assert document["folders"] == [{"path": str(tree), "depth": MAX_DEPTH, "not_searched": [], "unread": []}]
    assert (out_dir / "r.xml").read_text().count("<testsuite ") == 7
    sarif = json.loads((out_dir / "r.sarif").read_text())
    located = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in sarif["runs"][0]["results"]}
    assert any(uri.endswith("hf_out/checkpoint-20/trainer_state.json") for uri in located)
    assert any("tensorboard/keras/train/events.out.tfevents." in uri for uri in located)
    markdown = (out_dir / "r.md").read_text()
    assert "lightning\\_logs/version\\_1/metrics.csv" in markdown


def test_an_output_over_a_log_inside_the_tree_is_refused(capsys, tmp_path):
    tree = build_tree(tmp_path / "tree")
    target = tree / "lightning_logs" / "version_1" / "metrics.csv"
    before = target.read_bytes()
    code, _, err = run_cli(capsys, "epoch", tree, "--json-file", target)
    assert code == 2
    assert "is read as an input; refusing to overwrite it" in err
    assert target.read_bytes() == before


# ---------------------------------------------------------------------------
# A folder that is one run stays as it was
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("folder", ["tests/data/healthy", "tests/data/tensorboard/keras_style", "tests/data/tensorboard/hf_style"])
def test_a_run_folder_is_one_subject_as_before(capsys, folder):
    report = judge_epoch([REPO / folder])
    (subject,) = report.subjects
    assert subject.folder is None
    assert subject.relative is None
    assert report.folders == ()
    (log,) = judge_epoch([Path(subject.path)]).subjects if (REPO / folder / "trainer_state.json").is_file() else (subject,)
    assert subject.path == log.path
    code, out, _ = run_cli(capsys, "epoch", REPO / folder)
    assert "Runs in " not in out
    assert out.count("\nPASS  ") + out.count("\nFAIL  ") == 1


def test_an_hf_output_folder_and_an_mlflow_run_folder_are_one_subject_each(tmp_path):
    hf_output(tmp_path / "out", HOT)
    (subject,) = judge_epoch([tmp_path / "out"]).subjects
    assert subject.path == str(tmp_path / "out" / "checkpoint-20" / "trainer_state.json")
    assert subject.verdict is Verdict.FAIL
    assert subject.folder is None
    run = mlflow_run(tmp_path / "mlruns" / "0", 2)
    (subject,) = judge_epoch([run]).subjects
    assert subject.path == str(run / "metrics" / "loss")
    assert subject.folder is None


def test_a_folder_holding_one_run_further_down_is_that_run(tmp_path):
    lightning_csv(tmp_path / "lightning_logs" / "version_0", 1)
    report = judge_epoch([tmp_path])
    (subject,) = report.subjects
    assert subject.path == str(tmp_path / "lightning_logs" / "version_0" / "metrics.csv")
    assert subject.verdict is Verdict.PASS
    assert report.folders == ()


# ---------------------------------------------------------------------------
# Bounds: depth, number of runs
# ---------------------------------------------------------------------------


def test_runs_deeper_than_the_depth_limit_are_not_searched_and_the_report_says_so(capsys, tmp_path):
    at_limit = tmp_path / Path(*[f"d{i}" for i in range(1, MAX_DEPTH + 1)])  # MAX_DEPTH levels down: searched
    lightning_csv(at_limit / "version_0", 1)  # ... but this is one level deeper
    lightning_csv(at_limit.parent / "version_0", 2)  # MAX_DEPTH levels down
    keras_csv(tmp_path / "keras")
    search = find_runs(tmp_path)
    relative_limit = at_limit.relative_to(tmp_path).as_posix()
    assert [found.relative for found in search.runs] == ["d1/d2/d3/d4/d5/version_0", "keras"]
    assert search.not_searched == (relative_limit,)
    code, out, _ = run_cli(capsys, "epoch", tmp_path)
    assert code == 0
    assert f"note: what lies below 1 folder at that depth was not searched ({relative_limit}): name a deeper folder" in out
    assert [row[3] for row in runs_table(out, tmp_path)] == ["d1/d2/d3/d4/d5/version_0", "keras"]
    assert [found.relative for found in find_runs(at_limit.parent).runs] == ["d6/version_0", "version_0"]  # named deeper, found


def test_a_folder_of_more_runs_than_the_cap_is_refused_with_one_line(capsys, tmp_path):
    for i in range(MAX_RUNS + 1):
        (tmp_path / "sweep" / f"trial_{i}").mkdir(parents=True)
        (tmp_path / "sweep" / f"trial_{i}" / "metrics.csv").write_text("step,loss\n1,2.0\n")
    code, out, err = run_cli(capsys, "epoch", tmp_path / "sweep", HEALTHY)
    assert code == 2
    assert err == f"trainproof: error: {tmp_path / 'sweep'}: holds more than {MAX_RUNS:,} runs (the most one folder may hold): name a narrower folder, or several\n"
    assert "PASS  " + str(HEALTHY) in out  # the other input is still judged
    with pytest.raises(InputError, match="holds more than 3 runs"):
        find_runs(tmp_path / "sweep", max_runs=3)


# ---------------------------------------------------------------------------
# compare: runs paired by relative path
# ---------------------------------------------------------------------------


def _gallery_folder(root: Path, runs: dict[str, Path]) -> Path:
    for relative, state in runs.items():
        (root / relative).mkdir(parents=True)
        shutil.copy(state, root / relative / "trainer_state.json")
    return root


def test_compare_pairs_the_runs_of_two_folders_by_relative_path(capsys, tmp_path):
    base = _gallery_folder(
        tmp_path / "base",
        {"lr_1e-4/seed0": GALLERY / "healthy/seed0/trainer_state.json", "lr_1e-4/seed1": GALLERY / "healthy/seed1/trainer_state.json", "lr_3e-4": GALLERY / "healthy/seed2/trainer_state.json"},
    )
    new = _gallery_folder(
        tmp_path / "new",
        {"lr_1e-4/seed0": GALLERY / "healthy/seed1/trainer_state.json", "lr_1e-4/seed1": HOT, "lr_1e-3": GALLERY / "healthy/seed2/trainer_state.json"},
    )
    report = judge_compare([new], base)
    judged = {s.relative: s for s in report.judged}
    assert sorted(judged) == ["lr_1e-3", "lr_1e-4/seed0", "lr_1e-4/seed1", "lr_3e-4"]
    assert judged["lr_1e-4/seed0"].baseline == str(base / "lr_1e-4" / "seed0" / "trainer_state.json")
    assert judged["lr_1e-4/seed0"].verdict is Verdict.PASS
    assert judged["lr_1e-4/seed1"].baseline == str(base / "lr_1e-4" / "seed1" / "trainer_state.json")
    assert judged["lr_1e-4/seed1"].verdict is Verdict.FAIL
    assert judged["lr_1e-3"].verdict is Verdict.NOT_CHECKED
    assert judged["lr_1e-3"].unjudged == f"has no counterpart at the same path in the baseline folder {base}"
    assert judged["lr_3e-4"].verdict is Verdict.NOT_CHECKED
    assert judged["lr_3e-4"].path == str(new / "lr_3e-4")
    assert judged["lr_3e-4"].unjudged == f"has no run, while the baseline folder has one at {base / 'lr_3e-4'}"
    baselines = [s for s in report.subjects if s.role == "baseline"]
    assert [s.relative for s in baselines] == ["lr_1e-4/seed0", "lr_1e-4/seed1", "lr_3e-4"]
    code, out, err = run_cli(capsys, "compare", new, base)
    assert code == 1  # a FAIL outranks the runs with no counterpart
    assert f"baselines: 3 runs in {base}, each compared with the run at its own path  [3 PASS]" in out
    assert [row[:4] for row in runs_table(out, new)] == [
        ["NOT-CHECKED", "0", "0", "lr_1e-3"], ["PASS", "0", "0", "lr_1e-4/seed0"], ["FAIL", "3", "2", "lr_1e-4/seed1"], ["NOT-CHECKED", "0", "0", "lr_3e-4"],
    ]  # fmt: skip
    assert len(err.splitlines()) == 2
    assert "lr_1e-3: has no counterpart" in err
    assert "lr_3e-4: has no run" in err


def test_compare_with_only_missing_counterparts_exits_2(capsys, tmp_path):
    base = _gallery_folder(tmp_path / "base", {"a": HEALTHY, "b": HEALTHY})
    new = _gallery_folder(tmp_path / "new", {"a": GALLERY / "healthy/seed1/trainer_state.json"})
    code, out, _ = run_cli(capsys, "compare", new, base)
    assert code == 2
    assert [row[:4] for row in runs_table(out, new)] == [["PASS", "0", "0", "a"], ["NOT-CHECKED", "0", "0", "b"]]


def test_compare_a_folder_of_runs_with_one_baseline_compares_each_with_it(tmp_path):
    new = _gallery_folder(tmp_path / "new", {"a": GALLERY / "healthy/seed1/trainer_state.json", "b": HOT})
    report = judge_compare([new], HEALTHY)
    assert [(s.relative, s.baseline, s.verdict) for s in report.judged] == [("a", str(HEALTHY), Verdict.PASS), ("b", str(HEALTHY), Verdict.FAIL)]


def test_compare_one_run_with_a_baseline_folder_of_runs_says_it_cannot_pair_them(capsys, tmp_path):
    base = _gallery_folder(tmp_path / "base", {"a": HEALTHY, "b": HEALTHY})
    code, _, err = run_cli(capsys, "compare", HOT, base)
    assert code == 2
    assert err == f"trainproof: error: {HOT}: cannot be paired with the runs of the baseline folder {base}: name a folder of runs\n"


# ---------------------------------------------------------------------------
# File names are the user's text
# ---------------------------------------------------------------------------


def test_hostile_folder_names_cannot_forge_a_line(capsys, tmp_path):
    tree = tmp_path / "tree"
    for name in ("::error::forged", "a\n::warning::x", "b\r\x1b[2Jc", "d\u202ee"):
        lightning_csv(tree / name, 1)
    (tree / "::notice::bad.jsonl").write_text('{"step": 1, "loss": 1.0}\n{"step"\n')
    code, out, err = run_cli(capsys, "epoch", tree)
    assert code == 2
    for text in (out, err):
        assert "\r" not in text
        assert "\x1b" not in text
        assert "\u202e" not in text
        assert not [line for line in text.splitlines() if line.lstrip().startswith("::")]
    rows = runs_table(out, tree)
    assert sorted(row[3] for row in rows) == sorted(["::error::forged", "a\\n::warning::x", "b\\r\\x1b[2Jc", "d\\u202ee", "::notice::bad.jsonl"])


# ---------------------------------------------------------------------------
# The README's example
# ---------------------------------------------------------------------------


def test_the_folder_example_in_the_readme_is_how_trainproof_ends(capsys, monkeypatch):
    readme = (REPO / "README.md").read_text()
    shown = readme.split("$ trainproof epoch examples/gallery\n...\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(REPO)
    code, out, err = run_cli(capsys, "epoch", "examples/gallery")
    assert out.endswith("\n" + shown)
    assert code == 1
    assert err == ""
    assert f"searched {MAX_DEPTH} folder levels" in shown
    assert f"goes {MAX_DEPTH} folder levels below" in readme
    assert f"more than {MAX_RUNS:,} runs" in readme
