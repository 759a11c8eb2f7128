"""Timing simulation of a trace: engines, DDR ports, dependencies, stalls, timelines.

`simulate(trace, hardware)` lowers the trace into an operation graph (`model.pyx`: engines, durations,
dependencies; each event checked first by `validate.pyx`; memory levels below the SRAM get a DMA engine each,
`dma-<level>`, for their STAGE and WRITEBACK events), times it exactly into a `Timeline` (`engine.pyx`, a
fast discrete-event list scheduler; `reference=True` uses `reference.build_timeline_reference`, a simpy model
that reads the trace itself, with its own statement of the rules, and is tested equal), and derives a `SimResult` (`result.py`). The trace
is the only input. The .pyx modules are compiled by Cython at `pip install -e .` (setup.py) and are the only
implementation of their rules.
"""

from __future__ import annotations


from dsasim.hardware import Accelerator
from dsasim.util import gc_paused
from dsasim.traced.trace import Trace
from dsasim.timing.engine import Timeline, build_timeline
from dsasim.timing.errors import DeadlockError, TimingError, TraceError
from dsasim.timing.model import OpGraph, lower
from dsasim.timing.result import LevelFigures, OpRecord, SimResult, build_result
from dsasim.timing.validate import validate_trace

__all__ = ["DeadlockError", "LevelFigures", "OpGraph", "OpRecord", "SimResult", "Timeline", "TimingError", "TraceError",
           "build_timeline", "lower", "simulate", "validate_trace"]


def simulate(trace: Trace, hardware: Accelerator, window_cycles: int | None = None,
             reference: bool = False, power: bool = True) -> SimResult:
    """Time a trace on `hardware`; `window_cycles` sets the timeline resolution (default: about 256 windows).

    reference=True times the trace with the simpy reference, which lowers the trace on its own (same result,
    much slower).
    Raises TraceError (a TimingError) for a malformed trace or one recorded with other word bytes, naming the first
    bad event, before any scheduling (so the same error with either scheduler); DeadlockError when some operation
    can never run. power=False leaves the power over time out (its fields None): callers that only want the
    cycles (a search confirming candidates, the demo table) skip its cost, up to the timing's own on long traces.
    """
    if not isinstance(hardware, Accelerator):
        raise TypeError(f"simulate needs an Accelerator, got {type(hardware).__name__}")
    if window_cycles is not None and (isinstance(window_cycles, bool) or not isinstance(window_cycles, int)
                                      or window_cycles < 1):
        raise ValueError(f"window_cycles must be a positive integer or None, got {window_cycles!r}")
    with gc_paused():  # the graph is large and acyclic: cyclic GC passes over it only cost time
        graph = lower(trace, hardware)
        if reference:
            from dsasim.timing.reference import build_timeline_reference
            timeline = build_timeline_reference(trace, hardware, graph)
        else:
            timeline = build_timeline(graph)
        return build_result(graph, timeline, hardware, window_cycles, trace if power else None)
