"""Memory levels, tests that bite (issue 26, part 5): a stage's bytes in words of `word_bytes`, and a hit in a
level below the target scope's level counted in that level. Expected values are derived by hand in comments."""

from __future__ import annotations

import dataclasses

from dsasim import GlobalHierarchy, Session, bind_tensors, preset
from dsasim.traced import trace as trace_module
from tests.test_levels import K, N, matmul_body, matmul_workload

L1_WORD2 = dataclasses.replace(preset("blog-l1"), word_bytes=2)  # every byte figure is twice the element count


def _figures(s: Session, level: str) -> tuple[int, ...]:
    t = s.counters.levels[level]
    return t.loaded_bytes, t.stored_bytes, t.loads, t.stores, t.hits, t.opens, t.peak_bytes


def test_staged_and_written_back_bytes_count_word_bytes():
    """test_levels' matmul (a 32x40, b 40x48, c 32x48) with 2-byte words. L1w: 2 column tiles of 40x24 = 960
    elements -> 2 x 1,920 B; L1i: 8 tiles of 8x40 = 320 elements -> 8 x 640 B; L1acc: 8 tiles of 8x24 = 192
    elements, zero-filled, written back once each -> 8 x 384 B; the peaks are one tile of each."""
    s = Session(L1_WORD2, numeric=False)
    matmul_body()(s, **bind_tensors(s, matmul_workload(), None))
    s.finish()
    assert _figures(s, "L1w") == (2 * 1920, 0, 2, 0, 0, 0, 1920)
    assert _figures(s, "L1i") == (8 * 640, 0, 8, 0, 0, 0, 640)
    assert _figures(s, "L1acc") == (0, 8 * 384, 0, 8, 0, 8, 384)
    # and the trace's STAGE and WRITEBACK events carry the same bytes (elements x 2)
    for event in s.trace.events:
        if event[0] in (trace_module.STAGE, trace_module.WRITEBACK):
            region = event[3]
            elements = 1
            for start, stop in region:
                elements *= stop - start
            assert event[4] == 2 * elements


def test_a_hit_in_a_level_below_the_target_is_counted_there():
    """A weight tile staged into L1w, then read again from inside a nested SRAM scope: the access targets the SRAM
    scope, but the live L1w copy below it is the hit (rule 2, the deepest first): L1w counts 1 stage (40x24 = 960
    B) and 1 hit."""
    s = Session(preset("blog-l1"), numeric=False)
    t = bind_tensors(s, matmul_workload(), None)
    b = t["b"]
    with GlobalHierarchy(s, "sram"):
        b[0:K, 0:N]
        with GlobalHierarchy(s, "w", level="L1w"):
            b[0:K, 0:24]
            with GlobalHierarchy(s, "inner"):
                b[0:K, 0:24]
    # (no finish: c is never written, and only the counters matter here)
    assert _figures(s, "L1w")[:6] == (960, 0, 1, 0, 1, 0)
    # the HITs: the stage's source resolving in the SRAM (buffer 0), then the inner read, on the L1w copy (buffer 1)
    assert [e[1] for e in s.trace.events if e[0] == trace_module.HIT] == [0, 1]
