"""What the benchmarks measure of a whole process: its seconds and its own peak memory."""

from __future__ import annotations

import subprocess
import time


def peak_run(argv: list[str]) -> tuple[float, float]:
    """Run ``argv`` to its end: its seconds and its own peak RSS (MiB), sampled every 50 ms. SystemExit, with its
    stderr, when it exits with neither 0 nor 1 (a verdict): the figure of a run that failed is no figure."""
    import psutil

    began = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    watched, peak = psutil.Process(child.pid), 0
    while child.poll() is None:
        try:
            peak = max(peak, watched.memory_info().rss)
        except psutil.Error:
            break
        time.sleep(0.05)
    seconds = time.perf_counter() - began
    stderr = child.stderr.read() if child.stderr else ""
    if child.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv[:4])} exited {child.returncode}: {stderr.strip()}")
    return seconds, peak / 2**20
