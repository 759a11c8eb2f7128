"""`dsasim search LAYER`: the best loop nest of a layer under an SRAM capacity.

    dsasim search LAYER [--sram BYTES] [--hardware PRESET|FILE] [--objective traffic|cycles] [--json PATH]
                        [--confirm N] [--no-simulate] [--force]

LAYER is a built-in name (blog-conv, resnet50.res2a_branch2b, ..., gemm-1024) or a shape spec such as
conv:ic=64,oc=64,h=56,k=3,p=1 or gemm:m=512,n=512,k=512 (see `dsasim.architect.layers`), or a chain of layers to
fuse (resnet18.layer1.0, resnet50.res2a, resnet50.res2b, mobilenetv2.features.1 .. 17; `dsasim.architect.chain`):
then the search compares the whole chain fused, layer by layer and every split between (`ChainSearchResult.to_json`: keys
fused, partition, layer_by_layer_bytes, recomputed_macs, intermediate_peak_bytes, parts). Sizes accept 65536, 64KiB,
1.5MiB. `--json` writes the best schedule with its figures; its `loop_nest` key is loadable by
`dsasim.kernels.loopnest_kernel.load_nest`; `macs`, `padded_macs` and `tensorcore_utilization` (= macs / padded_macs,
6 decimals) give the padding waste of partial 16x24 blocks (a depthwise conv: 1/384). JSON output is
deterministic (no wall times). Work estimated far beyond
the usual (hours: 1-element tiles of a large layer to trace) is refused with the estimate unless --force;
forced, the estimate is printed as a warning. The search is imported by the run, not by `dsasim --help`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

from dsasim.architect.objective import DEFAULT_OBJECTIVE
from dsasim.atomic import write_text_atomic
from dsasim.hardware import PRESETS, load_hardware
from dsasim.cli.common import (EXIT_FAILED, CliError, Command, add_objective_argument, check_outputs, int_at_least,
                               kernel_runner, output_file, warner)
from dsasim.one_level import require_one_level

if TYPE_CHECKING:
    from dsasim.architect.search import SearchResult

__all__ = ["COMMAND", "progress_callback", "search_json"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of `dsasim search`."""
    p.add_argument("layer", help="blog-conv, resnet50.<name>, gemm-1024, a spec like conv:ic=64,oc=64,h=56,k=3,p=1, "
                                 "or a chain to fuse: resnet18.layer1.0, resnet50.res2a, resnet50.res2b, "
                                 "mobilenetv2.features.N")
    p.add_argument("--sram", metavar="BYTES", help="SRAM capacity (default: the hardware's), e.g. 1536KiB")
    p.add_argument("--hardware", metavar="PRESET|FILE", default="blog",
                   help=f"hardware preset ({', '.join(PRESETS)}) or TOML file (default: blog)")
    add_objective_argument(p, DEFAULT_OBJECTIVE.name)
    p.add_argument("--json", metavar="PATH", help="write the best schedule and its figures as JSON")
    p.add_argument("--confirm", type=int_at_least(0), default=None, metavar="N",
                   help=f"re-run the top N candidates through the trace and timing simulator (default "
                        f"{DEFAULT_CONFIRM}; 0: none); a chain, or hardware with levels below the SRAM, re-runs its "
                        f"chosen schedule: 0 or 1 (the default there)")
    p.add_argument("--no-slide", action="store_true", help="leave sliding-window reuse out of the search (every "
                   "box reloaded), to see what it gains")
    p.add_argument("--no-simulate", action="store_true", help="trace the top candidates but skip the timing "
                                                                "simulation (cycles are then estimates)")
    p.add_argument("--force", action="store_true", help="run work estimated far beyond the usual (hours) "
                                                          "instead of refusing it; the estimate is still printed")


DEFAULT_CONFIRM = 3  # a single layer's search on one-level hardware re-runs its top 3 candidates


def _confirm(args: argparse.Namespace, where: str | None = None, chosen: str = "") -> int:
    """The --confirm count: DEFAULT_CONFIRM by default for a single layer's search on one-level hardware (`where`
    None); for `where`, a search that re-runs only its `chosen` schedule(s), 1 by default and CliError for N > 1
    (it has no top N to confirm, and a count it cannot honour is refused rather than read as 1)."""
    if where is None:
        return DEFAULT_CONFIRM if args.confirm is None else args.confirm
    if args.confirm is not None and args.confirm > 1:
        raise CliError(f"--confirm {args.confirm} does not apply to {where}: {chosen} is re-run through the trace "
                       f"and timing simulator with --confirm 1 (the default there) or not at all with --confirm 0; "
                       f"give 0 or 1 (to confirm a top N, search a single layer on one-level hardware)")
    return 1 if args.confirm is None else args.confirm


def search_json(result: SearchResult, layer: str) -> dict[str, Any]:
    """The JSON object of `dsasim search --json` (stable key order, no wall times)."""
    from dsasim.architect.analytic import analyze
    from dsasim.architect.hierarchy import sram_triggers

    best = result.best
    hw = result.hardware
    return {
        "layer": layer,
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
        "cycles_source": "simulated" if best.simulated_cycles is not None else "estimate",
        "tensorcore_cycles": best.tensorcore_cycles,
        "macs": best.macs,
        "padded_macs": best.tensorcore_cycles * hw.tensorcore_in_channels * hw.tensorcore_out_channels,
        "tensorcore_utilization": round(best.tensorcore_utilization(hw), 6),
        "evaluations": result.evaluations,
        "pareto": [{"peak_sram_bytes": c.peak_sram_bytes, "traffic_bytes": c.traffic_bytes}
                   for c in result.pareto],
        "loop_nest": best.nest.to_json(),
        "triggers": [t.to_json() for t in sram_triggers(analyze(best.nest, hw))],
    }


def _size(flag: str, text: str) -> int:
    """A size option in bytes; ValueError naming the flag (too large, not a size)."""
    from dsasim.architect.sweep import parse_bytes
    try:
        return parse_bytes(text)
    except ValueError as err:
        raise ValueError(f"{flag}: {err}") from None


def _arguments(args: argparse.Namespace, parse: Any) -> tuple[Any, Any, int, Any]:
    """`parse(args.layer)`, the --hardware, the --sram size (default: the hardware's) and the --json path, checked
    before any search; a mistake raises CliError."""
    try:
        what = parse(args.layer)
        hardware = load_hardware(args.hardware)
        sram = _size("--sram", args.sram) if args.sram is not None else hardware.sram_bytes
        if sram < hardware.word_bytes:
            raise ValueError(f"--sram {sram:,} B is below one {hardware.word_bytes}-byte word of {hardware.name}")
        dataclasses.replace(hardware, sram_bytes=sram)  # the hardware's own range check, before the search
    except ValueError as err:
        raise CliError(str(err)) from None
    check_outputs(args, [("--json", args.json)])
    json_path = output_file("--json", args.json) if args.json is not None else None
    return what, hardware, sram, json_path


def run_chain(args: argparse.Namespace) -> int:
    """`dsasim search CHAIN`: the best fused / layer-by-layer partition of a chain preset."""
    from dsasim.architect.chain_catalogue import parse_chain
    from dsasim.architect.fused_search import estimate_chain_work, search_chain
    from dsasim.architect.sweep import format_bytes

    confirm = _confirm(args, "a chain's search", "each layer's and fused segment's chosen schedule")
    chain, hardware, sram, json_path = _arguments(args, parse_chain)
    simulate = confirm > 0 and not args.no_simulate
    t0 = time.perf_counter()
    try:
        hw = dataclasses.replace(hardware, sram_bytes=sram)
        with progress_callback(f"search {args.layer}", estimate_chain_work(chain, hw)) as progress:
            result = search_chain(chain, hardware, sram, args.objective,
                                  fused_runner=kernel_runner("fused") if simulate else None,
                                  loopnest_runner=kernel_runner("loopnest") if simulate else None, force=args.force,
                                  warn=warner("search"), progress=progress)
    except ValueError as err:
        raise CliError(str(err)) from None
    wall = time.perf_counter() - t0
    if result.best is None:
        print(f"dsasim search: no schedule of {args.layer} fits in {sram:,} B of SRAM", file=sys.stderr)
        return EXIT_FAILED
    header = chain.describe()
    print(header)
    for p in result.best:
        print()
        if p.fused is not None:  # a fused nest of the whole chain opens with the chain's header: printed once
            print(p.fused.format().removeprefix(header + "\n"))
        else:
            print(p.candidate.nest.format(hardware.word_bytes))
    print()
    src = "simulated" if all(p.cycles_source == "simulated" for p in result.best) else "estimated"
    best = result.totals(result.best, result.fold(result.best))
    print(f"{args.layer} on {hardware.name} with {format_bytes(sram)} SRAM ({sram:,} B), objective {args.objective}:")
    print(f"  best         {result.label(result.best)}  (a bracket is one schedule: layers in one bracket are fused)")
    print(f"  traffic      {best['traffic_bytes']:>16,} B  (loaded {best['loaded_bytes']:,}, stored "
          f"{best['stored_bytes']:,}" + (f"; the residual's input loaded again {result.fold(result.best):,}"
                                         if result.fold(result.best) else "") + ")")
    print(f"  lower bound  {result.compulsory_bytes:>16,} B  (the chain's compulsory traffic); best / bound = "
          f"{best['traffic_bytes'] / result.compulsory_bytes:.3f}")
    print(f"  cycles       {best['cycles']:>16,}    ({src})")
    rows = []
    if result.fused is not None:
        f = result.fused
        rows.append(("all fused", f.traffic_bytes, f.cycles, f.analysis.recomputed_macs,
                     f.analysis.intermediate_peak_bytes, f.peak_sram_bytes))
    else:
        from dsasim.architect.chain_kinds import chain_kind_of
        print(f"  all fused: nothing fits ({chain_kind_of(chain).no_fit_reason(chain, hardware.word_bytes)})")
    if result.layer_by_layer is not None:
        t = result.totals(result.layer_by_layer, result.fold(result.layer_by_layer))
        rows.append(("layer by layer", t["traffic_bytes"], t["cycles"], 0, 0, t["peak_sram_bytes"]))
        lbl_bound = result.layer_by_layer_bound_bytes
    print(f"  {'':16}{'traffic B':>14}{'cycles':>14}{'recomputed MACs':>17}{'intermediate B':>16}{'peak SRAM B':>13}")
    for label, traffic, cycles, recomputed, mid, peak in rows:
        print(f"  {label:16}{traffic:>14,}{cycles:>14,}{recomputed:>17,}{mid:>16,}{peak:>13,}")
    if result.layer_by_layer is not None:
        print(f"  layer by layer's own bound (the layers' bounds summed; not a bound on fusion): {lbl_bound:,} B; "
              f"layer by layer / it = {rows[-1][1] / lbl_bound:.3f}")
    if result.chimera is not None:
        from dsasim.architect.gemm_chain import analyze_gemm_chain
        c = analyze_gemm_chain(result.chimera, result.hardware)
        tiles = ", ".join(f"{d}={t}" for d, t in zip("mlkn", result.chimera.tiles))
        print(f"  Chimera's model (least DV with MU <= SRAM) picks order {result.chimera.order}, tiles {tiles}: its DV "
              f"{c.chimera_dv_bytes:,} B; the trace moves {c.traffic_bytes:,} B (~{c.estimated_cycles:,} cycles, "
              f"estimated)")
    print(f"  searched     {result.evaluations:,} candidates (fused nests and single-layer nests); {wall:.2f} s in all")
    if json_path is not None:
        write_text_atomic(json_path, json.dumps(result.to_json(args.layer), indent=2) + "\n")
    return 0


def format_levels(a: Any) -> str:
    """The per-level table of a `LevelAnalysis`: traffic into each level, its peak, time and bound."""
    from dsasim.view.table import format_table

    header = ("level", "from", "holds", "capacity B", "peak B", "loaded B", "stored B", "transfers", "cycles",
              "bound B", "best/bound")
    rows = [(lv.level, lv.parent, ",".join(lv.holds), lv.capacity_bytes, lv.peak_bytes, lv.loaded_bytes,
             lv.stored_bytes, lv.transfers, round(lv.cycles), lv.bound_bytes,
             f"{lv.traffic_bytes / lv.bound_bytes:.3f}" if lv.bound_bytes else None) for lv in a.levels]
    return format_table(header, rows)


PROGRESS_SECONDS = 5.0  # work estimated longer than this gets a progress bar carrying the estimate


@contextmanager
def progress_callback(label: str, work: Any, enabled: bool = True,
                      min_seconds: float | None = None) -> Iterator[Any]:
    """A progress callback for a search or sweep: a bar on stderr (`sweep.ProgressBar`) labelled with the work's
    estimate when `enabled` and the estimate (work.seconds) is longer than `min_seconds` (default
    PROGRESS_SECONDS), shown from the first progress on (so that a refusal before the work starts stays one line);
    a no-op otherwise."""
    from dsasim.architect.search import _duration
    from dsasim.architect.sweep import ProgressBar

    bars: list[ProgressBar] = []
    min_seconds = PROGRESS_SECONDS if min_seconds is None else min_seconds

    def update(fraction: float) -> None:
        if not enabled or work.seconds <= min_seconds:
            return
        if not bars:
            bars.append(ProgressBar(f"{label} (estimated {_duration(work.seconds)})"))
        bars[0].update(fraction)

    try:
        yield update
    finally:
        for bar in bars:
            bar.close()


@contextmanager
def _as_cli_errors(layer: str) -> Iterator[None]:
    """A search's refusals as one-line CLI errors: a ValueError's message, or a count past int64 in the model
    (refused rather than printed wrapped)."""
    try:
        yield
    except ValueError as err:
        raise CliError(str(err)) from None
    except OverflowError:
        raise CliError(f"layer {layer!r} is too large for exact counts (a byte count exceeds 2**63); try a smaller "
                       f"layer") from None


def _trace_levels(a: Any, force: bool) -> str | None:
    """Run the best `LevelNest` through the traced memory model (count-only) and compare every level's bytes
    with the model's: a line saying they agree, or that tracing would take too long (unless `force`); CliError
    when they differ (a bug, never a finding); None when no LevelNest kernel is registered."""
    from dsasim.architect.level_search import estimate_level_trace_work
    from dsasim.architect.search import WORK_LIMIT_SECONDS

    runner = kernel_runner("levelnest")
    if runner is None:
        return None
    work = estimate_level_trace_work(a.nest)
    if work.seconds > WORK_LIMIT_SECONDS and not force:
        return (f"skipped: {work.describe()} is beyond the usual (the limit without --force is "
                f"{WORK_LIMIT_SECONDS:.0f} s); --force traces it, --confirm 0 leaves this out")
    from dsasim.timing import simulate

    t0 = time.perf_counter()
    result = runner(a.nest, record_trace=True)
    if result.status != "ok":
        raise CliError(f"the traced run of the best nest failed ({result.status}): {result.message}")
    got = {"SRAM": (result.loaded_bytes, result.stored_bytes, result.rmw_bytes)}
    got.update({lv["level"]: (lv["loaded_bytes"], lv["stored_bytes"], lv["rmw_bytes"]) for lv in result.levels})
    differ = [f"{lv.level}: traced {got[lv.level]}, model {(lv.loaded_bytes, lv.stored_bytes, lv.rmw_bytes)}"
              for lv in a.levels if got[lv.level] != (lv.loaded_bytes, lv.stored_bytes, lv.rmw_bytes)]
    if differ:
        raise CliError("the traced run of the best nest differs from the per-level model (loaded, written back, "
                       "rmw bytes): " + "; ".join(differ))
    timed = simulate(result.trace, a.nest.hardware)
    return (f"the best nest re-run through the traced memory model: every level's loaded, written-back and "
            f"rmw bytes equal the model's; timed: {timed.cycles:,} cycles ({timed.cycles / a.cycles:.3f}x the "
            f"model's bound; {time.perf_counter() - t0:.1f} s)")


def run_levels(args: argparse.Namespace, problem: Any, hardware: Any, sram: int, json_path: Any) -> int:
    """`dsasim search LAYER` on hardware with levels below the SRAM: the best nest with one tiling per level,
    per-level traffic and the bottleneck (the analytic model of every level)."""
    confirm = _confirm(args, f"a search on {hardware.name} (levels below the SRAM)", "the best nest")
    from dsasim.architect.level_search import estimate_level_search_work, search_levels
    from dsasim.architect.search import tensorcore_utilization
    from dsasim.architect.sweep import format_bytes
    from dsasim.view.table import format_table

    t0 = time.perf_counter()
    with _as_cli_errors(args.layer):
        work = estimate_level_search_work(problem, hardware, sram, slide=not args.no_slide)
        with progress_callback(f"search {args.layer} on {hardware.name}", work) as progress:
            result = search_levels(problem, hardware, sram, args.objective, force=args.force, warn=warner("search"),
                                   slide=not args.no_slide, progress=progress)
    wall = time.perf_counter() - t0
    a = result.best
    if a is None:
        print(f"dsasim search: no schedule of {args.layer} fits every level of {hardware.name} with "
              f"{sram:,} B of SRAM", file=sys.stderr)
        return EXIT_FAILED
    print(a.nest.format())
    print()
    print(f"{args.layer} on {hardware.name} with {format_bytes(sram)} SRAM ({sram:,} B), objective "
          f"{args.objective}; every level by the analytic model:")
    print(format_levels(a))
    util = tensorcore_utilization(a.macs, a.tensorcore_cycles, hardware)
    print(f"  TensorCore   {a.tensorcore_cycles:>16,} cycles  (utilization {util:.2%})")
    exposed = sum(c for _, c in a.exposed_cycles)
    if exposed:
        print(f"  exposed      {round(exposed):>16,} cycles of 1-way buffers' transfers the TensorCore waits for ("
              + ", ".join(f"{name} {round(c):,}" for name, c in a.exposed_cycles if c) + ")")
    print(f"  cycles       {round(a.cycles):>16,}    (the slowest of the TensorCore's path, exposed transfers "
          f"included, and every level's transfers)")
    print(f"  bottleneck   {a.bottleneck}")
    print("  control triggers (per level: where, how often, bytes):")
    print(format_table(("level", "tensor", "loop", "action", "from/to", "count", "bytes"),
                       [(t.level, t.tensor, t.loop, t.action, t.source, t.count, t.bytes) for t in a.triggers]))
    print(f"  searched     {result.evaluations:,} nests ({result.outer_considered} outer nests given an inner "
          f"search) in {result.seconds:.2f} s ({result.evaluations_per_second:,.0f}/s); {wall:.2f} s in all")
    traced = _trace_levels(a, args.force) if confirm > 0 else None
    if traced is not None:
        print(f"  traced       {traced}")
    if json_path is not None:
        data = {"layer": args.layer, "hardware": hardware.name, "word_bytes": hardware.word_bytes,
                "objective": args.objective, "sram_bytes": sram, **a.to_json(), "evaluations": result.evaluations}
        write_text_atomic(json_path, json.dumps(data, indent=2) + "\n")
    return 0


def run(args: argparse.Namespace) -> int:
    """Handle `dsasim search`: an exit status; a mistake in the command line raises CliError (exit 2)."""
    from dsasim.architect.chain_catalogue import is_chain
    from dsasim.architect.layers import parse_layer
    from dsasim.architect.search import estimate_search_work, search
    from dsasim.architect.sweep import format_bytes

    if args.no_simulate and args.confirm == 0:
        raise CliError("--no-simulate does not apply with --confirm 0 (nothing is traced, so nothing is timed); "
                       "leave one out")
    if is_chain(args.layer):
        if args.no_slide:
            raise CliError("--no-slide does not apply to a chain's search (its fused nests keep their own line "
                           "buffers); leave it out")
        return run_chain(args)
    problem, hardware, sram, json_path = _arguments(args, parse_layer)
    if hardware.inner_levels:
        if args.no_simulate:
            try:
                require_one_level(hardware, "--no-simulate")
            except ValueError as err:
                raise CliError(str(err)) from None
        return run_levels(args, problem, hardware, sram, json_path)
    confirm = _confirm(args)
    runner = kernel_runner("loopnest") if confirm > 0 else None
    t0 = time.perf_counter()
    with _as_cli_errors(args.layer):
        work = estimate_search_work(problem, dataclasses.replace(hardware, sram_bytes=sram), slide=not args.no_slide)
        with progress_callback(f"search {args.layer}", work) as progress:
            result = search(problem, hardware, sram, args.objective, runner=runner,
                            confirm_top=max(confirm, 1), simulate=not args.no_simulate, force=args.force,
                            warn=warner("search"), slide=not args.no_slide, progress=progress)
    wall = time.perf_counter() - t0
    best = result.best
    if best is None:
        print(f"dsasim search: no schedule of {args.layer} fits in {sram:,} B of SRAM (even the smallest tiles "
              f"overflow it)", file=sys.stderr)
        return EXIT_FAILED
    word = hardware.word_bytes
    print(best.nest.format(word))
    print()
    b = result.bound
    src = "simulated" if best.simulated_cycles is not None else "estimated"
    print(f"{args.layer} on {hardware.name} with {format_bytes(sram)} SRAM ({sram:,} B), objective {args.objective}:")
    print(f"  traffic      {best.traffic_bytes:>16,} B  (loaded {best.loaded_bytes:,}, stored {best.stored_bytes:,},"
          f" rmw {best.rmw_bytes:,})")
    print(f"  lower bound  {b.bytes:>16,} B  ({b.kind}); compulsory {b.compulsory_bytes:,} B; "
          f"best / bound = {best.traffic_bytes / b.bytes:.3f}")
    print(f"  peak SRAM    {best.peak_sram_bytes:>16,} B")
    print(f"  cycles       {best.cycles:>16,}    ({src}; TensorCore {best.tensorcore_cycles:,})")
    padded = best.tensorcore_cycles * hardware.tensorcore_in_channels * hardware.tensorcore_out_channels
    lanes = f"{hardware.tensorcore_in_channels}x{hardware.tensorcore_out_channels}"
    per_group = f"; each of the {problem.groups} groups is its own pass" if getattr(problem, "groups", 1) > 1 else ""
    print(f"  TC util      {best.tensorcore_utilization(hardware):>16.2%}    (useful MACs {best.macs:,} of {padded:,} "
          f"padded on the {lanes} array{per_group})")
    if result.confirmed:
        traced = sum(1 for c in result.confirmed if c.traced)
        print(f"  confirmed    {traced} candidate(s) re-run through the trace (model equal byte for byte)"
              + (" and the timing simulator" if result.cycles_source == "simulated" else ""))
    print(f"  searched     {result.evaluations:,} candidates in {result.seconds:.2f} s "
          f"({result.evaluations_per_second:,.0f}/s); {wall:.2f} s in all")
    if json_path is not None:
        write_text_atomic(json_path, json.dumps(search_json(result, args.layer), indent=2) + "\n")
    return 0


COMMAND = Command(
    "search", "search the best loop nest of a layer under an SRAM capacity",
    "Enumerate loop orders x tile sizes x staging levels x buffering of LAYER, evaluate them with the analytic "
    "traffic model, print the best schedule as loops with its traffic beside the lower bound, and re-run the top "
    "few through the trace and the timing simulator.",
    add_arguments, run)
