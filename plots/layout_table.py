"""Regenerate the DDR-layout table of the docs and print it: the timed cycles of some schedules with every 4-d
tensor in each layout, on `blog` with 64-byte DMA bursts and 8 cycles per descriptor (one per contiguous run).

    .venv/bin/python plots/layout_table.py
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dsasim.cli.common import find_schedule  # noqa: E402
from dsasim.hardware import preset  # noqa: E402
from dsasim.layout import LAYOUTS  # noqa: E402
from dsasim.timing import simulate  # noqa: E402
from dsasim.traced.schedule import run_schedule  # noqa: E402

SCHEDULES = ["demo2", "demo3-3", "weights-resident", "res2a-branch2b"]
BURST_BYTES, RUN_CYCLES = 64, 8


def main() -> None:
    plain = preset("blog")
    hw = dataclasses.replace(plain, name="blog-bursts", dma_burst_bytes=BURST_BYTES, dma_run_cycles=RUN_CYCLES)
    print(f"| schedule | `blog` (no layout cost) | " + " | ".join(f"{name}" for name in LAYOUTS) + " |")
    print("|---|---:|" + "---:|" * len(LAYOUTS))
    for name in SCHEDULES:
        s = find_schedule(name)
        w = s.workload
        four_d = [t for t, shape in {**w.inputs, **w.outputs, **w.intermediates}.items() if len(shape) == 4]
        base = simulate(run_schedule(s, plain, numeric=False).trace, plain).cycles
        cells = []
        for layout in LAYOUTS:
            r = run_schedule(s, hw, numeric=False, layouts={t: layout for t in four_d})
            cells.append(f"{simulate(r.trace, hw).cycles:,}")
        print(f"| {name} | {base:,} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
