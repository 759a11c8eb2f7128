"""The one conv description (`Conv2dShape`) and the window helpers along one axis, checked against hand-derived
values; the description's messages under each class that describes a conv with it."""

from __future__ import annotations

import re

import pytest

from dsasim.architect.nests.loopnest import ConvProblem
from dsasim.geometry import Conv2dShape, Window, conv_output_size, tap_outputs, window
from dsasim.traced.bounds import Conv2dBoundsInfer


def test_window_and_padding_along_one_axis():
    """Hand-derived: 5 rows, 3 taps, stride 1, padding 1 (output row o reads rows o - 1 .. o + 1)."""
    assert window(0, 2, 0, 3, 1, 1, 1, 5) == Window(0, 3, -1, 3) and window(0, 2, 0, 3, 1, 1, 1, 5).pad == (1, 0)
    assert window(4, 5, 0, 3, 1, 1, 1, 5) == Window(3, 5, 3, 6) and window(4, 5, 0, 3, 1, 1, 1, 5).pad == (0, 1)
    assert window(1, 3, 0, 3, 1, 1, 1, 5).pad == (0, 0)  # rows 0..3, all real
    # 2 rows, padding 3, one tap: output row 0 reads row -3, all padding: empty at 0, one zero row before
    empty = window(0, 1, 0, 1, 1, 1, 3, 2)
    assert empty.empty and empty == Window(0, 0, -3, -2) and empty.pad == (1, 0)
    # stride 2, tap offset -1: outputs o with 2o - 1 in [0, 5) are 1 and 2
    assert tap_outputs(0, 4, -1, 2, 5) == (1, 2)
    assert conv_output_size(5, 3, 2, 1, 1, "height") == 3  # (5 + 2 - 3) // 2 + 1
    with pytest.raises(ValueError, match="padded input height .* smaller than the dilated kernel extent"):
        conv_output_size(1, 5, 1, 0, 1, "height")


# a 3x1 kernel, stride (2, 1), padding (1, 0) over a 2 x 3 x 9 x 7 input: every per-axis value differs by axis
SHAPE = dict(in_channels=3, out_channels=8, kernel_size=(3, 1), stride=(2, 1), padding=(1, 0),
             input_shape=(2, 3, 9, 7))


def test_the_description_normalises_and_derives_shapes():
    s = Conv2dShape(**SHAPE)
    assert (s.kernel_size, s.stride, s.padding, s.dilation, s.groups) == ((3, 1), (2, 1), (1, 0), (1, 1), 1)
    # OH = (9 + 2*1 - 3) // 2 + 1 = 5; OW = (7 + 0 - 1) // 1 + 1 = 7
    assert s.output_shape == (2, 8, 5, 7) and s.weight_shape == (8, 3, 3, 1)
    assert Conv2dShape(4, 6, 3, groups=2, input_shape=(1, 4, 5, 5)).in_channels_per_group == 2


def test_the_description_windows_each_axis_with_its_own_geometry():
    s = Conv2dShape(**SHAPE)
    # rows: output o, tap t read row 2o + t - 1. Outputs 0..1: rows -1..3, row -1 is padding
    assert s.window(0, 0, 2) == Window(0, 4, -1, 4) and s.window(0, 0, 2).pad == (1, 0)
    # output 4 reads rows 7, 8, 9 of 9 rows: row 9 is padding
    assert s.window(0, 4, 5) == Window(7, 9, 7, 10) and s.window(0, 4, 5).pad == (0, 1)
    # only tap 2: outputs 0..1 read rows 1 and 3 (the tight range runs from the first to the last)
    assert s.window(0, 0, 2, 2, 3) == Window(1, 4, 1, 4)
    # columns: a 1-wide kernel, stride 1, no padding: outputs 2..4 read columns 2..4
    assert s.window(1, 2, 5) == Window(2, 5, 2, 5) and s.window(1, 2, 5).pad == (0, 0)


def test_both_faces_hold_the_one_description():
    p = ConvProblem(2, 3, 8, 9, 7, 3, 1, stride=(2, 1), padding=(1, 0), name="p")
    assert p.geometry == Conv2dShape(**SHAPE)  # the owner label is not part of the value
    assert (p.oh, p.ow, p.stride, p.padding, p.dilation) == (5, 7, (2, 1), (1, 0), (1, 1))
    c = Conv2dBoundsInfer(**SHAPE)
    assert isinstance(c, Conv2dShape) and c.output_shape == (2, 8, 5, 7) and "owner" not in repr(c)


def _message(make) -> str:
    with pytest.raises(ValueError) as info:
        make()
    return str(info.value)


@pytest.mark.parametrize("make, owner", [
    (lambda **k: Conv2dShape(**k), "Conv2dShape"),
    (lambda **k: Conv2dBoundsInfer(**k), "Conv2dBoundsInfer"),
    (lambda **k: ConvProblem(k["input_shape"][0], k["in_channels"], k["out_channels"], *k["input_shape"][2:],
                             *k["kernel_size"], k.get("stride", 1), k.get("padding", 0), name="x",
                             groups=k.get("groups", 1)), "ConvProblem 'x'"),
])
def test_one_validator_under_each_owner(make, owner):
    base = dict(in_channels=4, out_channels=6, kernel_size=(3, 3), input_shape=(1, 4, 8, 8))
    assert _message(lambda: make(**base, groups=3)) == (
        f"{owner}: in_channels (4) and out_channels (6) must both be divisible by groups (3); choose groups among "
        f"their common divisors")
    assert _message(lambda: make(**dict(base, in_channels=6, out_channels=4, input_shape=(1, 6, 8, 8)),
                                 groups=3)).startswith(f"{owner}: in_channels (6) and out_channels (4) must both")
    assert _message(lambda: make(**base, stride=(1, 0))) == (
        f"{owner}: stride must be positive in both dimensions, got (1, 0); pass values positive")
    assert _message(lambda: make(**base, padding=-1)) == (
        f"{owner}: padding must be >= 0 in both dimensions, got -1; pass values >= 0")
    assert _message(lambda: make(**base, stride="2")) == (
        f"{owner}: stride must be an int or an (h, w) pair of ints, got '2'; pass e.g. stride=3 or stride=(3, 3)")
    # a 1x5 kernel over 2 columns padded by 1 on each side: 4 padded columns < 5
    narrow = dict(base, kernel_size=(1, 5), input_shape=(1, 4, 8, 2))
    assert re.fullmatch(re.escape(f"{owner}: the padded input width (4 = 2 + 2*1) is smaller than the dilated "
                                  f"kernel extent (5)") + ", so the output would be empty; .*",
                        _message(lambda: make(**narrow, padding=(0, 1))))
