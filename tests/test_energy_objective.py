"""The energy and edp objectives (issue 28): the search ranks every candidate by its priced accesses, and its
winner beats the traffic winner on energy, as an independent pricing of both traced schedules shows."""

from __future__ import annotations

import dataclasses

import pytest

from dsasim.architect.problems.layers import parse_layer
from dsasim.architect.search.layer_search import search
from dsasim.architect.search.objective import EDP, ENERGY, OBJECTIVES, TRAFFIC
from dsasim.energy.report import energy_report
from dsasim.hardware import preset

HW = dataclasses.replace(preset("blog"), sram_bytes=2048)
GEMM = parse_layer("gemm:m=64,n=72,k=50")  # 72 = 3 x 24 output blocks, 50 = 3 x 16 + 2 input channels


def traced_energy_pj(candidate) -> float:
    """The candidate's nest run through the trace (not the model) and its counts priced, over its estimated cycles."""
    from dsasim.kernels.loopnest_kernel import run_loopnest

    run = run_loopnest(candidate.nest, HW)
    assert run.status.value == "ok", run.message
    return energy_report(run.access_counts, HW, candidate.estimated_cycles).energy_pj


@pytest.fixture(scope="module")
def winners():
    return {o: search(GEMM, HW, 2048, o, runner=None).best for o in ("traffic", "energy", "edp")}


def test_the_energy_winner_spends_less_than_the_traffic_winner_priced_from_their_traces(winners):
    by_traffic, by_energy = winners["traffic"], winners["energy"]
    e_traffic, e_energy = traced_energy_pj(by_traffic), traced_energy_pj(by_energy)
    assert e_energy < e_traffic  # priced independently of the search: the traced runs' own counts
    assert by_energy.traffic_bytes >= by_traffic.traffic_bytes  # it may move more bytes to spend less


def test_the_edp_winner_has_the_least_energy_delay_of_the_three(winners):
    edp = {o: traced_energy_pj(c) * c.estimated_cycles for o, c in winners.items()}
    assert edp["edp"] <= min(edp.values())


def test_the_search_ranks_by_the_same_energy_the_trace_prices():
    from dsasim.architect.search.layer_search import candidate_energy_pj

    best = search(GEMM, HW, 2048, "energy", runner=None).best
    assert candidate_energy_pj(best, HW) == pytest.approx(traced_energy_pj(best), rel=1e-12)


def test_the_registry_and_the_key():
    assert OBJECTIVES["energy"] is ENERGY and OBJECTIVES["edp"] is EDP and ENERGY.needs_energy
    assert not TRAFFIC.needs_energy
    # edp = energy x cycles, then energy, then traffic
    assert EDP.key(traffic=5, cycles=3, energy=2.0) == (6.0, 2.0, 5)
    with pytest.raises(ValueError, match="ranks by energy, which this search did not compute"):
        ENERGY.key(traffic=1, cycles=1)


def test_when_macs_dominate_the_energy_winner_wastes_no_lane_it_can_avoid():
    # mac_pj = 50 pJ makes a MAC step cost more than any access: the least energy is the fewest TensorCore steps,
    # m x ceil(k / 16) x ceil(n / 24) = 64 x 4 x 3 = 768 (no tile splits a channel block), although a schedule that
    # splits k moves fewer bytes (the traffic winner: 1,024 steps)
    hw = dataclasses.replace(HW, mac_pj=50.0)
    assert search(GEMM, hw, 2048, "energy", runner=None).best.tensorcore_cycles == 64 * 4 * 3
    assert search(GEMM, hw, 2048, "traffic", runner=None).best.tensorcore_cycles > 64 * 4 * 3
