"""The SRAM rule of docs/model/energy.md against the published points: a table (printed) and a figure (written
next to this script).

    .venv/bin/python plots/energy_figures.py

  energy-sram-rule.png   read energy per access and area against capacity: the rule (lines, 64- and 256-bit ports
                         at 45 nm) and every published point (fitted: the 45 nm CACTI points; checked: the 32/40 nm
                         ones and ZigZag's 22 nm CACTI 7 pool, which the rule was not fitted to)

The table: every published point with the rule's figure at its capacity, port width and node, and their ratio.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from dsasim.energy import sram_rule  # noqa: E402
from dsasim.energy.sources import CHECK_POINTS, SRAM_POINTS  # noqa: E402


def _size(nbytes: int) -> str:
    return f"{nbytes // (1 << 20)} MiB" if nbytes >= 1 << 20 else f"{nbytes // 1024} KiB" if nbytes >= 1024 \
        else f"{nbytes} B"


def main() -> None:
    lines = ["| node | capacity | port | published read pJ | rule pJ | rule / published | published area mm2 | "
             "rule mm2 | rule / published | use | source |", "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for p in (*SRAM_POINTS, *CHECK_POINTS):
        pj = sram_rule.sram_read_pj(p.capacity_bytes, p.width_bits // 8, p.node_nm)
        mm2 = sram_rule.sram_area_mm2(p.capacity_bytes, p.node_nm)
        use = "fitted" if p.node_nm == sram_rule.FIT_NODE_NM else "node pair" if p.node_nm == 32 else "check"
        lines.append(f"| {p.node_nm} nm | {_size(p.capacity_bytes)} | {p.width_bits}-bit | {p.read_pj:g} | {pj:.4g} | "
                     f"{pj / p.read_pj:.2f} | {p.area_um2 / 1e6:.4g} | {mm2:.4g} | {mm2 * 1e6 / p.area_um2:.2f} | "
                     f"{use} | {p.design} [{p.source}] |")
    print("\n".join(lines))
    f = sram_rule.fit()
    print(f"\nrule: read_pj = exp({f['log_k']:.4f}) x capacity_bytes^{f['cap_exp']:.3f} x width_bits^{f['width_exp']:.3f}"
          f" x (node/45)^{f['energy_node_exp']:.2f}; area_um2 = exp({f['area_log_k']:.4f}) x "
          f"capacity_bytes^{f['area_cap_exp']:.3f} x (node/45)^{f['area_node_exp']:.2f}")
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
    ax_a.plot(caps, [sram_rule.sram_area_mm2(int(c), 45) for c in caps], "-", color="C0", label="rule, 45 nm")
    ax_a.plot(caps, [sram_rule.sram_area_mm2(int(c), 22) for c in caps], ":", color="C2", label="rule, 22 nm")
    groups = (("fitted (45 nm CACTI, Accelergy)", [p for p in SRAM_POINTS if p.node_nm == 45], "o", "C0"),
              ("32 / 40 nm (Accelergy)", [p for p in SRAM_POINTS if p.node_nm != 45], "s", "C1"),
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
