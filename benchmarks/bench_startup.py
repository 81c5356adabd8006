"""How long `trainproof epoch` takes on a small log, against a bare `python -c "import numpy"`.

Target: at most 1.5x the bare numpy import, because the command runs in
pre-commit hooks and CI steps many times a day. Both are measured in this
run, interleaved, as the median of several wall-clock timings; the ratio is
what to read, not the absolute numbers. The package's bytecode is compiled
first, as `pip install` does, so that an environment with
PYTHONDONTWRITEBYTECODE set does not time the compiler instead.

    python benchmarks/bench_startup.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 1.5


def small_log(folder: Path) -> Path:
    entries = [{"epoch": i / 60, "grad_norm": 0.5, "learning_rate": 1e-4, "loss": 2.0 * 0.97**i, "step": 5 * i} for i in range(1, 61)]
    path = folder / "trainer_state.json"
    path.write_text(json.dumps({"global_step": 300, "max_steps": 300, "log_history": entries}))
    return path


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    import trainproof

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(trainproof.__file__).parent)], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        log = small_log(Path(tmp))
        baseline_cmd = [sys.executable, "-c", "import numpy"]
        # What pre-commit hooks and CI steps run: the console script, or its exact equivalent.
        script = shutil.which("trainproof")
        entry = [script] if script else [sys.executable, "-m", "trainproof"]
        epoch_cmd = [*entry, "epoch", str(log)]
        timed(baseline_cmd), timed(epoch_cmd)  # warm the file cache
        baseline, epoch = [], []
        for _ in range(args.repeat):
            baseline.append(timed(baseline_cmd))
            epoch.append(timed(epoch_cmd))
    b, e = statistics.median(baseline), statistics.median(epoch)
    ratio = e / b
    print(f"python -c 'import numpy'      median {b * 1000:7.1f} ms over {args.repeat} runs")
    print(f"trainproof epoch (60 points)  median {e * 1000:7.1f} ms over {args.repeat} runs  ({' '.join(epoch_cmd[:-2])})")
    print(f"ratio {ratio:.2f}x (target <= {TARGET}x): {'OK' if ratio <= TARGET else 'OVER TARGET'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
