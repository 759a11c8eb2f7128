"""Fused schedules as data (`FusedNest`) and their traffic, MACs and SRAM in closed form (`analyze_fused`).

A `FusedNest` runs a `ConvChain` tile by tile over the *last* layer's output, never writing an intermediate to DDR:

    [weights resident: every layer's weights loaded once, scope weights@top]
    for n in 0:N step tn:
      for oh in 0:OH step th:            # the last layer's output rows
        for ow in 0:OW step tw:          # ... and columns
          scope tile (ways):             # [weights per-tile: every layer's weights loaded here]
            image box  = the rows/columns of the input that the tile needs through the whole chain (loaded)
            mid i box  = the rows/columns of layer i's output that the tile needs (on chip, computed)
            output tile: computed from mid L-1 (+ the identity residual from the image box), stored once

Along each axis the box of level i (0: the image, i: layer i's output, L: the output tile) is the tight range of
rows that the level above reads (`window_rows`, padding never loaded), so a tile of a 3x3 chain carries a halo that
grows by each layer's reach. Two halo policies:

* `recompute`: every tile loads its whole image box and computes its whole mid boxes; the overlap between
  neighbouring tiles is loaded and computed again (recomputed MACs).
* `keep`: the image and every intermediate keep a rotating (line) buffer along the innermost spatial loop with
  more than one trip (ow, else oh: the *slide loop*), in a scope `sweep` just outside it (a sweep is one run of that
  loop). Each tile loads only the image rows its buffer does not hold (`TracedArray.slide`) and computes only the
  intermediate rows its buffers do not hold (`Session.on_chip` tensors slide too): no recompute, no re-load, at the
  cost of buffers that hold the largest box of the sweep for the whole sweep.

Every count is exact and separable by axis: a box's elements are n x channels x rows x columns, so sums over the
tiles are products of per-axis sums (`axis_plan`: per level and tile, the rows held and the rows new to the tile,
O(trips x layers) once per tile size and cached); the peak SRAM is the largest sum over the tile classes; the
vector unit's ceil(elements / lanes) per computed box is summed over the distinct box sizes with their counts.
`analyze_fused(nest, hardware)` gives a `FusedAnalysis`; tests check it against the trace of
`kernels/fused_kernel.py` on random nests.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from dsasim.architect.problems.chain import ConvChain
from dsasim.architect.model.fused_analysis import FusedAnalysis
from dsasim.architect.nests.loopnest import tile_count
from dsasim.cost import ddr_port, dma_cycles, padded_macs, tensorcore_cycles, vector_cycles
from dsasim.geometry import window_rows
from dsasim.dataflow import DATAFLOWS
from dsasim.energy.accesses import AccessCounts, TensorAccesses
from dsasim.hardware import DDR, SRAM_LEVEL, Accelerator

__all__ = ["HALO_POLICIES", "WEIGHT_POLICIES", "FusedNest", "AxisPlan", "axis_plan", "FusedAnalysis",
           "analyze_fused"]

HALO_POLICIES = ("recompute", "keep")
WEIGHT_POLICIES = ("resident", "per-tile")
_DIMS = ("n", "oh", "ow")


@dataclass(frozen=True)
class FusedNest:
    """A fused schedule of a `ConvChain` (module docstring): tiles of the last layer's output (`tiles`: n, oh, ow;
    dimensions left out take their whole extent), the halo policy, where the weights live and the tile scope's
    buffering ways. Invalid values raise ValueError saying which and why."""

    chain: ConvChain
    tiles: tuple[int, int, int]  # (n, oh, ow) tile of the last layer's output
    halo: str = "recompute"
    weights: str = "resident"
    ways: int = 1

    def __init__(self, chain: ConvChain, tiles: Mapping[str, int] | None = None, halo: str = "recompute",
                 weights: str = "resident", ways: int = 1) -> None:
        if not isinstance(chain, ConvChain):
            raise TypeError(f"FusedNest needs a ConvChain, got {type(chain).__name__}")
        n, _, oh, ow = chain.output_shape
        extents = dict(zip(_DIMS, (n, oh, ow)))
        given = dict(tiles or {})
        unknown = sorted(set(given) - set(_DIMS))
        if unknown:
            raise ValueError(f"FusedNest tiles: unknown dimension(s) {unknown}; a fused nest tiles the last layer's "
                             f"output along {list(_DIMS)}")
        values = []
        for d in _DIMS:
            t = given.get(d, extents[d])
            if isinstance(t, bool) or not isinstance(t, (int, np.integer)):
                raise ValueError(f"FusedNest tiles[{d!r}] must be an integer, got {t!r}")
            if not 1 <= t <= extents[d]:
                raise ValueError(f"FusedNest tiles[{d!r}] = {t}: a tile holds 1 .. {extents[d]} (the extent of {d} in "
                                 f"the output of {chain.layers[-1].name})")
            values.append(int(t))
        if halo not in HALO_POLICIES:
            raise ValueError(f"FusedNest halo={halo!r}: use 'recompute' (each tile recomputes its halo) or 'keep' "
                             f"(line buffers keep it between tiles)")
        if weights not in WEIGHT_POLICIES:
            raise ValueError(f"FusedNest weights={weights!r}: use 'resident' (loaded once) or 'per-tile' (loaded by "
                             f"every tile)")
        if isinstance(ways, bool) or not isinstance(ways, int) or ways < 1:
            raise ValueError(f"FusedNest ways must be an integer >= 1 (1 = single, 2 = ping-pong), got {ways!r}")
        object.__setattr__(self, "chain", chain)
        object.__setattr__(self, "tiles", tuple(values))
        object.__setattr__(self, "halo", halo)
        object.__setattr__(self, "weights", weights)
        object.__setattr__(self, "ways", ways)
        if halo == "keep" and self.slide_dim is None:
            raise ValueError(f"FusedNest halo='keep': the tile covers the whole {oh}x{ow} output, so there is no halo "
                             f"to keep between tiles; tile oh or ow, or use halo='recompute'")

    # -- derived ---------------------------------------------------------------------------------------------
    @property
    def extents(self) -> tuple[int, int, int]:
        n, _, oh, ow = self.chain.output_shape
        return n, oh, ow

    def trips(self, dim: str) -> int:
        """Trip count of a loop (n, oh or ow)."""
        i = _DIMS.index(dim)
        return tile_count(self.extents[i], self.tiles[i])

    @property
    def output_tiles(self) -> int:
        """Tiles of the output (innermost iterations); named apart from `loopnest.tile_count`, the trip count of
        one loop, which `trips` calls."""
        return math.prod(self.trips(d) for d in _DIMS)

    @property
    def slide_dim(self) -> str | None:
        """For halo='keep': the loop the line buffers slide along (ow if it has more than one trip, else oh)."""
        for d in ("ow", "oh"):
            if self.trips(d) > 1:
                return d
        return None

    def axis(self, dim: str) -> "AxisPlan":
        """The `AxisPlan` of the oh (rows) or ow (columns) loop."""
        axis = 0 if dim == "oh" else 1
        return axis_plan(_axis_geometry(self.chain, axis), self.tiles[1 + axis])

    # -- serialisation -----------------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {"chain": self.chain.to_json(), "tiles": dict(zip(_DIMS, self.tiles)), "halo": self.halo,
                "weights": self.weights, "ways": self.ways}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "FusedNest":
        if "fused_nest" in data and "chain" not in data:
            data = data["fused_nest"]
        return cls(ConvChain.from_json(data["chain"]), data.get("tiles"), data.get("halo", "recompute"),
                   data.get("weights", "resident"), data.get("ways", 1))

    def format(self) -> str:
        """The nest as readable loops."""
        c = self.chain
        lines = [c.describe()]
        indent = ""
        if self.weights == "resident":
            lines.append(f"stage {', '.join(c.weight_names)}  (load once; scope weights@top)")
        for d, ext, t in zip(_DIMS, self.extents, self.tiles):
            if self.halo == "keep" and d == self.slide_dim:
                held = ["image", *c.mid_names]
                lines.append(f"{indent}scope sweep: rotating buffers of {', '.join(held)} (largest box of the sweep; "
                             f"only new image rows loaded, only new intermediate rows computed)")
            trips = tile_count(ext, t)
            if trips > 1:
                rag = "" if ext % t == 0 else f", last tile {ext - (trips - 1) * t}"
                lines.append(f"{indent}for {d} in 0:{ext} step {t}:   # {trips} trips{rag}")
                indent += "  "
        lines.append(f"{indent}scope tile ({self.ways}-way):")
        indent += "  "
        if self.weights == "per-tile":
            lines.append(f"{indent}load {', '.join(c.weight_names)}")
        if self.halo == "recompute":
            lines.append(f"{indent}load image box (the tile's receptive field through {len(c)} layers)")
        for i, name in enumerate(c.mid_names):
            verb = "compute the rows the line buffer lacks of" if self.halo == "keep" else "compute"
            lines.append(f"{indent}{verb} {name} = layer {i + 1}(...) on the TensorCore"
                         + (" + ReLU" if c.relu[i] else "") + "   # on chip")
        tail = (" + image (residual)" if c.residual else "") + (" then ReLU" if c.relu[-1] else "")
        lines.append(f"{indent}output tile = layer {len(c)}(...){tail}; stored once")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"FusedNest({self.chain.name!r}, tiles={dict(zip(_DIMS, self.tiles))}, halo={self.halo!r}, "
                f"weights={self.weights!r}, ways={self.ways})")


# ---------------------------------------------------------------------------------------------- per-axis plan
def _axis_geometry(chain: ConvChain, axis: int) -> tuple:
    """Hashable per-axis geometry of a chain: per layer (kernel, stride, dilation, padding, input size), and the
    output extent."""
    layers = tuple((layer.kh if axis == 0 else layer.kw, layer.stride[axis], layer.dilation[axis],
                    layer.padding[axis], layer.h if axis == 0 else layer.w) for layer in chain.layers)
    last = chain.layers[-1]
    return layers, last.oh if axis == 0 else last.ow


@dataclass(frozen=True)
class AxisPlan:
    """Per level (0 = image .. L = output) and per tile of one spatial loop: the range of rows the tile needs
    (`start`, `stop`) and the rows it lacks when the previous tile's range is kept (`new`, the first tile: all);
    `pieces[i][j]` the runs of new rows (one, or two when a tight window at a border reaches back)."""

    start: np.ndarray  # (L + 1, trips) int64
    stop: np.ndarray
    new: np.ndarray
    pieces: tuple[tuple[tuple[tuple[int, int], ...], ...], ...] = field(repr=False)

    @property
    def lens(self) -> np.ndarray:
        return self.stop - self.start


@functools.lru_cache(maxsize=4096)
def axis_plan(geometry: tuple, tile: int) -> AxisPlan:
    """The `AxisPlan` of one axis (`_axis_geometry`) for a tile size of the last layer's output."""
    layers, extent = geometry
    levels, trips = len(layers) + 1, tile_count(extent, tile)
    start = np.zeros((levels, trips), np.int64)
    stop = np.zeros((levels, trips), np.int64)
    for j in range(trips):
        a, b = j * tile, min((j + 1) * tile, extent)
        start[levels - 1, j], stop[levels - 1, j] = a, b
        for i in range(levels - 1, 0, -1):  # layer i reads level i - 1
            k, s, d, p, size = layers[i - 1]
            a, b = window_rows(a, b, 0, k, s, d, p, size)
            start[i - 1, j], stop[i - 1, j] = a, b
    new = np.zeros_like(start)
    pieces = []
    for i in range(levels):
        row = []
        for j in range(trips):
            a, b = int(start[i, j]), int(stop[i, j])
            if j == 0:
                runs = ((a, b),)
            else:
                ka, kb = max(a, int(start[i, j - 1])), min(b, int(stop[i, j - 1]))
                if kb <= ka:  # nothing kept
                    runs = ((a, b),)
                else:
                    runs = tuple(r for r in ((a, ka), (kb, b)) if r[1] > r[0])
            new[i, j] = sum(y - x for x, y in runs)
            row.append(runs)
        pieces.append(tuple(row))
    return AxisPlan(start, stop, new, tuple(pieces))


# ------------------------------------------------------------------------------------------------- analysis
def _vector_cycles(n_lens: Counter, rows: Counter, cols: Counter, channels: int, lanes: int) -> int:
    """Sum over every box (n x channels x rows x cols, each size with its count) of ceil(elements / lanes)."""
    total = 0
    for n, cn in n_lens.items():
        for r, cr in rows.items():
            for c, cc in cols.items():
                total += cn * cr * cc * vector_cycles(n * channels * r * c, lanes)
    return total


def analyze_fused(nest: FusedNest, hardware: Accelerator) -> FusedAnalysis:
    """Traffic, transfers, MACs, cycles and peak SRAM of `nest` on `hardware`, equal to its traced run."""
    chain, word = nest.chain, hardware.word_bytes
    L = len(chain)
    N, _, _ = nest.extents
    tn = nest.tiles[0]
    n_trips = nest.trips("n")
    n_lens = Counter({tn: N // tn} if N % tn == 0 else {tn: N // tn, N % tn: 1})
    rows, cols = nest.axis("oh"), nest.axis("ow")
    jr, jc = rows.lens.shape[1], cols.lens.shape[1]
    tiles = n_trips * jr * jc
    keep = nest.halo == "keep"
    slide = nest.slide_dim if keep else None
    channels = [chain.level_shape(i)[1] for i in range(L + 1)]
    weight_elems = [math.prod(chain.weight_shape(i)) for i in range(L)]
    w_total = sum(weight_elems)

    def rows_sum(plan: AxisPlan, i: int, dim: str) -> int:
        """Rows of level i summed over the tiles of one axis: new rows along the slide loop, else held rows."""
        return int((plan.new if dim == slide else plan.lens)[i].sum())

    # DDR traffic
    image_loaded = N * channels[0] * rows_sum(rows, 0, "oh") * rows_sum(cols, 0, "ow")
    if slide == "ow":
        image_loads = n_trips * jr * int((cols.new[0] > 0).sum())
    elif slide == "oh":
        image_loads = n_trips * int((rows.new[0] > 0).sum()) * jc
    else:
        image_loads = tiles
    weight_loads = L if nest.weights == "resident" else L * tiles
    weight_loaded = w_total * (1 if nest.weights == "resident" else tiles)
    out_elems = math.prod(chain.output_shape)
    per_tensor = {"image": image_loaded * word}
    for i, name in enumerate(chain.weight_names):
        per_tensor[name] = weight_elems[i] * (1 if nest.weights == "resident" else tiles) * word
    loaded = (image_loaded + weight_loaded) * word
    sweeps = n_trips * (jr if slide == "ow" else 1)
    mid_opens = (sweeps if keep else tiles) * (L - 1)

    # compute
    macs = padded = tc_cycles = 0
    once = chain.macs
    for i, layer in enumerate(chain.layers, start=1):
        pixels = N * rows_sum(rows, i, "oh") * rows_sum(cols, i, "ow")
        g, icg, ocg = layer.groups, layer.ic // layer.groups, layer.oc // layer.groups
        taps = layer.kh * layer.kw
        macs += pixels * layer.oc * icg * taps
        cyc = tensorcore_cycles(hardware, pixels, taps, g, icg, ocg)
        tc_cycles += cyc
        padded += padded_macs(hardware, cyc)
    vec = 0
    lanes = hardware.vector_lanes

    def piece_sizes(plan: AxisPlan, i: int, dim: str) -> Counter:
        if dim == slide:
            return Counter(b - a for runs in plan.pieces[i] for a, b in runs)
        return Counter(int(x) for x in plan.lens[i])

    for i in range(1, L + 1):
        ops = (1 if chain.relu[i - 1] else 0) + (1 if i == L and chain.residual else 0)
        if ops:
            vec += ops * _vector_cycles(n_lens, piece_sizes(rows, i, "oh"), piece_sizes(cols, i, "ow"), channels[i],
                                        lanes)

    # peak SRAM (elements; the first n tile is the largest)
    resident = w_total if nest.weights == "resident" else 0
    per_tile_w = w_total if nest.weights == "per-tile" else 0
    lr, lc = rows.lens, cols.lens
    if not keep:
        grid = sum(channels[i] * np.outer(lr[i], lc[i]) for i in range(L + 1)) * tn
        mids = sum(channels[i] * np.outer(lr[i], lc[i]) for i in range(1, L)) * tn if L > 1 else np.zeros((1, 1))
        at = np.unravel_index(int(np.argmax(grid)), grid.shape)
        peak = resident + nest.ways * (int(grid.max()) + per_tile_w)
        mid_peak = nest.ways * int(np.asarray(mids)[at] if L > 1 else 0)
    else:
        # the sweep scope's rotating buffers (image, mids) hold their sweep's largest box; the tile scope the output
        if slide == "ow":
            caps = [channels[i] * lr[i] * lc[i].max() * tn for i in range(L)]  # per row tile j
            tile_out = channels[L] * lr[L] * lc[L].max() * tn
            total = sum(caps) + nest.ways * (tile_out + per_tile_w)
            j = int(np.argmax(total))
            peak = resident + int(total[j])
            mid_peak = int(sum(c[j] for c in caps[1:])) if L > 1 else 0
        else:  # slides along oh; ow has one trip
            caps = [channels[i] * lr[i].max() * lc[i][0] * tn for i in range(L)]
            tile_out = channels[L] * lr[L].max() * lc[L][0] * tn
            peak = resident + int(sum(caps)) + nest.ways * (int(tile_out) + per_tile_w)
            mid_peak = int(sum(caps[1:])) if L > 1 else 0
    peak_bytes = peak * word
    dma = dma_cycles(ddr_port(hardware), image_loads + weight_loads, loaded, tiles, out_elems * word)
    computes = []  # per layer: (output pixels computed, TensorCore calls)
    for i in range(1, L + 1):
        runs = [sum(len(r) for r in plan.pieces[i]) if dim == slide else plan.lens.shape[1]
                for plan, dim in ((rows, "oh"), (cols, "ow"))]
        computes.append((N * rows_sum(rows, i, "oh") * rows_sum(cols, i, "ow"), n_trips * runs[0] * runs[1]))
    accesses = fused_access_counts(chain, hardware, per_tensor, out_elems * word, computes, macs, padded)
    return FusedAnalysis(
        loaded_bytes=loaded, stored_bytes=out_elems * word, loads=image_loads + weight_loads, stores=tiles,
        opens=tiles + mid_opens, per_tensor_loaded=per_tensor, macs=macs, padded_macs=padded,
        tensorcore_cycles=tc_cycles, vector_cycles=vec, peak_sram_bytes=peak_bytes,
        intermediate_peak_bytes=mid_peak * word, recomputed_macs=macs - once,
        compulsory_bytes=chain.compulsory_bytes(word), dma_cycles=dma,
        fits=peak_bytes <= hardware.sram_bytes, access_counts=accesses)


def fused_access_counts(chain: ConvChain, hardware: Accelerator, loaded: Mapping[str, int], stored_bytes: int,
                        computes: list[tuple[int, int]], macs: int, padded: int) -> AccessCounts:
    """Every read and write per tensor and level of a fused conv chain (bytes), as its trace counts them: DMA loads
    of the image and weights (`loaded`, bytes per tensor) read DDR and write the SRAM, the output's stores the
    reverse; per layer i (`computes[i - 1]`: the output pixels it computes, recomputed halos included, and its
    TensorCore calls) the conv reads level i - 1 and the weight and overwrites level i (every output element of a
    call is fresh: `assign`), per the dataflow (`dsasim.dataflow`: the pixels vary from call to call, the layer's
    taps, groups and channels do not); then the residual add reads the output and the image and overwrites the
    output, and a ReLU reads and overwrites its level, one lane operation per element each."""
    word, L = hardware.word_bytes, len(chain)
    flow = DATAFLOWS[hardware.tensorcore_dataflow]
    ib, ob = hardware.tensorcore_in_channels, hardware.tensorcore_out_channels
    names = ["image", *chain.mid_names, "output"]
    moved = {name: {DDR: [0, 0], SRAM_LEVEL: [0, 0]} for name in [names[0], *chain.weight_names, names[-1],
                                                                  *names[1:-1]]}
    for name, nbytes in loaded.items():
        moved[name][DDR][0] += nbytes
        moved[name][SRAM_LEVEL][1] += nbytes
    moved["output"][SRAM_LEVEL][0] += stored_bytes
    moved["output"][DDR][1] += stored_bytes
    lanes = 0
    for i, (layer, (pixels, calls)) in enumerate(zip(chain.layers, computes), start=1):
        g, icg, ocg = layer.groups, layer.ic // layer.groups, layer.oc // layer.groups
        sums = {"pixels": (pixels, pixels, calls), "taps": (layer.kh * layer.kw,) * 2 + (1,), "groups": (g, g, 1),
                "in": (icg, -(-icg // ib), 1), "out": (ocg, -(-ocg // ob), 1)}
        writes = flow.summed("output_writes", sums)
        out = moved[names[i]][SRAM_LEVEL]
        moved[names[i - 1]][SRAM_LEVEL][0] += flow.summed("input_reads", sums) * word
        moved[chain.weight_names[i - 1]][SRAM_LEVEL][0] += flow.summed("weight_reads", sums) * word
        out[0] += (writes - pixels * layer.oc) * word
        out[1] += writes * word
        elements = pixels * layer.oc
        for add in ((i == L and chain.residual), chain.relu[i - 1]):
            if add:
                out[0] += elements * word
                out[1] += elements * word
                lanes += elements
        if i == L and chain.residual:
            moved["image"][SRAM_LEVEL][0] += elements * word
    return AccessCounts(tuple(TensorAccesses(name, level, int(r), int(w)) for name, levels in moved.items()
                             for level, (r, w) in levels.items() if r or w),
                        macs=int(macs), padded_macs=int(padded), vector_lane_ops=int(lanes))
