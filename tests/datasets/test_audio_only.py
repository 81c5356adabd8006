"""A folder of audio with no transcript beside any clip (a vocoder's or codec's corpus, audio not yet transcribed) is
judged by the rules about audio, the rules about transcripts skipped with the reason; only a folder with nothing to
judge is exit 2. Real WAV files written by soundfile, and the shared corpus's folders of clips."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("soundfile")
pytest.importorskip("pandas")

from tests.datasets.speech import voiced_clip, voiced_samples, write_audio  # noqa: E402
from trainproof.checks.data import AUDIO_ONLY  # noqa: E402
from trainproof.cli import main  # noqa: E402
from trainproof.commands import judge  # noqa: E402
from trainproof.report import Level, Subject  # noqa: E402

RATE = 22050
TRANSCRIPT_RULES = {
    "TP-DATA-EMPTY-TEXT", "TP-DATA-TEXT-RATE", "TP-DATA-UNNORMALIZED", "TP-DATA-CHARACTERS", "TP-DATA-DUPLICATE-TEXT",
    "TP-DATA-CONFLICTING-TEXT",
}  # fmt: skip
AUDIO_RULES = {
    "TP-DATA-MISSING", "TP-DATA-UNREADABLE", "TP-DATA-NONFINITE", "TP-DATA-SAMPLE-RATE", "TP-DATA-CHANNELS",
    "TP-DATA-SAMPLE-FORMAT", "TP-DATA-DURATION", "TP-DATA-SILENT", "TP-DATA-CLIPPING", "TP-DATA-EDGE-SILENCE",
    "TP-DATA-CUT-OFF", "TP-DATA-DC-OFFSET", "TP-DATA-DUPLICATE-AUDIO",
}  # fmt: skip
SPEECH = Path("public") / "speech"


def audio_folder(folder: Path, clips: int = 6) -> list[Path]:
    """``clips`` voiced clips of 2-4 s at RATE in ``folder`` (one in a subfolder), no transcript beside any."""
    paths = []
    for i in range(clips):
        where = folder / ("spk2" if i == clips - 1 else "") / f"clip{i:02d}.wav"
        where.parent.mkdir(parents=True, exist_ok=True)
        paths.append(voiced_clip(where, 2.0 + 0.4 * i, RATE, words=6, f0=110 + 10 * i, seed=i))
    return paths


def judged(path: Path) -> Subject:
    return judge("data", [str(path)], no_cache=True, jobs=1).subjects[0]


def skipped(subject: Subject) -> dict[str, str]:
    return {s.rule_id: s.reason for s in subject.skipped}


def test_a_clean_audio_only_folder_passes_with_the_transcript_rules_skipped(tmp_path):
    audio_folder(tmp_path)
    subject = judged(tmp_path)
    assert [f"{f.rule_id}: {f.message}" for f in subject.findings if f.level >= Level.WARN] == []
    assert subject.verdict.value == "PASS"
    assert {rule: why for rule, why in skipped(subject).items() if rule in TRANSCRIPT_RULES} == dict.fromkeys(TRANSCRIPT_RULES, AUDIO_ONLY)
    assert AUDIO_RULES - {"TP-DATA-MISSING"} <= set(subject.ran)  # every clip was found by listing the folder
    assert subject.summary["audio_only"] is True
    assert subject.summary["clips"] == subject.summary["readable"] == 6
    assert subject.headline.startswith("audio-only folder (no transcripts); 6 clips (6 readable)")


def test_the_audio_rules_fire_on_an_audio_only_folder(tmp_path):
    clips = audio_folder(tmp_path)
    x = voiced_samples(3.0, RATE, 6, seed=1)
    write_audio(clips[1], np.clip(x * 4.0, -1.0, 1.0), RATE)  # hard clipped: runs of full-scale samples
    write_audio(clips[2], voiced_samples(3.0, 44100, 6, seed=2), 44100)  # another sample rate
    subject = judged(tmp_path)
    fired = {f.rule_id: f for f in subject.findings}
    assert set(fired) == {"TP-DATA-CLIPPING", "TP-DATA-SAMPLE-RATE"}, [f"{f.rule_id}: {f.message}" for f in subject.findings]
    assert fired["TP-DATA-CLIPPING"].message.startswith("clip01.wav is clipped")
    assert fired["TP-DATA-SAMPLE-RATE"].message == "clip02.wav is 44,100 Hz, while most of the corpus is 22,050 Hz."
    for finding in fired.values():  # at the clip itself: no manifest, no line
        assert (finding.file, finding.line) in ((str(clips[1]), None), (str(clips[2]), None))
        assert "line" not in finding.evidence
    assert subject.verdict.value == "FAIL"  # a clip at another rate is the FAIL it is in any dataset


def test_a_silent_clip_of_an_audio_only_folder_is_a_warn(tmp_path):
    clips = audio_folder(tmp_path)
    write_audio(clips[3], np.random.default_rng(7).normal(0, 10 ** (-70 / 20), int(3.2 * RATE)), RATE)
    subject = judged(tmp_path)
    (finding,) = [f for f in subject.findings if f.rule_id == "TP-DATA-SILENT"]
    assert finding.level is Level.WARN
    assert finding.message.startswith("clip03.wav is silent (level -")


def test_a_duplicated_clip_of_an_audio_only_folder_names_no_line(tmp_path):
    clips = audio_folder(tmp_path)
    clips[4].write_bytes(clips[0].read_bytes())
    (finding,) = [f for f in judged(tmp_path).findings if f.rule_id == "TP-DATA-DUPLICATE-AUDIO"]
    assert finding.message == "clip04.wav has the same audio as clip00.wav."


def run(capsys, *args: object) -> tuple[int, str, str]:
    code = main(["data", *map(str, args), "--no-cache", "--jobs", "1"])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_folder_without_audio_is_still_exit_2(tmp_path, capsys):
    (tmp_path / "README.md").write_text("no clips here\n")
    code, _, err = run(capsys, tmp_path)
    assert code == 2
    assert "holds none of the dataset layouts" in err


def test_the_audio_only_folder_says_so_in_its_report(tmp_path, capsys):
    audio_folder(tmp_path)
    code, out, err = run(capsys, tmp_path)
    assert (code, err) == (0, "")
    assert "audio-only folder (no transcripts); 6 clips (6 readable)" in out
    assert f": {AUDIO_ONLY}" in out


@pytest.mark.parametrize(("name", "clips"), [("debian_alsa-utils_1.2.8-1", 9), ("speechbrain_tests_samples", 13)])
def test_a_real_folder_of_clips_without_transcripts_is_judged(corpus, capsys, name, clips):
    folder = corpus / SPEECH / name
    if not folder.is_dir():
        pytest.skip(f"no {name} in the corpus")
    code, out, err = run(capsys, folder, "--json")
    assert code in (0, 1), err  # judged, not exit 2
    (subject,) = json.loads(out)["subjects"]
    assert subject["summary"]["audio_only"] is True
    assert subject["summary"]["clips"] == subject["summary"]["readable"] == clips
    reasons = {s["id"]: s["reason"] for s in subject["checks"]["skipped"]}
    assert {reasons.get(rule) for rule in TRANSCRIPT_RULES} == {AUDIO_ONLY}
    assert AUDIO_RULES - {"TP-DATA-MISSING"} <= set(subject["checks"]["ran"])
    assert not {f["id"] for f in subject["findings"]} & TRANSCRIPT_RULES
    if name == "speechbrain_tests_samples":  # ASR/ at 16 kHz beside TTS/LJ050-0131.wav at 22,050 Hz: a real mix
        rate = [f for f in subject["findings"] if f["id"] == "TP-DATA-SAMPLE-RATE"]
        assert [f["message"] for f in rate] == ["TTS/LJ050-0131.wav is 22,050 Hz, while most of the corpus is 16,000 Hz."]
        assert any("annotation/ASR_dev.json" in note for note in judged(folder).notes)  # where its transcripts are
