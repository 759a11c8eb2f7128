"""The attention kernels: execute any `AttentionSchedule` (unfused, store-p, store-s, q-outer, kv-outer) on the
traced memory model.

Semantics are those of `dsasim.architect.nests.attention_schedule` (module docstring), tensors those of
`dsasim.architect.problems.attention` (Q, K, V in, O out, 2-d, rows ordered (batch, head, position)); S and P are
DDR intermediates of the unfused and partly fused kinds, M and L (running max and sum, one per query row) of
kv-outer. Scopes: `top`, then per (batch, K/V head) group `@q` (a row tile: the g query heads' tiles) and `@kv`
(a key tile: K and/or V), `@head` (one query head's temporaries: its S tile, row vectors); the innermost streamed
scope takes the schedule's ways.

The softmax on the vector unit (costs per lane operation in `dsasim.traced.tensorcore`): S holds Q·Kᵀ unscaled;
a partly masked tile is masked (-inf) first; P = exp((S - rowmax) / √d) (`sub_rows`, then `exp` with the scale
folded in). Online softmax (q-outer, kv-outer), per key tile after a row tile's first: m_new = max(row_max(S),
m); alpha = exp((m - m_new) / √d); m = m_new (a copy); P = exp((S - m_new) / √d); l = l·alpha + row_sum(P);
O = O·alpha + P·V; after the row tile's last key tile O = O / l. The first key tile sets m, l and O directly.

`attention_schedule(sch)` is a `Schedule` for `run_schedule` (numeric mode checks O against torch);
`count_attention` runs it count-only.
"""

from __future__ import annotations

import math
from typing import Mapping

from dsasim import (Accelerator, GlobalHierarchy, RunResult, Schedule, Session, TensorCore, TracedArray, VectorUnit,
                    Workload, bind_tensors, run_schedule)
from dsasim.architect.nests.attention_schedule import AttentionSchedule
from dsasim.architect.problems.attention import AttentionProblem
from dsasim.traced.counters import Counters

__all__ = ["attention_workload", "execute_attention", "attention_schedule", "run_attention", "count_attention"]

_INTERMEDIATES = {"unfused": ("S", "P"), "store-p": ("P",), "store-s": ("S",), "q-outer": (), "kv-outer": ("M", "L")}


def attention_workload(problem: AttentionProblem, kind: str = "q-outer") -> Workload:
    """The `Workload` of a problem run by schedules of `kind`: Q, K, V in (K and V as the TensorCore's weight
    operand), O out, and the kind's DDR intermediates (S, P: (b·h·n, m); M, L: (b·h·n, 1))."""
    rows = problem.b * problem.h * problem.n
    shapes = {"S": (rows, problem.m), "P": (rows, problem.m), "M": (rows, 1), "L": (rows, 1)}
    return Workload(problem.spec(), inputs={x: problem.shape(x) for x in "QKV"}, outputs={"O": problem.shape("O")},
                    reference=problem.reference, intermediates={x: shapes[x] for x in _INTERMEDIATES[kind]},
                    roles={"K": "weight", "V": "weight"})


class _Run:
    """One schedule's execution state: the session, units, tensors and the problem's row arithmetic."""

    def __init__(self, sch: AttentionSchedule, s: Session, t: Mapping[str, TracedArray]) -> None:
        self.sch, self.s, self.t, self.p = sch, s, t, sch.problem
        self.tc, self.vec = TensorCore(s), VectorUnit(s)
        rows = self.p.b * self.p.h * self.p.n
        self.scale = 1.0 / math.sqrt(self.p.d)
        self.chip = {name: s.on_chip(name, shape) for name, shape in (
            ("S_chip", (rows, self.p.m)), ("P_chip", (rows, self.p.m)), ("rowmax", (rows, 1)), ("rowsum", (rows, 1)),
            ("newmax", (rows, 1)), ("alpha", (rows, 1)))}

    def groups(self) -> list[tuple[list[int], int]]:
        """Per (batch, K/V head): its query heads (global indexes b·h + head) and its K/V head (b·hkv + kv)."""
        p = self.p
        return [([bi * p.h + kv * p.group + gi for gi in range(p.group)], bi * p.hkv + kv)
                for bi in range(p.b) for kv in range(p.hkv)]

    def qrows(self, head: int, r0: int, r1: int) -> slice:
        """The rows of Q, O, S, P, M, L holding query positions [r0, r1) of `head`."""
        return slice(head * self.p.n + r0, head * self.p.n + r1)

    def krows(self, kv: int, c0: int, c1: int) -> slice:
        """The rows of K and V holding keys [c0, c1) of K/V head `kv`."""
        return slice(kv * self.p.m + c0, kv * self.p.m + c1)

    def span(self, r0: int, r1: int) -> int:
        """The keys a row tile's computed tiles cover: [0, span)."""
        return self.sch.key_tiles(r0, r1)[-1][1]

    def scope(self, name: str, ways: int = 1) -> GlobalHierarchy:
        return GlobalHierarchy(self.s, name, ways=ways)

    # -- passes shared by the kinds --------------------------------------------------------------------------------
    def scores_to_ddr(self) -> None:
        """S = Q·Kᵀ for every computed tile, stored (unfused, store-s)."""
        for heads, kv in self.groups():
            for r0, r1 in self.sch.row_tiles():
                with self.scope("@q"):
                    q = {hd: self.t["Q"][self.qrows(hd, r0, r1)] for hd in heads}
                    for c0, c1 in self.sch.key_tiles(r0, r1):
                        with self.scope("@kv", self.sch.ways):
                            k = self.t["K"][self.krows(kv, c0, c1)]
                            for hd in heads:
                                with self.scope("@head"):
                                    self.t["S"][self.qrows(hd, r0, r1), c0:c1].assign(self.tc.matmul_nt(q[hd], k))

    def softmax_rows(self, src, out, head: int, r0: int, r1: int, normalise: bool):
        """out = exp((src - rowmax) / √d) over the row tile's span (masked first when part of it is hidden), and
        divided by its row sum when `normalise`; returns the row-sum tile (opened in the current scope)."""
        vec, p = self.vec, self.p
        rows = self.qrows(head, r0, r1)
        mx = self.chip["rowmax"][rows]
        if self.sch.masked(r0, self.span(r0, r1)):
            out.assign(vec.mask_causal(src, r0, 0, p.offset))
            src = out
        mx.assign(vec.row_max(src))
        out.assign(vec.sub_rows(src, mx))
        out.assign(vec.exp(out, self.scale))
        total = self.chip["rowsum"][rows]
        total.assign(vec.row_sum(out))
        if normalise:
            out.assign(vec.div_rows(out, total))
        return total

    def probabilities_times_values(self) -> None:
        """O = P·V from P in DDR (unfused, store-p)."""
        for heads, kv in self.groups():
            for r0, r1 in self.sch.row_tiles():
                with self.scope("@q"):
                    o = {hd: self.t["O"][self.qrows(hd, r0, r1)] for hd in heads}
                    for c0, c1 in self.sch.key_tiles(r0, r1):
                        with self.scope("@kv", self.sch.ways):
                            v = self.t["V"][self.krows(kv, c0, c1)]
                            for hd in heads:
                                with self.scope("@head"):
                                    o[hd] += self.tc.matmul(self.t["P"][self.qrows(hd, r0, r1), c0:c1], v)

    def online_step(self, st, v, o, mx, total, head: int, r0: int, r1: int, c0: int, c1: int, first: bool) -> None:
        """One key tile of the online softmax on S tile `st` (module docstring)."""
        vec, tc = self.vec, self.tc
        if self.sch.masked(r0, c1):
            st.assign(vec.mask_causal(st, r0, c0, self.p.offset))
        if first:
            mx.assign(vec.row_max(st))
            st.assign(vec.sub_rows(st, mx))
            st.assign(vec.exp(st, self.scale))
            total.assign(vec.row_sum(st))
            o.assign(tc.matmul(st, v))
            return
        rows = self.qrows(head, r0, r1)
        new, alpha = self.chip["newmax"][rows], self.chip["alpha"][rows]
        new.assign(vec.row_max(st))
        new.assign(vec.maximum(new, mx))
        alpha.assign(vec.sub(mx, new))
        alpha.assign(vec.exp(alpha, self.scale))
        mx.assign(vec.copy(new))
        st.assign(vec.sub_rows(st, mx))
        st.assign(vec.exp(st, self.scale))
        total.assign(vec.mul(total, alpha))
        total += vec.row_sum(st)
        o.assign(vec.mul_rows(o, alpha))
        o += tc.matmul(st, v)

    # -- the kinds -------------------------------------------------------------------------------------------------
    def unfused(self) -> None:
        self.scores_to_ddr()
        for heads, _ in self.groups():
            for r0, r1 in self.sch.row_tiles():
                span = self.span(r0, r1)
                with self.scope("@q"):
                    for hd in heads:
                        with self.scope("@head"):
                            rows = self.qrows(hd, r0, r1)
                            self.softmax_rows(self.t["S"][rows, 0:span], self.t["P"][rows, 0:span], hd, r0, r1, True)
        self.probabilities_times_values()

    def store_p(self) -> None:
        for heads, kv in self.groups():
            for r0, r1 in self.sch.row_tiles():
                span = self.span(r0, r1)
                with self.scope("@q"):
                    q = {hd: self.t["Q"][self.qrows(hd, r0, r1)] for hd in heads}
                    s = {hd: self.chip["S_chip"][self.qrows(hd, r0, r1), 0:span] for hd in heads}
                    for c0, c1 in self.sch.key_tiles(r0, r1):
                        with self.scope("@kv", self.sch.ways):
                            k = self.t["K"][self.krows(kv, c0, c1)]
                            for hd in heads:
                                s[hd][:, c0:c1].assign(self.tc.matmul_nt(q[hd], k))
                    for hd in heads:
                        with self.scope("@head"):
                            self.softmax_rows(s[hd], self.t["P"][self.qrows(hd, r0, r1), 0:span], hd, r0, r1, True)
        self.probabilities_times_values()

    def store_s(self) -> None:
        self.scores_to_ddr()
        for heads, kv in self.groups():
            for r0, r1 in self.sch.row_tiles():
                span = self.span(r0, r1)
                with self.scope("@q"):
                    prob, total, o = {}, {}, {}
                    for hd in heads:
                        rows = self.qrows(hd, r0, r1)
                        prob[hd] = self.chip["P_chip"][rows, 0:span]
                        total[hd] = self.chip["rowsum"][rows]
                        o[hd] = self.t["O"][rows]
                        with self.scope("@head"):
                            self.softmax_rows(self.t["S"][rows, 0:span], prob[hd], hd, r0, r1, False)
                    for c0, c1 in self.sch.key_tiles(r0, r1):
                        with self.scope("@kv", self.sch.ways):
                            v = self.t["V"][self.krows(kv, c0, c1)]
                            for hd in heads:
                                o[hd] += self.tc.matmul(prob[hd][:, c0:c1], v)
                    for hd in heads:
                        o[hd].assign(self.vec.div_rows(o[hd], total[hd]))

    def q_outer(self) -> None:
        for heads, kv in self.groups():
            for r0, r1 in self.sch.row_tiles():
                with self.scope("@q"):
                    rows = {hd: self.qrows(hd, r0, r1) for hd in heads}
                    q = {hd: self.t["Q"][rows[hd]] for hd in heads}
                    o = {hd: self.t["O"][rows[hd]] for hd in heads}
                    mx = {hd: self.chip["rowmax"][rows[hd]] for hd in heads}
                    total = {hd: self.chip["rowsum"][rows[hd]] for hd in heads}
                    for i, (c0, c1) in enumerate(self.sch.key_tiles(r0, r1)):
                        with self.scope("@kv", self.sch.ways):
                            k = self.t["K"][self.krows(kv, c0, c1)]
                            v = self.t["V"][self.krows(kv, c0, c1)]
                            for hd in heads:
                                with self.scope("@head"):
                                    st = self.chip["S_chip"][rows[hd], c0:c1]
                                    st.assign(self.tc.matmul_nt(q[hd], k))
                                    self.online_step(st, v, o[hd], mx[hd], total[hd], hd, r0, r1, c0, c1, i == 0)
                    for hd in heads:
                        o[hd].assign(self.vec.div_rows(o[hd], total[hd]))

    def kv_outer(self) -> None:
        last = {}  # row tile -> its last computed key tile's start
        for r0, r1 in self.sch.row_tiles():
            last[r0] = self.sch.key_tiles(r0, r1)[-1][0]
        for heads, kv in self.groups():
            for c0 in range(0, self.p.m, self.sch.bc):
                c1 = min(c0 + self.sch.bc, self.p.m)
                rows_tiles = [(r0, r1) for r0, r1 in self.sch.row_tiles() if self.p.tile_computed(r0, r1, c0)]
                if not rows_tiles:
                    continue
                with self.scope("@kv"):
                    k = self.t["K"][self.krows(kv, c0, c1)]
                    v = self.t["V"][self.krows(kv, c0, c1)]
                    for r0, r1 in rows_tiles:
                        with self.scope("@q", self.sch.ways):
                            rows = {hd: self.qrows(hd, r0, r1) for hd in heads}
                            q = {hd: self.t["Q"][rows[hd]] for hd in heads}
                            o = {hd: self.t["O"][rows[hd]] for hd in heads}
                            mx = {hd: self.t["M"][rows[hd]] for hd in heads}
                            total = {hd: self.t["L"][rows[hd]] for hd in heads}
                            for hd in heads:
                                with self.scope("@head"):
                                    st = self.chip["S_chip"][rows[hd], c0:c1]
                                    st.assign(self.tc.matmul_nt(q[hd], k))
                                    self.online_step(st, v, o[hd], mx[hd], total[hd], hd, r0, r1, c0, c1, c0 == 0)
                                if c0 == last[r0]:
                                    o[hd].assign(self.vec.div_rows(o[hd], total[hd]))


_KINDS = {"unfused": _Run.unfused, "store-p": _Run.store_p, "store-s": _Run.store_s, "q-outer": _Run.q_outer,
          "kv-outer": _Run.kv_outer}


def execute_attention(sch: AttentionSchedule, s: Session, tensors: Mapping[str, TracedArray]) -> None:
    """Run `sch` in session `s` over its traced tensors (by name: Q, K, V, O and the kind's intermediates)."""
    run = _Run(sch, s, tensors)
    with GlobalHierarchy(s, "top"):
        _KINDS[sch.kind](run)


def attention_schedule(sch: AttentionSchedule, name: str | None = None, hardware: str = "blog") -> Schedule:
    """`sch` as a `Schedule` of its problem's workload (for `run_schedule`, the timing simulator)."""

    def body(s: Session, **tensors: TracedArray) -> None:
        execute_attention(sch, s, tensors)

    return Schedule(name or f"attention-{sch.kind}", attention_workload(sch.problem, sch.kind), body, repr(sch),
                    hardware)


def run_attention(sch: AttentionSchedule, hardware: Accelerator, numeric: bool = False, record_trace: bool = True,
                  enforce_capacity: bool = True, seed: int = 0) -> RunResult:
    """Run `sch` on `hardware` (count-only by default) and return the `RunResult`."""
    return run_schedule(attention_schedule(sch), hardware, numeric=numeric, seed=seed, record_trace=record_trace,
                        enforce_capacity=enforce_capacity)


def count_attention(sch: AttentionSchedule, hardware: Accelerator, enforce_capacity: bool = True) -> Counters:
    """The fastest traced run: count-only, no trace recorded; returns the session's `Counters`."""
    workload = attention_workload(sch.problem, sch.kind)
    s = Session(hardware, numeric=False, record_trace=False, enforce_capacity=enforce_capacity)
    execute_attention(sch, s, bind_tensors(s, workload, None))
    s.finish()
    return s.counters
