"""The timing model's first half: lowering a trace into an operation graph (engines, durations, dependencies).

The trace is the only input. Every rule of the model that does not involve time lives here; the schedulers
(`engine.pyx`, exact and fast; `reference.py`, simpy) only decide *when* each operation runs. The lowering is one
pass over the events: `_Lowering` is a `TraceChecker` (validate.pyx) whose handler for each event kind checks the
event, then applies the rules below; the graph it builds is columnar (numpy arrays, see `OpGraph`).

Engines. Each engine runs its own operations one at a time, in program (trace) order:
  * `dma-load` (or `dma-load0`, `dma-load1`, ... when `dma_load_channels` > 1): LOAD events. Loads are dealt to
    the channels round-robin in program order (load j goes to channel j mod channels).
  * `dma-store`: STORE events.
  * `tensorcore`: COMPUTE events whose unit is "tensorcore"; `vector`: every other COMPUTE event.
OPEN events (a zeroed region, no DMA) run on no engine and take 0 cycles, but still wait for their slot; HIT,
ALLOC, ENTER and EXIT events are not operations; a FREE event releases its buffer's slot (below).

Durations, in cycles. A transfer (LOAD or STORE) of b bytes takes dma_setup_cycles + ceil(b / bandwidth), with
bandwidth = dram_bytes_per_cycle, and holds its DDR port for all of it, setup included. A COMPUTE takes the
cycles recorded in its event (the TensorCore's cost model: ceil(ic/16) x ceil(oc/24) x pixels x taps; the
vector unit's ceil(elements / lanes)).

Dependencies (an operation starts only after all of these have finished):
  * data (RAW): a COMPUTE waits for the last write of each buffer it reads and of the buffer it writes (the LOAD
    or OPEN that filled it, or the last COMPUTE that wrote it). A HIT adds nothing: the compute that reads the
    buffer already waits for whatever last wrote it. A STORE waits for the last write of its buffer.
  * write-after-read (WAR) inside a buffer: a COMPUTE that writes a buffer waits for every operation that read
    the buffer's current contents (computes on other engines, a STORE).
  * slot (WAR on SRAM space): the first fill (LOAD or OPEN) of a newly allocated buffer waits until every
    operation on the previous occupants of its bytes (the buffers that last held any byte of [address,
    address + nbytes), per the ALLOC events; an N-way scope's block holds N copies used in turn, so consecutive
    instances do not wait for each other) has finished, their final STOREs included. A reuse-flag
    fill (a LOAD or OPEN into a buffer that already exists, no new ALLOC) likewise waits for every earlier
    operation on that buffer, its pending STORE included.
  * DDR (RAW/WAR through memory): a LOAD of a region of a writable tensor waits for every earlier (in program
    order) STORE to an overlapping region of that tensor; a STORE waits for every earlier LOAD of an
    overlapping region of its tensor. (Two stores are ordered by the single in-order store engine.)
Dependencies on an earlier operation of the same engine are implied by program order and dropped.

FREE: a buffer's bytes become reusable when all operations on the buffer (its final STORE included) have
finished. A new buffer allocated over the bytes of a still-live buffer waits for that occupant's FREE (a valid
trace frees every buffer: `validate.pyx`); a wait that closes a cycle (e.g. the occupant is used later by an
operation queued behind the waiting load) is reported by the scheduler (`engine.build_timeline`) as a
`DeadlockError` naming the stuck operations.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dsasim.hardware import Accelerator
from dsasim.util import ceil_div, regions_overlap
from dsasim.traced.trace import ALLOC, COMPUTE, FREE, LOAD, OPEN, STORE, Region, Trace, format_region
from dsasim.timing.validate cimport TraceChecker

# operation kinds
LOAD_OP, STORE_OP, TC_OP, VEC_OP, OPEN_OP, FREE_OP = range(6)
KIND_NAMES = ("load", "store", "tensorcore", "vector", "open", "free")
# dependency reasons, stored in the low two bits of an encoded dependency (op * 4 + reason)
DATA, SLOT, WAR = 0, 1, 2
REASON_NAMES = ("data", "slot", "war")
cdef int K_LOAD = LOAD, K_COMPUTE = COMPUTE, K_ALLOC = ALLOC, K_FREE = FREE, K_STORE = STORE, K_OPEN = OPEN
cdef int C_LOAD_OP = LOAD_OP, C_STORE_OP = STORE_OP, C_TC_OP = TC_OP, C_VEC_OP = VEC_OP, C_OPEN_OP = OPEN_OP
cdef int C_FREE_OP = FREE_OP


cdef class _Occupancy:
    """Which buffer last occupied each SRAM byte: disjoint [start, stop) runs, sorted by start."""

    cdef list starts, stops, owners, one

    def __init__(self) -> None:
        self.starts, self.stops, self.owners, self.one = [], [], [], [None]

    cdef list take(self, object start, object stop, object buffer):
        """Give [start, stop) to `buffer`; return the buffers that last held any of those bytes (a list to read
        at once: the common case reuses one)."""
        cdef Py_ssize_t i, j
        if stop <= start:
            return []
        i = bisect_right(self.starts, start)
        if i and self.stops[i - 1] > start:
            i -= 1
            if self.starts[i] == start and self.stops[i] == stop:  # the same bytes again (a slot's next turn)
                self.one[0] = self.owners[i]
                self.owners[i] = buffer
                return self.one
        j = i
        previous = []
        new = [(start, stop, buffer)]
        while j < len(self.starts) and self.starts[j] < stop:
            a, b, owner = self.starts[j], self.stops[j], self.owners[j]
            if owner not in previous:
                previous.append(owner)
            if a < start:
                new.append((a, start, owner))
            if b > stop:
                new.append((stop, b, owner))
            j += 1
        new.sort()
        self.starts[i:j], self.stops[i:j], self.owners[i:j] = [[r[k] for r in new] for k in range(3)]
        return previous


@dataclass
class OpGraph:
    """The lowered trace: one entry per operation in each column (index = operation id).

    Operation ids follow program order, except FREE nodes (created only when a later buffer must wait for a
    still-live slot occupant), which are appended when their FREE event is reached.
    """

    n: int
    kind: np.ndarray  # int8, KIND_NAMES index
    engine: np.ndarray  # int8 engine index, -1 for OPEN and FREE nodes (no engine)
    dur: np.ndarray  # int64 cycles
    port: np.ndarray  # int8 DDR port index, -1 for non-transfers
    dep_ptr: np.ndarray  # int64 (n + 1): op's dependencies are dep_val[dep_ptr[op]:dep_ptr[op + 1]]
    dep_val: np.ndarray  # int64, encoded op * 4 + reason
    nbytes: np.ndarray  # int64
    tensor: np.ndarray  # int32 trace tensor id, -1 for FREE nodes
    buffer: np.ndarray  # int32
    region: list[Region | None]
    event: np.ndarray  # int32 index of the trace event (for a FREE node, of its FREE event)
    prev_on_engine: np.ndarray  # int32 previous operation of the same engine, -1 if first
    ddr_check: np.ndarray  # bool: transfers of writable tensors, whose DDR dependencies the scheduler resolves
    queues: list[np.ndarray]  # per engine, its operations in program order
    engine_names: list[str]
    engine_ports: list[int]  # per engine, its DDR port (-1 for compute engines)
    n_ports: int
    load_engines: tuple[int, ...]
    store_engine: int
    tensorcore_engine: int
    vector_engine: int
    stores_by_tensor: dict[int, np.ndarray]  # writable tensor -> its STORE ops in program order
    loads_by_tensor: dict[int, list[np.ndarray]]  # writable tensor -> per load channel, its LOAD ops
    # buffers (index = buffer id)
    buffer_tensor: np.ndarray
    buffer_nbytes: np.ndarray
    buffer_first_op: np.ndarray  # its first fill (LOAD or OPEN), -1 if never filled
    buffer_final_ptr: np.ndarray  # the operations whose end releases the slot (set by its FREE) are
    buffer_final_n: np.ndarray  # buffer_final_ops[ptr[b]:ptr[b] + n[b]]
    buffer_final_ops: np.ndarray
    reserved_sram_bytes: int  # peak of the trace's charged bytes (N-way scopes charge N x)
    macs: int  # all MACs of the trace (vector dot products included)
    tensorcore_macs: int  # useful MACs of TensorCore operations
    padded_macs: int
    loaded_bytes: int
    stored_bytes: int
    tensor_names: list[str]

    def deps_of(self, op: int) -> list[int]:
        """The encoded dependencies (op * 4 + reason) of an operation."""
        return self.dep_val[self.dep_ptr[op]:self.dep_ptr[op + 1]].tolist()

    def ddr_lists(self, op: int) -> list[np.ndarray]:
        """Where a transfer's DDR dependencies are, each list in program order: for a STORE, the LOADs of its tensor
        (one list per load channel); for a LOAD, the STOREs of its tensor."""
        t = int(self.tensor[op])
        if self.engine[op] == self.store_engine:
            return self.loads_by_tensor.get(t, [])
        return [self.stores_by_tensor[t]] if t in self.stores_by_tensor else []

    def describe(self, op: int) -> str:
        """A readable name for an operation: kind, tensor, region, buffer and trace event."""
        kind = self.kind[op]
        if kind == FREE_OP:
            return f"release of buffer {self.buffer[op]}'s slot (FREE)"
        t = self.tensor[op]
        what = f"{self.tensor_names[t]}{format_region(self.region[op])}" if t >= 0 else "?"
        eng = self.engine[op]
        on = f" on {self.engine_names[eng]}" if eng >= 0 else ""
        verb = {LOAD_OP: "load of", STORE_OP: "store of", TC_OP: "tensorcore compute into",
                VEC_OP: "vector compute into", OPEN_OP: "open of"}[kind]
        return f"{verb} {what} (buffer {self.buffer[op]}, trace event {self.event[op]}){on}"


cdef class _EngineMap:
    """Per live buffer row, a small map engine -> op that keeps insertion order (like a dict: setting a present key
    keeps its place), in flat C arrays: a row has one entry per engine plus one for "no engine" (-1)."""

    cdef int width
    cdef object keys_arr, ops_arr, n_arr
    cdef signed char[::1] keys
    cdef long long[::1] ops
    cdef int[::1] n

    def __init__(self, int width) -> None:
        self.width = width
        self.resize(16)

    cdef void resize(self, Py_ssize_t rows):
        keys, ops, n = np.zeros(rows * self.width, np.int8), np.zeros(rows * self.width, np.int64), \
            np.zeros(rows, np.intc)
        if self.n_arr is not None:
            old = len(self.n_arr)
            keys[:old * self.width] = self.keys_arr
            ops[:old * self.width] = self.ops_arr
            n[:old] = self.n_arr
        self.keys_arr, self.ops_arr, self.n_arr = keys, ops, n
        self.keys, self.ops, self.n = keys, ops, n

    cdef inline void set(self, Py_ssize_t row, int engine, long long op):
        cdef Py_ssize_t base = row * self.width, k
        for k in range(self.n[row]):
            if self.keys[base + k] == engine:
                self.ops[base + k] = op
                return
        k = self.n[row]
        self.keys[base + k] = engine
        self.ops[base + k] = op
        self.n[row] = k + 1

    cdef inline void reset(self, Py_ssize_t row, int engine, long long op):
        """The map becomes {engine: op}; engine -2: empty."""
        if engine == -2:
            self.n[row] = 0
        else:
            self.n[row] = 1
            self.keys[row * self.width] = engine
            self.ops[row * self.width] = op


cdef class _Lowering(TraceChecker):
    """The state of `lower` while it walks the trace, and one handler per event kind (`load`, `compute`, `open`,
    `alloc`, `free`, `store`) that checks the event (the TraceChecker's check of that kind, so a bad event is a
    TraceError before it is lowered) and applies that kind's rules.

    Operations are columns of growable numpy arrays (index = op id), their dependencies one flat array (op * 4 +
    reason) cut by `dep_ptr`. Buffers have persistent columns (index = buffer id: tensor, bytes, first fill, freed,
    the users whose end releases the slot) and, while live, a row of working state (the op that last wrote it, the
    last op per engine that read its current contents (`readers`) and that used it since its last fill (`users`),
    the region it holds, the slot dependencies of its first fill); rows are reused after a FREE."""

    cdef int channels, e_store, e_tc, e_vec, p_load, p_store, n_loads, n_eng
    cdef bint shared
    cdef list engine_names, engine_ports
    cdef object setup, bw_num, bw_den
    cdef dict xfer_cycles
    cdef Py_ssize_t n, cap, n_deps, dep_cap, n_buf, buf_cap, n_final, final_cap
    cdef object kind_a, engine_a, port_a, ddr_a, dur_a, op_bytes_a, tensor_a, buffer_a, event_a, prev_a, ptr_a, dep_a
    cdef signed char[::1] kind, engine, port
    cdef unsigned char[::1] ddr
    cdef long long[::1] dur, op_bytes, ptr, deps
    cdef int[::1] tensor, buffer, event, prev
    cdef list region, extra  # per op: its region; FREE-node deps patched onto earlier ops: (op, dep)
    cdef dict regions  # each distinct region once: ops share it (demo1's 8 M ops name far fewer regions)
    cdef object last_on_a
    cdef long long[::1] last_on  # per engine, its last op
    # buffers
    cdef object b_first_a, b_freed_a, b_row_a, b_fptr_a, b_fn_a, final_a  # (tensor, bytes: TraceChecker's)
    cdef int[::1] b_row, b_fn
    cdef long long[::1] b_first, b_fptr, final
    cdef unsigned char[::1] b_freed
    # live rows
    cdef object r_last_a
    cdef long long[::1] r_last
    cdef list r_region, r_pending, free_rows
    cdef _EngineMap readers, users
    cdef dict forward_waiters
    cdef _Occupancy occupancy
    cdef object live_charged, peak_charged, macs, tc_macs, padded_macs, loaded, stored

    def __init__(self, trace: Trace, hardware: Accelerator) -> None:
        super().__init__(trace, hardware)
        channels = self.channels = hardware.dma_load_channels
        self.e_store, self.e_tc, self.e_vec = channels, channels + 1, channels + 2
        names = ["dma-load"] if channels == 1 else [f"dma-load{k}" for k in range(channels)]
        self.engine_names = names + ["dma-store", "tensorcore", "vector"]
        self.n_eng = len(self.engine_names)
        self.shared = hardware.dram_shared_load_store
        self.p_load, self.p_store = 0, (0 if self.shared else 1)
        self.engine_ports = [self.p_load] * channels + [self.p_store, -1, -1]
        bw = Fraction(repr(float(hardware.dram_bytes_per_cycle)))  # exact integer arithmetic for the cycles
        self.setup, self.bw_num, self.bw_den = hardware.dma_setup_cycles, bw.numerator, bw.denominator
        self.xfer_cycles = {}
        self.n = self.n_deps = self.n_buf = self.n_final = 0
        self.grow_ops(1024)
        self.grow_deps(2048)
        self.grow_buffers(256)
        self.grow_final(512)
        self.region, self.extra, self.regions = [], [], {}
        self.last_on_a = np.full(self.n_eng, -1, np.int64)
        self.last_on = self.last_on_a
        self.r_last_a = np.zeros(16, np.int64)
        self.r_last = self.r_last_a
        self.r_region, self.r_pending, self.free_rows = [None] * 16, [None] * 16, list(range(15, -1, -1))
        self.readers, self.users = _EngineMap(self.n_eng + 1), _EngineMap(self.n_eng + 1)
        self.forward_waiters = {}  # live occupant -> buffers allocated over its bytes
        self.occupancy = _Occupancy()  # which buffer last held each SRAM byte
        self.live_charged = self.peak_charged = 0
        self.macs = self.tc_macs = self.padded_macs = self.loaded = self.stored = 0
        self.n_loads = 0

    # -- growable columns ------------------------------------------------------------------------------------
    cdef void grow_ops(self, Py_ssize_t cap):
        self.cap = cap
        self.kind_a, self.engine_a, self.port_a = [_grown(a, cap, np.int8) for a in (self.kind_a, self.engine_a,
                                                                                      self.port_a)]
        self.tensor_a, self.buffer_a, self.event_a, self.prev_a = [_grown(a, cap, np.intc) for a in (
            self.tensor_a, self.buffer_a, self.event_a, self.prev_a)]
        self.dur_a, self.op_bytes_a = [_grown(a, cap, np.int64) for a in (self.dur_a, self.op_bytes_a)]
        self.ddr_a, self.ptr_a = _grown(self.ddr_a, cap, np.uint8), _grown(self.ptr_a, cap + 1, np.int64)
        self.kind, self.engine, self.port, self.ddr = self.kind_a, self.engine_a, self.port_a, self.ddr_a
        self.dur, self.op_bytes, self.ptr = self.dur_a, self.op_bytes_a, self.ptr_a
        self.tensor, self.buffer, self.event, self.prev = self.tensor_a, self.buffer_a, self.event_a, self.prev_a

    cdef void grow_deps(self, Py_ssize_t cap):
        self.dep_cap, self.dep_a = cap, _grown(self.dep_a, cap, np.int64)
        self.deps = self.dep_a

    cdef void grow_buffers(self, Py_ssize_t cap):
        self.buf_cap = cap
        self.b_row_a, self.b_fn_a = [_grown(a, cap, np.intc) for a in (self.b_row_a, self.b_fn_a)]
        self.b_first_a, self.b_fptr_a = [_grown(a, cap, np.int64) for a in (self.b_first_a, self.b_fptr_a)]
        self.b_freed_a = _grown(self.b_freed_a, cap, np.uint8)
        self.b_row, self.b_fn, self.b_freed = self.b_row_a, self.b_fn_a, self.b_freed_a
        self.b_first, self.b_fptr = self.b_first_a, self.b_fptr_a

    cdef void grow_final(self, Py_ssize_t cap):
        self.final_cap, self.final_a = cap, _grown(self.final_a, cap, np.int64)
        self.final = self.final_a

    cdef inline void dep(self, long long d):
        """Add dependency d (op * 4 + reason) to the operation being built."""
        if self.n_deps == self.dep_cap:
            self.grow_deps(2 * self.dep_cap)
        self.deps[self.n_deps] = d
        self.n_deps += 1

    cdef Py_ssize_t add_op(self, int kind, int engine, long long dur, int port, long long nbytes, int tensor,
                           int buffer, object region, Py_ssize_t event, bint ddr):
        """Append one operation whose dependencies were just added with `dep`; its id."""
        cdef Py_ssize_t op = self.n
        if op == self.cap:
            self.grow_ops(2 * self.cap)
        self.kind[op], self.engine[op], self.dur[op], self.port[op] = kind, engine, dur, port
        self.op_bytes[op], self.tensor[op], self.buffer[op], self.event[op] = nbytes, tensor, buffer, event
        self.ddr[op] = ddr
        self.region.append(self.regions.setdefault(region, region))
        self.ptr[op + 1] = self.n_deps
        if engine >= 0:
            self.prev[op] = self.last_on[engine]
            self.last_on[engine] = op
        else:
            self.prev[op] = -1
        self.n = op + 1
        return op

    cdef inline long long cycles(self, object nb):
        """A transfer's cycles: dma_setup_cycles + ceil(nb / dram_bytes_per_cycle) (computed once per size)."""
        c = self.xfer_cycles.get(nb)
        if c is None:
            c = self.xfer_cycles[nb] = self.setup + ceil_div(nb * self.bw_den, self.bw_num)
        return c

    cdef void slot_deps(self, Py_ssize_t row, int engine):
        """A fill's slot dependencies: its first fill waits for the slot's previous occupants (`pending`), a
        reuse-flag fill for every earlier operation on the buffer; none on `engine`'s own ops (program order;
        -2: keep all)."""
        cdef Py_ssize_t k, base
        cdef long long d
        pending = self.r_pending[row]
        if pending is not None:
            self.r_pending[row] = None
            for d in pending:
                if engine == -2 or self.engine[d] != engine:
                    self.dep(d * 4 + SLOT)
        else:
            base = row * self.users.width
            for k in range(self.users.n[row]):
                if engine == -2 or self.users.keys[base + k] != engine:
                    self.dep(self.users.ops[base + k] * 4 + SLOT)

    cdef void filled(self, Py_ssize_t b, Py_ssize_t row, Py_ssize_t op, int engine, object reg):
        """Buffer b (live row `row`) now holds `reg`, written by op on `engine`."""
        if self.b_first[b] < 0:
            self.b_first[b] = op
        self.r_last[row] = op
        self.readers.reset(row, -2, 0)
        self.users.reset(row, engine, op)
        self.r_region[row] = reg

    # -- one handler per event kind ------------------------------------------------------------------------------
    cdef int load(self, Py_ssize_t idx, object ev) except -1:
        """LOAD: a transfer on the next load channel; a fill of its buffer (slot dependencies)."""
        TraceChecker.load(self, idx, ev)
        cdef int ch = self.n_loads % self.channels
        _, b, t, reg, nb, _reuse = ev
        self.n_loads += 1
        cdef Py_ssize_t row = self.b_row[b]
        self.slot_deps(row, ch)
        cdef Py_ssize_t op = self.add_op(C_LOAD_OP, ch, self.cycles(nb), self.p_load, nb, t, b, reg, idx,
                                         self.writable[t])
        self.filled(b, row, op, ch, reg)
        self.loaded += nb
        return 0

    cdef int open(self, Py_ssize_t idx, object ev) except -1:
        """OPEN: a zeroed fill on no engine; slot dependencies as for a LOAD, on every engine."""
        TraceChecker.open(self, idx, ev)
        _, b, t, reg, _reuse = ev
        cdef Py_ssize_t row = self.b_row[b]
        self.slot_deps(row, -2)
        cdef Py_ssize_t op = self.add_op(C_OPEN_OP, -1, 0, -1, 0, t, b, reg, idx, False)
        self.filled(b, row, op, -1, reg)
        return 0

    cdef int compute(self, Py_ssize_t idx, object ev) except -1:
        """COMPUTE: RAW on its inputs and output, WAR on the output's readers."""
        TraceChecker.compute(self, idx, ev)
        cdef int eng, okind
        cdef Py_ssize_t lw, op, k, row, base
        _, unit, _opname, out, ins, m, cyc, pm = ev
        if unit == "tensorcore":
            eng, okind = self.e_tc, C_TC_OP
            self.tc_macs += m
        else:
            eng, okind = self.e_vec, C_VEC_OP
        for b in ins:
            lw = self.r_last[self.b_row[b]]
            if self.engine[lw] != eng:
                self.dep(lw * 4 + DATA)
        row = self.b_row[out]
        lw = self.r_last[row]
        if self.engine[lw] != eng:
            self.dep(lw * 4 + DATA)
        base = row * self.readers.width
        for k in range(self.readers.n[row]):
            if self.readers.keys[base + k] != eng:
                self.dep(self.readers.ops[base + k] * 4 + WAR)
        op = self.add_op(okind, eng, cyc, -1, 0, self.b_tensor[out], out, self.r_region[row], idx, False)
        for b in ins:
            self.readers.set(self.b_row[b], eng, op)
            self.users.set(self.b_row[b], eng, op)
        self.r_last[row] = op
        self.readers.reset(row, -2, 0)
        self.users.set(row, eng, op)
        self.macs += m
        self.padded_macs += pm
        return 0

    cdef int store(self, Py_ssize_t idx, object ev) except -1:
        """STORE: a transfer on the store engine after the last write of its buffer; a reader of the buffer."""
        TraceChecker.store(self, idx, ev)
        _, b, t, reg, nb = ev
        cdef Py_ssize_t row = self.b_row[b]
        self.dep(self.r_last[row] * 4 + DATA)  # validated: a fill or a compute wrote the buffer
        cdef Py_ssize_t op = self.add_op(C_STORE_OP, self.e_store, self.cycles(nb), self.p_store, nb, t, b, reg,
                                         idx, True)
        self.readers.set(row, self.e_store, op)
        self.users.set(row, self.e_store, op)
        self.stored += nb
        return 0

    cdef int alloc(self, Py_ssize_t idx, object ev) except -1:
        """ALLOC: a new buffer whose first fill waits for the previous occupants of its bytes."""
        TraceChecker.alloc(self, idx, ev)
        cdef Py_ssize_t row, p
        _, b, t, reg, nb, address, charged = ev
        pending = ()
        for prev in self.occupancy.take(address, address + nb, b):
            p = prev
            if self.b_freed[p]:
                users = [self.final[k] for k in range(self.b_fptr[p], self.b_fptr[p] + self.b_fn[p])]
                pending = pending + users if pending else users
            else:  # the occupant is still live: wait for its FREE (a FREE node, patched in when reached)
                self.forward_waiters.setdefault(prev, []).append(b)
        if self.n_buf == self.buf_cap:
            self.grow_buffers(2 * self.buf_cap)
        if not self.free_rows:
            rows = len(self.r_region)
            self.readers.resize(2 * rows)
            self.users.resize(2 * rows)
            self.r_last_a = _grown(self.r_last_a, 2 * rows, np.int64)
            self.r_last = self.r_last_a
            self.r_region += [None] * rows
            self.r_pending += [None] * rows
            self.free_rows = list(range(2 * rows - 1, rows - 1, -1))
        row = self.free_rows.pop()
        self.b_first[b], self.b_freed[b], self.b_row[b] = -1, 0, row
        self.b_fptr[b], self.b_fn[b] = 0, 0
        self.n_buf = b + 1
        self.r_last[row] = -1
        self.r_region[row] = reg
        self.r_pending[row] = pending
        self.readers.reset(row, -2, 0)
        self.users.reset(row, -2, 0)
        self.live_charged += charged
        if self.live_charged > self.peak_charged:
            self.peak_charged = self.live_charged
        return 0

    cdef int free(self, Py_ssize_t idx, object ev) except -1:
        """FREE: the slot is released when every op on the buffer ends; a FREE node if a later buffer waits."""
        TraceChecker.free(self, idx, ev)
        cdef Py_ssize_t k, row, base, node, first, n_users
        _, b, charged = ev
        row = self.b_row[b]
        n_users = self.users.n[row]
        base = row * self.users.width
        if self.n_final + n_users > self.final_cap:
            self.grow_final(2 * self.final_cap + n_users)
        self.b_freed[b] = 1
        self.b_fptr[b], self.b_fn[b] = self.n_final, n_users
        for k in range(n_users):
            self.final[self.n_final + k] = self.users.ops[base + k]
        self.n_final += n_users
        self.free_rows.append(row)
        self.live_charged -= charged
        waiters = self.forward_waiters.pop(b, None)
        if waiters:
            for k in range(n_users):
                self.dep(self.users.ops[base + k] * 4 + DATA)
            node = self.add_op(C_FREE_OP, -1, 0, -1, 0, -1, b, None, idx, False)
            for w in waiters:
                first = self.b_first[w]
                if first >= 0:
                    self.extra.append((first, node * 4 + SLOT))
                elif not self.b_freed[w]:  # (a waiter freed unfilled never needs it)
                    self.r_pending[self.b_row[w]] = list(self.r_pending[self.b_row[w]]) + [node]
        return 0

    def graph(self, trace: Trace) -> OpGraph:
        """The OpGraph of everything lowered so far."""
        # validated: every buffer is freed, so no forward waiter is left without its FREE node
        n, nb = self.n, self.n_buf
        ptr, deps = self.ptr_a[:n + 1], self.dep_a[:self.n_deps]
        if self.extra:  # FREE-node dependencies patched onto earlier ops go after each op's own
            ptr, deps = _with_extra(ptr, deps, self.extra)
        kind, engine, tensor, ddr = self.kind_a[:n], self.engine_a[:n], self.tensor_a[:n], self.ddr_a[:n].view(bool)
        stores, loads = {}, {}
        st = np.flatnonzero(kind == C_STORE_OP)
        for t in np.unique(tensor[st]).tolist():
            stores[t] = st[tensor[st] == t]
        ld = np.flatnonzero((kind == C_LOAD_OP) & ddr)
        for t in np.unique(tensor[ld]).tolist():
            of_t = ld[tensor[ld] == t]
            loads[t] = [of_t[engine[of_t] == ch] for ch in range(self.channels)]
        fptr, fn = self.b_fptr_a[:nb], self.b_fn_a[:nb]
        return OpGraph(
            n=n, kind=kind, engine=engine, dur=self.dur_a[:n], port=self.port_a[:n], dep_ptr=ptr, dep_val=deps,
            nbytes=self.op_bytes_a[:n], tensor=tensor, buffer=self.buffer_a[:n], region=self.region,
            event=self.event_a[:n], prev_on_engine=self.prev_a[:n], ddr_check=ddr,
            queues=[np.flatnonzero(engine == e) for e in range(self.n_eng)], engine_names=self.engine_names,
            engine_ports=self.engine_ports, n_ports=1 if self.shared else 2, load_engines=tuple(range(self.channels)),
            store_engine=self.e_store, tensorcore_engine=self.e_tc, vector_engine=self.e_vec,
            stores_by_tensor=stores, loads_by_tensor=loads, buffer_tensor=np.fromiter(self.b_tensor, np.intc, nb),
            buffer_nbytes=np.fromiter(self.b_nbytes, np.int64, nb), buffer_first_op=self.b_first_a[:nb],
            buffer_final_ptr=fptr, buffer_final_n=fn, buffer_final_ops=self.final_a[:self.n_final],
            reserved_sram_bytes=self.peak_charged, macs=self.macs, tensorcore_macs=self.tc_macs,
            padded_macs=self.padded_macs, loaded_bytes=self.loaded, stored_bytes=self.stored,
            tensor_names=[t.name for t in trace.tensors])


def _grown(old: np.ndarray | None, cap: int, dtype=None) -> np.ndarray:
    """A copy of `old` with room for `cap` entries (zeros after the old ones); dtype: of a new one (old is None)."""
    new = np.zeros(cap, dtype if old is None else old.dtype)
    if old is not None:
        new[:len(old)] = old
    return new


def _with_extra(ptr: np.ndarray, deps: np.ndarray, extra: list) -> tuple[np.ndarray, np.ndarray]:
    """CSR dependencies with `extra` (op, dep) pairs appended after each op's own, in the order given."""
    per_op: dict[int, list[int]] = {}
    for op, d in extra:
        per_op.setdefault(op, []).append(d)
    counts = np.diff(ptr)
    for op, ds in per_op.items():
        counts[op] += len(ds)
    new_ptr = np.zeros(len(ptr), np.int64)
    np.cumsum(counts, out=new_ptr[1:])
    new = np.empty(new_ptr[-1], np.int64)
    pos = np.repeat(new_ptr[:-1] - ptr[:-1], np.diff(ptr)) + np.arange(len(deps))  # own deps, shifted
    new[pos] = deps
    for op, ds in per_op.items():
        end = new_ptr[op + 1]
        new[end - len(ds):end] = ds
    return new_ptr, new


def lower(trace: Trace, hardware: Accelerator) -> OpGraph:
    """Lower a trace into the operation graph of the timing model (see the module docstring for the rules).

    Each event is checked (`validate.TraceChecker`: TraceError names the first bad event) before its handler
    lowers it, in one pass, so the handlers can trust every id, region and byte count."""
    cdef _Lowering state = _Lowering(trace, hardware)
    cdef Py_ssize_t idx = 0
    for ev in trace.events:
        state.run(idx, ev)  # the check and the lowering of the event's kind
        idx += 1
    state.finish()
    return state.graph(trace)


overlaps = regions_overlap  # the timing modules' name for it (one definition, in dsasim.util)
