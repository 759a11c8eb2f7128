"""What a fused schedule moves and computes (`FusedAnalysis`): the figures every fused chain kind reports.

Below the chain kinds on purpose: `fused.analyze_fused` (conv chains) returns one, `gemm_chain.GemmChainAnalysis`
extends it, and the chain search ranks either; neither kind imports the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dsasim.cost import overlapped_cycles
from dsasim.energy.accesses import AccessCounts

__all__ = ["FusedAnalysis"]


@dataclass(frozen=True)
class FusedAnalysis:
    """What a fused nest moves and computes, in closed form (bytes, counts, cycles; see `dsasim.architect.model.fused`
    and `dsasim.architect.search.gemm_chain`)."""

    loaded_bytes: int
    stored_bytes: int
    loads: int
    stores: int
    opens: int
    per_tensor_loaded: dict[str, int]
    macs: int
    padded_macs: int
    tensorcore_cycles: int
    vector_cycles: int
    peak_sram_bytes: int
    intermediate_peak_bytes: int  # of the peak: the on-chip intermediates' buffers
    recomputed_macs: int  # MACs beyond computing the chain once
    compulsory_bytes: int
    dma_cycles: int  # the DDR port's busy cycles: every transfer's setup plus its bytes over the bandwidth
    fits: bool
    # every read and write per tensor and level, as the traced run counts them (`Counters.access_counts`); None
    # where a chain kind does not count them
    access_counts: AccessCounts | None = field(default=None, kw_only=True)

    @property
    def traffic_bytes(self) -> int:
        return self.loaded_bytes + self.stored_bytes

    @property
    def estimated_cycles(self) -> int:
        """max(DMA, TensorCore + vector) cycles: the bound when transfers overlap compute perfectly
        (`dsasim.cost.overlapped_cycles`)."""
        return overlapped_cycles(self.dma_cycles, self.tensorcore_cycles + self.vector_cycles)
