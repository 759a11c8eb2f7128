"""A network's level searches on hardware with levels below the SRAM: per distinct layer, the work estimate
(`estimate_level_search_work`, what `sweep-sram --network` checks against its limit) beside the CPU time its
searches take (`LevelTarget.network_choices` over the sizes, the network's task), and with the inner-search cache
off, what sharing inner searches across sizes saves.

    python bench/bench_network_levels.py resnet18 --sizes 256KiB,768KiB,1536KiB [--hardware blog-l1] [--no-cache]

CPU time (`time.process_time`), not wall time: on a shared machine the wall time of a search grows with the load,
its CPU time hardly; a sweep on W workers takes about the summed CPU time / W of wall time on a quiet machine (the
largest layer's time at least). Prints one line per layer and the totals; `--json PATH` writes them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def main(argv: list[str] | None = None) -> int:
    """Measure the network's level searches (one line per distinct layer, then the totals)."""
    from dsasim.architect.search import level_search
    from dsasim.architect.search.level_search import estimate_level_search_work
    from dsasim.architect.studies.level_target import LevelTarget
    from dsasim.architect.studies.network import load_network
    from dsasim.architect.studies.network_levels import fused_pieces
    from dsasim.architect.studies.sweep import parse_sizes
    from dsasim.hardware import load_hardware

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("network")
    p.add_argument("--sizes", required=True)
    p.add_argument("--hardware", default="blog-l1")
    p.add_argument("--no-cache", action="store_true", help="each size's inner searches run afresh")
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    hw, sizes = load_hardware(args.hardware), parse_sizes(args.sizes)
    network = load_network(args.network)
    problems = fused_pieces(network, hw, True).searched(network)
    if args.no_cache:  # every search gets a fresh cache: nothing shared across sizes
        original = level_search.search_levels
        level_search.search_levels = lambda *a, inner_cache=None, **k: original(*a, inner_cache=None, **k)
    rows = []
    for problem in problems:
        estimate = estimate_level_search_work(problem, hw, n_searches=len(sizes)).seconds
        cpu = time.process_time()
        LevelTarget(problem.spec(), problem, hw).network_choices(sizes, "traffic")
        cpu = time.process_time() - cpu
        rows.append({"layer": problem.spec(), "estimate_s": round(estimate, 2), "cpu_s": round(cpu, 2)})
        print(f"{problem.spec():60s} estimate {estimate:7.1f} s  cpu {cpu:7.1f} s  ({cpu / estimate:.2f}x)",
              flush=True)
    est, cpu = sum(r["estimate_s"] for r in rows), sum(r["cpu_s"] for r in rows)
    print(f"{args.network} on {hw.name}, {len(sizes)} sizes, {len(rows)} distinct layers: estimate {est:.1f} s, "
          f"cpu {cpu:.1f} s ({cpu / est:.2f}x){' (no inner-search cache)' if args.no_cache else ''}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"network": args.network, "hardware": hw.name, "sizes": sizes, "cache": not args.no_cache,
                       "layers": rows, "estimate_s": round(est, 2), "cpu_s": round(cpu, 2)}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
