"""The energy and area lines every command prints under its result (`dsasim.energy.report.EnergyReport`), and the
sizing answers of a sweep (`dsasim.energy.sizing.SizingAnswers`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dsasim.energy.report import EnergyReport
    from dsasim.energy.sizing import SizingAnswers

__all__ = ["format_energy", "format_energy_narrow", "format_sizing", "format_pj"]


def format_pj(pj: float) -> str:
    """Energy with a readable unit: pJ, nJ, uJ or mJ."""
    for unit, scale in (("mJ", 1e9), ("uJ", 1e6), ("nJ", 1e3)):
        if abs(pj) >= scale:
            return f"{pj / scale:,.3f} {unit}"
    return f"{pj:,.3f} pJ"


def format_energy(report: EnergyReport, indent: str = "  ") -> str:
    """Two lines: the total energy with its components' shares and pJ per MAC; the area."""
    total = report.energy_pj
    parts = ", ".join(f"{name} {value / total:.1%}" for name, value in report.energy_breakdown_pj.items()
                      if total and value)
    per_mac = report.energy_per_mac_pj
    mac = f"; {per_mac:,.3f} pJ/MAC (padded lanes {format_pj(report.mac_waste_pj)})" if per_mac is not None else ""
    areas = ", ".join(f"{name} {value:.3f}" for name, value in report.area_breakdown_mm2.items())
    return (f"{indent}energy       {format_pj(total):>16}    ({parts}){mac}\n"
            f"{indent}area         {report.area_mm2:>12,.3f} mm2    ({areas})")


def format_energy_narrow(report: EnergyReport, indent: str = "  ") -> str:
    """`format_energy` in lines of at most about 100 columns (for tables that keep within 120): the total and its
    components' shares; pJ per MAC and the area."""
    total = report.energy_pj
    parts = ", ".join(f"{name} {value / total:.1%}" for name, value in report.energy_breakdown_pj.items()
                      if total and value)
    per_mac = report.energy_per_mac_pj
    mac = (f"{per_mac:,.3f} pJ/MAC (padded lanes {format_pj(report.mac_waste_pj)}); " if per_mac is not None
           else "")
    areas = ", ".join(f"{name} {value:.3f}" for name, value in report.area_breakdown_mm2.items())
    return (f"{indent}energy {format_pj(total)} ({parts})\n"
            f"{indent}{mac}area {report.area_mm2:,.3f} mm2 ({areas})")


def format_sizing(answers: SizingAnswers) -> str:
    """One line per question: the SRAM size that answers it."""
    from dsasim.architect.studies.sweep import format_bytes

    def size(b: int | None) -> str:
        return "none fits" if b is None else f"{format_bytes(b)} ({b:,} B)"

    return (f"least energy per inference at {size(answers.least_energy_bytes)}; least energy x delay at "
            f"{size(answers.least_edp_bytes)}; best performance per mm2 at {size(answers.best_perf_per_mm2_bytes)}")
