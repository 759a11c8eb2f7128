"""Schedules as data: a problem (conv or matmul) and a `LoopNest` over it.

A `LoopNest` is one loop per problem dimension, in a chosen order (outermost first), each with a tile size
(single-level tiling: the last tile of a dimension may be ragged), plus, for every tensor, the loop depth at
which its SRAM buffer is staged and the buffering ways of that buffer's scope.

Semantics (what `kernels/loopnest_kernel.py` executes and `dsasim.architect.model.analytic` counts in closed form):

* Depth k (0 <= k <= len(order)) is the point just inside the first k loops; depth 0 is above every loop,
  depth len(order) is the innermost point where the compute happens.
* A tensor staged at depth k gets its own `GlobalHierarchy` scope, opened at depth k once per iteration of
  the k loops above it (named `TENSOR@LOOP`, `LOOP` being the loop it sits in, or `top`), with
  `ways=`. On entry it accesses its *box*: for every dimension that indexes it, the current tile if the
  dimension's loop is above depth k, else the whole extent; for an image row/column (a window over an output
  position and a kernel tap), the tight range of real input rows that the box's output positions and taps read
  (padding is never loaded); for an input that does not slide, only every `window_step`-th row of it (a strided
  box, `geometry.stepped_box`: a 1x1 stride-2 conv's every other row and column; multi-level and fused nests
  load the dense range). An input box is a DMA load (an empty box, all padding, is not accessed). An output
  box is opened as zeros the first time and loaded (a read-modify-write) on later visits; it is stored when
  its scope exits. Every later access of the tensor is a hit in that buffer.
* Sliding-window reuse (`slide=`, per input tensor): when the innermost loop above a tensor's staging point that
  has more than one trip is the output position of one of its window axes (oh or ow; Timeloop's idea, taken per
  tensor: loops staged inside the tensor do not break it, see docs/model/sliding.md), the tensor may keep the overlap of
  consecutive boxes on chip instead of reloading the box. Its scope then opens just outside that loop
  (`TENSOR@LOOP` names the loop it sits in), holding one rotating buffer sized for the largest box of the sweep,
  and every trip of the loop slides the buffer to the next box (`TracedArray.slide`): only rows the buffer does
  not hold are loaded (an all-padding box is skipped).
* The innermost point computes one tile on the TensorCore: `out += conv2d(image, weight)` (with on-chip zero
  padding) or `out += matmul(a, b)`. A tile whose window reads only padding computes nothing but still marks
  its output tile written (the loop nest writes its accumulator back regardless).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Container, Iterable, Mapping, Sequence

from dsasim.geometry import Conv2dShape, stepped_box, window_rows, window_step
from dsasim.util import Region, ceil_div, check_int

__all__ = ["Axis", "TensorSpec", "Problem", "ConvProblem", "MatmulProblem", "LoopNest", "problem_from_json",
           "json_object", "window_rows", "tile_count", "last_tile"]


def tile_count(extent: int, tile: int) -> int:
    """Number of tiles of `tile` elements covering `extent` (the last may be ragged)."""
    return ceil_div(extent, tile)


def last_tile(extent: int, tile: int) -> int:
    """Size of the last (possibly ragged) tile."""
    return extent - (tile_count(extent, tile) - 1) * tile


@dataclass(frozen=True)
class Axis:
    """One dimension of a tensor: a plain loop dimension, or a window (output position `dim`, kernel tap `tap`)."""

    dim: str
    tap: str | None = None
    stride: int = 1
    dilation: int = 1
    padding: int = 0
    size: int = 0  # window axes: the input extent

    @property
    def is_window(self) -> bool:
        """True for an image row/column axis (output position x stride + tap x dilation - padding)."""
        return self.tap is not None

    def dims(self) -> tuple[str, ...]:
        """The loop dimensions this axis depends on."""
        return (self.dim,) if self.tap is None else (self.dim, self.tap)


@dataclass(frozen=True)
class TensorSpec:
    """A tensor of a problem: its name, its axes, and whether it is the (accumulated) output."""

    name: str
    axes: tuple[Axis, ...]
    output: bool = False

    @property
    def dims(self) -> frozenset[str]:
        """The loop dimensions that index this tensor."""
        return frozenset(d for a in self.axes for d in a.dims())


class Problem:
    """A computation the loop nest tiles. Subclasses: `ConvProblem`, `MatmulProblem`.

    Attributes every problem provides: `kind`, `name`, `dims` (loop dimensions), `extents` (dim -> size),
    `tensors` (inputs first, the output last), `tc_in_dim` / `tc_out_dim` (the dimensions mapped to the
    TensorCore's 16 input and 24 output channels), `windows` ((output-position dim, tap dim, axis) for every
    image window axis).
    """

    kind: str
    name: str
    dims: tuple[str, ...]
    extents: Mapping[str, int]
    tensors: tuple[TensorSpec, ...]
    tc_in_dim: str
    tc_out_dim: str

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec()!r}, name={self.name!r})"

    def __eq__(self, other: object) -> bool:  # same kind and shape (the name is a label)
        return isinstance(other, Problem) and self.spec() == other.spec()

    def __hash__(self) -> int:
        return hash(self.spec())

    # -- derived ---------------------------------------------------------------------------------------------
    @property
    def tensor_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tensors)

    def tensor(self, name: str) -> TensorSpec:
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(f"{self.name}: no tensor {name!r}; tensors are {list(self.tensor_names)}")

    @property
    def output(self) -> TensorSpec:
        return self.tensors[-1]

    @property
    def windows(self) -> tuple[Axis, ...]:
        """The window axes (image rows/columns) of the problem, in axis order."""
        return tuple(a for t in self.tensors for a in t.axes if a.is_window)

    def shape(self, tensor: str) -> tuple[int, ...]:
        """DDR shape of a tensor, in elements."""
        spec = self.tensor(tensor)
        return tuple(a.size if a.is_window else self.extents[a.dim] for a in spec.axes)

    def elements(self, tensor: str) -> int:
        return math.prod(self.shape(tensor))

    @property
    def macs(self) -> int:
        """Multiply-accumulates of the whole problem, padding taps included (as the TensorCore counts them)."""
        return math.prod(self.extents[d] for d in self.dims)

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError

    def describe(self) -> str:
        """One line: the computation and its shapes (the header of `LoopNest.format`)."""
        raise NotImplementedError

    def compute_statement(self) -> str:
        """The innermost statement of a loop nest over this problem, as pseudo-code."""
        raise NotImplementedError

    def spec(self) -> str:
        """The command-line shape spec of this problem (see `dsasim.architect.problems.layers.parse_layer`)."""
        raise NotImplementedError

    def reference(self, **tensors: Any) -> Any:
        raise NotImplementedError

    def dense_matmul(self) -> tuple[int, int, int] | None:
        """(M, N, K) when the problem is exactly a dense matmul (M x K) @ (K x N), N the output channels; else
        None (the lower bounds pick their formula by it)."""
        raise NotImplementedError

    def tile_product(self, tc: Any, operand: Callable[[str, Region], Any],
                     ranges: Mapping[str, tuple[int, int]], strided: Container[str] = ()) -> Any:
        """What one innermost tile adds to its output tile, computed on the TensorCore `tc` from
        `operand(tensor, region)` (the loop-nest kernel fetches the tile); None when the tile reads only padding.
        `ranges` maps every dimension to its current (start, stop), in elements; the tensors in `strided` are
        read as strided boxes (their window axes' stepped rows, `geometry.stepped_box`)."""
        raise NotImplementedError


class ConvProblem(Problem):
    """A 2-D convolution (NCHW, zero padding): image (N, IC, H, W), weight (OC, IC // groups, KH, KW).

    groups = 1: loop dimensions n, oc, oh, ow, ic, kh, kw; tensors image (N, IC, H, W), weight
    (OC, IC, KH, KW) (inputs) and output (N, OC, OH, OW). stride, padding and dilation are ints or (h, w) pairs.

    groups = G > 1 (grouped; depthwise when G = IC = OC): an explicit group dimension g, and oc / ic run over
    the channels *of one group*: loop dimensions n, g, oc, oh, ow, ic, kh, kw with extents oc = OC // G and
    ic = IC // G; the tensors carry the group as their own axis: image (N, G, IC/G, H, W), weight
    (G, OC/G, IC/G, KH, KW), output (N, G, OC/G, OH, OW). These are the NCHW tensors (and torch's grouped
    weight) reshaped, the same bytes in the same DDR order, so a DMA box moves the same bytes it would in NCHW.
    Why this form: every box of every nest is then a true box (a tile of g x a tile of ic is g_len x ic_len
    elements, whatever the tiles), so the analytic model needs no new term (g is one more plain dimension that
    indexes all three tensors and is never a reduction) and stays exact, the search enumerates g like any other
    dimension with no validity rule, and the TensorCore maps each group to its own pass of IC/G x OC/G channels
    (`TensorCore.conv2d` on the 5-d grouped tiles): a depthwise conv uses 1 of the 16 input and 1 of the 24
    output channels per step. The alternative, an oc loop over all channels whose input-channel box is the
    union of the groups it touches, gives boxes that are not boxes (a partial ic tile of two groups) and
    traffic that depends on how tiles straddle group boundaries.
    """

    kind = "conv"

    def __init__(self, n: int, ic: int, oc: int, h: int, w: int, kh: int, kw: int | None = None,
                 stride: int | tuple[int, int] = 1, padding: int | tuple[int, int] = 0,
                 dilation: int | tuple[int, int] = 1, name: str | None = None, groups: int = 1) -> None:
        owner = f"ConvProblem {name!r}" if name else "ConvProblem"
        kw = kh if kw is None else kw
        for label, v in (("n", n), ("ic", ic), ("oc", oc), ("h", h), ("w", w), ("kh", kh), ("kw", kw),
                         ("groups", groups)):  # this signature's own names; the shape checks the rest
            check_int(f"{owner}: {label}", v, 1)
        self.geometry = g = Conv2dShape(ic, oc, (kh, kw), stride, padding, dilation, groups, (n, ic, h, w),
                                        owner=owner)
        self.n, self.ic, self.oc, self.h, self.w, self.kh, self.kw = n, ic, oc, h, w, kh, kw
        self.stride, self.padding, self.dilation, self.groups = g.stride, g.padding, g.dilation, groups
        _, _, oh, ow = g.output_shape
        self.oh, self.ow = oh, ow
        self.name = name or self.spec()
        (sh, sw), (ph, pw), (dh, dw) = self.stride, self.padding, self.dilation
        rows = Axis("oh", "kh", sh, dh, ph, h)
        cols = Axis("ow", "kw", sw, dw, pw, w)
        group = (Axis("g"),) if groups > 1 else ()  # the group axis of every tensor (see the class docstring)
        self.dims = ("n", *(a.dim for a in group), "oc", "oh", "ow", "ic", "kh", "kw")
        self.extents = {"n": n, **{a.dim: groups for a in group}, "oc": oc // groups, "oh": oh, "ow": ow,
                        "ic": ic // groups, "kh": kh, "kw": kw}
        self.tensors = (
            TensorSpec("image", (Axis("n"), *group, Axis("ic"), rows, cols)),
            TensorSpec("weight", (*group, Axis("oc"), Axis("ic"), Axis("kh"), Axis("kw"))),
            TensorSpec("output", (Axis("n"), *group, Axis("oc"), Axis("oh"), Axis("ow")), output=True),
        )
        self.tc_in_dim, self.tc_out_dim = "ic", "oc"  # per group: each group is its own TensorCore pass

    def spec(self) -> str:
        (sh, sw), (ph, pw), (dh, dw) = self.stride, self.padding, self.dilation
        parts = [f"n={self.n}", f"ic={self.ic}", f"oc={self.oc}", f"h={self.h}", f"w={self.w}"]
        parts.append(f"k={self.kh}" if self.kh == self.kw else f"kh={self.kh},kw={self.kw}")
        parts.append(f"s={sh}" if sh == sw else f"sh={sh},sw={sw}")
        parts.append(f"p={ph}" if ph == pw else f"ph={ph},pw={pw}")
        if (dh, dw) != (1, 1):
            parts.append(f"d={dh}" if dh == dw else f"dh={dh},dw={dw}")
        if self.groups > 1:
            parts.append(f"g={self.groups}")
        return "conv:" + ",".join(parts)

    def describe(self) -> str:
        grouped = ""
        if self.groups > 1:
            kind = "depthwise, " if self.groups == self.ic == self.oc else ""
            grouped = (f" in {self.groups} groups ({kind}{self.ic // self.groups}->{self.oc // self.groups} channels "
                       f"each)")
        return (f"conv {self.ic}->{self.oc} channels{grouped}, {self.kh}x{self.kw} kernel, input {self.n}x{self.ic}x"
                f"{self.h}x{self.w}, stride {self.stride}, padding {self.padding}, dilation {self.dilation} -> output "
                f"{self.n}x{self.oc}x{self.oh}x{self.ow}")

    def compute_statement(self) -> str:
        if self.groups > 1:
            return ("output[n, g, oc, oh, ow] += conv2d(image[n, g, ic, rows(oh,kh), rows(ow,kw)], "
                    "weight[g, oc, ic, kh, kw])  (each group its own pass)")
        return "output[n, oc, oh, ow] += conv2d(image[n, ic, rows(oh,kh), rows(ow,kw)], weight[oc, ic, kh, kw])"

    def to_json(self) -> dict[str, Any]:
        data = {"kind": "conv", "name": self.name, "n": self.n, "ic": self.ic, "oc": self.oc, "h": self.h,
                "w": self.w, "kh": self.kh, "kw": self.kw, "stride": list(self.stride),
                "padding": list(self.padding), "dilation": list(self.dilation)}
        if self.groups > 1:  # absent for groups = 1, so ungrouped JSON stays as it was
            data["groups"] = self.groups
        return data

    def reference(self, image: Any, weight: Any) -> dict[str, Any]:
        """torch's conv2d of the problem's tensors (grouped: on their NCHW views, the output reshaped back)."""
        import torch.nn.functional as F
        g = self.groups
        if g > 1:
            image = image.reshape(self.n, self.ic, self.h, self.w)
            weight = weight.reshape(self.oc, self.ic // g, self.kh, self.kw)
        out = F.conv2d(image, weight, stride=self.stride, padding=self.padding, dilation=self.dilation, groups=g)
        return {"output": out.reshape(self.shape("output"))}

    def dense_matmul(self) -> tuple[int, int, int] | None:
        # a 1x1 kernel without padding reads a dense (N*OH*OW) x IC image operand, whatever the stride; a grouped
        # conv is G block-diagonal matmuls, not one dense one
        if self.kh == 1 and self.kw == 1 and self.padding == (0, 0) and self.groups == 1:
            return self.n * self.oh * self.ow, self.oc, self.ic
        return None

    def tile_product(self, tc: Any, operand: Callable[[str, Region], Any],
                     ranges: Mapping[str, tuple[int, int]], strided: Container[str] = ()) -> Any:
        n, oc, ic, kh, kw = ranges["n"], ranges["oc"], ranges["ic"], ranges["kh"], ranges["kw"]
        rows, cols = self.geometry.window(0, *ranges["oh"], *kh), self.geometry.window(1, *ranges["ow"], *kw)
        if rows.empty or cols.empty:
            return None
        group = (ranges["g"],) if self.groups > 1 else ()  # grouped: 5-d tiles, each group its own pass
        if "image" not in strided:
            x = operand("image", (n, *group, ic, (rows.first, rows.stop), (cols.first, cols.stop)))
            return tc.conv2d(x, operand("weight", (*group, oc, ic, kh, kw)), stride=self.stride,
                             dilation=self.dilation, padding=rows.pad + cols.pad)
        # a strided box holds every step-th row of the window: the conv over it takes stride / step and
        # dilation / step (the step divides both where their range has more than one position), padding in steps
        axes, stride, dilation, pad = [], [], [], ()
        for axis, (o0, o1), (t0, t1), win in ((0, ranges["oh"], kh, rows), (1, ranges["ow"], kw, cols)):
            s, d, p = self.stride[axis], self.dilation[axis], self.padding[axis]
            box = stepped_box(o0, o1, t0, t1, s, d, p, self.geometry.input_shape[2 + axis])
            step = window_step(o1 - o0, t1 - t0, s, d)
            # one held row names itself whatever the step: pass one above 1 so the access is a strided lookup,
            # which finds it in a strided buffer too
            axes.append((box[0], box[1], 2) if box[1] - box[0] == 1 else box)
            stride.append(s // step if o1 - o0 > 1 else 1)
            dilation.append(d // step if t1 - t0 > 1 else 1)
            before = (win.first - win.lo) // step
            pad += (before, (win.hi - 1 - win.lo) // step + 1 - len(range(*box)) - before)
        x = operand("image", (n, *group, ic, *axes))
        return tc.conv2d(x, operand("weight", (*group, oc, ic, kh, kw)), stride=tuple(stride),
                         dilation=tuple(dilation), padding=pad)


class MatmulProblem(Problem):
    """A matrix product c (M, N) = a (M, K) @ b (K, N). Loop dimensions m, n, k; k maps to the TensorCore's
    16 input channels and n to its 24 output channels (like `TensorCore.matmul`)."""

    kind = "matmul"

    def __init__(self, m: int, n: int, k: int, name: str | None = None) -> None:
        owner = f"MatmulProblem {name!r}" if name else "MatmulProblem"
        for label, v in (("m", m), ("n", n), ("k", k)):
            check_int(f"{owner}: {label}", v, 1)
        self.m, self.n, self.k = m, n, k
        self.name = name or self.spec()
        self.dims = ("m", "n", "k")
        self.extents = {"m": m, "n": n, "k": k}
        self.tensors = (
            TensorSpec("a", (Axis("m"), Axis("k"))),
            TensorSpec("b", (Axis("k"), Axis("n"))),
            TensorSpec("c", (Axis("m"), Axis("n")), output=True),
        )
        self.tc_in_dim, self.tc_out_dim = "k", "n"

    def spec(self) -> str:
        return f"gemm:m={self.m},n={self.n},k={self.k}"

    def describe(self) -> str:
        return f"matmul c[{self.m}x{self.n}] += a[{self.m}x{self.k}] @ b[{self.k}x{self.n}]"

    def compute_statement(self) -> str:
        return "c[m, n] += a[m, k] @ b[k, n]"

    def to_json(self) -> dict[str, Any]:
        return {"kind": "matmul", "name": self.name, "m": self.m, "n": self.n, "k": self.k}

    def reference(self, a: Any, b: Any) -> dict[str, Any]:
        return {"c": a @ b}

    def dense_matmul(self) -> tuple[int, int, int] | None:
        return self.m, self.n, self.k

    def tile_product(self, tc: Any, operand: Callable[[str, Region], Any],
                     ranges: Mapping[str, tuple[int, int]], strided: Container[str] = ()) -> Any:
        m, n, k = ranges["m"], ranges["n"], ranges["k"]  # no window axes: nothing is strided
        return tc.matmul(operand("a", (m, k)), operand("b", (k, n)))


def json_object(data: Any, what: str, required: Sequence[str]) -> Mapping[str, Any]:
    """`data` if it is a JSON object holding every `required` key; ValueError naming what is missing otherwise
    (a bare KeyError says neither what was being read nor what to fix)."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{what}: expected a JSON object, got {type(data).__name__}")
    missing = [k for k in required if k not in data]
    if missing:
        raise ValueError(f"{what}: missing key(s) {missing}; give the object as its to_json() writes it")
    return data


_PROBLEM_KEYS = {"conv": ("n", "ic", "oc", "h", "w", "kh", "kw", "stride", "padding", "dilation"),
                 "matmul": ("m", "n", "k")}


def problem_from_json(data: Mapping[str, Any]) -> Problem:
    """Rebuild a problem from `Problem.to_json()`; ValueError for a missing key or a malformed value."""
    kind = json_object(data, "problem JSON", ("kind",))["kind"]
    if kind not in _PROBLEM_KEYS:
        raise ValueError(f"unknown problem kind {kind!r}; expected 'conv' or 'matmul'")
    json_object(data, f"{kind} problem JSON", _PROBLEM_KEYS[kind])
    try:
        if kind == "conv":
            return ConvProblem(data["n"], data["ic"], data["oc"], data["h"], data["w"], data["kh"], data["kw"],
                               tuple(data["stride"]), tuple(data["padding"]), tuple(data["dilation"]),
                               name=data.get("name"), groups=data.get("groups", 1))
        return MatmulProblem(data["m"], data["n"], data["k"], name=data.get("name"))
    except TypeError as err:  # e.g. a stride given as a number where a pair is written
        raise ValueError(f"{kind} problem JSON: a malformed value ({err})") from None


_TOP = "top"


def _known(what: str, keys: Iterable[str], known: Sequence[str], noun: str) -> None:
    """ValueError naming the keys of a LoopNest argument that are not among `known` (dimensions or tensors)."""
    bad = sorted(set(keys) - set(known))
    if bad:
        raise ValueError(f"LoopNest {what}: unknown {noun}(s) {bad}; {noun}s are {list(known)}")


@dataclass(frozen=True, init=False)
class LoopNest:
    """A schedule as data: loop order, tile sizes, staging depth and buffering ways per tensor.

    LoopNest(problem, order, tiles, stage, ways=None)

    * order: every dimension of the problem once, outermost first.
    * tiles: dim -> tile size (1 <= tile <= extent); dimensions left out take their full extent (one trip).
    * stage: tensor -> where its buffer's scope opens: a depth 0..len(order), the name of the loop it sits in
      (the scope opens inside that loop), or None / "top" (above every loop). Every tensor must be staged.
    * ways: tensor -> buffering ways of its scope (N-way buffering; default 1; capacity counts ways x the
      buffer). `buffers=` is an alias of `ways=` (the blog-style name of `GlobalHierarchy(buffers=N)`); the
      JSON key is "ways" (`from_json` also reads the older "buffers").
    * slide: the input tensors that use sliding-window reuse (module docstring); each needs the innermost loop
      above its staging point with more than one trip to be the output position of one of its window axes.
    Invalid values raise ValueError saying which and why.
    """

    problem: Problem
    order: tuple[str, ...]
    tiles: tuple[int, ...]  # per problem dimension, in problem.dims order
    stage: tuple[int, ...]  # per tensor, in problem.tensors order: depth 0..len(order)
    ways: tuple[int, ...]  # per tensor
    slide: tuple[bool, ...]  # per tensor: sliding-window reuse along its slide loop

    def __init__(self, problem: Problem, order: Sequence[str], tiles: Mapping[str, int] | None = None,
                 stage: Mapping[str, int | str | None] | None = None, ways: Mapping[str, int] | None = None,
                 *, buffers: Mapping[str, int] | None = None, slide: Iterable[str] = ()) -> None:
        if not isinstance(problem, Problem):
            raise TypeError(f"LoopNest needs a ConvProblem or MatmulProblem, got {type(problem).__name__}")
        dims, names = problem.dims, problem.tensor_names
        order = tuple(order)
        _known("order", order, dims, "dimension")
        dup = sorted({d for d in order if order.count(d) > 1})
        if dup:
            raise ValueError(f"LoopNest order: dimension(s) {dup} appear more than once; give each loop once")
        missing = [d for d in dims if d not in order]
        if missing:
            raise ValueError(f"LoopNest order: dimension(s) {missing} are missing; the order must list every "
                             f"dimension of {list(dims)} once (a loop with tile = extent runs once)")
        tiles = dict(tiles or {})
        _known("tiles", tiles, dims, "dimension")
        tile_tuple = []
        for d in dims:
            ext = problem.extents[d]
            t = tiles.get(d, ext)
            if isinstance(t, bool) or not isinstance(t, int):
                raise ValueError(f"LoopNest tiles[{d!r}] must be an integer, got {t!r}")
            if t <= 0:
                raise ValueError(f"LoopNest tiles[{d!r}] = {t}: a tile must hold at least one element (tile > 0)")
            if t > ext:
                raise ValueError(f"LoopNest tiles[{d!r}] = {t} exceeds the extent {ext} of {d}; use {ext} for "
                                 f"one untiled trip")
            tile_tuple.append(t)
        stage = dict(stage or {})
        _known("stage", stage, names, "tensor")
        unstaged = [n for n in names if n not in stage]
        if unstaged:
            raise ValueError(f"LoopNest stage: tensor(s) {unstaged} have no staging level; every tensor needs a "
                             f"buffer: give a depth 0..{len(order)}, a loop name from {list(order)} or 'top'")
        depths = tuple(self._depth(n, stage[n], order) for n in names)
        if ways is not None and buffers is not None:
            raise ValueError("LoopNest: give ways= or its alias buffers=, not both")
        label = "buffers" if buffers is not None else "ways"
        given = dict((buffers if buffers is not None else ways) or {})
        _known(label, given, names, "tensor")
        way_tuple = []
        for n in names:
            w = given.get(n, 1)
            if isinstance(w, bool) or not isinstance(w, int) or w < 1:
                raise ValueError(f"LoopNest {label}[{n!r}] must be an integer >= 1 (1 = single, 2 = ping-pong), "
                                 f"got {w!r}")
            way_tuple.append(w)
        if isinstance(slide, str):
            raise ValueError(f"LoopNest slide: give a list of tensor names, got the string {slide!r}")
        slid = set(slide)
        _known("slide", slid, names, "tensor")
        object.__setattr__(self, "problem", problem)
        object.__setattr__(self, "order", order)
        object.__setattr__(self, "tiles", tuple(tile_tuple))
        object.__setattr__(self, "stage", depths)
        object.__setattr__(self, "ways", tuple(way_tuple))
        object.__setattr__(self, "slide", tuple(n in slid for n in names))
        for n in names:
            if n in slid:
                self._check_slide(n)

    def _check_slide(self, tensor: str) -> None:
        """ValueError unless `tensor` can slide (see `slide_loop`)."""
        spec = self.problem.tensor(tensor)
        if spec.output:
            raise ValueError(f"LoopNest slide: {tensor!r} is the output; only an input's box slides (the output "
                             f"accumulates in place)")
        windows = [a.dim for a in spec.axes if a.is_window]
        if not windows:
            raise ValueError(f"LoopNest slide: {tensor!r} has no window axis (image rows or columns): its boxes "
                             f"never overlap, so there is nothing to keep")
        tiled = [d for d in self.above(tensor) if self.trips(d) > 1]
        if not tiled:
            raise ValueError(f"LoopNest slide: {tensor!r} slides along the innermost loop above its staging point "
                             f"with more than one trip, and it has none; stage it inside a tiled "
                             f"{' or '.join(windows)} loop, or do not slide it")
        if tiled[-1] not in windows:
            raise ValueError(f"LoopNest slide: {tensor!r} slides along the innermost loop above its staging point "
                             f"with more than one trip, which must be one of its window loops {windows}, but it is "
                             f"{tiled[-1]!r}; put {' or '.join(windows)} innermost above it, or do not slide it")

    @staticmethod
    def _depth(tensor: str, where: int | str | None, order: tuple[str, ...]) -> int:
        if where is None or where == _TOP:
            return 0
        if isinstance(where, bool):
            raise ValueError(f"LoopNest stage[{tensor!r}]: {where!r} is not a depth or a loop name")
        if isinstance(where, int):
            if not 0 <= where <= len(order):
                raise ValueError(f"LoopNest stage[{tensor!r}] = {where}: a depth must lie in 0..{len(order)} "
                                 f"(0 = above every loop, {len(order)} = innermost); a buffer staged below the "
                                 f"compute would not exist when the compute runs")
            return where
        if isinstance(where, str):
            if where not in order:
                raise ValueError(f"LoopNest stage[{tensor!r}] = {where!r}: not a loop of this nest; use one of "
                                 f"{list(order)} (the scope opens inside that loop) or 'top'")
            return order.index(where) + 1
        raise ValueError(f"LoopNest stage[{tensor!r}]: expected a depth, a loop name or 'top', got {where!r}")

    # -- accessors -----------------------------------------------------------------------------------------
    def tile(self, dim: str) -> int:
        """Tile size of a dimension."""
        return self.tiles[self.problem.dims.index(dim)]

    def trips(self, dim: str) -> int:
        """Trip count of a dimension's loop: ceil(extent / tile)."""
        return tile_count(self.problem.extents[dim], self.tile(dim))

    def depth(self, tensor: str) -> int:
        """Staging depth of a tensor (0 = above every loop)."""
        return self.stage[self.problem.tensor_names.index(tensor)]

    def ways_of(self, tensor: str) -> int:
        """Buffering ways of a tensor's scope."""
        return self.ways[self.problem.tensor_names.index(tensor)]

    @property
    def buffers(self) -> tuple[int, ...]:
        """Alias of `ways` (per tensor, in problem.tensors order)."""
        return self.ways

    def slides(self, tensor: str) -> bool:
        """Whether a tensor uses sliding-window reuse."""
        return self.slide[self.problem.tensor_names.index(tensor)]

    def slide_loop(self, tensor: str) -> str | None:
        """The loop a sliding tensor slides along (the innermost loop above it with more than one trip), else
        None."""
        if not self.slides(tensor):
            return None
        return [d for d in self.above(tensor) if self.trips(d) > 1][-1]

    def scope_depth(self, tensor: str) -> int:
        """The depth where a tensor's scope opens: its staging depth, or for a sliding tensor just outside its
        slide loop (the scope holds the rotating buffer for the whole sweep)."""
        loop = self.slide_loop(tensor)
        return self.depth(tensor) if loop is None else self.order.index(loop)

    def loop_of(self, tensor: str) -> str:
        """The loop a tensor is staged in ('top' when above every loop)."""
        k = self.depth(tensor)
        return _TOP if k == 0 else self.order[k - 1]

    def above(self, tensor: str) -> tuple[str, ...]:
        """Loops above a tensor's staging point, outermost first."""
        return self.order[:self.depth(tensor)]

    def scope_name(self, tensor: str) -> str:
        """Name of the tensor's scope in the trace: TENSOR@LOOP, LOOP the loop the scope sits in."""
        k = self.scope_depth(tensor)
        return f"{tensor}@{_TOP if k == 0 else self.order[k - 1]}"

    @property
    def tile_map(self) -> dict[str, int]:
        return dict(zip(self.problem.dims, self.tiles))

    def iterations(self) -> int:
        """Innermost iterations (tile computes) of the nest."""
        return math.prod(self.trips(d) for d in self.problem.dims)

    def replace(self, order: Sequence[str] | None = None, tiles: Mapping[str, int] | None = None,
                stage: Mapping[str, int | str | None] | None = None,
                ways: Mapping[str, int] | None = None, *, buffers: Mapping[str, int] | None = None,
                slide: Iterable[str] | None = None) -> "LoopNest":
        """A copy with some fields replaced (mappings update the existing ones; stage values as in __init__;
        `buffers=` is an alias of `ways=`; `slide` replaces the sliding tensors)."""
        if ways is not None and buffers is not None:
            raise ValueError("LoopNest.replace: give ways= or its alias buffers=, not both")
        names = self.problem.tensor_names
        t = self.tile_map
        t.update(tiles or {})
        new_order = tuple(order) if order is not None else self.order
        if stage is None and order is not None:  # keep each tensor inside the same loop
            st: dict[str, Any] = {n: self.loop_of(n) for n in names}
        else:
            st = {n: self.depth(n) for n in names}
        st.update(stage or {})
        w = dict(zip(names, self.ways))
        w.update((buffers if buffers is not None else ways) or {})
        return LoopNest(self.problem, new_order, t, st, w, slide=self.sliding if slide is None else slide)

    @property
    def sliding(self) -> tuple[str, ...]:
        """The tensors that use sliding-window reuse."""
        return tuple(n for n, s in zip(self.problem.tensor_names, self.slide) if s)

    # -- serialisation ---------------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (stable key order) that `LoopNest.from_json` turns back into the same nest."""
        names = self.problem.tensor_names
        data = {
            "problem": self.problem.to_json(),
            "order": list(self.order),
            "tiles": {d: t for d, t in zip(self.problem.dims, self.tiles)},
            "stage": {n: self.loop_of(n) for n in names},
            "ways": {n: w for n, w in zip(names, self.ways)},
        }
        if self.sliding:  # absent when no tensor slides, so such JSON stays as it was
            data["slide"] = list(self.sliding)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "LoopNest":
        """Rebuild a nest from `to_json()` output (also accepts a search result with a `loop_nest` key)."""
        if isinstance(data, Mapping) and "loop_nest" in data and "problem" not in data:
            data = data["loop_nest"]
        problem = problem_from_json(json_object(data, "LoopNest JSON", ("problem", "order"))["problem"])
        return cls(problem, data["order"], data.get("tiles"), data.get("stage"),
                   data.get("ways", data.get("buffers")),  # "buffers": JSON written before the rename
                   slide=data.get("slide", ()))

    def key(self) -> tuple:
        """A hashable identity (problem spec, order, tiles, stage, ways, slide)."""
        return (self.problem.spec(), self.order, self.tiles, self.stage, self.ways, self.slide)

    def __hash__(self) -> int:
        return hash(self.key())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LoopNest) and self.key() == other.key()

    # -- boxes -------------------------------------------------------------------------------------------------
    def box(self, tensor: str, ranges: Mapping[str, tuple[int, int]], strided: bool = False) -> Region:
        """The region of `tensor` for the given dimension ranges (full extents where absent); window axes give
        the tight range of real input rows (possibly empty), strided: their stepped rows (`stepped_box`, what the
        kernel loads for an input that does not slide)."""
        ext = self.problem.extents
        region = []
        for a in self.problem.tensor(tensor).axes:
            o0, o1 = ranges.get(a.dim, (0, ext[a.dim]))
            if a.tap is None:
                region.append((o0, o1))
            else:
                t0, t1 = ranges.get(a.tap, (0, ext[a.tap]))
                rows = stepped_box if strided else window_rows
                region.append(rows(o0, o1, t0, t1, a.stride, a.dilation, a.padding, a.size))
        return tuple(region)

    # -- readable form -----------------------------------------------------------------------------------------
    def format(self, word_bytes: int = 1) -> str:
        """The nest as readable loops: staging points with their boxes (largest instance) and the compute."""
        p = self.problem
        names = p.tensor_names
        lines = []
        lines.append(f"# {p.name}: {p.describe()}")
        single = [d for d in self.order if self.trips(d) == 1]
        if single:
            lines.append(f"# loops with one trip (the whole extent, not shown): {', '.join(single)}")

        def sym(d: str, k: int) -> str:
            return d if d in self.order[:k] else "*"

        def stage_line(n: str, k: int, indent: str) -> str:
            spec = p.tensor(n)
            parts = []
            for a in spec.axes:
                if a.tap is None:
                    parts.append(sym(a.dim, k) if a.dim in self.order[:k] else f"0:{p.extents[a.dim]}")
                else:
                    o, t = a.dim in self.order[:k], a.tap in self.order[:k]
                    if not o and not t:
                        parts.append(f"0:{a.size}")
                    else:
                        parts.append(f"rows({a.dim if o else '*'},{a.tap if t else '*'})")
            ways = self.ways_of(n)
            verb = "accumulate" if spec.output else "load"
            if self.slides(n):
                verb = f"slide along {self.slide_loop(n)}: a rotating buffer, only new rows loaded"
            return (f"{indent}stage {n}[{', '.join(parts)}]  ({verb}; scope {self.scope_name(n)}, "
                    f"{ways}-way)")

        depth_of = {n: self.depth(n) for n in names}
        indent = ""
        for k in range(len(self.order) + 1):
            for n in names:
                if depth_of[n] == k:
                    lines.append(stage_line(n, k, indent))
            if k == len(self.order):
                break
            d = self.order[k]
            ext, t = p.extents[d], self.tile(d)
            trips = self.trips(d)
            if trips == 1:  # listed in the header; the loop runs once over the whole extent
                continue
            rag = "" if ext % t == 0 else f", last tile {last_tile(ext, t)}"
            lines.append(f"{indent}for {d} in 0:{ext} step {t}:   # {trips} trips{rag}")
            indent += "  "
        lines.append(f"{indent}{p.compute_statement()}   # TensorCore")
        return "\n".join(lines)

    def __repr__(self) -> str:
        names = self.problem.tensor_names
        st = {n: self.loop_of(n) for n in names}
        slid = f", slide={list(self.sliding)}" if self.sliding else ""
        return (f"LoopNest({self.problem.name!r}, order={list(self.order)}, tiles={self.tile_map}, stage={st}, "
                f"ways={dict(zip(names, self.ways))}{slid})")
