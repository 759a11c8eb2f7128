"""`dsasim simulate NAME`: trace a schedule count-only and time it.

    dsasim simulate NAME|MODULE:NAME|FILE.py:NAME [--ways N] [--hardware PRESET|FILE] [--layout TENSOR=LAYOUT ...]
                         [--json PATH] [--perfetto PATH] [--plot DIR] [--html PATH] [--window CYCLES]

NAME is looked up with `common.find_schedule` (a registered name, or MODULE:NAME / FILE.py:NAME). `--ways N` (alias `--buffers N`, the blog's word) makes every scope of
the schedule N-way buffered (the scope names are found by a first count-only pass). Prints a summary; --json writes
`SimResult.to_json` (fixed key order, byte-identical for the same input), --perfetto a Chrome/Perfetto trace,
--plot the bandwidth, Gantt and SRAM figures as PNGs, --html one self-contained page with the summary and those
figures (`dsasim.view.html_report.simulate_report`). The model (torch via `dsasim.traced.schedule`, the timing
simulator, matplotlib) is imported by the run, not by `dsasim --help`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from dsasim.atomic import write_text_atomic
from dsasim.hardware import load_hardware, preset
from dsasim.cli.common import (EXIT_FAILED, HTML_SUFFIXES, CliError, Command, check_outputs, find_schedule,
                               int_at_least, output_dir, output_file, plot_dir_outputs, schedule_inputs)

if TYPE_CHECKING:
    from dsasim.hardware import Accelerator
    from dsasim.traced.schedule import Schedule

__all__ = ["COMMAND", "MAX_WAYS", "MAX_WINDOW_CYCLES", "scope_names"]

MAX_WAYS = 64  # N-way buffering beyond this is a typo, not a design (each way is a full copy)
MAX_WINDOW_CYCLES = 10 ** 15  # keeps window arithmetic exact in int64


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of `dsasim simulate`."""
    p.add_argument("name", help="a registered schedule, e.g. demo2 (as listed by `dsasim demo`), or a Schedule of "
                                "yours as MODULE:NAME or FILE.py:NAME")
    p.add_argument("--ways", "--buffers", dest="ways", type=int_at_least(1, MAX_WAYS), metavar="N", default=None,
                   help="make every scope of the schedule N-way buffered (default: as the schedule declares; "
                        "--buffers is an alias)")
    p.add_argument("--hardware", metavar="PRESET|FILE", default=None,
                   help="hardware preset or TOML file (default: the preset the schedule was written for)")
    p.add_argument("--layout", action="append", default=[], metavar="TENSOR=LAYOUT",
                   help="a tensor's DDR layout: row-major (default), NHWC or NCHW16c (repeat for several tensors); it "
                        "changes transfer cycles when the hardware sets dma_burst_bytes or dma_run_cycles")
    p.add_argument("--json", metavar="PATH", help="write the result summary as JSON")
    p.add_argument("--perfetto", metavar="PATH", help="write a Chrome/Perfetto trace (open in ui.perfetto.dev)")
    p.add_argument("--plot", metavar="DIR", help="write NAME-bandwidth.png, NAME-gantt.png, NAME-sram.png")
    p.add_argument("--html", metavar="PATH", help="write one self-contained HTML page (.html): the summary, stalls "
                                                  "by cause, the engines' Gantt chart, the DDR bandwidth and SRAM "
                                                  "occupancy timelines")
    p.add_argument("--window", type=int_at_least(1, MAX_WINDOW_CYCLES), metavar="CYCLES", default=None,
                   help="timeline window in cycles (default: about 256 windows over the run)")


def scope_names(schedule: Schedule, hardware: Accelerator) -> list[str]:
    """Names of the scopes a schedule enters (one count-only pass, capacity unchecked, nothing recorded)."""
    from dsasim.errors import ScheduleError
    from dsasim.traced.session import Session
    from dsasim.traced.schedule import bind_tensors

    session = Session(hardware, numeric=False, record_trace=False, enforce_capacity=False)
    tensors = bind_tensors(session, schedule.workload, None)
    try:
        schedule.body(session, **tensors)
    except ScheduleError:  # the real run reports the error; the scopes seen so far are enough to name them
        pass
    return sorted({scope.path[-1] for scope in session.trace.scopes})


def parse_layouts(items: list[str], schedule: Schedule) -> dict[str, str]:
    """`--layout TENSOR=LAYOUT` options as a mapping, checked against the schedule's tensors (ValueError)."""
    from dsasim.traced.schedule import check_layouts

    layouts: dict[str, str] = {}
    for item in items:
        name, sep, layout = item.partition("=")
        if not sep or not name or not layout:
            raise ValueError(f"--layout {item!r}: give TENSOR=LAYOUT, e.g. image=NHWC")
        if name in layouts and layouts[name] != layout:
            raise ValueError(f"--layout gives {name!r} two layouts ({layouts[name]}, {layout}); give one")
        layouts[name] = layout
    try:
        check_layouts(schedule.workload, layouts)
    except ValueError as err:
        raise ValueError(f"--layout: {schedule.name}: {err}") from None
    return layouts


def run(args: argparse.Namespace) -> int:
    """Handle `dsasim simulate`: 0, or 1 when the schedule fails; a mistake in the command line raises CliError
    (`dsasim.cli.main` prints it and exits 2)."""
    from dsasim.traced.schedule import run_schedule
    from dsasim.timing import TimingError, simulate

    try:
        schedule = find_schedule(args.name)
        hardware = load_hardware(args.hardware) if args.hardware is not None else preset(schedule.hardware)
        layouts = parse_layouts(args.layout, schedule)
    except ValueError as err:
        raise CliError(str(err)) from None
    ways = args.ways
    # every output is checked before the (possibly long) run: none may be another (the --plot folder's figures
    # included) or an input; then --plot first: it creates its folder, which the other outputs may name
    # (--plot out --perfetto out/t.json)
    plot_names: list[str] = []
    if args.plot is not None:
        from dsasim.view.plot import plot_all, plot_all_names  # matplotlib loads only when a plot is asked for
        plot_names = plot_all_names(prefix=f"{schedule.name}-")
    check_outputs(args, [("--json", args.json), ("--perfetto", args.perfetto), ("--html", args.html),
                         *plot_dir_outputs("--plot", args.plot, plot_names)], schedule_inputs([args.name]))
    if args.plot is not None:
        plot_dir = output_dir("--plot", args.plot)
    json_path = output_file("--json", args.json) if args.json is not None else None
    perfetto_path = output_file("--perfetto", args.perfetto) if args.perfetto is not None else None
    html_path = output_file("--html", args.html, HTML_SUFFIXES) if args.html is not None else None
    scope_ways = None
    if ways is not None:
        scope_ways = {name: ways for name in scope_names(schedule, hardware)}
    run_result = run_schedule(schedule, hardware, numeric=False, record_trace=True, scope_ways=scope_ways,
                              layouts=layouts)
    if run_result.status != "ok":
        print(f"dsasim simulate: {schedule.name} on {hardware.name} failed ({run_result.status}): "
              f"{run_result.message}", file=sys.stderr)
        return EXIT_FAILED
    try:
        result = simulate(run_result.trace, hardware, window_cycles=args.window)
    except TimingError as err:
        print(f"dsasim simulate: {schedule.name}: {err}", file=sys.stderr)
        return EXIT_FAILED
    from dsasim.energy.report import energy_json, energy_report
    from dsasim.view.energy_text import format_energy

    energy = energy_report(run_result.access_counts, hardware, result.cycles)
    way_note = f", {ways}-way scopes" if ways is not None else ""
    print(f"{schedule.name} on {hardware.name}{way_note}: {result.operations:,} operations")
    print(result.summary())
    print(format_energy(energy, indent=""))
    if json_path is not None:
        out = {**result.to_json(schedule.name, ways), **energy_json(energy, run_result.access_counts)}
        write_text_atomic(json_path, json.dumps(out, indent=2) + "\n")
        print(f"wrote {json_path}")
    if perfetto_path is not None:
        from dsasim.view.perfetto import write_perfetto
        print(f"wrote {write_perfetto(result, perfetto_path, schedule.name)}")
    if args.plot is not None:
        for path in plot_all(result, plot_dir, prefix=f"{schedule.name}-"):
            print(f"wrote {path}")
    if html_path is not None:
        from dsasim.view.html_report import simulate_report
        print(f"wrote {simulate_report(result, schedule.name, energy, ways).write(html_path)}")
    return 0


COMMAND = Command(
    "simulate", "time a schedule: engines, DDR bandwidth, stalls, SRAM over time",
    "Trace a schedule count-only, simulate its timing (DMA load/store channels, TensorCore, vector unit, a shared "
    "or split DDR port) and print cycles, roofline bound, utilization and TensorCore stall causes.",
    add_arguments, run)
