"""Networks on hardware with levels below the SRAM (issue 30): `dsasim network NAME --hardware blog-l1` and
`sweep-sram --network NAME --hardware blog-l1` search each tensorcore layer's best `LevelNest` under each SRAM size,
report what each level below the SRAM moves, evaluate chains and attention groups as their member layers (and say
so), and price the levels' accesses.

The network: two linears (16 x 64 -> 96 -> 32, no bias; a ReLU between is the first one's epilogue) and a softmax.
On one-level hardware the linears are a fused GEMM chain; on blog-l1 they are two layers. Every figure below is the
compulsory one, derived by hand (blog's word is 1 byte): whatever the tiling, a layer moves at least its tensors once,
and on 64 KiB of SRAM (L1w 64 KiB, L1i 32 KiB, L1acc 16 KiB) every tensor here fits, so the least traffic is that.
"""

from __future__ import annotations

import dataclasses
import json
import math

from pathlib import Path

import pytest
import torch
from torch import nn

from dsasim import preset
from dsasim.architect.model.hierarchy import LevelNest, analyze_levels
from dsasim.architect.search.level_search import search_levels
from dsasim.architect.studies.network import import_network
from dsasim.architect.studies.network_eval import evaluate_network, sweep_network
from dsasim.architect.studies.sweep import estimate_network_sweep_work
from dsasim.cli import main
from dsasim.cli.network import format_network

L1 = preset("blog-l1")
BLOG = preset("blog")
KIB = 1024
SIZES = [64 * KIB, 256 * KIB]


from dsasim.user_code import load_module

# the network of examples/network_levels.py (two linears, a ReLU fused between, a softmax), loaded from the example
# itself so the docs' figure and these tests cannot describe two different networks
TwoLinear = load_module(str(Path(__file__).resolve().parent.parent / "examples" / "network_levels.py"), "network",
                        "examples/network_levels.py").TwoLinear


@pytest.fixture(scope="module")
def network():
    return import_network(TwoLinear(), (16, 64), "two-linear")


@pytest.fixture(scope="module")
def results(network):
    """The network on blog-l1 at 64 KiB and 256 KiB (in this process)."""
    return evaluate_network(network, [L1], SIZES)[0]


def _nest_without_name(schedule: dict) -> dict:
    """A LevelNest's JSON with its problem's name dropped (a network labels the nest with the layer's name)."""
    outer = {**schedule["outer"], "problem": {k: v for k, v in schedule["outer"]["problem"].items() if k != "name"}}
    return {"outer": outer, "inner": schedule["inner"]}


def test_each_layer_is_the_single_layer_level_search_run_on_its_own(network, results):
    # per SRAM size and layer: the network's figures are search_levels' of that layer at that size, run alone
    # (the network shares inner searches across sizes: this also checks that sharing changes nothing)
    for size, result in zip(SIZES, results):
        layers = {x.layer.name: x for x in result.layers}
        for name in ("a", "b"):
            x, alone = layers[name], search_levels(layers[name].layer.problem, L1, size).best
            sram = alone.level("SRAM")
            assert (x.loaded_bytes, x.stored_bytes, x.cycles) == (sram.loaded_bytes, sram.stored_bytes,
                                                                    round(alone.cycles))
            assert x.level_bytes == tuple((lv.level, lv.loaded_bytes, lv.stored_bytes) for lv in alone.levels[1:])
            assert _nest_without_name(x.schedule) == _nest_without_name(alone.nest.to_json())


def test_a_layer_equals_dsasim_search_on_blog_l1(results, tmp_path, capsys):
    # `dsasim search LAYER --hardware blog-l1` of layer b (16 x 96 x 32), its JSON against the network's entry
    path = tmp_path / "b.json"
    assert main(["search", "gemm:m=16,n=32,k=96", "--hardware", "blog-l1", "--sram", "64KiB", "--confirm", "0",
                 "--json", str(path)]) == 0
    capsys.readouterr()
    alone = json.loads(path.read_text())
    b = next(x for x in results[0].layers if x.layer.name == "b")
    sram, *inner = alone["levels"]
    assert (b.loaded_bytes, b.stored_bytes, b.cycles) == (sram["loaded_bytes"], sram["stored_bytes"], alone["cycles"])
    assert [list(row) for row in b.level_bytes] == [[lv["level"], lv["loaded_bytes"], lv["stored_bytes"]]
                                                   for lv in inner]
    assert _nest_without_name(b.schedule) == _nest_without_name(alone["nest"])
    # b has no epilogue, bias or batch: its energy is its nest's, priced at 64 KiB, inner levels included
    assert math.isclose(b.energy.energy_pj, alone["energy_pj"], rel_tol=1e-12)
    assert {"L1w", "L1i", "L1acc"} <= set(b.energy.energy_breakdown_pj)


def test_the_figures_by_hand_and_the_totals_are_the_sums(results):
    small = results[0]
    a, b, softmax = small.layers
    # a: input 16x64 = 1,024 B and weight 64x96 = 6,144 B loaded, output 16x96 = 1,536 B stored; each staged into
    # its level once (L1i the input, L1w the weight) and the output written back from L1acc once
    assert (a.loaded_bytes, a.stored_bytes) == (1024 + 6144, 1536)
    assert a.level_bytes == (("L1w", 6144, 0), ("L1i", 1024, 0), ("L1acc", 0, 1536))
    # b: input 16x96 = 1,536 B, weight 96x32 = 3,072 B, output 16x32 = 512 B
    assert (b.loaded_bytes, b.stored_bytes) == (1536 + 3072, 512)
    assert b.level_bytes == (("L1w", 3072, 0), ("L1i", 1536, 0), ("L1acc", 0, 512))
    # the softmax streams through the SRAM: 16x32 = 512 B read, 512 B written; nothing below the SRAM
    assert (softmax.loaded_bytes, softmax.stored_bytes, softmax.level_bytes) == (512, 512, ())
    # totals: DDR 7,168 + 4,608 + 512 = 12,288 B loaded, 1,536 + 512 + 512 = 2,560 B stored; per level a + b
    assert (small.loaded_bytes, small.stored_bytes) == (12288, 2560)
    assert small.level_bytes == [("L1w", 9216, 0), ("L1i", 2560, 0), ("L1acc", 0, 2048)]
    assert small.cycles == a.cycles + b.cycles + softmax.cycles
    data = small.to_json()
    assert data["levels"] == [{"level": "L1w", "parent": "SRAM", "loaded_bytes": 9216, "stored_bytes": 0},
                              {"level": "L1i", "parent": "SRAM", "loaded_bytes": 2560, "stored_bytes": 0},
                              {"level": "L1acc", "parent": "SRAM", "loaded_bytes": 0, "stored_bytes": 2048}]
    assert data["layers"][0]["levels"] == [{"level": "L1w", "loaded_bytes": 6144, "stored_bytes": 0},
                                           {"level": "L1i", "loaded_bytes": 1024, "stored_bytes": 0},
                                           {"level": "L1acc", "loaded_bytes": 0, "stored_bytes": 1536}]
    assert "levels" not in data["layers"][2]  # the softmax: nothing below the SRAM
    # energy: the layers' reports summed, each level's too
    assert math.isclose(small.energy.energy_pj, sum(x.energy.energy_pj for x in small.layers), rel_tol=1e-9)
    assert math.isclose(small.energy.energy_breakdown_pj["L1w"],
                        sum(x.energy.energy_breakdown_pj.get("L1w", 0.0) for x in small.layers), rel_tol=1e-9)


def test_the_chain_is_evaluated_as_its_layers_and_the_output_says_so(network, results):
    assert [c.members for c in network.chains] == [(0, 1)]  # a fused chain on one-level hardware
    small = results[0]
    assert [x.layer.name for x in small.layers] == ["a", "b", "softmax"]
    assert small.unfused_on_levels == ("a+b",) and small.to_json()["unfused_on_levels"] == ["a+b"]
    text = format_network(small)
    assert ("note: on blog-l1 (levels below the SRAM) chains and attention groups are searched as their layers: a+b"
            in text)
    assert "L1w: 9,216 B staged and written back" in text
    assert text.splitlines()[0].split()[4:10] == ["L1w", "B", "L1i", "B", "L1acc", "B"]  # a column per level
    assert all(len(line) <= 120 for line in text.splitlines()[:5])  # the table, its level columns included
    # without fusion nothing is left unfused: no note
    unfused = evaluate_network(network, [L1], SIZES[:1], fusion=False)[0][0]
    assert unfused.unfused_on_levels == () and "searched as their layers" not in format_network(unfused)
    assert unfused.to_json()["layers"] == small.to_json()["layers"]


def test_one_level_json_has_no_level_keys(network):
    one = evaluate_network(network, [BLOG], SIZES[:1])[0][0]
    data = one.to_json()
    assert [x.layer.name for x in one.layers] == ["a+b", "softmax"]  # the chain, fused
    assert "levels" not in data and "unfused_on_levels" not in data
    assert all("levels" not in x for x in data["layers"])


def test_the_schedule_names_a_levelnest_that_rebuilds(results):
    for result in results:
        sized = dataclasses.replace(L1, sram_bytes=result.sram_bytes)
        for x in result.layers[:2]:
            assert x.schedule["kind"] == "levelnest"
            nest = LevelNest.from_json(x.schedule, sized)
            assert nest.to_json() == {k: v for k, v in x.schedule.items() if k != "kind"}  # round trip
            assert nest.problem.name == x.layer.name
            a = analyze_levels(nest)
            assert (a.level("SRAM").loaded_bytes, a.level("SRAM").stored_bytes) == (x.loaded_bytes, x.stored_bytes)
            assert tuple((lv.level, lv.loaded_bytes, lv.stored_bytes) for lv in a.levels[1:]) == x.level_bytes


def test_the_same_inputs_give_the_same_json_whichever_executor(network, results):
    from dsasim.architect.studies.executor import open_executor

    pool = open_executor("process", 2)
    try:
        again = sweep_network(network, [L1], SIZES, pool)
    finally:
        pool.close()
    assert [json.dumps(r.to_json()) for r in again.results[0]] == [json.dumps(r.to_json()) for r in results]
    points = again.to_json()["points"]
    assert [p["levels"] for p in points] == [r.to_json()["levels"] for r in results]


def test_the_estimate_counts_a_level_search_per_layer_and_size(network):
    from dsasim.architect.search.level_search import estimate_level_search_work

    work = estimate_network_sweep_work(network, [L1], 3)
    # on levels the chain is two layers, each searched once per size (3 sizes)
    by_hand = [estimate_level_search_work(network.layers[i].problem, L1, n_searches=3) for i in (0, 1)]
    assert work.seconds == pytest.approx(sum(w.seconds for w in by_hand), rel=1e-12)
    assert work.evaluations == sum(w.evaluations for w in by_hand)
    # each level search: its outer (one-level) search's estimate over its usual share (0.6), plus 2 s of inner searches
    from dsasim.architect.search.layer_search import estimate_search_work
    outer = [estimate_search_work(network.layers[i].problem, dataclasses.replace(L1, inner_levels=()), 1).seconds
             for i in (0, 1)]
    assert work.seconds == pytest.approx(sum(3 * (s / 0.6 + 2.0) for s in outer), rel=1e-12)
    assert "2 searches (2 distinct layers and 0 chains" in work.what
    # on one level: one chain search (its layers' fronts), no layer on its own
    assert "1 searches (0 distinct layers and 1 chains" in estimate_network_sweep_work(network, [BLOG], 3).what


@pytest.mark.parametrize("argv, expect", [
    (["network", "resnet18", "--hardware", "blog-l1", "--sram", "32KiB"],
     "SRAM size 32,768 B on blog-l1: Accelerator 'blog-l1': memory level 'L1w' (65,536 bytes) is larger than its "
     "parent 'SRAM' (32,768 bytes)"),
    (["sweep-sram", "--network", "resnet18", "--hardware", "blog-l1", "--sizes", "32KiB,1MiB"],
     "give sizes at least as large as the levels below the SRAM"),
    (["sweep-sram", "--network", "resnet18", "--hardware", "blog-l1", "--sizes", "1MiB", "--level", "L1w"],
     "--level does not apply to a --network sweep"),
])
def test_what_the_levels_cannot_take_is_refused_in_one_line(argv, expect, capsys):
    from cli_helpers import one_line_error
    one_line_error(argv, capsys, expect)


def test_a_batched_layer_moves_its_level_bytes_once_per_repeat(results):
    # a bmm of 2 independent repeats of layer b's problem runs its nest twice: every level's bytes doubled
    from dsasim.architect.studies.network import TENSORCORE, NetworkLayer
    from dsasim.architect.studies.network_eval import _tensorcore_outcome
    from dsasim.architect.studies.target_figures import TargetFigures
    from dsasim.architect.studies.level_target import LevelTarget

    b = results[0].layers[1]
    choice, = LevelTarget("b", b.layer.problem, L1).network_choices([64 * KIB], "traffic")
    twice = NetworkLayer(name="bmm", op="matmul", kind=TENSORCORE, shape="2 x b", problem=b.layer.problem, count=2)
    x = _tensorcore_outcome(twice, dataclasses.replace(L1, sram_bytes=64 * KIB), TargetFigures.of(choice))
    assert x.level_bytes == (("L1w", 2 * 3072, 0), ("L1i", 2 * 1536, 0), ("L1acc", 0, 2 * 512))
    assert (x.loaded_bytes, x.stored_bytes) == (2 * b.loaded_bytes, 2 * b.stored_bytes)


def test_the_inner_search_is_shared_across_sizes_only_where_the_size_cannot_change_it():
    # an outer nest's inner search depends on the SRAM size only through the energy's price per SRAM access
    from dsasim.architect.search.level_search import _inner_cache_key
    from dsasim.architect.search.objective import objective_named

    nest = search_levels(import_network(TwoLinear(), (16, 64), "n").layers[1].problem, L1, 64 * KIB).best.nest.outer
    at = lambda size, objective: _inner_cache_key(nest, dataclasses.replace(L1, sram_bytes=size),  # noqa: E731
                                                  objective_named(objective))
    assert at(64 * KIB, "traffic") == at(1024 * KIB, "traffic")
    assert at(64 * KIB, "cycles") == at(1024 * KIB, "cycles")
    assert at(64 * KIB, "energy") != at(1024 * KIB, "energy")
    assert at(64 * KIB, "edp") != at(1024 * KIB, "edp")
    assert at(64 * KIB, "traffic") != at(64 * KIB, "cycles")


class SameShapeTwice(nn.Module):
    """Two linears of one shape (32 -> 32): one search serves both."""

    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Linear(32, 32, bias=False)
        self.second = nn.Linear(32, 32, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.second(self.first(x))


def test_layers_of_one_shape_share_a_search_and_each_schedule_names_its_layer():
    net = import_network(SameShapeTwice(), (16, 32), "same-shape")
    first, second = evaluate_network(net, [L1], [64 * KIB])[0][0].layers
    assert first.layer.problem == second.layer.problem  # one search
    assert (first.loaded_bytes, first.level_bytes) == (second.loaded_bytes, second.level_bytes)
    assert first.schedule["outer"]["problem"]["name"] == "first"
    assert second.schedule["outer"]["problem"]["name"] == "second"
    assert LevelNest.from_json(second.schedule, dataclasses.replace(L1, sram_bytes=64 * KIB)).problem.name == "second"
