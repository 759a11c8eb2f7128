"""The rule that gives an SRAM's energy per access, leakage and area from its capacity, port width and node — fitted
to the published CACTI points (`sources.SRAM_POINTS`), so that a sweep over SRAM size changes what every access
costs, the leakage and the area (sizing by energy would be meaningless otherwise).

* **Read energy per access**: read_pj = k x capacity_bytes^b x width_bits^c, a least-squares fit in log space to the
  five 45 nm points (8 KiB to 256 KiB, 64- to 256-bit ports; every point within a few percent, the fit printed by
  `fit()`); banks are left out (the fit needs no bank term at that accuracy). Write = read x
  `SRAM_WRITE_OVER_READ` (1.31, the one published write figure).
* **Area**: area_um2 = k' x capacity_bytes^b', fitted the same way (within about -20 % / +25 %; width adds nothing).
* **Leakage**: proportional to capacity, from the one published leak figure (0.271 uW for 8 KiB at 45 nm);
  Accelergy's CACTI plug-in scales leakage linearly in width and depth as well.
* **Node**: energy x (node / 45)^e and area x (node / 45)^a, with e and a fixed by the one design published at two
  nodes with the same SRAM (16384 x 64, 32 banks: 32.34 pJ / 429,752 um2 at 45 nm, 18.18 pJ / 217,363 um2 at 32
  nm); leakage scales like area. MACs and adders scale by the exponents of the Library MAC at 45 and 32 nm.
* Outside the fitted range (capacities 8-256 KiB, nodes 32-45 nm) the rule extrapolates; `extrapolated` says when,
  and `dsasim hardware --show` prints it beside the figure.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from dsasim.energy.sources import (ADDER_POINT, MAC_32NM, MAC_POINTS, SRAM_LEAK_POINT, SRAM_POINTS,
                                   SRAM_WRITE_OVER_READ)

__all__ = ["fit", "sram_read_pj", "sram_write_pj", "sram_area_mm2", "sram_leakage_mw", "mac_pj",
           "mac_area_mm2", "vector_lane_op_pj", "vector_lane_area_mm2", "extrapolated", "mac_source", "FIT_NODE_NM"]

FIT_NODE_NM = 45  # the node the capacity fit is made at


@functools.cache
def fit() -> dict[str, float]:
    """The rule's constants, fitted to `SRAM_POINTS` (computed once, on first use): read energy
    `log_k`, `cap_exp`, `width_exp`; area `area_log_k`, `area_cap_exp`; node exponents `energy_node_exp`,
    `area_node_exp`, `mac_energy_node_exp`, `mac_area_node_exp`; the fit's worst ratios `read_worst`, `area_worst`."""
    points = [p for p in SRAM_POINTS if p.node_nm == FIT_NODE_NM]
    cap = np.log([p.capacity_bytes for p in points])
    width = np.log([p.width_bits for p in points])
    read = np.log([p.read_pj for p in points])
    area = np.log([p.area_um2 for p in points])
    x = np.c_[np.ones(len(points)), cap, width]
    (log_k, cap_exp, width_exp), *_ = np.linalg.lstsq(x, read, rcond=None)
    xa = np.c_[np.ones(len(points)), cap]
    (area_log_k, area_cap_exp), *_ = np.linalg.lstsq(xa, area, rcond=None)
    read_ratio = np.exp(x @ (log_k, cap_exp, width_exp) - read)
    area_ratio = np.exp(xa @ (area_log_k, area_cap_exp) - area)
    at45 = next(p for p in SRAM_POINTS if p.node_nm == 45 and (p.depth, p.width_bits, p.banks) == (16384, 64, 32))
    at32 = next(p for p in SRAM_POINTS if p.node_nm == 32 and (p.depth, p.width_bits, p.banks) == (16384, 64, 32))
    node_ratio = math.log(32 / 45)
    mac45 = MAC_POINTS[1]
    return {
        "log_k": float(log_k), "cap_exp": float(cap_exp), "width_exp": float(width_exp),
        "area_log_k": float(area_log_k), "area_cap_exp": float(area_cap_exp),
        "energy_node_exp": math.log(at32.read_pj / at45.read_pj) / node_ratio,
        "area_node_exp": math.log(at32.area_um2 / at45.area_um2) / node_ratio,
        "mac_energy_node_exp": math.log(MAC_32NM[1] / mac45[1]) / math.log(MAC_32NM[0] / mac45[0]),
        "mac_area_node_exp": math.log(MAC_32NM[2] / mac45[2]) / math.log(MAC_32NM[0] / mac45[0]),
        "read_worst": float(max(read_ratio.max(), 1 / read_ratio.min())),
        "area_worst": float(max(area_ratio.max(), 1 / area_ratio.min())),
    }


def _node(node_nm: float, exponent_key: str, from_nm: float = FIT_NODE_NM) -> float:
    return (node_nm / from_nm) ** fit()[exponent_key]


def sram_read_pj(capacity_bytes: int, access_bytes: int, node_nm: int) -> float:
    """Read energy per access of `access_bytes`, pJ, of an SRAM of `capacity_bytes` at `node_nm` (the rule)."""
    f = fit()
    return math.exp(f["log_k"] + f["cap_exp"] * math.log(capacity_bytes) + f["width_exp"] * math.log(
        8 * access_bytes)) * _node(node_nm, "energy_node_exp")


def sram_write_pj(capacity_bytes: int, access_bytes: int, node_nm: int) -> float:
    """Write energy per access, pJ: the read energy x SRAM_WRITE_OVER_READ."""
    return sram_read_pj(capacity_bytes, access_bytes, node_nm) * SRAM_WRITE_OVER_READ


def sram_area_mm2(capacity_bytes: int, node_nm: int) -> float:
    """Area, mm2, of an SRAM of `capacity_bytes` at `node_nm` (the rule)."""
    f = fit()
    return math.exp(f["area_log_k"] + f["area_cap_exp"] * math.log(capacity_bytes)) * _node(
        node_nm, "area_node_exp") / 1e6


def sram_leakage_mw(capacity_bytes: int, node_nm: int) -> float:
    """Leakage power, mW: the published 8 KiB figure scaled by capacity, and by the node like area."""
    ref_bytes, ref_mw = SRAM_LEAK_POINT
    return ref_mw * capacity_bytes / ref_bytes * _node(node_nm, "area_node_exp")


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
    caps = [p.capacity_bytes for p in SRAM_POINTS]
    if capacity_bytes is not None and not min(caps) <= capacity_bytes <= max(caps):
        why.append(f"capacity outside the published {min(caps) // 1024}-{max(caps) // 1024} KiB")
    nodes = [p.node_nm for p in SRAM_POINTS]
    if not min(nodes) <= node_nm <= max(nodes):
        why.append(f"node outside the published {min(nodes)}-{max(nodes)} nm")
    return "extrapolated: " + ", ".join(why) if why else ""
