"""Benchmark of the schedule search: evaluations per second, the blog conv, the ResNet-50 table, sweep timing.

    .venv/bin/python bench/bench_search.py [--repeat 3] [--skip-table] [--json PATH]

1. Evaluator throughput: the first-pass batches of a layer (structures x tile sizes, numpy broadcasting) run
   through `Space.evaluate` — the full model (exact peak over tile classes, traffic, MACs/TensorCore cycles,
   cycle estimate) and the screening form the search runs first (a lower bound of the peak, no estimate) — and
   the end-to-end rate of `run_search` (enumeration, screening, exact re-evaluation, refinement).
2. The blog conv on the blog preset (1536 KiB, 1-byte words): best traffic found vs compulsory traffic and the
   best blog demo (count-only runs of the ports in kernels/blog_demos.py).
3. Every distinct ResNet-50 conv at 128 KiB - 4 MiB: best traffic found / lower bound. Where above 1.10, the
   same layer reduced (channels / 16, height and width / 4, SRAM / 256: the same ratios of tensor sizes to SRAM)
   is searched exhaustively (every tile size, every chain of staging levels, no pruning) to show whether the
   search or the bound is loose.
4. 20-point SRAM sweeps (64 KiB - 8 MiB) with every point traced and timed by the timing simulator.
Wall times are the best of --repeat runs (time.perf_counter), one process.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from timing_utils import best_of  # noqa: E402
from dsasim import preset, run_schedule  # noqa: E402
from dsasim.architect.problems.layers import distinct_resnet50, parse_layer  # noqa: E402
from dsasim.architect.nests.loopnest import ConvProblem  # noqa: E402
from dsasim.architect.model.lower_bounds import lower_bound  # noqa: E402
from dsasim.architect.search.layer_search import Space, _batches, run_search, search  # noqa: E402
from dsasim.architect.studies.layer_target import LayerTarget  # noqa: E402
from dsasim.architect.studies.sweep import format_bytes, parse_sizes, sweep_sram  # noqa: E402
from dsasim.kernels import blog_demos  # noqa: E402
from dsasim.kernels.loopnest_kernel import run_loopnest  # noqa: E402

BLOG = preset("blog")
TABLE_SIZES = [128 * 1024 << i for i in range(6)]  # 128 KiB .. 4 MiB


def bench_evaluator(repeat: int) -> list[dict]:
    rows = []
    for layer in ("resnet50.res2a_branch2b", "blog-conv", "resnet50.conv1"):
        p = parse_layer(layer)
        space = Space(p, BLOG)
        batches = list(_batches(space))
        n = sum(b.n for b in batches)
        full, _ = best_of(repeat, lambda: [space.evaluate(b, exact=True, estimate=True) for b in batches])
        screen, _ = best_of(repeat, lambda: [space.evaluate(b, exact=False, estimate=False) for b in batches])
        e2e, st = best_of(repeat, lambda: run_search(p, BLOG, [256 * 1024], "cycles"))
        rows.append({"layer": layer, "candidates": n, "full_model_per_s": n / full, "screening_per_s": n / screen,
                     "search_evaluations": st.evaluations, "search_seconds": e2e,
                     "search_per_s": st.evaluations / e2e})
    return rows


def bench_blog(repeat: int) -> dict:
    p = parse_layer("blog-conv")
    seconds, result = best_of(repeat, lambda: search(p, BLOG, runner=run_loopnest, confirm_top=1))
    demos = {}
    for s in blog_demos.SCHEDULES:
        if s.workload is blog_demos.CONV and s.name.startswith("demo") and s.name != "demo1":
            r = run_schedule(s, BLOG, numeric=False, record_trace=False)
            if r.status == "ok":
                demos[s.name] = r.loaded_bytes + r.stored_bytes
    best_demo = min(demos, key=demos.get)
    b = result.best_traffic
    return {"traffic_bytes": b.traffic_bytes, "compulsory_bytes": result.bound.compulsory_bytes,
            "lower_bound_bytes": result.bound.bytes, "peak_sram_bytes": b.peak_sram_bytes,
            "simulated_cycles": b.simulated_cycles, "tensorcore_cycles": b.tensorcore_cycles,
            "best_demo": best_demo, "best_demo_traffic_bytes": demos[best_demo], "seconds": seconds,
            "loop_nest": b.nest.to_json(), "nest_repr": repr(b.nest)}


def reduced(p: ConvProblem, c: int = 16, f: int = 4) -> ConvProblem:
    return ConvProblem(p.n, max(1, p.ic // c), max(1, p.oc // c), max(p.kh, p.h // f), max(p.kw, p.w // f), p.kh,
                       p.kw, p.stride, p.padding, p.dilation)


def bench_table() -> list[dict]:
    rows = []
    for prob, names in distinct_resnet50():
        t = time.perf_counter()
        from dsasim.architect.search.layer_search import search_front
        _, best = search_front(prob, BLOG, TABLE_SIZES)
        seconds = time.perf_counter() - t
        cells = []
        for size, cand in zip(TABLE_SIZES, best):
            b = lower_bound(prob, size, 1)
            cell = {"sram_bytes": size, "traffic_bytes": cand.traffic_bytes, "lower_bound_bytes": b.bytes,
                    "bound_kind": b.kind, "ratio": cand.traffic_bytes / b.bytes}
            if cell["ratio"] > 1.10:
                small = reduced(prob)
                cap = max(size // 256, 16)
                hw = BLOG
                ex = run_search(small, hw, [cap], exhaustive=True)
                fast = run_search(small, hw, [cap])
                i, j = ex.traffic.best_at(cap), fast.traffic.best_at(cap)
                rb = lower_bound(small, cap, 1)
                cell["reduced"] = {"problem": small.spec(), "sram_bytes": cap,
                                   "exhaustive_bytes": int(ex.traffic.k1[i]), "search_bytes": int(fast.traffic.k1[j]),
                                   "lower_bound_bytes": rb.bytes, "bound_kind": rb.kind,
                                   "exhaustive_evaluations": ex.evaluations}
            cells.append(cell)
        rows.append({"layers": names, "spec": prob.spec(), "cells": cells, "seconds": seconds})
    return rows


def bench_sweeps(repeat: int) -> list[dict]:
    rows = []
    sizes = parse_sizes("64KiB:8MiB:20")
    for layer in ("resnet50.res2a_branch2b", "blog-conv", "resnet50.conv1", "gemm-1024"):
        p = parse_layer(layer)
        seconds, result = best_of(repeat, lambda: sweep_sram(LayerTarget(layer, p, BLOG), sizes, runner=run_loopnest))
        rows.append({"layer": layer, "points": len(sizes), "seconds": seconds,
                     "all_simulated": all(pt.cycles_source == "simulated" for pt in result.choices),
                     "evaluations": result.evaluations})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-table", action="store_true", help="skip the ResNet-50 table")
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    out: dict = {"machine": {"python": platform.python_version(), "numpy": np.__version__,
                             "cpus": os.cpu_count(), "platform": platform.platform()}}

    print("## Evaluator throughput")
    out["evaluator"] = bench_evaluator(args.repeat)
    print("| layer | first-pass candidates | full model / s | screening / s | search: evaluations, s, / s |")
    print("|---|---:|---:|---:|---:|")
    for r in out["evaluator"]:
        print(f"| {r['layer']} | {r['candidates']:,} | {r['full_model_per_s'] / 1e6:.1f} M | "
              f"{r['screening_per_s'] / 1e6:.1f} M | {r['search_evaluations']:,} in {r['search_seconds']:.2f} s = "
              f"{r['search_per_s'] / 1e6:.2f} M |")

    print("\n## Blog conv, blog preset (1536 KiB, 1-byte words)")
    b = out["blog"] = bench_blog(args.repeat)
    print(f"best found: {b['traffic_bytes']:,} B (compulsory {b['compulsory_bytes']:,} B, bound "
          f"{b['lower_bound_bytes']:,} B), peak SRAM {b['peak_sram_bytes']:,} B, {b['simulated_cycles']:,} "
          f"simulated cycles (TensorCore {b['tensorcore_cycles']:,}); best blog demo {b['best_demo']}: "
          f"{b['best_demo_traffic_bytes']:,} B; search + trace + simulation {b['seconds']:.2f} s")
    print(b["nest_repr"])

    if not args.skip_table:
        print("\n## ResNet-50 convs: best found / lower bound (blog preset, 1-byte words)")
        t = time.perf_counter()
        out["table"] = bench_table()
        out["table_seconds"] = time.perf_counter() - t
        head = " | ".join(format_bytes(s) for s in TABLE_SIZES)
        print(f"| layer (and same-shape layers) | shape | {head} |")
        print("|---|---|" + "---:|" * len(TABLE_SIZES))
        notes = []
        for r in out["table"]:
            cells = []
            for c in r["cells"]:
                mark = "" if c["bound_kind"] == "compulsory" else "†"
                cells.append(f"{c['ratio']:.3f}{mark}" + (" ‡" if "reduced" in c else ""))
                if "reduced" in c:
                    notes.append((r["layers"][0], c))
            names = r["layers"][0] + (f" (+{len(r['layers']) - 1})" if len(r["layers"]) > 1 else "")
            print(f"| {names} | {r['spec'][5:]} | " + " | ".join(cells) + " |")
        print(f"\n(table: {out['table_seconds']:.1f} s)")
        for name, c in notes:
            red = c["reduced"]
            print(f"‡ {name} at {format_bytes(c['sram_bytes'])}: reduced {red['problem']} at {red['sram_bytes']} B: "
                  f"exhaustive {red['exhaustive_bytes']:,} B ({red['exhaustive_evaluations']:,} nests), search "
                  f"{red['search_bytes']:,} B, bound {red['lower_bound_bytes']:,} B ({red['bound_kind']}): ratio "
                  f"{red['exhaustive_bytes'] / red['lower_bound_bytes']:.3f}")

    print("\n## 20-point SRAM sweeps, 64 KiB - 8 MiB, every point traced and simulated")
    out["sweeps"] = bench_sweeps(args.repeat)
    for r in out["sweeps"]:
        print(f"{r['layer']}: {r['points']} points in {r['seconds']:.2f} s ({r['evaluations']:,} candidates; "
              f"simulated: {r['all_simulated']})")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
