"""What one access and one operation cost on a given hardware, with where each figure comes from.

`EnergyCosts.of(hardware)` resolves every energy and area figure of a hardware description: a figure the description
gives is used as it is ("given"); a figure it leaves out comes from the published sources through the SRAM rule
(`sram_rule.py`) at this hardware's capacities, port widths, word size and node — so a sweep over SRAM size changes
the SRAM's cost per access, its leakage and its area. Each figure carries its provenance (a sentence naming the
source), which `dsasim hardware NAME` prints and the docs list.

Access energy is charged per byte: a level's per-access energy over its port width (`access_bytes`), so a partial
access costs its share (a stated simplification: a real SRAM may charge a whole access).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from dsasim.energy import sram_rule
from dsasim.energy.sources import DRAM_TYPES
from dsasim.hardware import DDR, Accelerator, MemoryLevel

__all__ = ["Figure", "LevelCosts", "EnergyCosts"]


@dataclass(frozen=True)
class Figure:
    """One energy, power or area figure: its value, in the unit its name says, and where it comes from."""

    value: float
    provenance: str


@dataclass(frozen=True)
class LevelCosts:
    """One memory level's costs: read and write energy per access of `access_bytes` (pJ), leakage (mW), area
    (mm2); DDR's leakage and area are 0 (off-chip: not on the accelerator's die or power budget)."""

    name: str
    access_bytes: int
    read_pj: Figure
    write_pj: Figure
    leakage_mw: Figure
    area_mm2: Figure

    @property
    def read_pj_per_byte(self) -> float:
        """Read energy per byte, pJ."""
        return self.read_pj.value / self.access_bytes

    @property
    def write_pj_per_byte(self) -> float:
        """Write energy per byte, pJ."""
        return self.write_pj.value / self.access_bytes


@dataclass(frozen=True)
class EnergyCosts:
    """Every cost figure of a hardware: its memory levels (DDR first, then the on-chip levels in tree order), one
    MAC lane per TensorCore step, one vector lane operation, and the compute units' areas."""

    hardware_name: str
    technology_nm: int
    clock_hz: float
    levels: tuple[LevelCosts, ...]
    mac_pj: Figure
    vector_lane_op_pj: Figure
    tensorcore_area_mm2: Figure
    vector_area_mm2: Figure

    @staticmethod
    def of(hardware: Accelerator) -> "EnergyCosts":
        """The hardware's cost figures (module docstring), computed once per hardware description."""
        return _costs_of(hardware)

    def level(self, name: str) -> LevelCosts:
        """The costs of the level called `name` (DDR, SRAM or an inner level); ValueError naming the levels."""
        for lv in self.levels:
            if lv.name == name:
                return lv
        raise ValueError(f"hardware {self.hardware_name!r} has no memory level {name!r} with energies; its levels are "
                         f"{[lv.name for lv in self.levels]}")

    @property
    def area_mm2(self) -> float:
        """The accelerator's area: its on-chip levels and compute units, mm2 (DDR is off-chip)."""
        return sum(lv.area_mm2.value for lv in self.levels) + self.tensorcore_area_mm2.value + \
            self.vector_area_mm2.value

    @property
    def leakage_mw(self) -> float:
        """The on-chip levels' leakage, mW."""
        return sum(lv.leakage_mw.value for lv in self.levels)

    def area_breakdown_mm2(self) -> dict[str, float]:
        """Area by component, mm2: each on-chip level, the TensorCore, the vector unit."""
        out = {lv.name: lv.area_mm2.value for lv in self.levels if lv.name != DDR}
        out["tensorcore"] = self.tensorcore_area_mm2.value
        out["vector"] = self.vector_area_mm2.value
        return out

    def rows(self) -> list[tuple[str, str, str, str]]:
        """Every figure as (component, quantity, value with unit, provenance), for `dsasim hardware`."""
        out = []
        for lv in self.levels:
            out.append((lv.name, f"read / access of {lv.access_bytes} B", f"{lv.read_pj.value:.4g} pJ",
                        lv.read_pj.provenance))
            out.append((lv.name, f"write / access of {lv.access_bytes} B", f"{lv.write_pj.value:.4g} pJ",
                        lv.write_pj.provenance))
            if lv.name != DDR:
                out.append((lv.name, "leakage", f"{lv.leakage_mw.value:.4g} mW", lv.leakage_mw.provenance))
                out.append((lv.name, "area", f"{lv.area_mm2.value:.4g} mm2", lv.area_mm2.provenance))
        out.append(("tensorcore", "per MAC lane per step", f"{self.mac_pj.value:.4g} pJ", self.mac_pj.provenance))
        out.append(("tensorcore", "area", f"{self.tensorcore_area_mm2.value:.4g} mm2",
                    self.tensorcore_area_mm2.provenance))
        out.append(("vector", "per lane operation", f"{self.vector_lane_op_pj.value:.4g} pJ",
                    self.vector_lane_op_pj.provenance))
        out.append(("vector", "area", f"{self.vector_area_mm2.value:.4g} mm2", self.vector_area_mm2.provenance))
        return out

    def to_json(self) -> dict:
        """Plain JSON: every figure with its provenance."""
        def fig(f: Figure) -> dict:
            return {"value": f.value, "source": f.provenance}

        return {"technology_nm": self.technology_nm,
                "levels": {lv.name: {"access_bytes": lv.access_bytes, "read_pj": fig(lv.read_pj),
                                     "write_pj": fig(lv.write_pj), "leakage_mw": fig(lv.leakage_mw),
                                     "area_mm2": fig(lv.area_mm2)} for lv in self.levels},
                "mac_pj": fig(self.mac_pj), "vector_lane_op_pj": fig(self.vector_lane_op_pj),
                "tensorcore_area_mm2": fig(self.tensorcore_area_mm2), "vector_area_mm2": fig(self.vector_area_mm2),
                "area_mm2": self.area_mm2}


GIVEN = "given by the hardware description"


def _rule(what: str, capacity_bytes: int | None, node_nm: int) -> str:
    """Provenance of a figure from the SRAM rule."""
    extra = sram_rule.extrapolated(capacity_bytes, node_nm)
    return f"SRAM rule, {what} (fit to CACTI points [accelergy-exercises])" + (f"; {extra}" if extra else "")


def _pick(given: float | None, default: float, provenance: str) -> Figure:
    return Figure(float(given), GIVEN) if given is not None else Figure(default, provenance)


def _level_costs(level: MemoryLevel, node_nm: int) -> LevelCosts:
    cap, width = level.capacity_bytes, level.access_bytes
    read = _pick(level.read_pj, sram_rule.sram_read_pj(cap, width, node_nm),
                 _rule(f"{cap:,} B, {8 * width}-bit port, {node_nm} nm", cap, node_nm))
    write = _pick(level.write_pj, sram_rule.sram_write_pj(cap, width, node_nm),
                  _rule(f"{cap:,} B, {8 * width}-bit port, {node_nm} nm", cap, node_nm))
    leak = _pick(level.leakage_mw, sram_rule.sram_leakage_mw(cap, node_nm),
                 _rule(f"{cap:,} B, {node_nm} nm", cap, node_nm))
    area = _pick(level.area_mm2, sram_rule.sram_area_mm2(cap, node_nm, width),
                 _rule(f"{cap:,} B, {8 * width}-bit port, {node_nm} nm", cap, node_nm))
    return LevelCosts(level.name, width, read, write, leak, area)


def _ddr_costs(hardware: Accelerator) -> LevelCosts:
    width = hardware.sram_access_bytes  # charged per byte: the width only scales the per-access figure shown
    if hardware.dram_pj_per_bit is not None:
        per_bit, where = hardware.dram_pj_per_bit, GIVEN
    else:
        per_bit, key = DRAM_TYPES[hardware.dram_type]
        where = f"{hardware.dram_type}, {per_bit:g} pJ/bit [{key}]"
    energy = Figure(per_bit * 8 * width, where)
    write = energy if hardware.dram_write_pj_per_bit is None else \
        Figure(hardware.dram_write_pj_per_bit * 8 * width, GIVEN)
    off_chip = Figure(0.0, "off-chip: not part of the accelerator's leakage or area")
    return LevelCosts(DDR, width, energy, write, off_chip, off_chip)


@functools.lru_cache(maxsize=256)
def _costs_of(hardware: Accelerator) -> EnergyCosts:
    node, word = hardware.technology_nm, hardware.word_bytes
    mac_src = f"[{sram_rule.mac_source(word)}]"
    lanes = hardware.tensorcore_in_channels * hardware.tensorcore_out_channels
    scaled = f"at {node} nm by the Library MAC's 45/32 nm scaling"
    mac = _pick(hardware.mac_pj, sram_rule.mac_pj(word, node), f"{8 * word}-bit MAC, {mac_src}; {scaled}")
    vec = _pick(hardware.vector_lane_op_pj, sram_rule.vector_lane_op_pj(word, node),
                f"{8 * word}-bit add, 32-bit adder x bits/32 [aladdin]; {scaled}")
    tc_area = _pick(hardware.tensorcore_area_mm2, lanes * sram_rule.mac_area_mm2(word, node),
                    f"{lanes} MAC lanes x {8 * word}-bit MAC area, {mac_src}; {scaled}")
    vec_area = _pick(hardware.vector_area_mm2, hardware.vector_lanes * sram_rule.vector_lane_area_mm2(word, node),
                     f"{hardware.vector_lanes} lanes x {8 * word}-bit adder area [aladdin]; {scaled}")
    levels = (_ddr_costs(hardware), *(_level_costs(lv, node) for lv in hardware.levels))
    return EnergyCosts(hardware.name, node, hardware.clock_hz, levels, mac, vec, tc_area, vec_area)
