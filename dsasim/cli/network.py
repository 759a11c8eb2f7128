"""`dsasim network NAME|MODULE:ATTR`: a whole network under one SRAM size, layer by layer.

    dsasim network NAME|MODULE:ATTR [--input-shape N,C,H,W] [--sram SIZE] [--hardware PRESET|FILE]
                   [--objective traffic|cycles] [--no-fusion] [--jobs N] [--json PATH] [--plot PATH] [--top K] [--quiet]

NAME is a preset (resnet18, resnet50, resnet50-caffe, mobilenetv2, bert-base-layer[:seq=N]); MODULE:ATTR imports a
user's nn.Module (an instance, or a class or function called with no arguments), e.g. mypkg.models:Net, with the
example input from --input-shape (or an `example_input_shape` attribute). Per layer: the best schedule under the
SRAM size (traffic and estimated cycles), its bound and compulsory traffic, TensorCore utilization and padding
waste; a run of convs that feed only each other (a chain) is one entry with its best fused partition
(--no-fusion: every layer on its own); network totals and the layers that dominate. torch and the search are
imported by the run.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from dsasim.cli.common import CliError, Command, int_at_least, json_and_plot_paths, write_outputs
from dsasim.cli.table import format_table
from dsasim.hardware import load_hardware

if TYPE_CHECKING:
    from dsasim.architect.network_eval import NetworkResult

__all__ = ["COMMAND", "format_network", "add_network_source"]


def add_network_source(p: argparse.ArgumentParser) -> None:
    """--input-shape and --no-fusion, shared with `dsasim sweep-sram --network`."""
    p.add_argument("--input-shape", metavar="N,C,H,W",
                   help="the example input's shape (a MODULE:ATTR network needs it unless it defines "
                        "example_input_shape; a preset uses its own by default)")
    p.add_argument("--no-fusion", action="store_true",
                   help="(networks) every layer on its own: no chain of convs is fused (epilogues still are)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of `dsasim network`."""
    p.add_argument("network", help="a preset (resnet18, resnet50, resnet50-caffe, mobilenetv2, "
                                   "bert-base-layer[:seq=N]) or MODULE:ATTR (an nn.Module of yours)")
    add_network_source(p)
    p.add_argument("--sram", metavar="SIZE", help="SRAM size, e.g. 512KiB (default: the hardware's)")
    p.add_argument("--hardware", metavar="PRESET|FILE", default="blog", help="hardware preset or TOML file")
    p.add_argument("--objective", choices=("traffic", "cycles"), default="traffic",
                   help="per layer, the best schedule by traffic (default) or by estimated cycles")
    p.add_argument("--jobs", type=int_at_least(1), default=2, help="worker processes for the layer searches")
    p.add_argument("--json", metavar="PATH", help="write the result as JSON")
    p.add_argument("--plot", metavar="PATH", help="write a per-layer bar chart (traffic and cycles, bound)")
    p.add_argument("--top", type=int_at_least(1), default=5, help="how many dominant layers to name (default 5)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _pct(value: float | None) -> str | None:
    return None if value is None else f"{100 * value:.0f}%"


def format_network(result: NetworkResult, top: int = 5) -> str:
    """The per-layer table, the totals and the dominant layers."""
    from dsasim.architect.sweep import format_bytes

    header = ("layer", "op", "shape", "status", "traffic B", "lower bound B", "compulsory B", "cycles (est)",
              "TC util", "padding waste")
    rows = []
    for x in result.layers:
        ok = x.status == "ok"
        rows.append((x.layer.name, x.layer.op, x.layer.shape, x.status, x.traffic_bytes if ok else None,
                     x.lower_bound_bytes if ok else None, x.compulsory_bytes if ok else None,
                     x.cycles if ok else None, _pct(x.tensorcore_utilization),
                     None if x.tensorcore_utilization is None else _pct(1 - x.tensorcore_utilization)))
    lines = [format_table(header, rows), ""]
    lines.append(f"{result.network.name} on {result.hardware.name}, SRAM {format_bytes(result.sram_bytes)}: "
                 f"traffic {result.traffic_bytes:,} B (loaded {result.loaded_bytes:,}, stored "
                 f"{result.stored_bytes:,}), lower bound {result.lower_bound_bytes:,} B, compulsory "
                 f"{result.compulsory_bytes:,} B, {result.cycles:,} cycles (estimated), {result.macs:,} MACs")
    if result.traffic_bytes and result.lower_bound_bytes:
        lines.append(f"best / bound {result.traffic_bytes / result.lower_bound_bytes:.3f}; "
                     f"{len(result.layers)} layers")
    lines.append("dominant layers (share of cycles, of traffic): " + "; ".join(
        f"{x.layer.name} {100 * c:.1f}%, {100 * t:.1f}%" for x, c, t in result.dominant(top)))
    for label, names in (("unmodelled", result.unmodelled), ("unplaceable", result.unplaceable)):
        if names:
            reasons = {x.layer.name: x.reason for x in result.layers}
            lines.append(f"{len(names)} {label} (left out of the totals): " +
                         "; ".join(f"{n}: {reasons[n]}" for n in names))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Handle `dsasim network`: 0, or 1 when a layer could not be placed or modelled (the rest is reported)."""
    from dsasim.architect.executor import open_executor
    from dsasim.architect.network import NetworkImportError, load_network, parse_input_shape
    from dsasim.architect.network_eval import evaluate_network
    from dsasim.architect.sweep import parse_bytes

    try:
        hardware = load_hardware(args.hardware)
        hardware.require_one_level("the network evaluation")
        sram = parse_bytes(args.sram) if args.sram is not None else hardware.sram_bytes
        if sram < hardware.word_bytes:
            raise ValueError(f"--sram {args.sram}: must hold at least one {hardware.word_bytes}-byte word")
        shape = parse_input_shape(args.input_shape) if args.input_shape else None
        json_path, plot_path = json_and_plot_paths(args)
        network = load_network(args.network, shape)
    except (ValueError, NetworkImportError) as err:
        raise CliError(str(err)) from None
    executor = open_executor("process", args.jobs)
    try:
        result = evaluate_network(network, [hardware], [sram], executor, progress=not args.quiet,
                                  objective=args.objective, fusion=not args.no_fusion)[0][0]
    finally:
        executor.close()
    print(format_network(result, args.top))
    write_outputs(result, json_path, plot_path, "plot_network")
    return 0 if not result.unplaceable and not result.unmodelled else 1


COMMAND = Command(
    "network", "a whole network's traffic and cycles under one SRAM size, per layer",
    "Reads a preset or your nn.Module through torch.fx, searches the best schedule of every layer under the "
    "SRAM size (each distinct shape once) and prints per layer and in total: traffic, cycles, bound, compulsory "
    "traffic, TensorCore utilization; JSON and a per-layer bar chart.",
    add_arguments, run)
