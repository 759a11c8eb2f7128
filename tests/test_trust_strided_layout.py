"""Trust, round two (strided): the runs and bursts of a strided DMA box (`layout.transfer_runs(..., steps=)`).

A DMA engine moves a strided box (every other row and column of a 1x1 stride-2 conv's input) with one
descriptor per contiguous run; the runs are counted by hand and against a brute-force count of contiguous
addresses, in every layout.
"""

from __future__ import annotations

import itertools
import random

import pytest

from dsasim.layout import transfer_runs

SHAPE = (1, 32, 4, 6)  # N, C, H, W


def _address(layout, shape, n, c, h, w):
    N, C, H, W = shape
    if layout == "row-major":
        return ((n * C + c) * H + h) * W + w
    if layout == "NHWC":
        return ((n * H + h) * W + w) * C + c
    blocks = -(-C // 16)  # NCHW16c: the last block padded to 16 channels
    return (((n * blocks + c // 16) * H + h) * W + w) * 16 + c % 16


@pytest.mark.parametrize("layout, region, steps, runs, run_elements", [
    # NCHW, rows 0 and 2 of 4, every column: one 6-element run per row per channel: 32 x 2 runs of 6
    ("row-major", ((0, 1), (0, 32), (0, 4), (0, 6)), (1, 1, 2, 1), 64, 6),
    # NCHW, every other column: each element its own run: 32 x 4 x 3 runs of 1
    ("row-major", ((0, 1), (0, 32), (0, 4), (0, 6)), (1, 1, 1, 2), 384, 1),
    # NCHW, 1x1 stride 2 (rows 0, 2; columns 0, 2, 4): 32 x 2 x 3 single elements
    ("row-major", ((0, 1), (0, 32), (0, 4), (0, 6)), (1, 1, 2, 2), 192, 1),
    # NHWC, every other row and column: a pixel's 32 channels stay one run: 2 x 3 runs of 32
    ("NHWC", ((0, 1), (0, 32), (0, 4), (0, 6)), (1, 1, 2, 2), 6, 32),
    # NHWC, every other column of whole rows: a row's pixels are no longer adjacent: 4 x 3 runs of 32
    ("NHWC", ((0, 1), (0, 32), (0, 4), (0, 6)), (1, 1, 1, 2), 12, 32),
    # NCHW16c, rows 1 and 3, columns 1, 3, 5: per block of 16 channels a run per pixel: 2 blocks x 2 x 3 runs of 16
    ("NCHW16c", ((0, 1), (0, 32), (1, 4), (1, 6)), (1, 1, 2, 2), 12, 16),
    # a step on a one-element range changes nothing: one plane of 24 elements per channel, joined: 1 run
    ("row-major", ((0, 1), (0, 32), (0, 4), (0, 6)), (3, 1, 1, 1), 1, 768),
])
def test_runs_of_a_strided_box_by_hand(layout, region, steps, runs, run_elements):
    assert transfer_runs(SHAPE, layout, region, 1, 1, steps) == (runs, runs * run_elements)
    # 2-byte words, 8-byte bursts: each run rounded up to whole bursts
    assert transfer_runs(SHAPE, layout, region, 2, 8, steps) == (runs, runs * -(-2 * run_elements // 8) * 8)


def test_strided_runs_equal_a_brute_force_count_of_contiguous_addresses():
    rng = random.Random(26)
    for _ in range(400):
        shape = (rng.randint(1, 2), rng.randint(1, 40), rng.randint(1, 6), rng.randint(1, 6))
        layout = rng.choice(["row-major", "NHWC", "NCHW16c"])
        region, steps = [], []
        for axis, extent in enumerate(shape):
            a = rng.randint(0, extent - 1)
            region.append((a, rng.randint(a + 1, extent)))
            steps.append(1 if axis == 1 and layout == "NCHW16c" else rng.choice([1, 1, 2, 3]))
        for axis, ((a, b), st) in enumerate(zip(region, steps)):
            rows = range(a, b, st)
            if st > 1 and len(rows) > 1 and rows[0] == 0 and rows[-1] == shape[axis] - 1:
                steps[axis] = 1  # (the case below: its last index would touch the next row's first)
        word, burst = rng.choice([1, 2, 4]), rng.choice([1, 8, 64])
        box = itertools.product(*(range(a, b, st) for (a, b), st in zip(region, steps)))
        addresses = sorted(_address(layout, shape, *idx) for idx in box)
        segments = []
        for x in addresses:
            if segments and segments[-1][1] == x:
                segments[-1][1] = x + 1
            else:
                segments.append([x, x + 1])
        moved = sum(-(-(b - a) * word // burst) * burst for a, b in segments)
        assert transfer_runs(shape, layout, tuple(region), word, burst, steps) == (len(segments), moved), \
            (shape, region, steps, layout)


def test_a_stepped_axis_ending_at_its_edge_stays_separate_runs():
    # columns 0, 2 of 3 in 2 channels: column 2 of channel 0 and column 0 of channel 1 are adjacent in DDR, but
    # they are different rows of the strided box, so a DMA engine moves them as separate runs: 2 x 2 runs of 1
    assert transfer_runs((1, 2, 1, 3), "row-major", ((0, 1), (0, 2), (0, 1), (0, 3)), 1, 1, (1, 1, 1, 2)) == (4, 4)


@pytest.mark.parametrize("steps, message", [
    ((1, 1, 0, 1), "must give a positive int step"),
    ((1, 1, 2), "must give a positive int step"),
    ((1, 1, 2.0, 1), "must give a positive int step"),
])
def test_bad_steps_are_refused(steps, message):
    with pytest.raises(ValueError, match=message):
        transfer_runs(SHAPE, "row-major", ((0, 1), (0, 32), (0, 4), (0, 6)), 1, 1, steps)


def test_a_stepped_channel_range_in_nchw16c_is_refused():
    with pytest.raises(ValueError, match="stepped channel range"):
        transfer_runs(SHAPE, "NCHW16c", ((0, 1), (0, 32), (0, 4), (0, 6)), 1, 1, (1, 2, 1, 1))
