"""Every reader module satisfies the Reader protocol, line parser included (what ``trainproof watch`` relies on)."""

from __future__ import annotations

import inspect

import pytest

from trainproof.runs.model import Run
from trainproof.runs.readers import READERS
from trainproof.runs.readers.base import Reader, RunBuilder

LINES = {
    "jsonl": ['{"step": 1, "loss": 2.0}', '{"step": 2, "loss": 1.5}'],
    "csv": ["step,loss", "1,2.0", "2,1.5"],
    "coqui": [" --> STEP: 0/10 -- GLOBAL_STEP: 1", "   | > loss: 2.0  (2.0)", " --> STEP: 1/10 -- GLOBAL_STEP: 2", "   | > loss: 1.5  (1.75)"],
    "mlflow": ["1700000000000 2.0 1", "1700000001000 1.5 2"],
}
READ_WHOLE = {"hf", "tensorboard"}


MEMBERS = {
    "name", "description", "line_parser", "sniff", "read",
    "sniff_bytes", "nested_log", "is_run_dir", "run_files", "holds_run", "holds_measurements",
}
FOLDER_MEMBERS = ("nested_log", "is_run_dir", "run_files", "holds_run")


def test_every_member_of_the_protocol_is_there_for_every_reader():
    """A reader module states what its format does; the registry gives it the single-file defaults for the rest."""
    members = {name for name in dir(Reader) if not name.startswith("_")} | set(inspect.get_annotations(Reader))
    assert members == MEMBERS
    for key, reader in READERS.items():
        module = reader.module  # type: ignore[attr-defined]
        assert module.name == key
        assert module.description
        assert all(hasattr(module, member) for member in ("name", "description", "sniff", "read")), key
        assert all(hasattr(reader, member) for member in members), key
    assert READ_WHOLE <= {key for key, reader in READERS.items() if reader.line_parser is None}
    assert set(LINES) == {key for key, reader in READERS.items() if reader.line_parser is not None}, "a line parser with no sample"


def test_a_row_says_what_its_module_does_beyond_a_single_file():
    """A row that says ``folders`` names a module with a folder method of its own, one that says ``binary`` a module
    with its own ``sniff_bytes``, and a module with either is one whose row says so (or the method is never asked)."""
    for row in READERS.rows:
        module = READERS[row.name].module  # type: ignore[attr-defined]
        assert row.folders == any(hasattr(module, member) for member in FOLDER_MEMBERS), row.name
        assert row.binary == hasattr(module, "sniff_bytes"), row.name
        assert bool(row.suffixes) or not hasattr(module, "holds_measurements"), row.name


def test_no_module_but_a_readers_own_imports_it():
    """Detection, discovery and the folder search go through READERS: a format is one module and one row. Only the
    live guard, which builds an HF run as a trainer logs it, uses its reader's entries directly."""
    import ast

    from tests.helpers import REPO

    allowed = {("trainproof.integrations.guard", "trainproof.runs.readers.hf")}
    readers = {f"trainproof.runs.readers.{name}" for name in READERS}
    found = set()
    for path in (REPO / "trainproof").rglob("*.py"):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name in readers and name != module:
                    found.add((module, name))
    assert found == allowed


def test_a_forced_format_that_reads_no_folders_is_not_asked_for_one(tmp_path):
    """A single-file reader gets the defaults: no run directory, no files of one, no log one level down."""
    reader = READERS["coqui"]
    assert not reader.is_run_dir(tmp_path)
    assert reader.run_files(tmp_path) == []
    assert reader.nested_log(tmp_path) is None
    assert not reader.sniff_bytes(tmp_path / "x", b"\x00" * 8)


@pytest.mark.parametrize("fmt", sorted(LINES))
def test_a_line_parser_builds_a_run_from_lines_fed_one_at_a_time(tmp_path, fmt):
    make = READERS[fmt].line_parser
    assert make is not None
    parser = make(tmp_path / "loss")
    for number, line in enumerate(LINES[fmt], start=1):
        parser.feed(line, number)
    assert isinstance(parser.builder, RunBuilder)
    snapshot = parser.build(copy=False)
    assert isinstance(snapshot, Run)
    assert snapshot.loss.steps.tolist() == [1, 2]
    assert parser.build().loss.values.tolist() == [2.0, 1.5]
