"""`dsasim demo`: run the schedule suite and print honest traffic beside the blog's count.

    dsasim demo [--only NAME...] [--count-only] [--hardware PRESET|FILE] [--json PATH] [--per-tensor NAME]
                [--by-scope NAME] [--jobs N] [--seed S] [--quiet] [--blog-quirks] [--no-timing]
                [--timing-event-limit EVENTS]

Schedules are found through the `dsasim.schedules` entry-point group (`common.all_schedules`), so the library
never imports `kernels/`. The model (torch via `dsasim.traced.schedule`, the timing simulator) is imported by the run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import sys
import time
from typing import TYPE_CHECKING, Sequence

from dsasim.atomic import write_text_atomic
from dsasim.hardware import PRESETS, Accelerator, load_hardware
from dsasim.cli.common import (EXIT_FAILED, CliError, Command, check_outputs, find_schedule, find_schedules,
                               int_at_least, output_file, schedule_inputs)
from dsasim.view.table import format_table

if TYPE_CHECKING:
    from dsasim.view.report import ScopeTraffic
    from dsasim.traced.schedule import RunResult

__all__ = ["COMMAND", "format_results", "format_tensors", "format_traffic_by_scope"]


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


def format_results(results: Sequence[RunResult]) -> str:
    """The demo table: one row per schedule, bytes and counts with thousands separators."""
    quirks = any(r.blog_carried_elements is not None for r in results)  # --blog-quirks: the printed column
    header = ("schedule", "hw", "status", "loaded B", "stored B", "rmw B", "hits", "peak SRAM B", "blog count",
              *(("blog printed",) if quirks else ()), "MACs", "max|err|", "cycles", "roofline", "TC util", "energy uJ",
              "pJ/MAC")
    rows = [(r.name, r.hardware, r.status, r.loaded_bytes, r.stored_bytes, r.rmw_bytes, r.hits, r.peak_sram_bytes,
             r.blog_loaded_elements, *((_fmt_printed(r),) if quirks else ()), r.macs, _fmt_err(r), r.cycles,
             r.roofline_cycles,
             "-" if r.tensorcore_utilization is None else f"{r.tensorcore_utilization:.0%}",
             "-" if r.energy is None else f"{r.energy.energy_pj / 1e6:,.2f}",
             "-" if r.energy is None or r.energy.energy_per_mac_pj is None else f"{r.energy.energy_per_mac_pj:.1f}")
            for r in results]
    return format_table(header, rows, left=(0, 1, 2))


def format_tensors(result: RunResult) -> str:
    """Per-tensor breakdown of one run: bytes moved and the re-fetch factor (loaded / tensor bytes)."""
    header = ("tensor", "size B", "loaded B", "stored B", "rmw B", "hits", "re-fetch", "blog count")
    rows = [(t.name, t.tensor_bytes, t.loaded_bytes, t.stored_bytes, t.rmw_bytes, t.hits,
             f"{t.refetch_factor:.2f}x", t.blog_loaded_elements) for t in result.tensors]
    text = f"{result.name} on {result.hardware}: per-tensor traffic\n" + format_table(header, rows)
    if result.levels:
        header = ("level", "tensor", "staged B", "written back B", "rmw B", "stages", "write-backs", "hits",
                  "zero-fills")
        rows = []
        for lv in result.levels:
            for tensor, t in lv["per_tensor"].items():
                rows.append((lv["level"], tensor, t["loaded_bytes"], t["stored_bytes"], t["rmw_bytes"], t["loads"],
                             t["stores"], t["hits"], t["opens"]))
            rows.append((lv["level"], f"(all; peak {lv['peak_bytes']:,} of {lv['capacity_bytes']:,} B)",
                         lv["loaded_bytes"], lv["stored_bytes"], lv["rmw_bytes"], lv["loads"], lv["stores"],
                         lv["hits"], lv["opens"]))
        text += (f"\n\n{result.name} on {result.hardware}: traffic between each level below the SRAM and its "
                 f"parent\n" + format_table(header, rows, left=(0, 1)))
    return text


def format_traffic_by_scope(rows: Sequence[ScopeTraffic]) -> str:
    """A table of `dsasim.view.report.traffic_by_scope` rows."""
    header = ("scope", "runs", "tensor", "loaded B", "stored B", "loads", "stores", "hits")
    table = [(r.scope, r.instances, r.tensor, r.loaded_bytes, r.stored_bytes, r.loads, r.stores, r.hits)
             for r in rows]
    if any(r.level != "SRAM" for r in rows):  # below the SRAM: which level's port moved the bytes
        header += ("level",)
        table = [row + (r.level,) for row, r in zip(table, rows)]
    return format_table(header, table, left=(0, 2, 8))


def _demo_one(name: str, hardware: Accelerator, numeric: bool, seed: int, by_scope: bool, timing: bool,
              timing_event_limit: int, blog_quirks: bool) -> tuple[RunResult, str, float]:
    """Run one demo schedule (and time its trace): the result, its by-scope table if asked, wall seconds.

    Takes the schedule's name, not the Schedule, so that worker processes need not pickle its functions."""
    from dsasim.view.report import traffic_by_scope
    from dsasim.traced.schedule import run_schedule
    from dsasim.timing import simulate

    start = time.perf_counter()
    schedule = find_schedule(name)
    result = run_schedule(schedule, hardware, numeric=numeric, seed=seed, record_trace=by_scope or timing,
                          trace_event_limit=None if by_scope else timing_event_limit, blog_quirks=blog_quirks)
    table = ""
    if by_scope and result.trace is not None:
        table = f"{schedule.name} on {hardware.name}: traffic by scope\n" + \
            format_traffic_by_scope(traffic_by_scope(result.trace))
    if result.trace is not None and timing:
        from dsasim.energy.report import energy_report

        timed = simulate(result.trace, hardware, power=False)
        energy = None if result.access_counts is None else energy_report(result.access_counts, hardware,
                                                                           timed.cycles)
        result = dataclasses.replace(result, cycles=timed.cycles, roofline_cycles=timed.roofline_cycles,
                                     tensorcore_utilization=timed.tensorcore_utilization, energy=energy)
    # drop the trace (millions of events) and the output arrays: the report needs neither
    result = dataclasses.replace(result, trace=None, outputs=None)
    return result, table, time.perf_counter() - start


def _demo_task(item: tuple[int, str, tuple]) -> tuple[int, str, tuple[RunResult, str, float]]:
    """One task of the worker pool: (index, part, `_demo_one` arguments) -> (index, part, its result)."""
    index, part, task = item
    return index, part, _demo_one(*task)


# what a schedule's numeric run and its count-only run must agree on (the trace, hence the timing, is the same
# in both: traffic never depends on the data)
_SAME_IN_BOTH = ("loaded_bytes", "stored_bytes", "rmw_bytes", "hits", "peak_sram_bytes", "macs", "tensorcore_cycles",
                 "blog_loaded_elements", "tensors", "levels")


def _with_timing(numbers: RunResult, timed: RunResult) -> RunResult:
    """The numeric run's result with the cycles of the count-only run timed beside it, after checking that the two
    runs moved the same bytes (an error row, naming the difference, if they did not)."""
    from dsasim.traced.schedule import Status

    differ = [f for f in _SAME_IN_BOTH if getattr(numbers, f) != getattr(timed, f)]
    if (numbers.status == Status.OVERFLOW) != (timed.status == Status.OVERFLOW) or differ:
        what = ", ".join(f"{f} {getattr(numbers, f)!r} vs {getattr(timed, f)!r}" for f in differ[:2]) or \
            f"status {numbers.status} vs {timed.status} ({timed.message})"
        return dataclasses.replace(numbers, status=Status.ERROR, message=(
            f"the numeric run and the count-only run timed beside it differ ({what}): a schedule's traffic must not "
            f"depend on its data (a count-only run has none)"))
    return dataclasses.replace(numbers, cycles=timed.cycles, roofline_cycles=timed.roofline_cycles,
                               tensorcore_utilization=timed.tensorcore_utilization, energy=timed.energy,
                               access_counts=timed.access_counts, message=numbers.message or timed.message)


def _ignore_sigint() -> None:
    """Worker initializer: Ctrl-C reaches the whole process group; only the parent handles it (and ends us)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def run(args: argparse.Namespace) -> int:
    """Handle `dsasim demo`: 0, or 1 when a schedule fails (an overflow is a finding, not a failure); a mistake
    in the command line raises CliError."""
    schedules = find_schedules(args.only)
    for flag, name in (("--per-tensor", args.per_tensor), ("--by-scope", args.by_scope)):
        if name and name not in {s.name for s in schedules}:
            raise CliError(f"{flag} {name!r} is not among the schedules run; add it to --only")
    try:
        override = load_hardware(args.hardware) if args.hardware is not None else None
    except ValueError as err:
        raise CliError(str(err)) from None
    check_outputs(args, [("--json", args.json)], schedule_inputs(args.only))
    json_path = output_file("--json", args.json) if args.json is not None else None
    jobs = max(1, min(args.jobs, len(schedules)))
    numeric, timing = not args.count_only, not args.no_timing
    # With several workers a numeric, timed schedule is two tasks: its numeric run (data, torch check, no trace)
    # and a count-only run that records the same trace and times it, on whichever worker is free. demo1's timing
    # then runs beside its numeric trace instead of after it. Numeric runs are queued first, the longest pole.
    split = numeric and timing and jobs > 1
    try:  # (a user's schedule may name a preset that does not exist)
        hardwares = [override or load_hardware(schedule.hardware) for schedule in schedules]
    except ValueError as err:
        raise CliError(str(err)) from None
    tasks: list[tuple[int, str, tuple]] = []
    for part in (("numbers", "timing") if split else ("whole",)):
        for index, schedule in enumerate(schedules):
            hardware = hardwares[index]
            by_scope = schedule.name == args.by_scope and part != "numbers"
            tasks.append((index, part, (schedule.name, hardware, numeric and part != "timing", args.seed, by_scope,
                                        timing and part != "numbers", args.timing_event_limit, args.blog_quirks)))
    results: list[RunResult | None] = [None] * len(schedules)
    scope_tables: list[str] = [""] * len(schedules)
    parts: list[dict[str, tuple[RunResult, float]]] = [{} for _ in schedules]

    def done(index: int, part: str, result: RunResult, table: str, seconds: float) -> None:
        scope_tables[index] = scope_tables[index] or table
        parts[index][part] = (result, seconds)
        if part == "whole":
            results[index] = result
        elif len(parts[index]) == 2:
            results[index] = _with_timing(parts[index]["numbers"][0], parts[index]["timing"][0])
        else:
            return
        if not args.quiet:
            took = ", ".join(f"{p} {parts[index][p][1]:.1f} s" if p != "whole" else f"{parts[index][p][1]:.1f} s"
                             for p in ("whole", "numbers", "timing") if p in parts[index])
            r = results[index]
            print(f"{r.name} on {r.hardware}: {r.status} ({took})", file=sys.stderr, flush=True)

    if jobs == 1:
        for index, part, task in tasks:
            done(index, part, *_demo_one(*task))
    else:
        import multiprocessing

        # fork: the children inherit the imported schedules; each runs whole tasks, results come back as they
        # finish. Leaving the block (Ctrl-C included) terminates the workers at once.
        context = multiprocessing.get_context("fork")
        with context.Pool(jobs, initializer=_ignore_sigint) as pool:
            for index, part, outcome in pool.imap_unordered(_demo_task, tasks):
                done(index, part, *outcome)
    scope_table = next((t for t in scope_tables if t), "")
    print(format_results(results))
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


def add_arguments(demo: argparse.ArgumentParser) -> None:
    """The arguments of `dsasim demo`."""
    demo.add_argument("--only", nargs="+", metavar="NAME",
                      help="run only these schedules: registered names, or MODULE:NAME / FILE.py:NAME naming a "
                           "Schedule (or a list of them) of yours")
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
    demo.add_argument("--timing-event-limit", type=int_at_least(0), default=50_000_000, metavar="EVENTS",
                      help="time only schedules whose trace has at most this many events (default 50,000,000, "
                           "every demo: demo1's 21 M events take ~2 GB and ~2 s to time); a longer trace is "
                           "dropped and its cycles columns stay empty")


COMMAND = Command("demo", "run the demo schedules and print their traffic table", None, add_arguments, run)
