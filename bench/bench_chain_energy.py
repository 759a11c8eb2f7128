"""What ranking a conv chain's fused nests by energy costs (issue 28): the fused space evaluated and ranked by traffic
with this tree's module and with the committed one before energy ranking (`git show BASE:...`, loaded beside it),
alternating which runs first (each from a cold per-axis cache), then the energy ranking's extra cost (its access arrays, built on first use, and the pricing at one
size). Usage: python bench/bench_chain_energy.py [--base COMMIT] [--rounds N]"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dsasim.architect.problems.chain_catalogue import parse_chain  # noqa: E402
from dsasim.architect.model.fused import axis_plan  # noqa: E402
from dsasim.architect.search import fused_space as current  # noqa: E402
from dsasim.hardware import preset  # noqa: E402

CHAINS = ("resnet18.layer1.0", "mobilenetv2.features.1", "resnet50.res2b")
SRAM_BYTES = 256 * 1024  # every chain here has fused nests that fit


def load_base(commit: str):
    """The fused-space module as committed at `commit`, imported under another name."""
    text = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:dsasim/architect/search/fused_space.py"],
                          capture_output=True, text=True, check=True).stdout
    path = Path(tempfile.mkdtemp()) / "base_fused_space.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("base_fused_space", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["base_fused_space"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def traffic_seconds(module, chain, hw) -> float:
    """Seconds to evaluate every fused segment's space and rank it by traffic at SRAM_BYTES."""
    axis_plan.cache_clear()  # both modules share the per-axis plans' cache: each run starts cold
    start = time.perf_counter()
    for space in module.evaluate_segment_spaces(chain, hw).values():
        space.best(SRAM_BYTES, "traffic")
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base", default="654e625", help="the commit before chains ranked by energy")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    base, hw = load_base(args.base), preset("blog")
    print(f"{'chain':24} {'round':>5} {'base traffic s':>14} {'this traffic s':>14} {'change':>7} "
          f"{'+energy s':>9}")
    for name in CHAINS:
        chain = parse_chain(name)
        for r in range(args.rounds):
            if r % 2:  # alternate which goes first
                t_this, t_base = traffic_seconds(current, chain, hw), traffic_seconds(base, chain, hw)
            else:
                t_base, t_this = traffic_seconds(base, chain, hw), traffic_seconds(current, chain, hw)
            spaces = current.evaluate_segment_spaces(chain, hw)
            start = time.perf_counter()
            for space in spaces.values():
                space.best(SRAM_BYTES, "energy")
            t_energy = time.perf_counter() - start
            print(f"{name:24} {r + 1:>5} {t_base:>14.3f} {t_this:>14.3f} {100 * (t_this / t_base - 1):>+6.1f}% "
                  f"{t_energy:>9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
