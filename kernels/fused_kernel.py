"""The fused kernel: executes any `FusedNest` (a chain of convs, intermediates on chip) on the traced memory model.

Semantics are those of `dsasim.architect.model.fused` (module docstring): one loop each over n, oh and ow of the last
layer's output; per tile, the image box through the whole chain, every intermediate's box computed on chip
(`Session.on_chip` tensors `mid1` ..), the output tile computed, residual-added and stored. With halo='keep' the
image and the intermediates are rotating buffers in a `sweep` scope just outside the slide loop: the image slides
(only new rows loaded) and each intermediate slides (only the rows it lacks computed, from the rows the level
below holds). `fused_schedule(nest)` is a `Schedule` for `run_schedule` (numeric mode checks it against torch).
"""

from __future__ import annotations

import importlib
from contextlib import nullcontext
from typing import Callable, Mapping

from dsasim import (Accelerator, GlobalHierarchy, RunResult, Schedule, Session, TensorCore, TracedArray, VectorUnit,
                    Workload, bind_tensors, run_schedule)
from dsasim.traced.counters import Counters
from dsasim.architect.problems.chain import ConvChain
from dsasim.architect.search.chain_kinds import chain_kind_of
from dsasim.architect.model.fused import FusedNest
from dsasim.architect.search.gemm_chain import GemmChainNest


def fused_workload(chain: ConvChain) -> Workload:
    """The `Workload` (tensor shapes and torch reference) of a chain: image and weights in, output out."""
    inputs = {"image": chain.input_shape}
    inputs.update((name, chain.weight_shape(i)) for i, name in enumerate(chain.weight_names))
    return Workload(chain.name, inputs=inputs, outputs={"output": chain.output_shape}, reference=chain.reference)


def execute_fused(nest: FusedNest, s: Session, tensors: Mapping[str, TracedArray]) -> None:
    """Run `nest` in session `s` over its traced tensors (by name)."""
    chain = nest.chain
    L = len(chain)
    tc, vec = TensorCore(s), VectorUnit(s)
    mids = [s.on_chip(name, chain.level_shape(i + 1)) for i, name in enumerate(chain.mid_names)]
    levels: list[TracedArray] = [tensors["image"], *mids, tensors["output"]]
    weights = [tensors[name] for name in chain.weight_names]
    rows, cols = nest.axis("oh"), nest.axis("ow")
    keep = nest.halo == "keep"
    slide = nest.slide_dim if keep else None
    N, tn = nest.extents[0], nest.tiles[0]

    def box(i: int, n: tuple[int, int], j: int, k: int) -> tuple:
        """Level i's box for tile (j, k): every channel, its rows and columns."""
        return (n, (0, chain.level_shape(i)[1]), (int(rows.start[i, j]), int(rows.stop[i, j])),
                (int(cols.start[i, k]), int(cols.stop[i, k])))

    def compute(i: int, n: tuple[int, int], r: tuple[int, int], c: tuple[int, int]) -> None:
        """Layer i's output rows r x columns c (level i) from the rows level i - 1 holds, on the TensorCore."""
        layer = chain.layers[i - 1]
        wr, wc = layer.geometry.window(0, *r), layer.geometry.window(1, *c)
        x = levels[i - 1][slice(*n), :, wr.first:wr.stop, wc.first:wc.stop]
        w = weights[i - 1][:, :, :, :]
        out = levels[i][slice(*n), :, r[0]:r[1], c[0]:c[1]]
        out.assign(tc.conv2d(x, w, stride=layer.stride, dilation=layer.dilation, groups=layer.groups,
                             padding=wr.pad + wc.pad))
        if i == L and chain.residual:  # the image box holds the residual's rows: a hit
            out.assign(vec.add(out, levels[0][slice(*n), :, r[0]:r[1], c[0]:c[1]]))
        if chain.relu[i - 1]:
            out.assign(vec.relu(out))

    def capacity(i: int, n: tuple[int, int], j: int, k: int) -> tuple:
        """The largest box of level i over the sweep that contains tile (j, k) (along the slide loop)."""
        if slide == "ow":
            k = int(cols.lens[i].argmax())
        else:
            j = int(rows.lens[i].argmax())
        return box(i, n, j, k)

    def tile(n: tuple[int, int], j: int, k: int) -> None:
        if keep:  # in the sweep scope: move the line buffers to this tile's boxes
            for i in range(L):
                levels[i].slide(box(i, n, j, k), capacity=capacity(i, n, j, k))
        with GlobalHierarchy(s, "tile", ways=nest.ways):
            if nest.weights == "per-tile":
                for w in weights:
                    w[:, :, :, :]
            if not keep:
                for i in range(L):
                    levels[i][box(i, n, j, k)]  # the image box is loaded, every mid box opened on chip
            levels[L][box(L, n, j, k)]  # the output tile, opened as zeros
            for i in range(1, L + 1):
                r_runs = rows.pieces[i][j] if slide == "oh" else ((int(rows.start[i, j]), int(rows.stop[i, j])),)
                c_runs = cols.pieces[i][k] if slide == "ow" else ((int(cols.start[i, k]), int(cols.stop[i, k])),)
                for r in r_runs:
                    for c in c_runs:
                        compute(i, n, r, c)

    def scope_if(name: str, needed: bool):
        """A scope where the nest has one (a sweep scope only for halo='keep'), else nothing."""
        return GlobalHierarchy(s, name) if needed else nullcontext()

    with scope_if("weights@top", nest.weights == "resident"):
        if nest.weights == "resident":
            for w in weights:
                w[:, :, :, :]
        for n0 in range(0, N, tn):
            n = (n0, min(n0 + tn, N))
            with scope_if("sweep", slide == "oh"):
                for j in range(rows.lens.shape[1]):
                    with scope_if("sweep", slide == "ow"):
                        for k in range(cols.lens.shape[1]):
                            tile(n, j, k)


def _workload_and_body(nest: FusedNest | GemmChainNest) -> tuple[Workload, Callable[..., None]]:
    """The workload a nest runs on and the function that executes it: its chain kind's kernel (`ChainKind.kernel`;
    a conv chain's is this module's, a GEMM chain's `gemm_chain_kernel`)."""
    ref = chain_kind_of(nest.chain).kernel
    module = importlib.import_module(ref.module)
    return getattr(module, ref.workload)(nest.chain), getattr(module, ref.execute)


def fused_schedule(nest: FusedNest | GemmChainNest, name: str | None = None, hardware: str = "blog") -> Schedule:
    """`nest` (a conv chain's or a GEMM chain's) as a `Schedule` of its chain's workload (for `run_schedule`, the
    CLI, the timing simulator)."""
    workload, execute = _workload_and_body(nest)

    def body(s: Session, **tensors: TracedArray) -> None:
        execute(nest, s, tensors)

    return Schedule(name or "fused", workload, body, repr(nest), hardware)


def run_fused(nest: FusedNest | GemmChainNest, hardware: Accelerator, numeric: bool = False,
              record_trace: bool = True, enforce_capacity: bool = True, seed: int = 0) -> RunResult:
    """Run `nest` on `hardware` (count-only by default) and return the `RunResult` (trace included); the one runner
    the chain search finds by entry point, for conv and GEMM chains."""
    return run_schedule(fused_schedule(nest), hardware, numeric=numeric, seed=seed, record_trace=record_trace,
                        enforce_capacity=enforce_capacity)


def count_fused(nest: FusedNest | GemmChainNest, hardware: Accelerator, enforce_capacity: bool = True) -> Counters:
    """The fastest traced run: count-only, no trace recorded, no torch; returns the session's `Counters`."""
    workload, execute = _workload_and_body(nest)
    s = Session(hardware, numeric=False, record_trace=False, enforce_capacity=enforce_capacity)
    execute(nest, s, bind_tensors(s, workload, None))
    s.finish()
    return s.counters
