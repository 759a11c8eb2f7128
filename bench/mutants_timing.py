"""Planted bugs in the timing model and trace validation: each must make a test fail (not run by CI).

    .venv/bin/python bench/mutants_timing.py [--tests tests/test_timing_rules.py tests/test_timing.py] [--only NAME]

Each mutant replaces one exact snippet (it must occur exactly once) in a copy of the repository under a temporary
folder, runs pytest there (-x, stops at the first failure) and reports the first failing test: "killed" when some
test fails, "SURVIVED" when all pass. The working tree is never modified.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent


class Mutant(NamedTuple):
    name: str
    path: str
    old: str
    new: str


MUTANTS = (
    # dependencies of the lowering (shared by both schedulers: only hand-derived tests can see them)
    Mutant("drop WAR of a compute on other engines' readers", "dsasim/timing/model.py",
           "                        dl.append(d * 4 + WAR)", "                        pass"),
    Mutant("drop a reuse-flag load's wait for the buffer's users", "dsasim/timing/model.py",
           "                    if e != ch:\n                        dl.append(d * 4 + SLOT)",
           "                    pass"),
    Mutant("drop a first load's wait for the slot's previous occupants", "dsasim/timing/model.py",
           "                    if engine[d] != ch:\n                        dl.append(d * 4 + SLOT)",
           "                    pass"),
    Mutant("drop a first open's wait for the slot's previous occupants", "dsasim/timing/model.py",
           "                add_deps([d * 4 + SLOT for d in pending])", "                add_deps([])"),
    Mutant("drop the store->load DDR dependency (lowering)", "dsasim/timing/model.py",
           "add_row((LOAD_OP, xfer(nb), p_load, nb, t, b, reg, idx, last_on[ch], w))",
           "add_row((LOAD_OP, xfer(nb), p_load, nb, t, b, reg, idx, last_on[ch], False))"),
    Mutant("drop the load->store DDR dependency (lowering)", "dsasim/timing/model.py",
           "add_row((STORE_OP, xfer(nb), p_store, nb, t, b, reg, idx, last_on[e_store], True))",
           "add_row((STORE_OP, xfer(nb), p_store, nb, t, b, reg, idx, last_on[e_store], False))"),
    Mutant("drop the store->load DDR dependency (fast scheduler)", "dsasim/timing/engine.py",
           "            st = stores_by_tensor.get(t)", "            st = None"),
    Mutant("drop the load->store DDR dependency (fast scheduler)", "dsasim/timing/engine.py",
           "            per = loads_by_tensor.get(t)", "            per = None"),
    Mutant("regions touching at an edge overlap", "dsasim/timing/model.py",
           "        if d <= a or c >= b:", "        if d < a or c > b:"),
    Mutant("drop a compute's RAW on its inputs", "dsasim/timing/model.py",
           "                if engine[lw] != eng:\n                    dl.append(lw * 4 + DATA)\n            lw = b_last_write[out]",
           "                pass\n            lw = b_last_write[out]"),
    Mutant("drop a store's wait for the compute that wrote its buffer", "dsasim/timing/model.py",
           "            add_deps([b_last_write[b] * 4 + DATA])", "            add_deps([])"),
    Mutant("a store is not a reader of its buffer (compute WAR)", "dsasim/timing/model.py",
           "            b_readers[b][e_store] = op\n", ""),
    Mutant("the FREE node waits for nothing", "dsasim/timing/model.py",
           "                add_deps([d * 4 + DATA for d in final])", "                add_deps([])"),
    # durations
    Mutant("transfer one cycle too long", "dsasim/timing/model.py",
           "            c = cache[nbytes] = setup + -(-nbytes * den // num)",
           "            c = cache[nbytes] = setup + -(-nbytes * den // num) + 1"),
    Mutant("transfer bytes rounded down", "dsasim/timing/model.py",
           "            c = cache[nbytes] = setup + -(-nbytes * den // num)",
           "            c = cache[nbytes] = setup + nbytes * den // num"),
    Mutant("DMA setup cost ignored", "dsasim/timing/model.py",
           "    setup = hardware.dma_setup_cycles", "    setup = 0"),
    # engines and ports
    Mutant("stores queued on the load engine", "dsasim/timing/model.py",
           "    q_store, q_tc, q_vec = queues[e_store], queues[e_tc], queues[e_vec]",
           "    q_store, q_tc, q_vec = queues[0], queues[e_tc], queues[e_vec]"),
    Mutant("stores on the load port when ports are split", "dsasim/timing/model.py",
           "    p_load, p_store = 0, (0 if shared else 1)", "    p_load, p_store = 0, 0"),
    Mutant("vector computes on the TensorCore", "dsasim/timing/model.py",
           "                eng, okind, q = e_vec, VEC_OP, q_vec", "                eng, okind, q = e_tc, VEC_OP, q_tc"),
    Mutant("port ties go to the later transfer", "dsasim/timing/engine.py",
           "r < best_r or (r == best_r and op < best_op)", "r < best_r or (r == best_r and op > best_op)"),
    # validation
    Mutant("validation: no check of LOAD bytes", "dsasim/timing/validate.py",
           "                if nb != need or type(nb) is not int:\n                    raise _wrong_nbytes(idx, event, nb, need, word)\n                if b_state[b] == modified:",
           "                if b_state[b] == modified:"),
    Mutant("validation: STORE to an input accepted", "dsasim/timing/validate.py",
           '                    raise _fail(idx, event, f"{names[t]!r} is an input (read-only): nothing may be stored to it")',
           "                    pass"),
    Mutant("validation: any compute unit accepted", "dsasim/timing/validate.py",
           'if unit != "tensorcore" and unit != "vector":', "if False:"),
    Mutant("validation: EXIT of any scope accepted", "dsasim/timing/validate.py",
           "if scope_id != top[0] or instance != top[1]:", "if False:"),
    Mutant("validation: freed buffers accepted", "dsasim/timing/validate.py",
           "            elif k == k_free:\n                _, b, charged = event\n                if not 0 <= b < n_buf or b_state[b] == freed:",
           "            elif k == k_free:\n                _, b, charged = event\n                if not 0 <= b < n_buf:"),
)


def run(mutant: Mutant, tests: list[str], scratch: Path) -> tuple[bool, str]:
    """Apply `mutant` to a fresh copy of the repository; (killed, first failing test or '')."""
    if scratch.exists():
        shutil.rmtree(scratch)
    shutil.copytree(ROOT, scratch, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", ".hypothesis",
                                                                 ".pytest_cache", "plots"))
    target = scratch / mutant.path
    text = target.read_text()
    if text.count(mutant.old) != 1:
        raise SystemExit(f"mutant {mutant.name!r}: the snippet occurs {text.count(mutant.old)} times in "
                         f"{mutant.path}, not once; update the mutant")
    target.write_text(text.replace(mutant.old, mutant.new))
    # -p no:cacheprovider: no .pytest_cache; the copy comes first on sys.path (python -m pytest adds the cwd)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
                          cwd=scratch, capture_output=True, text=True)
    failed = [line.split(" ")[1] for line in proc.stdout.splitlines() if line.startswith("FAILED ")]
    return proc.returncode != 0, failed[0] if failed else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", nargs="+", default=["tests/test_timing_rules.py", "tests/test_timing.py"])
    parser.add_argument("--only", help="run only the mutants whose name contains this text")
    args = parser.parse_args()
    mutants = [m for m in MUTANTS if args.only is None or args.only in m.name]
    killed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for m in mutants:
            dead, test = run(m, args.tests, Path(tmp) / "repo")
            killed += dead
            print(f"{'killed  ' if dead else 'SURVIVED'} {m.name}" + (f"  <- {test}" if test else ""), flush=True)
    print(f"{killed}/{len(mutants)} mutants killed ({killed / max(len(mutants), 1):.0%})")
    return 0 if killed == len(mutants) else 1


if __name__ == "__main__":
    raise SystemExit(main())
