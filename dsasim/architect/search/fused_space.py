"""The fused space of a `ConvChain`: every fused nest of a chain (or of one of its segments), evaluated at once.

`evaluate_fused_space(chain, hardware)` evaluates every (n, oh, ow) tile of the last output (all sizes 1 .. extent),
halo recompute / keep, weights resident / per-tile, a 1- or 2-way tile scope, with numpy over the whole space (per
axis and tile size the `AxisPlan` sums; the peak from the distinct tile classes). It equals `analyze_fused` on every
field it reports (tested); its vector cycles are the floor sum(elements) / lanes. Its `accesses` (per level reads
and writes, padded MACs, lane operations: equal to `fused_access_counts`, tested) are built on first use, so only an
energy objective pays for them; `best(sram_bytes, objective)` prices them at that SRAM size (`energy_pj`).
`evaluate_segment_spaces` gives every fused segment's space (two or more consecutive layers);
`estimate_fused_space_work` their size, before any of it is evaluated. The conv kind of
`dsasim.architect.search.chain_kinds` is built from these.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from dsasim.architect.problems.chain import ConvChain
from dsasim.architect.model.fused import HALO_POLICIES, WEIGHT_POLICIES, FusedNest, axis_plan, _axis_geometry
from dsasim.architect.search.objective import DEFAULT_OBJECTIVE, Objective, objective_named
from dsasim.cost import ddr_port, dma_cycles, overlapped_cycles, padded_macs, tensorcore_cycles, vector_cycles
from dsasim.dataflow import DATAFLOWS
from dsasim.energy.report import energy_pj_of
from dsasim.hardware import DDR, SRAM_LEVEL, Accelerator

__all__ = ["FusedSpace", "FusedSpaceAccesses", "evaluate_fused_space", "evaluate_segment_spaces",
           "estimate_fused_space_work"]

_WAYS = (1, 2)

@dataclass(frozen=True)
class FusedSpaceAccesses:
    """Every fused nest's reads and writes per level (bytes; DDR and the SRAM), padded MACs and vector lane
    operations, as numpy arrays that broadcast to the space's grid: `fused_access_counts` summed over tensors."""

    read_bytes: dict[str, np.ndarray]
    write_bytes: dict[str, np.ndarray]
    padded_macs: np.ndarray
    vector_lane_ops: np.ndarray


@dataclass(frozen=True)
class FusedSpace:
    """Every fused nest of a chain, evaluated: arrays of shape (n tiles, oh tiles, ow tiles, halo, weights, ways).
    `hardware` is the hardware it was evaluated on (its SRAM size aside: `best` prices energy at the size asked)."""

    chain: ConvChain
    hardware: Accelerator
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
    grid: "_Grid" = field(repr=False, compare=False)  # the per-axis tables the access counts are summed from

    @property
    def evaluations(self) -> int:
        return int(self.valid.sum())

    @property
    def traffic_bytes(self) -> np.ndarray:
        return self.loaded_bytes + self.stored_bytes

    @property
    def estimated_cycles(self) -> np.ndarray:
        return overlapped_cycles(self.dma_cycles, self.tensorcore_cycles + self.vector_cycles_floor)

    @functools.cached_property
    def accesses(self) -> FusedSpaceAccesses:
        """Every nest's reads and writes per level, padded MACs and lane operations (computed on first use: only an
        energy objective asks for them)."""
        return _space_accesses(self)

    def energy_pj(self, sram_bytes: int) -> np.ndarray:
        """Every nest's energy in pJ on the hardware with an SRAM of `sram_bytes` (its energy per access, leakage
        and area follow its size), leakage over the estimated cycles: `energy_pj_of` of `accesses`."""
        from dsasim.architect.search.layer_search import with_capacity
        _, hw = with_capacity(self.hardware, sram_bytes)
        a = self.accesses
        return energy_pj_of(hw, a.read_bytes, a.write_bytes, a.padded_macs, a.vector_lane_ops,
                            self.estimated_cycles)

    def nest(self, index: tuple[int, ...]) -> FusedNest:
        """The FusedNest at a grid index."""
        a, b, c, h, w, k = index
        return FusedNest(self.chain, {"n": int(self.tiles[0][a]), "oh": int(self.tiles[1][b]),
                                      "ow": int(self.tiles[2][c])}, HALO_POLICIES[h], WEIGHT_POLICIES[w], _WAYS[k])

    def best(self, sram_bytes: int, objective: Objective | str = DEFAULT_OBJECTIVE) -> FusedNest | None:
        """The best valid nest by `objective` whose peak fits `sram_bytes` (None when none fits); an energy
        objective prices the nests at that SRAM size."""
        index = _best_index(self, sram_bytes, objective_named(objective))
        return None if index is None else self.nest(index)


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


def _axis_pieces(chain: ConvChain, axis: int, tiles: np.ndarray) -> np.ndarray:
    """Per tile size along one axis (rows) and level (columns): the runs of new rows summed over the tiles, a line
    buffer's TensorCore calls along the slide loop (only the access counts need them: built on their first use)."""
    geometry = _axis_geometry(chain, axis)
    plans = [axis_plan(geometry, int(t)) for t in tiles]
    return np.array([[sum(len(runs) for runs in p.pieces[i]) for i in range(len(chain) + 1)] for p in plans],
                    np.int64)


@dataclass(frozen=True)
class _Grid:
    """The space's per-axis tables and its broadcast masks, shapes (n, r, c, halo, weights, ways)."""

    R: dict[str, np.ndarray]
    C: dict[str, np.ndarray]
    nt: np.ndarray  # n trips
    rt: np.ndarray
    ct: np.ndarray
    slide_ow: np.ndarray  # halo kept, sliding along ow
    slide_oh: np.ndarray  # halo kept, sliding along oh (ow has one trip)
    N: int

    @staticmethod
    def along(column: np.ndarray, axis: int) -> np.ndarray:
        """A per-tile-size column of the rows (axis 0) or the columns (axis 1), broadcast to the grid."""
        return column[None, :, None, None, None, None] if axis == 0 else column[None, None, :, None, None, None]

    def level(self, table: dict, key: str, i: int, axis: int) -> np.ndarray:
        return self.along(table[key][:, i], axis)

    def sums(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows and columns of level i summed over the tiles: new along the slide loop, held otherwise."""
        r = np.where(self.slide_oh, self.level(self.R, "new", i, 0), self.level(self.R, "len", i, 0))
        c = np.where(self.slide_ow, self.level(self.C, "new", i, 1), self.level(self.C, "len", i, 1))
        return r, c

    def pixels(self, i: int) -> np.ndarray:
        """Elements per channel of level i the nest computes (recomputed halos included)."""
        r, c = self.sums(i)
        return self.N * r * c

    def calls(self, i: int, row_pieces: np.ndarray, col_pieces: np.ndarray) -> np.ndarray:
        """TensorCore calls of layer i: one per tile, or per run of new rows along the slide loop (as
        `analyze_fused` counts them; `_axis_pieces` of the rows and of the columns)."""
        r = np.where(self.slide_oh, self.along(row_pieces[:, i], 0), self.rt)
        c = np.where(self.slide_ow, self.along(col_pieces[:, i], 1), self.ct)
        return self.nt * r * c


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
    grid_of = _Grid(R, C, nt, rt, ct, slide_ow, slide_oh, N)

    r0, c0 = grid_of.sums(0)
    image = N * ch[0] * r0 * c0
    weights = np.where(per_tile, w_elems * tiles_n, w_elems)
    loaded = (image + weights) * word
    image_loads = np.where(slide_ow, nt * rt * C["new_transfers"][None, None, :, None, None, None],
                           np.where(slide_oh, nt * R["new_transfers"][None, :, None, None, None, None] * ct, tiles_n))
    loads = image_loads + np.where(per_tile, L * tiles_n, L)
    macs = tc_cycles = vec = 0
    for i, layer in enumerate(chain.layers, start=1):
        pixels = grid_of.pixels(i)
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
    return FusedSpace(chain=chain, hardware=hardware, tiles=(tn, tr, tc), valid=full(valid),
                      loaded_bytes=full(loaded), stored_bytes=stored, loads=full(loads), macs=full(macs),
                      tensorcore_cycles=full(tc_cycles), vector_cycles_floor=full(vec), dma_cycles=full(dma),
                      peak_sram_bytes=full(peak),
                      seconds=time.perf_counter() - start, grid=grid_of)


def _space_accesses(space: FusedSpace) -> FusedSpaceAccesses:
    """Every nest's reads and writes per level, as `fused_access_counts` counts them for one nest (its docstring):
    the DMA loads read DDR and write the SRAM, the stores the reverse; per layer the dataflow's operand reads and
    output writes (every call's output fresh), then a residual add (reads the output and the image, writes the
    output) and a ReLU (reads and writes its level), one lane operation per element each."""
    chain, hw, g = space.chain, space.hardware, space.grid
    word, L = hw.word_bytes, len(chain)
    flow = DATAFLOWS[hw.tensorcore_dataflow]
    ib, ob = hw.tensorcore_in_channels, hw.tensorcore_out_channels
    row_pieces, col_pieces = _axis_pieces(chain, 0, space.tiles[1]), _axis_pieces(chain, 1, space.tiles[2])
    sram_read: Any = space.stored_bytes
    sram_write: Any = space.loaded_bytes
    lanes: Any = 0
    for i, layer in enumerate(chain.layers, start=1):
        pixels, calls = g.pixels(i), g.calls(i, row_pieces, col_pieces)
        groups, icg, ocg = layer.groups, layer.ic // layer.groups, layer.oc // layer.groups
        sums = {"pixels": (pixels, pixels, calls), "taps": (layer.kh * layer.kw,) * 2 + (1,),
                "groups": (groups, groups, 1), "in": (icg, -(-icg // ib), 1), "out": (ocg, -(-ocg // ob), 1)}
        writes = flow.summed("output_writes", sums)
        elements = pixels * layer.oc
        sram_read = sram_read + (flow.summed("input_reads", sums) + flow.summed("weight_reads", sums)
                                 + writes - elements) * word
        sram_write = sram_write + writes * word
        adds = int(chain.relu[i - 1]) + int(i == L and chain.residual)
        if adds:  # each reads and overwrites the level; the residual also reads the image
            sram_read = sram_read + (adds + int(i == L and chain.residual)) * elements * word
            sram_write = sram_write + adds * elements * word
            lanes = lanes + adds * elements
    return FusedSpaceAccesses(read_bytes={DDR: space.loaded_bytes, SRAM_LEVEL: sram_read},
                              write_bytes={DDR: np.asarray(space.stored_bytes), SRAM_LEVEL: sram_write},
                              padded_macs=padded_macs(hw, space.tensorcore_cycles),
                              vector_lane_ops=np.asarray(lanes, np.int64))


def _best_index(space: FusedSpace, cap: int, objective: Objective) -> tuple[int, ...] | None:
    """The grid index of the best valid nest by `objective` whose peak fits `cap` (equal keys: the first in the
    grid), None when none fits; an energy objective prices the nests at `cap`."""
    ok = space.valid & (space.peak_sram_bytes <= cap)
    if not ok.any():
        return None
    flat = np.flatnonzero(ok.reshape(-1))
    traffic = space.traffic_bytes.reshape(-1)[flat]
    cycles = space.estimated_cycles.reshape(-1)[flat]
    peak = space.peak_sram_bytes.reshape(-1)[flat]
    energy = np.broadcast_to(space.energy_pj(cap), ok.shape).reshape(-1)[flat] if objective.needs_energy else None
    order = objective.order(traffic=traffic, cycles=cycles, peak=peak, energy=energy)
    return tuple(int(x) for x in np.unravel_index(int(flat[order[0]]), ok.shape))


def evaluate_segment_spaces(chain: ConvChain, hw: Accelerator) -> dict[tuple[int, int], FusedSpace]:
    """Every fused segment's space (layers [first, stop), two or more), independent of the SRAM size."""
    spaces: dict[tuple[int, int], FusedSpace] = {}
    L = len(chain)
    for first in range(L):
        for stop in range(first + 2, L + 1):
            sub = chain if (first, stop) == (0, L) else ConvChain(
                chain.layers[first:stop], chain.relu[first:stop], name=f"{chain.name}[{first + 1}:{stop}]")
            spaces[(first, stop)] = evaluate_fused_space(sub, hw)
    return spaces


def estimate_fused_space_work(chain: ConvChain, hw: Accelerator, objective: Objective | str = DEFAULT_OBJECTIVE,
                              n_capacities: int = 1) -> Any:
    """The work (a `search.WorkEstimate`) of `evaluate_segment_spaces`: N x OH x OW tiles x 8 variants per segment,
    at the search's rate (seconds). The same for every objective and number of sizes: an energy objective builds
    the access arrays once (about the cost of the traffic figures) and prices them per size with a few array
    products (`FusedSpace.energy_pj`), small beside the evaluation (bench/bench_chain_energy.py)."""
    from dsasim.architect.search.layer_search import EVALUATIONS_PER_SECOND, WorkEstimate
    N, _, OH, OW = chain.output_shape
    n = len(chain) * (len(chain) - 1) // 2 * N * OH * OW * len(HALO_POLICIES) * len(WEIGHT_POLICIES) * len(_WAYS)
    return WorkEstimate(what="", evaluations=n, traced_operations=0, seconds=n / EVALUATIONS_PER_SECOND)
