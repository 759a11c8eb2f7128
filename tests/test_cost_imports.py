"""The chain kinds' modules import each other in no cycle, lazy and TYPE_CHECKING imports included (review §1.2:
chain -> gemm_chain -> fused -> chain): `FusedAnalysis` sits below both kinds (`fused_analysis`), the parser of
every chain kind above them (`chain_catalogue`), and the cost rules below everything (`dsasim.cost`)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _graph() -> dict[str, set[str]]:
    """Every dsasim module -> the dsasim modules it imports anywhere in its source (functions and
    `if TYPE_CHECKING:` blocks too); `from package import name` counts the submodule when it is one."""
    modules = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
               for p in sorted((ROOT / "dsasim").rglob("*.py"))}
    graph = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module)
                found.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
        graph[name] = {m for m in found if m in modules and m != name and not name.startswith(m + ".")}
    return graph


def _cycles_through(graph: dict[str, set[str]], among: set[str]) -> list[list[str]]:
    """Each cycle (as a path) found by a depth-first search that passes through a module of `among`."""
    found, state = [], {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt]
                if among & set(cycle):
                    found.append(cycle)
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    return found


# full dotted paths, so that bench/relayout.py can rewrite them when the modules move
CHAIN = "dsasim.architect.problems.chain"
CHAIN_CATALOGUE = "dsasim.architect.problems.chain_catalogue"
FUSED = "dsasim.architect.model.fused"
FUSED_ANALYSIS = "dsasim.architect.model.fused_analysis"
GEMM_CHAIN = "dsasim.architect.search.gemm_chain"
CHAIN_MODULES = {CHAIN, CHAIN_CATALOGUE, FUSED, FUSED_ANALYSIS, "dsasim.architect.search.fused_search", GEMM_CHAIN,
                 "dsasim.cost"}


def test_the_chain_modules_import_in_no_cycle_lazy_imports_included():
    graph = _graph()
    assert CHAIN_MODULES <= set(graph)
    assert _cycles_through(graph, CHAIN_MODULES) == []


def test_the_layers_of_the_chain_kinds():
    graph = _graph()
    assert graph["dsasim.cost"] <= {"dsasim.hardware", "dsasim.util"}  # the cost rules: the hardware only
    assert FUSED not in graph[GEMM_CHAIN] and GEMM_CHAIN not in graph[CHAIN]
    assert CHAIN not in graph[FUSED_ANALYSIS] and CHAIN_CATALOGUE in graph["dsasim.architect.studies.chain_target"]
    assert {CHAIN, GEMM_CHAIN} <= graph[CHAIN_CATALOGUE]
