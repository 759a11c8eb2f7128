"""Schedule search, SRAM sweeps and their command lines."""

from __future__ import annotations

import argparse
import importlib
import json
import time

import pytest

from dsasim import Accelerator, preset
from dsasim.architect.model.analytic import analyze
from dsasim.architect.problems.layers import parse_layer
from dsasim.architect.nests.loopnest import ConvProblem, LoopNest, MatmulProblem
from dsasim.architect.model.lower_bounds import lower_bound
from dsasim.architect.search.layer_search import run_search, search, tile_candidates
from dsasim.architect.studies.layer_target import LayerTarget
from dsasim.architect.studies.sweep import parse_bytes, parse_sizes, sweep_sram
from dsasim.kernels.loopnest_kernel import count_loopnest, load_nest, run_loopnest

BLOG = preset("blog")


def test_blog_conv_reaches_compulsory_traffic():
    result = search(parse_layer("blog-conv"), BLOG, runner=run_loopnest, confirm_top=1)
    best = result.best_traffic
    assert best.traffic_bytes == 9_076_736 == result.bound.compulsory_bytes == result.bound.bytes
    assert best.peak_sram_bytes <= 1536 * 1024
    assert best.traced and best.simulated_cycles is not None and result.cycles_source == "simulated"
    # the best blog demo (demo3-2) moves 142 M + 1.6 M
    assert best.traffic_bytes * 15 < 142_344_192
    # the Pareto front: increasing peak, decreasing traffic, all under the capacity
    peaks = [c.peak_sram_bytes for c in result.pareto]
    traffic = [c.traffic_bytes for c in result.pareto]
    assert peaks == sorted(peaks) and traffic == sorted(traffic, reverse=True) and peaks[-1] <= 1536 * 1024
    assert traffic[-1] == 9_076_736


@pytest.mark.parametrize("problem, caps", [
    (ConvProblem(1, 4, 4, 4, 4, 3, padding=1), [16, 40, 72, 160]),
    (ConvProblem(1, 6, 5, 5, 5, 3, stride=2, padding=1), [24, 60, 200]),
    (ConvProblem(1, 16, 32, 12, 12, 1, stride=2), [512]),
    (MatmulProblem(12, 9, 16), [12, 30, 90, 250]),
])
def test_search_equals_exhaustive_enumeration_on_reduced_cases(problem, caps):
    """Every tile size, every chain of staging levels (without the dominance pruning): same best traffic."""
    hw = Accelerator("t", sram_bytes=max(caps), word_bytes=1)
    exhaustive = run_search(problem, hw, caps, exhaustive=True)
    fast = run_search(problem, hw, caps)
    for cap in caps:
        i, j = exhaustive.traffic.best_at(cap), fast.traffic.best_at(cap)
        assert (i is None) == (j is None)
        if i is not None:
            assert fast.traffic.k1[j] == exhaustive.traffic.k1[i], cap


def test_search_objectives_and_buffering():
    problem = parse_layer("conv:ic=32,oc=48,h=14,k=3,p=1")
    hw = Accelerator("small", sram_bytes=24 * 1024, word_bytes=1)
    by_traffic = search(problem, hw, objective="traffic", runner=run_loopnest, confirm_top=2)
    by_cycles = search(problem, hw, objective="cycles", runner=run_loopnest, confirm_top=2)
    assert by_cycles.best.simulated_cycles <= by_traffic.best.simulated_cycles
    assert by_traffic.best.traffic_bytes <= by_cycles.best.traffic_bytes
    for c in by_traffic.confirmed + by_cycles.confirmed:  # the trace's peak, not the model's again
        assert c.peak_sram_bytes == count_loopnest(c.nest, hw).peak_sram_bytes <= 24 * 1024 and c.traced
    assert any(w > 1 for w in by_cycles.best.nest.buffers)  # ping-pong where it fits


def test_tile_candidates_include_balanced_and_aligned_sizes():
    c = tile_candidates(56)
    assert c[0] == 56 and {28, 19, 14, 12, 8, 7, 4, 2, 1} <= set(c)
    c = tile_candidates(2048, align=16)
    assert {1024, 512, 16, 32, 48} <= set(c) and all(1 <= v <= 2048 for v in c)
    assert tile_candidates(5, exhaustive=True) == [5, 4, 3, 2, 1]


def test_search_reports_impossible_capacities():
    result = search(MatmulProblem(4, 4, 4), Accelerator("t", sram_bytes=2, word_bytes=1))
    assert result.best_traffic is None and result.best is None


def test_sweep_is_monotone_and_never_below_the_bound():
    problem = parse_layer("conv:ic=32,oc=64,h=28,k=3,p=1")
    sizes = parse_sizes("4KiB:256KiB:8")
    result = sweep_sram(LayerTarget(problem.name, problem, BLOG), sizes, runner=run_loopnest)
    traffic = [p.traffic_bytes for p in result.choices]
    assert all(a >= b for a, b in zip(traffic, traffic[1:]))
    # compulsory by hand: image 32*28*28 + weight 64*32*9 + output 64*28*28 = 25,088 + 18,432 + 50,176
    for p in result.choices:
        assert p.traffic_bytes >= p.lower_bound_bytes >= p.compulsory_bytes == 93_696
        assert p.peak_sram_bytes <= p.sram_bytes and p.cycles_source == "simulated" and p.cycles > 0
        assert count_loopnest(p.loop_nest, Accelerator("c", sram_bytes=p.sram_bytes, word_bytes=1)).loaded_bytes \
            == p.loaded_bytes
    assert traffic[-1] == 93_696  # 256 KiB holds the weights and a slab: compulsory traffic


def test_sizes_and_bytes_parse():
    assert parse_bytes("1536KiB") == 1536 * 1024 == parse_bytes("1.5MiB") == parse_bytes("1572864")
    assert parse_bytes("64K") == 65536
    assert parse_sizes("64KiB:8MiB") == [65536 << i for i in range(8)]
    sizes = parse_sizes("64KiB:8MiB:20")
    assert len(sizes) == 20 and sizes[0] == 65536 and sizes[-1] == 8 << 20 and sizes == sorted(sizes)
    assert all(s % 1024 == 0 for s in sizes)
    assert parse_sizes("1KiB,4KiB,2KiB") == [1024, 2048, 4096]
    for bad in ("12 parsecs", "0", "1.3"):
        with pytest.raises(ValueError):
            parse_bytes(bad)
    with pytest.raises(ValueError, match="below LO"):
        parse_sizes("8MiB:64KiB")


# ------------------------------------------------------------------------------------------------- CLI
def _run(argv: list[str]) -> int:
    from dsasim.cli import main  # the one error path: a CliError becomes one line and exit 2
    return main(argv)


def test_search_command_prints_loops_and_writes_deterministic_json(tmp_path, capsys):
    layer = "conv:ic=24,oc=40,h=12,k=3,p=1"
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    assert _run(["search", layer, "--sram", "16KiB", "--json", str(first), "--confirm", "2"]) == 0
    out = capsys.readouterr().out
    assert "for " in out and "stage image" in out and "lower bound" in out and "simulated" in out
    assert _run(["search", layer, "--sram", "16KiB", "--json", str(second), "--confirm", "2"]) == 0
    assert first.read_bytes() == second.read_bytes()
    data = json.loads(first.read_text())
    for key in ("layer", "sram_bytes", "loaded_bytes", "stored_bytes", "peak_sram_bytes", "lower_bound_bytes",
                "compulsory_bytes", "cycles", "loop_nest"):
        assert key in data
    assert data["sram_bytes"] == 16384 and data["peak_sram_bytes"] <= 16384
    assert data["loaded_bytes"] + data["stored_bytes"] >= data["lower_bound_bytes"] >= data["compulsory_bytes"]
    # the control triggers add up to the traffic: loads (partial sums included) and write-backs
    moved = sum(t["bytes"] for t in data["triggers"] if t["action"] != "write back")
    assert moved == data["loaded_bytes"]
    assert sum(t["bytes"] for t in data["triggers"] if t["action"] == "write back") == data["stored_bytes"]
    nest = load_nest(first)  # the generic kernel runs the JSON as is
    assert isinstance(nest, LoopNest)
    c = count_loopnest(nest, Accelerator("x", sram_bytes=16384, word_bytes=1))
    assert (c.loaded_bytes, c.stored_bytes, c.peak_sram_bytes) == (data["loaded_bytes"], data["stored_bytes"],
                                                                  data["peak_sram_bytes"])


def test_search_command_on_a_depthwise_layer_reports_the_padding_waste(tmp_path, capsys):
    """mobilenetv2.dw1 (depthwise 3x3, 32 channels, 112 x 112): the best nest moves the compulsory 803,104 B
    (by hand in test_lower_bounds), and every tile of every nest is 1 input x 1 output channel per group, so the
    TensorCore uses 1 of its 16 x 24 lanes: 3,612,672 MACs (32 x 112 x 112 x 9) in as many cycles, utilization
    1/384 = 0.002604 (6 decimals in the JSON). Deterministic JSON, loadable and runnable as is."""
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    for path in (first, second):
        assert _run(["search", "mobilenetv2.dw1", "--json", str(path), "--confirm", "1"]) == 0
    out = capsys.readouterr().out
    assert "TC util                 0.26%" in out and "each of the 32 groups is its own pass" in out
    assert first.read_bytes() == second.read_bytes()
    data = json.loads(first.read_text())
    assert data["traffic_bytes"] == data["compulsory_bytes"] == 803_104
    assert (data["macs"], data["tensorcore_cycles"], data["padded_macs"]) == (3_612_672, 3_612_672, 3_612_672 * 384)
    assert data["tensorcore_utilization"] == round(1 / 384, 6) == 0.002604
    assert data["loop_nest"]["problem"]["groups"] == 32
    nest = load_nest(first)
    c = count_loopnest(nest, BLOG)
    assert (c.loaded_bytes, c.stored_bytes) == (data["loaded_bytes"], data["stored_bytes"])


def test_search_of_a_grouped_conv_equals_exhaustive_enumeration():
    """4 groups of 2 -> 3 channels, 3x3 pad 1 on 4x4: the search's best traffic equals every nest's best."""
    problem = ConvProblem(1, 8, 12, 4, 4, 3, padding=1, groups=4)
    caps = [30, 80, 200]
    hw = Accelerator("t", sram_bytes=max(caps), word_bytes=1)
    exhaustive = run_search(problem, hw, caps, exhaustive=True)
    fast = run_search(problem, hw, caps)
    for cap in caps:
        i, j = exhaustive.traffic.best_at(cap), fast.traffic.best_at(cap)
        assert (i is None) == (j is None)
        if i is not None:
            assert fast.traffic.k1[j] == exhaustive.traffic.k1[i], cap


def test_search_command_objective_cycles_and_hardware_file(tmp_path, capsys):
    hw = tmp_path / "fp32.toml"
    hw.write_text('base = "blog"\nword_bytes = 4\nsram_bytes = 65536\n')
    out = tmp_path / "c.json"
    assert _run(["search", "gemm:m=96,n=72,k=64", "--hardware", str(hw), "--objective", "cycles",
                 "--json", str(out), "--confirm", "1"]) == 0
    data = json.loads(out.read_text())
    assert data["objective"] == "cycles" and data["word_bytes"] == 4 and data["sram_bytes"] == 65536
    assert data["cycles_source"] == "simulated" and data["peak_sram_bytes"] <= 65536


@pytest.mark.parametrize("argv, message", [
    (["search", "resnet50.nope"], "unknown ResNet-50 layer"),
    (["search", "blog-conv", "--sram", "lots"], "cannot read"),
    (["sweep-sram", "blog-conv", "--sizes", "8MiB:1MiB"], "below LO"),
])
def test_commands_reject_bad_arguments(argv, message, capsys):
    assert _run(argv) == 2
    assert message in capsys.readouterr().err


def test_sweep_command_writes_table_json_plot_and_progress(tmp_path, capsys):
    js, png = tmp_path / "s.json", tmp_path / "s.png"
    assert _run(["sweep-sram", "conv:ic=16,oc=32,h=14,k=3,p=1", "--sizes", "2KiB:64KiB:6", "--json", str(js),
                 "--plot", str(png)]) == 0
    captured = capsys.readouterr()
    assert "lower bound B" in captured.out and "[" in captured.err and "100%" in captured.err
    data = json.loads(js.read_text())
    assert len(data["points"]) == 6
    traffic = [p["traffic_bytes"] for p in data["points"]]
    assert traffic == sorted(traffic, reverse=True)
    assert all(p["traffic_bytes"] >= p["lower_bound_bytes"] for p in data["points"])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    again = tmp_path / "t.json"
    assert _run(["sweep-sram", "conv:ic=16,oc=32,h=14,k=3,p=1", "--sizes", "2KiB:64KiB:6", "--json", str(again),
                 "--quiet"]) == 0
    assert again.read_bytes() == js.read_bytes()


# ------------------------------------------------------------------------------------ the capacity rule
def test_a_peak_equal_to_the_capacity_fits_and_one_byte_less_does_not():
    """gemm 5x5x5: the smallest footprint is one element of each tensor (every tile 1): 3 words. At 3 B it
    fits exactly: a and b are loaded once per (m, n, k), 125 + 125 B, c stays and is stored once per (m, n),
    25 B: 275 B. At 2 B nothing fits. Same with 4-byte words at 12 B and 11 B; the memory model agrees."""
    from dsasim.architect.model.analytic import fits_sram
    from dsasim.errors import SramOverflowError
    assert fits_sram(3, 3) and not fits_sram(4, 3)
    p = MatmulProblem(5, 5, 5)
    for word, cap, traffic in ((1, 3, 275), (4, 12, 4 * 275)):
        hw = Accelerator("t", sram_bytes=cap, word_bytes=word)
        best = search(p, hw).best_traffic
        assert (best.peak_sram_bytes, best.traffic_bytes) == (cap, traffic)
        assert analyze(best.nest, hw).fits(cap) and not analyze(best.nest, hw).fits(cap - 1)
        assert count_loopnest(best.nest, hw).peak_sram_bytes == cap
        if cap - 1 >= word:
            below = search(p, Accelerator("t", sram_bytes=cap - 1, word_bytes=word))
            assert below.best_traffic is None and below.pareto == []  # not even a Pareto member above it
            with pytest.raises(SramOverflowError):
                count_loopnest(best.nest, Accelerator("t", sram_bytes=cap - 1, word_bytes=word))
    assert search(p, Accelerator("t", sram_bytes=2, word_bytes=1)).best_traffic is None
    sweep = sweep_sram(LayerTarget(p.name, p, Accelerator("t", sram_bytes=3, word_bytes=1)), [2, 3])
    assert [(q.traffic_bytes, q.peak_sram_bytes) for q in sweep.choices] == [(None, None), (275, 3)]


@pytest.mark.parametrize("problem", [MatmulProblem(5, 5, 5), ConvProblem(1, 5, 5, 5, 5, 3, padding=1),
                                     MatmulProblem(7, 3, 5)])
def test_search_and_sweep_agree_at_tiny_sizes(problem):
    """One capacity rule and a first pass that holds the smallest footprint: `search` at each size, one
    `sweep_sram` over all of them and the exhaustive enumeration find the same best traffic (they disagreed
    below ~40 B: the search alone found nothing)."""
    caps = list(range(2, 26))
    hw = Accelerator("t", sram_bytes=max(caps), word_bytes=1)
    exhaustive = run_search(problem, hw, caps, exhaustive=True)
    sweep = sweep_sram(LayerTarget(problem.name, problem, hw), caps)
    for cap, point in zip(caps, sweep.choices):
        i = exhaustive.traffic.best_at(cap)
        want = None if i is None else int(exhaustive.traffic.k1[i])
        got = search(problem, Accelerator("t", sram_bytes=cap, word_bytes=1)).best_traffic
        assert (None if got is None else got.traffic_bytes) == point.traffic_bytes == want, cap
        if point.peak_sram_bytes is not None:
            assert point.peak_sram_bytes <= cap


@pytest.mark.parametrize("cap", [40, 300, 1000, 4096])
def test_pareto_members_never_exceed_the_capacity(cap):
    problem = ConvProblem(1, 20, 30, 9, 9, 3, padding=1)
    hw = Accelerator("t", sram_bytes=cap, word_bytes=2)
    result = search(problem, hw)
    assert result.pareto
    for c in result.pareto:
        assert c.peak_sram_bytes <= cap and analyze(c.nest, hw).peak_sram_bytes == c.peak_sram_bytes
    traffic = [c.traffic_bytes for c in result.pareto]
    assert traffic == sorted(traffic, reverse=True) and len(set(traffic)) == len(traffic)
    assert traffic[-1] == result.best_traffic.traffic_bytes


# ------------------------------------------------------------------------------------------ exact counts
def test_counts_are_exact_up_to_two_to_the_53():
    """count_bound_bytes = (tensors + 1) x word x prod(extents): a gemm of 2**17 cubed with 1-byte words is
    4 x 2**51 = 2**53 exactly (searched); one more row is refused before any evaluation."""
    from dsasim.architect.search.layer_search import EXACT_COUNT_LIMIT, LayerTooLargeError, Space, count_bound_bytes, evaluate_nests
    edge = MatmulProblem(2 ** 17, 2 ** 17, 2 ** 17)
    assert count_bound_bytes(edge, 1) == 2 ** 53 == EXACT_COUNT_LIMIT
    hw = Accelerator("t", sram_bytes=1536 * 1024, word_bytes=1)
    # every tile 1, every tensor innermost: a and b move m*n*k each, c is loaded k - 1 and stored k times per
    # element: 2 * 2**51 + (2 * 2**17 - 1) * 2**34 = 2**53 - 2**34, exactly (as float64 and int64)
    nest = LoopNest(edge, ("m", "n", "k"), {"m": 1, "n": 1, "k": 1}, {"a": 3, "b": 3, "c": 3})
    assert int(evaluate_nests([nest], hw).traffic_bytes[0]) == 2 ** 53 - 2 ** 34 == analyze(nest, hw).traffic_bytes
    result = search(edge, hw)
    best = result.best_traffic
    a = analyze(best.nest, hw)  # Python integers
    assert (best.loaded_bytes, best.stored_bytes) == (a.loaded_bytes, a.stored_bytes)
    assert result.bound.bytes <= best.traffic_bytes < 2 * result.bound.bytes
    for too_big, word in ((MatmulProblem(2 ** 17 + 1, 2 ** 17, 2 ** 17), 1), (edge, 2),
                          (MatmulProblem(3_000_000, 3_000_000, 3_000_000), 1)):
        with pytest.raises(LayerTooLargeError, match="layer too large for exact counts"):
            search(too_big, Accelerator("t", sram_bytes=1 << 20, word_bytes=word))
        with pytest.raises(LayerTooLargeError):
            Space(too_big, Accelerator("t", sram_bytes=1 << 20, word_bytes=word))


def test_search_command_refuses_a_layer_too_large_for_exact_counts(capsys):
    assert _run(["search", "gemm:m=3000000,n=3000000,k=3000000", "--confirm", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dsasim search: layer too large for exact counts") and "best / bound" not in err


# ------------------------------------------------------------------------------------------ work estimates
def test_work_estimates_by_hand():
    from dsasim.architect.search.layer_search import (SECONDS_PER_TRACED_SCHEDULE, TRACED_OPERATIONS_PER_SECOND, Space, _batches,
                               estimate_search_work, estimate_trace_work, first_pass_size)
    # gemm 4x4x4, every tile 1, all innermost: 64 computes, each touching 3 tensors, 64 scope instances of each
    # tensor (entered and left): 64 x 4 + 2 x 3 x 64 = 640 operations
    nest = LoopNest(MatmulProblem(4, 4, 4), ("m", "n", "k"), {"m": 1, "n": 1, "k": 1}, {"a": 3, "b": 3, "c": 3})
    w = estimate_trace_work([nest])
    assert w.traced_operations == 640
    assert w.seconds == pytest.approx(640 / TRACED_OPERATIONS_PER_SECOND + SECONDS_PER_TRACED_SCHEDULE)
    # the first pass is counted without evaluating: the same number as the batches the search evaluates
    for layer in ("resnet50.res2a_branch2b", "gemm-1024", "conv:ic=5,oc=7,h=6,k=3,s=2,p=1"):
        space = Space(parse_layer(layer), BLOG)
        assert first_pass_size(space) == sum(b.n for b in _batches(space)) > 0
        assert estimate_search_work(parse_layer(layer), BLOG).evaluations == first_pass_size(space)


def test_hours_of_work_are_refused_up_front_unless_forced(monkeypatch, capsys):
    search_module = importlib.import_module("dsasim.architect.search.layer_search")
    from dsasim.architect.search.layer_search import WorkTooLargeError
    # 100,000 SRAM sizes: refused before any search (a fixed cost per traced size alone is hours)
    start = time.perf_counter()
    sizes = ",".join(str(s) for s in range(1, 100_001))
    assert _run(["sweep-sram", "conv:ic=8,oc=8,h=8,k=3,p=1", "--sizes", sizes, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert time.perf_counter() - start < 20
    assert err.startswith("dsasim sweep-sram: estimated work far beyond the usual") and "hours" in err
    assert "--force" in err and "100,000 SRAM size(s)" in err
    # 1-element tiles over a large layer: the blog conv at 64 B of SRAM traces hundreds of millions of operations
    with pytest.raises(WorkTooLargeError, match="tracing") as info:
        search(parse_layer("blog-conv"), BLOG, 64, runner=run_loopnest)
    assert info.value.estimate.traced_operations > 10 ** 8 and info.value.estimate.seconds > 3600
    # forced: it runs, and the warning is printed even with --quiet
    monkeypatch.setattr(search_module, "WORK_LIMIT_SECONDS", 0.0)
    warnings: list[str] = []
    result = search(MatmulProblem(4, 4, 4), Accelerator("t", sram_bytes=64, word_bytes=1), runner=run_loopnest,
                    force=True, warn=warnings.append)
    assert result.best.traced and len(warnings) == 2 and all("estimated work" in w for w in warnings)
    with pytest.raises(WorkTooLargeError):
        search(MatmulProblem(4, 4, 4), Accelerator("t", sram_bytes=64, word_bytes=1))
    assert _run(["sweep-sram", "gemm:m=4,n=4,k=4", "--sizes", "16,64", "--quiet", "--force"]) == 0
    captured = capsys.readouterr()
    assert "dsasim sweep-sram: warning: estimated work far beyond the usual" in captured.err
    assert "[" not in captured.err and "lower bound B" in captured.out  # no progress bar, the table
    assert _run(["search", "gemm:m=4,n=4,k=4", "--sram", "64", "--force", "--confirm", "1"]) == 0
    assert "dsasim search: warning: estimated work" in capsys.readouterr().err
    assert _run(["search", "gemm:m=4,n=4,k=4", "--sram", "64"]) == 2


def test_top_k_keeps_one_candidate_per_structure():
    """The top-k lists keep the best candidate of each structure (the above-sets of all tensors): two candidates
    whose tensors have the same above bits but on different tensors are different structures."""
    import numpy as np
    from dsasim.architect.search.layer_search import Space, _TopK
    space = Space(parse_layer("gemm-64"), BLOG)
    rows = np.zeros((3, space.width), np.int64)
    rows[0, space.nd:space.nd + 2] = (1, 0)  # loop 0 above the first tensor only
    rows[1, space.nd:space.nd + 2] = (0, 1)  # loop 0 above the second tensor only: another structure
    rows[2, space.nd:space.nd + 2] = (1, 0)  # the first structure again, with a worse key
    top = _TopK(4, space)
    top.merge(np.array([1.0, 2.0, 3.0]), np.zeros(3), rows)
    assert top.rows.tolist() == rows[:2].tolist()
