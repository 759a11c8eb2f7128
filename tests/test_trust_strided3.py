"""Trust, round two (strided3): loop nests load strided boxes, and the analytic model and the search count them.

An input that does not slide loads only the rows and columns its windows read (every other one for a 1x1
stride-2 conv): the kernel's box is a strided box, the TensorCore convolves it with stride / step, and
`analytic` counts stepped rows (span // step + 1 per tile class). Figures are derived by hand in the comments.
"""

from __future__ import annotations

import random

import pytest

from dsasim import preset
from dsasim.architect.model.analytic import analyze, group_stats, reconcile
from dsasim.architect.nests.loopnest import ConvProblem, LoopNest
from dsasim.architect.search.layer_search import search
from dsasim.kernels.loopnest_kernel import count_loopnest, run_loopnest

HW = preset("blog")  # 1-byte words
ORDER = ("n", "oc", "oh", "ow", "ic", "kh", "kw")
SMALL = ConvProblem(1, 8, 8, 12, 12, 1, stride=2)  # 1x1 stride 2: output 6 x 6, reads rows/columns 0, 2, .., 10


def _totals(counters_or_analysis) -> tuple[int, int, int]:
    c = counters_or_analysis
    return c.loaded_bytes, c.stored_bytes, c.peak_sram_bytes


def test_a_strided_1x1_box_loads_only_the_rows_and_columns_it_reads():
    """Image staged per oh tile of 3: rows 0, 2, 4 (then 6, 8, 10) x columns 0, 2, .., 10 (6) x 8 channels =
    144 B a box, 288 B for both = 8 x 6 x 6, every touched element once (a dense box would be 8 x 5 x 11 = 440 B).
    Weight 8 x 8 = 64 B once; output 8 x 6 x 6 = 288 B stored. Peak: image 144 + weight 64 + output box 8 x 3 x 6
    = 144, i.e. 352 B."""
    nest = LoopNest(SMALL, ORDER, {"oh": 3}, {"image": "oh", "weight": "top", "output": "oh"})
    expected = (288 + 64, 288, 144 + 64 + 144)
    assert _totals(analyze(nest, HW)) == expected
    result = run_loopnest(nest, HW, numeric=True)  # numeric: checked against torch's conv2d
    assert str(result.status) == "ok", result.message
    assert _totals(result) == expected
    assert reconcile(nest, result, HW).ok
    image = analyze(nest, HW).tensor("image")
    assert (image.loaded_bytes, image.loads, image.box_bytes) == (288, 2, 144)


def test_a_multi_level_or_dense_run_keeps_the_dense_boxes():
    """strided_boxes=False (a LevelNest's outer nest): the same nest loads the dense 8 x 5 x 11 = 440 B box per oh
    tile, 880 B, plus the weight's 64 B."""
    nest = LoopNest(SMALL, ORDER, {"oh": 3}, {"image": "oh", "weight": "top", "output": "oh"})
    assert analyze(nest, HW, strided_boxes=False).loaded_bytes == 880 + 64


@pytest.mark.parametrize("tiles", [{"oh": 1, "ow": 1}, {"oh": 2, "ow": 1}, {"oh": 1, "ow": 6}, {"oh": 4, "ow": 5}])
def test_compute_tiles_inside_a_strided_buffer_are_hits(tiles):
    """The whole image staged at the top as one strided box (8 x 6 x 6 = 288 B, one load); every compute tile,
    down to a single pixel (a box whose stepped axes hold one index each), is a hit in it: 288 B, 1 load, and the
    numbers still match torch."""
    nest = LoopNest(SMALL, ("n", "oh", "ow", "oc", "ic", "kh", "kw"), tiles, {"image": "top", "weight": "top",
                                                                               "output": "kw"})
    result = run_loopnest(nest, HW, numeric=True)
    assert str(result.status) == "ok", result.message
    image = next(t for t in result.tensors if t.name == "image")
    assert (image.loaded_bytes, image.loads) == (288, 1)
    model = analyze(nest, HW).tensor("image")
    assert (model.loaded_bytes, model.loads) == (288, 1)
    assert reconcile(nest, result, HW).ok


def test_group_stats_counts_stepped_rows_per_tile_class():
    """1x1 stride 2 over 12 rows (6 outputs) tiled by 4: tiles [0,4) read rows 0, 2, 4, 6 (4 rows; dense 7) and
    [4,6) rows 8, 10 (2; dense 3): stepped 6, dense 10; the largest rows per class 4 (not last) and 2 (last).
    3x3 dilation 2 stride 4 (gcd 2): one pair of 2 outputs x 3 taps spans 4 + 4 = 8 rows, step 2 -> 5 rows."""
    stepped = group_stats(6, 1, 2, 1, 0, 12, 4, 1, stepped=True)
    dense = group_stats(6, 1, 2, 1, 0, 12, 4, 1)
    assert (stepped.total, dense.total) == (6, 10)
    assert (stepped.cls_max[0][1], stepped.cls_max[1][1]) == (4, 2)
    assert group_stats(2, 3, 4, 2, 0, 20, 2, 3, stepped=True).total == 5


PROBLEMS = [SMALL, ConvProblem(2, 4, 6, 9, 9, 1, stride=3), ConvProblem(1, 4, 4, 13, 11, 3, stride=2, padding=1,
                                                                        dilation=2),
            ConvProblem(1, 4, 4, 16, 16, 3, stride=(4, 6), padding=(2, 1), dilation=2),
            ConvProblem(1, 6, 4, 9, 9, 1, stride=2, groups=2), ConvProblem(1, 4, 4, 10, 10, 3, stride=2, padding=1)]


@pytest.mark.parametrize("seed", range(4))
def test_model_equals_trace_on_random_strided_nests(seed):
    """Random orders, tiles, staging, ways and sliding on strided and dilated convs (steps 2, 3, gcd(4, 2), padded
    borders, groups): the model equals the trace on every quantity, and the numbers match torch."""
    rng = random.Random(seed)
    for _ in range(12):
        p = rng.choice(PROBLEMS)
        order = list(p.dims)
        rng.shuffle(order)
        tiles = {d: rng.randint(1, p.extents[d]) for d in p.dims}
        stage = {t.name: rng.randint(0, len(order)) for t in p.tensors}
        ways = {t.name: rng.randint(1, 2) for t in p.tensors}
        try:
            nest = LoopNest(p, order, tiles, stage, ways, slide=["image"] if rng.random() < 0.4 else [])
        except ValueError:  # no slide loop for the image here
            nest = LoopNest(p, order, tiles, stage, ways)
        result = run_loopnest(nest, HW, numeric=True, enforce_capacity=False)
        assert str(result.status) == "ok", (nest, result.message)
        rec = reconcile(nest, result, HW)
        assert rec.ok, str(rec)


def test_res3a_branch1_whole_image_box_moves_its_touched_bytes_once():
    """res3a_branch1 (256 -> 512, 56 x 56, 1x1 stride 2): the image staged once at the top moves 256 x 28 x 28 =
    200,704 B (the dense box would be 256 x 55 x 55 = 774,400 B); model and count-only trace agree."""
    p = ConvProblem(1, 256, 512, 56, 56, 1, stride=2)
    nest = LoopNest(p, ORDER, {"oc": 24, "oh": 2}, {"image": "top", "weight": "oc", "output": "oh"})
    model = analyze(nest, HW)
    assert model.tensor("image").loaded_bytes == 200_704
    counters = count_loopnest(nest, HW, enforce_capacity=False)
    assert (counters.loaded_bytes, counters.stored_bytes, counters.peak_sram_bytes) == _totals(model)


def test_search_confirms_res3a_branch1_at_64_kib():
    """The search's best nests for res3a_branch1 at 64 KiB, re-run through the trace (`confirm` raises if model
    and trace differ), never beat the compulsory bound 200,704 + 131,072 + 401,408 = 733,184 B."""
    p = ConvProblem(1, 256, 512, 56, 56, 1, stride=2)
    result = search(p, HW, 64 * 1024, runner=run_loopnest, confirm_top=2, simulate=False)
    assert result.confirmed and all(c.traced for c in result.confirmed)
    assert result.best.traffic_bytes >= 733_184
