"""`dsasim hardware [PRESET|FILE]`: a hardware description with every energy and area figure and its source.

    dsasim hardware [PRESET|FILE ...] [--json PATH]

Prints the description's fields, then each memory level's and compute unit's energy per access or operation,
leakage and area — a figure the description gives marked as given, every default with the published source it
comes from (docs/model/energy.md) — and the total area. With no name: the presets.
"""

from __future__ import annotations

import argparse
import dataclasses
import json

from dsasim.atomic import write_text_atomic
from dsasim.cli.common import CliError, Command, check_outputs, output_file
from dsasim.hardware import PRESETS, load_hardware

__all__ = ["COMMAND"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of `dsasim hardware`."""
    p.add_argument("names", nargs="*", metavar="PRESET|FILE",
                   help=f"hardware presets ({', '.join(PRESETS)}) or TOML files (default: every preset)")
    p.add_argument("--json", metavar="PATH", help="write the fields and the energy and area figures as JSON")


def run(args: argparse.Namespace) -> int:
    """Handle `dsasim hardware`: print each description's fields and its energy and area figures with sources."""
    from dsasim.energy.costs import EnergyCosts
    from dsasim.energy.sources import SOURCES
    from dsasim.view.table import format_table

    check_outputs(args, [("--json", args.json)])
    json_path = output_file("--json", args.json) if args.json is not None else None
    try:
        hardwares = [load_hardware(name) for name in (args.names or list(PRESETS))]
    except ValueError as err:
        raise CliError(str(err)) from None
    out = []
    for i, hw in enumerate(hardwares):
        costs = EnergyCosts.of(hw)
        if i:
            print()
        fields = {f.name: getattr(hw, f.name) for f in dataclasses.fields(hw) if f.name not in ("name", "inner_levels")}
        print(f"{hw.name}: " + ", ".join(f"{k}={v}" for k, v in fields.items() if v is not None))
        for lv in hw.inner_levels:
            print(f"  inner level {lv.name}: {lv.capacity_bytes:,} B, {lv.bytes_per_cycle:g} B/cycle from "
                  f"{lv.parent}, holds {', '.join(lv.holds)}")
        print(format_table(("component", "figure", "value", "source"), costs.rows()))
        print(f"area: {costs.area_mm2:.4g} mm2 on chip (DDR off-chip)")
        out.append({"name": hw.name, "fields": {k: v for k, v in fields.items()},
                    "inner_levels": [dataclasses.asdict(lv) for lv in hw.inner_levels], "energy": costs.to_json()})
    print("\nsources: " + "; ".join(f"[{s.key}] {s.citation}" for s in SOURCES.values()))
    if json_path is not None:
        write_text_atomic(json_path, json.dumps({"hardware": out, "sources": {s.key: s.citation
                                                                              for s in SOURCES.values()}},
                                                indent=2) + "\n")
        print(f"wrote {json_path}")
    return 0


COMMAND = Command(
    "hardware", "show a hardware description with its energy and area figures and their sources",
    "Print a hardware preset or TOML file: its fields, then every memory level's and compute unit's energy per "
    "access or operation, leakage and area, each with the published source it comes from (or 'given'), and the "
    "total area.", add_arguments, run)
