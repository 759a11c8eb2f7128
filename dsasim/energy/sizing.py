"""The architect's answer from a sweep over SRAM sizes: the size with the least energy per inference, the least
energy-delay product, and the best performance per mm² — each over the sizes where the target fits.

Performance per mm² is throughput over area, 1 / (cycles x area_mm2) inferences per cycle per mm²; the best is the
least cycles x area. Ties go to the smaller SRAM (the cheaper part).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from dsasim.energy.report import EnergyReport

__all__ = ["EnergyPoint", "SizingAnswers"]


@dataclass(frozen=True)
class EnergyPoint:
    """One size of a sweep: its SRAM bytes, cycles and energy report (None where nothing fits)."""

    sram_bytes: int
    cycles: int | None
    energy: EnergyReport | None

    @property
    def fits(self) -> bool:
        """Whether the target fits at this size (it has cycles and an energy)."""
        return self.energy is not None and self.cycles is not None


@dataclass(frozen=True)
class SizingAnswers:
    """The sizes (bytes) that answer the three questions, None when no size fits."""

    least_energy_bytes: int | None
    least_edp_bytes: int | None
    best_perf_per_mm2_bytes: int | None

    @staticmethod
    def of(points: Sequence[EnergyPoint]) -> "SizingAnswers":
        """The answers over the points where the target fits (ties: the smaller SRAM)."""
        fit = sorted((p for p in points if p.fits), key=lambda p: p.sram_bytes)
        if not fit:
            return SizingAnswers(None, None, None)

        def best(key: Any) -> int:
            return min(fit, key=lambda p: (key(p), p.sram_bytes)).sram_bytes

        return SizingAnswers(best(lambda p: p.energy.energy_pj), best(lambda p: p.energy.energy_pj * p.cycles),
                             best(lambda p: p.cycles * p.energy.area_mm2))

    def to_json(self) -> dict[str, int | None]:
        """Plain JSON: the three sizes in bytes."""
        return {"least_energy_sram_bytes": self.least_energy_bytes, "least_edp_sram_bytes": self.least_edp_bytes,
                "best_perf_per_mm2_sram_bytes": self.best_perf_per_mm2_bytes}
