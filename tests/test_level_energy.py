"""The level search (levels below the SRAM) ranked by energy and EDP (issue 28): every candidate's reads and writes
equal the hierarchy model's `access_counts`, the search's pick is the least energy of a brute-force walk priced
independently (`energy_report`), a hand-derived case where energy and traffic pick different inner tilings, a
sweep priced at each size, and the command line."""

from __future__ import annotations

import dataclasses
import itertools
import json
import random

import numpy as np
import pytest

from dsasim.architect.model.hierarchy import InnerTiling, LevelNest, analyze_levels, tensor_role
from dsasim.architect.nests.loopnest import LoopNest, MatmulProblem
from dsasim.architect.problems.layers import parse_layer
from dsasim.architect.search.objective import EDP, ENERGY, objective_named
from dsasim.energy.costs import EnergyCosts
from dsasim.energy.report import energy_report
from dsasim.hardware import DDR, PRESETS, SRAM_LEVEL, MemoryLevel

L1 = PRESETS["blog-l1"]


def priced(a) -> float:
    """A LevelAnalysis's energy, pJ, by the independent path: its access counts priced by `energy_report` over its
    rounded cycles (what `LevelAnalysis.energy` reports)."""
    return energy_report(a.access_counts(), a.nest.hardware, round(a.cycles)).energy_pj


def one_hot(hw, level: str, write: bool):
    """`hw` with every energy zero but 1 pJ per byte read (or written) at `level`: a candidate's energy is then that
    level's bytes read (written), so the search's pricing shows its per-level bytes."""
    zero_level = dict(access_bytes=1, read_pj=0.0, write_pj=0.0, leakage_mw=0.0)
    hot = "write_pj" if write else "read_pj"
    levels = tuple(dataclasses.replace(lv, **{**zero_level, **({hot: 1.0} if lv.name == level else {})})
                   for lv in hw.inner_levels)
    ddr = 1 / 8 if level == DDR else 0.0  # per bit
    return dataclasses.replace(hw, inner_levels=levels, mac_pj=0.0, sram_access_bytes=1, sram_leakage_mw=0.0,
                               sram_read_pj=1.0 if (level, write) == (SRAM_LEVEL, False) else 0.0,
                               sram_write_pj=1.0 if (level, write) == (SRAM_LEVEL, True) else 0.0,
                               dram_pj_per_bit=0.0 if write else ddr, dram_write_pj_per_bit=ddr if write else 0.0)


def random_outer(problem, rng: random.Random) -> LoopNest:
    """A random outer nest: an order, a tile per dimension (a divisor or the extent), a staging per tensor."""
    order = list(problem.dims)
    rng.shuffle(order)
    tiles = {d: rng.choice([v for v in range(1, problem.extents[d] + 1) if problem.extents[d] % v == 0])
             for d in problem.dims}
    return LoopNest(problem, order, tiles, {n: rng.randint(0, len(order)) for n in problem.tensor_names})


LAYERS = ["gemm:m=48,n=40,k=36", "conv:n=1,ic=20,oc=24,h=7,w=6,k=3,p=1",  # padding: fresh outputs differ by staging
          "conv:n=2,ic=8,oc=30,h=7,w=5,k=3,p=2,s=2"]


@pytest.mark.parametrize("layer", LAYERS)
def test_every_candidates_priced_bytes_equal_the_models_access_counts(layer):
    """Random outer nests; for a sample of each one's inner candidates (with the options the energy objective chose
    for them), the search's energy equals the model's access counts priced by `energy_report`, on the default
    figures and on figures that single out one level's reads or writes (so each level's bytes are compared)."""
    from dsasim.architect.search.level_search import _choice, _InnerSpace

    p = parse_layer(layer)
    rng = random.Random(f"level-energy {layer}")
    variants = [L1] + [one_hot(L1, lv, w) for lv in (DDR, SRAM_LEVEL, "L1w", "L1i", "L1acc") for w in (False, True)]
    staged = [n for n in p.tensor_names if len(L1.path(tensor_role(p, n))) > 1]
    checked = 0
    for _ in range(3):
        outer = random_outer(p, rng)
        for hw in variants:
            sram = analyze_levels(LevelNest(outer, InnerTiling(outer.order, {}, {n: 0 for n in staged}), hw))
            space = _InnerSpace(outer, hw, staged)
            combos = np.array(list(itertools.product(*[space.coarse(d) for d in range(space.ev.nd)])), np.int64)
            combos = combos[sorted(rng.sample(range(len(combos)), min(32, len(combos))))]
            for objective in (ENERGY, EDP) if hw is L1 else (ENERGY,):
                res = space.evaluate(combos, sram.level("SRAM").cycles, objective)
                cells = [(i, j) for i in range(len(combos)) for j in range(len(res["structs"]))]
                for i, j in rng.sample(cells, min(3, len(cells))):
                    combo, struct, double, outside = _choice(combos[i], res, i, j)
                    a = analyze_levels(space.nest(combo, struct, double, outside))
                    assert res["cost"][i, j] == pytest.approx(a.cycles, rel=1e-12)
                    assert res["energy"][i, j] == pytest.approx(priced(a), rel=1e-12, abs=1e-9)
                    if objective is ENERGY and any(hw is variants[k] for k in (0, 3, 9)):  # (default, SRAM reads, L1acc reads)
                        # its options are the least energy of all of them
                        assert priced(a) == pytest.approx(min(options_energy(space, combo, struct)), rel=1e-12)
                    checked += 1
    assert checked == 3 * (len(variants) + 1) * 3


def options_energy(space, combo, struct) -> list[float]:
    """The energy (`priced`) of one inner candidate with every choice of options that fits every level: each staged
    tensor staged among the inner loops or at its outer option (where it has one), 1 or 2 ways."""
    choices = [[(out, w) for out in ((False, True) if space.outer_options[x] is not None else (False,))
                for w in ((1, 2) if space.level_of[x].max_ways >= 2 else (1,))] for x in space.staged]
    out = []
    for pick in itertools.product(*choices):
        double = {x: w == 2 for x, (_, w) in zip(space.staged, pick)}
        a = analyze_levels(space.nest(combo, struct, double, [x for x, (o, _) in zip(space.staged, pick) if o]))
        if a.fits:
            out.append(priced(a))
    return out


def brute_force_best(outer: LoopNest, hw) -> tuple[float, float]:
    """(the least energy pJ, the least energy x cycles) over every inner tiling of `outer` that fits every level:
    tiles from the inner search's candidates, every order, every staging among the inner loops or in the outer nest
    at or below the SRAM staging, 1 or 2 ways; each analysed and priced on its own (`priced`)."""
    from dsasim.architect.search.level_search import _InnerSpace

    p = outer.problem
    staged = [n for n in p.tensor_names if len(hw.path(tensor_role(p, n))) > 1]
    fine = _InnerSpace(outer, hw, staged).fine  # the candidate tiles (the divisors of the outer tile, ...)
    stagings = {n: [*range(len(p.dims) + 1), *(f"outer:{outer.order[k - 1]}" if k else "outer:top"
                                                for k in range(outer.depth(n), len(outer.order) + 1))] for n in staged}
    energy, edp, seen = np.inf, np.inf, set()
    for tiles in itertools.product(*fine):
        for order in itertools.permutations(p.dims):
            for stage in itertools.product(*(stagings[n] for n in staged)):
                nest = LevelNest(outer, InnerTiling(order, dict(zip(p.dims, tiles)), dict(zip(staged, stage))), hw)
                view = (tiles, tuple((tuple(sorted(t.items())), a) for t, a in map(nest.seen, staged)))
                if view in seen:  # the same tiles and loops above every tensor: the same counts
                    continue
                seen.add(view)
                for ways in itertools.product([1, 2], repeat=len(staged)):
                    a = analyze_levels(LevelNest(outer, InnerTiling(order, nest.inner_tiles, dict(nest.inner.stage),
                                                                    dict(zip(staged, ways))), hw))
                    if a.fits:
                        e = priced(a)
                        energy, edp = min(energy, e), min(edp, e * a.cycles)
    return energy, edp


# the input read from the SRAM, the weights and outputs each in a small level (no energy figures: the SRAM rule's)
SMALL = dataclasses.replace(L1, dram_bytes_per_cycle=64.0, inner_levels=(
    MemoryLevel("L1w", 16, 8.0, holds=("weight",), setup_cycles=2),
    MemoryLevel("L1acc", 16, 2.0, holds=("output",), setup_cycles=3)))


@pytest.mark.parametrize("sram_bytes", [48, 96])
def test_the_search_picks_the_least_energy_and_edp_of_a_brute_force_walk(sram_bytes):
    """At two SRAM sizes (each its own energy per access and leakage): over the outer nests the search considers,
    every inner tiling priced independently; the least energy (edp) equals the energy (edp) search's pick's."""
    from dsasim.architect.search import layer_search
    from dsasim.architect.search.level_search import outer_pool, search_levels

    p = MatmulProblem(4, 8, 4)
    hw = dataclasses.replace(SMALL, sram_bytes=sram_bytes)
    one_level = dataclasses.replace(SMALL, inner_levels=())
    outer = {o: layer_search.search(p, one_level, sram_bytes, o) for o in (ENERGY, EDP)}
    pools = {o: outer_pool(outer[o], o, 2) for o in (ENERGY, EDP)}
    assert all(pools[o][0] == outer[o].best.nest for o in pools)  # the one-level energy (edp) winner first
    walks = {nest: brute_force_best(nest, hw) for nest in set(pools[ENERGY] + pools[EDP])}
    for o, figure in ((ENERGY, 0), (EDP, 1)):
        a = search_levels(p, SMALL, sram_bytes, o, outer_candidates=2).best
        assert a.nest.hardware.sram_bytes == sram_bytes and a.fits and a.nest.outer in pools[o]
        assert a.energy.energy_pj == pytest.approx(priced(a), rel=1e-12)
        mine = a.energy.energy_pj * (1 if o == ENERGY else a.cycles)
        assert mine == pytest.approx(min(walks[n][figure] for n in pools[o]), rel=1e-9)
    # levels without energy figures are priced by their sourced default, never a silent zero
    costs = EnergyCosts.of(hw)
    for name in ("L1w", "L1acc"):
        assert costs.level(name).read_pj.provenance.startswith("SRAM rule") and costs.level(name).read_pj.value > 0
        assert a.energy.energy_breakdown_pj[name] > 0


# A hand-derived case. A 1x3 convolution over a row of 3 pixels with one column of padding each side, 16 input and
# 24 output channels (one 16x24 TensorCore block): output pixel ow reads input columns ow-1..ow+1, so 2 of the 9
# (pixel, tap) pairs read only padding (ow=0 with kw=0, ow=2 with kw=2). Fast ports (1,024 B per cycle, no setup)
# and roomy levels, so the TensorCore's steps are the cycles and every tensor can be staged once (compulsory).
# Energy figures: 1 pJ per MAC lane per step, 1 pJ per byte read from the SRAM and from L1w, every other figure 0.
#   Inner tiles ow=1, kw=1 (9 calls of one pixel and one tap): the 2 padding-only calls are skipped, 7 steps; the
#   weight-stationary array reads the call's weight block (1 tap x 16 x 24 = 384 B) every call: 7 x 384 = 2,688 B
#   of L1w reads; padded MACs 7 x 384 = 2,688.
#   Inner tiles ow=3, kw=3 (one call): 9 steps (a call computes its padded pairs too); the weights are read once,
#   3 x 384 = 1,152 B; padded MACs 9 x 384 = 3,456.
#   Both stage every tensor once from the SRAM (image 3 x 16 = 48 B, weights 1,152 B) and the DDR store of the
#   output (3 x 24 = 72 B) reads the SRAM: 1,272 B of SRAM reads in either.
# traffic: equal inner bytes (compulsory), so the fewer cycles win: 7 steps, 1,272 + 2,688 + 2,688 = 6,648 pJ.
# energy: 1,272 + 1,152 + 3,456 = 5,880 pJ < 6,648: the one call (fewer weight reads outweigh the 2 padded steps).
# edp: 5,880 x 9 = 52,920 > 6,648 x 7 = 46,536: the 7-step tiling again.
TINY_CONV = "conv:n=1,ic=16,oc=24,h=1,w=3,kh=1,kw=3,ph=0,pw=1"
_FAST = dict(bytes_per_cycle=1024.0, setup_cycles=0, access_bytes=1, write_pj=0.0, leakage_mw=0.0)
PRICED = dataclasses.replace(
    L1, dram_bytes_per_cycle=1024.0, dma_setup_cycles=0, dram_pj_per_bit=0.0, sram_access_bytes=1, sram_read_pj=1.0,
    sram_write_pj=0.0, sram_leakage_mw=0.0, mac_pj=1.0,
    inner_levels=(MemoryLevel("L1w", 4096, holds=("weight",), read_pj=1.0, **_FAST),
                  MemoryLevel("L1i", 4096, holds=("input",), read_pj=0.0, **_FAST),
                  MemoryLevel("L1acc", 4096, holds=("output",), read_pj=0.0, **_FAST)))


@pytest.mark.parametrize("objective, steps, energy_pj", [("traffic", 7, 6648.0), ("cycles", 7, 6648.0),
                                                          ("energy", 9, 5880.0), ("edp", 7, 6648.0)])
def test_energy_picks_fewer_weight_reads_where_traffic_picks_fewer_steps(objective, steps, energy_pj):
    from dsasim.architect.search.level_search import search_levels

    a = search_levels(parse_layer(TINY_CONV), PRICED, objective=objective).best
    assert a.tensorcore_cycles == steps and a.energy.energy_pj == energy_pj
    assert a.energy.energy_breakdown_pj["L1w"] == {7: 2688.0, 9: 1152.0}[steps]
    assert a.energy.energy_breakdown_pj[SRAM_LEVEL] == 1272.0
    if steps == 7:
        assert (a.nest.inner_tiles["ow"], a.nest.inner_tiles["kw"]) == (1, 1)


def test_a_sweep_by_energy_prices_each_size_at_its_own_cost_per_access():
    """An SRAM sweep ranked by energy: each point is the level search at that size, priced with that size's SRAM
    energy per access (which differs between the sizes)."""
    from dsasim.architect.search.level_search import search_levels, sweep_levels

    p = parse_layer("gemm:m=64,n=48,k=64")
    sizes = [128 * 1024, 512 * 1024]  # (L1w is 64 KiB)
    sweep = sweep_levels(p, L1, SRAM_LEVEL, sizes, "energy")
    per_byte = []
    for size, a in zip(sizes, sweep.best):
        alone = search_levels(p, dataclasses.replace(L1, sram_bytes=size), objective="energy").best
        assert a.nest.hardware.sram_bytes == size and a.to_json() == alone.to_json()
        assert a.energy.energy_pj == alone.energy.energy_pj == pytest.approx(priced(a), rel=1e-12)
        per_byte.append(EnergyCosts.of(a.nest.hardware).level(SRAM_LEVEL).read_pj_per_byte)
    assert per_byte[0] < per_byte[1]  # a larger SRAM costs more per access (the SRAM rule)
    assert sweep.to_json()["objective"] == "energy"


def test_the_command_line_ranks_levels_by_energy_and_edp(tmp_path, capsys):
    """`dsasim search LAYER --hardware FILE --objective energy` on a TOML hardware with [[inner_levels]], and
    `sweep-sram ... --objective edp` on it: the JSON's best is the level search's, its energy the nest's priced
    independently."""
    from dsasim.cli import main

    toml = tmp_path / "levels.toml"
    toml.write_text('base = "blog"\nname = "mine"\n\n[[inner_levels]]\nname = "L1w"\ncapacity_bytes = 8192\n'
                    'bytes_per_cycle = 128.0\nholds = ["weight"]\n\n[[inner_levels]]\nname = "L1acc"\n'
                    'capacity_bytes = 4096\nbytes_per_cycle = 64.0\nholds = ["output"]\n')
    layer = "gemm:m=64,n=48,k=64"
    out = tmp_path / "search.json"
    assert main(["search", layer, "--hardware", str(toml), "--objective", "energy", "--json", str(out),
                 "--confirm", "0"]) == 0
    data = json.loads(out.read_text())
    assert data["objective"] == "energy" and [lv["level"] for lv in data["levels"]] == ["SRAM", "L1w", "L1acc"]
    from dsasim.architect.search.level_search import search_levels
    from dsasim.hardware import load_hardware

    hw = load_hardware(str(toml))
    best = search_levels(parse_layer(layer), hw, objective="energy").best
    assert data["nest"] == best.nest.to_json()
    assert data["energy_pj"] == pytest.approx(priced(analyze_levels(LevelNest.from_json(data, hw))), rel=1e-9)
    sweep = tmp_path / "sweep.json"
    assert main(["sweep-sram", layer, "--hardware", str(toml), "--sizes", "16KiB,64KiB", "--objective", "edp",
                 "--json", str(sweep), "--quiet"]) == 0
    points = json.loads(sweep.read_text())
    assert points["objective"] == "edp" and [p["capacity_bytes"] for p in points["points"]] == [16384, 65536]
    for point in points["points"]:
        alone = search_levels(parse_layer(layer), dataclasses.replace(hw, sram_bytes=point["capacity_bytes"]),
                              objective="edp").best
        assert point["best"]["nest"] == alone.nest.to_json() and point["energy_pj"] == pytest.approx(
            alone.energy.energy_pj, rel=1e-9)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err


def test_a_staged_tensors_options_are_chosen_by_energy():
    """One inner candidate, hand-derived. gemm m=2, n=48, k=16; the outer nest runs m in 2 trips (tile 1) with the
    input staged in the SRAM inside m (box 1 x 16 = 16 B); only the input has a level below the SRAM: L1i, 16 B,
    8 B per cycle, no setup; energy: 1 pJ per byte written into L1i, every other figure 0. Inner tiles m=1, n=24,
    k=8 (2 inner trips of n and of k: 2 x 2 x 2 = 8 TensorCore steps of one 16x24 block in all).
      Staged among the inner loops below n and k: box 1 x 8 = 8 B, staged 2 x 2 x 2 = 8 times = 64 B; 2 ways fit
      (16 B), nothing waits: cost max(8 steps, 64 B / 8 = 8 port cycles) = 8; energy 64 pJ.
      At its outer option (inside the outer m, held across the inner loops): box 16 B, 2 instances = 32 B; 2 ways
      would need 32 B > 16, so 1 way: the second instance's 16 B / 8 = 2 cycles wait: cost 8 + 2 = 10; energy 32.
    By energy the outer option (32 pJ < 64); by cycles the inner staging (8 < 10)."""
    from dsasim.architect.search.level_search import _InnerSpace
    from dsasim.architect.search.objective import CYCLES

    p = MatmulProblem(2, 48, 16)
    hw = dataclasses.replace(L1, dram_bytes_per_cycle=1024.0, dma_setup_cycles=0, dram_pj_per_bit=0.0,
                             sram_read_pj=0.0, sram_write_pj=0.0, sram_leakage_mw=0.0, mac_pj=0.0,
                             inner_levels=(MemoryLevel("L1i", 16, 8.0, holds=("input",), setup_cycles=0,
                                                       access_bytes=1, read_pj=0.0, write_pj=1.0, leakage_mw=0.0),))
    outer = LoopNest(p, ["m", "n", "k"], {"m": 1, "n": 48, "k": 16}, {"a": 1, "b": 0, "c": 1})
    space = _InnerSpace(outer, hw, ["a"])
    combo = np.array([[space.fine[i].index(v) for i, v in enumerate([1, 24, 8])]])
    by_energy, by_cycles = space.evaluate(combo, 0.0, ENERGY), space.evaluate(combo, 0.0, CYCLES)
    j = next(j for j, s in enumerate(by_energy["structs"]) if s[0].tolist() == [False, True, True])  # n, k above
    assert (bool(by_energy["outer"][0][0, j]), by_energy["cost"][0, j], by_energy["energy"][0, j]) == (True, 10.0, 32.0)
    assert (bool(by_cycles["outer"][0][0, j]), bool(by_cycles["double"][0][0, j]), by_cycles["cost"][0, j]) == \
        (False, True, 8.0)
