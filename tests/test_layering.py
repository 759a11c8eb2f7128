"""The folder tree is the data flow: each package imports only the layers below it, and nothing imports in a
cycle. Inside architect/ the subpackages are the flow again (problems <- nests <- model <- search <- studies). The kernels (kernels/, installed as dsasim.kernels) sit beside the command line, above the library: they may
import any of it but the CLI, and the library reaches them only through entry points. Read from the source with
`ast`, so a lazy import inside a function and a type-only import count as dependencies too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "dsasim"
KERNELS = ROOT.parent / "kernels"  # installed as dsasim.kernels (pyproject's package-dir; dsasim/kernels links here)
# lowest first: a package may import its own layer and the layers before it
LAYERS = ("base", "traced", "timing", "architect", "view", "cli")
# Import cycles known and being removed elsewhere, each the exact set of modules of one strongly connected part of
# the import graph. An entry that no longer occurs as it is written fails the test too (delete it then).
KNOWN_CYCLES: dict[str, frozenset[str]] = {}
# Inside architect/, lowest first: what is computed, how it is scheduled (nests as data), the closed forms, which
# schedule is best, many searches (sweeps, networks, shapes). A module may import its own step and those before it.
ARCHITECT = "dsasim.architect"
ARCHITECT_FLOW = ("problems", "nests", "model", "search", "studies")
# Imports against that flow, each made because a file still holds two concepts and sits with the higher one
# (bench/relayout.py's HOME); the split named removes the entry. An entry that no longer occurs fails the test too.
KNOWN_UPWARD: dict[str, str] = {
    "dsasim.architect.problems.layers -> dsasim.architect.nests.loopnest":
        "split loopnest.py: the problems (Axis, TensorSpec, Problem, ConvProblem, MatmulProblem, problem_from_json) "
        "into problems/problem.py",
    "dsasim.architect.problems.chain -> dsasim.architect.nests.loopnest": "the same loopnest.py split",
    "dsasim.architect.problems.chain_catalogue -> dsasim.architect.nests.loopnest": "the same loopnest.py split",
    "dsasim.architect.problems.zigzag_workload -> dsasim.architect.nests.loopnest": "the same loopnest.py split",
    "dsasim.architect.problems.chain -> dsasim.architect.model.lower_bounds":
        "ConvChain.compulsory_bytes is a bound: move it to model/lower_bounds.py (chain_compulsory_bytes)",
    "dsasim.architect.problems.chain_catalogue -> dsasim.architect.search.gemm_chain":
        "split gemm_chain.py: GemmChain and parse_gemm_chain into problems/, GemmChainNest into nests/, "
        "analyze_gemm_chain into model/, GemmChainSpace stays in search/",
}


def _module_name(path: Path) -> str:
    if path.parent == KERNELS:  # kernels/x.py is the module dsasim.kernels.x
        parts = ("dsasim", "kernels", path.stem)
    else:
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "base"


def _is_kernels(module: str) -> bool:
    return module == "dsasim.kernels" or module.startswith("dsasim.kernels.") or module.split(".")[0] == "kernels"


def _imports(path: Path) -> set[str]:
    """Every dsasim (and kernels) module a file imports: at the top, inside functions (lazy imports) and under
    `if TYPE_CHECKING:` alike. A lazy or type-only import is still a dependency: it couples the two modules and
    turns a cycle into one as soon as someone moves it to the top."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        # (a relative import would escape these checks: the project writes absolute ones only)
        assert not (isinstance(node, ast.ImportFrom) and node.level), f"{path}:{node.lineno}: relative import"
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m.split(".")[0] in ("dsasim", "kernels")}


def _sources() -> list[Path]:
    """The library's files (not through the dsasim/kernels link: kernels/ is read as itself) and kernels/."""
    library = [p for p in ROOT.rglob("*.py") if not p.relative_to(ROOT).parts[0] == "kernels"]
    return sorted(library) + sorted(KERNELS.glob("*.py"))


MODULES = {_module_name(p): p for p in _sources()}


def _edges() -> dict[str, set[str]]:
    edges = {}
    for name, path in MODULES.items():
        targets = {m for m in _imports(path) if m in MODULES or _is_kernels(m)}
        # a submodule's import of its own parent package is not a cycle: Python initialises parents first
        edges[name] = {m for m in targets if m != name and not name.startswith(m + ".")}
    return edges


def test_the_library_never_imports_kernels_and_only_the_cli_imports_the_cli():
    """The library reaches kernels only through entry points; neither the library nor the kernels import the CLI.
    A top-level `kernels` import is wrong anywhere: the folder installs as dsasim.kernels."""
    edges = _edges()
    kernels = sorted(f"{a} -> {b}" for a, bs in edges.items() for b in bs
                     if _is_kernels(b) and not _is_kernels(a))
    assert not kernels, f"the library imports kernels/: {kernels}"
    top_level = sorted(f"{a} -> {b}" for a, bs in edges.items() for b in bs if b.split(".")[0] == "kernels")
    assert not top_level, f"imports of a top-level `kernels` (installed as dsasim.kernels): {top_level}"
    cli = sorted(f"{a} -> {b}" for a, bs in edges.items() for b in bs
                 if _layer(b) == "cli" and _layer(a) != "cli")
    assert not cli, f"model code or kernels import the command line: {cli}"


def test_each_package_imports_only_the_layers_below_it():
    edges = _edges()
    upward = sorted(f"{a} -> {b}" for a, bs in edges.items() for b in bs
                    if a != "dsasim" and not _is_kernels(a) and not _is_kernels(b)  # the facade re-exports all
                    and LAYERS.index(_layer(b)) > LAYERS.index(_layer(a)))
    assert not upward, f"imports against the data flow {' < '.join(LAYERS)}: {upward}"


def _flow_step(module: str) -> int | None:
    """Where an architect module sits in the flow (0 = problems), None outside architect/ or outside the flow."""
    parts = module.split(".")
    if ".".join(parts[:2]) != ARCHITECT or len(parts) < 3 or parts[2] not in ARCHITECT_FLOW:
        return None
    return ARCHITECT_FLOW.index(parts[2])


def test_every_architect_module_sits_in_one_step_of_the_flow():
    """A module straight in architect/ (or in a folder that is no step) would escape the flow check below."""
    loose = sorted(m for m in MODULES if m.startswith(ARCHITECT + ".") and _flow_step(m) is None)
    assert not loose, f"architect modules outside {'/, '.join(ARCHITECT_FLOW)}/: {loose}"


def test_architect_imports_follow_the_flow():
    """Nothing in architect/ imports a later step (problems <- nests <- model <- search <- studies), lazy and
    type-only imports included, but the known entries, each of which must still occur as written."""
    edges = _edges()
    upward = sorted(f"{a} -> {b}" for a, bs in edges.items() for b in bs
                    if _flow_step(a) is not None and _flow_step(b) is not None and _flow_step(b) > _flow_step(a))
    unknown = [edge for edge in upward if edge not in KNOWN_UPWARD]
    assert not unknown, f"imports against the flow {' < '.join(ARCHITECT_FLOW)}: {unknown}"
    gone = sorted(edge for edge in KNOWN_UPWARD if edge not in upward)
    assert not gone, f"known upward imports no longer found as written, delete them from KNOWN_UPWARD: {gone}"


def test_the_layout_page_names_every_architect_module_in_its_step():
    """docs/reference/layout.md lists, under each step's bullet (`  - `problems/` — ...`), exactly the modules that
    step's folder holds: a module added, moved or renamed without the page fails here."""
    import re

    page = (ROOT.parent / "docs" / "reference" / "layout.md").read_text()
    bullets = re.split(r"\n  - `(\w+)/`", page.split("- `dsasim/architect/`", 1)[1].split("\n- `", 1)[0])
    named = {step: set(re.findall(r"`(\w+)\.py`", text)) for step, text in zip(bullets[1::2], bullets[2::2])}
    held = {step: {p.stem for p in (ROOT / "architect" / step).glob("*.py") if p.name != "__init__.py"}
            for step in ARCHITECT_FLOW}
    assert named == held


def _cycles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The import cycles: the strongly connected parts of the graph with more than one module (Tarjan's
    algorithm), so that a cycle is reported whole, whichever module a walk would enter it by."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(edges.get(module, ())):
            if target not in edges:
                continue
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            part = []
            while not part or part[-1] != module:
                part.append(stack.pop())
            if len(part) > 1:
                found.append(frozenset(part))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return found


def _describe(cycle: frozenset[str], edges: dict[str, set[str]]) -> str:
    """A cycle's imports among its own modules: `a -> b, b -> a`."""
    return ", ".join(f"{a} -> {b}" for a in sorted(cycle) for b in sorted(edges[a] & cycle))


def test_no_import_cycles():
    """No cycle in the full import graph (lazy and type-only imports included) but the known ones, each of which
    must still occur exactly so (an entry outlives its fix by failing here)."""
    edges = _edges()
    cycles = _cycles(edges)
    unknown = [_describe(c, edges) for c in cycles if c not in KNOWN_CYCLES.values()]
    assert not unknown, f"import cycles: {unknown}"
    gone = sorted(name for name, cycle in KNOWN_CYCLES.items() if cycle not in cycles)
    assert not gone, f"known cycles no longer found as written, update or delete them in KNOWN_CYCLES: {gone}"


def test_the_checks_see_planted_cycles_and_planted_forbidden_imports(tmp_path):
    """The walkers find what they look for: a cycle closed only by a lazy import, one closed only under
    TYPE_CHECKING, a base module importing cli, a library module importing kernels, a kernel importing the CLI and
    a top-level `kernels` import."""
    (tmp_path / "dsasim" / "cli").mkdir(parents=True)
    (tmp_path / "kernels").mkdir()
    for init in ("dsasim/__init__.py", "dsasim/cli/__init__.py", "kernels/__init__.py"):
        (tmp_path / init).write_text("")
    (tmp_path / "dsasim" / "a.py").write_text("from dsasim.b import x\n")
    (tmp_path / "dsasim" / "b.py").write_text("def f():\n    import dsasim.a\n    from dsasim.cli import main\n")
    (tmp_path / "dsasim" / "c.py").write_text("from typing import TYPE_CHECKING\nimport dsasim.d\n"
                                              "from dsasim.kernels import k\n")
    (tmp_path / "dsasim" / "d.py").write_text("if TYPE_CHECKING:\n    from dsasim.c import C\n")
    (tmp_path / "kernels" / "k.py").write_text("import dsasim.a\nfrom dsasim.cli import table\nimport kernels.k\n")
    global ROOT, KERNELS, MODULES, KNOWN_CYCLES
    saved = ROOT, KERNELS, MODULES, KNOWN_CYCLES
    ROOT, KERNELS = tmp_path / "dsasim", tmp_path / "kernels"
    KNOWN_CYCLES = {"planted known": frozenset({"dsasim.e", "dsasim.f"})}  # a known entry that no longer occurs
    MODULES = {_module_name(p): p for p in _sources()}
    try:
        assert "dsasim.kernels.k" in MODULES
        with pytest.raises(AssertionError) as cycles:
            test_no_import_cycles()
        assert "dsasim.a -> dsasim.b, dsasim.b -> dsasim.a" in str(cycles.value)
        assert "dsasim.c -> dsasim.d, dsasim.d -> dsasim.c" in str(cycles.value)
        assert "planted known" not in str(cycles.value)  # (reported only once no other cycle is)
        with pytest.raises(AssertionError, match="known cycles no longer found.*planted known"):
            MODULES = {m: p for m, p in MODULES.items() if m not in ("dsasim.a", "dsasim.c")}
            test_no_import_cycles()
        MODULES = {_module_name(p): p for p in _sources()}
        with pytest.raises(AssertionError, match=r"the library imports kernels/: \['dsasim.c -> dsasim.kernels"):
            test_the_library_never_imports_kernels_and_only_the_cli_imports_the_cli()
        MODULES.pop("dsasim.c")
        with pytest.raises(AssertionError, match=r"top-level `kernels`.*\['dsasim.kernels.k -> kernels.k'\]"):
            test_the_library_never_imports_kernels_and_only_the_cli_imports_the_cli()
        (tmp_path / "kernels" / "k.py").write_text("import dsasim.a\nfrom dsasim.cli import table\n")
        with pytest.raises(AssertionError, match=r"import the command line: \['dsasim.b -> dsasim.cli', "
                                                 r"'dsasim.kernels.k -> dsasim.cli'\]"):
            test_the_library_never_imports_kernels_and_only_the_cli_imports_the_cli()
    finally:
        ROOT, KERNELS, MODULES, KNOWN_CYCLES = saved


def test_the_flow_check_sees_planted_upward_and_loose_modules(tmp_path):
    """The architect checks find what they look for: a model module importing search lazily, a problems module
    importing a study under TYPE_CHECKING, a module straight in architect/; a known entry that no longer occurs."""
    folder = tmp_path / "dsasim" / "architect"
    for step in ARCHITECT_FLOW:
        (folder / step).mkdir(parents=True)
        (folder / step / "__init__.py").write_text("")
    (tmp_path / "kernels").mkdir()
    for init in ("dsasim/__init__.py", "dsasim/architect/__init__.py", "kernels/__init__.py"):
        (tmp_path / init).write_text("")
    (folder / "search" / "s.py").write_text("from dsasim.architect.model import m\nfrom dsasim.architect.problems.p "
                                            "import P\n")
    (folder / "model" / "m.py").write_text("def f():\n    from dsasim.architect.search.s import best\n")
    (folder / "problems" / "p.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                              "    import dsasim.architect.studies.w\n")
    (folder / "studies" / "w.py").write_text("import dsasim.architect.search.s\n")
    (folder / "loose.py").write_text("")
    global ROOT, KERNELS, MODULES, KNOWN_UPWARD
    saved = ROOT, KERNELS, MODULES, KNOWN_UPWARD
    ROOT, KERNELS = tmp_path / "dsasim", tmp_path / "kernels"
    KNOWN_UPWARD = {"dsasim.architect.nests.n -> dsasim.architect.model.m": "planted known"}
    MODULES = {_module_name(p): p for p in _sources()}
    try:
        with pytest.raises(AssertionError, match=r"outside problems/, nests/, model/, search/, studies/: "
                                                 r"\['dsasim.architect.loose'\]"):
            test_every_architect_module_sits_in_one_step_of_the_flow()
        with pytest.raises(AssertionError, match=r"against the flow .*\['dsasim.architect.model.m -> "
                                                 r"dsasim.architect.search.s', 'dsasim.architect.problems.p -> "
                                                 r"dsasim.architect.studies.w'\]\n"):
            test_architect_imports_follow_the_flow()
        MODULES = {m: p for m, p in MODULES.items()
                   if m not in ("dsasim.architect.model.m", "dsasim.architect.problems.p")}
        with pytest.raises(AssertionError, match=r"no longer found.*\['dsasim.architect.nests.n -> "):
            test_architect_imports_follow_the_flow()
    finally:
        ROOT, KERNELS, MODULES, KNOWN_UPWARD = saved
