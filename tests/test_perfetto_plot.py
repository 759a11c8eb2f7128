"""Perfetto/Chrome trace export (structure, not pixels) and the matplotlib figures (they are produced)."""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict

import pytest

from dsasim import GlobalHierarchy, Schedule, Session, TensorCore, Workload, preset, run_schedule
from dsasim.cli.common import CliError
from dsasim.view.perfetto import perfetto_events, write_perfetto
from dsasim.view.plot import plot_bandwidth, plot_gantt, plot_sram
from dsasim.traced.segments import Segment
from dsasim.timing import simulate

PNG = b"\x89PNG\r\n\x1a\n"


def _tiles(s: Session, x, w, y, k: int = 12, width: int = 4) -> None:
    tc = TensorCore(s)
    with GlobalHierarchy(s, "weights"):
        wt = w[:, :, :, :]
        for j in range(k):
            with GlobalHierarchy(s, "tile", buffers=2):
                cols = Segment(j * width, (j + 1) * width)
                yt = y[:, :, :, cols]
                yt += tc.conv2d(x[:, :, :, cols], wt)


def _workload(k: int = 12, width: int = 4) -> Workload:
    return Workload("tiles", inputs={"x": (1, 16, 1, k * width), "w": (24, 16, 1, 1)},
                    outputs={"y": (1, 24, 1, k * width)}, reference=lambda x, w: {"y": x})


@pytest.fixture(scope="module")
def small():
    hw = preset("blog")
    run = run_schedule(Schedule("tiles", _workload(), _tiles), hw, numeric=False)
    return simulate(run.trace, hw)


@pytest.fixture(scope="module")
def large():
    """A 10k+ operation run (demo3-3: 24704 operations)."""
    from dsasim.kernels.blog_demos import SCHEDULES
    schedule = next(s for s in SCHEDULES if s.name == "demo3-3")
    hw = preset(schedule.hardware)
    return simulate(run_schedule(schedule, hw, numeric=False).trace, hw)


def check_perfetto(doc: dict, result) -> None:
    events = doc["traceEvents"]
    assert doc["displayTimeUnit"] in ("ns", "ms")
    assert {e["ph"] for e in events} <= {"M", "X", "C"}
    meta = [e for e in events if e["ph"] == "M"]
    rest = [e for e in events if e["ph"] != "M"]
    assert events[:len(meta)] == meta  # metadata first
    threads = {e["tid"]: e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    assert sorted(threads.values()) == sorted(result.engines)  # one track per engine
    assert any(e["name"] == "process_name" for e in meta)
    ts = [e["ts"] for e in rest]
    assert ts == sorted(ts) and ts[0] >= 0  # monotonic timestamps
    slices = [e for e in rest if e["ph"] == "X"]
    assert len(slices) == int((result.op_engine >= 0).sum())  # a slice per engine operation
    per_track = defaultdict(list)
    for e in slices:
        assert e["pid"] == 1 and e["tid"] in threads  # slices sit on declared tracks
        assert e["dur"] >= 0 and isinstance(e["name"], str) and "[" in e["name"]
        per_track[e["tid"]].append(e)
        kind = e["cat"]
        assert e["name"].startswith(kind + " ")
        assert threads[e["tid"]].startswith({"load": "dma-load", "store": "dma-store", "tensorcore": "tensorcore",
                                             "vector": "vector"}[kind])
    for track in per_track.values():  # an engine runs one operation at a time: slices nest trivially
        cycles = sorted((e["args"]["start_cycle"], e["args"]["end_cycle"]) for e in track)
        assert all(a[1] <= b[0] for a, b in zip(cycles, cycles[1:]))
    counters = defaultdict(list)
    for e in rest:
        if e["ph"] == "C":
            counters[e["name"]].append(e)
            assert all(isinstance(v, (int, float)) and v >= 0 for v in e["args"].values())
    assert set(counters) == {"DDR bandwidth (B/cycle)", "SRAM occupancy (B)", "power (W)"}
    assert all(set(e["args"]) == {"load", "store"} for e in counters["DDR bandwidth (B/cycle)"])
    assert max(sum(e["args"].values()) for e in counters["SRAM occupancy (B)"]) == result.peak_sram_bytes
    assert counters["SRAM occupancy (B)"][-1]["args"] and sum(counters["SRAM occupancy (B)"][-1]["args"].values()) == 0


def test_perfetto_structure(small, tmp_path):
    path = write_perfetto(small, tmp_path / "t.json", "tiles")
    doc = json.loads(path.read_text())
    check_perfetto(doc, small)
    # deterministic: the same result gives the same bytes
    again = write_perfetto(small, tmp_path / "u.json", "tiles")
    assert path.read_bytes() == again.read_bytes()


def test_perfetto_large_run(large, tmp_path):
    assert large.operations > 10_000
    doc = json.loads(write_perfetto(large, tmp_path / "big.json").read_text())
    check_perfetto(doc, large)


def test_perfetto_timestamps_are_microseconds(small):
    events = perfetto_events(small)
    last = max(e["ts"] + e.get("dur", 0) for e in events if e["ph"] != "M")
    assert last == pytest.approx(small.cycles / small.clock_hz * 1e6)


@pytest.mark.parametrize("which", ["small", "large"])
def test_figures_are_produced(which, request, tmp_path):
    result = request.getfixturevalue(which)
    for fn in (plot_bandwidth, plot_gantt, plot_sram):
        path = fn(result, tmp_path / f"{fn.__name__}.png")
        data = path.read_bytes()
        assert data.startswith(PNG) and len(data) > 5000
    svg = plot_gantt(result, tmp_path / "g.svg")
    assert svg.read_text().lstrip().startswith("<?xml")


def test_figures_of_separate_ports_and_single_op(tmp_path):
    hw = dataclasses.replace(preset("blog"), dram_shared_load_store=False, dma_load_channels=2)
    run = run_schedule(Schedule("tiles", _workload(2, 3), lambda s, x, w, y: _tiles(s, x, w, y, 2, 3)), hw,
                       numeric=False)
    result = simulate(run.trace, hw, window_cycles=7)
    assert result.window_cycles == 7
    for fn in (plot_bandwidth, plot_gantt, plot_sram):
        assert fn(result, tmp_path / f"{fn.__name__}.png").read_bytes().startswith(PNG)
    check_perfetto(json.loads(write_perfetto(result, tmp_path / "t.json").read_text()), result)


def test_cli_simulate(tmp_path, monkeypatch, capsys):
    """`dsasim simulate` through the command registry, with the registered schedules replaced by one."""
    import dsasim.cli.common
    from dsasim.cli import build_parser
    schedule = Schedule("tiles", _workload(), _tiles)

    monkeypatch.setattr(dsasim.cli.common, "all_schedules", lambda: [schedule])
    parser = build_parser()
    outputs = []
    for n in (1, 2, 2):
        out = tmp_path / f"run{len(outputs)}"
        args = parser.parse_args(["simulate", "tiles", "--buffers", str(n), "--json", str(out / "r.json"),
                                  "--perfetto", str(out / "t.json"), "--plot", str(out)])
        assert args.func(args) == 0
        outputs.append(out)
        doc = json.loads((out / "r.json").read_text())
        assert doc["ways"] == n and doc["name"] == "tiles" and doc["cycles"] >= doc["roofline_cycles"]
        assert {p.name for p in out.iterdir()} == {"r.json", "t.json", "tiles-bandwidth.png", "tiles-gantt.png",
                                                   "tiles-sram.png"}
    text = capsys.readouterr().out
    assert "cycles" in text and "roofline bound" in text and "TensorCore" in text
    one, two, again = (json.loads((o / "r.json").read_text()) for o in outputs)
    assert two["cycles"] < one["cycles"]  # 2-way tiles overlap loads with compute
    assert (outputs[1] / "r.json").read_bytes() == (outputs[2] / "r.json").read_bytes()  # byte-identical
    assert (outputs[1] / "t.json").read_bytes() == (outputs[2] / "t.json").read_bytes()
    args = parser.parse_args(["simulate", "nope"])
    with pytest.raises(CliError, match="unknown schedule 'nope'"):  # dsasim.cli.main turns it into exit 2
        args.func(args)
