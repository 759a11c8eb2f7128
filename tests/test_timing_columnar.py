"""The timing model reads a Session's trace straight from its columnar log (`TraceChecker.walk`) and a trace of
tuples field by field (`TraceChecker.run`): both paths must build the same operation graph, time it the same, and
reject a bad trace with the same message."""

from __future__ import annotations

import dataclasses
import pickle
import random

import numpy as np
import pytest

from dsasim import GlobalHierarchy, Session, TensorCore, VectorUnit, preset, run_schedule
from dsasim.errors import ScheduleError
from dsasim.timing import TraceError, lower, simulate
from dsasim.traced.segments import Segment
from dsasim.traced.trace import ALLOC, COMPUTE, ENTER, EXIT, FREE, HIT, LOAD, OPEN, SLIDE, STORE, Trace

from test_timing import BAD_TRACES, scoped_trace, tiny

COLUMNS = ("kind", "engine", "dur", "port", "dep_ptr", "dep_val", "nbytes", "tensor", "buffer", "event",
           "prev_on_engine", "ddr_check", "buffer_tensor", "buffer_nbytes", "buffer_first_op", "buffer_final_ptr",
           "buffer_final_n", "buffer_final_ops")
FIGURES = ("n", "n_ports", "reserved_sram_bytes", "macs", "tensorcore_macs", "padded_macs", "loaded_bytes",
           "stored_bytes")


def as_tuples(trace: Trace) -> Trace:
    """The same trace with its events as a list of tuples (the path of hand-built traces)."""
    copy = Trace(trace.word_bytes)
    copy.tensors, copy.scopes = trace.tensors, trace.scopes
    copy.events = list(trace.events)
    copy.hand_accesses = trace.compute_accesses()  # (the operand accesses the log keeps beside the tuples)
    return copy


def as_columnar(trace: Trace) -> Trace:
    """A trace of tuples replayed into a columnar log through its append methods."""
    copy = Trace(trace.word_bytes)
    copy.tensors, copy.scopes = trace.tensors, trace.scopes
    log = copy.log
    for t in trace.tensors:
        log.add_tensor(len(t.shape))
    append = {ENTER: log.enter, EXIT: log.exit, ALLOC: log.alloc, LOAD: log.load, OPEN: log.open, HIT: log.hit,
              STORE: log.store, FREE: log.free, SLIDE: log.slide}
    for event in trace.events:
        if event[0] == COMPUTE:
            log.compute(*event[1:])
        else:
            append[event[0]](*event[1:])
    return copy


def assert_same_graph(trace: Trace, hw) -> None:
    columnar, tuples = lower(trace, hw), lower(as_tuples(trace), hw)
    for name in COLUMNS:
        assert np.array_equal(getattr(columnar, name), getattr(tuples, name)), name
    for name in FIGURES:
        assert getattr(columnar, name) == getattr(tuples, name), name
    assert list(columnar.region) == list(tuples.region)
    events = list(trace.events)
    for op, (kind, event) in enumerate(zip(columnar.kind.tolist(), columnar.event.tolist())):
        if kind in (0, 1, 4):  # a transfer's or an OPEN's region is its event's
            assert columnar.region[op] == events[event][3]
    a, b = simulate(trace, hw), simulate(as_tuples(trace), hw)
    assert a.to_json("x") == b.to_json("x") and list(a.records()) == list(b.records())


def random_trace(seed: int):
    """A random finished schedule on a random small machine (scopes of 1-3 ways, reuse flags, both units, writes
    back), or None when the schedule ended in an error."""
    rng = random.Random(seed)
    hw = dataclasses.replace(tiny(bw=rng.choice([1.0, 2.5, 8.0]), setup=rng.randint(0, 3),
                                  shared=rng.random() < 0.5, channels=rng.randint(1, 3)), sram_bytes=1 << 16)
    s = Session(hw, numeric=False, scope_ways={"d0": rng.randint(1, 3), "d1": rng.randint(1, 3)})
    # an intermediate need not be written whole; a nested scope is entered at least once
    x, w, o = s.input("x", (6, 9)), s.input("w", (6, 9)), s.intermediate("o", (6, 9))
    vec = VectorUnit(s)

    def key():
        a, b = rng.randrange(6), rng.randrange(9)
        return (Segment(a, rng.randint(a + 1, 6)), Segment(b, rng.randint(b + 1, 9)))

    def body(depth: int) -> None:
        with GlobalHierarchy(s, f"d{depth}"):
            for _ in range(rng.randint(1, 6)):
                if depth < 3 and rng.random() < 0.3:
                    body(depth + 1)
                    continue
                k = key()
                if rng.random() < 0.5:
                    o[k].assign(vec.add(x[k], w[k]) if rng.random() < 0.5 else vec.copy(x[k]))
                else:
                    arr = rng.choice([x, o])
                    tile = arr[k, rng.random() < 0.3]
                    if arr is o and rng.random() < 0.5:
                        tile.assign(vec.copy(tile))
    try:
        with GlobalHierarchy(s, "d0"), GlobalHierarchy(s, "d1"):
            o[0, 0].assign(vec.copy(x[0, 0]))
        body(0)
        return s.finish(), hw
    except ScheduleError:
        return None


def test_both_read_paths_build_the_same_graph_on_random_schedules():
    compared = 0
    for seed in range(3000):
        made = random_trace(seed)
        if made is not None:
            assert_same_graph(*made)
            compared += 1
    assert compared >= 1000


def test_both_read_paths_build_the_same_graph_on_every_demo():
    from dsasim.kernels.blog_demos import SCHEDULES
    from test_blog_demos import reduced
    for schedule in [reduced(s.name) for s in SCHEDULES]:
        hw = preset(schedule.hardware)
        result = run_schedule(schedule, hw, numeric=False)
        if result.trace is not None:
            assert_same_graph(result.trace, hw)
            copy = pickle.loads(pickle.dumps(result.trace))  # (as a worker process sends it)
            assert simulate(copy, hw).to_json("x") == simulate(result.trace, hw).to_json("x")


def test_a_tensorcore_schedule_is_the_same_on_both_paths():
    hw = dataclasses.replace(preset("blog"), dma_setup_cycles=16)
    s = Session(hw, numeric=False, scope_ways={"tile": 2})
    x, w_, y = s.input("x", (1, 16, 1, 64)), s.input("w", (24, 16, 1, 1)), s.output("y", (1, 24, 1, 64))
    tc = TensorCore(s)
    with GlobalHierarchy(s, "weights"):
        w = w_[:, :, :, :]
        for j in range(8):
            with GlobalHierarchy(s, "tile"):
                cols = Segment(8 * j, 8 * j + 8)
                yt = y[:, :, :, cols]
                yt += tc.conv2d(x[:, :, :, cols], w)
    assert_same_graph(s.finish(), hw)


@pytest.mark.parametrize("case", list(BAD_TRACES), ids=list(BAD_TRACES))
def test_a_bad_columnar_trace_gets_the_message_of_the_same_tuples(case):
    events, _, fragment = BAD_TRACES[case]
    tuples = scoped_trace(events)
    try:
        columnar = as_columnar(tuples)
    except (TypeError, ValueError, OverflowError, IndexError, KeyError):
        pytest.skip("not expressible in a columnar log (a field of the wrong type)")
    if repr(list(columnar.events)) != repr(list(tuples.events)):
        pytest.skip("not expressible in a columnar log (its byte counts are derived from the region)")
    messages = []
    for trace in (columnar, tuples):
        with pytest.raises(TraceError) as info:
            simulate(trace, tiny())
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert fragment in messages[0]


def test_the_region_column_reads_back_each_operations_region():
    # tiny trace of test_timing.GOOD: load a[0:1, 0:8], open o, conv into o, store o; a FREE node has no region
    from test_timing import GOOD, R8
    g = lower(scoped_trace(GOOD), tiny())
    assert len(g.region) == g.n == 4
    assert list(g.region) == [R8, R8, R8, R8] and g.region == [R8] * 4
    assert g.region.select(np.array([3, 0])) == [R8, R8]
    assert g.region.overlaps(0, 3)  # a's [0:8] and o's [0:8]: the same element box
    with pytest.raises(IndexError, match="operation 4 out of range 0..3"):
        g.region[4]
    events = [(ALLOC, 0, 0, R8, 8, 0, 8), (LOAD, 0, 0, R8, 8, False),  # buffer 0 takes bytes 0:8
              (ALLOC, 1, 0, R8, 8, 0, 8), (LOAD, 1, 0, R8, 8, False),  # buffer 1 too, while 0 is live
              (FREE, 0, 8), (FREE, 1, 8)]
    trace = scoped_trace([(ENTER, 0, 0)] + events + [(EXIT, 0, 0)])
    g = lower(trace, tiny())
    free_nodes = [op for op in range(g.n) if g.kind[op] == 5]
    assert free_nodes and all(g.region[op] is None for op in free_nodes)
