"""Dynamic shapes (`dsasim shapes`): per-shape optima, shape-generic schedules and the dispatch table.

Expected values: hand-derived utilizations of partial 16 x 24 blocks, a separate `search` per shape, and a
brute-force interval cover over the cost matrix written here independently of the module's greedy one.
"""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from dsasim import preset
from dsasim.architect.model.analytic import analyze
from dsasim.architect.problems.layers import parse_layer
from dsasim.architect.nests.loopnest import ConvProblem, LoopNest, MatmulProblem
from dsasim.architect.search.layer_search import search
from dsasim.architect.studies.shapes import parse_vary, sweep_shapes, vary_problem
from dsasim.cli import main

HW = dataclasses.replace(preset("blog"), sram_bytes=64 * 1024)


def test_parse_vary_reads_ranges_steps_and_lists():
    assert parse_vary("m=1:5") == ("m", [1, 2, 3, 4, 5])
    assert parse_vary("n=1:16:5") == ("n", [1, 6, 11, 16])
    assert parse_vary("hw=28,7,14") == ("hw", [7, 14, 28])
    for bad, message in (("m", "DIM=LO:HI"), ("m=5:1", "LO <= HI"), ("m=0:3", ">= 1"), ("m=1,1", "twice"),
                         ("m=1:9999", "at most 4096")):
        with pytest.raises(ValueError, match=message):
            parse_vary(bad)


def test_vary_problem_changes_only_the_named_dimensions():
    conv = parse_layer("resnet50.res2a_branch2b")
    assert vary_problem(conv, "n", 8) == ConvProblem(n=8, ic=64, oc=64, h=56, w=56, kh=3, padding=1)
    assert vary_problem(conv, "hw", 14) == ConvProblem(n=1, ic=64, oc=64, h=14, w=14, kh=3, padding=1)
    assert vary_problem(MatmulProblem(128, 128, 64), "m+n", 40) == MatmulProblem(40, 40, 64)
    with pytest.raises(ValueError, match="matmul layers vary m, n, k"):
        vary_problem(MatmulProblem(4, 4, 4), "ic", 2)


def test_utilization_is_the_share_of_whole_16x24_blocks():
    # k = 16 is one input block; n output channels pad up to whole blocks of 24 whatever the tiling:
    # n = 23: 23/24; n = 24: 1; n = 25: two blocks, 25/48
    sweep = sweep_shapes(MatmulProblem(4, 24, 16), "n", [23, 24, 25], HW)
    assert [p.tensorcore_utilization for p in sweep.points] == pytest.approx([23 / 24, 1.0, 25 / 48])


def _cost_of(template: dict, problem, hw) -> float:
    """A template's estimated cycles on one shape, computed here: tiles clamped, the model, the capacity."""
    tiles = {d: min(t, problem.extents[d]) for d, t in template["tiles"].items()}
    try:
        nest = LoopNest(problem, template["order"], tiles, template["stage"], template["ways"],
                        slide=template["slide"])
    except ValueError:
        return math.inf
    a = analyze(nest, hw)
    return a.estimated_cycles if a.peak_sram_bytes <= hw.sram_bytes else math.inf


def _fewest_ranges(within: list[list[bool]]) -> int:
    """Brute force: the fewest contiguous ranges, each served by one template, covering every shape."""
    n = len(within[0])
    best = [0] + [math.inf] * n  # best[j]: fewest ranges covering shapes 0..j-1
    for j in range(1, n + 1):
        for i in range(j):
            if any(all(row[i:j]) for row in within):
                best[j] = min(best[j], best[i] + 1)
    return best[n]


@pytest.mark.parametrize("layer, vary, max_loss", [("gemm:m=64,n=64,k=64", "m+n=1:64:3", 0.05),
                                                    ("conv:ic=32,oc=48,h=14,k=3,p=1", "oc=8:64:8", 0.02)])
def test_the_dispatch_table_keeps_every_shape_within_the_bound_with_the_fewest_ranges(layer, vary, max_loss):
    problem = parse_layer(layer)
    dim, values = parse_vary(vary)
    sweep = sweep_shapes(problem, dim, values, HW, max_loss)
    shapes = [vary_problem(problem, dim, v) for v in values]
    for i in (0, len(values) // 2, len(values) - 1):  # the per-shape optimum is search's, objective cycles
        assert sweep.points[i].cycles == search(shapes[i], HW, objective="cycles").best.estimated_cycles
    cost = [[_cost_of(t, p, HW) for p in shapes] for t in sweep.templates]
    best = [p.cycles for p in sweep.points]
    # ranges are contiguous, in order, and cover every shape; each shape's template is within the bound
    covered = [v for e in sweep.dispatch for v in values if e.lo <= v <= e.hi]
    assert covered == values
    for i in range(len(values)):
        t = sweep.dispatched(i)
        assert cost[t][i] <= (1 + max_loss) * best[i] * (1 + 1e-12)
    within = [[c[i] <= (1 + max_loss) * best[i] * (1 + 1e-12) for i in range(len(values))] for c in cost]
    assert len(sweep.dispatch) == _fewest_ranges(within)
    # the single schedule has the least worst-case loss
    worst = [max(c[i] / best[i] for i in range(len(values))) for c in cost]
    assert worst[sweep.single] == min(worst)
    # shape-generic templates tile the TensorCore dims in whole blocks; an exact optimum is added only for a shape
    # that no generic template serves within the bound
    generic = [k for k, t in enumerate(sweep.templates) if t["generic"]]
    assert generic and all(sweep.templates[k]["tiles"][problem.tc_in_dim] % 16 == 0
                           and sweep.templates[k]["tiles"][problem.tc_out_dim] % 24 == 0 for k in generic)
    for k, t in enumerate(sweep.templates):
        if not t["generic"]:
            served = [i for i in range(len(values)) if cost[k][i] == best[i]]
            assert served and not any(within[g][i] for g in generic for i in served[:1])


def test_shapes_command_prints_the_table_and_writes_json_and_plot(tmp_path, capsys):
    js, png = tmp_path / "s.json", tmp_path / "s.png"
    assert main(["shapes", "gemm:m=64,n=64,k=64", "--vary", "n=8:64:8", "--sram", "64KiB", "--max-loss", "3%",
                 "--json", str(js), "--plot", str(png), "--quiet", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "dispatch table within 3%" in out and "single shape-generic schedule" in out
    data = json.loads(js.read_text())
    assert [s["n"] for s in data["shapes"]] == list(range(8, 65, 8))
    assert all(s["dispatched_loss"] <= 0.03 + 1e-9 for s in data["shapes"])
    assert data["max_loss"] == 0.03 and data["dispatch"][0]["lo"] == 8 and data["dispatch"][-1]["hi"] == 64
    # a layer's shapes rank by estimated cycles, and the JSON says so (issue 29: attention's may rank otherwise)
    assert data["objective"] == "cycles" and all("dispatched_cycles" in s for s in data["shapes"])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("argv, message", [
    (["shapes", "gemm-64", "--vary", "ic=1:4"], "matmul layers vary m, n, k"),
    (["shapes", "gemm-64", "--vary", "m=1:4", "--max-loss", "lots"], "--max-loss 'lots'"),
    (["shapes", "nosuch", "--vary", "m=1:4"], "unknown layer 'nosuch'"),
])
def test_shapes_command_errors(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
