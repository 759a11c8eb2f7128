"""Mutation check: plant plausible one-line bugs, one at a time, and see a test fail for each.

    python bench/mutation.py [--jobs N] [--only SUBSTRING ...] [--list]

Each mutant replaces one exact snippet of one library file (the snippet must occur exactly once: a stale mutant
is reported as an error, never skipped silently) in a fresh copy of the committed tree, then runs the test files
named for it (`-x`, so the first failure ends the run). A mutant is **killed** when a test fails (or the run
times out), **survived** when every test passes. The score is killed / (killed + survived); equivalent mutants
(ones that cannot change behaviour) are not listed. Not run by CI: it takes minutes (each mutant runs its tests).

Compiled modules: the copy gets this tree's built `.c`/`.so` files (mtimes kept), and a mutant of a `.pyx` file
is rebuilt in the copy (`setup.py build_ext --inplace`, which recompiles only what changed; needs Cython in this
Python: `pip install cython`). A mutant that does not compile is reported as a build error, never as killed.
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
BOUNDS_TESTS = ("tests/test_geometry.py", "tests/test_bounds.py", "tests/test_blog_api.py", "tests/test_blog_demos.py")
TC_TESTS = ("tests/test_tensorcore.py", "tests/test_blog_demos.py")
ANALYTIC_TESTS = ("tests/test_analytic.py", "tests/test_loopnest.py", "tests/test_lower_bounds.py",
                  "tests/test_search.py")
SLIDE_TESTS = ("tests/test_slide.py",)
CONV_MAPPING_TESTS = ("tests/test_conv_mapping.py", "tests/test_tensorcore.py")
LEVEL_TESTS = ("tests/test_hierarchy.py",)
LAYOUT_TESTS = ("tests/test_layout.py",)
TRACED_LEVEL_TESTS = ("tests/test_levels.py",)
TIMING_TESTS = ("tests/test_timing.py", "tests/test_timing_rules.py", "tests/test_timing_columnar.py",
                "tests/test_timing_result.py")

MUTANTS: list[Mutant] = [
    # -- memory model ------------------------------------------------------------------------------------------
    Mutant("hit needs only overlap, not containment", "dsasim/util.py",
           "        if c < a or d > b:\n            return False", "        if d <= a or c >= b:\n            return False",
           MEMORY_TESTS),
    Mutant("load bytes ignore word_bytes", "dsasim/traced/memory.py",
           "        nbytes = elements * self._word_bytes\n        buf.loaded_from_ddr = True",
           "        nbytes = elements\n        buf.loaded_from_ddr = True", MEMORY_TESTS),
    Mutant("rmw not counted", "dsasim/traced/memory.py",
           "                self.counters.rmw_bytes += buf.load_bytes", "                pass", MEMORY_TESTS),
    Mutant("reuse flag counts for the blog", "dsasim/traced/memory.py",
           "        if not reuse:\n            blog =", "        if True:\n            blog =", MEMORY_TESTS),
    Mutant("capacity check with >=", "dsasim/traced/memory.py",
           "        if live > self._sram_limit:", "        if live >= self._sram_limit:", MEMORY_TESTS),
    Mutant("capacity check with >= (compiled core)", "dsasim/traced/_core.pyx",
           "    if live_bytes > session._sram_limit:", "    if live_bytes >= session._sram_limit:", MEMORY_TESTS),
    Mutant("ways not charged", "dsasim/traced/memory.py",
           "        charged = nbytes * inst.ways", "        charged = nbytes", MEMORY_TESTS),
    Mutant("modified buffer not stored at scope exit", "dsasim/traced/memory.py",
           "                if buf.dirty:\n                    if buf.level is None:\n                        self._store(buf)\n"
           "                    else:\n                        self._levels.write_back(self, buf)\n                buf.freed = True",
           "                buf.freed = True", MEMORY_TESTS),
    Mutant("reuse load does not store the old contents", "dsasim/traced/memory.py",
           "            if buf.dirty:\n                self._store(buf)\n            buf.generation += 1",
           "            buf.generation += 1", MEMORY_TESTS),
    Mutant("stop clamped one short", "dsasim/traced/memory.py",
           "        stop = min(stop, extent)  # the blog clamps", "        stop = min(stop, extent - 1)  # the blog clamps",
           MEMORY_TESTS),
    Mutant("quirk count clamps slices", "dsasim/traced/memory.py",
           "            n *= (extent if k.stop is None else k.stop) - (0 if k.start is None else k.start)",
           "            n *= min(extent if k.stop is None else k.stop, extent) - (0 if k.start is None else k.start)",
           MEMORY_TESTS),
    # -- segments and bounds -------------------------------------------------------------------------------------
    Mutant("last segment not clamped", "dsasim/traced/segments.py",
           "        limit = stop if self.clamp else stop + tile", "        limit = stop + tile",
           ("tests/test_segments.py", "tests/test_blog_api.py", "tests/test_blog_demos.py")),
    Mutant("window forgets dilation", "dsasim/geometry.py",
           "    hi = (o1 - 1) * stride + (t1 - 1) * dilation - padding", "    hi = (o1 - 1) * stride + (t1 - 1) - padding",
           BOUNDS_TESTS),
    Mutant("blog channels clamped", "dsasim/traced/bounds.py",
           "        channels = (oc_seg[0] // ocpg * icpg, ((oc_seg[1] - 1) // ocpg + 1) * icpg)",
           "        channels = (oc_seg[0] // ocpg * icpg, min(((oc_seg[1] - 1) // ocpg + 1) * icpg, self.in_channels))",
           BOUNDS_TESTS),
    Mutant("groups: last group off by one", "dsasim/traced/bounds.py",
           "        return oc.start // ocpg, (oc.stop - 1) // ocpg + 1", "        return oc.start // ocpg, oc.stop // ocpg + 1",
           BOUNDS_TESTS),
    Mutant("bottom padding amount off by one", "dsasim/geometry.py",
           "        return before, (self.hi - self.lo) - (self.stop - self.first) - before",
           "        return before, (self.hi - self.lo) - (self.stop - self.first) - before + 1", BOUNDS_TESTS),
    # -- TensorCore cost and numerics ------------------------------------------------------------------------------
    Mutant("TensorCore ic block rounded down", "dsasim/traced/tensorcore.py",
           "        steps = groups * ceil_div(icg, self.ic_block) * ceil_div(ocg, self.oc_block)",
           "        steps = groups * max(1, icg // self.ic_block) * ceil_div(ocg, self.oc_block)", TC_TESTS),
    Mutant("TensorCore cost ignores kernel taps", "dsasim/traced/tensorcore.py",
           "        cycles = steps * n * oh * ow * kh * kw", "        cycles = steps * n * oh * ow", TC_TESTS),
    Mutant("padded MACs use 16x16", "dsasim/traced/tensorcore.py",
           "        padded = cycles * self.ic_block * self.oc_block", "        padded = cycles * self.ic_block * self.ic_block",
           TC_TESTS),
    Mutant("conv drops the last input-channel block", "dsasim/traced/tensorcore.py",
           "                for i in range(0, c, icb):", "                for i in range(0, c - icb + 1, icb):", TC_TESTS),
    Mutant("vector cycles round down", "dsasim/traced/tensorcore.py",
           "        cycles = ceil_div(n, self.lanes)", "        cycles = max(1, n // self.lanes)", TC_TESTS),
    # -- the run and its numeric check ----------------------------------------------------------------------------
    Mutant("NaN treated as no error", "dsasim/traced/schedule.py",
           "        if bool(torch.isnan(diff).any()):\n            return math.nan",
           "        diff = torch.nan_to_num(diff, nan=0.0)", ("tests/test_blog_api.py",)),
    # -- from the memory-model and timing work (issue 7) -----------------------------------------------------------
    Mutant('no stale on store', 'dsasim/traced/memory.py',
           '                other.stale = True\n',
           '                pass\n', MEMORY_TESTS),
    Mutant('store word bytes twice', 'dsasim/traced/memory.py',
           '        nbytes = region_elements(region) * self._word_bytes\n        slices = _slices(region)',
           '        nbytes = region_elements(region) * self._word_bytes * self._word_bytes\n        slices = _slices(region)',
           MEMORY_TESTS),
    Mutant('alloc ignores word bytes', 'dsasim/traced/memory.py',
           '        nbytes = elements * self._word_bytes\n        buf = inst.held',
           '        nbytes = elements\n        buf = inst.held', MEMORY_TESTS),
    Mutant('no free on exception', 'dsasim/traced/memory.py',
           '        for buf in reversed(inst.buffers):\n            if not buf.freed:',
           '        for buf in []:\n            if not buf.freed:', MEMORY_TESTS),
    Mutant('no poison', 'dsasim/traced/memory.py',
           '                setattr(self, method, refuse)\n',
           '                pass\n', MEMORY_TESTS),
    Mutant('store on exception', 'dsasim/traced/memory.py',
           '                buf.freed = True\n                buf.dirty = False\n',
           '                if buf.dirty:\n                    self._store(buf)\n                buf.freed = True\n', MEMORY_TESTS),
    Mutant('exception exit as before', 'dsasim/traced/memory.py',
           '        if exc is not None:  # (on a poisoned',
           '        if exc is not None:\n            self._stack.pop(); return\n        if exc is not None:  # (on a poisoned', MEMORY_TESTS),
    Mutant('no slice clamp', 'dsasim/traced/memory.py',
           '        if stop > extent:\n            stop = extent\n',
           '        pass\n', MEMORY_TESTS),
    Mutant('float shape truncated', 'dsasim/traced/memory.py',
           '        if not is_int(d, numpy=True):',
           '        if not (is_int(d, numpy=True) or isinstance(d, float)):', MEMORY_TESTS),
    Mutant('bool index accepted', 'dsasim/traced/memory.py',
           '    if not isinstance(value, bool):\n        try:\n            return operator.index(value)',
           '    if True:\n        try:\n            return operator.index(value)', MEMORY_TESTS),
    Mutant('float index truncated', 'dsasim/traced/memory.py',
           '            return operator.index(value)\n        except TypeError:\n            pass',
           '            return operator.index(value)\n        except TypeError:\n            return int(value)', MEMORY_TESTS),
    Mutant('block floor start', 'dsasim/traced/memory.py',
           '            inner.append((ceil_div(a, blk), f1))',
           '            inner.append((a // blk, f1))', MEMORY_TESTS),
    Mutant('block any ignores partial', 'dsasim/traced/memory.py',
           '        if b"\\x01" not in raw:\n            return False',
           '        if True:\n            return False', MEMORY_TESTS),
    Mutant('missing ignores partial first', 'dsasim/traced/memory.py',
           '            firsts.append(tuple(int(i) * b + int(j) for i, b, j in zip(idx, self.block, local)))',
           '            pass', MEMORY_TESTS),
    Mutant('dense first argmax', 'dsasim/traced/memory.py',
           'np.unravel_index(int(np.argmin(flat)), self.shape)',
           'np.unravel_index(int(np.argmax(flat)), self.shape)', MEMORY_TESTS),
    Mutant('rmw not counted (whole line)', 'dsasim/traced/memory.py',
           '                self.counters.rmw_bytes += buf.load_bytes\n',
           '', MEMORY_TESTS),
    Mutant('tiles any session', 'dsasim/traced/tensorcore.py',
           '        if t.buffer.tensor.session is not session:',
           '        if False:', TC_TESTS + MEMORY_TESTS),
    Mutant('out any session', 'dsasim/traced/tensorcore.py',
           '        if out.buffer.tensor.session is not session:',
           '        if False:', TC_TESTS + MEMORY_TESTS),
    Mutant('stride zero accepted', 'dsasim/traced/tensorcore.py',
           '    if min(pair) < minimum:',
           '    if min(pair) < 0:', TC_TESTS + MEMORY_TESTS),
    Mutant('poisoned exit stores', 'dsasim/traced/memory.py',
           '        self._abandon(inst, exc)\n        if exc is None:  # the user caught',
           '        self._exit_scope = Session._exit_scope.__get__(self)\n        return self._exit_scope(inst, exc)\n        if exc is None:  # the user caught', MEMORY_TESTS),
    Mutant('numpy int index rejected', 'dsasim/traced/memory.py',
           '        return _normalize_one(name, dim, extent, int(k))',
           "        raise RegionError('no')", MEMORY_TESTS),
    Mutant('cross check skipped in dot', 'dsasim/traced/tensorcore.py',
           '        _check_tiles(self.session, "vector.dot", (a, b))\n',
           '', TC_TESTS + MEMORY_TESTS),
    Mutant('compiled dot: cycles per lane off by one', 'dsasim/traced/_core.pyx',
           '(n + lanes - 1) // lanes, 0, _flat_dot)',
           '(n + lanes) // lanes, 0, _flat_dot)', TC_TESTS + MEMORY_TESTS),
    Mutant('compiled scalar accumulate assigns', 'dsasim/traced/_core.pyx',
           '            view[index] = view[index] + result',
           '            view[index] = result', TC_TESTS + MEMORY_TESTS),
    Mutant('compiled += assigns', 'dsasim/traced/_core.pyx',
           '    product.apply(tile, True)\n    return tile',
           '    product.apply(tile, False)\n    return tile', TC_TESTS + MEMORY_TESTS),
    Mutant('compiled apply: a written tile loaded from DDR is no read-modify-write', 'dsasim/traced/_core.pyx',
           '            counters.rmw_bytes += ob.load_bytes\n            arr.traffic.rmw_bytes',
           '            arr.traffic.rmw_bytes', TC_TESTS + MEMORY_TESTS),
    Mutant('result: fills before releases at the same cycle (SRAM peak)', 'dsasim/timing/_result.pyx',
           '            while j < n and end[oe[j]] == t:\n                held -= nbytes[oe[j]]\n                j += 1\n            while i < n and start[os[i]] == t:\n                held += nbytes[os[i]]\n                i += 1\n',
           '            while i < n and start[os[i]] == t:\n                held += nbytes[os[i]]\n                i += 1\n                if held > peak:\n                    peak = held\n            while j < n and end[oe[j]] == t:\n                held -= nbytes[oe[j]]\n                j += 1\n', TIMING_TESTS),
    Mutant('result: busy cycles one too many per operation', 'dsasim/timing/_result.pyx',
           '            busy[e] += ends[i] - starts[i]',
           '            busy[e] += ends[i] - starts[i] + 1', TIMING_TESTS),
    Mutant('result: stall chain ignores the reason priority on equal ends', 'dsasim/timing/_result.pyx',
           '                if e > best_end or pr < best_pr:',
           '                if e > best_end:', TIMING_TESTS),
    Mutant('compiled Infer: a window one row short', 'dsasim/traced/_core.pyx',
           '    lo_h, hi_h = h0 * g.sh - g.ph, (h1 - 1) * g.sh + (g.kh - 1) * g.dh - g.ph  #',
           '    lo_h, hi_h = h0 * g.sh - g.ph, (h1 - 1) * g.sh + (g.kh - 1) * g.dh - g.ph - 1  #',
           ("tests/test_bounds.py",)),
    Mutant('compiled Infer: channels of one group only', 'dsasim/traced/_core.pyx',
           '_new_segment(c0 // g.ocpg * g.icpg, ((c1 - 1) // g.ocpg + 1) * g.icpg)',
           '_new_segment(c0 // g.ocpg * g.icpg, (c0 // g.ocpg + 1) * g.icpg)', ("tests/test_bounds.py",)),
    Mutant("drop WAR of a compute on other engines' readers", 'dsasim/timing/model.pyx',
           '                self.dep(self.readers.ops[base + k] * 4 + C_WAR)\n        op = self.add_op(okind,',
           '                pass\n        op = self.add_op(okind,', TIMING_TESTS),
    Mutant("drop a reuse-flag load's wait for the buffer's users", 'dsasim/timing/model.pyx',
           '                    self.dep(self.users.ops[base + k] * 4 + C_SLOT)',
           '                    pass', TIMING_TESTS),
    Mutant("drop a first load's wait for the slot's previous occupants", 'dsasim/timing/model.pyx',
           '                if engine == -2 or self.engine[d] != engine:',
           '                if engine == -2:', TIMING_TESTS),
    Mutant("drop a first open's wait for the slot's previous occupants", 'dsasim/timing/model.pyx',
           '                if engine == -2 or self.engine[d] != engine:',
           '                if engine != -2 and self.engine[d] != engine:', TIMING_TESTS),
    Mutant('drop the store->load DDR dependency (lowering)', 'dsasim/timing/model.pyx',
           '                                         self.writable[t])',
           '                                         False)', TIMING_TESTS),
    Mutant('drop the load->store DDR dependency (lowering)', 'dsasim/timing/model.pyx',
           'self.b_region[b], idx,\n                                         True)',
           'self.b_region[b], idx,\n                                         False)', TIMING_TESTS),
    Mutant('drop the store->load DDR dependency (fast scheduler)', 'dsasim/timing/engine.pyx',
           '            if r >= 0 and self.ddr_check[op]:',
           '            if r >= 0 and self.ddr_check[op] and self.g.engine[op] == self.g.store_engine:', TIMING_TESTS),
    Mutant('drop the load->store DDR dependency (fast scheduler)', 'dsasim/timing/engine.pyx',
           '            if r >= 0 and self.ddr_check[op]:',
           '            if r >= 0 and self.ddr_check[op] and self.g.engine[op] != self.g.store_engine:', TIMING_TESTS),
    Mutant('regions touching at an edge overlap', 'dsasim/util.py',
           '        if d <= a or c >= b:',
           '        if d < a or c > b:', TIMING_TESTS + MEMORY_TESTS),
    Mutant("drop a compute's RAW on its inputs", 'dsasim/timing/model.pyx',
           '            lw = self.r_last[self.b_row[ins[i]]]\n            if self.engine[lw] != eng:\n                self.dep(lw * 4 + C_DATA)',
           '            lw = self.r_last[self.b_row[ins[i]]]\n            if self.engine[lw] != eng:\n                pass', TIMING_TESTS),
    Mutant("drop a store's wait for the compute that wrote its buffer", 'dsasim/timing/model.pyx',
           '        self.dep(self.r_last[row] * 4 + C_DATA)  # validated',
           '        pass  # validated', TIMING_TESTS),
    Mutant('a store is not a reader of its buffer (compute WAR)', 'dsasim/timing/model.pyx',
           '        self.readers.set(row, self.e_store, op)\n',
           '', TIMING_TESTS),
    Mutant('the FREE node waits for nothing', 'dsasim/timing/model.pyx',
           '                self.dep(self.users.ops[base + k] * 4 + C_DATA)\n            node =',
           '                pass\n            node =', TIMING_TESTS),
    Mutant('transfer one cycle too long', 'dsasim/timing/model.pyx',
           'return self.setup + (nb * self.bw_den + self.bw_num - 1) // self.bw_num',
           'return self.setup + (nb * self.bw_den + self.bw_num - 1) // self.bw_num + 1', TIMING_TESTS),
    Mutant('DMA setup cost ignored', 'dsasim/timing/model.pyx',
           'self.setup, self.bw_num, self.bw_den = hardware.dma_setup_cycles,',
           'self.setup, self.bw_num, self.bw_den = 0,', TIMING_TESTS),
    Mutant('stores queued on the load engine', 'dsasim/timing/model.pyx',
           'self.add_op(C_STORE_OP, self.e_store,',
           'self.add_op(C_STORE_OP, 0,', TIMING_TESTS),
    Mutant('stores on the load port when ports are split', 'dsasim/timing/model.pyx',
           '        self.p_load, self.p_store = 0, (0 if self.shared else 1)',
           '        self.p_load, self.p_store = 0, 0', TIMING_TESTS),
    Mutant('vector computes on the TensorCore', 'dsasim/timing/model.pyx',
           '            eng, okind = self.e_vec, C_VEC_OP',
           '            eng, okind = self.e_tc, C_VEC_OP', TIMING_TESTS),
    Mutant('port ties go to the later transfer', 'dsasim/timing/engine.pyx',
           'r < best_r or (r == best_r and op < best_op)',
           'r < best_r or (r == best_r and op > best_op)', TIMING_TESTS),
    Mutant('validation: no check of LOAD bytes', 'dsasim/timing/validate.pyx',
           '        cdef int64_t need = self.fill_bytes(idx, b, t, reg)\n        if has_nb:\n            self.nbytes(idx, nb, need)\n'
           '        if self.b_state[b] == MODIFIED:\n            raise self.fail(idx, f"LOAD into',
           '        cdef int64_t need = self.fill_bytes(idx, b, t, reg)\n'
           '        if self.b_state[b] == MODIFIED:\n            raise self.fail(idx, f"LOAD into', TIMING_TESTS),
    Mutant('validation: STORE to an input accepted', 'dsasim/timing/validate.pyx',
           '            raise self.fail(idx, f"{self.names[t]!r} is an input (read-only): nothing may be stored to it")',
           '            pass', TIMING_TESTS),
    Mutant('validation: any compute unit accepted', 'dsasim/timing/validate.pyx',
           'units = np.array([UNITS.index(e[0]) if e[0] in UNITS else -1 for e in log.computes] or [0], np.intc)',
           'units = np.array([0 for e in log.computes] or [0], np.intc)', TIMING_TESTS),
    Mutant('validation: any compute unit accepted in a trace of tuples', 'dsasim/timing/validate.pyx',
           'if unit != "tensorcore" and unit != "vector":',
           'if False:', TIMING_TESTS),
    Mutant('validation: EXIT of any scope accepted', 'dsasim/timing/validate.pyx',
           '        if scope_id != top or instance != top_instance:',
           '        if False:', TIMING_TESTS),
    Mutant('validation: freed buffers accepted', 'dsasim/timing/validate.pyx',
           '        if 0 <= b < self.n_buf and self.b_state[b] != FREED:',
           '        if 0 <= b < self.n_buf:', TIMING_TESTS),
    Mutant('validation: a columnar COMPUTE read with the wrong costs', 'dsasim/timing/validate.pyx',
           'cost[cid, 0], cost[cid, 1],',
           'cost[cid, 1], cost[cid, 0],', TIMING_TESTS),
    Mutant('validation: a columnar STORE read as a LOAD', 'dsasim/timing/validate.pyx',
           '                self.store(idx, ident, second & TENSOR_MASK, second >> 24, 0, False)',
           '                self.load(idx, ident, second & TENSOR_MASK, second >> 24, 0, False, 0)', TIMING_TESTS),
    Mutant('occupancy: a partly overwritten run keeps its old extent', 'dsasim/timing/model.pyx',
           '        left = self.runs[i, 0] if j > i and self.runs[i, 0] < start else -1',
           '        left = -1', TIMING_TESTS),
    Mutant('two freed occupants: only the last one is waited for', 'dsasim/timing/model.pyx',
           '        if freed > 1:  # several',
           '        if False:  # several', TIMING_TESTS),
    Mutant('region column: touching regions overlap', 'dsasim/timing/model.pyx',
           '        if region_start(ra, i) >= region_stop(rb, i) or region_start(rb, i) >= region_stop(ra, i):',
           '        if region_start(ra, i) > region_stop(rb, i) or region_start(rb, i) > region_stop(ra, i):',
           TIMING_TESTS),
    Mutant('event cursor: a COMPUTE read as two words', 'dsasim/traced/_events.pxd',
           '        return 2 + (w[1] >> 40)',
           '        return 2', TIMING_TESTS + MEMORY_TESTS),
    # -- the architects' loop: analytic model, bounds, search (issue 7) --------------------------------------------
    Mutant('window sum: one stride too many per interior pair', 'dsasim/architect/analytic.py',
           'total = tk_n * s * (o_ext - to_n) +',
           'total = tk_n * s * (o_ext - to_n + 1) +', ANALYTIC_TESTS),
    Mutant('border tiles: floor instead of ceil division', 'dsasim/architect/analytic.py',
           'a = 0 if num <= 0 else min(to_n, ceil_div(num, step))',
           'a = 0 if num <= 0 else min(to_n, num // step)', ANALYTIC_TESTS),
    Mutant('all-padding pairs still counted as MACs', 'dsasim/architect/analytic.py',
           '                valid -= (o1 - o0) * kl',
           '                valid -= 0', ANALYTIC_TESTS),
    Mutant('TensorCore blocks: ceil off by one for the last tile', 'dsasim/architect/analytic.py',
           'return (n - 1) * ceil_div(tile, block) + ceil_div(last_tile(extent, tile), block)',
           'return (n - 1) * ceil_div(tile, block) + (last_tile(extent, tile) // block + 1)', ANALYTIC_TESTS),
    Mutant('TensorCore blocks: input and output constants swapped', 'dsasim/architect/analytic.py',
           'return {problem.tc_in_dim: hardware.tensorcore_in_channels, problem.tc_out_dim: hardware.tensorcore_out_channels}',
           'return {problem.tc_in_dim: hardware.tensorcore_out_channels, problem.tc_out_dim: hardware.tensorcore_in_channels}',
           ANALYTIC_TESTS),
    Mutant('padded MACs use 16 x 16 blocks', 'dsasim/architect/analytic.py',
           'padded_macs=r.tensorcore_cycles * hardware.tensorcore_in_channels\n                    * hardware.tensorcore_out_channels',
           'padded_macs=r.tensorcore_cycles * hardware.tensorcore_in_channels\n                    * hardware.tensorcore_in_channels',
           ANALYTIC_TESTS),
    Mutant('the RMW term dropped', 'dsasim/architect/analytic.py',
           'rmw_bytes=c.loaded_bytes if spec.output else 0',
           'rmw_bytes=0 if spec.output else 0', ANALYTIC_TESTS),
    Mutant('partial sums reloaded on the first visit too', 'dsasim/architect/analytic.py',
           'return TensorCounts(loaded_bytes=(nonidx - 1) * size,',
           'return TensorCounts(loaded_bytes=nonidx * size,', ANALYTIC_TESTS),
    Mutant('opens: every instance opens its box', 'dsasim/architect/analytic.py',
           'opens=c.instances - c.loads if spec.output else 0',
           'opens=c.instances if spec.output else 0', ANALYTIC_TESTS),
    Mutant('peak ignores the buffering ways', 'dsasim/architect/analytic.py',
           'return live(0, [base * w for (base, _), w in zip(terms, b.ways)]), boxes',
           'return live(0, [base for (base, _), w in zip(terms, b.ways)]), boxes', ANALYTIC_TESTS),
    Mutant('peak takes the ragged last tile for not-last tiles', 'dsasim/architect/analytic.py',
           'times(v, {cl: (full if cl[role] == 0 else last) for cl in opts[v]})',
           'times(v, {cl: (last if cl[role] == 0 else last) for cl in opts[v]})', ANALYTIC_TESTS),
    Mutant('capacity rule: a peak equal to the capacity overflows', 'dsasim/architect/analytic.py',
           '    return peak_sram_bytes <= sram_bytes',
           '    return peak_sram_bytes < sram_bytes', ANALYTIC_TESTS),
    Mutant('reconcile ignores opens', 'dsasim/architect/analytic.py',
           'if traced_opens >= 0 and (tm.opens != traced_opens or open_diff):',
           'if traced_opens >= 0 and tm.opens != tm.opens:', ANALYTIC_TESTS),
    Mutant('2MNK form used for padded 1x1 convs', 'dsasim/architect/loopnest.py',
           'if self.kh == 1 and self.kw == 1 and self.padding == (0, 0) and self.groups == 1:',
           'if self.kh == 1 and self.kw == 1 and self.groups == 1:', ANALYTIC_TESTS),
    Mutant('conv bound: sqrt(2) instead of 2 sqrt(2)', 'dsasim/architect/lower_bounds.py',
           'value = macs / (2 * math.sqrt(2) * math.sqrt(rr * s)) - s',
           'value = macs / (math.sqrt(2) * math.sqrt(rr * s)) - s', ANALYTIC_TESTS),
    Mutant('conv bound: window reuse R dropped', 'dsasim/architect/lower_bounds.py',
           'value = macs / (2 * math.sqrt(2) * math.sqrt(rr * s)) - s',
           'value = macs / (2 * math.sqrt(2) * math.sqrt(s)) - s', ANALYTIC_TESTS),
    Mutant('conv bound: the - S term dropped', 'dsasim/architect/lower_bounds.py',
           'value = macs / (2 * math.sqrt(2) * math.sqrt(rr * s)) - s',
           'value = macs / (2 * math.sqrt(2) * math.sqrt(rr * s))', ANALYTIC_TESTS),
    Mutant('2MNK regime: K >= sqrt(S) instead of 2 sqrt(S)', 'dsasim/architect/lower_bounds.py',
           'if r <= min(m, n) and k >= 2 * r:',
           'if r <= min(m, n) and k >= r:', ANALYTIC_TESTS),
    Mutant('ITT: the - S term dropped', 'dsasim/architect/lower_bounds.py',
           'return (m * n * k / (2 * math.sqrt(2) * r) - s, "itt",',
           'return (m * n * k / (2 * math.sqrt(2) * r), "itt",', ANALYTIC_TESTS),
    Mutant('S in bytes, not elements', 'dsasim/architect/lower_bounds.py',
           '    s = sram_bytes // word_bytes',
           '    s = sram_bytes', ANALYTIC_TESTS),
    Mutant('compulsory image rows: the whole input size', 'dsasim/architect/lower_bounds.py',
           '            return touched[a.tap][0]', '            return a.size', ANALYTIC_TESTS),
    Mutant('compulsory weight taps that only meet padding counted', 'dsasim/architect/lower_bounds.py',
           'return touched[a.dim][1] if a.dim in touched else ext[a.dim]', 'return ext[a.dim]', ANALYTIC_TESTS),
    Mutant('touched rows: floor instead of ceil for the first output', 'dsasim/geometry.py',
           'return max(o0, -(offset // stride)),',
           'return max(o0, -offset // stride),', ANALYTIC_TESTS),
    Mutant('real MACs count padding taps', 'dsasim/architect/lower_bounds.py',
           'return plain * math.prod(_axis_touched(a, problem.extents)[2] for a in problem.windows)',
           'return plain * math.prod(problem.extents[a.dim] * problem.extents[a.tap] for a in problem.windows)',
           ANALYTIC_TESTS),
    Mutant('the conv description windows every axis over the height', 'dsasim/geometry.py',
           'self.dilation[axis], self.padding[axis], self.input_shape[2 + axis])',
           'self.dilation[axis], self.padding[axis], self.input_shape[2])', BOUNDS_TESTS),
    Mutant('a conv tile pads its columns as rows', 'dsasim/architect/loopnest.py',
           'padding=rows.pad + cols.pad)', 'padding=cols.pad + rows.pad)', ANALYTIC_TESTS),
    Mutant('search: a peak equal to the capacity is dropped', 'dsasim/architect/search.py',
           '    idx = np.nonzero(fits_sram(peak, max(st.caps)))[0]\n',
           '    idx = np.nonzero(peak < max(st.caps))[0]\n', ANALYTIC_TESTS),
    Mutant("best_at: side='left' (a peak equal to the capacity is not found)", 'dsasim/architect/search.py',
           'pos = int(np.searchsorted(self.peak, cap, side="right")) - 1',
           'pos = int(np.searchsorted(self.peak, cap, side="left")) - 1', ANALYTIC_TESTS),
    Mutant('search: candidates a word above the capacity accepted', 'dsasim/architect/search.py',
           '    idx = np.nonzero(fits_sram(peak, max(st.caps)))[0]\n',
           '    idx = np.nonzero(fits_sram(peak, max(st.caps) + st.space.word))[0]\n', ANALYTIC_TESTS),
    Mutant('vectorised TensorCore sums: last tile as a full tile', 'dsasim/architect/analytic.py',
           'return (n - 1) * ceil_div(tile, block) + ceil_div(last_tile(extent, tile), block)',
           'return n * ceil_div(tile, block)', ANALYTIC_TESTS),
    Mutant('vectorised trips: floor division', 'dsasim/architect/analytic.py',
           'self.trips = [arr(tile_count(e, int(v)) for v in f)',
           'self.trips = [arr(e // int(v) + 1 for v in f)', ANALYTIC_TESTS),
    Mutant('vectorised output: DMA loads count', 'dsasim/architect/analytic.py',
           'loads=instances - instances // nonidx,',
           'loads=instances - nonidx,', ANALYTIC_TESTS),
    Mutant('first pass without the 1-element tile', 'dsasim/architect/search.py',
           '        vals.add(1)  #',
           '        vals.discard(1)  #', ANALYTIC_TESTS),
    Mutant('exact counts: the limit itself refused', 'dsasim/architect/search.py',
           '    if bound > EXACT_COUNT_LIMIT:',
           '    if bound >= EXACT_COUNT_LIMIT:', ANALYTIC_TESTS),
    Mutant("exact counts: the output's stores forgotten in the bound", 'dsasim/architect/search.py',
           '    return (len(problem.tensors) + 1) * word_bytes * problem.macs',
           '    return len(problem.tensors) * word_bytes * problem.macs', ANALYTIC_TESTS),
    Mutant('trace work: the compute itself not counted', 'dsasim/architect/search.py',
           '        ops += it * (1 + len(nest.problem.tensors)) + 2 * scopes',
           '        ops += it * len(nest.problem.tensors) + 2 * scopes', ANALYTIC_TESTS),
    Mutant('work check: forced work refused', 'dsasim/architect/search.py',
           '    if not force:\n        raise WorkTooLargeError',
           '    if True:\n        raise WorkTooLargeError', ANALYTIC_TESTS),
    Mutant('buffering upgrade ignores the capacity', 'dsasim/architect/search.py',
           '        if fits_sram(a.peak_sram_bytes, cap) and \\\n',
           '        if True and \\\n', ANALYTIC_TESTS),
    # -- sliding-window reuse ------------------------------------------------------------------------------------
    Mutant("slide: a kept row taken one row off", "dsasim/traced/memory.py",
           "                                       rows(kept_start, kept_stop, buf.data, held_start),",
           "                                       rows(kept_start, kept_stop, buf.data, held_start - 1),", SLIDE_TESTS),
    Mutant("slide: the rows before the held ones never loaded", "dsasim/traced/memory.py",
           "        kept_start, kept_stop = max(start, held_start), min(stop, held_stop)",
           "        kept_start, kept_stop = start, min(stop, held_stop)", SLIDE_TESTS),
    Mutant("slide: the load does not wait for the buffer's readers", "dsasim/timing/model.pyx",
           "        self.n_loads += 1\n        self.slot_deps(row, ch)\n        cdef Py_ssize_t op = self.add_op(C_LOAD_OP, ch, self.transfer(idx, nb, t, reg), self.p_load, nb, t, b, reg, idx,\n                                         False)",
           "        self.n_loads += 1\n        cdef Py_ssize_t op = self.add_op(C_LOAD_OP, ch, self.transfer(idx, nb, t, reg), self.p_load, nb, t, b, reg, idx,\n                                         False)",
           SLIDE_TESTS + TIMING_TESTS),
    Mutant("slide check: the bytes it moves not checked", "dsasim/timing/validate.pyx",
           "        if nb != new:\n", "        if False:\n", SLIDE_TESTS + TIMING_TESTS),
    Mutant("slide stats: interior tiles load a whole stride step even without overlap", "dsasim/architect/analytic.py",
           "            new = min(step, (o_tile - 1) * s + (t1 - 1 - t0) * d + 1)",
           "            new = step", SLIDE_TESTS),
    Mutant("slide stats: the buffer after the interior tiles holds nothing", "dsasim/architect/analytic.py",
           "            if len(interior) and i == m:", "            if False:", SLIDE_TESTS),
    Mutant("slide: its loop's trips counted as scope instances", "dsasim/architect/analytic.py",
           "                    instances = instances * (_pick(slid, 1, seen[d]) if d == g.o else seen[d])",
           "                    instances = instances * seen[d]", SLIDE_TESTS),
    Mutant("search: a slide allowed under a loop of an outer tensor", "dsasim/architect/search.py",
           "                ok |= (slide[:, x] == v) & ((bits[x] >> o) & 1).astype(bool) & ~outside",
           "                ok |= (slide[:, x] == v) & ((bits[x] >> o) & 1).astype(bool)", SLIDE_TESTS),
    Mutant("kernel: the rotating buffer sized by the first box", "kernels/loopnest_kernel.py",
           "                    tensors[name].slide(region, capacity=capacity[name])",
           "                    tensors[name].slide(region)", SLIDE_TESTS),
    # -- conv mapping variants (kernels/conv_mapping.py, VectorUnit.im2col) -----------------------------------------
    Mutant("im2col-ddr: the GEMM reads the patch band still on chip (its DDR re-read dropped)",
           "kernels/conv_mapping.py",
           "        for band in all_bands:\n            with GlobalHierarchy(s, \"im2col\", ways=ways):\n"
           "                gather(vector, image, patches, band)  # stored to DDR when the scope exits\n"
           "        with GlobalHierarchy(s, \"weights\"):\n            w = weight[:, :]\n            for band in all_bands:\n"
           "                with GlobalHierarchy(s, \"gemm\", ways=ways):\n",
           "        with GlobalHierarchy(s, \"weights\"):\n            w = weight[:, :]\n            for band in all_bands:\n"
           "                with GlobalHierarchy(s, \"gemm\", ways=ways):\n"
           "                    gather(vector, image, patches, band)\n", CONV_MAPPING_TESTS),
    Mutant("im2col: the window's row offset ignores dilation", "dsasim/traced/tensorcore.py",
           "                rows = xp[:, :, i * dh:i * dh + (oh - 1) * sh + 1:sh]",
           "                rows = xp[:, :, i:i + (oh - 1) * sh + 1:sh]", CONV_MAPPING_TESTS),
    Mutant("im2col: the columns step by 1, not by the stride", "dsasim/traced/tensorcore.py",
           "                    window = rows[:, :, :, j * dw:j * dw + (ow - 1) * sw + 1:sw]  # (n, c, oh, ow)",
           "                    window = rows[:, :, :, j * dw:j * dw + ow]  # (n, c, oh, ow)", CONV_MAPPING_TESTS),
    Mutant("im2col: patch columns in (kh, kw, c) order", "dsasim/traced/tensorcore.py",
           "            return patches.reshape(out_shape)",
           "            return patches.transpose(0, 1, 2, 4, 5, 3).reshape(out_shape)",
           CONV_MAPPING_TESTS),
    Mutant("im2col: cycles count the input tile, not the patch matrix", "dsasim/traced/tensorcore.py",
           "                       ceil_div(shape_elements(out_shape), self.lanes), 0, gather)",
           "                       ceil_div(shape_elements(x.shape), self.lanes), 0, gather)", CONV_MAPPING_TESTS),
    Mutant("conv mapping: the band footprint counts one way", "kernels/conv_mapping.py",
           "        peak = weight + ways * max(b.input_elements + b.pixel_count * (k + oc) for b in all_bands)",
           "        peak = weight + max(b.input_elements + b.pixel_count * (k + oc) for b in all_bands)",
           CONV_MAPPING_TESTS),
    Mutant("rule: the GEMM's reduction padded per tap, like the direct conv", "kernels/conv_mapping.py",
           "    tc = math.ceil(k / icb) * math.ceil(oc / ocb) * pixels(problem)",
           "    tc = math.ceil(problem.ic / icb) * problem.kh * problem.kw * math.ceil(oc / ocb) * pixels(problem)",
           CONV_MAPPING_TESTS),
    Mutant("rule: the gather left out of im2col on chip", "kernels/conv_mapping.py",
           "        cycles = _pipeline_cycles(hardware, [tc, vec - gathers[0]], [weight, *image], out,",
           "        cycles = _pipeline_cycles(hardware, [tc], [weight, *image], out,", CONV_MAPPING_TESTS),
    Mutant("workload: the GEMM weight read without its transpose", "kernels/conv_mapping.py",
           "        nchw = F.conv2d(image, weight.T.reshape(torch_weight), stride=stride, padding=padding, dilation=dilation)",
           "        nchw = F.conv2d(image, weight.reshape(torch_weight), stride=stride, padding=padding, dilation=dilation)",
           CONV_MAPPING_TESTS),
    # memory levels below the SRAM (dsasim/architect/hierarchy.py, level_search.py) and DDR layouts
    Mutant('levels: an inner level sees the inner tiles even where its loop is below it',
           'dsasim/architect/hierarchy.py',
           'return {d: self.inner_tiles[d] if d in above else self.outer.tile(d) for d in dims}, frozenset(dims)',
           'return {d: self.inner_tiles[d] for d in dims}, frozenset(dims)', LEVEL_TESTS),
    Mutant('levels: ways left out of an inner level\'s peak', 'dsasim/architect/hierarchy.py',
           'peak = sum(nest.inner_ways[n] * counts[n].box_bytes for n in held)',
           'peak = sum(counts[n].box_bytes for n in held)', LEVEL_TESTS),
    Mutant('level search: setup cycles left out of a level\'s time', 'dsasim/architect/level_search.py',
           'port = level_cycles(lv, transfers, loaded, stored)',
           'port = level_cycles(lv, 0, loaded, stored)', LEVEL_TESTS),
    Mutant('level search: no staging in the outer nest', 'dsasim/architect/level_search.py',
           'places = (False, True) if self.outer_options[x] is not None else (False,)', 'places = (False,)',
           LEVEL_TESTS),
    Mutant('levels: a 1-way buffer\'s transfers off the TensorCore\'s path', 'dsasim/architect/hierarchy.py',
           'for n in held if nest.inner_ways[n] == 1))', 'for n in held if False))',
           LEVEL_TESTS + TRACED_LEVEL_TESTS),
    Mutant('level search: 1-way exposure left out of the cost', 'dsasim/architect/level_search.py',
           '                    if pick[x][1] == 1:\n', '                    if False:\n', LEVEL_TESTS),
    Mutant('level timing: a stage waits for every write-back into its source, not only its region\'s',
           'dsasim/timing/model.pyx', 'if written is not None and written[2] == lw:', 'if False:',
           TRACED_LEVEL_TESTS + ("tests/test_timing_levels.py",)),
    Mutant('traced levels: an output region written back before opens as zeros again', 'dsasim/traced/levels.py',
           'if arr.writable and (written is None or not written.any_in(region)):', 'if arr.writable:',
           TRACED_LEVEL_TESTS),
    Mutant('traced levels: a hit only in the target level, not below it', 'dsasim/traced/levels.py',
           'if lv is not None and rank[lv] >= depth]', 'if lv is not None and rank[lv] == depth]',
           TRACED_LEVEL_TESTS),
    Mutant('traced levels: ways left out of a level\'s footprint', 'dsasim/traced/levels.py',
           '        charged = nbytes * inst.ways\n        used = self.live_bytes[level] + charged',
           '        charged = nbytes\n        used = self.live_bytes[level] + charged', TRACED_LEVEL_TESTS),
    Mutant('traced levels: a staged partial sum modified again is no read-modify-write', 'dsasim/traced/levels.py',
           'self.traffic[buf.level].add(buf.tensor.name, "rmw_bytes", buf.load_bytes)', 'pass', TRACED_LEVEL_TESTS),
    Mutant('traced levels: the write-back does not reach the SRAM copy', 'dsasim/traced/levels.py',
           '            target.data[_within(region, target.region)] = buf.data', '            pass',
           TRACED_LEVEL_TESTS),
    Mutant('layout: runs never grow past the innermost axis', 'dsasim/layout.py',
           '    while k > 0 and extents[k] == sizes[k]:', '    while False:', LAYOUT_TESTS),
    Mutant('layout: descriptor cycles left out of a transfer', 'dsasim/timing/model.pyx',
           'return self.setup + runs * self.run_cycles + (moved', 'return self.setup + (moved', LAYOUT_TESTS),
    # -- trust round two: strided -----------------------------------------------------------------------------
    Mutant("strided: the chain sweep takes its layers from the shared fronts again", "dsasim/architect/sweep.py",
           "                layer_fronts: bool = False) -> ChainSweepResult:",
           "                layer_fronts: bool = True) -> ChainSweepResult:", ("tests/test_trust_strided_chain.py",)),
    Mutant("strided: a window's step ignores which ranges move", "dsasim/geometry.py",
           "return math.gcd(stride if o_len > 1 else 0, dilation if t_len > 1 else 0) or 1",
           "return math.gcd(stride, dilation)", ("tests/test_trust_strided_geometry.py",)),
    Mutant("strided: a stepped innermost axis joins into one run", "dsasim/layout.py",
           "    if steps[k] > 1 and extents[k] > 1:  # a stepped innermost axis", "    if False:  # a stepped innermost axis",
           ("tests/test_trust_strided_layout.py",)),
    Mutant("strided: a run takes in a stepped axis", "dsasim/layout.py",
           "extents[k] == sizes[k] and (steps[k - 1] == 1 or extents[k - 1] == 1):",
           "extents[k] == sizes[k]:", ("tests/test_trust_strided_layout.py",)),
    Mutant("strided: a strided box counts its dense extent", "dsasim/layout.py",
           "ext = [len(range(a, b, st)) if b > a else b - a for", "ext = [b - a for", ("tests/test_trust_strided_layout.py",)),
    # -- trust round two: strided2 ----------------------------------------------------------------------------
    Mutant("strided2: a strided load counts its dense box", "dsasim/traced/memory.py",
           "        elements = region_elements(region)\n        if all(len(axis) == 2",
           "        elements = region_elements(tuple(axis[:2] for axis in region))\n        if all(len(axis) == 2",
           ("tests/test_trust_strided2.py",)),
    Mutant("strided2: a strided buffer joins the dense live buffers", "dsasim/traced/memory.py",
           "        if strided:\n            self._strided.setdefault",
           "        if False:\n            self._strided.setdefault",
           ("tests/test_trust_strided2.py",)),
    Mutant("strided2: a strided hit ignores the held phase", "dsasim/traced/memory.py",
           "axis[1] > box[1] or (axis[0] - box[0]) % held_step or", "axis[1] > box[1] or",
           ("tests/test_trust_strided2.py",)),
    Mutant("strided2: validation counts a strided region's dense box", "dsasim/timing/validate.pyx",
           "n *= region_count(r, nd, i)", "n *= region_stop(r, i) - region_start(r, i)",
           ("tests/test_trust_strided2.py",)),
    Mutant("strided2: a validated HIT ignores the held phase", "dsasim/timing/validate.pyx",
           "(region_start(r, i) - region_start(h, i)) % h_step or", "False or",
           ("tests/test_trust_strided2.py",)),
    Mutant("strided2: the timing of a strided load ignores its steps", "dsasim/timing/model.pyx",
           "[axis[2] if len(axis) == 3 else 1 for axis in region]", "[1 for axis in region]",
           ("tests/test_trust_strided2.py",)),
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
        for built in (*ROOT.glob("dsasim/**/*.so"), *ROOT.glob("dsasim/**/*.c")):  # the tree's compiled core
            shutil.copy2(built, Path(tmp) / built.relative_to(ROOT))
        os.utime(target)  # newer than its .c: the build below recompiles the mutated module only
        if mutant.path.endswith((".pyx", ".pxd")):  # (a .pxd rebuilds the modules that cimport it)
            build = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-q"], cwd=tmp,
                                   capture_output=True, text=True)
            if build.returncode != 0:
                return "stale", 0.0, f"the mutant does not compile: {build.stderr.strip()[-160:]}"
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
    parser.add_argument("--only", nargs="+", metavar="SUBSTRING", help="only mutants whose name or file path contains one")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per mutant before it counts killed")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be >= 1")
    if shutil.which("git") is None:
        parser.error("needs git (it copies the committed tree)")
    mutants = [m for m in MUTANTS if not args.only or any(s in m.name or s in m.path for s in args.only)]
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
