"""The fusion table of docs/model/fusion.md: chains fused vs layer by layer under several SRAM sizes (simulated cycles).

    python bench/fusion_table.py [--sizes 32KiB,64KiB,128KiB,512KiB,1536KiB] [--gemm-sizes ...] [CHAIN ...]

Per chain and size: the best partition, its traffic / the chain's compulsory traffic, the whole chain fused
(traffic, cycles, recomputed MACs, halo policy and tiles) and layer by layer (traffic, cycles). Every chosen schedule
is traced (checked against the model) and timed, so cycles are simulated. A second table does the same for GEMM
chains (BERT-base's attention head and its feed-forward pair), with the nest Chimera's DV / MU model picks beside.
"""

from __future__ import annotations

import argparse
import time

from dsasim import preset
from dsasim.architect.problems.chain_catalogue import parse_chain
from dsasim.architect.search.fused_search import evaluate_fused_space, search_chain
from dsasim.architect.studies.sweep import format_bytes, parse_bytes
from dsasim.kernels.fused_kernel import run_fused
from dsasim.kernels.loopnest_kernel import run_loopnest

CHAINS = ["resnet18.layer1.0", "resnet50.res2a", "mobilenetv2.features.3"]
# BERT-base, sequence 512: one head's S = Q K^T (512 x 64 @ 64 x 512), O = S V (@ 512 x 64), softmax left out;
# the feed-forward pair 512 x 768 @ 768 x 3072 (GELU ~ ReLU between) @ 3072 x 768
GEMM_CHAINS = {"attention head": "gemm-chain:m=512,n=64,k=64,l=512",
               "feed-forward": "gemm-chain:m=512,n=768,k=768,l=3072,relu=1"}


def gemm_table(sizes: list[str]) -> None:
    """The GEMM-chain table (markdown): fused vs layer by layer, and what Chimera's own model would pick."""
    from dsasim.architect.search.gemm_chain import analyze_gemm_chain
    hw = preset("blog")
    print("| chain | SRAM | best | best / bound | all fused: traffic B, cycles, nest (order, tiles m l k n) | "
          "layer by layer: traffic B, cycles | Chimera's pick: its DV B, traced B, est. cycles |")
    print("|---|---:|---|---:|---|---|---|")
    for label, spec in GEMM_CHAINS.items():
        chain = parse_chain(spec)
        for size in sizes:
            cap = parse_bytes(size)
            r = search_chain(chain, hw, cap, fused_runner=run_fused, loopnest_runner=run_loopnest)
            best = r.totals(r.best)
            f = r.fused
            fused = "does not fit" if f is None else \
                f"{f.traffic_bytes:,}, {f.cycles:,}, {f.fused.order} {' '.join(map(str, f.fused.tiles))}"
            lbl = r.totals(r.layer_by_layer)
            lbl_text = "does not fit" if lbl is None else f"{lbl['traffic_bytes']:,}, {lbl['cycles']:,}"
            if r.chimera is None:
                chimera = "nothing fits"
            else:
                a = analyze_gemm_chain(r.chimera, hw)
                chimera = f"{a.chimera_dv_bytes:,}, {a.traffic_bytes:,}, {a.estimated_cycles:,}"
            print(f"| {label} ({spec.split(':', 1)[1]}) | {format_bytes(cap)} | {r.label(r.best)} | "
                  f"{best['traffic_bytes'] / r.compulsory_bytes:.3f} | {fused} | {lbl_text} | {chimera} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("chains", nargs="*", default=CHAINS)
    ap.add_argument("--sizes", default="32KiB,64KiB,128KiB,512KiB,1536KiB")
    ap.add_argument("--gemm-sizes", default="64KiB,256KiB,1536KiB")
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
    print()
    gemm_table(args.gemm_sizes.split(","))
    chain = parse_chain("mobilenetv2.features.3")
    t = time.perf_counter()
    space = evaluate_fused_space(chain, hw)
    dt = time.perf_counter() - t
    print(f"\nfused nests of {chain.name} (3 layers): {space.evaluations:,} evaluated in {dt * 1e3:.1f} ms "
          f"({space.evaluations / dt:,.0f}/s)")


if __name__ == "__main__":
    main()
