"""``trainproof text`` on the command line: the exit-code contract (0 clean, 1 a FAIL, 2 could not judge), one
stderr line and never a traceback for what cannot be judged, and the JSON and SARIF outputs locating findings at
their lines."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.text.test_reader import assistant, jsonl, user
from tests.tokenizer import conftest as tokenizer_fixtures
from trainproof.cli import main
from trainproof.text import reader

built = tokenizer_fixtures.built  # the session's tokenizers, trained once at their first request (tests/tokenizer)

MiB = 1024 * 1024
SENTENCE = "Return the value of the argument. "


def run(capsys, *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    """The single line of stderr, which says it is an error and carries no traceback."""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith("trainproof: error: ")
    return lines[0]


def rows(n: int) -> list[dict]:
    return [{"prompt": f"What is {i} plus {i}?", "completion": f" {2 * i}."} for i in range(1, n + 1)]


def json_report(out: str) -> dict:
    return json.loads(out)


def findings(doc: dict) -> list[dict]:
    (subject,) = doc["subjects"]
    return subject["findings"]


# --- exit codes ---------------------------------------------------------------------------------------------------


def test_a_clean_file_exits_0(capsys, tmp_path):
    code, out, err = run(capsys, "text", jsonl(tmp_path, *rows(3)))
    assert code == 0
    assert out.startswith("trainproof text: PASS")
    assert "Skipped TP-TEXT-TRUNCATED-TARGET, TP-TEXT-TOO-LONG, TP-TEXT-REJECTED-TOO-LONG: no --tokenizer given" in out
    assert err == ""


def test_warnings_exit_0_unless_fail_on_warn(capsys, tmp_path):
    path = jsonl(tmp_path, *rows(2), rows(1)[0])
    code, out, err = run(capsys, "text", path)
    assert (code, err) == (0, "")
    assert "[WARN] TP-TEXT-DUPLICATE" in out
    code, _, err = run(capsys, "text", path, "--fail-on", "warn")
    assert (code, err) == (1, "")


def test_a_fail_exits_1_with_the_finding_and_its_line(capsys, tmp_path):
    code, out, err = run(capsys, "text", jsonl(tmp_path, *rows(2), '{"prompt": "cut', *rows(1)))
    assert code == 1
    assert out.startswith("trainproof text: FAIL")
    assert "[FAIL] TP-TEXT-MALFORMED  Line 3 is not valid JSON" in out
    assert "Evidence: line 3: unparsable" in out
    assert err == ""


def _utf16(tmp_path: Path, bom: bool) -> Path:
    path = tmp_path / "train.jsonl"
    path.write_bytes((("\ufeff" if bom else "") + "".join(json.dumps(r) + "\n" for r in rows(20))).encode("utf-16-le"))
    return path


def _write(data: bytes) -> Callable[[Path], Path]:
    def write(tmp_path: Path) -> Path:
        path = tmp_path / "train.jsonl"
        path.write_bytes(data)
        return path

    return write


LATIN1 = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ({"text": "café"}, {"text": "naïve"}, {"text": "crème"})).encode(
    "latin-1"
)

UNJUDGEABLE = {
    "a missing file": (lambda tmp_path: tmp_path / "nope.jsonl", "does not exist"),
    "a folder": (lambda tmp_path: tmp_path, "is a folder with no .parquet or .arrow file, nor a dataset saved by datasets: give the dataset's .jsonl file"),
    "an empty file": (_write(b""), "is empty"),
    "a whitespace-only file": (_write(b"\n  \n\t\r\n\n"), "is empty: it holds nothing but whitespace"),
    "a zip named .jsonl": (
        _write(b"PK\x03\x04\x14\x00\x00\x00" + bytes(range(256)) * 40),
        "is binary, not JSON Lines (it holds NUL bytes)",
    ),
    "control bytes named .jsonl": (_write(bytes(range(1, 32)) * 100 + bytes(range(128, 256)) * 50), "is binary, not JSON Lines"),
    "UTF-16 with its byte-order mark": (
        lambda tmp_path: _utf16(tmp_path, bom=True),
        "is UTF-16 (little-endian) text (by its byte-order mark), not UTF-8, which trainers read JSON Lines as: save it as UTF-8",
    ),
    "UTF-16 without a byte-order mark": (
        lambda tmp_path: _utf16(tmp_path, bom=False),
        "is UTF-16 (little-endian) text without a byte-order mark, not UTF-8, which trainers read JSON Lines as: save it as UTF-8",
    ),
    "Latin-1": (
        _write(LATIN1),
        "is not UTF-8: 3 of its 3 lines hold bytes that are not UTF-8, the first at line 1, so it is in another encoding "
        "(Latin-1 or Windows-1252, perhaps): save it as UTF-8",
    ),
}


@pytest.mark.parametrize("case", list(UNJUDGEABLE))
def test_a_file_that_cannot_be_judged_exits_2_with_one_line(capsys, tmp_path, case):
    make, problem = UNJUDGEABLE[case]
    path = make(tmp_path)
    code, out, err = run(capsys, "text", path)
    assert code == 2
    assert one_error_line(err) == f"trainproof: error: {path}: {problem}"
    assert "Traceback" not in out
    assert out.startswith("trainproof text: NOT-CHECKED")
    code, out, err = run(capsys, "text", path, "--json")
    assert code == 2
    one_error_line(err)
    doc = json_report(out)
    assert (doc["verdict"], doc["exit_code"], findings(doc)) == ("NOT-CHECKED", 2, [])


def test_latin1_on_a_minority_of_lines_is_a_finding_at_each_not_an_error(capsys, tmp_path):
    path = jsonl(tmp_path, *rows(5))
    path.write_bytes(path.read_bytes() + '{"text": "café"}\n'.encode("latin-1"))
    code, out, err = run(capsys, "text", path, "--json")
    assert (code, err) == (1, "")
    assert [(f["id"], f["line"]) for f in findings(json_report(out))] == [("TP-TEXT-MALFORMED", 6)]


def test_a_file_judged_beside_one_that_cannot_be_still_exits_by_the_worst(capsys, tmp_path):
    clean = jsonl(tmp_path, *rows(2), name="clean.jsonl")
    failing = jsonl(tmp_path, "{", *rows(1), name="failing.jsonl")
    missing = tmp_path / "missing.jsonl"
    code, _, err = run(capsys, "text", clean, missing)
    assert code == 2
    assert one_error_line(err) == f"trainproof: error: {missing}: does not exist"
    code, _, err = run(capsys, "text", failing, missing)
    assert code == 1
    assert one_error_line(err) == f"trainproof: error: {missing}: does not exist"


# --- one JSON document, and lines too long to read ------------------------------------------------------------------

DOCUMENTS = {
    "json.dump(rows, indent=2)": (json.dumps(rows(300), indent=2), "one JSON array"),
    "a JSON array on one line": (json.dumps(rows(300)), "one JSON array"),
    "a pretty-printed object": (json.dumps({"data": rows(300), "version": 2}, indent=2), "one pretty-printed JSON document"),
}


@pytest.mark.parametrize("case", list(DOCUMENTS))
def test_one_json_document_exits_1_with_one_finding_not_hundreds(capsys, tmp_path, case):
    text, what = DOCUMENTS[case]
    path = tmp_path / "train.jsonl"
    path.write_text(text + "\n")
    code, out, err = run(capsys, "text", path, "--json")
    assert (code, err) == (1, "")
    (finding,) = findings(json_report(out))
    assert (finding["id"], finding["level"], finding["line"], finding["file"]) == ("TP-TEXT-DOCUMENT", "FAIL", 1, str(path))
    assert what in finding["message"]
    assert json_report(out)["subjects"][0]["summary"]["rows"] == 0


@pytest.mark.parametrize(
    ("first", "last", "rule"),
    [(b'{"text": "', b'"}', "TP-TEXT-MALFORMED"), (b'[{"text": "', b'"}]', "TP-TEXT-DOCUMENT")],
    ids=["a row", "a JSON array"],
)
def test_a_single_line_over_the_readers_limit_is_one_finding(capsys, tmp_path, monkeypatch, first, last, rule):
    monkeypatch.setattr(reader, "MAX_TEXT_LINE_BYTES", 1 * MiB)
    line = first + b"x" * (3 * MiB) + last
    path = tmp_path / "train.jsonl"
    path.write_bytes(line + b"\n")
    code, out, err = run(capsys, "text", path, "--json")
    assert (code, err) == (1, "")
    (finding,) = findings(json_report(out))
    assert (finding["id"], finding["line"]) == (rule, 1)
    if rule == "TP-TEXT-MALFORMED":
        assert finding["message"] == f"Line 1 is {len(line):,} bytes long, over the 1 MiB limit for one row."
    else:
        assert "one JSON array" in finding["message"]


# --- the options ----------------------------------------------------------------------------------------------------


def test_max_len_without_a_tokenizer_is_a_usage_error(capsys, tmp_path):
    code, out, err = run(capsys, "text", jsonl(tmp_path, *rows(2)), "--max-len", "512")
    assert code == 2
    assert one_error_line(err) == "trainproof: error: --max-len needs --tokenizer: lengths are counted in the tokenizer's tokens"
    assert out == ""


@pytest.mark.parametrize("value", ["0", "-5", "many"])
def test_a_max_len_that_is_not_a_positive_number_is_a_usage_error(capsys, tmp_path, value):
    with pytest.raises(SystemExit) as exited:
        main(["text", str(jsonl(tmp_path, *rows(1))), "--tokenizer", "x", "--max-len", value])
    assert exited.value.code == 2
    out, err = capsys.readouterr()
    assert "argument --max-len" in one_error_line(err)
    assert out == ""


def _text_file(tmp_path: Path) -> Path:
    path = tmp_path / "vocab.txt"
    path.write_text("hello\nworld\n")
    return path


def _pickle(tmp_path: Path) -> Path:
    path = tmp_path / "tokenizer.bin"
    path.write_bytes(b"\x80\x04\x95")
    return path


def _empty_folder(tmp_path: Path) -> Path:
    path = tmp_path / "tok"
    path.mkdir()
    return path


def _the_dataset(tmp_path: Path) -> Path:
    return tmp_path / "train.jsonl"  # the dataset itself: JSON, so read as a tokenizer.json


NOT_TOKENIZERS = {
    "a text file": (
        _text_file,
        "is not a tokenizer trainproof reads (a sentencepiece .model, a tokenizer.json or a HuggingFace tokenizer folder)",
    ),
    "a pickle": (_pickle, "is a pickle; trainproof never unpickles a tokenizer"),
    "an empty folder": (_empty_folder, "holds no tokenizer: no tokenizer.json, tokenizer_config.json or sentencepiece .model"),
    "the dataset": (_the_dataset, "is not valid JSON: Extra data at line 2 column 1"),
    "a missing path": (lambda tmp_path: tmp_path / "nope", "does not exist"),
}


@pytest.mark.parametrize("case", list(NOT_TOKENIZERS))
def test_a_tokenizer_that_is_not_one_exits_2_with_one_line(capsys, tmp_path, case):
    dataset = jsonl(tmp_path, *rows(2))
    make, problem = NOT_TOKENIZERS[case]
    tokenizer = make(tmp_path)
    code, out, err = run(capsys, "text", dataset, "--tokenizer", tokenizer, "--max-len", "64")
    assert code == 2
    assert one_error_line(err) == f"trainproof: error: {tokenizer}: {problem}"
    assert out == ""


def test_a_real_tokenizer_judges_lengths_from_the_command_line(capsys, tmp_path, built):
    long_prompt = {"prompt": SENTENCE * 20, "completion": "Yes."}
    long_answer = {"prompt": "Go on.", "completion": " ".join(f"Return the value of argument {i}." for i in range(20))}  # not one sentence repeated
    path = jsonl(tmp_path, *rows(2), long_prompt, long_answer)
    code, out, err = run(capsys, "text", path, "--tokenizer", built("bpe"), "--max-len", "64", "--json")
    assert (code, err) == (1, "")
    doc = json_report(out)
    assert [(f["id"], f["level"], f["line"]) for f in findings(doc)] == [
        ("TP-TEXT-TRUNCATED-TARGET", "FAIL", 3),
        ("TP-TEXT-TOO-LONG", "WARN", 3),
        ("TP-TEXT-TOO-LONG", "WARN", 4),
    ]
    (subject,) = doc["subjects"]
    assert subject["checks"]["skipped"] == [
        {"id": "TP-TEXT-SPLIT-LEAK", "reason": "the dataset has one split"},
        {"id": "TP-TEXT-LENGTH-OUTLIER", "reason": "only 4 rows with an answer to compare lengths across (needs 20)"},
    ]
    assert subject["summary"]["max_len"] == 64
    assert subject["summary"]["rows_over_max_len"] == 2
    code, out, err = run(capsys, "text", path, "--tokenizer", built("bpe"), "--max-len", "4096")
    assert (code, err) == (0, "")
    assert "Checks ran (16)" in out
    assert "Skipped TP-TEXT-LENGTH-OUTLIER: only 4 rows with an answer to compare lengths across (needs 20)" in out


# --- outputs ----------------------------------------------------------------------------------------------------


def _mixed(tmp_path: Path) -> Path:
    """FAILs at lines 2 and 4, WARNs at 3 and 6."""
    return jsonl(
        tmp_path,
        *rows(1),
        "{",
        {"prompt": "p", "completion": ""},
        {"Prompt": "p", "completion": "c"},
        {"messages": [user("a"), user("b"), assistant("c")]},
        *rows(1),
    )


def test_json_output_parses_and_its_findings_carry_their_lines(capsys, tmp_path):
    path = _mixed(tmp_path)
    code, out, err = run(capsys, "text", path, "--json")
    assert (code, err) == (1, "")
    doc = json_report(out)
    assert (doc["command"], doc["verdict"], doc["exit_code"]) == ("text", "FAIL", 1)
    assert [(f["id"], f["level"], f["line"], f["file"]) for f in findings(doc)] == [
        ("TP-TEXT-MALFORMED", "FAIL", 2, str(path)),
        ("TP-TEXT-SHAPE", "FAIL", 4, str(path)),
        ("TP-TEXT-MIXED-SHAPES", "WARN", 5, str(path)),
        ("TP-TEXT-EMPTY", "WARN", 3, str(path)),
        ("TP-TEXT-ROLES", "WARN", 5, str(path)),
        ("TP-TEXT-DUPLICATE", "WARN", 6, str(path)),
    ]
    assert all(any(ch.isdigit() for ch in f["evidence"]) for f in findings(doc))
    (subject,) = doc["subjects"]
    assert subject["format"] == "jsonl"
    assert subject["checks"]["skipped"] == [
        {"id": "TP-TEXT-SPLIT-LEAK", "reason": "the dataset has one split"},
        {"id": "TP-TEXT-LENGTH-OUTLIER", "reason": "only 3 rows with an answer to compare lengths across (needs 20)"},
        {"id": "TP-TEXT-TRUNCATED-TARGET", "reason": "no --tokenizer given"},
        {"id": "TP-TEXT-TOO-LONG", "reason": "no --tokenizer given"},
        {"id": "TP-TEXT-REJECTED-TOO-LONG", "reason": "no --tokenizer given"},
    ]


def test_sarif_locates_each_finding_at_the_jsonl_file_and_line(capsys, tmp_path, monkeypatch):
    _mixed(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "text", "train.jsonl", "--sarif", "out.sarif")
    assert (code, err) == (1, "")
    sarif = json.loads((tmp_path / "out.sarif").read_text())
    (sarif_run,) = sarif["runs"]
    located = []
    for result in sarif_run["results"]:
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        located.append((result["ruleId"], result["level"], physical["artifactLocation"]["uri"], physical["region"]["startLine"]))
    assert located == [
        ("TP-TEXT-MALFORMED", "error", "train.jsonl", 2),
        ("TP-TEXT-SHAPE", "error", "train.jsonl", 4),
        ("TP-TEXT-MIXED-SHAPES", "warning", "train.jsonl", 5),
        ("TP-TEXT-EMPTY", "warning", "train.jsonl", 3),
        ("TP-TEXT-ROLES", "warning", "train.jsonl", 5),
        ("TP-TEXT-DUPLICATE", "warning", "train.jsonl", 6),
    ]


def test_the_headline_counts_one_row_in_the_singular(capsys, tmp_path):
    _, out, _ = run(capsys, "text", jsonl(tmp_path, *rows(1)))
    assert "1 rows" not in out
    assert "1 lines" not in out


# --- the tokenizer is an input too --------------------------------------------------------------------------------


@pytest.mark.parametrize("option", ["--json-file", "--html", "--sarif", "--junit", "--markdown"])
def test_no_output_may_overwrite_the_tokenizer_json(capsys, tmp_path, built, option):
    tokenizer = tmp_path / "tok.json"
    tokenizer.write_bytes(built("bpe").read_bytes())
    code, out, err = run(capsys, "text", jsonl(tmp_path, *rows(2)), "--tokenizer", tokenizer, option, tokenizer)
    assert code == 2
    assert one_error_line(err) == f"trainproof: error: {tokenizer}: is read as the tokenizer; refusing to overwrite it"
    assert tokenizer.read_bytes() == built("bpe").read_bytes()


@pytest.mark.parametrize("name", ["special_tokens_map.json", "tokenizer_config.json"])
def test_no_output_may_overwrite_a_file_the_tokenizer_is_read_with(capsys, tmp_path, built, name):
    """Beside a tokenizer.json, what names its special tokens."""
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "tokenizer.json").write_bytes(built("bpe").read_bytes())
    target = plain / name
    target.write_text('{"eos_token": "</s>"}', encoding="utf-8")
    code, _, err = run(capsys, "text", jsonl(tmp_path, *rows(2)), "--tokenizer", plain / "tokenizer.json", "--markdown", target)
    assert code == 2
    assert one_error_line(err) == f"trainproof: error: {target}: is read as the tokenizer; refusing to overwrite it"
    assert target.read_text(encoding="utf-8") == '{"eos_token": "</s>"}'


def test_no_output_may_overwrite_a_file_of_a_tokenizer_folder(capsys, tmp_path, built):
    target = built("hf") / "tokenizer_config.json"
    before = target.read_bytes()
    code, _, err = run(capsys, "text", jsonl(tmp_path, *rows(2)), "--tokenizer", built("hf"), "--markdown", target)
    assert code == 2
    assert one_error_line(err) == f"trainproof: error: {target}: is read as the tokenizer; refusing to overwrite it"
    assert target.read_bytes() == before


def test_the_job_summary_may_not_be_the_tokenizer(capsys, tmp_path, built, monkeypatch):
    tokenizer = tmp_path / "tok.json"
    tokenizer.write_bytes(built("bpe").read_bytes())
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tokenizer))
    code, out, err = run(capsys, "text", jsonl(tmp_path, *rows(2)), "--tokenizer", tokenizer, "--github")
    assert code == 2
    assert "refusing to append to it" in one_error_line(err)
    assert tokenizer.read_bytes() == built("bpe").read_bytes()


def test_a_tokenizer_that_panics_is_one_line_and_exit_2(capfd, tmp_path):
    from tests.tokenizer.test_panics import PANICS_ON_LOADING

    tokenizer = tmp_path / "tok.json"
    tokenizer.write_text(json.dumps(PANICS_ON_LOADING), encoding="utf-8")
    code = main(["text", str(jsonl(tmp_path, *rows(2))), "--tokenizer", str(tokenizer), "--max-len", "64"])
    out, err = capfd.readouterr()
    assert (code, out) == (2, "")
    assert one_error_line(err).startswith(f"trainproof: error: {tokenizer}: cannot be loaded: the tokenizers library panicked (")


def test_rows_the_tokenizer_cannot_encode_are_never_a_silent_pass(capsys, tmp_path, built):
    """One row with a lone surrogate costs that row (named in a note); a file of nothing else is not judged by length."""
    some = jsonl(tmp_path, *rows(2), {"text": "hello \ud800 world"}, {"prompt": "Go on.", "completion": SENTENCE * 20}, name="some.jsonl")
    code, out, err = run(capsys, "text", some, "--tokenizer", built("bpe"), "--max-len", "64")
    assert (code, err) == (0, "")
    assert "note: the tokenizer cannot encode 1 row, so its length is not judged: line 3 ('\\ud800' is a lone UTF-16 surrogate" in out
    assert "[WARN] TP-TEXT-TOO-LONG  Line 4 has" in out
    only = jsonl(tmp_path, {"text": "hello \ud800 world"}, {"text": "\udfff"}, name="only.jsonl")
    code, out, err = run(capsys, "text", only, "--tokenizer", built("bpe"), "--max-len", "64")
    assert code == 2
    assert one_error_line(err) == (
        f"trainproof: error: {only}: --max-len could not be judged: the tokenizer failed on this file "
        "('\\ud800' is a lone UTF-16 surrogate, not Unicode text)"
    )
    assert "Skipped TP-TEXT-TRUNCATED-TARGET, TP-TEXT-TOO-LONG, TP-TEXT-REJECTED-TOO-LONG: the tokenizer failed on this file" in out


# --- how the lengths were counted ---------------------------------------------------------------------------------


def _chats(n: int) -> list[dict]:
    return [{"messages": [user(f"What is {i} plus {i}?"), assistant(f"{2 * i}.")]} for i in range(1, n + 1)]


def _template_file(folder: Path) -> Path:
    """The file of a saved tokenizer folder that holds its chat template (transformers 4.x writes it into
    tokenizer_config.json, newer versions into chat_template.jinja)."""
    jinja = folder / "chat_template.jinja"
    return jinja if jinja.exists() else folder / "tokenizer_config.json"


def _headline(out: str) -> str:
    """The text report's headline: the line under the input's verdict line."""
    lines = out.splitlines()
    return lines[lines.index(next(line for line in lines if line.startswith(("PASS  ", "WARN  ", "FAIL  ")))) + 1].strip()


def test_the_summary_says_the_lengths_were_counted_with_the_folders_chat_template(capsys, tmp_path, built):
    """Issue 28: the same conversations are 61 tokens a row as their text and 88 through a folder's chat template, and
    nothing said which. Every output that shows the summary (text, JSON, HTML) says it, naming the template's file."""
    pytest.importorskip("transformers")
    folder = built("hf")
    source = _template_file(folder)
    path = jsonl(tmp_path, *_chats(3))
    said = f"counted with the chat template of {source} applied"
    code, out, err = run(capsys, "text", path, "--tokenizer", folder, "--html", tmp_path / "report.html")
    assert (code, err) == (0, "")
    assert _headline(out).endswith(f"at most, {said}")
    assert said in (tmp_path / "report.html").read_text(encoding="utf-8")
    _, out, _ = run(capsys, "text", path, "--tokenizer", folder, "--json")
    (subject,) = json_report(out)["subjects"]
    summary = subject["summary"]
    assert (summary["chat_template"], summary["rows_chat_template"], summary["rows_measured"]) == (str(source), 3, 3)


def test_the_summary_says_the_lengths_were_counted_on_the_raw_text(capsys, tmp_path, built):
    """A tokenizer.json carries no chat template: the rows are counted as their text, and the summary says so; no note
    when nothing beside it holds a template."""
    path = jsonl(tmp_path, *_chats(3))
    code, out, err = run(capsys, "text", path, "--tokenizer", built("bpe"))
    assert (code, err) == (0, "")
    assert _headline(out).endswith("at most, counted on the raw text (the tokenizer has no chat template)")
    assert "note:" not in out
    _, out, _ = run(capsys, "text", path, "--tokenizer", built("bpe"), "--json")
    (subject,) = json_report(out)["subjects"]
    assert (subject["summary"]["chat_template"], subject["summary"]["rows_chat_template"]) == ("none", 0)


def test_a_chat_template_beside_a_tokenizer_json_given_alone_is_named_as_not_applied(capsys, tmp_path, built):
    pytest.importorskip("transformers")
    folder = built("hf")
    path = jsonl(tmp_path, *_chats(3))
    code, out, err = run(capsys, "text", path, "--tokenizer", folder / "tokenizer.json")
    assert (code, err) == (0, "")
    assert "counted on the raw text (the tokenizer has no chat template)" in _headline(out)
    beside = _template_file(folder)
    assert (
        f"note: the chat template in {beside} was not applied (tokenizer.json alone carries none): give the folder, "
        f"--tokenizer {folder}, to count conversations as a trainer renders them"
    ) in out
    code, out, _ = run(capsys, "text", jsonl(tmp_path, *rows(3), name="pc.jsonl"), "--tokenizer", folder / "tokenizer.json")
    assert (code, "note:" in out) == (0, False)  # no conversation: nothing a template would have changed


def test_rows_counted_with_and_without_the_template_are_counted_apart(capsys, tmp_path, built):
    """Prompt/completion rows are counted as their text even where the tokenizer has a template: the headline says how
    many rows were counted each way, in the plural or the singular."""
    pytest.importorskip("transformers")
    folder = built("hf")
    _, out, _ = run(capsys, "text", jsonl(tmp_path, *_chats(1), *rows(2)), "--tokenizer", folder)
    source = _template_file(folder)
    assert _headline(out).endswith(f"at most, 1 of 3 rows counted with the chat template of {source} applied, the rest on the raw text")
    _, out, _ = run(capsys, "text", jsonl(tmp_path, *rows(2), name="pc.jsonl"), "--tokenizer", folder)
    assert _headline(out).endswith(f"at most, counted on the raw text (the chat template of {source} was applied to no row)")
