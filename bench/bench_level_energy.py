"""What ranking by energy costs the level search (levels below the SRAM), side by side in one process (issue 28).

    .venv/bin/python bench/bench_level_energy.py [--repeat 3]

For each layer on blog-l1: the inner searches alone (`level_search._inner_search` over the same outer nests, the
pool of a traffic search) ranked by traffic, by energy (every candidate's per-level bytes priced) and by edp; then
the whole `search_levels` by traffic and by energy (which also runs its outer search by energy and gives its
winner an inner search). A traffic search builds no energy array (`_InnerSpace.evaluate` prices only for an
objective that ranks by energy). Wall times are the best of --repeat runs (time.perf_counter); ratios > 1 mean
the energy ranking is slower.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from timing_utils import best_of  # noqa: E402
from dsasim import preset  # noqa: E402
from dsasim.architect.model.hierarchy import InnerTiling, LevelNest, analyze_levels, tensor_role  # noqa: E402
from dsasim.architect.problems.layers import parse_layer  # noqa: E402
from dsasim.architect.search import layer_search  # noqa: E402
from dsasim.architect.search.level_search import _inner_search, outer_pool, search_levels  # noqa: E402
from dsasim.architect.search.objective import EDP, ENERGY, TRAFFIC  # noqa: E402

LAYERS = ("gemm:m=64,n=48,k=64", "mobilenetv2.dw1", "resnet50.res2a_branch2b")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    hw = preset("blog-l1")
    print("| layer | inner by traffic (s) | by energy (s) | ratio | by edp (s) | ratio | search_levels by traffic (s) "
          "| by energy (s) | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for spec in LAYERS:
        problem = parse_layer(spec)
        outer = layer_search.search(problem, dataclasses.replace(hw, inner_levels=()), None, TRAFFIC)
        pool = outer_pool(outer, TRAFFIC)
        staged = [n for n in problem.tensor_names if len(hw.path(tensor_role(problem, n))) > 1]
        sram = [analyze_levels(LevelNest(o, InnerTiling(o.order, {}, {n: 0 for n in staged}), hw)).level("SRAM")
                for o in pool]

        def inner(objective):
            return lambda: [_inner_search(o, hw, staged, s.cycles, s.traffic_bytes, objective)
                            for o, s in zip(pool, sram)]

        def whole(objective):
            return lambda: search_levels(problem, hw, objective=objective)

        t_traffic, _ = best_of(args.repeat, inner(TRAFFIC))
        t_energy, _ = best_of(args.repeat, inner(ENERGY))
        t_edp, _ = best_of(args.repeat, inner(EDP))
        w_traffic, _ = best_of(args.repeat, whole(TRAFFIC))
        w_energy, _ = best_of(args.repeat, whole(ENERGY))
        print(f"| {spec} | {t_traffic:.2f} | {t_energy:.2f} | {t_energy / t_traffic:.3f} | {t_edp:.2f} | "
              f"{t_edp / t_traffic:.3f} | {w_traffic:.2f} | {w_energy:.2f} | {w_energy / w_traffic:.3f} |")


if __name__ == "__main__":
    main()
