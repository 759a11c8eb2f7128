"""The energy picture of an SRAM sweep: energy per inference stacked by component (DDR, SRAM, inner levels, the
TensorCore's MACs, the vector unit, leakage) against SRAM size, the accelerator's area on a second axis, and the
three sizing answers marked (least energy, least energy x delay, best performance per mm²).

It keeps to `dsasim.view.plot`'s rules: a legend never covers data (it sits under the axes), the area axis starts
at zero, sizes read as bytes with units.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from dsasim.energy.sizing import EnergyPoint, SizingAnswers
from dsasim.util import format_bytes
from dsasim.view.plot import _figure, _legend_below, _save

__all__ = ["plot_energy_sweep", "energy_plot_path"]


def energy_plot_path(path: str | Path) -> Path:
    """Where the energy figure of a sweep plotted at `path` goes: NAME-energy.SUFFIX beside it."""
    path = Path(path)
    return path.with_name(f"{path.stem}-energy{path.suffix or '.png'}")


def plot_energy_sweep(points: Sequence[EnergyPoint], title: str, path: str | Path) -> Path:
    """Write the stacked energy per inference (uJ) and the area (mm2) against SRAM size; the path written."""
    fit = [p for p in points if p.fits]
    fig = _figure(8.0, 5.0)
    ax = fig.add_subplot()
    if not fit:
        ax.text(0.5, 0.5, "nothing fits at any size", ha="center", va="center", transform=ax.transAxes)
        ax.set_title(title)
        return _save(fig, path)
    xs = list(range(len(fit)))
    components = list(dict.fromkeys(name for p in fit for name in p.energy.energy_breakdown_pj))
    bottom = [0.0] * len(fit)
    for name in components:
        heights = [p.energy.energy_breakdown_pj.get(name, 0.0) / 1e6 for p in fit]
        ax.bar(xs, heights, bottom=bottom, label=f"energy: {name}", width=0.7)
        bottom = [b + h for b, h in zip(bottom, heights)]
    ax.set_xticks(xs, [format_bytes(p.sram_bytes) for p in fit], rotation=45, ha="right", fontsize=8)
    ax.set_xlabel("SRAM size")
    ax.set_ylabel("energy per inference (uJ)")
    answers = SizingAnswers.of(fit)
    marks = (("least energy", answers.least_energy_bytes, "v"), ("least EDP", answers.least_edp_bytes, "D"),
             ("best perf / mm2", answers.best_perf_per_mm2_bytes, "*"))
    top = max(bottom)
    for k, (label, size, marker) in enumerate(marks):
        i = next(i for i, p in enumerate(fit) if p.sram_bytes == size)
        ax.plot([i], [bottom[i] + top * (0.04 + 0.05 * k)], marker, color="black", markersize=7,
                label=f"{label}: {format_bytes(size)}")
    ax.set_ylim(0, top * 1.2)  # room for the answers' marks above the bars
    ax2 = ax.twinx()
    ax2.plot(xs, [p.energy.area_mm2 for p in fit], "o-", color="tab:gray", label="area (mm2)")
    ax2.set_ylabel("area (mm2)")
    ax2.set_ylim(bottom=0)
    lines, lines2 = ax.get_legend_handles_labels(), ax2.get_legend_handles_labels()
    _legend_below(fig, lines[0] + lines2[0], lines[1] + lines2[1], fontsize=7, ncol=3)
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, path)
