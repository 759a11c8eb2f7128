"""Conv mapping variants (after Glenside's im2col rewrite): one convolution mapped three ways on the TensorCore.

`conv_mapping_schedule(problem, mapping)` builds a `Schedule` for any dense `ConvProblem` (batch, stride, padding,
dilation, KxK; groups = 1) in one of three mappings, which share the band loop, the halo arithmetic and the weight
staging:

- **direct** (`tc.conv2d`): the windowed conv on the 16 input x 24 output channel array, the generalisation of
  `kernels.resnet_schedules.row_slab_conv` to any stride and kernel (the same scopes and accesses). The input
  channels map to the 16 lanes, so one step covers ceil(IC/16) x ceil(OC/24) blocks per output pixel *per tap*:
  cycles = ceil(IC/16) * ceil(OC/24) * N*OH*OW * KH*KW.
- **im2col-ddr**: stage 1 gathers every band's windows on the vector unit (`VectorUnit.im2col`) into the patch
  matrix, a DDR intermediate `patches` of N*OH*OW rows (pixels n, oh, ow) x IC*KH*KW columns (c, kh, kw), and
  stores it; stage 2 loads it back band by band and runs one GEMM per band (`tc.matmul`) with the weight
  reshaped to (IC*KH*KW, OC). The patch matrix's write and re-read are real DDR traffic: 2 * N*OH*OW * IC*KH*KW
  words, KH*KW/stride^2 times the image each way.
- **im2col-chip**: the same gather into an on-chip tensor (`Session.on_chip`, never in DDR), then the GEMM on it.
  The GEMM's reduction is IC*KH*KW long, so it pads to whole 16-blocks once: cycles = ceil(IC*KH*KW/16) *
  ceil(OC/24) * N*OH*OW, against ceil(IC/16) * KH*KW for the direct mapping (conv1: 10 against 49 steps of 16).

Layouts (what each workload's DDR tensors are): the image is NCHW for all three. The direct mapping takes the
weight as torch's (OC, IC, KH, KW) and writes the output NCHW; the im2col mappings take the weight as the GEMM's
(IC*KH*KW, OC) matrix (torch's weight reshaped to (OC, IC*KH*KW) and transposed, prepared offline like any
inference weight) and write the GEMM's (N*OH*OW, OC) output, i.e. NHWC. Every tensor has the same bytes in each
mapping; the references compute the same conv in torch and lay it out so.

Tiling (the same in all three): the weight is resident (one load, in a `weights` scope); the output is cut into
bands of `rows` output rows x the full width x all output channels, each band a `ways`-way buffered scope (default
2: the next band's loads overlap this band's compute, the previous band's store meanwhile). A band loads the tight
input rows its windows read (`Conv2dBoundsInfer.input_region`; padding is made on chip, never loaded), so bands
reload the KH - stride halo rows between them, as `row_slab_conv` does. The default `rows` (`default_rows`) is
the largest divisor of OH (no ragged band) giving at most about 256 output pixels per band, shrunk until the
mapping fits the SRAM: 256 pixels are >= 256 TensorCore cycles per band, which hide the band's three DMA setups
(64 cycles each on `blog`), and a small band keeps the pipeline's fill (the first band's load and gather) and
drain (the last band's store) below a few percent of the layer. ResNet-50 conv1 gets 2 rows (224 pixels),
res2a_branch2b 4 (224). A `rows` that does not fit the hardware's SRAM is a ValueError saying what fits.

The rule (`fastest_mapping`, from `estimate_mapping`): per mapping, the TensorCore cycles above, the vector
cycles of the gather (ceil(band pixels * IC*KH*KW / lanes) per band), and the DDR cycles of every transfer
(setup + bytes / bandwidth; the patch matrix twice for im2col-ddr) give an estimate: the first band's load (and
gather) + max(TensorCore, vector, DDR of the rest) + the last band's store; im2col-ddr runs its two stages one
after the other. The mapping with the fewest estimated cycles among those that fit the SRAM wins, ties to the
simpler one (direct, then im2col-chip). `python -m kernels.conv_mapping` prints the table of every mapping of
four ResNet-50 layers, traced and timed, beside the rule's estimate and pick.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

from dsasim import (Accelerator, Conv2dBoundsInfer, ConvProblem, GlobalHierarchy, Schedule, Segment, Session,
                    TensorCore, Tile, TracedArray, VectorUnit, Workload, preset)
from dsasim.cost import (band_pipeline_cycles, ddr_port, port_cycles, tensorcore_cycles, transfer_cycles,
                         vector_cycles)
from dsasim.util import Region

if TYPE_CHECKING:
    import torch

MAPPINGS: tuple[str, ...] = ("direct", "im2col-ddr", "im2col-chip")
BAND_PIXELS = 256  # the default band's size in output pixels (see the module docstring)


def _check_mapping(mapping: object) -> str:
    """`mapping` if it is one of MAPPINGS, else a ValueError naming them."""
    if mapping not in MAPPINGS:
        raise ValueError(f"unknown conv mapping {mapping!r}; pass one of {', '.join(MAPPINGS)}")
    return mapping  # type: ignore[return-value]


def _check_problem(problem: object) -> ConvProblem:
    """A dense ConvProblem, else a ValueError saying what to pass."""
    if not isinstance(problem, ConvProblem):
        raise ValueError(f"conv mapping needs a ConvProblem (e.g. ConvProblem(1, 64, 64, 56, 56, 3, padding=1) or "
                         f"parse_layer('resnet50.res2a_branch2b')), got {type(problem).__name__}")
    if problem.groups != 1:
        raise ValueError(f"{problem.name}: the conv mapping variants take dense convs (groups = 1), got groups = "
                         f"{problem.groups}; a grouped conv's im2col is one GEMM per group (not modelled here)")
    return problem


def _check_count(name: str, value: object, low: int, high: int, hint: str) -> int:
    """An int in [low, high], else a ValueError with `hint`."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in {low}..{high}, got {value!r}; {hint}")
    return value


def patch_columns(problem: ConvProblem) -> int:
    """The GEMM's reduction length IC*KH*KW (elements per patch-matrix row)."""
    return problem.ic * problem.kh * problem.kw


def pixels(problem: ConvProblem) -> int:
    """Output pixels N*OH*OW (patch-matrix and GEMM-output rows)."""
    return problem.n * problem.oh * problem.ow


def _bounds(problem: ConvProblem) -> Conv2dBoundsInfer:
    return Conv2dBoundsInfer(problem.ic, problem.oc, (problem.kh, problem.kw), problem.stride, problem.padding,
                             problem.dilation, 1, (problem.n, problem.ic, problem.h, problem.w))


@dataclass(frozen=True)
class Band:
    """One band of output rows (full width, all channels): its NCHW output region, its rows (p0, p1) of the
    patch matrix and GEMM output, the tight input region its windows read and the on-chip padding (top, bottom,
    left, right) in elements."""

    out_region: Region
    pixel_rows: tuple[int, int]
    input_region: Region
    padding: tuple[int, int, int, int]

    @property
    def pixel_count(self) -> int:
        """Output pixels in the band."""
        return self.pixel_rows[1] - self.pixel_rows[0]

    @property
    def input_elements(self) -> int:
        """Elements of the band's input tile."""
        return math.prod(b - a for a, b in self.input_region)


def bands(problem: ConvProblem, rows: int) -> list[Band]:
    """The bands of `rows` output rows, image by image, top to bottom (the last one may be ragged)."""
    rows = _check_count("rows", rows, 1, problem.oh, f"a band holds 1..OH = {problem.oh} output rows")
    conv = _bounds(problem)
    out: list[Band] = []
    for b in range(problem.n):
        for oh0 in range(0, problem.oh, rows):
            oh1 = min(oh0 + rows, problem.oh)
            region = (Segment(b, b + 1), Segment(0, problem.oc), Segment(oh0, oh1), Segment(0, problem.ow))
            inputs = conv.input_region(region)
            if any(seg.start == seg.stop for seg in inputs):
                raise ValueError(f"{problem.name}: output rows {oh0}:{oh1} read only padding (padding "
                                 f"{problem.padding} reaches past the {problem.kh}x{problem.kw} kernel's extent); "
                                 f"such a band computes nothing, which these kernels do not model: use less padding")
            first = (b * problem.oh + oh0) * problem.ow
            out.append(Band(region, (first, first + (oh1 - oh0) * problem.ow), inputs, conv.padding_for(region)))
    return out


# -- workloads -----------------------------------------------------------------------------------------------------

def conv_mapping_workload(problem: ConvProblem, mapping: str) -> Workload:
    """The DDR tensors of `mapping` (see the module docstring's layouts) and a torch reference for them."""
    problem, mapping = _check_problem(problem), _check_mapping(mapping)
    stride, padding, dilation = problem.stride, problem.padding, problem.dilation
    image_shape = (problem.n, problem.ic, problem.h, problem.w)
    oc, k = problem.oc, patch_columns(problem)
    torch_weight = (oc, problem.ic, problem.kh, problem.kw)

    if mapping == "direct":
        def reference(image: torch.Tensor, weight: torch.Tensor) -> dict[str, torch.Tensor]:
            import torch.nn.functional as F  # only a numeric run checks numbers: count-only runs skip torch

            return {"output": F.conv2d(image, weight, stride=stride, padding=padding, dilation=dilation)}

        return Workload(f"{problem.name}:direct", inputs={"image": image_shape, "weight": torch_weight},
                        outputs={"output": (problem.n, oc, problem.oh, problem.ow)}, reference=reference)

    def gemm_reference(image: torch.Tensor, weight: torch.Tensor) -> dict[str, torch.Tensor]:
        import torch.nn.functional as F

        nchw = F.conv2d(image, weight.T.reshape(torch_weight), stride=stride, padding=padding, dilation=dilation)
        return {"output": nchw.permute(0, 2, 3, 1).reshape(-1, oc)}

    intermediates = {"patches": (pixels(problem), k)} if mapping == "im2col-ddr" else {}
    return Workload(f"{problem.name}:{mapping}", inputs={"image": image_shape, "weight": (k, oc)},
                    outputs={"output": (pixels(problem), oc)}, reference=gemm_reference, intermediates=intermediates)


# -- SRAM ----------------------------------------------------------------------------------------------------------

def footprint_bytes(problem: ConvProblem, mapping: str, rows: int, ways: int = 2, word_bytes: int = 1) -> int:
    """Peak SRAM in bytes that the schedule reserves: the resident weight plus `ways` copies of the largest band's
    buffers (direct: input + output tile; im2col-chip: + the patch tile; im2col-ddr: the larger of stage 1's input
    + patch tile and stage 2's weight + `ways` x (patch + output tile))."""
    problem, mapping = _check_problem(problem), _check_mapping(mapping)
    k, oc = patch_columns(problem), problem.oc
    weight = k * oc
    all_bands = bands(problem, rows)
    if mapping == "direct":
        peak = weight + ways * max(b.input_elements + b.pixel_count * oc for b in all_bands)
    elif mapping == "im2col-chip":
        peak = weight + ways * max(b.input_elements + b.pixel_count * (k + oc) for b in all_bands)
    else:
        gather = ways * max(b.input_elements + b.pixel_count * k for b in all_bands)
        gemm = weight + ways * max(b.pixel_count * (k + oc) for b in all_bands)
        peak = max(gather, gemm)
    return peak * word_bytes


def _divisors_descending(n: int, at_most: int) -> list[int]:
    return [d for d in range(min(n, at_most), 0, -1) if n % d == 0]


def default_rows(problem: ConvProblem, mapping: str, hardware: Accelerator, ways: int = 2) -> int:
    """The default band height in output rows (module docstring): the largest divisor of OH with at most about
    BAND_PIXELS output pixels per band whose footprint fits `hardware.sram_bytes`; ValueError if none fits."""
    problem, mapping = _check_problem(problem), _check_mapping(mapping)
    target = max(1, math.ceil(BAND_PIXELS / problem.ow))
    for rows in _divisors_descending(problem.oh, target):
        if footprint_bytes(problem, mapping, rows, ways, hardware.word_bytes) <= hardware.sram_bytes:
            return rows
    needed = footprint_bytes(problem, mapping, 1, ways, hardware.word_bytes)
    raise ValueError(f"{problem.name}: mapping {mapping!r} does not fit {hardware.name}'s SRAM of "
                     f"{hardware.sram_bytes:,} B even with 1-row bands ({needed:,} B with {ways} ways: the whole "
                     f"weight, {patch_columns(problem) * problem.oc * hardware.word_bytes:,} B, stays resident); "
                     f"use ways=1, another mapping, or hardware with more SRAM")


# -- the schedules -------------------------------------------------------------------------------------------------

def conv_mapping_body(problem: ConvProblem, mapping: str, rows: int, ways: int = 2) -> Callable[..., None]:
    """The schedule body of `mapping` with bands of `rows` output rows in `ways`-way scopes (module docstring)."""
    problem, mapping = _check_problem(problem), _check_mapping(mapping)
    all_bands = bands(problem, rows)
    stride, dilation, kernel = problem.stride, problem.dilation, (problem.kh, problem.kw)

    def direct(s: Session, image: TracedArray, weight: TracedArray, output: TracedArray) -> None:
        tc = TensorCore(s)
        with GlobalHierarchy(s, "weights"):
            w = weight[:, :, :, :]
            for band in all_bands:
                with GlobalHierarchy(s, "slab", ways=ways):
                    x = image[band.input_region]
                    y = output[band.out_region]
                    y += tc.conv2d(x, w, stride=stride, dilation=dilation, padding=band.padding)

    def gather(vector: VectorUnit, image: TracedArray, patches: TracedArray, band: Band) -> Tile:
        """The band's patch tile (opened as zeros: on chip, or a DDR region never stored before), filled."""
        p = patches[band.pixel_rows, :]
        p.assign(vector.im2col(image[band.input_region], kernel, stride=stride, dilation=dilation,
                               padding=band.padding))
        return p

    def im2col_chip(s: Session, image: TracedArray, weight: TracedArray, output: TracedArray) -> None:
        tc, vector = TensorCore(s), VectorUnit(s)
        patches = s.on_chip("patches", (pixels(problem), patch_columns(problem)))
        with GlobalHierarchy(s, "weights"):
            w = weight[:, :]
            for band in all_bands:
                with GlobalHierarchy(s, "slab", ways=ways):
                    p = gather(vector, image, patches, band)
                    y = output[band.pixel_rows, :]
                    y += tc.matmul(p, w)

    def im2col_ddr(s: Session, image: TracedArray, weight: TracedArray, patches: TracedArray,
                   output: TracedArray) -> None:
        tc, vector = TensorCore(s), VectorUnit(s)
        for band in all_bands:
            with GlobalHierarchy(s, "im2col", ways=ways):
                gather(vector, image, patches, band)  # stored to DDR when the scope exits
        with GlobalHierarchy(s, "weights"):
            w = weight[:, :]
            for band in all_bands:
                with GlobalHierarchy(s, "gemm", ways=ways):
                    p = patches[band.pixel_rows, :]  # loaded back from DDR
                    y = output[band.pixel_rows, :]
                    y += tc.matmul(p, w)

    return {"direct": direct, "im2col-chip": im2col_chip, "im2col-ddr": im2col_ddr}[mapping]


def conv_mapping_schedule(problem: ConvProblem, mapping: str, rows: int | None = None, ways: int = 2,
                          hardware: Accelerator | None = None, name: str | None = None) -> Schedule:
    """A Schedule running `problem` in `mapping` ("direct", "im2col-ddr" or "im2col-chip"; module docstring) with
    bands of `rows` output rows (None: `default_rows`) in `ways`-way scopes, checked to fit `hardware`'s SRAM
    (default: the `blog` preset); ValueError for an unknown mapping, a bad count or a band that does not fit."""
    problem, mapping = _check_problem(problem), _check_mapping(mapping)
    hardware = preset("blog") if hardware is None else hardware
    ways = _check_count("ways", ways, 1, 64, "pass 2 for double buffering")
    if rows is None:
        rows = default_rows(problem, mapping, hardware, ways)
    rows = _check_count("rows", rows, 1, problem.oh, f"a band holds 1..OH = {problem.oh} output rows")
    needed = footprint_bytes(problem, mapping, rows, ways, hardware.word_bytes)
    if needed > hardware.sram_bytes:
        raise ValueError(f"{problem.name}: mapping {mapping!r} with {rows}-row bands and {ways} ways needs "
                         f"{needed:,} B of SRAM, more than {hardware.name}'s {hardware.sram_bytes:,} B; pass fewer "
                         f"rows (or rows=None for the largest default that fits)")
    label = name or re.sub(r"[^A-Za-z0-9._-]+", "-", f"{problem.name}-{mapping}")  # a spec's ':,=' are not allowed
    return Schedule(label, conv_mapping_workload(problem, mapping), conv_mapping_body(problem, mapping, rows, ways),
                    f"{problem.describe()}: {mapping}, weights resident, {rows}-row bands, {ways}-way",
                    hardware=hardware.name)


# -- the rule ------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MappingEstimate:
    """What the rule expects of one mapping with its default bands: cycles of each engine's work, DDR bytes, and
    the estimated cycles (all at the accelerator clock); `fits` False (and every figure 0) when no band fits."""

    mapping: str
    fits: bool
    rows: int = 0
    tensorcore_cycles: int = 0
    vector_cycles: int = 0
    ddr_bytes: int = 0
    cycles: int = 0


def _pipeline_cycles(hardware: Accelerator, compute: Sequence[int], loads: Sequence[int], stores: Sequence[int],
                     head: int, tail: int) -> int:
    """A band pipeline: `head` cycles before the steady state (the first loads, and the first gather), `tail`
    after it (the last store), the rest bounded by the busiest engine: each compute engine's total and the DDR
    port(s) (one shared port adds loads and stores, two ports take the larger)."""
    ddr = port_cycles(ddr_port(hardware), sum(loads), sum(stores))
    return band_pipeline_cycles(head, tail, list(compute), ddr)


def estimate_mapping(problem: ConvProblem, hardware: Accelerator, mapping: str) -> MappingEstimate:
    """The rule's estimate for `mapping` with its default bands and 2 ways (module docstring), in cycles."""
    problem, mapping = _check_problem(problem), _check_mapping(mapping)
    try:
        rows = default_rows(problem, mapping, hardware)
    except ValueError:
        return MappingEstimate(mapping, fits=False)
    wb, k, oc = hardware.word_bytes, patch_columns(problem), problem.oc
    all_bands = bands(problem, rows)
    port = ddr_port(hardware)
    t = lambda nbytes: transfer_cycles(port, nbytes)  # noqa: E731
    weight = t(k * oc * wb)
    image = [t(b.input_elements * wb) for b in all_bands]
    out = [t(b.pixel_count * oc * wb) for b in all_bands]
    patch = [t(b.pixel_count * k * wb) for b in all_bands]
    gathers = [vector_cycles(b.pixel_count * k, hardware.vector_lanes) for b in all_bands]
    image_bytes = sum(b.input_elements for b in all_bands) * wb
    base_bytes = image_bytes + k * oc * wb + pixels(problem) * oc * wb
    if mapping == "direct":
        tc = tensorcore_cycles(hardware, pixels(problem), problem.kh * problem.kw, 1, problem.ic, oc)
        cycles = _pipeline_cycles(hardware, [tc], [weight, *image], out, weight + image[0], out[-1])
        return MappingEstimate(mapping, True, rows, tc, 0, base_bytes, cycles)
    tc = tensorcore_cycles(hardware, pixels(problem), 1, 1, k, oc)
    vec = sum(gathers)
    if mapping == "im2col-chip":
        cycles = _pipeline_cycles(hardware, [tc, vec - gathers[0]], [weight, *image], out,
                                  weight + image[0] + gathers[0], out[-1])
        return MappingEstimate(mapping, True, rows, tc, vec, base_bytes, cycles)
    # the GEMM stage starts when the gather stage has stored its patches: the stages add up
    stage1 = _pipeline_cycles(hardware, [vec - gathers[0]], image, patch, image[0] + gathers[0], patch[-1])
    stage2 = _pipeline_cycles(hardware, [tc], [weight, *patch], out, weight + patch[0], out[-1])
    patch_bytes = 2 * pixels(problem) * k * wb
    return MappingEstimate(mapping, True, rows, tc, vec, base_bytes + patch_bytes, stage1 + stage2)


def fastest_mapping(problem: ConvProblem, hardware: Accelerator) -> str:
    """The rule: the mapping with the fewest estimated cycles (`estimate_mapping`) among those that fit the SRAM,
    ties to the simpler one (direct, im2col-chip, im2col-ddr); ValueError when none fits."""
    estimates = [estimate_mapping(problem, hardware, m) for m in ("direct", "im2col-chip", "im2col-ddr")]
    fitting = [e for e in estimates if e.fits]
    if not fitting:
        raise ValueError(f"{problem.name}: no conv mapping fits {hardware.name}'s SRAM of {hardware.sram_bytes:,} B "
                         f"(each keeps the whole weight resident)")
    return min(fitting, key=lambda e: e.cycles).mapping  # min keeps the first of equals: the simpler mapping


# -- the table -----------------------------------------------------------------------------------------------------

def table_layers() -> dict[str, ConvProblem]:
    """The layers of the table in docs/model/conv-mapping.md: ResNet-50 conv1, res2a_branch2b (3x3), res2a_branch2a (1x1), and the
    stride-2 3x3 of torchvision's ResNet-50 v1.5 (layer2.0.conv2: 128 -> 128, 56 -> 28)."""
    from dsasim.architect.problems.layers import parse_layer

    layers = {name: parse_layer(f"resnet50.{name}") for name in ("conv1", "res2a_branch2b", "res2a_branch2a")}
    layers["layer2.0.conv2"] = ConvProblem(1, 128, 128, 56, 56, 3, stride=2, padding=1,
                                           name="resnet50-v1.5.layer2.0.conv2")
    return layers  # type: ignore[return-value]


def mapping_table(hardware: Accelerator | None = None, layers: dict[str, ConvProblem] | None = None,
                  numeric: bool = True) -> list[dict[str, Any]]:
    """One row per (layer, mapping): traffic, peak SRAM, MACs, simulated cycles and error vs torch (numeric), the
    rule's estimate; `fastest` marks the fewest simulated cycles of the layer, `rule_pick` the rule's choice."""
    from dsasim import run_schedule
    from dsasim.timing import simulate

    hardware = preset("blog") if hardware is None else hardware
    layers = table_layers() if layers is None else layers
    rows: list[dict[str, Any]] = []
    for label, problem in layers.items():
        pick = fastest_mapping(problem, hardware)
        mine: list[dict[str, Any]] = []
        for mapping in MAPPINGS:
            schedule = conv_mapping_schedule(problem, mapping, hardware=hardware)
            counted = run_schedule(schedule, hardware, numeric=False)
            if counted.status != "ok":
                raise RuntimeError(f"{schedule.name}: {counted.message}")
            timed = simulate(counted.trace, hardware, power=False)
            err = None
            if numeric:
                checked = run_schedule(schedule, hardware, numeric=True, record_trace=False)
                if checked.status != "ok":
                    raise RuntimeError(f"{schedule.name}: {checked.message}")
                err = checked.max_abs_err
            estimate = estimate_mapping(problem, hardware, mapping)
            mine.append({
                "layer": label, "shape": problem.spec(), "mapping": mapping, "rows": estimate.rows,
                "loaded_bytes": counted.loaded_bytes, "stored_bytes": counted.stored_bytes,
                "peak_sram_bytes": counted.peak_sram_bytes, "macs": counted.macs,
                "padded_macs": timed.padded_macs,
                "mac_efficiency": round(counted.macs / timed.padded_macs, 6),
                "tensorcore_mac_utilization": round(timed.tensorcore_mac_utilization, 6),
                "cycles": timed.cycles, "estimated_cycles": estimate.cycles,
                "max_abs_err": err, "fastest": False, "rule_pick": mapping == pick,
            })
        best = min(mine, key=lambda r: r["cycles"])
        best["fastest"] = True
        rows.extend(mine)
    return rows


def format_mapping_table(rows: list[dict[str, Any]]) -> str:
    """The table as text (`dsasim`'s table format; * marks the fastest, r the rule's pick)."""
    from dsasim.view.table import format_table

    header = ["layer", "mapping", "rows", "loaded B", "stored B", "peak SRAM B", "MACs", "padded MACs",
              "MACs/padded", "TC util", "cycles", "estimated", "max|err|", "best"]
    body = [[r["layer"], r["mapping"], r["rows"], r["loaded_bytes"], r["stored_bytes"], r["peak_sram_bytes"],
             r["macs"], r["padded_macs"], f"{r['mac_efficiency']:.0%}", f"{r['tensorcore_mac_utilization']:.0%}",
             r["cycles"], r["estimated_cycles"], "-" if r["max_abs_err"] is None else f"{r['max_abs_err']:.1e}",
             ("*" if r["fastest"] else "") + ("r" if r["rule_pick"] else "")] for r in rows]
    return "\n".join(line.rstrip() for line in format_table(header, body, left=(0, 1, 13)).splitlines())


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m dsasim.kernels.conv_mapping [--json PATH] [--count-only]`: print the mapping table of docs/model/conv-mapping.md."""
    parser = argparse.ArgumentParser(prog="python -m dsasim.kernels.conv_mapping", description=main.__doc__)
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON (fixed key order)")
    parser.add_argument("--count-only", action="store_true", help="skip the numeric runs (max|err| left out)")
    args = parser.parse_args(argv)
    rows = mapping_table(numeric=not args.count_only)
    print(format_mapping_table(rows))
    if args.json:
        from dsasim.atomic import write_text_atomic

        write_text_atomic(args.json, json.dumps({"hardware": "blog", "rows": rows}, indent=2) + "\n")
    return 0


# -- registered schedules (`dsasim demo`), listed by kernels.resnet_schedules -------------------------------------

def _registered() -> list[Schedule]:
    from dsasim.architect.problems.layers import parse_layer

    conv1, res2a = parse_layer("resnet50.conv1"), parse_layer("resnet50.res2a_branch2b")
    out = [conv_mapping_schedule(conv1, m, name=f"conv1-{m}") for m in MAPPINGS]
    # res2a_branch2b's direct mapping is `kernels.resnet_schedules`' res2a-branch2b (same bands, same accesses)
    out += [conv_mapping_schedule(res2a, m, name=f"res2a-branch2b-{m}") for m in MAPPINGS if m != "direct"]
    return out


SCHEDULES = _registered()

if __name__ == "__main__":
    sys.exit(main())
