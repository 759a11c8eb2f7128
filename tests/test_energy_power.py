"""Issue 28, energy over time: each timed operation's energy, the power per window by component, its picture.

* The sum of every operation's energy and the leakage over the run equals `energy_report(run.access_counts, ...)`
  component by component (an independent sum: the report prices the Counters' per-tensor totals, the power prices
  the timed operations one by one) on demo schedules, a blog-l1 schedule (stages and write-backs) and schedules
  with vector operations.
* A tiny schedule whose per-window energy is derived by hand below.
* The plot's power panel and the Perfetto power track exist, in W.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from dsasim import GlobalHierarchy, Session, VectorUnit, preset, run_schedule
from dsasim.cli.common import find_schedule
from dsasim.energy.costs import EnergyCosts
from dsasim.energy.report import energy_report
from dsasim.timing import simulate
from dsasim.traced import tensorcore, trace as trace_module
from dsasim.view import plot
from dsasim.view.perfetto import perfetto_events

from test_timing_levels import example as leveled_example

# The hand-derived machine: the blog machine with 4 B/cycle of DDR and 3 setup cycles per transfer (a transfer of
# 8 B takes 3 + 8/4 = 5 cycles), 1 GHz, and round energies: DDR 1 pJ/bit = 8 pJ/B read or written; an SRAM access
# of 4 B costs 4 pJ to read (1 pJ/B) and 8 pJ to write (2 pJ/B); a vector lane operation 0.5 pJ; leakage 1 mW
# (1 mW x 1 ns = 1 pJ per cycle).
HW = dataclasses.replace(preset("blog"), name="power", clock_hz=1e9, dram_bytes_per_cycle=4.0, dma_setup_cycles=3,
                         dram_shared_load_store=False, dram_pj_per_bit=1.0, sram_access_bytes=4, sram_read_pj=4.0,
                         sram_write_pj=8.0, sram_leakage_mw=1.0, vector_lane_op_pj=0.5, mac_pj=0.25)


def copy_run():
    """y[0:1, 0:8] = copy(x[0:1, 0:8]), 1 B per element: LOAD x, OPEN y, COMPUTE copy, STORE y."""
    s = Session(HW, numeric=False)
    x, y = s.input("x", (1, 8)), s.output("y", (1, 8))
    vu = VectorUnit(s)
    with GlobalHierarchy(s, "all"):
        out = y[0:1, 0:8]
        out.assign(vu.copy(x[0:1, 0:8]))
    return s


def test_hand_derived_energy_per_operation_and_per_window():
    assert HW.word_bytes == 1
    s = copy_run()
    result = simulate(s.finish(), HW, window_cycles=4)
    # Timing (program order: y is accessed first): OPEN y [0, 0); LOAD x [0, 5) (3 + 8/4); the copy [5, 6)
    # (ceil(8 / 32 lanes) = 1 cycle); STORE y [6, 11).
    assert [(r.kind, r.start, r.end) for r in result.records()] == \
        [("open", 0, 0), ("load", 0, 5), ("vector", 5, 6), ("store", 6, 11)]
    # Energy per operation:
    #   OPEN  nothing (a zero-fill)
    #   LOAD  8 B x (8 DDR read + 2 SRAM write) = 64 DDR + 16 SRAM = 80 pJ
    #   copy  reads x: 8 elements x 1 pJ/B = 8 SRAM; writes y: 8 x 2 pJ/B = 16 SRAM (an overwrite reads none of
    #         its output); 8 lane operations x 0.5 = 4 vector: 28 pJ
    #   STORE 8 B x (1 SRAM read + 8 DDR write) = 8 SRAM + 64 DDR = 72 pJ
    assert result.op_energy_pj.tolist() == pytest.approx([0.0, 80.0, 28.0, 72.0], rel=1e-12)
    # Per window of 4 cycles, [0,4) [4,8) [8,12), each operation spread evenly over its duration:
    #   DDR:  load 64/5 = 12.8 per cycle: 51.2 | 12.8; store 12.8 per cycle over [6,11): 25.6 | 38.4
    #         -> 51.2, 38.4, 38.4
    #   SRAM: load 16/5 = 3.2 per cycle: 12.8 | 3.2; copy 24 in [5,6); store 8/5 = 1.6 per cycle: 3.2 | 4.8
    #         -> 12.8, 30.4, 4.8
    #   vector 0, 4, 0; tensorcore 0, 0, 0; leakage 1 pJ per cycle of the run (11 cycles): 4, 4, 3
    expected = {"DDR": [51.2, 38.4, 38.4], "SRAM": [12.8, 30.4, 4.8], "tensorcore": [0.0, 0.0, 0.0],
                "vector": [0.0, 4.0, 0.0], "leakage": [4.0, 4.0, 3.0]}
    assert result.power_components == tuple(expected)
    for row, name in enumerate(result.power_components):
        assert result.window_energy_pj[row].tolist() == pytest.approx(expected[name], rel=1e-12), name
    # W = pJ per window / 4 ns x 1e-12: totals 68, 76.8, 46.2 pJ -> 17, 19.2, 11.55 mW; the run: 191 pJ in 11 ns
    assert result.power_w.sum(axis=0).tolist() == pytest.approx([0.017, 0.0192, 0.01155], rel=1e-12)
    assert result.peak_power_w == pytest.approx(0.0192, rel=1e-12)
    assert result.average_power_w == pytest.approx(191e-12 / 11e-9, rel=1e-12)
    out = result.to_json("copy")
    assert out["power_w"]["DDR"] == pytest.approx([0.0128, 0.0096, 0.0096], rel=1e-9)
    assert out["peak_power_w"] == pytest.approx(0.0192) and out["average_power_w"] == pytest.approx(191 / 11 * 1e-3)
    assert "power: average 17.4 mW, peak 19.2 mW" in result.summary()


def test_an_operation_spanning_several_windows_fills_each_whole_window_between():
    """The same run in windows of 2 cycles: the LOAD [0, 5) puts 12.8 pJ of DDR energy per cycle in [0,2) [2,4)
    (whole windows) and 12.8 in [4,6); the STORE [6, 11) 25.6 in [6,8) and [8,10), 12.8 in [10,12); the leakage
    1 pJ per cycle, the last window holding 1 cycle of the run (11 cycles in 6 windows)."""
    result = simulate(copy_run().finish(), HW, window_cycles=2)
    rows = dict(zip(result.power_components, result.window_energy_pj.tolist()))
    assert rows["DDR"] == pytest.approx([25.6, 25.6, 12.8, 25.6, 25.6, 12.8], rel=1e-12)
    assert rows["leakage"] == pytest.approx([2.0, 2.0, 2.0, 2.0, 2.0, 1.0], rel=1e-12)


def test_an_accumulating_compute_reads_its_output_after_the_first_write():
    """y += copy(x) twice into a zeroed output: the first writes fresh zeros (no read), the second reads 8 elements
    (8 x 1 pJ/B): the second copy costs 8 pJ more than the first (28 + 8 = 36)."""
    s = Session(HW, numeric=False)
    x, y = s.input("x", (1, 8)), s.output("y", (1, 8))
    vu = VectorUnit(s)
    with GlobalHierarchy(s, "all"):
        out = y[0:1, 0:8]
        out += vu.copy(x[0:1, 0:8])
        out += vu.copy(x[0:1, 0:8])
    result = simulate(s.finish(), HW)
    computes = [e for r, e in zip(result.records(), result.op_energy_pj.tolist()) if r.kind == "vector"]
    assert computes == pytest.approx([28.0, 36.0], rel=1e-12)


def assert_power_equals_report(run, hw) -> None:
    """Every component's windows sum to the report's component; the operations and the leakage to its total."""
    result = simulate(run.trace, hw)
    report = energy_report(run.access_counts, hw, result.cycles)
    windows = dict(zip(result.power_components, result.window_energy_pj.sum(axis=1).tolist()))
    assert set(windows) == set(report.energy_breakdown_pj)
    for name, pj in report.energy_breakdown_pj.items():
        assert windows[name] == pytest.approx(pj, rel=1e-9, abs=1e-9), name
    assert float(result.op_energy_pj.sum()) + windows["leakage"] == pytest.approx(report.energy_pj, rel=1e-9)
    assert result.energy_pj == pytest.approx(report.energy_pj, rel=1e-9)


@pytest.mark.parametrize("name", ["demo2", "demo6", "demo6-1", "weights-resident", "conv1-im2col-chip",
                                  "res2a-branch2b-im2col-ddr", "output-stationary-fp32"])
def test_the_operations_energy_sums_to_the_report(name):
    schedule = find_schedule(name)
    hw = preset(schedule.hardware)
    run = run_schedule(schedule, hw, numeric=False, record_trace=True)
    assert run.status == "ok"
    if "im2col" in name:
        assert run.access_counts.vector_lane_ops > 0  # (the vector unit's energy is checked too)
    assert_power_equals_report(run, hw)


def test_stages_and_writebacks_are_priced_between_their_levels():
    """blog-l1's leveled matmul: a STAGE of b bytes costs b x (SRAM read + its level's write per byte), a WRITEBACK
    b x (its level's read + SRAM write per byte), priced here from the cost table."""
    hw = preset("blog-l1")
    costs = EnergyCosts.of(hw)
    result = simulate(leveled_example(), hw)
    level_of = {f"dma-{lv.name}": lv.name for lv in hw.inner_levels} | \
        {f"dma-{lv.name}-wb": lv.name for lv in hw.inner_levels}
    sram = costs.level("SRAM")
    seen = set()
    for record, pj in zip(result.records(), result.op_energy_pj.tolist()):
        if record.kind not in ("stage", "writeback"):
            continue
        lv = costs.level(level_of[record.engine])
        per_byte = sram.read_pj_per_byte + lv.write_pj_per_byte if record.kind == "stage" else \
            lv.read_pj_per_byte + sram.write_pj_per_byte
        assert pj == pytest.approx(record.nbytes * per_byte, rel=1e-12)
        seen.add(record.kind)
    assert seen == {"stage", "writeback"}


def test_the_leveled_schedule_equals_its_report():
    hw = preset("blog-l1")
    run = run_schedule(find_schedule("res2a-branch2b-l1"), hw, numeric=False, record_trace=True)
    assert run.trace.multi_level() and any(run.access_counts.read_bytes(lv) for lv in ("L1w", "L1i", "L1acc"))
    assert_power_equals_report(run, hw)


def test_the_compiled_core_and_the_python_reference_log_the_same_accesses(monkeypatch):
    """The COMPUTE accesses from `_core.product_apply` equal those of `Product._apply_py`, and the columnar log's
    equal the reference ListLog's."""
    def accesses(compiled: bool, columnar: bool) -> list:
        tensorcore._bind_core(compiled)
        monkeypatch.setattr(trace_module, "COLUMNAR", columnar)
        try:
            run = run_schedule(find_schedule("demo6"), preset("blog"), numeric=False, record_trace=True)
            return run.trace.compute_accesses().tolist()
        finally:
            tensorcore._bind_core(True)

    reference = accesses(True, True)
    assert reference and any(row[5] for row in reference)  # (some compute reads its output)
    assert accesses(False, True) == reference
    assert accesses(True, False) == reference


def test_a_hand_built_trace_has_no_power():
    s = copy_run()
    tr = s.finish()
    hand = trace_module.Trace(tr.word_bytes)
    hand.tensors, hand.scopes, hand.events = tr.tensors, tr.scopes, list(tr.events)
    result = simulate(hand, HW)
    assert result.power_w is None and result.op_energy_pj is None
    out = result.to_json("hand")
    assert out["power_w"] is None and out["peak_power_w"] is None and out["average_power_w"] is None
    hand.hand_accesses = tr.compute_accesses()
    assert simulate(hand, HW).to_json("x") == simulate(tr, HW).to_json("x")


def test_the_bandwidth_plot_has_a_power_panel_in_watts(monkeypatch):
    made = []

    def keep(fig, path):
        fig.canvas.draw()
        made.append(fig)
        return Path(path)

    monkeypatch.setattr(plot, "_save", keep)
    result = simulate(copy_run().finish(), HW, window_cycles=4)
    plot.plot_bandwidth(result, "bw.png")
    bandwidth, power = made[0].axes[:2]
    assert bandwidth.get_ylabel() == "DDR bytes / cycle" and power.get_ylabel() == "power (W)"
    assert power.get_shared_x_axes().joined(bandwidth, power)
    labels = power.get_legend_handles_labels()[1]
    assert {"DDR", "SRAM", "vector", "leakage"} <= set(labels) and "tensorcore" not in labels  # (unused: left out)
    # the top of the stack is each window's total: 68, 76.8, 46.2 pJ per 4 ns (hand-derived above)
    assert power.get_ylim()[1] == pytest.approx(0.0192 * 1.15)


def test_the_perfetto_trace_has_a_power_counter_in_watts():
    result = simulate(copy_run().finish(), HW, window_cycles=4)
    counters = [e for e in perfetto_events(result, "copy") if e["ph"] == "C" and e["name"] == "power (W)"]
    # one sample per window (at 0, 4, 8 ns) and a zero at the end (11 ns)
    assert [e["ts"] for e in counters] == [0.0, 0.004, 0.008, 0.011]
    assert counters[1]["args"]["SRAM"] == pytest.approx(30.4 / 4e-9 * 1e-12)
    assert counters[-1]["args"] == dict.fromkeys(result.power_components, 0.0)
    json.dumps(counters)  # plain JSON
    assert np.isclose(sum(counters[0]["args"].values()), 0.017)
