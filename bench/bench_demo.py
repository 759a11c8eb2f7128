"""Wall time of `dsasim demo`, the whole command as a user runs it, optionally beside an older revision.

    python bench/bench_demo.py [--before REV] [--runs 3] [--jobs 2] [--numeric]

Each run is a fresh `python -m dsasim.cli demo --count-only --jobs N --quiet` (`--numeric`: without --count-only,
so with the data and the torch check); with `--before REV` the same command runs with dsasim and kernels/ of git
revision REV (exported to a temporary folder and built there), the two alternated run by run so that both see the
same machine. It prints every run and the medians, and their ratio: the figure to quote on a shared machine, whose
absolute times wander by 15 %.
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


def demo_seconds(tree: Path, jobs: int, numeric: bool) -> float:
    """Wall seconds of one `dsasim demo` run with the dsasim and kernels/ of `tree`."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    cmd = [sys.executable, "-m", "dsasim.cli", "demo", "--jobs", str(jobs), "--quiet"]
    cmd += [] if numeric else ["--count-only"]
    start = time.perf_counter()
    subprocess.run(cmd, cwd=tree, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REV", help="also run git revision REV, alternated with this tree")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--numeric", action="store_true", help="the numeric demo (data, torch check), not --count-only")
    args = parser.parse_args()
    what = f"dsasim demo{'' if args.numeric else ' --count-only'} --jobs {args.jobs}"
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"this tree": ROOT}
        if args.before:
            trees[args.before] = export_revision(args.before, Path(tmp), ("dsasim", "kernels", "setup.py",
                                                                         "pyproject.toml"))
        times: dict[str, list[float]] = {label: [] for label in trees}
        for run in range(args.runs):
            for label, tree in reversed(list(trees.items())):  # (the older first in each pair)
                times[label].append(demo_seconds(tree, args.jobs, args.numeric))
            print(f"run {run + 1}: " + "   ".join(f"{label} {times[label][-1]:6.2f} s" for label in trees),
                  flush=True)
    medians = {label: statistics.median(t) for label, t in times.items()}
    line = f"{what}, medians of {args.runs}: " + "   ".join(f"{label} {m:.2f} s" for label, m in medians.items())
    if args.before:
        line += f"   ratio {medians['this tree'] / medians[args.before]:.2f}"
    print(line)


if __name__ == "__main__":
    main()
