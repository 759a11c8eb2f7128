"""The simpy reference scheduler: the same rules as `engine.pyx`, written the obvious way.

One simpy process per engine walks its operations in program order: it waits for each operation's dependencies
(their `done` events), asks the operation's DDR port for a grant if it is a DDR transfer (a STAGE or WRITEBACK
has no DDR port: its level's port is its engine's alone), holds the engine (and the port) for the operation's
duration, then triggers `done`. Engine-less nodes (OPEN, FREE) get a process each.
DDR dependencies are found by scanning every earlier transfer of the tensor (no pruning).

A port grants at most one transfer at a time. Its decision at time t runs after everything else that happens at
t (a simpy event of lower priority than NORMAL), so all transfers that become ready at t are waiting, and it
takes the one with the smallest (ready time, program index): the fast scheduler's rule.

This is the specification the fast scheduler is tested against; it costs a few simpy events per operation, so
use it on small traces (`simulate(..., reference=True)`).
"""

from __future__ import annotations

import heapq

import simpy

from dsasim.timing.engine import Timeline, _raise_deadlock
from dsasim.timing.model import OpGraph, overlaps

_AFTER_NORMAL = 2  # simpy: URGENT = 0, NORMAL = 1; larger runs later among events at the same time


class _Barrier(simpy.Event):
    """An event that fires at the current time after every URGENT and NORMAL event scheduled for it."""

    def __init__(self, env: simpy.Environment) -> None:
        super().__init__(env)
        self._ok = True
        self._value = None
        env.schedule(self, _AFTER_NORMAL)


class _Port:
    def __init__(self, env: simpy.Environment, order: list[int]) -> None:
        self.env = env
        self.busy = False
        self.waiting: list[tuple[int, int, simpy.Event]] = []
        self.deciding = False
        self.order = order

    def request(self, op: int) -> simpy.Event:
        grant = self.env.event()
        heapq.heappush(self.waiting, (self.env.now, op, grant))
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
        _, op, grant = heapq.heappop(self.waiting)
        self.busy = True
        self.order.append(op)
        grant.succeed()


def build_timeline_simpy(g: OpGraph) -> Timeline:
    """Start/end cycles of every operation of `g`, by simpy (raises DeadlockError if some can never run)."""
    env = simpy.Environment()
    n = g.n
    done = [env.event() for _ in range(n)]
    starts = [0] * n
    ends = [-1] * n
    port_order: list[list[int]] = [[] for _ in range(g.n_ports)]
    ports = [_Port(env, port_order[p]) for p in range(g.n_ports)]

    def ddr_deps(op: int) -> list[int]:
        return [j for ops in g.ddr_lists(op) for j in ops.tolist() if j < op and overlaps(g.region[j], g.region[op])]

    port, dur, ddr_check = g.port.tolist(), g.dur.tolist(), g.ddr_check.tolist()

    def run_op(op: int):
        for d in g.deps_of(op):
            yield done[d >> 2]
        if ddr_check[op]:
            for j in ddr_deps(op):
                yield done[j]
        p = port[op]
        if p >= 0:
            yield ports[p].request(op)
            starts[op] = env.now
            yield env.timeout(dur[op])
            ports[p].release()
        else:
            starts[op] = env.now
            if dur[op]:
                yield env.timeout(dur[op])
        ends[op] = env.now
        done[op].succeed()

    def run_engine(queue: list[int]):
        for op in queue:
            yield from run_op(op)

    for q in g.queues:
        if len(q):
            env.process(run_engine(q.tolist()))
    for op in range(n):
        if g.engine[op] < 0:
            env.process(run_op(op))
    env.run()
    if any(e < 0 for e in ends):
        heads = []
        for q in g.queues:
            h = 0
            while h < len(q) and ends[q[h]] >= 0:
                h += 1
            heads.append(h)
        _raise_deadlock(g, ends, heads, lambda j: ends[j])
    return Timeline(starts, ends, port_order)
