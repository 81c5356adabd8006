"""Every data rule on real corpora: each fault found at its manifest line and audio file, the clean corpus quiet.

The corpora are real audio: espeak-ng speech (when installed) and
synthesised voiced clips, in every layout, broken one fault at a time by
tests/datasets/speech.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.checks.cases_data import CASES, EMPTY_MANIFEST, FIRES
from tests.datasets.speech import FAULTS, Corpus, Fault, clean_corpus, has_espeak, needs_espeak
from trainproof.checks.registry import RULES
from trainproof.cli import main
from trainproof.commands import judge
from trainproof.report import Level, Subject

pytest.importorskip("soundfile")
pytest.importorskip("pandas")

LAYOUTS = ("ljspeech", "nemo", "csv", "kaldi", "folder")
ABOUT_LINES = {"TP-DATA-MANIFEST", "TP-DATA-MANIFEST-FORMAT", "TP-DATA-DUPLICATE-ID"}  # findings about a line, not a clip's audio


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """One clean corpus per (layout, size), built once; tests break copies."""
    built: dict[tuple[str, int, bool], Corpus] = {}

    def get(layout: str, n: int, espeak: bool | None = None) -> Corpus:
        """``espeak``: None, espeak-ng speech when it is installed; False, every clip voiced."""
        key = (layout, n, has_espeak() if espeak is None else espeak)
        if key not in built:
            built[key] = clean_corpus(tmp_path_factory.mktemp(f"{layout}{n}"), n=n, layout=layout, espeak=key[2])
        return built[key]

    return get


def judged(corpus: Corpus, **options) -> Subject:
    return judge("data", [str(corpus.path)], no_cache=True, jobs=1, **options).subjects[0]


def same_file(a: str | Path | None, b: str | Path | None) -> bool:
    return a is not None and b is not None and Path(a).resolve() == Path(b).resolve()


def test_every_data_rule_has_a_fault_that_fires_it():
    assert set(FIRES) | {"TP-DATA-EMPTY-MANIFEST"} == {rule.id for rule in RULES["data"]}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_clean_corpus_passes_with_no_warning(clean, layout):
    subject = judged(clean(layout, 12))
    assert [f"{f.rule_id}: {f.message}" for f in subject.findings if f.level >= Level.WARN] == []
    assert subject.verdict.value == "PASS"


def test_a_clean_corpus_large_enough_for_the_rate_test_passes(clean):
    subject = judged(clean("nemo", 24))
    assert "TP-DATA-TEXT-RATE" in subject.ran
    assert [f"{f.rule_id}: {f.message}" for f in subject.findings if f.level >= Level.WARN] == []


FIRING = [pytest.param(rule_id, case, id=rule_id) for rule_id, cases in CASES.items() for case in cases if case.fires]
QUIET = [pytest.param(rule_id, case, id=rule_id) for rule_id, cases in CASES.items() for case in cases if not case.fires]


@pytest.mark.parametrize(("rule_id", "case"), FIRING)
def test_each_fault_is_found_at_its_line_and_file(clean, tmp_path, rule_id, case):
    """The fires half of every data rule's cases (tests/checks/cases_data.py)."""
    if case.fault == EMPTY_MANIFEST:
        (tmp_path / "wavs").mkdir()
        (tmp_path / "metadata.csv").write_text("id|text\n")
        subject, fault = judged_path(tmp_path), None
    else:
        corpus = clean(case.layout, case.size).copy(tmp_path)
        fault = FAULTS[case.fault](corpus)
        subject = judged(corpus)
    hits = [f for f in subject.findings if f.rule_id == rule_id]
    assert hits, f"{rule_id} did not fire on {case.fault}: {[f.rule_id for f in subject.findings]}; skipped {subject.skipped}"
    assert rule_id in subject.ran
    if fault is not None and fault.line is not None:
        places = [(f.line, f.file) for f in hits]
        assert any(f.line == fault.line and same_file(f.file, fault.manifest) for f in hits), f"expected line {fault.line} of {fault.manifest}, got {places}"
    if fault is not None and fault.audio is not None and fault.line is not None and rule_id not in ABOUT_LINES:
        assert any(fault.audio.name in f.message for f in hits), [f.message for f in hits]
    for finding in hits:
        assert finding.message
        assert any(ch.isdigit() for ch in finding.evidence), finding.evidence


@pytest.mark.parametrize(("rule_id", "case"), QUIET)
def test_each_rule_is_quiet_on_the_clean_corpus(clean, rule_id, case):
    """The must-not half of every data rule's cases: the clean corpus of the layout and size its fault is tried on."""
    subject = judged(clean(case.layout, case.size))
    assert not [f for f in subject.findings if f.rule_id == rule_id]


@pytest.mark.parametrize(
    ("rule_id", "fault_name", "layout"),
    [
        ("TP-DATA-CHARACTERS", "other_script", "nemo"),
        ("TP-DATA-CHARACTERS", "homoglyph", "nemo"),
        ("TP-DATA-MISSING", "missing_file", "folder"),
        ("TP-DATA-UNLISTED", "unlisted_file", "folder"),
        ("TP-DATA-SAMPLE-RATE", "other_rate", "kaldi"),
        ("TP-DATA-EMPTY-TEXT", "empty_transcript", "ljspeech"),
        ("TP-DATA-CLIPPING", "clipped", "csv"),
    ],
)
def test_faults_in_other_layouts_are_found_too(clean, tmp_path, rule_id, fault_name, layout):
    corpus = clean(layout, 12).copy(tmp_path)
    fault = FAULTS[fault_name](corpus)
    hits = [f for f in judged(corpus).findings if f.rule_id == rule_id]
    assert hits, f"{rule_id} did not fire on {fault_name} in {layout}"
    if fault.line is not None:
        assert any(f.line == fault.line and same_file(f.file, fault.manifest) for f in hits), [(f.line, f.file) for f in hits]


def test_a_dc_offset_is_not_mistaken_for_speech_cut_off(clean, tmp_path):
    corpus = clean("nemo", 12).copy(tmp_path)
    FAULTS["dc_offset"](corpus)
    fired = {f.rule_id for f in judged(corpus).findings}
    assert "TP-DATA-DC-OFFSET" in fired
    assert "TP-DATA-CUT-OFF" not in fired


def test_peak_normalised_speech_is_not_clipped(clean, tmp_path):
    import numpy as np
    import soundfile as sf

    corpus = clean("nemo", 12).copy(tmp_path)
    for clip in corpus.clips:
        samples, rate = sf.read(str(clip.audio))
        sf.write(str(clip.audio), samples / np.max(np.abs(samples)) * 0.99, rate, subtype="PCM_16")
    subject = judged(corpus)
    assert "TP-DATA-CLIPPING" in subject.ran
    assert not [f for f in subject.findings if f.rule_id == "TP-DATA-CLIPPING"]


def test_a_metadata_csv_with_only_a_header_lists_no_clip(tmp_path):
    (tmp_path / "wavs").mkdir()
    (tmp_path / "metadata.csv").write_text("id|text\n")
    subject = judged_path(tmp_path)
    assert [f.rule_id for f in subject.findings if f.level is Level.FAIL] == ["TP-DATA-EMPTY-MANIFEST"]


def judged_path(path: Path) -> Subject:
    return judge("data", [str(path)], no_cache=True, jobs=1).subjects[0]


def test_a_target_sample_rate_is_checked(clean):
    subject = judged(clean("nemo", 12), sample_rate=16000)
    (finding,) = [f for f in subject.findings if f.rule_id == "TP-DATA-SAMPLE-RATE"][:1]
    assert "not the 16,000 Hz asked for" in finding.message
    assert finding.level is Level.FAIL


# --- bad inputs: a clear verdict or exit 2, never a traceback ----------------------------------


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["data", *args, "--no-cache", "--jobs", "1"])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_missing_folder_is_exit_2(capsys, tmp_path):
    code, _, err = run_cli(capsys, str(tmp_path / "nope"))
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_a_binary_file_named_jsonl_is_exit_2(capsys, tmp_path):
    path = tmp_path / "manifest.jsonl"
    path.write_bytes(bytes(range(256)) * 100)
    code, _, err = run_cli(capsys, str(path))
    assert code == 2
    assert "Traceback" not in err


@pytest.mark.parametrize("package", ["soundfile", "pandas", "xxhash"])
def test_a_missing_data_dependency_is_one_line_and_exit_2(clean, package):
    """Run in a fresh interpreter where importing the package fails, as it does when the [data] extra is not installed."""
    corpus = clean("ljspeech", 4)
    import subprocess
    import sys

    script = f"import sys; sys.modules[{package!r}] = None; from trainproof.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run([sys.executable, "-c", script, "data", str(corpus.path), "--no-cache"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert f"'{package}'" in done.stderr
    assert "[data]" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_manifest_of_garbage_is_a_fail_naming_its_lines(capsys, tmp_path):
    path = tmp_path / "manifest.jsonl"
    path.write_text("\n".join("{not json" + str(i) for i in range(50)) + "\n")
    code, out, err = run_cli(capsys, str(path))
    assert code == 1
    assert "[FAIL] TP-DATA-EMPTY-MANIFEST" in out
    assert "[FAIL] TP-DATA-MANIFEST  50 lines are not clip records; the first 5 are named here and 45 more.\n" in out
    assert "\n         - line 1 is not valid JSON" in out
    assert out.count("TP-DATA-MANIFEST  ") == 1
    assert err == ""


def test_a_manifest_listing_10000_missing_files_is_one_short_fail(capsys, tmp_path):
    path = tmp_path / "manifest.jsonl"
    path.write_text("".join(json.dumps({"audio_filepath": f"gone/{i}.wav", "text": "hello there"}) + "\n" for i in range(10_000)))
    code, out, _ = run_cli(capsys, str(path), "--json")
    assert code == 1
    report = json.loads(out)
    missing = [f for f in report["subjects"][0]["findings"] if f["id"] == "TP-DATA-MISSING"]
    assert len(missing) == 5, "named up to DATA_EXAMPLES, the rest counted"
    assert missing[0]["values"]["count"] == 10_000
    assert "10,000 of 10,000" in missing[0]["message"]


@pytest.mark.parametrize("fault_name", ["truncated", "empty_file", "not_audio"])
def test_broken_audio_is_a_finding_not_a_crash(clean, tmp_path, capsys, fault_name):
    corpus = clean("nemo", 12).copy(tmp_path)
    fault = FAULTS[fault_name](corpus)
    code, out, err = run_cli(capsys, str(corpus.path))
    assert code == 1
    assert "TP-DATA-UNREADABLE" in out
    assert fault.audio.name in out
    assert "Traceback" not in err


def test_every_output_locates_a_data_finding_at_the_manifest_line(clean, tmp_path, capsys, monkeypatch):
    corpus = clean("nemo", 12).copy(tmp_path / "c")
    fault = FAULTS["missing_file"](corpus)
    monkeypatch.chdir(tmp_path)
    sarif = tmp_path / "r.sarif"
    code, _, _ = run_cli(capsys, str(corpus.path.relative_to(tmp_path)), "--sarif", str(sarif))
    assert code == 1
    results = [r for r in json.loads(sarif.read_text())["runs"][0]["results"] if r["ruleId"] == "TP-DATA-MISSING"]
    place = results[0]["locations"][0]["physicalLocation"]
    assert place["artifactLocation"]["uri"] == str(fault.manifest.relative_to(tmp_path))
    assert place["region"]["startLine"] == fault.line


def test_real_recordings_from_the_corpus_are_read(corpus):
    speech = corpus / "public" / "speech" / "coqui-ai_TTS_tests_ljspeech"
    if not speech.is_dir():
        pytest.skip("no LJSpeech sample in the corpus")
    subject = judged_path(speech)
    assert subject.summary["readable"] == subject.summary["clips"] > 0
    assert not [f for f in subject.findings if f.level is Level.FAIL]


# --- the HTML report's histograms ------------------------------------------------------------------------


def _histograms(subject: Subject) -> dict:
    from trainproof.report import Histogram

    return {h.title: h for h in subject.charts if isinstance(h, Histogram)}


def test_the_duration_histogram_marks_the_clips_out_of_bounds(clean, tmp_path):
    corpus = clean("nemo", 12).copy(tmp_path)
    FAULTS["too_long"](corpus)
    subject = judged(corpus)
    duration = _histograms(subject)["Clip duration"]
    assert int(duration.warned.sum()) == 1  # the one 25 s clip, at the rule's level
    assert int(duration.failed.sum()) == 0
    assert int(duration.passed.sum()) == 11
    assert duration.open_high  # a far outlier: in the last bin, which holds all beyond it
    assert not duration.open_low
    assert duration.edges[-1] < 25.0
    assert int(duration.warned[-1]) == 1
    assert "1 of 12 clips outside" in duration.note


def test_the_speaking_rate_histogram_marks_the_swapped_transcripts(clean, tmp_path):
    corpus = clean("nemo", 24).copy(tmp_path)
    FAULTS["swapped_transcripts"](corpus)
    subject = judged(corpus)
    rate = _histograms(subject)["Characters per second of speech"]
    fired = [f for f in subject.findings if f.rule_id == "TP-DATA-TEXT-RATE"]
    assert int(rate.warned.sum() + rate.failed.sum()) == fired[0].values["count"] >= 1
    assert int(rate.passed.sum() + rate.warned.sum() + rate.failed.sum()) == 24
    assert any(label.startswith("median") for _, label in rate.limits)


def test_a_swapped_transcript_fails_only_where_the_measurement_proves_it(clean, tmp_path):
    """Burden of proof: the 1.5 s clip given the 6 s clip's text reads so fast that no edge-silence error or small-group
    spread explains it (FAIL); the 6 s clip given the short text is past the FAIL line as measured, but not with the
    group's sigma from 24 clips allowed its standard error: a WARN that says why, never a FAIL. The group's spread is
    espeak-ng's: 24 voiced clips read too evenly to leave the long clip unproven (the test below)."""
    needs_espeak()
    corpus = clean("nemo", 24).copy(tmp_path)
    FAULTS["swapped_transcripts"](corpus)
    subject = judged(corpus)
    fired = [f for f in subject.findings if f.rule_id == "TP-DATA-TEXT-RATE"]
    assert sorted((f.level, "not a FAIL" in f.message) for f in fired) == [(Level.WARN, True), (Level.FAIL, False)]
    warned = next(f for f in fired if f.level is Level.WARN)
    assert "sigma from 24 clips" in warned.message
    assert subject.verdict.value == "FAIL"
    rate = _histograms(subject)["Characters per second of speech"]
    assert (int(rate.failed.sum()), int(rate.warned.sum())) == (1, 1)  # the histogram levels clips as the rule does


def test_a_swapped_transcript_in_an_even_group_fails_at_both_ends(clean, tmp_path):
    """24 voiced clips read within 7% of one rate, a spread too small to explain either half of the swap: both FAIL."""
    corpus = clean("nemo", 24, espeak=False).copy(tmp_path)
    FAULTS["swapped_transcripts"](corpus)
    fired = [f for f in judged(corpus).findings if f.rule_id == "TP-DATA-TEXT-RATE"]
    assert [(f.level, "not a FAIL" in f.message) for f in fired] == [(Level.FAIL, False)] * 2


def _rates_corpus(outlier_cps: float, n: int = 20):
    """``n`` clips whose speech reads at 10.0 +- 0.1 k characters per second (k = -9..9: a group read very evenly),
    the last at ``outlier_cps``: the numbers each clip reduces to, as the analysis records them."""
    from trainproof.checks.data import DataContext
    from trainproof.checks.thresholds import Thresholds
    from trainproof.data.model import ClipRecord, Entry, Manifest

    rates = [10.0 + 0.1 * k for k in range(-9, n - 10)] + [outlier_cps]
    letters = 40
    entries = tuple(Entry(line=i, id=f"c{i}", audio=f"/c{i}.wav", listed=f"c{i}.wav", text="a" * letters, manifest="m") for i in range(1, n + 1))
    records = [ClipRecord(audio=f"/c{i}.wav", sample_rate=16000, channels=1, frames=int(letters / cps * 16000), duration_s=letters / cps,
                          level_db=-20.0, audio_hash=f"h{i}", active_s=letters / cps) for i, cps in enumerate(rates, 1)]  # fmt: skip
    return DataContext(Manifest(path="m", layout="nemo", entries=entries), records, Thresholds())


def _rates_as_series(ctx):
    """TP-DATA-TEXT-RATE's numbers as pandas Series formulas, one step each (the reference the in-place numpy of
    speech_rates is held to, bit for bit)."""
    import numpy as np
    import pandas as pd

    from trainproof.checks.stats import MAD_SE, MAD_TO_SIGMA

    t = ctx.t
    frame = ctx.frame("duration_s", "lead_s", "trail_s", "speaker", rows=np.flatnonzero(ctx.readable))
    speech = (frame["duration_s"] - frame["lead_s"] - frame["trail_s"]).clip(lower=0.05)
    letters = pd.Series(ctx.letters[frame.index.to_numpy()], index=frame.index)
    spoken = letters > 0
    letters, speech, frame = letters[spoken], speech[spoken], frame[spoken]
    cps = letters / speech
    speakers = frame["speaker"].fillna("")
    if speakers.nunique() > 1 and speakers.value_counts().min() >= t.DATA_CPS_MIN_CLIPS:
        median = cps.groupby(speakers, sort=False).transform("median")
        sigma = MAD_TO_SIGMA * (cps - median).abs().groupby(speakers, sort=False).transform("median")
        clips = speakers.groupby(speakers, sort=False).transform("size")
    else:
        median = cps * 0 + cps.median()
        sigma = cps * 0 + MAD_TO_SIGMA * (cps - cps.median()).abs().median()
        clips = cps * 0 + len(cps)
    z = ((cps - median) / sigma).where(sigma > 0)
    nearer = (speech + t.DATA_CPS_EDGE_S).where(cps > median, (speech - t.DATA_CPS_EDGE_S).clip(lower=0.05))
    wide = sigma * (1 + t.DATA_CPS_SIGMA_SE * MAD_SE / np.sqrt(clips))
    bound = (letters / nearer - median) / wide
    bound = bound.where(np.sign(bound) == np.sign(z), 0.0).where(sigma > 0)
    return pd.DataFrame({"cps": cps, "median_cps": median, "sigma_cps": sigma, "sigma_wide": wide, "z": z, "group_clips": clips, "z_bound": bound})


@pytest.mark.parametrize("case", ["even", "outlier", "nan duration", "speakers", "no spread"])
def test_speaking_rates_are_the_series_formulas_bit_for_bit(case):
    """speech_rates computes in place with numpy, a corpus's median, sigma and size held once: the same numbers as
    the Series formulas, NaN where they give NaN (a clip whose duration is NaN), by speaker or for the corpus."""
    from dataclasses import replace

    import numpy as np

    from trainproof.checks.data import DataContext, speech_rates

    ctx = _rates_corpus(10.0 if case != "outlier" else 25.0)
    if case == "nan duration":
        ctx = DataContext(ctx.manifest, [*ctx.records[:-1], replace(ctx.records[-1], duration_s=float("nan"))], ctx.t)
    if case == "speakers":
        entries = [replace(e, speaker="ab"[i % 2]) for i, e in enumerate(ctx.manifest.entries)]
        ctx = DataContext(replace(ctx.manifest, entries=tuple(entries)), ctx.records, ctx.t.with_overrides({"DATA_CPS_MIN_CLIPS": 5}))
    if case == "no spread":
        ctx = DataContext(ctx.manifest, [replace(r, duration_s=4.0) for r in ctx.records], ctx.t)
    rates, by_speaker = speech_rates(ctx)
    assert by_speaker == (case == "speakers")
    expected = _rates_as_series(ctx)
    assert list(rates.index) == list(expected.index)
    for name in expected.columns:
        assert np.array_equal(rates[name].to_numpy(dtype=float), expected[name].to_numpy(dtype=float), equal_nan=True), name
    if case == "nan duration":
        assert np.isnan(rates["z"].iloc[-1]) and np.isnan(rates["median_cps"].iloc[-1])
    if case == "no spread":
        assert rates["z"].isna().all() and rates["z_bound"].isna().all()


def test_a_rate_past_the_warn_line_only_by_an_uncertain_sigma_is_no_warn():
    """Burden of proof for the WARN too: a clip 4.6 robust sigmas out as measured, where the sigma of 20 evenly read
    clips is known only to within 26% a standard error, is not beyond DATA_CPS_WARN_Z allowing for it; at 7 sigmas it
    is (the corpus's own spread, not the clip, decides the first)."""
    from trainproof.checks.data import speech_rates, text_rate

    near = _rates_corpus(10.0 + 4.6 * 0.7413)
    rates, _ = speech_rates(near)
    assert rates["z"].iloc[-1] > near.t.DATA_CPS_WARN_Z > abs(rates["z_bound"].iloc[-1])
    assert list(text_rate(near)) == []
    far = _rates_corpus(10.0 + 7.0 * 0.7413)
    (hit,) = list(text_rate(far))
    assert hit.level is Level.WARN
    assert hit.line == 20


def test_a_clean_corpus_has_histograms_with_nothing_flagged(clean):
    subject = judged(clean("nemo", 24))
    charts = _histograms(subject)
    assert set(charts) == {"Clip duration", "Characters per second of speech"}
    for histogram in charts.values():
        assert int(histogram.warned.sum() + histogram.failed.sum()) == 0
        assert int(histogram.passed.sum()) == 24


def test_a_small_corpus_has_no_speaking_rate_histogram(clean):
    """Under DATA_CPS_MIN_CLIPS the rule does not judge rates, so the report does not plot them."""
    assert set(_histograms(judged(clean("nemo", 4)))) == {"Clip duration"}


def test_a_corpus_with_no_readable_clip_has_no_histogram(tmp_path):
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(json.dumps({"audio_filepath": str(tmp_path / "gone.wav"), "text": "hello"}) + "\n")
    subject = judge("data", [str(manifest)], no_cache=True, jobs=1).subjects[0]
    assert _histograms(subject) == {}


def test_the_html_report_draws_the_histograms_with_escaped_labels(clean, tmp_path, capsys):
    corpus = clean("nemo", 24).copy(tmp_path)
    FAULTS["too_long"](corpus)
    out = tmp_path / "report.html"
    code = main(["data", str(corpus.path), "--no-cache", "--jobs", "1", "--html", str(out)])
    capsys.readouterr()
    assert code == 0
    page = out.read_text()
    assert page.count('<svg class="chart"') == 2
    assert '<rect class="bar warn"' in page
    assert "1 clip flagged at WARN" in page
    assert "&#8805; " in page  # the 25 s clip, in the open last bin
    assert 'class="limit"' in page  # the speaking rate's median and fences
    assert "median " in page


def test_the_histogram_svg_escapes_and_survives_odd_numbers():
    import numpy as np

    from trainproof.render.svg import histogram
    from trainproof.report import Histogram

    one = Histogram("<b>x</b>", "s&", np.array([1.0, 1.0]), np.array([3]), np.array([0]), np.array([0]), limits=((1.0, "<i>"),), note="a<b")
    svg = histogram(one)
    assert "<b>" not in svg
    assert "<i>" not in svg
    assert "&lt;b&gt;x&lt;/b&gt;" in svg
    assert "a&lt;b" in svg
    empty = Histogram("e", "s", np.array([0.0, 1.0]), np.array([0]), np.array([0]), np.array([0]))
    assert histogram(empty) == ""
    bad = Histogram("n", "s", np.array([0.0, np.nan]), np.array([2]), np.array([0]), np.array([0]))
    assert histogram(bad) == ""


def test_transcript_characters_and_letters_are_counted_per_code_point():
    """The corpus's distinct characters and each transcript's letters and digits, counted over the code points of all
    transcripts at once, are what a loop over each transcript's characters gives: with no transcript, an empty one,
    characters past the BMP, combining marks and a lone surrogate."""
    from trainproof.checks.data import DataContext
    from trainproof.checks.thresholds import Thresholds
    from trainproof.data.model import Entry, Manifest

    texts = [None, "", "Hello, world 42!", "naïve cafe\u0301", "😀 emoji 𝔘", "lone \ud800 surrogate", "日本語のテキスト。", "   "]
    entries = tuple(Entry(line=n, id=str(n), audio=f"/{n}.wav", listed=f"{n}.wav", text=t, manifest="m") for n, t in enumerate(texts, 1))
    ctx = DataContext(Manifest(path="m", layout="nemo", entries=entries), [], Thresholds())
    assert ctx.characters == frozenset("".join(t for t in texts if t))
    assert ctx.letters.tolist() == [sum(ch.isalnum() for ch in t or "") for t in texts]
    assert ctx.letters.tolist()[2:4] == [12, 9]  # a combining accent is not a letter of its own
    empty = DataContext(Manifest(path="m", layout="nemo", entries=()), [], Thresholds())
    assert empty.characters == frozenset()
    assert empty.letters.tolist() == []


def _repeats_by_hand(rows, key, differing, examples, unlike_first=None):
    """What _repeats means, spelled out a row at a time: the reference its vectorised form is held to."""

    def value(row, item):  # a tuple of columns is one value, missing only when every column is
        if isinstance(item, str):
            return row[item]
        values = tuple(row[c] for c in item)
        return None if all(v is None for v in values) else values

    groups: dict = {}
    for position, row in enumerate(rows):
        if row[key] is not None and row[key] != "":
            groups.setdefault(row[key], []).append(position)
    counted = []
    for members in groups.values():
        if len(members) > 1 and all(len({value(rows[p], c) for p in members} - {None}) > 1 for c in differing):
            first = members[0]
            counted.extend(p for p in members[1:] if unlike_first is None or rows[p][unlike_first] != rows[first][unlike_first])
    counted.sort(key=lambda p: rows[p]["line"])  # stable: ties keep table order
    shown = counted[:examples]
    names = {rows[p][key]: f"{rows[groups[rows[p][key]][0]]['listed']} (line {rows[groups[rows[p][key]][0]]['line']})" for p in shown}
    return shown, len(counted), names


@pytest.mark.parametrize("seed", range(20))
def test_repeats_are_what_a_loop_over_the_rows_finds(seed):
    """The groups of the duplicate rules (TP-DATA-DUPLICATE-AUDIO, -CONFLICTING-TEXT, -DUPLICATE-TEXT): random tables of
    repeated, empty and missing keys, lines out of order, against the same question asked a row at a time."""
    import random
    import types

    import pandas as pd

    from trainproof.checks.data import _repeats
    from trainproof.checks.thresholds import Thresholds

    rng = random.Random(seed)
    ctx = types.SimpleNamespace(t=Thresholds())
    for _ in range(25):
        n = rng.randint(0, 40)
        lines = list(range(1, n + 1))
        if rng.random() < 0.3:
            rng.shuffle(lines)
        rows = [
            {"hash": rng.choice(["a", "b", "c", "", None]), "audio": rng.choice(["x", "y", None]), "folded": rng.choice(["p", "q", ""]),
             "id": rng.choice(["i", "j", None]), "line": line, "listed": f"clip{k}.wav"}
            for k, line in enumerate(lines)
        ]  # fmt: skip
        table = pd.DataFrame({
            "hash": pd.Series([r["hash"] for r in rows], dtype="str"),
            "audio": pd.Series([r["audio"] for r in rows], dtype="str"),
            "folded": pd.Series([r["folded"] for r in rows], dtype=object),
            "id": pd.Series([r["id"] for r in rows], dtype="str"),
            "line": pd.Series(lines, dtype="int64"),
            "listed": pd.Series([r["listed"] for r in rows], dtype="str"),
        })  # fmt: skip
        for key, differing, unlike in (
            ("hash", ("audio",), None), ("hash", ("folded",), None), ("folded", ("audio", "hash"), None), ("hash", (), None),
            ("hash", (("audio", "id"),), None), ("folded", (("audio", "id"), "hash"), None), ("hash", (), "folded"), ("hash", ("audio",), "id"),
        ):  # fmt: skip
            shown, count, names = _repeats(ctx, table, key, differing=differing, unlike_first=unlike)
            expected = _repeats_by_hand(rows, key, differing, ctx.t.DATA_EXAMPLES, unlike)
            assert (list(shown.index), count, names) == expected, (key, differing, unlike)


@pytest.mark.parametrize("seed", range(3))
def test_repeats_of_the_audio_hash_as_the_records_hold_it_are_what_a_loop_finds(seed):
    """The same, with each clip's hash as the records hold it (32 ASCII bytes a clip), from which the rows that may
    repeat are picked before they are grouped: hashes alike in their first 16 digits or in the rest, empty ones."""
    import random
    import types

    import pandas as pd

    from trainproof.checks.data import _repeats
    from trainproof.checks.thresholds import Thresholds
    from trainproof.data.model import ClipRecord
    from trainproof.data.records import ClipRecords

    rng = random.Random(seed)
    digests = ["0" * 32, "0" * 16 + "1" * 16, "1" * 16 + "0" * 16, "f" * 32, ""]
    for _ in range(25):
        n = rng.randint(0, 40)
        hashes = [rng.choice(digests) for _ in range(n)]
        rows = [{"hash": h, "audio": rng.choice(["x", "y", None]), "folded": "", "id": rng.choice(["i", "j", None]), "line": k + 1,
                 "listed": f"clip{k}.wav"} for k, h in enumerate(hashes)]  # fmt: skip
        records = ClipRecords.of([ClipRecord(f"clip{k}.wav", audio_hash=h) for k, h in enumerate(hashes)])
        assert records.column("audio_hash").dtype.kind == "S"
        table = pd.DataFrame({name: pd.Series([r[name] for r in rows], dtype="str" if name != "line" else "int64") for name in rows[0]}) if rows else pd.DataFrame(
            {name: pd.Series([], dtype="str") for name in ("hash", "audio", "folded", "id", "listed")} | {"line": pd.Series([], dtype="int64")})
        ctx = types.SimpleNamespace(t=Thresholds(), records=records, listed=len(table))
        for rows_of in (table, table.iloc[::2]):  # the table, and a subset of its rows (the readable clips)
            kept = [rows[i] for i in rows_of.index]
            for differing in ((), (("audio", "id"),)):
                shown, count, names = _repeats(ctx, rows_of, "hash", differing=differing)
                expected = _repeats_by_hand(kept, "hash", differing, ctx.t.DATA_EXAMPLES, None)
                assert (list(shown.index), count, names) == (
                    [rows_of.index[i] for i in expected[0]], expected[1], expected[2]), differing


# --- what a duplicate and a conflict are (issue 27, item 8) ---------------------------------------------------------


def _distinct_clips(folder: Path, n: int) -> list[str]:
    from tests.datasets.test_clip import SENTENCE, voiced, write

    return [write(folder / f"c{i}.wav", voiced(16000, SENTENCE, seed=i), 16000) for i in range(n)]


def _nemo_manifest(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _one_clip_on_lines(folder: Path, texts: list[str | None]) -> Path:
    """A NeMo manifest of one clip on a line per transcript of ``texts`` (None: no text field), then two other clips
    with transcripts of their own; ids a, b, c, ... in line order."""
    clips = _distinct_clips(folder, 3)
    lines = [{"audio_filepath": clips[0], **({} if text is None else {"text": text})} for text in texts]
    lines += [{"audio_filepath": clips[1], "text": "good morning"}, {"audio_filepath": clips[2], "text": "good evening"}]
    return _nemo_manifest(folder / "m.jsonl", [{"id": "abcdefgh"[n], **line} for n, line in enumerate(lines)])


def _hits(subject: Subject, rule_id: str) -> list:
    return [f for f in subject.findings if f.rule_id == rule_id]


def test_a_line_without_a_transcript_is_no_conflict_with_one_that_has_one(tmp_path):
    """Two lines of one clip with no transcript (none at all, and an empty one) and a third with one: the missing
    transcripts are TP-DATA-EMPTY-TEXT's, not a conflict ("another transcript: nan" before: NaN is not equal to itself)."""
    subject = judged_path(_one_clip_on_lines(tmp_path, [None, "", "hello there"]))
    assert "TP-DATA-CONFLICTING-TEXT" in subject.ran
    assert _hits(subject, "TP-DATA-CONFLICTING-TEXT") == []
    assert [f.line for f in _hits(subject, "TP-DATA-EMPTY-TEXT")] == [1, 2]


def test_a_conflict_names_the_lines_whose_transcript_differs_from_the_first(tmp_path):
    """One clip on four lines: no transcript, "hello there", the same folded otherwise, and "good night". Only the last
    conflicts, with line 2 (the first with a transcript)."""
    manifest = _one_clip_on_lines(tmp_path, [None, "hello there", "Hello  there", "good night"])
    (finding,) = _hits(judged_path(manifest), "TP-DATA-CONFLICTING-TEXT")
    assert finding.line == 4
    assert finding.values["count"] == 1
    assert "(line 2) but another transcript: 'good night'." in finding.message
    assert "nan" not in finding.message


def test_one_clip_listed_six_times_under_six_ids_is_duplicate_audio(tmp_path):
    """The same file and transcript on six lines under six ids: trained on six times as often as the others."""
    clips = _distinct_clips(tmp_path, 3)
    lines = [{"audio_filepath": clips[0], "id": f"r{k}", "text": "hello there"} for k in range(6)]
    lines += [{"audio_filepath": clips[1], "id": "x", "text": "good morning"}, {"audio_filepath": clips[2], "id": "y", "text": "good evening"}]
    subject = judged_path(_nemo_manifest(tmp_path / "m.jsonl", lines))
    hits = _hits(subject, "TP-DATA-DUPLICATE-AUDIO")
    assert [f.line for f in hits] == [2, 3, 4, 5, 6]
    assert hits[0].values["count"] == 5
    assert "under the id 'r1'" in hits[0].message
    assert "(line 1)" in hits[0].message
    assert "listed 6 times in all, so it weighs 6 times in training" in hits[0].message
    assert _hits(subject, "TP-DATA-DUPLICATE-ID") == []
    assert _hits(subject, "TP-DATA-CONFLICTING-TEXT") == []


def test_one_clip_listed_twice_through_two_spellings_of_its_path_is_duplicate_audio(tmp_path):
    """``c0.wav`` and ``./c0.wav``: two ids (NeMo's id is the path as written) for one file."""
    _distinct_clips(tmp_path, 3)
    manifest = _nemo_manifest(tmp_path / "m.jsonl", [
        {"audio_filepath": "c0.wav", "text": "hello there"},
        {"audio_filepath": "c1.wav", "text": "good morning"},
        {"audio_filepath": "./c0.wav", "text": "hello there"},
        {"audio_filepath": "c2.wav", "text": "good evening"},
    ])  # fmt: skip
    (finding,) = _hits(judged_path(manifest), "TP-DATA-DUPLICATE-AUDIO")
    assert finding.line == 3
    assert "listed 2 times in all" in finding.message


def test_a_line_repeated_whole_is_a_duplicate_id_not_duplicate_audio(clean, tmp_path):
    """Two manifests concatenated: the same id, file and transcript twice is TP-DATA-DUPLICATE-ID's finding alone."""
    corpus = clean("ljspeech", 12).copy(tmp_path)
    FAULTS["duplicate_id"](corpus)
    subject = judged(corpus)
    assert _hits(subject, "TP-DATA-DUPLICATE-ID")
    assert "TP-DATA-DUPLICATE-AUDIO" in subject.ran
    assert _hits(subject, "TP-DATA-DUPLICATE-AUDIO") == []


# --- a repeated transcript: a slip in one speaker's sentences, not a vocabulary nor a shared prompt (issue 29) -----------

SENTENCE = "He was not an ill disposed young man."
OTHER = "But he was in general well respected."


def _clips_saying(folder: Path, rows: list[tuple[str, str | None]]) -> Path:
    """A NeMo manifest of a distinct clip per (transcript, speaker) of ``rows`` (None: no speaker field), in order."""
    folder.mkdir(exist_ok=True)
    clips = _distinct_clips(folder, len(rows))
    lines = [{"audio_filepath": clip, "text": text, **({} if who is None else {"speaker": who})} for clip, (text, who) in zip(clips, rows)]
    return _nemo_manifest(folder / "m.jsonl", lines)


@pytest.mark.parametrize("speaker", ["anna", None])
def test_a_sentence_repeated_by_one_speaker_is_duplicate_text(tmp_path, speaker):
    """The copy-paste slip: one speaker's (or an unnamed one's) line 3 repeats line 1's sentence, case and spacing apart."""
    manifest = _clips_saying(tmp_path, [(SENTENCE, speaker), (OTHER, speaker), ("he was NOT an ill disposed  young man.", speaker)])
    (finding,) = _hits(judged_path(manifest), "TP-DATA-DUPLICATE-TEXT")
    assert finding.line == 3
    assert finding.message == f"{tmp_path / 'c2.wav'} has the same transcript as {tmp_path / 'c0.wav'} (line 1): 'he was NOT an ill disposed  young man.'."


def test_the_same_prompt_read_by_different_speakers_is_no_duplicate_text(tmp_path):
    """Common Voice, VCTK, CMU Arctic: every speaker reads the same prompts. Only anna's own repeat (line 5) is a slip."""
    rows = [(SENTENCE, "anna"), (SENTENCE, "bob"), (SENTENCE, "carl"), (OTHER, "anna"), (OTHER, "bob"), (SENTENCE, "anna")]
    subject = judged_path(_clips_saying(tmp_path, rows[:5]))
    assert "TP-DATA-DUPLICATE-TEXT" in subject.ran
    assert _hits(subject, "TP-DATA-DUPLICATE-TEXT") == []
    (finding,) = _hits(judged_path(_clips_saying(tmp_path / "slip", rows)), "TP-DATA-DUPLICATE-TEXT")
    assert (finding.line, finding.values["count"]) == (6, 1)


def test_command_words_and_yes_no_or_digit_strings_said_by_many_clips_are_no_duplicate_text(tmp_path):
    """A vocabulary said by many clips (AN4, Speech Commands, yes/no, digits): too few words or letters to be a sentence
    (DATA_DUPLICATE_MIN_WORDS different words, DATA_DUPLICATE_MIN_LETTERS letters), nor a Chinese command of four
    characters. A Chinese sentence of 13 characters is one."""
    said = ["yes", "Yes.", "no", "one hundred", "NO NO YES YES NO YES NO YES", "one two three four", "here we go again!", "打开空调"]
    rows = [(text, None) for text in said for _ in range(2)]
    subject = judged_path(_clips_saying(tmp_path, rows))
    assert "TP-DATA-DUPLICATE-TEXT" in subject.ran
    assert _hits(subject, "TP-DATA-DUPLICATE-TEXT") == []
    chinese = "今天天气很好，我们去公园散步。"
    (finding,) = _hits(judged_path(_clips_saying(tmp_path / "zh", [*rows, (chinese, None), (chinese, None)])), "TP-DATA-DUPLICATE-TEXT")
    assert finding.line == len(rows) + 2


@pytest.mark.parametrize("name", ["an4_train.json", "an4_val.json"])
def test_the_an4_command_words_repeat_by_design(corpus, name):
    """NeMo's AN4 test manifests: 'yes' on 11 of 30 lines is the corpus's vocabulary (SOURCES.tsv). Their one fault is
    the stated durations (2.00275 s for 1 s clips)."""
    manifest = corpus / "public" / "datasets" / "speech" / "NVIDIA__NeMo__tests_data_asr" / "tests" / "data" / "asr" / name
    if not manifest.is_file():
        pytest.skip(f"{manifest} is not in the corpus")
    subject = judged_path(manifest)
    assert "TP-DATA-DUPLICATE-TEXT" in subject.ran
    assert {f.rule_id for f in subject.findings if f.level >= Level.WARN} == {"TP-DATA-DURATION-CLAIM"}


# --- quotations of user text are capped (issue 27, item 1) -------------------------------------------------------------


def test_transcripts_and_names_are_quoted_capped_in_every_finding(tmp_path, capsys):
    """A 64 KiB transcript ending in a secret (what a .txt symlinked to .git/config or /proc/self/environ holds),
    duplicated and conflicting; a transcript of 5,000 distinct numbers and a 100,000-digit one; 3,000 distinct odd
    characters; a 100,000-character audio path. Each finding quotes at most QUOTE_CHARS of any of them, with its length,
    and the secret appears in no output."""
    from trainproof.io.safe import QUOTE_CHARS
    clips = _distinct_clips(tmp_path, 4)
    secret = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"
    long = "the quick brown fox " * 3276 + secret  # 65,580 characters
    numbers = "7" * 100_000 + " " + " ".join(str(n) for n in range(5000))
    odd = "hello " + "".join(chr(0xE000 + k) for k in range(3000))  # private use
    far = str(tmp_path / ("d" * 100_000 + ".wav"))
    manifest = _nemo_manifest(tmp_path / "m.jsonl", [
        {"audio_filepath": clips[0], "id": "a", "text": long},
        {"audio_filepath": clips[1], "id": "b", "text": long},  # the same transcript: TP-DATA-DUPLICATE-TEXT
        {"audio_filepath": clips[0], "id": "c", "text": long[::-1]},  # the same audio: TP-DATA-CONFLICTING-TEXT
        {"audio_filepath": clips[2], "id": "d", "text": numbers},
        {"audio_filepath": clips[3], "id": "e", "text": odd},
        {"audio_filepath": far, "id": "f", "text": "hello there"},
    ])  # fmt: skip
    assert main(["data", str(manifest), "--no-cache", "--jobs", "1", "--json"]) == 1
    out, _ = capsys.readouterr()
    assert secret not in out
    assert "7" * (QUOTE_CHARS + 1) not in out
    assert "d" * (QUOTE_CHARS + 1) not in out
    found = json.loads(out)["subjects"][0]["findings"]
    fired = {f["id"] for f in found}
    assert {"TP-DATA-DUPLICATE-TEXT", "TP-DATA-CONFLICTING-TEXT", "TP-DATA-UNNORMALIZED", "TP-DATA-CHARACTERS", "TP-DATA-UNREADABLE"} <= fired
    for finding in found:
        assert len(finding["message"]) < 4 * QUOTE_CHARS + 400, (finding["id"], len(finding["message"]))
        assert len(finding["evidence"]) < 2 * QUOTE_CHARS + 200, (finding["id"], len(finding["evidence"]))
    by_id = {f["id"]: f["message"] for f in found}
    assert f"({len(long):,} characters)" in by_id["TP-DATA-DUPLICATE-TEXT"]
    assert f"({len(long):,} characters)" in by_id["TP-DATA-CONFLICTING-TEXT"]
    assert "(100,000 characters)" in by_id["TP-DATA-UNNORMALIZED"]
    assert "more." in by_id["TP-DATA-UNNORMALIZED"]
    assert "more." in by_id["TP-DATA-CHARACTERS"]
    assert f"({len(far):,} characters)" in by_id["TP-DATA-UNREADABLE"]
