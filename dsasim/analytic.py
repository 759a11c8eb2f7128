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
from typing import NamedTuple, Sequence

from .hardware import Accelerator
from .loopnest import LoopNest, Problem, tile_count, window_rows

__all__ = ["fits_sram", "GroupStats", "group_stats", "TensorModel", "Analysis", "analyze", "estimate_cycles", "Mismatch",
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
    estimated_cycles: int  # an estimate (see estimate_cycles), not the timing simulation

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


ISSUE_CYCLES = 1  # per tile compute, in the estimate only (see estimate_cycles)


def estimate_cycles(hardware: Accelerator, tensorcore_cycles: float, loaded: Sequence[float],
                    stored: Sequence[float], loads: Sequence[float], stores: Sequence[float],
                    instances: Sequence[float], ways: Sequence[float], box_bytes: Sequence[float],
                    is_output: Sequence[bool], iterations: float = 0) -> float:
    """A quick cycle estimate used to rank schedules (the timing simulator gives the real number).

    DMA time = per transfer dma_setup_cycles + bytes / dram_bytes_per_cycle (loads and stores added on a
    shared port, the larger of the two otherwise). The transfers of a 1-way scope with several instances
    cannot overlap the computes of the previous instance (its slot is busy), so (instances - 1)/instances of
    them add to the TensorCore time. Plus the first loads and the last output store (pipeline fill/drain), and
    ISSUE_CYCLES per tile compute (`iterations`), a stand-in for issuing each operation that the timing simulator
    does not charge: among schedules within a fraction of a percent it prefers fewer, larger operations (and
    shorter traces):
        estimate = max(tensorcore + exposed, dma) + first loads + last store + ISSUE_CYCLES x iterations.
    Works elementwise on numpy arrays too.
    """
    setup = hardware.dma_setup_cycles
    bw = float(hardware.dram_bytes_per_cycle)
    load_total = 0.0
    store_total = 0.0
    exposed = 0.0
    fill = 0.0
    for ld, st, nl, ns, inst, w, box, out in zip(loaded, stored, loads, stores, instances, ways, box_bytes,
                                                 is_output):
        lc = nl * setup + ld / bw
        sc = ns * setup + st / bw
        load_total = load_total + lc
        store_total = store_total + sc
        single = (w == 1) * (inst > 1)
        exposed = exposed + single * (lc + sc) * (inst - 1) / inst
        if out:
            fill = fill + (setup + box / bw)
        else:
            fill = fill + (box > 0) * (setup + box / bw)
    if hardware.dram_shared_load_store:
        dma = load_total + store_total
    else:
        dma = _maximum(load_total, store_total)
    return _maximum(tensorcore_cycles + exposed, dma) + fill + ISSUE_CYCLES * iterations


def _maximum(a, b):
    try:
        return max(a, b)
    except (TypeError, ValueError):
        import numpy as np
        return np.maximum(a, b)


def _dim_sum(extent: int, tile: int, block: int) -> int:
    """sum over the tiles of ceil(tile_len / block) (block 0: sum of tile lengths = extent)."""
    if block == 0:
        return extent
    n = tile_count(extent, tile)
    last = extent - (n - 1) * tile
    return (n - 1) * (-(-tile // block)) + (-(-last // block))


def analyze(nest: LoopNest, hardware: Accelerator) -> Analysis:
    """The closed-form counts of `nest` on `hardware` (see the module docstring); equal to a traced run."""
    p = nest.problem
    word = hardware.word_bytes
    ext = p.extents
    pos = {d: i for i, d in enumerate(nest.order)}
    trips = {d: nest.trips(d) for d in p.dims}
    tiles = nest.tile_map
    last = {d: ext[d] - (trips[d] - 1) * tiles[d] for d in p.dims}
    windows = p.windows
    group_of: dict[str, tuple[int, int]] = {}  # dim -> (window group, 0 = output position / 1 = tap)
    for g, a in enumerate(windows):
        group_of[a.dim] = (g, 0)
        group_of[a.tap] = (g, 1)

    models = []
    ext_fns = []  # per tensor: function(classes) -> box elements
    for spec, depth, ways in zip(p.tensors, nest.stage, nest.buffers):
        above = {d: pos[d] < depth for d in p.dims}
        idx = spec.dims
        nonidx = math.prod(trips[d] for d in p.dims if above[d] and d not in idx)
        elem_sum = nonidx
        boxes = nonidx
        axis_ext = []
        for a in spec.axes:
            if a.tap is None:
                d = a.dim
                elem_sum *= ext[d]
                boxes *= trips[d] if above[d] else 1
                axis_ext.append(("plain", d, above[d]))
            else:
                gs = group_stats(ext[a.dim], ext[a.tap], a.stride, a.dilation, a.padding, a.size,
                                 tiles[a.dim] if above[a.dim] else ext[a.dim],
                                 tiles[a.tap] if above[a.tap] else ext[a.tap])
                elem_sum *= gs.total
                boxes *= gs.boxes
                axis_ext.append(("window", group_of[a.dim][0], gs.cls_max))
        instances = math.prod(trips[d] for d in p.dims if above[d])
        ext_fns.append((axis_ext, ways))
        if spec.output:
            size = p.elements(spec.name)
            distinct = boxes // nonidx
            loaded = (nonidx - 1) * size * word
            stored = nonidx * size * word
            models.append([spec.name, nest.loop_of(spec.name), instances, loaded, stored, loaded,
                           instances - distinct, instances, distinct, 0, 0, ways])
        else:
            models.append([spec.name, nest.loop_of(spec.name), instances, elem_sum * word, 0, 0, boxes, 0, 0, 0,
                           0, ways])

    def axis_value(item, classes) -> int:
        if item[0] == "window":
            ci, cj = classes[item[1]]
            return item[2][ci][cj]
        _, d, is_above = item
        if not is_above:
            return ext[d]
        if d in group_of:
            g, role = group_of[d]
            cls = classes[g][role]
            if trips[d] > 1 and cls == 0:
                return tiles[d]
            return last[d]
        return tiles[d]

    peak = 0
    box_max = [0] * len(p.tensors)
    for classes in itertools.product(((0, 0), (0, 1), (1, 0), (1, 1)), repeat=len(windows)):
        live = 0
        for i, (axis_ext, ways) in enumerate(ext_fns):
            box = math.prod(axis_value(item, classes) for item in axis_ext) * word
            box_max[i] = max(box_max[i], box)
            live += ways * box
        peak = max(peak, live)
    for m, box in zip(models, box_max):
        m[9] = box
        m[10] = box * m[11]
    tensors = tuple(TensorModel(*m) for m in models)

    # MACs and TensorCore cycles
    inner_valid = 1
    for a in windows:
        gs = group_stats(ext[a.dim], ext[a.tap], a.stride, a.dilation, a.padding, a.size, tiles[a.dim],
                         tiles[a.tap])
        inner_valid *= gs.valid
    plain_dims = [d for d in p.dims if d not in group_of]
    macs = math.prod(ext[d] for d in plain_dims) * inner_valid
    blocks = {p.tc_in_dim: hardware.tensorcore_in_channels, p.tc_out_dim: hardware.tensorcore_out_channels}
    cycles = math.prod(_dim_sum(ext[d], tiles[d], blocks.get(d, 0)) for d in plain_dims) * inner_valid
    padded = cycles * hardware.tensorcore_in_channels * hardware.tensorcore_out_channels

    est = estimate_cycles(hardware, cycles, [t.loaded_bytes for t in tensors], [t.stored_bytes for t in tensors],
                          [t.loads for t in tensors], [t.stores for t in tensors],
                          [t.instances for t in tensors], [t.ways for t in tensors],
                          [t.box_bytes for t in tensors], [s.output for s in p.tensors], nest.iterations())
    return Analysis(nest, hardware.name, word, tensors, sum(t.loaded_bytes for t in tensors),
                    sum(t.stored_bytes for t in tensors), sum(t.rmw_bytes for t in tensors),
                    sum(t.loads for t in tensors), sum(t.stores for t in tensors), peak, macs, padded, cycles,
                    int(round(est)))


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
    from .trace import ENTER, EXIT, LOAD, OPEN
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
