"""The progress line a long command shows on a terminal while it works, and nowhere else."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

Progress = Callable[[int, int], None]


def terminal_progress(options: Mapping[str, Any], command: str, what: str) -> Progress | None:
    """``show(done, total)`` writing "trainproof COMMAND: done/total WHAT" over itself on stderr; None in CI, under
    --json (``options["progress"]`` False) or when stderr is not a terminal, where a line per update would be noise."""
    if not options.get("progress", True) or os.environ.get("CI") or not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        sys.stderr.write(f"\rtrainproof {command}: {done:,}/{total:,} {what}{chr(10) if done >= total else ''}")
        sys.stderr.flush()

    return show
