"""Regenerate plots/llm-decode-batch.png: a Llama-3-8B-like decoder layer in decode (KV cache of 4096 tokens) at
batch 1, 8 and 32, per SRAM size: bytes per token by what they are (weights / KV cache / activations, stacked) and
tokens per second for the layer, on blog (1-byte words, 32 DDR bytes a cycle, 1 GHz).

    .venv/bin/python plots/llm_decode_batch.py

Its numbers are the JSON of `COMMAND` (tests/test_network_vary.py runs the same command and checks its figures):
dsasim sweep-sram --network llama3-8b-layer:phase=decode,context=4096 --vary-network batch=1,8,32
--sizes 512KiB,2MiB,8MiB. Weights stream once per decode step, shared by the batch, so their bytes per token fall as
1/batch; each sequence reads its own KV cache, so those stay; the layer turns compute-bound at batch 32.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

COMMAND = ["sweep-sram", "--network", "llama3-8b-layer:phase=decode,context=4096", "--vary-network", "batch=1,8,32",
           "--sizes", "512KiB,2MiB,8MiB", "--quiet"]
FIGURE = HERE / "llm-decode-batch.png"


def decode_batch_figures() -> dict:
    """The JSON of COMMAND (its text printed on stdout)."""
    from dsasim.cli import main as cli

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "vary.json"
        code = cli(COMMAND + ["--json", str(path)])
        if code != 0:
            raise SystemExit(f"llm_decode_batch: {' '.join(COMMAND)} exited {code}")
        return json.loads(path.read_text())


def plot(data: dict, path: Path) -> Path:
    """Bytes per token stacked by role per (batch, SRAM size), and tokens/s per batch vs SRAM size, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    labels, bottoms = [], []
    roles = (("weights", "tab:blue"), ("kv_cache", "tab:orange"), ("activations", "tab:green"))
    x = 0
    ticks = []
    for sweep in data["sweeps"]:
        batch = sweep["network"].rsplit("batch=", 1)[1]
        sizes, rates = [], []
        for point in sweep["points"]:
            per = point["per_token"]["bytes_per_token"]
            bottom = 0.0
            for role, colour in roles:
                left.bar(x, per[role] / 2**20, bottom=bottom, color=colour,
                         label=role.replace("_", " ") if x == 0 else None)
                bottom += per[role] / 2**20
            size = point["sram_bytes"]
            ticks.append((x, f"b={batch}\n{size >> 10} KiB"))
            sizes.append(size)
            rates.append(point["per_token"]["tokens_per_second"])
            x += 1
        x += 1
        right.plot([s >> 10 for s in sizes], rates, marker="o", label=f"batch {batch}")
        labels.append(batch)
        bottoms.append(bottom)
    left.set_xticks([t for t, _ in ticks], [label for _, label in ticks], fontsize=7)
    left.set_ylabel("DDR MiB per token (one layer)")
    left.set_title("bytes per token: weights / KV cache / activations")
    left.legend()
    right.set_xscale("log", base=2)
    right.set_xlabel("SRAM KiB")
    right.set_ylabel("tokens/s (one layer)")
    right.set_title("tokens per second vs SRAM size")
    right.legend(loc="center right")
    fig.suptitle("llama3-8b-layer decode, context 4096, on blog: batch 1, 8, 32")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main() -> None:
    print(f"wrote {plot(decode_batch_figures(), FIGURE)}")


if __name__ == "__main__":
    main()
