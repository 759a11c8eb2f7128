"""Plot a schedule's DDR bandwidth over time: the blog's demo2, traced count-only and timed on `blog`.

    python examples/bandwidth_plot.py [PNG]     # default: bandwidth.png here; prints examples/bandwidth_plot.out

`dsasim simulate demo2 --plot DIR` draws this and more; here the figure is built from the SimResult's arrays,
to show where a timeline of your own comes from.
"""

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from dsasim import preset, run_schedule  # noqa: E402
from dsasim.timing import simulate  # noqa: E402
from dsasim.kernels.blog_demos import SCHEDULES  # noqa: E402  (the registered blog schedules)

png = sys.argv[1] if len(sys.argv) > 1 else "bandwidth.png"
hardware = preset("blog")
demo2 = next(schedule for schedule in SCHEDULES if schedule.name == "demo2")
run = run_schedule(demo2, hardware, numeric=False)   # traffic never depends on the data: no data needed
result = simulate(run.trace, hardware)

window = result.window_cycles                        # the timeline's bins: about 256 over the run
load = result.ddr_load_bytes / window                # bytes per cycle in each window
store = result.ddr_store_bytes / window
starts = result.window_starts
fig, ax = plt.subplots(figsize=(10, 4))
ax.stairs(load, [*starts, starts[-1] + window], fill=True, label="load")
ax.stairs(load + store, [*starts, starts[-1] + window], baseline=load, fill=True, label="store")
ax.axhline(hardware.dram_bytes_per_cycle, color="black", linestyle="--", label="DDR ceiling")
ax.set_xlabel("cycle")
ax.set_ylabel("DDR bytes / cycle")
ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
fig.tight_layout()
fig.savefig(png)

busy = (load + store) / hardware.dram_bytes_per_cycle
print(f"demo2 on {hardware.name}: {result.cycles:,} cycles, {result.loaded_bytes:,} B loaded, "
      f"{result.stored_bytes:,} B stored")
print(f"{len(load)} windows of {window:,} cycles; DDR at its ceiling in {int((busy > 0.99).sum())} of them, "
      f"mean {busy.mean():.1%} of the ceiling")
print(f"TensorCore {result.tensorcore_utilization:.1%} busy")
