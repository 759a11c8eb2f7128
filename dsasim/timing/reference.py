"""The simpy reference scheduler, with its own path from the trace to events: independent of the lowering.

`build_timeline_reference(trace, hardware, graph)` reads the trace's events itself and applies docs/model/timing.md's
"Timing" rules the obvious way (Python objects, plain lists, no pruning), then runs one simpy process per engine.
It shares no rule with `model.pyx` (the lowering) or `engine.pyx` (the fast scheduler): its own dealing of loads
to channels, its own dependencies, durations, DDR ports and slot occupancy. A bug in the lowering (a load dealt
to the wrong channel, a dependency dropped or added) therefore shows as a difference between `simulate(...)` and
`simulate(..., reference=True)`. The graph is used only to number the result like the fast scheduler's (each
operation is one trace event; a FREE node is its FREE event) and to word a deadlock's message.

The rules, as docs/model/timing.md states them (an operation starts once all it waits for have finished):

* Engines, in program order: loads (LOAD, and a SLIDE that moves bytes) dealt round-robin to the load channels
  (the j-th such transfer to channel j mod channels); STOREs on the store engine; COMPUTEs on the TensorCore
  (unit "tensorcore") or the vector unit; per inner level, its STAGEs on one engine and its WRITEBACKs on
  another. OPEN runs on no engine, takes 0 cycles.
* Ports: DDR loads on port 0, stores on port 1 (port 0 when `dram_shared_load_store`); inner level i (1, 2, ...
  in `hardware.levels` order) on the next port, shared by its STAGEs and WRITEBACKs.
* Durations: DDR transfer of b bytes: setup + ceil(b / bandwidth) (with layout costs: setup + runs x run cycles
  + ceil(burst bytes / bandwidth), a SLIDE's runs and bursts in proportion to the bytes it moves); STAGE and
  WRITEBACK: the level's setup + ceil(b / its bandwidth); COMPUTE: the event's cycles.
* Waits (a superset of the lowering's where the extra waits are implied by program order, so the times agree):
  a COMPUTE waits for the last write of each buffer it reads and of the buffer it writes, and for every reader
  of the written buffer's contents since its last write; a STORE for the last write of its buffer; a
  WRITEBACK for the last write of its buffer and, as a COMPUTE writing its target, the target's last write and
  readers; a STAGE reads its source: the source's last write, or, when the source's latest writes are a run of
  WRITEBACKs, only the ones whose regions meet the stage's and the write before the run. A fill (LOAD, OPEN,
  STAGE, moving SLIDE) of a buffer not yet filled waits for every operation on each buffer that last held any
  of its bytes in its level (per ALLOC / ALLOC_IN addresses); a later fill of a filled buffer waits for every
  earlier operation on it. A LOAD of a writable tensor waits for earlier STOREs of overlapping regions of it; a
  STORE for earlier such LOADs.

A port grants one transfer at a time; its decision at time t runs after everything else at t (a simpy event of
lower priority than NORMAL), and it takes the waiting transfer with the smallest (ready time, program order).
Slow (Python objects per event, quadratic DDR scans): use it on small traces (`simulate(..., reference=True)`).
"""

from __future__ import annotations

import heapq
from fractions import Fraction

import simpy

from dsasim.hardware import Accelerator
from dsasim.layout import DEFAULT_LAYOUT, transfer_runs
from dsasim.traced.trace import (ALLOC, ALLOC_IN, COMPUTE, FREE, LOAD, OPEN, SLIDE, STAGE, STORE, WRITEBACK, Trace,
                                 region_elements)
from dsasim.timing.engine import Timeline, _raise_deadlock
from dsasim.timing.errors import TimingError
from dsasim.timing.model import FREE_OP, OpGraph

_AFTER_NORMAL = 2  # simpy: URGENT = 0, NORMAL = 1; larger runs later among events at the same time


def _meet(a: tuple, b: tuple) -> bool:
    """Whether two regions (tuples of (start, stop) or, on a strided axis, (start, stop, step) per axis) may share
    an element: their bounding boxes meet (conservative for strided boxes: a wait too many, never one too few)."""
    return all(x[0] < y[1] and y[0] < x[1] for x, y in zip(a, b))


def _rate(bytes_per_cycle: float) -> Fraction:
    """A bandwidth as an exact fraction (terms kept below 2**31, as a hardware description's rate is stated)."""
    rate = Fraction(repr(float(bytes_per_cycle)))
    if rate.numerator >= 1 << 31 or rate.denominator >= 1 << 31:
        rate = rate.limit_denominator(1 << 20)
    return rate


def _ceil_div(num: Fraction | int, den: Fraction) -> int:
    return -(-Fraction(num) // den)


class _Op:
    """One operation: its trace event, engine (None: none), port (-1: none), cycles and what it waits for."""

    __slots__ = ("event", "engine", "port", "cycles", "waits", "buffers_released", "done", "start", "end")

    def __init__(self, event: int, engine, port: int, cycles: int) -> None:
        self.event, self.engine, self.port, self.cycles = event, engine, port, cycles
        self.waits: list[_Op] = []
        self.buffers_released: list[_Buffer] = []  # buffers all of whose operations must end first
        self.start = self.end = -1


class _Buffer:
    """A buffer as the reference tracks it."""

    __slots__ = ("level", "occupants", "ops", "filled", "last_write", "readers", "wb_run", "write_before")

    def __init__(self, level: int, occupants: list[_Buffer]) -> None:
        self.level, self.occupants = level, occupants
        self.ops: list[_Op] = []  # every operation on the buffer
        self.filled = False
        self.last_write: _Op | None = None
        self.readers: list[_Op] = []  # readers of its contents since the last write
        self.wb_run: list[tuple[_Op, tuple]] = []  # the run of write-backs into it that are its latest writes
        self.write_before: _Op | None = None  # the write before that run


class _Owners:
    """Which buffer last held each byte of one level's address space: disjoint [start, stop, buffer] runs."""

    def __init__(self) -> None:
        self.runs: list[tuple[int, int, _Buffer]] = []

    def take(self, start: int, stop: int, new: _Buffer) -> list[_Buffer]:
        """Give [start, stop) to `new`; the distinct buffers that last held any of those bytes, in address order."""
        previous, kept = [], []
        for a, b, owner in self.runs:
            if b <= start or a >= stop:
                kept.append((a, b, owner))
                continue
            if owner not in previous:
                previous.append(owner)
            if a < start:
                kept.append((a, start, owner))
            if b > stop:
                kept.append((stop, b, owner))
        kept.append((start, stop, new))
        self.runs = sorted(kept, key=lambda run: run[0])
        return previous


class _Reader:
    """The pass over the trace that builds the reference's operations (see the module docstring for the rules)."""

    def __init__(self, trace: Trace, hardware: Accelerator) -> None:
        self.trace, self.hw = trace, hardware
        self.word = trace.word_bytes
        self.channels = hardware.dma_load_channels
        self.level_names = [lv.name for lv in hardware.levels]
        self.owners = [_Owners() for _ in hardware.levels]
        ddr_ports = 1 if hardware.dram_shared_load_store else 2
        self.load_port, self.store_port = 0, ddr_ports - 1
        self.level_port = [-1] + [ddr_ports + i for i in range(len(hardware.inner_levels))]
        self.ddr_rate = _rate(hardware.dram_bytes_per_cycle)
        self.level_rate = [None] + [_rate(lv.bytes_per_cycle) for lv in hardware.inner_levels]
        self.layout_cost = hardware.dma_burst_bytes > 1 or hardware.dma_run_cycles > 0
        self.ops: list[_Op] = []
        self.buffers: dict[int, _Buffer] = {}
        self.freed_at: dict[int, _Buffer] = {}  # FREE event index -> its buffer
        self.loads_dealt = 0
        self.ddr_loads: dict[int, list[tuple[_Op, tuple]]] = {}  # writable tensor -> its LOADs (op, region)
        self.ddr_stores: dict[int, list[tuple[_Op, tuple]]] = {}

    # -- durations -----------------------------------------------------------------------------------------------
    def ddr_cycles(self, tensor: int, region: tuple, nbytes: int) -> int:
        """A DDR transfer of `nbytes` of `region` (fewer than the region's bytes for a SLIDE's new rows)."""
        hw = self.hw
        if not self.layout_cost:
            return hw.dma_setup_cycles + _ceil_div(nbytes, self.ddr_rate)
        info = self.trace.tensors[tensor]
        steps = [axis[2] if len(axis) == 3 else 1 for axis in region]  # a strided box moves its indices only
        runs, moved = transfer_runs(info.shape, getattr(info, "layout", DEFAULT_LAYOUT), [axis[:2] for axis in region],
                                    self.word, hw.dma_burst_bytes, steps if max(steps, default=1) > 1 else None)
        whole = region_elements(region) * self.word
        if nbytes != whole:  # a SLIDE: its share of the region's runs and bursts, rounded up
            runs, moved = -(-runs * nbytes // whole), -(-moved * nbytes // whole)
        return hw.dma_setup_cycles + runs * hw.dma_run_cycles + _ceil_div(moved, self.ddr_rate)

    def level_cycles(self, level: int, nbytes: int) -> int:
        return self.hw.levels[level].setup_cycles + _ceil_div(nbytes, self.level_rate[level])

    # -- rules ---------------------------------------------------------------------------------------------------
    def new_op(self, idx: int, engine, port: int, cycles: int) -> _Op:
        op = _Op(idx, engine, port, cycles)
        self.ops.append(op)
        return op

    def next_load_channel(self) -> tuple[str, int]:
        channel = self.loads_dealt % self.channels
        self.loads_dealt += 1
        return ("load", channel)

    def fill(self, buf: _Buffer, op: _Op) -> None:
        """`op` writes all of `buf` (LOAD, OPEN, STAGE, SLIDE): slot waits, then it is the buffer's last write."""
        if buf.filled:
            op.waits.extend(buf.ops)
        else:
            op.buffers_released.extend(buf.occupants)
        buf.filled = True
        self.wrote(buf, op)

    def wrote(self, buf: _Buffer, op: _Op) -> None:
        buf.ops.append(op)
        buf.last_write = op
        buf.readers = []

    def read(self, buf: _Buffer, op: _Op) -> None:
        buf.ops.append(op)
        buf.readers.append(op)

    def overwrite(self, buf: _Buffer, op: _Op) -> None:
        """`op` writes part of `buf`'s contents (a COMPUTE, a WRITEBACK into its target): RAW/WAW and WAR waits."""
        if buf.last_write is not None:
            op.waits.append(buf.last_write)
        op.waits.extend(buf.readers)

    def ddr_waits(self, op: _Op, tensor: int, region: tuple, earlier: dict, mine: dict) -> None:
        """DDR through memory: wait for `earlier`'s transfers of `tensor` meeting `region`; record `op` in `mine`."""
        if not self.trace.tensors[tensor].writable:
            return
        op.waits.extend(o for o, r in earlier.get(tensor, ()) if _meet(r, region))
        mine.setdefault(tensor, []).append((op, region))

    def event(self, idx: int, ev: tuple) -> None:
        kind = ev[0]
        if kind == ALLOC or kind == ALLOC_IN:
            _, b, _t, _region, nbytes, address = ev[:6]
            level = 0 if kind == ALLOC else self.level_names.index(self.trace.scopes[ev[7]].level)
            buf = _Buffer(level, [])
            buf.occupants = self.owners[level].take(address, address + nbytes, buf)
            self.buffers[b] = buf
        elif kind == LOAD:
            _, b, t, region, _nb, _reuse = ev
            op = self.new_op(idx, self.next_load_channel(), self.load_port,
                             self.ddr_cycles(t, region, region_elements(region) * self.word))
            self.fill(self.buffers[b], op)
            self.ddr_waits(op, t, region, self.ddr_stores, self.ddr_loads)
        elif kind == SLIDE:
            _, b, t, region, nbytes = ev
            if nbytes:  # a slide that moves no byte is no operation
                op = self.new_op(idx, self.next_load_channel(), self.load_port, self.ddr_cycles(t, region, nbytes))
                self.fill(self.buffers[b], op)
        elif kind == OPEN:
            self.fill(self.buffers[ev[1]], self.new_op(idx, None, -1, 0))
        elif kind == COMPUTE:
            _, unit, _name, out, ins, _macs, cycles, _padded = ev
            op = self.new_op(idx, "tensorcore" if unit == "tensorcore" else "vector", -1, cycles)
            for b in ins:
                if self.buffers[b].last_write is not None:
                    op.waits.append(self.buffers[b].last_write)
            self.overwrite(self.buffers[out], op)
            for b in ins:
                self.read(self.buffers[b], op)
            self.wrote(self.buffers[out], op)
        elif kind == STORE:
            _, b, t, region, _nb = ev
            buf = self.buffers[b]
            op = self.new_op(idx, "store", self.store_port,
                             self.ddr_cycles(t, region, region_elements(region) * self.word))
            op.waits.append(buf.last_write)
            self.read(buf, op)
            self.ddr_waits(op, t, region, self.ddr_loads, self.ddr_stores)
        elif kind == STAGE:
            _, b, t, region, _nb, source = ev
            buf, src = self.buffers[b], self.buffers[source]
            op = self.new_op(idx, ("stage", buf.level), self.level_port[buf.level],
                             self.level_cycles(buf.level, region_elements(region) * self.word))
            if src.wb_run and src.wb_run[-1][0] is src.last_write:  # partial sums: only the write-backs it meets
                if src.write_before is not None:
                    op.waits.append(src.write_before)
                op.waits.extend(w for w, r in src.wb_run if _meet(r, region))
            else:
                op.waits.append(src.last_write)
            self.read(src, op)
            self.fill(buf, op)
        elif kind == WRITEBACK:
            _, b, t, region, _nb, target = ev
            buf, tgt = self.buffers[b], self.buffers[target]
            op = self.new_op(idx, ("writeback", buf.level), self.level_port[buf.level],
                             self.level_cycles(buf.level, region_elements(region) * self.word))
            op.waits.append(buf.last_write)
            self.overwrite(tgt, op)
            self.read(buf, op)
            if not (tgt.wb_run and tgt.wb_run[-1][0] is tgt.last_write):  # a new run of write-backs
                tgt.wb_run, tgt.write_before = [], tgt.last_write
            tgt.wb_run.append((op, region))
            self.wrote(tgt, op)
        elif kind == FREE:
            self.freed_at[idx] = self.buffers[ev[1]]
        # ENTER, EXIT, HIT: no operation


class _Barrier(simpy.Event):
    """An event that fires at the current time after every URGENT and NORMAL event scheduled for it."""

    def __init__(self, env: simpy.Environment) -> None:
        super().__init__(env)
        self._ok = True
        self._value = None
        env.schedule(self, _AFTER_NORMAL)


class _Port:
    """A port granting one transfer at a time: the earliest-ready waiting transfer, ties in program order."""

    def __init__(self, env: simpy.Environment) -> None:
        self.env = env
        self.busy = False
        self.waiting: list[tuple[int, int, simpy.Event]] = []
        self.deciding = False
        self.order: list[int] = []  # trace events, in grant order

    def request(self, event: int) -> simpy.Event:
        grant = self.env.event()
        heapq.heappush(self.waiting, (self.env.now, event, grant))
        self._kick()
        return grant

    def release(self) -> None:
        self.busy = False
        self._kick()

    def _kick(self) -> None:
        if not self.deciding and not self.busy and self.waiting:
            self.deciding = True
            _Barrier(self.env).callbacks.append(self._decide)

    def _decide(self, _event: simpy.Event) -> None:
        self.deciding = False
        if self.busy or not self.waiting:
            return
        _, event, grant = heapq.heappop(self.waiting)
        self.busy = True
        self.order.append(event)
        grant.succeed()


def _run(reader: _Reader) -> list[_Port]:
    """Time the reader's operations with simpy (each op's start and end set; -1 for those that never ran)."""
    env = simpy.Environment()
    ops = reader.ops
    n_ports = 1 + max((op.port for op in ops), default=0)
    ports = [_Port(env) for _ in range(n_ports)]
    for op in ops:
        op.done = env.event()

    def run_op(op: _Op):
        for w in op.waits:
            yield w.done
        for buf in op.buffers_released:
            for w in buf.ops:
                yield w.done
        if op.port >= 0:
            yield ports[op.port].request(op.event)
            op.start = env.now
            yield env.timeout(op.cycles)
            ports[op.port].release()
        else:
            op.start = env.now
            if op.cycles:
                yield env.timeout(op.cycles)
        op.end = env.now
        op.done.succeed()

    def run_engine(queue: list[_Op]):
        for op in queue:
            yield from run_op(op)

    queues: dict[object, list[_Op]] = {}
    for op in ops:
        if op.engine is None:
            env.process(run_op(op))
        else:
            queues.setdefault(op.engine, []).append(op)
    for queue in queues.values():
        env.process(run_engine(queue))
    env.run()
    return ports


def build_timeline_reference(trace: Trace, hardware: Accelerator, g: OpGraph) -> Timeline:
    """Start/end cycles of every operation of `g`, found by the reference from the trace alone (`g` only numbers
    them); DeadlockError if some can never run, TimingError if the reference and the lowering disagree on which
    events are operations."""
    reader = _Reader(trace, hardware)
    for idx, ev in enumerate(trace.events):
        reader.event(idx, ev)
    ports = _run(reader)
    by_event = {op.event: op for op in reader.ops}
    times: dict[int, tuple[int, int]] = {op.event: (op.start, op.end) for op in reader.ops}
    for idx, buf in reader.freed_at.items():  # a FREE node: the release of its buffer's bytes
        ends = [op.end for op in buf.ops]
        release = -1 if any(e < 0 for e in ends) else max(ends, default=0)
        times[idx] = (release, release)
    events, kinds = g.event.tolist(), g.kind.tolist()
    wanted = {e for e, k in zip(events, kinds) if k != FREE_OP}
    if wanted != set(by_event):
        extra, missing = sorted(set(by_event) - wanted)[:5], sorted(wanted - set(by_event))[:5]
        raise TimingError(f"the reference and the lowering disagree on which trace events are operations: only the "
                          f"reference has {extra}, only the lowering {missing}")
    starts = [times[e][0] for e in events]
    ends = [times[e][1] for e in events]
    op_of = {e: op for op, (e, k) in enumerate(zip(events, kinds)) if k != FREE_OP}
    if any(e < 0 for e in ends):
        heads = []
        for q in g.queues:
            h = 0
            while h < len(q) and ends[q[h]] >= 0:
                h += 1
            heads.append(h)
        _raise_deadlock(g, ends, heads, lambda j: ends[j])
    if len(ports) < g.n_ports:
        ports += [_Port(None)] * (g.n_ports - len(ports))
    return Timeline(starts, ends, [[op_of[e] for e in port.order] for port in ports[:g.n_ports]])
