"""What ranking a GEMM chain's fused space by energy costs beside ranking it by traffic (issue 28), on the chain and
SRAM sizes of the goldens' `search gemm-chain` commands, two alternating runs of each.

    .venv/bin/python bench/bench_gemm_chain_energy.py [--rounds 2] [--baseline REV]

1. Per size, one search's fused space: `evaluate_gemm_chain_space` then `best(size, traffic)` (the fronts' pass
   only) beside the same then `best(size, energy)` (the fronts' pass and one energy pass at that size).
2. A sweep over the three sizes from one space: traffic (one pass serves every size) beside energy (one more pass
   per size).
3. With --baseline REV (e.g. main): the traffic run of 1 with REV's code (exported and run in a subprocess) beside
   this tree's, alternating, to show traffic-only searches did not slow down.
Wall times are the best of the rounds (time.perf_counter); ratios > 1 mean the energy run is slower.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from timing_utils import export_revision  # noqa: E402
from dsasim import preset  # noqa: E402
from dsasim.architect.search.gemm_chain import evaluate_gemm_chain_space, parse_gemm_chain  # noqa: E402
from dsasim.architect.search.objective import ENERGY, TRAFFIC  # noqa: E402

CHAIN = "gemm-chain:m=512,n=256,k=256,l=256"  # tests/golden/commands.py: GEMM_CHAIN
SIZES = (64 * 1024, 256 * 1024, 1024 * 1024)  # its search-gemm-chain-{64KiB,256KiB,1MiB}

TRAFFIC_RUN = """
import dataclasses, sys, time
from dsasim import preset
from dsasim.architect.search.gemm_chain import evaluate_gemm_chain_space, parse_gemm_chain
cap = int(sys.argv[1])
hw = dataclasses.replace(preset("blog"), sram_bytes=cap)
start = time.perf_counter()
evaluate_gemm_chain_space(parse_gemm_chain(sys.argv[2]), hw).best(cap, "traffic")
print(time.perf_counter() - start)
"""


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def search(cap: int, objective) -> None:
    """One search's fused space at `cap` and its best nest by `objective`."""
    hw = dataclasses.replace(preset("blog"), sram_bytes=cap)
    evaluate_gemm_chain_space(parse_gemm_chain(CHAIN), hw).best(cap, objective)


def sweep(objective) -> None:
    """One space, its best nest at every size of SIZES."""
    space = evaluate_gemm_chain_space(parse_gemm_chain(CHAIN), preset("blog"))
    for cap in SIZES:
        space.best(cap, objective)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--baseline", help="a git revision whose traffic run to time beside this tree's")
    args = parser.parse_args()
    print(f"{CHAIN} on blog, best of {args.rounds} alternating rounds")
    print("| run | SRAM | by traffic (s) | by energy (s) | ratio |")
    print("|---|---:|---:|---:|---:|")
    for cap in SIZES:
        t = e = float("inf")
        for _ in range(args.rounds):
            t = min(t, timed(lambda: search(cap, TRAFFIC)))
            e = min(e, timed(lambda: search(cap, ENERGY)))
        print(f"| search | {cap // 1024} KiB | {t:.2f} | {e:.2f} | {e / t:.2f} |")
    t = e = float("inf")
    for _ in range(args.rounds):
        t = min(t, timed(lambda: sweep(TRAFFIC)))
        e = min(e, timed(lambda: sweep(ENERGY)))
    print(f"| sweep | {', '.join(str(c // 1024) for c in SIZES)} KiB | {t:.2f} | {e:.2f} | {e / t:.2f} |")
    if args.baseline:
        with tempfile.TemporaryDirectory() as tmp:
            base = export_revision(args.baseline, Path(tmp))
            print(f"\n| traffic search | SRAM | {args.baseline} (s) | this tree (s) | ratio |")
            print("|---|---:|---:|---:|---:|")
            for cap in SIZES:
                b = h = float("inf")
                for _ in range(args.rounds):
                    for tree in (base, ROOT):
                        env = {**os.environ, "PYTHONPATH": str(tree)}
                        out = subprocess.run([sys.executable, "-c", TRAFFIC_RUN, str(cap), CHAIN], cwd=tree, env=env,
                                             capture_output=True, text=True, check=True)
                        if tree == base:
                            b = min(b, float(out.stdout))
                        else:
                            h = min(h, float(out.stdout))
                print(f"| search | {cap // 1024} KiB | {b:.2f} | {h:.2f} | {h / b:.2f} |")


if __name__ == "__main__":
    main()
