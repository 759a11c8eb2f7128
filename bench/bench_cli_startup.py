"""Start-up time of the command line beside `python -c "import numpy"`, measured side by side in one run.

    python bench/bench_cli_startup.py [--runs 5]

Each line is one fresh interpreter per run (median and min over the runs, wall seconds): the aim is
`dsasim --help` under 0.5 s (issue 8). The last lines name the heavy modules `import dsasim.cli` plus building
its parser loads beyond what `import dsasim` already loaded (should be none: each command imports its model
when it runs).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

HEAVY = ("torch", "matplotlib", "simpy", "dsasim.traced.schedule", "dsasim.architect.search", "dsasim.architect.sweep", "dsasim.timing",
         "dsasim.view.plot", "dsasim.kernels")
CASES = [
    ("python -c 'import numpy'", ["-c", "import numpy"]),
    ("python -c 'import dsasim'", ["-c", "import dsasim"]),
    ("python -c 'import dsasim.cli'", ["-c", "import dsasim.cli"]),
    ("dsasim --help", ["-m", "dsasim.cli", "--help"]),
]


def wall_seconds(args: list[str]) -> float:
    """Seconds of one fresh interpreter running `args` (output discarded)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    """Print median/min start-up seconds of each case, runs interleaved so that load drifts hit all alike."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    times: dict[str, list[float]] = {name: [] for name, _ in CASES}
    for _ in range(runs):
        for name, args in CASES:
            times[name].append(wall_seconds(args))
    for name, seconds in times.items():
        print(f"{name:32s} median {statistics.median(seconds):6.3f} s   min {min(seconds):6.3f} s   ({runs} runs)")
    probe = ("import sys, dsasim; before = set(sys.modules); import dsasim.cli; dsasim.cli.build_parser(); "
             f"added = set(sys.modules) - before; "
             f"print(sorted(h for h in {HEAVY!r} if any(m == h or m.startswith(h + '.') for m in added)))")
    added = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout.strip()
    print(f"heavy modules the CLI adds to `import dsasim` for --help: {added}")


if __name__ == "__main__":
    main()
