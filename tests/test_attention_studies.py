"""Attention's studies (issue 29): `sweep-sram attention:...` over SRAM sizes, `shapes attention:...` over sequence
lengths, `search attention:... --confirm 1` through the trace and the timing simulator, and where the vector unit
stalls the TensorCore. Expected figures are derived by hand in the comments."""

from __future__ import annotations

import json

import pytest

from dsasim.cli import main
from tests.cli_helpers import one_line_error

# b=1, two query heads sharing one K/V head, 256 queries and keys, d=64, on `blog` (1-byte words):
#   Q = O = 2 heads x 256 x 64 = 32,768 B each; K = V = 256 x 64 = 16,384 B each;
#   compulsory = Q + K + V + O = 32,768 + 16,384 + 16,384 + 32,768 = 98,304 B.
SPEC = "attention:b=1,h=2,hkv=1,n=256,m=256,d=64"
COMPULSORY = 98_304


# ------------------------------------------------------------------------------------------------- sweep-sram
def _sweep_json(tmp_path, capsys, *extra: str) -> dict:
    out = tmp_path / "sweep.json"
    assert main(["sweep-sram", SPEC, "--sizes", "16KiB:1MiB", "--json", str(out), "--quiet", *extra]) == 0
    capsys.readouterr()
    return json.loads(out.read_text())


def test_sweep_traffic_falls_to_the_compulsory_bytes_and_prices_each_size(tmp_path, capsys):
    data = _sweep_json(tmp_path, capsys)
    points = data["points"]
    assert [p["sram_bytes"] for p in points] == [2 ** k * 1024 for k in range(4, 11)]  # 16 KiB .. 1 MiB, x2
    traffic = [p["traffic_bytes"] for p in points]
    assert all(a >= b for a, b in zip(traffic, traffic[1:])), traffic  # more SRAM never moves more
    assert all(p["compulsory_bytes"] == COMPULSORY for p in points)
    # at 1 MiB every tile holds the whole head (256 x 256 tiles: Q, K, V, O and S of 2 heads fit): compulsory
    assert points[-1]["traffic_bytes"] == COMPULSORY
    # at 16 KiB the best is q-outer with 32 query rows: Q loaded and O stored once (32,768 B each), K and V
    # loaded once per row tile, shared by the group's two heads: 256 / 32 = 8 row tiles x (16,384 + 16,384) =
    # 262,144 B; in all 32,768 + 262,144 + 32,768 = 327,680 B
    first = points[0]
    assert (first["schedule"]["kind"], first["schedule"]["br"]) == ("q-outer", 32)
    assert first["traffic_bytes"] == 327_680
    for p in points:  # every point carries its energy at that size and the schedule's cycles split
        assert p["energy_pj"] > 0 and p["area_mm2"] > 0 and p["cycles_source"] == "estimate"
        assert p["cycles"] == max(p["dma_cycles"], p["tensorcore_cycles"] + p["vector_cycles"])
    areas = [p["area_mm2"] for p in points]
    assert areas == sorted(areas) and areas[0] < areas[-1]  # the SRAM's area grows with its size
    assert set(data["sizing"]) >= {"least_energy_sram_bytes", "least_edp_sram_bytes"}


def test_sweep_by_energy_ranks_each_size_by_its_own_energy(tmp_path, capsys):
    from dsasim.architect.studies.attention_sweep import sweep_attention
    from dsasim.architect.studies.target_kinds import target_of
    from dsasim.hardware import load_hardware

    target = target_of(SPEC, load_hardware("blog"))
    by_energy = sweep_attention(target, [32 * 1024, 64 * 1024], "energy")
    by_traffic = sweep_attention(target, [32 * 1024, 64 * 1024], "traffic")
    for e, t in zip(by_energy.choices, by_traffic.choices):
        assert e.energy.energy_pj <= t.energy.energy_pj  # ranked by energy: never more than traffic's pick
        assert e.traffic_bytes >= t.traffic_bytes  # and traffic's pick never moves more
    assert by_energy.objective == "energy"


def test_sweep_text_names_the_schedule_and_the_sizing_answers(capsys):
    assert main(["sweep-sram", SPEC, "--sizes", "16KiB:64KiB", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "q-outer 32x48" in out and "327,680" in out and "least energy per inference at" in out


@pytest.mark.parametrize("argv, words", [
    (["sweep-sram", SPEC, "--sizes", "16KiB:64KiB", "--no-simulate"], "--no-simulate does not apply"),
    (["sweep-sram", SPEC, "--sizes", "16KiB:64KiB", "--no-slide"], "--no-slide does not apply"),
    (["sweep-sram", SPEC, "--sizes", "16KiB:64KiB", "--objective", "joules"], "objective"),
])
def test_sweep_refusals_are_one_line(argv, words, capsys):
    one_line_error(argv, capsys, words)
