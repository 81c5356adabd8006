"""trainproof: a deterministic linter for ML training runs.

``trainproof.Guardian`` (the live guardian for any training loop) is imported on first use, so that ``import
trainproof`` stays light.
"""

from typing import Any

from trainproof.io.about import HOMEPAGE, __version__

__all__ = ["HOMEPAGE", "Guardian", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "Guardian":
        from trainproof.integrations.guardian import Guardian

        return Guardian
    raise AttributeError(f"module 'trainproof' has no attribute {name!r}")
