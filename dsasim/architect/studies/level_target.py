"""The layer-on-levels target: one layer on hardware with memory levels below the SRAM (e.g. blog-l1), searched by
`dsasim.architect.search.level_search.search_levels` (one tiling per level, the analytic model of every level); its choice
is the best `LevelAnalysis`, optionally re-run through the traced memory model ("levelnest" kernel)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Sequence

from dsasim.architect.search.level_search import LevelSearchResult
from dsasim.architect.search.objective import Objective
from dsasim.architect.studies.target import ConfirmRule, SearchOptions
from dsasim.energy.accesses import AccessCounts
from dsasim.energy.report import EnergyReport, energy_json
from dsasim.hardware import SRAM_LEVEL, Accelerator
from dsasim.one_level import require_one_level

__all__ = ["LEVELNEST_SCHEDULE", "LevelChoice", "LevelTarget", "load_level_target", "trace_levels"]

LEVELNEST_SCHEDULE = "levelnest"  # the "kind" of a network schedule that is a LevelNest's JSON


def trace_levels(a: Any, runner: Any, force: bool) -> str:
    """Run the best `LevelNest` through the traced memory model (`runner`, the "levelnest" kernel) and compare
    every level's bytes with the model's: a line saying they agree, or that tracing would take too long (unless
    `force`); ValueError when they differ (a bug, never a finding)."""
    from dsasim.architect.search.level_search import estimate_level_trace_work
    from dsasim.architect.search.layer_search import WORK_LIMIT_SECONDS

    work = estimate_level_trace_work(a.nest)
    if work.seconds > WORK_LIMIT_SECONDS and not force:
        return (f"skipped: {work.describe()} is beyond the usual (the limit without --force is "
                f"{WORK_LIMIT_SECONDS:.0f} s); --force traces it, --confirm 0 leaves this out")
    from dsasim.timing import simulate

    t0 = time.perf_counter()
    result = runner(a.nest, record_trace=True)
    if result.status != "ok":
        raise ValueError(f"the traced run of the best nest failed ({result.status}): {result.message}")
    got = {"SRAM": (result.loaded_bytes, result.stored_bytes, result.rmw_bytes)}
    got.update({lv["level"]: (lv["loaded_bytes"], lv["stored_bytes"], lv["rmw_bytes"]) for lv in result.levels})
    differ = [f"{lv.level}: traced {got[lv.level]}, model {(lv.loaded_bytes, lv.stored_bytes, lv.rmw_bytes)}"
              for lv in a.levels if got[lv.level] != (lv.loaded_bytes, lv.stored_bytes, lv.rmw_bytes)]
    if differ:
        raise ValueError("the traced run of the best nest differs from the per-level model (loaded, written back, "
                         "rmw bytes): " + "; ".join(differ))
    timed = simulate(result.trace, a.nest.hardware, power=False)
    return (f"the best nest re-run through the traced memory model: every level's loaded, written-back and "
            f"rmw bytes equal the model's; timed: {timed.cycles:,} cycles ({timed.cycles / a.cycles:.3f}x the "
            f"model's bound; {time.perf_counter() - t0:.1f} s)")


@dataclass(frozen=True)
class LevelChoice:
    """The best nest of a layer on levels (`result.best`, a `LevelAnalysis`), its search, its SRAM capacity and,
    when it was re-run through the traced memory model, what that found (`traced`, a line of text)."""

    spec: str
    result: LevelSearchResult
    sram_bytes: int
    traced: str | None = None

    kind = "levels"  # its text: dsasim.view.target_text.CHOICE_TEXTS["levels"]
    cycles_source = "estimate"  # the analytic model of every level (the traced run is reported beside it)

    @property
    def fits(self) -> bool:
        return self.result.best is not None

    @property
    def no_fit_reason(self) -> str:
        return (f"no schedule of {self.spec} fits every level of {self.result.hardware.name} with "
                f"{self.sram_bytes:,} B of SRAM")

    @property
    def schedule(self) -> Any:
        return None if self.result.best is None else self.result.best.nest

    def _sram(self, name: str) -> int | None:
        return None if self.result.best is None else getattr(self.result.best.level("SRAM"), name)

    @property
    def loaded_bytes(self) -> int | None:
        return self._sram("loaded_bytes")

    @property
    def stored_bytes(self) -> int | None:
        return self._sram("stored_bytes")

    @property
    def traffic_bytes(self) -> int | None:
        return self._sram("traffic_bytes")

    @property
    def peak_sram_bytes(self) -> int | None:
        return self._sram("peak_bytes")

    @property
    def macs(self) -> int | None:
        return None if self.result.best is None else self.result.best.macs

    @property
    def cycles(self) -> int | None:
        return None if self.result.best is None else round(self.result.best.cycles)

    @property
    def lower_bound_bytes(self) -> int:
        from dsasim.architect.model.lower_bounds import lower_bound
        return lower_bound(self.result.problem, self.sram_bytes, self.result.hardware.word_bytes).bytes

    @property
    def compulsory_bytes(self) -> int:
        from dsasim.architect.model.lower_bounds import lower_bound
        return lower_bound(self.result.problem, self.sram_bytes, self.result.hardware.word_bytes).compulsory_bytes

    @property
    def evaluations(self) -> int:
        return self.result.evaluations

    # -- what the network evaluation adds (`target_figures.NetworkChoice`)
    @property
    def tensorcore_cycles(self) -> int | None:
        """Cycles the TensorCore computes over the inner tiles (padding included), None when nothing fits."""
        return None if self.result.best is None else self.result.best.tensorcore_cycles

    @property
    def level_bytes(self) -> tuple[tuple[str, int, int], ...]:
        """Per level below the SRAM (hardware order): (level, bytes staged in from its parent, bytes written back
        to it), the hierarchy model's; () when nothing fits."""
        if self.result.best is None:
            return ()
        return tuple((lv.level, lv.loaded_bytes, lv.stored_bytes) for lv in self.result.best.levels
                     if lv.level != SRAM_LEVEL)

    def network_schedule(self) -> tuple[str, dict[str, Any]]:
        """('', the LevelNest's JSON with kind "levelnest"): `LevelNest.from_json(schedule, hardware)` rebuilds it
        (the kind tells a network's trace to run it with the "levelnest" kernel)."""
        assert self.result.best is not None, "network_schedule() of a choice that does not fit"
        return "", {"kind": LEVELNEST_SCHEDULE, **self.result.best.nest.to_json()}

    @property
    def access_counts(self) -> AccessCounts | None:
        """The best nest's reads and writes per tensor and level, inner levels included (None: nothing fits)."""
        return None if self.result.best is None else self.result.best.access_counts()

    @property
    def energy(self) -> EnergyReport | None:
        """The best nest's energy and the hardware's area at the capacities searched (None: nothing fits)."""
        return None if self.result.best is None else self.result.best.energy

    def to_json(self) -> dict[str, Any]:
        """The JSON object of `dsasim search LAYER --json` on levels (stable key order, no wall times)."""
        a, hardware = self.result.best, self.result.hardware
        assert a is not None, "to_json() of a choice that does not fit"
        return {"layer": self.spec, "hardware": hardware.name, "word_bytes": hardware.word_bytes,
                "objective": self.result.objective.name, "sram_bytes": self.sram_bytes, **a.to_json(),
                "evaluations": self.result.evaluations, **energy_json(a.energy, a.access_counts())}


@dataclass(frozen=True)
class LevelTarget:
    """A layer (`problem`) on `hardware` with levels below the SRAM."""

    spec: str
    problem: Any
    hardware: Accelerator

    kind = "levels"

    @property
    def progress_label(self) -> str:
        return f"search {self.spec} on {self.hardware.name}"

    @property
    def confirm_rule(self) -> ConfirmRule:
        return ConfirmRule(default=1, at_most=1, where=f"a search on {self.hardware.name} (levels below the SRAM)",
                           chosen="the best nest")

    def confirm_count(self, options: SearchOptions) -> int:
        """The level search times its best nest by the model only: simulate=False is refused (one-level only)."""
        if not options.simulate:
            require_one_level(self.hardware, "--no-simulate")
        return self.confirm_rule.count(options.confirm)

    def estimate_work(self, sram_bytes: int, options: SearchOptions) -> Any:
        from dsasim.architect.search.level_search import estimate_level_search_work
        return estimate_level_search_work(self.problem, self.hardware, sram_bytes, slide=options.slide)

    def network_choices(self, sizes: Sequence[int], objective: Objective | str) -> list[LevelChoice]:
        """Per SRAM size (bytes, in order), the level search's best nest by `objective` (one `search_levels` per
        size: its outer pool depends on the size; an outer nest that recurs across sizes has its inner search
        once, `search_levels`' inner_cache; nothing re-run through the trace). The network's own estimate has
        already been checked against the limit, so each search runs without its own refusal."""
        from dsasim.architect.search.level_search import search_levels

        cache: dict[tuple, tuple] = {}
        return [LevelChoice(self.spec, search_levels(self.problem, self.hardware, int(size), objective, force=True,
                                                     inner_cache=cache), int(size)) for size in sizes]

    def search(self, sram_bytes: int, objective: Objective | str, options: SearchOptions) -> LevelChoice:
        """`search_levels` of the layer; with confirm 1 and a "levelnest" kernel its best nest is traced."""
        from dsasim.architect.search.level_search import search_levels

        confirm = self.confirm_count(options)
        result = search_levels(self.problem, self.hardware, sram_bytes, objective, force=options.force,
                               warn=options.warn, slide=options.slide, progress=options.progress)
        runner = options.kernel("levelnest") if confirm > 0 and result.best is not None else None
        traced = trace_levels(result.best, runner, options.force) if runner is not None else None
        return LevelChoice(self.spec, result, sram_bytes, traced)


    # -- sweep-sram: one level's size swept (`level_search.sweep_levels`)
    def check_sweep(self, level: str | None, objective: str | None, options: SearchOptions) -> None:
        """simulate=False is refused (the level sweep's cycles come from the model; one-level hardware only)."""
        if not options.simulate:
            require_one_level(self.hardware, "--no-simulate")

    def check_sizes(self, sizes: Sequence[int], level: str | None) -> None:
        """ValueError for a size (bytes) of `level` (default SRAM) that makes no valid hierarchy."""
        from dsasim.architect.search.level_search import with_level_capacity
        from dsasim.architect.studies.sweep import format_bytes

        for size in sizes:
            try:
                with_level_capacity(self.hardware, level or "SRAM", size)
            except ValueError as err:
                raise ValueError(f"--level {level or 'SRAM'} at {format_bytes(size)}: {err}") from None

    def sweep_work(self, sizes: Sequence[int], level: str | None, options: SearchOptions) -> Any:
        """The sweep's work (a `search.WorkEstimate`), for the caller's bar (`options.progress`)."""
        from dsasim.architect.search.level_search import estimate_level_search_work
        return estimate_level_search_work(self.problem, self.hardware, n_searches=len(sizes), slide=options.slide)

    def sweep(self, sizes: Sequence[int], level: str | None, objective: str | None, options: SearchOptions,
              show_progress: bool) -> Any:
        """`sweep_levels` over the sizes of `level` (default SRAM): a `TargetSweep` whose choices are each size's
        best `LevelAnalysis` (None where nothing fits); progress to `options.progress`."""
        from dsasim.architect.search.level_search import sweep_levels
        from dsasim.architect.search.objective import DEFAULT_OBJECTIVE
        from dsasim.architect.studies.target_sweep import TargetSweep

        found = sweep_levels(self.problem, self.hardware, level or "SRAM", sorted(set(int(s) for s in sizes)),
                             objective or DEFAULT_OBJECTIVE.name, layer=self.spec, force=options.force,
                             warn=options.warn, slide=options.slide, progress=options.progress)
        return TargetSweep(self, tuple(found.sizes), tuple(found.best), found.evaluations, found.seconds,
                           level=found.level, objective=found.objective.name)

    def sweep_json(self, sweep: Any) -> dict[str, Any]:
        """The JSON of a level sweep (`sweep-sram LAYER --level NAME --json`): per capacity (bytes) of the level
        swept, the best nest's per-level analysis (None where nothing fits)."""
        return {"layer": self.spec, "hardware": self.hardware.name, "level": sweep.level,
                "objective": sweep.objective,
                "points": [{"capacity_bytes": size, "best": None if a is None else a.to_json(),
                            **energy_json(None if a is None else a.energy)}
                           for size, a in zip(sweep.sizes, sweep.choices)]}


def load_level_target(spec: str, hardware: Accelerator) -> LevelTarget:
    """The layer named by `spec` on `hardware` (with levels below the SRAM); ValueError for a bad spec."""
    from dsasim.architect.problems.layers import parse_layer
    return LevelTarget(spec, parse_layer(spec), hardware)
