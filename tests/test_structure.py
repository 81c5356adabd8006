"""One floor per layer: every import in the package runs down (or across one floor), never up, and no module
reaches itself through its imports.

The floors, bottom to top. A module may import a module of its own floor or of a floor below; every import
counts, whether at the top of a module, inside a function (imported on first use) or for type checking only.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.helpers import REPO

PACKAGE = REPO / "trainproof"

FLOORS: tuple[tuple[str, ...], ...] = (
    # shared I/O: errors, bounded reading, output files, safe text, numbers as printed, the version
    ("trainproof.io",),
    # subjects: per subject its readers and its model
    ("trainproof.runs", "trainproof.data", "trainproof.tokenizer", "trainproof.text"),
    # rules, their statistics and thresholds
    ("trainproof.checks",),
    # the judge, the report it returns, the settings it judges by
    ("trainproof.judge", "trainproof.report", "trainproof.config"),
    # commands above the judge; renderers beside the report
    ("trainproof.commands", "trainproof.render"),
    # entry points
    # and the package itself, whose Guardian is an integration's
    ("trainproof", "trainproof.cli", "trainproof.integrations", "trainproof.__main__"),
)


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def floor(module: str) -> int:
    """The floor of a module: the one whose longest prefix names it."""
    best, found = -1, -1
    for level, prefixes in enumerate(FLOORS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), level
    assert found >= 0, f"{module} is on no floor: add it to FLOORS"
    return found


def imports(module: str) -> Iterator[str]:
    """Every trainproof module ``module`` imports, wherever in the file the import is."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name.startswith("trainproof") and name != module:
                yield name


GRAPH = {module: sorted(set(imports(module))) for module in MODULES}


def test_every_module_is_on_a_floor():
    for module in MODULES:
        floor(module)


def test_no_import_runs_up_a_floor():
    upward = [
        f"{module} (floor {floor(module)}) imports {target} (floor {floor(target)})"
        for module, targets in GRAPH.items()
        for target in targets
        if floor(target) > floor(module)
    ]
    assert upward == []


def cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_itself_round_a_circle():
    assert cycles(GRAPH) == []


def test_the_checker_sees_a_circle_and_an_upward_import():
    """The test's own machinery: a planted circle is found, and a planted upward import is named."""
    assert cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c"]]
    assert floor("trainproof.io.errors") < floor("trainproof.runs.readers.hf") < floor("trainproof.checks.base")
    assert floor("trainproof.checks.base") < floor("trainproof.judge") < floor("trainproof.commands.epoch")
    assert floor("trainproof.commands.epoch") < floor("trainproof.cli")
