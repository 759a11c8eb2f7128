"""Published energy and area figures, each with its source: the data dsasim's default energies are fitted to.

Nothing here is computed: every number is read from a paper or a published tool output named beside it (the
figures marked `derived` are arithmetic on such numbers, stated). `dsasim hardware --show` prints, for every default
a hardware description uses, the source it comes from; docs/model/energy.md lists them and plots the SRAM rule
(`sram_rule.py`) against `SRAM_POINTS`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Source", "SramPoint", "SOURCES", "SRAM_POINTS", "DRAM_TYPES", "MAC_POINTS", "ADDER_POINT",
           "SRAM_WRITE_OVER_READ", "SRAM_LEAK_POINT"]


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
    Source("horowitz", "M. Horowitz, Computing's Energy Problem (and what we can do about it), ISSCC 2014, 45 nm "
                       "(as quoted in public repositories)"),
)}


@dataclass(frozen=True)
class SramPoint:
    """One published SRAM (CACTI via Accelergy): its node, depth x width (bits), banks, read energy per access
    (pJ) and area (um2), and where it is published."""

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


SRAM_POINTS: tuple[SramPoint, ...] = (
    SramPoint(45, 512, 128, 2, 9.65, 43_608, "tutorial_exercises/02_interface_and_design_space_exploration_2024 buffer"),
    SramPoint(45, 2048, 256, 4, 51.87, 199_065, "simba_like GlobalBuffer"),
    SramPoint(45, 12800, 64, 1, 28.43, 348_893, "sparseloop/04.2.1-eyeriss-like-gating"),
    SramPoint(45, 16384, 64, 32, 32.34, 429_752, "simple_ws / simple_os shared_glb"),
    SramPoint(45, 8192, 256, 2, 124.70, 1_069_102, "sparse_tensor_core_like"),
    SramPoint(40, 32768, 64, 2, 43.35, 707_084, "conv1d exercises MainMemory"),
    SramPoint(32, 16384, 64, 32, 18.18, 217_363, "eyeriss_like shared_glb"),
)

# Write over read energy per access: the one SRAM whose write energy the collected sources give, the 8 KiB buffer of
# tutorial exercise 02 (average read 4.826675 pJ, write 6.31015 pJ: 6.31015 / 4.826675) [derived].
SRAM_WRITE_OVER_READ = 6.31015 / 4.826675
# Leakage: the same buffer's `leak` action, 0.000271 pJ per cycle at Accelergy's default 1 ns cycle, i.e.
# 0.271 uW for 8 KiB at 45 nm (CACTI) — (capacity_bytes, leakage_mw).
SRAM_LEAK_POINT = (8 * 1024, 0.000271e-12 / 1e-9 * 1e3)  # pJ per 1 ns cycle -> W -> mW: 2.71e-4 mW

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
