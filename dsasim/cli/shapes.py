"""`dsasim shapes LAYER --vary DIM=LO:HI[:STEP]`: a layer over a range of one dimension (dynamic shapes).

    dsasim shapes LAYER --vary DIM=LO:HI[:STEP] [--sram SIZE] [--hardware PRESET|FILE] [--max-loss 5%] [--jobs N]
                  [--objective cycles|traffic|energy|edp] [--json PATH] [--plot PATH] [--quiet] [--force]

LAYER as for `dsasim search` (blog-conv, resnet50.<name>, gemm-1024, conv:..., gemm:...). DIM: conv n, ic, oc, h, w
or hw (both); matmul m, n, k; several joined by + move together (m+n). Per shape: the best schedule's estimated
cycles, traffic, TensorCore utilization and padding waste; then the single shape-generic schedule and the dispatch
table (shape ranges -> schedules) that keeps every shape within --max-loss of its own optimum (after DietCode).
An attention spec (attention:b=..,h=..,n=..,d=..) varies n, m or n+m (query length, key length, both): its
templates are schedule kinds with whole-block tiles, and the schedule chosen at the largest length is reported too;
`--objective` ranks its lengths, templates and losses by traffic, energy or edp instead of estimated cycles.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from dsasim.cli.common import (EXIT_FAILED, CliError, Command, add_objective_argument, int_at_least,
                               json_and_plot_paths, parse_percent, warner, write_outputs)
from dsasim.view.table import format_table
from dsasim.hardware import load_hardware
from dsasim.one_level import require_one_level

if TYPE_CHECKING:
    from dsasim.architect.studies.shapes import ShapeSweep

__all__ = ["COMMAND", "format_shapes"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of `dsasim shapes`."""
    p.add_argument("layer", help="a layer (as for dsasim search): blog-conv, resnet50.<name>, conv:..., gemm:..., "
                                   "or attention:... (vary n, m or n+m)")
    p.add_argument("--vary", required=True, metavar="DIM=LO:HI[:STEP]",
                   help="the dimension to sweep and its values, e.g. m=1:128, n=1:16, hw=7:56:7, m+n=1:128:8")
    p.add_argument("--sram", metavar="SIZE", help="SRAM size, e.g. 256KiB (default: the hardware's)")
    p.add_argument("--hardware", metavar="PRESET|FILE", default="blog", help="hardware preset or TOML file")
    p.add_argument("--max-loss", default="5%", metavar="PERCENT",
                   help="the dispatch table keeps every shape within this much of its own best (default 5%%)")
    p.add_argument("--jobs", type=int_at_least(1), default=2, help="worker processes for the per-shape searches")
    add_objective_argument(p, "cycles", scope="attention only (a layer's shapes rank by cycles): per length ",
                           note="; the losses and the dispatch table are in the same figure")
    p.add_argument("--json", metavar="PATH", help="write the sweep as JSON")
    p.add_argument("--plot", metavar="PATH", help="write a PNG: utilization and cycles against the shape")
    p.add_argument("--quiet", action="store_true", help="no progress bar (work estimates are still printed)")
    p.add_argument("--force", action="store_true", help="run work estimated far beyond the usual (hours) "
                                                          "instead of refusing it; the estimate is still printed")


def _tiles(template: dict) -> str:
    kind = f"{template['kind']} " if "kind" in template else ""  # an attention template: its schedule kind
    return kind + " ".join(f"{d}{t}" for d, t in template["tiles"].items())


def format_shapes(sweep: ShapeSweep) -> str:
    """Per shape: best and dispatched figures; then the single schedule, the dispatch table and the templates."""
    by = "" if sweep.objective == "cycles" else f" ({sweep.objective})"  # what the losses are in
    header = (sweep.dim, "best cycles", "traffic B", "TC util", "padding waste", "pJ/MAC", "best tiles",
              "dispatched", f"loss{by}", f"single-schedule loss{by}")
    rows = []
    for i, p in enumerate(sweep.points):
        if p.cycles is None:
            rows.append((p.value, None, None, None, None, None, p.reason, None, None, None))
            continue
        t = sweep.dispatched(i)
        per_mac = None if p.energy is None else p.energy.energy_per_mac_pj
        rows.append((p.value, p.cycles, p.traffic_bytes, f"{100 * p.tensorcore_utilization:.0f}%",
                     f"{100 * (1 - p.tensorcore_utilization):.0f}%", None if per_mac is None else f"{per_mac:.3f}",
                     _tiles(p.nest), f"#{t}",
                     f"{100 * sweep.loss(t, i):.1f}%",
                     None if sweep.single is None else f"{100 * sweep.loss(sweep.single, i):.1f}%"))
    lines = [format_table(header, rows), ""]
    if by:
        lines.append(f"ranked by {sweep.objective}: every best, loss and dispatch below is in its figure")
    fitting = [i for i, p in enumerate(sweep.points) if p.cycles is not None]
    if sweep.single is not None:
        losses = [sweep.loss(sweep.single, i) for i in fitting]
        lines.append(f"single shape-generic schedule #{sweep.single} ({_tiles(sweep.templates[sweep.single])}): "
                     f"loss max {100 * max(losses):.1f}%, mean {100 * sum(losses) / len(losses):.1f}% over "
                     f"{len(fitting)} shapes")
    lines.append(f"dispatch table within {100 * sweep.max_loss:g}%: {len(sweep.dispatch)} ranges, "
                 f"{len(sweep.distinct_schedules)} schedules (of {len(sweep.templates)} candidates)")
    for e in sweep.dispatch:
        lines.append(f"  {sweep.dim} {e.lo}..{e.hi} -> #{e.schedule} ({_tiles(sweep.templates[e.schedule])}), "
                     f"loss at most {100 * e.max_loss:.1f}%")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Handle `dsasim shapes`: 0, or 1 when some shape fits no schedule (the rest is reported)."""
    from dsasim.architect.studies.executor import WorkersLostError, open_executor
    from dsasim.architect.problems.layers import parse_layer
    from dsasim.architect.studies.shapes import parse_vary, shape_problems, sweep_shapes
    from dsasim.architect.problems.attention import is_attention

    if is_attention(args.layer):
        return _run_attention(args)
    if args.objective != "cycles":
        raise CliError(f"--objective {args.objective} applies to attention targets; a layer's shapes rank by "
                       f"estimated cycles (leave --objective out)")
    try:
        problem = parse_layer(args.layer)
        hardware = _sized_hardware(args)
        dim, values = parse_vary(args.vary)
        shape_problems(problem, dim, values)  # every value a valid layer: a usage error before any search
        max_loss = parse_percent(args.max_loss, "--max-loss")
        json_path, plot_path = json_and_plot_paths(args)
    except ValueError as err:
        raise CliError(str(err)) from None
    executor = open_executor("process", args.jobs)
    try:
        sweep = sweep_shapes(problem, dim, values, hardware, max_loss, executor, progress=not args.quiet,
                             force=args.force, warn=warner("shapes"), jobs=args.jobs)
    except ValueError as err:
        raise CliError(str(err)) from None
    except WorkersLostError as err:
        print(f"dsasim shapes: {err}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        executor.close()
    print(format_shapes(sweep))
    write_outputs(sweep, json_path, plot_path, "plot_shapes")
    return 0 if all(p.cycles is not None for p in sweep.points) else 1


def _run_attention(args: argparse.Namespace) -> int:
    """`dsasim shapes attention:... --vary n|m|n+m=...`: per length the best schedule, the single length-generic
    schedule, the one chosen at the largest length, and the dispatch table (`studies.attention_shapes`)."""
    from dsasim.architect.problems.attention import parse_attention
    from dsasim.architect.studies.attention_shapes import (attention_shape_problems, sweep_attention_shapes,
                                                           template_loss)
    from dsasim.architect.studies.shapes import parse_vary

    try:
        if args.jobs != 2 or args.force:  # the lengths' searches are quick and run here, never refused
            raise ValueError("--jobs and --force do not apply to attention (its searches take well under a second "
                             "per length and run in this process); leave them out")
        problem = parse_attention(args.layer)
        hardware = _sized_hardware(args)
        dim, values = parse_vary(args.vary)
        attention_shape_problems(problem, dim, values)  # every length valid before any search
        max_loss = parse_percent(args.max_loss, "--max-loss")
        json_path, plot_path = json_and_plot_paths(args)
        sweep = sweep_attention_shapes(problem, dim, values, hardware, max_loss, args.objective)
    except ValueError as err:
        raise CliError(str(err)) from None
    text = format_shapes(sweep)
    fitting = [p for p in sweep.points if p.cycles is not None]
    if fitting:
        from dsasim.architect.studies.attention_shapes import _generic

        largest = _generic(fitting[-1], hardware)
        loss = template_loss(sweep, largest)
        if loss is not None:
            text += (f"\nthe schedule chosen at the largest {dim} ({fitting[-1].value}), made generic: "
                     f"#{sweep.templates.index(largest)} ({_tiles(largest)}), loss max "
                     + ("does not fit every length" if loss == float("inf") else f"{100 * loss:.1f}%"))
    print(text)
    write_outputs(sweep, json_path, plot_path, "plot_shapes")
    return 0 if len(fitting) == len(sweep.points) else 1


def _sized_hardware(args: argparse.Namespace):
    """The hardware of --hardware, one-level, with --sram's size when given; ValueError otherwise."""
    import dataclasses

    from dsasim.architect.studies.sweep import parse_bytes

    hardware = load_hardware(args.hardware)
    require_one_level(hardware, "shape sweep")
    if args.sram is not None:
        try:
            hardware = dataclasses.replace(hardware, sram_bytes=parse_bytes(args.sram))
        except ValueError as err:
            raise ValueError(f"--sram: {err}") from None
    return hardware


COMMAND = Command(
    "shapes", "a layer over a range of one dimension: per-shape best vs shape-generic schedules (DietCode)",
    "Searches the best schedule of every shape, builds shape-generic schedules (tiles fixed, TensorCore tiles in "
    "whole 16 x 24 blocks), and prints the single generic schedule's loss and the dispatch table that keeps every "
    "shape within --max-loss; each shape's energy per MAC; JSON and a plot of utilization and cycles against the "
    "shape.",
    add_arguments, run)
