"""What a one-line error tells the user to do, where the fix depends on how trainproof was run: from a shell, or as a
pre-commit hook (whose environment and arguments come from ``.pre-commit-config.yaml``, not from the command line)."""

from __future__ import annotations

import json
import os
import re

from trainproof.io.errors import MissingDependencyError

COMMAND_EXTRAS = {"data": ("data",), "tokenizer": ("tokenizer",), "text": ("tokenizer",)}
"""The extras whose packages a command reads its inputs with: a hook lacking one package needs them all listed, since
``additional_dependencies`` in a user's config replaces the hook's own list."""


def under_pre_commit() -> bool:
    """Whether a pre-commit hook runs this process (pre-commit sets PRE_COMMIT=1 for every hook it runs)."""
    return os.environ.get("PRE_COMMIT") == "1"


def missing_dependency(error: MissingDependencyError, command: str) -> str:
    """The line for a package not installed, naming the command run, not the module that needed it; under pre-commit,
    the hook's ``additional_dependencies`` to set (every package the command needs here), else the install line."""
    who = f"trainproof {command}"
    why = f" {error.use}" if error.use else (f" ({error.purpose})" if not error.purpose.startswith(who) else "")
    needs = f"{who} needs the optional package '{error.package}'{why}"
    extras = tuple(dict.fromkeys((*COMMAND_EXTRAS.get(command, ()), error.extra)))
    if under_pre_commit():
        listed = ", ".join(json.dumps(requirement) for requirement in requirements(extras, error.package))
        return (
            f"{needs}, which this pre-commit hook's environment does not have: list the packages it needs in the hook's "
            f"additional_dependencies in .pre-commit-config.yaml (your list replaces the hook's own): additional_dependencies: [{listed}]"
        )
    listed = ",".join(extras)
    named = f"[{listed}] extra{'s' if len(extras) > 1 else ''}"
    return f"{needs}, which is not installed: install trainproof's {named} from its repository (pip install -e '.[{listed}]' in a clone)"


def requirements(extras: tuple[str, ...], package: str) -> list[str]:
    """The requirements trainproof's metadata lists for ``extras`` (``tokenizers>=0.15``), in its order; just
    ``package`` when trainproof runs from a source tree that was never installed, so has no metadata."""
    from importlib import metadata

    try:
        declared = metadata.requires("trainproof") or []
    except metadata.PackageNotFoundError:
        declared = []
    found: dict[str, None] = {}
    for extra in extras:
        for line in declared:
            requirement, _, marker = line.partition(";")
            if re.search(rf"""\bextra\s*==\s*["']{re.escape(extra)}["']""", marker):
                found[requirement.strip()] = None
    return list(found) or [package]


def hook_args(usage: str) -> str:
    """A command's paths as a hook's ``args`` take them: ``TOKENIZER TEXT...`` is ``args: [--, TOKENIZER, TEXT...]``."""
    return f"args: [--, {', '.join(usage.split())}]"
