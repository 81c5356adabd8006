"""Property-based fuzz of the surfaces ``data``, ``tokenizer`` and ``text`` open to files from a pull request (issue 27).

The same invariant as :mod:`tests.test_fuzz`, on the new surfaces: speech manifests of every layout (NeMo JSONL,
CSV, LJSpeech, Kaldi, Lhotse, Lhotse Shar, a folder of clips) with hostile values, deep nesting, many keys, URIs that
try to choose an endpoint or a scheme, and transcripts, lists and clips that are symlinks to ``.git/config`` or ``/proc/self/environ``,
FIFOs or ``/dev/zero``; the per-clip cache's rows, forged; tokenizer folders whose files are FIFOs, links to
``/dev/zero``, sparse giants, broken JSON or hostile chat templates. Whatever the input:

* the CLI exits 0, 1 or 2, never says "internal error", never prints a traceback or a warning, prints stderr as whole
  ``trainproof: ...`` lines (exactly one on exit 2), and no line of its output can be read as a workflow command;
* it changes nothing in its working folder but the outputs it was asked for (and the cache folder it was given);
* the token in ``.git/config`` reaches no output unless ``--follow-links`` asked for links to be read;
* (tokenizer folders and chat templates, in a subprocess with a 3 GiB address-space limit) it ends in bounded time.

Budgets follow the hypothesis profile of ``tests/conftest.py`` (``ci`` by default, ``long`` 20 times as many).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

pytest.importorskip("hypothesis")
sf = pytest.importorskip("soundfile")
np = pytest.importorskip("numpy")
pytest.importorskip("pandas")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.helpers import REPO  # noqa: E402
from tests.test_fuzz import HOSTILE_JSON, HOSTILE_TEXT, changed, injection_problems, is_utf8, mutated_bytes, snapshot, to_bytes  # noqa: E402
from trainproof.cli import main  # noqa: E402

SECRET = "ghs_tp27FuzzTokenNeverPrinted"
GIT_CONFIG = f'[core]\n\tbare = false\n[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic {SECRET}\n'
CLI_SECONDS = 30.0
"""One in-process run on a dataset of a few clips (generous: it tells a verdict from a hang, not a speed)."""
SUBPROCESS_SECONDS = 120.0
"""One subprocess run that imports transformers (a few seconds here), with the template bounds' 60 s at most."""
ADDRESS_SPACE = 3 * 2**30


def budget(examples: int) -> settings:
    """``examples`` under the ci profile (500 examples a test), scaled like it under another."""
    return settings(settings.default, max_examples=max(1, examples * settings.default.max_examples // 500), suppress_health_check=list(HealthCheck))


def _wav(seconds: float, seed: int) -> bytes:
    rate = 16000
    t = np.arange(int(rate * seconds)) / rate
    tone = 0.3 * np.sin(2 * np.pi * (180 + 40 * seed) * t) * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t))
    out = io.BytesIO()
    sf.write(out, tone.astype("float32"), rate, format="WAV", subtype="PCM_16")
    return out.getvalue()


CLIPS = {"a.wav": _wav(0.6, 0), "b.wav": _wav(0.8, 1)}
TEXTS = {"a.wav": "the first clip says a few words", "b.wav": "and the second one says others"}

LINK_TARGETS = ("../.git/config", "../../.git/config", "/proc/self/environ", "/dev/zero", "/dev/null", "missing.wav", ".")
"""Where a committed symlink in the dataset may point (relative ones from in/ and from in/wavs/)."""

REFUSED_URIS = (
    "s3://b/x.wav?endpoint_override=127.0.0.1:9&scheme=http", "gs://b/x.wav?endpoint_override=127.0.0.1:9", "s3://b/x.wav#frag",
    "s3://user:pw@b/x.wav", "s3://b:9/x.wav", "abfs://c@acct.dfs.core.windows.net/x.wav", "hdfs://host:8020/x.wav",
    "http://127.0.0.1:9/x.wav", "mock://x.wav", "s3://b/../x.wav", "s3://b/%ff.wav", "file://host/etc/passwd", "s3://b/a\x1b[2J.wav",
    "file:///proc/self/environ", "file:///dev/zero",
)  # fmt: skip
"""URIs a manifest may write that are read without asking any store (refused, or a local file): never the network."""


@dataclass
class Dataset:
    """A dataset to write under ``in/``: file contents, symlinks (``("link", target)``), FIFOs (``"fifo"``)."""

    layout: str
    files: dict[str, object] = field(default_factory=dict)
    target: str = "in"


def _line_value(draw: st.DrawFn, value: str, hostile: tuple[str, ...]) -> str:
    return draw(st.sampled_from(hostile)) if draw(st.integers(0, 4)) == 0 else value


@st.composite
def audio_paths(draw: st.DrawFn, name: str, layout: str) -> str:
    """How a manifest names a clip: as it is, a refused URI, a file:// URI, or a hostile path."""
    how = draw(st.sampled_from(("plain", "plain", "plain", "uri", "file-uri", "odd")))
    if how == "uri":
        return draw(st.sampled_from(REFUSED_URIS))
    if how == "file-uri":
        return (REPO / "tests" / "no-such-clip.wav").as_uri() if draw(st.booleans()) else "file:///dev/null"
    if how == "odd":
        return draw(st.sampled_from(("", " ", "../" * 30 + "etc/passwd", "/dev/zero", "in/", "x" * 5000, "a\x00b.wav", "\udc80.wav", "-x.wav")))
    return name if layout in ("ljspeech", "folder") else f"in/{name}"


@st.composite
def nemo_manifest(draw: st.DrawFn) -> bytes:
    lines = []
    for name in CLIPS:
        record = {"audio_filepath": draw(audio_paths(name, "nemo")), "text": TEXTS[name], "duration": 0.7}
        if draw(st.booleans()):
            record["offset"] = 0.0
        text = json.dumps(record)
        for key in list(record):
            raw = json.dumps(record[key])
            text = text.replace(f'"{key}": {raw}', f'"{key}": {_line_value(draw, raw, HOSTILE_JSON)}', 1)
        lines.append(text)
    extra = draw(st.sampled_from(("", "", "deep", "keys", "array", "objects")))
    if extra == "deep":
        lines.append("[" * draw(st.sampled_from((300, 5000, 50000))))
    elif extra == "keys":
        lines += [json.dumps({"audio_filepath": "in/a.wav", "text": "more", f"k{i}": i}) for i in range(300)]
    elif extra == "array":
        lines.append(json.dumps([{"audio_filepath": "in/a.wav", "text": "x"}] * 3))
    elif extra == "objects":
        lines.append(json.dumps({"audio_filepath": "in/a.wav", "text": "x", "nested": [{}] * 250}))
    return draw(mutated_bytes("\n".join(lines).encode() + b"\n"))


@st.composite
def lhotse_manifests(draw: st.DrawFn) -> dict[str, bytes]:
    """A Lhotse split as a recipe writes it: recordings and supervisions, or cuts; gzipped or not, gzip cut short or
    corrupted, with hostile values, sources of types trainproof cannot read, and unknown recording ids."""
    recordings, supervisions, cuts = [], [], []
    for i, name in enumerate(CLIPS):
        kind = draw(st.sampled_from(("file", "file", "file", "url", "memory", "command", "shar", "none")))
        sources = [] if kind == "none" else [{"type": kind, "channels": [0], "source": draw(audio_paths(name, "lhotse"))}]
        recording = {"id": f"r{i}", "sources": sources, "sampling_rate": 16000, "num_samples": 11200, "duration": 0.7, "channel_ids": [0]}
        supervision = {"id": f"s{i}", "recording_id": draw(st.sampled_from((f"r{i}", f"r{i}", "nowhere"))), "start": 0.0, "duration": 0.7, "channel": 0, "text": TEXTS[name], "speaker": "x"}
        text = json.dumps(supervision)
        for key in ("start", "duration", "text"):
            raw = json.dumps(supervision[key])
            text = text.replace(f'"{key}": {raw}', f'"{key}": {_line_value(draw, raw, HOSTILE_JSON)}', 1)
        recordings.append(json.dumps(recording))
        supervisions.append(text)
        cuts.append(json.dumps({"id": f"c{i}", "start": 0.0, "duration": 0.7, "channel": 0, "supervisions": [json.loads(text)] if text.startswith("{") and _loads_ok(text) else [], "recording": recording, "type": draw(st.sampled_from(("MonoCut", "MonoCut", "MixedCut")))}))
    gz = draw(st.booleans())
    suffix = ".jsonl.gz" if gz else ".jsonl"
    files: dict[str, bytes] = {}
    chosen = {"recordings": recordings, "supervisions": supervisions} if draw(st.booleans()) else {"cuts": cuts}
    for kind, lines in chosen.items():
        data = draw(mutated_bytes("\n".join(lines).encode() + b"\n"))
        if gz:
            data = gzip.compress(data, mtime=0)
            if draw(st.integers(0, 3)) == 0:
                data = data[: draw(st.integers(0, len(data)))]  # a gzip stream that ends early
            elif draw(st.integers(0, 3)) == 0:
                data = draw(mutated_bytes(data))  # a corrupt stream
        files[f"c_{kind}_train{suffix}"] = data
    return files


@st.composite
def shar_shards(draw: st.DrawFn) -> dict[str, bytes]:
    """A Lhotse Shar shard as ``to_shar`` writes it (a cut shard and its recording tar of audio and metadata pairs),
    with hostile cut ids and member names (``../``, absolute, control characters), members missing or out of order,
    and either file cut short or corrupted."""
    cuts, pairs = [], []
    for i, name in enumerate(CLIPS):
        ident = draw(st.sampled_from((f"c{i}", f"c{i}", "../../.git/config", "/etc/passwd", "a\x1b[2Jb", "::error::x", "")))
        text = _line_value(draw, TEXTS[name], HOSTILE_TEXT)
        supervision = {"id": f"s{i}", "recording_id": f"r{i}", "start": 0.0, "duration": 0.7, "channel": 0, "text": text}
        recording = {"id": f"r{i}", "sources": [{"type": "shar", "channels": [0], "source": ""}], "sampling_rate": 16000, "num_samples": 11200, "duration": 0.7}
        cuts.append(json.dumps({"id": ident, "start": 0, "duration": 0.7, "channel": 0, "supervisions": [supervision], "recording": recording, "type": "MonoCut"}))
        data = (f"{ident}.nodata", b"") if draw(st.integers(0, 5)) == 0 else (f"{ident}.wav", CLIPS[name])
        pairs.append([data, (f"{ident}.json", json.dumps(recording).encode())])
    pairs = draw(st.permutations(pairs))
    members = [member for pair in pairs for member in pair][: draw(st.sampled_from((None, None, -1, 1)))]
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for member, data in members:
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    files = {"cuts.000000.jsonl.gz": gzip.compress("\n".join(cuts).encode() + b"\n", mtime=0), "recording.000000.tar": archive.getvalue()}
    for name, data in list(files.items()):
        how = draw(st.integers(0, 5))
        if how == 0:
            files[name] = data[: draw(st.integers(0, len(data)))]  # cut short (a gzip that ends early, a tar cut mid-member)
        elif how == 1:
            files[name] = draw(mutated_bytes(data))
    return files


def _loads_ok(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):  # HOSTILE_JSON nests past the parser's depth
        return False
    return True


@st.composite
def datasets(draw: st.DrawFn) -> Dataset:
    layout = draw(st.sampled_from(("nemo", "nemo", "csv", "ljspeech", "kaldi", "folder", "lhotse", "shar")))
    data = Dataset(layout)
    clip_folder = "wavs/" if layout == "ljspeech" else ""
    for name, wav in CLIPS.items():
        data.files[clip_folder + name] = wav
    if layout == "nemo":
        data.files["manifest.jsonl"] = draw(nemo_manifest())
        data.target = "in/manifest.jsonl"
    elif layout == "csv":
        rows = ["path,text,duration"] + [f"{draw(audio_paths(n, layout))},{_line_value(draw, TEXTS[n], HOSTILE_TEXT)},{_line_value(draw, '0.7', HOSTILE_TEXT)}" for n in CLIPS]
        data.files["manifest.csv"] = draw(mutated_bytes(to_bytes("\n".join(rows) + "\n")))
        data.target = "in/manifest.csv"
    elif layout == "ljspeech":
        rows = [f"{_line_value(draw, n[:-4], HOSTILE_TEXT)}|{_line_value(draw, TEXTS[n], HOSTILE_TEXT)}|{TEXTS[n]}" for n in CLIPS]
        data.files["metadata.csv"] = draw(mutated_bytes(to_bytes("\n".join(rows) + "\n")))
    elif layout == "lhotse":
        manifests = draw(lhotse_manifests())
        data.files.update(manifests)
        data.target = "in/" + draw(st.sampled_from(sorted(manifests))) if draw(st.booleans()) else "in"
    elif layout == "shar":
        shards = draw(shar_shards())
        data.files.update(shards)
        data.target = "in/" + draw(st.sampled_from(sorted(shards))) if draw(st.booleans()) else "in"
    elif layout == "kaldi":
        lists = {
            "wav.scp": [f"u{i} {draw(audio_paths(n, layout))}" for i, n in enumerate(CLIPS)],
            "text": [f"u{i} {_line_value(draw, TEXTS[n], HOSTILE_TEXT)}" for i, n in enumerate(CLIPS)],
            "utt2spk": [f"u{i} s{i}" for i in range(len(CLIPS))],
        }
        if draw(st.booleans()):
            lists["segments"] = [f"u{i} u{i} {_line_value(draw, '0.0', HOSTILE_TEXT)} {_line_value(draw, '0.5', HOSTILE_TEXT)}" for i in range(len(CLIPS))]
        for name, rows in lists.items():
            data.files[name] = draw(mutated_bytes(to_bytes("\n".join(rows) + "\n")))
    else:
        for name in CLIPS:
            data.files[name[:-4] + ".txt"] = to_bytes(_line_value(draw, TEXTS[name], HOSTILE_TEXT))
    if draw(st.integers(0, 5)) == 0:
        # every transcript and list a link to .git/config: where a regression that follows links quotes the token (two
        # transcripts alike, a wav.scp whose lines name missing clips); one link among others rarely shows it
        for name in data.files:
            if not name.endswith(".wav"):
                data.files[name] = ("link", "../.git/config")
        return data
    # committed links and special files where a transcript, a list, the manifest or a clip should be
    for _ in range(draw(st.sampled_from((0, 0, 1, 1, 2)))):
        victim = draw(st.sampled_from(sorted(data.files)))
        data.files[victim] = "fifo" if draw(st.integers(0, 5)) == 0 else ("link", draw(st.sampled_from(LINK_TARGETS)))
    return data


def write_dataset(data: Dataset, root: Path) -> None:
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text(GIT_CONFIG)
    for relative, content in data.files.items():
        path = root / "in" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if content == "fifo":
            os.mkfifo(path)
        elif isinstance(content, tuple):
            os.symlink(content[1], path)
        else:
            path.write_bytes(content)  # type: ignore[arg-type]


@dataclass
class Call:
    argv: list[str]
    outputs: list[str]
    summary: str | None = None
    cache: str | None = None


class Hung(Exception):
    """An in-process run still going at its guard's deadline (a wait on a FIFO, a loop without end)."""


@contextmanager
def hang_guard(seconds: float) -> Iterator[None]:
    """Raise :class:`Hung` in this thread after ``seconds`` (a timer signal: it also ends a wait in ``open()``), so that
    a hang fails the example instead of the whole run."""

    def expire(signum: int, frame: object) -> None:
        raise Hung(f"still running after {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def check_in_process(argv: list[str], root: Path, call: Call, capsys) -> None:
    """Run ``trainproof`` in-process in ``root`` and hold it to the invariant (see the module doc)."""
    named = [*call.outputs, *([call.summary] if call.summary else [])]  # what it may write: the outputs, the job summary
    capsys.readouterr()
    here = os.getcwd()
    saved = os.environ.pop("GITHUB_STEP_SUMMARY", None)
    try:
        if call.summary:
            os.environ["GITHUB_STEP_SUMMARY"] = str(root / call.summary)
        os.chdir(root)
        before = snapshot(root)
        started = time.monotonic()
        with warnings.catch_warnings(record=True) as caught, hang_guard(2 * CLI_SECONDS):
            warnings.simplefilter("always")
            try:
                code = main(argv)
            except SystemExit as exit:
                code = exit.code
        elapsed = time.monotonic() - started
        out, err = capsys.readouterr()
        if "internal error" in err:
            main(["--debug", *argv])  # raise it, so that hypothesis shrinks and reports it
        after = snapshot(root)
        written = "".join((root / o).read_text(errors="replace") for o in named if (root / o).is_file())
    finally:
        os.chdir(here)
        os.environ.pop("GITHUB_STEP_SUMMARY", None)
        if saved is not None:
            os.environ["GITHUB_STEP_SUMMARY"] = saved
    assert code in (0, 1, 2), (code, err)
    assert is_utf8(out) and is_utf8(err)  # noqa: PT018 -- both streams, one reason
    assert "internal error" not in out + err, err
    assert "Traceback" not in out + err, err
    quiet = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)
    shown = [str(w.message) for w in caught if not issubclass(w.category, quiet)]
    assert not shown, f"warnings reach stderr: {shown}"
    lines = [line for line in err.splitlines() if line]
    assert all(line.startswith("trainproof: ") for line in lines), err
    if code == 2:
        assert sum(line.startswith("trainproof: error: ") for line in lines) == 1, err
    assert not injection_problems(err, annotations_allowed=False), err
    assert not injection_problems(out, annotations_allowed="--github" in argv), out[-2000:]
    assert elapsed < CLI_SECONDS, f"took {elapsed:.1f} s"
    if "--follow-links" not in argv:
        assert SECRET not in out + err + written, "the token behind a committed link reached a report"
    touched = {p for p in changed(before, after) if not (call.cache and (p == call.cache or p.startswith(call.cache + os.sep)))}
    assert touched <= set(named), f"created or changed outside the named outputs: {sorted(touched - set(named))}"


@st.composite
def data_calls(draw: st.DrawFn) -> tuple[Dataset, Call]:
    data = draw(datasets())
    argv = ["data", data.target, "--jobs", "1", "--json-file", "out/report.json", "--sarif", "out/report.sarif"]
    cache = draw(st.sampled_from((None, "cache")))
    argv += ["--no-cache"] if cache is None else ["--cache-dir", cache]
    argv += draw(st.lists(st.sampled_from(("--github", "--follow-links", "--json", "--fail-on=warn")), unique=True, max_size=2))
    summary = "out/summary.md" if "--github" in argv else None
    return data, Call(argv, ["out/report.json", "out/report.sarif"], summary, cache)


@budget(120)
@given(case=data_calls())
def test_data_on_hostile_datasets_exits_cleanly_and_leaks_nothing(case, capsys):
    data, call = case
    with tempfile.TemporaryDirectory(prefix="tp-fuzz-data-") as tmp:
        root = Path(tmp)
        write_dataset(data, root)
        (root / "out").mkdir()
        check_in_process(call.argv, root, call, capsys)


# --- cache rows -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_rows(tmp_path_factory) -> list[bytes]:
    """The packed rows a real run writes, to forge rows from."""
    import sqlite3

    root = tmp_path_factory.mktemp("rows")
    for name, wav in CLIPS.items():
        (root / name).write_bytes(wav)
        (root / (name[:-4] + ".txt")).write_text(TEXTS[name])
    here = os.getcwd()
    try:
        os.chdir(root)
        main(["data", ".", "--jobs", "1", "--cache-dir", "cache", "--json"])
    finally:
        os.chdir(here)
    with sqlite3.connect(root / "cache" / "clips.sqlite3") as db:
        return [row[0] for row in db.execute("SELECT packed FROM clips")]


@budget(40)
@given(data=st.data())
def test_data_with_forged_cache_rows_exits_cleanly(real_rows, data, capsys):
    """Rows keyed to the very clips (path, size, mtime, version), with hostile bytes and texts: a miss or a record,
    never an error; the cache stays the run's own."""
    import sqlite3

    from tests.datasets.test_cache import hostile_row
    from trainproof.data.cache import Cache, CacheKey
    from trainproof.data.model import ANALYSIS_VERSION

    rows = data.draw(st.lists(hostile_row(real_rows), min_size=1, max_size=2))
    with tempfile.TemporaryDirectory(prefix="tp-fuzz-cache-") as tmp:
        root = Path(tmp)
        for name, wav in CLIPS.items():
            (root / name).write_bytes(wav)
            (root / (name[:-4] + ".txt")).write_text(TEXTS[name])
        with Cache(root / "cache") as cache:  # a real cache, then rows forged under the clips' own keys
            cache.put_packed([])
        with sqlite3.connect(root / "cache" / "clips.sqlite3") as db:
            for name, (packed, texts) in zip(CLIPS, rows):
                key = CacheKey.of(str(root / name), os.stat(root / name))
                db.execute("INSERT OR REPLACE INTO clips VALUES (?, ?, ?, ?, ?, ?, ?)", (key.path, key.segment, key.size, key.mtime_ns, ANALYSIS_VERSION, packed, texts))
        (root / "out").mkdir()
        call = Call(["data", ".", "--jobs", "1", "--cache-dir", "cache", "--json-file", "out/report.json"], ["out/report.json"], cache="cache")
        check_in_process(call.argv, root, call, capsys)


# --- tokenizer folders and chat templates, in a subprocess ------------------------------------

TEMPLATE_PARTS = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{{ eos_token }}{% endfor %}",
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "{{ 'x' * 3000000000 }}",
    "{% set ns = namespace(v='xy') %}{% for i in range(60) %}{% set ns.v = ns.v ~ ns.v %}{% endfor %}{{ ns.v|length }}",
    "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
    "{{ 2 ** 100000000 }}",
    "{{ raise_exception('this template refuses every conversation') }}",
    "{% if messages[0]['role'] != 'system' %}{{ raise_exception('a system turn first') }}{% endif %}",
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{% for m in messages %}{{ m['content'] * 100000000 }}{% endfor %}",
    "{{ range(100000)|list|join(',') }}",
    "{{ messages|tojson }}",
    "{%",
    "\n::error::INJECTED\n\x1b[2J",
)  # fmt: skip
"""Pieces of a chat template: a plain one, and loops, giant strings, recursion, refusals, escapes from the sandbox."""

FOLDER_FILES = ("tokenizer_config.json", "special_tokens_map.json", "tokenizer.json", "config.json", "chat_template.jinja")


@dataclass
class Folder:
    """Changes to a real HuggingFace tokenizer folder: a template, and files replaced."""

    template: str | None
    replaced: dict[str, object]
    command: str


@st.composite
def folders(draw: st.DrawFn) -> Folder:
    template = None
    if draw(st.booleans()):
        template = "".join(draw(st.lists(st.sampled_from(TEMPLATE_PARTS), min_size=1, max_size=3)))
    replaced: dict[str, object] = {}
    for name in draw(st.lists(st.sampled_from(FOLDER_FILES), unique=True, max_size=2)):
        replaced[name] = draw(
            st.sampled_from(("fifo", ("link", "/dev/zero"), ("link", "../.git/config"), "sparse", b"{", b"[" * 100000, b"\xff\xfe", b'{"auto_map": {"AutoTokenizer": "x.Tok"}}', "flip"))
        )
    return Folder(template, replaced, draw(st.sampled_from(("text", "tokenizer"))))


@pytest.fixture(scope="module")
def hf_folder(tmp_path_factory) -> Path:
    pytest.importorskip("transformers")
    from tests.tokenizer.build import hf_folder as build

    return build(tmp_path_factory.mktemp("hf"))


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def run_bounded(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``python -m trainproof ARGV`` in ``cwd`` under the address-space limit, ``env`` set first in its environment
    (first in ``/proc/self/environ`` too, where a quotation capped at its start would show it); the test fails past
    SUBPROCESS_SECONDS."""
    environ = {**env, **os.environ, **env, "PYTHONPATH": str(REPO)}
    if "GITHUB_STEP_SUMMARY" not in env:
        environ.pop("GITHUB_STEP_SUMMARY", None)
    try:
        return subprocess.run(
            [sys.executable, "-m", "trainproof", *argv], cwd=cwd, env=environ, capture_output=True, text=True,
            errors="backslashreplace", timeout=SUBPROCESS_SECONDS, preexec_fn=_limit,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"trainproof {' '.join(argv)} did not end in {SUBPROCESS_SECONDS:.0f} s")


def check_ended(done: subprocess.CompletedProcess[str], codes: set[int], written: str = "") -> None:
    """The invariant (see the module doc) on a subprocess run whose outputs hold ``written``."""
    out, err = done.stdout, done.stderr
    assert done.returncode in codes, (done.returncode, err[-2000:])
    assert "Traceback" not in out + err, err[-2000:]
    assert "internal error" not in err, err[-2000:]
    assert all(line.startswith("trainproof: ") for line in err.splitlines() if line), err[-2000:]
    if done.returncode == 2:
        assert err.count("trainproof: error: ") == 1, err[-2000:]
    assert not injection_problems(err, annotations_allowed=False), err[-2000:]
    assert not injection_problems(out, annotations_allowed="--github" in done.args), out[-2000:]
    assert SECRET not in out + err + written


def write_folder(case: Folder, source: Path, root: Path) -> Path:
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text(GIT_CONFIG)
    tok = root / "tok"
    shutil.copytree(source, tok)
    if case.template is not None:
        config = json.loads((tok / "tokenizer_config.json").read_text())
        config["chat_template"] = case.template
        (tok / "tokenizer_config.json").write_text(json.dumps(config))
    for name, how in case.replaced.items():
        path = tok / name
        original = path.read_bytes() if path.is_file() else b"{}"
        path.unlink(missing_ok=True)
        if how == "fifo":
            os.mkfifo(path)
        elif isinstance(how, tuple):
            os.symlink(how[1], path)
        elif how == "sparse":
            with path.open("wb") as handle:
                handle.truncate(2 * 2**30)
        elif how == "flip":
            path.write_bytes(original[: len(original) // 2] + b"\x00\xff" + original[len(original) // 2 + 2 :])
        else:
            path.write_bytes(how)  # type: ignore[arg-type]
    chat = [{"messages": [{"role": "user", "content": f"question {i} about tokens"}, {"role": "assistant", "content": f"answer {i}"}]} for i in range(6)]
    (root / "chat.jsonl").write_text("".join(json.dumps(row) + "\n" for row in chat))
    (root / "sample.txt").write_text("".join(f"a line of sample text number {i}\n" for i in range(30)))
    return tok


@budget(14)
@given(case=folders())
def test_tokenizer_and_text_on_hostile_tokenizer_folders_end_cleanly_and_bounded(hf_folder, case):
    with tempfile.TemporaryDirectory(prefix="tp-fuzz-tok-") as tmp:
        root = Path(tmp)
        write_folder(case, hf_folder, root)
        (root / "out").mkdir()
        if case.command == "text":
            argv = ["text", "--tokenizer", "tok", "--max-len", "64", "--json-file", "out/report.json", "--", "chat.jsonl"]
        else:
            argv = ["tokenizer", "--json-file", "out/report.json", "--", "tok", "sample.txt"]
        before = snapshot(root)
        done = run_bounded(argv, root, {"HF_HUB_OFFLINE": "1"})
        written = (root / "out" / "report.json").read_text() if (root / "out" / "report.json").is_file() else ""
        touched = changed(before, snapshot(root))
    check_ended(done, {0, 1, 2}, written)
    assert touched <= {"out/report.json"}, sorted(touched)


# --- bounded memory and time, in a subprocess -------------------------------------------------


def _deep_line(root: Path) -> list[str]:
    (root / "in").mkdir()
    (root / "in" / "a.wav").write_bytes(CLIPS["a.wav"])
    nested = '{"audio_filepath": "in/a.wav", "text": "nested", "x": ' + "[" * 50_000 + "]" * 50_000 + "}"
    (root / "in" / "m.jsonl").write_text(json.dumps({"audio_filepath": "in/a.wav", "text": "one clip"}) + "\n" + nested + "\n")
    return ["data", "in/m.jsonl", "--no-cache"]


def _new_key_per_line(root: Path) -> list[str]:
    (root / "in").mkdir()
    (root / "in" / "a.wav").write_bytes(CLIPS["a.wav"])
    lines = (json.dumps({"audio_filepath": "in/a.wav", "text": f"line {i}", f"key_{i}": i}) for i in range(20_000))
    (root / "in" / "m.jsonl").write_text("\n".join(lines) + "\n")
    return ["data", "in/m.jsonl", "--no-cache"]


def _linked_secrets(root: Path) -> list[str]:
    """Two transcripts linked to .git/config and two to /proc/self/environ (its first variable the AWS secret): were
    the links followed, each pair would be a TP-DATA-DUPLICATE-TEXT quoting the token."""
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text(GIT_CONFIG)
    (root / "in").mkdir()
    for name, wav, target in (("a", "a.wav", "../.git/config"), ("b", "b.wav", "../.git/config"), ("c", "a.wav", "/proc/self/environ"), ("d", "b.wav", "/proc/self/environ")):
        (root / "in" / f"{name}.wav").write_bytes(CLIPS[wav])
        os.symlink(target, root / "in" / f"{name}.txt")
    return ["data", "in", "--no-cache", "--github"]


def _endpoint_uris(root: Path) -> list[str]:
    (root / "in").mkdir()
    lines = [json.dumps({"audio_filepath": f"s3://bucket{i}/x.wav?endpoint_override=127.0.0.1:9&scheme=http", "text": "x"}) for i in range(50)]
    (root / "in" / "m.jsonl").write_text("\n".join(lines) + "\n")
    return ["data", "in/m.jsonl", "--no-cache"]


BOUNDED = {
    "a NeMo line nested 50,000 deep (a crash of Arrow's parser)": (_deep_line, {0, 1, 2}),
    "a new key on each of 20,000 lines (3.4 GB in Arrow)": (_new_key_per_line, {0, 1, 2}),
    "transcripts linked to .git/config and /proc/self/environ": (_linked_secrets, {2}),
    "50 buckets each naming its own endpoint": (_endpoint_uris, {1}),
}
"""Hostile datasets that cost a crash, gigabytes or minutes before issue 27, and the exit codes they may end in. (The
decoding cap, the store timeouts and the tokenizer bounds have tables of their own: tests/datasets/test_hostile_audio.py,
test_uri_hostile.py, tests/tokenizer/test_chat_template_bounds.py and test_hostile_inputs.py.)"""


@pytest.mark.parametrize("name", list(BOUNDED))
def test_hostile_datasets_end_in_bounded_memory_and_time(name: str, tmp_path: Path):
    prepare, expected = BOUNDED[name]
    work = tmp_path / "work"
    work.mkdir()
    argv = prepare(work)
    summary = tmp_path / "summary.md"  # the job summary --github appends to, outside the folder that must not change
    before = snapshot(work)
    done = run_bounded(argv, work, {"AWS_SECRET_ACCESS_KEY": SECRET, "AWS_ACCESS_KEY_ID": "AKIAFUZZ", "GITHUB_STEP_SUMMARY": str(summary)})
    check_ended(done, expected, summary.read_text() if summary.is_file() else "")
    assert not changed(before, snapshot(work)), "wrote into its working folder"
