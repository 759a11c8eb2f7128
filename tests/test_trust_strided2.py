"""Trust, round two (strided2): strided DMA boxes through the trace, the memory model, validation and timing.

A strided box (every step-th row or column, e.g. what a 1x1 stride-2 conv reads) is a region whose stepped
dimensions are (start, stop, step) triples; `x[c0:c1, 0:56:2, 0:56:2]` loads only the elements it names. Every
figure below is derived by hand in its comment.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from dsasim import GlobalHierarchy, Session, preset
from dsasim.errors import RegionError, ReuseError
from dsasim.hardware import KIB, MemoryLevel
from dsasim.timing import simulate
from dsasim.timing.errors import TraceError
from dsasim.timing.model import lower
from dsasim.timing.validate import validate_trace
from dsasim.traced.trace import ALLOC, EXIT, ENTER, FREE, HIT, LOAD, OPEN, STORE, ScopeInfo, TensorInfo, Trace

HW = preset("blog")  # 1-byte words
# layout costs on: 32 B a cycle, 100 setup cycles, 4-byte bursts, 10 cycles a run (descriptor)
HW_RUNS = dataclasses.replace(HW, name="runs", dram_bytes_per_cycle=32.0, dma_setup_cycles=100, dma_burst_bytes=4,
                              dma_run_cycles=10)
X = np.arange(1 * 8 * 6 * 6, dtype=np.float32).reshape(1, 8, 6, 6)


def _session(hw=HW) -> tuple[Session, object]:
    s = Session(hw)
    return s, s.input("x", X)


# -- the memory model ---------------------------------------------------------------------------------------------

def test_a_strided_slice_loads_only_the_elements_it_names():
    """x[0:1, 0:8, 0:6:2, 0:6:2] of a (1, 8, 6, 6) input: rows 0, 2, 4 and columns 0, 2, 4 of 8 channels, 8 x 3 x
    3 = 72 elements = 72 B (not the dense box's 8 x 5 x 5 = 200); its data is numpy's x[:, :, ::2, ::2]."""
    s, x = _session()
    with GlobalHierarchy(s):
        t = x[0:1, 0:8, 0:6:2, 0:6:2]
        assert t.region == ((0, 1), (0, 8), (0, 5, 2), (0, 5, 2))  # stop just after the last index, 4
        assert t.shape == (1, 8, 3, 3)
        np.testing.assert_array_equal(t.data, X[:, :, ::2, ::2])
    assert (s.counters.loaded_bytes, s.counters.loads, s.counters.peak_sram_bytes) == (72, 1, 72)
    events = list(s.finish().typed())
    assert [(e.kind, e.region, e.nbytes) for e in events if e.kind in (ALLOC, LOAD)] == [
        (ALLOC, ((0, 1), (0, 8), (0, 5, 2), (0, 5, 2)), 72), (LOAD, ((0, 1), (0, 8), (0, 5, 2), (0, 5, 2)), 72)]


def test_a_strided_box_hits_a_buffer_holding_its_indices_and_nothing_else():
    """After the stride-2 box of rows/columns 0, 2, 4: rows 2, 4 (same phase) hit it; a dense box of rows 0:3 and
    the odd rows 1, 3 are not in it and load (8 x 3 x 6 = 144 B and 8 x 2 x 3 = 48 B)."""
    s, x = _session()
    with GlobalHierarchy(s):
        t = x[0:1, 0:8, 0:6:2, 0:6:2]
        sub = x[0:1, 0:8, 2:6:2, 0:6:2]
        assert sub.buffer is t.buffer
        np.testing.assert_array_equal(sub.data, X[:, :, 2:6:2, 0:6:2])
        dense = x[0:1, 0:8, 0:3, 0:6]  # 8 x 3 x 6 = 144 B: a dense request never takes a strided buffer
        assert dense.buffer is not t.buffer
        odd = x[0:1, 0:8, 1:5:2, 0:6:2]  # rows 1, 3: the other phase, 8 x 2 x 3 = 48 B
        assert odd.buffer is not t.buffer
        np.testing.assert_array_equal(odd.data, X[:, :, 1:5:2, 0:6:2])
    assert (s.counters.loaded_bytes, s.counters.hits) == (72 + 144 + 48, 1)
    validate_trace(s.finish(), HW)


def test_a_strided_box_inside_a_dense_buffer_is_a_hit_on_it():
    """A dense box x[:, :, 0:6, 0:6] (8 x 36 = 288 B) holds every index of the stride-2 box: a HIT, no DMA."""
    s, x = _session()
    with GlobalHierarchy(s):
        whole = x[0:1, 0:8, 0:6, 0:6]
        t = x[0:1, 0:8, 1:6:2, 0:6:3]  # rows 1, 3, 5; columns 0, 3
        assert t.buffer is whole.buffer
        np.testing.assert_array_equal(t.data, X[:, :, 1:6:2, 0:6:3])
    assert (s.counters.loaded_bytes, s.counters.hits) == (288, 1)
    validate_trace(s.finish(), HW)


def test_a_stepped_slice_of_one_index_is_a_dense_box():
    """x[0:1, 0:8, 4:6:2, 0:6]: the rows 4 only: a dense (4, 5) box of 8 x 1 x 6 = 48 B."""
    s, x = _session()
    with GlobalHierarchy(s):
        t = x[0:1, 0:8, 4:6:2, 0:6]
        assert t.region == ((0, 1), (0, 8), (4, 5), (0, 6))
    assert s.counters.loaded_bytes == 48


@pytest.mark.parametrize("what", ["writable", "reuse", "negative step", "zero step", "sub-tile", "levels",
                                  "tile step"])
def test_strided_boxes_where_they_are_not_modelled_are_refused(what):
    """A strided box of a written tensor, with the reuse flag, on a multi-level hierarchy, or a stepped index of a
    tile, and a step < 1, are refused with a specific error (never a dense load counted as strided)."""
    hw = HW
    if what == "levels":
        hw = dataclasses.replace(HW, name="deep", inner_levels=(MemoryLevel("L1", 64 * KIB, 64.0,
                                                                            holds=("input", "weight", "output")),))
    s = Session(hw)
    x = s.input("x", X)
    y = s.output("y", (1, 8, 6, 6))
    error = ReuseError if what == "reuse" else RegionError
    with GlobalHierarchy(s):
        with pytest.raises(error) as info:
            if what == "writable":
                y[0:1, 0:8, 0:6:2, 0:6:2]
            elif what == "reuse":
                x[0:1, 0:8, 0:6:2, 0:6:2, True]
            elif what == "negative step":
                x[0:1, 0:8, 0:6:-2, 0:6]
            elif what == "zero step":
                x[0:1, 0:8, 0:6:0, 0:6]
            elif what == "sub-tile":
                x[0:1, 0:8, 0:6:2, 0:6:2][0:1, 0:4]
            elif what == "tile step":
                x[0:1, 0:8, 0:6, 0:6][0:1, 0:8, 0:6:2]
            else:
                x[0:1, 0:8, 0:6:2, 0:6:2]
    assert "Traceback" not in str(info.value)


# -- the trace: validation ------------------------------------------------------------------------------------------

def _trace(events: list[tuple]) -> Trace:
    tr = Trace(1)
    tr.tensors = [TensorInfo("x", (1, 8, 6, 6), False), TensorInfo("y", (1, 8, 6, 6), True)]
    tr.scopes = [ScopeInfo(("s",), 1)]
    tr.events = list(events)
    return tr.freeze()


STRIDED = ((0, 1), (0, 8), (0, 5, 2), (0, 5, 2))  # 8 x 3 x 3 = 72 elements


def _load(region=STRIDED, nbytes=72, hit=None, tensor=0, kind=LOAD):
    fill = (kind, 0, tensor, region, nbytes, False) if kind == LOAD else (kind, 0, tensor, region, False)
    events = [(ENTER, 0, 0), (ALLOC, 0, tensor, region, nbytes, 0, nbytes), fill]
    if hit is not None:
        events.append((HIT, 0, tensor, hit, False))
    return _trace(events + [(FREE, 0, nbytes), (EXIT, 0, 0)])


def test_a_well_formed_strided_trace_validates():
    validate_trace(_load(hit=((0, 1), (0, 4), (2, 5, 2), (0, 1))), HW)  # rows 2, 4 of the held 0, 2, 4


@pytest.mark.parametrize("trace, says", [
    # nbytes of the dense box (8 x 5 x 5 = 200), not of the 72 indices
    (lambda: _load(nbytes=200), "nbytes"),
    # the stop is not just after the last index (0:6:2 holds 0, 2, 4: its stop is 5)
    (lambda: _load(region=((0, 1), (0, 8), (0, 6, 2), (0, 5, 2))), "last index"),
    # a step-1 triple: a dense dimension is a pair
    (lambda: _load(region=((0, 1), (0, 8), (0, 5, 1), (0, 5, 2))), "step >= 2"),
    # the other phase (rows 1, 3) is not held
    (lambda: _load(hit=((0, 1), (0, 8), (1, 4, 2), (0, 5, 2))), "HIT region"),
    # a dense hit on rows 0:3 of a buffer holding rows 0, 2, 4
    (lambda: _load(hit=((0, 1), (0, 8), (0, 3), (0, 5, 2))), "HIT region"),
    # an OPEN of a strided region
    (lambda: _load(tensor=1, kind=OPEN), "strided region"),
])
def test_a_malformed_strided_trace_is_refused(trace, says):
    with pytest.raises(TraceError) as info:
        validate_trace(trace(), HW)
    assert says in str(info.value) and "Traceback" not in str(info.value)


def test_a_store_of_a_strided_region_is_refused():
    """Only ALLOC, LOAD and HIT take strided regions: a STORE moves the dense box its buffer holds."""
    dense = ((0, 1), (0, 8), (0, 6), (0, 6))
    tr = _trace([(ENTER, 0, 0), (ALLOC, 0, 1, dense, 288, 0, 288), (OPEN, 0, 1, dense, False),
                 (STORE, 0, 1, STRIDED, 72), (FREE, 0, 288), (EXIT, 0, 0)])
    with pytest.raises(TraceError, match="strided region"):
        validate_trace(tr, HW)


# -- timing: runs and bursts -----------------------------------------------------------------------------------------

def test_a_strided_load_costs_its_runs_and_bursts():
    """Row-major (1, 8, 6, 6), 1-byte words, on HW_RUNS (setup 100, 10 cycles a run, 4-byte bursts, 32 B/cycle):
    * x[:, 0:8, 0:6:2, 0:6:2]: a stepped innermost axis, every element its own run: 8 x 3 x 3 = 72 runs of 1 B,
      each a 4-byte burst: 288 B; 100 + 72 x 10 + ceil(288 / 32) = 100 + 720 + 9 = 829 cycles.
    * x[:, 0:8, 0:6:2, 0:6]: whole rows of 6 B, rows not adjacent: 8 x 3 = 24 runs of 6 B -> 8 B of bursts each,
      192 B; 100 + 240 + ceil(192 / 32) = 346 cycles.
    The trace and the timing result agree byte for byte with the elements moved (72 + 144 B)."""
    s, x = _session(HW_RUNS)
    with GlobalHierarchy(s):
        x[0:1, 0:8, 0:6:2, 0:6:2]
        x[0:1, 0:8, 0:6:2, 0:6]
    tr = s.finish()
    assert list(lower(tr, HW_RUNS).dur) == [829, 346]
    for reference in (False, True):
        result = simulate(tr, HW_RUNS, reference=reference)
        assert result.cycles == 829 + 346  # one load channel: the two loads in turn
    json.dumps(result.to_json("strided"))  # (the regions it reports serialise)


def _strided_schedule() -> Trace:
    """A dense load, then strided loads and hits of x (rows 0, 2, 4 / 1, 3; columns every 2nd or 3rd)."""
    s, x = _session()
    with GlobalHierarchy(s):
        x[0:1, 0:8, 0:6:2, 0:6:2]
        x[0:1, 0:8, 2:6:2, 0:6:2]
        x[0:1, 0:4, 1:5:2, 0:6:3]
        x[0:1, 0:8, 0:6, 0:6]
    return s.finish()


def test_the_columnar_log_keeps_strided_regions_as_the_list_of_tuples_does(monkeypatch):
    """The packed log (steps in the region table) reads back the same tuples as the plain list, also pickled."""
    import pickle

    from dsasim.traced import trace as trace_module
    packed = _strided_schedule()
    monkeypatch.setattr(trace_module, "COLUMNAR", False)
    listed = _strided_schedule()
    assert type(packed.log).__name__ == "EventLog" and type(listed.log).__name__ == "ListLog"
    assert list(packed.events) == list(listed.events)
    assert list(pickle.loads(pickle.dumps(packed)).events) == list(listed.events)
    # the strided LOADs' nbytes: 8 x 3 x 3 = 72 and 4 x 2 x 2 = 16; the dense one 8 x 6 x 6 = 288
    assert [e[4] for e in listed.events if e[0] == LOAD] == [72, 16, 288]


def test_a_strided_load_after_a_store_of_its_tensor_waits_for_it_in_both_schedulers():
    """A hand-built trace: y[:, 0:8, 0:6, 0:6] opened, computed and stored (288 B), then its strided box (72 B)
    loaded: the load waits for the store (DDR RAW, bounding boxes meet). On HW_RUNS: the store is one run of
    288 B: 100 + 10 + 9 = 119 cycles; the load 829 (above), after it: 119 + 829 = 948 cycles in all."""
    dense = ((0, 1), (0, 8), (0, 6), (0, 6))
    tr = _trace([(ENTER, 0, 0), (ALLOC, 0, 1, dense, 288, 0, 288), (OPEN, 0, 1, dense, False),
                 (6, "vector", "add", 0, (), 0, 0, 0), (STORE, 0, 1, dense, 288),
                 (ALLOC, 1, 1, STRIDED, 72, 288, 72), (LOAD, 1, 1, STRIDED, 72, False),
                 (FREE, 1, 72), (FREE, 0, 288), (EXIT, 0, 0)])
    assert [simulate(tr, HW_RUNS, reference=reference).cycles for reference in (False, True)] == [948, 948]
