"""Conv geometry, one home: the description of a 2-D convolution (`Conv2dShape`) and, along one image axis,
which input rows a range of output positions and kernel taps reads.

Output position o with kernel tap t reads input row o*stride + t*dilation - padding; rows outside [0, size) are
zero padding and are never loaded. Everything that needs a window (the bounds inference, the loop nests and their
kernel, the analytic model's window sums, the lower bounds) asks these helpers, all in element indices, half-open.
Both the traced model (`Conv2dBoundsInfer`) and the architects' problems (`ConvProblem`) describe a conv with a
`Conv2dShape`, so it is validated in one place.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

from dsasim.util import int_pair, is_int

__all__ = ["Conv2dShape", "Window", "window", "window_rows", "window_step", "stepped_rows", "stepped_box", "tap_outputs",
           "conv_output_size"]


def tap_outputs(o0: int, o1: int, offset: int, stride: int, size: int) -> tuple[int, int]:
    """The output positions [a, b] (inclusive) of [o0, o1) whose row o*stride + offset is a real row of
    [0, size); a > b when there is none."""
    return max(o0, -(offset // stride)), min(o1 - 1, (size - 1 - offset) // stride)


def window_rows(o0: int, o1: int, t0: int, t1: int, stride: int, dilation: int, padding: int,
                size: int) -> tuple[int, int]:
    """Tight range [first, stop) of real input rows read by output rows [o0, o1) with kernel taps [t0, t1).

    An all-padding window gives an empty range (first == stop) at the window start clamped to [0, size).
    Cost O(1) inside the image, O(t1 - t0) at its border.
    """
    lo = o0 * stride + t0 * dilation - padding
    hi = (o1 - 1) * stride + (t1 - 1) * dilation - padding
    if lo >= 0 and hi < size:
        return lo, hi + 1
    first, last = size, -1
    for t in range(t0, t1):
        off = t * dilation - padding
        a, b = tap_outputs(o0, o1, off, stride, size)
        if a <= b:
            first = min(first, a * stride + off)
            last = max(last, b * stride + off)
    if first > last:
        first = min(max(lo, 0), size)
        return first, first
    return first, last + 1


def window_step(o_len: int, t_len: int, stride: int, dilation: int) -> int:
    """The spacing, in rows, of the input rows that o_len consecutive output positions with t_len consecutive taps
    read: each is o0*stride + t0*dilation - padding plus a multiple of it (1 for a single row).

    Row (o0 + i)*stride + (t0 + j)*dilation - padding differs from the first by i*stride + j*dilation, so the
    rows share the spacing gcd(stride, dilation) when both ranges move, stride (1x1 stride 2: every other row)
    or dilation when one does. Above 1 only when the kernel's taps cannot fill the stride's gaps."""
    return math.gcd(stride if o_len > 1 else 0, dilation if t_len > 1 else 0) or 1


def stepped_rows(o0: int, o1: int, t0: int, t1: int, stride: int, dilation: int, padding: int,
                 size: int) -> range:
    """The smallest stepped range of real input rows holding every row that output positions [o0, o1) with taps
    [t0, t1) read: `window_rows`' [first, stop) with `window_step`'s step (what a strided DMA box loads).

    Every row it holds is read when the rows form one arithmetic progression (a single tap or output position,
    or taps spaced like the stride, e.g. 1x1 stride 2); otherwise (3 taps of dilation 2 at stride 6: rows
    0, 2, 6, 8) it also holds the unread rows between (4). Empty when the window reads only padding."""
    first, stop = window_rows(o0, o1, t0, t1, stride, dilation, padding, size)
    return range(first, stop, window_step(o1 - o0, t1 - t0, stride, dilation))


def stepped_box(o0: int, o1: int, t0: int, t1: int, stride: int, dilation: int, padding: int,
                size: int) -> tuple[int, int] | tuple[int, int, int]:
    """`stepped_rows` as a region axis: (first, stop, step) with stop just after the last row when the rows are
    spaced more than 1 apart and more than one, else the dense pair (first, stop) (what the memory model names)."""
    rows = stepped_rows(o0, o1, t0, t1, stride, dilation, padding, size)
    if rows.step > 1 and len(rows) > 1:
        return rows.start, rows[-1] + 1, rows.step
    return (rows.start, rows.start + len(rows)) if len(rows) <= 1 else (rows.start, rows.stop)


class Window(NamedTuple):
    """What output positions [o0, o1) with taps [t0, t1) read along one axis (element indices, half-open):
    [first, stop) the real rows loaded, [lo, hi) the whole window, padding included."""

    first: int
    stop: int
    lo: int
    hi: int

    @property
    def empty(self) -> bool:
        """True when the window reads only padding."""
        return self.first == self.stop

    @property
    def pad(self) -> tuple[int, int]:
        """Zero rows (before, after) to add around the loaded rows [first, stop) to rebuild the window [lo, hi)."""
        before = min(max(self.first - self.lo, 0), self.hi - self.lo)
        return before, (self.hi - self.lo) - (self.stop - self.first) - before


def window(o0: int, o1: int, t0: int, t1: int, stride: int, dilation: int, padding: int, size: int) -> Window:
    """The `Window` of output positions [o0, o1) and taps [t0, t1) over an axis of `size` real rows."""
    first, stop = window_rows(o0, o1, t0, t1, stride, dilation, padding, size)
    return Window(first, stop, o0 * stride + t0 * dilation - padding,
                  (o1 - 1) * stride + (t1 - 1) * dilation - padding + 1)


def conv_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int, dim: str) -> int:
    """Output positions along one axis (torch's conv2d formula); ValueError when the padded input is smaller than
    the dilated kernel (`dim` names the axis in the message)."""
    extent = dilation * (kernel - 1) + 1
    padded = size + 2 * padding
    if padded < extent:
        raise ValueError(f"the padded input {dim} ({padded} = {size} + 2*{padding}) is smaller than the dilated "
                         f"kernel extent ({extent}), so the output would be empty; increase padding or the input "
                         f"size, or reduce kernel_size/dilation")
    return (padded - extent) // stride + 1


def _pair(owner: str, name: str, value: object, minimum: int) -> tuple[int, int]:
    """Normalise an int or (h, w) pair to a pair of ints >= minimum (ValueError prefixed with `owner`)."""
    pair = int_pair(value) if isinstance(value, (int, tuple, list)) else None
    if pair is None:
        raise ValueError(f"{owner}: {name} must be an int or an (h, w) pair of ints, got {value!r}; "
                         f"pass e.g. {name}=3 or {name}=(3, 3)")
    if min(pair) < minimum:
        what = "positive" if minimum == 1 else f">= {minimum}"
        raise ValueError(f"{owner}: {name} must be {what} in both dimensions, got {value!r}; pass values {what}")
    return pair


@dataclass(frozen=True)
class Conv2dShape:
    """One `torch.nn.functional.conv2d` (zero padding, NCHW), validated once, in elements.

    kernel_size, stride, padding and dilation accept an int or an (h, w) pair and are stored as pairs; the weight
    is (out_channels, in_channels // groups, KH, KW). `owner` names the describing class in error messages
    ("Conv2dBoundsInfer", "ConvProblem 'name'"). Invalid values raise ValueError saying which and how to fix it.
    """

    in_channels: int
    out_channels: int
    kernel_size: int | tuple[int, int]
    stride: int | tuple[int, int] = 1
    padding: int | tuple[int, int] = 0
    dilation: int | tuple[int, int] = 1
    groups: int = 1
    input_shape: tuple[int, int, int, int] | None = None  # required; last so the blog's positional order works
    owner: str = field(default="Conv2dShape", repr=False, compare=False, kw_only=True)
    output_shape: tuple[int, int, int, int] = field(init=False, repr=False, compare=False)  # (N, OC, OH, OW)

    def __post_init__(self) -> None:
        """Normalise the int-or-pair fields to pairs, validate the configuration and derive the output shape."""
        owner = self.owner
        for name in ("in_channels", "out_channels", "groups"):
            value = getattr(self, name)
            if not is_int(value) or value <= 0:
                raise ValueError(f"{owner}: {name} must be a positive int, got {value!r}")
        object.__setattr__(self, "kernel_size", _pair(owner, "kernel_size", self.kernel_size, 1))
        object.__setattr__(self, "stride", _pair(owner, "stride", self.stride, 1))
        object.__setattr__(self, "padding", _pair(owner, "padding", self.padding, 0))
        object.__setattr__(self, "dilation", _pair(owner, "dilation", self.dilation, 1))
        if self.in_channels % self.groups or self.out_channels % self.groups:
            raise ValueError(f"{owner}: in_channels ({self.in_channels}) and out_channels ({self.out_channels}) "
                             f"must both be divisible by groups ({self.groups}); choose groups among their common "
                             f"divisors")
        shape = self.input_shape
        if shape is None:
            raise ValueError(f"{owner}: input_shape (N, C, H, W) is required, e.g. "
                             f"Conv2dBoundsInfer(64, 64, 3, padding=1, input_shape=(1, 64, 56, 56))")
        if not isinstance(shape, (tuple, list)) or len(shape) != 4 or not all(is_int(v) for v in shape):
            raise ValueError(f"{owner}: input_shape must be a 4-tuple of ints (N, C, H, W), got {shape!r}")
        if min(shape) <= 0:
            raise ValueError(f"{owner}: every input_shape dimension must be positive, got {tuple(shape)}")
        if shape[1] != self.in_channels:
            raise ValueError(f"{owner}: input_shape has C={shape[1]} channels but in_channels is "
                             f"{self.in_channels}; make input_shape[1] == in_channels")
        object.__setattr__(self, "input_shape", tuple(shape))
        try:
            out = [conv_output_size(shape[2 + axis], self.kernel_size[axis], self.stride[axis], self.padding[axis],
                                    self.dilation[axis], dim) for axis, dim in ((0, "height"), (1, "width"))]
        except ValueError as err:
            raise ValueError(f"{owner}: {err}") from None
        object.__setattr__(self, "output_shape", (shape[0], self.out_channels, out[0], out[1]))

    @property
    def in_channels_per_group(self) -> int:
        """Input channels per group (in_channels // groups), in elements."""
        return self.in_channels // self.groups

    @property
    def out_channels_per_group(self) -> int:
        """Output channels per group (out_channels // groups), in elements."""
        return self.out_channels // self.groups

    @property
    def weight_shape(self) -> tuple[int, int, int, int]:
        """The weight tensor shape (out_channels, in_channels // groups, KH, KW), in elements."""
        return self.out_channels, self.in_channels_per_group, self.kernel_size[0], self.kernel_size[1]

    def window(self, axis: int, o0: int, o1: int, t0: int = 0, t1: int | None = None) -> Window:
        """The `Window` of output positions [o0, o1) and kernel taps [t0, t1) (default: every tap) along axis 0
        (rows) or 1 (columns), in element indices."""
        return window(o0, o1, t0, self.kernel_size[axis] if t1 is None else t1, self.stride[axis],
                      self.dilation[axis], self.padding[axis], self.input_shape[2 + axis])
