"""A whole network traced in one session and timed in one timeline (`network_trace`, `network_simulation`).

The two-layer network below is small enough to time by hand. Hardware "tiny": 1-byte words, DDR 1 B/cycle with no
setup, separate load and store ports (no port arbitration to derive), one load channel, 32 vector lanes, 4 KiB of
SRAM; a TensorCore step of a 1 x k<=16 x n<=24 tile is 1 cycle. A transfer of b bytes takes b cycles.

  l1: c1[2x4] = a1[2x16] @ w1[16x4]   loop m (tile 1); w1 staged at the top, a1 and c1 per row ("m")
  l2: c2[2x4] = c1[2x4]  @ w2[4x4]    the same nest; its a is l1's result (the same DDR tensor)

Addresses (first fit): w1 0..64, a1 64..80, c1 80..84; after l1, l2's first buffer takes bytes 0.. again.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from dsasim.architect.nests.loopnest import LoopNest, MatmulProblem
from dsasim.architect.studies.network import TENSORCORE, VECTOR, Network, NetworkLayer
from dsasim.architect.studies.network_eval import LayerOutcome, NetworkResult
from dsasim.architect.studies.network_simulation import NetworkTraceMismatch, time_network_trace
from dsasim.architect.studies.network_trace import NetworkTraceError
from dsasim.architect.studies.network_trace import trace_network as _trace_network
from dsasim.cli.common import import_kernel
from dsasim.hardware import preset

TINY = replace(preset("blog"), name="tiny", word_bytes=1, dram_bytes_per_cycle=1.0, dma_setup_cycles=0,
               dram_shared_load_store=False, sram_bytes=4096)


def trace_network(result: NetworkResult):
    """The network's one trace, its kernels found by the command line's resolver."""
    return _trace_network(result, import_kernel)


def _matmul(name: str, m: int, n: int, k: int, reads: tuple[str, ...], loaded: int, stored: int,
            stage: dict[str, str] | None = None, tiles: dict[str, int] | None = None,
            **extra: object) -> LayerOutcome:
    """A matmul entry whose figures are given (hand-derived: the search's would be the same for these nests)."""
    p = MatmulProblem(m, n, k, name=name)
    nest = LoopNest(p, ("m", "n", "k"), tiles or {"m": 1}, stage or {"a": "m", "b": "top", "c": "m"})
    layer = NetworkLayer(name=name, op="matmul", kind=TENSORCORE, shape=p.spec(), problem=p, reads=reads,
                         out_shape=(m, n), **extra)
    return LayerOutcome(layer=layer, status="ok", loaded_bytes=loaded, stored_bytes=stored, cycles=1,
                        schedule=nest.to_json())


def _result(*entries: LayerOutcome) -> NetworkResult:
    net = Network(name="two", input_shape=(2, 16), layers=tuple(e.layer for e in entries))
    return NetworkResult(network=net, hardware=TINY, sram_bytes=TINY.sram_bytes, layers=tuple(entries))


def _ops(sim, tensor: str, kind: str) -> list[tuple[tuple, int, int]]:
    """(region, start, end) of the operations of one kind on one tensor, in program order."""
    return [(r.region, r.start, r.end) for r in sim.records() if r.tensor == tensor and r.kind == kind]


# l1 loads a1 (2 x 16 B) and w1 (64 B), stores c1 (8 B); l2 loads c1 (8 B) and w2 (16 B), stores c2 (8 B)
L1 = _matmul("l1", 2, 4, 16, ("",), loaded=2 * 16 + 16 * 4, stored=8)
L2 = _matmul("l2", 2, 4, 4, ("l1",), loaded=8 + 16, stored=8)


def _simulate(*entries: LayerOutcome, reference: bool = False):
    result = _result(*entries)
    return time_network_trace(trace_network(result), result, reference=reference)


def test_two_layers_by_hand():
    """Every operation's cycles, derived by hand (engines in program order, the rules of model.pyx):
      load  w1          [0, 64)     load engine free
      load  a1[0]       [64, 80)
      tc    c1[0]       [80, 81)    after a1[0] and w1
      store c1[0]       [81, 85)
      load  a1[1]       [81, 97)    slot: a1[0]'s bytes, free once c1[0]'s compute (which read them) ends at 81
      tc    c1[1]       [97, 98)    (c1[1]'s OPEN waited for c1[0]'s bytes: its store ends at 85)
      store c1[1]       [98, 102)
      load  w2          [98, 114)   inter-layer prefetch, limited by SRAM space: w2 takes w1's bytes 0..16,
                                    free once the last operation on w1 (tc c1[1]) ends at 98 - before l1's
                                    last store ends (102): the layers overlap by 4 cycles
      load  c1[0]       [114, 118)  after w2 (one load engine); its store ended at 85
      tc    c2[0]       [118, 119)
      store c2[0]       [119, 123)
      load  c1[1]       [119, 123)  slot: c1[0]'s buffer of l2, free once tc c2[0] ends at 119
      tc    c2[1]       [123, 124)
      store c2[1]       [124, 128)  the network's end: 128 cycles (layers alone: 102 + 30 = 132 minus 4 overlap)"""
    s = _simulate(L1, L2)
    sim = s.sim
    assert _ops(sim, "l1:b", "load") == [(((0, 16), (0, 4)), 0, 64)]
    assert [(a, b) for _, a, b in _ops(sim, "l1:a", "load")] == [(64, 80), (81, 97)]
    assert [(a, b) for _, a, b in _ops(sim, "l1", "store")] == [(81, 85), (98, 102)]
    assert _ops(sim, "l2:b", "load") == [(((0, 4), (0, 4)), 98, 114)]
    assert [(a, b) for _, a, b in _ops(sim, "l1", "load")] == [(114, 118), (119, 123)]
    assert [(a, b) for _, a, b in _ops(sim, "l2", "store")] == [(119, 123), (124, 128)]
    assert s.cycles == 128
    first, second = s.entries
    assert (first.start_cycle, first.end_cycle) == (0, 102)
    assert (second.start_cycle, second.end_cycle) == (98, 128)
    assert second.overlap_cycles == 4 and s.overlap_cycles == 4  # (102 + 30) - 128
    # model == trace: l1 loads 96 B and stores 8, l2 loads 24 and stores 8
    assert (first.loaded_bytes, first.stored_bytes, second.loaded_bytes, second.stored_bytes) == (96, 8, 24, 8)
    assert second.shared_input_bytes == 8  # c1, read by l2 from DDR: what keeping it on chip would save
    # stalls, each idle TensorCore gap charged to the entry whose TensorCore operation ends it: l1's gap [0, 80)
    # is w1's load (64) then a1[0]'s (16), its gap [81, 97) a1[1]'s load; l2's gap [98, 118) (counted from the end
    # of l1's last tc, 98) is w2's load [98, 114) then c1[0]'s [114, 118), its gap [119, 123) c1[1]'s load; the
    # network's drain after the last tc (ends 124) to 128 is l2's
    assert dict(first.stall_cycles) == {"load:l1:b": 64, "load:l1:a": 32}
    assert dict(second.stall_cycles) == {"load:l2:b": 16, "load:l1": 8, "drain": 4}


def test_shared_result_waits_only_for_its_own_rows():
    """Rule (activations shared, DDR RAW per region): l2 stages w2 per row after c1's row, so its first load is
    c1[0] (4 B into bytes 0..4, w1's: free at 98, when tc c1[1] ends). It runs [98, 102), while l1 still stores
    c1[1] ([98, 102)): it waits for the store of its own row (ended at 85), not for the whole tensor (102)."""
    l2 = _matmul("l2", 2, 4, 4, ("l1",), loaded=8 + 2 * 16, stored=8, stage={"a": "m", "b": "m", "c": "m"})
    s = _simulate(L1, l2)
    (row0, start, end), _ = _ops(s.sim, "l1", "load")
    assert (row0, start, end) == (((0, 1), (0, 4)), 98, 102)
    assert [(a, b) for _, a, b in _ops(s.sim, "l1", "store")][1] == (98, 102)


def test_view_of_a_result_is_fenced_after_the_whole_producer():
    """Rule (shapes differ): l2 reads c1 as a (1 x 8) matrix (a flatten): its operand is a tensor of its own, and a
    fence first loads c1's last element (1 B): it waits for the store of c1[1] (ends at 102), so it runs
    [102, 103); every load of l2 comes after it on the one load engine (never optimistic)."""
    l2 = _matmul("l2", 1, 4, 8, ("l1",), loaded=8 + 32, stored=4)
    s = _simulate(L1, l2)
    fence = _ops(s.sim, "l1", "load")
    assert fence == [(((1, 2), (3, 4)), 102, 103)]
    l2_loads = [r for r in s.sim.records() if r.kind == "load" and r.tensor.startswith("l2:")]
    assert l2_loads and min(r.start for r in l2_loads) >= 103
    assert s.entries[1].fence_bytes == 1 and s.entries[1].loaded_bytes == 40  # the fence apart


def test_entries_run_after_the_entries_they_read():
    """Rule (order): an entry whose fused residual reads a later entry's result runs after it (l3 before l2)."""
    l2 = _matmul("l2", 2, 4, 4, ("l1",), loaded=8 + 16 + 8, stored=8, skip_read="l3", extra_read_elements=8,
                 epilogue_ops=8)
    l3 = _matmul("l3", 2, 4, 16, ("",), loaded=96, stored=8)
    nt = trace_network(_result(L1, l2, l3))
    assert [s.name for s in nt.spans] == ["l1", "l3", "l2"]


def test_fused_epilogue_runs_on_each_final_tile_before_its_store():
    """Rule (epilogue): a ReLU fused into l1 (8 lane operations over its 8 output elements) runs on each output
    row once final: c1[0]'s tc ends at 81, its epilogue (4 lane ops, ceil(4 / 32) = 1 cycle) [81, 82), its store
    [82, 86); without the epilogue the store starts at 81."""
    l1 = replace(L1, layer=replace(L1.layer, epilogue_ops=8))
    s = _simulate(l1, L2)
    vector = [(r.start, r.end) for r in s.sim.records() if r.kind == "vector"]
    assert vector[0] == (81, 82)
    assert [(a, b) for _, a, b in _ops(s.sim, "l1", "store")][0] == (82, 86)
    assert s.entries[0].vector_busy_cycles == 2  # two rows, one cycle each


def test_epilogue_waits_for_the_last_reduction_tile():
    """With k tiled by 8 (two partial products per row of l1), the epilogue still runs once per row, after the
    second: 2 vector operations of 1 cycle, not 4."""
    l1 = _matmul("l1", 2, 4, 16, ("",), loaded=96, stored=8, tiles={"m": 1, "k": 8}, epilogue_ops=8)
    s = _simulate(l1, L2)
    assert s.entries[0].vector_busy_cycles == 2
    assert s.sim.engine_operations["vector"] == 2


def test_window_is_the_operations_on_engines():
    """An OPEN takes no engine: l2 here holds its whole 2 x 24 result at the top (bytes 96..144, never used
    before: its OPEN is placed at cycle 0) and w2 (4 x 24 = 96 B) at bytes 0..96, whose last occupants include
    c1[1]'s buffer (80..84), free once its store ends at 102: l2's window starts at 102, not 0."""
    l2 = _matmul("l2", 2, 24, 4, ("l1",), loaded=8 + 96, stored=48, stage={"a": "m", "b": "top", "c": "top"})
    s = _simulate(L1, l2)
    assert _ops(s.sim, "l2:b", "load")[0][1] == 102
    assert s.entries[1].start_cycle == 102


def test_vector_layer_streams_the_bytes_the_model_counts():
    """A vector layer (relu of c1, 8 elements read, 8 written, 8 lane operations) reads l1's result by the shared
    tensor and moves exactly its read and write elements (1-byte words): 8 B loaded, 8 B stored."""
    relu = NetworkLayer(name="act", op="relu", kind=VECTOR, shape="2x4 -> 2x4", read_elements=8, write_elements=8,
                        vector_ops=8, reads=("l1",), out_shape=(2, 4))
    act = LayerOutcome(layer=relu, status="ok", loaded_bytes=8, stored_bytes=8, cycles=16)
    s = _simulate(L1, act)
    e = s.entries[1]
    assert (e.loaded_bytes, e.stored_bytes, e.fence_bytes) == (8, 8, 0)
    assert e.start_cycle >= 85  # its load of c1's row 0 waits for that row's store


def test_model_trace_mismatch_fails_loudly():
    """An entry whose figures differ from what its schedule moves is named, never timed silently."""
    wrong = replace(L2, loaded_bytes=L2.loaded_bytes + 1)
    result = _result(L1, wrong)
    with pytest.raises(NetworkTraceMismatch, match="l2: traced 24 B loaded"):
        time_network_trace(trace_network(result), result)


def test_refuses_a_partial_network_and_an_unknown_kind(monkeypatch):
    from dsasim.architect.studies.network_trace import ENTRY_RUNNERS

    left = LayerOutcome(layer=NetworkLayer(name="odd", op="fft", kind="unmodelled", shape="?"),
                        status="unmodelled", reason="no")
    with pytest.raises(NetworkTraceError, match="left out"):
        trace_network(_result(L1, left))
    monkeypatch.delitem(ENTRY_RUNNERS, "levelnest")  # a kind with no runner (levelnest has one: take it away)
    levels = replace(L1, schedule={**L1.schedule, "kind": "levelnest", "inner": {}})  # as a LevelNest's schedule
    with pytest.raises(NetworkTraceError, match="levelnest schedule, which the network trace has no kernel for"):
        trace_network(_result(levels))


def test_reference_scheduler_agrees():
    """The simpy reference times the network's one trace as the fast scheduler does."""
    l1 = replace(L1, layer=replace(L1.layer, epilogue_ops=8))
    fast, ref = _simulate(l1, L2), _simulate(l1, L2, reference=True)
    assert [(e.start_cycle, e.end_cycle) for e in fast.entries] == [(e.start_cycle, e.end_cycle)
                                                                     for e in ref.entries]
    # with the epilogue l1's stores move one cycle later (c1[1]'s to [99, 103)), but l2 still waits for w2, whose
    # load waits for tc c1[1] (ends at 98) as before: the network still ends at 128
    assert fast.cycles == ref.cycles == 128
    assert (fast.entries[0].end_cycle, ref.entries[0].end_cycle) == (103, 103)


def test_bounds_and_json_determinism():
    """The total is never below the network's roofline nor below each entry's own; the JSON is the same bytes
    from two runs."""
    a, b = _simulate(L1, L2), _simulate(L1, L2)
    assert a.cycles >= a.roofline_cycles and all(a.cycles >= e.roofline_cycles for e in a.entries)
    assert a.cycles >= a.layer_roofline_sum  # 128 >= 96 + 24 (these two do not overlap enough to beat it)
    assert json.dumps(a.to_json()) == json.dumps(b.to_json())


# ------------------------------------------------------------------------------------------------ the command
_NET = ("import torch.nn as nn\n"
        "example_input_shape = (1, 4, 8, 8)\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.c1 = nn.Conv2d(4, 8, 3, padding=1, bias=False)\n"
        "        self.c2 = nn.Conv2d(8, 8, 3, padding=1)\n"
        "        self.pool = nn.MaxPool2d(2)\n"
        "        self.fc = nn.Linear(8 * 4 * 4, 24)\n"
        "    def forward(self, x):\n"
        "        y = self.c2(self.c1(x).relu()).relu()\n"
        "        return self.fc(self.pool(y).flatten(1))\n"
        "class Mlp(nn.Module):\n"
        "    example_input_shape = (2, 8)\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.a = nn.Linear(8, 24)\n"
        "        self.b = nn.Linear(24, 16)\n"
        "    def forward(self, x):\n"
        "        return self.b(self.a(x).relu())\n")


@pytest.mark.parametrize("fusion", [[], ["--no-fusion"]])
def test_network_simulate_command(tmp_path, monkeypatch, capsys, fusion):
    """`dsasim network --simulate`: the per-entry table, totals, the JSON's simulation (every entry's traced bytes
    equal the search's) and a Perfetto trace with a 'layers' track of one slice per entry; without --simulate
    the JSON has no simulation."""
    from dsasim.cli import main

    (tmp_path / "simnets.py").write_text(_NET)
    monkeypatch.syspath_prepend(str(tmp_path))
    js, pf, png = tmp_path / "s.json", tmp_path / "s.perfetto.json", tmp_path / "t.png"
    assert main(["network", "simnets:Net", "--simulate", "--json", str(js), "--perfetto", str(pf), "--quiet",
                 "--timeline-plot", str(png), "--jobs", "1", *fusion]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = capsys.readouterr().out
    assert "cycles simulated" in out and "model == trace for every entry" in out
    data = json.loads(js.read_text())
    sim = data["simulation"]
    names = [x["name"] for x in data["layers"]]
    assert sorted(x["name"] for x in sim["layers"]) == sorted(names)
    assert all(x["loaded_bytes"] == x["model_loaded_bytes"] and x["stored_bytes"] == x["model_stored_bytes"]
               for x in sim["layers"])
    assert sim["loaded_bytes"] == data["loaded_bytes"] and sim["stored_bytes"] == data["stored_bytes"]
    assert sim["cycles"] >= sim["roofline_cycles"] and sim["cycles"] == max(x["end_cycle"] for x in sim["layers"])
    assert sim["fence_bytes"] >= 1  # the flatten before fc: fc's input is a fenced copy
    trace = json.loads(pf.read_text())["traceEvents"]
    tid = next(e["tid"] for e in trace if e.get("name") == "thread_name" and e["args"]["name"] == "layers")
    assert sorted(e["name"] for e in trace if e.get("tid") == tid and e["ph"] == "X") == sorted(names)
    assert main(["network", "simnets:Net", "--json", str(js), "--quiet", "--jobs", "1", *fusion]) == 0
    assert "simulation" not in json.loads(js.read_text())


def test_network_simulate_a_gemm_chain(tmp_path, monkeypatch, capsys):
    """A fused GEMM chain (a -> relu -> b) runs through its chain kind's kernel in the one session."""
    from dsasim.cli import main

    (tmp_path / "simmlp.py").write_text(_NET)
    monkeypatch.syspath_prepend(str(tmp_path))
    js = tmp_path / "m.json"
    assert main(["network", "simmlp:Mlp", "--simulate", "--json", str(js), "--quiet", "--jobs", "1"]) == 0
    sim = json.loads(js.read_text())["simulation"]
    assert [(x["name"], x["kind"]) for x in sim["layers"]] == [("a+b", "chain")]


@pytest.mark.parametrize("flag, name", [("--perfetto", "t.json"), ("--timeline-plot", "t.png")])
def test_network_timeline_outputs_need_simulate(tmp_path, capsys, flag, name):
    from dsasim.cli import main

    assert main(["network", "resnet18", flag, str(tmp_path / name)]) == 2
    err = capsys.readouterr().err
    assert f"{flag} needs --simulate" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_sweep_sram_simulates_the_network_at_each_size(tmp_path, monkeypatch, capsys):
    """`sweep-sram --network --simulate-network`: per size a simulation whose traffic is that size's point's."""
    from dsasim.cli import main

    (tmp_path / "simsweep.py").write_text(_NET)
    monkeypatch.syspath_prepend(str(tmp_path))
    js = tmp_path / "w.json"
    assert main(["sweep-sram", "--network", "simsweep:Net", "--sizes", "8KiB,64KiB", "--simulate-network",
                 "--json", str(js), "--quiet", "--jobs", "1"]) == 0
    assert "simulated in one timeline per size" in capsys.readouterr().out
    data = json.loads(js.read_text())
    assert [s["sram_bytes"] for s in data["simulation"]] == [8192, 65536]
    for point, sim in zip(data["points"], data["simulation"]):
        assert (sim["loaded_bytes"], sim["stored_bytes"]) == (point["loaded_bytes"], point["stored_bytes"])
        assert sim["estimated_cycles"] == point["cycles"]


@pytest.mark.parametrize("argv, message", [
    (["sweep-sram", "--network", "resnet18", "--sizes", "1KiB", "--simulate-network", "--vary",
      "dram_bytes_per_cycle=16,32"], "one network on one hardware"),
    (["sweep-sram", "blog-conv", "--sizes", "1KiB", "--simulate-network"], "it applies to --network sweeps"),
])
def test_sweep_simulate_network_refusals(argv, message, capsys):
    from dsasim.cli import main

    assert main(argv + ["--quiet"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_the_import_records_the_data_flow():
    """Per layer, which result each operand reads, a fused residual's other operand and the result's shape (read
    off ResNet-18's graph: the maxpool reads conv1's result; layer2.0.conv2's residual add, fused into it, reads the
    projection layer2.0.downsample.0, which the graph lists after it; fc reads the pooled result through a
    flatten); none of it is in the JSON."""
    from dsasim.architect.studies.network import load_network

    net = load_network("resnet18")
    by = {layer.name: layer for layer in net.layers}
    assert by["conv1"].reads == ("",) and by["conv1"].out_shape == (1, 64, 112, 112)
    assert by["maxpool"].reads == ("conv1",) and by["maxpool"].out_shape == (1, 64, 56, 56)
    assert by["layer2.0.conv2"].reads == ("layer2.0.conv1",)
    assert by["layer2.0.conv2"].skip_read == "layer2.0.downsample.0"
    names = [layer.name for layer in net.layers]
    assert names.index("layer2.0.downsample.0") > names.index("layer2.0.conv2")
    assert by["fc"].reads == ("avgpool",) and by["avgpool"].out_shape == (1, 512, 1, 1)
    assert not {"reads", "skip_read", "out_shape"} & set(by["fc"].to_json())
