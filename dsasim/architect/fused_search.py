"""The search over fused schedules of a `ConvChain` or `GemmChain`, beside the best layer-by-layer schedules of its
layers.

`search_chain(chain, hardware, sram_bytes)` answers "fuse or not, how deep, with which tiles and halo policy":

* Fused candidates: every (n, oh, ow) tile of the last output (all sizes 1 .. extent), halo recompute / keep,
  weights resident / per-tile, a 1- or 2-way tile scope, evaluated at once by `evaluate_fused_space` (numpy over
  the whole space; per axis and tile size the `AxisPlan` sums; the peak from the distinct tile classes). It equals
  `analyze_fused` on every field it reports (tested); its vector cycles are the floor sum(elements) / lanes.
* A `GemmChain`'s fused candidates: every 1-way `GemmChainNest` of `evaluate_gemm_chain_space` (both shared-loop
  orders, aligned tile sizes per loop; exact vector cycles; kept as fronts).
* Layer by layer: each layer's best `LoopNest` from `dsasim.architect.search.search` (its intermediate stored to
  and loaded from DDR); an identity residual is folded into the last layer's store, which loads the block's input
  once more (|input| bytes, added analytically: the LoopNest kernel has no residual).
* Fusion depth: every split of the chain into consecutive segments, each segment fused (two or more layers) or a
  single layer's best nest; a residual not in a fused segment with the first layer is folded as above.
The best partition by the objective is `best`; `fused` (the whole chain fused) and `layer_by_layer` are reported
beside it. Cycles are the model's estimates (max(DMA, TensorCore + vector)); given runners, every chosen nest is traced
(checked against the model) and timed.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from dsasim.architect.chain import ConvChain
from dsasim.architect.fused import HALO_POLICIES, WEIGHT_POLICIES, FusedNest, analyze_fused, axis_plan, _axis_geometry
from dsasim.architect.fused_analysis import FusedAnalysis
from dsasim.architect.gemm_chain import (GemmChain, GemmChainAnalysis, GemmChainNest, GemmChainSpace,
                                         analyze_gemm_chain, estimate_gemm_chain_space_work,
                                         evaluate_gemm_chain_space)
from dsasim.architect.objective import DEFAULT_OBJECTIVE, Objective, objective_named
from dsasim.cost import ddr_port, dma_cycles, overlapped_cycles, tensorcore_cycles, vector_cycles
from dsasim.hardware import Accelerator
from dsasim.one_level import require_one_level

__all__ = ["FusedSpace", "evaluate_fused_space", "SegmentChoice", "ChainSearchResult", "search_chain",
           "estimate_chain_work"]

_WAYS = (1, 2)
CHAIN_SMALLER = ("a smaller chain (a GEMM chain's fused grid grows as the fourth power of its tile candidates), "
                 "fewer SRAM sizes, or no tracing (--confirm 0 / --no-simulate)")  # how to shrink a refused search


@dataclass(frozen=True)
class FusedSpace:
    """Every fused nest of a chain, evaluated: arrays of shape (n tiles, oh tiles, ow tiles, halo, weights, ways)."""

    chain: ConvChain
    tiles: tuple[np.ndarray, np.ndarray, np.ndarray]  # candidate tile sizes per loop
    valid: np.ndarray
    loaded_bytes: np.ndarray
    stored_bytes: int
    loads: np.ndarray
    macs: np.ndarray
    tensorcore_cycles: np.ndarray
    vector_cycles_floor: np.ndarray
    dma_cycles: np.ndarray
    peak_sram_bytes: np.ndarray
    seconds: float

    @property
    def evaluations(self) -> int:
        return int(self.valid.sum())

    @property
    def traffic_bytes(self) -> np.ndarray:
        return self.loaded_bytes + self.stored_bytes

    @property
    def estimated_cycles(self) -> np.ndarray:
        return overlapped_cycles(self.dma_cycles, self.tensorcore_cycles + self.vector_cycles_floor)

    def nest(self, index: tuple[int, ...]) -> FusedNest:
        """The FusedNest at a grid index."""
        a, b, c, h, w, k = index
        return FusedNest(self.chain, {"n": int(self.tiles[0][a]), "oh": int(self.tiles[1][b]),
                                      "ow": int(self.tiles[2][c])}, HALO_POLICIES[h], WEIGHT_POLICIES[w], _WAYS[k])


def _axis_table(chain: ConvChain, axis: int, tiles: np.ndarray) -> dict[str, np.ndarray]:
    """Per tile size along one axis: trips, per-level sums of held and new rows, transfers with new image rows, the
    distinct per-level length columns (tile classes, zero-padded) and the per-level largest length."""
    geometry = _axis_geometry(chain, axis)
    levels = len(chain) + 1
    plans = [axis_plan(geometry, int(t)) for t in tiles]
    classes = [np.unique(p.lens, axis=1) for p in plans]
    width = max(c.shape[1] for c in classes)
    cls = np.zeros((len(tiles), levels, width), np.int64)
    for i, c in enumerate(classes):
        cls[i, :, :c.shape[1]] = c
    return {"trips": np.array([p.lens.shape[1] for p in plans], np.int64),
            "len": np.stack([p.lens.sum(axis=1) for p in plans]),
            "new": np.stack([p.new.sum(axis=1) for p in plans]),
            "new_transfers": np.array([int((p.new[0] > 0).sum()) for p in plans], np.int64),
            "classes": cls, "max": np.stack([p.lens.max(axis=1) for p in plans])}


def evaluate_fused_space(chain: ConvChain, hardware: Accelerator,
                         tiles: tuple[Sequence[int], Sequence[int], Sequence[int]] | None = None) -> FusedSpace:
    """Evaluate every fused nest of `chain` (tile sizes: all of 1 .. extent per loop, or `tiles`) on `hardware`."""
    start = time.perf_counter()
    word = hardware.word_bytes
    L = len(chain)
    N, _, OH, OW = chain.output_shape
    tn, tr, tc = (np.arange(1, e + 1, dtype=np.int64) if tiles is None else np.asarray(t, np.int64)
                  for e, t in zip((N, OH, OW), tiles or (None, None, None)))
    R, C = _axis_table(chain, 0, tr), _axis_table(chain, 1, tc)
    ch = np.array([chain.level_shape(i)[1] for i in range(L + 1)], np.int64)
    w_elems = sum(math.prod(chain.weight_shape(i)) for i in range(L))
    n_trips = -(-N // tn)
    # broadcast shapes: (n, r, c, halo, weights, ways)
    nt = n_trips[:, None, None, None, None, None]
    tnb = tn[:, None, None, None, None, None]
    rt = R["trips"][None, :, None, None, None, None]
    ct = C["trips"][None, None, :, None, None, None]
    tiles_n = nt * rt * ct
    keep = np.array([False, True])[None, None, None, :, None, None]
    slide_ow = keep & (ct > 1)
    slide_oh = keep & (ct == 1) & (rt > 1)
    valid = ~keep | slide_ow | slide_oh
    per_tile = np.array([False, True])[None, None, None, None, :, None]
    ways = np.array(_WAYS, np.int64)[None, None, None, None, None, :]

    def level(table: dict, key: str, i: int, axis: int) -> np.ndarray:
        v = table[key][:, i]
        return v[None, :, None, None, None, None] if axis == 0 else v[None, None, :, None, None, None]

    def sums(i: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows and columns of level i summed over the tiles: new along the slide loop, held otherwise."""
        r = np.where(slide_oh, level(R, "new", i, 0), level(R, "len", i, 0))
        c = np.where(slide_ow, level(C, "new", i, 1), level(C, "len", i, 1))
        return r, c

    r0, c0 = sums(0)
    image = N * ch[0] * r0 * c0
    weights = np.where(per_tile, w_elems * tiles_n, w_elems)
    loaded = (image + weights) * word
    image_loads = np.where(slide_ow, nt * rt * C["new_transfers"][None, None, :, None, None, None],
                           np.where(slide_oh, nt * R["new_transfers"][None, :, None, None, None, None] * ct, tiles_n))
    loads = image_loads + np.where(per_tile, L * tiles_n, L)
    macs = tc_cycles = vec = 0
    for i, layer in enumerate(chain.layers, start=1):
        r, c = sums(i)
        pixels = N * r * c
        icg, ocg = layer.ic // layer.groups, layer.oc // layer.groups
        taps = layer.kh * layer.kw
        macs = macs + pixels * layer.oc * icg * taps
        tc_cycles = tc_cycles + tensorcore_cycles(hardware, pixels, taps, layer.groups, icg, ocg)
        ops = int(chain.relu[i - 1]) + int(i == L and chain.residual)
        if ops:
            vec = vec + ops * vector_cycles(pixels * ch[i], hardware.vector_lanes)
    # peak SRAM, in elements
    resident = np.where(per_tile, 0, w_elems)
    wpt = np.where(per_tile, w_elems, 0)
    rc, cc = R["classes"], C["classes"]  # (tiles, levels, classes)
    grid = np.einsum("i,ria,cib->rcab", ch, rc, cc).reshape(len(tr), len(tc), -1).max(axis=2)  # recompute
    recompute_peak = resident + ways * (tnb * grid[None, :, :, None, None, None] + wpt)
    cmax = C["max"]  # (tc, levels)
    # keep along ow: per row class, the sweep's line buffers (largest columns) plus the tile scope's output
    lines = np.einsum("i,ria,ci->rca", ch[:L], rc[:, :L], cmax[:, :L])  # (r, c, classes)
    out_tile = np.einsum("ra,c->rca", rc[:, L], ch[L] * cmax[:, L])
    sweep_rows = tnb[..., None] * lines[None, :, :, None, None, None, :] + ways[..., None] * (
        tnb[..., None] * out_tile[None, :, :, None, None, None, :] + wpt[..., None])
    keep_ow_peak = resident + sweep_rows.max(axis=-1)
    rmax = R["max"]
    keep_oh_lines = np.einsum("i,ri,ci->rc", ch[:L], rmax[:, :L], cmax[:, :L])
    keep_oh_peak = resident + tnb * keep_oh_lines[None, :, :, None, None, None] + ways * (
        tnb * (ch[L] * np.outer(rmax[:, L], cmax[:, L]))[None, :, :, None, None, None] + wpt)
    peak = np.where(slide_ow, keep_ow_peak, np.where(slide_oh, keep_oh_peak, recompute_peak)) * word
    stored = math.prod(chain.output_shape) * word
    dma = dma_cycles(ddr_port(hardware), loads, loaded, tiles_n, stored)
    shape = (len(tn), len(tr), len(tc), 2, 2, 2)
    full = lambda a: np.broadcast_to(a, shape)  # noqa: E731
    return FusedSpace(chain=chain, tiles=(tn, tr, tc), valid=full(valid), loaded_bytes=full(loaded),
                      stored_bytes=stored, loads=full(loads), macs=full(macs), tensorcore_cycles=full(tc_cycles),
                      vector_cycles_floor=full(vec), dma_cycles=full(dma), peak_sram_bytes=full(peak),
                      seconds=time.perf_counter() - start)


# ------------------------------------------------------------------------------------------------ the search
@dataclass(frozen=True)
class SegmentChoice:
    """The best schedule of consecutive layers [first, stop) of a chain: fused (a FusedNest) or one layer's
    LoopNest (a search `Candidate`)."""

    first: int
    stop: int
    fused: FusedNest | GemmChainNest | None
    analysis: FusedAnalysis | None  # a GemmChainAnalysis for a GEMM chain
    candidate: Any  # dsasim.architect.search.Candidate for a single layer
    loaded_bytes: int
    stored_bytes: int
    peak_sram_bytes: int
    macs: int
    tensorcore_cycles: int
    cycles: int
    cycles_source: str  # "estimate" or "simulated"

    @property
    def traffic_bytes(self) -> int:
        return self.loaded_bytes + self.stored_bytes


@dataclass
class ChainSearchResult:
    """The outcome of `search_chain`: the best partition, the whole chain fused, and layer by layer."""

    chain: ConvChain | GemmChain
    hardware: Accelerator
    sram_bytes: int
    objective: Objective
    best: list[SegmentChoice] | None
    fused: SegmentChoice | None
    layer_by_layer: list[SegmentChoice] | None
    compulsory_bytes: int
    evaluations: int
    seconds: float
    chimera: GemmChainNest | None = None  # a GEMM chain: the nest Chimera's DV / MU model picks at this size

    @staticmethod
    def totals(parts: list[SegmentChoice] | None, extra_loaded: int = 0) -> dict[str, int] | None:
        if parts is None:
            return None
        return {"loaded_bytes": sum(p.loaded_bytes for p in parts) + extra_loaded,
                "stored_bytes": sum(p.stored_bytes for p in parts),
                "traffic_bytes": sum(p.traffic_bytes for p in parts) + extra_loaded,
                "cycles": sum(p.cycles for p in parts), "macs": sum(p.macs for p in parts),
                "peak_sram_bytes": max(p.peak_sram_bytes for p in parts)}

    def label(self, parts: list[SegmentChoice]) -> str:
        """The partition as text, e.g. '[1 2 3]' (all fused) or '[1 2] [3]'."""
        return " ".join("[" + " ".join(str(i + 1) for i in range(p.first, p.stop)) + "]" for p in parts)

    @property
    def layer_by_layer_bound_bytes(self) -> int:
        """A lower bound on layer-by-layer execution only: each layer's own bound (`lower_bound`: its intermediate
        input loaded, its output stored) summed. Not a bound on a fused schedule, which computes a layer's input on
        chip: the segment arguments behind the single-layer bounds count every operand at hand as transferred."""
        from dsasim.architect.lower_bounds import lower_bound
        return sum(lower_bound(layer, self.sram_bytes, self.hardware.word_bytes).bytes for layer in self.chain.layers)

    def fold(self, parts: list[SegmentChoice] | None) -> int:
        """Bytes of the input loaded again to fold the residual when the last segment does not start at layer 1."""
        if parts is None or not self.chain.residual or parts[-1].first == 0 and parts[-1].fused is not None:
            return 0
        return math.prod(self.chain.input_shape) * self.hardware.word_bytes


    def _chimera_json(self) -> dict[str, Any]:
        """The nest Chimera's model picks, with its DV / MU and what the trace of it moves."""
        nest = self.chimera
        assert nest is not None
        a = analyze_gemm_chain(nest, self.hardware)
        return {"fused_nest": nest.to_json(), "chimera_dv_bytes": a.chimera_dv_bytes,
                "chimera_mu_bytes": a.chimera_mu_bytes, "traffic_bytes": a.traffic_bytes,
                "peak_sram_bytes": a.peak_sram_bytes, "estimated_cycles": a.estimated_cycles}

    def to_json(self, name: str) -> dict[str, Any]:
        """The JSON object of `dsasim search CHAIN --json` (stable key order, no wall times)."""
        result = self
        hw = result.hardware
        best, fused, lbl = result.best, result.fused, result.layer_by_layer

        def part(p: Any) -> dict[str, Any]:
            data: dict[str, Any] = {"layers": [layer.name for layer in result.chain.layers[p.first:p.stop]],
                                    "fused": p.fused is not None, "loaded_bytes": p.loaded_bytes,
                                    "stored_bytes": p.stored_bytes, "peak_sram_bytes": p.peak_sram_bytes,
                                    "macs": p.macs, "cycles": p.cycles, "cycles_source": p.cycles_source}
            if p.fused is not None:
                data["recomputed_macs"] = p.analysis.recomputed_macs
                data["intermediate_peak_bytes"] = p.analysis.intermediate_peak_bytes
                if isinstance(p.analysis, GemmChainAnalysis):  # its rmw, and Chimera's model of the nest
                    data["rmw_bytes"] = p.analysis.rmw_bytes
                    data["chimera_dv_bytes"] = p.analysis.chimera_dv_bytes
                    data["chimera_mu_bytes"] = p.analysis.chimera_mu_bytes
                data["fused_nest"] = p.fused.to_json()
            else:
                data["loop_nest"] = p.candidate.nest.to_json()
            return data

        totals = result.totals(best, result.fold(best))
        lbl_totals = result.totals(lbl, result.fold(lbl))
        fused_totals = result.totals([fused]) if fused is not None else None
        return {
            "chain": name,
            "hardware": hw.name,
            "word_bytes": hw.word_bytes,
            "objective": result.objective.name,
            "sram_bytes": result.sram_bytes,
            "fused": best is not None and len(best) < len(result.chain),
            "partition": result.label(best) if best else None,
            "loaded_bytes": totals["loaded_bytes"] if totals else None,
            "stored_bytes": totals["stored_bytes"] if totals else None,
            "traffic_bytes": totals["traffic_bytes"] if totals else None,
            "cycles": totals["cycles"] if totals else None,
            "residual_fold_bytes": result.fold(best),
            "lower_bound_bytes": result.compulsory_bytes,
            "compulsory_bytes": result.compulsory_bytes,
            "fused_bytes": fused_totals["traffic_bytes"] if fused_totals else None,
            "fused_cycles": fused_totals["cycles"] if fused_totals else None,
            "recomputed_macs": fused.analysis.recomputed_macs if fused is not None else None,
            "intermediate_peak_bytes": fused.analysis.intermediate_peak_bytes if fused is not None else None,
            "layer_by_layer_bytes": lbl_totals["traffic_bytes"] if lbl_totals else None,
            "layer_by_layer_cycles": lbl_totals["cycles"] if lbl_totals else None,
            "layer_by_layer_bound_bytes": self.layer_by_layer_bound_bytes,
            "evaluations": result.evaluations,
            "parts": [part(p) for p in best] if best else [],
            "chimera": None if self.chimera is None else self._chimera_json(),
        }


def _best_index(space: FusedSpace, cap: int, objective: Objective) -> tuple[int, ...] | None:
    """The grid index of the best valid nest by `objective` whose peak fits `cap` (equal keys: the first in the
    grid), None when none fits."""
    ok = space.valid & (space.peak_sram_bytes <= cap)
    if not ok.any():
        return None
    flat = np.flatnonzero(ok.reshape(-1))
    traffic = space.traffic_bytes.reshape(-1)[flat]
    cycles = space.estimated_cycles.reshape(-1)[flat]
    peak = space.peak_sram_bytes.reshape(-1)[flat]
    order = objective.order(traffic=traffic, cycles=cycles, peak=peak)
    return tuple(int(x) for x in np.unravel_index(int(flat[order[0]]), ok.shape))


def _fused_spaces(chain: ConvChain | GemmChain, hw: Accelerator) -> dict[tuple[int, int], FusedSpace | GemmChainSpace]:
    """Every fused segment's space (layers [first, stop), two or more), independent of the SRAM size."""
    if isinstance(chain, GemmChain):  # two layers: the only fused segment is the whole chain
        return {(0, 2): evaluate_gemm_chain_space(chain, hw)}
    spaces: dict[tuple[int, int], FusedSpace | GemmChainSpace] = {}
    L = len(chain)
    for first in range(L):
        for stop in range(first + 2, L + 1):
            sub = chain if (first, stop) == (0, L) else ConvChain(
                chain.layers[first:stop], chain.relu[first:stop], name=f"{chain.name}[{first + 1}:{stop}]")
            spaces[(first, stop)] = evaluate_fused_space(sub, hw)
    return spaces


def estimate_chain_work(chain: ConvChain | GemmChain, hw: Accelerator, n_capacities: int = 1,
                        layer_work: Callable[[Any], Any] | None = None) -> Any:
    """The whole work (a `search.WorkEstimate`) of a chain search (`search_chain`) or sweep over `n_capacities`
    SRAM sizes (`sweep_chain`): each distinct layer's search plus the fused spaces (a GEMM chain's grid, counted
    exactly; a conv chain's fused spaces, N x OH x OW tiles x 8 variants per segment, at the search's rate).
    `layer_work(problem)` replaces `estimate_search_work` for the layers (a caller's cache over many chains)."""
    from dsasim.architect.search import EVALUATIONS_PER_SECOND, WorkEstimate, estimate_search_work

    distinct = {layer.spec(): layer for layer in chain.layers}
    layers = [estimate_search_work(layer, hw, n_capacities) if layer_work is None else layer_work(layer)
              for layer in distinct.values()]
    if isinstance(chain, GemmChain):
        fused = estimate_gemm_chain_space_work(chain, hw)
    else:
        N, _, OH, OW = chain.output_shape
        n = len(chain) * (len(chain) - 1) // 2 * N * OH * OW * len(HALO_POLICIES) * len(WEIGHT_POLICIES) * len(_WAYS)
        fused = WorkEstimate(what="", evaluations=n, traced_operations=0, seconds=n / EVALUATIONS_PER_SECOND)
    parts = [*layers, fused]
    return WorkEstimate(what=f"search of the chain {chain.name} ({len(distinct)} distinct layer(s) at "
                             f"{n_capacities:,} SRAM size(s), and its fused schedules)",
                        evaluations=sum(w.evaluations for w in parts), traced_operations=0,
                        seconds=sum(w.seconds for w in parts))


def _fused_choice(space: FusedSpace | GemmChainSpace, first: int, stop: int, hw: Accelerator, objective: Objective,
                  runner: Callable[..., Any] | None) -> SegmentChoice | None:
    """The best nest of a fused segment's space under hw.sram_bytes, traced and timed when a runner is given."""
    if isinstance(space, GemmChainSpace):
        nest: FusedNest | GemmChainNest | None = space.best(hw.sram_bytes, objective)
    else:
        index = _best_index(space, hw.sram_bytes, objective)
        nest = None if index is None else space.nest(index)
    if nest is None:
        return None
    a = analyze_gemm_chain(nest, hw) if isinstance(nest, GemmChainNest) else analyze_fused(nest, hw)
    cycles, source = a.estimated_cycles, "estimate"
    if runner is not None:
        from dsasim.timing import simulate as simulate_timing
        result = runner(nest, hw)
        if (result.loaded_bytes, result.stored_bytes, result.peak_sram_bytes) != (a.loaded_bytes, a.stored_bytes,
                                                                                  a.peak_sram_bytes):
            raise AssertionError(f"fused model and trace differ for {nest!r}")
        cycles, source = int(simulate_timing(result.trace, hw).cycles), "simulated"
    return SegmentChoice(first, stop, nest, a, None, a.loaded_bytes, a.stored_bytes, a.peak_sram_bytes, a.macs,
                         a.tensorcore_cycles, cycles, source)


def _layer_choice(chain: ConvChain | GemmChain, i: int, hw: Accelerator, objective: Objective,
                  runner: Callable[..., Any] | None, counter: list[int], force: bool,
                  warn: Callable[[str], None] | None, simulate: bool = True) -> SegmentChoice | None:
    """Layer i's best single-layer schedule under hw.sram_bytes (`search`; traced, and timed when `simulate`, with
    a runner); counter[0] gains its evaluations."""
    from dsasim.architect.search import search
    result = search(chain.layers[i], hw, hw.sram_bytes, objective, runner=runner, confirm_top=1,
                    simulate=simulate and runner is not None, force=force, warn=warn)
    counter[0] += result.evaluations
    return _layer_segment(i, result.best)


def _layer_segment(i: int, best: Any) -> SegmentChoice | None:
    """Layer i's best single-layer `Candidate` (or None: nothing fits) as a segment of the partition."""
    if best is None:
        return None
    source = "simulated" if best.simulated_cycles is not None else "estimate"
    return SegmentChoice(i, i + 1, None, None, best, best.loaded_bytes, best.stored_bytes, best.peak_sram_bytes,
                         best.macs, best.tensorcore_cycles, best.cycles, source)


def _partition(chain: ConvChain | GemmChain, hw: Accelerator, objective: Objective,
               layers: list[SegmentChoice | None],
               spaces: dict[tuple[int, int], FusedSpace | GemmChainSpace],
               fused_parts: dict[tuple[int, int], SegmentChoice | None], evaluations: int,
               seconds: float) -> ChainSearchResult:
    """The best split of the chain into the given fused segments and single layers (every split is tried); for a
    GEMM chain also the nest Chimera's model would pick. Ranked by `objective`'s key without the peak (equal keys:
    the first split in the cuts' `itertools.product` order, the whole chain fused first)."""
    L = len(chain)
    result = ChainSearchResult(chain, hw, hw.sram_bytes, objective, None, fused_parts.get((0, L)),
                               None if any(p is None for p in layers) else list(layers),  # type: ignore[arg-type]
                               chain.compulsory_bytes(hw.word_bytes), evaluations, seconds)
    space = spaces.get((0, L))
    if isinstance(space, GemmChainSpace):
        result.chimera = space.chimera_choice(hw.sram_bytes)
    best_key = None
    for cuts in itertools.product((False, True), repeat=L - 1):  # a cut after layer i + 1 (True: split there)
        bounds = [0] + [i + 1 for i, cut in enumerate(cuts) if cut] + [L]
        parts = [layers[a] if b - a == 1 else fused_parts[(a, b)] for a, b in zip(bounds, bounds[1:])]
        if any(p is None for p in parts):
            continue
        totals = ChainSearchResult.totals(parts, result.fold(parts))  # type: ignore[arg-type]
        key = objective.key(traffic=totals["traffic_bytes"], cycles=totals["cycles"])
        if best_key is None or key < best_key:
            result.best, best_key = parts, key  # type: ignore[assignment]
    return result


def search_chain(chain: ConvChain | GemmChain, hardware: Accelerator, sram_bytes: int | None = None,
                 objective: Objective | str = DEFAULT_OBJECTIVE,
                 fused_runner: Callable[..., Any] | None = None,
                 loopnest_runner: Callable[..., Any] | None = None, force: bool = False,
                 warn: Callable[[str], None] | None = None,
                 progress: Callable[[float], None] | None = None) -> ChainSearchResult:
    """The best partition of `chain` into fused segments and single layers under `sram_bytes` (module docstring).

    With runners (`dsasim.kernels.fused_kernel.run_fused`, `dsasim.kernels.loopnest_kernel.run_loopnest`; the CLI
    finds them by entry point) every chosen schedule is traced (checked equal to the model) and timed: cycles are
    simulated.
    The whole work is estimated first (`estimate_chain_work`): beyond the usual it raises WorkTooLargeError unless
    `force` (then `warn` gets the estimate); `force` and `warn` also go to each layer's `search`. `progress` gets
    the fraction done (0..1) after each layer and after the fused spaces."""
    from dsasim.architect.search import check_work, with_capacity
    require_one_level(hardware, "chain search")
    objective = objective_named(objective)
    _, hw = with_capacity(hardware, sram_bytes)
    check_work(estimate_chain_work(chain, hw), force, warn, smaller=CHAIN_SMALLER)
    start = time.perf_counter()
    counter = [0]
    layers = []
    for i in range(len(chain)):  # progress: each layer a share, the fused spaces the last one
        layers.append(_layer_choice(chain, i, hw, objective, loopnest_runner, counter, force, warn))
        if progress is not None:
            progress((i + 1) / (len(chain) + 1))
    spaces = _fused_spaces(chain, hw)
    fused_parts = {seg: _fused_choice(space, *seg, hw, objective, fused_runner) for seg, space in spaces.items()}
    evaluations = counter[0] + sum(space.evaluations for space in spaces.values())
    if progress is not None:
        progress(1.0)
    return _partition(chain, hw, objective, layers, spaces, fused_parts, evaluations, time.perf_counter() - start)
