"""Regenerate the network SRAM-sizing figures of docs/sizing-sram.md (written next to this script, as PNGs) and print
their tables.

    .venv/bin/python plots/network_figures.py

  network-resnet50-sweep.png      ResNet-50 (torchvision v1.5, batch 1): total traffic and estimated cycles vs SRAM,
                                  with the summed lower bounds and compulsory traffic, on blog and blog-fp32
  network-mobilenetv2-sweep.png   the same for MobileNetV2

Each is `dsasim sweep-sram --network NAME --sizes 64KiB:8MiB:20 --hardware blog,blog-fp32 --within 10%`.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from dsasim.architect.studies.executor import open_executor  # noqa: E402
from dsasim.architect.studies.network import load_network  # noqa: E402
from dsasim.architect.studies.network_eval import sweep_network  # noqa: E402
from dsasim.architect.studies.sweep import parse_sizes  # noqa: E402
from dsasim.cli.sweep import format_network_sweep  # noqa: E402
from dsasim.hardware import preset  # noqa: E402
from dsasim.view.plot import plot_network_sweep  # noqa: E402


def main() -> None:
    sizes = parse_sizes("64KiB:8MiB:20")
    hardwares = [preset("blog"), preset("blog-fp32")]
    executor = open_executor("process", 2)
    try:
        for name in ("resnet50", "mobilenetv2"):
            sweep = sweep_network(load_network(name), hardwares, sizes, executor, progress=True, within=0.10)
            print(format_network_sweep(sweep))
            path = plot_network_sweep(sweep, HERE / f"network-{name}-sweep.png")
            print(f"wrote {path}\n")
    finally:
        executor.close()


if __name__ == "__main__":
    main()
