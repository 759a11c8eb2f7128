"""The energy keys the golden files gained with issue 28, checked by hand against their own traffic figures: on the
blog machine (LPDDR4, 8 pJ/bit: 64 pJ per DDR byte; an 8-bit MAC lane 0.315 pJ per step at 45 nm, the Accelergy
Library intmac), a search's DDR energy is 64 pJ x (loaded + stored bytes) and its TensorCore energy 0.315 pJ x its
padded MACs, whatever the SRAM rule makes of the rest; the components add up to the total."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("name", ["search-gemm-32KiB", "search-gemm-1MiB", "search-conv-128KiB"])
def test_a_searched_layers_ddr_and_mac_energy_by_hand(name):
    result = json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8"))
    if "hardware" in result and isinstance(result["hardware"], str):
        assert result["hardware"] == "blog"
    parts = result["energy_breakdown_pj"]
    assert parts["DDR"] == pytest.approx(64 * (result["loaded_bytes"] + result["stored_bytes"]), rel=1e-9)
    assert parts["tensorcore"] == pytest.approx(0.315 * result["padded_macs"], rel=1e-9)
    assert result["energy_pj"] == pytest.approx(sum(parts.values()), rel=1e-9)
    # the DDR bytes the energy prices are the traffic the search reports
    ddr = result["accesses"]["levels"]["DDR"]
    assert ddr["read_bytes"] == result["loaded_bytes"] and ddr["write_bytes"] == result["stored_bytes"]


def test_the_demo_golden_prices_its_schedules_and_leaves_failed_ones_null():
    rows = json.loads((GOLDEN / "demo-count-only.json").read_text(encoding="utf-8"))
    for row in rows:
        if row["status"] != "ok":
            assert row["energy_pj"] is None and row["area_mm2"] is None
            continue
        if row["hardware"] != "blog":
            continue
        parts = row["energy_breakdown_pj"]
        assert parts["DDR"] == pytest.approx(64 * (row["loaded_bytes"] + row["stored_bytes"]), rel=1e-9)
        assert row["energy_pj"] == pytest.approx(sum(parts.values()), rel=1e-9)
