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

from dataclasses import dataclass, field
from typing import Sequence

from dsasim.geometry import Conv2dShape, window_rows
from dsasim.traced import _core
from dsasim.traced.segments import Segment
from dsasim.util import Region, is_int

_new_segment = tuple.__new__
_DIM_NAMES = ("n", "oc", "oh", "ow")


def _segment(name: str, rng: object, size: int, empty: bool = False) -> Segment:
    """`rng` as a Segment when it is a (start, stop) pair of ints inside [0, size], non-empty unless `empty`."""
    try:
        start, stop = rng  # type: ignore[misc]
    except (TypeError, ValueError):
        start = stop = None
    if not (is_int(start) and is_int(stop)) or not 0 <= start <= stop <= size or (start == stop and not empty):
        rule = "0 <= start <= stop" if empty else "0 <= start < stop"
        raise ValueError(f"Conv2dBoundsInfer: {name} range {rng!r} must be a {'' if empty else 'non-empty '}"
                         f"(start, stop) int range inside [0, {size}]; pass {rule} <= {size}")
    return rng if type(rng) is Segment else Segment(start, stop)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Conv2dBoundsInfer(Conv2dShape):
    """Shape and dependency arithmetic of one `torch.nn.functional.conv2d` (zero padding, NCHW), in elements.

    The blog's face of a `Conv2dShape` (same fields, same validation, in the blog's positional order): kernel_size,
    stride, padding and dilation accept an int or an (h, w) pair and are stored as pairs. Regions are `Region`s
    of `Segment`s.
    """

    owner: str = field(default="Conv2dBoundsInfer", repr=False, compare=False, kw_only=True)

    # ----------------------------------------------------------------------------------------------- regions

    def _out_region(self, out_region: Sequence[tuple[int, int]]) -> Region:
        """Validate an output region (4 non-empty in-bounds (start, stop) ranges) and return it as Segments."""
        if not isinstance(out_region, (tuple, list)) or len(out_region) != 4:
            raise ValueError(f"Conv2dBoundsInfer: out_region must be a tuple of 4 (start, stop) ranges over "
                             f"(n, oc, oh, ow), got {out_region!r}")
        return tuple(_segment(f"out_region {dim}", rng, size)
                     for dim, rng, size in zip(_DIM_NAMES, out_region, self.output_shape))

    def _groups_of(self, oc: Segment) -> tuple[int, int]:
        """The groups [g0, g1) that the (non-empty) output-channel range touches."""
        ocpg = self.out_channels_per_group
        return oc.start // ocpg, (oc.stop - 1) // ocpg + 1

    def input_region(self, out_region: Sequence[tuple[int, int]]) -> Region:
        """The (n, c, h, w) input-tensor region, in element indices, that the output tile depends on (no padding).

        Channels are the input channels of every group the oc range touches (all of them for groups=1); rows and
        columns are tight, and empty (start == stop) where the tile reads only padding (see the module docstring).
        """
        n, oc, oh, ow = self._out_region(out_region)
        g0, g1 = self._groups_of(oc)
        icpg = self.in_channels_per_group
        rows, cols = self.window(0, *oh), self.window(1, *ow)
        return n, Segment(g0 * icpg, g1 * icpg), Segment(rows.first, rows.stop), Segment(cols.first, cols.stop)

    def input_region_for_channels(self, out_region: Sequence[tuple[int, int]], in_channels: tuple[int, int]
                                  ) -> Region:
        """`input_region` with channels intersected with an explicit input-channel range, in element indices.

        For a schedule that tiles over input channels (partial sums). An empty intersection gives an empty channel
        segment, placed at the requested start clamped into the groups' channel range.
        """
        n, c, h, w = self.input_region(out_region)
        ic = _segment("in_channels", in_channels, self.in_channels, empty=True)
        start = min(max(ic.start, c.start), c.stop)
        stop = max(min(ic.stop, c.stop), start)
        return n, Segment(start, stop), h, w

    def weight_region(self, oc: tuple[int, int], ic: tuple[int, int] | None = None) -> Region:
        """The (oc, ic_in_group, kh, kw) weight-tensor region, in element indices, for an oc and input-channel range.

        `ic` holds absolute input-channel indices (None: all). Within group g the weight's ic index is
        ic - g*icpg. When oc spans several groups the ic dimension is the bounding box of the per-group local
        ranges: the full [0, icpg) for ic=None or any ic covering whole groups. Kernel dimensions are full.
        An ic range that meets none of the touched groups gives an empty ic segment (0, 0).
        """
        oc_seg = _segment("oc", oc, self.out_channels)
        icpg = self.in_channels_per_group
        kh, kw = self.kernel_size
        if ic is None:
            local = Segment(0, icpg)
        else:
            ic_seg = _segment("ic", ic, self.in_channels, empty=True)
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

    def padding_for(self, out_region: Sequence[tuple[int, int]]) -> tuple[int, int, int, int]:
        """Zero rows/columns (top, bottom, left, right), in elements, to add around `input_region` on chip.

        With them, `conv2d(F.pad(x_tile, (left, right, top, bottom)), w_tile, stride=stride, padding=0,
        dilation=dilation)` yields exactly the output tile's rows and columns.
        """
        _, _, oh, ow = self._out_region(out_region)
        rows, cols = self.window(0, *oh), self.window(1, *ow)
        return rows.pad + cols.pad

    # ------------------------------------------------------------------------------------------ the blog's API

    def _get_input_segment_py(self, n: object, oc: object, oh: object, ow: object) -> list[Segment]:
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
        ocpg, icpg = self.out_channels // self.groups, self.in_channels // self.groups
        channels = (oc_seg[0] // ocpg * icpg, ((oc_seg[1] - 1) // ocpg + 1) * icpg)
        _, _, h, w = self.input_shape
        (kh, kw), (sh, sw), (ph, pw), (dh, dw) = self.kernel_size, self.stride, self.padding, self.dilation
        rows = window_rows(oh_seg[0], min(oh_seg[1], shape[2]), 0, kh, sh, dh, ph, h)
        cols = window_rows(ow_seg[0], min(ow_seg[1], shape[3]), 0, kw, sw, dw, pw, w)
        # tuple.__new__ skips the named tuple's Python-level __new__: the blog's demo1 calls this 1.6 M times
        return [n_seg, _new_segment(Segment, channels), _new_segment(Segment, rows), _new_segment(Segment, cols)]

    def _get_w_segment_py(self, oc: object) -> list[Segment]:
        """The blog's name: the (oc, ic, kh, kw) weight region for an output-channel range, as an editable list.

        `oc` is an int, a slice or a (start, stop) pair, in elements, kept as given (not clamped, like the
        blog's); the input-channel dimension is all of a group's channels (the caller narrows it: seg[1] = ic).
        """
        kh, kw = self.kernel_size
        return [_blog_range("oc", oc, self.out_channels), Segment(0, self.in_channels_per_group),
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
        try:
            start, stop = value  # type: ignore[misc]
        except (TypeError, ValueError):
            start = stop = None
    if not (is_int(start) and is_int(stop)) or not 0 <= start < stop or start >= size:
        raise ValueError(f"Conv2dBoundsInfer: {name} range {value!r} must be an int, a slice or a (start, stop) "
                         f"pair of ints with 0 <= start < stop and start < {size}")
    return Segment(start, stop)


def _bind_core(compiled: bool) -> None:
    """Route the blog's `get_input_segment` / `get_w_segment` to the compiled common case (_core.pyx) or to their
    pure-Python reference (tests); either way the methods keep their documented behaviour."""
    Conv2dBoundsInfer.get_input_segment = (  # type: ignore[method-assign]
        _core.infer_input_segment if compiled else Conv2dBoundsInfer._get_input_segment_py)
    Conv2dBoundsInfer.get_w_segment = (  # type: ignore[method-assign]
        _core.infer_w_segment if compiled else Conv2dBoundsInfer._get_w_segment_py)


_bind_core(True)
