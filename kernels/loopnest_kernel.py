"""The generic kernel: executes any `LoopNest` (conv or matmul) on the traced memory model.

Semantics are those of `dsasim.architect.loopnest` (module docstring): one loop per dimension in the nest's order; each
tensor's buffer staged in its own `GlobalHierarchy` scope (`TENSOR@LOOP`, `buffers=ways`) at its depth, holding
the tensor's box for every loop inside; the TensorCore computes one tile at the innermost point, taking its
operands from the staged buffers (hits). Run it like a hand-written schedule: `loopnest_schedule(nest)` is a
`Schedule` for `run_schedule` (numeric mode checks it against torch), `run_loopnest` does that in one call, and
`load_nest(path)` reads the JSON written by `dsasim search --json`.

`BLOG_DEMO_NESTS` are the blog's demo schedules that are loop nests (demo1 computes on the vector unit and demo5/6
fuse several operators, so those are not), and `res2a-slab` is `kernels.resnet_schedules`' res2a_branch2b
schedule.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Mapping

from dsasim import (Accelerator, Counters, GlobalHierarchy, RunResult, Schedule, Segment, Session, TensorCore,
                    TracedArray, Workload, bind_tensors, run_schedule)
from dsasim.architect.geometry import window, window_rows
from dsasim.architect.loopnest import Axis, ConvProblem, LoopNest, MatmulProblem, Problem


def loopnest_workload(problem: Problem) -> Workload:
    """The `Workload` (tensor shapes and torch reference) that runs a LoopNest of `problem`."""
    ins = {t.name: problem.shape(t.name) for t in problem.tensors[:-1]}
    return Workload(problem.name, inputs=ins, outputs={problem.output.name: problem.shape(problem.output.name)},
                    reference=problem.reference)


def _region(axes: tuple[Axis, ...], cur: dict[str, Segment]) -> tuple[tuple[int, int], ...]:
    """The box of a tensor for the current tiles: plain axes take the tile, window axes the real rows read."""
    return tuple([cur[a.dim] if a.tap is None else window_rows(*cur[a.dim], *cur[a.tap], a.stride, a.dilation,
                                                                a.padding, a.size) for a in axes])


def _conv_compute(nest: LoopNest, s: Session, tensors: Mapping[str, TracedArray], held: dict, inner: set,
                  cur: dict[str, Segment]) -> Callable[[], None]:
    """The innermost step of a conv nest: out += conv2d(image tile, weight tile) with on-chip zero padding."""
    p, tc = nest.problem, TensorCore(s)
    rows_geom, cols_geom = ((a.stride, a.dilation, a.padding, a.size) for a in p.windows)
    image, weight, output = (tensors[n] for n in p.tensor_names)
    image_held, weight_held, output_held = ("image" in inner, "weight" in inner, "output" in inner)

    def compute() -> None:
        n, oc, ic, kh, kw = cur["n"], cur["oc"], cur["ic"], cur["kh"], cur["kw"]
        oh, ow = cur["oh"], cur["ow"]
        out = held["output"] if output_held else output[n, oc, oh, ow]
        rows = window(oh[0], oh[1], kh[0], kh[1], *rows_geom)
        cols = window(ow[0], ow[1], kw[0], kw[1], *cols_geom)
        if rows.first == rows.stop or cols.first == cols.stop:  # the window reads only padding: nothing to add
            s.mark_written(out)
            return
        x = held["image"] if image_held else image[n, ic, (rows.first, rows.stop), (cols.first, cols.stop)]
        w = held["weight"] if weight_held else weight[oc, ic, kh, kw]
        out += tc.conv2d(x, w, stride=p.stride, dilation=p.dilation, padding=rows.pad + cols.pad)

    return compute


def _matmul_compute(nest: LoopNest, s: Session, tensors: Mapping[str, TracedArray], held: dict, inner: set,
                    cur: dict[str, Segment]) -> Callable[[], None]:
    """The innermost step of a matmul nest: c += a @ b."""
    tc = TensorCore(s)
    a, b, c = (tensors[n] for n in nest.problem.tensor_names)

    def compute() -> None:
        m, n, k = cur["m"], cur["n"], cur["k"]
        out = held["c"] if "c" in inner else c[m, n]
        out += tc.matmul(held["a"] if "a" in inner else a[m, k], held["b"] if "b" in inner else b[k, n])

    return compute


def execute(nest: LoopNest, s: Session, tensors: Mapping[str, TracedArray]) -> None:
    """Run `nest` in session `s` over its traced tensors (by name)."""
    problem, order = nest.problem, nest.order
    staged: list[list[str]] = [[] for _ in range(len(order) + 1)]  # tensors staged at each depth
    for name in problem.tensor_names:
        staged[nest.depth(name)].append(name)
    cur = {d: Segment(0, problem.extents[d]) for d in problem.dims}  # the current tile of every dimension
    held: dict[str, Any] = {}  # tiles staged at the innermost depth, used directly by the compute
    inner = set(staged[-1])
    make = _conv_compute if isinstance(problem, ConvProblem) else _matmul_compute
    compute = make(nest, s, tensors, held, inner, cur)

    plans = {n: (nest.scope_name(n), nest.ways_of(n), problem.tensor(n).axes) for n in problem.tensor_names}

    def open_scopes(k: int, i: int = 0) -> None:
        """Open the scopes staged at depth k from the i-th on, each accessing its box, then run depth k."""
        if i == len(staged[k]):
            run(k)
            return
        name = staged[k][i]
        scope, ways, axes = plans[name]
        with GlobalHierarchy(s, scope, buffers=ways):
            region = _region(axes, cur)
            if all(a < b for a, b in region):  # an all-padding box is not accessed
                tile = tensors[name][region]
                if k == len(order):
                    held[name] = tile
            open_scopes(k, i + 1)

    def run(k: int) -> None:
        """Depth k: the compute at the innermost point, else the loop order[k] over its tiles."""
        if k == len(order):
            compute()
            return
        d = order[k]
        ext, t = problem.extents[d], nest.tile(d)
        for start in range(0, ext, t):
            cur[d] = Segment(start, min(start + t, ext))
            if staged[k + 1]:
                open_scopes(k + 1)
            else:
                run(k + 1)
        cur[d] = Segment(0, ext)

    open_scopes(0)


def loopnest_body(nest: LoopNest):
    """A schedule body `body(session, **tensors)` that executes `nest`."""

    def body(s: Session, **tensors: TracedArray) -> None:
        execute(nest, s, tensors)

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


def count_loopnest(nest: LoopNest, hardware: Accelerator, enforce_capacity: bool = True) -> Counters:
    """The fastest traced run: count-only, no trace recorded, no torch; returns the session's `Counters`
    (raises `SramOverflowError` if the nest does not fit and capacity is enforced)."""
    s = Session(hardware, numeric=False, record_trace=False, enforce_capacity=enforce_capacity)
    tensors = bind_tensors(s, loopnest_workload(nest.problem), None)
    execute(nest, s, tensors)
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


def blog_demo_nest(name: str, problem: ConvProblem | None = None) -> LoopNest:
    """The LoopNest form of a blog demo (`demo2`, `demo3-1`, `demo3-2`, `demo3-3`, `demo4`, `weights-resident`,
    `output-stationary-fp32`) on `problem` (default: the blog conv). Tiles are clamped to the extents, as the
    hand-written ports' `Segments` clamp them."""
    p = problem or blog_conv()

    def tiles(**t: int) -> dict[str, int]:
        return {d: min(v, p.extents[d]) for d, v in t.items()}

    if name == "demo2":  # a scope per 24 x 2 x 56 output tile holding all three tensors' tiles
        return LoopNest(p, _CONV_ORDER, tiles(n=1, oc=24, oh=2, ow=56),
                        {"image": "ow", "weight": "ow", "output": "ow"})
    if name == "demo3-1":  # all weights per batch; every output tile accumulates in the batch scope
        return LoopNest(p, _CONV_ORDER, tiles(n=1, oc=24, oh=2, ow=56),
                        {"image": "ow", "weight": "n", "output": "n"})
    if name == "demo3-2":  # a scope per 24 output channels: their weights and outputs; image tiles reloaded
        return LoopNest(p, _CONV_ORDER, tiles(n=1, oc=24, oh=2, ow=56),
                        {"image": "ow", "weight": "oc", "output": "oc"})
    if name == "demo3-3":  # output-stationary 8 x 56 x 56; 16-channel image and weight slices
        return LoopNest(p, _CONV_ORDER, tiles(n=1, oc=8, oh=56, ow=56, ic=16),
                        {"image": "ic", "weight": "ic", "output": "ow"})
    if name == "demo4":  # the whole image per batch
        return LoopNest(p, _CONV_ORDER, tiles(n=1, oc=8, oh=56, ow=56, ic=16),
                        {"image": "n", "weight": "ic", "output": "ow"})
    if name == "weights-resident":  # all weights on chip, 2-row slabs of image and output
        return LoopNest(p, ("n", "oh", "oc", "ow", "ic", "kh", "kw"), tiles(n=1, oh=2, oc=24),
                        {"image": "oh", "weight": "top", "output": "oh"})
    if name == "output-stationary-fp32":  # all output channels of a 12-row slab; 16-channel slices stream
        return LoopNest(p, ("n", "oh", "ic", "oc", "ow", "kh", "kw"), tiles(n=1, oh=12, ic=16),
                        {"image": "ic", "weight": "ic", "output": "oh"})
    raise ValueError(f"no LoopNest form of {name!r}; known: {sorted(BLOG_DEMO_NAMES)}")


BLOG_DEMO_NAMES = ("demo2", "demo3-1", "demo3-2", "demo3-3", "demo4", "weights-resident", "output-stationary-fp32")


def res2a_slab_nest(rows: int = 4, buffers: int = 2) -> LoopNest:
    """`kernels.resnet_schedules.row_slab_conv` as a LoopNest: weights resident, `rows`-row slabs of image (with
    halo) and output, each slab scope `buffers`-way."""
    p = ConvProblem(1, 64, 64, 56, 56, 3, padding=1, name="resnet50.res2a_branch2b")
    return LoopNest(p, ("n", "oh", "oc", "ow", "ic", "kh", "kw"), {"n": 1, "oh": rows},
                    {"image": "oh", "weight": "top", "output": "oh"}, {"image": buffers, "output": buffers})


def gemm_nest(m: int = 64, n: int = 48, k: int = 32) -> LoopNest:
    """A small output-stationary matmul nest (an example of the matmul kind)."""
    p = MatmulProblem(m, n, k)
    return LoopNest(p, ("m", "n", "k"), {"m": min(16, m), "n": min(24, n), "k": min(16, k)},
                    {"a": "k", "b": "k", "c": "n"})
