"""Loading real tokenizers of each library: what they report, the round-trip contract, and every input refused."""

from __future__ import annotations

import json
import os
import pickle
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO
from tests.tokenizer import build
from tests.tokenizer.build import BOS, EOS, PAD, UNK
from trainproof.io.errors import InputError, MissingDependencyError
from trainproof.tokenizer.load import SentencePieceTokenizer, Specials, Tokenizer, load_tokenizer

VARIANTS = {
    "sentencepiece": ("sentencepiece", {}),
    "sentencepiece-bytes": ("sentencepiece", {"byte_fallback": True}),
    "sentencepiece-bpe": ("sentencepiece", {"model_type": "bpe"}),
    "sentencepiece-pad-is-eos": ("sentencepiece", {"pad_is_eos": True}),
    "sentencepiece-split-digits": ("sentencepiece", {"split_digits": True}),
    "sentencepiece-user-defined": ("sentencepiece", {"user_defined": ("<sep>", "[laugh]")}),
    "bpe": ("bpe", {}),
    "bpe-bytes": ("bpe", {"byte_fallback": True}),
    "bpe-byte-level": ("bpe", {"byte_level": True}),
    "hf": ("hf", {}),
    "hf-pad-is-eos": ("hf", {"pad_is_eos": True}),
    "hf-no-template": ("hf", {"chat_template": False}),
}
"""Every tokenizer the tests build: builder name and options."""

KINDS = {"sentencepiece": "sentencepiece", "bpe": "tokenizers", "hf": "transformers"}
UNCOVERED = "Stra\u00dfe \u20ac \u6f22"  # ß, € and a CJK character: none is in the training text
AWKWARD = (
    "",
    " ",
    "  two leading spaces,  doubled  ones and a trailing one ",
    "\ufb01ne ligatures and full\uff37idth letters",
    "a literal \u2581 lower block",
    "tabs\tand\nnewlines",
    "In 1999 and 2024 there were 365 days.",
    UNCOVERED,
)
"""Texts beyond the English lines: each that a tokenizer covers must round-trip through it."""


class Case:
    def __init__(self, name: str, options: dict, tokenizer: Tokenizer) -> None:
        self.name, self.options, self.tokenizer = name, options, tokenizer

    @property
    def byte_fallback(self) -> bool:
        return self.name == "hf" or self.options.get("byte_fallback", False)


@pytest.fixture(scope="module")
def loaded(built):
    cache: dict[str, Case] = {}

    def get(variant: str) -> Case:
        if variant not in cache:
            name, options = VARIANTS[variant]
            cache[variant] = Case(name, options, load_tokenizer(built(name, **options)))
        return cache[variant]

    return get


@pytest.fixture(params=list(VARIANTS))
def case(request, loaded) -> Case:
    return loaded(request.param)


def covered(tokenizer: Tokenizer, ids: list[int]) -> bool:
    return tokenizer.specials.unk not in ids


# --- what each tokenizer reports ---------------------------------------------------------------------------


def test_kind_size_and_special_tokens(case):
    tokenizer = case.tokenizer
    pad_is_eos = case.options.get("pad_is_eos", False)
    assert tokenizer.kind == KINDS[case.name]
    assert tokenizer.vocab_size == 1000
    assert tokenizer.specials == Specials(
        bos=BOS, bos_text="<s>", eos=EOS, eos_text="</s>",
        pad=EOS if pad_is_eos else PAD, pad_text="</s>" if pad_is_eos else "<pad>",
        unk=UNK, unk_text="<unk>",
    )  # fmt: skip
    for role in ("bos", "eos", "pad", "unk"):
        assert tokenizer.piece(getattr(tokenizer.specials, role)) == getattr(tokenizer.specials, f"{role}_text")


def test_byte_ids_exactly_with_byte_fallback(case):
    tokenizer = case.tokenizer
    if case.byte_fallback:
        assert sorted(tokenizer.piece(i) for i in tokenizer.byte_ids) == [f"<0x{byte:02X}>" for byte in range(256)]
    else:
        assert tokenizer.byte_ids == frozenset()


def test_matched_strings_are_the_added_tokens_or_the_user_defined_pieces(case):
    """What the library finds whole in a text: a tokenizers pipeline's added tokens (the special ones here), a
    sentencepiece model's user-defined pieces (never its control pieces: "<s>" in a text is three pieces)."""
    tokenizer = case.tokenizer
    user_defined = set(case.options.get("user_defined", ()))
    assert tokenizer.matched == (set(build.SPECIAL_TOKENS) if case.name in ("bpe", "hf") else user_defined)
    for text in tokenizer.matched:
        ids = tokenizer.encode_batch([f"say{text}now"])[0]
        assert text in {tokenizer.piece(i) for i in ids}


def test_encode_batch_is_encoding_one_by_one(case):
    tokenizer = case.tokenizer
    texts = list(build.english_lines()[::40]) + list(AWKWARD)
    assert tokenizer.encode_batch(texts) == [tokenizer.encode_batch([text])[0] for text in texts]
    assert tokenizer.encode_batch([]) == []


def test_no_special_token_is_added(case):
    ids = case.tokenizer.encode_batch(["Return the list of words."])[0]
    specials = case.tokenizer.specials
    assert {specials.bos, specials.eos} & set(ids) == set()


def test_every_english_line_is_covered_and_round_trips(case):
    tokenizer = case.tokenizer
    lines = build.english_lines()
    encoded = tokenizer.encode_batch(lines)
    assert [line for line, ids in zip(lines, encoded) if not covered(tokenizer, ids)] == []
    broken = [
        (line, tokenizer.decode(ids), tokenizer.normalize(line))
        for line, ids in zip(lines, encoded)
        if tokenizer.decode(ids) != tokenizer.normalize(line)
    ]
    assert broken[:3] == []


def test_awkward_text_round_trips_wherever_it_is_covered(case):
    tokenizer = case.tokenizer
    checked = 0
    for text, ids in zip(AWKWARD, tokenizer.encode_batch(AWKWARD)):
        if covered(tokenizer, ids):
            assert tokenizer.decode(ids) == tokenizer.normalize(text), text
            checked += 1
    assert checked >= 5


def test_an_unknown_character_is_unk_without_byte_fallback_and_bytes_with_it(case):
    tokenizer = case.tokenizer
    ids = tokenizer.encode_batch([UNCOVERED])[0]
    if case.options.get("byte_level"):
        assert covered(tokenizer, ids)
        assert tokenizer.decode(ids) == UNCOVERED
    elif case.byte_fallback:
        assert covered(tokenizer, ids)
        assert len(set(ids) & tokenizer.byte_ids) == len("\u00df\u20ac\u6f22".encode())  # each byte of each character
        assert tokenizer.decode(ids) == UNCOVERED
    else:
        assert ids.count(tokenizer.specials.unk) == 3
        assert set(ids) & tokenizer.byte_ids == set()


@pytest.mark.parametrize(
    ("variant", "text", "normalized"),
    [
        ("sentencepiece", "  \ufb01ne  full\uff37idth ", "fine fullWidth"),  # nmt_nfkc: NFKC, runs of spaces collapsed, ends stripped
        ("bpe", "  \ufb01ne  full\uff37idth ", " fine  fullWidth "),  # NFKC; Metaspace drops the one space it adds in front
        ("bpe-byte-level", "  \ufb01ne  full\uff37idth ", "  \ufb01ne  full\uff37idth "),  # NFC: the ligature stays
        ("hf", "  \ufb01ne ", " fine "),
    ],
)
def test_normalize_shows_what_the_pipeline_changes(loaded, variant, text, normalized):
    assert loaded(variant).tokenizer.normalize(text) == normalized


def test_split_digits_gives_one_piece_per_digit(loaded):
    def digit_pieces(variant: str) -> list[str]:
        tokenizer = loaded(variant).tokenizer
        pieces = [tokenizer.piece(i) for i in tokenizer.encode_batch(["In 1999 and 2024 there were 365 days."])[0]]
        return [piece for piece in pieces if any(c.isdigit() for c in piece)]

    assert all(sum(c.isdigit() for c in piece) == 1 for piece in digit_pieces("sentencepiece-split-digits"))
    assert any(sum(c.isdigit() for c in piece) > 1 for piece in digit_pieces("sentencepiece"))


def test_ids_outside_the_vocabulary_are_a_value_error(case):
    tokenizer = case.tokenizer
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tokenizer.decode([5, tokenizer.vocab_size])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tokenizer.piece(-1)


def test_old_sentencepiece_without_normalize_falls_back_to_nfkc(built):
    """sentencepiece < 0.2 has no ``normalize``: NFKC with whitespace collapsed stands in, and the contract still holds on English."""
    sentencepiece = pytest.importorskip("sentencepiece")

    class Old:
        def __init__(self, processor) -> None:
            self._processor = processor

        def __getattr__(self, name: str):
            if name == "normalize":
                raise AttributeError(name)
            return getattr(self._processor, name)

    path = built("sentencepiece")
    tokenizer = SentencePieceTokenizer(str(path), Old(sentencepiece.SentencePieceProcessor(model_file=str(path))))
    assert tokenizer.normalize("  \ufb01ne  full\uff37idth ") == "fine fullWidth"
    lines = build.english_lines()
    assert [line for line, ids in zip(lines, tokenizer.encode_batch(lines)) if tokenizer.decode(ids) != tokenizer.normalize(line)] == []


# --- chat templates ----------------------------------------------------------------------------------------

CHAT = [{"role": "user", "content": "What does wrap() return?"}, {"role": "assistant", "content": "A list of lines."}]


def test_render_chat_is_the_templates_text_and_none_without_one(case):
    tokenizer = case.tokenizer
    if case.name == "hf" and case.options.get("chat_template", True):
        assert tokenizer.chat_template == build.CHAT_TEMPLATE
        assert tokenizer.render_chat(CHAT) == "<|user|>\nWhat does wrap() return?</s>\n<|assistant|>\nA list of lines.</s>\n"
    else:
        assert tokenizer.chat_template is None
        assert tokenizer.render_chat(CHAT) is None


def test_a_template_that_raises_is_a_value_error(built, tmp_path):
    folder = shutil.copytree(built("hf"), tmp_path / "hf")
    (folder / "chat_template.jinja").write_text("{{ raise_exception('only system messages, please') }}", encoding="utf-8")
    with pytest.raises(ValueError, match="only system messages, please"):
        load_tokenizer(folder).render_chat(CHAT)


# --- where special tokens come from ------------------------------------------------------------------------


def test_a_tokenizer_json_beside_its_config_takes_the_special_tokens_it_names(built):
    tokenizer = load_tokenizer(built("hf", pad_is_eos=True) / "tokenizer.json")
    assert tokenizer.kind == "tokenizers"
    assert (tokenizer.specials.pad, tokenizer.specials.pad_text) == (EOS, "</s>")
    assert tokenizer.chat_template is None


def test_a_folder_with_only_a_tokenizer_json_reads_special_tokens_map(built, tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    shutil.copy(built("bpe"), folder / "tokenizer.json")
    (folder / "special_tokens_map.json").write_text(json.dumps({"pad_token": {"content": "</s>", "lstrip": False}, "eos_token": "</s>"}))
    tokenizer = load_tokenizer(folder)
    assert (tokenizer.kind, tokenizer.path) == ("tokenizers", str(folder))
    assert tokenizer.specials.pad == tokenizer.specials.eos == EOS


def test_a_folder_with_only_a_sentencepiece_model_loads_it(built):
    folder = built("sentencepiece").parent
    tokenizer = load_tokenizer(folder)
    assert (tokenizer.kind, tokenizer.path, tokenizer.vocab_size) == ("sentencepiece", str(folder), 1000)


def test_the_post_processor_names_bos_and_eos_before_the_usual_strings(built, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    backend = tokenizers.Tokenizer.from_file(str(built("bpe")))
    backend.add_special_tokens(["<|begin|>", "<|end|>"])
    begin, end = backend.token_to_id("<|begin|>"), backend.token_to_id("<|end|>")
    backend.post_processor = tokenizers.processors.TemplateProcessing(
        single="<|begin|> $A <|end|>", special_tokens=[("<|begin|>", begin), ("<|end|>", end)]
    )
    backend.save(str(tmp_path / "tokenizer.json"))
    tokenizer = load_tokenizer(tmp_path / "tokenizer.json")
    assert tokenizer.vocab_size == 1002
    specials = tokenizer.specials
    assert (specials.bos, specials.bos_text) == (begin, "<|begin|>")
    assert (specials.eos, specials.eos_text) == (end, "<|end|>")
    assert (specials.pad, specials.unk) == (PAD, UNK)


def test_padding_and_truncation_saved_in_the_file_are_off_but_name_pad(built, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    backend = tokenizers.Tokenizer.from_file(str(built("bpe")))
    backend.enable_padding(pad_id=EOS, pad_token="</s>")
    backend.enable_truncation(max_length=4)
    backend.save(str(tmp_path / "tokenizer.json"))
    tokenizer = load_tokenizer(tmp_path / "tokenizer.json")
    assert tokenizer.specials.pad == EOS
    texts = ["Return a list of the lines of text.", "Wrap it."]
    batch = tokenizer.encode_batch(texts)
    assert batch == [tokenizer.encode_batch([text])[0] for text in texts]
    assert len(batch[0]) > 4
    assert EOS not in batch[1]


# --- refusals ------------------------------------------------------------------------------------------------

CODE = "ships its own code (auto_map / .py); trainproof never runs it (trust_remote_code)"
PICKLE = "is a pickle; trainproof never unpickles a tokenizer"


class Touch:
    """Unpickling this creates its file: a refused pickle leaves no file behind."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (str(self.path), "w"))


def _hf_copy(built, tmp_path: Path) -> Path:
    return shutil.copytree(built("hf"), tmp_path / "hf")


def _write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _cut_after_pieces(data: bytes, pieces: int) -> bytes:
    """The model's first ``pieces`` pieces, cut exactly between two fields: a truncation protobuf itself accepts."""
    pos = 0
    for _ in range(pieces):
        for _field in ("tag", "length"):
            value = shift = 0
            while True:
                byte = data[pos]
                pos += 1
                value |= (byte & 0x7F) << shift
                shift += 7
                if byte < 0x80:
                    break
        pos += value
    return data[:pos]


def _deep_json() -> str:
    """A JSON object whose arrays nest deeper than Python's json module can recurse."""
    return '{"model": {"a": ' + "[" * 100_000 + "]" * 100_000 + "}}"


def _random_bytes(seed: int) -> bytes:
    return b"\x00" + random.Random(seed).randbytes(4095)


def _auto_map(built, tmp_path):
    folder = _hf_copy(built, tmp_path)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["auto_map"] = {"AutoTokenizer": ["tokenization_custom.CustomTokenizer", None]}
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return folder, CODE


def _config_auto_map(built, tmp_path):
    folder = _hf_copy(built, tmp_path)
    (folder / "config.json").write_text(json.dumps({"auto_map": {"AutoTokenizer": "modeling_custom.CustomTokenizer"}}))
    return folder, CODE


def _two_models(built, tmp_path):
    folder = tmp_path / "two"
    folder.mkdir()
    for name in ("a.model", "b.model"):
        shutil.copy(built("sentencepiece"), folder / name)
    return folder, "holds several sentencepiece models (a.model, b.model): give one of them"


REFUSALS = {
    "missing": lambda built, tmp: (tmp / "nowhere" / "tokenizer.model", "does not exist"),
    "empty-file": lambda built, tmp: (_write(tmp / "tokenizer.json", b""), "is empty (0 bytes)"),
    "pickle-by-content": lambda built, tmp: (_write(tmp / "tokenizer.model", pickle.dumps(Touch(tmp / "unpickled"), protocol=4)), PICKLE),
    "pickle-protocol-2": lambda built, tmp: (_write(tmp / "vocab", pickle.dumps({"a": 1}, protocol=2)), PICKLE),
    "pickle-by-name": lambda built, tmp: (_write(tmp / "tokenizer.pkl", '{"model": {}}'), PICKLE),
    "torch-file": lambda built, tmp: (_write(tmp / "tokenizer.pt", b"PK\x03\x04 a zip"), PICKLE),
    "python-file": lambda built, tmp: (_write(_hf_copy(built, tmp) / "tokenization_custom.py", "import os\n").parent, CODE),
    "auto-map": _auto_map,
    "config-auto-map": _config_auto_map,
    "truncated-model": lambda built, tmp: (
        _write(tmp / "tokenizer.model", built("sentencepiece").read_bytes()[: built("sentencepiece").stat().st_size // 2]),
        "is a truncated or corrupt sentencepiece model",
    ),
    "model-cut-between-pieces": lambda built, tmp: (
        _write(tmp / "tokenizer.model", _cut_after_pieces(built("sentencepiece").read_bytes(), 500)),
        "is a truncated or corrupt sentencepiece model",
    ),
    "random-bytes-named-model": lambda built, tmp: (
        _write(tmp / "spm.model", _random_bytes(1)),
        "is a truncated or corrupt sentencepiece model",
    ),
    "random-bytes": lambda built, tmp: (_write(tmp / "blob.dat", _random_bytes(2)), "is not a tokenizer trainproof reads"),
    "json-not-a-tokenizer": lambda built, tmp: (
        _write(tmp / "tokenizer.json", '{"a": 1}'),
        'is JSON but not a tokenizer.json (a JSON object with a "model" object)',
    ),
    "json-list": lambda built, tmp: (_write(tmp / "tokenizer.json", "[1, 2]"), "is JSON but not a tokenizer.json"),
    "not-json": lambda built, tmp: (_write(tmp / "tokenizer.json", '{"model": {"type": "BPE" x}}'), "is not valid JSON"),
    "json-cut-short": lambda built, tmp: (_write(tmp / "tokenizer.json", '{"model": {"type": "BPE",'), "is truncated"),
    "json-number-too-long": lambda built, tmp: (_write(tmp / "tokenizer.json", '{"model": {"x": ' + "9" * 5000 + "}}"), "has a number too large to read"),
    "not-utf8": lambda built, tmp: (_write(tmp / "tokenizer.json", b'{"model": "\xff\xfe"}'), "is not UTF-8 text"),
    "json-nested-too-deeply": lambda built, tmp: (_write(tmp / "tokenizer.json", _deep_json()), "is nested too deeply"),
    "json-tokenizers-refuses": lambda built, tmp: (
        _write(tmp / "tokenizer.json", '{"model": {"type": "Nonsense"}}'),
        "the tokenizers library cannot load",
    ),
    "config-given-as-the-file": lambda built, tmp: (
        _hf_copy(built, tmp) / "tokenizer_config.json",
        'is JSON but not a tokenizer.json (a JSON object with a "model" object): give the folder that holds it',
    ),
    "empty-folder": lambda built, tmp: (_write(tmp / "empty" / "README.md", "nothing").parent, "holds no tokenizer"),
    "two-models": _two_models,
    "hf-folder-broken": lambda built, tmp: (
        _write(_hf_copy(built, tmp) / "tokenizer.json", "no json here").parent,
        "transformers cannot load this tokenizer folder",
    ),
}
"""Inputs that must be refused: each makes its input in a fresh folder and names the words the refusal must say."""


@pytest.mark.parametrize("refusal", list(REFUSALS))
def test_refused_inputs_are_one_input_error(refusal, built, tmp_path):
    path, message = REFUSALS[refusal](built, tmp_path)
    with pytest.raises(InputError) as raised:
        load_tokenizer(path)
    assert message in raised.value.problem
    assert raised.value.path == str(path)
    assert "\n" not in str(raised.value)
    assert not (tmp_path / "unpickled").exists()


def test_a_corrupt_config_beside_the_tokenizer_is_blamed_by_name(built, tmp_path):
    folder = _hf_copy(built, tmp_path)
    (folder / "tokenizer_config.json").write_text("{")
    with pytest.raises(InputError) as raised:
        load_tokenizer(folder)
    assert raised.value.path == str(folder / "tokenizer_config.json")
    assert raised.value.problem.startswith("is truncated")


@pytest.mark.parametrize("name", ["tokenizer_config.json", "special_tokens_map.json"])
@pytest.mark.parametrize("given", ["file", "folder"])
def test_a_configuration_nested_too_deeply_is_blamed_by_name(built, tmp_path, name, given):
    """Beside a tokenizer.json, or in a folder: the one-line refusal of other malformed JSON, never a RecursionError."""
    folder = tmp_path / "tok"
    folder.mkdir()
    shutil.copy(built("bpe"), folder / "tokenizer.json")
    _write(folder / name, _deep_json())
    with pytest.raises(InputError) as raised:
        load_tokenizer(folder / "tokenizer.json" if given == "file" else folder)
    assert raised.value.path == str(folder / name)
    assert raised.value.problem == "is nested too deeply"


@pytest.mark.parametrize(
    ("variant", "package", "extra"),
    [("sentencepiece", "sentencepiece", "tokenizer"), ("bpe", "tokenizers", "tokenizer"), ("hf", "transformers", "hf")],
)
def test_a_missing_library_is_a_missing_dependency(built, monkeypatch, variant, package, extra):
    name, options = VARIANTS[variant]
    path = built(name, **options)
    monkeypatch.setitem(sys.modules, package, None)
    with pytest.raises(MissingDependencyError) as raised:
        load_tokenizer(path)
    assert (raised.value.package, raised.value.extra) == (package, extra)


def test_loading_a_folder_goes_offline(built, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    load_tokenizer(built("hf"))
    assert os.environ["HF_HUB_OFFLINE"] == "1"


def test_the_pieces_of_a_sparse_vocabulary_are_the_ids_it_has(tmp_path):
    """A tokenizer.json may give a piece any id: vocab_size counts the embedding rows up to it, pieces() only what is."""
    pytest.importorskip("tokenizers")
    vocab = {"\u2581a": 0, "\u2581b": 1, "c": 2, "<unk>": 4_294_967_295}
    spec = {"version": "1.0", "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"}}
    tokenizer = load_tokenizer(_write(tmp_path / "tokenizer.json", json.dumps(spec)))
    assert tokenizer.vocab_size == 4_294_967_296
    assert tokenizer.pieces() == {i: piece for piece, i in vocab.items()}


def test_the_pieces_of_every_tokenizer_are_its_piece_of_every_id(case):
    tokenizer = case.tokenizer
    assert tokenizer.pieces() == {i: tokenizer.piece(i) for i in range(tokenizer.vocab_size)}


# --- the package itself -------------------------------------------------------------------------------------


def test_importing_the_loader_imports_no_tokenizer_library():
    probe = "import sys, trainproof.tokenizer.load; print(sorted(m for m in sys.modules if m.split('.')[0] in {'sentencepiece', 'tokenizers', 'transformers'}))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO)
    assert result.stdout.strip() == "[]", result.stderr


def test_english_lines_are_printable_ascii_without_digits_and_unique():
    lines = build.english_lines()
    assert 3000 <= len(lines) <= 8000
    assert len(set(lines)) == len(lines)
    assert all(line.isascii() and line.isprintable() and not any(c.isdigit() for c in line) for line in lines)


def test_builders_are_deterministic(built, tmp_path):
    assert build.sentencepiece_model(tmp_path / "sp").read_bytes() == built("sentencepiece").read_bytes()
    assert build.bpe_tokenizer_json(tmp_path / "bpe").read_bytes() == built("bpe").read_bytes()


def test_a_sentencepiece_tokenizer_built_from_a_processor_alone_finds_its_user_defined_pieces(tmp_path):
    """Without the ids the loader walked, the tokenizer reads them from the processor's own serialised model."""
    import sentencepiece

    path = build.sentencepiece_model(tmp_path, user_defined=("<sep>", "[laugh]"))
    processor = sentencepiece.SentencePieceProcessor(model_file=str(path))
    assert SentencePieceTokenizer(str(path), processor).matched == {"<sep>", "[laugh]"}
    assert SentencePieceTokenizer(str(path), processor).matched == load_tokenizer(str(path)).matched


def test_a_folders_chat_template_is_named_by_the_file_it_was_read_from(built, tmp_path):
    """Where transformers took the template from: a chat_template.jinja, else the chat_template of tokenizer_config.json
    (what transformers 4.x writes); none for a tokenizer without one."""
    pytest.importorskip("transformers")
    folder = shutil.copytree(built("hf"), tmp_path / "hf")
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    template = load_tokenizer(folder).chat_template
    (folder / "chat_template.jinja").unlink(missing_ok=True)
    config["chat_template"] = template
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    in_config = load_tokenizer(folder)
    assert (in_config.chat_template, in_config.chat_template_file) == (template, str(folder / "tokenizer_config.json"))
    crlf = template.replace("{% endfor %}", "{% endfor %}\r\n")
    (folder / "chat_template.jinja").write_bytes(crlf.encode("utf-8"))  # read in text mode: transformers sees "\n"
    del config["chat_template"]
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    in_jinja = load_tokenizer(folder)
    assert "\r" not in in_jinja.chat_template
    assert "\n" in in_jinja.chat_template
    assert in_jinja.chat_template_file == str(folder / "chat_template.jinja")
    assert load_tokenizer(built("bpe")).chat_template_file is None


def test_wrapping_is_what_the_librarys_own_call_puts_around_a_text(case, built):
    """What a trainer's ``tokenizer(text)`` adds (TRL counts a row of strings so): the pipeline's bos for a tokenizer.json
    and a transformers folder, nothing for a sentencepiece model unless asked."""
    tokenizer = case.tokenizer
    text = "Return the list of words."
    (plain,) = tokenizer.encode_batch([text])
    if case.name == "sentencepiece":
        assert tokenizer.wrapping == (0, 0)
        return
    if case.name == "hf":
        from transformers import AutoTokenizer

        own = list(AutoTokenizer.from_pretrained(str(built(case.name, **case.options)), local_files_only=True)(text)["input_ids"])
    else:
        from tokenizers import Tokenizer as Pipeline

        own = Pipeline.from_file(str(built(case.name, **case.options))).encode(text).ids
    before, after = tokenizer.wrapping
    assert own == own[:before] + plain + own[len(own) - after :] and len(own) == before + len(plain) + after
    if case.name == "hf":  # its configuration asks for bos (add_bos_token), as a Llama folder's does
        assert (before, after) == (1, 0) and own[0] == tokenizer.specials.bos
    else:  # the bare tokenizer.json built here has no post-processor
        assert (before, after) == (0, 0)


def test_a_closing_eos_the_call_appends_is_not_counted_as_wrapping(built, tmp_path):
    """A trainer appends the eos once whether the call put it there or not: "<s> $A </s>" wraps a text in one token."""
    pytest.importorskip("tokenizers")
    from tokenizers import Tokenizer as Pipeline
    from tokenizers import processors

    from tests.tokenizer.build import BOS, EOS

    pipeline = Pipeline.from_file(str(built("bpe")))
    pipeline.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", BOS), ("</s>", EOS)])
    path = tmp_path / "tokenizer.json"
    pipeline.save(str(path))
    tokenizer = load_tokenizer(path)
    assert tokenizer.specials.eos == EOS
    assert tokenizer.wrapping == (1, 0)
