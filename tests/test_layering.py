"""The folder tree is the data flow: each package imports only the layers below it, and nothing imports in a
cycle. Read from the source with `ast`, so a lazy import inside a function counts as a dependency too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "dsasim"
# lowest first: a package may import its own layer and the layers before it
LAYERS = ("base", "traced", "timing", "architect", "view", "cli")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "base"


def _imports(path: Path, top_level_only: bool) -> set[str]:
    """The dsasim (and kernels) modules a file imports; top_level_only skips imports inside functions and
    `if TYPE_CHECKING:` blocks (those run later or never, so they cannot close an import-time cycle)."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if top_level_only and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if top_level_only and isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                found.add(child.module)
                found.update(f"{child.module}.{a.name}" for a in child.names)
            elif isinstance(child, ast.Import):
                found.update(a.name for a in child.names)
            visit(child)

    visit(tree)
    return {m for m in found if m.split(".")[0] in ("dsasim", "kernels")}


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _edges(top_level_only: bool) -> dict[str, set[str]]:
    edges = {}
    for name, path in MODULES.items():
        targets = {m for m in _imports(path, top_level_only) if m in MODULES or m.startswith("kernels")}
        # a submodule's import of its own parent package is not a cycle: Python initialises parents first
        edges[name] = {m for m in targets if m != name and not name.startswith(m + ".")}
    return edges


def test_the_library_never_imports_kernels_and_only_the_cli_imports_the_cli():
    edges = _edges(top_level_only=False)
    kernels = sorted(f"{a} -> {b}" for a, bs in edges.items() for b in bs if b.startswith("kernels"))
    assert not kernels, f"the library imports kernels/: {kernels}"
    cli = sorted(f"{a} -> {b}" for a, bs in edges.items() for b in bs
                 if _layer(b) == "cli" and _layer(a) != "cli")
    assert not cli, f"model code imports the command line: {cli}"


def test_each_package_imports_only_the_layers_below_it():
    edges = _edges(top_level_only=False)
    upward = sorted(f"{a} -> {b}" for a, bs in edges.items() for b in bs
                    if a != "dsasim" and not b.startswith("kernels")  # the package facade re-exports everything
                    and LAYERS.index(_layer(b)) > LAYERS.index(_layer(a)))
    assert not upward, f"imports against the data flow {' < '.join(LAYERS)}: {upward}"


def test_no_import_cycles():
    edges = _edges(top_level_only=True)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(edges.get(module, ())):
            if state.get(target) == 1:
                cycle = path[path.index(target):] + [target]
                pytest.fail(f"import cycle: {' -> '.join(cycle)}")
            if target in edges and not state.get(target):
                visit(target)
        path.pop()
        state[module] = 2

    for module in sorted(edges):
        if not state.get(module):
            visit(module)


def test_the_checks_see_a_planted_cycle_and_a_planted_upward_import(tmp_path):
    """The walkers find what they look for: two modules importing each other, a base module importing cli."""
    (tmp_path / "dsasim" / "cli").mkdir(parents=True)
    (tmp_path / "dsasim" / "__init__.py").write_text("")
    (tmp_path / "dsasim" / "cli" / "__init__.py").write_text("")
    (tmp_path / "dsasim" / "a.py").write_text("from dsasim.b import x\n")
    (tmp_path / "dsasim" / "b.py").write_text("import dsasim.a\ndef f():\n    from dsasim.cli import main\n")
    global ROOT, MODULES
    saved = ROOT, MODULES
    ROOT = tmp_path / "dsasim"
    MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
    try:
        with pytest.raises(pytest.fail.Exception, match="import cycle: dsasim.a -> dsasim.b -> dsasim.a"):
            test_no_import_cycles()
        with pytest.raises(AssertionError, match="dsasim.b -> dsasim.cli"):
            test_the_library_never_imports_kernels_and_only_the_cli_imports_the_cli()
    finally:
        ROOT, MODULES = saved
