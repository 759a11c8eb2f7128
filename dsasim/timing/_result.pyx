# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""The per-operation loops of `result.py`, compiled: one pass each, no per-operation temporaries.

Every float is computed with the same operations in the same order as the numpy formulation they replace
(sequential cumulative sums, numpy's interpolation rule), so the figures are bit-identical to it.
"""

from libc.stdint cimport int16_t, int64_t

import numpy as np


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
    cdef Py_ssize_t n = s.shape[0], n_edges = edges.shape[0]
    if n == 0:
        return np.zeros(n_edges - 1)
    cdef const int64_t[:] os = np.argsort(np.asarray(s), kind="stable")
    cdef const int64_t[:] oe = np.argsort(np.asarray(e), kind="stable")
    ge_arr = np.empty(n_edges, dtype=np.float64)
    cdef double[:] ge = ge_arr
    cdef Py_ssize_t i = 0, j = 0, k, m = 0
    cdef double t, d, t_prev = 0.0, g = 0.0, g_prev = 0.0, r = 0.0, x, slope
    for k in range(2 * n):
        if i < n and (j >= n or s[os[i]] <= e[oe[j]]):
            t = <double>s[os[i]]
            d = rate[os[i]]
            i += 1
        else:
            t = <double>e[oe[j]]
            d = -rate[oe[j]]
            j += 1
        if k == 0:
            while m < n_edges and edges[m] < t:  # left of the first step: 0
                ge[m] = 0.0
                m += 1
            r = d
            g = 0.0
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
