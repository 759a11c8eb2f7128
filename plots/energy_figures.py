"""The SRAM rule of docs/model/energy.md against the published points: a table (printed) and a figure (written
next to this script).

    .venv/bin/python plots/energy_figures.py

  energy-sram-rule.png   read energy per access and area against capacity: the rule (lines) and every published
                         point (fitted: the 45 nm Accelergy 0.4 points; not fitted: 32/40 nm, Accelergy 0.3 and
                         ZigZag's 22 nm CACTI 7 pool)

The table: every published point beside the rule's figure at its capacity, port width and node; then the rule.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from dsasim.energy import sram_rule  # noqa: E402
from dsasim.energy.accelergy_points import ACCELERGY_SRAM_POINTS  # noqa: E402
from dsasim.energy.sources import CHECK_POINTS  # noqa: E402


def _size(nbytes: int) -> str:
    return f"{nbytes // (1 << 20)} MiB" if nbytes >= 1 << 20 else f"{nbytes // 1024} KiB" if nbytes >= 1024 \
        else f"{nbytes} B"


def main() -> None:
    fitted = set(sram_rule.fitted_points())
    lines = ["| node | capacity | port | banks | read pJ: published | rule | write pJ: published | rule | "
             "area mm2: published | rule | use | design [source] |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for p in ACCELERGY_SRAM_POINTS:
        width = p.width_bits // 8
        use = "fitted" if p in fitted else "node pair" if p.node_nm == 32 else \
            "Accelergy 0.3, not fitted" if p.accelergy_version == "0.3" else "check"
        folder = re.split(r"/(?:ref_outputs|ref-output|outputs)/", p.path)[0].split("/")[-1]
        design = f"{folder} {p.component.split('[')[0].split('.')[-1]}"
        lines.append(f"| {p.node_nm} nm | {_size(p.capacity_bytes)} | {p.width_bits}-bit | {p.banks} | "
                     f"{p.read_pj:.4g} | {sram_rule.sram_read_pj(p.capacity_bytes, width, p.node_nm):.4g} | "
                     f"{p.write_pj:.4g} | {sram_rule.sram_write_pj(p.capacity_bytes, width, p.node_nm):.4g} | "
                     f"{p.area_um2 / 1e6:.4g} | {sram_rule.sram_area_mm2(p.capacity_bytes, p.node_nm, width):.4g} | "
                     f"{use} | {design} [accelergy-exercises] |")
    for p in CHECK_POINTS:
        width = p.width_bits // 8
        lines.append(f"| {p.node_nm} nm | {_size(p.capacity_bytes)} | {p.width_bits}-bit | {p.banks} | "
                     f"{p.read_pj:.4g} | {sram_rule.sram_read_pj(p.capacity_bytes, width, p.node_nm):.4g} | - | - | "
                     f"{p.area_um2 / 1e6:.4g} | {sram_rule.sram_area_mm2(p.capacity_bytes, p.node_nm, width):.4g} | "
                     f"check | {p.design} [{p.source}] |")
    print("\n".join(lines))
    f = sram_rule.fit()
    print()
    for name, unit in (("read", "pJ"), ("write", "pJ"), ("area", "um2"), ("leak", "mW")):
        width = f" x width_bits^{f[name + '_width_exp']:.3f}" if f[name + "_width_exp"] else ""
        print(f"{name} ({unit}) = exp({f[name + '_log_k']:.4f}) x capacity_bytes^{f[name + '_cap_exp']:.3f}{width} x "
              f"(node/45)^{f[name + '_node_exp']:.2f}; worst ratio to a fitted point {f[name + '_worst']:.2f}")
    _plot(HERE / "energy-sram-rule.png")


def _plot(path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    caps = np.geomspace(1024, 64 << 20, 60)
    fig, (ax_e, ax_a) = plt.subplots(1, 2, figsize=(11, 4.2))
    for width, style in ((8, "-"), (32, "--")):
        ax_e.plot(caps, [sram_rule.sram_read_pj(int(c), width, 45) for c in caps], style, color="C0",
                  label=f"rule, {8 * width}-bit port, 45 nm")
    ax_e.plot(caps, [sram_rule.sram_read_pj(int(c), 32, 22) for c in caps], ":", color="C2",
              label="rule, 256-bit port, 22 nm")
    ax_a.plot(caps, [sram_rule.sram_area_mm2(int(c), 45, 8) for c in caps], "-", color="C0",
              label="rule, 64-bit port, 45 nm")
    ax_a.plot(caps, [sram_rule.sram_area_mm2(int(c), 22, 32) for c in caps], ":", color="C2",
              label="rule, 256-bit port, 22 nm")
    fitted = sram_rule.fitted_points()
    groups = (("fitted (45 nm CACTI, Accelergy 0.4)", fitted, "o", "C0"),
              ("not fitted (32/40 nm; Accelergy 0.3)", [p for p in ACCELERGY_SRAM_POINTS if p not in fitted], "s",
               "C1"),
              ("check: ZigZag CACTI 7, 22 nm", list(CHECK_POINTS), "^", "C2"))
    for label, points, marker, color in groups:
        ax_e.scatter([p.capacity_bytes for p in points], [p.read_pj for p in points], marker=marker, color=color,
                     label=label, zorder=3)
        ax_a.scatter([p.capacity_bytes for p in points], [p.area_um2 / 1e6 for p in points], marker=marker,
                     color=color, label=label, zorder=3)
    for ax, ylabel in ((ax_e, "read energy per access (pJ)"), (ax_a, "area (mm2)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("SRAM capacity (bytes)")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("dsasim's SRAM rule against published CACTI figures")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
