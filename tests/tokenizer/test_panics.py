"""A Rust panic of the tokenizers library, at loading and in a later call: one InputError naming the tokenizer, and
nothing of Rust's own report on stderr (file descriptor 2, which capfd reads)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from trainproof.io.errors import InputError
from trainproof.tokenizer.load import load_tokenizer
from trainproof.tokenizer.panics import guarded, panicked

pytest.importorskip("tokenizers")

PANICS_ON_LOADING = {
    "version": "1.0",
    "normalizer": {"type": "Precompiled", "precompiled_charsmap": "AAAA"},
    "model": {"type": "WordLevel", "vocab": {"a": 0, "<unk>": 1}, "unk_token": "<unk>"},
}
"""A tokenizer.json the library panics on while reading it: a normaliser whose character map does not parse."""

PANICS_ON_DECODING = {
    "version": "1.0",
    "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "Isolated", "invert": False},
    "decoder": {"type": "Strip", "content": " ", "start": 100, "stop": 100},
    "model": {"type": "WordLevel", "vocab": {"a": 0, "b": 1, " ": 2, "<unk>": 3}, "unk_token": "<unk>"},
}
"""A tokenizer.json that loads and encodes, but whose Strip decoder indexes out of bounds on a token of spaces alone."""


def write(path: Path, spec: dict) -> Path:
    path.write_text(json.dumps(spec), encoding="utf-8")
    return path


def panic_class() -> type[BaseException]:
    """pyo3's PanicException, which no module exports: the class of a real panic."""
    from tokenizers import Tokenizer

    try:
        Tokenizer.from_str(json.dumps(PANICS_ON_LOADING))
    except BaseException as exc:  # noqa: BLE001 -- the panic wanted
        return type(exc)
    raise AssertionError("the tokenizers library no longer panics on this tokenizer.json")


def test_a_panic_while_loading_is_one_input_error_naming_the_file(tmp_path, capfd):
    path = write(tmp_path / "tokenizer.json", PANICS_ON_LOADING)
    with pytest.raises(InputError) as raised:
        load_tokenizer(path)
    assert raised.value.path == str(path)
    assert raised.value.problem.startswith("cannot be loaded: the tokenizers library panicked (Precompiled")
    assert "\n" not in str(raised.value)
    assert capfd.readouterr().err == ""  # Rust's "thread ... panicked at" went nowhere


def test_a_panic_while_transformers_loads_a_folder_is_one_input_error_naming_it(tmp_path, capfd):
    pytest.importorskip("transformers")
    write(tmp_path / "tokenizer.json", {**PANICS_ON_LOADING, "added_tokens": []})  # what transformers reads first
    write(tmp_path / "tokenizer_config.json", {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "<unk>"})
    with pytest.raises(InputError) as raised:
        load_tokenizer(tmp_path)
    assert raised.value.path == str(tmp_path)
    assert raised.value.problem.startswith("cannot be loaded: the tokenizers library panicked (Precompiled")
    assert "panicked at" not in capfd.readouterr().err


def test_a_panic_in_a_later_call_is_one_input_error_naming_the_tokenizer(tmp_path, capfd):
    path = write(tmp_path / "tokenizer.json", PANICS_ON_DECODING)
    tokenizer = load_tokenizer(path)
    (ids,) = tokenizer.encode_batch(["a b"])
    assert ids == [0, 2, 1]
    for call in (lambda: tokenizer.decode_batch([ids]), lambda: tokenizer.decode(ids), lambda: tokenizer.normalize("a b")):
        with pytest.raises(InputError) as raised:
            call()
        assert raised.value.path == str(path)
        assert raised.value.problem.startswith("cannot be used: the tokenizers library panicked (index out of bounds")
    assert capfd.readouterr().err == ""


def test_a_panic_is_told_from_an_exception_and_from_an_interrupt():
    assert panicked(panic_class()("boom"))
    assert not panicked(RuntimeError("boom"))
    assert not panicked(KeyboardInterrupt())


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit, ValueError])
def test_anything_but_a_panic_passes_through_as_it_is(exc):
    with pytest.raises(exc), guarded("tok.json", "cannot be used"):
        raise exc()


def test_what_a_call_writes_to_stderr_without_panicking_still_reaches_stderr(capfd):
    with guarded("tok.json", "cannot be used"):
        os.write(2, b"a library's warning\n")
    assert capfd.readouterr().err == "a library's warning\n"


def test_calls_that_overlap_in_threads_leave_stderr_as_it_was(capfd):
    import threading

    target = os.readlink("/proc/self/fd/2") if os.path.exists("/proc/self/fd/2") else None
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()

    def first():
        with guarded("a", "x"):
            a_in.set()
            b_in.wait(10)
        a_out.set()

    def second():
        a_in.wait(10)
        with guarded("b", "x"):
            b_in.set()
            a_out.wait(10)  # the first call ends while this one runs: this one ends last

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    if target is not None:
        assert os.readlink("/proc/self/fd/2") == target
    os.write(2, b"still reaches stderr\n")
    assert "still reaches stderr" in capfd.readouterr().err
