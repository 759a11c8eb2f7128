# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""The per-operation loops of `result.py`, compiled: one pass each, no per-operation temporaries.

Every float is computed with the same operations in the same order as the numpy formulation they replace
(sequential cumulative sums, numpy's interpolation rule), so the figures are bit-identical to it.
"""

from libc.stdint cimport int8_t, int16_t, int64_t

import numpy as np

from dsasim.timing.model import LOAD_OP, REASON_NAMES, STAGE_OP, STORE_OP, TC_OP, VEC_OP, WRITEBACK_OP


def engine_figures(const int16_t[:] engine, const int64_t[:] starts, const int64_t[:] ends,
                   Py_ssize_t n_engines) -> tuple[list[int], list[int]]:
    """Per engine index: the sum of its operations' durations (cycles) and their number; engine -1 is skipped."""
    cdef int64_t[:] busy = np.zeros(n_engines, dtype=np.int64)
    cdef int64_t[:] count = np.zeros(n_engines, dtype=np.int64)
    cdef Py_ssize_t i, n = engine.shape[0]
    cdef int e
    for i in range(n):
        e = engine[i]
        if 0 <= e < n_engines:
            busy[e] += ends[i] - starts[i]
            count[e] += 1
    return np.asarray(busy).tolist(), np.asarray(count).tolist()


def buffer_ends(const int64_t[:] ptr, const int64_t[:] n_users, const int64_t[:] users,
                const int64_t[:] ends, int64_t cycles) -> np.ndarray:
    """Per buffer: the latest end (cycles) of its users users[ptr[b]:ptr[b] + n_users[b]], `cycles` if it has none."""
    cdef Py_ssize_t b, k, nb = ptr.shape[0]
    out_arr = np.empty(nb, dtype=np.int64)
    cdef int64_t[:] out = out_arr
    cdef int64_t best, v
    with nogil:  # (C arrays only: another thread may build another part of the result meanwhile)
        for b in range(nb):
            if n_users[b] == 0:
                out[b] = cycles
                continue
            best = 0
            for k in range(ptr[b], ptr[b] + n_users[b]):
                v = ends[users[k]]
                if v > best:
                    best = v
            out[b] = best
    return out_arr


def window_integrals(const int64_t[:] s, const int64_t[:] e, const double[:] rate,
                     const double[:] edges) -> np.ndarray:
    """Integral over each window [edges[k], edges[k+1]) of sum_i rate_i * [s_i <= t < e_i].

    The same figures as: sort the 2n steps (t, +-rate) stably by t (starts before ends), r = cumsum of the
    steps, g = [0, cumsum(r[:-1] * diff(t))], np.interp(edges, t, g, left=0, right=g[-1]), np.diff; computed in
    one merge of the sorted starts and ends, evaluating the interpolation as the walk passes each edge."""
    cdef Py_ssize_t n = s.shape[0]
    sel = np.arange(n, dtype=np.int64)
    return _integrals(s, e, sel, 0, rate, np.zeros(0, np.int64), False, edges)


def spread_integrals(const int64_t[:] s, const int64_t[:] e, const int64_t[:] weight, const int64_t[:] sel,
                     int64_t setup, bint spread, const double[:] edges) -> np.ndarray:
    """window_integrals of the intervals [s[i] + setup, e[i]) for i in `sel`, without copying them out: rate
    weight[i] / max(e[i] - s[i] - setup, 1) with `spread` (bytes over a transfer's data phase), weight[i] else."""
    return _integrals(s, e, sel, setup, np.zeros(0), weight, spread, edges)


cdef object _integrals(const int64_t[:] s, const int64_t[:] e, const int64_t[:] sel, int64_t setup,
                       const double[:] rate, const int64_t[:] weight, bint spread, const double[:] edges):
    """The walk of window_integrals over intervals sel[i]: [s + setup, e), rate[i] or weight[sel[i]] (spread)."""
    cdef Py_ssize_t n = sel.shape[0], n_edges = edges.shape[0]
    if n == 0:
        return np.zeros(n_edges - 1)
    sel_arr = np.asarray(sel)
    cdef const int64_t[:] os = np.argsort(np.asarray(s)[sel_arr] + setup, kind="stable")
    cdef const int64_t[:] oe = np.argsort(np.asarray(e)[sel_arr], kind="stable")
    ge_arr = np.empty(n_edges, dtype=np.float64)
    cdef double[:] ge = ge_arr
    cdef bint by_weight = weight.shape[0] > 0
    cdef Py_ssize_t i = 0, j = 0, k, m = 0, a
    cdef int64_t span
    cdef bint is_start
    cdef double t, d, t_prev = 0.0, g = 0.0, g_prev = 0.0, r = 0.0, x, slope
    with nogil:  # (C arrays only)
        for k in range(2 * n):
            is_start = i < n and (j >= n or s[sel[os[i]]] + setup <= e[sel[oe[j]]])
            if is_start:
                a = os[i]
                t = <double>(s[sel[a]] + setup)
                i += 1
            else:
                a = oe[j]
                t = <double>e[sel[a]]
                j += 1
            if by_weight:
                d = <double>weight[sel[a]]
                if spread:
                    span = e[sel[a]] - s[sel[a]] - setup
                    d = d / <double>(span if span > 1 else 1)
            else:
                d = rate[a]
            if not is_start:
                d = -d
            if k == 0:
                while m < n_edges and edges[m] < t:  # left of the first step: 0
                    ge[m] = 0.0
                    m += 1
                r = d
            else:
                g_prev = g
                if k == 1:
                    g = r * (t - t_prev)
                else:
                    g = g + r * (t - t_prev)
                r = r + d
                # edges in [t_prev, t): interpolate between the previous step and this one, as np.interp does
                while m < n_edges and edges[m] < t:
                    x = edges[m]
                    if x == t_prev:
                        ge[m] = g_prev
                    else:
                        slope = (g - g_prev) / (t - t_prev)
                        ge[m] = slope * (x - t_prev) + g_prev
                    m += 1
            t_prev = t
        while m < n_edges:  # at or right of the last step
            ge[m] = g
            m += 1
    return np.diff(ge_arr)


def peak_bytes(const int64_t[:] nbytes, const int64_t[:] start, const int64_t[:] end) -> int:
    """The peak over time of the bytes of the intervals [start, end) holding `nbytes` each (0 if none).

    A release at t comes before a fill at t: the count is taken once every step at t is applied."""
    cdef Py_ssize_t n = start.shape[0]
    if n == 0:
        return 0
    cdef const int64_t[:] os = np.argsort(np.asarray(start), kind="stable")
    cdef const int64_t[:] oe = np.argsort(np.asarray(end), kind="stable")
    cdef Py_ssize_t i = 0, j = 0
    cdef int64_t t, held = 0, peak = 0
    with nogil:  # (C arrays only)
        while i < n or j < n:
            if j >= n or (i < n and start[os[i]] < end[oe[j]]):
                t = start[os[i]]
            else:
                t = end[oe[j]]
            while j < n and end[oe[j]] == t:
                held -= nbytes[oe[j]]
                j += 1
            while i < n and start[os[i]] == t:
                held += nbytes[os[i]]
                i += 1
            if held > peak:
                peak = held
    return peak


cdef enum How:  # what an operation waited for last: REASON_NAMES' codes 0..2, then these
    ENGINE = 3
    DDR = 4
    PORT = 5
    NOTHING = 6

cdef int64_t[3] REASON_PRIO = [0, 2, 3]  # on equal end times: data before slot before war before the engine (4)
cdef int SLOT = 1  # REASON_NAMES.index("slot")


cdef class CriticalChain:
    """Walks back from an operation along what it waited for last (see result.py's stall attribution)."""

    cdef object g
    cdef const int64_t[:] starts, ends, dep_ptr, dep_val, prev_on_engine, port_pos
    cdef const int8_t[:] ddr_check, port, kind
    cdef list port_order  # per port: its transfers in the order it carried them (int64 arrays)
    cdef Py_ssize_t n
    cdef dict labels  # (kind, tensor) -> stall label; for a STAGE or WRITEBACK (kind, engine) -> label

    def __init__(self, g, timeline) -> None:
        self.g = g
        self.n = g.n
        self.starts, self.ends = timeline.starts, timeline.ends
        self.dep_ptr = np.asarray(g.dep_ptr, dtype=np.int64)
        self.dep_val = np.asarray(g.dep_val, dtype=np.int64)
        self.prev_on_engine = np.asarray(g.prev_on_engine, dtype=np.int64)
        self.ddr_check = np.asarray(g.ddr_check, dtype=np.int8)
        self.port = np.asarray(g.port, dtype=np.int8)
        self.kind = np.asarray(g.kind, dtype=np.int8)
        self.port_order = [np.asarray(order, dtype=np.int64) for order in timeline.port_order]
        pos = np.full(g.n, -1, np.int64)  # per transfer, its position in its port's order
        for order in self.port_order:
            pos[order] = np.arange(len(order))
        self.port_pos = pos
        self.labels = {}

    cdef tuple ddr_binding(self, int64_t op, int64_t ready):
        """The overlapping earlier transfer with the latest end after `ready`, if any."""
        g = self.g
        cdef int64_t best = -1, best_end = ready, j
        cdef Py_ssize_t k
        for ops in g.ddr_lists(op):
            k = int(np.searchsorted(ops, op)) - 1
            while k >= 0:
                j = int(ops[k])
                if self.ends[j] <= best_end:
                    break
                if g.region.overlaps(j, op):  # (the region column's test, in C)
                    best, best_end = j, self.ends[j]
                    break
                k -= 1
        return best, best_end

    cdef int64_t binding(self, int64_t op, int* how):
        """What op waited for last (-1 if nothing), and how (a How or REASON_NAMES code, into `how`)."""
        cdef int64_t best_j = self.prev_on_engine[op], best_end, best_pr = 4, e, pr, d, j, ready, i
        cdef int best_how = ENGINE
        cdef Py_ssize_t k
        best_end = self.ends[best_j] if best_j >= 0 else -1
        for i in range(self.dep_ptr[op], self.dep_ptr[op + 1]):
            d = self.dep_val[i]
            j = d >> 2
            e = self.ends[j]
            if e >= best_end:
                pr = REASON_PRIO[d & 3]
                if e > best_end or pr < best_pr:
                    best_j, best_end, best_pr, best_how = j, e, pr, <int>(d & 3)
        ready = best_end if best_end > 0 else 0
        if self.ddr_check[op]:
            j, e = self.ddr_binding(op, ready)
            if j >= 0:
                best_j, best_end, best_how, ready = j, e, DDR, e
        if self.port[op] >= 0 and self.starts[op] > ready:
            k = self.port_pos[op]
            if k > 0:
                how[0] = PORT
                return self.port_order[self.port[op]][k - 1]
        how[0] = best_how
        return best_j

    cdef str label(self, int64_t op):
        """The stall cause of a stretch of time spent in `op` (when no earlier link set the mode)."""
        cdef int k = self.kind[op]
        if k == LOAD_OP or k == STORE_OP:
            key = (k, int(self.g.tensor[op]))
            text = self.labels.get(key)
            if text is None:
                text = f"{'load' if k == LOAD_OP else 'store'}:{self.g.tensor_names[key[1]]}"
                self.labels[key] = text
            return text
        if k == STAGE_OP or k == WRITEBACK_OP:  # named by the level: its engines are "dma-<level>[-wb]"
            key = (k, int(self.g.engine[op]))
            text = self.labels.get(key)
            if text is None:
                level = self.g.engine_names[key[1]][4:].removesuffix("-wb")
                text = f"{'stage' if k == STAGE_OP else 'writeback'}:{level}"
                self.labels[key] = text
            return text
        if k == VEC_OP:
            return "vector"
        if k == TC_OP:
            return "tensorcore"
        return "other"

    cdef void blame_gap(self, int64_t op, int64_t prev_end, dict stalls):
        """Add to `stalls` the TensorCore idle gap [prev_end, start of op), walking back from op."""
        cdef int64_t cur = op, hi = self.starts[op], q, e_q, s_q, lo, limit = self.n + 1, steps = 0
        cdef int how
        mode = None
        while hi > prev_end:
            q = self.binding(cur, &how)
            steps += 1
            if q < 0 or steps > limit:
                stalls["other"] = stalls.get("other", 0) + hi - prev_end
                break
            if mode is None:
                if how == SLOT:
                    mode = "slot"
                elif how == PORT and self.kind[q] == STORE_OP:
                    mode = "store-port"
            e_q = self.ends[q]
            if e_q < hi:  # not expected: the binding predecessor ends when cur starts
                low = e_q if e_q > prev_end else prev_end
                stalls["other"] = stalls.get("other", 0) + hi - low
                hi = low
            s_q = self.starts[q]
            lo = s_q if s_q > prev_end else prev_end
            if hi > lo:
                key = mode if mode is not None else self.label(q)
                stalls[key] = stalls.get(key, 0) + hi - lo
            if s_q < hi:
                hi = s_q
            cur = q

    def attribute(self, queue, int64_t cycles, int64_t after = 0) -> dict:
        """Blame every idle cycle before each operation of `queue` (the TensorCore's, in order; the first one's gap
        counted from cycle `after`, 0 for a whole run) and after the last one ("drain") on a cause; {} for an empty
        queue."""
        cdef const int64_t[:] ops = np.asarray(queue, dtype=np.int64)
        cdef dict stalls = {}
        cdef int64_t prev_end = after, op
        cdef Py_ssize_t i
        if ops.shape[0] == 0:
            return stalls
        for i in range(ops.shape[0]):
            op = ops[i]
            if self.starts[op] > prev_end:
                self.blame_gap(op, prev_end, stalls)
            prev_end = self.ends[op]
        if cycles > prev_end:
            stalls["drain"] = stalls.get("drain", 0) + cycles - prev_end
        return stalls
