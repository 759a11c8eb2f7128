"""The text `dsasim search` and `dsasim sweep-sram` print for a target (`dsasim.architect.studies.target`), per target
kind: its choice's text in `CHOICE_TEXTS` (by the choice's `kind`), its sweep's text and plot in `SWEEP_VIEWS` (by
the target's `kind`). Text is a view: the targets live in `dsasim.architect`, which does not import the table
formatter.

A new target kind adds its functions here, one entry in each table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from dsasim.view.energy_text import format_energy
from dsasim.view.table import format_table

if TYPE_CHECKING:
    from dsasim.architect.studies.chain_target import ChainChoice
    from dsasim.architect.studies.layer_target import LayerChoice
    from dsasim.architect.studies.level_target import LevelChoice
    from dsasim.architect.studies.target_sweep import TargetSweep

__all__ = ["CHOICE_TEXTS", "SWEEP_VIEWS", "SweepView", "attention_sweep_table", "chain_sweep_table",
           "level_sweep_table", "sweep_table", "format_attention_sweep", "format_chain_choice", "format_chain_sweep", "format_choice",
           "format_layer_choice", "format_level_choice", "format_level_sweep", "format_levels", "format_sweep",
           "format_target_sweep", "plot_target_sweep", "sweep_view"]


def format_layer_choice(choice: LayerChoice, wall_seconds: float) -> str:
    """The text of `dsasim search LAYER`: the nest as loops, then its figures beside the bound."""
    from dsasim.architect.studies.sweep import format_bytes

    result, best, hardware = choice.result, choice.result.best, choice.result.hardware
    assert best is not None, "format() of a choice that does not fit"
    sram, b = result.sram_bytes, result.bound
    src = "simulated" if best.simulated_cycles is not None else "estimated"
    padded = best.tensorcore_cycles * hardware.tensorcore_in_channels * hardware.tensorcore_out_channels
    lanes = f"{hardware.tensorcore_in_channels}x{hardware.tensorcore_out_channels}"
    groups = getattr(result.problem, "groups", 1)
    per_group = f"; each of the {groups} groups is its own pass" if groups > 1 else ""
    lines = [
        best.nest.format(hardware.word_bytes), "",
        f"{choice.spec} on {hardware.name} with {format_bytes(sram)} SRAM ({sram:,} B), objective "
        f"{result.objective.name}:",
        f"  traffic      {best.traffic_bytes:>16,} B  (loaded {best.loaded_bytes:,}, stored {best.stored_bytes:,},"
        f" rmw {best.rmw_bytes:,})",
        f"  lower bound  {b.bytes:>16,} B  ({b.kind}); compulsory {b.compulsory_bytes:,} B; "
        f"best / bound = {best.traffic_bytes / b.bytes:.3f}",
        f"  peak SRAM    {best.peak_sram_bytes:>16,} B",
        f"  cycles       {best.cycles:>16,}    ({src}; TensorCore {best.tensorcore_cycles:,})",
        f"  TC util      {best.tensorcore_utilization(hardware):>16.2%}    (useful MACs {best.macs:,} of "
        f"{padded:,} padded on the {lanes} array{per_group})"]
    if result.confirmed:
        traced = sum(1 for c in result.confirmed if c.traced)
        lines.append(f"  confirmed    {traced} candidate(s) re-run through the trace (model equal byte for byte)"
                     + (" and the timing simulator" if result.cycles_source == "simulated" else ""))
    if choice.energy is not None:
        lines.append(format_energy(choice.energy))
    lines.append(f"  searched     {result.evaluations:,} candidates in {result.seconds:.2f} s "
                 f"({result.evaluations_per_second:,.0f}/s); {wall_seconds:.2f} s in all")
    return "\n".join(lines)


def format_levels(a: Any) -> str:
    """The per-level table of a `LevelAnalysis`: traffic into each level, its peak, time and bound."""

    header = ("level", "from", "holds", "capacity B", "peak B", "loaded B", "stored B", "transfers", "cycles",
              "bound B", "best/bound")
    rows = [(lv.level, lv.parent, ",".join(lv.holds), lv.capacity_bytes, lv.peak_bytes, lv.loaded_bytes,
             lv.stored_bytes, lv.transfers, round(lv.cycles), lv.bound_bytes,
             f"{lv.traffic_bytes / lv.bound_bytes:.3f}" if lv.bound_bytes else None) for lv in a.levels]
    return format_table(header, rows)


def format_level_choice(choice: LevelChoice, wall_seconds: float) -> str:
    """The text of `dsasim search LAYER` on levels: the nest, the per-level table, the bottleneck, triggers."""
    from dsasim.architect.search.layer_search import tensorcore_utilization
    from dsasim.architect.studies.sweep import format_bytes

    result, a, hardware, sram = choice.result, choice.result.best, choice.result.hardware, choice.sram_bytes
    assert a is not None, "format() of a choice that does not fit"
    util = tensorcore_utilization(a.macs, a.tensorcore_cycles, hardware)
    lines = [a.nest.format(), "",
             f"{choice.spec} on {hardware.name} with {format_bytes(sram)} SRAM ({sram:,} B), objective "
             f"{result.objective.name}; every level by the analytic model:",
             format_levels(a),
             f"  TensorCore   {a.tensorcore_cycles:>16,} cycles  (utilization {util:.2%})"]
    exposed = sum(c for _, c in a.exposed_cycles)
    if exposed:
        lines.append(f"  exposed      {round(exposed):>16,} cycles of 1-way buffers' transfers the TensorCore waits "
                     f"for (" + ", ".join(f"{name} {round(c):,}" for name, c in a.exposed_cycles if c) + ")")
    lines += [f"  cycles       {round(a.cycles):>16,}    (the slowest of the TensorCore's path, exposed transfers "
              f"included, and every level's transfers)",
              f"  bottleneck   {a.bottleneck}"]
    if choice.energy is not None:
        lines.append(format_energy(choice.energy))
    lines += ["  control triggers (per level: where, how often, bytes):",
              format_table(("level", "tensor", "loop", "action", "from/to", "count", "bytes"),
                           [(t.level, t.tensor, t.loop, t.action, t.source, t.count, t.bytes)
                            for t in a.triggers]),
              f"  searched     {result.evaluations:,} nests ({result.outer_considered} outer nests given an inner "
              f"search) in {result.seconds:.2f} s ({result.evaluations_per_second:,.0f}/s); "
              f"{wall_seconds:.2f} s in all"]
    if choice.traced is not None:
        lines.append(f"  traced       {choice.traced}")
    return "\n".join(lines)


def format_chain_choice(choice: ChainChoice, wall_seconds: float) -> str:
    """The text of `dsasim search CHAIN`: every segment's nest, the best partition beside all fused and layer
    by layer (and Chimera's pick for a GEMM chain)."""
    from dsasim.architect.studies.sweep import format_bytes

    result, hardware, sram = choice.result, choice.result.hardware, choice.result.sram_bytes
    assert result.best is not None, "format() of a choice that does not fit"
    header = result.chain.describe()
    lines = [header]
    for p in result.best:
        lines.append("")
        if p.fused is not None:  # a fused nest of the whole chain opens with the chain's header: printed once
            lines.append(p.fused.format().removeprefix(header + "\n"))
        else:
            lines.append(p.candidate.nest.format(hardware.word_bytes))
    lines.append("")
    src = "simulated" if choice.cycles_source == "simulated" else "estimated"
    fold = result.fold(result.best)
    best = result.totals(result.best, fold)
    assert best is not None
    lines += [
        f"{choice.spec} on {hardware.name} with {format_bytes(sram)} SRAM ({sram:,} B), objective "
        f"{result.objective.name}:",
        f"  best         {result.label(result.best)}  (a bracket is one schedule: layers in one bracket are "
        f"fused)",
        f"  traffic      {best['traffic_bytes']:>16,} B  (loaded {best['loaded_bytes']:,}, stored "
        f"{best['stored_bytes']:,}" + (f"; the residual's input loaded again {fold:,}" if fold else "") + ")",
        f"  lower bound  {result.compulsory_bytes:>16,} B  (the chain's compulsory traffic); best / bound = "
        f"{best['traffic_bytes'] / result.compulsory_bytes:.3f}",
        f"  cycles       {best['cycles']:>16,}    ({src})"]
    rows = []
    if result.fused is not None:
        f = result.fused
        rows.append(("all fused", f.traffic_bytes, f.cycles, f.analysis.recomputed_macs,
                     f.analysis.intermediate_peak_bytes, f.peak_sram_bytes))
    else:
        from dsasim.architect.search.chain_kinds import chain_kind_of
        lines.append(f"  all fused: nothing fits "
                     f"({chain_kind_of(result.chain).no_fit_reason(result.chain, hardware.word_bytes)})")
    if result.layer_by_layer is not None:
        t = result.totals(result.layer_by_layer, result.fold(result.layer_by_layer))
        assert t is not None
        rows.append(("layer by layer", t["traffic_bytes"], t["cycles"], 0, 0, t["peak_sram_bytes"]))
    lines.append(f"  {'':16}{'traffic B':>14}{'cycles':>14}{'recomputed MACs':>17}{'intermediate B':>16}"
                 f"{'peak SRAM B':>13}")
    for label, traffic, cycles, recomputed, mid, peak in rows:
        lines.append(f"  {label:16}{traffic:>14,}{cycles:>14,}{recomputed:>17,}{mid:>16,}{peak:>13,}")
    if result.layer_by_layer is not None:
        lbl_bound = result.layer_by_layer_bound_bytes
        lines.append(f"  layer by layer's own bound (the layers' bounds summed; not a bound on fusion): "
                     f"{lbl_bound:,} B; layer by layer / it = {rows[-1][1] / lbl_bound:.3f}")
    if result.chimera is not None:
        from dsasim.architect.search.gemm_chain import analyze_gemm_chain
        c = analyze_gemm_chain(result.chimera, result.hardware)
        tiles = ", ".join(f"{d}={t}" for d, t in zip("mlkn", result.chimera.tiles))
        lines.append(f"  Chimera's model (least DV with MU <= SRAM) picks order {result.chimera.order}, tiles "
                     f"{tiles}: its DV {c.chimera_dv_bytes:,} B; the trace moves {c.traffic_bytes:,} B "
                     f"(~{c.estimated_cycles:,} cycles, estimated)")
    if choice.energy is not None:
        lines.append(format_energy(choice.energy))
    lines.append(f"  searched     {result.evaluations:,} candidates (fused nests and single-layer nests); "
                 f"{wall_seconds:.2f} s in all")
    return "\n".join(lines)


def format_attention_choice(choice: Any, wall_seconds: float) -> str:
    """The text of `dsasim search attention:...`: the problem, the best schedule, its figures beside the bound, and
    the best of every kind."""
    result, best = choice.result, choice.result.best
    assert best is not None, "format() of a choice that does not fit"
    s = best.schedule
    lines = [result.problem.describe(),
             f"  best         {s.kind}, {s.br} query rows x {s.bc} keys per tile (objective {result.objective.name}, "
             f"SRAM {result.sram_bytes:,} B)",
             f"  traffic      {best.traffic_bytes:,} B (loaded {best.loaded_bytes:,}, stored {best.stored_bytes:,}); "
             f"bound (compulsory: Q, K, V, O once) {result.lower_bound_bytes:,} B; ratio "
             f"{best.traffic_bytes / result.lower_bound_bytes:.3f}",
             f"  peak SRAM    {best.peak_sram_bytes:,} B",
             f"  MACs         {best.macs:,} (padded {best.padded_macs:,}); vector lane ops {best.vector_lane_ops:,}",
             f"  cycles       ~{best.estimated_cycles:,} (estimated: max(DMA {best.dma_cycles:,}, TensorCore "
             f"{best.tensorcore_cycles:,} + vector {best.vector_cycles:,}))",
             f"  {'kind':12}{'tiles':>12}{'traffic B':>16}{'peak SRAM B':>14}{'cycles':>16}"]
    for kind, a in result.best_by_kind.items():
        if a is None:
            lines.append(f"  {kind:12}{'nothing fits':>12}")
        else:
            tiles = f"{a.schedule.br}x{a.schedule.bc}"
            lines.append(f"  {kind:12}{tiles:>12}{a.traffic_bytes:>16,}{a.peak_sram_bytes:>14,}"
                         f"{a.estimated_cycles:>16,}")
    if choice.traced:
        lines.append("  confirmed    traced: every count equals the model's")
    timing = choice.timing
    if timing is not None:
        idle = timing.cycles - timing.tensorcore_busy_cycles
        causes = ", ".join(f"{cause} {n:,}" for cause, n in sorted(timing.stall_cycles.items(),
                                                                    key=lambda kv: (-kv[1], kv[0])))
        lines += [f"  simulated    {timing.cycles:,} cycles (TensorCore busy {timing.tensorcore_busy_cycles:,}, vector "
                  f"busy {timing.vector_busy_cycles:,}, DMA busy {timing.dma_busy_cycles:,})",
                  f"  TC stalls    {idle:,} idle cycles: waiting for the vector unit {timing.vector_stall_cycles:,} "
                  f"({100 * timing.vector_stall_cycles / timing.cycles:.1f}% of the run); by cause: {causes or 'none'}"]
    lines.append(f"  searched     {result.evaluations:,} schedules (counted by the model, equal to the trace); "
                 f"{wall_seconds:.2f} s in all")
    return "\n".join(lines)


CHOICE_TEXTS: dict[str, Callable[[Any, float], str]] = {
    "layer": format_layer_choice, "levels": format_level_choice, "chain": format_chain_choice,
    "attention": format_attention_choice}


def format_choice(choice: Any, wall_seconds: float) -> str:
    """The text of `choice` (`wall_seconds`: the whole search's wall time, printed last); KeyError naming the
    kinds for a kind without a text."""
    try:
        text = CHOICE_TEXTS[choice.kind]
    except KeyError:
        raise KeyError(f"no text for target kind {choice.kind!r} (known: {', '.join(CHOICE_TEXTS)}); add it to "
                       f"dsasim.view.target_text.CHOICE_TEXTS") from None
    return text(choice, wall_seconds)


# ------------------------------------------------------------------------------------------------ sweeps
def format_sweep(result: TargetSweep) -> str:
    """The sweep table: one row per SRAM size; '-' where nothing fits, '(est)' on estimated cycles."""
    return format_table(*sweep_table(result))


def sweep_table(result: TargetSweep) -> tuple[tuple[str, ...], list[tuple]]:
    """`format_sweep`'s table as (header, rows)."""
    from dsasim.architect.studies.sweep import format_bytes

    header = ("SRAM", "traffic B", "lower bound B", "compulsory B", "best/bound", "peak SRAM B", "cycles",
              "energy uJ", "area mm2")
    rows = [(format_bytes(p.sram_bytes), p.traffic_bytes, p.lower_bound_bytes, p.compulsory_bytes,
             None if p.traffic_bytes is None else f"{p.traffic_bytes / p.lower_bound_bytes:.3f}",
             p.peak_sram_bytes,
             None if p.cycles is None else f"{p.cycles:,}" + ("" if p.cycles_source == "simulated" else " (est)"),
             *_energy_cells(p))
            for p in result.choices]
    return header, rows


def _energy_cells(choice: Any) -> tuple[str | None, str | None]:
    """A sweep row's energy (uJ) and area (mm2) cells; None where nothing fits."""
    energy = getattr(choice, "energy", None)
    if energy is None:
        return None, None
    return f"{energy.energy_pj / 1e6:,.3f}", f"{energy.area_mm2:.3f}"


def format_chain_sweep(result: TargetSweep) -> str:
    """The chain sweep table: per SRAM size the best partition, its traffic beside all fused and layer by layer."""
    return format_table(*chain_sweep_table(result))


def chain_sweep_table(result: TargetSweep) -> tuple[tuple[str, ...], list[tuple]]:
    """`format_chain_sweep`'s table as (header, rows)."""
    from dsasim.architect.studies.sweep import format_bytes

    header = ("SRAM", "best", "traffic B", "all fused B", "layer by layer B", "compulsory B", "best/bound", "cycles",
              "energy uJ", "area mm2")
    rows = [(format_bytes(p.sram_bytes), p.partition, p.traffic_bytes, p.fused_bytes, p.layer_by_layer_bytes,
             p.compulsory_bytes, None if p.traffic_bytes is None else f"{p.traffic_bytes / p.compulsory_bytes:.3f}",
             None if p.cycles is None else f"{p.cycles:,}" + ("" if p.cycles_source == "simulated" else " (est)"),
             *_energy_cells(p))
            for p in result.choices]
    return header, rows


def _layer_sweep_text(result: TargetSweep, n_sizes: int) -> str:
    return (f"{format_sweep(result)}\n"
            f"{n_sizes} sizes, {result.evaluations:,} candidates evaluated, {result.seconds:.2f} s")


def _chain_sweep_text(result: TargetSweep, n_sizes: int) -> str:
    return (f"{format_chain_sweep(result)}\n"
            f"{n_sizes} sizes, {result.evaluations:,} candidates evaluated (fused nests and single-layer nests), "
            f"{result.seconds:.2f} s; a bracket is one schedule: layers in one bracket are fused")


def format_level_sweep(sweep: TargetSweep, n_sizes: int) -> str:
    """A level sweep's `TargetSweep` (choices: `LevelAnalysis` or None): per size of its level the traffic into
    every level, the cycles and the bottleneck."""
    return "\n".join([
        f"{sweep.spec} on {sweep.hardware.name}: traffic into each level and cycles vs the size of {sweep.level} "
        f"(objective {sweep.objective}; the analytic model of every level)",
        format_table(*level_sweep_table(sweep)),
        f"{n_sizes} sizes, {sweep.evaluations:,} nests evaluated, {sweep.seconds:.2f} s"])


def level_sweep_table(sweep: TargetSweep) -> tuple[tuple[str, ...], list[tuple]]:
    """`format_level_sweep`'s table as (header, rows)."""
    from dsasim.architect.studies.sweep import format_bytes

    names = [lv.name for lv in sweep.hardware.levels]
    header = (sweep.level, *(f"{n} B" for n in names), "cycles", "bottleneck", "energy uJ", "area mm2")
    rows = [(format_bytes(size), *((a.level(n).traffic_bytes for n in names) if a else [None] * len(names)),
             round(a.cycles) if a else None, a.bottleneck if a else "nothing fits", *_energy_cells(a))
            for size, a in zip(sweep.sizes, sweep.choices)]
    return header, rows


def format_attention_sweep(sweep: TargetSweep, n_sizes: int) -> str:
    """An attention sweep's `TargetSweep` (choices: `AttentionSweepPoint`): per SRAM size the best schedule (kind,
    query rows x keys per tile), its traffic beside the compulsory bound, peak, estimated cycles, energy, area."""
    return "\n".join([
        f"{sweep.spec} on {sweep.hardware.name}: the best schedule per SRAM size (objective {sweep.objective}; "
        f"counted by the model, equal to the trace)",
        format_table(*attention_sweep_table(sweep)),
        f"{n_sizes} sizes, {sweep.evaluations:,} schedules evaluated, {sweep.seconds:.2f} s; best: kind, query rows "
        f"x keys per tile"])


def attention_sweep_table(sweep: TargetSweep) -> tuple[tuple[str, ...], list[tuple]]:
    """`format_attention_sweep`'s table as (header, rows)."""
    from dsasim.architect.studies.sweep import format_bytes

    header = ("SRAM", "best", "traffic B", "compulsory B", "best/bound", "peak SRAM B", "cycles", "energy uJ",
              "area mm2")
    rows = [(format_bytes(p.sram_bytes), p.schedule_label or "nothing fits", p.traffic_bytes, p.compulsory_bytes,
             None if p.traffic_bytes is None else f"{p.traffic_bytes / p.compulsory_bytes:.3f}", p.peak_sram_bytes,
             None if p.cycles is None else f"{p.cycles:,} (est)", *_energy_cells(p))
            for p in sweep.choices]
    return header, rows


@dataclass(frozen=True)
class SweepView:
    """How a kind's sweep is shown: `text(result, n_sizes)` (the table and its summary; `n_sizes` as given on the
    command line), the name of its plot in `dsasim.view.plot` (`plot_X`, whose Figure is `X_figure`), and
    `table(result)`: that table as (header, rows) for the HTML report (None: the report shows the text as printed)."""

    text: Callable[[Any, int], str]
    plot: str
    table: Callable[[Any], tuple[tuple[str, ...], list[tuple]]] | None = None

    def __post_init__(self) -> None:
        if not callable(self.text) or not isinstance(self.plot, str) or not self.plot.startswith("plot_"):
            raise ValueError(f"SweepView: a text function and a plot name plot_X, got {self.text!r}, {self.plot!r}")
        if self.table is not None and not callable(self.table):
            raise ValueError(f"SweepView: a table function or None, got {self.table!r}")

    @property
    def figure(self) -> str:
        """The name in `dsasim.view.plot` of the function returning the plot's Figure unsaved."""
        return self.plot.removeprefix("plot_") + "_figure"


SWEEP_VIEWS: dict[str, SweepView] = {
    "layer": SweepView(_layer_sweep_text, "plot_sweep", sweep_table),
    "chain": SweepView(_chain_sweep_text, "plot_sweep", chain_sweep_table),
    "levels": SweepView(format_level_sweep, "plot_level_sweep", level_sweep_table),
    "attention": SweepView(format_attention_sweep, "plot_sweep", attention_sweep_table),
}


def sweep_view(sweep: TargetSweep) -> SweepView:
    """The view of `sweep`'s kind; KeyError naming the kinds for a kind without one."""
    try:
        return SWEEP_VIEWS[sweep.kind]
    except KeyError:
        raise KeyError(f"no sweep view for target kind {sweep.kind!r} (known: {', '.join(SWEEP_VIEWS)}); add it to "
                       f"dsasim.view.target_text.SWEEP_VIEWS") from None


def format_target_sweep(sweep: TargetSweep, n_sizes: int) -> str:
    """The text `dsasim sweep-sram` prints for any kind's sweep (`n_sizes`: the sizes given on the command line)."""
    return sweep_view(sweep).text(sweep, n_sizes)


def plot_target_sweep(sweep: TargetSweep, path: Any) -> Any:
    """Write any kind's sweep as a PNG at `path` (its kind's plot in `dsasim.view.plot`); the path written."""
    from dsasim.view import plot

    return getattr(plot, sweep_view(sweep).plot)(sweep, path)
