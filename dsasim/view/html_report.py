"""The `--html PATH` reports: one self-contained page per result (`dsasim.view.html_page.HtmlPage`), drawn from the
same figures (`dsasim.view.plot`'s `X_figure`) and the same table rows as the command's text output.

* `simulate_report`: a timed schedule: the summary (cycles beside the roofline bound, DDR traffic, SRAM, TensorCore),
  stalls by cause, the engines, energy; the Gantt chart, the DDR bandwidth and SRAM occupancy timelines.
* `network_report`: a network under one SRAM size: its totals (traffic, cycles, energy), per-token figures of a
  token model's layer, the layers left out named, the per-layer table and chart; with a network simulation
  (`add_network_simulation`, from its JSON) the layers' simulated start and end cycles and its timelines.
* `sweep_report` (a layer's, chain's, attention's or level's sweep) and `network_sweep_report`: the sweep figure
  with its lower bound, the sizing answers, the table; a network sweep simulated at each size
  (`add_simulated_sizes`, from the sweep's JSON) adds a table and a figure of every size's simulated cycles beside
  its estimate, and each simulated size's one-timeline section.

No page holds a wall-clock time or a date: the same result gives the same bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Collection, Mapping, Sequence

from dsasim.util import format_bytes
from dsasim.view.html_page import HtmlPage

if TYPE_CHECKING:
    from dsasim.architect.studies.network_eval import NetworkResult, NetworkSweep
    from dsasim.architect.studies.target_sweep import TargetSweep
    from dsasim.energy.report import EnergyReport
    from dsasim.timing.result import SimResult

# a table as the text output prints it: (header, rows, the left-aligned columns)
Table = tuple[Sequence[str], Sequence[Sequence[Any]], Collection[int]]

__all__ = ["NETWORK_SIMULATION_KEYS", "Table", "add_network_simulation", "add_simulated_sizes", "network_report",
           "network_sweep_report", "simulate_report", "sweep_report"]


def _energy_facts(energy: EnergyReport | None) -> list[tuple[str, int | str | None]]:
    """The energy and area rows of a summary (none without an energy report)."""
    from dsasim.view.energy_text import format_pj

    if energy is None:
        return []
    total = energy.energy_pj
    parts = ", ".join(f"{name} {value / total:.1%}" for name, value in energy.energy_breakdown_pj.items()
                      if total and value)
    per_mac = energy.energy_per_mac_pj
    return [("energy", f"{format_pj(total)} ({parts})"),
            ("energy per MAC", None if per_mac is None else f"{per_mac:,.3f} pJ"),
            ("area", f"{energy.area_mm2:,.3f} mm2 (" + ", ".join(f"{name} {value:.3f}" for name, value in
                                                                energy.area_breakdown_mm2.items()) + ")")]


# -------------------------------------------------------------------------------------------------- simulate
def simulate_report(result: SimResult, name: str, energy: EnergyReport | None = None,
                    ways: int | None = None) -> HtmlPage:
    """The page of `dsasim simulate NAME`: summary, stalls by cause, engines, energy, and the three timelines."""
    from dsasim.view import plot

    way_note = f", {ways}-way scopes" if ways is not None else ""
    page = HtmlPage(f"{name} on {result.hardware}: {result.cycles:,} cycles",
                    f"dsasim simulate: {result.operations:,} operations traced and timed{way_note}")
    page.section("Summary")
    moved = result.loaded_bytes + result.stored_bytes
    page.facts([
        ("cycles", f"{result.cycles:,} ({result.seconds * 1e6:,.1f} us at {result.clock_hz / 1e9:g} GHz)"),
        ("roofline bound", f"{result.roofline_cycles:,} cycles (" + ", ".join(
            f"{k} {v:,}" for k, v in result.roofline_terms.items()) + f"); cycles / bound "
            f"{result.cycles_over_roofline:.3f}"),
        ("DDR traffic", f"{moved:,} B (loaded {result.loaded_bytes:,}, stored {result.stored_bytes:,})"),
        ("SRAM", f"peak {result.peak_sram_bytes:,} B occupied, {result.reserved_sram_bytes:,} B reserved (x ways) "
                 f"of {format_bytes(result.sram_bytes)}"),
        ("TensorCore", f"{result.tensorcore_utilization:.1%} busy, {result.tensorcore_mac_utilization:.1%} useful "
                       f"MACs, {result.tensorcore_padding_waste:.1%} lost to partial blocks"),
        *_energy_facts(energy)])
    if result.peak_sram_bytes > result.sram_bytes:
        page.paragraph(f"warning: buffers overlap in time beyond the SRAM capacity ({result.peak_sram_bytes:,} B > "
                       f"{result.sram_bytes:,} B)", warning=True)
    page.section("TensorCore stalls by cause")
    idle = sum(result.stall_cycles.values())
    if idle:
        stalls = sorted(result.stall_cycles.items(), key=lambda kv: (-kv[1], kv[0]))
        page.paragraph(f"The TensorCore is idle {idle:,} cycles of {result.cycles:,}; by what it waits for:")
        page.table(("cause", "cycles", "share of the run"),
                   [(cause, n, f"{n / result.cycles:.1%}") for cause, n in stalls])
    else:
        page.paragraph("The TensorCore never waits.")
    page.section("Engines")
    page.table(("engine", "busy cycles", "utilization", "operations"),
               [(e, result.engine_busy_cycles[e], f"{result.utilization(e):.1%}", result.engine_operations[e])
                for e in result.engines])
    page.figure(plot.gantt_figure(result), "Each engine's operations over time, coloured by tensor.")
    page.section("Timelines")
    page.figure(plot.bandwidth_figure(result), "DDR bytes per cycle per window, loads and stores stacked, with the "
                                               "port's ceiling" + ("; below it the power by component." if
                                                                   result.power_w is not None else "."))
    page.figure(plot.sram_figure(result), "SRAM occupancy per window, stacked by tensor, with the peak and the "
                                          "capacity.")
    page.preformatted(result.summary(), summary="the summary as printed")
    return page


# -------------------------------------------------------------------------------------------------- network
def network_report(result: NetworkResult, table: Table, notes: Sequence[str],
                   simulation: Mapping[str, Any] | None = None) -> HtmlPage:
    """The page of `dsasim network NAME`: totals, per-token figures, layers left out, the per-layer `table` and the
    chart, the `notes` (both as the command prints them: `dsasim.cli.network.network_table`, `network_notes`), and
    the network simulation's section when `simulation` (its JSON) is given."""
    from dsasim.view import plot

    page = HtmlPage(f"{result.network.name} on {result.hardware.name}, SRAM {format_bytes(result.sram_bytes)}",
                    f"dsasim network: {len(result.layers)} layers, the best schedule of each under the SRAM size")
    page.section("Totals" + (" (PARTIAL)" if result.partial else ""))
    if result.partial:
        page.paragraph(f"PARTIAL: {len(result.left_out)} of {len(result.layers)} layers are left out of these "
                       f"totals (named below).", warning=True)
    ratio = (f"{result.traffic_bytes / result.lower_bound_bytes:.3f}"
             if result.traffic_bytes and result.lower_bound_bytes else None)
    page.facts([("DDR traffic", f"{result.traffic_bytes:,} B (loaded {result.loaded_bytes:,}, stored "
                                f"{result.stored_bytes:,})"),
                ("lower bound", f"{result.lower_bound_bytes:,} B"), ("compulsory", f"{result.compulsory_bytes:,} B"),
                ("best / bound", ratio), ("cycles (estimated)", f"{result.cycles:,}"), ("MACs", result.macs),
                *_energy_facts(result.energy)])
    if result.per_token is not None:
        page.section("Per token")
        page.bullets([line.strip() for line in result.per_token.lines()])
    if result.left_out:
        page.section("Layers left out of the totals")
        reasons = {x.layer.name: (x.status, x.reason) for x in result.layers}
        page.table(("layer", "why", "reason"), [(n, *reasons[n]) for n in result.left_out], left=(0, 1, 2))
    if simulation is not None:
        add_network_simulation(page, simulation)
    page.section("Per layer")
    page.table(*table)
    page.figure(plot.network_figure(result), "Per layer: DDR traffic with its lower bound (top) and estimated "
                                             "cycles (bottom), coloured by kind of layer.")
    page.section("Notes")
    page.preformatted("\n".join(notes), summary="the totals and notes as printed")
    return page


# what a network simulation's JSON holds for its section (netsim's `to_json()`; optional keys marked '?')
NETWORK_SIMULATION_KEYS = {
    "cycles": "the simulated total, cycles",
    "window_cycles": "the width of a timeline window, cycles",
    "layers": "per layer in order: {name, start_cycle, end_cycle, estimated_cycles?}",
    "ddr_load_bytes": "DDR bytes loaded per window",
    "ddr_store_bytes": "DDR bytes stored per window",
    "sram_occupancy_bytes": "SRAM bytes occupied per window (time-averaged)",
    "dram_bytes_per_cycle?": "the DDR port's ceiling, B/cycle",
    "sram_bytes?": "the SRAM capacity, B",
    "stall_cycles?": "{cause: cycles} the TensorCore waited, over the network",
}


def _require(mapping: Mapping[str, Any], key: str, where: str) -> Any:
    """mapping[key], or a ValueError naming the key and the shape expected."""
    if key not in mapping:
        raise ValueError(f"{where} has no {key!r}; a network simulation's JSON holds: "
                         + "; ".join(f"{k} ({v})" for k, v in NETWORK_SIMULATION_KEYS.items()))
    return mapping[key]


NETWORK_SIMULATION_HEADING = "Simulated: the network in one timeline"


def add_network_simulation(page: HtmlPage, simulation: Mapping[str, Any],
                           heading: str = NETWORK_SIMULATION_HEADING) -> None:
    """A section under `heading` for a network traced and timed in one timeline, from its JSON
    (NETWORK_SIMULATION_KEYS; other keys are ignored): the simulated total beside the analytic estimates, each
    layer's start and end cycle, the layers, DDR bandwidth and SRAM occupancy timelines. ValueError naming what is
    missing."""
    from dsasim.view import plot

    cycles = int(_require(simulation, "cycles", "the network simulation"))
    window = int(_require(simulation, "window_cycles", "the network simulation"))
    if window < 1:
        raise ValueError(f"the network simulation's window_cycles must be >= 1, got {window}")
    layers = []
    for k, layer in enumerate(_require(simulation, "layers", "the network simulation")):
        where = f"layer {k} of the network simulation"
        layers.append((str(_require(layer, "name", where)), int(_require(layer, "start_cycle", where)),
                       int(_require(layer, "end_cycle", where)), layer.get("estimated_cycles")))
    analytic = [a for *_, a in layers if a is not None]
    page.section(heading)
    summed = sum(end - start for _, start, end, _ in layers)
    facts: list[tuple[str, int | str | None]] = [("simulated cycles", cycles)]
    if analytic and len(analytic) == len(layers):
        total = sum(analytic)
        facts.append(("analytic estimate (summed)", f"{total:,} cycles; simulated / estimate "
                                                    f"{cycles / total:.3f}" if total else f"{total:,} cycles"))
    facts.append(("overlap between layers", f"{max(0, summed - cycles):,} cycles (the layers' own spans summed: "
                                            f"{summed:,})"))
    stalls = simulation.get("stall_cycles") or {}
    if stalls:
        facts.append(("TensorCore stalls", ", ".join(f"{cause} {n:,}" for cause, n in
                                                     sorted(stalls.items(), key=lambda kv: (-kv[1], kv[0])))))
    on_chip = simulation.get("on_chip")  # results kept on chip (--keep-on-chip)
    if on_chip:
        kept, not_kept = on_chip["kept"], on_chip["not_kept"]
        saved = int(on_chip["saved_loaded_bytes"]) + int(on_chip["saved_stored_bytes"])
        facts.append(("results kept on chip", f"{len(kept)} of {len(kept) + len(not_kept)}, saving {saved:,} B of "
                                              f"DDR traffic; {int(on_chip['cycles_through_ddr']):,} cycles with "
                                              f"every result through DDR"))
        reasons: dict[str, int] = {}
        for n in not_kept:
            reasons[n["reason"]] = reasons.get(n["reason"], 0) + 1
        if reasons:
            facts.append(("results not kept, by reason", ", ".join(f"{k} {v}" for k, v in sorted(reasons.items()))))
    levels = simulation.get("levels") or []  # on hardware with levels below the SRAM: traced = the level search's
    if levels:
        facts.append(("levels below the SRAM (staged in / written back, traced = the level search's)",
                      "; ".join(f"{lv['level']} {lv['loaded_bytes']:,} / {lv['stored_bytes']:,} B" for lv in levels)))
    page.facts(facts)
    page.table(("layer", "start cycle", "end cycle", "simulated cycles", "analytic cycles", "simulated / analytic"),
               [(name, start, end, end - start, analytic_cycles,
                 f"{(end - start) / analytic_cycles:.3f}" if analytic_cycles else None)
                for name, start, end, analytic_cycles in layers])
    page.figure(plot.network_timeline_figure(
        [(name, start, end) for name, start, end, _ in layers], window,
        _require(simulation, "ddr_load_bytes", "the network simulation"),
        _require(simulation, "ddr_store_bytes", "the network simulation"),
        _require(simulation, "sram_occupancy_bytes", "the network simulation"),
        simulation.get("dram_bytes_per_cycle"), simulation.get("sram_bytes")),
        "The layers from their start to their end cycle; the DDR bandwidth and the SRAM occupancy over the whole "
        "network.")


# -------------------------------------------------------------------------------------------------- sweeps
def sweep_report(sweep: TargetSweep, n_sizes: int) -> HtmlPage:
    """The page of `dsasim sweep-sram LAYER|CHAIN|attention:...` (any target kind, by its `SweepView`): the figure
    with its lower bound, the sizing answers, the table (a kind whose `SweepView` has no table: its text as printed,
    whose wall time then makes the bytes differ from run to run: give the kind a table)."""
    from dsasim.view import plot
    from dsasim.view.energy_text import format_sizing
    from dsasim.view.target_text import format_target_sweep, sweep_view

    view = sweep_view(sweep)
    what = sweep.level if getattr(sweep, "level", None) else "SRAM"
    page = HtmlPage(f"{sweep.spec} on {sweep.hardware.name}: sizing {what}",
                    f"dsasim sweep-sram: {n_sizes} sizes, objective {sweep.objective}")
    fits = [c for c in sweep.choices if c is not None and getattr(c, "traffic_bytes", None) is not None]
    if fits and hasattr(fits[0], "lower_bound_bytes"):
        page.section("Summary")
        largest = fits[-1]
        page.facts([("sizes swept", n_sizes), ("sizes where a schedule fits", len(fits)),
                    (f"traffic at {format_bytes(largest.sram_bytes)}", f"{largest.traffic_bytes:,} B"),
                    ("its lower bound", f"{largest.lower_bound_bytes:,} B"),
                    ("compulsory traffic", f"{largest.compulsory_bytes:,} B")])
    if sweep.priced:
        page.section("Sizing answers")
        page.paragraph(format_sizing(sweep.sizing()))
    page.section("Traffic and cycles against size")
    caption = ("Best schedule's traffic beside the lower bound and the compulsory traffic, and its cycles, at each "
               "size." if view.figure == "sweep_figure" else
               f"Traffic into every memory level and the cycles at each size of {what}.")
    page.figure(getattr(plot, view.figure)(sweep), caption)
    page.section("Table")
    if view.table is not None:
        header, rows = view.table(sweep)
        page.table(header, rows)
    else:
        page.preformatted(format_target_sweep(sweep, n_sizes))
    return page


def network_sweep_report(sweep: NetworkSweep, table: Table, notes: Sequence[str]) -> HtmlPage:
    """The page of `dsasim sweep-sram --network NAME`: the figure (traffic, summed bounds, compulsory, cycles
    against SRAM size, per hardware), the sizing answers and `notes`, the `table` (both as the command prints them:
    `dsasim.cli.sweep.network_sweep_table`, `network_sweep_notes`)."""
    from dsasim.view import plot

    hardware = ", ".join(hw.name for hw in sweep.hardwares)
    page = HtmlPage(f"{sweep.network.name} on {hardware}: sizing SRAM",
                    f"dsasim sweep-sram --network: {len(sweep.results[0]) if sweep.results else 0} sizes, "
                    f"{len(sweep.hardwares)} hardware")
    if any(r.partial for row in sweep.results for r in row):
        page.paragraph("PARTIAL: some sizes' totals leave layers out (unmodelled or unplaceable; the 'left out' "
                       "column counts them).", warning=True)
    page.section("Sizing answers and notes")
    page.bullets(notes)
    page.section("Traffic and cycles against SRAM size")
    page.figure(plot.network_sweep_figure(sweep), "Total traffic beside the summed lower bounds and the compulsory "
                                                  "traffic, and the estimated cycles, at each size.")
    page.section("Table")
    page.table(*table)
    if sweep.simulations:  # sweep-sram --simulate-network: from the JSON --json writes, so the two cannot disagree
        add_simulated_sizes(page, sweep.to_json())
    return page


def add_simulated_sizes(page: HtmlPage, sweep_json: Mapping[str, Any]) -> None:
    """The section "Simulated at each size" of a network sweep simulated at each SRAM size, from the sweep's JSON
    (its 'points' and 'simulation'): the table `sweep-sram --simulate-network` prints
    (`dsasim.view.simulated_sizes`), the figure of simulated cycles beside the estimate against SRAM size, then
    each simulated size's one-timeline section (`add_network_simulation`, headed by its size). ValueError naming
    what is missing."""
    from dsasim.view import plot
    from dsasim.view.simulated_sizes import NOT_SIMULATED_COLUMN, simulated_sizes_table

    header, rows = simulated_sizes_table(sweep_json)
    page.section("Simulated at each size")
    page.paragraph("The whole network traced and timed in one timeline at each SRAM size: the simulated cycles "
                   "beside the analytic estimate (the layers' estimates summed), their ratio, the cycles gained by "
                   "running layers at once (overlap) and the SRAM's peak occupancy."
                   + (" A size not simulated says why." if NOT_SIMULATED_COLUMN in header else ""))
    page.table(header, rows, left=(len(header) - 1,) if NOT_SIMULATED_COLUMN in header else ())
    page.figure(plot.network_sweep_simulation_figure(str(sweep_json.get("network", "the network")),
                                                     [row[0] for row in rows], [row[1] for row in rows],
                                                     [row[2] for row in rows]),
                "At each SRAM size: the cycles simulated in one timeline beside the analytic estimate"
                + (" (a size not simulated is marked on the axis)." if NOT_SIMULATED_COLUMN in header else "."))
    for simulation in sweep_json["simulation"]:
        if "not_simulated" not in simulation:
            add_network_simulation(page, simulation, f"Simulated at {format_bytes(int(simulation['sram_bytes']))}: "
                                                     f"the network in one timeline")
