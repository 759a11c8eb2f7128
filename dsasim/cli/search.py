"""`dsasim search LAYER`: the best loop nest of a layer under an SRAM capacity.

    dsasim search LAYER [--sram BYTES] [--hardware PRESET|FILE] [--objective traffic|cycles] [--json PATH]
                        [--timeloop DIR] [--zigzag DIR] [--confirm N] [--no-simulate] [--force]

LAYER is a built-in name (blog-conv, resnet50.res2a_branch2b, ..., gemm-1024) or a shape spec such as
conv:ic=64,oc=64,h=56,k=3,p=1 or gemm:m=512,n=512,k=512 (see `dsasim.architect.problems.layers`), or a chain of layers to
fuse (resnet18.layer1.0, resnet50.res2a, resnet50.res2b, mobilenetv2.features.1 .. 17; `dsasim.architect.problems.chain`):
then the search compares the whole chain fused, layer by layer and every split between (`ChainSearchResult.to_json`: keys
fused, partition, layer_by_layer_bytes, recomputed_macs, intermediate_peak_bytes, parts). Sizes accept 65536, 64KiB,
1.5MiB. A layer of a ZigZag workload YAML is `zigzag:FILE.yaml#ID` or `FILE.yaml#ID` (`dsasim.architect.problems.zigzag_workload`);
`--zigzag DIR` and `--timeloop DIR` write the best loop nest in those formats (`dsasim.cli.nest_export`). `--json` writes the best schedule with its figures; its `loop_nest` key is loadable by
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

from dsasim.architect.studies.layer_target import LAYER_CONFIRM
from dsasim.architect.search.objective import DEFAULT_OBJECTIVE
from dsasim.architect.studies.target import SearchOptions
from dsasim.atomic import write_text_atomic
from dsasim.hardware import PRESETS, load_hardware
from dsasim.cli.common import (EXIT_FAILED, CliError, Command, add_objective_argument, check_outputs, int_at_least,
                               kernel_runner, output_file, warner)
from dsasim.cli.nest_export import add_export_arguments, nest_exports

if TYPE_CHECKING:
    from dsasim.architect.studies.target import Target

__all__ = ["COMMAND", "progress_callback"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of `dsasim search`."""
    p.add_argument("layer", help="blog-conv, resnet50.<name>, gemm-1024, a spec like conv:ic=64,oc=64,h=56,k=3,p=1, "
                                 "a chain to fuse: resnet18.layer1.0, resnet50.res2a, resnet50.res2b, "
                                 "mobilenetv2.features.N, or a layer of a ZigZag workload: zigzag:FILE.yaml#ID")
    p.add_argument("--sram", metavar="BYTES", help="SRAM capacity (default: the hardware's), e.g. 1536KiB")
    p.add_argument("--hardware", metavar="PRESET|FILE", default="blog",
                   help=f"hardware preset ({', '.join(PRESETS)}) or TOML file (default: blog)")
    add_objective_argument(p, DEFAULT_OBJECTIVE.name)
    p.add_argument("--json", metavar="PATH", help="write the best schedule and its figures as JSON")
    add_export_arguments(p)
    p.add_argument("--confirm", type=int_at_least(0), default=None, metavar="N",
                   help=f"re-run the top N candidates through the trace and timing simulator (default "
                        f"{LAYER_CONFIRM.default}; 0: none); a chain, or hardware with levels below the SRAM, re-runs its "
                        f"chosen schedule: 0 or 1 (the default there)")
    p.add_argument("--no-slide", action="store_true", help="leave sliding-window reuse out of the search (every "
                   "box reloaded), to see what it gains")
    p.add_argument("--no-simulate", action="store_true", help="trace the top candidates but skip the timing "
                                                                "simulation (cycles are then estimates)")
    p.add_argument("--force", action="store_true", help="run work estimated far beyond the usual (hours) "
                                                          "instead of refusing it; the estimate is still printed")


def _size(flag: str, text: str) -> int:
    """A size option in bytes; ValueError naming the flag (too large, not a size)."""
    from dsasim.architect.studies.sweep import parse_bytes
    try:
        return parse_bytes(text)
    except ValueError as err:
        raise ValueError(f"{flag}: {err}") from None


PROGRESS_SECONDS = 5.0  # work estimated longer than this gets a progress bar carrying the estimate


@contextmanager
def progress_callback(label: str, work: Any, enabled: bool = True,
                      min_seconds: float | None = None) -> Iterator[Any]:
    """A progress callback for a search or sweep: a bar on stderr (`sweep.ProgressBar`) labelled with the work's
    estimate when `enabled` and the estimate (work.seconds) is longer than `min_seconds` (default
    PROGRESS_SECONDS), shown from the first progress on (so that a refusal before the work starts stays one line);
    a no-op otherwise."""
    from dsasim.architect.search.layer_search import _duration
    from dsasim.architect.studies.sweep import ProgressBar

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


def _target(args: argparse.Namespace) -> tuple[Target, int]:
    """The target LAYER names on --hardware (its kind picked by `target_of`) and the --sram size (default: the
    hardware's), checked before any search; a mistake raises CliError."""
    from dsasim.architect.studies.target_kinds import target_of

    try:
        hardware = load_hardware(args.hardware)
        target = target_of(args.layer, hardware)
        sram = _size("--sram", args.sram) if args.sram is not None else hardware.sram_bytes
        if sram < hardware.word_bytes:
            raise ValueError(f"--sram {sram:,} B is below one {hardware.word_bytes}-byte word of {hardware.name}")
        dataclasses.replace(hardware, sram_bytes=sram)  # the hardware's own range check, before the search
    except ValueError as err:
        raise CliError(str(err)) from None
    return target, sram


def run(args: argparse.Namespace) -> int:
    """Handle `dsasim search` for every target kind (`dsasim.architect.studies.target_kinds`): parse the target, check the
    options and outputs, estimate the work, search, print its text (`dsasim.view.target_text`), write `choice.to_json()`. An exit
    status; a mistake in the command line raises CliError (exit 2)."""
    from dsasim.view.target_text import format_choice

    if args.no_simulate and args.confirm == 0:
        raise CliError("--no-simulate does not apply with --confirm 0 (nothing is traced, so nothing is timed); "
                       "leave one out")
    target, sram = _target(args)
    options = SearchOptions(confirm=args.confirm, simulate=not args.no_simulate, slide=not args.no_slide,
                            force=args.force, warn=warner("search"), kernels=kernel_runner)
    try:
        target.confirm_count(options)  # an option the kind refuses, before any work
    except ValueError as err:
        raise CliError(str(err)) from None
    exports = nest_exports(args, args.layer, target)  # --timeloop DIR, --zigzag DIR: checked before any work
    check_outputs(args, [("--json", args.json), *(use for e in exports for use in e.uses())])
    json_path = output_file("--json", args.json) if args.json is not None else None
    t0 = time.perf_counter()
    with _as_cli_errors(args.layer):
        work = target.estimate_work(sram, options)
        with progress_callback(target.progress_label, work) as progress:
            choice = target.search(sram, args.objective, dataclasses.replace(options, progress=progress))
    wall = time.perf_counter() - t0
    if not choice.fits:
        print(f"dsasim search: {choice.no_fit_reason}", file=sys.stderr)
        return EXIT_FAILED
    print(format_choice(choice, wall))
    if json_path is not None:
        write_text_atomic(json_path, json.dumps(choice.to_json(), indent=2) + "\n")
    for export in exports:
        written = export.write(choice.schedule, dataclasses.replace(target.hardware, sram_bytes=sram))
        print(f"wrote {export.format.what}: {', '.join(str(p) for p in written)}")
    return 0


COMMAND = Command(
    "search", "search the best loop nest of a layer under an SRAM capacity",
    "Enumerate loop orders x tile sizes x staging levels x buffering of LAYER, evaluate them with the analytic "
    "traffic model, print the best schedule as loops with its traffic beside the lower bound, and re-run the top "
    "few through the trace and the timing simulator.",
    add_arguments, run)
