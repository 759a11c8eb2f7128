"""Loop nests over a memory hierarchy: one tiling level per memory level, the per-level model, the cost.

A `LevelNest` is an outer `LoopNest` (DDR -> SRAM: its order, tiles, SRAM staging and ways, exactly as on a
one-level machine) whose innermost point runs an inner tiling (`InnerTiling`) for the levels below the SRAM:
its own loop order and tiles over the outer tile, and for every tensor whose operand role has an inner level
(`Accelerator.path`), the depth in the inner loops where its buffer in that level is staged, and its ways.
The TensorCore computes one inner tile at the innermost point, reading each operand from the innermost level
that holds it.

Semantics, level by level (the one-level rules of `dsasim.architect.nests.loopnest`, applied at each level): a tensor
staged in a level at depth k gets a scope there once per iteration of every loop above k (all outer loops, then
the inner ones above k); on entry its box is moved from the parent level (an input's load; an output's box
opens as zeros the first time and is loaded, a read-modify-write, on later visits); an output is written back
to the parent when its scope exits. Every inner box lies inside the SRAM box of the same tensor (the SRAM is
staged in the outer loops), so an inner level always loads from the SRAM, never from DDR.

Why the model stays exact with no new formula. An inner tile must divide the outer tile of its dimension (or
the outer loop runs once): then the inner tiles of a dimension, over all outer tiles, are exactly the regular
tiling of the whole extent by the inner tile (the outer tiles start at multiples of the inner one). A tensor
staged at inner depth k therefore sees, for every dimension d, a regular tiling of d's extent: by d's inner tile
if d's inner loop is above k, else by its outer tile. Its counts at that level are those of a one-level nest
with those tiles, every loop above it, staged innermost: `analytic.Evaluator` gives them in closed form. An
output's reloads match too: a region's partial sums reach DDR only through its inner-level write-backs, so
"stored before" means the same at every level.

Cost (as Chimera's multi-level model): each level boundary moves its bytes at its own bandwidth, with a setup
cost per transfer; the TensorCore computes the inner tiles; the run takes at least the slowest of these, and
`LevelAnalysis.bottleneck` names it. One refinement Chimera's model lacks, which the timing simulator showed
was needed: a 1-way inner buffer cannot load its next tile while the TensorCore computes on its one slot, so
the transfers of all but its first instance lie on the TensorCore's path (`exposed_cycles`, the one-level
estimate's rule for a 1-way scope). Without it the search picked, for the blog conv, 64 KiB weight tiles in a
1-way L1w that timed at 1.42x the cost it claimed. Lower bounds per level: the SRAM's from
`lower_bounds.lower_bound`; an inner level's is the compulsory traffic of the tensors it holds (every element
moves in once, an output is written back once), valid for any schedule.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from dsasim.architect.model.analytic import Analysis, Batch, Evaluator, analyze, fresh_outputs
from dsasim.architect.nests.loopnest import LoopNest, Problem, tile_count
from dsasim.architect.model.lower_bounds import lower_bound, touched_elements
from dsasim.cost import busy_cycles, level_port, overlapped_cycles, padded_macs, port_cycles
from dsasim.dataflow import OperandAccesses
from dsasim.energy.accesses import AccessCounts, TensorAccesses
from dsasim.energy.report import EnergyReport, energy_report
from dsasim.hardware import DDR, ROLES, SRAM_LEVEL, Accelerator, MemoryLevel

__all__ = ["InnerTiling", "LevelNest", "LevelFigures", "LevelAnalysis", "Trigger", "tensor_role",
           "analyze_levels", "sram_triggers", "level_cycles", "COMPUTE"]

COMPUTE = "TensorCore"  # the bottleneck's name when compute, not a level, bounds the run


def tensor_role(problem: Problem, tensor: str) -> str:
    """The operand role of a problem's tensor: 'input' (image, a), 'weight' (weight, b) or 'output'."""
    names = problem.tensor_names
    if tensor not in names:
        raise ValueError(f"{problem.name}: no tensor {tensor!r}; tensors are {list(names)}")
    if problem.tensor(tensor).output:
        return "output"
    return ROLES[names.index(tensor)]


@dataclass(frozen=True, init=False)
class InnerTiling:
    """The loops below the SRAM: an order over the problem's dimensions (outermost first), a tile per dimension
    (default: the outer tile, one inner trip), and per tensor that has an inner level its staging there (a
    depth 0..len(order), a loop name, or 'top' of these inner loops; or 'outer:LOOP' / 'outer:top' to stage it in
    the outer nest, at or below its SRAM staging, so that it stays in the level across the loops below) and ways
    (default 1)."""

    order: tuple[str, ...]
    tiles: tuple[tuple[str, int], ...]
    stage: tuple[tuple[str, int | str | None], ...]
    ways: tuple[tuple[str, int], ...]

    def __init__(self, order: Sequence[str], tiles: Mapping[str, int] | None = None,
                 stage: Mapping[str, int | str | None] | None = None, ways: Mapping[str, int] | None = None) -> None:
        object.__setattr__(self, "order", tuple(order))
        object.__setattr__(self, "tiles", tuple(sorted((tiles or {}).items())))
        object.__setattr__(self, "stage", tuple(sorted((stage or {}).items())))
        object.__setattr__(self, "ways", tuple(sorted((ways or {}).items())))


@dataclass(frozen=True)
class Trigger:
    """A control action the nest implies at one level (the polyhedral view's load / zero-fill / write-back),
    derived from the nest: where it happens (the loop it sits in), how often and how many bytes in all."""

    level: str
    tensor: str
    loop: str
    action: str  # "load", "zero-fill", "load partial sums", "write back"
    source: str  # the level the bytes come from or go to
    count: int
    bytes: int

    def to_json(self) -> dict[str, Any]:
        return {"level": self.level, "tensor": self.tensor, "loop": self.loop, "action": self.action,
                "source": self.source, "count": self.count, "bytes": self.bytes}


class LevelNest:
    """A loop nest with one tiling level per memory level: `outer` for DDR -> SRAM and `inner` for the levels
    below the SRAM (see the module docstring). Invalid combinations raise ValueError saying which and why."""

    def __init__(self, outer: LoopNest, inner: InnerTiling, hardware: Accelerator) -> None:
        if not isinstance(outer, LoopNest):
            raise TypeError(f"LevelNest: outer must be a LoopNest, got {type(outer).__name__}")
        if not isinstance(inner, InnerTiling):
            raise TypeError(f"LevelNest: inner must be an InnerTiling, got {type(inner).__name__}")
        p = outer.problem
        self.outer, self.inner, self.hardware, self.problem = outer, inner, hardware, p
        deep = [lv.name for lv in hardware.inner_levels if lv.parent != SRAM_LEVEL]
        if deep:
            raise ValueError(f"LevelNest: hardware {hardware.name!r} has levels below an inner level ({deep}); the "
                             f"nest tiles one level below the SRAM, so hang every inner level below {SRAM_LEVEL!r}")
        order = inner.order
        bad = sorted(set(order) - set(p.dims))
        missing = [d for d in p.dims if d not in order]
        if bad or missing or len(set(order)) != len(order):
            raise ValueError(f"LevelNest inner order {list(order)}: give every dimension of {list(p.dims)} once "
                             f"(unknown {bad}, missing {missing})")
        tiles = dict(inner.tiles)
        unknown = sorted(set(tiles) - set(p.dims))
        if unknown:
            raise ValueError(f"LevelNest inner tiles: unknown dimension(s) {unknown}; dimensions are {list(p.dims)}")
        self.inner_tiles: dict[str, int] = {}
        for d in p.dims:
            outer_tile = outer.tile(d)
            t = tiles.get(d, outer_tile)
            if isinstance(t, bool) or not isinstance(t, int) or not 1 <= t <= outer_tile:
                raise ValueError(f"LevelNest inner tile of {d} = {t!r}: it must be an integer from 1 to the outer "
                                 f"tile {outer_tile}")
            if outer.trips(d) > 1 and outer_tile % t:
                raise ValueError(f"LevelNest inner tile of {d} = {t} does not divide the outer tile {outer_tile}; "
                                 f"an inner tile must divide its outer tile (or the outer loop must run once) so "
                                 f"that inner tiles never straddle two outer ones; try "
                                 f"{max(v for v in range(1, t + 1) if outer_tile % v == 0)}")
            self.inner_tiles[d] = t
        self.levels: dict[str, MemoryLevel] = {}  # tensor -> its inner level (absent: the TensorCore reads SRAM)
        for name in p.tensor_names:
            path = hardware.path(tensor_role(p, name))
            if len(path) > 1:
                self.levels[name] = path[1]
        stage, ways = dict(inner.stage), dict(inner.ways)
        for label, given in (("stage", stage), ("ways", ways)):
            stray = sorted(set(given) - set(self.levels))
            if stray:
                raise ValueError(f"LevelNest inner {label}: tensor(s) {stray} have no level below the SRAM on "
                                 f"{hardware.name!r} (the TensorCore reads them from the SRAM); stage only "
                                 f"{sorted(self.levels)}")
        unstaged = sorted(set(self.levels) - set(stage))
        if unstaged:
            raise ValueError(f"LevelNest inner stage: tensor(s) {unstaged} have an inner level but no staging "
                             f"depth; give a depth 0..{len(order)}, a loop of {list(order)} or 'top'")
        self.inner_depth: dict[str, int | None] = {}  # None: staged in the outer nest (outer_depth)
        self.outer_depth: dict[str, int] = {}
        for n in self.levels:
            where = stage[n]
            if isinstance(where, str) and where.startswith("outer:"):
                k = LoopNest._depth(n, where.removeprefix("outer:"), outer.order)
                if k < outer.depth(n):
                    raise ValueError(f"LevelNest inner stage[{n!r}] = {where!r} is above the tensor's SRAM staging "
                                     f"(inside {outer.loop_of(n)!r}); a level below the SRAM holds part of the SRAM "
                                     f"buffer, so stage it at or below that loop")
                self.inner_depth[n], self.outer_depth[n] = None, k
            else:
                self.inner_depth[n] = LoopNest._depth(n, where, order)
        self.inner_ways: dict[str, int] = {}
        for n, lv in self.levels.items():
            w = ways.get(n, 1)
            if isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= lv.max_ways:
                raise ValueError(f"LevelNest inner ways[{n!r}] = {w!r}: level {lv.name!r} allows 1 to "
                                 f"{lv.max_ways} ways")
            self.inner_ways[n] = w

    # -- structure ---------------------------------------------------------------------------------------------
    def inner_trips(self, dim: str) -> int:
        """Inner trips of a dimension's loop within one full outer tile."""
        return tile_count(self.outer.tile(dim), self.inner_tiles[dim])

    def inner_above(self, tensor: str) -> tuple[str, ...]:
        """The inner loops above a tensor's inner staging point, outermost first (none when staged outside)."""
        k = self.inner_depth[tensor]
        return () if k is None else self.inner.order[:k]

    def seen(self, tensor: str) -> tuple[dict[str, int], frozenset[str]]:
        """(the tile of every dimension, the dimensions whose loops are above) as a tensor staged in its inner
        level sees them (module docstring): staged among the inner loops, every loop is above and a dimension's
        tile is its inner tile where the inner loop is above it, else its outer tile; staged in the outer nest,
        the outer tiles and the outer loops above it."""
        dims = self.problem.dims
        if self.inner_depth[tensor] is None:
            return {d: self.outer.tile(d) for d in dims}, frozenset(self.outer.order[:self.outer_depth[tensor]])
        above = set(self.inner_above(tensor))
        return {d: self.inner_tiles[d] if d in above else self.outer.tile(d) for d in dims}, frozenset(dims)

    def inner_loop_of(self, tensor: str) -> str:
        """The loop a tensor's inner scope sits in: 'inner LOOP' / 'inner top' among the inner loops, 'outer LOOP'
        / 'outer top' in the outer nest."""
        k = self.inner_depth[tensor]
        if k is None:
            k = self.outer_depth[tensor]
            return f"outer {self.outer.order[k - 1]}" if k else "outer top"
        return f"inner {self.inner.order[k - 1]}" if k else "inner top"

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (stable key order)."""
        return {"outer": self.outer.to_json(),
                "inner": {"order": list(self.inner.order), "tiles": dict(self.inner_tiles),
                          "stage": {n: self.inner_loop_of(n).removeprefix("inner ").replace("outer ", "outer:")
                                    for n in self.levels},
                          "ways": dict(self.inner_ways),
                          "levels": {n: lv.name for n, lv in self.levels.items()}}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], hardware: Accelerator) -> "LevelNest":
        """Rebuild a nest from `to_json()` (also accepts `dsasim search --json` output, with its `nest` key)."""
        from dsasim.architect.nests.loopnest import json_object

        if isinstance(data, Mapping) and "nest" in data and "outer" not in data:
            data = data["nest"]
        data = json_object(data, "LevelNest JSON", ("outer", "inner"))
        inner = json_object(data["inner"], "LevelNest JSON 'inner'", ("order", "tiles", "stage", "ways"))
        nest = cls(LoopNest.from_json(data["outer"]),
                   InnerTiling(inner["order"], inner["tiles"], inner["stage"], inner["ways"]), hardware)
        written = inner.get("levels")  # tensor -> level name, as to_json writes it; the hardware decides, so check
        if written is not None:
            ours = {n: lv.name for n, lv in nest.levels.items()}
            if not isinstance(written, Mapping) or dict(written) != ours:
                raise ValueError(f"LevelNest JSON 'inner' levels {written!r} differ from {hardware.name!r}'s "
                                 f"{ours} (tensor -> level below the SRAM): the nest was written for other hardware; "
                                 f"load it with that hardware")
        return nest

    def format(self) -> str:
        """The nest as readable loops: the outer nest, then the inner loops with each level's staging."""
        p = self.problem
        lines = self.outer.format(self.hardware.word_bytes).splitlines()
        compute = lines.pop()  # the outer innermost statement: the inner nest takes its place
        indent = compute[:len(compute) - len(compute.lstrip())]
        lines.append(f"{indent}# below the SRAM: inner tiles over the outer tile")
        for n, k in self.outer_depth.items():
            lines.append(f"{indent}(stage {n} in {self.levels[n].name} inside {self.inner_loop_of(n)}, held across the "
                         f"loops below it: {'accumulate' if p.tensor(n).output else 'load'} from SRAM, "
                         f"{self.inner_ways[n]}-way)")
        for k in range(len(self.inner.order) + 1):
            for n, lv in self.levels.items():
                if self.inner_depth[n] == k:
                    verb = "accumulate" if p.tensor(n).output else "load"
                    lines.append(f"{indent}stage {n} in {lv.name} ({verb} from SRAM, {self.inner_ways[n]}-way)")
            if k == len(self.inner.order):
                break
            d = self.inner.order[k]
            if self.inner_trips(d) > 1:
                lines.append(f"{indent}for {d} in outer tile step {self.inner_tiles[d]}:   # "
                             f"{self.inner_trips(d)} trips per full outer tile")
                indent += "  "
        lines.append(f"{indent}{p.compute_statement()}   # TensorCore")
        return "\n".join(lines)


@dataclass(frozen=True)
class LevelFigures:
    """One memory level's figures: bytes moved in from its parent and written back to it, transfers, peak
    occupancy against capacity, time at its bandwidth, and its lower bound."""

    level: str
    parent: str
    holds: tuple[str, ...]  # the tensors of the problem it holds
    capacity_bytes: int
    peak_bytes: int
    loaded_bytes: int
    stored_bytes: int
    rmw_bytes: int
    transfers: int
    cycles: float  # transfers x setup + bytes / bandwidth
    bound_bytes: int

    @property
    def traffic_bytes(self) -> int:
        return self.loaded_bytes + self.stored_bytes

    @property
    def fits(self) -> bool:
        return self.peak_bytes <= self.capacity_bytes

    def to_json(self) -> dict[str, Any]:
        return {"level": self.level, "parent": self.parent, "holds": list(self.holds),
                "capacity_bytes": self.capacity_bytes, "peak_bytes": self.peak_bytes,
                "loaded_bytes": self.loaded_bytes, "stored_bytes": self.stored_bytes, "rmw_bytes": self.rmw_bytes,
                "transfers": self.transfers, "cycles": round(self.cycles), "bound_bytes": self.bound_bytes,
                "best_over_bound": round(self.traffic_bytes / self.bound_bytes, 4) if self.bound_bytes else None}


@dataclass(frozen=True)
class LevelAnalysis:
    """The per-level model of a `LevelNest`: the SRAM level (DDR traffic, the outer nest's `Analysis`), each
    inner level, the TensorCore's cycles over the inner tiles, the bottleneck and the cost."""

    nest: LevelNest
    outer: Analysis
    levels: tuple[LevelFigures, ...]  # SRAM first, then the inner levels in hardware order
    triggers: tuple[Trigger, ...]
    macs: int
    tensorcore_cycles: int
    # per inner level, the cycles of its 1-way buffers' transfers that the TensorCore waits for (`exposed_cycles`)
    exposed_cycles: tuple[tuple[str, float], ...] = ()
    # per tensor with an inner level: (tensor, level, bytes staged in from the SRAM, bytes written back to it)
    inner_bytes: tuple[tuple[str, str, int, int], ...] = ()
    # the TensorCore's operand reads and writes (bytes, `dsasim.dataflow`), each in its operand's innermost level
    operand_bytes: OperandAccesses | None = None

    def access_counts(self) -> AccessCounts:
        """Every read and write per tensor and level, in bytes, as a traced run counts them
        (`Counters.access_counts`): DDR and the SRAM's DMA from the outer nest, each inner level's stages (SRAM
        read, level write) and write-backs (the reverse), and the TensorCore's operands in the innermost level of
        their role's path."""
        p, ops = self.nest.problem, self.operand_bytes
        operand = {p.tensors[0].name: (ops.input_reads, 0), p.tensors[1].name: (ops.weight_reads, 0),
                   p.output.name: (ops.output_reads, ops.output_writes)}
        inner = {n: (lv, staged, written) for n, lv, staged, written in self.inner_bytes}
        out = []
        for t in self.outer.tensors:
            moved = {DDR: [t.loaded_bytes, t.stored_bytes], SRAM_LEVEL: [t.stored_bytes, t.loaded_bytes]}
            where = SRAM_LEVEL
            if t.name in inner:
                where, staged, written = inner[t.name]
                moved[SRAM_LEVEL][0] += staged
                moved[SRAM_LEVEL][1] += written
                moved[where] = [written, staged]
            reads, writes = operand.get(t.name, (0, 0))
            moved[where][0] += reads
            moved[where][1] += writes
            out += [TensorAccesses(t.name, level, int(r), int(w)) for level, (r, w) in moved.items() if r or w]
        return AccessCounts(tuple(out), macs=self.macs, padded_macs=int(padded_macs(self.nest.hardware,
                                                                                     self.tensorcore_cycles)),
                            vector_lane_ops=0)

    @functools.cached_property
    def energy(self) -> EnergyReport:
        """The nest's energy (its `access_counts`, inner levels included, priced on its hardware: the capacities it
        was searched at) over its cycles, and that hardware's area."""
        return energy_report(self.access_counts(), self.nest.hardware, round(self.cycles))

    @property
    def critical_cycles(self) -> float:
        """The TensorCore's path: its cycles plus the 1-way inner buffers' transfers it waits for."""
        return float(self.tensorcore_cycles) + sum(c for _, c in self.exposed_cycles)

    @property
    def cycles(self) -> float:
        """The cost: the slowest of the TensorCore's path and every level's transfers (cycles)."""
        return overlapped_cycles(self.critical_cycles, *(lv.cycles for lv in self.levels))

    @property
    def bottleneck(self) -> str:
        """What bounds the run: COMPUTE (the TensorCore's path: when 1-way transfers on it outweigh the
        TensorCore, the level that exposes most) or the name of the level whose transfers take longest."""
        slowest = max(self.levels, key=lambda lv: lv.cycles)
        if self.critical_cycles < slowest.cycles:
            return slowest.level
        level, waits = max(self.exposed_cycles, key=lambda kv: kv[1], default=("", 0.0))
        return level if waits > self.tensorcore_cycles else COMPUTE

    @property
    def fits(self) -> bool:
        """Whether every level's peak is within its capacity."""
        return all(lv.fits for lv in self.levels)

    def level(self, name: str) -> LevelFigures:
        for lv in self.levels:
            if lv.level == name:
                return lv
        raise KeyError(f"no level {name!r}; levels are {[lv.level for lv in self.levels]}")

    def to_json(self) -> dict[str, Any]:
        return {"nest": self.nest.to_json(), "levels": [lv.to_json() for lv in self.levels],
                "tensorcore_cycles": self.tensorcore_cycles, "macs": self.macs,
                "exposed_cycles": {name: round(c) for name, c in self.exposed_cycles}, "cycles": round(self.cycles),
                "bottleneck": self.bottleneck, "triggers": [t.to_json() for t in self.triggers]}


def _seen_counts(problem: Problem, hardware: Accelerator, tiles: Mapping[str, int],
                 above_dims: Iterable[str] | None = None) -> Any:
    """The one-level model of a nest with `tiles` and the loops of `above_dims` (default: all) above every
    tensor."""
    ev = Evaluator(problem, hardware, [[tiles[d]] for d in problem.dims], python_ints=True)
    dims = set(problem.dims if above_dims is None else above_dims)
    above = [[d in dims for d in ev.dims] for _ in range(ev.nt)]
    return ev.evaluate(Batch(tidx=[0] * ev.nd, above=above, ways=[1] * ev.nt, shape=()), estimate=False)


def level_cycles(level: MemoryLevel, transfers: Any, loaded: Any, stored: Any, shared: bool = True) -> Any:
    """A level boundary's busy time in cycles: a setup per transfer plus bytes over its bandwidth (one shared
    port, or loads and stores each on their own when not shared; numpy arrays of candidates too, shared): the
    port rule (`dsasim.cost.port_cycles`) on the bytes, every transfer's setup added."""
    port = level_port(level, shared)
    return busy_cycles(port, transfers, port_cycles(port, loaded, stored), whole=False)


def exposed_cycles(level: MemoryLevel, loads: Any, stores: Any, loaded: Any, stored: Any, instances: Any) -> Any:
    """Cycles of a 1-way buffer's transfers that the TensorCore waits for: all but the first instance's (each
    must wait for the computes on the one slot's previous contents, and the computes for it), as the one-level
    estimate (`analytic.Evaluator._estimate`) counts a 1-way scope."""
    return level_cycles(level, loads + stores, loaded, stored) * (instances - 1) / np.maximum(instances, 1)


def _inner_bound(problem: Problem, tensors: Iterable[str], word_bytes: int) -> int:
    """Compulsory bytes of some tensors: each touched element moved in once, an output written back once."""
    touched = touched_elements(problem)
    return sum(touched[n] * word_bytes for n in tensors)


def analyze_levels(nest: LevelNest) -> LevelAnalysis:
    """The per-level counts, peaks, cycles and bottleneck of a `LevelNest` (module docstring); exact."""
    hw, p = nest.hardware, nest.problem
    word = hw.word_bytes
    outer = analyze(nest.outer, hw, strided_boxes=False)  # (its kernel loads dense boxes)
    sram = hw.sram_level
    ddr_cycles = level_cycles(sram, outer.loads + outer.stores, outer.loaded_bytes, outer.stored_bytes,
                               hw.dram_shared_load_store)
    levels = [LevelFigures(level=SRAM_LEVEL, parent="DDR", holds=p.tensor_names, capacity_bytes=hw.sram_bytes,
                           peak_bytes=outer.peak_sram_bytes, loaded_bytes=outer.loaded_bytes,
                           stored_bytes=outer.stored_bytes, rmw_bytes=outer.rmw_bytes,
                           transfers=outer.loads + outer.stores, cycles=ddr_cycles,
                           bound_bytes=lower_bound(p, hw.sram_bytes, word).bytes)]
    triggers = list(sram_triggers(outer))
    counts = {n: _seen_counts(p, hw, *nest.seen(n)).tensors[p.tensor_names.index(n)] for n in nest.levels}
    exposed = {}
    for lv in hw.inner_levels:
        held = [n for n in p.tensor_names if nest.levels.get(n) is lv]
        loaded = sum(counts[n].loaded_bytes for n in held)
        stored = sum(counts[n].stored_bytes for n in held)
        transfers = sum(counts[n].loads + counts[n].stores for n in held)
        rmw = sum(counts[n].loaded_bytes for n in held if p.tensor(n).output)
        # the largest box of each tensor (one tensor per level: exact; several: an upper bound)
        peak = sum(nest.inner_ways[n] * counts[n].box_bytes for n in held)
        levels.append(LevelFigures(level=lv.name, parent=lv.parent, holds=tuple(held), capacity_bytes=lv.capacity_bytes,
                                   peak_bytes=peak, loaded_bytes=loaded, stored_bytes=stored, rmw_bytes=rmw,
                                   transfers=transfers, cycles=level_cycles(lv, transfers, loaded, stored),
                                   bound_bytes=_inner_bound(p, held, word)))
        exposed[lv.name] = float(sum(exposed_cycles(lv, counts[n].loads, counts[n].stores, counts[n].loaded_bytes,
                                                    counts[n].stored_bytes, counts[n].instances)
                                     for n in held if nest.inner_ways[n] == 1))
        for n in held:
            c = counts[n]
            triggers += [Trigger(lv.name, n, nest.inner_loop_of(n), a, lv.parent, k, b)
                         for a, k, b in _actions(p.tensor(n).output, c.instances, c.loads, c.stores, c.loaded_bytes,
                                                 c.stored_bytes)]
    finest = _seen_counts(p, hw, nest.inner_tiles)
    return LevelAnalysis(nest=nest, outer=outer, levels=tuple(levels), triggers=tuple(triggers),
                         macs=int(finest.macs), tensorcore_cycles=int(finest.tensorcore_cycles),
                         exposed_cycles=tuple(exposed.items()),
                         inner_bytes=tuple((n, nest.levels[n].name, int(counts[n].loaded_bytes),
                                            int(counts[n].stored_bytes)) for n in p.tensor_names if n in counts),
                         operand_bytes=_operand_bytes(nest, finest.operand_bytes))


def _operand_bytes(nest: LevelNest, finest: OperandAccesses) -> OperandAccesses:
    """The TensorCore's operand accesses over the inner tiles (`finest`: the one-level model at the inner tiles,
    whose reads and writes per call are the dataflow's), with the output's reads recounted for where the output
    opens: its fresh elements (`analytic.fresh_outputs`) are those its innermost level's first visits open and
    compute into, with the taps of such a visit (the tap tile it sees with the tap loop above it, else all)."""
    p, word = nest.problem, nest.hardware.word_bytes
    out = p.output.name
    if out in nest.levels:
        tiles, above = nest.seen(out)
    else:
        tiles, above = {d: nest.outer.tile(d) for d in p.dims}, frozenset(nest.outer.above(out))
    ends = {a.tap: tiles[a.tap] if a.tap in above else p.extents[a.tap] for a in p.windows}
    fresh = fresh_outputs(p, nest.inner_tiles, ends) * word
    return finest._replace(output_reads=finest.output_writes - fresh)


def sram_triggers(analysis: Analysis) -> tuple[Trigger, ...]:
    """The DDR <-> SRAM triggers of a one-level nest's analysis: per tensor, where its loads, zero-fills,
    partial-sum loads and write-backs happen, how often and how many bytes."""
    p = analysis.nest.problem
    return tuple(Trigger(SRAM_LEVEL, t.name, t.loop, a, "DDR", c, b) for t in analysis.tensors
                 for a, c, b in _actions(p.tensor(t.name).output, t.instances, t.loads, t.stores, t.loaded_bytes,
                                         t.stored_bytes))


def _actions(output: bool, instances: int, loads: int, stores: int, loaded: int, stored: int) -> list[tuple]:
    """A tensor's triggers at one level as (action, count, bytes): an input's loads; an output's zero-fills,
    partial-sum loads and write-backs (actions that never happen are left out)."""
    if not output:
        return [("load", loads, loaded)] if loads else []
    acts = [("zero-fill", instances - loads, 0), ("load partial sums", loads, loaded), ("write back", stores, stored)]
    return [a for a in acts if a[1]]
