"""GEMM chains (C = A·B, E = C·D with C on chip): the nest as data, Chimera's DV / MU by hand, the closed form
against the trace, the kernel against torch, timing against simpy, and the search against brute force."""

from __future__ import annotations

import dataclasses
import itertools
import json
import random

import pytest

from dsasim import preset
from dsasim.architect.problems.chain_catalogue import is_chain, parse_chain
from dsasim.architect.search.fused_search import search_chain
from dsasim.architect.search.gemm_chain import (GEMM_ORDERS, GemmChain, GemmChainNest, analyze_gemm_chain,
                                         evaluate_gemm_chain_space, parse_gemm_chain)
from dsasim.cli import main
from dsasim.timing import simulate
from dsasim.kernels.fused_kernel import count_fused, fused_schedule, run_fused
from tests.helpers import assert_schedule_matches_torch

BLOG = preset("blog")
NARROW = dataclasses.replace(preset("blog-fp32"), vector_lanes=7, tensorcore_in_channels=3, tensorcore_out_channels=5)


def trace_figures(nest: GemmChainNest, hw=BLOG) -> tuple:
    c = count_fused(nest, hw, enforce_capacity=False)
    return (c.loaded_bytes, c.stored_bytes, c.rmw_bytes, c.loads, c.stores, c.opens, c.macs, c.padded_macs,
            c.tensorcore_cycles, c.vector_cycles, c.peak_sram_bytes,
            {x: c.per_tensor[x].loaded_bytes for x in "ABDE"}, c.per_tensor["C"].loaded_bytes)


def model_figures(nest: GemmChainNest, hw=BLOG) -> tuple:
    a = analyze_gemm_chain(nest, hw)
    return (a.loaded_bytes, a.stored_bytes, a.rmw_bytes, a.loads, a.stores, a.opens, a.macs, a.padded_macs,
            a.tensorcore_cycles, a.vector_cycles, a.peak_sram_bytes, a.per_tensor_loaded, 0)


# ---------------------------------------------------------------------------------------------- by hand
def test_every_loop_tiled_equals_chimera_by_hand():
    """M=32, L=48, K=32, N=48, tiles 16/24/16/24 (2 trips each), order m, l, k | n, 1-byte words.

    Chimera (order mlkn): DM_A = MK * L/TL = 32*32*2 = 2048, DM_B = KL * M/TM = 32*48*2 = 3072,
    DM_D = NL * M/TM = 48*48*2 = 4608, DM_E = MN * L/TL = 32*48*2 = 3072: DV = 12,800.
    MU = max(TM TK + TK TL + TM TL, TM TL + TL TN + TM TN) = max(256 + 384 + 384, 384 + 576 + 384) = 1344.
    The trace: the same loads of A, B, D; E stored 3072 B, of which the second visit of each tile (l's second
    trip) re-reads its 1536 B of partial sums; C never leaves the chip (opened 2 x 2 times)."""
    chain = GemmChain(32, 48, 32, 48)
    nest = GemmChainNest(chain, "ml", {"m": 16, "l": 24, "k": 16, "n": 24})
    a = analyze_gemm_chain(nest, BLOG)
    assert a.chimera_dv_bytes == 2048 + 3072 + 4608 + 3072 == 12_800
    assert a.chimera_mu_bytes == 1344
    assert a.per_tensor_loaded == {"A": 2048, "B": 3072, "D": 4608, "E": 1536}
    assert a.stored_bytes == 3072 and a.loaded_bytes == 2048 + 3072 + 4608 + 1536
    assert a.loaded_bytes - a.rmw_bytes + a.stored_bytes == a.chimera_dv_bytes
    assert a.peak_sram_bytes == a.chimera_mu_bytes
    assert a.opens == 2 * 2 + 2 * 2  # C per (m, l) tile; E per distinct (m, n) tile, first visit
    assert model_figures(nest) == trace_figures(nest)


def test_a_one_trip_loop_lets_a_scope_keep_what_chimera_reloads():
    """The chain above with TK = K = 32 (k: one trip). A (m, k) is then indexed by no tiled loop inside m: it is
    staged once per m tile and kept across l: MK = 1024 B, where Chimera's formula still counts MK * L/TL = 2048.
    B (k, l) is staged per (m, l): KL * M/TM = 3072 as before. SRAM: C 16*24 = 384, A 16*32 = 512 and B 32*24 = 768
    (staged above the k loop), D and E tiles in GEMM 2's scope 24*24 + 16*24 = 960: 2624 B (Chimera: 1664)."""
    chain = GemmChain(32, 48, 32, 48)
    nest = GemmChainNest(chain, "ml", {"m": 16, "l": 24, "k": 32, "n": 24})
    assert (nest.depth("A"), nest.depth("B"), nest.depth("D"), nest.depth("E")) == (1, 2, 3, 3)
    a = analyze_gemm_chain(nest, BLOG)
    assert a.per_tensor_loaded["A"] == 1024 and a.per_tensor_loaded["B"] == 3072
    assert a.chimera_dv_bytes == 16 * 32 * 2 * 2 * 1 + 3072 + 4608 + 3072  # DF_A x m, l, k trips (2, 2, 1)
    assert a.peak_sram_bytes == 384 + 512 + 768 + 960 == 2624 and a.chimera_mu_bytes == 1664
    assert model_figures(nest) == trace_figures(nest)


def test_untiled_n_keeps_e_across_l_when_m_is_outside():
    """TN = N: E (m, n) is indexed by no tiled loop inside m. Order ml keeps E's m-row across l: stored once,
    no read-modify-write. Order lm re-visits each E tile per l trip: stored 2x, re-read once."""
    chain = GemmChain(32, 48, 32, 48)
    tiles = {"m": 16, "l": 24, "k": 16, "n": 48}
    ml, lm = (analyze_gemm_chain(GemmChainNest(chain, o, tiles), BLOG) for o in ("ml", "lm"))
    assert (ml.stored_bytes, ml.rmw_bytes) == (32 * 48, 0)
    assert (lm.stored_bytes, lm.rmw_bytes) == (2 * 32 * 48, 32 * 48)
    for order in GEMM_ORDERS:
        nest = GemmChainNest(chain, order, tiles)
        assert model_figures(nest) == trace_figures(nest)


def test_whole_tensors_move_exactly_the_compulsory_traffic():
    chain = GemmChain(20, 30, 10, 40, relu=True)
    a = analyze_gemm_chain(GemmChainNest(chain), BLOG)
    assert a.traffic_bytes == a.compulsory_bytes == 20 * 10 + 10 * 40 + 40 * 30 + 20 * 30
    assert a.rmw_bytes == 0 and a.intermediate_peak_bytes == 20 * 40


# ---------------------------------------------------------------------------------------------- model = trace
def random_nest(rng: random.Random) -> GemmChainNest:
    chain = GemmChain(*(rng.randint(1, 40) for _ in range(4)), relu=rng.random() < 0.5)
    tiles = {d: rng.randint(1, chain.extents[d]) for d in "mlkn"}
    return GemmChainNest(chain, rng.choice(GEMM_ORDERS), tiles, rng.choice([1, 2]))


@pytest.mark.parametrize("hw", [BLOG, NARROW], ids=["blog", "narrow-units-fp32"])
def test_model_equals_trace_on_random_nests(hw):
    rng = random.Random(20261125)
    for _ in range(500):
        nest = random_nest(rng)
        assert model_figures(nest, hw) == trace_figures(nest, hw), nest


@pytest.mark.parametrize("order,tiles,ways,relu", [
    ("ml", {"m": 16, "l": 24, "k": 16, "n": 24}, 1, False),
    ("lm", {"m": 7, "l": 20, "k": 9, "n": 11}, 2, True),   # ragged everywhere, ping-pong
    ("ml", {"m": 5, "l": 50, "k": 13, "n": 30}, 1, True),  # l and n whole: E kept, no rmw
    ("lm", {"m": 40, "l": 17, "k": 20, "n": 8}, 2, False),  # m whole: A staged once at the top
])
def test_gemm_chain_matches_torch(order, tiles, ways, relu):
    chain = GemmChain(40, 30, 20, 50, relu=relu)
    nest = GemmChainNest(chain, order, tiles, ways)
    result = assert_schedule_matches_torch(fused_schedule(nest), BLOG, reduction=20 + 50)
    assert result.loaded_bytes == analyze_gemm_chain(nest, BLOG).loaded_bytes


def test_c_never_touches_ddr_in_the_trace():
    from dsasim.traced.trace import LOAD, STORE
    nest = GemmChainNest(GemmChain(24, 24, 32, 48), "lm", {"m": 8, "l": 16, "k": 16, "n": 8})
    result = run_fused(nest, BLOG)
    c_id = next(i for i, t in enumerate(result.trace.tensors) if t.name == "C")
    moved = [e for e in result.trace.events if e[0] in (LOAD, STORE) and e[2] == c_id]
    assert moved == [] and result.trace.tensors[c_id].on_chip


def test_timing_equals_the_simpy_reference_and_respects_each_engine():
    nest = GemmChainNest(GemmChain(48, 48, 32, 96, relu=True), "ml", {"m": 16, "l": 48, "k": 16, "n": 24}, ways=2)
    result = run_fused(nest, BLOG)
    fast, ref = simulate(result.trace, BLOG), simulate(result.trace, BLOG, reference=True)
    assert fast.cycles == ref.cycles > 0
    a = analyze_gemm_chain(nest, BLOG)
    assert fast.cycles >= max(a.dma_cycles, a.tensorcore_cycles, a.vector_cycles)


# ---------------------------------------------------------------------------------------------- search
def all_candidates(space) -> list:
    """Every nest of a space's grid, each analysed by the scalar model."""
    hw = space.hardware
    return [(n, analyze_gemm_chain(n, hw)) for n in (space.nest(i) for i in itertools.product(*map(range, space.shape)))]


# one test per chain (each a minute on a busy worker), so xdist runs the two side by side
@pytest.mark.parametrize("chain, hw", [(GemmChain(40, 30, 20, 50, relu=True), BLOG),
                                       (GemmChain(33, 10, 17, 25), NARROW)], ids=["relu-blog", "narrow"])
def test_space_fronts_give_the_scalar_best_under_every_capacity(chain, hw):
    """The chunked evaluation (small chunks, so that fronts from many chunks merge) keeps exactly what a scan of
    every candidate by the scalar model picks: least traffic (ties: estimated cycles, then peak), least estimated
    cycles (ties: traffic, then peak) and Chimera's least DV (ties: MU), for capacities across the range."""
    space = evaluate_gemm_chain_space(chain, hw, chunk_nests=500)
    every = all_candidates(space)
    assert len(every) == space.evaluations
    peaks = sorted({a.peak_sram_bytes for _, a in every})
    for cap in [peaks[0] - 1, *peaks[:: max(1, len(peaks) // 12)], peaks[-1]]:
        fits = [(n, a) for n, a in every if a.peak_sram_bytes <= cap]
        for objective, key in (("traffic", lambda a: (a.traffic_bytes, a.estimated_cycles, a.peak_sram_bytes)),
                               ("cycles", lambda a: (a.estimated_cycles, a.traffic_bytes, a.peak_sram_bytes))):
            best = space.best(cap, objective)
            if not fits:
                assert best is None
                continue
            assert key(analyze_gemm_chain(best, hw)) == min(key(a) for _, a in fits), (chain, cap, objective)
        chimera = [(a.chimera_dv_bytes, a.chimera_mu_bytes) for _, a in every if a.chimera_mu_bytes <= cap]
        pick = space.chimera_choice(cap)
        assert (pick is None) == (not chimera)
        if pick is not None:
            a = analyze_gemm_chain(pick, hw)
            assert (a.chimera_dv_bytes, a.chimera_mu_bytes) == min(chimera)


def test_search_finds_the_least_traffic_of_a_traced_brute_force():
    """Every nest of a small chain (all tiles 1..extent, both orders, 1 or 2 ways) traced: the least traffic of
    those that fit equals the search's best fused traffic (its tile candidates keep the smallest tile of each trip
    count, which dominates in traffic)."""
    chain = GemmChain(5, 3, 3, 4)
    cap = 24
    hw = dataclasses.replace(BLOG, sram_bytes=cap)
    best = None
    for order, ways in itertools.product(GEMM_ORDERS, (1, 2)):
        for tm, tl, tk, tn in itertools.product(range(1, 6), range(1, 5), range(1, 4), range(1, 4)):
            nest = GemmChainNest(chain, order, {"m": tm, "l": tl, "k": tk, "n": tn}, ways)
            c = count_fused(nest, hw, enforce_capacity=False)
            if c.peak_sram_bytes <= cap:
                best = min(best or c.loaded_bytes + c.stored_bytes, c.loaded_bytes + c.stored_bytes)
    result = search_chain(chain, hw, cap)
    assert result.fused is not None and result.fused.traffic_bytes == best
    assert best > chain.compulsory_bytes(1)  # 24 B cannot hold the whole-tensor nest


def test_search_compares_fused_with_layer_by_layer():
    """Unlimited SRAM: fused moves exactly the compulsory traffic; layer by layer stores C and loads it back."""
    chain = parse_chain("gemm-chain:m=64,n=32,k=32,l=96")
    result = search_chain(chain, BLOG, 1 << 20)
    assert result.fused.traffic_bytes == chain.compulsory_bytes(1) == 64 * 32 + 32 * 96 + 96 * 32 + 64 * 32
    lbl = result.totals(result.layer_by_layer)
    assert lbl["traffic_bytes"] >= chain.compulsory_bytes(1) + 2 * 64 * 96
    # with 1 MiB each layer's bound is its compulsory traffic: (A, B in, C out) + (C, D in, E out)
    assert result.layer_by_layer_bound_bytes == (64 * 32 + 32 * 96 + 64 * 96) + (64 * 96 + 96 * 32 + 64 * 32)
    assert lbl["traffic_bytes"] >= result.layer_by_layer_bound_bytes
    assert result.label(result.best) == "[1 2]"


def test_cli_search_gemm_chain_json(tmp_path, capsys):
    path = tmp_path / "g.json"
    assert main(["search", "gemm-chain:m=256,n=64,k=64,l=256", "--sram", "32KiB", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "all fused" in out and "layer by layer" in out and "scope gemm1" in out
    data = json.loads(path.read_text())
    part = data["parts"][0]
    assert data["fused"] is True and part["fused_nest"]["order"] in GEMM_ORDERS and part["cycles_source"] == \
        "simulated"
    nest = GemmChainNest.from_json(part["fused_nest"])
    a = analyze_gemm_chain(nest, BLOG)
    assert (part["loaded_bytes"], part["stored_bytes"], part["rmw_bytes"], part["chimera_dv_bytes"]) == (
        a.loaded_bytes, a.stored_bytes, a.rmw_bytes, a.chimera_dv_bytes)
    assert data["traffic_bytes"] <= data["layer_by_layer_bytes"]
    assert data["compulsory_bytes"] == 256 * 64 + 64 * 256 + 256 * 64 + 256 * 64


# ---------------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("spec,message", [
    ("gemm-chain:m=4,n=4,k=4", r"missing \['l'\]"),
    ("gemm-chain:m=4,n=4,k=4,l=4,q=1", r"unknown key\(s\) \['q'\]"),
    ("gemm-chain:m=4,n=4,k=4,l=x", "not key=non-negative integer"),
    ("gemm-chain:m=0,n=4,k=4,l=4", "m must be an integer >= 1"),
    ("gemm-chain:m=4,n=4,k=4,l=4,relu=2", "relu must be 0 or 1"),
    ("gemm-chain", "write gemm-chain:m=..,n=..,k=..,l=.."),
])
def test_bad_gemm_chain_specs(spec, message):
    assert is_chain(spec)
    with pytest.raises(ValueError, match=message):
        parse_gemm_chain(spec)


def test_bad_nests_say_what_and_why():
    chain = GemmChain(8, 8, 8, 8)
    with pytest.raises(ValueError, match="the shared loops m and l go outside"):
        GemmChainNest(chain, "mk")
    with pytest.raises(ValueError, match=r"tiles\['l'\] = 9: a tile holds 1 .. 8"):
        GemmChainNest(chain, "ml", {"l": 9})
    with pytest.raises(ValueError, match=r"unknown loop\(s\) \['oh'\]"):
        GemmChainNest(chain, "ml", {"oh": 2})
    with pytest.raises(ValueError, match="ways must be an integer >= 1"):
        GemmChainNest(chain, "ml", ways=0)


def test_a_chain_too_large_for_exact_counts_is_refused_not_wrapped():
    chain = GemmChain(10 ** 6, 10 ** 6, 10 ** 6, 10 ** 6)  # 1e18 MACs per GEMM: counts past int64
    with pytest.raises(ValueError, match="too large for exact counts"):
        analyze_gemm_chain(GemmChainNest(chain), BLOG)
    with pytest.raises(ValueError, match="too large for exact counts"):
        evaluate_gemm_chain_space(chain, BLOG)


def test_cli_bad_gemm_chain_is_exit_2(capsys):
    assert main(["search", "gemm-chain:m=4,n=4,k=4"]) == 2
    assert "missing ['l']" in capsys.readouterr().err


def test_nest_json_round_trips():
    nest = GemmChainNest(GemmChain(40, 30, 20, 50, relu=True), "lm", {"m": 7, "l": 20}, 2)
    assert GemmChainNest.from_json(json.loads(json.dumps(nest.to_json()))) == nest


# ---------------------------------------------------------------------------------------------- SRAM sweeps
# one test per chain (each about a minute on a busy worker), so xdist runs the two side by side
@pytest.mark.parametrize("kind", ["gemm", "conv"])
def test_chain_sweep_equals_a_search_per_size_and_never_worsens(kind):
    """One evaluation for all sizes (search fronts, the fused space once) gives, at every size, the traffic of a
    separate `search_chain` at that size; traffic never rises with SRAM and never drops below compulsory."""
    from dsasim.architect.problems.chain import ConvChain
    from dsasim.architect.nests.loopnest import ConvProblem
    from dsasim.architect.studies.chain_target import ChainTarget
    from dsasim.architect.studies.sweep import sweep_chain
    conv_chain = ConvChain([ConvProblem(1, 8, 8, 12, 12, 3, padding=1), ConvProblem(1, 8, 16, 12, 12, 1)],
                           relu=True)
    cases = {"gemm": (GemmChain(96, 48, 32, 120, relu=True), [512, 4096, 65536]),
             "conv": (conv_chain, [256, 2048, 16384])}
    chain, sizes = cases[kind]
    result = sweep_chain(ChainTarget(chain.name, chain, BLOG), sizes)
    traffic = [p.traffic_bytes for p in result.choices]
    for size, point in zip(sizes, result.choices):
        alone = search_chain(chain, BLOG, size)
        want = alone.totals(alone.best, alone.fold(alone.best))
        assert point.traffic_bytes == (want["traffic_bytes"] if want else None), (chain, size)
        assert point.layer_by_layer_bytes == alone.totals(alone.layer_by_layer)["traffic_bytes"]
    known = [t for t in traffic if t is not None]
    assert known == sorted(known, reverse=True) and known[-1] >= chain.compulsory_bytes(1)
    assert result.choices[-1].traffic_bytes == chain.compulsory_bytes(1)  # everything fits at the largest size


def test_cli_sweep_sram_over_a_chain(tmp_path, capsys):
    first, second, plot = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "s.png"
    for path in (first, second):
        assert main(["sweep-sram", "gemm-chain:m=128,n=64,k=64,l=192", "--sizes", "4KiB:64KiB:3", "--json", str(path),
                     "--plot", str(plot), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "layer by layer B" in out and "[1 2]" in out
    assert first.read_bytes() == second.read_bytes() and plot.stat().st_size > 0
    data = json.loads(first.read_text())
    assert [p["sram_bytes"] for p in data["points"]] == [4096, 16384, 65536]
    assert all(p["cycles_source"] == "simulated" for p in data["points"][-1]["parts"])
    assert data["points"][-1]["traffic_bytes"] == data["points"][-1]["compulsory_bytes"]


def test_chimera_choice_is_reported_and_the_honest_search_moves_no_more(tmp_path):
    """The search reports Chimera's pick; the honest search's best never moves more than the trace of that pick
    when the pick fits (its MU leaves out what a scope keeps above the private loops)."""
    chain = GemmChain(96, 48, 32, 120)
    space = evaluate_gemm_chain_space(chain, BLOG)
    for cap in (1024, 8192, 65536):
        pick = space.chimera_choice(cap)
        a = analyze_gemm_chain(pick, BLOG)
        result = search_chain(chain, BLOG, cap)
        assert result.chimera == pick and a.chimera_mu_bytes <= cap
        if a.peak_sram_bytes <= cap:
            assert result.fused.traffic_bytes <= a.traffic_bytes
    assert space.chimera_choice(2) is None and space.chimera_choice(3) is not None  # MU of 1-element tiles: 3 B
    path = tmp_path / "c.json"
    assert main(["search", "gemm-chain:m=96,n=48,k=32,l=120", "--sram", "8KiB", "--confirm", "0", "--json",
                 str(path)]) == 0
    data = json.loads(path.read_text())["chimera"]
    assert data["chimera_mu_bytes"] <= 8192 and GemmChainNest.from_json(data["fused_nest"]) == \
        search_chain(chain, BLOG, 8192).chimera
