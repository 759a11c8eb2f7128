"""The `dsasim` command line: `dsasim demo` runs the schedule suite and prints honest traffic beside the blog's count.

Schedules are found through the `dsasim.schedules` entry-point group (each entry names a list of `Schedule`s),
so the library itself never imports `kernels/`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import os
import signal
import sys
import time
from importlib.metadata import entry_points
from typing import Sequence

from .atomic import write_text_atomic
from .cli_common import (EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE, CliError, DsasimArgumentParser, int_at_least,
                         output_file)
from .hardware import PRESETS, Accelerator, load_hardware
from .report import format_traffic_by_scope, traffic_by_scope
from .schedule import RunResult, Schedule, run_schedule
from . import search_cli
from .timing import cli as timing_cli
from .timing import simulate


def all_schedules() -> list[Schedule]:
    """Every schedule registered under the `dsasim.schedules` entry-point group, in registration order."""
    found: list[Schedule] = []
    for entry in sorted(entry_points(group="dsasim.schedules"), key=lambda e: e.name):
        found.extend(entry.load())
    names = [s.name for s in found]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"schedule names registered twice: {duplicates}")
    return found


def find_schedule(name: str) -> Schedule:
    """The registered schedule called `name`; ValueError naming the known ones if there is none."""
    schedules = {s.name: s for s in all_schedules()}
    if name not in schedules:
        raise ValueError(f"unknown schedule {name!r}; known: {', '.join(schedules)} (`dsasim demo` lists them)")
    return schedules[name]


def _fmt_int(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _fmt_err(result: RunResult) -> str:
    if result.max_abs_err is None:
        return "-"
    return f"{result.max_abs_err:.1e}"


def _fmt_printed(result: RunResult) -> str:
    """The blog's printed count, marked '=' where the blog count column reproduces it and '!=' where not."""
    if result.blog_printed is None:
        return "-"
    mark = "=" if result.blog_printed == result.blog_loaded_elements else "!="
    return f"{mark} {result.blog_printed:,}"


def format_table(results: Sequence[RunResult]) -> str:
    """The demo table: one row per schedule, bytes and counts with thousands separators."""
    quirks = any(r.blog_carried_elements is not None for r in results)  # --blog-quirks: the printed column
    header = ("schedule", "hw", "status", "loaded B", "stored B", "rmw B", "hits", "peak SRAM B", "blog count",
              *(("blog printed",) if quirks else ()), "MACs", "max|err|", "cycles", "roofline", "TC util")
    rows = [header]
    for r in results:
        util = "-" if r.tensorcore_utilization is None else f"{r.tensorcore_utilization:.0%}"
        printed = (_fmt_printed(r),) if quirks else ()
        rows.append((r.name, r.hardware, r.status, _fmt_int(r.loaded_bytes), _fmt_int(r.stored_bytes),
                     _fmt_int(r.rmw_bytes), _fmt_int(r.hits), _fmt_int(r.peak_sram_bytes),
                     _fmt_int(r.blog_loaded_elements), *printed, _fmt_int(r.macs), _fmt_err(r),
                     _fmt_int(r.cycles), _fmt_int(r.roofline_cycles), util))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = []
    for i, row in enumerate(rows):
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1]), row[2].ljust(widths[2])]
        cells += [cell.rjust(w) for cell, w in zip(row[3:], widths[3:])]
        lines.append("  ".join(cells))
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_tensors(result: RunResult) -> str:
    """Per-tensor breakdown of one run: bytes moved and the re-fetch factor (loaded / tensor bytes)."""
    header = ("tensor", "size B", "loaded B", "stored B", "rmw B", "hits", "re-fetch", "blog count")
    rows = [header] + [(t.name, f"{t.tensor_bytes:,}", f"{t.loaded_bytes:,}", f"{t.stored_bytes:,}",
                        f"{t.rmw_bytes:,}", f"{t.hits:,}", f"{t.refetch_factor:.2f}x",
                        f"{t.blog_loaded_elements:,}") for t in result.tensors]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [f"{result.name} on {result.hardware}: per-tensor traffic"]
    for i, row in enumerate(rows):
        lines.append("  ".join([row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]))
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _demo_one(name: str, hardware: Accelerator, numeric: bool, seed: int, by_scope: bool, timing: bool,
              timing_event_limit: int, blog_quirks: bool) -> tuple[RunResult, str, float]:
    """Run one demo schedule (and time its trace): the result, its by-scope table if asked, wall seconds.

    Takes the schedule's name, not the Schedule, so that worker processes need not pickle its functions."""
    start = time.perf_counter()
    schedule = find_schedule(name)
    result = run_schedule(schedule, hardware, numeric=numeric, seed=seed, record_trace=by_scope or timing,
                          trace_event_limit=None if by_scope else timing_event_limit, blog_quirks=blog_quirks)
    table = ""
    if by_scope and result.trace is not None:
        table = f"{schedule.name} on {hardware.name}: traffic by scope\n" + \
            format_traffic_by_scope(traffic_by_scope(result.trace))
    if result.trace is not None and timing:
        timed = simulate(result.trace, hardware)
        result = dataclasses.replace(result, cycles=timed.cycles, roofline_cycles=timed.roofline_cycles,
                                     tensorcore_utilization=timed.tensorcore_utilization)
    # drop the trace (millions of events) and the output arrays: the report needs neither
    result = dataclasses.replace(result, trace=None, outputs=None)
    return result, table, time.perf_counter() - start


def _demo_task(item: tuple[int, tuple]) -> tuple[int, tuple[RunResult, str, float]]:
    """One task of the worker pool: (index, `_demo_one` arguments) -> (index, its result)."""
    index, task = item
    return index, _demo_one(*task)


def _ignore_sigint() -> None:
    """Worker initializer: Ctrl-C reaches the whole process group; only the parent handles it (and ends us)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _cmd_demo(args: argparse.Namespace) -> int:
    schedules = all_schedules()
    if args.only:
        known = {s.name for s in schedules}
        unknown = [n for n in args.only if n not in known]
        if unknown:
            raise CliError(f"unknown schedule(s) {unknown}; known: {', '.join(sorted(known))}")
        schedules = [s for s in schedules if s.name in args.only]
    for flag, name in (("--per-tensor", args.per_tensor), ("--by-scope", args.by_scope)):
        if name and name not in {s.name for s in schedules}:
            raise CliError(f"{flag} {name!r} is not among the schedules run; add it to --only")
    try:
        override = load_hardware(args.hardware) if args.hardware is not None else None
    except ValueError as err:
        raise CliError(str(err)) from None
    json_path = output_file("--json", args.json) if args.json is not None else None
    jobs = max(1, min(args.jobs, len(schedules)))
    tasks = [(schedule.name, override or load_hardware(schedule.hardware), not args.count_only, args.seed,
              schedule.name == args.by_scope, not args.no_timing, args.timing_event_limit, args.blog_quirks)
             for schedule in schedules]
    results: list[RunResult | None] = [None] * len(tasks)
    scope_tables: list[str] = [""] * len(tasks)

    def done(index: int, result: RunResult, table: str, seconds: float) -> None:
        results[index], scope_tables[index] = result, table
        if not args.quiet:
            print(f"{result.name} on {result.hardware}: {result.status} ({seconds:.1f} s)", file=sys.stderr,
                  flush=True)

    if jobs == 1:
        for index, task in enumerate(tasks):
            done(index, *_demo_one(*task))
    else:
        # fork: the children inherit the imported schedules; each runs whole schedules, results come back as they
        # finish. Leaving the block (Ctrl-C included) terminates the workers at once.
        context = multiprocessing.get_context("fork")
        with context.Pool(jobs, initializer=_ignore_sigint) as pool:
            for index, outcome in pool.imap_unordered(_demo_task, enumerate(tasks)):
                done(index, *outcome)
    scope_table = next((t for t in scope_tables if t), "")
    print(format_table(results))
    for r in results:
        if r.message:
            print(f"\n{r.name}: {r.status}: {r.message}")
    if args.per_tensor:
        chosen = next(r for r in results if r.name == args.per_tensor)
        print()
        print(format_tensors(chosen) if chosen.tensors is not None else
              f"{chosen.name}: no per-tensor breakdown ({chosen.status})")
    if scope_table:
        print()
        print(scope_table)
    if json_path is not None:
        write_text_atomic(json_path, json.dumps([r.to_json() for r in results], indent=2) + "\n")
    # an overflow is a finding (demo3-1 and demo4 are meant to show it); any other failure is exit 1
    return 0 if all(r.status in ("ok", "overflow") for r in results) else EXIT_FAILED


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `dsasim` command."""
    parser = DsasimArgumentParser(prog="dsasim", description="Trace-driven DSA simulator.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the demo schedules and print their traffic table")
    demo.add_argument("--only", nargs="+", metavar="NAME", help="run only these schedules")
    demo.add_argument("--count-only", action="store_true", help="no data, no torch check: counts only (fast)")
    demo.add_argument("--hardware", metavar="PRESET|FILE",
                      help=f"run every schedule on this hardware (presets: {', '.join(PRESETS)}; or a .toml "
                           f"file); default: each schedule's own preset")
    demo.add_argument("--json", metavar="PATH", help="also write the results as a JSON list")
    demo.add_argument("--per-tensor", metavar="NAME", help="print the per-tensor breakdown of this schedule")
    demo.add_argument("--by-scope", metavar="NAME",
                      help="print which scope (loop level) moved which tensor's bytes in this schedule")
    demo.add_argument("--jobs", type=int_at_least(1), default=os.cpu_count() or 1, metavar="N",
                      help="run up to N schedules at once in worker processes (default: the number of CPUs)")
    demo.add_argument("--seed", type=int_at_least(0, 2 ** 64 - 1), default=0,
                      help="seed of the random input data (default 0)")
    demo.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    demo.add_argument("--blog-quirks", action="store_true",
                      help="count the blog's 'total loaded' as the blog's code did (unclamped last tiles, the "
                           "count of a failed demo carried into the next) and show what it printed; traffic "
                           "and every other column are unchanged")
    demo.add_argument("--no-timing", action="store_true",
                      help="skip the timing simulation (no cycles columns; saves the trace's memory)")
    demo.add_argument("--timing-event-limit", type=int_at_least(0), default=3_000_000, metavar="EVENTS",
                      help="time only schedules whose trace has at most this many events (default 3,000,000: "
                           "demo1's 21 M events would need ~10 GB and minutes; time it with `dsasim simulate`)")
    demo.set_defaults(func=_cmd_demo)
    timing_cli.register(sub)
    search_cli.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `dsasim` console script; returns the exit status (see README "Errors").

    0: done; 1: it ran, but a schedule failed (an error; under `simulate`, also an overflow) or nothing fits;
    2: a mistake in the command line, one line on stderr; 130: interrupted (Ctrl-C). No traceback for any input."""
    command = "dsasim"
    try:
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as stop:  # argparse has printed --help (0) or its one-line error (2)
            return stop.code if isinstance(stop.code, int) else EXIT_USAGE
        command = f"dsasim {args.command}"
        return args.func(args)
    except CliError as err:
        print(f"{command}: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        if sys.stderr.isatty():  # the terminal echoed ^C (or a progress bar is mid-line): start a fresh line
            print(file=sys.stderr)
        print(f"{command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as err:
        if isinstance(err, BrokenPipeError):  # `dsasim demo | head`: the reader left; nothing more to say
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return EXIT_FAILED
        # e.g. an output that became unwritable after the checks (disk full, folder removed): atomic writes
        # leave nothing half-written
        where = f": {err.filename}" if err.filename else ""
        print(f"{command}: {err.strerror or err}{where}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
