"""The README's fusion table: chains fused vs layer by layer under several SRAM sizes (simulated cycles).

    python bench/fusion_table.py [--sizes 32KiB,64KiB,128KiB,512KiB,1536KiB] [CHAIN ...]

Per chain and size: the best partition, its traffic / the chain's compulsory traffic, the whole chain fused
(traffic, cycles, recomputed MACs, halo policy and tiles) and layer by layer (traffic, cycles). Every chosen schedule
is traced (checked against the model) and timed, so cycles are simulated.
"""

from __future__ import annotations

import argparse
import time

from dsasim import preset
from dsasim.architect.chain import parse_chain
from dsasim.architect.fused_search import evaluate_fused_space, search_chain
from dsasim.architect.sweep import format_bytes, parse_bytes
from kernels.fused_kernel import run_fused
from kernels.loopnest_kernel import run_loopnest

CHAINS = ["resnet18.layer1.0", "resnet50.res2a", "mobilenetv2.features.3"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("chains", nargs="*", default=CHAINS)
    ap.add_argument("--sizes", default="32KiB,64KiB,128KiB,512KiB,1536KiB")
    args = ap.parse_args()
    hw = preset("blog")
    print("| chain | SRAM | best | best / bound | all fused: traffic B, cycles, recomputed MACs, nest | "
          "layer by layer: traffic B, cycles |")
    print("|---|---:|---|---:|---|---|")
    for name in args.chains:
        chain = parse_chain(name)
        for size in args.sizes.split(","):
            cap = parse_bytes(size)
            r = search_chain(chain, hw, cap, fused_runner=run_fused, loopnest_runner=run_loopnest)
            best = r.totals(r.best, r.fold(r.best))
            f = r.fused
            fused = ("does not fit" if f is None else
                     f"{f.traffic_bytes:,}, {f.cycles:,}, {f.analysis.recomputed_macs:,}, {f.fused.halo} "
                     f"{f.fused.tiles[1]}x{f.fused.tiles[2]} weights {f.fused.weights}")
            lbl = r.totals(r.layer_by_layer, r.fold(r.layer_by_layer))
            print(f"| {name} | {format_bytes(cap)} | {r.label(r.best)} | "
                  f"{best['traffic_bytes'] / r.compulsory_bytes:.3f} | {fused} | "
                  f"{lbl['traffic_bytes']:,}, {lbl['cycles']:,} |", flush=True)
    chain = parse_chain("mobilenetv2.features.3")
    t = time.perf_counter()
    space = evaluate_fused_space(chain, hw)
    dt = time.perf_counter() - t
    print(f"\nfused nests of {chain.name} (3 layers): {space.evaluations:,} evaluated in {dt * 1e3:.1f} ms "
          f"({space.evaluations / dt:,.0f}/s)")


if __name__ == "__main__":
    main()
