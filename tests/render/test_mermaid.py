"""The Mermaid charts of the markdown comment: what they plot, how user strings are spelled, and every block rendered
by the ``mermaid`` package itself in headless Chromium, with no parse error.

The rendering test needs Chromium (Debian's ``chromium``) and mermaid's browser bundle, which ``.ci/run`` installs
with npm into ``.ci/node`` (or give its path in ``TRAINPROOF_MERMAID_JS``); without either it is skipped, saying which.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import CORPUS, REPO, decaying, hf_entries, noisy, write_hf_state
from trainproof.commands import judge, judge_compare, judge_epoch
from trainproof.render import render
from trainproof.render.markdown import MAX_CHARS
from trainproof.render.mermaid import MAX_POINTS, quoted, resample

BLOCK = re.compile(r"```mermaid\n(.*?)\n```", re.S)
HOSTILE_NAMES = (
    'run "quoted" \\ back\\slash [bracket] {brace}',
    "日本語の実験 — ünïcödé",
    "%%{init: {'theme': 'forest'}}%% #quot; x; y --> z",
    "<script>alert(1)</script> `tick` ```fence",
)


def blocks_of(markdown: str) -> list[str]:
    return BLOCK.findall(markdown)


def write_state(path: Path, entries: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_hf_state(path, entries)


def hot_run(folder: Path, eval_name: str = "eval_loss") -> Path:
    loss = [1.4, 3.3, 24.2, 26.4, 20.1] + noisy(decaying(55, 9.0, 7.5), 0.1).tolist()
    entries = hf_entries(loss)
    entries += [{"step": s, eval_name: 5.0 - s / 100, "epoch": s / 300} for s in (100, 200, 300)]
    return write_state(folder / "trainer_state.json", entries)


# --- what is plotted ---------------------------------------------------------------------------------------------


def test_resampling_averages_around_each_point_and_fills_gaps_between_them():
    steps = np.array([0, 1, 2, 10])
    values = np.array([1.0, 3.0, np.nan, 10.0])
    got = resample(steps, values, 0, 10, 3)  # points at 0, 5, 10: 0 and 1 average at 0, nothing near 5, 10 at 10
    assert got.tolist() == [2.0, 6.0, 10.0]


def test_a_run_gives_its_loss_and_its_eval_loss_as_charts_naming_its_finding(monkeypatch):
    monkeypatch.chdir(REPO)
    body = render("markdown", judge_epoch(["examples/gallery/lr_hot/seed0/trainer_state.json"]))
    charts = blocks_of(body)
    assert len(charts) == 2
    loss, evals = charts
    assert 'title "Loss: FAIL TP-DIVERGE at steps 1, 300"' in loss
    assert 'y-axis "log10 loss"' in loss, "3.45 to 1,300 spans decades: log10 plotted, and said"
    assert 'x-axis "step" 1 --> 300' in loss
    values = re.search(r"line \"loss\" \[(.*)\]", loss)
    assert values is not None and len(values.group(1).split(", ")) == MAX_POINTS
    assert 'title "Eval loss (steps 25-300)"' in evals and 'line "eval_loss"' in evals
    assert body.index("**Charts of examples/gallery/lr\\_hot/seed0/trainer\\_state.json**") < body.index("```mermaid")
    assert body.index("```mermaid") > body.index("| **FAIL** | `TP-DIVERGE`"), "the findings first"
    assert body.index("```mermaid") < body.index("<details>")


def test_a_loss_within_a_decade_keeps_a_linear_axis_and_a_healthy_run_names_no_finding(tmp_path):
    run = write_state(tmp_path / "ok" / "trainer_state.json", hf_entries(decaying(60, 3.0, 0.5).tolist()))
    loss = blocks_of(render("markdown", judge_epoch([str(run)])))[0]
    assert 'y-axis "loss"' in loss
    assert loss.splitlines()[2] == '    title "Loss"' 


def test_compare_draws_run_and_baseline_over_the_steps_both_logged(tmp_path):
    run = hot_run(tmp_path / "run")
    base_entries = hf_entries(decaying(40, 3.5, 0.8).tolist())  # 200 steps: shorter than the run's 300
    base = write_state(tmp_path / "base" / "trainer_state.json", base_entries)
    charts = blocks_of(render("markdown", judge_compare([str(run)], str(base))))
    loss = next(c for c in charts if c.splitlines()[2].startswith('    title "Loss (steps'))
    assert 'title "Loss (steps 5-200): FAIL' in loss
    assert 'line "run: loss"' in loss and 'line "baseline: loss"' in loss
    body = render("markdown", judge_compare([str(run)], str(base)))
    assert body.count("**Charts of ") == 1, "the baseline is drawn on its run's chart, not again"


def test_a_dataset_gives_its_two_histograms_with_the_flagged_clips_as_inner_bars(monkeypatch):
    pytest.importorskip("soundfile")
    monkeypatch.chdir(REPO)
    report = judge("data", ["tests/data/speech_faulty"], no_cache=True, progress=False, jobs=1)
    charts = blocks_of(render("markdown", report))
    assert [c.splitlines()[2].split('"')[1].split(" (")[0] for c in charts] == [h.title for h in report.subjects[0].charts]
    for chart, histogram in zip(charts, report.subjects[0].charts):
        bars = [[int(n) for n in line[len("    bar [") : -1].split(", ")] for line in chart.splitlines() if line.startswith("    bar [")]
        assert bars[0] == (histogram.passed + histogram.warned + histogram.failed).tolist()
        flagged = (histogram.warned + histogram.failed).tolist()
        assert bars[1:] == ([flagged, histogram.failed.tolist()] if any(histogram.failed) else [flagged] if any(flagged) else [])


def test_markdown_charts_off_leaves_them_out(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    from trainproof.cli import main

    out = tmp_path / "c.md"
    assert main(["epoch", "examples/gallery/lr_hot/seed0/trainer_state.json", "--markdown", str(out), "--markdown-charts", "off"]) == 1
    assert "```mermaid" not in out.read_text() and "TP-DIVERGE" in out.read_text()
    assert main(["epoch", "examples/gallery/lr_hot/seed0/trainer_state.json", "--markdown", str(out)]) == 1
    assert out.read_text().count("```mermaid") == 2


def test_many_runs_stay_within_the_size_limit_and_chart_the_failing_first(tmp_path):
    paths = []
    for i in range(30):
        folder = tmp_path / f"run{i:02d}"
        if i == 17:
            hot_run(folder)
        else:
            write_state(folder / "trainer_state.json", hf_entries(decaying(60, 3.0, 0.5).tolist()))
        paths.append(str(folder))
    body = render("markdown", judge_epoch(paths))
    assert len(body) <= MAX_CHARS
    charted = re.findall(r"\*\*Charts of (.*)\*\*", body)
    assert len(charted) == 4, "MAX_CHARTED subjects"
    assert "run17" in charted[0], "the failing run first"
    small = render("markdown", judge_epoch(paths), max_chars=6000)
    assert len(small) <= 6000


# --- user strings ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_user_string_is_one_inert_quoted_mermaid_string(name):
    spelled = quoted(name)
    assert spelled.startswith('"') and spelled.endswith('"')
    inner = re.sub(r"#\w+;", "", spelled[1:-1])  # Mermaid's entity codes, which it draws as the characters they name
    for ch in '"%<>`{};#@\\\n\r':
        assert ch not in inner
    assert "\n" not in spelled


# --- rendered by mermaid itself -------------------------------------------------------------------------------------


def _chromium() -> str | None:
    return next((found for name in ("chromium", "chromium-browser", "google-chrome") if (found := shutil.which(name))), None)


def _mermaid_js() -> Path | None:
    given = os.environ.get("TRAINPROOF_MERMAID_JS")
    path = Path(given) if given else REPO / ".ci" / "node" / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
    return path if path.is_file() else None


PAGE = """<!doctype html><html><head><meta charset="utf-8"><script src="{script}"></script></head><body><pre id="out">pending</pre>
<script>
const blocks = {blocks};
(async () => {{
  mermaid.initialize({{startOnLoad: false, securityLevel: "strict"}});
  const results = [];
  for (let i = 0; i < blocks.length; i++) {{
    try {{
      await mermaid.parse(blocks[i]);
      const drawn = await mermaid.render("chart" + i, blocks[i]);
      const svg = new DOMParser().parseFromString(drawn.svg, "image/svg+xml");
      results.push({{ok: true, texts: Array.from(svg.querySelectorAll("text")).map(t => t.textContent)}});
    }} catch (e) {{
      results.push({{ok: false, error: String((e && e.message) || e).slice(0, 400)}});
    }}
  }}
  document.getElementById("out").textContent = JSON.stringify(results);
}})();
</script></body></html>
"""


def render_in_chromium(blocks: list[str], folder: Path) -> list[dict]:
    """Each block parsed and drawn by mermaid in headless Chromium: ``{"ok": True, "texts": [...]}`` or the error."""
    chromium, script = _chromium(), _mermaid_js()
    if chromium is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium)")
    if script is None:
        pytest.skip("mermaid's browser bundle is absent (npm install --prefix .ci/node mermaid@12, or TRAINPROOF_MERMAID_JS)")
    page = folder / "mermaid.html"
    page.write_text(PAGE.format(script=script.as_uri(), blocks=json.dumps(blocks).replace("</", "<\\/")), encoding="utf-8")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", f"--user-data-dir={folder / 'profile'}", "--allow-file-access-from-files",
             "--virtual-time-budget=60000", "--dump-dom"]  # fmt: skip
    done = subprocess.run([chromium, *flags, page.as_uri()], capture_output=True, text=True, timeout=300)
    found = re.search(r'<pre id="out">(.*?)</pre>', done.stdout, re.S)
    assert found is not None and found.group(1) != "pending", done.stderr[-2000:]
    return json.loads(html.unescape(found.group(1)))


def every_markdown(tmp_path: Path) -> dict[str, str]:
    """The markdown of the gallery, the shared corpus's logs (when it is there), the data and text examples, and runs,
    metrics and files named with quotes, backslashes, brackets and non-ASCII text."""
    out: dict[str, str] = {}
    gallery = sorted(p.parent for p in (REPO / "examples" / "gallery").glob("*/seed0/trainer_state.json"))
    for run in gallery:
        out[f"epoch {run.parent.name}"] = render("markdown", judge_epoch([str(run)]))
    out["compare lr_hot"] = render("markdown", judge_compare([str(REPO / "examples/gallery/lr_hot/seed0")], str(REPO / "examples/gallery/healthy/seed0")))
    public = CORPUS / "public"
    for kind in ("hf", "lightning", "keras", "coqui", "tensorboard", "mlflow"):
        for path in sorted((public / kind).iterdir())[:4] if (public / kind).is_dir() else []:
            report = judge_epoch([str(path)])
            out[f"corpus {kind}/{path.name}"] = render("markdown", report)
    pytest.importorskip("soundfile")
    for name, path in (("speech_faulty", "tests/data/speech_faulty"), ("ljspeech_tiny", "examples/speech/ljspeech_tiny")):
        out[f"data {name}"] = render("markdown", judge("data", [str(REPO / path)], no_cache=True, progress=False, jobs=1))
    out["text chat"] = render("markdown", judge("text", [str(REPO / "examples/text/chat.jsonl")]))
    pytest.importorskip("sentencepiece")
    pytest.importorskip("tokenizers")
    text_tokenizer = str(REPO / "examples/text/tokenizer")
    out["text chat measured"] = render("markdown", judge("text", [str(REPO / "examples/text/chat.jsonl")], tokenizer=text_tokenizer, max_len=96))
    model, transcripts = str(REPO / "examples/tokenizer/tts_unigram.model"), str(REPO / "examples/tokenizer/transcripts.txt")
    out["tokenizer example"] = render("markdown", judge("tokenizer", [transcripts], tokenizer=model, max_tokens=40))
    for i, name in enumerate(HOSTILE_NAMES):
        run = hot_run(tmp_path / f"hostile{i}" / name, eval_name=f"eval_{name}_loss")
        out[f"hostile {i}"] = render("markdown", judge_epoch([str(run)]))
        out[f"hostile compare {i}"] = render("markdown", judge_compare([str(run)], str(REPO / "examples/gallery/healthy/seed0")))
    return out


def test_every_block_is_drawn_by_mermaid_with_its_titles_as_written(tmp_path):
    markdowns = every_markdown(tmp_path)
    named = [(source, block) for source, body in markdowns.items() for block in blocks_of(body)]
    assert len(named) >= 20 and {source.split()[0] for source, _ in named} >= {"epoch", "compare", "data", "text", "tokenizer", "hostile"}
    results = render_in_chromium([block for _, block in named], tmp_path)
    failed = [f"{source}: {result['error']}\n{block[:300]}" for (source, block), result in zip(named, results) if not result["ok"]]
    assert not failed, "\n\n".join(failed)
    hostile = [(block, result) for (source, block), result in zip(named, results) if source.startswith("hostile")]
    assert len(hostile) >= 2 * len(HOSTILE_NAMES)
    for block, result in hostile:  # what mermaid draws is the text before it was spelled, each character as written
        for spelled in re.findall(r'^    (?:title|y-axis|line) ("[^"]*")', block, re.M):
            assert unspelled(spelled) in result["texts"], (spelled, result["texts"][:8])


ENTITIES = {"quot": '"', "lt": "<", "gt": ">"}


def unspelled(spelled: str) -> str:
    return re.sub(r"#(\w+);", lambda m: ENTITIES.get(m.group(1)) or chr(int(m.group(1))), spelled[1:-1])


# --- fuzz: any text a user's files can hold ----------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from trainproof.render.mermaid import line_chart  # noqa: E402
from trainproof.report import Chart, FlaggedClip, Finding, Level, Line, Marker, Report, Subject  # noqa: E402

ANY_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80) | st.sampled_from(HOSTILE_NAMES)


@settings(max_examples=300, deadline=None)
@given(name=ANY_TEXT, metric=ANY_TEXT, rule=ANY_TEXT)
def test_any_name_gives_a_block_of_our_own_lines_with_inert_strings(name, metric, rule):
    steps = np.arange(1, 61)
    chart = Chart("Loss", (Line(name, steps, np.linspace(3, 1, 60), "train"),), (Marker(30, rule, "FAIL", ""),), (1, 60), y_label=metric)
    block = line_chart(f"Loss: {rule}", chart, chart.lines)
    assert block is not None
    lines = block.split("\n")
    assert lines[0] == "```mermaid" and lines[-1] == "```" and lines[2] == "xychart-beta"
    for line in lines[3:-1]:
        found = re.fullmatch(r'    (title|x-axis|y-axis|line) "([^"]*)"( .*)?', line)
        assert found is not None, line
        inner = re.sub(r"#\w+;", "", found.group(2))  # Mermaid's entity codes, drawn as the characters they name
        assert not set(inner) & set('"\n\r`%<>{};@\\[]#'), line
    assert block.count("```") == 2


@settings(max_examples=100, deadline=None)
@given(transcript=ANY_TEXT, clip_id=ANY_TEXT, message=ANY_TEXT)
def test_a_hostile_transcript_id_or_message_in_the_clips_table_stays_text(transcript, clip_id, message):
    clip = FlaggedClip(clip_id, f"{clip_id}.csv:3", transcript, (("FAIL", "TP-DATA-EMPTY-TEXT", message),), 0.0, 1.0, 1.0,
                       np.full(10, -0.5), np.full(10, 0.5), b"OggS", "audio/ogg; codecs=opus")  # fmt: skip
    finding = Finding("TP-DATA-EMPTY-TEXT", Level.FAIL, message, "", {}, line=3)
    page = render("html", Report("data", (Subject("x", findings=(finding,), clips=(clip,)),), "0"))
    section = page[page.index("<h3>Flagged clips</h3>") : page.index("</table>", page.index("<h3>Flagged clips</h3>"))]
    assert "<script" not in section.lower().replace("&lt;script", "")
    assert section.count("<tr>") == 2 and section.count("<audio ") == 1
