"""The timing model, tests that bite (issue 26, part 5): loads (slides that move bytes included) dealt to the load
channels round-robin, and the simpy reference (its own path from the trace) equal to the fast scheduler there."""

from __future__ import annotations

import dataclasses

import pytest

from dsasim import preset
from dsasim.timing import TimingError, simulate
from dsasim.timing.model import lower
from dsasim.timing.reference import build_timeline_reference
from dsasim.traced.trace import SLIDE
from tests.test_slide import _sweep_trace

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
