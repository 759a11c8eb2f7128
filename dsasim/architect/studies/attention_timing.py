"""`dsasim search attention:... --confirm 1`: the chosen schedule re-run through the trace (the "attention" kernel,
`dsasim.kernels.attention_kernel.run_attention`, found by the entry point group `dsasim.attention_runner`) and the
timing simulator; the trace must equal the model, and the timing says where the TensorCore waits.

The timing simulator blames every cycle the TensorCore is idle on one cause (`dsasim.timing.result`, its module
docstring): "vector" is the TensorCore waiting for a vector operation that produces its input — in attention the
softmax between Q·Kᵀ and P·V (max, subtract, exp; on a later key tile also the rescale of O) — "load:T" waiting
for a load, "drain" the idle time after its last operation (the final O / l and the store of O). The stall cycles
sum to the run's cycles less the TensorCore's busy cycles.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Mapping

from dsasim.architect.model.attention import AttentionAnalysis
from dsasim.hardware import Accelerator

__all__ = ["AttentionTiming", "confirm_attention", "estimate_confirm_work", "TRACE_FIELDS", "VECTOR_STALL"]

OPERATIONS_PER_OPEN = 12  # compute operations per buffer a schedule opens, at most (an online step: 11 + a matmul)

VECTOR_STALL = "vector"  # the stall cause of a TensorCore waiting for the vector unit (dsasim.timing.result)
# the counts the traced run must give exactly as the model does (the RunResult's names)
TRACE_FIELDS = ("loaded_bytes", "stored_bytes", "rmw_bytes", "peak_sram_bytes", "macs", "tensorcore_cycles")


@dataclass(frozen=True)
class AttentionTiming:
    """The timing simulator's figures of one traced attention schedule (cycles; `stall_cycles`: the TensorCore's
    idle cycles by cause, summing to cycles - tensorcore_busy_cycles)."""

    cycles: int
    tensorcore_busy_cycles: int
    vector_busy_cycles: int
    dma_busy_cycles: int
    stall_cycles: Mapping[str, int]

    def __post_init__(self) -> None:
        if sum(self.stall_cycles.values()) != self.cycles - self.tensorcore_busy_cycles:
            raise ValueError(f"AttentionTiming: stalls {dict(self.stall_cycles)} do not sum to cycles "
                             f"{self.cycles} - TensorCore busy {self.tensorcore_busy_cycles}")
        object.__setattr__(self, "stall_cycles", MappingProxyType(dict(sorted(self.stall_cycles.items()))))

    @property
    def vector_stall_cycles(self) -> int:
        """Cycles the TensorCore is idle waiting for the vector unit (its softmax)."""
        return self.stall_cycles.get(VECTOR_STALL, 0)

    def to_json(self) -> dict[str, Any]:
        return {"cycles": self.cycles, "tensorcore_busy_cycles": self.tensorcore_busy_cycles,
                "vector_busy_cycles": self.vector_busy_cycles, "dma_busy_cycles": self.dma_busy_cycles,
                "tensorcore_idle_cycles": self.cycles - self.tensorcore_busy_cycles,
                "vector_stall_cycles": self.vector_stall_cycles, "stall_cycles": dict(self.stall_cycles)}


def estimate_confirm_work(best: AttentionAnalysis) -> Any:
    """The trace and timing of `best.schedule` (a `WorkEstimate`): its transfers, and per buffer it opens at most
    OPERATIONS_PER_OPEN compute operations, at the search's rate for traced operations."""
    from dsasim.architect.search.layer_search import (SECONDS_PER_TRACED_SCHEDULE, TRACED_OPERATIONS_PER_SECOND,
                                                      WorkEstimate)
    ops = best.loads + best.stores + OPERATIONS_PER_OPEN * best.opens
    return WorkEstimate(what=f"the trace of {best.schedule.kind} {best.schedule.br}x{best.schedule.bc}",
                        evaluations=0, traced_operations=ops,
                        seconds=ops / TRACED_OPERATIONS_PER_SECOND + SECONDS_PER_TRACED_SCHEDULE)


def confirm_attention(best: AttentionAnalysis, hardware: Accelerator, runner: Callable[..., Any],
                      simulate: bool = True) -> AttentionTiming | None:
    """Trace `best.schedule` with `runner` (`run_attention`'s signature) on `hardware`; AssertionError naming the
    first count where the trace and the model differ; with `simulate`, its timing (else None)."""
    result = runner(best.schedule, hardware)
    if result.trace is None or result.loaded_bytes is None:
        raise AssertionError(f"the attention kernel did not run {best.schedule!r}: {result.message}")
    for name in TRACE_FIELDS:
        traced, modelled = getattr(result, name), getattr(best, name)
        if traced != modelled:
            raise AssertionError(f"attention model and trace differ for {best.schedule!r}: {name} model "
                                 f"{modelled:,}, trace {traced:,}")
    if not simulate:
        return None
    from dsasim.timing import simulate as simulate_timing

    timed = simulate_timing(result.trace, hardware, power=False)
    busy = timed.engine_busy_cycles
    dma = sum(v for e, v in busy.items() if e not in ("tensorcore", "vector"))
    return AttentionTiming(int(timed.cycles), int(busy.get("tensorcore", 0)), int(busy.get("vector", 0)), int(dma),
                           dict(timed.stall_cycles))
