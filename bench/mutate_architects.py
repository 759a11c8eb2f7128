"""Mutation check of the architects' loop: plant plausible one-line bugs, each must make a test fail.

    .venv/bin/python bench/mutate_architects.py [--only SUBSTRING] [--json PATH]

Each mutant replaces one exact line fragment in dsasim/analytic.py, lower_bounds.py or search.py, runs the
tests of the analytic model, bounds, search and loop nests (pytest -x, stopping at the first failure), and
restores the file. A mutant is killed when some test fails. Not run by CI (it takes ~20 minutes). Mutants known
to be equivalent (the program cannot behave differently) are not listed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ["tests/test_analytic.py", "tests/test_lower_bounds.py", "tests/test_search.py", "tests/test_loopnest.py"]

# (file, what the bug is, exact fragment, replacement)
MUTANTS = [
    ("analytic.py", "window sum: one stride too many per interior pair",
     "total = tk_n * s * (o_ext - to_n) +", "total = tk_n * s * (o_ext - to_n + 1) +"),
    ("analytic.py", "border tiles: floor instead of ceil division",
     "a = 0 if num <= 0 else min(to_n, -(-num // step))", "a = 0 if num <= 0 else min(to_n, num // step)"),
    ("analytic.py", "all-padding pairs still counted as MACs",
     "                valid -= (o1 - o0) * kl", "                valid -= 0"),
    ("analytic.py", "TensorCore blocks: ceil off by one for the last tile",
     "return (n - 1) * (-(-tile // block)) + (-(-last // block))",
     "return (n - 1) * (-(-tile // block)) + (last // block + 1)"),
    ("analytic.py", "TensorCore blocks: input and output constants swapped",
     "blocks = {p.tc_in_dim: hardware.tensorcore_in_channels, p.tc_out_dim: hardware.tensorcore_out_channels}",
     "blocks = {p.tc_in_dim: hardware.tensorcore_out_channels, p.tc_out_dim: hardware.tensorcore_in_channels}"),
    ("analytic.py", "padded MACs use 16 x 16 blocks",
     "padded = cycles * hardware.tensorcore_in_channels * hardware.tensorcore_out_channels",
     "padded = cycles * hardware.tensorcore_in_channels * hardware.tensorcore_in_channels"),
    ("analytic.py", "the RMW term dropped",
     "models.append([spec.name, nest.loop_of(spec.name), instances, loaded, stored, loaded,",
     "models.append([spec.name, nest.loop_of(spec.name), instances, loaded, stored, 0,"),
    ("analytic.py", "partial sums reloaded on the first visit too",
     "            loaded = (nonidx - 1) * size * word", "            loaded = nonidx * size * word"),
    ("analytic.py", "opens: every instance opens its box",
     "instances - distinct, instances, distinct, 0, 0, ways])",
     "instances - distinct, instances, instances, 0, 0, ways])"),
    ("analytic.py", "peak ignores the buffering ways",
     "            live += ways * box", "            live += box"),
    ("analytic.py", "peak takes the ragged last tile for not-last tiles",
     "            if trips[d] > 1 and cls == 0:\n                return tiles[d]",
     "            if trips[d] > 1 and cls == 0:\n                return last[d]"),
    ("analytic.py", "capacity rule: a peak equal to the capacity overflows",
     "    return peak_sram_bytes <= sram_bytes", "    return peak_sram_bytes < sram_bytes"),
    ("analytic.py", "reconcile ignores opens",
     "if traced_opens >= 0 and (tm.opens != traced_opens or open_diff):",
     "if traced_opens >= 0 and tm.opens != tm.opens:"),
    ("lower_bounds.py", "2MNK form used for padded 1x1 convs",
     "if p.kh == 1 and p.kw == 1 and p.padding == (0, 0):", "if p.kh == 1 and p.kw == 1:"),
    ("lower_bounds.py", "conv bound: sqrt(2) instead of 2 sqrt(2)",
     "value = macs / (2 * math.sqrt(2) * math.sqrt(rr * s)) - s",
     "value = macs / (math.sqrt(2) * math.sqrt(rr * s)) - s"),
    ("lower_bounds.py", "conv bound: window reuse R dropped",
     "value = macs / (2 * math.sqrt(2) * math.sqrt(rr * s)) - s",
     "value = macs / (2 * math.sqrt(2) * math.sqrt(s)) - s"),
    ("lower_bounds.py", "conv bound: the - S term dropped",
     "value = macs / (2 * math.sqrt(2) * math.sqrt(rr * s)) - s",
     "value = macs / (2 * math.sqrt(2) * math.sqrt(rr * s))"),
    ("lower_bounds.py", "2MNK regime: K >= sqrt(S) instead of 2 sqrt(S)",
     "if r <= min(m, n) and k >= 2 * r:", "if r <= min(m, n) and k >= r:"),
    ("lower_bounds.py", "ITT: the - S term dropped",
     "return (m * n * k / (2 * math.sqrt(2) * r) - s, \"itt\",", "return (m * n * k / (2 * math.sqrt(2) * r), \"itt\","),
    ("lower_bounds.py", "S in bytes, not elements",
     "    s = sram_bytes // word_bytes", "    s = sram_bytes"),
    ("lower_bounds.py", "compulsory output over the input size",
     '"output": p.n * p.oc * p.oh * p.ow}', '"output": p.n * p.oc * p.h * p.w}'),
    ("lower_bounds.py", "touched rows: floor instead of ceil for the first output",
     "lo = max(0, -(off // stride))", "lo = max(0, -off // stride)"),
    ("lower_bounds.py", "real MACs count padding taps",
     "return p.n * p.oc * p.ic * vh * vw", "return p.n * p.oc * p.ic * p.oh * p.ow * p.kh * p.kw"),
    ("search.py", "search: a peak equal to the capacity is dropped",
     "    fits = fits_sram(peak, cap)\n", "    fits = peak < cap\n"),
    ("search.py", "best_at: side='left' (a peak equal to the capacity is not found)",
     'pos = int(np.searchsorted(self.peak, cap, side="right")) - 1',
     'pos = int(np.searchsorted(self.peak, cap, side="left")) - 1'),
    ("search.py", "search: candidates a word above the capacity accepted",
     "    fits = fits_sram(peak, cap)\n", "    fits = fits_sram(peak, cap + space.word)\n"),
    ("search.py", "vectorised TensorCore sums: last tile as a full tile",
     "self.tcsum.append(((T - 1) * (-(-f // blk)) + (-(-last // blk))).astype(np.int64))",
     "self.tcsum.append((T * (-(-f // blk))).astype(np.int64))"),
    ("search.py", "vectorised trips: floor division",
     "self.trips = [(-(-int(e) // f)).astype(np.int64)", "self.trips = [(int(e) // f + 1).astype(np.int64)"),
    ("search.py", "vectorised output: partial sums reloaded on the first visit",
     "                loaded = (nonidx - 1) * size\n", "                loaded = nonidx * size\n"),
    ("search.py", "vectorised output: DMA loads count",
     "                loads = instances - instances // nonidx", "                loads = instances - nonidx"),
    ("search.py", "vectorised peak ignores the ways",
     "        weighted = [bases[x] * ways[x] for x in range(self.nt)]",
     "        weighted = [bases[x] for x in range(self.nt)]"),
    ("search.py", "Space: TensorCore alignment constants swapped",
     "align = {p.tc_in_dim: hardware.tensorcore_in_channels, p.tc_out_dim: hardware.tensorcore_out_channels}\n"
     "        self.blocks",
     "align = {p.tc_in_dim: hardware.tensorcore_out_channels, p.tc_out_dim: hardware.tensorcore_in_channels}\n"
     "        self.blocks"),
    ("search.py", "first pass without the 1-element tile",
     "        vals.add(1)  #", "        vals.discard(1)  #"),
    ("search.py", "exact counts: the limit itself refused",
     "    if bound > EXACT_COUNT_LIMIT:", "    if bound >= EXACT_COUNT_LIMIT:"),
    ("search.py", "exact counts: the output's stores forgotten in the bound",
     "    return (len(problem.tensors) + 1) * word_bytes * problem.macs",
     "    return len(problem.tensors) * word_bytes * problem.macs"),
    ("search.py", "trace work: the compute itself not counted",
     "        ops += it * (1 + len(nest.problem.tensors)) + 2 * scopes",
     "        ops += it * len(nest.problem.tensors) + 2 * scopes"),
    ("search.py", "work check: forced work refused",
     "    if not force:\n        raise WorkTooLargeError", "    if True:\n        raise WorkTooLargeError"),
    ("search.py", "buffering upgrade ignores the capacity",
     "        if fits_sram(a.peak_sram_bytes, cap) and (a.estimated_cycles",
     "        if (a.estimated_cycles"),
]


def run_tests() -> tuple[bool, str, float]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *TESTS],
                          cwd=ROOT, capture_output=True, text=True)
    failed = [ln.split(" ")[1] for ln in proc.stdout.splitlines() if ln.startswith("FAILED ")]
    return proc.returncode != 0, (failed[0] if failed else proc.stdout.strip().splitlines()[-1]), \
        time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", help="run the mutants whose description contains this")
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    rows = []
    for fname, what, old, new in MUTANTS:
        if args.only and args.only not in what:
            continue
        path = ROOT / "dsasim" / fname
        original = path.read_text()
        if original.count(old) != 1:
            print(f"STALE     {fname}: {what}: fragment found {original.count(old)} times", flush=True)
            rows.append({"file": fname, "mutant": what, "status": "stale"})
            continue
        try:
            path.write_text(original.replace(old, new))
            killed, by, seconds = run_tests()
        finally:
            path.write_text(original)
        status = "killed" if killed else "SURVIVED"
        print(f"{status:<9} {fname}: {what}  [{by}] ({seconds:.0f} s)", flush=True)
        rows.append({"file": fname, "mutant": what, "status": status.lower(), "by": by})
    done = [r for r in rows if r["status"] != "stale"]
    killed = sum(r["status"] == "killed" for r in done)
    print(f"{killed}/{len(done)} mutants killed ({100 * killed / max(len(done), 1):.0f} %)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0 if killed == len(done) else 1


if __name__ == "__main__":
    sys.exit(main())
