"""Every number a rule compares against, in one place, with its unit.

Rules read these through a :class:`Thresholds` instance so that a
configuration can override any of them by the same name. Nothing else in the
package hard-codes a threshold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, get_type_hints


class Range:
    """The values a threshold may take: at least ``low`` (above it when ``above``), at most ``high`` (below it when ``below``)."""

    __slots__ = ("low", "high", "above", "below")

    def __init__(self, low: float, high: float = math.inf, above: bool = False, below: bool = False) -> None:
        self.low, self.high, self.above, self.below = low, high, above, below

    def __contains__(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        return (value > self.low if self.above else value >= self.low) and (value < self.high if self.below else value <= self.high)

    def __str__(self) -> str:
        low = f"{'>' if self.above else '>='} {self.low:g}"
        return low if self.high == math.inf else f"{low} and {'<' if self.below else '<='} {self.high:g}"


COUNT = Range(1)
AT_LEAST_2 = Range(2)
AT_LEAST_3 = Range(3)
NON_NEGATIVE = Range(0)
POSITIVE = Range(0, above=True)
RATIO = Range(1)
"""A "this many times" threshold: below 1 it would fire on improvement."""
FRACTION = Range(0, 1)
SHARE = Range(0, 1, above=True)
"""A share of the points that must be there: 0 would make the rule fire on nothing."""
QUANTILE = Range(0, 1, above=True, below=True)
"""A quantile strictly inside (0, 1): the normal quantile it is matched with is infinite at 1."""


class Thresholds:
    """Named thresholds with units. Read them as attributes; an instance is immutable.

    Each is declared as ``NAME: Annotated[type, unit, meaning, range] = default``. A
    plain class rather than a dataclass: ``trainproof epoch`` imports this on
    every pre-commit run, and generating a 40-field dataclass costs more than
    everything else in the module.
    """

    # --- how a noisy curve is summarised -------------------------------------
    MIN_TREND_POINTS: Annotated[int, "points", "Fewer finite training-loss points than this and no curve rule runs.", AT_LEAST_3] = 5
    HEAD_POINTS: Annotated[int, "points", "The start level is the median of this many first finite loss points.", COUNT] = 3
    TAIL_SHARE: Annotated[float, "fraction of points", "The end level is the median of this last share of the points (at least HEAD_POINTS).", SHARE] = 0.1
    SEGMENTS: Annotated[int, "segments", "The curve is summarised by the medians of at most this many equal-count segments.", COUNT] = 20
    MIN_SEGMENT_POINTS: Annotated[int, "points", "Each segment holds at least this many points.", COUNT] = 3
    NOISE_SIGMAS: Annotated[float, "robust sigmas", "A change smaller than this many robust noise sigmas (of log loss, for a positive loss) is noise.", NON_NEGATIVE] = 4.0
    PROOF_Z: Annotated[float, "standard errors", "A FAIL that rests on a level (no learning, a compare floor, a baseline's fall) holds only when it holds this many standard errors of that level in the run's favour; short of that the data cannot decide, and the rule says so at WARN.", NON_NEGATIVE] = 2.0
    NOISE_FALLBACK_QUANTILE: Annotated[float, "quantile", "When most first differences are alike (a log printed with few decimals), the noise is read from this quantile of their absolute deviations, divided by the normal quantile that matches it (1.645 at 0.9), instead of from their median.", QUANTILE] = 0.9

    GRAD_NONFINITE_FAIL_SHARE: Annotated[float, "fraction of logged norms", "Non-finite gradient norms with the loss finite throughout are a WARN (a loss scaler skipping overflowing steps); they are a FAIL when at least this share of the logged norms is non-finite, or the last one is.", SHARE] = 0.5

    # --- divergence, dead runs, flat and zero loss ---------------------------
    DIVERGE_START_RATIO: Annotated[float, "x start level", "The loss diverged when its end level is at least this many times its start level.", RATIO] = 1.5
    DIVERGE_BEST_RATIO: Annotated[float, "x best level", "The loss diverged when its end level is at least this many times its best level...", RATIO] = 2.0
    DIVERGE_GIVEBACK_SHARE: Annotated[float, "fraction of the gain", "...and the rise since the best gave back at least this share of what the run had gained before it.", FRACTION] = 0.25
    DEAD_MIN_IMPROVEMENT: Annotated[float, "fraction of head level", "A run whose end level is not this share below its head level learned nothing...", FRACTION] = 0.05
    DEAD_TREND_T: Annotated[float, "t statistic", "...nor one whose fall is weaker than this t of the rank correlation between step and loss.", NON_NEGATIVE] = 3.0
    FLAT_SAME_SHARE: Annotated[float, "fraction of points", "The loss is flat when this share of its points carry the very same value.", SHARE] = 0.9
    FLAT_COARSE_QUANTA: Annotated[float, "steps of the printed digit", "A repeated loss of at most this many steps of the finest digit the log prints (0.01 for two decimals) is a WARN, not a FAIL: a converged loss rounded to the same print looks flat.", POSITIVE] = 100.0
    ZERO_MIN_POINTS: Annotated[int, "points", "A run of exact zeros to the end of the log must hold at least this many points.", COUNT] = 3
    ZERO_ROUNDING_FLOOR: Annotated[float, "loss units", "Zeros that follow losses already below this are taken as log rounding of a converged loss, not a masked loss.", NON_NEGATIVE] = 1e-3

    # --- plateau -------------------------------------------------------------
    PLATEAU_GAIN: Annotated[float, "fraction of level", "After the plateau step the loss improved by less than this share of its level.", FRACTION] = 0.05
    PLATEAU_MIN_SHARE: Annotated[float, "fraction of the run", "A plateau is reported when it covers at least this share of the run's steps.", SHARE] = 0.3
    PLATEAU_WARN_S: Annotated[float, "seconds", "A plateau longer than this in wall-clock time is a WARN; shorter, or of unknown length, an INFO note.", NON_NEGATIVE] = 3600.0

    # --- learning rate -------------------------------------------------------
    LR_ZERO_FAIL_SHARE: Annotated[float, "fraction of logged steps", "A learning rate of exactly 0 on at least this share of logged steps is a FAIL.", SHARE] = 0.95
    MIN_LR_POINTS: Annotated[int, "points", "Fewer finite learning-rate points than this and the learning-rate rules do not run.", COUNT] = 3
    LR_ZERO_WARN_SHARE: Annotated[float, "fraction of logged steps", "A learning rate of exactly 0 on at least this share of logged steps is a WARN.", SHARE] = 0.25
    LR_ZERO_TAIL_MIN_POINTS: Annotated[int, "points", "A learning rate of 0 from some step to the end, over at least this many points...", COUNT] = 3
    LR_ZERO_TAIL_MIN_SHARE: Annotated[float, "fraction of logged steps", "...and at least this share of the logged steps, is a WARN.", SHARE] = 0.05

    # --- spikes --------------------------------------------------------------
    SPIKE_NEIGHBOURS: Annotated[int, "points", "A spike is judged against the medians of this many points before it and after it.", COUNT] = 5
    GRAD_SPIKE_RATIO: Annotated[float, "x local median", "A gradient norm at least this many times the higher of its two neighbour medians is a spike.", RATIO] = 10.0
    LOSS_SPIKE_RATIO: Annotated[float, "x local median", "A loss at least this many times the higher of its two neighbour medians...", RATIO] = 2.0
    LOSS_SPIKE_SIGMAS: Annotated[float, "robust sigmas", "...and this many robust noise sigmas above it is a spike that recovered.", NON_NEGATIVE] = 10.0
    SPIKE_MIN_POINTS: Annotated[int, "points", "Fewer points than this and the spike rules do not run.", AT_LEAST_3] = 8

    # --- eval loss -----------------------------------------------------------
    OVERFIT_MIN_EVALS: Annotated[int, "evaluations", "An eval-loss series with fewer points than this is not judged for overfitting.", AT_LEAST_2] = 4
    OVERFIT_RISE: Annotated[float, "fraction of best eval loss", "Eval loss that ends this share above its minimum has climbed...", NON_NEGATIVE] = 0.1
    OVERFIT_MIN_EVALS_AFTER_BEST: Annotated[int, "evaluations", "...over at least this many evaluations after the best one.", COUNT] = 2
    OVERFIT_END_EVALS: Annotated[int, "evaluations", "The eval loss at the end is the median of (up to) this many last evaluations after the best one.", COUNT] = 3
    EVAL_WORSE_MIN_EVALS_AFTER_BEST: Annotated[int, "evaluations", "Eval loss is judged worse than its best only with at least this many evaluations after the best one: one or two higher evaluations are a wobble a schedule can still recover from.", COUNT] = 3
    EVAL_WORSE_END_EVALS: Annotated[int, "evaluations", "Each of (up to) this many last evaluations must stay EVAL_WORSE_RISE above the best: the end level is where the run stays, not one bad evaluation.", COUNT] = 3
    EVAL_WORSE_RISE: Annotated[float, "fraction of best eval loss", "The last evaluations are each at least this share above the best: twice OVERFIT_RISE, since without a falling training loss to corroborate it the rise must be plainly large on its own.", NON_NEGATIVE] = 0.2
    EVAL_METRIC_FLOOR: Annotated[float, "fraction of the series' highest", "A higher-is-better eval metric's value below this share of the series' highest value (an accuracy collapsed to 0, an MCC gone negative) is judged as that share: a collapse is a large fall, not a point left out.", POSITIVE] = 0.001
    EVAL_WORSE_SIGMAS: Annotated[float, "robust sigmas", "...and the lowest of them is above the best by more than this many robust noise sigmas (of the eval series' log loss) plus sqrt(2 ln n) for its n evaluations, how far the lowest of n noisy values falls below their level by chance: the best is one point picked for being low, so it is compared with its own selection bias added. Below NOISE_SIGMAS because a short eval series' noise is estimated with its trend in it.", NON_NEGATIVE] = 2.5
    EVAL_RISING_HEAD_EVALS: Annotated[int, "evaluations", "An eval series whose best evaluation is one of its first this many may be judged on a steady rise from its start (TP-OVERFIT, TP-EVAL-WORSE): the rise has no dip before it to compare with, and is proven by its consistency instead. Few: the lowest point of a series that wanders is followed by a rise back to its level wherever it falls, so a best picked from later would often show a trend that is only the wander...", COUNT] = 2
    EVAL_RISING_MIN_EVALS: Annotated[int, "evaluations", "...over at least this many evaluations from the best one to the end, the best included...", AT_LEAST_3] = 6
    EVAL_RISING_TREND_T: Annotated[float, "t statistic", "...rising in a trend at least this consistent: the t of the rank correlation between step and value over those evaluations (as DEAD_TREND_T judges a falling training loss; an eval series that wanders without a trend stays below it)...", NON_NEGATIVE] = 3.0
    EVAL_RISING_RISE: Annotated[float, "fraction of best eval loss", "...and ending at least this share above the best (the end level as the rule measures it: the median of its last evaluations): half OVERFIT_RISE, since the trend's consistency is evidence a comparison of two levels lacks...", NON_NEGATIVE] = 0.05
    EVAL_RISING_SIGMAS: Annotated[float, "robust sigmas", "...and above the best by more than this many robust noise sigmas of the series' log values from the best on (from their first differences: a steady rise is not counted as noise), so the rise is more than one evaluation's jitter. No sqrt(2 ln n) allowance for the best being the lowest of n, as EVAL_WORSE_SIGMAS has: here the rank trend, not this gap, is what rules out chance; the gap keeps a rise within one evaluation's jitter from counting.", NON_NEGATIVE] = 3.0

    # --- speed ---------------------------------------------------------------
    STEP_TIME_CLIFF_RATIO: Annotated[float, "x earlier median", "Seconds per step at least this many times the earlier median, sustained, is a cliff.", RATIO] = 2.0
    STEP_TIME_CLIFF_MIN_SHARE: Annotated[float, "fraction of points", "The slow stretch must cover at least this share of the timed points.", SHARE] = 0.1
    LOADER_BOUND_SHARE: Annotated[float, "fraction of step time", "Data loading taking at least this share of each step makes the run loader-bound.", SHARE] = 0.5
    MIN_TIMED_POINTS: Annotated[int, "points", "Fewer timed points than this and the speed rules do not run.", COUNT] = 10
    STEP_TIME_NORMAL_QUANTILE: Annotated[float, "quantile", "The run's normal speed is this quantile of its segments' median seconds per step (low, so a long slow stretch does not become the norm).", FRACTION] = 0.25

    # --- live judging (the HF callback, trainproof watch) ---------------------
    GUARD_MIN_POINTS: Annotated[int, "points", "A growing run is first judged at this many training-loss points (a non-finite loss is judged at once).", COUNT] = 5
    GUARD_JUDGE_GROWTH: Annotated[float, "fraction of the history", "A growing run is judged again when its history has grown by this share, so each record costs amortised constant time.", POSITIVE] = 0.1

    # --- compare -------------------------------------------------------------
    CMP_FLOOR_RATIO: Annotated[float, "x baseline floor", "A best loss level at least this many times the baseline's is a FAIL.", RATIO] = 1.5
    CMP_END_RATIO: Annotated[float, "x baseline end", "An end loss level at least this many times the baseline's is a WARN.", RATIO] = 1.25
    CMP_IMPROVEMENT_SHARE: Annotated[float, "fraction of baseline improvement", "Improving by less than this share of what the baseline improved is a WARN.", FRACTION] = 0.5
    CMP_GRAD_SCALE_RATIO: Annotated[float, "x baseline median", "A median gradient norm this many times larger (or smaller) than the baseline's is a WARN.", RATIO] = 10.0
    CMP_LR_ZERO_SHARE: Annotated[float, "fraction of logged steps", "A learning rate of 0 on at least this share of the run's logged steps...", SHARE] = 0.5
    CMP_BASELINE_LR_ZERO_SHARE: Annotated[float, "fraction of logged steps", "...while the baseline's is 0 on less than this share of its own, is a FAIL.", SHARE] = 0.05

    # --- presentation (no verdict, finding or exit code depends on these) -----
    CHART_SHARED_AXIS_MAX_RATIO: Annotated[float, "x training-loss median", "Presentation only: the HTML report draws an eval-loss curve on the training-loss chart when their medians are less than this many times apart, else on a chart of its own.", RATIO] = 10.0

    # --- speech datasets (trainproof data) -----------------------------------
    DATA_EXAMPLES: Annotated[int, "findings", "A data rule reports at most this many clips by name (the first in manifest order) and counts the rest.", COUNT] = 5
    DATA_MIN_DURATION_S: Annotated[float, "seconds", "A clip shorter than this is too short for a TTS/ASR batch (most recipes drop it silently).", NON_NEGATIVE] = 0.5
    DATA_MAX_DURATION_S: Annotated[float, "seconds", "A clip longer than this is over the usual TTS/ASR length limit (most recipes drop it silently).", POSITIVE] = 20.0
    DATA_DURATION_TOLERANCE_S: Annotated[float, "seconds", "A manifest duration further than this from the audio's own (and DATA_DURATION_TOLERANCE_SHARE of it) disagrees.", NON_NEGATIVE] = 0.1
    DATA_DURATION_TOLERANCE_SHARE: Annotated[float, "fraction of the duration", "See DATA_DURATION_TOLERANCE_S: both must be exceeded.", FRACTION] = 0.05
    DATA_CLIP_RUN: Annotated[int, "samples", "This many consecutive full-scale samples in a channel are clipping (a peak-normalised clip touches full scale for one or two).", COUNT] = 3
    DATA_CLIP_SHARE: Annotated[float, "fraction of samples", "...or this share of full-scale samples in the clip.", SHARE] = 0.001
    DATA_EDGE_SILENCE_S: Annotated[float, "seconds", "Leading or trailing silence (frames 40 dB under the clip's own level) longer than this.", POSITIVE] = 1.0
    DATA_CUT_EDGE_DB: Annotated[float, "dB under the clip level", "A first or last 10 ms frame within this many dB of the clip's level is speech cut off at the file's edge.", NON_NEGATIVE] = 6.0
    DATA_DC_OFFSET: Annotated[float, "fraction of full scale", "A mean sample value at least this far from 0 is a DC offset.", SHARE] = 0.05
    DATA_SILENT_DB: Annotated[float, "dBFS", "A clip whose speech level (95th percentile frame energy) is under this is silent.", Range(-200, 0)] = -50.0
    DATA_CPS_MIN_CLIPS: Annotated[int, "clips", "Characters per second are judged against the corpus (or a speaker) only with at least this many clips.", AT_LEAST_3] = 20
    DATA_CPS_WARN_Z: Annotated[float, "robust z", "Characters per second this many robust sigmas (MAD x 1.4826) from the median, even at the edge of what its measurement allows (DATA_CPS_EDGE_S, DATA_CPS_SIGMA_SE), is a WARN: the text may not match the audio.", POSITIVE] = 4.0
    DATA_CPS_FAIL_Z: Annotated[float, "robust z", "...and this many is a FAIL: the transcript belongs to other audio, when the clip is that far even at the edge of what its measurement allows (DATA_CPS_EDGE_S, DATA_CPS_SIGMA_SE).", POSITIVE] = 8.0
    DATA_CPS_EDGE_S: Annotated[float, "seconds", "How far a clip's speech duration may be off: edge silence is found to a 10 ms frame at each end. A WARN or FAIL must hold with the speech this much longer or shorter, whichever is nearer the median rate.", NON_NEGATIVE] = 0.02
    DATA_CPS_SIGMA_SE: Annotated[float, "standard errors", "A WARN or FAIL must hold with the group's sigma widened by this many standard errors of a MAD estimate from its clips, so a small group's uncertain spread cannot make one.", NON_NEGATIVE] = 2.0
    DATA_SCRIPT_SHARE: Annotated[float, "fraction of transcripts", "A script used by fewer than this share of the transcripts is foreign to the corpus; a transcript using one is a WARN.", SHARE] = 0.1
    DATA_DUPLICATE_MIN_WORDS: Annotated[int, "distinct words", "A repeated transcript is judged only with at least this many different words (a letter of Chinese, Japanese, Thai, Lao, Khmer or Burmese counts as one): a command word or a yes/no or digit string said by many clips is a vocabulary, not a slip.", COUNT] = 4
    DATA_DUPLICATE_MIN_LETTERS: Annotated[int, "letters and digits", "...and at least this many letters and digits (a Chinese character counts as two), so four short words ('one two three four') are not a sentence either.", COUNT] = 20

    # --- tokenizers against their text (trainproof tokenizer) -----------------
    TOK_EXAMPLES: Annotated[int, "findings", "A tokenizer rule names at most this many lines (the first in file order) and counts the rest.", COUNT] = 5
    TOK_UNK_FAIL_SHARE: Annotated[float, "fraction of characters", "Unknown tokens are a FAIL when the characters they stand for make this share of the text's characters.", SHARE] = 0.005
    TOK_UNK_WARN_SHARE: Annotated[float, "fraction of characters", "Under the FAIL, unknown tokens are a WARN from this share of the text's characters, an INFO below it: twice the 0.05% that sentencepiece's default character_coverage leaves unknown in a model's own training text.", SHARE] = 0.001
    TOK_BYTE_WARN_SHARE: Annotated[float, "fraction of tokens", "Byte-fallback tokens from this share of all tokens on are a WARN (rare characters falling back is normal).", SHARE] = 0.01
    TOK_FERTILITY_WARN: Annotated[float, "tokens per word", "A text averaging more tokens per word than this is split far finer than the tokenizer's own language would be.", POSITIVE] = 2.5
    TOK_CHAR_FERTILITY_WARN: Annotated[float, "tokens per character", "The same for characters of scripts written without spaces (Han, Kana, Thai, ...): tokenizers built for them take 0.3-1 per character, English-only byte-level ones 3.", POSITIVE] = 2.0
    TOK_WORD_CHARS: Annotated[int, "characters", "For TP-TOK-FERTILITY a line counts at least one word per this many of its characters outside scripts without spaces: text run together (Sanskrit written with sandhi, a line with its spaces lost) is not one word per line. Above the 6 characters an English word and its space take on average, so ordinary prose is counted by its spaces.", Range(2)] = 7
    TOK_MIN_LINES: Annotated[int, "lines", "Per-line rates (tokens per character, tokens per second) are judged against the text's own spread only with at least this many lines.", AT_LEAST_3] = 20
    TOK_OUTLIER_Z: Annotated[float, "robust z", "A line whose tokens per character or per second of audio is this many robust sigmas (MAD x 1.4826) above the median is an outlier.", POSITIVE] = 6.0
    TOK_DENSE_MIN_CHARS: Annotated[int, "characters", "A line is judged for its tokens per character only from this length on: a shorter one's rate swings with one piece.", COUNT] = 16
    TOK_DENSE_RATIO: Annotated[float, "times the median", "A dense line takes at least this many times the median tokens per character: clean English reaches 2.9 at most (botchan), base64 and other scripts 3-12.", RATIO] = 3.0
    TOK_NUMBER_MIN: Annotated[int, "numbers", "Digit strings of one length are judged for consistent splitting only when the text holds at least this many distinct ones of that length.", COUNT] = 5

    # --- fine-tuning datasets (trainproof text) --------------------------------
    TEXT_EXAMPLES: Annotated[int, "findings", "A text rule names at most this many lines (the first in file order) and counts the rest.", COUNT] = 5
    TEXT_REPEAT_MIN_CHARS: Annotated[int, "characters", "An answer shorter than this is not judged for repetition ('Noooooooooo' is a reply, not a loop).", COUNT] = 100
    TEXT_REPEAT_SHARE: Annotated[float, "fraction of characters", "An answer is one unit repeated when a single run of that unit, back to back, covers at least this share of it.", Range(0.5, 1, above=True)] = 0.8
    TEXT_REPEAT_TIMES: Annotated[int, "repeats", "An answer is one unit repeated only when its run holds the unit at least this many times.", AT_LEAST_2] = 10
    TEXT_REPEAT_MAX_UNIT: Annotated[int, "characters", "The longest unit whose run makes an answer one unit repeated (a phrase or a paragraph looping, not a document).", COUNT] = 1000
    TEXT_LENGTH_MIN_ROWS: Annotated[int, "rows", "An answer's length is judged against the file's other answers only with at least this many rows.", AT_LEAST_3] = 20
    TEXT_LENGTH_Z: Annotated[float, "robust z", "An answer far longer than the rest is this many robust sigmas (MAD x 1.4826) above the median of the log of the file's answer lengths...", POSITIVE] = 6.0
    TEXT_LENGTH_RATIO: Annotated[float, "times the median", "...and at least this many times the median answer's length (answers of near-equal length have a tiny MAD).", RATIO] = 10.0

    def __init__(self, **overrides: float | int) -> None:
        unknown = set(overrides) - set(names())
        if unknown:
            raise TypeError(f"unknown thresholds: {', '.join(sorted(unknown))}")
        for name, value in overrides.items():  # an instance attribute shadows the class default
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Thresholds are immutable; use with_overrides()")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Thresholds) and all(getattr(self, n) == getattr(other, n) for n in names())

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, n) for n in names()))

    def __repr__(self) -> str:
        return f"Thresholds({', '.join(f'{k}={v!r}' for k, v in sorted(vars(self).items()))})"

    def with_overrides(self, overrides: dict[str, float | int]) -> Thresholds:
        return Thresholds(**{**vars(self), **overrides})


@dataclass(frozen=True)
class ThresholdInfo:
    name: str
    default: float | int
    type: type
    unit: str
    doc: str
    range: Range


def names() -> tuple[str, ...]:
    """Threshold names in declaration order."""
    return tuple(n for n in Thresholds.__annotations__ if n.isupper())


def describe() -> tuple[ThresholdInfo, ...]:
    """Every threshold with its default, type, unit and meaning, in declaration order."""
    hints = get_type_hints(Thresholds, include_extras=True)
    out = []
    for name in names():
        hint = hints[name]
        kind = hint.__origin__
        unit, doc, valid = hint.__metadata__
        out.append(ThresholdInfo(name, getattr(Thresholds, name), kind, unit, doc, valid))
    return tuple(out)


DEFAULTS = Thresholds()
