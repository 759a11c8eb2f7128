"""The timing model's second half, fast: an exact discrete-event list scheduler over the operation graph.

Rules of time (the simpy reference in `reference.py` implements the same rules and is tested equal):
  * An operation is *ready* when its engine has finished the previous operation in program order and every
    dependency (see `model.py`) has finished; a compute or an OPEN starts as soon as it is ready.
  * DDR ports: with `dram_shared_load_store` one port carries every transfer, loads and stores alike;
    otherwise loads share a load port and stores have their own. A port carries one transfer at a time
    (transfers serialize: the exact way to share bandwidth, a transfer always moving at full speed), and it is
    work-conserving: when it frees, it takes the waiting transfer that became ready first, ties going to the
    earlier in program order. Several load channels therefore share the load bandwidth; they help only by
    letting a later load go ahead of an earlier one that is still waiting for its dependencies.

How it is computed. Compute engines and OPEN nodes have no contention besides their own program order, so their
start times follow directly from the end times of what they wait for. Ports are decided in global time order:
the next decision is the port whose earliest possible start D = max(port free, earliest ready transfer) is
smallest, and it takes the ready transfer with the smallest (ready time, program index). This is exact because
every transfer whose ready time is still unknown waits (directly or through computes) for a transfer not yet
placed, which starts at D or later and lasts at least one cycle, so it cannot become ready by D.
"""

from __future__ import annotations

from bisect import bisect_left

from .errors import DeadlockError
from .model import OpGraph, overlaps


class Schedule:
    """Start and end cycle of every operation, plus the order in which each DDR port carried its transfers."""

    __slots__ = ("starts", "ends", "port_order", "cycles")

    def __init__(self, starts: list[int], ends: list[int], port_order: list[list[int]]):
        self.starts = starts
        self.ends = ends
        self.port_order = port_order
        self.cycles = max(ends, default=0)


def schedule(g: OpGraph) -> Schedule:
    """Exact start/end cycles of every operation of `g` (raises DeadlockError if some can never run)."""
    n = g.n
    starts = [0] * n
    ends = [-1] * n
    deps = g.deps
    dur = g.dur
    engine = g.engine
    region = g.region
    tensor = g.tensor
    ddr_check = g.ddr_check
    stores_by_tensor = g.stores_by_tensor
    loads_by_tensor = g.loads_by_tensor
    queues = g.queues
    n_eng = len(queues)
    heads = [0] * n_eng
    free = [0] * n_eng
    port_free = [0] * g.n_ports
    port_order: list[list[int]] = [[] for _ in range(g.n_ports)]
    compute_engines = [e for e in range(n_eng) if g.engine_ports[e] < 0 and queues[e]]
    transfer_engines = [e for e in range(n_eng) if g.engine_ports[e] >= 0 and queues[e]]
    engine_ports = g.engine_ports

    def resolve(op: int) -> int:
        """End of an engine-less node (OPEN, FREE) if all it waits for has a known end, else -1 (iterative)."""
        stack = [op]
        while stack:
            top = stack[-1]
            r = 0
            blocked = False
            for d in deps[top]:
                j = d >> 2
                e = ends[j]
                if e < 0:
                    if engine[j] >= 0:
                        return -1
                    stack.append(j)
                    blocked = True
                    break
                if e > r:
                    r = e
            if blocked:
                if len(stack) > n + 1:  # cannot happen for traces from dsasim; guards malformed graphs
                    return -1
                continue
            starts[top] = r
            ends[top] = r + dur[top]
            stack.pop()
        return ends[op]

    def ready_time(op: int, t: int) -> int:
        """When `op` (the head of its engine, engine free at t) is ready, or -1 if not yet known."""
        r = t
        for d in deps[op]:
            j = d >> 2
            e = ends[j]
            if e < 0:
                if engine[j] >= 0:
                    return -1
                e = resolve(j)
                if e < 0:
                    return -1
            if e > r:
                r = e
        if ddr_check[op]:
            r = ddr_ready(op, r)
        return r

    def ddr_ready(op: int, r: int) -> int:
        """Fold in the DDR dependencies of a transfer; -1 if an overlapping earlier transfer is unplaced."""
        t = tensor[op]
        reg = region[op]
        if engine[op] == g.store_engine:
            per = loads_by_tensor.get(t)
            if per is None:
                return r
            lists = per
        else:
            st = stores_by_tensor.get(t)
            if st is None:
                return r
            lists = (st,)
        for ops in lists:  # ends are increasing along each list (one in-order engine each)
            k = bisect_left(ops, op) - 1
            while k >= 0:
                j = ops[k]
                e = ends[j]
                if 0 <= e <= r:
                    break
                if overlaps(region[j], reg):
                    if e < 0:
                        return -1
                    r = e
                    break
                k -= 1
        return r

    remaining = sum(len(q) for q in queues)
    while True:
        # compute engines: advance each as far as its dependencies are known
        progressed = True
        while progressed:
            progressed = False
            for e in compute_engines:
                q = queues[e]
                h = heads[e]
                if h == len(q):
                    continue
                t = free[e]
                start_h = h
                while h < len(q):
                    op = q[h]
                    r = t
                    ok = True
                    for d in deps[op]:
                        j = d >> 2
                        x = ends[j]
                        if x < 0:
                            if engine[j] >= 0:
                                ok = False
                                break
                            x = resolve(j)
                            if x < 0:
                                ok = False
                                break
                        if x > r:
                            r = x
                    if not ok:
                        break
                    starts[op] = r
                    t = r + dur[op]
                    ends[op] = t
                    h += 1
                if h != start_h:
                    remaining -= h - start_h
                    heads[e] = h
                    free[e] = t
                    progressed = True
        # transfers: decide the port whose next transfer can start earliest
        best_d = best_r = best_op = best_e = -1
        best_p = 0
        for e in transfer_engines:
            q = queues[e]
            h = heads[e]
            if h == len(q):
                continue
            op = q[h]
            r = ready_time(op, free[e])
            if r < 0:
                continue
            p = engine_ports[e]
            d = port_free[p]
            if r > d:
                d = r
            if best_op < 0 or d < best_d or (d == best_d and (p < best_p or (p == best_p and (
                    r < best_r or (r == best_r and op < best_op))))):
                best_d, best_r, best_op, best_e, best_p = d, r, op, e, p
        if best_op < 0:
            break
        # among the transfers of the chosen port, best_op has the smallest (ready, program index) with ready <= D
        starts[best_op] = best_d
        end = best_d + dur[best_op]
        ends[best_op] = end
        port_free[best_p] = end
        free[best_e] = end
        heads[best_e] += 1
        port_order[best_p].append(best_op)
        remaining -= 1

    if remaining:
        _raise_deadlock(g, ends, heads, resolve)
    for op in range(n):  # engine-less nodes nobody waited for
        if ends[op] < 0 and resolve(op) < 0:
            _raise_deadlock(g, ends, heads, resolve, first=op)
    return Schedule(starts, ends, port_order)


def _waits_for(g: OpGraph, op: int, ends: list[int], heads: list[int], resolve) -> int | None:
    """One unfinished operation that `op` waits for (an unfinished dependency, or its engine's head)."""
    eng = g.engine[op]
    if eng >= 0:
        q = g.queues[eng]
        h = heads[eng]
        if h < len(q) and q[h] != op:
            return q[h]
    for d in g.deps[op]:
        j = d >> 2
        if ends[j] < 0 and (g.engine[j] >= 0 or resolve(j) < 0):
            return j
    if g.ddr_check[op]:
        t = g.tensor[op]
        lists = (g.loads_by_tensor.get(t) or []) if g.engine[op] == g.store_engine else \
            [g.stores_by_tensor.get(t, [])]
        for ops in lists:
            for j in ops:
                if j < op and ends[j] < 0 and overlaps(g.region[j], g.region[op]):
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
        nxt = _waits_for(g, chain[-1], ends, heads, resolve)
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
