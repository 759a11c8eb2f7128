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
  grow with the extent. Halos, stride, dilation and ragged tiles are therefore exact.
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

`analyze(nest, hardware)` gives an `Analysis`; `reconcile(nest, result)` compares it with a traced run and
names the tensor, its loop and both numbers for every difference.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Sequence

import numpy as np

from dsasim.hardware import Accelerator
from dsasim.geometry import window_rows
from dsasim.architect.loopnest import LoopNest, Problem, last_tile, tile_count

__all__ = ["fits_sram", "GroupStats", "group_stats", "TensorModel", "Analysis", "analyze", "Evaluator", "Evaluation",
           "TensorCounts", "Batch", "Mismatch",
           "Reconciliation", "reconcile"]


def fits_sram(peak_sram_bytes, sram_bytes):
    """The one capacity rule (bytes): a schedule fits when its peak live bytes are at most sram_bytes.

    A peak equal to the capacity fits, as in the memory model (`SramOverflowError` only when live bytes exceed
    sram_bytes). The search, the SRAM sweep and `Analysis.fits` all use it; works elementwise on numpy arrays."""
    return peak_sram_bytes <= sram_bytes


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


def group_stats(o_ext: int, k_ext: int, stride: int, dilation: int, padding: int, size: int, o_tile: int,
                k_tile: int) -> GroupStats:
    """`GroupStats` of a window axis with output extent o_ext tiled by o_tile and taps k_ext tiled by k_tile.

    Pass o_tile = o_ext (k_tile = k_ext) when the loop is not above the staging point (one full range).
    Interior pairs are summed in closed form; border pairs (clipped by the image edge) one by one.
    """
    s, d, p, h = stride, dilation, padding, size
    to_n = tile_count(o_ext, o_tile)
    tk_n = tile_count(k_ext, k_tile)
    o_last = o_ext - (to_n - 1) * o_tile
    k_last = k_ext - (tk_n - 1) * k_tile
    # sum over all pairs of the unclipped window (o_len - 1)*s + (k_len - 1)*d + 1
    total = tk_n * s * (o_ext - to_n) + to_n * d * (k_ext - tk_n) + to_n * tk_n
    boxes = to_n * tk_n
    valid = o_ext * k_ext
    o_len = (o_tile, o_last)
    k_len = (k_tile, k_last)
    o_cnt = (to_n - 1, 1)
    k_cnt = (tk_n - 1, 1)
    clipped = [[0, 0], [0, 0]]
    clip_max = [[0, 0], [0, 0]]
    step = o_tile * s
    for j in range(tk_n):
        t0 = j * k_tile
        t1 = min(t0 + k_tile, k_ext)
        kl = t1 - t0
        cj = 1 if j == tk_n - 1 else 0
        num = p - t0 * d  # output tiles i < a start above row 0
        a = 0 if num <= 0 else min(to_n, -(-num // step))
        y = h + s + p - (t1 - 1) * d  # not-last tiles i >= b end below row h - 1
        b = max(0, -(-y // step) - 1)
        candidates = itertools.chain(range(a), range(max(a, min(b, to_n - 1)), to_n))
        for i in candidates:
            o0 = i * o_tile
            o1 = min(o0 + o_tile, o_ext)
            lo = o0 * s + t0 * d - p
            hi = (o1 - 1) * s + (t1 - 1) * d - p
            if lo >= 0 and hi < h:
                continue
            first, stop = window_rows(o0, o1, t0, t1, s, d, p, h)
            rows = stop - first
            total += rows - (hi - lo + 1)
            if rows == 0:
                boxes -= 1
                valid -= (o1 - o0) * kl
            ci = 1 if i == to_n - 1 else 0
            clipped[ci][cj] += 1
            if rows > clip_max[ci][cj]:
                clip_max[ci][cj] = rows
    cls = [[0, 0], [0, 0]]
    for ci in (0, 1):
        for cj in (0, 1):
            sci = ci if o_cnt[ci] else 1
            scj = cj if k_cnt[cj] else 1
            if o_cnt[sci] * k_cnt[scj] > clipped[sci][scj]:  # an interior pair exists: the unclipped window
                cls[ci][cj] = (o_len[sci] - 1) * s + (k_len[scj] - 1) * d + 1
            else:
                cls[ci][cj] = clip_max[sci][scj]
    return GroupStats(total, boxes, valid, ((cls[0][0], cls[0][1]), (cls[1][0], cls[1][1])))


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

    @property
    def traffic_bytes(self) -> int:
        """loaded + stored bytes."""
        return self.loaded_bytes + self.stored_bytes

    def tensor(self, name: str) -> TensorModel:
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(name)

    def fits(self, sram_bytes: int) -> bool:
        """True when the peak fits in sram_bytes (`fits_sram`)."""
        return bool(fits_sram(self.peak_sram_bytes, sram_bytes))

    def summary(self) -> str:
        lines = [f"loaded {self.loaded_bytes:,} B, stored {self.stored_bytes:,} B (rmw {self.rmw_bytes:,} B), "
                 f"peak SRAM {self.peak_sram_bytes:,} B, {self.macs:,} MACs, {self.tensorcore_cycles:,} "
                 f"TensorCore cycles, ~{self.estimated_cycles:,} cycles (estimate)"]
        for t in self.tensors:
            lines.append(f"  {t.name:<8} @{t.loop:<4} x{t.instances:<8,} loaded {t.loaded_bytes:>14,} B  stored "
                         f"{t.stored_bytes:>14,} B  buffer {t.buffer_bytes:>12,} B ({t.ways}-way)")
        return "\n".join(lines)


ISSUE_CYCLES = 1  # per tile compute, in the cycle estimate only (see Evaluator.evaluate)


# ------------------------------------------------------------------------------------------ the one model
@dataclass
class Batch:
    """Candidate nests as arrays broadcastable to `shape`: tidx[d] (index into Evaluator.fine[d]), above[x][d]
    (bool: loop d above tensor x's staging), ways[x]; `tiled` lists the dims that may have several trips (None:
    all). Scalars (Python ints and bools) make a batch of one."""

    tidx: list
    above: list
    ways: list
    shape: tuple[int, ...]
    tiled: list[int] | None = None

    @property
    def n(self) -> int:
        return math.prod(self.shape)

    def select(self, sel: np.ndarray) -> "Batch":
        """The flat-indexed candidates `sel` as a 1-d batch."""
        idx = np.unravel_index(sel, self.shape)

        def take(a):
            if isinstance(a, np.ndarray):
                return np.broadcast_to(a, self.shape)[idx]
            return a

        return Batch([take(a) for a in self.tidx], [[take(a) for a in row] for row in self.above],
                     [take(a) for a in self.ways], (len(sel),), self.tiled)


class TensorCounts(NamedTuple):
    """One tensor's counts over a batch (arrays or scalars): bytes moved, DMA transfers, scope instances and its
    largest box (bytes, one way)."""

    loaded_bytes: Any
    stored_bytes: Any
    loads: Any
    stores: Any
    instances: Any
    box_bytes: Any


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

    @property
    def traffic_bytes(self) -> Any:
        return self.loaded_bytes + self.stored_bytes


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
    cls: tuple[np.ndarray, ...]  # per class (ci, cj) in order (0,0), (0,1), (1,0), (1,1)
    valid: np.ndarray  # both loops above (MAC weight), entry io * nk + ik


def _is_true(a) -> bool:
    return a is True or (isinstance(a, np.bool_) and bool(a))


def _pick(a, yes, no):
    """yes where the above flag a holds, else no (a: bool or bool array)."""
    if a is True or a is False or isinstance(a, np.bool_):
        return yes if a else no
    return np.where(a, yes, no)


def _max(a, b):
    """Elementwise maximum that keeps Python ints Python ints (exact beyond int64)."""
    if isinstance(a, int) and isinstance(b, int):
        return a if a >= b else b
    return np.maximum(a, b)


class Evaluator:
    """The analytic model's tables for a problem over candidate tile sizes `fine[d]` per dimension, and the one
    evaluation of a `Batch` of nests. python_ints: tables of Python ints (exact at any size; `analyze`),
    else int64 (the vectorised search)."""

    def __init__(self, problem: Problem, hardware: Accelerator, fine: Sequence[Sequence[int]],
                 python_ints: bool = False) -> None:
        p = problem
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

        self.blocks = tensorcore_blocks(p, hardware)
        self.fine = [arr(int(v) for v in f) for f in fine]
        self.ext = [p.extents[d] for d in self.dims]
        self.trips = [arr(tile_count(e, int(v)) for v in f) for e, f in zip(self.ext, self.fine)]
        self.last = [arr(last_tile(e, int(v)) for v in f) for e, f in zip(self.ext, self.fine)]
        self.tcsum = [arr(_dim_sum(e, int(v), self.blocks.get(d, 0)) for v in f)
                      for d, e, f in zip(self.dims, self.ext, self.fine)]
        self.groups: list[_WindowTable] = []
        self.group_of: dict[str, tuple[int, int]] = {}  # dim -> (window group, 0 output position / 1 tap)
        for g, a in enumerate(p.windows):
            self.groups.append(self._window_table(a, arr))
            self.group_of[a.dim] = (g, 0)
            self.group_of[a.tap] = (g, 1)
        self.group_of_idx = {self.dim_index[d]: v for d, v in self.group_of.items()}
        self.idx = [[self.dim_index[d] for d in self.dims if d in t.dims] for t in self.tensors]
        self.nonidx = [[self.dim_index[d] for d in self.dims if d not in t.dims] for t in self.tensors]
        self.axes = [[("plain", self.dim_index[a.dim]) if a.tap is None else ("window", self.group_of[a.dim][0])
                      for a in t.axes] for t in self.tensors]
        self.out_t = next(i for i, t in enumerate(self.tensors) if t.output)
        self.sizes = [problem.elements(t.name) for t in self.tensors]
        self.plain_dims = [i for i, d in enumerate(self.dims) if d not in self.group_of]
        self.plain_extent = math.prod(self.ext[d] for d in self.plain_dims)

    def _window_table(self, a, arr) -> _WindowTable:
        io, ik = self.dim_index[a.dim], self.dim_index[a.tap]
        fo, fk = [int(v) for v in self.fine[io]], [int(v) for v in self.fine[ik]]
        O, K = self.problem.extents[a.dim], self.problem.extents[a.tap]
        cache: dict[tuple[int, int], GroupStats] = {}
        stats = []  # combo-major, then output tile, then tap tile
        for combo in range(4):
            ao, ak = combo >> 1, combo & 1
            for to in fo:
                for tk in fk:
                    key = (to if ao else O, tk if ak else K)
                    if key not in cache:
                        cache[key] = group_stats(O, K, a.stride, a.dilation, a.padding, a.size, *key)
                    stats.append(cache[key])
        both = stats[3 * len(fo) * len(fk):]
        return _WindowTable(io, ik, len(fk), len(fo) * len(fk), arr(s.total for s in stats),
                            arr(s.boxes for s in stats),
                            tuple(arr(s.cls_max[ci][cj] for s in stats) for ci in (0, 1) for cj in (0, 1)),
                            arr(s.valid for s in both))

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
        flats = [[self._combo(x, g, above, tiled) * g.size + pi for g, pi in zip(self.groups, pair_index)]
                 for x in range(self.nt)]
        counts = [self._tensor_counts(x, seen[x], flats[x]) for x in range(self.nt)]
        peak, boxes = self._peak(b, flats, tiled, exact)
        valid: Any = 1
        for g, pi in zip(self.groups, pair_index):
            valid = valid * g.valid[pi]
        cycles: Any = valid
        for d in self.plain_dims:
            cycles = cycles * (self.tcsum[d][tidx[d]] if d in tiled else self.tcsum[d][0])
        tensors = tuple(TensorCounts(*c, box) for c, box in zip(counts, boxes))
        loaded = stored = 0
        for c in counts:
            loaded = loaded + c[0]
            stored = stored + c[1]
        est = self._estimate(cycles, tensors, b.ways, T) if estimate else None
        return Evaluation(loaded, stored, peak, exact, self.plain_extent * valid, cycles, est, tensors)

    def _tensor_counts(self, x: int, row: dict, flat: list) -> tuple:
        """(loaded bytes, stored bytes, loads, stores, instances) of tensor x (see the module docstring)."""
        nonidx: Any = 1
        for d in self.nonidx[x]:
            if d in row:
                nonidx = nonidx * row[d]
        instances = elem = boxes = nonidx
        for kind, v in self.axes[x]:
            if kind == "plain":
                elem = elem * self.ext[v]
                if v in row:
                    boxes = boxes * row[v]
                    instances = instances * row[v]
            else:
                g = self.groups[v]
                elem = elem * g.total[flat[v]]
                boxes = boxes * g.boxes[flat[v]]
                for d in (g.o, g.k):
                    if d in row:
                        instances = instances * row[d]
        if x == self.out_t:  # R = nonidx visits: the first opens zeros, the others reload the partial sums
            size = self.sizes[x] * self.word
            return (nonidx - 1) * size, nonidx * size, instances - instances // nonidx, instances, instances
        return elem * self.word, 0, boxes, 0, instances

    @staticmethod
    def _combo(x: int, g: _WindowTable, above: list, tiled: set):
        ao = above[x][g.o] if g.o in tiled else False
        ak = above[x][g.k] if g.k in tiled else False
        if isinstance(ao, (bool, np.bool_)) and isinstance(ak, (bool, np.bool_)):
            return 2 * int(ao) + int(ak)
        return 2 * np.asarray(ao, np.int64) + np.asarray(ak, np.int64)

    def _peak(self, b: Batch, flats: list, tiled: set, exact: bool = True) -> tuple[Any, list]:
        """max over the window-group tile classes of sum(ways x box); and each tensor's largest box (one way).

        A window group (output position, tap) has four tile classes (not-last / last for each loop); within a
        class every box is constant, so the maximum over the class combinations of all groups is exact."""
        ng = len(self.groups)
        class_opts = []
        for g in self.groups:
            co = (0, 1) if g.o in tiled else (1,)
            ck = (0, 1) if g.k in tiled else (1,)
            class_opts.append([(ci, cj) for ci in co for cj in ck])
        if not exact:  # one class per group: every loop at its first tile (a lower bound of the peak)
            class_opts = [opts[:1] for opts in class_opts]
        bases = []
        terms: list[list[dict | None]] = []
        for x in range(self.nt):
            base: Any = self.word
            tx: list[dict | None] = [None] * ng
            for kind, v in self.axes[x]:
                if kind == "window":
                    g = self.groups[v]
                    vals = {(ci, cj): g.cls[2 * ci + cj][flats[x][v]] for ci, cj in class_opts[v]}
                elif v in tiled:
                    d, a = v, b.above[x][v]
                    full = _pick(a, self.fine[d][b.tidx[d]], self.ext[d])
                    if d not in self.group_of_idx:
                        base = base * full
                        continue
                    v, role = self.group_of_idx[d]  # a plain axis of a window group's loop: its tile class
                    lst = _pick(a, self.last[d][b.tidx[d]], self.ext[d])
                    vals = {cl: (full if cl[role] == 0 else lst) for cl in class_opts[v]}
                else:
                    base = base * self.ext[v]
                    continue
                if tx[v] is None:
                    tx[v] = vals
                else:
                    tx[v] = {cl: tx[v][cl] * vals[cl] for cl in tx[v]}
            bases.append(base)
            terms.append(tx)
        boxes = []  # the classes of different groups vary independently
        for x in range(self.nt):
            box = bases[x]
            for tg in terms[x]:
                if tg is not None:
                    vals = list(tg.values())
                    m = vals[0]
                    for v in vals[1:]:
                        m = _max(m, v)
                    box = box * m
            boxes.append(box)

        def rec(gi: int, partial: list):
            if gi == ng:
                live = partial[0]
                for v in partial[1:]:
                    live = live + v
                return live
            best = None
            for cl in class_opts[gi]:
                v = rec(gi + 1, [p if terms[x][gi] is None else p * terms[x][gi][cl] for x, p in enumerate(partial)])
                best = v if best is None else _max(best, v)
            return best

        return rec(0, [bases[x] * b.ways[x] for x in range(self.nt)]), boxes

    def _estimate(self, tc, tensors: Sequence[TensorCounts], ways: Sequence, trips: dict):
        """A quick cycle estimate used to rank schedules (the timing simulator gives the real number).

        DMA time = per transfer dma_setup_cycles + bytes / dram_bytes_per_cycle (loads and stores added on a
        shared port, the larger of the two otherwise). The transfers of a 1-way scope with several instances
        cannot overlap the computes of the previous instance (its slot is busy), so (instances - 1)/instances of
        them add to the TensorCore time. Plus the first loads and the last output store (pipeline fill/drain),
        and ISSUE_CYCLES per tile compute, a stand-in for issuing each operation that the timing simulator does
        not charge: among schedules within a fraction of a percent it prefers fewer, larger operations:
            estimate = max(tensorcore + exposed, dma) + first loads + last store + ISSUE_CYCLES x iterations.
        """
        hw = self.hardware
        setup = float(hw.dma_setup_cycles)  # exact: counts x setup stay below 2**53
        bw = float(hw.dram_bytes_per_cycle)
        load_total: Any = 0.0
        store_total: Any = 0.0
        exposed: Any = 0.0
        fill: Any = 0.0
        for x, t in enumerate(tensors):
            lc = t.loads * setup + t.loaded_bytes / bw
            load_total = load_total + lc
            if x == self.out_t:
                sc = t.stores * setup + t.stored_bytes / bw
                store_total = store_total + sc
                lc = lc + sc
                fill = fill + (setup + t.box_bytes / bw)
            else:
                fill = fill + (t.box_bytes > 0) * (setup + t.box_bytes / bw)
            inst, w = t.instances, ways[x]
            if isinstance(inst, int) and inst <= 1 or isinstance(w, (int, np.integer)) and w != 1:
                continue
            if not isinstance(w, (int, np.integer)):  # 1-way scopes only (one instance adds 0 x lc anyway)
                lc = (w == 1) * lc
            exposed = exposed + lc * (inst - 1) / inst
        dma = load_total + store_total if hw.dram_shared_load_store else _max(load_total, store_total)
        iterations: Any = 1
        for v in trips.values():
            iterations = iterations * v
        return _max(tc + exposed, dma) + fill + ISSUE_CYCLES * iterations


def tensorcore_blocks(problem: Problem, hardware: Accelerator) -> dict[str, int]:
    """The problem's dimensions mapped to the TensorCore's input and output channels, with their block sizes
    (elements): they set the TensorCore cycles and the search's aligned tile sizes."""
    return {problem.tc_in_dim: hardware.tensorcore_in_channels, problem.tc_out_dim: hardware.tensorcore_out_channels}


def _dim_sum(extent: int, tile: int, block: int) -> int:
    """sum over the tiles of ceil(tile_len / block) (block 0: sum of tile lengths = extent)."""
    if block == 0:
        return extent
    n = tile_count(extent, tile)
    return (n - 1) * (-(-tile // block)) + (-(-last_tile(extent, tile) // block))


def nest_batch(evaluator: Evaluator, nest: LoopNest) -> Batch:
    """The batch of one nest for an evaluator whose candidate tiles are the nest's own (`analyze`)."""
    above = [[d in set(nest.above(t.name)) for d in evaluator.dims] for t in evaluator.tensors]
    return Batch([0] * evaluator.nd, above, list(nest.ways), ())


def analyze(nest: LoopNest, hardware: Accelerator) -> Analysis:
    """The closed-form counts of `nest` on `hardware` (see the module docstring); equal to a traced run.

    A batch of one through `Evaluator`, in Python integers (exact at any size)."""
    ev = Evaluator(nest.problem, hardware, [[t] for t in nest.tiles], python_ints=True)
    r = ev.evaluate(nest_batch(ev, nest))
    tensors = tuple(_tensor_model(nest, spec, c) for spec, c in zip(nest.problem.tensors, r.tensors))
    padded = r.tensorcore_cycles * hardware.tensorcore_in_channels * hardware.tensorcore_out_channels
    return Analysis(nest, hardware.name, hardware.word_bytes, tensors, r.loaded_bytes, r.stored_bytes,
                    sum(t.rmw_bytes for t in tensors), sum(t.loads for t in tensors), sum(t.stores for t in tensors),
                    r.peak_sram_bytes, r.macs, padded, r.tensorcore_cycles, int(round(r.estimated_cycles)))


def _tensor_model(nest: LoopNest, spec, c: TensorCounts) -> TensorModel:
    """A tensor's `TensorModel` from its counts: an output's reloads are its read-modify-writes, the other
    visits open zeros."""
    ways = nest.ways_of(spec.name)
    rmw = c.loaded_bytes if spec.output else 0
    opens = c.instances - c.loads if spec.output else 0
    return TensorModel(spec.name, nest.loop_of(spec.name), c.instances, c.loaded_bytes, c.stored_bytes, rmw,
                       c.loads, c.stores, opens, c.box_bytes, ways * c.box_bytes, ways)


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
    """The tile of every loop above a tensor's staging point in its `instance`-th scope instance."""
    loops = nest.above(tensor)
    ranges: dict[str, tuple[int, int]] = {}
    for d in reversed(loops):
        n = nest.trips(d)
        i = instance % n
        instance //= n
        t = nest.tile(d)
        ranges[d] = (i * t, min((i + 1) * t, nest.problem.extents[d]))
    return {d: ranges[d] for d in loops}  # outermost first


def _trace_per_instance(nest: LoopNest, result, tensor: str) -> dict[int, list] | None:
    """Walk the trace: per scope instance of `tensor`'s scope, [loaded bytes, open regions (in order)]; None
    without a trace."""
    trace = getattr(result, "trace", None)
    if trace is None:
        return None
    from dsasim.traced.trace import ENTER, EXIT, LOAD, OPEN
    try:
        tid = next(i for i, t in enumerate(trace.tensors) if t.name == tensor)
    except StopIteration:
        return None
    scope_name = nest.scope_name(tensor)
    scope_ids = {i for i, s in enumerate(trace.scopes) if s.path and s.path[-1] == scope_name}
    per_instance: dict[int, list] = {}
    current = None
    for ev in trace.events:
        k = ev[0]
        if k == ENTER and ev[1] in scope_ids:
            current = ev[2]
            per_instance.setdefault(current, [0, []])
        elif k == EXIT and ev[1] in scope_ids:
            current = None
        elif current is not None and ev[2] == tid:
            if k == LOAD:
                per_instance[current][0] += ev[4]
            elif k == OPEN:
                per_instance[current][1].append(tuple(ev[3]))
    return per_instance


def _instance_differences(nest: LoopNest, result, tensor: str, word: int) -> tuple[str, str, int]:
    """Compare every scope instance of `tensor` with the model: (first instance whose loaded bytes differ,
    first instance whose opens differ, opens in the trace); empty strings when they agree or without a trace.

    The model: an input instance loads its box; an output instance opens its box as zeros (one OPEN, no DMA) on
    its first visit (every reduction loop above it at its first tile) and loads it (a read-modify-write) later.
    """
    per_instance = _trace_per_instance(nest, result, tensor)
    if per_instance is None:
        return "", "", -1
    spec = nest.problem.tensor(tensor)
    red = [d for d in nest.above(tensor) if d not in spec.dims]
    instances = math.prod(nest.trips(d) for d in nest.above(tensor))
    load_diff = open_diff = ""
    traced_opens = sum(len(v[1]) for v in per_instance.values())
    for inst in range(instances):
        ranges = _instance_ranges(nest, tensor, inst)
        box = nest.box(tensor, ranges)
        elems = math.prod(b - a for a, b in box)
        first_visit = all(ranges[d][0] == 0 for d in red)
        if spec.output:
            model_load = 0 if first_visit else elems * word
            model_opens = [box] if first_visit else []
        else:
            model_load = elems * word
            model_opens = []
        got_load, got_opens = per_instance.get(inst, [0, []])
        where = ", ".join(f"{d}=[{a}:{b})" for d, (a, b) in ranges.items() if nest.trips(d) > 1) or \
            "the only instance"
        if not load_diff and got_load != model_load:
            load_diff = (f"first differing scope instance #{inst} ({where}): model loads {model_load:,} B, trace "
                         f"{got_load:,} B")
        if not open_diff and got_opens != model_opens:
            open_diff = (f"first scope instance with different opens #{inst} ({where}): model opens "
                         f"{model_opens or 'nothing'}, trace {got_opens or 'nothing'}")
        if load_diff and open_diff:
            break
    return load_diff, open_diff, traced_opens


def reconcile(nest: LoopNest, result, hardware: Accelerator) -> Reconciliation:
    """Compare `analyze(nest, hardware)` with a run of the generic kernel (`RunResult`, ideally with its trace).

    Checks per tensor loaded/stored/rmw bytes and load/store counts, and the run's peak SRAM, MACs and
    TensorCore cycles; with a trace, also every scope instance: its loaded bytes and its opens (the output
    regions zero-initialised on chip, which move no bytes and so no total would catch). Each difference names
    the tensor, the loop its scope sits in, and both numbers, and the first scope instance (with its loop
    indices) that differs.
    """
    model = analyze(nest, hardware)
    rec = Reconciliation(nest, model)
    if getattr(result, "status", "ok") != "ok":
        rec.mismatches.append(Mismatch("*", "top", f"status {result.status}", 0, 0, result.message[:300]))
        return rec
    traced = {t.name: t for t in result.tensors}
    for tm in model.tensors:
        tr = traced.get(tm.name)
        if tr is None:
            rec.mismatches.append(Mismatch(tm.name, tm.loop, "present in trace", 1, 0))
            continue
        load_diff, open_diff, traced_opens = _instance_differences(nest, result, tm.name, model.word_bytes)
        for q in ("loaded_bytes", "stored_bytes", "rmw_bytes", "loads", "stores"):
            a, b = getattr(tm, q), getattr(tr, q)
            if a != b:
                rec.mismatches.append(Mismatch(tm.name, tm.loop, q, a, b, load_diff if q == "loaded_bytes" else ""))
        if traced_opens >= 0 and (tm.opens != traced_opens or open_diff):
            rec.mismatches.append(Mismatch(tm.name, tm.loop, "opens", tm.opens, traced_opens, open_diff))
        elif load_diff and not any(m.tensor == tm.name and m.quantity == "loaded_bytes" for m in rec.mismatches):
            # equal totals, different instances: bytes moved between scope instances
            rec.mismatches.append(Mismatch(tm.name, tm.loop, "loaded_bytes per scope instance", tm.loaded_bytes,
                                           tr.loaded_bytes, load_diff))
    inner = nest.order[-1] if nest.order else "top"
    for q, a, b in (("peak_sram_bytes", model.peak_sram_bytes, result.peak_sram_bytes),
                    ("macs", model.macs, result.macs),
                    ("tensorcore_cycles", model.tensorcore_cycles, result.tensorcore_cycles)):
        if a != b:
            rec.mismatches.append(Mismatch("*", "innermost " + inner if q != "peak_sram_bytes" else "all", q, a, b))
    return rec


def problem_tensor_bytes(problem: Problem, word_bytes: int) -> dict[str, int]:
    """DDR bytes of every tensor of a problem."""
    return {t.name: problem.elements(t.name) * word_bytes for t in problem.tensors}
