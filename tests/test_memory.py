"""The memory model, one exact rule at a time, on tiny tensors and a tiny accelerator.

Every expected number is derived by hand in the comments next to it (elements x word_bytes); none is pasted
from a run. Event tuples follow the layouts in dsasim/traced/trace.py:
  ENTER/EXIT (kind, scope_id, instance); ALLOC (kind, buffer, tensor, region, nbytes, address, charged);
  LOAD (kind, buffer, tensor, region, nbytes, reuse); OPEN/HIT (kind, buffer, tensor, region, reuse);
  COMPUTE (kind, unit, op, out_buffer, in_buffers, macs, cycles, padded_macs);
  STORE (kind, buffer, tensor, region, nbytes); FREE (kind, buffer, charged).
"""

from __future__ import annotations

import dataclasses
from itertools import starmap

import numpy as np
import pytest
import torch.nn.functional as F

from dsasim import (CoherenceError, GlobalHierarchy, ReadOnlyError, RegionError, ReuseError, Schedule, Segment, Segments,
                    Session, SramOverflowError, StaleTileError, TensorCore, UnfinishedError, VectorUnit, Workload,
                    preset, run_schedule)
from dsasim.errors import SessionStateError
from dsasim.traced.trace import ALLOC, COMPUTE, ENTER, EXIT, FREE, HIT, LOAD, OPEN, STORE

from helpers import assert_schedule_matches_torch


def tiny(sram_bytes: int = 1024, word_bytes: int = 1):
    """The blog machine shrunk to a few bytes of SRAM."""
    return dataclasses.replace(preset("blog"), sram_bytes=sram_bytes, word_bytes=word_bytes)


def of_kind(session: Session, kind: int) -> list[tuple]:
    return [e for e in session.trace.events if e[0] == kind]


def kinds(session: Session) -> list[int]:
    return [e[0] for e in session.trace.events]


def arange(*shape: int) -> np.ndarray:
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) + 1


# -- rule 7: program order, one exact trace ----------------------------------------------------------------------
def test_exact_trace_in_program_order():
    s = Session(tiny(word_bytes=4))
    x = s.input("x", arange(2, 3))          # tensor 0
    o = s.output("o", (2, 3))               # tensor 1
    vec = VectorUnit(s)                     # 32 lanes
    full = ((0, 2), (0, 3))                 # 6 elements = 24 B at 4 B/word
    with GlobalHierarchy(s, "top"):         # scope 0, instance 0
        t = x[:, :]                         # buffer 0 at address 0: ALLOC + LOAD 24 B
        u = o[:, :]                         # buffer 1 at address 24, above it: ALLOC + OPEN (zeros, no DMA)
        u.assign(vec.copy(t))               # 6 elements / 32 lanes -> 1 cycle, 0 MACs
    # exit: buffers in reverse allocation order; the modified output is stored right before its FREE
    trace = s.finish()
    assert list(trace.events) == [
        (ENTER, 0, 0),
        (ALLOC, 0, 0, full, 24, 0, 24),
        (LOAD, 0, 0, full, 24, False),
        (ALLOC, 1, 1, full, 24, 24, 24),
        (OPEN, 1, 1, full, False),
        (COMPUTE, "vector", "copy", 1, (0,), 0, 1, 0),
        (STORE, 1, 1, full, 24),
        (FREE, 1, 24),
        (FREE, 0, 24),
        (EXIT, 0, 0),
    ]
    np.testing.assert_array_equal(o.data, arange(2, 3))
    c = s.counters
    assert (c.loaded_bytes, c.stored_bytes, c.rmw_bytes, c.loads, c.stores, c.opens, c.hits) == (24, 24, 0, 1, 1, 1, 0)


# -- rule 3: hits ---------------------------------------------------------------------------------------------------
def test_hit_on_superset_in_enclosing_scope_costs_nothing():
    s = Session(tiny(word_bytes=4), numeric=False)
    a = s.input("a", (4, 6))
    with GlobalHierarchy(s, "outer"):                 # scope 0
        a[0:4, 0:6]                                   # 24 elements -> LOAD 96 B into buffer 0
        with GlobalHierarchy(s, "inner"):             # scope 1
            t = a[1:3, 2:5]                           # inside [0:4, 0:6]: HIT on buffer 0, 0 B, no ALLOC
            assert t.buffer.id == 0 and t.shape == (2, 3)
            a[0:4, 0:6]                               # the very same region: also a hit
    s.finish()
    assert list(s.trace.events) == [
        (ENTER, 0, 0),
        (ALLOC, 0, 0, ((0, 4), (0, 6)), 96, 0, 96),
        (LOAD, 0, 0, ((0, 4), (0, 6)), 96, False),
        (ENTER, 1, 0),
        (HIT, 0, 0, ((1, 3), (2, 5)), False),
        (HIT, 0, 0, ((0, 4), (0, 6)), False),
        (EXIT, 1, 0),
        (FREE, 0, 96),
        (EXIT, 0, 0),
    ]
    c = s.counters
    assert (c.loaded_bytes, c.loads, c.hits, c.peak_sram_bytes) == (96, 1, 2, 96)
    assert c.per_tensor["a"].hits == 2


def test_partial_overlap_is_a_miss():
    s = Session(tiny(word_bytes=4), numeric=False)
    a = s.input("a", (4, 6))
    with GlobalHierarchy(s, "outer"):
        a[0:2, :]                                     # 12 elements -> 48 B
        with GlobalHierarchy(s, "inner"):
            t = a[1:3, :]                             # rows 1:3 are not inside rows 0:2: a new buffer, 48 B
            assert t.buffer.id == 1
    assert [e[4] for e in of_kind(s, LOAD)] == [48, 48]
    assert len(of_kind(s, ALLOC)) == 2 and of_kind(s, HIT) == []
    assert s.counters.loaded_bytes == 96 and s.counters.peak_sram_bytes == 96


# -- rule 3: misses load elements x word_bytes --------------------------------------------------------------------
@pytest.mark.parametrize("word", [1, 4])
def test_miss_loads_elements_times_word_bytes(word):
    s = Session(tiny(word_bytes=word), numeric=False)
    a = s.input("a", (3, 5, 7))
    with GlobalHierarchy(s, "only"):
        a[1, 0:3, 2:7]            # 1 x 3 x 5 = 15 elements
        a[0:2, 3:10, 0:99]        # clamped to [0:2, 3:5, 0:7]: 2 x 2 x 7 = 28 elements
        a[2]                      # trailing dims whole: 1 x 5 x 7 = 35 elements
    loads = of_kind(s, LOAD)
    assert [e[3] for e in loads] == [((1, 2), (0, 3), (2, 7)), ((0, 2), (3, 5), (0, 7)), ((2, 3), (0, 5), (0, 7))]
    assert [e[4] for e in loads] == [15 * word, 28 * word, 35 * word]
    assert [e[4] for e in of_kind(s, ALLOC)] == [15 * word, 28 * word, 35 * word]
    assert s.counters.loaded_bytes == (15 + 28 + 35) * word
    assert s.counters.per_tensor["a"].loaded_bytes == 78 * word
    assert s.counters.peak_sram_bytes == 78 * word    # all three live in the one scope


# -- rule 4: the reuse flag --------------------------------------------------------------------------------------
def test_reuse_loads_into_the_held_buffer_saving_sram_not_traffic():
    def run(reuse: bool) -> Session:
        s = Session(tiny(word_bytes=4), numeric=False)
        a = s.input("a", (3, 4))
        with GlobalHierarchy(s, "only"):
            a[0, :]                        # 4 elements, 16 B: buffer 0
            a[1, :, reuse]                 # 4 elements, 16 B
            a.load((2, slice(0, 2)), reuse=reuse)  # 2 elements, 8 B (smaller than the held buffer: fine)
        s.finish()
        return s

    reused, fresh = run(True), run(False)
    # same traffic: 16 + 16 + 8 = 40 B either way
    assert reused.counters.loaded_bytes == fresh.counters.loaded_bytes == 40
    # reuse: one ALLOC (16 B), both later loads go into buffer 0; without: three buffers, 40 B live
    assert len(of_kind(reused, ALLOC)) == 1 and len(of_kind(fresh, ALLOC)) == 3
    assert of_kind(reused, LOAD) == [
        (LOAD, 0, 0, ((0, 1), (0, 4)), 16, False),
        (LOAD, 0, 0, ((1, 2), (0, 4)), 16, True),
        (LOAD, 0, 0, ((2, 3), (0, 2)), 8, True),
    ]
    assert reused.counters.peak_sram_bytes == 16
    assert fresh.counters.peak_sram_bytes == 40


def test_reuse_with_nothing_held_in_the_current_scope_allocates():
    s = Session(tiny(), numeric=False)
    a = s.input("a", (3, 4))
    with GlobalHierarchy(s, "outer"):
        a[0, :]                            # buffer 0 in outer
        with GlobalHierarchy(s, "inner"):
            t = a[1, :, True]              # inner holds no buffer of a yet: a new buffer 1 (not outer's)
            assert t.buffer.id == 1
            t2 = a[2, :, True]             # now inner holds buffer 1: reused
            assert t2.buffer.id == 1
    assert [e[1] for e in of_kind(s, ALLOC)] == [0, 1]
    assert [(e[1], e[5]) for e in of_kind(s, LOAD)] == [(0, False), (1, True), (1, True)]


def test_reuse_of_a_resident_region_is_a_hit():
    s = Session(tiny(), numeric=False)
    a = s.input("a", (3, 4))
    with GlobalHierarchy(s, "only"):
        a[0:2, :]                          # buffer 0 holds rows 0:2
        a[1, :, True]                      # inside it: HIT, nothing reloaded
    assert of_kind(s, HIT) == [(HIT, 0, 0, ((1, 2), (0, 4)), True)]
    assert s.counters.loaded_bytes == 8


def test_reuse_stores_a_modified_buffer_first():
    s = Session(tiny(word_bytes=4))
    x = s.input("x", arange(2, 4))         # tensor 0
    o = s.output("o", (2, 4))              # tensor 1
    vec = VectorUnit(s)
    row0, row1 = ((0, 1), (0, 4)), ((1, 2), (0, 4))
    with GlobalHierarchy(s, "only"):
        xs = x[:, :]                       # buffer 0: LOAD 8 elements = 32 B
        u = o[0, :]                        # buffer 1: OPEN row 0
        u.assign(vec.copy(xs[0]))          # buffer 1 modified
        u2 = o[1, :, True]                 # reuse buffer 1: STORE row 0 (16 B) first, then OPEN row 1
        assert u2.buffer is u.buffer
        with pytest.raises(StaleTileError):
            u.data                         # the old tile now names data that left the buffer
        u2.assign(vec.copy(xs[1]))
    # exit stores row 1 (16 B): one store per modification, two in all
    s.finish()
    after_first_compute = list(s.trace.events)[6:]
    assert after_first_compute == [
        (STORE, 1, 1, row0, 16),
        (OPEN, 1, 1, row1, True),
        (COMPUTE, "vector", "copy", 1, (0,), 0, 1, 0),
        (STORE, 1, 1, row1, 16),
        (FREE, 1, 16),
        (FREE, 0, 32),
        (EXIT, 0, 0),
    ]
    assert len(of_kind(s, ALLOC)) == 2
    assert s.counters.stored_bytes == 32 and s.counters.stores == 2
    np.testing.assert_array_equal(o.data, arange(2, 4))
    with pytest.raises(StaleTileError):
        xs.data                            # freed with its scope


def test_reuse_of_a_larger_region_is_an_error():
    s = Session(tiny(), numeric=False)
    a = s.input("a", (3, 4))
    with pytest.raises(ReuseError, match=r"a\[0:2, 0:4\] \(8 B\) does not fit .*2 B"):
        with GlobalHierarchy(s, "only"):
            a[0, 0:2]                      # buffer of 2 elements = 2 B
            a[0:2, :, True]                # 8 elements > 2


def test_stale_tile_after_reuse_raises_when_computed_with():
    s = Session(tiny())
    a = s.input("a", arange(3, 4))
    o = s.output("o", (1, 4))
    vec = VectorUnit(s)
    with GlobalHierarchy(s, "only"):
        t = a[0, :]
        a[1, :, True]                      # t's buffer now holds row 1
        out = o[0, :]
        with pytest.raises(StaleTileError, match="reloaded with another region"):
            out.assign(vec.copy(t))
        with pytest.raises(StaleTileError):
            t[0, 0:2]                      # taking a sub-tile of a stale tile fails too


def test_reuse_stores_first_even_when_new_region_overlaps_the_held_one():
    s = Session(tiny())
    x = s.input("x", arange(3, 4))
    o = s.output("o", (3, 4))
    vec = VectorUnit(s)
    with GlobalHierarchy(s, "only"):
        xs = x[:, :]
        u = o[0:2, :]                      # OPEN rows 0:2 (8 B)
        u.assign(vec.copy(xs[0:2]))        # modified
        # rule 4: the held buffer is stored first (rows 0:2, 8 B); rows 1:3 then include stored row 1, so
        # they are loaded (8 B) and, once modified, that is a read-modify-write of 8 B
        u2 = o[1:3, :, True]
        u2 += vec.copy(xs[1:3])
    s.finish()
    assert [e[0] for e in of_kind(s, STORE)] == [STORE, STORE]
    assert s.counters.per_tensor["o"].loaded_bytes == 8 and s.counters.rmw_bytes == 8
    expected = arange(3, 4)
    expected[1] *= 2
    np.testing.assert_array_equal(o.data, expected)


# -- rule 5: zero-open, read-modify-write, store once ---------------------------------------------------------
def test_never_written_region_opens_as_zeros_without_dma():
    s = Session(tiny(word_bytes=4))
    o = s.output("o", (3, 4))
    m = s.intermediate("m", (3, 4))
    with GlobalHierarchy(s, "only"):
        t = o[0:2, :]                      # 8 elements: ALLOC 32 B, OPEN, no LOAD
        v = m[1:3, 1:3]                    # intermediates open the same way
        assert np.all(t.data == 0) and t.data.shape == (2, 4)
        assert np.all(v.data == 0)
    assert of_kind(s, OPEN) == [(OPEN, 0, 0, ((0, 2), (0, 4)), False), (OPEN, 1, 1, ((1, 3), (1, 3)), False)]
    assert of_kind(s, LOAD) == [] and of_kind(s, STORE) == []   # clean buffers are never stored
    c = s.counters
    assert (c.loaded_bytes, c.stored_bytes, c.opens, c.loads) == (0, 0, 2, 0)
    assert c.peak_sram_bytes == 32 + 16


def test_unstored_rows_next_to_stored_ones_still_open():
    s = Session(tiny(), numeric=False)
    x = s.input("x", (2, 4))
    o = s.output("o", (2, 4))
    vec = VectorUnit(s)
    with GlobalHierarchy(s, "first"):
        o[0, :].assign(vec.copy(x[0, :]))  # row 0 stored at exit
    with GlobalHierarchy(s, "second"):
        o[1, :]                            # row 1 never stored: OPEN, not LOAD
        o[0:2, 0:1]                        # touches stored row 0: the whole 2-element region is LOADed
    assert [e[3] for e in of_kind(s, OPEN)] == [((0, 1), (0, 4)), ((1, 2), (0, 4))]
    assert [(e[2], e[3], e[4]) for e in of_kind(s, LOAD)] == [(0, ((0, 1), (0, 4)), 4), (1, ((0, 2), (0, 1)), 2)]


def test_read_modify_write_of_a_previously_stored_region():
    s = Session(tiny(word_bytes=4))
    x = s.input("x", arange(2, 4))
    o = s.output("o", (2, 4))
    vec = VectorUnit(s)
    with GlobalHierarchy(s, "first"):
        u = o[:, :]                        # OPEN (never stored)
        u.assign(vec.copy(x[:, :]))        # x: LOAD 32 B
    # exit: STORE 8 elements = 32 B
    with GlobalHierarchy(s, "second"):
        u = o[:, :]                        # stored before: LOAD 32 B
        u += vec.copy(x[:, :])             # first modification after the load: rmw 32 B; x LOAD 32 B
        u += vec.copy(x[:, :])             # x hit; the same load counts as rmw only once
    # exit: STORE 32 B again
    with GlobalHierarchy(s, "third"):
        o[:, :]                            # LOAD 32 B, never modified: no rmw, no store
    s.finish()
    o_traffic = s.counters.per_tensor["o"]
    assert (o_traffic.loaded_bytes, o_traffic.stored_bytes, o_traffic.rmw_bytes) == (64, 64, 32)
    assert (o_traffic.loads, o_traffic.stores, o_traffic.opens) == (2, 2, 1)
    c = s.counters
    assert (c.loaded_bytes, c.stored_bytes, c.rmw_bytes) == (32 + 32 + 64, 64, 32)
    assert [e[3] for e in of_kind(s, STORE)] == [((0, 2), (0, 4))] * 2
    np.testing.assert_array_equal(o.data, 3 * arange(2, 4))


def test_store_exactly_once_per_modification():
    s = Session(tiny())
    x = s.input("x", arange(2, 4))
    o = s.output("o", (2, 4))
    vec = VectorUnit(s)
    with GlobalHierarchy(s, "outer"):
        u = o[:, :]                        # buffer of 8 B in outer
        xs = x[:, :]
        u.assign(vec.copy(xs))             # modified ...
        u += vec.copy(xs)                  # ... twice in one scope
        with GlobalHierarchy(s, "inner"):
            h = o[0, :]                    # HIT on outer's buffer
            h += vec.copy(xs[0])           # modified from the inner scope
        # inner exit frees nothing of o: no store here
        assert of_kind(s, STORE) == []
    # outer exit: exactly one STORE of the whole 8-byte buffer
    s.finish()
    assert of_kind(s, STORE) == [(STORE, 0, 1, ((0, 2), (0, 4)), 8)]
    expected = 2 * arange(2, 4)
    expected[0] += arange(2, 4)[0]
    np.testing.assert_array_equal(o.data, expected)


def test_clean_output_buffer_is_never_stored():
    s = Session(tiny(), numeric=False)
    x = s.input("x", (2, 4))
    o = s.output("o", (2, 4))
    vec = VectorUnit(s)
    with GlobalHierarchy(s, "write"):
        o[:, :].assign(vec.copy(x[:, :]))  # 1 store
    with GlobalHierarchy(s, "read-only"):
        o[:, :]                            # loaded, not modified
        o[0, :]                            # hit, not modified
    with GlobalHierarchy(s, "reuse"):
        o[0, :]
        o[1, :, True]                      # reusing a clean buffer stores nothing
    s.finish()
    assert s.counters.stores == 1 and s.counters.stored_bytes == 8


def test_dirty_overlapping_buffer_forbids_a_ddr_read():
    s = Session(tiny(), numeric=False)
    x = s.input("x", (2, 4))
    o = s.output("o", (2, 4))
    vec = VectorUnit(s)
    with pytest.raises(CoherenceError, match="not stored yet"):
        with GlobalHierarchy(s, "only"):
            o[0, :].assign(vec.copy(x[0, :]))
            o[0:2, 0:2]                    # overlaps the modified, unstored row 0


# -- rule 6: capacity and overflow ----------------------------------------------------------------------------------
def test_overflow_names_every_live_buffer_and_the_capacity():
    s = Session(tiny(sram_bytes=100, word_bytes=4), numeric=False)
    a = s.input("a", (4, 5))
    b = s.input("b", (3, 4))
    c = s.input("c", (4,))
    with pytest.raises(SramOverflowError) as info:
        with GlobalHierarchy(s, "outer"):
            a[0:2, :]                          # 10 elements = 40 B (live 40)
            with GlobalHierarchy(s, "inner"):
                b[:, :]                        # 12 elements = 48 B (live 88)
                c[0:3]                         # 3 elements = 12 B (live 100 == capacity: fits)
                a[2:4, 0:1]                    # 2 elements = 8 B -> 108 > 100: overflow
    err = info.value
    assert err.capacity_bytes == 100 and err.requested_bytes == 8
    assert err.live == [("a", "[0:2, 0:5]", 40, "outer"),
                        ("b", "[0:3, 0:4]", 48, "outer/inner"),
                        ("c", "[0:3]", 12, "outer/inner")]
    msg = str(err)
    assert "allocating 8 B for a[2:4, 0:1] in scope outer/inner" in msg
    assert "live footprint 108 B > capacity 100 B" in msg
    assert "Live buffers (100 B)" in msg
    for line in ("  a[0:2, 0:5]: 40 B in scope outer", "  b[0:3, 0:4]: 48 B in scope outer/inner",
                 "  c[0:3]: 12 B in scope outer/inner"):
        assert line in msg
    assert s.counters.peak_sram_bytes == 100   # the failed allocation never counted


def test_overflow_through_run_schedule_is_a_status():
    wl = Workload("w", inputs={"a": (10, 10)}, outputs={"out": (1,)}, reference=lambda a: {"out": a.sum()[None]})

    def body(s, a, out):
        with GlobalHierarchy(s, "big"):
            a[:, :]                            # 100 B > 64 B

    r = run_schedule(Schedule("too-big", wl, body), tiny(sram_bytes=64), numeric=False)
    assert r.status == "overflow" and r.loaded_bytes is None
    assert "allocating 100 B for a[0:10, 0:10] in scope big" in r.message and "capacity 64 B" in r.message


def test_peak_footprint_tracks_scopes():
    s = Session(tiny(sram_bytes=1000, word_bytes=2), numeric=False)
    a = s.input("a", (10, 10))
    with GlobalHierarchy(s, "A"):
        a[0:3, :]                              # 30 elements x 2 B = 60 B
        with GlobalHierarchy(s, "B"):
            a[3:5, :]                          # 40 B -> live 100
            assert s.live_sram_bytes == 100
        assert s.live_sram_bytes == 60
        with GlobalHierarchy(s, "C"):
            a[5:10, :]                         # 100 B -> live 160: the peak
            a[5:7, 0:5]                        # hit: no SRAM
            assert s.live_sram_bytes == 160
        assert s.live_sram_bytes == 60
    assert s.live_sram_bytes == 0
    with GlobalHierarchy(s, "D"):
        a[0:7, :]                              # 140 B < 160
    assert s.counters.peak_sram_bytes == 160
    allocated = sum(e[6] for e in of_kind(s, ALLOC))
    assert allocated == sum(e[2] for e in of_kind(s, FREE)) == 60 + 40 + 100 + 140


# -- rule 8: the blog's counter -------------------------------------------------------------------------------
def test_blog_counter():
    s = Session(tiny(word_bytes=4), numeric=False)
    a = s.input("a", (4, 6))
    o = s.output("o", (2, 6))
    vec = VectorUnit(s)
    with GlobalHierarchy(s, "outer"):
        t = a[0:2, :]                          # +12 (a load)
        u = o[:, :]                            # +12 (an output access counts, though it is only an OPEN)
        u.assign(vec.copy(t))
        a[2:4, :, True]                        # +0: reuse=True is not counted (still a 48 B load)
        with GlobalHierarchy(s, "inner"):
            a[2:3, 0:3]                        # +3: a hit counts
            a[3:10, 4:100]                     # clamped to [3:4, 4:6]: +2 (a hit)
    # the store of o at exit: +0
    s.finish()
    c = s.counters
    assert c.blog_loaded_elements == 12 + 12 + 3 + 2
    assert c.per_tensor["a"].blog_loaded_elements == 17
    assert c.per_tensor["o"].blog_loaded_elements == 12
    assert (c.loaded_bytes, c.stored_bytes) == ((12 + 12) * 4, 12 * 4)


# -- rule 9: count-only mode and determinism ------------------------------------------------------------------------
def _small_conv_schedule() -> Schedule:
    """Two input-channel passes (16 + 4) x two row tiles in a 2-way scope: the second pass read-modify-writes."""
    wl = Workload("tiny-conv", inputs={"image": (1, 20, 3, 4), "weight": (10, 20, 1, 1)},
                  outputs={"output": (1, 10, 3, 4)},
                  reference=lambda image, weight: {"output": F.conv2d(image, weight)})

    def body(s, image, weight, output):
        tc = TensorCore(s)
        for ic in Segments(0, 20, 16):
            for oh in Segments(0, 3, 2):
                with GlobalHierarchy(s, "tile", ways=2):
                    out = output[0, :, oh, :]
                    out += tc.conv2d(image[0, ic, oh, :], weight[:, ic])
                    s.scratch("tmp", (1, 2))

    return Schedule("tiny-conv", wl, body)


def test_small_schedule_counts_and_numerics():
    sched = _small_conv_schedule()
    r = assert_schedule_matches_torch(sched, tiny(sram_bytes=4096))
    # image 20x3x4 = 240 loaded once; weights 10x16 + 10x4 = 200 per row tile, 2 row tiles -> 400;
    # output 10x3x4 = 120 opened in pass 1, loaded (and modified: rmw) in pass 2; stored in both passes
    assert (r.loaded_bytes, r.stored_bytes, r.rmw_bytes) == (240 + 400 + 120, 2 * 120, 120)
    # biggest instance: out 10x2x4 = 80, image 16x2x4 = 128, weight 160, scratch 2 -> 370 B, x2 ways
    assert r.peak_sram_bytes == 2 * 370
    # blog: every access counts: image 240 + weights 400 + output 2 x 120
    assert r.blog_loaded_elements == 240 + 400 + 240
    assert r.macs == 10 * 20 * 12


def test_count_only_matches_numeric_events_and_counts():
    sched = _small_conv_schedule()
    hw = tiny(sram_bytes=4096)
    num = run_schedule(sched, hw, numeric=True)
    cnt = run_schedule(sched, hw, numeric=False)
    assert num.status == cnt.status == "ok"
    assert list(num.trace.events) == list(cnt.trace.events)
    fields = ("loaded_bytes", "stored_bytes", "rmw_bytes", "hits", "peak_sram_bytes", "blog_loaded_elements",
              "macs", "tensorcore_cycles")
    assert [getattr(num, f) for f in fields] == [getattr(cnt, f) for f in fields]
    assert num.tensors == cnt.tensors
    assert cnt.max_abs_err is None and cnt.outputs is None


def test_runs_are_deterministic():
    sched = _small_conv_schedule()
    hw = tiny(sram_bytes=4096)
    first, second = run_schedule(sched, hw), run_schedule(sched, hw)
    assert list(first.trace.events) == list(second.trace.events)
    assert first.trace.scopes == second.trace.scopes and first.trace.tensors == second.trace.tensors
    for name in first.outputs:
        np.testing.assert_array_equal(first.outputs[name], second.outputs[name])


# -- sessions are independent ---------------------------------------------------------------------------------------
def _program(s: Session):
    """A generator: each `yield` hands control to the other session."""
    a = s.input("a", arange(4, 4))
    o = s.output("o", (4, 4))
    vec = VectorUnit(s)
    with GlobalHierarchy(s, "outer"):
        t = a[0:2, :]
        yield
        with GlobalHierarchy(s, "inner"):
            a[1, :]                            # hit in this session only
            yield
            o[0:2, :].assign(vec.copy(t))
            yield
        o[2:4, :].assign(vec.copy(a[2:4, :, True]))
        yield
    s.finish()


def test_two_sessions_do_not_interfere():
    alone = []
    for word in (1, 4):
        s = Session(tiny(word_bytes=word))
        for _ in _program(s):
            pass
        alone.append(s)
    s1, s4 = Session(tiny(word_bytes=1)), Session(tiny(word_bytes=4))
    g1, g4 = _program(s1), _program(s4)
    done = [False, False]
    while not all(done):                       # interleave step by step
        for i, g in enumerate((g1, g4)):
            if not done[i]:
                try:
                    next(g)
                except StopIteration:
                    done[i] = True
    for mixed, solo in ((s1, alone[0]), (s4, alone[1])):
        assert list(mixed.trace.events) == list(solo.trace.events)
        assert mixed.counters == solo.counters
        np.testing.assert_array_equal(mixed.tensors["o"].data, solo.tensors["o"].data)
    # 16 elements of a loaded (rows 0:2 then 2:4), 16 of o stored, in each session's own word size
    assert (s1.counters.loaded_bytes, s1.counters.stored_bytes) == (16, 16)
    assert (s4.counters.loaded_bytes, s4.counters.stored_bytes) == (64, 64)
    assert s1.counters.hits == s4.counters.hits == 1
    np.testing.assert_array_equal(s1.tensors["o"].data, arange(4, 4))


def test_a_buffer_in_one_session_is_no_hit_in_another():
    s1, s2 = Session(tiny(), numeric=False), Session(tiny(), numeric=False)
    a1, a2 = s1.input("a", (2, 2)), s2.input("a", (2, 2))
    with GlobalHierarchy(s1, "x"):
        a1[:, :]
        with GlobalHierarchy(s2, "x"):
            a2[0, :]                           # s2 holds nothing: a LOAD
            a1[0, :]                           # s1's scope is still the innermost of s1: a hit there
    assert s1.counters.loads == 1 and s1.counters.hits == 1
    assert s2.counters.loads == 1 and s2.counters.hits == 0
    # s2 never saw s1's scopes: its trace has one scope, entered once
    assert [e[0] for e in s2.trace.events] == [ENTER, ALLOC, LOAD, FREE, EXIT]


# -- errors ------------------------------------------------------------------------------------------------------------
def test_writing_an_input_is_read_only_error():
    s = Session(tiny())
    x = s.input("x", arange(2, 2))
    vec = VectorUnit(s)
    with pytest.raises(ReadOnlyError, match="x is an input"):
        with GlobalHierarchy(s, "only"):
            t = x[:, :]
            t.assign(vec.copy(t))
    s2 = Session(tiny(), numeric=False)
    y = s2.input("y", (2, 2))
    with pytest.raises(ReadOnlyError):
        with GlobalHierarchy(s2, "only"):
            t = y[:, :]
            t += VectorUnit(s2).copy(t)


def test_unstored_output_elements_are_unfinished():
    s = Session(tiny(), numeric=False)
    x = s.input("x", (2, 3))
    o = s.output("o", (2, 3))
    with GlobalHierarchy(s, "only"):
        o[0, :].assign(VectorUnit(s).copy(x[0, :]))   # row 0 only
    with pytest.raises(UnfinishedError, match=r"output o: 3 of 6 elements were never stored, first at index \(1, 0\)"):
        s.finish()

    s = Session(tiny(), numeric=False)
    s.output("o", (2, 3))
    with pytest.raises(UnfinishedError, match="output o: 6 of 6 elements were never stored"):
        s.finish()

    s = Session(tiny(), numeric=False)
    o = s.output("o", (2, 3))
    with GlobalHierarchy(s, "only"):
        o[:, :]                                        # opened but never modified: never stored
    with pytest.raises(UnfinishedError, match="6 of 6"):
        s.finish()


def test_scope_left_open_is_unfinished():
    s = Session(tiny(), numeric=False)
    GlobalHierarchy(s, "leaky").__enter__()
    with pytest.raises(UnfinishedError, match="scopes still open at the end of the run: leaky"):
        s.finish()


def test_unfinished_through_run_schedule_is_an_error_status():
    wl = Workload("w", inputs={"a": (2, 2)}, outputs={"out": (2, 2)}, reference=lambda a: {"out": a})

    def body(s, a, out):
        with GlobalHierarchy(s, "half"):
            out[0, :].assign(VectorUnit(s).copy(a[0, :]))

    r = run_schedule(Schedule("half", wl, body), tiny(), numeric=False)
    assert r.status == "error" and r.message.startswith("UnfinishedError: output out: 2 of 4")


def test_access_outside_any_scope_is_region_error():
    s = Session(tiny(), numeric=False)
    a = s.input("a", (4, 4))
    with pytest.raises(RegionError, match="outside any GlobalHierarchy scope"):
        a[0, :]
    with GlobalHierarchy(s, "x"):
        pass
    with pytest.raises(RegionError):
        a[0:2]                                         # after the scope exited too


@pytest.mark.parametrize("key", [
    (0, 0, 0),                  # three indices for a 2-d tensor
    (slice(0, 4, -1),),         # a negative step (a positive one is a strided box: tests/test_trust_strided2.py)
    (slice(2, 2),),             # empty
    (-1,),                      # negative (no Python wrap-around)
    (4,),                       # one past the end
    (5,),                       # starts past the extent 4
    ((5, 6),),                  # a pair past the extent: clamped to 5:4, empty
    ((3, 1),),                  # reversed pair
    (True, 0),                  # reuse flag not last
    ("a",),                     # not an index
    (1.5,),                     # not an index
])
def test_bad_indices_are_region_errors(key):
    s = Session(tiny(), numeric=False)
    a = s.input("a", (4, 4))
    with GlobalHierarchy(s, "x"):
        with pytest.raises(RegionError) as info:
            a[key]
    assert isinstance(info.value, IndexError)


# -- N-way buffered scopes -----------------------------------------------------------------------------------------
def test_two_way_scope_charges_double_and_alternates_copies():
    s = Session(tiny(sram_bytes=100), numeric=False)
    a = s.input("a", (8, 10))
    for i in range(4):
        with GlobalHierarchy(s, "pp", ways=2):
            a[i, :]                                    # 10 B, charged 2 x 10 = 20 B
    allocs = of_kind(s, ALLOC)
    # the block [0, 20) holds two 10 B copies: instance i uses bytes [10 * (i % 2), 10 * (i % 2) + 10)
    assert [(e[4], e[5], e[6]) for e in allocs] == [(10, 0, 20), (10, 10, 20), (10, 0, 20), (10, 10, 20)]
    assert [e[2] for e in of_kind(s, FREE)] == [20] * 4
    assert s.counters.peak_sram_bytes == 20
    assert s.trace.scopes[0].ways == 2


def test_two_way_scope_addresses_with_two_buffers_per_instance():
    s = Session(tiny(sram_bytes=1000), numeric=False)
    a = s.input("a", (8, 10))
    b = s.input("b", (8, 10))
    for i in range(3):
        with GlobalHierarchy(s, "pp", ways=2):
            a[i, :]
            b[i, :]
    # a's block is [0, 20), b's [20, 40); even instances use the first 10 B copy of each, odd ones the second
    assert [e[5] for e in of_kind(s, ALLOC)] == [0, 20, 10, 30, 0, 20]


def test_two_way_scope_capacity_check():
    s = Session(tiny(sram_bytes=30), numeric=False)
    a = s.input("a", (8, 10))
    with GlobalHierarchy(s, "single"):
        a[0, :]
        a[1, :]
        a[2, :]                                        # 3 x 10 = 30 B fits exactly
    with pytest.raises(SramOverflowError, match=r"allocating 20 B for a\[1:2, 0:10\] \(2-way buffered\)") as info:
        with GlobalHierarchy(s, "double", ways=2):
            a[0, :]                                    # 20 B charged
            a[1, :]                                    # 40 B > 30
    assert info.value.live == [("a", "[0:1, 0:10]", 20, "double")]


def test_scope_ways_override():
    s = Session(tiny(sram_bytes=1000), numeric=False, scope_ways={"pp": 3, "plain": 2})
    a = s.input("a", (8, 10))
    with GlobalHierarchy(s, "outer"):
        for i in range(4):
            with GlobalHierarchy(s, "pp", ways=2):     # the override (3) wins over the declaration (2)
                a[i, :]
    with GlobalHierarchy(s, "plain"):                  # declared single, overridden to 2
        a[5, :]
    s.finish()
    allocs = of_kind(s, ALLOC)
    # "outer" holds nothing, so pp's 3 x 10 B block starts at 0; instance i uses the copy at 10 * (i % 3)
    assert [(e[5], e[6]) for e in allocs[:4]] == [(0, 30), (10, 30), (20, 30), (0, 30)]
    assert allocs[4][6] == 20
    assert [sc.ways for sc in s.trace.scopes] == [1, 3, 2]   # outer, outer/pp, plain


def _two_way_events(declare, session_kwargs):
    """The events of a 2-way scope declared one way, overridden to 3 ways for "pp3" via the Session's mapping."""
    s = Session(tiny(sram_bytes=1000), numeric=False, **session_kwargs)
    a = s.input("a", (8, 10))
    for i in range(3):
        with declare(s, "pp"):
            a[i, :]
        with GlobalHierarchy(s, "pp3"):
            a[i, :]
    s.finish()
    return s.trace.events, [sc.ways for sc in s.trace.scopes]


def test_buffers_is_an_alias_of_ways():
    # N-way buffering is named `ways`; `buffers=` (GlobalHierarchy, Session.scope) and `scope_buffers=` (Session,
    # run_schedule) are the blog-style aliases and must give the very same run
    by_ways = _two_way_events(lambda s, n: GlobalHierarchy(s, n, ways=2), dict(scope_ways={"pp3": 3}))
    assert by_ways[1] == [2, 3]
    assert [e[6] for e in by_ways[0] if e[0] == ALLOC] == [20, 30, 20, 30, 20, 30]  # charged = 10 B x ways
    assert _two_way_events(lambda s, n: GlobalHierarchy(s, n, buffers=2), dict(scope_buffers={"pp3": 3})) == by_ways
    assert _two_way_events(lambda s, n: s.scope(n, buffers=2), dict(scope_ways={"pp3": 3})) == by_ways
    assert _two_way_events(lambda s, n: s.scope(n, ways=2), dict(scope_buffers={"pp3": 3})) == by_ways
    assert _two_way_events(lambda s, n: GlobalHierarchy(s, n, 2), dict(scope_ways={"pp3": 3})) == by_ways


def test_ways_and_its_alias_together_or_wrong_name_the_argument_used():
    s = Session(tiny(), numeric=False)
    with pytest.raises(ValueError, match=r"pass ways=2 or its alias buffers=2, not both"):
        GlobalHierarchy(s, "pp", ways=2, buffers=2)
    with pytest.raises(ValueError, match=r"GlobalHierarchy ways must be an integer >= 1"):
        GlobalHierarchy(s, "pp", ways=0)
    with pytest.raises(ValueError, match=r"GlobalHierarchy buffers must be an integer >= 1"):
        s.scope("pp", buffers=0)
    with pytest.raises(ValueError, match=r"pass scope_ways or its alias scope_buffers, not both"):
        Session(tiny(), scope_ways={"a": 2}, scope_buffers={"a": 2})
    with pytest.raises(ValueError, match=r"^scope_ways\['a'\] must be an integer >= 1, got 0$"):
        Session(tiny(), scope_ways={"a": 0})
    with pytest.raises(ValueError, match=r"Session scope_ways must map scope names"):
        Session(tiny(), scope_ways=[("a", 2)])
    s = Session(tiny(), numeric=False, scope_ways={"nowhere": 2})
    with GlobalHierarchy(s, "somewhere"):
        pass
    with pytest.raises(ValueError, match=r"^scope_ways names scope\(s\) \['nowhere'\] that the schedule never"):
        s.finish()


def test_scope_buffers_errors():
    with pytest.raises(ValueError):
        Session(tiny(), scope_buffers={"pp": 0})
    s = Session(tiny(), numeric=False)
    with pytest.raises(ValueError):
        GlobalHierarchy(s, "pp", buffers=0)
    s = Session(tiny(), numeric=False, scope_buffers={"nowhere": 2})
    with GlobalHierarchy(s, "somewhere"):
        pass
    with pytest.raises(ValueError, match=r"^scope_buffers names scope\(s\) \['nowhere'\]"):
        s.finish()


def test_scope_ways_through_run_schedule_changes_only_sram():
    sched = _small_conv_schedule()
    hw = tiny(sram_bytes=4096)
    two = run_schedule(sched, hw, numeric=False)
    four = run_schedule(sched, hw, numeric=False, scope_ways={"tile": 4})
    assert four.peak_sram_bytes == 2 * two.peak_sram_bytes == 4 * 370
    assert (four.loaded_bytes, four.stored_bytes) == (two.loaded_bytes, two.stored_bytes)
    assert run_schedule(sched, hw, numeric=False, scope_buffers={"tile": 4}) == four   # the alias
    with pytest.raises(ValueError, match="not both"):
        run_schedule(sched, hw, numeric=False, scope_ways={"tile": 4}, scope_buffers={"tile": 4})


def test_a_compute_never_written_anywhere_is_an_error():
    s = Session(tiny(), numeric=False)
    x = s.input("x", (1, 16, 2, 2))
    w = s.input("w", (24, 16, 1, 1))
    y = s.output("y", (1, 24, 2, 2))
    tc = TensorCore(s)
    with GlobalHierarchy(s, "all"):
        out = y[:, :, :, :]
        tc.conv2d(x[:, :, :, :], w[:, :, :, :])          # result dropped: nothing would ever hold it
        out += tc.conv2d(x[:, :, :, :], w[:, :, :, :])
    with pytest.raises(UnfinishedError, match=r"1 compute result\(s\) were never written.*tensorcore.conv2d"):
        s.finish()


# -- an exception leaving a scope: its buffers are freed unstored, the session refuses further use ----------------
def test_exception_leaving_a_scope_frees_its_buffers_and_poisons_the_session():
    s = Session(tiny(sram_bytes=64, word_bytes=4))
    x = s.input("x", arange(2, 4))
    o = s.output("o", (2, 4))
    vec = VectorUnit(s)
    with pytest.raises(SessionStateError, match="uncertain state: RuntimeError: boom was raised inside scope "
                                                "outer/inner"):
        with GlobalHierarchy(s, "outer"):
            kept = x[0, :]                        # 4 elements x 4 B = 16 B, outer scope
            try:
                with GlobalHierarchy(s, "inner"):
                    t = o[1, :]                   # 16 B, opened, then modified
                    t.assign(vec.copy(x[1, :]))   # x[1, :]: another 16 B
                    assert s.live_sram_bytes == 48
                    raise RuntimeError("boom")
            except RuntimeError:
                pass
            # the inner scope's two buffers (32 B) were freed; the outer one (16 B) is still held
            assert s.live_sram_bytes == 16
            with pytest.raises(SessionStateError, match="start a new Session"):
                x[0, :]                           # even a would-be hit is refused: nothing is counted on
            with pytest.raises(SessionStateError):
                kept += vec.copy(kept)            # a tile of a still-live buffer: its compute is refused
            with pytest.raises(SessionStateError):
                GlobalHierarchy(s, "again").__enter__()
            with pytest.raises(SessionStateError):
                s.scratch("tmp", (2,))
            with pytest.raises(SessionStateError):
                s.output("late", (2,))
        # leaving "outer" normally on a poisoned session: freed without storing, and refused
    assert s.live_sram_bytes == 0
    assert of_kind(s, STORE) == [] and s.counters.stored_bytes == 0   # the modified o[1, :] was dropped
    assert len(of_kind(s, FREE)) == len(of_kind(s, ALLOC)) == 3
    with pytest.raises(SessionStateError):
        s.finish()
    with pytest.raises(SessionStateError):
        t.data                                   # its buffer was freed by the exception


def test_exception_unwinding_nested_scopes_frees_every_level():
    s = Session(tiny(sram_bytes=64), numeric=False)
    a = s.input("a", (8, 8))
    with pytest.raises(KeyError):
        with GlobalHierarchy(s, "l1"):
            a[0, :]                               # 8 B
            with GlobalHierarchy(s, "l2"):
                a[1, :]                           # 8 B
                with GlobalHierarchy(s, "l3"):
                    a[2, :]                       # 8 B
                    raise KeyError("k")
    assert s.live_sram_bytes == 0 and s._stack == []
    assert [e[0] for e in s.trace.events[-6:]] == [FREE, EXIT, FREE, EXIT, FREE, EXIT]
    with pytest.raises(SessionStateError, match="KeyError: 'k' was raised inside scope l1/l2/l3"):
        a[3, :]


def test_overflow_lists_the_live_buffers_then_frees_them():
    # a 40 B SRAM: 3 rows of 8 B fit (24 B), a 4th 8 B row too (32 B), a 16 B tile then overflows
    s = Session(tiny(sram_bytes=40), numeric=False)
    a = s.input("a", (8, 8))
    with pytest.raises(SramOverflowError) as info:
        with GlobalHierarchy(s, "outer"):
            a[0, :]
            with GlobalHierarchy(s, "inner"):
                a[1, :]
                a[2:4, :]                          # 16 B: 8 + 8 + 16 = 32 <= 40
                a[4:6, :]                          # 16 B more: 48 > 40
    message = str(info.value)
    # built before the scopes were freed: it names all three live buffers
    assert "Live buffers (32 B):" in message and "a[0:1, 0:8]: 8 B in scope outer\n" in message
    assert "a[1:2, 0:8]: 8 B in scope outer/inner" in message and "a[2:4, 0:8]: 16 B in scope outer/inner" in message
    assert s.live_sram_bytes == 0
    with pytest.raises(SessionStateError, match="SramOverflowError: SRAM overflow: allocating 16 B"):
        a[0, :]


def test_coherence_error_at_scope_exit_unwinds_cleanly():
    s = Session(tiny(), numeric=False)
    x = s.input("x", (4,))
    o = s.output("o", (4,))
    vec = VectorUnit(s)
    with pytest.raises(CoherenceError):
        with GlobalHierarchy(s, "outer"):
            with GlobalHierarchy(s, "inner"):
                o[0:3].assign(vec.copy(x[0:3]))    # two opened, modified, overlapping buffers:
                o[1:4].assign(vec.copy(x[1:4]))    # storing one at exit would overwrite the other
    # the CoherenceError propagated as itself (no "scopes exited out of order" on the way out)
    assert s.live_sram_bytes == 0 and s._stack == []
    with pytest.raises(SessionStateError, match="CoherenceError"):
        s.finish()


def test_error_inside_a_scope_through_run_schedule_reports_the_original_error():
    wl = Workload("w", inputs={"a": (2, 2)}, outputs={"out": (2, 2)}, reference=lambda a: {"out": a})

    def body(s, a, out):
        with GlobalHierarchy(s, "s"):
            out[:, :].assign(VectorUnit(s).copy(a[:, :]))
            a[5, 0]                                # RegionError leaves the scope

    r = run_schedule(Schedule("bad", wl, body), tiny(), numeric=True)
    assert r.status == "error" and r.message.startswith("RegionError: a: dimension 0: index 5 is outside 0:2")


def test_an_exception_caught_inside_the_scope_leaves_the_session_usable():
    s = Session(tiny(), numeric=False)
    a = s.input("a", (4, 4))
    with GlobalHierarchy(s, "s"):
        with pytest.raises(RegionError):
            a[9, 0]                                # never left the scope: nothing uncertain
        a[0, :]
    assert s.counters.loaded_bytes == 4


# -- rule 5 with other live buffers: a store overwrites DDR under them --------------------------------------------
def test_a_store_makes_other_live_buffers_of_the_region_stale_and_a_fresh_access_reloads():
    s = Session(tiny(word_bytes=2))
    x = s.input("x", arange(8))
    o = s.output("o", (8,))
    vec = VectorUnit(s)
    with GlobalHierarchy(s, "outer"):
        old = o[0:4]                               # buffer 0: opened (never stored), clean
        with GlobalHierarchy(s, "inner"):
            o[2:6].assign(vec.copy(x[2:6]))        # not inside buffer 0: its own buffer, modified
        # inner exit stored o[2:6] (4 x 2 B = 8 B) over DDR that buffer 0 also holds: buffer 0 is stale
        assert s.counters.stored_bytes == 8
        with pytest.raises(StaleTileError, match="DDR was overwritten by another buffer's store"):
            old.data
        with pytest.raises(StaleTileError):
            o[0:2].assign(vec.copy(old[0:2]))
        fresh = o[0:4]                             # not a hit on the stale buffer: reloaded, 4 x 2 B = 8 B
        assert of_kind(s, LOAD)[-1][2:5] == (1, ((0, 4),), 8)
        np.testing.assert_array_equal(fresh.data, [0, 0, 3, 4])   # x = 1..8: elements 2, 3 were stored
    assert s.counters.per_tensor["o"].loaded_bytes == 8 and s.counters.per_tensor["o"].hits == 0


# -- byte counts with word_bytes > 1: loads, stores, read-modify-write, SRAM charge and capacity --------------------
@pytest.mark.parametrize("word", [2, 4])
def test_store_reload_and_capacity_bytes_scale_with_word_bytes(word):
    # SRAM of 18 words (18 x word B)
    s = Session(dataclasses.replace(preset("blog"), sram_bytes=18 * word, word_bytes=word), numeric=False)
    x = s.input("x", (3, 4))
    o = s.output("o", (3, 4))
    vec = VectorUnit(s)
    with GlobalHierarchy(s, "a"):
        o[0:2, 1:4].assign(vec.copy(x[0:2, 1:4]))  # x: 6 elements loaded; o: opened; stored at exit (6 words)
    with GlobalHierarchy(s, "b"):
        t = o[0:3, :]                              # 12 elements overlapping the stored ones: loaded (12 words)
        t[0:2, 1:4] += vec.copy(x[0:2, 1:4])       # x again (a new scope): 6 words; live 18 words = capacity
    # exit: t modified after a load -> read-modify-write of 12 words, stored (12 words)
    c = s.counters
    assert c.loaded_bytes == (6 + 12 + 6) * word
    assert c.stored_bytes == (6 + 12) * word
    assert c.rmw_bytes == 12 * word
    assert c.peak_sram_bytes == 18 * word
    assert c.per_tensor["o"].loaded_bytes == 12 * word and c.per_tensor["o"].stored_bytes == 18 * word
    assert [e[4] for e in of_kind(s, STORE)] == [6 * word, 12 * word]
    assert [e[4] for e in of_kind(s, ALLOC)] == [6 * word, 6 * word, 12 * word, 6 * word]
    with pytest.raises(SramOverflowError, match=rf"allocating {8 * word} B for o\[0:2, 0:4\] in scope c would "
                                                rf"make the live footprint {20 * word} B > capacity {18 * word} B"):
        with GlobalHierarchy(s, "c"):
            x[:, :]                                # 12 words
            o[0:2, :]                              # 8 words more: 20 > 18


# -- rule 4 with rule 5: the reuse flag stores the held buffer, then reloads what was stored ------------------------
def test_reuse_flag_store_then_reload_counts():
    word = 2
    s = Session(tiny(word_bytes=word), numeric=False)
    x = s.input("x", (2, 4))
    o = s.output("o", (2, 4))
    vec = VectorUnit(s)
    with GlobalHierarchy(s, "only"):
        reuse = False
        for row in (0, 1, 0):
            t = o[row, :, reuse]                   # 1st: allocate + open; 2nd: store row 0, open row 1 in place;
            reuse = True                           # 3rd: store row 1, LOAD row 0 (stored before) in place
            t += vec.copy(x[row, :])
    # exit stores row 0 again. Stores: row 0, row 1, row 0 = 3 x 4 elements; loads of o: row 0 once (4)
    c = s.counters.per_tensor["o"]
    assert (c.stores, c.stored_bytes) == (3, 12 * word)
    assert (c.loads, c.loaded_bytes, c.opens) == (1, 4 * word, 2)
    assert c.rmw_bytes == 4 * word                 # the reloaded row 0 was modified again
    assert c.blog_loaded_elements == 4             # the blog counts only the first (reuse=False) access
    assert len([e for e in of_kind(s, ALLOC) if e[2] == 1]) == 1   # one buffer for o throughout
    assert [e[0] for e in s.trace.events if e[0] in (STORE, LOAD, OPEN) and e[2] == 1] == \
        [OPEN, STORE, OPEN, STORE, LOAD, STORE]


# -- the stored-element set: exact against a dense mask, bounded memory for huge outputs ----------------------------
def _random_box(rng, shape):
    box = []
    for d in shape:
        a = int(rng.integers(0, d))
        box.append((a, int(rng.integers(a + 1, d + 1))))
    return tuple(box)


@pytest.mark.parametrize("block_elements", [1, 5, 27, 64])
def test_block_stored_set_agrees_with_a_dense_mask(block_elements):
    from dsasim.traced.stored_elements import StoredElements
    rng = np.random.default_rng(block_elements)
    for _ in range(60):
        shape = tuple(int(d) for d in rng.integers(1, 11, int(rng.integers(1, 5))))
        stored = StoredElements(shape, dense_max_elements=0, block_elements=block_elements)
        assert stored.dense is None
        ref = np.zeros(shape, bool)                # the independent reference: a plain numpy mask
        for _ in range(int(rng.integers(1, 9))):
            query = _random_box(rng, shape)
            assert stored.any_in(query) == bool(ref[tuple(starmap(slice, query))].any())
            box = _random_box(rng, shape)
            stored.add(box)
            ref[tuple(starmap(slice, box))] = True
            missing = int((~ref).sum())
            first = tuple(int(i) for i in np.argwhere(~ref)[0]) if missing else None
            assert stored.missing() == (missing, first)


def test_finish_on_a_huge_output_needs_memory_for_stored_blocks_only():
    # (1, 64, 20000, 20000): 25.6 G elements, a dense mask would need 25.6 GB
    s = Session(preset("blog"), numeric=False, record_trace=False)
    x = s.input("x", (1, 64, 20000, 20000))
    o = s.output("o", (1, 64, 20000, 20000))
    vec = VectorUnit(s)
    with GlobalHierarchy(s, "t"):
        o[0, 0:64, 0:1, 0:100].assign(vec.copy(x[0, 0:64, 0:1, 0:100]))
    stored = o.stored
    assert stored.dense is None
    # blocks of (1, 40, 40, 40) = 64,000 elements: a 1 B grid of 1 x 2 x 500 x 500 blocks, and the 2 x 1 x 3
    # blocks the tile touched, each partial: 3 full-size masks (64,000 B) and 3 of the last channel block, which
    # is clipped to channels 40:64 (1 x 24 x 40 x 40 = 38,400 B)
    assert stored.block == (1, 40, 40, 40)
    assert stored.nbytes == 2 * 500 * 500 + 3 * 64_000 + 3 * 38_400
    with pytest.raises(UnfinishedError, match=r"output o: 25599993600 of 25600000000 elements were never stored, "
                                              r"first at index \(0, 0, 0, 100\)"):
        s.finish()


def test_first_unstored_element_in_c_order_on_a_dense_output():
    s = Session(tiny(), numeric=False)
    x = s.input("x", (3, 4, 5))
    o = s.output("o", (3, 4, 5))
    vec = VectorUnit(s)
    with GlobalHierarchy(s, "t"):
        o[0].assign(vec.copy(x[0]))                # plane 0 whole
        o[1, 0:2].assign(vec.copy(x[1, 0:2]))      # rows 0-1 of plane 1
        o[1, 2, 0:3].assign(vec.copy(x[1, 2, 0:3]))
        o[2].assign(vec.copy(x[2]))
    # unstored: o[1, 2, 3:5] and o[1, 3, :] = 2 + 5 = 7 elements, the first (1, 2, 3)
    with pytest.raises(UnfinishedError, match=r"7 of 60 elements were never stored, first at index \(1, 2, 3\)"):
        s.finish()


@pytest.mark.parametrize("word", [1, 2])
def test_pairs_and_slices_past_the_edge_are_clamped(word):
    s = Session(tiny(word_bytes=word), numeric=False)
    a = s.input("a", (5, 7))
    with GlobalHierarchy(s, "pairs"):
        t = a[(3, 10), (5, 100)]                  # clamped to [3:5, 5:7]: 2 x 2 = 4 elements
        assert t.region == ((3, 5), (5, 7)) and t.shape == (2, 2)
        assert t[(1, 9), ].region == ((4, 5), (5, 7))   # a sub-tile pair past the tile's edge: clamped to it
    with GlobalHierarchy(s, "mixed"):
        a[3:99, (6, 8)]                           # [3:5, 6:7]: 2 elements
        a[(0, 6), 0:1]                            # [0:5, 0:1]: 5 elements
    loads = of_kind(s, LOAD)
    assert [e[3] for e in loads] == [((3, 5), (5, 7)), ((3, 5), (6, 7)), ((0, 5), (0, 1))]
    assert [e[4] for e in loads] == [4 * word, 2 * word, 5 * word]
    assert s.counters.loaded_bytes == 11 * word
    assert s.counters.blog_loaded_elements == 11  # the default blog counter counts the clamped extents too


def test_overflow_through_run_schedule_still_reruns_for_the_needed_sram():
    # the overflow poisons the run's session; the needed-SRAM note comes from a fresh, unlimited one
    wl = Workload("w", inputs={"a": (4, 8)}, outputs={"out": (1,)}, reference=lambda a: {"out": a.sum()[None]})

    def body(s, a, out):
        with GlobalHierarchy(s, "outer"):
            a[0, :]                                # 8 B
            with GlobalHierarchy(s, "inner"):
                a[1:4, :]                          # 24 B: 32 > 30

    r = run_schedule(Schedule("tight", wl, body), tiny(sram_bytes=30), numeric=False)
    assert r.status == "overflow"
    assert "Live buffers (8 B):\n  a[0:1, 0:8]: 8 B in scope outer\n" in r.message
    # unlimited: 8 + 24 = 32 B peak, 32 B loaded, nothing stored, blog count 32 elements
    assert r.message.endswith("With unlimited SRAM it would need 32 B peak (capacity 30 B), load 32 B, store 0 B; "
                              "blog count 32.")


# -- the live-buffer index: equal, event for event, to visiting every live buffer --------------------------------
def _random_schedule_events(seed: int) -> tuple[list[tuple], str, str]:
    """A random schedule over overlapping tiles of an input and an output (nested scopes, reuse flags, writes);
    returns its events, the error that ended it (if any) and its counters."""
    import random
    from dsasim.errors import ScheduleError
    rng = random.Random(seed)
    s = Session(tiny(sram_bytes=1 << 20), numeric=False)
    tensors = [s.input("x", (7, 5)), s.output("o", (7, 5))]
    vec = VectorUnit(s)

    def body(depth: int) -> None:
        with GlobalHierarchy(s, f"d{depth}"):
            for _ in range(rng.randint(1, 8)):
                if depth < 3 and rng.random() < 0.2:
                    body(depth + 1)
                    continue
                arr = rng.choice(tensors)
                key = []
                for d in arr.shape:  # every index form: Segment, slice, int, (start, stop) pair
                    a = rng.randrange(d)
                    b = rng.randint(a + 1, d)
                    key.append(rng.choice([Segment(a, b), slice(a, b), (a, b)] + ([a] if b == a + 1 else [])))
                tile = arr[tuple(key), rng.random() < 0.2] if rng.random() < 0.5 else arr[tuple(key)]
                if arr is tensors[1] and rng.random() < 0.5:
                    if rng.random() < 0.5:
                        s.mark_written(tile)
                    else:
                        tile.assign(vec.copy(tile))
    try:
        body(0)
        error = ""
    except ScheduleError as err:
        error = f"{type(err).__name__}: {err}"
    return list(s.trace.events), error, repr(s.counters)


def test_live_buffer_index_agrees_with_visiting_every_buffer(monkeypatch):
    from dsasim.traced import live_buffers
    indexed = []
    errors = hitting = 0
    # index from the first buffer, blocks of 3 rows, buffers over 1 block in the "wide" list: every index path runs
    with monkeypatch.context() as m:
        m.setattr(live_buffers, "_SCAN_MAX_BUFFERS", 0)
        m.setattr(live_buffers, "_MAX_BUCKETS", 3)
        m.setattr(live_buffers, "_WIDE_BLOCKS", 1)
        for seed in range(1000):
            indexed.append(_random_schedule_events(seed))
    with monkeypatch.context() as m:
        m.setattr(live_buffers, "_SCAN_MAX_BUFFERS", 1 << 30)  # never index: the plain scan of every live buffer
        for seed in range(1000):
            scanned = _random_schedule_events(seed)
            assert indexed[seed] == scanned, seed
            errors += bool(scanned[1])
            hitting += any(e[0] == HIT for e in scanned[0])
    assert 50 < errors < 950 and hitting > 200  # clean runs, errors (coherence, reuse) and hits were compared


# -- the columnar event log: the same tuples as the plain list of tuples it replaces ------------------------------
def _events_and_types(events) -> tuple[list[tuple], list[tuple[type, ...]]]:
    events = list(events)
    return events, [tuple(map(type, e)) for e in events]


def test_columnar_log_equals_the_list_of_tuples_on_random_schedules(monkeypatch):
    from dsasim.traced import trace
    assert trace.COLUMNAR, "the compiled event log (dsasim/traced/_events.pyx) is not built: pip install -e ."
    columnar = [_random_schedule_events(seed) for seed in range(1000)]
    monkeypatch.setattr(trace, "COLUMNAR", False)
    computes = 0
    for seed in range(1000):
        listed = _random_schedule_events(seed)
        assert _events_and_types(columnar[seed][0]) == _events_and_types(listed[0]), seed
        assert columnar[seed][1:] == listed[1:]
        computes += any(e[0] == COMPUTE for e in listed[0])
    assert computes > 200


def test_columnar_log_equals_the_list_of_tuples_on_every_demo(monkeypatch):
    from dsasim.traced import trace
    from dsasim.kernels.blog_demos import SCHEDULES
    from test_blog_demos import reduced
    schedules = [reduced(s.name) for s in SCHEDULES] + [s for s in SCHEDULES if s.name == "demo2"]
    columnar = [run_schedule(s, preset(s.hardware), numeric=False).trace for s in schedules]
    monkeypatch.setattr(trace, "COLUMNAR", False)
    for sched, packed in zip(schedules, columnar):
        listed = run_schedule(sched, preset(sched.hardware), numeric=False).trace
        assert type(listed.log).__name__ == "ListLog" and type(packed.log).__name__ == "EventLog"
        assert len(packed) == len(listed) > 0
        assert _events_and_types(packed.events) == _events_and_types(listed.events), sched.name


def test_columnar_log_holds_under_40_bytes_per_event():
    # 20,000 scopes of 10 events: ENTER, ALLOC + LOAD of x[i], ALLOC + OPEN of o[i], COMPUTE, STORE, 2 FREE, EXIT.
    # Words (8 B): ENTER 2, ALLOC 4 + 4, LOAD 2, OPEN 2, COMPUTE 2 + 1 input, STORE 2, FREE 2 + 2, EXIT 2 = 25,
    # plus two 2-d regions of 2 words (start | stop << 32 per dimension) = 29 words = 232 B per scope, 23.2 B per
    # event; each of the two tables
    # may end in a partly used chunk of 65,536 words (at most 2 x 512 KiB / 200,000 events = 5.2 B per event)
    s = Session(preset("blog"), numeric=False)
    x, o = s.input("x", (20_000, 8)), s.output("o", (20_000, 8))
    vec = VectorUnit(s)
    for i in range(20_000):
        with GlobalHierarchy(s, "row"):
            o[i].assign(vec.copy(x[i]))
    trace = s.finish()
    assert len(trace) == 200_000
    assert 23.2 <= trace.log.nbytes() / len(trace) <= 23.2 + 5.25


# -- the compiled core (_core.pyx) against the pure-Python methods it replaces ----------------------------------
def _with_core(compiled: bool, run):
    from dsasim.traced import session, tensorcore
    session._bind_core(compiled)
    tensorcore._bind_core(compiled)
    try:
        return run()
    finally:
        session._bind_core(True)
        tensorcore._bind_core(True)


def test_compiled_core_equals_the_python_reference_on_random_schedules():
    from dsasim.traced import session
    assert session._core is not None, "the compiled core (dsasim/traced/_core.pyx) is not built: pip install -e ."
    compiled = [_random_schedule_events(seed) for seed in range(1000)]
    reference = _with_core(False, lambda: [_random_schedule_events(seed) for seed in range(1000)])
    for seed in range(1000):
        assert _events_and_types(compiled[seed][0]) == _events_and_types(reference[seed][0]), seed
        assert compiled[seed][1:] == reference[seed][1:], seed


@pytest.mark.parametrize("numeric", [False, True])
def test_compiled_core_equals_the_python_reference_on_every_demo(numeric):
    from dsasim.kernels.blog_demos import SCHEDULES
    from test_blog_demos import reduced
    schedules = [reduced(s.name) for s in SCHEDULES] + [s for s in SCHEDULES if s.name == "demo2"]
    for sched in schedules:
        def run():
            return run_schedule(sched, preset(sched.hardware), numeric=numeric)
        fast, slow = run(), _with_core(False, run)
        assert _events_and_types(fast.trace.events) == _events_and_types(slow.trace.events), sched.name
        assert fast.tensors == slow.tensors and fast.peak_sram_bytes == slow.peak_sram_bytes
        assert fast.blog_loaded_elements == slow.blog_loaded_elements
        if numeric:
            assert all(np.array_equal(fast.outputs[k], slow.outputs[k]) for k in fast.outputs)


def test_a_columnar_trace_pickles_and_keeps_growing():
    # a trace crosses processes (multiprocessing) by pickle; the copy reads the same events and appends more
    import pickle
    s = Session(tiny(word_bytes=4), numeric=False)
    x = s.input("x", (2, 3))
    with GlobalHierarchy(s, "a"):
        x[0, 0:2]
    copy = pickle.loads(pickle.dumps(s.trace))
    assert list(copy.events) == [(ENTER, 0, 0), (ALLOC, 0, 0, ((0, 1), (0, 2)), 8, 0, 8),
                                 (LOAD, 0, 0, ((0, 1), (0, 2)), 8, False), (FREE, 0, 8), (EXIT, 0, 0)]
    copy.log.enter(0, 1)
    copy.log.alloc(1, 0, ((1, 2), (0, 3)), 12, 0, 12)
    assert list(copy.events)[5:] == [(ENTER, 0, 1), (ALLOC, 1, 0, ((1, 2), (0, 3)), 12, 0, 12)]
    assert len(s.trace) == 5


@pytest.mark.parametrize("compiled", [True, False])
def test_capacity_equal_to_the_live_bytes_fits_on_both_paths(compiled):
    """3 loads of 10 B in a 30 B SRAM fit exactly (the rule is live > sram_bytes), a fourth overflows by 10 B;
    on the compiled core and on the Python reference alike."""
    def run():
        s = Session(tiny(sram_bytes=30), numeric=False)
        a = s.input("a", (8, 10))
        with GlobalHierarchy(s, "rows"):
            for i in range(3):
                a[i, :]                                # 10, 20, 30 B live: fits
            assert s.live_sram_bytes == 30
            with pytest.raises(SramOverflowError, match=r"allocating 10 B for a\[3:4, 0:10\]"):
                a[3, :]                                # 40 B > 30
    _with_core(compiled, run)


def test_columnar_log_counts_kinds_as_it_appends():
    # the timing model sizes its columns from kind_counts(), kept per append: it must equal a count of the decoded
    # events, also for a log sent through pickle (counted again from its words) and after clear()
    import collections
    import pickle
    from dsasim.cli.common import find_schedule
    from dsasim.traced.trace import EventKind
    for name in ("demo2", "demo6", "res2a-branch2b"):
        sched = find_schedule(name)
        log = run_schedule(sched, preset(sched.hardware), numeric=False).trace.log
        decoded = collections.Counter(event[0] for event in log)
        expected = [decoded.get(int(kind), 0) for kind in sorted(EventKind)]
        assert log.kind_counts() == expected and sum(expected) == len(log) > 0, name
        assert pickle.loads(pickle.dumps(log)).kind_counts() == expected, name
        log.clear()
        assert log.kind_counts() == [0] * len(expected)


def test_columnar_log_rejects_what_it_cannot_store():
    # the log stores a region as one word per dimension (start | stop << 32) and reads it back by its tensor's rank
    from dsasim.traced._events import EventLog
    log = EventLog(1)
    log.add_tensor(2)
    log.alloc(0, 0, ((0, 1), (0, 8)), 8, 0, 8)
    with pytest.raises(ValueError, match=r"bounds 0 <= start, stop < 2\*\*31"):
        log.load(0, 0, ((0, 1), (0, 1 << 31)), 8, False)
    with pytest.raises(ValueError, match="bounds 0 <= start, stop"):
        log.load(0, 0, ((-1, 1), (0, 8)), 8, False)
    with pytest.raises(ValueError, match="the log knows 1 tensors"):
        log.load(0, 1, ((0, 1), (0, 8)), 8, False)
    with pytest.raises(ValueError, match="one \\(start, stop\\) pair per dimension"):
        log.load(0, 0, ((0, 8),), 8, False)
    assert list(log) == [(log_kind("ALLOC"), 0, 0, ((0, 1), (0, 8)), 8, 0, 8)]  # nothing half-written


def log_kind(name: str) -> int:
    from dsasim.traced.trace import EventKind
    return int(EventKind[name])


def _random_numeric_run(seed: int) -> tuple[list[tuple], str, str, bytes]:
    """A random numeric schedule of vector computes (add, mul, relu, copy, dot) between whole tiles and sub-tiles of
    an input and an output, written by `+=`, `tile[k] += ...` or `assign`, in nested scopes; returns its events, the
    error that ended it (if any), its counters and the output's bytes."""
    import random
    from dsasim.errors import ScheduleError
    rng = random.Random(seed)
    # 4 vector lanes: tiles of 1 to 30 elements take 1 to 8 cycles, full and partial lane groups alike
    s = Session(dataclasses.replace(tiny(sram_bytes=1 << 20, word_bytes=4), vector_lanes=4), numeric=True)
    x = s.input("x", np.random.default_rng(seed).standard_normal((6, 5)).astype(np.float32))
    o = s.output("o", (6, 5))
    vec = VectorUnit(s)

    def span(extent: int) -> tuple[int, int]:
        a = rng.randrange(extent)
        return a, rng.randint(a + 1, extent)

    def operand(arr, h: int, w: int):
        """A tile of `arr` of shape (h, w): taken whole, or as a sub-tile of a larger tile (a view into it)."""
        r, c = rng.randrange(7 - h), rng.randrange(6 - w)
        if rng.random() < 0.5:
            return arr[r:r + h, c:c + w]
        big = arr[r:6, c:5]
        return big[0:h, 0:w]

    def body(depth: int) -> None:
        with GlobalHierarchy(s, f"d{depth}"):
            for _ in range(rng.randint(1, 6)):
                if depth < 2 and rng.random() < 0.25:
                    body(depth + 1)
                    continue
                if rng.random() < 0.7:  # mostly a scope per step, or the outputs' buffers pile up and overlap
                    with GlobalHierarchy(s, f"step{depth}"):
                        step()
                else:
                    step()

    def step() -> None:
        (r0, r1), (c0, c1) = span(6), span(5)
        h, w = r1 - r0, c1 - c0
        out = o[r0:r1, c0:c1] if rng.random() < 0.5 else o[0:r1, 0:c1][r0:r1, c0:c1]
        op = rng.choice(["add", "mul", "relu", "copy", "dot"])
        a = operand(x, h, w)
        b = rng.choice([out, out[:, :], operand(x, h, w)])
        if op == "dot":
            product = vec.dot(a, b)
            i, j = rng.randrange(h), rng.randrange(w)
            how = rng.randrange(3)
            if how == 0:
                target = out[i, j]
                target += product
            elif how == 1:
                out[i, j] += product  # Tile.__getitem__, __iadd__, then __setitem__ of the same region
            else:
                out[i, j].assign(product)
        else:
            product = getattr(vec, op)(a, b) if op in ("add", "mul") else getattr(vec, op)(a)
            how = rng.randrange(3)
            if how == 0:
                out += product
            elif how == 1:
                out[:, :] += product
            else:
                out.assign(product)

    try:
        body(0)
        error = ""
    except ScheduleError as err:
        error = f"{type(err).__name__}: {err}"
    return list(s.trace.events), error, repr(s.counters), o.data.tobytes()


def test_compiled_core_equals_the_python_reference_on_random_numeric_schedules():
    # the compiled compute path (Tile.__iadd__, VectorUnit.dot, Product.apply with the buffers' arrays and
    # sub-tile views) gives the reference's events, counters and output bits
    compiled = [_random_numeric_run(seed) for seed in range(1000)]
    reference = _with_core(False, lambda: [_random_numeric_run(seed) for seed in range(1000)])
    errors = dots = 0
    for seed in range(1000):
        assert _events_and_types(compiled[seed][0]) == _events_and_types(reference[seed][0]), seed
        assert compiled[seed][1:] == reference[seed][1:], seed
        errors += bool(reference[seed][1])
        dots += any(e[0] == COMPUTE and e[2] == "dot" for e in reference[seed][0])
    assert 50 < errors < 950 and dots > 200
