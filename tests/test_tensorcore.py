"""The TensorCore and vector unit cost model, derived by hand, and their numerics against torch."""

import dataclasses

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dsasim import GlobalHierarchy, Session, TensorCore, VectorUnit, preset


def _session():
    return Session(dataclasses.replace(preset("blog"), sram_bytes=1 << 20, word_bytes=1))


@pytest.mark.parametrize("ic, oc, groups, hw, k", [
    (16, 24, 1, 4, 1),    # exactly one block: 1*1 steps per pixel
    (17, 25, 1, 3, 1),    # partial blocks: ceil(17/16)=2, ceil(25/24)=2
    (40, 50, 1, 5, 3),    # 3x3 kernel
    (8, 8, 8, 4, 3),      # depthwise: per group ceil(1/16)*ceil(1/24)=1, times 8 groups
    (32, 48, 2, 4, 1),    # two groups of 16 in x 24 out: one step each
])
def test_conv2d_cycles_macs_and_padding_waste(ic, oc, groups, hw, k):
    s = _session()
    rng = np.random.default_rng(1)
    x_data = rng.standard_normal((1, ic, hw, hw), dtype=np.float32)
    w_data = rng.standard_normal((oc, ic // groups, k, k), dtype=np.float32)
    x = s.input("x", x_data)
    w = s.input("w", w_data)
    y = s.output("y", (1, oc, hw - k + 1, hw - k + 1))
    tc = TensorCore(s)
    with GlobalHierarchy(s, "all"):
        out = y[:, :, :, :]
        out += tc.conv2d(x[:, :, :, :], w[:, :, :, :], groups=groups)
    s.finish()
    o = hw - k + 1
    icg, ocg = ic // groups, oc // groups
    steps = groups * (-(-icg // 16)) * (-(-ocg // 24))
    assert s.counters.tensorcore_cycles == steps * o * o * k * k
    assert s.counters.macs == oc * icg * o * o * k * k
    assert s.counters.padded_macs == s.counters.tensorcore_cycles * 16 * 24
    expected = F.conv2d(torch.from_numpy(x_data).double(), torch.from_numpy(w_data).double(), groups=groups)
    np.testing.assert_allclose(y.data, expected.numpy(), atol=1e-4)


def test_conv2d_on_grouped_5d_tiles_is_the_same_conv():
    """A grouped ConvProblem's tiles carry the group on their own axis: image (N, G, C/G, H, W), weight
    (G, OC/G, C/G, KH, KW), output (N, G, OC/G, OH, OW). Depthwise, 12 channels, 3x3, 5x5 image, padding 1: per
    group one pass of ceil(1/16) x ceil(1/24) = 1 step per output pixel per tap, so 12 x 25 x 9 = 2,700 cycles
    for 12 x 25 x 9 = 2,700 MACs, padded 2,700 x 384: 1 of the 16 x 24 lanes used."""
    s = _session()
    rng = np.random.default_rng(3)
    x_data = rng.standard_normal((1, 12, 1, 5, 5), dtype=np.float32)
    w_data = rng.standard_normal((12, 1, 1, 3, 3), dtype=np.float32)
    x, w = s.input("x", x_data), s.input("w", w_data)
    y = s.output("y", (1, 12, 1, 5, 5))
    tc = TensorCore(s)
    with GlobalHierarchy(s, "all"):
        out = y[:, :, :, :, :]
        out += tc.conv2d(x[:, :, :, :, :], w[:, :, :, :, :], padding=(1, 1, 1, 1))
        with pytest.raises(ValueError, match="carry their groups on axis 1 and axis 0"):
            tc.conv2d(x[:, 0:6], w[:, :], padding=(1, 1, 1, 1))  # 6 groups of image, 12 of weight
        with pytest.raises(ValueError, match="groups= stay 1"):
            tc.conv2d(x[:, :], w[:, :], groups=12)
    s.finish()
    assert (s.counters.tensorcore_cycles, s.counters.macs, s.counters.padded_macs) == (2_700, 2_700, 2_700 * 384)
    expected = F.conv2d(torch.from_numpy(x_data).double().reshape(1, 12, 5, 5),
                        torch.from_numpy(w_data).double().reshape(12, 1, 3, 3), padding=1, groups=12)
    np.testing.assert_allclose(y.data, expected.numpy().reshape(1, 12, 1, 5, 5), atol=1e-5)


def test_conv2d_on_chip_padding_stride_dilation():
    s = _session()
    rng = np.random.default_rng(2)
    x_data = rng.standard_normal((1, 3, 9, 9), dtype=np.float32)
    w_data = rng.standard_normal((5, 3, 3, 3), dtype=np.float32)
    x, w = s.input("x", x_data), s.input("w", w_data)
    expected = F.conv2d(torch.from_numpy(x_data), torch.from_numpy(w_data), stride=2, padding=1, dilation=2)
    y = s.output("y", tuple(expected.shape))
    with GlobalHierarchy(s, "all"):
        out = y[:, :, :, :]
        out += TensorCore(s).conv2d(x[:, :, :, :], w[:, :, :, :], stride=2, dilation=2, padding=(1, 1, 1, 1))
    s.finish()
    np.testing.assert_allclose(y.data, expected.numpy(), atol=1e-5)
    oh = (9 + 2 - 2 * 2 - 1) // 2 + 1  # = 4
    assert s.counters.tensorcore_cycles == 1 * 1 * oh * oh * 9


def test_matmul_cycles_and_values():
    s = _session()
    rng = np.random.default_rng(3)
    a_data = rng.standard_normal((5, 40), dtype=np.float32)
    b_data = rng.standard_normal((40, 30), dtype=np.float32)
    a, b = s.input("a", a_data), s.input("b", b_data)
    c = s.output("c", (5, 30))
    with GlobalHierarchy(s, "all"):
        out = c[:, :]
        out += TensorCore(s).matmul(a[:, :], b[:, :])
    s.finish()
    assert s.counters.tensorcore_cycles == 3 * 2 * 5   # ceil(40/16) * ceil(30/24) * M
    assert s.counters.macs == 5 * 30 * 40
    np.testing.assert_allclose(c.data, a_data.astype(np.float64) @ b_data, atol=1e-4)


def test_vector_ops_cycles_and_values():
    s = _session()
    a_data = np.arange(70, dtype=np.float32).reshape(7, 10) - 30
    b_data = np.full((7, 10), 2.0, np.float32)
    a, b = s.input("a", a_data), s.input("b", b_data)
    r = s.output("r", (7, 10))
    d = s.output("d", (1,))
    vec = VectorUnit(s)
    with GlobalHierarchy(s, "all"):
        out = r[:, :]
        out.assign(vec.add(a[:, :], b[:, :]))
        out.assign(vec.relu(out))
        out += vec.mul(a[:, :], b[:, :])
        acc = d[:]
        acc += vec.dot(a[:, :], b[:, :])
    s.finish()
    assert s.counters.vector_cycles == 4 * 3        # ceil(70 / 32) = 3 cycles, four ops
    np.testing.assert_array_equal(r.data, np.maximum(a_data + 2, 0) + 2 * a_data)
    assert d.data[0] == pytest.approx(float((a_data * 2).sum()))


def test_shape_mismatch_is_a_clear_error():
    s = _session()
    x = s.input("x", np.ones((1, 16, 4, 4), np.float32))
    w = s.input("w", np.ones((24, 16, 1, 1), np.float32))
    y = s.output("y", (1, 24, 4, 4))
    with GlobalHierarchy(s, "all"):
        with pytest.raises(ValueError, match=r"produces shape \(1, 24, 4, 4\) but the output tile y"):
            out = y[:, :, 0:2, :]
            out += TensorCore(s).conv2d(x[:, :, :, :], w[:, :, :, :])
        with pytest.raises(ValueError, match="needs 32 input channels"):
            TensorCore(s).conv2d(x[:, :, :, :], w[:, :, :, :], groups=2)


def test_negative_padding_crops_the_tile_on_chip():
    # loop-nest kernels load a whole tile and crop rows the output tile does not need: padding (-1, 0, 1, -2)
    s = _session()
    rng = np.random.default_rng(3)
    x_data = rng.standard_normal((1, 2, 6, 6), dtype=np.float32)
    w_data = rng.standard_normal((3, 2, 2, 2), dtype=np.float32)
    x, w = s.input("x", x_data), s.input("w", w_data)
    # rows 1..5 (top row cropped), columns: one zero column on the left, the last two cropped -> 5 x 5 input
    cropped = np.pad(x_data[:, :, 1:, :4], ((0, 0), (0, 0), (0, 0), (1, 0)))
    expected = F.conv2d(torch.from_numpy(cropped), torch.from_numpy(w_data))       # 2x2 kernel: 4 x 4 output
    y = s.output("y", (1, 3, 4, 4))
    with GlobalHierarchy(s, "all"):
        out = y[:, :, :, :]
        out += TensorCore(s).conv2d(x[:, :, :, :], w[:, :, :, :], padding=(-1, 0, 1, -2))
    s.finish()
    np.testing.assert_allclose(y.data, expected.numpy(), atol=1e-5)
    # one 16 x 24 block step per output pixel and tap: 4 * 4 pixels * 2 * 2 taps
    assert s.counters.tensorcore_cycles == 4 * 4 * 4
    assert s.counters.macs == 3 * 2 * 4 * 4 * 2 * 2


def test_units_refuse_tiles_of_another_session():
    from dsasim.errors import CrossSessionError
    s1, s2 = _session(), _session()
    a1 = s1.input("a", np.ones((2, 3), np.float32))
    b2 = s2.input("b", np.ones((3, 2), np.float32))
    with GlobalHierarchy(s1, "one"), GlobalHierarchy(s2, "two"):
        with pytest.raises(CrossSessionError, match=r"matmul: operand 0 Tile\(a\[0:2, 0:3\]"):
            TensorCore(s2).matmul(a1[:, :], b2[:, :])
        with pytest.raises(CrossSessionError, match="operand 1"):
            TensorCore(s1).matmul(a1[:, :], b2[:, :])
    assert s1.counters.tensorcore_cycles == s2.counters.tensorcore_cycles == 0


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled core", "python reference"])
def test_vector_im2col_is_torch_unfold_transposed(compiled):
    """A (2, 5, 9, 8) tile, 3x3 kernel, stride 2, dilation 2, padding (top 1, bottom 2, left 3, right 0):
    OH = (9 + 3 - 5) // 2 + 1 = 4, OW = (8 + 3 - 5) // 2 + 1 = 4, so 2 x 16 = 32 patch rows of 5 x 9 = 45 columns:
    1,440 elements, ceil(1,440 / 32) = 45 vector cycles, no MACs. Both paths of `Product.apply`."""
    from dsasim.traced import tensorcore
    tensorcore._bind_core(compiled)
    try:
        s = _session()
        x_data = np.random.default_rng(4).standard_normal((2, 5, 9, 8), dtype=np.float32)
        x = s.input("x", x_data)
        p = s.output("p", (32, 45))
        with GlobalHierarchy(s, "all"):
            out = p[:, :]
            out.assign(VectorUnit(s).im2col(x[:, :, :, :], 3, stride=2, dilation=2, padding=(1, 2, 3, 0)))
        s.finish()
    finally:
        tensorcore._bind_core(True)
    assert (s.counters.vector_cycles, s.counters.macs, s.counters.tensorcore_cycles) == (45, 0, 0)
    unfolded = F.unfold(F.pad(torch.from_numpy(x_data), (3, 0, 1, 2)), 3, dilation=2, stride=2)  # (N, C*9, L)
    np.testing.assert_array_equal(p.data, unfolded.transpose(1, 2).reshape(32, 45).numpy())


def test_vector_im2col_then_matmul_is_the_conv_and_crops_like_conv2d():
    """The patch matrix times the weight reshaped to (C*KH*KW, OC) is the conv, laid out (pixels, OC); a negative
    padding crops the tile on chip, as in `TensorCore.conv2d`."""
    s = _session()
    rng = np.random.default_rng(5)
    x_data = rng.standard_normal((1, 3, 7, 6), dtype=np.float32)
    w_data = rng.standard_normal((4, 3, 2, 3), dtype=np.float32)
    x, w = s.input("x", x_data), s.input("w", w_data.reshape(4, 18).T.copy())
    # rows 1..6 (top row cropped), one zero column on the left: a 6 x 7 input, 2x3 kernel -> 5 x 5 output
    patches = s.on_chip("patches", (25, 18))
    y = s.output("y", (25, 4))
    vec, tc = VectorUnit(s), TensorCore(s)
    with GlobalHierarchy(s, "all"):
        pt = patches[:, :]
        pt.assign(vec.im2col(x[:, :, :, :], (2, 3), padding=(-1, 0, 1, 0)))
        out = y[:, :]
        out += tc.matmul(pt, w[:, :])
        with pytest.raises(ValueError, match=r"vector.im2col needs a 4-d input tile"):
            vec.im2col(w[:, :], 1)
        with pytest.raises(ValueError, match=r"smaller than the 3x3 kernel"):
            vec.im2col(x[:, :, 0:2, :], 3)
        with pytest.raises(ValueError, match=r"padding must be 4 integers"):
            vec.im2col(x[:, :, :, :], 3, padding=1)
    s.finish()
    cropped = np.pad(x_data[:, :, 1:, :], ((0, 0), (0, 0), (0, 0), (1, 0)))
    expected = F.conv2d(torch.from_numpy(cropped).double(), torch.from_numpy(w_data).double())  # (1, 4, 5, 5)
    np.testing.assert_allclose(y.data, expected.permute(0, 2, 3, 1).reshape(25, 4).numpy(), atol=1e-5)
    # ceil(18/16) x ceil(4/24) x 25 TensorCore cycles; ceil(25 x 18 / 32) = 15 vector cycles
    assert (s.counters.tensorcore_cycles, s.counters.vector_cycles) == (2 * 1 * 25, 15)
