"""The analytic model equals the trace byte for byte; the vectorised evaluator equals the scalar model."""

from __future__ import annotations

import collections
import dataclasses
import random
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsasim import Accelerator, preset
from dsasim.architect.model.analytic import analyze, group_stats, reconcile
from dsasim.architect.nests.loopnest import ConvProblem, LoopNest, MatmulProblem, tile_count, window_rows
from dsasim.architect.search.layer_search import evaluate_nests
from dsasim.kernels import loopnest_kernel
from dsasim.kernels.loopnest_kernel import blog_demo_nest, run_loopnest

from dsasim.traced.trace import OPEN

HW = dataclasses.replace(preset("blog"), sram_bytes=1 << 40, word_bytes=2)


def _brute_group(o_ext, k_ext, s, d, p, h, to, tk):
    """Iterate over every (output tile, tap tile) pair: what group_stats must equal."""
    n_o, n_k = tile_count(o_ext, to), tile_count(k_ext, tk)
    total = boxes = valid = o_sum = t_sum = 0
    cls: dict = {}
    for i in range(n_o):
        o0, o1 = i * to, min((i + 1) * to, o_ext)
        for j in range(n_k):
            t0, t1 = j * tk, min((j + 1) * tk, k_ext)
            rows = [o * s + t * d - p for o in range(o0, o1) for t in range(t0, t1) if 0 <= o * s + t * d - p < h]
            n = max(rows) - min(rows) + 1 if rows else 0
            total += n
            boxes += n > 0
            valid += (n > 0) * (o1 - o0) * (t1 - t0)
            o_sum += (n > 0) * (o1 - o0)  # (the pixels and the taps of the TensorCore calls that compute)
            t_sum += (n > 0) * (t1 - t0)
            key = (int(i == n_o - 1), int(j == n_k - 1))
            cls[key] = max(cls.get(key, 0), n)
    table = tuple(tuple(cls[(ci if n_o > 1 else 1, cj if n_k > 1 else 1)] for cj in (0, 1)) for ci in (0, 1))
    return total, boxes, valid, table, o_sum, t_sum


def test_group_stats_equal_the_sum_over_tiles():
    rng = random.Random(7)
    checked = 0
    while checked < 3000:
        k, s, d, p, h = rng.randint(1, 6), rng.randint(1, 3), rng.randint(1, 3), rng.randint(0, 6), rng.randint(1, 20)
        if h + 2 * p < d * (k - 1) + 1:
            continue
        o = (h + 2 * p - d * (k - 1) - 1) // s + 1
        to, tk = rng.randint(1, o), rng.randint(1, k)
        assert tuple(group_stats(o, k, s, d, p, h, to, tk)) == _brute_group(o, k, s, d, p, h, to, tk)
        checked += 1


def _random_problem(rng: random.Random):
    if rng.random() < 0.25:
        return MatmulProblem(rng.randint(1, 9), rng.randint(1, 9), rng.randint(1, 9))
    while True:
        try:
            return ConvProblem(rng.randint(1, 2), rng.randint(1, 5), rng.randint(1, 5), rng.randint(1, 9),
                               rng.randint(1, 9), rng.randint(1, 4), rng.randint(1, 4),
                               (rng.randint(1, 3), rng.randint(1, 3)), (rng.randint(0, 3), rng.randint(0, 3)),
                               (rng.randint(1, 2), rng.randint(1, 2)))
        except ValueError:  # kernel larger than the padded input
            pass


def _random_grouped_problem(rng: random.Random) -> ConvProblem:
    """A grouped conv: groups 1..4 with 1..3 input and output channels per group (depthwise included), or a
    depthwise conv of 1..8 channels; strides, padding, dilation and kernels as in `_random_problem`."""
    while True:
        groups = rng.randint(1, 8)
        icg, ocg = (1, 1) if rng.random() < 0.3 else (rng.randint(1, 3), rng.randint(1, 3))
        try:
            return ConvProblem(rng.randint(1, 2), groups * icg, groups * ocg, rng.randint(1, 9), rng.randint(1, 9),
                               rng.randint(1, 4), rng.randint(1, 4), (rng.randint(1, 3), rng.randint(1, 3)),
                               (rng.randint(0, 3), rng.randint(0, 3)), (rng.randint(1, 2), rng.randint(1, 2)),
                               groups=groups)
        except ValueError:  # kernel larger than the padded input
            pass


def _random_nest(rng: random.Random, problem) -> LoopNest:
    order = list(problem.dims)
    rng.shuffle(order)
    return LoopNest(problem, order, {d: rng.randint(1, problem.extents[d]) for d in problem.dims},
                    {t: rng.randint(0, len(order)) for t in problem.tensor_names},
                    {t: rng.randint(1, 3) for t in problem.tensor_names})


def _thousand_random_nests() -> list:
    """The 1,100 random nests of seed 2024, drawn in one sequence (drawing is cheap; tracing them is not)."""
    rng = random.Random(2024)
    return [_random_nest(rng, _random_problem(rng)) for _ in range(1100)]


def test_the_thousand_random_nests_are_mostly_convs_with_many_matmuls():
    kinds = collections.Counter(nest.problem.kind for nest in _thousand_random_nests())
    assert kinds["conv"] > 700 and kinds["matmul"] > 200


# the 1,100 traced in four quarters (about 9 s each), so xdist spreads them over its workers; every nest is traced
@pytest.mark.parametrize("quarter", range(4))
def test_model_equals_trace_on_a_thousand_random_nests(quarter):
    """Ragged tails, halos, strides, dilation, every staging depth, 1-3 buffering ways: every count equal."""
    for nest in _thousand_random_nests()[quarter::4]:
        result = run_loopnest(nest, HW)
        rec = reconcile(nest, result, HW)
        assert rec.ok, str(rec)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_model_equals_trace_hypothesis(data):
    seed = data.draw(st.integers(0, 2 ** 32 - 1))
    rng = random.Random(seed)
    nest = _random_nest(rng, _random_problem(rng))
    result = run_loopnest(nest, HW)
    rec = reconcile(nest, result, HW)
    assert rec.ok, str(rec)


def test_model_equals_trace_on_random_grouped_nests():
    """Grouped and depthwise convs (the group dimension g tiled, ragged, above or below every staging): every
    count equal to the trace, opens per scope instance included."""
    rng = random.Random(3210)
    depthwise = grouped = 0
    for _ in range(400):
        problem = _random_grouped_problem(rng)
        nest = _random_nest(rng, problem)
        depthwise += problem.groups > 1 and problem.groups == problem.ic == problem.oc
        grouped += problem.groups > 1 and nest.trips("g") > 1
        rec = reconcile(nest, run_loopnest(nest, HW), HW)
        assert rec.ok, str(rec)
    assert depthwise > 80 and grouped > 150


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_model_equals_trace_on_grouped_nests_hypothesis(data):
    rng = random.Random(data.draw(st.integers(0, 2 ** 32 - 1)))
    nest = _random_nest(rng, _random_grouped_problem(rng))
    rec = reconcile(nest, run_loopnest(nest, HW), HW)
    assert rec.ok, str(rec)


def test_vectorised_evaluation_of_grouped_nests():
    """The search's numpy evaluator equals the scalar model on grouped convs."""
    _check_vectorised(random.Random(77), _random_grouped_problem, 40, 3)


def test_grouped_tensorcore_cycles_by_hand():
    """conv 40 -> 56 channels in 2 groups (20 -> 28 per group), 1x1, 3x3 image: per group ceil(20/16) x
    ceil(28/24) = 2 x 2 blocks; with ic tiles of 16 (16, 4: 1 + 1 blocks) and oc tiles of 24 (24, 4: 1 + 1)
    still 2 x 2, so cycles = 2 groups x 4 x 9 pixels = 72, MACs = 56 x 20 x 9 = 10,080, utilization
    10,080 / (72 x 384) = 36.5 %. The same channels ungrouped (40 -> 56: ceil(40/16) x ceil(56/24) = 3 x 3
    blocks) take 81 cycles for twice the MACs."""
    grouped = ConvProblem(1, 40, 56, 3, 3, 1, groups=2)
    nest = LoopNest(grouped, grouped.dims, {"ic": 16, "oc": 24}, {"image": 8, "weight": 8, "output": 8})
    a = analyze(nest, HW)
    assert (a.tensorcore_cycles, a.macs, a.padded_macs) == (72, 10_080, 72 * 384)
    assert reconcile(nest, run_loopnest(nest, HW), HW).ok
    dense = ConvProblem(1, 40, 56, 3, 3, 1)
    b = analyze(LoopNest(dense, dense.dims, {}, {"image": 0, "weight": 0, "output": 0}), HW)
    assert (b.tensorcore_cycles, b.macs) == (81, 20_160)


def test_reconciliation_names_tensor_loop_and_both_numbers(monkeypatch):
    """A kernel that loads one image row too many is caught: tensor, loop, numbers and the first bad instance."""
    problem = ConvProblem(1, 3, 4, 6, 6, 3, padding=1)
    nest = LoopNest(problem, ("n", "oh", "oc", "ow", "ic", "kh", "kw"), {"oh": 2}, {"image": "oh", "weight": 0,
                                                                                     "output": "oh"})

    def wider(o0, o1, t0, t1, s, d, p, size):
        first, stop = window_rows(o0, o1, t0, t1, s, d, p, size)
        return first, min(size, stop + 1) if (o0, size) == (2, 6) and stop < size else stop

    monkeypatch.setattr(loopnest_kernel, "window_rows", wider)
    result = run_loopnest(nest, HW)
    rec = reconcile(nest, result, HW)
    assert not rec.ok
    text = str(rec)
    bad = [m for m in rec.mismatches if m.quantity == "loaded_bytes"]
    assert bad and bad[0].tensor == "image" and bad[0].loop == "oh"
    # by hand: 3 output-row tiles of 2; rows (0:2, 3 taps, pad 1) read image rows 0..2, (2:4) rows 1..4,
    # (4:6) rows 3..5: 3 + 4 + 3 = 10 rows x 3 channels x 6 columns x 2 bytes; the wider kernel adds a row
    assert bad[0].model == 10 * 3 * 6 * 2 and bad[0].trace == 11 * 3 * 6 * 2
    assert "first differing scope instance #1 (oh=[2:4))" in text
    assert f"model {bad[0].model:,} vs trace {bad[0].trace:,}" in text


def _check_vectorised(rng: random.Random, make_problem, problems: int, nests_each: int) -> None:
    """evaluate_nests (the search's numpy evaluator) equals analyze, nest by nest, in every count it gives."""
    for _ in range(problems):
        problem = make_problem(rng)
        nests = [_random_nest(rng, problem) for _ in range(nests_each)]
        v = evaluate_nests(nests, HW)
        for i, nest in enumerate(nests):
            a = analyze(nest, HW)
            assert (int(v.loaded_bytes[i]), int(v.stored_bytes[i]), int(v.traffic_bytes[i]), int(v.macs[i]),
                    int(v.peak_sram_bytes[i]), int(v.tensorcore_cycles[i]), round(float(v.estimated_cycles[i]))) \
                == (a.loaded_bytes, a.stored_bytes, a.traffic_bytes, a.macs, a.peak_sram_bytes,
                    a.tensorcore_cycles, a.estimated_cycles), nest
            assert [(int(t.loads[i]), int(t.stores[i]), int(t.instances[i]), int(t.box_bytes[i]))
                    for t in v.tensors] == [(t.loads, t.stores, t.instances, t.box_bytes) for t in a.tensors], nest


def test_vectorised_evaluation_equals_the_scalar_model():
    _check_vectorised(random.Random(11), _random_problem, 120, 4)


def test_blog_demo_figures_by_hand():
    a = analyze(blog_demo_nest("demo3-2"), preset("blog"))
    assert a.tensor("weight").loaded_bytes == 512 * 2048
    assert a.tensor("image").loaded_bytes == 22 * 2048 * 56 * 56  # once per 24-channel output tile
    assert a.tensor("output").stored_bytes == 512 * 56 * 56 and a.rmw_bytes == 0
    assert a.peak_sram_bytes == 24 * 2048 + 24 * 56 * 56 + 2048 * 2 * 56
    b = analyze(blog_demo_nest("demo3-3"), preset("blog"))
    assert b.tensor("image").loaded_bytes == 64 * 2048 * 56 * 56 and b.tensorcore_cycles == 25690112


def test_partial_sums_are_read_modify_writes():
    problem = MatmulProblem(8, 6, 10)
    nest = LoopNest(problem, ("k", "m", "n"), {"k": 3, "m": 4}, {"a": 3, "b": 3, "c": 3})
    a = analyze(nest, HW)
    size = 8 * 6 * HW.word_bytes
    assert (a.tensor("c").stored_bytes, a.tensor("c").loaded_bytes, a.rmw_bytes) == (4 * size, 3 * size, 3 * size)
    assert reconcile(nest, run_loopnest(nest, HW), HW).ok


def test_closed_form_does_not_iterate_over_tiles():
    """A conv with 10^10 output tiles is analysed in milliseconds."""
    problem = ConvProblem(1, 16, 16, 100_000, 100_000, 3, padding=1, stride=1)
    nest = LoopNest(problem, ("n", "oc", "oh", "ow", "ic", "kh", "kw"), {"oh": 1, "ow": 1, "kh": 1},
                    {"image": 7, "weight": 0, "output": 4})
    start = time.perf_counter()
    a = analyze(nest, Accelerator("big", sram_bytes=1 << 40, word_bytes=1))
    assert time.perf_counter() - start < 0.5
    assert a.tensor("image").loads > 10 ** 10
    # rows: every (output row, tap) pair reads one row, but 2 read padding; columns: a 3-wide window per
    # output column, clipped by one at either edge
    assert a.tensor("image").loaded_bytes == 16 * (3 * 100_000 - 2) * (3 * 100_000 - 2)


@pytest.mark.parametrize("ways", [1, 2, 3])
def test_peak_counts_the_buffering_ways(ways):
    nest = blog_demo_nest("demo2").replace(buffers={"image": ways, "weight": ways, "output": ways})
    a = analyze(nest, preset("blog"))
    assert a.peak_sram_bytes == ways * (24 * 2 * 56 + 2048 * 2 * 56 + 24 * 2048)
    big = dataclasses.replace(preset("blog"), sram_bytes=1 << 30)
    assert run_loopnest(nest, big, record_trace=False).peak_sram_bytes == a.peak_sram_bytes


def _block_problem(rng: random.Random):
    """Channels that cross the TensorCore's 16-input / 24-output blocks, small spatial sizes."""
    if rng.random() < 0.3:
        return MatmulProblem(rng.randint(1, 3), rng.randint(1, 70), rng.randint(1, 70))
    while True:
        try:
            return ConvProblem(1, rng.randint(1, 70), rng.randint(1, 70), rng.randint(1, 4), rng.randint(1, 4),
                               rng.randint(1, 3), rng.randint(1, 2), 1, (rng.randint(0, 1), rng.randint(0, 1)))
        except ValueError:
            pass


def test_model_equals_trace_across_tensorcore_blocks():
    """Ragged 16/24 channel blocks: tiles of 1..70 channels (17, 25, 40, 50 ...) so that ceil(t/16) x ceil(t/24)
    cycles of partial blocks are compared with the trace's TensorCore costs, opens per scope instance too."""
    rng = random.Random(1607)
    ragged = checked = 0
    while checked < 150:
        problem = _block_problem(rng)
        nest = _random_nest(rng, problem)
        if nest.iterations() > 200:
            continue
        tin, tout = nest.tile(problem.tc_in_dim), nest.tile(problem.tc_out_dim)
        ext_in, ext_out = problem.extents[problem.tc_in_dim], problem.extents[problem.tc_out_dim]
        ragged += (tin > 16 and tin % 16 != 0) or (tout > 24 and tout % 24 != 0) or \
            (ext_in % tin) % 16 != 0 or (ext_out % tout) % 24 != 0
        rec = reconcile(nest, run_loopnest(nest, HW), HW)
        assert rec.ok, str(rec)
        checked += 1
    assert ragged > 60


def test_tensorcore_cycles_of_ragged_blocks_by_hand():
    """matmul m=2, k=40, n=50 with k tiles of 20 (20, 20: 2 + 2 blocks of 16) and n tiles of 30 (30, 20: 2 + 1
    blocks of 24): 2 x (2 + 2) x (2 + 1) = 24 cycles; padded MACs 24 x 16 x 24; MACs 2 x 40 x 50."""
    nest = LoopNest(MatmulProblem(2, 50, 40), ("m", "n", "k"), {"k": 20, "n": 30}, {"a": 3, "b": 3, "c": 3})
    a = analyze(nest, HW)
    assert (a.tensorcore_cycles, a.padded_macs, a.macs) == (24, 24 * 16 * 24, 2 * 40 * 50)
    # conv 3x3 pad 1, 4x4 image, ic 17 (one tile: 2 blocks), oc 25 in tiles of 24 (24, 1: 1 + 1 blocks), one
    # output pixel and one tap per tile: a (pixel, tap) pair that reads padding computes nothing; per axis 4 x 3
    # pairs less (row 0, tap 0) and (row 3, tap 2): 10, so 10 x 10 = 100 pairs; 2 x 2 x 100 cycles
    conv = ConvProblem(1, 17, 25, 4, 4, 3, padding=1)
    nest = LoopNest(conv, ("n", "oc", "oh", "ow", "ic", "kh", "kw"), {"oc": 24, "oh": 1, "ow": 1, "kh": 1, "kw": 1},
                    {"image": 7, "weight": 7, "output": 7})
    a = analyze(nest, HW)
    assert a.tensorcore_cycles == 2 * 2 * 100 and a.macs == 17 * 25 * 100
    rec = reconcile(nest, run_loopnest(nest, HW), HW)
    assert rec.ok, str(rec)


def test_opens_by_hand_and_reconcile_compares_them():
    """c (8 x 6) staged innermost below k (tiles of 3: 4 trips) and m (tiles of 4): 8 scope instances, of which
    the first k tile of each m tile opens its 4 x 6 box as zeros; the other 6 reload partial sums."""
    problem = MatmulProblem(8, 6, 10)
    nest = LoopNest(problem, ("k", "m", "n"), {"k": 3, "m": 4}, {"a": 3, "b": 3, "c": 3})
    result = run_loopnest(nest, HW)
    opens = [ev[3] for ev in result.trace.events if ev[0] == OPEN]
    assert opens == [((0, 4), (0, 6)), ((4, 8), (0, 6))]
    assert analyze(nest, HW).tensor("c").opens == 2 and analyze(nest, HW).tensor("c").loads == 6
    assert reconcile(nest, result, HW).ok
    # a trace whose second open covers a different region, with every byte total unchanged, is caught
    import types
    events = list(result.trace.events)
    i = [k for k, ev in enumerate(events) if ev[0] == OPEN][1]
    events[i] = events[i][:3] + (((4, 8), (0, 5)),) + events[i][4:]
    trace = types.SimpleNamespace(events=events, tensors=result.trace.tensors, scopes=result.trace.scopes)
    rec = reconcile(nest, dataclasses.replace(result, trace=trace), HW)
    bad = [m for m in rec.mismatches if m.quantity == "opens"]
    assert bad and bad[0].tensor == "c" and "#1 (k=[0:3), m=[4:8))" in bad[0].detail
    # and a trace that loads zeros instead of opening them (one open missing) too
    events = [ev for k, ev in enumerate(result.trace.events) if k != i]
    trace = types.SimpleNamespace(events=events, tensors=result.trace.tensors, scopes=result.trace.scopes)
    rec = reconcile(nest, dataclasses.replace(result, trace=trace), HW)
    assert [(m.model, m.trace) for m in rec.mismatches if m.quantity == "opens"] == [(2, 1)]


def test_vectorised_evaluation_across_tensorcore_blocks():
    """The search's numpy evaluator on channels crossing 16/24 blocks: the hand-derived 24 cycles of the ragged
    matmul above, and equal to the scalar model on random nests with up to 70 channels."""
    nest = LoopNest(MatmulProblem(2, 50, 40), ("m", "n", "k"), {"k": 20, "n": 30}, {"a": 3, "b": 3, "c": 3})
    assert int(evaluate_nests([nest], HW).tensorcore_cycles[0]) == 24
    _check_vectorised(random.Random(5), _block_problem, 60, 3)
