"""`dsasim sweep-sram LAYER`: best traffic and cycles of a layer across SRAM sizes.

    dsasim sweep-sram LAYER --sizes LO:HI[:POINTS] [--hardware PRESET|FILE] [--json PATH] [--plot PATH] [--html PATH]
                        [--no-simulate] [--quiet] [--force]

LAYER as for `dsasim search`; for a chain (resnet18.layer1.0, mobilenetv2.features.N, gemm-chain:m=..,n=..,k=..,l=..)
each size gets the best partition into fused segments and single layers, with all fused and layer by layer beside
it (`sweep_chain`; JSON: per size the object of `dsasim search CHAIN --json`). Work estimated far beyond the usual (tens of thousands of SRAM sizes, schedules
with millions of tiles to trace) is refused with the estimate unless --force; forced, the estimate is printed as
a warning, even with --quiet. The search and matplotlib are imported by the run, not by `dsasim --help`.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsasim.architect.search.objective import DEFAULT_OBJECTIVE
from dsasim.architect.studies.target import SearchOptions, SweptTarget
from dsasim.hardware import load_hardware
from dsasim.cli.common import (EXIT_FAILED, PLOT_SUFFIXES, CliError, Command, add_objective_argument, check_outputs,
                               html_output_path, int_at_least, json_and_plot_paths, kernel_runner, output_file,
                               parse_percent, warner, write_outputs)
from dsasim.cli.network import add_network_source
from dsasim.view.table import format_table

if TYPE_CHECKING:
    from dsasim.architect.studies.network_eval import NetworkSweep

__all__ = ["COMMAND", "format_network_sweep", "format_simulated_sizes", "network_sweep_notes", "network_sweep_table"]


def add_arguments(s: argparse.ArgumentParser) -> None:
    """The arguments of `dsasim sweep-sram`."""
    s.add_argument("layer", nargs="?", help="blog-conv, resnet50.<name>, gemm-1024, a shape spec, or a chain (as "
                   "for dsasim search: resnet18.layer1.0, mobilenetv2.features.N, gemm-chain:m=..,n=..,k=..,l=..)")
    s.add_argument("--network", metavar="NAME|MODULE:ATTR|FILE.py:ATTR",
                   help="sweep a whole network instead of LAYER (as for dsasim network): per size the best schedule "
                        "of every layer, summed")
    add_network_source(s)
    s.add_argument("--within", metavar="PERCENT",
                   help="(--network) print the smallest SRAM whose traffic is within PERCENT of compulsory, e.g. 10%%")
    s.add_argument("--executor", metavar="process|dask|dask://HOST:PORT",
                   help="(--network) where the layer searches run: a process pool (default), a local Dask cluster, "
                        "or a running Dask scheduler; the JSON is the same whichever runs it")
    s.add_argument("--jobs", type=int_at_least(1), help="(--network) worker processes (default 2; not with a running "
                   "scheduler, dask://, whose workers are its own)")
    s.add_argument("--vary", action="append", default=[], metavar="FIELD=V1,V2,...",
                   help="(--network) a hardware grid: each value of a field (repeat for a product), e.g. "
                        "dram_bytes_per_cycle=16,32,64 or dram_type=LPDDR4,HBM2")
    s.add_argument("--vary-network", metavar="PARAMETER=V1,V2,...",
                   help="(--network, a preset with parameters) one sweep per value of a parameter the preset "
                        "declares, e.g. batch=1,8,32 for llama3-8b-layer:phase=decode,context=4096; per-token "
                        "figures per size (bytes per token by weights / KV cache / activations, tokens/s)")
    # no default here: every sweep ranks by it, each defaulting to DEFAULT_OBJECTIVE
    add_objective_argument(s, None, scope="at each size, ")
    s.add_argument("--sizes", required=True, metavar="LO:HI[:POINTS]",
                   help="SRAM sizes, geometric from LO to HI, e.g. 64KiB:8MiB:20 (or a list A,B,C)")
    s.add_argument("--hardware", metavar="PRESET|FILE", default="blog",
                   help="hardware preset or TOML file (default: blog); its sram_bytes is replaced by each size; "
                        "with --network a comma-separated list gives a grid")
    s.add_argument("--level", metavar="NAME", default=None,
                   help="the memory level whose capacity --sizes sets (default SRAM); on hardware with levels below "
                        "the SRAM (e.g. blog-l1) every size gets the best nest with one tiling per level")
    s.add_argument("--json", metavar="PATH", help="write the sweep as JSON")
    s.add_argument("--plot", metavar="PATH", help="write a PNG: traffic, bound, compulsory and cycles vs SRAM")
    s.add_argument("--html", metavar="PATH", help="write one self-contained HTML page (.html): the sweep figure with "
                                                  "its lower bound, the sizing answers, the table; with "
                                                  "--simulate-network each size's simulation too")
    s.add_argument("--energy-plot", metavar="PATH",
                   help="write a PNG: energy per inference stacked by component (DDR, SRAM, inner levels, MACs, "
                        "vector, leakage) and area vs SRAM, the sizes with the least energy, least EDP and best "
                        "performance per mm2 marked")
    s.add_argument("--no-slide", action="store_true", help="leave sliding-window reuse out of the search (every "
                   "box reloaded), to see what it gains")
    s.add_argument("--no-simulate", action="store_true", help="no trace/timing simulation: estimated cycles")
    s.add_argument("--simulate-network", action="store_true",
                   help="(--network, one hardware) also trace and time the whole network in one timeline at each "
                        "size (as dsasim network --simulate): simulated cycles beside the estimate; the JSON adds "
                        "'simulation', one object per size, and the --html page a table, a figure and each size's "
                        "timeline")
    s.add_argument("--keep-on-chip", action="store_true",
                   help="(with --simulate-network) keep each result in the SRAM for the layers that read it where "
                        "it fits, at each size (as dsasim network --simulate --keep-on-chip): how many are kept, the "
                        "DDR bytes saved and the cycles through DDR beside the simulated ones")
    s.add_argument("--quiet", action="store_true", help="no progress bar (work estimates are still printed)")
    s.add_argument("--force", action="store_true", help="run work estimated far beyond the usual (hours) "
                                                          "instead of refusing it; the estimate is still printed")


# Every option of sweep-sram applies to some of its four sweeps (a network, a layer, a chain, a layer on hardware
# with levels); given to another, it is refused rather than silently ignored. flag -> (attribute, where it applies)
_OPTIONS = {"--within": ("within", "--network sweeps"), "--input-shape": ("input_shape", "--network sweeps"),
            "--vary": ("vary", "--network sweeps"), "--no-fusion": ("no_fusion", "--network sweeps"),
            "--executor": ("executor", "--network sweeps"), "--jobs": ("jobs", "--network sweeps"),
            "--verbose": ("verbose", "--network sweeps"),
            "--vary-network": ("vary_network", "--network sweeps of a preset with parameters"),
            "--simulate-network": ("simulate_network", "--network sweeps"),
            "--keep-on-chip": ("keep_on_chip", "--network sweeps with --simulate-network"),
            "--level": ("level", "a LAYER's sweep"),
            "--no-slide": ("no_slide", "a single layer's sweep (with or without --level)"),
            "--no-simulate": ("no_simulate", "a layer's or a chain's sweep (--network and --level cycles are "
                                             "estimates)")}


def _refuse(args: argparse.Namespace, flags: tuple[str, ...], sweep: str) -> None:
    """CliError for the first of `flags` given (not at its default) to a sweep it does not apply to."""
    for flag in flags:
        attr, applies = _OPTIONS[flag]
        if getattr(args, attr) not in (None, False, []):
            raise CliError(f"{flag} does not apply to {sweep}: it applies to {applies}; leave it out")


def run(args: argparse.Namespace) -> int:
    """Handle `dsasim sweep-sram`: an exit status; a mistake in the command line raises CliError (exit 2). A LAYER
    (or CHAIN) is swept by its target kind (`dsasim.architect.studies.target_kinds`): its rules for the options, its sizes,
    its sweep, a `TargetSweep`; its text and plot by its kind (`dsasim.view.target_text.format_target_sweep`)."""
    from dsasim.architect.studies.sweep import parse_sizes
    from dsasim.architect.studies.target_kinds import target_of
    from dsasim.cli.search import progress_callback
    from dsasim.architect.studies.target_sweep import TargetSweep
    from dsasim.view.target_text import format_target_sweep, sweep_view

    if args.network is not None:
        if args.layer is not None:
            raise CliError(f"give LAYER or --network, not both (got {args.layer!r} and --network {args.network})")
        return _run_network(args)
    if args.layer is None:
        raise CliError("give a LAYER (or CHAIN) to sweep, or --network NAME")
    _refuse(args, ("--within", "--input-shape", "--vary", "--no-fusion", "--executor", "--jobs", "--verbose",
                   "--vary-network", "--simulate-network", "--keep-on-chip"), "a LAYER's sweep")
    options = SearchOptions(simulate=not args.no_simulate, slide=not args.no_slide, force=args.force,
                            warn=warner("sweep-sram"), kernels=kernel_runner)
    try:
        hardware = load_hardware(args.hardware)
        target = target_of(args.layer, hardware)
        if not isinstance(target, SweptTarget):
            raise ValueError(f"{args.layer} is a {target.kind} target, which sweep-sram cannot sweep; search it at "
                             f"each size with dsasim search --sram")
        if args.level is not None:
            hardware.level(args.level)  # no such level: say which there are
        target.check_sweep(args.level, args.objective, options)
        sizes = parse_sizes(args.sizes)
        target.check_sizes(sizes, args.level)
    except ValueError as err:
        raise CliError(str(err)) from None
    json_path, plot_path = json_and_plot_paths(args)
    energy_plot_path = _energy_plot_path(args)
    html_path = _html_path(args)
    try:
        work = target.sweep_work(sizes, args.level, options)  # None: the sweep draws its own bar
        bar = (progress_callback(f"sweep {args.layer} on {hardware.name}", work, not args.quiet, 0.0)
               if work is not None else nullcontext(None))
        with bar as progress:
            result = target.sweep(sizes, args.level, args.objective, dataclasses.replace(options, progress=progress),
                                  show_progress=not args.quiet)
    except ValueError as err:
        raise CliError(str(err)) from None
    if not isinstance(result, TargetSweep):  # the one result type: a kind's programming error, not the user's
        raise TypeError(f"the {target.kind} target's sweep returned a {type(result).__name__}, not a TargetSweep")
    from dsasim.view.energy_text import format_sizing

    print(format_target_sweep(result, len(sizes)))
    if result.priced:  # a kind whose choices carry no energy has no sizing to answer
        print(format_sizing(result.sizing()))
    write_outputs(result, json_path, plot_path, sweep_view(result).plot)
    if energy_plot_path is not None:
        from dsasim.view.energy_plot import plot_energy_sweep

        plot_energy_sweep(result.energy_points(), f"{result.spec} on {result.hardware.name}: energy per inference",
                          energy_plot_path)
    if html_path is not None:
        from dsasim.view.html_report import sweep_report
        sweep_report(result, len(sizes)).write(html_path)
    return 0


def _html_path(args: argparse.Namespace) -> Path | None:
    """The checked --html path (None when not asked for): distinct from the other outputs and the inputs."""
    return html_output_path(args, [("--json", args.json), ("--plot", args.plot), ("--energy-plot", args.energy_plot)])


def _energy_plot_path(args: argparse.Namespace) -> Path | None:
    """The checked --energy-plot path (None when not asked for): distinct from --json, --plot and the inputs."""
    if args.energy_plot is None:
        return None
    check_outputs(args, [("--json", args.json), ("--plot", args.plot), ("--energy-plot", args.energy_plot)])
    return output_file("--energy-plot", args.energy_plot, PLOT_SUFFIXES)


def format_network_sweep(sweep: NetworkSweep) -> str:
    """One row per hardware and SRAM size: totals, the summed bounds and how many layers are left out of them
    (unmodelled or unplaceable); the smallest size within X % says 'partial' when its totals leave layers out."""
    return "\n".join([format_table(*network_sweep_table(sweep)), *network_sweep_notes(sweep)])


def network_sweep_table(sweep: NetworkSweep) -> tuple[tuple[str, ...], list[tuple]]:
    """The table of `format_network_sweep` as (header, rows); the HTML report shows the same rows."""
    from dsasim.architect.studies.sweep import format_bytes

    header = ("hardware", "SRAM", "traffic B", "lower bound B", "compulsory B", "traffic/compulsory", "cycles (est)",
              "energy uJ", "area mm2", "left out")
    rows = [(r.hardware.name, format_bytes(r.sram_bytes), r.traffic_bytes, r.lower_bound_bytes, r.compulsory_bytes,
             f"{r.traffic_bytes / r.compulsory_bytes:.3f}" if r.compulsory_bytes else None, r.cycles,
             None if r.energy is None else f"{r.energy.energy_pj / 1e6:,.3f}",
             None if r.energy is None else f"{r.energy.area_mm2:.3f}", len(r.left_out) or None)
            for row in sweep.results for r in row]
    return header, rows


def network_sweep_notes(sweep: NetworkSweep) -> list[str]:
    """The lines `format_network_sweep` prints under its table: per-token figures, the sizing answers, the smallest
    size within --within."""
    from dsasim.architect.studies.sweep import format_bytes
    from dsasim.view.energy_text import format_sizing

    lines: list[str] = []
    for row in sweep.results:  # a token model's layer: per size, its bytes per token and tokens/s
        for r in row:
            f = r.per_token
            if f is not None:
                t = f.tokens
                lines.append(f"{r.hardware.name} {format_bytes(r.sram_bytes)}: per token {f.traffic_bytes / t:,.1f} B "
                             f"(weights {f.weights_bytes / t:,.1f}, KV cache {f.kv_cache_bytes / t:,.1f}, "
                             f"activations {f.activation_bytes / t:,.1f}), {f.bound}-bound, "
                             f"{f.tokens_per_second:,.1f} tokens/s for this layer")
    for row in sweep.results:  # levels below the SRAM: what each moves per size, and what stays unfused
        for r in row:
            if r.level_bytes:
                lines.append(f"{r.hardware.name} {format_bytes(r.sram_bytes)}: " + ", ".join(
                    f"{level} {loaded + stored:,} B" for level, loaded, stored in r.level_bytes)
                    + " staged and written back (the hierarchy model's)")
    for row in sweep.results:
        if row and row[0].unfused_on_levels:
            lines.append(f"note: on {row[0].hardware.name} (levels below the SRAM) chains and attention groups are "
                         f"searched as their layers: " + ", ".join(row[0].unfused_on_levels))
    for hw, answers in zip(sweep.hardwares, sweep.sizing()):
        lines.append(f"{hw.name}: {format_sizing(answers)}")
    if any(r.partial for row in sweep.results for r in row):
        lines.append("left out: layers unmodelled or unplaceable at that size; those rows' totals are partial")
    if sweep.within is not None:
        for hw, best in zip(sweep.hardwares, sweep.smallest_within()):
            pct = f"{100 * sweep.within:g}%"
            partial = (f" (PARTIAL: {len(best.left_out)} layer(s) left out: {', '.join(best.left_out)})"
                       if best is not None and best.partial else "")
            lines.append(f"{hw.name}: " + (f"the smallest SRAM within {pct} of compulsory traffic is "
                                           f"{format_bytes(best.sram_bytes)} ({best.traffic_bytes:,} B, "
                                           f"{best.cycles:,} cycles){partial}" if best is not None else
                                           f"no size swept is within {pct} of compulsory traffic"))
    return lines


def _networks_work(networks: list[Any], hardwares: list[Any], n_sizes: int, fusion: bool, workers: int,
                   objective: str) -> Any:
    """The sweeps of `networks` together (`estimate_network_sweep_work` each, summed): one WorkEstimate."""
    from dsasim.architect.studies.sweep import estimate_network_sweep_work
    works = [estimate_network_sweep_work(n, hardwares, n_sizes, fusion, workers, objective) for n in networks]
    if len(works) == 1:
        return works[0]
    total = works[0]
    for w in works[1:]:
        total = total + w
    return dataclasses.replace(total, what=f"{len(works)} network sweeps: " + "; ".join(w.what for w in works))


_NETWORK_SMALLER = "fewer SRAM sizes, fewer hardware (--vary values), or more workers (--jobs)"


def _run_network(args: argparse.Namespace) -> int:
    """`dsasim sweep-sram --network`: 0, or 1 when some result is partial (a layer unplaceable at some size or
    unmodelled; a warning on stderr names them)."""
    from dsasim.architect.studies.executor import WorkersLostError, open_executor, parse_dask_address
    from dsasim.architect.studies.network_eval import (check_network_objective, sized_hardware, sweep_network,
                                                       vary_hardware)
    from dsasim.architect.search.layer_search import check_work
    from dsasim.architect.studies.sweep import estimate_network_sweep_work, parse_sizes
    from dsasim.architect.studies.network_vary import NetworkVariation, vary_network_specs
    from dsasim.cli.network import load_network_quietly, warn_partial

    _refuse(args, ("--level", "--no-slide", "--no-simulate"), "a --network sweep")
    executor_spec = args.executor or "process"
    if executor_spec.startswith("dask://") and args.jobs is not None:
        raise CliError(f"--jobs does not apply to --executor {executor_spec}: a running scheduler's workers are "
                       f"its own (start more there); leave --jobs out")
    jobs = args.jobs or 2
    try:
        if executor_spec.startswith("dask://"):
            parse_dask_address(executor_spec)  # a malformed address before the network is loaded
        hardwares = vary_hardware([load_hardware(h.strip()) for h in args.hardware.split(",")], args.vary)
        sizes = parse_sizes(args.sizes)
        if any(s < hw.word_bytes for s in sizes for hw in hardwares):
            raise ValueError("every size must hold at least one word of every hardware")
        for hw in hardwares:  # on levels: a size below a level under the SRAM makes no hierarchy
            for size in sizes:
                sized_hardware(hw, size)
        within = parse_percent(args.within, "--within") if args.within is not None else None
        json_path, plot_path = json_and_plot_paths(args)
        energy_plot_path = _energy_plot_path(args)
        html_path = _html_path(args)
        if energy_plot_path is not None and len(hardwares) > 1:
            raise ValueError(f"--energy-plot draws one hardware's energy; this sweep has {len(hardwares)} (a list "
                             f"or --vary): sweep one hardware for the plot, the JSON has every one's energy")
        if args.keep_on_chip and not args.simulate_network:
            raise ValueError("--keep-on-chip keeps results on chip in each size's simulation: add --simulate-network")
        if args.keep_on_chip:
            from dsasim.architect.studies.network_on_chip import check_keep_on_chip

            check_keep_on_chip(hardwares[0])
        if args.simulate_network and (len(hardwares) > 1 or args.vary_network is not None):
            raise ValueError("--simulate-network times one network on one hardware per size; leave out --vary, "
                             "--vary-network and the hardware list (or run one sweep per hardware)")
        specs = [args.network]
        if args.vary_network is not None:
            specs = vary_network_specs(args.network, args.vary_network)
            for flag, given in (("--plot", plot_path), ("--energy-plot", energy_plot_path), ("--html", html_path),
                                ("--input-shape", args.input_shape)):
                if given is not None:
                    raise ValueError(f"{flag} does not apply with --vary-network (one network per value: the JSON "
                                     f"has every one's sweep; plots/llm_decode_batch.py draws them); leave it out")
    except ValueError as err:
        raise CliError(str(err)) from None
    networks = [load_network_quietly(argparse.Namespace(**{**vars(args), "network": spec})) for spec in specs]
    work = None  # the sweep's estimate, checked before it starts and shown on its progress bar
    try:
        for network in networks:
            check_network_objective(network, args.objective or DEFAULT_OBJECTIVE.name, not args.no_fusion)
        if not executor_spec.startswith("dask://"):  # refused before any worker starts
            work = _networks_work(networks, hardwares, len(sizes), not args.no_fusion, jobs,
                                  args.objective or DEFAULT_OBJECTIVE.name)
            check_work(work, args.force, warner("sweep-sram"), smaller=_NETWORK_SMALLER)
        executor = open_executor(executor_spec, jobs)
    except ValueError as err:
        raise CliError(str(err)) from None
    try:
        if executor_spec.startswith("dask://"):  # its workers, counted now that it is reached
            workers = max(1, len(executor.client.nthreads()))
            try:
                work = _networks_work(networks, hardwares, len(sizes), not args.no_fusion, workers,
                                      args.objective or DEFAULT_OBJECTIVE.name)
                check_work(work, args.force, warner("sweep-sram"), smaller=_NETWORK_SMALLER)
            except ValueError as err:
                raise CliError(str(err)) from None
        sweeps = [sweep_network(network, hardwares, sizes, executor, progress=not args.quiet, within=within,
                                objective=args.objective or DEFAULT_OBJECTIVE.name, fusion=not args.no_fusion,
                                estimated_seconds=work.seconds / len(networks))
                  for network in networks]
    except WorkersLostError as err:
        print(f"dsasim sweep-sram: {err}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        executor.close()
    if args.vary_network is not None:
        print("\n\n".join(f"{s.network.name}:\n{format_network_sweep(s)}" for s in sweeps))
        write_outputs(NetworkVariation(args.vary_network, tuple(sweeps)), json_path, None, "")
        results = [r for s in sweeps for row in s.results for r in row]
        warn_partial("sweep-sram", "the sweep's totals are", results)
        return EXIT_FAILED if any(r.partial for r in results) else 0
    sweep = sweeps[0]
    print(format_network_sweep(sweep))
    if args.simulate_network:
        sweep = dataclasses.replace(sweep, simulations=tuple(_simulate_sizes(sweep, args.keep_on_chip)))
        print(format_simulated_sizes(sweep.to_json()))
    write_outputs(sweep, json_path, plot_path, "plot_network_sweep")
    if energy_plot_path is not None:
        from dsasim.view.energy_plot import plot_energy_sweep

        plot_energy_sweep(sweep.energy_points(), f"{network.name} on {hardwares[0].name}: energy per inference",
                          energy_plot_path)
    if html_path is not None:
        from dsasim.view.html_report import network_sweep_report
        network_sweep_report(sweep, (*network_sweep_table(sweep), (0, 1)), network_sweep_notes(sweep)).write(html_path)
    results = [r for row in sweep.results for r in row]
    warn_partial("sweep-sram", "the sweep's totals are", results)
    return EXIT_FAILED if any(r.partial for r in results) else 0


def _simulate_sizes(sweep: NetworkSweep, keep_on_chip: bool = False) -> list[Any]:
    """Per SRAM size of the sweep's one hardware, the network traced and timed in one timeline (`simulate_network`;
    `keep_on_chip`: with results kept on chip), or the one-line reason it is not (a layer left out or unplaceable
    at that size)."""
    from dsasim.architect.studies.network_simulation import simulate_network
    from dsasim.architect.studies.network_trace import NetworkTraceError
    from dsasim.cli.common import import_kernel
    from dsasim.timing import TimingError

    out: list[Any] = []
    for r in sweep.results[0]:
        try:
            out.append(simulate_network(r, import_kernel, keep_on_chip=keep_on_chip))
        except (NetworkTraceError, TimingError) as err:
            out.append(str(err))
    return out


def format_simulated_sizes(sweep_json: dict[str, Any]) -> str:
    """The table `sweep-sram --simulate-network` prints under the sweep's: one row per size, read from the sweep's
    JSON (`dsasim.view.simulated_sizes`, the rows its --html page shows), a size not simulated with its reason."""
    from dsasim.view.simulated_sizes import NOT_SIMULATED_COLUMN, simulated_sizes_table

    header, rows = simulated_sizes_table(sweep_json)
    left = (len(header) - 1,) if NOT_SIMULATED_COLUMN in header else ()
    table = format_table(header, rows, left=left)  # a left-aligned last column: no padding at the lines' ends
    return "\nsimulated in one timeline per size:\n" + "\n".join(line.rstrip() for line in table.split("\n"))


COMMAND = Command(
    "sweep-sram", "best traffic and cycles of a layer across SRAM sizes",
    "For each SRAM size, the best-traffic schedule of LAYER (one enumeration for all sizes), its simulated "
    "cycles, the lower bound and compulsory traffic, its energy and area, and the sizes with the least energy, the "
    "least energy x delay and the best performance per mm2; a table, JSON and a plot.",
    add_arguments, run)
