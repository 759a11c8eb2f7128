"""What energy costs the search, side by side in one process (issue 28: at most 10 % on search time).

    .venv/bin/python bench/bench_energy.py [--repeat 3]

1. The search as every command runs it (`run_search`, objective cycles: the enumeration that also ranks traffic),
   with the model's operand counts (the TensorCore's reads and writes per the dataflow, which energy needs) and
   with them switched off (`Evaluator._operand_bytes` returning None, the model before issue 28): the ratio is
   what counting for energy adds to every search.
2. The search ranked by energy (`run_search`, objective energy: every candidate's per-level bytes priced) beside
   the same search ranked by cycles: the ratio is what the energy objective adds.
3. The network sweep (`sweep_network`, ResNet-18 with fusion at three SRAM sizes, serial) as it runs, beside the
   same sweep with energy switched off (no operand counts in the model, no entry priced: `network_eval`'s
   `energy_report` returning None): the ratio is what energy adds to the network sweep. The two alternate
   (A B A B ...); the median of the pairwise ratios is printed, so a drift of the machine's speed cancels.
Each pair alternates (A B A B ..., after a warm-up of each): wall times are medians of --repeat runs, ratios the
median of the pairwise ratios (time.perf_counter); ratios > 1 mean the first is slower.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from timing_utils import paired  # noqa: E402
from dsasim import preset  # noqa: E402
from dsasim.architect.model import analytic  # noqa: E402
from dsasim.architect.problems.layers import parse_layer  # noqa: E402
from dsasim.architect.search.layer_search import run_search  # noqa: E402
from dsasim.architect.search.objective import CYCLES, ENERGY  # noqa: E402
from dsasim.architect.studies import network_eval  # noqa: E402
from dsasim.architect.studies.network import load_network  # noqa: E402

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

        def without_counts() -> None:
            analytic.Evaluator._operand_bytes = lambda self, *a: None
            try:
                by(CYCLES)()
            finally:
                analytic.Evaluator._operand_bytes = counted

        with_counts, without, counts_ratio = paired(args.repeat, by(CYCLES), without_counts)
        energy, cycles, energy_ratio = paired(args.repeat, by(ENERGY), by(CYCLES))
        print(f"| {spec} | {sram // 1024} KiB | {with_counts:.2f} | {without:.2f} | {counts_ratio:.3f} | "
              f"{energy:.2f} | {cycles:.2f} | {energy_ratio:.3f} |")
    network_sweep(args.repeat)


def network_sweep(repeat: int) -> None:
    """Section 3 of the module docstring: the network sweep with and without energy, alternated."""
    network = load_network("resnet18")
    hw = preset("blog")
    sizes = [128 * 1024, 512 * 1024, 2048 * 1024]
    counted, priced = analytic.Evaluator._operand_bytes, network_eval.energy_report

    def run(energy: bool) -> None:
        if not energy:
            analytic.Evaluator._operand_bytes = lambda self, *a: None
            network_eval.energy_report = lambda *a, **k: None
        try:
            network_eval.sweep_network(network, [hw], sizes)
        finally:
            analytic.Evaluator._operand_bytes, network_eval.energy_report = counted, priced

    with_energy, without, ratio = paired(repeat, lambda: run(True), lambda: run(False))
    print()
    print("| network sweep | sizes | with energy (s, median) | without (s, median) | ratio (median of pairs) |")
    print("|---|---:|---:|---:|---:|")
    print(f"| resnet18, fused | {len(sizes)} | {with_energy:.2f} | {without:.2f} | {ratio:.3f} |")


if __name__ == "__main__":
    main()
