"""The attention target: `attention:b=..,h=..,hkv=..,n=..,m=..,d=..[,causal=1]` on one-level hardware, searched by
`dsasim.architect.search.attention_search.search_attention`; its choice is the best schedule (kind and tiles) under
the SRAM size, with the best of every kind beside it and the compulsory traffic as the bound.

`--confirm 1` re-runs the choice through the trace and the timing simulator (`attention_timing.confirm_attention`,
the kernel found by the entry point group `dsasim.attention_runner`): the trace must equal the model, and the
choice's cycles become the simulated ones, with the TensorCore's stalls by cause (the vector unit's among them).
`sweep-sram` sweeps it over SRAM sizes (`attention_sweep`), `shapes` over the sequence length (`attention_shapes`).
In a network (`network_eval`, with fusion) an attention group is one entry: `network_choices` gives its best
schedule per SRAM size (the `NetworkTarget` protocol; `target_kinds` finds it by `of_network`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Sequence

from dsasim.architect.problems.attention import AttentionProblem
from dsasim.architect.search.attention_search import AttentionSearchResult
from dsasim.architect.search.objective import Objective
from dsasim.architect.studies.attention_timing import AttentionTiming
from dsasim.architect.studies.target import ConfirmRule, SearchOptions
from dsasim.hardware import Accelerator
from dsasim.one_level import require_one_level

__all__ = ["ATTENTION_CONFIRM", "AttentionChoice", "AttentionTarget", "load_attention_target",
           "ATTENTION_EVALUATIONS_PER_SECOND"]

# by default nothing is re-run (the model equals the trace, and a long sequence's trace takes minutes); --confirm 1
# re-runs the chosen schedule
ATTENTION_CONFIRM = ConfirmRule(default=0, at_most=1, where="attention", chosen="the chosen schedule")

ATTENTION_EVALUATIONS_PER_SECOND = 300.0  # analyze_attention, end to end, on this project's 2-core machine


@dataclass(frozen=True)
class AttentionChoice:
    """The best attention schedule (`result.best`, an `AttentionAnalysis`) and the search that found it."""

    spec: str
    result: AttentionSearchResult
    # the chosen schedule traced and timed (--confirm 1), None when not re-run or traced only (--no-simulate)
    timing: AttentionTiming | None = None
    traced: bool = False  # the chosen schedule was traced (and its counts found equal to the model's)

    kind = "attention"  # its text: dsasim.view.target_text.CHOICE_TEXTS["attention"]

    @property
    def cycles_source(self) -> str:
        return "estimate" if self.timing is None else "simulated"

    @property
    def fits(self) -> bool:
        return self.result.best is not None

    @property
    def no_fit_reason(self) -> str:
        return (f"no schedule of {self.spec} fits in {self.result.sram_bytes:,} B of SRAM (the smallest tiles hold "
                f"a TensorCore block of rows and keys); give more --sram")

    @property
    def schedule(self) -> Any:
        return None if self.result.best is None else self.result.best.schedule

    def _figure(self, name: str) -> int | None:
        return None if self.result.best is None else int(getattr(self.result.best, name))

    @property
    def loaded_bytes(self) -> int | None:
        return self._figure("loaded_bytes")

    @property
    def stored_bytes(self) -> int | None:
        return self._figure("stored_bytes")

    @property
    def traffic_bytes(self) -> int | None:
        return self._figure("traffic_bytes")

    @property
    def peak_sram_bytes(self) -> int | None:
        return self._figure("peak_sram_bytes")

    @property
    def macs(self) -> int | None:
        return self._figure("macs")

    @property
    def cycles(self) -> int | None:
        """The simulated cycles when timed, else the model's estimate."""
        return self._figure("estimated_cycles") if self.timing is None else self.timing.cycles

    @property
    def lower_bound_bytes(self) -> int:
        return self.result.lower_bound_bytes

    @property
    def compulsory_bytes(self) -> int:
        return self.result.lower_bound_bytes

    @property
    def evaluations(self) -> int:
        return self.result.evaluations

    @property
    def tensorcore_cycles(self) -> int | None:
        """Cycles the TensorCore computes (padding included), None when nothing fits."""
        return self._figure("tensorcore_cycles")

    @property
    def access_counts(self) -> Any:
        """The best schedule's reads and writes (`AccessCounts`: tensors Q, K, V, O, S, P, ...), None when nothing
        fits."""
        return None if self.result.best is None else self.result.best.access_counts

    def network_schedule(self) -> tuple[str, dict[str, Any]]:
        """(label, schedule JSON) for the network evaluation: label 'q-outer br=64 bc=128' (the kind and tiles)."""
        sch = self.result.best.schedule
        return f"{sch.kind} br={sch.br} bc={sch.bc}", sch.to_json()

    def to_json(self) -> dict[str, Any]:
        """The JSON object of `dsasim search attention:... --json` (no wall times)."""
        out = {"attention": self.spec, **self.result.to_json()}
        if self.traced:
            out["confirmation"] = {"traced": True, "trace_equals_model": True, "cycles_source": self.cycles_source,
                                   "timing": None if self.timing is None else self.timing.to_json()}
        return out


@dataclass(frozen=True)
class AttentionTarget:
    """An `AttentionProblem` on one-level `hardware`."""

    spec: str
    problem: AttentionProblem
    hardware: Accelerator

    kind = "attention"

    @property
    def progress_label(self) -> str:
        return f"search {self.spec}"

    def confirm_count(self, options: SearchOptions) -> int:
        """0 (the default) or 1: the chosen schedule re-run (`ATTENTION_CONFIRM`); --no-slide is refused, and
        --no-simulate without a confirmation (nothing is traced to time)."""
        count = ATTENTION_CONFIRM.count(options.confirm)
        if not options.simulate and count == 0:
            raise ValueError("--no-simulate does not apply to attention without --confirm 1 (nothing is traced, so "
                             "nothing is timed); leave it out")
        if not options.slide:
            raise ValueError("--no-slide does not apply to attention (its tiles do not slide); leave it out")
        return count

    def estimate_work(self, sram_bytes: int, options: SearchOptions) -> Any:
        from dsasim.architect.search.attention_search import attention_tiles
        from dsasim.architect.search.layer_search import WorkEstimate
        from dsasim.architect.nests.attention_schedule import ATTENTION_KINDS
        hw = self.hardware
        n = (len(ATTENTION_KINDS) * len(attention_tiles(self.problem.n, hw.tensorcore_in_channels))
             * len(attention_tiles(self.problem.m, hw.tensorcore_out_channels)))
        return WorkEstimate(what=f"the schedules of {self.spec}", evaluations=n, traced_operations=0,
                            seconds=n / ATTENTION_EVALUATIONS_PER_SECOND)

    def search(self, sram_bytes: int, objective: Objective | str, options: SearchOptions) -> AttentionChoice:
        """`search_attention` under `sram_bytes` by `objective`; with confirm 1 the choice is traced with the
        "attention" kernel (ValueError when none is registered) and, with `options.simulate`, timed."""
        from dsasim.architect.search.attention_search import search_attention
        from dsasim.architect.studies.attention_timing import confirm_attention

        confirm = self.confirm_count(options)
        runner = options.kernel("attention") if confirm else None
        if confirm and runner is None:
            raise ValueError("--confirm 1: no attention kernel is registered (the entry point group "
                             "dsasim.attention_runner; reinstall dsasim, e.g. pip install -e .); leave --confirm out "
                             "for the model's figures (equal to the trace)")
        sized = dataclasses.replace(self.hardware, sram_bytes=sram_bytes)
        result = search_attention(self.problem, sized, sram_bytes, objective)
        if runner is None or result.best is None:
            return AttentionChoice(self.spec, result)
        from dsasim.architect.search.layer_search import check_work
        from dsasim.architect.studies.attention_timing import estimate_confirm_work
        check_work(estimate_confirm_work(result.best), options.force, options.warn,
                   smaller="leave --confirm out (the model equals the trace), or a shorter sequence")
        timing = confirm_attention(result.best, sized, runner, options.simulate)
        return AttentionChoice(self.spec, result, timing, traced=True)

    def network_choices(self, sizes: Sequence[int], objective: Objective | str) -> list[AttentionChoice]:
        """Per SRAM size (bytes, in order), `search_attention`'s best schedule by `objective` (the model's figures,
        equal to the trace; nothing re-run)."""
        from dsasim.architect.search.attention_search import search_attention
        return [AttentionChoice(self.spec, search_attention(self.problem, self.hardware, size, objective))
                for size in sizes]

    # -- sweep-sram: the attention across SRAM sizes (`attention_sweep.sweep_attention`)
    def check_sweep(self, level: str | None, objective: str | None, options: SearchOptions) -> None:
        """ValueError for a --level other than the SRAM, an unknown objective, --no-simulate or --no-slide."""
        from dsasim.architect.search.objective import objective_named

        if level not in (None, "SRAM"):
            raise ValueError(f"--level {level}: attention is swept over the SRAM only (on one-level hardware)")
        if objective is not None:
            objective_named(objective)
        if not options.simulate:
            raise ValueError("--no-simulate does not apply to an attention sweep (its cycles are the model's "
                             "estimate, nothing is simulated); leave it out")
        if not options.slide:
            raise ValueError("--no-slide does not apply to attention (its tiles do not slide); leave it out")

    def check_sizes(self, sizes: Sequence[int], level: str | None) -> None:
        """ValueError for an SRAM size (bytes) below one word."""
        if any(s < self.hardware.word_bytes for s in sizes):
            raise ValueError(f"every size must hold at least one {self.hardware.word_bytes}-byte word")

    def sweep_work(self, sizes: Sequence[int], level: str | None, options: SearchOptions) -> Any:
        """The sizes' searches together (`estimate_work` per size), for the caller's progress bar."""
        from dsasim.architect.search.layer_search import WorkEstimate
        one = self.estimate_work(self.hardware.sram_bytes, options)
        return WorkEstimate(what=f"{one.what} at {len(sizes)} sizes", evaluations=one.evaluations * len(sizes),
                            traced_operations=0, seconds=one.seconds * len(sizes))

    def sweep(self, sizes: Sequence[int], level: str | None, objective: str | None, options: SearchOptions,
              show_progress: bool) -> Any:
        """`attention_sweep.sweep_attention` (a `TargetSweep` of `AttentionSweepPoint`s) by `objective`."""
        from dsasim.architect.search.objective import DEFAULT_OBJECTIVE
        from dsasim.architect.studies.attention_sweep import sweep_attention
        return sweep_attention(self, sizes, objective or DEFAULT_OBJECTIVE.name, options.progress)

    def sweep_json(self, sweep: Any) -> dict[str, Any]:
        """The JSON of `sweep-sram attention:... --json`: the problem, the hardware and per size its point."""
        return {"attention": self.spec, "problem": self.problem.to_json(), "hardware": self.hardware.name,
                "word_bytes": self.hardware.word_bytes, "objective": sweep.objective,
                "evaluations": sweep.evaluations, "points": [p.to_json() for p in sweep.choices]}


def load_attention_target(spec: str, hardware: Accelerator) -> AttentionTarget:
    """The attention problem `spec` names on one-level `hardware`; ValueError (one line) for a bad spec or hardware
    with levels below the SRAM."""
    from dsasim.architect.problems.attention import parse_attention
    require_one_level(hardware, "attention search")
    return AttentionTarget(spec, parse_attention(spec), hardware)
