"""Bounds inference for 2-D convolution: which input and weight elements an output tile depends on.

Conventions (all values are element indices, regions are half-open):

* Tensors are NCHW, the weight is (out_channels, in_channels // groups, KH, KW), as in `torch.nn.functional.conv2d`.
* Padding is zero padding and is never loaded from DDR: `input_region` returns only real input elements, and
  `padding_for` says how many zero rows/columns to add around that region on chip so that
  `conv2d(pad(x[input_region]), w[weight_region], stride, padding=0, dilation)` gives the output tile exactly.
* Rows and columns are *tight*: the region runs from the first to the last input row (column) that the tile
  actually reads. Away from the borders this is `[oh0*stride - pad, (oh1-1)*stride - pad + (KH-1)*dilation + 1)`;
  at a border it is that window clipped to [0, H) and then shrunk to the rows really read (with stride or dilation
  some clipped rows can be skipped). Rows inside the window that are not loaded are zero-filled by `padding_for`;
  the convolution never reads them, so the result is exact.
* A tile that reads only padding along a dimension gets an empty segment there (start == stop), placed at the
  window start clamped to [0, H); `padding_for` then supplies the whole window as zeros.
* Groups: group g maps input channels [g*icpg, (g+1)*icpg) to output channels [g*ocpg, (g+1)*ocpg). An oc range
  spanning groups g0..g1-1 needs all their input channels; such a tile can be computed as a conv with
  groups=g1-g0 over the weights of those whole groups, keeping the tile's output channels.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Sequence

from dsasim.architect.geometry import Window, conv_output_size, window, window_rows
from dsasim.traced.segments import Segment
from dsasim.util import int_pair, is_int

SegmentLike = Segment | tuple[int, int]
_new_segment = tuple.__new__
Region4 = tuple[Segment, Segment, Segment, Segment]
_DIM_NAMES = ("n", "oc", "oh", "ow")


def _pair(name: str, value: object, minimum: int) -> tuple[int, int]:
    """Normalise an int or (h, w) pair to a pair of ints >= minimum."""
    pair = int_pair(value) if isinstance(value, (int, tuple, list)) else None
    if pair is None:
        raise ValueError(f"Conv2dBoundsInfer: {name} must be an int or an (h, w) pair of ints, got {value!r}; "
                         f"pass e.g. {name}=3 or {name}=(3, 3)")
    if min(pair) < minimum:
        what = "positive" if minimum == 1 else f">= {minimum}"
        raise ValueError(f"Conv2dBoundsInfer: {name} must be {what} in both dimensions, got {value!r}; "
                         f"pass values {what}")
    return pair


def _unpack(rng: object) -> tuple[object, object] | None:
    """Split a (start, stop) pair; None when `rng` is not a pair."""
    try:
        start, stop = rng  # type: ignore[misc]
    except (TypeError, ValueError):
        return None
    return start, stop


@dataclass(frozen=True)
class Conv2dBoundsInfer:
    """Shape and dependency arithmetic of one `torch.nn.functional.conv2d` (zero padding, NCHW), in elements.

    kernel_size, stride, padding and dilation accept an int or an (h, w) pair and are stored as pairs.
    """

    in_channels: int
    out_channels: int
    kernel_size: int | tuple[int, int]
    stride: int | tuple[int, int] = 1
    padding: int | tuple[int, int] = 0
    dilation: int | tuple[int, int] = 1
    groups: int = 1
    input_shape: tuple[int, int, int, int] | None = None  # required; last so the blog's positional order works

    def __post_init__(self) -> None:
        """Normalise the int-or-pair fields to pairs and validate the configuration (ValueError)."""
        for name in ("in_channels", "out_channels", "groups"):
            value = getattr(self, name)
            if not is_int(value) or value <= 0:
                raise ValueError(f"Conv2dBoundsInfer: {name} must be a positive int, got {value!r}")
        object.__setattr__(self, "kernel_size", _pair("kernel_size", self.kernel_size, 1))
        object.__setattr__(self, "stride", _pair("stride", self.stride, 1))
        object.__setattr__(self, "padding", _pair("padding", self.padding, 0))
        object.__setattr__(self, "dilation", _pair("dilation", self.dilation, 1))
        if self.in_channels % self.groups or self.out_channels % self.groups:
            raise ValueError(f"Conv2dBoundsInfer: in_channels ({self.in_channels}) and out_channels "
                             f"({self.out_channels}) must both be divisible by groups ({self.groups}); "
                             f"choose groups among their common divisors")
        shape = self.input_shape
        if shape is None:
            raise ValueError("Conv2dBoundsInfer: input_shape (N, C, H, W) is required, e.g. "
                             "Conv2dBoundsInfer(64, 64, 3, padding=1, input_shape=(1, 64, 56, 56))")
        if not isinstance(shape, (tuple, list)) or len(shape) != 4 or not all(is_int(v) for v in shape):
            raise ValueError(f"Conv2dBoundsInfer: input_shape must be a 4-tuple of ints (N, C, H, W), got {shape!r}")
        if min(shape) <= 0:
            raise ValueError(f"Conv2dBoundsInfer: every input_shape dimension must be positive, got {tuple(shape)}")
        if shape[1] != self.in_channels:
            raise ValueError(f"Conv2dBoundsInfer: input_shape has C={shape[1]} channels but in_channels is "
                             f"{self.in_channels}; make input_shape[1] == in_channels")
        object.__setattr__(self, "input_shape", tuple(shape))
        for axis, dim in ((0, "height"), (1, "width")):
            try:
                conv_output_size(shape[2 + axis], self.kernel_size[axis], self.stride[axis], self.padding[axis],
                                 self.dilation[axis], dim)
            except ValueError as err:
                raise ValueError(f"Conv2dBoundsInfer: {err}") from None

    @property
    def in_channels_per_group(self) -> int:
        """Input channels per group (in_channels // groups), in elements."""
        return self.in_channels // self.groups

    @property
    def out_channels_per_group(self) -> int:
        """Output channels per group (out_channels // groups), in elements."""
        return self.out_channels // self.groups

    @cached_property
    def output_shape(self) -> tuple[int, int, int, int]:
        """The output tensor shape (N, out_channels, OH, OW), in elements, by torch's conv2d formula."""
        n, _, h, w = self.input_shape
        (kh, kw), (sh, sw), (ph, pw), (dh, dw) = self.kernel_size, self.stride, self.padding, self.dilation
        oh = conv_output_size(h, kh, sh, ph, dh, "height")
        ow = conv_output_size(w, kw, sw, pw, dw, "width")
        return n, self.out_channels, oh, ow

    @property
    def weight_shape(self) -> tuple[int, int, int, int]:
        """The weight tensor shape (out_channels, in_channels // groups, KH, KW), in elements."""
        return self.out_channels, self.in_channels_per_group, self.kernel_size[0], self.kernel_size[1]

    # ----------------------------------------------------------------------------------------------- regions

    def _out_region(self, out_region: Sequence[SegmentLike]) -> Region4:
        """Validate an output region (4 non-empty in-bounds (start, stop) ranges) and return it as Segments."""
        if not isinstance(out_region, (tuple, list)) or len(out_region) != 4:
            raise ValueError(f"Conv2dBoundsInfer: out_region must be a tuple of 4 (start, stop) ranges over "
                             f"(n, oc, oh, ow), got {out_region!r}")
        shape = self.output_shape
        segs = []
        for dim, rng, size in zip(_DIM_NAMES, out_region, shape):
            pair = _unpack(rng)
            start, stop = pair if pair is not None else (None, None)
            if type(start) is not int or type(stop) is not int or not 0 <= start < stop <= size:
                raise ValueError(f"Conv2dBoundsInfer: out_region {dim} range {rng!r} must be a non-empty "
                                 f"int range inside [0, {size}] of output shape {shape}; pass "
                                 f"0 <= start < stop <= {size}")
            segs.append(rng if type(rng) is Segment else Segment(start, stop))
        return segs[0], segs[1], segs[2], segs[3]

    def _channel_segment(self, name: str, rng: SegmentLike, size: int) -> Segment:
        """Validate a possibly empty channel range inside [0, size] and return it as a Segment."""
        pair = _unpack(rng)
        start, stop = pair if pair is not None else (None, None)
        if not (is_int(start) and is_int(stop)) or not 0 <= start <= stop <= size:
            raise ValueError(f"Conv2dBoundsInfer: {name} range {rng!r} must be a (start, stop) int range inside "
                             f"[0, {size}]; pass 0 <= start <= stop <= {size}")
        return Segment(start, stop)

    def _groups_of(self, oc: Segment) -> tuple[int, int]:
        """The groups [g0, g1) that the (non-empty) output-channel range touches."""
        ocpg = self.out_channels // self.groups
        return oc.start // ocpg, (oc.stop - 1) // ocpg + 1

    def _spatial(self, oh: Segment, ow: Segment) -> tuple[Window, Window]:
        """The `Window`s of the rows and the columns of an output tile (every tap)."""
        _, _, h, w = self.input_shape
        (kh, kw), (sh, sw), (ph, pw), (dh, dw) = self.kernel_size, self.stride, self.padding, self.dilation
        return window(oh.start, oh.stop, 0, kh, sh, dh, ph, h), window(ow.start, ow.stop, 0, kw, sw, dw, pw, w)

    def input_region(self, out_region: Sequence[SegmentLike]) -> Region4:
        """The (n, c, h, w) input-tensor region, in element indices, that the output tile depends on (no padding).

        Channels are the input channels of every group the oc range touches (all of them for groups=1); rows and
        columns are tight, and empty (start == stop) where the tile reads only padding (see the module docstring).
        """
        n, oc, oh, ow = self._out_region(out_region)
        g0, g1 = self._groups_of(oc)
        icpg = self.in_channels // self.groups
        rows, cols = self._spatial(oh, ow)
        return n, Segment(g0 * icpg, g1 * icpg), Segment(rows.first, rows.stop), Segment(cols.first, cols.stop)

    def input_region_for_channels(self, out_region: Sequence[SegmentLike], in_channels: SegmentLike) -> Region4:
        """`input_region` with channels intersected with an explicit input-channel range, in element indices.

        For a schedule that tiles over input channels (partial sums). An empty intersection gives an empty channel
        segment, placed at the requested start clamped into the groups' channel range.
        """
        n, c, h, w = self.input_region(out_region)
        ic = self._channel_segment("in_channels", in_channels, self.in_channels)
        start = min(max(ic.start, c.start), c.stop)
        stop = max(min(ic.stop, c.stop), start)
        return n, Segment(start, stop), h, w

    def weight_region(self, oc: SegmentLike, ic: SegmentLike | None = None) -> Region4:
        """The (oc, ic_in_group, kh, kw) weight-tensor region, in element indices, for an oc and input-channel range.

        `ic` holds absolute input-channel indices (None: all). Within group g the weight's ic index is
        ic - g*icpg. When oc spans several groups the ic dimension is the bounding box of the per-group local
        ranges: the full [0, icpg) for ic=None or any ic covering whole groups. Kernel dimensions are full.
        An ic range that meets none of the touched groups gives an empty ic segment (0, 0).
        """
        oc_seg = self._channel_segment("oc", oc, self.out_channels)
        if oc_seg.start == oc_seg.stop:
            raise ValueError(f"Conv2dBoundsInfer: oc range {oc!r} is empty; pass start < stop")
        icpg = self.in_channels // self.groups
        kh, kw = self.kernel_size
        if ic is None:
            local = Segment(0, icpg)
        else:
            ic_seg = self._channel_segment("ic", ic, self.in_channels)
            g0, g1 = self._groups_of(oc_seg)
            first, last = icpg, -1
            for g in range(g0, g1):
                base = g * icpg
                start = max(ic_seg.start, base)
                stop = min(ic_seg.stop, base + icpg)
                if start < stop:
                    first = min(first, start - base)
                    last = max(last, stop - base)
            local = Segment(first, last) if first < last else Segment(0, 0)
        return oc_seg, local, Segment(0, kh), Segment(0, kw)

    def padding_for(self, out_region: Sequence[SegmentLike]) -> tuple[int, int, int, int]:
        """Zero rows/columns (top, bottom, left, right), in elements, to add around `input_region` on chip.

        With them, `conv2d(F.pad(x_tile, (left, right, top, bottom)), w_tile, stride=stride, padding=0,
        dilation=dilation)` yields exactly the output tile's rows and columns.
        """
        _, _, oh, ow = self._out_region(out_region)
        rows, cols = self._spatial(oh, ow)
        return rows.pad + cols.pad

    # ------------------------------------------------------------------------------------------ the blog's API

    def get_input_segment(self, n: object, oc: object, oh: object, ow: object) -> list[Segment]:
        """The blog's name: the (n, c, h, w) input region of an output tile, as a list the caller may edit.

        Each argument is an int, a slice or a (start, stop) pair over the output (n, oc, oh, ow), in elements.
        Channels are those of every group the oc range reaches, computed like the blog's, without clamping: an
        oc range past the last output channel (an unclamped `Segments` tile such as 504:528 of 512) reaches
        "group 1" and yields input channels 0:4096 of 2048. Dsasim's memory model clamps what it moves; the
        blog's counter did not (`dsasim demo --blog-quirks`). Rows and columns are the real rows read (clipped
        to the image; see the module docstring).
        """
        shape = self.output_shape
        n_seg, oc_seg, oh_seg, ow_seg = (_blog_range("n", n, shape[0]), _blog_range("oc", oc, shape[1]),
                                         _blog_range("oh", oh, shape[2]), _blog_range("ow", ow, shape[3]))
        ocpg = self.out_channels // self.groups
        icpg = self.in_channels // self.groups
        channels = (oc_seg[0] // ocpg * icpg, ((oc_seg[1] - 1) // ocpg + 1) * icpg)
        _, _, h, w = self.input_shape
        (kh, kw), (sh, sw), (ph, pw), (dh, dw) = self.kernel_size, self.stride, self.padding, self.dilation
        rows = window_rows(oh_seg[0], min(oh_seg[1], shape[2]), 0, kh, sh, dh, ph, h)
        cols = window_rows(ow_seg[0], min(ow_seg[1], shape[3]), 0, kw, sw, dw, pw, w)
        # tuple.__new__ skips the named tuple's Python-level __new__: the blog's demo1 calls this 1.6 M times
        return [n_seg, _new_segment(Segment, channels), _new_segment(Segment, rows), _new_segment(Segment, cols)]

    def get_w_segment(self, oc: object) -> list[Segment]:
        """The blog's name: the (oc, ic, kh, kw) weight region for an output-channel range, as an editable list.

        `oc` is an int, a slice or a (start, stop) pair, in elements, kept as given (not clamped, like the
        blog's); the input-channel dimension is all of a group's channels (the caller narrows it: seg[1] = ic).
        """
        kh, kw = self.kernel_size
        return [_blog_range("oc", oc, self.out_channels), Segment(0, self.in_channels // self.groups),
                Segment(0, kh), Segment(0, kw)]


def _blog_range(name: str, value: object, size: int) -> Segment:
    """An int, slice or (start, stop) pair over a dimension of `size` as a non-empty Segment (stop may pass size)."""
    if type(value) is Segment and 0 <= value[0] < value[1] and value[0] < size:  # the common case, first
        return value
    if is_int(value):
        start, stop = value, value + 1
    elif isinstance(value, slice):
        if value.step not in (None, 1):
            raise ValueError(f"Conv2dBoundsInfer: {name} slice {value!r} has a step; tiles are contiguous, "
                             f"use step 1")
        start = 0 if value.start is None else value.start
        stop = size if value.stop is None else value.stop
    else:
        pair = _unpack(value)
        start, stop = pair if pair is not None else (None, None)
    if not (is_int(start) and is_int(stop)) or not 0 <= start < stop or start >= size:
        raise ValueError(f"Conv2dBoundsInfer: {name} range {value!r} must be an int, a slice or a (start, stop) "
                         f"pair of ints with 0 <= start < stop and start < {size}")
    return Segment(start, stop)
