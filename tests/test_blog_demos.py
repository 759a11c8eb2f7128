"""The blog's demo schedules: numerics against torch, and traffic totals derived by hand from the loop nests.

Numerics: every schedule on a reduced workload (partial tiles in every tiled dimension) and, except demo1
(1.6M scopes), at full size (the three slowest only with DSASIM_FULL_NUMERIC=1). Totals: count-only at full size on "blog" (1 B/word) and "blog-fp32" (4 B/word)
against formulas written out below from each schedule's loops; none of the numbers is pasted from a run.
"""

from __future__ import annotations

import dataclasses
import os

import pytest

from dsasim import GlobalHierarchy, Session, SramOverflowError, bind_tensors, preset, run_schedule
from dsasim.kernels import blog_demos
from dsasim.kernels.blog_demos import SCHEDULES

from helpers import assert_schedule_matches_torch

BY_NAME = {s.name: s for s in SCHEDULES}
BLOG, BLOG_FP32 = preset("blog"), preset("blog-fp32")
CAPACITY = 1536 * 1024  # both presets: 1,572,864 B


def ceil(a: int, b: int) -> int:
    return -(-a // b)


# -- reduced workloads: the same bodies on shapes with a partial tile in every tiled dimension -------------------
# conv: 40 input channels (16-slices: 16, 16, 8), 50 output channels (24-tiles: 24, 24, 2; 8-tiles: 6 x 8 + 2),
# 7 rows (2-row tiles: 2, 2, 2, 1; 12-row slabs: one of 7), 5 columns (56-wide tiles clamp to 5).
S_IMAGE, S_WEIGHT, S_OUT = (1, 40, 7, 5), (50, 40, 1, 1), (1, 50, 7, 5)
# chain: 3 -> 32 -> 40 channels (16-channel output tiles: 16, 16 then 16, 16, 8), 50 rows (48-row tiles: 48, 2)
C_IMAGE, C_MID, C_OUT = (1, 3, 50, 9), (1, 32, 50, 9), (1, 40, 50, 9)
REDUCED = {
    "blog-conv": dataclasses.replace(blog_demos.CONV, inputs={"image": S_IMAGE, "weight": S_WEIGHT},
                                     outputs={"output": S_OUT}),
    "blog-bias-conv": dataclasses.replace(blog_demos.BIAS_CONV,
                                          inputs={"image": S_IMAGE, "bias": S_IMAGE, "weight": S_WEIGHT},
                                          outputs={"output": S_OUT}),
    "blog-bias-conv-ddr": dataclasses.replace(blog_demos.BIAS_CONV_VIA_DDR,
                                              inputs={"image": S_IMAGE, "bias": S_IMAGE, "weight": S_WEIGHT},
                                              outputs={"output": S_OUT}, intermediates={"mid": S_IMAGE}),
    "blog-two-convs": dataclasses.replace(blog_demos.TWO_CONVS, inputs={
        "image": C_IMAGE, "weight1": (32, 3, 1, 1), "weight2": (40, 32, 1, 1)}, outputs={"output": C_OUT}),
    "blog-two-convs-ddr": dataclasses.replace(blog_demos.TWO_CONVS_VIA_DDR, inputs={
        "image": C_IMAGE, "weight1": (32, 3, 1, 1), "weight2": (40, 32, 1, 1)}, outputs={"output": C_OUT},
        intermediates={"mid": C_MID}),
}


def reduced(name: str):
    sched = BY_NAME[name]
    return dataclasses.replace(sched, workload=REDUCED[sched.workload.name])


def test_every_workload_has_a_reduced_copy():
    assert {s.workload.name for s in SCHEDULES} <= set(REDUCED)


@pytest.mark.parametrize("name", [s.name for s in SCHEDULES])
def test_reduced_numerics_and_count_only_agree(name):
    sched = reduced(name)
    hw = preset(sched.hardware)
    result = assert_schedule_matches_torch(sched, hw)      # every demo fits at this size, demo3-1/demo4 too
    counted = run_schedule(sched, hw, numeric=False)
    assert list(counted.trace.events) == list(result.trace.events)
    assert counted.tensors == result.tensors and counted.peak_sram_bytes == result.peak_sram_bytes


def test_demo1_reduced_totals():
    # demo1: a scope per output element: K*H*W = 50*7*5 = 1750 scopes, each opening 1 output element and
    # loading image[b, :, oh, ow] (C = 40 elements) and weight[oc, :] (40 elements); nothing is ever a hit.
    k, c, h, w = 50, 40, 7, 5
    scopes = k * h * w
    r = run_schedule(reduced("demo1"), BLOG, numeric=False, record_trace=False)
    assert r.status == "ok", r.message
    assert r.loaded_bytes == scopes * (c + c)
    assert r.stored_bytes == k * h * w                        # every output element stored once
    assert (r.rmw_bytes, r.hits) == (0, 0)
    assert r.peak_sram_bytes == 1 + c + c
    assert r.blog_loaded_elements == scopes * (1 + c + c)   # output, image and weight accesses all count
    assert r.macs == scopes * c and r.tensorcore_cycles == 0
    fp32 = run_schedule(reduced("demo1"), BLOG_FP32, numeric=False, record_trace=False)
    assert (fp32.loaded_bytes, fp32.stored_bytes, fp32.peak_sram_bytes) == (4 * r.loaded_bytes,
                                                                           4 * r.stored_bytes,
                                                                           4 * r.peak_sram_bytes)
    assert fp32.blog_loaded_elements == r.blog_loaded_elements


# Full-size numerics take 1-5 s each single-threaded (demo1 would take many minutes: left to the reduced check).
# The three slowest (~4-5 s each) run only with DSASIM_FULL_NUMERIC=1, to keep the default suite well under a
# minute on a loaded 2-core machine; their bodies are checked numerically on the reduced workload above.
SLOW = pytest.mark.skipif(os.environ.get("DSASIM_FULL_NUMERIC") != "1",
                          reason="slow full-size numeric check; set DSASIM_FULL_NUMERIC=1 to run it")
FULL_NUMERIC = [pytest.param("demo2", marks=SLOW), pytest.param("demo3-2", marks=SLOW), "demo3-3", "demo5-1",
                "demo5-2", "demo6", "demo6-1", pytest.param("weights-resident", marks=SLOW),
                "output-stationary-fp32"]


@pytest.mark.parametrize("name", FULL_NUMERIC)
def test_full_size_numerics(name):
    sched = BY_NAME[name]
    assert_schedule_matches_torch(sched, preset(sched.hardware), record_trace=False)


# -- full-size totals by hand -------------------------------------------------------------------------------------
C, K, H, W = 2048, 512, 56, 56          # 1x1 conv 2048 -> 512 on a 56x56 image, batch 1
IMG, WGT, OUT = C * H * W, K * C, K * H * W          # elements: 6,422,528 / 1,048,576 / 1,605,632
CONV_MACS = K * C * H * W
OC24 = ceil(K, 24)                       # 22 output-channel tiles of 24 (the last one 8)
PAIRS = H // 2                           # 28 two-row tiles
PLANES = K // 8                          # 64 output-stationary 8 x 56 x 56 tiles
SLICES = C // 16                         # 128 16-channel slices
PX = H * W                               # 3136 pixels
# the chain: 3 -> 32 -> 64 channels at 224 x 224, 16-channel output tiles of 48 rows (48 x 4 + 32: 5 tiles)
X, M, Y, W1, W2 = 3 * 224 * 224, 32 * 224 * 224, 64 * 224 * 224, 32 * 3, 64 * 32
ROWS48 = ceil(224, 48)
TILE48 = 48 * 224


def expected(name: str) -> dict:
    """Totals in elements (multiply by word_bytes for bytes; blog counts and MACs are element counts)."""
    if name == "demo2":
        # scope per (24 oc, 2 rows): loads weight[oc] (24*C) and image rows (C*2*W); output tile opened
        return dict(loaded={"image": OC24 * IMG, "weight": PAIRS * WGT}, stored=OUT, hits=0,
                    peak=24 * 2 * W + C * 2 * W + 24 * C, blog=PAIRS * WGT + OC24 * IMG + OUT,
                    macs=CONV_MACS, cycles=SLICES * OC24 * PX)
    if name == "demo3-1":
        # (unlimited SRAM) all weights resident; every output tile stays live in the batch scope; the image tile
        # goes through one reused buffer (only the first access counts for the blog); weightTile[oc] is a
        # sub-tile of the staged weights, not an access
        return dict(loaded={"image": OC24 * IMG, "weight": WGT}, stored=OUT, hits=0,
                    peak=WGT + C * 2 * W + OUT, blog=WGT + C * 2 * W + OUT,
                    macs=CONV_MACS, cycles=SLICES * OC24 * PX)
    if name == "demo3-2":
        # scope per 24 oc: weights once in all; the image once per oc tile; the oc scope holds all 28 of its
        # output tiles (fresh buffers) until it exits; the blog counts the first image tile of each oc scope
        return dict(loaded={"image": OC24 * IMG, "weight": WGT}, stored=OUT, hits=0,
                    peak=24 * C + C * 2 * W + PAIRS * 24 * 2 * W, blog=WGT + OC24 * C * 2 * W + OUT,
                    macs=CONV_MACS, cycles=SLICES * OC24 * PX)
    if name == "demo3-3":
        # scope per 8-channel output plane: the whole image (16-channel slices) and its 8 x C weights; the blog
        # counts the output plane and the first weight and image slices of each scope (reuse is False there)
        return dict(loaded={"image": PLANES * IMG, "weight": WGT}, stored=OUT, hits=0,
                    peak=8 * PX + 8 * 16 + 16 * PX, blog=OUT + PLANES * (8 * 16 + 16 * PX), macs=CONV_MACS,
                    cycles=PLANES * SLICES * PX)
    if name == "demo4":
        # (unlimited SRAM) the whole image resident: imageTile[:, ic] are sub-tiles of it, not accesses; output
        # planes and weight slices go through reused buffers, so the blog counts the image and the first of each
        return dict(loaded={"image": IMG, "weight": WGT}, stored=OUT, hits=0,
                    peak=IMG + 8 * PX + 8 * 16, blog=IMG + 8 * PX + 8 * 16, macs=CONV_MACS,
                    cycles=PLANES * SLICES * PX)
    if name == "demo5-1":
        # mid = image + bias in 8-channel planes (C/8 scopes: 3 x 8*PX live), stored; then demo3-3 on mid
        return dict(loaded={"image": IMG, "bias": IMG, "mid": PLANES * IMG, "weight": WGT},
                    stored=IMG + OUT, hits=0, peak=max(3 * 8 * PX, 8 * PX + 8 * 16 + 16 * PX),
                    blog=3 * IMG + OUT + PLANES * (8 * 16 + 16 * PX), macs=CONV_MACS, cycles=PLANES * SLICES * PX)
    if name == "demo5-2":
        # demo3-3 plus a bias slice per image slice and an on-chip image+bias scratch of the same size
        return dict(loaded={"image": PLANES * IMG, "bias": PLANES * IMG, "weight": WGT}, stored=OUT, hits=0,
                    peak=8 * PX + 8 * 16 + 3 * 16 * PX, blog=OUT + PLANES * (8 * 16 + 2 * 16 * PX), macs=CONV_MACS,
                    cycles=PLANES * SLICES * PX)
    if name == "demo6":
        # stage 1: weight1 resident, the image once per 16-oc tile (2), mid stored once; stage 2: weight2
        # resident, mid once per 16-oc tile (4); weightTile[oc] are sub-tiles, not accesses. The blog counts the
        # weights and the first output and input tile of each stage (later ones reuse their buffers)
        return dict(loaded={"image": 2 * X, "weight1": W1, "mid": 4 * M, "weight2": W2}, stored=M + Y,
                    hits=0,
                    peak=max(W1 + 16 * TILE48 + 3 * TILE48, W2 + 16 * TILE48 + 32 * TILE48),
                    blog=W1 + W2 + (16 + 3) * TILE48 + (16 + 32) * TILE48,
                    macs=(W1 + W2) * 224 * 224,
                    cycles=2 * 224 * 224 * ceil(3, 16) + 4 * 224 * 224 * ceil(32, 16))
    if name == "demo6-1":
        # both weights resident; the image once per 16-oc tile of conv2 (4); conv1 recomputed for each (4x MACs)
        return dict(loaded={"image": 4 * X, "weight1": W1, "weight2": W2}, stored=Y, hits=0,
                    peak=W1 + W2 + 16 * TILE48 + 3 * TILE48 + 32 * TILE48,
                    blog=W1 + W2 + (16 + 3) * TILE48, macs=(4 * W1 + W2) * 224 * 224,
                    cycles=4 * 224 * 224 * (ceil(3, 16) * ceil(32, 24) + ceil(32, 16) * ceil(16, 24)))
    if name == "weights-resident":
        # all weights once, the image once in 2-row slabs with their all-channel output slab; 22 weight hits a slab
        return dict(loaded={"image": IMG, "weight": WGT}, stored=OUT, hits=PAIRS * OC24,
                    peak=WGT + C * 2 * W + K * 2 * W, blog=WGT + PAIRS * (C * 2 * W + K * 2 * W + WGT),
                    macs=CONV_MACS, cycles=SLICES * OC24 * PX)
    if name == "output-stationary-fp32":
        # 12-row slabs (5: 12 x 4 + 8) hold all 512 output channels; image once, weights once per slab
        slabs = ceil(H, 12)
        return dict(loaded={"image": IMG, "weight": slabs * WGT}, stored=OUT, hits=0,
                    peak=K * 12 * W + 16 * 12 * W + K * 16, blog=OUT, macs=CONV_MACS,
                    cycles=SLICES * OC24 * PX)
    raise KeyError(name)


FULL_TOTALS = [s.name for s in SCHEDULES if s.name != "demo1"]


def test_the_table_covers_every_schedule_but_demo1():
    for name in FULL_TOTALS:
        expected(name)


@pytest.mark.parametrize("hw", [BLOG, BLOG_FP32], ids=lambda h: h.name)
@pytest.mark.parametrize("name", FULL_TOTALS)
def test_full_size_totals(name, hw):
    e = expected(name)
    word = hw.word_bytes
    loaded = sum(e["loaded"].values())
    fits = e["peak"] * word <= CAPACITY
    r = run_schedule(BY_NAME[name], hw, numeric=False, record_trace=False)
    if not fits:
        assert r.status == "overflow", f"{name} on {hw.name} needs {e['peak'] * word} B > {CAPACITY} B"
        assert f"capacity {CAPACITY:,} B" in r.message
        assert f"would need {e['peak'] * word:,} B peak" in r.message
        r = run_schedule(BY_NAME[name], hw, numeric=False, record_trace=False, enforce_capacity=False)
    assert r.status == "ok", r.message
    assert r.loaded_bytes == loaded * word
    assert r.stored_bytes == e["stored"] * word
    assert r.rmw_bytes == 0
    assert r.hits == e["hits"]
    assert r.peak_sram_bytes == e["peak"] * word
    assert r.blog_loaded_elements == e["blog"]
    assert r.macs == e["macs"]
    assert r.tensorcore_cycles == e["cycles"]
    per_tensor = {t.name: t.loaded_bytes for t in r.tensors if t.loaded_bytes}
    assert per_tensor == {k: v * word for k, v in e["loaded"].items()}


def test_demo3_1_and_demo4_overflow_on_the_blog_machine():
    # demo3-1: weights (WGT = 1,048,576 B) + one image tile (C*2*W = 229,376 B) + output tiles of 24*2*W = 2,688 B
    # that pile up in the batch scope: (CAPACITY - WGT - C*2*W) // 2688 = 294,912 // 2688 = 109 fit, the 110th
    # (index 109: oc tile 109 // 28 = 3 -> channels 72:96, row pair 109 % 28 = 25 -> rows 50:52) overflows
    tile = 24 * 2 * W
    fit = (CAPACITY - WGT - C * 2 * W) // tile
    assert fit == 109
    oc0, row0 = 24 * (fit // PAIRS), 2 * (fit % PAIRS)
    r = run_schedule(BY_NAME["demo3-1"], BLOG, numeric=False, record_trace=False)
    assert r.status == "overflow" and r.loaded_bytes is None
    assert (f"allocating {tile:,} B for output[0:1, {oc0}:{oc0 + 24}, {row0}:{row0 + 2}, 0:56] in scope batch "
            f"would make the live footprint {WGT + C * 2 * W + (fit + 1) * tile:,} B > capacity {CAPACITY:,} B") \
        in r.message
    for tensor in ("weight[0:512, 0:2048, 0:1, 0:1]", "image", "output"):
        assert tensor in r.message
    # the exception's list of live buffers, exactly: weight, output tile 0, the (reused) image buffer now
    # holding the tile of iteration 108 (oc 72:96, rows 48:50), output tiles 1..108
    s = Session(BLOG, numeric=False, record_trace=False)
    tensors = bind_tensors(s, BY_NAME["demo3-1"].workload, None)
    with pytest.raises(SramOverflowError) as info:
        blog_demos.demo3_1(s, **tensors)
    live = info.value.live
    assert live[0] == ("weight", "[0:512, 0:2048, 0:1, 0:1]", WGT, "batch")
    assert live[2] == ("image", "[0:1, 0:2048, 48:50, 0:56]", C * 2 * W, "batch")
    outputs = [e for e in live if e[0] == "output"]
    assert len(live) == 2 + fit and len(outputs) == fit
    assert outputs[0] == ("output", "[0:1, 0:24, 0:2, 0:56]", tile, "batch")
    assert outputs[-1] == ("output", f"[0:1, {oc0}:{oc0 + 24}, {row0 - 2}:{row0}, 0:56]", tile, "batch")
    assert sum(e[2] for e in live) == WGT + C * 2 * W + fit * tile
    assert info.value.capacity_bytes == CAPACITY and info.value.requested_bytes == tile

    # demo4: the whole image (IMG = 6,422,528 B) alone is 4x the SRAM: the first allocation fails, nothing live
    r = run_schedule(BY_NAME["demo4"], BLOG, numeric=False, record_trace=False)
    assert r.status == "overflow"
    assert (f"allocating {IMG:,} B for image[0:1, 0:2048, 0:56, 0:56] in scope batch would make the live "
            f"footprint {IMG:,} B > capacity {CAPACITY:,} B") in r.message
    s = Session(BLOG, numeric=False, record_trace=False)
    with pytest.raises(SramOverflowError) as info:
        blog_demos.demo4(s, **bind_tensors(s, BY_NAME["demo4"].workload, None))
    assert info.value.live == []


def test_weights_resident_reaches_compulsory_traffic():
    # compulsory: read the image and the weights once, write the output once (1 B/word)
    compulsory = IMG + WGT + OUT
    assert compulsory == 9_076_736
    r = run_schedule(BY_NAME["weights-resident"], BLOG, numeric=False, record_trace=False)
    assert r.status == "ok", r.message
    assert r.loaded_bytes + r.stored_bytes == compulsory
    assert r.peak_sram_bytes <= CAPACITY
    # the blog demos on the same workload all move more (their totals are checked one by one above)
    for name in ("demo2", "demo3-2", "demo3-3"):
        e = expected(name)
        assert sum(e["loaded"].values()) + e["stored"] > compulsory


def test_output_stationary_fp32_fits_and_beats_every_demo_on_blog_fp32():
    best = run_schedule(BY_NAME["output-stationary-fp32"], BLOG_FP32, numeric=False, record_trace=False)
    assert best.status == "ok", best.message
    # 4 B/word: image once + weights once per 12-row slab (5) + output once; peak K*12*W + 16*12*W + K*16 words
    assert best.loaded_bytes + best.stored_bytes == 4 * (IMG + 5 * WGT + OUT)
    assert best.peak_sram_bytes == 4 * (K * 12 * W + 16 * 12 * W + K * 16) <= CAPACITY
    # weights-resident needs 4 MiB of weights on chip at 4 B/word: it cannot run here
    assert run_schedule(BY_NAME["weights-resident"], BLOG_FP32, numeric=False).status == "overflow"
    traffic = best.loaded_bytes + best.stored_bytes
    # demo1 (not run at full size: 1.6M scopes): every output element loads a C-channel image column and a
    # C-channel weight row: 4 * (OUT * 2C + OUT) B
    assert 4 * (OUT * 2 * C + OUT) > traffic
    compared = []
    for sched in SCHEDULES:
        if not sched.name.startswith("demo") or sched.name == "demo1":
            continue
        r = run_schedule(sched, BLOG_FP32, numeric=False, record_trace=False)
        if sched.workload.name.startswith("blog-two-convs"):
            # a different workload; on blog-fp32 both chain demos overflow anyway (4 x their 1 B/word peak)
            assert r.status == "overflow"
            continue
        if r.status == "ok":
            assert r.loaded_bytes + r.stored_bytes > traffic, sched.name
            compared.append(sched.name)
    assert compared == ["demo2", "demo3-2", "demo3-3", "demo5-1", "demo5-2"]


# -- the helper itself must fail wrong or failing schedules --------------------------------------------------
def _demo3_3_missing_last_slice(s, image, weight, output):
    """demo3-3 that forgets the last (partial) 16-channel slice: wrong by |x * w| summed over 8 channels."""
    from dsasim import Segments, TensorCore
    tc = TensorCore(s)
    b_, c_, h_, w_ = image.shape
    for b in Segments(0, b_, 1):
        for oc in Segments(0, weight.shape[0], 8):
            with GlobalHierarchy(s, "out-tile"):
                out = output[b, oc, :, :]
                for ic in Segments(0, c_ - c_ % 16, 16):
                    out += tc.conv2d(image[b, ic, :, :, True], weight[oc, ic, True])


def test_helper_rejects_a_wrong_schedule_and_a_failed_run():
    broken = dataclasses.replace(BY_NAME["demo3-3"], name="broken", body=_demo3_3_missing_last_slice,
                                 workload=REDUCED["blog-conv"])
    with pytest.raises(AssertionError, match="differs from torch"):
        assert_schedule_matches_torch(broken, BLOG)
    with pytest.raises(AssertionError, match="(?s)status 'overflow'.*capacity 1,572,864 B"):
        assert_schedule_matches_torch(BY_NAME["demo4"], BLOG, record_trace=False)


# -- the blog's printed "total loaded" ---------------------------------------------------------------------------
# typed from the blog post (../shared/seeds/002_507640ca681ccf73.txt), elements
PRINTED = {"demo1": 6_578_274_304, "demo2": 179_651_584, "demo3-2": 9_586_432, "demo3-3": 4_825_088,
           "demo5-1": 30_515_200, "demo5-2": 8_036_352, "demo6": 722_528, "demo6-1": 206_432}


def test_registered_printed_counts_are_the_blogs():
    assert {s.name: s.blog_printed for s in SCHEDULES if s.blog_printed is not None} == PRINTED


def test_demo1_count_formula_is_the_printed_one():
    # a scope per output element counts its output element, an image column (C) and a weight row (C);
    # test_demo1_reduced_totals checks the port counts exactly this per scope
    assert OUT * (1 + C + C) == PRINTED["demo1"]


@pytest.mark.parametrize("name", ["demo3-3", "demo5-2", "demo6", "demo6-1"])
def test_clean_ports_reproduce_the_printed_count(name):
    # these tile evenly, so clamping changes nothing, and no failed demo runs before them without a reset
    assert expected(name)["blog"] == PRINTED[name]
    for quirks in (False, True):
        r = run_schedule(BY_NAME[name], BLOG, numeric=False, record_trace=False, blog_quirks=quirks)
        assert r.blog_loaded_elements == PRINTED[name]


# The three quirks, by hand. (1) The blog's Segments does not clamp: demo2's and demo3-2's last output-channel
# tile is 504:528, counted as 24 channels (16 more weight rows of C and output rows of 2*W per row pair), and
# get_input_segment maps it to "groups" 0..1, input channels 0:4096: the image tile counts twice C. (2) demo3-1
# fails (SRAM overflow) before its Reset(): its count up to the failing output tile stays in demo3-2's. The
# weights (WGT), the first image tile (C*2*W) and output tiles of 24*2*W until the 110th does not fit:
# WGT + C*2*W + 110*2688 = 1,573,632 > 1,572,864 while 109 tiles fit. (3) demo4 fails the same way on its
# first access, the whole image (IMG), which the blog counted before the capacity check.
LAST_TILE_EXTRA = 16 * C + 16 * 2 * W        # weight rows + output rows of the 16 phantom channels
UNCLAMPED_IMAGE_EXTRA = C * 2 * W            # input channels 2048:4096 of the last tile's image region
DEMO3_1_LEFT = WGT + C * 2 * W + 110 * 24 * 2 * W
QUIRKS = {
    "demo2": PAIRS * (LAST_TILE_EXTRA + UNCLAMPED_IMAGE_EXTRA),
    "demo3-2": 16 * C + PAIRS * 16 * 2 * W + UNCLAMPED_IMAGE_EXTRA + DEMO3_1_LEFT,
    "demo5-1": IMG,
}


def test_the_quirk_sizes_explain_the_printed_numbers():
    assert WGT + C * 2 * W + 109 * 24 * 2 * W <= CAPACITY < DEMO3_1_LEFT
    for name, extra in QUIRKS.items():
        assert expected(name)["blog"] + extra == PRINTED[name], name


@pytest.mark.parametrize("name", sorted(QUIRKS))
def test_blog_quirks_reproduce_the_printed_count_and_change_nothing_else(name):
    clean = run_schedule(BY_NAME[name], BLOG, numeric=False, record_trace=False)
    quirky = run_schedule(BY_NAME[name], BLOG, numeric=False, record_trace=False, blog_quirks=True)
    assert clean.blog_loaded_elements == expected(name)["blog"]
    assert quirky.blog_loaded_elements == PRINTED[name]
    assert quirky.blog_printed == PRINTED[name]
    assert quirky.blog_carried_elements == {"demo3-2": DEMO3_1_LEFT, "demo5-1": IMG}.get(name, 0)
    honest = ("status", "loaded_bytes", "stored_bytes", "rmw_bytes", "hits", "peak_sram_bytes", "macs",
              "tensorcore_cycles")
    assert [getattr(quirky, f) for f in honest] == [getattr(clean, f) for f in honest]
    assert [dataclasses.replace(t, blog_loaded_elements=0) for t in quirky.tensors] == \
        [dataclasses.replace(t, blog_loaded_elements=0) for t in clean.tensors]


def test_failed_demos_report_their_count_at_failure_only_with_quirks():
    assert run_schedule(BY_NAME["demo3-1"], BLOG, numeric=False).blog_loaded_elements is None
    r = run_schedule(BY_NAME["demo3-1"], BLOG, numeric=False, record_trace=False, blog_quirks=True)
    assert (r.status, r.blog_loaded_elements) == ("overflow", DEMO3_1_LEFT)
    r = run_schedule(BY_NAME["demo4"], BLOG, numeric=False, record_trace=False, blog_quirks=True)
    assert (r.status, r.blog_loaded_elements) == ("overflow", IMG)


def test_quirk_mode_numerics_still_match_torch():
    # the unclamped last tile (reduced: 48:72 of 50 channels) must not change a single output value
    for name in ("demo2", "demo3-2"):
        sched = reduced(name)
        r = run_schedule(sched, BLOG, blog_quirks=True)
        assert r.status == "ok" and r.max_abs_err < 1e-4, (name, r.message)


def test_demo6_shapes_are_the_ones_the_printed_counts_determine():
    # With W = 224 columns, 48-row tiles and 16-channel output tiles (the blog's loops), for channels
    # C0 -> C1 -> C2: demo6 - demo6-1 = (16 + C1) * 48 * W and demo6-1 = C0*C1 + C1*C2 + (16 + C0) * 48 * W.
    width = 224
    c1, rest = divmod(PRINTED["demo6"] - PRINTED["demo6-1"], 48 * width)
    c1 -= 16
    assert rest == 0 and c1 == 32
    solutions = [(c0, c2) for c0 in range(1, 65) for c2 in range(1, 1025)
                 if c0 * c1 + c1 * c2 + (16 + c0) * 48 * width == PRINTED["demo6-1"]]
    assert solutions == [(1, 738), (2, 401), (3, 64)]
    # only one has C2 in whole 16-channel output tiles, like C1 (and a 3-channel RGB image)
    assert [(c0, c2) for c0, c2 in solutions if c2 % 16 == 0] == [(3, 64)]
    assert (blog_demos.CHAIN_IMAGE, blog_demos.CHAIN_MID, blog_demos.CHAIN_OUT) == \
        ((1, 3, width, width), (1, c1, width, width), (1, 64, width, width))
