"""Benchmark of the timing simulation: simulated operations per second, and the ResNet-50 res2a_branch2b layer
traced and simulated, beside SCALE-Sim v3 (PyPI `scalesim`) on the same layer with a 16 x 24 array.

    .venv/bin/python bench/bench_timing.py [--repeat 3] [--skip-scalesim] [--json PATH] [--before REV] [--full]

Simulated operations are the operations the timing model schedules (`SimResult.operations`: transfers, computes
and OPENs; not HIT, ALLOC, FREE, ENTER or EXIT events); ops/s = operations / the wall time of `simulate()`
(validation, lowering, scheduling and the SimResult), best of `--repeat`. Each schedule is traced and simulated in
its own process, so its peak RSS (ru_maxrss, trace included) is its own. `--before REV` also runs the same cases
with the timing package of git revision REV (exported to a temporary folder, built if it has .pyx files) and
prints both side by side.

Wall times are the best of `--repeat` runs (time.perf_counter), single process. SCALE-Sim is run once (it
takes minutes): weight-stationary dataflow, a 16 x 24 array (16 rows = input channels, 24 columns = output
channels, like the TensorCore), 512 KiB per SRAM (1.5 MiB total, as the blog machine), 32 words/cycle of DRAM
bandwidth, 1-byte words; the zero padding is folded into a 58 x 58 input, since SCALE-Sim has no padding field.
"""

from __future__ import annotations

import argparse
import builtins
import dataclasses
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))  # kernels/, and dsasim unless --case runs with another (BENCH_DSASIM)
sys.path.insert(0, os.environ.get("BENCH_DSASIM", str(ROOT)))

from timing_utils import best_of, export_revision  # noqa: E402
from dsasim import GlobalHierarchy, Session, TensorCore, preset, run_schedule  # noqa: E402
from dsasim.traced.segments import Segment  # noqa: E402
from dsasim.timing import simulate  # noqa: E402


def synthetic_trace(tiles: int):
    """A long 2-way load/compute/store pipeline: 4 operations per tile (load, open, conv, store)."""
    hw = dataclasses.replace(preset("blog"), dma_setup_cycles=16)
    s = Session(hw, numeric=False, scope_buffers={"tile": 2})
    x = s.input("x", (1, 16, 1, 8 * tiles))
    w_ = s.input("w", (24, 16, 1, 1))
    y = s.output("y", (1, 24, 1, 8 * tiles))
    tc = TensorCore(s)
    with GlobalHierarchy(s, "weights"):
        w = w_[:, :, :, :]
        for j in range(tiles):
            with GlobalHierarchy(s, "tile"):
                cols = Segment(8 * j, 8 * j + 8)
                yt = y[:, :, :, cols]
                yt += tc.conv2d(x[:, :, :, cols], w)
    return s.finish(), hw


OPS_CASES = ("demo1-slice", "demo2 (N=2)", "demo3-2", "demo3-3", "demo5-1", "demo5-2", "demo6", "demo6-1",
             "res2a-branch2b", "synthetic pipeline, 25k tiles")


def case_trace(label: str):
    """(trace, hardware) of a benchmark case; demo1-slice is bench_trace.DEMO1_SLICE (32 of 512 channels); demo1
    whole (21 M events, ~20 s to trace) only with --full; demo3-1/demo4 overflow the SRAM (no trace)."""
    if label.startswith("synthetic"):
        return synthetic_trace(25_000)
    from dsasim.kernels.blog_demos import SCHEDULES
    from dsasim.kernels.resnet_schedules import SCHEDULES as RESNET
    by_name = {s.name: s for s in SCHEDULES + RESNET}
    if label == "demo1-slice":
        from bench_trace import DEMO1_SLICE
        schedule = DEMO1_SLICE
    else:
        schedule = by_name[label.split(" ")[0]]
    hw = preset(schedule.hardware)
    sb = {"tile": 2} if label.endswith("(N=2)") else None
    return run_schedule(schedule, hw, numeric=False, scope_buffers=sb).trace, hw


def run_case(label: str, repeat: int, reference: bool = False) -> dict:
    """Trace one case and time simulate() on it (in this process)."""
    import resource
    trace, hw = case_trace(label)
    wall, result = best_of(repeat, lambda: simulate(trace, hw, reference=reference))
    import dsasim
    return {"dsasim": str(Path(dsasim.__file__).parent), "case": label + (" [simpy reference]" if reference else ""),
            "events": len(trace.events),
            "operations": result.operations, "cycles": result.cycles, "wall_s": round(wall, 4),
            "ops_per_s": round(result.operations / wall),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def _in_subprocess(label: str, repeat: int, path: Path, reference: bool = False) -> dict:
    """run_case in a fresh process whose dsasim comes from `path`."""
    import subprocess
    env = dict(os.environ, BENCH_DSASIM=str(path))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--case", label, "--repeat", str(repeat)]
    cmd += ["--reference"] if reference else []
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    row = json.loads(out.strip().splitlines()[-1])
    assert row.pop("dsasim") == str(path / "dsasim"), "the case ran with another dsasim"
    return row


def _export(rev: str, into: Path) -> Path:
    """dsasim of git revision `rev`, exported into `into` and built in place if it has Cython modules."""
    return export_revision(rev, into)


def bench_ops(repeat: int, before: str | None = None, full: bool = False) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        old = _export(before, Path(tmp)) if before else None
        for label in OPS_CASES + (("demo1",) if full else ()):
            row = _in_subprocess(label, repeat, ROOT)
            if old is not None:
                row["before"] = _in_subprocess(label, repeat, old)
                assert row["before"]["cycles"] == row["cycles"], f"{label}: cycles differ from {before}"
            rows.append(row)
    rows.append(_in_subprocess("demo2 (N=2)", 1, ROOT, reference=True))  # the simpy reference, for scale
    return rows


def bench_resnet(repeat: int) -> dict:
    from dsasim.kernels.resnet_schedules import SCHEDULES
    schedule = SCHEDULES[0]
    hw = preset(schedule.hardware)

    def trace_and_simulate():
        run = run_schedule(schedule, hw, numeric=False)
        return run, simulate(run.trace, hw)

    wall, (run, result) = best_of(repeat, trace_and_simulate)
    t_trace, _ = best_of(repeat, lambda: run_schedule(schedule, hw, numeric=False))
    return {"schedule": schedule.name, "hardware": hw.name, "wall_s": round(wall, 5),
            "trace_wall_s": round(t_trace, 5), "operations": result.operations, "cycles": result.cycles,
            "roofline_cycles": result.roofline_cycles, "tensorcore_cycles": result.engine_busy_cycles["tensorcore"],
            "tensorcore_utilization": round(result.tensorcore_utilization, 4),
            "loaded_bytes": result.loaded_bytes, "stored_bytes": result.stored_bytes}


SCALESIM_CFG = """[general]
run_name = res2a_branch2b_16x24

[architecture_presets]
ArrayHeight:    16
ArrayWidth:     24
IfmapSramSzkB:   512
FilterSramSzkB:  512
OfmapSramSzkB:   512
IfmapOffset:    0
FilterOffset:   10000000
OfmapOffset:    20000000
Bandwidth : 32
Dataflow : ws
MemoryBanks:   1
ReadRequestBuffer: 512
WriteRequestBuffer: 512

[layout]
IfmapCustomLayout: False
IfmapSRAMBankBandwidth: 10
IfmapSRAMBankNum: 10
IfmapSRAMBankPort: 2
FilterCustomLayout: False
FilterSRAMBankBandwidth: 10
FilterSRAMBankNum: 10
FilterSRAMBankPort: 2

[sparsity]
SparsitySupport : false
SparseRep : ellpack_block
OptimizedMapping : false
BlockSize : 8
RandomNumberGeneratorSeed : 40

[run_presets]
InterfaceBandwidth: USER
UseRamulatorTrace: False
"""

SCALESIM_TOPOLOGY = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
                     "Strides,\nres2a_branch2b, 58, 58, 3, 3, 64, 64, 1,\n")

SCALESIM_LAYOUT = ("Layer name, IFMAP Height Intraline Factor, IFMAP Width Intraline Factor, Filter Height Intraline "
                   "Factor, Filter Width Intraline Factor, Channel Intraline Factor, Num Filter Intraline Factor, "
                   "IFMAP Height Intraline Order, IFMAP Width Intraline Order, Channel Intraline Order, IFMAP Height "
                   "Interline Order, IFMAP Width Interline Order, Channel Interline Order, Num Filter Intraline "
                   "Order, Channel Intraline Order, Filter Height Intraline Order, Filter Width Intraline Order, Num "
                   "Filter Interline Order, Channel Interline Order, Filter Height Interline Order, Filter Width "
                   "Interline Order,\n"
                   "res2a_branch2b, 1, 1, 1, 1, 1, 1, 0, 1, 2, 0, 1, 2, 0, 1, 2, 3, 0, 1, 2, 3,\n")


def _numpy2_compat() -> None:
    """scalesim 3.0.0 calls int() on 1-element arrays (max over an (n, 1) array), an error since NumPy 2.4;
    make `max` in its two memory modules return a scalar there instead (same values as with older NumPy)."""
    import numpy as np
    import scalesim.memory.double_buffered_scratchpad_mem as dbm
    import scalesim.memory.read_buffer as rb

    def scalar_max(*args, **kwargs):
        value = builtins.max(*args, **kwargs)
        return value.item() if isinstance(value, np.ndarray) and value.size == 1 else value

    rb.max = scalar_max
    dbm.max = scalar_max


def bench_scalesim() -> dict:
    try:
        from scalesim.scale_sim import scalesim
    except ImportError:
        return {"error": "scalesim is not installed (pip install scalesim)"}
    _numpy2_compat()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        (tmp_path / "scale.cfg").write_text(SCALESIM_CFG)
        (tmp_path / "topology.csv").write_text(SCALESIM_TOPOLOGY)
        (tmp_path / "layout.csv").write_text(SCALESIM_LAYOUT)
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            t = time.perf_counter()
            sim = scalesim(save_disk_space=True, verbose=False, config="scale.cfg", topology="topology.csv",
                           layout="layout.csv")
            sim.run_scale(top_path="out")
            wall = time.perf_counter() - t
        finally:
            os.chdir(cwd)
        layer = sim.runner.single_layer_sim_object_list[0]
        total_incl_prefetch, total, stalls, util, mapping, compute_util = layer.get_compute_report_items()
    import scalesim as scalesim_pkg
    version = getattr(scalesim_pkg, "__version__", None)
    if version is None:
        from importlib.metadata import version as pkg_version
        version = pkg_version("scalesim")
    return {"version": version, "wall_s": round(wall, 2), "cycles_incl_prefetch": int(total_incl_prefetch),
            "cycles": int(total), "stall_cycles": int(stalls), "overall_utilization_pct": round(float(util), 2),
            "mapping_efficiency_pct": round(float(mapping), 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-scalesim", action="store_true")
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--before", metavar="REV", help="also time the timing package of this git revision")
    parser.add_argument("--full", action="store_true", help="also demo1 whole (21 M events, ~2 GB and ~30 s per run)")
    parser.add_argument("--case", help=argparse.SUPPRESS)  # internal: one case, as JSON on stdout
    parser.add_argument("--reference", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case, args.repeat, args.reference)))
        return 0
    report: dict = {"python": platform.python_version(), "machine": platform.machine(),
                    "cpus": os.cpu_count()}
    print("simulated operations per second (simulate() wall time, best of", args.repeat, "):")
    report["ops"] = bench_ops(args.repeat, args.before, args.full)
    for row in report["ops"]:
        line = (f"  {row['case']:38s} {row['operations']:7d} ops {row['wall_s']:8.4f} s {row['ops_per_s']:9d} ops/s "
                f"{row['peak_rss_mib']:5d} MiB")
        if "before" in row:
            b = row["before"]
            line += (f" | {args.before}: {b['wall_s']:8.4f} s {b['ops_per_s']:9d} ops/s {b['peak_rss_mib']:5d} MiB"
                     f" | x{row['ops_per_s'] / b['ops_per_s']:.2f}")
        print(line + f" ({row['cycles']} cycles)")
    resnet = bench_resnet(args.repeat)
    report["resnet"] = resnet
    print(f"ResNet-50 {resnet['schedule']} on {resnet['hardware']}: traced + simulated in {resnet['wall_s']:.4f} s "
          f"(trace alone {resnet['trace_wall_s']:.4f} s), {resnet['operations']} operations, {resnet['cycles']} "
          f"cycles (roofline {resnet['roofline_cycles']}, TensorCore {resnet['tensorcore_utilization']:.1%} busy)")
    if not args.skip_scalesim:
        print("SCALE-Sim v3 on the same layer (16 x 24, ws) ... ", end="", flush=True)
        ss = bench_scalesim()
        report["scalesim"] = ss
        if "error" in ss:
            print(ss["error"])
        else:
            ratio = ss["wall_s"] / resnet["wall_s"]
            report["scalesim_over_dsasim_wall"] = round(ratio, 1)
            print(f"{ss['wall_s']:.1f} s, {ss['cycles_incl_prefetch']} cycles incl. prefetch ({ss['cycles']} after "
                  f"prefetch, {ss['stall_cycles']} stall); wall-time ratio SCALE-Sim / dsasim = {ratio:,.0f}x; "
                  f"cycles dsasim {resnet['cycles']} vs SCALE-Sim {ss['cycles_incl_prefetch']}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
