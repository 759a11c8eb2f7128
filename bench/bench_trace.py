"""The traced memory model against the bare Python loop of the same schedule, side by side in one process.

Usage: python bench/bench_trace.py [--full]   (--full also times the whole demo1, ~4.8 M traced operations)

1. demo1's loop body on 32 output channels (DEMO1_SLICE), count-only through dsasim, and as the bare loop: the
   same loops and Infer calls, every key normalised to a bounded region, one event tuple appended per access,
   scope and compute, nothing else. The ratio traced / bare is the figure of issue 9 (goal <= 2.0).
2. Numeric mode against the bare loop plus the same numpy work (slice the tiles, dot, accumulate, store). The
   traced figure is a whole `run_schedule`, which also makes the input data and checks the result against torch
   (torch is imported before the clock starts: a one-off cost of the process, 0.8-1.1 s, that no schedule pays
   twice); the detail line below it times the schedule body alone the same way, and torch's import in a fresh
   process.
3. Scaling: the cost per access with 10, 1,000 and 10,000 live tiles of one tensor (should stay flat).
4. µs per operation through the compiled core and through the pure-Python reference it replaces, count-only and
   numeric.
5. Trace memory: bytes per recorded event (tracemalloc of a run with a trace minus one without).
"""

from __future__ import annotations

import argparse
import gc
import subprocess
import sys
import time
import tracemalloc

import numpy as np

from dsasim import GlobalHierarchy, Schedule, Segment, Segments, Session, preset, run_schedule
from dsasim.traced.schedule import bind_tensors
from dsasim.kernels.blog_demos import CONV, SCHEDULES, Workload, _conv_infer, demo1

# demo1's loop body on 32 of the 512 output channels: 100,352 iterations, 301,056 traced operations
DEMO1_SLICE = Schedule("demo1-slice", Workload("blog-conv-32oc", inputs={"image": CONV.inputs["image"],
                                                                        "weight": (32, 2048, 1, 1)},
                                               outputs={"output": (1, 32, 56, 56)},
                                               reference=CONV.reference), demo1)


def traced_ops(result) -> int:
    """Loads + stores + hits of one run."""
    return sum(t.loads + t.stores + t.hits for t in result.tensors)


def measure(schedule: Schedule, numeric: bool, record_trace: bool) -> tuple[float, int]:
    """Wall seconds and traced operations of one run."""
    hardware = preset(schedule.hardware)
    start = time.perf_counter()
    result = run_schedule(schedule, hardware, numeric=numeric, record_trace=record_trace)
    elapsed = time.perf_counter() - start
    assert result.status in ("ok", "overflow"), result.message
    return elapsed, traced_ops(result) if result.status == "ok" else 0


def _bare_region(shape: tuple[int, ...], key) -> tuple:
    """Key normalisation to a bounded region, as plainly as Python allows: ints and (start, stop) pairs."""
    region = []
    for k, extent in zip(key, shape):
        if type(k) is int:
            region.append((k, k + 1))
        else:
            start, stop = k
            region.append((start, stop if stop < extent else extent))
    return tuple(region)


def bare_demo1(shapes: dict[str, tuple[int, ...]], data: dict[str, np.ndarray] | None) -> list[tuple]:
    """demo1 without dsasim: same loops, same Infer, normalised regions, one event per access/scope/compute.

    With `data` it also does the numeric work of the numeric run: copy the output element in, view the image
    column and the weight row, dot them, accumulate, store the element back."""
    image_shape, weight_shape, output_shape = shapes["image"], shapes["weight"], shapes["output"]
    infer = _conv_infer(Session(preset("blog"), numeric=False).input("image", image_shape),
                        Session(preset("blog"), numeric=False).input("weight", weight_shape))
    events: list[tuple] = []
    append = events.append
    B, OC, OH, OW = output_shape
    for b in Segments(0, B, 1):
        for oc in Segments(0, OC, 1):
            for oh in Segments(0, OH, 1):
                for ow in Segments(0, OW, 1):
                    append((0, 0))  # the scope
                    out_region = _bare_region(output_shape, (b, oc, oh, ow))
                    append((3, 2, out_region))
                    img_region = _bare_region(image_shape, infer.get_input_segment(b, oc, oh, ow))
                    append((3, 0, img_region))
                    w_region = _bare_region(weight_shape, infer.get_w_segment(oc))
                    append((3, 1, w_region))
                    if data is not None:
                        out_slices = tuple(slice(a, z) for a, z in out_region)
                        out_tile = data["output"][out_slices].copy()
                        x = data["image"][tuple(slice(a, z) for a, z in img_region)]
                        w = data["weight"][tuple(slice(a, z) for a, z in w_region)]
                        out_tile += np.dot(x.reshape(-1), w.reshape(-1))
                        data["output"][out_slices] = out_tile
                    append((6, "vector", "dot"))
    return events


def ratio_rows(numeric: bool) -> tuple[float, float, int]:
    """(traced seconds, bare seconds, traced ops) for DEMO1_SLICE, count-only or numeric."""
    workload = DEMO1_SLICE.workload
    shapes = {**workload.inputs, **workload.outputs}
    data = None
    if numeric:
        import torch  # noqa: F401  (see the module docstring: the import is the process's, not the schedule's)

        data = {**workload.make_inputs(0), "output": np.zeros(workload.outputs["output"], np.float32)}
    gc.disable()  # run_schedule pauses the GC too
    try:
        start = time.perf_counter()
        bare_demo1(shapes, data)
        bare = time.perf_counter() - start
    finally:
        gc.enable()
    traced, ops = measure(DEMO1_SLICE, numeric, record_trace=False)
    return traced, bare, ops


def numeric_body_rows() -> tuple[float, float]:
    """(traced seconds, bare seconds) of DEMO1_SLICE numeric, the traced side without run_schedule's extras: the
    schedule body and `Session.finish` only, on the same input data as the bare loop (made beforehand)."""
    workload = DEMO1_SLICE.workload
    shapes = {**workload.inputs, **workload.outputs}
    inputs = workload.make_inputs(0)
    data = {**inputs, "output": np.zeros(workload.outputs["output"], np.float32)}
    session = Session(preset(DEMO1_SLICE.hardware), numeric=True, record_trace=False)
    tensors = bind_tensors(session, workload, inputs)
    gc.disable()  # as run_schedule does
    try:
        start = time.perf_counter()
        bare_demo1(shapes, data)
        bare = time.perf_counter() - start
        start = time.perf_counter()
        DEMO1_SLICE.body(session, **tensors)
        session.finish()
        traced = time.perf_counter() - start
    finally:
        gc.enable()
    return traced, bare


def torch_import_seconds() -> float:
    """Seconds of `import torch` in a fresh interpreter (the first numeric run_schedule of a process pays it)."""
    code = "import time; t = time.perf_counter(); import torch; print(time.perf_counter() - t)"
    return float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout)


def scaling(live_tiles: int) -> float:
    """µs per access in a scope holding `live_tiles` tiles of one tensor: each row loaded once, then hit once,
    then all freed at the scope's exit, repeated to 20,000 accesses (count-only, trace recorded)."""
    s = Session(preset("blog"), numeric=False, enforce_capacity=False)
    arr = s.input("rows", (live_tiles, 16))
    rows = [Segment(i, i + 1) for i in range(live_tiles)]
    repeats = max(1, 10_000 // live_tiles)
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(repeats):
            with GlobalHierarchy(s, "all"):
                for r in rows:
                    arr[r]
                for r in rows:
                    arr[r]
        elapsed = time.perf_counter() - start
    finally:
        gc.enable()
    assert s.counters.hits == live_tiles * repeats
    return elapsed / (2 * live_tiles * repeats) * 1e6


def per_op(compiled: bool, n: int = 50_000, numeric: bool = False) -> dict[str, float]:
    """µs per operation, with a trace, through the compiled core or the pure-Python reference (the methods of
    session.py and sram_access.py the core replaces), best of 3: a scope entered and left, a hit (normalising the key
    and checking the live buffers), a load into a new buffer freed at the scope's exit (allocation), an output tile opened, written
    and stored at the exit (store bookkeeping), a vector dot written into a tile (compute). Numeric: with the
    data (x is ones, tiles of 64 float32)."""
    from dsasim import VectorUnit
    from dsasim.traced import session as session_module, tensorcore

    ones = np.ones((n, 64), np.float32) if numeric else None  # made once: Session.input keeps it without a copy

    def session():
        s = Session(preset("blog"), numeric=numeric)
        return s, s.input("x", ones if numeric else (n, 64)), s.output("o", (n, 64))

    def scope():
        s, x, o = session()
        for _ in range(n):
            with GlobalHierarchy(s, "p"):
                pass

    def hit():
        s, x, o = session()
        key = (Segment(0, 1), Segment(0, 64))
        with GlobalHierarchy(s, "p"):
            x[key]
            for _ in range(n):
                x[key]

    def load():
        s, x, o = session()
        for i in range(n):
            with GlobalHierarchy(s, "p"):
                x[i]

    def store():
        s, x, o = session()
        for i in range(n):
            with GlobalHierarchy(s, "p"):
                s.mark_written(o[i])

    def compute():
        s, x, o = session()
        vec = VectorUnit(s)
        with GlobalHierarchy(s, "p"):
            a, b, t = x[0], x[1], o[0, 0]
            for _ in range(n):
                t += vec.dot(a, b)

    session_module._bind_core(compiled)
    tensorcore._bind_core(compiled)
    gc.disable()
    try:
        times = {}
        for name, body in (("scope", scope), ("hit", hit), ("load+free", load), ("open+store+free", store),
                           ("compute", compute)):
            best = float("inf")
            for _ in range(3):
                start = time.perf_counter()
                body()
                best = min(best, time.perf_counter() - start)
            times[name] = best / n * 1e6
    finally:
        gc.enable()
        session_module._bind_core(True)
        tensorcore._bind_core(True)
    times["load+free"] -= times["scope"]
    times["open+store+free"] -= times["scope"]
    return times


def event_append_us(n: int = 200_000) -> tuple[float, float]:
    """µs per ALLOC event: appended to the columnar log, and as a tuple to a list (the old trace)."""
    from dsasim.traced._events import EventLog
    log = EventLog(1)
    log.add_tensor(2)
    regions = [(Segment(i, i + 1), Segment(0, 64)) for i in range(n)]
    gc.disable()  # as run_schedule does
    start = time.perf_counter()
    for i, region in enumerate(regions):
        log.alloc(i, 0, region, 64, 0, 64)
    columnar = time.perf_counter() - start
    events: list[tuple] = []
    start = time.perf_counter()
    for i, region in enumerate(regions):
        events.append((2, i, 0, region, 64, 0, 64))
    listed = time.perf_counter() - start
    gc.enable()
    return columnar / n * 1e6, listed / n * 1e6


def trace_bytes_per_event() -> tuple[float, int]:
    """Bytes of Python memory per recorded event of DEMO1_SLICE, and the number of events."""
    hardware = preset("blog")
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        result = run_schedule(DEMO1_SLICE, hardware, numeric=False, record_trace=True)
        with_trace = tracemalloc.get_traced_memory()[0] - base
        events = len(result.trace)
        del result
        base = tracemalloc.get_traced_memory()[0]
        result = run_schedule(DEMO1_SLICE, hardware, numeric=False, record_trace=False)
        without = tracemalloc.get_traced_memory()[0] - base
        del result
    finally:
        tracemalloc.stop()
    return (with_trace - without) / events, events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="also run the full demo1 (slow)")
    args = parser.parse_args()
    print(f"{'DEMO1_SLICE':<14}{'traced s':>10}{'bare s':>9}{'ratio':>8}{'traced ops/s':>14}   (goal: ratio <= 2.0)")
    for numeric in (False, True):
        traced, bare, ops = ratio_rows(numeric)
        print(f"{'numeric' if numeric else 'count-only':<14}{traced:>10.2f}{bare:>9.2f}{traced / bare:>8.2f}"
              f"{ops / traced:>14,.0f}")
    traced, bare = numeric_body_rows()
    print(f"  numeric detail: the traced row is a whole run_schedule (input data, the torch check; torch imported "
          f"before: {torch_import_seconds():.2f} s in a fresh process); the schedule body alone: "
          f"traced {traced:.2f} s, bare {bare:.2f} s, ratio {traced / bare:.2f}")
    cases = [(DEMO1_SLICE, False, True)]
    if args.full:
        cases.append((SCHEDULES[0], False, False))
    for schedule, numeric, record in cases:
        seconds, ops = measure(schedule, numeric, record)
        print(f"{schedule.name}, {'numeric' if numeric else 'count-only'}, trace {'yes' if record else 'no'}: "
              f"{seconds:.2f} s, {ops:,} traced ops, {ops / seconds:,.0f} ops/s")
    print("scaling, µs per access with N live tiles of one tensor: " +
          ", ".join(f"N={n:,}: {scaling(n):.2f}" for n in (10, 1_000, 10_000)))
    print("µs per operation (trace kept; best of 3):")
    rows = {(compiled, numeric): per_op(compiled, numeric=numeric)
            for compiled, numeric in ((False, False), (True, False), (False, True), (True, True))}
    print(f"  {'':<31}" + "".join(f"{name:>17}" for name in rows[True, False]))
    for (compiled, numeric), row in rows.items():
        label = f"{'compiled core' if compiled else 'pure-Python reference'}, {'numeric' if numeric else 'count-only'}"
        print(f"  {label:<31}" + "".join(f"{v:>17.2f}" for v in row.values()))
    columnar, listed = event_append_us()
    print(f"  event append (ALLOC): columnar log {columnar:.2f}, tuple into a list {listed:.2f}")
    per_event, events = trace_bytes_per_event()
    print(f"trace memory: {per_event:.0f} B per event ({events:,} events; goal <= 40)")


if __name__ == "__main__":
    main()
