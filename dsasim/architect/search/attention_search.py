"""The best attention schedule under an SRAM size: `search_attention(problem, hardware, sram_bytes, objective)`.

Every kind of `dsasim.architect.nests.attention_schedule` over the tile candidates (`attention_tiles`: br over the
query length, bc over the key length: the whole length and the powers of two times the TensorCore's block below it), counted by `dsasim.architect.model.attention.analyze_attention` (equal to the trace), one way
(a second way changes no count, only the peak and the timing's overlap; the estimate already overlaps transfers
with compute), kept when its peak fits `sram_bytes`, ranked by the objective (traffic, cycles, energy or edp;
energy at that SRAM size, `energy_pj_of`). The lower bound is the compulsory traffic (Q, K, V loaded and O stored
once: `AttentionProblem.compulsory_bytes`); no tighter per-instance bound is claimed.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any, Sequence

from dsasim.architect.model.attention import AttentionAnalysis, analyze_attention
from dsasim.architect.nests.attention_schedule import ATTENTION_KINDS, FUSED_KINDS, AttentionSchedule
from dsasim.architect.problems.attention import AttentionProblem
from dsasim.architect.search.objective import DEFAULT_OBJECTIVE, Objective, objective_named
from dsasim.hardware import Accelerator
from dsasim.one_level import require_one_level
from dsasim.util import check_int

__all__ = ["AttentionSearchResult", "attention_tiles", "search_attention", "energy_pj_of_analysis"]


def attention_tiles(extent: int, block: int) -> list[int]:
    """Tile candidates for a length of `extent`: the extent and the powers of two times `block` below it (the
    TensorCore's block: a smaller tile wastes its lanes), descending."""
    check_int("attention_tiles: extent", extent, 1)
    check_int("attention_tiles: block", block, 1)
    sizes = {extent}
    size = block
    while size < extent:
        sizes.add(size)
        size *= 2
    return sorted(sizes, reverse=True)


def energy_pj_of_analysis(a: AttentionAnalysis, hardware: Accelerator) -> float:
    """The analysis's energy in pJ on `hardware` (per-level bytes of its access counts, padded MACs, lane
    operations, leakage over the estimated cycles)."""
    from dsasim.energy.report import energy_pj_of
    reads: dict[str, int] = {}
    writes: dict[str, int] = {}
    for t in a.access_counts.tensors:
        reads[t.level] = reads.get(t.level, 0) + t.read_bytes
        writes[t.level] = writes.get(t.level, 0) + t.write_bytes
    return float(energy_pj_of(hardware, reads, writes, a.padded_macs, a.vector_lane_ops, a.estimated_cycles))


@dataclass(frozen=True)
class AttentionSearchResult:
    """The search's answer: the best schedule that fits (None when none does), the best of each kind, the bound."""

    problem: AttentionProblem
    sram_bytes: int
    objective: Objective
    best: AttentionAnalysis | None
    best_by_kind: dict[str, AttentionAnalysis | None]
    kind_keys: dict[str, tuple]  # the objective's ranking key of each kind's best (kinds where one fits)
    lower_bound_bytes: int
    evaluations: int
    seconds: float

    @property
    def best_fused(self) -> AttentionAnalysis | None:
        """The best online-softmax schedule (q-outer or kv-outer) that fits."""
        fits = [k for k in FUSED_KINDS if k in self.kind_keys]
        return self.best_by_kind[min(fits, key=lambda k: self.kind_keys[k])] if fits else None

    def to_json(self) -> dict[str, Any]:
        def one(a: AttentionAnalysis | None) -> Any:
            return None if a is None else a.to_json()
        return {"problem": self.problem.to_json(), "sram_bytes": self.sram_bytes, "objective": self.objective.name,
                "lower_bound_bytes": self.lower_bound_bytes, "best": one(self.best),
                "best_by_kind": {k: one(v) for k, v in self.best_by_kind.items()}, "evaluations": self.evaluations}


def _rank(a: AttentionAnalysis, objective: Objective, energy: float | None) -> tuple:
    return objective.key(traffic=a.traffic_bytes, cycles=a.estimated_cycles, peak=a.peak_sram_bytes, energy=energy)


def search_attention(problem: AttentionProblem, hardware: Accelerator, sram_bytes: int | None = None,
                     objective: Objective | str = DEFAULT_OBJECTIVE,
                     kinds: Sequence[str] = ATTENTION_KINDS) -> AttentionSearchResult:
    """The best schedule of each kind and overall whose peak fits `sram_bytes` (default: the hardware's), by
    `objective` (module docstring); ties keep the first in the order kinds, br, bc (largest tiles first)."""
    if not isinstance(problem, AttentionProblem):
        raise TypeError(f"search_attention needs an AttentionProblem, got {type(problem).__name__}")
    require_one_level(hardware, "attention search")
    cap = hardware.sram_bytes if sram_bytes is None else check_int("search_attention: sram_bytes", sram_bytes, 1)
    goal = objective_named(objective)
    unknown = [k for k in kinds if k not in ATTENTION_KINDS]
    if unknown or not kinds:
        raise ValueError(f"search_attention: kinds {list(kinds)!r}: choose among {', '.join(ATTENTION_KINDS)}")
    sized = dataclasses.replace(hardware, sram_bytes=cap)
    start = time.perf_counter()
    best_by_kind: dict[str, AttentionAnalysis | None] = {}
    keys: dict[str, tuple] = {}
    evaluations = 0
    rows = attention_tiles(problem.n, hardware.tensorcore_in_channels)
    cols = attention_tiles(problem.m, hardware.tensorcore_out_channels)
    for kind in kinds:
        best, best_key = None, None
        for br in rows:
            for bc in cols:
                a = analyze_attention(AttentionSchedule(problem, kind, br, bc), sized)
                evaluations += 1
                if a.peak_sram_bytes > cap:
                    continue
                energy = energy_pj_of_analysis(a, sized) if goal.needs_energy else None
                key = _rank(a, goal, energy)
                if best_key is None or key < best_key:
                    best, best_key = a, key
        best_by_kind[kind] = best
        if best_key is not None:
            keys[kind] = best_key
    overall = min(keys, key=lambda k: keys[k]) if keys else None
    return AttentionSearchResult(problem, cap, goal, best_by_kind[overall] if overall else None, best_by_kind, keys,
                                 problem.compulsory_bytes(hardware.word_bytes), evaluations,
                                 time.perf_counter() - start)
