"""Start-up time of the command line beside `python -c "import numpy"`, measured side by side in one run.

    python bench/bench_cli_startup.py [--runs 5] [--before REV]

Each line is one fresh interpreter per run (median and min over the runs, wall seconds): the aim is
`dsasim --help` under 0.5 s (issue 8). With `--before REV` each case also runs with the dsasim of git revision
REV (exported and built in a temporary folder), interleaved with this tree's, so that load drifts hit both alike
(issue 27: `import dsasim` loads its public names lazily). The last lines name the heavy modules `import dsasim.cli` plus building
its parser loads beyond what `import dsasim` already loaded (should be none: each command imports its model
when it runs).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing_utils import ROOT, export_revision  # noqa: E402

HEAVY = ("torch", "matplotlib", "simpy", "dsasim.traced.schedule", "dsasim.architect.search.layer_search", "dsasim.architect.studies.sweep", "dsasim.timing",
         "dsasim.view.plot", "dsasim.kernels")
CASES = [
    ("python -c 'import numpy'", ["-c", "import numpy"]),
    ("python -c 'import dsasim'", ["-c", "import dsasim"]),
    ("python -c 'import dsasim.cli'", ["-c", "import dsasim.cli"]),
    ("dsasim --help", ["-m", "dsasim.cli", "--help"]),
]


def wall_seconds(args: list[str], tree: Path) -> float:
    """Seconds of one fresh interpreter running `args` with the dsasim of `tree` (output discarded)."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, stdout=subprocess.DEVNULL, env=env, cwd=tree)
    return time.perf_counter() - start


def main() -> None:
    """Print median/min start-up seconds of each case, runs interleaved so that load drifts hit all alike."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--before", metavar="REV", help="also time the dsasim of this git revision, side by side")
    args = parser.parse_args()
    runs = args.runs
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"this tree": ROOT}
        if args.before:
            trees[args.before] = export_revision(args.before, Path(tmp), ("dsasim", "kernels", "setup.py",
                                                                         "pyproject.toml"))
        times: dict[tuple[str, str], list[float]] = {(label, name): [] for label in trees for name, _ in CASES}
        for _ in range(runs):
            for name, case in CASES:
                for label, tree in reversed(list(trees.items())):  # (the older first in each pair)
                    times[label, name].append(wall_seconds(case, tree))
    for (label, name), seconds in times.items():
        print(f"{label:12s} {name:32s} median {statistics.median(seconds):6.3f} s   min {min(seconds):6.3f} s   "
              f"({runs} runs)")
    probe = ("import sys, dsasim; before = set(sys.modules); import dsasim.cli; dsasim.cli.build_parser(); "
             f"added = set(sys.modules) - before; "
             f"print(sorted(h for h in {HEAVY!r} if any(m == h or m.startswith(h + '.') for m in added)))")
    added = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True, cwd=ROOT,
                           env=dict(os.environ, PYTHONPATH=str(ROOT))).stdout.strip()
    print(f"heavy modules the CLI adds to `import dsasim` for --help: {added}")


if __name__ == "__main__":
    main()
