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
finished. A new buffer allocated over the bytes of a still-live buffer waits for that occupant's FREE (a valid trace frees every
buffer: `validate.py`); a wait that closes a cycle
(e.g. the occupant is used later by an operation queued behind the waiting load) is reported by the scheduler
as a `DeadlockError` naming the stuck operations.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from fractions import Fraction

from ..hardware import Accelerator
from ..trace import (ALLOC, COMPUTE, FREE, LOAD, OPEN, STORE, Region, Trace,
                     format_region)
from .validate import validate_trace

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
            c = cache[nbytes] = setup + -(-nbytes * den // num)
        return c

    return cycles


def lower(trace: Trace, hardware: Accelerator) -> OpGraph:
    """Lower a trace into the operation graph of the timing model (see the module docstring for the rules).

    Validates the trace first (`validate_trace`: TraceError names the first bad event), so the loop below can
    trust every id, region and byte count."""
    validate_trace(trace, hardware)
    channels = hardware.dma_load_channels
    load_engines = tuple(range(channels))
    e_store, e_tc, e_vec = channels, channels + 1, channels + 2
    names = ["dma-load"] if channels == 1 else [f"dma-load{k}" for k in range(channels)]
    names += ["dma-store", "tensorcore", "vector"]
    shared = hardware.dram_shared_load_store
    p_load, p_store = 0, (0 if shared else 1)
    engine_ports = [p_load] * channels + [p_store, -1, -1]
    xfer = transfer_cycles_fn(hardware)
    writable = [t.writable for t in trace.tensors]

    engine: list[int] = []  # per op (needed while lowering); the other fields are collected as rows
    deps: list[list[int]] = []
    rows: list[tuple] = []  # (kind, dur, port, nbytes, tensor, buffer, region, event, prev_on_engine, ddr)
    queues: list[list[int]] = [[] for _ in names]
    last_on: list[int] = [-1] * len(names)
    stores_by_tensor: dict[int, list[int]] = {}
    loads_by_tensor: dict[int, list[list[int]]] = {}

    # buffer state (index = buffer id)
    b_address: list[int] = []
    b_tensor: list[int] = []
    b_nbytes: list[int] = []
    b_region: list = []
    b_last_write: list[int] = []
    b_readers: list[dict[int, int]] = []  # engine -> last op that read the current contents
    b_users: list[dict[int, int]] = []  # engine (-1: no engine) -> last op on the buffer since its last fill
    b_pending: list = []  # slot deps for the first fill: tuple of ops, or None once filled
    b_first: list[int] = []
    b_final: list[tuple[int, ...]] = []
    b_freed: list[bool] = []
    forward_waiters: dict[int, list[int]] = {}  # live occupant -> buffers allocated over its bytes meanwhile
    occupancy = _Occupancy()  # which buffer last held each SRAM byte
    live_charged = 0
    peak_charged = 0
    macs = tc_macs = padded_macs = loaded = stored = 0
    n_loads = 0
    q_store, q_tc, q_vec = queues[e_store], queues[e_tc], queues[e_vec]
    add_row = rows.append
    add_engine = engine.append
    add_deps = deps.append

    events = trace.events
    for idx, ev in enumerate(events):
        k = ev[0]
        if k == LOAD:
            _, b, t, reg, nb, _reuse = ev
            ch = n_loads % channels
            n_loads += 1
            op = len(engine)
            w = writable[t]
            add_row((LOAD_OP, xfer(nb), p_load, nb, t, b, reg, idx, last_on[ch], w))
            add_engine(ch)
            # slot dependencies (inlined: the hottest branch), except on ops of this channel (program order)
            dl = []
            pending = b_pending[b]
            if pending is not None:  # the first fill after ALLOC: wait for the slot's previous occupants
                b_pending[b] = None
                for d in pending:
                    if engine[d] != ch:
                        dl.append(d * 4 + SLOT)
            else:  # a reuse-flag fill: wait for every earlier operation on the buffer
                for e, d in b_users[b].items():
                    if e != ch:
                        dl.append(d * 4 + SLOT)
            add_deps(dl)
            last_on[ch] = op
            queues[ch].append(op)
            if w:
                per = loads_by_tensor.get(t)
                if per is None:
                    per = loads_by_tensor[t] = [[] for _ in range(channels)]
                per[ch].append(op)
            if b_first[b] < 0:
                b_first[b] = op
            b_last_write[b] = op
            b_readers[b] = {}
            b_users[b] = {ch: op}
            b_region[b] = reg
            loaded += nb
        elif k == COMPUTE:
            _, unit, _opname, out, ins, m, cyc, pm = ev
            if unit == "tensorcore":
                eng, okind, q = e_tc, TC_OP, q_tc
                tc_macs += m
            else:
                eng, okind, q = e_vec, VEC_OP, q_vec
            dl = []
            for b in ins:
                lw = b_last_write[b]
                if engine[lw] != eng:
                    dl.append(lw * 4 + DATA)
            lw = b_last_write[out]
            if engine[lw] != eng:
                dl.append(lw * 4 + DATA)
            readers = b_readers[out]
            if readers:
                for e, d in readers.items():
                    if e != eng:
                        dl.append(d * 4 + WAR)
            op = len(engine)
            add_row((okind, cyc, -1, 0, b_tensor[out], out, b_region[out], idx, last_on[eng], False))
            add_engine(eng)
            add_deps(dl)
            last_on[eng] = op
            q.append(op)
            for b in ins:
                b_readers[b][eng] = op
                b_users[b][eng] = op
            b_last_write[out] = op
            b_readers[out] = {}
            b_users[out][eng] = op
            macs += m
            padded_macs += pm
        elif k == OPEN:
            _, b, t, reg, _reuse = ev
            op = len(engine)
            add_row((OPEN_OP, 0, -1, 0, t, b, reg, idx, -1, False))
            add_engine(-1)
            # slot dependencies, as for a LOAD; an OPEN has no engine, so it waits for all of them
            pending = b_pending[b]
            if pending is not None:
                b_pending[b] = None
                add_deps([d * 4 + SLOT for d in pending])
            else:
                add_deps([d * 4 + SLOT for d in b_users[b].values()])
            if b_first[b] < 0:
                b_first[b] = op
            b_last_write[b] = op
            b_readers[b] = {}
            b_users[b] = {-1: op}
            b_region[b] = reg
        elif k == ALLOC:
            _, b, t, reg, nb, address, charged = ev
            pending: tuple[int, ...] = ()
            for prev in occupancy.take(address, address + nb, b):
                if b_freed[prev]:
                    pending += b_final[prev]
                else:  # the occupant is still live: wait for its FREE (a FREE node, patched in when reached)
                    forward_waiters.setdefault(prev, []).append(b)
            b_address.append(address)
            b_tensor.append(t)
            b_nbytes.append(nb)
            b_region.append(reg)
            b_last_write.append(-1)
            b_readers.append({})
            b_users.append({})
            b_pending.append(pending)
            b_first.append(-1)
            b_final.append(())
            b_freed.append(False)
            live_charged += charged
            if live_charged > peak_charged:
                peak_charged = live_charged
        elif k == FREE:
            _, b, charged = ev
            b_freed[b] = True
            final = tuple(b_users[b].values())
            b_final[b] = final
            live_charged -= charged
            waiters = forward_waiters.pop(b, None)
            if waiters:
                node = len(engine)
                add_row((FREE_OP, 0, -1, 0, -1, b, None, idx, -1, False))
                add_engine(-1)
                add_deps([d * 4 + DATA for d in final])
                for w in waiters:
                    first = b_first[w]
                    if first >= 0:
                        deps[first].append(node * 4 + SLOT)
                    else:
                        b_pending[w] = tuple(b_pending[w]) + (node,)
        elif k == STORE:
            _, b, t, reg, nb = ev
            op = len(engine)
            add_row((STORE_OP, xfer(nb), p_store, nb, t, b, reg, idx, last_on[e_store], True))
            add_engine(e_store)
            add_deps([b_last_write[b] * 4 + DATA])  # validated: a compute modified the buffer
            last_on[e_store] = op
            q_store.append(op)
            stores_by_tensor.setdefault(t, []).append(op)
            b_readers[b][e_store] = op
            b_users[b][e_store] = op
            stored += nb
        # HIT, ENTER, EXIT: no operation (a HIT adds nothing: see the module docstring)

    # validated: every buffer is freed, so no forward waiter is left without its FREE node
    if rows:
        kind, dur, port, nbytes_l, tensor_l, buffer_l, region_l, event_l, prev_l, ddr_l = (
            list(col) for col in zip(*rows))
    else:
        kind, dur, port, nbytes_l, tensor_l, buffer_l, region_l, event_l, prev_l, ddr_l = ([] for _ in range(10))

    return OpGraph(
        n=len(kind), kind=kind, engine=engine, dur=dur, port=port, deps=deps, nbytes=nbytes_l, tensor=tensor_l,
        buffer=buffer_l, region=region_l, event=event_l, prev_on_engine=prev_l, ddr_check=ddr_l, queues=queues,
        engine_names=names, engine_ports=engine_ports, n_ports=1 if shared else 2, load_engines=load_engines,
        store_engine=e_store, tensorcore_engine=e_tc, vector_engine=e_vec, stores_by_tensor=stores_by_tensor,
        loads_by_tensor=loads_by_tensor, buffer_tensor=b_tensor, buffer_nbytes=b_nbytes,
        buffer_first_op=b_first, buffer_final_users=b_final, reserved_sram_bytes=peak_charged, macs=macs,
        tensorcore_macs=tc_macs, padded_macs=padded_macs, loaded_bytes=loaded, stored_bytes=stored,
        tensor_names=[t.name for t in trace.tensors])


def overlaps(x: Region, y: Region) -> bool:
    """True when two regions of the same tensor share at least one element."""
    for (a, b), (c, d) in zip(x, y):
        if d <= a or c >= b:
            return False
    return True
