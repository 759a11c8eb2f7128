"""SRAM sizing: the best schedule's traffic and simulated cycles for each SRAM size, beside the lower bounds
(`sweep_sram` for a layer; `sweep_chain` for a chain: the best partition into fused segments and single layers
per size, with all fused and layer by layer beside it).

One enumeration serves every size: the search keeps, for increasing peak SRAM, every candidate that improves the
best (traffic, estimated cycles) so far (`search.search_front`), so the best schedule under a capacity is a
lookup and the best-traffic curve is non-increasing in the SRAM size by construction. Each size's schedule is
then given the buffering ways that fit and lower the estimated cycles (buffering never changes traffic), traced
by the generic kernel (checked equal to the model) and timed by the timing simulator.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from dsasim.util import format_bytes  # (re-exported: the one rule for sizes people read)
from dsasim.hardware import Accelerator
from dsasim.architect.nests.loopnest import LoopNest, Problem
from dsasim.architect.model.analytic import analyze
from dsasim.architect.model.lower_bounds import lower_bound
from dsasim.energy.accesses import AccessCounts
from dsasim.energy.report import EnergyReport, energy_json, energy_report
from dsasim.architect.search.objective import DEFAULT_OBJECTIVE, Objective, objective_named
from dsasim.architect.search.layer_search import (SECONDS_PER_TRACED_SCHEDULE, Candidate, WorkEstimate, _duration, check_work,
                                     confirm, estimate_search_work, estimate_trace_work, search_front)
from dsasim.architect.studies.target_sweep import TargetSweep
from dsasim.one_level import require_one_level

__all__ = ["MAX_SIZE_BYTES", "parse_bytes", "parse_sizes", "SweepPoint", "sweep_sram", "ProgressBar",
           "format_bytes", "ChainSweepPoint", "sweep_chain",
           "estimate_network_sweep_work"]

MAX_POINTS = 1_000_000  # sizes a --sizes LO:HI:POINTS range may ask for

_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024 ** 2, "mb": 1024 ** 2, "mib": 1024 ** 2,
          "g": 1024 ** 3, "gb": 1024 ** 3, "gib": 1024 ** 3}


MAX_SIZE_BYTES = 2 ** 63 - 1  # a size past int64 is a typo, and the model's counts are int64


def parse_bytes(text: str) -> int:
    """'1536KiB', '1.5MiB', '65536', '64K' -> bytes (K/M/G and KB/MB/GB are binary, like KiB/MiB/GiB); ValueError
    for anything else: no exponent, ASCII digits only, at most MAX_SIZE_BYTES (counted exactly, not as a float)."""
    m = re.fullmatch(r"\s*([0-9]+)(?:\.([0-9]+))?\s*([A-Za-z]*)\s*", str(text), re.ASCII)
    if not m or m.group(3).lower() not in _UNITS:
        raise ValueError(f"cannot read {text!r} as a size in bytes; write e.g. 65536, 64KiB, 1.5MiB")
    whole, frac, unit = m.group(1), m.group(2) or "", _UNITS[m.group(3).lower()]
    shown = repr(text) if len(str(text)) <= 40 else repr(str(text)[:40]) + "..."
    if len(whole.lstrip("0")) > 20 or len(frac) > 20:  # refused before any arithmetic on 4,000 digits
        raise ValueError(f"size {shown} has too many digits (a size is at most {MAX_SIZE_BYTES:,} bytes)")
    scaled = int(whole + frac) * unit  # exact: (whole.frac x 10**len(frac)) x unit
    value, rest = divmod(scaled, 10 ** len(frac))
    if rest or value < 1:
        raise ValueError(f"size {shown} is not a positive whole number of bytes")
    if value > MAX_SIZE_BYTES:
        raise ValueError(f"size {shown} is too large (at most {MAX_SIZE_BYTES:,} bytes)")
    return value


def parse_sizes(text: str) -> list[int]:
    """'LO:HI[:POINTS]' -> POINTS sizes spaced geometrically from LO to HI inclusive (rounded to whole bytes;
    default: one point per power of two when HI/LO is a power of two, else 8). A single size is also accepted;
    'A,B,C' lists sizes explicitly."""
    text = text.strip()
    if "," in text:
        sizes = sorted({parse_bytes(p) for p in text.split(",") if p.strip()})
        if not sizes:
            raise ValueError("--sizes lists no size")
        return sizes
    parts = text.split(":")
    if len(parts) == 1:
        return [parse_bytes(parts[0])]
    if len(parts) not in (2, 3):
        raise ValueError(f"--sizes {text!r}: expected LO:HI or LO:HI:POINTS, e.g. 64KiB:8MiB:20")
    lo, hi = parse_bytes(parts[0]), parse_bytes(parts[1])
    if hi < lo:
        raise ValueError(f"--sizes {text!r}: HI ({hi:,} B) is below LO ({lo:,} B)")
    if len(parts) == 3:
        try:
            points = int(parts[2])
        except ValueError:
            raise ValueError(f"--sizes {text!r}: POINTS must be an integer") from None
        if points < 1:
            raise ValueError(f"--sizes {text!r}: POINTS must be >= 1")
        if points > MAX_POINTS:  # bounded by design: the list is built before any estimate can refuse it
            raise ValueError(f"--sizes {text!r}: POINTS must be at most {MAX_POINTS:,} (got {points:,})")
    else:
        ratio = hi / lo
        k = round(math.log2(ratio)) if ratio > 0 else 0
        points = k + 1 if 2 ** k * lo == hi else 8
    if points == 1 or hi == lo:
        return [lo]
    out = []
    grain = 1024 if lo >= 1024 else 1  # whole KiB between the ends
    for i in range(points):
        v = lo * (hi / lo) ** (i / (points - 1))
        out.append(max(grain, int(round(v / grain)) * grain))
    out[0], out[-1] = lo, hi
    return sorted(set(out))


class ProgressBar:
    """A progress bar on stderr (tqdm) driven by a fraction done; silent when disabled."""

    def __init__(self, label: str, enabled: bool = True, stream: Any = None) -> None:
        from tqdm import tqdm

        self._bar = tqdm(total=100, desc=label, disable=not enabled, file=stream if stream is not None else sys.stderr,
                         bar_format="{desc} {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}] {postfix}",
                         dynamic_ncols=True)

    def update(self, fraction: float, note: str = "") -> None:
        """Show `fraction` (0..1) done, with an optional note after the bar."""
        done = int(min(max(fraction, 0.0), 1.0) * 100)
        if done != self._bar.n:
            self._bar.update(done - self._bar.n)
        if note:
            self._bar.set_postfix_str(note, refresh=False)

    def close(self) -> None:
        self._bar.close()


@dataclass(frozen=True)
class SweepPoint:
    """The best-traffic schedule for one SRAM size."""

    sram_bytes: int
    loaded_bytes: int | None
    stored_bytes: int | None
    peak_sram_bytes: int | None
    cycles: int | None
    cycles_source: str  # "simulated" | "estimate" | "none"
    lower_bound_bytes: int
    lower_bound_kind: str
    compulsory_bytes: int
    loop_nest: LoopNest | None
    # the schedule's energy on the hardware with this SRAM size (its model's access counts, priced), None: no fit
    energy: EnergyReport | None = None
    access_counts: AccessCounts | None = None

    @property
    def traffic_bytes(self) -> int | None:
        return None if self.loaded_bytes is None else self.loaded_bytes + self.stored_bytes

    def to_json(self) -> dict[str, Any]:
        return {"sram_bytes": self.sram_bytes, "traffic_bytes": self.traffic_bytes,
                "loaded_bytes": self.loaded_bytes, "stored_bytes": self.stored_bytes,
                "peak_sram_bytes": self.peak_sram_bytes, "cycles": self.cycles, "cycles_source": self.cycles_source,
                "lower_bound_bytes": self.lower_bound_bytes, "lower_bound_kind": self.lower_bound_kind,
                "compulsory_bytes": self.compulsory_bytes,
                "loop_nest": self.loop_nest.to_json() if self.loop_nest is not None else None,
                **energy_json(self.energy)}


def sweep_sram(target: Any, sizes: Sequence[int], runner: Callable[..., Any] | None = None, simulate: bool = True,
               progress: bool = False, force: bool = False, warn: Callable[[str], None] | None = None,
               slide: bool = True, objective: Objective | str = DEFAULT_OBJECTIVE) -> TargetSweep:
    """A `TargetSweep` of a layer's target (a `LayerTarget`: its `problem` on its one-level `hardware`; its choices
    `SweepPoint`s): for every SRAM size (bytes), the best-traffic schedule (ties: estimated cycles), its simulated
    cycles (with a
    `runner`, e.g. `dsasim.kernels.loopnest_kernel.run_loopnest`; else the estimate), the lower bound and compulsory
    traffic. Shows a progress bar on stderr when `progress`. Work estimated beyond the usual (many sizes; points
    whose schedules have millions of tiles to trace) raises `WorkTooLargeError` before it starts, unless
    `force` (then `warn` gets the estimate). slide=False leaves sliding-window reuse out. An `objective` that
    ranks by energy (energy, edp) searches each size on its own (the SRAM's energy per access follows its size)."""
    problem, hardware = target.problem, target.hardware
    objective = objective_named(objective)
    sizes = sorted(set(int(s) for s in sizes))
    if not sizes:
        raise ValueError("sweep_sram needs at least one SRAM size")
    work = estimate_search_work(problem, hardware, len(sizes), slide=slide)
    if objective.needs_energy:  # one enumeration per size instead of one for all
        work = estimate_search_work(problem, hardware, 1, slide=slide)
        work = dataclasses.replace(work, evaluations=work.evaluations * len(sizes), seconds=work.seconds * len(sizes))
    if runner is not None:  # each size's schedule is traced and timed: at least a fixed cost per size
        work = work + WorkEstimate(what=f"tracing {len(sizes):,} schedules", evaluations=0, traced_operations=0,
                                   seconds=len(sizes) * SECONDS_PER_TRACED_SCHEDULE)
    check_work(work, force, warn)
    start = time.perf_counter()
    bar = ProgressBar(f"sweep {target.spec} (estimated {_duration(work.seconds)})", progress)
    bar.update(0.0, "searching")
    st, best = search_front(problem, hardware, sizes, progress=lambda f: bar.update(0.5 * f, "searching"),
                            slide=slide, objective=objective)
    if runner is not None:
        try:
            check_work(estimate_trace_work([c.nest for c in best if c is not None]), force, warn)
        except ValueError:
            bar.close()
            raise
    points = []
    for i, (size, cand) in enumerate(zip(sizes, best)):
        points.append(_sweep_point(problem, dataclasses.replace(hardware, sram_bytes=size), cand, runner, simulate))
        bar.update(0.5 + 0.5 * (i + 1) / len(sizes), f"{format_bytes(size)}")
    bar.close()
    return TargetSweep(target, tuple(sizes), tuple(points), st.evaluations, time.perf_counter() - start,
                       objective=objective.name)


def _sweep_point(problem: Problem, hardware: Accelerator, cand: Candidate | None,
                 runner: Callable[..., Any] | None, simulate: bool) -> SweepPoint:
    """The point of one SRAM size (hardware.sram_bytes): the best candidate's figures, its cycles simulated when
    a runner confirms it (else the estimate), beside the lower bound."""
    size = hardware.sram_bytes
    b = lower_bound(problem, size, hardware.word_bytes)
    if cand is None:
        return SweepPoint(sram_bytes=size, loaded_bytes=None, stored_bytes=None, peak_sram_bytes=None, cycles=None,
                          cycles_source="none", lower_bound_bytes=b.bytes, lower_bound_kind=b.kind,
                          compulsory_bytes=b.compulsory_bytes, loop_nest=None)
    simulated = confirm(cand, hardware, runner, simulate).simulated_cycles
    cycles = cand.estimated_cycles if simulated is None else simulated
    counts = analyze(cand.nest, hardware).access_counts()
    return SweepPoint(sram_bytes=size, loaded_bytes=cand.loaded_bytes, stored_bytes=cand.stored_bytes,
                      peak_sram_bytes=cand.peak_sram_bytes, cycles=cycles,
                      cycles_source="estimate" if simulated is None else "simulated", lower_bound_bytes=b.bytes,
                      lower_bound_kind=b.kind, compulsory_bytes=b.compulsory_bytes, loop_nest=cand.nest,
                      energy=energy_report(counts, hardware, cycles), access_counts=counts)


# ------------------------------------------------------------------------------------------------- chains
@dataclass(frozen=True)
class ChainSweepPoint:
    """The best partition of a chain (fused segments and single layers) for one SRAM size, with the whole chain
    fused and layer by layer beside it (`result`: the `ChainSearchResult` at that size)."""

    sram_bytes: int
    result: Any  # dsasim.architect.search.fused_search.ChainSearchResult

    def _total(self, parts: Any, key: str) -> int | None:
        """A total of a partition (the residual fold included), None when it does not fit."""
        t = self.result.totals(parts, self.result.fold(parts))
        return None if t is None else t[key]

    @property
    def traffic_bytes(self) -> int | None:
        return self._total(self.result.best, "traffic_bytes")

    @property
    def cycles(self) -> int | None:
        return self._total(self.result.best, "cycles")

    @property
    def cycles_source(self) -> str:
        best = self.result.best
        if best is None:
            return "none"
        return "simulated" if all(p.cycles_source == "simulated" for p in best) else "estimate"

    @property
    def lower_bound_bytes(self) -> int:
        return self.result.compulsory_bytes

    @property
    def compulsory_bytes(self) -> int:
        return self.result.compulsory_bytes

    @property
    def fused_bytes(self) -> int | None:
        return None if self.result.fused is None else self.result.fused.traffic_bytes

    @property
    def layer_by_layer_bytes(self) -> int | None:
        return self._total(self.result.layer_by_layer, "traffic_bytes")

    @property
    def partition(self) -> str | None:
        return self.result.label(self.result.best) if self.result.best else None

    @property
    def energy(self) -> EnergyReport | None:
        """The best partition's energy at this size (`chain_target.partition_energy`; None: nothing fits)."""
        return self._energy[1]

    @property
    def access_counts(self) -> AccessCounts | None:
        """The best partition's reads and writes per tensor and level (None: nothing fits)."""
        return self._energy[0]

    @functools.cached_property
    def _energy(self) -> tuple[AccessCounts | None, EnergyReport | None]:
        from dsasim.architect.studies.chain_energy import partition_energy
        return partition_energy(self.result)

    def to_json(self, name: str) -> dict[str, Any]:
        from dsasim.architect.studies.chain_energy import chain_result_json
        return chain_result_json(self.result, name)


def sweep_chain(target: Any, sizes: Sequence[int],
                fused_runner: Callable[..., Any] | None = None, loopnest_runner: Callable[..., Any] | None = None,
                simulate: bool = True, progress: bool = False, force: bool = False,
                warn: Callable[[str], None] | None = None, objective: Objective | str = DEFAULT_OBJECTIVE,
                layer_fronts: bool = False) -> TargetSweep:
    """A `TargetSweep` of a chain's target (a `ChainTarget`: its `chain` on its one-level `hardware`; its choices
    `ChainSweepPoint`s): for every SRAM size (bytes), the best partition of the chain by `objective` (an
    `Objective` or its name: traffic, ties cycles; cycles, estimated, ties traffic; energy or edp), from one
    evaluation of every fused space for all sizes (an energy objective prices it at each size: the SRAM's energy
    per access and leakage follow its size). Each layer alone is searched at each size as `search_chain` searches
    it, so every point equals `search_chain` at that size, cycles included. layer_fronts=True instead takes each
    layer from one search front per distinct layer shape for all sizes (`search_front`, several times faster; the
    network evaluation's choice; an energy objective searches each size on its own): its traffic is the same
    objective, but where nests tie in traffic the front may keep another than the one-size search (the two
    enumerations rank 2-way buffering and refine around different seeds), so its cycles can differ. With runners
    every chosen schedule is traced (checked against its model) and, when `simulate`, timed."""
    from dsasim.architect.search.fused_search import (CHAIN_SMALLER, _fused_choice, _fused_spaces, _layer_choice,
                                               _layer_segment, _partition, estimate_chain_work)
    chain, hardware = target.chain, target.hardware
    require_one_level(hardware, "chain sweep")
    sizes = sorted(set(int(s) for s in sizes))
    if not sizes:
        raise ValueError("sweep_chain needs at least one SRAM size")
    objective = objective_named(objective)
    if sizes[0] < hardware.word_bytes:
        raise ValueError(f"every size must hold at least one {hardware.word_bytes}-byte word")
    distinct = {layer.spec(): layer for layer in chain.layers}
    if layer_fronts:  # one search front per distinct layer for all sizes
        work = estimate_chain_work(chain, hardware, len(sizes), objective=objective)
    else:  # one single-size search per layer and size, as search_chain searches it
        def searches_of(layer: Any) -> WorkEstimate:
            count = sum(other.spec() == layer.spec() for other in chain.layers) * len(sizes)
            one = estimate_search_work(layer, hardware, 1)
            return WorkEstimate(what=f"{count:,} single-layer searches of {layer.spec()} (one per size)",
                                evaluations=one.evaluations * count, traced_operations=0, seconds=one.seconds * count)
        work = estimate_chain_work(chain, hardware, len(sizes), layer_work=searches_of, objective=objective)
    if loopnest_runner is not None or fused_runner is not None:
        work = work + WorkEstimate(what=f"tracing up to {len(sizes) * (len(chain) + 1):,} schedules", evaluations=0,
                                   traced_operations=0,
                                   seconds=len(sizes) * (len(chain) + 1) * SECONDS_PER_TRACED_SCHEDULE)
    check_work(work, force, warn, smaller=CHAIN_SMALLER)
    start = time.perf_counter()
    bar = ProgressBar(f"sweep {target.spec} (estimated {_duration(work.seconds)})", progress)
    bar.update(0.0, "searching")
    spaces = _fused_spaces(chain, hardware)
    evaluations = sum(space.evaluations for space in spaces.values())
    fronts: dict[str, list[Candidate | None]] = {}
    for i, (spec, layer) in enumerate(distinct.items() if layer_fronts else ()):
        st, fronts[spec] = search_front(layer, hardware, sizes, objective=objective)
        evaluations += st.evaluations
        bar.update(0.5 * (i + 1) / len(distinct), "searching")
    points = []
    for k, size in enumerate(sizes):
        hw = dataclasses.replace(hardware, sram_bytes=size)
        t0 = time.perf_counter()
        counter = [0]  # this size's single-layer evaluations
        layers = []
        for i, layer in enumerate(chain.layers):
            if not layer_fronts:  # as `search_chain` does: the points equal its results
                layers.append(_layer_choice(chain, i, hw, objective, loopnest_runner, counter, True, None, simulate))
                continue
            cand = fronts[layer.spec()][k]
            layers.append(_layer_segment(i, None if cand is None else confirm(cand, hw, loopnest_runner, simulate)))
        evaluations += counter[0]
        fused = {seg: _fused_choice(space, *seg, hw, objective, fused_runner if simulate else None)
                 for seg, space in spaces.items()}
        size_evaluations = counter[0] + sum(space.evaluations for space in spaces.values()) if not layer_fronts \
            else 0
        points.append(ChainSweepPoint(size, _partition(chain, hw, objective, layers, spaces, fused, size_evaluations,
                                                       time.perf_counter() - t0)))
        bar.update(0.5 + 0.5 * (k + 1) / len(sizes), format_bytes(size))
    bar.close()
    return TargetSweep(target, tuple(sizes), tuple(points), evaluations, time.perf_counter() - start,
                       objective=objective.name)


def estimate_network_sweep_work(network: Any, hardwares: Sequence[Accelerator], n_sizes: int, fusion: bool = True,
                                workers: int = 1, objective: Objective | str = DEFAULT_OBJECTIVE) -> WorkEstimate:
    """The whole work of `network_eval.sweep_network` over `n_sizes` SRAM sizes: per hardware, every distinct
    layer's search (`estimate_search_work`) and, with `fusion`, every distinct chain's (`estimate_chain_work`) and
    every distinct fused attention group's (`AttentionTarget.estimate_work`, one search per size), the tasks spread over `workers`. Hardware that differs only in fields the search's space does not depend on
    (bandwidths, setup cycles) shares one count. By an energy `objective` every layer is searched once per size
    (the SRAM's energy per access follows its size) instead of one search for all sizes. On hardware with levels
    below the SRAM every layer (chains and attention groups as their layers, `network_levels`) is one level search
    per size (`estimate_level_search_work`)."""
    from dsasim.architect.search.fused_search import estimate_chain_work

    if n_sizes < 1 or workers < 1:
        raise ValueError(f"estimate_network_sweep_work: n_sizes and workers must be >= 1, got {n_sizes}, {workers}")
    objective = objective_named(objective)
    from dsasim.architect.studies.network_levels import fused_pieces
    counted: dict[tuple, WorkEstimate] = {}  # (layer spec, what the space depends on) -> its search's estimate

    def layer_work(problem: Problem, hw: Accelerator) -> WorkEstimate:
        key = (problem.spec(), hw.word_bytes, hw.tensorcore_in_channels, hw.tensorcore_out_channels,
               hw.inner_levels)
        if key not in counted:  # building a layer's space to count it costs ~0.1 s: once per distinct shape
            if hw.inner_levels:  # a level search per size (`LevelTarget.network_choices`): slower, counted so
                from dsasim.architect.search.level_search import estimate_level_search_work
                counted[key] = estimate_level_search_work(problem, hw, n_searches=n_sizes)
            elif objective.needs_energy:
                one = estimate_search_work(problem, hw, 1)
                counted[key] = WorkEstimate(what=f"{n_sizes:,} searches of {problem.spec()} (one per size)",
                                            evaluations=one.evaluations * n_sizes, traced_operations=0,
                                            seconds=one.seconds * n_sizes)
            else:
                counted[key] = estimate_search_work(problem, hw, n_sizes)
        return counted[key]

    total = WorkEstimate(what="", evaluations=0, traced_operations=0, seconds=0.0)
    tasks = 0
    for hw in hardwares:
        fused = fused_pieces(network, hw, fusion)  # on levels below the SRAM nothing is fused: every layer searched
        pieces = fused.searched(network)
        distinct_chains = list(dict.fromkeys(nc.chain for nc in fused.chains))
        attentions = list(dict.fromkeys(problem for _, problem in fused.in_attention.values()))
        problems = pieces[:len(pieces) - len(distinct_chains) - len(attentions)]
        tasks += len(pieces)
        for problem in problems:
            total = total + layer_work(problem, hw)
        for chain in distinct_chains:
            total = total + estimate_chain_work(chain, hw, n_sizes, lambda p, hw=hw: layer_work(p, hw), objective)
        for attention in attentions:
            from dsasim.architect.studies.attention_target import AttentionTarget
            from dsasim.architect.studies.target import SearchOptions
            one = AttentionTarget(attention.spec(), attention, hw).estimate_work(hw.sram_bytes, SearchOptions())
            total = total + WorkEstimate(what="", evaluations=one.evaluations * n_sizes, traced_operations=0,
                                         seconds=one.seconds * n_sizes)
    return WorkEstimate(what=f"the sweep of {network.name}: {tasks:,} searches ({len(problems)} distinct layers and "
                             f"{len(distinct_chains)} chains"
                             + (f" and {len(attentions)} attention groups" if attentions else "")
                             + f" per hardware, {len(hardwares)} hardware) at {n_sizes:,} "
                             f"SRAM size(s) on {min(workers, max(tasks, 1))} worker(s)",
                        evaluations=total.evaluations, traced_operations=0,
                        seconds=total.seconds / min(workers, max(tasks, 1)))
