"""The GEMM-chain kernel: executes any `GemmChainNest` (C = A·B, E = C·D, C on chip) on the traced memory model.

Semantics are those of `dsasim.architect.search.gemm_chain` (module docstring): the shared loops m and l in the nest's
order, a scope per depth (`top`, `@<outer loop>`, `@<inner loop>`, then `gemm1` / `gemm2` with the nest's ways), each
tensor staged (accessed) when the scope of its depth opens and used from there (hits); the C tile is an on-chip
tensor (`Session.on_chip`) opened in the inner shared scope, accumulated over k on the TensorCore, optionally
ReLU'd on the vector unit, then multiplied into E's tiles over n. `dsasim.kernels.fused_kernel` runs it like a conv
chain's nest: `fused_schedule(nest)` is a `Schedule` for `run_schedule` (numeric mode checks E against torch),
`run_fused` and `count_fused` run it in one call.
"""

from __future__ import annotations

from typing import Iterator, Mapping

from dsasim import GlobalHierarchy, Session, TensorCore, TracedArray, VectorUnit, Workload
from dsasim.architect.search.gemm_chain import GemmChain, GemmChainNest

_INDEXES = {"A": ("m", "k"), "B": ("k", "l"), "C": ("m", "l"), "D": ("l", "n"), "E": ("m", "n")}
_GEMM_OF = {"A": 1, "B": 1, "D": 2, "E": 2}


def gemm_chain_workload(chain: GemmChain) -> Workload:
    """The `Workload` of a chain: A, B and D in, E out (C never in DDR)."""
    return Workload(chain.name, inputs={x: chain.shape(x) for x in "ABD"}, outputs={"E": chain.shape("E")},
                    reference=chain.reference)


def execute_gemm_chain(nest: GemmChainNest, s: Session, tensors: Mapping[str, TracedArray]) -> None:
    """Run `nest` in session `s` over its traced tensors (by name: A, B, D, E)."""
    chain = nest.chain
    tc, vec = TensorCore(s), VectorUnit(s)
    on_chip = s.on_chip("C", chain.shape("C"))
    cur = {d: (0, e) for d, e in chain.extents.items()}  # the current tile of every loop
    staged: dict[tuple[int, int], list[str]] = {}  # (depth, gemm at depth 3 else 0) -> tensors staged there
    for x in "ABDE":
        depth = nest.depth(x)
        staged.setdefault((depth, _GEMM_OF[x] if depth == 3 else 0), []).append(x)

    def box(x: str) -> tuple[tuple[int, int], tuple[int, int]]:
        return cur[_INDEXES[x][0]], cur[_INDEXES[x][1]]

    def stage(depth: int, gemm: int = 0) -> None:
        for x in staged.get((depth, gemm), ()):
            tensors[x][box(x)]  # loaded (E: opened, or its partial sums re-loaded) into this scope

    def tiles(d: str) -> Iterator[None]:
        extent, t = chain.extents[d], nest.tile(d)
        for start in range(0, extent, t):
            cur[d] = (start, min(start + t, extent))
            yield
        cur[d] = (0, extent)

    outer, inner = nest.order
    with GlobalHierarchy(s, "top"):
        stage(0)
        for _ in tiles(outer):
            with GlobalHierarchy(s, f"@{outer}"):
                stage(1)
                for _ in tiles(inner):
                    with GlobalHierarchy(s, f"@{inner}"):
                        stage(2)
                        c = on_chip[box("C")]  # opened as zeros, on chip
                        for _ in tiles("k"):
                            with GlobalHierarchy(s, "gemm1", ways=nest.ways):
                                stage(3, 1)
                                c += tc.matmul(tensors["A"][box("A")], tensors["B"][box("B")])
                        if chain.relu_between:
                            c.assign(vec.relu(c))
                        for _ in tiles("n"):
                            with GlobalHierarchy(s, "gemm2", ways=nest.ways):
                                stage(3, 2)
                                e = tensors["E"][box("E")]
                                e += tc.matmul(c, tensors["D"][box("D")])
