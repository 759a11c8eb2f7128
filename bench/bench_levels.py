"""Speed of the memory-hierarchy search: two-level nests evaluated per second (`search_levels`, blog-l1).

    .venv/bin/python bench/bench_levels.py

The outer (SRAM) search's candidates and the inner (tile combination x structure) two-level nests are counted
apart; the aim is >= 1e5 two-level nests/s. Printed, never asserted (machines are noisy).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dsasim.architect.problems.layers import parse_layer  # noqa: E402
from dsasim.architect.search.level_search import search_levels  # noqa: E402
from dsasim.hardware import preset  # noqa: E402


def main() -> None:
    hw = preset("blog-l1")
    for layer in ("blog-conv", "resnet50.res2a_branch2b", "resnet50.res3a_branch2b", "gemm-1024"):
        r = search_levels(parse_layer(layer), hw, objective="cycles")
        inner = r.evaluations - r.outer_evaluations
        print(f"{layer:26} outer {r.outer_evaluations:>10,} in {r.outer_seconds:5.2f} s; inner two-level nests "
              f"{inner:>11,} in {r.seconds - r.outer_seconds:5.2f} s = {r.inner_rate:>10,.0f}/s; bottleneck "
              f"{r.best.bottleneck if r.best else '-'}")


if __name__ == "__main__":
    main()
