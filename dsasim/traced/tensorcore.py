"""Compute units: the TensorCore (16 input x 24 output channels per step) and the vector unit.

A unit call such as `tc.conv2d(x, w)` returns a `Product`; `out += product` (accumulate) or
`out.assign(product)` (overwrite) performs it: the operands are checked live, a COMPUTE event is traced with
its MACs and cycles, and in numeric mode the arithmetic runs (torch for convolutions, numpy elsewhere; torch is
imported only then, so count-only runs and `import dsasim` never load it).

Cost model (cycles at the accelerator clock):
  conv2d / matmul on the TensorCore: per group, ceil(ic/16) * ceil(oc/24) steps per output pixel per kernel
  tap, i.e. cycles = groups * ceil(ic_g/16) * ceil(oc_g/24) * N * OH * OW * KH * KW; padded MACs = cycles *
  16 * 24, so the waste of partial blocks is padded_macs - macs. Each group is its own pass over the array
  (channels of different groups never share a step): a depthwise conv (ic_g = oc_g = 1) uses 1 of 16 x 24
  MAC lanes per step.
  vector ops: ceil(lane operations / lanes) cycles; an elementwise op does one lane operation per output
  element; a dot product counts one MAC per element; `im2col` counts the elements of the patch matrix it writes
  (one lane per element copied or zero-filled). The softmax's operations (attention): `exp`, `row_max` and
  `row_sum` (a reduction does one lane operation per *input* element: the compare or add into its row's
  accumulator), `sub_rows` / `mul_rows` / `div_rows` (a (rows, cols) tile with a (rows, 1) per-row vector: one
  lane operation per output element; the vector is read once per row), `sub`, `maximum` and `mask_causal` (one
  lane operation per element).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from dsasim.dataflow import DATAFLOWS
from dsasim.errors import CrossSessionError
from dsasim.traced import _core
from dsasim.traced.session import Session
from dsasim.traced.tile import PendingCompute, Tile
from dsasim.traced.trace import format_region
from dsasim.util import ceil_div, int_pair, is_int, region_elements, shape_elements


def _pair(value: int | tuple[int, int], what: str, minimum: int = 1) -> tuple[int, int]:
    """An int or (h, w) pair of ints (numpy ints too) >= minimum, as a pair of Python ints."""
    if type(value) is tuple and len(value) == 2 and type(value[0]) is int and type(value[1]) is int \
            and value[0] >= minimum and value[1] >= minimum:
        return value  # (the common case, a pair of Python ints, without int_pair's checks: every conv comes here)
    pair = int_pair(value, numpy=True)
    if pair is None:
        raise ValueError(f"{what} must be an int or an (h, w) pair of ints, got {value!r}; pass e.g. "
                         f"{what}=1 or {what}=(2, 2)")
    if min(pair) < minimum:
        raise ValueError(f"{what} must be >= {minimum}, got {value!r}")
    return pair


def _padding4(padding: object, op: str) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) in elements as Python ints (negative: crop), or ValueError naming `op`."""
    if type(padding) is tuple and len(padding) == 4 and type(padding[0]) is int and type(padding[1]) is int \
            and type(padding[2]) is int and type(padding[3]) is int:
        return padding  # (the common case, four Python ints: every conv comes here)
    if not isinstance(padding, (tuple, list)) or len(padding) != 4 or not all(is_int(p, numpy=True) for p in padding):
        raise ValueError(f"{op}: padding must be 4 integers (top, bottom, left, right) in elements, got "
                         f"{padding!r}; e.g. padding=(1, 1, 1, 1)")
    top, bottom, left, right = (int(p) for p in padding)
    return top, bottom, left, right


def _plain_conv_arguments(stride: object, dilation: object, groups: object, padding: object) -> bool:
    """Whether a conv's stride, dilation (ints or pairs of them), groups (an int) and padding (4 ints) are Python ints
    (not bools, numpy or floats): only then is a conv's plan kept, so an argument equal to a kept one but of another
    type still meets its check."""
    for pair in (stride, dilation):
        if type(pair) is not int and not (type(pair) is tuple and len(pair) == 2 and type(pair[0]) is int
                                          and type(pair[1]) is int):
            return False
    return type(groups) is int and type(padding) is tuple and len(padding) == 4 and type(padding[0]) is int \
        and type(padding[1]) is int and type(padding[2]) is int and type(padding[3]) is int


def _check_session(session: object, unit: str) -> Session:
    if not isinstance(session, Session):
        raise TypeError(f"{unit} needs the Session to trace into, got {type(session).__name__}; "
                        f"pass e.g. {unit}(session)")
    return session


def _check_tiles(session: Session, op: str, tiles: tuple[object, ...]) -> None:
    """Operands must be Tiles of the unit's own Session (a tile of another session is a foreign buffer), and the
    Session must still be tracing (not finished, not poisoned)."""
    if session.refusal_reason is not None:
        raise session.refusal()
    for t in tiles:  # one pass of cheap checks: every unit call comes here
        if type(t) is not Tile or t.buffer.tensor.session is not session:
            _bad_operand(session, op, tiles)


def _bad_operand(session: Session, op: str, tiles: tuple[object, ...]) -> None:
    for i, t in enumerate(tiles):
        if type(t) is not Tile:
            hint = (" (index it inside a scope to get a tile, e.g. x[...])" if hasattr(t, "session")
                    and hasattr(t, "live") else "")
            raise TypeError(f"{op}: operand {i} must be a Tile, got {type(t).__name__}{hint}")
        if t.buffer.tensor.session is not session:
            raise CrossSessionError(f"{op}: operand {i} {t!r} belongs to another Session than this unit; create the "
                                    f"unit with the session that owns the tiles (TensorCore(session))")


class Product(_core.ProductFields, PendingCompute):
    """A pending compute: what `out += product` or `out.assign(product)` performs. Its fields (`_core.ProductFields`):
    session, unit, op, inputs (the operand tiles), out_shape, macs, cycles, padded_macs, and kernel: the
    arithmetic on the operands' arrays (`Tile.data` of `inputs`, in order), which the compiled core calls with
    the buffers' arrays directly."""

    __slots__ = ()

    def compute(self) -> np.ndarray:
        """The result's values (numeric mode): the kernel on the operands' data."""
        return self.kernel(*[t.data for t in self.inputs])

    def __repr__(self) -> str:
        operands = ", ".join(repr(t) for t in self.inputs)
        return f"{self.unit}.{self.op}({operands})"

    def _apply_py(self, out: Tile, accumulate: bool) -> None:
        """Write (or accumulate) the result into `out`, tracing one COMPUTE event (the reference of
        `_core.product_apply`, see `_bind_core`)."""
        session = self.session
        if type(out) is not Tile:
            raise TypeError(f"{self!r} can only be written into a Tile, got {type(out).__name__}")
        if out.buffer.tensor.session is not session:  # type checked first: a non-Tile has no buffer
            raise CrossSessionError(f"{self!r} was computed in another Session than the output tile {out!r}; "
                                    f"a tile of one Session cannot be written into another's")
        out_shape = out.shape
        if out_shape != self.out_shape and not (self.out_shape == (1,) and region_elements(out.region) == 1):
            raise ValueError(f"{self.unit}.{self.op} produces shape {self.out_shape} but the output tile "
                             f"{out.buffer.tensor.name}{format_region(out.region)} has shape {out_shape}")
        session.pending_products.pop(self, None)
        in_buffers = tuple([t.check_live().id for t in self.inputs])
        levels = session.level_state
        if levels is not None and self.unit == "tensorcore":
            levels.check_operands(self, out)
        out_buffer = session.mark_written(out)
        accesses = session.count_operands(self, out, accumulate)
        if session.numeric:
            result = self.compute()
            view = out.data
            if result.shape != view.shape and result.ndim:  # a 0-d result (a dot) broadcasts as it is
                result = result.reshape(view.shape)
            if accumulate:
                view += result
            else:
                view[...] = result
        session.emit_compute(self.unit, self.op, out_buffer.id, in_buffers, self.macs, self.cycles,
                             self.padded_macs, accesses)

    apply = _apply_py


class TensorCore:
    """The matrix unit: `ic_block` input x `oc_block` output channels per cycle, per output pixel and tap."""

    def __init__(self, session: Session) -> None:
        self.session = _check_session(session, "TensorCore")
        self.ic_block = session.hardware.tensorcore_in_channels
        self.oc_block = session.hardware.tensorcore_out_channels
        self.dataflow = DATAFLOWS[session.hardware.tensorcore_dataflow]
        # the dataflow's operand accesses by call (pixels, taps, groups, in and out channels per group): a pure
        # function of them, asked again at every step of a loop nest
        self._accesses: dict[tuple[int, int, int, int, int], Any] = {}
        # a conv's checked shape, cost and kernel by its tiles' shapes and its plain arguments (`_conv_plan`): the
        # same at every step of a loop nest
        self._conv_plans: dict[tuple, tuple] = {}

    def _product(self, op: str, operands: tuple[Tile, Tile], out_shape: tuple[int, ...], macs: int, cycles: int,
                 kernel: Callable[..., np.ndarray], pixels: int, taps: int, groups: int, in_per_group: int,
                 out_per_group: int) -> Product:
        """The pending compute, with its operand reads and writes per the hardware's dataflow (elements; the
        output's reads are its writes less its fresh elements, counted when it is written)."""
        product = Product(self.session, "tensorcore", op, operands, out_shape, macs, cycles,
                          cycles * self.ic_block * self.oc_block, kernel)
        call = (pixels, taps, groups, in_per_group, out_per_group)
        accesses = self._accesses.get(call)
        if accesses is None:
            accesses = self.dataflow(*call, self.ic_block, self.oc_block)
            if all(type(value) is int for value in call):  # (a key equal to another of other types: not kept)
                self._accesses[call] = accesses
        product.first_reads = accesses.input_reads
        product.second_reads = accesses.weight_reads
        product.output_writes = accesses.output_writes
        product.lane_ops = 0
        return product

    def conv2d(self, x: Tile, w: Tile, stride: int | tuple[int, int] = 1, dilation: int | tuple[int, int] = 1,
               groups: int = 1, padding: tuple[int, int, int, int] = (0, 0, 0, 0)) -> Product:
        """Conv of an input tile (N, C, H, W) with a weight tile (OC, C/groups, KH, KW); padding (top, bottom,
        left, right) in elements is applied on chip (negative: crops). Cycles per the module's cost model.

        Grouped tiles may also come with the group as their own axis (a grouped `ConvProblem`'s layout): input
        (N, G, C/G, H, W) and weight (G, OC/G, C/G, KH, KW) give an output (N, G, OC/G, OH, OW), groups = G."""
        _check_tiles(self.session, "conv2d", (x, w))
        xs, ws = x.shape, w.shape
        plain = _plain_conv_arguments(stride, dilation, groups, padding)
        key = (xs, ws, stride, dilation, groups, padding) if plain else None
        plan = self._conv_plans.get(key) if plain else None
        if plan is None:
            plan = self._conv_plan(xs, ws, stride, dilation, groups, padding)
            if plain:
                self._conv_plans[key] = plan
        out_shape, macs, cycles, kernel, call = plan
        return self._product("conv2d", (x, w), out_shape, macs, cycles, kernel, *call)

    def _conv_plan(self, xs: tuple[int, ...], ws: tuple[int, ...], stride: int | tuple[int, int],
                   dilation: int | tuple[int, int], groups: int,
                   padding: tuple[int, int, int, int]) -> tuple[tuple[int, ...], int, int, Callable[..., np.ndarray],
                                                             tuple[int, int, int, int, int]]:
        """`conv2d` of tiles of shapes xs and ws, checked: (the output's shape, MACs, cycles, the kernel computing
        it, the dataflow's call: pixels, taps, groups, in and out channels per group)."""
        group_axis = len(xs) == 5 and len(ws) == 5
        if group_axis:  # the same conv on the NCHW views: C = G x C/G input and OC = G x OC/G output channels
            if groups != 1 or xs[1] != ws[0]:
                raise ValueError(f"conv2d: 5-d tiles (N, G, C/G, H, W) and (G, OC/G, C/G, KH, KW) carry their groups "
                                 f"on axis 1 and axis 0, so those must agree and groups= stay 1; got {xs} and {ws} "
                                 f"with groups={groups!r}")
            groups = xs[1]
            out5 = (xs[0], xs[1], ws[1])
            xs, ws = (xs[0], xs[1] * xs[2], xs[3], xs[4]), (ws[0] * ws[1], ws[2], ws[3], ws[4])
        elif len(xs) != 4 or len(ws) != 4:
            raise ValueError(f"conv2d needs 4-d tiles (N, C, H, W) and (OC, C/groups, KH, KW) (or grouped 5-d tiles "
                             f"(N, G, C/G, H, W) and (G, OC/G, C/G, KH, KW)), got {xs} and {ws}")
        sh, sw = _pair(stride, "stride")
        dh, dw = _pair(dilation, "dilation")
        if not is_int(groups, numpy=True) or groups < 1:
            raise ValueError(f"conv2d: groups must be an integer >= 1, got {groups!r}")
        groups = int(groups)
        # a negative amount crops the tile instead (loop-nest kernels load whole tiles and crop on chip)
        top, bottom, left, right = _padding4(padding, "conv2d")
        n, c, h, wd = xs
        oc, icg, kh, kw = ws
        if c != icg * groups or oc % groups:
            raise ValueError(f"conv2d: input tile has {c} channels, weight tile {ws} with groups={groups} needs "
                             f"{icg * groups} input channels and oc divisible by groups")
        oh = (h + top + bottom - dh * (kh - 1) - 1) // sh + 1
        ow = (wd + left + right - dw * (kw - 1) - 1) // sw + 1
        if oh < 1 or ow < 1:
            raise ValueError(f"conv2d: input tile {xs} with padding {padding} is smaller than the kernel {ws}")
        ocg = oc // groups
        steps = groups * ceil_div(icg, self.ic_block) * ceil_div(ocg, self.oc_block)
        cycles = steps * n * oh * ow * kh * kw
        macs = oc * icg * n * oh * ow * kh * kw
        icb, ocb = self.ic_block, self.oc_block

        def conv(x_data: np.ndarray, w_data: np.ndarray) -> np.ndarray:
            import torch
            import torch.nn.functional as F

            xt = torch.from_numpy(x_data)
            wt = torch.from_numpy(w_data)
            if top or bottom or left or right:
                xt = F.pad(xt, (left, right, top, bottom))
            if groups != 1:  # one call per group set; block stepping matters only for the summation order
                return F.conv2d(xt, wt, stride=(sh, sw), dilation=(dh, dw), groups=groups).numpy()
            out = None
            for o in range(0, oc, ocb):  # step over 24-output x 16-input channel blocks, like the hardware
                acc = None
                for i in range(0, c, icb):
                    part = F.conv2d(xt[:, i:i + icb], wt[o:o + ocb, i:i + icb], stride=(sh, sw),
                                    dilation=(dh, dw))
                    acc = part if acc is None else acc + part
                out = acc if out is None else torch.cat((out, acc), 1)
            return out.numpy()

        call = (n * oh * ow, kh * kw, groups, icg, ocg)  # pixels, taps, groups, in and out channels per group
        if not group_axis:
            return (n, oc, oh, ow), macs, cycles, conv, call
        out_shape = (*out5, oh, ow)

        def grouped_conv(x_data: np.ndarray, w_data: np.ndarray) -> np.ndarray:
            """The same arithmetic on the NCHW views of the 5-d tiles, returned in the 5-d layout."""
            return conv(x_data.reshape(xs), w_data.reshape(ws)).reshape(out_shape)

        return out_shape, macs, cycles, grouped_conv, call

    def matmul(self, a: Tile, b: Tile) -> Product:
        """(M, K) @ (K, N): K maps to the 16 input channels, N to the 24 output channels, M to pixels."""
        _check_tiles(self.session, "matmul", (a, b))
        if len(a.shape) != 2 or len(b.shape) != 2:
            raise ValueError(f"matmul needs 2-d tiles (M, K) and (K, N), got {a.shape} and {b.shape}")
        (m, k), (k2, n) = a.shape, b.shape
        if k != k2:
            raise ValueError(f"matmul: inner dimensions differ: {a.shape} @ {b.shape}")
        cycles = ceil_div(k, self.ic_block) * ceil_div(n, self.oc_block) * m
        icb = self.ic_block

        def matmul(a_data: np.ndarray, b_data: np.ndarray) -> np.ndarray:
            import torch

            at, bt = torch.from_numpy(a_data), torch.from_numpy(b_data)
            acc = None
            for i in range(0, k, icb):
                part = at[:, i:i + icb] @ bt[i:i + icb]
                acc = part if acc is None else acc + part
            return acc.numpy()

        return self._product("matmul", (a, b), (m, n), m * n * k, cycles, matmul, m, 1, 1, k, n)

    def matmul_nt(self, a: Tile, b: Tile) -> Product:
        """(M, K) @ (N, K)ᵀ (b read transposed, e.g. Q·Kᵀ with K stored row per key): the cost of `matmul` with
        K on the 16 input and N on the 24 output channels."""
        _check_tiles(self.session, "matmul_nt", (a, b))
        if len(a.shape) != 2 or len(b.shape) != 2:
            raise ValueError(f"matmul_nt needs 2-d tiles (M, K) and (N, K), got {a.shape} and {b.shape}")
        (m, k), (n, k2) = a.shape, b.shape
        if k != k2:
            raise ValueError(f"matmul_nt: inner dimensions differ: {a.shape} @ {b.shape}ᵀ")
        cycles = ceil_div(k, self.ic_block) * ceil_div(n, self.oc_block) * m
        icb = self.ic_block

        def matmul_nt(a_data: np.ndarray, b_data: np.ndarray) -> np.ndarray:
            acc = None
            for i in range(0, k, icb):  # 16-channel slices, as the hardware sums them
                part = a_data[:, i:i + icb] @ b_data[:, i:i + icb].T
                acc = part if acc is None else acc + part
            return acc

        return self._product("matmul_nt", (a, b), (m, n), m * n * k, cycles, matmul_nt, m, 1, 1, k, n)


def _flat_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sum(a * b) over all elements, as a 0-d result (vdot flattens both itself: no reshape views per call; the
    tensors are real, so it conjugates nothing)."""
    return np.vdot(a, b)


def _pad_or_crop(x: np.ndarray, top: int, bottom: int, left: int, right: int) -> np.ndarray:
    """An (N, C, H, W) array with zero rows/columns added (positive amounts) or cut off (negative), in elements."""
    h, w = x.shape[2], x.shape[3]
    cropped = x[:, :, max(-top, 0):h - max(-bottom, 0), max(-left, 0):w - max(-right, 0)]
    return np.pad(cropped, ((0, 0), (0, 0), (max(top, 0), max(bottom, 0)), (max(left, 0), max(right, 0))))


def _relu(a: np.ndarray) -> np.ndarray:
    """max(a, 0) elementwise."""
    return np.maximum(a, 0)


class VectorUnit:
    """The elementwise unit: `lanes` elements per cycle."""

    def __init__(self, session: Session) -> None:
        self.session = _check_session(session, "VectorUnit")
        self.lanes = session.hardware.vector_lanes

    def _elementwise(self, op: str, tiles: tuple[Tile, ...], fn: Callable[..., np.ndarray]) -> Product:
        _check_tiles(self.session, f"vector.{op}", tiles)
        shape = tiles[0].shape
        for t in tiles[1:]:
            if t.shape != shape:
                raise ValueError(f"vector.{op}: operand shapes differ: {[t.shape for t in tiles]}")
        n = shape_elements(shape)
        cycles = ceil_div(n, self.lanes)
        return Product(self.session, "vector", op, tiles, shape, 0, cycles, 0, fn)

    def add(self, a: Tile, b: Tile) -> Product:
        """Elementwise a + b; ceil(elements / lanes) cycles."""
        return self._elementwise("add", (a, b), np.add)

    def mul(self, a: Tile, b: Tile) -> Product:
        """Elementwise a * b; ceil(elements / lanes) cycles."""
        return self._elementwise("mul", (a, b), np.multiply)

    def relu(self, a: Tile) -> Product:
        """Elementwise max(a, 0); ceil(elements / lanes) cycles."""
        return self._elementwise("relu", (a,), _relu)

    def copy(self, a: Tile) -> Product:
        """Elementwise copy; ceil(elements / lanes) cycles."""
        return self._elementwise("copy", (a,), np.copy)

    # -- the softmax's operations (attention): costs in the module docstring -----------------------------------
    def exp(self, a: Tile, scale: float = 1.0) -> Product:
        """Elementwise exp(scale * a) (the scale folded into the exponent's argument: one lane operation per
        element); ceil(elements / lanes) cycles."""
        if not isinstance(scale, (int, float)) or isinstance(scale, bool) or not 0 < scale < float("inf"):
            raise ValueError(f"vector.exp: scale must be a positive finite number, got {scale!r}")
        return self._elementwise("exp", (a,), lambda x: np.exp(x * np.float32(scale), dtype=x.dtype))

    def sub(self, a: Tile, b: Tile) -> Product:
        """Elementwise a - b; ceil(elements / lanes) cycles."""
        return self._elementwise("sub", (a, b), np.subtract)

    def maximum(self, a: Tile, b: Tile) -> Product:
        """Elementwise max(a, b); ceil(elements / lanes) cycles."""
        return self._elementwise("maximum", (a, b), np.maximum)

    def _reduce_rows(self, op: str, a: Tile, fn: Callable[..., np.ndarray]) -> Product:
        _check_tiles(self.session, f"vector.{op}", (a,))
        if len(a.shape) != 2:
            raise ValueError(f"vector.{op} needs a 2-d tile (rows, cols), got shape {a.shape}")
        rows, cols = a.shape
        product = Product(self.session, "vector", op, (a,), (rows, 1), 0, ceil_div(rows * cols, self.lanes), 0, fn)
        product.lane_ops = rows * cols  # one compare / add per input element into its row's accumulator
        return product

    def row_max(self, a: Tile) -> Product:
        """Each row's maximum of a (rows, cols) tile, as (rows, 1); ceil(rows * cols / lanes) cycles."""
        return self._reduce_rows("row_max", a, lambda x: np.max(x, axis=1, keepdims=True))

    def row_sum(self, a: Tile) -> Product:
        """Each row's sum of a (rows, cols) tile, as (rows, 1); ceil(rows * cols / lanes) cycles."""
        return self._reduce_rows("row_sum", a, lambda x: np.sum(x, axis=1, keepdims=True))

    def _by_rows(self, op: str, a: Tile, v: Tile, fn: Callable[..., np.ndarray]) -> Product:
        _check_tiles(self.session, f"vector.{op}", (a, v))
        if len(a.shape) != 2 or v.shape != (a.shape[0], 1):
            raise ValueError(f"vector.{op} needs a (rows, cols) tile and a (rows, 1) per-row vector, got {a.shape} "
                             f"and {v.shape}")
        return Product(self.session, "vector", op, (a, v), a.shape, 0, ceil_div(shape_elements(a.shape), self.lanes),
                       0, fn)

    def sub_rows(self, a: Tile, v: Tile) -> Product:
        """a - v, v (rows, 1) broadcast along each row; ceil(elements of a / lanes) cycles."""
        return self._by_rows("sub_rows", a, v, np.subtract)

    def mul_rows(self, a: Tile, v: Tile) -> Product:
        """a * v, v (rows, 1) broadcast along each row (a rescale); ceil(elements of a / lanes) cycles."""
        return self._by_rows("mul_rows", a, v, np.multiply)

    def div_rows(self, a: Tile, v: Tile) -> Product:
        """a / v, v (rows, 1) broadcast along each row (softmax's normalisation); ceil(elements of a / lanes)
        cycles."""
        return self._by_rows("div_rows", a, v, np.divide)

    def mask_causal(self, a: Tile, first_row: int, first_col: int, offset: int) -> Product:
        """a with -inf where column first_col + j lies past row first_row + i + offset (a causal mask, aligned by
        `offset`: row i sees columns <= i + offset); one lane operation per element, ceil(elements / lanes)
        cycles."""
        for label, value in (("first_row", first_row), ("first_col", first_col), ("offset", offset)):
            if not is_int(value, numpy=True):
                raise ValueError(f"vector.mask_causal: {label} must be an integer, got {value!r}")
        if len(a.shape) != 2:
            raise ValueError(f"vector.mask_causal needs a 2-d tile (rows, cols), got shape {a.shape}")
        rows, cols = a.shape
        hidden = (first_col + np.arange(cols))[None, :] > (first_row + np.arange(rows) + offset)[:, None]

        def masked(x: np.ndarray) -> np.ndarray:
            return np.where(hidden, np.array(-np.inf, x.dtype), x)

        return self._elementwise("mask_causal", (a,), masked)

    def im2col(self, x: Tile, kernel_size: int | tuple[int, int], stride: int | tuple[int, int] = 1,
               dilation: int | tuple[int, int] = 1, padding: tuple[int, int, int, int] = (0, 0, 0, 0)) -> Product:
        """Gather the conv windows of an input tile (N, C, H, W) into a patch matrix (N*OH*OW, C*KH*KW), in
        elements: row n*OH*OW + oh*OW + ow, column c*KH*KW + kh*KW + kw (torch's `unfold` order, transposed), so
        `tc.matmul(patches, w)` with w = weight.reshape(OC, C*KH*KW).T is the conv. Padding (top, bottom, left,
        right) is zeros made on chip (negative: crops), as in `TensorCore.conv2d`. ceil(N*OH*OW*C*KH*KW / lanes)
        cycles: one lane per patch element written, zeros of the padding included."""
        _check_tiles(self.session, "vector.im2col", (x,))
        if len(x.shape) != 4:
            raise ValueError(f"vector.im2col needs a 4-d input tile (N, C, H, W), got shape {x.shape}")
        kh, kw = _pair(kernel_size, "kernel_size")
        sh, sw = _pair(stride, "stride")
        dh, dw = _pair(dilation, "dilation")
        top, bottom, left, right = _padding4(padding, "vector.im2col")
        n, c, h, wd = x.shape
        oh = (h + top + bottom - dh * (kh - 1) - 1) // sh + 1
        ow = (wd + left + right - dw * (kw - 1) - 1) // sw + 1
        if oh < 1 or ow < 1:
            raise ValueError(f"vector.im2col: input tile {x.shape} with padding {tuple(padding)} is smaller than the "
                             f"{kh}x{kw} kernel (dilation {(dh, dw)})")
        out_shape = (n * oh * ow, c * kh * kw)

        def gather(x_data: np.ndarray) -> np.ndarray:
            xp = _pad_or_crop(x_data, top, bottom, left, right)
            patches = np.empty((n, oh, ow, c, kh, kw), x_data.dtype)
            for i in range(kh):
                rows = xp[:, :, i * dh:i * dh + (oh - 1) * sh + 1:sh]
                for j in range(kw):
                    window = rows[:, :, :, j * dw:j * dw + (ow - 1) * sw + 1:sw]  # (n, c, oh, ow)
                    patches[:, :, :, :, i, j] = window.transpose(0, 2, 3, 1)
            return patches.reshape(out_shape)

        return Product(self.session, "vector", "im2col", (x,), out_shape, 0,
                       ceil_div(shape_elements(out_shape), self.lanes), 0, gather)

    def _dot_py(self, a: Tile, b: Tile) -> Product:
        """sum(a * b) over all elements into a 1-element tile; ceil(elements / lanes) cycles, one MAC each
        (the reference of `_core.vector_dot`, see `_bind_core`)."""
        _check_tiles(self.session, "vector.dot", (a, b))
        n = region_elements(a.region)
        m = region_elements(b.region)
        if n != m:
            raise ValueError(f"vector.dot: operands have {n} and {m} elements")
        product = Product(self.session, "vector", "dot", (a, b), (1,), n, ceil_div(n, self.lanes), 0, _flat_dot)
        product.lane_ops = n  # (one multiply-add per element pair)
        return product

    dot = _dot_py


def _bind_core(compiled: bool) -> None:
    """Route `Product.apply` and `VectorUnit.dot` to the compiled core, or to their pure-Python reference (tests)."""
    use = compiled
    Product.apply = _core.product_apply if use else Product._apply_py  # type: ignore[method-assign]
    VectorUnit.dot = _core.vector_dot if use else VectorUnit._dot_py  # type: ignore[method-assign]


_core.bind_compute(Product, _flat_dot)
_bind_core(True)
