"""`dsasim simulate NAME`: trace a schedule count-only and time it.

    dsasim simulate NAME [--buffers N] [--hardware PRESET|FILE] [--json PATH] [--perfetto PATH] [--plot DIR]
                         [--window CYCLES]

NAME is looked up with `dsasim.cli.find_schedule`. `--buffers N` makes every scope of the schedule N-way
buffered (the scope names are found by a first count-only pass). Prints a summary; --json writes
`SimResult.to_json` (fixed key order, byte-identical for the same input), --perfetto a Chrome/Perfetto trace,
--plot the bandwidth, Gantt and SRAM figures as PNGs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable

from ..hardware import Accelerator, load_hardware, preset
from ..errors import ScheduleError
from ..memory import Session
from ..schedule import Schedule, bind_tensors, run_schedule
from . import simulate
from .errors import TimingError


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the `simulate` subcommand; its handler is `args.func(args) -> exit code`."""
    p = subparsers.add_parser(
        "simulate", help="time a schedule: engines, DDR bandwidth, stalls, SRAM over time",
        description="Trace a schedule count-only, simulate its timing (DMA load/store channels, TensorCore, "
                    "vector unit, a shared or split DDR port) and print cycles, roofline bound, utilization and "
                    "TensorCore stall causes.")
    p.add_argument("name", help="a registered schedule, e.g. demo2 (as listed by `dsasim demo`)")
    p.add_argument("--buffers", type=int, metavar="N", default=None,
                   help="make every scope of the schedule N-way buffered (default: as the schedule declares)")
    p.add_argument("--hardware", metavar="PRESET|FILE", default=None,
                   help="hardware preset or TOML file (default: the preset the schedule was written for)")
    p.add_argument("--json", metavar="PATH", help="write the result summary as JSON")
    p.add_argument("--perfetto", metavar="PATH", help="write a Chrome/Perfetto trace (open in ui.perfetto.dev)")
    p.add_argument("--plot", metavar="DIR", help="write NAME-bandwidth.png, NAME-gantt.png, NAME-sram.png")
    p.add_argument("--window", type=int, metavar="CYCLES", default=None,
                   help="timeline window in cycles (default: about 256 windows over the run)")
    p.set_defaults(func=run)
    return p


def scope_names(schedule: Schedule, hardware: Accelerator) -> list[str]:
    """Names of the scopes a schedule enters (one count-only pass, capacity unchecked, nothing recorded)."""
    session = Session(hardware, numeric=False, record_trace=False, enforce_capacity=False)
    tensors = bind_tensors(session, schedule.workload, None)
    try:
        schedule.body(session, **tensors)
    except ScheduleError:  # the real run reports the error; the scopes seen so far are enough to name them
        pass
    return sorted({scope.path[-1] for scope in session.trace.scopes})


def run(args: argparse.Namespace, find_schedule: Callable[[str], Schedule] | None = None) -> int:
    """Handle `dsasim simulate`; returns the process exit code."""
    if find_schedule is None:
        from dsasim.cli import find_schedule  # provided by the main CLI module
    try:
        schedule = find_schedule(args.name)
    except (KeyError, ValueError) as err:
        print(f"dsasim simulate: {err}", file=sys.stderr)
        return 2
    try:
        hardware = load_hardware(args.hardware) if args.hardware else preset(schedule.hardware)
    except ValueError as err:
        print(f"dsasim simulate: {err}", file=sys.stderr)
        return 2
    buffers = args.buffers
    if buffers is not None and buffers < 1:
        print(f"dsasim simulate: --buffers must be >= 1, got {buffers}", file=sys.stderr)
        return 2
    if args.window is not None and args.window < 1:
        print(f"dsasim simulate: --window must be >= 1, got {args.window}", file=sys.stderr)
        return 2
    scope_buffers = None
    if buffers is not None:
        scope_buffers = {name: buffers for name in scope_names(schedule, hardware)}
    run_result = run_schedule(schedule, hardware, numeric=False, record_trace=True, scope_buffers=scope_buffers)
    if run_result.status != "ok":
        print(f"dsasim simulate: {schedule.name} on {hardware.name} failed ({run_result.status}): "
              f"{run_result.message}", file=sys.stderr)
        return 1
    try:
        result = simulate(run_result.trace, hardware, window_cycles=args.window)
    except TimingError as err:
        print(f"dsasim simulate: {schedule.name}: {err}", file=sys.stderr)
        return 1
    ways = f", {buffers}-way scopes" if buffers is not None else ""
    print(f"{schedule.name} on {hardware.name}{ways}: {result.operations} operations")
    print(result.summary())
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result.to_json(schedule.name, buffers), indent=2) + "\n")
        print(f"wrote {path}")
    if args.perfetto:
        from ..perfetto import write_perfetto
        print(f"wrote {write_perfetto(result, args.perfetto, schedule.name)}")
    if args.plot:
        from ..plot import plot_all
        for path in plot_all(result, args.plot, prefix=f"{schedule.name}-"):
            print(f"wrote {path}")
    return 0
