"""The registry of chain kinds (`CHAIN_KINDS`): one `ChainKind` per chain class, looked up by `chain_kind_of`.

The conv chain (`ConvChain`: fused segments of every two or more consecutive layers, `fused_space`, `analyze_fused`,
the `fused_kernel`) and the GEMM chain (`GemmChain`: the whole two-GEMM chain as its one fused segment,
`evaluate_gemm_chain_space`, `analyze_gemm_chain`, its rmw and Chimera's DV / MU in the JSON, the
`gemm_chain_kernel`). A new kind registers itself with `register_chain_kind` (see `dsasim.architect.search.chain_kind`).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from dsasim.architect.problems.chain import ConvChain
from dsasim.architect.search.chain_kind import Chain, ChainKind, KernelRef
from dsasim.architect.model.fused import analyze_fused
from dsasim.architect.model.fused_analysis import FusedAnalysis
from dsasim.architect.search.fused_space import estimate_fused_space_work, evaluate_segment_spaces
from dsasim.architect.nests.loopnest import MatmulProblem
from dsasim.architect.search.gemm_chain import (GemmChain, GemmChainAnalysis, GemmChainSpace, analyze_gemm_chain,
                                         estimate_gemm_chain_space_work, evaluate_gemm_chain_space)
from dsasim.hardware import Accelerator

__all__ = ["CHAIN_KINDS", "CONV_CHAIN", "GEMM_CHAIN", "chain_kind_of", "register_chain_kind"]


def _conv_no_fit(chain: ConvChain, word_bytes: int) -> str:
    weights = sum(math.prod(chain.weight_shape(i)) for i in range(len(chain))) * word_bytes
    return f"a fused nest holds every layer's whole weights, {weights:,} B, beside its tiles"


def _gemm_spaces(chain: GemmChain, hw: Accelerator) -> dict[tuple[int, int], GemmChainSpace]:
    """Two layers: the only fused segment is the whole chain."""
    return {(0, 2): evaluate_gemm_chain_space(chain, hw)}


def _gemm_part_json(analysis: FusedAnalysis) -> dict[str, Any]:
    """A fused GEMM chain's rmw bytes, and Chimera's model of the nest."""
    assert isinstance(analysis, GemmChainAnalysis)
    return {"rmw_bytes": analysis.rmw_bytes, "chimera_dv_bytes": analysis.chimera_dv_bytes,
            "chimera_mu_bytes": analysis.chimera_mu_bytes}


def _gemm_from_layers(problems: Sequence[MatmulProblem], relu: Sequence[bool], residual: bool) -> GemmChain | None:
    """C[m x l] = A[m x k] @ B[k x l], E[m x n] = C @ D[l x n] (None where the two do not connect); no residual in
    a GEMM chain: the residual offered is left to the network (added beside the chain)."""
    first, second = problems
    if first.m != second.m or first.n != second.k:
        return None
    return GemmChain(m=first.m, n=second.n, k=first.k, l=first.n, relu=relu[0])


CONV_CHAIN = ChainKind(
    name="conv", chain_type=ConvChain, fused_spaces=evaluate_segment_spaces, fused_work=estimate_fused_space_work,
    analyze=analyze_fused, part_json=lambda analysis: {}, no_fit_reason=_conv_no_fit,
    kernel=KernelRef("dsasim.kernels.fused_kernel", "fused_workload", "execute_fused"),
    network_member=lambda layer: layer.op == "conv2d", max_layers=None,
    from_layers=lambda problems, relu, residual: ConvChain(problems, relu=list(relu), residual=residual))
GEMM_CHAIN = ChainKind(
    name="gemm", chain_type=GemmChain, fused_spaces=_gemm_spaces, fused_work=estimate_gemm_chain_space_work,
    analyze=analyze_gemm_chain, part_json=_gemm_part_json,
    no_fit_reason=lambda chain, word_bytes: "even 1-element tiles of every tensor overflow the SRAM",
    kernel=KernelRef("dsasim.kernels.gemm_chain_kernel", "gemm_chain_workload", "execute_gemm_chain"),
    network_member=lambda layer: (layer.kind == "tensorcore" and layer.count == 1
                                  and isinstance(layer.problem, MatmulProblem)),  # a single, unbatched matmul
    max_layers=2, from_layers=_gemm_from_layers,
    reference_choice=lambda space, sram_bytes: space.chimera_choice(sram_bytes))

CHAIN_KINDS: dict[type, ChainKind] = {kind.chain_type: kind for kind in (CONV_CHAIN, GEMM_CHAIN)}


def register_chain_kind(kind: ChainKind) -> None:
    """Add a chain kind; a class already registered raises ValueError (one entry per class)."""
    if kind.chain_type in CHAIN_KINDS:
        raise ValueError(f"register_chain_kind: {kind.chain_type.__name__} is already the chain kind "
                         f"{CHAIN_KINDS[kind.chain_type].name!r}")
    CHAIN_KINDS[kind.chain_type] = kind


def chain_kind_of(chain: Chain) -> ChainKind:
    """The registered kind of `chain` (by its class, or the nearest registered base class); TypeError otherwise."""
    for cls in type(chain).__mro__:
        kind = CHAIN_KINDS.get(cls)
        if kind is not None:
            return kind
    known = ", ".join(sorted(k.__name__ for k in CHAIN_KINDS))
    raise TypeError(f"{type(chain).__name__} is not a registered chain kind (known: {known}); register one with "
                    f"dsasim.architect.search.chain_kinds.register_chain_kind")
