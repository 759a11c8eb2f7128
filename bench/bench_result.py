"""Benchmark of the timing result stage alone (`build_result`: figures, timelines, stall attribution): wall time
and peak-RSS growth on one schedule's timed graph.

    .venv/bin/python bench/bench_result.py [NAME ...] [--repeat 3]

NAME is a registered schedule (default: demo2 demo5-2 and demo1; demo1 takes about a minute to trace, lower
and schedule first) or "synthetic" (bench_timing's 25k-tile TensorCore pipeline). Wall time: best of --repeat
(time.perf_counter), garbage collector paused as `simulate` does. RSS growth: ru_maxrss after the first
build_result minus before it, in its own process per schedule, so one schedule's peak does not hide another's.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))


def one(name: str, repeat: int) -> str:
    """Trace, lower and schedule `name`, then time build_result; one printed line."""
    from dsasim import preset
    from dsasim.timing import build_result, build_timeline, lower
    from dsasim.traced.schedule import run_schedule
    from dsasim.util import gc_paused
    if name == "synthetic":
        from bench_timing import synthetic_trace
        trace, hw = synthetic_trace(25_000)
    else:
        from dsasim.cli.common import find_schedule
        schedule = find_schedule(name)
        hw = preset(schedule.hardware)
        trace = run_schedule(schedule, hw, numeric=False, trace_event_limit=None).trace
    with gc_paused():
        g = lower(trace, hw)
        del trace
        timeline = build_timeline(g)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        walls = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            result = build_result(g, timeline, hw, None)
            walls.append(time.perf_counter() - t0)
            if len(walls) == 1:
                grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
            del result
    return (f"{name:<12} {g.n:>10} ops  build_result {min(walls):8.3f} s  "
            f"({g.n / min(walls) / 1e6:7.2f} M ops/s)  peak RSS +{grown_kib / 1024:7.1f} MiB")


def main() -> None:
    """Run each schedule in its own process and print one line each."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", default=["demo2", "demo5-2", "synthetic", "demo1"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--case", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.case:
        print(one(args.case, args.repeat), flush=True)
        return
    for name in args.names:
        subprocess.run([sys.executable, __file__, "--case", name, "--repeat", str(args.repeat)], check=True)


if __name__ == "__main__":
    main()
