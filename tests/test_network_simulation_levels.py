"""A network on hardware with levels below the SRAM (blog-l1) traced in one session and timed in one timeline
(issue 30): each tensorcore layer's best `LevelNest` runs through `execute_levels` (the "levelnest" entry runner),
its fused epilogue on each final output tile, every inner level's stages and write-backs on that level's DMA
engines (`dma-<level>`, `dma-<level>-wb`).

The network (tests/test_network_levels.py's): two linears, a[16x96] = x[16x64] @ Wa[64x96] (its ReLU fused as the
epilogue), b[16x32] = a @ Wb[96x32], then a softmax. blog's word is 1 byte, and on 64 KiB of SRAM (L1w 64 KiB, L1i
32 KiB, L1acc 16 KiB) every tensor fits every level, so each level moves each of its tensors exactly once:
  a: L1w stages Wa = 64 * 96 = 6,144 B; L1i stages x = 16 * 64 = 1,024 B; L1acc writes a back = 16 * 96 = 1,536 B
  b: L1w stages Wb = 96 * 32 = 3,072 B; L1i stages a = 16 * 96 = 1,536 B; L1acc writes b back = 16 * 32 = 512 B
  DDR: a loads 6,144 + 1,024 = 7,168 B and stores 1,536 B; b loads 3,072 + 1,536 = 4,608 B and stores 512 B.
"""

from __future__ import annotations

import dataclasses
import json

from pathlib import Path

import pytest

from dsasim import preset
from dsasim.architect.studies.network import import_network
from dsasim.architect.studies.network_eval import evaluate_network
from dsasim.architect.studies.network_simulation import NetworkTraceMismatch, simulate_network
from dsasim.cli.common import import_kernel

L1 = preset("blog-l1")
KIB = 1024


from dsasim.user_code import load_module

# the network of examples/network_levels.py (two linears, a ReLU fused between, a softmax), loaded from the example
# itself so the docs' figure and these tests cannot describe two different networks
TwoLinear = load_module(str(Path(__file__).resolve().parent.parent / "examples" / "network_levels.py"), "network",
                        "examples/network_levels.py").TwoLinear


@pytest.fixture(scope="module")
def result():
    network = import_network(TwoLinear(), (16, 64), "two-linear")
    return evaluate_network(network, [L1], [64 * KIB])[0][0]


@pytest.fixture(scope="module")
def simulation(result):
    return simulate_network(result, import_kernel)


def test_entries_run_their_level_nests(simulation):
    assert [(e.name, e.kind) for e in simulation.entries] == [("a", "levelnest"), ("b", "levelnest"),
                                                              ("softmax", "vector")]


def test_ddr_and_level_bytes_are_the_level_search_s_and_the_hand_derived(result, simulation):
    entries = {e.name: e for e in simulation.entries}
    for x in result.layers:  # model == trace: DDR bytes and every level's (the simulation also checks them)
        e = entries[x.layer.name]
        assert (e.loaded_bytes, e.stored_bytes) == (x.loaded_bytes, x.stored_bytes)
        assert e.level_bytes == e.model_level_bytes
    # hand-derived (module docstring): every tensor moves once per level
    assert entries["a"].level_bytes == (("L1w", 6144, 0), ("L1i", 1024, 0), ("L1acc", 0, 1536))
    assert entries["b"].level_bytes == (("L1w", 3072, 0), ("L1i", 1536, 0), ("L1acc", 0, 512))
    assert entries["softmax"].level_bytes == (("L1w", 0, 0), ("L1i", 0, 0), ("L1acc", 0, 0))
    assert (entries["a"].loaded_bytes, entries["a"].stored_bytes) == (7168, 1536)
    assert (entries["b"].loaded_bytes, entries["b"].stored_bytes) == (4608, 512)
    assert simulation.level_bytes == [("L1w", 9216, 0), ("L1i", 2560, 0), ("L1acc", 0, 2048)]


def test_the_level_dma_engines_do_the_level_transfers(simulation):
    busy = simulation.sim.engine_busy_cycles
    # every level stages in (L1w, L1i) or writes back (L1acc) on its own engine; nothing writes L1w or L1i back
    assert busy["dma-L1w"] > 0 and busy["dma-L1i"] > 0 and busy["dma-L1acc-wb"] > 0
    assert busy["dma-L1w-wb"] == 0 and busy["dma-L1i-wb"] == 0


def test_the_fused_relu_runs_in_the_level_nest(result, simulation):
    # a's ReLU is its epilogue (16 x 96 lane operations on the vector unit); b has none
    entries = {e.name: e for e in simulation.entries}
    assert {x.layer.name: x.layer.epilogue_ops for x in result.layers}["a"] == 16 * 96
    assert entries["a"].vector_busy_cycles >= 16 * 96 // L1.vector_lanes
    assert entries["b"].vector_busy_cycles == 0


def test_a_reader_on_levels_loads_a_fenced_copy(simulation):
    # rule: on levels a result (its role: output) is read through a copy fenced after its producer: one word per
    # DMA load channel
    entries = {e.name: e for e in simulation.entries}
    assert entries["b"].fence_bytes == L1.dma_load_channels * L1.word_bytes


def test_the_fast_scheduler_equals_the_simpy_reference(result, simulation):
    reference = simulate_network(result, import_kernel, reference=True)
    assert reference.to_json() == simulation.to_json()


def test_json_is_deterministic_and_says_the_levels(result, simulation):
    again = simulate_network(result, import_kernel)
    assert json.dumps(again.to_json()) == json.dumps(simulation.to_json())
    data = simulation.to_json()
    assert data["levels"] == [{"level": "L1w", "loaded_bytes": 9216, "stored_bytes": 0},
                              {"level": "L1i", "loaded_bytes": 2560, "stored_bytes": 0},
                              {"level": "L1acc", "loaded_bytes": 0, "stored_bytes": 2048}]
    a = data["layers"][0]
    assert a["levels"][0] == {"level": "L1w", "loaded_bytes": 6144, "stored_bytes": 0,
                              "model_loaded_bytes": 6144, "model_stored_bytes": 0}


def test_a_level_that_differs_from_the_model_fails_loudly(result):
    # the model claims one byte more staged into L1w for layer a: the trace moves the hand-derived 6,144
    wrong = [dataclasses.replace(x, level_bytes=(("L1w", 6145, 0), *x.level_bytes[1:])) if x.layer.name == "a"
             else x for x in result.layers]
    with pytest.raises(NetworkTraceMismatch, match=r"a: .*L1w: traced 6,144 / 0, model 6,145 / 0"):
        simulate_network(dataclasses.replace(result, layers=tuple(wrong)), import_kernel)


_RES = ("import torch.nn as nn\n"
        "example_input_shape = (1, 4, 8, 8)\n"
        "class Res(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.c1 = nn.Conv2d(4, 4, 3, padding=1)\n"
        "        self.c2 = nn.Conv2d(4, 4, 3, padding=1, bias=False)\n"
        "        self.down = nn.Conv2d(4, 8, 1, stride=2, bias=False)\n"
        "        self.pool = nn.MaxPool2d(2)\n"
        "        self.fc = nn.Linear(8 * 2 * 2, 10)\n"
        "    def forward(self, x):\n"
        "        y = (self.c2(self.c1(x).relu()) + x).relu()\n"
        "        return self.fc(self.pool(self.down(y)).flatten(1))\n")


def test_network_simulate_command_on_levels(tmp_path, monkeypatch, capsys):
    """`dsasim network --hardware blog-l1 --simulate`: convs with a bias, a fused residual add and ReLU, a 1x1
    stride-2 conv, a pool, a flatten and a linear, each entry's DDR and level bytes equal to the search's; the
    table has a column per level and the totals a line."""
    from dsasim.cli import main

    (tmp_path / "simres.py").write_text(_RES)
    monkeypatch.syspath_prepend(str(tmp_path))
    js, page = tmp_path / "r.json", tmp_path / "r.html"
    assert main(["network", "simres:Res", "--hardware", "blog-l1", "--sram", "64KiB", "--simulate", "--json",
                 str(js), "--html", str(page), "--quiet", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "L1w in/out B" in out and "levels below the SRAM traced" in out
    data = json.loads(js.read_text())
    totals = "; ".join(f"{lv['level']} {lv['loaded_bytes']:,} / {lv['stored_bytes']:,} B"
                       for lv in data["simulation"]["levels"])
    assert totals in page.read_text(encoding="utf-8")  # the page's simulation section says the levels too
    sim, by_name = data["simulation"], {x["name"]: x for x in data["layers"]}
    assert [x["kind"] for x in sim["layers"]] == ["levelnest", "levelnest", "levelnest", "vector", "levelnest"]
    for x in sim["layers"]:
        layer = by_name[x["name"]]
        assert (x["loaded_bytes"], x["stored_bytes"]) == (layer["loaded_bytes"], layer["stored_bytes"])
        moved = [(lv["level"], lv["loaded_bytes"], lv["stored_bytes"]) for lv in layer.get("levels", ())]
        assert [(lv["level"], lv["loaded_bytes"], lv["stored_bytes"]) for lv in x["levels"]
                if lv["loaded_bytes"] or lv["stored_bytes"]] == [row for row in moved if row[1] or row[2]]
    assert sim["cycles"] >= sim["roofline_cycles"]


def test_the_level_trace_estimate_counts_each_level_nest_s_tensorcore_steps(result):
    """One TensorCore step per inner tile of the whole problem (`estimate_level_trace_work`), summed over the
    LevelNest entries: counted here from each entry's schedule JSON (its inner tiles over the layer's sizes)."""
    from math import ceil

    from dsasim.architect.search.level_search import LEVEL_TRACE_SECONDS_PER_STEP
    from dsasim.architect.studies.network_trace import level_trace_seconds

    sizes = {"a": {"m": 16, "n": 96, "k": 64}, "b": {"m": 16, "n": 32, "k": 96}}  # the two linears, by hand
    steps = 0
    for x in result.layers:
        if x.layer.name in sizes:
            tiles = x.schedule["inner"]["tiles"]
            steps += ceil(16 / tiles["m"]) * ceil(sizes[x.layer.name]["n"] / tiles["n"]) * ceil(
                sizes[x.layer.name]["k"] / tiles["k"])
    assert steps > 0
    assert level_trace_seconds(result) == pytest.approx(steps * LEVEL_TRACE_SECONDS_PER_STEP)


def test_a_long_level_trace_is_announced_before_it_starts(tmp_path, capsys, monkeypatch):
    import dsasim.cli.network as network_cli
    from dsasim.cli import main

    monkeypatch.setattr(network_cli, "LONG_TRACE_SECONDS", 0.0)  # every trace on levels counts as long
    example = Path(__file__).resolve().parent.parent / "examples" / "network_levels.py"
    assert main(["network", f"{example}:TwoLinear", "--hardware", "blog-l1", "--sram",
                 "64KiB", "--simulate", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "warning: tracing" in err and "on the levels below the SRAM of blog-l1" in err
