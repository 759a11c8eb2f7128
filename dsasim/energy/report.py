"""A run's energy and area: its access counts priced by its hardware's cost figures, and where each picojoule went.

`energy_report(counts, hardware, cycles)` combines an `AccessCounts` (what the run read, wrote and computed),
the hardware's `EnergyCosts` (what each costs, with sources) and the run's cycles (for leakage):

* memory: per level, bytes read x read energy per byte + bytes written x write energy per byte (DDR by its type's
  pJ/bit); per tensor the same over its accesses;
* TensorCore: padded MACs x the MAC lane energy (every lane of a step switches: the padded lanes' share is reported
  as `mac_waste_pj`); vector unit: lane operations x the lane energy;
* leakage: the on-chip levels' leakage power x the run's time (cycles / clock), apart from the dynamic energy.

`energy_pj_of(...)` is the same sum on per-level totals, numpy arrays alike (the searches rank whole candidate
spaces by it), so a report and a ranking share one definition.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from dsasim.energy.accesses import AccessCounts
from dsasim.energy.costs import EnergyCosts
from dsasim.hardware import Accelerator

__all__ = ["EnergyReport", "energy_report", "energy_pj_of", "LEAKAGE", "TENSORCORE", "VECTOR"]

LEAKAGE, TENSORCORE, VECTOR = "leakage", "tensorcore", "vector"  # breakdown keys beside the levels' names


@dataclass(frozen=True)
class EnergyReport:
    """A run's energy (pJ) and the accelerator's area (mm2): `energy_breakdown_pj` by component (each memory level,
    `tensorcore`, `vector`, `leakage`), `level_read_pj` / `level_write_pj` per level, `tensor_pj` per tensor
    (its memory accesses), `mac_waste_pj` (the padded lanes' part of the TensorCore's), `macs`, `cycles`,
    `area_breakdown_mm2`."""

    energy_breakdown_pj: dict[str, float]
    level_read_pj: dict[str, float]
    level_write_pj: dict[str, float]
    tensor_pj: dict[str, float]
    mac_waste_pj: float
    macs: int
    cycles: int
    clock_hz: float
    area_breakdown_mm2: dict[str, float]

    @property
    def energy_pj(self) -> float:
        """Total energy, pJ: dynamic and leakage."""
        return sum(self.energy_breakdown_pj.values())

    @property
    def energy_per_mac_pj(self) -> float | None:
        """Energy per useful MAC, pJ (None when the run has no MAC)."""
        return self.energy_pj / self.macs if self.macs else None

    @property
    def area_mm2(self) -> float:
        """The accelerator's area, mm2."""
        return sum(self.area_breakdown_mm2.values())

    @property
    def edp_pj_s(self) -> float:
        """Energy-delay product, pJ x s (the run's time: cycles / clock)."""
        return self.energy_pj * self.cycles / self.clock_hz

    def to_json(self) -> dict[str, Any]:
        """Plain JSON with the keys every result uses: energy_pj, energy_breakdown_pj, area_mm2, and the rest."""
        def rounded(d: Mapping[str, float]) -> dict[str, float]:
            return {k: round(float(v), 6) for k, v in d.items()}

        per_mac = self.energy_per_mac_pj
        return {"energy_pj": round(self.energy_pj, 6), "energy_breakdown_pj": rounded(self.energy_breakdown_pj),
                "energy_per_mac_pj": None if per_mac is None else round(per_mac, 6),
                "mac_waste_pj": round(self.mac_waste_pj, 6),
                "level_read_pj": rounded(self.level_read_pj), "level_write_pj": rounded(self.level_write_pj),
                "tensor_pj": rounded(self.tensor_pj), "edp_pj_s": float(f"{self.edp_pj_s:.9g}"),
                "area_mm2": round(self.area_mm2, 6), "area_breakdown_mm2": rounded(self.area_breakdown_mm2)}


def energy_report(counts: AccessCounts, hardware: Accelerator, cycles: int) -> EnergyReport:
    """The energy of a run with these access counts taking `cycles` on `hardware` (module docstring)."""
    costs = EnergyCosts.of(hardware)
    read: dict[str, float] = {}
    write: dict[str, float] = {}
    tensor: dict[str, float] = {}
    for t in counts.tensors:
        lv = costs.level(t.level)
        r, w = t.read_bytes * lv.read_pj_per_byte, t.write_bytes * lv.write_pj_per_byte
        read[t.level] = read.get(t.level, 0.0) + r
        write[t.level] = write.get(t.level, 0.0) + w
        tensor[t.tensor] = tensor.get(t.tensor, 0.0) + r + w
    breakdown = {lv.name: read.get(lv.name, 0.0) + write.get(lv.name, 0.0) for lv in costs.levels}
    breakdown[TENSORCORE] = counts.padded_macs * costs.mac_pj.value
    breakdown[VECTOR] = counts.vector_lane_ops * costs.vector_lane_op_pj.value
    breakdown[LEAKAGE] = leakage_pj(costs, cycles)
    return EnergyReport(breakdown, read, write, dict(sorted(tensor.items())),
                        (counts.padded_macs - counts.macs) * costs.mac_pj.value, int(counts.macs), int(cycles),
                        hardware.clock_hz, costs.area_breakdown_mm2())


def leakage_pj(costs: EnergyCosts, cycles: Any) -> Any:
    """The on-chip levels' leakage over `cycles`, pJ: mW x seconds x 1e9."""
    return costs.leakage_mw * 1e9 * cycles / costs.clock_hz


def energy_pj_of(hardware: Accelerator, read_bytes: Mapping[str, Any], write_bytes: Mapping[str, Any],
                 padded_macs: Any, vector_lane_ops: Any, cycles: Any) -> Any:
    """Total energy, pJ, from per-level byte totals (level name -> bytes; numbers or numpy arrays alike): the sum
    `energy_report` makes, for ranking candidates."""
    costs = EnergyCosts.of(hardware)
    total: Any = padded_macs * costs.mac_pj.value + vector_lane_ops * costs.vector_lane_op_pj.value
    for name, b in read_bytes.items():
        total = total + b * costs.level(name).read_pj_per_byte
    for name, b in write_bytes.items():
        total = total + b * costs.level(name).write_pj_per_byte
    return total + leakage_pj(costs, cycles)
