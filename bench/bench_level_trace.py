"""Tracing and timing a LevelNest on levels below the SRAM: seconds per TensorCore step, split into the trace
(`execute_levels` in a Session, the levels' pure-Python path) and the timing (`dsasim.timing.simulate`).

    python bench/bench_level_trace.py [--layers SPEC;SPEC...] [--nests PATH] [--save-nests PATH] [--profile N]

Each layer's best LevelNest on blog-l1 (its own SRAM size, as `dsasim network resnet18 --hardware blog-l1` searches) comes
from the level search (`search_levels`, not timed here), or from `--nests PATH`: a JSON list of `LevelNest.to_json()`
that `--save-nests PATH` writes, or the `--json` output of `dsasim network ... --hardware blog-l1` (its levelnest
schedules), so that repeated runs skip the search. The default layers are ResNet-18's three shapes of distinct inner
tiling: layer1's 3x3 conv (84,672 steps, one output pixel x 22 channels per step, all 64 input channels), layer4's
3x3 conv (14,112 steps, 512 output channels per step) and layer3's downsample (2,156 steps). `level_trace_seconds`'
per-step constant (`LEVEL_TRACE_SECONDS_PER_STEP`) is what this prints as "all" (trace + timing) for layer1's.

Prints one line per layer and the total; `--profile N` prints cProfile's top N functions (by own time) of the
trace of the first layer. CPU seconds (`time.process_time`), not wall time: on a shared machine the wall time grows
with the load, the CPU time hardly (compare two trees with a paired timer all the same).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DEFAULT_LAYERS = ("conv:ic=64,oc=64,h=56,k=3,p=1", "conv:ic=512,oc=512,h=7,k=3,p=1",
                  "conv:ic=128,oc=256,h=28,k=1,s=2")


def _nests(args: argparse.Namespace, hardware) -> list:
    """The LevelNests to trace: loaded from --nests, else found by the level search of each layer."""
    from dsasim.architect.model.hierarchy import LevelNest
    from dsasim.architect.problems.layers import parse_layer
    from dsasim.architect.search.level_search import search_levels

    if args.nests:
        data = json.loads(Path(args.nests).read_text())
        if isinstance(data, dict):  # a `dsasim network --json` result: its levelnest schedules
            data = [x["schedule"] for x in data["layers"] if (x.get("schedule") or {}).get("kind") == "levelnest"]
        return [LevelNest.from_json(s, hardware) for s in data]
    nests = []
    for spec in args.layers.split(";"):
        start = time.process_time()
        result = search_levels(parse_layer(spec), hardware)
        print(f"searched {spec} in {time.process_time() - start:.1f} s (CPU)", file=sys.stderr)
        nests.append(result.best.nest)
    if args.save_nests:
        Path(args.save_nests).write_text(json.dumps([n.to_json() for n in nests]))
    return nests


def measure(nest) -> tuple[int, float, float, int]:
    """(TensorCore steps, trace CPU seconds, timing CPU seconds, simulated cycles) of one LevelNest."""
    from dsasim.architect.search.level_search import estimate_level_trace_work
    from dsasim.timing import simulate
    from kernels.loopnest_kernel import run_levelnest

    start = time.process_time()
    run = run_levelnest(nest)
    traced = time.process_time()
    sim = simulate(run.trace, nest.hardware)
    timed = time.process_time()
    return estimate_level_trace_work(nest).traced_operations, traced - start, timed - traced, sim.cycles


def main(argv: list[str] | None = None) -> int:
    """Trace and time each layer's LevelNest; one line each, then the total."""
    from dsasim.hardware import preset

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", default=";".join(DEFAULT_LAYERS), help="layer specs, separated by ';'")
    p.add_argument("--nests", metavar="PATH", help="LevelNests (JSON) instead of searching")
    p.add_argument("--save-nests", metavar="PATH", help="write the searched LevelNests (JSON)")
    p.add_argument("--profile", type=int, default=0, metavar="N", help="cProfile's top N of the first trace")
    args = p.parse_args(argv)
    hardware = preset("blog-l1")
    nests = _nests(args, hardware)
    total_steps = total_trace = total_timing = 0.0
    for nest in nests:
        steps, trace_s, timing_s, cycles = measure(nest)
        total_steps += steps
        total_trace += trace_s
        total_timing += timing_s
        print(f"{nest.problem.name:40s} {steps:>9,} steps  trace {trace_s:7.2f} s cpu ({trace_s / steps * 1e6:6.1f} us/step)"
              f"  timing {timing_s:6.2f} s ({timing_s / steps * 1e6:5.1f} us/step)  {cycles:,} cycles", flush=True)
    print(f"total {int(total_steps):,} steps: trace {total_trace / total_steps * 1e6:.1f} us/step, timing "
          f"{total_timing / total_steps * 1e6:.1f} us/step, all {(total_trace + total_timing) / total_steps * 1e6:.1f} "
          f"us/step")
    if args.profile:
        import cProfile
        import pstats

        from kernels.loopnest_kernel import run_levelnest

        profile = cProfile.Profile()
        profile.runcall(run_levelnest, nests[0])
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
