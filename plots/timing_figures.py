"""Regenerate the timing figures of docs/model/timing.md (written next to this script, as PNGs).

    .venv/bin/python plots/timing_figures.py

Each figure is one schedule traced count-only on its preset and timed with `dsasim.timing.simulate`:
  timing-demo2-n1-gantt.png / timing-demo2-n2-gantt.png   demo2 with 1-way and 2-way tile scopes
  timing-demo2-n2-bandwidth.png                          its DDR bandwidth timeline (2-way), power below it
  timing-demo3-3-gantt.png                               a 24704-operation run (busy-fraction profiles)
  timing-demo5-1-sram.png                                SRAM occupancy by tensor across two phases
  timing-res2a-gantt.png                                 ResNet-50 res2a_branch2b, weights resident, 4-row slabs
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from dsasim import preset, run_schedule  # noqa: E402
from dsasim.view.plot import plot_bandwidth, plot_gantt, plot_sram  # noqa: E402
from dsasim.timing import simulate  # noqa: E402
from dsasim.kernels.blog_demos import SCHEDULES  # noqa: E402
from dsasim.kernels.resnet_schedules import SCHEDULES as RESNET  # noqa: E402


def timed(name: str, scope_buffers: dict[str, int] | None = None):
    schedule = {s.name: s for s in SCHEDULES + RESNET}[name]
    hw = preset(schedule.hardware)
    run = run_schedule(schedule, hw, numeric=False, scope_buffers=scope_buffers)
    if run.status != "ok":
        raise SystemExit(f"{name}: {run.message}")
    return simulate(run.trace, hw)


def main() -> None:
    written = []
    n1 = timed("demo2", {"tile": 1})
    n2 = timed("demo2", {"tile": 2})
    written.append(plot_gantt(n1, HERE / "timing-demo2-n1-gantt.png",
                              f"demo2, 1-way tile scope: {n1.cycles:,} cycles, TensorCore "
                              f"{n1.tensorcore_utilization:.0%} busy"))
    written.append(plot_gantt(n2, HERE / "timing-demo2-n2-gantt.png",
                              f"demo2, 2-way tile scope: {n2.cycles:,} cycles, TensorCore "
                              f"{n2.tensorcore_utilization:.0%} busy"))
    written.append(plot_bandwidth(n2, HERE / "timing-demo2-n2-bandwidth.png"))
    written.append(plot_gantt(timed("demo3-3"), HERE / "timing-demo3-3-gantt.png"))
    written.append(plot_sram(timed("demo5-1"), HERE / "timing-demo5-1-sram.png"))
    written.append(plot_gantt(timed("res2a-branch2b"), HERE / "timing-res2a-gantt.png"))
    for path in written:
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
