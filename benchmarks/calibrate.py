"""Every command's verdict on every real input within reach, and each rule's false-alarm share on the clean ones.

Runs ``trainproof`` as a user does (one process per input, ``--json``) over the
shared corpus (``../shared/corpus``: real logs, speech datasets, tokenizers and
fine-tuning files other projects wrote), the project's own examples and test
data, and prints:

- one line per input: its command, verdict and the rules that fired;
- for every WARN-or-worse rule of ``data``, ``tokenizer`` and ``text``, the
  share of the clean inputs it fires on (the false-alarm table);
- with ``--baseline FILE`` (a ``--save`` of an earlier run), every input whose
  verdict or fired rules changed.

A clean input is one its source says is clean (SOURCES.tsv, or this project
made it so); only those count towards a false alarm. Inputs that are absent
(a clone without the shared corpus) are left out and counted.

    python benchmarks/calibrate.py [--more CASES.tsv] [--save FILE] [--baseline FILE]

``--more`` adds inputs of your own, one a line, tab-separated: command,
label, ``clean`` or ``faulty``, a note, then the command's arguments (paths
relative to the file's folder).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
PUBLIC = CORPUS / "public"
DATASETS = PUBLIC / "datasets"
DATASETS_IN_TEST_DATA = ("speech_faulty",)
"""The folders of tests/data that are speech datasets (the data goldens'), not training runs."""


@dataclass(frozen=True)
class Case:
    label: str
    command: str
    args: tuple[str, ...]
    clean: bool = False  # its source says nothing is wrong with it: any WARN or FAIL is a false alarm


def _epoch_cases() -> Iterator[Case]:
    logs = [
        *sorted((PUBLIC / "hf").glob("*.json")),
        *sorted((PUBLIC / "lightning").glob("*.csv")),
        *sorted((PUBLIC / "keras").glob("*.csv")),
        *sorted((PUBLIC / "coqui").glob("*.txt")),
        *sorted(p for p in (PUBLIC / "tensorboard").glob("*tfevents*")),
        *sorted((CORPUS / "gallery").glob("*/trainer_state.json")),
        *sorted((CORPUS / "real_world").glob("*/trainer_0_log.txt")),
    ]
    for log in logs:
        yield Case(str(log.relative_to(CORPUS.parent)), "epoch", (str(log),))
    for run in sorted((ROOT / "examples" / "gallery").glob("*/seed*")):
        yield Case(str(run.relative_to(ROOT)), "epoch", (str(run),))
    for run in sorted(p for p in (ROOT / "tests" / "data").iterdir() if p.is_dir() and p.name not in DATASETS_IN_TEST_DATA):
        yield Case(str(run.relative_to(ROOT)), "epoch", (str(run),))


_CLEAN_SPEECH = {"jmolina116__kaldi-yesno-tutorial__yesno", "wenet-e2e__wenet__test_resources_dataset"}


def _data_cases() -> Iterator[Case]:
    speech = DATASETS / "speech"
    for name in sorted(p.name for p in speech.iterdir()) if speech.is_dir() else ():
        clean = name in _CLEAN_SPEECH
        root = speech / name
        if name.startswith("jmolina116"):
            for split in ("train_yesno", "test_yesno"):
                yield Case(f"{name}/{split}", "data", (str(root / "data" / split),), clean)
        elif name.startswith("wenet"):
            yield Case(f"{name}/wav.scp", "data", (str(root / "test" / "resources" / "dataset"),), clean)
        elif name.startswith("NVIDIA"):
            for manifest in ("an4_train.json", "an4_val.json"):
                found = next(root.rglob(manifest), None)
                if found:
                    yield Case(f"{name}/{manifest}", "data", (str(found),))
        else:
            yield Case(name, "data", (str(root),), clean)
    for folder in sorted(p for p in (PUBLIC / "speech").iterdir() if p.is_dir()) if (PUBLIC / "speech").is_dir() else ():
        yield Case(str(folder.relative_to(CORPUS.parent)), "data", (str(folder),))
    yield Case("examples/speech/ljspeech_tiny", "data", (str(ROOT / "examples" / "speech" / "ljspeech_tiny"),))  # faulty on purpose
    for name in DATASETS_IN_TEST_DATA:
        yield Case(f"tests/data/{name}", "data", (str(ROOT / "tests" / "data" / name),))  # faulty on purpose


_CLEAN_TEXT = {"atilsamancioglu__FineTuningTR__training_set.jsonl", "Singh-Aman08__nlp-information-extraction__LoRA_training_set.jsonl"}


def _text_cases() -> Iterator[Case]:
    for path in sorted((DATASETS / "text").glob("*.jsonl")):
        yield Case(path.name, "text", (str(path),), path.name in _CLEAN_TEXT)
    yield Case("examples/text/chat.jsonl", "text", (str(ROOT / "examples" / "text" / "chat.jsonl"),))  # faulty on purpose


def _tokenizer_cases() -> Iterator[Case]:
    botchan = PUBLIC / "tokenizers" / "sentencepiece_test_botchan.txt"
    for model in sorted((PUBLIC / "tokenizers").glob("*.model")):
        yield Case(f"{model.name} on botchan", "tokenizer", (str(model), str(botchan)), True)
    example = ROOT / "examples" / "tokenizer"
    yield Case("examples/tokenizer", "tokenizer", (str(example / "tts_unigram.model"), str(example / "transcripts.txt")))  # faulty on purpose


def cases() -> list[Case]:
    return [*_epoch_cases(), *_data_cases(), *_text_cases(), *_tokenizer_cases()]


def _relative_to(folder: Path, arg: str) -> str:
    """An argument that names a file in ``folder`` as its path; an option or a value as it is."""
    return str(folder / arg) if not arg.startswith("-") and (folder / arg).exists() else arg


def more_cases(path: Path) -> list[Case]:
    """The inputs a ``--more`` file lists (see the module's docstring)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        command, label, clean, _note, *args = line.split("\t")
        out.append(Case(label, command, tuple(_relative_to(path.parent, a) for a in args), clean == "clean"))
    return out


def judge(case: Case) -> dict:
    """The verdict and fired rules (id -> level) of one input, from a whole ``trainproof`` process."""
    cmd = [sys.executable, "-m", "trainproof", case.command, *case.args, "--json", "--fail-on", "never"]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env={**os.environ, "NO_COLOR": "1"})
    if done.returncode == 2 or not done.stdout.strip():
        return {"verdict": "ERROR", "exit": done.returncode, "fired": {}, "error": done.stderr.strip()[-300:]}
    report = json.loads(done.stdout)
    fired: dict[str, str] = {}
    for subject in report["subjects"]:
        for finding in subject.get("findings", []):
            if finding["level"] in ("FAIL", "WARN"):
                fired[finding["id"]] = max(fired.get(finding["id"], "WARN"), finding["level"], key=("WARN", "FAIL").index)
    return {"verdict": report["verdict"], "exit": done.returncode, "fired": dict(sorted(fired.items()))}


def false_alarms(results: dict[str, dict], by_label: dict[str, Case]) -> list[tuple[str, str, int, int, list[str]]]:
    """(command, rule, clean inputs it fired on, clean inputs judged, their labels) for every rule that can fire."""
    from trainproof.checks.registry import RULES

    rows = []
    for command in ("data", "tokenizer", "text"):
        clean = [label for label, r in results.items() if by_label[label].command == command and by_label[label].clean and r["verdict"] != "ERROR"]
        for rule in RULES[command]:
            hits = [label for label in clean if rule.id in results[label]["fired"]]
            rows.append((command, rule.id, len(hits), len(clean), hits))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--save", type=Path, help="write the results as JSON to this file")
    parser.add_argument("--baseline", type=Path, help="a --save of an earlier run: list what changed since")
    parser.add_argument("--more", type=Path, action="append", default=[], help="a TSV of more inputs (see above)")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()

    wanted = cases() + [c for more in args.more for c in more_cases(more)]
    present = [c for c in wanted if Path(c.args[0]).exists()]
    by_label = {c.label: c for c in present}
    with ThreadPoolExecutor(args.jobs) as pool:
        results = dict(zip(by_label, pool.map(judge, present)))

    print(f"{len(present)} inputs judged ({'shared corpus absent' if not CORPUS.is_dir() else 'shared corpus present'})\n")
    for label, r in results.items():
        fired = ", ".join(f"{rule}:{level}" for rule, level in r["fired"].items()) or "-"
        print(f"{by_label[label].command:9} {r['verdict']:5} {label}  [{fired}]{'  ' + r['error'] if 'error' in r else ''}")

    print("\nFalse alarms on clean inputs (rules that fired on at least one, of every WARN/FAIL rule):")
    for command, rule, hits, judged, labels in false_alarms(results, by_label):
        if hits:
            print(f"  {command:9} {rule:28} {hits}/{judged}  {', '.join(labels)}")
    silent = sum(1 for row in false_alarms(results, by_label) if not row[2])
    print(f"  ({silent} rules fired on no clean input)")

    if args.baseline:
        before = json.loads(args.baseline.read_text())
        print("\nChanged since the baseline:")
        for label in sorted(set(before) | set(results)):
            old, new = before.get(label), results.get(label)
            if old is None or new is None:
                print(f"  {label}: {'new input' if old is None else 'input gone'}")
            elif (old["verdict"], old["fired"]) != (new["verdict"], new["fired"]):
                print(f"  {label}: {old['verdict']} {sorted(old['fired'])} -> {new['verdict']} {sorted(new['fired'])}")
    if args.save:
        args.save.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
