"""What energy costs the search, side by side in one process (issue 28: at most 10 % on search time).

    .venv/bin/python bench/bench_energy.py [--repeat 3]

1. The search as every command runs it (`run_search`, objective cycles: the enumeration that also ranks traffic),
   with the model's operand counts (the TensorCore's reads and writes per the dataflow, which energy needs) and
   with them switched off (`Evaluator._operand_bytes` returning None, the model before issue 28): the ratio is
   what counting for energy adds to every search.
2. The search ranked by energy (`run_search`, objective energy: every candidate's per-level bytes priced) beside
   the same search ranked by cycles: the ratio is what the energy objective adds.
Wall times are the best of --repeat runs (time.perf_counter); ratios > 1 mean the first is slower.
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
from dsasim.architect.model import analytic  # noqa: E402
from dsasim.architect.problems.layers import parse_layer  # noqa: E402
from dsasim.architect.search.layer_search import run_search  # noqa: E402
from dsasim.architect.search.objective import CYCLES, ENERGY  # noqa: E402

LAYERS = (("blog-conv", 256 * 1024), ("resnet50.res2a_branch2b", 64 * 1024), ("gemm:m=512,n=768,k=768", 256 * 1024))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    counted = analytic.Evaluator._operand_bytes
    print("| layer | SRAM | search (s) | without operand counts (s) | ratio | ranked by energy (s) | by cycles (s) "
          "| ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for spec, sram in LAYERS:
        problem = parse_layer(spec)
        hw = dataclasses.replace(preset("blog"), sram_bytes=sram)

        def by(objective):
            return lambda: run_search(problem, hw, [sram], objective)

        with_counts, _ = best_of(args.repeat, by(CYCLES))
        analytic.Evaluator._operand_bytes = lambda self, *a: None
        try:
            without, _ = best_of(args.repeat, by(CYCLES))
        finally:
            analytic.Evaluator._operand_bytes = counted
        energy, _ = best_of(args.repeat, by(ENERGY))
        print(f"| {spec} | {sram // 1024} KiB | {with_counts:.2f} | {without:.2f} | {with_counts / without:.3f} | "
              f"{energy:.2f} | {with_counts:.2f} | {energy / with_counts:.3f} |")


if __name__ == "__main__":
    main()
