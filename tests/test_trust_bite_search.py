"""The search and the analytic model, tests that bite (issue 26, part 5): ties (an equal primary key with a better
tie-break joins the staircase; equal estimated cycles go to the smaller peak; equal simulated cycles to the lower
traffic, then the smaller peak), the one-word SRAM edge, and the cycle estimate on a shared DDR port.
Expected values are derived by hand in comments, or by applying the stated rule to the candidates here."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dsasim import preset
from dsasim.architect.search import layer_search as search_module
from dsasim.architect.model.analytic import ISSUE_CYCLES, analyze
from dsasim.architect.nests.loopnest import LoopNest, MatmulProblem
from dsasim.architect.search.layer_search import _best_buffering, _Front, search, with_capacity
from dsasim.hardware import Accelerator

BLOG = preset("blog")


def test_an_equal_primary_key_with_a_better_tie_break_joins_the_staircase():
    front = _Front(1)
    front.merge(np.array([10]), np.array([5.0]), np.array([7.0]), np.array([[1]]))
    # at a larger peak, the same primary key (5) with a smaller tie-break (3 < 7) is better; 9 is not, nor 7
    assert front.filter(np.array([12, 12, 12]), np.array([5.0, 5.0, 5.0]), np.array([3.0, 9.0, 7.0])).tolist() == \
        [True, False, False]
    front.merge(np.array([12]), np.array([5.0]), np.array([3.0]), np.array([[2]]))
    assert front.peak.tolist() == [10, 12]  # both stay: each is the best at its peak
    assert front.rows[front.best_at(12)].tolist() == [2] and front.rows[front.best_at(11)].tolist() == [1]


def test_equal_estimated_cycles_go_to_the_smaller_peak():
    # gemm m=8 tiled by 4, a and c staged per m tile: 1-way and 2-way scopes estimate the same cycles here, and
    # 2 ways hold twice the a and c tiles; the rule (cycles, then peak) picks 1 way from either start
    problem = MatmulProblem(8, 24, 16)
    one, two = (LoopNest(problem, ("m", "n", "k"), {"m": 4}, {"a": "m", "b": 0, "c": "m"}, {"a": w, "c": w})
                for w in (1, 2))
    a1, a2 = analyze(one, BLOG), analyze(two, BLOG)
    assert a1.estimated_cycles == a2.estimated_cycles and a1.peak_sram_bytes < a2.peak_sram_bytes  # the premise
    for start in (one, two):
        best = _best_buffering(start, BLOG, BLOG.sram_bytes)
        assert best.nest.ways == one.ways and best.peak_sram_bytes == a1.peak_sram_bytes


def _confirmed_as(monkeypatch, **fields) -> None:
    """Every confirmed candidate gets `fields` (simulated cycles, and maybe equal traffic), no tracing."""
    monkeypatch.setattr(search_module, "confirm",
                        lambda c, hw, runner, simulate=True: dataclasses.replace(c, traced=True, **fields))


PROBLEM = MatmulProblem(64, 48, 32)


def test_equal_simulated_cycles_go_to_the_lower_traffic(monkeypatch):
    _confirmed_as(monkeypatch, simulated_cycles=1000)
    r = search(PROBLEM, BLOG, sram_bytes=2048, objective="cycles", runner=object(), confirm_top=4)
    want = min(r.confirmed, key=lambda c: (c.traffic_bytes, c.peak_sram_bytes))
    assert len(r.confirmed) > 1 and want is not r.confirmed[0]  # the premise: the first is not the answer
    assert r.best_cycles is want and r.cycles_source == "simulated"


def test_equal_simulated_cycles_and_traffic_go_to_the_smaller_peak(monkeypatch):
    _confirmed_as(monkeypatch, simulated_cycles=1000, loaded_bytes=100, stored_bytes=10)
    r = search(PROBLEM, BLOG, sram_bytes=1024, objective="cycles", runner=object(), confirm_top=4)
    want = min(r.confirmed, key=lambda c: c.peak_sram_bytes)
    assert [c.peak_sram_bytes for c in r.confirmed].count(want.peak_sram_bytes) == 1
    assert want is not r.confirmed[0]  # the premise
    assert r.best_cycles is want


def test_an_sram_of_exactly_one_word_is_accepted():
    hw = dataclasses.replace(BLOG, word_bytes=4)
    cap, small = with_capacity(hw, 4)  # one 4-byte word: allowed (nothing below it is)
    assert cap == 4 and small.sram_bytes == 4
    with pytest.raises(ValueError, match="below one word"):
        with_capacity(hw, 3)
    assert isinstance(dataclasses.replace(hw, sram_bytes=4), Accelerator)
    with pytest.raises(ValueError, match="exceeds sram_bytes"):
        dataclasses.replace(hw, sram_bytes=3)
    # gemm 1x1x1 needs 3 words: nothing fits in one, and the search says so with no error
    assert search(MatmulProblem(1, 1, 1), hw, sram_bytes=4).best is None


def test_the_cycle_estimate_adds_loads_and_stores_on_a_shared_port():
    """gemm m=4, n=24, k=16, one tile of everything, 1 B per cycle, no setup. Loads a 64 + b 384 = 448 B; stores
    c 96 B; TensorCore 4 cycles. Pipeline fill = the first boxes: 64 + 384 + 96 = 544. One tile compute: ISSUE.
    Shared port: max(4, 448 + 96) + 544 + ISSUE = 1,088 + ISSUE; split ports: max(4, max(448, 96)) + 544 + ISSUE =
    992 + ISSUE."""
    nest = LoopNest(MatmulProblem(4, 24, 16), ("m", "n", "k"), {}, {"a": 0, "b": 0, "c": 0})
    hw = dataclasses.replace(BLOG, dram_bytes_per_cycle=1.0, dma_setup_cycles=0)
    shared = analyze(nest, dataclasses.replace(hw, dram_shared_load_store=True))
    split = analyze(nest, dataclasses.replace(hw, dram_shared_load_store=False))
    assert (shared.estimated_cycles, split.estimated_cycles) == (1088 + ISSUE_CYCLES, 992 + ISSUE_CYCLES)
