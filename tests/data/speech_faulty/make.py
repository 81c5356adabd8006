"""Writes this folder: a three-line LJSpeech dataset with two faults on purpose, for the `data` goldens.

    python tests/data/speech_faulty/make.py

Two clips are 0.5 s tones (16 kHz, mono, 16-bit PCM); the third line names a
clip that is not there (TP-DATA-MISSING) and the second has no transcript
(TP-DATA-EMPTY-TEXT). Numpy and soundfile write the same bytes on every run.
"""

from pathlib import Path

import numpy as np
import soundfile as sf

HERE = Path(__file__).parent
RATE = 16_000


def tone(hz: float) -> np.ndarray:
    t = np.arange(RATE // 2) / RATE
    return 0.3 * np.sin(2 * np.pi * hz * t)


if __name__ == "__main__":
    (HERE / "wavs").mkdir(exist_ok=True)
    sf.write(HERE / "wavs" / "clip-1.wav", tone(220.0), RATE, subtype="PCM_16")
    sf.write(HERE / "wavs" / "clip-2.wav", tone(330.0), RATE, subtype="PCM_16")
    (HERE / "metadata.csv").write_text("clip-1|A short tone.|A short tone.\nclip-2||\nclip-3|A clip that was never written.|A clip that was never written.\n")
