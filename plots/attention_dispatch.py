"""Regenerate plots/attention-dispatch.png: the sequence-length dispatch figure of a Llama-3-8B-like layer's attention.

    .venv/bin/python plots/attention_dispatch.py            # the figure (13 lengths x 2 SRAM sizes)
    .venv/bin/python plots/attention_dispatch.py --quick    # 128..512 at 256 KiB only (what the test runs)

The attention of Llama 3 8B (32 query heads over 8 key/value heads, head dimension 128) in causal prefill, n = m
from 128 to 8,192 tokens at two points per octave, on `blog` (1-byte words) at 256 KiB and 2 MiB of SRAM, ranked by
DDR traffic (`sweep_attention_shapes`, the library of `dsasim shapes attention:... --objective traffic
--max-loss 0%`; docs/model/attention.md prints the 2 MiB table that command gives). Per SRAM size one column: per
length the best schedule's traffic, the single length-generic schedule's traffic and the compulsory bytes (Q, K, V
loaded and O stored once: 10,240 B per token), in MB (top) and over the compulsory bytes (bottom), on a background
coloured by the schedule the dispatch table gives each range of lengths (within 0 %: the lengths that share a
best).

The two sizes' sweeps run in two processes (each deterministic): about 13 s of CPU in all (a length's search at
8,192 tokens takes about 1 s of CPU; the templates' costs on every length the rest).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Sequence

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

SPEC = "attention:b=1,h=32,hkv=8,n=128,d=128,causal=1"  # Llama 3 8B: 32 query heads, 8 K/V heads of 128
OBJECTIVE = "traffic"
HARDWARE = "blog"


def lengths_per_octave(lo: int, hi: int, per_octave: int, multiple: int = 16) -> list[int]:
    """lo x 2^(k / per_octave) up to hi, each rounded to a multiple of `multiple` tokens (lo and hi powers of two
    times it stay exact)."""
    octaves = math.log2(hi / lo)
    steps = round(octaves * per_octave)
    return sorted({round(lo * 2 ** (k / per_octave) / multiple) * multiple for k in range(steps + 1)})


LENGTHS = lengths_per_octave(128, 8192, 2)  # 128, 176, 256, 368, 512, ..., 5792, 8192
SRAM_SIZES = (256 * 1024, 2 * 1024 * 1024)
QUICK_LENGTHS = lengths_per_octave(128, 512, 2)  # 128, 176, 256, 368, 512
QUICK_SRAM_SIZES = (256 * 1024,)
FIGURE = HERE / "attention-dispatch.png"


def _label(template: dict[str, Any]) -> str:
    return f"{template['kind']} {template['tiles']['br']}x{template['tiles']['bc']}"


def dispatch_panel(sram_bytes: int, lengths: Sequence[int]) -> dict[str, Any]:
    """One SRAM size's data: per length the best schedule and its traffic, the single generic schedule's traffic,
    the compulsory bytes; the dispatch table's rows (within 0 %) and the templates' labels."""
    from dsasim.architect.problems.attention import parse_attention
    from dsasim.architect.studies.attention_shapes import sweep_attention_shapes
    from dsasim.hardware import load_hardware

    hardware = dataclasses.replace(load_hardware(HARDWARE), sram_bytes=sram_bytes)
    sweep = sweep_attention_shapes(parse_attention(SPEC), "n+m", lengths, hardware, 0.0, OBJECTIVE)
    points = []
    for i, p in enumerate(sweep.points):
        if p.cycles is None:
            raise SystemExit(f"attention_dispatch: {p.reason}")
        points.append({"length": p.value, "best": {"kind": p.nest["kind"], **p.nest["tiles"]},
                       "best_traffic_bytes": p.traffic_bytes,
                       "single_traffic_bytes": sweep.cost[sweep.single][i],
                       "compulsory_bytes": p.problem.compulsory_bytes(hardware.word_bytes),
                       "dispatched": sweep.dispatched(i)})
    return {"sram_bytes": sram_bytes, "points": points, "single": sweep.single,
            "single_label": _label(sweep.templates[sweep.single]),
            "templates": [{"kind": t["kind"], **t["tiles"], "label": _label(t)} for t in sweep.templates],
            "dispatch": [{"lo": e.lo, "hi": e.hi, "schedule": e.schedule, "label": _label(sweep.templates[e.schedule])}
                         for e in sweep.dispatch]}


def dispatch_figures(lengths: Sequence[int] = LENGTHS, sram_sizes: Sequence[int] = SRAM_SIZES,
                     workers: int = 1) -> list[dict[str, Any]]:
    """`dispatch_panel` of every SRAM size, in order (the sizes in `workers` processes, which import this file as
    the module `__main__` or `attention_dispatch`; 1: here)."""
    if workers <= 1 or len(sram_sizes) == 1:
        return [dispatch_panel(size, lengths) for size in sram_sizes]
    with ProcessPoolExecutor(min(workers, len(sram_sizes))) as pool:
        return list(pool.map(dispatch_panel, sram_sizes, [list(lengths)] * len(sram_sizes)))


def plot(panels: Sequence[dict[str, Any]], path: Path) -> Path:
    """One column per SRAM size: the traffic of the best and of the single schedule with the compulsory bound (top,
    MB), the same over the bound (bottom), on the dispatch table's regions."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(panels), figsize=(6.2 * len(panels), 7.4), squeeze=False, sharex="col",
                             gridspec_kw={"height_ratios": [3, 2]})
    colours = plt.get_cmap("tab10")
    for column, panel in enumerate(panels):
        top, bottom = axes[0][column], axes[1][column]
        pts = panel["points"]
        xs = [p["length"] for p in pts]
        # a dispatch row spans from the geometric midpoint with the length before it to the one after it
        edges = [xs[0] / 2 ** 0.25] + [math.sqrt(a * b) for a, b in zip(xs, xs[1:])] + [xs[-1] * 2 ** 0.25]
        for ax in (top, bottom):
            for row in panel["dispatch"]:
                lo, hi = xs.index(row["lo"]), xs.index(row["hi"])
                ax.axvspan(edges[lo], edges[hi + 1], color=colours(row["schedule"] % 10), alpha=0.18, lw=0,
                           label=f"dispatch {row['lo']}..{row['hi']}: #{row['schedule']} {row['label']}"
                           if ax is top else None)
        series = (("best_traffic_bytes", "o-", "black", "best schedule per length"),
                  ("single_traffic_bytes", "s--", "tab:red", f"single generic #{panel['single']}: "
                                                              f"{panel['single_label']}"),
                  ("compulsory_bytes", ":", "grey", "compulsory bound (Q, K, V, O once)"))
        for key, style, colour, label in series:
            top.plot(xs, [p[key] / 1e6 for p in pts], style, color=colour, ms=4, label=label)
            bottom.plot(xs, [p[key] / p["compulsory_bytes"] for p in pts], style, color=colour, ms=4)
        top.set_yscale("log")
        top.set_ylabel("DDR traffic (MB)")
        top.set_title(f"SRAM {panel['sram_bytes'] >> 10:,} KiB")
        top.legend(fontsize=7, loc="upper left")
        bottom.set_ylabel("traffic / compulsory")
        bottom.set_xlabel("sequence length n = m (tokens)")
        bottom.set_xscale("log", base=2)
        bottom.set_xlim(edges[0], edges[-1])
        powers = [x for x in xs if x & (x - 1) == 0]
        bottom.set_xticks(powers, [f"{x:,}" for x in powers])
        bottom.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        for ax in (top, bottom):
            ax.grid(True, which="major", alpha=0.3)
    fig.suptitle("Llama-3-8B attention, causal prefill (32 query / 8 KV heads, d=128) on blog:\n"
                 "the best schedule by traffic per length, one generic schedule, the dispatch table")
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})  # no version stamp: the same data, the same PNG
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="lengths 128..512 at 256 KiB only (seconds)")
    parser.add_argument("--out", type=Path, default=FIGURE, help=f"the PNG (default {FIGURE.name} here)")
    args = parser.parse_args(argv)
    lengths, sizes = (QUICK_LENGTHS, QUICK_SRAM_SIZES) if args.quick else (LENGTHS, SRAM_SIZES)
    panels = dispatch_figures(lengths, sizes, workers=2)
    for panel in panels:
        rows = ", ".join(f"{r['lo']}..{r['hi']} -> #{r['schedule']} ({r['label']})" for r in panel["dispatch"])
        print(f"{panel['sram_bytes'] >> 10} KiB: single #{panel['single']} ({panel['single_label']}); dispatch {rows}")
    print(f"wrote {plot(panels, args.out)}")


if __name__ == "__main__":
    main()
