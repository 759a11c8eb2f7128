"""The timing model's rules, one hand-derived trace each: exact start and end cycles from the hardware parameters.

Every other timing test compares the fast scheduler with the simpy reference, which share one lowering (the
dependencies of `model.pyx`): a rule dropped from the lowering leaves them equal. Here each rule gets a tiny
hand-built trace whose cycles are derived by hand below, and a run without the rule would give other cycles
(stated in each docstring), so the test fails if the rule is lost.

Hardware `HW`: the blog machine with 4 B/cycle of DDR, 3 setup cycles per transfer and separate load and store
ports, so a transfer of b bytes takes 3 + ceil(b / 4) cycles (6 B: 5, 8 B: 5, 4 B: 4, 5 B: 5, 1 B: 4). COMPUTE
events carry their cycles. Notation: [s,e] is an operation's start and end cycle; ops are listed in program order
(LOAD, OPEN, COMPUTE and STORE events; OPEN takes 0 cycles).
"""

from __future__ import annotations

import dataclasses

import pytest

from dsasim import preset
from dsasim.timing import simulate
from dsasim.traced.trace import ALLOC, COMPUTE, FREE, LOAD, OPEN, STORE, TensorInfo, Trace

HW = dataclasses.replace(preset("blog"), name="rules", dram_bytes_per_cycle=4.0, dma_setup_cycles=3,
                         dram_shared_load_store=False)
HW_SHARED = dataclasses.replace(HW, dram_shared_load_store=True)


def trace(tensors: list[tuple[str, tuple[int, ...], bool]], events: list[tuple]) -> Trace:
    tr = Trace(1)
    tr.tensors = [TensorInfo(name, shape, writable) for name, shape, writable in tensors]
    tr.events = list(events)
    return tr.freeze()


def timed(tr: Trace, hw=HW) -> tuple[int, list[tuple[str, int, int]]]:
    """(cycles, [(kind, start, end) per operation in program order]); both schedulers must agree."""
    results = []
    for reference in (False, True):
        r = simulate(tr, hw, reference=reference)
        results.append((r.cycles, [(o.kind, o.start, o.end) for o in r.records()]))
    assert results[0] == results[1]
    return results[0]


def row(n: int, a: int, b: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """The region [0:1, a:b] of a (1, n) tensor (n only documents the shape)."""
    return ((0, 1), (a, b))


def tc(out: int, ins: tuple[int, ...], cycles: int) -> tuple:
    return (COMPUTE, "tensorcore", "conv2d", out, ins, 0, cycles, 0)


def vec(out: int, ins: tuple[int, ...], cycles: int) -> tuple:
    return (COMPUTE, "vector", "add", out, ins, 0, cycles, 0)


# -- transfer durations ------------------------------------------------------------------------------------------

def test_transfer_cycles_are_setup_plus_ceil_of_bytes_over_bandwidth():
    """Loads of 1, 4, 5, 8 and 6 B on the one load engine, back to back: 3 + ceil(b / 4) = 4, 4, 5, 5, 5 cycles:
    [0,4] [4,8] [8,13] [13,18] [18,23]. Then a compute of 2 cycles reads them all [23,25] and writes o (opened,
    0 cycles), whose 6 B store takes 5: [25,30]. Without the setup cost the loads would take 1, 1, 2, 2, 2; with
    floor instead of ceil 3, 4, 4, 5, 4; a transfer one cycle too long, 30 + 6 cycles in all."""
    sizes = (1, 4, 5, 8, 6)
    events = []
    for b, size in enumerate(sizes):
        events += [(ALLOC, b, 0, row(8, 0, size), size, 8 * b, size), (LOAD, b, 0, row(8, 0, size), size, False)]
    o = len(sizes)
    events += [(ALLOC, o, 1, row(6, 0, 6), 6, 64, 6), (OPEN, o, 1, row(6, 0, 6), False),
               vec(o, tuple(range(o)), 2), (STORE, o, 1, row(6, 0, 6), 6)]
    events += [(FREE, b, n) for b, n in reversed(list(enumerate(sizes + (6,))))]
    cycles, ops = timed(trace([("a", (1, 8), False), ("o", (1, 6), True)], events))
    assert ops == [("load", 0, 4), ("load", 4, 8), ("load", 8, 13), ("load", 13, 18), ("load", 18, 23),
                   ("open", 0, 0), ("vector", 23, 25), ("store", 25, 30)]
    assert cycles == 30


# -- WAR on SRAM: a load into bytes the TensorCore is still reading --------------------------------------------

def test_reuse_load_waits_for_the_tensorcore_reading_its_buffer():
    """Buffer 0 holds a[0:6]; a 20-cycle TensorCore conv reads it; then a reuse-flag load brings a[6:12] into the
    same buffer. That load must not overwrite the bytes while the conv reads them (cross-engine WAR):
      load a[0:6]  [0,5]     (6 B: 3 + 2)
      open o       [0,0]
      conv 1       [5,25]    (waits for the load)
      load a[6:12] [25,30]   (waits for conv 1, not just for the load engine, free at 5)
      conv 2       [30,50]
      store o      [50,55]   (6 B)
    Without the rule the second load would run [5,10], conv 2 [25,45], the store [45,50]: 50 cycles."""
    events = [(ALLOC, 0, 0, row(12, 0, 6), 6, 0, 6), (LOAD, 0, 0, row(12, 0, 6), 6, False),
              (ALLOC, 1, 1, row(6, 0, 6), 6, 6, 6), (OPEN, 1, 1, row(6, 0, 6), False),
              tc(1, (0,), 20),
              (LOAD, 0, 0, row(12, 6, 12), 6, True),
              tc(1, (0,), 20),
              (STORE, 1, 1, row(6, 0, 6), 6), (FREE, 1, 6), (FREE, 0, 6)]
    cycles, ops = timed(trace([("a", (1, 12), False), ("o", (1, 6), True)], events))
    assert ops == [("load", 0, 5), ("open", 0, 0), ("tensorcore", 5, 25), ("load", 25, 30), ("tensorcore", 30, 50),
                   ("store", 50, 55)]
    assert cycles == 55


@pytest.mark.parametrize("address, load2, conv2, store", [(0, (25, 30), (30, 50), (50, 55)),
                                                          (12, (5, 10), (25, 45), (45, 50))])
def test_load_into_freed_bytes_waits_for_the_tensorcore_reading_them(address, load2, conv2, store):
    """As above, but buffer 0 is freed and a new buffer 2 is allocated for a[6:12]. At address 0 it takes buffer
    0's bytes, so its load waits for the last reader of those bytes, conv 1 [5,25]: load [25,30], conv 2
    [30,50], store [50,55]: 55 cycles. At address 12 (bytes nobody used) nothing but the load engine orders it:
    load [5,10], conv 2 [25,45] (the TensorCore is busy until 25), store [45,50]: 50 cycles."""
    events = [(ALLOC, 0, 0, row(12, 0, 6), 6, 0, 6), (LOAD, 0, 0, row(12, 0, 6), 6, False),
              (ALLOC, 1, 1, row(6, 0, 6), 6, 6, 6), (OPEN, 1, 1, row(6, 0, 6), False),
              tc(1, (0,), 20),
              (FREE, 0, 6),
              (ALLOC, 2, 0, row(12, 6, 12), 6, address, 6), (LOAD, 2, 0, row(12, 6, 12), 6, False),
              tc(1, (2,), 20),
              (STORE, 1, 1, row(6, 0, 6), 6), (FREE, 2, 6), (FREE, 1, 6)]
    cycles, ops = timed(trace([("a", (1, 12), False), ("o", (1, 6), True)], events))
    assert ops == [("load", 0, 5), ("open", 0, 0), ("tensorcore", 5, 25), ("load", *load2), ("tensorcore", *conv2),
                   ("store", *store)]
    assert cycles == store[1]


def test_open_into_bytes_being_stored_waits_for_the_store():
    """A buffer's bytes are free only when its final store has read them. o[0:6] (buffer 0, address 0) is
    written by a 4-cycle conv [0,4] and stored [4,9]; after its FREE, buffer 1 (o[6:12]) is allocated at address
    0 and opened: the open waits for the store, [9,9]; its 4-cycle conv runs [9,13] and its store [13,18].
    Without the rule: open [0,0], conv [4,8], store [9,14] (behind the first store): 14 cycles."""
    events = [(ALLOC, 0, 0, row(12, 0, 6), 6, 0, 6), (OPEN, 0, 0, row(12, 0, 6), False), tc(0, (), 4),
              (STORE, 0, 0, row(12, 0, 6), 6), (FREE, 0, 6),
              (ALLOC, 1, 0, row(12, 6, 12), 6, 0, 6), (OPEN, 1, 0, row(12, 6, 12), False), tc(1, (), 4),
              (STORE, 1, 0, row(12, 6, 12), 6), (FREE, 1, 6)]
    cycles, ops = timed(trace([("o", (1, 12), True)], events))
    assert ops == [("open", 0, 0), ("tensorcore", 0, 4), ("store", 4, 9), ("open", 9, 9), ("tensorcore", 9, 13),
                   ("store", 13, 18)]
    assert cycles == 18


# -- WAR inside a buffer: a compute overwriting what another engine still reads ---------------------------------

def test_vector_write_waits_for_the_tensorcore_reading_the_buffer():
    """t is written by the vector unit (2 cycles) and read by a 20-cycle TensorCore conv into o; then the vector
    unit overwrites t and the TensorCore reads it again:
      load a [0,5], open t [0,0], vector t [5,7], open o [0,0], conv [7,27],
      vector t [27,29]   (WAR: waits for the conv reading t; the vector unit itself is free at 7)
      conv [29,49], store o [49,54] (6 B)
    Without the rule: vector t [7,9] (while the conv still reads t), conv [27,47], store [47,52]: 52 cycles."""
    events = [(ALLOC, 0, 0, row(6, 0, 6), 6, 0, 6), (LOAD, 0, 0, row(6, 0, 6), 6, False),
              (ALLOC, 1, 1, row(6, 0, 6), 6, 6, 6), (OPEN, 1, 1, row(6, 0, 6), False),
              vec(1, (0,), 2),
              (ALLOC, 2, 2, row(6, 0, 6), 6, 12, 6), (OPEN, 2, 2, row(6, 0, 6), False),
              tc(2, (1,), 20),
              vec(1, (0,), 2),
              tc(2, (1,), 20),
              (STORE, 2, 2, row(6, 0, 6), 6), (FREE, 2, 6), (FREE, 1, 6), (FREE, 0, 6)]
    cycles, ops = timed(trace([("a", (1, 6), False), ("t", (1, 6), True), ("o", (1, 6), True)], events))
    assert ops == [("load", 0, 5), ("open", 0, 0), ("vector", 5, 7), ("open", 0, 0), ("tensorcore", 7, 27),
                   ("vector", 27, 29), ("tensorcore", 29, 49), ("store", 49, 54)]
    assert cycles == 54


def test_compute_waits_for_the_store_reading_its_buffer():
    """o is written by a 4-cycle conv [0,4] and stored [4,9] (6 B); a second conv into o must not change the bytes
    the store is still reading: [9,13]; its store [13,18]. Without the rule: conv [4,8], store [9,14]: 14."""
    events = [(ALLOC, 0, 0, row(6, 0, 6), 6, 0, 6), (OPEN, 0, 0, row(6, 0, 6), False),
              tc(0, (), 4), (STORE, 0, 0, row(6, 0, 6), 6),
              tc(0, (), 4), (STORE, 0, 0, row(6, 0, 6), 6), (FREE, 0, 6)]
    cycles, ops = timed(trace([("o", (1, 6), True)], events))
    assert ops == [("open", 0, 0), ("tensorcore", 0, 4), ("store", 4, 9), ("tensorcore", 9, 13), ("store", 13, 18)]
    assert cycles == 18


# -- DDR: read-after-write and write-after-read through memory ----------------------------------------------------

@pytest.mark.parametrize("start, stop, waits", [(4, 12, True), (7, 15, True), (8, 16, False)])
def test_load_waits_for_the_store_of_the_same_ddr_bytes(start, stop, waits):
    """o[0:8] is written by a 10-cycle conv [0,10] and stored [10,15] (8 B: 3 + 2). A later load of o[start:stop]
    into another buffer at other SRAM bytes (no slot, no data dependency, its own load engine and port) must
    read what that store writes when the regions overlap: [15,20]; its 1-cycle conv [20,21], its store [21,26]:
    26 cycles. o[8:16] shares no element with o[0:8] (regions are half-open): the load runs at once, [0,5],
    conv [10,11] (the TensorCore is busy until 10), store [15,20] (behind the first store): 20 cycles. Without
    the rule the overlapping loads would give those 20 cycles too."""
    events = [(ALLOC, 0, 0, row(16, 0, 8), 8, 0, 8), (OPEN, 0, 0, row(16, 0, 8), False),
              tc(0, (), 10), (STORE, 0, 0, row(16, 0, 8), 8),
              (ALLOC, 1, 0, row(16, start, stop), 8, 8, 8), (LOAD, 1, 0, row(16, start, stop), 8, False),
              tc(1, (), 1), (STORE, 1, 0, row(16, start, stop), 8),
              (FREE, 1, 8), (FREE, 0, 8)]
    cycles, ops = timed(trace([("o", (1, 16), True)], events))
    if waits:
        assert ops == [("open", 0, 0), ("tensorcore", 0, 10), ("store", 10, 15), ("load", 15, 20),
                       ("tensorcore", 20, 21), ("store", 21, 26)]
        assert cycles == 26
    else:
        assert ops == [("open", 0, 0), ("tensorcore", 0, 10), ("store", 10, 15), ("load", 0, 5),
                       ("tensorcore", 10, 11), ("store", 15, 20)]
        assert cycles == 20


@pytest.mark.parametrize("channels", [1, 2])
def test_store_waits_for_an_earlier_load_of_the_same_ddr_bytes(channels):
    """A load of a [0,5] then a load of o[0:8] [5,10] (8 B each; with two load channels the second load is on the
    second channel, but the channels share the load port, and the first load wins the tie by program order).
    Another buffer of o[0:8], written by a 1-cycle vector op [0,1], is then stored: the store must not overwrite
    the DDR bytes the earlier load is still reading, so it waits for it: [10,15]. Without the rule: [1,6] on the
    idle store port, 10 cycles in all."""
    events = [(ALLOC, 0, 0, row(8, 0, 8), 8, 0, 8), (LOAD, 0, 0, row(8, 0, 8), 8, False),
              (ALLOC, 1, 1, row(8, 0, 8), 8, 8, 8), (LOAD, 1, 1, row(8, 0, 8), 8, False),
              (ALLOC, 2, 1, row(8, 0, 8), 8, 16, 8), (OPEN, 2, 1, row(8, 0, 8), False),
              vec(2, (), 1), (STORE, 2, 1, row(8, 0, 8), 8),
              (FREE, 2, 8), (FREE, 1, 8), (FREE, 0, 8)]
    hw = dataclasses.replace(HW, dma_load_channels=channels)
    cycles, ops = timed(trace([("a", (1, 8), False), ("o", (1, 8), True)], events), hw)
    assert ops == [("load", 0, 5), ("load", 5, 10), ("open", 0, 0), ("vector", 0, 1), ("store", 10, 15)]
    assert cycles == 15


# -- engines -----------------------------------------------------------------------------------------------------

def test_a_store_waiting_for_its_compute_does_not_hold_up_a_later_load():
    """Stores have their own engine. Shared DDR port: load a [0,5]; conv 1 (20 cycles) [5,25]; its store waits for
    it. The next load (b, later in program order) is on the load engine, free at 5, and the port is idle: [5,10].
    Conv 2 reads b: [25,26] (TensorCore busy until 25); store o [25,30], store p behind it on the store engine
    [30,35]: 35 cycles. Were stores on the load engine, the load of b would queue behind the store of o: load b
    [30,35], conv 2 [35,36], store p [36,41]."""
    events = [(ALLOC, 0, 0, row(8, 0, 8), 8, 0, 8), (LOAD, 0, 0, row(8, 0, 8), 8, False),
              (ALLOC, 1, 2, row(8, 0, 8), 8, 8, 8), (OPEN, 1, 2, row(8, 0, 8), False),
              tc(1, (0,), 20), (STORE, 1, 2, row(8, 0, 8), 8),
              (ALLOC, 2, 1, row(8, 0, 8), 8, 16, 8), (LOAD, 2, 1, row(8, 0, 8), 8, False),
              (ALLOC, 3, 3, row(8, 0, 8), 8, 24, 8), (OPEN, 3, 3, row(8, 0, 8), False),
              tc(3, (2,), 1), (STORE, 3, 3, row(8, 0, 8), 8),
              (FREE, 3, 8), (FREE, 2, 8), (FREE, 1, 8), (FREE, 0, 8)]
    tensors = [("a", (1, 8), False), ("b", (1, 8), False), ("o", (1, 8), True), ("p", (1, 8), True)]
    cycles, ops = timed(trace(tensors, events), HW_SHARED)
    assert ops == [("load", 0, 5), ("open", 0, 0), ("tensorcore", 5, 25), ("store", 25, 30), ("load", 5, 10),
                   ("open", 0, 0), ("tensorcore", 25, 26), ("store", 30, 35)]
    assert cycles == 35


def test_split_ports_let_a_store_and_a_load_overlap():
    """The trace above with a 4-cycle conv 1, so that o's store meets the load of b. Separate ports: load a
    [0,5], conv 1 [5,9], store o [9,14] on the store port while load b runs [5,10] on the load port (its engine is
    free at 5), conv 2 [10,11], store p [14,19] (behind store o on the store engine): 19 cycles. One shared port:
    load b, ready at 5, goes first; store o, ready at 9, waits for it: [10,15]; store p [15,20]: 20 cycles."""
    events = [(ALLOC, 0, 0, row(8, 0, 8), 8, 0, 8), (LOAD, 0, 0, row(8, 0, 8), 8, False),
              (ALLOC, 1, 2, row(8, 0, 8), 8, 8, 8), (OPEN, 1, 2, row(8, 0, 8), False),
              tc(1, (0,), 4), (STORE, 1, 2, row(8, 0, 8), 8),
              (ALLOC, 2, 1, row(8, 0, 8), 8, 16, 8), (LOAD, 2, 1, row(8, 0, 8), 8, False),
              (ALLOC, 3, 3, row(8, 0, 8), 8, 24, 8), (OPEN, 3, 3, row(8, 0, 8), False),
              tc(3, (2,), 1), (STORE, 3, 3, row(8, 0, 8), 8),
              (FREE, 3, 8), (FREE, 2, 8), (FREE, 1, 8), (FREE, 0, 8)]
    tensors = [("a", (1, 8), False), ("b", (1, 8), False), ("o", (1, 8), True), ("p", (1, 8), True)]
    cycles, ops = timed(trace(tensors, events), HW)
    assert ops == [("load", 0, 5), ("open", 0, 0), ("tensorcore", 5, 9), ("store", 9, 14), ("load", 5, 10),
                   ("open", 0, 0), ("tensorcore", 10, 11), ("store", 14, 19)]
    assert cycles == 19
    cycles, ops = timed(trace(tensors, events), HW_SHARED)
    assert ops == [("load", 0, 5), ("open", 0, 0), ("tensorcore", 5, 9), ("store", 10, 15), ("load", 5, 10),
                   ("open", 0, 0), ("tensorcore", 10, 11), ("store", 15, 20)]
    assert cycles == 20


def test_the_vector_unit_and_the_tensorcore_run_in_parallel():
    """Two engines for two units: after load a [0,5], a 20-cycle conv into o [5,25] and a 2-cycle vector op into
    t [5,7] both read a and run side by side; store t [7,12] (6 B), store o [25,30]. On one engine the vector op
    would queue behind the conv: [25,27], store t [27,32], store o [32,37]."""
    events = [(ALLOC, 0, 0, row(6, 0, 6), 6, 0, 6), (LOAD, 0, 0, row(6, 0, 6), 6, False),
              (ALLOC, 1, 1, row(6, 0, 6), 6, 6, 6), (OPEN, 1, 1, row(6, 0, 6), False),
              (ALLOC, 2, 2, row(6, 0, 6), 6, 12, 6), (OPEN, 2, 2, row(6, 0, 6), False),
              tc(1, (0,), 20), vec(2, (0,), 2),
              (STORE, 2, 2, row(6, 0, 6), 6), (STORE, 1, 1, row(6, 0, 6), 6),
              (FREE, 2, 6), (FREE, 1, 6), (FREE, 0, 6)]
    cycles, ops = timed(trace([("a", (1, 6), False), ("o", (1, 6), True), ("t", (1, 6), True)], events))
    assert ops == [("load", 0, 5), ("open", 0, 0), ("open", 0, 0), ("tensorcore", 5, 25), ("vector", 5, 7),
                   ("store", 7, 12), ("store", 25, 30)]
    assert cycles == 30


def test_a_session_reads_back_what_it_stored_after_the_store():
    """The DDR read-after-write rule on a trace recorded by a Session. Scope a loads x (8 B at SRAM address 0,
    [0,5]), opens y (address 8), copies x into y on the vector unit (ceil(8 / 32 lanes) = 1 cycle, [5,6]) and
    stores y at its exit ([6,11]). Scope b loads y back into address 0 (x's bytes: that slot only waits for the
    copy, done at 6) and must see the stored data: [11,16]; copies it in place [16,17]; stores it [17,22].
    Without the rule the load would run [6,11] and the run would end at 17."""
    from dsasim import GlobalHierarchy, Session, VectorUnit
    s = Session(HW, numeric=False)
    x, y = s.input("x", (1, 8)), s.output("y", (1, 8))
    vec = VectorUnit(s)
    with GlobalHierarchy(s, "a"):
        xa, ya = x[:, :], y[:, :]
        ya.assign(vec.copy(xa))
    with GlobalHierarchy(s, "b"):
        yb = y[:, :]
        yb.assign(vec.copy(yb))
    tr = s.finish()
    assert [(e[0], e[5]) for e in tr.events if e[0] == ALLOC] == [(ALLOC, 0), (ALLOC, 8), (ALLOC, 0)]  # addresses
    cycles, ops = timed(tr)
    assert ops == [("load", 0, 5), ("open", 0, 0), ("vector", 5, 6), ("store", 6, 11), ("load", 11, 16),
                   ("vector", 16, 17), ("store", 17, 22)]
    assert cycles == 22
