"""Timing of traces with memory levels below the SRAM (ALLOC_IN, STAGE, WRITEBACK): hand-derived cycles, the
dependency rules of levels, fast scheduler == simpy reference on Session schedules, malformed leveled events,
per-level figures and stall causes.

Hardware: the `blog-l1` preset. DDR: 32 B/cycle and 64 setup cycles per transfer, one port shared by loads and
stores, so a LOAD or STORE of b bytes takes 64 + ceil(b / 32). Inner levels, each fed from the SRAM: L1w (weights,
128 B/cycle), L1i (inputs, 64 B/cycle), L1acc (outputs, 64 B/cycle), each 4 setup cycles per transfer, so a STAGE
or WRITEBACK of b bytes takes 4 + ceil(b / bytes_per_cycle) on the level's engine dma-<level>.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import random

import pytest

from dsasim import GlobalHierarchy, Session, preset
from dsasim.errors import ScheduleError
from dsasim.hardware import MemoryLevel
from dsasim.timing import DeadlockError, TraceError, simulate
from dsasim.traced.tensorcore import TensorCore
from dsasim.traced.trace import (ALLOC_IN, COMPUTE, ENTER, EXIT, FREE, LOAD, OPEN, STAGE, STORE, WRITEBACK,
                                 ScopeInfo, TensorInfo, Trace)
from dsasim.view.perfetto import perfetto_events
from dsasim.view.plot import plot_sram

from test_timing_columnar import as_tuples

L1 = preset("blog-l1")
A, W, O = ((0, 8), (0, 32)), ((0, 32), (0, 24)), ((0, 8), (0, 24))  # a (8, 32), w (32, 24), o (8, 24)

# A hand-built leveled matmul o[8, 24] = a[8, 32] @ w[32, 24], whole tensors in the SRAM, one tile per level.
# Buffers: 0 a, 1 w, 2 o in the SRAM (scope 0); 3 w in L1w (scope 1); 4 a in L1i (scope 2); 5 o in L1acc (scope 3).
# Cycles, derived by hand (one DDR port, one engine per level):
#   LOAD a, 256 B:            64 + 256/32 = 72                                 [0, 72]     dma-load
#   LOAD w, 768 B:            64 + 768/32 = 88, after the load of a (program order)  [72, 160]
#   OPEN o (SRAM), 0 cycles                                                   [0, 0]
#   STAGE w -> L1w, 768 B:     4 + 768/128 = 10, after the LOAD of its source w  [160, 170]  dma-L1w
#   STAGE a -> L1i, 256 B:     4 + 256/64 = 8, after the LOAD of its source a    [72, 80]    dma-L1i
#   OPEN o (L1acc), 0 cycles                                                  [0, 0]
#   COMPUTE: ceil(32/16) x ceil(24/24) x 8 rows = 16 cycles, after both stages   [170, 186]  tensorcore
#   WRITEBACK o -> SRAM, 192 B: 4 + 192/64 = 7, after the compute              [186, 193]  dma-L1acc
#   STORE o, 192 B:           64 + 192/32 = 70, after the WRITEBACK            [193, 263]  dma-store
LEVELED = [
    (ENTER, 0, 0),  # 0
    (ALLOC_IN, 0, 0, A, 256, 0, 256, 0), (LOAD, 0, 0, A, 256, False),  # 1, 2
    (ALLOC_IN, 1, 1, W, 768, 256, 768, 0), (LOAD, 1, 1, W, 768, False),  # 3, 4
    (ALLOC_IN, 2, 2, O, 192, 1024, 192, 0), (OPEN, 2, 2, O, False),  # 5, 6
    (ENTER, 1, 0),  # 7
    (ALLOC_IN, 3, 1, W, 768, 0, 768, 1), (STAGE, 3, 1, W, 768, 1),  # 8, 9
    (ENTER, 2, 0),  # 10
    (ALLOC_IN, 4, 0, A, 256, 0, 256, 2), (STAGE, 4, 0, A, 256, 0),  # 11, 12
    (ENTER, 3, 0),  # 13
    (ALLOC_IN, 5, 2, O, 192, 0, 192, 3), (OPEN, 5, 2, O, False),  # 14, 15
    (COMPUTE, "tensorcore", "matmul", 5, (4, 3), 6144, 16, 6144),  # 16
    (WRITEBACK, 5, 2, O, 192, 2),  # 17
    (FREE, 5, 192), (EXIT, 3, 0), (FREE, 4, 256), (EXIT, 2, 0), (FREE, 3, 768), (EXIT, 1, 0),  # 18..23
    (STORE, 2, 2, O, 192),  # 24
    (FREE, 2, 192), (FREE, 1, 768), (FREE, 0, 256), (EXIT, 0, 0),  # 25..28
]


def leveled_trace(events: list[tuple]) -> Trace:
    tr = Trace(1)
    tr.tensors = [TensorInfo("a", (8, 32), False), TensorInfo("w", (32, 24), False),
                  TensorInfo("o", (8, 24), True)]
    tr.scopes = [ScopeInfo(("s",), 1), ScopeInfo(("s", "w"), 1, "L1w"), ScopeInfo(("s", "w", "i"), 1, "L1i"),
                 ScopeInfo(("s", "w", "i", "acc"), 1, "L1acc")]
    tr.events = list(events)
    return tr.freeze()


def edit(at: int, *replacement, drop: int = 1) -> list:
    """LEVELED with `drop` events from index `at` replaced by `replacement`."""
    return LEVELED[:at] + list(replacement) + LEVELED[at + drop:]


def timed(trace: Trace, hw=L1) -> list[tuple[str, str, int, int]]:
    """(engine, kind, start, end) per operation in program order; both schedulers must agree."""
    runs = []
    for reference in (False, True):
        r = simulate(trace, hw, reference=reference)
        runs.append([(o.engine, o.kind, o.start, o.end) for o in r.records()])
    assert runs[0] == runs[1]
    return runs[0]


def test_hand_derived_cycles_of_a_leveled_matmul():
    r = simulate(leveled_trace(LEVELED), L1)
    assert timed(leveled_trace(LEVELED)) == [
        ("dma-load", "load", 0, 72), ("dma-load", "load", 72, 160), ("sram", "open", 0, 0),
        ("dma-L1w", "stage", 160, 170), ("dma-L1i", "stage", 72, 80), ("sram", "open", 0, 0),
        ("tensorcore", "tensorcore", 170, 186), ("dma-L1acc-wb", "writeback", 186, 193),
        ("dma-store", "store", 193, 263)]
    assert r.cycles == 263
    assert r.engines == ("dma-load", "dma-store", "tensorcore", "vector", "dma-L1w", "dma-L1w-wb", "dma-L1i",
                         "dma-L1i-wb", "dma-L1acc", "dma-L1acc-wb")
    assert dict(r.engine_busy_cycles) == {"dma-load": 160, "dma-store": 70, "tensorcore": 16, "vector": 0,
                                          "dma-L1w": 10, "dma-L1w-wb": 0, "dma-L1i": 8, "dma-L1i-wb": 0,
                                          "dma-L1acc": 0, "dma-L1acc-wb": 7}
    # TensorCore idle [0, 170]: walking back from the compute, the STAGE of w [160, 170] it waited for, then the
    # LOAD of w [72, 160] that stage waited for, then the load of a [0, 72] ahead of it on dma-load; the drain
    # after the compute is [186, 263]. 10 + 88 + 72 + 77 = 247 = 263 - 16.
    assert dict(r.stall_cycles) == {"stage:L1w": 10, "load:w": 88, "load:a": 72, "drain": 77}
    assert sum(r.stall_cycles.values()) == r.cycles - r.engine_busy_cycles["tensorcore"]
    # roofline terms: each level's bytes over its port's bandwidth (no setup), like the DDR term
    assert dict(r.roofline_terms) == {"tensorcore": 16, "vector": 0, "ddr": 38, "L1w": 6, "L1i": 4, "L1acc": 3}
    # per level figures
    lv = {x.name: x for x in r.levels}
    assert [x.name for x in r.levels] == ["L1w", "L1i", "L1acc"]
    assert (lv["L1w"].staged_bytes, lv["L1w"].stages, lv["L1w"].busy_cycles) == (768, 1, 10)
    assert (lv["L1i"].staged_bytes, lv["L1i"].stages, lv["L1i"].busy_cycles) == (256, 1, 8)
    assert (lv["L1acc"].staged_bytes, lv["L1acc"].written_back_bytes, lv["L1acc"].writebacks) == (0, 192, 1)
    assert lv["L1w"].utilization == pytest.approx(10 / 263)
    assert [(x.peak_bytes, x.reserved_bytes) for x in r.levels] == [(768, 768), (256, 256), (192, 192)]
    assert lv["L1acc"].tensors == ("o",) and lv["L1w"].capacity_bytes == 64 * 1024
    # the SRAM figures count the SRAM's buffers only: 256 + 768 + 192
    assert r.peak_sram_bytes == r.reserved_sram_bytes == 1216 and r.sram_tensors == ("a", "w", "o")
    text = r.summary()
    assert "L1w (from SRAM): staged 768 B in 1 ops" in text and "stage:L1w 10" in text


def test_a_level_transfer_is_its_setup_plus_bytes_over_its_bandwidth():
    # L1w at 100 B/cycle and 9 setup cycles: the STAGE of 768 B takes 9 + ceil(7.68) = 17 cycles, [160, 177]
    slow = dataclasses.replace(L1, inner_levels=(dataclasses.replace(L1.inner_levels[0], bytes_per_cycle=100.0,
                                                                     setup_cycles=9), *L1.inner_levels[1:]))
    ops = timed(leveled_trace(LEVELED), slow)
    assert ops[3] == ("dma-L1w", "stage", 160, 177)
    assert ops[6] == ("tensorcore", "tensorcore", 177, 193)


def test_a_stage_waits_for_the_ddr_load_of_its_source_and_a_store_for_the_writeback():
    ops = timed(leveled_trace(LEVELED))
    load_a, load_w, stage_w, stage_a, compute, writeback, store = (ops[i] for i in (0, 1, 3, 4, 6, 7, 8))
    assert stage_a[2] == load_a[3] and stage_w[2] == load_w[3]  # the L1i/L1w engines are idle before
    assert writeback[2] == compute[3] and store[2] == writeback[3]


def test_a_writeback_waits_for_the_store_reading_its_target():
    # o's SRAM buffer is stored after the first write-back [193, 263]; a second tile is then computed in L1acc
    # (zero-filled again: buffer 6 at L1acc byte 0 waits for buffer 5's write-back to end, 193) and written back
    # into o: that write-back waits for the store reading o's contents (WAR) although dma-L1acc is idle: [263,
    # 270]; the second store follows, [270, 340].
    tail = [(STORE, 2, 2, O, 192), (ENTER, 3, 1), (ALLOC_IN, 6, 2, O, 192, 0, 192, 3), (OPEN, 6, 2, O, False),
            (COMPUTE, "tensorcore", "matmul", 6, (4, 3), 6144, 16, 6144), (WRITEBACK, 6, 2, O, 192, 2),
            (FREE, 6, 192), (EXIT, 3, 1)]
    ops = timed(leveled_trace(edit(19, LEVELED[19], *tail)))
    assert [op[1:] for op in ops[8:]] == [("store", 193, 263), ("open", 193, 193), ("tensorcore", 193, 209),
                                          ("writeback", 263, 270), ("store", 270, 340)]


def test_a_compute_writing_a_stage_source_waits_for_the_stage():
    # a vector op writes o's SRAM buffer after o[0:8, 0:24] was staged from it into L1acc (staged, not opened:
    # the vector op comes first and writes o): the second vector op waits for the STAGE reading the buffer (WAR).
    # vector [0, 30] writes o; STAGE o -> L1acc 4 + 3 = 7 [30, 37]; the second vector op [37, 67].
    def vec(out, ins, cycles):
        return (COMPUTE, "vector", "add", out, ins, 0, cycles, 0)
    events = [(ENTER, 0, 0), (ALLOC_IN, 0, 2, O, 192, 0, 192, 0), (OPEN, 0, 2, O, False), vec(0, (), 30),
              (ENTER, 3, 0), (ALLOC_IN, 1, 2, O, 192, 0, 192, 3), (STAGE, 1, 2, O, 192, 0),
              vec(0, (), 30), (FREE, 1, 192), (EXIT, 3, 0), (STORE, 0, 2, O, 192), (FREE, 0, 192), (EXIT, 0, 0)]
    tr = leveled_trace(events)
    tr.scopes = [ScopeInfo(("s",), 1), ScopeInfo(("x",), 1), ScopeInfo(("y",), 1),
                 ScopeInfo(("s", "acc"), 1, "L1acc")]
    ops = timed(tr)
    assert [op[1:] for op in ops] == [("open", 0, 0), ("vector", 0, 30), ("stage", 30, 37), ("vector", 37, 67),
                                      ("store", 67, 137)]


# -- Session schedules ------------------------------------------------------------------------------------------

def example(ways_i: int = 1) -> Trace:
    """The brief's example: c[32, 48] = a[32, 40] @ b[40, 48], tiles of 8 rows x 24 columns."""
    M, K, N = 32, 40, 48
    s = Session(L1, numeric=False)
    a, b, c = s.input("a", (M, K)), s.input("b", (K, N), role="weight"), s.output("c", (M, N))
    tc = TensorCore(s)
    with GlobalHierarchy(s, "sram"):
        a[0:M, 0:K], b[0:K, 0:N], c[0:M, 0:N]
        for n0 in range(0, N, 24):
            with GlobalHierarchy(s, "w", level="L1w"):
                w = b[0:K, n0:n0 + 24]
                for m0 in range(0, M, 8):
                    with GlobalHierarchy(s, "i", level="L1i", ways=ways_i):
                        x = a[m0:m0 + 8, 0:K]
                        with GlobalHierarchy(s, "acc", level="L1acc"):
                            o = c[m0:m0 + 8, n0:n0 + 24]
                            o += tc.matmul(x, w)
    return s.finish()


def assert_same(trace: Trace, hw=L1):
    fast, ref = simulate(trace, hw), simulate(trace, hw, reference=True)
    assert fast.op_start.tolist() == ref.op_start.tolist()
    assert fast.op_end.tolist() == ref.op_end.tolist()
    assert list(fast.records()) == list(ref.records())
    assert json.dumps(fast.to_json("x")) == json.dumps(ref.to_json("x"))
    assert sum(fast.stall_cycles.values()) == fast.cycles - fast.engine_busy_cycles["tensorcore"]
    assert fast.cycles >= fast.roofline_cycles
    return fast


def test_the_example_is_timed_the_same_by_both_schedulers_and_both_read_paths():
    tr = example()
    r = assert_same(tr)
    assert r.to_json("x") == simulate(as_tuples(tr), L1).to_json("x")
    assert r.cycles == 617
    kinds = [o.kind for o in r.records()]
    assert kinds.count("stage") == 10 and kinds.count("writeback") == 8 and kinds.count("store") == 1
    # every idle TensorCore cycle has a cause; some are the inner levels' transfers
    assert {"stage:L1i", "stage:L1w"} <= set(r.stall_cycles)


def test_an_inner_slot_is_reused_after_its_last_reader_unless_two_way():
    # 1-way L1i: the input tile of step m + 1 takes the bytes of step m's: its STAGE waits for the compute that
    # reads them. 2-way: it uses the other copy and is staged during that compute.
    for ways, waits in ((1, True), (2, False)):
        r = simulate(example(ways), L1)
        stages = [o for o in r.records() if o.engine == "dma-L1i"]
        computes = [o for o in r.records() if o.kind == "tensorcore"]
        assert (stages[1].start == computes[0].end) is waits
        assert (stages[1].start < computes[0].start) is not waits
    assert simulate(example(2), L1).cycles < simulate(example(1), L1).cycles


def random_leveled(seed: int):
    """A random matmul schedule on blog-l1 (random sizes, tiles, loop order, scope nesting, 1- or 2-way inner
    scopes, K split or not), or None when the Session refuses it."""
    rng = random.Random(seed)
    M, K, N = rng.randint(4, 40), rng.randint(4, 48), rng.randint(4, 48)
    tile = {"m": rng.randint(1, M), "k": rng.randint(1, K), "n": rng.randint(1, N)}
    extent = {"m": M, "k": K, "n": N}
    hw = dataclasses.replace(L1, dma_setup_cycles=rng.choice([0, 8, 64]), dram_shared_load_store=rng.random() < 0.5,
                             dma_load_channels=rng.randint(1, 2))
    s = Session(hw, numeric=False)
    a, b, c = s.input("a", (M, K)), s.input("b", (K, N), role="weight"), s.output("c", (M, N))
    tc = TensorCore(s)
    order = rng.sample(["m", "n", "k"], 3)
    deps = {"w": ("k", "n"), "i": ("m", "k"), "acc": ("m", "n")}
    level = {"w": "L1w", "i": "L1i", "acc": "L1acc"}
    depth = {name: max(order.index(v) for v in vs) for name, vs in deps.items()}
    ways = {name: rng.choice([1, 2]) for name in deps}
    at: dict[str, int] = {}
    tiles: dict = {}

    def box(var: str):
        return slice(at[var], min(at[var] + tile[var], extent[var]))

    def access(name: str):
        if name == "w":
            return b[box("k"), box("n")]
        if name == "i":
            return a[box("m"), box("k")]
        return c[box("m"), box("n")]

    def loop(d: int) -> None:
        if d == 3:
            tiles["acc"] += tc.matmul(tiles["i"], tiles["w"])
            return
        var = order[d]
        for start in range(0, extent[var], tile[var]):
            at[var] = start
            here = [name for name in rng.sample(list(deps), 3) if depth[name] == d]
            with contextlib.ExitStack() as stack:
                for name in here:
                    stack.enter_context(GlobalHierarchy(s, name, level=level[name], ways=ways[name]))
                    tiles[name] = access(name)
                loop(d + 1)
    try:
        with GlobalHierarchy(s, "sram"):
            if rng.random() < 0.5:  # whole tensors in the SRAM first, or as the levels ask for them
                a[0:M, 0:K], b[0:K, 0:N], c[0:M, 0:N]
            loop(0)
        return s.finish(), hw
    except ScheduleError:
        return None


def test_fast_scheduler_equals_simpy_reference_on_random_leveled_schedules():
    compared, stages, writebacks = 0, 0, 0
    for seed in range(200):
        made = random_leveled(seed)
        if made is None:
            continue
        tr, hw = made
        assert tr.multi_level()
        r = assert_same(tr, hw)
        kinds = [o.kind for o in r.records()]
        stages += kinds.count("stage")
        writebacks += kinds.count("writeback")
        compared += 1
        if compared == 25:
            break
    assert compared >= 20 and stages > 100 and writebacks > 20


# -- malformed leveled traces ----------------------------------------------------------------------------------

SMALL_L1W = dataclasses.replace(L1, inner_levels=(dataclasses.replace(L1.inner_levels[0], capacity_bytes=512),
                                                  *L1.inner_levels[1:]))
# (events, hardware, index of the bad event, fragment of the message)
BAD_LEVELED = {
    "stage from a freed buffer": (edit(9, (FREE, 1, 768), LEVELED[9]), L1, 10,
                                  "source buffer 1 (w) is used after its FREE"),
    "stage from another tensor's buffer": (edit(9, (STAGE, 3, 1, W, 768, 0)), L1, 9,
                                           "source buffer 0 holds 'a', not 'w'"),
    "stage from a buffer not of the parent level": (edit(12, (STAGE, 4, 0, A, 256, 3)), L1, 12,
                                                    "source buffer 3 lives in L1w, but buffer 4 lives in L1i, whose "
                                                    "parent level is SRAM"),
    "stage of a region the source does not hold": (  # the SRAM buffer of a holds only its first 16 columns
        edit(2, (LOAD, 0, 0, ((0, 8), (0, 16)), 128, False)), L1, 12,
        "the region [0:8, 0:32] is not inside the region [0:8, 0:16] that source buffer 0 holds"),
    "stage bytes": (edit(12, (STAGE, 4, 0, A, 255, 0)), L1, 12, "nbytes is 255, but the region holds 256 B"),
    "stage into an SRAM buffer": (edit(12, (STAGE, 0, 0, A, 256, 4)), L1, 12, "buffer 0 is an SRAM buffer"),
    "writeback of an input": (edit(17, (WRITEBACK, 4, 0, A, 256, 0)), L1, 17,
                              "'a' is an input (read-only): nothing is written back to it"),
    "writeback of another region": (edit(17, (WRITEBACK, 5, 2, ((0, 4), (0, 24)), 96, 2)), L1, 17,
                                    "a WRITEBACK writes back the region its buffer holds, [0:8, 0:24]"),
    "writeback into a non-parent buffer": (edit(17, (WRITEBACK, 5, 2, O, 192, 5)), L1, 17,
                                           "target buffer 5 lives in L1acc"),
    "load into an inner buffer": (edit(9, (LOAD, 3, 1, W, 768, False)), L1, 9,
                                  "LOAD into buffer 3, which lives in L1w: LOAD, STORE and SLIDE move data between "
                                  "DDR and the SRAM"),
    "store of an inner buffer": (edit(17, (STORE, 5, 2, O, 192)), L1, 17, "STORE of buffer 5, which lives in L1acc"),
    "alloc_in into a closed scope": (edit(11, (ALLOC_IN, 4, 0, A, 256, 0, 256, 3)), L1, 11,
                                     "ALLOC_IN into scope 3 ('s/w/i/acc'), which is not open"),
    "alloc_in into an unknown scope": (edit(11, (ALLOC_IN, 4, 0, A, 256, 0, 256, 9)), L1, 11,
                                       "scope id 9 is not one of the trace's 4 scopes"),
    "alloc_in out of order": (edit(11, (ALLOC_IN, 7, 0, A, 256, 0, 256, 2)), L1, 11,
                              "ALLOC of buffer 7, expected buffer 4"),
    "a level over capacity": (LEVELED, SMALL_L1W, 8, "L1w overflows: 0 B live + 768 B charged here > its capacity "
                                                     "512 B"),
    "exit before freeing an outer scope's inner buffer": (edit(7, (ENTER, 1, 0), (ENTER, 2, 0),
                                                               (ALLOC_IN, 3, 1, W, 768, 0, 768, 1), (EXIT, 2, 0),
                                                               (EXIT, 1, 0), drop=1)[:12], L1, 11,
                                                          "the scope ends while buffer 3 (w) it allocated is live"),
}


@pytest.mark.parametrize("reference", [False, True], ids=["fast", "simpy"])
@pytest.mark.parametrize("case", list(BAD_LEVELED), ids=list(BAD_LEVELED))
def test_a_malformed_leveled_event_is_a_trace_error_naming_it(case, reference):
    events, hw, index, fragment = BAD_LEVELED[case]
    with pytest.raises(TraceError) as info:
        simulate(leveled_trace(events), hw, reference=reference)
    text = str(info.value)
    assert fragment in text
    assert text.startswith(f"trace event {index} ")


def test_a_scope_in_a_level_the_hardware_lacks_is_a_trace_error():
    with pytest.raises(TraceError, match="trace scope 's/w' lives in memory level 'L1w', but hardware 'blog' has "
                                         "the levels \\['SRAM'\\]"):
        simulate(leveled_trace(LEVELED), preset("blog"))


def test_a_stage_skipping_a_level_is_a_trace_error():
    # L0w hangs below L1w: a buffer of L0w is staged from an L1w buffer, not straight from the SRAM
    deep = dataclasses.replace(L1, inner_levels=(*L1.inner_levels, MemoryLevel(
        "L0w", capacity_bytes=1024, bytes_per_cycle=256.0, holds=("weight",), parent="L1w", setup_cycles=1)))
    events = edit(8, (ALLOC_IN, 3, 1, W, 768, 0, 768, 1), (STAGE, 3, 1, W, 768, 1), drop=2)
    tr = leveled_trace(events)
    tr.scopes[1] = ScopeInfo(("s", "w"), 1, "L0w")
    with pytest.raises(TraceError, match="trace event 9 STAGE.*source buffer 1 lives in SRAM, but buffer 3 lives in "
                                         "L0w, whose parent level is L1w"):
        simulate(tr, deep)


# -- results ----------------------------------------------------------------------------------------------------

def test_leveled_results_are_deterministic():
    tr = example()
    texts = [json.dumps(simulate(tr, L1).to_json("x", ways=None)) for _ in range(2)]
    texts.append(json.dumps(simulate(tr, L1, reference=True).to_json("x", ways=None)))
    assert texts[0] == texts[1] == texts[2]
    doc = json.loads(texts[0])
    assert list(doc["levels"]) == ["L1w", "L1i", "L1acc"]
    assert list(doc["levels"]["L1w"]) == ["parent", "engine", "capacity_bytes", "staged_bytes", "written_back_bytes",
                                          "stages", "writebacks", "busy_cycles", "utilization", "peak_bytes",
                                          "reserved_bytes", "occupancy_bytes_per_window"]
    assert doc["levels"]["L1acc"]["written_back_bytes"] == 32 * 48
    # a one-level result has no "levels" key
    assert "levels" not in simulate(leveled_one_level(), preset("blog")).to_json("x")


def leveled_one_level() -> Trace:
    s = Session(preset("blog"), numeric=False)
    a, b, c = s.input("a", (8, 16)), s.input("b", (16, 24)), s.output("c", (8, 24))
    with GlobalHierarchy(s, "t"):
        o = c[0:8, 0:24]
        o += TensorCore(s).matmul(a[0:8, 0:16], b[0:16, 0:24])
    return s.finish()


def test_perfetto_and_plots_show_each_level(tmp_path):
    r = simulate(example(), L1)
    events = perfetto_events(r, "example")
    threads = [e["args"]["name"] for e in events if e.get("name") == "thread_name"]
    assert threads[-6:] == ["dma-L1w", "dma-L1w-wb", "dma-L1i", "dma-L1i-wb", "dma-L1acc", "dma-L1acc-wb"]
    counters = {e["name"] for e in events if e["ph"] == "C"}
    assert {"SRAM occupancy (B)", "L1w occupancy (B)", "L1i occupancy (B)", "L1acc occupancy (B)"} <= counters
    peaks = {name: max(sum(e["args"].values()) for e in events if e.get("name") == name)
             for name in ("SRAM occupancy (B)", "L1w occupancy (B)", "L1acc occupancy (B)")}
    assert peaks == {"SRAM occupancy (B)": r.peak_sram_bytes, "L1w occupancy (B)": r.levels[0].peak_bytes,
                     "L1acc occupancy (B)": r.levels[2].peak_bytes}
    stages = [e for e in events if e.get("cat") == "stage"]
    assert len(stages) == 10 and stages[0]["name"].startswith("stage ")
    path = plot_sram(r, tmp_path / "sram.png")
    assert path.stat().st_size > 1000


@pytest.mark.parametrize("reference", [False, True], ids=["fast", "simpy"])
def test_an_inner_slot_reused_while_live_is_a_deadlock_naming_the_stage(reference):
    # a second L1i buffer of a (5) takes buffer 4's bytes (L1i address 0) while buffer 4 is live, and one compute
    # reads both: the STAGE of 5 waits for 4's FREE, which waits for the compute, which waits for the STAGE.
    tail = [(ALLOC_IN, 5, 0, A, 256, 0, 256, 2), (STAGE, 5, 0, A, 256, 0), (ENTER, 3, 0),
            (ALLOC_IN, 6, 2, O, 192, 0, 192, 3), (OPEN, 6, 2, O, False),
            (COMPUTE, "tensorcore", "matmul", 6, (4, 5, 3), 6144, 16, 6144), (WRITEBACK, 6, 2, O, 192, 2),
            (FREE, 6, 192), (EXIT, 3, 0), (FREE, 5, 256)]
    with pytest.raises(DeadlockError, match="cycle") as info:
        simulate(leveled_trace(edit(13, *tail, drop=7)), L1, reference=reference)
    assert any("stage of a[0:8, 0:32] (buffer 5, trace event 14) on dma-L1i" in s for s in info.value.stuck)
