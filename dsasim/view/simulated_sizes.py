"""A network SRAM sweep simulated at each size (`sweep-sram --network NAME --simulate-network`), one row per size,
read from the sweep's own JSON (`NetworkSweep.to_json()`: its 'points' and its 'simulation' list): the table the
command prints and its `--html` page shows, so that the text, the page and `--json` cannot disagree.

A row: the SRAM size (B), the analytic estimate (cycles: the layers' estimates summed; for a size not simulated,
that size's point's cycles), the simulated cycles, simulated / estimate, the cycles gained by running layers at once
(overlap) and the SRAM's peak occupancy (B); with results kept on chip (`--keep-on-chip`: the simulations' 'on_chip'),
the results kept of those the network has, the DDR bytes that saved and the cycles with every result through DDR; a
size not simulated has no simulated figures and says why in one more column (present only when some size is not
simulated).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

__all__ = ["KEPT_ON_CHIP_COLUMNS", "SIMULATED_SIZES_HEADER", "NOT_SIMULATED_COLUMN", "simulated_sizes_table"]

SIMULATED_SIZES_HEADER = ("SRAM B", "estimate", "simulated", "ratio", "overlap", "peak SRAM B")
KEPT_ON_CHIP_COLUMNS = ("kept", "saved B", "through DDR")
NOT_SIMULATED_COLUMN = "not simulated because"


def _get(mapping: Mapping[str, Any], key: str, where: str) -> Any:
    """mapping[key], or a ValueError naming the key and where it is missing."""
    if key not in mapping:
        raise ValueError(f"{where} has no {key!r}")
    return mapping[key]


def simulated_sizes_table(sweep_json: Mapping[str, Any]) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    """(header, rows) of a simulated network sweep, one row per size (module docstring; cycles and bytes as
    integers, the ratio as text with 3 decimals); ValueError when the JSON has no simulation, or its sizes are not
    the points' (one hardware: point k is size k)."""
    if "simulation" not in sweep_json:
        raise ValueError("the sweep's JSON has no 'simulation': only sweep-sram --network NAME --simulate-network "
                         "simulates each size")
    simulations: Sequence[Mapping[str, Any]] = sweep_json["simulation"]
    points: Sequence[Mapping[str, Any]] = _get(sweep_json, "points", "the sweep's JSON")
    if len(points) != len(simulations):
        raise ValueError(f"the sweep's JSON has {len(points)} points for {len(simulations)} simulations: a simulated "
                         f"sweep has one hardware, one point per size")
    kept = any("on_chip" in sim for sim in simulations)
    rows: list[tuple[Any, ...]] = []
    for k, (point, sim) in enumerate(zip(points, simulations)):
        where = f"simulation {k} of the sweep's JSON"
        sram_bytes = int(_get(sim, "sram_bytes", where))
        if int(_get(point, "sram_bytes", f"point {k} of the sweep's JSON")) != sram_bytes:
            raise ValueError(f"{where} is of a {sram_bytes:,} B SRAM but point {k} of {point['sram_bytes']:,} B")
        if "not_simulated" in sim:
            rows.append((sram_bytes, int(_get(point, "cycles", f"point {k} of the sweep's JSON")), None, None, None,
                         None, *((None,) * len(KEPT_ON_CHIP_COLUMNS) if kept else ()), str(sim["not_simulated"])))
            continue
        cycles, estimate = int(_get(sim, "cycles", where)), int(_get(sim, "estimated_cycles", where))
        on_chip = ()
        if kept:
            plan = _get(sim, "on_chip", where)
            on_chip = (f"{len(plan['kept'])}/{len(plan['kept']) + len(plan['not_kept'])}",
                       int(plan["saved_loaded_bytes"]) + int(plan["saved_stored_bytes"]), int(plan["cycles_through_ddr"]))
        rows.append((sram_bytes, estimate, cycles, f"{cycles / max(1, estimate):.3f}",
                     int(_get(sim, "overlap_cycles", where)), int(_get(sim, "peak_sram_bytes", where)), *on_chip, None))
    header = (*SIMULATED_SIZES_HEADER, *(KEPT_ON_CHIP_COLUMNS if kept else ()))
    if any(row[-1] is not None for row in rows):
        return (*header, NOT_SIMULATED_COLUMN), rows
    return header, [row[:-1] for row in rows]
