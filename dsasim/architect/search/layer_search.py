"""Schedule search: enumerate LoopNests, evaluate them with the analytic model in numpy, keep the best.

The space. A LoopNest's counts depend on its loop order only through, for every tensor, the set of loops above
its staging point (`dsasim.architect.model.analytic`), and those sets are nested (they are prefixes of one order). The search
therefore enumerates, for every subset of tiled dimensions (a tiled dimension has more than one trip), every
chain of above-sets and every combination of tile sizes:

* tile sizes per dimension: balanced tiles ceil(D/T) (for a trip count T they are the smallest tile, so they
  dominate), the TensorCore-aligned ones (multiples of 16 for the input-channel dimension, of 24 for the output
  one, ragged last tiles allowed), and the full extent (one trip);
* staging: a permutation of the tensors (which is staged outermost) and for each tiled dimension the segment it
  sits in (above all stagings, between the first and second, between the second and third). A tensor is staged
  just inside a loop that indexes it, or at the top: staging it below a loop that does not index it only
  re-fetches the same box (a dominated choice), so the segment right above a tensor holds only its dimensions.
  Untiled dimensions sit below every staging point (their loop runs once).
* buffering: 1 way when ranking by traffic (buffering never lowers traffic); for the cycles objective every
  tensor with several scope instances also tries 2 ways, on the candidates whose cycle estimate could still
  win.

A first pass enumerates a coarse subset of the tile sizes; a refinement pass then moves the tiles of the best
candidates (single dimensions over every candidate size, pairs of dimensions over nearby sizes) until nothing
improves. Evaluation is vectorised: one numpy expression per quantity over arrays of candidates, table lookups
for the window sums (`analytic.group_stats` precomputed per pair of tile sizes). `search(...)` returns the best
schedule by traffic and by estimated cycles under the SRAM capacity, the Pareto front (peak SRAM vs traffic), and,
given a `runner` (e.g. `dsasim.kernels.loopnest_kernel.run_loopnest`), re-runs the top few through the trace and the
timing simulator to confirm them.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from dsasim.architect.model.analytic import (Analysis, Batch, Evaluation, Evaluator, analyze, fits_sram, flat, reconcile,
                                       tensorcore_blocks)
from dsasim.energy.report import energy_pj_of, energy_report
from dsasim.hardware import Accelerator
from dsasim.traced.schedule import Status
from dsasim.util import ceil_div
from dsasim.architect.nests.loopnest import LoopNest, Problem, tile_count
from dsasim.architect.model.lower_bounds import Bound, lower_bound
from dsasim.architect.search.objective import CYCLES, DEFAULT_OBJECTIVE, OBJECTIVES, TRAFFIC, Objective, objective_named
from dsasim.one_level import require_one_level

__all__ = ["Space", "chain_structures", "Candidate", "SearchResult", "search", "search_front", "evaluate_nests",
           "tile_candidates", "SearchFront", "LayerTooLargeError", "count_bound_bytes", "EXACT_COUNT_LIMIT",
           "WorkTooLargeError", "WorkEstimate", "estimate_search_work", "estimate_trace_work", "check_work",
           "WORK_LIMIT_SECONDS", "SECONDS_PER_TRACED_SCHEDULE"]

# Every count the vectorised evaluator forms is an int64, and the fronts rank traffic as float64: both are exact
# for integers up to 2**53. A layer whose counts could exceed it is refused before any evaluation.
EXACT_COUNT_LIMIT = 2 ** 53


class LayerTooLargeError(ValueError):
    """The layer's counts can exceed what the vectorised search evaluates exactly (EXACT_COUNT_LIMIT)."""


def count_bound_bytes(problem: Problem, word_bytes: int) -> int:
    """An upper bound (bytes) on every count the search evaluates: (tensors + 1) x word_bytes x prod(extents).

    Why it holds: an input is loaded at most once per iteration of the loops that do not index it, and its
    box is at most the product of the extents of the loops that do (a window axis's tight rows over an
    (output tile, tap tile) pair are at most o_len x t_len, so they sum to at most O x K); so each input moves
    at most word x prod(extents) bytes. The output is stored R times and loaded R - 1 times, R <= the product of
    the reduction extents: 2 x word x prod(extents) in all. DMA counts, iterations and TensorCore cycles are at
    most prod(extents), peak SRAM at most ways x the tensors' bytes.
    """
    return (len(problem.tensors) + 1) * word_bytes * problem.macs


def _check_exact(problem: Problem, word_bytes: int) -> None:
    bound = count_bound_bytes(problem, word_bytes)
    if bound > EXACT_COUNT_LIMIT:
        raise LayerTooLargeError(
            f"layer too large for exact counts: {problem.spec()} ({problem.macs:.3g} loop iterations, "
            f"{word_bytes}-byte words) can move up to {len(problem.tensors) + 1} x {word_bytes} x {problem.macs:,} "
            f"= {bound:.3g} B, above 2**53 = {EXACT_COUNT_LIMIT:,} B, the largest count the vectorised search "
            f"evaluates exactly; split the layer (e.g. search one batch or a slice of its rows), or count a given "
            f"LoopNest exactly with dsasim.architect.model.analytic.analyze (Python integers)")

CHUNK = 1 << 18
# first-pass trip counts (the balanced tile for each); the refinement pass visits every balanced/aligned size
COARSE_TRIPS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
COARSE_ALIGNED = (1, 4, 16)
REFINE_SEEDS = 8  # staircase points refined under each capacity
TOP_STRUCTURES = 64  # best candidates of distinct structures kept (and refined), shared among the capacities
PAIR_REACH = 2  # refinement moves two dims together by up to this many candidate sizes


# ------------------------------------------------------------------------------------------- work estimates
# Work far beyond the usual (seconds) is refused unless forced: an estimate above WORK_LIMIT_SECONDS raises
# WorkTooLargeError before the work starts. The rates are conservative figures of this project's 2-core machine
# (docs/reference/performance.md): the estimate is an order of magnitude, not a promise.
WORK_LIMIT_SECONDS = 600.0
EVALUATIONS_PER_SECOND = 1.5e6  # end to end, first pass and refinement (measured 1.5-2.5 M/s)
SECONDS_PER_CAPACITY = 0.02  # per SRAM size: refinement seeds and bookkeeping (measured ~0.01 s)
TRACED_OPERATIONS_PER_SECOND = 2.0e4  # memory-model trace plus timing simulation, per operation
SECONDS_PER_TRACED_SCHEDULE = 0.2  # fixed cost of tracing and timing one schedule (a 20-point sweep: ~4 s)


class WorkTooLargeError(ValueError):
    """The estimated work is far beyond the usual; `estimate` says how much. Rerun with force=True."""

    def __init__(self, message: str, estimate: "WorkEstimate") -> None:
        super().__init__(message)
        self.estimate = estimate


@dataclass(frozen=True)
class WorkEstimate:
    """An estimate of a search's or sweep's work: model evaluations, traced operations, seconds."""

    what: str
    evaluations: int
    traced_operations: int
    seconds: float

    def __post_init__(self) -> None:
        if self.evaluations < 0 or self.traced_operations < 0 or not self.seconds >= 0:
            raise ValueError(f"WorkEstimate: counts and seconds must be >= 0, got {self}")

    def __add__(self, other: "WorkEstimate") -> "WorkEstimate":
        return WorkEstimate(what=f"{self.what}, {other.what}", evaluations=self.evaluations + other.evaluations,
                            traced_operations=self.traced_operations + other.traced_operations,
                            seconds=self.seconds + other.seconds)

    def describe(self) -> str:
        """One line: what, how many evaluations / traced operations, and about how long."""
        parts = []
        if self.evaluations:
            parts.append(f"{self.evaluations:,} model evaluations")
        if self.traced_operations:
            parts.append(f"{self.traced_operations:,} traced operations")
        return f"{self.what}: {' and '.join(parts) or 'no work'}, about {_duration(self.seconds)}"


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} minutes"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.1f} hours"
    return f"{seconds / 86400:.1f} days"


def check_work(estimate: WorkEstimate, force: bool = False, warn: Callable[[str], None] | None = None,
               smaller: str = "fewer SRAM sizes, a larger SRAM (larger tiles), or no tracing (search --confirm 0)"
               ) -> None:
    """Raise WorkTooLargeError when `estimate` exceeds WORK_LIMIT_SECONDS, unless `force` (then call `warn`);
    `smaller` says how to make the work smaller. The one estimate-and-refuse check of every path that searches."""
    if estimate.seconds <= WORK_LIMIT_SECONDS:
        return
    text = (f"estimated work far beyond the usual: {estimate.describe()} (the limit without force is "
            f"{_duration(WORK_LIMIT_SECONDS)})")
    if not force:
        raise WorkTooLargeError(f"{text}; run it anyway with --force (force=True), or make it smaller: {smaller}",
                                estimate)
    if warn is not None:
        warn(f"{text}; running it anyway (forced)")


def estimate_search_work(problem: Problem, hardware: Accelerator, n_capacities: int = 1,
                         exhaustive: bool = False, slide: bool = True) -> WorkEstimate:
    """The enumeration's work for `n_capacities` SRAM sizes: first-pass candidates (counted exactly, nothing
    evaluated) plus a per-size share, in seconds at EVALUATIONS_PER_SECOND and SECONDS_PER_CAPACITY."""
    if n_capacities < 1:
        raise ValueError(f"estimate_search_work: n_capacities must be >= 1, got {n_capacities}")
    space = Space(problem, hardware, exhaustive=exhaustive, slide=slide)
    n = first_pass_size(space)
    return WorkEstimate(what=f"search of {problem.name} at {n_capacities:,} SRAM size(s)", evaluations=n,
                        traced_operations=0, seconds=n / EVALUATIONS_PER_SECOND + n_capacities * SECONDS_PER_CAPACITY)


def estimate_trace_work(nests: Sequence[LoopNest]) -> WorkEstimate:
    """The work of tracing (and timing) `nests`: per nest, its tile computes plus an access of every tensor in
    each, and the scope entries, at TRACED_OPERATIONS_PER_SECOND, plus SECONDS_PER_TRACED_SCHEDULE."""
    ops = 0
    for nest in nests:
        it = nest.iterations()
        scopes = sum(math.prod(nest.trips(d) for d in nest.above(t)) for t in nest.problem.tensor_names)
        ops += it * (1 + len(nest.problem.tensors)) + 2 * scopes
    return WorkEstimate(what=f"tracing {len(nests)} schedule(s)", evaluations=0, traced_operations=ops,
                        seconds=ops / TRACED_OPERATIONS_PER_SECOND + len(nests) * SECONDS_PER_TRACED_SCHEDULE)


# ------------------------------------------------------------------------------------------ tile candidates
def _balanced(extent: int) -> list[int]:
    """ceil(extent / T) for every trip count T: the smallest tile giving T trips."""
    vals, t = set(), 1
    while t <= extent:
        trips = tile_count(extent, t)
        vals.add(ceil_div(extent, trips))
        t = ceil_div(extent, trips - 1) if trips > 1 else extent + 1  # the smallest tile with fewer trips
    return sorted(vals)


def tile_candidates(extent: int, align: int = 0, coarse: bool = False, exhaustive: bool = False) -> list[int]:
    """Tile sizes to try for a dimension: full extent first, then balanced and aligned sizes, descending.

    coarse: the balanced tiles for the trip counts COARSE_TRIPS and COARSE_ALIGNED TensorCore blocks (the first
    pass); exhaustive: every size 1..extent.
    """
    if exhaustive:
        return [extent] + list(range(extent - 1, 0, -1))
    if coarse:
        vals = {ceil_div(extent, t) for t in COARSE_TRIPS if t <= extent}
        vals.add(1)  # the smallest footprint: whatever fits any SRAM is found by the first pass alone
        if align > 1:
            vals |= {align * k for k in COARSE_ALIGNED if align * k < extent}
    else:
        vals = set(_balanced(extent))
        if align > 1:
            vals |= {align * ceil_div(v, align) for v in list(vals) if align * ceil_div(v, align) < extent}
            vals |= {align * k for k in (1, 2, 4, 8, 16, 32, 64) if align * k < extent}
    return [extent] + sorted((v for v in vals if 1 <= v < extent), reverse=True)


# ----------------------------------------------------------------------------------------------- the space
def chain_structures(indexing: Sequence[Sequence[int]], nd: int, tiled: Sequence[int],
                     exhaustive: bool = False) -> np.ndarray:
    """Unique chains of above-sets over the `tiled` dims: bool array (n, tensors, nd); `indexing[x]` lists the
    dims that index tensor x.

    Each tiled dim sits above the staging of some tensors: for a permutation pi of the tensors (outermost staged
    first), level l puts it above pi[l], pi[l+1], ... . Pruned (not exhaustive): a dim at level l must index
    pi[l] (otherwise pi[l] could be staged above it, re-fetching less with the same box)."""
    nt = len(indexing)
    seen = {}
    tensor_dims = [set(ix) for ix in indexing]
    for pi in itertools.permutations(range(nt)):
        opts = [[lv for lv in range(nt) if exhaustive or d in tensor_dims[pi[lv]]] for d in tiled]
        for levels in itertools.product(*opts):
            mat = np.zeros((nt, nd), bool)
            for k, x in enumerate(pi):
                for d, lv in zip(tiled, levels):
                    if lv <= k:
                        mat[x, d] = True
            seen.setdefault(mat.tobytes(), mat)
    return np.stack(list(seen.values())) if seen else np.zeros((1, nt, nd), bool)


class Space(Evaluator):
    """A problem's search tables: candidate tile sizes per dimension (`tile_candidates`), the first pass's
    subset of them, and the model's tables over them (`analytic.Evaluator`).

    slide=False leaves sliding-window reuse out (every box reloaded), to compare.

    A candidate is also kept as a row of int64: [tile index per dim..., above bits per tensor (bit d: loop d
    above its staging)..., ways per tensor..., slide per tensor (the window group it slides along, -1: none)...]
    (`rows`, `batch`, `nest`, `row`)."""

    def __init__(self, problem: Problem, hardware: Accelerator, exhaustive: bool = False, slide: bool = True) -> None:
        _check_exact(problem, hardware.word_bytes)  # before any table is built or candidate evaluated
        self.exhaustive = exhaustive
        self._structs: dict[tuple, np.ndarray] = {}
        align = tensorcore_blocks(problem, hardware)
        fine_lists, self.first_pass_idx = [], []
        for d in problem.dims:
            fine = tile_candidates(problem.extents[d], align.get(d, 0), exhaustive=exhaustive)
            coarse = set(fine if exhaustive else tile_candidates(problem.extents[d], align.get(d, 0), coarse=True))
            # the first pass's tiles of a tiled dim: the coarse ones but the full extent (index 0)
            self.first_pass_idx.append(np.array([i for i, v in enumerate(fine) if v in coarse and i > 0], np.int64))
            fine_lists.append(fine)
        super().__init__(problem, hardware, fine_lists, strided_boxes=True)
        self.width = self.nd + 3 * self.nt
        # per input tensor, the window groups it may slide along, as (group, its output-position dim index)
        self.slidable = [[] if t.output or not slide else [(v, self.groups[v].o) for v in self.window_axes[x]]
                         for x, t in enumerate(self.tensors)]

    @functools.cached_property
    def _halve_double(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Per dim and candidate position, the position of the candidate nearest half / twice its size."""
        vals = [f.astype(np.float64) for f in self.fine]
        return ([np.abs(v[None, :] - v[:, None] / 2).argmin(axis=1) for v in vals],
                [np.abs(v[None, :] - v[:, None] * 2).argmin(axis=1) for v in vals])

    def moves(self, d: int, pos: np.ndarray) -> np.ndarray:
        """Refinement moves of dim d from candidate positions `pos`: +-1, +-2 positions, halve, double."""
        n = len(self.fine[d])
        half, double = self._halve_double
        steps = [np.clip(pos + k, 0, n - 1) for k in (-PAIR_REACH, -1, 0, 1, PAIR_REACH)]
        return np.stack(steps + [half[d][pos], double[d][pos]], axis=1)

    def structures(self, tiled: Sequence[int]) -> np.ndarray:
        """`chain_structures` of this problem's tensors over the tiled dims, memoised."""
        key = tuple(tiled)
        if key not in self._structs:
            self._structs[key] = chain_structures(self.idx, self.nd, tiled, self.exhaustive)
        return self._structs[key]

    # -- candidate rows ---------------------------------------------------------------------------------------
    def rows(self, b: Batch, sel: np.ndarray) -> np.ndarray:
        """The rows of the selected (flat-indexed) candidates of a batch."""
        n = len(sel)
        sub = b.select(sel)
        rows = np.zeros((n, self.width), np.int64)
        for d in range(self.nd):
            rows[:, d] = sub.tidx[d]
        for x in range(self.nt):
            for d in range(self.nd):
                rows[:, self.nd + x] |= np.broadcast_to(np.asarray(sub.above[x][d], bool), (n,)).astype(np.int64) << d
            rows[:, self.nd + self.nt + x] = sub.ways[x]
            rows[:, self.nd + 2 * self.nt + x] = -1 if sub.slide is None else sub.slide[x]
        return rows

    def batch(self, rows: np.ndarray) -> Batch:
        """Rows as a 1-d batch."""
        bits = rows[:, self.nd:self.nd + self.nt]
        return Batch(tidx=[rows[:, d].copy() for d in range(self.nd)],
                     above=[[((bits[:, x] >> d) & 1).astype(bool) for d in range(self.nd)] for x in range(self.nt)],
                     ways=[rows[:, self.nd + self.nt + x].copy() for x in range(self.nt)], shape=(len(rows),),
                     slide=[rows[:, self.nd + 2 * self.nt + x].copy() for x in range(self.nt)])

    def valid_slides(self, rows: np.ndarray) -> np.ndarray:
        """The rows' slide columns with every slide the nest cannot make set to -1: a tensor slides along group v
        only if v's output loop has several trips, is above it, and is above no tensor staged strictly outside
        it (so that `nest` can put that loop innermost above it)."""
        tiled = functools.reduce(np.bitwise_or, ((rows[:, d] != 0).astype(np.int64) << d for d in range(self.nd)))
        bits = [rows[:, self.nd + x] & tiled for x in range(self.nt)]  # above-sets of the loops with several trips
        slide = rows[:, self.nd + 2 * self.nt:].copy()
        for x in range(self.nt):
            ok = np.zeros(len(rows), bool)
            for v, o in self.slidable[x]:
                outside = np.zeros(len(rows), bool)  # o above a tensor whose above-set is a strict subset of x's
                for y in range(self.nt):
                    strict = (bits[y] & ~bits[x]) == 0
                    strict &= bits[y] != bits[x]
                    outside |= strict & ((bits[y] >> o) & 1).astype(bool)
                ok |= (slide[:, x] == v) & ((bits[x] >> o) & 1).astype(bool) & ~outside
            slide[:, x] = np.where(ok, slide[:, x], -1)
        return slide

    def nest(self, row: np.ndarray) -> LoopNest:
        """The LoopNest of one candidate row (its above-sets must form a chain)."""
        tiles = {d: int(self.fine[i][row[i]]) for i, d in enumerate(self.dims)}
        sets = [frozenset(d for i, d in enumerate(self.dims) if (int(row[self.nd + x]) >> i) & 1
                          and tile_count(self.problem.extents[d], tiles[d]) > 1) for x in range(self.nt)]
        slide = {x: self.dims[self.groups[v].o] for x in range(self.nt)
                 if (v := int(row[self.nd + 2 * self.nt + x])) >= 0}
        order: list[str] = []
        stage = {}
        for x in sorted(range(self.nt), key=lambda x: (len(sets[x]), x)):
            if not set(order) <= sets[x]:
                raise ValueError("candidate above-sets do not form a chain")
            segment = [d for d in self.dims if d in sets[x] and d not in order]
            loops = [slide[y] for y in slide if sets[y] == sets[x]]  # a sliding tensor's loop innermost above it
            order += sorted(segment, key=lambda d: d in loops)
            stage[self.tensors[x].name] = len(order)
        order += [d for d in self.dims if d not in order]
        return LoopNest(self.problem, order, tiles, stage,
                        {t.name: int(row[self.nd + self.nt + x]) for x, t in enumerate(self.tensors)},
                        slide=[self.tensors[x].name for x in slide])

    def row(self, nest: LoopNest) -> np.ndarray:
        """The row of a nest whose tiles are candidates."""
        row = np.zeros(self.width, np.int64)
        for i, d in enumerate(self.dims):
            hits = np.nonzero(self.fine[i] == nest.tile(d))[0]
            if len(hits) == 0:
                raise ValueError(f"tile {nest.tile(d)} of {d} is not a candidate")
            row[i] = hits[0]
        for x, t in enumerate(self.tensors):
            row[self.nd + x] = sum(1 << self.dim_index[d] for d in nest.above(t.name))
            row[self.nd + 2 * self.nt + x] = self.slide_group(nest.slide_loop(t.name))
        row[self.nd + self.nt:self.nd + 2 * self.nt] = nest.ways
        return row


# -------------------------------------------------------------------------------------------- bookkeeping
class _Front:
    """Staircase: for increasing peak, strictly improving (k1, k2) keys; payload rows kept alongside."""

    def __init__(self, width: int) -> None:
        self.peak = np.zeros(0, np.int64)
        self.k1 = np.zeros(0, np.float64)
        self.k2 = np.zeros(0, np.float64)
        self.rows = np.zeros((0, width), np.int64)

    def filter(self, peak: np.ndarray, k1: np.ndarray, k2: np.ndarray) -> np.ndarray:
        """Mask of candidates that could join (beat the current best at their peak)."""
        if len(self.peak) == 0:
            return np.ones(len(peak), bool)
        pos = np.searchsorted(self.peak, peak, side="right") - 1  # the best point at or below each peak
        b1, b2 = self.k1[np.maximum(pos, 0)], self.k2[np.maximum(pos, 0)]
        return (pos < 0) | (k1 < b1) | ((k1 == b1) & (k2 < b2))

    def merge(self, peak: np.ndarray, k1: np.ndarray, k2: np.ndarray, rows: np.ndarray) -> None:
        peak = np.concatenate([self.peak, peak])
        k1 = np.concatenate([self.k1, k1])
        k2 = np.concatenate([self.k2, k2])
        rows = np.concatenate([self.rows, rows])
        order = np.lexsort((k2, k1, peak))
        rank = np.empty(len(order), np.int64)
        rank[np.lexsort((k2, k1))] = np.arange(len(order))
        r = rank[order]
        best = np.minimum.accumulate(r)
        keep = np.ones(len(r), bool)
        keep[1:] = r[1:] < best[:-1]
        sel = order[keep]
        self.peak, self.k1, self.k2, self.rows = peak[sel], k1[sel], k2[sel], rows[sel]

    def best_at(self, cap: int) -> int | None:
        """Index of the best point that fits in cap (`fits_sram`: peak <= cap)."""
        # peaks are sorted: side="right" counts the points with peak <= cap, the fits_sram rule
        pos = int(np.searchsorted(self.peak, cap, side="right")) - 1
        return pos if pos >= 0 else None


class _TopK:
    """The k best candidates by (k1, k2) under a capacity, at most one per structure (set of above-sets), so
    that they are diverse seeds for the refinement and for confirmation."""

    def __init__(self, k: int, space: Space) -> None:
        self.k = k
        self.struct_cols = slice(space.nd, space.nd + space.nt)
        self.nt = space.nt
        self.slide_cols = slice(space.nd + 2 * space.nt, space.nd + 3 * space.nt)
        self.nd = space.nd
        self.k1 = np.zeros(0, np.float64)
        self.k2 = np.zeros(0, np.float64)
        self.rows = np.zeros((0, space.width), np.int64)

    def threshold(self) -> float:
        return float(self.k1[-1]) if len(self.k1) >= self.k else math.inf

    def merge(self, k1: np.ndarray, k2: np.ndarray, rows: np.ndarray) -> None:
        k1 = np.concatenate([self.k1, k1])
        k2 = np.concatenate([self.k2, k2])
        rows = np.concatenate([self.rows, rows])
        order = np.lexsort((k2, k1))
        bits = rows[order, self.struct_cols]  # tensor j's above bits shifted to bits j*nd.. (disjoint): one key
        key = (bits << (np.arange(bits.shape[1]) * self.nd)).sum(axis=1)
        slides = rows[order, self.slide_cols] + 1  # and its slide choice (0..groups) past them, 4 bits each
        key += (slides << (self.nt * self.nd + 4 * np.arange(self.nt))).sum(axis=1)
        _, first = np.unique(key, return_index=True)
        sel = order[np.sort(first)[:self.k]]
        self.k1, self.k2, self.rows = k1[sel], k2[sel], rows[sel]


# ----------------------------------------------------------------------------------------------- results
@dataclass(frozen=True)
class Candidate:
    """A schedule found by the search with its model figures (and simulated cycles once confirmed)."""

    nest: LoopNest
    loaded_bytes: int
    stored_bytes: int
    rmw_bytes: int
    peak_sram_bytes: int
    tensorcore_cycles: int
    estimated_cycles: int
    macs: int  # useful MACs (the TensorCore's padded MACs are tensorcore_cycles x its 16 x 24 lanes)
    simulated_cycles: int | None = None
    traced: bool = False  # re-run through the generic kernel and found equal to the model

    @property
    def traffic_bytes(self) -> int:
        return self.loaded_bytes + self.stored_bytes

    def tensorcore_utilization(self, hardware: Accelerator) -> float:
        """Useful MACs / padded MACs (0..1): see the module function `tensorcore_utilization`."""
        return tensorcore_utilization(self.macs, self.tensorcore_cycles, hardware)

    @property
    def cycles(self) -> int:
        """Simulated cycles when confirmed, else the estimate."""
        return self.simulated_cycles if self.simulated_cycles is not None else self.estimated_cycles

    @staticmethod
    def of(analysis: Analysis) -> "Candidate":
        return Candidate(nest=analysis.nest, loaded_bytes=analysis.loaded_bytes,
                         stored_bytes=analysis.stored_bytes, rmw_bytes=analysis.rmw_bytes,
                         peak_sram_bytes=analysis.peak_sram_bytes, tensorcore_cycles=analysis.tensorcore_cycles,
                         estimated_cycles=analysis.estimated_cycles, macs=analysis.macs)


def tensorcore_utilization(macs: int, tensorcore_cycles: int, hardware: Accelerator) -> float:
    """Useful MACs / padded MACs (0..1): the share of the TensorCore's MAC lanes doing useful work while it
    computes; the rest is the padding waste of partial 16 x 24 blocks (a depthwise conv: 1 / (16 x 24))."""
    padded = tensorcore_cycles * hardware.tensorcore_in_channels * hardware.tensorcore_out_channels
    return macs / padded if padded else 0.0


@dataclass
class SearchResult:
    """The outcome of `search`."""

    problem: Problem
    hardware: Accelerator
    sram_bytes: int
    objective: Objective
    best_by: dict[Objective, Candidate | None]  # per objective, its best candidate (cycles: simulated if confirmed)
    pareto: list[Candidate]  # peak SRAM vs traffic, increasing peak, decreasing traffic (peak <= sram_bytes)
    confirmed: list[Candidate]  # the top few re-run through the trace (and simulated when possible)
    evaluations: int
    seconds: float
    bound: Bound
    cycles_source: str = "estimate"  # "simulated" when the timing simulator confirmed best_cycles

    @property
    def best(self) -> Candidate | None:
        """The best candidate by the objective."""
        return self.best_by[self.objective]

    @property
    def best_traffic(self) -> Candidate | None:
        """The best candidate by traffic (ties: estimated cycles), with the buffering of the best estimated cycles."""
        return self.best_by[TRAFFIC]

    @property
    def best_cycles(self) -> Candidate | None:
        """The best candidate by cycles (ties: traffic): simulated when the top ones were confirmed, else estimated."""
        return self.best_by[CYCLES]

    @property
    def evaluations_per_second(self) -> float:
        return self.evaluations / self.seconds if self.seconds > 0 else float("inf")


# --------------------------------------------------------------------------------------------- enumeration
def _first_pass(space: Space) -> Iterator[tuple[tuple[int, ...], np.ndarray, list[np.ndarray]]]:
    """For every set of tiled dims (a tiled dim has several candidate tiles): the structures and, per tiled dim,
    its first-pass tile indices."""
    free = [d for d in range(space.nd) if len(space.fine[d]) > 1]
    for r in range(len(free) + 1):
        for tiled in itertools.combinations(free, r):
            yield tiled, space.structures(tiled), [space.first_pass_idx[d] for d in tiled]


def first_pass_size(space: Space) -> int:
    """Candidates of the first pass (`_batches`), counted without building them."""
    return sum((len(structs) + sum(int(ok.sum()) for _, ok in _slide_variants(space, tiled, structs)))
               * math.prod(len(x) for x in lists) for tiled, structs, lists in _first_pass(space))


def _batches(space: Space) -> Iterator[Batch]:
    """The first pass: for every set of tiled dims, structures x tile products (2-d broadcasting)."""
    for tiled, structs, lists in _first_pass(space):
        if any(len(lst) == 0 for lst in lists):
            continue
        prods = np.stack([g.ravel() for g in np.meshgrid(*lists, indexing="ij")], axis=1) if tiled else \
            np.zeros((1, 0), np.int64)
        above: list = [[False] * space.nd for _ in range(space.nt)]
        for x in range(space.nt):
            for d in tiled:
                col = structs[:, x, d]
                above[x][d] = True if col.all() else (col[:, None].copy() if col.any() else False)
        yield from _product_batches(space, tiled, structs, above, prods, None)
        for slide, ok in _slide_variants(space, tiled, structs):
            sub_above = [[a[ok] if isinstance(a, np.ndarray) else a for a in row] for row in above]
            yield from _product_batches(space, tiled, structs[ok], sub_above, prods, slide)


def _slide_variants(space: Space, tiled: tuple[int, ...], structs: np.ndarray) -> Iterator[tuple[list[int], np.ndarray]]:
    """Each tensor sliding along each of its window groups: (the batch's slide list, the structures that allow it:
    the group's output loop is tiled, above the tensor, and above no tensor staged strictly outside it)."""
    for x in range(space.nt):
        for v, o in space.slidable[x]:
            if o not in tiled:
                continue
            ok = structs[:, x, o].copy()
            for y in range(space.nt):
                inside = ~np.any(structs[:, y] & ~structs[:, x], axis=1)  # y's above-set within x's
                ok &= ~(inside & np.any(structs[:, x] != structs[:, y], axis=1) & structs[:, y, o])
            if ok.any():
                yield [v if y == x else -1 for y in range(space.nt)], ok


def _product_batches(space: Space, tiled: tuple[int, ...], structs: np.ndarray, above: list, prods: np.ndarray,
                     slide: list[int] | None) -> Iterator[Batch]:
    """Structures x tile products in chunks of about CHUNK candidates."""
    per = max(1, CHUNK // len(structs))
    for start in range(0, len(prods), per):
        pr = prods[start:start + per]
        tidx: list = [0] * space.nd
        for j, d in enumerate(tiled):
            tidx[d] = pr[:, j][None, :].copy()
        yield Batch(tidx=tidx, above=above, ways=[1] * space.nt, shape=(len(structs), len(pr)), tiled=list(tiled),
                    slide=slide)


@dataclass
class SearchFront:
    """Internal state of one search: per objective (OBJECTIVES' order), the staircase (peak SRAM vs its key) and
    the top-k lists."""

    space: Space
    caps: list[int]
    fronts: dict[Objective, _Front]
    tops: dict[Objective, list[_TopK]]  # per capacity (same order as caps)
    evaluations: int = 0
    seconds: float = 0.0

    @property
    def traffic(self) -> _Front:
        """The staircase by traffic (ties: estimated cycles)."""
        return self.fronts[TRAFFIC]

    @property
    def cycles(self) -> _Front:
        """The staircase by estimated cycles (ties: traffic)."""
        return self.fronts[CYCLES]


def _consider(st: SearchFront, b: Batch, res: Evaluation) -> None:
    """Merge the evaluated candidates of a batch that join a staircase or a top-k list; with a lower bound of
    the peak (screening), first re-evaluate exactly those that could join."""
    peak = flat(res.peak_sram_bytes, b.shape)
    idx = np.nonzero(fits_sram(peak, max(st.caps)))[0]
    if len(idx) == 0:
        return
    p = peak[idx]
    tr = flat(res.traffic_bytes, b.shape)[idx].astype(np.float64)
    estimated = res.estimated_cycles is not None  # traffic only: ties in traffic go on to the exact evaluation
    es = flat(res.estimated_cycles, b.shape)[idx].astype(np.float64) if estimated else np.full(len(idx), -np.inf)
    en = _energy_pj(st.space, res, b.shape, idx, es) if estimated and _ranks_energy(st) else None
    if not res.peak_exact:
        keep = _could_join(st, p, tr, es, estimated, en)
        if keep.any():
            sub = b.select(idx[keep])
            _consider(st, sub, st.space.evaluate(sub, exact=True))
        return
    for objective, front in st.fronts.items():
        k1, k2 = objective.key(traffic=tr, cycles=es, energy=en)[:2]
        m = front.filter(p, k1, k2)
        if m.any():
            front.merge(p[m], k1[m], k2[m], st.space.rows(b, idx[m]))
    picks = []  # (top-k list, its keys, the candidates (indices into idx) that enter it)
    for i, c in enumerate(st.caps):
        under = fits_sram(p, c)
        for objective, tops in st.tops.items():
            top = tops[i]
            k1, k2 = objective.key(traffic=tr, cycles=es, energy=en)[:2]
            sub = np.nonzero(under & (k1 <= top.threshold()))[0]
            if len(sub) > 64 * top.k:
                sub = sub[np.argpartition(k1[sub], 64 * top.k)[:64 * top.k]]
            if len(sub):
                picks.append((top, k1, k2, sub))
    if picks:  # pack the union once
        union = np.unique(np.concatenate([sub for *_, sub in picks]))
        rows = st.space.rows(b, idx[union])
        for top, k1, k2, sub in picks:
            top.merge(k1[sub], k2[sub], rows[np.searchsorted(union, sub)])


def _ranks_energy(st: SearchFront) -> bool:
    """Whether this search keeps a staircase ranked by energy (only when its objective asks for one)."""
    return any(o.needs_energy for o in st.fronts)


def _energy_pj(space: Space, res: Evaluation, shape: tuple[int, ...], idx: np.ndarray,
               cycles: np.ndarray) -> np.ndarray:
    """The energy (pJ) of the candidates `idx` of an evaluated batch on the search's hardware (its SRAM size sets
    the SRAM's energy per access): their per-level bytes priced (`dsasim.energy.report.energy_pj_of`), the padded
    MACs, leakage over the estimated cycles."""
    levels = res.level_bytes()
    read = {lv: flat(r, shape)[idx].astype(np.float64) for lv, (r, _) in levels.items()}
    write = {lv: flat(w, shape)[idx].astype(np.float64) for lv, (_, w) in levels.items()}
    hw = space.hardware
    padded = flat(res.tensorcore_cycles, shape)[idx].astype(np.float64) * (
        hw.tensorcore_in_channels * hw.tensorcore_out_channels)
    return energy_pj_of(hw, read, write, padded, 0, cycles)


def candidate_energy_pj(candidate: Candidate, hardware: Accelerator, cycles: int | None = None) -> float:
    """One candidate's energy in pJ on `hardware` (its SRAM size), over `cycles` (default: the candidate's)."""
    counts = analyze(candidate.nest, hardware).access_counts()
    return energy_report(counts, hardware, candidate.cycles if cycles is None else cycles).energy_pj


def _could_join(st: SearchFront, p: np.ndarray, tr: np.ndarray, es: np.ndarray, estimated: bool,
                en: np.ndarray | None = None) -> np.ndarray:
    """Candidates that could join a staircase or a top-k list, given a lower bound p of their peak: the best
    key at a peak never increases with the peak, so one that does not beat a staircase at p cannot at its peak."""
    ranked = [o for o in st.fronts if estimated or not o.needs_cycles]  # no estimate: no key needing cycles
    keep = np.zeros(len(p), bool)
    for objective in ranked:
        keep |= st.fronts[objective].filter(p, *objective.key(traffic=tr, cycles=es, energy=en)[:2])
    for i, c in enumerate(st.caps):
        for objective in ranked:
            k1, _ = objective.key(traffic=tr, cycles=es, energy=en)[:2]
            keep |= (k1 <= st.tops[objective][i].threshold()) & fits_sram(p, c)
    return keep


def _buffering_pass(st: SearchFront, b: Batch, res: Evaluation) -> None:
    """For an objective that needs cycles (`Objective.needs_cycles`): try 2-way buffering for tensors with several
    instances, on promising candidates."""
    space = st.space
    cap = max(st.caps)
    peak = flat(res.peak_sram_bytes, b.shape)
    best = st.cycles.k1.min() if len(st.cycles.k1) else math.inf
    tc = flat(res.tensorcore_cycles, b.shape).astype(np.float64)
    multi = [flat(res.tensors[x].instances, b.shape) > 1 for x in range(space.nt)]
    sel = np.nonzero((tc < best) & fits_sram(peak, cap) & np.logical_or.reduce(multi))[0]
    if len(sel) == 0:
        return
    sub = b.select(sel)
    for pattern in itertools.product((1, 2), repeat=space.nt):
        if all(w == 1 for w in pattern):
            continue
        ways = [np.where(multi[x][sel], 2, 1) if pattern[x] > 1 else 1 for x in range(space.nt)]
        vb = replace(sub, ways=ways)
        _evaluate(st, vb, space.evaluate(vb), buffering=False)


def _evaluate(st: SearchFront, b: Batch, res: Evaluation, buffering: bool) -> None:
    """Count and consider an evaluated batch; buffering: then try 2-way buffering on its promising candidates."""
    st.evaluations += b.n
    _consider(st, b, res)
    if buffering:
        _buffering_pass(st, b, res)


def _refine(st: SearchFront, objective: Objective, rounds: int = 8) -> None:
    """Local search: move the tiles of the staircase points (one dim over all sizes, two dims nearby), seeded by
    the traffic staircase and top-k lists and the objective's."""
    seen: set[bytes] = set()
    seeds = list(dict.fromkeys((TRAFFIC, objective)))
    for _ in range(rounds):
        fronts = [st.fronts[o] for o in seeds]
        parts = [t.rows for o in seeds for t in st.tops[o]]
        for cap in st.caps:  # the best few under each capacity
            for f in fronts:
                i = f.best_at(cap)
                if i is not None:
                    parts.append(f.rows[max(0, i - REFINE_SEEDS + 1):i + 1])
        fresh = []
        for r in np.concatenate(parts):
            if r.tobytes() not in seen:
                seen.add(r.tobytes())
                fresh.append(r)
        if not fresh:
            return
        cand = _neighbours(st.space, np.stack(fresh))
        for start in range(0, len(cand), CHUNK):
            b = st.space.batch(cand[start:start + CHUNK])
            _evaluate(st, b, st.space.evaluate(b), buffering=objective.needs_cycles)


def _neighbours(space: Space, seeds: np.ndarray) -> np.ndarray:
    """The refinement's candidate rows around `seeds`: every size of one dim, nearby sizes of two dims, and
    one tensor's above flag toggled for one dim, kept when the above-sets still form a chain."""
    tiled = [d for d in range(space.nd) if len(space.fine[d]) > 1]
    neigh = []
    for d in tiled:
        nf = len(space.fine[d])
        rep = np.repeat(seeds, nf, axis=0)
        rep[:, d] = np.tile(np.arange(nf), len(seeds))
        neigh.append(rep)
    for d1, d2 in itertools.combinations(tiled, 2):
        m1 = space.moves(d1, seeds[:, d1])  # (seeds, moves)
        m2 = space.moves(d2, seeds[:, d2])
        k1, k2 = m1.shape[1], m2.shape[1]
        rep = np.repeat(seeds, k1 * k2, axis=0)
        rep[:, d1] = np.repeat(m1, k2, axis=1).ravel()
        rep[:, d2] = np.tile(m2, (1, k1)).ravel()
        neigh.append(rep)
    for x in range(space.nt):
        for d in range(space.nd):
            rep = seeds.copy()
            rep[:, space.nd + x] ^= (1 << d)
            neigh.append(rep)
        for v in [-1] + [v for v, _ in space.slidable[x]]:
            rep = seeds.copy()
            rep[:, space.nd + 2 * space.nt + x] = v
            neigh.append(rep)
    cand = np.concatenate(neigh)
    bits = [cand[:, space.nd + x] for x in range(space.nt)]
    chain = np.ones(len(cand), bool)  # above-sets (bitmasks) nested
    for a, b in itertools.combinations(range(space.nt), 2):
        chain &= ((bits[a] & ~bits[b]) == 0) | ((bits[b] & ~bits[a]) == 0)
    cand = cand[chain]
    anyabove = functools.reduce(np.bitwise_or, (cand[:, space.nd + x] for x in range(space.nt)))
    for d in range(space.nd):  # a dim above no tensor's staging gains nothing from tiling: one trip (index 0)
        cand[:, d] = np.where((anyabove >> d) & 1, cand[:, d], 0)
    cand[:, space.nd + 2 * space.nt:] = space.valid_slides(cand)
    return cand


def run_search(problem: Problem, hardware: Accelerator, caps: Sequence[int],
               objective: Objective | str = DEFAULT_OBJECTIVE, refine: bool = True, exhaustive: bool = False,
               top: int = 5, progress: Callable[[float], None] | None = None, slide: bool = True) -> SearchFront:
    """Enumerate and evaluate; return the staircases for the capacities `caps` (bytes)."""
    objective = objective_named(objective)
    require_one_level(hardware, "search")
    start = time.perf_counter()
    space = Space(problem, hardware, exhaustive=exhaustive, slide=slide)
    caps = sorted(set(int(c) for c in caps))
    k = max(top, TOP_STRUCTURES // len(caps), 8)
    # every objective's staircase, the energy ones only when the search ranks by energy (they need the per-level
    # bytes priced for every candidate, and the SRAM's energy per access is that of one size: `hardware`'s)
    ranked = [o for o in OBJECTIVES.values() if not o.needs_energy or o == objective]
    if objective.needs_energy and len(caps) > 1:
        raise ValueError(f"objective {objective.name} ranks at one SRAM size at a time (the SRAM's energy per access "
                         f"depends on its size); search each size on its own")
    st = SearchFront(space=space, caps=caps, fronts={o: _Front(space.width) for o in ranked},
                     tops={o: [_TopK(k, space) for _ in caps] for o in ranked})
    batches = list(_batches(space))
    total = sum(b.n for b in batches) or 1
    done = 0
    for b in batches:
        _evaluate(st, b, space.evaluate(b, exact=False, estimate=objective.needs_cycles), objective.needs_cycles)
        done += b.n
        if progress is not None:
            progress(done / total)
    if refine and not exhaustive:
        _refine(st, objective)
    st.seconds = time.perf_counter() - start
    return st


# ---------------------------------------------------------------------------------------- confirmation
def _best_buffering(nest: LoopNest, hardware: Accelerator, cap: int) -> Analysis:
    """`nest` with the buffering ways (1 or 2 per multi-instance tensor) of the best estimated cycles that fit in
    cap (ties: lower peak), analysed."""
    best = analyze(nest, hardware)
    multi = [n for n in nest.problem.tensor_names if best.tensor(n).instances > 1]
    for pattern in itertools.product((1, 2), repeat=len(multi)):
        a = analyze(nest.replace(ways=dict(zip(multi, pattern))), hardware)
        if fits_sram(a.peak_sram_bytes, cap) and \
                (a.estimated_cycles, a.peak_sram_bytes) < (best.estimated_cycles, best.peak_sram_bytes):
            best = a
    return best


def _candidate(space: Space, row: np.ndarray, cap: int | None = None) -> Candidate:
    """The candidate of a row; given cap, with the buffering of the best estimated cycles within cap."""
    nest = space.nest(row)
    return Candidate.of(analyze(nest, space.hardware) if cap is None else _best_buffering(nest, space.hardware, cap))


def confirm(candidate: Candidate, hardware: Accelerator, runner: Callable[..., Any] | None,
            simulate: bool = True) -> Candidate:
    """Re-run a candidate through the generic kernel (count-only, traced); check the model; simulate timing."""
    if runner is None:
        return candidate
    result = runner(candidate.nest, hardware)
    if result.status != Status.OK:
        raise RuntimeError(f"the search's schedule failed when traced ({result.status}): {result.message}")
    model = analyze(candidate.nest, hardware)
    if (result.loaded_bytes, result.stored_bytes, result.peak_sram_bytes) != \
            (model.loaded_bytes, model.stored_bytes, model.peak_sram_bytes):
        raise AssertionError(f"analytic model and trace differ:\n{reconcile(candidate.nest, result, hardware)}")
    cycles = None
    if simulate and result.trace is not None:
        from dsasim.timing import simulate as simulate_timing  # the timing package only confirms candidates
        cycles = int(simulate_timing(result.trace, hardware, power=False).cycles)
    return replace(candidate, simulated_cycles=cycles, traced=True)


def _to_confirm(st: SearchFront, objective: Objective, top: int,
                best_by: dict[Objective, Candidate | None]) -> list[Candidate]:
    """The candidates to trace: the `top` best of the objective (distinct nests; for one that needs cycles, each
    with the buffering of the best estimated cycles), then every objective's winner."""
    space, cap = st.space, st.caps[0]
    pool = [best_by[objective]] + [_candidate(space, r) for r in st.tops[objective][0].rows[:top]]
    if objective.needs_cycles:
        pool = [Candidate.of(_best_buffering(c.nest, space.hardware, cap)) for c in pool if c is not None]
    uniq: dict[LoopNest, Candidate] = {}
    for c in pool:
        if c is not None and c.nest not in uniq and len(uniq) < top:
            uniq[c.nest] = c
    for c in best_by.values():  # every winner is always timed
        if c is not None and c.nest not in uniq:
            uniq[c.nest] = c
    return list(uniq.values())


def _pareto(st: SearchFront) -> list[Candidate]:
    """The traffic staircase's points that lower the traffic: peak SRAM vs traffic."""
    out, last = [], math.inf
    for row, traffic in zip(st.traffic.rows, st.traffic.k1):
        if traffic < last:
            out.append(_candidate(st.space, row))
            last = traffic
    return out


def with_capacity(hardware: Accelerator, sram_bytes: int | None) -> tuple[int, Accelerator]:
    """The SRAM capacity in bytes (default: the hardware's) and the hardware with it; ValueError for a capacity
    below one word."""
    cap = hardware.sram_bytes if sram_bytes is None else int(sram_bytes)
    if cap < hardware.word_bytes:
        raise ValueError(f"sram_bytes {cap:,} is below one word ({hardware.word_bytes} B)")
    return cap, replace(hardware, sram_bytes=cap)


def search(problem: Problem, hardware: Accelerator, sram_bytes: int | None = None,
           objective: Objective | str = DEFAULT_OBJECTIVE,
           runner: Callable[..., Any] | None = None, confirm_top: int = 3, refine: bool = True,
           exhaustive: bool = False, simulate: bool = True,
           progress: Callable[[float], None] | None = None, force: bool = False,
           warn: Callable[[str], None] | None = None, slide: bool = True) -> SearchResult:
    """Find the best LoopNest of `problem` under `sram_bytes` (default: the hardware's SRAM).

    Both rankings are computed: by loaded + stored bytes (ties: estimated cycles) and by estimated cycles
    (ties: traffic; buffering ways included); `objective` (an `Objective` of OBJECTIVES or its name) picks
    `result.best` and which candidates are confirmed. With a `runner(nest, hardware) -> RunResult` (e.g.
    `dsasim.kernels.loopnest_kernel.run_loopnest`) the top `confirm_top` candidates of the objective are re-run through
    the trace (checked equal to the model) and the timing simulator; the best simulated one is `best_cycles`.
    Work estimated beyond WORK_LIMIT_SECONDS (the enumeration, before it starts; the tracing of the candidates,
    before it starts) raises WorkTooLargeError unless `force` (then `warn` gets the estimate). slide=False leaves
    sliding-window reuse out of the space (to see what it gains).
    """
    objective = objective_named(objective)
    cap, hw = with_capacity(hardware, sram_bytes)
    check_work(estimate_search_work(problem, hw, 1, exhaustive, slide), force, warn)
    # every objective's ranking is computed: the one that needs cycles sets the enumeration (estimates, 2 ways)
    st = run_search(problem, hw, [cap], objective if objective.needs_energy else CYCLES, refine=refine,
                    exhaustive=exhaustive, top=max(confirm_top, 1), progress=progress, slide=slide)
    best_by = {o: _best_candidate(st, o, cap) for o in st.fronts}
    confirmed: list[Candidate] = []
    source = "estimate"
    if runner is not None and best_by[TRAFFIC] is not None:
        pool = _to_confirm(st, objective, confirm_top, best_by)
        check_work(estimate_trace_work([c.nest for c in pool]), force, warn)  # 1-element tiles over a large layer
        confirmed = [confirm(c, hw, runner, simulate) for c in pool]
        by_nest = {c.nest: c for c in confirmed}
        best_by = {o: None if c is None else by_nest[c.nest] for o, c in best_by.items()}
        sims = [c for c in confirmed if c.simulated_cycles is not None]
        if sims:  # the simulated cycles rank the confirmed candidates of every objective that needs cycles
            source = "simulated"
            for o in best_by:
                if o.needs_cycles:
                    best_by[o] = min(sims, key=lambda c: o.key(
                        traffic=c.traffic_bytes, cycles=c.simulated_cycles, peak=c.peak_sram_bytes,
                        energy=candidate_energy_pj(c, hw) if o.needs_energy else None))
    return SearchResult(problem=problem, hardware=hw, sram_bytes=cap, objective=objective, best_by=best_by,
                        pareto=_pareto(st), confirmed=confirmed,
                        evaluations=st.evaluations, seconds=st.seconds, bound=lower_bound(problem, cap, hw.word_bytes),
                        cycles_source=source)


def _best_candidate(st: SearchFront, objective: Objective, cap: int) -> Candidate | None:
    """The best candidate by `objective` under `cap`, None when none fits: its staircase's point; an objective that
    ranks without cycles enumerated 1 way, so its winner gets the buffering of the best estimated cycles in cap."""
    i = st.fronts[objective].best_at(cap)
    if i is None:
        return None
    return _candidate(st.space, st.fronts[objective].rows[i], None if objective.needs_cycles else cap)


def search_front(problem: Problem, hardware: Accelerator, caps: Sequence[int], refine: bool = True,
                 progress: Callable[[float], None] | None = None, slide: bool = True,
                 objective: Objective | str = DEFAULT_OBJECTIVE) -> tuple[SearchFront, list[Candidate | None]]:
    """For each capacity in `caps`, from one enumeration: the best candidate by `objective` (`_best_candidate`:
    by traffic, ties estimated cycles, with the buffering of the best estimated cycles within the capacity; by
    cycles, the least estimated cycles, ties traffic)."""
    objective = objective_named(objective)
    if objective.needs_energy:  # the SRAM's energy per access follows its size: one search per size
        best: list[Candidate | None] = []
        fronts: list[SearchFront] = []
        for i, cap in enumerate(caps):
            part = None if progress is None else (lambda f, i=i: progress((i + f) / len(caps)))
            fronts.append(run_search(problem, replace(hardware, sram_bytes=cap), [cap], objective, refine=refine,
                                     progress=part, slide=slide))
            best.append(_best_candidate(fronts[-1], objective, cap))
        st = fronts[-1]
        st.evaluations, st.seconds = sum(f.evaluations for f in fronts), sum(f.seconds for f in fronts)
        return st, best
    st = run_search(problem, replace(hardware, sram_bytes=max(caps)), list(caps), objective, refine=refine,
                    progress=progress, slide=slide)
    return st, [_best_candidate(st, objective, cap) for cap in caps]


def evaluate_nests(nests: Sequence[LoopNest], hardware: Accelerator) -> Evaluation:
    """Vectorised evaluation of explicit nests of one problem (their tiles must be search candidates: balanced,
    aligned or exhaustive): the model's `Evaluation`, one array entry per nest in every count."""
    if not nests:
        raise ValueError("evaluate_nests needs at least one nest")
    space = Space(nests[0].problem, hardware, exhaustive=True)
    b = space.batch(np.stack([space.row(n) for n in nests]))
    return space.evaluate(b).flat(b.shape)
