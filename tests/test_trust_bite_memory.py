"""The memory model, tests that bite (issue 26, part 5): a reuse-flag reload clears the buffer's stale mark, and a
scratch request of the same size with reuse=True takes the buffer the scope holds. Hand-derived counts."""

from __future__ import annotations

import dataclasses

from dsasim import GlobalHierarchy, Session, preset
from dsasim.traced import trace as trace_module

HW = dataclasses.replace(preset("blog"), word_bytes=2)


def _kinds(s: Session, kind: int) -> list[tuple]:
    return [e for e in s.trace.events if e[0] == kind]


def test_a_reuse_reload_clears_the_stale_mark():
    """Buffer A holds c[0:4] in the outer scope; an inner scope writes c[2:6] (buffer B) and stores it at its exit,
    which makes A's elements 2..3 stale. Reloading A with the reuse flag brings c[0:4] from DDR (it was stored):
    A is current again, so the next c[0:4] is a hit on A. Counts: loads 1 (the reload, 4 elements = 8 B),
    opens 2 (A and B: nothing was stored when they were filled), stores 1 (B; A is never written), hits 1."""
    s = Session(HW, numeric=False)
    c = s.intermediate("c", (8,))
    with GlobalHierarchy(s, "outer"):
        c[0:4]
        with GlobalHierarchy(s, "inner"):
            s.mark_written(c[2:6])
        c[0:4, True]
        c[0:4]
    counters = s.counters
    assert (counters.loads, counters.loaded_bytes, counters.opens, counters.stores, counters.hits) == (1, 8, 2, 1, 1)
    assert [e[1] for e in _kinds(s, trace_module.HIT)] == [0]  # the hit is on A, buffer 0


def test_a_scratch_request_of_the_same_size_reuses_the_held_buffer():
    """scratch t (4x4 = 16 elements, 32 B) twice in one scope, the second with reuse=True: one buffer (one ALLOC),
    opened twice, 32 B of SRAM at the peak; a smaller request (2x4) reuses it too; no reuse flag allocates anew."""
    s = Session(HW, numeric=False)
    with GlobalHierarchy(s, "scope"):
        s.scratch("t", (4, 4))
        s.scratch("t", (4, 4), reuse=True)
        s.scratch("t", (2, 4), reuse=True)
        assert len(_kinds(s, trace_module.ALLOC)) == 1
        assert s.counters.peak_sram_bytes == 32
        s.scratch("t", (4, 4))
        assert len(_kinds(s, trace_module.ALLOC)) == 2
    assert [e[1] for e in _kinds(s, trace_module.OPEN)] == [0, 0, 0, 1]
