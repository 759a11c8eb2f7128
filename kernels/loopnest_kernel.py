"""The generic kernel: executes any `LoopNest` (conv or matmul) on the traced memory model.

Semantics are those of `dsasim.loopnest` (module docstring): one loop per dimension in the nest's order; each
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
from typing import Any, Mapping

from dsasim import GlobalHierarchy, RunResult, Schedule, Segment, Session, TensorCore, TracedArray, run_schedule
from dsasim.hardware import Accelerator
from dsasim.memory import Counters
from dsasim.schedule import bind_tensors
from dsasim.loopnest import ConvProblem, LoopNest, MatmulProblem, window_rows


def execute(nest: LoopNest, s: Session, tensors: Mapping[str, TracedArray]) -> None:
    """Run `nest` in session `s` over its traced tensors (by name)."""
    problem = nest.problem
    order = nest.order
    nloops = len(order)
    extents = problem.extents
    tiles = nest.tile_map
    names = problem.tensor_names
    dims = problem.dims
    pos = {d: i for i, d in enumerate(dims)}
    # per depth: (tensor, scope name, ways, axis plan) staged there; an axis plan is (dim index, tap index or
    # -1, stride, dilation, padding, size)
    staged: list[list[tuple]] = [[] for _ in range(nloops + 1)]
    for name in names:
        plan = tuple((pos[a.dim], pos[a.tap] if a.tap else -1, a.stride, a.dilation, a.padding, a.size)
                     for a in problem.tensor(name).axes)
        staged[nest.depth(name)].append((name, nest.scope_name(name), nest.ways(name), plan, tensors[name]))
    cur: list = [Segment(0, extents[d]) for d in dims]  # the current tile of every dimension
    loops = [(pos[d], extents[d], tiles[d]) for d in order]
    tc = TensorCore(s)
    held: dict[str, object] = {}  # tiles staged at the innermost depth, used directly by the compute

    if problem.kind == "conv":
        image, weight, output = (tensors[n] for n in names)
        (sh, sw), (ph, pw), (dh, dw) = problem.stride, problem.padding, problem.dilation
        h_, w_ = problem.h, problem.w
        inner = {n for n, *_ in staged[nloops]}
        i_n, i_oc, i_oh, i_ow, i_ic, i_kh, i_kw = (pos[d] for d in ("n", "oc", "oh", "ow", "ic", "kh", "kw"))

        def compute() -> None:
            n, oc, oh, ow, ic, kh, kw = (cur[i_n], cur[i_oc], cur[i_oh], cur[i_ow], cur[i_ic], cur[i_kh],
                                         cur[i_kw])
            out = held["output"] if "output" in inner else output[n, oc, oh, ow]
            r0, r1 = window_rows(oh[0], oh[1], kh[0], kh[1], sh, dh, ph, h_)
            c0, c1 = window_rows(ow[0], ow[1], kw[0], kw[1], sw, dw, pw, w_)
            if r0 == r1 or c0 == c1:  # the window reads only padding: nothing to add
                s.mark_written(out)
                return
            x = held["image"] if "image" in inner else image[n, ic, (r0, r1), (c0, c1)]
            w = held["weight"] if "weight" in inner else weight[oc, ic, kh, kw]
            lo_r = oh[0] * sh + kh[0] * dh - ph
            hi_r = (oh[1] - 1) * sh + (kh[1] - 1) * dh - ph + 1
            lo_c = ow[0] * sw + kw[0] * dw - pw
            hi_c = (ow[1] - 1) * sw + (kw[1] - 1) * dw - pw + 1
            pad = (r0 - lo_r, hi_r - r1, c0 - lo_c, hi_c - c1)
            out += tc.conv2d(x, w, stride=(sh, sw), dilation=(dh, dw), padding=pad)
    else:
        a, b, c = (tensors[n] for n in names)
        inner = {n for n, *_ in staged[nloops]}
        i_m, i_n, i_k = pos["m"], pos["n"], pos["k"]

        def compute() -> None:
            m, n, k = cur[i_m], cur[i_n], cur[i_k]
            out = held["c"] if "c" in inner else c[m, n]
            out += tc.matmul(held["a"] if "a" in inner else a[m, k], held["b"] if "b" in inner else b[k, n])

    def stage(k: int) -> list[GlobalHierarchy]:
        opened = []
        for name, scope, ways, plan, arr in staged[k]:
            g = GlobalHierarchy(s, scope, buffers=ways)
            g.__enter__()
            opened.append(g)
            region = []
            empty = False
            for di, ti, st, dl, pd, size in plan:
                if ti < 0:
                    region.append(cur[di])
                else:
                    o, t = cur[di], cur[ti]
                    r = window_rows(o[0], o[1], t[0], t[1], st, dl, pd, size)
                    empty = empty or r[0] == r[1]
                    region.append(r)
            if not empty:
                tile = arr[tuple(region)]
                if k == nloops:
                    held[name] = tile
        return opened

    def level(k: int) -> None:
        opened = stage(k) if staged[k] else ()
        if k == nloops:
            compute()
        else:
            di, ext, t = loops[k]
            for start in range(0, ext, t):
                stop = start + t
                cur[di] = Segment(start, stop if stop < ext else ext)
                level(k + 1)
            cur[di] = Segment(0, ext)
        for g in reversed(opened):
            g.__exit__(None, None, None)

    level(0)


def loopnest_body(nest: LoopNest):
    """A schedule body `body(session, **tensors)` that executes `nest`."""

    def body(s: Session, **tensors: TracedArray) -> None:
        execute(nest, s, tensors)

    return body


def loopnest_schedule(nest: LoopNest, name: str | None = None, description: str = "",
                      hardware: str = "blog") -> Schedule:
    """`nest` as a `Schedule` of its problem's workload (for `run_schedule`, the CLI, the timing simulator)."""
    return Schedule(name or "loopnest", nest.problem.workload(), loopnest_body(nest),
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
    tensors = bind_tensors(s, nest.problem.workload(), None)
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


SCHEDULES = [loopnest_schedule(blog_demo_nest(name), f"{name}-loopnest",
                               f"{name} expressed as a LoopNest (generic kernel)",
                               "blog-fp32" if name == "output-stationary-fp32" else "blog")
             for name in ("demo2", "demo3-2", "demo3-3", "weights-resident", "output-stationary-fp32")]
