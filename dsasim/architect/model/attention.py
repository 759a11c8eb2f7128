"""The attention schedules' counts without tracing: `analyze_attention(schedule, hardware)`.

What every kind of `dsasim.architect.nests.attention_schedule` moves, computes and holds, counted from its
structure (no session, no data): per tensor the DMA loads, stores and opens (bytes and transfers; a load of a
region stored before is a read-modify-write), the TensorCore's MACs, padded MACs and cycles (`matmul_nt` for Q·Kᵀ,
`matmul` for P·V, both (rows, in, out) on the 16 x 24 block), the vector unit's lane operations and cycles (one
per element, a reduction one per input element: `dsasim.traced.tensorcore`), the compute units' operand reads and
writes per the hardware's dataflow (the output's reads being its writes less the fresh elements an accumulate finds
in a buffer opened as zeros), and the peak SRAM (each scope's buffers x its ways, nested scopes added).

The per-tile counts depend only on the tile's rows, keys and flags (first key tile of its row tile, partly masked,
last), so one (batch, K/V head) group is counted and multiplied by b·hkv; within the group each query head is
counted. Equal to the trace of `dsasim.kernels.attention_kernel` in every count (tests/test_attention.py checks it
on random schedules).

Closed forms the tests derive by hand: the unfused traffic per head, the compulsory traffic of a fused schedule
whose tiles hold everything, and FlashAttention's Algorithm 1 (kv-outer) HBM accesses.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from dsasim.architect.nests.attention_schedule import AttentionSchedule
from dsasim.cost import ddr_port, dma_cycles, overlapped_cycles
from dsasim.dataflow import DATAFLOWS
from dsasim.energy.accesses import AccessCounts, TensorAccesses
from dsasim.hardware import DDR, SRAM_LEVEL, Accelerator
from dsasim.util import ceil_div

__all__ = ["AttentionAnalysis", "analyze_attention", "TENSOR_ORDER"]

# tensors in the order the kernel creates them (inputs, DDR intermediates, output, on-chip)
TENSOR_ORDER = ("Q", "K", "V", "S", "P", "M", "L", "O", "S_chip", "P_chip", "rowmax", "rowsum", "newmax", "alpha")
_LOADED, _STORED, _RMW, _LOADS, _STORES, _OPENS, _READS, _WRITES = range(8)


@dataclass(frozen=True)
class AttentionAnalysis:
    """What an `AttentionSchedule` moves, computes and holds on `hardware` (module docstring); bytes, cycles."""

    schedule: AttentionSchedule
    per_tensor_loaded: Mapping[str, int]  # bytes, DDR tensors only
    per_tensor_stored: Mapping[str, int]
    loaded_bytes: int
    stored_bytes: int
    rmw_bytes: int
    loads: int
    stores: int
    opens: int
    macs: int
    padded_macs: int
    tensorcore_cycles: int
    vector_cycles: int
    vector_lane_ops: int
    peak_sram_bytes: int
    compulsory_bytes: int
    dma_cycles: int
    access_counts: AccessCounts

    @property
    def traffic_bytes(self) -> int:
        """DDR bytes moved (loaded + stored)."""
        return self.loaded_bytes + self.stored_bytes

    @property
    def estimated_cycles(self) -> int:
        """The DMA port and the compute units overlapped perfectly: max(DMA, TensorCore + vector) cycles (the vector
        unit works on the TensorCore's results, so the two add)."""
        return int(overlapped_cycles(self.dma_cycles, self.tensorcore_cycles + self.vector_cycles))

    def to_json(self) -> dict[str, Any]:
        return {"schedule": self.schedule.to_json(), "loaded_bytes": self.loaded_bytes,
                "stored_bytes": self.stored_bytes, "traffic_bytes": self.traffic_bytes,
                "compulsory_bytes": self.compulsory_bytes, "per_tensor_loaded": dict(self.per_tensor_loaded),
                "per_tensor_stored": dict(self.per_tensor_stored), "macs": self.macs, "padded_macs": self.padded_macs,
                "tensorcore_cycles": self.tensorcore_cycles, "vector_cycles": self.vector_cycles,
                "vector_lane_ops": self.vector_lane_ops, "peak_sram_bytes": self.peak_sram_bytes,
                "dma_cycles": self.dma_cycles, "estimated_cycles": self.estimated_cycles}


class _Tally:
    """The counts of one group's run, each event weighted by `times` (the b·hkv identical groups), and its
    footprint as a stack of scopes (elements x ways)."""

    def __init__(self, sch: AttentionSchedule, hw: Accelerator) -> None:
        self.sch, self.hw, self.p = sch, hw, sch.problem
        self.times = self.p.b * self.p.hkv
        self.t: dict[str, list[int]] = defaultdict(lambda: [0] * 8)
        self.macs = self.tc_cycles = self.vec_cycles = self.lane_ops = 0
        self.flow = DATAFLOWS[hw.tensorcore_dataflow]
        self.flow_cache: dict[tuple[int, int, int], Any] = {}
        self.stack: list[list[int]] = []  # per open scope: [elements, ways]
        self.peak = 0

    @contextmanager
    def weight(self, count: int, over: int = 1) -> Iterator[None]:
        """Count what the body does `count` times (identical repetitions: heads of a group, tiles of one class);
        the footprint is held once, as each repetition holds it. over=n: `count` is a total over the n repetitions
        the current weight already counts (the key tiles of a class of n row tiles)."""
        saved = self.times
        self.times = self.times // over * count
        try:
            yield
        finally:
            self.times = saved

    # -- scopes and DMA ------------------------------------------------------------------------------------------
    def enter(self, ways: int = 1) -> None:
        self.stack.append([0, ways])

    def exit(self) -> None:
        self.stack.pop()

    def _hold(self, elements: int) -> None:
        self.stack[-1][0] += elements
        self.peak = max(self.peak, sum(e * w for e, w in self.stack))

    def load(self, x: str, elements: int, rmw: bool = False, buffers: int = 1) -> None:
        """`buffers` loads of `elements` each into the current scope (all held together)."""
        c = self.t[x]
        c[_LOADED] += elements * buffers * self.times
        c[_LOADS] += buffers * self.times
        if rmw:
            c[_RMW] += elements * buffers * self.times
        self._hold(elements * buffers)

    def open(self, x: str, elements: int, buffers: int = 1) -> None:
        """`buffers` regions of `elements` each opened as zeros in the current scope (all held together)."""
        self.t[x][_OPENS] += buffers * self.times
        self._hold(elements * buffers)

    def store(self, x: str, elements: int, buffers: int = 1) -> None:
        self.t[x][_STORED] += elements * buffers * self.times
        self.t[x][_STORES] += buffers * self.times

    # -- compute -------------------------------------------------------------------------------------------------
    def matmul(self, a: str, b: str, out: str, rows: int, inner: int, cols: int, fresh: int | None = None) -> None:
        """(rows, inner) x (inner, cols) into `out`: assigned (fresh None) or accumulated onto `fresh` zeros."""
        hw = self.hw
        ops = self.flow_cache.get((rows, inner, cols))
        if ops is None:  # (few distinct tile shapes: the dataflow's call checks its arguments, not cheap)
            ops = self.flow_cache[rows, inner, cols] = self.flow(rows, 1, 1, inner, cols, hw.tensorcore_in_channels,
                                                                 hw.tensorcore_out_channels)
        fresh = rows * cols if fresh is None else fresh
        self.t[a][_READS] += ops.input_reads * self.times
        self.t[b][_READS] += ops.weight_reads * self.times
        self.t[out][_WRITES] += ops.output_writes * self.times
        self.t[out][_READS] += (ops.output_writes - fresh) * self.times
        self.macs += rows * cols * inner * self.times
        self.tc_cycles += (ceil_div(inner, hw.tensorcore_in_channels) * ceil_div(cols, hw.tensorcore_out_channels)
                           * rows * self.times)

    def vector(self, inputs: tuple[tuple[str, int], ...], out: str, out_elements: int, lane_ops: int,
               accumulate: bool = False) -> None:
        """A vector op reading `inputs` (tensor, elements) into `out` (assigned, or accumulated onto no fresh
        zeros), `lane_ops` lane operations."""
        for x, elements in inputs:
            self.t[x][_READS] += elements * self.times
        self.t[out][_WRITES] += out_elements * self.times
        if accumulate:
            self.t[out][_READS] += out_elements * self.times
        self.lane_ops += lane_ops * self.times
        self.vec_cycles += ceil_div(lane_ops, self.hw.vector_lanes) * self.times


# ------------------------------------------------------------------------------------------- the kinds' passes
# A key class: (keys in the tile, partly masked, first of its row tile, last of its row tile, how many tiles).
KeyClass = tuple[int, bool, bool, bool, int]


def _key_classes(sch: AttentionSchedule, r0: int, r1: int) -> list[KeyClass]:
    """The key tiles computed for rows [r0, r1), in classes, in closed form: tile 0 (the first) and the row tile's
    last computed tile T - 1 are their own classes; the tiles between are full (only the very last key tile of the
    length can be ragged, and it is never between) and masked from the first one whose last key c·bc + bc - 1
    passes the first row's last visible key r0 + offset, i.e. from c = (r0 + offset + 1) // bc."""
    p, bc = sch.problem, sch.bc
    tiles = -(-p.m // bc)
    last = tiles - 1 if not p.causal else min(tiles - 1, (r1 - 1 + p.offset) // bc)
    classes: dict[tuple[int, bool, bool, bool], int] = {}

    def add(width: int, masked: bool, first: bool, end: bool, count: int) -> None:
        if count > 0:
            classes[width, masked, first, end] = classes.get((width, masked, first, end), 0) + count

    for c in sorted({0, last}):
        add(min(bc, p.m - c * bc), sch.masked(r0, min(c * bc + bc, p.m)), c == 0, c == last, 1)
    between = max(0, last - 1)  # tiles 1 .. last - 1
    unmasked = between if not p.causal else max(0, min(last - 1, (r0 + p.offset + 1) // bc - 1))
    add(bc, False, False, False, unmasked)
    add(bc, True, False, False, between - unmasked)
    return [(*key, n) for key, n in classes.items()]


def _span(sch: AttentionSchedule, r0: int, r1: int) -> int:
    """The keys [0, span) the row tile's computed tiles cover."""
    p = sch.problem
    if not p.causal:
        return p.m
    return min(p.m, ((r1 - 1 + p.offset) // sch.bc + 1) * sch.bc)


def _row_classes(sch: AttentionSchedule, with_span: bool) -> tuple[tuple[int, int, int, bool, tuple[KeyClass, ...]], ...]:
    """The row tiles in classes of equal rows and key classes (and, `with_span`, equal span and span mask), the
    key counts summed over the class: (rows, row tiles, span, span partly masked, key classes). They depend on the
    lengths, the mask and the tiles only, so the kinds of one tiling share them (cached)."""
    p = sch.problem
    return _row_classes_of(p.n, p.m, p.causal, sch.br, sch.bc, with_span)


@functools.lru_cache(maxsize=1024)
def _row_classes_of(n: int, m: int, causal: bool, br: int, bc: int, with_span: bool) -> tuple:
    from dsasim.architect.problems.attention import AttentionProblem
    sch = AttentionSchedule(AttentionProblem(1, 1, 1, n, m, 1, causal), "q-outer", br, bc)
    groups: dict[tuple, list] = {}
    for r0, r1 in sch.row_tiles():
        span = _span(sch, r0, r1) if with_span else 0
        span_masked = with_span and sch.masked(r0, span)
        classes = _key_classes(sch, r0, r1)
        key = (r1 - r0, span, span_masked, tuple(sorted(c[:4] for c in classes)))
        if key not in groups:
            groups[key] = [r1 - r0, 0, span, span_masked, {}]
        group = groups[key]
        group[1] += 1
        for c in classes:
            group[4][c[:4]] = group[4].get(c[:4], 0) + c[4]
    return tuple((rq, count, span, sm, tuple((*c, k) for c, k in cs.items()))
                 for rq, count, span, sm, cs in groups.values())


def _scores_to_ddr(k: _Tally) -> None:
    sch, p = k.sch, k.p
    for rq, rows, _, _, keys in _row_classes(sch, False):
        with k.weight(rows):
            k.enter()
            k.load("Q", rq * p.d, buffers=p.group)
            for ck, _, _, _, count in keys:
                with k.weight(count, over=rows):
                    k.enter(sch.ways)
                    k.load("K", ck * p.d)
                    with k.weight(p.group):
                        k.enter()
                        k.open("S", rq * ck)
                        k.matmul("Q", "K", "S", rq, p.d, ck)
                        k.store("S", rq * ck)
                        k.exit()
                    k.exit()
            k.exit()


def _softmax_rows(k: _Tally, src: str, out: str, rq: int, span: int, masked: bool, normalise: bool) -> None:
    """`_Run.softmax_rows`: the row max (rowmax) and row sum (rowsum) opened in the current scope."""
    e = rq * span
    k.open("rowmax", rq)
    if masked:
        k.vector(((src, e),), out, e, e)
        src = out
    k.vector(((src, e),), "rowmax", rq, e)
    k.vector(((src, e), ("rowmax", rq)), out, e, e)
    k.vector(((out, e),), out, e, e)
    k.open("rowsum", rq)
    k.vector(((out, e),), "rowsum", rq, e)
    if normalise:
        k.vector(((out, e), ("rowsum", rq)), out, e, e)


def _probabilities_times_values(k: _Tally) -> None:
    sch, p = k.sch, k.p
    for rq, rows, _, _, keys in _row_classes(sch, False):
        with k.weight(rows):
            k.enter()
            k.open("O", rq * p.d, buffers=p.group)
            for ck, _, first, _, count in keys:
                with k.weight(count, over=rows):
                    k.enter(sch.ways)
                    k.load("V", ck * p.d)
                    with k.weight(p.group):
                        k.enter()
                        k.load("P", rq * ck)
                        k.matmul("P", "V", "O", rq, ck, p.d, fresh=rq * p.d if first else 0)
                        k.exit()
                    k.exit()
            k.store("O", rq * p.d, buffers=p.group)
            k.exit()


def _online_step(k: _Tally, mx: str, total: str, rq: int, ck: int, masked: bool, first: bool) -> None:
    """`_Run.online_step` on the S tile (S_chip), V, O and the running max `mx` and sum `total`."""
    p = k.p
    e, od = rq * ck, rq * p.d
    if masked:
        k.vector((("S_chip", e),), "S_chip", e, e)
    if first:
        k.vector((("S_chip", e),), mx, rq, e)
        k.vector((("S_chip", e), (mx, rq)), "S_chip", e, e)
        k.vector((("S_chip", e),), "S_chip", e, e)
        k.vector((("S_chip", e),), total, rq, e)
        k.matmul("S_chip", "V", "O", rq, ck, p.d)
        return
    k.open("newmax", rq)
    k.open("alpha", rq)
    k.vector((("S_chip", e),), "newmax", rq, e)
    k.vector((("newmax", rq), (mx, rq)), "newmax", rq, rq)
    k.vector(((mx, rq), ("newmax", rq)), "alpha", rq, rq)
    k.vector((("alpha", rq),), "alpha", rq, rq)
    k.vector((("newmax", rq),), mx, rq, rq)
    k.vector((("S_chip", e), (mx, rq)), "S_chip", e, e)
    k.vector((("S_chip", e),), "S_chip", e, e)
    k.vector(((total, rq), ("alpha", rq)), total, rq, rq)
    k.vector((("S_chip", e),), total, rq, e, accumulate=True)
    k.vector((("O", od), ("alpha", rq)), "O", od, od)
    k.matmul("S_chip", "V", "O", rq, ck, p.d, fresh=0)


def _unfused(k: _Tally) -> None:
    sch, p = k.sch, k.p
    _scores_to_ddr(k)
    for rq, rows, span, span_masked, _ in _row_classes(sch, True):
        with k.weight(rows):
            k.enter()
            with k.weight(p.group):
                k.enter()
                k.load("S", rq * span)
                k.open("P", rq * span)
                _softmax_rows(k, "S", "P", rq, span, span_masked, True)
                k.store("P", rq * span)
                k.exit()
            k.exit()
    _probabilities_times_values(k)


def _store_p(k: _Tally) -> None:
    sch, p = k.sch, k.p
    for rq, rows, span, span_masked, keys in _row_classes(sch, True):
        with k.weight(rows):
            k.enter()
            k.load("Q", rq * p.d, buffers=p.group)
            k.open("S_chip", rq * span, buffers=p.group)
            for ck, _, _, _, count in keys:
                with k.weight(count, over=rows):
                    k.enter(sch.ways)
                    k.load("K", ck * p.d)
                    with k.weight(p.group):
                        k.matmul("Q", "K", "S_chip", rq, p.d, ck)
                    k.exit()
            with k.weight(p.group):
                k.enter()
                k.open("P", rq * span)
                _softmax_rows(k, "S_chip", "P", rq, span, span_masked, True)
                k.store("P", rq * span)
                k.exit()
            k.exit()
    _probabilities_times_values(k)


def _store_s(k: _Tally) -> None:
    sch, p = k.sch, k.p
    _scores_to_ddr(k)
    for rq, rows, span, span_masked, keys in _row_classes(sch, True):
        e = rq * span
        with k.weight(rows):
            k.enter()
            # per head: P (on chip), its row sum and O opened in @q, then S loaded and the softmax in @head; the
            # heads' @q buffers add up, so the last head's @head sees all of them
            k.open("P_chip", e, buffers=p.group)
            k.open("rowsum", rq, buffers=p.group)
            k.open("O", rq * p.d, buffers=p.group)
            with k.weight(p.group):
                k.enter()
                k.load("S", e)
                k.open("rowmax", rq)
                src = "S"
                if span_masked:
                    k.vector((("S", e),), "P_chip", e, e)
                    src = "P_chip"
                k.vector(((src, e),), "rowmax", rq, e)
                k.vector(((src, e), ("rowmax", rq)), "P_chip", e, e)
                k.vector((("P_chip", e),), "P_chip", e, e)
                k.vector((("P_chip", e),), "rowsum", rq, e)
                k.exit()
            for ck, _, first, _, count in keys:
                with k.weight(count, over=rows):
                    k.enter(sch.ways)
                    k.load("V", ck * p.d)
                    with k.weight(p.group):
                        k.matmul("P_chip", "V", "O", rq, ck, p.d, fresh=rq * p.d if first else 0)
                    k.exit()
            with k.weight(p.group):
                k.vector((("O", rq * p.d), ("rowsum", rq)), "O", rq * p.d, rq * p.d)
            k.store("O", rq * p.d, buffers=p.group)
            k.exit()


def _q_outer(k: _Tally) -> None:
    sch, p = k.sch, k.p
    for rq, rows, _, _, keys in _row_classes(sch, False):
        with k.weight(rows):
            k.enter()
            k.load("Q", rq * p.d, buffers=p.group)
            k.open("O", rq * p.d, buffers=p.group)
            k.open("rowmax", rq, buffers=p.group)
            k.open("rowsum", rq, buffers=p.group)
            for ck, masked, first, _, count in keys:
                with k.weight(count, over=rows):
                    k.enter(sch.ways)
                    k.load("K", ck * p.d)
                    k.load("V", ck * p.d)
                    with k.weight(p.group):
                        k.enter()
                        k.open("S_chip", rq * ck)
                        k.matmul("Q", "K", "S_chip", rq, p.d, ck)
                        _online_step(k, "rowmax", "rowsum", rq, ck, masked, first)
                        k.exit()
                    k.exit()
            with k.weight(p.group):
                k.vector((("O", rq * p.d), ("rowsum", rq)), "O", rq * p.d, rq * p.d)
            k.store("O", rq * p.d, buffers=p.group)
            k.exit()


def _kv_outer(k: _Tally) -> None:
    """Key tiles outside: every key tile is computed for the last row tile (it sees every key), so K and V are
    loaded once per key tile; each (key tile, row tile) pair then runs in the key tile's scope, counted per class
    of pairs (the row tile's key classes, with the pair's key tile held in @kv for the footprint only)."""
    sch, p = k.sch, k.p
    tiles = -(-p.m // sch.bc)
    for ck, count in ((sch.bc, p.m // sch.bc), (p.m % sch.bc, 1 if p.m % sch.bc else 0)):
        if count:
            k.t["K"][_LOADED] += ck * p.d * count * k.times
            k.t["V"][_LOADED] += ck * p.d * count * k.times
    k.t["K"][_LOADS] += tiles * k.times
    k.t["V"][_LOADS] += tiles * k.times
    for rq, rows, _, _, keys in _row_classes(sch, False):
        with k.weight(rows):
            for ck, masked, first, end, count in keys:
                with k.weight(count, over=rows):
                    k.enter()
                    k._hold(2 * ck * p.d)  # K and V of the key tile (their loads counted above)
                    k.enter(sch.ways)
                    k.load("Q", rq * p.d, buffers=p.group)
                    for x, size in (("O", rq * p.d), ("M", rq), ("L", rq)):
                        if first:
                            k.open(x, size, buffers=p.group)
                        else:
                            k.load(x, size, rmw=True, buffers=p.group)
                    with k.weight(p.group):
                        k.enter()
                        k.open("S_chip", rq * ck)
                        k.matmul("Q", "K", "S_chip", rq, p.d, ck)
                        _online_step(k, "M", "L", rq, ck, masked, first)
                        k.exit()
                        if end:
                            k.vector((("O", rq * p.d), ("L", rq)), "O", rq * p.d, rq * p.d)
                    for x, size in (("O", rq * p.d), ("M", rq), ("L", rq)):
                        k.store(x, size, buffers=p.group)
                    k.exit()
                    k.exit()


_KINDS = {"unfused": _unfused, "store-p": _store_p, "store-s": _store_s, "q-outer": _q_outer, "kv-outer": _kv_outer}


def analyze_attention(schedule: AttentionSchedule, hardware: Accelerator) -> AttentionAnalysis:
    """Traffic, transfers, MACs, cycles, lane operations, access counts and peak SRAM of `schedule` on `hardware`,
    equal to its traced run (module docstring)."""
    if not isinstance(schedule, AttentionSchedule):
        raise TypeError(f"analyze_attention needs an AttentionSchedule, got {type(schedule).__name__}")
    if not isinstance(hardware, Accelerator):
        raise TypeError(f"analyze_attention needs an Accelerator, got {type(hardware).__name__}")
    k = _Tally(schedule, hardware)
    k.enter()  # top
    _KINDS[schedule.kind](k)
    k.exit()
    word = hardware.word_bytes
    ddr = [x for x in TENSOR_ORDER if x in k.t and x not in ("S_chip", "P_chip", "rowmax", "rowsum", "newmax",
                                                            "alpha")]
    loaded = {x: k.t[x][_LOADED] * word for x in ddr}
    stored = {x: k.t[x][_STORED] * word for x in ddr}
    loads = sum(k.t[x][_LOADS] for x in k.t)
    stores = sum(k.t[x][_STORES] for x in k.t)
    tensors = []
    for x in TENSOR_ORDER:
        if x not in k.t:
            continue
        c = k.t[x]
        moved = {DDR: (c[_LOADED] * word, c[_STORED] * word),
                 SRAM_LEVEL: ((c[_STORED] + c[_READS]) * word, (c[_LOADED] + c[_WRITES]) * word)}
        tensors += [TensorAccesses(x, level, r, w) for level, (r, w) in moved.items() if r or w]
    padded = k.tc_cycles * hardware.tensorcore_in_channels * hardware.tensorcore_out_channels
    port = ddr_port(hardware)
    return AttentionAnalysis(
        schedule=schedule, per_tensor_loaded=loaded, per_tensor_stored=stored, loaded_bytes=sum(loaded.values()),
        stored_bytes=sum(stored.values()), rmw_bytes=sum(k.t[x][_RMW] for x in k.t) * word, loads=loads,
        stores=stores, opens=sum(k.t[x][_OPENS] for x in k.t), macs=k.macs, padded_macs=padded,
        tensorcore_cycles=k.tc_cycles, vector_cycles=k.vec_cycles, vector_lane_ops=k.lane_ops,
        peak_sram_bytes=k.peak * word, compulsory_bytes=schedule.problem.compulsory_bytes(word),
        dma_cycles=int(dma_cycles(port, loads, sum(loaded.values()), stores, sum(stored.values()))),
        access_counts=AccessCounts(tuple(tensors), macs=k.macs, padded_macs=padded, vector_lane_ops=k.lane_ops))
