"""The data report's flagged clips: the worst first and at most MAX_FLAGGED, each with its waveform and an excerpt of
its audio that Chromium plays back as the clip's own samples; --no-audio leaves the audio out."""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path

import numpy as np
import pytest

from tests.datasets.speech import clean_corpus
from tests.helpers import REPO
from tests.chromium import chromium, evaluate
from trainproof.cli import main
from trainproof.commands import judge
from trainproof.commands.data_clips import MAX_FLAGGED
from trainproof.data.excerpt import EXCERPT_S

sf = pytest.importorskip("soundfile")

AUDIO = re.compile(r'<audio controls preload="none" src="data:audio/ogg;codecs=opus;base64,([A-Za-z0-9+/=]+)">')
PLAY = """(async () => {
  const bytes = await (await fetch(document.querySelector("audio").src)).arrayBuffer();
  const decoded = await new OfflineAudioContext(1, 16000, 16000).decodeAudioData(bytes);
  const samples = decoded.getChannelData(0), rms = [];
  for (let i = 0; i + 160 <= samples.length; i += 160) {
    let sum = 0;
    for (let j = i; j < i + 160; j++) sum += samples[j] * samples[j];
    rms.push(Math.sqrt(sum / 160));
  }
  return {rate: decoded.sampleRate, seconds: decoded.duration, rms};
})()"""
"""What Chromium hears in the report's first player: the decoded source's length, and its loudness 10 ms by 10 ms."""
HOSTILE = "<script>alert(1)</script> & \"quoted\""


@pytest.fixture(scope="module")
def all_flagged(tmp_path_factory) -> Path:
    """A NeMo corpus of 12 voiced clips, every transcript empty but one hostile one: every clip flagged (the findings
    name the first few of each rule's clips, and those are the clips shown)."""
    corpus = clean_corpus(tmp_path_factory.mktemp("flagged"), n=12, layout="nemo", espeak=False)
    for clip in corpus.clips:
        clip.text = ""
    corpus.clips[3].text = HOSTILE + " 42"  # unnormalised: a WARN, below the others' FAIL
    corpus.write()
    return corpus.path


def page_of(path: Path, tmp_path: Path, *options: str) -> str:
    out = tmp_path / "report.html"
    assert main(["data", str(path), "--no-cache", "--jobs", "1", "--html", str(out), *options]) == 1
    return out.read_text(encoding="utf-8")


def test_the_worst_clips_first_and_at_most_max_flagged(all_flagged, monkeypatch):
    report = judge("data", [str(all_flagged)], no_cache=True, progress=False, jobs=1, excerpts="waveform")
    clips = report.subjects[0].clips
    named = {(f.file, f.line) for f in report.subjects[0].findings if f.line}
    assert len(clips) == len(named) > 4
    levels = [c.findings[0][0] for c in clips]
    assert levels == sorted(levels, key=["FAIL", "WARN", "INFO"].index), "the worst first"
    assert levels[-1] == "WARN" and HOSTILE in (clips[-1].transcript or "")
    fails = [int(c.where.rsplit(":", 1)[1]) for c in clips if c.findings[0][0] == "FAIL"]
    assert fails == sorted(fails), "then manifest order"
    assert all(c.low is not None and c.audio is None for c in clips), "waveform only"
    monkeypatch.setattr("trainproof.commands.data_clips.MAX_FLAGGED", 4)
    capped = judge("data", [str(all_flagged)], no_cache=True, progress=False, jobs=1, excerpts="audio").subjects[0].clips
    assert [c.where for c in capped] == [c.where for c in clips[:4]] and all(c.audio for c in capped)
    assert judge("data", [str(all_flagged)], no_cache=True, progress=False, jobs=1).subjects[0].clips == (), "only a report that shows them reads them"


def test_the_page_embeds_each_excerpt_within_its_bound_and_escapes_the_transcript(all_flagged, tmp_path):
    page = page_of(all_flagged, tmp_path)
    sources = AUDIO.findall(page)
    assert 4 < len(sources) <= MAX_FLAGGED
    section = page[page.index("<h3>Flagged clips</h3>") :]
    per_clip = len(section) / len(sources)
    assert per_clip < EXCERPT_S * 2_600 * 4 / 3 + 8_000, "under the documented bound: 6 s of Opus at ~2.6 kB/s, base64, plus a waveform"
    assert "<script>alert(1)" not in page
    quiet = page_of(all_flagged, tmp_path, "--no-audio")
    assert not AUDIO.findall(quiet) and quiet.count('<svg class="wave"') == len(sources)


def test_a_missing_clip_is_listed_without_a_waveform(tmp_path):
    page = page_of(REPO / "tests/data/speech_faulty", tmp_path)
    rows = re.findall(r"<tr><td><code>(.*?)</code>.*?</tr>", page[page.index("<h3>Flagged clips</h3>") :], re.S)
    assert [row.rsplit(":", 1)[1] for row in rows[:2]] == ["2", "3"], "the FAIL clips first (an empty transcript, a missing file)"
    assert page.count("not readable") == 1, "the missing clip has no waveform"


def test_chromium_plays_the_excerpt_as_the_clips_own_samples(tmp_path):
    if chromium() is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium)")
    corpus = clean_corpus(tmp_path / "c", n=4, layout="nemo", espeak=False, rate=22050)
    corpus.clips[1].text = ""
    corpus.write()
    page = page_of(corpus.path, tmp_path)
    (source,) = AUDIO.findall(page)
    page_file = tmp_path / "report.html"
    played = evaluate(page_file, PLAY, tmp_path / "profile")
    original, rate = sf.read(str(corpus.clips[1].audio), dtype="float64")
    original = original[: int(EXCERPT_S * rate)]
    assert played["seconds"] == pytest.approx(original.size / rate, abs=0.03)
    hop = rate // 100
    expected = np.sqrt([np.mean(original[i : i + hop] ** 2) for i in range(0, original.size - hop + 1, hop)])
    heard = np.array(played["rms"])
    n = min(expected.size, heard.size)
    assert n > 50
    assert np.corrcoef(expected[:n], heard[:n])[0, 1] > 0.95, "the excerpt's loudness follows the clip's, 10 ms by 10 ms"
    assert base64.b64decode(source)[:4] == b"OggS"
    assert sf.info(io.BytesIO(base64.b64decode(source))).samplerate == 16000
