"""Traced operations per second (loads + stores + hits) of the memory model, count-only and numeric.

Usage: python bench/bench_trace.py [--full]   (--full also times the whole demo1, ~4.8 M traced operations)
Runs each configuration in this one process, so the figures are comparable side by side.
"""

from __future__ import annotations

import argparse
import time

from dsasim import Schedule, preset, run_schedule
from kernels.blog_demos import CONV, SCHEDULES, Workload, demo1

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="also run the full demo1 (slow)")
    args = parser.parse_args()
    cases = [(DEMO1_SLICE, False, False), (DEMO1_SLICE, False, True), (DEMO1_SLICE, True, False)]
    if args.full:
        cases.append((SCHEDULES[0], False, False))
    print(f"{'schedule':<24}{'mode':<12}{'trace':<7}{'seconds':>9}{'traced ops':>12}{'ops/s':>12}")
    for schedule, numeric, record in cases:
        seconds, ops = measure(schedule, numeric, record)
        print(f"{schedule.name:<24}{'numeric' if numeric else 'count-only':<12}{'yes' if record else 'no':<7}"
              f"{seconds:>9.2f}{ops:>12,}{ops / seconds:>12,.0f}")
    total = 0.0
    for schedule in SCHEDULES[1:]:
        seconds, _ = measure(schedule, True, False)
        total += seconds
    print(f"all demos but demo1, numeric with torch check: {total:.1f} s")


if __name__ == "__main__":
    main()
