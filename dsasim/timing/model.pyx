# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The timing model's first half: lowering a trace into an operation graph (engines, durations, dependencies).

The trace is the only input. Every rule of the model that does not involve time lives here; the schedulers
(`engine.pyx`, exact and fast; `reference.py`, simpy) only decide *when* each operation runs. The lowering is one
pass over the events: `_Lowering` is a `TraceChecker` (validate.pyx) whose handler for each event kind checks the
event, then applies the rules below; the graph it builds is columnar (numpy arrays, see `OpGraph`).

Engines. Each engine runs its own operations one at a time, in program (trace) order:
  * `dma-load` (or `dma-load0`, `dma-load1`, ... when `dma_load_channels` > 1): LOAD events, and SLIDE events
    that move bytes (the new rows of a rotating buffer; a slide that moves none is no operation). Loads are dealt to
    the channels round-robin in program order (load j goes to channel j mod channels).
  * `dma-store`: STORE events.
  * `tensorcore`: COMPUTE events whose unit is "tensorcore"; `vector`: every other COMPUTE event.
  * `dma-<level>` and `dma-<level>-wb` (e.g. `dma-L1acc`, `dma-L1acc-wb`), per memory level below the SRAM
    (`hardware.inner_levels`): the STAGE and the WRITEBACK events of that level's buffers, two in-order queues
    that share the level's own port to its parent (as DDR's load and store engines share a port): the port
    carries one transfer at a time, and a stage into the next slot of an N-way buffer need not wait behind the
    write-back of the current slot.
OPEN events (a zeroed region, no DMA) run on no engine and take 0 cycles, but still wait for their slot; HIT,
ALLOC, ENTER and EXIT events are not operations; a FREE event releases its buffer's slot (below).

Durations, in cycles. A transfer (LOAD or STORE) of b bytes takes dma_setup_cycles + ceil(b / bandwidth), with
bandwidth = dram_bytes_per_cycle, and holds its DDR port for all of it, setup included. With layout costs on
(dma_burst_bytes > 1 or dma_run_cycles > 0) it takes dma_setup_cycles + runs x dma_run_cycles + ceil(b' /
bandwidth): runs are the contiguous DDR runs of its region in its tensor's layout (one descriptor each), b' their
bytes each rounded up to whole bursts (`dsasim.layout`, `_Lowering.transfer`). A STAGE or WRITEBACK of b bytes
takes level.setup_cycles + ceil(b / level.bytes_per_cycle) of the inner level it fills or empties. A COMPUTE takes the
cycles recorded in its event (the TensorCore's cost model: ceil(ic/16) x ceil(oc/24) x pixels x taps; the
vector unit's ceil(elements / lanes)).

Dependencies (an operation starts only after all of these have finished):
  * data (RAW): a COMPUTE waits for the last write of each buffer it reads and of the buffer it writes (the LOAD
    or OPEN that filled it, or the last COMPUTE that wrote it). A HIT adds nothing: the compute that reads the
    buffer already waits for whatever last wrote it. A STORE waits for the last write of its buffer.
  * levels: a STAGE is a fill of its inner buffer (slot rules below, in that level's own address space) and a
    read of its source buffer: it waits for the source's last write (the LOAD, OPEN or STAGE that filled it, or
    the last COMPUTE or WRITEBACK that wrote it); when the source's latest writes are WRITEBACKs of regions of it
    (an accumulator's tiles coming home into one SRAM buffer), only for those whose regions meet its own, and
    the write before them: a partial sum is staged back once its own tile is home, not every other tile. A
    WRITEBACK reads its inner buffer (it waits for the buffer's last write) and writes its target: like a
    COMPUTE writing it, it waits for the target's last write and for
    every operation that read the target's current contents (WAR), and later readers of the target (a STORE, a
    STAGE, a COMPUTE) wait for it. An OPEN of an inner buffer is a zero-fill as in the SRAM.
  * write-after-read (WAR) inside a buffer: a COMPUTE that writes a buffer waits for every operation that read
    the buffer's current contents (computes on other engines, a STORE, a STAGE from it).
  * slot (WAR on SRAM space, and on each inner level's own space): the first fill (LOAD, OPEN or STAGE) of a
    newly allocated buffer waits until every operation on the previous occupants of its bytes (the buffers of its
    level that last held any byte of [address, address + nbytes), per the ALLOC and ALLOC_IN events; an N-way
    scope's block holds N copies used in turn, so consecutive
    instances do not wait for each other) has finished, their final STOREs included. A reuse-flag
    fill (a LOAD or OPEN into a buffer that already exists, no new ALLOC) likewise waits for every earlier
    operation on that buffer, its pending STORE included; so does a SLIDE (its new rows overwrite the rows the
    earlier computes read).
  * DDR (RAW/WAR through memory): a LOAD of a region of a writable tensor waits for every earlier (in program
    order) STORE to an overlapping region of that tensor; a STORE waits for every earlier LOAD of an
    overlapping region of its tensor. (Two stores are ordered by the single in-order store engine.) STAGE and
    WRITEBACK do not touch DDR: these rules do not apply to them.
Dependencies on an earlier operation of the same engine are implied by program order and dropped.

FREE: a buffer's bytes (in its level) become reusable when all operations on the buffer (its final STORE or
WRITEBACK included) have finished. A new buffer allocated over the bytes of a still-live buffer waits for that
occupant's FREE (a valid trace frees every buffer: `validate.pyx`); a wait that closes a cycle (e.g. the occupant
is used later by an operation queued behind the waiting load) is reported by the scheduler (`engine.build_timeline`) as a
`DeadlockError` naming the stuck operations.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from libc.stdint cimport int64_t
from libc.string cimport memmove

from dsasim.hardware import Accelerator
from dsasim.layout import DEFAULT_LAYOUT, transfer_runs
from dsasim.util import regions_overlap
from dsasim.traced.trace import (ALLOC, ALLOC_IN, COMPUTE, FREE, LOAD, OPEN, SLIDE, STAGE, STORE, WRITEBACK, Trace,
                                 format_region)
from dsasim.traced._events cimport EventLog, region_start, region_stepped, region_stop
from dsasim.timing.validate cimport FREED, TraceChecker
from dsasim.timing.validate import _grown

# operation kinds
LOAD_OP, STORE_OP, TC_OP, VEC_OP, OPEN_OP, FREE_OP, STAGE_OP, WRITEBACK_OP = range(8)
KIND_NAMES = ("load", "store", "tensorcore", "vector", "open", "free", "stage", "writeback")
# dependency reasons, stored in the low two bits of an encoded dependency (op * 4 + reason)
DATA, SLOT, WAR = 0, 1, 2
REASON_NAMES = ("data", "slot", "war")
cdef int C_LOAD_OP = LOAD_OP, C_STORE_OP = STORE_OP, C_TC_OP = TC_OP, C_VEC_OP = VEC_OP, C_OPEN_OP = OPEN_OP
cdef int C_FREE_OP = FREE_OP, C_STAGE_OP = STAGE_OP, C_WRITEBACK_OP = WRITEBACK_OP
cdef int64_t C_DATA = DATA, C_SLOT = SLOT, C_WAR = WAR


cdef class _Occupancy:
    """Which buffer last occupied each byte of one memory level: disjoint [start, stop) runs sorted by start, in C
    arrays."""

    cdef Py_ssize_t n, cap
    cdef object runs_a, prev_a
    cdef int64_t[:, ::1] runs  # (start, stop, owner) per run
    cdef int64_t[::1] prev  # the owners `take` found

    def __init__(self) -> None:
        self.n, self.cap = 0, 64
        self.runs_a, self.prev_a = np.zeros((64, 3), np.int64), np.zeros(64, np.int64)
        self.runs, self.prev = self.runs_a, self.prev_a

    cdef Py_ssize_t take(self, int64_t start, int64_t stop, int64_t buffer) except -1:
        """Give [start, stop) to `buffer`; the buffers that last held any of those bytes are prev[:returned count]
        (the common case: one, a slot's next turn)."""
        cdef Py_ssize_t lo = 0, hi = self.n, mid, i, j, k, m, count = 0
        cdef int64_t left, right
        while lo < hi:  # i: the first run starting after `start`
            mid = (lo + hi) // 2
            if self.runs[mid, 0] <= start:
                lo = mid + 1
            else:
                hi = mid
        i = lo
        if i and self.runs[i - 1, 1] > start:
            i -= 1
            if self.runs[i, 0] == start and self.runs[i, 1] == stop:  # the same bytes again
                self.prev[0] = self.runs[i, 2]
                self.runs[i, 2] = buffer
                return 1
        j = i
        while j < self.n and self.runs[j, 0] < stop:
            for k in range(count):
                if self.prev[k] == self.runs[j, 2]:
                    break
            else:
                if count == len(self.prev_a):
                    self.prev_a = _grown(self.prev_a, 2 * count)
                    self.prev = self.prev_a
                self.prev[count] = self.runs[j, 2]
                count += 1
            j += 1
        # runs i..j-1 become: the part of run i before `start`, the new run, the part of run j-1 after `stop`
        left = self.runs[i, 0] if j > i and self.runs[i, 0] < start else -1
        right = self.runs[j - 1, 1] if j > i and self.runs[j - 1, 1] > stop else -1
        cdef int64_t left_owner = self.runs[i, 2] if left >= 0 else 0, right_owner = self.runs[j - 1, 2] if right >= 0 else 0
        m = 1 + (left >= 0) + (right >= 0)
        if self.n - (j - i) + m > self.cap:
            self.cap *= 2
            self.runs_a = np.concatenate([self.runs_a, np.zeros_like(self.runs_a)])
            self.runs = self.runs_a
        if self.n > j:
            memmove(&self.runs[i + m, 0], &self.runs[j, 0], (self.n - j) * 3 * sizeof(int64_t))
        self.n += m - (j - i)
        k = i
        if left >= 0:
            self.runs[k, 0], self.runs[k, 1], self.runs[k, 2] = left, start, left_owner
            k += 1
        self.runs[k, 0], self.runs[k, 1], self.runs[k, 2] = start, stop, buffer
        if right >= 0:
            self.runs[k + 1, 0], self.runs[k + 1, 1], self.runs[k + 1, 2] = stop, right, right_owner
        return count


cdef class RegionColumn:
    """Per operation, the region it moves or computes into, as a tuple of (start, stop) pairs (None for a FREE
    node), read on demand from the trace's region table: 8 bytes per operation instead of a tuple each.
    Attributes: model.pxd."""

    def __init__(self, EventLog log, offsets: np.ndarray, tensors: np.ndarray, ndim: np.ndarray) -> None:
        self.log, self.offsets_a, self.tensors_a, self.ndim_a = log, offsets, tensors, ndim
        self.offsets, self.tensors, self.ndim = offsets, tensors, ndim

    def __len__(self) -> int:
        return len(self.offsets_a)

    def __getitem__(self, index):
        """The region of operation `index` (negative: from the end); a slice gives a tuple of them."""
        cdef Py_ssize_t n = len(self.offsets_a), op
        if isinstance(index, slice):
            return tuple([self[op] for op in range(*index.indices(n))])
        op = index
        if op < 0:
            op += n
        if not 0 <= op < n:
            raise IndexError(f"operation {index} out of range 0..{n - 1}")
        if self.offsets[op] < 0:
            return None
        return self.log.region_at(self.offsets[op], self.ndim[self.tensors[op]])

    def __iter__(self):
        for op in range(len(self.offsets_a)):
            yield self[op]

    def select(self, ops: np.ndarray) -> RegionColumn:
        """The column of the operations `ops` (indices, in the order given)."""
        return RegionColumn(self.log, self.offsets_a[ops], self.tensors_a[ops], self.ndim_a)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (RegionColumn, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __repr__(self) -> str:
        return f"RegionColumn({len(self)} regions)"

    cpdef bint overlaps(self, Py_ssize_t a, Py_ssize_t b):
        """Whether the regions of operations a and b (of one tensor) share an element."""
        return _meet(self.log.regions.at(self.offsets[a]), self.log.regions.at(self.offsets[b]),
                     self.ndim[self.tensors[a]])


cdef inline bint _meet(int64_t* ra, int64_t* rb, int64_t ndim):
    """Whether two regions of the log's region table (of one tensor, `ndim` dimensions) share an element."""
    cdef int64_t i
    for i in range(ndim):
        if region_start(ra, i) >= region_stop(rb, i) or region_start(rb, i) >= region_stop(ra, i):
            return False
    return True


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
    region: RegionColumn  # per op, its region tuple (None for FREE nodes), read from the trace's region table
    event: np.ndarray  # int32 index of the trace event (for a FREE node, of its FREE event)
    prev_on_engine: np.ndarray  # int32 previous operation of the same engine, -1 if first
    ddr_check: np.ndarray  # bool: transfers of writable tensors, whose DDR dependencies the scheduler resolves
    queues: list[np.ndarray]  # per engine, its operations in program order
    engine_names: list[str]
    engine_ports: list[int]  # per engine, its DDR port (-1 for compute engines and the inner levels' dma-<level>)
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
    reserved_sram_bytes: int  # peak of the trace's charged SRAM bytes (N-way scopes charge N x)
    macs: int  # all MACs of the trace (vector dot products included)
    tensorcore_macs: int  # useful MACs of TensorCore operations
    padded_macs: int
    loaded_bytes: int
    stored_bytes: int
    tensor_names: list[str]
    # memory levels, the SRAM first (index 0), then `hardware.inner_levels`
    level_names: list[str]
    level_engines: list[int]  # per level, the engine of its STAGEs (-1 for the SRAM)
    level_writeback_engines: list[int]  # per level, the engine of its WRITEBACKs, on the same port (-1: SRAM)
    reserved_level_bytes: list[int]  # per level, the peak of the trace's charged bytes ([0]: reserved_sram_bytes)
    buffer_level: np.ndarray  # int32 per buffer: the index of its level

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
                VEC_OP: "vector compute into", OPEN_OP: "open of", STAGE_OP: "stage of",
                WRITEBACK_OP: "write-back of"}[kind]
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
    `alloc`, `alloc_in`, `stage`, `writeback`, `free`, `store`, `slide`) that checks the event (the TraceChecker's check of that kind, so a bad event is a
    TraceError before it is lowered) and applies that kind's rules.

    Operations are columns of growable numpy arrays (index = op id), their dependencies one flat array (op * 4 +
    reason) cut by `dep_ptr`. Buffers have persistent columns (index = buffer id: first fill, freed, the users
    whose end releases the slot) and, while live, a row of working state (the op that last wrote it, the last op
    per engine that read its current contents (`readers`) and that used it since its last fill (`users`), the
    region it holds, the slot dependencies of its first fill); rows are reused after a FREE."""

    cdef int channels, e_store, e_tc, e_vec, p_load, p_store, n_eng
    cdef bint shared
    cdef list engine_names, engine_ports
    cdef int64_t setup, bw_num, bw_den, n_loads, burst, run_cycles
    cdef bint layout_cost
    cdef list layouts
    cdef Py_ssize_t n, cap, n_deps, dep_cap, n_final, final_cap, n_pool, pool_cap
    cdef object kind_a, engine_a, port_a, ddr_a, dur_a, op_bytes_a, tensor_a, buffer_a, event_a, prev_a, ptr_a, dep_a
    cdef object region_a
    cdef signed char[::1] kind, engine, port
    cdef unsigned char[::1] ddr
    cdef int64_t[::1] dur, op_bytes, ptr, deps, region
    cdef int[::1] tensor, buffer, event, prev
    cdef list extra  # FREE-node deps patched onto earlier ops: (op, dep)
    cdef int64_t[::1] last_on  # per engine, its last op
    # buffers
    cdef object b_first_a, b_row_a, b_fptr_a, b_fn_a, final_a, pool_a
    cdef int[::1] b_row, b_fn
    cdef int64_t[::1] b_first, b_fptr, final, pool
    cdef Py_ssize_t lb_cap
    # live rows; a row's pending slot dependencies are pool[r_pptr:r_pptr + r_pn], r_pn = -1 once filled
    cdef object r_last_a, r_region_a, r_pptr_a, r_pn_a
    cdef int64_t[::1] r_last, r_region, r_pptr
    cdef int[::1] r_pn
    cdef Py_ssize_t n_free_rows
    cdef object free_rows_a
    cdef int64_t[::1] free_rows  # a stack of the rows not in use
    cdef _EngineMap readers, users
    cdef dict forward_waiters
    cdef dict partial  # row -> [the write before, {region offset: WRITEBACK op}]: its writes since, all write-backs
    cdef list occupancies  # per level, an _Occupancy of its own address space
    # per level: the engine of its STAGEs and WRITEBACKs (-1 for the SRAM), its transfer time's setup cycles and
    # bytes per cycle as an exact fraction num / den, the peak of its charged bytes
    cdef object lv_engine_a, lv_wb_engine_a, lv_port_a, lv_setup_a, lv_num_a, lv_den_a, lv_peak_a
    cdef int[::1] lv_engine, lv_wb_engine, lv_port
    cdef int n_ports
    cdef int64_t[::1] lv_setup, lv_num, lv_den, lv_peak
    cdef int64_t macs, tc_macs, padded_macs, loaded, stored

    def __init__(self, trace: Trace, hardware: Accelerator) -> None:
        super().__init__(trace, hardware)
        channels = self.channels = hardware.dma_load_channels
        self.e_store, self.e_tc, self.e_vec = channels, channels + 1, channels + 2
        names = ["dma-load"] if channels == 1 else [f"dma-load{k}" for k in range(channels)]
        self.shared = hardware.dram_shared_load_store
        self.p_load, self.p_store = 0, (0 if self.shared else 1)
        self.engine_ports = [self.p_load] * channels + [self.p_store, -1, -1]
        self.engine_names = names + ["dma-store", "tensorcore", "vector"]
        bw = _exact(hardware.dram_bytes_per_cycle)
        self.setup, self.bw_num, self.bw_den = hardware.dma_setup_cycles, bw.numerator, bw.denominator
        levels = hardware.levels
        self.lv_engine_a, self.lv_wb_engine_a, self.lv_port_a = [np.full(len(levels), -1, np.intc) for _ in range(3)]
        self.lv_setup_a, self.lv_num_a, self.lv_den_a = [np.ones(len(levels), np.int64) for _ in range(3)]
        self.lv_peak_a = np.zeros(len(levels), np.int64)
        self.n_ports = 1 if self.shared else 2
        for i in range(1, len(levels)):
            # two in-order queues, stages and write-backs, on the level's one port (as DDR's loads and stores): a
            # stage into the next slot of an N-way buffer need not wait behind the write-back of the current one
            self.lv_port_a[i] = self.n_ports
            self.n_ports += 1
            for target, suffix in ((self.lv_engine_a, ""), (self.lv_wb_engine_a, "-wb")):
                target[i] = len(self.engine_names)
                self.engine_names.append(f"dma-{levels[i].name}{suffix}")
                self.engine_ports.append(self.lv_port_a[i])
            lbw = _exact(levels[i].bytes_per_cycle)
            self.lv_setup_a[i], self.lv_num_a[i], self.lv_den_a[i] = levels[i].setup_cycles, lbw.numerator, \
                lbw.denominator
        self.lv_engine, self.lv_wb_engine, self.lv_port = self.lv_engine_a, self.lv_wb_engine_a, self.lv_port_a
        self.lv_setup, self.lv_num, self.lv_den = self.lv_setup_a, self.lv_num_a, self.lv_den_a
        self.lv_peak = self.lv_peak_a
        self.n_eng = len(self.engine_names)
        self.burst, self.run_cycles = hardware.dma_burst_bytes, hardware.dma_run_cycles
        self.layout_cost = self.burst > 1 or self.run_cycles > 0
        self.layouts = [getattr(t, "layout", DEFAULT_LAYOUT) for t in trace.tensors]
        self.n = self.n_deps = self.n_final = self.n_pool = 0
        # a columnar trace says how many operations and buffers it has: columns sized once (FREE nodes, deps and
        # final users grow as needed); a trace of tuples starts small
        ops, buffers = 1024, 256
        if trace._events is None and trace.log is self.log:
            counts = self.log.kind_counts()
            ops = 16 + sum(counts[k] for k in (LOAD, STORE, COMPUTE, OPEN, SLIDE, STAGE, WRITEBACK))
            buffers = 16 + counts[ALLOC] + counts[ALLOC_IN]
        self.grow_ops(ops)
        self.grow_deps(2 * ops)
        self.lb_cap = 0
        self.grow_lowered_buffers(buffers)
        self.grow_final(2 * buffers)
        self.pool_cap, self.pool_a = 256, np.zeros(256, np.int64)
        self.pool = self.pool_a
        self.extra = []
        self.last_on = np.full(self.n_eng, -1, np.int64)
        self.r_last_a, self.r_region_a, self.r_pptr_a = [np.zeros(16, np.int64) for _ in range(3)]
        self.r_pn_a = np.full(16, -1, np.intc)
        self.r_last, self.r_region, self.r_pptr, self.r_pn = self.r_last_a, self.r_region_a, self.r_pptr_a, self.r_pn_a
        self.free_rows_a = np.arange(15, -1, -1, dtype=np.int64)
        self.free_rows, self.n_free_rows = self.free_rows_a, 16
        self.readers, self.users = _EngineMap(self.n_eng + 1), _EngineMap(self.n_eng + 1)
        self.forward_waiters = {}  # live occupant -> buffers allocated over its bytes
        self.partial = {}
        self.occupancies = [_Occupancy() for _ in levels]  # per level, which buffer last held each byte
        self.macs = self.tc_macs = self.padded_macs = self.loaded = self.stored = 0
        self.n_loads = 0

    # -- growable columns (doubling: amortised O(1) per op) ---------------------------------------------------
    cdef void grow_ops(self, Py_ssize_t cap) except *:
        self.cap = cap
        self.kind_a, self.engine_a, self.port_a = [_grown(a, cap, np.int8) for a in (self.kind_a, self.engine_a,
                                                                                      self.port_a)]
        self.tensor_a, self.buffer_a, self.event_a, self.prev_a = [_grown(a, cap, np.intc) for a in (
            self.tensor_a, self.buffer_a, self.event_a, self.prev_a)]
        self.dur_a, self.op_bytes_a, self.region_a = [_grown(a, cap, np.int64) for a in (
            self.dur_a, self.op_bytes_a, self.region_a)]
        self.ddr_a, self.ptr_a = _grown(self.ddr_a, cap, np.uint8), _grown(self.ptr_a, cap + 1, np.int64)
        self.kind, self.engine, self.port, self.ddr = self.kind_a, self.engine_a, self.port_a, self.ddr_a
        self.dur, self.op_bytes, self.ptr, self.region = self.dur_a, self.op_bytes_a, self.ptr_a, self.region_a
        self.tensor, self.buffer, self.event, self.prev = self.tensor_a, self.buffer_a, self.event_a, self.prev_a

    cdef void grow_deps(self, Py_ssize_t cap) except *:
        self.dep_cap, self.dep_a = cap, _grown(self.dep_a, cap, np.int64)
        self.deps = self.dep_a

    cdef void grow_lowered_buffers(self, Py_ssize_t cap) except *:
        self.lb_cap = cap
        self.b_row_a, self.b_fn_a = [_grown(a, cap, np.intc) for a in (self.b_row_a, self.b_fn_a)]
        self.b_first_a, self.b_fptr_a = [_grown(a, cap, np.int64) for a in (self.b_first_a, self.b_fptr_a)]
        self.b_row, self.b_fn = self.b_row_a, self.b_fn_a
        self.b_first, self.b_fptr = self.b_first_a, self.b_fptr_a

    cdef void grow_final(self, Py_ssize_t cap) except *:
        self.final_cap, self.final_a = cap, _grown(self.final_a, cap, np.int64)
        self.final = self.final_a

    cdef inline void dep(self, int64_t d) except *:
        """Add dependency d (op * 4 + reason) to the operation being built."""
        if self.n_deps == self.dep_cap:
            self.grow_deps(self.dep_cap + self.dep_cap // 2)
        self.deps[self.n_deps] = d
        self.n_deps += 1

    cdef Py_ssize_t add_op(self, int kind, int engine, int64_t dur, int port, int64_t nbytes, int tensor,
                           int64_t buffer, int64_t region, Py_ssize_t event, bint ddr) except -1:
        """Append one operation whose dependencies were just added with `dep`; its id."""
        cdef Py_ssize_t op = self.n
        if op == self.cap:
            self.grow_ops(self.cap + self.cap // 2)
        self.kind[op], self.engine[op], self.dur[op], self.port[op] = kind, engine, dur, port
        self.op_bytes[op], self.tensor[op], self.buffer[op], self.event[op] = nbytes, tensor, buffer, event
        self.ddr[op], self.region[op] = ddr, region
        self.ptr[op + 1] = self.n_deps
        if engine >= 0:
            self.prev[op] = self.last_on[engine]
            self.last_on[engine] = op
        else:
            self.prev[op] = -1
        self.n = op + 1
        return op

    cdef inline int64_t cycles(self, int64_t nb):
        """A transfer's cycles: dma_setup_cycles + ceil(nb / dram_bytes_per_cycle), exactly."""
        return self.setup + (nb * self.bw_den + self.bw_num - 1) // self.bw_num

    cdef inline int64_t level_cycles(self, int level, int64_t nb):
        """A STAGE's or WRITEBACK's cycles: the level's setup_cycles + ceil(nb / its bytes_per_cycle), exactly."""
        return self.lv_setup[level] + (nb * self.lv_den[level] + self.lv_num[level] - 1) // self.lv_num[level]

    cdef int64_t transfer(self, Py_ssize_t idx, int64_t nb, int64_t t, int64_t reg) except -1:
        """A transfer of nb bytes of region `reg` of tensor t: `cycles(nb)`; with layout costs on (dma_burst_bytes
        > 1 or dma_run_cycles > 0), dma_setup_cycles + runs x dma_run_cycles + ceil(bytes in whole bursts /
        bandwidth), the runs and bursts of the region (a strided one's: `transfer_runs`' steps) in its tensor's DDR
        layout (`dsasim.layout`). A SLIDE moves
        only its new rows: its runs and burst bytes are the region's in proportion to the bytes it moves (exact
        when the slide axis lies outside the contiguous runs, as rows do in every layout here)."""
        if not self.layout_cost:
            return self.cycles(nb)
        region = TraceChecker.region(self, t, reg)
        if region_stepped(self.log.regions.at(reg)):  # a strided box: its runs hold its indices only
            runs, moved = transfer_runs(self.shapes[t], self.layouts[t], [axis[:2] for axis in region], self.word,
                                        self.burst, [axis[2] if len(axis) == 3 else 1 for axis in region])
        else:
            runs, moved = transfer_runs(self.shapes[t], self.layouts[t], region, self.word, self.burst)
        full = self.region_bytes(idx, t, reg)
        if nb != full:
            runs = -(-runs * nb // full)
            moved = -(-moved * nb // full)
        return self.setup + runs * self.run_cycles + (moved * self.bw_den + self.bw_num - 1) // self.bw_num

    cdef void slot_deps(self, Py_ssize_t row, int engine) except *:
        """A fill's slot dependencies: its first fill waits for the slot's previous occupants (`pending`), a
        reuse-flag fill for every earlier operation on the buffer; none on `engine`'s own ops (program order;
        -2: keep all)."""
        cdef Py_ssize_t k, base
        cdef int64_t d
        if self.r_pn[row] >= 0:
            for k in range(self.r_pn[row]):
                d = self.pending(row, k)
                if engine == -2 or self.engine[d] != engine:
                    self.dep(d * 4 + C_SLOT)
            self.r_pn[row] = -1
        else:
            base = row * self.users.width
            for k in range(self.users.n[row]):
                if engine == -2 or self.users.keys[base + k] != engine:
                    self.dep(self.users.ops[base + k] * 4 + C_SLOT)

    cdef void filled(self, int64_t b, Py_ssize_t row, Py_ssize_t op, int engine, int64_t reg):
        """Buffer b (live row `row`) now holds `reg`, written by op on `engine`."""
        if self.b_first[b] < 0:
            self.b_first[b] = op
        self.r_last[row] = op
        self.readers.reset(row, -2, 0)
        self.users.reset(row, engine, op)
        self.r_region[row] = reg

    cdef inline int64_t pending(self, Py_ssize_t row, Py_ssize_t k):
        """The k-th pending slot dependency of a row: r_pptr >= 0 is an offset in the pool, r_pptr < 0 the offset
        -1 - r_pptr in `final` (the final users of the one freed buffer whose bytes it took)."""
        cdef int64_t at = self.r_pptr[row]
        return self.pool[at + k] if at >= 0 else self.final[-1 - at + k]

    cdef Py_ssize_t pooled(self, Py_ssize_t n) except -1:
        """Room for n pending slot dependencies at the end of the pool; its offset."""
        cdef Py_ssize_t at = self.n_pool
        if at + n > self.pool_cap:
            self.pool_cap = 2 * self.pool_cap + n
            self.pool_a = _grown(self.pool_a, self.pool_cap)
            self.pool = self.pool_a
        self.n_pool += n
        return at

    # -- one handler per event kind ------------------------------------------------------------------------------
    cdef int load(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int64_t nb, bint has_nb,
                  int reuse) except -1:
        """LOAD: a transfer on the next load channel; a fill of its buffer (slot dependencies)."""
        TraceChecker.load(self, idx, b, t, reg, nb, has_nb, reuse)
        nb = self.b_held[b]
        cdef int ch = self.n_loads % self.channels
        self.n_loads += 1
        cdef Py_ssize_t row = self.b_row[b]
        self.slot_deps(row, ch)
        cdef Py_ssize_t op = self.add_op(C_LOAD_OP, ch, self.transfer(idx, nb, t, reg), self.p_load, nb, t, b, reg, idx,
                                         self.writable[t])
        self.filled(b, row, op, ch, reg)
        self.loaded += nb
        return 0

    cdef int64_t slide(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int64_t nb) except -1:
        """SLIDE: a transfer of the new rows on the next load channel, after every earlier use of the buffer."""
        nb = TraceChecker.slide(self, idx, b, t, reg, nb)
        cdef Py_ssize_t row = self.b_row[b]
        if nb == 0:  # the rows it needs are all held: no DMA
            self.r_region[row] = reg
            return 0
        cdef int ch = self.n_loads % self.channels
        self.n_loads += 1
        self.slot_deps(row, ch)
        cdef Py_ssize_t op = self.add_op(C_LOAD_OP, ch, self.transfer(idx, nb, t, reg), self.p_load, nb, t, b, reg, idx,
                                         False)
        self.filled(b, row, op, ch, reg)
        self.loaded += nb
        return nb

    cdef int open(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int reuse) except -1:
        """OPEN: a zeroed fill on no engine; slot dependencies as for a LOAD, on every engine."""
        TraceChecker.open(self, idx, b, t, reg, reuse)
        cdef Py_ssize_t row = self.b_row[b]
        self.slot_deps(row, -2)
        cdef Py_ssize_t op = self.add_op(C_OPEN_OP, -1, 0, -1, 0, t, b, reg, idx, False)
        self.filled(b, row, op, -1, reg)
        return 0

    cdef int compute(self, Py_ssize_t idx, int unit, int64_t out, int64_t* ins, Py_ssize_t n_in, int64_t macs,
                     int64_t cycles, int64_t padded) except -1:
        """COMPUTE: RAW on its inputs and output, WAR on the output's readers."""
        TraceChecker.compute(self, idx, unit, out, ins, n_in, macs, cycles, padded)
        cdef int eng, okind
        cdef Py_ssize_t lw, op, k, i, row, base
        if unit == 0:
            eng, okind = self.e_tc, C_TC_OP
            self.tc_macs += macs
        else:
            eng, okind = self.e_vec, C_VEC_OP
        for i in range(n_in):
            lw = self.r_last[self.b_row[ins[i]]]
            if self.engine[lw] != eng:
                self.dep(lw * 4 + C_DATA)
        row = self.b_row[out]
        lw = self.r_last[row]
        if self.engine[lw] != eng:
            self.dep(lw * 4 + C_DATA)
        base = row * self.readers.width
        for k in range(self.readers.n[row]):
            if self.readers.keys[base + k] != eng:
                self.dep(self.readers.ops[base + k] * 4 + C_WAR)
        op = self.add_op(okind, eng, cycles, -1, 0, self.b_tensor[out], out, self.r_region[row], idx, False)
        for i in range(n_in):
            self.readers.set(self.b_row[ins[i]], eng, op)
            self.users.set(self.b_row[ins[i]], eng, op)
        self.r_last[row] = op
        self.readers.reset(row, -2, 0)
        self.users.set(row, eng, op)
        self.macs += macs
        self.padded_macs += padded
        return 0

    cdef int store(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int64_t nb, bint has_nb) except -1:
        """STORE: a transfer on the store engine after the last write of its buffer; a reader of the buffer."""
        TraceChecker.store(self, idx, b, t, reg, nb, has_nb)
        nb = self.b_held[b]
        cdef Py_ssize_t row = self.b_row[b]
        self.dep(self.r_last[row] * 4 + C_DATA)  # validated: a fill or a compute wrote the buffer
        cdef int64_t dur = self.transfer(idx, nb, t, reg)
        cdef Py_ssize_t op = self.add_op(C_STORE_OP, self.e_store, dur, self.p_store, nb, t, b, self.b_region[b], idx,
                                         True)
        self.readers.set(row, self.e_store, op)
        self.users.set(row, self.e_store, op)
        self.stored += nb
        return 0

    cdef int alloc(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int64_t nb, bint has_nb,
                   int64_t address, int64_t charged) except -1:
        """ALLOC: a new SRAM buffer whose first fill waits for the previous occupants of its bytes."""
        TraceChecker.alloc(self, idx, b, t, reg, nb, has_nb, address, charged)
        return self.place(b, reg, address)

    cdef int alloc_in(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int64_t nb, bint has_nb,
                      int64_t address, int64_t charged, int64_t scope_id) except -1:
        """ALLOC_IN: a new buffer of its scope's level, whose first fill waits for the previous occupants of its
        bytes in that level."""
        TraceChecker.alloc_in(self, idx, b, t, reg, nb, has_nb, address, charged, scope_id)
        return self.place(b, reg, address)

    cdef int place(self, int64_t b, int64_t reg, int64_t address) except -1:
        """A checked new buffer b at `address` of its level: its live row and the slot dependencies of its first
        fill (the buffers of its level that last held its bytes)."""
        cdef int level = self.b_level[b]
        cdef int64_t nb = self.b_nbytes[b]
        cdef _Occupancy occupancy = self.occupancies[level]
        cdef Py_ssize_t row, p, k, count, at, freed = 0, n_pending = 0, pptr = 0
        count = occupancy.take(address, address + nb, b)
        for k in range(count):
            p = occupancy.prev[k]
            if self.b_state[p] == FREED:
                freed += 1
                n_pending += self.b_fn[p]
                pptr = -self.b_fptr[p] - 1  # one freed occupant (the common case): its final users, in place
            else:  # the occupant is still live: wait for its FREE (a FREE node, patched in when reached)
                self.forward_waiters.setdefault(p, []).append(b)
        if freed > 1:  # several: their final users copied one after another into the pool
            pptr = at = self.pooled(n_pending)
            for k in range(count):
                p = occupancy.prev[k]
                if self.b_state[p] == FREED:
                    self.pool[at:at + self.b_fn[p]] = self.final[self.b_fptr[p]:self.b_fptr[p] + self.b_fn[p]]
                    at += self.b_fn[p]
        if b == self.lb_cap:
            self.grow_lowered_buffers(2 * self.lb_cap)
        if not self.n_free_rows:
            self.grow_rows()
        self.n_free_rows -= 1
        row = self.free_rows[self.n_free_rows]
        self.b_first[b], self.b_row[b] = -1, row
        self.b_fptr[b], self.b_fn[b] = 0, 0
        self.r_last[row] = -1
        self.r_region[row] = reg
        self.r_pptr[row], self.r_pn[row] = pptr, n_pending
        self.readers.reset(row, -2, 0)
        self.users.reset(row, -2, 0)
        if self.level_live[level] > self.lv_peak[level]:  # (the checker counted its charge)
            self.lv_peak[level] = self.level_live[level]
        return 0

    cdef int stage(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int64_t nb, bint has_nb,
                   int64_t source) except -1:
        """STAGE: a transfer on its level's engine; a fill of its buffer (slot dependencies) and a read of `source`
        (after its last write)."""
        TraceChecker.stage(self, idx, b, t, reg, nb, has_nb, source)
        nb = self.b_held[b]
        cdef int level = self.b_level[b]
        cdef int eng = self.lv_engine[level]
        cdef Py_ssize_t row = self.b_row[b], src = self.b_row[source], op
        self.slot_deps(row, eng)
        cdef int64_t lw = self.r_last[src]  # validated: the source was filled
        written = self.partial.get(src)
        if written is not None and written[2] == lw:  # its last writes were write-backs: the overlapping ones
            if written[0] >= 0 and self.engine[written[0]] != eng:
                self.dep(written[0] * 4 + C_DATA)
            for wreg, wop in (<dict>written[1]).items():
                if self.regions_meet(t, wreg, reg):
                    self.dep(wop * 4 + C_DATA)
        elif self.engine[lw] != eng:
            self.dep(lw * 4 + C_DATA)
        op = self.add_op(C_STAGE_OP, eng, self.level_cycles(level, nb), self.lv_port[level], nb, t, b, reg, idx,
                         False)
        self.readers.set(src, eng, op)
        self.users.set(src, eng, op)
        self.filled(b, row, op, eng, reg)
        return 0

    cdef int writeback(self, Py_ssize_t idx, int64_t b, int64_t t, int64_t reg, int64_t nb, bint has_nb,
                       int64_t target) except -1:
        """WRITEBACK: a transfer on its level's engine after the last write of its buffer; a write of `target`
        (after its last write and every reader of its current contents), as a COMPUTE writing it."""
        TraceChecker.writeback(self, idx, b, t, reg, nb, has_nb, target)
        nb = self.b_held[b]
        cdef int level = self.b_level[b]
        cdef int eng = self.lv_wb_engine[level]
        cdef Py_ssize_t row = self.b_row[b], trow = self.b_row[target], op, k, base
        cdef int64_t lw = self.r_last[row]
        if self.engine[lw] != eng:
            self.dep(lw * 4 + C_DATA)
        lw = self.r_last[trow]
        if self.engine[lw] != eng:
            self.dep(lw * 4 + C_DATA)
        base = trow * self.readers.width
        for k in range(self.readers.n[trow]):
            if self.readers.keys[base + k] != eng:
                self.dep(self.readers.ops[base + k] * 4 + C_WAR)
        op = self.add_op(C_WRITEBACK_OP, eng, self.level_cycles(level, nb), self.lv_port[level], nb, t, b, reg, idx,
                         False)
        self.readers.set(row, eng, op)
        self.users.set(row, eng, op)
        written = self.partial.get(trow)
        if written is None or written[2] != self.r_last[trow]:  # a new run of write-backs into the target
            written = self.partial[trow] = [self.r_last[trow], {}, -1]
        (<dict>written[1])[reg] = op  # (a later write-back of the same region supersedes: same engine, in order)
        written[2] = op
        self.r_last[trow] = op
        self.readers.reset(trow, -2, 0)
        self.users.set(trow, eng, op)
        return 0

    cdef bint regions_meet(self, int64_t t, int64_t a, int64_t b):
        """Whether the regions at offsets a and b of tensor t share an element."""
        return a == b or _meet(self.log.regions.at(a), self.log.regions.at(b), self.ndim[t])

    cdef void grow_rows(self) except *:
        cdef Py_ssize_t rows = len(self.r_last_a)
        self.readers.resize(2 * rows)
        self.users.resize(2 * rows)
        self.r_last_a, self.r_region_a, self.r_pptr_a = [_grown(a, 2 * rows) for a in (
            self.r_last_a, self.r_region_a, self.r_pptr_a)]
        self.r_pn_a = _grown(self.r_pn_a, 2 * rows)
        self.r_last, self.r_region, self.r_pptr, self.r_pn = self.r_last_a, self.r_region_a, self.r_pptr_a, self.r_pn_a
        self.free_rows_a = np.zeros(2 * rows, np.int64)  # room for every row
        self.free_rows_a[:rows] = np.arange(2 * rows - 1, rows - 1, -1)
        self.free_rows, self.n_free_rows = self.free_rows_a, rows

    cdef int free(self, Py_ssize_t idx, int64_t b, int64_t charged) except -1:
        """FREE: the slot is released when every op on the buffer ends; a FREE node if a later buffer waits."""
        TraceChecker.free(self, idx, b, charged)
        cdef Py_ssize_t k, row, base, node, first, n_users, wrow, at, n_old
        row = self.b_row[b]
        n_users = self.users.n[row]
        base = row * self.users.width
        if self.n_final + n_users > self.final_cap:
            self.grow_final(self.final_cap + self.final_cap // 2 + n_users)
        self.b_fptr[b], self.b_fn[b] = self.n_final, n_users
        for k in range(n_users):
            self.final[self.n_final + k] = self.users.ops[base + k]
        self.n_final += n_users
        self.free_rows[self.n_free_rows] = row
        self.n_free_rows += 1
        waiters = self.forward_waiters.pop(b, None) if self.forward_waiters else None
        if waiters:
            for k in range(n_users):
                self.dep(self.users.ops[base + k] * 4 + C_DATA)
            node = self.add_op(C_FREE_OP, -1, 0, -1, 0, -1, b, -1, idx, False)
            for w in waiters:
                first = self.b_first[w]
                if first >= 0:
                    self.extra.append((first, node * 4 + C_SLOT))
                elif self.b_state[w] != FREED:  # (a waiter freed unfilled never needs it): its pending list + node
                    wrow = self.b_row[w]
                    n_old = self.r_pn[wrow]
                    at = self.pooled(n_old + 1)
                    for k in range(n_old):
                        self.pool[at + k] = self.pending(wrow, k)
                    self.pool[at + n_old] = node
                    self.r_pptr[wrow], self.r_pn[wrow] = at, n_old + 1
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
            nbytes=self.op_bytes_a[:n], tensor=tensor, buffer=self.buffer_a[:n],
            region=RegionColumn(self.log, self.region_a[:n], tensor, np.asarray(self.ndim)),
            event=self.event_a[:n], prev_on_engine=self.prev_a[:n], ddr_check=ddr,
            queues=[np.flatnonzero(engine == e) for e in range(self.n_eng)], engine_names=self.engine_names,
            engine_ports=self.engine_ports, n_ports=self.n_ports, load_engines=tuple(range(self.channels)),
            store_engine=self.e_store, tensorcore_engine=self.e_tc, vector_engine=self.e_vec,
            stores_by_tensor=stores, loads_by_tensor=loads, buffer_tensor=self.b_tensor_a[:nb],
            buffer_nbytes=self.b_nbytes_a[:nb], buffer_first_op=self.b_first_a[:nb],
            buffer_final_ptr=fptr, buffer_final_n=fn, buffer_final_ops=self.final_a[:self.n_final],
            reserved_sram_bytes=int(self.lv_peak[0]), macs=self.macs, tensorcore_macs=self.tc_macs,
            padded_macs=self.padded_macs, loaded_bytes=self.loaded, stored_bytes=self.stored,
            tensor_names=[t.name for t in trace.tensors], level_names=list(self.level_names),
            level_engines=self.lv_engine_a.tolist(), level_writeback_engines=self.lv_wb_engine_a.tolist(),
            reserved_level_bytes=self.lv_peak_a.tolist(),
            buffer_level=self.b_level_a[:nb])


def _exact(bytes_per_cycle: float) -> Fraction:
    """A bandwidth as an exact fraction (integer arithmetic for the cycles), its terms below 2**31."""
    bw = Fraction(repr(float(bytes_per_cycle)))
    if bw.numerator >= 1 << 31 or bw.denominator >= 1 << 31:
        bw = bw.limit_denominator(1 << 20)
    return bw


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
    state.check(trace)  # per event: the check and the lowering of its kind
    return state.graph(trace)


overlaps = regions_overlap  # the timing modules' name for it (one definition, in dsasim.util)
