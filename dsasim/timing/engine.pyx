# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The timing model's second half, fast: an exact discrete-event list scheduler over the operation graph.

Rules of time (the simpy reference in `reference.py` implements the same rules and is tested equal):
  * An operation is *ready* when its engine has finished the previous operation in program order and every
    dependency (see `model.pyx`) has finished; a compute or an OPEN starts as soon as it is ready.
  * DDR ports: with `dram_shared_load_store` one port carries every transfer, loads and stores alike;
    otherwise loads share a load port and stores have their own. A port carries one transfer at a time
    (transfers serialize: the exact way to share bandwidth, a transfer always moving at full speed), and it is
    work-conserving: when it frees, it takes the waiting transfer that became ready first, ties going to the
    earlier in program order. Several load channels therefore share the load bandwidth; they help only by
    letting a later load go ahead of an earlier one that is still waiting for its dependencies.

How it is computed. Compute engines, the engines of memory levels below the SRAM (`dma-<level>`: each has its own
port to its parent, which nothing else uses, so it has no DDR port here) and OPEN nodes have no contention besides
their own program order, so their start times follow directly from the end times of what they wait for. Ports
are decided in global time order:
the next decision is the port whose earliest possible start D = max(port free, earliest ready transfer) is
smallest, and it takes the ready transfer with the smallest (ready time, program index). This is exact because
every transfer whose ready time is still unknown waits (directly or through computes) for a transfer not yet
placed, which starts at D or later and lasts at least one cycle, so it cannot become ready by D.
"""

from __future__ import annotations


import numpy as np

from dsasim.timing.errors import DeadlockError
from dsasim.timing.model cimport RegionColumn
from dsasim.timing.model import OpGraph


class Timeline:
    """Start and end cycle of every operation (int64 arrays), plus the order in which each DDR port carried its
    transfers."""

    __slots__ = ("starts", "ends", "port_order", "cycles")

    def __init__(self, starts, ends, port_order):  # port_order: per port, a sequence of op ids
        self.starts = np.asarray(starts, dtype=np.int64)
        self.ends = np.asarray(ends, dtype=np.int64)
        self.port_order = [np.asarray(order, dtype=np.int64) for order in port_order]
        self.cycles = int(self.ends.max()) if len(self.ends) else 0


def build_timeline(g: OpGraph) -> Timeline:
    """Exact start/end cycles of every operation of `g` (raises DeadlockError if some can never run)."""
    cdef _ListScheduler scheduler = _ListScheduler(g)
    scheduler.advance_compute_engines()
    while scheduler.place_next_transfer():
        scheduler.advance_compute_engines()
    return scheduler.timeline()


cdef class _ListScheduler:
    """The state of `build_timeline`: the ends known so far (C arrays, an unknown end is -1), each engine's next
    operation and free time, and each port's free time and order."""

    cdef object g
    cdef Py_ssize_t n, n_eng, remaining
    cdef long long[::1] starts, ends, dur, free, port_free, dep_ptr, dep_val
    cdef signed char[::1] engine
    cdef int[::1] engine_ports
    cdef unsigned char[::1] ddr_check
    cdef Py_ssize_t[::1] heads, q_end, q_ops  # engine e's queue is q_ops[q_start[e]:q_end[e]]; heads: positions
    cdef list compute_engines, transfer_engines
    cdef object port_order_a
    cdef long long[::1] port_order, port_start, port_count  # port p's transfers in the order it carried them:
                                                            # port_order[port_start[p]:][:port_count[p]]
    cdef RegionColumn region

    def __init__(self, g: OpGraph) -> None:
        self.g = g
        n = self.n = g.n
        self.starts = np.zeros(n, dtype=np.int64)
        self.ends = np.full(n, -1, dtype=np.int64)
        self.dur, self.engine, self.dep_ptr, self.dep_val = g.dur, g.engine, g.dep_ptr, g.dep_val
        self.region, self.ddr_check = g.region, g.ddr_check.view(np.uint8)
        self.n_eng = len(g.queues)
        self.engine_ports = np.asarray(g.engine_ports, dtype=np.intc)
        sizes = np.array([len(q) for q in g.queues], dtype=np.intp)
        self.q_ops = np.concatenate(g.queues).astype(np.intp, copy=False) if g.queues else np.zeros(0, np.intp)
        self.q_end = np.cumsum(sizes).astype(np.intp)
        self.heads = np.asarray(self.q_end) - sizes  # per engine, the position of its next operation in q_ops
        self.free = np.zeros(self.n_eng, dtype=np.int64)  # per engine, when it finished its last operation
        self.port_free = np.zeros(g.n_ports, dtype=np.int64)
        per_port = np.bincount(g.port[g.port >= 0], minlength=g.n_ports).astype(np.int64)
        self.port_order_a = np.empty(int(per_port.sum()), np.int64)
        self.port_order = self.port_order_a
        self.port_start = np.concatenate([[0], np.cumsum(per_port)[:-1]]).astype(np.int64)
        self.port_count = np.zeros(g.n_ports, np.int64)
        self.compute_engines = [e for e in range(self.n_eng) if g.engine_ports[e] < 0 and len(g.queues[e])]
        self.transfer_engines = [e for e in range(self.n_eng) if g.engine_ports[e] >= 0 and len(g.queues[e])]
        self.remaining = n - int((g.engine < 0).sum())

    cdef long long scan(self, Py_ssize_t op, long long r):
        """The last end of op's dependencies (at least r); -1 if one on an engine has not ended yet, -2 - j if the
        first unknown one is engine-less node j."""
        cdef Py_ssize_t i, j
        cdef long long x
        for i in range(self.dep_ptr[op], self.dep_ptr[op + 1]):
            j = self.dep_val[i] >> 2
            x = self.ends[j]
            if x < 0:
                return -1 if self.engine[j] >= 0 else -2 - j
            if x > r:
                r = x
        return r

    cdef long long ready(self, Py_ssize_t op, long long r) except -2:
        """When every dependency of op has ended (at least r); -1 if one has no known end yet (engine-less ones are
        resolved on the way)."""
        cdef long long x = self.scan(op, r)
        while x < -1:
            if self.resolve(-2 - x) < 0:
                return -1
            x = self.scan(op, r)
        return x

    cpdef long long resolve(self, Py_ssize_t op) except -2:
        """End of an engine-less node (OPEN, FREE) if all it waits for has a known end, else -1 (iterative: a chain
        of engine-less nodes is walked with a stack, not by recursion)."""
        cdef Py_ssize_t top
        cdef long long x
        stack = [op]
        while stack:
            top = stack[len(stack) - 1]
            x = self.scan(top, 0)
            if x == -1 or (x < -1 and len(stack) > self.n):  # (the second: a cycle, only in a malformed graph)
                return -1
            if x < -1:
                stack.append(-2 - x)
            else:
                self.starts[top] = x
                self.ends[top] = x + self.dur[top]
                stack.pop()
        return self.ends[op]

    cdef long long ddr_ready(self, Py_ssize_t op, long long r) except -2:
        """Fold in the DDR dependencies of a transfer; -1 if an overlapping earlier transfer is unplaced."""
        cdef Py_ssize_t k, j
        cdef long long e
        cdef Py_ssize_t[::1] ops
        for of_engine in self.g.ddr_lists(op):  # ends are increasing along each list (one in-order engine each)
            ops = of_engine
            k = _count_below(ops, op) - 1
            while k >= 0:
                j = ops[k]
                e = self.ends[j]
                if 0 <= e <= r:
                    break
                if self.region.overlaps(j, op):
                    if e < 0:
                        return -1
                    r = e
                    break
                k -= 1
        return r

    cdef int advance_compute_engines(self) except -1:
        """Start every compute engine's next operations for as long as their dependencies' ends are known."""
        cdef Py_ssize_t e, h, start_h, op, size
        cdef long long t, r
        cdef bint progressed = True
        while progressed:
            progressed = False
            for e in self.compute_engines:
                size = self.q_end[e]
                h = start_h = self.heads[e]
                t = self.free[e]
                while h < size:
                    op = self.q_ops[h]
                    r = self.ready(op, t)
                    if r < 0:
                        break
                    self.starts[op] = r
                    t = r + self.dur[op]
                    self.ends[op] = t
                    h += 1
                if h != start_h:
                    self.remaining -= h - start_h
                    self.heads[e] = h
                    self.free[e] = t
                    progressed = True
        return 0

    cdef bint place_next_transfer(self) except -1:
        """Make the port decision that comes first in time; False if no transfer is ready.

        The port whose next transfer can start earliest (at D) takes, among its transfers ready by D, the one with
        the smallest (ready time, program index)."""
        cdef long long best_d = -1, best_r = -1, r, d, end
        cdef Py_ssize_t best_op = -1, best_e = -1, e, h, op
        cdef int best_p = 0, p
        for e in self.transfer_engines:
            h = self.heads[e]
            if h == self.q_end[e]:
                continue
            op = self.q_ops[h]
            r = self.ready(op, self.free[e])  # when op is ready (the head of its engine), -1 if not known yet
            if r >= 0 and self.ddr_check[op]:
                r = self.ddr_ready(op, r)
            if r < 0:
                continue
            p = self.engine_ports[e]
            d = self.port_free[p]
            if r > d:
                d = r
            if best_op < 0 or d < best_d or (d == best_d and (p < best_p or (p == best_p and (
                    r < best_r or (r == best_r and op < best_op))))):
                best_d, best_r, best_op, best_e, best_p = d, r, op, e, p
        if best_op < 0:
            return False
        self.starts[best_op] = best_d
        end = best_d + self.dur[best_op]
        self.ends[best_op] = end
        self.port_free[best_p] = end
        self.free[best_e] = end
        self.heads[best_e] += 1
        self.port_order[self.port_start[best_p] + self.port_count[best_p]] = best_op
        self.port_count[best_p] += 1
        self.remaining -= 1
        return True

    def timeline(self) -> Timeline:
        """The finished Timeline; DeadlockError if some operation never ran."""
        g = self.g
        ends = self.ends
        heads = (np.asarray(self.heads) - (np.asarray(self.q_end) - [len(q) for q in g.queues])).tolist()
        cdef Py_ssize_t op
        if self.remaining:
            _raise_deadlock(g, np.asarray(ends).tolist(), heads, self.resolve)
        for op in range(self.n):  # engine-less nodes nobody waited for
            if ends[op] < 0 and self.resolve(op) < 0:
                _raise_deadlock(g, np.asarray(ends).tolist(), heads, self.resolve, first=op)
        return Timeline(self.starts, ends, [self.port_order_a[self.port_start[p]:self.port_start[p] + self.port_count[p]]
                                            for p in range(len(self.port_count))])


cdef Py_ssize_t _count_below(Py_ssize_t[::1] ops, Py_ssize_t op):
    """How many of the ascending `ops` are < op (bisect_left)."""
    cdef Py_ssize_t lo = 0, hi = ops.shape[0], mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if ops[mid] < op:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _waits_for(g: OpGraph, op: int, ends: list[int], heads: list[int], resolve) -> int | None:
    """One unfinished operation that `op` waits for (an unfinished dependency, or its engine's head)."""
    eng = g.engine[op]
    if eng >= 0:
        q = g.queues[eng]
        h = heads[eng]
        if h < len(q) and q[h] != op:
            return q[h]
    for d in g.deps_of(op):
        j = d >> 2
        if ends[j] < 0 and (g.engine[j] >= 0 or resolve(j) < 0):
            return j
    if g.ddr_check[op]:
        lists = g.ddr_lists(op)
        for ops in lists:
            for j in ops:
                if j < op and ends[j] < 0 and g.region.overlaps(j, op):
                    return j
    return None


def _raise_deadlock(g: OpGraph, ends: list[int], heads: list[int], resolve, first: int | None = None) -> None:
    if first is None:
        for e, q in enumerate(g.queues):
            if heads[e] < len(q):
                first = q[heads[e]]
                break
    chain = [first]
    seen = {first: 0}
    cycle = False
    while True:
        nxt = _waits_for(g, chain[len(chain) - 1], ends, heads, resolve)
        if nxt is None:
            break
        if nxt in seen:
            chain = chain[seen[nxt]:] + [nxt]
            cycle = True
            break
        seen[nxt] = len(chain)
        chain.append(nxt)
    names = tuple(g.describe(op) for op in chain)
    if cycle:
        msg = ("deadlock: a cycle in dependencies, no operation of it can ever start:\n  "
               + "\n  waits for ".join(names)
               + "\nA buffer's slot is reused while the buffer is still in use, or an engine's program order "
                 "contradicts the data flow.")
    else:
        msg = ("deadlock: " + "\n  waits for ".join(names) + "\nwhich can never complete.")
    raise DeadlockError(msg, names)

