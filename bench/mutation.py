"""Mutation check: plant plausible one-line bugs, one at a time, and see a test fail for each.

    python bench/mutation.py [--jobs N] [--only SUBSTRING ...] [--list]

Each mutant replaces one exact snippet of one library file (the snippet must occur exactly once: a stale mutant
is reported as an error, never skipped silently) in a fresh copy of the committed tree, then runs the test files
named for it (`-x`, so the first failure ends the run). A mutant is **killed** when a test fails (or the run
times out), **survived** when every test passes. The score is killed / (killed + survived); equivalent mutants
(ones that cannot change behaviour) are not listed. Not run by CI: it takes minutes (each mutant runs its tests).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutant:
    """One planted bug: replace `old` by `new` in `path` (relative to the repository root)."""

    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


MEMORY_TESTS = ("tests/test_memory.py", "tests/test_blog_demos.py", "tests/test_blog_api.py",
                "tests/test_library_errors.py")
BOUNDS_TESTS = ("tests/test_bounds.py", "tests/test_blog_api.py", "tests/test_blog_demos.py")
TC_TESTS = ("tests/test_tensorcore.py", "tests/test_blog_demos.py")
ANALYTIC_TESTS = ("tests/test_analytic.py", "tests/test_loopnest.py", "tests/test_lower_bounds.py",
                  "tests/test_search.py")
TIMING_TESTS = ("tests/test_timing.py", "tests/test_timing_rules.py")

MUTANTS: list[Mutant] = [
    # -- memory model ------------------------------------------------------------------------------------------
    Mutant("hit needs only overlap, not containment", "dsasim/memory.py",
           "        if c < a or d > b:\n            return False", "        if d <= a or c >= b:\n            return False",
           MEMORY_TESTS),
    Mutant("store does not make other buffers stale", "dsasim/memory.py",
           "                other.stale = True", "                pass", MEMORY_TESTS),
    Mutant("load bytes ignore word_bytes", "dsasim/memory.py",
           "        nbytes = elements * self._word_bytes\n        buf.loaded_from_ddr = True",
           "        nbytes = elements\n        buf.loaded_from_ddr = True", MEMORY_TESTS),
    Mutant("rmw not counted", "dsasim/memory.py",
           "                self.counters.rmw_bytes += buf.load_bytes", "                pass", MEMORY_TESTS),
    Mutant("reuse flag counts for the blog", "dsasim/memory.py",
           "        if not reuse:\n            blog =", "        if True:\n            blog =", MEMORY_TESTS),
    Mutant("capacity check with >=", "dsasim/memory.py",
           "        if live > self._sram_bytes:", "        if live >= self._sram_bytes:", MEMORY_TESTS),
    Mutant("ways not charged", "dsasim/memory.py",
           "        charged = nbytes * inst.ways", "        charged = nbytes", MEMORY_TESTS),
    Mutant("modified buffer not stored at scope exit", "dsasim/memory.py",
           "            if buf.dirty:\n                self._store(buf)\n            buf.freed = True",
           "            buf.freed = True", MEMORY_TESTS),
    Mutant("reuse load does not store the old contents", "dsasim/memory.py",
           "            if buf.dirty:\n                self._store(buf)\n            buf.generation += 1",
           "            buf.generation += 1", MEMORY_TESTS),
    Mutant("stop clamped one short", "dsasim/memory.py",
           "        stop = min(stop, extent)  # the blog clamps", "        stop = min(stop, extent - 1)  # the blog clamps",
           MEMORY_TESTS),
    Mutant("quirk count clamps slices", "dsasim/memory.py",
           "            n *= (extent if k.stop is None else k.stop) - (0 if k.start is None else k.start)",
           "            n *= min(extent if k.stop is None else k.stop, extent) - (0 if k.start is None else k.start)",
           MEMORY_TESTS),
    # -- segments and bounds -------------------------------------------------------------------------------------
    Mutant("last segment not clamped", "dsasim/segments.py",
           "        limit = stop if self.clamp else stop + tile", "        limit = stop + tile",
           ("tests/test_segments.py", "tests/test_blog_api.py", "tests/test_blog_demos.py")),
    Mutant("window forgets dilation", "dsasim/bounds.py",
           "    hi = (o1 - 1) * stride + (t1 - 1) * dilation - padding", "    hi = (o1 - 1) * stride + (t1 - 1) - padding",
           BOUNDS_TESTS),
    Mutant("blog channels clamped", "dsasim/bounds.py",
           "        channels = (oc_seg[0] // ocpg * icpg, ((oc_seg[1] - 1) // ocpg + 1) * icpg)",
           "        channels = (oc_seg[0] // ocpg * icpg, min(((oc_seg[1] - 1) // ocpg + 1) * icpg, self.in_channels))",
           BOUNDS_TESTS),
    Mutant("groups: last group off by one", "dsasim/bounds.py",
           "        return oc.start // ocpg, (oc.stop - 1) // ocpg + 1", "        return oc.start // ocpg, oc.stop // ocpg + 1",
           BOUNDS_TESTS),
    Mutant("bottom padding amount off by one", "dsasim/bounds.py",
           "    return before, (hi - lo) - (seg_stop - seg_start) - before",
           "    return before, (hi - lo) - (seg_stop - seg_start) - before + 1", BOUNDS_TESTS),
    # -- TensorCore cost and numerics ------------------------------------------------------------------------------
    Mutant("TensorCore ic block rounded down", "dsasim/tensorcore.py",
           "        steps = groups * _ceil_div(icg, self.ic_block) * _ceil_div(ocg, self.oc_block)",
           "        steps = groups * max(1, icg // self.ic_block) * _ceil_div(ocg, self.oc_block)", TC_TESTS),
    Mutant("TensorCore cost ignores kernel taps", "dsasim/tensorcore.py",
           "        cycles = steps * n * oh * ow * kh * kw", "        cycles = steps * n * oh * ow", TC_TESTS),
    Mutant("padded MACs use 16x16", "dsasim/tensorcore.py",
           "        padded = cycles * self.ic_block * self.oc_block", "        padded = cycles * self.ic_block * self.ic_block",
           TC_TESTS),
    Mutant("conv drops the last input-channel block", "dsasim/tensorcore.py",
           "                for i in range(0, c, icb):", "                for i in range(0, c - icb + 1, icb):", TC_TESTS),
    Mutant("vector cycles round down", "dsasim/tensorcore.py",
           "        cycles = _ceil_div(n, self.lanes)", "        cycles = max(1, n // self.lanes)", TC_TESTS),
    # -- the run and its numeric check ----------------------------------------------------------------------------
    Mutant("NaN treated as no error", "dsasim/schedule.py",
           "        if bool(torch.isnan(diff).any()):\n            return math.nan",
           "        diff = torch.nan_to_num(diff, nan=0.0)", ("tests/test_blog_api.py",)),
]


def _run_mutant(mutant: Mutant, timeout_s: float) -> tuple[str, float, str]:
    """Apply one mutant to a fresh copy of the committed tree and run its tests: (outcome, seconds, detail)."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dsasim-mutant-") as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", "HEAD"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        target = Path(tmp) / mutant.path
        text = target.read_text()
        count = text.count(mutant.old)
        if count != 1:
            return "stale", 0.0, f"snippet found {count} times in {mutant.path} (update the mutant)"
        target.write_text(text.replace(mutant.old, mutant.new))
        tests = [t for t in mutant.tests if (Path(tmp) / t).exists()]
        if not tests:
            return "stale", 0.0, f"none of its test files exist: {mutant.tests}"
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        try:
            run = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
                                 cwd=tmp, capture_output=True, text=True, timeout=timeout_s, env=env)
        except subprocess.TimeoutExpired:
            return "killed", time.perf_counter() - start, f"timed out after {timeout_s:.0f} s"
        seconds = time.perf_counter() - start
        last = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr.strip()[-200:]
        if run.returncode == 0:
            return "survived", seconds, last
        failed = next((line for line in run.stdout.splitlines() if line.startswith("FAILED")), last)
        return "killed", seconds, failed[:160]


def main(argv: list[str] | None = None) -> int:
    """Run the mutants and print one line each and the score; exit 1 when any survived or is stale."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=2, help="mutants run at once (default 2)")
    parser.add_argument("--only", nargs="+", metavar="SUBSTRING", help="only mutants whose name contains one")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per mutant before it counts killed")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be >= 1")
    if shutil.which("git") is None:
        parser.error("needs git (it copies the committed tree)")
    mutants = [m for m in MUTANTS if not args.only or any(s in m.name for s in args.only)]
    if args.list:
        for m in mutants:
            print(f"{m.path}: {m.name}")
        return 0
    print(f"{len(mutants)} mutants of the committed tree (uncommitted changes are not seen)", flush=True)
    outcomes: dict[str, int] = {"killed": 0, "survived": 0, "stale": 0}
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for mutant, (outcome, seconds, detail) in zip(mutants, pool.map(lambda m: _run_mutant(m, args.timeout),
                                                                        mutants)):
            outcomes[outcome] += 1
            print(f"{outcome:8s} {seconds:6.1f} s  {mutant.path}: {mutant.name} -- {detail}", flush=True)
    judged = outcomes["killed"] + outcomes["survived"]
    score = outcomes["killed"] / judged if judged else 0.0
    print(f"\nkilled {outcomes['killed']} of {judged} ({score:.0%}); stale {outcomes['stale']}")
    return 0 if outcomes["survived"] == 0 and outcomes["stale"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
