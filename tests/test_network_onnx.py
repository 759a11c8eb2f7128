"""Issue 31: ONNX models in. Each network of tests/data/onnx_blocks.py is exported to ONNX here (torch's TorchScript
exporter, in a tmp dir: no downloads) and read by `network_onnx`; the same module imported through torch.fx is the
independent route its layers and totals must equal, and the shapes the exporters' quirks hide (a batched 3-d MatMul,
LayerNorm and GELU as many nodes, a dynamic batch) are derived by hand. Unsupported ops are listed by op type and
node name; bad files and shapes are one line naming the file, exit 2, nothing written."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from dsasim.architect.studies.network import (NETWORK_SOURCES, UNMODELLED, NetworkImportError, import_network,
                                              load_network, source_for)
from dsasim.architect.studies.network_eval import evaluate_network
from dsasim.cli import main
from dsasim.hardware import load_hardware

if not os.environ.get("CI"):  # CI installs the onnx extra (the test extra names it): there a missing onnx fails
    pytest.importorskip("onnx", reason="the onnx extra is not installed (pip install 'dsasim[onnx]')")

sys.path.insert(0, str(Path(__file__).resolve().parent / "data"))
import onnx_blocks  # noqa: E402  (tests/data: the modules both routes read)

BLOG = load_hardware("blog")  # 1-byte words
SRAM_BYTES = 64 << 10


def _export(tmp_path, block, dynamic=None, opset=None, shape=None):
    path = tmp_path / f"{type(block).__name__}.onnx"
    onnx_blocks.export(block, str(path), shape or block.example_input_shape, dynamic, opset)
    return str(path)


def _facts(network):
    """Per layer, everything the evaluation reads (the name aside: ONNX names nodes its own way)."""
    return [(x.op, x.kind, x.problem, x.count, x.read_elements, x.write_elements, x.vector_ops, x.epilogue_ops,
             x.extra_read_elements, x.bias_elements, x.relu, x.weight_elements, x.roles) for x in network.layers]


def _groups(network):
    return ([(c.members, c.extra_read_elements) for c in network.chains],
            [(g.members, g.spec(), g.masked, g.source) for g in network.attentions])


def _totals(network):
    result = evaluate_network(network, [BLOG], [SRAM_BYTES])[0][0]
    return (result.traffic_bytes, result.cycles, result.macs, result.compulsory_bytes, result.lower_bound_bytes,
            [x.traffic_bytes for x in result.layers], result.partial)


def _both(tmp_path, block, **kwargs):
    """(the module through torch.fx, its ONNX file through network_onnx)."""
    shape = kwargs.pop("shape", None) or block.example_input_shape
    path = _export(tmp_path, block, shape=shape, **kwargs)
    return import_network(block.eval(), shape), load_network(path, shape)


def test_a_resnet_basic_block_equals_its_fx_import(tmp_path):
    fx, ox = _both(tmp_path, onnx_blocks.BasicBlock())
    assert ox.traced_with == "onnx" and [x.name for x in ox.layers] == ["/conv1/Conv", "/conv2/Conv"]
    assert _facts(ox) == _facts(fx) and _groups(ox) == _groups(fx)
    # by hand: the exporter folded each batch norm into its conv's bias (16 per conv); output 16x8x8 = 1,024
    # elements: conv1's epilogue adds the bias and applies the relu (2 x 1,024), conv2's adds the bias, the skip
    # (loaded: 1,024 elements) and applies the relu (3 x 1,024); the two convs are one chain
    conv1, conv2 = ox.layers
    assert (conv1.bias_elements, conv1.epilogue_ops, conv1.relu) == (16, 2048, True)
    assert (conv2.bias_elements, conv2.epilogue_ops, conv2.extra_read_elements) == (16, 3072, 1024)
    assert [c.members for c in ox.chains] == [(0, 1)]
    assert _totals(ox) == _totals(fx)


def test_a_mobilenetv2_inverted_residual_equals_its_fx_import(tmp_path):
    fx, ox = _both(tmp_path, onnx_blocks.InvertedResidual())
    assert _facts(ox) == _facts(fx) and _groups(ox) == _groups(fx)
    # by hand: expand 16 -> 96 (1x1), depthwise 3x3 with 96 groups, project 96 -> 16, a chain of three; ReLU6 is
    # Clip(0, 6) fused as an activation; Gemm(transB=1) is the classifier's linear layer m=1, n=10, k=16
    ops = [(x.op, x.problem.spec() if x.problem is not None else x.shape) for x in ox.layers]
    assert ops[:3] == [("conv2d", "conv:n=1,ic=16,oc=96,h=8,w=8,k=1,s=1,p=0"),
                       ("conv2d", "conv:n=1,ic=96,oc=96,h=8,w=8,k=3,s=1,p=1,g=96"),
                       ("conv2d", "conv:n=1,ic=96,oc=16,h=8,w=8,k=1,s=1,p=0")]
    assert ops[3:] == [("adaptive_avg_pool2d", "1x16x8x8 -> 1x16x1x1"), ("linear", "gemm:m=1,n=10,k=16")]
    assert ox.layers[0].relu and ox.layers[1].relu and not ox.layers[2].relu
    assert [c.members for c in ox.chains] == [(0, 1, 2)]
    assert _totals(ox) == _totals(fx)


def test_a_transformer_layer_equals_its_fx_import_with_its_attention_group(tmp_path):
    # opset 17: LayerNormalization is one node, GELU is written with Erf (opset 20 has a Gelu node)
    import onnx

    fx, ox = _both(tmp_path, onnx_blocks.TransformerLayer(), opset=17)
    ops = [n.op_type for n in onnx.load(str(tmp_path / "TransformerLayer.onnx")).graph.node]
    assert "Erf" in ops and "Gelu" not in ops and ops.count("LayerNormalization") == 2
    assert _facts(ox) == _facts(fx) and _groups(ox) == _groups(fx)
    # by hand: b=2, n=16 tokens, hidden 64 in 4 heads of d=16. q, k, v, o, up, down are MatMul + Add of a bias:
    # linear layers (m = 2 x 16 = 32) with their biases; the scores are a batched MatMul, count b*h = 8, each
    # 16x16x16; MatMul -> Softmax -> MatMul is recognised as one attention group; the erf GELU is one epilogue
    # on up's tile (bias 32x256 + gelu 32x256 = 16,384 lane operations)
    names = [x.name for x in ox.layers]
    scores = ox.layer("/MatMul")
    assert (scores.count, scores.problem.spec()) == (8, "gemm:m=16,n=16,k=16")
    assert [g.spec() for g in ox.attentions] == ["attention:b=2,h=4,hkv=4,n=16,m=16,d=16"]
    assert [names[i] for i in ox.attentions[0].members] == ["/MatMul", "/Softmax", "/MatMul_1"]
    assert ox.layer("/up/MatMul").epilogue_ops == 2 * 32 * 256
    assert ox.layer("/q/MatMul").problem.spec() == "gemm:m=32,n=64,k=64"
    assert not ox.of_kind(UNMODELLED)
    assert _totals(ox) == _totals(fx)


def test_batched_3d_matmuls_count_their_products_and_a_3d_linear_folds_its_batch(tmp_path):
    fx, ox = _both(tmp_path, onnx_blocks.BatchedProducts())
    assert _facts(ox) == _facts(fx)
    # by hand: x is 4x8x16. proj: MatMul by the 16x16 weight + Add of 16 biases = one linear, m = 4*8 = 32;
    # bmm (4, 8, 16) @ (4, 16, 8): 4 independent 8x8x16 products
    proj, bmm = ox.layers
    assert (proj.op, proj.problem.spec(), proj.bias_elements) == ("linear", "gemm:m=32,n=16,k=16", 16)
    assert (bmm.op, bmm.problem.spec(), bmm.count) == ("matmul", "gemm:m=8,n=8,k=16", 4)


def test_layer_norm_written_as_nodes_is_one_layer_norm(tmp_path):
    # opset 14 has no LayerNormalization: the exporter writes ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div,
    # Mul, Add for each nn.LayerNorm
    import onnx

    block = onnx_blocks.TransformerLayer()
    fx, ox = _both(tmp_path, block, opset=14)
    ops = [n.op_type for n in onnx.load(str(tmp_path / "TransformerLayer.onnx")).graph.node]
    assert "LayerNormalization" not in ops and ops.count("ReduceMean") == 4 and ops.count("Sqrt") == 2
    assert _facts(ox) == _facts(fx)
    norms = [x for x in ox.layers if x.op == "layer_norm"]
    # by hand: each reads x (2x16x64 = 2,048) and its weight and bias (64 each), writes 2,048, three lane
    # operations per element
    assert [(x.name, x.read_elements, x.write_elements, x.vector_ops, x.weight_elements) for x in norms] == [
        ("/norm1/layer_norm", 2176, 2048, 6144, 128), ("/norm2/layer_norm", 2176, 2048, 6144, 128)]
    assert not {"mean", "sub", "pow", "sqrt", "div"} & {x.op for x in ox.layers}


def test_a_dynamic_batch_and_length_are_resolved_from_the_input_shape(tmp_path):
    block = onnx_blocks.TransformerLayer()
    path = _export(tmp_path, block, dynamic={0: "batch", 1: "tokens"})
    with pytest.raises(NetworkImportError, match=r"input 'x' has a dynamic shape \(batch,tokens,64\): give "
                                                 r"--input-shape, e.g. 1,1,64"):
        load_network(path)
    # by hand: 3 sequences of 10 tokens: the projections' m = 30; the reshapes to heads are computed from Shape
    # nodes, evaluated here: 3 x 4 heads = 12 scores products of 10x10 over d=16
    ox = load_network(path, (3, 10, 64))
    assert ox.layer("/q/MatMul").problem.spec() == "gemm:m=30,n=64,k=64"
    assert [g.spec() for g in ox.attentions] == ["attention:b=3,h=4,hkv=4,n=10,m=10,d=16"]
    assert _facts(ox) == _facts(import_network(block.eval(), (3, 10, 64)))


def test_unsupported_ops_are_listed_by_op_type_and_node_name_and_the_rest_is_read(tmp_path):
    fx, ox = _both(tmp_path, onnx_blocks.Unsupported())
    unmodelled = [(x.name, x.op, x.reason, x.shape) for x in ox.of_kind(UNMODELLED)]
    assert unmodelled == [
        ("/up/ConvTranspose", "ConvTranspose", "ONNX op ConvTranspose is not modelled by dsasim",
         "1x8x8x8 -> 1x8x16x16"),
        ("/CumSum", "CumSum", "ONNX op CumSum is not modelled by dsasim", "1x8x16x16 -> 1x8x16x16")]
    # the conv after them still gets its input's shape (ONNX's shape inference): 8 -> 4 channels at 16x16
    assert ox.layer("/head/Conv").problem.spec() == "conv:n=1,ic=8,oc=4,h=16,w=16,k=1,s=1,p=0"
    assert len(fx.of_kind(UNMODELLED)) == 2
    assert [f for f in _facts(ox) if f[1] != UNMODELLED] == [f for f in _facts(fx) if f[1] != UNMODELLED]


def test_the_cli_reads_an_onnx_model_and_writes_its_json(tmp_path, capsys):
    path = _export(tmp_path, onnx_blocks.BasicBlock())
    js = tmp_path / "b.json"
    assert main(["network", path, "--json", str(js), "--quiet", "--jobs", "1"]) == 0
    data = json.loads(js.read_text())
    assert [x["name"] for x in data["layers"]] == ["/conv1/Conv+/conv2/Conv"]
    # a layer left out makes the result partial: exit 1, the layers named on stderr
    assert main(["network", _export(tmp_path, onnx_blocks.Unsupported()), "--quiet", "--jobs", "1"]) == 1
    err = capsys.readouterr().err
    assert "/up/ConvTranspose (unmodelled); /CumSum (unmodelled)" in err


def _bad_files(tmp_path):
    good = _export(tmp_path, onnx_blocks.BasicBlock())
    data = Path(good).read_bytes()
    truncated, text, empty = tmp_path / "cut.onnx", tmp_path / "notes.onnx", tmp_path / "empty.onnx"
    truncated.write_bytes(data[:len(data) // 3])
    text.write_text("this is not a model\n")
    empty.write_bytes(b"")
    return {"truncated": str(truncated), "text": str(text), "empty": str(empty), "good": good}


@pytest.mark.parametrize("case, shape, message", [
    ("truncated", None, "cut.onnx: not an ONNX model (it does not parse"),
    ("text", None, "notes.onnx: not an ONNX model (it does not parse"),
    ("empty", None, "empty.onnx: not an ONNX model (no IR version or no graph nodes)"),
    ("good", "1,16,8", "--input-shape 1,16,8 has 3 dimensions; input 'x' has 4 (1,16,8,8)"),
    ("good", "1,16,8,9", "--input-shape 1,16,8,9 does not match input 'x' (1,16,8,8): dimension 3 is fixed at 8"),
    ("missing", None, "missing.onnx: no such file"),
])
def test_bad_onnx_input_is_one_line_naming_the_file_exit_2_and_nothing_written(tmp_path, capsys, case, shape,
                                                                                message):
    path = _bad_files(tmp_path).get(case, str(tmp_path / "missing.onnx"))
    js = tmp_path / "out.json"
    argv = ["network", path, "--json", str(js), "--quiet"] + (["--input-shape", shape] if shape else [])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("dsasim network: ") and message in err
    assert Path(path).name in err and "Traceback" not in err
    assert not js.exists()


def test_without_the_onnx_package_the_message_says_how_to_install_it(tmp_path, capsys, monkeypatch):
    path = _export(tmp_path, onnx_blocks.BasicBlock())
    monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` raises ImportError
    assert main(["network", path, "--quiet"]) == 2
    assert capsys.readouterr().err == (f"dsasim network: reading {path} needs the onnx package "
                                       f"(pip install 'dsasim[onnx]')\n")


def test_network_sources_are_a_registry_tried_in_order():
    names = [s.name for s in NETWORK_SOURCES]  # (other formats' sources may sit between these)
    assert names[0] == "preset" and names.index("onnx") < names.index("module") == len(names) - 1
    assert source_for("resnet18").name == "preset"
    assert source_for("bert-base-layer:seq=8").name == "preset"
    assert source_for("models/net.ONNX").name == "onnx"
    assert source_for("models.py:Net").name == "module" and source_for("pkg.mod:Net").name == "module"
    with pytest.raises(ValueError, match="unknown network 'resnet51'.*or an ONNX model FILE.onnx"):
        source_for("resnet51")


def test_a_hand_built_graph_folds_its_batch_norm_and_names_an_asymmetric_pad(tmp_path):
    # a graph as other exporters write it, built node by node: Conv (no bias) -> BatchNormalization -> Relu ->
    # MaxPool 2x2, then a Conv padded on one side only
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def init(name, *shape):
        return numpy_helper.from_array(np.ones(shape, dtype=np.float32), name)

    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"], name="bn"),
             helper.make_node("Relu", ["n"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p", "w2"], ["y"], name="lopsided", pads=[0, 0, 1, 1])]
    def save(output_shape):
        graph = helper.make_graph(
            nodes, "hand", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4, 8, 8])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, output_shape)],
            [init("w", 8, 4, 3, 3), init("s", 8), init("b", 8), init("m", 8), init("v", 8), init("w2", 8, 8, 2, 2)])
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))

    path = tmp_path / "hand.onnx"
    save(None)  # an output without a shape: the checker refuses the graph
    with pytest.raises(NetworkImportError, match=r"hand.onnx: not a valid ONNX model: Field 'shape' of 'type' is "
                                                 r"required but missing"):
        load_network(str(path), (2, 4, 8, 8))
    save(["batch", 8, 4, 4])
    net = load_network(str(path), (2, 4, 8, 8))
    conv, pool, lopsided = net.layers
    # by hand: conv n=2, 4 -> 8 channels at 8x8 (2*8*8*8 = 1,024 outputs); the batch norm on its own output folds
    # into it (a bias of 8: one add per output), the relu fuses (one op per output): 2,048 lane operations
    assert conv.problem.spec() == "conv:n=2,ic=4,oc=8,h=8,w=8,k=3,s=1,p=1"
    assert (conv.fused, conv.bias_elements, conv.epilogue_ops, conv.relu) == (("bn", "relu"), 8, 2048, True)
    # the pool reads 1,024 elements, writes 2*8*4*4 = 256, one lane op per window tap: 256 * 4 = 1,024
    assert (pool.op, pool.read_elements, pool.write_elements, pool.vector_ops) == ("max_pool2d", 1024, 256, 1024)
    assert (lopsided.kind, lopsided.op, lopsided.reason) == (
        UNMODELLED, "Conv", "ONNX op Conv: asymmetric padding [0, 0, 1, 1] (dsasim's conv pads each side alike)")
