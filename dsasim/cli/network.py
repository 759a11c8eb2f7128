"""`dsasim network NAME|MODULE:ATTR`: a whole network under one SRAM size, layer by layer.

    dsasim network NAME|MODULE:ATTR|FILE.onnx [--input-shape N,C,H,W] [--sram SIZE] [--hardware PRESET|FILE]
                   [--objective traffic|cycles|energy|edp] [--no-fusion] [--jobs N] [--json PATH] [--plot PATH]
                   [--html PATH] [--top K] [--wide] [--verbose] [--quiet]
                   [--simulate [--perfetto PATH] [--timeline-plot PATH]]

NAME is a preset (resnet18, resnet50, resnet50-caffe, mobilenetv2, bert-base-layer[:seq=N],
llama3-8b-layer[:phase=prefill|decode,seq=N,context=L,batch=B], gpt2-layer[:...]); MODULE:ATTR imports a
user's nn.Module (an instance, or a class or function called with no arguments), e.g. mypkg.models:Net, with the
example input from --input-shape (or an `example_input_shape` attribute); FILE.onnx reads an ONNX model (the onnx
package: pip install 'dsasim[onnx]'), its input's dynamic dimensions from --input-shape. Per layer: the best schedule under the
SRAM size (traffic and estimated cycles), its bound and compulsory traffic, TensorCore utilization (--wide: the
shapes and padding waste too); a run of convs that feed only each other (a chain) is one entry with its best fused
partition (--no-fusion: every layer on its own); network totals and the layers that dominate. A layer dsasim does
not model or cannot place makes the result partial: a warning on stderr names it, the totals say "partial", and
the exit status is 1. torch and the search are imported by the run; torch's own messages while reading the
network are held back (--verbose or DSASIM_VERBOSE=1 shows them). For a layer of a token model (the LLM and BERT
layer presets): bytes per token split into weights, KV cache and activations, MACs per DDR byte, the bound (DDR or
TensorCore), tokens/s at the hardware's clock, and the whole model as this layer times its layer count plus the
embedding and head (not modelled). On hardware with levels below the SRAM (blog-l1, a TOML file with inner levels)
each layer is searched on the levels (its best LevelNest): a column per inner level (bytes staged in and written
back), a total line each, chains and attention groups evaluated as their layers and named in a note
(docs/model/levels.md, "Networks on levels").
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import os
import sys
import tempfile
from typing import TYPE_CHECKING, Any, Iterator

from dsasim.architect.search.objective import DEFAULT_OBJECTIVE
from dsasim.cli.common import (EXIT_FAILED, CliError, Command, add_objective_argument, html_output_path,
                               int_at_least, json_and_plot_paths, warner, write_outputs)
from dsasim.view.energy_text import format_energy_narrow
from dsasim.view.table import format_table
from dsasim.hardware import load_hardware

if TYPE_CHECKING:
    from dsasim.architect.studies.network import Network
    from dsasim.architect.studies.network_eval import LayerOutcome, NetworkResult

__all__ = ["COMMAND", "add_network_source", "format_network", "load_network_quietly", "network_notes", "network_table",
           "short_layer_name", "short_op", "warn_partial"]

VERBOSE_ENV = "DSASIM_VERBOSE"  # set (to anything but "" or "0"): torch's own messages are shown, as --verbose


def add_network_source(p: argparse.ArgumentParser) -> None:
    """--input-shape, --no-fusion and --verbose, shared with `dsasim sweep-sram --network`."""
    p.add_argument("--input-shape", metavar="N,C,H,W",
                   help="the example input's shape (a MODULE:ATTR network needs it unless it defines "
                        "example_input_shape; an ONNX model needs it where its input has a dynamic dimension; a "
                        "preset uses its own by default)")
    p.add_argument("--no-fusion", action="store_true",
                   help="(networks) every layer on its own: no chain is fused and attention stays its unfused "
                        "layers (scores, softmax, output); epilogues still are fused")
    p.add_argument("--verbose", action="store_true",
                   help=f"(networks) show torch's own messages while reading the network (tracebacks, graph "
                        f"dumps), which are otherwise held back; or set {VERBOSE_ENV}=1")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of `dsasim network`."""
    p.add_argument("network", help="a preset (resnet18, resnet50, resnet50-caffe, mobilenetv2, "
                                   "bert-base-layer[:seq=N], llama3-8b-layer[:phase=prefill|decode,seq=N,context=L,"
                                   "batch=B], gpt2-layer[:...]) "
                                   "or MODULE:ATTR / FILE.py:ATTR (an nn.Module of yours, "
                                   "from an importable module or a file), or FILE.onnx (an ONNX model)")
    add_network_source(p)
    p.add_argument("--sram", metavar="SIZE", help="SRAM size, e.g. 512KiB (default: the hardware's)")
    p.add_argument("--hardware", metavar="PRESET|FILE", default="blog", help="hardware preset or TOML file")
    add_objective_argument(p, DEFAULT_OBJECTIVE.name, scope="per layer, ")
    p.add_argument("--jobs", type=int_at_least(1), default=2, help="worker processes for the layer searches")
    p.add_argument("--json", metavar="PATH", help="write the result as JSON")
    p.add_argument("--plot", metavar="PATH", help="write a per-layer bar chart (traffic and cycles, bound)")
    p.add_argument("--html", metavar="PATH", help="write one self-contained HTML page (.html): the totals, the "
                                                  "per-layer table and chart, the layers left out")
    p.add_argument("--top", type=int_at_least(1), default=5, help="how many dominant layers to name (default 5)")
    p.add_argument("--wide", action="store_true", help="add each layer's shape and padding waste to the table "
                                                       "(wider than 120 columns; the JSON always has them)")
    p.add_argument("--quiet", action="store_true", help="no progress bar (warnings are still printed)")
    p.add_argument("--simulate", action="store_true",
                   help="also trace every entry's chosen schedule in one session and time the whole network in one "
                        "timeline (per layer: simulated cycles beside the estimate, start-end, stall cause; totals "
                        "and overlap; --json adds a 'simulation' object)")
    p.add_argument("--perfetto", metavar="PATH",
                   help="(with --simulate) write the network's timeline as a Chrome/Perfetto trace: one track per "
                        "engine, a 'layers' track, DDR bandwidth and SRAM occupancy counters")
    p.add_argument("--timeline-plot", metavar="PATH",
                   help="(with --simulate) write the network's timeline as a figure: a bar per layer, the DDR "
                        "bandwidth and the SRAM occupancy over time (--plot stays the per-layer bar chart)")
    p.add_argument("--keep-on-chip", action="store_true",
                   help="(with --simulate) keep a layer's result in the SRAM for the layers that read it where it "
                        "fits beside their buffers (one-level hardware): simulated twice, every result through "
                        "DDR and then with results kept; says which are kept, which not and why, the bytes and "
                        "cycles saved ('on_chip' in the JSON)")


@contextlib.contextmanager
def _held_back(verbose: bool) -> Iterator[None]:
    """Everything written to stdout and stderr inside the block (torch's logged tracebacks and graph dumps go to
    the file descriptors, warnings to sys.stderr) is kept in a temporary file; with `verbose` it is written to
    stderr when the block ends (before dsasim's own line), else dropped."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    text = io.StringIO()
    try:
        with tempfile.TemporaryFile() as held:
            try:
                for fd in saved:
                    os.dup2(held.fileno(), fd)
                with contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
                    yield
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                for fd, copy in saved.items():
                    os.dup2(copy, fd)
                if verbose:
                    held.seek(0)
                    sys.stderr.write(held.read().decode("utf-8", "replace") + text.getvalue())
                    sys.stderr.flush()
    finally:
        for copy in saved.values():
            os.close(copy)


def verbose_wanted(args: argparse.Namespace) -> bool:
    """--verbose, or DSASIM_VERBOSE set to anything but '' or '0'."""
    return bool(getattr(args, "verbose", False)) or os.environ.get(VERBOSE_ENV, "") not in ("", "0")


def load_network_quietly(args: argparse.Namespace) -> Network:
    """The network of `args.network` and `args.input_shape`, torch's own messages held back (shown with
    --verbose); CliError (one line) for anything wrong with it, whatever the user's module raised."""
    from dsasim.architect.studies.network import NetworkImportError, load_network, parse_input_shape

    verbose = verbose_wanted(args)
    try:
        shape = parse_input_shape(args.input_shape) if args.input_shape else None
        with _held_back(verbose):
            return load_network(args.network, shape)
    except (ValueError, NetworkImportError) as err:
        hint = "" if verbose else " (--verbose shows torch's own messages)"
        raise CliError(f"{err}{hint if 'cannot trace' in str(err) else ''}") from None


def warn_partial(command: str, what: str, results: list[NetworkResult]) -> None:
    """One warning line on stderr (even with --quiet) naming the layers left out of `results`' totals."""
    names: dict[str, str] = {}
    for result in results:
        for x in result.layers:
            if x.status != "ok":
                names.setdefault(x.layer.name, x.status)
    if names:
        listed = "; ".join(f"{name} ({status})" for name, status in names.items())
        warner(command)(f"{what} partial: {len(names)} layer(s) left out of the totals: {listed}")


LONG_TRACE_SECONDS = 60.0  # a network simulation estimated longer than this says so before it starts
NAME_CELL_CHARS, OP_CELL_CHARS = 34, 20  # the table's name and op cells: with the numbers, 120 columns at most
STALL_CELL_CHARS = 24  # the simulation table's stall cell (a load's cause names its tensor: the JSON has it whole)
LEVEL_CELL_CHARS = 6  # what each level column below the SRAM takes from the name cell (half that from the op's)


def _cut(text: str, chars: int) -> str:
    """`text` cut in the middle to at most `chars` characters ('...' marks the cut): its start and end stay."""
    if len(text) <= chars:
        return text
    tail = (chars - 3) // 2
    return text[:chars - 3 - tail] + "..." + text[len(text) - tail:]


def short_op(x: LayerOutcome) -> str:
    """The op as the table shows it: 'conv2d', 'chain [1 2] [3]', an unmodelled module's class name."""
    return x.layer.op.removeprefix("module ")  # an unmodelled module's op is "module NAME"


def short_layer_name(name: str) -> str:
    """A chain's name without its members' common prefix after the first: 'a.b.conv1+a.b.conv2' ->
    'a.b.conv1+conv2' (the JSON keeps the full name)."""
    members = name.split("+")
    if len(members) < 2:
        return name
    parts = [m.split(".") for m in members]
    common = 0
    while all(len(p) > common + 1 and p[common] == parts[0][common] for p in parts):
        common += 1
    return "+".join([members[0]] + [".".join(p[common:]) for p in parts[1:]])


def format_network(result: NetworkResult, top: int = 5, wide: bool = False) -> str:
    """The per-layer table, the totals and the dominant layers, within 120 columns (long names and ops cut in the
    middle; a layer left out reads 'unmodelled' or 'unplaceable' in its traffic cell); `wide`: full names, each
    layer's shape, status and padding waste. The totals say 'PARTIAL' and name the layers left out when any is."""
    header, rows, left = network_table(result, wide)
    return "\n".join([format_table(header, rows, left=left), "", *network_notes(result, top, wide)])


def network_table(result: NetworkResult, wide: bool = False) -> tuple[list[str], list[list[int | str | None]],
                                                                       tuple[int, ...]]:
    """The per-layer table of `format_network` as (header, rows, left-aligned columns); the HTML report shows the
    same rows."""
    inner = [lv.name for lv in result.hardware.inner_levels]  # on levels: a column per level below the SRAM
    header = ["layer", "op", "traffic B", "bound B", "compulsory B", "cycles (est)", "TC util", "energy uJ"]
    header[3:3] = [f"{name} B" for name in inner]
    if wide:
        header[2:2] = ["shape", "status"]
        header.append("padding waste")
    rows = []
    for x in result.layers:
        ok = x.status == "ok"
        name, op = short_layer_name(x.layer.name), short_op(x)
        moved = {level: loaded + stored for level, loaded, stored in x.level_bytes}
        row: list[int | str | None] = [name, op, x.traffic_bytes if ok else x.status,
                                       *[moved.get(level, 0) if ok else None for level in inner],
                                       x.lower_bound_bytes if ok else None, x.compulsory_bytes if ok else None,
                                       x.cycles if ok else None, _pct(x.tensorcore_utilization),
                                       None if x.energy is None else f"{x.energy.energy_pj / 1e6:,.3f}"]
        if wide:
            row[2:2] = [x.layer.shape, x.status]
            row.append(None if x.tensorcore_utilization is None else _pct(1 - x.tensorcore_utilization))
        else:
            # on levels the numbers take more columns: the names give way to keep the table within 120
            row[:2] = [_cut(name, NAME_CELL_CHARS - LEVEL_CELL_CHARS * len(inner)),
                       _cut(op, OP_CELL_CHARS - (LEVEL_CELL_CHARS // 2) * len(inner))]
        rows.append(row)
    return header, rows, (0, 1, 2, 3) if wide else (0, 1)


def network_notes(result: NetworkResult, top: int = 5, wide: bool = False) -> list[str]:
    """The lines `format_network` prints under its table: the totals, energy, per-token figures, attention, the
    dominant layers and the layers left out."""
    from dsasim.architect.studies.sweep import format_bytes

    lines: list[str] = []
    counted = (f"PARTIAL totals ({len(result.layers) - len(result.left_out)} of {len(result.layers)} layers "
               f"counted)" if result.partial else f"totals ({len(result.layers)} layers)")
    lines.append(f"{result.network.name} on {result.hardware.name}, SRAM {format_bytes(result.sram_bytes)}, "
                 f"{counted}:")
    lines.append(f"  traffic {result.traffic_bytes:,} B (loaded {result.loaded_bytes:,}, stored "
                 f"{result.stored_bytes:,}), lower bound {result.lower_bound_bytes:,} B, compulsory "
                 f"{result.compulsory_bytes:,} B")
    for level, loaded, stored in result.level_bytes:  # levels below the SRAM: what each moves, from the model
        lines.append(f"  {level}: {loaded + stored:,} B staged and written back (staged in {loaded:,}, written "
                     f"back {stored:,}; the hierarchy model's)")
    lines.append(f"  {result.cycles:,} cycles (estimated), {result.macs:,} MACs")
    if result.traffic_bytes and result.lower_bound_bytes:
        lines.append(f"  best / bound {result.traffic_bytes / result.lower_bound_bytes:.3f}"
                     + (" (of the layers counted)" if result.partial else ""))
    if result.energy is not None:
        lines.append(format_energy_narrow(result.energy))
    unpriced = [x.layer.name for x in result.layers if x.status == "ok" and x.energy is None]
    if unpriced:  # placed, but its schedule's model counts no accesses: out of the energy total, never zero
        lines.append(f"  energy leaves out {len(unpriced)} placed layer(s) whose model counts no accesses: "
                     + ", ".join(unpriced))
    if result.hardware.inner_levels:
        lines.extend(levels_notes(result))
    if result.per_token is not None:  # a token model's layer: per token, the bound, tokens/s, the whole model
        lines.extend(result.per_token.lines())
    entries = {x.layer.name: x for x in result.layers}
    for group in result.network.attentions:
        members = [result.network.layers[i].name for i in group.members]
        fused = entries.get("+".join(members))  # the group as one entry (fusion on and the search takes it)
        if fused is not None and fused.schedule is not None:
            sch = fused.schedule
            lines.append(f"  attention {group.spec()}: best {sch['kind']} br={sch['br']} bc={sch['bc']}, "
                         f"{fused.traffic_bytes:,} B (bound {fused.lower_bound_bytes:,} B), {fused.cycles:,} cycles")
        elif fused is not None:
            lines.append(f"  attention {group.spec()}: no schedule fits ({fused.reason})")
        else:
            names = ", ".join(short_layer_name(name) for name in members)
            lines.append(f"  attention {group.spec()} (unfused: {names})")
    lines.append("dominant layers (share of cycles, of traffic):")
    lines.extend(f"  {_cut(short_layer_name(x.layer.name), 10**6 if wide else 3 * NAME_CELL_CHARS)} "
                 f"{100 * c:.1f}%, {100 * t:.1f}%" for x, c, t in result.dominant(top))
    for label, names in (("unmodelled", result.unmodelled), ("unplaceable", result.unplaceable)):
        if names:
            reasons = {x.layer.name: x.reason for x in result.layers}
            lines.append(f"{len(names)} {label}, left out of the totals:")
            lines.extend(f"  {n}: {reasons[n]}" for n in names)
    return lines


def levels_notes(result: NetworkResult) -> list[str]:
    """On hardware with levels below the SRAM: what the levels model leaves as it was (the chains and attention
    groups evaluated as their member layers; what the energy prices at the SRAM only)."""
    lines = []
    if result.unfused_on_levels:  # the fused models know one on-chip level
        lines.append(f"  note: on {result.hardware.name} (levels below the SRAM) chains and attention groups are "
                     f"searched as their layers: " + ", ".join(short_layer_name(n) for n in result.unfused_on_levels))
    lines.append("  note: energy prices each level below the SRAM for the TensorCore operands it holds; vector layers,")
    lines.append("        epilogues, biases and residuals pass through the SRAM only")
    return lines


def _pct(value: float | None) -> str | None:
    return None if value is None else f"{100 * value:.0f}%"


def run(args: argparse.Namespace) -> int:
    """Handle `dsasim network`: 0, or 1 when the result is partial (a layer unmodelled or unplaceable: the rest
    is reported, the layers left out are named on stderr)."""
    from dsasim.architect.studies.executor import open_executor
    from dsasim.architect.studies.network_eval import check_network_objective, evaluate_network, sized_hardware
    from dsasim.architect.studies.sweep import parse_bytes

    try:
        hardware = load_hardware(args.hardware)
        sram = parse_bytes(args.sram) if args.sram is not None else hardware.sram_bytes
        if sram < hardware.word_bytes:
            raise ValueError(f"--sram {args.sram}: must hold at least one {hardware.word_bytes}-byte word")
        sized_hardware(hardware, sram)  # a level below the SRAM larger than it: refused before the network loads
        if args.keep_on_chip:
            from dsasim.architect.studies.network_on_chip import check_keep_on_chip

            check_keep_on_chip(hardware)
        json_path, plot_path = json_and_plot_paths(args)
        perfetto_path = _perfetto_path(args, json_path, plot_path)
        html_path = html_output_path(args, [("--json", args.json), ("--plot", args.plot), ("--perfetto", args.perfetto),
                                            ("--timeline-plot", args.timeline_plot)])
    except ValueError as err:
        raise CliError(str(err)) from None
    network = load_network_quietly(args)
    try:
        check_network_objective(network, args.objective, not args.no_fusion)
    except ValueError as err:
        raise CliError(str(err)) from None
    executor = open_executor("process", args.jobs)
    try:
        result = evaluate_network(network, [hardware], [sram], executor, progress=not args.quiet,
                                  objective=args.objective, fusion=not args.no_fusion)[0][0]
    finally:
        executor.close()
    print(format_network(result, args.top, args.wide))
    if not args.simulate:
        write_outputs(result, json_path, plot_path, "plot_network")
        _write_html(html_path, result, args.top, None)
        warn_partial("network", "the result is", [result])
        return EXIT_FAILED if result.partial else 0
    from dsasim.architect.studies.network_simulation import simulate_network
    from dsasim.architect.studies.network_trace import NetworkTraceError
    from dsasim.cli.common import import_kernel
    from dsasim.timing import TimingError

    from dsasim.architect.studies.network_trace import level_trace_seconds

    seconds = level_trace_seconds(result) if result.hardware.inner_levels and not result.partial else 0.0
    if seconds > LONG_TRACE_SECONDS:  # the levels are traced a TensorCore step at a time: say so before minutes pass
        print(f"dsasim network: warning: tracing {result.network.name}'s layers on the levels below the SRAM of "
              f"{result.hardware.name} takes about {seconds / 60:.0f} min (their TensorCore steps, one at a time; "
              f"Ctrl-C stops it)", file=sys.stderr, flush=True)
    try:
        simulation = simulate_network(result, import_kernel, keep_on_chip=args.keep_on_chip)
    except (NetworkTraceError, TimingError) as err:
        warn_partial("network", "the result is", [result])
        print(f"dsasim network: {err}", file=sys.stderr)
        return EXIT_FAILED
    print()
    print(format_simulation(simulation, args.wide))
    result = dataclasses.replace(result, simulation=simulation)
    write_outputs(result, json_path, plot_path, "plot_network")
    _write_html(html_path, result, args.top, simulation.to_json())
    if perfetto_path is not None:
        from dsasim.view.perfetto import write_perfetto

        print(f"wrote {write_perfetto(simulation.sim, perfetto_path, network.name, layers=simulation.layer_slices())}")
    if args.timeline_plot is not None:
        from dsasim.view.plot import plot_network_timeline

        print(f"wrote {plot_network_timeline(simulation, args.timeline_plot)}")
    return 0


def _write_html(html_path: Any, result: NetworkResult, top: int, simulation: dict[str, Any] | None) -> None:
    """The --html page (where asked): the result as printed (wide), and the simulation's section when given."""
    if html_path is None:
        return
    from dsasim.view.html_report import network_report

    network_report(result, network_table(result, wide=True), network_notes(result, top, wide=True),
                   simulation).write(html_path)


def _perfetto_path(args: argparse.Namespace, json_path: Any, plot_path: Any) -> Any:
    """The checked --perfetto path (None where not given); CliError without --simulate or where it names another
    output."""
    if args.keep_on_chip and not args.simulate:
        raise CliError("--keep-on-chip needs --simulate (results are kept on chip in the network's simulation); "
                       "add --simulate")
    for flag, given in (("--perfetto", args.perfetto), ("--timeline-plot", args.timeline_plot)):
        if given is not None and not args.simulate:
            raise CliError(f"{flag} needs --simulate (the timeline comes from simulating the network); add "
                           f"--simulate")
    if args.perfetto is None and args.timeline_plot is None:
        return None
    from dsasim.cli.common import PLOT_SUFFIXES, check_outputs, output_file

    check_outputs(args, [("--json", args.json), ("--plot", args.plot), ("--perfetto", args.perfetto),
                         ("--timeline-plot", args.timeline_plot)])
    if args.timeline_plot is not None:
        output_file("--timeline-plot", args.timeline_plot, PLOT_SUFFIXES)
    return None if args.perfetto is None else output_file("--perfetto", args.perfetto)


def format_simulation(simulation: Any, wide: bool = False) -> str:
    """The simulated network per entry (in the order run): estimate, simulated window, ratio, start-end, the
    TensorCore's main stall cause; the totals, the overlap gained and the bounds."""
    rows = []
    for e in simulation.entries:
        name = short_layer_name(e.name)
        rows.append([name if wide else _cut(name, NAME_CELL_CHARS), e.kind, e.estimated_cycles, e.cycles,
                     f"{e.ratio:.3f}" if e.estimated_cycles else None, f"{e.start_cycle:,}-{e.end_cycle:,}",
                     e.overlap_cycles, (e.top_stall if wide else _cut(e.top_stall, STALL_CELL_CHARS)) or None]
                    + [f"{loaded:,}/{stored:,}" if loaded or stored else None for _, loaded, stored in e.level_bytes])
    header = ["layer", "kind", "estimate", "simulated", "ratio", "start-end", "overlap", "stall"]
    # on levels below the SRAM: a column per level, its bytes staged in / written back (traced = the search's)
    header += [f"{name} in/out B" for name, _, _ in (simulation.entries[0].level_bytes if simulation.entries else ())]
    on_chip = simulation.on_chip
    if on_chip is not None:  # results kept on chip: each entry's result (kept, or why not) and the bytes it saved
        fate = {k.name: "kept" for k in on_chip.plan.kept}
        fate.update((n.name, n.reason) for n in on_chip.plan.not_kept)
        for row, e in zip(rows, simulation.entries):
            saved = sum(e.kept_bytes) if e.kept_bytes else 0
            row += [fate.get(e.name.split("+")[-1], fate.get(e.name)), saved or None]
        header += ["result", "saved B"]
    lines = [format_table(header, rows, left=(0, 1, 5, 7)), ""]
    s = simulation
    lines.append(f"simulated {s.network} on {s.hardware}, SRAM {s.sram_bytes:,} B, one timeline of "
                 f"{len(s.entries)} entries:")
    ratio = f" (x{s.cycles / s.estimated_cycles:.3f})" if s.estimated_cycles else ""
    lines.append(f"  {s.cycles:,} cycles simulated, {s.estimated_cycles:,} estimated{ratio}; roofline "
                 f"{s.roofline_cycles:,}")
    lines.append(f"  overlap between entries {s.overlap_cycles:,} cycles (windows summed "
                 f"{s.cycles + s.overlap_cycles:,} minus the total)")
    lines.append(f"  traffic traced {int(s.sim.loaded_bytes) - s.fence_bytes + int(s.sim.stored_bytes):,} B = the "
                 f"search's" + (" less what the kept results save" if s.on_chip is not None else "")
                 + " (model == trace for every entry)"
                 + (f"; fences {s.fence_bytes:,} B apart" if s.fence_bytes else ""))
    if s.level_bytes:  # per level below the SRAM, checked equal to the level search's per entry
        lines.append("  levels below the SRAM traced (staged in / written back) = the level search's: "
                     + "; ".join(f"{name} {loaded:,} / {stored:,} B" for name, loaded, stored in s.level_bytes))
    stalls = ", ".join(f"{k} {v:,}" for k, v in sorted(s.sim.stall_cycles.items(), key=lambda kv: -kv[1])[:4])
    if stalls:
        lines.append(f"  TensorCore stalls: {stalls}")
    lines.append(f"  peak SRAM {int(s.sim.peak_sram_bytes):,} B")
    if on_chip is not None:
        lines.extend(format_on_chip(s))
    return "\n".join(lines)


def format_on_chip(simulation: Any) -> list[str]:
    """What keeping results on chip did: how many are kept and why the others are not, the DDR bytes and the
    cycles beside the same network simulated with every result through DDR."""
    from collections import Counter

    from dsasim.architect.studies.network_on_chip import REASONS

    report, plan = simulation.on_chip, simulation.on_chip.plan
    through = report.ddr_loaded_bytes + report.ddr_stored_bytes
    saved = plan.saved_loaded_bytes + plan.saved_stored_bytes
    held = max((k.nbytes for k in plan.kept), default=0)
    largest = f" (the largest {held:,} B)" if plan.kept else ""
    lines = [f"  results kept on chip: {len(plan.kept)} of {len(plan.kept) + len(plan.not_kept)}{largest}, saving "
             f"{plan.saved_loaded_bytes:,} B loaded and {plan.saved_stored_bytes:,} B stored: {through - saved:,} B of DDR traffic instead of {through:,} B"
             + (f" ({100 * saved / through:.1f} % less)" if through else "")]
    change = simulation.cycles - report.ddr_cycles
    lines.append(f"  {simulation.cycles:,} cycles with them kept, {report.ddr_cycles:,} with every result through "
                 f"DDR ({'+' if change >= 0 else ''}{change:,}; a reader of a kept result starts computing when its "
                 f"producer has finished)")
    for reason, count in sorted(Counter(n.reason for n in plan.not_kept).items()):
        lines.append(f"  not kept ({reason}): {count}, {REASONS[reason]}")
    return lines


COMMAND = Command(
    "network", "a whole network's traffic and cycles under one SRAM size, per layer",
    "Reads a preset or your nn.Module through torch.fx (or an ONNX model), searches the best schedule of every layer under the "
    "SRAM size (each distinct shape once) and prints per layer and in total: traffic, cycles, bound, compulsory "
    "traffic, TensorCore utilization, energy (pJ, by component) and area; JSON and a per-layer bar chart. A layer "
    "left out (unmodelled or "
    "unplaceable) makes the result partial: named on stderr, exit status 1.",
    add_arguments, run)
