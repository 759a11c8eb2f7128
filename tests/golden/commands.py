"""The commands whose `--json` is frozen in `tests/golden/*.json` (recorded before the architecture rebuild).

    python tests/golden/commands.py --write [NAME ...]   # re-record (only for a documented behaviour change)
    python tests/golden/commands.py --check [NAME ...]   # compare, as tests/test_golden.py does

Each entry is (name, dsasim arguments); the command writes `--json` into a temporary file, which must equal
`tests/golden/NAME.json` byte for byte.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

CONV = "conv:ic=64,oc=64,h=28,k=3,p=1"
GEMM = "gemm:m=512,n=384,k=256"
CONV_CHAIN = "resnet18.layer1.0"
GEMM_CHAIN = "gemm-chain:m=512,n=256,k=256,l=256"

COMMANDS: dict[str, list[str]] = {
    "demo-count-only": ["demo", "--count-only", "--jobs", "2"],
    **{f"search-conv-{size}": ["search", CONV, "--sram", size] for size in ("32KiB", "128KiB", "1MiB")},
    **{f"search-gemm-{size}": ["search", GEMM, "--sram", size] for size in ("32KiB", "128KiB", "1MiB")},
    **{f"search-conv-chain-{size}": ["search", CONV_CHAIN, "--sram", size, "--confirm", "1"]
       for size in ("64KiB", "256KiB", "1MiB")},
    **{f"search-gemm-chain-{size}": ["search", GEMM_CHAIN, "--sram", size] for size in ("64KiB", "256KiB", "1MiB")},
    "search-conv-cycles": ["search", CONV, "--sram", "128KiB", "--objective", "cycles"],
    "search-blog-l1": ["search", CONV, "--hardware", "blog-l1"],
    "sweep-sram-layer": ["sweep-sram", CONV, "--sizes", "16KiB:1MiB:5", "--quiet"],
    "sweep-sram-chain": ["sweep-sram", GEMM_CHAIN, "--sizes", "32KiB:1MiB:4", "--quiet"],
    "network-resnet18": ["network", "resnet18", "--quiet"],
    "network-resnet50-256KiB": ["network", "resnet50", "--sram", "256KiB", "--quiet"],
    "shapes": ["shapes", "gemm:m=64,n=256,k=256", "--vary", "m=16:128:16", "--quiet"],
    "simulate-demo2-ways2": ["simulate", "demo2", "--ways", "2"],
}


def run(name: str, json_path: Path) -> subprocess.CompletedProcess:
    """Run golden command NAME writing its JSON to JSON_PATH (exit status and output returned)."""
    command = [sys.executable, "-m", "dsasim.cli", *COMMANDS[name], "--json", str(json_path)]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONHASHSEED": "0"})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true")
    mode.add_argument("--check", action="store_true")
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    names = args.names or list(COMMANDS)
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            out = Path(tmp) / f"{name}.json"
            start = time.perf_counter()
            proc = run(name, out)
            seconds = time.perf_counter() - start
            if proc.returncode != 0 or not out.exists():
                print(f"{name}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
                failed += 1
                continue
            golden = HERE / f"{name}.json"
            if args.write:
                golden.write_bytes(out.read_bytes())
                print(f"{name}: written ({seconds:.1f} s)")
            elif golden.read_bytes() != out.read_bytes():
                print(f"{name}: DIFFERS from {golden.relative_to(ROOT)} ({seconds:.1f} s)")
                failed += 1
            else:
                print(f"{name}: same ({seconds:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
