"""A dsasim `LoopNest` written as a ZigZag mapping YAML (the format of ZigZag's `zigzag/inputs/mapping/*.yaml` and
`zigzag/parser/mapping_validator.py` at commit 3d12a96): a `default` entry and one named after the layer, each with
`spatial_mapping`, `memory_operand_links` and, for the layer, its `temporal_ordering`.

What is written (`mapping_yaml`):

- `spatial_mapping`: the TensorCore's array as dsasim's model uses it: D1 the output channels (K, up to
  `tensorcore_out_channels`), D2 the input channels (C, up to `tensorcore_in_channels`); each factor is at most the
  nest's tile of that dimension (a depthwise conv: 1, left out).
- `temporal_ordering`, innermost loop first, in two parts per memory level: first the steps inside one SRAM tile
  (the TensorCore walks the tile: each dimension's tile divided by its spatial factor; dsasim does not model their
  order, so they follow the problem's dimensions), then the tile loops that move data between DRAM and the SRAM, in
  the nest's order from innermost to outermost, each with its trip count. Loops of one trip are left out.
- ZigZag's format has no key for where each operand is staged (ZigZag allocates loops to memory levels itself), so
  comments say it: per operand, the tile loop its SRAM buffer sits in, its buffering ways and whether it slides.
- a tile that does not divide its extent (a ragged last tile) has no exact factor; its loop is written with the
  rounded-up count and a comment says so (ZigZag wants exact factors and refuses an ordering whose product is not
  the layer's size: give the nest tiles that divide, or edit the factors).
"""

from __future__ import annotations

import json

from dsasim.architect.nests.loopnest import LoopNest, tile_count
from dsasim.hardware import Accelerator
from dsasim.architect.problems.zigzag_workload import ZIGZAG_DIMS, ZIGZAG_OPERANDS

__all__ = ["mapping_yaml", "spatial_factors", "temporal_ordering"]

MEMORY_OPERAND_LINKS = {"O": "O", "W": "I2", "I": "I1"}  # ZigZag's default (MappingValidator's schema)


def spatial_factors(nest: LoopNest, hardware: Accelerator) -> dict[str, int]:
    """dsasim dimension -> its spatial factor on the TensorCore (the output and input channel dimensions; each at
    most its tile)."""
    p = nest.problem
    return {p.tc_out_dim: min(hardware.tensorcore_out_channels, nest.tile(p.tc_out_dim)),
            p.tc_in_dim: min(hardware.tensorcore_in_channels, nest.tile(p.tc_in_dim))}


def temporal_ordering(nest: LoopNest, hardware: Accelerator) -> list[tuple[str, int, str]]:
    """The temporal loops, innermost first: (dsasim dimension, factor, part) with part "tile" (inside one SRAM
    tile) or "dram" (the nest's tile loops); loops of one trip left out."""
    p = nest.problem
    spatial = spatial_factors(nest, hardware)
    inner = [(d, tile_count(nest.tile(d), spatial.get(d, 1)), "tile") for d in reversed(p.dims)]
    outer = [(d, nest.trips(d), "dram") for d in reversed(nest.order)]
    return [(d, f, part) for d, f, part in (*inner, *outer) if f > 1]


def _ragged(nest: LoopNest, hardware: Accelerator) -> dict[str, str]:
    """dsasim dimension -> why its factors do not multiply to its extent (a ragged tile), for the comments."""
    p = nest.problem
    spatial = spatial_factors(nest, hardware)
    notes = {}
    for d in p.dims:
        extent, tile, s = p.extents[d], nest.tile(d), spatial.get(d, 1)
        if tile % s:
            notes[d] = f"a tile of {tile} is not a multiple of the spatial {s}"
        if extent % tile:
            notes[d] = (notes[d] + "; " if d in notes else "") + (
                f"{extent} in tiles of {tile}: the last of {nest.trips(d)} holds {extent - (nest.trips(d) - 1) * tile}")
    return notes


def _staging(nest: LoopNest, names: dict[str, str], operands: dict[str, str]) -> list[str]:
    """One comment per operand: where its SRAM buffer is staged (the memory level split of its loops)."""
    lines = []
    for t in nest.problem.tensor_names:
        above = [names[d] for d in nest.above(t) if nest.trips(d) > 1]
        where = (f"inside the {names[nest.loop_of(t)]} tile loop" if nest.depth(t) else "above every loop (once)")
        dram = (f"the tile loops {', '.join(above)} (outermost first) bring its tiles from DRAM" if above
                else "it is fetched from DRAM once")
        slide = f"; it slides along {names[nest.slide_loop(t)]} (only new rows loaded)" if nest.slides(t) else ""
        lines.append(f"#   {operands[t]} ({t}): staged in the SRAM {where}, {nest.ways_of(t)}-way; {dram}; the "
                     f"loops below it reuse the SRAM copy{slide}")
    return lines


def mapping_yaml(nest: LoopNest, hardware: Accelerator, sram_bytes: int) -> str:
    """`nest` (on `hardware` with `sram_bytes` of SRAM) as a ZigZag mapping YAML: a `default` entry and one named
    after the problem, with its spatial mapping and temporal ordering (module docstring)."""
    p = nest.problem
    names, operands = ZIGZAG_DIMS[p.kind], ZIGZAG_OPERANDS[p.kind]
    spatial = spatial_factors(nest, hardware)
    ragged = _ragged(nest, hardware)
    lines = [f"# dsasim's best loop nest for {p.name} on {hardware.name} with {sram_bytes:,} B of SRAM, as a ZigZag "
             f"mapping.",
             f"# {p.describe()}",
             "# temporal_ordering lists the innermost loop first: the steps inside one SRAM tile, then the tile loops",
             "# between DRAM and the SRAM (dsasim's loop order). Where each operand is staged (its memory level):",
             *_staging(nest, names, operands)]
    if ragged:
        lines.append("# not exact (ZigZag wants factors whose product is the loop size): " + "; ".join(
            f"{names[d]}: {why}" for d, why in ragged.items()))
    spatial_lines = ["  spatial_mapping:"]
    for oa, d in (("D1", p.tc_out_dim), ("D2", p.tc_in_dim)):
        if spatial[d] > 1:
            spatial_lines += [f"    {oa}:", f"      - {names[d]}, {spatial[d]}"]
    if len(spatial_lines) == 1:
        spatial_lines = ["  spatial_mapping: {}"]
    links = ["  memory_operand_links:", *(f"    {k}: {v}" for k, v in MEMORY_OPERAND_LINKS.items())]
    lines += ["- name: default", *spatial_lines, *links]
    lines += [f"- name: {json.dumps(p.name)}", *spatial_lines, "  temporal_ordering:"]
    part = None
    for d, factor, where in temporal_ordering(nest, hardware):
        if where != part:
            part = where
            lines.append("    # inside one SRAM tile (the TensorCore's steps)" if where == "tile" else
                         "    # the tile loops between DRAM and the SRAM, innermost first")
        note = "  # ragged: rounded up" if d in ragged else ""
        lines.append(f"    - [{names[d]}, {factor}]{note}")
    if part is None:
        lines.append("    []")  # the whole layer in one spatial step
    lines += links
    return "\n".join(lines) + "\n"
