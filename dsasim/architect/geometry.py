"""Conv geometry, one home: along one image axis, which input rows a range of output positions and taps reads.

Output position o with kernel tap t reads input row o*stride + t*dilation - padding; rows outside [0, size) are
zero padding and are never loaded. Everything that needs a window (the bounds inference, the loop-nest kernel,
the analytic model's window sums, the lower bounds) asks these helpers, all in element indices, half-open.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Window", "window", "window_rows", "tap_outputs", "conv_output_size"]


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
