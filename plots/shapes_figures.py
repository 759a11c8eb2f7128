"""Regenerate the dynamic-shapes figure and table of docs/model/shapes.md (written next to this script) and print them.

    .venv/bin/python plots/shapes_figures.py

  shapes-bert-attention.png   BERT-base attention over sequence length 1..128 (blog, 256 KiB): TensorCore
                              utilization of the scores q @ k^T (S x 64 @ 64 x S: S on the 24 output channels) and of
                              the context P @ v (S x S @ S x 64: S on the 16 input channels), and the cycles of the
                              per-shape best, the dispatch table and one generic schedule

The table: per layer, the single generic schedule's loss and the dispatch table within 5 % (`dsasim shapes`).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from dsasim.architect.studies.executor import open_executor  # noqa: E402
from dsasim.architect.problems.layers import parse_layer  # noqa: E402
from dsasim.architect.studies.shapes import parse_vary, sweep_shapes  # noqa: E402
from dsasim.hardware import preset  # noqa: E402

CASES = [  # (label, layer, vary)
    ("BERT q/k/v/out projection", "gemm:m=128,n=768,k=768", "m=1:128"),
    ("BERT scores q @ k^T", "gemm:m=128,n=128,k=64", "m+n=1:128"),
    ("BERT context P @ v", "gemm:m=128,n=64,k=128", "m+k=1:128"),
    ("BERT feed-forward in", "gemm:m=128,n=3072,k=768", "m=1:128"),
    ("BERT feed-forward out", "gemm:m=128,n=768,k=3072", "m=1:128"),
    ("ResNet-50 res2a_branch2b", "resnet50.res2a_branch2b", "n=1:16"),
    ("ResNet-50 res4a_branch2b", "resnet50.res4a_branch2b", "n=1:16"),
]


def main() -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    hw = dataclasses.replace(preset("blog"), sram_bytes=256 * 1024)
    executor = open_executor("process", 2)
    rows, sweeps = [], {}
    try:
        for label, layer, vary in CASES:
            dim, values = parse_vary(vary)
            sweep = sweep_shapes(parse_layer(layer), dim, values, hw, 0.05, executor, progress=True)
            sweeps[label] = sweep
            fit = [i for i, p in enumerate(sweep.points) if p.cycles is not None]
            losses = [sweep.loss(sweep.single, i) for i in fit]
            utils = [sweep.points[i].tensorcore_utilization for i in fit]
            rows.append(f"| {label} | `{layer}` over {vary} | {min(utils):.0%}–{max(utils):.0%} | "
                        f"{max(losses):.1%} / {sum(losses) / len(losses):.1%} | {len(sweep.dispatch)} ranges, "
                        f"{len(sweep.distinct_schedules)} schedules |")
            print(rows[-1], flush=True)
    finally:
        executor.close()
    fig = Figure(figsize=(9, 6.5))
    top, bottom = fig.subplots(2, 1, sharex=True)
    for label, style in (("BERT scores q @ k^T", "-"), ("BERT context P @ v", "--")):
        s = sweeps[label]
        xs = [p.value for p in s.points]
        top.step(xs, [100 * p.tensorcore_utilization for p in s.points], style, where="mid", label=label)
        bottom.plot(xs, [p.cycles for p in s.points], style, color="black", label=f"{label}: best per shape")
        bottom.plot(xs, [s.cost[s.dispatched(i)][i] for i in range(len(xs))], style, color="tab:blue", alpha=0.7,
                    label=f"{label}: dispatch ({len(s.dispatch)} ranges)")
        bottom.plot(xs, [s.cost[s.single][i] for i in range(len(xs))], style, color="tab:red", alpha=0.6,
                    label=f"{label}: one generic schedule")
    top.set_ylabel("TensorCore utilization (%)")
    top.set_ylim(0, 105)
    top.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)  # off the data
    top.set_title("BERT-base attention, one head, blog hardware, 256 KiB SRAM")
    bottom.set_xlabel("sequence length")
    bottom.set_ylabel("cycles (estimate)")
    bottom.set_ylim(bottom=0)  # heights proportional to cycles
    bottom.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    bottom.grid(True, alpha=0.3)
    path = HERE / "shapes-bert-attention.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
