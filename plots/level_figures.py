"""Regenerate the memory-hierarchy table and figure of docs/model/levels.md (written next to this script) and print them.

    .venv/bin/python plots/level_figures.py

  levels-blog-conv-L1w.png   the blog's 1x1 conv (2048 -> 512 channels) on blog-l1: traffic into every level and
                             the cycles against the size of the TensorCore's weight buffer L1w (16 KiB .. 1 MiB)

The table: per layer (the blog conv, ResNet-50 res2a_branch2b), the best traffic nest on blog-l1 with its 1.5 MiB
SRAM (`dsasim search LAYER --hardware blog-l1`): every level's traffic, bound and best / bound, its cycles at its
bandwidth, the TensorCore's cycles, the model's cycles, the timing simulator's cycles of the traced nest and the
bottleneck; stderr says whether objective cycles picks the same nest.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from dsasim.architect.problems.layers import parse_layer  # noqa: E402
from dsasim.architect.search.level_search import search_levels  # noqa: E402
from dsasim.architect.studies.target import SearchOptions  # noqa: E402
from dsasim.architect.studies.target_kinds import target_of  # noqa: E402
from dsasim.hardware import preset  # noqa: E402
from dsasim.timing import simulate  # noqa: E402
from dsasim.view.target_text import plot_target_sweep  # noqa: E402
from dsasim.kernels.loopnest_kernel import run_levelnest  # noqa: E402

LAYERS = ["blog-conv", "resnet50.res2a_branch2b"]


def main() -> None:
    hw = preset("blog-l1")
    lines = ["| layer | level | traffic into it (B) | bound (B) | best / bound | its cycles | TensorCore cycles | "
             "model cycles | timed cycles | bottleneck |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for layer in LAYERS:
        a = search_levels(parse_layer(layer), hw, objective="traffic").best
        b = search_levels(parse_layer(layer), hw, objective="cycles").best
        same = "the same nest" if b.to_json() == a.to_json() else f"another nest ({round(b.cycles):,} cycles)"
        print(f"{layer}: objective cycles picks {same}", file=sys.stderr)
        timed = simulate(run_levelnest(a.nest).trace, hw).cycles
        for k, lv in enumerate(a.levels):
            lead = (layer, f"{a.tensorcore_cycles:,} | {round(a.cycles):,} | {timed:,} | **{a.bottleneck}**") \
                if k == 0 else ("", " | | | ")
            lines.append(f"| {lead[0]} | {lv.level} ({', '.join(lv.holds)}) | {lv.traffic_bytes:,} | "
                         f"{lv.bound_bytes:,} | {lv.traffic_bytes / lv.bound_bytes:.2f} | {round(lv.cycles):,} | "
                         f"{lead[1]} |")
    print("\n".join(lines))
    sizes = [16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20]
    sweep = target_of("blog-conv", hw).sweep(sizes, "L1w", "traffic", SearchOptions(), show_progress=False)
    for size, a in zip(sweep.sizes, sweep.choices):
        print(f"L1w {size >> 10:>5} KiB: " + ", ".join(f"{lv.level} {lv.traffic_bytes:,}" for lv in a.levels)
              + f"; cycles {round(a.cycles):,} ({a.bottleneck})")
    print(plot_target_sweep(sweep, HERE / "levels-blog-conv-L1w.png"))


if __name__ == "__main__":
    main()
