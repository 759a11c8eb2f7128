"""The chain target: consecutive layers to fuse (a conv chain such as resnet18.layer1.0, a GEMM chain
gemm-chain:m=..,n=..,k=..,l=..; `dsasim.architect.problems.chain_catalogue`), searched by
`dsasim.architect.search.fused_search.search_chain`; its choice is the best partition into fused segments and single
layers, with the whole chain fused and layer by layer beside it."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, Sequence

from dsasim.architect.search.fused_search import ChainSearchResult
from dsasim.architect.search.objective import Objective
from dsasim.architect.studies.chain_energy import chain_result_json, partition_energy
from dsasim.architect.studies.target import ConfirmRule, SearchOptions
from dsasim.energy.accesses import AccessCounts
from dsasim.energy.report import EnergyReport
from dsasim.hardware import Accelerator
from dsasim.one_level import require_one_level

__all__ = ["CHAIN_CONFIRM", "ChainChoice", "ChainTarget", "load_chain_target"]

CHAIN_CONFIRM = ConfirmRule(default=1, at_most=1, where="a chain's search",
                            chosen="each layer's and fused segment's chosen schedule")


@dataclass(frozen=True)
class ChainChoice:
    """The best partition of a chain (`result.best`, its `SegmentChoice`s) and the search that found it."""

    spec: str
    result: ChainSearchResult

    kind = "chain"  # its text: dsasim.view.target_text.CHOICE_TEXTS["chain"]

    @property
    def fits(self) -> bool:
        return self.result.best is not None

    @property
    def no_fit_reason(self) -> str:
        return f"no schedule of the chain {self.spec} fits in {self.result.sram_bytes:,} B of SRAM"

    @property
    def schedule(self) -> Any:
        return self.result.best

    def _total(self, key: str) -> int | None:
        r = self.result
        totals = r.totals(r.best, r.fold(r.best))
        return None if totals is None else totals[key]

    @property
    def loaded_bytes(self) -> int | None:
        return self._total("loaded_bytes")

    @property
    def stored_bytes(self) -> int | None:
        return self._total("stored_bytes")

    @property
    def traffic_bytes(self) -> int | None:
        return self._total("traffic_bytes")

    @property
    def peak_sram_bytes(self) -> int | None:
        return self._total("peak_sram_bytes")

    @property
    def macs(self) -> int | None:
        return self._total("macs")

    @property
    def cycles(self) -> int | None:
        return self._total("cycles")

    @property
    def cycles_source(self) -> str:
        best = self.result.best
        return "simulated" if best and all(p.cycles_source == "simulated" for p in best) else "estimate"

    @property
    def lower_bound_bytes(self) -> int:
        return self.result.compulsory_bytes  # the chain's bound is its compulsory traffic

    @property
    def compulsory_bytes(self) -> int:
        return self.result.compulsory_bytes

    @property
    def evaluations(self) -> int:
        return self.result.evaluations

    @functools.cached_property
    def _energy(self) -> tuple[AccessCounts | None, EnergyReport | None]:
        return partition_energy(self.result)

    @property
    def access_counts(self) -> AccessCounts | None:
        """The best partition's reads and writes per tensor and level (`partition_access_counts`)."""
        return self._energy[0]

    @property
    def energy(self) -> EnergyReport | None:
        """The best partition's energy and the hardware's area at this SRAM size (None: nothing fits)."""
        return self._energy[1]

    def to_json(self) -> dict[str, Any]:
        """The JSON object of `dsasim search CHAIN --json` (`chain_result_json`)."""
        return chain_result_json(self.result, self.spec)

    @property
    def tensorcore_cycles(self) -> int | None:
        """The TensorCore cycles of the chosen segments, summed (None when nothing fits)."""
        best = self.result.best
        return None if best is None else sum(p.tensorcore_cycles for p in best)

    def network_schedule(self) -> tuple[str, dict[str, Any]]:
        """(the partition, e.g. "[1] [2 3]"; {"partition", "segments": per segment as `search CHAIN --json`})."""
        partition = self.result.label(self.result.best)
        return partition, {"partition": partition, "segments": self.result.to_json("chain")["parts"]}


@dataclass(frozen=True)
class ChainTarget:
    """A chain (`chain`, a `chain_kind.Chain`: ConvChain, GemmChain) on one-level `hardware`."""

    spec: str
    chain: Any
    hardware: Accelerator

    kind = "chain"

    @property
    def progress_label(self) -> str:
        return f"search {self.spec}"

    def confirm_count(self, options: SearchOptions) -> int:
        """slide=False is refused (a chain's fused nests keep their own line buffers)."""
        if not options.slide:
            raise ValueError("--no-slide does not apply to a chain's search (its fused nests keep their own line "
                             "buffers); leave it out")
        return CHAIN_CONFIRM.count(options.confirm)

    def estimate_work(self, sram_bytes: int, options: SearchOptions) -> Any:
        from dsasim.architect.search.fused_search import estimate_chain_work
        return estimate_chain_work(self.chain, dataclasses.replace(self.hardware, sram_bytes=sram_bytes))

    def search(self, sram_bytes: int, objective: Objective | str, options: SearchOptions) -> ChainChoice:
        """`search_chain`: with confirm 1 and simulate every chosen schedule is traced and timed ("fused" and
        "loopnest" kernels)."""
        from dsasim.architect.search.fused_search import search_chain

        simulate = self.confirm_count(options) > 0 and options.simulate
        result = search_chain(self.chain, self.hardware, sram_bytes, objective,
                              fused_runner=options.kernel("fused") if simulate else None,
                              loopnest_runner=options.kernel("loopnest") if simulate else None, force=options.force,
                              warn=options.warn, progress=options.progress)
        return ChainChoice(self.spec, result)

    # -- network evaluation (`dsasim.architect.studies.target_figures`)
    def network_choices(self, sizes: Sequence[int], objective: Objective | str) -> list[ChainChoice]:
        """Per SRAM size (bytes), the best partition by `objective` (`sweep_chain`: the layers' search fronts serve
        every size; nothing re-run, no work limit)."""
        from dsasim.architect.studies.sweep import sweep_chain

        sweep = sweep_chain(self, [int(s) for s in sizes], force=True, objective=objective, layer_fronts=True)
        by_size = {point.sram_bytes: point.result for point in sweep.choices}
        return [ChainChoice(self.spec, by_size[int(cap)]) for cap in sizes]

    # -- sweep-sram: the chain across SRAM sizes (`sweep.sweep_chain`)
    def check_sweep(self, level: str | None, objective: str | None, options: SearchOptions) -> None:
        """ValueError for a --level other than the SRAM, slide=False, or hardware with levels below the SRAM."""
        if level not in (None, "SRAM"):
            raise ValueError(f"--level {level}: chains are swept over the SRAM only (hardware with levels below the "
                             f"SRAM, e.g. blog-l1, sweeps others)")
        if not options.slide:
            raise ValueError("--no-slide does not apply to a chain's sweep: it applies to a single layer's sweep "
                             "(with or without --level); leave it out")
        require_one_level(self.hardware, "chain sweep")

    def check_sizes(self, sizes: Sequence[int], level: str | None) -> None:
        """ValueError for an SRAM size (bytes) below one word."""
        if any(s < self.hardware.word_bytes for s in sizes):
            raise ValueError(f"every size must hold at least one {self.hardware.word_bytes}-byte word")

    def sweep_work(self, sizes: Sequence[int], level: str | None, options: SearchOptions) -> None:
        """None: `sweep_chain` estimates its work and draws its own bar."""
        return None

    def sweep(self, sizes: Sequence[int], level: str | None, objective: str | None, options: SearchOptions,
              show_progress: bool) -> Any:
        """`sweep.sweep_chain` (a `TargetSweep` of `ChainSweepPoint`s): with `options.simulate` every chosen
        schedule is traced and timed ("fused" and "loopnest" kernels)."""
        from dsasim.architect.search.objective import DEFAULT_OBJECTIVE
        from dsasim.architect.studies.sweep import sweep_chain

        simulate = options.simulate
        return sweep_chain(self, sizes, options.kernel("fused") if simulate else None,
                           options.kernel("loopnest") if simulate else None, simulate, progress=show_progress,
                           force=options.force, warn=options.warn, objective=objective or DEFAULT_OBJECTIVE.name)

    def sweep_json(self, sweep: Any) -> dict[str, Any]:
        """The JSON of a chain's `TargetSweep` (`sweep-sram CHAIN --json`): per size the object of `dsasim search
        CHAIN --json` at that size (no wall times)."""
        return {"chain": self.spec, "hardware": self.hardware.name, "word_bytes": self.hardware.word_bytes,
                "evaluations": sweep.evaluations, "points": [p.to_json(self.spec) for p in sweep.choices]}


def load_chain_target(spec: str, hardware: Accelerator) -> ChainTarget:
    """The chain named by `spec` on `hardware`; ValueError (one line) for a bad chain spec."""
    from dsasim.architect.problems.chain_catalogue import parse_chain
    return ChainTarget(spec, parse_chain(spec), hardware)
