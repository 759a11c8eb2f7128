"""The analytic traffic model of a `LoopNest`: closed-form counts equal to the trace, byte for byte.

In the spirit of the DV/MU model of Chimera (Zheng et al., HPCA 2023): a tensor staged at depth k is moved
once per iteration of the loops above k, and its box is its footprint over the loops inside k; loops above
k that do not index the tensor are its re-fetch ("reuse") loops. Unlike that model this one is exact:

* Plain dimensions: the tiles of a dimension sum to its extent whatever the ragged last tile, so a tensor's
  loaded elements are  prod(trips of the loops above k that do not index it) x prod(extent of each plain axis)
  x prod(window sums);  the number of DMA transfers uses trip counts instead of extents.
* Window axes (image rows: output row o, tap t read row o*stride + t*dilation - padding): the sum over the
  (output-tile, tap-tile) pairs above k of the *tight* row count (what `window_rows` returns and the kernel
  loads). Every pair whose window lies inside the image reads exactly (o_len - 1)*stride + (t_len - 1)*dilation + 1
  rows, which sums in closed form; only pairs clipped by the image border (at most ceil(padding / (tile*stride))
  + 1 output tiles at each end, per tap tile) are evaluated one by one (`group_stats`), so the cost does not
  grow with the extent. Halos, stride, dilation and ragged tiles are therefore exact. An input that does not
  slide loads strided boxes (`Evaluator(strided_boxes=True)`, as the loop-nest kernel runs): a pair holds
  span // window_step + 1 rows, the step constant within a tile class (`group_stats(stepped=True)`).
* Sliding-window reuse (a tensor that slides along its window axis's output loop L, the innermost loop above it
  with more than one trip): per sweep of L, the rotating buffer loads its first (non-empty) box, then at each
  trip only the rows it does not hold (inside the image the rows past the held ones; at a border, where tight
  windows skip rows, possibly rows before them too): `slide_stats` sums, per tap tile, the new rows and the
  transfers that move any, in closed form inside the image and box by box at its borders. Its scope holds the sweep's largest box throughout, so in the peak
  its box takes the larger of the two output-tile classes of that group.
* Output: boxes are revisited R = prod(trips of reduction loops above its staging) times; the first visit
  opens zeros (no DMA), the others load the stored partial sums (read-modify-writes); every visit stores.
  loaded = (R - 1) x |output|, stored = R x |output|.
* Peak SRAM: at the innermost point every staged buffer is live, so the peak is the maximum over iterations of
  sum(ways x box). Plain dimensions are largest at their first tile; a window group (output position, tap) has
  four tile classes (not-last / last for each loop), and the maximum is taken over the class combinations of all
  groups (16 for a conv), which is exact because within a class the output and weight boxes are constant.
* MACs and TensorCore cycles: sums over tiles of separable products: per-dimension sums
  (ceil(t/16) summed over the input-channel tiles, ceil(t/24) over the output-channel tiles, extents
  elsewhere) times, per window group, the sum of o_len x t_len over the pairs whose window is not all padding
  (those compute nothing).

Grouped convs need no term of their own: `ConvProblem` gives them a group dimension g that indexes every tensor
(a plain axis, never a reduction), so their boxes are boxes and the counts above stay exact; the TensorCore
sums run over the per-group channel tiles and the g extent multiplies them (each group its own pass).

`analyze(nest, hardware)` gives an `Analysis`; `reconcile(nest, result)` compares it with a traced run and
names the tensor, its loop and both numbers for every difference.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np

from dsasim.cost import ISSUE_CYCLES, busy_cycles, ddr_port, padded_macs, pipeline_estimate, port_cycles, tile_blocks
from dsasim.cost import maximum as _max
from dsasim.dataflow import DATAFLOWS, OperandAccesses
from dsasim.energy.accesses import AccessCounts, TensorAccesses
from dsasim.hardware import DDR, SRAM_LEVEL, Accelerator
from dsasim.traced.schedule import Status
from dsasim.traced.trace import ENTER, EXIT, LOAD, OPEN, SLIDE
from dsasim.util import ceil_div, region_elements
from dsasim.geometry import stepped_rows, window_rows, window_step
from dsasim.architect.nests.loopnest import LoopNest, Problem, last_tile, tile_count

__all__ = ["fits_sram", "GroupStats", "group_stats", "SlideStats", "slide_stats", "TensorModel", "Analysis", "analyze", "Evaluator", "Evaluation",
           "TensorCounts", "Batch", "flat", "Mismatch",
           "Reconciliation", "reconcile", "reconcile_accesses", "call_factor",
           "computed_outputs", "fresh_outputs"]


def fits_sram(peak_sram_bytes, sram_bytes):
    """The one capacity rule (bytes): a schedule fits when its peak live bytes are at most sram_bytes.

    A peak equal to the capacity fits, as in the memory model (`SramOverflowError` only when live bytes exceed
    sram_bytes). The search, the SRAM sweep and `Analysis.fits` all use it; works elementwise on numpy arrays."""
    return peak_sram_bytes <= sram_bytes


CLASSES = ((0, 0), (0, 1), (1, 0), (1, 1))  # tile classes (ci, cj) of a window group: 0 not-last, 1 last tile


class GroupStats(NamedTuple):
    """Exact sums over the (output-tile, tap-tile) pairs of one window axis.

    total: sum of the tight row counts; boxes: pairs whose window holds a real row; valid: sum of
    o_len x t_len over those pairs (MAC weight); cls_max[ci][cj]: the largest row count over the pairs whose
    output tile is of class ci and tap tile of class cj (class 0: a not-last tile, class 1: the last tile; a
    loop with one trip has only the last tile, and its class 0 repeats class 1).
    """

    total: int
    boxes: int
    valid: int
    cls_max: tuple[tuple[int, int], tuple[int, int]]
    # sums of o_len and of t_len over the pairs that hold a real row (a TensorCore call's pixels or taps: the
    # dataflow's operand counts, `dsasim.dataflow`)
    o_sum: int = 0
    t_sum: int = 0


def group_stats(o_ext: int, k_ext: int, stride: int, dilation: int, padding: int, size: int, o_tile: int,
                k_tile: int, stepped: bool = False) -> GroupStats:
    """`GroupStats` of a window axis with output extent o_ext tiled by o_tile and taps k_ext tiled by k_tile.

    Pass o_tile = o_ext (k_tile = k_ext) when the loop is not above the staging point (one full range).
    Interior pairs are summed in closed form; border pairs (clipped by the image edge) one by one. stepped: the
    rows of a strided box (`stepped_rows`: every window_step-th row, constant within a tile class) instead of
    the dense range: an interior pair of span (o_len - 1)*stride + (k_len - 1)*dilation holds span // step + 1.
    """
    s, d, p, h = stride, dilation, padding, size
    to_n = tile_count(o_ext, o_tile)
    tk_n = tile_count(k_ext, k_tile)
    o_last = o_ext - (to_n - 1) * o_tile
    k_last = k_ext - (tk_n - 1) * k_tile
    boxes = to_n * tk_n
    valid = o_ext * k_ext
    o_sum, t_sum = tk_n * o_ext, to_n * k_ext  # (every tap tile meets every output tile)
    o_len = (o_tile, o_last)
    k_len = (k_tile, k_last)
    o_cnt = (to_n - 1, 1)
    k_cnt = (tk_n - 1, 1)

    def unclipped(ol: int, kl: int) -> int:
        """The rows of an interior pair of o_len ol and k_len kl (dense, or stepped)."""
        span = (ol - 1) * s + (kl - 1) * d
        return span // window_step(ol, kl, s, d) + 1 if stepped else span + 1

    if stepped:  # the step is constant per tile class, so sum class by class
        total = sum(o_cnt[ci] * k_cnt[cj] * unclipped(o_len[ci], k_len[cj]) for ci, cj in CLASSES)
    else:  # sum over all pairs of the unclipped window (o_len - 1)*s + (k_len - 1)*d + 1
        total = tk_n * s * (o_ext - to_n) + to_n * d * (k_ext - tk_n) + to_n * tk_n
    clipped = dict.fromkeys(CLASSES, 0)  # border pairs per class, and their largest row count
    clip_max = dict.fromkeys(CLASSES, 0)
    step = o_tile * s
    for j in range(tk_n):
        t0 = j * k_tile
        t1 = min(t0 + k_tile, k_ext)
        kl = t1 - t0
        cj = 1 if j == tk_n - 1 else 0
        num = p - t0 * d  # output tiles i < a start above row 0
        a = 0 if num <= 0 else min(to_n, ceil_div(num, step))
        y = h + s + p - (t1 - 1) * d  # not-last tiles i >= b end below row h - 1
        b = max(0, ceil_div(y, step) - 1)
        candidates = itertools.chain(range(a), range(max(a, min(b, to_n - 1)), to_n))
        for i in candidates:
            o0 = i * o_tile
            o1 = min(o0 + o_tile, o_ext)
            lo = o0 * s + t0 * d - p
            hi = (o1 - 1) * s + (t1 - 1) * d - p
            if lo >= 0 and hi < h:
                continue
            if stepped:
                rows = len(stepped_rows(o0, o1, t0, t1, s, d, p, h))
                total += rows - unclipped(o1 - o0, kl)
            else:
                first, stop = window_rows(o0, o1, t0, t1, s, d, p, h)
                rows = stop - first
                total += rows - (hi - lo + 1)
            if rows == 0:
                boxes -= 1
                valid -= (o1 - o0) * kl
                o_sum -= o1 - o0
                t_sum -= kl
            ci = 1 if i == to_n - 1 else 0
            clipped[ci, cj] += 1
            clip_max[ci, cj] = max(clip_max[ci, cj], rows)

    def largest(ci: int, cj: int) -> int:
        ci, cj = (ci if o_cnt[ci] else 1), (cj if k_cnt[cj] else 1)  # one trip: only the last tile
        if o_cnt[ci] * k_cnt[cj] > clipped[ci, cj]:  # an interior pair exists: the unclipped window
            return unclipped(o_len[ci], k_len[cj])
        return clip_max[ci, cj]

    return GroupStats(total=total, boxes=boxes, valid=valid,
                      cls_max=((largest(0, 0), largest(0, 1)), (largest(1, 0), largest(1, 1))), o_sum=o_sum,
                      t_sum=t_sum)


def computed_outputs(o_ext: int, stride: int, dilation: int, padding: int, size: int, o_tile: int,
                     t_end: int) -> int:
    """Output positions of a window axis (tiled by o_tile) whose tile computes with the taps [0, t_end): its
    window over them holds a real row (else every such call reads only padding and is skipped). Interior tiles
    always do; only the border tiles (as in `group_stats`) are evaluated one by one."""
    s, d, p, h = stride, dilation, padding, size
    to_n = tile_count(o_ext, o_tile)
    step = o_tile * s
    a = 0 if p <= 0 else min(to_n, ceil_div(p, step))  # tiles i < a start above row 0
    b = max(0, ceil_div(h + s + p - (t_end - 1) * d, step) - 1)  # not-last tiles i >= b end below row h - 1
    total = o_ext
    for i in itertools.chain(range(a), range(max(a, min(b, to_n - 1)), to_n)):
        o0 = i * o_tile
        o1 = min(o0 + o_tile, o_ext)
        first, stop = window_rows(o0, o1, 0, t_end, s, d, p, h)
        if first == stop:
            total -= o1 - o0
    return total


def fresh_outputs(problem: Problem, compute_tiles: Mapping[str, int], tap_ends: Mapping[str, int]) -> int:
    """Output elements a nest opens as zeros and then computes into while open (the fresh elements of
    `dsasim.dataflow`), in elements: every output element is opened once (its first visit), and computed into then
    unless its compute tile (`compute_tiles`: the tile of every dimension at the TensorCore call) reads only
    padding with the taps of that visit, [0, tap_ends[tap]) per window axis."""
    fresh = 1
    windows = {a.dim: a for a in problem.windows}
    for axis in problem.output.axes:
        a = windows.get(axis.dim)
        fresh *= problem.extents[axis.dim] if a is None else computed_outputs(
            problem.extents[a.dim], a.stride, a.dilation, a.padding, a.size, compute_tiles[a.dim], tap_ends[a.tap])
    return fresh


class SlideStats(NamedTuple):
    """Sums over the sweeps of a sliding window axis (one sweep of the output loop per tap tile): the rows loaded
    (each sweep's first box, then only the rows it does not hold) and the transfers that move any."""

    total: int
    loads: int


def slide_stats(o_ext: int, k_ext: int, stride: int, dilation: int, padding: int, size: int, o_tile: int,
                k_tile: int) -> SlideStats:
    """`SlideStats` of a window axis whose output loop (tile o_tile) is swept inside each tap tile (k_tile; pass
    k_ext when the tap loop is not above the tensor). An all-padding box is skipped (the buffer keeps its rows).

    Per tap tile, the not-last output tiles whose window lies inside the image (i in [a, m)) all have the box
    (o_tile - 1)*stride + extent rows, extent = (t_len - 1)*dilation + 1, and each moves o_tile*stride rows past
    the one before, so from the second of them on each loads min(o_tile*stride, box) new rows (the overlap, or
    none); only the border tiles (clipped by the image edge, the last one included) and the first interior one
    are evaluated box by box, as in `group_stats`."""
    s, d, p, h, step = stride, dilation, padding, size, o_tile * stride
    to_n = tile_count(o_ext, o_tile)
    total = loads = 0
    for t0 in range(0, k_ext, k_tile):
        t1 = min(t0 + k_tile, k_ext)
        a = 0 if p - t0 * d <= 0 else min(to_n, ceil_div(p - t0 * d, step))  # tiles i >= a start at row >= 0
        m = min(to_n - 1, max(0, ceil_div(h + s + p - (t1 - 1) * d, step) - 1))  # not-last tiles i < m end inside
        interior = range(a + 1, m)  # each after an interior tile: the same new rows
        if len(interior):
            new = min(step, (o_tile - 1) * s + (t1 - 1 - t0) * d + 1)
            total += len(interior) * new
            loads += len(interior)
        held = None  # the rows the rotating buffer holds
        for i in itertools.chain(range(min(a + 1, to_n)), range(max(m, a + 1), to_n)):
            if len(interior) and i == m:  # after the interior tiles: the buffer holds tile m - 1's box
                held = window_rows((m - 1) * o_tile, m * o_tile, t0, t1, s, d, p, h)
            first, stop = window_rows(i * o_tile, min((i + 1) * o_tile, o_ext), t0, t1, s, d, p, h)
            if first == stop:
                continue
            new = stop - first - (max(0, min(stop, held[1]) - max(first, held[0])) if held else 0)
            if new:
                total += new
                loads += 1
            held = first, stop
    return SlideStats(total, loads)


@dataclass(frozen=True)
class TensorModel:
    """Closed-form counts of one tensor (bytes unless named otherwise)."""

    name: str
    loop: str  # the loop its scope sits in ('top' above every loop)
    instances: int  # scope instances: prod(trips of the loops above)
    loaded_bytes: int
    stored_bytes: int
    rmw_bytes: int
    loads: int  # DMA loads
    stores: int  # DMA stores
    opens: int  # output boxes opened as zeros
    box_bytes: int  # largest box, one way
    buffer_bytes: int  # ways x box_bytes
    ways: int


@dataclass(frozen=True)
class Analysis:
    """What `analyze` predicts for a LoopNest on some hardware (bytes, MACs, cycles)."""

    nest: LoopNest
    hardware: str
    word_bytes: int
    tensors: tuple[TensorModel, ...]
    loaded_bytes: int
    stored_bytes: int
    rmw_bytes: int
    loads: int
    stores: int
    peak_sram_bytes: int
    macs: int
    padded_macs: int
    tensorcore_cycles: int
    estimated_cycles: int  # an estimate (see Evaluator._estimate), not the timing simulation
    # the TensorCore's operand reads and writes over the run, in bytes (`dsasim.dataflow`; `Evaluation`)
    operand_bytes: OperandAccesses | None = None

    @property
    def traffic_bytes(self) -> int:
        """loaded + stored bytes."""
        return self.loaded_bytes + self.stored_bytes

    def access_counts(self) -> AccessCounts:
        """Every read and write per tensor and level, in bytes, as a traced run counts them
        (`Counters.access_counts`): DDR reads its loads and takes its stores, the SRAM the reverse plus the
        TensorCore's operand accesses (the problem's first input is its input operand, the second its weight)."""
        ops = self.operand_bytes
        problem = self.nest.problem
        operand = {problem.tensors[0].name: (ops.input_reads, 0), problem.tensors[1].name: (ops.weight_reads, 0),
                   problem.output.name: (ops.output_reads, ops.output_writes)}
        out = []
        for t in self.tensors:
            reads, writes = operand.get(t.name, (0, 0))
            moved = ((DDR, t.loaded_bytes, t.stored_bytes),
                     (SRAM_LEVEL, t.stored_bytes + reads, t.loaded_bytes + writes))
            out += [TensorAccesses(t.name, level, int(r), int(w)) for level, r, w in moved if r or w]
        return AccessCounts(tuple(out), macs=int(self.macs), padded_macs=int(self.padded_macs), vector_lane_ops=0)

    def tensor(self, name: str) -> TensorModel:
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(name)

    def fits(self, sram_bytes: int) -> bool:
        """True when the peak fits in sram_bytes (`fits_sram`)."""
        return bool(fits_sram(self.peak_sram_bytes, sram_bytes))




# ------------------------------------------------------------------------------------------ the one model
@dataclass
class Batch:
    """Candidate nests as arrays broadcastable to `shape`: tidx[d] (index into Evaluator.fine[d]), above[x][d]
    (bool: loop d above tensor x's staging), ways[x]; `tiled` lists the dims that may have several trips (None:
    all); slide[x]: the window group tensor x slides along (its output loop the innermost tiled loop above it),
    -1 for none (None: no tensor slides). Scalars (Python ints and bools) make a batch of one."""

    tidx: list
    above: list
    ways: list
    shape: tuple[int, ...]
    tiled: list[int] | None = None
    slide: list[int] | None = None

    @property
    def n(self) -> int:
        return math.prod(self.shape)

    def select(self, sel: np.ndarray) -> "Batch":
        """The flat-indexed candidates `sel` as a 1-d batch."""
        idx = np.unravel_index(sel, self.shape)

        def take(a):
            return np.broadcast_to(a, self.shape)[idx] if isinstance(a, np.ndarray) else a

        return Batch(tidx=[take(a) for a in self.tidx], above=[[take(a) for a in row] for row in self.above],
                     ways=[take(a) for a in self.ways], shape=(len(sel),), tiled=self.tiled,
                     slide=None if self.slide is None else [take(a) for a in self.slide])


def flat(v: Any, shape: tuple[int, ...]) -> np.ndarray:
    """A count (array broadcastable to a batch's shape, or scalar) as a 1-d array over the batch's candidates."""
    return np.broadcast_to(np.asarray(v), shape).reshape(-1)


class TensorCounts(NamedTuple):
    """One tensor's counts over a batch (arrays or scalars): bytes moved, DMA transfers, scope instances and its
    largest box (bytes, one way)."""

    loaded_bytes: Any
    stored_bytes: Any
    loads: Any
    stores: Any
    instances: Any
    box_bytes: Any = None


class Evaluation(NamedTuple):
    """What the model gives for a batch of nests (arrays broadcastable to the batch's shape, or scalars)."""

    loaded_bytes: Any
    stored_bytes: Any
    peak_sram_bytes: Any  # exact, or (peak_exact False) a lower bound: every loop at its first tile
    peak_exact: bool
    macs: Any
    tensorcore_cycles: Any
    estimated_cycles: Any  # float; None when not asked for
    tensors: tuple[TensorCounts, ...]
    # the TensorCore's operand reads and writes in the SRAM, in bytes (`dsasim.dataflow`): arrays like the rest
    operand_bytes: OperandAccesses | None = None

    @property
    def traffic_bytes(self) -> Any:
        return self.loaded_bytes + self.stored_bytes

    def level_bytes(self) -> dict[str, tuple[Any, Any]]:
        """Per level ("DDR", "SRAM"), the (read, write) bytes of every candidate (arrays like the counts): DMA
        loads read DDR and write the SRAM, stores the reverse; the TensorCore's operands are read and written in
        the SRAM."""
        ops = self.operand_bytes
        return {DDR: (self.loaded_bytes, self.stored_bytes),
                SRAM_LEVEL: (self.stored_bytes + ops.input_reads + ops.weight_reads + ops.output_reads,
                             self.loaded_bytes + ops.output_writes)}

    def flat(self, shape: tuple[int, ...]) -> "Evaluation":
        """Every count as a 1-d array over the batch's candidates (in flat index order)."""
        def f(v):
            return None if v is None else flat(v, shape)

        return self._replace(loaded_bytes=f(self.loaded_bytes), stored_bytes=f(self.stored_bytes),
                             peak_sram_bytes=f(self.peak_sram_bytes), macs=f(self.macs),
                             tensorcore_cycles=f(self.tensorcore_cycles), estimated_cycles=f(self.estimated_cycles),
                             tensors=tuple(TensorCounts._make(map(f, t)) for t in self.tensors),
                             operand_bytes=None if self.operand_bytes is None
                             else OperandAccesses._make(map(f, self.operand_bytes)))


@dataclass(frozen=True)
class _WindowTable:
    """`group_stats` of one window group over every pair of candidate tiles, flattened: entry
    combo * size + io * nk + ik, combo = 2 x (output loop above) + (tap loop above)."""

    o: int  # dim index of the output position
    k: int  # dim index of the tap
    nk: int
    size: int
    total: np.ndarray
    boxes: np.ndarray
    cls: dict[tuple[int, int], np.ndarray]  # the largest row count per tile class (ci, cj) (`GroupStats`)
    valid: np.ndarray  # both loops above (MAC weight), entry io * nk + ik
    slid_total: np.ndarray  # `slide_stats` where the output loop is above (combos 2, 3), else total / boxes
    slid_loads: np.ndarray
    strided_total: np.ndarray  # `group_stats(stepped=True)`: a tensor that loads strided boxes (else = total)
    strided_cls: dict[tuple[int, int], np.ndarray]
    # both loops above, entry io * nk + ik, over the pairs that compute: their count, sum of o_len, sum of t_len
    calls: np.ndarray
    o_sum: np.ndarray
    t_sum: np.ndarray
    # output positions computed into while the output's box is first open (`computed_outputs`): its tap loop
    # above it (taps of the first tap tile only), or not (all taps); entry io * nk + ik
    computed_first: np.ndarray
    computed_all: np.ndarray


def _is_true(a) -> bool:
    return a is True or (isinstance(a, np.bool_) and bool(a))


def _pick(a, yes, no):
    """yes where the above flag a holds, else no (a: bool or bool array)."""
    if a is True or a is False or isinstance(a, np.bool_):
        return yes if a else no
    return np.where(a, yes, no)


def _equal(a, v):
    """a == v as a Python bool for a scalar a (so that `_pick` keeps Python ints), elementwise for an array."""
    return bool(a == v) if isinstance(a, (int, np.integer)) else np.asarray(a) == v


def _at_least(a, v):
    """a >= v as a Python bool for a scalar a, elementwise for an array (like `_equal`)."""
    return bool(a >= v) if isinstance(a, (int, np.integer)) else np.asarray(a) >= v


class Evaluator:
    """The analytic model's tables for a problem over candidate tile sizes `fine[d]` per dimension, and the one
    evaluation of a `Batch` of nests. python_ints: tables of Python ints (exact at any size; `analyze`),
    else int64 (the vectorised search)."""

    def __init__(self, problem: Problem, hardware: Accelerator, fine: Sequence[Sequence[int]],
                 python_ints: bool = False, strided_boxes: bool = False) -> None:
        p = problem
        self.strided_boxes = strided_boxes  # an input that does not slide loads strided boxes (the kernel's rule)
        self.problem = problem
        self.hardware = hardware
        self.word = hardware.word_bytes
        self.dims = p.dims
        self.nd = len(self.dims)
        self.tensors = p.tensors
        self.nt = len(self.tensors)
        self.dim_index = {d: i for i, d in enumerate(self.dims)}
        dtype = object if python_ints else np.int64

        def arr(values) -> np.ndarray:
            return np.array(list(values), dtype=dtype)

        blocks = tensorcore_blocks(p, hardware)
        self.fine = [arr(int(v) for v in f) for f in fine]
        self.ext = [p.extents[d] for d in self.dims]
        self.trips = [arr(tile_count(e, int(v)) for v in f) for e, f in zip(self.ext, self.fine)]
        self.last = [arr(last_tile(e, int(v)) for v in f) for e, f in zip(self.ext, self.fine)]
        self.tcsum = [arr(tile_blocks(e, int(v), blocks.get(d, 0)) for v in f)
                      for d, e, f in zip(self.dims, self.ext, self.fine)]
        self.groups = [self._window_table(a, arr) for a in p.windows]
        # dim index -> (its window group, 0 output position / 1 tap)
        self.group_of = {self.dim_index[d]: (g, role) for g, a in enumerate(p.windows)
                         for role, d in enumerate((a.dim, a.tap))}
        self.idx = [[self.dim_index[d] for d in self.dims if d in t.dims] for t in self.tensors]
        self.nonidx = [[self.dim_index[d] for d in self.dims if d not in t.dims] for t in self.tensors]
        # a tensor's axes: plain (a dim index) or a window over a group's output position and tap (group index)
        self.plain_axes = [[self.dim_index[a.dim] for a in t.axes if a.tap is None] for t in self.tensors]
        self.window_axes = [[self.group_of[self.dim_index[a.dim]][0] for a in t.axes if a.tap is not None]
                            for t in self.tensors]
        self.out_t = next(i for i, t in enumerate(self.tensors) if t.output)
        self.sizes = [problem.elements(t.name) for t in self.tensors]
        self.plain_dims = [d for d in range(self.nd) if d not in self.group_of]
        self.plain_extent = math.prod(self.ext[d] for d in self.plain_dims)
        self.dataflow = DATAFLOWS[hardware.tensorcore_dataflow]
        self.call_factor = {d: call_factor(p, self.dims[d]) for d in self.plain_dims}

    def slide_group(self, loop: str | None) -> int:
        """The window group whose output position is `loop` (a sliding tensor's slide loop), -1 for None."""
        return -1 if loop is None else next(g for g, a in enumerate(self.problem.windows) if a.dim == loop)

    def _window_table(self, a, arr) -> _WindowTable:
        io, ik = self.dim_index[a.dim], self.dim_index[a.tap]
        fo, fk = [int(v) for v in self.fine[io]], [int(v) for v in self.fine[ik]]
        O, K = self.problem.extents[a.dim], self.problem.extents[a.tap]
        cache: dict[tuple[int, int], GroupStats] = {}
        slid_cache: dict[tuple[int, int], SlideStats] = {}
        strided_cache: dict[tuple[int, int], GroupStats] = {}
        stats = []  # combo-major, then output tile, then tap tile
        slid = []
        strided = []
        for ao, ak in CLASSES:  # combo = 2 x ao + ak: whether the output / tap loop is above
            for key in itertools.product(fo if ao else [O], fk if ak else [K]):
                if key not in cache:
                    cache[key] = group_stats(O, K, a.stride, a.dilation, a.padding, a.size, *key)
                if self.strided_boxes and key not in strided_cache:
                    strided_cache[key] = group_stats(O, K, a.stride, a.dilation, a.padding, a.size, *key, stepped=True)
                if ao and key not in slid_cache:
                    slid_cache[key] = slide_stats(O, K, a.stride, a.dilation, a.padding, a.size, *key)
            keys = [(to if ao else O, tk if ak else K) for to in fo for tk in fk]
            stats += [cache[key] for key in keys]
            strided += [(strided_cache if self.strided_boxes else cache)[key] for key in keys]
            slid += [slid_cache[key] if ao else SlideStats(cache[key].total, cache[key].boxes) for key in keys]
        return _WindowTable(io, ik, len(fk), len(fo) * len(fk), arr(s.total for s in stats),
                            arr(s.boxes for s in stats), {(ci, cj): arr(s.cls_max[ci][cj] for s in stats)
                                                          for ci, cj in CLASSES},
                            arr(s.valid for s in stats[3 * len(fo) * len(fk):]), arr(s.total for s in slid),
                            arr(s.loads for s in slid), arr(s.total for s in strided),
                            {(ci, cj): arr(s.cls_max[ci][cj] for s in strided) for ci, cj in CLASSES},
                            *(arr(getattr(s, name) for s in stats[3 * len(fo) * len(fk):])
                              for name in ("boxes", "o_sum", "t_sum")),
                            *(arr(computed_outputs(O, a.stride, a.dilation, a.padding, a.size, to, end(tk))
                                  for to in fo for tk in fk) for end in (lambda tk: tk, lambda tk: K)))

    def evaluate(self, b: Batch, exact: bool = True, estimate: bool = True) -> Evaluation:
        """Evaluate a batch of candidates (numpy broadcasting over b.shape).

        exact=False computes, instead of the peak, a lower bound on it (the live bytes at the iteration where
        every loop is at its first tile), enough to discard candidates cheaply. estimate=False leaves the cycle
        estimate out (None)."""
        tiled = set(range(self.nd)) if b.tiled is None else set(b.tiled)
        tidx, above = b.tidx, b.above
        T = {d: self.trips[d][tidx[d]] for d in tiled}
        # trips of dim d seen by tensor x: T if the loop is above x's staging, else 1 (left out)
        seen: list[dict[int, Any]] = []
        for x in range(self.nt):
            row = {}
            for d in tiled:
                a = above[x][d]
                if _is_true(a):
                    row[d] = T[d]
                elif not (a is False or isinstance(a, np.bool_)):
                    row[d] = np.where(a, T[d], 1)
            seen.append(row)
        pair_index = [(tidx[g.o] * g.nk + tidx[g.k]) if (g.o in tiled or g.k in tiled) else 0 for g in self.groups]
        entries = [[self._combo(x, g, above, tiled) * g.size + pi for g, pi in zip(self.groups, pair_index)]
                   for x in range(self.nt)]
        slide = b.slide or [-1] * self.nt
        peak, boxes = self._peak(b, entries, tiled, exact, slide)
        tensors = tuple(self._tensor_counts(x, seen[x], entries[x], slide[x])._replace(box_bytes=boxes[x])
                        for x in range(self.nt))
        valid: Any = 1
        for g, pi in zip(self.groups, pair_index):
            valid = valid * g.valid[pi]
        cycles: Any = valid
        for d in self.plain_dims:
            cycles = cycles * (self.tcsum[d][tidx[d]] if d in tiled else self.tcsum[d][0])
        return Evaluation(loaded_bytes=sum(t.loaded_bytes for t in tensors),
                          stored_bytes=sum(t.stored_bytes for t in tensors), peak_sram_bytes=peak, peak_exact=exact,
                          macs=self.plain_extent * valid, tensorcore_cycles=cycles,
                          estimated_cycles=self._estimate(cycles, tensors, b.ways, T, slide) if estimate else None,
                          tensors=tensors, operand_bytes=self._operand_bytes(tidx, tiled, pair_index, above))

    def _operand_bytes(self, tidx: list, tiled: set, pair_index: list, above: list) -> OperandAccesses:
        """The TensorCore's operand reads and writes over every call (bytes; `dsasim.dataflow`): each count is a
        product over the call's factors, so its sum over the calls (the product of every dimension's tiles, the
        window pairs that read a real row only) is the product of per-dimension sums: the extent ("elements"),
        the sum of ceil(tile / block) ("blocks", = tcsum) or the trips ("once"); per window group the sum over
        its computing pairs of o_len^a x t_len^b. Output reads: the writes less the fresh elements."""
        counts = []
        for count in ("input_reads", "weight_reads", "output_writes"):
            terms = self.dataflow.terms(count)
            total: Any = 1
            for d in self.plain_dims:
                term = terms[self.call_factor[d]]
                i = tidx[d] if d in tiled else 0
                total = total * (self.ext[d] if term == "elements" else
                                 self.tcsum[d][i] if term == "blocks" else self.trips[d][i])
            for g, pi in zip(self.groups, pair_index):
                table = {("elements", "elements"): g.valid, ("elements", "once"): g.o_sum,
                         ("once", "elements"): g.t_sum, ("once", "once"): g.calls}[terms["pixels"], terms["taps"]]
                total = total * table[pi]
            counts.append(total * self.word)
        input_reads, weight_reads, output_writes = counts
        # fresh: the output elements its first visit opens (all of them) and computes into (not those whose tile
        # reads only padding with the visit's taps: their zeros are stored, and a later visit loads them)
        fresh: Any = self.word
        for d in self.plain_dims:
            if d in self.idx[self.out_t]:
                fresh = fresh * self.ext[d]
        for g, pi in zip(self.groups, pair_index):
            fresh = fresh * _pick(above[self.out_t][g.k], g.computed_first[pi], g.computed_all[pi])
        return OperandAccesses(input_reads, weight_reads, output_writes - fresh, output_writes)

    def _tensor_counts(self, x: int, seen: dict, entry: list, slide: int) -> TensorCounts:
        """Tensor x's counts but its box (see the module docstring); seen: the trips of its loops above; entry: its
        entry in each window table; slide: the window group it slides along, or -1 (its scope then sits outside
        the group's output loop, so that loop's trips are not scope instances)."""
        nonidx: Any = 1
        for d in self.nonidx[x]:
            if d in seen:
                nonidx = nonidx * seen[d]
        instances = elem = boxes = nonidx
        for d in self.plain_axes[x]:
            elem = elem * self.ext[d]
            if d in seen:
                boxes = boxes * seen[d]
                instances = instances * seen[d]
        for v in self.window_axes[x]:
            g = self.groups[v]
            slid = _equal(slide, v)
            # a tensor that slides (along any group) keeps dense boxes; the others load strided ones
            elem = elem * _pick(slid, g.slid_total[entry[v]],
                                _pick(_at_least(slide, 0), g.total[entry[v]], g.strided_total[entry[v]]))
            boxes = boxes * _pick(slid, g.slid_loads[entry[v]], g.boxes[entry[v]])
            for d in (g.o, g.k):
                if d in seen:
                    instances = instances * (_pick(slid, 1, seen[d]) if d == g.o else seen[d])
        if x == self.out_t:  # R = nonidx visits: the first opens zeros, the others reload the partial sums
            size = self.sizes[x] * self.word
            return TensorCounts(loaded_bytes=(nonidx - 1) * size, stored_bytes=nonidx * size,
                                loads=instances - instances // nonidx, stores=instances, instances=instances)
        return TensorCounts(loaded_bytes=elem * self.word, stored_bytes=0, loads=boxes, stores=0, instances=instances)

    @staticmethod
    def _combo(x: int, g: _WindowTable, above: list, tiled: set):
        ao = above[x][g.o] if g.o in tiled else False
        ak = above[x][g.k] if g.k in tiled else False
        if isinstance(ao, (bool, np.bool_)) and isinstance(ak, (bool, np.bool_)):
            return 2 * int(ao) + int(ak)
        return 2 * np.asarray(ao, np.int64) + np.asarray(ak, np.int64)

    def _peak(self, b: Batch, entries: list, tiled: set, exact: bool, slide: list[int]) -> tuple[Any, list]:
        """max over the window-group tile classes of sum(ways x box); and each tensor's largest box (one way).

        A window group (output position, tap) has four tile classes (not-last / last for each loop); within a
        class every box is constant, so the maximum over the class combinations of all groups is exact. A sliding
        tensor's rotating buffer holds its sweep's largest box in both output-tile classes of its group."""
        opts = []
        for g in self.groups:
            cl = [(ci, cj) for ci in ((0, 1) if g.o in tiled else (1,)) for cj in ((0, 1) if g.k in tiled else (1,))]
            opts.append(cl if exact else cl[:1])  # one class per group: every loop at its first tile (a lower bound)
        terms = [self._box_terms(x, b, entries[x], tiled, opts, slide[x]) for x in range(self.nt)]
        # a box is largest in the largest class of each group (the classes of different groups vary independently)
        boxes = [math.prod((functools.reduce(_max, tg.values()) for tg in tx if tg is not None), start=base)
                 for base, tx in terms]

        def live(gi: int, partial: list):  # the largest live bytes over the classes of groups gi, gi + 1, ...
            if gi == len(self.groups):
                return functools.reduce(operator.add, partial)
            per_class = (live(gi + 1, [p if tx[gi] is None else p * tx[gi][cl] for p, (_, tx) in zip(partial, terms)])
                         for cl in opts[gi])
            return functools.reduce(_max, per_class)

        return live(0, [base * w for (base, _), w in zip(terms, b.ways)]), boxes

    def _box_terms(self, x: int, b: Batch, entry: list, tiled: set, opts: list, slide: int) -> tuple[Any, list]:
        """Tensor x's box (bytes, one way) as base x the product over window groups g of terms[g][class] (None:
        the box does not depend on g's class); sliding along group `slide`, the larger of its output classes."""
        base: Any = self.word
        terms: list[dict | None] = [None] * len(self.groups)

        def times(v: int, vals: dict) -> None:
            terms[v] = vals if terms[v] is None else {cl: terms[v][cl] * vals[cl] for cl in terms[v]}

        for v in self.window_axes[x]:
            cls, slid, sliding = self.groups[v].cls, _equal(slide, v), _at_least(slide, 0)
            scls = self.groups[v].strided_cls
            times(v, {cl: _pick(slid, _max(cls[0, cl[1]][entry[v]], cls[1, cl[1]][entry[v]]),
                                _pick(sliding, cls[cl][entry[v]], scls[cl][entry[v]]))
                      for cl in opts[v]})
        for d in self.plain_axes[x]:
            if d not in tiled:
                base = base * self.ext[d]
                continue
            full = _pick(b.above[x][d], self.fine[d][b.tidx[d]], self.ext[d])
            if d not in self.group_of:
                base = base * full
                continue
            v, role = self.group_of[d]  # a plain axis over a window group's loop: its tile class sets its size
            last = _pick(b.above[x][d], self.last[d][b.tidx[d]], self.ext[d])
            times(v, {cl: (full if cl[role] == 0 else last) for cl in opts[v]})
        return base, terms

    def _estimate(self, tc, tensors: Sequence[TensorCounts], ways: Sequence, trips: dict, slide: Sequence):
        """A quick cycle estimate used to rank schedules (the timing simulator gives the real number).

        DMA time = per transfer dma_setup_cycles + bytes / dram_bytes_per_cycle (loads and stores added on a
        shared port, the larger of the two otherwise). The transfers of a 1-way scope with several instances
        cannot overlap the computes of the previous instance (its slot is busy), so (instances - 1)/instances of
        them add to the TensorCore time. Plus the first loads and the last output store (pipeline fill/drain),
        and ISSUE_CYCLES per tile compute, a stand-in for issuing each operation that the timing simulator does
        not charge: among schedules within a fraction of a percent it prefers fewer, larger operations. A sliding
        tensor's transfers each wait for the computes of the step before (its one rotating buffer), whatever its
        ways, so they count as a 1-way scope with one instance per transfer:
            estimate = max(tensorcore + exposed, dma) + first loads + last store + ISSUE_CYCLES x iterations.
        """
        port = ddr_port(self.hardware)
        load_total: Any = 0.0
        store_total: Any = 0.0
        exposed: Any = 0.0
        fill: Any = 0.0
        for x, t in enumerate(tensors):
            lc = busy_cycles(port, t.loads, t.loaded_bytes, whole=False)
            load_total = load_total + lc
            if x == self.out_t:
                sc = busy_cycles(port, t.stores, t.stored_bytes, whole=False)
                store_total = store_total + sc
                lc = lc + sc
                fill = fill + busy_cycles(port, 1, t.box_bytes, whole=False)
            else:
                fill = fill + (t.box_bytes > 0) * busy_cycles(port, 1, t.box_bytes, whole=False)
            slid = slide[x] >= 0 if isinstance(slide[x], np.ndarray) else bool(slide[x] >= 0)
            inst, w = _pick(slid, t.loads, t.instances), _pick(slid, 1, ways[x])
            if isinstance(inst, int) and inst <= 1 or isinstance(w, (int, np.integer)) and w != 1:
                continue
            if not isinstance(w, (int, np.integer)):  # 1-way scopes only (one instance adds 0 x lc anyway)
                lc = (w == 1) * lc
            exposed = exposed + lc * (inst - 1) / inst
        dma = port_cycles(port, load_total, store_total)
        return pipeline_estimate(tc, exposed, dma, fill, math.prod(trips.values()))


def call_factor(problem: Problem, dim: str) -> str:
    """Which factor of a TensorCore call (`dsasim.dataflow.FACTORS`) a plain dimension of `problem` is: its
    TensorCore input or output channels ("in", "out"), a dimension of the weight (the second input) otherwise
    ("groups": a conv's g), else a dimension of the output pixels ("pixels": n, a matmul's m)."""
    if dim == problem.tc_in_dim:
        return "in"
    if dim == problem.tc_out_dim:
        return "out"
    return "groups" if dim in problem.tensors[1].dims else "pixels"


def tensorcore_blocks(problem: Problem, hardware: Accelerator) -> dict[str, int]:
    """The problem's dimensions mapped to the TensorCore's input and output channels, with their block sizes
    (elements): they set the TensorCore cycles and the search's aligned tile sizes."""
    return {problem.tc_in_dim: hardware.tensorcore_in_channels, problem.tc_out_dim: hardware.tensorcore_out_channels}


def analyze(nest: LoopNest, hardware: Accelerator, strided_boxes: bool = True) -> Analysis:
    """The closed-form counts of `nest` on `hardware` (see the module docstring); equal to a traced run.

    A batch of one through `Evaluator` whose candidate tiles are the nest's own, in Python integers (exact at
    any size). strided_boxes: as the loop-nest kernel runs it (False: every box dense, a multi-level nest's
    outer nest)."""
    ev = Evaluator(nest.problem, hardware, [[t] for t in nest.tiles], python_ints=True, strided_boxes=strided_boxes)
    above = [[d in nest.above(t.name) for d in ev.dims] for t in ev.tensors]
    slide = [ev.slide_group(nest.slide_loop(t.name)) for t in ev.tensors]
    r = ev.evaluate(Batch(tidx=[0] * ev.nd, above=above, ways=list(nest.ways), shape=(), slide=slide))
    tensors = tuple(_tensor_model(nest, spec, c) for spec, c in zip(nest.problem.tensors, r.tensors))
    return Analysis(nest=nest, hardware=hardware.name, word_bytes=hardware.word_bytes, tensors=tensors,
                    loaded_bytes=r.loaded_bytes, stored_bytes=r.stored_bytes,
                    rmw_bytes=sum(t.rmw_bytes for t in tensors), loads=sum(t.loads for t in tensors),
                    stores=sum(t.stores for t in tensors), peak_sram_bytes=r.peak_sram_bytes, macs=r.macs,
                    padded_macs=padded_macs(hardware, r.tensorcore_cycles),
                    tensorcore_cycles=r.tensorcore_cycles, estimated_cycles=int(round(r.estimated_cycles)),
                    operand_bytes=r.operand_bytes)


def _tensor_model(nest: LoopNest, spec, c: TensorCounts) -> TensorModel:
    """A tensor's `TensorModel` from its counts: an output's reloads are its read-modify-writes, the other
    visits open zeros."""
    ways = nest.ways_of(spec.name)
    return TensorModel(name=spec.name, loop=nest.loop_of(spec.name), instances=c.instances,
                       loaded_bytes=c.loaded_bytes, stored_bytes=c.stored_bytes,
                       rmw_bytes=c.loaded_bytes if spec.output else 0, loads=c.loads, stores=c.stores,
                       opens=c.instances - c.loads if spec.output else 0, box_bytes=c.box_bytes,
                       buffer_bytes=ways * c.box_bytes, ways=ways)


# ------------------------------------------------------------------------------------------ reconciliation
@dataclass(frozen=True)
class Mismatch:
    """One quantity on which the model and the trace differ."""

    tensor: str  # '*' for whole-run quantities
    loop: str  # the loop the tensor's scope sits in (or 'innermost' for compute quantities)
    quantity: str
    model: int
    trace: int
    detail: str = ""

    def __str__(self) -> str:
        extra = f"; {self.detail}" if self.detail else ""
        who = "whole run" if self.tensor == "*" else f"{self.tensor} (staged in loop {self.loop})"
        return f"{who}: {self.quantity}: model {self.model:,} vs trace {self.trace:,}{extra}"


@dataclass
class Reconciliation:
    """The result of comparing `analyze` with a traced run; `ok` when they agree on every quantity."""

    nest: LoopNest
    analysis: Analysis
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def __str__(self) -> str:
        if self.ok:
            return f"model and trace agree on every quantity for {self.nest!r}"
        return "model and trace differ for " + repr(self.nest) + ":\n" + "\n".join(f"  {m}" for m in
                                                                                   self.mismatches)


def _instance_ranges(nest: LoopNest, tensor: str, instance: int) -> dict[str, tuple[int, int]]:
    """The tile of every loop above a tensor's scope in its `instance`-th scope instance."""
    loops = nest.order[:nest.scope_depth(tensor)]
    ranges: dict[str, tuple[int, int]] = {}
    for d in reversed(loops):
        n = nest.trips(d)
        i = instance % n
        instance //= n
        t = nest.tile(d)
        ranges[d] = (i * t, min((i + 1) * t, nest.problem.extents[d]))
    return {d: ranges[d] for d in loops}  # outermost first


def _trace_per_instance(nest: LoopNest, result, tensor: str) -> tuple[dict[int, int], dict[int, list]] | None:
    """Walk the trace: per scope instance of `tensor`'s scope, its loaded bytes and its open regions (in order);
    None without a trace."""
    trace = getattr(result, "trace", None)
    tid = next((i for i, t in enumerate(trace.tensors) if t.name == tensor), None) if trace is not None else None
    if tid is None:
        return None
    scope_name = nest.scope_name(tensor)
    scope_ids = {i for i, s in enumerate(trace.scopes) if s.path and s.path[-1] == scope_name}
    loaded: dict[int, int] = defaultdict(int)
    opens: dict[int, list] = defaultdict(list)
    current = None
    for ev in trace.events:
        k = ev[0]
        if k == ENTER and ev[1] in scope_ids:
            current = ev[2]
        elif k == EXIT and ev[1] in scope_ids:
            current = None
        elif current is not None and ev[2] == tid:
            if k == LOAD or k == SLIDE:
                loaded[current] += ev[4]
            elif k == OPEN:
                opens[current].append(tuple(ev[3]))
    return loaded, opens


def _swept_elements(nest: LoopNest, tensor: str, ranges: dict[str, tuple[int, int]]) -> int:
    """Elements a sliding tensor loads in one sweep of its slide loop (the outer loops at `ranges`): each box but
    the rows held before, box by box (the per-instance check of `slide_stats`' sums)."""
    loop = nest.slide_loop(tensor)
    axis = next(i for i, a in enumerate(nest.problem.tensor(tensor).axes) if a.dim == loop and a.is_window)
    extent, tile, held, total = nest.problem.extents[loop], nest.tile(loop), None, 0
    for start in range(0, extent, tile):
        box = nest.box(tensor, {**ranges, loop: (start, min(start + tile, extent))})
        if region_elements(box) == 0:
            continue
        first, stop = box[axis]
        kept = max(0, min(stop, held[1]) - max(first, held[0])) if held else 0
        total += (stop - first - kept) * region_elements(box) // (stop - first)
        held = first, stop
    return total


def _instance_differences(nest: LoopNest, result, tensor: str, word: int) -> tuple[str, str, int]:
    """Compare every scope instance of `tensor` with the model: (first instance whose loaded bytes differ,
    first instance whose opens differ, opens in the trace); empty strings when they agree or without a trace.

    The model: an input instance loads its box; an output instance opens its box as zeros (one OPEN, no DMA) on
    its first visit (every reduction loop above it at its first tile) and loads it (a read-modify-write) later.
    """
    traced = _trace_per_instance(nest, result, tensor)
    if traced is None:
        return "", "", -1
    loaded, opens = traced
    spec = nest.problem.tensor(tensor)
    red = [d for d in nest.order[:nest.scope_depth(tensor)] if d not in spec.dims]
    load_diff = open_diff = ""
    for inst in range(math.prod(nest.trips(d) for d in nest.order[:nest.scope_depth(tensor)])):
        ranges = _instance_ranges(nest, tensor, inst)
        box = nest.box(tensor, ranges, strided=not spec.output and not nest.slides(tensor))
        first_visit = all(ranges[d][0] == 0 for d in red)
        model_load = 0 if spec.output and first_visit else region_elements(box) * word
        if nest.slides(tensor):
            model_load = _swept_elements(nest, tensor, ranges) * word
        model_opens = [box] if spec.output and first_visit else []
        where = ", ".join(f"{d}=[{a}:{b})" for d, (a, b) in ranges.items() if nest.trips(d) > 1) or \
            "the only instance"
        if not load_diff and loaded.get(inst, 0) != model_load:
            load_diff = (f"first differing scope instance #{inst} ({where}): model loads {model_load:,} B, trace "
                         f"{loaded.get(inst, 0):,} B")
        if not open_diff and opens.get(inst, []) != model_opens:
            open_diff = (f"first scope instance with different opens #{inst} ({where}): model opens "
                         f"{model_opens or 'nothing'}, trace {opens.get(inst) or 'nothing'}")
        if load_diff and open_diff:
            break
    return load_diff, open_diff, sum(len(v) for v in opens.values())


def reconcile(nest: LoopNest, result, hardware: Accelerator) -> Reconciliation:
    """Compare `analyze(nest, hardware)` with a run of the generic kernel (`RunResult`, ideally with its trace).

    Checks per tensor loaded/stored/rmw bytes and load/store counts, and the run's peak SRAM, MACs and
    TensorCore cycles; with a trace, also every scope instance: its loaded bytes and its opens (the output
    regions zero-initialised on chip, which move no bytes and so no total would catch). Each difference names
    the tensor, the loop its scope sits in, and both numbers, and the first scope instance (with its loop
    indices) that differs.
    """
    model = analyze(nest, hardware)
    rec = Reconciliation(nest=nest, analysis=model)

    def differ(tensor: str, loop: str, quantity: str, model: int, trace: int, detail: str = "") -> None:
        rec.mismatches.append(Mismatch(tensor=tensor, loop=loop, quantity=quantity, model=model, trace=trace,
                                       detail=detail))

    if result.status != Status.OK:
        differ("*", "top", f"status {result.status}", 0, 0, result.message[:300])
        return rec
    traced = {t.name: t for t in result.tensors}
    for tm in model.tensors:
        tr = traced.get(tm.name)
        if tr is None:
            differ(tm.name, tm.loop, "present in trace", 1, 0)
            continue
        load_diff, open_diff, traced_opens = _instance_differences(nest, result, tm.name, model.word_bytes)
        for q in ("loaded_bytes", "stored_bytes", "rmw_bytes", "loads", "stores"):
            if getattr(tm, q) != getattr(tr, q):
                differ(tm.name, tm.loop, q, getattr(tm, q), getattr(tr, q), load_diff if q == "loaded_bytes" else "")
        if traced_opens >= 0 and (tm.opens != traced_opens or open_diff):
            differ(tm.name, tm.loop, "opens", tm.opens, traced_opens, open_diff)
        elif load_diff and tm.loaded_bytes == tr.loaded_bytes:
            # equal totals, different instances: bytes moved between scope instances
            differ(tm.name, tm.loop, "loaded_bytes per scope instance", tm.loaded_bytes, tr.loaded_bytes, load_diff)
    inner = "innermost " + (nest.order[-1] if nest.order else "top")
    for q in ("peak_sram_bytes", "macs", "tensorcore_cycles"):
        if getattr(model, q) != getattr(result, q):
            differ("*", "all" if q == "peak_sram_bytes" else inner, q, getattr(model, q), getattr(result, q))
    if result.access_counts is not None:
        reconcile_accesses(model.access_counts(), result.access_counts, differ,
                           {t.name: t.loop for t in model.tensors}, inner)
    return rec


def reconcile_accesses(model: AccessCounts, trace: AccessCounts, differ: Any, loops: dict[str, str],
                       inner: str) -> None:
    """Call `differ(tensor, loop, quantity, model, trace)` for every (tensor, level) read or write byte count and
    compute count on which two `AccessCounts` differ (a pair missing on one side counts 0 there)."""
    mine = {(t.tensor, t.level): t for t in model.tensors}
    theirs = {(t.tensor, t.level): t for t in trace.tensors}
    for key in list(mine) + [k for k in theirs if k not in mine]:
        for q in ("read_bytes", "write_bytes"):
            a = getattr(mine[key], q) if key in mine else 0
            b = getattr(theirs[key], q) if key in theirs else 0
            if a != b:
                differ(key[0], loops.get(key[0], "?"), f"{key[1]} {q}", a, b)
    for q in ("macs", "padded_macs", "vector_lane_ops"):
        if getattr(model, q) != getattr(trace, q):
            differ("*", inner, f"access counts {q}", getattr(model, q), getattr(trace, q))
