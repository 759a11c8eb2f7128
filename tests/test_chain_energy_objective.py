"""Chains and fused networks ranked by energy and EDP (issue 28): the conv fused space's per-level access arrays
equal the analysis of every nest, `best` prices them at the SRAM size asked, the partition ranks by its segments'
energies plus the residual fold's load, and the CLI's chain search, chain sweep and fused network take
`--objective energy|edp`."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import random

import numpy as np
import pytest

from dsasim.architect.model.analytic import analyze
from dsasim.architect.model.fused import analyze_fused
from dsasim.architect.problems.chain import ConvChain
from dsasim.architect.problems.layers import ConvProblem
from dsasim.architect.search.fused_search import search_chain
from dsasim.architect.search.fused_space import evaluate_fused_space
from dsasim.architect.search.objective import EDP, ENERGY
from dsasim.architect.studies.chain_energy import partition_energy
from dsasim.energy.accesses import AccessCounts, TensorAccesses
from dsasim.energy.costs import EnergyCosts
from dsasim.energy.report import energy_report
from dsasim.hardware import preset
from test_fused import random_chain

BLOG = preset("blog")


def per_level(counts: AccessCounts) -> tuple[dict[str, int], dict[str, int]]:
    """Read and write bytes per level, summed over the tensors."""
    read: dict[str, int] = {}
    write: dict[str, int] = {}
    for t in counts.tensors:
        read[t.level] = read.get(t.level, 0) + t.read_bytes
        write[t.level] = write.get(t.level, 0) + t.write_bytes
    return read, write


# -- the fused space's access arrays ---------------------------------------------------------------------------
@pytest.mark.parametrize("dataflow", ["weight_stationary", "output_stationary"])
def test_the_space_counts_every_nests_accesses_as_its_analysis_does(dataflow):
    hw = dataclasses.replace(BLOG, tensorcore_dataflow=dataflow)
    rng = random.Random(11)
    checked, residual, keep = 0, False, False
    for _ in range(6):
        chain = random_chain(rng)
        space = evaluate_fused_space(chain, hw)
        a = space.accesses
        full = {name: np.broadcast_to(v, space.valid.shape) for name, v in
                (("padded", a.padded_macs), ("lanes", a.vector_lane_ops))}
        for index in zip(*np.nonzero(space.valid)):
            counts = analyze_fused(space.nest(index), hw).access_counts
            read, write = per_level(counts)
            got = ({lv: int(np.broadcast_to(v, space.valid.shape)[index]) for lv, v in a.read_bytes.items()},
                   {lv: int(np.broadcast_to(v, space.valid.shape)[index]) for lv, v in a.write_bytes.items()},
                   int(full["padded"][index]), int(full["lanes"][index]))
            assert got == (read, write, counts.padded_macs, counts.vector_lane_ops), space.nest(index)
            checked += 1
            keep |= index[3] == 1
        residual |= chain.residual
    assert checked > 500 and residual and keep  # the sample has a residual and kept halos


def test_the_arrays_are_computed_only_when_an_energy_objective_asks():
    space = evaluate_fused_space(ConvChain([ConvProblem(1, 4, 4, 6, 6, 3, padding=1)] * 2), BLOG)
    space.best(4096, "traffic")
    assert "accesses" not in space.__dict__  # the traffic ranking never built them
    space.best(4096, "energy")
    assert "accesses" in space.__dict__


# -- best(sram_bytes, objective) prices at that size ----------------------------------------------------------
def test_best_by_energy_and_edp_is_the_least_priced_nest_at_each_size():
    """At three SRAM sizes, `best` is the nest of least energy (and of least energy x cycles) among the valid nests
    that fit, each priced independently: its analysis' accesses by `energy_report` on the hardware at that size
    (the SRAM's energy per access and leakage follow its size), over the space's estimated cycles."""
    rng = random.Random(4)
    for _ in range(2):
        chain = random_chain(rng)
        while len(chain) < 2:
            chain = random_chain(rng)
        space = evaluate_fused_space(chain, BLOG)
        cycles = space.estimated_cycles
        peaks = np.unique(space.peak_sram_bytes[space.valid])
        for cap in (int(peaks[len(peaks) // 4]), int(peaks[len(peaks) // 2]), int(peaks[-1])):
            hw = dataclasses.replace(BLOG, sram_bytes=cap)
            priced = {}
            for index in zip(*np.nonzero(space.valid & (space.peak_sram_bytes <= cap))):
                counts = analyze_fused(space.nest(index), hw).access_counts
                priced[index] = energy_report(counts, hw, int(cycles[index])).energy_pj
                assert space.energy_pj(cap)[index] == pytest.approx(priced[index], rel=1e-12)
            least = min(priced.values())
            least_edp = min(e * int(cycles[i]) for i, e in priced.items())
            by_energy, by_edp = space.best(cap, ENERGY), space.best(cap, EDP)
            at = {space.nest(i): i for i in priced}
            assert priced[at[by_energy]] == pytest.approx(least, rel=1e-12)
            assert priced[at[by_edp]] * int(cycles[at[by_edp]]) == pytest.approx(least_edp, rel=1e-12)


def test_the_sram_size_changes_what_a_nest_costs():
    # the SRAM rule: a larger SRAM costs more per access and leaks more, so one nest priced at 1 MiB costs more
    # than at 4 KiB although its accesses are the same
    space = evaluate_fused_space(ConvChain([ConvProblem(1, 4, 4, 6, 6, 3, padding=1)] * 2), BLOG)
    small, large = space.energy_pj(4096), space.energy_pj(1 << 20)
    assert np.all(np.broadcast_to(large, space.valid.shape)[space.valid] >
                  np.broadcast_to(small, space.valid.shape)[space.valid])


# -- the partition ----------------------------------------------------------------------------------------------
# energy = padded MACs x 1 pJ, nothing else priced: the energy objective minimises the TensorCore's steps
MACS_ONLY = dataclasses.replace(BLOG, mac_pj=1.0, dram_pj_per_bit=0.0, sram_read_pj=0.0, sram_write_pj=0.0,
                                sram_leakage_mw=0.0, vector_lane_op_pj=0.0)
BLOCK = ConvChain([ConvProblem(1, 8, 8, 8, 8, 3, padding=1)] * 2, relu=[False, False])


@pytest.fixture(scope="module")
def block_results():
    return {o: search_chain(BLOCK, MACS_ONLY, 1600, o) for o in ("traffic", "energy")}


def test_energy_picks_layer_by_layer_where_fusion_saves_traffic_but_recomputes(block_results):
    """Two 3x3 convs (8 -> 8 channels, 8 x 8, padding 1; 1-byte words) under 1,600 B of SRAM.

    Traffic: fused with kept halos along ow and 4-row tiles ([1 2]) loads the image rows 0..5 and 2..7 (each tile
    needs two rows more through the two layers, clipped at the border: 2 x 6 rows x 8 columns x 8 channels =
    768 B), both weights once (2 x 8 x 8 x 9 = 1,152 B) and stores the output (512 B): 2,432 B; layer by layer
    moves at least its compulsory 512 + 576 + 2 x 512 (the intermediate stored and loaded) + 576 + 512 = 3,200 B.
    The one fused nest without recompute (the whole 8-row height kept along ow) needs the weights (1,152 B) plus
    line buffers of 8 x 8 x 5 image + 8 x 8 x 3 intermediate elements and an 8 x 8 x 1 output tile = 1,728 B >
    1,600 B, so every fused nest that fits recomputes intermediate rows.
    Energy (MACs only): each layer alone runs one TensorCore step per output pixel and valid tap (8 input
    channels fill one 16-lane block, 8 outputs one 24-lane block): per axis 8 x 3 - 2 = 22 valid (output, tap)
    pairs (the two border outputs lose a tap), 22 x 22 steps x 384 lanes per layer: 2 x 185,856 = 371,712 pJ, the
    fewest any schedule runs; the fused schedules recompute, so energy picks [1] [2]."""
    by_traffic, by_energy = block_results["traffic"], block_results["energy"]
    assert by_traffic.label(by_traffic.best) == "[1 2]"
    assert by_traffic.totals(by_traffic.best)["traffic_bytes"] == 2 * 6 * 8 * 8 + 2 * 8 * 8 * 9 + 8 * 8 * 8
    assert by_traffic.best[0].analysis.recomputed_macs > 0
    assert by_energy.label(by_energy.best) == "[1] [2]"
    _, report = partition_energy(by_energy)
    assert report.energy_pj == 2 * 22 * 22 * 384 == report.energy_breakdown_pj["tensorcore"]
    assert partition_energy(by_traffic)[1].energy_pj > report.energy_pj


# energy = leakage only, 1 W of it: energy is proportional to time, so the energy objective ranks as cycles do
LEAK_ONLY = dataclasses.replace(MACS_ONLY, mac_pj=0.0, sram_leakage_mw=1000.0)


def test_with_leakage_only_each_segment_leaks_over_its_own_cycles():
    """The block above under 4 KiB, only leakage priced (1,000 mW over cycles / clock): a partition's energy is
    leakage x its summed cycles, so the energy objective picks the split with the fewest cycles. At 4 KiB the block
    fuses without recompute (one output row per tile, halos kept along oh) and is TensorCore-bound: 2 layers x 64
    output pixels x 9 taps, one step each (8 channels fill one block) = 1,152 cycles; its two layers alone take
    more (they store and reload the intermediate through the DMA), so energy fuses here."""
    result = search_chain(BLOCK, LEAK_ONLY, 4096, "energy")
    pj_per_cycle = 1000.0 * 1e9 / LEAK_ONLY.clock_hz  # mW x s x 1e9 = pJ
    assert result.label(result.best) == "[1 2]" and result.totals(result.best)["cycles"] == 2 * 64 * 9
    assert result.totals(result.layer_by_layer)["cycles"] > 2 * 64 * 9
    assert partition_energy(result)[1].energy_pj == pytest.approx(pj_per_cycle * 2 * 64 * 9, rel=1e-12)


def fold_energy_pj(chain: ConvChain, hw) -> float:
    """The residual fold's load priced on its own: the chain's input read from DDR and written to the SRAM."""
    fold = math.prod(chain.input_shape) * hw.word_bytes
    return energy_report(AccessCounts((TensorAccesses("x", "DDR", fold, 0), TensorAccesses("x", "SRAM", 0, fold)),
                                      0, 0, 0), hw, 0).energy_pj


@pytest.mark.parametrize("objective", ["energy", "edp"])
def test_the_best_partition_is_the_least_over_every_split_priced_independently(objective):
    """A residual block of three layers under 2 KiB: every split into fused segments and single layers priced in
    the test (each single layer: the search's own schedule, analysed and priced; each fused segment: its space's
    best at 2 KiB, analysed and priced over its estimated cycles; the residual folded unless the last segment
    fuses from layer 1), and the search's reported best is the least of them."""
    chain = ConvChain([ConvProblem(1, 8, 8, 6, 6, 1), ConvProblem(1, 8, 8, 6, 6, 3, padding=1),
                       ConvProblem(1, 8, 8, 6, 6, 1)], relu=[True, True, True], residual=True)
    cap = 2048
    hw = dataclasses.replace(BLOG, sram_bytes=cap)
    result = search_chain(chain, BLOG, cap, objective, force=True)
    segment = {}  # (first, stop) -> (energy pJ, cycles)
    for p in result.layer_by_layer:
        c = p.candidate
        segment[(p.first, p.stop)] = (energy_report(analyze(c.nest, hw).access_counts(), hw, p.cycles).energy_pj,
                                      p.cycles)
    for first, stop in ((0, 2), (1, 3), (0, 3)):
        sub = chain if (first, stop) == (0, 3) else ConvChain(chain.layers[first:stop], chain.relu[first:stop])
        nest = evaluate_fused_space(sub, BLOG).best(cap, objective)
        if nest is not None:
            a = analyze_fused(nest, hw)
            segment[(first, stop)] = (energy_report(a.access_counts, hw, a.estimated_cycles).energy_pj,
                                      a.estimated_cycles)
    fold = fold_energy_pj(chain, hw)
    splits = {}
    for cuts in itertools.product((False, True), repeat=2):
        bounds = [0] + [i + 1 for i, cut in enumerate(cuts) if cut] + [3]
        segs = list(zip(bounds, bounds[1:]))
        if all(s in segment for s in segs):
            energy = sum(segment[s][0] for s in segs) + (0.0 if segs[-1] == (0, 3) else fold)
            cycles = sum(segment[s][1] for s in segs)
            splits[tuple(segs)] = energy if objective == "energy" else energy * cycles
    assert len(splits) >= 3  # the ranking has something to choose from
    _, report = partition_energy(result)
    figure = report.energy_pj if objective == "energy" else report.energy_pj * report.cycles
    assert figure == pytest.approx(min(splits.values()), rel=1e-9)
    chosen = tuple((p.first, p.stop) for p in result.best)
    assert splits[chosen] == pytest.approx(min(splits.values()), rel=1e-9)


def test_the_residual_folds_load_costs_a_ddr_read_and_an_sram_write():
    from dsasim.architect.search.fused_search import _fold_energy_pj

    # blog's LPDDR4: 8 pJ per bit = 64 pJ per byte read; the SRAM's write energy per byte from its cost table
    sram_write = EnergyCosts.of(BLOG).level("SRAM").write_pj_per_byte
    assert _fold_energy_pj(BLOG, 1000) == pytest.approx(1000 * (64.0 + sram_write), rel=1e-12)
    assert _fold_energy_pj(BLOG, 0) == 0.0


# -- the CLI ---------------------------------------------------------------------------------------------------
def test_search_and_sweep_of_a_chain_rank_by_energy_and_edp(tmp_path, capsys):
    from dsasim.cli import main

    js = tmp_path / "s.json"
    assert main(["search", "mobilenetv2.features.1", "--sram", "64KiB", "--objective", "energy", "--confirm", "0",
                 "--json", str(js)]) == 0
    data = json.loads(js.read_text())
    assert data["objective"] == "energy" and data["energy_pj"] > 0
    assert "objective energy" in capsys.readouterr().out
    assert main(["sweep-sram", "mobilenetv2.features.1", "--sizes", "32KiB,64KiB", "--objective", "edp",
                 "--no-simulate", "--quiet", "--json", str(js)]) == 0
    data = json.loads(js.read_text())
    assert [p["objective"] for p in data["points"]] == ["edp", "edp"]  # each point: `search CHAIN --json` at its size
    assert set(data["sizing"]) == {"least_energy_sram_bytes", "least_edp_sram_bytes", "best_perf_per_mm2_sram_bytes"}
    assert "least energy per inference" in capsys.readouterr().out


TINY_NET = ("import torch.nn as nn\n"
            "example_input_shape = (1, 8, 8, 8)\n"
            "class Net(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.a = nn.Conv2d(8, 8, 3, padding=1, bias=False)\n"
            "        self.b = nn.Conv2d(8, 8, 3, padding=1, bias=False)\n"
            "    def forward(self, x):\n"
            "        return self.b(self.a(x))\n")


def test_a_fused_network_ranks_by_energy_in_process_and_in_a_pool(tmp_path, monkeypatch):
    """The network's two convs are the chain of the partition test above, on its MACs-only hardware (a TOML file):
    the fused network ranked by energy runs them layer by layer at the 371,712 pJ derived there, by traffic fused
    (more), and a process pool (its tasks carry the objective to the workers) gives the same JSON as one process."""
    from dsasim.cli import main

    (tmp_path / "tinynets.py").write_text(TINY_NET)
    monkeypatch.syspath_prepend(str(tmp_path))
    toml = tmp_path / "macs_only.toml"
    toml.write_text('base = "blog"\nmac_pj = 1.0\ndram_pj_per_bit = 0.0\nsram_read_pj = 0.0\nsram_write_pj = 0.0\n'
                    'sram_leakage_mw = 0.0\nvector_lane_op_pj = 0.0\n')
    out = {}
    for objective, jobs in (("traffic", "1"), ("energy", "1"), ("energy", "2")):
        js = tmp_path / f"{objective}{jobs}.json"
        assert main(["network", "tinynets:Net", "--hardware", str(toml), "--sram", "1600", "--objective", objective,
                     "--jobs", jobs, "--quiet", "--json", str(js)]) == 0
        out[objective, jobs] = json.loads(js.read_text())
    energy, traffic = out["energy", "1"], out["traffic", "1"]
    assert [x["name"] for x in energy["layers"]] == ["a+b"]  # the two convs are one fused chain
    assert energy["layers"][0]["schedule"]["partition"] == "[1] [2]" == energy["layers"][0]["op"].split(" ", 1)[1]
    assert traffic["layers"][0]["schedule"]["partition"] == "[1 2]"
    assert energy["energy_pj"] == 2 * 22 * 22 * 384 < traffic["energy_pj"]
    assert out["energy", "2"] == energy


def test_a_gemm_chain_searches_and_sweeps_by_energy_from_the_command_line(tmp_path):
    """The GEMM kind's space prices at the asked size (its own test: test_gemm_chain_energy.py); from the command
    line the search and the sweep by energy and EDP run to the end and say so in their JSON."""
    from dsasim.cli import main

    js = tmp_path / "g.json"
    assert main(["search", "gemm-chain:m=32,n=32,k=32,l=32", "--sram", "16KiB", "--objective", "edp", "--confirm",
                 "0", "--json", str(js)]) == 0
    data = json.loads(js.read_text())
    assert data["objective"] == "edp" and data["energy_pj"] > 0
    assert main(["sweep-sram", "gemm-chain:m=32,n=32,k=32,l=32", "--sizes", "8KiB,16KiB", "--objective", "energy",
                 "--no-simulate", "--quiet", "--json", str(js)]) == 0
    assert [p["objective"] for p in json.loads(js.read_text())["points"]] == ["energy", "energy"]


def test_the_work_estimate_counts_what_an_energy_objective_adds():
    """By energy over K sizes each layer is searched once per size (not one search for all sizes) and a GEMM
    chain's grid is priced once more per size: K x one layer search each, and the grid 1 + K times."""
    from dsasim.architect.search.fused_search import estimate_chain_work
    from dsasim.architect.search.gemm_chain import gemm_chain_space_size, parse_gemm_chain
    from dsasim.architect.search.layer_search import estimate_search_work
    from dsasim.architect.studies.network import load_network
    from dsasim.architect.studies.sweep import estimate_network_sweep_work

    hw, k = preset("blog"), 3
    chain = parse_gemm_chain("gemm-chain:m=64,n=32,k=32,l=64")
    layers = {layer.spec(): layer for layer in chain.layers}.values()
    grid = gemm_chain_space_size(chain, hw)
    by_traffic = estimate_chain_work(chain, hw, k)
    by_energy = estimate_chain_work(chain, hw, k, objective=ENERGY)
    assert by_traffic.evaluations == sum(estimate_search_work(x, hw, k).evaluations for x in layers) + grid
    assert by_energy.evaluations == sum(k * estimate_search_work(x, hw, 1).evaluations for x in layers) + grid * (1 + k)
    net = load_network("resnet18", (1, 3, 32, 32))
    assert estimate_network_sweep_work(net, [hw], k, fusion=False, objective=ENERGY).evaluations == \
        k * estimate_network_sweep_work(net, [hw], 1, fusion=False).evaluations
