"""Sliding-window reuse: the rotating buffer of the memory model (`TracedArray.slide`), its SLIDE event through
validation and timing, `LoopNest(slide=...)`, the analytic model (equal to the trace) and the search.

Expected values are derived by hand in each test (or computed independently: torch for numbers, a brute-force
sweep of the boxes for the random nests' per-instance loads, through `reconcile`)."""

from __future__ import annotations

import dataclasses
import json
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsasim import GlobalHierarchy, Session, TensorCore, VectorUnit, preset
from dsasim.architect.model.analytic import analyze, reconcile, slide_stats
from dsasim.architect.problems.layers import parse_layer
from dsasim.architect.nests.loopnest import ConvProblem, LoopNest, MatmulProblem
from dsasim.architect.search.layer_search import Space, evaluate_nests, search
from dsasim.errors import RegionError, ReuseError, SramOverflowError, StaleTileError
from dsasim.timing import lower, simulate
from dsasim.traced.trace import ENTER, LOAD, SLIDE
from dsasim.kernels.loopnest_kernel import loopnest_schedule, run_loopnest

from helpers import assert_schedule_matches_torch
from test_analytic import _random_problem

HW = dataclasses.replace(preset("blog"), sram_bytes=1 << 40, word_bytes=2)
BLOG = preset("blog")


# -- the memory model ------------------------------------------------------------------------------------------

def _rows(s: Session, image, boxes, capacity=None):
    """Slide `image` (1, 1, H, 4) through row ranges `boxes` in one scope; the tiles."""
    tiles = []
    with GlobalHierarchy(s, "lines"):
        for a, b in boxes:
            tiles.append(image.slide((0, 0, slice(a, b), slice(0, 4)), capacity=capacity))
    return tiles


def test_a_slide_loads_only_the_rows_its_buffer_does_not_hold():
    """Rows [0,3), [2,5), [4,7), [6,9), [8,10) of a 10 x 4 one-byte image: new rows 3, 2, 2, 2, 1 = 10 rows x 4 = 40 B
    (the image once; reloading every box would move 12 + 12 + 12 + 12 + 8 = 56 B). Five transfers: the first
    box a LOAD of 12 B, then SLIDEs of 8, 8, 8, 4 B. The blog's counter counts every region: 56 elements."""
    s = Session(BLOG)
    image = s.input("image", np.arange(40, dtype=np.float32).reshape(1, 1, 10, 4))
    tiles = _rows(s, image, [(0, 3), (2, 5), (4, 7), (6, 9), (8, 10)])
    trace = s.finish()
    assert (s.counters.loaded_bytes, s.counters.loads, s.counters.blog_loaded_elements) == (40, 5, 56)
    moves = [(e[0], e[3][2], e[4]) for e in trace.events if e[0] in (LOAD, SLIDE)]
    assert moves == [(LOAD, (0, 3), 12), (SLIDE, (2, 5), 8), (SLIDE, (4, 7), 8), (SLIDE, (6, 9), 8), (SLIDE, (8, 10), 4)]
    assert s.counters.peak_sram_bytes == 12  # one buffer of the first (largest) box
    with pytest.raises(StaleTileError):  # the slide overwrote rows the first tile saw
        tiles[0].data


def test_the_kept_rows_come_from_sram_and_equal_ddr():
    """The buffer's contents after each slide are assembled from the rows it kept and the rows it loaded; they
    must equal the image's rows at every step (a kept row shifted by one would not)."""
    data = np.random.default_rng(1).standard_normal((1, 1, 10, 4)).astype(np.float32)
    s = Session(BLOG)
    image = s.input("image", data)
    with GlobalHierarchy(s, "lines"):
        for a, b in [(0, 3), (2, 5), (4, 7), (5, 8), (8, 10), (9, 10)]:
            tile = image.slide((0, 0, slice(a, b), slice(0, 4)))
            assert np.array_equal(tile.data, data[:, :, a:b, :])


def test_a_slide_may_reach_back_at_a_border():
    """Tight windows skip rows at a padded border (stride 3, dilation 2: output column 0 reads only column 1, column
    1 reads 0 and 2): holding [1,2), the box [0,3) keeps column 1 and loads columns 0 and 2: 2 columns x 4 rows."""
    data = np.arange(24, dtype=np.float32).reshape(1, 1, 4, 6)
    s = Session(BLOG)
    image = s.input("image", data)
    with GlobalHierarchy(s, "cols"):
        image.slide((0, 0, slice(0, 4), slice(1, 2)), capacity=(0, 0, slice(0, 4), slice(0, 3)))
        tile = image.slide((0, 0, slice(0, 4), slice(0, 3)))
        assert np.array_equal(tile.data, data[..., 0:3])
    assert s.counters.loaded_bytes == 4 + 8
    assert [e[4] for e in s.finish().events if e[0] == SLIDE] == [8]


def test_the_capacity_sizes_the_rotating_buffer():
    """A first box of 2 rows with capacity for 3: the buffer charges 3 x 4 = 12 B; a later 3-row box fits."""
    s = Session(BLOG, numeric=False)
    image = s.input("image", (1, 1, 10, 4))
    _rows(s, image, [(0, 2), (1, 4), (3, 6)], capacity=(0, 0, slice(0, 3), slice(0, 4)))
    assert s.counters.peak_sram_bytes == 12
    assert s.counters.loaded_bytes == (2 + 2 + 2) * 4
    s = Session(dataclasses.replace(BLOG, sram_bytes=11), numeric=False)
    image = s.input("image", (1, 1, 10, 4))
    with pytest.raises(SramOverflowError, match="allocating 12 B"):
        _rows(s, image, [(0, 2)], capacity=(0, 0, slice(0, 3), slice(0, 4)))


@pytest.mark.parametrize("boxes, capacity, match", [
    ([(0, 2), (1, 4)], None, r"\(12 B\) does not fit its rotating buffer \(buffer 0, 8 B\)"),
    ([(0, 3)], (0, 0, slice(0, 2), slice(0, 4)), r"does not fit the capacity \[0:1, 0:1, 0:2, 0:4\]"),
])
def test_a_box_larger_than_the_rotating_buffer_is_refused(boxes, capacity, match):
    s = Session(BLOG, numeric=False)
    image = s.input("image", (1, 1, 10, 4))
    with pytest.raises(ReuseError, match=match):
        _rows(s, image, boxes, capacity)


def test_slides_it_cannot_make_are_refused():
    s = Session(BLOG, numeric=False)
    image = s.input("image", (1, 1, 10, 4))
    out = s.output("out", (1, 1, 10, 4))
    with pytest.raises(RegionError, match="outside any GlobalHierarchy scope"):
        image.slide((0, 0, slice(0, 2), slice(0, 4)))
    with GlobalHierarchy(s, "a"):
        with pytest.raises(ReuseError, match="only an input or an on-chip tensor slides; out is written by the "
                                             "schedule to DDR"):
            out.slide((0, 0, slice(0, 2), slice(0, 4)))
        image.slide((0, 0, slice(0, 2), slice(0, 2)))
        with pytest.raises(ReuseError, match="along one axis, but it holds"):
            image.slide((0, 0, slice(1, 3), slice(1, 3)))
        with pytest.raises(RegionError, match="region 3:3 is empty"):  # (an all-padding window: skip the slide)
            image.slide((0, 0, slice(3, 3), slice(0, 2)))
        with pytest.raises(ReuseError, match="capacity .* differs from the 4 B of the rotating buffer 0"):
            image.slide((0, 0, slice(1, 3), slice(0, 2)), capacity=(0, 0, slice(0, 3), slice(0, 2)))


# -- validation and timing of SLIDE events -----------------------------------------------------------------------

def _sweep_trace(numeric: bool = False):
    """Three 2-row output tiles of a 3x3 conv (padding 1) over a 6 x 4 image with 2 channels, the image in one
    rotating buffer: boxes rows [0,3), [1,5), [3,6); TensorCore cycles per tile: ceil(2/16) x ceil(3/24) x 8
    pixels x 9 taps = 72. The output tiles are 2-way buffered, so that no slot of theirs orders the computes."""
    s = Session(BLOG, numeric=numeric)
    rng = np.random.default_rng(0)
    image = s.input("image", rng.standard_normal((1, 2, 6, 4)).astype(np.float32))
    weight = s.input("weight", rng.standard_normal((3, 2, 3, 3)).astype(np.float32))
    out = s.output("out", (1, 3, 6, 4))
    tc = TensorCore(s)
    with GlobalHierarchy(s, "weights"):
        w = weight[:, :, :, :]
        with GlobalHierarchy(s, "lines"):
            for oh in (0, 2, 4):
                rows = (max(oh - 1, 0), min(oh + 3, 6))
                x = image.slide((0, slice(0, 2), slice(*rows), slice(0, 4)), capacity=(0, slice(0, 2), slice(0, 4),
                                                                                       slice(0, 4)))
                with GlobalHierarchy(s, "out", ways=2):
                    o = out[0, :, oh:oh + 2, :]
                    o += tc.conv2d(x, w, padding=(int(oh == 0), int(oh == 4), 1, 1))
    return s, s.finish()


def test_a_slide_waits_for_the_computes_that_read_the_rows_it_overwrites():
    """Loads: weight 54 B, image rows [0,3) 24 B, then slides of rows 3-4 (16 B) and row 5 (8 B). At 1 B/cycle, no
    setup, one load engine and a separate store port: weight [0,54], image [54,78]; conv 1 [78,150]; the first
    slide may not overwrite rows conv 1 reads: [150,166], not [78,94] (right after the image load); conv 2
    [166,238]; slide 2 [238,246]; conv 3 [246,318]. Each 24 B output tile is stored after its conv: [150,174],
    [238,262], [318,342]: 342 cycles (without the rule the slides would run [78,94] and [94,102] and nothing
    else would move: the TensorCore is the bottleneck)."""
    _, trace = _sweep_trace()
    hw = dataclasses.replace(BLOG, dma_setup_cycles=0, dram_bytes_per_cycle=1.0, dram_shared_load_store=False)
    r = simulate(trace, hw)
    assert [(o.kind, o.start, o.end) for o in r.records() if o.kind != "open"] == [
        ("load", 0, 54), ("load", 54, 78), ("tensorcore", 78, 150), ("store", 150, 174), ("load", 150, 166),
        ("tensorcore", 166, 238), ("store", 238, 262), ("load", 238, 246), ("tensorcore", 246, 318),
        ("store", 318, 342)]
    assert r.cycles == 342 == simulate(trace, hw, reference=True).cycles
    assert lower(trace, hw).loaded_bytes == 54 + 24 + 16 + 8


def test_a_hand_built_sweep_equals_torch():
    s, _ = _sweep_trace(numeric=True)
    import torch
    ref = torch.nn.functional.conv2d(torch.tensor(s.tensors["image"].data, dtype=torch.float64),
                                     torch.tensor(s.tensors["weight"].data, dtype=torch.float64), padding=1)
    assert np.abs(s.tensors["out"].data - ref.numpy()).max() < 1e-4


# -- LoopNest ------------------------------------------------------------------------------------------------------

CONV = ConvProblem(1, 3, 4, 11, 7, 3, padding=1)
ORDER = ("n", "oc", "ow", "oh", "ic", "kh", "kw")


def _nest(**kw) -> LoopNest:
    args = dict(tiles={"oh": 2}, stage={"image": "oh", "weight": "top", "output": "oh"}, slide=["image"])
    args.update(kw)
    return LoopNest(CONV, ORDER, args["tiles"], args["stage"], slide=args["slide"])


@pytest.mark.parametrize("kw, match", [
    (dict(slide=["output"]), "'output' is the output; only an input's box slides"),
    (dict(slide=["weight"]), "'weight' has no window axis"),
    (dict(slide="image"), "give a list of tensor names"),
    (dict(slide=["im"]), r"unknown tensor\(s\) \['im'\]"),
    (dict(tiles={"oh": 11}), "with more than one trip, and it has none"),
    (dict(tiles={"oh": 2, "ic": 1}, stage={"image": "ic", "weight": "top", "output": "oh"}),
     "must be one of its window loops \\['oh', 'ow'\\], but it is 'ic'"),
])
def test_a_slide_the_nest_cannot_make_is_a_value_error(kw, match):
    with pytest.raises(ValueError, match=match):
        _nest(**kw)


def test_a_sliding_nest_reads_writes_and_prints_its_choice():
    nest = _nest()
    assert nest.sliding == ("image",) and nest.slide_loop("image") == "oh" and nest.slide_loop("weight") is None
    assert nest.scope_name("image") == "image@ow" and nest.scope_depth("image") == 3 and nest.depth("image") == 4
    data = json.loads(json.dumps(nest.to_json()))
    assert data["slide"] == ["image"] and LoopNest.from_json(data) == nest
    plain = nest.replace(slide=[])
    assert "slide" not in plain.to_json() and plain != nest and plain.replace(slide=["image"]) == nest
    assert "slide along oh: a rotating buffer" in nest.format()
    assert "slide=['image']" in repr(nest)


def test_timeloops_conv1d_sliding_window_counts_by_hand():
    """Timeloop's ISPASS 2020 exercise 02 (conv1d+oc, 2 levels, "untiled"): K = 32 output channels, P = 16 outputs,
    R = 3 taps, W = P + R - 1 = 18 inputs, 8-bit words. Mapping: DRAM loops `for K in [0:32) for P in [0:16)`,
    the buffer holds 3 weights, 3 inputs, 1 output. Timeloop reports DRAM reads of weights 96, inputs 576, output
    updates 512 (its reference stats), because P, the innermost DRAM loop, is a window loop: per K, the first
    P step reads 3 inputs and each of the 15 others 1 new input, 3 + 15 = 18; x 32 = 576. Weights: 3 per K, 96.
    Outputs: each of the 32 x 16 written once, 512. Without sliding the inputs would be 3 x 16 x 32 = 1536.

    The same mapping in dsasim: a 1 x 18 image with one channel, loops n, oc, oh, ow, ..., tiles oc = ow = 1, the
    weight staged in oc, image and output in ow, the image sliding along ow."""
    p = ConvProblem(1, 1, 32, 1, 18, 1, 3)
    nest = LoopNest(p, ("n", "oc", "oh", "ow", "ic", "kh", "kw"), {"oc": 1, "ow": 1},
                    {"image": "ow", "weight": "oc", "output": "ow"}, slide=["image"])
    hw = dataclasses.replace(BLOG, sram_bytes=1 << 20)
    a = analyze(nest, hw)
    assert (a.tensor("weight").loaded_bytes, a.tensor("image").loaded_bytes, a.tensor("output").stored_bytes) == \
        (96, 576, 512)
    assert a.tensor("image").loads == 32 * 16  # every step moves a new input
    assert a.tensor("image").instances == 32  # one sweep of P (one rotating buffer) per K
    assert analyze(nest.replace(slide=[]), hw).tensor("image").loaded_bytes == 1536
    r = run_loopnest(nest, hw)
    assert reconcile(nest, r, hw).ok
    assert (r.loaded_bytes, r.stored_bytes) == (96 + 576, 512)


# -- the analytic model equals the trace ---------------------------------------------------------------------------

def _sliding_nest(rng: random.Random, p: ConvProblem) -> LoopNest | None:
    """A random nest of a conv whose image slides: a random order and tiles, then one of the image's window loops
    (with more than one output position) moved innermost above the image's staging point, the loops between them
    untiled."""
    windows = [d for d in ("oh", "ow") if p.extents[d] > 1]
    if not windows:
        return None
    order = list(p.dims)
    rng.shuffle(order)
    k = rng.randint(1, len(order))
    loop = rng.choice(windows)
    order.remove(loop)
    j = rng.randint(0, k - 1)
    order.insert(j, loop)
    tiles = {d: rng.randint(1, p.extents[d]) for d in p.dims}
    tiles.update({d: p.extents[d] for d in order[j + 1:k]})
    tiles[loop] = rng.randint(1, p.extents[loop] - 1)
    stage = {t: rng.randint(0, len(order)) for t in p.tensor_names}
    stage["image"] = k
    return LoopNest(p, order, tiles, stage, {t: rng.randint(1, 2) for t in p.tensor_names}, slide=["image"])


def _random_sliding_nests(seed: int, count: int):
    rng = random.Random(seed)
    made = 0
    while made < count:
        p = _random_problem(rng)
        if p.kind != "conv":
            continue
        nest = _sliding_nest(rng, p)
        if nest is not None:
            made += 1
            yield nest


# the thousand traced in four quarters (one test each) so xdist spreads them over its workers; the nests are drawn
# in one sequence as before, so every one of them is traced, and the model-only check below sees all 1,000
@pytest.mark.parametrize("quarter", range(4))
def test_model_equals_trace_on_a_thousand_random_sliding_nests(quarter):
    """Ragged tiles, padding, stride and dilation up to 3 (tight windows at the borders), tiled taps (a sweep per
    tap tile), 1-2 ways: loaded bytes, loads, peak SRAM and every sweep's loads equal to the trace."""
    for nest in list(_random_sliding_nests(11, 1000))[quarter::4]:
        result = run_loopnest(nest, HW)
        rec = reconcile(nest, result, HW)
        assert rec.ok, str(rec)
        scope = next(i for i, sc in enumerate(result.trace.scopes) if sc.path[-1] == nest.scope_name("image"))
        sweeps = sum(1 for e in result.trace.events if e[0] == ENTER and e[1] == scope)
        assert analyze(nest, HW).tensor("image").instances == sweeps  # its scope instances: one per sweep


def test_most_of_the_thousand_random_sliding_nests_keep_rows():
    """The same 1,000 nests against themselves reloading dense boxes (strided boxes, which a stride > kernel allows
    without sliding, can beat sliding: that is the strided tests' subject): most load less by keeping rows."""
    kept = sum(analyze(nest, HW).loaded_bytes < analyze(nest.replace(slide=[]), HW, strided_boxes=False).loaded_bytes
               for nest in _random_sliding_nests(11, 1000))
    assert kept > 300  # most of them do keep rows


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2 ** 32 - 1))
def test_model_equals_trace_on_sliding_nests_hypothesis(seed):
    nest = next(_random_sliding_nests(seed, 1))
    assert reconcile(nest, run_loopnest(nest, HW), HW).ok


@pytest.mark.parametrize("problem, tiles", [
    (ConvProblem(1, 3, 5, 9, 7, 3, padding=1), {"oh": 2}),  # first tile at the padded top, last ragged (1 row)
    (ConvProblem(1, 2, 3, 12, 6, 3, stride=2, padding=1), {"oh": 2}),  # stride 2: boxes overlap by one row
    (ConvProblem(1, 2, 3, 13, 6, 3, dilation=2, padding=2), {"oh": 3}),  # dilation 2
    (ConvProblem(1, 2, 3, 7, 7, 3, stride=3, dilation=2, padding=3), {"oh": 1}),  # tight windows reach back
    (ConvProblem(1, 2, 3, 9, 7, 1, stride=2), {"oh": 1}),  # 1x1 stride 2: no overlap, nothing kept
])
def test_sliding_nests_compute_what_torch_computes(problem, tiles):
    nest = LoopNest(problem, ("n", "oc", "ow", "oh", "ic", "kh", "kw"), tiles,
                    {"image": "oh", "weight": "top", "output": "oh"}, slide=["image"])
    result = assert_schedule_matches_torch(loopnest_schedule(nest), HW)
    assert reconcile(nest, result, HW).ok


def test_slide_stats_by_hand():
    """3x3 conv, padding 1, 11 rows, 2-row output tiles: boxes [0,3) [1,5) [3,7) [5,9) [7,11) [9,11): new rows
    3, 2, 2, 2, 2, 0 = 11 rows (the image once) in 5 transfers. With the taps tiled by 1 (three sweeps, one per
    tap row): tap 0 reads rows o-1: boxes [0,1) [1,3) [3,5) [5,7) [7,9) [9,10): 10 rows, 6 transfers; tap 1 rows
    o: 11 rows, 6; tap 2 rows o+1: [1,3) ... [9,11) and [11,11) empty: 10 rows, 5. Stride 3, no padding, 1x1,
    tile 1: boxes [0,1) [3,4) [6,7) [9,10): 4 rows, 4 transfers (nothing to keep)."""
    assert tuple(slide_stats(11, 3, 1, 1, 1, 11, 2, 3)) == (11, 5)
    assert tuple(slide_stats(11, 3, 1, 1, 1, 11, 2, 1)) == (10 + 11 + 10, 6 + 6 + 5)
    assert tuple(slide_stats(4, 1, 3, 1, 0, 11, 1, 1)) == (4, 4)


def _brute_slide(o_ext, k_ext, s, d, p, h, to, tk):
    """Every box of every sweep, in order: what slide_stats must equal (its closed form skips the interior)."""
    total = loads = 0
    for t0 in range(0, k_ext, tk):
        t1, held = min(t0 + tk, k_ext), None
        for o0 in range(0, o_ext, to):
            rows = [o * s + t * d - p for o in range(o0, min(o0 + to, o_ext)) for t in range(t0, t1)
                    if 0 <= o * s + t * d - p < h]
            if not rows:
                continue
            first, stop = min(rows), max(rows) + 1
            new = stop - first - (max(0, min(stop, held[1]) - max(first, held[0])) if held else 0)
            total, loads, held = total + new, loads + (new > 0), (first, stop)
    return total, loads


def test_slide_stats_equal_the_sweep_box_by_box():
    rng = random.Random(9)
    checked = 0
    while checked < 3000:
        k, s, d, p, h = rng.randint(1, 7), rng.randint(1, 4), rng.randint(1, 3), rng.randint(0, 7), rng.randint(1, 30)
        if h + 2 * p < d * (k - 1) + 1:
            continue
        o = (h + 2 * p - d * (k - 1) - 1) // s + 1
        to, tk = rng.randint(1, o), rng.randint(1, k)
        assert tuple(slide_stats(o, k, s, d, p, h, to, tk)) == _brute_slide(o, k, s, d, p, h, to, tk)
        checked += 1


def test_vectorised_evaluation_of_sliding_nests_equals_the_scalar_model():
    """The search's numpy evaluator (slide columns per candidate) gives analyze's counts on mixed batches."""
    rng = random.Random(5)
    checked = 0
    while checked < 30:
        p = _random_problem(rng)
        if p.kind != "conv":
            continue
        nests = [n for n in (_sliding_nest(rng, p) for _ in range(4)) if n is not None]
        nests += [n.replace(slide=[]) for n in nests]
        if not nests:
            continue
        ev = evaluate_nests(nests, HW)
        for i, nest in enumerate(nests):
            a = analyze(nest, HW)
            assert (int(ev.loaded_bytes[i]), int(ev.peak_sram_bytes[i]), int(ev.tensors[0].loads[i])) == \
                (a.loaded_bytes, a.peak_sram_bytes, a.tensor("image").loads), nest
        checked += 1


def test_space_rows_keep_the_slide_and_drop_the_impossible_ones():
    space = Space(CONV, HW, exhaustive=True)
    nest = _nest()
    row = space.row(nest)
    again = space.nest(row)  # (its one-trip loops reordered, so their above bits differ)
    assert again.sliding == ("image",) and np.array_equal(space.row(again)[:space.nd], row[:space.nd])
    assert analyze(again, HW).loaded_bytes == analyze(nest, HW).loaded_bytes
    assert space.valid_slides(row[None, :])[0].tolist() == [0, -1, -1]  # image slides along group 0 (rows)
    bad = row.copy()
    bad[space.nd + 2 * space.nt] = 1  # along ow, which has one trip
    assert space.valid_slides(bad[None, :])[0].tolist() == [-1, -1, -1]


def test_the_search_picks_sliding_when_it_pays():
    """ResNet-50 res2a_branch2b (3x3, 64 -> 64 channels, 56 x 56, padding 1) at 128 KiB: compulsory traffic is
    image 64 x 56 x 56 = 200,704 + weights 64 x 64 x 9 = 36,864 + output 200,704 = 438,272 B. The weights
    (36 KiB) stay on chip and a 3-row rotating buffer of the image (64 x 3 x 56 = 10,752 B) reaches it; without
    sliding each output row band reloads its halo rows."""
    p = parse_layer("resnet50.res2a_branch2b")
    r = search(p, BLOG, 128 * 1024, runner=run_loopnest, confirm_top=1)
    assert r.best_traffic.traffic_bytes == 438_272 == r.bound.compulsory_bytes
    assert r.best_traffic.nest.sliding == ("image",) and r.best_traffic.traced
    assert r.best_traffic.peak_sram_bytes <= 128 * 1024


def test_a_matmul_never_slides():
    p = MatmulProblem(8, 8, 8)
    with pytest.raises(ValueError, match="'a' has no window axis"):
        LoopNest(p, ("m", "n", "k"), {"m": 2}, {"a": "m", "b": "top", "c": "m"}, slide=["a"])
    assert Space(p, HW).slidable == [[], [], []]


def test_no_slide_leaves_sliding_out_of_the_search(tmp_path):
    """`search(..., slide=False)` / `dsasim search --no-slide`: no candidate slides, so res2a_branch2b at 128 KiB
    stays above its compulsory 438,272 B (each band reloads its halo rows), while sliding reaches it."""
    from dsasim.cli import main
    p = parse_layer("resnet50.res2a_branch2b")
    r = search(p, BLOG, 128 * 1024, slide=False)
    assert all(not c.nest.sliding for c in r.pareto) and r.best_traffic.traffic_bytes > 438_272
    out = tmp_path / "best.json"
    assert main(["search", "resnet50.res2a_branch2b", "--sram", "128KiB", "--no-slide", "--confirm", "0",
                 "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert "slide" not in data["loop_nest"] and data["loaded_bytes"] + data["stored_bytes"] > 438_272
