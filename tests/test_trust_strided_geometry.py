"""Trust, round two (strided): the rows a strided window reads, as a stepped range (`geometry.stepped_rows`).

A 1x1 stride-2 conv reads every other input row and column; the dense box from its first to its last row also
holds the rows it skips. These cases pin the stepped range by hand and by brute force, and ResNet-50
res3a_branch1's compulsory input, which the lower bound already counts as the touched elements only.
"""

from __future__ import annotations

import itertools
import random

from dsasim.architect.problems.layers import parse_layer
from dsasim.architect.model.lower_bounds import compulsory_bytes, touched_elements
from dsasim.geometry import stepped_rows, window_rows, window_step


def _read_rows(o0, o1, t0, t1, stride, dilation, padding, size):
    """Brute force: every real row o*stride + t*dilation - padding that the window reads."""
    return {o * stride + t * dilation - padding for o in range(o0, o1) for t in range(t0, t1)} & set(range(size))


def test_res3a_branch1_rows_are_every_other_row():
    # 1x1, stride 2, no padding, 56 rows -> 28 outputs reading rows 0, 2, ..., 54: 28 rows, where the dense
    # window [0, 55) holds 55
    rows = stepped_rows(0, 28, 0, 1, 2, 1, 0, 56)
    assert rows == range(0, 55, 2) and len(rows) == 28
    assert window_rows(0, 28, 0, 1, 2, 1, 0, 56) == (0, 55)
    # a tile of 5 outputs [10, 15): rows 20, 22, ..., 28 (5 rows), dense 9
    assert list(stepped_rows(10, 15, 0, 1, 2, 1, 0, 56)) == [20, 22, 24, 26, 28]


def test_res3a_branch1_compulsory_input_is_the_touched_quarter():
    problem = parse_layer("resnet50.res3a_branch1")
    touched = touched_elements(problem)
    # by hand: image 256 channels x 28 rows x 28 columns (every other of 56) = 200,704; weights 512 x 256 =
    # 131,072; output 512 x 28 x 28 = 401,408; one byte a word on blog: 733,184 B. The dense box would hold
    # 256 x 55 x 55 = 774,400 image elements.
    assert touched == {"image": 200_704, "weight": 131_072, "output": 401_408}
    assert compulsory_bytes(problem, 1) == 733_184


def test_step_is_the_gcd_of_the_moving_ranges():
    assert window_step(1, 1, 2, 1) == 1  # one row
    assert window_step(5, 1, 2, 1) == 2  # 1x1 stride 2 (or one tap of a tiled kernel)
    assert window_step(1, 3, 2, 2) == 2  # one output, 3 taps of dilation 2
    assert window_step(4, 3, 2, 1) == 1  # 3x3 stride 2: the taps fill the gaps
    assert window_step(4, 3, 2, 2) == 2  # 3x3 dilation 2 stride 2: rows 0, 2, 4, ...
    assert window_step(2, 2, 6, 2) == 2
    # 2 outputs at stride 6 with 2 taps of dilation 2 read rows 0, 2, 6, 8: the stepped range also holds row 4
    assert list(stepped_rows(0, 2, 0, 2, 6, 2, 0, 100)) == [0, 2, 4, 6, 8]
    assert stepped_rows(0, 1, 0, 1, 2, 1, 3, 10) == range(0, 0)  # all padding: empty


def test_stepped_rows_hold_every_row_read_and_only_those_for_a_progression():
    rng = random.Random(26)
    for _ in range(3000):
        size, stride, dilation, padding = rng.randint(1, 30), rng.randint(1, 4), rng.randint(1, 3), rng.randint(0, 4)
        o0 = rng.randint(0, 12)
        o1, t0 = o0 + rng.randint(1, 6), rng.randint(0, 3)
        t1 = t0 + rng.randint(1, 4)
        case = (o0, o1, t0, t1, stride, dilation, padding, size)
        read = _read_rows(*case)
        rows = stepped_rows(*case)
        assert read <= set(rows), case
        if not read:
            assert len(rows) == 0, case
            continue
        assert rows[0] == min(read) and rows[-1] == max(read), case
        # one arithmetic progression (exact) when one range is a single row, or when one spacing divides the
        # other and the finer range spans the coarser one's gap (i*s + j*d = s*(i + j*d/s) for s | d)
        o_len, t_len = o1 - o0, t1 - t0
        progression = (o_len == 1 or t_len == 1 or dilation % stride == 0 and o_len * stride >= dilation
                       or stride % dilation == 0 and t_len * dilation >= stride)
        if progression:  # (an interval of a progression is one: clipping at the border keeps it exact)
            assert set(rows) == read, case
    for stride, dilation in itertools.product((1, 2, 3), repeat=2):  # a full 1-tap window: exactly the read rows
        assert set(stepped_rows(0, 9, 0, 1, stride, dilation, 0, 40)) == _read_rows(0, 9, 0, 1, stride, dilation, 0, 40)
