"""`dsasim sweep-sram attention:...`: the attention target across SRAM sizes — per size the best schedule (kind,
tiles) of `search_attention`, its traffic beside the compulsory bound, its estimated cycles and its energy at that
size; the sizing answers (least energy, least EDP, best performance per mm2) come from `TargetSweep.sizing`.

The counts are the model's (`analyze_attention`, equal to the trace), so the cycles are the model's estimate.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from dsasim.architect.search.attention_search import AttentionSearchResult
from dsasim.energy.accesses import AccessCounts
from dsasim.energy.report import EnergyReport, energy_json, energy_report
from dsasim.hardware import Accelerator

__all__ = ["AttentionSweepPoint", "sweep_attention"]


@dataclass(frozen=True)
class AttentionSweepPoint:
    """The best attention schedule at one SRAM size (`result`: the search at that size, on `hardware` sized so)."""

    result: AttentionSearchResult
    hardware: Accelerator  # with sram_bytes = result.sram_bytes: the SRAM's energy per access follows its size

    cycles_source = "estimate"

    def __post_init__(self) -> None:
        if self.hardware.sram_bytes != self.result.sram_bytes:
            raise ValueError(f"AttentionSweepPoint: hardware's SRAM {self.hardware.sram_bytes:,} B is not the "
                             f"search's {self.result.sram_bytes:,} B")

    @property
    def sram_bytes(self) -> int:
        return self.result.sram_bytes

    def _best(self, name: str) -> int | None:
        return None if self.result.best is None else int(getattr(self.result.best, name))

    loaded_bytes = property(lambda self: self._best("loaded_bytes"), doc="bytes loaded from DDR")
    stored_bytes = property(lambda self: self._best("stored_bytes"), doc="bytes stored to DDR")
    traffic_bytes = property(lambda self: self._best("traffic_bytes"), doc="loaded + stored bytes")
    peak_sram_bytes = property(lambda self: self._best("peak_sram_bytes"), doc="peak SRAM bytes")
    cycles = property(lambda self: self._best("estimated_cycles"), doc="the model's estimated cycles")

    @property
    def lower_bound_bytes(self) -> int:
        """The compulsory traffic (Q, K, V loaded and O stored once): the only bound claimed for attention."""
        return self.result.lower_bound_bytes

    @property
    def compulsory_bytes(self) -> int:
        return self.result.lower_bound_bytes

    @property
    def schedule_label(self) -> str | None:
        """'KIND BRxBC' of the best schedule, e.g. 'q-outer 64x96' (None: nothing fits)."""
        s = None if self.result.best is None else self.result.best.schedule
        return None if s is None else f"{s.kind} {s.br}x{s.bc}"

    @property
    def access_counts(self) -> AccessCounts | None:
        return None if self.result.best is None else self.result.best.access_counts

    @functools.cached_property
    def energy(self) -> EnergyReport | None:
        """The best schedule's energy at this SRAM size (its model's access counts priced; None: nothing fits)."""
        best = self.result.best
        return None if best is None else energy_report(best.access_counts, self.hardware, best.estimated_cycles)

    def to_json(self) -> dict[str, Any]:
        """The size, the best schedule (null where nothing fits), its figures, the bound and the energy keys."""
        best = self.result.best
        return {"sram_bytes": self.sram_bytes, "schedule": None if best is None else best.schedule.to_json(),
                "traffic_bytes": self.traffic_bytes, "loaded_bytes": self.loaded_bytes,
                "stored_bytes": self.stored_bytes, "peak_sram_bytes": self.peak_sram_bytes, "cycles": self.cycles,
                "cycles_source": self.cycles_source, "tensorcore_cycles": self._best("tensorcore_cycles"),
                "vector_cycles": self._best("vector_cycles"), "dma_cycles": self._best("dma_cycles"),
                "lower_bound_bytes": self.lower_bound_bytes, "compulsory_bytes": self.compulsory_bytes,
                "best_by_kind": {k: None if a is None else {"br": a.schedule.br, "bc": a.schedule.bc,
                                                            "traffic_bytes": a.traffic_bytes,
                                                            "cycles": a.estimated_cycles}
                                 for k, a in self.result.best_by_kind.items()},
                **energy_json(self.energy)}


def sweep_attention(target: Any, sizes: Sequence[int], objective: str,
                    progress: Callable[[float], None] | None = None) -> Any:
    """A `TargetSweep` of an `AttentionTarget` over SRAM `sizes` (bytes): per size `search_attention` on the
    hardware with that SRAM by `objective`; `progress(fraction)` after each size."""
    from dsasim.architect.search.attention_search import search_attention
    from dsasim.architect.studies.target_sweep import TargetSweep

    start = time.perf_counter()
    points = []
    for size in sizes:
        sized = dataclasses.replace(target.hardware, sram_bytes=int(size))
        points.append(AttentionSweepPoint(search_attention(target.problem, sized, int(size), objective), sized))
        if progress is not None:
            progress(len(points) / len(sizes))
    return TargetSweep(target, tuple(int(s) for s in sizes), tuple(points),
                       sum(p.result.evaluations for p in points), time.perf_counter() - start,
                       objective=points[0].result.objective.name)
