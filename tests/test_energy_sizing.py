"""The sizing answers of a sweep and its energy picture (issue 28): hand-made reports whose answers are known."""

from __future__ import annotations

import dataclasses

from dsasim.energy.accesses import AccessCounts, TensorAccesses
from dsasim.energy.report import energy_report
from dsasim.energy.sizing import EnergyPoint, SizingAnswers
from dsasim.hardware import preset

# every figure given, so the energies are simple sums: DDR 10 pJ/B, SRAM 1 pJ/B, MAC 1 pJ, no leakage; areas given
HW = dataclasses.replace(preset("blog"), dram_pj_per_bit=1.25, sram_access_bytes=1, sram_read_pj=1.0,
                         sram_write_pj=1.0, sram_leakage_mw=0.0, mac_pj=1.0, tensorcore_area_mm2=0.0,
                         vector_area_mm2=0.0)


def point(sram_bytes: int, ddr_bytes: int, cycles: int, area_mm2: float) -> EnergyPoint:
    hw = dataclasses.replace(HW, sram_bytes=sram_bytes, sram_area_mm2=area_mm2)
    counts = AccessCounts((TensorAccesses("x", "DDR", ddr_bytes, 0), TensorAccesses("x", "SRAM", 0, 0)), 100, 100, 0)
    return EnergyPoint(sram_bytes, cycles, energy_report(counts, hw, cycles))


def test_the_three_answers_by_hand():
    # energy = 10 x DDR bytes + 100 (MACs): 64K 10,100; 256K 3,100; 1M 3,000 (the least)
    # EDP = energy x cycles: 64K 10,100 x 300 = 3,030,000; 256K 3,100 x 200 = 620,000 (the least); 1M 3,000 x 250
    # = 750,000. cycles x area: 64K 300 x 1 = 300 (the least, though 256K has the fewest cycles); 256K 200 x 4 = 800;
    # 1M 250 x 16 = 4,000
    pts = [point(64 << 10, 1000, 300, 1.0), point(256 << 10, 300, 200, 4.0), point(1 << 20, 290, 250, 16.0)]
    assert [p.energy.energy_pj for p in pts] == [10_100, 3_100, 3_000]
    a = SizingAnswers.of(pts)
    assert (a.least_energy_bytes, a.least_edp_bytes, a.best_perf_per_mm2_bytes) == (1 << 20, 256 << 10, 64 << 10)
    assert a.to_json() == {"least_energy_sram_bytes": 1 << 20, "least_edp_sram_bytes": 256 << 10,
                           "best_perf_per_mm2_sram_bytes": 64 << 10}


def test_ties_go_to_the_smaller_sram_and_sizes_that_do_not_fit_are_skipped():
    pts = [EnergyPoint(32 << 10, None, None), point(64 << 10, 1000, 100, 1.0), point(128 << 10, 1000, 100, 1.0)]
    a = SizingAnswers.of(pts)
    assert (a.least_energy_bytes, a.least_edp_bytes, a.best_perf_per_mm2_bytes) == (64 << 10,) * 3
    assert SizingAnswers.of([EnergyPoint(32 << 10, None, None)]) == SizingAnswers(None, None, None)


def test_the_energy_plot_stacks_every_component_and_marks_the_answers(tmp_path):
    from dsasim.view.energy_plot import plot_energy_sweep

    pts = [point(64 << 10, 1000, 100, 1.0), point(256 << 10, 400, 200, 4.0), point(1 << 20, 300, 300, 16.0)]
    path = plot_energy_sweep(pts, "toy", tmp_path / "e.png")
    assert path.stat().st_size > 1000
