"""Energy and area in every result (issue 28, "What users see"): levels, chains, networks, shapes.

Expected values come from hand derivation (in the comment beside each) or from an independent computation: the
traced run of each chosen schedule (the kernels' counters, not the analytic model the results use), priced by
`energy_report` one layer at a time, or the cost figures (`EnergyCosts`) multiplied out here. word_bytes is 1 on
blog and blog-l1, so bytes = elements.
"""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch.nn as nn

from dsasim import preset
from dsasim.architect.nests.loopnest import ConvProblem, LoopNest
from dsasim.architect.problems.chain import ConvChain
from dsasim.architect.studies.network import import_network
from dsasim.architect.studies.network_eval import evaluate_network, sweep_network
from dsasim.cli import main
from dsasim.energy.accesses import AccessCounts, TensorAccesses
from dsasim.energy.costs import EnergyCosts
from dsasim.energy.report import energy_report

BLOG = preset("blog")


def _pairs(counts: AccessCounts) -> dict[tuple[str, str], tuple[int, int]]:
    return {(t.tensor, t.level): (t.read_bytes, t.write_bytes) for t in counts.tensors}


def _traced_counts(nest: LoopNest, hardware) -> AccessCounts:
    """The counters of a traced run of `nest` (the LoopNest kernel): independent of the analytic model."""
    from dsasim.kernels.loopnest_kernel import run_loopnest
    result = run_loopnest(nest, hardware, record_trace=False)
    assert result.status == "ok" and result.access_counts is not None
    return result.access_counts


# -- AccessCounts: sum, scaled, qualified ----------------------------------------------------------------------
def test_sum_scaled_and_qualified_by_hand():
    a = AccessCounts((TensorAccesses("w", "DDR", 10, 0), TensorAccesses("w", "SRAM", 3, 10)), 5, 8, 1)
    b = AccessCounts((TensorAccesses("w", "SRAM", 2, 0), TensorAccesses("x", "DDR", 0, 7)), 4, 4, 2)
    s = AccessCounts.sum([a, b])
    # (w, SRAM): reads 3 + 2, writes 10 + 0; the other pairs as they are, in first-seen order
    assert _pairs(s) == {("w", "DDR"): (10, 0), ("w", "SRAM"): (5, 10), ("x", "DDR"): (0, 7)}
    assert (s.macs, s.padded_macs, s.vector_lane_ops) == (9, 12, 3)
    t = a.scaled(3)
    assert _pairs(t) == {("w", "DDR"): (30, 0), ("w", "SRAM"): (9, 30)} and (t.macs, t.padded_macs) == (15, 24)
    assert _pairs(a.qualified("conv1")) == {("conv1.w", "DDR"): (10, 0), ("conv1.w", "SRAM"): (3, 10)}
    with pytest.raises(ValueError, match="at least one part"):
        AccessCounts.sum([])
    with pytest.raises(ValueError, match="times must be an integer >= 1"):
        a.scaled(0)


# -- chains --------------------------------------------------------------------------------------------------
LAYER = ConvProblem(n=1, ic=8, oc=8, h=12, w=12, kh=3, padding=1)
CHAIN = ConvChain([LAYER, LAYER], relu=[True, True], residual=True)


@pytest.fixture(scope="module")
def chain_result():
    from dsasim.architect.search.fused_search import search_chain
    return search_chain(CHAIN, BLOG, sram_bytes=4096)


def test_layer_by_layer_counts_are_each_layers_traced_counts_plus_the_residual_fold(chain_result):
    from dsasim.architect.studies.chain_energy import partition_access_counts
    parts = chain_result.layer_by_layer
    got = partition_access_counts(chain_result, parts)
    hw = chain_result.hardware
    # each segment's tensors are qualified by its place in the partition: "[1].image", "[2].weight", ...
    expected = AccessCounts.sum([_traced_counts(p.candidate.nest, hw).qualified(f"[{p.first + 1}]") for p in parts])
    exp = dict(_pairs(expected))
    # the fold loads the block's input once more: 1 x 8 x 12 x 12 = 1,152 B read from DDR, written to the SRAM
    exp[("residual", "DDR")] = (1152, 0)
    exp[("residual", "SRAM")] = (0, 1152)
    assert chain_result.fold(parts) == 1152
    assert _pairs(got) == exp
    assert got.macs == 2 * 8 * 8 * 9 * 144 and got.padded_macs == expected.padded_macs


def test_a_chains_energy_is_its_partition_priced_once_and_its_parts_add_up(chain_result):
    from dsasim.architect.studies.chain_energy import chain_result_json, partition_access_counts, partition_energy
    counts, energy = partition_energy(chain_result)
    best = chain_result.best
    totals = chain_result.totals(best, chain_result.fold(best))
    assert energy == energy_report(partition_access_counts(chain_result, best), chain_result.hardware,
                                   totals["cycles"])
    data = chain_result_json(chain_result, "block")
    assert {"energy_pj", "energy_breakdown_pj", "area_mm2", "accesses"} <= set(data)
    # the parts' energies (each over its own cycles) and the fold's DDR read and SRAM write add up to the total
    costs = EnergyCosts.of(chain_result.hardware)
    fold = chain_result.fold(best)
    fold_pj = fold * (costs.level("DDR").read_pj_per_byte + costs.level("SRAM").write_pj_per_byte)
    assert math.isclose(sum(p["energy_pj"] for p in data["parts"]) + fold_pj, data["energy_pj"], rel_tol=1e-9)


# -- networks ------------------------------------------------------------------------------------------------
class TwoConvsAndAPool(nn.Module):
    """Two convs (no bias, no activation: no epilogue, no extra operand) and a 2x2 max pool."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(4, 8, 3, padding=1, bias=False)
        self.b = nn.Conv2d(8, 8, 1, bias=False)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        return self.pool(self.b(self.a(x)))


def test_a_networks_energy_is_the_sum_of_its_layers_each_priced_from_its_traced_run():
    net = import_network(TwoConvsAndAPool(), (1, 4, 8, 8), "two")
    cap = 4096
    result = evaluate_network(net, [BLOG], [cap], fusion=False)[0][0]
    hw = dataclasses.replace(BLOG, sram_bytes=cap)
    a, b, pool = result.layers
    expected = []
    for x in (a, b):
        nest = LoopNest.from_json(x.schedule)
        rep = energy_report(_traced_counts(nest, hw), hw, x.cycles)
        assert math.isclose(x.energy.energy_pj, rep.energy_pj, rel_tol=1e-12)
        expected.append(rep.energy_pj)
    # the pool streams: 1 x 8 x 8 x 8 = 512 B loaded (DDR read, SRAM write), read by the vector unit; 128 B
    # written to the SRAM and stored (SRAM read, DDR write); its lane operations and its cycles' leakage
    costs = EnergyCosts.of(hw)
    ddr, sram = costs.level("DDR"), costs.level("SRAM")
    assert (pool.loaded_bytes, pool.stored_bytes) == (512, 128)
    pool_pj = (512 * (ddr.read_pj_per_byte + sram.write_pj_per_byte + sram.read_pj_per_byte)
               + 128 * (sram.write_pj_per_byte + sram.read_pj_per_byte + ddr.write_pj_per_byte)
               + pool.layer.vector_ops * costs.vector_lane_op_pj.value
               + costs.leakage_mw * 1e9 * pool.cycles / costs.clock_hz)
    assert math.isclose(pool.energy.energy_pj, pool_pj, rel_tol=1e-12)
    expected.append(pool_pj)
    assert math.isclose(result.energy.energy_pj, sum(expected), rel_tol=1e-9)
    assert result.energy_left_out == []
    data = result.to_json()
    assert math.isclose(data["energy_pj"], sum(x["energy_pj"] for x in data["layers"]), rel_tol=1e-9)


def test_a_layer_left_out_stays_out_of_the_energy_and_a_size_it_misses_never_wins_the_sizing(tmp_path):
    net = import_network(TwoConvsAndAPool(), (1, 4, 8, 8), "two")
    sweep = sweep_network(net, [BLOG], [2, 4096, 1 << 16], fusion=False)
    small, mid, big = sweep.results[0]
    assert small.unplaceable == ["a", "b"] and small.energy_left_out == ["a", "b"]
    # 2 B: only the pool is priced (its energy alone, far below the whole network's) and the result says so
    assert small.energy.energy_pj == small.layers[2].energy.energy_pj < mid.energy.energy_pj
    assert small.to_json()["energy_left_out"] == ["a", "b"]
    answers = sweep.sizing()[0]
    pts = {r.sram_bytes: r for r in (mid, big)}  # the sizes where every layer is placed
    assert answers.least_energy_bytes == min(pts, key=lambda s: (pts[s].energy.energy_pj, s))
    assert answers.least_edp_bytes == min(pts, key=lambda s: (pts[s].energy.energy_pj * pts[s].cycles, s))
    assert answers.best_perf_per_mm2_bytes == min(pts, key=lambda s: (pts[s].cycles * pts[s].energy.area_mm2, s))
    js = sweep.to_json()
    assert js["sizing"]["blog"] == answers.to_json() and js["points"][0]["energy_left_out"] == ["a", "b"]
    from dsasim.view.energy_plot import plot_energy_sweep
    png = plot_energy_sweep(sweep.energy_points(), "two", tmp_path / "e.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_network_energy_plot_of_several_hardware_is_refused_in_one_line(tmp_path, capsys):
    from cli_helpers import one_line_error
    one_line_error(["sweep-sram", "--network", "resnet18", "--sizes", "64KiB", "--vary",
                    "dram_bytes_per_cycle=16,32", "--energy-plot", str(tmp_path / "e.png")], capsys,
                   "--energy-plot draws one hardware's energy; this sweep has 2")


def test_a_batched_layer_counts_its_repeats_and_its_extra_operand():
    from dsasim.architect.studies.network_accesses import tensorcore_layer_counts
    one = AccessCounts((TensorAccesses("w", "DDR", 10, 0), TensorAccesses("w", "SRAM", 4, 10)), 6, 8, 0)
    got = tensorcore_layer_counts(one, 3, 5, 7)
    # 3 repeats: (30, 0) and (12, 30); the extra operand: 5 B loaded (DDR read, SRAM write) and read once;
    # the epilogue: 7 lane operations
    assert _pairs(got) == {("w", "DDR"): (30, 0), ("w", "SRAM"): (12, 30), ("extra", "DDR"): (5, 0),
                           ("extra", "SRAM"): (5, 5)}
    assert (got.macs, got.padded_macs, got.vector_lane_ops) == (18, 24, 7)


# -- levels --------------------------------------------------------------------------------------------------
def test_a_level_sweep_prices_each_point_at_the_swept_levels_capacity():
    from dsasim.architect.search.level_search import sweep_levels, with_level_capacity
    hw = preset("blog-l1")
    problem = ConvProblem(n=1, ic=16, oc=24, h=4, w=4, kh=1)
    found = sweep_levels(problem, hw, "L1w", [1024, 4096])
    costs = []
    for size, a in zip(found.sizes, found.best):
        sized = with_level_capacity(hw, "L1w", size)
        assert a.energy == energy_report(a.access_counts(), sized, round(a.cycles))
        assert a.energy.level_read_pj.keys() >= {"DDR", "SRAM"}  # inner levels in the breakdown beside them
        assert any(name in a.energy.energy_breakdown_pj for name in ("L1w", "L1i", "L1acc"))
        costs.append(EnergyCosts.of(sized).level("L1w").read_pj_per_byte)
    assert costs[0] < costs[1]  # a larger L1w costs more per byte read: the rule follows the swept size


# -- every result object carries the energy keys ---------------------------------------------------------------
KEYS = {"energy_pj", "energy_breakdown_pj", "area_mm2"}


def _results(command: str, data: dict) -> list[dict]:
    """The result objects of a command's --json: the object itself, and each point, layer or shape."""
    if command == "sweep-network":
        return data["points"]
    if command == "network":
        return [data, *data["layers"]]
    if command == "shapes":
        return data["shapes"]
    if "points" in data:
        return data["points"]
    return [data]


@pytest.mark.parametrize("command, argv", [
    ("search", ["search", "gemm-chain:m=32,n=32,k=32,l=32", "--sram", "16KiB", "--confirm", "0"]),
    ("search", ["search", "conv:ic=16,oc=24,h=4,w=4,k=1", "--hardware", "blog-l1", "--confirm", "0"]),
    ("search", ["search", "conv:ic=16,oc=24,h=4,w=4,k=1", "--sram", "4KiB", "--confirm", "0"]),
    ("sweep", ["sweep-sram", "gemm-chain:m=32,n=32,k=32,l=32", "--sizes", "8KiB:32KiB:3", "--no-simulate",
               "--quiet"]),
    ("sweep", ["sweep-sram", "conv:ic=16,oc=24,h=4,w=4,k=1", "--hardware", "blog-l1", "--level", "L1w",
               "--sizes", "1KiB,4KiB", "--quiet"]),
    ("sweep-network", ["sweep-sram", "--network", "resnet18", "--input-shape", "1,3,32,32", "--sizes",
                       "16KiB,64KiB", "--jobs", "1", "--quiet"]),
    ("network", ["network", "resnet18", "--input-shape", "1,3,32,32", "--sram", "64KiB", "--jobs", "1",
                 "--quiet"]),
    ("shapes", ["shapes", "gemm:m=16,n=48,k=32", "--vary", "m=8:16:8", "--quiet"]),
], ids=["chain", "levels", "layer", "chain-sweep", "level-sweep", "network-sweep", "network", "shapes"])
def test_every_result_object_carries_energy_and_area(command, argv, tmp_path, capsys):
    js = tmp_path / "out.json"
    assert main([*argv, "--json", str(js)]) == 0
    out = capsys.readouterr().out
    assert ("pJ/MAC" if command == "shapes" else "energy") in out
    data = json.loads(js.read_text())
    objects = _results(command, data)
    assert objects
    for obj in objects:
        assert KEYS <= set(obj), (command, sorted(obj))
        if obj.get("status", "ok") == "ok":
            assert obj["energy_pj"] > 0 and obj["area_mm2"] > 0 and obj["energy_breakdown_pj"]
    if command.startswith("sweep"):
        assert set(data["sizing"]) and "least energy per inference" in out
