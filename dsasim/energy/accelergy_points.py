"""Published SRAM energy and area points from Accelergy's CACTI plug-in, as data: each what a Timeloop/Accelergy
reference run printed for one SRAM (its ERT summary's read/write/leak and its ART summary's area), with the
repository, commit, file and component it was read from. Harvested and checked by hand for issue 28; the sources
module (`dsasim/energy/sources.py`) and the SRAM rule fit on them.

Units: energies in pJ per action of one instance (an access of `width_bits`), leakage in pJ per cycle of one
instance at the run's clock (`clock_hz`; Accelergy turns CACTI's leakage power into energy per cycle with
`global_cycle_seconds`), area in um^2 per instance. All are CACTI estimates (estimator CactiSRAM in Accelergy 0.4,
Cacti in 0.3) of the component's storage; a `smartbuffer_*` component adds Accelergy's address generators
(small: Aladdin adders) to the storage. Version 0.3 tables give `average_energy` (dsasim takes it; it is about
half the `max_energy` of a random-data access) and no leak (its `idle` action is not leakage).
"""

from __future__ import annotations

from dataclasses import dataclass

from dsasim.util import is_int

__all__ = ["EXERCISES_REPO", "EXERCISES_COMMIT", "AccelergySramPoint", "ACCELERGY_SRAM_POINTS"]

EXERCISES_REPO = "Accelergy-Project/timeloop-accelergy-exercises"
EXERCISES_COMMIT = "2d5510807128e9bd5f1cad0705cdf2ec4612fd4e"
_ISPASS = "workspace/tutorial_exercises/01_accelergy_timeloop_2020_ispass"
_DESIGNS = "workspace/example_designs/example_designs"


@dataclass(frozen=True)
class AccelergySramPoint:
    """One SRAM as Accelergy priced it: technology node (nm), `depth` words of `width_bits`, `banks`, read and write
    energy per access (pJ), leakage per cycle (pJ, None where the table gives none), area (um^2), the clock the
    leakage is per cycle of (Hz, None where the architecture states none), the component class and Accelergy
    version, and where it was read: `path` (the ERT summary; the ART and flattened architecture beside it) and
    `component` in `repo` at `commit`."""

    node_nm: int
    depth: int
    width_bits: int
    banks: int
    read_pj: float
    write_pj: float
    leak_pj_per_cycle: float | None
    area_um2: float
    clock_hz: float | None
    component_class: str
    accelergy_version: str
    path: str
    component: str
    repo: str = EXERCISES_REPO
    commit: str = EXERCISES_COMMIT

    def __post_init__(self) -> None:
        who = f"AccelergySramPoint {self.path}:{self.component}"
        for name in ("node_nm", "depth", "width_bits", "banks"):
            if not is_int(getattr(self, name)) or getattr(self, name) < 1:
                raise ValueError(f"{who}: {name} must be a positive integer, got {getattr(self, name)!r}")
        for name in ("read_pj", "write_pj", "leak_pj_per_cycle", "area_um2", "clock_hz"):
            value = getattr(self, name)
            if value is None and name in ("leak_pj_per_cycle", "clock_hz"):
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
                raise ValueError(f"{who}: {name} must be a positive finite number, got {value!r}")
        if self.accelergy_version not in ("0.3", "0.4"):
            raise ValueError(f"{who}: accelergy_version must be '0.3' or '0.4', got {self.accelergy_version!r}")

    @property
    def capacity_bytes(self) -> int:
        """Capacity in bytes: depth x width / 8."""
        return self.depth * self.width_bits // 8

    @property
    def read_pj_per_bit(self) -> float:
        """Read energy per bit of an access (read_pj / width_bits)."""
        return self.read_pj / self.width_bits


_P = AccelergySramPoint
# Sorted by node, then capacity. Every number is the file's, digit for digit (the ERT's `energy`, or 0.3's
# `average_energy`; the ART's `area`; depth, width, n_banks and global_cycle_seconds from the flattened architecture).
ACCELERGY_SRAM_POINTS: tuple[AccelergySramPoint, ...] = (
    _P(32, 16384, 64, 32, 18.183829, 14.137929, 0.005652, 217363.36892, 1e9, "smartbuffer_SRAM", "0.4",
       f"{_DESIGNS}/eyeriss_like/ref_outputs/default_problem/timeloop-mapper.ERT_summary.yaml",
       "system_top_level.shared_glb[1..1]"),
    _P(40, 32768, 64, 2, 43.353054, 30.878292, 0.007972, 707084.0, 1e9, "SRAM", "0.4",
       f"{_ISPASS}/timeloop/02-model-conv1d+oc-2level/ref-output/no-tiling/timeloop-model.ERT_summary.yaml",
       "PE_top_level.MainMemory[1..1]"),
    _P(45, 192, 16, 2, 0.680237, 1.582678, 0.001165, 1419.815, 1e9, "smartbuffer_SRAM", "0.4",
       f"{_DESIGNS}/simple_weight_stationary/ref_outputs/default_problem/timeloop-mapper.ERT_summary.yaml",
       "system_top_level.pe_spad[1..256]"),
    _P(45, 512, 32, 2, 2.290882, 2.694173, 0.002378, 7635.82, 1e9, "smartbuffer_metadata", "0.4",
       f"{_DESIGNS}/sparseloop/02.2.1-spMspM/ref_outputs/default_problem/timeloop-mapper.ERT_summary.yaml",
       "system_top_level.BackingStorage[1..1]"),
    _P(45, 1024, 32, 1, 2.41, 2.247, None, 29133.3, None, "SRAM", "0.3",
       f"{_ISPASS}/accelergy/01_primitive_architecture_ERT/ref-output/ERT_summary.yaml", "simple_primitive.GLB"),
    _P(45, 1024, 32, 4, 2.944, 3.427, None, 39629.0, None, "smartbuffer_SRAM", "0.3",
       f"{_ISPASS}/accelergy/03_compound_architecture/ref-output/ERT_summary.yaml", "simple_compound.GLB"),
    _P(45, 512, 128, 2, 9.65335, 12.6203, 0.000271, 43608.4, 1e9, "SRAM", "0.4",
       "workspace/tutorial_exercises/02_interface_and_design_space_exploration_2024/outputs/"
       "timeloop-mapper.ERT_summary.yaml", "system_top_level.buffer[1..1]"),
    _P(45, 1024, 64, 2, 5.15898, 5.69428, None, 77093.2, None, "smartbuffer_SRAM", "0.3",
       f"{_ISPASS}/accelergy/04_eyeriss_like/ref-output/ERT_summary.yaml", "eyeriss_like.weights_glb"),
    _P(45, 2048, 256, 4, 51.870888, 66.310888, 0.003241, 199065.0625, 1e9, "smartbuffer_SRAM", "0.4",
       f"{_DESIGNS}/simba_like/ref_outputs/default_problem/timeloop-mapper.ERT_summary.yaml",
       "System_top_level.GlobalBuffer[1..1]"),
    _P(45, 12800, 64, 1, 28.426775, 23.503475, 0.004781, 348892.5, 1e9, "storage", "0.4",
       f"{_DESIGNS}/sparseloop/04.2.1-eyeriss-like-gating/ref_outputs/default_problem/timeloop-mapper.ERT_summary.yaml",
       "eyeriss_168_top_level.shared_glb[1..1]"),
    _P(45, 12800, 64, 1, 28.426775, 23.503475, 0.006833, 399033.2625, 1e9, "storage", "0.4",
       f"{_DESIGNS}/sparseloop/04.2.3-eyeriss-like-onchip-compression/ref_outputs/default_problem/"
       "timeloop-mapper.ERT_summary.yaml", "eyeriss_168_top_level.shared_glb[1..1]"),
    _P(45, 12800, 64, 25, 33.99577, 34.40252, None, 979377.0, None, "smartbuffer_SRAM", "0.3",
       f"{_ISPASS}/accelergy/04_eyeriss_like/ref-output/ERT_summary.yaml", "eyeriss_like.shared_glb"),
    _P(45, 16384, 64, 32, 32.377775, 26.156875, 0.005353, 429745.625, 1e9, "smartbuffer_SRAM", "0.4",
       f"{_DESIGNS}/simple_weight_stationary/ref_outputs/default_problem/timeloop-mapper.ERT_summary.yaml",
       "system_top_level.shared_glb[1..1]"),
    _P(45, 16384, 64, 32, 32.342452, 26.121552, 0.003351, 429751.88776, 1e9, "smartbuffer_SRAM", "0.4",
       f"{_ISPASS}/timeloop+accelergy/ref-output/intmac/timeloop-mapper.ERT_summary.yaml",
       "system_top_level.shared_glb[1..1]"),
    _P(45, 8192, 256, 2, 124.695312, 118.118313, 0.01164, 1069101.875, 1e9, "storage", "0.4",
       f"{_DESIGNS}/sparse_tensor_core_like/ref_outputs/default_problem/timeloop-mapper.ERT_summary.yaml",
       "system_top_level.SMEM[1..1]"),
)
