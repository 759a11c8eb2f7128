"""Schedule search over a memory hierarchy: the outer (SRAM) level's nest, then the inner tiling given it.

The decomposition. The SRAM level is searched as on a one-level machine (`search.search`: DDR traffic and the
cycle estimate under the SRAM size); the few best outer nests (by cycles, by traffic and the Pareto front of peak
SRAM vs traffic; for an energy objective its one-level winner first) are then each given the inner tiling that is best for them. An inner tile must divide its outer
tile (`hierarchy` explains why), so the inner space of one outer nest is small: per dimension the divisors of the
outer tile (every balanced or TensorCore-aligned size when the outer loop runs once), and per tensor the inner
loops above its inner staging point. As in the outer search, only the set of loops above each tensor matters
and the sets are prefixes of one order: chains of above-sets (`search.chain_structures`).

Evaluation is vectorised: a tensor staged in an inner level counts as a one-level nest with the tiles it sees
(`LevelNest.seen_tiles`), so one `Evaluator` batch over (tile combinations x structures) gives that tensor's
counts for every candidate at once. A first pass covers up to COARSE_PER_DIM tiles per dimension; refinement
then sweeps each dimension over all its tiles with the others fixed, until nothing improves.

Objective 'cycles': the least cost (the slowest of the TensorCore and every level's transfers), ties broken by
DDR traffic then inner traffic; 'traffic': the least DDR traffic, then inner traffic, then cycles; 'energy': the
least energy per inference (`level_energy`: every candidate's reads and writes at DDR, the SRAM and each inner
level, its padded MACs and leakage over its cost, priced on the hardware at the searched SRAM size), then cycles,
then traffic; 'edp': the least energy x cost, then energy, then traffic. Every level's peak must fit its capacity. Inner buffering: 2 ways where the level allows and it fits (so that a level's
transfers can overlap the computes, which the cost assumes), else 1.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

import numpy as np

from dsasim.architect.model.analytic import Batch, Evaluator, analyze, tensorcore_blocks
from dsasim.architect.model.hierarchy import (InnerTiling, LevelAnalysis, LevelNest, analyze_levels, exposed_cycles,
                                        level_cycles, tensor_role)
from dsasim.architect.search.level_energy import InnerPricing, fresh_output_bytes
from dsasim.architect.nests.loopnest import LoopNest, Problem, tile_count
from dsasim.architect.search import layer_search as one_level
from dsasim.energy.report import energy_json
from dsasim.architect.search.objective import DEFAULT_OBJECTIVE, Objective, lexicographic_less, objective_named
from dsasim.architect.search.layer_search import chain_structures, tile_candidates
from dsasim.hardware import SRAM_LEVEL, Accelerator

__all__ = ["LevelSearchResult", "search_levels", "outer_pool", "OUTER_CANDIDATES", "COARSE_PER_DIM"]

OUTER_CANDIDATES = 6  # outer nests given an inner search each
# tracing (and timing) a LevelNest, per TensorCore step with its accesses and scopes: the levels' hits and computes
# run in the compiled core, their stages, write-backs and scopes in Python. Measured on a shared 2-core machine,
# 2026-11-28, in CPU seconds: `dsasim network resnet18 --hardware blog-l1 --simulate` took 625 s, less 120 s of its
# level searches, for 4,416,596 steps: 114 us a step (the network's fences, fused epilogues, per-pixel L1acc scopes of
# layer2 and the timing of one 4.4 M-step timeline included); `bench/bench_level_trace.py`'s three layers alone
# (100,940 steps, no epilogue) take 43 to 60 us a step, 164 to 191 before the compiled level paths
LEVEL_TRACE_SECONDS_PER_STEP = 115e-6
COARSE_PER_DIM = 4  # inner tile sizes per dimension in the first pass
_REFINE_ROUNDS = 4
# the share of a level search's time taken by its outer (SRAM) search, for progress and the work estimate; the
# inner searches share the rest. Measured on blog-l1 (2026-11-27): res2a_branch2b 0.40, mobilenetv2.dw1 0.69,
# res3a_branch2a 0.67, gemm-1024 0.70, blog-conv 0.81
OUTER_PROGRESS_SHARE = 0.6
# what the inner searches add to a level search beyond that share, about the same for any layer: measured on
# ResNet-50's layers on blog-l1 (CPU time, bench/bench_network_levels.py, 2026-11-28) a 1x1 conv's level search
# takes 2.0-2.6 s where its outer search is estimated at 0.3-0.4 s; a 3x3 or 7x7 conv's, 1.3x its share's estimate
INNER_SECONDS_PER_SEARCH = 2.0


@dataclass
class LevelSearchResult:
    """The outcome of `search_levels`: the best nest's per-level analysis (None: nothing fits), how many
    two-level nests were evaluated and how long it took."""

    problem: Problem
    hardware: Accelerator
    objective: Objective
    best: LevelAnalysis | None
    outer_considered: int
    evaluations: int  # outer (one-level) candidates and inner (two-level) nests
    seconds: float
    outer_evaluations: int = 0
    outer_seconds: float = 0.0

    @property
    def inner_rate(self) -> float:
        """Two-level nests per second of the inner searches alone."""
        inner = self.seconds - self.outer_seconds
        return (self.evaluations - self.outer_evaluations) / inner if inner > 0 else float("inf")

    @property
    def evaluations_per_second(self) -> float:
        return self.evaluations / self.seconds if self.seconds > 0 else float("inf")

    def to_json(self) -> dict[str, Any]:
        return {"problem": self.problem.to_json(), "hardware": self.hardware.name, "objective": self.objective.name,
                "best": None if self.best is None else self.best.to_json(),
                "outer_considered": self.outer_considered, "evaluations": self.evaluations}


def _divisors(n: int) -> list[int]:
    return [v for v in range(1, n + 1) if n % v == 0]


class _InnerSpace:
    """The inner tilings of one outer nest: candidate tiles per dimension, the model's tables over them, and the
    vectorised evaluation of (tile combination x structure) batches."""

    def __init__(self, outer: LoopNest, hardware: Accelerator, staged: Sequence[str]) -> None:
        p = outer.problem
        self.outer, self.hardware, self.problem = outer, hardware, p
        align = tensorcore_blocks(p, hardware)
        self.fine: list[list[int]] = []
        for d in p.dims:
            t = outer.tile(d)
            if outer.trips(d) > 1:
                vals = sorted(_divisors(t), reverse=True)
            else:
                vals = [v for v in tile_candidates(t, align.get(d, 0))]
            self.fine.append(vals)
        self.outer_idx = [f.index(outer.tile(d)) for f, d in zip(self.fine, p.dims)]
        self.ev = Evaluator(p, hardware, self.fine)
        self._structs: dict[tuple[int, ...], np.ndarray] = {}
        self.staged = [p.tensor_names.index(n) for n in staged]
        self.levels = {}
        self.level_of = {}
        for x in self.staged:
            lv = hardware.path(tensor_role(p, p.tensor_names[x]))[1]
            self.levels.setdefault(lv.name, (lv, []))[1].append(x)
            self.level_of[x] = lv
        self.outer_options = {x: self._outer_option(x) for x in self.staged}
        self._outer_bytes: tuple[int, int] | None = None  # the outer nest's DDR (loaded, stored), for pricing

    def _outer_option(self, x: int) -> tuple[int, Any] | None:
        """Tensor x staged in its level inside the outer nest (at or below its SRAM staging, held across the loops
        below): the depth whose transfers take least time at the level's port among those whose box fits the
        level alone, with its counts; None when no such box fits. It does not depend on the inner tiles."""
        outer, lv = self.outer, self.level_of[x]
        ev = Evaluator(self.problem, self.hardware, [[outer.tile(d)] for d in self.problem.dims], python_ints=True)
        best = None
        for k in range(outer.depth(self.problem.tensor_names[x]), len(outer.order) + 1):
            above = set(outer.order[:k])
            flags = [[d in above for d in ev.dims] for _ in range(ev.nt)]
            c = ev.evaluate(Batch(tidx=[0] * ev.nd, above=flags, ways=[1] * ev.nt, shape=()), estimate=False).tensors[x]
            if c.box_bytes > lv.capacity_bytes:
                continue
            # ties: the smaller box, then the shallower point (loops of one trip between change nothing)
            key = (level_cycles(lv, c.loads + c.stores, c.loaded_bytes, c.stored_bytes),
                   c.loaded_bytes + c.stored_bytes, c.box_bytes, k)
            if best is None or key < best[0]:
                best = (key, k, c)
        return None if best is None else best[1:]

    def coarse(self, d: int) -> list[int]:
        """Up to COARSE_PER_DIM candidate positions of dim d, spread over its list (the outer tile included)."""
        n = len(self.fine[d])
        if n <= COARSE_PER_DIM:
            return list(range(n))
        picks = {round(i * (n - 1) / (COARSE_PER_DIM - 1)) for i in range(COARSE_PER_DIM)}
        return sorted(picks | {self.outer_idx[d]})

    def evaluate(self, combos: np.ndarray, ddr_cycles: float, objective: Objective) -> dict[str, np.ndarray]:
        """Cost, inner traffic, fit, ways and outer staging of every (combo, structure) for combos (n, dims) of
        tile positions, each with its best options for `objective` (`_choose`): arrays (n, structures), plus the
        structures themselves (structures, tensors, dims); the energy (pJ) too, for an objective that ranks by it
        (None otherwise: a traffic or cycles search prices nothing)."""
        ev, nd = self.ev, self.ev.nd
        tiled = [d for d in range(nd) if len(set(combos[:, d].tolist()) - {self.outer_idx[d]}) > 0]
        key = tuple(tiled)
        if key not in self._structs:  # chains of above-sets, enumerated as the outer search does
            self._structs[key] = chain_structures(self.ev.idx, nd, tiled)
        structs = self._structs[key]  # (s, nt, nd) bool
        n, s = len(combos), len(structs)
        everything = [[True] * nd for _ in range(ev.nt)]
        finest = ev.evaluate(Batch(tidx=[combos[:, d][:, None] for d in range(nd)], above=everything,
                                   ways=[1] * ev.nt, shape=(n, 1)), estimate=False)
        inner = {}
        for x in self.staged:
            tidx = [np.where(structs[None, :, x, d], combos[:, d][:, None], self.outer_idx[d]) for d in range(nd)]
            r = ev.evaluate(Batch(tidx=tidx, above=everything, ways=[1] * ev.nt, shape=(n, s)), estimate=False)
            inner[x] = r.tensors[x]
        pricing = self._pricing(combos, structs, finest) if objective.needs_energy else None
        return self._choose(inner, finest.tensorcore_cycles, float(ddr_cycles), objective, structs, n, s, pricing)

    def _pricing(self, combos: np.ndarray, structs: np.ndarray, finest: Any) -> tuple[InnerPricing, dict[str, Any]]:
        """The pricing of an evaluation's candidates (`level_energy`) and the output's fresh bytes for each place
        its innermost buffer can be: 'sram' (no inner level: the outer nest's buffer, the loops above its SRAM
        staging), 'inner' (staged among the inner loops: every loop above it, the inner tap tile where the inner
        tap loop is above it) or 'outer' (staged in the outer nest at its outer option: the loops above that)."""
        p, ev = self.problem, self.ev
        if self._outer_bytes is None:  # the outer nest's DDR loads and stores, as `analyze_levels` counts them
            a = analyze(self.outer, self.hardware, strided_boxes=False)
            self._outer_bytes = (int(a.loaded_bytes), int(a.stored_bytes))
        levels = {n: SRAM_LEVEL for n in p.tensor_names}
        levels.update({p.tensor_names[x]: lv.name for x, lv in self.level_of.items()})
        pricing = InnerPricing(self.hardware, p, levels, *self._outer_bytes, finest.operand_bytes,
                               finest.tensorcore_cycles)
        compute = [combos[:, d][:, None] for d in range(ev.nd)]
        outer_taps = [self.outer_idx[g.k] for g in ev.groups]

        def above(loops: Sequence[str]) -> list[bool]:
            return [p.dims[g.k] in loops for g in ev.groups]

        out = ev.out_t
        if out not in self.level_of:
            return pricing, {"sram": fresh_output_bytes(ev, compute, outer_taps, above(self.outer.above(p.output.name)))}
        seen_taps = [np.where(structs[None, :, out, g.k], combos[:, g.k][:, None], self.outer_idx[g.k])
                     for g in ev.groups]
        fresh = {"inner": fresh_output_bytes(ev, compute, seen_taps, [True] * len(ev.groups))}
        if self.outer_options[out] is not None:
            fresh["outer"] = fresh_output_bytes(ev, compute, outer_taps,
                                                above(self.outer.order[:self.outer_options[out][0]]))
        return pricing, fresh

    def _choose(self, inner: dict[int, Any], tensorcore: Any, ddr_cycles: float, objective: Objective,
                structs: np.ndarray, n: int, s: int,
                pricing: tuple[InnerPricing, dict[str, Any]] | None = None) -> dict[str, Any]:
        """Per candidate, every staged tensor's options decided jointly and exactly: staged among the inner loops
        or, where it has one, at its outer option (`_outer_option`), and 1 or 2 ways. They interact: tensors of
        one level share its capacity, and a 1-way buffer's transfers (all but its first instance's) lie on the
        TensorCore's path, which every level's exposed transfers lengthen together. Of the combinations that fit
        every level, the best by the objective's key of (inner traffic, cost, energy) (cycles then traffic, or
        traffic then cycles, or energy (`pricing`'s) then its tie-breaks; then the least busy level ports in all,
        which leaves the most slack; then the first, inner staging and 2 ways before the others).
        Cost = max(DDR, each level's transfers, TensorCore + the exposed transfers)."""
        choices = {}  # tensor -> its (outside, ways) options
        for x in self.staged:
            lv = self.level_of[x]
            places = (False, True) if self.outer_options[x] is not None else (False,)
            choices[x] = [(out, w) for out in places for w in ((2, 1) if lv.max_ways >= 2 else (1,))]
        shape = (n, s)
        tc = np.broadcast_to(np.asarray(tensorcore, np.float64), shape)
        best = None  # [the objective's key (a tuple of arrays), busy, fits, cost, traffic, energy, option index]
        combos = list(itertools.product(*(choices[x] for x in self.staged)))
        for index, combo in enumerate(combos):
            pick = dict(zip(self.staged, combo))
            cost = np.full(shape, ddr_cycles)
            critical = tc.copy()
            traffic = np.zeros(shape, np.int64)
            busy = np.zeros(shape)
            fits = np.ones(shape, bool)
            for lv, xs in self.levels.values():
                cs = {x: self.outer_options[x][1] if pick[x][0] else inner[x] for x in xs}
                loaded = sum(np.broadcast_to(cs[x].loaded_bytes, shape) for x in xs)
                stored = sum(np.broadcast_to(cs[x].stored_bytes, shape) for x in xs)
                transfers = sum(np.broadcast_to(cs[x].loads + cs[x].stores, shape) for x in xs)
                traffic += loaded + stored
                port = level_cycles(lv, transfers, loaded, stored)
                busy += port
                np.maximum(cost, port, out=cost)
                fits &= sum(pick[x][1] * np.broadcast_to(cs[x].box_bytes, shape) for x in xs) <= lv.capacity_bytes
                for x in xs:
                    if pick[x][1] == 1:
                        c = cs[x]
                        critical += exposed_cycles(lv, c.loads, c.stores, c.loaded_bytes, c.stored_bytes, c.instances)
            np.maximum(cost, critical, out=cost)
            energy = None
            if pricing is not None:
                moved = {self.problem.tensor_names[x]: (c.loaded_bytes, c.stored_bytes)
                         for x, c in ((x, self.outer_options[x][1] if pick[x][0] else inner[x]) for x in self.staged)}
                out = self.ev.out_t
                place = "sram" if out not in self.level_of else "outer" if pick[out][0] else "inner"
                energy = np.broadcast_to(pricing[0].energy_pj(moved, pricing[1][place], cost), shape)
            key = objective.key(traffic=traffic.astype(np.float64), cycles=cost, energy=energy)
            if best is None:
                best = [key, busy, fits, cost, traffic, energy, np.zeros(shape, np.int64)]
                continue
            b_key, b_busy, b_fits = best[:3]
            better = fits & (~b_fits | lexicographic_less((*key, busy), (*b_key, b_busy)))
            best[0] = tuple(np.where(better, v, b) for v, b in zip(key, b_key))
            for k, value in enumerate((busy, fits, cost, traffic), start=1):
                best[k] = np.where(better, value, best[k])
            if energy is not None:
                best[5] = np.where(better, energy, best[5])
            best[6] = np.where(better, index, best[6])
        chosen = best[6]
        outside, double = {}, {}  # per staged tensor and candidate: staged in the outer nest, 2 ways
        for position, x in enumerate(self.staged):
            if self.outer_options[x] is not None:
                outside[x] = np.array([combo[position][0] for combo in combos])[chosen]
            double[x] = np.array([combo[position][1] == 2 for combo in combos])[chosen]
        return {"cost": best[3], "traffic": best[4], "fits": best[2], "energy": best[5], "double": double,
                "structs": structs, "outer": outside}

    def nest(self, combo: np.ndarray, struct: np.ndarray, double: dict[int, bool],
             outer_staged: Sequence[int] = ()) -> LevelNest:
        """The LevelNest of one candidate."""
        p = self.problem
        tiles = {d: self.fine[i][combo[i]] for i, d in enumerate(p.dims)}
        inner_trips = {d: -(-self.outer.tile(d) // tiles[d]) for d in p.dims}
        sets = {x: frozenset() if x in outer_staged else
                frozenset(d for i, d in enumerate(p.dims) if struct[x, i] and inner_trips[d] > 1) for x in self.staged}
        order: list[str] = []
        stage = {}
        for x in sorted(self.staged, key=lambda x: (len(sets[x]), x)):
            order += [d for d in p.dims if d in sets[x] and d not in order]
            stage[p.tensor_names[x]] = len(order)
        order += [d for d in p.dims if d not in order]
        for x in outer_staged:
            k = self.outer_options[x][0]
            stage[p.tensor_names[x]] = "outer:" + (self.outer.order[k - 1] if k else "top")
        ways = {p.tensor_names[x]: 2 if double[x] else 1 for x in self.staged}
        return LevelNest(self.outer, InnerTiling(order, tiles, stage, ways), self.hardware)


def _ranked(result: dict[str, np.ndarray], ddr_traffic: int,
            objective: Objective) -> tuple[tuple, tuple[int, int]] | None:
    """(key, (combo row, structure)) of the best fitting candidate of an evaluation, None when none fits. The key
    ranks across outer nests: the objective's, its traffic DDR bytes then inner bytes, its energy the whole
    candidate's (DDR included), no peak."""
    cost, traffic, fits, energy = result["cost"], result["traffic"], result["fits"], result.get("energy")
    if not fits.any():
        return None
    big = np.iinfo(np.int64).max  # what does not fit ranks last
    order = objective.order(traffic=np.where(fits, traffic, big).ravel(),
                            cycles=np.where(fits, cost, np.inf).ravel(),
                            energy=None if energy is None else np.where(fits, energy, np.inf).ravel())
    i, j = np.unravel_index(int(order[0]), cost.shape)
    picked = None if energy is None else float(energy[i, j])
    return (objective.key(traffic=(ddr_traffic, int(traffic[i, j])), cycles=float(cost[i, j]), energy=picked),
            (int(i), int(j)))


def _choice(combo: np.ndarray, res: dict[str, Any], i: int, j: int) -> tuple:
    """The arguments of `_InnerSpace.nest` for candidate (i, j) of an evaluation."""
    return (combo.copy(), res["structs"][j], {k: bool(v[i, j]) for k, v in res["double"].items()},
            [x for x, v in res["outer"].items() if v[i, j]])


def _inner_search(outer: LoopNest, hardware: Accelerator, staged: Sequence[str], ddr_cycles: float,
                  ddr_traffic: int, objective: Objective) -> tuple[tuple | None, LevelNest | None, int]:
    """The best inner tiling of one outer nest: (its ranking key, its LevelNest, evaluations)."""
    space = _InnerSpace(outer, hardware, staged)
    nd = space.ev.nd
    combos = np.array(list(itertools.product(*[space.coarse(d) for d in range(nd)])), np.int64)
    res = space.evaluate(combos, ddr_cycles, objective)
    evaluations = res["cost"].size
    found = _ranked(res, ddr_traffic, objective)
    if found is None:
        return None, None, evaluations
    best_key, (i, j) = found
    best = _choice(combos[i], res, i, j)
    for _ in range(_REFINE_ROUNDS):
        improved = False
        for d in range(nd):
            if len(space.fine[d]) < 2:
                continue
            trial = np.repeat(best[0][None, :], len(space.fine[d]), axis=0)
            trial[:, d] = np.arange(len(space.fine[d]))
            res = space.evaluate(trial, ddr_cycles, objective)
            evaluations += res["cost"].size
            found = _ranked(res, ddr_traffic, objective)
            if found is not None and found[0] < best_key:
                best_key, (i, j) = found
                best = _choice(trial[i], res, i, j)
                improved = True
        if not improved:
            break
    return best_key, space.nest(*best), evaluations


def outer_pool(outer_result: one_level.SearchResult, objective: Objective,
               outer_candidates: int = OUTER_CANDIDATES) -> list[LoopNest]:
    """The outer nests a level search gives an inner search each: of the one-level search's result, its best by
    cycles, by traffic and its Pareto front of peak SRAM vs traffic (fastest first), distinct, at most
    `outer_candidates`; for an energy objective its winner (the SRAM level priced as on a one-level machine) first."""
    pool: list[LoopNest] = []
    first = [outer_result.best] if objective.needs_energy else []
    for c in [*first, outer_result.best_cycles, outer_result.best_traffic,
              *sorted(outer_result.pareto, key=lambda c: (c.estimated_cycles, c.traffic_bytes))]:
        if c is not None and c.nest not in pool:
            pool.append(c.nest)
    return pool[:outer_candidates]


def search_levels(problem: Problem, hardware: Accelerator, sram_bytes: int | None = None,
                  objective: Objective | str = DEFAULT_OBJECTIVE, outer_candidates: int = OUTER_CANDIDATES,
                  progress: Callable[[float], None] | None = None, force: bool = False,
                  warn: Callable[[str], None] | None = None, slide: bool = True,
                  inner_cache: dict[tuple, tuple] | None = None) -> LevelSearchResult:
    """The best `LevelNest` of `problem` on a hardware with inner levels (module docstring: the decomposition,
    the objective). ValueError for hardware without inner levels or with levels below an inner level. `force`,
    `warn` and `slide` go to the outer search. `progress` gets the fraction done (0..1): the outer search's
    progress scaled to OUTER_PROGRESS_SHARE, then an equal part after each inner search. `inner_cache` (a dict
    kept by the caller across searches of this problem on this hardware at several SRAM sizes) reuses the inner
    search of an outer nest seen before (`_inner_cache_key`: the result is the same; its evaluations are not
    counted again)."""
    objective = objective_named(objective)
    if not hardware.inner_levels:
        raise ValueError(f"hardware {hardware.name!r} has no level below the SRAM; `search` finds its schedules "
                         f"(give a hardware with inner_levels, e.g. blog-l1)")
    deep = [lv.name for lv in hardware.inner_levels if lv.parent != SRAM_LEVEL]
    if deep:
        raise ValueError(f"search_levels tiles one level below the SRAM; levels {deep} hang below inner levels")
    start = time.perf_counter()
    # the SRAM level alone is a one-level machine: the outer search sees it so
    outer_progress = None if progress is None else (lambda f: progress(OUTER_PROGRESS_SHARE * f))
    outer_result = one_level.search(problem, replace(hardware, inner_levels=()), sram_bytes, objective, force=force,
                                    warn=warn, slide=slide, progress=outer_progress)
    hw = replace(hardware, sram_bytes=outer_result.sram_bytes)
    outer_seconds = time.perf_counter() - start
    pool = outer_pool(outer_result, objective, outer_candidates)
    staged = [n for n in problem.tensor_names if len(hw.path(tensor_role(problem, n))) > 1]
    evaluations = outer_result.evaluations
    best_key, best_nest = None, None
    for k, outer in enumerate(pool):
        a = analyze_levels(LevelNest(outer, InnerTiling(outer.order, {}, {n: 0 for n in staged}), hw))
        sram = a.level(SRAM_LEVEL)
        cache_key = _inner_cache_key(outer, hw, objective)
        if inner_cache is not None and cache_key in inner_cache:
            key, inner = inner_cache[cache_key]
            nest = None if inner is None else LevelNest(outer, inner, hw)  # on this size's hardware
        else:
            key, nest, n = _inner_search(outer, hw, staged, sram.cycles, sram.traffic_bytes, objective)
            evaluations += n
            if inner_cache is not None:
                inner_cache[cache_key] = (key, None if nest is None else nest.inner)
        if key is not None and (best_key is None or key < best_key):
            best_key, best_nest = key, nest
        if progress is not None:
            progress(OUTER_PROGRESS_SHARE + (1 - OUTER_PROGRESS_SHARE) * (k + 1) / len(pool))
    best = None if best_nest is None else analyze_levels(best_nest)
    return LevelSearchResult(problem=problem, hardware=hw, objective=objective, best=best,
                             outer_considered=len(pool), evaluations=evaluations,
                             seconds=time.perf_counter() - start, outer_evaluations=outer_result.evaluations,
                             outer_seconds=outer_seconds)


def _inner_cache_key(outer: LoopNest, hardware: Accelerator, objective: Objective) -> tuple:
    """What an outer nest's inner search depends on: the nest, the objective and, for an objective that prices
    energy, the SRAM size (its energy per access follows the size). Nothing else of the SRAM size enters it: the
    inner candidates fit the inner levels' capacities, and their cost compares with the outer nest's DDR time,
    which its transfers fix; the hardware's other fields are the caller's to keep (one cache per hardware)."""
    import json
    return (json.dumps(outer.to_json(), sort_keys=True), objective.name,
            hardware.sram_bytes if objective.needs_energy else None)


def with_level_capacity(hardware: Accelerator, level: str, capacity_bytes: int) -> Accelerator:
    """The hardware with one level's capacity (bytes) changed (the SRAM's is `sram_bytes`); ValueError when
    there is no such level or the result is not a valid hierarchy (the message says why)."""
    if level == SRAM_LEVEL:
        return replace(hardware, sram_bytes=capacity_bytes)
    hardware.level(level)  # ValueError naming the levels when there is none
    return replace(hardware, inner_levels=tuple(replace(lv, capacity_bytes=capacity_bytes) if lv.name == level
                                                else lv for lv in hardware.inner_levels))


@dataclass
class LevelSweep:
    """`sweep_levels`: per capacity of one level (bytes) the best nest's per-level analysis (None: nothing fits)."""

    layer: str
    hardware: Accelerator
    level: str
    objective: Objective
    sizes: list[int]
    best: list[LevelAnalysis | None]
    evaluations: int
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {"layer": self.layer, "hardware": self.hardware.name, "level": self.level,
                "objective": self.objective.name,
                "points": [{"capacity_bytes": size, "best": None if a is None else a.to_json(),
                            **energy_json(None if a is None else a.energy)}
                           for size, a in zip(self.sizes, self.best)]}


def sweep_levels(problem: Problem, hardware: Accelerator, level: str, sizes: Sequence[int],
                 objective: Objective | str = DEFAULT_OBJECTIVE, layer: str | None = None,
                 progress: Callable[[float], None] | None = None, force: bool = False,
                 warn: Callable[[str], None] | None = None, slide: bool = True) -> LevelSweep:
    """`search_levels` at every capacity in `sizes` (bytes) of `level`, the other levels as the hardware has
    them. Every hardware variant is checked before any search (a level larger than its parent is a ValueError).
    `progress` gets the fraction done (0..1), each size an equal part."""
    if not sizes:
        raise ValueError("sweep_levels needs at least one size")
    objective = objective_named(objective)
    variants = [with_level_capacity(hardware, level, int(s)) for s in sizes]
    start = time.perf_counter()
    best: list[LevelAnalysis | None] = []
    evaluations = 0
    for k, hw in enumerate(variants):
        inner_progress = None if progress is None else (lambda f, k=k: progress((k + f) / len(variants)))
        r = search_levels(problem, hw, None, objective, force=force, warn=warn, slide=slide, progress=inner_progress)
        best.append(r.best)
        evaluations += r.evaluations
        if progress is not None:
            progress((k + 1) / len(variants))
    return LevelSweep(layer=layer or problem.name, hardware=hardware, level=level, objective=objective,
                      sizes=[int(s) for s in sizes], best=best, evaluations=evaluations,
                      seconds=time.perf_counter() - start)


__all__ += ["with_level_capacity", "LevelSweep", "sweep_levels", "estimate_level_trace_work",
            "LEVEL_TRACE_SECONDS_PER_STEP", "estimate_level_search_work", "OUTER_PROGRESS_SHARE",
            "INNER_SECONDS_PER_SEARCH"]


def estimate_level_search_work(problem: Problem, hardware: Accelerator, sram_bytes: int | None = None,
                               n_searches: int = 1, slide: bool = True) -> one_level.WorkEstimate:
    """The work of `n_searches` level searches (`search_levels`) of `problem`: the outer (SRAM) search's estimate
    (`search.estimate_search_work`) divided by OUTER_PROGRESS_SHARE, its usual share of the time, plus
    INNER_SECONDS_PER_SEARCH each (the inner searches depend on the outer nests found, so they are not counted
    ahead: what a small layer's take is measured instead)."""
    one = replace(hardware, inner_levels=(), sram_bytes=hardware.sram_bytes if sram_bytes is None else sram_bytes)
    outer = one_level.estimate_search_work(problem, one, 1, slide=slide)
    return one_level.WorkEstimate(what=f"{n_searches:,} level search(es) of {problem.name}",
                                  evaluations=outer.evaluations * n_searches, traced_operations=0,
                                  seconds=n_searches * (outer.seconds / OUTER_PROGRESS_SHARE
                                                        + INNER_SECONDS_PER_SEARCH))


def estimate_level_trace_work(nest: LevelNest) -> one_level.WorkEstimate:
    """The work of tracing (and timing) a LevelNest: its TensorCore steps (one per inner tile of the whole
    problem) at LEVEL_TRACE_SECONDS_PER_STEP."""
    p = nest.problem
    steps = math.prod(tile_count(p.extents[d], nest.inner_tiles[d]) for d in p.dims)
    return one_level.WorkEstimate(what=f"tracing a {p.name} nest of {steps:,} TensorCore steps below the SRAM",
                                  evaluations=0, traced_operations=steps,
                                  seconds=steps * LEVEL_TRACE_SECONDS_PER_STEP)
