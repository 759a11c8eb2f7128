"""First touch of fresh memory with numpy's transparent-huge-page advice on and off, side by side in one run.

    python bench/bench_first_touch.py [--runs 3] [--gib 1] [--demo] [--tile-dot]

Each line is a fresh interpreter per run (the advice is per process, and the cost is the kernel's, paid once per
page a process has not touched before): `np.ones` of `--gib` GiB with numpy's default advice (`on`) and with
`dsasim.util.numpy_hugepages_off()` (`off`), alternated so that both see the same machine. `--demo` also times
`dsasim demo --only demo1 --count-only` both ways (NUMPY_MADVISE_HUGEPAGE=1 keeps numpy's default in the CLI).
The ratio on/off is the figure; it depends on the kernel (THP `enabled`/`defrag` settings are printed) and on how
fragmented the machine's memory is, so it is ~1 on a machine whose huge pages come free and ~5 on this VM.
`--tile-dot` times the other side of the advice: demo1's numeric inner step, the dot of an image column (one float
from each of 2,048 pages of 4 KiB) with a weight row, over every pixel of a 1 x 2048 x 56 x 56 image made with the
advice off and on (µs per pixel, the first touch excluded): why a schedule's tensor data is made with it on
(`dsasim.util.numpy_hugepages_for_tensor_data`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

TOUCH = """
import sys, time
import numpy as np
from dsasim.util import numpy_hugepages_off
if sys.argv[1] == "off":
    numpy_hugepages_off()
start = time.perf_counter()
a = np.ones(int(float(sys.argv[2]) * (1 << 27)))
print(time.perf_counter() - start)
"""

TILE_DOT = """
import sys, time
import numpy as np
from dsasim.util import numpy_hugepages_for_tensor_data, numpy_hugepages_off
numpy_hugepages_off()
rng = np.random.default_rng(0)
if sys.argv[1] == "on":
    with numpy_hugepages_for_tensor_data():
        image = rng.standard_normal((1, 2048, 56, 56), dtype=np.float32)
else:
    image = rng.standard_normal((1, 2048, 56, 56), dtype=np.float32)
row = rng.standard_normal(2048, dtype=np.float32)
best = float("inf")
for _ in range(3):
    start = time.perf_counter()
    for oh in range(56):
        for ow in range(56):
            np.dot(image[0:1, :, oh:oh + 1, ow:ow + 1].reshape(-1), row)
    best = min(best, time.perf_counter() - start)
print(best / (56 * 56) * 1e6)
"""


def tile_dot_us(mode: str) -> float:
    """µs per pixel of demo1's numeric dot over an image made with the advice `mode` ('on' or 'off')."""
    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    out = subprocess.run([sys.executable, "-c", TILE_DOT, mode], check=True, capture_output=True, text=True,
                         env=env).stdout
    return float(out.strip())


def _thp_setting(name: str) -> str:
    """The kernel's THP setting `name` (the bracketed choice), or '?' where it cannot be read."""
    try:
        return Path(f"/sys/kernel/mm/transparent_hugepage/{name}").read_text().strip()
    except OSError:
        return "?"


def touch_seconds(mode: str, gib: float) -> float:
    """Seconds to create a `gib` GiB array of ones in a fresh interpreter, advice `mode` ('on' or 'off')."""
    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    out = subprocess.run([sys.executable, "-c", TOUCH, mode, str(gib)], check=True, capture_output=True, text=True,
                         env=env).stdout
    return float(out.strip())


def demo1_seconds(mode: str) -> float:
    """Wall seconds of `dsasim demo --only demo1 --count-only` (traced and timed), advice `mode`."""
    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    if mode == "on":
        env["NUMPY_MADVISE_HUGEPAGE"] = "1"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "dsasim.cli", "demo", "--only", "demo1", "--count-only", "--quiet"],
                   check=True, capture_output=True, env=env)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--demo", action="store_true", help="also time demo1 count-only, traced and timed")
    parser.add_argument("--tile-dot", action="store_true",
                        help="also time demo1's numeric dot over tensor data made with the advice on and off")
    args = parser.parse_args()
    print(f"THP enabled: {_thp_setting('enabled')}; defrag: {_thp_setting('defrag')}")
    cases = [(f"np.ones, {args.gib:g} GiB", "s", lambda mode: touch_seconds(mode, args.gib))]
    if args.demo:
        cases.append(("dsasim demo --only demo1 --count-only", "s", demo1_seconds))
    if args.tile_dot:
        cases.append(("image-column dot, per pixel", "us", tile_dot_us))
    for label, unit, fn in cases:
        times: dict[str, list[float]] = {"on": [], "off": []}
        for _ in range(args.runs):
            for mode in ("on", "off"):
                times[mode].append(fn(mode))
        on, off = statistics.median(times["on"]), statistics.median(times["off"])
        print(f"{label:40s} advice on {on:6.2f} {unit:2s}  off {off:6.2f} {unit:2s}  on/off {on / off:5.2f}   "
              f"(medians of {args.runs})")


if __name__ == "__main__":
    main()
