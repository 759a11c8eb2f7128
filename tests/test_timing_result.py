"""The result stage's compiled helpers (dsasim/timing/_result.pyx) against independent brute-force computations,
and the lazy per-operation regions of SimResult (OpRegions) with and without dropped FREE nodes."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dsasim import preset
from dsasim.timing import simulate
from dsasim.timing._result import buffer_ends, engine_figures, peak_bytes, window_integrals
from dsasim.timing.result import OpRegions
from dsasim.traced.trace import ALLOC, COMPUTE, FREE, LOAD, OPEN, STORE, TensorInfo, Trace

I64 = np.int64


def edges_of(cycles: int, w: int) -> np.ndarray:
    return np.arange(max(1, -(-cycles // w)) + 1, dtype=np.float64) * w


def test_window_integrals_by_hand():
    # one interval [2, 10) at 3 B/cycle, windows of 4 over [0, 12): overlaps 2, 4 and 2 cycles
    got = window_integrals(np.array([2], I64), np.array([10], I64), np.array([3.0]), edges_of(12, 4))
    assert got.tolist() == [6.0, 12.0, 6.0]
    # a second interval [0, 4) at 0.5 B/cycle adds 2 B to the first window only; nothing past the last step
    got = window_integrals(np.array([2, 0], I64), np.array([10, 4], I64), np.array([3.0, 0.5]), edges_of(16, 4))
    assert got.tolist() == [8.0, 12.0, 6.0, 0.0]
    assert window_integrals(np.zeros(0, I64), np.zeros(0, I64), np.zeros(0), edges_of(8, 4)).tolist() == [0.0, 0.0]


def test_window_integrals_equal_brute_force_overlaps():
    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(1, 30))
        s = rng.integers(0, 200, n).astype(I64)
        e = s + rng.integers(0, 60, n)
        rate = rng.random(n) * 100
        w = int(rng.integers(1, 50))
        edges = edges_of(int(e.max()) or 1, w)
        lo, hi = edges[:-1], edges[1:]
        # sum over intervals of rate x (length of [s, e) inside the window)
        want = (rate[:, None] * np.clip(np.minimum(e[:, None], hi) - np.maximum(s[:, None], lo), 0, None)).sum(0)
        np.testing.assert_allclose(window_integrals(s, e, rate, edges), want, rtol=1e-9, atol=1e-6)


def test_peak_bytes_release_before_fill_at_the_same_cycle():
    # [0, 5) holds 10 B, [5, 9) 20 B: the release at 5 comes before the fill, the peak is 20, not 30
    assert peak_bytes(np.array([10, 20], I64), np.array([0, 5], I64), np.array([5, 9], I64)) == 20
    # [0, 6) and [5, 9) overlap on [5, 6): 30
    assert peak_bytes(np.array([10, 20], I64), np.array([0, 5], I64), np.array([6, 9], I64)) == 30
    assert peak_bytes(np.zeros(0, I64), np.zeros(0, I64), np.zeros(0, I64)) == 0


def test_peak_bytes_equals_the_largest_sum_at_any_cycle():
    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(1, 25))
        s = rng.integers(0, 40, n).astype(I64)
        e = s + rng.integers(0, 15, n)
        b = rng.integers(0, 100, n).astype(I64)
        want = max([0] + [int(b[(s <= t) & (t < e)].sum()) for t in range(0, 60)])
        assert peak_bytes(b, s, e) == want


def test_engine_figures_and_buffer_ends_by_hand():
    engine = np.array([0, 1, -1, 0, 1, 1], np.int16)  # -1: an OPEN, on no engine
    starts = np.array([0, 2, 3, 5, 9, 20], I64)
    ends = np.array([4, 9, 3, 6, 12, 21], I64)
    busy, count = engine_figures(engine, starts, ends, 3)
    assert busy == [4 + 1, 7 + 3 + 1, 0] and count == [2, 3, 0]
    # buffer 0: users 1 and 3 (ends 9, 6) -> 9; buffer 1: no user -> the end of the run (30); buffer 2: user 5 -> 21
    ptr, n_users, users = np.array([0, 2, 2], I64), np.array([2, 0, 1], I64), np.array([1, 3, 5], I64)
    assert buffer_ends(ptr, n_users, users, ends, 30).tolist() == [9, 30, 21]


def test_op_regions_reads_through_an_index():
    column = [((0, 1),), None, ((1, 2),), ((2, 3),)]  # None: a FREE node, not reported
    regions = OpRegions(column, np.array([0, 2, 3]))
    assert len(regions) == 3
    assert regions[1] == ((1, 2),) and regions[-1] == ((2, 3),) and regions[0:2] == (((0, 1),), ((1, 2),))
    assert list(regions) == [((0, 1),), ((1, 2),), ((2, 3),)]
    assert regions == (((0, 1),), ((1, 2),), ((2, 3),)) and regions != (((0, 1),),)
    with pytest.raises(IndexError, match="operation 3 out of range: there are 3 operations"):
        regions[3]
    every = OpRegions(column[:1], None)
    assert list(every) == [((0, 1),)] and every[0] == ((0, 1),) and len(every) == 1


def test_records_skip_the_free_node_and_keep_each_operation_region():
    # buffer 2 (a's second row) takes buffer 0's slot while buffer 0 is live: the lowering adds a FREE node
    # for buffer 0's release (before the store, in the middle of the operation ids), which the result drops;
    # every reported operation keeps its own region.
    row0, row1, out = ((0, 1), (0, 8)), ((1, 2), (0, 8)), ((0, 1), (0, 8))
    tr = Trace(1)
    tr.tensors = [TensorInfo("a", (2, 8), False), TensorInfo("o", (1, 8), True)]
    tr.events = [(ALLOC, 0, 0, row0, 8, 0, 8), (LOAD, 0, 0, row0, 8, False),
                 (ALLOC, 1, 1, out, 8, 8, 8), (OPEN, 1, 1, out, False),
                 (COMPUTE, "tensorcore", "conv2d", 1, (0,), 8, 8, 8),
                 (ALLOC, 2, 0, row1, 8, 0, 8), (LOAD, 2, 0, row1, 8, False),
                 (COMPUTE, "tensorcore", "conv2d", 1, (2,), 8, 8, 8),
                 (FREE, 0, 8), (STORE, 1, 1, out, 8), (FREE, 2, 8), (FREE, 1, 8)]
    hw = dataclasses.replace(preset("blog"), name="tiny", dma_setup_cycles=0, dram_bytes_per_cycle=1.0,
                             dram_shared_load_store=True, dma_load_channels=1, tensorcore_in_channels=1,
                             tensorcore_out_channels=1)
    r = simulate(tr.freeze(), hw)
    recs = list(r.records())
    assert [o.kind for o in recs] == ["load", "open", "tensorcore", "load", "tensorcore", "store"]
    assert r.operations == 6 and len(r.op_regions) == 6
    loads = [o for o in recs if o.kind == "load"]
    assert [(o.region, o.buffer, o.start, o.end) for o in loads] == [(row0, 0, 0, 8), (row1, 2, 16, 24)]
    assert recs[-1].region == out and recs[-1].name == "store o[0:1, 0:8]"
    assert r.op_regions[3] == row1 and r.op_regions[-1] == r.op_regions[5] == out and list(r.op_regions)[5] == out


def test_window_integrals_over_fractional_edges_are_not_truncated():
    # the Gantt chart's bins, in cycles, fall between cycles: [1, 3) at rate 2 over edges 0, 1.5, 3 overlaps the
    # windows by 0.5 and 1.5 cycles
    got = window_integrals(np.array([1], I64), np.array([3], I64), np.array([2.0]), np.array([0.0, 1.5, 3.0]))
    assert got.tolist() == [1.0, 3.0]


def test_spread_integrals_select_shift_and_spread_like_brute_force():
    # a transfer's bytes spread evenly over [start + setup, end); only the selected intervals count
    from dsasim.timing._result import spread_integrals
    # by hand: [0, 10) with setup 2 carries 16 B over [2, 10): 2 B/cycle; windows of 4: 4, 8, 4 B
    got = spread_integrals(np.array([0, 1], I64), np.array([10, 3], I64), np.array([16, 99], I64),
                           np.array([0], I64), 2, True, edges_of(12, 4))
    assert got.tolist() == [4.0, 8.0, 4.0]
    rng = np.random.default_rng(11)
    for _ in range(200):
        n = int(rng.integers(1, 30))
        setup, spread = int(rng.integers(0, 10)), bool(rng.integers(0, 2))
        s = rng.integers(0, 200, n).astype(I64)
        e = s + setup + rng.integers(0, 60, n)  # a transfer ends after its setup cycles
        weight = rng.integers(0, 1000, n).astype(I64)
        sel = np.flatnonzero(rng.random(n) < 0.5).astype(I64)
        edges = edges_of(int(e.max()) or 1, int(rng.integers(1, 50)))
        lo, hi = edges[:-1], edges[1:]
        ss, ee = s[sel] + setup, e[sel]
        rate = weight[sel] / np.maximum(ee - ss, 1) if spread else weight[sel] * 1.0
        want = (rate[:, None] * np.clip(np.minimum(ee[:, None], hi) - np.maximum(ss[:, None], lo), 0, None)).sum(0)
        np.testing.assert_allclose(spread_integrals(s, e, weight, sel, setup, spread, edges), want,
                                   rtol=1e-9, atol=1e-6)


def test_a_stall_behind_a_slot_wait_is_blamed_on_the_slot_when_ends_tie():
    # Split ports, 1 B/cycle, no setup. x loads: L1 x[0] [0,8), L1b x[1:3] (16 B) [8,24); conv C1 [8,16) into
    # o[0], stored [16,24) on the store port. L2 loads x[3] into o[0]'s freed bytes: it waits for that slot (the
    # store ends at 24) and for L1b on its engine (also 24); the slot wait wins the tie (data < slot < war <
    # engine). L2 [24,32); C2 [32,40) into o[1] (opened over x[0]'s freed bytes at 16); its store [40,48).
    # TensorCore idle: [0,8) load:x (L1); [16,24) slot; [24,32) load:x (L2); [40,48) drain.
    row = lambda i: ((i, i + 1), (0, 8))  # noqa: E731
    tr = Trace(1)
    tr.tensors = [TensorInfo("x", (4, 8), False), TensorInfo("o", (2, 8), True)]
    tr.events = [(ALLOC, 0, 0, row(0), 8, 0, 8), (LOAD, 0, 0, row(0), 8, False),
                 (ALLOC, 1, 1, row(0), 8, 8, 8), (OPEN, 1, 1, row(0), False),
                 (COMPUTE, "tensorcore", "conv2d", 1, (0,), 8, 8, 8), (STORE, 1, 1, row(0), 8),
                 (ALLOC, 2, 0, ((1, 3), (0, 8)), 16, 16, 16), (LOAD, 2, 0, ((1, 3), (0, 8)), 16, False),
                 (FREE, 0, 8), (FREE, 1, 8),
                 (ALLOC, 3, 0, row(3), 8, 8, 8), (LOAD, 3, 0, row(3), 8, False),
                 (ALLOC, 4, 1, row(1), 8, 0, 8), (OPEN, 4, 1, row(1), False),
                 (COMPUTE, "tensorcore", "conv2d", 4, (3,), 8, 8, 8), (STORE, 4, 1, row(1), 8),
                 (FREE, 2, 16), (FREE, 3, 8), (FREE, 4, 8)]
    hw = dataclasses.replace(preset("blog"), name="tiny", dma_setup_cycles=0, dram_bytes_per_cycle=1.0,
                             dram_shared_load_store=False, dma_load_channels=1, tensorcore_in_channels=1,
                             tensorcore_out_channels=1)
    for reference in (False, True):
        r = simulate(tr.freeze(), hw, reference=reference)
        assert [(o.kind, o.start, o.end) for o in r.records() if o.kind != "open"] == [
            ("load", 0, 8), ("tensorcore", 8, 16), ("store", 16, 24), ("load", 8, 24), ("load", 24, 32),
            ("tensorcore", 32, 40), ("store", 40, 48)]
        assert dict(r.stall_cycles) == {"load:x": 16, "slot": 8, "drain": 8}


def test_ddr_windows_built_in_a_second_thread_equal_the_inline_ones_and_errors_reach_the_caller(monkeypatch):
    # a long trace builds the DDR windows in a thread of their own (result._THREAD_MIN_OPS); forcing each path on a
    # small trace must give the same result, and an error raised in the thread must surface in build_result
    import dsasim.timing.result as result_module
    from dsasim import run_schedule
    from dsasim.kernels.blog_demos import SCHEDULES
    demo2 = next(s for s in SCHEDULES if s.name == "demo2")
    hardware = preset("blog")
    trace = run_schedule(demo2, hardware, numeric=False, record_trace=True).trace
    monkeypatch.setattr(result_module, "_THREAD_MIN_OPS", 1 << 62)
    inline = simulate(trace, hardware)
    monkeypatch.setattr(result_module, "_THREAD_MIN_OPS", 0)
    threaded = simulate(trace, hardware)
    assert inline.ddr_load_bytes.sum() == inline.loaded_bytes  # (the windows hold every loaded byte)
    for field in ("ddr_load_bytes", "ddr_store_bytes", "sram_occupancy", "buffer_start", "buffer_end"):
        assert np.array_equal(getattr(inline, field), getattr(threaded, field)), field
    assert (inline.cycles, inline.peak_sram_bytes) == (threaded.cycles, threaded.peak_sram_bytes)

    def broken(*args):
        raise RuntimeError("planted failure in the DDR windows")

    monkeypatch.setattr(result_module, "_ddr_per_window", broken)
    with pytest.raises(RuntimeError, match="planted failure"):
        simulate(trace, hardware)
