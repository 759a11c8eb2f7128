"""Published energy and area figures, each with its source: the data dsasim's default energies are fitted to.

Nothing here is computed: every number is read from a paper or a published tool output named beside it (the
figures marked `derived` are arithmetic on such numbers, stated). `dsasim hardware --show` prints, for every default
a hardware description uses, the source it comes from; docs/model/energy.md lists them and plots the SRAM rule
(`sram_rule.py`) against the published SRAM points (`accelergy_points.py`, and `CHECK_POINTS` here).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Source", "SramPoint", "SOURCES", "CHECK_POINTS", "DRAM_TYPES", "MAC_POINTS", "ADDER_POINT"]


@dataclass(frozen=True)
class Source:
    """Where a figure comes from: a short key, the citation, and (for a tool's published output) the file."""

    key: str
    citation: str


SOURCES: dict[str, Source] = {s.key: s for s in (
    Source("accelergy-exercises", "Accelergy/Timeloop reference outputs (CACTI via Accelergy), "
                                  "Accelergy-Project/timeloop-accelergy-exercises @2d55108, *ERT_summary.yaml / "
                                  "*ART_summary.yaml"),
    Source("accelergy-cacti-dram", "accelergy-cacti-plug-in cacti_wrapper.py CactiDRAM.type2energy, "
                                   "Accelergy-Project/accelergy-cacti-plug-in @291018b"),
    Source("hwcomponents-dram", "hwcomponents-cacti _DRAM.type2energylatency, "
                                "Accelergy-Project/hwcomponents-cacti @de2520f"),
    Source("accelergy-library", "Accelergy Library estimator (intmac, multiplier 8 / adder 16 bits), reference "
                                "outputs of timeloop-accelergy-exercises @2d55108 (simba_like at 45 nm, eyeriss_like "
                                "at 32 nm)"),
    Source("aladdin", "Aladdin table of accelergy-library-plug-in @ba4e9da (library/aladdin/*.csv, 40 nm, 1 ns): "
                      "32-bit multiplier 12.68 pJ / 6350 um2, 32-bit adder 0.21 pJ / 278 um2"),
    Source("zigzag-cacti7", "CACTI 7 memory pool shipped with ZigZag, KULeuven-MICAS/zigzag @3d12a96 "
                            "zigzag/cacti/cacti_master/example_mem_pool.yaml (entries tagged 22 nm)"),
    Source("horowitz", "M. Horowitz, Computing's Energy Problem (and what we can do about it), ISSCC 2014, 45 nm "
                       "(as quoted in public repositories)"),
)}


@dataclass(frozen=True)
class SramPoint:
    """One published SRAM the rule is checked against (not fitted to): its node, depth x width (bits), banks, read
    energy per access (pJ) and area (um2), and where it is published."""

    node_nm: int
    depth: int
    width_bits: int
    banks: int
    read_pj: float
    area_um2: float
    design: str  # the exercise's design and component it is read from
    source: str = "accelergy-exercises"

    @property
    def capacity_bytes(self) -> int:
        """depth x width / 8."""
        return self.depth * self.width_bits // 8


# Check points the rule is NOT fitted to: ZigZag's CACTI 7 pool at 22 nm (read energy per access, area in um2;
# 2R2W entries are marked in `design`).
CHECK_POINTS: tuple[SramPoint, ...] = (
    SramPoint(22, 2048 // 32, 256, 1, 4.82, 26_900, "2 KB, 256-bit, 2R2W", "zigzag-cacti7"),
    SramPoint(22, (2 << 20) // 32, 256, 1, 134.9, 3_665_000, "2 MB, 256-bit", "zigzag-cacti7"),
    SramPoint(22, (32 << 20) // 32, 256, 1, 1763.8, 138_600_000, "32 MB, 256-bit, 2R2W", "zigzag-cacti7"),
    SramPoint(22, (32 << 20) // 1024, 8192, 1, 24_031.0, 153_900_000, "32 MB, 8192-bit", "zigzag-cacti7"),
)

# DRAM energy per bit by type (pJ/bit), both Accelergy tables; where they disagree dsasim takes the first
# (accelergy-cacti-plug-in, the one Timeloop's exercises ran with) and says so in `hardware --show`.
DRAM_TYPES: dict[str, tuple[float, str]] = {
    "LPDDR4": (8.0, "accelergy-cacti-dram"),  # hwcomponents: 8 as well
    "LPDDR": (40.0, "accelergy-cacti-dram"),  # Malladi et al., ISCA'12; hwcomponents: 40
    "DDR3": (70.0, "accelergy-cacti-dram"),  # Chatterjee et al., MICRO'17; hwcomponents: 70
    "GDDR5": (14.0, "accelergy-cacti-dram"),
    "HBM2": (3.9, "accelergy-cacti-dram"),  # hwcomponents: 6.25 (the two tables disagree)
    "HMC": (4.2, "accelergy-cacti-dram"),
    "HBM3": (4.05, "hwcomponents-dram"),
    "HBM4": (3.2, "hwcomponents-dram"),  # "20% reduction from HBM3"
}

# A MAC lane's energy per step (pJ) and area (um2) by word size in bytes, at the node given: (node_nm, pJ, um2,
# source). 1 byte: an 8 x 8-bit multiply with a 16-bit accumulate (Accelergy Library, simba_like at 45 nm).
# 2 and 4 bytes: Aladdin's 32-bit multiplier scaled by (bits / 32)^2 and adder by bits / 32 at 40 nm [derived] —
# the rule Accelergy's library plug-in applies (it gives 0.845 pJ at 8 bits and 3.275 pJ at 16, the MAC of
# tutorial exercise 02).
MAC_POINTS: dict[int, tuple[int, float, float, str]] = {
    1: (45, 0.315, 417.0, "accelergy-library"),
    2: (40, 12.68 * (16 / 32) ** 2 + 0.21 * (16 / 32), 6350 * (16 / 32) ** 2 + 278 * (16 / 32), "aladdin"),
    4: (40, 12.68 + 0.21, 6350.0 + 278.0, "aladdin"),
}
# A MAC at 32 nm (same Library estimator, eyeriss_like): 0.2077 pJ, 191.8 um2 — with the 45 nm point it fixes how a
# MAC scales with the node (sram_rule.node_scale).
MAC_32NM = (32, 0.2077, 191.8)
# A vector lane operation (an add of one word): Aladdin's 32-bit adder at 40 nm, 0.21 pJ / 278 um2, scaled by
# bits / 32 [derived]. Horowitz (45 nm) gives 0.03 pJ for an 8-bit add and 0.1 pJ for a 32-bit one: within ~2x.
ADDER_POINT = (40, 0.21, 278.0, "aladdin")  # (node_nm, pJ at 32 bits, um2 at 32 bits, source)
