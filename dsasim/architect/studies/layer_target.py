"""The layer target: one layer (a built-in name or a shape spec, `dsasim.architect.problems.layers`) on one-level hardware,
searched by `dsasim.architect.search.layer_search.search`; its choice is the best `Candidate` with the search's figures."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from dsasim.architect.search.objective import Objective
from dsasim.architect.studies.target import ConfirmRule, SearchOptions
from dsasim.energy.accesses import AccessCounts
from dsasim.energy.report import EnergyReport, energy_json, energy_report
from dsasim.hardware import Accelerator

if TYPE_CHECKING:  # the search is imported by a search, not with the kind (`dsasim search --help` stays fast)
    from dsasim.architect.search.layer_search import SearchResult

__all__ = ["LAYER_CONFIRM", "LayerChoice", "LayerFrontChoice", "LayerTarget", "load_layer_target"]

LAYER_CONFIRM = ConfirmRule(default=3)  # a single layer's search on one-level hardware re-runs its top 3 candidates


@dataclass(frozen=True)
class LayerChoice:
    """The best schedule of a layer (`result.best`, a `search.Candidate`) and the search that found it."""

    spec: str
    result: SearchResult

    kind = "layer"  # its text: dsasim.view.target_text.CHOICE_TEXTS["layer"]

    @property
    def fits(self) -> bool:
        return self.result.best is not None

    @property
    def no_fit_reason(self) -> str:
        return (f"no schedule of {self.spec} fits in {self.result.sram_bytes:,} B of SRAM (even the smallest tiles "
                f"overflow it)")

    @property
    def schedule(self) -> Any:
        return None if self.result.best is None else self.result.best.nest

    def _best(self, name: str) -> int | None:
        return None if self.result.best is None else getattr(self.result.best, name)

    @property
    def loaded_bytes(self) -> int | None:
        return self._best("loaded_bytes")

    @property
    def stored_bytes(self) -> int | None:
        return self._best("stored_bytes")

    @property
    def traffic_bytes(self) -> int | None:
        return self._best("traffic_bytes")

    @property
    def peak_sram_bytes(self) -> int | None:
        return self._best("peak_sram_bytes")

    @property
    def macs(self) -> int | None:
        return self._best("macs")

    @property
    def cycles(self) -> int | None:
        return self._best("cycles")

    @property
    def cycles_source(self) -> str:
        best = self.result.best
        return "simulated" if best is not None and best.simulated_cycles is not None else "estimate"

    @property
    def lower_bound_bytes(self) -> int:
        return self.result.bound.bytes

    @property
    def compulsory_bytes(self) -> int:
        return self.result.bound.compulsory_bytes

    @property
    def evaluations(self) -> int:
        return self.result.evaluations

    @functools.cached_property
    def access_counts(self) -> AccessCounts | None:
        """The best schedule's reads and writes per tensor and level (the model's, equal to the trace's)."""
        from dsasim.architect.model.analytic import analyze

        best = self.result.best
        return None if best is None else analyze(best.nest, self.result.hardware).access_counts()

    @functools.cached_property
    def energy(self) -> EnergyReport | None:
        """The best schedule's energy and the hardware's area at this SRAM size (None: nothing fits)."""
        counts = self.access_counts
        return None if counts is None else energy_report(counts, self.result.hardware, self.cycles)

    def to_json(self) -> dict[str, Any]:
        """The JSON object of `dsasim search LAYER --json` (stable key order, no wall times)."""
        from dsasim.architect.model.analytic import analyze
        from dsasim.architect.model.hierarchy import sram_triggers

        result = self.result
        best = result.best
        assert best is not None, "to_json() of a choice that does not fit"
        hw = result.hardware
        return {
            "layer": self.spec,
            "hardware": hw.name,
            "word_bytes": hw.word_bytes,
            "objective": result.objective.name,
            "sram_bytes": result.sram_bytes,
            "loaded_bytes": best.loaded_bytes,
            "stored_bytes": best.stored_bytes,
            "rmw_bytes": best.rmw_bytes,
            "traffic_bytes": best.traffic_bytes,
            "peak_sram_bytes": best.peak_sram_bytes,
            "lower_bound_bytes": result.bound.bytes,
            "lower_bound_kind": result.bound.kind,
            "compulsory_bytes": result.bound.compulsory_bytes,
            "cycles": best.cycles,
            "cycles_source": self.cycles_source,
            "tensorcore_cycles": best.tensorcore_cycles,
            "macs": best.macs,
            "padded_macs": best.tensorcore_cycles * hw.tensorcore_in_channels * hw.tensorcore_out_channels,
            "tensorcore_utilization": round(best.tensorcore_utilization(hw), 6),
            "evaluations": result.evaluations,
            "pareto": [{"peak_sram_bytes": c.peak_sram_bytes, "traffic_bytes": c.traffic_bytes}
                       for c in result.pareto],
            "loop_nest": best.nest.to_json(),
            "triggers": [t.to_json() for t in sram_triggers(analyze(best.nest, hw))],
            **energy_json(self.energy, self.access_counts),
        }


@dataclass(frozen=True)
class LayerFrontChoice:
    """The best schedule of a layer under one SRAM size, picked from a search front shared by every size
    (`search.search_front`: the model's figures, nothing re-run), as the network evaluation reads it.

    `candidate` is the `search.Candidate` (None when nothing fits); `smallest_peak_bytes` is the least peak SRAM
    of any schedule the front holds (None when it holds none) and `largest_sram_bytes` the largest size swept,
    both for the reason nothing fits."""

    spec: str
    problem: Any
    hardware: Accelerator
    sram_bytes: int
    candidate: Any
    smallest_peak_bytes: int | None
    largest_sram_bytes: int
    evaluations: int

    kind = "layer"
    cycles_source = "estimate"

    @property
    def fits(self) -> bool:
        return self.candidate is not None

    @property
    def no_fit_reason(self) -> str:
        need = (f"the smallest schedule found needs {self.smallest_peak_bytes:,} B"
                if self.smallest_peak_bytes is not None else f"none fits even in {self.largest_sram_bytes:,} B")
        return f"no tiling of {self.spec} fits in {self.sram_bytes:,} B of SRAM ({need})"

    @property
    def schedule(self) -> Any:
        return None if self.candidate is None else self.candidate.nest

    def _best(self, name: str) -> int | None:
        return None if self.candidate is None else getattr(self.candidate, name)

    loaded_bytes = property(lambda self: self._best("loaded_bytes"), doc="bytes loaded from DDR")
    stored_bytes = property(lambda self: self._best("stored_bytes"), doc="bytes stored to DDR")
    traffic_bytes = property(lambda self: self._best("traffic_bytes"), doc="loaded + stored bytes")
    peak_sram_bytes = property(lambda self: self._best("peak_sram_bytes"), doc="peak SRAM bytes")
    macs = property(lambda self: self._best("macs"), doc="MACs the schedule runs")
    cycles = property(lambda self: self._best("estimated_cycles"), doc="the model's estimated cycles")
    tensorcore_cycles = property(lambda self: self._best("tensorcore_cycles"), doc="TensorCore cycles, padded")

    @property
    def _bound(self) -> Any:
        from dsasim.architect.model.lower_bounds import lower_bound
        return lower_bound(self.problem, self.sram_bytes, self.hardware.word_bytes)

    @property
    def lower_bound_bytes(self) -> int:
        return self._bound.bytes

    @property
    def compulsory_bytes(self) -> int:
        return self._bound.compulsory_bytes

    @functools.cached_property
    def access_counts(self) -> AccessCounts | None:
        """The candidate's reads and writes per tensor and level (the model's; None when nothing fits)."""
        from dsasim.architect.model.analytic import analyze

        return None if self.candidate is None else analyze(self.candidate.nest, self.hardware).access_counts()

    def network_schedule(self) -> tuple[str, dict[str, Any]]:
        """('', the nest's JSON)."""
        return "", self.candidate.nest.to_json()

    def to_json(self) -> dict[str, Any]:
        """The layer, the SRAM size, the model's figures and the loop nest (no confirmation, no Pareto front)."""
        assert self.candidate is not None, "to_json() of a choice that does not fit"
        bound = self._bound
        return {"layer": self.spec, "hardware": self.hardware.name, "sram_bytes": self.sram_bytes,
                "loaded_bytes": self.loaded_bytes, "stored_bytes": self.stored_bytes,
                "traffic_bytes": self.traffic_bytes, "peak_sram_bytes": self.peak_sram_bytes,
                "lower_bound_bytes": bound.bytes, "compulsory_bytes": bound.compulsory_bytes,
                "cycles": self.cycles, "cycles_source": self.cycles_source,
                "tensorcore_cycles": self.tensorcore_cycles, "macs": self.macs,
                "loop_nest": self.candidate.nest.to_json()}


@dataclass(frozen=True)
class LayerTarget:
    """A layer (`problem`, a ConvProblem or MatmulProblem) on one-level `hardware`."""

    spec: str
    problem: Any
    hardware: Accelerator

    kind = "layer"

    @property
    def progress_label(self) -> str:
        return f"search {self.spec}"

    def confirm_count(self, options: SearchOptions) -> int:
        return LAYER_CONFIRM.count(options.confirm)

    def estimate_work(self, sram_bytes: int, options: SearchOptions) -> Any:
        from dsasim.architect.search.layer_search import estimate_search_work
        return estimate_search_work(self.problem, dataclasses.replace(self.hardware, sram_bytes=sram_bytes),
                                    slide=options.slide)

    def search(self, sram_bytes: int, objective: Objective | str, options: SearchOptions) -> LayerChoice:
        """`search.search` of the layer: the top `confirm_count` candidates re-run through the "loopnest" kernel."""
        from dsasim.architect.search.layer_search import search

        confirm = self.confirm_count(options)
        runner = options.kernel("loopnest") if confirm > 0 else None
        result = search(self.problem, self.hardware, sram_bytes, objective, runner=runner,
                        confirm_top=max(confirm, 1), simulate=options.simulate, force=options.force,
                        warn=options.warn, slide=options.slide, progress=options.progress)
        return LayerChoice(self.spec, result)

    # -- network evaluation: every size from one search front (`dsasim.architect.studies.target_figures`)
    def network_choices(self, sizes: Sequence[int], objective: Objective | str) -> list[LayerFrontChoice]:
        """Per SRAM size (bytes), the best candidate by `objective` from one `search_front` over all sizes."""
        from dsasim.architect.search.layer_search import search_front

        caps = [int(s) for s in sizes]
        st, best = search_front(self.problem, self.hardware, caps, objective=objective)
        smallest = int(st.traffic.peak.min()) if len(st.traffic.peak) else None
        return [LayerFrontChoice(self.spec, self.problem, self.hardware, cap, cand, smallest, max(caps),
                                 st.evaluations)
                for cap, cand in zip(caps, best)]

    # -- sweep-sram: one layer across SRAM sizes (`sweep.sweep_sram`, ranked by traffic)
    def check_sweep(self, level: str | None, objective: str | None, options: SearchOptions) -> None:
        """ValueError for a --level other than the SRAM or an objective other than traffic (this sweep ranks by
        traffic: its points come from one search front for all sizes)."""
        from dsasim.architect.search.objective import EDP, ENERGY, TRAFFIC, objective_named

        if level not in (None, "SRAM"):
            raise ValueError(f"--level {level}: on {self.hardware.name}, a layer is swept over the SRAM only "
                             f"(hardware with levels below the SRAM, e.g. blog-l1, sweeps others)")
        if objective is not None and objective_named(objective) not in (TRAFFIC, ENERGY, EDP):
            raise ValueError(f"--objective {objective} does not apply to a single layer's sweep on "
                             f"{self.hardware.name}: it ranks by traffic, energy or edp (cycles applies to "
                             f"--network, chain and --level sweeps)")

    def check_sizes(self, sizes: Sequence[int], level: str | None) -> None:
        """ValueError for an SRAM size (bytes) below one word."""
        if any(s < self.hardware.word_bytes for s in sizes):
            raise ValueError(f"every size must hold at least one {self.hardware.word_bytes}-byte word")

    def sweep_work(self, sizes: Sequence[int], level: str | None, options: SearchOptions) -> None:
        """None: `sweep_sram` estimates its work and draws its own bar."""
        return None

    def sweep(self, sizes: Sequence[int], level: str | None, objective: str | None, options: SearchOptions,
              show_progress: bool) -> Any:
        """`sweep.sweep_sram` of the layer (a `TargetSweep` of `SweepPoint`s): every size's best schedule traced
        and timed with the "loopnest" kernel."""
        from dsasim.architect.studies.sweep import sweep_sram
        return sweep_sram(self, sizes, runner=options.kernel("loopnest"), simulate=options.simulate,
                          progress=show_progress, force=options.force, warn=options.warn, slide=options.slide,
                          objective=objective or "traffic")

    def sweep_json(self, sweep: Any) -> dict[str, Any]:
        """The JSON of a layer's `TargetSweep` (`sweep-sram LAYER --json`): the layer, its problem, the hardware
        and per SRAM size its `SweepPoint` (no wall times)."""
        return {"layer": self.spec, "problem": self.problem.to_json(), "hardware": self.hardware.name,
                "word_bytes": self.hardware.word_bytes, "evaluations": sweep.evaluations,
                "points": [p.to_json() for p in sweep.choices]}


def load_layer_target(spec: str, hardware: Accelerator) -> LayerTarget:
    """The layer named by `spec` on `hardware`; ValueError (one line) for a spec that names no layer."""
    from dsasim.architect.problems.layers import parse_layer
    return LayerTarget(spec, parse_layer(spec), hardware)
