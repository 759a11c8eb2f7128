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
    def weight(self, count: int) -> Iterator[None]:
        """Count what the body does `count` times (identical repetitions: heads of a group, tiles of one class);
        the footprint is held once, as each repetition holds it."""
        saved = self.times
        self.times *= count
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
def _span(sch: AttentionSchedule, r0: int, r1: int) -> int:
    return sch.key_tiles(r0, r1)[-1][1]


def _key_classes(sch: AttentionSchedule, r0: int, r1: int) -> list[tuple[int, int, int]]:
    """The key tiles computed for rows [r0, r1) as (c0, c1, count): one representative per class of equal width,
    mask flag and first-ness (their counts are the same), in order of first appearance."""
    groups: dict[tuple[int, bool, bool], list[int]] = {}
    for c0, c1 in sch.key_tiles(r0, r1):
        key = (c1 - c0, sch.masked(r0, c1), c0 == 0)
        if key in groups:
            groups[key][2] += 1
        else:
            groups[key] = [c0, c1, 1]
    return [(c0, c1, n) for c0, c1, n in groups.values()]


def _row_classes(sch: AttentionSchedule) -> list[tuple[int, int, int]]:
    """The row tiles as (r0, r1, count): one representative per class of equal rows and equal key classes (masks
    included), in order (without a mask, the full row tiles form one class)."""
    groups: dict[tuple, list[int]] = {}
    for r0, r1 in sch.row_tiles():
        key = (r1 - r0, tuple((c1 - c0, sch.masked(r0, c1), c0 == 0, n) for c0, c1, n in _key_classes(sch, r0, r1)))
        if key in groups:
            groups[key][2] += 1
        else:
            groups[key] = [r0, r1, 1]
    return [(r0, r1, n) for r0, r1, n in groups.values()]


def _scores_to_ddr(k: _Tally) -> None:
    sch, p = k.sch, k.p
    for r0, r1, rows in _row_classes(sch):
        rq = r1 - r0
        with k.weight(rows):
            k.enter()
            k.load("Q", rq * p.d, buffers=p.group)
            for c0, c1, count in _key_classes(sch, r0, r1):
                ck = c1 - c0
                with k.weight(count):
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


def _softmax_rows(k: _Tally, src: str, out: str, r0: int, r1: int, normalise: bool) -> None:
    """`_Run.softmax_rows`: the row max (rowmax) and row sum (rowsum) opened in the current scope."""
    rq, span = r1 - r0, _span(k.sch, r0, r1)
    e = rq * span
    k.open("rowmax", rq)
    if k.sch.masked(r0, span):
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
    for r0, r1, rows in _row_classes(sch):
        rq = r1 - r0
        with k.weight(rows):
            k.enter()
            k.open("O", rq * p.d, buffers=p.group)
            for c0, c1, count in _key_classes(sch, r0, r1):
                ck = c1 - c0
                with k.weight(count):
                    k.enter(sch.ways)
                    k.load("V", ck * p.d)
                    with k.weight(p.group):
                        k.enter()
                        k.load("P", rq * ck)
                        k.matmul("P", "V", "O", rq, ck, p.d, fresh=rq * p.d if c0 == 0 else 0)
                        k.exit()
                    k.exit()
            k.store("O", rq * p.d, buffers=p.group)
            k.exit()


def _online_step(k: _Tally, mx: str, total: str, r0: int, r1: int, c0: int, c1: int, first: bool) -> None:
    """`_Run.online_step` on the S tile (S_chip), V, O and the running max `mx` and sum `total`."""
    p = k.p
    rq, ck = r1 - r0, c1 - c0
    e, od = rq * ck, rq * p.d
    if k.sch.masked(r0, c1):
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
    for r0, r1, rows in _row_classes(sch):
        rq, span = r1 - r0, _span(sch, r0, r1)
        with k.weight(rows):
            k.enter()
            with k.weight(p.group):
                k.enter()
                k.load("S", rq * span)
                k.open("P", rq * span)
                _softmax_rows(k, "S", "P", r0, r1, True)
                k.store("P", rq * span)
                k.exit()
            k.exit()
    _probabilities_times_values(k)


def _store_p(k: _Tally) -> None:
    sch, p = k.sch, k.p
    for r0, r1, rows in _row_classes(sch):
        rq, span = r1 - r0, _span(sch, r0, r1)
        with k.weight(rows):
            k.enter()
            k.load("Q", rq * p.d, buffers=p.group)
            k.open("S_chip", rq * span, buffers=p.group)
            for c0, c1, count in _key_classes(sch, r0, r1):
                ck = c1 - c0
                with k.weight(count):
                    k.enter(sch.ways)
                    k.load("K", ck * p.d)
                    with k.weight(p.group):
                        k.matmul("Q", "K", "S_chip", rq, p.d, ck)
                    k.exit()
            with k.weight(p.group):
                k.enter()
                k.open("P", rq * span)
                _softmax_rows(k, "S_chip", "P", r0, r1, True)
                k.store("P", rq * span)
                k.exit()
            k.exit()
    _probabilities_times_values(k)


def _store_s(k: _Tally) -> None:
    sch, p = k.sch, k.p
    _scores_to_ddr(k)
    for r0, r1, rows in _row_classes(sch):
        rq, span = r1 - r0, _span(sch, r0, r1)
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
                if sch.masked(r0, span):
                    k.vector((("S", e),), "P_chip", e, e)
                    src = "P_chip"
                k.vector(((src, e),), "rowmax", rq, e)
                k.vector(((src, e), ("rowmax", rq)), "P_chip", e, e)
                k.vector((("P_chip", e),), "P_chip", e, e)
                k.vector((("P_chip", e),), "rowsum", rq, e)
                k.exit()
            for c0, c1, count in _key_classes(sch, r0, r1):
                ck = c1 - c0
                with k.weight(count):
                    k.enter(sch.ways)
                    k.load("V", ck * p.d)
                    with k.weight(p.group):
                        k.matmul("P_chip", "V", "O", rq, ck, p.d, fresh=rq * p.d if c0 == 0 else 0)
                    k.exit()
            with k.weight(p.group):
                k.vector((("O", rq * p.d), ("rowsum", rq)), "O", rq * p.d, rq * p.d)
            k.store("O", rq * p.d, buffers=p.group)
            k.exit()


def _q_outer(k: _Tally) -> None:
    sch, p = k.sch, k.p
    for r0, r1, rows in _row_classes(sch):
        rq = r1 - r0
        with k.weight(rows):
            k.enter()
            k.load("Q", rq * p.d, buffers=p.group)
            k.open("O", rq * p.d, buffers=p.group)
            k.open("rowmax", rq, buffers=p.group)
            k.open("rowsum", rq, buffers=p.group)
            for c0, c1, count in _key_classes(sch, r0, r1):
                ck = c1 - c0
                with k.weight(count):
                    k.enter(sch.ways)
                    k.load("K", ck * p.d)
                    k.load("V", ck * p.d)
                    with k.weight(p.group):
                        k.enter()
                        k.open("S_chip", rq * ck)
                        k.matmul("Q", "K", "S_chip", rq, p.d, ck)
                        _online_step(k, "rowmax", "rowsum", r0, r1, c0, c1, c0 == 0)
                        k.exit()
                    k.exit()
            with k.weight(p.group):
                k.vector((("O", rq * p.d), ("rowsum", rq)), "O", rq * p.d, rq * p.d)
            k.store("O", rq * p.d, buffers=p.group)
            k.exit()


def _kv_outer(k: _Tally) -> None:
    sch, p = k.sch, k.p
    last = {r0: sch.key_tiles(r0, r1)[-1][0] for r0, r1 in sch.row_tiles()}
    # per key tile, its computed row tiles in classes of equal rows, mask flag and last-ness; key tiles of equal
    # width, first-ness and row classes form one class
    columns: dict[tuple, list] = {}
    for c0 in range(0, p.m, sch.bc):
        c1 = min(c0 + sch.bc, p.m)
        rows: dict[tuple[int, bool, bool], list[int]] = {}
        for r0, r1 in sch.row_tiles():
            if p.tile_computed(r0, r1, c0):
                key = (r1 - r0, sch.masked(r0, c1), c0 == last[r0])
                if key in rows:
                    rows[key][2] += 1
                else:
                    rows[key] = [r0, r1, 1]
        if not rows:
            continue
        key = (c1 - c0, c0 == 0, tuple((rk, n) for rk, (_, _, n) in rows.items()))
        if key in columns:
            columns[key][2] += 1
        else:
            columns[key] = [c0, c1, 1, list(rows.values())]
    for c0, c1, count, rows_classes in columns.values():
        ck = c1 - c0
        with k.weight(count):
            k.enter()
            k.load("K", ck * p.d)
            k.load("V", ck * p.d)
            for r0, r1, n in rows_classes:
                rq = r1 - r0
                with k.weight(n):
                    k.enter(sch.ways)
                    k.load("Q", rq * p.d, buffers=p.group)
                    for x, size in (("O", rq * p.d), ("M", rq), ("L", rq)):
                        if c0 == 0:
                            k.open(x, size, buffers=p.group)
                        else:
                            k.load(x, size, rmw=True, buffers=p.group)
                    with k.weight(p.group):
                        k.enter()
                        k.open("S_chip", rq * ck)
                        k.matmul("Q", "K", "S_chip", rq, p.d, ck)
                        _online_step(k, "M", "L", r0, r1, c0, c1, c0 == 0)
                        k.exit()
                        if c0 == last[r0]:
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
