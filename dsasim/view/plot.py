"""Pictures of a timing simulation and of an SRAM sweep (matplotlib, Agg canvas; no pyplot state is touched).

* `plot_bandwidth`: DDR bytes per cycle over time, loads and stores stacked, with the bandwidth ceiling; below it,
  sharing the time axis, the power over time (W, window averages) stacked by component (DDR, SRAM, inner levels,
  TensorCore, vector, leakage) when the result carries energy.
* `plot_gantt`: one row per engine that ran something (idle engines are named in the title); operations as bars
  colored by tensor (at least 1/2000 of the run wide).
  An engine with more than 300 operations is aggregated into a busy-fraction profile (400 bins over the run,
  stacked by tensor; a full row is 100% busy), so a 10k-operation run stays readable.
* `plot_sram`: SRAM occupancy over time, stacked by tensor (time-averaged per window), with the peak and the
  capacity; on hardware with memory levels below the SRAM, one more panel per level, drawn the same way.
* `plot_sweep`: an SRAM sweep's best traffic, lower bound, compulsory traffic and cycles against SRAM size.
* `network_sweep_simulation_figure`: a network simulated at each SRAM size, simulated cycles beside the estimate.
Each `plot_X(..., path)` returns the path it wrote (the format follows the suffix, e.g. .png or .svg); its
`X_figure(...)` returns the matplotlib Figure unsaved (`dsasim.view.html_report` draws it inline as SVG).

What every figure keeps to (tests/test_trust_plots.py checks the Figure objects): a legend never covers data (it
sits outside the axes); a linear axis of cycles starts at zero (beside a log traffic axis, a twin cycles axis from
its minimum would turn a 3 % change into half the height); numbers in titles carry thousands separators and sizes
use `dsasim.util.format_bytes`; colours name what they mean in the legend.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import EngFormatter

from dsasim.atomic import atomic_path
from dsasim.timing._result import window_integrals
from dsasim.timing.result import SimResult
from dsasim.util import format_bytes

if TYPE_CHECKING:
    from dsasim.architect.studies.target_sweep import TargetSweep

_MAX_BARS = 300  # an engine with more operations is drawn as a busy-fraction profile
_PROFILE_BINS = 400


def _figure(width: float = 10.0, height: float = 4.0) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _time_axis(result: SimResult) -> tuple[float, str]:
    """Scale from cycles to the unit shown on the x axis, and its label."""
    us = 1e6 / result.clock_hz
    if result.cycles * us >= 1000:
        return us / 1000, "time (ms)"
    return us, "time (µs)"


def _save(fig: Figure, path: str | Path) -> Path:
    """Save atomically (a temporary file beside `path`, renamed into place); missing folders are created."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fmt = path.suffix[1:].lower() or None  # the temporary name keeps the suffix, but say it: no guessing
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, format=fmt)
    return path


def _legend_beside(ax: Any, fontsize: int = 8) -> None:
    """The axes' legend to the right of its plotting area, top-aligned (constrained layout makes room): never over
    data."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=fontsize)


def _legend_below(fig: Figure, handles: list, labels: list[str], fontsize: int = 8, ncol: int = 2) -> None:
    """One legend for the whole figure, under its axes (constrained layout makes room): never over data."""
    fig.legend(handles, labels, loc="outside lower center", ncol=max(1, min(ncol, len(labels))), fontsize=fontsize,
               frameon=False)


def _cycles_axis_from_zero(ax: Any) -> None:
    """A linear cycles axis starting at zero, so the height of a curve is proportional to its value; ticks in
    engineering units (15 M), no offset text."""
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_formatter(EngFormatter(sep=" "))


def _colors(names: list[str]) -> dict[str, tuple]:
    from matplotlib import colormaps
    cmap = colormaps["tab10" if len(names) <= 10 else "tab20"]
    return {n: cmap(k % cmap.N) for k, n in enumerate(names)}


def bandwidth_figure(result: SimResult, title: str | None = None) -> Figure:
    """DDR bandwidth timeline: load and store bytes/cycle per window, stacked, with the ceiling; below it the power
    (W per window, stacked by component) when the result carries energy."""
    scale, xlabel = _time_axis(result)
    w = result.window_cycles
    n = len(result.ddr_load_bytes)
    edges = np.arange(n + 1) * w * scale
    load = result.ddr_load_bytes / w
    store = result.ddr_store_bytes / w
    power = result.power_w
    fig = _figure(10.0, 4.0 if power is None else 7.0)
    if power is None:
        ax = fig.add_subplot()
    else:
        ax, power_ax = fig.subplots(2, 1, sharex=True)
    ax.stairs(load, edges, fill=True, color="tab:blue", alpha=0.8, label="load")
    ax.stairs(load + store, edges, baseline=load, fill=True, color="tab:orange", alpha=0.8, label="store")
    bw = result.dram_bytes_per_cycle
    if result.dram_shared_load_store:
        ax.axhline(bw, color="black", linestyle="--", linewidth=1, label=f"ceiling {bw:g} B/cycle (shared)")
        top = bw
    else:
        ax.axhline(bw, color="black", linestyle="--", linewidth=1, label=f"ceiling {bw:g} B/cycle per direction")
        ax.axhline(2 * bw, color="grey", linestyle=":", linewidth=1, label="both directions")
        top = 2 * bw
    ax.set_xlim(0, max(edges[-1], 1e-12))
    ax.set_ylim(0, top * 1.15)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("DDR bytes / cycle")
    moved = result.loaded_bytes + result.stored_bytes
    avg = moved / result.cycles if result.cycles else 0.0
    ax.set_title(title or f"DDR bandwidth on {result.hardware}: {moved:,} B in {result.cycles:,} cycles\n"
                          f"(average {avg:.2f} B/cycle, window {w:,} cycles)")
    _legend_beside(ax)
    if power is not None:
        _power_panel(power_ax, result, power, edges)
        power_ax.set_xlabel(xlabel)
        ax.set_xlabel("")
    return fig


def plot_bandwidth(result: SimResult, path: str | Path, title: str | None = None) -> Path:
    """`bandwidth_figure` written to `path` (atomically; the format follows the suffix); the path written."""
    return _save(bandwidth_figure(result, title), path)


def _power_panel(ax: Any, result: SimResult, power: np.ndarray, edges: np.ndarray) -> None:
    """Power over time (W, each window's average), stacked by component, with the peak and the average."""
    colors = _colors(list(result.power_components))
    base = np.zeros(power.shape[1])
    for row, name in enumerate(result.power_components):
        if not power[row].any():
            continue  # (a unit the run never used: no empty legend entry)
        ax.stairs(base + power[row], edges, baseline=base, fill=True, color=colors[name], alpha=0.85, label=name)
        base = base + power[row]
    peak, average = result.peak_power_w, result.average_power_w
    ax.axhline(average, color="black", linestyle="--", linewidth=1, label=f"average {average:.3g} W")
    ax.set_ylim(0, max(peak, 1e-12) * 1.15)
    ax.set_ylabel("power (W)")
    ax.set_title(f"power by component: peak {peak:.3g} W, average {average:.3g} W, "
                 f"{result.energy_pj * 1e-6:,.1f} µJ in all", fontsize=10)
    _legend_beside(ax)


def gantt_figure(result: SimResult, title: str | None = None) -> Figure:
    """Engine Gantt chart: a row per engine that ran an operation (the idle ones named in the title), operations
    colored by tensor (merged when there are many)."""
    scale, xlabel = _time_axis(result)
    op_engine = result.op_engine
    op_tensor = result.op_tensor
    starts = result.op_start.astype(np.float64) * scale
    ends = result.op_end.astype(np.float64) * scale
    counts = np.bincount(op_engine[op_engine >= 0], minlength=len(result.engines))
    rows = [(k, e) for k, e in enumerate(result.engines) if counts[k]]  # (engine index, name), drawn top down
    idle = [e for k, e in enumerate(result.engines) if not counts[k]]
    used = sorted({result.tensors[t] for t in op_tensor[op_engine >= 0].tolist()})
    colors = _colors(used)
    fig = _figure(10.0, 1.4 + 0.7 * max(1, len(rows)))
    ax = fig.add_subplot()
    total = result.cycles * scale
    handles: dict[str, Any] = {}
    bins = np.linspace(0.0, max(total, 1e-12), _PROFILE_BINS + 1)
    width = bins[1] - bins[0]
    any_profile = False
    for position, (engine_index, engine) in enumerate(rows):
        m = op_engine == engine_index
        aggregate = int(counts[engine_index]) > _MAX_BARS
        any_profile |= aggregate
        y = len(rows) - 1 - position
        base = np.zeros(_PROFILE_BINS)
        for t in sorted(set(op_tensor[m].tolist())):
            mt = m & (op_tensor == t)
            name = result.tensors[t]
            s, e = starts[mt], ends[mt]
            if aggregate:  # busy fraction per bin, stacked by tensor: the row's height is 100% busy
                # (integrated in cycles, over the bins' edges in cycles)
                frac = window_integrals(result.op_start[mt], result.op_end[mt], np.ones(len(s)),
                                        bins / scale) / (width / scale)
                artist = ax.stairs(y - 0.4 + (base + frac) * 0.8, bins, baseline=y - 0.4 + base * 0.8, fill=True,
                                   color=colors[name])
                base = base + frac
            else:  # one bar per operation, at least 1/2000 of the run wide so that short ones stay visible
                widths = np.maximum(e - s, total / 2000)
                artist = ax.broken_barh(list(zip(s.tolist(), widths.tolist())), (y - 0.4, 0.8),
                                        facecolors=colors[name], edgecolor="none")
            handles.setdefault(name, artist)
        busy = result.utilization(engine)
        ax.text(1.005, y, f"{busy:.0%}" + (" *" if aggregate else ""), transform=ax.get_yaxis_transform(),
                va="center", fontsize=8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([e for _, e in reversed(rows)])
    ax.set_ylim(-0.6, max(1, len(rows)) - 0.4)
    ax.set_xlim(0, max(total, 1e-12))
    ax.set_xlabel(xlabel)
    note = f"; * = busy fraction per 1/{_PROFILE_BINS} of the run" if any_profile else ""
    idle_note = f"; idle, not drawn: {', '.join(idle)}" if idle else ""
    if title is None:
        title = (f"Engines on {result.hardware}: {result.cycles:,} cycles, {result.operations:,} operations\n"
                 f"(busy % at right{note}{idle_note})")
    elif idle:  # a caller's title still says which engines were left out
        title += f" ({idle_note[2:]})"
    ax.set_title(title)
    if handles:
        _legend_below(fig, list(handles.values()), list(handles), ncol=6)
    return fig


def plot_gantt(result: SimResult, path: str | Path, title: str | None = None) -> Path:
    """`gantt_figure` written to `path` (atomically; the format follows the suffix); the path written."""
    return _save(gantt_figure(result, title), path)


def sram_figure(result: SimResult, title: str | None = None) -> Figure:
    """SRAM occupancy over time, stacked by tensor, with the exact peak and the capacity; a panel per memory level
    below the SRAM, if any."""
    scale, xlabel = _time_axis(result)
    w = result.window_cycles
    fig = _figure(10.0, 4.0 + 2.2 * len(result.levels))
    axes = [fig.add_subplot()] if not result.levels else list(fig.subplots(1 + len(result.levels), 1, sharex=True))
    names = list(result.sram_tensors)  # a tensor keeps its color in every panel
    names += [t for lv in result.levels for t in lv.tensors if t not in names]
    colors = _colors(list(dict.fromkeys(names)))
    _occupancy_panel(axes[0], result.sram_tensors, result.sram_occupancy, result.peak_sram_bytes,
                     result.reserved_sram_bytes, result.sram_bytes, "SRAM", w * scale, colors)
    axes[0].set_title(title or f"SRAM occupancy on {result.hardware}\n(window {w:,} cycles; reserved by the "
                               f"trace, x ways: {format_bytes(result.reserved_sram_bytes)})")
    for ax, lv in zip(axes[1:], result.levels):
        _occupancy_panel(ax, lv.tensors, lv.occupancy, lv.peak_bytes, lv.reserved_bytes, lv.capacity_bytes, lv.name,
                         w * scale, colors)
        ax.set_title(f"{lv.name} occupancy (fed from {lv.parent} by {lv.engine}:\n{lv.staged_bytes:,} B staged, "
                     f"{lv.written_back_bytes:,} B written back; reserved {format_bytes(lv.reserved_bytes)})",
                     fontsize=9)
    axes[-1].set_xlabel(xlabel)
    return fig


def plot_sram(result: SimResult, path: str | Path, title: str | None = None) -> Path:
    """`sram_figure` written to `path` (atomically; the format follows the suffix); the path written."""
    return _save(sram_figure(result, title), path)


def _occupancy_panel(ax: Any, tensors: tuple[str, ...], occ: np.ndarray, peak: int, reserved: int, capacity_bytes: int,
                     level: str, window: float, colors: dict[str, tuple]) -> None:
    """One level's occupancy (bytes per window, one row per tensor) stacked by tensor, with its peak and its
    capacity (when on a comparable scale); window: a window's width in x-axis units."""
    n = occ.shape[1] if occ.ndim == 2 else 0
    edges = np.arange(n + 1) * window
    base = np.zeros(n)
    kib = 1 / 1024
    for k, name in enumerate(tensors):
        ax.stairs((base + occ[k]) * kib, edges, baseline=base * kib, fill=True, color=colors[name], alpha=0.85,
                  label=name)
        base = base + occ[k]
    ax.axhline(peak * kib, color="black", linestyle="--", linewidth=1, label=f"peak {format_bytes(peak)}")
    top = max(peak, reserved, 1) * kib * 1.3
    capacity = capacity_bytes * kib
    if capacity <= top * 1.5:  # show the capacity line when it is on a comparable scale
        top = max(top, capacity * 1.1)
        ax.axhline(capacity, color="red", linestyle=":", linewidth=1, label=f"capacity {format_bytes(capacity_bytes)}")
    else:
        ax.plot([], [], " ", label=f"capacity {format_bytes(capacity_bytes)} (off scale)")
    ax.set_xlim(0, max(edges[-1] if n else 0, 1e-12))
    ax.set_ylim(0, top)
    ax.set_ylabel(f"{level} KiB (average per window)")
    _legend_beside(ax)


def plot_all_names(prefix: str = "") -> list[str]:
    """The file names `plot_all` writes in its folder (for the CLI's check that no other output is one)."""
    return [f"{prefix}{figure}.png" for figure in ("bandwidth", "gantt", "sram")]


def plot_all(result: SimResult, directory: str | Path, prefix: str = "") -> list[Path]:
    """The three figures as PNGs in `directory` (bandwidth, gantt, sram)."""
    directory = Path(directory)
    paths = [directory / name for name in plot_all_names(prefix)]
    return [plot(result, path) for plot, path in zip((plot_bandwidth, plot_gantt, plot_sram), paths)]


def _finish_twin(fig: Figure, ax: Any, ax2: Any, title: str, fontsize: int = 8) -> Figure:
    """Finish a figure whose axes `ax` (traffic, log) and `ax2` (cycles) share x: the cycles axis from zero, one
    legend for both under the plot, the title, a grid; the figure."""
    _cycles_axis_from_zero(ax2)
    lines, lines2 = ax.get_legend_handles_labels(), ax2.get_legend_handles_labels()
    _legend_below(fig, lines[0] + lines2[0], lines[1] + lines2[1], fontsize=fontsize, ncol=3)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    return fig


def sweep_figure(result: TargetSweep) -> Figure:
    """An SRAM sweep (a layer's or a chain's `TargetSweep`): traffic (best found, lower bound, compulsory; for a
    chain also all fused and layer by layer) and cycles against SRAM size, log-log."""
    pts = result.choices
    xs = [p.sram_bytes / 1024 for p in pts]
    fig = _figure(8.0, 4.8)
    ax = fig.add_subplot()
    traffic = [p.traffic_bytes if p.traffic_bytes is not None else float("nan") for p in pts]
    ax.plot(xs, traffic, "o-", color="tab:blue", label="best schedule: traffic")
    ax.plot(xs, [p.lower_bound_bytes for p in pts], "--", color="tab:red", label="lower bound")
    ax.plot(xs, [p.compulsory_bytes for p in pts], ":", color="black", label="compulsory traffic")
    if pts and hasattr(pts[0], "layer_by_layer_bytes"):  # a chain: its partitions' extremes beside the best
        for attr, style, label in (("fused_bytes", "^--", "all fused"),
                                   ("layer_by_layer_bytes", "v--", "layer by layer")):
            ax.plot(xs, [getattr(p, attr) if getattr(p, attr) is not None else float("nan") for p in pts], style,
                    alpha=0.7, label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("SRAM (KiB)")
    ax.set_ylabel("DDR traffic (bytes, log scale)")
    ax2 = ax.twinx()
    cycles = [p.cycles if p.cycles is not None else float("nan") for p in pts]
    sim = all(p.cycles_source == "simulated" for p in pts if p.cycles is not None)
    ax2.plot(xs, cycles, "s-", color="tab:green", label="best schedule: cycles" + ("" if sim else " (estimate)"))
    ax2.set_ylabel("cycles")
    return _finish_twin(fig, ax, ax2, f"{result.spec} on {result.hardware.name}: SRAM sizing")


def plot_sweep(result: TargetSweep, path: str | Path) -> Path:
    """`sweep_figure` written to `path` (atomically; the format follows the suffix); the path written."""
    return _save(sweep_figure(result), path)


def level_sweep_figure(sweep: TargetSweep) -> Figure:
    """A sweep of one memory level's size (a level sweep's `TargetSweep`): traffic into every level and the
    cycles against it."""
    xs = [s / 1024 for s in sweep.sizes]
    fig = _figure(8.0, 4.8)
    ax = fig.add_subplot()
    for lv in sweep.hardware.levels:
        ax.plot(xs, [a.level(lv.name).traffic_bytes if a else float("nan") for a in sweep.choices], "o-",
                label=f"into {lv.name} (from {lv.parent})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(f"{sweep.level} (KiB)")
    ax.set_ylabel("traffic (bytes, log scale)")
    ax2 = ax.twinx()
    ax2.plot(xs, [a.cycles if a else float("nan") for a in sweep.choices], "s--", color="black",
             label="cycles (slowest level or TensorCore)")
    ax2.set_ylabel("cycles")
    return _finish_twin(fig, ax, ax2, f"{sweep.spec} on {sweep.hardware.name}: sizing {sweep.level}")


def plot_level_sweep(sweep: TargetSweep, path: str | Path) -> Path:
    """`level_sweep_figure` written to `path` (atomically; the format follows the suffix); the path written."""
    return _save(level_sweep_figure(sweep), path)


# what a bar of the network chart is: (colour, legend label) per kind of layer (`_bar_kind`)
NETWORK_BAR_KINDS: dict[str, tuple[str, str]] = {
    "tensorcore": ("tab:blue", "TensorCore layer (conv, linear, matmul)"),
    "fused chain": ("tab:purple", "conv chain fused into one schedule"),
    "split chain": ("tab:orange", "conv chain run in parts ([1] [2 3] ...)"),
    "vector": ("tab:gray", "vector layer (pooling, add, softmax ...)"),
    "attention": ("tab:green", "attention fused into one schedule (scores, softmax, output)"),
}


def _bar_kind(layer: Any) -> str:
    """The key of a network layer in NETWORK_BAR_KINDS: a chain's op names its searched partition, e.g.
    'chain [1 2 3]' (one schedule) or 'chain [1] [2 3]'."""
    if layer.kind == "chain":
        return "fused chain" if layer.op.count("[") == 1 else "split chain"
    if layer.kind not in NETWORK_BAR_KINDS:
        raise ValueError(f"layer {layer.name}: no bar colour for kind {layer.kind!r}")
    return layer.kind


def _short_layer_name(name: str) -> str:
    """A chain's name without the prefix its members repeat: 'layer1.0.conv1+layer1.0.conv2' ->
    'layer1.0.conv1+conv2'."""
    first, *rest = name.split("+")
    stem = first.split(".")
    short = [first]
    for member in rest:
        parts = member.split(".")
        same = 0
        while same < min(len(stem), len(parts)) - 1 and stem[same] == parts[same]:
            same += 1
        short.append(".".join(parts[same:]))
    return "+".join(short)


def network_figure(result: Any) -> Figure:
    """A network under one SRAM size (`NetworkResult`): per layer, traffic bars with the lower bound marked,
    and estimated cycles bars below, coloured by kind of layer (NETWORK_BAR_KINDS); unplaceable and unmodelled
    layers are left out (named in the title)."""
    layers = [x for x in result.layers if x.status == "ok"]
    left_out = [x.layer.name for x in result.layers if x.status != "ok"]
    xs = list(range(len(layers)))
    kinds = [_bar_kind(x.layer) for x in layers]
    colors = [NETWORK_BAR_KINDS[k][0] for k in kinds]
    fig = _figure(max(8.0, 0.2 * len(layers) + 4.5), 7.5)
    top, bottom = fig.subplots(2, 1, sharex=True)
    top.bar(xs, [x.traffic_bytes for x in layers], color=colors)
    top.plot(xs, [x.lower_bound_bytes for x in layers], "_", color="tab:red", markersize=8, mew=2,
             label="lower bound (traffic)")
    top.set_yscale("log")
    top.set_ylabel("DDR traffic (bytes, log scale)")
    bottom.bar(xs, [x.cycles for x in layers], color=colors)
    bottom.set_yscale("log")
    bottom.set_ylabel("cycles (estimated, log scale)")
    bottom.set_xticks(xs)
    bottom.set_xticklabels([_short_layer_name(x.layer.name) for x in layers], rotation=90, fontsize=7)
    bottom.set_xlim(-0.6, max(len(layers), 1) - 0.4)
    present = [k for k in NETWORK_BAR_KINDS if k in kinds]  # the legend names only the kinds drawn
    handles = [Patch(color=NETWORK_BAR_KINDS[k][0], label=NETWORK_BAR_KINDS[k][1]) for k in present]
    handles += top.get_legend_handles_labels()[0]
    top.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=8)
    note = (f"; left out: {', '.join(left_out[:3])}" + (f" and {len(left_out) - 3} more" if len(left_out) > 3 else "")
            if left_out else "")
    top.set_title(f"{result.network.name} on {result.hardware.name}, SRAM {format_bytes(result.sram_bytes)}:\n"
                  f"{result.traffic_bytes:,} B, {result.cycles:,} cycles{note}")  # two lines: a narrow chart's fit
    return fig


def plot_network(result: Any, path: str | Path) -> Path:
    """`network_figure` written to `path` (atomically; the format follows the suffix); the path written."""
    return _save(network_figure(result), path)


def network_sweep_figure(sweep: Any) -> Figure:
    """A network SRAM sweep (`NetworkSweep`): total traffic (best per layer, summed bounds, compulsory) and
    estimated cycles against SRAM size, one line per hardware, log-log."""
    fig = _figure(8.0, 4.8)
    ax = fig.add_subplot()
    ax2 = ax.twinx()
    for h, row in enumerate(sweep.results):
        xs = [r.sram_bytes / 1024 for r in row]
        color = f"C{h}"
        tag = f" ({row[0].hardware.name})" if len(sweep.results) > 1 else ""
        ax.plot(xs, [r.traffic_bytes for r in row], "o-", color=color, label="traffic" + tag)
        ax.plot(xs, [r.lower_bound_bytes for r in row], "--", color=color, alpha=0.8,
                label="summed lower bounds" + tag)
        ax.plot(xs, [r.compulsory_bytes for r in row], ":", color=color, label="compulsory" + tag)
        ax2.plot(xs, [r.cycles for r in row], "s-", color=color, alpha=0.45, label="cycles (estimate)" + tag)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("SRAM (KiB)")
    ax.set_ylabel("DDR traffic (bytes, log scale)")
    ax2.set_ylabel("cycles")
    return _finish_twin(fig, ax, ax2, f"{sweep.network.name}: SRAM sizing", fontsize=7)


def plot_network_sweep(sweep: Any, path: str | Path) -> Path:
    """`network_sweep_figure` written to `path` (atomically; the format follows the suffix); the path written."""
    return _save(network_sweep_figure(sweep), path)



def network_sweep_simulation_figure(network: str, sram_bytes: Sequence[int], estimated_cycles: Sequence[int],
                                    simulated_cycles: Sequence[int | None]) -> Figure:
    """A network swept over SRAM sizes and simulated at each (`sweep-sram --simulate-network`): the simulated
    cycles beside the analytic estimate against SRAM size (log2 x); a size not simulated (None) has no simulated
    point (the line breaks there) and is marked on the x axis."""
    if not len(sram_bytes) == len(estimated_cycles) == len(simulated_cycles):
        raise ValueError(f"one figure per size: {len(sram_bytes)} sizes, {len(estimated_cycles)} estimates, "
                         f"{len(simulated_cycles)} simulations")
    fig = _figure(8.0, 4.4)
    ax = fig.add_subplot()
    xs = [b / 1024 for b in sram_bytes]
    ax.plot(xs, estimated_cycles, "o--", color="tab:blue", label="analytic estimate (layers summed)")
    ax.plot(xs, [np.nan if c is None else c for c in simulated_cycles], "s-", color="tab:red",
            label="simulated in one timeline")
    missing = [x for x, c in zip(xs, simulated_cycles) if c is None]
    if missing:
        ax.plot(missing, [0] * len(missing), "x", color="black", markersize=8, clip_on=False,
                label=f"not simulated ({len(missing)} of {len(xs)} sizes)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("SRAM (KiB)")
    ax.set_ylabel("cycles")
    _cycles_axis_from_zero(ax)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(f"{network}:\nsimulated cycles beside the estimate", fontsize=10)  # a path as name: own line
    handles, labels = ax.get_legend_handles_labels()
    _legend_below(fig, handles, labels, fontsize=8, ncol=3)
    return fig

def shapes_figure(sweep: Any) -> Figure:
    """A shape sweep (`ShapeSweep`): TensorCore utilization of each shape's best schedule (top), and the figure of
    its objective (estimated cycles for layers) of the per-shape best, the dispatch table's schedule and the single
    generic schedule (bottom)."""
    pts = [(i, p) for i, p in enumerate(sweep.points) if p.cycles is not None]
    xs = [p.value for _, p in pts]
    fig = _figure(8.0, 6.0)
    top, bottom = fig.subplots(2, 1, sharex=True)
    top.step(xs, [100 * p.tensorcore_utilization for _, p in pts], where="mid", color="tab:purple")
    top.set_ylabel("TensorCore utilization (%)")
    top.set_ylim(0, 105)
    top.set_title(f"{sweep.problem.name} over {sweep.dim}, {sweep.hardware.name}, "
                  f"SRAM {format_bytes(sweep.sram_bytes)}")
    bottom.plot(xs, [p.reference for _, p in pts], "-", color="black", label="best per shape")
    bottom.plot(xs, [sweep.cost[sweep.dispatched(i)][i] for i, _ in pts], "--", color="tab:blue",
                label=f"dispatch table ({len(sweep.dispatch)} ranges, within {100 * sweep.max_loss:g}%)")
    if sweep.single is not None:
        bottom.plot(xs, [sweep.cost[sweep.single][i] for i, _ in pts], ":", color="tab:red",
                    label="one generic schedule")
    bottom.set_xlabel(sweep.dim)
    from dsasim.architect.studies.shapes import FIGURE_AXES

    bottom.set_ylabel(FIGURE_AXES[sweep.objective])
    _cycles_axis_from_zero(bottom)
    _legend_beside(bottom)
    bottom.grid(True, alpha=0.3)
    return fig


def plot_shapes(sweep: Any, path: str | Path) -> Path:
    """`shapes_figure` written to `path` (atomically; the format follows the suffix); the path written."""
    return _save(shapes_figure(sweep), path)


def network_timeline_figure(layers: Sequence[tuple[str, int, int]], window_cycles: int, ddr_load: Sequence[float],
                            ddr_store: Sequence[float], sram_occupancy: Sequence[float], ceiling: float | None = None,
                            capacity_bytes: int | None = None) -> Figure:
    """A whole network timed in one timeline: a bar per layer from its start to its end cycle (top; overlapping
    layers stack on separate rows), the DDR bytes per cycle per window, loads and stores stacked (middle), the
    SRAM occupancy per window (bottom); `ceiling` (B/cycle) and `capacity_bytes` drawn as lines when given."""
    rows: list[int] = []  # each layer on the first row free at its start: overlap shows as a second row
    row_ends: list[int] = []
    for _, start, end in layers:
        row = next((r for r, busy_until in enumerate(row_ends) if busy_until <= start), len(row_ends))
        if row == len(row_ends):
            row_ends.append(end)
        else:
            row_ends[row] = end
        rows.append(row)
    fig = _figure(10.0, 8.0)
    top, middle, bottom = fig.subplots(3, 1, sharex=True, height_ratios=(1.0 + 0.3 * len(row_ends), 1.5, 1.5))
    for k, ((_, start, end), row) in enumerate(zip(layers, rows)):  # neighbours in distinct colours (C0..C9)
        top.broken_barh([(start, max(end - start, 1))], (row - 0.4, 0.8), facecolors=f"C{k % 10}",
                        edgecolor="white", linewidth=0.5)
    top.set_yticks(range(len(row_ends)))
    top.set_yticklabels([f"layers ({r + 1})" for r in range(len(row_ends))])
    top.set_ylim(-0.6, max(1, len(row_ends)) - 0.4)
    top.set_title(f"{len(layers):,} layers in one timeline: {max((e for _, _, e in layers), default=0):,} cycles "
                  f"(a second row: layers that overlap)")
    n = len(ddr_load)
    if len(ddr_store) != n or len(sram_occupancy) != n:
        raise ValueError(f"the timelines differ in length: {n} DDR load, {len(ddr_store)} DDR store, "
                         f"{len(sram_occupancy)} SRAM windows")
    edges = np.arange(n + 1) * window_cycles
    load = np.asarray(ddr_load, dtype=np.float64) / window_cycles
    store = np.asarray(ddr_store, dtype=np.float64) / window_cycles
    middle.stairs(load, edges, fill=True, color="tab:blue", alpha=0.8, label="load")
    middle.stairs(load + store, edges, baseline=load, fill=True, color="tab:orange", alpha=0.8, label="store")
    if ceiling is not None:
        middle.axhline(ceiling, color="black", linestyle="--", linewidth=1, label=f"ceiling {ceiling:g} B/cycle")
    middle.set_ylim(bottom=0)
    middle.set_ylabel("DDR bytes / cycle")
    _legend_beside(middle)
    occupancy = np.asarray(sram_occupancy, dtype=np.float64) / 1024
    bottom.stairs(occupancy, edges, fill=True, color="tab:green", alpha=0.8, label="occupied")
    if capacity_bytes is not None:
        bottom.axhline(capacity_bytes / 1024, color="red", linestyle=":", linewidth=1,
                       label=f"capacity {format_bytes(capacity_bytes)}")
    bottom.set_ylim(bottom=0)
    bottom.set_ylabel("SRAM KiB (average per window)")
    bottom.set_xlabel("cycles")
    bottom.set_xlim(0, max(edges[-1] if n else 0, max((e for _, _, e in layers), default=0), 1))
    bottom.xaxis.set_major_formatter(EngFormatter(sep=" "))
    _legend_beside(bottom)
    return fig


__all__ = ["bandwidth_figure", "gantt_figure", "level_sweep_figure", "network_figure", "network_sweep_figure",
           "network_sweep_simulation_figure", "network_timeline_figure",
           "plot_all", "plot_bandwidth", "plot_gantt", "plot_level_sweep", "plot_network", "plot_network_sweep",
           "plot_shapes", "plot_sram", "plot_sweep", "shapes_figure", "sram_figure", "sweep_figure"]


def plot_network_timeline(simulation: Any, path: str | Path) -> Path:
    """A network simulated in one timeline (`NetworkSimulation`): `network_timeline_figure` of its entries' windows,
    DDR bandwidth and SRAM occupancy, against the DDR ceiling and the SRAM capacity, written to `path`."""
    sim = simulation.sim
    return _save(network_timeline_figure(simulation.layer_slices(), sim.window_cycles, sim.ddr_load_bytes,
                                         sim.ddr_store_bytes, simulation.sram_occupancy()[1],
                                         capacity_bytes=simulation.sram_bytes), path)
