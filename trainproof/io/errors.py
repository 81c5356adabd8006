"""One error base class; the CLI turns any of them into one stderr line and exit 2."""

from __future__ import annotations

EXIT_OK = 0
"""Every input was judged and none FAILs (warnings allowed)."""
EXIT_FAIL = 1
"""At least one input FAILs."""
EXIT_ERROR = 2
"""Something could not be judged: bad input, bad arguments, missing dependency, internal error."""


class TrainproofError(Exception):
    """An error about one input or the invocation, reported as one line, exit 2."""


class InputError(TrainproofError):
    """An input file is missing, unreadable, empty, truncated or of an unknown format."""

    def __init__(self, path: object, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class UsageError(TrainproofError):
    """The command line asks for something impossible."""


class ClusterError(TrainproofError):
    """A compute cluster asked for (``--engine ray``) cannot be reached, or cannot run the analysis."""


class MissingDependencyError(TrainproofError, ImportError):
    """An optional extra is needed for this input or integration and is not installed.

    Also an ImportError, so ``from trainproof.integrations.hf import ...``
    without transformers fails the way Python code expects, with one clear line.

    ``purpose`` is who needs it (``trainproof data``), ``use`` what for (``to read a HuggingFace tokenizer folder``):
    the command line says the command actually run in its place (:mod:`trainproof.cli.hints`).
    """

    def __init__(self, package: str, extra: str, purpose: str, *, use: str = "") -> None:
        self.package = package
        self.extra = extra
        self.purpose = purpose
        self.use = use
        super().__init__(
            f"{purpose} needs the optional package '{package}'{' ' + use if use else ''}, which is not installed: "
            f"reinstall trainproof from its repository with the [{extra}] extra (pip install -e '.[{extra}]' in a clone), "
            f"or pip install {package}"
        )
