"""The rule that gives an SRAM's energy per access, leakage and area from its capacity, port width and node — fitted
to the published CACTI points (`accelergy_points.ACCELERGY_SRAM_POINTS`: what Timeloop/Accelergy's reference runs
printed), so that a sweep over SRAM size changes what every access costs, the leakage and the area (sizing by
energy would be meaningless otherwise).

* **Read and write energy per access**: each k x capacity_bytes^b x width_bits^c, a least-squares fit in log space
  to the nine 45 nm points of Accelergy 0.4 (384 B to 256 KiB, 16- to 256-bit ports); banks are left out (no bank
  term improves the fit). Read within about -13 % / +14 % of every point, write within -28 % / +31 % (`fit()`
  gives the worst ratios; plots/energy_figures.py prints every point).
* **Area**: k' x capacity_bytes^b' x width_bits^c', fitted the same way.
* **Leakage**: k'' x capacity_bytes^d, fitted to the same points' leak per cycle at their 1 GHz clock (small arrays
  leak more per byte: their periphery dominates).
* **Node**: each figure x (node / 45)^e, with e fixed by the one SRAM published at two nodes with the same
  configuration (16384 x 64, 32 banks: simple_weight_stationary at 45 nm, eyeriss_like at 32 nm). MACs and adders
  scale by the exponents of the Library MAC at 45 and 32 nm.
* Outside the fitted range (capacities 384 B-256 KiB, nodes 32-45 nm) the rule extrapolates; `extrapolated` says
  when, and `dsasim hardware --show` prints it beside the figure. Accelergy 0.3 points (other CACTI settings and an
  average energy per access) are kept as data but not fitted.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from dsasim.energy.accelergy_points import ACCELERGY_SRAM_POINTS, AccelergySramPoint
from dsasim.energy.sources import ADDER_POINT, MAC_32NM, MAC_POINTS

__all__ = ["fit", "fitted_points", "rule", "sram_read_pj", "sram_write_pj", "sram_area_mm2", "sram_leakage_mw", "mac_pj",
           "mac_area_mm2", "vector_lane_op_pj", "vector_lane_area_mm2", "extrapolated", "mac_source", "FIT_NODE_NM"]

FIT_NODE_NM = 45  # the node the capacity fit is made at


def fitted_points() -> tuple[AccelergySramPoint, ...]:
    """The points the capacity fit is made on: Accelergy 0.4 SRAMs at 45 nm."""
    return tuple(p for p in ACCELERGY_SRAM_POINTS if p.node_nm == FIT_NODE_NM and p.accelergy_version == "0.4")


def _node_pair() -> tuple[AccelergySramPoint, AccelergySramPoint]:
    """The one SRAM configuration published at 45 and 32 nm by the same Accelergy version: 16384 x 64, 32 banks
    (simple_weight_stationary's shared_glb at 45 nm, eyeriss_like's at 32 nm)."""
    def one(node_nm: int, design: str) -> AccelergySramPoint:
        return next(p for p in ACCELERGY_SRAM_POINTS if p.node_nm == node_nm and design in p.path
                    and (p.depth, p.width_bits, p.banks) == (16384, 64, 32))

    return one(45, "simple_weight_stationary"), one(32, "eyeriss_like")


@functools.cache
def fit() -> dict[str, float]:
    """The rule's constants, fitted on first use: per figure (read, write, area, leak) `FIG_log_k`,
    `FIG_cap_exp`, `FIG_width_exp` (leak: none), `FIG_node_exp`, and `FIG_worst` (the worst ratio rule /
    published over the fitted points, >= 1); `mac_energy_node_exp`, `mac_area_node_exp`."""
    points = fitted_points()
    cap = np.log([p.capacity_bytes for p in points])
    width = np.log([p.width_bits for p in points])
    out: dict[str, float] = {}
    at45, at32 = _node_pair()
    node_ratio = math.log(32 / 45)
    for name, with_width in (("read", True), ("write", True), ("area", True), ("leak", False)):
        y = np.log([_published(p, name) for p in points])
        x = np.c_[np.ones(len(points)), cap, width] if with_width else np.c_[np.ones(len(points)), cap]
        coef, *_ = np.linalg.lstsq(x, y, rcond=None)
        ratio = np.exp(x @ coef - y)
        out[f"{name}_log_k"], out[f"{name}_cap_exp"] = float(coef[0]), float(coef[1])
        out[f"{name}_width_exp"] = float(coef[2]) if with_width else 0.0
        out[f"{name}_worst"] = float(max(ratio.max(), 1 / ratio.min()))
        out[f"{name}_node_exp"] = math.log(_published(at32, name) / _published(at45, name)) / node_ratio
    mac45 = MAC_POINTS[1]
    out["mac_energy_node_exp"] = math.log(MAC_32NM[1] / mac45[1]) / math.log(MAC_32NM[0] / mac45[0])
    out["mac_area_node_exp"] = math.log(MAC_32NM[2] / mac45[2]) / math.log(MAC_32NM[0] / mac45[0])
    return out


def _published(p: AccelergySramPoint, name: str) -> float:
    """A point's published figure: read / write pJ per access, area um2, leakage mW (pJ per cycle x clock)."""
    if name == "leak":
        return p.leak_pj_per_cycle * p.clock_hz * 1e-9  # pJ/s = 1e-12 W = 1e-9 mW
    return {"read": p.read_pj, "write": p.write_pj, "area": p.area_um2}[name]


def rule(name: str, capacity_bytes: int, width_bits: int, node_nm: float) -> float:
    """The fitted figure `name` (read, write: pJ per access; area: um2; leak: mW) at a capacity, width and node."""
    f = fit()
    return math.exp(f[f"{name}_log_k"] + f[f"{name}_cap_exp"] * math.log(capacity_bytes)
                    + f[f"{name}_width_exp"] * math.log(width_bits)) * (node_nm / FIT_NODE_NM) ** f[f"{name}_node_exp"]


def _node(node_nm: float, exponent_key: str, from_nm: float = FIT_NODE_NM) -> float:
    return (node_nm / from_nm) ** fit()[exponent_key]


def sram_read_pj(capacity_bytes: int, access_bytes: int, node_nm: int) -> float:
    """Read energy per access of `access_bytes`, pJ, of an SRAM of `capacity_bytes` at `node_nm` (the rule)."""
    return rule("read", capacity_bytes, 8 * access_bytes, node_nm)



def sram_write_pj(capacity_bytes: int, access_bytes: int, node_nm: int) -> float:
    """Write energy per access of `access_bytes`, pJ (the rule)."""
    return rule("write", capacity_bytes, 8 * access_bytes, node_nm)



def sram_area_mm2(capacity_bytes: int, node_nm: int, access_bytes: int = 8) -> float:
    """Area, mm2, of an SRAM of `capacity_bytes` (port of `access_bytes`) at `node_nm` (the rule)."""
    return rule("area", capacity_bytes, 8 * access_bytes, node_nm) / 1e6



def sram_leakage_mw(capacity_bytes: int, node_nm: int) -> float:
    """Leakage power, mW, of an SRAM of `capacity_bytes` at `node_nm` (the rule)."""
    return rule("leak", capacity_bytes, 8, node_nm)



def mac_pj(word_bytes: int, node_nm: int) -> float:
    """One MAC lane's energy per step, pJ, for words of `word_bytes` at `node_nm` (sources.MAC_POINTS; other word
    sizes by the Aladdin rule: multiplier ~ bits^2, adder ~ bits)."""
    src_nm, pj, _, _ = _mac_point(word_bytes)
    return pj * _node(node_nm, "mac_energy_node_exp", src_nm)


def mac_area_mm2(word_bytes: int, node_nm: int) -> float:
    """One MAC lane's area, mm2."""
    src_nm, _, um2, _ = _mac_point(word_bytes)
    return um2 * _node(node_nm, "mac_area_node_exp", src_nm) / 1e6


def _mac_point(word_bytes: int) -> tuple[int, float, float, str]:
    if word_bytes in MAC_POINTS:
        return MAC_POINTS[word_bytes]
    scale = 8 * word_bytes / 32
    return 40, 12.68 * scale ** 2 + 0.21 * scale, 6350 * scale ** 2 + 278 * scale, "aladdin"


def mac_source(word_bytes: int) -> str:
    """The source key of the MAC figure for `word_bytes`."""
    return _mac_point(word_bytes)[3]


def vector_lane_op_pj(word_bytes: int, node_nm: int) -> float:
    """One vector lane operation (an add of one word), pJ: Aladdin's 32-bit adder scaled by bits / 32."""
    src_nm, pj32, _, _ = ADDER_POINT
    return pj32 * 8 * word_bytes / 32 * _node(node_nm, "mac_energy_node_exp", src_nm)


def vector_lane_area_mm2(word_bytes: int, node_nm: int) -> float:
    """One vector lane's area (an adder of one word), mm2."""
    src_nm, _, um2_32, _ = ADDER_POINT
    return um2_32 * 8 * word_bytes / 32 * _node(node_nm, "mac_area_node_exp", src_nm) / 1e6


def extrapolated(capacity_bytes: int | None, node_nm: int) -> str:
    """'' inside the fitted range; else why the figure is an extrapolation (capacity or node outside the points)."""
    why = []
    caps = [p.capacity_bytes for p in fitted_points()]
    if capacity_bytes is not None and not min(caps) <= capacity_bytes <= max(caps):
        why.append(f"capacity outside the fitted {min(caps):,} B-{max(caps) // 1024} KiB")
    nodes = [p.node_nm for p in ACCELERGY_SRAM_POINTS]
    if not min(nodes) <= node_nm <= max(nodes):
        why.append(f"node outside the published {min(nodes)}-{max(nodes)} nm")
    return "extrapolated: " + ", ".join(why) if why else ""
