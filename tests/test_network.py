"""Whole networks: the torch.fx import, the per-layer evaluation, the executors and the two commands.

Expected values come from hand derivation (noted beside each), from the paper's ResNet-50 table in
dsasim.architect.problems.layers (an independent source: written from He et al. 2016, not from the modules), or from a
separate single-layer `search` of the same shape.
"""

from __future__ import annotations

import json
import math
import re

import pytest
import torch
import torch.nn as nn

from dsasim import preset
from dsasim.architect.studies.executor import InProcess, open_executor
from dsasim.architect.problems.layers import resnet50_layers
from dsasim.architect.nests.loopnest import ConvProblem, MatmulProblem
from dsasim.architect.studies.network import NetworkImportError, import_network, load_network
from dsasim.architect.studies.network_eval import evaluate_network, smallest_within, sweep_network, vary_hardware
from dsasim.architect.search.layer_search import search
from dsasim.cli import main

BLOG = preset("blog")


class ConvBnRelu(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.act = nn.ReLU()
        self.conv2 = nn.Conv2d(8, 8, 1, bias=False)
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.act(self.bn(self.conv(x)))
        z = torch.relu(self.conv2(y) + y)  # residual add, then an activation on the add's result
        return self.pool(z)


def test_conv_bn_relu_fuse_and_the_residual_add_runs_on_the_conv_output_tile():
    net = import_network(ConvBnRelu(), (1, 4, 10, 10), "cbr")
    assert [(x.name, x.kind) for x in net.layers] == [("conv", "tensorcore"), ("conv2", "tensorcore"),
                                                      ("pool", "vector")]
    conv = net.layers[0]
    assert conv.problem == ConvProblem(n=1, ic=4, oc=8, h=10, w=10, kh=3, padding=1)
    # the folded bn's shift (a bias of 8) and the relu each add one lane operation per element of 1x8x10x10
    assert conv.fused == ("bn", "act") and conv.epilogue_ops == 2 * 8 * 10 * 10 and conv.relu
    assert conv.bias_elements == 8
    conv2 = net.layers[1]
    assert conv2.problem == ConvProblem(n=1, ic=8, oc=8, h=10, w=10, kh=1)
    # the add takes conv2's tile and loads y (800 elements); the relu after it runs on the same tile
    assert (conv2.fused, conv2.extra_read_elements, conv2.epilogue_ops) == (("add", "relu"), 800, 1600)
    assert net.chains == ()  # y also feeds the add: conv's result is not conv2's alone
    pool = net.layers[2]
    # 3x3 stride-2 pad-1 pool of 10x10 -> 5x5: 8 * 25 outputs x 9 taps = 1800 > 800 inputs
    assert (pool.read_elements, pool.write_elements, pool.vector_ops) == (800, 200, 1800)
    result = evaluate_network(net, [BLOG], [1 << 16], fusion=False)[0][0]
    alone = search(conv2.problem, BLOG, sram_bytes=1 << 16).best_traffic
    assert result.layers[1].loaded_bytes == alone.loaded_bytes + 800  # 1-byte words


class TwoAdds(nn.Module):
    """An add of two tensors neither of which a layer alone produced stays a vector layer."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + x * 2.0)


def test_an_add_no_layer_can_take_is_a_vector_layer_and_its_relu_fuses_into_it():
    net = import_network(TwoAdds(), (1, 4, 5, 5))
    assert [(x.op, x.kind) for x in net.layers] == [("mul", "vector"), ("add", "vector")]
    add = net.layers[1]
    # reads x and 2x (100 each), writes 100; 200 lane ops for the add, 100 for the relu fused into it
    assert (add.read_elements, add.write_elements, add.vector_ops, add.fused) == (200, 100, 300, ("relu",))


class Block(nn.Module):
    """conv -> relu -> conv, + the block's input, relu: a basic block with an identity residual."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.b = nn.Conv2d(8, 8, 3, padding=1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.b(torch.relu(self.a(x))) + x)


def test_a_conv_run_with_an_identity_residual_becomes_a_chain_and_fusion_never_costs_traffic():
    from dsasim.architect.problems.chain import ConvChain
    from dsasim.architect.search.fused_search import search_chain
    net = import_network(Block(), (1, 8, 12, 12))
    (nc,) = net.chains
    layer = ConvProblem(n=1, ic=8, oc=8, h=12, w=12, kh=3, padding=1)
    assert nc.members == (0, 1) and nc.chain == ConvChain([layer, layer], relu=[True, True], residual=True)
    assert nc.extra_read_elements == 0  # the identity residual is the chain's own input
    sizes = [1 << 10, 1 << 12, 1 << 14]
    fused = evaluate_network(net, [BLOG], sizes)[0]
    alone = evaluate_network(net, [BLOG], sizes, fusion=False)[0]
    for f, a, cap in zip(fused, alone, sizes):
        (entry,) = f.layers
        assert entry.layer.kind == "chain" and entry.layer.name == "a+b"
        ref = search_chain(nc.chain, BLOG, sram_bytes=cap)
        totals = ref.totals(ref.best, ref.fold(ref.best))
        # (cycles may differ: among nests of equal traffic, a one-size search and a sweep can break ties apart)
        assert (entry.loaded_bytes, entry.stored_bytes) == (totals["loaded_bytes"], totals["stored_bytes"])
        assert entry.compulsory_bytes == nc.chain.compulsory_bytes(1) == 8 * 144 * 2 + 2 * 8 * 8 * 9
        assert f.traffic_bytes <= a.traffic_bytes  # layer by layer is one of the partitions
    assert fused[-1].traffic_bytes < alone[-1].traffic_bytes  # 16 KiB: fused keeps the intermediate on chip


class ProjectionBlock(nn.Module):
    """conv (stride 2) -> relu -> conv, + a 1x1 stride-2 projection of the input: a chain without identity skip."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(4, 8, 3, stride=2, padding=1, bias=False)
        self.b = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.proj = nn.Conv2d(4, 8, 1, stride=2, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.b(torch.relu(self.a(x))) + self.proj(x))


def test_a_projection_skip_is_loaded_by_the_chain_and_the_projection_is_a_layer():
    from dsasim.architect.search.fused_search import search_chain
    net = import_network(ProjectionBlock(), (1, 4, 12, 12))
    (nc,) = net.chains
    assert [net.layers[i].name for i in nc.members] == ["a", "b"] and not nc.chain.residual
    assert nc.extra_read_elements == 8 * 6 * 6  # the projection's output, added on b's output tile
    cap = 1 << 12
    result = evaluate_network(net, [BLOG], [cap])[0][0]
    entry, proj = result.layers
    ref = search_chain(nc.chain, BLOG, sram_bytes=cap)
    assert entry.loaded_bytes == ref.totals(ref.best)["loaded_bytes"] + 288  # 1-byte words
    assert entry.compulsory_bytes == nc.chain.compulsory_bytes(1) + 288
    assert proj.layer.name == "proj" and proj.stored_bytes > 0  # stored, then loaded by the chain


def test_resnet18_blocks_are_chains_with_identity_or_projection_skips():
    net = load_network("resnet18")
    names = [tuple(net.layers[i].name for i in nc.members) for nc in net.chains]
    assert names == [(f"layer{s}.{b}.conv1", f"layer{s}.{b}.conv2") for s in range(1, 5) for b in range(2)]
    for nc, (s, b) in zip(net.chains, [(s, b) for s in range(1, 5) for b in range(2)]):
        projection = b == 0 and s > 1  # the first block of stages 2-4 adds a 1x1 stride-2 projection
        assert nc.chain.residual == (not projection)
        # the projection's output (64 * 2**(s-1) channels at 56 / 2**(s-1)) is loaded by the last conv; each of
        # the two convs' folded batch norms adds a shift per output channel (64 * 2**(s-1)), loaded beside them
        biases = 2 * 64 * 2 ** (s - 1)
        assert nc.extra_read_elements == (64 * 2 ** (s - 1) * (56 // 2 ** (s - 1)) ** 2 if projection else 0) + biases


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (2, 5, 16)
        q = self.q(x).view(2, 5, 4, 4).transpose(1, 2)  # (2, 4 heads, 5, 4)
        s = torch.matmul(q, q.transpose(-1, -2)) / 2.0  # (2, 4, 5, 5): 8 independent 5x4 @ 4x5 products
        return torch.softmax(s, dim=-1)


def test_linear_folds_the_batch_and_a_batched_matmul_counts_its_products():
    net = import_network(Attention(), (2, 5, 16), "att")
    lin, mm, soft = net.layers
    assert lin.problem == MatmulProblem(m=10, n=16, k=16) and lin.count == 1  # 2 x 5 rows
    assert mm.problem == MatmulProblem(m=5, n=5, k=4) and mm.count == 8
    assert mm.fused == ("truediv",) and mm.epilogue_ops == 200  # the scale on the 2x4x5x5 scores
    assert soft.kind == "vector" and soft.vector_ops == 3 * 200 and soft.read_elements == soft.write_elements == 200


class Unknown(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(self.conv(x), dim=1)


def test_an_op_dsasim_does_not_model_is_listed_by_name_and_never_dropped():
    net = import_network(Unknown(), (1, 3, 4, 4))
    assert [(x.name, x.kind) for x in net.layers] == [("conv", "tensorcore"), ("cumsum", "unmodelled")]
    assert "cumsum" in net.layers[1].reason
    result = evaluate_network(net, [BLOG], [1 << 16])[0][0]
    assert result.unmodelled == ["cumsum"] and result.to_json()["unmodelled"] == ["cumsum"]
    assert result.traffic_bytes == result.layers[0].traffic_bytes  # the unmodelled layer adds nothing


class ShapeBranch(nn.Module):
    """fx cannot trace Python control flow on a shape; torch.export specialises it."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(6, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[0] > 1:
            x = x * 2
        return self.fc(x)


def test_a_module_fx_cannot_trace_falls_back_to_torch_export():
    net = import_network(ShapeBranch(), (4, 6))
    assert net.traced_with == "torch.export"
    assert [x.op for x in net.layers if x.kind == "tensorcore"] == ["linear"]
    assert net.of_kind("tensorcore")[0].problem == MatmulProblem(m=4, n=3, k=6)


def test_bad_networks_and_inputs_raise_errors_that_say_what_to_do():
    with pytest.raises(NetworkImportError, match="must be a torch.nn.Module"):
        import_network(object(), (1, 3))
    with pytest.raises(ValueError, match="positive integers"):
        import_network(ConvBnRelu(), (1, 0, 4, 4))
    with pytest.raises(NetworkImportError, match="cannot trace"):
        import_network(ConvBnRelu(), (1, 5, 10, 10))  # 5 channels into a 4-channel conv
    with pytest.raises(ValueError, match="unknown network 'resnet51'"):
        load_network("resnet51")
    with pytest.raises(ValueError, match="bert-base-layer:seq=384"):
        load_network("bert-base-layer:len=3")
    with pytest.raises(ValueError, match="no such module"):
        load_network("no_such_module_xyz:Net")


# ---------------------------------------------------------------------------------------- the presets
def _caffe_name(path: str) -> str:
    """torchvision module path -> the Caffe model's layer name (layer1.0.conv1 -> res2a_branch2a)."""
    if path == "conv1":
        return path
    m = re.fullmatch(r"layer(\d)\.(\d+)\.(conv(\d)|downsample\.0)", path)
    assert m, path
    block = f"res{int(m.group(1)) + 1}{chr(ord('a') + int(m.group(2)))}"
    return f"{block}_branch1" if m.group(4) is None else f"{block}_branch2{'abc'[int(m.group(4)) - 1]}"


def test_resnet50_caffe_preset_gives_the_papers_53_convs_and_v1_5_moves_the_stride():
    table = resnet50_layers()  # written from the paper, independently of the modules
    net = load_network("resnet50-caffe")
    convs = {_caffe_name(x.name): x.problem for x in net.layers if x.op == "conv2d"}
    assert len(convs) == 53 and set(convs) == set(table)
    assert all(convs[name] == p for name, p in table.items())
    assert net.layer("fc").problem == MatmulProblem(m=1, n=1000, k=2048)
    v15 = {_caffe_name(x.name): x.problem for x in load_network("resnet50").layers if x.op == "conv2d"}
    moved = sorted(n for n in v15 if v15[n] != convs[n])
    # the three stride-2 blocks: the stride leaves branch2a (1x1) for branch2b (3x3), whose input doubles
    assert moved == [f"res{s}a_branch2{b}" for s in (3, 4, 5) for b in "ab"]
    assert v15["res3a_branch2b"] == ConvProblem(n=1, ic=128, oc=128, h=56, w=56, kh=3, stride=2, padding=1)


def test_presets_import_whole_and_bert_takes_its_sequence_length():
    counts = {name: len(load_network(name).of_kind("tensorcore")) for name in ("resnet18", "mobilenetv2")}
    assert counts == {"resnet18": 21, "mobilenetv2": 53}  # 20 convs + fc; 52 convs + classifier
    assert load_network("bert-base-layer", (2, 32, 768)).layer("query").problem == MatmulProblem(m=64, n=768, k=768)
    with pytest.raises(ValueError, match=r"\(batch, sequence, 768\)"):
        load_network("bert-base-layer", (1, 32, 512))
    bert = load_network("bert-base-layer:seq=384")
    mats = {x.name: (x.problem, x.count) for x in bert.of_kind("tensorcore")}
    assert mats["query"] == (MatmulProblem(m=384, n=768, k=768), 1)
    assert mats["matmul"] == (MatmulProblem(m=384, n=384, k=64), 12)  # 12 heads of q @ k^T
    assert mats["ffn_in"] == (MatmulProblem(m=384, n=3072, k=768), 1)
    assert bert.layer("ffn_in").fused == ("gelu",)
    assert not bert.of_kind("unmodelled")


# --------------------------------------------------------------------------------------- evaluation
def test_layer_figures_match_a_single_layer_search_and_hand_counts():
    net = import_network(Attention(), (2, 5, 16), "att")
    cap = 4096
    result = evaluate_network(net, [BLOG], [cap])[0][0]
    lin, mm, soft = result.layers
    alone = search(MatmulProblem(m=5, n=5, k=4), BLOG, sram_bytes=cap).best_traffic
    assert (mm.loaded_bytes, mm.stored_bytes) == (8 * alone.loaded_bytes, 8 * alone.stored_bytes)
    assert mm.macs == 8 * 5 * 5 * 4
    # softmax, 1-byte words: reads and writes 200 B; 600 lane ops / 32 lanes = 19 cycles > 400 B / 32 = 13
    assert (soft.loaded_bytes, soft.stored_bytes, soft.cycles, soft.lower_bound_bytes) == (200, 200, 19, 400)
    assert result.traffic_bytes == sum(x.traffic_bytes for x in result.layers)
    assert result.cycles == sum(x.cycles for x in result.layers)
    for x in result.layers:
        assert x.compulsory_bytes <= x.lower_bound_bytes <= x.traffic_bytes


def test_each_distinct_shape_is_searched_once_per_hardware():
    class Counting(InProcess):
        def __init__(self) -> None:
            self.tasks = []

        def run(self, fn, tasks, label="", progress=False):
            self.tasks.extend(tasks)
            return super().run(fn, tasks, label, progress)

    net = load_network("resnet18", (1, 3, 32, 32))
    ex = Counting()
    hws = vary_hardware([BLOG], ["dram_bytes_per_cycle=16,32"])
    evaluate_network(net, hws, [1 << 14, 1 << 16], ex)
    shapes = {x.problem for x in net.layers if x.problem is not None}
    assert len(net.of_kind("tensorcore")) == 21 and len(shapes) == 12  # ResNet-18: 20 convs + fc, 12 distinct
    assert len(ex.tasks) == 2 * 12


def test_a_layer_no_tiling_fits_is_named_and_the_rest_still_reported(capsys):
    net = import_network(ConvBnRelu(), (1, 4, 10, 10), "cbr")
    result = evaluate_network(net, [BLOG], [2])[0][0]  # 2 bytes: not even one element of each operand
    assert result.unplaceable == ["conv", "conv2"]
    reason = result.layers[0].reason
    assert "no tiling of conv:n=1,ic=4,oc=8,h=10,w=10,k=3,s=1,p=1 fits in 2 B of SRAM" in reason
    assert result.traffic_bytes == sum(x.traffic_bytes for x in result.layers[2:]) > 0  # the vector layers


def test_smallest_within_picks_the_first_size_under_the_limit():
    net = load_network("resnet18", (1, 3, 64, 64))
    sizes = [1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 20]
    row = evaluate_network(net, [BLOG], sizes)[0]
    for frac in (0.0, 0.05, 0.5):
        ok = [r.sram_bytes for r in row if not r.unplaceable and r.traffic_bytes <= (1 + frac) * r.compulsory_bytes]
        best = smallest_within(row, frac)
        assert (best.sram_bytes if best else None) == (min(ok) if ok else None)


def test_vary_hardware_builds_the_grid_and_rejects_nonsense():
    grid = vary_hardware([BLOG], ["dram_bytes_per_cycle=16,64", "vector_lanes=8,32"])
    assert [h.name for h in grid] == ["blog[dram_bytes_per_cycle=16,vector_lanes=8]",
                                      "blog[dram_bytes_per_cycle=16,vector_lanes=32]",
                                      "blog[dram_bytes_per_cycle=64,vector_lanes=8]",
                                      "blog[dram_bytes_per_cycle=64,vector_lanes=32]"]
    assert grid[1].dram_bytes_per_cycle == 16.0 and grid[1].vector_lanes == 32
    with pytest.raises(ValueError, match="unknown hardware field 'dram_bw'"):
        vary_hardware([BLOG], ["dram_bw=1"])
    with pytest.raises(ValueError, match="'x' is not a valid vector_lanes"):
        vary_hardware([BLOG], ["vector_lanes=8,x"])
    with pytest.raises(ValueError, match="dram_bytes_per_cycle must be a positive number"):
        vary_hardware([BLOG], ["dram_bytes_per_cycle=0"])



def test_vary_takes_names_and_prices_each_dram_type_by_its_own_figure():
    """--vary reads a field by its declared type: names (a DRAM type, a dataflow) and numbers as given, checked by
    the hardware (a non-finite energy too); a field no value on a command line can express (the levels) is refused,
    not misread as a float."""
    grid = vary_hardware([BLOG], ["dram_type=LPDDR4,HBM2"])
    assert [h.dram_type for h in grid] == ["LPDDR4", "HBM2"]
    assert vary_hardware([BLOG], ["tensorcore_dataflow=output_stationary"])[0].tensorcore_dataflow == \
        "output_stationary"
    with pytest.raises(ValueError, match="unknown dram_type 'XDR'"):
        vary_hardware([BLOG], ["dram_type=XDR"])
    with pytest.raises(ValueError, match="inner_levels .* cannot be varied"):
        vary_hardware([BLOG], ["inner_levels=1"])
    with pytest.raises(ValueError, match="mac_pj must be a finite number >= 0"):
        vary_hardware([BLOG], ["mac_pj=0.5,nan"])
    with pytest.raises(ValueError, match="mac_pj must be a finite number >= 0"):
        vary_hardware([BLOG], ["mac_pj=-1"])
    # the DRAM's energy is its bytes x its type's pJ/bit: the same traffic on both, so the DDR energies' ratio is
    # the ratio of the sourced figures, LPDDR4 8 pJ/bit and HBM2 3.9 pJ/bit (energy-area-sources.md, Accelergy's
    # CACTI DRAM table)
    net = load_network("resnet18", (1, 3, 32, 32))
    lp, hbm = (rows[0] for rows in evaluate_network(net, grid, [1 << 16]))
    assert lp.traffic_bytes == hbm.traffic_bytes
    ddr = lp.energy.energy_breakdown_pj["DDR"], hbm.energy.energy_breakdown_pj["DDR"]
    assert ddr[0] == pytest.approx(lp.traffic_bytes * 8 * 8.0) and ddr[1] == pytest.approx(hbm.traffic_bytes * 8 * 3.9)

# --------------------------------------------------------------------------------------- executors
def test_the_same_sweep_gives_byte_identical_json_on_every_executor():
    distributed = pytest.importorskip("distributed")
    net = load_network("resnet18", (1, 3, 32, 32))
    sizes = [1 << 12, 1 << 16]

    def sweep_json(executor) -> str:
        try:
            return json.dumps(sweep_network(net, [BLOG], sizes, executor, within=0.1).to_json())
        finally:
            executor.close()

    here = sweep_json(open_executor("process", 1))
    assert sweep_json(open_executor("process", 2)) == here
    with distributed.LocalCluster(n_workers=2, processes=False, threads_per_worker=1, dashboard_address=None,
                                  protocol="tcp", host="127.0.0.1") as c:
        address = c.scheduler_address  # tcp://127.0.0.1:PORT, loopback only
        assert sweep_json(open_executor("dask://" + address[len("tcp://"):], 2)) == here
    assert sweep_json(open_executor("dask", 2)) == here  # a local cluster of 2 worker processes, started here


def test_executor_specs_are_checked():
    for spec, message in (("threads", "unknown executor 'threads'"), ("dask://", "dask://HOST:PORT")):
        with pytest.raises(ValueError, match=re.escape(message)):
            open_executor(spec, 2)
    with pytest.raises(ValueError, match="jobs must be an integer >= 1"):
        open_executor("process", 0)


# --------------------------------------------------------------------------------------- commands
def test_network_command_prints_layers_totals_and_writes_json_and_plot(tmp_path, capsys):
    js, png = tmp_path / "n.json", tmp_path / "n.png"
    assert main(["network", "resnet18", "--input-shape", "1,3,64,64", "--sram", "64KiB", "--json", str(js),
                 "--plot", str(png), "--quiet", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "layer1.0.conv1" in out and "dominant layers" in out
    data = json.loads(js.read_text())
    assert {"network", "sram_bytes", "loaded_bytes", "stored_bytes", "cycles", "lower_bound_bytes",
            "compulsory_bytes", "unmodelled", "layers"} <= set(data)
    assert data["sram_bytes"] == 65536 and data["unmodelled"] == []
    for key in ("loaded_bytes", "stored_bytes", "cycles", "lower_bound_bytes", "compulsory_bytes"):
        assert data[key] == sum(layer[key] for layer in data["layers"]), key
    assert all({"name", "shape", "loaded_bytes", "cycles"} <= set(layer) for layer in data["layers"])
    # one search serves layer1.0.conv1 and layer1.1.conv1 (same shape): each schedule carries its own layer's name
    assert all(layer["schedule"]["problem"]["name"] == layer["name"] for layer in data["layers"]
               if layer["kind"] == "tensorcore")
    chains = [layer for layer in data["layers"] if layer["kind"] == "chain"]
    assert [c["name"] for c in chains] == [f"layer{s}.{b}.conv1+layer{s}.{b}.conv2"
                                           for s in range(1, 5) for b in (0, 1)]
    assert all(re.fullmatch(r"chain( \[[12 ]+\])+", c["op"]) and c["schedule"]["partition"] in c["op"]
               for c in chains)
    conv = next(layer for layer in data["layers"] if layer["name"] == "layer2.0.downsample.0")
    assert 0 < conv["tensorcore_utilization"] <= 1 and math.isclose(
        conv["padding_waste"], 1 - conv["tensorcore_utilization"], abs_tol=1e-6)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_network_command_imports_a_users_module(tmp_path, monkeypatch, capsys):
    (tmp_path / "mynets.py").write_text(
        "import torch.nn as nn\n"
        "example_input_shape = (1, 8)\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.a = nn.Linear(8, 24)\n"
        "        self.b = nn.Linear(24, 16)\n"
        "    def forward(self, x):\n"
        "        return self.b(self.a(x).relu())\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    js = tmp_path / "u.json"
    assert main(["network", "mynets:Net", "--json", str(js), "--quiet", "--jobs", "1"]) == 0
    names = [(x["name"], x["shape"]) for x in json.loads(js.read_text())["layers"]]
    # a -> relu -> b: a GEMM chain C = relu(x @ A) (1 x 24), E = C @ B (1 x 16)
    assert names == [("a+b", "gemm-chain:m=1,n=16,k=8,l=24,relu=1")]
    assert main(["network", "mynets:Net", "--json", str(js), "--quiet", "--jobs", "1", "--no-fusion"]) == 0
    names = [(x["name"], x["shape"]) for x in json.loads(js.read_text())["layers"]]
    assert names == [("a", "gemm:m=1,n=24,k=8"), ("b", "gemm:m=1,n=16,k=24")]  # the relu fuses into a
    assert main(["network", "mynets:Net", "--input-shape", "4,8", "--quiet", "--jobs", "1", "--no-fusion",
                 "--wide"]) == 0  # shapes: --wide
    assert "gemm:m=4,n=24,k=8" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["network", "resnet51"], "unknown network 'resnet51'"),
    (["network", "sys:path", "--input-shape", "1,2"], "not an nn.Module"),
    (["network", "resnet18", "--input-shape", "1,3,a"], "positive integers separated by commas"),
    (["network", "resnet18", "--json", "same.png", "--plot", "same.png"], "both name same.png"),
    (["network", "resnet18", "--sram", "1"], None),  # runs: every conv is unplaceable, named, exit 1
    (["sweep-sram", "--network", "resnet18", "--sizes", "1KiB:4KiB:2", "--within", "ten"], "percentage"),
    (["sweep-sram", "--network", "resnet18", "--sizes", "1KiB:4KiB:2", "--vary", "nope=1"], "unknown hardware field"),
    (["sweep-sram", "--network", "resnet18", "--sizes", "1KiB:4KiB:2", "--executor", "mpi"], "unknown executor"),
    (["sweep-sram", "blog-conv", "--network", "resnet18", "--sizes", "1KiB"], "not both"),
    (["sweep-sram", "blog-conv", "--sizes", "1KiB", "--within", "5%"], "it applies to --network sweeps"),
    (["sweep-sram", "--sizes", "1KiB"], "give a LAYER"),
])
def test_network_command_errors(argv, message, capsys):
    code = main(argv + ["--quiet"] if argv[0] == "sweep-sram" or "--sram" in argv else argv)
    err = capsys.readouterr()
    if message is None:
        assert code == 1 and "unplaceable, left out of the totals:\n  conv1: no tiling" in err.out
    else:
        assert code == 2 and message in err.err and "Traceback" not in err.err


def test_sweep_network_command_answers_within_and_varies_hardware(tmp_path, capsys):
    js, png = tmp_path / "s.json", tmp_path / "s.png"
    assert main(["sweep-sram", "--network", "resnet18", "--input-shape", "1,3,32,32", "--sizes", "4KiB:1MiB:4",
                 "--within", "10%", "--vary", "dram_bytes_per_cycle=16,64", "--json", str(js), "--plot", str(png),
                 "--quiet", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    data = json.loads(js.read_text())
    assert [h["name"] for h in data["hardware"]] == ["blog[dram_bytes_per_cycle=16]", "blog[dram_bytes_per_cycle=64]"]
    assert len(data["points"]) == 8
    for hw in data["hardware"]:
        pts = [p for p in data["points"] if p["hardware"] == hw["name"]]
        ok = [p["sram_bytes"] for p in pts
              if not p["unplaceable"] and p["traffic_bytes"] <= 1.1 * p["compulsory_bytes"]]
        assert data["within"]["smallest_sram_bytes"][hw["name"]] == (min(ok) if ok else None)
    slow, fast = (sorted(p["cycles"] for p in data["points"] if p["hardware"] == h["name"]) for h in data["hardware"])
    assert all(s >= f for s, f in zip(slow, fast)) and sum(slow) > sum(fast)  # a quarter of the bandwidth
    assert out.count("within 10% of compulsory traffic") == 2  # one answer per hardware
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_list_of_hardware_files_is_a_grid(tmp_path, capsys):
    slow = tmp_path / "slow.toml"
    slow.write_text('base = "blog"\nname = "slow-ddr"\ndram_bytes_per_cycle = 4.0\n')
    js = tmp_path / "g.json"
    assert main(["sweep-sram", "--network", "resnet18", "--input-shape", "1,3,32,32", "--sizes", "64KiB",
                 "--hardware", f"blog,{slow}", "--json", str(js), "--quiet", "--jobs", "1"]) == 0
    points = json.loads(js.read_text())["points"]
    assert [p["hardware"] for p in points] == ["blog", "slow-ddr"]
    assert points[0]["traffic_bytes"] == points[1]["traffic_bytes"]  # bandwidth does not change what moves...
    assert points[1]["cycles"] > points[0]["cycles"]  # ...only how long it takes (8x less bandwidth)


def test_bert_feed_forward_pair_is_a_gemm_chain_with_its_residual_loaded():
    from dsasim.architect.search.fused_search import search_chain
    from dsasim.architect.search.gemm_chain import GemmChain
    net = load_network("bert-base-layer:seq=16")
    (nc,) = net.chains  # q, k, v and the attention products share inputs or are batched: no other pair
    assert [net.layers[i].name for i in nc.members] == ["ffn_in", "ffn_out"]
    # C[16 x 3072] = gelu(A[16 x 768] @ W1[768 x 3072]), E[16 x 768] = C @ W2[3072 x 768]
    assert nc.chain == GemmChain(m=16, n=768, k=768, l=3072, relu=True)
    # the residual (the feed-forward input, added to E's tile) and the two biases (3072 and 768), loaded beside
    extra = 16 * 768 + 3072 + 768
    assert nc.extra_read_elements == extra
    cap = 1 << 16
    entry = next(x for x in evaluate_network(net, [BLOG], [cap])[0][0].layers if x.layer.kind == "chain")
    ref = search_chain(nc.chain, BLOG, sram_bytes=cap)
    assert entry.loaded_bytes == ref.totals(ref.best)["loaded_bytes"] + extra


def test_objective_cycles_reaches_chains_too():
    # Block at 1 KiB: the least-traffic partition [1] [2] moves 6,912 B; the fastest one trades traffic for time
    net = import_network(Block(), (1, 8, 12, 12))
    sizes = [1 << 10, 1 << 12]
    by_traffic = evaluate_network(net, [BLOG], sizes)[0]
    by_cycles = evaluate_network(net, [BLOG], sizes, objective="cycles")[0]
    for t, c in zip(by_traffic, by_cycles):
        (a,), (b,) = t.layers, c.layers
        assert b.cycles <= a.cycles and b.traffic_bytes >= a.traffic_bytes
    assert by_cycles[0].layers[0].cycles < by_traffic[0].layers[0].cycles
