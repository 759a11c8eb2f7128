"""The fused model, tests that bite (issue 26, part 5): the ragged last batch tile in the vector cycles, and a
peak equal to the SRAM (the capacity rule of every model: a peak equal to the capacity fits)."""

from __future__ import annotations

import dataclasses

from dsasim import preset
from dsasim.architect.problems.chain import ConvChain
from dsasim.architect.model.fused import FusedNest, analyze_fused
from dsasim.architect.nests.loopnest import ConvProblem
from dsasim.kernels.fused_kernel import count_fused

BLOG = preset("blog")  # 32 vector lanes


def test_the_ragged_last_batch_tile_costs_its_own_vector_cycles():
    """Two 1x1 convs 4 -> 4 channels on 3 x 4 x 4 x 4 (no halo: every level has 4 x 4 pixels), a ReLU after each,
    batch tiles of 2: tiles n = 2 and n = 1 (ragged). A ReLU over a tile's box: n x 4 ch x 4 x 4 elements:
    n = 2: 128 -> ceil(128 / 32) = 4 cycles; n = 1: 64 -> 2 cycles. Two ReLU layers: 2 x (4 + 2) = 12 cycles
    (a full-size last tile would give 16, a dropped one 8)."""
    layer = ConvProblem(3, 4, 4, 4, 4, 1, padding=0)
    nest = FusedNest(ConvChain([layer, layer], relu=True), {"n": 2})
    assert analyze_fused(nest, BLOG).vector_cycles == 12
    assert count_fused(nest, BLOG).vector_cycles == 12  # the traced run agrees


def test_a_fused_nest_whose_peak_equals_the_sram_fits():
    """The nest above: weights resident, 2 layers x 4 x 4 x 1 x 1 = 32 elements; the tile scope holds one box per
    level (image, mid, output), 4 ch x 4 x 4 pixels x n 2 = 128 elements each: 32 + 3 x 128 = 416 B in 1-byte
    words. An SRAM of exactly 416 B holds it; 415 B does not."""
    layer = ConvProblem(3, 4, 4, 4, 4, 1, padding=0)
    nest = FusedNest(ConvChain([layer, layer], relu=True), {"n": 2})
    exact = analyze_fused(nest, dataclasses.replace(BLOG, sram_bytes=416))
    assert exact.peak_sram_bytes == 416 and exact.fits
    assert not analyze_fused(nest, dataclasses.replace(BLOG, sram_bytes=415)).fits
