"""Conv2dBoundsInfer checked against torch by brute force: autograd dependency sets and exact tile recomputation."""

from __future__ import annotations

import dataclasses
import random

import pytest
import torch
import torch.nn.functional as F

from dsasim.traced.bounds import Conv2dBoundsInfer
from dsasim.traced.segments import Segment, Segments

N_CONFIGS = 200


def random_config(rng: random.Random, padding: int | None = None) -> Conv2dBoundsInfer:
    """A random small conv (H, W in 1..12, kernel 1..4, stride/dilation 1..3, padding 0..3) with a non-empty output."""
    while True:
        kind = rng.choice(["dense", "depthwise", "grouped"])
        if kind == "dense":
            groups, icpg, ocpg = 1, rng.randint(1, 4), rng.randint(1, 4)
        elif kind == "depthwise":
            groups, icpg, ocpg = rng.randint(2, 5), 1, rng.choice([1, 1, 2])
        else:
            groups, icpg, ocpg = rng.randint(2, 4), rng.randint(1, 3), rng.randint(1, 3)
        kernel = (rng.randint(1, 4), rng.randint(1, 4))
        stride = (rng.randint(1, 3), rng.randint(1, 3))
        dilation = (rng.randint(1, 3), rng.randint(1, 3))
        pad = (rng.randint(0, 3), rng.randint(0, 3)) if padding is None else (padding, padding)
        h, w = rng.randint(1, 12), rng.randint(1, 12)
        if any(size + 2 * p < d * (k - 1) + 1 for size, p, d, k in zip((h, w), pad, dilation, kernel)):
            continue
        # exercise both the int and the pair spelling
        as_arg = (lambda v: v[0] if v[0] == v[1] and rng.random() < 0.5 else v)
        return Conv2dBoundsInfer(groups * icpg, groups * ocpg, as_arg(kernel), as_arg(stride), as_arg(pad),
                                 as_arg(dilation), groups, input_shape=(rng.randint(1, 2), groups * icpg, h, w))


def random_range(rng: random.Random, size: int) -> Segment:
    start = rng.randrange(size)
    return Segment(start, rng.randint(start + 1, size))


def random_tile(rng: random.Random, conv: Conv2dBoundsInfer) -> tuple[Segment, ...]:
    return tuple(random_range(rng, size) for size in conv.output_shape)


def conv(c: Conv2dBoundsInfer, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return F.conv2d(x, w, stride=c.stride, padding=c.padding, dilation=c.dilation, groups=c.groups)


def index(tile: tuple[Segment, ...]) -> tuple[slice, ...]:
    return tuple(s.as_slice() for s in tile)


def bbox(mask: torch.Tensor, dim: int) -> Segment | None:
    """Bounding box of the True entries of `mask` along `dim` (None when there are none)."""
    other = tuple(d for d in range(mask.dim()) if d != dim)
    hits = torch.nonzero(mask.any(dim=other) if other else mask).flatten()
    return None if hits.numel() == 0 else Segment(int(hits.min()), int(hits.max()) + 1)


def input_dependencies(c: Conv2dBoundsInfer, tile: tuple[Segment, ...]) -> torch.Tensor:
    """Boolean mask of the input elements the output tile depends on: autograd with all-ones data (no cancellation)."""
    x = torch.ones(c.input_shape, dtype=torch.float64, requires_grad=True)
    w = torch.ones(c.weight_shape, dtype=torch.float64)
    conv(c, x, w)[index(tile)].sum().backward()
    return x.grad != 0


# ------------------------------------------------------------------------------------------------ brute force


@pytest.mark.parametrize("seed", range(N_CONFIGS))
def test_input_region_is_bounding_box_of_dependencies(seed: int) -> None:
    rng = random.Random(seed)
    c = random_config(rng)
    x = torch.zeros(c.input_shape, dtype=torch.float64)
    w = torch.zeros(c.weight_shape, dtype=torch.float64)
    assert conv(c, x, w).shape == c.output_shape
    for _ in range(3):
        tile = random_tile(rng, c)
        region = c.input_region(tile)
        assert all(type(s) is Segment for s in region)
        dep = input_dependencies(c, tile)
        for dim in range(4):
            assert 0 <= region[dim].start <= region[dim].stop <= c.input_shape[dim]
        if not dep.any():
            # the tile reads only zero padding: some spatial dimension must come back empty
            assert region[2].size == 0 or region[3].size == 0
            continue
        for dim in range(4):
            assert bbox(dep, dim) == region[dim], (dim, tile, c)
        # dependencies are dense along batch and channels: every n and c of the region is read
        assert bool(dep.any(dim=(1, 2, 3))[region[0].as_slice()].all())
        assert bool(dep.any(dim=(0, 2, 3))[region[1].as_slice()].all())
        # and nothing outside the region is read
        outside = dep.clone()
        outside[index(region)] = False
        assert not outside.any()


@pytest.mark.parametrize("seed", range(N_CONFIGS))
def test_tile_recomputed_from_region_and_padding(seed: int) -> None:
    rng = random.Random(1000 + seed)
    c = random_config(rng)
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand(c.input_shape, dtype=torch.float64, generator=gen) + 0.5
    w = torch.rand(c.weight_shape, dtype=torch.float64, generator=gen) + 0.5
    full = conv(c, x, w)
    icpg, ocpg = c.in_channels_per_group, c.out_channels_per_group
    for _ in range(3):
        tile = random_tile(rng, c)
        n, ch, rows, cols = c.input_region(tile)
        top, bottom, left, right = c.padding_for(tile)
        assert min(top, bottom, left, right) >= 0
        assert top + rows.size + bottom == (tile[2].size - 1) * c.stride[0] + (c.kernel_size[0] - 1) * c.dilation[0] + 1
        assert left + cols.size + right == (tile[3].size - 1) * c.stride[1] + (c.kernel_size[1] - 1) * c.dilation[1] + 1
        x_tile = F.pad(x[n.as_slice(), ch.as_slice(), rows.as_slice(), cols.as_slice()], (left, right, top, bottom))
        # the channel region spans whole groups g0..g1: convolve those groups, keep the tile's output channels
        g0, g1 = ch.start // icpg, ch.stop // icpg
        w_oc, w_ic, w_kh, w_kw = c.weight_region(Segment(g0 * ocpg, g1 * ocpg), ch)
        assert (w_ic, w_kh, w_kw) == ((0, icpg), (0, c.kernel_size[0]), (0, c.kernel_size[1]))
        w_tile = w[w_oc.as_slice(), w_ic.as_slice(), w_kh.as_slice(), w_kw.as_slice()]
        out = F.conv2d(x_tile, w_tile, stride=c.stride, padding=0, dilation=c.dilation, groups=g1 - g0)
        out = out[:, tile[1].start - g0 * ocpg:tile[1].stop - g0 * ocpg]
        expected = full[index(tile)]
        assert out.shape == expected.shape
        torch.testing.assert_close(out, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", range(50))
def test_input_channel_tiling_partial_sums(seed: int) -> None:
    """Tiling over input channels with input_region_for_channels + weight_region sums to the exact output tile."""
    rng = random.Random(2000 + seed)
    c = random_config(rng)
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand(c.input_shape, dtype=torch.float64, generator=gen) + 0.5
    w = torch.rand(c.weight_shape, dtype=torch.float64, generator=gen) + 0.5
    full = conv(c, x, w)
    ocpg = c.out_channels_per_group
    n, oc, oh, ow = random_tile(rng, c)
    g = rng.randrange(c.groups)  # keep the oc tile inside one group so each partial sum is a plain conv
    oc = random_range(rng, ocpg)
    oc = Segment(g * ocpg + oc.start, g * ocpg + oc.stop)
    tile = (n, oc, oh, ow)
    top, bottom, left, right = c.padding_for(tile)
    acc = torch.zeros(full[index(tile)].shape, dtype=torch.float64)
    group_channels = c.input_region(tile)[1]
    seen = 0
    for ic in Segments(0, c.in_channels, rng.randint(1, c.in_channels)):
        r_n, r_c, r_h, r_w = c.input_region_for_channels(tile, ic)
        w_oc, w_ic, w_kh, w_kw = c.weight_region(oc, ic)
        expected_c = (max(ic.start, group_channels.start), min(ic.stop, group_channels.stop))
        if expected_c[0] >= expected_c[1]:
            assert r_c.size == 0 and w_ic.size == 0
            continue
        assert r_c == expected_c
        assert w_ic == (r_c.start - g * c.in_channels_per_group, r_c.stop - g * c.in_channels_per_group)
        seen += r_c.size
        x_tile = F.pad(x[r_n.as_slice(), r_c.as_slice(), r_h.as_slice(), r_w.as_slice()], (left, right, top, bottom))
        w_tile = w[w_oc.as_slice(), w_ic.as_slice(), w_kh.as_slice(), w_kw.as_slice()]
        acc += F.conv2d(x_tile, w_tile, stride=c.stride, padding=0, dilation=c.dilation)
    assert seen == c.in_channels_per_group
    torch.testing.assert_close(acc, full[index(tile)], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", range(100))
def test_input_region_for_channels_matches_dependencies(seed: int) -> None:
    rng = random.Random(3000 + seed)
    c = random_config(rng)
    tile = random_tile(rng, c)
    start = rng.randint(0, c.in_channels)
    ic = Segment(start, rng.randint(start, c.in_channels))
    region = c.input_region_for_channels(tile, ic)
    assert region[0] == c.input_region(tile)[0] and region[2:] == c.input_region(tile)[2:]
    dep = input_dependencies(c, tile)
    dep[:, :ic.start] = False
    dep[:, ic.stop:] = False
    expected = bbox(dep, 1)
    if expected is None:
        assert region[1].size == 0 or region[2].size == 0 or region[3].size == 0
    else:
        assert region[1] == expected


@pytest.mark.parametrize("seed", range(100))
def test_weight_region_matches_dependencies(seed: int) -> None:
    """Weight elements with nonzero gradient (input ones on the ic range, no padding) have the returned bbox."""
    rng = random.Random(4000 + seed)
    c = random_config(rng, padding=0)  # no padding: every kernel tap reads real input for the full output
    oc = random_range(rng, c.out_channels)
    ic = None
    if rng.random() < 0.8:
        start = rng.randint(0, c.in_channels)
        ic = Segment(start, rng.randint(start, c.in_channels))
    region = c.weight_region(oc, ic)
    x = torch.zeros(c.input_shape, dtype=torch.float64)
    x[:, slice(None) if ic is None else ic.as_slice()] = 1.0
    w = torch.ones(c.weight_shape, dtype=torch.float64, requires_grad=True)
    conv(c, x, w)[:, oc.as_slice()].sum().backward()
    dep = w.grad != 0
    assert region[0] == oc
    assert region[2:] == ((0, c.kernel_size[0]), (0, c.kernel_size[1]))
    assert not dep[:oc.start].any() and not dep[oc.stop:].any()
    expected_ic = bbox(dep, 1)
    if expected_ic is None:
        assert region[1].size == 0
    else:
        assert region[1] == expected_ic
        assert bbox(dep, 2) == region[2] and bbox(dep, 3) == region[3]


# ------------------------------------------------------------------------------------------------ hand examples


def test_shapes_and_normalisation() -> None:
    c = Conv2dBoundsInfer(4, 6, 3, stride=(2, 1), padding=1, dilation=(1, 2), groups=2, input_shape=(2, 4, 9, 10))
    assert c.kernel_size == (3, 3) and c.stride == (2, 1) and c.padding == (1, 1) and c.dilation == (1, 2)
    assert c.output_shape == (2, 6, 5, 8)
    assert c.weight_shape == (6, 2, 3, 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.groups = 1  # type: ignore[misc]


def test_interior_tile_follows_window_formula() -> None:
    c = Conv2dBoundsInfer(3, 5, 3, stride=2, padding=1, input_shape=(1, 3, 16, 16))
    tile = ((0, 1), (1, 4), (2, 5), (3, 4))
    assert c.input_region(tile) == ((0, 1), (0, 3), (3, 10), (5, 8))
    assert c.padding_for(tile) == (0, 0, 0, 0)
    assert c.input_region(((0, 1), (0, 5), (0, 1), (0, 8))) == ((0, 1), (0, 3), (0, 2), (0, 16))
    assert c.padding_for(((0, 1), (0, 5), (0, 1), (0, 8))) == (1, 0, 1, 0)


def test_border_region_is_tight() -> None:
    # 1x1 kernel, stride 3, padding 1: output row 0 reads padding row -1, row 1 reads input row 2
    c = Conv2dBoundsInfer(1, 1, 1, stride=3, padding=1, input_shape=(1, 1, 6, 6))
    tile = ((0, 1), (0, 1), (0, 2), (0, 1))
    n, ch, rows, cols = c.input_region(tile)
    assert rows == (2, 3)  # the clipped window [0, 3) would load rows 0, 1 for nothing
    assert cols == (0, 0)  # output column 0 reads only padding
    assert c.padding_for(tile) == (3, 0, 1, 0)


def test_padding_only_tile_is_empty() -> None:
    c = Conv2dBoundsInfer(1, 1, 1, padding=3, input_shape=(1, 1, 1, 1))
    assert c.output_shape == (1, 1, 7, 7)
    assert c.input_region(((0, 1), (0, 1), (6, 7), (0, 7)))[2] == (1, 1)
    assert c.input_region(((0, 1), (0, 1), (0, 2), (0, 7)))[2] == (0, 0)
    assert c.padding_for(((0, 1), (0, 1), (6, 7), (3, 4))) == (0, 1, 0, 0)


def test_groups_channel_ranges() -> None:
    dw = Conv2dBoundsInfer(8, 16, 3, padding=1, groups=8, input_shape=(1, 8, 5, 5))
    assert dw.input_region(((0, 1), (5, 9), (0, 5), (0, 5)))[1] == (2, 5)
    grouped = Conv2dBoundsInfer(6, 9, 1, groups=3, input_shape=(1, 6, 4, 4))  # icpg 2, ocpg 3
    assert grouped.input_region(((0, 1), (2, 4), (0, 4), (0, 4)))[1] == (0, 4)
    assert grouped.input_region_for_channels(((0, 1), (2, 4), (0, 4), (0, 4)), (1, 6))[1] == (1, 4)
    assert grouped.input_region_for_channels(((0, 1), (0, 3), (0, 4), (0, 4)), (4, 6))[1].size == 0
    assert grouped.weight_region((3, 5)) == ((3, 5), (0, 2), (0, 1), (0, 1))
    assert grouped.weight_region((3, 5), (3, 4)) == ((3, 5), (1, 2), (0, 1), (0, 1))
    assert grouped.weight_region((2, 4), (1, 3)) == ((2, 4), (0, 2), (0, 1), (0, 1))  # spans groups 0 and 1
    assert grouped.weight_region((0, 3), (4, 6))[1].size == 0


# ------------------------------------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(in_channels=0), "in_channels must be a positive int"),
        (dict(out_channels=True), "out_channels must be a positive int"),
        (dict(kernel_size=0), "kernel_size must be positive"),
        (dict(kernel_size=(3, 3, 3)), "kernel_size must be an int or an"),
        (dict(kernel_size=2.0), "kernel_size must be an int or an"),
        (dict(stride=(1, 0)), "stride must be positive"),
        (dict(padding=-1), "padding must be >= 0"),
        (dict(dilation=0), "dilation must be positive"),
        (dict(groups=3), "divisible by groups"),
        (dict(input_shape=(1, 4, 8)), "4-tuple"),
        (dict(input_shape=(1, 5, 8, 8)), "in_channels"),
        (dict(input_shape=(0, 4, 8, 8)), "must be positive"),
        (dict(input_shape=(1, 4, 2, 8)), "output would be empty"),
    ],
)
def test_config_validation(kwargs: dict, match: str) -> None:
    args = dict(in_channels=4, out_channels=8, kernel_size=3, stride=1, padding=0, dilation=1, groups=2,
                input_shape=(1, 4, 8, 8))
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        Conv2dBoundsInfer(**args)


def test_region_validation() -> None:
    c = Conv2dBoundsInfer(4, 8, 3, groups=2, input_shape=(1, 4, 8, 8))  # output (1, 8, 6, 6)
    good = ((0, 1), (0, 8), (0, 6), (0, 6))
    with pytest.raises(ValueError, match="tuple of 4"):
        c.input_region(good[:3])
    with pytest.raises(ValueError, match="oh range"):
        c.input_region(((0, 1), (0, 8), (0, 7), (0, 6)))
    with pytest.raises(ValueError, match="ow range"):
        c.padding_for(((0, 1), (0, 8), (0, 6), (3, 3)))
    with pytest.raises(ValueError, match="ow range"):
        c.input_region(((0, 1), (0, 8), (0, 6), (0, 6, 1)))  # wrong arity is named too
    with pytest.raises(ValueError, match="in_channels range"):
        c.input_region_for_channels(good, (0, 5))
    with pytest.raises(ValueError, match="oc range"):
        c.weight_region((4, 4))
    with pytest.raises(ValueError, match="ic range"):
        c.weight_region((0, 4), (3, 2))


def test_compiled_blog_infer_equals_the_python_reference(monkeypatch):
    # the compiled common case of get_input_segment / get_w_segment (_core.pyx) against the pure-Python methods
    # on random convs and random tiles: Segments inside, at the borders, unclamped past the end, ints, slices
    import random
    from dsasim.traced.bounds import Conv2dBoundsInfer
    from dsasim.traced.segments import Segment
    reference = Conv2dBoundsInfer._get_input_segment_py
    fallbacks = []
    monkeypatch.setattr(Conv2dBoundsInfer, "_get_input_segment_py",
                        lambda self, *a: fallbacks.append(a) or reference(self, *a))
    rng = random.Random(5)
    all_segments = 0
    for _ in range(300):
        groups = rng.choice([1, 1, 2, 4])
        ic, oc = groups * rng.randint(1, 6), groups * rng.randint(1, 6)
        k, s, p, d = rng.randint(1, 3), rng.randint(1, 2), rng.randint(0, 2), rng.randint(1, 2)
        h, w = rng.randint(k * d, 12), rng.randint(k * d, 12)
        try:
            infer = Conv2dBoundsInfer(in_channels=ic, out_channels=oc, kernel_size=k, groups=groups, padding=p,
                                      stride=s, dilation=d, input_shape=(2, ic, h, w))
        except ValueError:
            continue
        shape = infer.output_shape

        def arg(size):
            a = rng.randrange(size)
            b = rng.randint(a + 1, size + rng.choice([0, 0, 3]))  # sometimes past the end, like unclamped tiles
            return rng.choice([Segment(a, b), Segment(a, b), Segment(a, b), a, slice(a, b), (a, b)])

        for _ in range(20):
            args = [arg(shape[dim]) for dim in range(4)]
            want = reference(infer, *args)
            got = infer.get_input_segment(*args)
            assert got == want and [type(x) for x in got] == [type(x) for x in want], (infer, args)
            w_want, w_got = Conv2dBoundsInfer._get_w_segment_py(infer, args[1]), infer.get_w_segment(args[1])
            assert w_got == w_want and [type(x) for x in w_got] == [type(x) for x in w_want]
            all_segments += all(type(a) is Segment for a in args)
    compiled = all_segments - sum(all(type(a) is Segment for a in f) for f in fallbacks)
    assert all_segments > 300 and compiled > 100  # both paths ran: the compiled one and its fallbacks
