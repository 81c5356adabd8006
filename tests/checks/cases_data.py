"""Rule cases as data for ``trainproof data``: for every TP-DATA rule, a corpus where it fires and one where it must not.

A corpus is real audio in one of the layouts trainproof reads, built clean by
tests/datasets/speech.py (espeak-ng speech when installed, voiced clips
always) and broken one fault at a time by its injectors (``FAULTS``). Where a
rule fires, the corpus carries its fault; where it must not, the same corpus
is clean. tests/datasets/test_data_rules.py runs both ways (and checks each
fault is found at its manifest line and audio file).
"""

from __future__ import annotations

from dataclasses import dataclass

# rule id -> (the fault that must make it fire, the layout, the corpus size)
FIRES: dict[str, tuple[str, str, int]] = {
    "TP-DATA-MANIFEST": ("malformed_json", "nemo", 12),
    "TP-DATA-MANIFEST-FORMAT": ("crlf", "ljspeech", 12),
    "TP-DATA-DUPLICATE-ID": ("duplicate_id", "ljspeech", 12),
    "TP-DATA-MISSING": ("missing_file", "nemo", 12),
    "TP-DATA-UNREADABLE": ("truncated", "nemo", 12),
    "TP-DATA-UNLISTED": ("unlisted_file", "ljspeech", 12),
    "TP-DATA-SAMPLE-RATE": ("other_rate", "nemo", 12),
    "TP-DATA-CHANNELS": ("stereo", "nemo", 12),
    "TP-DATA-SAMPLE-FORMAT": ("other_subtype", "nemo", 12),
    "TP-DATA-DURATION": ("too_long", "nemo", 12),
    "TP-DATA-NONFINITE": ("nonfinite", "nemo", 12),
    "TP-DATA-DURATION-CLAIM": ("duration_claim", "nemo", 12),
    "TP-DATA-SILENT": ("silent", "nemo", 12),
    "TP-DATA-CLIPPING": ("clipped", "nemo", 12),
    "TP-DATA-EDGE-SILENCE": ("padded_silence", "nemo", 12),
    "TP-DATA-CUT-OFF": ("cut_end", "nemo", 12),
    "TP-DATA-DC-OFFSET": ("dc_offset", "nemo", 12),
    "TP-DATA-DUPLICATE-AUDIO": ("duplicate_audio", "nemo", 12),
    "TP-DATA-CONFLICTING-TEXT": ("conflicting_text", "nemo", 12),
    "TP-DATA-EMPTY-TEXT": ("empty_transcript", "nemo", 12),
    "TP-DATA-TEXT-RATE": ("swapped_transcripts", "nemo", 24),
    "TP-DATA-UNNORMALIZED": ("unnormalized", "nemo", 12),
    "TP-DATA-CHARACTERS": ("invisible_char", "nemo", 12),
    "TP-DATA-DUPLICATE-TEXT": ("duplicate_transcript", "nemo", 12),
    "TP-DATA-SPLIT-LEAK-AUDIO": ("split_leak_audio", "parquet", 12),
    "TP-DATA-SPLIT-LEAK-TEXT": ("split_leak_text", "parquet", 12),
}

EMPTY_MANIFEST = "header_only"
"""A metadata.csv with a header and no clip: the one data fault that is no injection into a clean corpus."""


@dataclass(frozen=True)
class DataCase:
    """``fault`` (an injector of ``FAULTS``, or ``EMPTY_MANIFEST``) applied to a clean corpus of ``layout`` and ``size``;
    None for the clean corpus itself."""

    name: str
    fault: str | None
    layout: str
    size: int
    fires: bool


def _both_ways(rule_id: str, fault: str, layout: str, size: int) -> list[DataCase]:
    return [DataCase(fault, fault, layout, size, True), DataCase(f"clean {layout} corpus", None, layout, size, False)]


CASES: dict[str, list[DataCase]] = {
    "TP-DATA-EMPTY-MANIFEST": _both_ways("TP-DATA-EMPTY-MANIFEST", EMPTY_MANIFEST, "ljspeech", 12),
    **{rule_id: _both_ways(rule_id, *fires) for rule_id, fires in FIRES.items()},
}
