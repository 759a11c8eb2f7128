"""`Objective`: the one parser, the ranking keys (hand-derived on small candidate lists, ties included), and every
search and command taking its objective from the registry."""

from __future__ import annotations

import pickle
from types import SimpleNamespace

import numpy as np
import pytest

from dsasim.architect.search.objective import (CYCLES, DEFAULT_OBJECTIVE, EDP, ENERGY, OBJECTIVES, TRAFFIC,
                                        Objective, UnknownObjectiveError, describe_objectives,
                                        lexicographic_less, objective_named)
from dsasim.hardware import load_hardware

# (traffic, cycles, peak) of five candidates; C and E are equal in every figure (a full tie)
CANDIDATES = [(100, 50, 10),  # A
              (100, 40, 20),  # B
              (90, 60, 30),   # C
              (100, 40, 15),  # D
              (90, 60, 30)]   # E
A, B, C, D, E = range(5)


# ----------------------------------------------------------------------------------------------- the parser
def test_a_name_or_an_objective_parses_to_the_registered_instance():
    assert objective_named("traffic") is TRAFFIC and objective_named("cycles") is CYCLES
    assert objective_named(CYCLES) is CYCLES
    assert list(OBJECTIVES) == ["traffic", "cycles", "energy", "edp"] and all(OBJECTIVES[n].name == n for n in OBJECTIVES)
    assert DEFAULT_OBJECTIVE is TRAFFIC


@pytest.mark.parametrize("bad", ["power", "Traffic", "", None, 3,
                                 Objective("cycles", "a forged entry", ("traffic", "cycles", "peak"), False)])
def test_anything_else_is_refused_naming_the_choices(bad):
    with pytest.raises(UnknownObjectiveError, match=r"unknown objective .*: choose one of 'traffic', 'cycles', 'energy', 'edp'"):
        objective_named(bad)
    assert issubclass(UnknownObjectiveError, ValueError)  # the CLI and callers catching ValueError still do


@pytest.mark.parametrize("name, ranking, why", [
    ("edp2", ("traffic", "power"), "ranking must list distinct figures"),
    ("edp2", ("traffic", "cycles", "cycles"), "ranking must list distinct figures"),
    ("edp2", (), "ranking must list distinct figures"),
    ("two words", ("traffic", "cycles", "peak"), "non-empty identifier"),
])
def test_a_malformed_objective_is_refused(name, ranking, why):
    with pytest.raises(ValueError, match=why):
        Objective(name, "one line", ranking, False)


def test_an_objective_equals_its_name_as_the_string_did():
    """A result's objective was the string 'cycles' before issue 27: comparisons with it still hold."""
    assert CYCLES == "cycles" and "cycles" == CYCLES and CYCLES != "traffic" and CYCLES != TRAFFIC
    assert hash(CYCLES) == hash("cycles") and {"cycles": 1}[CYCLES] == 1
    assert Objective("cycles", "a forged entry", ("traffic", "cycles", "peak"), False) != CYCLES


def test_an_objective_pickles_to_the_registry_instance():
    """A worker process (the network evaluation's executors) gets the registry's instance back."""
    assert pickle.loads(pickle.dumps(CYCLES)) is CYCLES
    assert str(TRAFFIC) == "traffic"


# ------------------------------------------------------------------------------------------- ranking keys
def test_keys_rank_by_the_primary_figure_then_the_tie_breaks():
    """By traffic: C and E (90) first, equal in everything, so in their order; then the 100s, of which B and D
    tie in cycles (40) and D's smaller peak (15 < 20) puts it first; A (50 cycles) last: C E D B A.
    By cycles: B and D (40), D first by peak; A (50); C and E (60) in their order: D B A C E."""
    def ranked(objective: Objective) -> list[int]:
        return sorted(range(5), key=lambda i: objective.key(*CANDIDATES[i]))

    assert ranked(TRAFFIC) == [C, E, D, B, A]
    assert ranked(CYCLES) == [D, B, A, C, E]
    assert TRAFFIC.key(traffic=1, cycles=2, peak=3) == (1, 2, 3) and CYCLES.key(1, 2, 3) == (2, 1, 3)
    assert TRAFFIC.primary == "traffic" and CYCLES.primary == "cycles"


def test_without_a_peak_equal_figures_keep_their_order():
    """No peak: B and D tie outright (100, 40) and keep their order, B first: by traffic C E B D A."""
    assert TRAFFIC.key(traffic=5, cycles=7) == (5, 7) and CYCLES.key(traffic=5, cycles=7) == (7, 5)
    assert sorted(range(5), key=lambda i: TRAFFIC.key(*CANDIDATES[i][:2])) == [C, E, B, D, A]


def test_a_tuple_figure_counts_as_its_components():
    """A hierarchy's inner search ranks traffic as DDR bytes, then inner bytes."""
    assert TRAFFIC.key(traffic=(5, 7), cycles=3.0) == (5, 7, 3.0)
    assert CYCLES.key(traffic=(5, 7), cycles=3.0) == (3.0, 5, 7)


def test_order_sorts_arrays_as_the_key_sorts_scalars():
    traffic, cycles, peak = (np.array(column) for column in zip(*CANDIDATES))
    assert TRAFFIC.order(traffic, cycles, peak).tolist() == [C, E, D, B, A]
    assert CYCLES.order(traffic, cycles, peak).tolist() == [D, B, A, C, E]
    assert TRAFFIC.order(traffic, cycles).tolist() == [C, E, B, D, A]  # no peak: B, D tie, stable


def test_lexicographic_less_elementwise():
    """Pairs (a, b): (1,9)<(2,0) yes; (2,0)<(2,1) yes; (2,1)<(2,1) no (equal); (3,0)<(2,5) no."""
    a = (np.array([1, 2, 2, 3]), np.array([9, 0, 1, 0]))
    b = (np.array([2, 2, 2, 2]), np.array([0, 1, 1, 5]))
    assert lexicographic_less(a, b).tolist() == [True, True, False, False]
    assert lexicographic_less((1, 2, 3), (1, 2, 4)) and not lexicographic_less((1, 2, 3), (1, 2, 3))


def test_the_help_lists_every_objective_with_its_description():
    text = describe_objectives()
    for o in OBJECTIVES.values():
        assert f"{o.name} ({o.description})" in text and "\n" not in o.description


# ---------------------------------------------------------------------------- the searches use the keys
def test_a_fused_space_is_ranked_by_the_objective_with_the_peak_last():
    """A 2 x 3 grid of fused nests (invalid: the last one; cap 100 B). Valid and fitting: (0,0) t=50 c=9 p=80,
    (0,1) t=50 c=7 p=90, (0,2) t=40 c=9 p=200 (too large), (1,0) t=60 c=5 p=10, (1,1) t=50 c=7 p=60.
    By traffic: 50s; of them cycles 7: (0,1) p=90 and (1,1) p=60: the smaller peak, (1,1).
    By cycles: (1,0) (5 cycles)."""
    from dsasim.architect.search.fused_search import _best_index

    space = SimpleNamespace(valid=np.array([[True, True, True], [True, True, False]]),
                            traffic_bytes=np.array([[50, 50, 40], [60, 50, 1]]),
                            estimated_cycles=np.array([[9, 7, 9], [5, 7, 1]]),
                            peak_sram_bytes=np.array([[80, 90, 200], [10, 60, 1]]))
    assert _best_index(space, 100, TRAFFIC) == (1, 1)
    assert _best_index(space, 100, CYCLES) == (1, 0)
    assert _best_index(space, 5, TRAFFIC) is None


def test_an_inner_search_ranks_by_the_objective_across_outer_nests():
    """Three inner candidates (1 x 3; the last does not fit): cost 30, 20, 1; inner traffic 7, 9, 0. By traffic
    the first (7 B), key (DDR 100, 7, 30.0); by cycles the second (20), key (20.0, DDR 100, 9)."""
    from dsasim.architect.search.level_search import _ranked

    result = {"cost": np.array([[30.0, 20.0, 1.0]]), "traffic": np.array([[7, 9, 0]]),
              "fits": np.array([[True, True, False]])}
    assert _ranked(result, 100, TRAFFIC) == ((100, 7, 30.0), (0, 0))
    assert _ranked(result, 100, CYCLES) == ((20.0, 100, 9), (0, 1))
    assert _ranked(dict(result, fits=np.zeros((1, 3), bool)), 100, TRAFFIC) is None
    # energy 5, 3 pJ (and 0 for the one that does not fit): by energy the second (3), key (3.0, cost 20.0, DDR 100,
    # 9); by edp (energy x cost: 150, 60) the second, key (60.0, 3.0, DDR 100, 9). Energy 2, 4: by energy the first
    # (2), key (2.0, 30.0, 100, 7); by edp (60, 80) the first, key (60.0, 2.0, 100, 7)
    energy = dict(result, energy=np.array([[5.0, 3.0, 0.0]]))
    assert _ranked(energy, 100, ENERGY) == ((3.0, 20.0, 100, 9), (0, 1))
    assert _ranked(energy, 100, EDP) == ((60.0, 3.0, 100, 9), (0, 1))
    cheap_first = dict(result, energy=np.array([[2.0, 4.0, 0.0]]))
    assert _ranked(cheap_first, 100, ENERGY) == ((2.0, 30.0, 100, 7), (0, 0))
    assert _ranked(cheap_first, 100, EDP) == ((60.0, 2.0, 100, 7), (0, 0))


def test_the_library_refuses_an_unknown_objective_before_any_work():
    from dsasim.architect.problems.chain_catalogue import parse_chain
    from dsasim.architect.search.fused_search import search_chain
    from dsasim.architect.problems.layers import parse_layer
    from dsasim.architect.search.level_search import search_levels, sweep_levels
    from dsasim.architect.studies.network_eval import evaluate_network
    from dsasim.architect.search.layer_search import run_search, search, search_front
    from dsasim.architect.studies.chain_target import ChainTarget
    from dsasim.architect.studies.sweep import sweep_chain

    blog, l1 = load_hardware("blog"), load_hardware("blog-l1")
    gemm = parse_layer("gemm:m=8,n=8,k=8")
    chain = parse_chain("gemm-chain:m=16,n=16,k=16,l=16")
    calls = [lambda: search(gemm, blog, objective="fast"),
             lambda: search_front(gemm, blog, [4096], objective="fast"),
             lambda: run_search(gemm, blog, [4096], "fast"),
             lambda: search_chain(chain, blog, objective="fast"),
             lambda: sweep_chain(ChainTarget("c", chain, blog), [4096], objective="fast"),
             lambda: evaluate_network(SimpleNamespace(chains=()), [blog], [4096], objective="fast"),
             lambda: search_levels(gemm, l1, objective="fast"),
             lambda: sweep_levels(gemm, l1, "SRAM", [65536], objective="fast")]
    for call in calls:
        with pytest.raises(UnknownObjectiveError, match="choose one of 'traffic', 'cycles'"):
            call()


def test_a_partition_is_ranked_by_the_objective_first_split_on_ties():
    """A two-layer chain: all fused moves 100 B in 50 cycles; layer by layer 60 + 60 = 120 B in 10 + 10 = 20
    cycles. By traffic: fused (100 < 120); by cycles: layer by layer (20 < 50). Fused at 120 B and 20 cycles
    ties layer by layer outright: the first split tried, all fused, is kept."""
    from dsasim.architect.search.fused_search import SegmentChoice, _partition

    class TwoLayers:
        layers, residual = ("a", "b"), False

        def __len__(self) -> int:
            return 2

        def compulsory_bytes(self, word_bytes: int) -> int:
            return 0

    def part(first: int, stop: int, traffic: int, cycles: int) -> SegmentChoice:
        return SegmentChoice(first, stop, None, None, None, traffic, 0, 10, 1, 1, cycles, "estimate")

    hw = load_hardware("blog")
    layers = [part(0, 1, 60, 10), part(1, 2, 60, 10)]
    for fused, objective, want in (((100, 50), TRAFFIC, "fused"), ((100, 50), CYCLES, "layers"),
                                   ((120, 20), TRAFFIC, "fused"), ((120, 20), CYCLES, "fused")):
        whole = part(0, 2, *fused)
        best = _partition(TwoLayers(), hw, objective, layers, {}, {(0, 2): whole}, 0, 0.0).best
        assert best == ([whole] if want == "fused" else layers), (fused, objective)


def test_result_best_follows_the_objective():
    """gemm m=128, n=96, k=64 under 16 KiB: the least-traffic nest is not the fastest (the fastest double-buffers
    every tensor and moves more), so the two objectives' `best` differ, each its own ranking's winner."""
    from dsasim.architect.problems.layers import parse_layer
    from dsasim.architect.search.layer_search import search

    blog = load_hardware("blog")
    gemm = parse_layer("gemm:m=128,n=96,k=64")
    by_traffic, by_cycles = search(gemm, blog, 16384), search(gemm, blog, 16384, "cycles")
    assert by_traffic.objective is TRAFFIC and by_cycles.objective is CYCLES
    assert by_traffic.best is by_traffic.best_traffic and by_cycles.best is by_cycles.best_cycles
    t, c = by_traffic.best, by_cycles.best
    assert t.traffic_bytes < c.traffic_bytes and c.estimated_cycles < t.estimated_cycles
    assert search(gemm, blog, 16384, CYCLES).best == c  # the name and the objective: the same search


@pytest.mark.parametrize("argv", [["search", "gemm-64", "--objective", "power"],
                                  ["network", "resnet18", "--objective", "power"],
                                  ["sweep-sram", "gemm-64", "--sizes", "64KiB", "--objective", "power"]])
def test_the_commands_refuse_an_unknown_objective_listing_the_choices(argv, capsys):
    from dsasim.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "invalid choice: 'power' (choose from 'traffic', 'cycles', 'energy', 'edp')" in err


# --------------------------------------------------------------------------------------------- one default
def test_every_search_defaults_to_the_same_objective():
    """Every public function taking an objective defaults to DEFAULT_OBJECTIVE (traffic); search_levels and
    sweep_levels defaulted to cycles before issue 27."""
    import inspect

    from dsasim.architect.search import fused_search, gemm_chain, level_search, layer_search as search
    from dsasim.architect.studies import network_eval, sweep, target_figures

    functions = [search.search, search.search_front, search.run_search, fused_search.search_chain,
                 sweep.sweep_chain, target_figures.sweep_target_task,
                 network_eval.evaluate_network, network_eval.sweep_network, level_search.search_levels,
                 level_search.sweep_levels, gemm_chain.GemmChainSpace.best]
    for f in functions:
        assert inspect.signature(f).parameters["objective"].default is DEFAULT_OBJECTIVE, f.__qualname__


def test_search_levels_by_default_now_ranks_by_traffic():
    """gemm m=128, n=96, k=64 (1-byte words) on blog-l1 with 8 KiB of SRAM and small L1s (4, 2, 2 KiB): its
    compulsory traffic is 128 x 64 + 64 x 96 + 128 x 96 = 8,192 + 6,144 + 12,288 = 26,624 B, which nothing
    beats; the default (traffic) reaches it. By cycles the search trades traffic for time: more SRAM traffic, fewer
    cycles. Before issue 27 the default was cycles (then 34,816 B, 2,496 cycles; now 26,624 B, 3,008 cycles)."""
    from dsasim.architect.problems.layers import parse_layer
    from dsasim.architect.search.level_search import search_levels, with_level_capacity

    hw = load_hardware("blog-l1")
    for level, capacity in (("L1w", 4096), ("L1i", 2048), ("L1acc", 2048)):
        hw = with_level_capacity(hw, level, capacity)
    gemm = parse_layer("gemm:m=128,n=96,k=64")
    assert hw.word_bytes == 1
    default = search_levels(gemm, hw, 8192)
    by_cycles = search_levels(gemm, hw, 8192, objective=CYCLES)
    assert default.objective is TRAFFIC and by_cycles.objective is CYCLES
    assert default.best.level("SRAM").traffic_bytes == 26_624
    assert by_cycles.best.level("SRAM").traffic_bytes > 26_624 and by_cycles.best.cycles < default.best.cycles
