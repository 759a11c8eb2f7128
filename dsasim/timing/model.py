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


class _Occupancy:
    """Which buffer last occupied each SRAM byte: disjoint [start, stop) runs, sorted by start."""

    __slots__ = ("starts", "runs")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.runs: list[tuple[int, int, int]] = []  # (start, stop, buffer)

    def take(self, start: int, stop: int, buffer: int) -> list[int]:
        """Give [start, stop) to `buffer`; return the buffers that last held any of those bytes."""
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
        previous: list[int] = []
        keep: list[tuple[int, int, int]] = []
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


class _BufferState:
    """What lowering tracks for one buffer (index = buffer id) while it walks the trace."""

    __slots__ = ("tensor", "nbytes", "region", "last_write", "readers", "users", "pending", "first_op",
                 "final_users", "freed")

    def __init__(self, tensor: int, nbytes: int, region: Region, pending: tuple[int, ...]) -> None:
        self.tensor = tensor
        self.nbytes = nbytes
        self.region = region  # the region it holds now (a reuse-flag fill may change it)
        self.last_write = -1  # the op that last wrote it (LOAD, OPEN or COMPUTE)
        self.readers: dict[int, int] = {}  # engine -> last op that read the current contents
        self.users: dict[int, int] = {}  # engine (-1: no engine) -> last op on the buffer since its last fill
        self.pending: tuple[int, ...] | None = pending  # slot deps for the first fill, None once filled
        self.first_op = -1  # its first fill, -1 until filled
        self.final_users: tuple[int, ...] = ()  # the ops whose end releases the slot, set by its FREE
        self.freed = False


class _Lowering:
    """The state of `lower` while it walks the trace: the operations so far, one _BufferState per buffer, and one
    handler per event kind (`load`, `compute`, `open`, `alloc`, `free`, `store`) that applies that kind's rules."""

    __slots__ = ("channels", "e_store", "e_tc", "e_vec", "engine_names", "engine_ports", "shared", "p_load",
                 "p_store", "xfer", "writable", "engine", "deps", "rows", "add_row", "add_engine", "add_deps", "queues",
                 "last_on", "stores_by_tensor", "loads_by_tensor", "buffers", "forward_waiters", "occupancy",
                 "live_charged", "peak_charged", "macs", "tc_macs", "padded_macs", "loaded", "stored", "n_loads",
                 "hot")

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
        self.engine: list[int] = []  # per op (read while lowering); the other fields are collected as rows
        self.deps: list[list[int]] = []
        self.rows: list[tuple] = []  # (kind, dur, port, nbytes, tensor, buffer, region, event, prev_on_engine, ddr)
        self.add_row, self.add_engine, self.add_deps = self.rows.append, self.engine.append, self.deps.append
        self.queues: list[list[int]] = [[] for _ in self.engine_names]
        self.last_on: list[int] = [-1] * len(self.engine_names)
        self.stores_by_tensor: dict[int, list[int]] = {}
        self.loads_by_tensor: dict[int, list[list[int]]] = {}
        self.buffers: list[_BufferState] = []
        self.forward_waiters: dict[int, list[int]] = {}  # live occupant -> buffers allocated over its bytes
        self.occupancy = _Occupancy()  # which buffer last held each SRAM byte
        self.live_charged = self.peak_charged = 0
        self.macs = self.tc_macs = self.padded_macs = self.loaded = self.stored = self.n_loads = 0
        # what the LOAD and COMPUTE handlers (most events) read, bound once: one attribute lookup per event
        self.hot = (self.engine, self.last_on, self.buffers, self.queues, self.add_row, self.add_engine,
                    self.add_deps)

    def load(self, idx: int, ev: tuple) -> None:
        """LOAD: a transfer on the next load channel; a fill of its buffer (slot dependencies)."""
        _, b, t, reg, nb, _reuse = ev
        engine, last_on, buffers, queues, add_row, add_engine, add_deps = self.hot
        ch = self.n_loads % self.channels
        self.n_loads += 1
        op = len(engine)
        w = self.writable[t]
        add_row((LOAD_OP, self.xfer(nb), self.p_load, nb, t, b, reg, idx, last_on[ch], w))
        add_engine(ch)
        # slot dependencies, except on ops of this channel (program order)
        buf = buffers[b]
        dl = []
        pending = buf.pending
        if pending is not None:  # the first fill after ALLOC: wait for the slot's previous occupants
            buf.pending = None
            for d in pending:
                if engine[d] != ch:
                    dl.append(d * 4 + SLOT)
        else:  # a reuse-flag fill: wait for every earlier operation on the buffer
            for e, d in buf.users.items():
                if e != ch:
                    dl.append(d * 4 + SLOT)
        add_deps(dl)
        last_on[ch] = op
        queues[ch].append(op)
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

    def compute(self, idx: int, ev: tuple) -> None:
        """COMPUTE: RAW on its inputs and output, WAR on the output's readers."""
        _, unit, _opname, out, ins, m, cyc, pm = ev
        if unit == "tensorcore":
            eng, okind = self.e_tc, TC_OP
            self.tc_macs += m
        else:
            eng, okind = self.e_vec, VEC_OP
        engine, last_on, buffers, queues, add_row, add_engine, add_deps = self.hot
        dl = []
        for b in ins:
            lw = buffers[b].last_write
            if engine[lw] != eng:
                dl.append(lw * 4 + DATA)
        dst = buffers[out]
        lw = dst.last_write
        if engine[lw] != eng:
            dl.append(lw * 4 + DATA)
        readers = dst.readers
        if readers:
            for e, d in readers.items():
                if e != eng:
                    dl.append(d * 4 + WAR)
        op = len(engine)
        add_row((okind, cyc, -1, 0, dst.tensor, out, dst.region, idx, last_on[eng], False))
        add_engine(eng)
        add_deps(dl)
        last_on[eng] = op
        queues[eng].append(op)
        for b in ins:
            src = buffers[b]
            src.readers[eng] = op
            src.users[eng] = op
        dst.last_write = op
        dst.readers = {}
        dst.users[eng] = op
        self.macs += m
        self.padded_macs += pm

    def open(self, idx: int, ev: tuple) -> None:
        """OPEN: a zeroed fill on no engine; slot dependencies as for a LOAD, on every engine."""
        _, b, t, reg, _reuse = ev
        op = len(self.engine)
        self.add_row((OPEN_OP, 0, -1, 0, t, b, reg, idx, -1, False))
        self.add_engine(-1)
        buf = self.buffers[b]
        pending = buf.pending
        if pending is not None:
            buf.pending = None
            self.add_deps([d * 4 + SLOT for d in pending])
        else:
            self.add_deps([d * 4 + SLOT for d in buf.users.values()])
        if buf.first_op < 0:
            buf.first_op = op
        buf.last_write = op
        buf.readers = {}
        buf.users = {-1: op}
        buf.region = reg

    def alloc(self, idx: int, ev: tuple) -> None:
        """ALLOC: a new buffer whose first fill waits for the previous occupants of its bytes."""
        _, b, t, reg, nb, address, charged = ev
        buffers = self.buffers
        pending: tuple[int, ...] = ()
        for prev in self.occupancy.take(address, address + nb, b):
            if buffers[prev].freed:
                pending += buffers[prev].final_users
            else:  # the occupant is still live: wait for its FREE (a FREE node, patched in when reached)
                self.forward_waiters.setdefault(prev, []).append(b)
        buffers.append(_BufferState(t, nb, reg, pending))
        self.live_charged += charged
        if self.live_charged > self.peak_charged:
            self.peak_charged = self.live_charged

    def free(self, idx: int, ev: tuple) -> None:
        """FREE: the slot is released when every op on the buffer ends; a FREE node if a later buffer waits."""
        _, b, charged = ev
        buf = self.buffers[b]
        buf.freed = True
        final = buf.final_users = tuple(buf.users.values())
        self.live_charged -= charged
        waiters = self.forward_waiters.pop(b, None)
        if waiters:
            node = len(self.engine)
            self.add_row((FREE_OP, 0, -1, 0, -1, b, None, idx, -1, False))
            self.add_engine(-1)
            self.add_deps([d * 4 + DATA for d in final])
            for w in waiters:
                waiter = self.buffers[w]
                if waiter.first_op >= 0:
                    self.deps[waiter.first_op].append(node * 4 + SLOT)
                else:
                    waiter.pending = tuple(waiter.pending) + (node,)

    def store(self, idx: int, ev: tuple) -> None:
        """STORE: a transfer on the store engine after the last write of its buffer; a reader of the buffer."""
        _, b, t, reg, nb = ev
        e_store = self.e_store
        op = len(self.engine)
        self.add_row((STORE_OP, self.xfer(nb), self.p_store, nb, t, b, reg, idx, self.last_on[e_store], True))
        self.add_engine(e_store)
        buf = self.buffers[b]
        self.add_deps([buf.last_write * 4 + DATA])  # validated: a compute modified the buffer
        self.last_on[e_store] = op
        self.queues[e_store].append(op)
        self.stores_by_tensor.setdefault(t, []).append(op)
        buf.readers[e_store] = op
        buf.users[e_store] = op
        self.stored += nb

    def graph(self, trace: Trace) -> OpGraph:
        """The OpGraph of everything lowered so far."""
        # validated: every buffer is freed, so no forward waiter is left without its FREE node
        if self.rows:
            kind, dur, port, nbytes, tensor, buffer, region, event, prev, ddr = (list(c) for c in zip(*self.rows))
        else:
            kind, dur, port, nbytes, tensor, buffer, region, event, prev, ddr = ([] for _ in range(10))
        buffers = self.buffers
        return OpGraph(
            n=len(kind), kind=kind, engine=self.engine, dur=dur, port=port, deps=self.deps, nbytes=nbytes,
            tensor=tensor, buffer=buffer, region=region, event=event, prev_on_engine=prev, ddr_check=ddr,
            queues=self.queues, engine_names=self.engine_names, engine_ports=self.engine_ports,
            n_ports=1 if self.shared else 2, load_engines=tuple(range(self.channels)), store_engine=self.e_store,
            tensorcore_engine=self.e_tc, vector_engine=self.e_vec, stores_by_tensor=self.stores_by_tensor,
            loads_by_tensor=self.loads_by_tensor, buffer_tensor=[s.tensor for s in buffers],
            buffer_nbytes=[s.nbytes for s in buffers], buffer_first_op=[s.first_op for s in buffers],
            buffer_final_users=[s.final_users for s in buffers], reserved_sram_bytes=self.peak_charged,
            macs=self.macs, tensorcore_macs=self.tc_macs, padded_macs=self.padded_macs, loaded_bytes=self.loaded,
            stored_bytes=self.stored, tensor_names=[t.name for t in trace.tensors])


def lower(trace: Trace, hardware: Accelerator) -> OpGraph:
    """Lower a trace into the operation graph of the timing model (see the module docstring for the rules).

    Each event is checked (`validate.TraceChecker`: TraceError names the first bad event) before its handler
    lowers it, in one pass, so the handlers can trust every id, region and byte count."""
    checker = TraceChecker(trace, hardware)
    check = checker.run
    state = _Lowering(trace, hardware)
    handlers = {LOAD: state.load, COMPUTE: state.compute, OPEN: state.open, ALLOC: state.alloc, FREE: state.free,
                STORE: state.store}.get  # HIT, ENTER, EXIT: no operation (a HIT adds nothing: module docstring)
    for idx, ev in enumerate(trace.events):
        check(idx, ev)
        handler = handlers(ev[0])
        if handler is not None:
            handler(idx, ev)
    checker.finish()
    return state.graph(trace)


overlaps = regions_overlap  # the timing modules' name for it (one definition, in dsasim.util)
