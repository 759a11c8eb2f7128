"""The fused model, a test that bites (issue 26, part 5): the ragged last batch tile in the vector cycles."""

from __future__ import annotations

from dsasim import preset
from dsasim.architect.chain import ConvChain
from dsasim.architect.fused import FusedNest, analyze_fused
from dsasim.architect.loopnest import ConvProblem
from kernels.fused_kernel import count_fused

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
