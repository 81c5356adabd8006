import pytest

from tests.helpers import hf_entries, write_hf_state
from trainproof.io.errors import InputError
from trainproof.runs.readers import read_run

LFS = "version https://git-lfs.github.com/spec/v1\noid sha256:" + "ab" * 32 + "\nsize 58011\n"


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"", "empty"),
        (b"   \n\n", "empty"),
        (LFS.encode(), "Git LFS pointer .* 58,011 bytes.*git lfs pull"),
        (b"\x00\x01\x02binary", "binary"),
        (b"hello there\nnot a log\n", "not a training log format"),
    ],
)
def test_unreadable_inputs_say_what_they_are(tmp_path, content, match):
    path = tmp_path / "trainer_state.json.bin"
    path.write_bytes(content)
    with pytest.raises(InputError, match=match):
        read_run(path)


def test_missing_path(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        read_run(tmp_path / "nope.json")


def test_directory_resolves_to_its_log(tmp_path):
    write_hf_state(tmp_path / "trainer_state.json", hf_entries([1.0, 0.9]))
    assert read_run(tmp_path).path.endswith("trainer_state.json")


def test_directory_of_checkpoints_uses_the_latest(tmp_path):
    for step in (100, 1000, 200):
        (tmp_path / f"checkpoint-{step}").mkdir()
        write_hf_state(tmp_path / f"checkpoint-{step}" / "trainer_state.json", hf_entries([1.0] * 2, every=step // 2))
    assert "checkpoint-1000" in read_run(tmp_path).path


def test_directory_without_a_log(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(InputError, match="no training log"):
        read_run(tmp_path)


def test_format_override_and_unknown_format(tmp_path):
    path = tmp_path / "run.log"
    path.write_text("step,loss\n1,2.0\n2,1.0\n")
    assert read_run(path, "csv").format == "csv"
    with pytest.raises(InputError, match="unknown format"):
        read_run(path, "xml")


def test_findings_point_at_the_line_of_their_step(tmp_path):
    from trainproof.commands import judge_epoch

    loss = [1.4, 3.3, 24.2, 26.4, 20.1] + [8.0 - 0.01 * i for i in range(55)]
    path = write_hf_state(tmp_path / "trainer_state.json", hf_entries(loss))
    finding = judge_epoch([path]).subjects[0].findings[0]
    assert finding.rule_id == "TP-DIVERGE"
    line = path.read_text().splitlines()[finding.line - 1]
    assert f'"step": {finding.steps[0]}' in line


def test_every_tabular_reader_records_lines(tmp_path):
    jsonl = tmp_path / "log.jsonl"
    jsonl.write_text('{"step": 1, "loss": 2.0}\n\n{"step": 2, "loss": 1.9}\n')
    assert read_run(jsonl).step_lines == {1: 1, 2: 3}
    csv = tmp_path / "metrics.csv"
    csv.write_text("step,loss\n1,2.0\n2,1.9\n")
    assert read_run(csv).step_lines == {1: 2, 2: 3}
