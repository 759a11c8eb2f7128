"""LoopNest: validation, JSON, readable form, the generic kernel against torch and against the hand-written ports."""

from __future__ import annotations

import dataclasses
import json
import math
import random

import pytest
from helpers import assert_schedule_matches_torch

from dsasim import Session, preset, run_schedule
from dsasim.architect.model.analytic import analyze
from dsasim.architect.problems.layers import distinct_resnet50, layer_names, parse_layer, resnet50_layers
from dsasim.architect.nests.loopnest import ConvProblem, LoopNest, MatmulProblem, problem_from_json, window_rows
from dsasim.traced.schedule import bind_tensors
from dsasim.kernels import blog_demos
from dsasim.kernels.loopnest_kernel import (BLOG_DEMO_NAMES, blog_conv, blog_demo_nest, count_loopnest, execute,
                                     loopnest_schedule, loopnest_workload, res2a_slab_nest, run_loopnest)
from dsasim.kernels.resnet_schedules import SCHEDULES as RESNET_SCHEDULES

BLOG = preset("blog")
UNLIMITED = dataclasses.replace(BLOG, sram_bytes=1 << 40)
CONV = ConvProblem(1, 8, 6, 7, 7, 3, padding=1)
ORDER = ("n", "oc", "oh", "ow", "ic", "kh", "kw")


# ------------------------------------------------------------------------------------------ validation
@pytest.mark.parametrize("kwargs, message", [
    (dict(order=ORDER[:-1]), "missing"),
    (dict(order=ORDER[:-1] + ("oc",)), "more than once"),
    (dict(order=ORDER[:-1] + ("zz",)), "unknown dimension"),
    (dict(tiles={"oc": 0}), "tile > 0"),
    (dict(tiles={"oc": -2}), "tile > 0"),
    (dict(tiles={"oc": 7}), "exceeds the extent 6"),
    (dict(tiles={"oc": 2.5}), "must be an integer"),
    (dict(tiles={"q": 2}), "unknown dimension"),
    (dict(stage={"image": 0, "weight": 0}), "no staging level"),
    (dict(stage={"image": 0, "weight": 0, "output": 0, "bias": 0}), "unknown tensor"),
    (dict(stage={"image": 8, "weight": 0, "output": 0}), "depth must lie in 0..7"),
    (dict(stage={"image": -1, "weight": 0, "output": 0}), "depth must lie in 0..7"),
    (dict(stage={"image": "h", "weight": 0, "output": 0}), "not a loop of this nest"),
    (dict(buffers={"image": 0}), r"buffers\['image'\] must be an integer >= 1"),
    (dict(ways={"image": 0}), r"ways\['image'\] must be an integer >= 1"),
    (dict(ways={"image": 2}, buffers={"image": 2}), "not both"),
])
def test_invalid_nests_are_rejected_with_a_clear_error(kwargs, message):
    args = dict(order=ORDER, tiles={"oc": 2}, stage={"image": "ow", "weight": "oc", "output": "ow"})
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        LoopNest(CONV, **args)


def test_invalid_problems_are_rejected():
    with pytest.raises(ValueError, match="kernel"):
        ConvProblem(1, 4, 4, 2, 2, 5)
    with pytest.raises(ValueError, match=r"ConvProblem 'mine': in_channels \(4\) and out_channels \(6\) must both "
                                         r"be divisible by groups \(3\); choose groups among their common divisors"):
        ConvProblem(1, 4, 6, 8, 8, 3, groups=3, name="mine")
    with pytest.raises(ValueError, match="groups must be an integer >= 1"):
        ConvProblem(1, 4, 4, 8, 8, 3, groups=0)
    with pytest.raises(ValueError, match="integer >= 1"):
        MatmulProblem(0, 4, 4)
    with pytest.raises(TypeError):
        LoopNest("conv", ORDER)  # type: ignore[arg-type]


def test_staging_accepts_depths_loop_names_and_top():
    a = LoopNest(CONV, ORDER, {"oc": 2}, {"image": 4, "weight": "oc", "output": None})
    assert (a.depth("image"), a.depth("weight"), a.depth("output")) == (4, 2, 0)
    assert a.loop_of("image") == "ow" and a.loop_of("output") == "top"
    assert a.scope_name("weight") == "weight@oc"
    b = LoopNest(CONV, ORDER, {"oc": 2}, {"image": "ow", "weight": 2, "output": "top"})
    assert a == b and hash(a) == hash(b)
    assert a.trips("oc") == 3 and a.trips("oh") == 1 and a.iterations() == 3


def test_a_grouped_problem_has_a_group_dimension_and_per_group_channels():
    # 12 -> 18 channels in 3 groups: 4 input and 6 output channels per group; the tensors are the NCHW ones with
    # the channel axis split into (group, channel of the group), torch's grouped weight likewise
    p = ConvProblem(2, 12, 18, 9, 7, 3, stride=2, padding=1, groups=3)
    assert p.dims == ("n", "g", "oc", "oh", "ow", "ic", "kh", "kw")
    assert p.extents == {"n": 2, "g": 3, "oc": 6, "oh": 5, "ow": 4, "ic": 4, "kh": 3, "kw": 3}
    assert p.shape("image") == (2, 3, 4, 9, 7) and p.shape("weight") == (3, 6, 4, 3, 3)
    assert p.shape("output") == (2, 3, 6, 5, 4)
    # MACs = N x OC x IC/G x KH x KW x OH x OW = 2 x 18 x 4 x 9 x 20
    assert p.macs == 2 * 18 * 4 * 9 * 20 == 25_920
    assert p.spec() == "conv:n=2,ic=12,oc=18,h=9,w=7,k=3,s=2,p=1,g=3" and parse_layer(p.spec()) == p
    assert p.dense_matmul() is None  # three block-diagonal matmuls, not one dense one
    assert ConvProblem(1, 8, 8, 4, 4, 1, groups=8).dense_matmul() is None
    assert ConvProblem(1, 8, 8, 4, 4, 1).dense_matmul() == (16, 8, 8)
    assert "in 3 groups (4->6 channels each)" in p.describe()
    assert "depthwise" in ConvProblem(1, 8, 8, 4, 4, 3, groups=8).describe()
    # groups = 1 keeps its seven dimensions and 4-d tensors (and its JSON has no groups key)
    assert CONV.dims == ORDER and CONV.shape("weight") == (6, 8, 3, 3) and "groups" not in CONV.to_json()
    assert p.to_json()["groups"] == 3 and problem_from_json(p.to_json()) == p


# ------------------------------------------------------------------------------------------ JSON, format
def test_json_round_trip_for_conv_and_matmul():
    nests = [LoopNest(ConvProblem(2, 5, 7, 9, 8, 3, 2, (2, 1), (1, 0), (1, 2)), ORDER[::-1],
                      {"oc": 3, "oh": 2, "kh": 2}, {"image": "ic", "weight": "top", "output": "n"},
                      {"image": 2, "output": 3}),
             LoopNest(MatmulProblem(9, 10, 11), ("k", "m", "n"), {"m": 4, "k": 5},
                      {"a": "m", "b": "k", "c": "n"}, {"c": 2})]
    for nest in nests:
        text = json.dumps(nest.to_json())
        again = LoopNest.from_json(json.loads(text))
        assert again == nest
        assert problem_from_json(nest.problem.to_json()) == nest.problem
        assert json.dumps(again.to_json()) == text  # byte-identical


def test_format_reads_as_loops():
    text = blog_demo_nest("demo3-2").format()
    assert "stage weight[oc, 0:2048, 0:1, 0:1]" in text
    assert "for oc in 0:512 step 24:   # 22 trips, last tile 8" in text
    assert "conv2d(" in text and "scope image@ow" in text


def test_window_rows_is_tight_and_never_loads_padding():
    rng = random.Random(3)
    for _ in range(2000):
        k, s, d, p, h = rng.randint(1, 4), rng.randint(1, 3), rng.randint(1, 2), rng.randint(0, 3), rng.randint(1, 9)
        if h + 2 * p < d * (k - 1) + 1:
            continue
        oh = (h + 2 * p - d * (k - 1) - 1) // s + 1
        o0 = rng.randrange(oh)
        o1 = rng.randint(o0 + 1, oh)
        t0 = rng.randrange(k)
        t1 = rng.randint(t0 + 1, k)
        rows = [o * s + t * d - p for o in range(o0, o1) for t in range(t0, t1) if 0 <= o * s + t * d - p < h]
        first, stop = window_rows(o0, o1, t0, t1, s, d, p, h)
        assert (first, stop) == ((min(rows), max(rows) + 1) if rows else (first, first))
        assert 0 <= first <= stop <= h


# ------------------------------------------------------------------------------------------ kernel vs torch
def _random_nest(rng: random.Random, problem) -> LoopNest:
    order = list(problem.dims)
    rng.shuffle(order)
    tiles = {d: rng.randint(1, problem.extents[d]) for d in problem.dims}
    stage = {t: rng.randint(0, len(order)) for t in problem.tensor_names}
    return LoopNest(problem, order, tiles, stage, {t: rng.randint(1, 2) for t in problem.tensor_names})


@pytest.mark.parametrize("seed", range(6))
def test_generic_kernel_matches_torch_on_random_nests(seed):
    rng = random.Random(seed)
    problems = [ConvProblem(1, 5, 7, 8, 7, 3, padding=1),
                ConvProblem(2, 3, 4, 9, 8, 3, 2, stride=(2, 1), padding=(2, 1), dilation=(1, 2)),
                ConvProblem(1, 20, 26, 5, 5, 1, stride=2),
                MatmulProblem(13, 29, 35)]
    for problem in problems:
        nest = _random_nest(rng, problem)
        k = math.prod(problem.extents[d] for d in problem.dims if d not in problem.output.dims)  # reduction
        result = assert_schedule_matches_torch(loopnest_schedule(nest), UNLIMITED, seed=seed, reduction=k)
        a = analyze(nest, UNLIMITED)
        assert (result.loaded_bytes, result.stored_bytes, result.peak_sram_bytes) == \
               (a.loaded_bytes, a.stored_bytes, a.peak_sram_bytes)


GROUPED_PROBLEMS = [  # groups 1, 2, 4 and depthwise; stride 2, padding, dilation; channels that cross 16 / 24
    ConvProblem(1, 6, 10, 7, 6, 3, padding=1, groups=1),
    ConvProblem(2, 6, 10, 9, 8, 3, stride=2, padding=1, groups=2),
    ConvProblem(1, 8, 12, 8, 7, 3, 2, stride=(2, 1), padding=(2, 1), dilation=(1, 2), groups=4),
    ConvProblem(1, 12, 12, 9, 9, 3, stride=2, padding=1, groups=12),  # depthwise
    ConvProblem(1, 40, 56, 5, 5, 1, groups=2),  # 20 -> 28 channels per group: a ragged 16 / 24 block
]


@pytest.mark.parametrize("seed", range(5))
def test_generic_kernel_matches_torch_on_random_grouped_nests(seed):
    """Random orders, tiles (ragged ones included), staging and ways of grouped convs, checked against torch's
    conv2d(..., groups=G) by the one comparison helper, with the reduction IC/G x KH x KW per output element."""
    rng = random.Random(100 + seed)
    for problem in GROUPED_PROBLEMS:
        nest = _random_nest(rng, problem)
        k = problem.ic // problem.groups * problem.kh * problem.kw
        result = assert_schedule_matches_torch(loopnest_schedule(nest), UNLIMITED, seed=seed, reduction=k)
        a = analyze(nest, UNLIMITED)
        assert (result.loaded_bytes, result.stored_bytes, result.peak_sram_bytes, result.macs,
                result.tensorcore_cycles) == (a.loaded_bytes, a.stored_bytes, a.peak_sram_bytes, a.macs,
                                              a.tensorcore_cycles)


def test_a_depthwise_tile_uses_one_lane_of_the_tensorcore():
    """MobileNetV2's first depthwise 3x3 (32 channels, 112 x 112, padding 1), one group per tile, 28-row slabs.

    By hand: MACs = IC/G x OC x KH x KW x OH x OW = 1 x 32 x 9 x 112 x 112 = 3,612,672. Each group is its own
    pass of ceil(1/16) x ceil(1/24) = 1 step per output pixel per tap, so TensorCore cycles = 32 x 112 x 112 x 9
    = 3,612,672 (one MAC per cycle) and padded MACs = cycles x 16 x 24: utilization 1/384, padding waste 383/384.
    Traffic: the image (32 x 112 x 112 = 401,408 B at 1 B/word) loaded once per group slab with its halo rows:
    per group, slabs 0:28, 28:56, 56:84, 84:112 read rows 0:29, 27:57, 55:85, 83:112 = 29 + 30 + 30 + 29 = 118 of
    112 rows, so 32 x 118 x 112 = 422,912 B; the weight 32 x 9 = 288 B once; the output 401,408 B stored once.
    """
    p = parse_layer("mobilenetv2.dw1")
    assert (p.ic, p.oc, p.groups, p.h, p.kh, p.padding) == (32, 32, 32, 112, 3, (1, 1))
    nest = LoopNest(p, ("n", "g", "oh", "oc", "ow", "ic", "kh", "kw"), {"g": 1, "oh": 28},
                    {"image": "oh", "weight": "g", "output": "oh"})
    a = analyze(nest, BLOG)
    assert a.macs == p.macs == 3_612_672
    assert a.tensorcore_cycles == 32 * 112 * 112 * 9 == 3_612_672
    assert a.padded_macs == 3_612_672 * 16 * 24 and a.macs * 384 == a.padded_macs
    assert (a.tensor("image").loaded_bytes, a.tensor("weight").loaded_bytes, a.stored_bytes) == \
           (32 * 118 * 112, 288, 401_408)
    result = run_loopnest(nest, BLOG)
    assert (result.loaded_bytes, result.stored_bytes, result.macs, result.tensorcore_cycles) == \
           (422_912 + 288, 401_408, 3_612_672, 3_612_672)
    assert LoopNest.from_json(json.loads(json.dumps(nest.to_json()))) == nest
    assert "for g in 0:32 step 1:   # 32 trips" in nest.format()
    # a tile of 8 groups is 8 passes: the same cycles, no better use of the array
    wide = nest.replace(tiles={"g": 8})
    assert analyze(wide, BLOG).tensorcore_cycles == run_loopnest(wide, BLOG).tensorcore_cycles == 3_612_672


def test_all_padding_tiles_compute_nothing_but_store_their_output():
    # 3x3 kernel, padding 2, tap tiles of 1 and output tiles of 1: the corner taps of border outputs read only
    # padding; the output is staged inside the tap loops, so every visit is a read-modify-write
    problem = ConvProblem(1, 2, 3, 3, 3, 3, padding=2)
    nest = LoopNest(problem, ("kh", "kw", "n", "oc", "oh", "ow", "ic"), {"kh": 1, "kw": 1, "oh": 1, "ow": 1},
                    {"image": 6, "weight": 6, "output": 6})
    result = assert_schedule_matches_torch(loopnest_schedule(nest), UNLIMITED, reduction=18)
    a = analyze(nest, UNLIMITED)
    assert result.stored_bytes == a.stored_bytes == 9 * problem.oc * problem.oh * problem.ow
    # all-padding tiles are skipped. By hand: 5 x 5 outputs; per axis, output o and tap t read row o + t - 2,
    # real for 3 of the 5 outputs per tap: 9 real (o, t) pairs of 15, so 3 x 2 x 9 x 9 = 486 of 3 x 2 x 25 x 9
    assert result.macs == a.macs == 486 and problem.macs == 1_350


class _RecordingTensorCore:
    """Stands in for the TensorCore: records each call and returns its name."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def conv2d(self, x, w, **options):
        self.calls.append(("conv2d", x, w, options))
        return "conv2d"

    def matmul(self, a, b):
        self.calls.append(("matmul", a, b))
        return "matmul"


def _tile_product(problem, **ranges):
    tc, fetched = _RecordingTensorCore(), []

    def operand(name, region):
        fetched.append((name, tuple(tuple(r) for r in region)))
        return name

    return problem.tile_product(tc, operand, ranges), fetched, tc.calls


def test_each_problem_computes_its_own_tile():
    """By hand: a 3x3, padding-1 conv over 5 x 5; output rows 0..1 read rows -1..2 (one zero row above), output
    column 4 reads columns 3..5 (one zero column right)."""
    conv = ConvProblem(1, 2, 3, 5, 5, 3, padding=1)
    product, fetched, calls = _tile_product(conv, n=(0, 1), oc=(0, 3), oh=(0, 2), ow=(4, 5), ic=(0, 2), kh=(0, 3),
                                            kw=(0, 3))
    assert product == "conv2d"
    assert fetched == [("image", ((0, 1), (0, 2), (0, 3), (3, 5))), ("weight", ((0, 3), (0, 2), (0, 3), (0, 3)))]
    assert calls == [("conv2d", "image", "weight", dict(stride=(1, 1), dilation=(1, 1), padding=(1, 0, 0, 1)))]
    # a 1x1 kernel, padding 3 over one row: output row 0 reads row -3, padding only: nothing fetched or computed
    assert _tile_product(ConvProblem(1, 1, 1, 1, 1, 1, padding=3), n=(0, 1), oc=(0, 1), oh=(0, 1), ow=(3, 4),
                         ic=(0, 1), kh=(0, 1), kw=(0, 1)) == (None, [], [])
    product, fetched, calls = _tile_product(MatmulProblem(4, 4, 4), m=(0, 2), n=(1, 3), k=(2, 4))
    assert product == "matmul" and calls == [("matmul", "a", "b")]
    assert fetched == [("a", ((0, 2), (2, 4))), ("b", ((2, 4), (1, 3)))]


def test_dense_matmul_view_of_each_problem():
    assert MatmulProblem(3, 4, 5).dense_matmul() == (3, 4, 5)
    # 1x1, stride 2, no padding over 10 x 10: 5 x 5 pixels of 8 channels -> (25 x 8) @ (8 x 4)
    assert ConvProblem(1, 8, 4, 10, 10, 1, stride=2).dense_matmul() == (25, 4, 8)
    assert ConvProblem(1, 8, 4, 10, 10, 1, padding=1).dense_matmul() is None  # padding rows are not dense
    assert ConvProblem(1, 8, 4, 10, 10, 3).dense_matmul() is None  # overlapping windows


# ------------------------------------------------------------------------------------------ blog demos
def _run_body(body, problem, hardware, numeric):
    s = Session(hardware, numeric=numeric)
    workload = loopnest_workload(problem)
    inputs = workload.make_inputs(0) if numeric else None
    tensors = bind_tensors(s, workload, inputs)
    body(s, **tensors)
    s.finish()
    return s, tensors


@pytest.mark.parametrize("name", BLOG_DEMO_NAMES)
def test_blog_demo_nests_equal_the_hand_written_ports_numerically(name):
    problem = blog_conv(1, 48, 40, 6, 5)  # reduced: the ports' tiles clamp as the nests' do
    hand = getattr(blog_demos, {"weights-resident": "better_weights_resident",
                                "output-stationary-fp32": "better_output_stationary"}
                   .get(name, name.replace("-", "_")))
    nest = blog_demo_nest(name, problem)
    s1, t1 = _run_body(hand, problem, UNLIMITED, True)
    s2, t2 = _run_body(lambda s, **t: execute(nest, s, t), problem, UNLIMITED, True)
    c1, c2 = s1.counters, s2.counters
    for q in ("loaded_bytes", "stored_bytes", "rmw_bytes", "peak_sram_bytes", "macs", "tensorcore_cycles"):
        assert getattr(c1, q) == getattr(c2, q), q
    assert (t1["output"].data == t2["output"].data).all() or \
        abs(t1["output"].data - t2["output"].data).max() < 1e-3
    a = analyze(nest, UNLIMITED)
    assert (a.loaded_bytes, a.stored_bytes, a.peak_sram_bytes) == (c2.loaded_bytes, c2.stored_bytes,
                                                                   c2.peak_sram_bytes)


@pytest.mark.parametrize("name", ["demo2", "demo3-2", "demo3-3", "weights-resident"])
def test_blog_demo_nests_give_the_same_counts_at_full_size(name):
    by_name = {s.name: s for s in blog_demos.SCHEDULES}
    hand = run_schedule(by_name[name], BLOG, numeric=False, record_trace=False)
    nest = blog_demo_nest(name)
    ours = run_loopnest(nest, BLOG, record_trace=False)
    for q in ("loaded_bytes", "stored_bytes", "rmw_bytes", "peak_sram_bytes", "macs", "tensorcore_cycles"):
        assert getattr(hand, q) == getattr(ours, q), q
    assert analyze(nest, BLOG).traffic_bytes == hand.loaded_bytes + hand.stored_bytes


def test_res2a_slab_nest_equals_the_resnet_schedule():
    hand = run_schedule(RESNET_SCHEDULES[0], BLOG, numeric=False, record_trace=False)
    nest = res2a_slab_nest()
    counters = count_loopnest(nest, BLOG)
    assert (hand.loaded_bytes, hand.stored_bytes, hand.peak_sram_bytes, hand.tensorcore_cycles) == \
           (counters.loaded_bytes, counters.stored_bytes, counters.peak_sram_bytes, counters.tensorcore_cycles)
    assert analyze(nest, BLOG).peak_sram_bytes == hand.peak_sram_bytes


# ------------------------------------------------------------------------------------------ layers
def test_layer_names_and_specs():
    layers = resnet50_layers()
    assert len(layers) == 53
    assert list(layers)[:5] == ["conv1", "res2a_branch1", "res2a_branch2a", "res2a_branch2b", "res2a_branch2c"]
    assert len(distinct_resnet50()) == 20
    p = parse_layer("resnet50.res2a_branch2b")
    assert (p.ic, p.oc, p.h, p.kh, p.padding, p.stride, p.oh) == (64, 64, 56, 3, (1, 1), (1, 1), 56)
    p = parse_layer("resnet50.res3a_branch2a")
    assert (p.ic, p.oc, p.h, p.kh, p.stride, p.oh) == (256, 128, 56, 1, (2, 2), 28)
    p = parse_layer("resnet50.conv1")
    assert (p.ic, p.oc, p.h, p.kh, p.stride, p.padding, p.oh) == (3, 64, 224, 7, (2, 2), (3, 3), 112)
    assert parse_layer("blog-conv").macs == 2048 * 512 * 56 * 56
    g = parse_layer("gemm-1024")
    assert (g.m, g.n, g.k) == (1024, 1024, 1024)
    assert parse_layer("gemm-64x32x16").extents == {"m": 64, "n": 32, "k": 16}
    c = parse_layer("conv:ic=3,oc=8,h=9,w=7,kh=3,kw=1,sh=2,p=1,d=2,n=2")
    assert (c.n, c.ic, c.oc, c.h, c.w, c.kh, c.kw, c.stride, c.padding, c.dilation) == \
           (2, 3, 8, 9, 7, 3, 1, (2, 1), (1, 1), (2, 2))
    assert parse_layer(c.spec()) == c
    assert parse_layer("gemm:m=4,n=5,k=6").extents == {"m": 4, "n": 5, "k": 6}
    assert "resnet50.res5c_branch2c" in layer_names()
    dw = parse_layer("conv:ic=32,oc=32,h=112,k=3,p=1,g=32")
    assert (dw.groups, dw.extents["g"], dw.extents["ic"], dw.extents["oc"]) == (32, 32, 1, 1)
    assert parse_layer("mobilenetv2.dw1") == dw and parse_layer("mobilenetv2.dw1").name == "mobilenetv2.dw1"
    rx = parse_layer("resnext50.conv2_g32")  # ResNeXt-50 32x4d, conv2 stage: 32 groups of 4 channels
    assert (rx.ic, rx.oc, rx.groups, rx.h, rx.kh, rx.padding, rx.extents["ic"], rx.extents["oc"]) == \
           (128, 128, 32, 56, 3, (1, 1), 4, 4)
    assert {"mobilenetv2.dw1", "resnext50.conv2_g32"} <= set(layer_names())
    assert parse_layer("conv:ic=8,oc=8,h=4,g=1") == parse_layer("conv:ic=8,oc=8,h=4")


@pytest.mark.parametrize("text, message", [
    ("resnet50.res9z_branch1", "unknown ResNet-50 layer"),
    ("conv:ic=3,oc=8", "missing"),
    ("conv:ic=3,oc=8,h=9,q=1", "unknown key"),
    ("conv:ic=3,oc=8,h=x", "not a non-negative integer"),
    ("gemm:m=3,n=4", "needs m, n and k"),
    ("nonsense", "unknown layer"),
    ("conv:ic=32,oc=48,h=8,k=3,g=5", r"layer spec 'conv:ic=32,oc=48,h=8,k=3,g=5': g=5 groups must divide both ic=32 "
                                      r"and oc=48 .*use a common divisor: 1, 2, 4, 8, 16$"),
    ("conv:ic=4,oc=6,h=8,g=4", r"g=4 groups must divide both ic=4 and oc=6 .*common divisor: 1, 2$"),
    ("conv:ic=4,oc=4,h=8,g=0", "groups must be an integer >= 1, got 0"),
])
def test_bad_layer_specs_say_why(text, message):
    with pytest.raises(ValueError, match=message):
        parse_layer(text)


def test_ways_is_the_name_and_buffers_its_alias():
    """N-way buffering per tensor: ways= and buffers= give the same nest; the JSON key is "ways", and JSON
    written before the rename (key "buffers") still loads."""
    stage = {"image": "ow", "weight": "oc", "output": "ow"}
    a = LoopNest(CONV, ORDER, {"oc": 2}, stage, ways={"image": 2})
    b = LoopNest(CONV, ORDER, {"oc": 2}, stage, buffers={"image": 2})
    assert a == b and a.ways == a.buffers == (2, 1, 1) and a.ways_of("image") == 2
    assert a.to_json()["ways"] == {"image": 2, "weight": 1, "output": 1} and "buffers" not in a.to_json()
    assert LoopNest.from_json(a.to_json()) == a
    old = {k: v for k, v in a.to_json().items() if k != "ways"} | {"buffers": {"image": 2}}
    assert LoopNest.from_json(old) == a
    assert a.replace(ways={"output": 3}).ways == a.replace(buffers={"output": 3}).ways == (2, 1, 3)
