"""The timing model's first half: lowering a trace into an operation graph (engines, durations, dependencies).

The trace is the only input. Every rule of the model that does not involve time lives here; the schedulers
(`engine.py`, exact and fast; `reference.py`, simpy) only decide *when* each operation runs.

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
trace frees every buffer: `validate.py`); a wait that closes a cycle (e.g. the occupant is used later by an
operation queued behind the waiting load) is reported by the scheduler (`engine.build_timeline`) as a
`DeadlockError` naming the stuck operations.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from fractions import Fraction

from dsasim.hardware import Accelerator
from dsasim.util import ceil_div, regions_overlap
from dsasim.traced.trace import ALLOC, COMPUTE, FREE, LOAD, OPEN, STORE, Region, Trace, format_region
from dsasim.timing.validate import TraceChecker

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

    cdef list starts, runs  # runs: (start, stop, buffer)

    def __init__(self) -> None:
        self.starts = []
        self.runs = []

    cdef list take(self, object start, object stop, object buffer):
        """Give [start, stop) to `buffer`; return the buffers that last held any of those bytes."""
        cdef Py_ssize_t i, j
        if stop <= start:
            return []
        i = bisect_right(self.starts, start)
        if i and self.runs[i - 1][1] > start:
            i -= 1
            a, b, owner = self.runs[i]
            if a == start and b == stop:  # the common case: the same bytes again (an N-way slot's next turn)
                self.runs[i] = (start, stop, buffer)
                return [owner]
        j = i
        previous = []
        keep = []
        while j < len(self.runs) and self.runs[j][0] < stop:
            a, b, owner = self.runs[j]
            if owner not in previous:
                previous.append(owner)
            if a < start:
                keep.append((a, start, owner))
            if b > stop:
                keep.append((stop, b, owner))
            j += 1
        new = sorted(keep + [(start, stop, buffer)])
        self.runs[i:j] = new
        self.starts[i:j] = [r[0] for r in new]
        return previous


@dataclass
class OpGraph:
    """The lowered trace: one entry per operation in each parallel list (index = operation id).

    Operation ids follow program order, except FREE nodes (created only when a later buffer must wait for a
    still-live slot occupant), which are appended when their FREE event is reached.
    """

    n: int
    kind: list[int]
    engine: list[int]  # engine index, -1 for OPEN and FREE nodes (no engine)
    dur: list[int]
    port: list[int]  # DDR port index, -1 for non-transfers
    deps: list[list[int]]  # encoded op * 4 + reason
    nbytes: list[int]
    tensor: list[int]  # trace tensor id, -1 for FREE nodes
    buffer: list[int]
    region: list[Region | None]
    event: list[int]  # index of the trace event, -1 for FREE nodes
    prev_on_engine: list[int]  # previous operation of the same engine, -1 if first
    ddr_check: list[bool]  # transfers of writable tensors: DDR dependencies are resolved by the scheduler
    queues: list[list[int]]  # per engine, its operations in program order
    engine_names: list[str]
    engine_ports: list[int]  # per engine, its DDR port (-1 for compute engines)
    n_ports: int
    load_engines: tuple[int, ...]
    store_engine: int
    tensorcore_engine: int
    vector_engine: int
    stores_by_tensor: dict[int, list[int]]  # writable tensor -> its STORE ops in program order
    loads_by_tensor: dict[int, list[list[int]]]  # writable tensor -> per load channel, its LOAD ops
    # buffers (index = buffer id)
    buffer_tensor: list[int]
    buffer_nbytes: list[int]
    buffer_first_op: list[int]  # its first fill (LOAD or OPEN), -1 if never filled
    buffer_final_users: list[tuple[int, ...]]  # operations whose end releases the slot ((), if never freed)
    reserved_sram_bytes: int  # peak of the trace's charged bytes (N-way scopes charge N x)
    macs: int  # all MACs of the trace (vector dot products included)
    tensorcore_macs: int  # useful MACs of TensorCore operations
    padded_macs: int
    loaded_bytes: int
    stored_bytes: int
    tensor_names: list[str]

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


def transfer_cycles_fn(hardware: Accelerator):
    """cycles(nbytes) = dma_setup_cycles + ceil(nbytes / dram_bytes_per_cycle), in exact integer arithmetic."""
    bw = Fraction(repr(float(hardware.dram_bytes_per_cycle)))
    num, den = bw.numerator, bw.denominator
    setup = hardware.dma_setup_cycles
    cache: dict[int, int] = {}

    def cycles(nbytes: int) -> int:
        c = cache.get(nbytes)
        if c is None:
            c = cache[nbytes] = setup + ceil_div(nbytes * den, num)  # once per distinct size
        return c

    return cycles


cdef class _BufferState:
    """What lowering tracks for one buffer (index = buffer id) while it walks the trace."""

    cdef object tensor, nbytes
    cdef object region  # the region it holds now (a reuse-flag fill may change it)
    cdef Py_ssize_t last_write  # the op that last wrote it (LOAD, OPEN or COMPUTE)
    cdef dict readers  # engine -> last op that read the current contents
    cdef dict users  # engine (-1: no engine) -> last op on the buffer since its last fill
    cdef object pending  # slot deps for the first fill (a tuple), None once filled
    cdef Py_ssize_t first_op  # its first fill, -1 until filled
    cdef tuple final_users  # the ops whose end releases the slot, set by its FREE
    cdef bint freed


cdef _BufferState _new_buffer(object tensor, object nbytes, object region, tuple pending):
    """A _BufferState (built in C: no Python-level __init__ call per ALLOC)."""
    cdef _BufferState buf = _BufferState.__new__(_BufferState)
    buf.tensor = tensor
    buf.nbytes = nbytes
    buf.region = region
    buf.last_write = -1
    buf.readers = {}
    buf.users = {}
    buf.pending = pending
    buf.first_op = -1
    buf.final_users = ()
    buf.freed = False
    return buf


cdef class _Lowering:
    """The state of `lower` while it walks the trace: the operations so far (one list per field), one _BufferState
    per buffer, and one handler per event kind (`load`, `compute`, `open`, `alloc`, `free`, `store`) that applies
    that kind's rules."""

    cdef int channels, e_store, e_tc, e_vec, p_load, p_store, n_loads
    cdef bint shared
    cdef list engine_names, engine_ports, writable, queues, last_on, buffers
    cdef object xfer
    cdef list kind, engine, dur, port, nbytes, tensor, buffer, region, event, prev, ddr, deps  # per op
    cdef dict stores_by_tensor, loads_by_tensor, forward_waiters
    cdef _Occupancy occupancy
    cdef object live_charged, peak_charged, macs, tc_macs, padded_macs, loaded, stored

    def __init__(self, trace: Trace, hardware: Accelerator) -> None:
        channels = self.channels = hardware.dma_load_channels
        self.e_store, self.e_tc, self.e_vec = channels, channels + 1, channels + 2
        names = ["dma-load"] if channels == 1 else [f"dma-load{k}" for k in range(channels)]
        self.engine_names = names + ["dma-store", "tensorcore", "vector"]
        self.shared = hardware.dram_shared_load_store
        self.p_load, self.p_store = 0, (0 if self.shared else 1)
        self.engine_ports = [self.p_load] * channels + [self.p_store, -1, -1]
        self.xfer = transfer_cycles_fn(hardware)
        self.writable = [t.writable for t in trace.tensors]
        self.kind, self.engine, self.dur, self.port, self.nbytes, self.tensor = [], [], [], [], [], []
        self.buffer, self.region, self.event, self.prev, self.ddr, self.deps = [], [], [], [], [], []
        self.queues = [[] for _ in self.engine_names]
        self.last_on = [-1] * len(self.engine_names)
        self.stores_by_tensor = {}  # writable tensor -> its STORE ops
        self.loads_by_tensor = {}  # writable tensor -> per load channel, its LOAD ops
        self.buffers = []
        self.forward_waiters = {}  # live occupant -> buffers allocated over its bytes
        self.occupancy = _Occupancy()  # which buffer last held each SRAM byte
        self.live_charged = self.peak_charged = 0
        self.macs = self.tc_macs = self.padded_macs = self.loaded = self.stored = 0
        self.n_loads = 0

    cdef Py_ssize_t add_op(self, int kind, int engine, object dur, int port, object nbytes, object tensor,
                           object buffer, object region, Py_ssize_t event, list deps, bint ddr):
        """Append one operation; its id. An engine's operation joins that engine's queue (program order)."""
        cdef Py_ssize_t op = len(self.kind)
        self.kind.append(kind)
        self.engine.append(engine)
        self.dur.append(dur)
        self.port.append(port)
        self.nbytes.append(nbytes)
        self.tensor.append(tensor)
        self.buffer.append(buffer)
        self.region.append(region)
        self.event.append(event)
        self.deps.append(deps)
        self.ddr.append(ddr)
        if engine >= 0:
            self.prev.append(self.last_on[engine])
            self.last_on[engine] = op
            (<list>self.queues[engine]).append(op)
        else:
            self.prev.append(-1)
        return op

    cdef int load(self, Py_ssize_t idx, object ev) except -1:
        """LOAD: a transfer on the next load channel; a fill of its buffer (slot dependencies)."""
        cdef Py_ssize_t d, op
        cdef int ch = self.n_loads % self.channels
        _, b, t, reg, nb, _reuse = ev
        self.n_loads += 1
        w = self.writable[t]
        # slot dependencies, except on ops of this channel (program order)
        cdef _BufferState buf = self.buffers[b]
        cdef list dl = []
        cdef list engine = self.engine
        pending = buf.pending
        if pending is not None:  # the first fill after ALLOC: wait for the slot's previous occupants
            buf.pending = None
            for d in pending:
                if <int>engine[d] != ch:
                    dl.append(d * 4 + SLOT)
        else:  # a reuse-flag fill: wait for every earlier operation on the buffer
            for e, d in buf.users.items():
                if e != ch:
                    dl.append(d * 4 + SLOT)
        op = self.add_op(C_LOAD_OP, ch, self.xfer(nb), self.p_load, nb, t, b, reg, idx, dl, w)
        if w:
            per = self.loads_by_tensor.get(t)
            if per is None:
                per = self.loads_by_tensor[t] = [[] for _ in range(self.channels)]
            per[ch].append(op)
        if buf.first_op < 0:
            buf.first_op = op
        buf.last_write = op
        buf.readers = {}
        buf.users = {ch: op}
        buf.region = reg
        self.loaded += nb
        return 0

    cdef int compute(self, Py_ssize_t idx, object ev) except -1:
        """COMPUTE: RAW on its inputs and output, WAR on the output's readers."""
        cdef int eng, okind
        cdef Py_ssize_t lw, op
        cdef _BufferState src, dst
        cdef list engine = self.engine, buffers = self.buffers
        _, unit, _opname, out, ins, m, cyc, pm = ev
        if unit == "tensorcore":
            eng, okind = self.e_tc, C_TC_OP
            self.tc_macs += m
        else:
            eng, okind = self.e_vec, C_VEC_OP
        cdef list dl = []
        for b in ins:
            lw = (<_BufferState>buffers[b]).last_write
            if <int>engine[lw] != eng:
                dl.append(lw * 4 + DATA)
        dst = buffers[out]
        lw = dst.last_write
        if <int>engine[lw] != eng:
            dl.append(lw * 4 + DATA)
        if dst.readers:
            for e, d in dst.readers.items():
                if e != eng:
                    dl.append(d * 4 + WAR)
        op = self.add_op(okind, eng, cyc, -1, 0, dst.tensor, out, dst.region, idx, dl, False)
        for b in ins:
            src = buffers[b]
            src.readers[eng] = op
            src.users[eng] = op
        dst.last_write = op
        dst.readers = {}
        dst.users[eng] = op
        self.macs += m
        self.padded_macs += pm
        return 0

    cdef int open(self, Py_ssize_t idx, object ev) except -1:
        """OPEN: a zeroed fill on no engine; slot dependencies as for a LOAD, on every engine."""
        _, b, t, reg, _reuse = ev
        cdef _BufferState buf = self.buffers[b]
        pending = buf.pending
        if pending is not None:
            buf.pending = None
            dl = [d * 4 + SLOT for d in pending]
        else:
            dl = [d * 4 + SLOT for d in buf.users.values()]
        cdef Py_ssize_t op = self.add_op(C_OPEN_OP, -1, 0, -1, 0, t, b, reg, idx, dl, False)
        if buf.first_op < 0:
            buf.first_op = op
        buf.last_write = op
        buf.readers = {}
        buf.users = {-1: op}
        buf.region = reg
        return 0

    cdef int alloc(self, Py_ssize_t idx, object ev) except -1:
        """ALLOC: a new buffer whose first fill waits for the previous occupants of its bytes."""
        cdef _BufferState occupant
        _, b, t, reg, nb, address, charged = ev
        pending = ()
        for prev in self.occupancy.take(address, address + nb, b):
            occupant = self.buffers[prev]
            if occupant.freed:
                pending += occupant.final_users
            else:  # the occupant is still live: wait for its FREE (a FREE node, patched in when reached)
                self.forward_waiters.setdefault(prev, []).append(b)
        self.buffers.append(_new_buffer(t, nb, reg, pending))
        self.live_charged += charged
        if self.live_charged > self.peak_charged:
            self.peak_charged = self.live_charged
        return 0

    cdef int free(self, Py_ssize_t idx, object ev) except -1:
        """FREE: the slot is released when every op on the buffer ends; a FREE node if a later buffer waits."""
        cdef _BufferState waiter
        _, b, charged = ev
        cdef _BufferState buf = self.buffers[b]
        buf.freed = True
        final = buf.final_users = tuple(buf.users.values())
        self.live_charged -= charged
        waiters = self.forward_waiters.pop(b, None)
        if waiters:
            node = self.add_op(C_FREE_OP, -1, 0, -1, 0, -1, b, None, idx, [d * 4 + DATA for d in final], False)
            for w in waiters:
                waiter = self.buffers[w]
                if waiter.first_op >= 0:
                    self.deps[waiter.first_op].append(node * 4 + SLOT)
                else:
                    waiter.pending = tuple(waiter.pending) + (node,)
        return 0

    cdef int store(self, Py_ssize_t idx, object ev) except -1:
        """STORE: a transfer on the store engine after the last write of its buffer; a reader of the buffer."""
        _, b, t, reg, nb = ev
        cdef _BufferState buf = self.buffers[b]
        # validated: a fill or a compute wrote the buffer
        op = self.add_op(C_STORE_OP, self.e_store, self.xfer(nb), self.p_store, nb, t, b, reg, idx,
                         [buf.last_write * 4 + DATA], True)
        self.stores_by_tensor.setdefault(t, []).append(op)
        buf.readers[self.e_store] = op
        buf.users[self.e_store] = op
        self.stored += nb
        return 0

    def graph(self, trace: Trace) -> OpGraph:
        """The OpGraph of everything lowered so far."""
        # validated: every buffer is freed, so no forward waiter is left without its FREE node
        cdef _BufferState s
        buffers = self.buffers
        return OpGraph(
            n=len(self.kind), kind=self.kind, engine=self.engine, dur=self.dur, port=self.port, deps=self.deps,
            nbytes=self.nbytes, tensor=self.tensor, buffer=self.buffer, region=self.region, event=self.event,
            prev_on_engine=self.prev, ddr_check=self.ddr, queues=self.queues, engine_names=self.engine_names,
            engine_ports=self.engine_ports, n_ports=1 if self.shared else 2, load_engines=tuple(range(self.channels)),
            store_engine=self.e_store, tensorcore_engine=self.e_tc, vector_engine=self.e_vec,
            stores_by_tensor=self.stores_by_tensor, loads_by_tensor=self.loads_by_tensor,
            buffer_tensor=[s.tensor for s in buffers], buffer_nbytes=[s.nbytes for s in buffers],
            buffer_first_op=[s.first_op for s in buffers], buffer_final_users=[s.final_users for s in buffers],
            reserved_sram_bytes=self.peak_charged, macs=self.macs, tensorcore_macs=self.tc_macs,
            padded_macs=self.padded_macs, loaded_bytes=self.loaded, stored_bytes=self.stored,
            tensor_names=[t.name for t in trace.tensors])


def lower(trace: Trace, hardware: Accelerator) -> OpGraph:
    """Lower a trace into the operation graph of the timing model (see the module docstring for the rules).

    Each event is checked (`validate.TraceChecker`: TraceError names the first bad event) before its handler
    lowers it, in one pass, so the handlers can trust every id, region and byte count."""
    checker = TraceChecker(trace, hardware)
    check = checker.run
    cdef _Lowering state = _Lowering(trace, hardware)
    cdef Py_ssize_t idx = 0
    cdef int k
    for ev in trace.events:
        k = check(idx, ev)  # the event's kind
        if k == K_LOAD:
            state.load(idx, ev)
        elif k == K_COMPUTE:
            state.compute(idx, ev)
        elif k == K_ALLOC:
            state.alloc(idx, ev)
        elif k == K_FREE:
            state.free(idx, ev)
        elif k == K_STORE:
            state.store(idx, ev)
        elif k == K_OPEN:
            state.open(idx, ev)
        # HIT, ENTER, EXIT: no operation (a HIT adds nothing: see the module docstring)
        idx += 1
    checker.finish()
    return state.graph(trace)


overlaps = regions_overlap  # the timing modules' name for it (one definition, in dsasim.util)
