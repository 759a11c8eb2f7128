"""DDR layouts of a tensor, and what a DMA transfer of a box of it costs in contiguous runs and bursts.

A tensor's elements are indexed in its logical order (NCHW for an image or output, OIHW for a conv weight); its
layout says how they lie in DDR:

* "row-major" (the default, any rank): the logical order itself (NCHW for a 4-d tensor).
* "NHWC" (4-d): channels last: physical order (N, H, W, C).
* "NCHW16c" (4-d; oneDNN's nChw16c): channels in blocks of 16, the block outermost after N and the 16 channels of
  a block innermost: physical (N, ceil(C/16), H, W, 16); the last block is padded to 16 when C is not a multiple.

A box (one range per logical axis) maps to contiguous runs of DDR: going from the innermost physical axis out,
a run grows over every axis the box covers whole, and takes in the first axis it covers in part; the axes outside
that multiply the number of runs. A strided box (a step per axis, e.g. every other row and column of a 1x1
stride-2 conv's input) holds only every step-th index of a stepped axis: a run never takes one in (its elements
are not adjacent), so that axis and those outside it multiply the runs, and a stepped innermost axis makes every
element its own run (even where a row's last index meets the next row's first in DDR: the box's rows are
separate descriptors). A DMA engine issues one descriptor per run and moves each in whole bursts of
`dma_burst_bytes`: `transfer_runs` gives both figures, `Accelerator.transfer_cycles` the time.
"""

from __future__ import annotations

import math
from typing import Sequence

LAYOUTS: tuple[str, ...] = ("row-major", "NHWC", "NCHW16c")
DEFAULT_LAYOUT = "row-major"
CHANNEL_BLOCK = 16  # NCHW16c's block of channels


def check_layout(name: str, shape: Sequence[int] | None, layout: object) -> str:
    """`layout` if it is valid for a tensor of `shape` (None: any rank), else ValueError naming the tensor and
    the choices."""
    if layout not in LAYOUTS:
        raise ValueError(f"tensor {name!r}: unknown layout {layout!r}; layouts are {list(LAYOUTS)}")
    if shape is not None and layout != DEFAULT_LAYOUT and len(shape) != 4:
        raise ValueError(f"tensor {name!r}: layout {layout!r} is for 4-d (N, C, H, W) tensors, and its shape is "
                         f"{tuple(shape)}; use 'row-major'")
    return layout  # type: ignore[return-value]


def _runs(extents: Sequence[int], sizes: Sequence[int], steps: Sequence[int]) -> tuple[int, int]:
    """(runs, elements per run) of a box with `extents` (elements per axis) and `steps` in an array of `sizes`
    (physical order, outermost first), every run of the same length."""
    k = len(sizes) - 1
    if steps[k] > 1 and extents[k] > 1:  # a stepped innermost axis: no two elements adjacent
        return math.prod(extents), 1
    run = extents[k]
    while k > 0 and extents[k] == sizes[k] and (steps[k - 1] == 1 or extents[k - 1] == 1):
        k -= 1
        run *= extents[k]
    return math.prod(extents[:k]), run


def transfer_runs(shape: Sequence[int], layout: str, region: Sequence[tuple[int, int]], word_bytes: int,
                  burst_bytes: int = 1, steps: Sequence[int] | None = None) -> tuple[int, int]:
    """(contiguous runs, bytes moved in whole bursts) of a DMA transfer of `region` (a box: one (start, stop) per
    logical axis) of a tensor of `shape` in `layout`; `steps` (per logical axis, default all 1) makes it the
    strided box of every step-th index from start (a stepped channel range is refused in NCHW16c). With
    burst_bytes 1 the bytes are the box's own."""
    if steps is None:  # (the timing model's every transfer: kept cheap)
        steps = [1] * len(region)
        ext = [b - a for a, b in region]
    else:
        steps = list(steps)
        if len(steps) != len(region) or not all(type(v) is int and v >= 1 for v in steps):
            raise ValueError(f"transfer_runs: steps {steps} must give a positive int step for each of the "
                             f"{len(region)} axes of the region")
        ext = [len(range(a, b, st)) if b > a else b - a for (a, b), st in zip(region, steps)]
    if min(ext, default=1) <= 0:
        return 0, 0
    pieces: list[tuple[list[int], list[int], list[int]]] = []  # (extents, sizes, steps) in physical order
    if layout == "row-major":
        pieces.append((ext, list(shape), steps))
    elif layout == "NHWC":
        n, c, h, w = shape
        pieces.append(([ext[0], ext[2], ext[3], ext[1]], [n, h, w, c], [steps[0], steps[2], steps[3], steps[1]]))
    else:  # NCHW16c: split the channel range at block boundaries; the whole blocks between form one box
        if steps[1] != 1 and ext[1] > 1:
            raise ValueError(f"transfer_runs: a stepped channel range (step {steps[1]}) is not supported in the "
                             f"NCHW16c layout; step the rows and columns only")
        n, c, h, w = shape
        blocks = -(-c // CHANNEL_BLOCK)
        (c0, c1) = region[1]
        first, last = c0 // CHANNEL_BLOCK, (c1 - 1) // CHANNEL_BLOCK
        sizes = [n, blocks, h, w, CHANNEL_BLOCK]

        def piece(lo: int, hi: int, count: int) -> None:
            pieces.append(([ext[0], count, ext[2], ext[3], hi - lo], sizes, [steps[0], 1, steps[2], steps[3], 1]))

        if first == last:
            piece(c0 - first * CHANNEL_BLOCK, c1 - first * CHANNEL_BLOCK, 1)
        else:
            head = c0 - first * CHANNEL_BLOCK
            tail = c1 - last * CHANNEL_BLOCK
            whole_first = head == 0
            whole_last = tail == CHANNEL_BLOCK
            middle = last - first - 1 + whole_first + whole_last
            if not whole_first:
                piece(head, CHANNEL_BLOCK, 1)
            if middle:
                piece(0, CHANNEL_BLOCK, middle)
            if not whole_last:
                piece(0, tail, 1)
    if len(pieces) > 1 and ext[2] == shape[2] and ext[3] == shape[3]:
        # whole image planes: the last pixel of one block's channels runs on into the next block's first pixel,
        # so each piece's last run joins the next piece's first (never across images: a partial block is there)
        plane = shape[2] * shape[3]
        per_image = _joined([(1, extents[1] * CHANNEL_BLOCK * plane) if extents[4] == CHANNEL_BLOCK
                             else (plane, extents[4]) for extents, _, _ in pieces])
        runs = ext[0] * sum(m for m, _ in per_image)
        moved = ext[0] * sum(m * (-(-length * word_bytes // burst_bytes) * burst_bytes) for m, length in per_image)
        return runs, moved
    runs = moved = 0
    for extents, sizes, axis_steps in pieces:
        count, length = _runs(extents, sizes, axis_steps)
        runs += count
        moved += count * (-(-length * word_bytes // burst_bytes) * burst_bytes)
    return runs, moved


def _joined(groups: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Runs as (how many, elements each) after joining the last run of each group to the first of the next."""
    out: list[tuple[int, int]] = []
    open_run = 0
    for k, (mult, length) in enumerate(groups):
        if k == 0:
            if mult > 1:
                out.append((mult - 1, length))
            open_run = length
        elif mult == 1:
            open_run += length
        else:
            out.append((1, open_run + length))
            if mult > 2:
                out.append((mult - 2, length))
            open_run = length
    out.append((1, open_run))
    return out
