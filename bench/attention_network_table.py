"""The README's transformer table: BERT-base and Llama-3-8B-like layers at a few SRAM sizes, with attention unfused
(`--no-fusion`: S and P through DDR as their own layers) and with the best attention schedule (`search_attention`:
online-softmax fused where it wins), the layer's lower bound and its estimated cycles, on blog.

    .venv/bin/python bench/attention_network_table.py

Each row is `dsasim sweep-sram --network NAME --sizes 256KiB,1MiB,4MiB` with and without `--no-fusion`: the
layer's total DDR traffic (every layer: projections, FFN, norms, attention), its attention entries' traffic alone,
the layer's lower bound (with fusion: the layers' bounds summed, attention's compulsory) and the fused layer's
cycles (the model's estimate).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

NETWORKS = ("bert-base-layer:seq=512", "llama3-8b-layer:phase=prefill,seq=2048",
            "llama3-8b-layer:phase=decode,context=4096,batch=8")
SIZES = "256KiB,1MiB,4MiB"


def _attention_bytes(result, fused: bool) -> int:
    """The traffic of the attention groups' entries: one fused entry each, or their three unfused layers."""
    from dsasim.architect.studies.network import ATTENTION

    if fused:
        return sum(x.traffic_bytes for x in result.layers if x.layer.kind == ATTENTION and x.status == "ok")
    members = {result.network.layers[i].name for g in result.network.attentions for i in g.members}
    return sum(x.traffic_bytes for x in result.layers if x.layer.name in members and x.status == "ok")


def table_rows() -> list[tuple]:
    """(network, SRAM, unfused traffic, fused traffic, attention unfused, attention fused, bound, cycles) rows."""
    from dsasim.architect.studies.executor import open_executor
    from dsasim.architect.studies.network import load_network
    from dsasim.architect.studies.network_eval import sweep_network
    from dsasim.architect.studies.sweep import format_bytes, parse_sizes
    from dsasim.hardware import load_hardware

    hw = load_hardware("blog")
    sizes = parse_sizes(SIZES)
    rows = []
    executor = open_executor("process", 2)
    try:
        for name in NETWORKS:
            network = load_network(name)
            fused = sweep_network(network, [hw], sizes, executor, fusion=True).results[0]
            unfused = sweep_network(network, [hw], sizes, executor, fusion=False).results[0]
            for f, u in zip(fused, unfused):
                rows.append((name, format_bytes(f.sram_bytes), u.traffic_bytes, f.traffic_bytes,
                             _attention_bytes(u, False), _attention_bytes(f, True), f.lower_bound_bytes, f.cycles))
    finally:
        executor.close()
    return rows


def markdown(rows: list[tuple]) -> str:
    """The rows as a markdown table (bytes in MB = 10**6 B, cycles in millions)."""
    lines = ["| layer | SRAM | traffic unfused MB | traffic fused MB | attention unfused MB | attention fused MB "
             "| bound MB | cycles (M) |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for name, sram, unf, fus, a_unf, a_fus, bound, cycles in rows:
        lines.append(f"| {name} | {sram} | {unf / 1e6:,.1f} | {fus / 1e6:,.1f} | {a_unf / 1e6:,.1f} | "
                     f"{a_fus / 1e6:,.1f} | {bound / 1e6:,.1f} | {cycles / 1e6:,.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(table_rows()))
