"""Memory levels below the SRAM in the traced memory model (`dsasim.traced.levels`): staging, write-back,
per-level counters, capacity and errors; the `LevelNest` kernel against the per-level analytic model."""

from __future__ import annotations

import dataclasses
import math
import random
import zlib

import numpy as np
import pytest

from dsasim import (CoherenceError, GlobalHierarchy, RegionError, Session, SramOverflowError, TensorCore, Workload,
                    bind_tensors, preset)
from dsasim.architect.model.hierarchy import analyze_levels
from dsasim.hardware import MemoryLevel
from dsasim.traced import trace as trace_module
from dsasim.traced.schedule import Schedule
from dsasim.kernels.loopnest_kernel import execute_levels, levelnest_schedule, loopnest_workload
from tests.helpers import assert_schedule_matches_torch
from tests.test_hierarchy import L1, SHARED, WEIGHTS_ONLY, random_level_nest

KIB = 1024
M, K, N = 32, 40, 48


def matmul_workload() -> Workload:
    import torch

    return Workload("mm", inputs={"a": (M, K), "b": (K, N)}, outputs={"c": (M, N)},
                    reference=lambda a, b: {"c": torch.matmul(a, b)}, roles={"b": "weight"})


def matmul_body(k_chunk: int = K, reuse_acc: bool = False):
    """c = a @ b on blog-l1: a, b and c whole in SRAM; per 24 columns the weights in L1w; per 8 rows the
    inputs in L1i and the outputs in L1acc, for each chunk of k (a second chunk reloads the partial sums).
    reuse_acc: one L1acc scope per column tile, its buffer reused (reuse flag) for each row tile."""

    def body(s: Session, a, b, c) -> None:
        tc = TensorCore(s)
        with GlobalHierarchy(s, "sram"):
            a[0:M, 0:K]
            b[0:K, 0:N]
            c[0:M, 0:N]
            for n0 in range(0, N, 24):
                for k0 in range(0, K, k_chunk):
                    with GlobalHierarchy(s, "w", level="L1w"):
                        w = b[k0:k0 + k_chunk, n0:n0 + 24]
                        if reuse_acc:
                            with GlobalHierarchy(s, "acc", level="L1acc"):
                                for m0 in range(0, M, 8):
                                    with GlobalHierarchy(s, "i", level="L1i"):
                                        x = a[m0:m0 + 8, k0:k0 + k_chunk]
                                        o = c[m0:m0 + 8, n0:n0 + 24, True]
                                        o += tc.matmul(x, w)
                            continue
                        for m0 in range(0, M, 8):
                            with GlobalHierarchy(s, "i", level="L1i"):
                                x = a[m0:m0 + 8, k0:k0 + k_chunk]
                                with GlobalHierarchy(s, "acc", level="L1acc"):
                                    o = c[m0:m0 + 8, n0:n0 + 24]
                                    o += tc.matmul(x, w)

    return body


def run_matmul(numeric: bool = False, **kwargs) -> Session:
    s = Session(L1, numeric=numeric)
    tensors = bind_tensors(s, matmul_workload(), matmul_workload().make_inputs(0) if numeric else None)
    matmul_body(**kwargs)(s, **tensors)
    s.finish()
    return s


def level_figures(s: Session, level: str) -> tuple[int, ...]:
    t = s.counters.levels[level]
    return t.loaded_bytes, t.stored_bytes, t.rmw_bytes, t.loads, t.stores, t.hits, t.opens, t.peak_bytes


def test_blog_l1_matmul_by_hand():
    """One byte per element. SRAM: a (32x40) and b (40x48) loaded once, c (32x48) opened and stored once.
    L1w: 2 column tiles x 40x24 = 2 x 960 B. L1i: 2 x 4 tiles of 8x40 = 8 x 320 B. L1acc: 8 tiles of 8x24 =
    192 B, each zero-filled (nothing wrote them yet) and written back once: 8 x 192 B."""
    s = run_matmul()
    c = s.counters
    assert (c.loaded_bytes, c.loads, c.stored_bytes, c.stores, c.opens) == (1280 + 1920, 2, 1536, 1, 1)
    assert c.peak_sram_bytes == 1280 + 1920 + 1536
    assert level_figures(s, "L1w") == (1920, 0, 0, 2, 0, 0, 0, 960)
    assert level_figures(s, "L1i") == (2560, 0, 0, 8, 0, 0, 0, 320)
    assert level_figures(s, "L1acc") == (0, 1536, 0, 0, 8, 0, 8, 192)
    assert s.counters.levels["L1acc"].per_tensor["c"]["stored_bytes"] == 1536


def test_partial_sums_are_staged_back_and_counted_as_read_modify_writes():
    """k in two chunks of 20: each 8x24 output tile is zero-filled in L1acc for the first chunk and staged back
    (its partial sums, 192 B, a read-modify-write) for the second; written back after each: 16 x 192 B. The
    SRAM sees none of it: c is still opened once and stored once, no RMW at the SRAM."""
    s = run_matmul(k_chunk=20)
    assert level_figures(s, "L1acc") == (8 * 192, 16 * 192, 8 * 192, 8, 16, 0, 8, 192)
    assert level_figures(s, "L1w")[:4] == (4 * 480, 0, 0, 4)
    assert level_figures(s, "L1i")[:4] == (16 * 160, 0, 0, 16)
    c = s.counters
    assert (c.stored_bytes, c.rmw_bytes, c.opens) == (1536, 0, 1)


def test_a_reused_accumulator_writes_back_before_it_is_reloaded():
    """One L1acc buffer per column tile, reused for each row tile: written back at each reuse and at the exit
    (4 per column tile, 192 B each), so the same bytes as one buffer per tile; one buffer at a time (192 B)."""
    s = run_matmul(reuse_acc=True)
    assert level_figures(s, "L1acc") == (0, 1536, 0, 0, 8, 0, 8, 192)
    allocs = [e for e in s.trace.events if e[0] == trace_module.ALLOC_IN
              and s.trace.scopes[e[7]].level == "L1acc"]
    assert len(allocs) == 2


@pytest.mark.parametrize("k_chunk, reuse_acc", [(K, False), (20, False), (K, True)])
def test_staged_schedules_match_torch(k_chunk, reuse_acc):
    schedule = Schedule("mm-l1", matmul_workload(), matmul_body(k_chunk, reuse_acc), hardware="blog-l1")
    assert_schedule_matches_torch(schedule, L1, reduction=K)


def test_the_trace_names_each_level_transfer():
    """STAGE names the SRAM buffer it copies, WRITEBACK the SRAM buffer it writes; every allocation is an
    ALLOC_IN naming its scope; the columnar log gives the same events as the reference list."""
    s = run_matmul()
    tr = s.trace
    events = list(tr.events)
    assert tr.multi_level() and not any(e[0] == trace_module.ALLOC for e in events)
    owner = {e[1]: tr.scopes[e[7]].level for e in events if e[0] == trace_module.ALLOC_IN}
    tensor_of = {e[1]: e[2] for e in events if e[0] == trace_module.ALLOC_IN}
    stages = [e for e in events if e[0] == trace_module.STAGE]
    backs = [e for e in events if e[0] == trace_module.WRITEBACK]
    assert len(stages) == 10 and len(backs) == 8
    for e in stages + backs:
        assert owner[e[1]] != "SRAM" and owner[e[5]] == "SRAM" and tensor_of[e[5]] == e[2]
    assert sum(e[4] for e in stages) == 1920 + 2560 and sum(e[4] for e in backs) == 1536
    assert [s.path[-1] + ":" + s.level for s in tr.scopes] == ["sram:SRAM", "w:L1w", "i:L1i", "acc:L1acc"]


def test_the_columnar_log_equals_the_reference_list_on_a_leveled_run(monkeypatch):
    columnar = list(run_matmul(k_chunk=20).trace.events)
    monkeypatch.setattr(trace_module, "COLUMNAR", False)
    assert list(run_matmul(k_chunk=20).trace.events) == columnar


def test_one_level_traces_are_not_multi_level():
    s = Session(preset("blog"), numeric=False)
    x = s.input("x", (4, 4))
    with GlobalHierarchy(s, "t"):
        x[0:4, 0:4]
    assert not s.finish().multi_level()


@pytest.mark.parametrize("hw", [L1, SHARED, WEIGHTS_ONLY], ids=lambda h: h.name)
def test_the_level_kernel_equals_the_per_level_model_on_random_nests(hw):
    """The traced run of a random `LevelNest` moves, per level, the bytes `analyze_levels` gives in closed form
    (loads, write-backs, transfers, read-modify-writes; the SRAM's DDR traffic too), and its peak equals the
    model's for a level holding one tensor (the model's is an upper bound for a shared level)."""
    rng = random.Random(zlib.crc32(hw.name.encode()))
    for _ in range(40):
        nest = random_level_nest(rng, hw)
        model = analyze_levels(nest)
        s = Session(hw, numeric=False, enforce_capacity=False)
        execute_levels(nest, s, bind_tensors(s, loopnest_workload(nest.problem), None))
        s.finish()
        c = s.counters
        for lv in model.levels:
            if lv.level == "SRAM":
                got = (c.loaded_bytes, c.stored_bytes, c.loads + c.stores, c.rmw_bytes, c.peak_sram_bytes)
            else:
                t = c.levels[lv.level]
                got = (t.loaded_bytes, t.stored_bytes, t.loads + t.stores, t.rmw_bytes, t.peak_bytes)
            want = (lv.loaded_bytes, lv.stored_bytes, lv.transfers, lv.rmw_bytes, lv.peak_bytes)
            assert got[:4] == want[:4], (lv.level, nest.format())
            if len(lv.holds) == 1 or lv.level == "SRAM":
                assert got[4] == want[4], (lv.level, nest.format())
            else:
                assert got[4] <= want[4], (lv.level, nest.format())


@pytest.mark.parametrize("hw", [L1, SHARED, WEIGHTS_ONLY], ids=lambda h: h.name)
def test_random_level_nests_match_torch(hw):
    rng = random.Random(1 + zlib.crc32(hw.name.encode()))
    for _ in range(4):
        nest = random_level_nest(rng, hw)
        p = nest.problem
        reduction = math.prod(p.extents[d] for d in p.dims if d not in {a.dim for a in p.output.axes})
        assert_schedule_matches_torch(levelnest_schedule(nest), hw, reduction=reduction, enforce_capacity=False)


DEEP = dataclasses.replace(preset("blog"), name="deep", inner_levels=(
    MemoryLevel("L1", 64 * KIB, 64.0, holds=("input", "weight", "output")),
    MemoryLevel("L0", 4 * KIB, 128.0, holds=("weight",), parent="L1"),
))


def test_a_level_below_an_inner_level_stages_through_it():
    """On SRAM -> L1 -> L0 (weights): a weight tile taken in an L0 scope is staged into L1 first (in L1's
    innermost scope), then into L0; a second L0 tile inside the same L1 box hits L1."""
    s = Session(DEEP, numeric=True)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((8, 16), dtype=np.float32), rng.standard_normal((16, 48), dtype=np.float32)
    A, B, C = s.input("a", a), s.input("b", b, role="weight"), s.output("c", (8, 48))
    tc = TensorCore(s)
    with GlobalHierarchy(s, "sram"):
        with GlobalHierarchy(s, "l1", level="L1"):
            B[0:16, 0:48]  # L1 holds all of b: staged once from the SRAM (itself loaded from DDR)
            x = A[0:8, 0:16]
            for n0 in (0, 24):
                with GlobalHierarchy(s, "l0", level="L0"):
                    w = B[0:16, n0:n0 + 24]
                    o = C[0:8, n0:n0 + 24]
                    o += tc.matmul(x, w)
    s.finish()
    assert np.allclose(s.tensors["c"].data, a @ b, atol=1e-5)
    assert level_figures(s, "L0")[:4] == (2 * 16 * 24, 0, 0, 2)
    l1 = s.counters.levels["L1"]
    assert (l1.per_tensor["b"]["loaded_bytes"], l1.per_tensor["b"]["hits"]) == (16 * 48, 2)
    assert (l1.per_tensor["c"]["stored_bytes"], l1.per_tensor["c"]["opens"]) == (2 * 8 * 24, 2)
    assert s.counters.per_tensor["b"].loaded_bytes == 16 * 48


# -- errors ----------------------------------------------------------------------------------------------------
def staged_session(**kwargs):
    s = Session(L1, numeric=False, **kwargs)
    return s, s.input("a", (M, K)), s.input("b", (K, N), role="weight"), s.output("c", (M, N))


def test_unknown_levels_and_too_many_ways_are_refused():
    s, *_ = staged_session()
    with pytest.raises(ValueError, match=r"level 'L9' is not a memory level of hardware 'blog-l1'.*'L1w'"):
        GlobalHierarchy(s, "x", level="L9")
    blog = Session(preset("blog"), numeric=False)
    with pytest.raises(ValueError, match=r"level 'L1w' is not a memory level of hardware 'blog'; its levels: "
                                         r"\['SRAM'\]"):
        GlobalHierarchy(blog, "x", level="L1w")
    with pytest.raises(ValueError, match="3 ways at level L1w, which allows at most 2"):
        with GlobalHierarchy(s, "x", level="L1w", ways=3):
            pass
    with pytest.raises(ValueError, match="level 'L9' is not a memory level"):
        s.scope("y", level="L9")
    assert s.scope("z", level="L1i").level == "L1i" and s.scope("z", level="SRAM").level is None


def test_roles_are_checked():
    s = Session(L1, numeric=False)
    with pytest.raises(ValueError, match="role must be \"input\" or \"weight\""):
        s.input("w", (4, 4), role="output")
    with pytest.raises(ValueError, match=r"roles name \['c'\], which are not inputs"):
        Workload("w", inputs={"a": (1,)}, outputs={"c": (1,)}, reference=lambda a: {}, roles={"c": "weight"})


def test_the_tensorcore_reads_the_innermost_level_only():
    s, a, b, c = staged_session()
    tc = TensorCore(s)
    with GlobalHierarchy(s, "sram"):
        w = b[0:16, 0:24]
        with GlobalHierarchy(s, "i", level="L1i"):
            x = a[0:8, 0:16]
            with GlobalHierarchy(s, "acc", level="L1acc"):
                o = c[0:8, 0:24]
                with pytest.raises(ValueError, match=r"operand b\[0:16, 0:24\] is in SRAM, but on blog-l1 the "
                                                     r"TensorCore reads weights from L1w only"):
                    o += tc.matmul(x, w)


def test_a_weight_declared_as_an_input_is_named():
    s = Session(L1, numeric=False)
    a, b, c = s.input("a", (8, 16)), s.input("b", (16, 24)), s.output("c", (8, 24))
    tc = TensorCore(s)
    with GlobalHierarchy(s, "sram"):
        with GlobalHierarchy(s, "i", level="L1i"):
            x, w = a[0:8, 0:16], b[0:16, 0:24]
            with GlobalHierarchy(s, "acc", level="L1acc"):
                o = c[0:8, 0:24]
                with pytest.raises(ValueError, match=r"b is its weight operand, but its role is 'input'; declare "
                                                     r"it with s.input\('b', data, role='weight'\)"):
                    o += tc.matmul(x, w)


def test_a_level_overflow_names_the_level_and_its_buffers():
    """L1acc holds 16 KiB: 2 ways x 8 x 48 B (768 B) live, then 2 x 192 x 48 B (18,432 B) more do not fit."""
    s = Session(L1, numeric=False)
    c = s.output("c", (200, 48))
    with GlobalHierarchy(s, "sram"):
        c[0:200, 0:48]
        with GlobalHierarchy(s, "acc", level="L1acc", ways=2):
            c[0:8, 0:48]
            with pytest.raises(SramOverflowError, match=r"(?s)L1acc overflow: allocating 18,432 B for c\[8:200, "
                                                        r"0:48\] \(2-way buffered\).*19,200 B > its capacity 16,384 B "
                                                        r"\(16 KiB\)"
                                                        r".*c\[0:8, 0:48\]: 768 B in scope sram/acc"):
                c[8:200, 0:48]


def test_staging_needs_an_open_parent_scope():
    s, a, b, c = staged_session()
    with pytest.raises(RegionError, match=r"b\[0:16, 0:24\] is staged into L1w in scope w, but no scope of its "
                                          r"parent level SRAM is open"):
        with GlobalHierarchy(s, "w", level="L1w"):
            b[0:16, 0:24]


def test_reading_around_a_modified_inner_copy_is_a_coherence_error():
    s, a, b, c = staged_session()
    tc = TensorCore(s)
    with GlobalHierarchy(s, "sram"):
        with GlobalHierarchy(s, "w", level="L1w"):
            w = b[0:16, 0:24]
            with GlobalHierarchy(s, "i", level="L1i"):
                x = a[0:8, 0:16]
                with GlobalHierarchy(s, "acc", level="L1acc"):
                    o = c[0:8, 0:24]
                    o += tc.matmul(x, w)
                    with GlobalHierarchy(s, "inner-sram"):
                        assert c[0:4, 0:24].buffer is o.buffer  # inside the modified copy: a hit there
                        with pytest.raises(CoherenceError, match=r"c\[0:16, 0:24\] is read while buffer \d+ in "
                                                                 r"L1acc holds modified data"):
                            c[0:16, 0:24]


def test_a_scope_site_keeps_its_level():
    s, a, b, c = staged_session()
    with GlobalHierarchy(s, "sram"):
        with pytest.raises(ValueError, match="entered at level L1w before and now at L1i"):
            for level in ("L1w", "L1i"):
                with GlobalHierarchy(s, "t", level=level):
                    pass


def test_traffic_by_scope_names_each_level():
    """Staged and written-back bytes land in the scope that moved them, with its level."""
    from dsasim.view.report import traffic_by_scope

    rows = {(r.scope, r.tensor, r.level): r for r in traffic_by_scope(run_matmul().trace)}
    assert (rows["sram", "a", "SRAM"].loaded_bytes, rows["sram", "c", "SRAM"].stored_bytes) == (1280, 1536)
    assert rows["sram/w", "b", "L1w"].loaded_bytes == 1920 and rows["sram/w", "b", "L1w"].instances == 2
    assert rows["sram/w/i", "a", "L1i"].loaded_bytes == 2560
    acc = rows["sram/w/i/acc", "c", "L1acc"]
    assert (acc.stored_bytes, acc.stores, acc.loaded_bytes) == (1536, 8, 0)


# -- the command line ----------------------------------------------------------------------------------------
def test_the_command_line_times_a_leveled_schedule(capsys):
    """`dsasim simulate` times the registered res2a-branch2b-l1 with a DMA engine per level; `dsasim demo
    --per-tensor` prints the per-level table, whose bytes are the per-level model's; a one-level schedule on
    blog-l1 fails (exit 1) saying where the TensorCore reads its operands."""
    from dsasim.cli import main
    from dsasim.kernels.loopnest_kernel import res2a_l1_nest

    model = {lv.level: lv for lv in analyze_levels(res2a_l1_nest()).levels}
    assert main(["simulate", "res2a-branch2b-l1"]) == 0
    out = capsys.readouterr().out
    assert "dma-L1i" in out and "dma-L1acc" in out
    assert f"L1i (from SRAM): staged {model['L1i'].loaded_bytes:,} B in {model['L1i'].transfers:,} ops" in out
    assert main(["demo", "--only", "res2a-branch2b-l1", "--per-tensor", "res2a-branch2b-l1", "--count-only",
                 "--jobs", "1", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert f"L1w    weight                             {model['L1w'].loaded_bytes:,}" in out
    assert "written back" in out and f"{model['L1acc'].stored_bytes:,}" in out
    assert main(["simulate", "demo6", "--hardware", "blog-l1"]) == 1
    err = capsys.readouterr().err
    assert "LevelError: tensorcore.conv2d: operand image" in err and "reads inputs from L1i only" in err


def test_the_level_models_cycles_track_the_timing_simulator():
    """A 2048 -> 512 1x1 conv on 8x8 pixels on blog-l1, the search's best traffic nest (every inner buffer
    2-way) and its variants with some buffers 1-way: the per-level model's cycles (TensorCore + the exposed
    transfers of 1-way buffers, or the slowest level) are within 5 % of the timing simulator's on each. Where the
    accumulator is 1-way its partial sums move in and out with the TensorCore waiting, and the TensorCore alone
    is more than 40 % short. (The 2-way nest also needs the timing's region rule: a partial sum is staged back
    once its own tile is home, not after every tile written back into the same SRAM buffer.)"""
    from dsasim.architect.model.hierarchy import InnerTiling, LevelNest
    from dsasim.architect.search.level_search import search_levels
    from dsasim.timing import simulate
    from dsasim.kernels.loopnest_kernel import blog_conv, run_levelnest

    n = search_levels(blog_conv(ic=2048, oc=512, h=8, w=8), L1, objective="traffic").best.nest
    assert set(dict(n.inner.ways).values()) == {2}
    for one_way in ({}, {"weight": 1}, {"output": 1}, {"output": 1, "weight": 1, "image": 1}):
        nest = LevelNest(n.outer, InnerTiling(n.inner.order, n.inner_tiles, dict(n.inner.stage),
                                              {**dict(n.inner.ways), **one_way}), L1)
        model = analyze_levels(nest)
        timed = simulate(run_levelnest(nest).trace, L1).cycles
        assert abs(timed / model.cycles - 1) < 0.05, (one_way, timed, model.cycles)
        if "output" in one_way:
            assert timed > 1.4 * max([model.tensorcore_cycles] + [lv.cycles for lv in model.levels])


def test_search_on_levels_does_not_start_a_trace_of_hours(capsys):
    """A 20,000^3 matmul's best two-level nest has 1.6 G TensorCore steps (20,000^3 / (m x n x k inner tile)):
    at ~115 us a step its trace would take ~51 hours, so `dsasim search` says so instead of starting it."""
    from dsasim.architect.search.level_search import LEVEL_TRACE_SECONDS_PER_STEP
    from dsasim.cli import main

    assert main(["search", "gemm:m=20000,n=20000,k=20000", "--hardware", "blog-l1"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("traced"))
    steps = int(line.split(" nest of ")[1].split(" TensorCore")[0].replace(",", ""))
    assert steps * LEVEL_TRACE_SECONDS_PER_STEP > 600 and "skipped" in line and "--force traces it" in line


class _NarrowHost:
    """A Session seen only through the `LevelHost` protocol: any other attribute is an AttributeError."""

    __slots__ = ("session",)

    def __init__(self, session: Session) -> None:
        self.session = session

    def __getattr__(self, name: str):
        from dsasim.traced.level_host import LEVEL_HOST_MEMBERS
        if name not in LEVEL_HOST_MEMBERS:
            raise AttributeError(f"LevelState used the session's {name!r}, which is not in the LevelHost protocol")
        return getattr(self.session, name)


@pytest.mark.parametrize("k_chunk, reuse_acc", [(20, False), (K, True)])
def test_level_state_needs_only_the_level_host_members(monkeypatch, k_chunk, reuse_acc):
    """Every LevelState method that takes the session gets it wrapped so that only the LevelHost members are
    reachable; the staged matmuls (partial sums staged back; a reused accumulator written back) still give the
    figures derived by hand in the two tests above, numerically checked."""
    import inspect

    from dsasim.traced.levels import LevelState

    for name, method in list(vars(LevelState).items()):
        if callable(method) and list(inspect.signature(method).parameters)[1:2] == ["session"]:
            def narrowed(self, session, *args, _method=method, **kwargs):
                return _method(self, session if type(session) is _NarrowHost else _NarrowHost(session), *args,
                               **kwargs)
            monkeypatch.setattr(LevelState, name, narrowed)
    s = run_matmul(numeric=True, k_chunk=k_chunk, reuse_acc=reuse_acc)
    if reuse_acc:
        assert level_figures(s, "L1acc") == (0, 1536, 0, 0, 8, 0, 8, 192)
    else:
        assert level_figures(s, "L1acc") == (8 * 192, 16 * 192, 8 * 192, 8, 16, 0, 8, 192)
    data = s.tensors
    np.testing.assert_allclose(data["c"].data, data["a"].data @ data["b"].data, rtol=1e-5, atol=1e-4)  # (float32)


# -- the compiled core's level paths (_core.pyx: a hit below the SRAM, a compute on level tiles) against the
# pure-Python reference (levels.py, sram_access.py, tensorcore.py) -------------------------------------------------
def _level_run(hw, nest, numeric: bool, compiled: bool):
    """(events with their types, counters, level traffic in insertion order, outputs) of one traced run of `nest`,
    a vector epilogue on each final output tile (as a network's fused ReLU), on the compiled core or the reference."""
    from dsasim import VectorUnit
    from dsasim.traced import session as session_module
    from dsasim.traced import tensorcore as tensorcore_module

    session_module._bind_core(compiled)
    tensorcore_module._bind_core(compiled)
    try:
        s = Session(hw, numeric=numeric, enforce_capacity=False)
        workload = loopnest_workload(nest.problem)
        tensors = bind_tensors(s, workload, workload.make_inputs(0) if numeric else None)
        vector = VectorUnit(s)
        execute_levels(nest, s, tensors, epilogue=lambda out: out.assign(vector.relu(out)))
        trace = s.finish()
    finally:
        session_module._bind_core(True)
        tensorcore_module._bind_core(True)
    events = list(trace.events)
    levels = {name: (t.to_json(), list(t.per_tensor.items()), list(t.operand_elements.items()))
              for name, t in s.counters.levels.items()}
    outputs = {name: arr.data.copy() for name, arr in s.tensors.items() if numeric and arr.writable}
    return events, [tuple(map(type, e)) for e in events], s.counters, levels, outputs


@pytest.mark.parametrize("hw", [L1, SHARED, WEIGHTS_ONLY], ids=lambda h: h.name)
def test_the_compiled_level_path_equals_the_python_reference_on_random_nests(hw):
    """Every event (and its field types), every counter (per tensor, per level, the operands' reads and writes per
    level, in the order they were first counted) and, in numeric mode, every output value of a random LevelNest's
    trace are the same through the compiled core's level paths and through the pure-Python reference."""
    from dsasim.architect.search.level_search import estimate_level_trace_work

    rng = random.Random(7 + zlib.crc32(hw.name.encode()))
    nests = [random_level_nest(rng, hw) for _ in range(40)]  # the 12 smallest of 40 (TensorCore steps): seconds
    nests.sort(key=lambda nest: estimate_level_trace_work(nest).traced_operations)
    for i, nest in enumerate(nests[:12]):
        numeric = i % 4 == 0
        fast, slow = (_level_run(hw, nest, numeric, compiled) for compiled in (True, False))
        assert fast[:4] == slow[:4], nest.format()
        for name in slow[4]:
            assert np.array_equal(fast[4][name], slow[4][name]), (name, nest.format())


@pytest.mark.parametrize("k_chunk, reuse_acc", [(20, False), (K, True)])
def test_the_compiled_level_path_equals_the_python_reference_on_staged_matmuls(k_chunk, reuse_acc):
    """The hand-written staged matmuls (partial sums staged back; a reused accumulator: the reuse flag, which the
    compiled path hands to Python) trace the same events and counts on both paths."""
    from dsasim.traced import session as session_module
    from dsasim.traced import tensorcore as tensorcore_module

    runs = []
    for compiled in (True, False):
        session_module._bind_core(compiled)
        tensorcore_module._bind_core(compiled)
        try:
            s = run_matmul(numeric=True, k_chunk=k_chunk, reuse_acc=reuse_acc)
        finally:
            session_module._bind_core(True)
            tensorcore_module._bind_core(True)
        runs.append((list(s.trace.events), s.counters, s.tensors["c"].data.copy()))
    assert runs[0][:2] == runs[1][:2]
    assert np.array_equal(runs[0][2], runs[1][2])


@pytest.mark.parametrize("compiled", [True, False])
def test_a_hit_below_the_sram_skips_a_stale_copy(compiled):
    """In L1acc, c[0:8, 0:12] opens (zero-fill) in an outer scope as buffer 1, then c[0:8, 0:24] in an inner scope
    as buffer 2 (not contained in buffer 1, which is clean: no coherence error), which a compute writes: buffer 1's
    elements are now stale (a write into one inner copy makes the others stale), so c[0:8, 0:12] read again hits
    buffer 2, the one holding the new values, not the lower-id buffer 1 (buffer 0: c's SRAM copy), on the compiled
    path as on the reference."""
    from dsasim import VectorUnit
    from dsasim.traced import session as session_module
    from dsasim.traced import tensorcore as tensorcore_module

    session_module._bind_core(compiled)
    tensorcore_module._bind_core(compiled)
    try:
        s = Session(L1, numeric=False)
        c, vector = s.output("c", (8, 24)), VectorUnit(s)
        with GlobalHierarchy(s, "sram"):
            c[0:8, 0:24]
            with GlobalHierarchy(s, "outer", level="L1acc"):
                assert c[0:8, 0:12].buffer.id == 1
                with GlobalHierarchy(s, "inner", level="L1acc"):
                    o = c[0:8, 0:24]
                    o.assign(vector.relu(o))
                    again = c[0:8, 0:12]
        s.finish()
    finally:
        session_module._bind_core(True)
        tensorcore_module._bind_core(True)
    assert (o.buffer.id, again.buffer.id) == (2, 2)
    assert s.counters.levels["L1acc"].per_tensor["c"]["hits"] == 1


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("hw", [preset("blog"), L1], ids=lambda h: h.name)
def test_a_start_stop_pair_past_the_extent_is_clamped(hw, compiled):
    """x[(0, 2), (1, 100)] of a (2, 3) input reads columns 1 and 2 only, as the blog's tiles that run past the edge
    do: the region is ((0, 2), (1, 3)), 4 elements (blog's word: 1 byte), on the compiled core as on the reference,
    on one level and below the SRAM (an input in L1i)."""
    from dsasim.traced import session as session_module

    session_module._bind_core(compiled)
    try:
        s = Session(hw, numeric=False)
        x = s.input("x", (2, 3))
        with GlobalHierarchy(s, "sram"):
            whole = x[(0, 2), (0, 3)]
            if hw.inner_levels:
                with GlobalHierarchy(s, "i", level="L1i"):
                    tile = x[(0, 2), (1, 100)]
            else:
                tile = x[(0, 2), (1, 100)]
        s.finish()
    finally:
        session_module._bind_core(True)
    assert whole.region == ((0, 2), (0, 3)) and tile.region == ((0, 2), (1, 3))
    assert s.counters.loaded_bytes == 6 and s.counters.blog_loaded_elements == 6 + 4
    if hw.inner_levels:
        assert s.counters.levels["L1i"].loaded_bytes == 4
