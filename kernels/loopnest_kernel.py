"""The generic kernel: executes any `LoopNest` (conv or matmul) on the traced memory model.

Semantics are those of `dsasim.architect.nests.loopnest` (module docstring): one loop per dimension in the nest's order; each
tensor's buffer staged in its own `GlobalHierarchy` scope (`TENSOR@LOOP`, `ways=`) at its depth, holding
the tensor's box for every loop inside; the TensorCore computes one tile at the innermost point, taking its
operands from the staged buffers (hits). Run it like a hand-written schedule: `loopnest_schedule(nest)` is a
`Schedule` for `run_schedule` (numeric mode checks it against torch), `run_loopnest` does that in one call, and
`load_nest(path)` reads the JSON written by `dsasim search --json`.

`BLOG_DEMO_NESTS` are the blog's demo schedules that are loop nests (demo1 computes on the vector unit and demo5/6
fuse several operators, so those are not), and `res2a-slab` is `dsasim.kernels.resnet_schedules`' res2a_branch2b
schedule.
"""

from __future__ import annotations

import json
import math
from operator import itemgetter
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from dsasim import (Accelerator, GlobalHierarchy, RunResult, Schedule, Segment, Session, TensorCore, TracedArray,
                    Workload, bind_tensors, run_schedule)
from dsasim.architect.model.hierarchy import LevelNest, tensor_role
from dsasim.architect.nests.loopnest import Axis, ConvProblem, LoopNest, MatmulProblem, Problem
from dsasim.geometry import stepped_box, window_rows, window_step
from dsasim.traced.counters import Counters
from dsasim.util import Region


def loopnest_workload(problem: Problem) -> Workload:
    """The `Workload` (tensor shapes and torch reference) that runs a LoopNest of `problem`."""
    ins = {t.name: problem.shape(t.name) for t in problem.tensors[:-1]}
    return Workload(problem.name, inputs=ins, outputs={problem.output.name: problem.shape(problem.output.name)},
                    reference=problem.reference, roles={name: tensor_role(problem, name) for name in ins})


def _region(axes: tuple[Axis, ...], cur: dict[str, Segment], strided: bool = False) -> Region:
    """The box of a tensor for the current tiles: plain axes take the tile, window axes the real rows read
    (strided: the stepped rows, (first, stop, step) where the step is above 1, e.g. a 1x1 stride-2 conv's)."""
    region = []
    for a in axes:
        if a.tap is None:
            region.append(cur[a.dim])
            continue
        (o0, o1), (t0, t1) = cur[a.dim], cur[a.tap]
        stepped = strided and window_step(o1 - o0, t1 - t0, a.stride, a.dilation) > 1
        region.append((stepped_box if stepped else window_rows)(o0, o1, t0, t1, a.stride, a.dilation, a.padding,
                                                                  a.size))
    return tuple(region)


def _access(tensor: TracedArray, region: Region) -> TracedArray:
    """tensor[region], a strided box (stepped slices) when a dimension of the region has a step."""
    if all(len(axis) == 2 for axis in region):
        return tensor[region]
    return tensor[tuple(slice(*axis) for axis in region)]


def _largest_box(axes: tuple[Axis, ...], cur: dict[str, Segment], loop: str, extent: int, tile: int) -> Region | None:
    """The largest box of a tensor over the tiles of `loop` (the others as in `cur`), or None if all are empty."""
    best, best_elements = None, 0
    for start in range(0, extent, tile):
        region = _region(axes, {**cur, loop: Segment(start, min(start + tile, extent))})
        elements = math.prod(b - a for a, b in region)
        if elements > best_elements:
            best, best_elements = region, elements
    return best


def execute(nest: LoopNest, s: Session, tensors: Mapping[str, TracedArray],
            level_scopes: Mapping[int, Sequence[tuple[str, str, int]]] | None = None,
            innermost: Callable[[dict[str, Segment]], None] | None = None, strided_boxes: bool = False,
            epilogue: Callable[[TracedArray], None] | None = None) -> None:
    """Run `nest` in session `s` over its traced tensors (by name). For a `LevelNest`'s outer nest:
    `level_scopes[k]` lists (tensor, level, ways) staged in a level below the SRAM at depth k (after the SRAM
    scopes there), and `innermost(tiles)` runs at the innermost point instead of the compute. strided_boxes: an
    input that does not slide loads strided boxes (only the rows its windows read, e.g. every other row of a 1x1
    stride-2 conv; `analytic` counts the same); off, every box is dense (multi-level and fused nests).
    `epilogue(out_tile)` runs on each output tile once it is final (every reduction loop at its last tile: the
    fused nodes of a network's layer, on chip before the tile is stored)."""
    problem, order = nest.problem, nest.order
    strided = frozenset(t.name for t in problem.tensors
                        if strided_boxes and not t.output and not nest.slides(t.name) and any(a.is_window for a in t.axes))
    level_scopes = level_scopes or {}
    staged: list[list[str]] = [[] for _ in range(len(order) + 1)]  # tensors whose scope opens at each depth
    sliding: dict[str, list[str]] = {}  # loop -> the tensors that slide along it
    for name in sorted(problem.tensor_names, key=nest.slides):  # a sliding tensor's scope innermost at its depth:
        staged[nest.scope_depth(name)].append(name)              # its slides resolve in the current scope
        if nest.slides(name):
            sliding.setdefault(nest.slide_loop(name), []).append(name)
    capacity: dict[str, Region | None] = {}  # a sliding tensor's largest box of the current sweep
    cur = {d: Segment(0, problem.extents[d]) for d in problem.dims}  # the current tile of every dimension
    held: dict[str, Any] = {}  # tiles staged at the innermost depth, used directly by the compute
    inner = set(staged[-1])
    tc, out_name = TensorCore(s), problem.output.name
    # an output has plain axes only (two or more), so its tile is the current tiles of its dimensions
    out_key = itemgetter(*(a.dim for a in problem.output.axes))
    reduced = tuple(d for d in problem.dims if d not in {a.dim for a in problem.output.axes})

    def operand(name: str, region: Region) -> TracedArray:
        """An input tile of the compute: the staged buffer when it is staged innermost, else an access (a hit)."""
        return held[name] if name in inner else _access(tensors[name], region)

    def compute() -> None:
        """The innermost point: the problem's tile product on the TensorCore, accumulated into the output tile."""
        if innermost is not None:
            innermost(cur)
            return
        out = held[out_name] if out_name in inner else tensors[out_name][out_key(cur)]
        product = problem.tile_product(tc, operand, cur, strided)
        if product is None:  # the window reads only padding: nothing to add, the tile still counts as written
            s.mark_written(out)
        else:
            out += product
        if epilogue is not None and all(cur[d][1] == problem.extents[d] for d in reduced):
            epilogue(out)

    plans = {n: (nest.scope_name(n), nest.ways_of(n), problem.tensor(n).axes) for n in problem.tensor_names}
    capacity.update((n, None) for n in nest.sliding)

    def open_scopes(k: int, i: int = 0) -> None:
        """Open the scopes staged at depth k from the i-th on, each accessing its box, then run depth k."""
        if i == len(staged[k]):
            open_levels(k)
            return
        name = staged[k][i]
        scope, ways, axes = plans[name]
        with GlobalHierarchy(s, scope, ways=ways):
            if name in capacity:  # a rotating buffer: sized here for the sweep, filled by `slide` in its loop
                capacity[name] = _largest_box(axes, cur, order[k], problem.extents[order[k]], nest.tile(order[k]))
            else:
                region = _region(axes, cur, name in strided)
                if all(axis[0] < axis[1] for axis in region):  # an all-padding box is not accessed
                    tile = _access(tensors[name], region)
                    if k == len(order):
                        held[name] = tile
            open_scopes(k, i + 1)

    def open_levels(k: int, i: int = 0) -> None:
        """Open the level scopes staged at depth k from the i-th on, each accessing its box, then run depth k."""
        below = level_scopes.get(k, ())
        if i == len(below):
            run(k)
            return
        name, level, ways = below[i]
        with GlobalHierarchy(s, f"{name}@{level}", ways=ways, level=level):
            region = _region(problem.tensor(name).axes, cur)
            if all(a < b for a, b in region):
                tensors[name][region]
            open_levels(k, i + 1)

    def run(k: int) -> None:
        """Depth k: the compute at the innermost point, else the loop order[k] over its tiles."""
        if k == len(order):
            compute()
            return
        d = order[k]
        ext, t = problem.extents[d], nest.tile(d)
        slides = sliding.get(d, ())
        for start in range(0, ext, t):
            cur[d] = Segment(start, min(start + t, ext))
            for name in slides:
                region = _region(plans[name][2], cur)
                if all(a < b for a, b in region):  # an all-padding box is skipped: the buffer keeps its rows
                    tensors[name].slide(region, capacity=capacity[name])
            if staged[k + 1] or k + 1 in level_scopes:
                open_scopes(k + 1)
            else:
                run(k + 1)
        cur[d] = Segment(0, ext)

    open_scopes(0)


def execute_levels(nest: LevelNest, s: Session, tensors: Mapping[str, TracedArray],
                   epilogue: Callable[[TracedArray], None] | None = None) -> None:
    """Run a `LevelNest` in session `s` (on its hardware, with levels below the SRAM): the outer nest as
    `execute`, and at its innermost point the inner loops over the outer tile, each tensor with an inner level
    staged in a `GlobalHierarchy(level=...)` scope at its inner depth; the TensorCore then reads every operand
    from its innermost level (hits). `epilogue(out_tile)`: as `execute`'s, on each inner output tile once it is
    final (every reduction loop at its last inner tile), in the output's innermost level before it is written
    back. Every box is dense (the hierarchy model counts dense boxes)."""
    problem, order = nest.problem, nest.inner.order
    staged: list[list[str]] = [[] for _ in range(len(order) + 1)]
    outer_levels: dict[int, list[tuple[str, str, int]]] = {}
    for name in problem.tensor_names:
        if name not in nest.levels:
            continue
        k = nest.inner_depth[name]
        if k is None:
            outer_levels.setdefault(nest.outer_depth[name], []).append(
                (name, nest.levels[name].name, nest.inner_ways[name]))
        else:
            staged[k].append(name)
    tc, out_name = TensorCore(s), problem.output.name
    out_key = itemgetter(*(a.dim for a in problem.output.axes))
    local: dict[str, Segment] = {}
    reduced = tuple(d for d in problem.dims if d not in {a.dim for a in problem.output.axes})

    def operand(name: str, region: Region) -> TracedArray:
        return tensors[name][region]  # resolves in the operand's innermost level: a hit there

    def compute() -> None:
        out = tensors[out_name][out_key(local)]
        product = problem.tile_product(tc, operand, local)
        if product is None:
            s.mark_written(out)
        else:
            out += product
        if epilogue is not None and all(local[d][1] == problem.extents[d] for d in reduced):
            epilogue(out)

    def open_scopes(outer: dict[str, Segment], k: int, i: int = 0) -> None:
        if i == len(staged[k]):
            run(outer, k)
            return
        name = staged[k][i]
        level = nest.levels[name].name
        with GlobalHierarchy(s, f"{name}@{level}", ways=nest.inner_ways[name], level=level):
            region = _region(problem.tensor(name).axes, local)
            if all(a < b for a, b in region):
                tensors[name][region]
            open_scopes(outer, k, i + 1)

    def run(outer: dict[str, Segment], k: int) -> None:
        if k == len(order):
            compute()
            return
        d = order[k]
        seg, t = outer[d], nest.inner_tiles[d]
        for start in range(seg[0], seg[1], t):
            local[d] = Segment(start, min(start + t, seg[1]))
            open_scopes(outer, k + 1)
        local[d] = seg

    def innermost(outer: dict[str, Segment]) -> None:
        local.update(outer)
        open_scopes(outer, 0)

    execute(nest.outer, s, tensors, outer_levels, innermost)


def loopnest_body(nest: LoopNest):
    """A schedule body `body(session, **tensors)` that executes `nest`."""

    def body(s: Session, **tensors: TracedArray) -> None:
        execute(nest, s, tensors, strided_boxes=True)

    return body


def loopnest_schedule(nest: LoopNest, name: str | None = None, description: str = "",
                      hardware: str = "blog") -> Schedule:
    """`nest` as a `Schedule` of its problem's workload (for `run_schedule`, the CLI, the timing simulator)."""
    return Schedule(name or "loopnest", loopnest_workload(nest.problem), loopnest_body(nest),
                    description or repr(nest), hardware)


def run_loopnest(nest: LoopNest, hardware: Accelerator, numeric: bool = False, record_trace: bool = True,
                 enforce_capacity: bool = True, seed: int = 0) -> RunResult:
    """Run `nest` on `hardware` (count-only by default) and return the `RunResult` (trace included)."""
    return run_schedule(loopnest_schedule(nest), hardware, numeric=numeric, seed=seed, record_trace=record_trace,
                        enforce_capacity=enforce_capacity)


def levelnest_schedule(nest: LevelNest, name: str | None = None, description: str = "") -> Schedule:
    """A `LevelNest` as a `Schedule` (for `run_schedule` on its hardware, which has levels below the SRAM)."""

    def body(s: Session, **tensors: TracedArray) -> None:
        execute_levels(nest, s, tensors)

    return Schedule(name or "levelnest", loopnest_workload(nest.problem), body,
                    description or f"{nest.problem.name} on {nest.hardware.name}", nest.hardware.name)


def run_levelnest(nest: LevelNest, numeric: bool = False, record_trace: bool = True,
                  enforce_capacity: bool = True, seed: int = 0) -> RunResult:
    """Run a `LevelNest` on its hardware (count-only by default) and return the `RunResult`."""
    return run_schedule(levelnest_schedule(nest), nest.hardware, numeric=numeric, seed=seed,
                        record_trace=record_trace, enforce_capacity=enforce_capacity)


def count_loopnest(nest: LoopNest, hardware: Accelerator, enforce_capacity: bool = True) -> Counters:
    """The fastest traced run: count-only, no trace recorded, no torch; returns the session's `Counters`
    (raises `SramOverflowError` if the nest does not fit and capacity is enforced)."""
    s = Session(hardware, numeric=False, record_trace=False, enforce_capacity=enforce_capacity)
    tensors = bind_tensors(s, loopnest_workload(nest.problem), None)
    execute(nest, s, tensors, strided_boxes=True)
    s.finish()
    return s.counters


def load_nest(path: str | Path) -> LoopNest:
    """Read a LoopNest from JSON: `LoopNest.to_json()` or the output of `dsasim search --json`."""
    data: Any = json.loads(Path(path).read_text())
    return LoopNest.from_json(data)


# ---------------------------------------------------------------------------------------------- blog demos
def blog_conv(n: int = 1, ic: int = 2048, oc: int = 512, h: int = 56, w: int = 56) -> ConvProblem:
    """The blog's 1x1 conv (2048 -> 512 channels, 56 x 56), or a reduced version of it."""
    return ConvProblem(n, ic, oc, h, w, 1, name="blog-conv" if (n, ic, oc, h, w) == (1, 2048, 512, 56, 56)
                       else None)


_CONV_ORDER = ("n", "oc", "oh", "ow", "ic", "kh", "kw")
_ROWS_FIRST = ("n", "oh", "oc", "ow", "ic", "kh", "kw")
_BLOG_NESTS = {  # name: (order, tiles, stage)
    # a scope per 24 x 2 x 56 output tile holding all three tensors' tiles
    "demo2": (_CONV_ORDER, dict(n=1, oc=24, oh=2, ow=56), {"image": "ow", "weight": "ow", "output": "ow"}),
    # all weights per batch; every output tile accumulates in the batch scope
    "demo3-1": (_CONV_ORDER, dict(n=1, oc=24, oh=2, ow=56), {"image": "ow", "weight": "n", "output": "n"}),
    # a scope per 24 output channels: their weights and outputs; image tiles reloaded
    "demo3-2": (_CONV_ORDER, dict(n=1, oc=24, oh=2, ow=56), {"image": "ow", "weight": "oc", "output": "oc"}),
    # output-stationary 8 x 56 x 56; 16-channel image and weight slices
    "demo3-3": (_CONV_ORDER, dict(n=1, oc=8, oh=56, ow=56, ic=16), {"image": "ic", "weight": "ic", "output": "ow"}),
    # the whole image per batch
    "demo4": (_CONV_ORDER, dict(n=1, oc=8, oh=56, ow=56, ic=16), {"image": "n", "weight": "ic", "output": "ow"}),
    # all weights on chip, 2-row slabs of image and output
    "weights-resident": (_ROWS_FIRST, dict(n=1, oh=2, oc=24), {"image": "oh", "weight": "top", "output": "oh"}),
    # all output channels of a 12-row slab; 16-channel slices stream
    "output-stationary-fp32": (("n", "oh", "ic", "oc", "ow", "kh", "kw"), dict(n=1, oh=12, ic=16),
                               {"image": "ic", "weight": "ic", "output": "oh"}),
}
BLOG_DEMO_NAMES = tuple(_BLOG_NESTS)


def blog_demo_nest(name: str, problem: ConvProblem | None = None) -> LoopNest:
    """The LoopNest form of a blog demo (`demo2`, `demo3-1`, `demo3-2`, `demo3-3`, `demo4`, `weights-resident`,
    `output-stationary-fp32`) on `problem` (default: the blog conv). Tiles are clamped to the extents, as the
    hand-written ports' `Segments` clamp them."""
    if name not in _BLOG_NESTS:
        raise ValueError(f"no LoopNest form of {name!r}; known: {sorted(BLOG_DEMO_NAMES)}")
    p = problem or blog_conv()
    order, tiles, stage = _BLOG_NESTS[name]
    return LoopNest(p, order, {d: min(v, p.extents[d]) for d, v in tiles.items()}, stage)


def res2a_slab_nest(rows: int = 4, ways: int = 2) -> LoopNest:
    """`dsasim.kernels.resnet_schedules.row_slab_conv` as a LoopNest: weights resident, `rows`-row slabs of image (with
    halo) and output, each slab scope `ways`-way."""
    p = ConvProblem(1, 64, 64, 56, 56, 3, padding=1, name="resnet50.res2a_branch2b")
    return LoopNest(p, _ROWS_FIRST, {"n": 1, "oh": rows},
                    {"image": "oh", "weight": "top", "output": "oh"}, {"image": ways, "output": ways})


def gemm_nest(m: int = 64, n: int = 48, k: int = 32) -> LoopNest:
    """A small output-stationary matmul nest (an example of the matmul kind)."""
    p = MatmulProblem(m, n, k)
    return LoopNest(p, ("m", "n", "k"), {"m": min(16, m), "n": min(24, n), "k": min(16, k)},
                    {"a": "k", "b": "k", "c": "n"})


# ------------------------------------------------------------------------------------- nests below the SRAM
def res2a_l1_nest() -> LevelNest:
    """res2a_branch2b on `blog-l1` as `dsasim search resnet50.res2a_branch2b --hardware blog-l1` finds it: the
    image whole in SRAM, 22-channel weight tiles held in L1w, 2-row slabs of image (with halo) in L1i and of
    output in L1acc, all 2-way; the TensorCore steps one output row at a time (the search's inner tiles are
    one pixel: the same traffic at every level, 56x the steps to trace)."""
    from dsasim.architect.model.hierarchy import InnerTiling
    from dsasim.hardware import preset

    p = ConvProblem(1, 64, 64, 56, 56, 3, padding=1, name="resnet50.res2a_branch2b")
    outer = LoopNest(p, ("oc", "oh", "n", "ow", "ic", "kh", "kw"), {"oc": 22, "oh": 2},
                     {"image": "top", "weight": "oc", "output": "oh"}, {"image": 1, "weight": 2, "output": 2})
    inner = InnerTiling(("n", "oc", "oh", "ow", "ic", "kh", "kw"), {"oh": 1},
                        {"image": "outer:oh", "weight": "outer:oc", "output": "outer:oh"},
                        {"image": 2, "weight": 2, "output": 2})
    return LevelNest(outer, inner, preset("blog-l1"))


LEVEL_SCHEDULES = [
    levelnest_schedule(res2a_l1_nest(), "res2a-branch2b-l1",
                       "ResNet-50 res2a_branch2b on blog-l1: weights held in L1w per 22 output channels, 2-row "
                       "image and output slabs in L1i and L1acc (the best nest of `dsasim search`)"),
]
