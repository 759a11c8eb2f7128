"""A chain's best partition priced: its segments' reads and writes summed (a fused segment's model, a single
layer's `analyze`; each segment's tensors named by its place in the partition, e.g. "[1 2].mid1": the layers' own
names may repeat) plus the residual fold's load, and their energy on the hardware at the searched SRAM size over
the partition's cycles; the JSON of a chain's search and of a chain sweep's point, with that energy.
"""

from __future__ import annotations

from typing import Any

from dsasim.architect.search.fused_search import ChainSearchResult, SegmentChoice
from dsasim.energy.accesses import AccessCounts, TensorAccesses
from dsasim.energy.report import EnergyReport, energy_json, energy_report

__all__ = ["RESIDUAL_FOLD_TENSOR", "segment_access_counts", "partition_access_counts", "partition_energy",
           "chain_result_json"]

RESIDUAL_FOLD_TENSOR = "residual"  # the chain's input loaded again to fold an identity residual (`fold`)

def _segment_prefix(part: SegmentChoice) -> str:
    """The segment as the partition's label writes it, e.g. "[1 2]": its tensors' qualifier (unique within a
    partition; the layers' own names may repeat)."""
    return "[" + " ".join(str(i + 1) for i in range(part.first, part.stop)) + "]"


def segment_access_counts(result: ChainSearchResult, part: SegmentChoice) -> AccessCounts | None:
    """A segment's reads and writes per tensor and level (its model's: a fused segment's analysis, a single
    layer's `analyze`), tensors qualified by the segment (e.g. "[1 2].mid1"); None where its model gives none."""
    if part.fused is not None:
        counts = part.analysis.access_counts
    else:
        from dsasim.architect.model.analytic import analyze
        counts = analyze(part.candidate.nest, result.hardware).access_counts()
    return None if counts is None else counts.qualified(_segment_prefix(part))


def partition_access_counts(result: ChainSearchResult, parts: list[SegmentChoice] | None) -> AccessCounts | None:
    """A partition's accesses: its segments' summed, and the residual fold's load of the chain's input (DDR read,
    SRAM write: `result.fold`, the bytes the traffic counts); None when it does not fit or a segment has no
    counts."""
    if parts is None:
        return None
    counts = [segment_access_counts(result, p) for p in parts]
    if any(c is None for c in counts):
        return None
    fold = result.fold(parts)
    if fold:
        counts.append(AccessCounts((TensorAccesses(RESIDUAL_FOLD_TENSOR, "DDR", fold, 0),
                                    TensorAccesses(RESIDUAL_FOLD_TENSOR, "SRAM", 0, fold)), 0, 0, 0))
    return AccessCounts.sum(counts)  # type: ignore[arg-type]


def partition_energy(result: ChainSearchResult) -> tuple[AccessCounts | None, EnergyReport | None]:
    """The best partition's accesses and their energy on the hardware at the result's SRAM size, over the
    partition's cycles (the segments' summed); (None, None) when nothing fits."""
    counts = partition_access_counts(result, result.best)
    totals = result.totals(result.best, result.fold(result.best))
    if counts is None or totals is None:
        return counts, None
    return counts, energy_report(counts, result.hardware, totals["cycles"])


def chain_result_json(result: ChainSearchResult, name: str) -> dict[str, Any]:
    """The JSON object of `dsasim search CHAIN --json` and of a chain sweep's point: the search's figures, each
    part's energy (its own cycles' leakage) and the partition's energy keys with its accesses."""
    out = result.to_json(name)
    counts, energy = partition_energy(result)
    for data, part in zip(out["parts"], result.best or ()):
        part_counts = segment_access_counts(result, part)
        part_energy = None if part_counts is None else energy_report(part_counts, result.hardware, part.cycles)
        data["energy_pj"] = None if part_energy is None else round(part_energy.energy_pj, 6)
        data["energy_breakdown_pj"] = (None if part_energy is None else
                                       {k: round(v, 6) for k, v in part_energy.energy_breakdown_pj.items()})
    return {**out, **energy_json(energy, counts)}
