"""GEMM chains (C = A·B, E = C·D, attention-like) fused with C on chip, as in Chimera: the chain, its fused
nests as data, and their traffic, transfers, cycles and SRAM in closed form, beside Chimera's own DV / MU.

`GemmChain(m, n, k, l, relu=False)`: C (M, L) = A (M, K) @ B (K, L), optionally ReLU'd, then E (M, N) = C @ D
(L, N). Loops m, l (shared by both GEMMs), k (private to GEMM 1: its reduction) and n (private to GEMM 2; GEMM 2
reduces over l). A `GemmChainNest` fixes the order of the shared loops (`ml`: m outer, or `lm`), a tile per loop
and the buffering ways of the innermost scopes:

    scope top:                                  tensors staged at depth 0
    for s0 in tiles of the outer shared loop:   scope @s0: tensors staged at depth 1
      for s1 in tiles of the inner one:         scope @s1: tensors staged at depth 2; C tile (tm x tl) opened on chip
        for k in tiles of K:                    scope gemm1 (ways): A, B staged at depth 3
          C tile += A[m, k] @ B[k, l]           (TensorCore)
        [C tile = ReLU(C tile)]                 (vector unit)
        for n in tiles of N:                    scope gemm2 (ways): D, E staged at depth 3
          E[m, n] += C tile @ D[l, n]           (TensorCore; E stored when its scope exits)

A tensor is staged (its box loaded, or for E opened / re-loaded) when the scope of its *depth* opens: 1 + the
position, in its GEMM's loops (s0, s1, private), of the innermost loop that indexes it and has more than one trip
(0: none, the whole tensor staged once at the top). Its box is the current tile of each of its dimensions, and
it is kept (hits) across every loop inside that depth, which does not index it or has one trip. Hence, with T_x
the trip count of loop x:

* loads of an input T: |T| x the product of T_x over the loops *outside* its depth that do not index it;
* E: stored |E| x (the same product); every store after the first of a box is re-read (a read-modify-write of
  the partial sums over l): rmw = stored - |E|;
* peak SRAM: the C tile + the boxes staged at depth <= 2 (both GEMMs: their scopes are open throughout) +
  ways x the larger of GEMM 1's and GEMM 2's depth-3 boxes. C never touches DDR.

Chimera (`chimera_dv_bytes`, `chimera_mu_bytes`) computes DV as sum over A, B, D, E of its tile footprint DF
times the trip count of every loop from the innermost one indexing it outwards, and MU as max(DF_A + DF_B + DF_C,
DF_C + DF_D + DF_E). With every loop taking more than one trip, tiles dividing the extents and 1 way, this is
exactly the loads of A, B, D plus the stores of E here, and MU is the peak; a loop of one trip lets a scope keep a
tile Chimera counts as reloaded, so Chimera's DV is then an upper bound, and it leaves out the re-read of E's
partial sums. Only orders with the shared loops outside are fused executions (C complete before GEMM 2 reads it);
Chimera's search over full permutations includes those.

`analyze_gemm_chain(nest, hardware)` gives a `GemmChainAnalysis`; `evaluate_gemm_chain_space` evaluates every
nest (tile candidates per loop x orders) with the same closed form (`_closed_form`, numpy, a chunk at a time)
and keeps the fronts that give the best nest under any SRAM size; tests check both against the trace of
`kernels/gemm_chain_kernel.py`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

import numpy as np

from dsasim.architect.model.fused_analysis import FusedAnalysis
from dsasim.architect.nests.loopnest import MatmulProblem, tile_count
from dsasim.architect.search.objective import DEFAULT_OBJECTIVE, OBJECTIVES, Objective, objective_named
from dsasim.cost import ddr_port, dma_cycles, overlapped_cycles, padded_macs, tile_blocks, vector_cycles
from dsasim.dataflow import DATAFLOWS
from dsasim.energy.accesses import AccessCounts, TensorAccesses
from dsasim.hardware import DDR, SRAM_LEVEL, Accelerator
from dsasim.energy.report import energy_pj_of
from dsasim.util import check_int, is_ascii_whole, is_int

__all__ = ["GEMM_ORDERS", "GemmChain", "GemmChainNest", "GemmChainAnalysis", "analyze_gemm_chain",
           "GemmChainSpace", "evaluate_gemm_chain_space", "parse_gemm_chain", "estimate_gemm_chain_space_work",
           "gemm_chain_space_size", "PricedPicks", "CHUNK_NESTS", "GEMM_CHAIN_EVALUATIONS_PER_SECOND",
           "ENERGY_PASS_COST"]

GEMM_ORDERS = ("ml", "lm")  # the shared loops, outer first
_DIMS = ("m", "l", "k", "n")
_INDEXES = {"A": ("m", "k"), "B": ("k", "l"), "C": ("m", "l"), "D": ("l", "n"), "E": ("m", "n")}
_GEMM_OF = {"A": 1, "B": 1, "D": 2, "E": 2}
_PRIVATE = {1: "k", 2: "n"}


class GemmChain:
    """C = A @ B (optionally ReLU'd), E = C @ D (module docstring); extents must be integers >= 1."""

    residual = False  # no identity residual in a GEMM chain (a member of `chain_kind.Chain`)

    def __init__(self, m: int, n: int, k: int, l: int, relu: bool = False, name: str | None = None) -> None:
        owner = f"GemmChain {name!r}" if name else "GemmChain"
        for label, v in (("m", m), ("n", n), ("k", k), ("l", l)):
            check_int(f"{owner}: {label}", v, 1)
        if not isinstance(relu, bool):
            raise ValueError(f"{owner}: relu must be True or False, got {relu!r}")
        self.m, self.n, self.k, self.l, self.relu_between = m, n, k, l, relu
        self.extents = {"m": m, "l": l, "k": k, "n": n}
        self.name = name or self.spec()
        self.layers = (MatmulProblem(m, l, k, name=f"{self.name}.gemm1"),
                       MatmulProblem(m, n, l, name=f"{self.name}.gemm2"))
        self.relu = (relu, False)

    def __len__(self) -> int:
        return 2

    def shape(self, tensor: str) -> tuple[int, int]:
        """The (rows, columns) of A, B, C, D or E."""
        a, b = _INDEXES[tensor]
        return self.extents[a], self.extents[b]

    @property
    def macs(self) -> int:
        return self.m * self.l * self.k + self.m * self.n * self.l

    def compulsory_bytes(self, word_bytes: int) -> int:
        """A, B and D loaded once and E stored once; C never touches DDR. No schedule of the chain moves less."""
        return sum(math.prod(self.shape(t)) for t in "ABDE") * word_bytes

    def spec(self) -> str:
        return f"gemm-chain:m={self.m},n={self.n},k={self.k},l={self.l}" + (",relu=1" if self.relu_between else "")

    def describe(self) -> str:
        relu = "ReLU(" if self.relu_between else ""
        return (f"# {self.name}: C[{self.m}x{self.l}] = {relu}A[{self.m}x{self.k}] @ B[{self.k}x{self.l}]"
                f"{')' if relu else ''} (on chip), E[{self.m}x{self.n}] = C @ D[{self.l}x{self.n}]")

    def to_json(self) -> dict[str, Any]:
        return {"kind": "gemm-chain", "name": self.name, "m": self.m, "n": self.n, "k": self.k, "l": self.l,
                "relu": self.relu_between}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "GemmChain":
        return cls(data["m"], data["n"], data["k"], data["l"], data.get("relu", False), name=data.get("name"))

    def reference(self, A: Any, B: Any, D: Any) -> dict[str, Any]:
        """torch's (or numpy's) E for the inputs."""
        c = A @ B
        if self.relu_between:
            c = c * (c > 0)
        return {"E": c @ D}

    def __repr__(self) -> str:
        return f"GemmChain({self.spec()!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GemmChain) and self.spec() == other.spec()

    def __hash__(self) -> int:
        return hash(self.spec())


def parse_gemm_chain(text: str) -> GemmChain:
    """`gemm-chain:m=..,n=..,k=..,l=..[,relu=1]` -> GemmChain; ValueError saying what is wrong."""
    name = text.strip()
    head, _, body = name.partition(":")
    if head.strip().lower() != "gemm-chain" or not body.strip():
        raise ValueError(f"GEMM chain spec {name!r}: write gemm-chain:m=..,n=..,k=..,l=.. (C = A[m x k] @ "
                         f"B[k x l], E = C @ D[l x n]), e.g. gemm-chain:m=512,n=64,k=64,l=512")
    values: dict[str, int] = {}
    for part in body.split(","):
        key, eq, value = (x.strip() for x in part.partition("="))
        if not eq or not is_ascii_whole(value):
            raise ValueError(f"GEMM chain spec {name!r}: {part.strip()!r} is not key=non-negative integer (digits 0-9)")
        if key in values:
            raise ValueError(f"GEMM chain spec {name!r}: {key} given twice")
        values[key] = int(value)
    unknown = sorted(set(values) - {"m", "n", "k", "l", "relu"})
    missing = sorted({"m", "n", "k", "l"} - set(values))
    if unknown or missing:
        raise ValueError(f"GEMM chain spec {name!r}: needs m, n, k and l (relu=0/1 optional)"
                         + (f"; unknown key(s) {unknown}" if unknown else "")
                         + (f"; missing {missing}" if missing else ""))
    if values.get("relu", 0) not in (0, 1):
        raise ValueError(f"GEMM chain spec {name!r}: relu must be 0 or 1, got {values['relu']}")
    return GemmChain(values["m"], values["n"], values["k"], values["l"], bool(values.get("relu", 0)), name=name)


@dataclass(frozen=True)
class GemmChainNest:
    """A fused schedule of a `GemmChain` (module docstring): the shared loops' order, a tile per loop (loops left
    out take their whole extent) and the innermost scopes' buffering ways. Bad values raise ValueError."""

    chain: GemmChain
    order: str
    tiles: tuple[int, int, int, int]  # (m, l, k, n)
    ways: int

    def __init__(self, chain: GemmChain, order: str = "ml", tiles: Mapping[str, int] | None = None,
                 ways: int = 1) -> None:
        if not isinstance(chain, GemmChain):
            raise TypeError(f"GemmChainNest needs a GemmChain, got {type(chain).__name__}")
        if order not in GEMM_ORDERS:
            raise ValueError(f"GemmChainNest order={order!r}: the shared loops m and l go outside (C must be complete "
                             f"before GEMM 2 reads it); use 'ml' (m outer) or 'lm' (l outer)")
        given = dict(tiles or {})
        unknown = sorted(set(given) - set(_DIMS))
        if unknown:
            raise ValueError(f"GemmChainNest tiles: unknown loop(s) {unknown}; the loops are {list(_DIMS)}")
        values = []
        for d in _DIMS:
            t = given.get(d, chain.extents[d])
            if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or not 1 <= t <= chain.extents[d]:
                raise ValueError(f"GemmChainNest tiles[{d!r}] = {t!r}: a tile holds 1 .. {chain.extents[d]} (the "
                                 f"extent of {d})")
            values.append(int(t))
        if isinstance(ways, bool) or not isinstance(ways, int) or ways < 1:
            raise ValueError(f"GemmChainNest ways must be an integer >= 1 (1 = single, 2 = ping-pong), got {ways!r}")
        object.__setattr__(self, "chain", chain)
        object.__setattr__(self, "order", order)
        object.__setattr__(self, "tiles", tuple(values))
        object.__setattr__(self, "ways", ways)

    def tile(self, dim: str) -> int:
        return self.tiles[_DIMS.index(dim)]

    def trips(self, dim: str) -> int:
        return tile_count(self.chain.extents[dim], self.tile(dim))

    def loops(self, gemm: int) -> tuple[str, str, str]:
        """GEMM 1's or 2's loops, outer first: the shared ones, then its private one."""
        return self.order[0], self.order[1], _PRIVATE[gemm]

    def depth(self, tensor: str) -> int:
        """Where A, B, D or E is staged: 1 + the position of the innermost loop of its GEMM that indexes it and has
        more than one trip (0: none)."""
        loops = self.loops(_GEMM_OF[tensor])
        for i in (2, 1, 0):
            if loops[i] in _INDEXES[tensor] and self.trips(loops[i]) > 1:
                return i + 1
        return 0

    def to_json(self) -> dict[str, Any]:
        return {"chain": self.chain.to_json(), "order": self.order, "tiles": dict(zip(_DIMS, self.tiles)),
                "ways": self.ways}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "GemmChainNest":
        if "fused_nest" in data and "chain" not in data:
            data = data["fused_nest"]
        return cls(GemmChain.from_json(data["chain"]), data.get("order", "ml"), data.get("tiles"), data.get("ways", 1))

    def format(self) -> str:
        """The nest as readable loops."""
        c = self.chain
        staged: dict[tuple[int, int], list[str]] = {}
        for t in "ABDE":
            d = self.depth(t)
            staged.setdefault((d, _GEMM_OF[t] if d == 3 else 0), []).append(t)
        lines = [c.describe()]

        def stage(depth: int, gemm: int, indent: str) -> None:
            for t in staged.get((depth, gemm), []):
                rows, cols = _INDEXES[t]
                verb = "open/re-load" if t == "E" else "load"
                lines.append(f"{indent}{verb} {t}[{rows}, {cols}] tile  ({self.tile(rows)} x {self.tile(cols)})")

        def loop(d: str, indent: str) -> str:
            ext, t = c.extents[d], self.tile(d)
            trips = tile_count(ext, t)
            rag = "" if ext % t == 0 else f", last tile {ext - (trips - 1) * t}"
            lines.append(f"{indent}for {d} in 0:{ext} step {t}:   # {trips} trip{'s' if trips > 1 else ''}{rag}")
            return indent + "  "

        stage(0, 0, "")
        indent = loop(self.order[0], "")
        stage(1, 0, indent)
        indent = loop(self.order[1], indent)
        stage(2, 0, indent)
        lines.append(f"{indent}open C tile ({self.tile('m')} x {self.tile('l')}) on chip")
        for gemm, stmt in ((1, "C tile += A @ B"), (2, "E tile += C tile @ D   # E stored when its scope exits")):
            inner = loop(_PRIVATE[gemm], indent)
            lines.append(f"{inner}scope gemm{gemm} ({self.ways}-way):")
            stage(3, gemm, inner + "  ")
            lines.append(f"{inner}  {stmt}")
            if gemm == 1 and c.relu_between:
                lines.append(f"{indent}C tile = ReLU(C tile)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"GemmChainNest({self.chain.spec()!r}, order={self.order!r}, tiles={dict(zip(_DIMS, self.tiles))}, " \
               f"ways={self.ways})"


@dataclass(frozen=True)
class GemmChainAnalysis(FusedAnalysis):
    """What a `GemmChainNest` moves and computes, in closed form (module docstring): the fields of a fused conv
    chain's analysis (intermediate_peak_bytes: the C tile; recomputed_macs: always 0, C is computed once per tile),
    plus E's re-read partial sums and Chimera's DV / MU of the same nest."""

    rmw_bytes: int
    chimera_dv_bytes: int
    chimera_mu_bytes: int


# ------------------------------------------------------------------------------------------------ closed form
def _check_exact(chain: GemmChain, hw: Accelerator) -> None:
    """LayerTooLargeError (a ValueError) when a count could pass int64's exact range: every figure here is at most
    a few times a GEMM's MACs x word bytes (Chimera's DV at most 8 x), the bound the layer search checks."""
    from dsasim.architect.search.layer_search import _check_exact as check_layer
    for layer in chain.layers:
        check_layer(layer, 8 * hw.word_bytes)


def _closed_form(chain: GemmChain, hw: Accelerator, order: str, t: dict[str, np.ndarray],
                 ways: np.ndarray) -> dict[str, np.ndarray]:
    """Every figure of the module docstring for arrays of tiles (broadcast together) in one order: int64 arrays."""
    ext = chain.extents
    trips = {d: -(-ext[d] // t[d]) for d in _DIMS}
    one = np.ones_like(trips["m"])
    size = {x: math.prod(chain.shape(x)) for x in "ABDE"}
    box = {x: t[_INDEXES[x][0]] * t[_INDEXES[x][1]] for x in "ABCDE"}
    depth, mult, instances, distinct = {}, {}, {}, {}
    for x in "ABDE":
        loops = (order[0], order[1], _PRIVATE[_GEMM_OF[x]])
        indexes = [d in _INDEXES[x] for d in loops]
        dep = np.zeros_like(trips["m"])
        for i in (0, 1, 2):  # the innermost indexing loop with more than one trip wins (later i overwrite)
            if indexes[i]:
                dep = np.where(trips[loops[i]] > 1, i + 1, dep)
        depth[x] = dep
        mult[x], instances[x], distinct[x] = one, one, one
        for i in (0, 1, 2):
            outside = dep > i
            f = np.where(outside, trips[loops[i]], 1)
            instances[x] = instances[x] * f
            if indexes[i]:
                distinct[x] = distinct[x] * f
            else:
                mult[x] = mult[x] * f
    word = hw.word_bytes
    per_tensor = {x: size[x] * mult[x] * word for x in "ABD"}
    stored = size["E"] * mult["E"] * word
    per_tensor["E"] = stored - size["E"] * word  # the re-read partial sums
    loaded = per_tensor["A"] + per_tensor["B"] + per_tensor["D"] + per_tensor["E"]
    loads = instances["A"] + instances["B"] + instances["D"] + instances["E"] - distinct["E"]
    stores = instances["E"]
    opens = distinct["E"] + trips["m"] * trips["l"]
    shallow = sum(np.where(depth[x] <= 2, box[x], 0) for x in "ABDE")
    inner1 = sum(np.where(depth[x] == 3, box[x], 0) for x in "AB")
    inner2 = sum(np.where(depth[x] == 3, box[x], 0) for x in "DE")
    peak = (box["C"] + shallow + ways * np.maximum(inner1, inner2)) * word
    ic, oc = hw.tensorcore_in_channels, hw.tensorcore_out_channels
    tc = ext["m"] * (tile_blocks(ext["k"], t["k"], ic) * tile_blocks(ext["l"], t["l"], oc)
                     + tile_blocks(ext["l"], t["l"], ic) * tile_blocks(ext["n"], t["n"], oc))
    vec = np.zeros_like(tc)
    if chain.relu_between:  # ceil(elements / lanes) per C tile: the four classes of (full | ragged) m and l tiles
        lanes = hw.vector_lanes
        for lm, cm in ((t["m"], ext["m"] // t["m"]), (ext["m"] % t["m"], (ext["m"] % t["m"] > 0) * one)):
            for ll, cl in ((t["l"], ext["l"] // t["l"]), (ext["l"] % t["l"], (ext["l"] % t["l"] > 0) * one)):
                vec = vec + cm * cl * vector_cycles(lm * ll, lanes)
    accesses = _accesses(chain, hw, t, trips, per_tensor, stored)
    dma = dma_cycles(ddr_port(hw), loads, loaded, stores, stored)
    chimera_dv = sum(box[x] * trips[order[0]] * trips[order[1]] * trips[_PRIVATE[_GEMM_OF[x]]] for x in "ABDE") * word
    chimera_mu = np.maximum(box["A"] + box["B"] + box["C"], box["C"] + box["D"] + box["E"]) * word
    return {"loaded_bytes": loaded, "stored_bytes": stored, "rmw_bytes": per_tensor["E"], "loads": loads,
            "stores": stores, "opens": opens, "per_tensor": per_tensor, "tensorcore_cycles": tc,
            "vector_cycles": vec, "peak_sram_bytes": peak, "intermediate_peak_bytes": box["C"] * word,
            "dma_cycles": dma, "chimera_dv_bytes": chimera_dv, "chimera_mu_bytes": chimera_mu,
            "accesses": accesses,
            "level_bytes": {level: (sum(accesses[x][level][0] for x in accesses if level in accesses[x]),
                                    sum(accesses[x][level][1] for x in accesses if level in accesses[x]))
                            for level in (DDR, SRAM_LEVEL)}}


def _accesses(chain: GemmChain, hw: Accelerator, t: dict[str, np.ndarray], trips: dict[str, np.ndarray],
              per_tensor: dict[str, np.ndarray], stored: np.ndarray) -> dict[str, dict[str, tuple[Any, Any]]]:
    """Per tensor and level, (read, write) bytes of the nests (arrays): DMA loads read DDR and write the SRAM,
    stores the reverse; GEMM 1 (pixels m, in k, out l) reads A and B and accumulates into C, GEMM 2 (m, l, n)
    reads C and D into E, per the dataflow (`dsasim.dataflow`); C's fresh elements are its M x L (each tile opens
    as zeros on chip, GEMM 1's first k tile computes all of it), E's its M x N (each box first opens as zeros and
    is computed whole); the ReLU reads C and overwrites it (one lane operation per element)."""
    ext, word = chain.extents, hw.word_bytes
    flow = DATAFLOWS[hw.tensorcore_dataflow]
    in_block, out_block = hw.tensorcore_in_channels, hw.tensorcore_out_channels

    def dim(d: str, block: int) -> tuple[Any, Any, Any]:
        """A loop's (extent, sum of ceil(tile / block), trips)."""
        return ext[d], tile_blocks(ext[d], t[d], block), trips[d]

    gemm1 = {"pixels": dim("m", 0), "in": dim("k", in_block), "out": dim("l", out_block)}
    gemm2 = {"pixels": dim("m", 0), "in": dim("l", in_block), "out": dim("n", out_block)}
    c_writes = flow.summed("output_writes", gemm1)
    e_writes = flow.summed("output_writes", gemm2)
    c_reads = c_writes - ext["m"] * ext["l"] + flow.summed("input_reads", gemm2)
    relu = ext["m"] * ext["l"] if chain.relu_between else 0
    out: dict[str, dict[str, tuple[Any, Any]]] = {}
    for x, gemm, count in (("A", gemm1, "input_reads"), ("B", gemm1, "weight_reads"), ("D", gemm2, "weight_reads")):
        out[x] = {DDR: (per_tensor[x], 0), SRAM_LEVEL: (flow.summed(count, gemm) * word, per_tensor[x])}
    e_reads = e_writes - ext["m"] * ext["n"]
    out["E"] = {DDR: (per_tensor["E"], stored), SRAM_LEVEL: (stored + e_reads * word, per_tensor["E"] + e_writes * word)}
    out["C"] = {SRAM_LEVEL: ((c_reads + relu) * word, (c_writes + relu) * word)}
    return out


def analyze_gemm_chain(nest: GemmChainNest, hardware: Accelerator) -> GemmChainAnalysis:
    """Traffic, transfers, MACs, cycles and peak SRAM of `nest` on `hardware`, equal to its traced run."""
    chain = nest.chain
    _check_exact(chain, hardware)
    tiles = {d: np.array(nest.tile(d), np.int64) for d in _DIMS}
    f = _closed_form(chain, hardware, nest.order, tiles, np.array(nest.ways, np.int64))
    tc = int(f["tensorcore_cycles"])
    peak = int(f["peak_sram_bytes"])
    return GemmChainAnalysis(
        loaded_bytes=int(f["loaded_bytes"]), stored_bytes=int(f["stored_bytes"]), rmw_bytes=int(f["rmw_bytes"]),
        loads=int(f["loads"]), stores=int(f["stores"]), opens=int(f["opens"]),
        per_tensor_loaded={x: int(v) for x, v in f["per_tensor"].items()}, macs=chain.macs,
        padded_macs=padded_macs(hardware, tc),
        tensorcore_cycles=tc, vector_cycles=int(f["vector_cycles"]), peak_sram_bytes=peak,
        intermediate_peak_bytes=int(f["intermediate_peak_bytes"]), recomputed_macs=0,
        compulsory_bytes=chain.compulsory_bytes(hardware.word_bytes), dma_cycles=int(f["dma_cycles"]),
        fits=peak <= hardware.sram_bytes, chimera_dv_bytes=int(f["chimera_dv_bytes"]),
        chimera_mu_bytes=int(f["chimera_mu_bytes"]),
        access_counts=AccessCounts(
            tuple(TensorAccesses(x, level, int(r), int(w)) for x in "ABDEC" for level, (r, w) in f["accesses"][x].items()
                  if r or w),
            macs=chain.macs, padded_macs=int(padded_macs(hardware, tc)),
            vector_lane_ops=chain.m * chain.l if chain.relu_between else 0))


# ---------------------------------------------------------------------------------------------- the space
def _candidates(chain: GemmChain, hw: Accelerator) -> dict[str, np.ndarray]:
    """Tile sizes per loop: the search's balanced sizes, aligned to the TensorCore block each loop feeds (k: its
    inputs, n: its outputs, l: both)."""
    from dsasim.architect.search.layer_search import tile_candidates
    ic, oc = hw.tensorcore_in_channels, hw.tensorcore_out_channels
    align = {"m": 1, "k": ic, "n": oc, "l": ic * oc // math.gcd(ic, oc)}
    return {d: np.array(tile_candidates(chain.extents[d], align[d]), np.int64) for d in _DIMS}


def _exact_front(peak: np.ndarray, k1: np.ndarray, k2: np.ndarray, flat: np.ndarray) -> tuple[np.ndarray, ...]:
    """The entries best by (k1, k2) under some capacity: sorted by (peak, k1, k2, flat index), kept when strictly
    better than every entry before them; the best under a capacity is the last kept entry whose peak fits."""
    order = np.lexsort((flat, k2, k1, peak))
    peak, k1, k2, flat = peak[order], k1[order], k2[order], flat[order]
    by_key = np.lexsort((k2, k1))  # a dense rank of (k1, k2): equal keys share a rank
    new = np.ones(len(by_key), bool)
    new[1:] = (k1[by_key][1:] != k1[by_key][:-1]) | (k2[by_key][1:] != k2[by_key][:-1])
    rank = np.empty(len(by_key), np.int64)
    rank[by_key] = np.cumsum(new)
    before = np.full(len(rank), np.iinfo(np.int64).max)
    before[1:] = np.minimum.accumulate(rank)[:-1]
    keep = rank < before
    return peak[keep], k1[keep], k2[keep], flat[keep]


def _front_candidates(peak: np.ndarray, k1: np.ndarray, by_peak: np.ndarray) -> np.ndarray:
    """A superset of the front's entries, cheaply: those whose k1 is no worse than every k1 before them in
    `by_peak` (an order of increasing peak; a front entry beats everything at a smaller peak, and among equal peaks
    has the least k1, so it passes wherever ties fall)."""
    ks = k1[by_peak]
    return by_peak[ks <= np.minimum.accumulate(ks)]


GEMM_CHAIN_EVALUATIONS_PER_SECOND = 1.0e6  # the closed form over the grid, end to end (measured 0.7-1.0 M/s)
ENERGY_PASS_COST = 0.7  # an energy pass's time per nest / the fronts pass's (0.4-0.7: bench_gemm_chain_energy.py)
CHUNK_NESTS = 1 << 20  # nests evaluated at once: ~30 int64 arrays of this length, a few hundred MB at most
MERGE_EVERY = 64  # chunks' fronts merged into one this often, so that what is kept stays small too


@dataclass(frozen=True)
class PricedPicks:
    """What one energy pass over the grid kept at one priced SRAM size: per energy objective (those of OBJECTIVES
    that rank by energy), the key of the best nest whose peak fits that size (`Objective.key`'s figures with the
    peak, e.g. energy pJ, cycles, traffic bytes, peak bytes, then the nest's flat grid index; None: none fits),
    and the pass's wall-clock seconds."""

    sram_bytes: int
    keys: dict[Objective, tuple | None]
    seconds: float

    def flat_index(self, objective: Objective) -> int | None:
        """The flat grid index of `objective`'s pick (None: none fits)."""
        key = self.keys[objective]
        return None if key is None else int(key[-1])


@dataclass(frozen=True)
class GemmChainSpace:
    """Every GemmChainNest of a chain over the candidate tiles (grid shape: orders, m, l, k, n tiles), evaluated
    chunk by chunk; what is kept are the fronts from which the best nest under any capacity is read off: by traffic
    (ties: estimated cycles), by estimated cycles (ties: traffic), and by Chimera's DV with its MU. One way only:
    a second way changes no count and no estimate (which already assumes transfers overlap compute), only the peak,
    so it never ranks better; its effect shows in the timing simulation of a nest given ways=2.

    Energy and EDP have no front over peak: the SRAM's energy per access, its leakage and its area follow its size
    (the SRAM rule), so a nest's energy is only defined at one priced size. `best(sram_bytes, ENERGY or EDP)`
    evaluates the grid once more at that size (chunked like the first pass), keeps every energy objective's pick
    there (`priced`, a cache by size: a sweep that asks again at the same size, or for EDP after energy, costs
    nothing more), and a traffic or cycles search never pays for it."""

    chain: GemmChain
    hardware: Accelerator
    tiles: dict[str, np.ndarray]
    shape: tuple[int, ...]
    fronts: dict[Objective, tuple[np.ndarray, ...]]  # (peak, the objective's key: 2 arrays, flat index)
    chimera_front: tuple[np.ndarray, ...]  # (MU, DV, MU, flat index)
    seconds: float
    chunk_nests: int = CHUNK_NESTS  # the energy passes evaluate this many nests at once, as the first pass did
    priced: dict[int, PricedPicks] = field(default_factory=dict, repr=False, compare=False)  # by SRAM bytes

    @property
    def evaluations(self) -> int:
        """Nests evaluated so far: the grid once for the fronts, and once more per priced SRAM size."""
        return int(math.prod(self.shape)) * (1 + len(self.priced))

    @property
    def least_peak_bytes(self) -> int:
        """The smallest peak SRAM of any nest of the grid (every front starts with it)."""
        return int(self.fronts[DEFAULT_OBJECTIVE][0][0])

    def nest(self, index: tuple[int, ...]) -> GemmChainNest:
        """The GemmChainNest at a grid index (1 way)."""
        o, *ts = index
        return GemmChainNest(self.chain, GEMM_ORDERS[o], {d: int(self.tiles[d][i]) for d, i in zip(_DIMS, ts)})

    def _nest_at(self, flat: int) -> GemmChainNest:
        return self.nest(tuple(int(x) for x in np.unravel_index(flat, self.shape)))

    def _read(self, front: tuple[np.ndarray, ...], cap: int) -> GemmChainNest | None:
        peak, *_, flat = front
        i = int(np.searchsorted(peak, cap, side="right")) - 1
        return None if i < 0 else self._nest_at(int(flat[i]))

    def best(self, sram_bytes: int, objective: Objective | str = DEFAULT_OBJECTIVE) -> GemmChainNest | None:
        """The best nest by `objective` whose peak fits `sram_bytes` (traffic: least traffic, ties estimated
        cycles, then the smaller peak; cycles: least estimated cycles, ties traffic, then peak; energy / edp: least
        energy in pJ / energy x estimated cycles, priced on the space's hardware at `sram_bytes`, ties per the
        objective's key, then peak; last tie-break: the first in the grid); None when none fits. ValueError for a
        size that is not a non-negative integer."""
        objective = objective_named(objective)
        if not is_int(sram_bytes, numpy=True) or sram_bytes < 0:
            raise ValueError(f"GemmChainSpace.best: sram_bytes must be an integer >= 0 (bytes), got {sram_bytes!r}")
        if not objective.needs_energy:
            return self._read(self.fronts[objective], sram_bytes)
        if sram_bytes < self.least_peak_bytes:  # nothing fits: no size to price
            return None
        flat = self.priced_at(int(sram_bytes)).flat_index(objective)
        return None if flat is None else self._nest_at(flat)

    def priced_at(self, sram_bytes: int) -> PricedPicks:
        """The energy objectives' picks at `sram_bytes` (bytes), from the cache or from one more pass over the
        grid (`_price_space`)."""
        if sram_bytes not in self.priced:
            self.priced[sram_bytes] = _price_space(self, sram_bytes)
        return self.priced[sram_bytes]

    def chimera_choice(self, sram_bytes: int) -> GemmChainNest | None:
        """The nest Chimera's model picks: least DV with MU <= sram_bytes (ties: the smaller MU, then the first in the
        grid), or None when no MU fits."""
        return self._read(self.chimera_front, sram_bytes)


def gemm_chain_space_size(chain: GemmChain, hardware: Accelerator) -> int:
    """Nests in the candidate grid of `evaluate_gemm_chain_space` (orders x m, l, k, n tiles), counted without
    building it."""
    return len(GEMM_ORDERS) * math.prod(len(v) for v in _candidates(chain, hardware).values())


def estimate_gemm_chain_space_work(chain: GemmChain, hardware: Accelerator,
                                   objective: Objective | str = DEFAULT_OBJECTIVE, n_capacities: int = 1) -> Any:
    """The work (a `search.WorkEstimate`) of `evaluate_gemm_chain_space` and of reading the best nest by `objective`
    at `n_capacities` SRAM sizes: one pass over every nest of the grid (counted) for the fronts, which serve every
    size, plus, when `objective` ranks by energy, one more pass per size (each size prices the SRAM differently:
    `GemmChainSpace.best`), at GEMM_CHAIN_EVALUATIONS_PER_SECOND / ENERGY_PASS_COST; so K sizes by energy cost
    1 + K passes."""
    from dsasim.architect.search.layer_search import WorkEstimate

    objective = objective_named(objective)
    check_int("n_capacities", n_capacities, 1)
    n = gemm_chain_space_size(chain, hardware)
    priced = n_capacities if objective.needs_energy else 0
    what = f"the fused space of {chain.name}" + (f" (and {priced:,} energy pass(es) by {objective.name})"
                                                 if priced else "")
    return WorkEstimate(what=what, evaluations=n * (1 + priced), traced_operations=0,
                        seconds=n * (1 + priced * ENERGY_PASS_COST) / GEMM_CHAIN_EVALUATIONS_PER_SECOND)


def _grid_chunks(sizes: list[int], chunk_nests: int) -> Any:
    """Index arrays (one per grid axis) of blocks of the grid with at most `chunk_nests` nests each (or one row
    of the last axis, if that alone is larger): the axes are split from the first, as far as needed, so that a
    large grid is never evaluated more than a chunk at a time."""
    j = 0  # the axis split into ranges; the axes before it are taken one index at a time, those after whole
    while j < len(sizes) - 1 and math.prod(sizes[j + 1:]) > chunk_nests:
        j += 1
    step = max(1, chunk_nests // math.prod(sizes[j + 1:]))
    after = [np.arange(n) for n in sizes[j + 1:]]
    for prefix in np.ndindex(*sizes[:j]):
        for a0 in range(0, sizes[j], step):
            yield [np.array([i]) for i in prefix] + [np.arange(a0, min(a0 + step, sizes[j]))] + after


@dataclass(frozen=True)
class _Chunk:
    """One block of the grid, evaluated: its nests' flat grid indices and their closed-form figures (arrays that
    broadcast to the block's shape `sub`)."""

    flat: np.ndarray
    figures: dict[str, Any]
    sub: tuple[int, ...]

    def full(self, value: Any) -> np.ndarray:
        """A figure's array, one entry per nest of the block (in `flat`'s order)."""
        return np.broadcast_to(value, self.sub).reshape(-1)

    def figure(self, name: str) -> np.ndarray:
        return self.full(self.figures[name])

    def traffic_bytes(self) -> np.ndarray:
        """DDR bytes loaded + stored per nest."""
        return self.figure("loaded_bytes") + self.figure("stored_bytes")

    def estimated_cycles(self) -> np.ndarray:
        """max(DMA, TensorCore + vector) cycles per nest (`GemmChainAnalysis.estimated_cycles`)."""
        return overlapped_cycles(self.figure("dma_cycles"),
                                 self.figure("tensorcore_cycles") + self.figure("vector_cycles"))


def _chunks(chain: GemmChain, hw: Accelerator, cand: dict[str, np.ndarray], shape: tuple[int, ...],
            chunk_nests: int) -> Iterator[_Chunk]:
    """The grid (`shape`: orders x the candidates of m, l, k, n) evaluated on `hw` by the closed form, at most
    `chunk_nests` nests at a time (`_grid_chunks`), 1 way."""
    sizes = list(shape[1:])
    one_way = np.ones((), np.int64)
    for o, order in enumerate(GEMM_ORDERS):
        for idx in _grid_chunks(sizes, chunk_nests):
            grid = {d: cand[d][idx[i]].reshape([-1 if j == i else 1 for j in range(4)]) for i, d in enumerate(_DIMS)}
            f = _closed_form(chain, hw, order, grid, one_way)
            at = np.broadcast_arrays(o, *np.ix_(*idx))
            flat = np.ravel_multi_index(tuple(at), shape).reshape(-1).astype(np.int64)
            yield _Chunk(flat, f, tuple(len(i) for i in idx))


def evaluate_gemm_chain_space(chain: GemmChain, hardware: Accelerator,
                              chunk_nests: int = CHUNK_NESTS) -> GemmChainSpace:
    """Every nest of the candidate grid evaluated with the closed form of `analyze_gemm_chain` (numpy), reduced to
    the fronts of `GemmChainSpace`. Memory is bounded by design: at most `chunk_nests` nests are evaluated at once
    (the grid is split along m, then l, then k as far as needed) and the fronts kept are merged every MERGE_EVERY
    chunks. Callers estimate the work first (`estimate_gemm_chain_space_work`): the grid grows as the fourth power
    of the tile candidates. Energy objectives are priced later, per SRAM size, on request (`GemmChainSpace.best`)."""
    check_int("chunk_nests", chunk_nests, 1)
    _check_exact(chain, hardware)
    start = time.perf_counter()
    cand = _candidates(chain, hardware)
    shape = (len(GEMM_ORDERS), *(len(cand[d]) for d in _DIMS))
    # the fronts over peak of the objectives that rank without energy (energy is priced per size: `best`)
    parts: dict[Objective, list[tuple[np.ndarray, ...]]] = {o: [] for o in OBJECTIVES.values() if not o.needs_energy}
    chimera: list[tuple[np.ndarray, ...]] = []
    for chunk in _chunks(chain, hardware, cand, shape, chunk_nests):
        flat = chunk.flat
        traffic, cycles = chunk.traffic_bytes(), chunk.estimated_cycles()
        peak = chunk.figure("peak_sram_bytes")
        by_peak = np.argsort(peak)
        for objective, chunks in parts.items():
            k1, k2 = objective.key(traffic=traffic, cycles=cycles)
            keep = _front_candidates(peak, k1, by_peak)
            chunks.append(_exact_front(peak[keep], k1[keep], k2[keep], flat[keep]))
        mu, dv = chunk.figure("chimera_mu_bytes"), chunk.figure("chimera_dv_bytes")
        keep = _front_candidates(mu, dv, np.argsort(mu))
        chimera.append(_exact_front(mu[keep], dv[keep], mu[keep], flat[keep]))
        if len(chimera) >= MERGE_EVERY:
            parts = {o: [_merge_fronts(chunks)] for o, chunks in parts.items()}
            chimera = [_merge_fronts(chimera)]
    fronts = {o: _merge_fronts(chunks) for o, chunks in parts.items()}
    return GemmChainSpace(chain, hardware, cand, shape, fronts, _merge_fronts(chimera), time.perf_counter() - start,
                          chunk_nests)


def _chunk_energy_pj(chunk: _Chunk, chain: GemmChain, hw: Accelerator, rows: np.ndarray,
                     cycles: np.ndarray) -> np.ndarray:
    """The energy (pJ) of the block's nests `rows` on `hw` (its SRAM size sets the SRAM's energy per access and
    leakage) over `cycles`: per-level read and write bytes, padded MACs and the ReLU's lane operations, priced by
    `dsasim.energy.report.energy_pj_of` (the sum `energy_report` makes of `analyze_gemm_chain`'s access counts)."""
    levels = chunk.figures["level_bytes"]
    read = {level: chunk.full(r)[rows] for level, (r, _) in levels.items()}
    write = {level: chunk.full(w)[rows] for level, (_, w) in levels.items()}
    padded = padded_macs(hw, chunk.figure("tensorcore_cycles")[rows])
    lane_ops = chain.m * chain.l if chain.relu_between else 0  # the ReLU: one lane operation per element of C
    return energy_pj_of(hw, read, write, padded, lane_ops, cycles)


def _lexicographic_first(keys: tuple[np.ndarray, ...]) -> int:
    """The position of the least entry by `keys` (compared in order; equal arrays' length)."""
    at = np.arange(len(keys[0]))
    for k in keys:
        values = k[at]
        at = at[values == values.min()]
    return int(at[0])


def _price_space(space: GemmChainSpace, sram_bytes: int) -> PricedPicks:
    """One pass over the grid on the space's hardware at `sram_bytes` (`layer_search.with_capacity`): per energy
    objective, the nest whose peak fits with the least key (`Objective.key`: energy or edp first, its ties, then the
    peak), then the least flat index (the first in the grid), as the fronts break ties."""
    from dsasim.architect.search.layer_search import with_capacity

    start = time.perf_counter()
    _, hw = with_capacity(space.hardware, sram_bytes)
    ranked = [o for o in OBJECTIVES.values() if o.needs_energy]
    best: dict[Objective, tuple | None] = dict.fromkeys(ranked)
    for chunk in _chunks(space.chain, hw, space.tiles, space.shape, space.chunk_nests):
        peak = chunk.figure("peak_sram_bytes")
        rows = np.flatnonzero(peak <= sram_bytes)
        if not len(rows):
            continue
        traffic, cycles = chunk.traffic_bytes()[rows], chunk.estimated_cycles()[rows]
        energy = _chunk_energy_pj(chunk, space.chain, hw, rows, cycles)
        for o in ranked:
            keys = (*o.key(traffic=traffic, cycles=cycles, peak=peak[rows], energy=energy), chunk.flat[rows])
            i = _lexicographic_first(keys)
            pick = tuple(k[i].item() for k in keys)
            if best[o] is None or pick < best[o]:
                best[o] = pick
    return PricedPicks(sram_bytes, best, time.perf_counter() - start)


def _merge_fronts(chunks: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """One front from the fronts of several chunks (the exact front of their union)."""
    peak, k1, k2, flat = (np.concatenate([c[i] for c in chunks]) for i in range(4))
    return _exact_front(peak, k1, k2, flat)
