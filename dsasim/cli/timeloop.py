"""`dsasim timeloop PROBLEM ARCH MAPPING`: a Timeloop v0.4 problem, architecture and mapping run through dsasim.

    dsasim timeloop PROBLEM.yaml ARCH.yaml MAPPING.yaml [--accelergy ERT.yaml ART.yaml] [--json PATH]

The three files become a dsasim loop nest on a two-level hardware (`dsasim.architect.studies.timeloop`), run
count-only through the traced memory model; printed per level and data space: dsasim's bytes read and written, and
the scalar reads, fills and updates in Timeloop's terms, then each rule by which Timeloop counts this mapping
differently. With `--accelergy`, the energy of the run priced by that Accelergy table. Anything outside the subset
read (spatial factors, more levels, unknown keys, factors that do not multiply to a dimension) is one line naming
the file and entry, exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys

from dsasim.atomic import write_text_atomic
from pathlib import Path
from typing import Any

from dsasim.cli.common import EXIT_FAILED, CliError, Command, check_outputs, kernel_runner, output_dir, output_file

__all__ = ["COMMAND"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of `dsasim timeloop`."""
    p.add_argument("problem", metavar="PROBLEM.yaml", help="Timeloop v0.4 problem (a conv or a matmul)")
    p.add_argument("arch", metavar="ARCH.yaml", help="Timeloop v0.4 architecture (two storage levels and a MAC)")
    p.add_argument("mapping", metavar="MAPPING.yaml", help="Timeloop v0.4 mapping (temporal factors, permutations)")
    p.add_argument("--accelergy", nargs=2, metavar=("ERT.yaml", "ART.yaml"),
                   help="price the run by the Accelergy ERT and ART summaries of this architecture (Timeloop's "
                        "timeloop-model.ERT_summary.yaml and ART_summary.yaml)")
    p.add_argument("--json", metavar="PATH", help="write the nest, the counts and the rules as JSON")


def run(args: argparse.Namespace) -> int:
    """Handle `dsasim timeloop`: read, run count-only, print the counts side by side, the rules and the energy."""
    from dsasim.architect.model.hierarchy import LevelNest
    from dsasim.architect.studies.timeloop import read_timeloop, rule_differences, timeloop_counts, \
        timeloop_hardware_priced
    from dsasim.view.table import format_table

    accelergy = args.accelergy or []
    inputs = [("PROBLEM", args.problem), ("ARCH", args.arch), ("MAPPING", args.mapping)]
    inputs += [(f"the --accelergy {kind}", path) for kind, path in zip(("ERT", "ART"), accelergy)]
    check_outputs(args, [("--json", args.json)], inputs)
    json_path = output_file("--json", args.json) if args.json is not None else None
    try:
        spec = read_timeloop(args.problem, args.arch, args.mapping)
        hardware = timeloop_hardware_priced(spec, *accelergy) if accelergy else spec.hardware
    except ValueError as err:
        raise CliError(str(err)) from None
    spec = spec.on(hardware)
    levels = isinstance(spec.nest, LevelNest)
    runner = kernel_runner("levelnest" if levels else "loopnest")
    if runner is None:
        raise CliError("no loop-nest kernel is installed (entry points dsasim.loopnest_runner, "
                       "dsasim.levelnest_runner); reinstall dsasim")
    result = runner(spec.nest, record_trace=False) if levels else runner(spec.nest, hardware, record_trace=False)
    if result.status.value != "ok":  # Timeloop rejects such a mapping too: its tiles must fit the buffer
        first = result.message.strip().split("\n")[0]
        print(f"dsasim timeloop: {args.mapping}: the mapping's tiles do not fit: {first}", file=sys.stderr)
        return EXIT_FAILED
    counts = result.access_counts
    rows = timeloop_counts(spec, counts)
    rules = rule_differences(spec)
    print(spec.nest.format() if levels else spec.nest.format(hardware.word_bytes))
    print(f"\n{spec.nest.problem.macs:,} MACs on {spec.compute} (Timeloop's computes); "
          f"{hardware.word_bytes}-byte words\n")
    print(format_table(("level", "data space", "dsasim read B", "dsasim written B", "reads", "fills", "updates"),
                       [(r.level, r.data_space, r.dsasim_read_bytes, r.dsasim_write_bytes, r.reads, r.fills,
                         r.updates) for r in rows], left=(0, 1)))
    print("(reads, fills, updates: Timeloop's scalar counts, derived from dsasim's bytes)")
    if rules:
        print("\nwhere Timeloop counts differently:")
        print("\n".join(f"- {line}" for line in rules))
    for note in spec.notes:
        print(f"note: {note}")
    energy = None
    if accelergy:
        from dsasim.energy.report import energy_report

        cycles = spec.nest.problem.macs  # one MAC per cycle, as Timeloop's unit with no bandwidth stall
        energy = energy_report(counts, hardware, cycles)
        print(f"\nenergy (Accelergy table {Path(accelergy[0]).name}; leakage over {cycles:,} cycles, one MAC per "
              f"cycle):")
        print(format_table(("component", "pJ"), [(k, f"{v:.2f}") for k, v in energy.energy_breakdown_pj.items()]
                           + [("total", f"{energy.energy_pj:.2f}")]))
        print("(dsasim prices DDR per byte, Timeloop per whole access of the backing store's width, and charges DDR "
              "no leakage)")
    if json_path is not None:
        data = {"level_nest" if levels else "loop_nest": spec.nest.to_json(), "hardware": hardware.name,
                "macs": spec.nest.problem.macs,
                "counts": [{"level": r.level, "data_space": r.data_space, "tensor": r.tensor,
                            "dsasim_read_bytes": r.dsasim_read_bytes, "dsasim_write_bytes": r.dsasim_write_bytes,
                            "reads": r.reads, "fills": r.fills, "updates": r.updates} for r in rows],
                "rules": list(rules), "notes": list(spec.notes)}
        if energy is not None:
            data["energy"] = energy.to_json()
        write_text_atomic(json_path, json.dumps(data, indent=2) + "\n")
    return 0


COMMAND = Command(
    "timeloop", "run a Timeloop problem, architecture and mapping through dsasim",
    "Read a Timeloop v0.4 problem, architecture and mapping (YAML) as a dsasim loop nest, run it count-only through "
    "the traced memory model, and print per level and data space dsasim's bytes beside Timeloop's reads, fills and "
    "updates, with each rule by which the two count differently; --accelergy prices the run.",
    add_arguments, run)
