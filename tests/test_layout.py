"""DDR layouts: contiguous runs and burst bytes of a box, counted by hand; the transfer cycles the timing model
charges for them; the default hardware unchanged; bad layouts refused with the reason."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dsasim import GlobalHierarchy, Session, TensorCore
from dsasim.hardware import PRESETS
from dsasim.layout import transfer_runs
from dsasim.timing import simulate
from dsasim.timing.model import KIND_NAMES, lower

SHAPE = (1, 32, 4, 5)  # N, C, H, W


@pytest.mark.parametrize("layout, region, runs, run_bytes", [
    # row-major (NCHW): a channel plane is H*W contiguous; whole planes of consecutive channels join
    ("row-major", ((0, 1), (0, 32), (0, 4), (0, 5)), 1, 640),
    ("row-major", ((0, 1), (0, 16), (0, 4), (0, 5)), 1, 320),
    ("row-major", ((0, 1), (0, 32), (1, 3), (0, 5)), 32, 10),   # 2 of 4 rows: one run of 2 rows per channel
    ("row-major", ((0, 1), (0, 32), (1, 3), (1, 4)), 64, 3),    # part of a row: one run per row per channel
    # NHWC: a pixel's channels are contiguous; 16 of 32 channels is one short run per pixel
    ("NHWC", ((0, 1), (0, 32), (0, 4), (0, 5)), 1, 640),
    ("NHWC", ((0, 1), (0, 16), (0, 4), (0, 5)), 20, 16),
    ("NHWC", ((0, 1), (0, 32), (1, 3), (0, 5)), 1, 320),        # whole rows of all channels: one run
    # NCHW16c: a block of 16 channels over every pixel is one run; a range straddling blocks splits
    ("NCHW16c", ((0, 1), (0, 16), (0, 4), (0, 5)), 1, 320),
    ("NCHW16c", ((0, 1), (0, 32), (0, 4), (0, 5)), 1, 640),
])
def test_runs_of_a_box_by_hand(layout, region, runs, run_bytes):
    assert transfer_runs(SHAPE, layout, region, 1) == (runs, runs * run_bytes)
    # with 64-byte bursts every run is rounded up to whole bursts
    assert transfer_runs(SHAPE, layout, region, 1, 64) == (runs, runs * -(-run_bytes // 64) * 64)
    # 4-byte words: the same runs, 4x the bytes
    assert transfer_runs(SHAPE, layout, region, 4) == (runs, 4 * runs * run_bytes)


def test_a_channel_range_straddling_blocks():
    # channels 8..24 of every pixel: the top half of block 0 and the bottom half of block 1, 8 channels per
    # pixel each; block 0's last pixel (channels 8..15) runs straight on into block 1's first pixel (0..7), so 20
    # + 20 runs of 8 become 19 + 1 (of 16) + 19
    assert transfer_runs(SHAPE, "NCHW16c", ((0, 1), (8, 24), (0, 4), (0, 5)), 1) == (39, 40 * 8)
    # with the last row cut off (3 x 5 = 15 pixels) the two blocks no longer meet: 15 + 15 runs of 8
    assert transfer_runs(SHAPE, "NCHW16c", ((0, 1), (8, 24), (0, 3), (0, 5)), 1) == (30, 30 * 8)
    # channels 0..20 of 20 (a whole block of 16, then 4 in a block padded to 16): block 0 is one run of 320
    # that joins the first pixel's 4 channels of block 1; 19 runs of 4 follow
    assert transfer_runs((1, 20, 4, 5), "NCHW16c", ((0, 1), (0, 20), (0, 4), (0, 5)), 1) == (20, 320 + 80)
    # 64-byte bursts: 324 -> 384, and 19 x (4 -> 64)
    assert transfer_runs((1, 20, 4, 5), "NCHW16c", ((0, 1), (0, 20), (0, 4), (0, 5)), 1, 64) == (20, 384 + 19 * 64)


def _one_load(hw, layout: str):
    """16 of 32 channels of an image loaded once, a 1x1 conv, its output stored once (count-only)."""
    s = Session(hw, numeric=False, layouts={"x": layout})
    x = s.input("x", SHAPE)
    y = s.output("y", (1, 16, 4, 5))
    w = s.input("w", (16, 16, 1, 1))
    with GlobalHierarchy(s, "tile"):
        out = y[:, :, :, :]
        out += TensorCore(s).conv2d(x[:, 0:16, :, :], w[:, :, :, :])
    return s.finish()


def test_transfer_cycles_count_runs_and_bursts():
    hw = dataclasses.replace(PRESETS["blog"], dma_burst_bytes=64, dma_run_cycles=8)
    setup, bw = hw.dma_setup_cycles, hw.dram_bytes_per_cycle
    for layout, runs, run_bytes in (("row-major", 1, 320), ("NHWC", 20, 16), ("NCHW16c", 1, 320)):
        g = lower(_one_load(hw, layout), hw)
        loads = [int(d) for k, d, t in zip(g.kind, g.dur, g.tensor) if KIND_NAMES[k] == "load" and t == 0]
        moved = runs * -(-run_bytes // 64) * 64
        assert loads == [setup + runs * 8 + int(np.ceil(moved / bw))], layout
    # the default hardware: layout changes nothing
    base = PRESETS["blog"]
    graphs = {layout: lower(_one_load(base, layout), base) for layout in ("row-major", "NHWC")}
    assert list(graphs["row-major"].dur) == list(graphs["NHWC"].dur)
    g = graphs["NHWC"]
    assert [int(d) for k, d, t in zip(g.kind, g.dur, g.tensor) if KIND_NAMES[k] == "load" and t == 0] == \
        [setup + 320 // 32]


def test_the_simpy_reference_agrees_with_layout_costs():
    hw = dataclasses.replace(PRESETS["blog"], dma_burst_bytes=64, dma_run_cycles=8)
    trace = _one_load(hw, "NHWC")
    fast, slow = simulate(trace, hw), simulate(trace, hw, reference=True)
    assert fast.cycles == slow.cycles and fast.to_json("x") == slow.to_json("x")


@pytest.mark.parametrize("layouts, words", [
    ({"x": "NCWH"}, r"layouts are \['row-major', 'NHWC', 'NCHW16c'\]"),
    ("NHWC", "must map tensor names to layouts"),
])
def test_bad_layouts_are_refused(layouts, words):
    with pytest.raises(ValueError, match=words):
        Session(PRESETS["blog"], numeric=False, layouts=layouts)


def test_a_layout_for_a_tensor_never_made_is_an_error():
    s = Session(PRESETS["blog"], numeric=False, layouts={"imgae": "NHWC"})
    s.input("image", (1, 16, 4, 4))
    with pytest.raises(ValueError, match=r"layouts names tensor\(s\) \['imgae'\] that the schedule never created"):
        s.finish()


def test_a_layout_for_the_wrong_rank_is_refused():
    s = Session(PRESETS["blog"], numeric=False, layouts={"a": "NHWC"})
    with pytest.raises(ValueError, match=r"tensor 'a': layout 'NHWC' is for 4-d .* shape is \(8, 8\)"):
        s.input("a", (8, 8))


@pytest.mark.parametrize("field, value", [("dma_burst_bytes", 0), ("dma_run_cycles", -1)])
def test_hardware_checks_the_new_fields(field, value):
    with pytest.raises(ValueError, match=field):
        dataclasses.replace(PRESETS["blog"], **{field: value})


def _address(layout: str, shape, n: int, c: int, h: int, w: int) -> int:
    """An element's DDR offset (elements) in a layout, written out per layout."""
    N, C, H, W = shape
    if layout == "row-major":
        return ((n * C + c) * H + h) * W + w
    if layout == "NHWC":
        return ((n * H + h) * W + w) * C + c
    blocks = -(-C // 16)  # NCHW16c: the last block padded to 16 channels
    return (((n * blocks + c // 16) * H + h) * W + w) * 16 + c % 16


def test_runs_equal_a_brute_force_count_of_contiguous_addresses():
    """Random boxes of random 4-d tensors: sort the box's element addresses, count the maximal contiguous
    segments, round each to bursts; `transfer_runs` must agree."""
    import itertools
    import random

    rng = random.Random(7)
    for _ in range(300):
        shape = (rng.randint(1, 2), rng.randint(1, 40), rng.randint(1, 5), rng.randint(1, 5))
        region = []
        for extent in shape:
            a = rng.randint(0, extent - 1)
            region.append((a, rng.randint(a + 1, extent)))
        layout = rng.choice(["row-major", "NHWC", "NCHW16c"])
        word, burst = rng.choice([1, 2, 4]), rng.choice([1, 8, 64])
        box = itertools.product(*(range(a, b) for a, b in region))
        addresses = sorted(_address(layout, shape, *idx) for idx in box)
        segments = []
        for x in addresses:
            if segments and segments[-1][1] == x:
                segments[-1][1] = x + 1
            else:
                segments.append([x, x + 1])
        moved = sum(-(-(b - a) * word // burst) * burst for a, b in segments)
        assert transfer_runs(shape, layout, tuple(region), word, burst) == (len(segments), moved), (shape, region,
                                                                                                     layout)
