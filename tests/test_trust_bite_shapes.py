"""Dynamic shapes, tests that bite (issue 26, part 5): the rounding of a template's TensorCore channel tiles, the
first shape of a dispatch range checked against the loss bound, and a template whose peak equals the SRAM.
Expected values are derived by hand in the comments."""

from __future__ import annotations

import dataclasses
import math

from dsasim import preset
from dsasim.architect.nests.loopnest import LoopNest, MatmulProblem
from dsasim.architect.studies.shapes import DispatchEntry, ShapePoint, _cost, _cover, _template

BLOG = preset("blog")  # TensorCore blocks: 16 input channels (k of a matmul) x 24 output channels (n)


def _nest(problem: MatmulProblem, tiles: dict[str, int]) -> dict:
    return LoopNest(problem, ("m", "n", "k"), tiles, {"a": 0, "b": 0, "c": 0}).to_json()


def test_generic_channel_tiles_round_up_to_whole_blocks():
    problem = MatmulProblem(4, 60, 40)
    # k tile 20 -> ceil(20 / 16) = 2 blocks = 32; n tile 30 -> ceil(30 / 24) = 2 blocks = 48; m is no TC dim
    template = _template(_nest(problem, {"m": 3, "n": 30, "k": 20}), problem, BLOG)
    assert template["tiles"] == {"m": 3, "n": 48, "k": 32}
    # whole blocks stay as they are; a tile under one block becomes one block (k 5 -> 16, n 1 -> 24)
    assert _template(_nest(problem, {"n": 48, "k": 16}), problem, BLOG)["tiles"] == {"m": 4, "n": 48, "k": 16}
    assert _template(_nest(problem, {"n": 1, "k": 5}), problem, BLOG)["tiles"] == {"m": 4, "n": 24, "k": 16}


def _point(value: int, cycles: float) -> ShapePoint:
    return ShapePoint(value=value, problem=None, nest=None, cycles=cycles, traffic_bytes=0,
                      tensorcore_utilization=None)


def test_the_first_shape_of_a_dispatch_range_is_held_to_the_loss_bound():
    # three shapes, best 100 cycles each. Template 0 costs 200 on the first (100 % loss) and 100 on the others;
    # template 1 costs 100 on the first only. Within 5 %: shape 0 only by template 1, shapes 1-2 only by template 0,
    # so the fewest ranges are [1..1] -> 1 and [2..3] -> 0, each with loss 0.
    points = [_point(1, 100), _point(2, 100), _point(3, 100)]
    cost = [(200.0, 100.0, 100.0), (100.0, 300.0, 300.0)]
    assert _cover(points, cost, 0.05) == [DispatchEntry(1, 1, 1, 0.0), DispatchEntry(2, 3, 0, 0.0)]


def test_a_template_whose_peak_equals_the_sram_fits():
    # gemm m=4, n=24, k=16 as one tile of each tensor: a 4x16 + b 16x24 + c 4x24 = 64 + 384 + 96 = 544 elements,
    # 1,088 B in 2-byte words. The analytic model's peak must be exactly that, and an SRAM of exactly 1,088 B holds
    # it (a peak equal to the capacity fits); 1,087 B does not.
    problem = MatmulProblem(4, 24, 16)
    template = _template(_nest(problem, {}), problem, BLOG)
    exact = dataclasses.replace(BLOG, word_bytes=2, sram_bytes=1088)
    assert math.isfinite(_cost(template, problem, exact))
    assert _cost(template, problem, dataclasses.replace(exact, sram_bytes=1087)) == math.inf
