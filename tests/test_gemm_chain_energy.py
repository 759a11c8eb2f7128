"""A GEMM chain's fused space ranked by energy and EDP (`GemmChainSpace.best` with ENERGY / EDP): against a brute
force over every grid nest priced by the scalar path (`analyze_gemm_chain` + `energy_report`) at several SRAM
sizes and both dataflows, a hand-derived case where energy and traffic pick different nests, the cache by priced
size, determinism, and the work estimate's extra passes."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from dsasim import preset
from dsasim.architect.search.gemm_chain import (ENERGY_PASS_COST, GEMM_CHAIN_EVALUATIONS_PER_SECOND, GemmChain,
                                                GemmChainNest, analyze_gemm_chain, estimate_gemm_chain_space_work,
                                                evaluate_gemm_chain_space, gemm_chain_space_size)
from dsasim.architect.search.objective import CYCLES, EDP, ENERGY, TRAFFIC
from dsasim.energy.costs import EnergyCosts
from dsasim.energy.report import energy_report

BLOG = preset("blog")  # 1-byte words, a 16 x 24 TensorCore
NARROW = dataclasses.replace(preset("blog-fp32"), vector_lanes=7, tensorcore_in_channels=3, tensorcore_out_channels=5)
# (chain, hardware, two SRAM sizes where some nests fit and energy ranks some other nest than traffic)
CASES = ((GemmChain(12, 10, 9, 14, relu=True), NARROW, (150, 600)), (GemmChain(6, 24, 16, 24), BLOG, (69, 201)))
DATAFLOWS = ("weight_stationary", "output_stationary")


LARGE = 1 << 20  # above every peak of CASES' grids (at most 2,648 B): every nest fits


def brute_force(space, caps: list[int]) -> dict[tuple[int, str], tuple]:
    """Per (cap, objective name), the least key over every grid nest whose peak fits cap, each nest analysed on the
    hardware at that cap and priced by `energy_report` (the scalar path): energy (energy, cycles, traffic, peak,
    position in the grid) and edp (energy x cycles, energy, traffic, peak, position), the keys the objectives
    declare (dsasim/architect/search/objective.py), written out here; with the nest of each key. caps[-1] is
    LARGE, where every nest is analysed (and its peak read)."""
    assert caps[-1] == LARGE
    nests = [space.nest(i) for i in itertools.product(*map(range, space.shape))]  # C order: the flat index
    analyses: dict[int, list] = {}
    out: dict[tuple[int, str], tuple] = {}
    for cap in reversed(caps):
        hw = dataclasses.replace(space.hardware, sram_bytes=cap)
        if cap == LARGE:
            analyses[cap] = [analyze_gemm_chain(n, hw) for n in nests]
            peaks = [a.peak_sram_bytes for a in analyses[cap]]
        else:
            analyses[cap] = [analyze_gemm_chain(n, hw) if p <= cap else None for n, p in zip(nests, peaks)]
        best: dict[str, tuple | None] = {"energy": None, "edp": None}
        for position, a in enumerate(analyses[cap]):
            if a is None or a.peak_sram_bytes > cap:
                continue
            energy = energy_report(a.access_counts, hw, a.estimated_cycles).energy_pj
            cycles = a.estimated_cycles
            keys = {"energy": (energy, cycles, a.traffic_bytes, a.peak_sram_bytes, position),
                    "edp": (energy * cycles, energy, a.traffic_bytes, a.peak_sram_bytes, position)}
            for name, key in keys.items():
                if best[name] is None or key < best[name]:
                    best[name] = key
        for name, key in best.items():
            out[(cap, name)] = None if key is None else (key, nests[key[-1]])
    out["peaks"] = sorted(set(peaks))
    return out


@pytest.mark.parametrize("dataflow", DATAFLOWS)
@pytest.mark.parametrize("chain, hw, small", CASES, ids=["narrow-relu", "blog"])
def test_best_by_energy_and_edp_is_the_brute_force_minimum(chain, hw, small, dataflow):
    """At three SRAM sizes (two small ones, where some nests fit, far apart in the SRAM's energy per access
    from the third, 1 MiB, where every nest fits) `best(cap, ENERGY / EDP)` is the nest of the least key found by
    pricing every nest on its own, and the key the space kept carries the same energy (to rounding: the two sum
    the same terms in another order)."""
    hw = dataclasses.replace(hw, tensorcore_dataflow=dataflow)
    space = evaluate_gemm_chain_space(chain, hw, chunk_nests=700)  # several chunks: their picks merge
    caps = [*small, LARGE]
    want = brute_force(space, caps)
    assert want["peaks"][0] == space.least_peak_bytes
    differs = 0
    for cap in caps:
        for objective in (ENERGY, EDP):
            (key, nest) = want[(cap, objective.name)]
            got = space.best(cap, objective)
            assert got == nest, (chain, dataflow, cap, objective.name)
            kept = space.priced_at(cap).keys[objective]
            assert kept[-1] == key[-1] and kept[1:-1] == pytest.approx(key[1:-1], rel=1e-12)
            assert kept[0] == pytest.approx(key[0], rel=1e-12)
            differs += got != space.best(cap, TRAFFIC)
    assert differs, "some size should rank energy apart from traffic, or this test cannot tell them apart"
    assert sorted(space.priced) == caps  # one pass per size, both objectives from it


def test_energy_picks_a_different_nest_than_traffic_by_hand():
    """gemm-chain m=64, n=48, k=32, l=48 on blog (1-byte words, 16 x 24 TensorCore, weight-stationary) in 4 KiB.

    Both picks move the compulsory traffic: A 64x32 + B 32x48 + D 48x48 + E 64x48 = 2,048 + 1,536 + 2,304 + 3,072
    = 8,960 B, so traffic's tie-break, the estimated cycles, decides for it: tiles m=64, l=48, k=8, n=8 overlap
    their transfers with a TensorCore busy 1,664 cycles, while m=2, l=48, k=32, n=48 moves the same bytes in many
    small transfers (more DMA cycles). But k=8 fills 8 of the 16 input lanes and n=8 8 of the 24 output lanes:
    TensorCore cycles = m x (k blocks x l out-blocks + l in-blocks x n blocks)
      traffic pick: 64 x (4 x 1 x 2 + 3 x 6 x 1) = 64 x 26 = 1,664;  energy pick: 64 x (2 x 2 + 3 x 2) = 640,
    and every cycle switches all 16 x 24 = 384 MAC lanes at 0.315 pJ: the traffic pick burns (1,664 - 640) x 384 x
    0.315 = 123,863.04 pJ more in the TensorCore, more than the energy pick's extra SRAM reads (its m tile of 2
    re-reads the weights B and D 32 times) and leakage over its longer run."""
    chain = GemmChain(64, 48, 32, 48)
    cap = 4096
    hw = dataclasses.replace(BLOG, sram_bytes=cap)
    space = evaluate_gemm_chain_space(chain, BLOG)
    by_traffic, by_energy = space.best(cap, TRAFFIC), space.best(cap, ENERGY)
    assert by_traffic == GemmChainNest(chain, "ml", {"m": 64, "l": 48, "k": 8, "n": 8})
    assert by_energy == GemmChainNest(chain, "ml", {"m": 2, "l": 48, "k": 32, "n": 48})
    t, e = analyze_gemm_chain(by_traffic, hw), analyze_gemm_chain(by_energy, hw)
    assert t.traffic_bytes == e.traffic_bytes == 2048 + 1536 + 2304 + 3072 == 8960
    assert (t.tensorcore_cycles, e.tensorcore_cycles) == (1664, 640)
    assert t.estimated_cycles < e.estimated_cycles and t.peak_sram_bytes <= cap and e.peak_sram_bytes <= cap
    rt, re = (energy_report(a.access_counts, hw, a.estimated_cycles) for a in (t, e))
    assert EnergyCosts.of(hw).mac_pj.value == 0.315
    assert rt.energy_breakdown_pj["tensorcore"] - re.energy_breakdown_pj["tensorcore"] == \
        pytest.approx((1664 - 640) * 384 * 0.315)
    assert re.energy_breakdown_pj["SRAM"] > rt.energy_breakdown_pj["SRAM"]  # the price energy pays
    assert re.energy_pj < rt.energy_pj


def test_priced_per_size_cached_and_deterministic():
    """Each priced size is one pass over the grid, kept: asking again, or for EDP at the same size, adds none;
    `evaluations` counts the passes. Two spaces, chunked differently, keep byte-identical keys. A size below every
    peak prices nothing and gives None; bad sizes are ValueErrors."""
    chain, hw, _ = CASES[1]
    a = evaluate_gemm_chain_space(chain, hw)
    grid = gemm_chain_space_size(chain, hw)
    assert a.evaluations == grid and not a.priced
    assert a.best(a.least_peak_bytes - 1, ENERGY) is None and not a.priced
    assert a.best(a.least_peak_bytes, ENERGY) is not None  # the least peak fits its own size: the bound is <=
    assert a.best(a.least_peak_bytes, EDP) is not None and len(a.priced) == 1
    caps = [a.least_peak_bytes, 200, 1344]
    for cap in caps:
        a.best(cap, ENERGY)
        a.best(cap, EDP)
        a.best(cap, TRAFFIC)
        a.best(cap, CYCLES)
    assert sorted(a.priced) == caps and a.evaluations == grid * (1 + len(caps))
    b = evaluate_gemm_chain_space(chain, hw, chunk_nests=333)
    for cap in reversed(caps):
        for objective in (EDP, ENERGY):
            assert b.best(cap, objective) == a.best(cap, objective)
    assert {c: a.priced[c].keys for c in caps} == {c: b.priced[c].keys for c in caps}  # floats equal bit for bit
    for bad in (-1, 1.5, "4096", True):
        with pytest.raises(ValueError, match="sram_bytes must be an integer >= 0"):
            a.best(bad, ENERGY)


def test_work_estimate_counts_one_pass_per_priced_size():
    """Traffic or cycles: one pass over the grid serves every size. Energy or EDP over K sizes: 1 + K passes, the
    energy ones at ENERGY_PASS_COST of a fronts pass each."""
    chain, hw, _ = CASES[1]
    n = gemm_chain_space_size(chain, hw)
    for objective in (TRAFFIC, CYCLES):
        w = estimate_gemm_chain_space_work(chain, hw, objective, 5)
        assert (w.evaluations, w.seconds) == (n, n / GEMM_CHAIN_EVALUATIONS_PER_SECOND)
    assert estimate_gemm_chain_space_work(chain, hw) == estimate_gemm_chain_space_work(chain, hw, TRAFFIC, 1)
    for objective in (ENERGY, "edp"):
        w = estimate_gemm_chain_space_work(chain, hw, objective, 3)
        assert w.evaluations == 4 * n
        assert w.seconds == pytest.approx(n * (1 + 3 * ENERGY_PASS_COST) / GEMM_CHAIN_EVALUATIONS_PER_SECOND)
        assert "3 energy pass(es)" in w.what
    with pytest.raises(ValueError, match="n_capacities"):
        estimate_gemm_chain_space_work(chain, hw, ENERGY, 0)
