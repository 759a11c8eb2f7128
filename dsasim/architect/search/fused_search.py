"""The search over fused schedules of a chain (any kind registered in `dsasim.architect.search.chain_kinds`: a `ConvChain`,
a `GemmChain`), beside the best layer-by-layer schedules of its layers. What differs between kinds (which segments
fuse, their spaces, analysis, work estimate, JSON extras) is read from the chain's `ChainKind`, never branched on.

`search_chain(chain, hardware, sram_bytes)` answers "fuse or not, how deep, with which tiles and halo policy":

* Fused candidates: every (n, oh, ow) tile of the last output (all sizes 1 .. extent), halo recompute / keep,
  weights resident / per-tile, a 1- or 2-way tile scope, evaluated at once by `evaluate_fused_space` (numpy over
  the whole space, `dsasim.architect.search.fused_space`; the peak from the distinct tile classes). It equals
  `analyze_fused` on every field it reports (tested); its vector cycles are the floor sum(elements) / lanes.
* A `GemmChain`'s fused candidates: every 1-way `GemmChainNest` of `evaluate_gemm_chain_space` (both shared-loop
  orders, aligned tile sizes per loop; exact vector cycles; kept as fronts).
* Layer by layer: each layer's best `LoopNest` from `dsasim.architect.search.layer_search.search` (its intermediate stored to
  and loaded from DDR); an identity residual is folded into the last layer's store, which loads the block's input
  once more (|input| bytes, added analytically: the LoopNest kernel has no residual).
* Fusion depth: every split of the chain into consecutive segments, each segment fused (two or more layers) or a
  single layer's best nest; a residual not in a fused segment with the first layer is folded as above.
The best partition by the objective is `best` (energy and edp: each segment priced at the SRAM size, the fused
nests by their space's access arrays, plus the residual fold's load); `fused` (the whole chain fused) and
`layer_by_layer` are reported beside it. Cycles are the model's estimates (max(DMA, TensorCore + vector)); given
runners, every chosen nest is traced (checked against the model) and timed.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from dsasim.architect.search.chain_kind import Chain, FusedSpaceLike
from dsasim.architect.search.chain_kinds import chain_kind_of
from dsasim.architect.model.fused_analysis import FusedAnalysis
from dsasim.architect.search.fused_space import FusedSpace, _best_index, evaluate_fused_space  # noqa: F401 (re-exported)
from dsasim.architect.search.objective import DEFAULT_OBJECTIVE, Objective, objective_named
from dsasim.hardware import Accelerator
from dsasim.one_level import require_one_level

__all__ = ["FusedSpace", "evaluate_fused_space", "SegmentChoice", "ChainSearchResult", "search_chain",
           "estimate_chain_work"]

CHAIN_SMALLER = ("a smaller chain (a GEMM chain's fused grid grows as the fourth power of its tile candidates), "
                 "fewer SRAM sizes, or no tracing (--confirm 0 / --no-simulate)")  # how to shrink a refused search


# ------------------------------------------------------------------------------------------------ the search
@dataclass(frozen=True)
class SegmentChoice:
    """The best schedule of consecutive layers [first, stop) of a chain: fused (a FusedNest) or one layer's
    LoopNest (a search `Candidate`)."""

    first: int
    stop: int
    fused: Any  # the chain kind's fused nest (a FusedNest, a GemmChainNest), None for a single layer
    analysis: FusedAnalysis | None  # the chain kind's analysis of `fused` (a GemmChainAnalysis for a GEMM chain)
    candidate: Any  # dsasim.architect.search.layer_search.Candidate for a single layer
    loaded_bytes: int
    stored_bytes: int
    peak_sram_bytes: int
    macs: int
    tensorcore_cycles: int
    cycles: int
    cycles_source: str  # "estimate" or "simulated"

    @property
    def traffic_bytes(self) -> int:
        return self.loaded_bytes + self.stored_bytes


@dataclass
class ChainSearchResult:
    """The outcome of `search_chain`: the best partition, the whole chain fused, and layer by layer."""

    chain: Chain
    hardware: Accelerator
    sram_bytes: int
    objective: Objective
    best: list[SegmentChoice] | None
    fused: SegmentChoice | None
    layer_by_layer: list[SegmentChoice] | None
    compulsory_bytes: int
    evaluations: int
    seconds: float
    chimera: Any = None  # a GEMM chain: the nest Chimera's DV / MU model picks (its kind's `reference_choice`)

    @staticmethod
    def totals(parts: list[SegmentChoice] | None, extra_loaded: int = 0) -> dict[str, int] | None:
        if parts is None:
            return None
        return {"loaded_bytes": sum(p.loaded_bytes for p in parts) + extra_loaded,
                "stored_bytes": sum(p.stored_bytes for p in parts),
                "traffic_bytes": sum(p.traffic_bytes for p in parts) + extra_loaded,
                "cycles": sum(p.cycles for p in parts), "macs": sum(p.macs for p in parts),
                "peak_sram_bytes": max(p.peak_sram_bytes for p in parts)}

    def label(self, parts: list[SegmentChoice]) -> str:
        """The partition as text, e.g. '[1 2 3]' (all fused) or '[1 2] [3]'."""
        return " ".join("[" + " ".join(str(i + 1) for i in range(p.first, p.stop)) + "]" for p in parts)

    @property
    def layer_by_layer_bound_bytes(self) -> int:
        """A lower bound on layer-by-layer execution only: each layer's own bound (`lower_bound`: its intermediate
        input loaded, its output stored) summed. Not a bound on a fused schedule, which computes a layer's input on
        chip: the segment arguments behind the single-layer bounds count every operand at hand as transferred."""
        from dsasim.architect.model.lower_bounds import lower_bound
        return sum(lower_bound(layer, self.sram_bytes, self.hardware.word_bytes).bytes for layer in self.chain.layers)

    def fold(self, parts: list[SegmentChoice] | None) -> int:
        """Bytes of the input loaded again to fold the residual when the last segment does not start at layer 1."""
        if parts is None or not self.chain.residual or parts[-1].first == 0 and parts[-1].fused is not None:
            return 0
        return math.prod(self.chain.input_shape) * self.hardware.word_bytes


    def _chimera_json(self) -> dict[str, Any]:
        """The nest Chimera's model picks, with its DV / MU and what the trace of it moves."""
        nest = self.chimera
        assert nest is not None
        a = chain_kind_of(self.chain).analyze(nest, self.hardware)
        return {"fused_nest": nest.to_json(), "chimera_dv_bytes": a.chimera_dv_bytes,
                "chimera_mu_bytes": a.chimera_mu_bytes, "traffic_bytes": a.traffic_bytes,
                "peak_sram_bytes": a.peak_sram_bytes, "estimated_cycles": a.estimated_cycles}

    def to_json(self, name: str) -> dict[str, Any]:
        """The JSON object of `dsasim search CHAIN --json` (stable key order, no wall times)."""
        result = self
        hw = result.hardware
        best, fused, lbl = result.best, result.fused, result.layer_by_layer

        def part(p: Any) -> dict[str, Any]:
            data: dict[str, Any] = {"layers": [layer.name for layer in result.chain.layers[p.first:p.stop]],
                                    "fused": p.fused is not None, "loaded_bytes": p.loaded_bytes,
                                    "stored_bytes": p.stored_bytes, "peak_sram_bytes": p.peak_sram_bytes,
                                    "macs": p.macs, "cycles": p.cycles, "cycles_source": p.cycles_source}
            if p.fused is not None:
                data["recomputed_macs"] = p.analysis.recomputed_macs
                data["intermediate_peak_bytes"] = p.analysis.intermediate_peak_bytes
                data.update(chain_kind_of(result.chain).part_json(p.analysis))
                data["fused_nest"] = p.fused.to_json()
            else:
                data["loop_nest"] = p.candidate.nest.to_json()
            return data

        totals = result.totals(best, result.fold(best))
        lbl_totals = result.totals(lbl, result.fold(lbl))
        fused_totals = result.totals([fused]) if fused is not None else None
        return {
            "chain": name,
            "hardware": hw.name,
            "word_bytes": hw.word_bytes,
            "objective": result.objective.name,
            "sram_bytes": result.sram_bytes,
            "fused": best is not None and len(best) < len(result.chain),
            "partition": result.label(best) if best else None,
            "loaded_bytes": totals["loaded_bytes"] if totals else None,
            "stored_bytes": totals["stored_bytes"] if totals else None,
            "traffic_bytes": totals["traffic_bytes"] if totals else None,
            "cycles": totals["cycles"] if totals else None,
            "residual_fold_bytes": result.fold(best),
            "lower_bound_bytes": result.compulsory_bytes,
            "compulsory_bytes": result.compulsory_bytes,
            "fused_bytes": fused_totals["traffic_bytes"] if fused_totals else None,
            "fused_cycles": fused_totals["cycles"] if fused_totals else None,
            "recomputed_macs": fused.analysis.recomputed_macs if fused is not None else None,
            "intermediate_peak_bytes": fused.analysis.intermediate_peak_bytes if fused is not None else None,
            "layer_by_layer_bytes": lbl_totals["traffic_bytes"] if lbl_totals else None,
            "layer_by_layer_cycles": lbl_totals["cycles"] if lbl_totals else None,
            "layer_by_layer_bound_bytes": self.layer_by_layer_bound_bytes,
            "evaluations": result.evaluations,
            "parts": [part(p) for p in best] if best else [],
            "chimera": None if self.chimera is None else self._chimera_json(),
        }


def _fused_spaces(chain: Chain, hw: Accelerator) -> Mapping[tuple[int, int], FusedSpaceLike]:
    """Every fused segment's space (layers [first, stop), two or more: which ones is the chain kind's rule),
    independent of the SRAM size."""
    return chain_kind_of(chain).fused_spaces(chain, hw)


def estimate_chain_work(chain: Chain, hw: Accelerator, n_capacities: int = 1,
                        layer_work: Callable[[Any], Any] | None = None,
                        objective: Objective | str = DEFAULT_OBJECTIVE) -> Any:
    """The whole work (a `search.WorkEstimate`) of a chain search (`search_chain`) or sweep over `n_capacities`
    SRAM sizes (`sweep_chain`): each distinct layer's search plus the fused spaces (the chain kind's `fused_work`:
    a GEMM chain's grid, counted exactly; a conv chain's fused spaces, N x OH x OW tiles x 8 variants per segment).
    `layer_work(problem)` replaces `estimate_search_work` for the layers (a caller's cache over many chains). By an
    energy `objective` each layer is searched once per size (the SRAM's energy per access follows its size) and the
    fused spaces are priced per size (the kind's `fused_work` counts it: a GEMM chain's grid once more per size)."""
    from dsasim.architect.search.layer_search import WorkEstimate, estimate_search_work

    distinct = {layer.spec(): layer for layer in chain.layers}
    objective = objective_named(objective)

    def searches(layer: Any) -> WorkEstimate:
        if not objective.needs_energy:
            return estimate_search_work(layer, hw, n_capacities)
        one = estimate_search_work(layer, hw, 1)  # one search per size
        return WorkEstimate(what=f"{n_capacities:,} searches of {layer.spec()} (one per size)",
                            evaluations=one.evaluations * n_capacities, traced_operations=0,
                            seconds=one.seconds * n_capacities)

    layers = [searches(layer) if layer_work is None else layer_work(layer) for layer in distinct.values()]
    fused = chain_kind_of(chain).fused_work(chain, hw, objective, n_capacities)
    parts = [*layers, fused]
    return WorkEstimate(what=f"search of the chain {chain.name} ({len(distinct)} distinct layer(s) at "
                             f"{n_capacities:,} SRAM size(s), and its fused schedules)",
                        evaluations=sum(w.evaluations for w in parts), traced_operations=0,
                        seconds=sum(w.seconds for w in parts))


def _fused_choice(space: FusedSpaceLike, first: int, stop: int, hw: Accelerator, objective: Objective,
                  runner: Callable[..., Any] | None) -> SegmentChoice | None:
    """The best nest of a fused segment's space under hw.sram_bytes, traced and timed when a runner is given."""
    nest = space.best(hw.sram_bytes, objective)
    if nest is None:
        return None
    a = chain_kind_of(nest.chain).analyze(nest, hw)
    cycles, source = a.estimated_cycles, "estimate"
    if runner is not None:
        from dsasim.timing import simulate as simulate_timing
        result = runner(nest, hw)
        if (result.loaded_bytes, result.stored_bytes, result.peak_sram_bytes) != (a.loaded_bytes, a.stored_bytes,
                                                                                  a.peak_sram_bytes):
            raise AssertionError(f"fused model and trace differ for {nest!r}")
        cycles, source = int(simulate_timing(result.trace, hw, power=False).cycles), "simulated"
    return SegmentChoice(first, stop, nest, a, None, a.loaded_bytes, a.stored_bytes, a.peak_sram_bytes, a.macs,
                         a.tensorcore_cycles, cycles, source)


def _layer_choice(chain: Chain, i: int, hw: Accelerator, objective: Objective,
                  runner: Callable[..., Any] | None, counter: list[int], force: bool,
                  warn: Callable[[str], None] | None, simulate: bool = True) -> SegmentChoice | None:
    """Layer i's best single-layer schedule under hw.sram_bytes (`search`; traced, and timed when `simulate`, with
    a runner); counter[0] gains its evaluations."""
    from dsasim.architect.search.layer_search import search
    result = search(chain.layers[i], hw, hw.sram_bytes, objective, runner=runner, confirm_top=1,
                    simulate=simulate and runner is not None, force=force, warn=warn)
    counter[0] += result.evaluations
    return _layer_segment(i, result.best)


def _layer_segment(i: int, best: Any) -> SegmentChoice | None:
    """Layer i's best single-layer `Candidate` (or None: nothing fits) as a segment of the partition."""
    if best is None:
        return None
    source = "simulated" if best.simulated_cycles is not None else "estimate"
    return SegmentChoice(i, i + 1, None, None, best, best.loaded_bytes, best.stored_bytes, best.peak_sram_bytes,
                         best.macs, best.tensorcore_cycles, best.cycles, source)


def _partition(chain: Chain, hw: Accelerator, objective: Objective,
               layers: list[SegmentChoice | None],
               spaces: Mapping[tuple[int, int], FusedSpaceLike],
               fused_parts: dict[tuple[int, int], SegmentChoice | None], evaluations: int,
               seconds: float) -> ChainSearchResult:
    """The best split of the chain into the given fused segments and single layers (every split is tried); for a
    GEMM chain also the nest Chimera's model would pick. Ranked by `objective`'s key without the peak (equal keys:
    the first split in the cuts' `itertools.product` order, the whole chain fused first). An energy objective
    ranks by the segments' energies summed (`_segment_energies`) plus the residual fold's load
    (`_fold_energy_pj`): what `chain_energy.partition_energy` reports for the chosen split."""
    L = len(chain)
    result = ChainSearchResult(chain, hw, hw.sram_bytes, objective, None, fused_parts.get((0, L)),
                               None if any(p is None for p in layers) else list(layers),  # type: ignore[arg-type]
                               chain.compulsory_bytes(hw.word_bytes), evaluations, seconds)
    space = spaces.get((0, L))
    reference = None if space is None else chain_kind_of(chain).reference_choice
    if reference is not None:
        result.chimera = reference(space, hw.sram_bytes)
    energies = _segment_energies(hw, layers, fused_parts) if objective.needs_energy else None
    best_key = None
    for cuts in itertools.product((False, True), repeat=L - 1):  # a cut after layer i + 1 (True: split there)
        bounds = [0] + [i + 1 for i, cut in enumerate(cuts) if cut] + [L]
        parts = [layers[a] if b - a == 1 else fused_parts[(a, b)] for a, b in zip(bounds, bounds[1:])]
        if any(p is None for p in parts):
            continue
        fold = result.fold(parts)  # type: ignore[arg-type]
        totals = ChainSearchResult.totals(parts, fold)  # type: ignore[arg-type]
        energy = None if energies is None else sum(energies[(p.first, p.stop)] for p in parts) + \
            _fold_energy_pj(hw, fold)  # type: ignore[union-attr]
        key = objective.key(traffic=totals["traffic_bytes"], cycles=totals["cycles"], energy=energy)
        if best_key is None or key < best_key:
            result.best, best_key = parts, key  # type: ignore[assignment]
    return result


def _segment_energies(hw: Accelerator, layers: list[SegmentChoice | None],
                      fused_parts: Mapping[tuple[int, int], SegmentChoice | None]) -> dict[tuple[int, int], float]:
    """Each segment's energy in pJ on `hw` (its SRAM size), leakage over the segment's own cycles (so a partition's
    sum is its leakage over its summed cycles): a fused segment's analysed accesses priced, a single layer's
    candidate priced (`candidate_energy_pj`); keyed by (first, stop), segments that do not fit left out."""
    from dsasim.architect.search.layer_search import candidate_energy_pj
    from dsasim.energy.report import energy_report

    out: dict[tuple[int, int], float] = {}
    for p in layers:
        if p is not None:
            out[(p.first, p.stop)] = candidate_energy_pj(p.candidate, hw, p.cycles)
    for seg, p in fused_parts.items():
        if p is not None:
            out[seg] = energy_report(p.analysis.access_counts, hw, p.cycles).energy_pj
    return out


def _fold_energy_pj(hw: Accelerator, fold_bytes: int) -> float:
    """The residual fold's load in pJ: `fold_bytes` read from DDR and written to the SRAM (no compute, no time)."""
    from dsasim.energy.report import energy_pj_of
    from dsasim.hardware import DDR, SRAM_LEVEL

    return energy_pj_of(hw, {DDR: fold_bytes}, {SRAM_LEVEL: fold_bytes}, 0, 0, 0) if fold_bytes else 0.0


def search_chain(chain: Chain, hardware: Accelerator, sram_bytes: int | None = None,
                 objective: Objective | str = DEFAULT_OBJECTIVE,
                 fused_runner: Callable[..., Any] | None = None,
                 loopnest_runner: Callable[..., Any] | None = None, force: bool = False,
                 warn: Callable[[str], None] | None = None,
                 progress: Callable[[float], None] | None = None) -> ChainSearchResult:
    """The best partition of `chain` into fused segments and single layers under `sram_bytes` (module docstring).

    With runners (`dsasim.kernels.fused_kernel.run_fused`, `dsasim.kernels.loopnest_kernel.run_loopnest`; the CLI
    finds them by entry point) every chosen schedule is traced (checked equal to the model) and timed: cycles are
    simulated.
    The whole work is estimated first (`estimate_chain_work`): beyond the usual it raises WorkTooLargeError unless
    `force` (then `warn` gets the estimate); `force` and `warn` also go to each layer's `search`. `progress` gets
    the fraction done (0..1) after each layer and after the fused spaces."""
    from dsasim.architect.search.layer_search import check_work, with_capacity
    require_one_level(hardware, "chain search")
    objective = objective_named(objective)
    _, hw = with_capacity(hardware, sram_bytes)
    check_work(estimate_chain_work(chain, hw, objective=objective), force, warn, smaller=CHAIN_SMALLER)
    start = time.perf_counter()
    counter = [0]
    layers = []
    for i in range(len(chain)):  # progress: each layer a share, the fused spaces the last one
        layers.append(_layer_choice(chain, i, hw, objective, loopnest_runner, counter, force, warn))
        if progress is not None:
            progress((i + 1) / (len(chain) + 1))
    spaces = _fused_spaces(chain, hw)
    fused_parts = {seg: _fused_choice(space, *seg, hw, objective, fused_runner) for seg, space in spaces.items()}
    evaluations = counter[0] + sum(space.evaluations for space in spaces.values())
    if progress is not None:
        progress(1.0)
    return _partition(chain, hw, objective, layers, spaces, fused_parts, evaluations, time.perf_counter() - start)
