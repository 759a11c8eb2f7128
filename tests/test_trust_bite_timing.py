"""The timing model, tests that bite (issue 26, part 5): loads (slides that move bytes included) dealt to the load
channels round-robin, a stage that meets no write-back waiting for the write before them, and the simpy reference
(its own path from the trace) equal to the fast scheduler there."""

from __future__ import annotations

import dataclasses

import pytest

from dsasim import preset
from dsasim.timing import TimingError, simulate
from dsasim.timing.model import lower
from dsasim.timing.reference import build_timeline_reference
from dsasim.traced.trace import (ALLOC_IN, COMPUTE, ENTER, EXIT, FREE, LOAD, OPEN, SLIDE, STAGE, STORE,
                                 WRITEBACK)
from tests.test_slide import _sweep_trace
from tests.test_timing_levels import A, L1, W, leveled_trace

BLOG = preset("blog")


def _hw(channels: int, shared: bool):
    return dataclasses.replace(BLOG, dma_setup_cycles=0, dram_bytes_per_cycle=1.0, dram_shared_load_store=shared,
                               dma_load_channels=channels)


@pytest.mark.parametrize("shared", [False, True])
def test_loads_and_slides_are_dealt_round_robin(shared):
    """test_slide's sweep: loads weight (54 B), image rows 0-2 (24 B), then two slides (16 B, 8 B), in that
    program order: with 2 channels, load j goes to channel j mod 2 (a slide that moves bytes takes its turn):
    dma-load0, dma-load1, dma-load0, dma-load1. One DDR port for the loads still carries one at a time, so the
    times are those of one channel (test_slide: weight [0,54], image [54,78], slides [150,166] and [238,246],
    342 cycles in all on split ports); on a shared port the first store [150,174] goes before slide 1 (ready at
    the same cycle 150, earlier in program order), which then runs [174,190]."""
    _, trace = _sweep_trace()
    fast, ref = simulate(trace, _hw(2, shared)), simulate(trace, _hw(2, shared), reference=True)
    loads = [(o.engine, o.start, o.end) for o in fast.records() if o.kind == "load"]
    if not shared:
        assert loads == [("dma-load0", 0, 54), ("dma-load1", 54, 78), ("dma-load0", 150, 166),
                         ("dma-load1", 238, 246)]
        assert fast.cycles == 342
    else:
        assert [e for e, _, _ in loads] == ["dma-load0", "dma-load1", "dma-load0", "dma-load1"]
        assert loads[2][1:] == (174, 190)
    assert fast.op_start.tolist() == ref.op_start.tolist() and fast.op_end.tolist() == ref.op_end.tolist()
    assert [o.engine for o in fast.records()] == [o.engine for o in ref.records()]


def test_the_reference_reads_the_trace_not_the_lowered_graph():
    """The reference finds its operations in the trace itself; the graph only numbers them. A graph whose
    operations are other events than the trace's (here: the trace lost its SLIDEs) is a TimingError, never a
    silently mismatched timeline."""
    _, trace = _sweep_trace()
    _, other = _sweep_trace()
    hw = _hw(1, False)
    graph = lower(trace, hw)
    assert build_timeline_reference(other, hw, graph).cycles == 342  # the same events: the same operations
    other.events = [e for e in other.events if e[0] != SLIDE]
    with pytest.raises(TimingError, match="disagree on which trace events are operations"):
        build_timeline_reference(other, hw, graph)


def test_a_stage_meeting_no_write_back_waits_for_the_write_before_them():
    """test_timing_levels' leveled matmul, with o LOADed into the SRAM (192 B: 64 + 192/32 = 70 cycles, after a
    [0,72] and w [72,160] on the port: [160,230]) and two L1acc buffers: the top half o[0:4] (96 B) opened,
    computed (8 cycles, after the stages of w [160,170] and a [72,80]: [170,178]) and written back (4 + ceil(96/64)
    = 6 cycles, after the compute and after o's last write, the LOAD: [230,236]); then the bottom half o[4:8]
    STAGEd from the SRAM buffer. It meets no write-back, so it waits for the write before them, the LOAD (230):
    the level's port takes the write-back first (program order), the stage runs [236,242]. The STORE of o waits
    for the write-back and the earlier LOAD of o: [236,306]."""
    whole, top, bottom = ((0, 8), (0, 24)), ((0, 4), (0, 24)), ((4, 8), (0, 24))  # regions of o
    events = [
        (ENTER, 0, 0),
        (ALLOC_IN, 0, 0, A, 256, 0, 256, 0), (LOAD, 0, 0, A, 256, False),
        (ALLOC_IN, 1, 1, W, 768, 256, 768, 0), (LOAD, 1, 1, W, 768, False),
        (ALLOC_IN, 2, 2, whole, 192, 1024, 192, 0), (LOAD, 2, 2, whole, 192, False),
        (ENTER, 1, 0), (ALLOC_IN, 3, 1, W, 768, 0, 768, 1), (STAGE, 3, 1, W, 768, 1),
        (ENTER, 2, 0), (ALLOC_IN, 4, 0, A, 256, 0, 256, 2), (STAGE, 4, 0, A, 256, 0),
        (ENTER, 3, 0), (ALLOC_IN, 5, 2, top, 96, 0, 96, 3), (OPEN, 5, 2, top, False),
        (COMPUTE, "tensorcore", "matmul", 5, (4, 3), 3072, 8, 3072),
        (WRITEBACK, 5, 2, top, 96, 2),
        (ALLOC_IN, 6, 2, bottom, 96, 96, 96, 3), (STAGE, 6, 2, bottom, 96, 2),
        (FREE, 6, 96), (FREE, 5, 96), (EXIT, 3, 0), (FREE, 4, 256), (EXIT, 2, 0), (FREE, 3, 768), (EXIT, 1, 0),
        (STORE, 2, 2, whole, 192),
        (FREE, 2, 192), (FREE, 1, 768), (FREE, 0, 256), (EXIT, 0, 0),
    ]
    trace = leveled_trace(events)
    fast, ref = simulate(trace, L1), simulate(trace, L1, reference=True)
    ops = [(o.kind, o.start, o.end) for o in fast.records() if o.kind != "open"]
    assert ops == [("load", 0, 72), ("load", 72, 160), ("load", 160, 230), ("stage", 160, 170), ("stage", 72, 80),
                   ("tensorcore", 170, 178), ("writeback", 230, 236), ("stage", 236, 242), ("store", 236, 306)]
    assert fast.op_start.tolist() == ref.op_start.tolist() and fast.op_end.tolist() == ref.op_end.tolist()
